"""Calibration metrics for binary probability forecasts.

Brier score, log-loss, the Kolmogorov-Smirnov calibration error of Gupta et al. (2021) as
Sergazinov et al. (Table 2) uses it, the expected calibration error (ECE) with equal-mass bins, and the
reliability curve with exact binomial (Clopper-Pearson) intervals. All functions take labels
first and probabilities second (as scikit-learn), never modify their inputs, and are vectorised.

References
----------
Brier, G. W. (1950). Verification of forecasts expressed in terms of probability.
Gupta, K. et al. (2021). Calibration of neural networks using splines. ICLR.
Naeini, M. P., Cooper, G. and Hauskrecht, M. (2015). Obtaining well calibrated probabilities
using Bayesian binning. AAAI.
Sergazinov, R. et al. Improving model probability calibration by integration of large data
sources with biased labels (Sergazinov et al.), Section 5.2 and Table 2.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ._validation import check_alpha, check_binary, check_unit_interval
from .plotting import get_ax

__all__ = [
    "brier_score",
    "log_loss",
    "ks_error",
    "ece",
    "reliability_curve",
    "calibration_metrics",
    "compare_calibration",
    "plot_reliability",
]


def _check(y, p):
    yy = check_binary(y, "y")
    pp = check_unit_interval(p, "p").ravel()
    if yy.size != pp.size:
        raise ValueError(f"y and p have different lengths ({yy.size} and {pp.size})")
    return yy, pp


def brier_score(y, p) -> float:
    """Brier score ``mean((p - y)^2)`` (lower is better).

    Parameters
    ----------
    y : array_like of 0/1
        Observed labels.
    p : array_like in [0, 1]
        Predicted probabilities of ``y = 1``.

    Returns
    -------
    float

    Examples
    --------
    >>> round(brier_score([0, 1, 1], [0.1, 0.8, 0.6]), 4)
    0.07
    """
    yy, pp = _check(y, p)
    return float(np.mean((pp - yy) ** 2))


def log_loss(y, p, *, eps: float = 1e-15) -> float:
    """Log-loss ``-mean(y log p + (1 - y) log(1 - p))`` (lower is better).

    This is the "Log-lik." column of Sergazinov et al.'s Table 2 (a mean negative log-likelihood).
    Probabilities are clipped to ``[eps, 1 - eps]`` so that a confident wrong forecast gives a
    large but finite loss.
    """
    yy, pp = _check(y, p)
    q = np.clip(pp, eps, 1 - eps)
    return float(-np.mean(yy * np.log(q) + (1 - yy) * np.log1p(-q)))


def ks_error(y, p) -> float:
    """Kolmogorov-Smirnov calibration error of Gupta et al. (2021).

    Sort the forecasts, form the cumulative sums of the predicted probabilities and of the
    labels (each divided by ``n``), and take the largest absolute difference:
    ``KS = max_i |(1/n) sum_{j <= i} (y_(j) - p_(j))|``. Binning-free; 0 for a perfectly
    calibrated forecaster in the limit.

    Ties in ``p`` are summed as one step, so the value does not depend on the order of tied
    rows.
    """
    yy, pp = _check(y, p)
    order = np.argsort(pp, kind="stable")
    ps, ys = pp[order], yy[order]
    cum = np.cumsum(ys - ps) / yy.size
    last_of_tie = np.r_[ps[1:] != ps[:-1], True]
    return float(np.max(np.abs(cum[last_of_tie])))


def _bin_index(p, n_bins, strategy):
    n = p.size
    if strategy == "quantile":  # equal mass: ranks split into n_bins groups of (almost) equal size
        order = np.argsort(p, kind="stable")
        idx = np.empty(n, dtype=int)
        idx[order] = (np.arange(n) * n_bins) // n
        return idx
    if strategy == "uniform":
        return np.minimum((p * n_bins).astype(int), n_bins - 1)
    raise ValueError(f"strategy must be 'quantile' (equal mass) or 'uniform'; got {strategy!r}")


def ece(y, p, *, n_bins: int = 15, strategy: str = "quantile") -> float:
    """Expected calibration error ``sum_b (n_b / n) |mean(y_b) - mean(p_b)|``.

    Parameters
    ----------
    y, p : array_like
        Labels and forecasts.
    n_bins : int, default 15
        Number of bins.
    strategy : {"quantile", "uniform"}, default "quantile"
        ``"quantile"`` gives equal-mass bins (each holds ``n / n_bins`` forecasts, Nixon et al.
        2019's adaptive ECE); ``"uniform"`` equal-width bins on [0, 1].
    """
    yy, pp = _check(y, p)
    if int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer; got {n_bins}")
    b = _bin_index(pp, int(n_bins), strategy)
    sy = np.bincount(b, weights=yy, minlength=n_bins)
    sp = np.bincount(b, weights=pp, minlength=n_bins)
    return float(np.sum(np.abs(sy - sp)) / yy.size)


def reliability_curve(y, p, *, n_bins: int = 10, strategy: str = "quantile",
                      alpha: float = 0.05) -> pd.DataFrame:
    """Reliability (calibration) curve with exact binomial confidence intervals.

    Parameters
    ----------
    y, p : array_like
        Labels and forecasts.
    n_bins : int, default 10
    strategy : {"quantile", "uniform"}, default "quantile"
        Equal-mass or equal-width bins.
    alpha : float, default 0.05
        Significance level: the Clopper-Pearson interval for the observed rate in each bin has
        level ``1 - alpha``.

    Returns
    -------
    pandas.DataFrame
        One row per non-empty bin: ``n``, ``mean_predicted``, ``observed`` (share of
        positives), ``lower``, ``upper``.
    """
    yy, pp = _check(y, p)
    a = check_alpha(alpha)
    if int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer; got {n_bins}")
    b = _bin_index(pp, int(n_bins), strategy)
    cnt = np.bincount(b, minlength=n_bins).astype(float)
    k = np.bincount(b, weights=yy, minlength=n_bins)
    sp = np.bincount(b, weights=pp, minlength=n_bins)
    keep = cnt > 0
    cnt, k, sp = cnt[keep], k[keep], sp[keep]
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, stats.beta.ppf(a / 2, k, cnt - k + 1), 0.0)
        hi = np.where(k < cnt, stats.beta.ppf(1 - a / 2, k + 1, cnt - k), 1.0)
    return pd.DataFrame({"n": cnt.astype(int), "mean_predicted": sp / cnt, "observed": k / cnt,
                         "lower": lo, "upper": hi},
                        index=pd.Index(np.flatnonzero(keep), name="bin"))


def calibration_metrics(y, p, *, n_bins: int = 15) -> pd.Series:
    """Brier score, log-loss, KS error and equal-mass ECE of one forecast, as a Series."""
    return pd.Series({"brier": brier_score(y, p), "log_loss": log_loss(y, p),
                      "ks": ks_error(y, p), "ece": ece(y, p, n_bins=n_bins)}, name="metric")


def compare_calibration(y, forecasts: dict, *, n_bins: int = 15) -> pd.DataFrame:
    """Metrics for several forecasts of the same labels: one row per forecast."""
    if not forecasts:
        raise ValueError("forecasts is empty; pass a dict {name: probabilities}")
    return pd.DataFrame({name: calibration_metrics(y, p, n_bins=n_bins)
                         for name, p in forecasts.items()}).T


def plot_reliability(y, p, *, n_bins: int = 10, strategy: str = "quantile", alpha: float = 0.05,
                     label=None, ax=None, **kwargs):
    """Reliability diagram: observed rate (with binomial intervals) against mean forecast.

    Parameters
    ----------
    y, p : array_like
        Labels and forecasts.
    n_bins, strategy, alpha
        As :func:`reliability_curve`.
    label : str, optional
        Legend label.
    ax : matplotlib Axes, optional
    **kwargs
        Passed to ``Axes.errorbar``.

    Returns
    -------
    matplotlib.axes.Axes
    """
    ax = get_ax(ax)
    rc = reliability_curve(y, p, n_bins=n_bins, strategy=strategy, alpha=alpha)
    yerr = np.vstack([rc["observed"] - rc["lower"], rc["upper"] - rc["observed"]])
    kwargs.setdefault("marker", "o")
    kwargs.setdefault("capsize", 3)
    ax.errorbar(rc["mean_predicted"], rc["observed"], yerr=yerr, label=label, **kwargs)
    lim = max(float(rc["upper"].max()), float(rc["mean_predicted"].max())) * 1.05
    if not getattr(ax, "_puinfer_diagonal", False):
        ax.plot([0, lim], [0, lim], ls=":", color="grey", lw=1)
        ax._puinfer_diagonal = True
    ax.set_xlabel("mean predicted probability")
    ax.set_ylabel("observed share of positives")
    if label is not None:
        ax.legend()
    return ax
