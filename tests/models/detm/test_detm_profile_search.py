"""The limit search of the profile of pi (``_profile._PiProfile``) on a profile with two
branches whose points depend on which solutions are known, as the DETM profile's do: each
point starts from its nearest solved neighbour (and, from every start, from starts that reach
the higher branch only near pi-hat)."""

import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

import puinfer as pu
from puinfer.exceptions import ConvergenceWarning
from puinfer.models.detm import model as detm_model
from puinfer.models.detm._profile import PiProfiler, _PiProfile
from puinfer.simulate import scar_design

CUT = float(stats.chi2.ppf(0.95, 1))
SD = 0.1  # the higher branch: R* = ((pi - 0.5) / SD)^2
GAP = 2.0  # the lower branch lies GAP log-likelihood units below it (R* 4 higher)


class _TwoBranches:
    """What ``_PiProfile`` needs of a ``PiProfiler``: branch "A" with log-likelihood
    ``-((pi - 0.5) / SD)^2 / 2`` up to ``fold`` (it ends there), branch "B" GAP lower
    everywhere. A point reaches the branch of its nearest solved neighbour (A only up to the
    fold); evaluated from every start, also A within ``far_reach - 0.5`` of pi-hat."""

    quick = False
    frontier = None
    _nearest = PiProfiler._nearest  # the profiler's choice of the start

    def __init__(self, solved, fold=1.0, far_reach=0.55, reach_from=None):
        self.solved = dict(solved)
        self.fold, self.far_reach = fold, far_reach
        self.reach_from = reach_from  # from every start, also A at pi >= reach_from
        self.warm_only = False
        self.warm_values: dict = {}
        self.slopes: dict = {}
        self._boundary_runs: dict = {}  # maxima on the label boundary: none
        self.hessians: dict = {}
        self.warnings: list = []
        self.fit = type("Fit", (), {"name": "DETM"})()
        self.calls = 0

    def mirror_start(self, pi):
        return None  # no labelling: no mirror image to start from

    def __call__(self, pi):
        self.calls += 1
        branch = self.solved[self._nearest(pi)]
        if not self.warm_only and (abs(pi - 0.5) <= self.far_reach - 0.5 or (
                self.reach_from is not None and pi >= self.reach_from)):
            branch = "A"
        if abs(pi - 0.5) > self.fold - 0.5:
            branch = "B"
        ll = -0.5 * ((pi - 0.5) / SD) ** 2 - (GAP if branch == "B" else 0.0)
        self.solved[pi] = branch
        self.slopes[pi] = -(pi - 0.5) / SD ** 2
        if self.warm_only:
            self.warm_values[pi] = ll
        return ll

    def slope(self, pi):
        return self.slopes[pi]


def _profile(prof):
    return _PiProfile("pi", 0.5, 0.0, prof, bounds=(1e-6, 1 - 1e-6), step=SD,
                      derivative=prof.slope)


def test_a_limit_is_searched_again_past_points_solved_on_the_lower_branch():
    """Points solved on the lower branch beyond the crossing (as the skeleton's can be) lead
    the search's points near them there; its values jump across the cut-off and it closes in
    on the jump. The points beyond the last one inside the set are then solved again from it:
    the limit is the crossing of the higher branch, 0.5 +- SD sqrt(cut-off)."""
    prof = _TwoBranches({0.5: "A", 0.65: "B", 0.35: "B", 0.9: "B"})
    ci = _profile(prof).conf_int(0.05)
    half = SD * np.sqrt(CUT)
    assert ci["lower"] == pytest.approx(0.5 - half, abs=1e-9)
    assert ci["upper"] == pytest.approx(0.5 + half, abs=1e-9)
    assert not prof.warnings
    # the stale points are forgotten: every solution beyond the limits is now the branch's
    # past the crossing, except those at distances the searches never came back to
    assert all(b == "A" for q, b in prof.solved.items() if abs(q - 0.5) <= half)


def test_a_jump_of_the_profile_itself_is_the_limit():
    """Where the higher branch ends (a fold) inside the set, the profile jumps out of it: the
    jump, found again from the point inside it, is the limit (no warning)."""
    prof = _TwoBranches({0.5: "A"}, fold=0.6)
    ci = _profile(prof).conf_int(0.05)
    assert ci["upper"] == pytest.approx(0.6, abs=1e-9)
    assert ci["lower"] == pytest.approx(0.4, abs=1e-9)
    assert not prof.warnings


