"""Session 77: does reporting the hull of a confidence set that is not an interval repair the
default interval's coverage of pi where pi is weakly identified? (Declared before the runs.)

Session 76's audit (session 75's world: p = 3, pi = 0.5, positives N((0.5, 0, 0), I),
negatives N((1, 1, 0), I), source N(0, I); n = m = 1000) found the default
(bootstrap-calibrated) interval covering 0.864 of 250 data sets; 16 of its 34 misses were fits
whose confidence set is not an interval, where ``conf_int_pi`` returned the component around
pi-hat. On those data, after the fact, every one of the 16 had pi = 0.5 between the component
and a point of the set's other part. Since session 77 ``conf_int_pi`` returns the set's hull
there (the component in ``attrs["component"]``). This script measures both on fresh data sets
(seeds ``SEED0 + r``, never used before): for each, the default DETM fit, its default interval
and its plain profile interval (hull and component of each), ``R*(0.5)`` (whether the set
itself holds the true pi), pi-hat and the CPU time.

    OPENBLAS_NUM_THREADS=1 python studies/detm_pi_hull.py run 0 300 --n 1000   # ~8 CPU s each
    python studies/detm_pi_hull.py summarise --n 1000

Rows: ``studies/results/detm_pi_hull_n{n}.csv`` (appended, one per data set; those that raised
in ``..._errors.csv``); the reading in
``studies/results/detm_pi_hull.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
SEED0, PI0 = 77_000_000, 0.5


def data(n: int, seed: int) -> pd.DataFrame:
    """One data set of session 75's world (``pu_normal``, as session 76's audit drew it)."""
    from puinfer.simulate import pu_normal

    return pu_normal(n, n, PI0, [0, 0, 0], [0.5, 0, 0], [1, 1, 0],
                     rng=np.random.default_rng(seed))


def _interval(ci, tag: str) -> dict:
    lo_c, hi_c = ci.attrs["component"]
    return {f"{tag}_lower": float(ci["lower"]), f"{tag}_upper": float(ci["upper"]),
            f"{tag}_comp_lower": float(lo_c), f"{tag}_comp_upper": float(hi_c),
            f"{tag}_interval": bool(ci.attrs["interval"]), f"{tag}_cutoff": ci.attrs["cutoff"]}


def one(n: int, seed: int) -> dict:
    """The default DETM fit of one data set, both intervals and ``R*(0.5)``, as one row."""
    import puinfer as pu

    df = data(n, seed)
    t0 = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pu.DETM.from_formula("labeled ~ x1 + x2 + x3", data=df).fit()
        cal = res.conf_int_pi()
        t1 = time.process_time()
        prof = res.conf_int_pi(method="profile")
        r_true = float(res.profile_pi().statistic(PI0))
        _ = res.bse  # (the weak-pi check, which the SEs run)
    weak = any(w.category.__name__ == "AssumptionWarning" and "weakly determined"
               in str(w.message) for w in caught)
    return dict(seed=seed, n=n, pi_hat=float(res.pi), r_true=r_true, weak=weak,
                **_interval(cal, "cal"), **_interval(prof, "prof"),
                t_fit_cal=t1 - t0, t=time.process_time() - t0)


def run(r0: int, r1: int, n: int) -> None:
    path, errors = OUT / f"detm_pi_hull_n{n}.csv", OUT / f"detm_pi_hull_n{n}_errors.csv"
    done = {int(q) for f in (path, errors) if f.exists() for q in pd.read_csv(f)["seed"]}
    for r in range(r0, r1):
        if SEED0 + r in done:
            continue
        try:
            row, out = one(n, SEED0 + r), path
        except Exception as exc:  # recorded, not hidden (e.g. a ProfileError), in its own file
            row, out = dict(seed=SEED0 + r, n=n, error=f"{type(exc).__name__}: {exc}"), errors
        pd.DataFrame([row]).to_csv(out, mode="a", header=not out.exists(), index=False)
        print(r, {k: row.get(k) for k in ("pi_hat", "cal_lower", "cal_upper", "cal_interval",
                                          "t", "error")}, flush=True)


def summarise(n: int) -> pd.DataFrame:
    ok = pd.read_csv(OUT / f"detm_pi_hull_n{n}.csv")
    errors = OUT / f"detm_pi_hull_n{n}_errors.csv"
    err = pd.read_csv(errors) if errors.exists() else pd.DataFrame(columns=["seed", "error"])
    rows = []
    for tag in ("cal", "prof"):
        hull = (ok[f"{tag}_lower"] <= PI0) & (PI0 <= ok[f"{tag}_upper"])
        comp = (ok[f"{tag}_comp_lower"] <= PI0) & (PI0 <= ok[f"{tag}_comp_upper"])
        in_set = ok["r_true"] <= ok[f"{tag}_cutoff"]
        k = len(ok)
        width = ok[f"{tag}_upper"] - ok[f"{tag}_lower"]
        cwidth = ok[f"{tag}_comp_upper"] - ok[f"{tag}_comp_lower"]
        for name, cov in (("component (before session 77)", comp), ("hull (session 77)", hull),
                          ("the set itself (R*(0.5) <= cut-off)", in_set)):
            c = cov.mean()
            rows.append({"interval": {"cal": "default (calibrated)", "prof": "plain profile"}[tag],
                         "reported": name, "data sets": k, "coverage": round(c, 3),
                         "MC SE": round(np.sqrt(c * (1 - c) / k), 3),
                         "mean width": round((cwidth if "component" in name else width).mean(), 3)
                         if "set itself" not in name else np.nan})
        rows.append({"interval": {"cal": "default (calibrated)", "prof": "plain profile"}[tag],
                     "reported": "not an interval (share)", "data sets": k,
                     "coverage": round((~ok[f"{tag}_interval"].astype(bool)).mean(), 3)})
    out = pd.DataFrame(rows)
    print(f"{len(ok)} data sets, {len(err)} more raised (seeds {list(err.seed)}); CPU per data "
          f"set {ok['t'].mean():.1f} s")
    print(out.to_markdown(index=False))
    for tag in ("cal", "prof"):
        hull = (ok[f"{tag}_lower"] <= PI0) & (PI0 <= ok[f"{tag}_upper"])
        comp = (ok[f"{tag}_comp_lower"] <= PI0) & (PI0 <= ok[f"{tag}_comp_upper"])
        gap = ~ok[f"{tag}_interval"].astype(bool)
        miss = ~hull
        print(f"{tag}: paired, the hull covers where the component misses in "
              f"{int((hull & ~comp).sum())} data sets (the reverse in {int((comp & ~hull).sum())}); "
              f"sets not an interval {int(gap.sum())}, of which the hull misses "
              f"{int((gap & miss).sum())}; misses {int(miss.sum())}: pi-hat above 0.5 in "
              f"{int((miss & (ok.pi_hat > PI0)).sum())}, weak-pi warning in "
              f"{int((miss & ok.weak.astype(bool)).sum())} (all fits: {int(ok.weak.astype(bool).sum())})")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["run", "summarise"])
    ap.add_argument("r", nargs="*", type=int)
    ap.add_argument("--n", type=int, default=1000)
    a = ap.parse_args()
    if a.what == "run":
        run(*(a.r or [0, 1]), n=a.n)
    else:
        summarise(a.n)
    sys.exit(0)
