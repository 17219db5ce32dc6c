"""Simulator inputs: seeds accepted everywhere, clear errors naming the bad argument."""

import numpy as np
import pytest

import puinfer.simulate as S
from puinfer.simulate.calem import simulate_calem
from puinfer.simulate.detm import scar_design
from puinfer.simulate.urc import SPAMBASE_MAILBOXES, URCSimulation, simulate_urc, spambase_lab_field
from puinfer.simulate.urc_regression import simulate_urc_regression


def _urc_equal(a, b):
    return all(np.array_equal(getattr(a, f), getattr(b, f))
               for f in ("lab_pred", "lab_y", "field_pred", "field_y"))


# ---- rng: a Generator or a seed ----------------------------------------------------------------
def test_seed_equals_generator_from_that_seed():
    assert simulate_calem(300, rng=1).equals(simulate_calem(300, rng=np.random.default_rng(1)))
    assert _urc_equal(simulate_urc(50, 80, rng=1),
                      simulate_urc(50, 80, rng=np.random.default_rng(1)))
    assert _urc_equal(simulate_urc(50, 80, rng=[3, 4]),
                      simulate_urc(50, 80, rng=np.random.default_rng([3, 4])))
    a = simulate_urc_regression(20, 30, rng=2)
    b = simulate_urc_regression(20, 30, rng=np.random.default_rng(2))
    assert np.array_equal(a.field_y, b.field_y)
    assert scar_design(5, 5, 0.5, rng=3).equals(scar_design(5, 5, 0.5,
                                                             rng=np.random.default_rng(3)))
    # a SeedSequence (e.g. from spawn(), for parallel runs) or a BitGenerator, as numpy takes
    # them (refused for a while by the package's rng check)
    ss = np.random.SeedSequence(7).spawn(2)[1]
    assert scar_design(5, 5, 0.5, rng=ss).equals(
        scar_design(5, 5, 0.5, rng=np.random.default_rng(np.random.SeedSequence(7).spawn(2)[1])))
    a = simulate_urc_regression(20, 30, rng=np.random.PCG64(4))
    assert np.array_equal(a.field_y, simulate_urc_regression(
        20, 30, rng=np.random.default_rng(np.random.PCG64(4))).field_y)
    # a Generator is used as it is: its stream continues
    g = np.random.default_rng(9)
    first = simulate_calem(100, rng=g)
    assert not simulate_calem(100, rng=g).equals(first)


def test_rng_none_gives_fresh_entropy():
    assert len(simulate_calem(50)) == 50  # rng is no longer a required argument
    assert simulate_urc(20, 30).field_pred.shape == (30,)


@pytest.mark.parametrize("fn", [lambda r: simulate_calem(50, rng=r),
                                lambda r: simulate_urc(20, 30, rng=r),
                                lambda r: simulate_urc_regression(20, 30, rng=r),
                                lambda r: scar_design(5, 5, 0.5, rng=r)])
def test_bad_rng(fn):
    for bad in ("abc", True, 1.5):
        with pytest.raises(TypeError, match=r"rng must be an int seed \(or a sequence"):
            fn(bad)
    with pytest.raises(ValueError, match="rng"):
        fn(-1)


def test_package_doc_promises_seeds():
    doc = " ".join(S.__doc__.split())
    assert "a seed for" in doc and "spambase_lab_field" in doc


# ---- n_field lengths ---------------------------------------------------------------------------
def test_n_field_length_mismatch_is_named():
    with pytest.raises(ValueError, match="n_field has 3 sizes but field_base_rate gives 2"):
        simulate_urc(n_field=[100, 200, 300], field_base_rate=[0.1, 0.2], rng=0)
    with pytest.raises(ValueError, match="n_field has 2 sizes but field_base_rate gives 1"):
        simulate_urc(n_field=[100, 200], field_base_rate=0.2, rng=0)
    with pytest.raises(ValueError, match="n_field must be a positive integer"):
        simulate_urc(n_field=[[100, 200]], field_base_rate=[0.1, 0.2], rng=0)
    with pytest.raises(ValueError, match=r"n_field, field_shift and field_scale .*n_field: 3, "
                                         r"field_shift: 2"):
        simulate_urc_regression(n_field=[100, 200, 300], field_shift=[0.1, 0.2], rng=0)
    with pytest.raises(ValueError, match="field_scale: 3"):
        simulate_urc_regression(n_field=[10, 20], field_scale=[1, 1, 2], rng=0)
    # one n_field for several groups, one size per group: both fine
    assert np.bincount(simulate_urc(20, 30, field_base_rate=[0.1, 0.2], rng=0).field_group) \
        .tolist() == [30, 30]
    assert np.bincount(simulate_urc(20, [30, 40], field_base_rate=[0.1, 0.2], rng=0)
                       .field_group).tolist() == [30, 40]
    s = simulate_urc_regression(20, 30, field_shift=[0.0, 1.0], rng=0)
    assert np.bincount(s.field_group).tolist() == [30, 30]
    assert s.field_shift.tolist() == [0.0, 1.0]


