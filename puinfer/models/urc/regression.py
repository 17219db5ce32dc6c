"""URC for regression (Section 5 of Ziegler and Czyż): recalibrate predictive distributions.

A regression model that outputs a predictive distribution for each row is an ordered
categorical classifier once the support of the outcome is split into intervals: its class
probabilities are the predictive masses of the intervals. :class:`RegressionURC` builds those
intervals on the lab quantiles of the outcome, turns every row's predictive distribution into
interval probabilities and runs :class:`~puinfer.models.urc.URC` on them -- the same
likelihood, EM/Newton fit, profile intervals, likelihood-ratio and goodness-of-fit tests. Two
things are specific to regression, both from the paper's Section 5:

* the partition of the predictions (the cells of ``M_A``) is on lab quantiles of the
  *predicted value* ``s_i = sum_j C_ij m_j`` (a linear combination of the class probabilities,
  ``m_j`` the lab mean of the outcome in interval ``j``), as eq. (11) does for a binary score;
* a continuity component in the regulariser: a Gaussian random-walk prior on the log shifts
  ``log(p_j / pi_lab_j)`` of neighbouring intervals (under a random lab design against the
  lab population's shares ``pi_lab``, the lab sample's error integrated out)
  (:class:`~puinfer.models.urc._smoothing.SmoothnessPenalty`), in the objective that the fit,
  the profiles and the tests maximise.

Recalibration is Lemma 3 on the interval probabilities; within an interval the model's own
predictive distribution is kept (the paper: "individual regression models that give
distributions within each interval"), so the recalibrated density is the original density
times a weight that is constant on each interval.
"""

from __future__ import annotations

import copy as _copy
import dataclasses
import functools
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..._align import align_rows, check_missing_option
from ..._validation import (
    INFLUENCE_SHARE,
    SCALE_LIMIT,
    check_bool,
    check_int,
    check_rng,
    largest_share,
    refuse_text,
    warn_and_record,
)
from ...base.results import FrozenDict, freeze_arrays, readonly
from ...exceptions import (
    BootstrapWarning,
    BoundaryWarning,
    ConvergenceWarning,
    EmptyBinWarning,
    InfluenceWarning,
)
from ...inference.hypothesis import DEFAULT_N_BOOT, HypothesisTestResult
from ...summary import Summary
from . import _likelihood as lik
from ._inputs import label_array
from ._null_bootstrap import UNUSABLE, null_statistics
from ._smoothing import SmoothnessPenalty, centred_positions
from .hypotheses import refuse_reference_as_value
from .model import URC, model_missing
from .partition import Partition, build_partition
from .predictive import as_predictive
from .results import URCResults

__all__ = ["RegressionURC", "RegressionURCResults", "MeanPartition", "predicted_value",
           "default_n_intervals", "DEFAULT_SMOOTHING", "DEFAULT_ORDER", "DEFAULT_TREND_SD",
           "DEFAULT_LAB_PSEUDOCOUNT_REGRESSION", "DEFAULT_N_BOOT"]

#: default strength and order of the smoothness penalty (chosen by studies/urc_regression.py;
#: see the docstring of :meth:`RegressionURC.fit`)
DEFAULT_SMOOTHING = 3.0
DEFAULT_ORDER = 2
#: prior SD of the slope of the order-2 penalty's log-linear trend (per lab SD of the outcome;
#: a location shift of mu lab SDs of a normal outcome has slope mu): the trend is otherwise
#: unpenalised and the fit can run along it to a corner (see the docstring of
#: :meth:`RegressionURC.fit`, parameter ``trend_sd``)
DEFAULT_TREND_SD = 1.0
#: RegressionURC's lab pseudo-counts per (interval, cell): none. URC's default then (0.5, for sparse
#: lab cells) biased the intervals' shares in the direction of a shift (the fit offsets the
#: shrinkage of each interval's lab histogram towards the pooled one); without them, with the
#: trend prior, the declared study studies/urc_regression_pseudocount.py (lab 50-1000, shifts
#: 0-1 SD, 300 replicates per cell; rerun with the midpoint cuts in session 73) had lower RMSE
#: in every cell, coverage 0.94-0.98 where the pseudo-counts gave 0.59-0.98, and the
#: goodness-of-fit test's size 3.0-6.0% against 4.3-11.7%
DEFAULT_LAB_PSEUDOCOUNT_REGRESSION = 0.0
#: where lab pseudo-counts go when asked for (``lab_pseudocount > 0``): the pooled lab histogram,
#: URC's spread before session 71 (URC.fit's default is now Perks' 1/|A| spread evenly)
DEFAULT_LAB_PRIOR_REGRESSION = "pooled"
#: test_no_shift warns when more than this share of its bootstrap resamples is unusable
_MAX_UNUSABLE = 0.1


def predicted_value(C: np.ndarray, weights) -> np.ndarray:
    """The predicted value ``s_i = sum_j C_ij m_j`` of every row of the interval
    probabilities ``C``.

    Summed column by column in a fixed order with elementwise operations, so a row's value
    has the same bits whatever the memory layout of ``C`` and however many rows are binned
    together; ``C @ weights`` (BLAS) rounds differently for a C- and a Fortran-ordered copy of
    the same matrix, and a row tied with a cut point then fell in different cells in the lab
    and the field histograms.
    """
    C = np.asarray(C, dtype=float)
    if C.ndim == 1:  # two intervals, as URC keeps binary input: P(second interval)
        C = np.column_stack([1.0 - C, C])
    w = np.asarray(weights, dtype=float)
    s = C[:, 0] * w[0]
    for j in range(1, w.size):
        s = s + C[:, j] * w[j]
    return s


@dataclass(frozen=True)
class MeanPartition(Partition):
    """Cells of equal lab probability of the predicted value ``s = C @ weights`` (eq. (11)
    applied to the predicted value, as Section 5 of the paper suggests).

    The cut points lie halfway between the lab order statistic ``s_(r + 1)``,
    ``r = floor(a n / |A|)``, and the largest lab value below it (``s_(r)`` without ties), as
    URC's (:func:`~puinfer.models.urc.partition._quantile_edges`): lab rows are in the cells
    of eq. (11), a
    new value between the two goes to the nearer cell (before session 72 to the lower one, so
    reflecting the outcome, ``y -> -y``, changed the shares by up to 0.014). A value on a cut
    point belongs to the cell above it (``[t_a, t_{a+1})``); raw cells that
    hold no lab row (ties among the lab predicted values) are merged into their nearest
    non-empty neighbour, as :func:`~puinfer.models.urc.partition.build_partition` merges them.

    Attributes
    ----------
    weights : numpy.ndarray
        ``m_j``: the lab mean of the outcome in each interval.
    """

    weights: np.ndarray = None

    def __post_init__(self):
        super().__post_init__()
        if self.weights is not None:
            object.__setattr__(self, "weights", readonly(self.weights))

    def raw_bins(self, pred: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.edges[0], predicted_value(pred, self.weights), side="right")


def _build_mean_partition(pred, weights, n_cells, record) -> MeanPartition:
    """The mean partition of the lab interval probabilities ``pred``: quantile cells of the
    predicted value, built and merged by URC's own binary quantile partition (the predicted
    value in place of a score), relabelled."""
    s = predicted_value(pred, weights)
    sub: list = []
    with warnings.catch_warnings():  # its message is about bins of scores: said again below
        warnings.simplefilter("ignore", EmptyBinWarning)
        part = build_partition(s, 2, n_cells, True, sub)
    n_raw = part.cell_of_raw.size
    if part.n_cells < n_raw:
        warn_and_record(record, f"ties among the lab predicted values: {n_raw - part.n_cells} of "
                        f"{n_raw} cells of the predicted value held no lab row and were merged "
                        f"into their nearest neighbours, leaving |A| = {part.n_cells}",
                        EmptyBinWarning)
    b = np.concatenate([[-np.inf], part.edges[0], [np.inf]])
    labels = []
    for c in range(part.n_cells):
        raw = np.flatnonzero(part.cell_of_raw == c)
        labels.append(f"s in [{b[raw[0]]:.4g}, {b[raw[-1] + 1]:.4g})")
    return MeanPartition("mean-quantile", n_cells, part.edges, part.cell_of_raw, tuple(labels),
                         weights=np.asarray(weights, dtype=float))


def _frozen(pred, copy: bool):
    """The predictive object ``pred`` (a shallow copy with copies of its arrays when ``copy``)
    with read-only arrays."""
    if copy:
        pred = _copy.copy(pred)
    for name, value in list(vars(pred).items()):
        if isinstance(value, np.ndarray):
            setattr(pred, name, readonly(value.copy() if copy else value))
    return pred


def _aligned(pred, other_name, other, pred_name="pred"):
    """Rows of ``pred`` (a predictive object, the argument ``pred_name``) and ``other``
    matched by the package's rule; returns the reordered predictive, ``other`` and the
    index."""
    pred, al, index = _aligned_all(pred, {other_name: other}, pred_name)
    return pred, al[other_name], index


def _aligned_all(pred, others: dict, pred_name="pred"):
    """Rows of ``pred`` and of every row-wise argument in ``others`` (name -> value; None
    passes through) matched by the package's rule (:func:`~puinfer._align.align_rows`);
    returns the reordered predictive, the aligned ``others`` and the reference index."""
    al, index = align_rows({pred_name: pred.positions_proxy(), **others})
    pos = np.asarray(al[pred_name])
    if not np.array_equal(pos, np.arange(pred.n)):
        pred = pred.take(pos)
    return pred, {k: al[k] for k in others}, index


