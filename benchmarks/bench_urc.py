"""Benchmark URC: binning + fit + profile interval on up to 10 million field predictions, and
local URC on 100 groups of 100,000 and 300 groups of 10,000, 300 groups with a rare class in
the lab set, and 100 groups of 4 classes and 300 of 3 (a script printing a table; not a timed
test).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_urc.py --out benchmarks/results/bench_urc.csv \\
        --previous benchmarks/results/bench_urc_prev.csv
    python benchmarks/bench_urc.py --quick          # sizes up to 1e6

The field predictions are generated before timing. Times are CPU seconds of the process
(``time.process_time``; with one BLAS thread the work done, robust to other jobs on a shared
machine; until session 45 this script printed wall-clock seconds), the best of ``--repeat``
runs; "peak MB" is the peak traced memory (tracemalloc, numpy's
allocations included) of one fit and its intervals, in a separate run. ``--previous`` adds
the ratio new / previous of every time (a CSV written by ``--out`` at the previous commit,
with this script). Cost is O(N) for binning (``np.searchsorted`` on |A| - 1 cut points and
``np.bincount``) and independent of N for the optimisation (it works on the k x |A|
histograms).
"""

from __future__ import annotations

import argparse
import os
import pickle
import time
import tracemalloc
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _table import add_arguments, finish  # noqa: E402
from scipy import special  # noqa: E402

from puinfer import URC  # noqa: E402
from puinfer.simulate.urc import simulate_urc  # noqa: E402

KEY = ["case", "N", "likelihood"]
TIMES = ["fit_s", "ci_s", "total_s"]


def field_binary(n, rate, delta, rng):
    y = rng.random(n) < rate
    s = (2 * y - 1) * (delta / 2) + rng.standard_normal(n)
    return special.expit(delta * s)  # calibrated on a balanced lab set


