"""Summary of studies/detm_pi_hull_tilts.py's rows."""

import json
from pathlib import Path

import numpy as np

rows = [json.loads(l) for l in open(Path(__file__).resolve().parent / "results" / "detm_pi_hull_tilts.jsonl")]
ok = [r for r in rows if "error" not in r]
print(len(rows), "rows,", len(rows) - len(ok), "errors")
ni = [r for r in ok if not r["interval"]]
print("non-interval sets:", len(ni), "of", len(ok))
names = ["alpha1", "beta1[x1]", "beta1[x2]", "alpha2", "beta2[x1]", "beta2[x2]"]


def rate(sub, tag, n):
    v = [r[f"cover_{tag}"][n] for r in sub if r.get(f"cover_{tag}")]
    c = np.mean(v)
    return f"{c:.3f} (SE {np.sqrt(c * (1 - c) / len(v)):.3f}, k={len(v)})"


for sub, lab in ((ni, "non-interval fits"), (ok, "all fits")):
    print("==", lab)
    for n in names:
        print(f"  {n:10s} component-SE: {rate(sub, 'c', n)}   hull-SE: {rate(sub, 'h', n)}")
pi_h = np.mean([r["hull"][0] <= 0.3 <= r["hull"][1] for r in ni])
pi_c = np.mean([r["comp"][0] <= 0.3 <= r["comp"][1] for r in ni])
print("pi coverage in non-interval fits: hull", pi_h, "component", pi_c, "n", len(ni))
print(
    "all fits: hull",
    np.mean([r["hull"][0] <= 0.3 <= r["hull"][1] for r in ok]),
    "component",
    np.mean([r["comp"][0] <= 0.3 <= r["comp"][1] for r in ok]),
)
print(
    "median k: component",
    np.median([r["k_c"] for r in ni if "k_c" in r]),
    "hull",
    np.median([r["k_h"] for r in ni if "k_h" in r]),
)
print(
    "mean width non-interval: hull",
    np.mean([r["hull"][1] - r["hull"][0] for r in ni]),
    "comp",
    np.mean([r["comp"][1] - r["comp"][0] for r in ni]),
)