def _points(y) -> np.ndarray:
    """Points at which to evaluate a CDF, as floats; text and NaN refused (naming ``y``)."""
    refuse_text(y, "y")
    try:
        yy = (y.to_numpy(dtype=float, na_value=np.nan) if isinstance(y, (pd.Series, pd.DataFrame))
              else np.asarray(y, dtype=float))
    except (TypeError, ValueError):
        raise ValueError("y must be numeric points") from None
    if np.isnan(yy).any():
        raise ValueError(f"y: {int(np.isnan(yy).sum())} point(s) are NaN; the CDF is evaluated "
                         "at numbers")
    return yy


#: fewer lab rows per (interval, cell) than this draw a warning (session 68's audit)
_MIN_LAB_PER_CELL = 2.0


def outcome_edges(y: np.ndarray, K: int) -> np.ndarray:
    """The cut points of ``K`` outcome intervals ``(-inf, e_1], ..., (e_{K-1}, inf)`` at the
    quantiles of ``y``, those leaving an interval without an outcome dropped: tied
    quantiles, and the top ones where many outcomes sit at their maximum (a capped outcome:
    session 67's audit found it refused as "an interval holds no lab outcome")."""
    edges = np.quantile(y, np.arange(1, K) / K)
    below = np.searchsorted(np.sort(y), edges, side="right")  # outcomes <= each cut
    # an interval is empty where a cut leaves as many outcomes below it as the one before;
    # the top one where all are below
    keep = (below > np.concatenate([[0], below[:-1]])) & (below < y.size)
    return np.unique(edges[keep])


def default_n_intervals(n_lab: int) -> int:
    """RegressionURC's default number of outcome intervals for ``n_lab`` lab rows: 10, fewer
    for lab sets below 400 rows -- the largest ``K`` (at least 2) that leaves
    :data:`_MIN_LAB_PER_CELL` lab rows per interval and cell of the default ``2 K`` cells,
    ``floor(sqrt(n_lab / 4))``.

    Session 69's study (``studies/urc_regression_small_lab.py``: ``simulate_urc_regression``,
    field 5000, 40 replicates per cell, no shift / a 0.5 SD location shift): with ten
    intervals the fit ran to a corner (all the field in one interval) in 40 / 32 of 40 fits
    at lab 100, 19 / 18 at lab 200 and 3 / 5 at lab 300; with this default (5, 7 and 8
    intervals there) in 2 / 4, 0 / 4 and 0 / 0 (root mean square error of the shares at lab
    100: 0.069 / 0.103 against 0.295 / 0.242). The default's 95% intervals covered 0.95, 0.96
    and 0.96 of the true shares without a shift, but 0.86, 0.81 and 0.87 under the shift (the
    top interval worst: wide intervals strain Axiom 2, see ``n_intervals``); at lab 50 (3
    intervals) 0.90 and 0.80, with corners in 2 and 9 of 40 fits. These are figures of the fit
    before session 70's defaults (a prior on the trend's slope, ``trend_sd=1``, and no lab
    pseudo-counts): with them no fit of 10 data sets each at lab 100 and 200 with ten
    intervals reached a corner, and the default's intervals covered 0.96-0.97 under the
    shift at lab 100 and 200 (``studies/results/urc_regression_pseudocount.md``).
    """
    return int(max(2, min(10, np.floor(np.sqrt(n_lab / (2 * _MIN_LAB_PER_CELL))))))


def _no_maximum_said(rec, pen):
    """The fit's record, marked not converged (and a ConvergenceWarning issued and recorded)
    when the penalised estimate lies on a ray to a corner of the simplex along which the
    objective does not fall.

    The order-2 penalty is 0 along a log-linear trend of the log shift in the interval
    positions, which sends all mass to the top or bottom interval at no cost; with a small lab
    set the likelihood can rise along it without end (session 69's audit: lab 100 with 10
    intervals and 20 cells put all the field in one interval in 20 of 20 fits without a shift,
    truth about 0.1 each, reported as converged; an independent optimiser from 8 starts rose
    to the same corner), and EM stops somewhere on it. Three checks: a share at 0 (below
    ``BOUNDARY``) where the penalty is finite, :func:`_rises_to_a_corner` (session 69's
    study: 5 of 197 corners stopped at shares of 1e-6 to 6e-6, past the first check), and
    :func:`_corner_above` (an interior local maximum below a corner: session 69's study, lab
    50, shift 0.5 SD, replicate 23, where ``conf_int()`` found the corner 0.43 higher)."""
    est = rec.estimate
    if pen is None:
        return rec
    if getattr(pen, "trend_sd", None) is not None and not _free_corners(pen):
        # with a prior on the trend's slope the penalty is proper (-inf at the boundary) and
        # the objective has a maximum: a share near 0 or a flat ray is no evidence of a corner
        # (trend_sd=10, shift 2 SD: the objective falls both ways along the ray from the fit,
        # which _rises_to_a_corner's tolerance called rising)
        return rec
    if not (_at_zero(est, pen) or _rises_to_a_corner(est, rec.data, pen)
            or _corner_above(est, rec.data, pen) is not None):
        return rec
    record = list(rec.warnings)
    warn_and_record(record, "the penalised objective has no maximum: it rises towards a corner "
                    "of the simplex (base rates -> 0 along the smoothness penalty's "
                    "unpenalised log-linear trend), so the estimates and their intervals are "
                    "where the optimiser stopped. Causes: a lab set small for the intervals "
                    "and cells (use fewer, or a larger lab set), or a strong shift (e.g. a "
                    "location shift of 2 lab SDs; the default prior on the trend's slope, "
                    "fit(trend_sd=...), or fit(smooth_order=1) leaves no such free trend)",
                    ConvergenceWarning)
    conv = dataclasses.replace(est.convergence, converged=False,
                               message="no maximum: the objective rises towards the boundary")
    return dataclasses.replace(rec, warnings=tuple(record),
                               estimate=dataclasses.replace(est, convergence=conv))


def _rises_to_a_corner(est, d, pen) -> bool:
    """Whether a row of the base rates with a share below 1% of its lab share lies on a ray
    to a corner: the objective 100 times further along that row's own log-linear trend
    towards its corner (the other rows held, ``M`` re-maximised) is no lower. A maximum falls
    there; a point on a rising ray does not. Rows are moved one at a time: one group still
    rising is not hidden by another whose objective falls (session 69's review)."""
    with np.errstate(divide="ignore"):
        u = np.log(est.P) - pen.x0
    rows = np.flatnonzero(u.min(axis=1) < np.log(1e-2))
    if rows.size == 0:
        return False
    v = centred_positions(pen.positions, u.shape[1])
    f0 = lik.objective(est.P, est.M, d)
    fixed = lik.Constraint("rows")
    for g in rows:
        ok = np.isfinite(u[g])
        if ok.sum() < 2:
            continue
        slope = np.polyfit(v[ok], u[g, ok], 1)[0]
        if slope == 0:
            continue
        # a step that divides the share at the far end of the trend by 100
        t = np.log(100.0) / (abs(slope) * (v.max() - v.min()) / 2)
        with np.errstate(over="ignore", under="ignore"):
            logp = np.log(np.maximum(est.P[g], 1e-300)) + np.sign(slope) * t * v
            q = np.exp(logp - logp.max())
        Q = est.P.copy()
        Q[g] = q / q.sum()
        M = est.M
        for _ in range(500):  # M re-maximised for the moved row (EM: concave in M)
            Q, M = lik.em_step(Q, M, d, fixed)
        f1 = lik.objective(Q, M, d)
        if np.isfinite(f0) and np.isfinite(f1) and f1 >= f0 - 1e-6 * (1.0 + abs(f0)):
            return True
    return False


def _at_zero(est, pen) -> bool:
    """A share of ``est`` at 0 (below ``BOUNDARY``) where the penalty ``pen`` is finite: a
    point on the way to a corner, not a maximum."""
    return bool(np.any(est.P < lik.BOUNDARY) and np.isfinite(pen.value(est.P)))


def _free_corners(pen) -> tuple:
    """The intervals whose corner (all of a group's mass in it) the penalty ``pen`` reaches at
    a finite cost: the ends of the intervals when its null space holds the log-linear trend in
    the interval positions (order 2: along it the penalty is constant), else none (order 1)."""
    v = centred_positions(pen.positions, pen.K.shape[0])
    if np.linalg.norm(pen.K @ v) > 1e-8 * np.linalg.norm(pen.K) * np.linalg.norm(v):
        return ()
    return int(np.argmin(v)), int(np.argmax(v))


