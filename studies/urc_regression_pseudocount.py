"""Declared study: RegressionURC default lab pseudo-counts (0.5/cell) vs lab_pseudocount=0,
trend_sd at its default (1.0), at c4b926b (session 70; it made 0 RegressionURC's default).

Cells: lab in {50, 100, 200, 1000} x field location shift in {0, 0.5, 1.0} lab SDs, field 5000,
default n_intervals. Seeds (declared before running, fresh): default_rng([7001, rep, n_lab,
int(10*shift)]). Both variants are fitted to the same data set (same model object / edges).

Per fit: estimates, truth, coverage of each interval's 95% profile interval (R(truth) <= 3.841,
record() of studies/urc_regression_strong_shift.py), corner (max share > 0.99), convergence;
at shift 0 only: r.gof() p-value (Pearson, the default) and, for reps < --noshift-reps,
r.test_no_shift() with its default bootstrap reference and n_boot=--n-boot (rng default 0).

    OPENBLAS_NUM_THREADS=1 python studies/urc_regression_pseudocount.py --labs 50 100 200 1000 \
        --shifts 0 0.5 1 --reps N --out raw.csv
    python studies/urc_regression_pseudocount.py --summarise raw.csv > tables.md

DECLARED before running (session 70, helper h5; timing on reps 900-901 only, file timing.csv,
not part of the results): phase A reps 0-99, every cell, GOF and no-shift test (bootstrap
reference, n_boot=199 = DEFAULT_N_BOOT, rng default seed 0) at shift 0:
    OPENBLAS_NUM_THREADS=1 python studies/urc_regression_pseudocount.py --reps 100 --rep0 0 \
        --noshift-reps 100 --n-boot 199 --out raw_A.csv
phase B (if time allows, by 06:05 UTC) reps 100-299, GOF only (no no-shift test):
    OPENBLAS_NUM_THREADS=1 python studies/urc_regression_pseudocount.py --reps 200 --rep0 100 \
        --noshift-reps 0 --out raw_B.csv
Summaries pool A and B (the no-shift rates rest on phase A only). Stopping rule: phase B is
cut at the last completed replicate when the deadline approaches (the file is rewritten after
each replicate; every cell has the same replicates).
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from urc_regression_strong_shift import md, record  # (coverage logic reused; studies/ on the path)

import puinfer as pu
from puinfer.simulate.urc_regression import simulate_urc_regression

SEED = 7001
#: "pc_default": URC's 0.5 per cell (pooled), RegressionURC's default when the study ran
#: (pinned: URC's default became Perks' 1/|A| in session 71)
VARIANTS = {"pc_default": {"lab_pseudocount": 0.5, "lab_prior": "pooled"},
            "pc0": {"lab_pseudocount": 0.0}}


def run_one(n_lab, shift, rep, noshift, n_boot):
    sim = simulate_urc_regression(n_lab, 5000, field_shift=shift,
                                  rng=np.random.default_rng([SEED, rep, n_lab, int(10 * shift)]))
    m = pu.RegressionURC(sim.lab_pred, sim.lab_y)
    truth = sim.field_interval_rates(m.edges)[0]
    rows = []
    for name, kw in VARIANTS.items():
        t0 = time.process_time()
        r = m.fit(sim.field_pred, **kw)
        row = dict(n_lab=n_lab, shift=shift, rep=rep, variant=name, **record(m, r, truth, True))
        row["corner"] = int(row["max_share"] > 0.99)
        if shift == 0:
            try:
                row["gof_p"] = float(r.gof().pvalue)
            except Exception as e:  # noqa: BLE001
                row["gof_p"], row["gof_err"] = np.nan, type(e).__name__
            if noshift:
                try:
                    t = r.test_no_shift(n_boot=n_boot)
                    row["noshift_p"] = float(t.pvalue)
                    row["noshift_usable"] = t.extra.get("bootstrap resamples", "")
                    row["noshift_dist"] = t.distribution
                except Exception as e:  # noqa: BLE001
                    row["noshift_p"], row["noshift_err"] = np.nan, type(e).__name__
        row["cpu"] = time.process_time() - t0
        rows.append(row)
    return rows


def binse(p, n):
    return np.sqrt(p * (1 - p) / n) if n else np.nan


def table(d):
    out = []
    for (n, s, v), g in d.groupby(["n_lab", "shift", "variant"], sort=True):
        bias = g.top_est - g.top_true
        ncov, nint = g.n_cover.sum(), g.K.sum()
        ca, ct = ncov / nint, g.top_cover.mean()
        row = {"lab": n, "shift": s, "variant": v, "K": int(g.K.iloc[0]), "fits": len(g),
               "corner": g.corner.mean(), "not conv.": 1 - g.converged.mean(),
               "top true": g.top_true.mean(), "top bias": bias.mean(),
               "(SE)": bias.std(ddof=1) / np.sqrt(len(g)),
               "top RMSE": np.sqrt(np.mean(bias ** 2)), "RMSE all": g.rmse.mean(),
               "cover all": ca, "(SE all)": (g.n_cover / g.K).std(ddof=1) / np.sqrt(len(g)),
               "cover top": ct, "(SE top)": binse(ct, len(g)),
               "prof. err": int(g.prof_err.sum())}
        if s == 0 and "gof_p" in g:
            gp = g.gof_p.dropna()
            row["GOF rej5"] = (gp < 0.05).mean() if len(gp) else np.nan
            row["GOF n"] = len(gp)
            if "noshift_p" in g:
                npv = g.noshift_p.dropna()
                row["noshift rej5"] = (npv < 0.05).mean() if len(npv) else np.nan
                row["noshift n"] = len(npv)
        out.append(row)
    return pd.DataFrame(out)


def per_interval(d):
    """Coverage of each interval's 95% profile interval (interval 1 = lowest outcomes)."""
    out = []
    for (n, s, v), g in d.groupby(["n_lab", "shift", "variant"], sort=True):
        c = np.array([list(map(int, x.split(";"))) for x in g.cover])
        row = {"lab": n, "shift": s, "variant": v, "fits": len(g)}
        row.update({f"j{j + 1}": (c[:, j].mean() if j < c.shape[1] else np.nan)
                    for j in range(10)})
        row["min"] = c.mean(axis=0).min()
        out.append(row)
    return pd.DataFrame(out)


