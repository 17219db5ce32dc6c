"""Calibrators: weighted logistic fits checked against statsmodels, replicated rows, brute force."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from numpy.testing import assert_allclose
from scipy import optimize

from puinfer.models.calem import (
    BetaCalibrator,
    FormulaCalibrator,
    IsotonicCalibrator,
    LogisticCalibrator,
    SplineCalibrator,
    TemperatureCalibrator,
    make_calibrator,
    platt_targets,
)

PARAMETRIC = {
    "logistic": LogisticCalibrator(),
    "beta": BetaCalibrator(),
    "spline": SplineCalibrator(df=5),
    "formula": FormulaCalibrator("~ logit(score) + I(logit(score) ** 2)"),
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    n = 600
    s = rng.beta(1.0, 2.0, n)
    y = rng.binomial(1, np.clip(s ** 0.7, 0, 1)).astype(float)
    w = rng.integers(1, 4, n).astype(float)
    return s, y, w


@pytest.mark.parametrize("name", list(PARAMETRIC))
def test_matches_statsmodels_glm(data, name):
    s, y, w = data
    cal = PARAMETRIC[name]
    fit = cal.fit(s, y, w)
    X = cal.design(fit.basis, s)
    ref = sm.GLM(y, X, family=sm.families.Binomial(), freq_weights=w).fit(tol=1e-13, maxiter=200)
    assert fit.converged
    assert_allclose(fit.params.to_numpy(), ref.params, rtol=1e-6, atol=1e-8)
    assert_allclose(fit.llf, ref.llf, rtol=1e-10)
    assert_allclose(fit.bse.to_numpy(), ref.bse, rtol=1e-5)


@pytest.mark.parametrize("name", [*PARAMETRIC, "temperature"])
def test_wald_inference_matches_statsmodels_glm(data, name):
    """``cov_params``, ``tvalues``, ``pvalues``, ``conf_int`` and the summary's coefficient
    table are statsmodels' ``GLM(Binomial, freq_weights)`` ones on the calibrator's design
    (session 86: a fitted calibrator had ``bse`` only, though the docs list them for every
    result)."""
    s, y, w = data
    cal = PARAMETRIC.get(name, TemperatureCalibrator())
    fit = cal.fit(s, y, w)
    X = cal.design(fit.basis, s)
    ref = sm.GLM(y, X, family=sm.families.Binomial(), freq_weights=w).fit(tol=1e-13, maxiter=200)
    assert_allclose(fit.cov_params().to_numpy(), ref.cov_params(), rtol=1e-5,
                    atol=1e-8 * np.abs(ref.cov_params()).max())
    assert list(fit.cov_params().index) == list(fit.params.index)
    assert_allclose(fit.tvalues.to_numpy(), ref.tvalues, rtol=1e-5)
    assert_allclose(fit.pvalues.to_numpy(), ref.pvalues, rtol=1e-4, atol=1e-300)
    for alpha in (0.05, 0.1):
        assert_allclose(fit.conf_int(alpha).to_numpy(), ref.conf_int(alpha), rtol=1e-5,
                        atol=1e-7)
    table = fit.summary(alpha=0.1).tables[0][1]
    assert list(table.columns) == ["coef", "std err", "z", "P>|z|", "[0.05", "0.95]"]
    assert_allclose(table[["[0.05", "0.95]"]].to_numpy(), fit.conf_int(0.1).to_numpy(),
                    rtol=1e-12)
    assert_allclose(table["P>|z|"].to_numpy(), fit.pvalues.to_numpy(), rtol=1e-12)


def test_penalised_spline_covariance_is_the_penalised_information_inverse(data):
    """With ``lam > 0`` the covariance is ``(X' W X + lam P)^-1`` at the fit (Wood's Bayesian
    covariance), computed here from the design, the fitted probabilities and the penalty."""
    s, y, w = data
    cal = SplineCalibrator(df=6, lam=3.0)
    fit = cal.fit(s, y, w)
    X = cal.design(fit.basis, s)
    g = fit.predict(s)
    info = X.T @ ((w * g * (1 - g))[:, None] * X) + cal.penalty(fit.basis)
    assert np.any(cal.penalty(fit.basis))
    assert_allclose(fit.cov_params().to_numpy(), np.linalg.inv(info), rtol=1e-7,
                    atol=1e-10 * np.abs(np.linalg.inv(info)).max())
    text = str(fit.summary())
    assert "Effective df" in text and "Wood 2006" in text


def test_isotonic_and_calem_maps_have_no_covariance(data):
    """Isotonic fits, and the maps inside a CalEM result, have no parametric covariance:
    ``cov_params`` says so (with where to look) and the Wald outputs are NaN."""
    import puinfer as pu
    from puinfer.simulate.calem import simulate_calem

    s, y, w = data
    iso = IsotonicCalibrator().fit(s, y, w)
    with pytest.raises(NotImplementedError, match="isotonic"):
        iso.cov_params()
    assert iso.pvalues.isna().all() and iso.conf_int().isna().all().all()
    assert "no standard errors" in str(iso.summary())
    sim = simulate_calem(3000, rng=1)
    res = pu.CalEM(sim["score"], sim["label"], sim["treated"]).fit()
    with pytest.raises(NotImplementedError, match="CalEM result's cov_params"):
        res.calibrator.cov_params()
    assert res.calibrator.bse.isna().all()
    assert "fitted inside CalEM" in str(res.calibrator.summary())
    # (the control-only baseline is a calibrator fit of its own, with its information)
    assert res.baseline.conf_int().notna().all().all()


def test_soft_labels_summary_says_the_errors_assume_counts(data):
    """Soft labels (or non-integer weights) are not the likelihood the information is of:
    the summary says so."""
    s, y, w = data
    soft = LogisticCalibrator().fit(s, np.clip(y, 0.2, 0.8), w)
    assert "assume 0/1 labels" in str(soft.summary())
    assert "assume 0/1 labels" not in str(LogisticCalibrator().fit(s, y, w).summary())
    ci = soft.conf_int()
    ci.index.name = "renamed"  # (a copy: the fit's index is not handed out)
    assert soft.params.index.name != "renamed"
    # nor through the summary's table (the review of session 86)
    table = soft.summary().tables[0][1]
    table.index.name = "renamed"
    assert soft.params.index.name != "renamed" and soft.conf_int().index.name != "renamed"
    platt = LogisticCalibrator(prior_correction=True).fit(s, y, w)
    assert "Platt's prior correction" in str(platt.summary())


@pytest.mark.parametrize("name", ["logistic", "beta", "spline", "isotonic"])
@pytest.mark.parametrize("with_zeros", [False, True])
def test_integer_weights_equal_replicated_rows(data, name, with_zeros):
    """Integer weights are replicated rows, and weight 0 a dropped row, including the basis
    each fit learns (the spline's knots: they were placed at unweighted quantiles of every
    row, zero weights included, moving predictions by up to 0.046)."""
    s, y, w = data
    if with_zeros:
        w = np.where(np.random.default_rng(5).random(w.size) < 0.3, 0.0, w)
    cal = make_calibrator(name)
    a = cal.fit(s, y, w)
    reps = w.astype(int)
    b = cal.fit(np.repeat(s, reps), np.repeat(y, reps))
    if name == "spline":
        assert_allclose(a.basis.knots, b.basis.knots, rtol=1e-14)
    assert_allclose(a.params.to_numpy(), b.params.to_numpy(), rtol=1e-9, atol=1e-11)
    assert_allclose(a.llf, b.llf, rtol=1e-11)
    grid = np.linspace(0.001, 0.999, 37)
    assert_allclose(a.predict(grid), b.predict(grid), rtol=1e-9, atol=1e-12)
    # a row of weight 0 is a dropped row, in nobs too (isotonic fits counted them until
    # session 86)
    pos = w > 0
    assert a.nobs == cal.fit(s[pos], y[pos], w[pos]).nobs == np.count_nonzero(pos)


@pytest.mark.parametrize("name", ["logistic", "beta"])
def test_tiny_weights_are_weights(data, name):
    # the fit does not change when every weight is scaled (session 67's audit: at 1e-30 the
    # Newton fits stopped after one step and reported convergence; a penalised spline's
    # penalty is not scaled with the weights, so its fit moves, as it should)
    s, y, w = data
    cal = make_calibrator(name)
    a, b = cal.fit(s, y, w), cal.fit(s, y, w * 1e-30)
    assert b.converged
    assert_allclose(b.params.to_numpy(), a.params.to_numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["logistic", "spline", "isotonic"])
def test_soft_label_equals_split_rows(data, name):
    """A soft label a with weight w is the pair (1, w a) + (0, w (1 - a)): CalEM's D* identity."""
    s, y, _ = data
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 1, s.size) * y
    cal = make_calibrator(name)
    basis = cal.make_basis(s)
    soft = cal.fit(s, a, basis=basis)
    split = cal.fit(np.r_[s, s], np.r_[np.ones_like(s), np.zeros_like(s)], np.r_[a, 1 - a],
                    basis=basis)
    assert_allclose(soft.params.to_numpy(), split.params.to_numpy(), rtol=1e-9, atol=1e-11)


