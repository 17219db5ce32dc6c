"""puinfer: statistical inference when labels are missing, biased or shifted.

Public names
------------
DETM, SETM
    Positive-unlabeled data: density-ratio tilting models fitted by empirical likelihood.
CalEM, LogisticCalibrator, TemperatureCalibrator, BetaCalibrator, SplineCalibrator, IsotonicCalibrator
    Calibration from a small clean (control) set and a large set with biased labels.
metrics
    Calibration metrics: Brier, log-loss, KS error, ECE, reliability curves.
URC, adjust_prior, downsampling_correction
    Unsupervised recalibration: field base rates from predictions; exact prior-shift corrections.
RegressionURC, NormalPredictive, GridPredictive, QuantilePredictive
    URC for regression: recalibrated predictive distributions under a shift in the outcome.
lr_test, anova, chisq_gof, HypothesisTestResult, Profile
    Inference shared by every model.
datasets, simulate
    Bundled data and the papers' simulation designs.
"""

from . import datasets, exceptions, metrics, simulate
from .inference import HypothesisTestResult, Profile, anova, chisq_gof, lr_test
from .models.calem import CalEM, CalEMResults
from .models.calibrators import (
    BetaCalibrator,
    IsotonicCalibrator,
    LogisticCalibrator,
    SplineCalibrator,
    TemperatureCalibrator,
)
from .models.detm import DETM, SETM, DETMResults, SETMResults
from .models.urc import URC, URCResults
from .models.urc.predictive import GridPredictive, NormalPredictive, QuantilePredictive
from .models.urc.regression import RegressionURC, RegressionURCResults
from .prior_shift import adjust_prior, downsampling_correction

__version__ = "0.1.0"

__all__ = [
    "CalEM",
    "CalEMResults",
    "LogisticCalibrator",
    "BetaCalibrator",
    "SplineCalibrator",
    "IsotonicCalibrator",
    "TemperatureCalibrator",
    "metrics",
    "DETM",
    "SETM",
    "DETMResults",
    "SETMResults",
    "URC",
    "URCResults",
    "RegressionURC",
    "RegressionURCResults",
    "NormalPredictive",
    "GridPredictive",
    "QuantilePredictive",
    "adjust_prior",
    "downsampling_correction",
    "HypothesisTestResult",
    "Profile",
    "chisq_gof",
    "lr_test",
    "anova",
    "datasets",
    "exceptions",
    "simulate",
]
