"""Power against a small bias, LR test (test_bias) vs the one-sided stratified CMH test, in the
correctly specified logistic world: logit P(Z=1|s) = logit P(Y=1|s) + delta (a=-1, b=1).
300 data sets per cell, seed 81."""

import numpy as np
import pandas as pd
from common import fit, gen_logistic
from scipy import stats

from puinfer.models.calem.model import assumption1_test, score_histogram


def cmh_p(s, lab, tr):
    tr = tr.astype(bool)
    z, _ = assumption1_test(score_histogram(s[~tr], lab[~tr]), score_histogram(s[tr], lab[tr]))
    return stats.norm.sf(z)


rows = []
for delta in (0.15, 0.3):
    for ci, (nc, nt) in enumerate([(200, 2000), (500, 5000)]):
        for rep in range(300):
            rng = np.random.default_rng(np.random.SeedSequence([81, int(delta * 100), ci, rep]))
            s, lab, tr = gen_logistic(nc, nt, -1.0, 1.0, -1.0 + delta, rng)
            d = dict(delta=delta, nc=nc, nt=nt, rep=rep, cmh=cmh_p(s, lab, tr))
            for cal in ("logistic", "spline"):
                d[cal] = fit(s, lab, tr, cal)[1].pvalue
            rows.append(d)
d = pd.DataFrame(rows)
d.to_csv("results/power_small.csv", index=False)


def rate(x):
    x = np.asarray(x, float)
    n = x.size
    p = x.mean()
    return f"{100 * p:.1f} ({100 * np.sqrt(p * (1 - p) / n):.1f})"


t = (
    d.groupby(["delta", "nc", "nt"])
    .agg(**{f"{c}_rej5": (c, lambda p: rate(p < 0.05)) for c in ("logistic", "spline", "cmh")})
    .reset_index()
)
print(t.to_string(index=False))
t.to_csv("results/power_small_table.csv", index=False)
