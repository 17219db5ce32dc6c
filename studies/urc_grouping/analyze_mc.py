"""Tables of mc.py's CSV: per (n_lab, A) and method, coverage (replicate-level SE), misses, width,
bias of the mean estimate (SE over replicates), and the mean estimate minus the pooled one-group fit (paired)."""
import sys

import numpy as np
import pandas as pd

df = pd.read_csv(sys.argv[1])
def ms(x):
    x = np.asarray(x, float); x = x[np.isfinite(x)]
    return f"{x.mean():.3f} ({x.std(ddof=1) / np.sqrt(len(x)):.3f})" if len(x) > 1 else "NA"
out = []
for (nl, A, meth), d in df.groupby(["n_lab", "A", "method"], sort=False):
    ok = d[d.n_ci > 0] if "error" in d else d
    out.append(dict(lab=nl, A=A, method=meth, reps=len(d), ci_errors=len(d) - len(ok),
                    groups_per_rep=int(ok.n_ci.iloc[0]) if len(ok) else 0,
                    coverage=ms(ok.cover), miss_low=f"{ok.miss_low.mean():.3f}", miss_high=f"{ok.miss_high.mean():.3f}",
                    all_covered=f"{np.mean(ok.cover == 1):.2f}", width=ms(ok.width),
                    bias=ms(d.mean_est - d.mean_true), minus_pooled=ms(d.mean_est - d.pooled)))
print(pd.DataFrame(out).to_string(index=False))
print("\npooled one-group joint fit (interval for the field's true mean rate), and the diagnostic:")
o = []
for (nl, A), d in df[df.method == "fixed"].groupby(["n_lab", "A"], sort=False):
    t = d.mean_true
    j = df[(df.method == "joint") & (df.n_lab == nl) & (df.A == A)].set_index("rep")
    o.append(dict(lab=nl, A=A, reps=len(d), pooled_cover=ms((d.pooled_lo <= t) & (t <= d.pooled_hi)),
                  pooled_width=ms(d.pooled_hi - d.pooled_lo), pooled_bias=ms(d.pooled - t), pooled_bse=ms(d.pooled_se),
                  D_bse_median=f"{d.D_bse.median():+.2f}", absD_gt_0_5=ms(d.D_bse.abs() > 0.5), absD_gt_1=ms(d.D_bse.abs() > 1),
                  joint_cover_lt_0_9=ms(j.cover < 0.9)))
print(pd.DataFrame(o).to_string(index=False))
