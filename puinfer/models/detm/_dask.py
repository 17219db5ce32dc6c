"""DETM and SETM on Dask collections: the same fit, its row sums added over the blocks.

``DETM(source_ddf, target_ddf)`` (Dask DataFrames or arrays, one per sample) or
``DETM.from_formula("labeled ~ x1 + x2", data=ddf)`` (one Dask DataFrame with the 0/1
indicator) keep every row in the Dask collections. :class:`DaskTiltData` stands in for the
in-memory :class:`~._data.TiltData`: the fit (:func:`~.model.fit_data`), the fit record, the
label rule and the profile of pi run unchanged, and each quantity they need from the rows --
always a sum over rows -- is computed by the in-memory code's own functions on each block of
rows and added up the tree on the scheduler in use (:func:`puinfer._dask.reduce_blocks`):

* the pi-free objective (route 1 of :mod:`._el`): :func:`~._el.free_objective`; value,
  gradient and Hessian in one pass (a line search's accepted point costs no second pass);
* the profile log-EL at fixed pi (eq. 12): the multipliers of eq. (11) are solved by Newton's
  method on their convex dual, each step one pass that also returns, at those multipliers, the
  derivative sums of :func:`~._el.profile_sums` (finished by :func:`~._el.profile_finish`
  once the multipliers are converged) and the slope and cross-derivative in pi
  (:func:`~._el.pi_slope`, :func:`~._el.pi_cross`). The multipliers start from their
  first-order prediction ``lambda + d lambda / d theta (theta - theta_last)`` at the last point
  evaluated, so that a Newton iteration in theta costs about two or three passes;
* the KL label rule and its sandwich SE (:func:`~._label.kl_divergences`,
  :func:`~._label.stacked_at`), the alpha normalisation, pi of a solution.

The global-maximum search is the in-memory one's large-sample route, at every size: the first
pass draws a seeded uniform sample of the rows (all of them up to
``2 * SUBSAMPLE_SIZE`` rows, else ``SUBSAMPLE_SIZE``, as :func:`~._starts.subsample`), every
start runs on it in memory, and its best maxima are polished by Newton's method on all rows;
the probe (:func:`~._profile.probe`: the 95% profile interval, the points beyond it and inside
it, a skeleton of profile solutions from the sample) then runs its checks on all rows, and
restarts from any point where the profile rises above the fit (or away from pi-hat). The final
estimates are always a maximum of the full-data objective (never the sample's), equal to the
in-memory fit on the same rows up to the order of the additions (tested to 1e-9 relative).
:attr:`DaskTiltData.passes` counts the passes.

Small data: up to :data:`LOCAL_ROWS` rows (``2 * SUBSAMPLE_SIZE``) the first pass's sample *is*
every row, already held in memory; the pi-free search runs on it as an in-memory fit's does
(every start, its runs the starts table), and every later pass adds the same block sums over
those rows in memory, not over the Dask partitions (:meth:`DaskTiltData.reduce`; no task
reaches the scheduler or cluster): the same functions of the same rows and the same searches;
only the order of the additions differs (so rounding can send a search down a slightly
different path, to the same answer within 1e-9 in the tests). A Dask computation costs
milliseconds of scheduling whatever the rows, and the profile's searches can make thousands
of passes: on 800 rows where pi is not identified (pi-hat 0.80, the 95% interval all of
[0, 1]; found in session 61) the fit made 11,768 passes, 140 s on the synchronous scheduler
(9,397 of them in the probe's label-boundary searches, 8,680 in four by SLSQP near pi = 1), in
memory 2.3 s; now about 6 s. Larger data take the partition route (``LOCAL_ROWS = 0`` forces
it: the tests of the block sums).
:attr:`DaskTiltData.dask_passes` counts the passes computed on the Dask collections.

Not distributed: the bootstrap (``test_scar(reference="bootstrap")``,
``conf_int_pi(method="bootstrap")``: resampling rows with EL weights needs them in memory),
the convex-hull linear programmes of the separation check (they need every source point), the
per-row EL weights and posteriors (``el_weights``, ``predict()`` of the fitted target rows:
use ``predict(target_ddf)``, lazy) and formulas with transforms or interactions (compute the
columns in the Dask DataFrame first). A formula's plain columns are coded as in memory
(:func:`_coding`): True/False, categorical and text columns by the in-memory design's
contrasts, names and column order.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from ..._align import drop_missing
from ..._dask import add_sums, in_one_partition, reduce_blocks, require_dask, row_blocks
from ..._validation import SCALE_LIMIT, _full_coding_hint, _level_hint, as_float_matrix, check_binary
from ...base.numeric import logaddexp, softplus
from . import _el
from ._data import TiltData, dropped_by_sample
from ._starts import SUBSAMPLE_SIZE

__all__ = ["DaskTiltData", "init_dask", "from_formula_dask", "refuse"]

#: rows per slice of a partition in a pass (bounds the temporaries of the block sums)
_SLICE = 1 << 17
#: rows per sample kept by each block in the first pass (the starts' sample is drawn from them)
_KEEP = 2 * SUBSAMPLE_SIZE
#: seed of the sample's uniform keys (block ``i`` uses ``[_SEED, i]``)
_SEED = 20_161
#: up to this many rows (at most ``2 * SUBSAMPLE_SIZE``: the first pass's sample is then every
#: row) the passes after the first add the block sums over the rows held in memory
LOCAL_ROWS = 2 * SUBSAMPLE_SIZE


# ---------------------------------------------------------------------------------------------
# reading a block: the in-memory model's validation, per partition
# ---------------------------------------------------------------------------------------------
def _as_matrix(x, name, names):
    """A block of one sample as a float matrix (``names``: columns selected by name)."""
    if isinstance(x, pd.Series):
        x = x.to_frame()
    if isinstance(x, pd.DataFrame) and names is not None:
        x = x[list(names)]
    if len(x) == 0:
        return np.empty((0, len(names) if names is not None else np.shape(x)[1]))
    return as_float_matrix(x, name)[0]


def _read(spec, a, b):
    """A block's rows: ``(Xs, Xt, dropped source, dropped target, dropped unknown)``.

    ``spec = (names, indicator, missing[, coding])``; with an indicator column, ``a`` is a
    partition of the one data frame and ``b`` None; else ``a`` / ``b`` a block of the source /
    target. A :class:`~puinfer.formula.ColumnCoding` ``coding`` (a formula's categorical or
    quoted columns) codes the columns it reads into the design columns ``names``."""
    names, indicator, missing, coding = (*spec, None)[:4]
    cols = list(names) if coding is None else list(coding.columns)
    if indicator is not None:
        from ...formula import _clean

        # the formula's rule for the columns it uses (missing values refused, naming the
        # columns with their counts in this partition, or their rows dropped)
        frame, keep = _clean(a, [indicator, *cols], "data", missing)
        lab = check_binary(frame[indicator], f"indicator {indicator!r}") if len(frame) \
            else np.empty(0)
        X = _as_matrix(frame[cols] if coding is None else coding.code(frame[cols]), "data",
                       names)
        if keep is None:
            return X[lab == 1], X[lab == 0], 0, 0, 0
        # the dropped rows' samples, where their indicator says (as in memory)
        counts = dropped_by_sample(a[indicator][~keep])
        if counts is not None:
            return X[lab == 1], X[lab == 0], *counts, 0
        return X[lab == 1], X[lab == 0], 0, 0, int((~keep).sum())
    out, ks = [], []
    for x, nm in ((a, "source"), (b, "target")):
        if x is None:
            out.append(np.empty((0, len(names))))
            ks.append(0)
            continue
        if isinstance(x, pd.Series):
            x = x.to_frame()
        if isinstance(x, pd.DataFrame):
            have = [str(c) for c in x.columns]
            absent = [c for c in cols if c not in have]
            if absent:
                raise ValueError(f"{nm} lacks the column(s) {absent}")
            if list(x.columns) != cols:  # (exactly these columns, as text: read as it is)
                x = x.rename(columns=str)[cols]
        k = 0
        if coding is not None:
            from ...formula import _clean

            # the formula's rule for its columns, as on the indicator's route above
            x, keep = _clean(x, cols, nm, missing)
            out.append(_as_matrix(coding.code(x, nm), nm, names))
            ks.append(0 if keep is None else int((~keep).sum()))
            continue
        if missing == "drop":
            if not isinstance(x, pd.DataFrame):
                # (the width given: numpy cannot reshape an empty block with -1, and a
                # sample split from one array by a label mask has empty blocks; session
                # 85's audit)
                x = pd.DataFrame(np.asarray(x, dtype=float).reshape(len(x), len(names)))
            got, _, k = drop_missing({nm: x}, None, missing)
            x = got[nm]
        out.append(_as_matrix(x, nm, None))
        ks.append(int(k))
    return out[0], out[1], ks[0], ks[1], 0


def _slices(spec, mean, sd, a, b):
    """The block's rows as in-memory :class:`TiltData` slices of at most ``_SLICE`` rows, each
    all-source or all-target, standardised with the full data's mean and sd."""
    names = spec[0]
    Xs, Xt, *_ = _read(spec, a, b)
    for X, target in ((Xs, False), (Xt, True)):
        for i in range(0, X.shape[0], _SLICE):
            Xi = X[i:i + _SLICE]
            r = Xi.shape[0]
            n, m = (0, r) if target else (r, 0)
            yield TiltData(Xi, np.full(r, float(target)), list(names), mean, sd, n, m)


