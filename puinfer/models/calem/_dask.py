"""CalEM on Dask collections: the same fit, its row sums added over the blocks.

``CalEM(score, label, treated)`` with Dask arrays/Series (or ``CalEM.from_formula`` with a
Dask DataFrame) keeps the **control** rows in memory (the small clean set) and leaves the
**treated** rows in the Dask collections. Every quantity the fit needs from the treated rows
is a sum over rows, computed by the in-memory code's own block functions on each partition
and added up the tree on the scheduler in use (:func:`puinfer._dask.reduce_blocks`):

* the CalEM iteration: :func:`~._engine.block_sums` (F, objective (17), the gradient and
  Hessian of F, ``H_Q``) and :func:`~._engine.sandwich_block` (the sandwich);
* the calibrator fits (the biased fit ``g_eta``, the pooled fit, Algorithm 3's M-step):
  :func:`~.calibrators.weighted_loglik` and :func:`~.calibrators.logistic_derivs`, driven by
  the shared :func:`~.calibrators.logistic_fit_rows` / ``Calibrator._fit_rows``.

Each evaluation is one pass over the treated rows (it returns value, gradient and Hessian
together, so a line search's accepted point costs no second pass); :class:`DaskEngine`
counts the passes. The spline's knots are *exact* quantiles of all scores, found in two passes
(:func:`exact_quantiles`). The estimates equal the in-memory fit's on the same rows up to the
order of the additions (~1e-12 relative; tested to 1e-9).

A known treatment effect ``fit(h=...)`` (a number or a picklable function of the score) is
one weighted fit, its labels computed inside the blocks. Not distributed: the isotonic
calibrator (weighted PAVA needs all distinct scores in order) and formula calibrators with
stateful transforms (``cr``, ``bs``, ``poly``, ``center``...: their state is learned from all
scores in memory) -- each refused with an error that names it.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from scipy.special import expit

from ..._align import align_rows, drop_missing
from ..._dask import (
    add_sums,
    in_one_partition,
    is_dask,
    reduce_blocks,
    require_dask,
    row_blocks,
    same_index_block,
)
from ..._validation import as_float_vector, warn_and_record
from ...exceptions import ClippingWarning, ConvergenceWarning
from ._engine import (
    CalEMFit,
    ParametricEngine,
    Rows,
    _known_h_fit,
    _pooled_warnings,
    block_sums,
    check_fit_options,
    extreme_fit_warning,
    known_h_values,
    no_bias_warning,
    no_sandwich_warning,
    pooled_start,
    run_solver,
    sandwich_block,
    sandwich_from_sums,
    soft_labels,
)
from .calibrators import (
    FittedCalibrator,
    FormulaCalibrator,
    edge_bounds,
    edge_scores_moved,
    inner_extremes,
    logistic_derivs,
    near_edge_count,
    near_edge_message,
    weighted_loglik,
)
from .model import checked_columns, edge_message, formula_score, score_histogram

#: sample positions per block for the exact-quantile brackets (see :func:`exact_quantiles`)
_SKETCH = 4097
#: rows per slice of a partition in a pass (bounds the memory of the block sums' temporaries)
_SLICE = 1 << 18
#: quantiles of the scores behind the results' plotting grid (``_CurvesMixin._grid``)
GRID_Q = (0.005, 0.995)


# ---------------------------------------------------------------------------------------------
# one block of rows: the in-memory model's validation, per partition
# ---------------------------------------------------------------------------------------------
def _block_arrays(bounds, missing, score, label, treated):
    """A partition's rows as in :class:`CalEM`: aligned on the index, missing rows dropped
    (or refused), validated, scores of 0 or 1 moved to the model's ``bounds``
    (:func:`.calibrators.edge_bounds`; None: not moved, in the validation pass, which finds
    them). Returns ``(s, lab, tr, n_dropped, n_edge)``."""
    args, _ = align_rows(same_index_block({"score": score, "label": label,
                                           "treated": treated}))
    args, _, n_dropped = drop_missing(args, None, missing)
    if len(args["score"]) == 0:  # an empty partition (filtered, or all its rows dropped)
        return np.empty(0), np.empty(0), np.empty(0, dtype=bool), int(n_dropped), 0
    s, lab, tr = checked_columns(args, " in a partition")
    n_edge = int(np.count_nonzero((s == 0) | (s == 1)))
    if n_edge and bounds is not None:
        s = edge_scores_moved(s, bounds)  # (as in memory: the 0 and 1 only)
    return s, lab, tr, int(n_dropped), n_edge


def _sketch(v):
    """Sorted ``v``'s values at up to ``_SKETCH`` evenly spaced positions (first and last
    included), with the positions and ``len(v)``."""
    v = np.sort(v)
    pos = np.unique(np.round(np.linspace(0, v.size - 1, min(_SKETCH, v.size))).astype(np.int64))
    return [(v.size, pos, v[pos])] if v.size else []


def _summary_block(missing, calibrator, score, label, treated):
    """The validation pass: counts, the control rows, a sketch of the scores, and the extreme
    scores inside (0, 1) that place the scores 0 and 1 (``DaskData.bounds``), which
    are not yet moved here: the treated rows' histogram leaves them out and counts them."""
    s, lab, tr, n_dropped, n_edge = in_one_partition(_block_arrays, None, missing, score,
                                                     label, treated)
    t1 = lab[tr]
    inner = (s > 0) & (s < 1)
    lo_in, hi_in = inner_extremes(s)
    at = [s[tr] == 0, s[tr] == 1]
    edge_t = np.array([[np.count_nonzero(a), np.count_nonzero(a & (t1 == 1))] for a in at])
    return {"n_t": int(tr.sum()), "pos_t": int(t1.sum()), "n_dropped": n_dropped,
            "n_edge": n_edge, "n_near": near_edge_count(s, calibrator), "s_c": [s[~tr]],
            "y": [lab[~tr]], "sketch": _sketch(s[tr]),
            "hist_t": score_histogram(s[tr & inner], lab[tr & inner]), "edge_t": edge_t,
            "lo_in": [lo_in], "hi_in": [hi_in]}