def test_penalised_spline_maximises_penalised_likelihood(data):
    s, y, w = data
    cal = SplineCalibrator(df=7, lam=2.0)
    fit = cal.fit(s, y, w)
    X = cal.design(fit.basis, s)
    P = cal.penalty(fit.basis)

    def negobj(b):
        eta = X @ b
        return -(np.dot(w, y * eta - np.logaddexp(0, eta)) - 0.5 * b @ P @ b)

    ref = optimize.minimize(negobj, np.zeros(X.shape[1]), method="BFGS",
                            options={"gtol": 1e-9, "maxiter": 5000})
    assert_allclose(fit.params.to_numpy(), ref.x, rtol=1e-4, atol=1e-5)
    assert -negobj(fit.params.to_numpy()) >= -ref.fun - 1e-9
    assert 2 < fit.df_model < 7


def test_spline_parameters_are_log_odds_at_knots(data):
    s, y, _ = data
    fit = SplineCalibrator(df=6).fit(s, y)
    knots = fit.basis.knots
    knot_scores = 1 / (1 + np.exp(-knots))
    assert_allclose(fit.linear_predictor(knot_scores), fit.params.to_numpy(), rtol=1e-7,
                    atol=1e-9)


def test_spline_with_two_knots_is_platt(data):
    s, y, _ = data
    sp = SplineCalibrator(df=2).fit(s, y)
    pl = LogisticCalibrator().fit(s, y)
    grid = np.linspace(0.01, 0.99, 11)
    assert_allclose(sp.predict(grid), pl.predict(grid), rtol=1e-8)


