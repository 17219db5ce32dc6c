"""test_bias without label bias when control and treated scores are distributed differently
(paper design g1/g2, clean y on every row; control rows from event_prob 0.5, treated rows from
event_prob 0.2): P(Y=1|s) is the same curve in both groups, so H0 (no bias) holds.
usage: python sim_shift.py NREP SEED"""

import sys
import time

import numpy as np
import pandas as pd
from common import fit

from puinfer.simulate.calibration import simulate_calem

nrep, seed = int(sys.argv[1]), int(sys.argv[2])
rows = []
t0 = time.time()
for world in ["g1", "g2"]:
    for nc, nt in [(500, 5000), (1000, 20000)]:
        for rep in range(nrep):
            rng = np.random.default_rng(np.random.SeedSequence([seed, nc, nt, rep, world == "g1"]))
            dc = simulate_calem(nc * 2, event_prob=0.5, miscalibration=world, clean_share=0.5, rng=rng)
            dt = simulate_calem(nt * 2, event_prob=0.2, miscalibration=world, clean_share=0.5, rng=rng)
            dc, dt = dc.iloc[:nc], dt.iloc[:nt]
            s = np.r_[dc.score, dt.score]
            lab = np.r_[dc.y, dt.y]
            tr = np.r_[np.zeros(nc, int), np.ones(nt, int)]
            for cal in ["logistic", "beta", "spline"]:
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
                        nwarn=len(w),
                    )
                )
        print(world, nc, nt, f"{time.time() - t0:.0f}s", flush=True)
        pd.DataFrame(rows).to_csv("results/shift.csv", index=False)
