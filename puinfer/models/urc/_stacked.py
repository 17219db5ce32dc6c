"""Many profile points of a URC fit solved together (the limit searches of all groups'
intervals in lockstep: issue 17).

Under the joint likelihood each point of the profile of ``p_h[j]`` (group ``h``'s base rate
of class ``j``) is a constrained fit of every group's rates and of ``M`` (k x |A|) with
``p_h[j]`` held at the point. Alone, each is a Newton run on arrays of G x |A|, whose cost is
mostly numpy's per-call overhead (about 0.5 ms per iteration at 300 groups, session 85); the
2G limit searches of G groups made that O(G^2) calls. Here the runs of many points are taken
together on (L, G, ...) arrays, as the scalar route (:meth:`._likelihood.ProfileLoglik.
loglik_at`, i.e. :func:`._likelihood._warm_newton`) takes each: from the same start, by the
same step (by blocks: each group's rates eliminated, then the Schur complement in the tangent
space of ``M``'s simplices), line search and stopping rule.

Binary (class 1's rate, ``x_g``): on the scalar route's pair basis, with its active face of
the rates and of ``M``'s cells (KKT release, the hold rule, the cut onto the bound) and its
modified steps where the Hessian on the face is indefinite. What the scalar route does beyond
that is left to it (NaN): a failed line search, a modified run that leaves the interior, a
point without a first-order path (its search starts from the maximum with EM), and profiles
that also start from other local maxima. Under the fixed likelihood a binary group's profile
is its own objective at the point (nothing else moves): computed for all points at once.

Three or more classes (every class's rate; either likelihood, ``M`` held under the fixed
one): the runs that take Newton steps only on the face they start on, where Newton's step does
not depend on the tangent basis and the active set does not change (each group's ``(k - 1) x
(k - 1)`` block eliminated through its Cholesky factor). Rates on the bound at the start (a
group's estimate of 0) and cells of ``M`` there (maximum-likelihood ``M``) stay there while
their KKT condition holds; a run that would release one, bring another component to the
bound (a full step leaving the simplices, an iterate within ``_FREE_MIN`` of it) or take a
modified step is left to the scalar route (mostly a rate held at 0 under the joint
likelihood: 81 of about 2,100 points of 100 groups of four classes, session 90).
"""

from __future__ import annotations

import numpy as np

from . import _likelihood as lik

#: at most this many (point, group, cell) entries per stacked array (the points are solved
#: in chunks: 300 groups of 4 cells take about 1,700 points at once)
_CHUNK_ENTRIES = 2_000_000
_MAXITER = lik._NEWTON_MAXITER
_NOISE = 1e3 * np.finfo(float).eps  # (optimize._noise_floor: 1000 ulps of |f|)


def eligible(ll: lik.ProfileLoglik) -> bool:
    """Whether :func:`profile_points` solves ``ll``'s points: a likelihood without a penalty
    on the rates (nor the pooled null's tied lab class counts), a binary fit's rate of
    class 1 (the one it reports) or any rate of three or more classes, and under the joint
    likelihood no start but the maximum's (the profile's other starts, from the fit's other
    local maxima, are the scalar route's)."""
    d = ll.data
    if d.active_penalty is not None or d.class_weight is not None:
        return False
    if d.L.shape[0] > 2:
        return len(ll.starts) == 1
    return bool(ll.cls == 1 and (len(ll.starts) == 1 or not d.joint))


