"""Random multiclass URC problems: their profile intervals and Bartlett factors, with CPU times,
from the puinfer on ``PYTHONPATH`` (compare two trees, each in its own process).

    PYTHONPATH=<tree> python benchmarks/compare_urc_random.py out.pkl 0 100

Problem ``seed`` (rng ``1000 + seed``): 3-5 classes; 1-60 groups of 50, 300 or 2,000 rows; base
rates from Dirichlet(0.5, 2 or 8); lab sets of 60-4,000; 3, 4 or 6 bins; a prior strength in a
quarter, ``lab_pseudocount=0`` in a fifth, the fixed likelihood in a fifth; Bartlett factors
(``n_boot=6``) for every third joint problem (sessions 90-91)."""

import os
import pickle
import sys
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from puinfer import URC  # noqa: E402
from puinfer.simulate.urc import simulate_urc  # noqa: E402


def problem(seed):
    """The fitted results of problem ``seed`` and its description."""
    rng = np.random.default_rng(1000 + seed)
    k = int(rng.integers(3, 6))
    G = int(rng.choice([1, 2, 5, 12, 30, 60]))
    n_lab = int(rng.choice([60, 200, 1000, 4000]))
    m = int(rng.choice([50, 300, 2000]))
    rates = rng.dirichlet(float(rng.choice([0.5, 2.0, 8.0])) * np.ones(k), size=G)
    fit = {}
    if rng.random() < 0.25:
        fit["prior_strength"] = float(rng.choice([0.5, 2.0]))
    if rng.random() < 0.2:
        fit["lab_pseudocount"] = 0.0
    if rng.random() < 0.2:
        fit["likelihood"] = "fixed"
    n_bins = int(rng.choice([3, 4, 6]))
    sim = simulate_urc(n_lab=n_lab, n_field=[m] * G, lab_base_rates=[1 / k] * k,
                       field_base_rate=rates, separation=float(rng.choice([0.8, 1.5, 2.5])),
                       rng=rng)
    res = URC(sim.lab_pred, sim.lab_y, n_bins=n_bins).fit(
        sim.field_pred, groups=sim.field_group if G > 1 else None, **fit)
    return res, dict(k=k, G=G, n_lab=n_lab, m=m, fit=fit)


def run(seed) -> dict:
    """Problem ``seed``'s intervals (and Bartlett factors), their CPU s and any error."""
    try:
        res, row = problem(seed)
    except Exception as e:  # noqa: BLE001 - recorded, compared between trees
        return dict(seed=seed, error=f"fit: {type(e).__name__}: {e}"[:200])
    row.update(seed=seed, ci=None, error=None, bf=None, t_bf=np.nan)
    t = time.process_time()
    try:
        row["ci"] = res.conf_int(0.05).to_numpy()
    except Exception as e:  # noqa: BLE001
        row["error"] = f"{type(e).__name__}: {e}"[:200]
    row["t_ci"] = time.process_time() - t
    if seed % 3 == 0 and res.likelihood == "joint":
        t = time.process_time()
        try:
            row["bf"] = res.bartlett_factors(n_boot=6).to_numpy()
        except Exception as e:  # noqa: BLE001
            row["bf"] = f"{type(e).__name__}: {e}"[:200]
        row["t_bf"] = time.process_time() - t
    return row


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    out, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rows = []
    for seed in range(lo, hi):
        rows.append(run(seed))
        r = rows[-1]
        print(seed, r.get("k"), r.get("G"), r.get("n_lab"), r.get("m"), r.get("fit"),
              f"{r.get('t_ci', np.nan):.2f}s", r.get("error") or "", flush=True)
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)
