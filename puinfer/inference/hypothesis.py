"""Test-result object and the tests every model shares: likelihood ratio and chi-square GOF."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from .._align import align_rows
from .._validation import check_int, check_real, refuse_text
from ..base.results import FrozenDict

__all__ = ["HypothesisTestResult", "lr_test", "chisq_gof", "format_pvalue", "pvalue_phrase",
           "DEFAULT_N_BOOT"]

#: Resamples of every bootstrap or permutation p-value (and bootstrap-calibrated interval) by
#: default: with ``B = 199`` the p-value ``(1 + #{T*_b >= T}) / (B + 1)`` rejects a true null
#: with probability exactly ``alpha`` at 5% and 1% (``alpha (B + 1)`` an integer; Davidson and
#: MacKinnon 2000, "Bootstrap tests: how many bootstraps?"); with 200, 10/201 at 5%.
DEFAULT_N_BOOT = 199


def format_pvalue(p: float) -> str:
    """Format a p-value as R's ``print.htest``: ``< 2.2e-16`` below machine precision, else 4
    significant digits (``0.005853``, ``3.3e-07``).

    This is the text of a p-value *cell*; in a sentence use :func:`pvalue_phrase`, which gives
    ``"p-value < 2.2e-16"`` rather than ``"p-value = < 2.2e-16"``.
    """
    if p is None or (isinstance(p, (float, np.floating)) and math.isnan(p)):
        return "NA"  # (np.float32's NaN printed as "nan": session 82's audit)
    if p < 2.2e-16:
        return "< 2.2e-16"
    return f"{p:.4g}"


def pvalue_phrase(p: float, name: str = "p-value") -> str:
    """``"p-value = 0.0432"``, or ``"p-value < 2.2e-16"`` below machine precision (as R prints)."""
    text = format_pvalue(p)
    return f"{name} {text}" if text.startswith("<") else f"{name} = {text}"


@dataclass(frozen=True)
class HypothesisTestResult:
    """Result of a hypothesis test, modelled on R's ``htest``.

    Attributes
    ----------
    statistic : float
        The test statistic.
    df : float
        Degrees of freedom of its reference distribution.
    pvalue : float
        The p-value.
    null : str
        The null hypothesis in words.
    method : str
        Name of the test.
    distribution : str
        Reference distribution (``"chi2"``, or ``"bootstrap"`` for a resampling p-value).
    invalid_reason : str or None
        If set, the test could not be carried out validly; statistic and p-value are NaN.
    extra : dict
        Further details (e.g. the number of bootstrap resamples).
    """

    statistic: float
    df: float
    pvalue: float
    null: str
    method: str
    distribution: str = "chi2"
    invalid_reason: str | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        # read-only: results cache their tests and hand out the same object on every call
        object.__setattr__(self, "extra", FrozenDict(self.extra))

    @classmethod
    def invalid(cls, reason: str, *, null: str, method: str, df: float = float("nan")):
        """A test that could not be computed, carrying the reason instead of raising."""
        return cls(float("nan"), df, float("nan"), null, method, invalid_reason=reason)

    @property
    def critical_value(self) -> float:
        """The 95% quantile of the chi-square reference distribution; NaN for a resampling
        reference (``distribution="bootstrap"``: its critical value would be a quantile of
        the draws, which the result does not keep; the p-value is the test's decision)."""
        return float(stats.chi2.ppf(0.95, self.df)) if self.distribution == "chi2" else float("nan")

    @property
    def reference(self) -> str:
        """The reference distribution as printed: ``"chi2(3)"`` or e.g. ``"bootstrap"``."""
        return f"chi2({self.df:g})" if self.distribution == "chi2" else self.distribution

    def _lines(self):
        lines = [self.method, f"H0: {self.null}"]
        if self.invalid_reason:
            lines.append(f"Invalid test: {self.invalid_reason}")
        else:
            lines.append(f"statistic = {self.statistic:.4f}, df = {self.df:g}, "
                         f"{pvalue_phrase(self.pvalue)} ({self.reference})")
        for k, v in self.extra.items():
            lines.append(f"{k}: {v}")
        return lines

    def __str__(self):
        return "\n".join(self._lines())

    def __repr__(self):
        if self.invalid_reason:
            return f"<HypothesisTestResult {self.method}: invalid ({self.invalid_reason})>"
        return (f"<HypothesisTestResult {self.method}: statistic={self.statistic:.4f}, "
                f"df={self.df:g}, {pvalue_phrase(self.pvalue, 'pvalue')}>")

    def _repr_html_(self):
        """One row (statistic, df, p-value, reference distribution) under the method's name,
        then the null hypothesis and any details, each in a full-width row."""
        esc = html.escape
        head = ("statistic", "df", "p-value", "reference distribution")
        if self.invalid_reason:
            cells = ("NA", "NA" if np.isnan(self.df) else f"{self.df:g}", "NA", "not computed")
        else:
            cells = (f"{self.statistic:.4f}", f"{self.df:g}", format_pvalue(self.pvalue),
                     self.reference)
        n = len(head)
        notes = [("H0", self.null)]
        if self.invalid_reason:
            notes.append(("invalid test", self.invalid_reason))
        notes += [(str(k), str(v)) for k, v in self.extra.items()]
        foot = "".join(f"<tr><th scope='row' style='text-align:left'>{esc(k)}</th>"
                       f"<td colspan='{n - 1}' style='text-align:left'>{esc(v)}</td></tr>"
                       for k, v in notes)
        return ("<table class='puinfer-test'>"
                f"<caption style='text-align:left'><b>{esc(self.method)}</b></caption>"
                "<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead>"
                "<tbody><tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>"
                f"{foot}</tbody></table>")


def chi2_test(statistic: float, df: float, *, null: str, method: str, extra=None):
    """Build a :class:`HypothesisTestResult` with a chi-square p-value (upper tail)."""
    statistic = float(statistic)
    return HypothesisTestResult(statistic, float(df), float(stats.chi2.sf(statistic, df)), null,
                                method, extra=dict(extra or {}))


def lr_test(restricted, full, *, tol: float = 1e-6, reference: str = "chi2",
            n_boot: int = DEFAULT_N_BOOT,
            rng=0, smooth="silverman", n_jobs: int = 1) -> HypothesisTestResult:
    """Likelihood-ratio test of a restricted model against a full model that nests it.

    Parameters
    ----------
    restricted, full : LikelihoodResults or FittedCalibrator
        Fitted puinfer results on the same data; ``restricted`` must be nested in ``full``.
        Nested pairs: a model and its restricted fits (SETM in DETM, URC's no-shift and
        equal-rate fits); DETM/SETM fits with a subset of the covariates (by column space)
        on the same rows; calibrators fitted by ``Calibrator.fit`` to the same data whose
        family nests (temperature in logistic in beta or an unpenalised spline); a URC fit
        without groups in the grouped fit of the same field rows. Anything else is refused
        with the reason.
    tol : float
        Relative tolerance on the excess of the restricted maximised (penalised)
        log-likelihood over the full one, which cannot be positive at the maxima: an excess up
        to ``tol * max(1, |full.llf_penalized|)`` (optimiser error) gives a statistic of 0,
        a larger one is refused (the full fit is not at its maximum).
    reference : {"chi2", "bootstrap"}
        The statistic's reference distribution: chi-square with ``df`` degrees of freedom, or
        (DETM full models with a subset of the features: the test whose chi-square
        reference over-rejects where pi is weakly determined) its bootstrap distribution
        under the fitted restricted model: resamples drawn from it (its EL weights and
        tilts, smoothed as ``test_scar``'s bootstrap), both models refitted on each, and the
        p-value ``(1 + #{LR_b >= LR}) / (B + 1)``. Other pairs are refused.
    n_boot, rng, smooth, n_jobs
        The bootstrap's resamples (default :data:`DEFAULT_N_BOOT`, 199), random source (an
        int seed, default 0: the same p-value on every call; a Generator or None for fresh
        draws), kernel bandwidth (``"silverman"`` or a number >= 0; 0 the discrete
        bootstrap) and processes, as in :meth:`DETMResults.test_scar
        <puinfer.models.detm.results.DETMResults.test_scar>`; checked whichever the
        ``reference``.

    Returns
    -------
    HypothesisTestResult
        ``statistic = 2 (full.llf_penalized - restricted.llf_penalized)`` (the maximised
        log-likelihoods: ``llf`` unless a penalty or prior was applied), ``df = full.df_model -
        restricted.df_model``.

    Raises
    ------
    TypeError
        If either argument is not a puinfer results object, or ``tol`` is not a number.
    ValueError
        If the models are not nested, were fitted to different data, or computed their
        log-likelihoods differently (e.g. one penalised, one not); if ``tol`` is negative or
        NaN.
    """
    tol = check_tol(tol)
    if reference not in ("chi2", "bootstrap"):
        raise ValueError(f"reference must be 'chi2' or 'bootstrap'; got {reference!r}")
    from ..models.detm.results import _check_boot_options

    gen = _check_boot_options(n_boot, smooth, n_jobs, rng)
    restricted, full = _comparable(restricted, "restricted"), _comparable(full, "full")
    reason = restricted._nesting(full)
    if reason is not None:
        if full._nesting(restricted) is None:
            # (the reasons given from the wrong side were misleading, e.g. "not fitted to the
            # same data" for URC fits with and without groups: session 67's audit)
            raise ValueError("lr_test: the arguments are the wrong way round: the first "
                             "(restricted) must be nested in the second (full), and here the "
                             "second is nested in the first; call lr_test(second, first)")
        raise ValueError(f"lr_test: {reason}")
    df = full.df_model - restricted.df_model
    if df <= 0:
        raise ValueError(f"lr_test: the full model must have more free parameters than the "
                         f"restricted one (got {full.df_model} and {restricted.df_model})")
    llf0 = restricted._llf_as_restriction_of(full)
    stat = 2.0 * (full.llf_penalized - llf0)
    if stat < 0:
        if stat < -2 * tol * max(1.0, abs(full.llf_penalized)):
            raise ValueError(f"lr_test: the restricted log-likelihood exceeds the full one by "
                             f"{-stat / 2:.3g}; the full model did not reach its maximum")
        stat = 0.0
    r_name, f_name = describe_fit(restricted), describe_fit(full)
    t = chi2_test(stat, df, null=f"{r_name} (restricted) holds",
                  method=f"Likelihood-ratio test: {r_name} vs {f_name}",
                  extra={"maximised log-likelihoods (restricted, full)":
                         f"{llf0:.4f}, {full.llf_penalized:.4f}",
                         **full._lr_notes(restricted)})
    if reference == "chi2":
        return t
    boot = getattr(full, "_lr_bootstrap", None)
    reason = "not a DETM fit" if boot is None else full._lr_bootstrap_refusal(restricted)
    if reason is not None:
        raise ValueError(f"lr_test: reference='bootstrap' is available for a DETM fit against "
                         f"a DETM or SETM fit with a subset of its features; {reason}")
    return boot(restricted, t, int(n_boot), gen, smooth, n_jobs)


def check_tol(tol) -> float:
    """:func:`lr_test`'s ``tol``: a number >= 0 (``inf``: any excess of the restricted
    log-likelihood counts as optimiser error); text, ``None`` and bools are refused (``"abc"``,
    ``-1`` and ``None`` were accepted: an argument read only when the excess is positive)."""
    if isinstance(tol, (float, np.floating)) and np.isposinf(tol):
        return float(tol)
    return check_real(tol, "tol", minimum=0.0, what="a number >= 0")


def describe_fit(r) -> str:
    """A fit's name for test results and tables: the model name, with its formula if any."""
    formula = getattr(getattr(r, "model", None), "formula", None)
    return f"{r.model_name}: {formula}" if isinstance(formula, str) else str(r.model_name)


def _comparable(r, name):
    """``r`` as a :class:`~puinfer.base.results.LikelihoodResults` (a fitted calibrator is
    wrapped), or ``TypeError`` naming the argument."""
    from ..base.results import LikelihoodResults

    if hasattr(r, "_as_likelihood_results"):
        r = r._as_likelihood_results()
    if not isinstance(r, LikelihoodResults):
        raise TypeError(f"{name} must be a fitted puinfer results object, got {type(r).__name__}")
    return r


def _matched(observed, expected):
    """``expected`` matched to ``observed`` where both are pandas objects: rows on the index,
    a DataFrame's cells on its columns (session 67's audit: taken by position, one Series
    reversed gave X^2 = 61.5 instead of 4.4); arrays by position."""
    if not (isinstance(observed, (pd.Series, pd.DataFrame))
            and isinstance(expected, (pd.Series, pd.DataFrame))):
        return observed, expected
    expected = align_rows({"observed": observed, "expected": expected})[0]["expected"]
    for nm, x in (("observed", observed), ("expected", expected)):
        if isinstance(x, pd.DataFrame) and x.columns.has_duplicates:
            # (matched by name, a duplicated column was taken twice: "different shapes")
            dup = x.columns[x.columns.duplicated()].unique().tolist()
            raise ValueError(f"{nm}: duplicate column name(s) {dup[:3]}; cells are matched by "
                             "name")
    if isinstance(observed, pd.DataFrame) and isinstance(expected, pd.DataFrame):
        only_o = [c for c in observed.columns if c not in expected.columns]
        only_e = [c for c in expected.columns if c not in observed.columns]
        if only_o or only_e:
            raise ValueError(f"observed and expected have different columns (only in observed: "
                             f"{only_o[:3]}; only in expected: {only_e[:3]}): cells are "
                             "matched by name, never by position")
        expected = expected[list(observed.columns)]
    return observed, expected


def _counts(x, name: str) -> np.ndarray:
    """Counts as a 2-D float array (rows = multinomials); errors name the argument."""
    if x is None:  # (np.array(None, float) is NaN: "1 missing count(s)", session 85's audit)
        raise TypeError(f"{name} must be counts (an array, list, Series or DataFrame); got None")
    # (complex counts lost their imaginary part with numpy's ComplexWarning, text was read as
    # numbers: refused as everywhere else; session 85's audit)
    for col, v in (x.items() if isinstance(x, pd.DataFrame) else [(None, x)]):
        refuse_text(v, name if col is None else f"{name}: column {col!r}")
    try:
        a = np.atleast_2d(np.array(x, dtype=float))
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numeric counts; got values that are not numbers "
                        "(or rows of different lengths)") from None
    if a.ndim == 2 and a.shape[1] == 1 and a.shape[0] > 1:
        raise ValueError(f"{name} has one column: each row would be a multinomial of one cell "
                         "(no test); pass one multinomial as a 1-D vector, or one row per "
                         "multinomial")
    if a.ndim != 2:
        raise ValueError(f"{name} must be 1- or 2-dimensional (rows = multinomials); got "
                         f"{a.ndim} dimensions")
    if a.size == 0:
        raise ValueError(f"{name} is empty")
    if np.isnan(a).any():
        raise ValueError(f"{name}: {int(np.isnan(a).sum())} missing (NaN) count(s)")
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: infinite count(s)")
    if (a < 0).any():
        raise ValueError(f"{name}: counts must be non-negative; got {a[a < 0][:3].tolist()}")
    return a