def _combine(a, b):
    """Add block results; keys starting ``min_`` / ``max_`` take the minimum / maximum and
    ``lse_`` the log-sum-exp."""
    if a is None or b is None:
        return a if b is None else b
    out = {}
    for k in dict.fromkeys([*a, *b]):
        x, y = a.get(k), b.get(k)
        if x is None or y is None:
            out[k] = x if y is None else y
        elif k.startswith("min_"):
            out[k] = np.minimum(x, y)
        elif k.startswith("max_"):
            out[k] = np.maximum(x, y)
        elif k.startswith("lse_"):
            out[k] = np.logaddexp(x, y)
        else:
            out[k] = add_sums(x, y)
    return out


def _on_slices(func, spec, mean, sd, a, b):
    out = None
    for blk in _slices(spec, mean, sd, a, b):
        out = _combine(out, func(blk))
    return out


# ---------------------------------------------------------------------------------------------
# the first pass: counts, moments, the rank checks' statistics and the starts' sample
# ---------------------------------------------------------------------------------------------
def _keep(keys, X, k):
    """The ``k`` rows with the smallest keys."""
    if keys.size > k:
        i = np.argpartition(keys, k)[:k]
        keys, X = keys[i], X[i]
    return keys, X


def _first_block(spec, idx, a, b):
    Xs, Xt, ks, kt, ku = in_one_partition(_read, spec, a, b)
    X = np.vstack([Xs, Xt])
    r = X.shape[0]
    out = {"n": Xs.shape[0], "m": Xt.shape[0], "ks": ks, "kt": kt, "ku": ku}
    if r == 0:
        return out
    mean = X.mean(axis=0)
    C = (X - mean).T @ (X - mean)
    keys = np.random.default_rng([_SEED, idx]).random(r)
    out.update(moments=(r, mean, C), max_abs=np.abs(X).max(axis=0), min_x=X.min(axis=0),
               max_x=X.max(axis=0),
               sample=(_keep(keys[:Xs.shape[0]], Xs, _KEEP), _keep(keys[Xs.shape[0]:], Xt, _KEEP)))
    return out


def _merge_moments(a, b):
    """Chan et al.'s pairwise update of (count, mean, centred cross-products)."""
    na, ma, Ca = a
    nb, mb, Cb = b
    n = na + nb
    d = mb - ma
    return n, ma + d * (nb / n), Ca + Cb + np.outer(d, d) * (na * nb / n)


def _combine_first(a, b):
    if a is None or b is None:
        return a if b is None else b
    out = {k: a[k] + b[k] for k in ("n", "m", "ks", "kt", "ku")}
    if "moments" not in a or "moments" not in b:
        return {**(a if "moments" in a else b), **out}
    out["moments"] = _merge_moments(a["moments"], b["moments"])
    out["max_abs"] = np.maximum(a["max_abs"], b["max_abs"])
    out["min_x"] = np.minimum(a["min_x"], b["min_x"])
    out["max_x"] = np.maximum(a["max_x"], b["max_x"])
    out["sample"] = tuple(_keep(np.r_[ka, kb], np.vstack([Xa, Xb]), _KEEP)
                          for (ka, Xa), (kb, Xb) in zip(a["sample"], b["sample"], strict=True))
    return out


def _check_design(names, N, S):
    """:func:`~puinfer._validation.check_full_rank` of ``[1, X]`` from the first pass's
    statistics: constant columns, extreme scales, and collinearity from the correlation
    matrix (its smallest eigenvalue below ``1e-12`` of the largest). The correlation matrix
    squares the condition number, so its eigenvalues resolve ratios down to about 1e-15 only
    (exactly collinear columns gave up to 3e-15): in memory the QR factor of the standardised
    columns refuses at ``1e-20 N`` of that ratio, so designs with a ratio between the two
    (nearly collinear: a column equal to another plus noise of 1e-6 of its spread) are
    refused on Dask only."""
    k = len(names)
    if N <= k + 1:
        raise ValueError(f"design: {N} rows for {k + 1} columns; need more rows than parameters")
    const = [names[j] for j in range(k) if S["max_x"][j] == S["min_x"][j]]
    if const:
        own = (" (the model has its own intercept: leave out the design's intercept column)"
               if "Intercept" in const else "")
        # (with the in-memory hint for an indicator of a category without rows)
        raise ValueError(f"design: constant column(s) {const} (zero variance); drop them{own}"
                         + _level_hint(const))
    _, mean, C = S["moments"]
    sd = np.sqrt(np.diag(C) / N)
    for j, nm in enumerate(names):
        big = S["max_abs"][j]
        if big > SCALE_LIMIT or 0 < sd[j] < 1 / SCALE_LIMIT:
            what = f"values up to {big:.3g}" if big > SCALE_LIMIT else f"a spread (sd) of {sd[j]:.3g}"
            raise ValueError(f"design: column {nm!r} has {what}: its scale is the problem, not "
                             "collinearity; rescale it (multiply or divide by a power of 10) "
                             "so that its values are of moderate size")
    # (each side divided on its own: the product of two sums of squares overflowed from
    # values of about 1e77 and underflowed below spreads of about 1e-77, so a well-scaled
    # design was called collinear and an exactly collinear one passed with NaN eigenvalues;
    # session 85's audit)
    s = np.sqrt(np.diag(C))
    R = C / s[:, None] / s[None, :]
    if not np.all(np.isfinite(R)):
        raise ValueError("design: the columns' sums of squares overflow in double precision; "
                         "rescale the columns (multiply or divide by a power of 10) so that "
                         "their values are of moderate size")
    ev, V = np.linalg.eigh(R)
    if ev[0] <= 1e-12 * ev[-1]:
        v = V[:, 0]
        involved = [names[j] for j in np.flatnonzero(np.abs(v) > 1e-6 * np.abs(v).max())]
        raise ValueError(f"design: collinear columns {involved} (the design is singular); "
                         "drop one" + _full_coding_hint(involved, True))
    return mean, sd


