"""Calibration metrics against hand computations and brute-force definitions."""

import matplotlib.axes
import numpy as np
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
