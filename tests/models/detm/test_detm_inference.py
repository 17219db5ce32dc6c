"""DETM/SETM inference (Liu et al., Section 4.1): SCAR test, profile interval for pi, SEs."""

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

import puinfer as pu
from puinfer.inference import ProfileError
from puinfer.models.detm import bootstrap as boot
from puinfer.simulate import pu_normal, sar_design, scar_design


def _world(res):
    """The bootstrap world of a DETM fit: its SETM null as a distribution on the data."""
    return boot.world(res.model.data, res.null_fit)


def _sample(res, rng, smooth=0.0):
    return boot.sample(res.model.data, _world(res), rng, smooth)


FORMULA15 = "labeled ~ " + " + ".join(f"x{j}" for j in range(1, 16))
CUT95 = stats.chi2.ppf(0.95, 1)


@pytest.fixture(scope="module")
def sar_fit():
    df = sar_design(1500, 1500, 0.3, rng=np.random.default_rng(42))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the plain profile interval and information SE, whose properties are tested here
        return pu.DETM.from_formula(FORMULA15, data=df).fit(pi_interval="profile")


@pytest.fixture(scope="module")
def mobile():
    df = pu.datasets.load_mobile_pu()
    f = "labeled ~ " + " + ".join(pu.datasets.MOBILE_FEATURES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        detm = pu.DETM.from_formula(f, data=df).fit(label_rule="pi>0.5")
        setm = pu.SETM.from_formula(f, data=df).fit()
    return df, detm, setm


class TestProfileInterval:
    def test_interval_contains_estimate(self, sar_fit):
        ci = sar_fit.conf_int_pi(0.05)
        assert ci["lower"] < sar_fit.pi < ci["upper"]

    def test_statistic_zero_at_estimate(self, sar_fit):
        assert sar_fit.profile_pi().statistic(sar_fit.pi) == pytest.approx(0, abs=1e-8)

    def test_statistic_equals_cutoff_at_limits(self, sar_fit):
        ci = sar_fit.conf_int_pi(0.05)
        prof = sar_fit.profile_pi()
        for v in ci[["lower", "upper"]]:
            assert abs(prof.statistic(v) - CUT95) < 1e-6

    def test_nested_levels(self, sar_fit):
        c90, c99 = sar_fit.conf_int_pi(0.10), sar_fit.conf_int_pi(0.01)
        assert c99["lower"] < c90["lower"] < sar_fit.pi < c90["upper"] < c99["upper"]

    def test_se_matches_profile_curvature(self, sar_fit):
        # two routes to the information about pi: the observed-information SE (Theorem 2) and
        # the curvature of the profile ELR function: {R*(pi-hat + d) + R*(pi-hat - d)} / 2 =
        # (d / SE)^2 + O(d^4) (the symmetric average cancels the cubic term of a skewed profile)
        se = sar_fit.bse["pi"]
        d = 0.05 * se
        prof = sar_fit.profile_pi()
        r = (prof.statistic(sar_fit.pi + d) + prof.statistic(sar_fit.pi - d)) / 2
        np.testing.assert_allclose(r, (d / se) ** 2, rtol=2e-3)

    def test_test_pi_is_profile_statistic(self, sar_fit):
        t = sar_fit.test_pi(0.3)
        assert t.df == 1
        assert t.statistic == pytest.approx(sar_fit.profile_pi().statistic(0.3))
        assert t.pvalue == pytest.approx(stats.chi2.sf(t.statistic, 1))
        with pytest.raises(ValueError):
            sar_fit.test_pi(1.5)
        with pytest.raises(TypeError, match=r"value must be one number in \(0, 1\); got \[0.3\]"):
            sar_fit.test_pi([0.3])
        assert "note" not in t.extra
        # a value nearer 0 than the profiled range is tested at its end, and the test says so
        t0 = sar_fit.test_pi(1e-12)
        assert t0.statistic == sar_fit.profile_pi().statistic(1e-6) and t0.null == "pi = 1e-06"
        assert "the value 1e-12 lies outside [1e-06, 1 - 1e-06]" in t0.extra["note"]

    @pytest.mark.parametrize("value", ["0.3", b"0.3", None, "abc", np.array("0.3")])
    def test_test_pi_refuses_text_and_none(self, value, small_fit):
        # test_pi("0.3") tested pi = 0.3 (text is refused everywhere else); None and "abc"
        # failed inside float() without naming the argument
        r = small_fit
        with pytest.raises(TypeError, match=r"value must be one number in \(0, 1\); got "):
            r.test_pi(value)
        assert r.test_pi(np.float64(0.3)).statistic == r.test_pi(0.3).statistic
        assert r.test_pi(np.array(0.3)).statistic == r.test_pi(0.3).statistic

    def test_profile_error_when_fit_not_at_maximum(self, sar_fit):
        prof = sar_fit.profile_pi()
        bad = pu.Profile("pi", prof.estimate, prof.llf_max - 5.0, prof._loglik_at,
                         bounds=prof.bounds)
        with pytest.raises(ProfileError, match="had not converged"):
            bad.statistic(prof.estimate)

    def test_one_sided_at_bound(self):
        # SETM on SAR data puts pi-hat at the boundary 0: the interval is one-sided
        df = sar_design(500, 500, 0.3, rng=np.random.default_rng(3))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = pu.SETM.from_formula(FORMULA15, data=df).fit()
        ci = res.conf_int_pi(method="profile")
        assert ci["lower"] == 0.0 and ci.attrs["lower_at_bound"]
        assert ci["upper"] < 0.2

    def test_plot_returns_axes(self, sar_fit):
        fig, ax = plt.subplots()
        out = sar_fit.profile_pi().plot(ax=ax, true_value=0.3)
        assert out is ax
        assert len(ax.lines) >= 4
        assert "(chi-square cut-off)" in ax.get_title()
        plt.close(fig)

    def test_plot_draws_a_given_interval(self, sar_fit):
        # session 67's audit: beside a default (bootstrap-calibrated) interval the plot showed
        # the chi-square one under the title "95% CI for pi"; interval= draws the one given
        prof = sar_fit.profile_pi()
        ci = prof.conf_int(0.05, cutoff=6.0)
        ci.attrs["method"] = "bootstrap"
        fig, ax = plt.subplots()
        prof.plot(ax=ax, interval=ci)
        title = ax.get_title()
        assert "(bootstrap cut-off)" in title
        assert f"[{ci['lower']:.4f}, {ci['upper']:.4f}]" in title
        assert 6.0 in [ln.get_ydata()[0] for ln in ax.lines]  # the cut-off's line
        xs = {ln.get_xdata()[0] for ln in ax.lines}
        assert ci["lower"] in xs and ci["upper"] in xs  # the limits' lines
        plain = prof.conf_int(0.05)
        assert plain["upper"] < ci["upper"] and plain["upper"] not in xs
        with pytest.raises(ValueError, match="interval: a Series from conf_int_pi"):
            prof.plot(ax=ax, interval=pd.Series({"lower": 0.2, "upper": 0.4}))
        plt.close(fig)


class TestScarTest:
    def test_lr_test_equals_test_scar(self, mobile):
        _, detm, setm = mobile
        a = pu.lr_test(setm, detm)
        b = detm.test_scar()
        assert a.statistic == pytest.approx(b.statistic, rel=1e-10)
        assert a.df == b.df == 20
        assert b.pvalue < 1e-100

    def test_statistic_definition(self, mobile):
        _, detm, setm = mobile
        t = detm.test_scar()
        assert t.statistic == pytest.approx(2 * (detm.llf_penalized - setm.llf_penalized), rel=1e-12)
        assert t.pvalue == pytest.approx(stats.chi2.sf(t.statistic, 20))
        unpen = 2 * (detm.llf - setm.llf)  # without the ridge in both log-ELs
        assert unpen > 1000

    def test_lr_test_refuses_bad_pairs(self, mobile, sar_fit):
        df, detm, setm = mobile
        with pytest.raises(ValueError, match="same data"):
            pu.lr_test(setm, sar_fit)
        with pytest.raises(ValueError, match="not nested"):
            pu.lr_test(detm, detm)
        f = "labeled ~ " + " + ".join(pu.datasets.MOBILE_FEATURES)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            setm0 = pu.SETM.from_formula(f, data=df).fit(penalty="none")
        with pytest.raises(ValueError, match="computed differently"):
            pu.lr_test(setm0, detm)
        with pytest.raises(TypeError):
            pu.lr_test(1.0, detm)

    def test_mobile_phone_against_paper(self, mobile):
        # Liu et al., Section 5.2: pi-hat = 0.667, 95% ELR interval [0.6425, 0.6903], true 2/3.
        _, detm, _ = mobile
        assert detm.pi == pytest.approx(2 / 3, abs=5e-4)
        ci = detm.conf_int_pi(0.05, method="profile")  # the paper's interval
        assert abs(ci["lower"] - 0.6425) < 1e-3
        assert abs(ci["upper"] - 0.6903) < 1e-3

    def test_bootstrap_small(self):
        df = scar_design(300, 300, 0.75, rng=np.random.default_rng(9), p=3)
        res = pu.DETM.from_formula("labeled ~ x1 + x2 + x3", data=df).fit()
        t = res.test_scar("bootstrap", n_boot=19, rng=1)
        assert t.distribution == "bootstrap"
        assert t.statistic == pytest.approx(res.test_scar().statistic)
        assert 1 / 20 <= t.pvalue <= 1
        assert (t.pvalue * 20) == pytest.approx(round(t.pvalue * 20))
        t2 = res.test_scar("bootstrap", n_boot=19, rng=1)
        assert t2.pvalue == t.pvalue  # reproducible with a seed
        # the default bandwidth is Silverman's, for p = 3, N = 600: (4/5)^(1/7) 600^(-1/7)
        h, rule = t.extra["bootstrap smoothing h"].split()
        assert rule == "(Silverman)"
        assert float(h) == pytest.approx(0.8 ** (1 / 7) * 600 ** (-1 / 7), rel=1e-3)
        ts = res.test_scar("bootstrap", n_boot=3, rng=1, smooth=0.4)
        assert ts.extra["bootstrap smoothing h"] == "0.4"
        assert "smoothed" in t.method
        assert "smoothed" not in res.test_scar("bootstrap", n_boot=3, rng=1, smooth=0).method
        with pytest.raises(ValueError, match="reference"):
            res.test_scar("exact")
        for bad in (dict(n_boot=0), dict(n_boot=2.5), dict(smooth=-1), dict(smooth="scott"),
                    dict(refit="slow")):
            with pytest.raises(ValueError, match=next(iter(bad))):
                res.test_scar("bootstrap", **bad)

    def test_bootstrap_rejects_under_sar(self):
        # power: target positives N((1, 0, 0), I) against source N(0, I) (negatives at -2)
        df = pu_normal(300, 300, 0.5, np.zeros(3), np.array([1.0, 0, 0]), np.full(3, -2.0),
                       rng=np.random.default_rng(9))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = pu.DETM.from_formula("labeled ~ x1 + x2 + x3", data=df).fit()
        t = res.test_scar("bootstrap", n_boot=19, rng=2)
        assert t.pvalue == pytest.approx(1 / 20)

    @pytest.mark.parametrize("refit", ["quick", "full"])
    def test_bootstrap_statistic_of_the_data_itself(self, refit):
        # the bootstrap statistic is computed like the observed one: refitting the identity
        # "resample" (every row once) must give back R_N
        df = scar_design(300, 300, 0.75, rng=np.random.default_rng(9), p=3)
        res = pu.DETM.from_formula("labeled ~ x1 + x2 + x3", data=df).fit()
        d = res.model.data
        r_id = boot.statistic(res, res.null_fit, d.X[: d.n], d.X[d.n:], refit)
        assert r_id == pytest.approx(res.test_scar().statistic, abs=1e-6)

    def test_bootstrap_null_is_the_fitted_setm(self):
        # resampling probabilities: the source from the SETM EL weights p_i, the target from
        # p_i {pi + (1 - pi) w2_i}; EL constraint (10), sum_i p_i w2_i = 1, makes the latter
        # the fitted target mixture
        df = scar_design(300, 300, 0.75, rng=np.random.default_rng(9), p=3)
        res = pu.DETM.from_formula("labeled ~ x1 + x2 + x3", data=df).fit()
        w = _world(res)
        ps, pt = w.ps, w.pt
        assert ps.sum() == pytest.approx(1) and pt.sum() == pytest.approx(1)
        assert np.all(ps > 0) and np.all(pt > 0)
        setm = res.null_fit
        p = res.model.data.X.shape[1]
        w2 = np.exp(setm.theta[p + 1] + res.model.data.Z @ setm.theta[p + 2:])
        assert ps @ w2 == pytest.approx(1, abs=1e-6)
        np.testing.assert_allclose(pt, ps * (setm.pi + (1 - setm.pi) * w2), rtol=1e-6)
        with pytest.raises(ValueError):  # the cached world is read-only
            ps[0] = 0.5

    def test_smoothed_resample_jitters_with_the_source_covariance(self):
        df = scar_design(300, 300, 0.75, rng=np.random.default_rng(9), p=3)
        res = pu.DETM.from_formula("labeled ~ x1 + x2 + x3", data=df).fit()
        X = res.model.data.X
        Xs0, Xt0 = _sample(res, np.random.default_rng(4))
        # h = 0: every resampled row is a row of the data
        rows = {tuple(r) for r in X}
        assert all(tuple(r) in rows for r in np.vstack([Xs0, Xt0]))
        # same seed, h = 0.5: the same rows (drawn before the normals) plus N(0, h^2 Sigma_s),
        # Sigma_s the EL-weighted source covariance; the source rows are never shifted
        jit = []
        for seed in range(20):
            a0, _ = _sample(res, np.random.default_rng(seed))
            a, _ = _sample(res, np.random.default_rng(seed), smooth=0.5)
            jit.append(a - a0)
        jit = np.vstack(jit)
        ps = _world(res).ps
        mu = ps @ X
        sigma = (X - mu).T @ ((X - mu) * ps[:, None])
        assert np.abs(jit.mean(axis=0)).max() < 4 * 0.5 * np.sqrt(sigma.diagonal().max() / 6000)
        np.testing.assert_allclose(np.cov(jit.T), 0.25 * sigma, atol=0.25 * 0.06)

    def test_smoothed_world_lies_inside_setm(self):
        # The smoothed resampling world must be a SETM distribution: target =
        # pi f + (1 - pi) f exp(a + beta* x), f the smoothed source density,
        # beta* = beta / sqrt(1 + h^2). Check it on skewed (exponential) data, where jittering
        # the target negatives without a shift leaves the model (that world was rejected
        # here with KS p ~ 1e-21). The CDF below is computed from the definition by numerical
        # integration, not from the shift.
        rng = np.random.default_rng(5)
        xs = rng.exponential(1, (400, 1))
        k = rng.binomial(400, 0.5)
        xt = np.r_[rng.exponential(1, k), rng.exponential(2, 400 - k)][:, None]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = pu.DETM(xs, xt).fit()
        w = _world(res)
        x = res.model.data.X[:, 0]
        h = 1.0
        sd = h * np.sqrt(w.S[0, 0])
        u = np.linspace(x.min() - 8 * sd, x.max() + 8 * sd * (1 + abs(w.beta[0]) * sd),
                        40001)
        f = (w.ps[:, None] * stats.norm.pdf(u[None, :], x[:, None], sd)).sum(axis=0)
        g = f * np.exp(w.beta[0] / np.sqrt(1 + h**2) * (u - u.mean()))
        g /= integrate.trapezoid(g, u)
        F = integrate.cumulative_trapezoid(w.pi * f + (1 - w.pi) * g, u, initial=0)
        r = np.random.default_rng(2)
        T = np.concatenate([_sample(res, r, h)[1][:, 0] for _ in range(50)])
        assert stats.kstest(T, lambda t: np.interp(t, u, F)).pvalue > 0.001

    def test_smoothed_world_keeps_the_separation_of_the_components(self):
        # Gaussian data: the squared Mahalanobis distance between the world's source and
        # negative means (the negatives' mean recovered from the target mixture) must not
        # change with smoothing. Keeping beta would multiply it by 1 + h^2 = 1.64, jittering
        # without a shift divide it by 1.64.
        df = scar_design(300, 300, 0.5, rng=np.random.default_rng(9), p=3)
        res = pu.DETM.from_formula("labeled ~ x1 + x2 + x3", data=df).fit()
        pi = _world(res).pi

        def separation(h):
            r = np.random.default_rng(0)
            draws = [_sample(res, r, h) for _ in range(60)]
            S = np.vstack([a for a, _ in draws])
            T = np.vstack([b for _, b in draws])
            delta = (T.mean(axis=0) - pi * S.mean(axis=0)) / (1 - pi) - S.mean(axis=0)
            return delta @ np.linalg.solve(np.cov(S.T), delta)

        assert separation(0.8) / separation(0.0) == pytest.approx(1, abs=0.15)

    def test_smoothed_resample_keeps_dummy_columns(self):
        df = scar_design(300, 300, 0.75, rng=np.random.default_rng(9), p=3)
        df["d"] = (df["x3"] > 0).astype(float)
        res = pu.DETM.from_formula("labeled ~ x1 + x2 + d", data=df).fit()
        Xs, Xt = _sample(res, np.random.default_rng(1), smooth=0.5)
        assert set(np.unique(np.r_[Xs[:, 2], Xt[:, 2]])) <= {0.0, 1.0}
        assert np.ptp(Xs[:, 0]) > 0 and not np.isin(Xs[:, 0], res.model.data.X[:, 0]).all()

    def test_setm_has_no_scar_test(self, mobile):
        _, _, setm = mobile  # SETM is the null model: the test is a method of DETM's results
        assert not hasattr(setm, "test_scar") and hasattr(mobile[1], "test_scar")


def test_profile_does_not_depend_on_call_order():
    # the profile at fixed pi can have several local maxima; the interval must not depend on
    # which points were profiled before (review finding: a SAR sample at n = m = 1000)
    df = sar_design(1000, 1000, 0.3, rng=np.random.default_rng(3))
    m = pu.DETM.from_formula(FORMULA15, data=df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r1, r2 = (m.fit(probe=False, pi_interval="profile"),
                  m.fit(probe=False, pi_interval="profile"))
        fresh = r1.conf_int_pi(0.01)
        for v in (0.97, 0.9, 0.6, 0.5, 0.45, 0.4):
            r2.test_pi(v)
        after = r2.conf_int_pi(0.01)
    np.testing.assert_allclose(after.to_numpy(), fresh.to_numpy(), rtol=1e-8)


def test_small_coverage_and_size_study():
    """Fast version of the Figure 3 / Table 1 studies (full: studies/detm_studies.py).

    8 SCAR replicates at n = m = 800, p = 3: the 95% plain profile interval of DETM must cover
    pi in at least 5 of 8 (P(<= 4 | coverage 0.95) < 0.001), the SCAR test p-values must not
    all be below 0.05, and the mean information SE must be within a factor 2 of the SD of
    pi-hat (the bootstrap-calibrated default: studies/detm_interval.py direct).
    """
    rng = np.random.default_rng(77)
    cover, pvals, est, ses = [], [], [], []
    for _ in range(8):
        df = scar_design(800, 800, 0.3, rng=rng, p=3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = pu.DETM.from_formula("labeled ~ x1 + x2 + x3", data=df).fit(
                pi_interval="profile")
        ci = r.conf_int_pi()
        cover.append(ci["lower"] <= 0.3 <= ci["upper"])
        pvals.append(r.test_scar().pvalue)
        est.append(r.pi)
        ses.append(r.bse["pi"])
    assert sum(cover) >= 5
    assert np.mean(np.array(pvals) < 0.05) < 1
    assert 0.5 < np.mean(ses) / np.std(est, ddof=1) < 2


def test_small_bootstrap_size_study():
    """Fast version of the bootstrap size study (full: ``studies/detm_studies.py bootsize``,
    ``bootsmooth``), by the warp-speed method: one smoothed resample per SCAR replicate.

    The resampled R* must follow the null law of the observed R_N (two-sample KS), with mean
    near p. (Not chi2_p itself: at this n both are heavier than chi2_p, and reproducing that
    small-sample law is the point of the bootstrap.) This checks the pipeline end to end
    (resampling, refitting, the statistic); that the world lies exactly inside SETM is tested
    directly above (with p = 2 and n = 250 a world slightly outside it changes R* too little
    to be seen in 30 replicates), and the size gain over chi2_p needs the full study."""
    rng = np.random.default_rng(2026)
    observed, resampled = [], []
    for _ in range(30):
        df = scar_design(250, 250, 0.75, rng=rng, p=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = pu.DETM.from_formula("labeled ~ x1 + x2", data=df).fit(probe=False)
            observed.append(r.test_scar().statistic)
            h = boot.bandwidth(r.model.data, "silverman")  # the default of test_scar("bootstrap")
            resampled.append(boot.statistic(r, r.null_fit, *_sample(r, rng, smooth=h)))
    assert stats.ks_2samp(observed, resampled).pvalue > 0.01
    assert 1 < np.mean(resampled) < 4


@pytest.fixture(scope="module")
def small_fit():
    df = scar_design(150, 150, 0.4, p=2, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pu.DETM.from_formula("labeled ~ x1 + x2", data=df).fit(
            label_rule="pi<0.5", pi_interval="profile")


BAD_BOOT_OPTIONS = [
    (dict(n_boot="x"), ValueError, "n_boot must be a positive integer; got 'x'"),
    (dict(n_boot=0), ValueError, "n_boot must be a positive integer; got 0"),
    (dict(smooth="z"), ValueError, "smooth must be 'silverman' or a number >= 0; got 'z'"),
    (dict(smooth=-1.0), ValueError, "smooth must be 'silverman' or a number >= 0; got -1.0"),
    (dict(rng="r"), TypeError, "rng must be an int seed"),
    (dict(n_jobs=0), ValueError, r"n_jobs must be a positive integer or -1"),
]


@pytest.mark.parametrize("kwargs, err, match", BAD_BOOT_OPTIONS)
def test_conf_int_pi_checks_the_bootstrap_options_whatever_the_method(kwargs, err, match,
                                                                     small_fit):
    # with method="profile" the bootstrap's options were ignored silently (session 72)
    with pytest.raises(err, match=match):
        small_fit.conf_int_pi(method="profile", **kwargs)
    ok = small_fit.conf_int_pi(method="profile", n_boot=np.int64(50), smooth=0, rng=3,
                               n_jobs=-1)
    assert ok.equals(small_fit.conf_int_pi(method="profile"))


@pytest.mark.parametrize("kwargs, err, match", [
    # with the default reference="chi2" the bootstrap's options were ignored silently
    (dict(n_boot="x"), ValueError, "n_boot must be a positive integer; got 'x'"),
    (dict(n_boot=0), ValueError, "n_boot must be a positive integer; got 0"),
    (dict(refit="y"), ValueError, "refit must be 'quick' or 'full'; got 'y'"),
    (dict(smooth="z"), ValueError, "smooth must be 'silverman' or a number >= 0; got 'z'"),
    (dict(smooth=-1.0), ValueError, "smooth must be 'silverman' or a number >= 0; got -1.0"),
    (dict(rng="r"), TypeError, "rng must be an int seed"),
    (dict(n_jobs=0), ValueError, r"n_jobs must be a positive integer or -1"),
])
def test_test_scar_checks_the_bootstrap_options_whatever_the_reference(kwargs, err, match,
                                                                       small_fit):
    r = small_fit
    with pytest.raises(err, match=match):
        r.test_scar(**kwargs)
    with pytest.raises(err, match=match):
        r.test_scar("chi2", **kwargs)
    # valid options leave the chi-square test as it was
    t = r.test_scar("chi2", n_boot=np.int64(50), refit="full", smooth=0, rng=3, n_jobs=-1)
    assert t.pvalue == r.test_scar().pvalue and t.distribution == r.test_scar().distribution


def test_full_bootstrap_refit_fits_setm_as_setm_fit():
    # refit="full" refitted SETM only from the original solution and the grid (plus the probe):
    # on this resample of a SCAR world that missed SETM.fit()'s maximum by 1.37 log-EL units
    # and R* came out 13.80 instead of 2 (l_DETM - l_SETM) = 11.06 (session 74)
    df = scar_design(1000, 1000, 0.3, p=15, rng=np.random.default_rng(1015))
    X = df[[f"x{j}" for j in range(1, 16)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = pu.DETM(X[lab], X[~lab]).fit()
        s = d.null_fit
        data = d.model.data
        Xs, Xt = boot.sample(data, boot.world(data, s), np.random.default_rng(0),
                             boot.bandwidth(data, "silverman"))
        # the default fits on the resample, independently of the bootstrap's code (DETM's
        # contains SETM's default fit, its null fit)
        d_b = pu.DETM(Xs, Xt).fit(pi_interval="profile")
    r = boot.statistic(d, s, Xs, Xt, "full")
    assert r == pytest.approx(2 * (d_b.llf_penalized - d_b.null_fit.llf_penalized), abs=1e-6)
    assert r == pytest.approx(11.0566, abs=1e-3)  # (13.8021 before)


def test_a_row_dominating_a_column_is_said():
    # session 83's audit: one target value of 1e4 among 600 of unit size squashed the
    # standardised column, the default ridge then forbade any real slope, and SETM's pi-hat
    # fell from 0.29 to 0.14 (log-EL 74 units below the maximum), with no word of the row
    from puinfer.exceptions import InfluenceWarning

    rng = np.random.default_rng(0)
    xs = rng.normal(1, 1, 200)
    yt = rng.random(400) < .4
    xt = np.where(yt, rng.normal(1, 1, 400), rng.normal(-1, 1, 400))
    out = xt.copy()
    out[0] = 1e4
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = pu.SETM(pd.DataFrame({"x": xs}), pd.DataFrame({"x": out})).fit()
        clean = pu.SETM(pd.DataFrame({"x": xs}), pd.DataFrame({"x": xt})).fit()
    said = [str(x.message) for x in w if x.category is InfluenceWarning]
    assert len(said) == 1 and "column 'x' (its value 1e+04)" in said[0]
    assert "InfluenceWarning" in [c for c, _ in r.warnings]
    assert "InfluenceWarning" not in [c for c, _ in clean.warnings]
    # nor where an indicator has a single 1 (its share (N - 1) / N: no outlier to check), nor
    # on the review's ordinary heavy tails (a lognormal feature)
    from puinfer._validation import INFLUENCE_SHARE, largest_share

    one = np.zeros(600)
    one[7] = 1.0
    assert largest_share(one, one.mean(), one.std())[0] > INFLUENCE_SHARE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dummy = pu.SETM(pd.DataFrame({"x": xs, "d": one[:200]}),
                        pd.DataFrame({"x": xt, "d": np.zeros(400)})).fit(pi_interval="profile")
    assert "InfluenceWarning" not in [c for c, _ in dummy.warnings]
    heavy = rng.lognormal(0, 1, (600, 3))
    assert largest_share(heavy, heavy.mean(axis=0), heavy.std(axis=0)).max() < INFLUENCE_SHARE
