"""URC's Newton step on the face by blocks (:mod:`puinfer.models.urc._face`, issue 17, session
65): the arrow matrix's reduction is the dense ``T' H T``, its Schur-complement step the dense
Cholesky step, its verdict on negative definiteness the dense one, and fits and profiles never
assemble the dense Hessian where the step exists."""

import warnings

import numpy as np
import pytest

import puinfer as pu
from puinfer.base.optimize import _ascent_direction
from puinfer.models.urc import _face, _stacked
from puinfer.models.urc import _likelihood as lik
from puinfer.models.urc._face import BlockHessian, DenseFace, FaceHessian, PairBasis
from puinfer.simulate.urc import simulate_urc


def _problems(n, seed=1):
    """Random histograms, points (some with a base rate at 0) and constraints, with the
    gradient and both Hessians there and the pair basis of the face."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        G, k, A = (int(v) for v in rng.integers([1, 2, 2], [7, 5, 5]))
        P = rng.dirichlet(np.ones(k), size=G)
        M = rng.dirichlet(np.ones(A), size=k)
        if rng.random() < 0.5:
            P[rng.integers(G), rng.integers(k)] = 0.0
            P /= P.sum(axis=1, keepdims=True)
        L = rng.integers(1, 30, size=(k, A)).astype(float)
        d = lik.Data(L=L, F=rng.integers(0, 50, size=(G, A)).astype(float),
                     pi_lab=L.sum(axis=1) / L.sum(), joint=bool(rng.integers(2)),
                     strength=float(rng.choice([0.0, 1.0])))
        con = lik.Constraint() if rng.random() < 0.5 else lik.Constraint(
            "entry", group=int(rng.integers(G)), cls=int(rng.integers(k)), v=0.3)
        with np.errstate(divide="ignore", invalid="ignore"):
            g, Hb = lik.grad_hess_blocks(P, M, d)
            H = Hb.dense()
        T = lik.tangent(P, M, d, con, g, pairs=True)
        if T is None or T.shape[1] == 0 or not np.all(np.isfinite(H)):
            continue
        out.append((g, Hb, H, T))
    return out


PROBLEMS = _problems(400)


def _dense_face(T, H):
    Tt = T.T
    return np.asarray(Tt @ np.asarray(Tt @ H).T)


def _einsum_hessian(P, M, d):
    """The joint likelihood's Hessian as :func:`grad_hess` formed it before session 65
    (three-operand einsums, one broadcast for the cross block; no prior or penalty)."""
    G, k = P.shape
    A = M.shape[1]
    Q = P @ M
    W, W2 = d.F / Q, d.F / Q ** 2
    n = G * k + k * A
    H = np.zeros((n, n))
    HPP = -np.einsum("ia,ga,ja->gij", M, W2, M)
    for g in range(G):
        H[g * k:(g + 1) * k, g * k:(g + 1) * k] = HPP[g]
    HPM = (np.eye(k)[None, :, :, None] * W[:, None, None, :]
           - M[None, :, None, :] * P[:, None, :, None] * W2[:, None, None, :])
    HMM = np.einsum("iaj,ab->iajb", -np.einsum("gi,gj,ga->iaj", P, P, W2), np.eye(A))
    HMM = HMM.reshape(k * A, k * A) - np.diag((d.L_lik / M ** 2).ravel())
    H[:G * k, G * k:] = HPM.reshape(G * k, k * A)
    H[G * k:, :G * k] = H[:G * k, G * k:].T
    H[G * k:, G * k:] = HMM
    return H


def test_block_hessian_is_the_einsum_hessian_and_the_gradient_s_derivative():
    """The blocks (matrix products over the cells) assemble the Hessian of the einsum
    formulas to rounding, and that is the derivative of the gradient (central differences)."""
    rec = _record()
    d, est = rec.data, rec.estimate
    P, M = est.P, est.M
    g, Hb = lik.grad_hess_blocks(P, M, d)
    g2, H = lik.grad_hess(P, M, d)
    assert np.array_equal(g, g2) and np.array_equal(Hb.dense(), H)
    ref = _einsum_hessian(P, M, d)
    np.testing.assert_allclose(H, ref, rtol=0, atol=1e-13 * np.abs(ref).max())
    theta, h = np.concatenate([P.ravel(), M.ravel()]), 1e-6
    G, k = P.shape
    num = np.empty_like(H)
    for j in range(theta.size):
        e = np.zeros(theta.size)
        e[j] = h
        hi, lo = theta + e, theta - e
        num[:, j] = (lik.grad_hess_blocks(hi[:G * k].reshape(G, k), hi[G * k:].reshape(M.shape),
                                          d)[0]
                     - lik.grad_hess_blocks(lo[:G * k].reshape(G, k),
                                            lo[G * k:].reshape(M.shape), d)[0]) / (2 * h)
    np.testing.assert_allclose(num, H, rtol=0, atol=1e-5 * np.abs(H).max())


def test_face_hessian_is_the_dense_reduction():
    """On 400 random faces (k up to 4, joint and fixed, free and entry constraints, groups
    with different numbers of free columns), the arrow matrix is ``T' H T``."""
    nb = set()
    for _, Hb, H, T in PROBLEMS:
        assert isinstance(T, PairBasis)
        face = FaceHessian(Hb, T)
        ref = _dense_face(T, H)
        np.testing.assert_allclose(face.dense(), ref, rtol=1e-13,
                                   atol=1e-13 * np.abs(ref).max())
        nb.add(face.D.shape[1])
    assert nb >= {0, 1, 2, 3}  # (no free P column, and padded blocks of every size)


