"""Tasks 1+3 (and the diagnostic of task 2) on the same data sets.
Per replicate r and setting (n_lab, nbins): simulate G groups x m rows (true rate 0.3, or spread
evenly over [0.1, 0.5] with --spread), lab stratified at 0.3; fit
  joint   : URC(...).fit(groups)           intervals: profile(group).conf_int() for the first
            `nsub` groups (= what conf_int() gives them; all groups if nsub >= G)
  fixed   : fit(groups, likelihood="fixed") conf_int() for all groups
  ts_naive, ts_delta : two-stage (twostage.py), all groups
  pooled  : one-group joint fit (bse, conf_int()) -> diagnostic D = (wmean(joint groups) - pooled)/se
Usage: python mc.py r0 r1 G m nsub spread(0/1) out.csv n_lab:nbins [n_lab:nbins ...]   (nbins 0 = default)"""
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd
import twostage as ts

import puinfer as pu
from puinfer.simulate.urc import simulate_urc

warnings.simplefilter("ignore")
r0, r1, G, m, nsub, spread = map(int, sys.argv[1:7]); out = sys.argv[7]
settings = [tuple(map(int, s.split(":"))) for s in sys.argv[8:]]
rates = list(np.linspace(0.1, 0.5, G)) if spread else [0.3] * G
t00 = time.time()
def summ(method, truth, est, lo, hi, sub=None, **kw):
    d = dict(method=method, mean_est=est.mean(), mean_true=truth.mean())
    s = slice(None) if sub is None else sub
    t, l, h = truth[s], lo[s], hi[s]
    d.update(n_ci=len(t), cover=np.mean((l <= t) & (t <= h)), miss_low=np.mean(h < t),
             miss_high=np.mean(l > t), width=np.mean(h - l)); d.update(kw); return d
for r in range(r0, r1):
    for n_lab, nb in settings:
        t0 = time.time()
        sim = simulate_urc(n_lab=n_lab, n_field=m, lab_base_rates=0.3, field_base_rate=rates,
                           rng=[8701, r], lab_design="stratified")
        truth = sim.field_base_rates[:, 1]
        mod = pu.URC(sim.lab_pred, sim.lab_y, n_bins=nb or None)
        A = mod.partition.n_cells; c = 1.0 / A
        L = mod.lab_counts.to_numpy().astype(float)
        base = dict(rep=r, n_lab=n_lab, A=A, G=G, m=m, spread=spread, field_share=sim.field_y.mean())
        rows = []
        # pooled one-group joint fit
        rp = mod.fit(sim.field_pred); p1 = float(rp.base_rate.iloc[0]); se1 = float(rp.bse.iloc[0])
        cp = rp.conf_int(); plo, phi = float(cp.lower.iloc[0]), float(cp.upper.iloc[0])
        # joint grouped
        rj = mod.fit(sim.field_pred, groups=sim.field_group)
        pj = rj.base_rate.to_numpy(); n = rj.n_field.to_numpy(); F = rj.observed.to_numpy()
        wj = float(np.average(pj, weights=n))
        diag = dict(pooled=p1, pooled_se=se1, pooled_lo=plo, pooled_hi=phi, joint_wmean=wj,
                    D_bse=(wj - p1) / se1, D_prof=(wj - p1) / ((phi - plo) / 2 / 1.959964))
        k = min(nsub, G); sub = np.arange(k) if not spread else np.linspace(0, G - 1, k).round().astype(int)
        lo = np.full(G, np.nan); hi = np.full(G, np.nan); err = ""
        t1 = time.time()
        try:
            for g in sub:
                ci = rj.profile(rj.groups[g]).conf_int(0.05); lo[g], hi[g] = ci["lower"], ci["upper"]
        except Exception as e:
            err = type(e).__name__
        tci = time.time() - t1
        if err:
            rows.append(dict(method="joint", mean_est=pj.mean(), mean_true=truth.mean(), error=err, n_ci=0))
        else:
            rows.append(summ("joint", truth, pj, lo, hi, sub=sub))
        # fixed grouped (package)
        rf = mod.fit(sim.field_pred, groups=sim.field_group, likelihood="fixed"); pf = rf.base_rate.to_numpy()
        try:
            cf = rf.conf_int(); flo, fhi = cf.lower.to_numpy(), cf.upper.to_numpy(); ferr = ""
        except ValueError:  # package defect (check_fixed_bound.py): own fixed-M intervals, equal to 1e-12 where both run
            Ml = L / L.sum(1, keepdims=True); flo, fhi = ts.profile_ci(F, Ml, ts.fit_groups(F, Ml)); ferr = "own_ci"
        rows.append(summ("fixed", truth, pf, flo, fhi, error=ferr))
        rows.append(summ("fixed_sub", truth, pf, flo, fhi, sub=sub, error=ferr))
        # two-stage
        p2, nlo, nhi, dlo, dhi, vM, vN = ts.two_stage(L, F, p1, rp.M.to_numpy(), c)
        rows.append(summ("ts_naive", truth, p2, nlo, nhi, sd_M=np.sqrt(vM.mean()), sd_naive=np.sqrt(vN.mean())))
        rows.append(summ("ts_delta", truth, p2, dlo, dhi))
        rows.append(summ("ts_naive_sub", truth, p2, nlo, nhi, sub=sub))
        df = pd.DataFrame([{**base, **diag, **row, "t_ci": tci, "t_rep": time.time() - t0} for row in rows])
        if os.path.exists(out):  # (columns can differ between replicates: rewrite with their union)
            df = pd.concat([pd.read_csv(out), df], ignore_index=True)
        df.to_csv(out, index=False)
        print(f"rep {r} lab {n_lab} A={A}: joint mean {pj.mean():.3f} pooled {p1:.3f} two-stage {p2.mean():.3f} fixed {pf.mean():.3f} "
              f"D_bse {diag['D_bse']:+.2f}; cover joint {rows[0].get('cover', np.nan):.2f} fixed {rows[1]['cover']:.2f} "
              f"tsN {rows[3]['cover']:.2f} tsD {rows[4]['cover']:.2f}; ci {tci:.1f}s rep {time.time()-t0:.1f}s total {time.time()-t00:.0f}s", flush=True)
