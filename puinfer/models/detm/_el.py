"""Empirical-likelihood core of the exponential tilting models (Liu et al., Section 3).

Notation (Liu et al.): source sample ``x_1..x_n`` from ``p_s(x|y=1)``, target ``x_{n+1..N}`` from
``pi p_t(x|y=1) + (1-pi) p_t(x|y=0)``, tilts ``w_t(x) = exp(alpha_t + x'beta_t)``, t = 1, 2.
Everything here works on the *standardised* design ``Z`` (columns centred and scaled on the
pooled sample); the model module converts to the user's scale.

Two exact routes to the maximum empirical likelihood:

1. **pi free** -- the maximum of the profile log-EL (12) equals the maximum of the binary
   regression likelihood ``L = sum_source log P0 + sum_target log(1 - P0)`` with
   ``P0 = 1 / (1 + e^{eta1} + e^{eta2})``, ``eta_t = s_t + z'b_t``, via
   ``beta_t = b_t``, ``pi = mean_target e^{eta1} / (e^{eta1} + e^{eta2})`` and
   ``alpha_t = s_t - log(m pi_t / n)``; then the Lagrange multipliers of (11) are
   ``lambda_t = m pi_t / N`` exactly and ``l_N - N log N = L - n log n - m log m``.
   (The intercept score equations of ``L`` are the constraints (10); the penalty below acts
   on slopes only, so this holds for the penalised fit too.)  :func:`free_objective` gives
   ``L`` with its gradient and Hessian for Newton's method.
2. **pi fixed** (profiling) -- :func:`profile_log_el` evaluates ``l_N(theta)`` of eq. (12)
   with ``(lambda_1, lambda_2)`` solved from (11) by a convex Newton iteration to machine
   precision, and its gradient and Hessian by the envelope theorem / implicit differentiation
   (``d^2 l = h_tt - h_tl h_ll^{-1} h_lt``).

Penalty: ``c * (2/3) (|b1|^2 + |b2|^2 - b1'b2)``, which is ``c`` times the squared norm of the
slopes in glmnet's symmetric three-class multinomial parametrisation (the form used by the
authors' R package in its M-step, with ``c = 1 / (2 sqrt(N))`` for glmnet's lambda = N^-1.5;
the package applies it to the standardised features' slopes, the R code (PUEM's
``DETMnull.R``, ``standardize=FALSE``) to the slopes of the features as given).
SETM is the restriction ``b1 = 0`` of the same penalised objective, so SETM stays nested in DETM.
"""

from __future__ import annotations

import functools

import numpy as np

from ...base.gram import weighted_grams
from ...base.numeric import logaddexp, softplus

__all__ = ["free_objective", "profile_log_el", "solve_lambda", "penalty", "ridge_strength",
           "penalise", "profile_sums", "profile_finish", "tilts", "label_gap",
           "label_gap_sums", "label_gap_grad"]


def ridge_strength(N: int) -> float:
    """Default vanishing ridge strength ``1 / (2 sqrt(N))`` (glmnet lambda = N^-1.5)."""
    return 0.5 / np.sqrt(N)


def penalty(b1: np.ndarray, b2: np.ndarray, c: float, order: int = 0):
    """The symmetric-multinomial ridge penalty, its gradient and Hessian in ``(b1, b2)``."""
    a = c * (2.0 / 3.0)
    val = a * (b1 @ b1 + b2 @ b2 - b1 @ b2)
    if order == 0:
        return val
    grad = a * np.concatenate([2 * b1 - b2, 2 * b2 - b1])
    return val, grad, a * _penalty_pattern(b1.size)


@functools.lru_cache(maxsize=8)
def _penalty_pattern(k: int) -> np.ndarray:
    """``[[2 I, -I], [-I, 2 I]]`` (k x k blocks), read-only: the penalty's Hessian over c 2/3
    (built once per k: the Newton loops ask for it thousands of times)."""
    eye = np.eye(k)
    out = np.block([[2 * eye, -eye], [-eye, 2 * eye]])
    out.flags.writeable = False
    return out


#: rows per chunk of the sums over rows (:func:`profile_sums`, the multipliers' Newton steps in
#: :func:`_solve_lambda_zz`): a chunk's per-row arrays stay in cache (on large samples the
#: passes over them, not the arithmetic, are what costs)
BLOCK_ROWS = 32_768


def _blocks(X1, weights, X1F=None):
    """Assemble ``[X1' diag(w_tu) X1]`` blocks into a (2k x 2k) matrix; ``weights[t][u]``
    (the products on chunks of rows: :func:`~puinfer.base.gram.weighted_grams`, ``X1F`` its
    ``Xf``); a block whose weights are None is left zero."""
    k = X1.shape[1]
    pairs = [(t, u) for t in range(2) for u in range(t, 2) if weights[t][u] is not None]
    H = np.zeros((2 * k, 2 * k))
    # each Gram added straight into its (zero) block of H
    weighted_grams(X1, [weights[t][u] for t, u in pairs], X1F,
                   out=[H[t * k:(t + 1) * k, u * k:(u + 1) * k] for t, u in pairs])
    for t, u in pairs:
        if u != t:
            H[u * k:(u + 1) * k, t * k:(t + 1) * k] = H[t * k:(t + 1) * k, u * k:(u + 1) * k].T
    return H


def split(v: np.ndarray, p: int):
    """``v = (s1, b1, s2, b2)`` -> ``s1, b1, s2, b2``."""
    return v[0], v[1:p + 1], v[p + 1], v[p + 2:]