def _treated(bounds, missing, score, label, treated):
    """A partition's treated rows: ``(s_t, z)``."""
    s, lab, tr, _, _ = _block_arrays(bounds, missing, score, label, treated)
    return s[tr], lab[tr]


# ---------------------------------------------------------------------------------------------
# the data: control rows in memory, treated rows in the blocks
# ---------------------------------------------------------------------------------------------
class DaskData:
    """The rows of a :class:`CalEM` model given as Dask collections.

    Attributes
    ----------
    s_c, y : numpy.ndarray
        The control rows (in memory), sorted by (score, label) like the in-memory engine's.
    n_treated, pos_treated : int
        Treated rows and treated positives.
    fingerprint : str
        Dask's token of the collections (identifies the data for :func:`puinfer.lr_test`).

    The Dask collections themselves are not pickled: an unpickled model (or results) keeps
    every number computed, but cannot be fitted again.
    """

    def __init__(self, blocks, eps, missing, summary, fingerprint):
        self.blocks, self.missing = blocks, missing
        # where the scores 0 and 1 are read, from the extreme scores of every partition
        self.bounds = edge_bounds((min(summary["lo_in"]), max(summary["hi_in"])), eps)
        lo, hi = self.bounds
        s_c = edge_scores_moved(np.concatenate(summary["s_c"]), self.bounds)
        y = np.concatenate(summary["y"])
        oc = np.lexsort((y, s_c))
        self.s_c, self.y = s_c[oc], y[oc]
        self.n_treated, self.pos_treated = summary["n_t"], summary["pos_t"]
        # for the check of Assumption 1: the treated 0s and 1s in the bins of lo and hi
        (n0, pos0), (n1, pos1) = summary["edge_t"]
        self.hist_treated = summary["hist_t"] + score_histogram(
            np.repeat([lo, lo, hi, hi], [pos0, n0 - pos0, pos1, n1 - pos1]),
            np.repeat([1.0, 0.0, 1.0, 0.0], [pos0, n0 - pos0, pos1, n1 - pos1]))
        self.n_dropped, self.n_edge = summary["n_dropped"], summary["n_edge"]
        # (clipping is monotone: the sorted sketch of the moved scores)
        self._sketch = [(n, pos, edge_scores_moved(v, self.bounds))
                        for n, pos, v in summary["sketch"]] + _sketch(self.s_c)
        self.fingerprint = fingerprint
        self.passes = 1  # the validation pass

    def __getstate__(self):
        state = dict(self.__dict__)
        state["blocks"] = None
        state["_sketch"] = None
        return state

    def check_available(self):
        if self.blocks is None:
            raise RuntimeError("this CalEM model was unpickled: its Dask collections are not "
                               "kept, so it cannot be fitted again; build it from the "
                               "collections")

    def reduce(self, func, *, extra=None, combine=None):
        """``func(s_t, z)`` summed over the treated rows' blocks (one pass)."""
        self.check_available()
        self.passes += 1
        combine = add_sums if combine is None else combine
        return reduce_blocks(functools.partial(_on_treated, func, combine, self.bounds,
                                               self.missing),
                             self.blocks, extra=extra, combine=combine)

    def quantiles(self, *requests) -> list:
        """Exact ``np.quantile(transform(all scores), q)`` for each ``(q, transform)``
        (see :func:`exact_quantiles`)."""
        return exact_quantiles(self, requests)


