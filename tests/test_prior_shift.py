"""Exact prior-shift corrections: Lemma 3 of Ziegler and Czyż and the down-sampling correction of Haupt."""

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import special

import puinfer as pu
from puinfer.exceptions import BoundaryWarning


@pytest.fixture(scope="module")
def probs():
    rng = np.random.default_rng(7)
    p = rng.random(2000)
    p[:3] = [0.0, 1.0, 0.5]
    return p


@pytest.fixture(scope="module")
def probmat():
    rng = np.random.default_rng(8)
    return rng.dirichlet([0.7, 1.0, 2.0], size=1000)


@pytest.mark.parametrize("old,new", [(0.5, 0.2), (0.02, 0.6), (0.9, 0.1), (0.3, 0.3)])
def test_binary_round_trip(probs, old, new):
    back = pu.adjust_prior(pu.adjust_prior(probs, old, new), new, old)
    assert np.max(np.abs(back - probs)) < 1e-12


@pytest.mark.parametrize("old,new", [(0.5, 0.2), (0.02, 0.6), (0.9, 0.1)])
def test_binary_equals_logit_shift(probs, old, new):
    p = probs[(probs > 0) & (probs < 1)]
    out = pu.adjust_prior(p, old, new)
    expected = special.expit(special.logit(p) + special.logit(new) - special.logit(old))
    assert_allclose(out, expected, rtol=1e-12, atol=1e-15)
    assert_allclose(special.logit(out) - special.logit(p),
                    special.logit(new) - special.logit(old), rtol=0, atol=1e-9)


def test_binary_endpoints_exact(probs):
    out = pu.adjust_prior(probs, 0.5, 0.2)
    assert out[0] == 0.0 and out[1] == 1.0
    assert out[2] == pytest.approx(0.2, abs=1e-15)  # p = old prior maps to the new prior


def test_multiclass_round_trip_and_rows(probmat):
    old = np.array([0.2, 0.3, 0.5])
    new = np.array([0.6, 0.3, 0.1])
    out = pu.adjust_prior(probmat, old, new)
    assert_allclose(out.sum(axis=1), 1.0, atol=1e-14)
    back = pu.adjust_prior(out, new, old)
    assert np.max(np.abs(back - probmat)) < 1e-12


def test_multiclass_lemma3_by_hand(probmat):
    old = np.array([0.2, 0.3, 0.5])
    new = np.array([0.6, 0.3, 0.1])
    pbar = probmat * new / old  # eq. (5)
    expected = pbar / pbar.sum(axis=1, keepdims=True)  # eq. (6)
    assert_allclose(pu.adjust_prior(probmat, old, new), expected, rtol=1e-14)


def test_two_class_matrix_matches_binary(probs):
    mat = np.column_stack([1 - probs, probs])
    out = pu.adjust_prior(mat, [0.7, 0.3], [0.4, 0.6])
    assert_allclose(out[:, 1], pu.adjust_prior(probs, 0.3, 0.6), rtol=1e-13, atol=1e-15)


def test_per_row_new_prior(probs):
    new = np.where(np.arange(probs.size) % 2 == 0, 0.1, 0.7)
    out = pu.adjust_prior(probs, 0.5, new)
    assert_allclose(out[::2], pu.adjust_prior(probs[::2], 0.5, 0.1), rtol=1e-15)
    assert_allclose(out[1::2], pu.adjust_prior(probs[1::2], 0.5, 0.7), rtol=1e-15)


def test_pandas_in_out_and_inputs_unchanged(probmat):
    s = pd.Series([0.1, 0.5, 0.9], index=["a", "b", "c"], name="score")
    s0 = s.copy()
    out = pu.adjust_prior(s, 0.5, 0.2)
    assert isinstance(out, pd.Series) and list(out.index) == ["a", "b", "c"]
    pd.testing.assert_series_equal(s, s0)
    df = pd.DataFrame(probmat[:5], columns=["x", "y", "z"], index=list("abcde"))
    df0 = df.copy()
    old = np.array([0.2, 0.3, 0.5])
    old0 = old.copy()
    out = pu.adjust_prior(df, old, [1 / 3, 1 / 3, 1 / 3])
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["x", "y", "z"]
    pd.testing.assert_frame_equal(df, df0)
    assert np.array_equal(old, old0)