def test_a_crossing_costs_no_second_search():
    """Without stale points the searches' every-start check of the limit confirms it: one
    search per side."""
    prof = _TwoBranches({0.5: "A"})
    p = _profile(prof)
    p.conf_int(0.05)
    calls = prof.calls
    assert calls <= 12  # a few Newton steps per side and one evaluation of each limit
    half = SD * np.sqrt(CUT)
    assert p._cache[0.5 + half] == pytest.approx(-CUT / 2, abs=1e-9)


#: a cut-off at which branch B (R* 2 GAP higher than A's) also crosses, at B_CROSS
WIDE_CUT = 9.0
B_CROSS = 0.5 + SD * np.sqrt(WIDE_CUT - 2 * GAP)


def _stale_lower_branch():
    """Stale points on branch B beyond pi-hat; from every start A is reached only just past
    B's crossing (as at SAR seed 62000015's bootstrap lower limit, session 45)."""
    return _TwoBranches({0.5: "A", 0.62: "B", 0.75: "B"}, reach_from=B_CROSS + 1e-4)


def test_a_crossing_of_the_lower_branch_with_the_set_going_on_beyond_it(monkeypatch):
    """Stale points on the lower branch lead the search there, where it crosses the cut-off
    smoothly (a crossing from every start: no jump); the higher branch, reached from no start
    at that limit, goes on beyond it. The check just beyond the limit finds it, and the search
    goes on from there to the higher branch's crossing."""
    prof = _stale_lower_branch()
    ci = _profile(prof).conf_int(0.05, cutoff=WIDE_CUT)
    assert ci["upper"] == pytest.approx(0.5 + SD * np.sqrt(WIDE_CUT), abs=1e-9)
    assert ci["lower"] == pytest.approx(0.5 - SD * np.sqrt(WIDE_CUT), abs=1e-9)
    assert not prof.warnings
    # without the check the search stops at the lower branch's crossing
    p = _profile(_stale_lower_branch())
    monkeypatch.setattr(type(p), "_beyond", lambda self, lim, direction: None)
    assert p.conf_int(0.05, cutoff=WIDE_CUT)["upper"] == pytest.approx(B_CROSS, abs=1e-9)


class _DeepBranch(_TwoBranches):
    """As :class:`_TwoBranches`, and :meth:`PiProfiler.deep` (the point from every start and
    the fit's other local maxima) reaches branch A at every pi."""

    def __init__(self, solved, **kw):
        super().__init__(solved, **kw)
        self.deep_calls = 0

    def deep(self, pi, via=()):
        self.deep_calls += 1
        self.solved[pi] = "A"
        self.slopes[pi] = -(pi - 0.5) / SD ** 2
        return -0.5 * ((pi - 0.5) / SD) ** 2


def test_the_reported_interval_checks_the_point_past_each_limit_from_the_other_maxima():
    """Stale points on the lower branch beyond pi-hat, and no start but the fit's other
    maxima reaches the higher one there (as at SAR seed 47000032's upper limit, session 50):
    the search ends at the lower branch's crossing and no point further out lies inside the
    set. The fit's probe leaves that limit (``deepen(cut)``: nothing further out is inside);
    the reported interval (``past_limits``) checks the point past each limit from the deep
    starts, finds the set going on and follows it to the higher branch's crossing."""
    prof = _DeepBranch({0.5: "A", 0.62: "B", 0.75: "B"})
    p = _profile(prof)
    assert p.conf_int(0.05, cutoff=WIDE_CUT)["upper"] == pytest.approx(B_CROSS, abs=1e-9)
    assert not p.deepen(WIDE_CUT)  # the probe's check: no outside point inside the set
    assert prof.deep_calls == 0
    assert p.deepen(WIDE_CUT, past_limits=True)
    ci = p.conf_int(0.05, cutoff=WIDE_CUT)
    assert ci["upper"] == pytest.approx(0.5 + SD * np.sqrt(WIDE_CUT), abs=1e-9)
    assert ci["lower"] == pytest.approx(0.5 - SD * np.sqrt(WIDE_CUT), abs=1e-9)
    # once per cut-off: the limits are cached as they came out
    calls = prof.deep_calls
    assert not p.deepen(WIDE_CUT, past_limits=True)
    assert prof.deep_calls == calls


