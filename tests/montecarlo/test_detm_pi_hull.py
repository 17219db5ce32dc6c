"""The hull study (studies/detm_pi_hull.py, session 77): its fast version, one of its data sets
whose default set is two parts and whose part around pi-hat misses pi = 0.5 while the hull
covers it; the full study (400 data sets) is a script outside CI."""

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

STUDIES = Path(__file__).resolve().parents[2] / "studies"
spec = importlib.util.spec_from_file_location("detm_pi_hull", STUDIES / "detm_pi_hull.py")
study = importlib.util.module_from_spec(spec)
spec.loader.exec_module(study)


def test_the_study_reproduces_a_recorded_data_set_whose_hull_covers():
    seed = 77_000_158
    recorded = pd.read_csv(study.OUT / "detm_pi_hull_n1000.csv").set_index("seed").loc[seed]
    row = study.one(1000, seed)
    for key in ("pi_hat", "cal_lower", "cal_upper", "cal_comp_lower", "cal_comp_upper",
                "prof_lower", "prof_upper", "r_true"):
        assert row[key] == pytest.approx(recorded[key], abs=1e-6), key
    assert not row["cal_interval"]
    assert row["cal_comp_upper"] < study.PI0 < row["cal_upper"]  # the hull covers, the part not
    assert row["r_true"] > row["cal_cutoff"]  # pi = 0.5 lies in the gap between the parts