def _corner_above(est, d, pen):
    """The highest corner of the penalised objective above the estimate ``est``, as
    ``(value, group, interval, M)``, or None.

    A corner ``p_g = e_j`` (``j`` an end of the penalty's free trend, :func:`_free_corners`)
    is the limit of the rays ``log p_g = x0 + t v + const`` (``v`` the trend), along which the
    penalty of row ``g`` is 0; the objective's supremum there is the likelihood at the corner
    (the other rows held, ``M`` re-maximised: one EM step for one group, where it is in closed
    form, a lower bound for several) plus the other rows' penalty. Where it exceeds the
    estimate's objective the estimate is not the maximum (EM stopped at an interior local
    maximum, or short of the corner). Cheap: a few EM steps on the histograms."""
    if pen is None or d.active_penalty is None:
        return None
    ends = _free_corners(pen)
    if not ends or not np.isfinite(est.objective):
        return None
    d0 = dataclasses.replace(d, penalty=None)
    fixed = lik.Constraint("rows")
    G = est.P.shape[0]
    tol = 1e-9 * (1.0 + abs(est.objective))
    best = None
    for g in range(G):
        rest = pen.value(np.delete(est.P, g, axis=0)) if G > 1 else 0.0
        for j in ends:
            Q = est.P.copy()
            Q[g] = 0.0
            Q[g, j] = 1.0
            Q, M = lik.em_step(Q, est.M, d0, fixed)
            f = lik.objective(Q, M, d0)
            for _ in range(200 if G > 1 else 0):  # M re-maximised (concave in M)
                Q, M1 = lik.em_step(Q, M, d0, fixed)
                f1 = lik.objective(Q, M1, d0)
                if not f1 > f + 1e-12 * (1.0 + abs(f)):
                    M, f = (M1, f1) if f1 > f else (M, f)
                    break
                M, f = M1, f1
            f = f + rest
            if np.isfinite(f) and f > est.objective + tol and (best is None or f > best[0]):
                best = (f, g, j, M)
    return best


def _toward_corner(est, d, pen, options):
    """``est``, or where a corner of the penalised objective is above it
    (:func:`_corner_above`) and the fit from near that corner (on the penalty's free ray, the
    other rows held) ends higher, that fit, with ``est`` among its ``others`` (the profiles
    start from them too). Only for an estimate that no other check puts at a corner."""
    if pen is None or not est.convergence.converged:
        return est
    corner = _corner_above(est, d, pen)
    if corner is None or _at_zero(est, pen) or _rises_to_a_corner(est, d, pen):
        return est  # (a fit the other checks put at a corner is left where EM stopped)
    _, g, j, M = corner
    v = centred_positions(pen.positions, est.P.shape[1])
    gap = np.min(np.abs(v[j] - np.delete(v, j)))
    # on the ray from the penalty's centre (penalty 0), the other shares 1e-4 of theirs
    with np.errstate(over="ignore", under="ignore"):
        lp = pen.x0 + np.sign(v[j]) * (np.log(1e4) / gap) * v
        q = np.exp(lp - lp.max())
    P0 = est.P.copy()
    P0[g] = q / q.sum()
    e = lik._maximize_once(d, lik.Constraint(), (P0, M), options, warm=False)
    if not e.objective > est.objective:
        return est
    others = tuple(o for o in sorted((est, *est.others), key=lambda o: -o.objective)
                   if not lik._same_point(o.P, o.M, e))
    return dataclasses.replace(e, others=others)


def _whole(value) -> bool:
    """An integer, or a float with an integer value (not a bool): :func:`check_int`'s rule,
    as a test (its refusals here are ValueErrors naming the argument's range)."""
    try:
        check_int(value, "value")
    except TypeError:
        return False
    return True


