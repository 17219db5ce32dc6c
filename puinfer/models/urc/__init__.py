"""Unsupervised recalibration (URC): field base rates from a classifier's predictions.

The method of Ziegler and Czyż, "Unsupervised Recalibration": base rates of unlabelled field
data by maximum likelihood of the histogram of a calibrated classifier's predictions over a
partition (Lemma 7, Definition 8), per subpopulation (Algorithm 1), with profile-likelihood
intervals, likelihood-ratio tests of no shift and of equal base rates, a goodness-of-fit test
of the consistency assumption (Axiom 2), and recalibration (Lemma 3).

Modules: :mod:`.partition` (the cells), :mod:`._likelihood` (counts, objective, EM map,
derivatives, the fit, profiles), :mod:`._inputs` (validation; prediction columns matched to the
classes by name), :mod:`.model` (:class:`URC`), :mod:`.results` (:class:`URCResults`).

Alignment (the package's rule, :mod:`puinfer._align`): row-wise pandas inputs of one call
(``lab_pred``/``lab_labels``; ``field_pred``/``groups``; ``recalibrate``'s ``pred``/``groups``)
are matched on their index or refused, arrays by position; the columns of prediction
DataFrames and the index of base-rate Series are matched to the classes by name; outputs carry
the caller's index. ``missing="raise"|"drop"`` on :class:`URC` and :meth:`URC.fit`.
"""

from .model import URC
from .partition import Partition
from .results import URCResults

__all__ = ["URC", "URCResults", "Partition"]
from .predictive import GridPredictive, NormalPredictive, QuantilePredictive  # noqa: E402
from .regression import RegressionURC, RegressionURCResults  # noqa: E402

__all__ += ["RegressionURC", "RegressionURCResults", "NormalPredictive", "GridPredictive",
            "QuantilePredictive"]
