"""Summarise detm_bootstrap_starts_interval.py's raw files (session 74)."""

import glob
from pathlib import Path

import numpy as np

RAW = Path(__file__).resolve().parent / "results" / "detm_bootstrap_starts_raw"

TOL = 1e-4
V = ["cur", "map", "both"]
print(
    "| world | variant | DETM misses vs ref (first 40; ref = best variant, DETM.fit()) | gap median / max | misses vs best variant (all) | profile value at pi-hat: lower than best variant (all) | mean R*ref40 - R*v | q95 R*v (all) | q95 R*v (first 40) | q95 R* with full max (first 40) | CPU ms |"  # noqa: E501
)
print("|---|---|---|---|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(str(RAW / "out_int_*.npz"))):
    z = np.load(f)
    Q, T, F = z["Q"], z["T"], z["F"]
    w = f.split("out_int_")[1][:-4]
    full = ~np.isnan(F)
    nf = full.sum()
    Dq = Q[:, :, 1].max(1)
    Pq = Q[:, :, 2].max(1)
    Dref = np.maximum(Dq[full], F[full])
    Rref = np.maximum(0, 2 * (Dref - Pq[full]))  # full maximum, best profile value of the variants
    for k, v in enumerate(V):
        g = Dref - Q[full, k, 1]
        m = g > TOL
        print(
            f"| {w} | {v} | {m.sum()}/{nf} | {np.median(g[m]) if m.any() else 0:.2f} / {g[m].max() if m.any() else 0:.2f} | "  # noqa: E501
            f"{(Dq - Q[:, k, 1] > TOL).sum()}/{len(Q)} | {(Pq - Q[:, k, 2] > TOL).sum()}/{len(Q)} | "
            f"{np.mean(Rref - Q[full, k, 0]):.2f} | {np.quantile(Q[:, k, 0], 0.95):.2f} | "
            f"{np.quantile(Q[full, k, 0], 0.95):.2f} | {np.quantile(Rref, 0.95):.2f} | {1e3 * T[:, k].mean():.0f} |"  # noqa: E501
        )
