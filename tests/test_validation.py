"""The shared input checks of :mod:`puinfer._validation` on tall designs (issue 17: computed a
chunk of rows at a time, without copies of the design)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import puinfer as pu
from puinfer import _validation as val


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(val, "ROW_CHUNK", 37)  # many chunks, the last one partial


def test_robust_sd_equals_numpys_std_in_chunks(small_chunks):
    rng = np.random.default_rng(1)
    X = rng.normal(3.0, 2.0, size=(1000, 4)) * np.array([1.0, 1e-200, 1e200, 1e-5])
    # moderate columns: numpy's std; extreme ones: the std of the rescaled column, rescaled
    # (numpy's std underflows at 1e-200 and overflows at 1e200)
    ref = np.array([(X[:, j] / s).std() * s for j, s in enumerate([1.0, 1e-200, 1e200, 1e-5])])
    np.testing.assert_allclose(val.robust_sd(X), ref, rtol=1e-12)
    with np.errstate(over="ignore", under="ignore"):
        assert X[:, 1].std() == 0 and not np.isfinite(X[:, 2].std())


def test_r_factor_has_the_singular_values_of_the_whole(small_chunks):
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(500, 6)) @ rng.normal(size=(6, 6))
    R = val._r_factor(val._chunks(Z), 6)
    assert R.shape == (6, 6)
    np.testing.assert_allclose(np.linalg.svd(R, compute_uv=False),
                               np.linalg.svd(Z, compute_uv=False), rtol=1e-12)
    # the right singular vectors too (up to sign)
    v_r, v_z = np.linalg.svd(R)[2], np.linalg.svd(Z, full_matrices=False)[2]
    np.testing.assert_allclose(np.abs(v_r @ v_z.T), np.eye(6), atol=1e-10)


def test_check_full_rank_names_collinear_columns_across_chunks(small_chunks):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 4))
    names = ["a", "b", "c", "d"]
    val.check_full_rank(X, names, "design", intercept=True)  # full rank: no error
    X[:, 3] = 2 * X[:, 0] - X[:, 2] + 5.0  # collinear with the intercept's help
    with pytest.raises(ValueError, match=r"design: collinear columns \['a', 'c', 'd'\]"):
        val.check_full_rank(X, names, "design", intercept=True)
    X[:, 3] = 7.0
    with pytest.raises(ValueError, match=r"constant column\(s\) \['d'\]"):
        val.check_full_rank(X, names, "design", intercept=True)
    # an explicit intercept column is allowed, as before
    val.check_full_rank(np.column_stack([np.ones(400), X[:, :3]]), ["Intercept", *names[:3]],
                        "design")


def test_check_full_rank_counts_the_implied_intercept():
    X = np.random.default_rng(4).normal(size=(4, 3))
    val.check_full_rank(X, ["a", "b", "c"], "design")  # 4 rows, 3 columns
    with pytest.raises(ValueError, match="design: 4 rows for 4 columns"):
        val.check_full_rank(X, ["a", "b", "c"], "design", intercept=True)


@pytest.mark.parametrize("scale, what", [(1e300, "values up to"), (1e-300, "a spread")])
def test_check_scale_from_the_precomputed_extremes(small_chunks, scale, what):
    X = np.random.default_rng(5).normal(size=(300, 2))
    X[:, 1] *= scale
    with pytest.raises(ValueError, match=f"column 'x2' has {what}"):
        val.check_full_rank(X, ["x1", "x2"], "design", intercept=True)


def test_level_label_keeps_the_levels_digits():
    # labels of intervals and tables: 99.9% used to print as "100%" ({:.0%})
    from puinfer._validation import level_label

    assert [level_label(v) for v in (0.95, 0.9, 0.975, 0.999, 1 - 1e-4)] == \
        ["95%", "90%", "97.5%", "99.9%", "99.99%"]
    # a level below 1 is never "100%" (session 67's audit: alpha = 1e-10)
    assert level_label(1 - 1e-10) == "99.99999999%" and level_label(1.0) == "100%"


def test_coefficient_table_interval_columns_keep_the_levels_digits():
    # at level 0.999 the upper column read "1]" (3 significant digits)
    import pandas as pd

    from puinfer.summary import coef_table

    for level, cols in ((0.95, ["[0.025", "0.975]"]), (0.9, ["[0.05", "0.95]"]),
                        (0.999, ["[0.0005", "0.9995]"])):
        tab = coef_table(pd.Series({"b": 1.0}), pd.Series({"b": 0.1}), level)
        assert list(tab.columns[-2:]) == cols


def test_summary_latex_escapes_every_special_character():
    # <, > and | (P>|z|, "< 2.2e-16", |grad|) went out raw: in LaTeX's default font encoding
    # they print as other glyphs; names with _ & % are escaped as before
    import pandas as pd

    from puinfer.summary import Summary, coef_table

    s = Summary("T_1 <&>")
    s.add_info("x_1|y", 3.0)
    s.add_table("cap %", coef_table(pd.Series({"Q(x_1<&%)": 1.0}), pd.Series({"Q(x_1<&%)": 1e-20})))
    s.add_note("|grad| < 1e-9")
    tex = s.as_latex()
    body = tex.replace(r"\textless{}", "").replace(r"\textgreater{}", "").replace(
        r"\textbar{}", "")
    assert not any(c in body for c in "<>|")
    assert r"P\textgreater{}\textbar{}z\textbar{}" in tex and r"\textless{} 2.2e-16" in tex
    assert r"Q(x\_1\textless{}\&\%)" in tex and r"T\_1 \textless{}\&\textgreater{}" in tex


def test_summary_latex_escapes_a_multiindex_level_by_level():
    # session 68's audit: URC's (group, class) rows went through Index.map as tuples, so the
    # LaTeX showed "('a\&b', 1)", lost the level names, and a backslash in a group name came
    # out doubled (its repr) before being escaped
    import pandas as pd

    from puinfer.summary import Summary

    idx = pd.MultiIndex.from_tuples([("a&b", 1), ("u $\\", 0)], names=["group", "class"])
    s = Summary("T")
    s.add_table("Base rates", pd.DataFrame({"estimate": [0.25, 0.5]}, index=idx))
    tex = s.as_latex()
    assert "('" not in tex
    assert r"a\&b & 1 & 0.2500" in tex
    assert r"u \$\textbackslash{} & 0 & 0.5000" in tex
    assert r"\textbackslash{}\textbackslash{}" not in tex
    assert "group & class" in tex


@pytest.mark.parametrize("make", [
    lambda: ["0.3", "0.5"],
    lambda: np.array(["0.3", "0.5"]),
    lambda: np.array(["0.3", 0.5], dtype=object),
    lambda: pd.Series(["0.3", "0.5"]),
    lambda: pd.Series(["0.3", "0.5"], dtype="string"),
    lambda: pd.Series(["0.3", "0.5"], dtype="category"),  # (session 69's review)
])
def test_numbers_as_text_are_refused_where_a_vector_is_read(make):
    # session 69: numpy and pandas convert "0.3" to 0.3 silently, so CalEM scores, URC
    # predictions and base rates, prior-shift probabilities and priors, and DETM/SETM
    # arrays given as text were accepted, while a DataFrame's text column was refused
    for call in (lambda x: val.as_float_vector(x, "score"),
                 lambda x: val.check_unit_interval(x, "score"),
                 lambda x: val.as_float_matrix(x, "score"),
                 lambda x: pu.adjust_prior(x, 0.5, 0.2),
                 lambda x: pu.adjust_prior([0.3, 0.4], x, 0.2)):
        with pytest.raises(ValueError, match="text|non-numeric"):  # (a Series: its column)
            call(make())


def test_text_predictions_and_base_rates_are_refused_by_urc():
    rng = np.random.default_rng(0)
    p = rng.random(300)
    y = (rng.random(300) < p).astype(int)
    m = pu.URC(p, y)
    with pytest.raises(ValueError, match="field_pred holds text"):
        m.fit(p.astype(str))
    r = m.fit(p)
    with pytest.raises(ValueError, match="holds text"):
        r.test_no_shift(value="0.5")
    # numbers (nullable, boolean, object-free) still pass
    np.testing.assert_array_equal(val.as_float_vector(pd.Series([1, 0], dtype="Int64"), "y"),
                                  [1.0, 0.0])
    np.testing.assert_array_equal(val.as_float_vector([True, False], "y"), [1.0, 0.0])


@pytest.mark.parametrize("value, err, match", [
    ("0.3", TypeError, r"x must be a number in \[0, 1\]; got '0.3'"),
    (True, TypeError, "got True"),
    (np.True_, TypeError, "got "),
    (None, TypeError, "got None"),
    ([0.3], TypeError, r"got \[0.3\]"),
    (np.array([0.3]), TypeError, "got "),
    (np.nan, ValueError, "got nan"),
    (np.inf, ValueError, "got inf"),
    (-0.1, ValueError, "got -0.1"),
    (1.5, ValueError, "got 1.5"),
])
def test_check_real(value, err, match):
    with pytest.raises(err, match=match):
        val.check_real(value, "x", minimum=0, maximum=1)


def test_check_real_numbers_and_messages():
    for v in (0, 1, 0.5, np.float32(0.5), np.int64(1), np.array(0.25)):
        out = val.check_real(v, "x", minimum=0, maximum=1)
        assert type(out) is float and out == float(v)
    assert val.check_real(-1e300, "x") == -1e300
    with pytest.raises(ValueError, match="^tol must be a finite number >= 0; got -1.0$"):
        val.check_real(-1, "tol", minimum=0)
    with pytest.raises(TypeError, match=r"^p must be a probability; got 'a'$"):
        val.check_real("a", "p", what="a probability")


def test_scalar_checks_read_zero_dimensional_arrays():
    # a 0-d array is its element: np.array(True) is a bool, np.array("0.3") text
    assert val.check_bool(np.array(True), "x") is True
    with pytest.raises(ValueError, match="x must be True or False"):
        val.check_bool(np.array("True"), "x")
    assert val.check_real(np.array(0.25), "x") == 0.25
    with pytest.raises(TypeError, match="x must be"):
        val.check_real(np.array("0.3"), "x")


def test_intercept_column_refused_where_the_model_has_its_own():
    # session 83's audit: a patsy.dmatrix design (with its Intercept column) passed to SETM
    # failed later as 'the starting values are infeasible'; a column named 'const' was refused
    rng = np.random.default_rng(1)
    S = pd.DataFrame({"Intercept": 1.0, "x": rng.normal(.5, 1, 200)})
    T = pd.DataFrame({"Intercept": 1.0, "x": rng.normal(0, 1, 200)})
    for model in (pu.SETM, pu.DETM):
        with pytest.raises(ValueError, match=r"constant column\(s\) \['Intercept'\].*own "
                                             "intercept"):
            model(S, T)
    # a model without an intercept of its own still takes the column as its intercept
    X = np.column_stack([np.ones(50), rng.normal(size=50)])
    val.check_full_rank(X, ["Intercept", "x"], "X")


def test_seed_arguments_say_what_they_take():
    # session 83's audit: spambase_lab_field(True) ran as the seed 1 and took a RandomState;
    # check_rng's message named only ints and Generators though it takes more
    from puinfer.simulate.urc import spambase_lab_field

    for bad in (True, 1.5, "42", np.random.RandomState(1)):
        with pytest.raises(TypeError, match="seed must be an int seed .* SeedSequence or "
                                            "BitGenerator, or None"):
            spambase_lab_field(bad)


def test_alpha_below_its_minimum_is_refused():
    # session 85's audit: alpha = 1e-17 passed, and 1 - alpha rounded to 1: Wald limits of
    # -inf/inf, an infinite profile cut-off refused as "cutoff must be finite", NaN
    # Clopper-Pearson limits
    assert val.check_alpha(val.ALPHA_MIN) == val.ALPHA_MIN
    for a in (1e-17, 1e-300, 5e-11):
        with pytest.raises(ValueError, match=r"alpha must be at least 1e-10 \(the quantiles"):
            val.check_alpha(a)
    rng = np.random.default_rng(0)
    p = rng.random(200)
    with pytest.raises(ValueError, match=r"alpha must be at least 1e-10"):
        pu.metrics.reliability_curve(rng.random(200) < p, p, alpha=1e-100)
    prof = pu.Profile("theta", 0.4, 0.0, lambda v: -((v - 0.4) ** 2) / 0.005, bounds=(0, 1))
    with pytest.raises(ValueError, match=r"alpha must be at least 1e-10"):
        prof.conf_int(1e-17)
