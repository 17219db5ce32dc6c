"""Slow Monte-Carlo checks of URC (500 replicates each; run with ``pytest -m slow``).

They call the functions of ``studies/urc_studies.py`` (which writes the full tables) and check
the claims against Monte-Carlo error bounds: |rate - nominal| < 3 MC standard errors.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

STUDY = Path(__file__).resolve().parents[2] / "studies" / "urc_studies.py"
spec = importlib.util.spec_from_file_location("urc_studies", STUDY)
urc_studies = importlib.util.module_from_spec(spec)
spec.loader.exec_module(urc_studies)

REPS = 500
BOUND = 3 * np.sqrt(0.95 * 0.05 / REPS)


@pytest.mark.slow
@pytest.mark.parametrize("n_lab", [200, 100_000])
def test_urc_joint_interval_coverage(n_lab):
    rows = urc_studies.coverage_cell(n_lab, 5000, 0.2, REPS, np.random.default_rng(n_lab))
    cov = {r["likelihood"]: r["coverage"] for r in rows}
    assert abs(cov["joint"] - 0.95) < BOUND
    if n_lab == 200:  # the paper's likelihood ignores the lab set's sampling error
        assert cov["fixed"] < 0.95 - BOUND
    else:
        assert abs(cov["fixed"] - 0.95) < BOUND


@pytest.mark.slow
def test_urc_test_sizes_joint():
    rows = urc_studies.tests_cell(REPS, np.random.default_rng(5), rate=0.2, groups=3,
                                  n_field=2000)
    rows += urc_studies.tests_cell(REPS, np.random.default_rng(6), rate=0.5)
    joint = [r for r in rows if r["likelihood"] == "joint" and not (
        r["test"] == "no_shift" and r["field_rate"] != 0.5)]
    assert {r["test"] for r in joint} == {"no_shift", "equal", "gof_pearson", "gof_lr"}
    for r in joint:
        assert abs(r["rejection_rate"] - 0.05) < 3 * np.sqrt(0.05 * 0.95 / REPS), r


@pytest.mark.slow
def test_urc_gof_power_when_axiom2_broken():
    rows = urc_studies.tests_cell(REPS, np.random.default_rng(7), rate=0.2, field_scale=1.5,
                                  n_lab=2000)
    gof = [r for r in rows if r["test"].startswith("gof") and r["likelihood"] == "joint"]
    assert all(r["rejection_rate"] > 0.9 for r in gof)