def chisq_gof(observed, expected, ddof: int = 0, *, statistic: str = "pearson",
              null: str = "the fitted model reproduces the observed counts"):
    """Chi-square goodness-of-fit test of observed counts against fitted expected counts.

    Parameters
    ----------
    observed, expected : array_like, pandas.Series or pandas.DataFrame
        Counts of the same shape: a vector (one multinomial) or a matrix (one multinomial per
        row). Where both are pandas objects, ``expected`` is matched to ``observed`` on the
        index (and a DataFrame's columns by name), never by position.
    ddof : int
        Number of parameters estimated from the counts (a non-negative integer);
        ``df = (#cells - #constraints) - ddof`` where each row of a 2-D array (each multinomial)
        contributes one constraint. Every cell counts, also one with expected count 0
        (which adds nothing to the statistic): that is right where the fit estimated the cell's
        probability as 0 and ``ddof`` counts that parameter (URC's test of its fitted
        histograms); for a structural zero of the model (a cell that cannot hold counts, which
        ``ddof`` does not count), leave the cell out, or the test is conservative (1.75% at the
        5% level in 2,000 multinomials with one such cell; session 82's audit).
    statistic : {"pearson", "lr"}
        Pearson's X^2 or the likelihood-ratio statistic G^2 = 2 sum O log(O/E).

    Returns
    -------
    HypothesisTestResult
        Invalid (with the reason, not an error) when no degrees of freedom are left or a
        cell with observations has expected count 0.

    Raises
    ------
    ValueError
        Naming the argument: missing, infinite or negative counts, different shapes, row
        totals of ``observed`` and ``expected`` that differ (relative tolerance 1e-6), a
        negative ``ddof``, an unknown ``statistic``.
    TypeError
        Non-numeric counts, or a ``ddof`` that is not an integer (e.g. 0.5).
    """
    if statistic not in ("pearson", "lr"):
        raise ValueError(f"statistic must be 'pearson' or 'lr'; got {statistic!r}")
    ddof = check_int(ddof, "ddof", minimum=0)
    observed, expected = _matched(observed, expected)
    o, e = _counts(observed, "observed"), _counts(expected, "expected")
    if o.shape != e.shape:
        raise ValueError(f"observed {o.shape} and expected {e.shape} have different shapes")
    # each row is one multinomial: the fitted expected counts share its observed total
    to, te = o.sum(axis=1), e.sum(axis=1)
    bad = ~np.isclose(to, te, rtol=1e-6, atol=1e-8)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        where = f" in row {r}" if o.shape[0] > 1 else ""
        raise ValueError(f"observed and expected totals differ{where} ({to[r]:.6g} vs "
                         f"{te[r]:.6g}): expected must be the fitted counts for the same "
                         "total (for probabilities, multiply by the observed total)")
    df = o.size - o.shape[0] - ddof
    if df <= 0:
        return HypothesisTestResult.invalid(f"no degrees of freedom left (df = {df})", null=null,
                                            method="Chi-square goodness of fit", df=df)
    if statistic == "pearson":
        pos = e > 0
        if np.any(o[~pos] > 0):
            return HypothesisTestResult.invalid("a cell with observations has expected count 0",
                                                null=null, method="Pearson chi-square GOF", df=df)
        stat = np.sum((o[pos] - e[pos]) ** 2 / e[pos])
        name = "Pearson chi-square goodness of fit"
    elif statistic == "lr":
        pos = o > 0
        if np.any(e[pos] == 0):
            return HypothesisTestResult.invalid("a cell with observations has expected count 0",
                                                null=null, method="LR chi-square GOF", df=df)
        stat = 2.0 * np.sum(o[pos] * np.log(o[pos] / e[pos]))
        name = "Likelihood-ratio (G) chi-square goodness of fit"
    small = int(np.sum(e < 5))
    extra = {"cells with expected count < 5": small} if small else {}
    return chi2_test(max(stat, 0.0), df, null=null, method=name, extra=extra)