def tilts(Z, b1, b2):
    """``(Z @ b1, Z @ b2)`` as one product over ``Z`` (read once: on large samples the pass
    over the rows is what costs); each result C-contiguous: a fresh ``(2, N)`` array, which
    the caller may change in place."""
    # the (2, p) matrix of slopes filled directly (np.stack costs more than the filling; the
    # same matrix, the same product)
    B = np.empty((2, len(b1)))
    B[0] = b1
    B[1] = b2
    return B @ Z.T


def free_objective(v, Z, y, c, order=2, X1=None, memo=None, fixed_tilt1=False, X1F=None):
    """Penalised binary-regression form of the DETM log-EL with pi free (route 1).

    Parameters
    ----------
    v : array, ``(s1, b1, s2, b2)`` of length ``2 (p + 1)``.
    Z : (N, p) standardised features; ``y`` : (N,) 1 for target rows, 0 for source rows.
    c : ridge strength (0 for none).
    order : 0 for the value only, 2 for value, gradient and Hessian.
    memo : dict, optional
        Keeps the per-row quantities of the last evaluation (at most one): an ``order=2`` call
        at the point of the preceding ``order=0`` call (a line search's accepted step) reuses
        them (the same arithmetic: results equal bitwise). Same ``Z, y, c`` on every call.
    fixed_tilt1 : bool
        SETM (``b1 = 0`` held fixed): of the Hessian only the rows and columns of ``(s1, s2,
        b2)`` are the second derivative (one weighted product over the rows instead of three);
        the ``b1`` block holds only the penalty's part.
    X1F : numpy.ndarray, optional
        ``X1`` in Fortran order, for the weighted Grams (:data:`TiltData.X1F
        <puinfer.models.detm._data.TiltData.X1F>`; the same values bit for bit).

    Returns
    -------
    ``L - pen`` (and its gradient and Hessian).
    """
    p = Z.shape[1]
    s1, b1, s2, b2 = split(v, p)
    key = np.asarray(v, dtype=float).tobytes()
    core = memo.get(key) if memo is not None else None
    if core is None:
        # eta_t = s_t + Z b_t, in place in the (2, N) product (the same sums: + commutes)
        eta = tilts(Z, b1, b2)
        eta[0] += s1
        eta[1] += s2
        logS = logaddexp(eta[0], eta[1])
        log1pS = softplus(logS)
        f = logS @ y - log1pS.sum()
        if c:
            f -= penalty(b1, b2, c)
        core = (f, eta, logS, log1pS)
        if memo is not None:
            memo.clear()
            memo[key] = core
    f, eta, logS, log1pS = core
    if order == 0:
        return f
    if X1 is None:
        X1 = np.column_stack([np.ones(len(y)), Z])
    # both components at once, in (2, N) arrays, each operation elementwise the one of
    # q_t = exp(eta_t - logS), P_t = exp(eta_t - log1pS), g_t = y q_t - P_t, yq = y q1 q2,
    # w_tt = yq - P_t (1 - P_t), w12 = -yq + P1 P2 (= P1 P2 - yq): the same values bit for
    # bit, in fewer passes over the rows (issue 17: the bootstrap's refits evaluate this
    # some 20,000 times on 2,000 rows, where each pass costs about as much as its arithmetic)
    q = np.subtract(eta, logS)
    np.exp(q, out=q)
    P = np.subtract(eta, log1pS)
    np.exp(P, out=P)
    q1, q2 = q
    P1, P2 = P
    G = np.multiply(y, q)
    G -= P
    k = X1.shape[1]
    grad = np.empty(2 * k)
    np.matmul(X1.T, G[0], out=grad[:k])
    np.matmul(X1.T, G[1], out=grad[k:])
    yq = y * q1
    yq *= q2
    W = np.subtract(1.0, P)
    W *= P
    np.subtract(yq, W, out=W)
    w11, w22 = W
    w12 = np.multiply(P1, P2)
    w12 -= yq
    if fixed_tilt1:
        H = _blocks(X1, [[None, None], [None, w22]], X1F)
        H[0, 0] = w11.sum()
        H[0, k:] = H[k:, 0] = X1.T @ w12
    else:
        H = _blocks(X1, [[w11, w12], [None, w22]], X1F)
    if c:
        penalise(grad, H, b1, b2, c)
    return f, grad, H


def penalise(grad, H, b1, b2, c):
    """Subtract the penalty's gradient and Hessian from ``grad`` and ``H`` (over
    ``(s1, b1, s2, b2)``, extra trailing entries untouched) in place."""
    p = b1.size
    a = penalise_grad(grad, b1, b2, c)
    # the penalty's Hessian a [[2 I, -I], [-I, 2 I]] touches only four diagonals: on a
    # C-contiguous H (every caller's) one fancy-indexed update of its flat entries (each entry
    # of _penalty_entries changed by the same one operation, H - 2a = H + a (-2), H + a; at a
    # third of the cost of two two-dimensional fancy updates: issue 17), else those
    if H.flags.c_contiguous and H.ndim == 2 and H.shape[0] == H.shape[1]:
        idx, pattern = _penalty_flat(p, H.shape[1])
        Hf = H.reshape(-1)
        Hf[idx] += a * pattern
        return
    diag, off = _penalty_entries(p)
    H[diag] -= 2 * a
    H[off] += a