@pytest.mark.parametrize("kw, match", [
    (dict(n_lab=2.5), "n_lab must be an integer"),
    (dict(n_lab=1), "n_lab must be >= 2"),
    (dict(n_lab="10"), "n_lab must be an integer"),
    (dict(n_field=2.5), "n_field must be an integer >= 1"),
    (dict(n_field=[10, 0]), "n_field must be an integer >= 1"),
    (dict(field_shift=np.nan), "field_shift must be a finite number"),
    (dict(field_scale="a"), "field_scale must be a number"),
    (dict(field_scale=0.0), "field_scale > 0"),
    (dict(noise_sd=-1.0), "noise_sd > 0"),
    (dict(noise_sd=[1.0, 2.0]), "noise_sd > 0"),
])
def test_simulate_urc_regression_bad_sizes(kw, match):
    with pytest.raises((TypeError, ValueError), match=match):
        simulate_urc_regression(**{"n_lab": 20, "n_field": 30, "rng": 0, **kw})


# ---- simulate_calem: n and the two groups ----------------------------------------------------
@pytest.mark.parametrize("n", [-5, 2.5, True, "10", None, np.nan, 0, 1])
def test_simulate_calem_bad_n(n):
    with pytest.raises((TypeError, ValueError), match="n must be (an integer|>= 2)"):
        simulate_calem(n, rng=0)


def test_simulate_calem_integer_valued_float_n():
    assert len(simulate_calem(1e3, rng=0)) == 1000
    assert len(simulate_calem(np.int64(20), rng=0)) == 20


@pytest.mark.parametrize("n, share, n_control", [(10, 0.01, 0), (10, 0.99, 10), (3, 0.1, 0)])
def test_simulate_calem_refuses_an_empty_group(n, share, n_control):
    with pytest.raises(ValueError, match=rf"n={n} and clean_share={share} give {n_control} "
                                         rf"control and {n - n_control} treated rows"):
        simulate_calem(n, clean_share=share, rng=0)
    # the smallest legal design has a row in each set
    d = simulate_calem(2, clean_share=0.5, rng=0)
    assert sorted(d.treated.tolist()) == [0, 1]


# ---- field_group --------------------------------------------------------------------------------
def test_field_group_doc_matches_both_simulators():
    doc = " ".join(URCSimulation.__doc__.split())
    assert "mailbox names" in doc and "0..G-1" in doc
    sp = spambase_lab_field(seed=1)
    assert set(sp.field_group) == set(SPAMBASE_MAILBOXES)
    assert simulate_urc(20, [5, 6], field_base_rate=[0.1, 0.2], rng=0).field_group.dtype.kind \
        == "i"
    assert simulate_urc(20, 5, rng=0).field_group is None


def test_session_67_audit_checks():
    # each was accepted or failed inside numpy, or looped without end (session 67's audit)
    from puinfer.simulate.detm import gamma_design, pu_normal, sar_design

    assert scar_design(5.0, 5, 0.5, rng=1).equals(scar_design(5, 5, 0.5, rng=1))
    for call, match in ((lambda: scar_design("5", 5, 0.5), "n must be an integer"),
                        (lambda: scar_design(5, 5, 0.5, n_shift=2.5), "n_shift must be an int"),
                        (lambda: sar_design(5, 5, 0.5, p=0), "p must be >= 1"),
                        (lambda: gamma_design(5, 5, 0.5, p=0), "p must be >= 1"),
                        (lambda: pu_normal(5, 5, 0.5, [], [], []), "no feature")):
        with pytest.raises((TypeError, ValueError), match=match):
            call()
    with pytest.raises(ValueError, match="field_scale must be positive"):
        simulate_urc(50, 80, field_scale=-1.0)
    with pytest.raises(ValueError, match="lab_base_rates must be positive"):
        simulate_urc(50, 80, lab_base_rates=0.0)
    with pytest.raises(ValueError, match=r"leaves a class without lab items \(counts \[200, 0\]"):
        simulate_urc(200, 80, lab_base_rates=0.001)
    with pytest.raises(ValueError, match="rarely holds every class"):
        simulate_urc(10, 100, 1e-9, 0.2, rng=1, lab_design="random")
    for boxes, match in (({"A": (-5, 10)}, "must be >= 0"), ({"A": (0, 0)}, "not both 0"),
                         ({"A": (5,)}, "must be \\(n_spam, n_nonspam\\)")):
        with pytest.raises(ValueError, match=match):
            spambase_lab_field(mailboxes=boxes)
    with pytest.raises(ValueError, match="n_train must be >= 1"):
        spambase_lab_field(n_train=0)


