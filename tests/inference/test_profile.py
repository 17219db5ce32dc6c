"""Profile likelihood on a case with a known answer."""

import numpy as np
import pytest
from scipy import stats

from puinfer.inference import Profile, ProfileError


def _quadratic(mu, sigma):
    return lambda v: -((v - mu) ** 2) / (2 * sigma**2)


def test_quadratic_profile_gives_wald_interval():
    prof = Profile("theta", 0.4, 0.0, _quadratic(0.4, 0.05), bounds=(0, 1), step=0.05)
    ci = prof.conf_int(0.05)
    z = stats.norm.ppf(0.975)
    assert ci["lower"] == pytest.approx(0.4 - z * 0.05, abs=1e-9)
    assert ci["upper"] == pytest.approx(0.4 + z * 0.05, abs=1e-9)
    assert not ci.attrs["lower_at_bound"] and not ci.attrs["upper_at_bound"]


def test_one_sided_at_bound():
    prof = Profile("theta", 0.02, 0.0, _quadratic(0.02, 0.05), bounds=(0, 1), step=0.05)
    ci = prof.conf_int(0.05)
    assert ci["lower"] == 0 and ci.attrs["lower_at_bound"]
    assert ci["upper"] == pytest.approx(0.02 + stats.norm.ppf(0.975) * 0.05, abs=1e-9)


def test_higher_profile_raises():
    prof = Profile("theta", 0.4, -1.0, _quadratic(0.4, 0.05), bounds=(0, 1))
    with pytest.raises(ProfileError):
        prof.statistic(0.4)


def test_grid_and_bad_level():
    prof = Profile("theta", 0.4, 0.0, _quadratic(0.4, 0.05), bounds=(0, 1), step=0.05)
    df = prof.to_frame(n=11)
    assert df["R"].min() == pytest.approx(0.0)
    assert np.all(np.diff(df["value"]) > 0)
    with pytest.raises(ValueError, match="alpha"):
        prof.conf_int(1.5)
    # (session 69: n=0 gave numpy's linspace error, n=2.5 a TypeError from deep inside)
    with pytest.raises(ValueError, match="n must be >= 2"):
        prof.to_frame(n=0)
    with pytest.raises(TypeError, match="n must be an integer"):
        prof.to_frame(n=2.5)


def test_estimate_on_the_bound_is_one_sided():
    # e.g. SETM on SAR data: pi-hat ~ 1e-14, below the smallest profiled value
    prof = Profile("theta", 0.0, 0.0, _quadratic(0.0, 0.05), bounds=(0, 1), step=0.05)
    ci = prof.conf_int(0.05)
    assert ci["lower"] == 0 and ci.attrs["lower_at_bound"]
    assert ci["upper"] == pytest.approx(stats.norm.ppf(0.975) * 0.05, abs=1e-9)


def test_newton_escapes_a_saddle():
    from puinfer.base.optimize import newton_maximize

    # f = -x^4 + x^2 - y^2 has a saddle at the origin and maxima at x = +-1/sqrt(2)
    def fun(z, order):
        x, y = z
        f = -(x**4) + x**2 - y**2
        if order == 0:
            return f
        g = np.array([-4 * x**3 + 2 * x, -2 * y])
        H = np.array([[-12 * x**2 + 2, 0.0], [0.0, -2.0]])
        return f, g, H

    z, f, g, H, info = newton_maximize(fun, np.array([0.0, 0.3]))
    assert info.converged
    np.testing.assert_allclose(abs(z[0]), 1 / np.sqrt(2), rtol=1e-8)
    assert f == pytest.approx(0.25)
    assert np.all(np.diff(info.trace) >= 0)


