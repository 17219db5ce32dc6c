"""Benchmark regression URC: interval probabilities + binning + fit, and the ten profile
intervals, on up to a million field rows with 10 outcome intervals (a script printing a table;
not a timed test).

Usage::

    OMP_NUM_THREADS=1 nice python benchmarks/bench_urc_regression.py
    python benchmarks/bench_urc_regression.py --quick      # field sizes up to 1e5

Design: :func:`puinfer.simulate.urc_regression.simulate_urc_regression` (lab 2000 rows, field
shift 0.5), ``K = 10`` intervals, ``|A| = 20`` cells, default penalty. Times are wall-clock
seconds (best of ``--repeat``); ``fit`` includes turning the predictive distributions into
interval probabilities (O(N K)), binning (O(N log |A|)) and the optimisation (independent of
N); ``CIs`` is the ten profile intervals from scratch (results pickled before any interval was
asked for: results cache them); ``tests`` is the no-shift test (by default referred to a
bootstrap of the procedure under the null: 199 resamples of two fits on the histograms,
independent of N) and the goodness-of-fit test.
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.simulate.urc_regression import simulate_urc_regression  # noqa: E402


def best_of(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    lab = simulate_urc_regression(2000, 1, rng=np.random.default_rng(1))
    t_model, model = best_of(lambda: pu.RegressionURC(lab.lab_pred, lab.lab_y, 10),
                             args.repeat)
    rows = []
    sizes = [10**4, 10**5] + ([] if args.quick else [10**6])
    for n in sizes:
        sim = simulate_urc_regression(10, n, field_shift=0.5, rng=np.random.default_rng(n))
        forms = {"normal (mean, sd)": sim.field_pred}
        if n == sizes[-1]:
            lv = np.linspace(0.05, 0.95, 19)
            fp = sim.field_pred
            forms["quantiles (19 levels)"] = pu.QuantilePredictive(
                lv, fp.mean[:, None] + fp.sd[:, None] * stats.norm.ppf(lv)[None])
        cases = [(form, pred, "joint") for form, pred in forms.items()]
        cases.append(("normal (mean, sd)", sim.field_pred, "fixed"))
        for form, pred, likelihood in cases:
            t_fit, res = best_of(lambda pred=pred, lk=likelihood: model.fit(pred, likelihood=lk),
                                 args.repeat)
            blob = pickle.dumps(res)
            t_ci, ci = best_of(lambda blob=blob: pickle.loads(blob).conf_int(), 1)
            t_test, _ = best_of(lambda res=res: (res.test_no_shift(), res.gof()), 1)
            truth = sim.field_interval_rates(model.edges)[0]
            cover = np.mean((ci["lower"].to_numpy() <= truth) & (truth <= ci["upper"].to_numpy()))
            rows.append(dict(N=n, predictive=form, likelihood=likelihood, fit_s=t_fit,
                             cis_s=t_ci, tests_s=t_test,
                             total_s=t_fit + t_ci + t_test,
                             max_abs_err=float(np.max(np.abs(res.base_rates.iloc[0] - truth))),
                             covered=f"{cover:.0%}"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    pd.set_option("display.width", 200)
    print(f"model (lab 2000 rows, K = 10, |A| = 20): {t_model:.3f} s")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"peak resident memory: {peak:.0f} MB")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()
