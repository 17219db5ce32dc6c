"""Speed and memory of DETM/SETM (Liu et al. designs, p = 15 unless stated).

    python benchmarks/bench_detm.py            # full table (includes n = m = 500,000)
    python benchmarks/bench_detm.py --quick    # small sizes only

Prints seconds (wall clock, best of `--repeat`, untraced) and peak traced memory (a separate
tracemalloc run; numpy's allocations included) for: DETM fit (default, i.e. with the profile
probe, which also leaves the 95% interval computed), DETM fit without the probe and then
conf_int_pi, SETM fit, and the bootstrap SCAR test.
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


def _measure(fn, repeat=1, memory=True):
    """Best wall-clock time of ``repeat`` untraced runs, then (if ``memory``) the peak traced
    memory of one more run: tracemalloc slows numpy down, so it never runs while timing."""
    best = np.inf
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    peak = np.nan
    if memory:
        tracemalloc.start()
        fn()
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return best, peak, out


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
        rows.append(dict(task="DETM fit (default: with profile probe)", n=n, m=n, p=p,
                         seconds=t, peak_MB=mem, iterations=d.convergence.iterations,
                         starts=len(d.starts)))
        if n <= 10_000:
            t, _, d0 = _measure(lambda: pu.DETM(src, tgt).fit(probe=False), rep,  # noqa: B023
                                memory=False)
            rows.append(dict(task="DETM fit, probe=False", n=n, m=n, p=p, seconds=t,
                             iterations=d0.convergence.iterations, starts=len(d0.starts)))
            try:
                t, _, _ = _measure(lambda: d0.conf_int_pi(), 1, memory=False)  # noqa: B023
                task = "conf_int_pi after probe=False fit"
            except pu.inference.ProfileError:  # the unprobed fit missed the maximum
                t, task = np.nan, "conf_int_pi after probe=False fit: ProfileError"
            rows.append(dict(task=task, n=n, m=n, p=p, seconds=t))
        t, mem, s = _measure(lambda: pu.SETM(src, tgt).fit(), rep)  # noqa: B023
        rows.append(dict(task="SETM fit", n=n, m=n, p=p, seconds=t, peak_MB=mem,
                         iterations=s.convergence.iterations, starts=len(s.starts)))
        if n == 1000:
            t, _, _ = _measure(lambda: d.test_scar("bootstrap", n_boot=200, rng=1),  # noqa: B023
                               memory=False)
            rows.append(dict(task="test_scar bootstrap (200)", n=n, m=n, p=p, seconds=t))
        print(pd.DataFrame(rows[-5:]).to_string(index=False), flush=True)
    tab = pd.DataFrame(rows)
    print("\n" + tab.to_markdown(index=False, floatfmt=".3g"))
    return tab


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    run(a.quick, a.repeat)