# ---------------------------------------------------------------------------------------------
# block sums
# ---------------------------------------------------------------------------------------------
def _free_block(v, blk):
    f, g, H = _el.free_objective(v, blk.Z, blk.y, 0.0, 2, blk.X1)
    return {"f": f, "g": g, "H": H}


def _v_block(vs, blk):
    """For each binary-regression solution ``v`` of ``vs`` (rows), the sums behind pi and the
    KL divergences of the label rule: ``sum_target expit(eta1 - eta2)`` (pi times m, as
    :func:`~._starts.pi_of_v`) and, with ``e_i = 1 / (1 + S_i)`` (n times the EL weight),
    ``sum e_i``, ``sum e_i z_i'b1``, ``sum e_i z_i'b2`` (:func:`~._label.kl_divergences`:
    ``KL_t = -(alpha_t sum e_i + sum e_i z_i'b_t) / n``, alpha_t depending on pi only)."""
    from ._starts import pi_of_v

    out = np.zeros((len(vs), 4))
    for j, v in enumerate(vs):
        s1, b1, s2, b2 = _el.split(v, blk.p)
        zb1, zb2 = blk.Z @ b1, blk.Z @ b2
        e = np.exp(-softplus(logaddexp(s1 + zb1, s2 + zb2)))
        out[j] = (pi_of_v(blk, v) * blk.m if blk.m else 0.0, e.sum(), e @ zb1, e @ zb2)
    return {"v": out}


def _alpha_block(v, n, blk):
    """The log-sum-exp of :func:`~._record.normalise_alphas` over a slice's rows."""
    p = blk.p
    s1, b1, s2, b2 = _el.split(v, p)
    logS = logaddexp(s1 + blk.Z @ b1, s2 + blk.Z @ b2)
    logp = -softplus(logS) - np.log(n)
    return {"lse_a": np.array([np.logaddexp.reduce(logp + blk.Z @ b1),
                               np.logaddexp.reduce(logp + blk.Z @ b2)])}


def _g_block(v, blk):
    """The sums behind ``g`` of :func:`~._label._stacked`."""
    s1, b1, s2, b2 = _el.split(v, blk.p)
    eta1, eta2 = s1 + blk.Z @ b1, s2 + blk.Z @ b2
    inv1pS = np.exp(-softplus(logaddexp(eta1, eta2)))
    return {"num": float(np.sum(inv1pS * (eta1 - eta2))), "den": float(np.sum(inv1pS))}


def _stacked_block(v, pi, g, blk):
    """The Jacobian sums of :func:`~._label.stacked_at` and the within-sample moments of the
    rows' ``psi`` (source and target apart)."""
    from ._label import psi_rows, stacked_at

    F, A = stacked_at(blk.Z, blk.X1, blk.y, v, 0.0, pi, g)
    psi = psi_rows(blk.X1, F)
    key = "t" if blk.m else "s"
    return {"A": A, f"{key}_n": psi.shape[0], f"{key}_sum": psi.sum(axis=0),
            f"{key}_mom": psi.T @ psi}


def _profile_block(theta, pi, lam, with_pi, cands, blk):
    """At ``(theta, pi)`` and multipliers ``lam``: the sums of the multipliers' Newton system
    (eq. 11), the value's sums and, where every ``1 + lambda'z_i > 0``, the derivative sums of
    :func:`~._el.profile_sums` and the slope and cross-derivative in pi; for each row of
    ``cands`` (further multipliers: a line search's shorter steps) ``min_i D_i`` and
    ``sum_i log D_i``."""
    p = blk.p
    a1, b1, a2, b2 = _el.split(theta, p)
    Z = blk.Z
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        zb1, zb2 = _el.tilts(Z, b1, b2)
        eta1 = a1 + zb1
        eta2 = a2 + zb2
        z1 = np.expm1(eta1)
        z2 = np.expm1(eta2)
        D = 1.0 + z1 * lam[0] + z2 * lam[1]
        az = [np.abs(z) for z in (z1, z2)]
        out = {"max_z": np.array([np.max(a[~np.isnan(a)], initial=0.0) for a in az]),
               "min_D": float(D.min(initial=np.inf)),
               "min_zs": np.array([np.min(z1, initial=np.inf), np.min(z2, initial=np.inf)]),
               "max_zs": np.array([np.max(z1, initial=-np.inf), np.max(z2, initial=-np.inf)])}
        if cands is not None:
            Dc = 1.0 + np.outer(z1, cands[:, 0]) + np.outer(z2, cands[:, 1])
            out["min_cand"] = Dc.min(axis=0, initial=np.inf)
            out["cand_logD"] = np.log(np.where(Dc > 0, Dc, 1.0)).sum(axis=0)
        if not out["min_D"] > 0:
            return out
        r1, r2 = z1 / D, z2 / D
        out.update(logD=float(np.log(D).sum()), gl=np.array([r1.sum(), r2.sum()]),
                   gl_abs=np.array([np.abs(r1).sum(), np.abs(r2).sum()]),
                   etaD=np.array([eta1 @ (1.0 / D), eta2 @ (1.0 / D)]))
        tmask = blk.y == 1
        lpi, l1pi = np.log(pi), np.log1p(-pi)
        e1t = lpi + eta1[tmask]
        e2t = l1pi + eta2[tmask]
        logmix = logaddexp(e1t, e2t)
        grad, H, Hlt, Hll, _, _ = _el.profile_sums(blk.X1, eta1, eta2, z1, z2, lam, D, tmask,
                                                    e1t, e2t, logmix, with_pi)
        out.update(logmix=float(logmix.sum()), grad=grad, H=H, Hlt=Hlt, Hll=Hll)
        if blk.m:
            out.update(dpi=_el.pi_slope(theta, pi, Z), cross=_el.pi_cross(theta, pi, Z, blk.X1))
    return out


