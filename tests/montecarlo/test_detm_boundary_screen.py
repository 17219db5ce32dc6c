"""The calibration of the screen of the points beyond a limit (studies/detm_boundary_screen.py,
session 79): its fast version, one recorded data set (session 78's known case, whose 90% set
has a narrow part beyond the upper limit); the full study (148 data sets of three worlds) is
a script outside CI."""

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from puinfer.models.detm import _profile

STUDIES = Path(__file__).resolve().parents[2] / "studies"
spec = importlib.util.spec_from_file_location("detm_boundary_screen",
                                              STUDIES / "detm_boundary_screen.py")
study = importlib.util.module_from_spec(spec)
spec.loader.exec_module(study)


def test_the_study_reproduces_a_recorded_data_set(monkeypatch):
    recorded = pd.read_csv(study.OUT)
    recorded = recorded[(recorded.world == "t2") & (recorded.seed == 2)].reset_index(drop=True)
    study.instrument(monkeypatch.setattr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fresh = study.one("t2", 2)
    assert len(fresh) == len(recorded) > 10
    assert (fresh.kind == recorded.kind).all()
    for col in ("r", "rise", "outcome", "bar"):
        np.testing.assert_allclose(fresh[col], recorded[col], rtol=1e-6, atol=1e-6)
    inside = fresh.outcome < fresh.bar
    assert inside.any()  # the narrow part's candidates
    # the screen at the package's share keeps every candidate found inside
    kept = fresh.r + _profile.BOUNDARY_RISE_SHARE * fresh.rise < fresh.bar
    assert kept[inside].all() and not kept.all()