def test_a_labelled_maximum_known_beyond_a_limit_inside_the_set_is_reported():
    """``known_outside``: the maxima already found at fixed pi beyond the limits
    (``PiProfiler._maxima``), labelled and with R* below the cut-off, and the converged maxima
    on the label boundary (``PiProfiler._boundary_runs``), are points of the set beyond the
    interval -- reported without evaluating anything."""
    prof = _TwoBranches({0.5: "A"})
    p = _profile(prof)
    ci = p.conf_int(0.05)
    def known(f, theta):
        return SimpleNamespace(f=f, theta=theta)

    prof._maxima = {
        0.9: [known(-1.0, "labelled")],  # R* = 2: inside the set
        0.95: [known(-0.5, "mirror")],  # R* = 1 but the other labelling: no evidence
        0.2: [known(-1.0 - CUT / 2, "labelled"), known(-3.0, "labelled")],  # R* 5.8, 6
        0.5: [known(0.0, "labelled")],  # inside the interval
    }
    prof.labelled = lambda theta, pi: theta == "labelled"
    # maxima on the label boundary (labelled by construction): converged at 0.1 (R* = 2) and
    # at 0.5 (inside the interval); one that did not converge at 0.15 is no evidence
    prof._boundary_runs = {
        (0.1, b"a"): SimpleNamespace(f=-1.0, info=SimpleNamespace(converged=True)),
        (0.15, b"b"): SimpleNamespace(f=-1.0, info=SimpleNamespace(converged=False)),
        (0.5, b"c"): SimpleNamespace(f=0.0, info=SimpleNamespace(converged=True)),
    }
    assert ci["upper"] < 0.9 and ci["lower"] > 0.2
    calls = prof.calls
    assert p.known_outside(0.05) == [0.1, 0.9]
    assert prof.calls == calls  # nothing evaluated
    # at a cut-off of 7 the maximum at 0.2 (R* = 5.84) is inside the set too
    ci7 = p.conf_int(0.05, cutoff=7.0)
    assert ci7["lower"] > 0.2
    assert p.known_outside(0.05, cutoff=7.0) == [0.1, 0.2, 0.9]


def test_a_set_that_keeps_going_on_beyond_its_limits_says_so(monkeypatch):
    """With no search left after one whose limit had the set going on beyond it: the limit,
    with a ConvergenceWarning that says so."""
    monkeypatch.setattr("puinfer.models.detm._profile.FULL_SEARCHES", 0)
    prof = _stale_lower_branch()
    ci = _profile(prof).conf_int(0.05, cutoff=WIDE_CUT)
    assert ci["upper"] == pytest.approx(B_CROSS, abs=1e-9)
    assert [c for c, _ in prof.warnings] == ["ConvergenceWarning"]
    assert "goes on beyond the upper limit" in prof.warnings[0][1]


def test_a_search_that_keeps_ending_on_jumps_says_so(monkeypatch):
    """With no search left after one that ended on a jump, the limit is reported with a
    ConvergenceWarning recorded by the profiler (``conf_int_pi`` issues it)."""
    monkeypatch.setattr("puinfer.models.detm._profile.FULL_SEARCHES", 0)
    prof = _TwoBranches({0.5: "A", 0.65: "B", 0.35: "B", 0.9: "B"})
    _profile(prof).conf_int(0.05)
    assert [c for c, _ in prof.warnings] == ["ConvergenceWarning"] * 2
    assert all("jumps across the cut-off 3.841" in m for _, m in prof.warnings)