def _gap_block(theta, lam, blk):
    """:func:`~._el.label_gap_sums` of the rows at the multipliers ``lam``."""
    a1, b1, a2, b2 = _el.split(theta, blk.p)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        zb1, zb2 = _el.tilts(blk.Z, b1, b2)
        eta1, eta2 = a1 + zb1, a2 + zb2
        z1, z2 = np.expm1(eta1), np.expm1(eta2)
        D = 1.0 + z1 * lam[0] + z2 * lam[1]
        return _el.label_gap_sums(eta1, eta2, z1, z2, lam, D, blk.X1)


# ---------------------------------------------------------------------------------------------
# the data
# ---------------------------------------------------------------------------------------------
class DaskTiltData:
    """The pooled sample of a DETM/SETM model given as Dask collections (see the module
    docstring): the interface of :class:`~._data.TiltData` that the fit uses, each row
    quantity a block sum.

    Attributes
    ----------
    n, m : int
        Source and target rows.
    names, mean, sd :
        Feature names and the full data's mean and sd (the internal standardisation).
    fingerprint : str
        Dask's token of the collections (identifies the data for :func:`puinfer.lr_test`).
    passes : int
        Passes over the rows so far (the first, validating pass included), on the Dask
        collections or on the rows held in memory.
    dask_passes : int
        Those of :attr:`passes` computed on the Dask collections: the first alone up to
        :data:`LOCAL_ROWS` rows, where the first pass keeps every row in memory.

    The Dask collections themselves are not pickled: an unpickled model (or results) keeps
    every number computed, but computes nothing more from the rows.
    """

    lazy = True
    target_index = None
    #: the formula's :class:`~puinfer.formula.ColumnCoding` where its design is not the plain
    #: columns (categorical or quoted ones): ``predict`` codes new rows with it
    coding = None

    def __init__(self, blocks, spec, mean, sd, n, m, sample, fingerprint):
        self.blocks, self.spec = blocks, spec
        self.names = list(spec[0])
        self.coding = spec[3] if len(spec) > 3 else None
        self.mean, self.sd = mean, sd
        self.n, self.m = int(n), int(m)
        self._sample = sample
        self.fingerprint = fingerprint
        self.passes = self.dask_passes = 1
        # every row in memory (small data), as slices like a block's (:meth:`reduce`)
        self._rows = self._local_rows() if self.N <= min(LOCAL_ROWS, 2 * SUBSAMPLE_SIZE) \
            else None
        self._memo: dict = {}
        self._vsums: dict = {}       # v -> the sums of _v_block
        self._pi_derivs: dict = {}   # (theta, pi) -> (slope, cross) of evaluated points
        self._last = None            # (theta, lam, Hll, Hlt, act) of the last profile point

    @property
    def N(self) -> int:
        return self.n + self.m

    @property
    def local(self) -> bool:
        """Whether every row is held in memory and every pass adds them there (small data,
        up to :data:`LOCAL_ROWS` rows); the pi-free search then runs in memory, as
        :func:`~._starts.run_starts` does for an in-memory fit."""
        return self._rows is not None

    @property
    def p(self) -> int:
        return len(self.names)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.update(blocks=None, _sample=None, _memo={}, _last=None, _vsums={}, _rows=None)
        return state

    def _local_rows(self) -> list:
        """Every row (the first pass's sample holds them all) as in-memory :class:`TiltData`
        slices of at most ``_SLICE`` rows, each all-source or all-target, with the full data's
        standardisation: the slices a pass over the blocks reads (:func:`_slices`)."""
        sub = self.subsample()
        X = np.asarray(sub.X)
        out = []
        for lo, hi, target in ((0, sub.n, False), (sub.n, sub.N, True)):
            for i in range(lo, hi, _SLICE):
                Xi = X[i:min(i + _SLICE, hi)]
                r = Xi.shape[0]
                n, m = (0, r) if target else (r, 0)
                out.append(TiltData(Xi, np.full(r, float(target)), self.names, self.mean,
                                    self.sd, n, m))
        return out

    def reduce(self, func, *, combine=_combine):
        """``func(slice)`` summed over every slice of every block: one pass (over the rows in
        memory up to :data:`LOCAL_ROWS` rows, see the module docstring)."""
        if self.blocks is None:
            raise RuntimeError("this DETM/SETM model was unpickled: its Dask collections are "
                               "not kept, so nothing more can be computed from its rows; "
                               "build it from the collections again")
        self.passes += 1
        if self._rows is not None:
            out = None
            for blk in self._rows:
                out = combine(out, func(blk))
            return out
        self.dask_passes += 1
        return reduce_blocks(functools.partial(_on_slices, func, self.spec, self.mean,
                                               self.sd),
                             self.blocks, combine=combine)

    # -- the starts' sample -------------------------------------------------------------------
    def subsample(self) -> TiltData:
        """The seeded uniform sample drawn in the first pass, as in-memory data with the same
        standardisation: every row up to ``2 * SUBSAMPLE_SIZE`` rows, else the share
        ``SUBSAMPLE_SIZE / N`` of each sample (at least 50 rows), as
        :func:`~._starts.subsample`."""
        if self._sample is None:
            raise RuntimeError("this DETM/SETM model was unpickled: its sample is not kept")
        (ks, Xs), (kt, Xt) = self._sample
        os_, ot = np.argsort(ks, kind="stable"), np.argsort(kt, kind="stable")
        if self.N > 2 * SUBSAMPLE_SIZE:
            k = SUBSAMPLE_SIZE / self.N
            os_ = os_[:min(max(int(round(self.n * k)), 50), self.n)]
            ot = ot[:min(max(int(round(self.m * k)), 50), self.m)]
        X = np.vstack([Xs[os_], Xt[ot]])
        y = np.r_[np.zeros(os_.size), np.ones(ot.size)]
        return TiltData(X, y, self.names, self.mean, self.sd, os_.size, ot.size)

    def in_memory(self) -> TiltData | None:
        """Every row in memory (the starts' sample when it holds all of them, else None)."""
        return self.subsample() if self.N <= 2 * SUBSAMPLE_SIZE else None

    # -- route 1: the pi-free objective -------------------------------------------------------
    def free_sums(self, v):
        key = ("free", np.asarray(v, dtype=float).tobytes())
        if key not in self._memo:
            self._remember(key, self.reduce(functools.partial(_free_block,
                                                              np.array(v, dtype=float))))
        return self._memo[key]

    def _remember(self, key, value):
        """Keep the last few evaluations (a line search's accepted point, and the points a
        merge test evaluates just before it, are asked for again)."""
        if len(self._memo) >= 4:
            self._memo.pop(next(iter(self._memo)))
        self._memo[key] = value

    def free_fun(self, c, restricted):
        """:func:`~._starts.free_fun` on the blocks: ``(fun, expand)``."""
        p = self.p
        full_idx = np.r_[0, p + 1:2 * p + 2]

        def full(v, order):
            S = self.free_sums(v)
            s1, b1, s2, b2 = _el.split(v, p)
            f = S["f"] - (_el.penalty(b1, b2, c) if c else 0.0)
            if order == 0:
                return f
            g, H = S["g"].copy(), S["H"].copy()
            if c:
                _el.penalise(g, H, b1, b2, c)
            return f, g, H

        if not restricted:
            return full, lambda v: v

        def expand(u):
            v = np.zeros(2 * p + 2)
            v[full_idx] = u
            return v

        def fun_r(u, order):
            out = full(expand(u), order)
            if order == 0:
                return out
            f, g, H = out
            return f, g[full_idx], H[np.ix_(full_idx, full_idx)]

        return fun_r, expand

    def prefetch(self, vs) -> None:
        """The sums of :func:`_v_block` for every solution of ``vs`` (and its mirror, the
        components swapped) not yet known, in one pass: pi and the KL divergences of the fit
        record's starts then cost no further pass."""
        p = self.p
        vs = [np.array(v, dtype=float) for v in vs]
        vs = vs + [np.r_[v[p + 1:], v[:p + 1]] for v in vs]
        new = list({v.tobytes(): v for v in vs if v.tobytes() not in self._vsums}.values())
        if new:
            S = self.reduce(functools.partial(_v_block, np.array(new)))["v"]
            for v, row in zip(new, S, strict=True):
                self._vsums[v.tobytes()] = row

    def _v(self, v):
        v = np.array(v, dtype=float)
        if v.tobytes() not in self._vsums:
            self.prefetch([v])
        return self._vsums[v.tobytes()]

    def pi_of_v(self, v) -> float:
        return float(self._v(v)[0] / self.m)

    # -- the label rule, the alphas ----------------------------------------------------------
    def kl_divergences(self, v, pi) -> tuple[float, float]:
        _, se, se1, se2 = self._v(v)
        s1, _, s2, _ = _el.split(np.asarray(v, dtype=float), self.p)
        with np.errstate(divide="ignore"):
            a1 = s1 - np.log(self.m * pi / self.n)
            a2 = s2 - np.log(self.m * (1 - pi) / self.n)
        return float(-(a1 * se + se1) / self.n), float(-(a2 * se + se2) / self.n)

    def normalise_alphas(self, restricted, v, theta):
        """:func:`~._record.normalise_alphas` (one pass)."""
        p = self.p
        lse = self.reduce(functools.partial(_alpha_block, np.array(v, dtype=float),
                                            self.n))["lse_a"]
        out = np.array(theta, dtype=float)
        for t, a_idx in enumerate((0, p + 1)):
            if restricted and t == 0:
                continue
            a_new = -lse[t]
            if np.isfinite(a_new) and abs(a_new - out[a_idx]) > 1e-8 * max(1.0, abs(a_new)):
                out[a_idx] = a_new
        return out

    def kl_difference_se(self, v, c) -> float:
        """:func:`~._label.kl_difference_se` (two passes): ``A`` and the within-sample
        covariance of ``psi`` from its sums and cross-products."""
        v = np.array(v, dtype=float)
        pi = self.pi_of_v(v)
        G = self.reduce(functools.partial(_g_block, v))
        g = G["num"] / G["den"]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            S = self.reduce(functools.partial(_stacked_block, v, pi, g))
        A = S["A"]
        p = self.p
        if c:
            _, b1, _, b2 = _el.split(v, p)
            _, _, ph = _el.penalty(b1, b2, c, 2)
            idx = np.r_[1:p + 1, p + 2:2 * p + 2]
            A[np.ix_(idx, idx)] -= ph
        B = sum(S[f"{k}_mom"] - np.outer(S[f"{k}_sum"], S[f"{k}_sum"]) / S[f"{k}_n"]
                for k in ("s", "t"))
        from ._label import delta_direction

        u = delta_direction(A, pi) if np.all(np.isfinite(B)) else None
        if u is None:
            return float("nan")
        var = float(u @ B @ u)
        return float(np.sqrt(var)) if np.isfinite(var) and var >= 0 else float("nan")

    # -- the profile log-EL at fixed pi (eq. 12) ----------------------------------------------
    def _lambda_start(self, theta, pi, lam0):
        """The multipliers' start: the first-order prediction from the last point evaluated
        (implicit function theorem: ``d lambda = -h_ll^{-1} h_lt d theta``), if feasible
        there, else ``lam0`` or ``(m pi / N, m (1 - pi) / N)``."""
        base = (np.array(lam0, dtype=float) if lam0 is not None
                else np.array([self.m * pi, self.m * (1 - pi)]) / self.N)
        last = self._last
        if last is None:
            return base, None
        th_l, lam_l, Hll, Hlt, act = last
        k = 2 * (self.p + 1)
        try:
            d = -np.linalg.solve(Hll[np.ix_(act, act)], Hlt[act][:, :k] @ (theta - th_l))
        except np.linalg.LinAlgError:
            return base, None
        pred = np.array(lam_l, dtype=float)
        pred[act] += d
        return (pred if np.all(np.isfinite(pred)) else lam_l), base

    def _profile_pass(self, theta, pi, lam, with_pi, cands=None):
        return self.reduce(functools.partial(_profile_block, theta, float(pi), lam, with_pi,
                                             cands))

    #: step lengths a multiplier line search tries in one pass (the halving sequence)
    _HALVINGS = 0.5 ** np.arange(12)

    def profile_eval(self, theta, pi, lam0=None, with_pi=False, strict=False):
        """The multipliers of eq. (11) at ``(theta, pi)`` solved by passes, and the sums there:
        ``(ok, lam, step, active, sums)``.

        Newton's method on the convex ``-sum log(1 + lambda'z_i)`` as
        :func:`~._el.solve_lambda`, each step one pass returning every sum of
        :func:`_profile_block` at the new multipliers together with the objective at twelve
        halvings of the step (the line search's feasibility and Armijo test, so a damped step
        costs one more pass, not one per halving). It stops where the next Newton ``step``
        is below ``1e-7 max(1, |lambda|)`` (``strict``: ``1e-14``, rounding level): the sums
        are those at ``lam`` and the caller moves them to ``lam + step`` to first order
        (exact to ``O(step^2)``, below ``1e-14``); ``lam`` is returned with the step added.
        It also stops after a full step from a Newton decrement below
        :data:`~._el.DECREMENT_STOP`, as the in-memory solve does (the point reached is at
        rounding level; ``step`` is then 0).
        """
        theta = np.array(theta, dtype=float)
        key = ("prof", theta.tobytes(), float(pi), bool(with_pi), bool(strict))
        if key in self._memo:
            return self._memo[key]
        lam, fallback = self._lambda_start(theta, pi, lam0)
        S = self._profile_pass(theta, pi, lam, with_pi)
        if not S["min_D"] > 0 and fallback is not None:  # the prediction is infeasible
            lam = fallback
            S = self._profile_pass(theta, pi, lam, with_pi)
        # a tilt identically 1 imposes no constraint: its multiplier is 0 (see solve_lambda)
        act = S["max_z"] > _el.IDENTITY_TILT
        N = self.N
        if np.any(lam[~act] != 0):
            lam = np.where(act, lam, 0.0)
            S = self._profile_pass(theta, pi, lam, with_pi)
        if not S["min_D"] > 0:
            lam = np.zeros(2)
            S = self._profile_pass(theta, pi, lam, with_pi)
        ok, step_full = not act.any(), np.zeros(2)
        rel = 1e-14 if strict else 1e-7
        # a tilt above (or below) 1 at every row: no weights p_i > 0 satisfy its constraint
        # sum_i p_i (w_i - 1) = 0, and -sum log D is unbounded below (as in solve_lambda);
        # a tilt that overflows (D = 1 + 0 * inf is nan at lambda = 0): no value either
        one_sided = act & ((S["min_zs"] >= 0) | (S["max_zs"] <= 0))
        if one_sided.any() or not S["min_D"] > 0:
            out = (False, lam, np.zeros(2), act, S)
            self._remember(key, out)
            return out
        if act.any():
            obj = -S["logD"]
            for _ in range(100):
                if S["min_D"] >= 1 and S["logD"] > 0:
                    # lambda'z_i >= 0 at every row, > 0 at some: -sum log(1 + s lambda'z_i)
                    # falls without bound as s grows, so eq. (11) has no solution (at a
                    # solution sum_i 1 / D_i = N: D_i >= 1 for all i only if all equal 1).
                    # solve_lambda ends unconverged after its iterations; here at once.
                    break
                g = -S["gl"][act]
                H = S["Hll"][np.ix_(act, act)]
                newton = _el.newton_step(H, g)
                if newton is None:
                    break
                step, dec = newton
                gs = -dec
                la = lam[act]
                if np.max(np.abs(step)) <= rel * max(1.0, np.max(np.abs(la))) or \
                        dec < 1e-30 * N:
                    ok = True
                    step_full[act] = step
                    break
                slack = 1e-13 * max(1.0, abs(obj))
                t0, lt, S_new = 1.0, None, None
                while t0 > 1e-12 and lt is None:
                    ts = t0 * self._HALVINGS
                    cands = np.zeros((ts.size - 1, 2))
                    cands[:, act] = la + ts[1:, None] * step
                    main = lam.copy()
                    main[act] = la + t0 * step
                    S_try = self._profile_pass(theta, pi, main, with_pi, cands)
                    if S_try["min_D"] > 0 and -S_try["logD"] <= obj + 1e-4 * t0 * gs + slack:
                        lt, S_new = main, S_try
                        break
                    good = [i for i, t in enumerate(ts[1:])
                            if S_try["min_cand"][i] > 0 and
                            -S_try["cand_logD"][i] <= obj + 1e-4 * t * gs + slack]
                    if good:
                        lt = cands[good[0]].copy()
                        S_new = self._profile_pass(theta, pi, lt, with_pi)
                    t0 = ts[-1] * 0.5
                if lt is None:
                    ok = dec < 1e-10
                    break
                lam, S, obj = lt, S_new, -S_new["logD"]
                if lt is main and t0 == 1.0 and dec < _el.DECREMENT_STOP:
                    # a full step from a decrement below DECREMENT_STOP ends at rounding level
                    # (self-concordance, as in _el._solve_lambda_zz, which stops here too): the
                    # sums are those at lam. Without this stop, a solve started at its solution
                    # (a warm start) could meet neither test above: steps of 1.6e-14 at
                    # decrements of 1e-27 went back and forth for 100 passes and returned "no
                    # multipliers" where the rows in memory have them (session 80)
                    ok = True
                    break
        out = (ok, lam + step_full, step_full, act, S)
        self._remember(key, out)
        if ok and "Hlt" in S:
            self._last = (theta, lam + step_full, S["Hll"], S["Hlt"], act)
            if "dpi" in S:
                self._pi_derivs[(theta.tobytes(), float(pi))] = (S["dpi"], S["cross"])
        return out

    def profile_log_el(self, theta, pi, c, lam0=None, order=2, with_pi=False, strict=False):
        """:func:`~._el.profile_log_el` from the blocks. The value and gradient are those at
        the solved multipliers (:meth:`profile_eval`'s sums moved by its last Newton step, to
        second order); the Hessian is taken at the multipliers before that step unless
        ``strict`` (where the step is at rounding level: the fit record's covariance)."""
        theta = np.array(theta, dtype=float)
        ok, lam, s, act, S = self.profile_eval(theta, pi, lam0, with_pi, strict)
        if not ok:
            return (-np.inf, None, None, None) if order else -np.inf
        p = self.p
        _, b1, _, b2 = _el.split(theta, p)
        N = self.N
        if act.any():
            # sum log D at lam + s = sum log D + s'sum z/D - s'H_ll s / 2 + O(s^3)
            logD = S["logD"] + s @ S["gl"] - 0.5 * s @ S["Hll"] @ s
        else:
            logD = 0.0
        f = -logD + S["logmix"] - N * np.log(N)
        if c:
            f -= _el.penalty(b1, b2, c)
        if order == 0:
            return f
        grad = S["grad"] + (S["Hlt"].T @ s if act.any() else 0.0)  # d grad / d lambda = h_lt
        grad, H = _el.profile_finish(grad, S["H"], S["Hlt"], S["Hll"], act, b1, b2, c)
        return f, grad, H, {"lam": lam, "p": None, "omega": None}

    def _derivs_pi(self, theta, pi):
        theta = np.array(theta, dtype=float)
        key = (theta.tobytes(), float(pi))
        if key not in self._pi_derivs:
            self.profile_eval(theta, pi)
        if key not in self._pi_derivs:  # no multipliers there: the slope alone
            S = self._profile_pass(theta, pi, np.zeros(2), False)
            return S.get("dpi", 0.0), S.get("cross")
        return self._pi_derivs[key]

    def pi_slope(self, theta, pi) -> float:
        """:func:`~._el.pi_slope` (from the evaluation at ``(theta, pi)``, cached)."""
        return float(self._derivs_pi(theta, pi)[0])

    def pi_cross(self, theta, pi) -> np.ndarray:
        """:func:`~._el.pi_cross` (from the evaluation at ``(theta, pi)``, cached)."""
        return self._derivs_pi(theta, pi)[1]

    def label_gap(self, theta, pi, order=0):
        """:func:`~._el.label_gap` from the blocks: the margin ``KL2 - KL1`` with the EL
        weights at ``(theta, pi)`` (the multipliers solved to rounding level), None where no
        multipliers exist; ``order=1`` also its gradient in theta (one more pass)."""
        ok, lam, _, act, S = self.profile_eval(theta, pi, strict=True)
        if not ok:
            return (None, None) if order else None
        gap = -S["etaD"][1] / self.N - -S["etaD"][0] / self.N
        if not order:
            return gap
        G = self.reduce(functools.partial(_gap_block, np.array(theta, dtype=float), lam))
        return gap, _el.label_gap_grad(G, self.N, act)

    def labelled(self, theta, pi) -> bool:
        """:meth:`~._profile.PiProfiler.labelled` for the KL rule: ``KL1 <= KL2`` with the EL
        weights at ``(theta, pi)`` (:meth:`label_gap`)."""
        gap = self.label_gap(theta, pi)
        return True if gap is None else bool(gap >= 0)


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------
def _init(model, blocks, spec, fingerprint, *, indicator: bool):
    """One validating pass, then the in-memory model's checks."""
    from .model import check_sample_size

    S = reduce_blocks(functools.partial(_first_block, spec),
                      [(i, *blk) for i, blk in enumerate(blocks)], combine=_combine_first)
    names = list(spec[0])
    n, m = S["n"], S["m"]
    if n == 0:
        raise ValueError("no labeled source rows" + (f" ({spec[1]!r} == 1)" if indicator
                                                      else " (source is empty)"))
    if m == 0:
        raise ValueError("no unlabeled target rows" + (f" ({spec[1]!r} == 0)" if indicator
                                                        else " (target is empty)"))
    N = n + m
    n_par = 2 * (len(names) + 1) + 1
    if N <= n_par:
        raise ValueError(f"{N} rows for {n_par} DETM parameters; need more rows")
    mean, sd = _check_design(names, N, S)
    data = DaskTiltData(blocks, spec, mean, sd, n, m, S["sample"], fingerprint)
    model.design = None
    model.data = data
    model.exog_names = names
    model.missing = spec[2]
    if indicator and S["ku"]:  # a dropped row whose indicator is missing: its sample unknown
        model.n_dropped = int(S["ks"] + S["kt"] + S["ku"])
        model.n_dropped_source = model.n_dropped_target = None
    else:
        model.n_dropped_source, model.n_dropped_target = int(S["ks"]), int(S["kt"])
        model.n_dropped = int(S["ks"] + S["kt"])
    check_sample_size(data, model._restricted)


