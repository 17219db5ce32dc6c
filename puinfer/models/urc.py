"""Unsupervised recalibration (URC): field base rates from a classifier's predictions.

Seed 003 (Ziegler & Czyz, *Unsupervised Recalibration*). A classifier calibrated on a labelled
**lab** set is applied to unlabelled **field** data whose class base rates may differ. Under the
consistency assumption (Axiom 2: the distribution of the predictions within each class is the
same in lab and field) the field histogram of the predictions over a partition ``A`` satisfies
``v_A = M_A' p`` (Lemma 7), where ``M_A[i, a] = P_lab(C in A_a | Y = i)`` (eq. (9)). URC estimates
``p`` by maximum likelihood of the multinomial field histogram (Definition 8), per subpopulation
for local URC (Algorithm 1), and recalibrates the predictions with Lemma 3.

Likelihoods
-----------
``likelihood="joint"`` (the default) treats the lab histograms as data too: the lab counts of
class ``i`` are ``Multinomial(n_i, M[i, :])`` and the field counts of group ``g`` are
``Multinomial(N_g, M' p_g)``, with ``M`` free. The log-likelihood is

    l(p, M) = sum_{i,a} L[i,a] log M[i,a] + sum_{g,a} F[g,a] log (sum_i p_g[i] M[i,a]) + const,

maximised jointly over ``p`` and ``M``, so that profile intervals carry the lab set's
uncertainty. ``likelihood="fixed"`` (the paper's, eq. (13)) fixes ``M`` at its lab estimate
``L[i, a] / n_i``. Both include the multinomial coefficients, so ``llf`` is a genuine
log-probability of the counts.

Estimation starts with EM (the latent class of every field item): the E-step splits each
field bin count over the classes in proportion to ``p_g[i] M[i, a]``; the M-step sets ``p_g``
to the expected class shares and (joint) ``M[i, :]`` to the lab counts plus the expected field
counts of class ``i``, normalised. EM is accelerated by SQUAREM (Varadhan & Roland 2008,
scheme S3) with a monotonicity safeguard, so the objective never decreases. EM alone can crawl
along a ridge (the joint likelihood with large field and small lab samples identifies ``M_A``
only through the lab, and EM's rate is then close to 1), so the fit is finished by Newton's
method on the active face of the simplices (analytic Hessian projected on the constraints,
sparse; a component at 0 is released when its KKT condition fails), stopped when the Newton
decrement is below 1e-10 or the rounding noise of the objective. Profiles and restricted fits
are warm-started Newton solves. The optimisation works on the ``k x |A|`` histograms only, so
its cost does not depend on the number of predictions; binning is ``np.searchsorted`` +
``np.bincount``.

Inference
---------
Profile-likelihood intervals for every base rate (other base rates, and ``M_A`` under the joint
likelihood, re-maximised), standard errors from the observed information, likelihood-ratio
tests of no shift and of equal base rates, and the chi-square goodness of fit with
``G (|A| - k)`` degrees of freedom under both likelihoods (see :meth:`URCResults.gof`).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import linalg, special, stats

from .._validation import check_level, warn_and_record
from ..base.results import ConvergenceInfo, LikelihoodResults, data_fingerprint
from ..exceptions import (
    BoundaryWarning,
    ConvergenceWarning,
    EmptyBinWarning,
    IllConditionedWarning,
)
from ..inference.hypothesis import HypothesisTestResult, chisq_gof, lr_test
from ..inference.profile import Profile
from ..prior_shift import adjust_prior
from ..summary import Summary

__all__ = ["URC", "URCResults", "Partition"]

_ROW_TOL = 1e-6
_BOUNDARY = 1e-6


# ---------------------------------------------------------------------------------------------
# Partition
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Partition:
    """A partition of the prediction space into cells, built from the lab predictions.

    Binary (``kind="quantile"``): ``n_bins`` intervals of equal lab probability (eq. (11) of
    seed 003): a prediction ``c`` is in interval ``a`` (1-based) when
    ``(a - 1)/m < F_lab(c) <= a/m``, ``F_lab`` being the empirical CDF of the lab predictions;
    equivalently ``a - 1 = #{j : c >= t_j}`` with cut points ``t_j = c_(floor(j n / m) + 1)``.

    Multiclass (``kind="argmax-quantile"``): the predicted class (arg max) crossed with
    ``n_bins`` intervals of equal lab probability of that class's predicted probability among
    the lab items predicted as that class: ``k * n_bins`` raw cells.

    Raw cells that hold no lab item are merged into the nearest non-empty cell (by index), with
    an :class:`~puinfer.exceptions.EmptyBinWarning`.

    Attributes
    ----------
    kind : str
    edges : tuple of numpy.ndarray
        Cut points (one array per predicted class for the multiclass scheme).
    cell_of_raw : numpy.ndarray
        Map from raw bin to cell.
    labels : tuple of str
        A label per cell.
    """

    kind: str
    n_bins: int
    edges: tuple
    cell_of_raw: np.ndarray
    labels: tuple

    @property
    def n_cells(self) -> int:
        """Number of cells ``|A|``."""
        return len(self.labels)

    def raw_bins(self, pred: np.ndarray) -> np.ndarray:
        """Raw bin of each prediction (validated array: vector for binary, (n, k) matrix)."""
        if self.kind == "quantile":
            return np.searchsorted(self.edges[0], pred, side="right")
        am = np.argmax(pred, axis=1)
        top = np.take_along_axis(pred, am[:, None], axis=1)[:, 0]
        raw = am * self.n_bins
        for j, e in enumerate(self.edges):
            mask = am == j
            raw[mask] += np.searchsorted(e, top[mask], side="right")
        return raw

    def assign(self, pred: np.ndarray) -> np.ndarray:
        """Cell index (0-based) of each prediction."""
        return self.cell_of_raw[self.raw_bins(pred)]


def _quantile_edges(sorted_vals: np.ndarray, m: int) -> np.ndarray:
    n = sorted_vals.size
    if n == 0:
        return np.full(m - 1, np.inf)
    idx = np.minimum((np.arange(1, m) * n) // m, n - 1)
    return sorted_vals[idx]


def _build_partition(pred, labels_codes, k, n_bins, binary, record):
    if binary:
        edges = (_quantile_edges(np.sort(pred), n_bins),)
        kind = "quantile"
        bounds = np.concatenate([[0.0], edges[0], [1.0]])
        raw_labels = [f"[{bounds[a]:.4g}, {bounds[a + 1]:.4g}" + ("]" if a == n_bins - 1 else ")")
                      for a in range(n_bins)]
    else:
        am = np.argmax(pred, axis=1)
        top = np.take_along_axis(pred, am[:, None], axis=1)[:, 0]
        edges = tuple(_quantile_edges(np.sort(top[am == j]), n_bins) for j in range(k))
        kind = "argmax-quantile"
        raw_labels = []
        for j in range(k):
            b = np.concatenate([[0.0], edges[j], [1.0]])
            for a in range(n_bins):
                raw_labels.append(f"argmax={j}, [{b[a]:.3g}, {b[a + 1]:.3g}"
                                  + ("]" if a == n_bins - 1 else ")"))
    part = Partition(kind, n_bins, edges, np.arange(len(raw_labels)), tuple(raw_labels))
    raw = part.raw_bins(pred)
    n_raw = len(raw_labels)
    lab_tot = np.bincount(raw, minlength=n_raw)
    nonempty = np.flatnonzero(lab_tot > 0)
    if nonempty.size < n_raw:
        empty = np.flatnonzero(lab_tot == 0)
        # nearest non-empty raw bin (ties: the lower one)
        pos = np.searchsorted(nonempty, empty)
        lo = nonempty[np.clip(pos - 1, 0, nonempty.size - 1)]
        hi = nonempty[np.clip(pos, 0, nonempty.size - 1)]
        target = np.where(np.abs(empty - lo) <= np.abs(hi - empty), lo, hi)
        full = np.arange(n_raw)
        full[empty] = target
        cell_of_raw = np.searchsorted(nonempty, full)
        labels = tuple(" + ".join(raw_labels[r] for r in np.flatnonzero(full == ne))
                       for ne in nonempty)
        warn_and_record(record, f"{empty.size} of {n_raw} bins hold no lab predictions (ties or "
                        "an empty predicted class); they were merged into their nearest "
                        f"neighbours, leaving |A| = {nonempty.size} cells", EmptyBinWarning,
                        stacklevel=4)
        part = Partition(kind, n_bins, edges, cell_of_raw, labels)
    return part


# ---------------------------------------------------------------------------------------------
# Likelihood and EM
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Data:
    L: np.ndarray          # k x A lab counts
    F: np.ndarray          # G x A field counts
    pi_lab: np.ndarray     # k lab base rates
    joint: bool
    strength: float        # Dirichlet prior strength (pseudo-counts), 0 = ML

    @functools.cached_property
    def M_lab(self):
        return self.L / self.L.sum(axis=1, keepdims=True)

    @functools.cached_property
    def const(self) -> float:
        """Log multinomial coefficients (lab ones only for the joint likelihood)."""
        F = self.F
        c = float(np.sum(special.gammaln(F.sum(axis=1) + 1)) - np.sum(special.gammaln(F + 1)))
        if self.joint:
            L = self.L
            c += float(np.sum(special.gammaln(L.sum(axis=1) + 1)) - np.sum(special.gammaln(L + 1)))
        return c


@dataclass(frozen=True)
class _Constraint:
    """What is held fixed: nothing ("free"), every p_g ("rows": value), one shared p
    ("equal"), or one entry p_g[j] = v ("entry")."""

    kind: str = "free"
    value: np.ndarray | None = None
    group: int = -1
    cls: int = -1
    v: float = float("nan")


def _xlogy_sum(x, y):
    """sum x log y with 0 log 0 = 0 and -inf where x > 0 = y."""
    pos = x > 0
    yy = y[pos]
    if np.any(yy <= 0):
        return -np.inf
    return float(np.sum(x[pos] * np.log(yy)))


def _objective(P, M, d: _Data) -> float:
    """Log-likelihood (without constants) plus the log Dirichlet prior."""
    val = _xlogy_sum(d.F, P @ M)
    if d.joint:
        val += _xlogy_sum(d.L, M)
    if d.strength > 0:
        val += _xlogy_sum(np.broadcast_to(d.strength * d.pi_lab, P.shape), P)
    return val


def _em_step(P, M, d: _Data, con: _Constraint):
    Q = P @ M
    with np.errstate(divide="ignore", invalid="ignore"):
        R = np.where(d.F > 0, d.F / Q, 0.0)
    C = P * (R @ M.T)                          # expected field class counts, G x k
    if d.strength > 0:
        C = C + d.strength * d.pi_lab
    if con.kind == "free":
        Pn = C / C.sum(axis=1, keepdims=True)
    elif con.kind == "equal":
        c = C.sum(axis=0)
        Pn = np.broadcast_to(c / c.sum(), P.shape).copy()
    elif con.kind == "rows":
        Pn = P
    else:  # entry
        Pn = C / C.sum(axis=1, keepdims=True)
        Pn[con.group] = _fix_entry(C[con.group], con.cls, con.v)
    if d.joint:
        D = M * (P.T @ R) + d.L
        Mn = D / D.sum(axis=1, keepdims=True)
    else:
        Mn = M
    return Pn, Mn


def _fix_entry(c, j, v):
    """Maximise sum_i c_i log p_i subject to p_j = v, sum p = 1."""
    out = np.array(c, dtype=float)
    out[j] = 0.0
    s = out.sum()
    k = out.size
    if s > 0:
        out *= (1.0 - v) / s
    else:
        out[:] = (1.0 - v) / (k - 1)
    out[j] = v
    return out


def _em(P0, M0, d: _Data, con: _Constraint, *, maxiter=5000, tol=1e-10):
    """SQUAREM-accelerated EM. Returns P, M, objective, ConvergenceInfo."""
    G, k = P0.shape
    A = M0.shape[1]
    npar = G * k

    def unpack(t):
        return t[:npar].reshape(G, k), t[npar:].reshape(k, A)

    def emap(t):
        P, M = _em_step(*unpack(t), d, con)
        return np.concatenate([P.ravel(), M.ravel()])

    def obj(t):
        return _objective(*unpack(t), d)

    t0 = np.concatenate([P0.ravel(), M0.ravel()])
    f0 = obj(t0)
    trace = [f0]
    converged = False
    it = 0
    change = np.inf
    for it in range(1, maxiter + 1):  # noqa: B007
        t1 = emap(t0)
        t2 = emap(t1)
        r = t1 - t0
        v = t2 - t1 - r
        nr = np.sqrt(r @ r)
        nv = np.sqrt(v @ v)
        f2 = obj(t2)
        tn, fn = t2, f2
        if nr > 0 and nv > 0:
            alpha = min(-nr / nv, -1.0)
            pos0 = t0 > 0
            while alpha < -1.0 + 1e-3:
                tp = t0 - 2.0 * alpha * r + alpha * alpha * v
                if np.all(tp >= 0) and np.all(tp[pos0] > 0):
                    break
                alpha = 0.5 * (alpha - 1.0)
            else:
                tp = None
            if tp is not None:
                t3 = emap(tp)
                f3 = obj(t3)
                if f3 >= f2:
                    tn, fn = t3, f3
        # converged when the extrapolated move or a plain EM step is below tol (near the
        # maximum the extrapolation only amplifies rounding noise in r and v)
        change = min(float(np.max(np.abs(tn - t0))), float(np.max(np.abs(r))))
        t0, f0 = tn, fn
        trace.append(f0)
        if change < tol:
            converged = True
            break
    step = float(np.max(np.abs(emap(t0) - t0)))
    P, M = unpack(t0)
    info = ConvergenceInfo(
        converged=converged, iterations=it, method="EM (SQUAREM-accelerated)",
        message="" if converged else f"maxiter reached; last change {change:.2e}",
        trace=np.asarray(trace), grad_norm=step)
    return P.copy(), M.copy(), f0, info


def _start_P(d: _Data, M) -> np.ndarray:
    """A start inside the simplex: least squares solution of M' p = v_g, clipped (Lemma 7)."""
    F = d.F
    v = F / np.maximum(F.sum(axis=1, keepdims=True), 1)
    sol, *_ = np.linalg.lstsq(M.T, v.T, rcond=None)
    P = np.clip(sol.T, 0.02, None)
    P = P / P.sum(axis=1, keepdims=True)
    P = 0.5 * P + 0.5 * d.pi_lab  # shrink towards the lab rates: a safe interior start
    return P


