"""Property-based tests (issue 13) for DETM/SETM, formulas and the shared validators.

(a) Row order is irrelevant: shuffling the source and target frames (rows with their index)
    leaves the estimates unchanged and ``predict()`` unchanged when matched by index.
(b) Formulas: a column of any dtype gives either the correct design or a ValueError naming
    the column.
(c) chisq_gof, Profile and alpha: bad values give ValueError/TypeError naming the argument.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import puinfer as pu
from puinfer._validation import check_alpha
from puinfer.formula import build_design
from puinfer.inference import Profile, chisq_gof

FAST = settings(derandomize=True, deadline=None, max_examples=25,
                suppress_health_check=[HealthCheck.too_slow])
FITS = settings(derandomize=True, deadline=None, max_examples=6,
                suppress_health_check=[HealthCheck.too_slow])


# -- (a) permutation invariance of DETM/SETM ------------------------------------------------------
def _samples():
    g = np.random.default_rng(7)
    src = pd.DataFrame({"x": g.normal(size=30)}, index=np.arange(30) * 2)
    tgt = pd.DataFrame({"x": np.r_[g.normal(size=20), g.normal(1.5, 1, size=20)]},
                       index=np.arange(40) * 2 + 1)
    return src, tgt


SRC, TGT = _samples()
_REF = {}


def _fit(model, src, tgt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # probe=False: the profile probe is several times the cost of the fit; the starts
        # (deterministic functions of the data) are what row order could change
        return model(src, tgt).fit(probe=False)


@pytest.mark.parametrize("model", [pu.DETM, pu.SETM])
@FITS
@given(ps=st.permutations(range(len(SRC))), pt=st.permutations(range(len(TGT))))
def test_shuffling_rows_changes_nothing(model, ps, pt):
    if model not in _REF:
        _REF[model] = _fit(model, SRC, TGT)
    ref = _REF[model]
    r = _fit(model, SRC.iloc[list(ps)], TGT.iloc[list(pt)])
    assert r.pi == pytest.approx(ref.pi, abs=1e-7)
    np.testing.assert_allclose(r.params, ref.params, rtol=1e-6, atol=1e-7)
    post = r.predict()
    assert post.index.equals(TGT.index[list(pt)])  # the caller's (shuffled) index
    np.testing.assert_allclose(post.loc[TGT.index], ref.predict(), rtol=1e-6, atol=1e-8)


# -- (b) formula validation over column dtypes ----------------------------------------------------
KINDS = ["float", "Int64", "Int64+NA", "Float64+NA", "bool", "boolean+NA", "category",
         "labels", "datetime", "numeric-text"]


def _column(kind, n, g, na_rows):
    k = g.integers(0, 3, size=n)
    if kind == "float":
        return g.normal(size=n)
    if kind == "Int64":
        return pd.array(k, dtype="Int64")
    if kind == "Int64+NA":
        a = pd.array(k, dtype="Int64")
        a[na_rows] = pd.NA
        return a
    if kind == "Float64+NA":
        a = pd.array(g.normal(size=n), dtype="Float64")
        a[na_rows] = pd.NA
        return a
    if kind == "bool":
        return np.arange(n) % 2 == 0
    if kind == "boolean+NA":
        a = pd.array(np.arange(n) % 2 == 0, dtype="boolean")
        a[na_rows] = pd.NA
        return a
    if kind == "category":
        return pd.Categorical(np.array(["a", "b", "c"])[np.arange(n) % 3])
    if kind == "labels":
        return np.array(["u", "v", "w"], dtype=object)[np.arange(n) % 3]
    if kind == "datetime":
        return pd.date_range("2021-01-01", periods=n)
    return np.round(g.normal(size=n), 3).astype(str).astype(object)  # numeric-text


@FAST
@given(kind=st.sampled_from(KINDS), missing=st.sampled_from(["raise", "drop"]),
       na=st.sets(st.integers(0, 11), min_size=1, max_size=3), seed=st.integers(0, 5))
def test_formula_gives_correct_design_or_names_the_column(kind, missing, na, seed):
    n = 12
    g = np.random.default_rng(seed)
    na_rows = sorted(na)
    df = pd.DataFrame({"y": np.arange(n) % 2, "x": g.normal(size=n)}, index=np.arange(n) + 40)
    df["col"] = _column(kind, n, g, na_rows)
    before = df.copy()
    try:
        d = build_design("y ~ x + col", df, missing=missing)
    except ValueError as exc:
        assert "'col'" in str(exc)
        if kind == "datetime":
            assert "date/time" in str(exc) and "convert it" in str(exc)
        elif kind == "numeric-text":
            assert "numbers stored as text; convert with pd.to_numeric" in str(exc)
        else:
            assert kind.endswith("+NA") and missing == "raise" and "missing values" in str(exc)
        return
    finally:
        pd.testing.assert_frame_equal(df, before)  # the input is never modified
    assert kind not in ("datetime", "numeric-text")
    keep = np.ones(n, dtype=bool)
    if kind.endswith("+NA"):
        keep[na_rows] = False
    assert d.n_dropped == int((~keep).sum())
    assert d.X.index.equals(df.index[keep])
    np.testing.assert_array_equal(d.X["x"], df["x"].to_numpy()[keep])
    if kind in ("float", "Int64", "Int64+NA", "Float64+NA"):
        np.testing.assert_allclose(d.X["col"], df["col"].to_numpy(dtype=float,
                                                                  na_value=np.nan)[keep])
    else:  # categorical: dummies named after the column
        dummies = [c for c in d.exog_names if c.startswith("col[T.")]
        assert dummies and len(d.exog_names) == 2 + len(dummies)


# -- (c) validation of chisq_gof, Profile and alpha ----------------------------------------------
BAD_NUMBERS = st.one_of(st.just(float("nan")), st.just(float("inf")), st.just(-float("inf")),
                        st.floats(max_value=-1e-3, allow_nan=False, allow_infinity=False))


@FAST
@given(which=st.sampled_from(["observed", "expected"]), pos=st.integers(0, 3), bad=BAD_NUMBERS)
def test_chisq_gof_bad_counts_named(which, pos, bad):
    obs, exp = [10.0, 20.0, 30.0, 40.0], [25.0, 25.0, 25.0, 25.0]
    arr = obs if which == "observed" else exp
    arr[pos] = bad
    with pytest.raises(ValueError, match=which):
        chisq_gof(obs, exp)


@FAST
@given(ddof=st.one_of(st.integers(max_value=-1),
                      st.floats(allow_nan=True).filter(lambda v: not float(v).is_integer()),
                      st.text(max_size=3), st.booleans(), st.none()))
def test_chisq_gof_bad_ddof_named(ddof):
    with pytest.raises((ValueError, TypeError), match="ddof"):
        chisq_gof([10, 20, 30, 40], [25, 25, 25, 25], ddof=ddof)


@FAST
@given(total=st.floats(1.0, 1e6).filter(lambda t: abs(t - 100.0) > 1e-3))
def test_chisq_gof_different_totals_refused(total):
    exp = np.array([0.1, 0.2, 0.3, 0.4]) * total
    with pytest.raises(ValueError, match="observed and expected totals differ"):
        chisq_gof([10, 20, 30, 40], exp)


ALPHA_BAD = st.one_of(st.floats().filter(lambda a: not 0 < a <= 0.5), st.text(max_size=4),
                      st.booleans(), st.none(), st.lists(st.floats(), max_size=2))


@FAST
@given(alpha=ALPHA_BAD)
def test_bad_alpha_named(alpha):
    with pytest.raises((ValueError, TypeError), match="alpha"):
        check_alpha(alpha)
    prof = Profile("theta", 0.4, 0.0, lambda v: -((v - 0.4) ** 2) / 0.005, bounds=(0, 1))
    with pytest.raises((ValueError, TypeError), match="alpha"):
        prof.conf_int(alpha)


PROFILE_BAD = {
    "estimate": st.one_of(st.just(float("nan")), st.just(float("inf")), st.text(max_size=3),
                          st.floats(1.01, 10.0)),  # outside the bounds
    "llf_max": st.one_of(st.just(float("nan")), st.just(-float("inf")), st.text(max_size=3)),
    "loglik_at": st.one_of(st.floats(), st.text(max_size=3), st.none()),
    "bounds": st.one_of(st.tuples(st.just(float("nan")), st.just(1.0)),
                        st.tuples(st.floats(0.5, 1.0), st.floats(0.0, 0.4)),
                        st.floats(), st.text(max_size=2)),
    "step": st.one_of(st.floats(max_value=-1e-9, allow_infinity=False), st.text(max_size=3)),
    "tol": st.one_of(st.just(float("nan")), st.floats(max_value=-1e-12, allow_infinity=False),
                     st.text(max_size=3)),
}


@FAST
@given(data=st.data(), arg=st.sampled_from(sorted(PROFILE_BAD)))
def test_profile_bad_arguments_named(data, arg):
    bad = data.draw(PROFILE_BAD[arg])
    kw = dict(name="theta", estimate=0.4, llf_max=0.0,
              loglik_at=lambda v: -((v - 0.4) ** 2) / 0.005, bounds=(0.0, 1.0), step=0.05,
              tol=1e-7)
    kw[arg] = bad
    # the message names the argument (the estimate outside the bounds names both)
    with pytest.raises((ValueError, TypeError), match=arg if arg != "estimate" or
                       isinstance(bad, str) or not np.isfinite(bad) else "estimate|bounds"):
        Profile(**kw)