def _on_treated(func, combine, bounds, missing, score, label, treated):
    """``func`` on a partition's treated rows, ``_SLICE`` rows at a time (the temporaries of
    the block sums stay small whatever the partition size), combined."""
    s_t, z = _treated(bounds, missing, score, label, treated)
    if not s_t.size:
        return None
    return functools.reduce(combine, (func(s_t[i:i + _SLICE], z[i:i + _SLICE])
                                      for i in range(0, s_t.size, _SLICE)))


# ---------------------------------------------------------------------------------------------
# exact quantiles of all scores in two passes (the sketch pass is the validation pass)
# ---------------------------------------------------------------------------------------------
def _brackets(sketch, ranks):
    """For each rank ``r`` (0-based), values ``lo <= x_(r) <= hi`` guaranteed by the sketches:
    ``#{x < t} <= sum_b (first sketch position with value >= t)`` and
    ``#{x <= t} >= sum_b (last sketch position with value <= t) + 1``."""
    cand = np.unique(np.concatenate([v for _, _, v in sketch]))
    upper_below = np.zeros(cand.size)   # upper bound of #{x < t}
    lower_le = np.zeros(cand.size)      # lower bound of #{x <= t}
    for n, pos, v in sketch:
        i = np.searchsorted(v, cand, side="left")
        upper_below += np.where(i < v.size, pos[np.minimum(i, v.size - 1)], n)
        j = np.searchsorted(v, cand, side="right") - 1
        lower_le += np.where(j >= 0, pos[np.maximum(j, 0)] + 1, 0)
    lo = np.array([cand[np.flatnonzero(upper_below <= r)[-1]] for r in ranks])
    hi = np.array([cand[np.flatnonzero(lower_le >= r + 1)[0]] for r in ranks])
    return lo, hi


def _bracket_block(lo, hi, s, z=None):
    return tuple((int(np.sum(s < a)), [s[(s >= a) & (s <= b)]])
                 for a, b in zip(lo, hi, strict=True))


def exact_quantiles(data: DaskData, requests) -> list:
    """``np.quantile(transform(scores), q)`` (linear interpolation) of all rows, exactly, for
    each ``(q, transform)`` of ``requests`` (``transform`` non-decreasing and elementwise, or
    None), in one pass.

    The validation pass kept a sketch of each block (sorted values at ``_SKETCH`` evenly
    spaced positions); it brackets every order statistic needed, and one more pass counts the
    rows below each bracket and collects the few inside it. Each order statistic is then
    exact, and the interpolation is numpy's own (``np.quantile`` of the two neighbours), so
    the result is the in-memory value bit for bit.
    """
    n = data.n_treated + data.s_c.size
    qs = [np.asarray(q, dtype=float) for q, _ in requests]
    hs = [(n - 1) * q for q in qs]
    r0s = [np.floor(h).astype(np.int64) for h in hs]
    r1s = [np.minimum(r0 + 1, n - 1) for r0 in r0s]
    ranks = np.unique(np.concatenate(r0s + r1s))
    lo, hi = _brackets(data._sketch, ranks)
    got = data.reduce(functools.partial(_bracket_block, lo, hi),
                      extra=_bracket_block(lo, hi, data.s_c))
    stat = {r: np.sort(np.concatenate(vals))[r - below]
            for r, (below, vals) in zip(ranks, got, strict=True)}
    out = []
    for (_, transform), h, r0, r1 in zip(requests, hs, r0s, r1s, strict=True):
        def tr(v, transform=transform):
            return v if transform is None else transform(np.array([v]))[0]
        out.append(np.array([np.quantile(np.array([tr(stat[a]), tr(stat[b])]), g)
                             for a, b, g in zip(r0, r1, h - r0, strict=True)]))
    return out


