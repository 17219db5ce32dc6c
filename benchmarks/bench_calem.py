"""Benchmark: CalEM cost against the number of treated rows (script, prints a table).

Issue 5's target: the spline calibrator on 1,000,000 treated + 10,000 control rows in under
10 s; issue 17's: spline under 1 s, isotonic under 2 s. "build" is the model constructor
(validation), "fit" is ``CalEM.fit()`` (basis, baseline, biased and pooled fits, the fixed
point and the sandwich standard errors: all of the estimation); "summary" formats the results
(and runs the bias LR test on the stored fits). Times are CPU seconds of the process
(``time.process_time``: with one BLAS thread the work done, robust to other jobs on a shared
machine), the minimum over ``--repeat`` runs; "peak MB" is the peak traced memory of one build
and fit (a separate tracemalloc run; numpy's allocations included). ``--previous`` adds the
ratio new / previous of each time (a CSV written by ``--out`` at the previous commit). Data
from the Section 5.1 design of Sergazinov et al. (g1, h1, P = 0.3).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_calem.py --out benchmarks/results/bench_calem.csv \\
        --previous benchmarks/results/bench_calem_prev.csv
    python benchmarks/bench_calem.py --max 100000    # smaller
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _table import add_arguments, finish  # noqa: E402

from puinfer.models.calem import CalEM  # noqa: E402
from puinfer.simulate.calibration import simulate_calem  # noqa: E402

TIMES = ["build_s", "fit_s", "summary_s"]


def _once(s, lab, tr, cal):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        m = CalEM(s, lab, tr, calibrator=cal)
        t1 = time.process_time()
        r = m.fit()
        t2 = time.process_time()
        str(r.summary())  # formatting and the bias LR test
        t3 = time.process_time()
    return [t1 - t0, t2 - t1, t3 - t2], r


def run(max_rows, control, calibrators, repeat):
    rng = np.random.default_rng(1)
    rows = []
    for n_t in [n for n in (10_000, 100_000, 1_000_000) if n <= max_rows]:
        d = simulate_calem(n_t + control, event_prob=0.3, miscalibration="g1",
                           transition="h1", clean_share=control / (n_t + control), rng=rng)
        s, lab, tr = (d[c].to_numpy() for c in ("score", "label", "treated"))
        for cal in calibrators:
            best = np.full(3, np.inf)
            for _ in range(repeat):
                times, r = _once(s, lab, tr, cal)
                best = np.minimum(best, times)
            tracemalloc.start()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                CalEM(s, lab, tr, calibrator=cal).fit()
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            rows.append(dict(calibrator=cal, treated=n_t, control=control,
                             **dict(zip(TIMES, best, strict=True)),
                             total_s=best[0] + best[1], peak_MB=peak,
                             iterations=r.convergence.iterations, converged=r.converged,
                             method=r.method))
            print(pd.DataFrame(rows[-1:]).to_string(index=False), flush=True)
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=1_000_000)
    ap.add_argument("--control", type=int, default=10_000)
    ap.add_argument("--calibrators", default="spline,beta,logistic,isotonic")
    ap.add_argument("--repeat", type=int, default=2)
    add_arguments(ap)
    a = ap.parse_args(argv)
    tab = run(a.max, a.control, a.calibrators.split(","), a.repeat)
    finish(tab, a, ["calibrator", "treated", "control"], [*TIMES, "total_s"])


if __name__ == "__main__":
    main()
