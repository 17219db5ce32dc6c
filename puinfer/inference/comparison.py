"""Model comparison: fitted calibrators in :func:`~puinfer.lr_test`, and :func:`anova` tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit

from ..base.results import LikelihoodResults
from .hypothesis import _comparable, check_tol, describe_fit, format_pvalue, lr_test

__all__ = ["CalibratorLikelihood", "anova"]


class CalibratorLikelihood(LikelihoodResults):
    """A :class:`~puinfer.models.calem.FittedCalibrator` seen by :func:`puinfer.lr_test`.

    Two calibrators nest when every function of the smaller family is one of the larger
    (temperature in logistic, logistic in beta or in an unpenalised natural spline of
    ``logit(score)``, which contains the linear functions): checked numerically by projecting
    the smaller basis on the larger on a dense grid of log-odds covering both (spline pieces
    included), not by name.
    """

    llf_kind = "weighted logistic log-likelihood of a calibrator"

    def __init__(self, fit):
        self.fit = fit
        self.llf = float(fit.llf)
        self.nobs = int(fit.nobs)
        self.df_model = float(fit.df_model)
        self.data_fingerprint = fit.data_fingerprint
        self.model_name = f"{fit.calibrator.name} calibrator"
        self._params = fit.params
        self._cov = None

    def _refusal(self) -> str | None:
        f, cal = self.fit, self.fit.calibrator
        if not cal.parametric:
            return "isotonic calibration is not a parametric family (no chi-square reference)"
        if f.prior_corrected:
            return ("a fit with Platt's prior correction does not maximise the likelihood of the "
                    "labels; refit with prior_correction=False")
        P = cal.penalty(f.basis)
        if P is not None and np.any(P):
            return "a penalised spline (lam > 0) has no chi-square likelihood-ratio reference"
        if f.data_fingerprint is None:
            return "the fit was not made by Calibrator.fit (its data are unknown)"
        if getattr(f, "lr_refusal", None) is not None:
            return f.lr_refusal
        return None

    def _grid(self, other):
        knots = [np.asarray(getattr(r.fit.basis, "knots", []), dtype=float) for r in (self, other)]
        k = np.concatenate(knots)
        rng = self.fit.score_range
        if rng is not None:
            # the fitted scores' range: where the likelihoods are (a basis such as patsy's
            # bs() is not defined beyond it)
            lo, hi = (float(np.log(v) - np.log1p(-v)) for v in np.clip(rng, 1e-12, 1 - 1e-12))
        else:
            lo, hi = (min(-12.0, k.min() - 3), max(12.0, k.max() + 3)) if k.size else (-12.0, 12.0)
        pieces = [np.linspace(lo, hi, 601)]
        for kn in knots:  # several points inside every spline piece
            if kn.size > 1:
                pieces.append(np.concatenate([np.linspace(a, b, 12) for a, b in zip(kn[:-1], kn[1:],
                                                                                     strict=True)]))
        g = np.unique(np.concatenate(pieces))
        return expit(g[(g >= lo) & (g <= hi)])

    def _nesting(self, other) -> str | None:
        if not isinstance(other, CalibratorLikelihood):
            return f"{describe_fit(other)} is not a fitted calibrator"
        for r in (self, other):
            why = r._refusal()
            if why is not None:
                return f"{r.model_name}: {why}"
        if self.data_fingerprint != other.data_fingerprint:
            return "the two calibrators were not fitted to the same scores, labels and weights"
        s = self._grid(other)
        A = self.fit.calibrator.design(self.fit.basis, s)
        B = other.fit.calibrator.design(other.fit.basis, s)
        coef, *_ = np.linalg.lstsq(B, A, rcond=None)
        resid = np.linalg.norm(A - B @ coef, axis=0) / np.linalg.norm(A, axis=0)
        if np.any(resid > 1e-7):
            return (f"the {self.model_name} family is not contained in the {other.model_name} "
                    f"family (relative residual of its basis {resid.max():.2g})")
        return None


def anova(*results, tol: float = 1e-6) -> pd.DataFrame:
    """Analysis of deviance: successive likelihood-ratio tests of nested fits (R's ``anova``).

    Parameters
    ----------
    *results : LikelihoodResults or FittedCalibrator
        Two or more fits, from the smallest model to the largest; each must be nested in the
        next (as :func:`puinfer.lr_test` decides, with its reason when not).
    tol : float
        As :func:`puinfer.lr_test`.

    Returns
    -------
    pandas.DataFrame
        One row per fit: ``model`` (name and formula), ``df_model``, ``llf`` (the maximised
        objective compared), ``statistic`` (``2 (llf_i - llf_{i-1})``), ``df``, ``pvalue``
        (NaN on the first row); ``.attrs["tests"]`` holds the :class:`HypothesisTestResult`
        objects. Where a fit's log-likelihood enters the next row's test on another scale (a
        URC fit without groups against the grouped fit of the same field rows: the same
        maximum, counted over the groups' histograms), that value is ``llf_in_next`` (NaN
        elsewhere), and the next row's statistic is ``2 (llf_i - llf_in_next_{i-1})``.

    Raises
    ------
    ValueError
        Fewer than two fits, or a pair that is not nested (the reason is given).
    """
    tol = check_tol(tol)  # (before the loop: lr_test's message would name a pair of fits)
    if len(results) < 2:
        raise ValueError(f"anova needs at least two fits; got {len(results)}")
    fits = [_comparable(r, f"results[{i}]") for i, r in enumerate(results)]
    tests = []
    for i in range(1, len(fits)):
        try:
            tests.append(lr_test(fits[i - 1], fits[i], tol=tol))
        except ValueError as exc:
            # (numbered from 1, as the table's rows; lr_test's advice on the order, in anova's
            # terms: session 67's audit)
            msg = str(exc).replace("call lr_test(second, first)",
                                   "give the fits from the smallest model to the largest")
            raise ValueError(f"anova: fits {i} and {i + 1}: {msg}") from None
    def in_next(i, r):  # r's log-likelihood as the next row's test counts it
        if i + 1 == len(fits):
            return np.nan
        v = r._llf_as_restriction_of(fits[i + 1])
        return np.nan if abs(v - r.llf_penalized) <= 1e-9 * max(1.0, abs(v)) else v

    rows = [{"model": describe_fit(r), "df_model": r.df_model, "llf": r.llf_penalized,
             "llf_in_next": in_next(i, r),
             "statistic": np.nan if i == 0 else tests[i - 1].statistic,
             "df": np.nan if i == 0 else tests[i - 1].df,
             "pvalue": np.nan if i == 0 else tests[i - 1].pvalue}
            for i, r in enumerate(fits)]
    out = pd.DataFrame(rows, index=pd.RangeIndex(1, len(fits) + 1, name="fit"))
    out.attrs["tests"] = tuple(tests)
    out.attrs["pvalue_text"] = [None] + [format_pvalue(t.pvalue) for t in tests]
    return out
