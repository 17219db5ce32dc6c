"""Task 2: the pooled-vs-grouped discrepancy, fits only (no group intervals).
D_bse = (size-weighted mean of the joint grouped fit's rates - one-group joint fit's rate) / bse of the
one-group fit; D_prof uses the one-group fit's profile half-width / 1.96 instead.
Usage: python diag.py r0 r1 out.csv name:G:m:n_lab:nbins:spread [...]   (nbins 0 = default; spread 1 = rates evenly over [0.1, 0.5])"""
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd

import puinfer as pu
from puinfer.simulate.urc import simulate_urc

warnings.simplefilter("ignore")
r0, r1 = map(int, sys.argv[1:3]); out = sys.argv[3]
settings = [s.split(":") for s in sys.argv[4:]]
t00 = time.time()
for r in range(r0, r1):
    rows = []
    for name, G, m, n_lab, nb, spread in settings:
        G, m, n_lab, nb, spread = map(int, (G, m, n_lab, nb, spread))
        rates = list(np.linspace(0.1, 0.5, G)) if spread else [0.3] * G
        sim = simulate_urc(n_lab=n_lab, n_field=m, lab_base_rates=0.3, field_base_rate=rates,
                           rng=[8702, r], lab_design="stratified")
        truth = sim.field_base_rates[:, 1]
        mod = pu.URC(sim.lab_pred, sim.lab_y, n_bins=nb or None)
        rp = mod.fit(sim.field_pred); p1 = float(rp.base_rate.iloc[0]); se1 = float(rp.bse.iloc[0])
        cp = rp.conf_int(); plo, phi = float(cp.lower.iloc[0]), float(cp.upper.iloc[0])
        rj = mod.fit(sim.field_pred, groups=sim.field_group)
        pj = rj.base_rate.to_numpy(); n = rj.n_field.to_numpy(); wj = float(np.average(pj, weights=n))
        rf = mod.fit(sim.field_pred, groups=sim.field_group, likelihood="fixed")
        rf1 = mod.fit(sim.field_pred, likelihood="fixed")
        pf = rf.base_rate.to_numpy(); wf = float(np.average(pf, weights=n))
        rows.append(dict(setting=name, rep=r, G=G, m=m, n_lab=n_lab, A=mod.partition.n_cells, spread=spread,
                         true_wmean=float(np.average(truth, weights=n)), pooled=p1, pooled_se=se1,
                         pooled_lo=plo, pooled_hi=phi, joint_wmean=wj, D_bse=(wj - p1) / se1,
                         D_prof=(wj - p1) / ((phi - plo) / 2 / 1.959964),
                         fixed_wmean=wf, fixed_pooled=float(rf1.base_rate.iloc[0]),
                         joint_err=wj - float(np.average(truth, weights=n))))
    pd.DataFrame(rows).to_csv(out, mode="a", header=not os.path.exists(out), index=False)
    if r % 10 == 0: print(r, f"{time.time()-t00:.0f}s", flush=True)
