"""Tables of size (test_bias) and coverage (conf_int, linear predictor, h band) with MC SEs."""

import glob

import numpy as np
import pandas as pd


def rate(x):
    x = np.asarray(x, float)
    x = x[~np.isnan(x)]
    n = x.size
    if n == 0:
        return "n/a"
    p = x.mean()
    return f"{100 * p:.1f} ({100 * np.sqrt(p * (1 - p) / n):.1f})"


out = []
for f in sorted(glob.glob("results/size_*.csv")):
    d = pd.read_csv(f)
    for (w, cal, nc, nt), g in d.groupby(["world", "cal", "nc", "nt"], sort=False):
        v = g[g.valid]
        out.append(
            dict(
                world=w,
                cal=cal,
                nc=nc,
                nt=nt,
                n=len(g),
                invalid=int((~g.valid).sum()),
                warned=int((g.nwarn > 0).sum()),
                rej5=rate(v.p < 0.05),
                rej10=rate(v.p < 0.10),
                mean_stat=round(v.stat.mean(), 2),
                mean_df=round(v.df.mean(), 2),
                var_stat=round(v.stat.var(), 2),
                rej5_nowarn=rate(v[v.nwarn == 0].p < 0.05),
            )
        )
if out:
    t = pd.DataFrame(out)
    print("SIZE of test_bias (% rejected, MC SE)")
    print(t.to_string(index=False))
    t.to_csv("results/table_size.csv", index=False)

out = []
for f in sorted(glob.glob("results/cover_*.csv")):
    d = pd.read_csv(f)
    d = d[d.nwarn >= 0]
    for (w, cal, nc, nt), g in d.groupby(["world", "cal", "nc", "nt"], sort=False):
        k = sum(1 for c in g.columns if c.startswith("est") and g[c].notna().any())
        row = dict(
            world=w,
            cal=cal,
            nc=nc,
            nt=nt,
            n=len(g),
            warned=int((g.nwarn > 0).sum()),
            clipped=round(g.share_clipped.mean(), 3),
        )
        for j in range(k):
            cov = (g[f"lo{j}"] <= g[f"true{j}"]) & (g[f"true{j}"] <= g[f"hi{j}"])
            row[f"cov_p{j}"] = rate(cov)
            row[f"sd/se_p{j}"] = (
                round(g[f"est{j}"].std() / g[f"se{j}"].median(), 2) if cal in ("logistic", "beta") else ""
            )
        for i in range(3):
            z = (g[f"lp{i}"] - g[f"lptrue{i}"]) / g[f"lpse{i}"]
            row[f"cov_lp{i}"] = rate(np.abs(z) <= 1.959964)
        for i in range(3):
            cov = (g[f"hlo{i}"] <= g[f"htrue{i}"] + 1e-12) & (g[f"htrue{i}"] - 1e-12 <= g[f"hhi{i}"])
            row[f"cov_h{i}"] = rate(cov)
        out.append(row)
if out:
    t = pd.DataFrame(out)
    print("\nCOVERAGE of 95% intervals (% covering, MC SE)")
    print(t.to_string(index=False))
    t.to_csv("results/table_cover.csv", index=False)
