"""Calibration metrics against hand computations and brute-force definitions."""

import warnings

import matplotlib.axes
import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from puinfer import metrics


@pytest.fixture(scope="module")
def forecast():
    rng = np.random.default_rng(7)
    p = rng.beta(2, 5, 400)
    y = rng.binomial(1, np.clip(1.3 * p, 0, 1)).astype(float)
    return y, p


def test_brier_and_log_loss_by_hand():
    y, p = [0, 1, 1], [0.1, 0.8, 0.6]
    assert_allclose(metrics.brier_score(y, p), (0.01 + 0.04 + 0.16) / 3, rtol=1e-14)
    assert_allclose(metrics.log_loss(y, p), -(np.log(0.9) + np.log(0.8) + np.log(0.6)) / 3,
                    rtol=1e-14)


def test_log_loss_clips_certain_mistakes():
    assert np.isfinite(metrics.log_loss([1, 0], [0.0, 1.0]))


def test_ks_error_brute_force(forecast):
    y, p = forecast
    order = np.argsort(p)
    ref = 0.0
    run = 0.0
    for i in order:  # the definition, one row at a time (reference only)
        run += (y[i] - p[i]) / y.size
        ref = max(ref, abs(run))
    assert_allclose(metrics.ks_error(y, p), ref, rtol=1e-12)


def test_ks_error_ignores_order_of_ties():
    p = np.array([0.3, 0.3, 0.3, 0.7])
    a = metrics.ks_error([1, 0, 0, 1], p)
    b = metrics.ks_error([0, 0, 1, 1], p)
    assert a == b
    assert_allclose(a, max(abs(1 - 0.9), abs(1 - 0.9 + 1 - 0.7)) / 4, rtol=1e-12)


def test_perfect_forecast_has_zero_ks_and_ece():
    y = np.array([0, 1, 0, 1, 1, 0])
    assert metrics.ks_error(y, y) == 0
    assert metrics.ece(y, y, n_bins=3) == 0


def test_ece_equal_mass_by_hand():
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.6, 0.8])
    y = np.array([0, 0, 1, 0, 1, 1])
    # bins of two: {0.1, 0.2}, {0.3, 0.4}, {0.6, 0.8}
    ref = (2 * abs(0 - 0.15) + 2 * abs(0.5 - 0.35) + 2 * abs(1 - 0.7)) / 6
    assert_allclose(metrics.ece(y, p, n_bins=3), ref, rtol=1e-14)


def test_equal_width_bins_put_decimal_cut_points_in_the_upper_bin():
    # bin j is [j / n, (j + 1) / n): forecasts on a 0.01 grid with 100 bins each in its own
    # bin (session 67's audit: 0.29 fell in the bin of 0.28 by rounding, ECE 0.215 not 0.495)
    p = np.round(np.arange(100) / 100, 2)
    y = (np.arange(100) % 2).astype(float)
    assert metrics.ece(y, p, n_bins=100, strategy="uniform") == pytest.approx(
        np.mean(np.abs(y - p)), rel=1e-12)
    assert metrics.ece([0, 1], [0.28, 0.29], n_bins=100, strategy="uniform") == \
        pytest.approx(0.495, rel=1e-12)
    assert len(metrics.reliability_curve(y, p, n_bins=100, strategy="uniform")) == 100


def test_reliability_curve_equal_mass_and_exact_intervals(forecast):
    y, p = forecast
    rc = metrics.reliability_curve(y, p, n_bins=8, alpha=0.1)
    assert rc["n"].sum() == y.size
    assert rc["n"].max() - rc["n"].min() <= 1
    for _, row in rc.iterrows():
        k = int(round(row["observed"] * row["n"]))
        ci = stats.binomtest(k, int(row["n"])).proportion_ci(0.9, method="exact")
        assert_allclose([row["lower"], row["upper"]], [ci.low, ci.high], rtol=1e-8, atol=1e-12)
    assert np.all(np.diff(rc["mean_predicted"]) > 0)