class RegressionURC(URC):
    """Unsupervised recalibration of a regression model's predictive distributions.

    Section 5 of Ziegler and Czyż, "Unsupervised Recalibration": the outcome's support is cut
    into ``n_intervals`` intervals at the lab quantiles of the outcome; each row's predictive
    distribution gives the probabilities of the intervals (an ordered categorical classifier),
    and :class:`URC` estimates the field shares of the intervals from them. Axiom 2 becomes:
    given the outcome, the distribution of the predictions is the same in lab and field (a
    prior shift in the outcome, ``p(x | y)`` unchanged). URC needs it given the *interval*,
    which holds only approximately: the shift also moves the outcomes within an interval, and
    with them the predictions, the more so the wider the intervals. With few intervals the
    estimates are biased and their intervals undercover, and the goodness-of-fit test hardly
    notices (see ``n_intervals``).

    Parameters
    ----------
    lab_pred : NormalPredictive, GridPredictive, QuantilePredictive or pandas.DataFrame
        The model's predictive distributions on the lab rows (see
        :mod:`puinfer.models.urc.predictive`); a DataFrame with columns ``mean`` and ``sd`` is
        read as normal predictive distributions. The model is assumed calibrated on the lab
        population.
    lab_y : array_like or pandas.Series
        The lab outcomes. **Alignment**: when both have an index (a predictive built from
        pandas objects, and a Series) the rows are matched on it, else by position.
    n_intervals : int, optional
        ``K``, the number of outcome intervals (classes), cut at the lab ``j / K`` quantiles of
        ``lab_y``. Default 10 (deciles) from 400 lab rows: fine enough for a recalibrated
        distribution, with ``K - 1`` base rates to estimate; the smoothness penalty keeps the
        estimates stable when neighbouring intervals are hard to tell apart. Below 400 lab
        rows fewer, ``floor(sqrt(n / 4))`` (:func:`default_n_intervals`: at least 2 lab rows
        per interval and cell of the default ``2 K`` cells); with more intervals the fit of a
        small lab set ran to a corner before the default prior on the trend's slope
        (``fit(trend_sd=)``; all the field in one interval: 40 of 40 fits at lab 100 with
        ``K = 10``, see :func:`default_n_intervals`). Fewer, wider intervals strain the
        interval form of Axiom 2 (above): under a location shift of 0.5 SD (lab 1000, field
        5000, 50 replicates, ``studies/urc_regression_interval_width.py``, at the current
        defaults) the top interval's share was overestimated by 0.081 on average with
        ``K = 2`` (95% interval coverage 0.14), 0.038 with ``K = 4`` (0.84) and 0.010 with
        ``K = 10`` (0.96) (with the cells' cuts before session 72: 0.080 (0.16), 0.037 (0.84)
        and 0.009 (0.96)).
    n_cells : int, optional
        ``|A|``, the cells of the partition of the predictions: quantiles of the predicted
        value (``partition="mean"``, default ``2 K``) or, with ``partition="argmax"``, cells
        per arg-max interval (URC's multiclass partition; default 2). The goodness-of-fit
        test of a fit has ``|A| - K`` degrees of freedom per group without the smoothness
        penalty (``K`` with the default ``|A|``); with it (the default fit) more: the penalised
        base rates spend fewer than ``K - 1`` effective degrees of freedom, and the test
        counts the rest (e.g. about 17 instead of 10 at ``K = 10``; see ``gof().df``).
    partition : {"mean", "argmax"}
        ``"mean"`` (default): cells of equal lab probability of the predicted value
        ``s_i = sum_j C_ij m_j`` (the paper's suggestion for regression, Section 5), cut
        halfway between its lab order statistics as URC's cells (:class:`MeanPartition`).
        ``"argmax"``: URC's multiclass partition of the interval probabilities.
    missing : {"raise", "drop"}
        Lab rows with a missing prediction or outcome: refused (default) or dropped.
    lab_design : {"random", "stratified"}
        As in :class:`URC`. Default ``"random"``: the intervals hold ``n / K`` lab rows each by
        construction, but their cut points are sample quantiles, so the lab population's
        interval probabilities are uncertain to the same order as a multinomial sample's
        shares; ``"stratified"`` treats them as known (right only for lab outcomes sampled
        within fixed intervals).

    Attributes
    ----------
    edges : numpy.ndarray
        The ``K - 1`` cut points (intervals ``(-inf, t_1], (t_1, t_2], ..., (t_{K-1}, inf)``).
    interval_means : numpy.ndarray
        Lab mean of the outcome in each interval (the weights of the predicted value).
    classes : tuple of str
        The interval labels.

    Raises
    ------
    ValueError
        For predictive distributions that are not valid, outcomes that are missing (with
        ``missing="raise"``) or not finite, inputs that cannot be aligned, a bad
        ``n_intervals``/``n_cells``/``partition``, grid CDFs whose grid does not cover the cut
        points, or fewer lab rows than intervals.

    Examples
    --------
    >>> import numpy as np, puinfer as pu
    >>> from puinfer.simulate.urc_regression import simulate_urc_regression
    >>> sim = simulate_urc_regression(1000, 5000, field_shift=0.5, rng=np.random.default_rng(1))
    >>> res = pu.RegressionURC(sim.lab_pred, sim.lab_y).fit(sim.field_pred)  # doctest: +SKIP
    >>> res.test_no_shift().pvalue < 0.05  # doctest: +SKIP
    True
    """

    _pooled_check = False  # (URC's check of grouped fits: calibrated for binary URC only)

    def __init__(self, lab_pred, lab_y, n_intervals: int | None = None, *,
                 n_cells: int | None = None, partition: str = "mean", missing: str = "raise",
                 lab_design: str = "random"):
        check_missing_option(missing)
        if partition not in ("mean", "argmax"):
            raise ValueError(f"partition must be 'mean' or 'argmax'; got {partition!r}")
        # (an integral float accepted, as URC's n_bins: session 67's audit)
        if n_intervals is not None and (not _whole(n_intervals) or n_intervals < 2):
            raise ValueError(f"n_intervals must be an integer >= 2; got {n_intervals!r}")
        pred = as_predictive(lab_pred, "lab_pred")
        if lab_y is None or (not isinstance(lab_y, pd.Series) and np.ndim(lab_y) == 0):
            raise ValueError("lab_y must be one outcome per lab row")
        pred, y, _ = _aligned(pred, "lab_y", lab_y, "lab_pred")
        refuse_text(y, "lab_y")
        try:
            y = (y.to_numpy(dtype=float, na_value=np.nan) if isinstance(y, pd.Series)
                 else np.array(y, dtype=float))
        except (TypeError, ValueError):
            raise ValueError("lab_y must be numeric outcomes") from None
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1:
            # (raveled, an (n, 2) array became 2n outcomes: numpy's broadcasting error;
            # session 85's audit)
            raise ValueError(f"lab_y must be one outcome per lab row; got an array of shape "
                             f"{y.shape}")
        miss = pred.missing_rows() | np.isnan(y)
        n_dropped = 0
        if miss.any():
            if missing == "raise":
                raise ValueError(f"lab_pred/lab_y: {int(miss.sum())} row(s) with a missing "
                                 "value (missing='drop' drops those rows)")
            pred, y, n_dropped = pred.take(~miss), y[~miss], int(miss.sum())
        if not np.all(np.isfinite(y)):
            raise ValueError("lab_y must be finite")
        # (at 1e300 the squares overflowed with numpy's warning, and the fit failed blaming
        # ties in the predictions; session 85's audit)
        if np.max(np.abs(y)) > SCALE_LIMIT:
            raise ValueError(f"lab_y has values up to {np.max(np.abs(y)):.3g}, beyond what "
                             "double precision squares; rescale the outcome (and its "
                             "predictive distributions)")
        self.n_intervals_choice = "given" if n_intervals is not None else "default"
        if n_intervals is None:
            n_intervals = default_n_intervals(y.size)
        # the lab rows themselves: the no-shift test's bootstrap redraws them (a copy, read-only:
        # the caller may reuse or change their object after the fit)
        self._lab_pred, self._lab_y = _frozen(pred, copy=True), np.array(y)
        self._lab_y.flags.writeable = False
        K = int(n_intervals)
        # the quantile levels as asked: the bootstrap cuts each resample at them (ties dropped
        # there as here)
        self._n_intervals_requested = K
        if y.size < K:
            raise ValueError(f"n_intervals = {K} exceeds the number of lab rows ({y.size})")
        record: list = []
        uniq = outcome_edges(y, K)
        if uniq.size == 0:
            # (session 68's audit: the one interval left went on as a one-class URC and was
            # refused as "lab_labels must be 0/1")
            raise ValueError(f"lab_y: its ties leave a single outcome interval (the quantiles "
                             f"at the {K - 1} cut(s) leave every outcome in one); URC needs "
                             "at least 2 intervals with lab outcomes")
        if uniq.size < K - 1:
            warn_and_record(record, f"ties in lab_y: {K - 1 - uniq.size} interval(s) of "
                            f"the outcome were empty and dropped, leaving {uniq.size + 1}",
                            EmptyBinWarning)
        self.edges = uniq
        K = uniq.size + 1
        self.n_intervals = K
        b = np.concatenate([[-np.inf], uniq, [np.inf]]) + 0.0  # (+ 0.0: no "-0")
        for digits in (4, 6, 8, 12, 17):  # as many digits as tell the intervals apart
            labels = [f"({b[j]:.{digits}g}, {b[j + 1]:.{digits}g}]" if j < K - 1 else
                      f"({b[j]:.{digits}g}, inf)" for j in range(K)]
            if len(set(labels)) == K:
                break
        codes = np.searchsorted(uniq, y, side="left")
        if np.any(np.bincount(codes, minlength=K) == 0):  # cannot happen with quantile cuts
            raise ValueError("lab_y: an interval holds no lab outcome")
        self.interval_means = np.bincount(codes, weights=y, minlength=K) / np.bincount(
            codes, minlength=K)
        # where the smoothness penalty places the intervals: their lab means, in lab SDs
        self.penalty_positions = self.interval_means / max(float(np.std(y)), 1e-300)
        share = float(largest_share(y, y.mean(), y.std())[0])
        if share > INFLUENCE_SHARE:
            # (session 83's audit: one lab outcome of 1e12 among 400 of unit size made lab
            # SDs of 5e10, the positions of all but the top interval about 0, and the fitted
            # shares zigzag between 0 and 0.43 where the unpenalised fit agrees with the
            # clean data's to about 0.01)
            far = y[np.argmax(np.abs(y - y.mean()))]
            warn_and_record(record, f"one lab outcome carries {share:.0%} of lab_y's spread "
                            f"(its value {far:.4g}): the smoothness penalty places the "
                            "outcome intervals by their lab means in lab SDs, so it hinges on "
                            "that outcome; check it, or compare with fit(smoothing=0)",
                            InfluenceWarning)
        self._partition_kind = partition
        probs = self._probs(pred, "lab_pred")
        if partition == "mean" and n_cells is not None and (not _whole(n_cells) or n_cells < K):
            raise ValueError(f"n_cells must be an integer >= n_intervals ({K}) for the mean "
                             f"partition; got {n_cells!r}")
        if n_cells is not None and _whole(n_cells):
            n_cells = int(n_cells)
        default_cells = n_cells is None
        if default_cells:
            n_cells = 2 * K if partition == "mean" else 2
        super().__init__(pd.DataFrame(probs, columns=labels),
                         np.asarray(labels, dtype=object)[codes], n_bins=n_cells,
                         lab_design=lab_design, missing=missing)  # (fit's default: as URC's)
        # URC takes n_bins as given; here it was this class's default (shown by summary())
        self.n_bins_choice = (("default: 2 x intervals" if partition == "mean" else "default")
                              if default_cells else "given")
        per_cell = y.size / (K * self.partition.n_cells)
        if per_cell < _MIN_LAB_PER_CELL:
            # (session 68's audit: lab 100 for 10 intervals and 20 cells, 0.5 lab rows per
            # interval and cell, put all the field's mass in one interval in 8 of 8 fits
            # without a shift, and in 2 of 8 at lab 200-300; fine at lab 1000)
            warn_and_record(record, f"the lab set is small for {K} intervals and "
                            f"{self.partition.n_cells} cells: {per_cell:.2g} lab rows per "
                            "interval and cell, so most lab cells are sparse or empty and the "
                            "interval shares are poorly determined (without the default prior "
                            "on the trend, fit(trend_sd=None), the fit can run to a corner: "
                            "all the field in one interval); "
                            + ("use fewer intervals or cells (n_intervals=, n_cells=)"
                               if K > 2 or self.partition.n_cells > 2 else
                               "a larger lab set is needed"),
                            EmptyBinWarning)
        self.warnings = tuple(record) + self.warnings
        self.n_dropped = n_dropped
        freeze_arrays(self)  # its own arrays too (edges, interval means): results read them

    def __setstate__(self, state):
        super().__setstate__(state)
        _frozen(self._lab_pred, copy=False)  # numpy's pickle does not keep the write flag

    def _build_partition(self, pred, k, n_bins, binary, record):
        if self._partition_kind == "argmax":
            # (ties in the intervals' own order, as the null bootstrap's partitions break
            # them: their labels' text order means nothing; session 85's review)
            return build_partition(pred, k, n_bins, binary, record, self.classes,
                                   ties_by_name=False)
        return _build_mean_partition(pred, self.interval_means, n_bins, record)

    def _maximize(self, d, options):
        """URC's maximum, or a higher point towards a corner of the smoothness penalty's free
        trend (:func:`_toward_corner`): EM can stop at an interior local maximum below it."""
        est = super()._maximize(d, options)
        return _toward_corner(est, d, d.active_penalty, options)

    def _probs(self, pred, name) -> np.ndarray:
        """Interval probabilities of each row of a predictive object (``n x K``)."""
        t = self.edges
        if hasattr(pred, "y_grid") and (t[0] < pred.y_grid[0] or t[-1] > pred.y_grid[-1]):
            raise ValueError(f"{name}: the CDF grid [{pred.y_grid[0]:.4g}, {pred.y_grid[-1]:.4g}]"
                             f" does not cover the interval cut points [{t[0]:.4g}, {t[-1]:.4g}]")
        F = pred.cdf_at(t)
        n = F.shape[0]
        C = np.diff(np.column_stack([np.zeros(n), F, np.ones(n)]), axis=1)
        return np.clip(C, 0.0, 1.0)

    def interval_probabilities(self, pred) -> pd.DataFrame:
        """The (unrecalibrated) probabilities of the outcome intervals for each row.

        Parameters
        ----------
        pred : predictive distributions (as ``lab_pred``)

        Returns
        -------
        pandas.DataFrame
            Rows (the predictive's index, else a RangeIndex) by intervals.
        """
        p = as_predictive(pred, "pred")
        return pd.DataFrame(self._probs(p, "pred"), index=p.index,
                            columns=pd.Index(self.classes, name="interval"))

    def fit(self, field_pred, groups=None, *, smoothing: float | None = None,
            smooth_order: int | None = None, likelihood: str = "joint",
            prior_strength: float = 0.0,
            lab_pseudocount: float | str = DEFAULT_LAB_PSEUDOCOUNT_REGRESSION,
            lab_prior: str = DEFAULT_LAB_PRIOR_REGRESSION,
            maxiter: int = 5000, tol: float = 1e-10,
            missing: str | None = None, penalty_centre: str = "population",
            trend_sd: float | None = DEFAULT_TREND_SD, random_starts: int = 0,
            seed: int = 0) -> RegressionURCResults:
        """Estimate the field shares of the outcome intervals (per group) and recalibrate.

        Parameters
        ----------
        field_pred : predictive distributions (as ``lab_pred``)
        groups : array_like or pandas.Series, optional
            Subpopulation of each field row (local URC); matched on the index when both have
            one.
        smoothing : float, optional
            Strength ``lambda >= 0`` of the smoothness penalty (the continuity component of the
            paper's regulariser): a Gaussian random walk of order ``smooth_order`` on the log
            shifts ``log(p_j / pi_lab_j)`` of neighbouring intervals, each difference with
            prior standard deviation ``lambda ** -0.5``. ``0`` is maximum likelihood. Default
            :data:`DEFAULT_SMOOTHING` (see Notes).
        smooth_order : {1, 2}, optional
            1 shrinks towards no shift (equal ratios); 2 towards a log-linear ratio across the
            intervals (which contains no shift and approximates a location shift). Default
            :data:`DEFAULT_ORDER`.
        likelihood, prior_strength, maxiter, tol : see :meth:`URC.fit`
        lab_prior : {"pooled", "uniform"}
            As :meth:`URC.fit`, but default ``"pooled"`` (URC.fit's default is
            ``"uniform"``): pseudo-counts, when asked for, are spread as the pooled lab
            histogram, so ``lab_pseudocount="perks"`` gives ``1/|A|`` per cell on average
            spread that way; Perks' prior itself needs ``lab_prior="uniform"`` too.
        lab_pseudocount : float or "perks", optional
            As :meth:`URC.fit`, but default :data:`DEFAULT_LAB_PSEUDOCOUNT_REGRESSION` (0: the
            lab histograms as observed). 0.5 per cell spread as the pooled histogram (URC's
            default until session 71) shrinks each interval's
            lab histogram towards the pooled one, which the fit offsets by moving the field's
            mass in the direction of a shift: in the declared study
            ``studies/urc_regression_pseudocount.py`` (session 70: lab 50-1000, location
            shifts 0, 0.5 and 1 SD, field 5000, 300 replicates per cell, trend prior at its
            default; rerun with the midpoint cuts in session 73) the 95% intervals covered
            0.59-0.98 of the shares with 0.5 and 0.94-0.98 with 0 (at lab 50 without a shift
            0.950 with 0.5 and 0.939 with 0), RMSE was lower with 0 in every cell, and the
            goodness-of-fit test rejected 4.3-11.7% of true models at 5% with 0.5 against
            3.0-6.0% with 0; the no-shift test's size was 3-7% with either.
        missing : {"raise", "drop"}, optional
            Field rows with a missing prediction or group; default the model's ``missing``.
        trend_sd : float or None
            Order 2 only: the prior standard deviation ``tau`` of the slope of the log-linear
            trend of the log shift in the penalty's positions (the intervals' lab means in lab
            SDs; a normal location shift of ``mu`` lab SDs has slope ``mu``), a term
            ``-(b / tau)^2 / 2`` in the penalty (:class:`~puinfer.models.urc._smoothing.
            SmoothnessPenalty`). The order-2 walk leaves that trend free, and along it the
            objective can rise to a corner of the simplex (all the field in one interval: a
            small lab set, or a strong shift); with the term the penalty is proper and the fit
            has a maximum. Default :data:`DEFAULT_TREND_SD` (1.0); ``None``: no such term (the
            behaviour before). Session 70's study (lab 300 and 1000, field 5000, location
            shifts of 0-2 SD, 20 replicates): corners at shifts of 1.5 and 2 SD fell from
            30-100% of the fits to none, the top interval's RMSE from 0.28 / 0.24 to 0.17 /
            0.15 (lab 1000), no change without a shift or at 0.5 SD from lab 200, and fewer
            corners at lab 100 (2 and 1 of 20 to 0). The top interval is still overestimated under
            strong shifts (the user guide, ``docs/guide/urc.md``, section Regression).
        penalty_centre : {"population", "sample"}
            What the walk's shift is measured against under a random lab design: the lab
            population's interval shares, with the lab sample's error integrated out
            (default), or the lab sample's shares (the behaviour before; see Notes). Ignored
            under a stratified lab design, whose shares are known.
        random_starts, seed : int
            Further random starts of the joint likelihood, and their seed (see
            :meth:`URC.fit <puinfer.URC.fit>`).

        Returns
        -------
        RegressionURCResults

        Notes
        -----
        The penalty is part of the objective that the profiles and the tests maximise, so
        intervals and tests are penalised-likelihood ones. Its default strength and order were
        chosen by ``studies/urc_regression.py`` (results in
        ``studies/results/urc_regression.md``): over strengths {1, 3, 10, 30} and orders
        {1, 2}, order 2 with strength 3 had the lowest or near-lowest error of the interval
        shares and the best log score and CRPS under the shifts studied. Without a penalty the
        interval shares are barely identified (a deconvolution problem).

        Under a random lab design the walk is on the shift against the lab *population's*
        interval shares (``penalty_centre="population"``): the lab sample's shares (exactly
        ``1/K`` at the lab quantiles) differ from them by a multinomial sampling error, which
        is no shift and is rough across the intervals, so it is integrated out instead of
        being smoothed away (:class:`~puinfer.models.urc._smoothing.SmoothnessPenalty` with
        ``n_lab``). Centred at the sample's shares (``"sample"``, the default before) the
        penalty shrank that error and the 95% profile intervals covered 0.92-0.93 on average,
        middle intervals down to 0.83-0.86; centred at the population they cover 0.95-0.98 on
        average (200 replicates per scenario, at the defaults before session 70) at the same
        point estimates (RMSE +2%) and about 23% wider. Where the true shift is not close to
        log-linear in the interval means (the open end intervals under a location shift) the
        smoothing bias remains:
        0.90-0.92 there. The no-shift likelihood-ratio statistic of the penalised fit is far
        below its nominal chi-square (size 0 of 500 at 5%); the results' ``test_no_shift()``
        refers it to a bootstrap of the procedure under the null instead (size 5.2% at 5%
        over 1500 replicates). The goodness-of-fit test rejected 7-10% at 5% there. Those
        figures are of the defaults before session 70 (``lab_pseudocount=0.5``,
        ``trend_sd=None``); at the current defaults, in
        ``studies/results/urc_regression_pseudocount.md`` (lab 50-1000, no shift), the
        no-shift test's size was 3-7% (100 replicates per lab size) and the goodness-of-fit
        test's 3.0-6.0% (300; session 73's rerun with the midpoint cuts).
        """
        lam = DEFAULT_SMOOTHING if smoothing is None else smoothing
        order = DEFAULT_ORDER if smooth_order is None else smooth_order
        try:
            lam = np.nan if isinstance(lam, (str, bool)) else float(lam)
        except (TypeError, ValueError):
            lam = np.nan
        if not (np.isfinite(lam) and lam >= 0):
            raise ValueError(f"smoothing must be a non-negative number; got {smoothing!r}")
        if order not in (1, 2) or isinstance(order, bool):
            raise ValueError(f"smooth_order must be 1 or 2; got {smooth_order!r}")
        missing = check_missing_option(model_missing(self) if missing is None else missing)
        pred = as_predictive(field_pred, "field_pred")
        if groups is not None and not isinstance(groups, (pd.Series, pd.DataFrame)) and \
                np.ndim(groups) == 0:
            raise ValueError("groups must be one label per field row")
        pred, groups, _ = _aligned(pred, "groups", groups, "field_pred")
        miss = pred.missing_rows()
        if groups is not None:
            gmiss = (groups.isna().to_numpy().reshape(len(groups), -1).any(axis=1)
                     if isinstance(groups, (pd.Series, pd.DataFrame))
                     else pd.isna(label_array(groups)).reshape(len(groups), -1)
                     .any(axis=1))
            miss = miss | gmiss
        n_dropped = 0
        if miss.any():
            if missing == "raise":
                raise ValueError(f"field_pred/groups: {int(miss.sum())} row(s) with a missing "
                                 "value (missing='drop' drops those rows)")
            pred, n_dropped = pred.take(~miss), int(miss.sum())
            groups = groups[~miss] if isinstance(groups, (pd.Series, pd.DataFrame)) else \
                (None if groups is None else label_array(groups)[~miss])
        if isinstance(groups, (pd.Series, pd.DataFrame)):
            groups = groups.reset_index(drop=True)  # already aligned: match by position
        probs = self._probs(pred, "field_pred")
        pi_lab = self._L.sum(axis=1) / self._L.sum()
        # random lab design: the shift is against the lab population's shares, of which the
        # lab sample's are an estimate (SmoothnessPenalty integrates that error out)
        if penalty_centre not in ("population", "sample"):
            raise ValueError(f"penalty_centre must be 'population' or 'sample'; got "
                             f"{penalty_centre!r}")
        n_pop = (self._L.sum() if self.lab_design == "random" and penalty_centre == "population"
                 else None)
        if trend_sd is not None:
            try:
                tau = np.nan if isinstance(trend_sd, str) else float(trend_sd)
            except (TypeError, ValueError):
                tau = np.nan
            if not (np.isfinite(tau) and tau > 0) or isinstance(trend_sd, bool):
                raise ValueError(f"trend_sd must be a positive number or None; got {trend_sd!r}")
            trend_sd = tau
        pen = (SmoothnessPenalty(lam, order, pi_lab, self.penalty_positions, n_lab=n_pop,
                                 trend_sd=trend_sd if order == 2 else None)
               if lam > 0 else None)
        base = URC.fit(self, probs, groups, likelihood=likelihood, prior_strength=prior_strength,
                       lab_pseudocount=lab_pseudocount, lab_prior=lab_prior, maxiter=maxiter,
                       tol=tol, penalty=pen, random_starts=random_starts, seed=seed)
        rec = _no_maximum_said(base._record, pen)
        return RegressionURCResults(dataclasses.replace(rec, n_dropped=n_dropped), lam, order)

    def __repr__(self):
        return (f"<RegressionURC: {self.n_intervals} outcome intervals, |A| = "
                f"{self.partition.n_cells} cells ({self.partition.kind}), {self.n_lab} lab rows>")


