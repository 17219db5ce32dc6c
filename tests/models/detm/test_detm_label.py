"""DETM's label rule (Liu et al., Remark 1): what it compared, the sampling error of that
comparison, and the LabelAmbiguityWarning on a near-tie (issue 19)."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

import puinfer as pu
from puinfer.exceptions import LabelAmbiguityWarning
from puinfer.models.detm import _label
from puinfer.models.detm._data import prepare
from puinfer.simulate.detm import pu_normal

F2 = "labeled ~ x1 + x2"


def _fit(df, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pu.DETM.from_formula(F2, data=df).fit(probe=False, **kw)
    return res, [w.category for w in caught]


def _kl_difference(data, v):
    """KL2 - KL1 from the record's own formula (Remark 1), as a function of v."""
    from puinfer.models.detm._starts import pi_of_v
    kl1, kl2 = _label.kl_divergences(data, v, pi_of_v(data, v))
    return kl2 - kl1


@pytest.fixture(scope="module")
def clear():
    # source N(0, I); target positives N((1, 0), I), negatives N((0, 3), I): KL1 = 0.5,
    # KL2 = 4.5 (Gaussian KL = |mu|^2 / 2), a difference of 4 against an SE of about 0.7
    df = pu_normal(500, 500, 0.4, [0, 0], [1, 0], [0, 3], rng=np.random.default_rng(11))
    return df, *_fit(df, pi_interval="profile")  # (the summary's interval: not the subject)


class TestSandwich:
    def test_jacobian_matches_finite_differences(self, clear):
        """The analytic Jacobian of the stacked estimating equations equals central
        differences of their sum (the derivation of the delta-method SE)."""
        _, res, _ = clear
        data = res.model.data
        v = np.asarray(res._fit.v)
        c = res.penalty_strength
        _, A, pi, g = _label._stacked(data, v, c)
        phi = np.r_[v, pi, g]
        k = v.size
        idx = np.r_[1:data.p + 1, data.p + 2:2 * data.p + 2]

        def total(ph):
            vv, pp, gg = ph[:k], ph[k], ph[k + 1]
            s1, b1, s2, b2 = pu.models.detm._el.split(vv, data.p)
            e1, e2 = s1 + data.Z @ b1, s2 + data.Z @ b2
            S = np.exp(e1) + np.exp(e2)
            q1 = np.exp(e1) / S
            t = data.y == 1
            sc = np.r_[data.X1.T @ (data.y * q1 - np.exp(e1) / (1 + S)),
                       data.X1.T @ (data.y * (1 - q1) - np.exp(e2) / (1 + S))]
            # the penalty's gradient (written out: c (2/3)(2 b1 - b2, 2 b2 - b1))
            sc[idx] -= c * (2 / 3) * np.r_[2 * b1 - b2, 2 * b2 - b1]
            return np.r_[sc, np.sum(q1[t] - pp), np.sum((e1 - e2 - gg) / (1 + S))]

        J = np.empty_like(A)
        for j in range(phi.size):
            h = 1e-6 * max(1.0, abs(phi[j]))
            e = np.zeros(phi.size)
            e[j] = h
            J[:, j] = (total(phi + e) - total(phi - e)) / (2 * h)
        np.testing.assert_allclose(A, J, rtol=1e-5, atol=1e-4 * np.abs(A).max())
        # the summed estimating equations vanish at the fit (g and pi are their solutions)
        assert abs(total(phi)[k]) < 1e-8 * data.m and abs(total(phi)[k + 1]) < 1e-8 * data.n
        # and the difference they give is the record's KL2 - KL1
        assert (np.log(pi / (1 - pi)) - g) == pytest.approx(-_kl_difference(data, v), rel=1e-9)

    def test_psi_from_its_factors(self, clear):
        """The rows' estimating functions are kept as four factors per row (issue 17: at 1e6
        rows ``psi`` itself is 270 MB): ``psi_dot`` equals ``psi_rows(...) @ u``, the score
        columns of ``psi`` sum to the gradient of the binary-regression log-likelihood (zero
        at the fit, up to the penalty), and the SE is the sandwich from ``psi`` itself."""
        _, res, _ = clear
        data = res.model.data
        v = np.asarray(res._fit.v)
        F, A, pi, g = _label._stacked(data, v, res.penalty_strength)
        psi = _label.psi_rows(data.X1, F)
        assert psi.shape == (data.N, 2 * data.p + 4)
        _, grad, _ = pu.models.detm._el.free_objective(v, data.Z, data.y, 0.0, 2, data.X1)
        np.testing.assert_allclose(psi[:, :v.size].sum(axis=0), grad, rtol=1e-10,
                                   atol=1e-10 * data.N)
        u = _label.delta_direction(A, pi)
        np.testing.assert_allclose(_label.psi_dot(data.X1, F, u), psi @ u, rtol=1e-12,
                                   atol=1e-12 * np.abs(psi @ u).max())
        r = psi @ u
        src, tgt = r[:data.n], r[data.n:]
        se = np.sqrt(np.sum((src - src.mean()) ** 2) + np.sum((tgt - tgt.mean()) ** 2))
        assert _label.kl_difference_se(data, v, res.penalty_strength) == pytest.approx(se,
                                                                                        rel=1e-12)

    def test_se_matches_bootstrap(self, clear):
        """The sandwich SE of KL2 - KL1 against a two-sample nonparametric bootstrap of the
        refitted difference (an independent computation; 80 resamples: the bootstrap SD has a
        relative Monte-Carlo error of about 8%)."""
        df, res, _ = clear
        se = res.label_check.se
        src = df[df.labeled == 1][["x1", "x2"]].to_numpy()
        tgt = df[df.labeled == 0][["x1", "x2"]].to_numpy()
        rng = np.random.default_rng(3)
        diffs = []
        for _ in range(80):
            s = src[rng.integers(0, len(src), len(src))]
            t = tgt[rng.integers(0, len(tgt), len(tgt))]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = pu.DETM(s, t).fit(probe=False, check_separation=False)
            diffs.append(r.label_check.difference)
        sd = np.std(diffs, ddof=1)
        assert 0.7 < se / sd < 1.4, (se, sd)