def test_scalar_in_scalar_out():
    assert isinstance(pu.adjust_prior(0.5, 0.5, 0.2), float)
    assert pu.adjust_prior(0.5, 0.5, 0.2) == pytest.approx(0.2, abs=1e-15)


def test_undefined_rows_warn_and_nan():
    with pytest.warns(BoundaryWarning):
        out = pu.adjust_prior(np.array([1.0, 0.5]), 0.5, 0.0)
    assert np.isnan(out[0]) and out[1] == 0.0


# ---- down-sampling correction (Haupt) --------------------------------------------------
def test_downsampling_formula(probs):
    w = 1 / 9
    expected = probs / (probs + (1 - probs) / w)
    ok = probs > 0
    assert_allclose(pu.downsampling_correction(probs, w)[ok], expected[ok], rtol=1e-14)
    assert pu.downsampling_correction([0.5], w=1 / 9)[0] == pytest.approx(0.1, rel=1e-14)


@pytest.mark.parametrize("b,bs", [(0.103, 0.5), (0.01, 0.2), (0.3, 0.3)])
def test_downsampling_matches_lemma3(probs, b, bs):
    out = pu.downsampling_correction(probs, base_rate=b, sampled_base_rate=bs)
    assert_allclose(out, pu.adjust_prior(probs, bs, b), rtol=1e-13, atol=1e-16)
    w = b / (1 - b) * (1 - bs) / bs
    assert_allclose(pu.downsampling_correction(probs, w), out, rtol=1e-13, atol=1e-16)


def test_downsampling_w1_is_identity(probs):
    assert np.array_equal(pu.downsampling_correction(probs, 1.0), probs)


@pytest.mark.parametrize("kwargs,match", [
    (dict(prob=[0.2, 1.2], old_prior=0.5, new_prior=0.2), "prob must be in"),
    (dict(prob=[0.2, np.nan], old_prior=0.5, new_prior=0.2), "prob: 1 missing"),
    (dict(prob=[0.2], old_prior=0.0, new_prior=0.2), "old_prior"),
    (dict(prob=[0.2], old_prior=1.0, new_prior=0.2), "old_prior"),
    (dict(prob=[0.2], old_prior=0.5, new_prior=1.5), "new_prior"),
    (dict(prob=[0.2, 0.3], old_prior=0.5, new_prior=[0.1, 0.2, 0.3]), "new_prior"),
    # class priors given for a binary vector: said (session 67's audit)
    (dict(prob=[0.2, 0.3, 0.7], old_prior=0.5, new_prior=[0.8, 0.2]),
     r"got shape \(2,\) \(for class priors \[P\(Y = 0\), P\(Y = 1\)\] pass the second"),
    (dict(prob=[[0.2, 0.8]], old_prior=[0.5, 0.6], new_prior=[0.5, 0.5]), "old_prior must sum"),
    (dict(prob=[[0.2, 0.9]], old_prior=[0.5, 0.5], new_prior=[0.5, 0.5]), "rows must sum"),
    (dict(prob=[[0.2, 0.8]], old_prior=[0.5, 0.5], new_prior=[0.3, 0.3, 0.4]), "new_prior"),
])
def test_adjust_prior_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        pu.adjust_prior(**kwargs)


@pytest.mark.parametrize("kwargs,match", [
    (dict(w=0.0), r"w \(the rate"),
    (dict(w=1.5), r"w \(the rate"),
    (dict(), "give w"),
    (dict(w=0.5, base_rate=0.1, sampled_base_rate=0.5), "not both"),
    (dict(base_rate=0.5, sampled_base_rate=0.1), "w = .* > 1"),
    (dict(base_rate=0.0, sampled_base_rate=0.5), "base_rate must be strictly"),
])
def test_downsampling_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        pu.downsampling_correction([0.3, 0.5], **kwargs)


