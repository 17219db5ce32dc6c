"""Wall and CPU time of DETM's bootstraps in one and in several processes (issue 17).

The bootstrap SCAR test and the bootstrap-calibrated interval for pi (199 resamples each) on
``bench_detm.py``'s data (Liu et al.'s SAR design, n = m = 1000, p = 15), with ``n_jobs`` 1
and 2, BLAS threads as the environment leaves them (run it with and without
``OPENBLAS_NUM_THREADS=1``). Prints a table; ``--out`` writes it as CSV::

    python benchmarks/bench_n_jobs.py --out benchmarks/results/bench_n_jobs_s44.csv
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd

import puinfer as pu
from puinfer.simulate import sar_design


def run(n: int, p: int, n_boot: int, jobs: list[int]) -> pd.DataFrame:
    df = sar_design(n, n, 0.3, p=p, rng=np.random.default_rng(n + p))
    X = df[[f"x{j}" for j in range(1, p + 1)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tasks = {"test_scar bootstrap": lambda f, k: f.test_scar("bootstrap", n_boot=n_boot,
                                                                    rng=1, n_jobs=k).pvalue,
                 "conf_int_pi bootstrap": lambda f, k: tuple(f.conf_int_pi(
                     method="bootstrap", n_boot=n_boot, rng=1, n_jobs=k))}
        for name, task in tasks.items():
            for k in jobs:
                fit = pu.DETM(X[lab], X[~lab]).fit()  # afresh: results keep their draws
                fit.null_fit  # noqa: B018 (fitted before timing)
                w, c = time.perf_counter(), time.process_time()
                out = task(fit, k)
                rows.append(dict(task=f"{name} ({n_boot})", n=n, p=p, n_jobs=k,
                                 blas_threads=os.environ.get("OPENBLAS_NUM_THREADS", "default"),
                                 wall_s=time.perf_counter() - w,
                                 main_cpu_s=time.process_time() - c, result=str(out)))
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--p", type=int, default=15)
    ap.add_argument("--n-boot", type=int, default=199)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--out", default=None, help="append the table to this CSV")
    a = ap.parse_args(argv)
    tab = run(a.n, a.p, a.n_boot, a.jobs)
    print(tab.to_markdown(index=False, floatfmt=".2f"))
    if a.out:
        exists = os.path.exists(a.out)
        tab.to_csv(a.out, mode="a", header=not exists, index=False)


if __name__ == "__main__":
    main()
