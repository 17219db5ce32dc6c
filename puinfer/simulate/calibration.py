"""Former name of :mod:`puinfer.simulate.calem`; kept for imports."""

from .calem import *  # noqa: F403
from .calem import __all__  # noqa: F401
