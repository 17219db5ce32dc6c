"""``conf_ints``: the limit searches of several profiles run in lockstep (issue 17), the same
searches and intervals as ``Profile.conf_int`` one profile at a time."""

import numpy as np
import pandas as pd
import pytest

from puinfer.inference import Profile
from puinfer.inference.profile import conf_ints


def _binomial_profile(k, n, derivative=True, **kw):
    """The profile of a binomial proportion (its log-likelihood is its own profile)."""
    p_hat = k / n
    def ll(p):
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(k * np.log(p) + (n - k) * np.log1p(-p))

    def dll(p):
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.float64(k) / p - np.float64(n - k) / (1 - p))
    se = np.sqrt(p_hat * (1 - p_hat) / n) if 0 < k < n else 0.01
    return Profile(f"p{k}/{n}", p_hat, ll(p_hat) if 0 < k < n else 0.0, ll,
                   bounds=(0.0, 1.0), step=se, derivative=dll if derivative else None,
                   **kw), ll


class _OwnSearch(Profile):
    """A subclass with its own limit search (as DETM's): conf_ints runs it alone."""

    def _limit(self, direction, cutoff):
        lim, at = super()._limit(direction, cutoff)
        return round(lim, 3), at


CASES = [(30, 100, True), (3, 200, True), (195, 200, True), (0, 40, True), (12, 50, False),
         (1, 50, True)]


def _profiles():
    out = [_binomial_profile(k, n, d) for k, n, d in CASES]
    own, ll = _binomial_profile(40, 90)
    out.append((_OwnSearch(own.name, own.estimate, own.llf_max, ll, bounds=own.bounds,
                           step=own.step, derivative=own._derivative), ll))
    # a floor above every cut-off in use: the whole range without a search
    whole, ll = _binomial_profile(5, 10, floor=-1.0)
    out.append((whole, ll))
    return out


@pytest.mark.parametrize("alpha,cutoffs", [(0.05, None), (0.1, [None, 2.0, 5.0, None, 1.0,
                                                                  None, 3.0, 0.5])])
def test_lockstep_intervals_equal_one_at_a_time(alpha, cutoffs):
    """The same limits, one-sided flags and attributes as conf_int, bit for bit, with and
    without a batched evaluator; the evaluator is called once per round with the points of
    every search still running, not once per point."""
    cuts = cutoffs or [None] * len(CASES + [0, 0])
    ref = [p.conf_int(alpha, c) for (p, _), c in zip(_profiles(), cuts, strict=True)]
    plain = conf_ints([p for p, _ in _profiles()], alpha, cutoffs)
    pairs = _profiles()
    calls = []

    def evaluate(pos, values):
        calls.append(len(values))
        return np.array([pairs[i][1](v) for i, v in zip(pos, values, strict=True)])
    batched = conf_ints([p for p, _ in pairs], alpha, cutoffs, evaluate)
    for got in (plain, batched):
        for a, b in zip(ref, got, strict=True):
            pd.testing.assert_series_equal(a, b)
            assert a.attrs == b.attrs
    assert any(n > 1 for n in calls)
    # each point evaluated once: the evaluator took every point of the Newton searches
    # (the bracketing search of the profile without a slope and the subclass's own search
    # evaluate their points themselves)
    assert sum(calls) == sum(len(p._cache) for p, _ in pairs[:4]) + len(pairs[5][0]._cache)
    assert len(calls) < sum(calls) / 3


def test_points_the_evaluator_leaves_are_evaluated_by_the_profile():
    """NaN from the evaluator means "not evaluated here": the profile's own loglik_at is
    called for that point, and the intervals are those of conf_int."""
    pairs = _profiles()[:3]
    seen = []

    def evaluate(pos, values):
        seen.extend(values)
        # every other point left to the profile
        return np.array([pairs[i][1](v) if j % 2 else np.nan
                         for j, (i, v) in enumerate(zip(pos, values, strict=True))])
    got = conf_ints([p for p, _ in pairs], 0.05, None, evaluate)
    for (p, _), ci in zip(_profiles()[:3], got, strict=True):
        pd.testing.assert_series_equal(p.conf_int(), ci)
    for p, ll in pairs:
        for v, val in p._cache.items():
            assert val == ll(v)
    assert len(seen) >= 6


def test_cutoffs_one_per_profile():
    with pytest.raises(ValueError, match="one per profile"):
        conf_ints([p for p, _ in _profiles()[:2]], 0.05, [None])