# ---------------------------------------------------------------------------------------------
# the rows of a logistic fit, for the shared calibrator fitting code
# ---------------------------------------------------------------------------------------------
def _logistic_block(b, gram, X, lab):
    """One block of a weighted logistic fit (weights 1): value, gradient, Hessian,
    ``max |eta|`` and (``gram``) ``X'X``."""
    w = np.ones(lab.size)
    eta = X @ b
    g, H = logistic_derivs(X, lab, w, eta)
    out = {"f": weighted_loglik(eta, lab, w), "g": g, "H": H,
           "amax": float(np.max(np.abs(eta), initial=0.0))}
    if gram:
        out["gram"] = X.T @ X
    return out


class KnownH:
    """E-step labels ``z (1 - h(score))`` of a known treatment effect ``h`` (a number or a
    picklable function of the score), as a label token of :class:`DaskEngine`."""

    def __init__(self, h):
        self.h = h


def _design_labels(cal, basis, eta_hat, labels, s_t, z):
    """The treated rows' design and labels: ``z`` (``labels=None``), the E-step labels at
    ``theta_t`` (``labels=theta_t``) or those of a known ``h`` (:class:`KnownH`)."""
    X = cal.design(basis, s_t)
    if labels is None:
        return X, z
    if isinstance(labels, KnownH):
        return X, z * (1.0 - known_h_values(labels.h, s_t))
    a, _ = soft_labels(z, expit(X @ labels), expit(X @ eta_hat))
    return X, a


def _logistic_treated(cal, basis, eta_hat, labels, b, gram, s_t, z):
    X, lab = _design_labels(cal, basis, eta_hat, labels, s_t, z)
    return _logistic_block(b, gram, X, lab)


def _combine_max(a, b):
    """Add block results, except ``amax`` (a maximum)."""
    if a is None or b is None:
        return a if b is None else b
    out = add_sums({k: v for k, v in a.items() if k != "amax"},
                   {k: v for k, v in b.items() if k != "amax"})
    out["amax"] = max(a["amax"], b["amax"])
    return out


class DaskRows:
    """The rows of a weighted logistic fit (weights 1) on a :class:`CalEM` model's Dask data:
    the treated rows with their labels ``z`` (``labels=None``) or the E-step labels at
    ``theta_t`` (``labels=theta_t``), plus, with ``control=True``, the control rows with
    ``y``. The same interface as :class:`~.calibrators.ArrayRows`. Each pass returns every
    sum at once: the Gram matrix comes with the sums at ``start`` (the fit's first point)."""

    def __init__(self, data: DaskData, cal, basis, eta_hat, *, labels=None, control=False,
                 start=None):
        self.data, self.cal, self.basis, self.eta_hat = data, cal, basis, eta_hat
        self.labels, self.control = labels, control
        self.Xc = cal.design(basis, data.s_c) if control else None
        self.k = len(cal.param_names(basis))
        self.n = data.n_treated + (data.s_c.size if control else 0)
        self.start = np.zeros(self.k) if start is None else np.array(start, dtype=float)
        self._last = {}

    @property
    def weight_sum(self) -> float:
        return float(self.n)

    def _control(self, func):
        return func(self.Xc, self.data.y) if self.control else None

    def gram(self):
        return self._sums(self.start)["gram"]

    def _sums(self, b):
        key = b.tobytes()
        if self._last.get("key") != key:
            gram = bool(np.array_equal(b, self.start))  # the fit's first pass
            f = functools.partial(_logistic_treated, self.cal, self.basis, self.eta_hat,
                                  self.labels, b, gram)
            extra = self._control(functools.partial(_logistic_block, b, gram))
            self._last = {"key": key, "S": self.data.reduce(f, extra=extra,
                                                            combine=_combine_max)}
        return self._last["S"]

    def objective(self, P):
        def fun(b, order):
            S = self._sums(b)
            f = S["f"] - 0.5 * b @ P @ b
            if order == 0:
                return f
            return f, S["g"] - P @ b, S["H"] - P

        return fun

    def max_abs_eta(self, theta) -> float:
        return self._sums(theta)["amax"]

    def loglik(self, theta) -> float:
        return self._sums(theta)["f"]