def test_no_warnings_on_ordinary_input(probs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pu.adjust_prior(probs, 0.5, 0.2)
        pu.downsampling_correction(probs, 0.3)


# -- issue 13: alignment and priors that cannot be right -------------------------------------------
def test_per_row_new_prior_series_aligned_on_prob_index(probs):
    idx = pd.Index(np.arange(7000, 7000 + probs.size))
    P = pd.Series(probs, idx, name="p")
    new = pd.Series(np.random.default_rng(2).uniform(0.05, 0.95, probs.size), idx)
    perm = np.random.default_rng(3).permutation(probs.size)
    out = pu.adjust_prior(P, 0.3, new.iloc[perm])
    assert out.index.equals(idx) and out.name == "p"
    assert np.array_equal(out.to_numpy(), pu.adjust_prior(probs, 0.3, new.to_numpy()))
    # (a Series made from an array has the default index 0..n-1, refused next to another
    # index since session 82: its labels only number the rows)
    with pytest.raises(ValueError, match="new_prior has the default index 0..n-1"):
        pu.adjust_prior(P, 0.3, pd.Series(new.to_numpy()))
    with pytest.raises(ValueError, match="new_prior and prob have different index labels"):
        pu.adjust_prior(P, 0.3, new.set_axis(idx + 1))


def test_multiclass_priors_matched_by_class_name(probmat):
    cols = ["cat", "dog", "eel"]
    df = pd.DataFrame(probmat, columns=cols, index=np.arange(100, 100 + len(probmat)))
    old = pd.Series([0.2, 0.3, 0.5], index=cols)
    new = pd.Series([0.6, 0.3, 0.1], index=cols)
    ref = pu.adjust_prior(df, old, new)
    shuffled = pu.adjust_prior(df, old[["eel", "cat", "dog"]], new[["dog", "eel", "cat"]])
    pd.testing.assert_frame_equal(shuffled, ref)
    assert list(ref.columns) == cols and ref.index.equals(df.index)
    with pytest.raises(ValueError, match="old_prior is indexed by .* prob's columns are"):
        pu.adjust_prior(df, pd.Series([0.2, 0.3, 0.5], index=["a", "b", "c"]), new)
    # per-row priors as a DataFrame: rows on the index, columns on the names
    rowp = pd.DataFrame(np.tile([0.6, 0.3, 0.1], (len(df), 1)), index=df.index, columns=cols)
    perm = np.random.default_rng(4).permutation(len(df))
    out = pu.adjust_prior(df, old, rowp.iloc[perm][["eel", "dog", "cat"]])
    pd.testing.assert_frame_equal(out, ref)


@pytest.mark.parametrize("old", [[0.2, 0.3], [0.7, 0.3], np.array([0.4, 0.4])])
def test_binary_old_prior_must_be_one_number(old):
    with pytest.raises(ValueError, match=r"old_prior: for binary probabilities give P\(Y = 1\) "
                                         "as one number"):
        pu.adjust_prior(np.array([0.4, 0.6]), old, 0.5)


@pytest.mark.parametrize("kwargs, match", [
    (dict(old_prior=np.nan, new_prior=0.5), "old_prior has missing values"),
    (dict(old_prior=0.3, new_prior=np.nan), "new_prior has missing values"),
    (dict(old_prior=0.3, new_prior=[0.5, np.nan]), "new_prior has missing values"),
    (dict(old_prior=1.5, new_prior=0.5), r"old_prior must be in \(0, 1\)"),
    (dict(old_prior=0.3, new_prior=-0.1), r"new_prior must be in \[0, 1\]"),
    (dict(old_prior=0.3, new_prior=np.inf), r"new_prior must be in \[0, 1\]"),
    (dict(old_prior="0.3", new_prior=0.5), "old_prior must be numeric"),
    (dict(old_prior=None, new_prior=0.5), "old_prior must be numeric"),
    # a bool was taken as the prior 1 (downsampling_correction refused it already)
    (dict(old_prior=0.3, new_prior=True), "new_prior must be numeric"),
])
def test_bad_priors_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        pu.adjust_prior(np.array([0.4, 0.6]), **kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(w="0.5"), "w must be one number"),
    (dict(w=[0.5]), "w must be one number"),
    (dict(base_rate="a", sampled_base_rate=0.5), "base_rate must be one number"),
])
def test_downsampling_non_numbers_named(kwargs, match):
    with pytest.raises(TypeError, match=match):
        pu.downsampling_correction([0.3, 0.5], **kwargs)


