"""The floor of the profile of pi (``PiProfiler.floor``, issue 17, session 81): a level the
profile reaches at every pi -- SETM's target distributed as the source, DETM's single-tilt fit
-- so that where the maximum lies within the cut-off of it, the interval is the whole range
without a limit search."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

import puinfer as pu
from puinfer.models.detm import _profile

CUT = float(stats.chi2.ppf(0.95, 1))


@pytest.fixture(scope="module")
def weak():
    """270 rows whose target is the source shifted by 0.6 in x1 (no mixture): pi is not
    determined (pi-hat 0.917, the profile within 2.6 of its maximum everywhere). The fit's
    probe walks the limit searches to both ends of [0, 1] (6.7 CPU s); the intervals after it
    need no search (the default bootstrap-calibrated one 5.4 -> 3.1 s in session 81)."""
    g = np.random.default_rng(13)
    src = pd.DataFrame({"x1": g.normal(size=120), "x2": g.normal(size=120)})
    tgt = pd.DataFrame({"x1": g.normal(0.6, 1, size=150), "x2": g.normal(size=150)})
    return src, tgt


@pytest.fixture(scope="module")
def weak_fit(weak):
    """The default DETM fit of :func:`weak` (plain profile interval), shared: its tests only
    add to its caches."""
    return _fit(pu.DETM, *weak)


def _fit(model, src, tgt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model(src, tgt).fit(pi_interval="profile")


def _single_tilt_by_logistic_regression(data, c):
    """An independent computation of DETM's floor: the single-tilt model (target density the
    source's tilted by ``exp(a + z'b)``) is the logistic regression of the target indicator on
    the standardised features (Qin and Zhang 1997), its log-EL ``l_N - N log N`` the logistic
    log-likelihood less ``m log m + n log n``; with the ridge ``(2 c / 3) |b|^2`` of the
    package's penalty at ``b1 = b2 = b``. Maximised by scipy (BFGS, exact gradient)."""
    X1 = np.column_stack([np.ones(data.N), data.Z])
    y = data.y.astype(float)
    a = 2.0 * c / 3.0

    def neg(v):
        eta = X1 @ v
        ll = y @ eta - np.logaddexp(0.0, eta).sum() - a * v[1:] @ v[1:]
        pr = 1.0 / (1.0 + np.exp(-eta))
        g = X1.T @ (y - pr) - 2 * a * np.r_[0.0, v[1:]]
        return -ll, -g

    r = optimize.minimize(neg, np.zeros(X1.shape[1]), jac=True, method="BFGS",
                          options=dict(gtol=1e-10))
    return -r.fun - data.m * np.log(data.m) - data.n * np.log(data.n)


def test_detm_floor_is_the_single_tilt_fit(weak_fit):
    r = weak_fit
    prof = r._profiler
    ref = _single_tilt_by_logistic_regression(r.model.data, r._fit.penalty_strength)
    assert prof.floor() == pytest.approx(ref, rel=1e-10, abs=0)
    # (the target term, multipliers and ridge of SETM at pi = 0 and of DETM at b1 = b2 are
    # the same; SETM's floor is the target distributed as the source: l_N - N log N at 0)
    s = r.null_fit
    assert s._profiler.floor() == pytest.approx(-s.model.data.N * np.log(s.model.data.N),
                                                rel=1e-14)


def test_where_the_floor_is_within_the_cutoff_no_limit_is_searched(weak_fit, monkeypatch):
    r = weak_fit

    def no_search(self, direction, cutoff):
        raise AssertionError("a limit of the profile was searched")

    # after the fit (whose probe walked to both bounds, as before), an interval at a new
    # cut-off needs no search where R* stays below it everywhere
    monkeypatch.setattr(_profile._PiProfile, "_limit", no_search)
    with pytest.warns(pu.exceptions.ConfidenceSetWarning,
                      match=r"not identified.*R\* is at most 2.5735 \(the cut-off 2.7055\) at every "
                            "pi.*both components one tilt of the source"):
        ci = r.conf_int_pi(0.1, method="profile")
    assert (ci["lower"], ci["upper"]) == (0.0, 1.0)
    assert ci.attrs["lower_at_bound"] and ci.attrs["upper_at_bound"]
    # R* <= 2 (l_max - floor) = 2.57 at every pi (values printed by session 81's script)
    assert ci.attrs["floor_statistic"] == pytest.approx(2.5735317, abs=1e-6)
    assert any("not identified" in msg for _, msg in r.warnings)
    # a cut-off below that bound (80%: 1.64) is searched
    with pytest.raises(AssertionError, match="was searched"):
        r.conf_int_pi(0.2, method="profile")


