"""The KL label rule's margin and the profile of pi on the boundary of the labelled parameter
space (``_el.label_gap``, ``_label_boundary``; session 52): where the best maximum at a pi is
unlabelled, the labelled profile is the maximum on the boundary KL1 = KL2 (or a lower labelled
maximum), not the unlabelled value."""

import warnings

import numpy as np
import pytest
from scipy import optimize, stats

import puinfer as pu
from puinfer.models.detm import _el
from puinfer.models.detm._label_boundary import BOUNDARY_GAP_TOL, solve_on_label_boundary
from puinfer.simulate import sar_design


def _direct_margin(theta, Z, lam0):
    """KL2 - KL1 with the EL weights, written out as the label rule's definition (Liu et al.,
    Remark 1): ``KL(p_s || p_t) = -sum_i p_i eta_t,i`` with ``p_i = 1 / (N D_i)``."""
    N, p = Z.shape
    a1, b1, a2, b2 = theta[0], theta[1:p + 1], theta[p + 1], theta[p + 2:]
    eta1, eta2 = a1 + Z @ b1, a2 + Z @ b2
    lam, D, ok = _el.solve_lambda(eta1, eta2, lam0)
    assert ok
    w = 1.0 / (N * D)
    return (-(w @ eta2)) - (-(w @ eta1))


def _design(seed=3, n=400, p=3):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, p))
    return Z, np.column_stack([np.ones(n), Z])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_margins_gradient_is_the_derivative_of_the_margin(seed):
    # central differences of the margin (its multipliers re-solved at every point) against
    # the analytic gradient, which goes through d lambda / d theta
    Z, X1 = _design(seed)
    theta = 0.4 * np.random.default_rng(10 + seed).standard_normal(2 * Z.shape[1] + 2)
    theta[[0, Z.shape[1] + 1]] = 0.0  # tilts on both sides of 1: the multipliers exist
    lam0 = (0.3, 0.2)
    gap, grad = _el.label_gap(theta, Z, lam0, X1=X1, order=1)
    assert gap == pytest.approx(_direct_margin(theta, Z, lam0), abs=1e-13)
    h = 1e-6
    fd = np.array([(_el.label_gap(theta + e, Z, lam0) - _el.label_gap(theta - e, Z, lam0)) / (2 * h)
                   for e in h * np.eye(theta.size)])
    assert np.abs(grad - fd).max() <= 1e-7 * max(1.0, np.abs(fd).max())
    assert np.abs(grad).max() > 1e-3  # not trivially zero


def test_the_margin_decides_the_label_as_the_rules_definition():
    Z, _ = _design(4, n=300, p=2)
    rng = np.random.default_rng(5)
    for _ in range(200):
        theta = rng.standard_normal(6)
        theta[[0, 3]] = 0.0
        assert (_el.label_gap(theta, Z, (0.25, 0.25)) >= 0) == \
            (_direct_margin(theta, Z, (0.25, 0.25)) >= 0)


