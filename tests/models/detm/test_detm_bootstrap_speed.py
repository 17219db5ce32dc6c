"""The bootstrap SCAR test's refits made cheaper without changing a bit (issue 17, session 63).

Each resample refits SETM and DETM by Newton's method on the pi-free objective
(:func:`puinfer.models.detm._el.free_objective`, some 240 evaluations per resample at n = m =
1000). These tests hold the previous formulas as references and check that the faster forms
give the same numbers bit for bit: the objective's two components computed together in
``(2, N)`` arrays, the penalty's Hessian added through flat indices, the weighted Grams added
straight into the Hessian's blocks, the cheaper ``-|a - b|`` of ``logaddexp``, the grid of
starts computing each tilt's normaliser once, and the Newton runs computing each known
maximum's merge targets once.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _bits import same_bits  # (tests/models/detm/_bits.py)

import puinfer as pu
from puinfer.base.gram import weighted_grams
from puinfer.base.numeric import logaddexp, softplus
from puinfer.base.optimize import newton_maximize
from puinfer.base.results import ConvergenceInfo
from puinfer.models.detm import _el, _starts
from puinfer.models.detm._data import prepare


def _data(n, m, p, seed, shift=0.5):
    rng = np.random.default_rng(seed)
    return prepare(rng.standard_normal((n, p)), rng.standard_normal((m, p)) * 1.3 + shift)


# -- references: the formulas before session 63 --------------------------------------------
def _ref_logaddexp(a, b):
    m = np.maximum(a, b)
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.asarray(np.subtract(a, b))
    np.abs(d, out=d)
    np.negative(d, out=d)
    np.exp(d, out=d)
    np.log1p(d, out=d)
    d += m
    nan = np.isnan(d)
    if nan.any():
        d[nan] = m[nan]
    return d


def _ref_penalise(grad, H, b1, b2, c):
    p = b1.size
    a = c * (2.0 / 3.0)
    grad[1:p + 1] -= a * (2 * b1 - b2)
    grad[p + 2:2 * p + 2] -= a * (2 * b2 - b1)
    diag, off = _el._penalty_entries(p)
    H[diag] -= 2 * a
    H[off] += a


def _ref_blocks(X1, weights, X1F=None):
    k = X1.shape[1]
    pairs = [(t, u) for t in range(2) for u in range(t, 2) if weights[t][u] is not None]
    B = weighted_grams(X1, [weights[t][u] for t, u in pairs], X1F)
    H = np.zeros((2 * k, 2 * k))
    for j, (t, u) in enumerate(pairs):
        H[t * k:(t + 1) * k, u * k:(u + 1) * k] = B[j]
        if u != t:
            H[u * k:(u + 1) * k, t * k:(t + 1) * k] = B[j].T
    return H


def _ref_free_objective(v, Z, y, c, order, X1, fixed_tilt1=False, X1F=None):
    p = Z.shape[1]
    s1, b1, s2, b2 = _el.split(v, p)
    zb1, zb2 = np.stack([b1, b2]) @ Z.T
    eta1 = s1 + zb1
    eta2 = s2 + zb2
    logS = _ref_logaddexp(eta1, eta2)
    log1pS = softplus(logS)
    f = logS @ y - log1pS.sum()
    if c:
        f -= _el.penalty(b1, b2, c)
    if order == 0:
        return f
    q1 = np.exp(eta1 - logS)
    q2 = np.exp(eta2 - logS)
    P1 = np.exp(eta1 - log1pS)
    P2 = np.exp(eta2 - log1pS)
    g1 = y * q1 - P1
    g2 = y * q2 - P2
    grad = np.concatenate([X1.T @ g1, X1.T @ g2])
    yq = y * q1 * q2
    w11 = yq - P1 * (1 - P1)
    w22 = yq - P2 * (1 - P2)
    w12 = -yq + P1 * P2
    if fixed_tilt1:
        H = _ref_blocks(X1, [[None, None], [None, w22]], X1F)
        k = X1.shape[1]
        H[0, 0] = w11.sum()
        H[0, k:] = H[k:, 0] = X1.T @ w12
    else:
        H = _ref_blocks(X1, [[w11, w12], [None, w22]], X1F)
    if c:
        _ref_penalise(grad, H, b1, b2, c)
    return f, grad, H


# -- the kernels ----------------------------------------------------------------------------
@pytest.mark.parametrize("n, m, p", [(1000, 1000, 15), (300, 200, 4), (2500, 1500, 6)])
@pytest.mark.parametrize("fixed_tilt1", [False, True])
@pytest.mark.parametrize("penalised", [False, True])
def test_free_objective_matches_reference_bitwise(n, m, p, fixed_tilt1, penalised):
    # (the third size is above one chunk of the Grams: their chunked route)
    d = _data(n, m, p, seed=n + p)
    rng = np.random.default_rng(p)
    c = _el.ridge_strength(d.N) if penalised else 0.0
    for scale in (0.05, 0.5, 3.0):
        v = rng.standard_normal(2 * p + 2) * scale
        if fixed_tilt1:
            v[1:p + 1] = 0.0
        memo: dict = {}
        f0 = _el.free_objective(v, d.Z, d.y, c, 0, d.X1, memo=memo, fixed_tilt1=fixed_tilt1,
                                X1F=d.X1F)
        same_bits(f0, _ref_free_objective(v, d.Z, d.y, c, 0, d.X1, fixed_tilt1, d.X1F))
        ref = _ref_free_objective(v, d.Z, d.y, c, 2, d.X1, fixed_tilt1, d.X1F)
        # from the memo (a line search's accepted point) and afresh
        for out in (_el.free_objective(v, d.Z, d.y, c, 2, d.X1, memo=memo,
                                       fixed_tilt1=fixed_tilt1, X1F=d.X1F),
                    _el.free_objective(v, d.Z, d.y, c, 2, d.X1, fixed_tilt1=fixed_tilt1,
                                       X1F=d.X1F)):
            for a, b in zip(out, ref, strict=True):
                same_bits(a, b)


def test_tilts_fresh_and_as_stacked_product():
    d = _data(400, 300, 7, seed=3)
    rng = np.random.default_rng(0)
    b1, b2 = rng.standard_normal(7), rng.standard_normal(7)
    out = _el.tilts(d.Z, b1, b2)
    same_bits(out, np.stack([b1, b2]) @ d.Z.T)
    assert out.flags.c_contiguous and out.flags.writeable and out.shape == (2, d.N)


@pytest.mark.parametrize("p", [1, 4, 15])
def test_penalise_flat_update_matches_fancy_indexing(p):
    rng = np.random.default_rng(p)
    b1, b2 = rng.standard_normal(p), rng.standard_normal(p)
    for K in (2 * p + 2, 2 * p + 3):  # free parameters, and with pi appended
        H, g = rng.standard_normal((K, K)), rng.standard_normal(K)
        H_ref, g_ref = H.copy(), g.copy()
        _ref_penalise(g_ref, H_ref, b1, b2, 0.37)
        for layout in ("C", "F"):  # F: the fancy-indexed route
            H_new, g_new = np.array(H, order=layout), g.copy()
            _el.penalise(g_new, H_new, b1, b2, 0.37)
            same_bits(H_new, H_ref)
            same_bits(g_new, g_ref)
        # and it is the penalty's Hessian that was subtracted: -a [[2I, -I], [-I, 2I]]
        H0 = np.zeros((K, K))
        _el.penalise(np.zeros(K), H0, b1, b2, 0.37)
        _, _, ph = _el.penalty(b1, b2, 0.37, 2)
        pidx = np.r_[1:p + 1, p + 2:2 * p + 2]
        assert np.array_equal(H0[np.ix_(pidx, pidx)], -ph)
        rest = np.ones((K, K), dtype=bool)
        rest[np.ix_(pidx, pidx)] = False
        assert not H0[rest].any()


@pytest.mark.parametrize("N", [500, 2000, 5000])
def test_weighted_grams_into_blocks_as_new_array(N):
    rng = np.random.default_rng(N)
    X = rng.standard_normal((N, 16))
    X[:, 0] = 1.0
    Xf = np.asfortranarray(X)
    ws = [rng.standard_normal(N) for _ in range(3)]
    for xf in (None, Xf):
        ref = weighted_grams(X, ws, xf)
        big = np.zeros((48, 40))
        outs = [big[16 * j:16 * (j + 1), 3:19] for j in range(3)]
        ret = weighted_grams(X, ws, xf, out=outs)
        assert ret is outs
        for j in range(3):
            same_bits(outs[j], ref[j])
        big[16 * 0:16, 3:19] = 0.0
        big[16:48, 3:19] = 0.0
        assert not big.any()  # nothing written outside the blocks


def test_blocks_match_reference():
    d = _data(700, 900, 9, seed=11)
    rng = np.random.default_rng(1)
    w = [rng.standard_normal(d.N) for _ in range(3)]
    for weights in ([[w[0], w[1]], [None, w[2]]], [[None, None], [None, w[2]]]):
        for X1F in (None, d.X1F):
            same_bits(_el._blocks(d.X1, weights, X1F), _ref_blocks(d.X1, weights, X1F))


def test_logaddexp_matches_reference_bitwise():
    rng = np.random.default_rng(7)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324, 710.0,
                        -745.0, 1.0, -1.0])
    A, B = np.meshgrid(special, special)
    cases = [(A.ravel(), B.ravel())]
    for _ in range(50):
        a = rng.standard_normal(37) * 10 ** rng.uniform(-3, 3)
        b = rng.standard_normal(37) * 10 ** rng.uniform(-3, 3)
        b[::5] = a[::5]
        cases.append((a, b))
    with np.errstate(all="ignore"):
        for a, b in cases:
            new, ref = logaddexp(a, b), _ref_logaddexp(a, b)
            same_bits(new, ref)
            # signed zeros and all: the same bits, NaNs included
            assert np.array_equal(np.signbit(new[~np.isnan(new)]),
                                  np.signbit(ref[~np.isnan(ref)]))
        for x in special:  # scalars
            for y in special:
                same_bits(logaddexp(x, y), _ref_logaddexp(x, y))
    # the infinities and NaNs: where both are the same infinity, that infinity; and no
    # floating-point warning on the way
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = logaddexp(np.array([np.inf, -np.inf, np.nan, 0.0, 1e308]),
                        np.array([np.inf, -np.inf, 1.0, np.nan, 1e308]))
        out2 = logaddexp(np.array([1e308, 1e308, 1.0]), np.array([-1e308, 1e308, -np.inf]))
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2]) and np.isnan(out[3])
    same_bits(out2, _ref_logaddexp(np.array([1e308, 1e308, 1.0]),
                                   np.array([-1e308, 1e308, -np.inf])))


# -- the starts -----------------------------------------------------------------------------
def _ref_with_shares(data, pi0, b1, b2):
    Zs = data.Z[: data.n]
    s1 = np.log(data.m * pi0 / data.n) - np.log(np.mean(np.exp(Zs @ b1)))
    s2 = np.log(data.m * (1 - pi0) / data.n) - np.log(np.mean(np.exp(Zs @ b2)))
    return np.r_[s1, b1, s2, b2]


def _ref_grid(data, restricted, bL):
    out = []
    configs = [(0.0, 1.0)] if restricted else [(0.0, 1.0), (0.3, 1.3), (-0.3, 1.0)]
    for pi0 in (0.2, 0.5, 0.8):
        for k1, k2 in configs:
            out.append((f"pi0={pi0:g}, b1={k1:g}*bL, b2={k2:g}*bL",
                        _ref_with_shares(data, pi0, k1 * bL, k2 * bL)))
    return out


def test_grid_starts_match_reference():
    d = _data(800, 600, 6, seed=5)
    bL = d.logistic_slopes
    for restricted in (True, False):
        new, ref = _starts.grid_starts(d, restricted, bL), _ref_grid(d, restricted, bL)
        assert [lab for lab, _ in new] == [lab for lab, _ in ref]
        for (_, a), (_, b) in zip(new, ref, strict=True):
            same_bits(a, b)
    # the bootstrap's reduced DETM grid: the grid's starts with b1 = 0.3 bL, in its order
    new = _starts.grid_starts(d, False, bL, configs=((0.3, 1.3),))
    ref = [st for st in _ref_grid(d, False, bL) if "b1=0.3" in st[0]]
    assert [lab for lab, _ in new] == [lab for lab, _ in ref] and len(new) == 3
    for (_, a), (_, b) in zip(new, ref, strict=True):
        same_bits(a, b)


def _ref_newton_runs(fun, starts, maxiter, tol, method, pick=None, expand=None, known=None,
                     boundary=False):
    """``_starts._newton_runs`` before session 63: every start recomputes the targets."""
    S = _starts
    out = []
    known = [] if known is None else known
    for label, v0 in starts:
        targets = S._merge_targets(known)
        edge = S._boundary_targets(known) if boundary else []
        count = [0]

        def fun_m(u, order, targets=targets, edge=edge, count=count):
            if order != 2:
                return fun(u, order)
            k = S._merge_target(fun, u, [(r.f, u_k, A) for (r, _), u_k, A in targets])
            if k is not None:
                raise S._Merged(k)
            count[0] += 1
            res = fun(u, order)
            if edge:
                k = S._boundary_target(u, res[0], res[1],
                                       [(r.f, u_k, A) for (r, _), u_k, A in edge], fun, res[2])
                if k is not None:
                    raise S._Merged(len(targets) + k)
            return res

        try:
            u, f, _, H, info = newton_maximize(fun_m, v0 if pick is None else v0[pick],
                                               maxiter=maxiter, tol=tol, method=method)
        except S._Merged as mg:
            (r, lab), _, _ = [*targets, *edge][mg.k]
            info = ConvergenceInfo(True, max(count[0] - 1, 0), method,
                                   f"reached the maximum of start {lab!r} (stopped there)")
            out.append(S.StartRun(label, r.v, r.f, info))
            continue
        run = S.StartRun(label, u if expand is None else expand(u), f, info)
        out.append(run)
        if info.converged and np.isfinite(f):
            known.append(((run, label), u, H))
    return out


@pytest.mark.parametrize("restricted", [True, False])
def test_newton_runs_with_cached_targets_match_reference(restricted):
    # the bootstrap's starts on a resample-sized sample, over two calls that share ``known``
    # (as the hops do): the runs, their merges and the known maxima are the same
    d = _data(500, 500, 5, seed=21, shift=0.8)
    c = _el.ridge_strength(d.N)
    bL = d.logistic_slopes
    starts = _starts.grid_starts(d, restricted, bL)
    if not restricted:
        starts += _starts.moment_starts(d, False)
    opts = dict(pick=_starts._setm_index(d.p), expand=_starts.free_fun(d, c, True)[1],
                boundary=True) if restricted else {}
    results = []
    for runner in (_starts._newton_runs, _ref_newton_runs):
        fun, _ = _starts.free_fun(d, c, restricted)
        known: list = []
        runs = runner(fun, starts[:4], 200, 1e-10, "Newton", known=known, **opts)
        runs += runner(fun, starts[4:] + starts[:2], 200, 1e-10, "Newton", known=known,
                       **opts)
        results.append((runs, known))
    (runs, known), (runs_ref, known_ref) = results
    assert any("stopped there" in r.info.message for r in runs_ref)  # merges were exercised
    assert len(runs) == len(runs_ref) and len(known) == len(known_ref)
    for r, q in zip(runs, runs_ref, strict=True):
        assert (r.label, r.info.message, r.info.iterations, r.info.converged) == \
            (q.label, q.info.message, q.info.iterations, q.info.converged)
        same_bits(r.v, q.v)
        same_bits(r.f, q.f)


def test_tilted_probabilities_where_a_tilt_diverges():
    # session 85's audit: with penalty="none" on separated data the largest tilt sat on rows
    # of EL weight 0, the other terms underflowed, and every bootstrap failed in numpy
    # ("Probabilities contain NaN"); computed in logs there, as before elsewhere
    from puinfer.models.detm.bootstrap import _tilted_probs

    rng = np.random.default_rng(0)
    ps = rng.random(50)
    ps[:5] = 0.0
    ps /= ps.sum()
    eta = rng.normal(size=50)
    ref = ps * np.exp(eta - eta.max())
    np.testing.assert_array_equal(_tilted_probs(ps, eta), ref / ref.sum())  # (the same bits)
    eta[:5] = 2e4  # the zero-weight rows far above the others
    pr = _tilted_probs(ps, eta)
    lw = np.log(ps[5:]) + eta[5:]
    want = np.exp(lw - lw.max())
    np.testing.assert_allclose(pr[5:], want / want.sum(), rtol=1e-12)
    assert np.all(pr[:5] == 0) and pr.sum() == pytest.approx(1.0)
    assert np.all(np.isfinite(_tilted_probs(ps, eta + 800.0, shift=False)))


def test_bootstrap_of_an_unpenalised_fit_with_a_diverging_tilt_runs():
    rng = np.random.default_rng(5)
    df = pu.simulate.pu_normal(150, 200, 0.6, [0, 0], [0.3, 0], [1.2, 1], rng=rng)
    df["g"] = rng.choice(["a", "b"], len(df))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pu.DETM.from_formula("labeled ~ x1 + x2 + C(g)", data=df).fit(penalty="none",
                                                                         seed=1)
        ci = r.conf_int_pi()
        t = r.test_scar(reference="bootstrap", n_boot=19, rng=1)
    assert 0.0 <= ci["lower"] <= r.pi <= ci["upper"] <= 1.0
    assert 0 < t.pvalue <= 1