_FREE_MIN = 1e-10      # components below this are treated as on the boundary by Newton
_NEWTON_MAX_DIM = 1500  # dense Newton polish up to this many free parameters


def _grad_hess(P, M, d: _Data):
    """Gradient and Hessian of the objective in (P, M) (full, unconstrained coordinates)."""
    G, k = P.shape
    A = M.shape[1]
    Q = P @ M
    with np.errstate(divide="ignore", invalid="ignore"):
        W = np.where(d.F > 0, d.F / Q, 0.0)
        W2 = np.where(d.F > 0, d.F / Q ** 2, 0.0)
    gP = W @ M.T
    HPP = -np.einsum("ia,ga,ja->gij", M, W2, M)
    if d.strength > 0:
        sp = d.strength * d.pi_lab
        with np.errstate(divide="ignore", invalid="ignore"):
            gP = gP + np.where(sp > 0, sp / P, 0.0)
            HPP[:, np.arange(k), np.arange(k)] -= np.where(sp > 0, sp / P ** 2, 0.0)
    n = G * k + k * A
    H = np.zeros((n, n))
    r = (np.arange(G)[:, None, None] * k + np.arange(k)[None, :, None])
    c = (np.arange(G)[:, None, None] * k + np.arange(k)[None, None, :])
    H[r, c] = HPP
    if d.joint:
        with np.errstate(divide="ignore", invalid="ignore"):
            gM = P.T @ W + np.where(d.L > 0, d.L / M, 0.0)
            lab2 = np.where(d.L > 0, d.L / M ** 2, 0.0)
        HPM = (np.eye(k)[None, :, :, None] * W[:, None, None, :]
               - M[None, :, None, :] * P[:, None, :, None] * W2[:, None, None, :])
        T1 = -np.einsum("gi,gj,ga->iaj", P, P, W2)
        HMM = np.einsum("iaj,ab->iajb", T1, np.eye(A))
        HMM[np.arange(k)[:, None], np.arange(A)[None, :], np.arange(k)[:, None],
            np.arange(A)[None, :]] -= lab2
        H[:G * k, G * k:] = HPM.reshape(G * k, k * A)
        H[G * k:, :G * k] = H[:G * k, G * k:].T
        H[G * k:, G * k:] = HMM.reshape(k * A, k * A)
    else:
        gM = np.zeros_like(M)
    return np.concatenate([gP.ravel(), gM.ravel()]), H


