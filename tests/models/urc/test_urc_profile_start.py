"""URC profiles: each point starts from the maximum moved along the first-order path of the
constrained maximum (``ModeCurvature``), and Newton steps onto a bound in one step
(``_Problem.to_boundary``) instead of halving towards it (issue 17: the intervals of many
groups under the joint likelihood)."""

import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import special

from puinfer import URC
from puinfer.models.urc import _likelihood as lik
from puinfer.simulate.urc import simulate_urc


@pytest.fixture(scope="module")
def grouped():
    """12 groups of 3,000 field rows, base rates 0.03-0.6; the lowest group's estimate
    (0.005) falls to 0 when another group's rate is held at its lower limit."""
    rng = np.random.default_rng(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lab = simulate_urc(n_lab=1000, n_field=1, separation=1.5, rng=rng)
        G, m = 12, 3000
        y = rng.random(G * m) < np.repeat(np.linspace(0.03, 0.6, G), m)
        x = special.expit(1.5 * ((2 * y - 1) * 0.75 + rng.standard_normal(G * m)))
        return URC(lab.lab_pred, lab.lab_y).fit(x, groups=np.repeat(np.arange(G), m),
                                                 likelihood="joint")


def _theta(e):
    return np.concatenate([e.P.ravel(), e.M.ravel()])


def test_direction_is_the_derivative_of_the_constrained_maximum(grouped):
    """The start's direction against a central difference of the constrained maxima, each
    found by ``maximize`` from the estimate."""
    d, est = grouped._d, grouped._record.estimate
    curv = lik.ModeCurvature(d, est)
    for g in (0, 4, 9):
        v0, h = est.P[g, 1], 1e-5
        lo, hi = (lik.maximize(d, lik.Constraint("entry", group=g, cls=1, v=v),
                               start=(est.P, est.M)) for v in (v0 - h, v0 + h))
        fd = (_theta(hi) - _theta(lo)) / (2 * h)
        got = curv.direction(g, 1)
        assert got[g * 2 + 1] == pytest.approx(1.0)
        assert_allclose(got, fd, atol=1e-4 * np.max(np.abs(fd)))
        # other groups' rates move too (through M): the start is not the estimate itself
        assert np.max(np.abs(np.delete(got[1:24:2], g))) > 0.05


def test_profile_values_are_the_maxima_from_the_estimate(grouped):
    """At points out to the limits (the lower ones with a rate on the bound), the profile
    equals the constrained maximum from the estimate itself found by Newton without the
    step onto the bound (the old path: a halving approach), to rounding."""
    d, est = grouped._d, grouped._record.estimate
    ci = grouped.conf_int(0.05)
    old = lik._Problem.to_boundary
    for g in (1, 6, 11):
        ll = lik.profile_loglik(d, est, g, 1, grouped.llf_penalized, grouped._record.options)
        lo, up = ci.iloc[g]
        for v in (lo, 0.5 * (lo + est.P[g, 1]), up):
            got = ll.loglik_at(v)
            lik._Problem.to_boundary = lambda self, t, dx: None
            try:
                ref = lik.maximize(d, lik.Constraint("entry", group=g, cls=1, v=v),
                                   start=(est.P, est.M))
            finally:
                lik._Problem.to_boundary = old
            assert ref.convergence.converged
            assert got - ll.offset == pytest.approx(ref.objective, rel=1e-12, abs=1e-8)
            assert got - ll.offset >= ref.objective - 1e-8


def test_a_rate_reaching_the_bound_takes_few_newton_steps(grouped):
    """Group 0's rate (0.005) is 0 at the maximum with group 4's rate held at its lower
    limit. The step onto the bound reaches it exactly in 4 Newton iterations; halving the
    step approached it over 15-20 (to ~5e-11, where it counted as 0)."""
    d, est = grouped._d, grouped._record.estimate
    lo = grouped.conf_int(0.05).iloc[4, 0]
    con = lik.Constraint("entry", group=4, cls=1, v=lo)
    ll = lik.profile_loglik(d, est, 4, 1, grouped.llf_penalized, grouped._record.options)
    e = lik._maximize_once(d, con, ll._predicted(lo), grouped._record.options, warm=True)
    assert e.convergence.converged and e.P[0, 1] == 0.0
    assert e.convergence.iterations <= 6
    old = lik._Problem.to_boundary
    lik._Problem.to_boundary = lambda self, t, dx: None
    try:
        h = lik._maximize_once(d, con, ll._predicted(lo), grouped._record.options, warm=True)
    finally:
        lik._Problem.to_boundary = old
    assert h.convergence.iterations >= 10 and 0 < h.P[0, 1] < 1e-9
    assert e.objective >= h.objective - 1e-9


def test_profiles_pickle_before_and_after_evaluation(grouped):
    fresh = pickle.loads(pickle.dumps(grouped))
    ci = fresh.conf_int(0.05)
    again = pickle.loads(pickle.dumps(fresh))     # profiles evaluated, directions computed
    assert_allclose(again.conf_int(0.05).to_numpy(), ci.to_numpy(), rtol=0, atol=0)
    assert_allclose(ci.to_numpy(), grouped.conf_int(0.05).to_numpy(), rtol=1e-9)


def test_step_onto_the_bound_keeps_every_simplex(grouped):
    """``to_boundary`` sets to 0 only components that the step brings to 0 (within
    rounding): every row of P and M still sums to 1, nothing is negative. A component
    already at 0 that the step moves down admits no step (None): clipping it to 0 added
    mass (P rows summing to 1.0027 in the 100 x 1e5 benchmark, a profile 268 above the
    maximum)."""
    d, est = grouped._d, grouped._record.estimate
    G, k = est.P.shape
    prob = lik._Problem(d, lik.Constraint(), G, k, est.M.shape[1])
    t0 = prob.pack(est.P, est.M)
    rng = np.random.default_rng(0)
    n_cut = 0
    for _ in range(200):
        # a random direction in the simplices' tangent space, long enough to leave them
        raw = rng.normal(size=t0.size)
        P, M = prob.unpack(raw)
        dx = prob.pack(P - P.mean(axis=1, keepdims=True), M - M.mean(axis=1, keepdims=True))
        dx *= rng.uniform(0.05, 2.0) / np.max(np.abs(dx))
        out = prob.to_boundary(t0, dx)
        if out is None:
            assert np.all(t0 + dx >= 0) or np.any((t0 == 0) & (dx < 0))
            continue
        n_cut += 1
        tb, x = out
        assert 0 < tb < 1 and np.all(x >= 0) and np.sum(x == 0) >= 1
        Pb, Mb = prob.unpack(x)
        assert_allclose(Pb.sum(axis=1), 1.0, rtol=0, atol=1e-14)
        assert_allclose(Mb.sum(axis=1), 1.0, rtol=0, atol=1e-14)
        assert_allclose(x, t0 + tb * dx, rtol=0, atol=1e-15)
    assert n_cut > 50
    # a component at 0 that the step moves down: no step
    t1 = t0.copy()
    t1[1], t1[0] = 0.0, 1.0                   # group 0's rates (1, 0)
    dx = np.zeros_like(t1)
    dx[[1, 0, 3, 2]] = [-0.1, 0.1, -0.5, 0.5]
    assert prob.to_boundary(t1, dx) is None


def test_a_profile_pickled_without_its_curvature_evaluates(grouped):
    """Results pickled before the predicted start (no ``curvature`` in a profile's state)
    compute new profile points: the curvature is built on first use, the same values."""
    d, est = grouped._d, grouped._record.estimate
    ll = lik.profile_loglik(d, est, 3, 1, grouped.llf_penalized, grouped._record.options,
                            lik.ModeCurvature(d, est))
    state = {k: v for k, v in pickle.loads(pickle.dumps(ll)).__dict__.items()
             if k != "curvature"}
    old = lik.ProfileLoglik.__new__(lik.ProfileLoglik)
    old.__setstate__(state)
    for v in (0.12, 0.2):
        assert old.loglik_at(v) == ll.loglik_at(v)
