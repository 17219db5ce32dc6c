"""The multipliers' solve and the profile log-EL's derivatives made cheaper without changing a
bit (issue 17, session 82).

On small samples a DETM/SETM profile evaluation is mostly numpy's per-call overhead (about 180
us for the value, gradient and Hessian on 270 rows, of which the arithmetic is a small part),
and weakly determined fits make tens of thousands of them. Session 82 removed calls, not
arithmetic: one ``np.errstate`` per multiplier solve instead of two, the active constraints read
from two Python floats, the one-chunk sums without chunk views and loops, the 2 x 2 Hessian
filled entry by entry, the target rows found once per evaluation, ``profile_finish`` without
``np.ix_`` where both constraints are active, and no memo key without a memo. These tests hold
the previous code as the reference and check the same numbers bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from _bits import same_bits  # (tests/models/detm/_bits.py)

from puinfer.models.detm import _el


# -- references: the code before session 82 ---------------------------------------------------
def _ref_lambda_sums(Zs, D, blocks):
    g = H = None
    for b in blocks:
        iD = 1.0 / D[b]
        R = Zs[:, b] * iD
        gb = -R.sum(axis=1)
        if len(R) == 1:
            Hb = np.array([[R[0] @ R[0]]])
        else:
            h01 = R[0] @ R[1]
            Hb = np.array([[R[0] @ R[0], h01], [h01, R[1] @ R[1]]])
        g, H = (gb, Hb) if g is None else (g + gb, H + Hb)
    return g, H


def _ref_solves_eq11(Zs, D, blocks) -> bool:
    s = a = 0.0
    for b in blocks:
        R = Zs[:, b] / D[b]
        s, a = s + R.sum(axis=1), a + np.abs(R).sum(axis=1)
    return bool(np.all(np.abs(s) <= 1e-9 * np.maximum(a, 1.0)))


def _ref_solve_lambda_zz(zz, lam0, maxiter=100):
    """``_el._solve_lambda_zz`` before session 82 (verbatim but for the names)."""
    N = zz.shape[1]
    with np.errstate(invalid="ignore"):
        lo, hi = zz.min(axis=1), zz.max(axis=1)
    # a tilt that is identically 1 (SETM's first component) imposes no constraint: its
    # multiplier is not identified and is set to 0 (see _el._is_active, whose rule this is)
    mx = np.maximum(-lo, hi)
    active = np.array([_el._is_active(z) if np.isnan(a) else bool(a > _el.IDENTITY_TILT)
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
    blocks = [slice(i, i + _el.BLOCK_ROWS) for i in range(0, N, _el.BLOCK_ROWS)]
    D, d_lo, d_hi = _el._denominators(lam, Zs, blocks)
    if d_lo <= 0:
        lam = np.zeros(len(Zs))
        D, d_lo, d_hi = np.ones(N), 1.0, 1.0
    ok = False
    obj = None  # -sum log D, evaluated where the damped phase needs it
    # a step to D_i <= 0 makes the sum of logs nan or +inf: the Armijo test below fails on it
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(maxiter):
            if d_lo >= 1 and d_hi > 1:
                # lambda'z_i >= 0 at every row, > 0 at some: no p_i > 0 meet (11) (their
                # weighted sum of lambda'z_i would be positive), and -sum log(1 + s
                # lambda'z_i) falls without bound as s grows; Newton would double lambda
                break
            g, H = _ref_lambda_sums(Zs, D, blocks)
            newton = _el.newton_step(H, g)
            if newton is None:
                break
            step, dec = newton
            gs = -dec
            # converged: the Newton step is at the level of rounding error in lambda
            tiny = max(map(abs, step.tolist())) <= 1e-14 * max(1.0, *map(abs, lam.tolist()))
            lt = lam + step
            D_new, lo_new, hi_new = _el._denominators(lt, Zs, blocks)
            if dec < _el.PURE_NEWTON and lo_new > 0:
                # the objective is self-concordant: where the Newton decrement is below 1/4
                # the full step is feasible and passes the Armijo test (Boyd & Vandenberghe,
                # 9.6.4; the minimum exists, Nesterov 2004, Thm 4.1.11), so it is taken without
                # evaluating the objective; D_new > 0 is checked against rounding
                t = 1.0
            else:
                if obj is None:
                    obj = -_el._log_sum(D, blocks)
                t = 1.0
                slack = 1e-13 * max(1.0, abs(obj))  # changes below rounding are accepted
                while t > 1e-12:
                    obj_new = -_el._log_sum(D_new, blocks)
                    if obj_new <= obj + 1e-4 * t * gs + slack:
                        break
                    t *= 0.5
                    lt = lam + t * step
                    D_new, lo_new, hi_new = _el._denominators(lt, Zs, blocks)
                if t <= 1e-12:
                    ok = dec < 1e-10
                    break
                obj = obj_new
            lam = lt
            D, d_lo, d_hi = D_new, lo_new, hi_new
            if t < 1.0:
                continue
            obj = None if dec < _el.PURE_NEWTON else obj
            if tiny or dec < 1e-30 * N or dec < _el.DECREMENT_STOP:
                ok = True
                break
    if ok:
        # l_N(theta) = min over lambda, so an unconverged lambda overstates the log-EL: accept
        # only a solution of eq. (11) to rounding error
        ok = _ref_solves_eq11(Zs, D, blocks)
    lam_full[active] = lam
    return lam_full, D, ok, active


def _ref_profile_finish(grad, H, Hlt, Hll, act, b1, b2, c):
    Hll, Hlt = Hll[np.ix_(act, act)], Hlt[act]
    H = H - Hlt.T @ np.linalg.solve(Hll, Hlt)
    if c:
        _el.penalise(grad, H, b1, b2, c)
    return grad, H


# -- problems -------------------------------------------------------------------------------------
def _tilts(N, seed, kind="both"):
    """``(2, N)`` columns ``z_t = w_t - 1`` of two tilts (as the profile's multipliers see them):
    both active, the first identically 1 (SETM), one with a NaN, or one on one side of 1."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, 3))
    eta = np.stack([0.3 + X @ [0.5, -0.2, 0.1], -0.4 + X @ [-0.3, 0.6, 0.2]])
    if kind == "setm":
        eta[0] = 0.0
    elif kind == "nan":
        eta[1, N // 3] = np.nan
    elif kind == "one-sided":
        eta[1] = np.abs(eta[1]) + 0.1
    return np.expm1(eta)


def _blocks(N, sizes):
    edges = np.cumsum([0, *sizes])
    assert edges[-1] == N
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True)]