# ---------------------------------------------------------------------------------------------
# the CalEM engine
# ---------------------------------------------------------------------------------------------
_SUMS = ("F", "Q", "G", "J", "HQ")


def _engine_treated(cal, basis, eta_hat, theta, s_t, z):
    X = cal.design(basis, s_t)
    out = block_sums(Rows(X, 0, np.empty(0), z, X @ eta_hat), theta, jac=True, hq=True)
    return {k: out[k] for k in _SUMS}


def _q_treated(cal, basis, eta_hat, theta_t, theta, s_t, z):
    X, a = _design_labels(cal, basis, eta_hat, theta_t, s_t, z)
    return weighted_loglik(X @ theta, a, np.ones(a.size))


def _sandwich_h_treated(cal, basis, eta_hat, theta, known, s_t, z):
    """The sandwich's block sums and :func:`_h_block` of the treated rows (``known``: the
    known ``h`` of the fit, or None)."""
    X = cal.design(basis, s_t)
    r = Rows(X, 0, np.empty(0), z, X @ eta_hat)
    h = None if known is None else known_h_values(known, s_t)
    hb = _h_block(r, theta, h)
    eta = X @ theta
    i = int(np.argmax(np.abs(eta))) if eta.size else None
    hb["eta_ext"] = [] if i is None else [(float(eta[i]), float(s_t[i]))]  # (lists concatenate)
    return sandwich_block(r, theta), hb


def _h_block(r, theta, h=None):
    """The treated rows' ``h`` (the implied one, or the known ``h`` given): clipped shares and
    the mean over positives (sums)."""
    z = r.z
    if h is None:
        _, h = soft_labels(z, expit(r.X @ theta), r.g_eta_t)
    out = (h < 0) | (h > 1)
    pos = z == 1
    return {"n": h.size, "clipped": int(out.sum()), "pos": int(pos.sum()),
            "clipped_pos": int(out[pos].sum()), "h_pos": float(np.clip(h[pos], 0, 1).sum())}


class DaskEngine(ParametricEngine):
    """:class:`~._engine.ParametricEngine` whose treated rows are Dask blocks.

    The control rows are one in-memory block; every row sum is that block's plus the treated
    blocks' (one pass). E-step labels are carried as the parameters they were computed at
    (``estep`` returns ``theta``): the labels of a treated row are a function of its score and
    ``z`` given them, recomputed inside each block.
    """

    def __init__(self, cal, basis, data: DaskData, eta_hat, P):
        self.cal, self.basis, self.data = cal, basis, data
        self.eta_hat = np.asarray(eta_hat, dtype=float)
        Xc = cal.design(basis, data.s_c)
        self.nc = data.s_c.size
        self.y = data.y
        self.control = Rows(Xc, self.nc, data.y, np.empty(0), np.empty(0))
        k = Xc.shape[1]
        self.P = np.zeros((k, k)) if P is None else P
        self._last = {}

    def _sums(self, theta):
        key = theta.tobytes()
        if self._last.get("key") != key:
            c = block_sums(self.control, theta, jac=True, hq=True)
            S = self.data.reduce(functools.partial(_engine_treated, self.cal, self.basis,
                                                   self.eta_hat, theta),
                                 extra={k: c[k] for k in _SUMS})
            self._last = {"key": key, "S": S}
        return self._last["S"]

    def evaluate(self, theta, *, grad=True, jac=False):
        S = self._sums(np.asarray(theta, dtype=float))
        pen = 0.5 * theta @ self.P @ theta
        return {"F": S["F"] - pen, "pen": pen, "Q": S["Q"] - pen, "G": S["G"] - self.P @ theta,
                "J": S["J"] - self.P, "HQ": S["HQ"]}

    def estep(self, theta):
        return np.array(theta, dtype=float), None

    def q(self, theta, a):
        extra = weighted_loglik(self.control.X @ theta, self.y, np.ones(self.nc))
        val = self.data.reduce(functools.partial(_q_treated, self.cal, self.basis,
                                                 self.eta_hat, a, theta), extra=extra)
        return val - 0.5 * theta @ self.P @ theta

    def mstep_labels(self, a, start):
        from .calibrators import logistic_fit_rows

        rows = DaskRows(self.data, self.cal, self.basis, self.eta_hat, labels=a, control=True)
        theta, *_ = logistic_fit_rows(rows, penalty=self.P if np.any(self.P) else None,
                                      start=start)
        return theta

    def fitted(self, theta):
        names = self.cal.param_names(self.basis)
        ev = self.evaluate(theta)
        n = int(self.nc + self.data.n_treated)
        return FittedCalibrator(self.cal, self.basis, pd.Series(theta, index=names),
                                ev["Q"] + ev["pen"], n, float(n), self.edf(theta), True, 0,
                                None, [])

    def sandwich(self, theta, joint: bool = False):
        return sandwich_from_sums(self.sandwich_and_h(theta)[0], self.P, joint)

    def sandwich_and_h(self, theta, known=None):
        """The sandwich's block sums and the statistics of ``h`` at ``theta`` (of the known
        ``h`` where given): one pass."""
        S = self.data.reduce(functools.partial(_sandwich_h_treated, self.cal, self.basis,
                                               self.eta_hat, theta, known),
                             extra=(sandwich_block(self.control, theta), None))
        return S


