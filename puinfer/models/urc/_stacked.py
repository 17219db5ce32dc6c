"""Many profile points of a binary URC fit under the joint likelihood, solved as one stacked
problem (the limit searches of all groups' intervals in lockstep: issue 17).

Each point of a profile of ``p_h`` (group ``h``'s base rate of class 1) is a constrained fit
of every group's rate ``x_g`` and ``M`` (2 x |A|) with ``x_h`` held at the point. Alone, each
is a Newton run on arrays of G x |A|, whose cost is mostly numpy's per-call overhead (about
0.5 ms per iteration at 300 groups, session 85); with the G profiles' 2G limit searches that
made the intervals O(G^2) calls. Here the Newton runs of many points are taken together on
(L, G, |A|) arrays: the same Newton iteration as :func:`._likelihood._newton` (the step by
blocks, each group's rate eliminated and the Schur complement in ``M``'s tangent space
solved; the same line search and stopping rule), from the same start
(:meth:`._likelihood.ProfileLoglik._predicted`).

Only what that iteration reaches without the active-set machinery is returned: a point where
a rate's step would leave the simplex, a rate on the bound whose KKT condition fails, ``M``
reaching its bound, a Hessian that is not negative definite on the face, or a line search
that fails is left to :meth:`._likelihood.ProfileLoglik.loglik_at` (NaN). Rates that start on
the bound (groups estimated at 0 or 1) stay there while their KKT condition holds, as the
active face of :func:`._likelihood.tangent` keeps them.
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
    """Whether :func:`profile_points` solves ``ll``'s points: a binary joint likelihood
    without a penalty on the rates, and no start but the maximum's (the profile's other
    starts, from the fit's other local maxima, are the scalar route's)."""
    d = ll.data
    return bool(d.joint and d.L.shape[0] == 2 and d.active_penalty is None
                and d.class_weight is None and len(ll.starts) == 1)


def profile_points(lls, values) -> np.ndarray:
    """``lls[i].loglik_at(values[i])`` for every point where the stacked Newton iteration
    reaches a strict maximum inside the simplices (the slope recorded in
    ``lls[i].slopes`` as ``loglik_at`` records it), NaN where it leaves the point to
    ``loglik_at``. Every ``lls[i]`` is :func:`eligible` and profiles the same data."""
    values = np.asarray(values, dtype=float)
    out = np.full(values.size, np.nan)
    if values.size == 0:
        return out
    d = lls[0].data
    F = np.asarray(d.F, dtype=float)
    G, A = F.shape
    chunk = max(1, _CHUNK_ENTRIES // (G * A))
    for lo in range(0, values.size, chunk):
        idx = np.arange(lo, min(lo + chunk, values.size))
        x = np.empty((idx.size, G))
        M = np.empty((idx.size, 2, A))
        held = np.empty(idx.size, dtype=int)
        usable = np.ones(idx.size, dtype=bool)
        for r, i in enumerate(idx):
            ll, v = lls[i], float(values[i])
            start = ll._predicted(v)
            # (no first-order path: loglik_at searches from the maximum itself, EM included)
            usable[r] = start is not ll.mode
            con = lik.Constraint("entry", group=ll.group, cls=ll.cls, v=v)
            P0, M0 = lik._initial(d, con, start)
            x[r], M[r], held[r] = P0[:, 1], M0, ll.group
        x, M, f, ok = _stacked_newton(d, held, x, M)
        ok &= usable
        slopes = _held_slopes(d, x, M, held)
        for r in np.flatnonzero(ok):
            i = idx[r]
            ll, v = lls[i], float(values[i])
            # (the rate's own slope: class 0's is its negative, v being 1 - x there)
            s = slopes[r] if ll.cls == 1 else -slopes[r]
            ll.slopes.pop(v, None)
            if v < 1.0 and np.isfinite(s):
                ll.slopes[v] = float(s)
            out[i] = f[r] + ll.offset
    return out


def _cells(x, M):
    """``D = M[1] - M[0]`` (L, A) and the cell probabilities ``Q`` (L, G, A) of the groups."""
    D = M[:, 1] - M[:, 0]
    return D, M[:, None, 0, :] + x[:, :, None] * D[:, None, :]


def _objective(d: lik.Data, x, M) -> np.ndarray:
    """:func:`._likelihood.objective` of each point (-inf where infeasible)."""
    F, Ll = d.F, d.L_lik
    _, Q = _cells(x, M)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(F > 0, F * np.log(Q), 0.0).sum(axis=(1, 2))
        f += np.where(Ll > 0, Ll * np.log(M), 0.0).sum(axis=(1, 2))
        if d.strength > 0:
            s = d.strength * np.asarray(d.pi_lab)
            f += (s[0] * np.log1p(-x) + s[1] * np.log(x)).sum(axis=1)
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
    """Gradient and Hessian of each point's objective in the rates ``x`` (L, G) and in
    ``M``'s tangent coordinates ``y`` (cell ``b < |A| - 1`` of row ``i`` up, the last cell
    of the row down: a basis of the simplices' tangent space; Newton's step does not depend
    on the basis). Returns ``gx, hx`` (the rates' gradient and diagonal Hessian), ``gy``,
    ``Hyy``, the cross block ``bx`` (L, G, 2 (|A| - 1)), and ``d f / d P[g, i]``."""
    L, G = x.shape
    A = M.shape[2]
    m = A - 1
    F, Ll = d.F, d.L_lik
    D, Q = _cells(x, M)
    W = F / Q
    W2 = W / Q
    x0 = 1 - x
    g0, g1 = _rate_gradients(d, x, M, W)
    gx = g1 - g0
    hx = -(W2 @ (D * D)[:, :, None])[..., 0]
    if d.strength > 0:
        s = d.strength * np.asarray(d.pi_lab)
        hx -= s[1] / x ** 2 + s[0] / x0 ** 2
    gM = np.stack([x0, x], 1) @ W + Ll / M                       # (L, 2, A)
    K = -(np.stack([x0 * x0, x0 * x, x * x], 1) @ W2)            # rows 00, 01, 11 (L, 3, A)
    K[:, 0] -= Ll[0] / M[:, 0] ** 2
    K[:, 2] -= Ll[1] / M[:, 1] ** 2
    WD = W2 * D[:, None, :]
    B0 = -W - WD * x0[:, :, None]                                # d2 f / dx_g dM[0, a]
    B1 = W - WD * x[:, :, None]                                  # d2 f / dx_g dM[1, a]
    gy = np.concatenate([gM[:, 0, :-1] - gM[:, 0, -1:], gM[:, 1, :-1] - gM[:, 1, -1:]], 1)
    bx = np.concatenate([B0[..., :-1] - B0[..., -1:], B1[..., :-1] - B1[..., -1:]], 2)
    Hyy = np.empty((L, 2 * m, 2 * m))
    diag = np.arange(m)
    for i, j, Kij in ((0, 0, K[:, 0]), (0, 1, K[:, 1]), (1, 0, K[:, 1]), (1, 1, K[:, 2])):
        # (HMM is diagonal in the cells: the basis adds the last cell's entry everywhere)
        blk = Hyy[:, i * m:(i + 1) * m, j * m:(j + 1) * m]
        blk[:] = Kij[:, -1, None, None]
        blk[:, diag, diag] += Kij[:, :-1]
    return gx, hx, gy, Hyy, bx, g0, g1


def _newton_step(gx, hx, gy, Hyy, bx, fixed):
    """The Newton step ``(dx, dy)`` of each point with the rates ``fixed`` held, by blocks
    (each free rate eliminated, the Schur complement in ``y`` solved), its decrement, and
    whether the Hessian on the face is negative definite (elsewhere the step is 0)."""
    gx, hx, bx = gx.copy(), hx.copy(), bx.copy()
    gx[fixed], hx[fixed], bx[fixed] = 0.0, -1.0, 0.0
    bh = bx / hx[:, :, None]
    S = Hyy - bh.transpose(0, 2, 1) @ bx
    rhs = -gy + (bh.transpose(0, 2, 1) @ gx[:, :, None])[..., 0]
    nd = (hx < 0).all(axis=1)
    nd[nd] = np.linalg.eigvalsh(S[nd])[:, -1] < 0
    dy = np.zeros_like(gy)
    if nd.any():
        dy[nd] = np.linalg.solve(S[nd], rhs[nd][..., None])[..., 0]
    dx = (-gx - (bx @ dy[:, :, None])[..., 0]) / hx
    dx[~nd] = 0.0
    dec = (gx * dx).sum(axis=1) + (gy * dy).sum(axis=1)
    return dx, dy, dec, nd


def _stacked_newton(d: lik.Data, held, x, M):
    """Newton's method on the active face of every point at once: the iteration of
    :func:`._likelihood._newton` (decrement below ``max(1e-10, 1e-14 |f|)``; a rate at the
    bound held unless its KKT condition fails, and then still held where the step would move
    it down; a full step that leaves the simplex cut where a rate first meets the bound,
    left at ``_AT_BOUND``, before halving; steps accepted with ``f_new >= f - 1e-14 |f|``;
    converged where a shortened step's decrement is below the rounding of ``f``). Returns
    ``x, M, f`` and which points converged to a maximum with ``M`` inside its simplices and a
    negative definite Hessian on the face (the others are left to the scalar route)."""
    L, G = x.shape
    A = M.shape[2]
    m = A - 1
    x, M = x.copy(), M.copy()
    rows = np.arange(L)
    f = _objective(d, x, M)
    free_min, at_bound = lik._FREE_MIN, lik._AT_BOUND
    is_held = np.zeros((L, G), dtype=bool)
    is_held[rows, held] = True
    ok = np.isfinite(f) & (M > free_min).all(axis=(1, 2))
    done = ~ok
    converged = np.zeros(L, dtype=bool)
    for it in range(_MAXITER + 1):
        act = np.flatnonzero(~done)
        if act.size == 0:
            break
        xa, Ma, fa, ha = x[act], M[act], f[act], is_held[act]
        gx, hx, gy, Hyy, bx, g0, g1 = _derivatives(d, xa, Ma)
        # the active face (as _likelihood.tangent): a rate at the bound is held unless its
        # KKT condition fails (_kkt_release: its class's gradient above the other's)
        low, high = (xa <= free_min) & ~ha, (xa >= 1 - free_min) & ~ha
        released = (low & (gx > 1e-9 * (1 + np.abs(g0)))) | \
            (high & (-gx > 1e-9 * (1 + np.abs(g1))))
        fixed = ha | ((low | high) & ~released)
        dx, dy, dec, nd = _newton_step(gx, hx, gy, Hyy, bx, fixed)
        # ... and held where the step would move it down (_Problem.tangent's rule)
        down = released & np.where(low, dx < 0, dx > 0)
        if down.any():
            again = down.any(axis=1)
            fixed[again] |= down[again]
            dx[again], dy[again], dec[again], nd[again] = _newton_step(
                gx[again], hx[again], gy[again], Hyy[again], bx[again], fixed[again])
            nd &= ~(released & ~fixed & np.where(low, dx < 0, dx > 0)).any(axis=1)
        ok[act[~nd]] = False
        done[act[~nd]] = True
        stop = nd & (dec < np.maximum(1e-10, 1e-14 * np.abs(fa)))
        converged[act[stop]] = done[act[stop]] = True
        go = nd & ~stop
        if it == _MAXITER:
            ok[act[go]] = False
            break
        if not go.any():
            continue
        ia, dxg, dyg, fg, fxg = act[go], dx[go], dy[go], fa[go], fixed[go]
        dM = np.empty((ia.size, 2, A))
        for i in range(2):
            dM[:, i, :-1] = dyg[:, i * m:(i + 1) * m]
            dM[:, i, -1] = -dyg[:, i * m:(i + 1) * m].sum(axis=1)
        x0, M0 = x[ia], M[ia]
        xn, Mn = x0 + dxg, M0 + dM
        m_in = (Mn > 0).all(axis=(1, 2))
        inside = ((xn > 0) & (xn < 1) | fxg).all(axis=1) & m_in
        t = np.ones(ia.size)
        fn = np.full(ia.size, -np.inf)
        fn[inside] = _objective(d, xn[inside], Mn[inside])
        slack = 1e-14 * np.abs(fg)
        accepted = inside & (fn >= fg - slack)
        # a full step leaving the simplex of a rate: cut where the first rate meets the bound
        # (_Problem.to_boundary; a step taking M out of its simplices is the scalar route's)
        cut = ~inside & m_in
        if cut.any():
            c = np.flatnonzero(cut)
            xc, dc = x0[c], dxg[c]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(fxg[c], np.inf,
                                 np.where(dc < 0, xc / -dc, np.where(dc > 0, (1 - xc) / dc,
                                                                    np.inf)))
            tb = ratio.min(axis=1)
            xb = xc + tb[:, None] * dc
            hit = ratio <= tb[:, None] * (1.0 + 1e-12)
            xb = np.where(hit & (dc < 0), at_bound, np.where(hit & (dc > 0), 1 - at_bound, xb))
            Mb = M0[c] + tb[:, None, None] * dM[c]
            usable = (tb > 1e-10) & (tb < 1.0) & (Mb > 0).all(axis=(1, 2))
            fb = np.full(c.size, -np.inf)
            fb[usable] = _objective(d, xb[usable], Mb[usable])
            take = usable & (fb >= fg[c] - slack[c])
            xn[c[take]], Mn[c[take]], fn[c[take]] = xb[take], Mb[take], fb[take]
            t[c[take]] = tb[take]
            accepted[c[take]] = True
            t[c[~take]] = 1.0
            inside[c[~take]] = True  # (halving: the steps that stay inside)
        pend = inside & ~accepted
        while pend.any():
            t[pend] *= 0.5
            p = np.flatnonzero(pend)
            xt = x0[p] + t[p, None] * dxg[p]
            Mt = M0[p] + t[p, None, None] * dM[p]
            feas = (((xt > 0) & (xt < 1)) | fxg[p]).all(axis=1) & (Mt > 0).all(axis=(1, 2))
            ft = np.full(p.size, -np.inf)
            ft[feas] = _objective(d, xt[feas], Mt[feas])
            good = ft >= fg[p] - slack[p]
            xn[p[good]], Mn[p[good]], fn[p[good]] = xt[good], Mt[good], ft[good]
            accepted[p[good]] = True
            pend[p[good]] = False
            pend &= t >= 1e-10
        # a shortened Newton step whose predicted gain is below the rounding of f: f is
        # maximal to its precision (newton_maximize's "stopped at floating-point precision")
        at_eps = accepted & (t < 1.0) & (dec[go] < _NOISE * np.maximum(1.0, np.abs(fg)))
        converged[ia[at_eps]] = done[ia[at_eps]] = True
        ok[ia[~accepted]] = False
        done[ia[~accepted]] = True
        move = accepted & ~at_eps
        j = ia[move]
        x[j], M[j], f[j] = xn[move], Mn[move], fn[move]
    ok &= (M > free_min).all(axis=(1, 2))
    return x, M, f, ok & converged
