"""The subset-test bootstrap study (studies/detm_lr_subset_boot.py, session 78): its fast
version, one of its data sets where chi-square rejects a true null at 5% and the bootstrap
reference does not; the full study (400 data sets of the weakly identified world, and the
well separated world and power) is a script outside CI."""

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

STUDIES = Path(__file__).resolve().parents[2] / "studies"
spec = importlib.util.spec_from_file_location("detm_lr_subset_boot",
                                              STUDIES / "detm_lr_subset_boot.py")
study = importlib.util.module_from_spec(spec)
spec.loader.exec_module(study)


def test_the_study_reproduces_a_recorded_data_set():
    r = 99
    recorded = pd.read_csv(study.OUT).set_index("r").loc[r]
    row = study.one(r)
    for key in ("stat", "p_chi2", "pi_small", "pi_big", "crit_smooth", "crit_discrete"):
        assert row[key] == pytest.approx(recorded[key], abs=1e-6), key
    for key in ("p_smooth", "p_discrete"):  # counts of resamples: equal
        assert row[key] == pytest.approx(recorded[key], abs=1e-12), key
    assert row["p_chi2"] < 0.05 < row["p_smooth"]  # chi-square rejects, the bootstrap not
    assert row["crit_smooth"] > 9  # (chi2(2)'s 95% quantile: 5.99)