def penalise_grad(grad, b1, b2, c) -> float:
    """Subtract the penalty's gradient from ``grad`` (over ``(s1, b1, s2, b2)``) in place;
    returns the penalty's scale ``a = 2 c / 3`` (its Hessian is ``a [[2 I, -I], [-I, 2 I]]``)."""
    p = b1.size
    a = c * (2.0 / 3.0)
    grad[1:p + 1] -= a * (2 * b1 - b2)
    grad[p + 2:2 * p + 2] -= a * (2 * b2 - b1)
    return a


@functools.lru_cache(maxsize=32)
def _penalty_flat(p: int, K: int):
    """The entries of :func:`_penalty_entries` in a C-ordered ``K x K`` matrix's flat array
    (entry ``(i, j)`` is ``i K + j``) and minus the penalty's Hessian over ``a`` there (``-2``
    on the diagonals of ``b1`` and ``b2``, ``1`` on their cross diagonals), both read-only."""
    diag, off = _penalty_entries(p)
    idx = np.r_[diag[0] * K + diag[1], off[0] * K + off[1]]
    pattern = np.r_[np.full(2 * p, -2.0), np.ones(2 * p)]
    for arr in (idx, pattern):
        arr.flags.writeable = False
    return idx, pattern


@functools.lru_cache(maxsize=16)
def _penalty_entries(p: int):
    """``(rows, cols)`` of the entries of ``H`` that :func:`penalise` updates: the diagonal
    entries of ``b1`` and ``b2``, and the two cross diagonals between them."""
    d1 = np.arange(1, p + 1)
    d2 = d1 + p + 1
    diag, off = (np.r_[d1, d2], np.r_[d1, d2]), (np.r_[d1, d2], np.r_[d2, d1])
    for a in (*diag, *off):
        a.flags.writeable = False
    return diag, off


def _solve_small(H, b):
    """Solve the 1x1 or 2x2 positive-definite system ``H x = b`` in closed form (this runs
    thousands of times per profile, where ``numpy.linalg.solve``'s overhead dominates);
    ``None`` if ``H`` is singular.

    A numerically singular 2x2 ``H`` comes from two constraint columns collinear to rounding,
    i.e. two tilts that coincide. There eq. (11) is one constraint instead of two, and the
    log-EL with one constraint lies above the limit of the values around it (a spike: e.g.
    +69 on 300 rows, where the component moved by 1e-4 gives the two-constraint value); the
    caller reports no solution (``-inf``), so no search stops on such an isolated point."""
    if H.shape[0] == 1:
        return b / H[0, 0] if H[0, 0] > 0 else None
    # Python floats: the same IEEE operations as on numpy scalars, without their overhead
    (a, c), (_, d) = H.tolist()
    b0, b1 = b.tolist()
    det = a * d - c * c
    # numerically singular (collinear constraints, coinciding tilts): see the docstring
    if not (a > 0 and d > 0 and det > 1e-14 * a * d):
        return None
    return np.array([(d * b0 - c * b1) / det, (a * b1 - c * b0) / det])


def newton_step(H, g):
    """The Newton step ``-H^{-1} g`` of the multipliers' convex objective (gradient ``g``, 1x1
    or 2x2 Hessian ``H``: :func:`_solve_small`) and its decrement ``g' H^{-1} g``; None where
    ``H`` is singular or the decrement is not finite (no step to take)."""
    step = _solve_small(H, -g)
    if step is None:
        return None
    dec = -float(g @ step)
    return (step, dec) if np.isfinite(dec) else None


#: a tilt with ``|w - 1| <= IDENTITY_TILT`` at every row is treated as identically 1 (see
#: :func:`_is_active`)
IDENTITY_TILT = 1e-10

#: the multipliers' Newton solve stops after a full step taken from a point whose Newton
#: decrement ``g' H^{-1} g`` is below this: ``-sum log(1 + lambda'z_i)`` is self-concordant, so
#: after a full step the decrement is below its square (Boyd & Vandenberghe, 9.6.4), 1e-24 --
#: the objective within ~1e-24 of its minimum and lambda at rounding level; the iteration that
#: would only confirm it (a step of rounding size) is saved (issue 17, session 50)
DECREMENT_STOP = 1e-12

#: below this Newton decrement (1/16, i.e. lambda(x) < 1/4) the multipliers' full Newton step
#: is taken without a line search (see :func:`_solve_lambda_zz`)
PURE_NEWTON = 1.0 / 16.0


def _is_active(z: np.ndarray) -> bool:
    """Whether the column ``z = w - 1`` constrains the weights: a tilt within
    :data:`IDENTITY_TILT` of 1 everywhere is treated as identically 1; its constraint holds for
    any weights and its multiplier is not identified (solving for it would be a singular
    system). Such tilts are what a fit leaves where a component equals the source (target =
    source: theta ~ 1e-15 to 1e-13, the accuracy of Newton's method along the flat ridge of
    the pi-free objective, which depends on the rounding of the platform's exp and log). The
    constraint ``sum p_i z_i = 0`` does not change when ``z`` is scaled, so a tilt of 1e-13
    treated as active constrains the weights as fully as a tilt of 1 would (session 46: on an
    AVX-512 machine the fit of such data stopped at |theta| ~ 2.6e-13, and its log-EL, with
    that constraint, was 94 units below the maximum, -668.96 against -574.50)."""
    mx = np.abs(z).max(initial=0.0)
    return bool(mx > IDENTITY_TILT) if not np.isnan(mx) else \
        bool(np.any(np.abs(z) > IDENTITY_TILT))


