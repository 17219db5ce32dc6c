"""Speed and memory of DETM/SETM (seed 004 designs, p = 15 unless stated).

    python benchmarks/bench_detm.py            # full table (includes n = m = 500,000)
    python benchmarks/bench_detm.py --quick    # small sizes only

Prints seconds (wall clock, best of `--repeat`) and peak traced memory (tracemalloc, numpy's
allocations included) for: DETM fit, SETM fit, conf_int_pi, and the bootstrap SCAR test.
BLAS threads are limited to one (set OPENBLAS_NUM_THREADS to change): the matrices are small
(N x p with p ~ 15), where threading only adds overhead.
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

import puinfer as pu  # noqa: E402
from puinfer.simulate import sar_design  # noqa: E402


def _measure(fn, repeat=1):
    best = np.inf
    peak = 0
    out = None
    for _ in range(repeat):
        tracemalloc.start()
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        peak = max(peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        best = min(best, dt)
    return best, peak / 2**20, out


def run(quick: bool, repeat: int):
    rows = []
    sizes = [(1000, 15), (3000, 5), (3000, 15), (3000, 30), (10_000, 15), (100_000, 15)]
    if not quick:
        sizes.append((500_000, 15))
    warnings.simplefilter("ignore")
    for n, p in sizes:
        df = sar_design(n, n, 0.3, p=p, rng=np.random.default_rng(n + p))
        X = df[[f"x{j}" for j in range(1, p + 1)]].to_numpy()
        src, tgt = X[df.labeled.to_numpy() == 1], X[df.labeled.to_numpy() == 0]
        del df
        rep = repeat if n <= 10_000 else 1
        t, mem, d = _measure(lambda: pu.DETM(src, tgt).fit(), rep)  # noqa: B023
        rows.append(dict(task="DETM fit", n=n, m=n, p=p, seconds=t, peak_MB=mem,
                         iterations=d.convergence.iterations, starts=len(d.starts)))
        t, mem, s = _measure(lambda: pu.SETM(src, tgt).fit(), rep)  # noqa: B023
        rows.append(dict(task="SETM fit", n=n, m=n, p=p, seconds=t, peak_MB=mem,
                         iterations=s.convergence.iterations, starts=len(s.starts)))
        if n <= 10_000:
            t, mem, _ = _measure(lambda: pu.DETM(src, tgt).fit().conf_int_pi(), rep)  # noqa: B023
            rows.append(dict(task="DETM fit + conf_int_pi", n=n, m=n, p=p, seconds=t,
                             peak_MB=mem))
        if n == 1000:
            t, mem, _ = _measure(lambda: d.test_scar("bootstrap", n_boot=200, rng=1))  # noqa: B023
            rows.append(dict(task="test_scar bootstrap (200)", n=n, m=n, p=p, seconds=t,
                             peak_MB=mem))
        print(pd.DataFrame(rows[-4:]).to_string(index=False), flush=True)
    tab = pd.DataFrame(rows)
    print("\n" + tab.to_markdown(index=False, floatfmt=".3g"))
    return tab


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    run(a.quick, a.repeat)
