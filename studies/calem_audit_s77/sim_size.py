"""Size of CalEMResults.test_bias() without label bias.  usage: python sim_size.py WORLD NREP SEED
WORLD: logit (correctly specified logistic world, a=-1, b=1, sd=1.5), g1, g2 (paper design,
clean y on every row, event_prob 0.5)."""

import sys
import time

import numpy as np
import pandas as pd
from common import fit, gen_logistic, gen_paper

world, nrep, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cals = sys.argv[4].split(",") if len(sys.argv) > 4 else ["logistic", "beta", "spline", "spline_lam1"]
sizes = [(200, 2000), (200, 20000), (1000, 2000), (1000, 20000)]
rows = []
t0 = time.time()
for ci, (nc, nt) in enumerate(sizes):
    for rep in range(nrep):
        ss = np.random.SeedSequence([seed, ci, rep])
        rng = np.random.default_rng(ss)
        if world == "logit":
            s, lab, tr = gen_logistic(nc, nt, -1.0, 1.0, -1.0, rng)
        else:
            s, lab, tr = gen_paper(nc, nt, rng, miscal=world, bias=False)
        for cal in cals:
            try:
                r, t, w = fit(s, lab, tr, cal)
                rows.append(
                    dict(
                        world=world,
                        nc=nc,
                        nt=nt,
                        rep=rep,
                        cal=cal,
                        stat=t.statistic,
                        df=t.df,
                        p=t.pvalue,
                        valid=t.invalid_reason is None,
                        why=(t.invalid_reason or "")[:120],
                        k=len(r.params),
                        conv=r.converged,
                        nwarn=len(w),
                        warn="|".join(w)[:200],
                    )
                )
            except Exception as e:  # recorded, not hidden
                rows.append(
                    dict(
                        world=world,
                        nc=nc,
                        nt=nt,
                        rep=rep,
                        cal=cal,
                        stat=np.nan,
                        df=np.nan,
                        p=np.nan,
                        valid=False,
                        k=np.nan,
                        conv=False,
                        nwarn=-1,
                        warn=f"ERROR {type(e).__name__}: {str(e)[:150]}",
                    )
                )
    print(world, nc, nt, f"{time.time() - t0:.0f}s", flush=True)
    pd.DataFrame(rows).to_csv(f"results/size_{world}.csv", index=False)
