"""simulate_urc: the field shift of the score breaks Axiom 2 for every number of classes."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import special, stats

import puinfer as pu
from puinfer.simulate.urc import simulate_urc, spambase_lab_field

K3 = dict(lab_base_rates=[0.3, 0.3, 0.4], field_base_rate=[0.5, 0.3, 0.2])


def _pair(shift, **kw):
    a = simulate_urc(200, 3000, field_shift=0.0, rng=np.random.default_rng(5), **kw)
    b = simulate_urc(200, 3000, field_shift=shift, rng=np.random.default_rng(5), **kw)
    return a, b


@pytest.mark.parametrize("kw", [K3, dict(lab_base_rates=[0.5, 0.5], field_base_rate=[0.8, 0.2]),
                                dict(lab_base_rates=[0.1, 0.2, 0.3, 0.4],
                                     field_base_rate=[0.4, 0.3, 0.2, 0.1])])
def test_field_shift_moves_last_class_log_odds_exactly(kw):
    """Same seed, shift 0 vs 2: the lab set and the field classes are unchanged; the field
    log-odds of the last class against each other class move by separation * shift, and the
    log-odds among the other classes do not move (the old code left every prediction as it was)."""
    delta, shift = 1.5, 2.0
    a, b = _pair(shift, **kw)
    assert np.array_equal(a.lab_pred, b.lab_pred) and np.array_equal(a.lab_y, b.lab_y)
    assert np.array_equal(a.field_y, b.field_y)
    la, lb = np.log(a.field_pred), np.log(b.field_pred)
    step = (lb[:, -1:] - lb[:, :-1]) - (la[:, -1:] - la[:, :-1])
    assert_allclose(step, delta * shift, atol=1e-9)
    others = lb[:, :-1] - lb[:, :1] - (la[:, :-1] - la[:, :1])
    assert_allclose(others, 0, atol=1e-9)
    assert np.abs(a.field_pred - b.field_pred).max() > 0.3


def test_binary_field_shift_is_the_same_log_odds_step():
    """The binary (scalar base rate) case, whose output is unchanged: its field logit moves by
    separation * shift too, so the k-class shift is its generalisation."""
    a, b = _pair(2.0, lab_base_rates=0.5, field_base_rate=0.2)
    assert np.array_equal(a.field_y, b.field_y)
    assert_allclose(special.logit(b.field_pred) - special.logit(a.field_pred), 1.5 * 2.0,
                    atol=1e-8)


def test_k_class_field_conditional_distribution():
    """Exact law: given Y = y, delta (s_last - s_0) = log(C_last / C_0) - log(pi_last / pi_0)
    is N(delta (delta ([y = last] - [y = 0]) + shift), 2 delta^2 scale^2)."""
    delta, shift, scale = 1.5, 0.8, 1.3
    pi = np.array(K3["lab_base_rates"])
    s = simulate_urc(200, 30000, separation=delta, field_shift=shift, field_scale=scale,
                     rng=np.random.default_rng(11), **K3)
    d = np.log(s.field_pred[:, 2] / s.field_pred[:, 0]) - np.log(pi[2] / pi[0])
    for y in range(3):
        mean = delta * (delta * ((y == 2) - (y == 0)) + shift)
        sd = np.sqrt(2) * delta * scale
        p = stats.kstest(d[s.field_y == y], "norm", args=(mean, sd)).pvalue
        assert p > 0.001, (y, p)
    # and without the shift the field law is the lab law (Axiom 2 holds)
    s0 = simulate_urc(20000, 20000, separation=delta, rng=np.random.default_rng(12), **K3)
    for y in range(3):
        lab = np.log(s0.lab_pred[s0.lab_y == y, 2] / s0.lab_pred[s0.lab_y == y, 0])
        field = np.log(s0.field_pred[s0.field_y == y, 2] / s0.field_pred[s0.field_y == y, 0])
        assert stats.ks_2samp(lab, field).pvalue > 0.001


def test_urc_gof_rejects_a_large_k3_field_shift():
    """A modest study: with shift 2 the URC goodness-of-fit test (Axiom 2) rejects in every
    replicate at 5%; with shift 0 it rejects rarely (the same seeds)."""
    rej = {0.0: 0, 2.0: 0}
    for shift in rej:
        for rep in range(10):
            s = simulate_urc(2000, 10000, [1 / 3] * 3, [0.5, 0.3, 0.2], field_shift=shift,
                             rng=np.random.default_rng([2024, rep]))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = pu.URC(s.lab_pred, s.lab_y, n_bins=4).fit(s.field_pred)
            rej[shift] += res.gof().pvalue < 0.05
    assert rej[2.0] == 10
    assert rej[0.0] <= 2


@pytest.mark.parametrize("design", ["stratified", "random"])
def test_the_lab_design_is_recorded_for_the_fit(design):
    # URC's default lab_design is "random" and simulate_urc's "stratified": the simulation says
    # how its lab set was drawn, so that the fit can be told (API audit, session 87)
    sim = simulate_urc(60, 500, 0.3, 0.3, rng=4, lab_design=design)
    assert sim.lab_design == design
    counts = np.bincount(sim.lab_y, minlength=2)
    if design == "stratified":
        assert counts.tolist() == [42, 18]  # 60 x (0.7, 0.3), fixed
    r = pu.URC(sim.lab_pred, sim.lab_y, lab_design=sim.lab_design).fit(sim.field_pred)
    assert r.model.lab_design == design
    assert simulate_urc(rng=1).lab_design == "stratified"  # the default


def test_spambase_split_says_its_lab_set_is_balanced():
    sim = spambase_lab_field(seed=1, n_train=100, n_lab=50)
    assert sim.lab_design == "stratified"
    assert np.bincount(sim.lab_y).tolist() == [50, 50]
