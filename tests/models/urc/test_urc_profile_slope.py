"""URC profiles carry their slope (envelope theorem), which the limit search of
:class:`~puinfer.inference.Profile` uses: checked against central differences of the profile
itself, and the intervals against the slope-free search (brentq)."""

import warnings

import numpy as np
import pytest

import puinfer as pu
from puinfer.inference import Profile
from puinfer.simulate.urc import simulate_urc


def _fit(k, likelihood, rng):
    if k == 2:
        sim = simulate_urc(n_lab=400, n_field=[1500, 2500, 2000], lab_base_rates=0.5,
                           field_base_rate=[0.15, 0.3, 0.6], separation=1.5, rng=rng)
        return pu.URC(sim.lab_pred, sim.lab_y).fit(sim.field_pred, groups=sim.field_group,
                                                   likelihood=likelihood)
    sim = simulate_urc(n_lab=600, n_field=4000, lab_base_rates=[1 / 3] * 3,
                       field_base_rate=[0.6, 0.3, 0.1], separation=1.2, rng=rng)
    return pu.URC(sim.lab_pred, sim.lab_y).fit(sim.field_pred, likelihood=likelihood)


@pytest.mark.parametrize("k, likelihood", [(2, "joint"), (2, "fixed"), (3, "joint")])
def test_profile_slope_is_the_derivative_of_the_profile(k, likelihood):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _fit(k, likelihood, np.random.default_rng(40 + k))
    group = res.base_rates.index[-1] if k == 2 else None
    cls = None if k == 2 else res.model.classes[1]
    prof = res.profile(group, cls)
    est = prof.estimate
    for v in (est - 0.03, est + 0.02):
        h = 1e-5
        # central difference of the profile log-likelihood (each value a constrained fit)
        num = (prof._loglik_at(v + h) - prof._loglik_at(v - h)) / (2 * h)
        prof._loglik_at(v)
        assert prof._derivative(v) == pytest.approx(num, rel=1e-4, abs=1e-4)


def test_intervals_with_the_slope_equal_the_bracketing_search():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _fit(2, "joint", np.random.default_rng(7))
    ci = res.conf_int()
    for g in res.base_rates.index:
        fast = res.profile(g)
        plain = Profile(fast.name, fast.estimate, fast.llf_max, fast._loglik_at,
                        bounds=fast.bounds, step=fast.step)  # no derivative: brentq
        ref = plain.conf_int()
        assert ci.loc[ci.index[list(res.base_rates.index).index(g)], "lower"] == \
            pytest.approx(ref["lower"], abs=1e-8)
        assert ci.loc[ci.index[list(res.base_rates.index).index(g)], "upper"] == \
            pytest.approx(ref["upper"], abs=1e-8)
