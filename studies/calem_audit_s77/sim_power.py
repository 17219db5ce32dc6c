"""Power of test_bias under the paper's bias designs (simulate_calem, event_prob 0.5).
usage: python sim_power.py NREP SEED"""

import sys
import time

import numpy as np
import pandas as pd
from common import fit, gen_paper

nrep, seed = int(sys.argv[1]), int(sys.argv[2])
rows = []
t0 = time.time()
for di, (mis, trn) in enumerate([("g1", "h1"), ("g1", "h2"), ("g2", "h1"), ("g2", "h2")]):
    for ci, (nc, nt) in enumerate([(200, 2000), (500, 5000)]):
        for rep in range(nrep):
            rng = np.random.default_rng(np.random.SeedSequence([seed, di, ci, rep]))
            s, lab, tr = gen_paper(nc, nt, rng, miscal=mis, transition=trn, bias=True)
            for cal in ["logistic", "beta", "spline"]:
                try:
                    r, t, w = fit(s, lab, tr, cal)
                    rows.append(
                        dict(
                            world=f"{mis}{trn}",
                            nc=nc,
                            nt=nt,
                            rep=rep,
                            cal=cal,
                            stat=t.statistic,
                            df=t.df,
                            p=t.pvalue,
                            valid=t.invalid_reason is None,
                            nwarn=len(w),
                        )
                    )
                except Exception as e:
                    rows.append(
                        dict(
                            world=f"{mis}{trn}",
                            nc=nc,
                            nt=nt,
                            rep=rep,
                            cal=cal,
                            valid=False,
                            nwarn=-1,
                            warn=f"ERROR {e!r:.150}",
                        )
                    )
        print(mis, trn, nc, nt, f"{time.time() - t0:.0f}s", flush=True)
        pd.DataFrame(rows).to_csv("results/power.csv", index=False)
