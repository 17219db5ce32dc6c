import sys

import numpy as np
import pandas as pd

d = pd.read_csv(sys.argv[1])
def ms(x): x = np.asarray(x, float); return f"{x.mean():.3f} ({x.std(ddof=1) / np.sqrt(len(x)):.3f})"
o = []
for (s, m), x in d.groupby(["setting", "method"], sort=False):
    o.append(dict(setting=s, method=m, reps=len(x), rmse=f"{np.sqrt(x.mse.mean()):.3f}", mse=ms(x.mse), mean_err=ms(x.mean_err),
                  within_rep_sd_of_err=f"{x.within_sd_err.mean():.3f}", corr_with_truth=f"{x.corr_est_truth.mean():.2f}"))
print(pd.DataFrame(o).to_string(index=False))