@pytest.mark.parametrize("model", ["SETM", "DETM"])
def test_the_probes_convergence_warnings_are_issued_by_fit(monkeypatch, model):
    """A ConvergenceWarning that the fit's own profile probe records (a profile point or limit
    whose search did not converge) is issued by ``fit()``, not only recorded in the results'
    ``warnings`` (session 45: it was recorded only)."""
    real = detm_model.probe_profile
    msg = "the profile fit at pi = 0.123 did not converge from any start (test)"

    def probe(*args, **kwargs):
        restarts, profiler = real(*args, **kwargs)
        if profiler is not None and (ConvergenceWarning.__name__, msg) not in profiler.warnings:
            profiler.warnings.append((ConvergenceWarning.__name__, msg))
        return restarts, profiler

    monkeypatch.setattr(detm_model, "probe_profile", probe)
    df = scar_design(300, 300, 0.5, p=2, rng=np.random.default_rng(3))
    src, tgt = df[df.labeled == 1][["x1", "x2"]], df[df.labeled == 0][["x1", "x2"]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = getattr(pu, model)(src, tgt).fit(pi_interval="profile")
    issued = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert [str(w.message) for w in issued] == [msg]
    assert ("ConvergenceWarning", msg) in res.warnings
    with warnings.catch_warnings():  # the 95% interval the probe left: not issued again
        warnings.simplefilter("error", ConvergenceWarning)
        res.conf_int_pi()


def test_a_warm_start_on_the_mirror_labelling_does_not_end_a_limit():
    # SCAR design, n = m = 200, p = 2, seed 0, fitted from DataFrames: the lower limit's warm
    # chain (each point from its nearest solved neighbour) reached the other labelling at
    # pi = 0.45 and followed the mirror branch down to 0.1237 = 1 - the upper limit, where the
    # labelled profile's R* is 7.1: the interval was (0.124, 0.876). A warm point whose one
    # start is not labelled is now evaluated from every start; the interval is the array
    # fit's (0.359, 0.876), and test_pi agrees with it (session 48)
    df = scar_design(200, 200, 0.3, p=2, rng=np.random.default_rng(0))
    feats = ["x1", "x2"]
    src, tgt = df[df.labeled == 1][feats], df[df.labeled == 0][feats]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frames = pu.DETM(src, tgt).fit(pi_interval="profile")
        arrays = pu.DETM(src.to_numpy(), tgt.to_numpy()).fit(pi_interval="profile")
        ci_f = frames.conf_int_pi(method="profile")
        ci_a = arrays.conf_int_pi(method="profile")
    np.testing.assert_allclose(ci_f.to_numpy(), ci_a.to_numpy(), rtol=0, atol=1e-8)
    cut = stats.chi2.ppf(0.95, 1)
    lo = ci_f["lower"]
    assert 0.3 < lo < 0.4
    assert frames.test_pi(lo - 0.05).statistic > cut > frames.test_pi(lo + 0.05).statistic


def test_a_set_going_on_past_its_limit_is_followed_from_the_fits_other_maxima():
    # Liu et al.'s SAR design, n = m = 1000, pi = 0.7, seed 47100011: fitted from DataFrames
    # the plain upper limit was 0.8413, a crossing of a lower branch (R* = 3.90 at 0.8423 from
    # every start) while R* was below the cut-off at 0.881 ("not an interval"); the fit's
    # sixth local maximum reaches the branch on which the set goes on (R* = 3.36 at 0.8423) --
    # from arrays the limit was 0.9027 (session 48, (F48)). Where a point further out lies
    # inside the set, the point past the limit is now evaluated from more of the fit's
    # maxima, and the search goes on from there: both inputs give 0.9027 (session 49). Since
    # session 50 both inputs fit alike to the last bit
    # (test_detm_speed.py::test_dataframes_and_arrays_fit_alike_to_the_last_bit): the
    # DataFrame fit alone
    from puinfer.simulate import sar_design

    df = sar_design(1000, 1000, 0.7, p=15, rng=np.random.default_rng(47100011))
    X = df[[f"x{j}" for j in range(1, 16)]]
    lab = df.labeled.to_numpy() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pu.DETM(X[lab], X[~lab]).fit(pi_interval="profile")
        ci = r.conf_int_pi(method="profile")
    assert 0.90 < ci["upper"] < 0.91
    # the profile below the new limit is inside the set, just past it outside
    cut = stats.chi2.ppf(0.95, 1)
    assert r.test_pi(0.86).statistic < cut
    assert r.test_pi(ci["upper"] + 2e-3).statistic > cut


def _sar1000_plain_interval(seed, pi):
    """The default DETM fit (from arrays) of a replicate of Liu et al.'s SAR design with n =
    m = 1000 and p = 15, and its plain 95% profile interval for pi."""
    from puinfer.simulate import sar_design

    df = sar_design(1000, 1000, pi, p=15, rng=np.random.default_rng(seed))
    X = df[[f"x{j}" for j in range(1, 16)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pu.DETM(X[lab], X[~lab]).fit(pi_interval="profile")
        return r, r.conf_int_pi(method="profile")


def test_the_points_between_a_limit_and_the_set_going_on_start_from_the_branch_beyond():
    # Liu et al.'s SAR design, n = m = 1000, pi = 0.7, seed 47100008 (session 50, (F50)): the
    # plain upper limit came out at 0.7420, a crossing of a lower branch, while the set goes
    # on at 0.8065 (R* = 0.58). From that point's solution the point 1e-3 past the limit has
    # R* = 3.22 (inside), but the search going on from there evaluated its first point 4e-6
    # past the limit, started (as the nearest solved point) from the limit's own solution on
    # the lower branch: the limit stayed. The solution beyond now starts every point of the
    # search that goes on: the limit is 0.8425, as (F49) had it
    r, ci = _sar1000_plain_interval(47100008, 0.7)
    assert ci["upper"] == pytest.approx(0.842489, abs=1e-5)
    cut = stats.chi2.ppf(0.95, 1)
    assert r.test_pi(0.7755).statistic < cut  # inside the set between the two
    assert r.test_pi(ci["upper"] + 1e-3).statistic > cut


def test_the_reported_upper_limit_goes_on_where_the_fits_other_maxima_put_the_set():
    # SAR design, n = m = 1000, pi = 0.3, seed 47000032 (sessions 50-51): the plain upper
    # limit came out at 0.8728, R* = 3.94 at 0.8738 from every start and no point further out
    # inside the set, while from the fit's other maxima R* = 3.08 there. The reported
    # interval now checks the point past each limit from them; the search goes on from its
    # solution to 0.8841 (the fit and its probe unchanged: pi-hat 0.743170)
    r, ci = _sar1000_plain_interval(47000032, 0.3)
    assert r.params["pi"] == pytest.approx(0.743170, abs=1e-6)
    assert ci["upper"] == pytest.approx(0.884062, abs=1e-5)
    cut = stats.chi2.ppf(0.95, 1)
    assert r.test_pi(0.8738).statistic < cut  # now inside the set: the branch beyond
    prof = r.profile_pi()
    past = ci["upper"] + 1e-3
    deep = 2 * (r.llf_penalized - prof._loglik_at.deep(past))
    assert min(prof.statistic(past), deep) > cut


@pytest.fixture(scope="module")
def unidentified():
    # target drawn as the source (pi not identified), n = m = 150, one feature: the probe
    # could not compute the profile at pi = 0.00344 (no start converged there), and
    # conf_int_pi() raised ProfileError at every level (review, session 60)
    import pandas as pd

    rng = np.random.default_rng(4)
    S = pd.DataFrame({"x1": rng.normal(size=150)})
    T = pd.DataFrame({"x1": rng.normal(size=150)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pu.DETM(S, T).fit(pi_interval="profile")


def test_an_unidentified_pi_gets_its_interval_not_a_profile_error(unidentified):
    res = unidentified
    for alpha in (0.05, 0.2):
        with pytest.warns(pu.exceptions.ConfidenceSetWarning, match="not identified"):
            ci = res.conf_int_pi(alpha)
        assert ci["lower"] == 0.0 and ci["upper"] == 1.0
        assert ci.attrs["lower_at_bound"] and ci.attrs["upper_at_bound"]
    # the summary says both ends are at the bounds (it said "one-sided")
    assert "[0.0000, 1.0000] (both ends at the bounds)" in str(res.summary())
    # R* stays below the cut-off over the whole range, as the interval says
    frame = res.profile_pi().to_frame()
    assert len(frame) > 10 and frame["R"].max() < stats.chi2.ppf(0.8, 1)


def test_a_point_no_start_converges_at_is_bounded_by_its_best_value(unidentified, monkeypatch):
    # where no start converges, the results' profile takes the best value an unconverged run
    # reached (a lower bound of the profile: its R* an upper bound) with a warning; the
    # probe's profiler (bound_unconverged off) leaves the point out (NaN)
    import dataclasses

    from puinfer.base.results import ConvergenceInfo

    res = unidentified
    solve = PiProfiler.solve

    def unconverged(self, pi, theta0, far=False):
        s = solve(self, pi, theta0, far=far)
        if abs(pi - 0.4321) < 1e-12:
            return dataclasses.replace(s, info=ConvergenceInfo(False, 200, "Newton",
                                                               "maximum number of iterations"))
        return s

    monkeypatch.setattr(PiProfiler, "solve", unconverged)
    probe = PiProfiler(res.model.data, res._fit, float(res.bse["pi"]))
    assert np.isnan(probe(0.4321))
    prof = PiProfiler(res.model.data, res._fit, float(res.bse["pi"])).for_results()
    value = prof(0.4321)
    runs = [s.f for (q, _), s in prof._runs.items() if q == 0.4321 and np.isfinite(s.f)]
    assert value == max(runs)
    assert any(c == "ConvergenceWarning" and "lower bound of the profile" in m
               for c, m in prof.warnings)