def _is_frame(x) -> bool:
    """Whether ``x`` is a Dask DataFrame (a Dask Series answers ``hasattr(x, "columns")``
    through its attribute lookup, then fails on it)."""
    return isinstance(getattr(x, "_meta", None), pd.DataFrame)


def _columns(x, name):
    """Feature names as the in-memory model names them (``_validation._names_of``)."""
    if _is_frame(x):
        return [str(c) for c in x.columns]
    if hasattr(x, "to_frame"):  # a Series: its frame's one column
        return [str(x.name if x.name is not None else 0)]
    return [f"x{j + 1}" for j in range(1 if x.ndim == 1 else x.shape[1])]


def init_dask(model, source, target, missing, coding=None):
    """``DETM(source, target)`` with Dask collections (both must be); ``coding`` (from
    ``from_formula``) codes the frames' columns into the formula's design."""
    dask = require_dask()
    from ..._dask import is_dask

    for x, nm in ((source, "source"), (target, "target")):
        if not is_dask(x):
            raise ValueError(f"{nm}: with Dask collections both samples must be Dask "
                             f"collections (got in-memory {type(x).__name__}); use "
                             "dask.dataframe.from_pandas to distribute it")
    ns, nt = _columns(source, "source"), _columns(target, "target")

    def named(x):  # (a named Series is a named column, as in memory)
        return _is_frame(x) or (hasattr(x, "to_frame") and x.name is not None)

    if named(source) and named(target) and sorted(ns) != sorted(nt):
        raise ValueError(f"source and target columns differ: only in source "
                         f"{[c for c in ns if c not in nt]}, only in target "
                         f"{[c for c in nt if c not in ns]}")
    if _is_frame(source) and _is_frame(target) and ns != nt:
        if sorted(ns) != sorted(nt):
            raise ValueError(f"source and target columns differ: only in source "
                             f"{[c for c in ns if c not in nt]}, only in target "
                             f"{[c for c in nt if c not in ns]}")
        # matched by name, as in memory: target's columns in source's order
        target = target[[target.columns[nt.index(c)] for c in ns]]
        nt = ns
    if len(ns) != len(nt):
        raise ValueError(f"source has {len(ns)} columns but target has {len(nt)}")
    if coding is not None:
        ns = list(coding.names)  # (its columns were checked by the coding)
    elif _is_frame(source) and _is_frame(target):
        _check_numeric(source, "source", ns)
    else:
        # not two frames: matched by position, as in memory (a frame or Series among them
        # has its columns read in order, under the source's names)
        source, target = (_positional(x, ns) for x in (source, target))
    blocks = [(b[0], None) for b in row_blocks({"source": source})] + \
        [(None, b[0]) for b in row_blocks({"target": target})]
    spec = (tuple(ns), None, missing) if coding is None else (tuple(ns), None, missing, coding)
    # (names from the caller's columns, as in memory: a named Series is then matched by name)
    model._named_features = _is_frame(source) or hasattr(source, "to_frame")
    _init(model, blocks, spec, dask.base.tokenize(source, target, spec), indicator=False)