# -- issue 13: every argument is checked, naming it -------------------------------------------
@pytest.mark.parametrize("kw, err, match", [
    (dict(estimate=float("nan")), ValueError, "estimate"),
    (dict(llf_max=float("nan")), ValueError, "llf_max"),
    (dict(estimate="0.4"), TypeError, "estimate must be a real number"),
    (dict(loglik_at=3.0), TypeError, "loglik_at must be a function"),
    (dict(bounds=(float("nan"), 1.0)), ValueError, "bounds must be finite"),
    (dict(bounds=(1.0, 0.0)), ValueError, "bounds must be finite with lower < upper"),
    (dict(bounds=0.5), TypeError, "bounds must be a pair"),
    (dict(step=-0.1), ValueError, "step must be positive"),
    (dict(step="big"), TypeError, "step must be a real number"),
    (dict(tol=float("nan")), ValueError, "tol must be finite"),
    (dict(name=3), TypeError, "name must be a string"),
])
def test_profile_arguments_checked(kw, err, match):
    args = dict(name="theta", estimate=0.4, llf_max=0.0, loglik_at=_quadratic(0.4, 0.05),
                bounds=(0, 1), step=0.05)
    args.update(kw)
    with pytest.raises(err, match=match):
        Profile(**args)


def test_profile_missing_step_means_default_and_nan_value_refused():
    prof = Profile("theta", 0.4, 0.0, _quadratic(0.4, 0.05), bounds=(0, 1), step=float("nan"))
    assert prof.step == 0.01
    ci = prof.conf_int(0.05)
    ref = Profile("theta", 0.4, 0.0, _quadratic(0.4, 0.05), bounds=(0, 1), step=0.05).conf_int()
    np.testing.assert_allclose(ci, ref, rtol=1e-9)
    with pytest.raises(ValueError, match="value is NaN"):
        prof.statistic(float("nan"))
    with pytest.raises(TypeError, match="alpha must be a number"):
        prof.conf_int("0.05")


# -- issue 15: the profile prints and renders its interval as a table ----------------------------
def test_profile_html_table_holds_the_interval(read_table):
    p = Profile("pi", 0.3, 0.0, _quadratic(0.3, 0.05), bounds=(0.0, 1.0), step=0.05)
    caption, rows = read_table(p._repr_html_())
    assert caption == "Profile likelihood of pi"
    assert all([c[0] for c in r] == ["th", "td"] for r in rows)
    table = {r[0][1]: r[1][1] for r in rows}
    assert float(table["estimate"]) == 0.3
    # a quadratic log-likelihood: the profile interval is the Wald interval 0.3 -/+ 1.96 * 0.05
    lo, hi = (float(v) for v in table["profile-likelihood interval"].strip("[]").split(","))
    z = stats.norm.ppf(0.975)
    assert lo == pytest.approx(0.3 - z * 0.05, rel=1e-5) and hi == pytest.approx(0.3 + z * 0.05,
                                                                                rel=1e-5)
    assert table["level"] == "95%"
    assert float(table["cut-off"].split()[0]) == pytest.approx(stats.chi2.ppf(0.95, 1), abs=1e-4)
    n_eval = int(table["evaluations"].split()[0])
    assert n_eval == len(p._cache) > 0
    # the plain text holds the same rows
    text = str(p)
    assert text.splitlines()[0] == "Profile likelihood of pi"
    assert f"[{lo:.6g}, {hi:.6g}]" in text and "95%" in text
    assert repr(p).startswith("<Profile of pi: estimate 0.3")


def test_profile_html_one_sided_and_failed_interval(read_table):
    p = Profile("pi", 0.0, 0.0, _quadratic(0.0, 0.05), bounds=(0.0, 1.0), step=0.05)
    _, rows = read_table(p._repr_html_())
    interval = dict((r[0][1], r[1][1]) for r in rows)["profile-likelihood interval"]
    assert interval.startswith("[0 (bound), ") and interval.endswith("one-sided")
    # a flat profile: both limits at the bounds is not "one-sided" (session 68's audit)
    flat = Profile("pi", 0.5, 0.0, lambda v: 0.0, bounds=(0.0, 1.0), step=0.05)
    _, rows = read_table(flat._repr_html_())
    interval = dict((r[0][1], r[1][1]) for r in rows)["profile-likelihood interval"]
    assert interval.startswith("[0 (bound), 1 (bound)]") and "both ends at the bounds" in interval
    assert "one-sided" not in interval and "both ends at the bounds" in str(flat)
    # a profile above the maximum: the table says why there is no interval (no exception)
    bad = Profile("pi", 0.3, 0.0, lambda v: 1.0, bounds=(0.0, 1.0))
    _, rows = read_table(bad._repr_html_())
    interval = dict((r[0][1], r[1][1]) for r in rows)["profile-likelihood interval"]
    assert interval.startswith("not available:") and "had not converged" in interval


