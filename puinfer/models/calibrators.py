"""Former location of the calibrators, now :mod:`puinfer.models.calem.calibrators`."""
from .calem.calibrators import *  # noqa: F403
from .calem.calibrators import __all__  # noqa: F401