def _positional(x, names):
    """``x`` with its columns, in order, named ``names`` where it is a Dask DataFrame or
    Series (the blocks read columns by name); an array as it is."""
    meta = getattr(x, "_meta", None)
    if isinstance(meta, pd.DataFrame):
        return x.rename(columns=dict(zip(meta.columns, names, strict=True)))
    if isinstance(meta, pd.Series):
        return x.to_frame(name=names[0])
    return x


def _check_numeric(ddf, name, cols):
    meta = ddf._meta
    for c in cols:
        s = meta[c] if c in meta.columns else None
        if s is not None and not (pd.api.types.is_numeric_dtype(s) or
                                  pd.api.types.is_bool_dtype(s)):
            raise ValueError(f"{name}: column {c!r} is not numeric (dtype {s.dtype}); "
                             "convert it in the Dask DataFrame first")


def _levels_block(unknown, text, part):
    """A partition's categories of the ``unknown`` categorical columns (``(categories,
    ordered)``, None where the column is not categorical there) and the distinct values of
    the ``text`` columns on its rows without a missing value in ``part``'s columns (those a
    fit keeps)."""
    cats = {c: (tuple(part[c].cat.categories), bool(part[c].cat.ordered))
            if isinstance(part[c].dtype, pd.CategoricalDtype) else None for c in unknown}
    rows = part.dropna() if text else part
    return cats, {c: list(pd.unique(rows[c].to_numpy(dtype=object))) for c in text}