def solve_lambda(logw1, logw2, lam0, *, maxiter=100):
    """Solve eq. (11) for the Lagrange multipliers ``(lambda_1, lambda_2)``.

    Minimises the convex ``-sum log(1 + lambda'z_i)``, ``z_i = (w1_i - 1, w2_i - 1)``, by
    Newton's method with a step-halving guard that keeps every ``1 + lambda'z_i > 0``.

    Returns
    -------
    lam : (2,) array, D : (N,) the denominators ``1 + lambda'z_i``, and a flag for success.
    """
    lam, D, ok, _ = _solve_lambda_z(np.expm1(logw1), np.expm1(logw2), lam0, maxiter)
    return lam, D, ok


def _solve_lambda_z(z1, z2, lam0, maxiter=100):
    """:func:`solve_lambda` from ``z_t = w_t - 1``; also returns which constraints are active
    (:func:`_solve_lambda_zz` on the two columns stacked)."""
    return _solve_lambda_zz(np.stack([z1, z2]), lam0, maxiter)


def _solve_lambda_zz(zz, lam0, maxiter=100):
    """:func:`_solve_lambda_z` from the ``(2, N)`` array ``zz`` of both ``z_t = w_t - 1``.

    Each Newton step is two passes over the rows, on chunks of :data:`BLOCK_ROWS` rows
    (:func:`_lambda_sums`, :func:`_denominators`): ``R = Z / D`` (one division per row), its
    row sums and cross products, then the new ``1 + lambda'Z`` and its extremes; the objective
    ``-sum log D`` (a log per row) only in the damped phase, where the line search needs it.
    Up to one chunk the arithmetic is that of whole-array operations; above, each chunk's
    per-row arrays stay in cache (at 1e6 rows a solve ran 3-4x faster than on whole arrays,
    issue 17, session 56), the sums adding up chunk by chunk."""
    # (warnings off once for the whole solve: a step to D_i <= 0 makes the sum of logs nan or
    # +inf, which the Armijo test below rejects; entering np.errstate costs microseconds, a
    # share of a solve on a few hundred rows, where the overhead is the cost)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _solve_lambda_zz_quiet(zz, lam0, maxiter)


def _solve_lambda_zz_quiet(zz, lam0, maxiter):
    """:func:`_solve_lambda_zz` with floating-point warnings already silenced."""
    N = zz.shape[1]
    lo, hi = zz.min(axis=1), zz.max(axis=1)
    # a tilt that is identically 1 (SETM's first component) imposes no constraint: its
    # multiplier is not identified and is set to 0 (see _is_active, whose rule this is)
    mx = np.maximum(-lo, hi).tolist()
    active = np.array([_is_active(z) if a != a else a > IDENTITY_TILT  # (a != a: NaN)
                       for z, a in zip(zz, mx, strict=True)])
    if not active.any():  # both tilts identically 1: p_i = 1/N, no multiplier to solve
        return np.zeros(2), np.ones(N), True, active
    Zs = zz if active.all() else zz[1:] if active[1] else zz[:1]
    lam = np.asarray(lam0, dtype=float)[active].copy()
    lam_full = np.zeros(2)
    if any(a and (l_ >= 0 or h_ <= 0)
           for a, l_, h_ in zip(active.tolist(), lo.tolist(), hi.tolist(), strict=True)):
        # a tilt on one side of 1 at every row: no weights on the simplex meet its constraint
        # (11) and -sum log(1 + lambda'z) falls without bound; Newton would double lambda up
        # to maxiter times before failing (e.g. every start of a fit where target = source)
        lam_full[active] = lam
        return lam_full, np.ones(N), False, active
    blocks = [slice(i, i + BLOCK_ROWS) for i in range(0, N, BLOCK_ROWS)]
    D, d_lo, d_hi = _denominators(lam, Zs, blocks)
    if d_lo <= 0:
        lam = np.zeros(len(Zs))
        D, d_lo, d_hi = np.ones(N), 1.0, 1.0
    ok = False
    obj = None  # -sum log D, evaluated where the damped phase needs it
    for _ in range(maxiter):
        if d_lo >= 1 and d_hi > 1:
            # lambda'z_i >= 0 at every row, > 0 at some: no p_i > 0 meet (11) (their
            # weighted sum of lambda'z_i would be positive), and -sum log(1 + s
            # lambda'z_i) falls without bound as s grows; Newton would double lambda
            break
        g, H = _lambda_sums(Zs, D, blocks)
        newton = newton_step(H, g)
        if newton is None:
            break
        step, dec = newton
        gs = -dec
        # converged: the Newton step is at the level of rounding error in lambda
        tiny = max(map(abs, step.tolist())) <= 1e-14 * max(1.0, *map(abs, lam.tolist()))
        lt = lam + step
        D_new, lo_new, hi_new = _denominators(lt, Zs, blocks)
        if dec < PURE_NEWTON and lo_new > 0:
            # the objective is self-concordant: where the Newton decrement is below 1/4
            # the full step is feasible and passes the Armijo test (Boyd & Vandenberghe,
            # 9.6.4; the minimum exists, Nesterov 2004, Thm 4.1.11), so it is taken without
            # evaluating the objective; D_new > 0 is checked against rounding
            t = 1.0
        else:
            if obj is None:
                obj = -_log_sum(D, blocks)
            t = 1.0
            slack = 1e-13 * max(1.0, abs(obj))  # changes below rounding are accepted
            while t > 1e-12:
                obj_new = -_log_sum(D_new, blocks)
                if obj_new <= obj + 1e-4 * t * gs + slack:
                    break
                t *= 0.5
                lt = lam + t * step
                D_new, lo_new, hi_new = _denominators(lt, Zs, blocks)
            if t <= 1e-12:
                ok = dec < 1e-10
                break
            obj = obj_new
        lam = lt
        D, d_lo, d_hi = D_new, lo_new, hi_new
        if t < 1.0:
            continue
        obj = None if dec < PURE_NEWTON else obj
        if tiny or dec < 1e-30 * N or dec < DECREMENT_STOP:
            ok = True
            break
    if ok:
        # l_N(theta) = min over lambda, so an unconverged lambda overstates the log-EL: accept
        # only a solution of eq. (11) to rounding error
        ok = _solves_eq11(Zs, D, blocks)
    lam_full[active] = lam
    return lam_full, D, ok, active