def _modified_by_blocks(N, grp, nP):
    """The block-modified matrix of :meth:`FaceHessian.ascent_direction`, built densely from
    the negative face Hessian ``N`` (its ``P`` columns' groups ``grp``): each group's block
    and then the Schur complement of the corner with eigenvalues ``max(|ev|, floor)``."""
    floor = 1e-8 * max(1.0, np.abs(N[:nP, :nP]).max(initial=0.0),
                       np.abs(N[nP:, nP:]).max(initial=0.0))

    def fix(X):
        ev, V = np.linalg.eigh(X)
        return (V * np.maximum(np.abs(ev), floor)) @ V.T

    A = np.zeros((nP, nP))
    for gr in np.unique(grp):
        j = np.flatnonzero(grp == gr)
        A[np.ix_(j, j)] = fix(N[np.ix_(j, j)])
    B, C = N[:nP, nP:], N[nP:, nP:]
    AiB = np.linalg.solve(A, B) if nP else B
    S = C - B.T @ AiB
    out = np.block([[A, B], [B.T, (fix(S) if S.size else S) + B.T @ AiB]])
    assert np.linalg.eigvalsh(out).min() > 0  # (positive definite by construction)
    return out


def test_schur_step_is_the_dense_step():
    """The Schur-complement step and verdict are the dense Cholesky step's, where the reduced
    Hessian is not singular to rounding (condition number below 1e8; the verdict on a
    singular matrix is rounding). Where it is not negative definite, the modified step is
    the block-modified matrix's (built densely here, :func:`_modified_by_blocks`): an ascent
    direction, found without the dense matrix."""
    counts, n_ref = {True: 0, False: 0}, 0
    for g, Hb, H, T in PROBLEMS:
        gr = T.T @ g
        for sign in (1.0, -1.0):
            ref_H = sign * _dense_face(T, H)
            ev = np.abs(np.linalg.eigvalsh(ref_H))
            if ev.max() > 1e8 * ev.min():
                continue
            face = FaceHessian(Hb if sign > 0 else -Hb, T)
            d0, ok0 = _ascent_direction(gr, ref_H, False)
            d1, ok1 = _ascent_direction(gr, face, False)
            assert ok0 == ok1 and (d0 is None) == (d1 is None)
            if ok0:
                np.testing.assert_allclose(d1, d0, rtol=0, atol=1e-8 * np.abs(d0).max())
            d2, ok2 = _ascent_direction(gr, face, True)
            assert ok2 == ok0
            if ok0:
                np.testing.assert_array_equal(d2, d1)
            else:
                assert gr @ d2 > 0 or not gr.any()
                N = _modified_by_blocks(-ref_H, face.grp, face.nP)
                ev = np.linalg.eigvalsh(N)
                if ev.max() < 1e8 * ev.min():  # (not singular to rounding)
                    ref = np.linalg.solve(N, gr)
                    np.testing.assert_allclose(d2, ref, rtol=0, atol=1e-8 * np.abs(ref).max())
                    n_ref += 1
            counts[ok0] += 1
    assert counts[True] > 100 and counts[False] > 100 and n_ref > 100


def test_modified_step_never_forms_the_dense_matrix(monkeypatch):
    """Session 85's audit: with a rare lab class and 300 groups the face Hessian is often
    indefinite, and each modified step was a dense ``eigh`` of the whole face (1,543 of them
    of dimension 305 took 16 s). The modified step is now taken by blocks."""
    def fail(self):
        raise AssertionError("the dense face Hessian was formed")

    monkeypatch.setattr(FaceHessian, "dense", fail)
    n_mod = 0
    for g, Hb, _H, T in PROBLEMS:
        face = FaceHessian(-Hb, T)  # (the Hessian's negative: mostly indefinite)
        d, ok = face.ascent_direction(T.T @ g, True)
        n_mod += not ok
        assert d is not None
    assert n_mod > 100