class TestNearTie:
    def test_clear_case_is_silent(self, clear):
        _, res, cats = clear
        chk = res.label_check
        assert LabelAmbiguityWarning not in cats
        assert not chk.near_tie and chk.pvalue < 1e-3
        # the true KL difference is 4 (see the fixture)
        assert chk.difference == pytest.approx(4.0, abs=3 * chk.se)
        assert not any(c == "LabelAmbiguityWarning" for c, _ in res.warnings)
        text = str(res.summary())
        assert "KL(p_s || component 1)" in text and "weakly determined" not in text

    def test_symmetric_components_warn(self):
        # positives N((1, 0), I), negatives N((-1, 0), I): both at KL 0.5 from the source
        df = pu_normal(500, 500, 0.2, [0, 0], [1, 0], [-1, 0], rng=np.random.default_rng(4))
        res, cats = _fit(df, pi_interval="profile")  # (the summary's interval: not the subject)
        assert LabelAmbiguityWarning in cats
        assert res.label_check.near_tie
        assert any(c == "LabelAmbiguityWarning" for c, _ in res.warnings)
        assert "Labelling weakly determined" in str(res.summary())
        # the pi rules: pi-hat (0.86 or 0.14, SE 0.10) is far from 0.5 here, so they are clear
        hi, cats_hi = _fit(df, label_rule="pi>0.5", pi_interval="profile")
        assert LabelAmbiguityWarning not in cats_hi
        assert "vs 0.5" in hi.label_check.compared
        assert "pi-hat" in str(hi.summary()) and "not used by this rule" in str(hi.summary())

    def test_pi_rule_near_half_warns(self):
        df = pu_normal(300, 300, 0.5, [0, 0], [0, 0], [2, 0], rng=np.random.default_rng(8))
        res, cats = _fit(df, label_rule="pi<0.5")
        chk = res.label_check
        assert abs(0.5 - res.pi) < 1.96 * chk.se  # pi-hat within its sampling error of 0.5
        assert chk.near_tie and LabelAmbiguityWarning in cats

    def test_pi_rules_test_equality_by_the_profile_likelihood_ratio(self):
        # session 74's size audit: at a true tie (pi = 0.5, n = m = 500, 600 data sets) the
        # Wald z of pi-hat against 0.5 rejected 8.7% at 5% (z-score 4.1), the profile
        # likelihood ratio (as test_pi(0.5) computes it) 6.0%; the check now uses the latter
        df = pu_normal(500, 500, 0.5, [0, 0], [1.5, 0], [0, 1.5], rng=2000)
        for rule in ("pi>0.5", "pi<0.5"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = pu.DETM.from_formula(F2, data=df).fit(label_rule=rule,
                                                            pi_interval="profile")
            chk, t = res.label_check, res.test_pi(0.5)
            assert "profile likelihood ratio" in chk.compared
            assert chk.z ** 2 == pytest.approx(t.statistic, rel=1e-6)
            assert chk.pvalue == pytest.approx(t.pvalue, rel=1e-6)
            assert np.sign(chk.z) == np.sign(chk.difference)
            # (not the Wald statistic (pi-hat - 0.5)^2 / SE^2: 0.0915 against R(0.5) = 0.0922)
            assert chk.z ** 2 != pytest.approx((chk.difference / chk.se) ** 2, rel=1e-3)

    def test_pi_rules_profile_at_half_from_every_maximum(self):
        # review of session 74: one Newton run at pi = 0.5 from the fit stopped at a lower
        # maximum there (R 5.27, p = 0.022, no warning) where the profile, from the fit's
        # other maxima too, gives R(0.5) = 3.77, p = 0.052: a near tie
        rng = np.random.default_rng(516)
        ms = rng.normal(0, 1, 4)
        mp, mn = ms + rng.normal(0, 0.5, 4), rng.normal(0, 1.5, 4)
        df = pu_normal(150, 150, 0.7, ms, mp, mn, rng=rng)
        f4 = "labeled ~ x1 + x2 + x3 + x4"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = pu.DETM.from_formula(f4, data=df).fit(pi_interval="profile",
                                                        label_rule="pi>0.5")
        chk, t = res.label_check, res.test_pi(0.5)
        assert chk.z ** 2 == pytest.approx(t.statistic, rel=1e-6)
        assert chk.near_tie and t.pvalue > 0.05
        assert any(issubclass(w.category, LabelAmbiguityWarning) for w in caught)

    def test_setm_has_no_label_check(self, clear):
        df, _, _ = clear
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = pu.SETM.from_formula(F2, data=df).fit(probe=False)
        assert s.label_check is None

    def test_label_check_is_immutable_and_pickles(self, clear):
        _, res, _ = clear
        with pytest.raises(AttributeError):
            res.label_check.near_tie = True
        assert pickle.loads(pickle.dumps(res.label_check)) == res.label_check


def test_se_nan_for_degenerate_fit():
    """No SE (hence no near-tie claimed) when pi-hat is at a bound."""
    data = prepare(np.random.default_rng(0).normal(size=(50, 2)),
                   np.random.default_rng(1).normal(size=(50, 2)))
    v = np.r_[-40.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # component 1 has no weight: pi = 0
    assert np.isnan(_label.kl_difference_se(data, v))
    chk = _label.label_check("kl", (1.0, 1.0), float("nan"), 0.0, float("nan"))
    assert not chk.near_tie


class TestMobilePhone:
    """Liu et al., Section 5.2: the KL rule compares 13.74 with 14.20 on these data."""

    @pytest.fixture(scope="class")
    def fits(self):
        df = pu.datasets.load_mobile_pu()
        f = "labeled ~ " + " + ".join(pu.datasets.MOBILE_FEATURES)
        m = pu.DETM.from_formula(f, data=df)
        # (the KL rule is the default; the plain profile interval in the summaries: these
        # tests are about the labelling, and the default bootstrap interval cost 12 s)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kl = m.fit(pi_interval="profile")
        with warnings.catch_warnings(record=True) as caught_hi:
            warnings.simplefilter("always")
            hi = m.fit(label_rule="pi>0.5")
        return kl, [w.category for w in caught], hi, [w.category for w in caught_hi]

    def test_default_fit_says_labelling_weakly_determined(self, fits):
        kl, cats, _, _ = fits
        assert LabelAmbiguityWarning in cats
        assert kl.label_check.near_tie
        assert kl.kl_divergences[0] == pytest.approx(13.7376, abs=1e-3)
        assert kl.kl_divergences[1] == pytest.approx(14.2009, abs=1e-3)
        text = str(kl.summary())
        assert "13.7376" in text and "14.2009" in text and "weakly determined" in text

    def test_paper_labelling_is_clear_and_interval_unchanged(self, fits):
        _, _, hi, cats = fits
        assert LabelAmbiguityWarning not in cats
        ci = hi.conf_int_pi(method="profile")  # the paper's (plain profile) interval
        # Liu et al., Section 5.2: [0.6425, 0.6903]; ours is [0.64254, 0.69022]: rounded to
        # the nearest 4th decimal [0.6425, 0.6902] (README), rounded outward (the convention
        # for confidence limits, and what a grid of step 1e-4 reports as the first points
        # outside) exactly the paper's
        assert (round(ci["lower"], 4), round(ci["upper"], 4)) == (0.6425, 0.6902)
        assert (np.floor(ci["lower"] * 1e4) / 1e4, np.ceil(ci["upper"] * 1e4) / 1e4) == \
            (0.6425, 0.6903)


def test_interval_at_the_half_bound_of_a_pi_rule_reports_that_bound():
    # under label_rule "pi<0.5" / "pi>0.5" pi ranges over one half; a limit that reaches
    # the end of that half is 0.5, as the profile's own interval says (it used to be
    # reported as 1 or 0: [0.261, 1.0] for the profile's [0.261, 0.5])
    rng = np.random.default_rng(1)
    S = pd.DataFrame({"x1": rng.normal(size=150)})
    k = rng.binomial(150, 0.6)
    T = pd.DataFrame({"x1": np.r_[rng.normal(size=k), rng.normal(2, size=150 - k)]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LabelAmbiguityWarning)
        lo = pu.DETM(S, T).fit(label_rule="pi<0.5", pi_interval="profile")
        hi = pu.DETM(S, T).fit(label_rule="pi>0.5", pi_interval="profile")
    for res, end in ((lo, "upper"), (hi, "lower")):
        ci = res.conf_int_pi()
        assert ci.attrs[f"{end}_at_bound"]
        assert ci[end] == 0.5
        np.testing.assert_allclose(ci.to_numpy(), res.profile_pi().conf_int().to_numpy(),
                                   rtol=0, atol=1e-12)
        # the other limit is a crossing of the cut-off
        other = "lower" if end == "upper" else "upper"
        assert res.profile_pi().statistic(ci[other]) == pytest.approx(ci.attrs["cutoff"],
                                                                       abs=1e-6)
    # the two rules are mirror images of one fit
    np.testing.assert_allclose(lo.conf_int_pi().to_numpy(),
                               1 - hi.conf_int_pi().to_numpy()[::-1], atol=1e-8)


def test_pi_rules_profile_from_mirrored_skeletons():
    # the profiles under "pi<0.5" and "pi>0.5" are mirror images (the same EL with the
    # components swapped); the skeleton of "pi>0.5" was on 0.5, 0.6, .., 0.9, not the mirror of
    # "pi<0.5"'s 0.05, 0.15, .., 0.45, and missed the branch the start at 0.05 reaches: upper
    # limit 0.9463 for the mirror's 0.9573, R*(0.95) = 4.31 for R*(0.05) = 3.58 (session 72's
    # metamorphic audit)
    df = pu.simulate.sar_design(404, 224, 0.8, p=3, rng=797688)
    S, T = df.loc[df.labeled == 1, ["x1", "x2", "x3"]], df.loc[df.labeled == 0, ["x1", "x2", "x3"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lo = pu.DETM(S, T).fit(label_rule="pi<0.5", pi_interval="profile")
        hi = pu.DETM(S, T).fit(label_rule="pi>0.5", pi_interval="profile")
    np.testing.assert_allclose(lo.conf_int_pi().to_numpy(),
                               1 - hi.conf_int_pi().to_numpy()[::-1], atol=1e-6)
    assert hi.test_pi(0.95).statistic == pytest.approx(lo.test_pi(0.05).statistic, abs=1e-6)


def test_pi_rules_reach_the_maximum_the_kl_rule_reaches():
    # the maximum of the EL does not depend on the labelling: every rule must report the same
    # llf_penalized. Under "pi<0.5" the probe's skeleton ran on [0.05, 0.45] only and missed
    # the branch that a chain through pi = 0.5 reaches: pi-hat 0.2287 at -4217.1194 where the
    # "kl" fit (and the mirror of its solution) has -4216.8187, pi = 0.8936 (session 72's
    # metamorphic audit)
    df = pu.simulate.sar_design(289, 398, 0.2, p=7, rng=703570)
    cols = [f"x{j}" for j in range(1, 8)]
    S, T = df.loc[df.labeled == 1, cols], df.loc[df.labeled == 0, cols]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kl = pu.DETM(S, T).fit(pi_interval="profile")
        lo = pu.DETM(S, T).fit(label_rule="pi<0.5", pi_interval="profile")
    assert lo.llf_penalized == pytest.approx(kl.llf_penalized, rel=1e-10)
    assert lo.pi == pytest.approx(min(kl.pi, 1 - kl.pi), abs=1e-7)