def _pava_reference(y, w):
    """Textbook pool-adjacent-violators with a Python stack (reference only)."""
    blocks = []
    for yi, wi in zip(y, w, strict=True):
        blocks.append([yi * wi, wi, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            a, b = blocks.pop(), blocks.pop()
            blocks.append([a[0] + b[0], a[1] + b[1], a[2] + b[2]])
    return np.concatenate([np.full(c, sy / sw) for sy, sw, c in blocks])


def test_isotonic_matches_reference_pava(data):
    s, y, w = data
    fit = IsotonicCalibrator().fit(s, y, w)
    order = np.argsort(s)
    ref = _pava_reference(y[order], w[order])
    assert_allclose(fit.predict(s[order]), ref, rtol=1e-12, atol=1e-12)
    assert np.all(np.diff(fit.params.to_numpy()) >= 0)


def test_isotonic_pools_ties_and_interpolates():
    s = np.array([0.1, 0.1, 0.5, 0.9])
    y = np.array([0.0, 1.0, 0.0, 1.0])
    fit = IsotonicCalibrator().fit(s, y)
    assert_allclose(fit.params.to_numpy(), [1 / 3, 1 / 3, 1.0])
    assert_allclose(fit.predict([0.0, 0.3, 0.7, 1.0]), [1 / 3, 1 / 3, 2 / 3, 1.0])


def test_formula_calibrator_equals_named():
    rng = np.random.default_rng(0)
    s = rng.uniform(0.01, 0.99, 300)
    y = rng.binomial(1, s)
    a = FormulaCalibrator("~ logit(score)").fit(s, y)
    b = LogisticCalibrator().fit(s, y)
    assert_allclose(a.params.to_numpy(), b.params.to_numpy(), rtol=1e-10)


def test_inputs_not_modified(data):
    s, y, w = data
    s0, y0, w0 = s.copy(), y.copy(), w.copy()
    ss = pd.Series(s)
    for name in ["logistic", "beta", "spline", "isotonic"]:
        make_calibrator(name).fit(ss, y, w).predict(ss)
    np.testing.assert_array_equal(s, s0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(w, w0)
    np.testing.assert_array_equal(ss.to_numpy(), s0)


def test_score_edges_are_clipped_not_infinite():
    s = np.array([0.0, 0.2, 0.4, 0.6, 0.8, 1.0] * 5)
    y = np.array([0, 0, 1, 0, 1, 1] * 5)
    fit = BetaCalibrator().fit(s, y)
    assert np.all(np.isfinite(fit.params))
    assert np.all(np.isfinite(fit.predict([0.0, 1.0])))


@pytest.mark.parametrize("kwargs, match", [
    (dict(score=[0.2, 1.2], y=[0, 1]), "score must be in"),
    (dict(score=[0.2, -0.1], y=[0, 1]), "score must be in"),
    (dict(score=[0.2, 0.3], y=[0, 2]), "y must be 0/1"),
    (dict(score=[0.2, 0.3], y=[0, 1, 1]), "y has 3 rows but score has 2"),
    (dict(score=[0.2, 0.3], y=[0, 1], sample_weight=[1, 1, 1]),
     "sample_weight has 3 rows but score has 2"),
    (dict(score=[0.2, 0.3], y=[0, 1], sample_weight=[1, -1]), "non-negative"),
    (dict(score=[0.2, 0.3], y=[0, 1], sample_weight=[0, 0]), "all weights are zero"),
    (dict(score=[0.2, np.nan], y=[0, 1]), "missing"),
])
def test_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LogisticCalibrator().fit(**kwargs)


def test_bad_specifications():
    with pytest.raises(ValueError, match="calibrator must be one of"):
        make_calibrator("xgboost")
    with pytest.raises(ValueError, match="df must be an integer >= 2"):
        SplineCalibrator(df=1)
    with pytest.raises(ValueError, match="lam must be a finite number >= 0"):
        SplineCalibrator(lam=-1)
    # non-finite lam used to be taken and fail later as "Eigenvalues did not converge"
    for lam in (np.inf, np.nan):
        with pytest.raises(ValueError, match="lam must be a finite number >= 0"):
            SplineCalibrator(lam=lam)
    with pytest.raises(ValueError, match="knots must be distinct; 1 repeated"):
        SplineCalibrator(knots=[-1.0, 0.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="eps must be in"):
        LogisticCalibrator(eps=0.7)


@pytest.mark.parametrize("kwargs, exc, match", [
    # tol=inf or True stopped Newton after one step, reported as converged (1/T 0.70 for 1.01)
    (dict(tol=np.inf), ValueError, "tol must be a positive finite number"),
    (dict(tol=True), TypeError, "tol must be a positive number"),
    (dict(tol=-1.0), ValueError, "tol must be a positive finite number"),
    (dict(tol=np.nan), ValueError, "tol must be a positive finite number"),
    (dict(tol="1e-8"), TypeError, "tol must be a positive number"),
    # maxiter=0 or -1 returned the zero start (every prediction 0.5)
    (dict(maxiter=0), ValueError, "maxiter must be a positive integer"),
    (dict(maxiter=-1), ValueError, "maxiter must be a positive integer"),
    (dict(maxiter="100"), ValueError, "maxiter must be a positive integer"),
    (dict(maxiter=True), ValueError, "maxiter must be a positive integer"),
    (dict(start=0.0), ValueError, r"start must hold 2 finite value\(s\)"),
    (dict(start=[0.0]), ValueError, r"start must hold 2 finite value\(s\)"),
    (dict(start=[0.0, np.nan]), ValueError, r"start must hold 2 finite value\(s\)"),
    (dict(start=["0", "1"]), ValueError, "start holds text"),
])
def test_fit_options_checked(data, kwargs, exc, match):
    s, y, _ = data
    with pytest.raises(exc, match=match):
        LogisticCalibrator().fit(s, y, **kwargs)


def test_fit_options_valid_values_unchanged(data):
    s, y, _ = data
    ref = LogisticCalibrator().fit(s, y)
    assert ref.converged
    for kw in (dict(maxiter=np.int64(100)), dict(tol=1e-10), dict(start=ref.params.to_numpy()),
               dict(start=[0, 0])):
        assert_allclose(LogisticCalibrator().fit(s, y, **kw).params, ref.params, rtol=1e-8)
    # isotonic takes no start: it is ignored as before
    IsotonicCalibrator().fit(s, y, start=[1.0])


def test_zero_dimensional_arrays_are_their_numbers(data):
    # (np.array(1e-6) was refused as "not a number" by eps and tol; np.array("1e-8") is text)
    s, y, _ = data
    assert LogisticCalibrator(eps=np.array(1e-6)).eps == LogisticCalibrator(eps=1e-6).eps
    assert_allclose(LogisticCalibrator().fit(s, y, tol=np.array(1e-10)).params,
                    LogisticCalibrator().fit(s, y, tol=1e-10).params)
    with pytest.raises(TypeError, match="tol must be a positive number"):
        LogisticCalibrator().fit(s, y, tol=np.array("1e-8"))


@pytest.mark.parametrize("eps", ["1e-6", None, [1e-6], True, np.array("1e-6")])
def test_eps_type_named(eps):
    with pytest.raises((TypeError, ValueError), match="eps must be"):
        LogisticCalibrator(eps=eps)


def test_separation_warns_and_is_recorded():
    from puinfer.exceptions import SeparationWarning

    s = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    y = np.array([0, 0, 0, 1, 1, 1])
    with pytest.warns(SeparationWarning, match="separated"):
        fit = LogisticCalibrator().fit(s, y)
    assert [c for c, _ in fit.warnings] == ["SeparationWarning"]


def test_singular_design_is_an_error():
    s = np.array([0.2, 0.2, 0.6, 0.6])
    y = np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="collinear"):
        FormulaCalibrator("~ logit(score) + I(2 * logit(score))").fit(s, y)


@pytest.mark.parametrize("n_knots", [2, 3, 5, 8])
def test_spline_basis_equals_patsy_cr(n_knots):
    # independent implementation: patsy's cr() with the same knots (mgcv's cardinal natural
    # cubic basis, linear beyond the boundary knots), inside and outside the knots' range
    import patsy

    rng = np.random.default_rng(n_knots)
    s = rng.beta(2, 3, 2000)
    cal = SplineCalibrator(df=n_knots)
    basis = cal.make_basis(np.sort(s))
    k = basis.knots
    new = np.concatenate([s, [1e-6, 1 - 1e-6]])      # beyond both boundary knots
    x = np.log(new) - np.log1p(-new)
    assert x.min() < k[0] and x.max() > k[-1]
    if n_knots == 2:   # cr() needs 3 knots; two knots give the linear interpolation basis
        u = (x - k[0]) / (k[1] - k[0])
        ref = np.column_stack([1 - u, u])
    else:
        ref = np.asarray(patsy.dmatrix("0 + cr(x, knots=inner, lower_bound=lo, upper_bound=hi)",
                                       {"x": x, "inner": tuple(k[1:-1]), "lo": k[0],
                                        "hi": k[-1]}))
    np.testing.assert_allclose(cal.design(basis, new), ref, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Platt's prior correction and temperature scaling
# ---------------------------------------------------------------------------------------------
def _logit(s):
    return np.log(s) - np.log1p(-s)


@pytest.mark.parametrize("weighted", [False, True])
def test_prior_correction_matches_sklearn_sigmoid_calibration(data, weighted):
    """Reference: scikit-learn's own implementation of Platt (1999), ``_sigmoid_calibration``
    (sklearn/calibration.py; L-BFGS on the targets (N+ + 1)/(N+ + 2), 1/(N- + 2), weighted
    counts with sample_weight), fitted on the same feature logit(score). Its model is
    ``1 / (1 + exp(A F + B))``: our (intercept, slope) is (-B, -A)."""
    calibration = pytest.importorskip("sklearn.calibration")
    s, y, w = data
    w = w if weighted else None
    fit = LogisticCalibrator(prior_correction=True).fit(s, y, w)
    A, B = calibration._sigmoid_calibration(_logit(s), y, sample_weight=w)
    assert fit.prior_corrected
    # sklearn stops L-BFGS at gtol 1e-6; our Newton fit is exact
    assert_allclose(fit.params.to_numpy(), [-B, -A], rtol=1e-5, atol=1e-6)
    # and it differs from the maximum-likelihood fit (by O(1/N)), so the test can tell them apart
    ml = LogisticCalibrator().fit(s, y, w)
    assert np.max(np.abs(ml.params.to_numpy() - fit.params.to_numpy())) > 1e-3


def test_prior_correction_matches_calibrated_classifier_cv():
    """Reference: CalibratedClassifierCV(method="sigmoid") on a frozen classifier whose
    decision function is logit(score): the published scikit-learn API end to end."""
    pytest.importorskip("sklearn", minversion="1.6")
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    class LogitScore(ClassifierMixin, BaseEstimator):
        def fit(self, X, y):
            self.classes_ = np.array([0, 1])
            return self

        def decision_function(self, X):
            return _logit(np.asarray(X)[:, 0])

        def predict(self, X):
            return (self.decision_function(X) > 0).astype(int)

    rng = np.random.default_rng(5)
    s = rng.uniform(0.02, 0.98, 80)
    y = rng.binomial(1, s ** 1.5)
    clf = CalibratedClassifierCV(FrozenEstimator(LogitScore().fit(None, None)),
                                 method="sigmoid").fit(s[:, None], y)
    ours = LogisticCalibrator(prior_correction=True).fit(s, y)
    grid = np.linspace(0.01, 0.99, 25)
    assert_allclose(ours.predict(grid), clf.predict_proba(grid[:, None])[:, 1], rtol=1e-5)


def test_platt_targets_and_soft_labels():
    y = np.array([1, 1, 0, 0, 0])
    assert_allclose(platt_targets(y), [3 / 4, 3 / 4, 1 / 5, 1 / 5, 1 / 5])
    # weighted counts: N+ = 3, N- = 1
    assert_allclose(platt_targets([1, 0], [3, 1]), [4 / 5, 1 / 3])
    # a soft label is the split pair (1, a) + (0, 1 - a): the same fit
    rng = np.random.default_rng(2)
    s = rng.uniform(0.05, 0.95, 200)
    a = rng.uniform(0, 1, 200)
    cal = LogisticCalibrator(prior_correction=True)
    soft = cal.fit(s, a)
    split = cal.fit(np.r_[s, s], np.r_[np.ones(200), np.zeros(200)], np.r_[a, 1 - a])
    assert_allclose(soft.params.to_numpy(), split.params.to_numpy(), rtol=1e-9)


def test_prior_correction_is_finite_on_separated_data():
    s = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    y = np.array([0, 0, 0, 1, 1, 1])
    fit = LogisticCalibrator(prior_correction=True).fit(s, y)  # no SeparationWarning
    assert fit.warnings == () and fit.converged
    # the fitted probabilities of the extreme rows are close to the targets 4/5 and 1/5
    p = fit.predict([0.1, 0.9])
    assert 0.05 < p[0] < 0.25 and 0.75 < p[1] < 0.95
    # llf is the log-likelihood of the labels at the corrected fit (below the supremum 0)
    eta = fit.linear_predictor(s)
    assert_allclose(fit.llf, np.sum(y * eta - np.logaddexp(0, eta)), rtol=1e-12)


def test_prior_correction_refused_in_calem():
    from puinfer import CalEM

    rng = np.random.default_rng(0)
    s = rng.uniform(0.05, 0.95, 200)
    with pytest.raises(ValueError, match="prior correction"):
        CalEM(s, rng.binomial(1, s), np.arange(200) % 2,
              calibrator=LogisticCalibrator(prior_correction=True))
    with pytest.raises(TypeError, match="prior_correction"):
        LogisticCalibrator(prior_correction="yes")


def test_temperature_matches_direct_minimisation(data):
    """Reference: scipy.optimize.minimize_scalar of the weighted log loss of
    expit(logit(s) / T) over log T (Guo et al. 2017, binary form)."""
    s, y, w = data
    fit = TemperatureCalibrator().fit(s, y, w)
    z = _logit(s)

    def loss(log_t):
        eta = z / np.exp(log_t)
        return -np.dot(w, y * eta - np.logaddexp(0, eta))

    ref = optimize.minimize_scalar(loss, bounds=(-5, 5), method="bounded",
                                   options={"xatol": 1e-10})
    assert_allclose(fit.temperature, np.exp(ref.x), rtol=1e-6)
    assert_allclose(fit.llf, -ref.fun, rtol=1e-10)
    assert_allclose(fit.predict([0.5]), [0.5])
    # the standard error of 1/T is the inverse observed information
    info = np.dot(w * np.exp(-np.logaddexp(0, z / fit.temperature)) *
                  np.exp(-np.logaddexp(0, -z / fit.temperature)), z ** 2)
    assert_allclose(fit.bse.iloc[0], 1 / np.sqrt(info), rtol=1e-8)


def test_temperature_matches_sklearn():
    """Reference: scikit-learn's temperature scaling (sklearn >= 1.8,
    ``_TemperatureScaling``: minimize_scalar over log(1/T) of softmax(log p / T))."""
    calibration = pytest.importorskip("sklearn.calibration")
    if not hasattr(calibration, "_TemperatureScaling"):
        pytest.skip("this scikit-learn has no temperature scaling")
    rng = np.random.default_rng(8)
    s = rng.beta(0.6, 0.6, 500)  # over-confident scores: T > 1
    y = rng.binomial(1, 1 / (1 + np.exp(-_logit(s) / 2.5)))
    ours = TemperatureCalibrator().fit(s, y)
    ref = calibration._TemperatureScaling().fit(np.column_stack([1 - s, s]), y)
    assert ours.temperature > 1.5
    assert_allclose(ours.temperature, 1 / ref.beta_, rtol=1e-6)


def test_temperature_warns_when_not_positive():
    from puinfer.exceptions import AssumptionWarning

    rng = np.random.default_rng(1)
    s = rng.uniform(0.05, 0.95, 300)
    y = rng.binomial(1, 1 - s)  # anti-informative score
    with pytest.warns(AssumptionWarning, match="not positive"):
        fit = TemperatureCalibrator().fit(s, y)
    assert fit.params.iloc[0] < 0
    with pytest.raises(AttributeError, match="no temperature"):
        _ = LogisticCalibrator().fit(s, y).temperature


def test_temperature_inside_calem():
    """CalEM takes any logistic-likelihood calibrator: temperature scaling reaches a fixed
    point of Algorithm 3, and equals the same map given as a formula without intercept."""
    from puinfer import CalEM
    from puinfer.simulate.calem import simulate_calem

    d = simulate_calem(3000, clean_share=0.15, rng=np.random.default_rng(4))
    res = CalEM(d["score"], d["label"], d["treated"], calibrator="temperature").fit()
    assert res.converged and list(res.params.index) == ["1/T"]
    theta = res.params.to_numpy()
    assert_allclose(res.model.em_step(theta), theta, rtol=1e-7)
    assert np.abs(res.model.loglike_gradient(theta)).max() < 1e-6 * len(d)
    alt = CalEM(d["score"], d["label"], d["treated"],
                calibrator=FormulaCalibrator("~ 0 + logit(score)")).fit()
    assert_allclose(alt.params.to_numpy(), theta, rtol=1e-8)
    assert np.isfinite(res.bse.iloc[0]) and res.bse.iloc[0] > 0


def test_fit_aligns_pandas_inputs_on_their_index(data):
    # score, y and sample_weight as Series are matched on their index, never by position (a
    # shuffled y used to be paired with the scores row by row: parameters [0.217, 0.048]
    # against [0.156, 0.932] in review)
    s, y, w = data
    idx = pd.Index([f"r{i}" for i in range(s.size)])
    S, Y, W = pd.Series(s, idx), pd.Series(y, idx), pd.Series(w, idx)
    perm = np.random.default_rng(3).permutation(s.size)
    for name in ["logistic", "spline", "isotonic"]:
        ref = make_calibrator(name).fit(s, y, w)
        fit = make_calibrator(name).fit(S, Y.iloc[perm], W.iloc[perm[::-1]])
        assert_allclose(fit.params.to_numpy(), ref.params.to_numpy(), rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match="y has the default index 0..n-1"):
        LogisticCalibrator().fit(S, pd.Series(y))
    with pytest.raises(ValueError, match="sample_weight has the default index"):
        LogisticCalibrator().fit(S, Y, pd.Series(w))
    # predictions keep the caller's index (a Series in, a Series out; an array, an array)
    fit = LogisticCalibrator().fit(S, Y)
    new = S.iloc[perm[:5]]
    out = fit.predict(new)
    assert out.index.equals(new.index)
    assert_allclose(out.to_numpy(), fit.predict(new.to_numpy()), rtol=0, atol=0)
    assert fit.linear_predictor(new).index.equals(new.index)
    assert isinstance(fit.predict(s[:3]), np.ndarray)


def test_weighted_knots_are_numpys_quantiles_of_replicated_rows():
    """The spline's weighted knots: for integer weights numpy's linear quantiles of the
    replicated rows to the last bit (ties, zero weights at the extremes included); for other
    weights independent of their scale (weights 1e-3 each put every knot at the minimum, and
    weights summing to 1 were refused as "only 1 distinct knots"). A subclass's
    ``make_basis(score)`` still serves unweighted fits."""
    from puinfer.models.calem.calibrators import _replicated_quantiles

    rng = np.random.default_rng(0)
    for _ in range(500):
        n = int(rng.integers(1, 30))
        x = rng.normal(size=n).round(int(rng.integers(0, 3)))  # ties at coarse rounding
        w = rng.integers(0, 4, n).astype(float)
        if w.sum() == 0:
            continue
        q = np.linspace(0, 1, int(rng.integers(2, 8)))
        np.testing.assert_array_equal(_replicated_quantiles(x, w, q),
                                      np.quantile(np.repeat(x, w.astype(int)), q))
    s = rng.beta(1.0, 2.0, 2000)
    y = rng.binomial(1, s).astype(float)
    ref = SplineCalibrator(df=5).fit(s, y)
    for c in (1e-3, 1 / 2000, 0.5):
        got = SplineCalibrator(df=5).fit(s, y, np.full(s.size, c))
        assert_allclose(got.basis.knots, ref.basis.knots, rtol=0, atol=0)
    w = rng.random(s.size)
    assert_allclose(SplineCalibrator(df=5).fit(s, y, w).basis.knots,
                    SplineCalibrator(df=5).fit(s, y, 1e-3 * w).basis.knots, rtol=1e-12)

    class MySpline(SplineCalibrator):
        def make_basis(self, score):
            return super().make_basis(score)

    assert_allclose(MySpline(df=5).fit(s, y).params.to_numpy(), ref.params.to_numpy())



def test_spline_df_beyond_the_distinct_scores_is_refused_before_the_basis():
    # session 85's audit: interpolated quantiles are distinct, so df = 1e5 on 300 scores built
    # a 1e5 x 1e5 identity (numpy's "Unable to allocate 74.5 GiB") and df = 400 a singular design
    rng = np.random.default_rng(0)
    s = rng.uniform(0.02, 0.98, 300)
    y = rng.binomial(1, s)
    for df in (301, 10**5, 10**9):
        with pytest.raises(ValueError, match=rf"spline calibrator: df={df} exceeds the 300 "
                                             "distinct scores; lower df"):
            SplineCalibrator(df=df).fit(s, y)
    s2 = np.repeat(s[:40], 5)  # 40 distinct scores in 200 rows
    with pytest.raises(ValueError, match="df=41 exceeds the 40 distinct scores"):
        SplineCalibrator(df=41).fit(s2, y[:200])


def test_spline_knots_of_weights_that_are_integers_up_to_rounding():
    # session 85's audit: (w * 0.1) * 10 counts rows in the likelihood-ratio rule, but the
    # knots compared the weights exactly, rescaled them, and moved by about 0.08 (LR 3.761 ->
    # 3.789)
    rng = np.random.default_rng(1)
    s = rng.uniform(0.02, 0.98, 40)
    y = rng.binomial(1, s).astype(float)
    w = rng.integers(1, 6, 40).astype(float)
    noisy = (w * 0.1) * 10
    assert np.any(noisy != w)
    rep = np.repeat(np.arange(40), w.astype(int))
    ref = SplineCalibrator(5).fit(s[rep], y[rep])
    for ww in (w, noisy):
        np.testing.assert_array_equal(SplineCalibrator(5).fit(s, y, ww).basis.knots,
                                      ref.basis.knots)


def test_zero_weight_rows_are_fitted_as_if_dropped():
    # session 85's audit: a formula's bs() placed its knots on the rows of positive weight and
    # then failed to evaluate its design at the others ("cannot evaluate formula ... on
    # newdata"); dropping the rows fitted
    from puinfer.models.calem.calibrators import FormulaCalibrator

    rng = np.random.default_rng(1)
    s = rng.uniform(0.05, 0.95, 300)
    y = rng.binomial(1, s).astype(float)
    w = np.ones(300)
    w[[np.argmin(s), np.argmax(s)]] = 0
    k = w > 0
    for cal in (FormulaCalibrator("~ bs(logit(score), df=4)"), LogisticCalibrator(),
                SplineCalibrator(4)):
        a, b = cal.fit(s[k], y[k]), cal.fit(s, y, w)
        np.testing.assert_array_equal(b.params.to_numpy(), a.params.to_numpy())
        assert b.llf == a.llf and b.nobs == a.nobs == 298