def best_of(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def peak_mb(fn) -> float:
    """Peak traced memory (MB) of one run of ``fn``."""
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return peak


def fresh_ci(blob):
    """The profile interval computed from scratch: the results pickled before any interval was
    asked for (the results object caches its profiles and intervals once computed)."""
    return pickle.loads(blob).profile().conf_int(0.05)


def local_urc(model, G, m, rng, repeat):
    """Fit, intervals, equal-rates test and gof of G groups of m field predictions (base rates
    evenly spaced from 0.05 to 0.6), under both likelihoods."""
    rows = []
    rates = np.linspace(0.05, 0.6, G)
    y = rng.random(G * m) < np.repeat(rates, m)
    s = (2 * y - 1) * 0.75 + rng.standard_normal(G * m)
    x = special.expit(1.5 * s)
    groups = np.repeat(np.arange(G), m)
    del y, s
    for lik in ("joint", "fixed"):
        t_fit, res = best_of(lambda lik=lik: model.fit(x, groups=groups, likelihood=lik),
                             repeat)
        blob = pickle.dumps(res)  # intervals from scratch each time (results cache them)
        t_ci, ci = best_of(lambda blob=blob: pickle.loads(blob).conf_int(0.05), repeat)
        t_eq, teq = best_of(lambda res=res: res.test_equal_base_rates(), 1)
        t_gof, _ = best_of(lambda res=res: res.gof(), 1)
        cover = np.mean((ci["lower"].to_numpy() <= rates) & (rates <= ci["upper"].to_numpy()))
        peak = peak_mb(lambda lik=lik: model.fit(x, groups=groups, likelihood=lik).conf_int(0.05))
        rows.append(dict(case=f"{G} groups x {m:,}", N=G * m, likelihood=lik, fit_s=t_fit,
                         ci_s=t_ci, total_s=t_fit + t_ci, peak_MB=peak,
                         estimate=float(np.mean(np.abs(res.base_rate.to_numpy() - rates))),
                         ci=f"{G} intervals, {cover:.0%} cover; equal-rates LR test "
                            f"{t_eq:.2f} s, gof {t_gof:.2f} s"))
    return rows


def rare_lab_urc(G, n_field, repeat):
    """Fit and intervals of G groups when the lab set holds about 1% positives (session 85's
    audit: the face Hessian is then often indefinite, and each modified Newton step was a
    dense eigendecomposition of the whole face until session 86)."""
    rng = np.random.default_rng(0)

    def scores(y):
        return 1 / (1 + np.exp(-rng.normal(0.75 * (2 * y - 1), 1)))

    ylab = rng.binomial(1, 0.01, 1000)
    plab = scores(ylab)
    yf = rng.binomial(1, 0.3, n_field)
    pf = scores(yf)
    groups = rng.integers(0, G, yf.size)
    model = URC(plab, ylab)
    t_fit, res = best_of(lambda: model.fit(pf, groups=groups), repeat)
    blob = pickle.dumps(res)
    t_ci, ci = best_of(lambda: pickle.loads(blob).conf_int(0.05), repeat)
    return [dict(case=f"{G} groups, lab 1% positives ({ylab.sum()})", N=n_field,
                 likelihood="joint", fit_s=t_fit, ci_s=t_ci, total_s=t_fit + t_ci,
                 peak_MB=np.nan, estimate=float(res.base_rate.mean()),
                 ci=f"{G} intervals, mean width "
                    f"{float((ci['upper'] - ci['lower']).mean()):.3f}")]


def multiclass_urc(G, k, m, repeat):
    """Fit and intervals of G groups of m field predictions of k classes (each group's base
    rates drawn from a Dirichlet(3)), under both likelihoods (issue 17: the stacked points of
    several classes, session 90)."""
    rng = np.random.default_rng(2028)
    rates = rng.dirichlet(3 * np.ones(k), size=G)
    sim = simulate_urc(n_lab=3000, n_field=[m] * G, lab_base_rates=[1 / k] * k,
                       field_base_rate=rates, separation=1.5, rng=rng)
    model = URC(sim.lab_pred, sim.lab_y)
    rows = []
    for lik in ("joint", "fixed"):
        t_fit, res = best_of(lambda lik=lik: model.fit(sim.field_pred, groups=sim.field_group,
                                                       likelihood=lik), repeat)
        blob = pickle.dumps(res)
        t_ci, ci = best_of(lambda blob=blob: pickle.loads(blob).conf_int(0.05), repeat)
        truth = rates.ravel()
        cover = np.mean((ci["lower"].to_numpy() <= truth) & (truth <= ci["upper"].to_numpy()))
        rows.append(dict(case=f"{G} groups x {m:,}, {k} classes", N=G * m, likelihood=lik,
                         fit_s=t_fit, ci_s=t_ci, total_s=t_fit + t_ci, peak_MB=np.nan,
                         estimate=float(np.mean(np.abs(res.base_rates.to_numpy().ravel()
                                                       - truth))),
                         ci=f"{G * k} intervals, {cover:.0%} cover"))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    add_arguments(ap)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(2026)
    lab = simulate_urc(n_lab=2000, n_field=1, separation=1.5, rng=rng)
    model = URC(lab.lab_pred, lab.lab_y)
    rows = []
    sizes = [10**4, 10**5, 10**6] + ([] if args.quick else [10**7])
    for n in sizes:
        x = field_binary(n, 0.2, 1.5, rng)
        for lik in ("joint", "fixed"):
            t_fit, res = best_of(lambda x=x, lik=lik: model.fit(x, likelihood=lik), args.repeat)
            blob = pickle.dumps(res)
            t_ci, ci = best_of(lambda blob=blob: fresh_ci(blob), args.repeat)
            peak = peak_mb(lambda x=x, lik=lik: model.fit(x, likelihood=lik).conf_int(0.05))
            rows.append(dict(case="binary, 1 group", N=n, likelihood=lik, fit_s=t_fit,
                             ci_s=t_ci, total_s=t_fit + t_ci, peak_MB=peak,
                             estimate=res.base_rate.iloc[0],
                             ci=f"[{ci['lower']:.4f}, {ci['upper']:.4f}]"))
        del x
    # local URC: 100 groups of 100,000 (or 10,000 in quick mode)
    rows += local_urc(model, 100, 10_000 if args.quick else 100_000, rng, args.repeat)
    # multiclass, k = 3
    lab3 = simulate_urc(n_lab=3000, n_field=10**6, lab_base_rates=[1 / 3] * 3,
                        field_base_rate=[0.6, 0.3, 0.1], separation=1.5, rng=rng)
    m3 = URC(lab3.lab_pred, lab3.lab_y)
    t_fit, res = best_of(lambda: m3.fit(lab3.field_pred), args.repeat)
    t_ci, ci = best_of(lambda: res.conf_int(0.05), 1)
    peak = peak_mb(lambda: m3.fit(lab3.field_pred).conf_int(0.05))
    rows.append(dict(case="3 classes, |A| = 6", N=10**6, likelihood="joint", fit_s=t_fit,
                     ci_s=t_ci, total_s=t_fit + t_ci, peak_MB=peak,
                     estimate=str(np.round(res.base_rates.iloc[0].to_numpy(), 4)),
                     ci="3 intervals"))
    # many groups: 300 of 10,000 (1,000 in quick mode; a generator of its own, so that the
    # data of the cases above are those of earlier records)
    rows += local_urc(model, 300, 1_000 if args.quick else 10_000, np.random.default_rng(2027),
                      args.repeat)
    # many groups and a rare class in the lab set (modified Newton steps on the face)
    rows += rare_lab_urc(300, 30_000 if args.quick else 100_000, 1 if args.quick else 2)
    # many groups of several classes
    rows += multiclass_urc(100, 4, 2_000 if args.quick else 10_000, args.repeat)
    rows += multiclass_urc(300, 3, 1_000 if args.quick else 3_000, args.repeat)
    finish(pd.DataFrame(rows), args, KEY, TIMES)


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()