def test_compare_and_plot(forecast):
    y, p = forecast
    tab = metrics.compare_calibration(y, {"raw": p, "shrunk": 0.5 * p + 0.1})
    assert list(tab.columns) == ["brier", "log_loss", "ks", "ece"]
    assert list(tab.index) == ["raw", "shrunk"]
    ax = metrics.plot_reliability(y, p, label="raw")
    assert isinstance(ax, matplotlib.axes.Axes)
    assert metrics.plot_reliability(y, 0.5 * p, ax=ax) is ax
    # one y = x reference per Axes, whatever the range, drawn again after clearing (session
    # 67's audit: drawn only to the first forecast's range, never after ax.cla())
    diag = [ln for ln in ax.lines if ln.get_gid() == "puinfer-diagonal"]
    assert len(diag) == 1 and diag[0].get_slope() == 1
    ax.cla()
    metrics.plot_reliability(y, p, ax=ax)
    assert [ln.get_gid() for ln in ax.lines].count("puinfer-diagonal") == 1


def test_inputs_not_modified(forecast):
    y, p = forecast
    y0, p0 = y.copy(), p.copy()
    metrics.calibration_metrics(y, p)
    metrics.reliability_curve(y, p)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(p, p0)


@pytest.mark.parametrize("fn", [metrics.brier_score, metrics.log_loss, metrics.ks_error,
                                metrics.ece])
def test_bad_inputs(fn):
    with pytest.raises(ValueError, match="p must be in"):
        fn([0, 1], [0.5, 1.5])
    with pytest.raises(ValueError, match="y must be 0/1"):
        fn([0, 2], [0.5, 0.5])
    with pytest.raises(ValueError, match="different lengths"):
        fn([0, 1, 1], [0.5, 0.5])


def test_bad_bins():
    with pytest.raises(ValueError, match="n_bins"):
        metrics.ece([0, 1], [0.2, 0.3], n_bins=0)
    with pytest.raises(ValueError, match="strategy"):
        metrics.ece([0, 1], [0.2, 0.3], strategy="kmeans")
    with pytest.raises(ValueError, match="alpha"):
        metrics.reliability_curve([0, 1], [0.2, 0.3], alpha=0.95)


# -- issue 13: alignment, ties, shapes, options ---------------------------------------------------
@pytest.fixture(scope="module")
def indexed(forecast):
    y, p = forecast
    idx = pd.Index(np.arange(500, 500 + y.size), name="id")
    perm = np.random.default_rng(3).permutation(y.size)
    return pd.Series(y, idx), pd.Series(p, idx), perm


@pytest.mark.parametrize("fn", [metrics.brier_score, metrics.log_loss, metrics.ks_error,
                                metrics.ece, metrics.calibration_metrics])
def test_series_are_aligned_on_the_index(indexed, forecast, fn):
    Y, P, perm = indexed
    ref = fn(*forecast)
    got = fn(Y.iloc[perm], P)  # shuffled labels: matched on the index, not by position
    if isinstance(ref, pd.Series):
        pd.testing.assert_series_equal(got, ref)
    else:
        assert got == ref


def test_reliability_and_compare_are_aligned(indexed, forecast):
    Y, P, perm = indexed
    y, p = forecast
    pd.testing.assert_frame_equal(metrics.reliability_curve(Y.iloc[perm], P),
                                  metrics.reliability_curve(y, p))
    tab = metrics.compare_calibration(Y.iloc[perm], {"a": P, "b": (0.5 * P).iloc[perm[::-1]]})
    ref = metrics.compare_calibration(y, {"a": p, "b": 0.5 * p})
    pd.testing.assert_frame_equal(tab, ref)


def test_misaligned_series_refused(indexed):
    Y, P, _ = indexed
    with pytest.raises(ValueError, match="p has the default index 0..n-1 .* and y another index"):
        metrics.brier_score(Y, pd.Series(P.to_numpy()))
    with pytest.raises(ValueError, match=r"forecasts\['b'\] has the default index 0..n-1"):
        metrics.compare_calibration(Y, {"a": P, "b": pd.Series(P.to_numpy())})
    with pytest.raises(ValueError, match="p has 3 rows but y has 400"):
        metrics.ece(Y, [0.1, 0.2, 0.3])