def _simplex_columns(V, Gr, allowed, offsets):
    """Tangent columns of a stack of simplex blocks (vectorised over the blocks).

    ``V``, ``Gr``, ``allowed``: (n_blocks, m) values, gradients and which components may move;
    ``offsets``: (n_blocks, n_copies) positions of each block in theta (several copies when
    blocks share their values, as for equal base rates). A component at (numerically) zero is
    released only if its gradient exceeds the Lagrange multiplier of its simplex (the largest
    gradient among the free components): the KKT condition. Each column moves mass from the
    largest free component of its block to one other free component.
    Returns (rows, cols, vals) of the nonzeros and the number of columns."""
    nb, m = V.shape
    free = allowed & (V > _FREE_MIN)
    lam = np.where(free, Gr, -np.inf).max(axis=1, initial=-np.inf)
    release = allowed & ~free & (Gr > (lam + 1e-9 * (1.0 + np.abs(lam)))[:, None])
    free = free | release
    last = np.argmax(np.where(free, V, -np.inf), axis=1)
    move = free.copy()
    move[np.arange(nb), last] = False
    move &= free.sum(axis=1, keepdims=True) >= 2
    b, i = np.nonzero(move)
    ncol = b.size
    col = np.arange(ncol)
    ncopy = offsets.shape[1]
    rows = np.concatenate([(offsets[b] + i[:, None]).ravel(),
                           (offsets[b] + last[b][:, None]).ravel()])
    cols = np.concatenate([np.repeat(col, ncopy), np.repeat(col, ncopy)])
    vals = np.concatenate([np.ones(ncol * ncopy), -np.ones(ncol * ncopy)])
    return rows, cols, vals, ncol


def _tangent(P, M, d: _Data, con: _Constraint, grad):
    """Basis of the feasible directions (simplex constraints, fixed entries, the active set),
    as a sparse matrix ``T`` (n_theta x n_free), or None when there are too many free
    parameters for the dense Newton step."""
    from scipy import sparse

    G, k = P.shape
    A = M.shape[1]
    n = G * k + k * A
    parts = []
    gP = grad[:G * k].reshape(G, k)
    if con.kind in ("free", "entry"):
        allowed = np.ones((G, k), dtype=bool)
        if con.kind == "entry":
            allowed[con.group, con.cls] = False
        parts.append(_simplex_columns(P, gP, allowed, (np.arange(G) * k)[:, None]))
    elif con.kind == "equal":
        parts.append(_simplex_columns(P[:1], gP.sum(axis=0, keepdims=True),
                                      np.ones((1, k), dtype=bool),
                                      (np.arange(G) * k)[None, :]))
    if d.joint:
        gM = grad[G * k:].reshape(k, A)
        parts.append(_simplex_columns(M, gM, np.ones((k, A), dtype=bool),
                                      (G * k + np.arange(k) * A)[:, None]))
    rows, cols, vals, ncol = [], [], [], 0
    for r, c, v, nc in parts:
        rows.append(r)
        cols.append(c + ncol)
        vals.append(v)
        ncol += nc
    if ncol > _NEWTON_MAX_DIM:
        return None
    if ncol == 0:
        return sparse.csr_matrix((n, 0))
    return sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows),
                                                     np.concatenate(cols))), shape=(n, ncol))


def _newton(P, M, f, d: _Data, con: _Constraint, *, maxiter=50, dec_tol=1e-10):
    """Newton polish on the active face (exact; quadratic convergence).

    Stops when the Newton decrement ``g' H^{-1} g`` (twice the predicted gain of the objective)
    is below ``dec_tol``, or below the rounding noise of the objective (``1e-14 |f|``).
    Returns P, M, f, success, iterations, trace, reduced-gradient norm."""
    G, k = P.shape
    A = M.shape[1]
    theta = np.concatenate([P.ravel(), M.ravel()])
    trace = []
    gnorm = np.nan
    for it in range(1, maxiter + 1):
        grad, H = _grad_hess(P, M, d)
        T = _tangent(P, M, d, con, grad)
        if T is None:
            return P, M, f, False, it - 1, trace, gnorm
        if T.shape[1] == 0:
            return P, M, f, True, it - 1, trace, 0.0
        Tt = T.T.tocsr()
        g = Tt @ grad
        gnorm = float(np.max(np.abs(g)))
        # T' H T with sparse products (no multithreaded BLAS for these small dense matrices)
        Hr = -(Tt @ np.asarray(Tt @ H).T)
        try:
            chol = linalg.cho_factor(Hr, lower=True)
        except linalg.LinAlgError:
            return P, M, f, False, it - 1, trace, gnorm
        step = linalg.cho_solve(chol, g)
        dec = float(g @ step)  # twice the predicted gain
        noise = 1e-14 * abs(f)
        if dec < max(dec_tol, noise):
            return P, M, f, True, it - 1, trace, gnorm
        dtheta = T @ step
        t = 1.0
        pos = theta > _FREE_MIN
        accepted = False
        while t > 1e-10:
            tn = theta + t * dtheta
            if np.all(tn[pos] > 0) and np.all(tn >= 0):
                Pn, Mn = tn[:G * k].reshape(G, k), tn[G * k:].reshape(k, A)
                fn = _objective(Pn, Mn, d)
                if fn >= f - noise:
                    accepted = True
                    break
            t *= 0.5
        if not accepted:
            return P, M, f, dec < max(1e-6, 1e3 * noise), it - 1, trace, gnorm
        theta, P, M, f = tn, Pn, Mn, fn
        trace.append(f)
    return P, M, f, False, maxiter, trace, gnorm


@dataclass(frozen=True)
class _Fit:
    P: np.ndarray
    M: np.ndarray
    objective: float
    convergence: ConvergenceInfo


