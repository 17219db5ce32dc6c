"""Coverage of CalEMResults.conf_int() (95%) and of the treatment-effect band (_h_band, the band
plot_treatment_effect draws) in a correctly specified logistic world.
usage: python sim_cover.py WORLD NREP SEED [cals]
WORLD: bias (a=-1, b=1, c=0: logit P(Z=1|s) = logit P(Y=1|s) + 1) or nobias (c = a = -1).
True parameters: logistic (a, b); beta (a, b, b); spline (a + b * knot_j, knots as fitted)."""

import sys
import time

import numpy as np
import pandas as pd
from common import fit, gen_logistic
from scipy import stats
from scipy.special import expit

world, nrep, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cals = sys.argv[4].split(",") if len(sys.argv) > 4 else ["logistic", "beta", "spline", "spline_lam1"]
a, b = -1.0, 1.0
c = 0.0 if world == "bias" else -1.0
sizes = [(200, 2000), (500, 5000), (1000, 20000)]
T = np.array([-2.0, 0.0, 2.0])
S = expit(T)
h_true = 1 - expit(a + b * T) / expit(c + b * T)
q = stats.norm.ppf(0.975)
rows = []
t0 = time.time()
for ci, (nc, nt) in enumerate(sizes):
    for rep in range(nrep):
        rng = np.random.default_rng(np.random.SeedSequence([seed, ci, rep]))
        s, lab, tr = gen_logistic(nc, nt, a, b, c, rng)
        for cal in cals:
            base = dict(world=world, nc=nc, nt=nt, rep=rep, cal=cal)
            try:
                r, t, w = fit(s, lab, tr, cal)
                names = list(r.params.index)
                if cal == "logistic":
                    true = np.array([a, b])
                elif cal == "beta":
                    true = np.array([a, b, b])
                else:
                    true = a + b * r.basis.knots
                ci_ = r.conf_int(0.05).to_numpy()
                est, se = r.params.to_numpy(), r.bse.to_numpy()
                V = r.cov_params().to_numpy()
                X = r.model.calibrator.design(r.basis, S)
                lp, lp_se = X @ est, np.sqrt(np.einsum("ij,jk,ik->i", X, V, X))
                band = r._h_band(S, 0.05)
                hh = r.treatment_effect(S)
                d = dict(
                    base,
                    conv=r.converged,
                    nwarn=len(w),
                    warn="|".join(w)[:200],
                    share_clipped=r.share_clipped,
                    bias_p=t.pvalue,
                )
                for j in range(len(names)):
                    d[f"est{j}"], d[f"se{j}"], d[f"true{j}"] = est[j], se[j], true[j]
                    d[f"lo{j}"], d[f"hi{j}"] = ci_[j, 0], ci_[j, 1]
                    d[f"pv{j}"] = r.pvalues.iloc[j]
                for i in range(3):
                    d[f"lp{i}"], d[f"lpse{i}"], d[f"lptrue{i}"] = lp[i], lp_se[i], a + b * T[i]
                    d[f"h{i}"], d[f"htrue{i}"] = hh[i], h_true[i]
                    if isinstance(band, str):
                        d[f"hlo{i}"] = d[f"hhi{i}"] = np.nan
                    else:
                        d[f"hlo{i}"], d[f"hhi{i}"] = band[0][i], band[1][i]
                rows.append(d)
            except Exception as e:
                rows.append(
                    dict(base, conv=False, nwarn=-1, warn=f"ERROR {type(e).__name__}: {str(e)[:150]}")
                )
    print(world, nc, nt, f"{time.time() - t0:.0f}s", flush=True)
    pd.DataFrame(rows).to_csv(f"results/cover_{world}.csv", index=False)