def test_cross_block_by_broadcast_is_the_loop_s_bit_for_bit(monkeypatch):
    """``grad_hess_blocks``' cross block ``HPM`` by one broadcast product (few groups x cells,
    session 93) and by the loop over class pairs (many groups): the same values, signs of
    zero included, on random points (some with a base rate at 0) and counts (some 0)."""
    rng = np.random.default_rng(5)
    for _ in range(100):
        G, k, A = (int(v) for v in rng.integers([1, 2, 2], [40, 12, 25]))
        P = rng.dirichlet(np.ones(k), size=G)
        if rng.random() < 0.5:
            P[rng.integers(G), rng.integers(k)] = 0.0
            P /= P.sum(axis=1, keepdims=True)
        M = rng.dirichlet(np.ones(A), size=k)
        L = rng.integers(0, 30, size=(k, A)).astype(float)
        d = lik.Data(L=L, F=rng.integers(0, 30, size=(G, A)).astype(float),
                     pi_lab=L.sum(axis=1) / L.sum(), joint=True, strength=0.0)
        assert G * A <= lik._BROADCAST_HPM
        with np.errstate(divide="ignore", invalid="ignore"):
            g1, H1 = lik.grad_hess_blocks(P, M, d)
            monkeypatch.setattr(lik, "_BROADCAST_HPM", -1)  # (the loop)
            g2, H2 = lik.grad_hess_blocks(P, M, d)
            monkeypatch.undo()
        assert np.array_equal(g1, g2)
        assert np.array_equal(H1.HPM, H2.HPM)
        assert np.array_equal(np.signbit(H1.HPM), np.signbit(H2.HPM))


def test_reduce_takes_the_arrow_matrix_from_its_minimum_number_of_groups(monkeypatch):
    """``reduce`` gives the dense product (the same bits as before session 65) below
    ``FACE_MIN_GROUPS`` groups, held in a :class:`DenseFace`, and the arrow matrix from
    there."""
    g, Hb, H, T = next(p for p in PROBLEMS if p[1].HPP.shape[0] > 3)
    out = Hb.reduce(T)
    assert isinstance(out, DenseFace)
    np.testing.assert_array_equal(out.array, _dense_face(T, H))
    monkeypatch.setattr(_face, "FACE_MIN_GROUPS", Hb.HPP.shape[0])
    Hb = BlockHessian(Hb.HPP, Hb.HPM, Hb.HMM, Hb.nM)  # (reductions are cached)
    assert isinstance(Hb.reduce(T), FaceHessian)


def test_dense_face_steps_dense_where_newton_and_by_blocks_where_modified():
    """Below ``FACE_MIN_GROUPS`` groups (session 93): the Newton direction is the dense
    Cholesky step bit for bit, the verdict on negative definiteness the dense one, and the
    modified direction the arrow matrix's (its blocks' absolute eigenvalues), which ascends
    -- not the dense ``eigh``'s, which cost 4-20x as much."""
    counts = {True: 0, False: 0}
    for g, Hb, _H, T in PROBLEMS:
        for sign in (1, -1):  # (the negative Hessian: mostly indefinite)
            Hs = Hb if sign > 0 else -Hb
            face = Hs.reduce(T)
            assert isinstance(face, DenseFace)
            gr = T.T @ g
            d, newton = _ascent_direction(gr, face)
            d_dense, newton_dense = _ascent_direction(gr, face.array, modify=True)
            assert newton == newton_dense
            counts[newton] += 1
            if newton:
                assert np.array_equal(d, d_dense)
                continue
            # (the blocks' modified matrix; on a matrix at the edge of definiteness, where
            # the dense factorisation fails and the Schur complement's does not, their step)
            assert np.array_equal(d, FaceHessian(Hs, T)._solve(gr, True))
            assert gr @ d > 0 or not np.any(gr)
            assert _ascent_direction(gr, face, modify=False) == (None, False)
    assert counts[True] > 100 and counts[False] > 100


def test_reduce_never_gives_a_dense_matrix_beyond_the_dense_limit(monkeypatch):
    """Few groups but more free parameters than ``DENSE_MAX_DIM`` (many classes): the arrow
    matrix, not a dense step that size (until session 65 such fits were refused Newton)."""
    g, Hb, H, T = next(p for p in PROBLEMS if p[3].shape[1] > 3)
    monkeypatch.setattr(_face, "DENSE_MAX_DIM", T.shape[1] - 1)
    assert Hb.HPP.shape[0] < _face.FACE_MIN_GROUPS
    assert isinstance(Hb.reduce(T), FaceHessian)