def _fit(d: _Data, con: _Constraint, start=None, *, maxiter=5000, tol=1e-10) -> _Fit:
    """EM (SQUAREM) to the neighbourhood of the maximum, then a Newton polish on the active
    face; EM continues if Newton cannot be used (boundary, indefinite Hessian)."""
    if start is None:
        M0 = d.M_lab.copy()
        P0 = _start_P(d, M0)
    else:
        P0, M0 = (np.array(a, dtype=float) for a in start)
    if con.kind == "rows":
        P0 = np.broadcast_to(con.value, P0.shape).copy()
    elif con.kind == "equal":
        w = d.F.sum(axis=1)
        P0 = np.broadcast_to((w @ P0) / w.sum(), P0.shape).copy()
    elif con.kind == "entry":
        P0[con.group] = _fix_entry(P0[con.group], con.cls, con.v)
    if not d.joint:
        M0 = d.M_lab.copy()
    method = "EM (SQUAREM) + Newton"
    if start is not None:  # warm start (profiles, restricted fits): Newton first
        f0 = _objective(P0, M0, d)
        if np.isfinite(f0):
            P, M, f, ok, nit, ntrace, gnorm = _newton(P0, M0, f0, d, con)
            if ok:
                conv = ConvergenceInfo(True, nit, "Newton (warm start)", "",
                                       np.asarray([f0, *ntrace]), gnorm)
                return _Fit(P, M, f, conv)
    n_em = min(maxiter, 100)
    P, M, f, info = _em(P0, M0, d, con, maxiter=n_em, tol=tol)
    trace = list(info.trace)
    iters = info.iterations
    if np.isfinite(f):
        P, M, f, ok, nit, ntrace, gnorm = _newton(P, M, f, d, con)
        trace += ntrace
        iters += nit
    else:
        ok, gnorm = False, np.nan
    if ok:
        conv = ConvergenceInfo(True, iters, method, "", np.asarray(trace), gnorm)
        return _Fit(P, M, f, conv)
    if not info.converged and maxiter > n_em:
        P, M, f, info2 = _em(P, M, d, con, maxiter=maxiter - n_em, tol=tol)
        trace += list(info2.trace[1:])
        iters += info2.iterations
        info = info2
    conv = ConvergenceInfo(info.converged, iters, "EM (SQUAREM)", info.message,
                           np.asarray(trace), info.grad_norm)
    return _Fit(P, M, f, conv)


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------
def _validate_pred(pred, name, k=None, binary=None):
    """Return (array, binary, class names or None). Binary: vector of P(Y = 1)."""
    names = None
    if isinstance(pred, pd.DataFrame):
        if not all(pd.api.types.is_numeric_dtype(pred[c]) for c in pred.columns):
            raise ValueError(f"{name}: non-numeric column(s)")
        names = list(pred.columns)
        arr = pred.to_numpy(dtype=float, copy=True)
    else:
        try:
            arr = np.array(pred, dtype=float, copy=True)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be numeric predicted probabilities") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim == 2 and arr.shape[1] == 2:
        arr = arr[:, 1]  # binary given as two columns: keep P(class 1)
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must be a vector of binary probabilities or an (n, k) matrix "
                         f"of class probabilities; got {arr.ndim} dimensions")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    if np.isnan(arr).any():
        raise ValueError(f"{name}: {int(np.isnan(arr).sum())} missing value(s)")
    bad = ~((arr >= 0) & (arr <= 1))
    if bad.any():
        raise ValueError(f"{name} must be probabilities in [0, 1]; {int(bad.sum())} value(s) are "
                         f"not (e.g. {arr[bad].ravel()[:3].tolist()})")
    is_binary = arr.ndim == 1
    if not is_binary:
        rs = arr.sum(axis=1)
        off = np.abs(rs - 1) > _ROW_TOL
        if off.any():
            raise ValueError(f"{name}: rows must sum to 1; {int(off.sum())} do not (e.g. row "
                             f"{int(np.flatnonzero(off)[0])} sums to {rs[off][0]:.6g})")
    if binary is not None and is_binary != binary:
        want = "a vector of binary probabilities" if binary else "an (n, k) matrix"
        raise ValueError(f"{name} must be {want} like the lab predictions")
    if k is not None and not is_binary and arr.shape[1] != k:
        raise ValueError(f"{name} has {arr.shape[1]} columns; the lab predictions have {k}")
    return arr, is_binary, names