def test_multiclass_tiny_old_prior_does_not_overflow():
    # old prior 1e-320 (subnormal): new / old overflows to inf and inf * 0 gave NaN rows; by
    # hand, row (0.3, 0.7) under old (1e-320, 1), new (0.5, 0.5) has class-1 weight 0.7 * 0.5
    # against class-0's 0.3 * 0.5 / 1e-320, so P(class 1) = 0.35 / (1.5e319 + 0.35)
    p = np.array([[0.3, 0.7], [0.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = pu.adjust_prior(p, [1e-320, 1 - 1e-320], [0.5, 0.5])
    assert np.all(np.isfinite(out))
    assert out[0, 0] == 1.0 and out[0, 1] == pytest.approx(0.35 / 1.5e319, rel=1e-3)
    assert_allclose(out[1], [0.0, 1.0])


def test_non_numeric_pandas_probabilities_are_named():
    # session 68's audit: a Series of text gave numpy's bare "could not convert string to
    # float: 'a'"; a frame's message did not say which column
    # (session 69: text is refused before the conversion, numbers written as text too)
    with pytest.raises(ValueError, match="prob holds text, not numbers"):
        pu.adjust_prior(pd.Series(["a", "b"]), 0.5, 0.3)
    with pytest.raises(ValueError, match="prob holds text"):
        pu.downsampling_correction(pd.Series(["a", "b"]), 0.5)
    frame = pd.DataFrame({"cat": [0.3, 0.7], "dog": ["x", "y"]})
    with pytest.raises(ValueError, match=r"non-numeric column\(s\) \['dog'\]"):
        pu.adjust_prior(frame, [0.5, 0.5], [0.3, 0.7])


def test_underflowing_products_are_not_undefined():
    """Session 82's audit: where ``p w1`` and ``(1 - p) w0`` underflow (a subnormal
    probability) the row was reported undefined (NaN, with a BoundaryWarning) although the
    answer is 1 (Bayes' rule: with a new prior of 1, any p > 0 gives P_new = 1); only true
    0/0 rows are undefined."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pu.adjust_prior([5e-324], old_prior=0.9, new_prior=1.0)[0] == 1.0
        assert pu.adjust_prior([1e-315], old_prior=1 - 1e-12, new_prior=1.0)[0] == 1.0
        got = pu.adjust_prior([[5e-324, 0.0, 1.0]], [0.99, 0.005, 0.005], [0.3, 0.7, 0.0])
        assert_allclose(got, [[1.0, 0.0, 0.0]], rtol=0, atol=0)
        # a subnormal p against ordinary priors: 0 (the product underflows; the exact 4.5e-324
        # is below the smallest subnormal's half-way point), defined and not warned
        tiny = pu.adjust_prior([5e-324, 0.5], old_prior=0.5, new_prior=0.9)
        assert 0 <= tiny[0] < 1e-300 and tiny[1] == pytest.approx(0.9)
    with pytest.warns(BoundaryWarning, match="1 row"):
        out = pu.adjust_prior([0.0, 0.3], old_prior=0.5, new_prior=1.0)
    assert np.isnan(out[0]) and out[1] == 1.0


def test_none_and_duplicate_columns_refused_naming_them():
    # session 85's audit: None read as "prob: 1 missing value(s)"; duplicated column names
    # as "non-numeric column(s) ['a', 'a']"
    P = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    with pytest.raises(ValueError, match=r"prob: duplicate column name\(s\) \['a'\]"):
        pu.adjust_prior(pd.DataFrame(P, columns=list("aab")), [0.2, 0.3, 0.5], [0.3, 0.3, 0.4])
    with pytest.raises(TypeError, match=r"prob must be probabilities .*; got None"):
        pu.adjust_prior(None, [0.5, 0.5], [0.3, 0.7])
    with pytest.raises(TypeError, match=r"prob must be probabilities .*; got None"):
        pu.downsampling_correction(None, w=0.5)