@pytest.mark.parametrize("N, sizes", [(270, [270]), (900, [300, 500, 100]), (7, [7])])
@pytest.mark.parametrize("rows", [1, 2])
def test_lambda_sums_and_eq11_check_match_the_previous_code(N, sizes, rows):
    rng = np.random.default_rng(N + rows)
    Zs = _tilts(N, N)[:rows]
    D = 1.0 + rng.uniform(-0.5, 0.5, N)
    blocks = _blocks(N, sizes)
    g, H = _el._lambda_sums(Zs, D, blocks)
    g_ref, H_ref = _ref_lambda_sums(Zs, D, blocks)
    same_bits(g, g_ref)
    same_bits(H, H_ref)
    assert H.flags.c_contiguous and H.shape == (rows, rows)
    # the check of eq. (11): a solution and a point off it, answered alike
    lam, D_sol, ok, _ = _el._solve_lambda_zz(_tilts(N, N), (0.2, 0.3))
    assert ok
    for Dx in (D_sol, D):
        Z2 = _tilts(N, N)
        assert _el._solves_eq11(Z2, Dx, blocks) == _ref_solves_eq11(Z2, Dx, blocks)
    assert _el._solves_eq11(_tilts(N, N), D_sol, blocks)


@pytest.mark.parametrize("kind", ["both", "setm", "nan", "one-sided"])
@pytest.mark.parametrize("N", [5, 270, 2000, _el.BLOCK_ROWS + 1500])
@pytest.mark.parametrize("lam0", [(0.2, 0.3), (0.0, 0.0), (5.0, -3.0)])
def test_solve_lambda_matches_the_previous_code(kind, N, lam0):
    """The same multipliers, denominators, success flag and active set, bit for bit, on both
    active tilts, SETM's identity tilt, a NaN row, a tilt on one side of 1 (no solution), a
    start far off (the damped phase) and more rows than one chunk."""
    zz = _tilts(N, N + len(kind), kind)
    out = _el._solve_lambda_zz(zz, lam0)
    ref = _ref_solve_lambda_zz(zz, lam0)
    for a, b in zip(out[:2], ref[:2], strict=True):
        same_bits(a, b)
    assert out[2] == ref[2]
    assert np.array_equal(out[3], ref[3]) and out[3].dtype == bool
    if kind == "both" and N >= 270 and lam0 != (5.0, -3.0):
        assert out[2]  # (a case where the solve succeeds is among them)


@pytest.mark.parametrize("act", [[True, True], [False, True], [True, False]])
def test_profile_finish_matches_the_previous_code(act):
    rng = np.random.default_rng(7)
    k = 8
    A = rng.standard_normal((2, 2))
    Hll = A @ A.T + np.eye(2)
    Hlt = rng.standard_normal((2, k))
    B = rng.standard_normal((k, k))
    H = -(B @ B.T)
    grad = rng.standard_normal(k)
    b1, b2 = rng.standard_normal(3), rng.standard_normal(3)
    act = np.array(act)
    g1, H1 = _el.profile_finish(grad.copy(), H.copy(), Hlt.copy(), Hll.copy(), act, b1, b2, 0.1)
    g2, H2 = _ref_profile_finish(grad.copy(), H.copy(), Hlt.copy(), Hll.copy(), act, b1, b2, 0.1)
    same_bits(g1, g2)
    same_bits(H1, H2)


