"""Every vignette in ``vignettes/`` executes end to end (jupytext percent-format scripts)."""

import os
import runpy
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pytest

matplotlib.use("Agg")

VIGNETTES = sorted((Path(__file__).resolve().parent.parent / "vignettes").glob("*.py"))


@pytest.mark.parametrize("path", VIGNETTES, ids=[p.stem for p in VIGNETTES])
def test_vignette_runs(path, tmp_path, monkeypatch):
    if path.stem.startswith("dask_"):  # needs the optional extra puinfer[dask]
        pytest.importorskip("distributed")
        pytest.importorskip("dask.dataframe")
    monkeypatch.chdir(tmp_path)  # figures a vignette saves land in a temporary folder
    monkeypatch.setenv("PUINFER_VIGNETTE_TEST", "1")
    runpy.run_path(str(path), run_name="__main__")
    plt.close("all")


def test_there_are_vignettes():
    assert VIGNETTES, "no vignettes found"
    assert os.path.isdir(VIGNETTES[0].parent)