def test_reduce_of_another_basis_is_the_dense_product():
    """A basis that is not a pair basis (equal base rates: the groups share one simplex) gets
    the dense product."""
    rec = _record()
    d, est = rec.data, rec.estimate
    g, Hb = lik.grad_hess_blocks(est.P, est.M, d)
    T = lik.tangent(est.P, est.M, d, lik.Constraint("equal"), g, pairs=True)
    assert not isinstance(T, PairBasis)
    out = Hb.reduce(T)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, _dense_face(T, Hb.dense()))


def _record(G=6):
    rng = np.random.default_rng(11)
    sim = simulate_urc(n_lab=300, n_field=[700] * G, lab_base_rates=0.5,
                       field_base_rate=list(np.linspace(0.1, 0.8, G)), separation=1.5, rng=rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pu.URC(sim.lab_pred, sim.lab_y).fit(sim.field_pred, groups=sim.field_group)
    return res._record


def test_fits_and_intervals_take_newton_steps_by_blocks(monkeypatch):
    """A joint fit of 30 groups and its 30 profile intervals (the fixed likelihood's are the
    groups' own one-group problems) assemble the dense Hessian only for
    :func:`grad_hess` (the joint likelihood's covariance and profile paths: once per fit),
    never for
    a Newton step (its Hessian on the face is negative definite throughout, so no modified
    step needs the dense matrix either); and the dense steps (as before session 65) give the
    same intervals."""
    rng = np.random.default_rng(5)
    G = 30
    sim = simulate_urc(n_lab=2000, n_field=[2000] * G, lab_base_rates=0.5,
                       field_base_rate=list(np.linspace(0.1, 0.7, G)), separation=1.5,
                       rng=rng)
    model = pu.URC(sim.lab_pred, sim.lab_y)
    calls = {"dense": 0, "grad_hess": 0, "reduce": 0}
    dense, grad_hess, reduce = BlockHessian.dense, lik.grad_hess, BlockHessian.reduce

    def counted_reduce(self, T):
        calls["reduce"] += isinstance(T, PairBasis)
        return reduce(self, T)

    def counted_dense(self):
        calls["dense"] += 1
        return dense(self)

    def counted_grad_hess(*args):
        calls["grad_hess"] += 1
        return grad_hess(*args)

    def fail(self):
        raise AssertionError("a modified step")

    monkeypatch.setattr(_face, "FACE_MIN_GROUPS", 0)  # (30 groups: dense steps otherwise)
    monkeypatch.setattr(_stacked, "eligible", lambda ll: False)
    monkeypatch.setattr(BlockHessian, "dense", counted_dense)
    monkeypatch.setattr(BlockHessian, "reduce", counted_reduce)
    monkeypatch.setattr(lik, "grad_hess", counted_grad_hess)
    monkeypatch.setattr(FaceHessian, "dense", fail)
    got = model.fit(sim.field_pred, groups=sim.field_group, likelihood="joint").conf_int()
    assert calls["dense"] == calls["grad_hess"] and calls["reduce"] > 10 * G
    monkeypatch.undo()
    monkeypatch.setattr(BlockHessian, "reduce", lambda self, T: _dense_face(T, self.dense()))
    monkeypatch.setattr(_stacked, "eligible", lambda ll: False)
    ref = model.fit(sim.field_pred, groups=sim.field_group, likelihood="joint").conf_int()
    np.testing.assert_allclose(got.to_numpy(), ref.to_numpy(), rtol=0, atol=1e-8)


@pytest.mark.parametrize("likelihood", ["fixed", "joint"])
def test_newton_at_more_free_parameters_than_a_dense_step_takes(likelihood):
    """1,600 groups (more free parameters than ``DENSE_MAX_DIM``): Newton by blocks finishes
    the fit (before session 65 it was refused there and EM ran alone), and under the fixed
    likelihood, where the groups are separate problems, each group's base rate is that
    group's own maximum."""
    from puinfer.models.urc._face import DENSE_MAX_DIM

    rng = np.random.default_rng(3)
    G, m = 1600, 200
    rates = rng.uniform(0.1, 0.7, G)
    y = rng.random(G * m) < np.repeat(rates, m)
    x = 1.0 / (1.0 + np.exp(-1.5 * ((2 * y - 1) * 0.75 + rng.standard_normal(G * m))))
    sim = simulate_urc(n_lab=1000, n_field=1, separation=1.5, rng=rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pu.URC(sim.lab_pred, sim.lab_y).fit(x, groups=np.repeat(np.arange(G), m),
                                                  likelihood=likelihood)
    rec = res._record
    assert G > DENSE_MAX_DIM
    assert rec.estimate.convergence.converged
    assert "Newton" in rec.estimate.convergence.method
    if likelihood == "fixed":
        d = rec.data
        for g in rng.choice(G, 20, replace=False):
            own = lik.maximize(d.group(int(g)))
            np.testing.assert_allclose(rec.estimate.P[g], own.P[0], rtol=0, atol=1e-9)
