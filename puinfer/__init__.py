"""puinfer: statistical inference when labels are missing, biased or shifted.

Public names
------------
DETM, SETM
    Positive-unlabeled data: density-ratio tilting models fitted by empirical likelihood.
lr_test, chisq_gof, HypothesisTestResult, Profile
    Inference shared by every model.
datasets, simulate
    Bundled data and the papers' simulation designs.
"""

from . import datasets, exceptions
from .inference import HypothesisTestResult, Profile, chisq_gof, lr_test

__version__ = "0.1.0"

__all__ = [
    "HypothesisTestResult",
    "Profile",
    "chisq_gof",
    "lr_test",
    "datasets",
    "exceptions",
]
