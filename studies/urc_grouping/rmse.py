"""Per-group accuracy (no intervals): RMSE over groups and replicates of joint, fixed and two-stage
group estimates, and the mean error. Same data as mc.py (rng [8701, r]).
Usage: python rmse.py r0 r1 out.csv name:G:m:n_lab:nbins:spread [...]"""
import os
import sys
import warnings

import numpy as np
import pandas as pd
import twostage as ts

import puinfer as pu
from puinfer.simulate.urc import simulate_urc

warnings.simplefilter("ignore")
r0, r1 = map(int, sys.argv[1:3]); out = sys.argv[3]
for r in range(r0, r1):
    rows = []
    for name, G, m, n_lab, nb, spread in (s.split(":") for s in sys.argv[4:]):
        G, m, n_lab, nb, spread = map(int, (G, m, n_lab, nb, spread))
        rates = list(np.linspace(0.1, 0.5, G)) if spread else [0.3] * G
        sim = simulate_urc(n_lab=n_lab, n_field=m, lab_base_rates=0.3, field_base_rate=rates, rng=[8701, r], lab_design="stratified")
        truth = sim.field_base_rates[:, 1]
        mod = pu.URC(sim.lab_pred, sim.lab_y, n_bins=nb or None); A = mod.partition.n_cells
        L = mod.lab_counts.to_numpy().astype(float)
        rp = mod.fit(sim.field_pred); rj = mod.fit(sim.field_pred, groups=sim.field_group)
        rf = mod.fit(sim.field_pred, groups=sim.field_group, likelihood="fixed")
        F = rj.observed.to_numpy(); p2 = ts.fit_groups(F, rp.M.to_numpy())
        for meth, p in (("joint", rj.base_rate.to_numpy()), ("fixed", rf.base_rate.to_numpy()), ("two_stage", p2)):
            e = p - truth
            rows.append(dict(setting=name, rep=r, method=meth, mse=np.mean(e ** 2), mean_err=e.mean(),
                             within_sd_err=e.std(), corr_est_truth=np.corrcoef(p, truth)[0, 1] if spread else np.nan))
    pd.DataFrame(rows).to_csv(out, mode="a", header=not os.path.exists(out), index=False)