@pytest.mark.parametrize("fn", [metrics.brier_score, metrics.log_loss, metrics.ks_error,
                                metrics.ece, metrics.reliability_curve,
                                metrics.calibration_metrics])
def test_class_probability_matrix_refused(forecast, fn):
    y, p = forecast
    with pytest.raises(ValueError, match=r"p must be 1-D probabilities of the positive class; "
                                         r"got shape \(400, 2\) \(pass p\[:, 1\]"):
        fn(y, np.column_stack([1 - p, p]))
    with pytest.raises(ValueError, match=r"p must be 1-D .* got shape \(400, 2\)"):
        fn(y, pd.DataFrame({"neg": 1 - p, "pos": p}))
    assert np.all(np.asarray(fn(y, p[:, None]) == fn(y, p)))  # a column vector is unambiguous


def test_ties_share_a_bin_whatever_the_row_order():
    p = np.full(4, 0.5)
    for y in ([0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 0, 0]):
        assert metrics.ece(y, p, n_bins=2) == 0.0
        rc = metrics.reliability_curve(y, p, n_bins=2)
        assert rc["n"].tolist() == [4] and rc["observed"].tolist() == [0.5]
    # ties straddling a boundary go to the bin of the first tied forecast
    p = np.array([0.1, 0.2, 0.2, 0.2, 0.3, 0.4])
    rc = metrics.reliability_curve([0, 0, 1, 0, 1, 1], p, n_bins=3)
    # ranks strictly below: 0, 1, 1, 1, 4, 5 -> bins floor(r * 3 / 6) = 0, 0, 0, 0, 2, 2
    assert rc["n"].tolist() == [4, 2] and rc.index.tolist() == [0, 2]
    assert_allclose(rc["mean_predicted"], [0.175, 0.35], rtol=1e-14)


def test_metrics_do_not_depend_on_row_order(forecast):
    y, p = forecast
    p = np.round(p, 2)  # many ties
    perm = np.random.default_rng(5).permutation(y.size)
    pd.testing.assert_series_equal(metrics.calibration_metrics(y[perm], p[perm]),
                                   metrics.calibration_metrics(y, p))
    pd.testing.assert_frame_equal(metrics.reliability_curve(y[perm], p[perm]),
                                  metrics.reliability_curve(y, p))


@pytest.mark.parametrize("eps", [0.7, 0.5, 0.0, -1.0, np.nan])
def test_log_loss_eps_must_be_small(eps):
    with pytest.raises(ValueError, match=r"eps must be in \(0, 0.5\)"):
        metrics.log_loss([0, 1], [0.2, 0.7], eps=eps)
    with pytest.raises(TypeError, match="eps must be a small positive number"):
        metrics.log_loss([0, 1], [0.2, 0.7], eps="1e-15")


@pytest.mark.parametrize("n_bins, exc", [(0, ValueError), (2.5, ValueError), (np.nan, ValueError),
                                         (np.inf, ValueError), ("a", TypeError),
                                         (True, TypeError), (None, TypeError)])
def test_n_bins_named(n_bins, exc):
    for fn in (metrics.ece, metrics.reliability_curve, metrics.calibration_metrics):
        with pytest.raises(exc, match="n_bins must be a positive integer"):
            fn([0, 1], [0.2, 0.3], n_bins=n_bins)


@pytest.mark.parametrize("y, p, match", [
    (1, [0.5], "y must hold one value per row"),
    ([1], 0.5, "p must hold one value per row"),
    ([0, 1], [0.5, np.inf], "p must be in"),
    ([0, 1], [0.5, np.nan], "p: 1 missing"),
    ([0, np.nan], [0.5, 0.5], "y: 1 missing"),
    ([[0, 1], [1, 0]], [0.5, 0.5], r"y must be 1-D 0/1 labels; got shape \(2, 2\)"),
    ([], [], "y is empty"),
])
def test_bad_rows_named(y, p, match):
    with pytest.raises(ValueError, match=match):
        metrics.brier_score(y, p)