def test_curve_has_gaps_where_the_profile_cannot_be_computed():
    # session 67's audit: the plot's grid reaches the bound, where this profile is NaN;
    # to_frame() and plot() raised ProfileError after conf_int() had succeeded
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k, n = 3, 6

    def ll(p):
        return np.nan if p <= 0 or p >= 1 else k * np.log(p) + (n - k) * np.log1p(-p)

    pr = Profile("p", 0.5, ll(0.5), ll, bounds=(0, 1), step=0.2)
    ci = pr.conf_int()
    frame = pr.to_frame()
    assert frame["value"].iloc[0] == 0.0 and np.isnan(frame["R"].iloc[0])
    inside = frame["value"].between(0.01, 0.99)
    assert frame.loc[inside, "R"].notna().all()
    # (the binomial likelihood-ratio statistic, by hand)
    v = frame.loc[inside, "value"].to_numpy()
    np.testing.assert_allclose(frame.loc[inside, "R"], 2 * (ll(0.5) - np.array([ll(x) for x in v])),
                               rtol=1e-12)
    fig, ax = plt.subplots()
    assert pr.plot(ax=ax) is ax and ci["lower"] > 0
    plt.close(fig)


@pytest.mark.parametrize("n, err, match", [
    # -1, 0 and True searched no point and reported none inside; "4" and 2.5 failed inside
    # numpy without naming n
    (-1, ValueError, "n must be >= 1; got -1"),
    (0, ValueError, "n must be >= 1; got 0"),
    (True, TypeError, "n must be an integer; got True"),
    ("4", TypeError, "n must be an integer; got '4'"),
    (2.5, TypeError, "n must be an integer; got 2.5"),
])
def test_outside_points_n_checked(n, err, match):
    # a second maximum beyond the upper limit: the confidence set is not an interval
    def ll(v):
        return max(-((v - 0.3) ** 2) / (2 * 0.05**2), -((v - 0.8) ** 2) / (2 * 0.05**2) - 1.0)

    prof = Profile("theta", 0.3, 0.0, ll, bounds=(0, 1), step=0.05)
    with pytest.raises(err, match=match):
        prof.outside_points(n=n)
    found = prof.outside_points(n=4)
    assert found and all(v > prof.conf_int()["upper"] for v in found)
    assert prof.outside_points(n=np.int64(4)) == found


@pytest.mark.parametrize("true_value, err", [("0.2", TypeError), (True, TypeError),
                                             (float("nan"), ValueError),
                                             (float("inf"), ValueError)])
def test_plot_true_value_must_be_a_finite_number(true_value, err):
    # "0.2" failed in the legend's format ("Unknown format code 'g'"), NaN and inf drew no line
    import matplotlib.pyplot as plt

    prof = Profile("theta", 0.4, 0.0, _quadratic(0.4, 0.05), bounds=(0, 1), step=0.05)
    fig, ax = plt.subplots()
    with pytest.raises(err, match="true_value must be a finite number; got "):
        prof.plot(ax=ax, true_value=true_value)
    ax.clear()
    prof.plot(ax=ax, true_value=np.float64(0.45))
    assert "true 0.45" in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)


# -- issue 17, session 81: a floor of the profile (a level it reaches at every value) -----------

def _counted(fun):
    calls = []

    def wrapped(v):
        calls.append(v)
        return fun(v)
    return wrapped, calls


