"""URC's lab design (issue 14): a random lab set's class counts are multinomial data, so the
default no-shift test is the two-sample LR test of field = lab population base rates.

The statistics are checked against a second, simple implementation: the same joint likelihood
(field histograms, lab cell counts, lab class counts with the lab population's base rates
``pi`` a parameter) maximised directly by scipy in a softmax parametrisation, under H0
(``p_g = pi`` for every group) and H1 (all free)."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import optimize, special, stats

import puinfer as pu
from puinfer.simulate.urc import simulate_urc


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


# ---- the independent implementation ---------------------------------------------------------
def joint_loglik(P, M, pi, L, F, joint):
    """Field multinomials + lab class multinomial (``pi``) + lab cell multinomials (joint)."""
    n = L.sum(1)
    ll = sum(stats.multinomial.logpmf(F[g], F[g].sum(), P[g] @ M) for g in range(F.shape[0]))
    ll += stats.multinomial.logpmf(n, n.sum(), pi)
    if joint:
        ll += sum(stats.multinomial.logpmf(L[i], n[i], M[i]) for i in range(L.shape[0]))
    return ll


def direct_max(L, F, joint, tie=False, fix=None):
    """Maximise :func:`joint_loglik` with scipy. ``tie``: every ``p_g = pi`` (H0);
    ``fix = (g, j, v)``: ``p_g[j] = v`` with the other shares of group g free."""
    k, A = L.shape
    G = F.shape[0]
    M_lab = L / L.sum(1, keepdims=True)
    n_p = 0 if tie else G * (k - 1) - (fix is not None)

    def unpack(x):
        pi = special.softmax(np.r_[0.0, x[:k - 1]])
        i = k - 1
        if tie:
            P = np.tile(pi, (G, 1))
        else:
            z = np.zeros((G, k - 1)).ravel()
            free = np.ones(z.size, bool)
            if fix is not None:
                g, j, v = fix
                free[g * (k - 1):(g + 1) * (k - 1)][0] = False  # one logit less in group g
            z[free] = x[i:i + n_p]
            P = special.softmax(np.column_stack([np.zeros(G), z.reshape(G, k - 1)]), axis=1)
            if fix is not None:  # group g: p_j = v, the others in the ratios of the softmax
                g, j, v = fix
                rest = np.delete(special.softmax(np.r_[0.0, z.reshape(G, k - 1)[g, 1:]]), 0) \
                    if k > 2 else np.array([1.0])
                row = np.empty(k)
                row[j] = v
                row[np.arange(k) != j] = (1 - v) * (rest / rest.sum() if k > 2 else 1.0)
                P[g] = row
        i += n_p
        M = (special.softmax(np.column_stack([np.zeros(k), x[i:].reshape(k, A - 1)]), axis=1)
             if joint else M_lab)
        return P, M, pi

    nx = (k - 1) + n_p + (k * (A - 1) if joint else 0)
    x0 = np.zeros(nx)
    if joint:
        x0[nx - k * (A - 1):] = np.log((L[:, 1:] + 0.5) / (L[:, :1] + 0.5)).ravel()

    def f(x):
        with np.errstate(all="ignore"):
            v = -joint_loglik(*unpack(x), L, F, joint)
        return v if np.isfinite(v) else 1e10

    best = None
    for method in ("BFGS", "Powell", "BFGS"):
        r = optimize.minimize(f, x0 if best is None else best.x, method=method)
        if best is None or r.fun < best.fun:
            best = r
    return -best.fun, unpack(best.x)


# ---- fixtures -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sim2():
    """Binary, two field groups, a random lab set of 250 (lab population base rate 0.4)."""
    return simulate_urc(250, [1500, 1000], lab_base_rates=0.4, field_base_rate=[0.3, 0.45],
                        rng=np.random.default_rng(3), lab_design="random")


@pytest.fixture(scope="module")
def sim3():
    return simulate_urc(300, 2000, lab_base_rates=[0.5, 0.3, 0.2],
                        field_base_rate=[0.45, 0.35, 0.2], rng=np.random.default_rng(4),
                        lab_design="random")


def _fit(sim, lik="joint", design="random", **kw):
    kw.setdefault("lab_pseudocount", 0)  # the MLE: checked against direct maximisation below
    m = _quiet(lambda: pu.URC(sim.lab_pred, sim.lab_y, lab_design=design))
    return _quiet(lambda: m.fit(sim.field_pred, groups=sim.field_group, likelihood=lik, **kw))


def _counts(res):
    return res.model.lab_counts.to_numpy(), res.observed.to_numpy()


# ---- the two-sample test against scipy --------------------------------------------------------
@pytest.mark.parametrize("lik", ["joint", "fixed"])
def test_two_sample_lr_matches_direct_maximisation(sim2, lik):
    res = _fit(sim2, lik)
    L, F = _counts(res)
    l1, _ = direct_max(L, F, lik == "joint")
    l0, (P0, _, pi0) = direct_max(L, F, lik == "joint", tie=True)
    assert res.llf == pytest.approx(l1, abs=1e-6)
    h0 = res.fit_no_shift()
    assert h0.llf == pytest.approx(l0, abs=1e-6)
    assert_allclose(h0.base_rates.to_numpy(), np.tile(pi0, (2, 1)), atol=2e-5)
    t = res.test_no_shift()
    assert t.statistic == pytest.approx(2 * (l1 - l0), abs=2e-6)
    assert t.df == 2  # G (k - 1): H1 has p_1, p_2 and pi; H0 one shared p
    assert t.pvalue == pytest.approx(stats.chi2.sf(2 * (l1 - l0), 2), rel=1e-5)
    assert "lab population" in t.null and t.extra["likelihood"] == lik


def test_two_sample_lr_multiclass_matches_direct_maximisation(sim3):
    res = _fit(sim3)
    L, F = _counts(res)
    l1, _ = direct_max(L, F, True)
    l0, (P0, _, _) = direct_max(L, F, True, tie=True)
    t = res.test_no_shift()
    assert t.df == 2
    assert t.statistic == pytest.approx(2 * (l1 - l0), abs=2e-6)
    assert_allclose(res.fit_no_shift().base_rates.to_numpy(), P0, atol=3e-5)


def test_generic_lr_test_agrees(sim2):
    res = _fit(sim2)
    g = pu.lr_test(res.fit_no_shift(), res)
    t = res.test_no_shift()
    assert g.statistic == pytest.approx(t.statistic, abs=1e-10) and g.df == t.df


def test_llf_is_full_multinomial_of_the_lab_cells(sim2):
    """Random design, joint likelihood: the lab (class, cell) counts are one multinomial over
    k |A| cells with probabilities pi_i M[i, a]; at the MLE pi = n_i / n."""
    res = _fit(sim2)
    L, F = _counts(res)
    M = res.M.to_numpy()
    pi = L.sum(1) / L.sum()
    ll = stats.multinomial.logpmf(L.ravel(), L.sum(), (pi[:, None] * M).ravel())
    ll += sum(stats.multinomial.logpmf(F[g], F[g].sum(), res.base_rates.to_numpy()[g] @ M)
              for g in range(F.shape[0]))
    assert res.llf == pytest.approx(ll, abs=1e-8)
    assert res.nobs == int(L.sum() + F.sum())
    strat = _fit(sim2, design="stratified")
    assert res.df_model == strat.df_model + 1  # pi_lab (k - 1 = 1 free share)


# ---- what separates: base rates, profiles, explicit nulls -------------------------------------
@pytest.mark.parametrize("lik", ["joint", "fixed"])
def test_base_rates_and_intervals_do_not_depend_on_the_design(sim2, lik):
    r, s = _fit(sim2, lik), _fit(sim2, lik, "stratified")
    assert_allclose(r.base_rates.to_numpy(), s.base_rates.to_numpy(), atol=1e-10)
    assert_allclose(r.conf_int().to_numpy(), s.conf_int().to_numpy(), atol=1e-8)
    assert_allclose(r.bse.to_numpy(), s.bse.to_numpy(), rtol=1e-8)
    # an explicit null is a known value under both designs: the same statistic
    for v in (0.4, [0.6, 0.4]):
        assert r.test_no_shift(value=v).statistic == pytest.approx(
            s.test_no_shift(value=v).statistic, abs=1e-8)
    assert r.test_equal_base_rates().statistic == pytest.approx(
        s.test_equal_base_rates().statistic, abs=1e-8)


def test_profile_matches_direct_maximisation_with_pi_free(sim2):
    """pi_lab separates from the base rates: the profile log-likelihood of p_g[1] (URC's) equals
    the direct maximum over (other base rates, M, pi) with p_g[1] fixed."""
    res = _fit(sim2)
    L, F = _counts(res)
    prof = res.profile(group=1, cls=1)
    for v in (0.35, 0.5):
        lv, _ = direct_max(L, F, True, fix=(1, 1, v))
        assert prof.loglik(v) == pytest.approx(lv, abs=1e-6)


def test_stratified_default_null_is_the_lab_sample_shares(sim2):
    s = _fit(sim2, design="stratified")
    shares = s.lab_base_rates.to_numpy()
    assert s.test_no_shift().statistic == pytest.approx(
        s.test_no_shift(value=shares).statistic, abs=1e-10)
    assert "fixed by the stratified design" in s.test_no_shift().null
    assert_allclose(s.fit_no_shift().base_rates.to_numpy(), np.tile(shares, (2, 1)))
    # the random design's statistic is smaller: it allows for the lab share's sampling error
    r = _fit(sim2)
    assert r.test_no_shift().statistic < s.test_no_shift().statistic


def test_prior_centre_is_the_lab_sample_under_both_designs(sim2):
    r, s = _fit(sim2, prior_strength=30), _fit(sim2, "joint", "stratified", prior_strength=30)
    assert_allclose(r.base_rates.to_numpy(), s.base_rates.to_numpy(), atol=1e-10)
    assert_allclose(r.conf_int().to_numpy(), s.conf_int().to_numpy(), atol=1e-8)
    t = r.test_no_shift()
    assert np.isfinite(t.statistic) and t.statistic >= 0 and t.df == 2


# ---- results: summary, pickle, immutability, validation ---------------------------------------
def test_summary_names_the_design(sim2):
    text = str(_fit(sim2).summary())
    assert "Lab design:" in text and "random (class counts multinomial" in text
    assert "no shift (= lab population rates)" in text
    text = str(_fit(sim2, design="stratified").summary())
    assert "stratified (class counts fixed by design)" in text
    assert "no shift (= lab rates)" in text


def test_pooled_fit_pickles_and_is_immutable(sim2):
    res = _fit(sim2)
    h0 = res.fit_no_shift()
    assert h0.constraint.kind == "pooled" and h0.lab_design == "random"
    back = pickle.loads(pickle.dumps(h0))
    assert back.llf == h0.llf
    assert_allclose(back.base_rates.to_numpy(), h0.base_rates.to_numpy())
    with pytest.raises(AttributeError):
        h0.llf = 0.0
    r2 = pickle.loads(pickle.dumps(res))
    assert r2.test_no_shift().statistic == pytest.approx(res.test_no_shift().statistic)
    assert r2.lab_design == "random" and r2.model.lab_design == "random"


@pytest.mark.parametrize("bad", ["Random", "strat", None, 1])
def test_bad_lab_design(sim2, bad):
    with pytest.raises(ValueError, match="lab_design"):
        pu.URC(sim2.lab_pred, sim2.lab_y, lab_design=bad)


def test_simulator_lab_design():
    rng = np.random.default_rng(0)
    counts = [np.bincount(simulate_urc(200, 10, lab_base_rates=0.3, rng=rng,
                                       lab_design="random").lab_y, minlength=2)[1]
              for _ in range(200)]
    # Binomial(200, 0.3): mean 60, sd 6.5 (MC SE of the mean 0.46, of the sd ~0.33)
    assert abs(np.mean(counts) - 60) < 2.0 and 4.5 < np.std(counts) < 8.5
    strat = simulate_urc(200, 10, lab_base_rates=0.3, rng=rng)
    assert np.bincount(strat.lab_y)[1] == 60
    with pytest.raises(ValueError, match="lab_design"):
        simulate_urc(200, 10, lab_design="other")


def test_inputs_not_modified_and_index_kept(sim2):
    lp = pd.Series(sim2.lab_pred.copy(), index=np.arange(250) * 2)
    ly = pd.Series(sim2.lab_y.copy(), index=np.arange(250) * 2)
    before = (lp.copy(), ly.copy())
    res = _quiet(lambda: pu.URC(lp, ly).fit(sim2.field_pred[:1000]))
    res.test_no_shift()
    pd.testing.assert_series_equal(lp, before[0])
    pd.testing.assert_series_equal(ly, before[1])


# ---- the bootstrap Bartlett correction of the profile cut-off ---------------------------------
def test_bartlett_interval_solves_the_corrected_cutoff(sim3):
    res = _fit(sim3)
    ci = res.conf_int(kind="bartlett", n_boot=40, rng=5)
    again = res.conf_int(kind="bartlett", n_boot=40, rng=5)
    pd.testing.assert_frame_equal(ci, again)  # reproducible from the seed
    f = res.bartlett_factors(n_boot=40, rng=5)
    assert_allclose(ci["factor"].to_numpy(), f.to_numpy())
    assert f.attrs["n_usable"] == 40
    cut = stats.chi2.ppf(0.95, 1)
    plain = res.conf_int()
    for (g, cls), row in ci.iterrows():
        prof = res.profile(cls=cls)
        for lim in ("lower", "upper"):
            assert prof.statistic(row[lim]) == pytest.approx(row["factor"] * cut, abs=1e-4)
        # a factor above 1 widens the interval, below 1 narrows it
        wider = row["factor"] > 1
        assert (row["lower"] < plain.loc[(g, cls), "lower"]) == wider
        assert (row["upper"] > plain.loc[(g, cls), "upper"]) == wider
    # at alpha = 0.5 too, where a factor below 1 puts the cut-off below chi2_{1, 0.5} = 0.455
    # (session 69's audit: the cut-off was turned into a level clipped to 0.5, giving the
    # plain interval there)
    half = res.conf_int(0.5, kind="bartlett", n_boot=40, rng=5)
    assert (half["factor"] < 1).any()
    for (_, cls), row in half.iterrows():
        prof = res.profile(cls=cls)
        for lim in ("lower", "upper"):
            assert prof.statistic(row[lim]) == pytest.approx(
                row["factor"] * stats.chi2.ppf(0.5, 1), abs=1e-4)


def test_bartlett_cutoff_is_at_least_chi_square_where_the_rate_is_on_the_boundary():
    # session 85's audit: at a base rate estimated at 0 the bootstrap world is at 0, R* is
    # about 0 in nearly every resample, and the factor 0.006 gave an interval 130 times
    # narrower than the profile's (coverage 64% at a true rate of 0.01)
    sim = simulate_urc(n_lab=200, n_field=400, field_base_rate=0.0, separation=3,
                       rng=np.random.default_rng(4), lab_design="random")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pu.URC(sim.lab_pred, sim.lab_y, n_bins=6).fit(sim.field_pred)
        f = res.bartlett_factors(n_boot=60, rng=1)
        ci = res.conf_int(kind="bartlett", n_boot=60, rng=1)
    assert res.base_rate.iloc[0] < 1e-6
    assert f.iloc[0] < 0.1 and f.attrs["boundary_share"][0] > 0.5  # (the raw factor)
    assert ci["factor"].iloc[0] == 1.0
    assert ci["boundary_share"].iloc[0] == f.attrs["boundary_share"][0]
    assert_allclose(ci[["lower", "upper"]].to_numpy(), res.conf_int().to_numpy(), atol=1e-9)


def test_bartlett_factor_near_one_in_large_samples():
    """With 20,000 lab items the profile statistic is chi-square(1): E R = 1. Over 3 classes x
    150 resamples the mean has sd about sqrt(2 / 450) = 0.067 (less the correlation)."""
    s = simulate_urc(20000, 20000, lab_base_rates=[0.5, 0.3, 0.2],
                     field_base_rate=[0.4, 0.4, 0.2], rng=np.random.default_rng(8),
                     lab_design="random")
    res = _fit(s)
    f = res.bartlett_factors(n_boot=150, rng=1)
    assert abs(f.mean() - 1) < 0.25
    assert np.all((f > 0.6) & (f < 1.4))


def test_bartlett_bad_arguments(sim2):
    res = _fit(sim2)
    with pytest.raises(ValueError, match="n_boot"):
        res.conf_int(kind="bartlett", n_boot=1)
    with pytest.raises(TypeError, match="rng"):
        res.conf_int(kind="bartlett", rng="x")
    with pytest.raises(ValueError, match="unrestricted"):
        res.fit_no_shift().bartlett_factors()
    with pytest.raises(ValueError, match="kind"):
        res.conf_int(kind="bootstrap")


@pytest.mark.parametrize("design", ["random", "stratified"])
def test_no_shift_bartlett_reference(sim3, design):
    res = _fit(sim3, design=design)
    t = res.test_no_shift()
    tb = res.test_no_shift(reference="bartlett", n_boot=30, rng=3)
    assert tb.df == t.df
    factor = float(tb.extra["Bartlett factor (bootstrap mean / df)"])
    assert tb.statistic == pytest.approx(t.statistic / factor, rel=1e-3)  # factor printed to 4 dp
    assert tb.pvalue == pytest.approx(stats.chi2.sf(tb.statistic, t.df), rel=1e-10)
    assert tb.extra["bootstrap resamples"] == "30 of 30 usable"
    again = res.test_no_shift(reference="bartlett", n_boot=30, rng=3)
    assert again.statistic == tb.statistic
    # an explicit null works too
    tv = res.test_no_shift(value=[0.5, 0.3, 0.2], reference="bartlett", n_boot=10, rng=1)
    assert np.isfinite(tv.pvalue)


def test_no_shift_bartlett_factor_near_one_in_large_samples():
    """Large lab and field sets: the LR statistic is chi-square(2), mean 2; over 150 resamples
    its mean has sd 2 / sqrt(150) = 0.16, the factor (mean / 2) sd 0.08."""
    s = simulate_urc(20000, 20000, lab_base_rates=[0.5, 0.3, 0.2],
                     field_base_rate=[0.5, 0.3, 0.2], rng=np.random.default_rng(9),
                     lab_design="random")
    tb = _fit(s).test_no_shift(reference="bartlett", n_boot=150, rng=2)
    assert abs(float(tb.extra["Bartlett factor (bootstrap mean / df)"]) - 1) < 0.25


def test_no_shift_bartlett_bad_arguments(sim2):
    res = _fit(sim2)
    with pytest.raises(ValueError, match="reference"):
        res.test_no_shift(reference="bootstrap")
    with pytest.raises(ValueError, match="n_boot"):
        res.test_no_shift(reference="bartlett", n_boot=0)
    with pytest.raises(ValueError, match="unrestricted"):
        res.fit_no_shift().test_no_shift(reference="bartlett")


def test_default_n_bins_keeps_lab_cells_filled():
    from puinfer.models.urc.model import default_n_bins

    # the paper's 4 intervals (binary) / 2 per class, reduced while n_lab / (k |A|) < 15
    assert [default_n_bins(n, 2, True) for n in (10, 100, 119, 120, 1000)] == [2, 3, 3, 4, 4]
    assert [default_n_bins(n, 3, False) for n in (100, 269, 270, 1000)] == [1, 1, 2, 2]
    for n, k, binary in ((100, 2, True), (120, 2, True), (100, 3, False), (300, 3, False)):
        A = default_n_bins(n, k, binary) * (1 if binary else k)
        assert n / (k * A) >= 15 or A == (2 if binary else k)
    sim = simulate_urc(n_lab=100, n_field=500, lab_base_rates=[0.5, 0.3, 0.2],
                       field_base_rate=[0.5, 0.3, 0.2], rng=np.random.default_rng(3))
    m = _quiet(lambda: pu.URC(sim.lab_pred, sim.lab_y))
    assert m.partition.n_cells == 3 and "reduced" in m.n_bins_choice
    given = _quiet(lambda: pu.URC(sim.lab_pred, sim.lab_y, n_bins=2))
    assert given.partition.n_cells == 6 and given.n_bins_choice == "given"


# ---- Rao's score test of no shift (the default of a penalised fit) ---------------------------
def _score_by_hand(P0, M, F, n=None):
    """Score statistic of the fixed likelihood (``M`` known), written out: field multinomials in
    ``p_g`` (last class eliminated), and under a random design's pooled null also the lab class
    counts ``n`` in the lab population's shares ``pi = P0[0]``; expected information."""
    G, k = P0.shape
    U, blocks = [], []
    for g in range(G):
        q = P0[g] @ M
        dM = M[:-1] - M[-1]                       # d q / d p_j, j < k - 1
        U.append(dM @ (F[g] / q))
        blocks.append(F[g].sum() * (dM / q) @ dM.T)
    if n is not None:
        pi = P0[0]
        U.append(n[:-1] / pi[:-1] - n[-1] / pi[-1])
        blocks.append(n.sum() * (np.diag(1 / pi[:-1]) + 1 / pi[-1]))
    U = np.concatenate(U)
    size = sum(b.shape[0] for b in blocks)
    info = np.zeros((size, size))
    at = 0
    for b in blocks:
        info[at:at + b.shape[0], at:at + b.shape[0]] = b
        at += b.shape[0]
    return float(U @ np.linalg.solve(info, U))


@pytest.mark.parametrize("design", ["random", "stratified"])
def test_score_statistic_matches_hand_computation(sim3, sim2, design):
    for sim in (sim2, sim3):
        res = _fit(sim, "fixed", design)
        L, F = _counts(res)
        M = L / L.sum(axis=1, keepdims=True)
        h0 = res.fit_no_shift()
        P0 = h0.base_rates.to_numpy()
        t = res.test_no_shift(statistic="score")
        n = L.sum(axis=1) if design == "random" else None
        assert t.statistic == pytest.approx(_score_by_hand(P0, M, F, n), rel=1e-8)
        assert t.df == F.shape[0] * (M.shape[0] - 1)
        assert t.pvalue == pytest.approx(stats.chi2.sf(t.statistic, t.df), rel=1e-10)
        # an explicit null value: the field multinomials only (pi separates)
        v = np.full(M.shape[0], 1 / M.shape[0])
        t = res.test_no_shift(v, statistic="score")
        assert t.statistic == pytest.approx(
            _score_by_hand(np.tile(v, (F.shape[0], 1)), M, F), rel=1e-8)


@pytest.mark.parametrize("design", ["random", "stratified"])
def test_score_and_lr_agree_in_large_samples(design):
    # asymptotically equivalent under local alternatives (joint likelihood, Firth's counts)
    s = simulate_urc(3000, 20000, lab_base_rates=[0.5, 0.3, 0.2],
                     field_base_rate=[0.45, 0.33, 0.22], rng=np.random.default_rng(5),
                     lab_design=design)
    r = _quiet(lambda: pu.URC(s.lab_pred, s.lab_y, lab_design=design).fit(s.field_pred))
    lr, sc = r.test_no_shift(), r.test_no_shift(statistic="score")
    assert lr.method.endswith("likelihood-ratio test of no prior shift")  # URC's default
    assert sc.statistic == pytest.approx(lr.statistic, rel=0.03)
    assert 3 < sc.statistic < 30


def test_score_bad_arguments(sim2):
    res = _fit(sim2)
    with pytest.raises(ValueError, match="statistic"):
        res.test_no_shift(statistic="wald")
    with pytest.raises(ValueError, match="chi-square reference only"):
        res.test_no_shift(statistic="score", reference="bartlett")
