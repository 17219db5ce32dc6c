"""Task 2 tables from diag.csv: per setting, the joint grouped fit's error in the mean rate, its gap to the
pooled one-group fit, and the distribution of D = gap / pooled bse (and / profile half-width)."""
import sys

import numpy as np
import pandas as pd

df = pd.read_csv(sys.argv[1])
def ms(x):
    x = np.asarray(x, float); return f"{x.mean():.3f} ({x.std(ddof=1) / np.sqrt(len(x)):.3f})"
o = []
for s, d in df.groupby("setting", sort=False):
    a = d.D_bse.abs()
    o.append(dict(setting=s, G=d.G.iloc[0], lab=d.n_lab.iloc[0], A=d.A.iloc[0], spread=d.spread.iloc[0], reps=len(d),
                  joint_err=ms(d.joint_err), pooled_err=ms(d.pooled - d.true_wmean), fixed_err=ms(d.fixed_wmean - d.true_wmean),
                  gap=ms(d.joint_wmean - d.pooled), D_med=f"{d.D_bse.median():+.2f}", D_q90=f"{a.quantile(.9):.2f}", D_max=f"{a.max():.2f}",
                  **{f"P|D|>{t}": f"{(a > t).mean():.2f}" for t in (0.25, 0.5, 1.0)},
                  Dprof_gt_0_5=f"{(d.D_prof.abs() > 0.5).mean():.2f}"))
print(pd.DataFrame(o).to_string(index=False))
