"""The bootstrap reference of the no-shift test of :class:`~puinfer.models.urc.RegressionURC`.

The penalised likelihood-ratio statistic of no shift has no usable chi-square reference: the
smoothness penalty shrinks the free fit towards the null (the statistic has mean 2.5, not the
nominal 9 with ten intervals; ``studies/results/urc_regression.md``), and its distribution
depends on the partition, which is built on the lab sample (interval cut points at the lab
quantiles of the outcome, cells at the lab quantiles of the predicted value). A *parametric*
bootstrap from the fitted null model (multinomial lab and field histograms over the fixed
partition) misses the second part: it understated the statistic (mean 2.1) and rejected 10.5%
of true nulls at 5%.

This bootstrap redoes the whole procedure under the null. The null's population is the lab
rows' empirical distribution (pairs of a predictive distribution and an outcome; under no
shift the field population is the lab population). Each resample draws the lab rows with
replacement (``n`` of them; under a stratified design within each interval, the interval
counts fixed) and the field rows of every group from the same lab rows (``N_g`` of them; only
their predictive distributions are used), cuts the intervals at the resampled lab quantiles
of the outcome (stratified: the model's fixed cut points), builds the cells of the predicted
value on the resampled lab rows, re-centres the smoothness penalty at the resampled interval
shares, and fits the null and the penalised free model to the resampled histograms. Every
step works on multiplicities of the ``n`` lab rows, so a resample costs two fits on ``k x |A|``
histograms whatever the number of field rows.

One shortcut: each resample's null fit starts at the resampled interval shares and its free
fit at the null fit, one run each, where the observed fits also try URC's other starts (the
joint likelihood can have several local maxima with small lab sets; a resample's free fit at
a lower maximum would give a smaller statistic). With every start the statistics were the same
to the last digit on 320 resamples (lab 1000 / field 5000 / ten intervals and lab 300 / field
1000 / five intervals, four data sets each) at 10-14 times the cost; a test checks a few.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from . import _likelihood as lik
from ._smoothing import SmoothnessPenalty
from .partition import build_partition

__all__ = ["draw_weights", "resample_statistic", "null_statistics", "UNUSABLE"]

#: why a resample could not be used: the codes of ``null_statistics(..., reasons=True)``
#: (0: usable)
UNUSABLE = {1: "an outcome interval without lab rows",
            2: "fewer cells of the predicted value than intervals",
            3: "interval cut points outside the CDF grid",
            4: "a fit that did not converge"}


def draw_weights(n_lab: int, codes, Ng, stratified: bool, rng: np.random.Generator):
    """Multiplicities of the lab rows in one resample: lab (``n_lab``) and field (``G x
    n_lab``).

    Random design: ``Mult(n, 1/n)`` over the lab rows; stratified: within each interval
    (``codes``, the lab rows' intervals) its count redrawn uniformly. The field rows of group
    ``g`` are ``Mult(N_g, 1/n)`` over the lab rows (under no shift the field population is the
    lab population; under a stratified design its interval shares are the lab sample's, fixed
    by design).
    """
    unif = np.full(n_lab, 1.0 / n_lab)
    if stratified:
        wl = np.zeros(n_lab, dtype=np.int64)
        for j in np.unique(codes):
            idx = np.flatnonzero(codes == j)
            wl[idx] = rng.multinomial(idx.size, np.full(idx.size, 1.0 / idx.size))
    else:
        wl = rng.multinomial(n_lab, unif)
    wf = np.stack([rng.multinomial(int(g), unif) for g in Ng])
    return wl, wf


def _cells(model, C, means, wl):
    """Cell of every lab row under the partition built on the resampled lab rows (as the
    model builds its own: empty cells merged); None when the resample has fewer cells than
    intervals."""
    part = model.partition
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if model._partition_kind == "argmax":
            p = build_partition(np.repeat(C, wl, axis=0), C.shape[1], part.n_bins, False, [])
        else:
            from .regression import _build_mean_partition  # (regression imports this module)

            p = _build_mean_partition(np.repeat(C, wl, axis=0), means, part.n_bins, [])
    return p.assign(C) if p.n_cells >= C.shape[1] else None


def resample_statistic(model, d: lik.Data, wl, wf, options: lik.FitOptions) -> float:
    """The penalised likelihood-ratio statistic of no shift on one resample (NaN if the
    resample cannot be used: an empty interval, too few cells, a fit that fails).

    ``model``: the :class:`RegressionURC`; ``d``: the data of the observed free fit (its
    likelihood options and penalty are carried over, re-centred).
    """
    return _statistic(model, d, wl, wf, options)[0]


def _statistic(model, d: lik.Data, wl, wf, options: lik.FitOptions) -> tuple[float, int]:
    """:func:`resample_statistic` and why the resample could not be used (a key of
    :data:`UNUSABLE`; 0 when it could)."""
    y, pred = model._lab_y, model._lab_pred
    stratified = not d.random_lab
    if stratified:
        edges = model.edges
    else:
        # cut at the quantile levels the model was asked for, tied cut points dropped, as
        # the model cut the lab outcomes (a resample may then have another number of
        # intervals: everything below is rebuilt with it)
        K0 = getattr(model, "_n_intervals_requested", model.n_intervals)
        from .regression import outcome_edges  # (regression imports this module)

        edges = outcome_edges(np.repeat(y, wl), K0)
    K = edges.size + 1
    codes = np.searchsorted(edges, y, side="left")
    cnt = np.bincount(codes, weights=wl, minlength=K)
    if np.any(cnt == 0):
        return np.nan, 1
    means = np.bincount(codes, weights=wl * y, minlength=K) / cnt
    grid = getattr(pred, "y_grid", None)
    if grid is not None and (edges[0] < grid[0] or edges[-1] > grid[-1]):
        return np.nan, 3  # a CDF grid that does not cover the resample's cut points (as the fit)
    Fc = pred.cdf_at(edges)
    C = np.clip(np.diff(np.column_stack([np.zeros(y.size), Fc, np.ones(y.size)]), axis=1),
                0.0, 1.0)
    cell = _cells(model, C, means, wl)
    if cell is None:
        return np.nan, 2
    A = int(cell.max()) + 1
    L = np.bincount(codes * A + cell, weights=wl, minlength=K * A).reshape(K, A)
    F = np.stack([np.bincount(cell, weights=w, minlength=A) for w in wf]).astype(float)
    pi = L.sum(axis=1) / L.sum()
    pen = d.penalty
    if pen is not None:
        sd = max(float(np.std(np.repeat(y, wl))), 1e-300)
        pen = SmoothnessPenalty(pen.strength, pen.order, pi, means / sd, n_lab=pen.n_lab,
                                trend_sd=getattr(pen, "trend_sd", None))
    db = dataclasses.replace(d, L=L, F=F, pi_lab=pi, penalty=pen, pooled=False)
    dn = dataclasses.replace(db, pooled=d.random_lab)
    con = lik.Constraint("pooled") if d.random_lab else lik.Constraint("rows", value=pi)
    Ms = (L + 0.5) / (L + 0.5).sum(axis=1, keepdims=True)
    null = lik._maximize_once(dn, con, (np.tile(pi, (F.shape[0], 1)), Ms), options, warm=True)
    if not null.convergence.converged:
        return np.nan, 4
    free = lik._maximize_once(db, lik.Constraint(), (null.P, null.M), options, warm=True)
    if not free.convergence.converged:
        return np.nan, 4
    return max(2.0 * (free.objective + db.const - null.objective - dn.const), 0.0), 0


def null_statistics(model, d: lik.Data, options: lik.FitOptions, n_boot: int,
                    rng: np.random.Generator, reasons: bool = False):
    """``n_boot`` bootstrap statistics of the no-shift test under the null (NaN where a
    resample could not be used). The resamples are drawn in order, one after the other.
    With ``reasons``, also why each could not be used (int codes, keys of :data:`UNUSABLE`;
    0 where it could)."""
    Ng = d.F.sum(axis=1).astype(np.int64)
    codes = np.searchsorted(model.edges, model._lab_y, side="left")
    out = np.full(n_boot, np.nan)
    why = np.zeros(n_boot, dtype=np.int8)
    for b in range(n_boot):
        wl, wf = draw_weights(model._lab_y.size, codes, Ng, not d.random_lab, rng)
        out[b], why[b] = _statistic(model, d, wl, wf, options)
    return (out, why) if reasons else out
