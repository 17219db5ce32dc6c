"""The tangent basis of URC's Newton steps: the fast :class:`PairBasis` (issue 17, session 45)
is the sparse basis, and its products are the sparse products to the last bit (so that every
fit, profile and interval is unchanged)."""

import warnings

import numpy as np
import pytest
from scipy import sparse

import puinfer as pu
from puinfer.models.urc import _likelihood as lik
from puinfer.simulate.urc import simulate_urc


def _record(k, likelihood):
    rng = np.random.default_rng(7 + k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if k == 2:
            sim = simulate_urc(n_lab=300, n_field=[800, 1200, 500, 900], lab_base_rates=0.5,
                               field_base_rate=[0.02, 0.3, 0.6, 0.9], separation=1.5, rng=rng)
            res = pu.URC(sim.lab_pred, sim.lab_y).fit(sim.field_pred, groups=sim.field_group,
                                                      likelihood=likelihood)
        else:
            sim = simulate_urc(n_lab=400, n_field=3000, lab_base_rates=[1 / 3] * 3,
                               field_base_rate=[0.6, 0.3, 0.1], separation=1.2, rng=rng)
            res = pu.URC(sim.lab_pred, sim.lab_y).fit(sim.field_pred, likelihood=likelihood)
    return res._record


def _points(rec):
    """The estimate, and a point with zeros in P and M (components on the boundary, some of
    them released by their gradient)."""
    P, M = rec.estimate.P, rec.estimate.M
    P2, M2 = P.copy(), M.copy()
    P2[0, 0] = 0.0
    P2[0] /= P2[0].sum()
    M2[:, 0] = 0.0
    M2 /= M2.sum(axis=1, keepdims=True)
    return [(P, M), (P2, M2)]


@pytest.mark.parametrize("k, likelihood", [(2, "joint"), (2, "fixed"), (3, "joint")])
def test_pair_basis_is_the_sparse_basis_with_the_same_products(k, likelihood):
    rec = _record(k, likelihood)
    d = rec.data
    G = d.F.shape[0]
    cons = [lik.Constraint(), lik.Constraint("entry", group=G - 1, cls=k - 1, v=0.3)]
    rng = np.random.default_rng(0)
    checked = 0
    for P, M in _points(rec):
        with np.errstate(divide="ignore", invalid="ignore"):
            g, H = lik.grad_hess(P, M, d)
        g = np.where(np.isfinite(g), g, rng.standard_normal(g.size))
        H = np.where(np.isfinite(H), H, 0.0)
        for con in cons:
            S = lik.tangent(P, M, d, con, g)
            T = lik.tangent(P, M, d, con, g, pairs=True)
            assert isinstance(T, lik.PairBasis) and sparse.issparse(S)
            assert T.shape == S.shape
            np.testing.assert_array_equal(T.toarray(), S.toarray())
            d_ = rng.standard_normal(T.shape[1])
            assert np.array_equal(T @ d_, np.asarray(S @ d_).ravel())
            assert np.array_equal(T.T @ g, S.T @ g)
            # the reduced system as newton_maximize's tangent step and _reduced take it
            assert np.array_equal(T.T @ np.asarray(T.T @ H).T,
                                  S.T @ np.asarray(S.T @ H).T)
            for a, b in zip(lik._reduced(T, g, H), lik._reduced(S, g, H), strict=True):
                assert np.array_equal(a, b)
            checked += 1
    assert checked == 4


def test_shared_simplices_keep_the_sparse_basis():
    """Under equal base rates one simplex is shared by every group's row of P: its columns
    move G components each, which a PairBasis cannot hold."""
    rec = _record(2, "joint")
    d = rec.data
    P = np.repeat(rec.estimate.P.mean(axis=0, keepdims=True), d.F.shape[0], axis=0)
    g, _ = lik.grad_hess(P, rec.estimate.M, d)
    T = lik.tangent(P, rec.estimate.M, d, lik.Constraint("equal"), g, pairs=True)
    assert sparse.issparse(T)


@pytest.mark.parametrize("likelihood", ["joint", "fixed"])
def test_lift_zeros_lifts_the_zeros_whose_kkt_condition_fails(likelihood):
    """``_Problem.lift_zeros`` (session 63): a component at exactly 0 goes to ``_AT_BOUND``
    where its gradient exceeds its simplex's multiplier (the largest gradient among the free
    components), its mass taken from the simplex's largest free component; a fixed entry at
    0, and M under the fixed likelihood (not a parameter), never move. Reference: the KKT
    condition checked here from :func:`grad_hess`'s gradient."""
    rec = _record(3, likelihood)
    d = rec.data
    P, M = rec.estimate.P.copy(), rec.estimate.M.copy()
    P[0, :2] = 0.0  # rate 0 (estimate 0.6) at 0, and rate 1 held at 0 by the constraint
    P[0] /= P[0].sum()
    M[:, -1] = 0.0  # the last cell of M
    M /= M.sum(axis=1, keepdims=True)
    con = lik.Constraint("entry", group=0, cls=1, v=0.0)
    prob = lik._Problem(d, con, *P.shape, M.shape[1])
    t = prob.pack(P, M)
    out = prob.lift_zeros(t)
    assert out is not t and np.all(t == prob.pack(P, M))  # (input not modified)
    g, _ = lik.grad_hess(P, M, d)
    gP, gM = g[:P.size].reshape(P.shape), g[P.size:].reshape(M.shape)
    Po, Mo = prob.unpack(out)
    # row 0 of P: p[0, 2] is the only free rate; p[0, 0]'s condition fails
    assert gP[0, 0] > gP[0, 2] + 1e-9 * (1 + abs(gP[0, 2]))
    assert Po[0, 0] == lik._AT_BOUND and Po[0, 1] == 0.0
    assert Po[0, 2] == P[0, 2] - lik._AT_BOUND
    lifted = Mo[:, -1] == lik._AT_BOUND
    violated = gM[:, -1] > gM[:, :-1].max(axis=1) + 1e-9 * (1 + np.abs(gM[:, :-1].max(axis=1)))
    assert np.all(lifted == (violated & (likelihood == "joint")))
    assert np.any(violated) == (likelihood == "joint")  # (no M gradient when M is fixed)
    rows = np.concatenate([Po.sum(axis=1), Mo.sum(axis=1)])
    np.testing.assert_allclose(rows, 1.0, rtol=0, atol=1e-15)
    changed = out != t
    assert np.count_nonzero(changed) == 2 + (2 * np.count_nonzero(lifted))


def test_kkt_release_rule():
    """:func:`_kkt_release` on rows built by hand: a component at the bound is released iff
    it may move and its gradient exceeds the largest free gradient of its row (by more than
    1e-9 relative); a row without free components releases nothing."""
    free = np.array([[True, True, False, False], [True, False, False, False],
                     [False, False, False, False]])
    Gr = np.array([[1.0, 2.0, 2.5, 1.5], [3.0, 3.0 + 1e-12, 5.0, 4.0], [9.0, 9.0, 9.0, 9.0]])
    allowed = np.array([[True, True, True, True], [True, True, True, False],
                        [True, True, True, True]])
    got = lik._kkt_release(free, Gr, allowed)
    expect = np.array([[False, False, True, False], [False, False, True, False],
                       [False, False, False, False]])
    np.testing.assert_array_equal(got, expect)


def test_kkt_release_rule_with_infinite_gradients():
    """A gradient of +inf (a rate at 0 where the field counts need it) is released where its
    row has a free component with a finite gradient, never where the row has none (its
    threshold is undefined: nothing to release into), nor where a free gradient is +inf too."""
    free = np.array([[True, False], [False, False], [True, False]])
    Gr = np.array([[1.0, np.inf], [0.0, np.inf], [np.inf, np.inf]])
    allowed = np.ones((3, 2), dtype=bool)
    got = lik._kkt_release(free, Gr, allowed)
    np.testing.assert_array_equal(got, [[False, True], [False, False], [False, False]])


def test_xlogy_sum_conventions():
    """``sum x log y`` with ``0 log 0 = 0`` and ``-inf`` where ``x > 0 = y``: the objective's
    sums over the counts (the cached positive entries give the same sum)."""
    x = np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 0.0]])
    y = np.array([[0.5, 0.0, 0.25], [0.0, 0.1, 0.7]])
    expect = 2 * np.log(0.5) + np.log(0.25) + 3 * np.log(0.1)
    assert lik._xlogy_sum(x, y) == pytest.approx(expect, rel=1e-15)
    assert lik._xlogy_at(lik._positive(x), y) == lik._xlogy_sum(x, y)
    y0 = y.copy()
    y0[1, 1] = 0.0
    assert lik._xlogy_sum(x, y0) == -np.inf