def _denominators(lam, Zs, blocks):
    """``D = 1 + lambda'Z`` over the chunks of rows ``blocks``, with its minimum and maximum
    (NaN if any ``D`` is)."""
    if len(blocks) == 1:
        D = lam @ Zs
        D += 1.0
        return D, D.min(), D.max()
    D = np.empty(Zs.shape[1])
    lo, hi = np.inf, -np.inf
    for b in blocks:
        Db = np.matmul(lam, Zs[:, b], out=D[b])
        Db += 1.0
        lo, hi = np.minimum(lo, Db.min()), np.maximum(hi, Db.max())  # (NaN propagates)
    return D, lo, hi


def _lambda_sums(Zs, D, blocks):
    """The gradient ``-sum z_i / D_i`` and Hessian ``sum z_i z_i' / D_i^2`` (1x1 or 2x2) of the
    multipliers' objective at the denominators ``D``, summed over the chunks ``blocks``."""
    if len(blocks) == 1:  # (every sample up to BLOCK_ROWS rows: no chunk views, no loop)
        return _lambda_sums_of(Zs, D)
    g = H = None
    for b in blocks:
        gb, Hb = _lambda_sums_of(Zs[:, b], D[b])
        g, H = (gb, Hb) if g is None else (g + gb, H + Hb)
    return g, H


def _lambda_sums_of(Zs, D):
    """:func:`_lambda_sums` on one chunk of rows."""
    R = Zs * (1.0 / D)
    g = -R.sum(axis=1)
    if len(R) == 1:
        return g, np.array([[R[0] @ R[0]]])
    r0, r1 = R
    H = np.empty((2, 2))  # (filled entry by entry: the same values as np.array of them)
    H[0, 0] = r0 @ r0
    H[0, 1] = H[1, 0] = r0 @ r1
    H[1, 1] = r1 @ r1
    return g, H


def _log_sum(D, blocks) -> float:
    """``sum log D`` over the chunks ``blocks``."""
    if len(blocks) == 1:
        return np.log(D).sum()
    return sum(float(np.log(D[b]).sum()) for b in blocks)


def _solves_eq11(Zs, D, blocks) -> bool:
    """Whether ``sum z_i / D_i = 0`` holds to rounding error (relative to ``sum |z_i / D_i|``)."""
    if len(blocks) == 1:
        R = Zs / D
        s, a = R.sum(axis=1), np.abs(R).sum(axis=1)
    else:
        s = a = 0.0
        for b in blocks:
            R = Zs[:, b] / D[b]
            s, a = s + R.sum(axis=1), a + np.abs(R).sum(axis=1)
    return bool(np.all(np.abs(s) <= 1e-9 * np.maximum(a, 1.0)))


def label_gap(theta, Z, lam0, X1=None, order=0):
    """The KL label rule's margin (Liu et al., Remark 1) at ``theta``: ``KL(p_s || p_2) -
    KL(p_s || p_1)`` with the EL weights ``p_i = 1 / (N D_i)`` of eq. (11) as the estimate of
    ``p_s``, i.e. ``sum_i p_i (eta1_i - eta2_i)``; ``theta`` is labelled where it is ``>= 0``.

    ``lam0`` starts the multipliers' solve (they do not depend on pi). ``order=1`` also returns
    the gradient in theta ``(a1, b1, a2, b2)``: the direct term and the one through the
    multipliers (implicit function theorem on ``sum_i z_i / D_i = 0``: ``d lambda / d theta =
    -h_ll^{-1} h_lt`` over the active constraints, :func:`profile_sums`' blocks); it needs
    ``X1 = (1, Z)``; its sums are :func:`label_gap_sums` (over blocks of rows on Dask
    collections), finished by :func:`label_gap_grad`.

    Returns
    -------
    the margin (None where no multipliers exist), and for ``order=1`` its gradient.
    """
    N, p = Z.shape
    a1, b1, a2, b2 = split(theta, p)
    eta1, eta2 = a1 + Z @ b1, a2 + Z @ b2
    z1, z2 = np.expm1(eta1), np.expm1(eta2)
    lam, D, ok, act = _solve_lambda_z(z1, z2, lam0)
    if not ok:
        return (None, None) if order else None
    w = 1.0 / (N * D)
    gap = -(w @ eta2) - -(w @ eta1)  # KL2 - KL1, as PiProfiler.labelled compares them
    if not order:
        return gap
    return gap, label_gap_grad(label_gap_sums(eta1, eta2, z1, z2, lam, D, X1), N, act)