# ---------------------------------------------------------------------------------------------
# the model and the fit
# ---------------------------------------------------------------------------------------------
def init_dask(model, score, label, treated):
    """:class:`CalEM`'s constructor for Dask collections: one validation pass (counts, the
    control rows, score sketches), then the same checks as in memory."""
    dask = require_dask()
    blocks = row_blocks({"score": score, "label": label, "treated": treated})
    summary = reduce_blocks(functools.partial(_summary_block, model.missing, model.calibrator),
                            blocks)
    if summary is None:
        raise ValueError("score: the Dask collections hold no rows")
    data = DaskData(blocks, model.eps, model.missing, summary,
                    dask.base.tokenize(score, label, treated, model.missing, model.eps))
    model._dask = data
    model._edge_bounds = data.bounds
    model.index = None
    model.score = model.label = model.treated = None
    model.n_dropped = data.n_dropped
    if data.n_edge:
        warn_and_record(model._init_warnings, edge_message(data.n_edge, data.bounds),
                        ClippingWarning)
    if summary["n_near"]:
        warn_and_record(model._init_warnings,
                        near_edge_message(summary["n_near"], model.calibrator), ClippingWarning)
    model.n_control, model.n_treated = int(data.s_c.size), int(data.n_treated)
    model._check_groups(data.y.sum(), data.pos_treated, data.hist_treated)
    model.score_name = "score"
    # a named score Series names the score column of later frames, as in memory
    meta = getattr(score, "_meta", None)
    model._score_label = meta.name if isinstance(meta, pd.Series) else None


def from_formula_dask(cls, formula, data, *, treated, score=None, eps=1e-6, missing="raise"):
    """``CalEM.from_formula`` on a Dask DataFrame: the left-hand side is the label column,
    ``treated`` a column name, the right-hand side a formula calibrator in the score column."""
    if not isinstance(formula, str) or "~" not in formula:
        raise ValueError(f"formula must be a string like 'y ~ logit(score)'; got {formula!r}")
    from ...formula import lhs_column

    given, rhs = (p.strip() for p in formula.split("~", 1))
    cols = list(data.columns)
    lhs = lhs_column(formula, data._meta)  # a column, named or quoted as Q("y"), as in memory
    if lhs is None:
        raise ValueError(f"formula: with a Dask DataFrame the left-hand side must be a column "
                         f"name; {given!r} is not one")
    if not isinstance(treated, str) or treated not in cols:
        raise ValueError(f"treated: with a Dask DataFrame give the treated column's name; got "
                         f"{treated!r}")
    score = formula_score(rhs, data._meta, score, exclude=(lhs,))
    cal = FormulaCalibrator("~" + rhs, score_name=score)
    model = cls(data[score], data[lhs], data[treated], calibrator=cal, eps=eps,
                missing=missing)
    model.score_name = score
    return model


