import numpy as np
import pandas as pd


def rate(x):
    x = np.asarray(x, float)
    n = x.size
    p = x.mean()
    return f"{100 * p:.1f} ({100 * np.sqrt(p * (1 - p) / n):.1f})"


for f, title in [
    ("results/power.csv", "POWER of test_bias under the paper's bias designs (event_prob 0.5)"),
    (
        "results/shift.csv",
        "test_bias WITHOUT bias, control scores ~ event_prob 0.5, treated ~ 0.2 (same P(Y|s))",
    ),
]:
    d = pd.read_csv(f)
    rows = []
    for (w, nc, nt, cal), g in d.groupby(["world", "nc", "nt", "cal"], sort=False):
        v = g[g.valid]
        rows.append(
            dict(
                world=w,
                nc=nc,
                nt=nt,
                cal=cal,
                n=len(g),
                invalid=int((~g.valid).sum()),
                rej5=rate(v.p < 0.05),
                rej10=rate(v.p < 0.10),
                mean_stat=round(v.stat.mean(), 2),
                df=round(v.df.mean(), 2),
            )
        )
    t = pd.DataFrame(rows)
    print(title)
    print(t.to_string(index=False))
    print()
    t.to_csv(f.replace(".csv", "_table.csv"), index=False)