def _coding(rhs, frames, extra=()):
    """The :class:`~puinfer.formula.ColumnCoding` of the right-hand side on the Dask
    DataFrames ``frames`` (the one data frame, or the source and target pooled, as in memory):
    the in-memory route's levels, contrasts, names and column order.

    A categorical column's levels are its categories, in their order (the first is the
    reference level); where Dask does not know them (``cat.as_unknown()``, some readers), they
    are read from the partitions, which must all hold the same (what ``compute()`` gives),
    else it is refused, naming the column. A text column's levels are its distinct values on
    the rows a fit keeps (no missing value in ``extra`` or the formula's columns), sorted by
    patsy as in memory. Those two need one pass over the data; numeric and True/False columns
    none."""
    from dask.dataframe.utils import has_known_categories

    from ...formula import _is_text, column_coding, plain_columns

    used = plain_columns(rhs, [str(c) for c in frames[0].columns])
    for f, nm in zip(frames, ("source", "target") if len(frames) == 2 else ("data",),
                     strict=True):
        absent = [c for c in used if c not in [str(c) for c in f.columns]]
        if absent:
            raise ValueError(f"{nm} lacks the column(s) {absent}")
        for c in used:
            dt = f._meta[c].dtype
            if isinstance(dt, pd.ArrowDtype) and "dictionary" in str(dt.pyarrow_dtype):
                raise ValueError(
                    f"{nm}: column {c!r} is a pyarrow dictionary, whose levels each partition "
                    "may hold in another order; make it a categorical with known categories "
                    f"first, e.g. ddf[{c!r}] = ddf[{c!r}].astype('category').cat."
                    "set_categories([...]) (the first level is the reference level)")
    cat = [c for c in used if all(isinstance(f._meta[c].dtype, pd.CategoricalDtype)
                                  for f in frames)]
    unknown = [c for c in cat if not all(has_known_categories(f[c]) for f in frames)]
    pooled = pd.concat([f._meta[used] for f in frames], ignore_index=True)
    text = [c for c in used if c not in cat and _is_text(pooled[c].dtype)]
    levels = {}
    if unknown or text:
        import dask

        fn = functools.partial(_levels_block, unknown, text)
        found = dask.compute(*[dask.delayed(fn, pure=True)(p) for f in frames
                               for p in f[[*extra, *used]].to_delayed()])
        for c in unknown:
            seen = list(dict.fromkeys(cats[c] for cats, _ in found))
            if len(seen) != 1 or seen[0] is None:
                raise ValueError(
                    f"data: column {c!r} is a categorical whose categories Dask does not know "
                    "(unknown categories), and its partitions hold different ones (or in "
                    "another order); their order sets the reference level and the design's "
                    "columns, as in memory, so set them first, e.g. "
                    f"ddf[{c!r}] = ddf[{c!r}].cat.set_categories([...]) (the first is the "
                    "reference level; .cat.as_known() takes them in the order Dask finds them)")
            pooled[c] = pooled[c].astype(pd.CategoricalDtype(*seen[0]))
        for c in text:
            levels[c] = list(dict.fromkeys(v for _, vals in found for v in vals[c]))
    return column_coding(rhs, pooled, levels)


