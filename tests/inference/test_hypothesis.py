"""Test results and the shared tests: chi-square GOF against scipy, formatting."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from puinfer.inference import (
    HypothesisTestResult,
    chi2_test,
    chisq_gof,
    format_pvalue,
    pvalue_phrase,
)


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
    # a resampling reference has no chi-square quantile (documented, not a stray NaN)
    boot = HypothesisTestResult(3.2, 2, 0.2, "nothing", "A test", distribution="bootstrap")
    assert np.isnan(boot.critical_value) and boot.reference == "bootstrap"


def test_format_pvalue():
    assert format_pvalue(1e-20) == "< 2.2e-16"
    # R 4.x: format.pval(c(0.04321, 0.005852662593, 0.5), digits = 4) (as print.htest)
    assert format_pvalue(0.04321) == "0.04321"
    assert format_pvalue(0.005852662593) == "0.005853"
    assert format_pvalue(0.5) == "0.5"
    assert format_pvalue(3.3e-7) == "3.3e-07"


# -- issue 13: bad counts and ddof are named -------------------------------------------------------
@pytest.mark.parametrize("obs, exp, err, match", [
    ([10, np.nan, 30], [20, 20, 20], ValueError, r"observed: 1 missing \(NaN\) count"),
    ([10, 20, 30], [20, np.inf, 20], ValueError, "expected: infinite count"),
    ([10, -20, 30], [20, 20, 20], ValueError, "observed: counts must be non-negative"),
    ([10, 20, 30], [1, 2, 3], ValueError, r"observed and expected totals differ \(60 vs 6\)"),
    ([[10, 20], [5, 5]], [[15, 15], [5, 6]], ValueError, r"totals differ in row 1 \(10 vs 11\)"),
    (["a", 2, 3], [2, 2, 2], ValueError, "observed holds text, not numbers"),
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


def test_chisq_gof_matches_pandas_counts_by_label():
    # session 67's audit: pandas counts were paired by position (one Series reversed gave
    # X^2 = 61.5 instead of 4.38); scipy on the counts in one order is the reference
    import pandas as pd

    o = pd.Series([10, 20, 30], index=list("abc"))
    e = pd.Series([20.0, 20.0, 20.0], index=list("abc"))
    ref = stats.chisquare([10, 20, 30], [20, 20, 20]).statistic
    assert chisq_gof(o, e.iloc[::-1]).statistic == pytest.approx(ref, rel=1e-12)
    e2 = pd.Series([15.0, 20.0, 25.0], index=list("abc"))
    assert chisq_gof(o, e2.iloc[::-1]).statistic == pytest.approx(
        stats.chisquare([10, 20, 30], [15, 20, 25]).statistic, rel=1e-12)
    O = pd.DataFrame({"x": [10, 5], "y": [30, 15]}, index=["r", "s"])
    ref_e = [[20.0, 20.0], [10.0, 10.0]]
    E = pd.DataFrame(ref_e, index=["r", "s"], columns=["x", "y"]).iloc[::-1, ::-1]
    assert chisq_gof(O, E).statistic == pytest.approx(
        chisq_gof(O.to_numpy(), ref_e).statistic, rel=1e-12)
    with pytest.raises(ValueError, match="different index labels"):
        chisq_gof(o, e.set_axis(list("abd")))
    with pytest.raises(ValueError, match="different columns"):
        chisq_gof(O, E.rename(columns={"y": "z"}))
    with pytest.raises(ValueError, match="observed has one column"):
        chisq_gof(O[["x"]], E[["x"]])


def test_chisq_gof_integral_float_ddof_and_no_runtime_warning():
    assert chisq_gof([10, 20, 30], [20, 20, 20], ddof=1.0).df == 1
    with pytest.raises(ValueError, match="statistic must be"):
        chisq_gof([10, 20, 30], [20, 20, 20], statistic="G")


# -- issue 15: the HTML of a test result is a table; p-values as R prints them ------------------
def test_result_html_is_a_table_with_the_values(read_table):
    r = chi2_test(12.5, 3, null="the treated labels carry no bias", method="LR test of bias",
                  extra={"maximised log-likelihoods": "-10.0, -3.75"})
    caption, rows = read_table(r._repr_html_())
    assert caption == "LR test of bias"
    head = [text for _, text, _ in rows[0]]
    assert head == ["statistic", "df", "p-value", "reference distribution"]
    assert all(tag == "th" for tag, _, _ in rows[0])
    values = dict(zip(head, (text for _, text, _ in rows[1]), strict=True))
    assert float(values["statistic"]) == pytest.approx(12.5)
    assert float(values["df"]) == 3
    assert values["p-value"] == f"{stats.chi2.sf(12.5, 3):.4g}"  # 0.005853: 4 significant digits
    assert values["reference distribution"] == "chi2(3)"
    # the null and the details: a header cell, then one cell spanning the other three columns
    assert rows[2] == [("th", "H0", 1), ("td", "the treated labels carry no bias", 3)]
    assert rows[3] == [("th", "maximised log-likelihoods", 1), ("td", "-10.0, -3.75", 3)]
    assert len(rows) == 4


def test_tiny_pvalue_is_a_cell_not_a_sentence(read_table):
    r = chi2_test(500.0, 1, null="nothing", method="A test")
    _, rows = read_table(r._repr_html_())
    assert rows[1][2] == ("td", "< 2.2e-16", 1)  # escaped in the HTML, decoded by the parser
    assert "&lt; 2.2e-16" in r._repr_html_()
    text = str(r)
    assert "p-value < 2.2e-16 (chi2(1))" in text and "= <" not in text
    assert "= <" not in repr(r) and "pvalue < 2.2e-16" in repr(r)
    assert "p-value = 0.07364" in str(chi2_test(3.2, 1, null="n", method="m"))  # chi2.sf(3.2, 1)
    assert pvalue_phrase(1e-20) == "p-value < 2.2e-16"
    assert pvalue_phrase(0.5, "p") == "p = 0.5"
    assert pvalue_phrase(float("nan")) == "p-value = NA"


def test_invalid_result_html_gives_the_reason(read_table):
    r = chisq_gof([5, 5], [5, 5], ddof=1)
    caption, rows = read_table(r._repr_html_())
    assert [t for _, t, _ in rows[1]] == ["NA", "0", "NA", "not computed"]
    assert ("th", "invalid test", 1) in rows[3] and "no degrees of freedom" in rows[3][1][1]
    # an unknown df prints NA, as the text forms do (session 68's audit: "nan")
    from puinfer.inference.hypothesis import HypothesisTestResult

    nodf = HypothesisTestResult(float("nan"), float("nan"), float("nan"), null="x", method="m",
                                invalid_reason="not computed here")
    _, rows = read_table(nodf._repr_html_())
    assert [t for _, t, _ in rows[1]] == ["NA", "NA", "NA", "not computed"]


def test_results_are_hashable_and_read_only():
    # a frozen result with its read-only details (session 67's audit: hash() raised
    # "unhashable type: 'FrozenDict'")
    a = chi2_test(3.0, 1, null="x", method="m", extra={"a": "1"})
    b = chi2_test(3.0, 1, null="x", method="m", extra={"a": "1"})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    with pytest.raises(TypeError, match="read-only"):
        a.extra["a"] = "2"


def test_chisq_gof_refuses_none_complex_and_duplicate_columns_naming_them():
    # session 85's audit: None read as "1 missing (NaN) count(s)"; complex counts lost their
    # imaginary part with numpy's ComplexWarning; duplicated column names gave "observed
    # (1, 3) and expected (1, 5) have different shapes"
    with pytest.raises(TypeError, match=r"observed must be counts .*; got None"):
        chisq_gof(None, [15.0, 20, 25])
    with pytest.raises(TypeError, match=r"expected must be counts .*; got None"):
        chisq_gof([10, 20, 30], None)
    with pytest.raises(ValueError, match=r"Complex data not supported: observed holds complex"):
        chisq_gof(np.array([10, 20, 30]) + 5j, [15.0, 20, 25])
    frame = pd.DataFrame([[10, 20, 30 + 1j]], columns=list("abc"))
    with pytest.raises(ValueError, match=r"observed: column 'c' holds complex"):
        chisq_gof(frame, pd.DataFrame([[15.0, 20, 25]], columns=list("abc")))
    o = pd.DataFrame([[10, 20, 30.0]], columns=list("aab"))
    e = pd.DataFrame([[15, 20, 25.0]], columns=list("aab"))
    with pytest.raises(ValueError, match=r"observed: duplicate column name\(s\) \['a'\]; cells "
                                         "are matched by name"):
        chisq_gof(o, e)
