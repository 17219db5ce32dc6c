"""Profile limits found with the profile's slope (``derivative=``, issue 17) against brentq."""

import numpy as np
import pytest

from puinfer.inference import Profile


def _binomial(k, n):
    """Log-likelihood of a proportion and its derivative (k successes in n)."""
    with np.errstate(divide="ignore"):
        def ll(p):
            return k * np.log(p) + (n - k) * np.log1p(-p)

    def dll(p):
        return k / p - (n - k) / (1 - p)

    p_hat = k / n
    return p_hat, float(ll(p_hat)), ll, dll


@pytest.mark.parametrize("k,n", [(30, 100), (3, 200), (195, 200), (1, 50)])
def test_newton_limits_equal_brentq_limits(k, n):
    p_hat, llf, ll, dll = _binomial(k, n)
    bounds = (1e-9, 1 - 1e-9)
    se = np.sqrt(p_hat * (1 - p_hat) / n)
    plain = Profile("p", p_hat, llf, ll, bounds=bounds, step=se)
    fast = Profile("p", p_hat, llf, ll, bounds=bounds, step=se, derivative=dll)
    for alpha in (0.05, 0.01):
        a, b = plain.conf_int(alpha), fast.conf_int(alpha)
        assert b["lower"] == pytest.approx(a["lower"], abs=1e-10)
        assert b["upper"] == pytest.approx(a["upper"], abs=1e-10)
        assert b.attrs == a.attrs
        # and they are roots: R = cut-off at each limit
        for v in (b["lower"], b["upper"]):
            assert fast.statistic(v) == pytest.approx(b.attrs["cutoff"], abs=1e-8)
    assert len(fast._cache) < len(plain._cache)


def test_one_sided_and_misleading_slope():
    # the interval reaches the bound: reported one-sided, as without the slope
    p_hat, llf, ll, dll = _binomial(1, 400)
    fast = Profile("p", p_hat, llf, ll, bounds=(1e-9, 1 - 1e-9), step=0.01, derivative=dll)
    plain = Profile("p", p_hat, llf, ll, bounds=(1e-9, 1 - 1e-9), step=0.01)
    assert fast.conf_int().attrs["lower_at_bound"] == plain.conf_int().attrs["lower_at_bound"]
    # a useless slope (NaN, or of the wrong sign) falls back to bisection: the same limits
    p_hat, llf, ll, _ = _binomial(30, 100)
    for bad in (lambda v: np.nan, lambda v: 1.0 if v > p_hat else -1.0):
        b = Profile("p", p_hat, llf, ll, bounds=(1e-9, 1 - 1e-9), step=0.05,
                    derivative=bad).conf_int()
        a = Profile("p", p_hat, llf, ll, bounds=(1e-9, 1 - 1e-9), step=0.05).conf_int()
        assert b["lower"] == pytest.approx(a["lower"], abs=1e-10)
        assert b["upper"] == pytest.approx(a["upper"], abs=1e-10)
    with pytest.raises(TypeError, match="derivative"):
        Profile("p", p_hat, llf, ll, derivative=3.0)


def test_newton_stops_at_the_rounding_of_the_profile():
    """A profile whose values carry rounding noise (here rounded to steps of 2e-9, as a
    maximised log-likelihood over many rows is): the Newton search stops within
    ``1e-6 max(1, cutoff)`` of the cut-off in R after a few evaluations, instead of chasing
    the noise (before: a jump to twice the distance and about 30 bisections)."""
    se = 0.05

    def ll(v):  # a quadratic profile (R = ((v - 0.5) / se)^2), rounded to steps of 2e-9
        return np.round(-0.5 * ((v - 0.5) / se) ** 2 / 2e-9) * 2e-9

    def dll(v):
        return -(v - 0.5) / se ** 2

    calls = []

    def counted(v):
        calls.append(v)
        return ll(v)

    prof = Profile("v", 0.5, 0.0, counted, bounds=(0.0, 1.0), step=se, derivative=dll)
    ci = prof.conf_int(0.05)
    cut = ci.attrs["cutoff"]
    for lim in (ci["lower"], ci["upper"]):
        assert abs(prof.statistic(lim) - cut) <= 1e-6 * max(1.0, cut)
        assert lim == pytest.approx(0.5 + np.sign(lim - 0.5) * se * np.sqrt(cut), abs=1e-8)
    assert len(calls) <= 14


class _EveryLimitEvaluated(Profile):
    newton_shortcuts = False


_SETTLE_CASES = [(30, 100), (3, 200), (195, 200), (1, 50), (500, 1000)]


def _settled_and_evaluated(k, n):
    """The 95% interval of a binomial proportion with ``newton_shortcuts`` (the default) and
    without; both profiles."""
    p_hat, llf, ll, dll = _binomial(k, n)
    kw = dict(bounds=(1e-9, 1 - 1e-9), step=np.sqrt(p_hat * (1 - p_hat) / n), derivative=dll)
    settled = Profile("p", p_hat, llf, ll, **kw)
    evaluated = _EveryLimitEvaluated("p", p_hat, llf, ll, **kw)
    return settled, settled.conf_int(0.05), evaluated, evaluated.conf_int(0.05)


