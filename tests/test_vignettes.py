"""Every vignette in ``vignettes/`` executes end to end (jupytext percent-format scripts).

The documentation build (``tests/test_docs.py``, when the docs extra provides Sphinx and
myst-nb) executes the vignettes that ``docs/vignettes/`` links, as notebooks; they are not
run a second time here (about 100 s of the suite's CPU time, session 46). Without the docs
extra every vignette runs here. Both run them with ``PUINFER_VIGNETTE_TEST=1`` (fewer
resamples where a vignette reads it)."""

import importlib.util
import os
import runpy
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pytest

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent
VIGNETTES = sorted((ROOT / "vignettes").glob("*.py"))
#: the vignettes the documentation build executes (none without the docs extra)
IN_DOCS = {p.stem for p in (ROOT / "docs" / "vignettes").glob("*.py")} if all(
    importlib.util.find_spec(m) is not None for m in ("sphinx", "myst_nb")) else set()
HERE = [p for p in VIGNETTES if p.stem not in IN_DOCS]


@pytest.mark.parametrize("path", HERE, ids=[p.stem for p in HERE])
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


def test_every_vignette_is_executed_here_or_by_the_docs_build():
    # the documentation build executes what docs/vignettes links: links to vignettes/ files
    docs = sorted((ROOT / "docs" / "vignettes").glob("*.py"))
    assert all(p.resolve().parent == ROOT / "vignettes" for p in docs), docs
    assert {p.stem for p in HERE} | IN_DOCS == {p.stem for p in VIGNETTES}
