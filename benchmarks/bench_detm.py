"""Speed and memory of DETM/SETM on Liu et al.'s SAR design (``puinfer.simulate.sar_design``,
pi = 0.3), the record of issue 17.

    OPENBLAS_NUM_THREADS=1 taskset -c 0 python benchmarks/bench_detm.py \\
        --out benchmarks/results/bench_detm.csv --previous benchmarks/results/bench_detm_prev.csv
    python benchmarks/bench_detm.py --quick            # n = m <= 10,000 only

For each size: the default SETM and DETM fits (which include the profile probe: the check of the
fit against the profile of pi, and the 95% profile interval it leaves cached), then each model's
plain ``conf_int_pi(method="profile")`` after its fit, their total ("total": two separate
fits), the same two fits and intervals from the DETM fit alone ("both_from_detm": DETM's fit
contains SETM's default fit, kept as ``null_fit``), and the peak traced memory
of the two fits (a separate tracemalloc run; numpy's allocations included). Times are CPU
seconds of the process (``time.process_time``: with one BLAS thread the work done, robust to
other jobs on a shared machine), the minimum over ``--repeat`` untraced runs (one run above
10,000 rows). Sizes: n = m in {1e3, 1e4, 1e5, 5e5} at p = 15, and p in {5, 15, 30, 50} at n = m
= 3000; then the bootstrap SCAR test (199 resamples, n = m = 1000, p = 15; the fits excluded)
and each model's bootstrap-calibrated interval for pi (199 resamples, n = m = 1000 and 3000;
after the fit). ``--previous`` adds the ratio new / previous of every time (a CSV written by
``--out`` at the previous commit).
BLAS threads are limited to one (set OPENBLAS_NUM_THREADS to change).
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

import puinfer as pu  # noqa: E402
from puinfer.simulate import sar_design  # noqa: E402

TIMES = ["setm_fit", "setm_ci", "detm_fit", "detm_ci", "total", "both_from_detm"]


def _data(n, p):
    df = sar_design(n, n, 0.3, p=p, rng=np.random.default_rng(n + p))
    X = df[[f"x{j}" for j in range(1, p + 1)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    return X[lab], X[~lab]


def _once(src, tgt):
    """One SETM + DETM default fit and interval; the times (the four steps, their total, and
    both models from the DETM fit alone: it contains SETM's default fit, ``null_fit``) and the
    results."""
    t0 = time.process_time()
    s = pu.SETM(src, tgt).fit()
    t1 = time.process_time()
    cs = s.conf_int_pi(method="profile")
    t2 = time.process_time()
    d = pu.DETM(src, tgt).fit()
    t3 = time.process_time()
    cd = d.conf_int_pi(method="profile")
    t4 = time.process_time()
    d.null_fit.conf_int_pi(method="profile")
    t5 = time.process_time()
    return [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0, t5 - t2], (s, cs, d, cd)


def run(quick: bool, repeat: int, only=None, bootstrap=True):
    sizes = [(1000, 15), (10_000, 15), (3000, 5), (3000, 15), (3000, 30), (3000, 50)]
    if not quick:
        sizes += [(100_000, 15), (500_000, 15)]
    if only:
        sizes = [tuple(int(v) for v in s.split("x")) for s in only]
    warnings.simplefilter("ignore")
    rows = []
    for n, p in sizes:
        src, tgt = _data(n, p)
        best = np.full(len(TIMES), np.inf)
        for _ in range(repeat if n <= 10_000 else 1):
            times, (s, cs, d, cd) = _once(src, tgt)
            best = np.minimum(best, times)
        tracemalloc.start()
        pu.SETM(src, tgt).fit()
        pu.DETM(src, tgt).fit()
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        rows.append(dict(n=n, m=n, p=p, **dict(zip(TIMES, best, strict=True)), peak_MB=peak,
                         setm_pi=s.pi, setm_llf=s.llf_penalized, setm_interval=tuple(cs),
                         detm_pi=d.pi, detm_llf=d.llf_penalized, detm_interval=tuple(cd),
                         detm_starts=len(d.starts)))
        print(pd.DataFrame(rows[-1:]).to_string(index=False), flush=True)
    if not bootstrap:
        return pd.DataFrame(rows).assign(task="SETM + DETM fit + CIs")
    # the bootstrap SCAR test: its own cost, after the fits
    src, tgt = _data(1000, 15)
    d = pu.DETM(src, tgt).fit()
    d.null_fit  # noqa: B018 (fitted before timing)
    t0 = time.process_time()
    res = d.test_scar("bootstrap", n_boot=199, rng=1)
    rows.append(dict(n=1000, m=1000, p=15, total=time.process_time() - t0,
                     task="test_scar bootstrap (199)", boot_pvalue=res.pvalue))
    # the bootstrap-calibrated interval for pi (issue 19): its own cost, after each fit
    for n in (1000, 3000):
        src, tgt = _data(n, 15)
        for cls in (pu.SETM, pu.DETM):
            r = cls(src, tgt).fit()
            t0 = time.process_time()
            ci = r.conf_int_pi(method="bootstrap", n_boot=199, rng=1)
            rows.append(dict(n=n, m=n, p=15, total=time.process_time() - t0,
                             task=f"{cls.__name__} conf_int_pi bootstrap (199)",
                             boot_interval=(ci["lower"], ci["upper"])))
            print(pd.DataFrame(rows[-1:]).to_string(index=False), flush=True)
    tab = pd.DataFrame(rows)
    tab["task"] = tab.get("task", pd.Series(dtype=object)).fillna("SETM + DETM fit + CIs")
    return tab


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n = m <= 10,000 only")
    ap.add_argument("--repeat", type=int, default=3)
    add_arguments(ap)
    ap.add_argument("--sizes", nargs="*", help="only these sizes, as NxP (e.g. 500000x15)")
    ap.add_argument("--no-bootstrap", action="store_true")
    a = ap.parse_args()
    t = run(a.quick, a.repeat, a.sizes, not a.no_bootstrap)
    finish(t, a, ["task", "n", "p"], TIMES,
           shown_columns=["task", "n", "m", "p", *TIMES, "peak_MB"],
           fill={"task": "SETM + DETM fit + CIs"})