def _check_calibrator(cal):
    if not cal.parametric:
        raise NotImplementedError(
            "the isotonic calibrator cannot be fitted on Dask collections: weighted isotonic "
            "regression (PAVA) needs all distinct scores in order, which is not a sum over "
            "blocks; use a parametric calibrator ('spline', 'beta', 'logistic', a formula) or "
            "compute() the data")


def _formula_basis(cal, s_c):
    """A formula calibrator's basis, if the formula has no stateful transform (its design is
    then the same function of the score whatever rows it was built on)."""
    basis = cal.make_basis(s_c)
    stateful = []
    for factor, finfo in basis._info().factor_infos.items():
        state = getattr(finfo, "state", None) or {}
        if state.get("transforms"):
            stateful.append(factor.name())
    if stateful:
        raise NotImplementedError(
            f"formula calibrator {cal.formula!r}: the term(s) {stateful} learn their state "
            "(knots, centring...) from all scores in memory, which is not done on Dask "
            "collections; use calibrator='spline' (exact knots from all scores) or a formula "
            "without stateful transforms, e.g. '~ logit(score) + I(logit(score)**2)'")
    return basis


def make_basis(model):
    """The calibrator's basis from all scores (the spline's knots are exact quantiles; other
    parametric calibrators need no data), and the quantiles of the scores behind the
    results' plotting grid: one pass."""
    from .calibrators import SplineCalibrator

    cal, data = model.calibrator, model._dask
    if isinstance(cal, SplineCalibrator) and cal.knots is None:
        qx, grid = data.quantiles((np.linspace(0.0, 1.0, cal.df), cal.logit_score),
                                  (GRID_Q, None))
        return cal.basis_from_quantiles(qx), grid
    (grid,) = data.quantiles((GRID_Q, None))
    if isinstance(cal, FormulaCalibrator):
        return _formula_basis(cal, data.s_c), grid
    return cal.make_basis(data.s_c), grid


class _Setup:
    def __init__(self, engine, basis, baseline, biased, warnings):
        self.engine, self.basis, self.baseline, self.biased = engine, basis, baseline, biased
        self.warnings = warnings


def setup_dask(model):
    """:func:`~._engine.setup` on Dask data: basis, control-only fit (in memory), biased fit
    and the pooled-rows engine (block sums)."""
    from ... import exceptions as _exc
    from ._engine import _fit_set

    cal, data = model.calibrator, model._dask
    _check_calibrator(cal)
    data.check_available()
    basis, data.score_grid_q = make_basis(model)
    k = len(cal.param_names(basis))
    for who, m in (("control", data.s_c.size), ("treated", data.n_treated)):
        if m <= k:
            raise ValueError(
                f"calibrator: the {who} set has {m} row(s) for the {cal.name} calibrator's "
                f"{k} parameters; each set needs more rows than parameters (more data, or "
                "a calibrator with fewer parameters)")
    # column-major as in memory (``setup``): the same baseline fit, bit for bit
    baseline = _fit_set("control", cal, basis, np.asfortranarray(cal.design(basis, data.s_c)),
                        data.y)
    start = baseline._params.to_numpy()
    try:
        biased = cal._fit_rows(basis, DaskRows(data, cal, basis, None, start=start),
                               start=start)
    except np.linalg.LinAlgError as exc:
        raise ValueError(f"treated set: the {cal.name} calibrator cannot be fitted ({exc}); "
                         "too few rows or distinct scores?") from None
    except ValueError as exc:
        raise ValueError(f"treated set: {exc}") from None
    engine = DaskEngine(cal, basis, data, biased._params.to_numpy(), cal.penalty(basis))
    warns = []
    for f, who in ((baseline, "control"), (biased, "treated")):
        for cat, msg in f.warnings:
            warn_and_record(warns, f"{who} fit: {msg}", getattr(_exc, cat, _exc.PuinferWarning))
    return _Setup(engine, basis, baseline, biased, tuple(warns))


