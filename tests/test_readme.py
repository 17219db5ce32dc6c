"""The README's quick start runs as written (each ```python block on its own), and the numbers
it quotes are the ones the code gives."""

import re
import warnings
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pytest

matplotlib.use("Agg")

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_a_quick_start_per_model():
    text = "\n".join(BLOCKS)
    for name in ("pu.DETM", "pu.SETM", "pu.CalEM", "pu.URC", "pu.adjust_prior",
                 "pu.downsampling_correction"):
        assert name in text


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_readme_block_runs(i, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ns = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the models' warnings are tested where they are raised
        exec(compile(BLOCKS[i], f"README.md block {i}", "exec"), ns)
    plt.close("all")
    if "detm" in ns:
        # quoted in the README: pi-hat 0.6667 and the 95% interval [0.64254, 0.69022]
        # (Liu et al., Section 5.2: [0.6425, 0.6903], ours rounded outward)
        ci = ns["detm"].conf_int_pi(method="profile")
        assert ns["detm"].pi == pytest.approx(2 / 3, abs=5e-5)
        assert ci["lower"] == pytest.approx(0.64254, abs=1e-5)
        assert ci["upper"] == pytest.approx(0.69022, abs=1e-5)
        assert ns["df"]["post"].notna().sum() == (ns["df"].labeled == 0).sum()
