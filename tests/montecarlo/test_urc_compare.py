"""Fast checks of ``studies/urc_compare.py`` (URC beside QuaPy's EMQ, ACC, PACC/BBSE).

The study's peers come from QuaPy (the ``bench`` extra); its bootstrap uses vectorised
re-implementations, checked here against QuaPy and against values computed by hand.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("quapy")

STUDY = Path(__file__).resolve().parents[2] / "studies" / "urc_compare.py"
spec = importlib.util.spec_from_file_location("urc_compare", STUDY)
uc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(uc)


def test_emq_by_hand():
    # two field items, posteriors (0.3, 0.7) and (0.8, 0.2) for lab priors (1/2, 1/2): the
    # likelihood p*1.4 + (1-p)*0.6 times p*0.4 + (1-p)*1.6 is maximal where
    # 0.8/(0.6 + 0.8p) = 1.2/(1.6 - 1.2p), i.e. p = 0.56/1.92 = 7/24 (worked by hand)
    from quapy.method.aggregative import EMQ

    post = np.array([[0.3, 0.7], [0.8, 0.2]])
    pi = np.array([0.5, 0.5])
    quapy_p, _ = EMQ.EM(pi, post, epsilon=1e-12)
    mine = uc.emq_mle(post[None], pi)[0]
    assert quapy_p[1] == pytest.approx(7 / 24, abs=1e-8)
    assert mine[1] == pytest.approx(7 / 24, abs=1e-10)


def test_acc_by_hand():
    # lab: 4 items of each class, 3 of 4 predicted right -> M = [[.75, .25], [.25, .75]];
    # field: 5 of 8 predicted class 0 -> q0 = 0.625 = 0.75 p0 + 0.25 (1 - p0), p0 = 0.75
    lab_y = np.repeat([0, 1], 4)
    lab_hat = np.array([0, 0, 0, 1, 1, 1, 1, 0])
    field_hat = np.array([0] * 5 + [1] * 3)
    eye = np.eye(2)
    lab_post = np.where(eye[lab_hat] == 1, 0.9, 0.1)
    field_post = np.where(eye[field_hat] == 1, 0.9, 0.1)
    mine = uc.adjusted_count(eye[lab_hat][None], lab_y, eye[field_hat][None], 2)[0]
    qp = uc.quapy_estimates(lab_post, lab_y, field_post)
    np.testing.assert_allclose(mine, [0.75, 0.25], atol=1e-12)
    np.testing.assert_allclose(qp["ACC"], [0.75, 0.25], atol=1e-5)
    np.testing.assert_allclose(qp["BBSE"], [0.75, 0.25], atol=1e-5)


def test_reimplementations_agree_with_quapy():
    rng = np.random.default_rng(7)
    lab, lab_y, field, pi = uc.simulate("3class", 600, rng)
    qp = uc.quapy_estimates(lab, lab_y, field)
    eye = np.eye(3)
    mle = uc.emq_mle(field[None], pi)[0]
    acc = uc.adjusted_count(eye[lab.argmax(1)][None], lab_y, eye[field.argmax(1)][None], 3)[0]
    pacc = uc.adjusted_count(lab[None], lab_y, field[None], 3)[0]
    # QuaPy's EM stops when the mean absolute change is below 1e-4
    np.testing.assert_allclose(qp["EMQ"], mle, atol=3e-3)
    np.testing.assert_allclose(qp["ACC"], acc, atol=1e-5)
    np.testing.assert_allclose(qp["PACC"], pacc, atol=1e-5)
    # the MLE is a stationary point: the EM map leaves it unchanged
    w = field * (mle / pi)
    np.testing.assert_allclose((w / w.sum(1, keepdims=True)).mean(0), mle, atol=1e-10)


def _errors(cell, reps):
    err = {m: [] for m in uc.ESTIMATORS}
    for rep in range(reps):
        for r in uc.main_replicate(cell, rep, boot=0, ci=False):
            if r["cls"] == 1:
                err[r["estimator"]].append(r["est"] - r["truth"])
    return {m: np.asarray(v) for m, v in err.items()}


def test_unbiased_when_calibrated_and_emq_biased_when_overconfident():
    cal = uc.MAIN_CELLS.index(("binary", 1000, "calibrated"))
    over = uc.MAIN_CELLS.index(("binary", 1000, "overconfident"))
    err = _errors(cal, 50)
    for m, e in err.items():
        se = e.std(ddof=1) / np.sqrt(e.size)
        assert abs(e.mean()) < 4 * se, m
    err = _errors(over, 10)
    emq = err["EMQ"]
    # over-confident posteriors pull EMQ's base rate away from the lab's 0.5 less than the
    # truth 0.2 needs: it is biased upwards (about +0.07, SD 0.01); URC does not need
    # calibration (its binary partition only uses the ranks of the predictions)
    assert emq.mean() > 8 * emq.std(ddof=1) / np.sqrt(emq.size)
    urc = err["URC"]
    assert abs(urc.mean()) < 4 * urc.std(ddof=1) / np.sqrt(urc.size)


def test_bootstrap_intervals_bracket_estimates():
    row = {(r["estimator"], r["cls"]): r for r in uc.main_replicate(0, 0, boot=40)}
    for m in ("EMQ", "ACC", "PACC"):
        r = row[m, 1]
        assert r["lower"] < r["est"] < r["upper"], m
        assert r["upper"] - r["lower"] < 0.5, m


def test_n_bins_rules():
    assert [uc.choose_n_bins_rule(n, 2) for n in (100, 300, 1000, 20000)] == [2, 4, 16, 256]
    assert uc.choose_n_bins_rule(20000, 2, max_bins=32) == 32
    assert [uc.choose_n_bins_rule(n, 3) for n in (100, 300, 1000)] == [1, 1, 4]
    rng = np.random.default_rng(3)
    lab, lab_y, field, _ = uc.simulate("binary", 1000, rng)
    m = uc.choose_n_bins_variance(lab[:, 1], lab_y, field[:, 1], (2, 4, 8))
    assert m in (2, 4, 8)


def test_asymptotic_sd_limits():
    # with M_A known, URC's binned likelihood loses information to EMQ's exact posteriors, less
    # with more bins: 2 bins clearly worse, 32 bins within 1% (a refinement of the partition
    # cannot lose information); the lab set's sampling error only adds variance
    sd = uc.asymptotic_sd("binary", 1000, (2, 32), n_big=100_000).set_index(
        ["estimator", "n_bins"]).sd1
    emq = sd["EMQ (exact posteriors)", 0]
    assert sd["URC, M_A known", 2] > 1.1 * emq
    assert sd["URC, M_A known", 32] == pytest.approx(emq, rel=0.01)
    assert sd["URC joint", 32] > sd["URC, M_A known", 32]
    assert sd["URC joint", 2] > sd["URC joint", 32]
