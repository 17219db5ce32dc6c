"""Per replicate of mc.py's CSVs: the joint intervals' coverage and the joint mean's error against |D| (D = D_bse)."""
import sys

import numpy as np
import pandas as pd

for f in sys.argv[1:]:
    d = pd.read_csv(f); j = d[d.method == "joint"].copy()
    j["band"] = pd.cut(j.D_bse.abs(), [-0.01, 0.5, 1.0, np.inf], labels=["|D|<=0.5", "0.5-1", ">1"])
    j["err_joint"] = j.mean_est - j.mean_true; j["err_pooled"] = j.pooled - j.mean_true
    print(f"== {f}")
    print(j.groupby(["n_lab", "A", "band"], observed=True).agg(reps=("rep", "size"), joint_cover=("cover", "mean"),
          cover_lt_0_9=("cover", lambda x: (x < 0.9).mean()), err_joint=("err_joint", "mean"), err_pooled=("err_pooled", "mean")).round(3).to_string())
    print("share flagged (|D|>1 / >0.5) among replicates with joint coverage < 0.9:",
          j[j.cover < 0.9].groupby(["n_lab", "A"]).apply(lambda x: f"{(x.D_bse.abs() > 1).mean():.2f} / {(x.D_bse.abs() > 0.5).mean():.2f} of {len(x)}").to_dict())
