"""DETM and SETM: positive-unlabeled data by exponential tilting and empirical likelihood.

Liu, Yeh, Zhang, Tian and Li, *Positive-unlabeled learning under the selected-at-random
assumption*. Modules: :mod:`.model` (the models and ``fit``), :mod:`.results`, :mod:`._el`
(the empirical-likelihood core), :mod:`._starts` (the search for the global maximum),
:mod:`._profile` (the profile of pi), :mod:`._separation`, :mod:`.bootstrap` (the smoothed EL
bootstrap of the SCAR test).
"""

from ._separation import separated_target_points
from .model import DETM, SETM
from .results import DETMResults, SETMResults, TiltResults

__all__ = ["DETM", "SETM", "DETMResults", "SETMResults", "TiltResults",
           "separated_target_points"]
