"""Benchmark: CalEM cost against the number of treated rows (script, prints a table).

The target of issue 5: the spline calibrator on 1,000,000 treated + 10,000 control rows in
under 10 s. "build" is the model constructor (validation), "fit" is ``CalEM.fit()`` (basis,
baseline, biased and pooled fits, the fixed point and the sandwich standard errors: all of the
estimation); "summary" formats the results (and runs the bias LR test on the stored fits).
Data from the Section 5.1 design of Sergazinov et al. (g1, h1, P = 0.3).

Usage::

    python benchmarks/bench_calem.py                 # all calibrators, up to 1e6 treated rows
    python benchmarks/bench_calem.py --max 100000    # smaller
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from puinfer.models.calem import CalEM
from puinfer.simulate.calibration import simulate_calem


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=1_000_000)
    ap.add_argument("--control", type=int, default=10_000)
    ap.add_argument("--calibrators", default="spline,beta,logistic,isotonic")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(1)
    sizes = [n for n in (10_000, 100_000, 1_000_000) if n <= a.max]
    print(f"{'calibrator':<10} {'treated':>9} {'control':>8} {'build s':>8} {'fit s':>7} "
          f"{'total s':>8} {'iter':>5} converged  {'summary s':>9}  method")
    for n_t in sizes:
        d = simulate_calem(n_t + a.control, event_prob=0.3, miscalibration="g1",
                           transition="h1", clean_share=a.control / (n_t + a.control), rng=rng)
        s, lab, tr = (d[c].to_numpy() for c in ("score", "label", "treated"))
        for cal in a.calibrators.split(","):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                m = CalEM(s, lab, tr, calibrator=cal)
                t1 = time.perf_counter()
                r = m.fit()
                t2 = time.perf_counter()
                str(r.summary())  # formatting and the bias LR test
                t3 = time.perf_counter()
            print(f"{cal:<10} {n_t:>9,} {a.control:>8,} {t1 - t0:>8.2f} {t2 - t1:>7.2f} "
                  f"{t2 - t0:>8.2f} {r.convergence.iterations:>5} {str(r.converged):<10} "
                  f"{t3 - t2:>9.2f}  {r.method}", flush=True)


if __name__ == "__main__":
    main()