def test_pu_normal_and_oracle_curve_refuse_bad_arguments():
    # session 69: a NaN mean gave a sample of NaN features; an unknown miscalibration a bare
    # KeyError, and scores beyond [0, 1] "probabilities" beyond [0, 1] (2.34 at 1.5)
    from puinfer.simulate.calem import oracle_curve
    from puinfer.simulate.detm import pu_normal

    with pytest.raises(ValueError, match="mu_target_neg must be finite"):
        pu_normal(5, 5, 0.5, [0.0], [1.0], [np.nan], rng=0)
    with pytest.raises(ValueError, match="miscalibration must be one of"):
        oracle_curve([0.5], "g3")
    with pytest.raises(ValueError, match="score must be in"):
        oracle_curve([0.5, 1.5], "g1")
    assert np.all((oracle_curve(np.linspace(0, 1, 11), "g2") >= 0)
                  & (oracle_curve(np.linspace(0, 1, 11), "g2") <= 1))


# ---- rates, shifts and shares: numbers, not text or True/False -------------------------------
@pytest.mark.parametrize("call, err, match", [
    # taken as numbers: "0.3" as 0.3, True as the rate 1 or the shift 1
    (lambda: simulate_urc(50, 100, field_base_rate="0.3", rng=0), ValueError,
     "field_base_rate holds text"),
    (lambda: simulate_urc(50, 100, field_base_rate=[0.1, "0.2"], rng=0), ValueError,
     "field_base_rate holds text"),
    (lambda: simulate_urc(50, 100, field_base_rate=True, rng=0), ValueError,
     "field_base_rate must be numeric, not True/False"),
    (lambda: simulate_urc(50, 100, field_base_rate=[[False, True]], rng=0), ValueError,
     "field_base_rate must be numeric, not True/False"),
    (lambda: simulate_urc(50, 100, lab_base_rates="0.5", rng=0), ValueError,
     "lab_base_rates holds text"),
    (lambda: simulate_urc(50, 100, field_shift=True, rng=0), ValueError,
     "field_shift must be a finite number; got True"),
    (lambda: simulate_urc_regression(50, 100, field_shift="2", rng=0), ValueError,
     "field_shift must be a number or a sequence of numbers, not text or True/False"),
    (lambda: simulate_urc_regression(50, 100, field_shift=True, rng=0), ValueError,
     "field_shift must be a number or a sequence of numbers, not text or True/False"),
    (lambda: simulate_urc_regression(50, 100, field_scale=["1", "2"], rng=0), ValueError,
     "field_scale must be a number or a sequence of numbers, not text"),
    (lambda: scar_design(20, 20, True, p=2, rng=0), TypeError,
     r"pi must be a number in \[0, 1\]; got True"),
    # failed in a comparison without naming the argument
    (lambda: scar_design(20, 20, "0.3", p=2, rng=0), TypeError,
     r"pi must be a number in \[0, 1\]; got '0.3'"),
    (lambda: simulate_calem(100, event_prob="0.5", rng=0), TypeError,
     r"event_prob must be a number in \(0, 1\); got '0.5'"),
    (lambda: simulate_calem(100, clean_share="0.1", rng=0), TypeError,
     r"clean_share must be a number in \(0, 1\); got '0.1'"),
])
def test_simulators_refuse_numbers_as_text_and_bools(call, err, match):
    with pytest.raises(err, match=match):
        call()
    # numbers of numpy's types are numbers, as before
    assert _urc_equal(simulate_urc(50, 100, field_base_rate=np.float64(0.3), rng=0),
                      simulate_urc(50, 100, field_base_rate=0.3, rng=0))
    assert scar_design(20, 20, np.float64(0.3), p=2, rng=0).equals(
        scar_design(20, 20, 0.3, p=2, rng=0))
    assert scar_design(20, 20, 1, p=2, rng=0).y_true.eq(1).all()
    assert simulate_calem(100, event_prob=np.float32(0.5), rng=0).equals(
        simulate_calem(100, event_prob=0.5, rng=0))
    a = simulate_urc_regression(50, 100, field_shift=np.array([0, 1]), rng=0)
    assert a.field_shift.tolist() == [0.0, 1.0]