def fit_calem_dask(model, *, method, maxiter, tol, h) -> CalEMFit:
    """:func:`~._engine.fit_calem` on Dask data (the same solvers, on :class:`DaskEngine`)."""
    cal = model.calibrator
    _check_calibrator(cal)
    method = check_fit_options(cal, method, maxiter, tol, h)
    passes0 = model._dask.passes
    st = setup_dask(model)
    eng, warns = st.engine, list(model.init_warnings) + list(st.warnings)
    # (as in memory: over the control scores' range, which are in memory)
    no_bias_warning(warns, cal, st.basis, model._dask.s_c, h)
    if h is not None:  # one weighted fit; h(score) is evaluated (and checked) in the blocks
        theta, trace, conv = _known_h_fit(eng, eng.theta_of(st.baseline), KnownH(h))
        method = "known h"
    else:
        theta, trace, conv = run_solver(method, eng, eng.theta_of(st.baseline), maxiter, tol)
        if not conv.converged:
            warn_and_record(warns, f"CalEM ({method}) did not converge: {conv.message}",
                            ConvergenceWarning)
    data = model._dask
    # one Newton step from the biased fit, summed on the control rows (in memory): a pass
    # over the partitions saved, as in memory
    start = pooled_start(np.asfortranarray(cal.design(st.basis, data.s_c)), data.y, st.biased)
    pooled = cal._fit_rows(st.basis, DaskRows(data, cal, st.basis, None, control=True,
                                              start=start), start=start)
    _pooled_warnings(pooled, warns)
    S, hs = eng.sandwich_and_h(theta, h)  # h's statistics: of the known h if given
    cov_joint = None if h is not None else sandwich_from_sums(S, eng.P, joint=True)
    if h is None and cov_joint is None and cal.parametric:
        no_sandwich_warning(warns)
    k = theta.size
    h_stats = {"share_clipped": hs["clipped"] / hs["n"],
               "share_clipped_positives": (hs["clipped_pos"] / hs["pos"] if hs["pos"]
                                           else float("nan")),
               "mean_h_treated_positives": (hs["h_pos"] / hs["pos"] if hs["pos"]
                                            else float("nan"))}
    # the fit's extreme log-odds on all rows (control rows first, as in memory)
    eta_c = eng.control.X @ theta
    i = int(np.argmax(np.abs(eta_c)))
    extreme_fit_warning(warns, theta, *max([(float(eta_c[i]), float(data.s_c[i])),
                                            *hs["eta_ext"]], key=lambda e: abs(e[0])))
    fitted = eng.fitted(theta)
    ev = eng.evaluate(theta)  # (17) at the fixed point: Q(theta | theta), E-step at theta
    q17 = ev["Q"] if h is None else eng.q(theta, KnownH(h))  # (17) with the known h
    fit = CalEMFit(st.basis, fitted, st.baseline, st.biased, pooled, None,
                   float(q17), float(ev["F"]),
                   eng.penalty_value(theta), None if cov_joint is None else cov_joint[:k, :k],
                   trace, conv, method, tuple(warns), h_stats=h_stats, cov_joint=cov_joint)
    data.fit_passes = data.passes - passes0
    return fit


def predict_dask(fitted, score, name, read):
    """A fitted calibrator's predictions on a Dask array/Series, block by block (lazy); the
    scores checked and taken as the fit took them (``read``: the model's rule,
    :func:`.calibrators.edge_scores_moved` with its bounds), as in memory."""
    require_dask()
    import dask.array as da

    def pred(block):
        if len(block) == 0:  # (e.g. after a filter; as_float_vector refuses empty data)
            return np.empty(0)
        # (a refusal's count is the block's: said so, session 85's audit)
        return in_one_partition(lambda b: fitted.predict(read(as_float_vector(b, "score"))),
                                block)

    def f(part):
        out = pred(part)
        return pd.Series(out, index=part.index, name=name) if isinstance(part, pd.Series) \
            else out

    if isinstance(score, da.Array):
        if score.ndim == 2 and score.shape[1] == 1:  # an (n, 1) column: as in memory
            return score.map_blocks(lambda b: pred(b[:, 0]), dtype=float, drop_axis=1)
        return score.map_blocks(pred, dtype=float)
    if is_dask(score) and hasattr(score, "map_partitions"):
        return score.map_partitions(f, meta=pd.Series(dtype=float, name=name))
    raise TypeError(f"score: expected a Dask array or Series; got {type(score).__name__}")