def test_the_probe_still_walks_to_the_bounds_where_the_floor_holds_every_pi():
    # (session 81) SETM on this sample: the full search stops at pi-hat 0.838, and the
    # probe's walk towards pi = 1 finds the maximum, R* = -0.59 at pi = 0.980 (its third
    # point), though the floor puts every pi in the set: taking the interval from the floor
    # inside the probe lost that maximum
    from puinfer.simulate import scar_design

    df = scar_design(200, 200, 0.95, p=2, rng=np.random.default_rng(47200000))
    X = df[["x1", "x2"]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    s = _fit(pu.SETM, X[lab], X[~lab])
    # (values of the fit before the floor, commit 9f080a4)
    assert s.llf_penalized == pytest.approx(-2396.0668484453076, abs=1e-7)
    assert s.pi == pytest.approx(0.9854930703646496, abs=1e-7)
    with pytest.warns(pu.exceptions.ConfidenceSetWarning, match="the target distributed as "
                      "the source"):
        assert s.conf_int_pi().attrs["floor_statistic"] < CUT


def test_an_undetermined_pi_gets_the_whole_range_where_the_search_failed():
    # scar_design(80, 80, 0.7, p=1) seed 47000004: until session 81 conf_int_pi raised
    # ProfileError (the profile could not be computed at pi = 0.998449, where the limit
    # search went); R* stays below 2.72 at every pi
    from puinfer.simulate import scar_design

    df = scar_design(80, 80, 0.7, p=1, rng=np.random.default_rng(47000004))
    X = df[["x1"]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    r = _fit(pu.DETM, X[lab], X[~lab])
    with pytest.warns(pu.exceptions.ConfidenceSetWarning, match="not identified"):
        ci = r.conf_int_pi(method="profile")
    assert (ci["lower"], ci["upper"]) == (0.0, 1.0)
    assert ci.attrs["floor_statistic"] < CUT


def test_the_profile_lies_above_its_floor(weak_fit):
    r = weak_fit
    prof = r.profile_pi()
    floor = r._profiler.floor()
    for pi in (0.1, 0.3, 0.5, 0.7, 0.9):
        assert prof.loglik(pi) >= floor
        assert prof.statistic(pi) <= prof.floor_statistic()


def test_a_determined_pi_is_searched_as_before():
    # the floor lies beyond the cut-off (R* <= 4.9 at every pi): the limits are the profile's
    # crossings
    df = pu.simulate.sar_design(300, 300, 0.3, p=2, rng=np.random.default_rng(5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pu.DETM.from_formula("labeled ~ x1 + x2", data=df).fit(pi_interval="profile")
    ci = r.conf_int_pi()
    assert ci.attrs["floor_statistic"] > CUT
    assert not ci.attrs["lower_at_bound"] and not ci.attrs["upper_at_bound"]
    prof = r.profile_pi()
    for lim in (ci["lower"], ci["upper"]):
        assert prof.statistic(lim) == pytest.approx(CUT, abs=1e-5)


def test_the_single_tilt_fit_is_left_out_where_setms_maximum_rules_it_out(monkeypatch):
    # SETM's maximum is at least the single-tilt fit's (SETM at pi = 0): where the SCAR test's
    # statistic (69 here) exceeds FLOOR_CEILING_STATISTIC the single tilt is not fitted, and
    # the floor is the target distributed as the source (R* <= 275 at every pi)
    from puinfer.simulate.detm import pu_normal

    def no_tilt(self):
        raise AssertionError("the single-tilt fit was computed")

    monkeypatch.setattr(_profile.PiProfiler, "_single_tilt", no_tilt)
    df = pu_normal(300, 300, 0.5, [0, 0], [2, 0], [0, 2], rng=np.random.default_rng(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pu.DETM.from_formula("labeled ~ x1 + x2", data=df).fit(pi_interval="profile")
    assert 2 * (r.llf_penalized - r.null_fit.llf_penalized) > _profile.FLOOR_CEILING_STATISTIC
    N = r.model.data.N
    ci = r.conf_int_pi()
    assert ci.attrs["floor_statistic"] == pytest.approx(2 * (r.llf_penalized + N * np.log(N)),
                                                        rel=1e-12)


def test_a_profiler_pickled_before_the_floor_gives_its_interval(weak_fit):
    # as unpickled from before session 81: no floor_ceiling of its own, no floor computed,
    # no profile cached; its first interval then computes the floor
    import pickle

    r = weak_fit
    state = pickle.loads(pickle.dumps(r._profiler)).__dict__
    for key in ("floor_ceiling", "_floor", "profile"):
        state.pop(key, None)
    old = object.__new__(_profile.PiProfiler)
    old.__dict__.update(state)
    ci = old.profile.conf_int(0.05)
    assert (ci["lower"], ci["upper"]) == old.profile.bounds
    assert ci.attrs["floor_statistic"] == pytest.approx(2.5735317, abs=1e-6)
