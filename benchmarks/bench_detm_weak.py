"""Benchmark: DETM on data that barely determine pi (issue 17; session 81's profile floor).

Small samples whose profile of pi stays near its maximum over much of [0, 1] are the slowest
DETM fits per row: the limit searches walk to both ends of the range, where the maxima at fixed
pi creep towards the single-tilt fit's level without reaching it. The fit's probe still makes
that walk (it is part of its search for a higher maximum); the intervals after the fit need no
search where the floor puts every pi in the set. Cases:

* ``shifted-270``: 120 source and 150 target rows, the target the source shifted by 0.6 in
  x1 (no mixture; ``tests/models/detm/test_detm_profile_floor.py``'s data, until session 80
  ``test_detm_issue13.py``'s);
* ``scar-0.9-100``: the SCAR design of ``puinfer.simulate``, pi = 0.9, n = m = 100, p = 2,
  seed 3 (a mixture whose second component is too small to tell);
* ``sar-0.3-300``: Liu et al.'s SAR design, pi = 0.3, n = m = 300, p = 2, seed 5 (pi
  determined: what the floor costs where it does not apply).

For each: the default DETM fit with the plain profile interval (``pi_interval="profile"``: the
probe included), that interval after the fit, and the default bootstrap-calibrated interval
(199 resamples, its own cost after the fit). CPU seconds (one BLAS thread). Usage::

    python benchmarks/bench_detm_weak.py --out now.csv [--previous before.csv]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _table import add_arguments, finish  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.simulate import sar_design, scar_design  # noqa: E402


def shifted():
    g = np.random.default_rng(13)
    src = pd.DataFrame({"x1": g.normal(size=120), "x2": g.normal(size=120)})
    tgt = pd.DataFrame({"x1": g.normal(0.6, 1, size=150), "x2": g.normal(size=150)})
    return src, tgt


def simulated(make, pi, n, seed):
    def build():
        df = make(n, n, pi, p=2, rng=np.random.default_rng(seed))
        X = df[["x1", "x2"]]
        lab = df.labeled.to_numpy() == 1
        return X[lab], X[~lab]
    return build


CASES = {"shifted-270": shifted, "scar-0.9-100": simulated(scar_design, 0.9, 100, 3),
         "sar-0.3-300": simulated(sar_design, 0.3, 300, 5)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap)
    args = ap.parse_args()
    rows = []
    for name, build in CASES.items():
        src, tgt = build()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            r = pu.DETM(src, tgt).fit(pi_interval="profile")
            t1 = time.process_time()
            ci = r.conf_int_pi(method="profile")
            t2 = time.process_time()
            cb = r.conf_int_pi(method="bootstrap")
            t3 = time.process_time()
        rows.append(dict(case=name, N=len(src) + len(tgt), fit_s=t1 - t0, ci_s=t2 - t1,
                         boot_ci_s=t3 - t2, pi_hat=float(r.pi), llf=float(r.llf_penalized),
                         lower=float(ci["lower"]), upper=float(ci["upper"]),
                         boot_lower=float(cb["lower"]), boot_upper=float(cb["upper"]),
                         floor_statistic=ci.attrs.get("floor_statistic", np.nan)))
        print(pd.DataFrame(rows[-1:]).to_string(index=False), flush=True)
    finish(pd.DataFrame(rows), args, key=["case"], times=["fit_s", "ci_s", "boot_ci_s"],
           floatfmt=".6g")


if __name__ == "__main__":
    main()
