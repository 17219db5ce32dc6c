"""Model and results base classes."""

from .results import ConvergenceInfo, LikelihoodResults, data_fingerprint

__all__ = ["ConvergenceInfo", "LikelihoodResults", "data_fingerprint"]
