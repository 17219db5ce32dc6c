"""One evaluation of DETM's profile log-EL (``_el.profile_log_el``) against the number of rows:
CPU milliseconds per evaluation of the value (``order=0``: the tilts, the multipliers' Newton
solve) and of the value with gradient and Hessian (``order=2``, no memo: the multipliers again
and the sums over the rows), the best of three batches. Every profile point of a fit's probe
and interval costs a few of each, so this is the unit cost of the fit above 40,000 rows
(issue 17). Data: ``bench_detm``'s (Liu et al.'s SAR design, pi = 0.3, p = 15); theta, pi from
a DETM fit at n = m = 10,000 without the probe.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=<tree> taskset -c 0 python benchmarks/bench_profile_eval.py

Compare two commits by running their trees alternately, several times (a single run varies
by 20-40% on a shared machine).
"""

from __future__ import annotations

import os
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from bench_detm import _data  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.models.detm import _el  # noqa: E402
from puinfer.models.detm._data import prepare  # noqa: E402


def run(sizes=(1000, 3000, 100_000, 500_000), repeat=3) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pu.DETM(*_data(10_000, 15)).fit(probe=False)
    theta, pi = r._fit.theta, r._fit.pi
    rows = []
    for n in sizes:
        d = prepare(*_data(n, 15))
        reps = max(3, int(3e6 // d.N))
        row = {"n": n, "m": n, "rows": d.N}
        for order in (0, 2):
            best = np.inf
            for _ in range(repeat):
                t = time.process_time()
                for _ in range(reps):
                    _el.profile_log_el(theta, pi, d.Z, d.y, 0.001, order=order, X1=d.X1)
                best = min(best, (time.process_time() - t) / reps * 1e3)
            row[f"order{order}_ms"] = best
        rows.append(row)
    return pd.DataFrame(rows)


if __name__ == "__main__":
    print(pu.__file__)
    print(run().to_string(index=False, float_format=lambda v: f"{v:.4g}"))
