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


def _grouped_fit(seed, n_lab, G, m, lowest):
    """The joint fit of ``G`` groups of ``m`` field rows with base rates from ``lowest`` to
    0.6 (a lab set of ``n_lab`` items, separation 1.5)."""
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lab = simulate_urc(n_lab=n_lab, n_field=1, separation=1.5, rng=rng)
        y = rng.random(G * m) < np.repeat(np.linspace(lowest, 0.6, G), m)
        x = special.expit(1.5 * ((2 * y - 1) * 0.75 + rng.standard_normal(G * m)))
        return URC(lab.lab_pred, lab.lab_y).fit(x, groups=np.repeat(np.arange(G), m),
                                                 likelihood="joint")


@pytest.fixture(scope="module")
def grouped():
    """12 groups of 3,000 field rows, base rates 0.03-0.6; the lowest group's estimate
    (0.005) falls to 0 when another group's rate is held at its lower limit."""
    return _grouped_fit(5, 1000, 12, 3000, 0.03)


def _theta(e):
    return np.concatenate([e.P.ravel(), e.M.ravel()])


def _regression_fit(n_lab, n_field, shift, scale, noise_sd, seed, n_intervals, **fit):
    """A RegressionURC fit of ``simulate_urc_regression`` data with a random lab set (the
    randomised comparison's regression problems)."""
    from puinfer import RegressionURC
    from puinfer.simulate.urc_regression import simulate_urc_regression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = simulate_urc_regression(n_lab, n_field, shift, scale, noise_sd, rng=seed)
        return RegressionURC(sim.lab_pred, sim.lab_y, n_intervals, lab_design="random").fit(
            sim.field_pred, sim.field_group, **fit)


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
    limit. The step onto the bound reaches it in 4 Newton iterations (left at _AT_BOUND,
    below _FREE_MIN: on the active set's bound); halving the step approached it over 15-20
    (to ~5e-11, where it counted as 0)."""
    d, est = grouped._d, grouped._record.estimate
    lo = grouped.conf_int(0.05).iloc[4, 0]
    con = lik.Constraint("entry", group=4, cls=1, v=lo)
    ll = lik.profile_loglik(d, est, 4, 1, grouped.llf_penalized, grouped._record.options)
    e = lik._maximize_once(d, con, ll._predicted(lo), grouped._record.options, warm=True)
    assert e.convergence.converged and e.P[0, 1] == lik._AT_BOUND < lik._FREE_MIN
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
    """``to_boundary`` moves onto the bound only components that the step brings to 0
    (within rounding), leaving them at _AT_BOUND with the mass taken from their simplex's
    largest component: every row of P and M still sums to 1, nothing is negative, nothing
    is exactly 0 (EM could not raise it again). A component already at 0 that the step
    moves down admits no step (None): clipping it to 0 added mass (P rows summing to 1.0027
    in the 100 x 1e5 benchmark, a profile 268 above the maximum)."""
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
        assert 0 < tb < 1 and np.all(x > 0) and np.sum(x == lik._AT_BOUND) >= 1
        Pb, Mb = prob.unpack(x)
        assert_allclose(Pb.sum(axis=1), 1.0, rtol=0, atol=1e-14)
        assert_allclose(Mb.sum(axis=1), 1.0, rtol=0, atol=1e-14)
        assert_allclose(x, t0 + tb * dx, rtol=0, atol=2e-11)
    assert n_cut > 50
    # a component at 0 that the step moves down: no step
    t1 = t0.copy()
    t1[1], t1[0] = 0.0, 1.0                   # group 0's rates (1, 0)
    dx = np.zeros_like(t1)
    dx[[1, 0, 3, 2]] = [-0.1, 0.1, -0.5, 0.5]
    assert prob.to_boundary(t1, dx) is None


def test_a_profile_pickled_without_its_curvature_evaluates(grouped):
    """Results pickled before the predicted start (no ``curvature`` in a profile's state)
    or before session 63 (no ``mode_objective``) compute new profile points: what is missing
    is built on first use, the same values."""
    d, est = grouped._d, grouped._record.estimate
    ll = lik.profile_loglik(d, est, 3, 1, grouped.llf_penalized, grouped._record.options,
                            lik.ModeCurvature(d, est))
    for drop in (("curvature", "mode_objective"), ("mode_objective",)):
        state = {k: v for k, v in pickle.loads(pickle.dumps(ll)).__dict__.items()
                 if k not in drop}
        old = lik.ProfileLoglik.__new__(lik.ProfileLoglik)
        old.__setstate__(state)
        assert old.mode_objective == ll.mode_objective
        for v in (0.12, 0.2):
            assert old.loglik_at(v) == ll.loglik_at(v)


def test_profiles_from_an_estimate_on_the_bound_reach_their_maxima():
    """k = 4, joint likelihood, no lab pseudo-counts, a group whose third rate is 0 at the
    maximum. With the bound step leaving that rate at exactly 0, the profile's constrained
    fits fell back to EM (an indefinite Hessian at the start), which cannot leave an exact 0:
    R(0.8391) = 41.37 (a point breaking the KKT conditions by 506) and the interval
    [0.878, 0.901]; at 83f8280 (halving: the rate ~1.6e-12) and now, R = 3.8415 there and the
    interval [0.8391, 1] (found by a randomised comparison of the two versions)."""
    rates = [[0.0, 0.0, 0.0, 1.0], [0.99696, 0.00171, 0.00067, 0.00066],
             [0.49299, 0.12959, 0.00312, 0.3743], [0.18272, 0.09659, 0.35319, 0.3675],
             [0.25242, 0.12311, 0.37469, 0.24978], [0.20353, 0.20999, 0.18914, 0.39734],
             [0.53309, 0.19702, 0.05382, 0.21607], [0.19624, 0.16935, 0.08695, 0.54746]]
    rates = np.asarray(rates) / np.sum(rates, axis=1, keepdims=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = simulate_urc(187, [28400, 1437, 482, 920, 11346, 10308, 745, 7099],
                           [0.3606, 0.1976, 0.2680, 0.1738], rates, separation=1.315,
                           rng=812149742, lab_design="random")
        res = URC(sim.lab_pred, sim.lab_y, 3, lab_design="random").fit(
            sim.field_pred, sim.field_group, likelihood="joint", lab_pseudocount=0.0)
    est = res._record.estimate
    # (the rate left near 0 by the bound step, not at 0; M may hold zeros from EM, which
    # are lifted where their KKT condition fails: _Problem.lift_zeros)
    assert est.P[0, 2] < lik._FREE_MIN and np.all(est.P > 0)
    prof = res.profile(0, 3)
    ci = prof.conf_int(0.05)
    assert ci["upper"] == 1.0 and ci.attrs["upper_at_bound"]
    assert prof.statistic(ci["lower"]) == pytest.approx(3.841458820694124, abs=1e-6)
    # the constrained maximum at the lower limit by the fit's own search, independently:
    # from interior starts drawn at random (EM and Newton from each)
    d, v = res._d, ci["lower"]
    con = lik.Constraint("entry", group=0, cls=3, v=v)
    rng = np.random.default_rng(1)
    best = max(lik.maximize(d, con, start=(rng.dirichlet(np.ones(4), 8), est.M)).objective
               for _ in range(4))
    assert prof.loglik(v) - d.const >= best - 1e-6


def test_fixed_likelihood_profile_at_zero_after_a_bound_step():
    """RegressionURC, fixed likelihood, no smoothing: a group's first rate is 0 at the
    maximum. Left at exactly 0 by the bound step, the profile at p[3, 1] = 0 (a fit that must
    move mass into that rate, by EM) was "impossible" (-1e300) and the lower limit 8.9e-13,
    not flagged one-sided; at 83f8280 and now R(0) = 1.354 and the interval starts at the
    bound 0, flagged."""
    from puinfer import RegressionURC
    from puinfer.simulate.urc_regression import simulate_urc_regression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = simulate_urc_regression(
            60, 122, [0.918, -0.540, 1.337, 0.682, -0.060, 1.126],
            [1.078, 1.195, 0.864, 0.793, 0.944, 1.138], 1.188, rng=1315199429)
        model = RegressionURC(sim.lab_pred, sim.lab_y, 7, lab_design="random")
        res = model.fit(sim.field_pred, sim.field_group, likelihood="fixed",
                        lab_pseudocount=0.5, smoothing=0.0)
    prof = res.profile(3, res.model.classes[1])
    ci = prof.conf_int(0.05)
    assert ci["lower"] == 0.0 and ci.attrs["lower_at_bound"]
    assert np.isfinite(prof.loglik(0.0)) and 0 < prof.statistic(0.0) < 3.84


def test_two_rates_at_zero_released_where_only_one_may_rise():
    """Fixed likelihood (concave: one maximum), k = 4, a group whose second and fourth rates
    are 0 at the maximum. Held at p[2, 2] = 0.6733, both rates' gradients exceed the simplex's
    multiplier, but the Newton step with both released moves the second one below 0: every
    step was infeasible, EM declared convergence (its gains from 1e-19 are negligible) and
    the profile stopped 4.5 log-lik units below the constrained maximum (R = 17.40 instead
    of 8.30; the randomised comparison's problem 231). Reference: the same objective
    maximised over the group's two free rates by scipy's SLSQP from interior starts."""
    from scipy.optimize import minimize

    rates = [[0.024032, 0.416591, 0.229165, 0.330212], [0.268732, 0.450768, 0.179368, 0.101132],
             [0.000216, 0.000141, 0.999493, 0.000150], [0.082822, 0.099626, 0.273335, 0.544217]]
    rates = np.asarray(rates) / np.sum(rates, axis=1, keepdims=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = simulate_urc(38, [2673, 394, 374, 1019], [0.27748, 0.28291, 0.22513, 0.21448],
                           rates, separation=1.0312, rng=1771016182, lab_design="random")
        res = URC(sim.lab_pred, sim.lab_y, 1, lab_design="random").fit(
            sim.field_pred, sim.field_group, likelihood="fixed", lab_pseudocount=0.0)
    est = res._record.estimate
    assert est.P[2, 1] < lik._FREE_MIN and est.P[2, 3] < lik._FREE_MIN
    d, v = res._d, 0.6733
    prof = res.profile(2, 2)
    got = prof.loglik(v) - d.const

    def negll(x):  # the group's rates (x0, x1, v, 1 - v - x0 - x1); other groups at est.P
        P = est.P.copy()
        P[2] = [x[0], x[1], v, 1.0 - v - x[0] - x[1]]
        return -lik.objective(P, est.M, d) if np.all(P[2] >= 0) else np.inf

    ref = min((minimize(negll, x0, method="SLSQP", bounds=[(0, 1 - v)] * 2,
                        constraints={"type": "ineq", "fun": lambda x: 1 - v - x.sum()},
                        options={"ftol": 1e-12, "maxiter": 500})
               for x0 in ([0.1, 0.1], [0.25, 0.02], [0.02, 0.25])), key=lambda r: r.fun)
    assert got == pytest.approx(-ref.fun, abs=1e-6)
    assert prof.statistic(v) == pytest.approx(2 * (prof.llf_max - d.const + ref.fun), abs=1e-5)


def test_profile_raises_a_component_the_fit_left_at_exactly_zero():
    """k = 3, joint likelihood, stratified lab set of 143 without pseudo-counts: EM leaves
    components of M at exactly 0 (SQUAREM's extrapolations, the clipped map), and the
    maximum keeps them at or near 0 (their KKT conditions hold). Held at p[0, 2] = 0.0018, the constrained
    maximum needs M[0, 8] at about 0.04; Newton cannot start there (the Hessian on the face is
    indefinite) and EM, which multiplies, could never raise an exact 0: R came out 4201
    instead of 9.92 (the randomised comparison's problem 173). Reference: the fit's own
    search from interior starts drawn at random."""
    rates = [[0.410268, 0.535083, 0.054649], [0.013787, 0.096768, 0.889445],
             [0.000526, 0.999294, 0.00018], [0.212066, 0.230582, 0.557353]]
    rates = np.asarray(rates) / np.sum(rates, axis=1, keepdims=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = simulate_urc(143, [43901, 14634, 1786, 14503], [0.35491, 0.18274, 0.46235],
                           rates, separation=1.8963, rng=1272525720, lab_design="stratified")
        res = URC(sim.lab_pred, sim.lab_y, 3, lab_design="stratified").fit(
            sim.field_pred, sim.field_group, likelihood="joint", prior_strength=2.0,
            lab_pseudocount=0.0)
    d, est, v = res._d, res._record.estimate, 0.0018
    assert est.M[0, 8] < lik._FREE_MIN
    con = lik.Constraint("entry", group=0, cls=2, v=v)
    rng = np.random.default_rng(3)
    best = max(lik.maximize(d, con, start=(rng.dirichlet(np.ones(3), 4),
                                           rng.dirichlet(np.ones(9), 3))).objective
               for _ in range(4))
    prof = res.profile(0, 2)
    assert prof.loglik(v) - d.const >= best - 1e-6
    assert prof.statistic(v) < 20  # (4201 when stuck)


def test_profile_point_where_em_stops_on_a_ridge():
    """RegressionURC, joint likelihood, 60 lab items, 2 groups of 353, 3 intervals: at
    p[1, 1] = 0.0011758 the constrained search from the estimate ran EM until its change was
    small and Newton could not start (indefinite Hessian on the face): R = 21.37 at dc9a855.
    Modified Newton finishes from there: R = 6.356, the value that the fit's own search
    reaches from every one of six interior starts drawn at random (the randomised
    comparison's problem 6)."""
    res = _regression_fit(60, 353, [-0.058504, 1.091706], [1.338138, 1.099227], 0.353362,
                          2093396696, 3, likelihood="joint", lab_pseudocount=0.0,
                          smoothing=0.0)
    d, est, v = res._d, res._record.estimate, 0.0011758
    con = lik.Constraint("entry", group=1, cls=1, v=v)
    rng = np.random.default_rng(3)
    k, A = est.M.shape
    refs = [lik.maximize(d, con, start=(rng.dirichlet(np.ones(k), 2),
                                        rng.dirichlet(np.ones(A), k))).objective
            for _ in range(6)]
    assert max(refs) - min(refs) < 1e-6  # (one maximum reached from everywhere)
    prof = res.profile(1, res.model.classes[1])
    assert prof.loglik(v) - d.const == pytest.approx(max(refs), abs=1e-6)


def test_penalised_regression_profile_below_its_estimate():
    """RegressionURC with its default smoothness penalty, joint likelihood, 60 lab items,
    29,982 field rows, 3 intervals: at p[0, 0] = 0.06 (estimate 0.126) the profile's search
    stopped far below the constrained maximum (48 log-lik units, R = 99.4 at dc9a855; R = 753
    at 0.0372: the lower limit came out 0.0937 instead of 0.0372; the randomised comparison's
    problem 106). Reference: a direct maximisation of the same penalised objective by BFGS in
    softmax parameters (no EM, no Newton on the face), which stops within 1e-3 of the
    maximum (its rates near 0 are at -inf in these parameters)."""
    from scipy.optimize import minimize
    from scipy.special import expit, softmax

    res = _regression_fit(60, 29982, [0.655917], [0.801711], 1.231671, 1923694792, 3,
                          likelihood="joint", lab_pseudocount=0.0,
                          trend_sd=None)  # (the penalty of these problems: no trend prior)
    d, est, v = res._d, res._record.estimate, 0.06
    k, A = est.M.shape

    def negll(x):
        s = expit(x[0])
        P = np.array([[v, (1 - v) * s, (1 - v) * (1 - s)]])
        f = lik.objective(P, softmax(x[1:].reshape(k, A), axis=1), d)
        return -f if np.isfinite(f) else 1e300

    x0 = np.concatenate([[0.0], np.log(est.M + 1e-3).ravel()])
    ref = -minimize(negll, x0, method="BFGS", options={"gtol": 1e-8, "maxiter": 20000}).fun
    got = res.profile(res.groups[0], res.model.classes[0]).loglik(v) - d.const
    assert ref - 1e-6 <= got <= ref + 1e-3


def test_penalised_profile_far_below_its_estimate_is_not_stuck():
    """RegressionURC with its default smoothness penalty, joint likelihood, 60 lab items,
    7 intervals: held near 0, a rate's log-penalty pushes its neighbours towards 0 too, far
    from the maximum, and the search from the maximum stopped at points 40-107 log-lik units
    low (R 51-215 from p = 1e-4 to 0.0058 against R(0) = 1.795), giving the lower limit 0.0058
    where the profile never reaches the cut-off (the randomised comparison's problem 92). The
    landscape has many local maxima there (random interior starts and BFGS in softmax
    parameters stop 33-66 units lower). Reference: the best of the unrestricted fit's own
    set of starts (lab rates and each vertex, smoothed M), each searched to its end. (At
    0.003 before the mean partition's midpoint cuts of session 72; with them the search from
    the maximum stops 110, 57, 34 and 30 units low at 1e-4, 0.001, 0.003 and 0.0058, and at
    0.003 the interior start's maximum is 1.9e-6 below the vertex starts' same point.)"""
    res = _regression_fit(60, 19451, [1.666625], [1.059299], 0.724602, 353117301, 7,
                          likelihood="joint", lab_pseudocount=0.0,
                          trend_sd=None)  # (the penalty of these problems: no trend prior)
    d, v = res._d, 0.001
    con = lik.Constraint("entry", group=0, cls=5, v=v)
    ref = max(lik.maximize(d, con, start=st).objective
              for st in lik._extra_starts(d, con, None))
    prof = res.profile(res.groups[0], res.model.classes[5])
    assert prof.loglik(v) - d.const >= ref - 1e-6
    assert prof.statistic(v) < 3.841  # (115.6 when stuck)


def test_limit_search_steps_by_the_standard_error_with_m_profiled_out(grouped):
    """Under the joint likelihood each limit search's first step is the base rate's standard
    error with ``M`` profiled out (the results' covariance, ``base_rate_cov``), not the
    fixed-``M`` one from the field counts alone (``approx_se``: 0.37-0.62 of it here; with
    100 groups of 1e5 rows a tenth, and the search's first point then fell at R = 0.05).
    The limits are the roots brentq finds on the same profile without the slope."""
    from puinfer.inference import Profile

    cov = grouped._cov
    for g in (0, 4, 9):
        prof = grouped.profile(g)
        se = np.sqrt(cov.loc[(g, 1), (g, 1)])
        assert prof.step == pytest.approx(se, rel=1e-12)
        assert grouped.profile(g, 0).step == prof.step  # (class 0: one minus class 1)
        assert lik.approx_se(grouped._P[g], grouped._Mhat, grouped._d.F[g], 1) < 0.7 * se
        ci = prof.conf_int(0.05)
        plain = Profile("p", prof.estimate, prof.llf_max, prof._loglik_at, bounds=(0.0, 1.0),
                        step=se).conf_int(0.05)
        assert ci.attrs == plain.attrs
        assert_allclose(ci.to_numpy(), plain.to_numpy(), atol=1e-8)


@pytest.fixture(scope="module")
def ridge():
    """50 groups of 100,000 field rows, 2,000 lab items, 4 cells: ``M`` rests on the lab set
    alone, so the joint likelihood's ridge (every rate and ``M`` moving together) is nearly
    flat at the maximum, and curved the other way a few standard errors away."""
    return _grouped_fit(2026, 2000, 50, 100_000, 0.05)


def test_modified_newton_from_the_predicted_start_where_the_hessian_is_indefinite(ridge,
                                                                                  monkeypatch):
    """At the predicted start of group 0's upper limit the Hessian on the face is indefinite
    (along the ridge): Newton stopped at once and the search from the maximum ran (EM along
    the ridge; with 100 groups of 1e5 rows 147 of the intervals' 578 evaluations, half their
    time). Modified Newton from the predicted start reaches a strict maximum inside the
    simplices, kept: the value the search from the maximum reaches."""
    d, est = ridge._d, ridge._record.estimate
    v = ridge.conf_int(0.05).iloc[0, 1]
    con = lik.Constraint("entry", group=0, cls=1, v=v)
    ll = ridge.profile(0)._loglik_at.__self__
    P0, M0 = lik._start_values(d, con, ll._predicted(v))
    assert lik._warm_newton(d, con, P0, M0) is None  # plain Newton: indefinite at once
    prob = lik._Problem(d, con, *P0.shape, M0.shape[1])
    e = lik._warm_newton(d, con, P0, M0, prob, modify=True)
    assert e is not None and prob.n_modified >= 1
    assert prob.strict_interior_maximum(_theta(e))
    ref = lik.maximize(d, con, start=(est.P, est.M), options=ridge._record.options)
    assert e.objective == pytest.approx(ref.objective, abs=1e-7)
    # the profile itself takes it: no search from the maximum at that point
    fresh = pickle.loads(pickle.dumps(ridge)).profile(0)
    calls = []
    real = lik.maximize
    monkeypatch.setattr(lik, "maximize", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert fresh.loglik(v) == pytest.approx(e.objective + d.const, abs=1e-7)
    assert calls == []
    # (along the ridge, curvature ~50, Newton's stop at a decrement of 1e-10 leaves about
    # sqrt(1e-10 / 50) = 1.4e-6 of slack in either run)
    assert_allclose(_theta(e), _theta(ref), atol=1e-5)


def test_a_modified_newton_run_is_abandoned_at_the_bound(grouped):
    """A run from a start inside the simplices that took a modified step stops where a free
    component reaches the bound (it could only be kept back inside); plain Newton steps, and
    starts with a component at the bound, are not affected."""
    d, est = grouped._d, grouped._record.estimate
    con = lik.Constraint("entry", group=4, cls=1, v=est.P[4, 1])
    prob = lik._Problem(d, con, *est.P.shape, est.M.shape[1])
    t = _theta(est).copy()
    t[2 * 7] = lik._AT_BOUND  # group 7's first rate at the bound
    t[2 * 7 + 1] = 1.0 - lik._AT_BOUND
    from puinfer.base.optimize import _Step

    prob.interior_only, prob.n_modified = True, 0
    prob.newton_moved(t, 0.0, _Step("newton", 1.0, 0.0, 0.0))  # no modified step yet
    with pytest.raises(lik._LeftInterior):
        prob.newton_moved(t, 0.0, _Step("modified", 1.0, 0.0, 0.0))
    prob.interior_only, prob.n_modified = False, 0
    prob.newton_moved(t, 0.0, _Step("modified", 1.0, 0.0, 0.0))  # plain runs: no check
    # from a start with a free component at the bound modified steps are not used (the run
    # is the plain one)
    P0, M0 = lik._start_values(d, con, (est.P, est.M))
    P0[7] = t[14:16]
    prob = lik._Problem(d, con, *P0.shape, M0.shape[1])
    lik._warm_newton(d, con, P0, M0, prob, modify=True)
    assert prob.modify is False


def test_a_run_allowed_modified_steps_is_kept_only_at_a_negative_definite_hessian(grouped):
    """Modified Newton also reports convergence at a stationary point where the Hessian on
    the face is not negative definite (no step taken, so no modified step counted), which
    plain Newton refused: such an end is not kept (session 64's review). At the estimate
    (negative definite) a run without modified steps is kept; with the Hessian's sign
    flipped it is not, and a run with a modified step needs the point inside the
    simplices too."""
    d, est = grouped._d, grouped._record.estimate
    prob = lik._Problem(d, lik.Constraint(), *est.P.shape, est.M.shape[1])
    t = _theta(est)
    f, g, H = prob.fun(t, 2)
    prob.track(t, lik._FREE_MIN)
    prob.tangent(t, g)
    prob.n_modified = 0
    assert prob.keeps_modified_run(t)
    prob.n_modified = 1
    assert prob.keeps_modified_run(t) == prob._interior(t)
    prob.last_gH = (g, -H)  # (the Hessian by blocks: BlockHessian.__neg__)
    for n in (0, 1):
        prob.n_modified = n
        assert not prob.keeps_modified_run(t)


def test_confidence_set_that_is_not_an_interval_reported_by_its_hull():
    # session 83's audit: class 2 never predicted in the field, one bin per class: the joint
    # likelihood has a second mode (p = (0.658, 0.342, 0), 0.86 below the maximum at
    # (1, 0, 0); the helper's own scipy fit of the same likelihood), and the 95% interval of
    # p[0] was [0.987, 1] with only a BoundaryWarning, the set being about [0.61, 0.72] and
    # [0.987, 1]
    from scipy import stats

    from puinfer.exceptions import ConfidenceSetWarning

    sim = simulate_urc(n_lab=600, n_field=3000, lab_base_rates=[1 / 3] * 3,
                       field_base_rate=[.5, .3, .2], rng=2)
    f = sim.field_pred[sim.field_pred.argmax(1) != 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = URC(sim.lab_pred, sim.lab_y, n_bins=1).fit(f)
    with pytest.warns(ConfidenceSetWarning, match=r"p\[all, 0\] is not an interval"):
        ci = r.conf_int()
    assert "ConfidenceSetWarning" in [c for c, _ in r.warnings]
    # the profile on a grid (each point its own constrained fit): the set's parts
    cut = stats.chi2.ppf(0.95, 1)
    prof = r.profile(cls=0)
    grid = np.linspace(0.5, 1, 101)
    inside = grid[[prof.statistic(v) < cut for v in grid]]
    assert inside.min() < 0.65 and np.any(np.diff(inside) > 0.1)  # two parts
    lo = ci.loc[("all", 0), "lower"]
    assert inside.min() - 0.005 <= lo <= inside.min() and prof.statistic(lo) == \
        pytest.approx(cut, abs=1e-6)
    assert ci.loc[("all", 0), "upper"] == 1.0
