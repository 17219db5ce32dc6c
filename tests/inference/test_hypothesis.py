"""Test results and the shared tests: chi-square GOF against scipy, formatting."""

import numpy as np
import pytest
from scipy import stats

from puinfer.inference import HypothesisTestResult, chi2_test, chisq_gof, format_pvalue


def test_pearson_and_g_match_scipy():
    obs = np.array([18, 30, 22, 30])
    exp = np.array([25.0, 25.0, 25.0, 25.0])
    p = chisq_gof(obs, exp, statistic="pearson")
    ref = stats.chisquare(obs, exp)
    assert p.statistic == pytest.approx(ref.statistic) and p.pvalue == pytest.approx(ref.pvalue)
    g = chisq_gof(obs, exp, statistic="lr")
    ref = stats.power_divergence(obs, exp, lambda_="log-likelihood")
    assert g.statistic == pytest.approx(ref.statistic) and g.pvalue == pytest.approx(ref.pvalue)
    assert p.df == 3


def test_rows_are_separate_multinomials_and_ddof():
    obs = np.array([[10, 20, 30], [5, 5, 10]])
    exp = np.array([[12, 18, 30], [6, 5, 9]], dtype=float)
    r = chisq_gof(obs, exp, ddof=1)
    assert r.df == 6 - 2 - 1
    assert r.statistic == pytest.approx(np.sum((obs - exp) ** 2 / exp))


def test_invalid_when_no_df_or_impossible_cell():
    r = chisq_gof([5, 5], [5, 5], ddof=1)
    assert r.invalid_reason and np.isnan(r.pvalue)
    r = chisq_gof([5, 5, 1], [6, 5, 0])
    assert "expected count 0" in r.invalid_reason
    assert "invalid" in repr(r)


def test_result_prints():
    r = chi2_test(3.2, 2, null="nothing", method="A test")
    assert r.pvalue == pytest.approx(stats.chi2.sf(3.2, 2))
    text = str(r)
    assert "A test" in text and "H0: nothing" in text and "df = 2" in text
    assert "<table" in r._repr_html_()
    assert isinstance(r, HypothesisTestResult)
    assert r.critical_value == pytest.approx(stats.chi2.ppf(0.95, 2))


def test_format_pvalue():
    assert format_pvalue(1e-20) == "< 2.2e-16"
    assert format_pvalue(0.04321) == "0.0432"
    assert format_pvalue(3.3e-7) == "3.3e-07"


# -- issue 13: bad counts and ddof are named -------------------------------------------------------
@pytest.mark.parametrize("obs, exp, err, match", [
    ([10, np.nan, 30], [20, 20, 20], ValueError, r"observed: 1 missing \(NaN\) count"),
    ([10, 20, 30], [20, np.inf, 20], ValueError, "expected: infinite count"),
    ([10, -20, 30], [20, 20, 20], ValueError, "observed: counts must be non-negative"),
    ([10, 20, 30], [1, 2, 3], ValueError, r"observed and expected totals differ \(60 vs 6\)"),
    ([[10, 20], [5, 5]], [[15, 15], [5, 6]], ValueError, r"totals differ in row 1 \(10 vs 11\)"),
    (["a", 2, 3], [2, 2, 2], TypeError, "observed must be numeric"),
])
def test_chisq_gof_bad_counts(obs, exp, err, match):
    with pytest.raises(err, match=match):
        chisq_gof(obs, exp)


@pytest.mark.parametrize("ddof, err, match", [
    (-1, ValueError, "ddof must be >= 0; got -1"),
    (0.5, TypeError, "ddof must be an integer; got 0.5"),
    ("1", TypeError, "ddof must be an integer"),
    (True, TypeError, "ddof must be an integer"),
])
def test_chisq_gof_bad_ddof(ddof, err, match):
    with pytest.raises(err, match=match):
        chisq_gof([10, 20, 30], [20, 20, 20], ddof=ddof)


def test_chisq_gof_integral_float_ddof_and_no_runtime_warning():
    assert chisq_gof([10, 20, 30], [20, 20, 20], ddof=1.0).df == 1
    with pytest.raises(ValueError, match="statistic must be"):
        chisq_gof([10, 20, 30], [20, 20, 20], statistic="G")
