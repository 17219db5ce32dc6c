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