def test_compare_calibration_bad_forecasts(forecast):
    y, p = forecast
    with pytest.raises(TypeError, match="forecasts must be a dict"):
        metrics.compare_calibration(y, [p])
    with pytest.raises(ValueError, match=r"forecasts\['bad'\]: p must be in"):
        metrics.compare_calibration(y, {"ok": p, "bad": p + 1})
    # the labels' problems are the labels' (they were reported as the first forecast's)
    with pytest.raises(ValueError, match=r"^y must be 0/1"):
        metrics.compare_calibration([0, 2, 1], {"A": [0.1, 0.5, 0.9]})
    with pytest.raises(ValueError, match=r"^y: 1 missing"):
        metrics.compare_calibration([0, 1, np.nan], {"A": [0.1, 0.5, 0.9]})


def test_edge_inputs_no_numpy_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metrics.calibration_metrics([0, 1, 1, 0], [0.0, 1.0, 0.0, 1.0])
        metrics.reliability_curve([1, 1, 1, 1], [0.2, 0.3, 0.9, 1.0])
        metrics.reliability_curve([0, 0, 0], [0.0, 0.0, 0.0], strategy="uniform")
        metrics.log_loss([0, 1], [1.0, 0.0], eps=1e-300)
        metrics.ece([1], [0.3])


@pytest.mark.parametrize("n_bins", [1, 3, 7, 10, 100, 1000, 1999])
def test_equal_width_bins_are_exact_at_and_near_the_cut_points(n_bins):
    """Bin j holds [j / B, (j + 1) / B) with the cut points as floats: the float of each cut
    point in its own bin, the float just below it in the bin before, the float just above in
    its bin. Session 82's audit: the 1e-9 added before the floor (session 67's fix for 0.29 *
    100 = 28.999999999999996) moved every forecast within 1e-9 / B below a cut into the bin
    above it, e.g. 0.4999999999 into [0.5, 0.6) with 10 bins."""
    j = np.arange(n_bins + 1)
    cuts = j / n_bins
    at = metrics._bin_index(cuts, n_bins, "uniform")
    np.testing.assert_array_equal(at, np.minimum(j, n_bins - 1))
    np.testing.assert_array_equal(metrics._bin_index(np.nextafter(cuts[1:], 0), n_bins,
                                                     "uniform"), j[:-1])
    np.testing.assert_array_equal(metrics._bin_index(np.nextafter(cuts[:-1], 1), n_bins,
                                                     "uniform"), j[:-1])
    if n_bins == 10:
        curve = metrics.reliability_curve([0, 0], [0.4999999999, 0.45], n_bins=10,
                                          strategy="uniform")
        assert list(curve.index) == [4] and curve["n"].iloc[0] == 2


@pytest.mark.parametrize("y, p, match", [
    ([1, 0], np.array([0.9 + 5j, 0.1]), "Complex data not supported: p holds complex"),
    (np.array([1, 0], dtype="timedelta64[ns]"), [0.9, 0.1], "y holds durations"),
    ([1, 0], pd.Series(pd.to_timedelta([1, 0], unit="s")), "p holds durations"),
    ([1, 0], np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"), "p holds dates"),
])
def test_numbers_that_are_not_real_are_refused(y, p, match):
    # session 82's audit: the imaginary part was dropped (a ComplexWarning only) and
    # durations were read as counts of their units, silently
    with pytest.raises(ValueError, match=match):
        metrics.brier_score(y, p)


@pytest.mark.parametrize("strategy", ["quantile", "uniform"])
def test_ece_is_read_off_the_reliability_curve_with_the_same_bins(strategy):
    # the two defaults differ (15 bins, 10 bins: the docstrings say why); with the same n_bins
    # the ECE is the curve's size-weighted mean gap
    rng = np.random.default_rng(0)
    p = rng.random(1000)
    y = (rng.random(1000) < p ** 1.3).astype(int)
    for n_bins in (10, 15):
        c = metrics.reliability_curve(y, p, n_bins=n_bins, strategy=strategy)
        gap = (c["n"] * (c["observed"] - c["mean_predicted"]).abs()).sum() / c["n"].sum()
        assert metrics.ece(y, p, n_bins=n_bins, strategy=strategy) == pytest.approx(gap,
                                                                             rel=1e-12)
