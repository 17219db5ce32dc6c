"""Fast Monte-Carlo check of URC's lab design (the full study: ``studies/urc_labdesign.py``,
tables in ``studies/results/urc_labdesign.md``).

One cell of the study: binary, lab population base rate 0.3, a random lab set of 1000, field
3000 with the lab population's base rate (no shift), 150 replicates. Tolerances are 3
Monte-Carlo standard errors of a proportion over 150 replicates (sqrt(p (1 - p) / 150)).
"""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

STUDY = Path(__file__).resolve().parents[2] / "studies" / "urc_labdesign.py"
spec = importlib.util.spec_from_file_location("urc_labdesign", STUDY)
study = importlib.util.module_from_spec(spec)
spec.loader.exec_module(study)

REPS = 150
#: URC.fit's current defaults (the study pins the defaults of its own time)
DEFAULTS = dict(fit_kw=dict(lab_pseudocount="perks", lab_prior="uniform"))
CELL = dict(k=2, n_lab=1000, design="random", lab=(0.7, 0.3), field=(0.7, 0.3), **DEFAULTS)


def _se(p):
    return np.sqrt(p * (1 - p) / REPS)


def test_random_lab_no_shift_size_and_coverage():
    # coverage from the profile statistic at the truth (the interval is {v : R(v) <= 3.841})
    df = pd.DataFrame([study.one_replicate(CELL, np.random.default_rng([1414, r]),
                                           intervals=False) for r in range(REPS)])
    size = (df.p_noshift < 0.05).mean()
    assert abs(size - 0.05) < 3 * _se(0.05)
    # p-values of a valid test are uniform under the null (Kolmogorov-Smirnov at 0.1%)
    assert stats.kstest(df.p_noshift, "uniform").pvalue > 1e-3
    # the stratified form (the lab sample's share taken as known) rejects at least as often on
    # the same data (its null is one point of the random design's; 1000-replicate study: 9.4%
    # against 5.9% in this cell, too close for a fast check of the difference)
    naive = df.p_noshift_stratified_null < 0.05
    assert np.all(naive | (df.p_noshift >= 0.05))
    cover = (df.R_true1 <= stats.chi2.ppf(0.95, 1)).mean()
    assert cover > 0.95 - 3 * _se(0.95)


SMALL = dict(k=3, n_lab=100, design="stratified", lab=(0.5, 0.3, 0.2), field=(0.5, 0.3, 0.2))
SMALL_REPS = 150


def test_small_lab_defaults_hold_the_no_shift_statistic_and_the_profile():
    # Three classes, 100 lab items, stratified: the cell where Firth's uniform 1/2 per cell made
    # the no-shift test conservative (3.4% at 5%, mean statistic 1.84 against df = 2, 3000
    # replicates; studies/results/urc_pseudocount_variants.md; 3.8% in
    # studies/results/urc_pc_default.md, where Perks' 1/|A|, the default since session 71,
    # rejected 4.6%). Paired on the same data, the default's statistic is larger than Firth's
    # (fewer pseudo-items per class shrink the lab histograms less); its mean is that of
    # chi-square(2) within 3 Monte-Carlo SEs (SD 2); and the profile statistic at the truth,
    # averaged over the classes, is not above 1 (+ 3 SEs; chi-square(1) averaged over three
    # correlated classes has SD at most sqrt(2)).
    default, firth, r_true = [], [], []
    for r in range(SMALL_REPS):
        rng = [1515, r]
        res = study.one_replicate(dict(SMALL, **DEFAULTS), np.random.default_rng(rng),
                                  intervals=False)
        assert res["lab_pseudocount"] == 1 / res["n_cells"]
        default.append(res["stat_noshift"])
        r_true.append(np.mean([res[f"R_true{j}"] for j in range(3)]))
        uni = study.one_replicate(
            dict(SMALL, fit_kw=dict(lab_pseudocount=0.5, lab_prior="uniform")),
            np.random.default_rng(rng), intervals=False)
        firth.append(uni["stat_noshift"])
    default, firth = np.asarray(default), np.asarray(firth)
    diff = default - firth
    assert diff.mean() > 2 * diff.std() / np.sqrt(SMALL_REPS)
    assert abs(default.mean() - 2) < 3 * 2 / np.sqrt(SMALL_REPS)
    assert np.mean(r_true) < 1 + 3 * np.sqrt(2) / np.sqrt(SMALL_REPS)


def test_study_extends_chosen_cells_on_new_seeds(tmp_path, monkeypatch):
    # the restartable run: --cells restricts the cells, a larger --reps adds replicates
    # [seed, cell, rep] with new rep indices only, and nothing already in the CSV is redone
    monkeypatch.setitem(study.CELLS, "null", lambda: [CELL, dict(CELL, design="stratified")])
    path = tmp_path / "raw.csv"
    study.run("null", 2, 14, path, only={1})
    study.run("null", 3, 14, path)
    df = pd.read_csv(path)
    assert sorted(zip(df.cell, df.rep, strict=True)) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    one = study.one_replicate(dict(CELL, design="stratified"),
                              np.random.default_rng([14, 1, 2]), intervals=False)
    row = df[(df.cell == 1) & (df.rep == 2)].iloc[0]
    assert row.p_noshift == one["p_noshift"] and row.R_true1 == one["R_true1"]
    t = study.rounds_table(df, first=2)
    assert list(t.reps_first) == [2, 2]
    assert list(t.reps_new) == [1, 1] and list(t.reps) == [3, 3]