@pytest.mark.parametrize("fixed_tilt1", [False, True])
def test_profile_log_el_with_and_without_memo_and_rows(fixed_tilt1):
    """The target rows passed on from the value to the derivatives, and the memo's key made only
    where there is a memo: the same value, gradient, Hessian and weights as recomputing them
    (``profile_sums`` without ``rows``) and as through a memo."""
    rng = np.random.default_rng(3)
    n, m, p = 150, 120, 2
    Z = np.vstack([rng.standard_normal((n, p)), rng.standard_normal((m, p)) + 0.4])
    y = np.r_[np.zeros(n), np.ones(m)]
    X1 = np.column_stack([np.ones(n + m), Z])
    theta = np.array([0.0, 0.0, 0.0, -0.2, 0.3, 0.1]) if fixed_tilt1 else \
        np.array([0.1, 0.2, -0.1, -0.2, 0.3, 0.1])
    a = _el.profile_log_el(theta, 0.4, Z, y, 0.05, order=2, X1=X1, fixed_tilt1=fixed_tilt1)
    memo: dict = {}
    f0 = _el.profile_log_el(theta, 0.4, Z, y, 0.05, order=0, memo=memo)
    b = _el.profile_log_el(theta, 0.4, Z, y, 0.05, order=2, X1=X1, memo=memo,
                           fixed_tilt1=fixed_tilt1)
    same_bits(a[0], f0)
    for u, v in zip(a[:3], b[:3], strict=True):
        same_bits(u, v)
    # the derivatives from the rows recomputed (rows=None), as before session 82
    core = _el._profile_core(*_el.split(theta, p), 0.4, Z, y, 0.05, None)
    f, eta1, eta2, z1, z2, lam, D, ok, act, tmask, e1t, e2t, logmix, rows = core
    assert ok and rows == _el.target_rows(tmask)
    s1 = _el.profile_sums(X1, eta1, eta2, z1, z2, lam, D, tmask, e1t, e2t, logmix, False,
                          fixed_tilt1, None, rows)
    s2 = _el.profile_sums(X1, eta1, eta2, z1, z2, lam, D, tmask, e1t, e2t, logmix, False,
                          fixed_tilt1)
    for u, v in zip(s1, s2, strict=True):
        same_bits(u, v)
    g, H = _el.profile_finish(s1[0], s1[1], s1[2], s1[3], act, *_el.split(theta, p)[1::2], 0.05)
    same_bits(g, a[1])
    same_bits(H, a[2])


@pytest.mark.parametrize("n, m", [(150, 120), (_el.BLOCK_ROWS, 2000)])
@pytest.mark.parametrize("fixed_tilt1", [False, True])
@pytest.mark.parametrize("c", [0.0, 0.05])
def test_order_one_is_order_two_without_the_hessian(n, m, fixed_tilt1, c):
    """``profile_log_el(order=1)`` (SLSQP's objective on the label boundary, which uses no
    Hessian): the value, gradient, multipliers and weights of ``order=2`` bit for bit, on one
    chunk of rows and on several."""
    rng = np.random.default_rng(n + m)
    p = 3
    Z = np.vstack([rng.standard_normal((n, p)), rng.standard_normal((m, p)) + 0.4])
    y = np.r_[np.zeros(n), np.ones(m)]
    X1 = np.column_stack([np.ones(n + m), Z])
    theta = np.array([0.0, 0.0, 0.0, 0.0, -0.2, 0.3, 0.1, -0.1]) if fixed_tilt1 else \
        np.array([0.1, 0.2, -0.1, 0.05, -0.2, 0.3, 0.1, -0.1])
    two = _el.profile_log_el(theta, 0.4, Z, y, c, order=2, X1=X1, fixed_tilt1=fixed_tilt1)
    one = _el.profile_log_el(theta, 0.4, Z, y, c, order=1, X1=X1, fixed_tilt1=fixed_tilt1)
    assert np.isfinite(two[0]) and two[2] is not None and one[2] is None
    same_bits(one[0], two[0])
    same_bits(one[1], two[1])
    for key in ("lam", "p", "omega"):
        same_bits(one[3][key], two[3][key])
    with pytest.raises(ValueError, match="with_pi"):
        _el.profile_log_el(theta, 0.4, Z, y, c, order=1, X1=X1, with_pi=True)