def paired(d):
    """Per cell: paired differences pc0 - default (same data sets)."""
    out = []
    for (n, s), g in d.groupby(["n_lab", "shift"]):
        a = g[g.variant == "pc_default"].set_index("rep")
        b = g[g.variant == "pc0"].set_index("rep")
        idx = a.index.intersection(b.index)
        a, b = a.loc[idx], b.loc[idx]
        dab = (np.abs(b.top_est - b.top_true) - np.abs(a.top_est - a.top_true))
        dr = b.rmse - a.rmse
        dc = b.n_cover / b.K - a.n_cover / a.K
        out.append({"lab": n, "shift": s, "pairs": len(idx),
                    "d|top err|": dab.mean(), "(SE)": dab.std(ddof=1) / np.sqrt(len(idx)),
                    "dRMSE all": dr.mean(), "(SE) ": dr.std(ddof=1) / np.sqrt(len(idx)),
                    "dcover all": dc.mean(), "(SE)  ": dc.std(ddof=1) / np.sqrt(len(idx)),
                    "top cov: pc0 only": int(((b.top_cover == 1) & (a.top_cover == 0)).sum()),
                    "top cov: default only": int(((b.top_cover == 0) & (a.top_cover == 1)).sum())})
    return pd.DataFrame(out)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--labs", type=int, nargs="+", default=[50, 100, 200, 1000])
    ap.add_argument("--shifts", type=float, nargs="+", default=[0, 0.5, 1.0])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--rep0", type=int, default=0)
    ap.add_argument("--noshift-reps", type=int, default=100,
                    help="run test_no_shift for reps < this (shift 0 only)")
    ap.add_argument("--n-boot", type=int, default=99)
    ap.add_argument("--out", default="raw.csv")
    ap.add_argument("--summarise", nargs="+", metavar="CSV")
    a = ap.parse_args()
    if a.summarise:
        d = pd.concat([pd.read_csv(p) for p in a.summarise], ignore_index=True)
        print(f"({d.cpu.sum():.0f} s CPU in the fits and tests)\n\n{md(table(d))}\n\n"
              f"Paired (pc0 minus default, same data sets):\n\n{md(paired(d))}\n\n"
              f"Coverage by interval:\n\n{md(per_interval(d))}\n")
        raise SystemExit
    warnings.simplefilter("ignore")
    rows, cpu0 = [], time.process_time()
    for rep in range(a.rep0, a.rep0 + a.reps):  # replicate-major: every cell grows together
        for n_lab in a.labs:
            for s in a.shifts:
                rows += run_one(n_lab, s, rep, rep < a.noshift_reps, a.n_boot)
        pd.DataFrame(rows).to_csv(a.out, index=False)
        print(f"rep {rep}: {time.process_time() - cpu0:.0f} s CPU", flush=True)
    print(f"total {time.process_time() - cpu0:.0f} s CPU")
