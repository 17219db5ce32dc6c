"""The study of confidence-set components beyond the reported limits
(studies/detm_set_components.py, session 51): its fast version, on the replicate that
motivated it; the full study is a script (outside CI)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

STUDIES = Path(__file__).resolve().parents[2] / "studies"
spec = importlib.util.spec_from_file_location("detm_set_components",
                                              STUDIES / "detm_set_components.py")
study = importlib.util.module_from_spec(spec)
spec.loader.exec_module(study)


def test_the_grid_finds_the_component_beyond_the_limit():
    # SAR design, n = m = 1000, pi = 0.3, seed 47000020 (session 51): upper limit 0.4615,
    # reported as an interval in (C51) (the three outside points 0.596, 0.731, 0.865 lie
    # outside the set), while R* from every start is 3.29-3.82 at pi = 0.50-0.547 beyond 4.0
    # at 0.47-0.48. Since (C51) the maxima already known beyond the limits count too (R* =
    # 3.33 at 0.525, a limit search's point): the set is reported as not an interval
    row = study.one("sar", 0.3, 1000, 15, 47000020)
    assert row["upper"] == pytest.approx(0.461479, abs=1e-5)
    assert not row["interval"]
    assert row["upper_n_inside"] >= 4
    assert 0.53 < row["upper_outermost"] < 0.55
    assert row["upper_min_r"] < study.CUT
    assert row["lower_n_inside"] == 0 and row["lower_min_r"] > study.CUT
    assert not (row["upper_above"] or row["lower_above"])
    # the interval reported is the set's hull (session 77): from the component's lower limit
    # to the limit of the part beyond it, which holds the grid's outermost point inside
    assert row["hull_lower"] == row["lower"]
    assert row["upper_outermost"] < row["hull_upper"] < row["upper_outermost"] + study.STEP
    # the grid's step from the limit
    assert np.isclose((row["upper_outermost"] - row["upper"]) / study.STEP,
                      round((row["upper_outermost"] - row["upper"]) / study.STEP))
