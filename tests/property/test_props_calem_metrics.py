"""Property-based tests (hypothesis) for CalEM, the calibration metrics and adjust_prior
(issue 13): pandas alignment, invariance to the row order (ties included), and validation that
always names the argument."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import puinfer as pu
from puinfer import metrics
from puinfer.models.calem import CalEM

SETTINGS = dict(deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

GRID = [0.0, 0.1, 0.25, 0.5, 0.5, 0.75, 0.9, 1.0]  # few values: many ties


@st.composite
def labelled_forecasts(draw, min_size=2, max_size=40):
    """Labels, forecasts (often tied), a unique index and two row permutations."""
    n = draw(st.integers(min_size, max_size))
    tied = draw(st.booleans())
    pval = st.sampled_from(GRID) if tied else st.floats(0, 1, allow_nan=False)
    p = np.array(draw(st.lists(pval, min_size=n, max_size=n)), dtype=float)
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=float)
    labels = draw(st.lists(st.integers(-10_000, 10_000), min_size=n, max_size=n, unique=True))
    perm1 = np.array(draw(st.permutations(range(n))))
    perm2 = np.array(draw(st.permutations(range(n))))
    return y, p, pd.Index(labels), perm1, perm2


# -- (a) alignment: shuffled pandas inputs never change a result -------------------------------------
@settings(max_examples=60, **SETTINGS)
@given(labelled_forecasts(), st.integers(1, 8))
def test_metrics_aligned_and_order_free(data, n_bins):
    y, p, idx, perm1, perm2 = data
    Y, P = pd.Series(y, idx), pd.Series(p, idx)
    ref = metrics.calibration_metrics(y, p, n_bins=n_bins)
    rc = metrics.reliability_curve(y, p, n_bins=n_bins)
    # one argument shuffled (matched on the index), or both shuffled differently
    for yy, pp in ((Y.iloc[perm1], P), (Y, P.iloc[perm1]), (Y.iloc[perm1], P.iloc[perm2])):
        pd.testing.assert_series_equal(metrics.calibration_metrics(yy, pp, n_bins=n_bins), ref)
        pd.testing.assert_frame_equal(metrics.reliability_curve(yy, pp, n_bins=n_bins), rc)
        pd.testing.assert_frame_equal(metrics.compare_calibration(yy, {"f": pp}, n_bins=n_bins),
                                      ref.to_frame("f").T)


@settings(max_examples=40, **SETTINGS)
@given(labelled_forecasts(max_size=30), st.floats(0.01, 0.99), st.data())
def test_adjust_prior_aligned(data, old, draw):
    _, p, idx, perm1, _ = data
    new = np.array(draw.draw(st.lists(st.floats(0, 1), min_size=p.size, max_size=p.size)))
    P, N = pd.Series(p, idx), pd.Series(new, idx)
    with np.errstate(all="ignore"), pd.option_context("mode.chained_assignment", None):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pu.exceptions.BoundaryWarning)  # 0/0 rows: NaN
            ref = pu.adjust_prior(p, old, new)
            out = pu.adjust_prior(P, old, N.iloc[perm1])
            out2 = pu.adjust_prior(P.iloc[perm1], old, N)
    assert out.index.equals(idx)
    np.testing.assert_array_equal(out.to_numpy(), ref)
    assert out2.index.equals(idx[perm1])
    np.testing.assert_array_equal(out2.to_numpy(), ref[perm1])


@st.composite
def calem_data(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(60, 250))
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.02, 0.98, n)
    if draw(st.booleans()):
        s = np.round(s, 1)  # tied scores
    tr = np.r_[np.zeros(20, int), np.ones(20, int), (rng.random(n - 40) < 0.7).astype(int)]
    y = rng.binomial(1, s)
    y[:2] = [0, 1]  # both classes in the control set
    z = np.where(y == 1, 1, rng.binomial(1, 0.3 * s))
    lab = np.where(tr == 1, z, y)
    lab[20] = 1  # a treated positive
    idx = pd.Index(rng.choice(10 * n, n, replace=False))
    perm1, perm2 = rng.permutation(n), rng.permutation(n)
    return s, lab, tr, idx, perm1, perm2


@settings(max_examples=12, **SETTINGS)
@given(calem_data(), st.sampled_from(["logistic", "isotonic"]))
def test_calem_aligned_and_order_free(data, cal):
    import warnings

    s, lab, tr, idx, perm1, perm2 = data
    S, L, T = pd.Series(s, idx), pd.Series(lab, idx), pd.Series(tr, idx)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pu.exceptions.PuinferWarning)
        ref = CalEM(s, lab, tr, calibrator=cal).fit()
        # label and treated shuffled (matched on the index); every row shuffled
        a = CalEM(S, L.iloc[perm1], T.iloc[perm2], calibrator=cal).fit()
        b = CalEM(S.iloc[perm1], L.iloc[perm2], T, calibrator=cal).fit()
    for r in (a, b):
        pd.testing.assert_series_equal(r.params, ref.params)
        assert r.mean_h_treated_positives == ref.mean_h_treated_positives or \
            np.isnan(ref.mean_h_treated_positives)
        assert r.share_clipped == ref.share_clipped
    assert a.predict().index.equals(idx)
    assert b.predict().index.equals(idx[perm1])
    np.testing.assert_array_equal(b.predict().reindex(idx).to_numpy(), ref.predict())


# -- (b) ECE and the reliability curve: ties fall in one bin, whatever the row order ---------------
@settings(max_examples=80, **SETTINGS)
@given(labelled_forecasts(max_size=60), st.integers(1, 12),
       st.sampled_from(["quantile", "uniform"]))
def test_binning_invariant_to_row_order(data, n_bins, strategy):
    y, p, _, perm1, _ = data
    e = metrics.ece(y, p, n_bins=n_bins, strategy=strategy)
    assert e == metrics.ece(y[perm1], p[perm1], n_bins=n_bins, strategy=strategy)
    rc = metrics.reliability_curve(y, p, n_bins=n_bins, strategy=strategy)
    pd.testing.assert_frame_equal(
        rc, metrics.reliability_curve(y[perm1], p[perm1], n_bins=n_bins, strategy=strategy))
    assert rc["n"].sum() == y.size
    # each distinct forecast lies in exactly one bin: bins' forecast ranges do not overlap
    b = metrics._bin_index(np.sort(p), n_bins, strategy)
    ps = np.sort(p)
    assert all(np.unique(b[ps == v]).size == 1 for v in np.unique(ps))
    # ECE is the n-weighted gap of the curve
    assert np.isclose(e, float(np.sum(rc["n"] * np.abs(rc["observed"] - rc["mean_predicted"])))
                      / y.size, rtol=1e-12, atol=1e-15)


# -- (c) validation: bad input raises ValueError/TypeError naming the argument --------------------
def _corrupt(kind, x, idx, rng_val):
    """A bad version of the row-wise argument ``x`` (a float array)."""
    x = np.array(x, dtype=float)
    i = int(rng_val * x.size) % x.size
    if kind == "nan":
        x[i] = np.nan
        return x
    if kind == "inf":
        x[i] = np.inf
        return x
    if kind == "-inf":
        x[i] = -np.inf
        return x
    if kind == "high":
        x[i] = 1.5
        return x
    if kind == "low":
        x[i] = -0.25
        return x
    if kind == "half":  # not 0/1 (labels) but fine for probabilities
        x[i] = 0.5
        return x
    if kind == "matrix":
        return np.column_stack([1 - x, x])
    if kind == "short":
        return x[:-1]
    if kind == "text":
        return np.array(["a"] * x.size, dtype=object)
    if kind == "misaligned":
        return pd.Series(x, index=idx + 1)  # same length, other labels
    if kind == "scalar":
        return 0.5
    raise AssertionError(kind)


ROW_KINDS = ["nan", "inf", "-inf", "high", "low", "matrix", "short", "text", "misaligned",
             "scalar"]


def _raises_naming(fn, names):
    with pytest.raises((ValueError, TypeError)) as info:
        fn()
    msg = str(info.value)
    assert any(nm in msg for nm in names), msg


@settings(max_examples=120, **SETTINGS)
@given(labelled_forecasts(min_size=3, max_size=20),
       st.sampled_from(["y", "p"]), st.sampled_from(ROW_KINDS + ["half"]),
       st.floats(0, 1), st.sampled_from(["brier_score", "log_loss", "ks_error", "ece",
                                         "reliability_curve", "calibration_metrics",
                                         "compare_calibration"]))
def test_metrics_bad_rows_named(data, arg, kind, u, fname):
    y, p, idx, _, _ = data
    if arg == "p" and kind == "half":
        return  # a valid probability
    Y, P = pd.Series(y, idx), pd.Series(p, idx)
    bad = _corrupt(kind, y if arg == "y" else p, idx, u)
    yy, pp = (bad, P) if arg == "y" else (Y, bad)
    fn = getattr(metrics, fname)
    if fname == "compare_calibration":
        _raises_naming(lambda: fn(yy, {"f": pp}), [arg, "forecasts['f']"])
    else:
        _raises_naming(lambda: fn(yy, pp), [arg])


@settings(max_examples=60, **SETTINGS)
@given(st.sampled_from(["eps", "n_bins", "alpha", "strategy"]),
       st.sampled_from([np.nan, np.inf, -1, 0, 0.7, 2.5, "x", None, True, 1e9]))
def test_metrics_bad_options_named(opt, value):
    y, p = [0, 1, 1, 0], [0.2, 0.7, 0.6, 0.4]
    call = {"eps": lambda: metrics.log_loss(y, p, eps=value),
            "n_bins": lambda: metrics.ece(y, p, n_bins=value),
            "alpha": lambda: metrics.reliability_curve(y, p, alpha=value),
            "strategy": lambda: metrics.ece(y, p, strategy=value)}[opt]
    valid = {"eps": lambda v: isinstance(v, float) and 0 < v < 0.5,
             "n_bins": lambda v: not isinstance(v, bool) and isinstance(v, (int, float))
             and np.isfinite(v) and 1 <= v <= 10**7 and int(v) == v,
             "alpha": lambda v: not isinstance(v, (bool, str)) and v is not None
             and 0 < v <= 0.5,
             "strategy": lambda v: False}[opt](value)
    if valid:
        call()
    else:
        _raises_naming(call, [opt])


@pytest.fixture(scope="module")
def calem_rows():
    rng = np.random.default_rng(0)
    n = 80
    s = rng.uniform(0.05, 0.95, n)
    tr = np.r_[np.zeros(30, int), np.ones(50, int)]
    lab = rng.binomial(1, s)
    lab[:2], lab[30] = [0, 1], 1
    lab[30:] = np.maximum(lab[30:], rng.binomial(1, 0.2, 50))
    return s, lab.astype(float), tr.astype(float), pd.Index(np.arange(n) * 3)


@settings(max_examples=100, **SETTINGS)
@given(st.sampled_from(["score", "label", "treated"]), st.sampled_from(ROW_KINDS + ["half"]),
       st.floats(0, 1))
def test_calem_bad_rows_named(calem_rows, arg, kind, u):
    s, lab, tr, idx = calem_rows
    if arg == "score" and kind == "half":
        return
    args = {"score": pd.Series(s, idx), "label": pd.Series(lab, idx),
            "treated": pd.Series(tr, idx)}
    args[arg] = _corrupt(kind, args[arg].to_numpy(), idx, u)
    names = [arg, "score"] if kind == "misaligned" else [arg]
    _raises_naming(lambda: CalEM(**args, calibrator="logistic"), names)


@settings(max_examples=40, **SETTINGS)
@given(st.sampled_from(["h", "tol", "maxiter", "method", "missing", "eps"]),
       st.sampled_from([np.nan, np.inf, -0.5, 1.5, "x", [0.1, 0.2], 0, -3]))
def test_calem_bad_options_named(calem_rows, opt, value):
    s, lab, tr, _ = calem_rows
    if opt in ("missing", "eps"):
        _raises_naming(lambda: CalEM(s, lab, tr, calibrator="logistic", **{opt: value}), [opt])
        return
    m = CalEM(s, lab, tr, calibrator="logistic")
    if (opt == "h" and value == 0) or (opt == "tol" and value == 1.5):
        return  # valid
    _raises_naming(lambda: m.fit(**{opt: value}), [opt])


@settings(max_examples=100, **SETTINGS)
@given(labelled_forecasts(min_size=3, max_size=15), st.sampled_from(["prob", "new_prior"]),
       st.sampled_from(["nan", "inf", "-inf", "high", "low", "short", "text", "misaligned",
                        "matrix"]),
       st.floats(0, 1))
def test_adjust_prior_bad_rows_named(data, arg, kind, u):
    _, p, idx, _, _ = data
    args = {"prob": pd.Series(p, idx), "new_prior": pd.Series(np.full(p.size, 0.4), idx)}
    args[arg] = _corrupt(kind, args[arg].to_numpy(), idx, u)
    names = [arg, "prob"] if kind == "misaligned" else [arg]
    if arg == "prob" and kind == "matrix":  # a valid (n, 2) matrix: the binary priors are wrong
        names = ["new_prior", "old_prior"]
    _raises_naming(lambda: pu.adjust_prior(args["prob"], 0.3, args["new_prior"]), names)


@settings(max_examples=60, **SETTINGS)
@given(st.sampled_from(["old_prior", "new_prior"]),
       st.sampled_from([np.nan, np.inf, -0.1, 1.5, "x", None, [0.2, 0.3], [0.7, 0.3, 0.1, 0.2]]),
       st.booleans())
def test_adjust_prior_bad_priors_named(arg, value, multiclass):
    prob = np.array([[0.2, 0.8], [0.6, 0.4]]) if multiclass else np.array([0.2, 0.8, 0.5])
    args = {"old_prior": [0.5, 0.5] if multiclass else 0.5,
            "new_prior": [0.3, 0.7] if multiclass else 0.3}
    args[arg] = value
    _raises_naming(lambda: pu.adjust_prior(prob, **args), [arg])
