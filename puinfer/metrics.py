"""Calibration metrics for binary probability forecasts.

Brier score, log-loss, the Kolmogorov-Smirnov calibration error of Gupta et al. (2021) as
Sergazinov et al. (Table 2) uses it, the expected calibration error (ECE) with equal-mass bins, and the
reliability curve with exact binomial (Clopper-Pearson) intervals. All functions take labels
first and probabilities second (as scikit-learn), never modify their inputs, and are vectorised.

Row matching: pandas ``y`` and ``p`` are aligned on their index (and refused if their labels
differ, see :mod:`puinfer._align`); arrays are matched by position. ``p`` is the 1-D probability
of the positive class: an ``(n, 2)`` matrix of class probabilities is refused (pass ``p[:, 1]``).
Every metric depends only on the set of ``(y, p)`` pairs, never on the order of the rows (ties
in ``p`` included): the rows are put in one canonical order (by ``p``, then ``y``) first.

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

import numbers
from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats

from ._align import align_rows
from ._validation import check_alpha, check_binary, check_unit_interval, level_label
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

STRATEGIES = ("quantile", "uniform")
MAX_BINS = 10**7


def _one_per_row(x, name):
    """Refuse scalars and matrices (e.g. class probabilities) before matching rows."""
    if x is None or isinstance(x, (str, bytes)) or np.isscalar(x):
        raise ValueError(f"{name} must hold one value per row; got {x!r}")
    try:
        shape = x.shape if hasattr(x, "shape") else np.shape(x)
    except ValueError:  # ragged nested lists
        raise ValueError(f"{name} must be a 1-D array of numbers") from None
    if len(shape) == 0:
        raise ValueError(f"{name} must hold one value per row; got {x!r}")
    if len(shape) > 2 or (len(shape) == 2 and shape[1] != 1):
        hint = " (pass p[:, 1], the positive class's column)" if name == "p" else ""
        what = "probabilities of the positive class" if name == "p" else "0/1 labels"
        raise ValueError(f"{name} must be 1-D {what}; got shape {tuple(shape)}{hint}")


def _check(y, p):
    """Validated labels and forecasts, rows matched (pandas on the index, arrays by position)
    and put in a canonical order (by ``p``, then ``y``), so that every metric is a function of
    the set of pairs only: invariant to the row order, ties included."""
    _one_per_row(y, "y")
    _one_per_row(p, "p")
    pandas = isinstance(y, (pd.Series, pd.DataFrame)) or isinstance(p, (pd.Series, pd.DataFrame))
    if not pandas and len(y) != len(p):
        raise ValueError(f"y and p have different lengths ({len(y)} and {len(p)})")
    args, _ = align_rows({"y": y, "p": p})
    yy = check_binary(args["y"], "y")
    pp = check_unit_interval(args["p"], "p").ravel()
    if yy.size != pp.size:
        raise ValueError(f"y and p have different lengths ({yy.size} and {pp.size})")
    order = np.lexsort((yy, pp))
    return yy[order], pp[order]


def _check_n_bins(n_bins):
    if isinstance(n_bins, (bool, np.bool_)) or not isinstance(n_bins, numbers.Real):
        raise TypeError(f"n_bins must be a positive integer; got {n_bins!r}")
    if not np.isfinite(n_bins) or int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer; got {n_bins}")
    if n_bins > MAX_BINS:
        raise ValueError(f"n_bins must be a positive integer of at most {MAX_BINS:g}; got "
                         f"{n_bins:g}")
    return int(n_bins)


def _check_strategy(strategy):
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be 'quantile' (equal mass) or 'uniform'; got "
                         f"{strategy!r}")
    return strategy


def _brier(yy, pp):
    return float(np.mean((pp - yy) ** 2))


def _log_loss(yy, pp, eps):
    # log p and log(1 - p) with both clipped below at eps; 1 - p is exact for p >= 0.5 and
    # log1p accurate below, so an eps smaller than the float spacing at 1 still works
    log_p = np.log(np.maximum(pp, eps))
    log_1mp = np.where(pp >= 0.5, np.log(np.maximum(1.0 - pp, eps)),
                       np.log1p(-np.minimum(pp, 0.5)))
    return float(-np.mean(yy * log_p + (1 - yy) * log_1mp))


def _ks(yy, pp):
    # pp is sorted: a tie block is summed as one step (its last row)
    cum = np.cumsum(yy - pp) / yy.size
    last_of_tie = np.r_[pp[1:] != pp[:-1], True]
    return float(np.max(np.abs(cum[last_of_tie])))


def _bin_index(pp, n_bins, strategy):
    """Bin of each (sorted) forecast. Equal mass: a forecast with ``r`` forecasts strictly
    below it goes to bin ``floor(r n_bins / n)``, so tied forecasts always share a bin."""
    if strategy == "quantile":
        below = np.searchsorted(pp, pp, side="left")
        return (below * n_bins) // pp.size
    # equal width: bin j holds [j / n_bins, (j + 1) / n_bins), the cut points as floats:
    # floor(p n_bins) is off by one where the product rounds across an integer (0.29 * 100 is
    # 28.999999999999996: 0.29 fell in the bin of 0.28, session 67's audit), so the index is
    # moved to the bin whose cut points hold p. (Session 67's fix, adding 1e-9 before the
    # floor, moved every forecast within 1e-9 / n_bins below a cut into the bin above it:
    # 0.4999999999 into [0.5, 0.6), session 82's audit.)
    idx = np.floor(pp * n_bins)
    idx += pp >= (idx + 1) / n_bins
    idx -= pp < idx / n_bins
    return np.clip(idx, 0, n_bins - 1).astype(int)


def _bin_sums(yy, pp, n_bins, strategy):
    """Non-empty bins: their numbers, counts, sums of labels and of forecasts (the bins are
    compacted first, so memory does not grow with ``n_bins``)."""
    ids, b = np.unique(_bin_index(pp, n_bins, strategy), return_inverse=True)
    cnt = np.bincount(b).astype(float)
    return ids, cnt, np.bincount(b, weights=yy), np.bincount(b, weights=pp)


def _ece(yy, pp, n_bins, strategy):
    _, _, sy, sp = _bin_sums(yy, pp, n_bins, strategy)
    return float(np.sum(np.abs(sy - sp)) / yy.size)


def _check_eps(eps):
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, numbers.Real):
        raise TypeError(f"eps must be a small positive number such as 1e-15; got {eps!r}")
    if not 0 < eps < 0.5:
        raise ValueError(f"eps must be in (0, 0.5) (a small clipping constant such as 1e-15); "
                         f"got {eps}")
    return float(eps)


def brier_score(y, p) -> float:
    """Brier score ``mean((p - y)^2)`` (lower is better).

    Parameters
    ----------
    y : array_like or pandas.Series of 0/1
        Observed labels.
    p : array_like or pandas.Series in [0, 1]
        Predicted probabilities of ``y = 1`` (1-D). pandas ``y`` and ``p`` are aligned on their
        index; arrays are matched by position.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Naming ``y`` or ``p``: labels not 0/1, probabilities outside [0, 1] or missing, a
        ``p`` with several columns, lengths or pandas indexes that do not match.

    Examples
    --------
    >>> round(brier_score([0, 1, 1], [0.1, 0.8, 0.6]), 4)
    0.07
    """
    return _brier(*_check(y, p))


def log_loss(y, p, *, eps: float = 1e-15) -> float:
    """Log-loss ``-mean(y log p + (1 - y) log(1 - p))`` (lower is better).

    This is the "Log-lik." column of Sergazinov et al.'s Table 2 (a mean negative log-likelihood).
    ``p`` and ``1 - p`` are each floored at ``eps`` inside their logs (``log max(p, eps)``,
    ``log max(1 - p, eps)``), so that a confident wrong forecast gives a large but finite
    loss; a correct forecast is not penalised (scikit-learn's clipping of ``p`` to
    ``[eps, 1 - eps]`` charges ``-log(1 - eps)`` to a correct ``p = 1``).

    Parameters
    ----------
    y, p : array_like or pandas.Series
        Labels and forecasts, as :func:`brier_score` (pandas aligned on the index).
    eps : float, default 1e-15
        The clipping constant, in (0, 0.5); a large ``eps`` would change the loss itself.
    """
    eps = _check_eps(eps)
    return _log_loss(*_check(y, p), eps)


def ks_error(y, p) -> float:
    """Kolmogorov-Smirnov calibration error of Gupta et al. (2021).

    Sort the forecasts, form the cumulative sums of the predicted probabilities and of the
    labels (each divided by ``n``), and take the largest absolute difference:
    ``KS = max_i |(1/n) sum_{j <= i} (y_(j) - p_(j))|``. Binning-free; 0 for a perfectly
    calibrated forecaster in the limit. ``y`` and ``p`` as :func:`brier_score` (pandas
    aligned on the index).

    Ties in ``p`` are summed as one step, so the value does not depend on the order of tied
    rows.
    """
    return _ks(*_check(y, p))


def ece(y, p, *, n_bins: int = 15, strategy: str = "quantile") -> float:
    """Expected calibration error ``sum_b (n_b / n) |mean(y_b) - mean(p_b)|``.

    Parameters
    ----------
    y, p : array_like or pandas.Series
        Labels and forecasts, as :func:`brier_score` (pandas aligned on the index).
    n_bins : int, default 15
        Number of bins (at most 10^7).
    strategy : {"quantile", "uniform"}, default "quantile"
        ``"quantile"`` gives equal-mass bins (Nixon et al. 2019's adaptive ECE); ``"uniform"``
        equal-width bins on [0, 1].

    Notes
    -----
    Equal-mass bins are defined by ranks with ties kept together: a forecast with ``r`` of
    the ``n`` forecasts strictly below it falls in bin ``floor(r * n_bins / n)``. Without ties
    every bin holds ``n / n_bins`` forecasts (give or take one); tied forecasts always share
    the bin of the first of them, so the ECE never depends on the order of the rows (some bins
    are then larger and others empty).
    """
    n_bins = _check_n_bins(n_bins)
    strategy = _check_strategy(strategy)
    return _ece(*_check(y, p), n_bins, strategy)


def reliability_curve(y, p, *, n_bins: int = 10, strategy: str = "quantile",
                      alpha: float = 0.05) -> pd.DataFrame:
    """Reliability (calibration) curve with exact binomial confidence intervals.

    Parameters
    ----------
    y, p : array_like or pandas.Series
        Labels and forecasts, as :func:`brier_score` (pandas aligned on the index).
    n_bins : int, default 10
        Number of bins: 10 as scikit-learn's ``calibration_curve``, where :func:`ece` uses 15
        (Guo et al. 2017, netcal); pass the same ``n_bins`` to read the ECE off this curve.
    strategy : {"quantile", "uniform"}, default "quantile"
        Equal-mass or equal-width bins; equal-mass bins keep tied forecasts together (see
        :func:`ece`), so the curve does not depend on the order of the rows.
    alpha : float, default 0.05
        Significance level: the Clopper-Pearson interval for the observed rate in each bin has
        level ``1 - alpha``.

    Returns
    -------
    pandas.DataFrame
        One row per non-empty bin: ``n``, ``mean_predicted``, ``observed`` (share of
        positives), ``lower``, ``upper``.
    """
    a = check_alpha(alpha)
    n_bins = _check_n_bins(n_bins)
    strategy = _check_strategy(strategy)
    yy, pp = _check(y, p)
    ids, cnt, k, sp = _bin_sums(yy, pp, n_bins, strategy)
    # the beta quantiles are only evaluated where their parameters are positive
    lo, hi = np.zeros_like(cnt), np.ones_like(cnt)
    pos, notall = k > 0, k < cnt
    lo[pos] = stats.beta.ppf(a / 2, k[pos], cnt[pos] - k[pos] + 1)
    hi[notall] = stats.beta.ppf(1 - a / 2, k[notall] + 1, cnt[notall] - k[notall])
    return pd.DataFrame({"n": cnt.astype(int), "mean_predicted": sp / cnt, "observed": k / cnt,
                         "lower": lo, "upper": hi},
                        index=pd.Index(ids, name="bin"))


def _metrics(yy, pp, n_bins):
    return pd.Series({"brier": _brier(yy, pp), "log_loss": _log_loss(yy, pp, 1e-15),
                      "ks": _ks(yy, pp), "ece": _ece(yy, pp, n_bins, "quantile")},
                     name="metric")


def calibration_metrics(y, p, *, n_bins: int = 15) -> pd.Series:
    """Brier score, log-loss, KS error and equal-mass ECE of one forecast, as a Series.

    ``y`` and ``p`` as :func:`brier_score` (pandas aligned on the index).
    """
    n_bins = _check_n_bins(n_bins)
    return _metrics(*_check(y, p), n_bins)


def compare_calibration(y, forecasts: dict, *, n_bins: int = 15) -> pd.DataFrame:
    """Metrics for several forecasts of the same labels: one row per forecast.

    Parameters
    ----------
    y : array_like or pandas.Series of 0/1
    forecasts : dict of name -> array_like or pandas.Series
        The rows of ``y`` and of every forecast are matched together: pandas objects on their
        index (in the order of the first of them), arrays by position.
    n_bins : int, default 15
    """
    if not isinstance(forecasts, Mapping):
        raise TypeError(f"forecasts must be a dict {{name: probabilities}}; got "
                        f"{type(forecasts).__name__}")
    if not forecasts:
        raise ValueError("forecasts is empty; pass a dict {name: probabilities}")
    n_bins = _check_n_bins(n_bins)
    _one_per_row(y, "y")
    names = {f"forecasts[{k!r}]": k for k in forecasts}
    for arg, k in names.items():
        try:
            _one_per_row(forecasts[k], "p")
        except ValueError as exc:  # name the forecast
            raise ValueError(f"{arg}: {exc}") from None
    args, _ = align_rows({"y": y, **{arg: forecasts[k] for arg, k in names.items()}})
    check_binary(args["y"], "y")  # the labels' problems named as theirs, not a forecast's
    rows = {}
    for arg, k in names.items():
        try:
            rows[k] = _metrics(*_check(args["y"], args[arg]), n_bins)
        except ValueError as exc:
            raise ValueError(f"{arg}: {exc}") from None
    return pd.DataFrame(rows).T


def plot_reliability(y, p, *, n_bins: int = 10, strategy: str = "quantile", alpha: float = 0.05,
                     label=None, ax=None, **kwargs):
    """Reliability diagram: observed rate (with binomial intervals) against mean forecast.

    The error bars are the exact (Clopper-Pearson) intervals of :func:`reliability_curve`, of
    level ``1 - alpha``; the y-axis label says so.

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
    # the reference y = x once per Axes, over any range (session 67's audit: drawn only to
    # the first forecast's range, and never again after ax.cla())
    if not any(line.get_gid() == "puinfer-diagonal" for line in ax.lines):
        ax.axline((0, 0), slope=1, ls=":", color="grey", lw=1, gid="puinfer-diagonal")
    ax.set_xlabel("mean predicted probability")
    # say what the bars are: reliability_curve's exact binomial intervals
    ax.set_ylabel(f"observed share of positives\n(bars: {level_label(1 - alpha)} Clopper-Pearson interval)")
    if label is not None:
        ax.legend()
    return ax