class URC:
    """Unsupervised recalibration: estimate field base rates from a classifier's predictions.

    Parameters
    ----------
    lab_pred : array_like or pandas.DataFrame
        The classifier's predictions on the labelled lab set: a vector of ``P(Y = 1)`` for a
        binary classifier (an ``(n, 2)`` matrix is reduced to its second column), or an
        ``(n, k)`` matrix of class probabilities whose rows sum to 1. The classifier is assumed
        calibrated on the lab population (eq. (1) of seed 003).
    lab_labels : array_like
        True classes of the lab items: 0/1 for binary; for ``k`` classes integer codes
        ``0..k-1`` or, when ``lab_pred`` is a DataFrame, its column names.
    n_bins : int, optional
        Binary: the number of intervals of equal lab probability ``|A|`` (eq. (11)); default 4,
        as the paper recommends. Multiclass: the number of such intervals within each
        predicted class (arg max), ``|A| = k n_bins``; default 2.

    Attributes
    ----------
    partition : Partition
    lab_counts : pandas.DataFrame
        Lab histogram per class (rows) and cell (columns).
    M : pandas.DataFrame
        The lab estimate of ``M_A`` (eq. (9)): row ``i`` is the distribution of the cells
        among lab items of class ``i``.
    lab_base_rates : pandas.Series
    warnings : list of (str, str)
        Warnings raised while building the partition.

    Warns
    -----
    IllConditionedWarning
        When the condition number of the lab ``M_A`` exceeds 10 (about AUC 0.56 for a binary
        classifier with four cells) or a chi-square test cannot tell the classes' lab histograms
        apart (p > 0.01): the base rates are then weakly identified (Lemma 7).
    EmptyBinWarning
        When raw bins hold no lab prediction (they are merged) or a class has no lab prediction
        in some cell (``M_A`` has a zero there).

    Notes
    -----
    Requires every class to occur in the lab set and ``|A| >= k``; the goodness-of-fit test has
    ``|A| - k`` degrees of freedom per group, so ``|A| > k`` is needed to test Axiom 2.

    Examples
    --------
    >>> import numpy as np, puinfer as pu
    >>> from puinfer.simulate.urc import simulate_urc
    >>> sim = simulate_urc(n_lab=400, n_field=5000, field_base_rate=0.2,
    ...                    rng=np.random.default_rng(1))
    >>> res = pu.URC(sim.lab_pred, sim.lab_y).fit(sim.field_pred)
    >>> round(float(res.base_rate.iloc[0]), 2)  # doctest: +SKIP
    0.2
    """

    def __init__(self, lab_pred, lab_labels, n_bins: int | None = None):
        pred, binary, names = _validate_pred(lab_pred, "lab_pred")
        self._binary = binary
        if binary:
            classes = list(names[-2:]) if names is not None and len(names) >= 2 else [0, 1]
            k = 2
        else:
            k = pred.shape[1]
            classes = names if names is not None else list(range(k))
        self.classes = classes
        self.n_classes = k
        codes = self._codes(lab_labels, pred.shape[0])
        if n_bins is None:
            n_bins = 4 if binary else 2
        if int(n_bins) != n_bins or n_bins < (k if binary else 1):
            raise ValueError(f"n_bins must be an integer >= {k if binary else 1}; got {n_bins}")
        n_bins = int(n_bins)
        self.warnings: list = []
        self.partition = _build_partition(pred, codes, k, n_bins, binary, self.warnings)
        A = self.partition.n_cells
        if A < k:
            raise ValueError(f"the partition has |A| = {A} cells (after merging empty bins) for "
                             f"{k} classes; URC needs |A| >= k (more distinct lab predictions or "
                             "more bins)")
        cells = self.partition.assign(pred)
        L = np.bincount(codes * A + cells, minlength=k * A).reshape(k, A).astype(float)
        self._L = L
        self._n_lab = pred.shape[0]
        zero = np.argwhere(L == 0)
        if zero.size:
            which = ", ".join(f"class {classes[i]} in cell {a + 1}" for i, a in zero[:4])
            warn_and_record(self.warnings, f"{len(zero)} lab histogram cell(s) are empty ({which}"
                            f"{', ...' if len(zero) > 4 else ''}): M_A has zeros there, an "
                            "estimate on the boundary; consider fewer bins", EmptyBinWarning)
        M = L / L.sum(axis=1, keepdims=True)
        sv = np.linalg.svd(M, compute_uv=False)
        self.condition_number = float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf
        # are the lab histograms of the classes distinguishable at all? (chi-square test of
        # homogeneity of the rows of the lab counts)
        E = np.outer(L.sum(axis=1), L.sum(axis=0)) / L.sum()
        keep = E.sum(axis=0) > 0
        X2 = float(np.sum((L[:, keep] - E[:, keep]) ** 2 / E[:, keep]))
        self.lab_separation_pvalue = float(stats.chi2.sf(X2, (k - 1) * (keep.sum() - 1)))
        if self.condition_number > 10 or self.lab_separation_pvalue > 0.01:
            warn_and_record(self.warnings, f"M_A is ill-conditioned (condition number "
                            f"{self.condition_number:.3g}; lab test that the classes have the "
                            f"same prediction histogram: p = {self.lab_separation_pvalue:.3g}): "
                            "the predictions separate the classes poorly, so the base rates are "
                            "weakly identified and their intervals wide", IllConditionedWarning)

    # -- lab summaries --------------------------------------------------------------------------
    def _codes(self, labels, n):
        if self._binary and self.classes == [0, 1]:
            y = labels.astype(float) if isinstance(labels, pd.Series) and labels.dtype == bool \
                else labels
            try:
                arr = np.array(y, dtype=float, copy=True).ravel()
            except (TypeError, ValueError):
                raise ValueError("lab_labels must be 0/1 for a binary classifier") from None
            if np.isnan(arr).any():
                raise ValueError("lab_labels has missing values")
            bad = (arr != 0) & (arr != 1)
            if bad.any():
                raise ValueError(f"lab_labels must be 0/1; found {np.unique(arr[bad])[:5].tolist()}")
            codes = arr.astype(np.intp)
        else:
            lab = pd.Series(np.asarray(labels).ravel())
            if lab.isna().any():
                raise ValueError("lab_labels has missing values")
            idx = pd.Index(self.classes).get_indexer(lab)
            if np.any(idx < 0):
                raise ValueError(f"lab_labels: value(s) {lab[idx < 0].unique()[:5].tolist()} are "
                                 f"not among the classes {self.classes}")
            codes = idx.astype(np.intp)
        if codes.shape[0] != n:
            raise ValueError(f"lab_labels has {codes.shape[0]} entries; lab_pred has {n} rows")
        missing = [self.classes[i] for i in range(self.n_classes)
                   if not np.any(codes == i)]
        if missing:
            raise ValueError(f"lab_labels: class(es) {missing} have no lab items; URC needs every "
                             "class in the lab set")
        return codes

    @property
    def lab_counts(self) -> pd.DataFrame:
        """Lab histogram: classes (rows) by cells (columns)."""
        return pd.DataFrame(self._L, index=pd.Index(self.classes, name="class"),
                            columns=pd.Index(self.partition.labels, name="cell"))

    @property
    def M(self) -> pd.DataFrame:
        """Lab estimate of ``M_A`` (eq. (9))."""
        return self.lab_counts.div(self._L.sum(axis=1), axis=0)

    @property
    def lab_base_rates(self) -> pd.Series:
        """Class shares in the lab set."""
        n = self._L.sum(axis=1)
        return pd.Series(n / n.sum(), index=pd.Index(self.classes, name="class"),
                         name="lab base rate")

    @property
    def n_lab(self) -> int:
        """Number of lab items."""
        return self._n_lab

    def assign(self, pred) -> np.ndarray:
        """Cell (0-based) of each prediction in ``pred``."""
        arr, _, _ = _validate_pred(pred, "pred", k=self.n_classes, binary=self._binary)
        return self.partition.assign(arr)

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, field_pred, groups=None, *, likelihood: str = "joint",
            prior_strength: float = 0.0, maxiter: int = 5000, tol: float = 1e-10
            ) -> URCResults:
        """Estimate the field base rates (Definition 8), per group when ``groups`` is given.

        Parameters
        ----------
        field_pred : array_like or pandas.DataFrame
            Predictions on the field data, in the same form as ``lab_pred``.
        groups : array_like, optional
            A subpopulation label per field item (local URC, Algorithm 1 of seed 003).
        likelihood : {"joint", "fixed"}
            ``"joint"`` (default): lab and field histograms in one likelihood with ``M_A`` free,
            so intervals and tests carry the lab set's uncertainty. ``"fixed"`` (alias
            ``"paper"``): ``M_A`` fixed at its lab estimate (eq. (13)).
        prior_strength : float
            Strength ``s >= 0`` (in pseudo-observations per group) of a Dirichlet prior
            ``Dir(1 + s pi_lab)`` on each group's base rates, centred (its mode) at the lab base
            rates ``pi_lab``: the regulariser of Remark 11 in clean form (its log density is
            ``-s KL(pi_lab || p)`` up to a constant). ``0`` gives maximum likelihood; ``s > 0``
            the MAP estimate (Theorem 10, part 3).
        maxiter, tol : int, float
            EM iterations (SQUAREM cycles) and the convergence tolerance on the largest
            parameter change.

        Returns
        -------
        URCResults

        Raises
        ------
        ValueError
            For predictions outside [0, 1], missing values, a shape unlike the lab's, groups of
            the wrong length or with missing values, an unknown likelihood, or a negative
            ``prior_strength``.
        """
        if likelihood == "paper":
            likelihood = "fixed"
        if likelihood not in ("joint", "fixed"):
            raise ValueError(f"likelihood must be 'joint' or 'fixed' (alias 'paper'); got "
                             f"{likelihood!r}")
        s = float(prior_strength)
        if not (np.isfinite(s) and s >= 0):
            raise ValueError(f"prior_strength must be a non-negative number; got {prior_strength}")
        pred, _, _ = _validate_pred(field_pred, "field_pred", k=self.n_classes,
                                    binary=self._binary)
        N = pred.shape[0]
        if groups is None:
            codes = np.zeros(N, dtype=np.intp)
            gindex = pd.Index(["all"], name="group")
        else:
            gser = groups if isinstance(groups, pd.Series) else pd.Series(np.asarray(groups))
            if len(gser) != N:
                raise ValueError(f"groups has {len(gser)} entries; field_pred has {N} rows")
            if gser.isna().any():
                raise ValueError(f"groups has {int(gser.isna().sum())} missing value(s)")
            codes, uniq = pd.factorize(gser, sort=True)
            codes = codes.astype(np.intp)
            gindex = pd.Index(uniq, name=gser.name if gser.name is not None else "group")
        G = len(gindex)
        A = self.partition.n_cells
        cells = self.partition.assign(pred)
        F = np.bincount(codes * A + cells, minlength=G * A).reshape(G, A).astype(float)
        Ng = F.sum(axis=1)
        if self._binary:
            m1 = np.bincount(codes, weights=pred, minlength=G) / Ng
            naive = np.column_stack([1 - m1, m1])
        else:
            naive = np.column_stack([np.bincount(codes, weights=pred[:, j], minlength=G)
                                     for j in range(self.n_classes)]) / Ng[:, None]
        L = self._L
        d = _Data(L, F, L.sum(axis=1) / L.sum(), likelihood == "joint", s)
        fit = _fit(d, _Constraint(), maxiter=maxiter, tol=tol)
        return URCResults(self, d, fit, gindex, naive, _Constraint(),
                          options=dict(maxiter=maxiter, tol=tol))


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------
class URCResults(LikelihoodResults):
    """Results of :meth:`URC.fit`: field base rates, profile intervals, tests, recalibration.

    Attributes
    ----------
    likelihood : str
        ``"joint"`` or ``"fixed"``.
    prior_strength : float
        Dirichlet prior strength (0: maximum likelihood).
    llf : float
        The log-likelihood of the counts at the estimate (including the multinomial
        coefficients).
    objective : float
        The maximised objective: ``llf`` plus the log Dirichlet prior when
        ``prior_strength > 0`` (used by the likelihood-ratio tests and the profiles).
    convergence : ConvergenceInfo
    warnings : list of (str, str)
        ``(category, message)`` of every warning raised for this fit (and by the model).
    """

    def __init__(self, model: URC, data: _Data, fit: _Fit, groups: pd.Index, naive,
                 constraint: _Constraint, options: dict):
        self.model = model
        self._d = data
        self._fitres = fit
        self._groups = groups
        self._naive = naive
        self.constraint = constraint
        self._options = options
        self.likelihood = "joint" if data.joint else "fixed"
        self.prior_strength = data.strength
        k = model.n_classes
        G = len(groups)
        A = data.F.shape[1]
        self._objective_value = fit.objective + data.const
        self.llf = (_objective(fit.P, fit.M, dataclasses.replace(data, strength=0.0))
                    + data.const)
        self.llf_kind = (f"URC multinomial log-likelihood ({self.likelihood})"
                         + (f" + Dirichlet log prior (strength {data.strength:g})"
                            if data.strength > 0 else ""))
        self.nobs = int(data.F.sum() + (data.L.sum() if data.joint else 0))
        n_p = {"free": G * (k - 1), "equal": k - 1, "rows": 0, "entry": G * (k - 1) - 1}
        self.df_model = n_p[constraint.kind] + (k * (A - 1) if data.joint else 0)
        self.data_fingerprint = data_fingerprint(data.L, data.F, [data.strength])
        self.model_name = {"free": "URC", "equal": "URC (equal base rates)",
                           "rows": "URC (base rates fixed)",
                           "entry": "URC (one base rate fixed)"}[constraint.kind]
        self.convergence = fit.convergence
        self.warnings = list(model.warnings)
        self._ci_cache: dict = {}
        self._profiles: dict = {}
        if constraint.kind != "free":
            return
        if not fit.convergence.converged:
            warn_and_record(self.warnings, f"URC did not converge: {fit.convergence.message}",
                            ConvergenceWarning)
        at_b = (fit.P < _BOUNDARY) | (fit.P > 1 - _BOUNDARY)
        if np.any(at_b):
            gi, ci = np.nonzero(at_b)
            which = ", ".join(f"{groups[g]}/{model.classes[c]}" for g, c in zip(gi[:4], ci[:4],
                                                                            strict=True))
            warn_and_record(self.warnings, f"base rate(s) at the boundary 0 or 1 (group/class: "
                            f"{which}): profile intervals are one-sided there and the chi-square "
                            "approximations of the tests are unreliable", BoundaryWarning)

    @property
    def objective(self) -> float:
        """The maximised objective (``llf`` plus the log prior when penalised)."""
        return self._objective_value

    # -- estimates ------------------------------------------------------------------------------
    @property
    def groups(self) -> pd.Index:
        """The field groups (``"all"`` when no groups were given)."""
        return self._groups.copy()

    @property
    def base_rates(self) -> pd.DataFrame:
        """Estimated field base rates: groups (rows) by classes (columns)."""
        return pd.DataFrame(self._fitres.P, index=self.groups,
                            columns=pd.Index(self.model.classes, name="class"))

    @property
    def base_rate(self) -> pd.Series:
        """Binary classifiers: the estimated field base rate ``P(Y = 1)`` per group."""
        if self.model.n_classes != 2:
            raise AttributeError("base_rate is for binary classifiers; use base_rates")
        return pd.Series(self._fitres.P[:, 1], index=self.groups, name="base rate")

    @property
    def naive(self) -> pd.DataFrame:
        """The naive estimator (mean prediction per group and class; biased, Theorem 5)."""
        return pd.DataFrame(self._naive, index=self.groups,
                            columns=pd.Index(self.model.classes, name="class"))

    @property
    def lab_base_rates(self) -> pd.Series:
        """Class shares in the lab set."""
        return self.model.lab_base_rates

    @property
    def M(self) -> pd.DataFrame:
        """``M_A`` at the estimate (the lab estimate for the fixed likelihood)."""
        return pd.DataFrame(self._fitres.M, index=pd.Index(self.model.classes, name="class"),
                            columns=pd.Index(self.model.partition.labels, name="cell"))

    @property
    def observed(self) -> pd.DataFrame:
        """Field histogram: groups (rows) by cells (columns)."""
        return pd.DataFrame(self._d.F, index=self.groups,
                            columns=pd.Index(self.model.partition.labels, name="cell"))

    @property
    def fitted(self) -> pd.DataFrame:
        """Fitted field histogram ``N_g M_A' p_g``."""
        E = self._d.F.sum(axis=1, keepdims=True) * (self._fitres.P @ self._fitres.M)
        return pd.DataFrame(E, index=self.groups, columns=self.observed.columns)

    @property
    def n_field(self) -> pd.Series:
        """Number of field predictions per group."""
        return pd.Series(self._d.F.sum(axis=1).astype(int), index=self.groups, name="n_field")

    def _free_index(self):
        k = self.model.n_classes
        cls = [1] if k == 2 else list(range(k))
        return [(g, j) for g in range(len(self._groups)) for j in cls]

    @property
    def params(self) -> pd.Series:
        """Base rates as a Series indexed by (group, class); binary: class 1 only."""
        idx = self._free_index()
        return pd.Series([self._fitres.P[g, j] for g, j in idx],
                         index=pd.MultiIndex.from_tuples(
                             [(self._groups[g], self.model.classes[j]) for g, j in idx],
                             names=["group", "class"]), name="base rate")

    @property
    def _params(self) -> pd.Series:
        return self.params

    @functools.cached_property
    def _cov(self):
        """Inverse observed information of the base rates (``None`` if unavailable).

        The Hessian of the objective in (p, M_A) is projected on the simplex constraints
        (every other parameter, M_A included under the joint likelihood, is profiled out by
        the inverse); estimates on the boundary get no standard error (NaN)."""
        if self.constraint.kind != "free":
            return None
        P, M, d = self._fitres.P, self._fitres.M, self._d
        G, k = P.shape
        grad, H = _grad_hess(P, M, d)
        T = _tangent(P, M, d, _Constraint(), grad)
        if T is None or T.shape[1] == 0:
            return None
        Tt = T.T.tocsr()
        Hr = -(Tt @ np.asarray(Tt @ H).T)
        try:
            chol = linalg.cho_factor(Hr, lower=True)
        except linalg.LinAlgError:
            return None
        idx = [g * k + j for g, j in self._free_index()]
        Ts = T[idx].toarray()                       # rows of theta for the base rates
        cov = Ts @ linalg.cho_solve(chol, Ts.T)
        at_b = np.array([(P[g, j] < _BOUNDARY) or (P[g, j] > 1 - _BOUNDARY)
                         for g, j in self._free_index()])
        cov[at_b, :] = np.nan
        cov[:, at_b] = np.nan
        index = self.params.index
        return pd.DataFrame(cov, index=index, columns=index)

    # -- profile likelihood ---------------------------------------------------------------------
    def _group_pos(self, group):
        if group is None:
            if len(self._groups) > 1:
                raise ValueError("group: several groups were fitted; name one")
            return 0
        pos = self._groups.get_indexer([group])[0]
        if pos < 0:
            raise ValueError(f"group {group!r} is not among the fitted groups")
        return pos

    def _class_pos(self, cls):
        if cls is None:
            if self.model.n_classes == 2:
                return 1
            raise ValueError("cls: name the class to profile")
        pos = pd.Index(self.model.classes).get_indexer([cls])[0]
        if pos < 0:
            raise ValueError(f"cls {cls!r} is not among the classes {self.model.classes}")
        return pos

    def _approx_se(self, g, j):
        """Standard error of p_g[j] from the fixed-M information (a first bracketing step)."""
        P, M = self._fitres.P, self._fitres.M
        p = P[g]
        q = p @ M
        F = self._d.F[g]
        ok = q > 0
        w = np.delete(p, j)
        rest = np.delete(M, j, axis=0)
        w = w / w.sum() if w.sum() > 0 else np.full(w.size, 1.0 / w.size)
        dq = M[j, ok] - w @ rest[:, ok]  # d q / d p_j, the others scaled proportionally
        info = float(np.sum(F[ok] * dq ** 2 / q[ok] ** 2))
        return float(min(0.25, 1.0 / np.sqrt(info))) if info > 0 else 0.05

    def profile(self, group=None, cls=None) -> Profile:
        """Profile likelihood of the base rate of class ``cls`` in ``group``.

        Every other parameter (the other base rates of the group, re-normalised; the other
        groups' base rates; ``M_A`` under the joint likelihood) is re-maximised at each value.

        Parameters
        ----------
        group : label, optional
            Needed when several groups were fitted.
        cls : label, optional
            Needed for more than two classes; binary: class 1.

        Returns
        -------
        Profile
        """
        if self.constraint.kind != "free":
            raise ValueError("profiles are available for the unrestricted fit only")
        g, j = self._group_pos(group), self._class_pos(cls)
        key = (g, j)
        if key not in self._profiles:
            tol = self._options["tol"]
            maxiter = self._options["maxiter"]
            P_hat, M_hat = self._fitres.P, self._fitres.M
            if self._d.joint:
                d, gg, offset = self._d, g, self._d.const
            else:
                # M fixed: the groups are independent, so only group g is refitted and the
                # others keep their maximum: objective = rest + objective of group g
                d = dataclasses.replace(self._d, F=self._d.F[g:g + 1])
                P_hat = P_hat[g:g + 1]
                gg = 0
                offset = self.objective - _objective(P_hat, M_hat, d)
            state = {"start": (P_hat, M_hat)}

            def loglik_at(v):
                con = _Constraint("entry", group=gg, cls=j, v=float(v))
                f = _fit(d, con, start=state["start"], maxiter=maxiter, tol=tol)
                if not f.convergence.converged:  # retry from the unrestricted maximum
                    f2 = _fit(d, con, start=(P_hat, M_hat), maxiter=maxiter, tol=tol)
                    if f2.objective > f.objective:
                        f = f2
                if np.isfinite(f.objective):
                    state["start"] = (f.P, f.M)
                    return f.objective + offset
                return -1e300  # the data are impossible at this value (R is "infinite")

            name = f"p[{self._groups[g]}, {self.model.classes[j]}]"
            self._profiles[key] = Profile(name, self._fitres.P[g, j], self.objective, loglik_at,
                                          bounds=(0.0, 1.0), step=self._approx_se(g, j))
        return self._profiles[key]

    def conf_int(self, level: float = 0.95, method: str = "profile") -> pd.DataFrame:
        """Confidence intervals for the base rates: profile likelihood (default) or Wald.

        Profile: the limits solve ``R(v) = chi2_{1, level}`` by root-finding; a limit at 0 or 1
        is one-sided (the profile never reaches the cut-off). Wald: ``estimate -/+ z se`` with
        ``se`` from the observed information (``bse``), which can leave [0, 1]. Rows are
        (group, class); binary classifiers give class 1 only.

        Parameters
        ----------
        level : float
            Confidence level in (0, 1).
        method : {"profile", "wald"}

        Returns
        -------
        pandas.DataFrame
            Columns ``lower`` and ``upper``.
        """
        level = check_level(level)
        if method == "wald":
            return super().conf_int(level)
        if method != "profile":
            raise ValueError(f"method must be 'profile' or 'wald'; got {method!r}")
        if level not in self._ci_cache:
            rows = [self.profile(self._groups[g], self.model.classes[j]).conf_int(level)
                    for g, j in self._free_index()]
            df = pd.DataFrame({"lower": [r["lower"] for r in rows],
                               "upper": [r["upper"] for r in rows]}, index=self.params.index)
            self._ci_cache[level] = df
        return self._ci_cache[level].copy()

    # -- restricted fits and tests --------------------------------------------------------------
    def _restricted(self, con: _Constraint) -> URCResults:
        fit = _fit(self._d, con, start=(self._fitres.P, self._fitres.M),
                   maxiter=self._options["maxiter"], tol=self._options["tol"])
        return URCResults(self.model, self._d, fit, self._groups, self._naive, con,
                          self._options)

    def is_nested_in(self, other) -> bool:
        """Restricted URC fits are nested in the free fit on the same data and likelihood."""
        order = {"rows": 0, "equal": 1, "free": 2}
        return (isinstance(other, URCResults)
                and other.data_fingerprint == self.data_fingerprint
                and other.llf_kind == self.llf_kind
                and self.constraint.kind in order and other.constraint.kind in order
                and order[self.constraint.kind] < order[other.constraint.kind])

    def _boundary_note(self):
        P = self._fitres.P
        if np.any((P < _BOUNDARY) | (P > 1 - _BOUNDARY)):
            return {"note": "an estimate is on the boundary; the chi-square reference is "
                            "approximate"}
        return {}

    def test_no_shift(self, value=None) -> HypothesisTestResult:
        """Likelihood-ratio test that every group's field base rates equal ``value``.

        Parameters
        ----------
        value : float or array_like, optional
            The base rates under the null; default the lab base rates (no prior shift).
            Binary: ``P(Y = 1)``; multiclass: a vector over the classes summing to 1.

        Returns
        -------
        HypothesisTestResult
            ``2 (llf - llf_0)`` against chi-square with ``G (k - 1)`` degrees of freedom (under
            the joint likelihood ``M_A`` is re-maximised under the null).
        """
        k = self.model.n_classes
        if value is None:
            val = self._d.pi_lab.copy()
            what = "the lab base rates"
        else:
            arr = np.atleast_1d(np.asarray(value, dtype=float))
            if k == 2 and arr.size == 1:
                arr = np.array([1 - arr[0], arr[0]])
            if arr.shape != (k,) or np.any(arr < 0) or np.any(arr > 1) \
                    or abs(arr.sum() - 1) > _ROW_TOL:
                raise ValueError(f"value must be a base rate in [0, 1] (binary) or {k} class "
                                 "shares summing to 1")
            val = arr
            what = f"{val[1]:.4g}" if k == 2 else str(np.round(val, 4).tolist())
        restricted = self._restricted(_Constraint("rows", value=val))
        t = lr_test(restricted, self)
        return dataclasses.replace(
            t, null=f"the field base rates of every group equal {what}",
            method="URC likelihood-ratio test of no prior shift",
            extra={**t.extra, **self._boundary_note(), "likelihood": self.likelihood})

    def test_equal_base_rates(self) -> HypothesisTestResult:
        """Likelihood-ratio test that all groups share one set of base rates.

        Returns
        -------
        HypothesisTestResult
            Chi-square with ``(G - 1)(k - 1)`` degrees of freedom; invalid for a single group.
        """
        null = "all groups share the same field base rates"
        method = "URC likelihood-ratio test of equal base rates across groups"
        if len(self._groups) < 2:
            return HypothesisTestResult.invalid("only one group was fitted", null=null,
                                                method=method)
        restricted = self._restricted(_Constraint("equal"))
        t = lr_test(restricted, self)
        return dataclasses.replace(t, null=null, method=method,
                                   extra={**t.extra, **self._boundary_note(),
                                          "likelihood": self.likelihood})

    def gof(self, method: str = "pearson", by_group: bool = False):
        """Chi-square goodness of fit of the fitted histograms: a test of Axiom 2.

        Parameters
        ----------
        method : {"pearson", "lr"}
            Pearson's X^2 or the likelihood-ratio G^2 (the deviance).
        by_group : bool
            If True, a DataFrame with one test per group (each on ``|A| - k`` degrees of
            freedom); under the joint likelihood each group's test refits the lab histograms
            with that group's field histogram alone.

        Returns
        -------
        HypothesisTestResult or pandas.DataFrame

        Notes
        -----
        Fixed likelihood: the field cells are compared with ``N_g M_A' p_g``; ``G |A|`` cells,
        ``G`` multinomial totals and ``G (k - 1)`` fitted base rates leave ``G (|A| - k)``
        degrees of freedom. Joint likelihood: the lab cells (against ``n_i M_A[i, :]``) are part
        of the data; ``(k + G) |A|`` cells, ``k + G`` totals and ``k (|A| - 1) + G (k - 1)``
        parameters leave again ``G (|A| - k)`` degrees of freedom (the lab histograms alone are
        saturated by ``M_A``). The fixed-likelihood test ignores the sampling error of the lab
        estimate of ``M_A`` and over-rejects when the lab set is small; the joint one accounts
        for it. With ``prior_strength > 0`` the fitted values are MAP estimates and the
        reference distribution is approximate.
        """
        if method not in ("pearson", "lr"):
            raise ValueError("method must be 'pearson' or 'lr'")
        null = "Axiom 2 (consistency): the field histograms are mixtures M_A' p of the lab ones"
        if by_group:
            rows = []
            for g in range(len(self._groups)):
                if self._d.joint:
                    dg = dataclasses.replace(self._d, F=self._d.F[g:g + 1])
                    fit = _fit(dg, _Constraint(), start=(self._fitres.P[g:g + 1],
                                                         self._fitres.M),
                               maxiter=self._options["maxiter"], tol=self._options["tol"])
                    t = self._gof_test(dg, fit.P, fit.M, method, null)
                else:
                    dg = dataclasses.replace(self._d, F=self._d.F[g:g + 1])
                    t = self._gof_test(dg, self._fitres.P[g:g + 1], self._fitres.M, method,
                                       null)
                rows.append({"statistic": t.statistic, "df": t.df, "p-value": t.pvalue})
            return pd.DataFrame(rows, index=self.groups)
        return self._gof_test(self._d, self._fitres.P, self._fitres.M, method, null)

    @staticmethod
    def _gof_test(d: _Data, P, M, method, null):
        k = P.shape[1]
        G, A = d.F.shape
        E = d.F.sum(axis=1, keepdims=True) * (P @ M)
        if d.joint:
            obs = np.vstack([d.L, d.F])
            exp = np.vstack([d.L.sum(axis=1, keepdims=True) * M, E])
            ddof = k * (A - 1) + G * (k - 1)
        else:
            obs, exp, ddof = d.F, E, G * (k - 1)
        t = chisq_gof(obs, exp, ddof=ddof, method=method, null=null)
        if t.invalid_reason:
            return t
        return dataclasses.replace(t, method=f"URC {t.method} ({'joint' if d.joint else 'fixed'}"
                                   " likelihood)")

    # -- recalibration --------------------------------------------------------------------------
    def recalibrate(self, pred, groups=None, *, old_prior=None):
        """Recalibrate predictions to the estimated field base rates (Lemma 3, Algorithm 1).

        Parameters
        ----------
        pred : array_like, pandas.Series or pandas.DataFrame
            Predictions of the same classifier (vector of ``P(Y = 1)`` or an (n, k) matrix).
        groups : array_like, optional
            Group of each prediction; required when several groups were fitted. Each row is
            recalibrated with its group's estimated base rates.
        old_prior : float or array_like, optional
            The base rates the classifier is calibrated for; default the lab base rates.

        Returns
        -------
        same type as ``pred``
            ``P_field(Y | C)`` by eqs. (5)-(6).
        """
        k = self.model.n_classes
        P = self._fitres.P
        if groups is None:
            if len(self._groups) > 1:
                raise ValueError("groups: several groups were fitted; give each prediction's "
                                 "group")
            newp = P[0]
        else:
            g = pd.Index(self._groups).get_indexer(np.asarray(groups).ravel())
            if np.any(g < 0):
                bad = pd.unique(np.asarray(groups).ravel()[g < 0])[:5].tolist()
                raise ValueError(f"groups: {bad} were not among the fitted groups")
            newp = P[g]
        old = self._d.pi_lab if old_prior is None else old_prior
        if k == 2:
            old1 = float(old[1] if np.ndim(old) else old)
            if np.ndim(pred) == 2 and np.shape(pred)[1] == 2:  # both class columns given
                return adjust_prior(pred, [1 - old1, old1], newp)
            return adjust_prior(pred, old1, newp[..., 1])
        return adjust_prior(pred, old, newp)

    # -- presentation ---------------------------------------------------------------------------
    def _table(self, level=0.95) -> pd.DataFrame:
        ci = self.conf_int(level)
        pidx = self.params.index
        naive = self.naive.stack()
        lab = self.lab_base_rates
        tab = pd.DataFrame({
            "estimate": self.params,
            "std err": self.bse,
            f"[{(1 - level) / 2:.3g}": ci["lower"],
            f"{1 - (1 - level) / 2:.3g}]": ci["upper"],
            "naive": naive.reindex(pidx).to_numpy(),
            "lab": lab.reindex(pidx.get_level_values("class")).to_numpy(),
        }, index=pidx)
        return tab

    def summary(self, level: float = 0.95) -> Summary:
        """Base rates with profile intervals, the naive estimator, the tests and convergence."""
        m = self.model
        s = Summary("Unsupervised recalibration (URC): field base rates")
        s.add_info("Likelihood", "joint (lab + field)" if self._d.joint
                   else "fixed M_A (paper)")
        s.add_info("Classes", m.n_classes)
        s.add_info("Cells |A|", m.partition.n_cells)
        s.add_info("Partition", m.partition.kind)
        s.add_info("Lab n", m.n_lab)
        s.add_info("Field N", int(self._d.F.sum()))
        s.add_info("Groups", len(self._groups))
        s.add_info("Prior strength", self.prior_strength)
        s.add_info("Log-likelihood", self.llf)
        if self.prior_strength > 0:
            s.add_info("Log-posterior", self.objective)
        s.add_info("cond(M_A)", m.condition_number)
        s.add_info("Converged", self.converged)
        s.add_table(f"Base rates ({level:.0%} profile-likelihood intervals)", self._table(level))
        tests = [self.test_no_shift()]
        if len(self._groups) > 1:
            tests.append(self.test_equal_base_rates())
        tests.append(self.gof())
        tab = pd.DataFrame({
            "statistic": [t.statistic for t in tests],
            "df": [int(t.df) if np.isfinite(t.df) else t.df for t in tests],
            "p-value": [t.pvalue for t in tests]},
            index=["no shift (= lab rates)", "equal across groups", "goodness of fit (Axiom 2)"]
            if len(tests) == 3 else ["no shift (= lab rates)", "goodness of fit (Axiom 2)"])
        s.add_table("Likelihood-ratio and chi-square tests", tab)
        s.add_note(self.convergence.line())
        if self.prior_strength > 0:
            s.add_note("With a prior the estimates are MAP; intervals and tests use the "
                       "penalised log-likelihood (approximate).")
        for cat, msg in self.warnings:
            s.add_note(f"{cat}: {msg}")
        return s

    def plot_histogram(self, group=None, ax=None):
        """Observed field histogram against the fitted one (and the no-shift expectation).

        Returns
        -------
        matplotlib.axes.Axes
        """
        from ..plotting import get_ax

        ax = get_ax(ax)
        g = self._group_pos(group)
        F = self._d.F[g]
        N = F.sum()
        A = F.size
        x = np.arange(A)
        ax.bar(x, F / N, width=0.7, color="lightgrey", edgecolor="grey", label="observed")
        fitted = self._fitres.P[g] @ self._fitres.M
        ax.plot(x, fitted, "o-", color="tab:blue",
                label="fitted $M_A' \\hat p$")
        ax.plot(x, self._d.pi_lab @ self._d.M_lab, "s--", color="tab:red",
                label="no shift (lab base rates)")
        ax.set_xticks(x)
        ax.set_xticklabels([str(i + 1) for i in x])
        ax.set_xlabel("cell of the partition")
        ax.set_ylabel("share of field predictions")
        ax.set_title(f"URC histogram: {self._groups[g]}")
        ax.legend(fontsize="small")
        return ax

    def plot_profile(self, group=None, cls=None, level: float = 0.95, ax=None,
                     true_value=None):
        """Profile likelihood-ratio curve of a base rate with the cut-off and the interval.

        Returns
        -------
        matplotlib.axes.Axes
        """
        return self.profile(group, cls).plot(ax=ax, level=level, true_value=true_value)

    def __repr__(self):
        return (f"<URCResults: {len(self._groups)} group(s), {self.model.n_classes} classes, "
                f"likelihood={self.likelihood}, llf={self.llf:.4f}>")

