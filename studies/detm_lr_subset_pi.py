"""Size of ``pu.lr_test(small, big)`` for DETM/SETM covariate subsets where pi is weakly
determined (session 76; a helper's script, kept as run). Results and the summary:
``studies/results/detm_lr_subset_size.md`` (session 76 section); raw per-replicate rows in
``studies/results/detm_lr_subset_pi_raw_W{1,2,3}.csv``.

Usage (run in an empty directory; appends to res_WORLD_nN.csv and is restartable)::

    OPENBLAS_NUM_THREADS=1 python studies/detm_lr_subset_pi.py WORLD N REPS [CLASSES]

WORLD: W1 (pi = .5, positives N([.5, 0, 0], I), negatives N([1, 1, 0], I): session 75's
weakly identified world); W2 (pi = .3, positives [1, 0, 0], negatives [0, 2.5, 0]);
W3 (SCAR true: pi = .5, positives [0, 0, 0], negatives [1, 1, 0]). Source N(0, I) in all.
Tests on the same data: null x1 + x2 vs x1 + x2 + x3; power x1 + x3 vs x1 + x2 + x3 (W1,
seeds < 100). Data seeds ``default_rng([world, n, seed])``.
"""
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import puinfer as pu
from puinfer.simulate.detm import pu_normal

WORLDS = {"W1": (0.5, [0, 0, 0], [0.5, 0, 0], [1, 1, 0]),
          "W2": (0.3, [0, 0, 0], [1, 0, 0], [0, 2.5, 0]),
          "W3": (0.5, [0, 0, 0], [0, 0, 0], [1, 1, 0])}
world, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
classes = sys.argv[4].split(",") if len(sys.argv) > 4 else ["DETM", "SETM"]
tests = {"null": "labeled ~ x1 + x2"}
if world == "W1":
    tests["pow"] = "labeled ~ x1 + x3"
BIG = "labeled ~ x1 + x2 + x3"
csv = Path(f"res_{world}_n{n}.csv")
done = set(pd.read_csv(csv)["seed"]) if csv.exists() else set()
wid = int(world[1:])

def fit(cls, formula, df, row, key):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = getattr(pu, cls).from_formula(formula, data=df).fit()
        except Exception as e:
            row[f"{key}_err"] = f"{type(e).__name__}: {e}"[:300]
            r = None
    row[f"{key}_warn"] = " | ".join(f"{x.category.__name__}: {str(x.message)[:160]}" for x in w)
    if r is not None:
        row[f"{key}_pi"] = float(r.params["pi"])
        row[f"{key}_llfp"] = float(r.llf_penalized)
        row[f"{key}_llf"] = float(r.llf)
        row[f"{key}_conv"] = bool(r.converged)
    return r

for seed in range(reps):
    if seed in done:
        continue
    t0 = time.time()
    df = pu_normal(n, n, WORLDS[world][0], *WORLDS[world][1:], rng=np.random.default_rng([wid, n, seed]))
    row = {"seed": seed}
    for cls in classes:
        big = fit(cls, BIG, df, row, f"{cls}_big")
        for tname, f in tests.items():
            if tname == "pow" and seed >= 100:
                continue
            key = f"{cls}_{tname}"
            small = fit(cls, f, df, row, f"{key}_small")
            if big is None or small is None:
                continue
            row[f"{key}_raw"] = 2 * (big.llf_penalized - small.llf_penalized)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                try:
                    t = pu.lr_test(small, big)
                    row[f"{key}_stat"], row[f"{key}_df"], row[f"{key}_p"] = t.statistic, t.df, t.pvalue
                except Exception as e:
                    row[f"{key}_lrerr"] = f"{type(e).__name__}: {e}"[:300]
            row[f"{key}_lrwarn"] = " | ".join(f"{x.category.__name__}: {str(x.message)[:160]}" for x in w)
    row["secs"] = time.time() - t0
    pd.DataFrame([row]).to_csv(csv, mode="a", header=not csv.exists(), index=False)
