"""CalEM: probability calibration from a small clean set and a large set with biased labels.

Sergazinov, Chen, Ji, Wu, Cociorva and Brunzell, *Improving Model Probability Calibration by
Integration of Large Data Sources with Biased Labels* (Algorithm 3, Appendix A.2).

* :class:`CalEM` (:mod:`.model`): the model (data, calibrator, validation); ``fit()``;
* :class:`CalEMResults` (:mod:`.results`): the immutable results;
* the calibrators (:mod:`.calibrators`): logistic (Platt), beta, natural cubic spline,
  isotonic and formula calibrators, and :class:`FittedCalibrator`;
* the estimation (E- and M-steps, surrogate log-likelihood, Newton / EM / SQUAREM solvers,
  sandwich covariance) lives in the private module ``_engine``.
"""

from .calibrators import (
    BetaCalibrator,
    Calibrator,
    FittedCalibrator,
    FormulaCalibrator,
    IsotonicCalibrator,
    LogisticCalibrator,
    SplineCalibrator,
    TemperatureCalibrator,
    make_calibrator,
    platt_targets,
)
from .model import CalEM
from .results import CalEMResults

__all__ = ["CalEM", "CalEMResults", "Calibrator", "LogisticCalibrator", "BetaCalibrator",
           "SplineCalibrator", "IsotonicCalibrator", "FormulaCalibrator", "FittedCalibrator",
           "TemperatureCalibrator", "make_calibrator", "platt_targets"]