def label_gap_sums(eta1, eta2, z1, z2, lam, D, X1) -> dict:
    """The row sums of :func:`label_gap`'s gradient at the multipliers ``lam`` (``D = 1 +
    lam'z``): ``XR`` (``X1'R`` for the seven columns below), ``zz`` (``sum z_s z_t / D^2``:
    ``h_ll``), ``cz`` (``sum_i c_i z_si``, ``c = (eta1 - eta2) / D^2``); and ``etaD`` (``sum_i
    eta_ti / D_i``, the margin's, for sums over blocks of rows)."""
    iD = 1.0 / D
    w1, w2 = np.exp(eta1), np.exp(eta2)
    z1D, z2D = z1 * iD, z2 * iD
    c = (eta1 - eta2) * iD * iD
    # columns: d/dtheta_t of G_s = sum_i z_si / D_i (s, t = 1, 2), then 1 / D and the direct
    # derivative of D through each tilt (weighted by (eta1 - eta2) / D^2)
    R = np.column_stack([w1 * iD * (1.0 - z1D * lam[0]), -w2 * iD * z1D * lam[1],
                         -w1 * iD * z2D * lam[0], w2 * iD * (1.0 - z2D * lam[1]),
                         iD, c * lam[0] * w1, c * lam[1] * w2])
    return {"XR": X1.T @ R, "zz": np.array([z1D @ z1D, z1D @ z2D, z2D @ z2D]),
            "cz": np.array([c @ z1, c @ z2]), "etaD": np.array([eta1 @ iD, eta2 @ iD])}


def label_gap_grad(S: dict, N: int, act) -> np.ndarray:
    """:func:`label_gap`'s gradient from its sums ``S`` (:func:`label_gap_sums`) over ``N``
    rows, active constraints ``act``."""
    XR, zz = S["XR"], S["zz"]
    dG = np.stack([np.concatenate([XR[:, 0], XR[:, 1]]), np.concatenate([XR[:, 2], XR[:, 3]])])
    Hll = np.array([[zz[0], zz[1]], [zz[1], zz[2]]])
    dlam = np.zeros_like(dG)
    dlam[act] = np.linalg.solve(Hll[np.ix_(act, act)], dG[act])
    return (np.concatenate([XR[:, 4], -XR[:, 4]]) - np.concatenate([XR[:, 5], XR[:, 6]])
            - S["cz"] @ dlam) / N


def target_rows(tmask: np.ndarray):
    """The rows of the boolean ``tmask`` as a slice where its true entries are its last ones
    (the target rows after the source rows: every in-memory sample, and each chunk of one),
    else ``tmask`` itself. Indexing by the slice selects the same rows in the same order as
    the mask (the results are bitwise the same) but as a view: a boolean index copies row by
    row: 3-7% of a profile evaluation at 2e5-1e6 rows (issue 17, session 49)."""
    start = len(tmask) - int(np.count_nonzero(tmask))
    return slice(start, None) if tmask[start:].all() else tmask


def _with_pi(grad, H, Hlt, X1, w1, w2, logmix, tmask, p):
    """Append pi to the gradient and the (theta, theta) and (lambda, theta) Hessian blocks."""
    N = len(tmask)
    mix = np.exp(logmix)
    tmask = target_rows(tmask)
    w1t, w2t = w1[tmask], w2[tmask]
    gpi = np.sum((w1t - w2t) / mix)
    hpp = -np.sum(((w1t - w2t) / mix) ** 2)
    cross = np.zeros(N)
    cross[tmask] = w1t * w2t / mix**2
    hpt = np.concatenate([X1.T @ cross, -(X1.T @ cross)])
    grad = np.append(grad, gpi)
    k = 2 * (p + 1)
    Hn = np.empty((k + 1, k + 1))
    Hn[:k, :k] = H
    Hn[:k, k] = hpt
    Hn[k, :k] = hpt
    Hn[k, k] = hpp
    return grad, Hn, np.column_stack([Hlt, np.zeros(Hlt.shape[0])])


def pi_slope(theta, pi, Zt) -> float:
    """``d l_N / d pi`` at fixed theta: ``sum_target (w1 - w2) / (pi w1 + (1 - pi) w2)`` (the
    multipliers do not depend on pi). At a maximum over theta with pi fixed it is the slope of
    the profile of pi (envelope theorem). ``Zt``: the target rows."""
    a1, b1, a2, b2 = split(theta, Zt.shape[1])
    zb1, zb2 = tilts(Zt, b1, b2)
    e1, e2 = a1 + zb1, a2 + zb2
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # (w1 - w2) / mix = (1 - e^{e2 - e1}) / (pi + (1 - pi) e^{e2 - e1}), in a stable form
        d = e2 - e1
        big = d > 0
        ed = np.exp(np.where(big, -d, d))
        num = np.where(big, ed - 1.0, 1.0 - ed)
        den = np.where(big, pi * ed + (1 - pi), pi + (1 - pi) * ed)
        return float(np.sum(num / den))


def pi_cross(theta, pi, Zt, X1t) -> np.ndarray:
    """``d^2 l_N / d theta d pi`` at fixed theta: ``sum_target x (w1 w2 / mix^2) (1, -1)``
    (the multipliers do not depend on pi, so there is no implicit term). ``Zt``, ``X1t``: the
    target rows of ``Z`` and of ``(1, Z)``."""
    a1, b1, a2, b2 = split(theta, Zt.shape[1])
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        zb1, zb2 = tilts(Zt, b1, b2)
        d = (a2 + zb2) - (a1 + zb1)
        big = d > 0
        ed = np.exp(np.where(big, -d, d))
        den = np.where(big, pi * ed + (1 - pi), pi + (1 - pi) * ed)
        cross = ed / den**2
    h = X1t.T @ cross
    return np.concatenate([h, -h])