def _small_samples():
    # SAR design, pi = 0.7, two features: the fit's mirror image (components swapped) is the
    # unconstrained maximum at 1 - pi-hat, and it is unlabelled
    df = sar_design(300, 300, 0.7, p=2, rng=np.random.default_rng(11))
    X = df[["x1", "x2"]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    return X[lab], X[~lab]


@pytest.fixture(scope="module")
def small_fit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pu.DETM(*_small_samples()).fit(pi_interval="profile")
    return res


def _mirror(res):
    p = res.model.data.p
    th = res._fit.theta
    return np.r_[th[p + 1:], th[:p + 1]], 1 - res.pi


def test_the_boundary_maximum_is_a_labelled_kkt_point_that_an_independent_solver_confirms(
        small_fit):
    res = small_fit
    d, c = res.model.data, res._fit.penalty_strength
    theta0, pi = _mirror(res)
    lam0 = (d.m * pi / d.N, d.m * (1 - pi) / d.N)
    f0 = _el.profile_log_el(theta0, pi, d.Z, d.y, c, order=0)
    assert f0 == pytest.approx(res._fit.llf_penalized, abs=1e-6)  # the mirror: the same fit
    assert _direct_margin(theta0, d.Z, lam0) < 0  # and unlabelled
    b = solve_on_label_boundary(d, pi, theta0, c)
    assert b.info.converged
    margin = _direct_margin(b.theta, d.Z, lam0)
    assert abs(margin) <= 1e-7 and margin >= -BOUNDARY_GAP_TOL  # on the boundary
    assert b.f == pytest.approx(_el.profile_log_el(b.theta, pi, d.Z, d.y, c, order=0), abs=1e-9)
    assert b.f < f0 - 0.5  # the constraint binds: well below the unlabelled maximum
    # KKT: the log-EL's gradient is a non-positive multiple of the margin's (a maximum of f
    # subject to margin >= 0 with the constraint active: grad f + mu grad margin = 0, mu >= 0)
    _, g, _, _ = _el.profile_log_el(b.theta, pi, d.Z, d.y, c, order=2, X1=d.X1)
    _, a = _el.label_gap(b.theta, d.Z, lam0, X1=d.X1, order=1)
    mu = -(g @ a) / (a @ a)
    assert mu > 0
    assert np.abs(g + mu * a).max() <= 1e-4 * np.abs(g).max()
    # an independent solver: trust-constr with finite-difference derivatives of the log-EL
    # and of the margin as the rule defines it
    r = optimize.minimize(lambda th: -_el.profile_log_el(th, pi, d.Z, d.y, c, order=0),
                          theta0, method="trust-constr", jac="2-point",
                          hess=optimize.BFGS(),
                          constraints=[optimize.NonlinearConstraint(
                              lambda th: _direct_margin(th, d.Z, lam0), 0.0, np.inf,
                              jac="2-point", hess=optimize.BFGS())],
                          options=dict(maxiter=3000, gtol=1e-9, xtol=1e-12))
    assert _direct_margin(r.x, d.Z, lam0) >= -1e-6
    assert b.f == pytest.approx(-r.fun, abs=1e-4)


def test_the_profile_at_one_minus_pi_hat_is_the_labelled_maximum_not_the_mirror(small_fit):
    res = small_fit
    d = res.model.data
    _, pi = _mirror(res)
    prof = res._profiler
    r = res.profile_pi().statistic(pi)
    # before session 52 a pi without a labelled maximum from any start took the best
    # unlabelled one -- here the mirror image, R* = 0; the labelled profile lies below it
    assert r > 1.0
    theta = prof.solved[pi]
    lam0 = (d.m * pi / d.N, d.m * (1 - pi) / d.N)
    assert _direct_margin(theta, d.Z, lam0) >= -BOUNDARY_GAP_TOL  # a labelled point
    f = _el.profile_log_el(theta, pi, d.Z, d.y, res._fit.penalty_strength, order=0)
    assert r == pytest.approx(2 * (res._fit.llf_penalized - f), abs=1e-8)
    # no labelled maximum found at this pi lies above the reported value
    for s in prof._maxima.get(pi, []):
        if np.isfinite(s.f) and _direct_margin(s.theta, d.Z, lam0) >= 0:
            assert s.f <= f + 1e-9


def test_the_fits_results_pickle_with_the_boundary_runs(small_fit):
    import pickle

    res = small_fit
    _, pi = _mirror(res)
    r = res.profile_pi().statistic(pi)
    back = pickle.loads(pickle.dumps(res))
    assert back.profile_pi().statistic(pi) == r


def test_a_set_component_made_of_unlabelled_values_is_gone():
    # SAR design, pi = 0.7, n = m = 1000, p = 15, seed 47100024 (replicate 24 of the (C51)
    # cell, benchmarks/compare_fits.py): up to session 51 the plain 95% set was reported as
    # not an interval, R* = 0.72 at pi = 0.1792 and 2.81 at 0.2688 -- values of the best
    # unlabelled maximum, as no start reached a labelled one there. On the label boundary the
    # labelled maximum gives R* = 20.7 and 18.9 (session 52's measurement with SLSQP)


    p = 15
    df = sar_design(1000, 1000, 0.7, p=p, rng=np.random.default_rng(47100024))
    X = df[[f"x{j}" for j in range(1, p + 1)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pu.DETM(X[lab], X[~lab]).fit(pi_interval="profile")
        ci = res.conf_int_pi()
    assert res.pi == pytest.approx(0.796875, abs=1e-6)  # the fit of (F51)
    # the limits (F51) reported: the component around pi-hat is unchanged
    assert ci["lower"] == pytest.approx(0.716726, abs=1e-5)
    assert ci["upper"] == pytest.approx(0.858427, abs=1e-5)
    assert ci.attrs["interval"]
    cut = stats.chi2.ppf(0.95, 1)
    d, prof = res.model.data, res._profiler
    for v, r_boundary in ((0.1792, 20.7), (0.2688, 18.9)):
        r = res.profile_pi().statistic(v)
        assert r > cut
        assert r == pytest.approx(r_boundary, abs=0.5)
        lam0 = (d.m * v / d.N, d.m * (1 - v) / d.N)
        assert _direct_margin(prof.solved[v], d.Z, lam0) >= -BOUNDARY_GAP_TOL


def test_a_labelled_maximum_on_the_boundary_beyond_a_limit_flags_the_set():
    # SAR design, pi = 0.3, n = m = 1000, p = 15, seed 47000046 (session 52, (C52)): upper
    # limit 0.5365; the probe's points 0.6813 and 0.7103 have R* = 2.42 and 2.76 from maxima on
    # the label boundary, while the three outside points (0.652, 0.768, 0.884) lie outside the
    # set. Those known boundary maxima flag the set as not an interval
    from puinfer.exceptions import ConfidenceSetWarning

    p = 15
    df = sar_design(1000, 1000, 0.3, p=p, rng=np.random.default_rng(47000046))
    X = df[[f"x{j}" for j in range(1, p + 1)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pu.DETM(X[lab], X[~lab]).fit(pi_interval="profile")
        ci = res.conf_int_pi()
    assert ci.attrs["component"][1] == pytest.approx(0.536490, abs=1e-5)
    assert not ci.attrs["interval"]
    msgs = [str(w.message) for w in caught if issubclass(w.category, ConfidenceSetWarning)]
    assert any("0.681" in m for m in msgs)
    # the interval reported is the set's hull (session 77): its upper limit is that of the
    # part holding 0.6813 and 0.7103, a crossing of the cut-off. (Bracketed from 0.7103 without
    # this class's limit search, it stopped at a jump between branches, 0.7396: R* = 19.7 at
    # 0.7397 and 3.5 at 0.7406)
    assert ci["lower"] == ci.attrs["component"][0]
    assert 0.7500 < ci["upper"] < 0.7502
    prof = res.profile_pi()
    assert prof.statistic(ci["upper"]) == pytest.approx(stats.chi2.ppf(0.95, 1), abs=1e-6)
    assert prof.statistic(0.7406) < stats.chi2.ppf(0.95, 1)
    known = res.profile_pi().known_outside(0.05)
    near = [q for q in known if abs(q - 0.6813) < 1e-3]
    assert near and res.profile_pi().statistic(near[0]) < stats.chi2.ppf(0.95, 1)


def test_the_newton_sqp_and_slsqp_reach_the_same_boundary_maximum(small_fit, monkeypatch):
    # session 53: the boundary problem is solved by Newton's method on its optimality
    # conditions (exact Hessian of the log-EL, a rank-one model of the margin's), with SLSQP
    # as the fallback; both must end at the same labelled maximum
    from puinfer.models.detm import _label_boundary

    res = small_fit
    d, c = res.model.data, res._fit.penalty_strength
    theta0, pi = _mirror(res)
    lam0 = (d.m * pi / d.N, d.m * (1 - pi) / d.N)
    b = solve_on_label_boundary(d, pi, theta0, c)
    assert b.info.converged and b.info.method.startswith("Newton-SQP")
    assert b.info.iterations <= 15  # Newton's convergence, not a quasi-Newton crawl
    monkeypatch.setattr(_label_boundary, "SQP_MAXITER", 0)  # the SQP gives up: SLSQP runs
    s = solve_on_label_boundary(d, pi, theta0, c)
    assert s.info.converged and s.info.method.startswith("SLSQP")
    assert b.f == pytest.approx(s.f, abs=1e-8)
    np.testing.assert_allclose(b.theta, s.theta, atol=1e-4)
    for sol in (b, s):
        margin = _direct_margin(sol.theta, d.Z, lam0)
        assert -BOUNDARY_GAP_TOL <= margin <= 1e-7


def test_the_default_intervals_resample_statistic_takes_the_boundary_maximum(small_fit):
    # session 54, (B54): the statistic R*_b(pi0) of the default interval's resamples
    # (bootstrap.interval_statistic) takes the labelled maximum on the label boundary where
    # its fixed-pi solutions reach only an unlabelled one above every labelled one, as the
    # data's profile does. On the data themselves at pi0 = 1 - pi-hat both of its starts reach
    # the fit's mirror image (unlabelled, at the fit's log-EL): the statistic is then the
    # data's R* there (5.18), where it was 0 (the unlabelled value) before
    from puinfer.models.detm import bootstrap

    res = small_fit
    _, pi0 = _mirror(res)
    r_data = res.profile_pi().statistic(pi0)
    assert r_data > 5.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r_b, pi_b = bootstrap.interval_statistic(res, *_small_samples(), pi0)
    assert pi_b == pytest.approx(res.pi, abs=1e-8)  # the refit is the fit
    assert r_b == pytest.approx(r_data, abs=1e-6)
