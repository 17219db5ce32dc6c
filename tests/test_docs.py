"""The documentation builds with warnings as errors (the vignettes executed as notebooks).

Runs the README's command, ``python -m sphinx -W --keep-going -b html docs <out>``, into a
temporary folder; the docs extra (``pip install -e ".[test,docs]"``) provides Sphinx.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("sphinx", reason="the docs extra is not installed: pip install -e '.[docs]'")


def test_docs_build_without_warnings(tmp_path):
    out = tmp_path / "html"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    # the vignettes' quick settings (fewer bootstrap resamples, a smaller down-sampling study:
    # the same code and cells, about 35 s less); README's command builds the full site
    env["PUINFER_VIGNETTE_TEST"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q",
         "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"sphinx failed:\n{proc.stdout[-5000:]}\n{proc.stderr[-10000:]}"
    # -q prints only warnings and errors: there must be none, except one known race of the
    # notebook kernel's teardown (ipykernel flushes stderr on its control channel after the
    # socket is closed; tornado logs it; the build and every page are unaffected)
    err = _without_kernel_teardown_noise(proc.stderr)
    assert "WARNING" not in err and "ERROR" not in err, err[-10000:]
    # the pages exist: guide, API stubs, executed vignettes with their outputs and figures
    for page in ("index", "getting_started", "guide/detm", "guide/calem", "guide/urc",
                 "guide/prior_shift", "api", "generated/puinfer.DETM",
                 "generated/puinfer.HypothesisTestResult", "vignettes/urc_base_rates",
                 "vignettes/urc_regression", "generated/puinfer.RegressionURC",
                 "generated/puinfer.anova", "generated/puinfer.sklearn.DETMClassifier"):
        assert (out / f"{page}.html").is_file(), page
    # every vignette executed, not just highlighted source (tests/test_vignettes.py leaves
    # these to this build)
    for nb in (ROOT / "docs" / "vignettes").glob("*.py"):
        page = (out / "vignettes" / f"{nb.stem}.html").read_text(encoding="utf-8")
        assert "cell_output" in page, nb.stem
    vignette = (out / "vignettes" / "detm_mobile_phone.html").read_text(encoding="utf-8")
    assert "SeparationWarning" in vignette and "output stderr" in vignette  # warnings shown
    assert list((out / "_images").glob("*.png")), "the vignettes' figures are missing"
    # each vignette that draws shows its figures (a vignette that switched to the Agg backend
    # under PUINFER_VIGNETTE_TEST showed none, and the check above still passed)
    for nb in (ROOT / "docs" / "vignettes").glob("*.py"):
        if "plt." in nb.read_text(encoding="utf-8") or ".plot(" in nb.read_text(encoding="utf-8"):
            page = (out / "vignettes" / f"{nb.stem}.html").read_text(encoding="utf-8")
            assert "<img" in page, f"{nb.stem}: no figure shown"
    api = (out / "generated" / "puinfer.DETM.html").read_text(encoding="utf-8")
    assert "from_formula" in api and "Parameters" in api


def _without_kernel_teardown_noise(stderr: str) -> str:
    """``stderr`` without the tracebacks that tornado logs when ipykernel, shutting down, writes
    to its already closed ZMQ socket (each block from the tornado line to the ``ZMQError``)."""
    out, skip = [], False
    for line in stderr.splitlines():
        if line.startswith("ERROR:tornado.general:Uncaught exception in ZMQStream callback"):
            skip = True
        if not skip:
            out.append(line)
        elif "ZMQError: Socket operation on non-socket" in line:
            skip = False
    return "\n".join(out)