def profile_points(lls, values) -> np.ndarray:
    """``lls[i].loglik_at(values[i])`` for every point where the stacked iteration converges
    as the scalar route's would (a maximum with the Hessian on the face negative definite;
    the slope recorded in ``lls[i].slopes`` as ``loglik_at`` records it), NaN where it
    leaves the point to ``loglik_at``. Every ``lls[i]`` is :func:`eligible` and profiles the
    same fit."""
    values = np.asarray(values, dtype=float)
    out = np.full(values.size, np.nan)
    if values.size == 0:
        return out
    d = lls[0].data
    if d.L.shape[0] > 2:
        return _multiclass_points(lls, values)
    if not d.joint:
        return _fixed_points(lls, values)
    F = np.asarray(d.F, dtype=float)
    G, A = F.shape
    chunk = max(1, _CHUNK_ENTRIES // (G * A))
    for lo in range(0, values.size, chunk):
        idx = np.arange(lo, min(lo + chunk, values.size))
        P, M, held, _, usable = _starts([lls[i] for i in idx], values[idx])
        x = P[:, :, 1].copy()
        x[np.arange(idx.size), held] = values[idx]  # (as _likelihood._fix_entry sets it)
        x, M, f, ok = _stacked_newton(d, held, x, M)
        ok &= usable
        slopes = _held_slopes(d, x, M, held)
        for r in np.flatnonzero(ok):
            i = idx[r]
            ll, v = lls[i], float(values[i])
            ll.slopes.pop(v, None)
            if v < 1.0 and np.isfinite(slopes[r]):
                ll.slopes[v] = float(slopes[r])
            out[i] = f[r] + ll.offset
    return out


def entry_fits(d: lik.Data, start, groups, values, classes=None):
    """The fits of ``d`` with ``p_g[j]`` held at each ``values[i]`` for ``g = groups[i]``
    (``j = classes[i]``; binary: class 1), all started from ``start = (P, M)`` (that rate set
    to the value), as ``_likelihood._maximize_once(d, Constraint("entry", ...), start,
    warm=True)`` finds them by Newton (without modified steps) before it turns to EM: a joint
    likelihood without a penalty (:func:`eligible`'s; with three or more classes, the runs
    that keep the face they start on). Returns the objectives and which points converged so
    (the others are the scalar route's)."""
    P, M = start
    values = np.asarray(values, dtype=float)
    groups = np.asarray(groups, dtype=int)
    G, A = d.F.shape
    k = P.shape[1]
    chunk = max(1, _CHUNK_ENTRIES // (G * A * (1 if k == 2 else k * k)))
    f = np.full(values.size, np.nan)
    ok = np.zeros(values.size, dtype=bool)
    for lo in range(0, values.size, chunk):
        idx = np.arange(lo, min(lo + chunk, values.size))
        Mx = np.repeat(M[None], idx.size, axis=0)
        if k == 2:
            x = np.repeat(P[None, :, 1], idx.size, axis=0)
            x[np.arange(idx.size), groups[idx]] = values[idx]
            _, _, f[idx], ok[idx] = _stacked_newton(d, groups[idx], x, Mx, modify=False)
            continue
        cls = np.asarray(classes, dtype=int)[idx]
        Px = np.repeat(P[None], idx.size, axis=0)
        _fix_entries(Px, groups[idx], cls, values[idx])
        _, _, f[idx], ok[idx] = _ordered_newton(d, Px, Mx, groups[idx], cls)
    return f, ok


def _fixed_points(lls, values) -> np.ndarray:
    """:func:`profile_points` under the fixed likelihood (each ``lls[i]`` a group's own data,
    ``M`` the lab estimate): the group's objective with its rates at the point, as
    ``loglik_at``'s constrained fit returns it (-1e300 where the data are impossible), and
    the envelope slope there."""
    F = np.stack([np.asarray(ll.data.F[0], dtype=float) for ll in lls])     # (L, A)
    d = lls[0].data
    M = np.asarray(d.M_lab, dtype=float)
    x = values[:, None]                                                     # (L, 1)
    Mx = np.broadcast_to(M, (values.size, 2, M.shape[1]))
    f = _objective(d, x, Mx, F)
    _, Q = _cells(x, Mx)
    with np.errstate(divide="ignore", invalid="ignore"):
        W = np.where((F[:, None, :] > 0) & (Q > 0), F[:, None, :] / Q, 0.0)
        g0, g1 = _rate_gradients(d, x, Mx, W)
    slopes = (g1 - g0)[:, 0]
    out = np.empty(values.size)
    for i, ll in enumerate(lls):
        v = float(values[i])
        ll.slopes.pop(v, None)
        if np.isfinite(f[i]):
            if v < 1.0 and np.isfinite(slopes[i]):
                ll.slopes[v] = float(slopes[i])
            out[i] = f[i] + ll.offset
        else:
            out[i] = -1e300  # (as loglik_at: the data are impossible at this value)
    return out


def _starts(lls, values):
    """Each point's start, as :meth:`._likelihood.ProfileLoglik._predicted` makes it (the
    maximum moved along the first-order path of the constrained maximum, the step shortened
    where a component would fall below half its value), for all points at once; the held
    rate is still to be set to the point (as :func:`._likelihood._initial` sets it). Returns
    the rates ``P`` (L, G, k), ``M`` (L, k, |A|), the held groups and classes, and which points
    have such a path (without one, ``loglik_at`` searches from the maximum itself, EM
    included)."""
    P, M = lls[0].mode
    G, k = P.shape
    values = np.asarray(values, dtype=float)
    L = values.size
    if lls[0].data.joint:  # (one fit's maximum)
        theta = np.concatenate([P.ravel(), M.ravel()])[None, :]
    else:  # (each group's own)
        theta = np.stack([np.concatenate([ll.mode[0].ravel(), ll.mode[1].ravel()])
                          for ll in lls])
    held = np.array([ll.group for ll in lls], dtype=int)
    cls = np.array([ll.cls for ll in lls], dtype=int)
    shared = {}  # (the directions of the profiles sharing a curvature, solved together)
    for ll in lls:
        shared.setdefault(id(ll.curvature), (ll.curvature, []))[1].append(ll)
    for curvature, members in shared.values():
        curvature.directions(members)
    dirs = [ll.path_direction() for ll in lls]
    usable = np.array([u is not None for u in dirs], dtype=bool)
    step = np.zeros((L, theta.shape[1]))
    if usable.any():
        step[usable] = np.stack([u for u in dirs if u is not None])
    rows = np.arange(L)
    step *= (values - np.broadcast_to(theta, step.shape)[rows, held * k + cls])[:, None]
    down = step < 0
    down[rows, held * k + cls] = False  # (set to the point below anyway)
    with np.errstate(divide="ignore"):
        ratio = np.where(down, theta / np.where(down, -step, 1.0), np.inf)
    scale = np.minimum(1.0, 0.5 * ratio.min(axis=1))
    th = np.maximum(theta + scale[:, None] * step, 0.0)
    P1 = th[:, :G * k].reshape(L, G, k)
    M1 = th[:, G * k:].reshape(L, k, -1)
    P1 = P1 / P1.sum(axis=2, keepdims=True)
    M1 = M1 / M1.sum(axis=2, keepdims=True)
    return P1, M1, held, cls, usable


def _cells(x, M):
    """``D = M[1] - M[0]`` (L, A) and the cell probabilities ``Q`` (L, G, A) of the groups."""
    D = M[:, 1] - M[:, 0]
    return D, M[:, None, 0, :] + x[:, :, None] * D[:, None, :]


def _objective(d: lik.Data, x, M, F=None) -> np.ndarray:
    """:func:`._likelihood.objective` of each point (-inf where infeasible); ``F``: each
    point's field counts (L, A) where they differ (the fixed likelihood's one group)."""
    F = d.F if F is None else F[:, None, :]
    Ll = d.L_lik
    _, Q = _cells(x, M)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(F > 0, F * np.log(Q), 0.0).sum(axis=(1, 2))
        if d.joint:
            f += np.where(Ll > 0, Ll * np.log(M), 0.0).sum(axis=(1, 2))
        if d.strength > 0:
            s = d.strength * np.asarray(d.pi_lab)
            f += (np.where(s[0] > 0, s[0] * np.log1p(-x), 0.0)
                  + np.where(s[1] > 0, s[1] * np.log(x), 0.0)).sum(axis=1)
    f[np.isnan(f)] = -np.inf
    return f


def _rate_gradients(d: lik.Data, x, M, W):
    """``d f / d P[g, 0]`` and ``d f / d P[g, 1]`` (L, G) from ``W = F / Q``."""
    g0 = (W @ M[:, 0, :, None])[..., 0]
    g1 = (W @ M[:, 1, :, None])[..., 0]
    if d.strength > 0:
        s = d.strength * np.asarray(d.pi_lab)
        with np.errstate(divide="ignore"):
            g0, g1 = g0 + s[0] / (1 - x), g1 + s[1] / x
    return g0, g1


def _held_slopes(d: lik.Data, x, M, held) -> np.ndarray:
    """The envelope slope of each point's profile (as
    :meth:`._likelihood.ProfileLoglik._envelope_slope`: ``d f / d P[h, 1] - d f / d P[h, 0]``
    at the constrained maximum)."""
    r = np.arange(x.shape[0])
    xh = x[r, held][:, None]
    _, Q = _cells(xh, M)
    with np.errstate(divide="ignore", invalid="ignore"):
        W = np.where(d.F[held][:, None, :] > 0, d.F[held][:, None, :] / Q, 0.0)
        g0, g1 = _rate_gradients(d, xh, M, W)
        return (g1 - g0)[:, 0]


def _derivatives(d: lik.Data, x, M):
    """Gradient and Hessian of each point's objective: in the rates ``x`` (L, G; the
    Hessian there is diagonal), in ``vec M`` (L, 2 |A|; its block, diagonal in the cells)
    and across (as the factors :func:`_cross` takes); and ``d f / d P[g, i]``."""
    L, G = x.shape
    A = M.shape[2]
    F, Ll = d.F, d.L_lik
    D, Q = _cells(x, M)
    with np.errstate(divide="ignore", invalid="ignore"):
        # (0 where F is: a cell of M on its bound can make Q 0 there)
        W = np.where(F > 0, F / Q, 0.0)
        W2 = np.where(F > 0, W / Q, 0.0)
        lab = np.where(Ll > 0, Ll / M, 0.0)
        lab2 = np.where(Ll > 0, lab / M, 0.0)
    x0 = 1 - x
    g0, g1 = _rate_gradients(d, x, M, W)
    gx = g1 - g0
    hx = -(W2 @ (D * D)[:, :, None])[..., 0]
    if d.strength > 0:
        s = d.strength * np.asarray(d.pi_lab)
        hx -= s[1] / x ** 2 + s[0] / x0 ** 2
    gM = (np.stack([x0, x], 1) @ W + lab).reshape(L, 2 * A)
    K = -(np.stack([x0 * x0, x0 * x, x * x], 1) @ W2)            # rows 00, 01, 11 (L, 3, A)
    K[:, 0] -= lab2[:, 0]
    K[:, 2] -= lab2[:, 1]
    HMM = np.zeros((L, 2, A, 2, A))
    cells = np.arange(A)
    for i, j, Kij in ((0, 0, K[:, 0]), (0, 1, K[:, 1]), (1, 0, K[:, 1]), (1, 1, K[:, 2])):
        HMM[:, i, cells, j, cells] = Kij
    # the cross block d2 f / dx_g dM[i, a] is (2 i - 1) W - w_i W2 D, w = (1 - x, x):
    # returned as W and W2 D (_cross forms it in the tangent basis)
    return gx, hx, gM, HMM.reshape(L, 2 * A, 2 * A), (W, W2 * D[:, None, :]), g0, g1


def _cross(x, cross, Zr) -> np.ndarray:
    """The cross block in the tangent coordinates of ``M`` (L, G, 2 (|A| - 1)), from
    :func:`_derivatives`' ``(W, W2 D)`` and the rows' bases ``Zr`` (L, 2, |A|, |A| - 1)."""
    W, WD = cross
    m = Zr.shape[3]
    out = np.empty(x.shape + (2 * m,))
    for i, (sign, w) in enumerate(((-1.0, 1 - x), (1.0, x))):
        blk = W @ Zr[:, i]
        if sign < 0:
            np.negative(blk, out=blk)
        blk -= w[:, :, None] * (WD @ Zr[:, i])
        out[..., i * m:(i + 1) * m] = blk
    return out


def _pair_basis(M, free) -> np.ndarray:
    """The tangent basis of a stack of simplices that :func:`._likelihood.tangent` takes (a
    :class:`._face.PairBasis`): per row, a column per free component moving mass from the
    row's largest free component to it (``M``, ``free``: (L, R, n), R rows of n components;
    ``M``'s rows, or the groups' base rates; a component held on its bound has a column of
    zeros, which the callers pad). Each row's (L, R, n, n - 1); :func:`_block_basis` puts
    ``M``'s together. Newton's step does not depend on the basis; the modified step does."""
    L, R, A = M.shape
    ref = np.argmax(np.where(free, M, -np.inf), axis=2)          # (L, R)
    others = np.nonzero(np.arange(A) != ref[:, :, None])[2].reshape(L, R, A - 1)
    live = np.take_along_axis(free, others, axis=2)              # (L, R, n - 1)
    Zr = np.zeros((L, R, A, A - 1))
    pts, rows = np.arange(L)[:, None, None], np.arange(R)[None, :, None]
    cols = np.arange(A - 1)[None, None, :]
    Zr[pts, rows, others, cols] = live
    Zr[pts, rows, ref[:, :, None], cols] = -1.0 * live
    return Zr


def _block_basis(Zr) -> np.ndarray:
    """The basis of ``vec M``'s tangent space (L, k |A|, k (|A| - 1)) from the rows'."""
    L, k, A, m = Zr.shape
    Z = np.zeros((L, k * A, k * m))
    for i in range(k):
        Z[:, i * A:(i + 1) * A, i * m:(i + 1) * m] = Zr[:, i]
    return Z


def _ascent_steps(gx, hx, gy, Hyy, bx, fixed, modify):
    """Each point's ascent direction ``(dx, dy)`` with the rates ``fixed`` held, as
    :meth:`._face.FaceHessian.ascent_direction` takes it (and :class:`._face.DenseFace`, with
    fewer groups): the Newton direction by the Schur complement of ``M``'s corner where the
    negative Hessian on the face is positive definite (``newton`` True), else where
    ``modify`` allows, the modified direction by the same blocks, else none (``ok`` False).
    Returns ``dx, dy, decrement, newton, ok``."""
    L, G = gx.shape
    n = gy.shape[1]
    a = np.where(fixed, 1.0, -hx)                    # the negative Hessian's blocks (padded)
    gp = np.where(fixed, 0.0, gx)
    bx[fixed] = 0.0  # (in place: the caller's, whose held rows only grow)
    C = -Hyy

    def schur(a, rows):
        # the negative Hessian's cross block is -bx: y = y0 + Y z, S = C - bx' Y
        y0 = gp[rows] / a
        b = bx[rows]
        Y = b / a[:, :, None]
        bt = b.transpose(0, 2, 1)
        return y0, Y, C[rows] - bt @ Y, gy[rows] + (bt @ y0[:, :, None])[..., 0]

    dx, dy = np.zeros((L, G)), np.zeros((L, n))
    newton = (a > 0).all(axis=1)
    y0, Y, S, rhs = schur(a[newton], newton)
    pd_ = np.linalg.eigvalsh(S)[:, 0] > 0
    if pd_.any():
        z = np.zeros(rhs.shape)
        z[pd_] = np.linalg.solve(S[pd_], rhs[pd_][..., None])[..., 0]
        dy[newton] = z
        dx[newton] = y0 + (Y @ z[..., None])[..., 0]
    newton[np.flatnonzero(newton)[~pd_]] = False
    mod = ~newton & modify
    if mod.any():
        r = np.flatnonzero(mod)
        am, Cm = a[r], C[r]
        floor = 1e-8 * np.maximum(1.0, np.maximum(np.abs(am).max(axis=1),
                                                  np.abs(Cm).max(axis=(1, 2))))
        # each group's block with its eigenvalue replaced by its absolute value (at
        # least the floor) where any is not positive; then the Schur complement, modified
        # the same way where it is not positive definite
        am = np.where((am > 0).all(axis=1)[:, None], am, np.maximum(np.abs(am),
                                                                  floor[:, None]))
        y0m, Ym, Sm, rhsm = schur(am, r)
        ev, V = np.linalg.eigh(Sm)
        inv = np.where((ev[:, :1] > 0), ev, np.maximum(np.abs(ev), floor[:, None]))
        z = (V @ ((V.transpose(0, 2, 1) @ rhsm[..., None])[..., 0] / inv)[..., None])[..., 0]
        dy[r] = z
        dx[r] = y0m + (Ym @ z[..., None])[..., 0]
    ok = newton | mod
    dx[~ok] = dy[~ok] = 0.0
    dx[fixed] = 0.0
    dec = (gp * dx).sum(axis=1) + (gy * dy).sum(axis=1)
    ok &= np.isfinite(dec)
    return dx, dy, dec, newton, ok


def _to_boundary(d: lik.Data, x, M, dx, dM, fixed, f_min):
    """:meth:`._likelihood._Problem.to_boundary` for full steps ``(dx, dM)`` that leave the
    simplices: the step cut where the first component (a rate or a cell of ``M``) meets the
    bound, that component left at ``_AT_BOUND`` (the mass from the largest other of its
    simplex), and whether the point is taken (``f >= f_min``, the cut ``t`` in
    ``[1e-10, 1)``). Returns ``take``, ``t``, the point and its objective."""
    at_bound = lik._AT_BOUND
    n = x.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        rx = np.where(fixed, np.inf, np.where(dx < 0, x / -dx,
                                              np.where(dx > 0, (1 - x) / dx, np.inf)))
        rM = np.where(dM < 0, M / -dM, np.inf)
    tb = np.minimum(rx.min(axis=1), rM.min(axis=(1, 2)))
    hx_ = rx <= tb[:, None] * (1.0 + 1e-12)
    hM = rM <= tb[:, None, None] * (1.0 + 1e-12)
    xb = np.where(hx_ & (dx < 0), at_bound,
                  np.where(hx_ & (dx > 0), 1 - at_bound, x + tb[:, None] * dx))
    Mb = np.where(hM, 0.0, M + tb[:, None, None] * dM)
    if hM.any():  # (_lift: the mass of each cell left at _AT_BOUND from its row's largest)
        donor = np.argmax(Mb, axis=2)
        lifted = hM.sum(axis=2) * at_bound
        Mb = Mb + hM * at_bound
        np.put_along_axis(Mb, donor[..., None],
                          np.take_along_axis(Mb, donor[..., None], axis=2) - lifted[..., None],
                          axis=2)
    usable = (tb >= 1e-10) & (tb < 1.0) & (Mb >= 0).all(axis=(1, 2))
    fb = np.full(n, -np.inf)
    fb[usable] = _objective(d, xb[usable], Mb[usable])
    return usable & (fb >= f_min), tb, xb, Mb, fb


def _halve_steps(pend, t, fn, accepted, f_min, start, step, value) -> np.ndarray:
    """:func:`puinfer.base.optimize.newton_maximize`'s backtracking for the points ``pend``
    (in place): each step ``t`` halved until the objective ``value(p, *point)`` at the point
    ``start + t step`` (tuples of arrays, the points first; -inf where infeasible) is at
    least ``f_min`` or ``t`` falls below 1e-10 (``fn`` and ``accepted`` updated). Returns
    which points it accepted."""
    took = np.zeros(pend.shape, dtype=bool)
    pend = pend.copy()
    while pend.any():
        t[pend] *= 0.5
        p = np.flatnonzero(pend)
        point = [a[p] + t[p].reshape((-1,) + (1,) * (a.ndim - 1)) * b[p]
                 for a, b in zip(start, step, strict=True)]
        ft = value(p, *point)
        good = ft >= f_min[p]
        fn[p[good]] = ft[good]
        accepted[p[good]] = took[p[good]] = True
        pend[p[good]] = False
        pend &= t >= 1e-10
    return took


def _feasible(x, M, fixed, m_pos) -> np.ndarray:
    """:meth:`._likelihood._Problem.feasible` of each point: the free rates inside (0, 1),
    the cells of ``M`` positive where they were (``m_pos``), none below 0."""
    return (((x > 0) & (x < 1)) | fixed).all(axis=1) & \
        np.where(m_pos, M > 0, M >= 0).all(axis=(1, 2))


def _face_step(x, gx, hx, gM, HMM, cross, M, fixed, m_free, modify):
    """The ascent step of each point on its active face (the rates ``fixed`` held, the cells
    of ``M`` outside ``m_free`` held): ``M``'s tangent basis, the step in its coordinates
    (:func:`_ascent_steps`; a held cell's column is padded: -1 on the diagonal, nothing
    else), and what :func:`_ascent_steps` returns."""
    Zr = _pair_basis(M, m_free)
    Z = _block_basis(Zr)
    Zt = Z.transpose(0, 2, 1)
    gy = (Zt @ gM[..., None])[..., 0]
    Hyy = Zt @ HMM @ Z
    pad = ~Z.any(axis=1)                                          # (L, 2 (|A| - 1))
    if pad.any():
        p, c = np.nonzero(pad)
        Hyy[p, c, c] = -1.0
    bx = _cross(x, cross, Zr)
    return (Z,) + _ascent_steps(gx, hx, gy, Hyy, bx, fixed, modify)


def _stacked_newton(d: lik.Data, held, x, M, modify: bool = True):
    """Newton's method on the active face of every point at once: the iteration of
    :func:`._likelihood._warm_newton` (decrement below ``max(1e-10, 1e-14 |f|)``; a rate or
    a cell of ``M`` at the bound held unless its KKT condition fails, and then still held
    where the step would move it down; a full step that leaves the simplices cut where a
    component first meets the bound, left at ``_AT_BOUND``, before halving; steps accepted
    with ``f_new >= f - 1e-14 |f|``; after a full Newton step, the longer moves of
    :func:`._likelihood.longer_moves` where one raises ``f`` further;
    converged where a shortened Newton step's decrement is below the rounding of ``f``;
    modified steps where the Hessian on the face is indefinite, from a start inside the
    simplices only, and such a run abandoned where it reaches the bound; ``modify`` False:
    none, as ``_warm_newton(modify=False)``). Returns ``x, M, f`` and which points
    converged to a maximum with a negative definite Hessian on the face (the others are
    left to the scalar route)."""
    L, G = x.shape
    A = M.shape[2]
    x, M = x.copy(), M.copy()
    rows = np.arange(L)
    f = _objective(d, x, M)
    free_min = lik._FREE_MIN
    is_held = np.zeros((L, G), dtype=bool)
    is_held[rows, held] = True
    # (the held rate's other class, 1 - x, must be free for the start to be inside)
    held_x = x[rows, held]

    def interior(xs, Ms, hx_):
        free = np.where(is_held[hx_], 0.5, xs)
        return ((free > free_min) & (free < 1 - free_min)).all(axis=1) & \
            (1 - held_x[hx_] > free_min) & (Ms > free_min).all(axis=(1, 2))

    ok = np.isfinite(f)
    modify = interior(x, M, rows) if modify else np.zeros(L, dtype=bool)
    n_modified = np.zeros(L, dtype=int)
    done = ~ok
    converged = np.zeros(L, dtype=bool)
    for it in range(_MAXITER + 1):
        act = np.flatnonzero(~done)
        if act.size == 0:
            break
        xa, Ma, fa, ha = x[act], M[act], f[act], is_held[act]
        gx, hx, gM, HMM, cross, g0, g1 = _derivatives(d, xa, Ma)
        # the active face (as _likelihood.tangent): a component on its bound is held unless
        # its KKT condition fails (_kkt_release: its gradient above the largest of its
        # simplex's free components)
        low, high = (xa <= free_min) & ~ha, (xa >= 1 - free_min) & ~ha
        released = (low & (gx > 1e-9 * (1 + np.abs(g0)))) | \
            (high & (-gx > 1e-9 * (1 + np.abs(g1))))
        fixed = ha | ((low | high) & ~released)
        gMr = gM.reshape(-1, 2, A)
        m_low = Ma <= free_min
        lam = np.where(m_low, -np.inf, gMr).max(axis=2, keepdims=True)
        m_rel = m_low & (gMr > lam + 1e-9 * (1 + np.abs(lam)))
        m_free = ~m_low | m_rel
        Z, dx, dy, dec, newton, stepped = _face_step(
            xa, gx, hx, gM, HMM, cross, Ma, fixed, m_free, modify[act])
        # ... and held where the step would move it down (_Problem.tangent's rule, which
        # repeats until no released component moves down: here once more, and a point
        # still needing a third pass is left to the scalar route)
        for again in range(2):
            dMr = (Z @ dy[..., None]).reshape(-1, 2, A)
            down = released & ~fixed & np.where(low, dx < 0, dx > 0)
            down_M = m_rel & m_free & (dMr < 0)
            redo = down.any(axis=1) | down_M.any(axis=(1, 2))
            if not redo.any():
                break
            if again:
                stepped &= ~redo
                break
            fixed |= down
            m_free &= ~down_M
            Z[redo], dx[redo], dy[redo], dec[redo], newton[redo], stepped[redo] = _face_step(
                xa[redo], gx[redo], hx[redo], gM[redo], HMM[redo],
                tuple(c[redo] for c in cross), Ma[redo], fixed[redo], m_free[redo],
                modify[act[redo]])
        small = dec < np.maximum(1e-10, 1e-14 * np.abs(fa))
        # (a stationary point where the Hessian is not negative definite is not kept)
        fail = ~stepped | (small & ~newton)
        ok[act[fail]] = False
        done[act[fail]] = True
        stop = ~fail & small
        converged[act[stop]] = done[act[stop]] = True
        go = ~fail & ~stop
        if it == _MAXITER:
            ok[act[go]] = False
            break
        if not go.any():
            continue
        ia, dxg, fg, fxg, nwt = act[go], dx[go], fa[go], fixed[go], newton[go]
        dM = (Z[go] @ dy[go][..., None]).reshape(ia.size, 2, A)
        x0, M0 = x[ia], M[ia]
        xn, Mn = x0 + dxg, M0 + dM
        m_pos = M0 > free_min  # (these stay positive; a cell on its bound stays at 0 or above)
        inside = _feasible(xn, Mn, fxg, m_pos)
        t = np.ones(ia.size)
        fn = np.full(ia.size, -np.inf)
        fn[inside] = _objective(d, xn[inside], Mn[inside])
        slack = 1e-14 * np.abs(fg)
        accepted = inside & (fn >= fg - slack)
        if not inside.all():
            c = np.flatnonzero(~inside)
            take, tb, xb, Mb, fb = _to_boundary(d, x0[c], M0[c], dxg[c], dM[c], fxg[c],
                                                fg[c] - slack[c])
            xn[c[take]], Mn[c[take]], fn[c[take]] = xb[take], Mb[take], fb[take]
            t[c[take]] = tb[take]
            accepted[c[take]] = True
            inside[c[~take]] = True  # (halving: the steps that stay inside)

        def value(p, xt, Mt, fxg=fxg, m_pos=m_pos):
            feas = _feasible(xt, Mt, fxg[p], m_pos[p])
            ft = np.full(p.size, -np.inf)
            ft[feas] = _objective(d, xt[feas], Mt[feas])
            return ft
        took = _halve_steps(inside & ~accepted, t, fn, accepted, fg - slack, (x0, M0),
                            (dxg, dM), value)
        xn[took] = x0[took] + t[took, None] * dxg[took]
        Mn[took] = M0[took] + t[took, None, None] * dM[took]
        # (a full Newton step raising a component near the bound by half of it or more: the
        # longer moves the scalar route tries, _Problem.extend)
        e = np.flatnonzero(accepted & nwt & (t == 1.0))
        if e.size:
            pend = np.ones(e.size, dtype=bool)
            ones = np.ones(xn[e].shape + (2,), dtype=bool)
            for has, (Pc, Mc) in lik.longer_moves((
                    (np.stack([1.0 - x0[e], x0[e]], -1), np.stack([-dxg[e], dxg[e]], -1),
                     np.stack([1.0 - xn[e], xn[e]], -1), ones),
                    (M0[e], dM[e], Mn[e], np.ones(Mn[e].shape, dtype=bool)))):
                q = np.flatnonzero(pend & has)
                if q.size == 0:
                    continue
                xc, Mc = Pc[q, :, 1], Mc[q]
                fc = value(e[q], xc, Mc)
                up = fc > fn[e[q]]
                w = e[q[up]]
                xn[w], Mn[w], fn[w] = xc[up], Mc[up], fc[up]
                pend[q[up]] = False
        # a shortened Newton step whose predicted gain is below the rounding of f: f is
        # maximal to its precision (newton_maximize's "stopped at floating-point precision")
        at_eps = accepted & nwt & (t < 1.0) & \
            (dec[go] < _NOISE * np.maximum(1.0, np.abs(fg)))
        converged[ia[at_eps]] = done[ia[at_eps]] = True
        ok[ia[~accepted]] = False
        done[ia[~accepted]] = True
        move = accepted & ~at_eps & ~done[ia]
        j = ia[move]
        x[j], M[j], f[j] = xn[move], Mn[move], fn[move]
        n_modified[j] += ~nwt[move]
        # a run that took a modified step is abandoned where it leaves the interior
        left = j[(n_modified[j] > 0) & ~interior(x[j], M[j], j)]
        ok[left] = False
        done[left] = True
    return x, M, f, ok & converged


# ---------------------------------------------------------------------------------------------
# Several classes: the points whose runs keep the face they start on
# ---------------------------------------------------------------------------------------------
def _multiclass_points(lls, values) -> np.ndarray:
    """:func:`profile_points` for a likelihood of three or more classes: the runs that
    take Newton steps only on the face they start on (:func:`_newton_on_face`), where
    Newton's step does not depend on the tangent basis and the scalar route's active set
    does not change; NaN for the others (a step onto the bound, a rate released from it, a
    Hessian on the face that is not negative definite, a failed line search), which
    ``loglik_at`` takes. Each point's classes are put in an order of its own with a
    reference class last (:func:`_class_order`), whose rates give the mass to the others'
    in every group (the rates' tangent basis: slices, not each group's own)."""
    out = np.full(values.size, np.nan)
    d = lls[0].data
    G, A = d.F.shape
    k = d.L.shape[0]
    chunk = max(1, _CHUNK_ENTRIES // (G * A * k * k))
    for lo in range(0, values.size, chunk):
        idx = np.arange(lo, min(lo + chunk, values.size))
        v = values[idx]
        P, M, held, cls, usable = _starts([lls[i] for i in idx], v)
        _fix_entries(P, held, cls, v)
        P, M, f, ok, slopes = _ordered_newton(
            d, P, M, held, cls, v, None if d.joint else np.stack([lls[i].data.F for i in idx]))
        ok &= usable
        for i in np.flatnonzero(ok):
            ll, vr = lls[idx[i]], float(v[i])
            ll.slopes.pop(vr, None)
            if vr < 1.0 and np.isfinite(slopes[i]):
                ll.slopes[vr] = float(slopes[i])
            out[idx[i]] = f[i] + ll.offset
    return out


def _ordered_newton(d: lik.Data, P, M, held, cls, values=None, F=None):
    """:func:`_newton_on_face` from the starts ``P, M`` with each point's classes in its own
    order (:func:`_class_order`; ``F``: each point's field counts under the fixed
    likelihood). Returns ``P, M`` (in that order), the objectives, which points converged
    and, with ``values``, the envelope slopes there."""
    order = _class_order(P, cls)
    pos = np.argsort(order, axis=1)[np.arange(P.shape[0]), cls]  # (the held class's place)
    terms = _Terms(d, order, F)
    P = np.take_along_axis(P, order[:, None, :], axis=2)
    M = np.take_along_axis(M, order[:, :, None], axis=1)
    P, M, f, ok = _newton_on_face(terms, held, pos, P, M)
    if values is None:
        return P, M, f, ok
    return P, M, f, ok, _entry_slopes(terms, P, M, held, pos, values)


def _fix_entries(P, held, cls, values) -> None:
    """:func:`._likelihood._fix_entry` on each point's held row (in place): the rate set to
    the point, the row's other rates scaled to the rest (equal shares if all are 0)."""
    r = np.arange(P.shape[0])
    k = P.shape[2]
    row = P[r, held].copy()
    row[r, cls] = 0.0
    s = row.sum(axis=1)
    rest = 1.0 - values
    with np.errstate(divide="ignore", invalid="ignore"):
        row = np.where((s > 0)[:, None], row * (rest / s)[:, None], (rest / (k - 1))[:, None])
    row[r, cls] = values
    P[r, held] = row


def _class_order(P, cls) -> np.ndarray:
    """Each point's order of the classes (L, k): the reference class last, the class other
    than the held one whose smallest rate over the groups is largest at the start (its
    rates give the mass to the other classes' in the tangent basis, and a prior's curvature
    ``s / p^2`` is smallest on them), the others in their order."""
    L, _, k = P.shape
    score = P.min(axis=1)
    score[np.arange(L), cls] = -np.inf
    ref = np.argmax(score, axis=1)
    rest = np.nonzero(np.arange(k) != ref[:, None])[1].reshape(L, k - 1)
    return np.concatenate([rest, ref[:, None]], axis=1)


class _Terms:
    """The counts of each point's objective, its classes in its own ``order`` (L, k): the
    field counts ``F`` (G, |A|), or each point's (L, 1, |A|) under the fixed likelihood (each
    profile a group's own), the lab counts ``Ll`` (L, k, |A|; None under the fixed
    likelihood: ``M`` does not move) and the prior's pseudo-counts ``s`` (L, k; None without
    a prior)."""

    def __init__(self, d: lik.Data, order, F=None):
        self.F = np.asarray(d.F if F is None else F, dtype=float)
        self.Ll = np.asarray(d.L_lik, dtype=float)[order] if d.joint else None
        self.s = None
        if d.strength > 0:
            self.s = d.strength * np.asarray(d.pi_lab, dtype=float)[order]

    def __getitem__(self, idx) -> _Terms:
        """The terms of the points ``idx``."""
        out = object.__new__(_Terms)
        out.F = self.F if self.F.ndim == 2 else self.F[idx]
        out.Ll = None if self.Ll is None else self.Ll[idx]
        out.s = None if self.s is None else self.s[idx]
        return out

    def field(self, held) -> np.ndarray:
        """The held groups' field counts (L, |A|)."""
        return self.F[held] if self.F.ndim == 2 else self.F[np.arange(held.size), held]


def _objective_k(terms: _Terms, P, M) -> np.ndarray:
    """:func:`._likelihood.objective` of each point (``P`` (L, G, k), ``M`` (L, k, |A|);
    -inf where infeasible)."""
    F, Ll = terms.F, terms.Ll
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(F > 0, F * np.log(P @ M), 0.0).sum(axis=(1, 2))
        if Ll is not None:
            f += np.where(Ll > 0, Ll * np.log(M), 0.0).sum(axis=(1, 2))
        if terms.s is not None:
            s = terms.s[:, None, :]
            f += np.where(s > 0, s * np.log(P), 0.0).sum(axis=(1, 2))
    f[np.isnan(f)] = -np.inf
    return f


def _grad_P(terms: _Terms, P, M, W) -> np.ndarray:
    """``d f / d P`` (L, G, k) from ``W = F / (P M)``."""
    gP = W @ M.transpose(0, 2, 1)
    if terms.s is not None:
        s = terms.s[:, None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            gP += np.where(s > 0, s / P, 0.0)
    return gP


def _newton_k(terms: _Terms, P, M, fixed, bound, m_bound):
    """Newton's direction on the tangent space of every point (the rates not ``fixed``: the
    held one and those on the bound, ``bound``; every cell of ``M``), by blocks: each group's
    ``(k - 1) x (k - 1)`` block eliminated, then the Schur complement on ``M``'s tangent
    space (its rows' pair basis). The rates' basis moves mass from the last class (the
    reference, :func:`_class_order`) to each other, or in a group whose reference rate is
    fixed from its largest free rate (:func:`_own_bases`); a fixed rate's column is padded
    (1 on the diagonal, nothing else). Returns ``dP, dM``, the decrement
    and whether the negative Hessian on the face is positive definite and every rate on the
    bound stays there (its KKT condition holds, as ``_likelihood._kkt_release`` judges it:
    the scalar route would release it); only there is the direction computed. ``m_bound``:
    the cells of ``M`` held on the bound the same way (their columns of ``M``'s basis 0,
    padded)."""
    L, G, k = P.shape
    A = M.shape[2]
    q, m, F, Ll = k - 1, A - 1, terms.F, terms.Ll
    n = k * m
    Q = P @ M
    with np.errstate(divide="ignore", invalid="ignore"):
        W = np.where(F > 0, F / Q, 0.0)
        W2 = np.where(F > 0, W / Q, 0.0)
    di = np.arange(k)
    gP = _grad_P(terms, P, M, W)
    MM = (M[:, :, None, :] * M[:, None, :, :]).reshape(L, k * k, A)
    HPP = -(W2 @ MM.transpose(0, 2, 1)).reshape(L, G, k, k)
    if terms.s is not None:
        s = terms.s[:, None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            HPP[..., di, di] -= np.where(s > 0, s / P ** 2, 0.0)
    kkt = np.ones(L, dtype=bool)
    if bound.any():
        lam = np.where(fixed, -np.inf, gP).max(axis=2, keepdims=True)
        # (a row with no free rate has nothing to release into: its threshold is NaN, which
        # no gradient exceeds, as in _kkt_release)
        with np.errstate(invalid="ignore"):
            kkt = ~(bound & (gP > lam + 1e-9 * (1.0 + np.abs(lam)))).any(axis=(1, 2))
    gu = gP[..., :q] - gP[..., q:]                                        # (L, G, k - 1)
    Du = HPP[..., q:, :q] - HPP[..., :q, :q]
    Du += HPP[..., :q, q:]
    Du -= HPP[..., q:, q:]
    # a fixed rate's column padded; a group whose reference rate is fixed takes its own basis
    li, gi, Cs = _own_bases(P, fixed, q)
    fq = fixed[..., :q].copy()
    fq[li, gi] = False  # (padded by their basis)
    gu[fq] = 0.0
    Du[fq[..., :, None] | fq[..., None, :]] = 0.0
    Du[..., di[:q], di[:q]] += fq
    Cst = Cs.swapaxes(1, 2)
    if li.size:
        gu[li, gi] = (Cst @ gu[li, gi, :, None])[..., 0]
        Dg = Cst @ Du[li, gi] @ Cs
        Dg[..., di[:q], di[:q]] += ~Cs.any(axis=1)
        Du[li, gi] = Dg
    dP, dM = np.zeros(P.shape), np.zeros(M.shape)

    def rates_step(r, du):
        # (the groups with their own basis: back to the reference basis)
        full = np.zeros((L, G, q))
        full[r] = du
        if li.size:
            full[li, gi] = (Cs @ full[li, gi, :, None])[..., 0]
        dP[..., :q] = full
        dP[..., q] = -full.sum(axis=2)

    if Ll is None:  # (the fixed likelihood: M does not move, the groups' blocks are all)
        Ci, newton = _cholesky_inverse(Du)
        newton = newton.all(axis=1) & kkt
        du = (Ci.swapaxes(2, 3) @ (Ci @ gu[..., None]))[..., 0]
        dec = np.where(newton, (gu * du).sum(axis=(1, 2)), np.nan)
        rates_step(np.arange(L), du)
        newton &= np.isfinite(dec)
        return dP, dM, dec, newton
    with np.errstate(divide="ignore", invalid="ignore"):
        lab1 = np.where(Ll > 0, Ll / M, 0.0)
        lab2 = np.where(Ll > 0, lab1 / M, 0.0)
    gM = P.transpose(0, 2, 1) @ W + lab1                                  # (L, k, A)
    PP = (P[..., :, None] * P[..., None, :]).reshape(L, G, k * k)
    K = -(PP.transpose(0, 2, 1) @ W2).reshape(L, k, k, A)        # d2 f / dM[i, a] dM[j, a]
    K[:, di, di] -= lab2
    if m_bound.any():
        lam = np.where(m_bound, -np.inf, gM).max(axis=2, keepdims=True)
        kkt &= ~(m_bound & (gM > lam + 1e-9 * (1.0 + np.abs(lam)))).any(axis=(1, 2))
    Zr = _pair_basis(M, ~m_bound)                                         # (L, k, A, m)
    Zall = Zr.transpose(0, 2, 1, 3).reshape(L, A, n)                      # columns (j, c)
    gy = np.concatenate([(gM[:, i, None, :] @ Zr[:, i])[:, 0] for i in range(k)], axis=1)
    C = np.empty((L, n, n))
    for i in range(k):
        Zi = Zr[:, i].swapaxes(1, 2)
        for j in range(k):
            C[:, i * m:(i + 1) * m, j * m:(j + 1) * m] = -((Zi * K[:, i, j, None, :]) @ Zr[:, j])
    if m_bound.any():  # (a held cell's column: 1 on the diagonal, nothing else)
        pl, pc = np.nonzero(~Zr.any(axis=2).reshape(L, n))
        C[pl, pc, pc] = 1.0
    # d2 f / dP[g, i] dM[j, a] = [i = j] W[g, a] - P[g, j] M[i, a] W2[g, a], in both tangent
    # coordinates (the rates' basis applied to M's rows first: one product over the cells)
    X = W2[:, :, None, :] * (M[:, None, :q] - M[:, None, q:])             # (L, G, k - 1, A)
    Bu = (X.reshape(L, -1, A) @ Zall).reshape(L, G, q, k, m)
    Bu *= -P[:, :, None, :, None]
    WZ = (W @ Zall).reshape(L, G, k, m)
    for c in range(q):
        Bu[:, :, c, c] += WZ[:, :, c]
    Bu[:, :, :, q] -= WZ[:, :, None, q]
    Bu = Bu.reshape(L, G, q, n)
    Bu[fq] = 0.0
    if li.size:
        Bu[li, gi] = Cst @ Bu[li, gi]
    dec = np.full(L, np.nan)
    Ci, newton = _cholesky_inverse(Du)
    newton = newton.all(axis=1) & kkt
    r = np.flatnonzero(newton)
    if r.size:
        if r.size < L:
            Ci, gu, Bu, C, gy, Zr = (a[r] for a in (Ci, gu, Bu, C, gy, Zr))
        # the negative Hessian's cross block is -Bu; with Du = C C', w = C^-1 gu and
        # V = C^-1 Bu: S = C_M - V'V, S z = gy + V'w, u = C'^-1 (w + V z)
        w = (Ci @ gu[..., None]).reshape(r.size, -1)
        V = (Ci @ Bu).reshape(r.size, -1, n)
        Vt = V.swapaxes(1, 2)
        S = C - Vt @ V
        rhs = gy + (Vt @ w[..., None])[..., 0]
        try:  # (the usual case: every Schur complement positive definite)
            np.linalg.cholesky(S)
            pd_ = np.ones(r.size, dtype=bool)
        except np.linalg.LinAlgError:
            pd_ = np.linalg.eigvalsh(S)[:, 0] > 0
        if not pd_.all():
            newton[r[~pd_]] = False
            r = r[pd_]
            Ci, gu, Zr, gy, w, V, S, rhs = (a[pd_] for a in (Ci, gu, Zr, gy, w, V, S, rhs))
        z = np.linalg.solve(S, rhs[..., None])[..., 0]
        du = (Ci.swapaxes(2, 3) @ (w + (V @ z[..., None])[..., 0]).reshape(r.size, G, q, 1))
        du = du[..., 0]
        rates_step(r, du)
        dM[r] = (Zr @ z.reshape(r.size, k, m, 1))[..., 0]
        dec[r] = (gu * du).sum(axis=(1, 2)) + (gy * z).sum(axis=1)
    newton &= np.isfinite(dec)
    return dP, dM, dec, newton


def _own_bases(P, fixed, q):
    """The groups whose reference rate (the last class's) is ``fixed`` (on the bound) but
    another is free: their positions ``li, gi`` and a basis of their rates' tangent space in
    the reference basis' coordinates (n, q, q): a column per free class but the group's
    largest free one, moving mass from that class to it; the other columns 0 (padded)."""
    li, gi = np.nonzero(fixed[..., q] & (~fixed[..., :q]).any(axis=2))
    free = ~fixed[li, gi, :q]                                             # (n, q)
    star = np.argmax(np.where(free, P[li, gi, :q], -np.inf), axis=1)
    cols = free.copy()
    cols[np.arange(li.size), star] = False
    Cs = np.zeros((li.size, q, q))
    c = np.arange(q)
    Cs[:, c, c] = cols
    Cs[np.arange(li.size)[:, None], star[:, None], c[None, :]] = -1.0 * cols
    return li, gi, Cs


def _left_sum(terms):
    """``terms[0] + terms[1] + ...`` from the left (0.0 if there are none): the order in which
    numpy sums a few entries along an axis."""
    out = 0.0
    for i, t in enumerate(terms):
        out = t if i == 0 else out + t
    return out


def _cholesky_inverse(A):
    """The inverses ``C^-1`` of the Cholesky factors ``C`` of a stack of small matrices ``A``
    (..., n, n), and which are positive definite (every pivot positive; the others' inverses
    are not used). The factor column by column and its inverse by substitution, each entry
    of the whole stack at once: with the stack's (n, n) axes first, every operation runs on a
    contiguous plane of the stack (numpy's batched routines call LAPACK once per matrix: 100
    groups of four classes spent most of their time there; and operations on the trailing
    (n, n) axes of the stack run at a few elements per inner loop). The same operations in
    the same order as the factorisation and substitution over ``(..., n, n)`` arrays of
    session 90 (``tests/models/urc/test_urc_stacked.py`` keeps those as the reference): the
    same bits, 1.4-4.6 times faster (``ci_census_s94`` in ``benchmarks/results/README.md``)."""
    n = A.shape[-1]
    Ap = np.moveaxis(A, (-2, -1), (0, 1))  # Ap[i, j]: entry (i, j) of every matrix
    C: dict = {}
    pd_ = np.ones(A.shape[:-2], dtype=bool)
    for j in range(n):
        piv = Ap[j, j] - _left_sum([C[j, t] ** 2 for t in range(j)])
        pd_ &= piv > 0
        C[j, j] = np.sqrt(np.where(piv > 0, piv, 1.0))
        for i in range(j + 1, n):
            C[i, j] = (Ap[i, j] - _left_sum([C[i, t] * C[j, t] for t in range(j)])) / C[j, j]
    # C^-1 by forward substitution on the identity: its upper triangle stays 0, its entry
    # (i, c) is (1 or 0 - sum_{j = c..i-1} C_ij Y_jc) / C_ii (the matrices that are not
    # positive definite too, whose values are not used: silently)
    out = np.zeros((n, n) + A.shape[:-2])
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for i in range(n):
            for c in range(i + 1):
                y = 1.0 if c == i else 0.0
                for j in range(c, i):
                    y = y - C[i, j] * out[j, c]
                out[i, c] = y / C[i, i]
    # (C-ordered, as the callers' batched products expect: a layout can change their path)
    return np.ascontiguousarray(np.moveaxis(out, (0, 1), (-2, -1))), pd_


def _newton_on_face(terms: _Terms, held, pos, P, M):
    """Newton's method from each start as :func:`._likelihood._warm_newton` runs it (the same
    stopping rules and line search: steps accepted with ``f_new >= f - 1e-14 |f|``, halved
    down to 1e-10; converged where the decrement is below ``max(1e-10, 1e-14 |f|)`` or a
    shortened step's below the rounding of ``f``), as long as it stays on the face it starts
    on with Newton steps: the rates and cells of ``M`` at or below ``_FREE_MIN`` at the start
    held there (the scalar route's active set) while their KKT condition holds; a point whose
    iterate has another component at or below ``_FREE_MIN``, whose full step leaves the
    simplices, whose held component's KKT condition fails, whose Hessian on the face is not
    negative definite, whose line search fails or after whose full step the scalar route
    would try longer moves (:func:`._likelihood.longer_moves`) is not converged (``ok``
    False).
    ``terms``: the points' counts; ``held``, ``pos``: the held rate's group and class.
    Returns ``P, M, f, ok``."""
    L, _, k = P.shape
    rows = np.arange(L)
    P, M = P.copy(), M.copy()
    free_min = lik._FREE_MIN
    # the rates on the bound at the start stay fixed there (a run that would release one, or
    # bring another to the bound, is the scalar route's)
    entry = np.zeros(P.shape, dtype=bool)
    entry[rows, held, pos] = True
    bound = ~entry & (P <= free_min)
    fixed = entry | bound
    free = ~fixed
    # (and so do M's cells on the bound, M being free under the joint likelihood)
    m_bound = (M <= free_min) if terms.Ll is not None else np.zeros(M.shape, dtype=bool)

    def inside(Ps, Ms, i, bound):  # (the free rates and cells of the points i)
        out = (np.where(free[i], Ps, 1.0) > bound).all(axis=(1, 2))
        if terms.Ll is None:
            return out
        return out & (np.where(m_bound[i], 1.0, Ms) > bound).all(axis=(1, 2))

    f = _objective_k(terms, P, M)
    ok = np.isfinite(f) & inside(P, M, rows, free_min)
    done = ~ok
    converged = np.zeros(L, dtype=bool)
    for it in range(_MAXITER + 1):
        act = np.flatnonzero(~done)
        if act.size == 0:
            break
        fa = f[act]
        dP, dM, dec, newton = _newton_k(terms[act], P[act], M[act], fixed[act], bound[act],
                                        m_bound[act])
        ok[act[~newton]] = False
        done[act[~newton]] = True
        small = newton & (dec < np.maximum(1e-10, 1e-14 * np.abs(fa)))
        converged[act[small]] = done[act[small]] = True
        go = newton & ~small
        if it == _MAXITER:
            ok[act[go]] = False
            break
        if not go.any():
            continue
        ia, fg, dPg, dMg = act[go], fa[go], dP[go], dM[go]
        P0, M0 = P[ia], M[ia]
        # (a full step that leaves the simplices is cut onto the bound by the scalar route)
        feas = inside(P0 + dPg, M0 + dMg, ia, 0.0)
        ok[ia[~feas]] = False
        done[ia[~feas]] = True
        t = np.ones(ia.size)
        fn = np.full(ia.size, -np.inf)
        fn[feas] = _objective_k(terms[ia[feas]], P0[feas] + dPg[feas], M0[feas] + dMg[feas])
        slack = 1e-14 * np.abs(fg)
        accepted = feas & (fn >= fg - slack)
        # (the halved steps stay inside: the simplices are convex)
        _halve_steps(feas & ~accepted, t, fn, accepted, fg - slack, (P0, M0), (dPg, dMg),
                     lambda p, Pt, Mt, ia=ia: _objective_k(terms[ia[p]], Pt, Mt))
        at_eps = accepted & (t < 1.0) & (dec[go] < _NOISE * np.maximum(1.0, np.abs(fg)))
        converged[ia[at_eps]] = done[ia[at_eps]] = True
        failed = feas & ~accepted
        ok[ia[failed]] = False
        done[ia[failed]] = True
        # (a full step after which the scalar route tries longer moves, _Problem.extend: such
        # a run leaves the face it started on, as a component rises from near the bound)
        longer = accepted & (t == 1.0)
        if longer.any():
            e = np.flatnonzero(longer)
            unheld = np.ones(P0[e].shape, dtype=bool)
            unheld[np.arange(e.size), held[ia[e]], pos[ia[e]]] = False
            blocks = [(P0[e], dPg[e], P0[e] + dPg[e], unheld)]
            if terms.Ll is not None:
                blocks.append((M0[e], dMg[e], M0[e] + dMg[e], np.ones(M0[e].shape, bool)))
            longer[e] = np.logical_or.reduce([has for has, _ in lik.longer_moves(blocks)])
            ok[ia[longer]] = False
            done[ia[longer]] = True
            accepted &= ~longer
        move = accepted & ~at_eps
        j, tm = ia[move], t[move, None, None]
        P[j] = P0[move] + tm * dPg[move]
        M[j] = M0[move] + tm * dMg[move]
        f[j] = fn[move]
        left = j[~inside(P[j], M[j], j, free_min)]
        ok[left] = False
        done[left] = True
    return P, M, f, ok & converged


def _entry_slopes(terms: _Terms, P, M, held, pos, values) -> np.ndarray:
    """The envelope slope of each point's profile, as
    :meth:`._likelihood.ProfileLoglik._envelope_slope`: the gradient in the held group's rates
    along the rate (at ``pos`` in row ``held``) up by one and the row's other rates down in
    proportion."""
    r = np.arange(P.shape[0])
    Ph = P[r, held][:, None, :]                                           # (L, 1, k)
    Fh = terms.field(held)[:, None, :]
    Q = Ph @ M
    with np.errstate(divide="ignore", invalid="ignore"):
        W = np.where((Fh > 0) & (Q > 0), Fh / Q, 0.0)
        g = _grad_P(terms, Ph, M, W)[:, 0]
        rest = 1.0 - values
        direction = -Ph[:, 0] / rest[:, None]
        direction[r, pos] = 1.0
        out = np.where(direction != 0, g, 0.0) * direction
        out = out.sum(axis=1)
    out[~(rest > 0) | ~np.isfinite(out)] = np.nan
    return out
