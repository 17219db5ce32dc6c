"""Strong location shifts in RegressionURC: bias, RMSE, coverage and corners of the default fit
against smooth_order=1, a weaker penalty, no penalty, and a N(0, tau^2) prior on the slope of
the log-linear trend (the remedy, ``fit(trend_sd=tau)``, the default since session 70), plus
an 'oracle lab' diagnostic in which the interval form of Axiom 2 holds exactly.

Data: simulate_urc_regression(n_lab, 5000, field_shift=s) (lab y ~ N(0,1), x = y + N(0,1),
model N(x/2, 1/2); field y ~ N(s, 1)), seeds default_rng([70, rep, n_lab, int(10 s)]) (fresh:
not the seeds of studies/urc_regression_small_lab.py, which uses 69).

Oracle lab: same interval counts as the real lab (cut at its default edges), each interval's
lab outcomes drawn from the *field* outcome distribution truncated to the interval, x and the
prediction as in the simulator: the lab histogram of each interval is then the field's, so
URC's model (Axiom 2 given the interval) is exact; only the penalty and sampling remain.

Coverage: the 95% profile interval covers the truth iff R(truth) <= 3.841 (one constrained fit
per interval instead of a root search, as studies/urc_regression.py); a ProfileError (the
profile higher than the fit: not a maximum) counts as not covered and is recorded.

Session 70 (a helper's study, exploratory: 20 replicates per cell; rows in
``studies/results/urc_regression_strong_shift_raw.csv``, session 69's small-lab data sets with
``--seed 69 --labs 100 200 300 500 1000 --shifts 0 0.5`` in ``..._smalllab_raw.csv``; tables
in ``urc_regression_strong_shift.md``)::

    OPENBLAS_NUM_THREADS=1 python studies/urc_regression_strong_shift.py \
        --labs 300 1000 --shifts 0 0.5 1 1.5 2 --reps 20 --out raw.csv
    python studies/urc_regression_strong_shift.py --summarise raw.csv
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from scipy import stats

import puinfer as pu
from puinfer.models.urc.predictive import NormalPredictive
from puinfer.simulate.urc_regression import simulate_urc_regression

CUT = float(stats.chi2.ppf(0.95, 1))
VARIANTS = {  # name: (fit kwargs, coverage?)
    # (trend_sd=None: the fit's default when these cells were run, before the patch made the
    # trend prior the default; order 1 and smoothing=0 ignore it)
    "default": ({"trend_sd": None}, True),
    "default_nocov": ({"trend_sd": None}, False),
    "trend1": ({"trend_sd": 1.0}, True),
    "order1": ({"smooth_order": 1}, True),
    "weak0.3": ({"smoothing": 0.3, "trend_sd": None}, False),
    "mle": ({"smoothing": 0.0}, False),
    # lab pseudo-counts off (plain maximum likelihood for M_A): the diagnostic of their bias
    "pc0": ({"lab_pseudocount": 0.0, "trend_sd": None}, True),
    "mle_pc0": ({"smoothing": 0.0, "lab_pseudocount": 0.0}, False),
    "trend1_pc0": ({"trend_sd": 1.0, "lab_pseudocount": 0.0}, True),
    "trend1_pc0.1": ({"trend_sd": 1.0, "lab_pseudocount": 0.1}, True),
    "trend0.5": ({"trend_sd": 0.5}, True),
    "trend2": ({"trend_sd": 2.0}, True),
    "trend0.5_pc0": ({"trend_sd": 0.5, "lab_pseudocount": 0.0}, True),
    "trend2_pc0": ({"trend_sd": 2.0, "lab_pseudocount": 0.0}, True),
}
ORACLE = {"oracle_default": {"trend_sd": None}, "oracle_mle": {"smoothing": 0.0},
          "oracle_pc0": {"lab_pseudocount": 0.0, "trend_sd": None},
          "oracle_mle_pc0": {"smoothing": 0.0, "lab_pseudocount": 0.0}}


def oracle_lab(sim, edges, shift, rng):
    e = np.concatenate([[-np.inf], edges, [np.inf]])
    codes = np.searchsorted(edges, sim.lab_y, side="left")
    n_j = np.bincount(codes, minlength=e.size - 1)
    ys = [stats.truncnorm.rvs(e[j] - shift, e[j + 1] - shift, loc=shift, size=n_j[j],
                              random_state=rng) for j in range(e.size - 1)]
    y = np.concatenate(ys)
    x = y + rng.standard_normal(y.size)
    return NormalPredictive(0.5 * x, np.full(y.size, np.sqrt(0.5))), y


def record(m, r, truth, with_cov):
    est = r.base_rates.to_numpy().ravel()
    row = dict(K=int(m.n_intervals), converged=bool(r.convergence.converged),
               max_share=float(est.max()), top_est=float(est[-1]), top_true=float(truth[-1]),
               rmse=float(np.sqrt(np.mean((est - truth) ** 2))),
               est=";".join(f"{v:.6g}" for v in est), truth=";".join(f"{v:.6g}" for v in truth))
    if with_cov:
        cov, Rs, err = [], [], 0
        for j in range(truth.size):
            try:
                R = float(r.profile(cls=m.classes[j]).statistic(truth[j]))
            except Exception:
                R, err = np.nan, err + 1
            Rs.append(R)
            cov.append(int(np.isfinite(R) and R <= CUT))
        row.update(cover=";".join(map(str, cov)), n_cover=sum(cov), top_cover=cov[-1],
                   R=";".join(f"{v:.4g}" for v in Rs), prof_err=err)
    return row


def run_one(n_lab, shift, rep, variants, oracle, seed=70, oracle_variants=None):
    rows = []
    sim = simulate_urc_regression(n_lab, 5000, field_shift=shift,
                                  rng=np.random.default_rng([seed, rep, n_lab, int(10 * shift)]))
    m = pu.RegressionURC(sim.lab_pred, sim.lab_y)
    truth = sim.field_interval_rates(m.edges)[0]
    for name in variants:
        kw, cov = VARIANTS[name]
        t0 = time.process_time()
        r = m.fit(sim.field_pred, **kw)
        row = record(m, r, truth, cov)
        rows.append(dict(n_lab=n_lab, shift=shift, rep=rep, variant=name, **row,
                         cpu=time.process_time() - t0))
    if oracle:
        olp, oy = oracle_lab(sim, m.edges, shift, np.random.default_rng([71, rep, n_lab, int(10 * shift)]))
        mo = pu.RegressionURC(olp, oy)
        to = sim.field_interval_rates(mo.edges)[0]
        for name in (oracle_variants or ["oracle_default", "oracle_mle"]):
            kw = ORACLE[name]
            t0 = time.process_time()
            r = mo.fit(sim.field_pred, **kw)
            rows.append(dict(n_lab=n_lab, shift=shift, rep=rep, variant=name,
                             **record(mo, r, to, False), cpu=time.process_time() - t0))
    return rows


ORDER = [
    "default", "trend1", "order1", "weak0.3", "mle", "pc0", "trend1_pc0", "trend1_pc0.1",
    "trend0.5", "trend2", "trend0.5_pc0", "trend2_pc0", "mle_pc0", "oracle_default", "oracle_mle",
    "oracle_pc0", "oracle_mle_pc0"]


def table(d):
    out = []
    for (n, s, v), g in d.groupby(["n_lab", "shift", "variant"]):
        bias = g.top_est - g.top_true
        row = {"lab": n, "shift": s, "variant": v, "K": int(g.K.iloc[0]), "fits": len(g),
               "corner": (g.max_share > 0.99).mean(), "not conv.": 1 - g.converged.mean(),
               "top true": g.top_true.mean(), "top est": g.top_est.mean(),
               "top bias": bias.mean(), "(MC SE)": bias.std(ddof=1) / np.sqrt(len(g)),
               "top RMSE": np.sqrt(np.mean(bias ** 2)), "RMSE all": g.rmse.mean()}
        if "n_cover" in g and g.n_cover.notna().any():
            row.update({"cover all": g.n_cover.sum() / g.K.sum(), "cover top": g.top_cover.mean(),
                        "prof. err": int(g.prof_err.sum())})
        out.append(row)
    t = pd.DataFrame(out)
    t["o"] = t.variant.map({v: i for i, v in enumerate(ORDER)})
    return t.sort_values(["lab", "shift", "o"]).drop(columns="o")


def md(t):
    def f(v, c):
        if isinstance(v, float) and np.isnan(v):
            return ""
        if c in ("lab", "fits", "K", "prof. err", "GOF n", "noshift n"):
            return f"{int(v)}"
        if c == "shift":
            return f"{v:g}"
        return f"{v:.3f}" if isinstance(v, float) else str(v)
    cols = list(t.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(f(v, c) for v, c in zip(r, cols, strict=True)) + " |"
              for r in t.itertuples(index=False)]
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--labs", type=int, nargs="+", default=[300, 1000])
    ap.add_argument("--shifts", type=float, nargs="+", default=[0, 0.5, 1, 1.5, 2])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rep0", type=int, default=0)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    ap.add_argument("--no-oracle", action="store_true")
    ap.add_argument("--oracle-variants", nargs="+", default=["oracle_default", "oracle_mle"])
    ap.add_argument("--out", default="raw_strong.csv")
    ap.add_argument("--summarise", nargs="+", metavar="CSV", help="print the tables of these rows")
    ap.add_argument("--seed", type=int, default=70,
                    help="first seed word (69: the data sets of studies/urc_regression_small_lab.py)")
    a = ap.parse_args()
    if a.summarise:
        for path in a.summarise:
            d = pd.read_csv(path)
            print(f"## {path} ({d.cpu.sum():.0f} s CPU in the fits)\n\n{md(table(d))}\n")
        raise SystemExit
    warnings.simplefilter("ignore")
    rows, cpu0 = [], time.process_time()
    for n_lab in a.labs:
        for s in a.shifts:
            t0 = time.process_time()
            for rep in range(a.rep0, a.rep0 + a.reps):
                rows += run_one(n_lab, s, rep, a.variants, not a.no_oracle, a.seed,
                                a.oracle_variants)
            print(f"lab {n_lab} shift {s}: {time.process_time() - t0:.0f} s CPU", flush=True)
            pd.DataFrame(rows).to_csv(a.out, index=False)
    print(f"total {time.process_time() - cpu0:.0f} s CPU")