def _profile_core(a1, b1, a2, b2, pi, Z, y, c, lam0):
    """The value of :func:`profile_log_el` and the per-row quantities its derivatives use."""
    N = len(y)
    eta = tilts(Z, b1, b2)
    eta[0] += a1
    eta[1] += a2
    eta1, eta2 = eta
    if lam0 is None:
        m = y.sum()
        lam0 = (m * pi / N, m * (1 - pi) / N)
    zz = np.expm1(eta)
    z1, z2 = zz
    lam, D, ok, act = _solve_lambda_zz(zz, lam0)
    tmask = y == 1
    if not ok:
        return (-np.inf, eta1, eta2, z1, z2, lam, D, ok, act, tmask, None, None, None, None)
    if 0.0 < pi < 1.0:
        lpi, l1pi = np.log(pi), np.log1p(-pi)
    else:  # log 0 = -inf on the boundary
        with np.errstate(divide="ignore"):
            lpi, l1pi = np.log(pi), np.log1p(-pi)
    rows = target_rows(tmask)
    e1t = lpi + eta1[rows]
    e2t = l1pi + eta2[rows]
    logmix = logaddexp(e1t, e2t)
    f = -np.log(D).sum() + logmix.sum() - N * np.log(N)
    if c:
        f -= penalty(b1, b2, c)
    return (f, eta1, eta2, z1, z2, lam, D, ok, act, tmask, e1t, e2t, logmix, rows)


def profile_log_el(theta, pi, Z, y, c=0.0, lam0=None, order=2, X1=None, with_pi=False,
                   memo=None, fixed_tilt1=False, X1F=None):
    """Profile log-EL ``l_N(theta) - N log N`` of eq. (12) with the multipliers of (11) solved.

    Parameters
    ----------
    theta : ``(a1, beta1, a2, beta2)`` on the standardised scale (``a_t`` = alpha_t there).
    pi : mixture proportion in [0, 1].
    Z, y : standardised features and the target indicator (1 = target).
    c : ridge strength; the returned objective is ``l_N - N log N - pen``.
    lam0 : start for the multipliers (default ``(m pi/N, m(1-pi)/N)``).
    order : 0 (value), 1 (value and gradient; the Hessian None: the same value and gradient
        as ``order=2``, bit for bit, without the Hessian's products) or 2 (value, gradient,
        Hessian in theta -- and pi if ``with_pi``, which needs ``order=2``).
    memo : dict, optional
        Keeps the per-row quantities of the last evaluation (at most one): an ``order=2`` call
        at the point of the preceding ``order=0`` call (a line search's accepted step) reuses
        them instead of solving for the multipliers again. Same ``Z, y, c`` on every call.
    fixed_tilt1 : bool
        SETM's profile (``alpha1 = 0, beta1 = 0`` held fixed): the products for the Hessian's
        rows and columns of ``(alpha1, beta1)`` are skipped, so that only its
        ``(alpha2, beta2)`` block is the second derivative (the value and gradient are
        complete).
    X1F : numpy.ndarray, optional
        ``X1`` in Fortran order, for the weighted Grams (as in :func:`free_objective`).

    Returns
    -------
    value (``-inf`` if no multipliers exist), and for ``order=2`` gradient, Hessian and a dict
    with ``lam``, ``p`` (the EL weights ``p_i``) and ``omega`` (posterior of component 1 on the
    target rows).
    """
    N = len(y)
    p = Z.shape[1]
    a1, b1, a2, b2 = split(theta, p)
    key = core = None
    if memo is not None:
        key = (np.asarray(theta, dtype=float).tobytes(), float(pi))
        core = memo.get(key)
    if core is None:
        core = _profile_core(a1, b1, a2, b2, pi, Z, y, c, lam0)
        if memo is not None:
            memo.clear()
            memo[key] = core
    f, eta1, eta2, z1, z2, lam, D, ok, act, tmask, e1t, e2t, logmix, rows = core
    if not ok:
        return (-np.inf, None, None, None) if order else -np.inf
    if order == 0:
        return f
    if X1 is None:
        X1 = np.column_stack([np.ones(N), Z])
    hessian = order != 1
    if not (hessian or not with_pi):
        raise ValueError("with_pi needs order=2")
    grad, H, Hlt, Hll, om1t, iD = profile_sums(X1, eta1, eta2, z1, z2, lam, D, tmask, e1t,
                                               e2t, logmix, with_pi, fixed_tilt1, X1F, rows,
                                               hessian)
    if hessian:
        grad, H = profile_finish(grad, H, Hlt, Hll, act, b1, b2, c)
    elif c:
        penalise_grad(grad, b1, b2, c)  # (the implicit term changes only the Hessian)
    extra = {"lam": lam, "p": iD / N, "omega": om1t}
    return f, grad, H, extra


