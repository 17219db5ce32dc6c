"""Re-analysis of the audit's size runs (results/size_{logit,g1,g2}.csv, the raw rows, not kept;
spline, 200 control rows): test_bias's rejections at 5% without bias, by which fit warned
SeparationWarning. test_bias().extra["caveat"] is given where the control, treated or pooled
fit separated (not CalEM's own fit). usage: python sep_figures.py [RESULTS_DIR]"""

import re
import sys

import numpy as np
import pandas as pd

res = sys.argv[1] if len(sys.argv) > 1 else "results"
d = pd.concat([pd.read_csv(f"{res}/size_{w}.csv") for w in ["logit", "g1", "g2"]])
d["warn"] = d.warn.fillna("")
s = d[(d.cal == "spline") & (d.nc == 200)]


def fits(w):
    return set(re.findall(r"SeparationWarning: (\w+) fit", w))


def row(lbl, m, r):
    p, n = r[m].mean(), int(m.sum())
    return (f"{lbl}: {100 * m.mean():.1f}% of data sets, rejected {100 * p:.1f} "
            f"({100 * np.sqrt(p * (1 - p) / max(n, 1)):.1f})% of {n}; others {100 * r[~m].mean():.1f}%")


for (w, nt), g in s.groupby(["world", "nt"]):
    f, r = g.warn.map(fits), g.p < 0.05
    print(f"{w} 200/{nt} ({len(g)} data sets)")
    print("   " + row("any fit separated (the audit's figure)", f.map(bool), r))
    print("   " + row("caveat (control/treated/pooled fit separated)",
                      f.map(lambda x: bool(x & {"control", "treated", "pooled"})), r))
    print("   " + row("only the CalEM fit separated", f.map(lambda x: x == {"CalEM"}), r))