@pytest.mark.parametrize("k,n", _SETTLE_CASES)
def test_settled_limits_are_the_roots(k, n):
    """``newton_shortcuts``: a limit is Newton's last step once the steps shrink
    quadratically, not evaluated; it is the root to 1e-12 (exact roots by brentq on the
    binomial R at 1e-15), as the limit that is evaluated."""
    from scipy import optimize, stats

    p_hat, llf, ll, _ = _binomial(k, n)
    settled, a, evaluated, b = _settled_and_evaluated(k, n)
    cut = stats.chi2.ppf(0.95, 1)
    for side, lo, hi in (("lower", 1e-9, p_hat), ("upper", p_hat, 1 - 1e-9)):
        assert a.attrs[f"{side}_at_bound"] == b.attrs[f"{side}_at_bound"]
        if a.attrs[f"{side}_at_bound"]:
            continue
        root = optimize.brentq(lambda p: 2 * (llf - ll(p)) - cut, lo, hi, xtol=1e-15,
                               rtol=1e-15)
        assert a[side] == pytest.approx(root, abs=1e-12, rel=1e-12)
        assert b[side] == pytest.approx(root, abs=1e-12, rel=1e-12)
    assert len(settled._cache) <= len(evaluated._cache)


def test_settled_limits_save_evaluations():
    """Over the cases above, most limits are returned without being evaluated, and the
    searches take fewer evaluations than with every limit evaluated."""
    n_settled = n_fewer = 0
    for k, n in _SETTLE_CASES:
        settled, a, evaluated, _ = _settled_and_evaluated(k, n)
        n_settled += sum(a[s] not in settled._cache for s in ("lower", "upper"))
        n_fewer += len(evaluated._cache) - len(settled._cache)
    assert n_settled >= 5 and n_fewer >= 5


def test_newton_step_through_the_bound_evaluates_the_bound():
    """Where a Newton step from inside the set leaves through the bound, the bound is
    evaluated next: one-sided at once where R there is below the cut-off (halving towards it
    took up to ten evaluations), and where it is not, the bound closes the bracket and the
    limit is the root (brentq on the same R); a bound where the profile is not computable
    (NaN) is approached by halving, as before."""
    from scipy import optimize, stats

    cut = stats.chi2.ppf(0.95, 1)
    # one-sided: a quadratic profile (se 0.05, estimate 0.02), R(0) = 0.16
    def ll1(v):
        return -0.5 * ((v - 0.02) / 0.05) ** 2

    kw = dict(bounds=(0.0, 1.0), step=0.05, derivative=lambda v: -(v - 0.02) / 0.05 ** 2)
    short, halving = Profile("p", 0.02, 0.0, ll1, **kw), _EveryLimitEvaluated("p", 0.02, 0.0,
                                                                             ll1, **kw)
    a, b = short.conf_int(), halving.conf_int()
    assert a.attrs["lower_at_bound"] and b.attrs["lower_at_bound"] and a["lower"] == b["lower"]
    assert len(short._cache) < len(halving._cache)

    # the crossing just inside the bound, which Newton's slope put beyond it: a quadratic
    # profile (se 0.3, estimate 0.5: R(1) would be 2.78) with a barrier in the last 1e-3
    def ll2(v):
        return -0.5 * ((v - 0.5) / 0.3) ** 2 - 1e3 * max(0.0, v - 0.999) ** 2 / 1e-6

    def dll2(v):
        return -(v - 0.5) / 0.09 - 2e3 * max(0.0, v - 0.999) / 1e-6

    prof = Profile("v", 0.5, 0.0, ll2, bounds=(0.0, 1.0), step=0.05, derivative=dll2)
    root = optimize.brentq(lambda v: -2 * ll2(v) - cut, 0.5, 1.0, xtol=1e-15, rtol=1e-15)
    ci = prof.conf_int()
    assert not ci.attrs["upper_at_bound"] and 0.999 < root < 1.0
    assert ci["upper"] == pytest.approx(root, abs=1e-12)
    assert 1.0 in prof._cache  # (the bound was evaluated)

    # a bound where the profile is not computable: halving, as without the shortcuts
    def ll3(v):
        return np.nan if v >= 1.0 else ll2(v)

    a = Profile("v", 0.5, 0.0, ll3, bounds=(0.0, 1.0), step=0.05, derivative=dll2).conf_int()
    b = _EveryLimitEvaluated("v", 0.5, 0.0, ll3, bounds=(0.0, 1.0), step=0.05,
                             derivative=dll2).conf_int()
    assert a["upper"] == pytest.approx(root, abs=1e-12)
    assert a["upper"] == pytest.approx(b["upper"], abs=1e-12)