def profile_sums(X1, eta1, eta2, z1, z2, lam, D, tmask, e1t, e2t, logmix, with_pi=False,
                 fixed_tilt1=False, X1F=None, rows=None, hessian=True):
    """The sums over rows behind the derivatives of :func:`profile_log_el` at given
    multipliers: the gradient in theta (and pi), the (theta, theta) Hessian block, the
    (lambda, theta) block and the (lambda, lambda) block, before the envelope/implicit step
    (:func:`profile_finish`). Every entry is a sum over the rows given, so that blocks of rows
    add up (the Dask path; here chunks of :data:`BLOCK_ROWS` rows, whose per-row arrays stay in
    cache: on large samples the passes over them, not the arithmetic, are what costs); also
    returns the rows' posterior ``omega`` (target rows) and ``1 / D``. ``e1t``, ``e2t``,
    ``logmix``: per target row, in row order. ``fixed_tilt1``, ``X1F``: see
    :func:`profile_log_el` (``X1F`` is read on a single chunk only, as the Grams read it).
    ``rows``: ``target_rows(tmask)``, where the caller has it already. ``hessian=False``:
    the (theta, theta) and (lambda, lambda) blocks are not computed (None)."""
    N = len(tmask)
    if N <= BLOCK_ROWS:
        return _sums_of_rows(X1, eta1, eta2, z1, z2, lam, D, tmask, e1t, e2t, logmix, with_pi,
                             fixed_tilt1, X1F, rows, hessian)
    sums, om1t, iD = None, [], []
    k = 0  # target rows before the chunk
    for i in range(0, N, BLOCK_ROWS):
        sl = slice(i, i + BLOCK_ROWS)
        tm = tmask[sl]
        st = slice(k, k + int(np.count_nonzero(tm)))
        k = st.stop
        g, H, Hlt, Hll, o, d = _sums_of_rows(X1[sl], eta1[sl], eta2[sl], z1[sl], z2[sl], lam,
                                             D[sl], tm, e1t[st], e2t[st], logmix[st], with_pi,
                                             fixed_tilt1, hessian=hessian)
        sums = (g, H, Hlt, Hll) if sums is None else tuple(
            None if a is None else a + b
            for a, b in zip(sums, (g, H, Hlt, Hll), strict=True))
        om1t.append(o)
        iD.append(d)
    return (*sums, np.concatenate(om1t), np.concatenate(iD))


def _sums_of_rows(X1, eta1, eta2, z1, z2, lam, D, tmask, e1t, e2t, logmix, with_pi,
                  fixed_tilt1=False, X1F=None, rows=None, hessian=True):
    """:func:`profile_sums` in one pass over the rows given (``rows``: ``target_rows(tmask)``
    if known)."""
    N = len(tmask)
    p = X1.shape[1] - 1
    w1 = np.exp(eta1)
    w2 = np.exp(eta2)
    om1t = np.exp(e1t - logmix)
    om2t = np.exp(e2t - logmix)
    iD = 1.0 / D
    u1 = lam[0] * w1 * iD
    u2 = lam[1] * w2 * iD
    # one product X1' R for the gradient and the (lambda, theta) block: its columns are
    # om_t - u_t and d/dtheta_t of (-sum z_u / D) (up to sign). R column-major, each column
    # written contiguously, and the product as (R' X1)': the same sums bit for bit as X1' R
    # (OpenBLAS accumulates over the rows alike in either), in half the time on a narrow R
    R = np.empty((6, N)).T
    R[:, 0] = -u1
    R[:, 1] = -u2
    if rows is None:
        rows = target_rows(tmask)
    R[rows, 0] += om1t
    R[rows, 1] += om2t
    z1D, z2D = z1 * iD, z2 * iD
    R[:, 2] = z1D * u1 - w1 * iD   # lambda_1, theta_1
    R[:, 3] = z1D * u2             # lambda_1, theta_2
    R[:, 4] = z2D * u1             # lambda_2, theta_1
    R[:, 5] = z2D * u2 - w2 * iD   # lambda_2, theta_2
    XR = (R.T @ X1).T
    # (columns 0, 1 end to end; columns 2, 3 and 4, 5 as the two rows of the block)
    grad = XR[:, :2].T.ravel()
    Hlt = XR[:, 2:].T.reshape(2, -1)
    if not hessian:
        return grad, None, Hlt, None, om1t, iD
    # h_thetatheta
    yo = np.zeros(N)
    yo[rows] = om1t * om2t
    w22 = u2 * u2 - u2 + yo
    H = _blocks(X1, [[None, None], [None, w22]] if fixed_tilt1 else
                [[u1 * u1 - u1 + yo, u1 * u2 - yo], [None, w22]], X1F)
    h12 = z1D @ z2D
    Hll = np.array([[z1D @ z1D, h12], [h12, z2D @ z2D]])
    if with_pi:
        grad, H, Hlt = _with_pi(grad, H, Hlt, X1, w1, w2, logmix, tmask, p)
    return grad, H, Hlt, Hll, om1t, iD


def profile_finish(grad, H, Hlt, Hll, act, b1, b2, c):
    """Gradient and Hessian of the profile log-EL from :func:`profile_sums`: the implicit
    (lambda, theta) term ``- h_tl h_ll^{-1} h_lt`` over the active constraints, then the
    penalty."""
    # (the active constraints' rows and columns, see solve_lambda: where both are active,
    # Hll itself, the same values without np.ix_, whose index arrays cost as much as the
    # solve on these 2 x 2 blocks; Hlt indexed as before, a C-ordered copy for the product)
    Hll, Hlt = (Hll if act.all() else Hll[np.ix_(act, act)]), Hlt[act]
    H = H - Hlt.T @ np.linalg.solve(Hll, Hlt)
    if c:
        penalise(grad, H, b1, b2, c)
    return grad, H
