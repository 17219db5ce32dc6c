"""Unsupervised recalibration (URC): field base rates from a classifier's predictions.

The method of Ziegler and Czyż, "Unsupervised Recalibration": base rates of unlabelled field
data by maximum likelihood of the histogram of a calibrated classifier's predictions over a
partition (Lemma 7, Definition 8), per subpopulation (Algorithm 1), with profile-likelihood
intervals, likelihood-ratio tests of no shift and of equal base rates, a goodness-of-fit test
of the consistency assumption (Axiom 2), and recalibration (Lemma 3).

Modules: :mod:`.partition` (the cells), :mod:`._likelihood` (counts, objective, EM map,
derivatives, the fit, profiles), :mod:`.model` (:class:`URC`), :mod:`.results`
(:class:`URCResults`).
"""

from .model import URC
from .partition import Partition
from .results import URCResults

__all__ = ["URC", "URCResults", "Partition"]
