"""URC's check of a grouped joint fit against the pooled field (session 87's study): with
many small groups and a small lab set the groups' sampling scatter pulls the shared ``M_A``
and every group's estimate with it (300 groups of 200 rows at equal rates of 0.3, lab 36-100
items, 4 cells: estimates 0.05-0.11 too high, 95% intervals covering 0.91-0.93). Under the
model the groups' size-weighted mean base rate and the one-group fit of the pooled rows
estimate the same rate; a ``GroupingWarning`` says where they are more than one standard
error of the pooled fit apart."""

import warnings

import numpy as np
import pytest

import puinfer as pu
from puinfer.exceptions import GroupingWarning
from puinfer.simulate.urc import simulate_urc


def _sim(n_lab, G, rep, spread=False):
    rates = list(np.linspace(0.1, 0.5, G)) if spread else [0.3] * G
    return simulate_urc(n_lab=n_lab, n_field=200, lab_base_rates=0.3, field_base_rate=rates,
                        rng=[8702, rep], lab_design="stratified")


def _fit(sim, n_bins, **kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = pu.URC(sim.lab_pred, sim.lab_y, n_bins=n_bins).fit(sim.field_pred,
                                                                groups=sim.field_group, **kw)
    return r, [str(x.message) for x in w if issubclass(x.category, GroupingWarning)]


@pytest.mark.parametrize("n_lab, rep, z", [(100, 6, "+2.34"), (36, 1, "-2.84")])
def test_a_drifting_grouped_fit_is_said(n_lab, rep, z):
    sim = _sim(n_lab, 300, rep)
    r, said = _fit(sim, 4)
    assert len(said) == 1 and f"({z} of its standard errors)" in said[0]
    assert "GroupingWarning" in [c for c, _ in r.warnings]
    # the check, computed independently: the size-weighted mean of the grouped fit against
    # the fit without groups (the same field rows pooled) and its standard error
    one = pu.URC(sim.lab_pred, sim.lab_y, n_bins=4).fit(sim.field_pred)
    n = r.n_field.to_numpy()
    d = (np.average(r.base_rate.to_numpy(), weights=n) - one.base_rate.iloc[0]) / one.bse.iloc[0]
    assert f"{d:+.2f}" == z
    # not under the fixed likelihood, whose M_A is the lab's whatever the grouping
    assert _fit(sim, 4, likelihood="fixed")[1] == []


@pytest.mark.parametrize("n_lab, G, n_bins, rep, spread", [
    (360, 10, 2, 0, False), (360, 300, 2, 5, False), (360, 10, None, 3, True),
    (36, 300, 2, 0, False)])
def test_no_warning_without_drift(n_lab, G, n_bins, rep, spread):
    """Equal rates with a large lab set or 2 cells (where the groups carry no information on
    ``M_A``), and truly different rates: no warning (in the study, 0 of 240 equal-rate fits
    without drift and 6 of 240 with rates spread over 0.1-0.5 exceeded the threshold)."""
    assert _fit(_sim(n_lab, G, rep, spread), n_bins)[1] == []


def test_not_checked_where_the_study_did_not_calibrate_it():
    """The review of session 87: with ``prior_strength`` (a prior per group against one for
    the pooled rows) the check fired on data without drift (lab 360, 2 cells: 3 of 8 fits),
    and RegressionURC without smoothing fired in 5 of 6 no-shift data sets. The check runs
    for binary URC without a prior only."""
    sim = _sim(360, 300, 1)
    r, said = _fit(sim, 2, prior_strength=1.0)
    assert said == []
    n = r.n_field.to_numpy()
    one = pu.URC(sim.lab_pred, sim.lab_y, n_bins=2).fit(sim.field_pred, prior_strength=1.0)
    # (the case: the grouped mean is more than one pooled SE from the pooled rate)
    assert abs(np.average(r.base_rate.to_numpy(), weights=n) - one.base_rate.iloc[0]) > \
        one.bse.iloc[0]
    from puinfer.simulate.urc_regression import simulate_urc_regression

    reg = simulate_urc_regression(300, 3000, field_shift=0.0, rng=np.random.default_rng(1))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pu.RegressionURC(reg.lab_pred, reg.lab_y).fit(reg.field_pred, groups=np.arange(3000) % 30,
                                                      smoothing=0)
    assert not [x for x in w if issubclass(x.category, GroupingWarning)]