@pytest.mark.parametrize("cls", [Profile, _EveryLimitEvaluated])
def test_a_trial_point_where_the_profile_is_not_computable_is_stepped_back_from(cls):
    """Session 78: DETM's first trial point of a limit (the quadratic approximation, estimate
    + sqrt(cut-off) step) fell where the profile is not computable (pi = 0.999939, no
    constrained fit converged) and the search raised ProfileError, although R crosses the
    cut-off well inside, at 0.961. Such a point is no evidence either way: the search steps
    back from it and finds the crossing from the points it can compute. Where the set reaches
    up to such points (no crossing before them), it still raises: no limit is guessed."""
    from scipy import stats

    from puinfer.inference import ProfileError

    cut = stats.chi2.ppf(0.95, 1)

    def ll(v, start=0.98):  # a quadratic profile (se 0.2, estimate 0.5), NaN from `start` on
        return np.nan if v >= start else -0.5 * ((v - 0.5) / 0.2) ** 2

    def dll(v):
        return -(v - 0.5) / 0.2 ** 2

    # a poor first step (0.25 for the se 0.2) puts the first trial point at 0.99, in the gap
    prof = cls("p", 0.5, 0.0, ll, bounds=(0.0, 1.0), step=0.25, derivative=dll)
    ci = prof.conf_int()
    root = 0.5 + 0.2 * np.sqrt(cut)  # 0.892
    assert ci["upper"] == pytest.approx(root, abs=1e-10)
    assert ci["lower"] == pytest.approx(0.5 - 0.2 * np.sqrt(cut), abs=1e-10)
    assert not (ci.attrs["lower_at_bound"] or ci.attrs["upper_at_bound"])
    assert np.isnan(prof._cache[0.5 + np.sqrt(cut) * 0.25])  # (the trial point in the gap)
    # the set reaching the gap: R is below the cut-off up to 0.85, not computable beyond
    gap = cls("p", 0.5, 0.0, lambda v: ll(v, 0.85), bounds=(0.0, 1.0), step=0.25,
              derivative=dll)
    with pytest.raises(ProfileError, match="could not be computed"):
        gap.conf_int()


@pytest.mark.parametrize("derivative", [False, True])
def test_the_bracketing_search_steps_back_from_points_it_cannot_compute(derivative):
    """Session 82: ``_limit_bracket`` (the search without a derivative, and the fallback where
    Newton's does not settle) raised ProfileError at its first trial point where the profile
    is not computable, although the crossing lies before it. It now treats such a point as
    ``_newton_steps`` does (session 78): no evidence either way; it steps back towards the
    last point inside the set and brackets the crossing from points it can compute. Where the
    set reaches up to such points it still raises."""
    from scipy import stats

    from puinfer.inference import ProfileError

    cut = stats.chi2.ppf(0.95, 1)

    def ll(v, gap=(0.80, 0.90)):  # quadratic (se 0.1, estimate 0.5), NaN on the gap
        return np.nan if gap[0] < v < gap[1] else -0.5 * ((v - 0.5) / 0.1) ** 2

    class _Bracketing(Profile):  # Newton's search "not settling": the bracket finds the limit
        def _newton_steps(self, direction, cutoff):
            return None
            yield  # (a generator, as the method it replaces)

    cls = _Bracketing if derivative else Profile
    kw = dict(derivative=lambda v: -(v - 0.5) / 0.01) if derivative else {}
    # doubling steps from 0.5: 0.55, 0.65, 0.85 -- in the gap; the crossing is at 0.696
    prof = cls("p", 0.5, 0.0, ll, bounds=(0.0, 1.0), step=0.05, **kw)
    ci = prof.conf_int()
    root = 0.5 + 0.1 * np.sqrt(cut)
    assert ci["upper"] == pytest.approx(root, abs=1e-10)
    assert ci["lower"] == pytest.approx(0.5 - 0.1 * np.sqrt(cut), abs=1e-10)
    # (the trial point in the gap, 0.85, was evaluated)
    assert any(0.8 < q < 0.9 and np.isnan(v) for q, v in prof._cache.items())
    # the set reaching the gap (R below the cut-off up to 0.58, not computable beyond 0.6)
    wide = cls("p", 0.5, 0.0, lambda v: ll(v, (0.6, 0.9)), bounds=(0.0, 1.0), step=0.05, **kw)
    assert wide.statistic(0.58) < cut
    with pytest.raises(ProfileError, match="could not be computed"):
        wide.conf_int()


@pytest.mark.parametrize("derivative", [False, True])
def test_a_profile_not_computable_only_at_its_bound_gives_a_one_sided_interval(derivative):
    """Session 82's audit: where the profile is NaN at the bound itself and the set runs up
    to it, conf_int raised ProfileError (no interval, and the well-determined other limit lost
    with it). The set reaches within 1e-4 of the bound: one-sided there."""
    from scipy import stats

    def ll(v):
        return np.nan if v >= 1 else -10 - (v - 0.9) ** 2 / (2 * 0.2 ** 2)

    kw = dict(derivative=lambda v: -(v - 0.9) / 0.04) if derivative else {}
    ci = Profile("t", 0.9, -10.0, ll, bounds=(0, 1), step=0.05, **kw).conf_int()
    assert ci["upper"] == 1 and ci.attrs["upper_at_bound"]
    assert ci["lower"] == pytest.approx(0.9 - 0.2 * np.sqrt(stats.chi2.ppf(0.95, 1)), abs=1e-10)
    assert not ci.attrs["lower_at_bound"]