def from_formula_dask(cls, formula, data, missing, source=None, target=None):
    """``DETM.from_formula`` with a Dask DataFrame ``data`` (``"labeled ~ x1 + x2"``) or Dask
    ``source`` and ``target`` frames (``"~ x1 + x2"``).

    The right-hand side names plain columns (as they are or quoted as ``Q("name")``); numeric
    ones are read as they are, True/False, categorical and text ones coded as in memory
    (:func:`_coding`), with the in-memory design's names."""
    dask = require_dask()
    from ...formula import lhs_column

    if not isinstance(formula, str) or "~" not in formula:
        raise ValueError(f"formula must be a string like 'labeled ~ x1 + x2'; got {formula!r}")
    lhs, rhs = (s.strip() for s in formula.split("~", 1))
    model = cls.__new__(cls)
    model._formula_text = formula  # (its repr said features=[...], the in-memory one formula=)
    if data is None:
        if lhs:  # as in memory: the two frames are the samples, there is no indicator
            raise ValueError(f"formula {formula!r} must not have a left-hand side here; "
                             "write '~ x1 + x2'")
        if source is None or target is None:
            raise ValueError("give data= with a two-sided formula, or source= and target=")
        for x, nm in ((source, "source"), (target, "target")):
            if not _is_frame(x):  # (the coding reads both frames' columns and dtypes)
                kind = "a Dask" if hasattr(x, "_meta") else "an in-memory"
                raise ValueError(f"{nm}: with a formula on Dask collections both samples must "
                                 f"be Dask DataFrames (got {kind} {type(x).__name__}); use "
                                 "dask.dataframe.from_pandas to distribute it")
        coding = _coding(rhs, [source, target])
        cols = list(coding.columns)
        init_dask(model, source[cols], target[cols], missing,
                  coding=None if coding.plain else coding)
        return model
    # the indicator's column, named or quoted as Q("name"), as in memory
    lhs = lhs_column(formula, data._meta) if lhs else None
    if lhs is None:
        raise ValueError(f"formula: with a Dask DataFrame the left-hand side must be the 0/1 "
                         f"indicator column's name; got {formula.split('~', 1)[0].strip()!r}")
    coding = _coding(rhs, [data], (lhs,))
    cols = list(coding.columns)
    if coding.plain:  # (the spec, and so the fingerprint, of the plain columns as before)
        spec = (tuple(cols), lhs, missing)
    else:
        spec = (coding.names, lhs, missing, coding)
    blocks = [(b[0], None) for b in row_blocks({"data": data[[lhs, *cols]]})]
    model._named_features = True  # (the formula's columns)
    _init(model, blocks, spec, dask.base.tokenize(data, spec), indicator=True)
    return model


def refuse(what: str):
    """The error for a method that is not distributed."""
    raise NotImplementedError(
        f"{what} is not available for a fit on Dask collections: the bootstrap resamples "
        "rows with their EL weights, which needs every row in memory (it is not a sum over "
        "blocks); use the profile interval / the chi2 reference, or compute() the data and "
        "fit in memory")


def _predict_part(res, part):
    if len(part) == 0:  # e.g. a partition of source rows only, after ddf[ddf.labeled == 0]
        return pd.Series(np.empty(0), index=part.index, name="P(y=1|x)")
    return res.predict(part)  # the in-memory rule, on a partition: a Series on its index


def predict_dask(res, newdata):
    """``predict()`` of a fit on Dask collections: ``newdata`` a Dask DataFrame/array gives a
    lazy Dask Series/array (block by block, the in-memory rule); in-memory ``newdata`` the
    in-memory result. The fitted target rows' posteriors are not kept (``newdata=None``)."""
    from ..._dask import is_dask
    from .results import TiltResults

    if newdata is None:
        raise ValueError("predict(): a fit on Dask collections does not keep the posteriors "
                         "of its target rows; pass the target rows, e.g. "
                         "res.predict(ddf[ddf.labeled == 0]) (a lazy Dask Series)")
    inner = _InMemory(res)
    if not is_dask(newdata):
        return TiltResults.predict(inner, newdata)
    if hasattr(newdata, "map_partitions"):
        return newdata.map_partitions(functools.partial(_predict_part, inner),
                                      meta=pd.Series(dtype=float, name="P(y=1|x)"))
    if newdata.ndim == 1:  # one feature as a 1-D array: one prediction per element
        return newdata.map_blocks(functools.partial(_predict_block, inner), dtype=float)
    return newdata.map_blocks(functools.partial(_predict_block, inner), drop_axis=1,
                              dtype=float)


def _predict_block(inner, b):
    """One block of a Dask array's predictions (an empty block, e.g. after a boolean mask,
    gives none: in-memory predict refuses empty data; session 85's audit)."""
    from .results import TiltResults

    if len(b) == 0:
        return np.empty(0)
    return np.asarray(TiltResults.predict(inner, b))


class _InMemory:
    """What :meth:`TiltResults.predict` reads of a results object, with a model whose
    ``data`` is a plain namespace (so the in-memory rule runs on a partition)."""

    def __init__(self, res):
        import types

        m = res.model
        self.pi = res.pi
        self._fit = res._fit
        self.model = types.SimpleNamespace(
            data=types.SimpleNamespace(mean=m.data.mean, sd=m.data.sd, p=m.data.p, lazy=False),
            exog=m.exog)

    def predict(self, newdata):
        from .results import TiltResults

        return TiltResults.predict(self, newdata)

    def _tilts(self, newdata):
        from .results import TiltResults

        return TiltResults._tilts(self, newdata)
