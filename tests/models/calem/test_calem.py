"""CalEM (Sergazinov et al., Algorithm 3): exactness, algorithms agreeing, inference, bad input,
pickling and immutability of the results."""

import pickle
import warnings

import matplotlib.axes
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from numpy.testing import assert_allclose
from scipy.special import expit

import puinfer as pu
from puinfer.exceptions import AssumptionWarning, ClippingWarning
from puinfer.models.calem import CalEM, CalEMResults
from puinfer.simulate.calibration import oracle_curve, simulate_calem

CALIBRATORS = ["logistic", "beta", "spline", "isotonic"]


@pytest.fixture(scope="module")
def sim():
    rng = np.random.default_rng(20261122)
    return simulate_calem(3000, event_prob=0.4, miscalibration="g2", transition="h1",
                          clean_share=0.3, rng=rng)


@pytest.fixture(scope="module")
def fits(sim):
    out = {}
    for cal in CALIBRATORS:
        m = CalEM(sim["score"], sim["label"], sim["treated"], calibrator=cal)
        out[cal] = (m, m.fit(), m.fit(method="em", tol=1e-12, maxiter=20000))
    return out


# -- exactness ------------------------------------------------------------------------------------
@pytest.mark.parametrize("cal", CALIBRATORS)
def test_h_zero_gives_pooled_fit(sim, fits, cal):
    m = fits[cal][0]
    r = m.fit(h=0)
    pooled = m.calibrator.fit(sim["score"], sim["label"], basis=r.basis)
    assert_allclose(r.params.to_numpy(), pooled.params.to_numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("cal", ["logistic", "beta", "spline"])
def test_mstep_equals_glm_on_tripled_data(sim, fits, cal):
    """One M-step is the weighted fit on D* = D_S + D_B (weight 1 - h) + D_B relabelled 0 (h)."""
    m, res, _ = fits[cal]
    base = res.baseline
    s = sim["score"].to_numpy()
    tr = sim["treated"].to_numpy() == 1
    ge = res.biased.predict(s[tr])
    h = np.clip((ge - base.predict(s[tr])) / ge, 0, 1)
    one = m.fit(h=lambda score: np.clip((res.biased.predict(score) - base.predict(score))
                                        / res.biased.predict(score), 0, 1))
    with pytest.warns(pu.exceptions.ConvergenceWarning, match="did not converge"):
        em1 = m.fit(method="em", maxiter=1)
    assert not em1.converged
    # Newton's limit bounds its SQUAREM polishing too (session 67's audit: maxiter=1 ran up
    # to 2000 polishing steps and reported convergence)
    with pytest.warns(pu.exceptions.ConvergenceWarning, match="did not converge"):
        n1 = m.fit(method="newton", maxiter=1)
    # (1 Newton step, then SQUAREM within the limit: its run is continued once as far)
    assert not n1.converged and n1.convergence.iterations <= 3
    X = m.calibrator.design(res.basis, s)
    lab = sim["label"].to_numpy()
    Xs = np.vstack([X[~tr], X[tr], X[tr]])
    ys = np.r_[lab[~tr], lab[tr], np.zeros(tr.sum())]
    ws = np.r_[np.ones((~tr).sum()), 1 - h, h]
    ref = sm.GLM(ys, Xs, family=sm.families.Binomial(), var_weights=ws).fit(tol=1e-13,
                                                                             maxiter=200)
    assert_allclose(one.params.to_numpy(), ref.params, rtol=1e-6, atol=1e-8)
    assert_allclose(em1.params.to_numpy(), ref.params, rtol=1e-6, atol=1e-8)


def test_constant_h_gives_the_baseline(sim):
    """If g_theta / g_eta is constant (here: intercept-only calibrators, so h is constant and
    unclipped), the treated part of the fixed-point equation, (1 - h) sum_t (z - g_eta) x,
    vanishes by g_eta's own score equations: CalEM returns the control-only fit exactly."""
    from puinfer.models.calem import FormulaCalibrator

    r = CalEM(sim["score"], sim["label"], sim["treated"],
              calibrator=FormulaCalibrator("~ 1")).fit()
    assert r.share_clipped == 0
    assert_allclose(r.params.to_numpy(), r.baseline.params.to_numpy(), rtol=1e-10)
    assert_allclose(r.mean_h_treated_positives,
                    1 - sim.loc[sim.treated == 0, "label"].mean()
                    / sim.loc[sim.treated == 1, "label"].mean(), rtol=1e-8)


@pytest.mark.parametrize("cal", CALIBRATORS)
def test_mstep_never_decreases_objective_17(fits, cal):
    tr = fits[cal][2].trace.dropna()
    assert len(tr) > 5
    gain = tr["objective_after_mstep"] - tr["objective"]
    assert gain.min() >= -1e-9 * tr["objective"].abs().max()


@pytest.mark.parametrize("cal", CALIBRATORS)
def test_surrogate_loglik_never_decreases(fits, cal):
    f = fits[cal][2].trace["surrogate_llf"].to_numpy()
    assert np.diff(f).min() >= -1e-10 * np.abs(f).max()
    assert f[-1] > f[0]


def test_gradient_of_surrogate_is_fixed_point_residual(fits):
    """F's gradient is the M-step score with the E-step plugged in (checked numerically)."""
    m, res, _ = fits["spline"]
    theta = res.params.to_numpy() + np.random.default_rng(1).normal(0, 0.05, res.params.size)
    num = np.array([(m.loglike(theta + e) - m.loglike(theta - e)) / 2e-6
                    for e in 1e-6 * np.eye(theta.size)])
    assert_allclose(num, m.loglike_gradient(theta), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("cal", CALIBRATORS)
def test_accelerated_solution_equals_plain_em(fits, cal):
    _, fast, em = fits[cal]
    assert fast.converged and em.converged
    assert_allclose(fast.params.to_numpy(), em.params.to_numpy(), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("cal", ["logistic", "spline"])
def test_squarem_equals_newton(fits, cal):
    m, newton, _ = fits[cal]
    sq = m.fit(method="squarem", tol=1e-12)
    assert_allclose(sq.params.to_numpy(), newton.params.to_numpy(), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("cal", ["logistic", "beta", "spline"])
def test_solution_is_a_fixed_point_and_local_maximum(fits, cal):
    m, res, _ = fits[cal]
    theta = res.params.to_numpy()
    again = m.em_step(theta)
    assert_allclose(again, theta, rtol=1e-8, atol=1e-9)
    assert np.linalg.eigvalsh(m.loglike_hessian(theta)).max() < 0


def test_no_bias_data_gives_no_clipping_drift(sim):
    """With z = y for the treated rows the bias test does not reject and h is small."""
    d = sim.copy()
    d["label"] = d["y"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)  # equal rates: either side by chance
        r = CalEM(d["score"], d["label"], d["treated"], calibrator="logistic").fit()
    assert r.test_bias().pvalue > 0.01
    assert r.mean_h_treated_positives < 0.1


# -- inference ------------------------------------------------------------------------------------
@pytest.mark.parametrize("cal", ["logistic", "beta"])
def test_bias_test_against_statsmodels(sim, fits, cal):
    m, res, _ = fits[cal]
    X = m.calibrator.design(res.basis, sim["score"].to_numpy())
    lab = sim["label"].to_numpy()
    tr = sim["treated"].to_numpy() == 1
    fam = sm.families.Binomial()
    llc = sm.GLM(lab[~tr], X[~tr], family=fam).fit(tol=1e-13).llf
    llt = sm.GLM(lab[tr], X[tr], family=fam).fit(tol=1e-13).llf
    llp = sm.GLM(lab, X, family=fam).fit(tol=1e-13).llf
    t = res.test_bias()
    assert_allclose(t.statistic, 2 * (llc + llt - llp), rtol=1e-7)
    assert t.df == X.shape[1]
    assert t.pvalue < 0.01  # h1 gives real bias
    # one title and null whether the test is valid or not (session 69's audit: the valid
    # one carried lr_test's generic "(restricted) holds" wording)
    bad = fits["isotonic"][1].test_bias()
    assert (t.null, t.method) == (bad.null, bad.method)


def test_penalised_spline_bias_test_against_direct_optimisation():
    """test_bias of a penalised spline: separate curves penalised by each group's share of the
    rows (lam n_c / n, lam n_t / n) against the pooled curve (lam), checked by maximising the
    same penalised logistic log-likelihoods with scipy. Without bias and with a curved
    calibration, the control-only and biased fits each penalised by the full lam paid the
    penalty twice: the test was invalid ("restricted log-likelihood exceeds the full one") in
    23-99% of simulated data sets (session 73's study, n = 5000, lam = 1-100)."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(24)
    n = 3000
    s = rng.uniform(0.02, 0.98, n)
    x = np.log(s / (1 - s))
    lab = rng.binomial(1, expit(-1.5 + 0.6 * x + 0.35 * x ** 2))  # curved, no bias
    tr = (rng.random(n) < 0.6).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rates equal under H0: Assumption-1 doubts
        res = CalEM(s, lab, tr, calibrator="spline", lam=10.0).fit()
    t = res.test_bias()
    assert t.invalid_reason is None and t.statistic >= 0
    cal = res.model.calibrator
    X, P = cal.design(res.basis, s), cal.penalty(res.basis)

    def best(rows, pen):
        Xr, yr = X[rows], lab[rows]

        def neg(th):
            eta = Xr @ th
            return -(yr @ eta - np.logaddexp(0, eta).sum()) + 0.5 * th @ pen @ th

        def grad(th):
            return -(Xr.T @ (yr - expit(Xr @ th))) + pen @ th

        return -minimize(neg, np.zeros(X.shape[1]), jac=grad, method="BFGS",
                         options={"gtol": 1e-9, "maxiter": 5000}).fun

    c = tr == 0
    full = best(c, P * c.mean()) + best(~c, P * (~c).mean())
    pooled = best(np.ones(n, bool), P)
    assert_allclose(t.statistic, 2 * (full - pooled), rtol=1e-5, atol=1e-6)
    assert 0 < t.df < X.shape[1]  # effective degrees of freedom
    # the summary gives the maximised (penalised) objective and the effective df too (session
    # 76's audit: it showed the unpenalised F alone)
    assert res.llf_penalized < res.llf and 0 < res.edf < X.shape[1]
    text = str(res.summary())
    assert "Penalised surrogate log-lik." in text and "Effective df" in text
    assert f"{res.edf:.2f}" in text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = CalEM(s, lab, tr, calibrator="spline").fit()
    assert "Penalised" not in str(plain.summary())


def test_bias_test_invalid_for_isotonic(fits):
    t = fits["isotonic"][1].test_bias()
    assert t.invalid_reason is not None and np.isnan(t.pvalue)


def test_invalid_bias_test_still_gives_the_family_free_test(sim, fits):
    """Isotonic calibration has no likelihood-ratio test of bias; the stratified CMH needs no
    calibrator fit, so it is given there too (it was left out of every invalid test), and
    printed (an invalid test's details were not)."""
    from scipy import stats

    from puinfer.models.calem.model import assumption1_test, score_histogram

    t = fits["isotonic"][1].test_bias()
    key = next(k for k in t.extra if k.startswith("family-free test"))
    tr = sim["treated"].to_numpy() == 1
    s, y = sim["score"].to_numpy(), sim["label"].to_numpy()
    zc, _ = assumption1_test(score_histogram(s[~tr], y[~tr]), score_histogram(s[tr], y[tr]))
    assert t.extra[key] == f"z = {zc:.2f}, p = {stats.norm.sf(zc):.3g}"
    # the same z as the parametric fits' (one Assumption-1 check per model's data)
    assert fits["logistic"][1].test_bias().extra[key] == t.extra[key]
    assert "Invalid test" in str(t) and key in str(t)
    assert "assumes" not in t.extra  # (no family)


def test_sandwich_reduces_to_glm_covariance_without_treated_information(sim):
    """With h known (no EM) there is no sandwich; with EM the SEs are finite and positive."""
    r = CalEM(sim["score"], sim["label"], sim["treated"], calibrator="logistic").fit()
    se = r.bse
    assert np.all(np.isfinite(se)) and np.all(se > 0)
    ci = r.conf_int(0.1)
    assert np.all(ci["lower"] < r.params) and np.all(r.params < ci["upper"])


def test_calem_closer_to_truth_than_baseline_on_large_sample():
    rng = np.random.default_rng(5)
    d = simulate_calem(40_000, event_prob=0.5, miscalibration="g1", transition="h1",
                       clean_share=0.05, rng=rng)
    r = CalEM(d["score"], d["label"], d["treated"], calibrator="spline").fit()
    g = oracle_curve(d["score"], "g1")
    err_em = np.sqrt(np.mean((r.predict(d["score"].to_numpy()) - g) ** 2))
    err_base = np.sqrt(np.mean((r.predict_baseline(d["score"].to_numpy()) - g) ** 2))
    err_pooled = np.sqrt(np.mean((r.pooled.predict(d["score"].to_numpy()) - g) ** 2))
    assert err_em < err_pooled
    assert err_em < 1.5 * err_base  # CalEM is not worse than the baseline beyond noise


# -- API ------------------------------------------------------------------------------------------
def test_from_formula_equals_named_calibrator(sim):
    a = CalEM.from_formula("label ~ logit(score)", data=sim, treated="treated").fit()
    b = CalEM(sim["score"], sim["label"], sim["treated"], calibrator="logistic").fit()
    assert_allclose(a.params.to_numpy(), b.params.to_numpy(), rtol=1e-9)
    c = CalEM.from_formula("label ~ 0 + cr(logit(score), df=5)", data=sim,
                           treated="treated").fit()
    d = CalEM(sim["score"], sim["label"], sim["treated"], calibrator="spline", df=5).fit()
    assert_allclose(c.predict(sim["score"]).to_numpy(), d.predict(sim["score"]).to_numpy(),
                    rtol=1e-6)


def test_public_name_and_pandas_io(sim):
    r = pu.CalEM(sim["score"], sim["label"], sim["treated"], calibrator="beta").fit()
    s = sim["score"].iloc[:10]
    out = r.predict(s)
    assert isinstance(out, pd.Series) and out.index.equals(s.index)
    assert isinstance(r.predict(s.to_numpy()), np.ndarray)
    assert isinstance(r.params, pd.Series)
    assert list(r.params.index) == ["Intercept", "log(score)", "-log(1-score)"]


def test_result_checker(fits, sim):
    for cal in CALIBRATORS:
        r = fits[cal][1]
        assert isinstance(r, CalEMResults)
        for attr in ["params", "bse", "llf", "objective_17", "nobs", "df_model", "converged",
                     "trace", "share_clipped", "share_clipped_positives",
                     "mean_h_treated_positives", "n_control", "n_treated", "baseline", "biased",
                     "pooled", "calibrator", "convergence", "warnings", "method"]:
            getattr(r, attr)
        assert 0 <= r.share_clipped <= 1
        h = r.treatment_effect(np.linspace(0.01, 0.99, 20))
        assert np.all((h >= 0) & (h <= 1))
        text = str(r.summary())
        assert "CalEM" in text and "bias" in text
        assert "<table>" in r._repr_html_()
        assert repr(r).startswith("<CalEMResults")
        tab = r.metrics(sim["score"], sim["y"])
        assert list(tab.index) == ["baseline", "biased (g_eta)", "CalEM"]
        for fn in (r.plot_reliability, r.plot_calibration, r.plot_treatment_effect):
            assert isinstance(fn(), matplotlib.axes.Axes)


def test_inputs_not_modified(sim):
    d = sim.copy(deep=True)
    CalEM.from_formula("label ~ logit(score)", data=d, treated="treated").fit()
    s, lab, tr = d["score"].to_numpy().copy(), d["label"].to_numpy().copy(), d["treated"].copy()
    CalEM(s, lab, tr, calibrator="isotonic").fit()
    pd.testing.assert_frame_equal(d, sim)
    np.testing.assert_array_equal(s, sim["score"].to_numpy())
    np.testing.assert_array_equal(lab, sim["label"].to_numpy())


# -- bad input ------------------------------------------------------------------------------------
def test_scores_outside_unit_interval(make_toy):
    s, lab, tr = make_toy(400)
    s[3] = 1.2
    with pytest.raises(ValueError, match="score must be in"):
        CalEM(s, lab, tr)


def test_scores_of_exactly_0_or_1_are_clipped_with_warning(make_toy):
    s, lab, tr = make_toy(400)
    s[:2] = [0.0, 1.0]
    with pytest.warns(ClippingWarning, match="clipped"):
        r = CalEM(s, lab, tr, calibrator="logistic").fit()
    assert any(cat == "ClippingWarning" for cat, _ in r.warnings)
    assert np.all(np.isfinite(r.params))


def test_labels_not_binary(make_toy):
    s, lab, tr = make_toy(400)
    lab = lab.astype(float)
    lab[0] = 0.5
    with pytest.raises(ValueError, match="label must be 0/1"):
        CalEM(s, lab, tr)
    with pytest.raises(ValueError, match="treated must be 0/1"):
        CalEM(s, np.round(lab), np.where(tr == 1, 2, 0))


@pytest.mark.parametrize("which, match", [(0, "treated group is empty"),
                                          (1, "control group is empty")])
def test_empty_group(which, match, make_toy):
    s, lab, _ = make_toy(400)
    with pytest.raises(ValueError, match=match):
        CalEM(s, lab, np.full(s.size, which))


def test_control_with_one_class(make_toy):
    s, lab, tr = make_toy(400)
    lab = np.where(tr == 0, 0, lab)
    with pytest.raises(ValueError, match="control group has only one class"):
        CalEM(s, lab, tr)


def test_assumption_1_violated():
    rng = np.random.default_rng(4)
    s = rng.uniform(0.02, 0.98, 2000)
    tr = (rng.random(2000) < 0.7).astype(int)
    y = rng.binomial(1, s)
    z = np.where(y == 1, 1, rng.binomial(1, 0.5, 2000))
    lab = np.where(tr == 1, y, z)  # the biased labels sit on the rows marked control
    with pytest.raises(ValueError, match="Assumption 1 .* is violated"):
        CalEM(s, lab, tr)


def test_assumption_1_in_doubt_warns_and_records():
    # a mild violation (treated positives at 0.95 of the clean rate): in doubt, not refused
    from puinfer.models.calem.model import assumption1_test, score_histogram

    rng = np.random.default_rng(8)
    s = rng.uniform(0.05, 0.95, 3000)
    tr = rng.random(3000) < 0.5
    lab = rng.binomial(1, np.where(tr, 0.95 * s, s))
    _, p = assumption1_test(score_histogram(s[~tr], lab[~tr]), score_histogram(s[tr], lab[tr]))
    assert 1e-4 <= p < 0.05
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = CalEM(s, lab, tr.astype(int), calibrator="logistic").fit()
    assert any(issubclass(x.category, AssumptionWarning) and f"p = {p:.2g}" in str(x.message)
               for x in w)
    assert any(cat == "AssumptionWarning" for cat, _ in r.warnings)


def test_assumption_1_is_checked_at_equal_scores():
    # treated rows with lower scores have a lower share of positives overall; at equal scores
    # their labels are positive at least as often (Assumption 1 holds exactly). Comparing the
    # overall shares refused these data (p = 3.8e-29 in review); at equal scores nothing is
    # in doubt.
    r = np.random.default_rng(0)
    sc, st = r.uniform(0.3, 0.95, 500), r.uniform(0.02, 0.6, 5000)
    yt = r.binomial(1, st)
    z = np.where(yt == 1, 1, r.binomial(1, 0.1, 5000))
    lab = np.r_[r.binomial(1, sc), z]
    assert lab[500:].mean() < lab[:500].mean()
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssumptionWarning)
        m = CalEM(np.r_[sc, st], lab, np.r_[np.zeros(500, bool), np.ones(5000, bool)])
    assert m.init_warnings == ()


def test_assumption_1_check_size_and_power():
    # the stratified test's false alarms at 5% without bias (also with the groups' scores
    # distributed differently) and its power against P(Z = 1 | s) = 0.85 s; 200 replicates
    # each (MC SE of a 5% rate: 1.5%)
    from puinfer.models.calem.model import assumption1_test, score_histogram

    def rate(draw):
        ps = []
        for seed in range(200):
            sc, yc, st, yt = draw(np.random.default_rng(seed))
            ps.append(assumption1_test(score_histogram(sc, yc), score_histogram(st, yt))[1])
        return np.mean(np.array(ps) < 0.05)

    def same(r):
        s, tr = r.uniform(0.02, 0.98, 3000), r.random(3000) < 0.7
        y = r.binomial(1, s)
        return s[~tr], y[~tr], s[tr], y[tr]

    def shifted(r):
        sc, st = r.beta(2, 2, 300), r.beta(1, 4, 3000)
        return sc, r.binomial(1, sc), st, r.binomial(1, st)

    def edge(r):  # most treated scores below the lowest control scores
        sc, st = r.beta(8, 2, 500), r.beta(1, 8, 5000)
        return sc, r.binomial(1, sc), st, r.binomial(1, st)

    def violated(r):
        sc, st = r.uniform(0.02, 0.98, 500), r.uniform(0.02, 0.98, 3000)
        return sc, r.binomial(1, sc), st, r.binomial(1, 0.85 * st)

    assert rate(same) < 0.09
    assert rate(shifted) < 0.09  # comparing overall shares: nearly always "violated"
    assert rate(edge) < 0.09  # strata of 40 control quantiles: 81% (review)
    assert rate(violated) > 0.9


def test_bad_fit_options(sim):
    m = CalEM(sim["score"], sim["label"], sim["treated"], calibrator="isotonic")
    with pytest.raises(ValueError, match="method='newton' needs a parametric"):
        m.fit(method="newton")
    with pytest.raises(ValueError, match="method must be"):
        m.fit(method="bfgs")
    with pytest.raises(ValueError, match="h must be in"):
        m.fit(h=1.5)


def test_from_formula_errors(sim):
    with pytest.raises(ValueError, match="nolabel"):
        CalEM.from_formula("nolabel ~ logit(score)", data=sim, treated="treated")
    with pytest.raises(ValueError, match="treated column"):
        CalEM.from_formula("label ~ logit(score)", data=sim, treated="nope")
    with pytest.raises(ValueError, match="cannot tell which column is the score"):
        CalEM.from_formula("label ~ logit(score) + p", data=sim, treated="treated")
    # a score= the formula does not use, or a formula using more than the score, is refused
    # when the model is built (session 67's audit: fit() raised "name 'score' is not defined")
    twice = sim.assign(score2=sim["score"] ** 2)
    with pytest.raises(ValueError, match=r"score='score2': .* uses the column\(s\) \['score'\]"):
        CalEM.from_formula("label ~ logit(score)", data=twice, treated="treated",
                           score="score2")
    with pytest.raises(ValueError, match=r"uses the column\(s\) \['score', 'p'\]"):
        CalEM.from_formula("label ~ logit(score) + p", data=sim, treated="treated",
                           score="score")
    # a keyword argument is not a column, even where a column has its name
    # (review: a "df" column made bs(logit(score), df=4) "use" it)
    with_df = sim.assign(df=1.0)
    m = CalEM.from_formula("label ~ bs(logit(score), df=4)", data=with_df, treated="treated",
                           score="score")
    assert m.score_name == "score"


def test_expit_consistency(fits, sim):
    res = fits["logistic"][1]
    s = sim["score"].to_numpy()[:5]
    eta = res.params["Intercept"] + res.params["logit(score)"] * np.log(s / (1 - s))
    assert_allclose(res.predict(s), expit(eta), rtol=1e-12)


def test_sandwich_bread_is_the_derivative_of_the_stacked_equations(fits):
    """A = -dU/d(theta, eta) of the sandwich, checked by central differences (a test of the
    private engine: the bread is not part of the public API)."""
    from puinfer.models.calem._engine import ParametricEngine

    m, res, _ = fits["logistic"]
    eng = m._setup.engine
    theta, eta = res.params.to_numpy(), res.biased.params.to_numpy()
    k = theta.size

    def U(v):
        th, et = v[:k], v[k:]
        e2 = ParametricEngine(eng.cal, eng.basis, eng.X, eng.nc, eng.y, eng.z, eng.Xt @ et,
                               None)
        u_eta = eng.Xt.T @ (eng.z - expit(eng.Xt @ et))
        return np.r_[e2.residual(th), u_eta]

    v0 = np.r_[theta, eta]
    num = np.column_stack([(U(v0 + e) - U(v0 - e)) / 2e-6 for e in 1e-6 * np.eye(2 * k)])
    # the analytic bread, as the sandwich builds it
    ev = eng.evaluate(theta, jac=True)
    ge, pt = eng.g_eta_t, expit(eng.Xt @ theta)
    free = (eng.z == 1) & (pt < ge)  # treated positives below the kink (h > 0)
    A12 = eng.Xt.T @ (eng.Xt * np.where(free, pt * (1 - ge) / ge, 0.0)[:, None])
    A22 = eng.Xt.T @ (eng.Xt * (ge * (1 - ge))[:, None])
    A = np.block([[-ev["J"], A12], [np.zeros((k, k)), A22]])
    assert_allclose(-num, A, rtol=1e-4, atol=1e-3)
    # the fit takes A22 from the unpenalised biased fit's information: bit for bit the same
    # product, so the same covariance as the sandwich computing it
    assert eng._a22 is not None
    np.testing.assert_array_equal(eng._a22, res.biased.information.to_numpy())
    assert_allclose(eng._a22, A22, rtol=1e-12)
    e2 = ParametricEngine(eng.cal, eng.basis, eng.X, eng.nc, eng.y, eng.z, eng.eta_e_t, None)
    np.testing.assert_array_equal(e2.sandwich(theta), res.cov_params().to_numpy())


def test_sandwich_meat_is_the_sum_of_outer_products(fits):
    """B of the sandwich equals sum_i psi_i psi_i' with the stacked estimating functions
    psi = (x (label - g), x (z - g_eta)) on treated rows and (x (y - g), 0) on control rows,
    built row by row as a (rows x 2k) array (the direct form the engine avoids)."""
    from puinfer.models.calem._engine import Rows, block_sums, sandwich_block

    m, res, _ = fits["logistic"]
    eng = m._setup.engine
    theta, eta = res.params.to_numpy(), res.biased.params.to_numpy()
    rows = Rows(eng.X, eng.nc, eng.y, eng.z, eng.Xt @ eta)
    ev = block_sums(rows, theta)
    g = expit(eng.X @ theta)
    Xc, Xt = eng.X[:eng.nc], eng.X[eng.nc:]
    psi = np.vstack([np.hstack([Xc * (eng.y - g[:eng.nc])[:, None], np.zeros_like(Xc)]),
                     np.hstack([Xt * (ev["a"] - g[eng.nc:])[:, None],
                                Xt * (eng.z - expit(eng.Xt @ eta))[:, None]])])
    assert_allclose(sandwich_block(rows, theta)["B"], psi.T @ psi, rtol=1e-10, atol=1e-8)


# -- pickling, immutability, caching --------------------------------------------------------------
def _pickle_cases(sim, fits):
    yield from ((cal, fits[cal][0], fits[cal][1]) for cal in CALIBRATORS)
    m = CalEM.from_formula("label ~ 0 + cr(logit(score), df=4)", data=sim, treated="treated")
    yield "formula", m, m.fit()


def test_pickle_round_trip_every_calibrator(sim, fits):
    s = sim["score"].iloc[:50]
    for cal, m, r in _pickle_cases(sim, fits):
        m2, r2 = pickle.loads(pickle.dumps(m)), pickle.loads(pickle.dumps(r))
        assert_allclose(r2.predict(s).to_numpy(), r.predict(s).to_numpy(), rtol=0, atol=0)
        assert_allclose(r2.predict_baseline(s.to_numpy()), r.predict_baseline(s.to_numpy()))
        assert r2.summary().as_text() == r.summary().as_text(), cal
        t, t2 = r.test_bias(), r2.test_bias()
        assert (np.isnan(t.statistic) and np.isnan(t2.statistic)) or t.statistic == t2.statistic
        if cal != "isotonic":
            pd.testing.assert_frame_equal(r2.conf_int(), r.conf_int())
        # the unpickled model fits again to the same numbers
        assert_allclose(m2.fit().params.to_numpy(), r.params.to_numpy(), rtol=1e-10, atol=1e-12)


def test_results_are_immutable(fits):
    r = fits["logistic"][1]
    with pytest.raises(AttributeError, match="immutable"):
        r.llf = 0.0
    with pytest.raises(AttributeError, match="immutable"):
        r.params = None
    with pytest.raises(AttributeError):
        del r.model
    with pytest.raises(AttributeError, match="immutable"):
        r.new_attribute = 1


def test_derived_values_are_computed_once(fits):
    r = fits["spline"][1]
    assert r.summary().as_text() == r.summary().as_text() == str(r)
    assert r.test_bias() is r.test_bias()
    r.conf_int()
    bse = r.__dict__["_bse"]
    pd.testing.assert_frame_equal(r.conf_int(), r.conf_int())
    assert r.__dict__["_bse"] is bse


def test_alpha_is_a_significance_level(fits):
    r = fits["logistic"][1]
    with pytest.raises(ValueError):
        r.conf_int(0.95)
    with pytest.raises(ValueError):
        r.summary(alpha=0.95)
    wide, narrow = r.conf_int(0.01), r.conf_int(0.2)
    assert np.all(wide["lower"] < narrow["lower"]) and np.all(narrow["upper"] < wide["upper"])
    assert "0.1" in r.summary(alpha=0.2).as_text()


def test_no_covariance_is_said_not_silent(fits, sim):
    r = fits["isotonic"][1]
    assert r.bse.isna().all()
    # by design, not a defect of the fit: said in the summary, not recorded as a warning
    # (session 82: it was recorded as ("NoCovariance", ...), a category no warning has)
    assert not any("covariance" in msg for _, msg in r.warnings)
    assert "No covariance: isotonic calibration has no parametric covariance" in \
        str(r.summary())
    with pytest.raises(NotImplementedError, match="isotonic"):
        r.conf_int()
    with pytest.raises(NotImplementedError, match="isotonic"):
        r.cov_params()
    known = fits["logistic"][0].fit(h=0.2)
    with pytest.raises(NotImplementedError, match="known h"):
        known.conf_int()
    assert "No covariance: a fit with a known h" in str(known.summary())


def test_bias_test_is_an_lr_test_of_the_pooled_fit(fits):
    m, r, _ = fits["logistic"]
    t = r.test_bias()
    assert t.method.startswith("Likelihood-ratio test")
    assert_allclose(t.statistic, 2 * (r.baseline.llf + r.biased.llf - r.pooled.llf), rtol=1e-12)
    assert t.df == 2
    assert r.df_model == 2 and r.nobs == m.score.size
    assert r.llf_penalized == r.llf
    assert not hasattr(r, "aic")  # F is not an observed-data log-likelihood


def test_tied_scores_order_and_shuffle_invariance(make_toy):
    """With tied scores the canonical order (numpy's fast argsort, then the labels within
    ties) is np.lexsort's up to interchangeable rows, and the fit does not depend on the order
    of the caller's rows, bit for bit."""
    from puinfer.models.calem._engine import _score_label_order

    rng = np.random.default_rng(3)
    s = np.round(rng.random(5000), 2)                 # about 50 rows per distinct score
    lab = (rng.random(5000) < 0.4).astype(float)
    o, ref = _score_label_order(s, lab), np.lexsort((lab, s))
    assert_allclose(s[o], s[ref], rtol=0, atol=0)
    assert_allclose(lab[o], lab[ref], rtol=0, atol=0)
    score, label, treated = make_toy(1500, 4)
    score = np.round(score, 2)
    perm = np.random.default_rng(5).permutation(score.size)
    for cal in ("logistic", "spline", "isotonic"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = CalEM(score, label, treated, calibrator=cal).fit()
            b = CalEM(score[perm], label[perm], treated[perm], calibrator=cal).fit()
        assert np.array_equal(a.params.to_numpy(), b.params.to_numpy()), cal


def _toy_fit_and_engine(make_toy, calibrator):
    """The fit of a toy sample (2000 rows) and its model's fixed-point engine."""
    score, label, treated = make_toy(2000, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = CalEM(score, label, treated, calibrator=calibrator)
        res = m.fit()
    return res, m._setup.engine


def test_surrogate_value_against_its_direct_form(make_toy):
    """F of the engine (summed by rows and kink sets) equals its direct form: the control
    rows' logistic log-likelihood plus :func:`_surrogate_treated` on the treated rows."""
    from puinfer.models.calem._engine import _surrogate_treated

    res, eng = _toy_fit_and_engine(make_toy, "logistic")
    for theta in (res.params.to_numpy(), res.params.to_numpy() * 0.7 + 0.1):
        eta = eng.X @ theta
        eta_c, eta_t = eta[:eng.nc], eta[eng.nc:]
        direct = float(eng.y @ eta_c - np.logaddexp(0.0, eta_c).sum()) + \
            _surrogate_treated(eta_t, eng.z, eng.eta_e_t)
        assert eng.surrogate(theta) == pytest.approx(direct, rel=1e-12)


def test_isotonic_surrogate_and_objective_against_their_row_forms(make_toy):
    """The isotonic engine sums F and objective (17) by runs of equal fitted values (the logs
    once per run); both equal their forms summed row by row -- at the fitted step function
    and at values that change at every score (one run per score), with some clipped at 0
    and 1."""
    from scipy.special import logit

    from puinfer.models.calem._engine import _surrogate_treated

    res, eng = _toy_fit_and_engine(make_toy, "isotonic")
    fitted = eng.theta_of(res.calibrator)
    assert np.unique(fitted).size < fitted.size / 5  # a step function: runs, not scores
    rng = np.random.default_rng(11)
    rough = rng.uniform(0.0, 1.0, fitted.size)
    rough[:3], rough[-3:] = 0.0, 1.0
    eps = eng.cal.eps
    i_c, i_t = eng.inv[:eng.nc], eng.inv_t
    for theta in (fitted, rough, 0.6 * fitted + 0.2 * rough):
        p = np.clip(theta, eps, 1 - eps)
        pc = p[i_c]
        control = float(eng.y @ np.log(pc) + (1 - eng.y) @ np.log1p(-pc))
        direct = control + _surrogate_treated(logit(p[i_t]), eng.z, eng.eta_e_t[i_t])
        assert eng.surrogate(theta) == pytest.approx(direct, rel=1e-12)
        a = eng.z * rng.uniform(size=eng.z.size)  # E-step-like labels of the treated rows
        q_rows = control + float(a @ np.log(p[i_t]) + (1 - a) @ np.log1p(-p[i_t]))
        assert eng.q(theta, eng.labels_of_rows(a)) == pytest.approx(q_rows, rel=1e-12)


def test_isotonic_estep_at_treated_positives_only_is_the_full_one(make_toy):
    """Where at most half of the distinct scores have treated positives the isotonic E-step is
    computed at those alone (the rest are 0): bitwise the full formula's labels."""
    res, eng = _toy_fit_and_engine(make_toy, "isotonic")
    assert eng._estep_at is not None  # the toy: fewer than half of the scores
    rng = np.random.default_rng(4)
    for theta in (eng.theta_of(res.calibrator), rng.uniform(0.0, 1.0, eng.xs.size)):
        sparse, _ = eng.estep(theta)
        full = eng._z_sums * np.minimum(theta * eng._inv_ge + eng._ge0, 1.0)
        np.testing.assert_array_equal(sparse, full)
        assert np.all(sparse[eng._z_sums == 0] == 0)


def test_isotonic_cells_give_the_map_f_and_objective_of_the_scores(make_toy):
    """The isotonic iterations run on cells (single scores with treated positives, stretches of
    scores without whose M-step value is the same; ``IsotonicEngine.cells``, session 54): the
    map of the cells is the map of the scores (every M-step output constant on the cells), and
    F and objective (17) of constant-on-cells values are the scores' ones."""
    res, eng = _toy_fit_and_engine(make_toy, "isotonic")
    cells, index, starts = eng.cells()
    assert cells.xs.size < 0.8 * eng.xs.size  # cells pool many scores
    np.testing.assert_array_equal(index[starts], np.arange(starts.size))
    rng = np.random.default_rng(7)
    fitted = res.params.to_numpy()  # the fixed point on the distinct scores
    assert fitted.size == eng.xs.size
    for theta in (fitted, rng.uniform(0.0, 1.0, eng.xs.size), 0.5 * fitted + 0.25):
        m_scores = eng.emap(theta)
        np.testing.assert_array_equal(m_scores, m_scores[starts][index])  # constant on cells
        # the cells' map reads theta at the first score of each cell: where it is not constant
        # on a cell only the scores with treated positives (cells of one score) are read
        np.testing.assert_allclose(cells.emap(theta[starts])[index], m_scores, rtol=0,
                                   atol=1e-13)
        tc = m_scores[starts]
        a, ac = eng.estep(m_scores)[0], cells.estep(tc)[0]
        assert cells.surrogate(tc) == pytest.approx(eng.surrogate(m_scores), rel=1e-12)
        assert cells.q(tc, ac) == pytest.approx(eng.q(m_scores, a), rel=1e-12)


def test_isotonic_fit_on_cells_is_the_fixed_point_of_the_scores_map(make_toy):
    """The SQUAREM fit (on cells) against plain EM on the distinct scores from the same start
    (the control-only fit), iterated until it stops moving: another route to the same fixed
    point. (The map has other fixed points: from the fit moved by +0.05 plain EM ends 0.068
    away, F 0.25 higher, on this toy, with or without cells.)"""
    score, label, treated = make_toy(2000, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = CalEM(score, label, treated, calibrator="isotonic")
        res = m.fit()
    eng = m._setup.engine
    theta = eng.theta_of(m._setup.baseline)
    for _ in range(20_000):
        new = eng.emap(theta)
        done = np.max(np.abs(new - theta)) < 1e-14
        theta = new
        if done:
            break
    assert done
    np.testing.assert_allclose(res.params.to_numpy(), theta, rtol=0, atol=1e-7)


@pytest.mark.parametrize("cal", ["logistic", "spline"])
def test_pooled_fit_starts_one_newton_step_from_the_biased_fit(sim, fits, cal):
    # pooled_start sums the control rows only; on all rows the first Newton step of the
    # pooled likelihood from the biased fit is the same (the treated rows' gradient is 0 there
    # and their Hessian is minus the biased fit's information)
    from puinfer.models.calem._engine import pooled_start
    from puinfer.models.calem.calibrators import logistic_derivs

    m, r, _ = fits[cal]
    X = m.calibrator.design(r.basis, sim["score"].to_numpy())
    lab = sim["label"].to_numpy().astype(float)
    tr = sim["treated"].to_numpy() == 1
    tb = r.biased.params.to_numpy()
    g, H = logistic_derivs(X, lab, np.ones(lab.size), X @ tb)
    one_step = tb - np.linalg.solve(H, g)
    start = pooled_start(X[~tr], lab[~tr], r.biased)
    assert np.max(np.abs(start - tb)) > 1e-3  # a real step
    assert_allclose(start, one_step, rtol=1e-9, atol=1e-10)
    # and the pooled fit is the pooled likelihood's maximum (statsmodels)
    ref = sm.GLM(lab, X, family=sm.families.Binomial()).fit(tol=1e-13)
    assert_allclose(r.pooled.params.to_numpy(), ref.params, rtol=1e-8, atol=1e-10)
    assert_allclose(r.pooled.llf, ref.llf, rtol=1e-12)


def test_biased_and_pooled_fits_when_the_control_fit_diverges():
    # session 67's audit: control labels separated by the score (y = 1 exactly where s > 0.5)
    # send the control-only fit off to (-51.7, 6233); the biased fit warm-started there stopped
    # at llf -842,900 (not converged) and the pooled fit with it, while the treated rows have
    # an ordinary maximum. Each is its likelihood's maximum (statsmodels).
    rng = np.random.default_rng(0)
    s = rng.uniform(0.02, 0.98, 800)
    tr = np.r_[np.zeros(300, bool), np.ones(500, bool)]
    y = rng.binomial(1, 0.8 * s)
    lab = np.where(tr, np.where(y == 1, 1, rng.binomial(1, 0.3 * s)), s > 0.5).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = CalEM(s, lab, tr.astype(int), calibrator="logistic").fit()
    assert abs(r.baseline.params.iloc[1]) > 100  # the control fit has diverged
    X = sm.add_constant(np.log(s / (1 - s)))
    for fit, rows in ((r.biased, tr), (r.pooled, np.ones(s.size, bool))):
        ref = sm.GLM(lab[rows], X[rows], family=sm.families.Binomial()).fit(tol=1e-13)
        assert fit.converged
        assert_allclose(fit.params.to_numpy(), ref.params, rtol=1e-8, atol=1e-10)
        assert_allclose(fit.llf, ref.llf, rtol=1e-12)


def test_extreme_calem_fit_warns_and_records():
    # session 70's audit: 200 control and 4,800 treated rows (g2 scores, whose lowest is 5e-13):
    # CalEM's spline has log-odds -322 at its lowest knot (sandwich SE 267) and no warning,
    # though the calibrator fits warn at log-odds beyond 30 on their rows. F has a finite
    # maximum there, flat in that parameter: the data do not determine the curve at that end.
    from puinfer.exceptions import SeparationWarning
    from puinfer.models.calem import SplineCalibrator
    from puinfer.simulate.calem import simulate_calem as simulate

    df = simulate(5000, event_prob=0.5, miscalibration="g2", transition="h1",
                  clean_share=0.04, rng=11)
    m = CalEM(df.score, df.label, df.treated, calibrator="spline")
    with pytest.warns(SeparationWarning, match=r"CalEM fit: fitted log-odds reach -322\.2 "
                                               r"at score 4\.77e-13"):
        r = m.fit()
    assert r.params.iloc[0] < -300 and r.bse.iloc[0] > 100
    assert [c for c, msg in r.warnings if msg.startswith("CalEM fit")] == ["SeparationWarning"]
    # a finite maximum of F, not a stopped divergence: F is lower both ways along that knot
    th, e = r.params.to_numpy(), np.eye(5)[0]
    assert m.loglike(th) > max(m.loglike(th - 100 * e), m.loglike(th + 100 * e))
    # with the scores' log-odds clipped to +-9.2 the curve is determined: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeparationWarning)
        r2 = CalEM(df.score, df.label, df.treated,
                   calibrator=SplineCalibrator(eps=1e-4)).fit()
    assert abs(r2.params.iloc[0]) < 30


def test_extreme_calem_parameter_warning_names_its_criterion():
    # session 70's review: a parameter beyond 1e3 (a covariate on a small scale) with log-odds
    # of -9.2 was reported as "fitted log-odds reach -9.207 ... (beyond +-30 ...)"
    from puinfer.exceptions import SeparationWarning
    from puinfer.simulate.calem import simulate_calem as simulate

    df = simulate(3000, event_prob=0.5, miscalibration="g2", transition="h1",
                  clean_share=0.3, rng=11)
    with pytest.warns(SeparationWarning, match=r"CalEM fit: a parameter reaches \d+ in absolute "
                                               r"value \(beyond 1e3"):
        r = CalEM(df.score, df.label, df.treated, calibrator="~ I(1e-4 * logit(score))").fit()
    assert np.abs(r.params).max() > 1e3
    # the calibrator fits' own warnings (control, treated, pooled) name both criteria: they
    # said "fitted log-odds exceed 30" alone
    own = [m for c, m in r.warnings if "calibrator: fitted log-odds" in m]
    assert len(own) == 3 and all("exceed 30, or a parameter 1000," in m for m in own)


def test_edf_of_a_penalised_spline_is_the_trace_of_the_smoother(make_toy):
    """``edf = tr((H + P)^-1 H)`` with ``H`` the negative Hessian of the unpenalised surrogate
    ``F`` at the fit, here by central differences of ``F``'s values (it was the number of
    parameters whatever the penalty: 6.0 against the baseline's 2.23 at lam = 50 in review)."""
    score, label, treated = make_toy(2000, 6)
    edfs = []
    for lam in (0.0, 3.0, 50.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = CalEM(score, label, treated, calibrator="spline", df=6, lam=lam)
            res = m.fit()
        eng, theta = m._setup.engine, res.params.to_numpy()
        P = eng.P

        def F(t, eng=eng, P=P):  # unpenalised surrogate
            return eng.surrogate(t) + 0.5 * t @ P @ t

        k, h = theta.size, 1e-4
        E = h * np.eye(k)
        H = -np.array([[(F(theta + E[i] + E[j]) - F(theta + E[i] - E[j])
                         - F(theta - E[i] + E[j]) + F(theta - E[i] - E[j])) / (4 * h * h)
                        for j in range(k)] for i in range(k)])
        expect = np.trace(np.linalg.solve(H + P, H))
        assert res.edf == pytest.approx(expect, rel=1e-4)
        edfs.append(res.edf)
    assert edfs[0] == 6.0 and 6.0 > edfs[1] > edfs[2] > 2.0


def test_known_h_results_report_the_h_used(fits):
    # a fit with a known h reports that h's statistics (they were those of the implied
    # (g_eta - g)/g_eta: mean 0.256 and 11.8% clipped for a constant h = 0.3 in review)
    m = fits["logistic"][0]
    r = m.fit(h=0.3)
    assert r.mean_h_treated_positives == pytest.approx(0.3, abs=1e-12)
    assert r.share_clipped == 0.0 and r.share_clipped_positives == 0.0

    def curve(s):
        return 0.5 * s

    r = m.fit(h=curve)
    pos = (m.treated == 1) & (m.label == 1)
    assert r.mean_h_treated_positives == pytest.approx(np.mean(curve(m.score[pos])), rel=1e-12)


def test_isotonic_squarem_reaches_em_fixed_point_where_its_extrapolations_cycle():
    # seed 8 (from a review of 40 small data sets, where 2 failed): the unsafeguarded SQUAREM
    # extrapolations cycled (F alternating -23.536 / -23.542 for 5,000 map evaluations) and
    # the default fit stopped unconverged, 0.036 away from EM's fixed point (F = -23.508);
    # it now restarts with the monotone safeguard
    r = np.random.default_rng(8)
    s = r.uniform(0.05, 0.95, 440)
    t = np.r_[np.zeros(40, bool), np.ones(400, bool)]
    y = r.binomial(1, s)
    z = np.where(y == 1, 1, r.binomial(1, 0.2 * s))
    m = CalEM(s, np.where(t, z, y), t, calibrator="isotonic")
    with warnings.catch_warnings():
        warnings.simplefilter("error", pu.exceptions.ConvergenceWarning)
        a = m.fit()
    b = m.fit(method="em", maxiter=100_000, tol=1e-12)
    assert a.converged and "restarted with the monotone safeguard" in a.convergence.method
    assert a.llf == pytest.approx(b.llf, abs=1e-8)
    assert_allclose(a.predict(s), b.predict(s), atol=1e-5)


def test_pooled_fit_warnings_are_issued_and_recorded():
    # the pooled fit is test_bias's null: its separation warning is the results' too (it was
    # neither issued nor recorded)
    r = np.random.default_rng(0)
    s = np.r_[r.uniform(0.01, 0.3, 200), r.uniform(0.7, 0.99, 200)]
    y = (s > 0.5).astype(int)
    tr = r.random(400) < 0.6
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = CalEM(s, y, tr, calibrator="logistic").fit()
    assert any("pooled fit (test_bias's null)" in str(x.message) for x in w)
    assert any(c == "SeparationWarning" and msg.startswith("pooled fit")
               for c, msg in res.warnings)


def test_score_histogram_bins_by_the_edges():
    # the bins by arithmetic on equally spaced edges are the bins of a search over them
    from puinfer.models.calem.model import _CHECK_EDGES, score_histogram

    rng = np.random.default_rng(1)
    s = np.r_[rng.uniform(1e-6, 1 - 1e-6, 20_000), 1e-300, 0.5, 1 - 1e-16, 1e-7]
    lab = (rng.random(s.size) < s).astype(float)
    with np.errstate(divide="ignore"):
        b = np.searchsorted(_CHECK_EDGES, np.log(s) - np.log1p(-s), side="right")
    k = _CHECK_EDGES.size + 1
    ref = np.stack([np.bincount(b, minlength=k), np.bincount(b, weights=lab, minlength=k)])
    np.testing.assert_array_equal(score_histogram(s, lab), ref)


def test_a_returned_summary_is_the_callers_copy(fits):
    # session 68's audit: summary() handed out the cached Summary, so a note added to it (or a
    # table edited) showed in str(r), _repr_html_ and every later summary()
    r = fits["logistic"][1]
    text, page = str(r), r._repr_html_()
    s = r.summary()
    s.add_note("my report note")
    s.info.clear()
    s.tables[0][1].iloc[0, 0] = 999.0
    assert str(r) == text and r._repr_html_() == page
    assert r.summary().as_text() == text and "999" not in text


def test_the_calibrator_spec_cannot_change_a_fit(sim):
    # session 68's audit: the fit kept the caller's (or the model's) calibrator object, and
    # read its lam and eps when tested and predicting: rb.model.calibrator.lam = 2.0 moved
    # test_bias from 51.74 to 49.55 and eps = 0.01 moved predict(1e-9) from 8e-6 to 0.29
    from puinfer.models.calem import SplineCalibrator

    spec = SplineCalibrator(df=5)
    args = (sim["score"], sim["label"], sim["treated"])
    ra = CalEM(*args, calibrator=SplineCalibrator(df=5)).fit()
    rb = CalEM(*args, calibrator=spec).fit()
    s = np.array([1e-9, 0.5, 1 - 1e-9])
    before = (rb.test_bias().statistic, rb.predict(s))
    spec.lam, spec.eps = 2.0, 0.01  # the caller's own object stays theirs to change
    with pytest.raises(AttributeError, match="read-only"):
        rb.model.calibrator.lam = 2.0
    with pytest.raises(AttributeError, match="read-only"):
        rb.calibrator.calibrator.eps = 0.01
    assert rb.test_bias().statistic == before[0] == ra.test_bias().statistic
    assert_allclose(rb.predict(s), before[1], rtol=0, atol=0)
    # a fitted calibrator keeps what it was fitted with, through a penalty sweep and a pickle
    cal = SplineCalibrator(df=5)
    f0 = cal.fit(sim["score"], sim["label"])
    cal.lam = 2.0
    cal.fit(sim["score"], sim["label"])
    assert f0.calibrator.lam == 0.0
    f1 = pickle.loads(pickle.dumps(f0))
    assert f1.calibrator.lam == 0.0
    with pytest.raises(AttributeError, match="read-only"):
        f1.calibrator.lam = 1.0
    knots = np.quantile(cal.logit_score(sim["score"]), [0.1, 0.3, 0.5, 0.7, 0.9])
    f2 = SplineCalibrator(knots=knots).fit(sim["score"], sim["label"])
    with pytest.raises(ValueError, match="read-only"):
        pickle.loads(pickle.dumps(f2)).calibrator.knots[0] = -3.0


def test_a_score_of_0_or_1_moves_alone_and_predicts_as_fitted():
    # session 69's audit: one score of exactly 0 made the constructor clip every score below
    # eps = 1e-6 (225 rows here; the warning said 1), and predict(S) put new scores of 0 at
    # the calibrator's own 1e-12 (spline: 0.9996 for the fit's 0.333). Session 87's: the 0
    # was then read at eps = 1e-6, above the 225 smaller scores; it is read at the smallest
    from puinfer.simulate.calem import simulate_calem

    df = simulate_calem(5000, event_prob=0.2, miscalibration="g2", transition="h1",
                        clean_share=0.2, rng=3)
    assert (df.score < 1e-6).sum() > 100
    i = df.score.idxmin()
    zero, at_min = df.copy(), df.copy()
    zero.loc[i, "score"] = 0.0
    smallest = zero.score[zero.score > 0].min()
    at_min.loc[i, "score"] = smallest
    with pytest.warns(ClippingWarning, match="1 score"):
        m = CalEM(zero.score, zero.label, zero.treated, calibrator="spline")
    keep = zero.score.to_numpy() != 0
    np.testing.assert_array_equal(m.score[keep], zero.score.to_numpy()[keep])
    assert m.score[~keep].tolist() == [smallest] and m.edge_bounds[0] == smallest
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = m.fit()
        ref = CalEM(at_min.score, at_min.label, at_min.treated, calibrator="spline").fit()
    np.testing.assert_array_equal(r.params.to_numpy(), ref.params.to_numpy())
    for cal in ("spline", "logistic", "beta"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rc = CalEM(zero.score, zero.label, zero.treated, calibrator=cal).fit()
        for fn in ("predict", "predict_baseline", "predict_biased"):
            inside, new = getattr(rc, fn)(), getattr(rc, fn)(zero.score)
            assert_allclose(new.to_numpy(), inside.to_numpy(), rtol=1e-12, atol=0)


def test_the_fitted_maps_predict_a_score_of_0_or_1_as_the_results_do():
    # session 74's audit: r.baseline.predict(0) (and r.calibrator, r.biased, r.pooled) put a
    # score of exactly 0 or 1 at the calibrator's own 1e-12, where the fit and
    # r.predict_baseline(0) take it at the model's eps (logistic: 4.4e-4 against 0.023)
    from puinfer.simulate.calem import simulate_calem

    df = simulate_calem(3000, miscalibration="g2", rng=3)
    s = np.array([0.0, 1.0, 0.3])
    for cal in ("logistic", "beta", "temperature", "spline", "isotonic"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = CalEM(df.score, df.label, df.treated, calibrator=cal, eps=1e-5).fit()
        for fit, fn in ((r.calibrator, r.predict), (r.baseline, r.predict_baseline),
                        (r.biased, r.predict_biased)):
            assert_allclose(fit.predict(s), fn(s), rtol=1e-12, atol=0)
            # (0 and 1 at the model's edge bounds: eps, or the data's extreme scores
            # nearer the edge, session 87)
            assert_allclose(fit.predict(s[:2]), fit.predict(np.array(r.model.edge_bounds)),
                            rtol=1e-12, atol=0)
        if cal == "logistic":
            assert_allclose(r.calibrator.linear_predictor(s),
                            np.log(r.predict(s)) - np.log1p(-r.predict(s)), rtol=1e-9)
            assert_allclose(r.pooled.predict(s[:1]),
                            r.pooled.predict(np.array(r.model.edge_bounds[:1])))
    # a calibrator fitted on its own keeps its own clip
    f = pu.LogisticCalibrator().fit(df.score, df.label)
    assert f.edge_eps is None and f.edge_bounds is None
    assert_allclose(f.predict(s[:1]), f.predict(np.array([1e-12])), rtol=1e-12)


def test_results_pickled_before_edge_eps_predict_as_the_results_do():
    # review of session 74: an older pickle's maps had no edge_eps and kept predicting a score
    # of 0 at the calibrator's own eps
    import dataclasses

    from puinfer.simulate.calem import simulate_calem

    df = simulate_calem(1500, miscalibration="g2", rng=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = CalEM(df.score, df.label, df.treated, calibrator="logistic", eps=1e-5).fit()
    # a pickle from before session 74 (maps without edge_eps) and 87 (maps and model without
    # edge bounds): the maps predict as the results do, by the rule the fit was made with
    # (review of session 87: the new clip read the old fit's 1e-9 at eps)
    import copy

    state = dict(r.__dict__)
    for name in ("calibrator", "baseline", "biased", "pooled"):
        state[name] = dataclasses.replace(state[name], edge_eps=None, edge_bounds=None)
    model = copy.copy(r.model)
    del model.__dict__["_edge_bounds"]
    state["model"] = model
    old = object.__new__(type(r))
    old.__setstate__(state)
    s = np.array([0.0, 1.0, 0.3, 1e-9])
    assert old.model._read_scores(s).tolist() == [1e-5, 1 - 1e-5, 0.3, 1e-9]
    assert old.baseline.edge_eps == 1e-5 and old.baseline.edge_bounds is None
    assert_allclose(old.baseline.predict(s), old.predict_baseline(s), rtol=1e-12)
    assert_allclose(old.calibrator.predict(s), old.predict(s), rtol=1e-12)
    assert_allclose(old.predict(s[2:3]), r.predict(s[2:3]), rtol=1e-12)
    assert old.predict(s[3:]) != old.predict(s[:1])  # 1e-9 as it is, below the 0's 1e-5


def test_an_ill_conditioned_sandwich_is_no_covariance():
    # session 69's audit: a separated spline fit's sandwich had diagonal -4.8e18, shown as
    # std err 0, z = -inf, p < 2.2e-16 and a zero-width interval
    from scipy.special import expit, logit

    rng = np.random.default_rng(1)
    n_c, n_t = 300, 3000
    s = rng.beta(2, 3, n_c + n_t)
    tr = np.r_[np.zeros(n_c), np.ones(n_t)].astype(bool)
    y = rng.binomial(1, expit(-0.3 + 1.2 * logit(s)))
    z = np.where(y == 1, 1, rng.binomial(1, 0.6 * s ** 2))
    lab = np.where(tr, z, y)
    lab[~tr] = (s[~tr] > 0.4).astype(int)  # control labels separated by the score
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = CalEM(s, lab, tr, calibrator="spline").fit()
    assert np.isnan(r.bse).all() and np.isnan(r.pvalues).all()
    # a defect of this fit: issued as a warning with its class and recorded (session 82: only
    # recorded, as ("NoCovariance", ...), a category no warning has)
    issued = [w for w in caught if issubclass(w.category, pu.exceptions.IllConditionedWarning)]
    assert len(issued) == 1 and "sandwich covariance does not exist" in str(issued[0].message)
    assert ("IllConditionedWarning", str(issued[0].message)) in r.warnings
    assert "No covariance" not in str(r.summary())
    with pytest.raises(NotImplementedError, match="sandwich covariance does not exist"):
        r.cov_params()


def test_bias_test_reports_a_family_free_cmh_test():
    """test_bias's likelihood ratio compares fits of the calibrator family: Platt on a curve that
    is not logistic, with differently distributed scores in the two groups and no bias at all,
    rejected (session 77's audit: 86% at 5%, 400 data sets of 1000 control and 20,000 treated
    rows). The result also gives the stratified CMH test of the Assumption-1 check, read
    upwards, which does not rest on the family (5.8% there)."""
    from scipy import stats

    from puinfer.models.calem.model import assumption1_test, score_histogram
    from puinfer.simulate.calibration import simulate_calem

    rng = np.random.default_rng(0)
    dc = simulate_calem(1000, event_prob=0.5, miscalibration="g1", clean_share=0.5,
                        rng=rng).iloc[:1000]
    dt = simulate_calem(20000, event_prob=0.2, miscalibration="g1", clean_share=0.5, rng=rng)
    s, y = np.r_[dc.score, dt.score], np.r_[dc.y, dt.y]  # clean labels everywhere: no bias
    tr = np.r_[np.zeros(len(dc)), np.ones(len(dt))]
    t = pu.CalEM(s, y, tr, calibrator="logistic").fit().test_bias()
    assert t.pvalue < 0.05  # the family's fits differ without bias
    z, _ = assumption1_test(score_histogram(dc.score.to_numpy(), dc.y.to_numpy()),
                            score_histogram(dt.score.to_numpy(), dt.y.to_numpy()))
    key = next(k for k in t.extra if k.startswith("family-free test"))
    assert t.extra[key] == f"z = {z:.2f}, p = {stats.norm.sf(z):.3g}"
    assert stats.norm.sf(z) > 0.05
    assert "calibrator family holds" in t.extra["assumes"]
    assert "family-free test" in str(t)


def test_bias_test_says_when_a_fit_separates():
    """A spline's outer knot fitted on a small control set can separate; the chi-square reference
    of test_bias then over-rejects (22.7-25.8% at 5% without bias, session 77's audit): said."""
    from scipy.special import expit

    rng = np.random.default_rng(0)  # (a data set whose control fit separates)
    t = rng.normal(0, 1.5, 2200)
    tr = np.r_[np.zeros(200), np.ones(2000)]
    y = (rng.random(2200) < expit(-1 + t)).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pu.CalEM(expit(t), y, tr, calibrator="spline").fit()
    assert any(c == "SeparationWarning" for c, _ in r.baseline.warnings)
    assert "control" in r.test_bias().extra["caveat"]
    assert "treated" not in r.test_bias().extra["caveat"]


def test_predict_frame_gives_pointwise_intervals_of_g_and_h():
    """predict_frame (session 77): the calibrated probability with the Wald interval of its
    log-odds (the sandwich covariance), mapped by expit, and h with the band that
    plot_treatment_effect draws; checked against the interval computed by hand from
    cov_params() and Platt's design [1, logit(s)]."""
    from scipy import stats

    d = simulate_calem(3000, event_prob=0.3, miscalibration="g1", transition="h1",
                       clean_share=0.2, rng=np.random.default_rng(3))
    r = CalEM(d.score, d.label, d.treated, calibrator="logistic").fit()
    s = pd.Series([0.05, 0.3, 0.7, 0.95], index=["a", "b", "c", "d"])
    f = r.predict_frame(s, alpha=0.1)
    assert list(f.index) == ["a", "b", "c", "d"] and f.attrs["level"] == pytest.approx(0.9)
    assert_allclose(f["calem"], r.predict(s))
    assert_allclose(f["h"], r.treatment_effect(s))
    x = np.column_stack([np.ones(4), np.log(s / (1 - s))])
    eta = x @ r.params.to_numpy()
    se = np.sqrt(np.einsum("ij,jk,ik->i", x, r.cov_params().to_numpy(), x))
    z = stats.norm.ppf(0.95)
    assert_allclose(f["calem_lower"], expit(eta - z * se), rtol=1e-10)
    assert_allclose(f["calem_upper"], expit(eta + z * se), rtol=1e-10)
    assert (f["h_lower"] <= f["h"]).all() and (f["h"] <= f["h_upper"]).all()
    wider = r.predict_frame(s, alpha=0.01)
    assert (wider["calem_lower"] < f["calem_lower"]).all()
    assert (wider["h_upper"] - wider["h_lower"] >= f["h_upper"] - f["h_lower"]).all()
    with pytest.raises(ValueError, match="alpha"):
        r.predict_frame(s, alpha=0.95)
    # without a covariance (isotonic) the intervals are NaN and the reason is given
    iso = CalEM(d.score, d.label, d.treated, calibrator="isotonic").fit()
    fi = iso.predict_frame(s)
    assert fi[["calem_lower", "calem_upper", "h_lower", "h_upper"]].isna().all().all()
    assert "isotonic" in fi.attrs["no_interval"]
    assert_allclose(fi["calem"], iso.predict(s))


def test_predict_frame_bands_are_nan_where_a_variance_is_below_zero(fits, monkeypatch):
    """Both pointwise bands read their variances by the shared rule
    (``base.numeric.sqrt_variances``, as ``bse`` does): a variance below 0 beyond rounding
    (an ill-conditioned sandwich) gives no interval (NaN), where it gave one of width 0 (the
    variance clipped to 0) before session 87."""
    from puinfer.models.calem import _engine

    r = pickle.loads(pickle.dumps(fits["logistic"][1]))
    s = np.array([0.1, 0.5, 0.9])
    ok = r.predict_frame(s)
    assert ok.notna().all().all()
    r.__dict__["_cov"] = -r._cov  # every variance of B(s)' theta below 0
    sandwich = _engine.ParametricEngine.sandwich
    monkeypatch.setattr(_engine.ParametricEngine, "sandwich",
                        lambda self, *a, **k: -sandwich(self, *a, **k))
    f = r.predict_frame(s)
    assert f[["calem_lower", "calem_upper", "h_lower", "h_upper"]].isna().all().all()
    assert_allclose(f[["calem", "h"]], ok[["calem", "h"]], rtol=0)


def test_bias_test_gives_the_family_free_test_for_a_model_pickled_before_it_was_kept():
    """A model pickled before session 77 has no _cmh_z: test_bias's extra recomputes the CMH z
    from the model's rows (it was left out), in memory and on Dask (the treated rows'
    histogram is kept)."""
    import pickle

    d = simulate_calem(2200, event_prob=0.5, miscalibration="g1", transition="h1",
                       clean_share=200 / 2200, rng=np.random.default_rng(1))
    m = CalEM(d.score, d.label, d.treated, calibrator="logistic")
    new = m.fit().test_bias().extra
    key = next(k for k in new if k.startswith("family-free test"))
    old = pickle.loads(pickle.dumps(m))
    del old.__dict__["_cmh_z"]  # as pickled before the z was kept
    old = pickle.loads(pickle.dumps(old))
    assert "_cmh_z" not in old.__dict__
    assert old.fit().test_bias().extra[key] == new[key]
    dd = pytest.importorskip("dask.dataframe")
    ddf = dd.from_pandas(d[["score", "label", "treated"]], npartitions=2)
    md = CalEM(ddf.score, ddf.label, ddf.treated, calibrator="logistic")
    rd = md.fit()
    del md.__dict__["_cmh_z"]  # (an unpickled Dask model cannot refit: its result is pickled)
    rd = pickle.loads(pickle.dumps(rd))
    assert rd.test_bias().extra[key] == new[key]


def test_a_score_of_0_is_never_read_above_a_positive_score():
    """Session 87's audit: CalEM read a score of exactly 0 at ``eps = 1e-6`` and smaller
    positive scores as they are, so that its maps were not monotone at the edge
    (``predict(0) = 0.0134`` above ``predict(1e-9) = 0.0017``, logistic). Every score is now
    read as ``clip(score, lo, hi)``: on the model's rows only the 0s and 1s move."""
    from puinfer.simulate.calem import simulate_calem

    sim = simulate_calem(1500, rng=3)
    sc, ctl = sim.score.to_numpy().copy(), sim.treated.to_numpy() == 0
    sc[np.flatnonzero(ctl)[:2]], sc[np.flatnonzero(ctl)[2:4]] = 0.0, 1.0
    grid = np.array([0.0, 1e-300, 1e-9, 1e-7, 1e-6, 1e-3, 0.5, 1 - 1e-3, 1 - 1e-9, 1.0])
    for cal in ("logistic", "beta", "spline"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = CalEM(sc, sim.label, sim.treated, calibrator=cal).fit()
        assert r.model.edge_bounds == (1e-6, 1 - 1e-6)  # (no score nearer the edge)
        for fn in (r.predict, r.predict_baseline, r.calibrator.predict, r.baseline.predict):
            p = np.asarray(fn(grid))
            # scores below lo are read at lo: the 0 with them, not above them
            assert p[0] == p[1] == p[2] == p[3] == p[4]
            assert p[-1] == p[-2]
        if cal == "logistic":  # (an increasing map: monotone over the whole grid)
            assert np.all(np.diff(r.predict(grid)) >= 0)
    # the model's rows: only the 0s and 1s move, to the extreme scores where those are
    # nearer the edge than eps
    s2 = sc.copy()
    s2[np.flatnonzero(ctl)[5]], s2[np.flatnonzero(ctl)[6]] = 1e-9, 1 - 1e-8
    with pytest.warns(ClippingWarning, match=r"4 score\(s\) equal to 0 or 1 were clipped to "
                                             r"\[1e-09, 1 - 1e-08\]"):
        m = CalEM(s2, sim.label, sim.treated, calibrator="logistic")
    assert m.edge_bounds == (1e-9, 1 - 1e-8)
    moved = (s2 == 0) | (s2 == 1)
    np.testing.assert_array_equal(m.score[~moved], s2[~moved])
    assert sorted(set(m.score[moved].tolist())) == [1e-9, 1 - 1e-8]