class RegressionURCResults(URCResults):
    """Results of :meth:`RegressionURC.fit`: field shares of the outcome intervals, their
    profile intervals, the tests of :class:`URCResults`, and recalibrated predictive
    distributions.

    The base rates are the field probabilities of the outcome intervals (``classes``: the
    interval labels). ``recalibrate`` returns recalibrated interval probabilities; ``cdf`` and
    ``ppf`` the recalibrated predictive CDF and quantile function; ``score`` compares log score
    and CRPS of the recalibrated and the original predictive distributions on rows with known
    outcomes.

    Attributes
    ----------
    smoothing : float
    smooth_order : int
    edges : numpy.ndarray
        The interval cut points.
    """

    def __init__(self, record, smoothing: float = 0.0, smooth_order: int = DEFAULT_ORDER):
        super().__init__(record)
        self.smoothing = float(smoothing)
        self.smooth_order = int(smooth_order)
        self.edges = self.model.edges.copy()
        self.edges.flags.writeable = False

    def __setstate__(self, state):
        super().__setstate__(state)
        # numpy's pickle does not keep the write flag: the cached bootstrap statistics are
        # read-only again, in a read-only mapping
        for name in ("_boot_cache", "_boot_why"):
            if name in self.__dict__:
                self.__dict__[name] = FrozenDict({k: readonly(v)
                                                  for k, v in self.__dict__[name].items()})

    # -- the no-shift test -----------------------------------------------------------------------
    @functools.cached_property
    def _boot_cache(self) -> FrozenDict:
        """Bootstrap statistics of the no-shift test by ``(n_boot, seed)`` (filled on use: each
        new entry replaces the read-only mapping)."""
        return FrozenDict()

    @functools.cached_property
    def _boot_why(self) -> FrozenDict:
        """Why each resample of :attr:`_boot_cache` could not be used (keys of
        :data:`~puinfer.models.urc._null_bootstrap.UNUSABLE`; 0 where it could)."""
        return FrozenDict()

    def _bootstrap(self, n_boot, rng) -> tuple[np.ndarray, np.ndarray]:
        """The bootstrap statistics and why each resample could not be used (read-only;
        cached for an int seed)."""
        if self.constraint.kind != "free":
            raise ValueError("the bootstrap is available for the unrestricted fit only")
        if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
            raise ValueError(f"n_boot must be a positive integer; got {n_boot!r}")
        seeded = isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_))
        key = (int(n_boot), int(rng)) if seeded else None
        if key in self._boot_cache:
            return self._boot_cache[key], self._boot_why[key]
        out, why = null_statistics(self.model, self._d, self._record.options, int(n_boot),
                                   check_rng(rng), reasons=True)
        out, why = readonly(out), readonly(why)
        if key is not None:
            self.__dict__["_boot_cache"] = FrozenDict({**self._boot_cache, key: out})
            self.__dict__["_boot_why"] = FrozenDict({**self._boot_why, key: why})
        return out, why

    def no_shift_bootstrap(self, n_boot: int = DEFAULT_N_BOOT, rng=0) -> np.ndarray:
        """The bootstrap statistics behind ``test_no_shift(reference="bootstrap")``.

        Each resample redoes the whole procedure under the null of no shift: lab rows drawn
        with replacement from the lab rows, field rows of every group drawn from the same lab
        rows, intervals and cells rebuilt on the resampled lab rows, the smoothness penalty
        re-centred, and the penalised free fit and the null fit redone
        (:mod:`puinfer.models.urc._null_bootstrap`).

        Parameters
        ----------
        n_boot : int
            Resamples ``B``.
        rng : int, numpy.random.Generator or None
            An int seed (default 0: the same resamples, and so the same p-value, on every
            call; the statistics are cached per ``(n_boot, seed)``), or a Generator / None for
            fresh draws (not cached).

        Returns
        -------
        numpy.ndarray
            ``B`` statistics, NaN for resamples that could not be used (read-only).
        """
        return self._bootstrap(n_boot, rng)[0].view()

    def test_no_shift(self, value=None, reference: str | None = None, *,
                      n_boot: int | None = None, rng=0, statistic: str = "lr"
                      ) -> HypothesisTestResult:
        """Test of no shift in the outcome intervals' shares (see
        :meth:`URCResults.test_no_shift`), by default with a bootstrap reference distribution.

        Parameters
        ----------
        value : array_like or pandas.Series, optional
            Default: the lab population's interval shares (no shift). An explicit ``value``
            is tested against the chi-square reference only.
        reference : {"bootstrap", "chi2", "bartlett"}, optional
            Default ``"bootstrap"`` for the default null and ``statistic="lr"``, else
            ``"chi2"``. ``"bootstrap"``: the p-value ``(1 + #{T*_b >= T}) / (B' + 1)`` of the
            penalised likelihood-ratio statistic ``T`` among its values ``T*_b`` over ``B``
            resamples of the whole procedure under the null (:meth:`no_shift_bootstrap`;
            ``B'`` the usable ones). ``"chi2"``: chi-square with ``G (K - 1)`` degrees of
            freedom, very conservative for the penalised statistic (size 0 of 500 at 5%);
            ``"bartlett"``: see :meth:`URCResults.test_no_shift`.
        n_boot : int, optional
            Resamples: default :data:`DEFAULT_N_BOOT` (199) for the bootstrap, 200 for the
            Bartlett reference.
        rng : int, numpy.random.Generator or None
            Random source of the resamples (bootstrap and Bartlett references): default the
            seed 0, a reproducible p-value (the bootstrap's statistics cached per seed, see
            :meth:`no_shift_bootstrap`); a Generator or None for fresh draws. (None used to
            mean the seed 0 for the bootstrap and fresh draws for the Bartlett reference, so
            repeating the bootstrap test with ``rng=None`` gave one cached p-value: session
            83's audit.)
        statistic : {"lr", "score"}
            ``"score"``: Rao's score statistic of the unpenalised model against chi-square
            (an option; over-rejects with sparse lab cells: 10.4% at 5%, and a bootstrap
            does not repair it; ``studies/results/urc_regression.md``).

        Returns
        -------
        HypothesisTestResult
            With the bootstrap: ``distribution == "bootstrap"`` (its ``reference``), the
            chi-square p-value and the number of usable resamples in ``extra``.

        Raises
        ------
        ValueError
            For an unknown ``reference``, or the bootstrap with an explicit ``value``, the
            score statistic or a restricted fit.

        Warns
        -----
        BootstrapWarning
            When more than a tenth of the bootstrap resamples could not be used (an outcome
            interval without lab rows, too few cells, cut points outside a CDF grid, fits that
            did not converge), with the counts by cause; recorded in the results'
            ``warnings``.

        Notes
        -----
        ``studies/urc_regression.py --part boot`` (no shift, lab 1000, field 5000, ten
        intervals, 99 resamples; ``studies/results/urc_regression.md``): size at 5% 6.8%,
        5.0% and 3.8% on three sets of 500 data sets (5.2% pooled, MC SE 0.6%; at 10%:
        8.7%), where the chi-square reference rejects none; power 35.5% against a field
        N(0.1, 1) and 35.5% against N(0, 0.9^2) (chi-square reference: 4.0% and 2.0%). A
        parametric bootstrap from the fitted null model (fixed partition) was too liberal
        (10.5%): the partition's own sampling variability matters. Cost: two fits on the
        histograms per resample, whatever the number of field rows: 3-6 s with the default
        199 resamples (lab 1000-2000, one core).
        """
        refuse_reference_as_value(value, ("bootstrap", "chi2", "bartlett"))
        if reference is not None and reference not in ("bootstrap", "chi2", "bartlett"):
            raise ValueError(f"reference must be 'bootstrap', 'chi2' or 'bartlett'; got "
                             f"{reference!r}")
        if reference is None:
            reference = "bootstrap" if value is None and statistic == "lr" and \
                self.constraint.kind == "free" else "chi2"
        if reference != "bootstrap":
            return super().test_no_shift(value, reference, statistic=statistic,
                                         n_boot=200 if n_boot is None else n_boot, rng=rng)
        if value is not None:
            raise ValueError("the bootstrap reference is for the default null (value=None); "
                             "test an explicit value with reference='chi2'")
        if statistic != "lr":
            raise ValueError("the bootstrap reference is for the likelihood-ratio statistic "
                             "(statistic='lr')")
        if self.constraint.kind != "free":
            raise ValueError("the bootstrap reference is available for the unrestricted fit "
                             "only")
        t = super().test_no_shift(statistic="lr")
        if not np.isfinite(t.statistic):  # invalid: no p-value from the resamples either
            return dataclasses.replace(t, distribution="bootstrap")
        B = DEFAULT_N_BOOT if n_boot is None else n_boot
        Tb, why = self._bootstrap(B, rng)
        ok = np.isfinite(Tb)
        if np.sum(~ok) > _MAX_UNUSABLE * B:
            self._warn_unusable(why)
        if not ok.any():
            return dataclasses.replace(
                HypothesisTestResult.invalid("no bootstrap resample could be fitted",
                                             null=t.null, method=t.method, df=t.df),
                distribution="bootstrap")
        pval = (1 + np.sum(Tb[ok] >= t.statistic)) / (ok.sum() + 1)
        extra = {**t.extra, "bootstrap resamples": f"{int(ok.sum())} of {B} usable",
                 "bootstrap 95% critical value": f"{np.quantile(Tb[ok], 0.95):.4f}",
                 f"chi2({t.df:g}) p-value (conservative)": f"{t.pvalue:.4g}"}
        return HypothesisTestResult(t.statistic, t.df, float(pval), null=t.null,
                                    method=t.method + ", bootstrap of the procedure under the null",
                                    distribution="bootstrap", extra=extra)

    def test_equal_base_rates(self, reference: str = "permutation", *,
                              n_boot: int = DEFAULT_N_BOOT, rng=0) -> HypothesisTestResult:
        """Test that all groups share one set of outcome-interval shares (see
        :meth:`URCResults.test_equal_base_rates`), by default with the permutation reference.

        The smoothness penalty shrinks each group's shift, and with it the differences
        between groups, so the penalised likelihood-ratio statistic falls far below its
        nominal chi-square: in session 75's audit (three groups of 5000 field rows, lab 1000,
        ten intervals, 150 data sets per cell) the chi-square reference rejected none of the
        true nulls at 5% or 10% (mean statistic 7.5 on 18 degrees of freedom) and 13.5% of
        data sets with shifts (0, 0.05, 0.1) between the groups. The permutation reference
        (random reallocations of the field rows to the groups, exact under the null)
        rejected 3.0% of true nulls at 5% (100 data sets, 39 permutations each; MC SE 1.7%)
        and 72% of the shifted ones; with 99 permutations, 4.3% at 5% (MC SE 1.2%) and 9.3%
        at 10% of 300 fresh true nulls (``studies/urc_regression_equal_permutation.py``).
        ``reference="chi2"`` gives the chi-square p-value. Cost: one fit on the histograms
        per permutation.
        """
        return super().test_equal_base_rates(reference, n_boot=n_boot, rng=rng)

    def _warn_unusable(self, why) -> None:
        """Say that many resamples of the no-shift bootstrap could not be used, and why (a
        ``BootstrapWarning`` with the counts by cause)."""
        counts = np.bincount(why, minlength=max(UNUSABLE) + 1)
        bad = int(counts[1:].sum())
        causes = "; ".join(f"{counts[c]} with {text}" for c, text in UNUSABLE.items()
                           if counts[c])
        self._record_warning(
            BootstrapWarning, f"no-shift test: {bad} of {why.size} bootstrap resamples could not be "
            f"used ({causes}); the p-value rests on the other {why.size - bad}, and unusable "
            "resamples need not be a random subset")

    @functools.cached_property
    def unpenalized(self) -> URCResults:
        """The fit of the same lab and field histograms without the smoothness penalty
        (the lab pseudo-counts and any Dirichlet prior kept), for diagnostics.

        Started from the penalised estimate (and URC's other starts); a plain
        :class:`URCResults` (its base rates are the unsmoothed estimates, its
        ``llf_penalized`` has no smoothness term). This fit itself when ``smoothing == 0``.
        With ten intervals its estimates are often on the boundary (a deconvolution without
        regularisation) and its tests are not calibrated: the no-shift likelihood-ratio test
        rejected 35% of true nulls at 5% in ``studies/urc_regression.py``. It can take
        seconds (many EM cycles on a flat likelihood).
        """
        rec = self._record
        if rec.data.penalty is None or self.constraint.kind != "free":
            return self
        d0 = dataclasses.replace(rec.data, penalty=None)
        est = lik.maximize(d0, lik.Constraint(), start=(rec.estimate.P, rec.estimate.M),
                           options=rec.options)
        record = list(self.model.warnings)
        self.model._check_fit(est, rec.groups, record, rec.options)
        return URCResults(dataclasses.replace(rec, data=d0, estimate=est,
                                              warnings=tuple(record)))

    # -- recalibration ----------------------------------------------------------------------------
    def _weights(self, pred, groups, old_prior, others=None):
        """Aligned predictive, the original and recalibrated interval probabilities and the
        per-interval density weights ``w = recalibrated / original`` (0 where the original
        interval has no mass), the index of the output and the further row-wise arguments
        ``others`` (name -> value) aligned with the rows."""
        p = as_predictive(pred, "pred")
        if groups is not None and not isinstance(groups, (pd.Series, pd.DataFrame)) and \
                np.ndim(groups) == 0:
            raise ValueError("groups must be one label per row")
        p, al, index = _aligned_all(p, {"groups": groups, **(others or {})})
        g = al.pop("groups")
        if isinstance(g, (pd.Series, pd.DataFrame)):
            g = g.reset_index(drop=True)
        if p.missing_rows().any():
            raise ValueError(f"pred: {int(p.missing_rows().sum())} row(s) with a missing value")
        C = self.model._probs(p, "pred")
        Pt = np.asarray(URCResults.recalibrate(self, C, g, old_prior=old_prior), dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(C > 0, Pt / C, 0.0)
        return p, C, Pt, w, (index if index is not None else pd.RangeIndex(p.n)), al

    def recalibrate(self, pred, groups=None, *, old_prior=None) -> pd.DataFrame:
        """Recalibrated probabilities of the outcome intervals (Lemma 3).

        Parameters
        ----------
        pred : predictive distributions (as the model's ``lab_pred``)
        groups : array_like or pandas.Series, optional
            Group of each row; required when several groups were fitted.
        old_prior : see :meth:`URCResults.recalibrate`

        Returns
        -------
        pandas.DataFrame
            Rows (the predictive's or ``groups``' index, else a RangeIndex) by intervals.
        """
        _, _, Pt, _, index, _ = self._weights(pred, groups, old_prior)
        return pd.DataFrame(Pt, index=index, columns=pd.Index(self.model.classes,
                                                              name="interval"))

    def _cdf_rows(self, p, C, Pt, w, Z, recalibrated):
        """Row ``i``'s (recalibrated) CDF at ``Z[i]`` (``Z``: n x m)."""
        FZ = p.cdf_rows(Z)
        if not recalibrated:
            return FZ
        n = C.shape[0]
        Fb = np.column_stack([np.zeros(n), p.cdf_at(self.edges)])       # CDF at interval starts
        Wb = np.column_stack([np.zeros(n), np.cumsum(Pt, axis=1)[:, :-1]])
        J = np.searchsorted(self.edges, Z, side="left")
        r = np.arange(n)[:, None]
        return np.clip(Wb[r, J] + w[r, J] * (FZ - Fb[r, J]), 0.0, 1.0)

    def cdf(self, pred, y, groups=None, *, recalibrated: bool = True):
        """The recalibrated (or original) predictive CDF.

        Within each outcome interval the model's own predictive distribution is kept, scaled
        to the interval's recalibrated probability, so the recalibrated density is the
        original one times a weight constant on each interval.

        Parameters
        ----------
        pred : predictive distributions
        y : array_like or pandas.DataFrame
            Points: a 1-d grid common to all rows, or an ``n x m`` matrix of points per row. A
            DataFrame of points per row is matched to the rows of ``pred`` (and ``groups``) on
            its index, by the package's rule (:mod:`puinfer._align`); an array by position. A
            Series is refused as ambiguous (``y.to_frame()`` for one point per row).
        groups : optional
            As in :meth:`recalibrate`.
        recalibrated : bool
            False gives the original CDF (for comparison).

        Returns
        -------
        pandas.DataFrame or numpy.ndarray
            A DataFrame (rows by the grid values) for a common grid; for points per row, a
            DataFrame on the rows' index with ``y``'s columns when ``y`` is a DataFrame, else
            an ``n x m`` array in the rows' order of ``pred``.

        Raises
        ------
        ValueError
            For points that are NaN, per-row points whose rows do not match ``pred``'s, a
            Series, or the errors of :meth:`recalibrate`.
        """
        recalibrated = check_bool(recalibrated, "recalibrated")
        if isinstance(y, pd.Series):
            # (it was taken as a grid common to all rows: res.cdf(pred, df["y"]), the PIT
            # call, gave an n x n frame, while score(pred, y) reads a Series as one outcome per
            # row: session 83's audit)
            raise ValueError("y: a pandas Series is ambiguous here: for one point per row pass "
                             "y.to_frame() (matched to pred's rows on its index); for a grid "
                             "common to all rows pass a list or a numpy array")
        per_row = isinstance(y, pd.DataFrame) or np.ndim(y) == 2
        if per_row:
            p, C, Pt, w, index, al = self._weights(pred, groups, None, {"y": y})
            yy = al["y"]
            cols = yy.columns if isinstance(yy, pd.DataFrame) else None
            yy = _points(yy)
            if yy.shape[0] != p.n:
                raise ValueError(f"y has {yy.shape[0]} rows; pred has {p.n}")
            out = self._cdf_rows(p, C, Pt, w, yy, recalibrated)
            return out if cols is None else pd.DataFrame(out, index=index, columns=cols)
        yy = _points(y)
        if yy.ndim != 1:
            raise ValueError(f"y must be a 1-d grid or an n x m matrix of points; got shape "
                             f"{yy.shape}")
        p, C, Pt, w, index, _ = self._weights(pred, groups, None)
        out = self._cdf_rows(p, C, Pt, w, np.broadcast_to(yy, (p.n, yy.size)), recalibrated)
        return pd.DataFrame(out, index=index, columns=pd.Index(yy, name="y"))

    def _ppf_rows(self, p, C, Pt, w, U, recalibrated):
        if not recalibrated:
            return p.ppf_rows(U)
        n, K = C.shape
        Fb = np.column_stack([np.zeros(n), p.cdf_at(self.edges)])
        cum = np.cumsum(Pt, axis=1)
        Wb = np.column_stack([np.zeros(n), cum[:, :-1]])
        J = np.zeros(U.shape, dtype=np.intp)
        for j in range(K - 1):  # the interval where the recalibrated CDF passes u
            J += U > cum[:, j:j + 1]
        r = np.arange(n)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            target = np.where(w[r, J] > 0, Fb[r, J] + (U - Wb[r, J]) / w[r, J], Fb[r, J])
        return p.ppf_rows(np.clip(target, 0.0, 1.0))

    def ppf(self, pred, q, groups=None, *, recalibrated: bool = True) -> pd.DataFrame:
        """Quantiles of the recalibrated (or original) predictive distributions.

        Parameters
        ----------
        pred : predictive distributions
        q : float or array_like
            Levels in (0, 1).
        groups : optional
        recalibrated : bool

        Returns
        -------
        pandas.DataFrame
            Rows by levels.
        """
        recalibrated = check_bool(recalibrated, "recalibrated")
        refuse_text(q, "q")  # (q="0.9" was taken as 0.9)
        try:
            qq = np.atleast_1d(np.asarray(q, dtype=float))
        except (TypeError, ValueError):
            raise ValueError(f"q must be levels in (0, 1); got {q!r:.60}") from None
        if qq.ndim != 1 or not np.all((qq > 0) & (qq < 1)):
            raise ValueError("q must be levels in (0, 1)")
        p, C, Pt, w, index, _ = self._weights(pred, groups, None)
        out = self._ppf_rows(p, C, Pt, w, np.broadcast_to(qq, (p.n, qq.size)), recalibrated)
        return pd.DataFrame(out, index=index, columns=pd.Index(qq, name="level"))

    def score(self, pred, y, groups=None, *, n_points: int = 400) -> pd.DataFrame:
        """Log score and CRPS of the recalibrated and the original predictive distributions.

        For rows whose outcomes are known (a labelled check set from the field, or a
        simulation). The log score is the mean log predictive density at ``y`` (higher is
        better; the recalibrated density is the original one times the interval's weight);
        the CRPS is the mean of ``int (F(z) - 1{z >= y})^2 dz`` (lower is better), computed
        by the trapezoidal rule on ``n_points`` points per row on each side of ``y``.

        Parameters
        ----------
        pred : predictive distributions
        y : array_like or pandas.Series
            The outcome of each row. **Alignment**: a Series is matched to the rows of
            ``pred`` and ``groups`` on the index (the package's rule, :mod:`puinfer._align`;
            labels that differ are refused), an array by position.
        groups : optional
            As in :meth:`recalibrate`.
        n_points : int
            Quadrature points per row on each side of ``y`` for the CRPS.

        Returns
        -------
        pandas.DataFrame
            Rows ``original`` and ``recalibrated``; columns ``log score`` and ``CRPS``. Where
            the predictive density is 0 at an outcome (beyond a ``QuantilePredictive``'s
            outermost quantiles, or in an interval whose estimated share is 0) that log score
            is ``-inf``, with a ``BoundaryWarning`` (also in ``attrs["warnings"]``).
        """
        if y is None or (not isinstance(y, (pd.Series, pd.DataFrame)) and np.ndim(y) == 0):
            raise ValueError("y must be one outcome per row of pred")
        # y is matched to pred's (and groups') rows by the package's rule: on the index when
        # it is a pandas object (never by position), by position when it is an array
        # (one point or none integrates the CRPS to 0: session 67's audit)
        n_points = check_int(n_points, "n_points", minimum=2)
        p, C, Pt, w, _, al = self._weights(pred, groups, None, {"y": y})
        yv = al["y"]
        if isinstance(yv, pd.DataFrame):
            if yv.shape[1] != 1:
                raise ValueError(f"y must be one outcome per row; got {yv.shape[1]} columns")
            yv = yv.iloc[:, 0]
        refuse_text(yv, "y")
        try:
            yv = (yv.to_numpy(dtype=float, na_value=np.nan) if isinstance(yv, pd.Series)
                  else np.asarray(yv, dtype=float)).ravel()
        except (TypeError, ValueError):
            raise ValueError("y must be numeric outcomes") from None
        if yv.size != p.n or not np.all(np.isfinite(yv)):
            raise ValueError(f"y must be {p.n} finite outcomes, one per row of pred")
        dens = p.pdf_rows(yv)
        J = np.searchsorted(self.edges, yv, side="left")
        wy = w[np.arange(p.n), J]
        with np.errstate(divide="ignore"):
            ls0, ls1 = np.log(dens), np.log(dens * wy)
        rows = {}
        for name, rec, ls in (("original", False, ls0), ("recalibrated", True, ls1)):
            rows[name] = {"log score": float(np.mean(ls)),
                          "CRPS": float(np.mean(self._crps(p, C, Pt, w, yv, rec, n_points)))}
        out = pd.DataFrame(rows).T
        record: list = []
        zero = {name: int(np.sum(np.isneginf(ls))) for name, ls in (("original", ls0),
                                                                     ("recalibrated", ls1))}
        if any(zero.values()):
            # (session 68's audit: a -inf mean without a word, e.g. outcomes beyond a
            # QuantilePredictive's outermost quantiles)
            warn_and_record(record, f"the predictive density is 0 at {zero['original']} "
                            f"(original) and {zero['recalibrated']} (recalibrated) of {p.n} "
                            "outcomes -- outside the predictive's support, or in an interval "
                            "whose estimated share is 0 -- so that log score is -inf (the CRPS "
                            "is finite)", BoundaryWarning)
        out.attrs["warnings"] = tuple(record)
        return out

    def _crps(self, p, C, Pt, w, yv, recalibrated, m):
        eps = 1e-7
        lo = np.minimum(self._ppf_rows(p, C, Pt, w, np.full((p.n, 1), eps), recalibrated)[:, 0],
                        yv)
        hi = np.maximum(self._ppf_rows(p, C, Pt, w, np.full((p.n, 1), 1 - eps),
                                       recalibrated)[:, 0], yv)
        t = np.linspace(0.0, 1.0, m)
        total = np.zeros(p.n)
        for a, b, ind in ((lo, yv, 0.0), (yv, hi, 1.0)):
            Z = a[:, None] + (b - a)[:, None] * t[None, :]
            F = self._cdf_rows(p, C, Pt, w, Z, recalibrated)
            total += np.trapezoid((F - ind) ** 2, Z, axis=1)
        return total

    # -- presentation ----------------------------------------------------------------------------
    def summary(self, alpha: float = 0.05) -> Summary:
        """URC's summary with the outcome intervals and the smoothness penalty."""
        s = super().summary(alpha)
        s.title = "Regression URC: field shares of the outcome intervals"
        m = self.model
        # the cells are RegressionURC's n_cells (URC's line names its own n_bins)
        s.info = [(k, f"{m.partition.n_cells} (n_cells {m.n_bins_choice})" if k == "Cells |A|"
                   else v) for k, v in s.info]
        # (models pickled before the lab-size default had ten intervals, as given)
        default = getattr(m, "n_intervals_choice", "given") == "default"
        asked = m._n_intervals_requested
        s.add_info("Outcome intervals K", f"{m.n_intervals}" + (
            f" (default {asked} for {m.n_lab} lab rows"
            + (", fewer after ties in lab_y)" if m.n_intervals < asked else ")")
            if default else ""))
        tau = getattr(self._d.penalty, "trend_sd", None)
        s.add_info("Smoothing (lambda, order)", f"{self.smoothing:g}, {self.smooth_order}"
                   + (f"; trend slope ~ N(0, {tau:g}^2)" if tau is not None else ""))
        if self.smoothing > 0:
            s.add_note("The smoothness penalty is part of the objective: the estimates are "
                       "penalised (MAP) ones and the intervals profile penalised-likelihood "
                       "ones.")
        if self.constraint.kind != "free":  # (a restricted fit: no tests of its own)
            return s
        with warnings.catch_warnings():  # (issued and recorded by URC's summary above)
            warnings.simplefilter("ignore")
            t = self.test_no_shift()
        if t.distribution == "bootstrap":
            s.add_note(f"No-shift test: p-value from a bootstrap of the whole procedure under "
                       f"the null ({t.extra['bootstrap resamples']} resamples, seed 0); the "
                       f"chi2({t.df:g}) reference would be very conservative (p = "
                       f"{t.extra[f'chi2({t.df:g}) p-value (conservative)']}).")
        return s

    def __repr__(self):
        kind = "" if self.constraint.kind == "free" else f", restricted: {self._restriction}"
        tau = getattr(self._d.penalty, "trend_sd", None)
        trend = f", trend_sd={tau:g}" if tau is not None else ""
        return (f"<RegressionURCResults: {len(self._groups)} group(s), {self.model.n_intervals}"
                f" intervals, smoothing={self.smoothing:g}{trend}, llf={self.llf:.4f}{kind}>")