def test_a_floor_within_the_cutoff_gives_the_whole_range_without_a_search():
    # the profile of a quadratic that levels off at -1.5 (R <= 3 everywhere, below 3.84)
    loglik, calls = _counted(lambda v: max(_quadratic(0.4, 0.05)(v), -1.5))
    floor_calls = []
    prof = Profile("theta", 0.4, 0.0, loglik, bounds=(0, 1), step=0.05,
                   floor=lambda: floor_calls.append(1) or -1.5)
    ci = prof.conf_int(0.05)
    assert (ci["lower"], ci["upper"]) == (0.0, 1.0)
    assert ci.attrs["lower_at_bound"] and ci.attrs["upper_at_bound"]
    assert ci.attrs["floor_statistic"] == 3.0
    assert calls == []  # no point of the profile evaluated
    # a cut-off below the bound: the limits searched as without a floor (R = 2 where the
    # quadratic is 1 below its top: 0.4 -+ sqrt(2) 0.05)
    ci2 = prof.conf_int(cutoff=2.0)
    np.testing.assert_allclose([ci2["lower"], ci2["upper"]],
                               [0.4 - np.sqrt(2) * 0.05, 0.4 + np.sqrt(2) * 0.05], atol=1e-9)
    assert calls and floor_calls == [1]  # the floor computed once


def test_a_floor_within_rounding_of_the_cutoff_is_not_taken_as_below_it():
    # R's bound 3.841458820694124 - 1e-9: within the rounding of R of chi2_1's 95% quantile
    cut = float(stats.chi2.ppf(0.95, 1))
    prof = Profile("theta", 0.4, 0.0, lambda v: max(_quadratic(0.4, 0.05)(v), -cut / 2),
                   bounds=(0, 1), step=0.05, floor=-(cut - 1e-9) / 2)
    ci = prof.conf_int(0.05)
    assert not ci.attrs["lower_at_bound"] and not ci.attrs["upper_at_bound"]


@pytest.mark.parametrize("floor, match", [("low", "floor must be a real number"),
                                          (True, "floor must be a real number")])
def test_profile_floor_checked(floor, match):
    with pytest.raises(TypeError, match=match):
        Profile("theta", 0.4, 0.0, _quadratic(0.4, 0.05), floor=floor)


def test_no_floor_or_a_nan_one_changes_nothing():
    ref = Profile("theta", 0.4, 0.0, _quadratic(0.4, 0.05), step=0.05).conf_int()
    for floor in (None, float("nan"), lambda: float("-inf")):
        ci = Profile("theta", 0.4, 0.0, _quadratic(0.4, 0.05), step=0.05,
                     floor=floor).conf_int()
        np.testing.assert_array_equal(ci, ref)
        assert "floor_statistic" not in ci.attrs


def _bimodal(depth: float, m2: float = 0.4, curv: float = 800.0):
    """A profile log-likelihood with its maximum at 0.9 and a narrow second mode at ``m2``
    whose R is ``depth`` (analytic: the two modes' quadratic pieces, the larger one taken),
    with its slope."""
    def ll(v):
        return max(-50.0 * (v - 0.9) ** 2, -depth / 2 - curv * (v - m2) ** 2)

    def slope(v):
        a, b = -50.0 * (v - 0.9) ** 2, -depth / 2 - curv * (v - m2) ** 2
        return -100.0 * (v - 0.9) if a >= b else -2 * curv * (v - m2)

    return ll, slope


@pytest.mark.parametrize("with_slope", [True, False])
@pytest.mark.parametrize("m2", [0.4, 0.3, 0.1, 0.05])
def test_hull_finds_the_second_part_of_the_set(with_slope, m2):
    # the second part [m2 -+ sqrt((cut - 1) / 1600)] lies between hull's points (0.528,
    # 0.352, 0.176 beyond the limit 0.704) or beyond the last of them (m2 = 0.1, 0.05: the
    # review of session 83 found those missed, the search confined to the segment where R
    # was seen to fall)
    ll, slope = _bimodal(1.0, m2)
    prof = Profile("p", 0.9, 0.0, ll, bounds=(0.0, 1.0), step=0.1,
                   derivative=slope if with_slope else None)
    cut = stats.chi2.ppf(0.95, 1)
    ci = prof.conf_int()
    # the limit search from the estimate stops at the first crossing: 0.9 - sqrt(cut / 100)
    assert ci["lower"] == pytest.approx(0.9 - np.sqrt(cut / 100), abs=1e-8)
    h = prof.hull()
    assert all(prof.statistic(v) > cut for v in np.linspace(ci["lower"], 0, 5)[1:-1])
    assert not h.attrs["interval"] and abs(h.attrs["inside_beyond"][0] - m2) < 0.05
    assert h["lower"] == pytest.approx(m2 - np.sqrt((cut - 1.0) / 1600), abs=1e-8)
    assert h["upper"] == ci["upper"] and h.attrs["upper_at_bound"] == ci.attrs["upper_at_bound"]


