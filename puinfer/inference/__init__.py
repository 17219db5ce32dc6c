"""Inference written once: test results, LR and chi-square tests, profile likelihood."""

from .comparison import anova
from .hypothesis import (
    HypothesisTestResult,
    chi2_test,
    chisq_gof,
    format_pvalue,
    lr_test,
    pvalue_phrase,
)
from .profile import Profile, ProfileError

__all__ = ["HypothesisTestResult", "chi2_test", "chisq_gof", "format_pvalue", "pvalue_phrase",
           "lr_test", "Profile", "ProfileError", "anova"]