def test_hull_reads_the_slope():
    # R rises at each of hull's points (13.8, 28.0, 52.4): only the slope at 0.352, falling
    # towards the bound, shows the narrow part [0.283, 0.317] beyond it
    ll, slope = _bimodal(1.0, 0.3, 5000.0)
    cut = stats.chi2.ppf(0.95, 1)
    with_slope = Profile("p", 0.9, 0.0, ll, step=0.1, derivative=slope).hull()
    assert with_slope["lower"] == pytest.approx(0.3 - np.sqrt((cut - 1.0) / 10000), abs=1e-8)
    without = Profile("p", 0.9, 0.0, ll, step=0.1).hull()
    assert without.attrs["interval"]  # (a check, not a proof: values alone miss it)


def test_hull_above_the_estimate():
    def ll(v):
        return max(-50.0 * (v - 0.1) ** 2, -0.5 - 800.0 * (v - 0.9) ** 2)

    def slope(v):
        a, b = -50.0 * (v - 0.1) ** 2, -0.5 - 800.0 * (v - 0.9) ** 2
        return -100.0 * (v - 0.1) if a >= b else -1600.0 * (v - 0.9)

    cut = stats.chi2.ppf(0.95, 1)
    h = Profile("p", 0.1, 0.0, ll, step=0.1, derivative=slope).hull()
    assert h["lower"] == 0.0 and h["upper"] == pytest.approx(0.9 + np.sqrt((cut - 1) / 1600))


@pytest.mark.parametrize("second", [6.0, None])
def test_hull_of_an_interval_is_the_interval(second):
    # the second mode's R above the cut-off (6), or no second mode: the set is an interval
    ll, slope = _bimodal(6.0) if second else (lambda v: -50.0 * (v - 0.9) ** 2,
                                              lambda v: -100.0 * (v - 0.9))
    calls = []

    def counted(v):
        calls.append(v)
        return ll(v)

    prof = Profile("p", 0.9, 0.0, counted, bounds=(0.0, 1.0), step=0.1, derivative=slope)
    ci = prof.conf_int()
    n0 = len(calls)
    h = prof.hull()
    assert h.attrs["interval"] and h.attrs["inside_beyond"] == []
    assert (h["lower"], h["upper"]) == (ci["lower"], ci["upper"])
    if second is None:
        # one mode: R rises at every point beyond the limit (values and slopes), no search,
        # the 3 points only (the upper limit is the bound)
        assert ci.attrs["upper_at_bound"] and len(calls) - n0 == 3


def test_profile_values_are_at_least_the_floor():
    # session 83's audit: a constrained fit that stopped below the floor's level (a DETM fit on
    # Dask at pi = 0.999999: R* 5.6037, the floor's bound 5.5937) was plotted above the
    # cut-off of an interval that held the point; the floor is reached at every value
    def ll(v):
        return -3.0 if v > 0.95 else -50.0 * (v - 0.5) ** 2

    prof = Profile("p", 0.5, 0.0, ll, bounds=(0.0, 1.0), floor=-2.8)
    assert prof.floor_statistic() == pytest.approx(5.6)
    assert prof.statistic(0.99) == pytest.approx(5.6) and prof.statistic(0.6) == pytest.approx(1)
    assert prof.loglik(0.99) == pytest.approx(-2.8)
    frame = prof.to_frame(n=11)
    assert frame["R"].max() <= 5.6 + 1e-12
    plain = Profile("p", 0.5, 0.0, ll, bounds=(0.0, 1.0))  # no floor: the values as they are
    assert plain.statistic(0.99) == pytest.approx(6.0)
