"""Session 78: does ``lr_test(small, big, reference="bootstrap")`` hold the level where the
chi-square reference of a DETM covariate-subset test over-rejects? (Declared before the runs.)

Session 76's audit (``studies/detm_lr_subset_pi.py``, ``results/detm_lr_subset_size.md``) found
the test of a noise feature, ``DETM(x1 + x2)`` against ``DETM(x1 + x2 + x3)``, rejecting a true
null in 10.7% of 300 data sets at 5% (17.7% at 10%) in its world W1 (session 75's weakly
identified world: pi = 0.5, source N(0, I), positives N((0.5, 0, 0), I), negatives
N((1, 1, 0), I); n = m = 1000). This study draws fresh data sets of the same world (data seeds
``default_rng([1, 1000, 10_000 + r])``: session 76 used ``[1, 1000, r]`` with r < 300) and
records for each: the chi-square p-value, and the bootstrap p-values with 99 resamples from
the fitted restricted model, smoothed (Silverman's bandwidth, the default) and discrete
(``smooth=0``), from independent streams (``rng = 10_000 + r`` and ``20_000 + r``); pi-hat of
both fits and the CPU time. Reported: the rejection rates at 5% and 10% with Monte Carlo SEs,
paired counts. The bootstrap's p-value has a granularity of 0.01 (99 resamples).

Added while the W1 runs went on, before any of their results were read: the same test in
session 76's well separated world W2 (pi = 0.3, positives N((1, 0, 0), I), negatives
N((0, 2.5, 0), I); data seeds ``[2, 1000, 10_000 + r]``), where chi-square held its level (a
check that the bootstrap does too), and power in W1 (``POW``: ``x1 + x3`` against
``x1 + x2 + x3`` on W1's data sets, x2 shifting the negatives; chi-square and the smoothed
bootstrap only).

    OPENBLAS_NUM_THREADS=1 python studies/detm_lr_subset_boot.py run 0 400          # W1
    OPENBLAS_NUM_THREADS=1 python studies/detm_lr_subset_boot.py run 0 200 W2
    OPENBLAS_NUM_THREADS=1 python studies/detm_lr_subset_boot.py run 0 100 POW
    python studies/detm_lr_subset_boot.py summarise [W2|POW]

Rows: ``studies/results/detm_lr_subset_boot.csv`` (W1), ``..._W2.csv``, ``..._POW.csv``
(appended, restartable).
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "detm_lr_subset_boot.csv"
R0 = 10_000


#: mode -> (world id, pi, positives' mean, negatives' mean, restricted formula)
MODES = {"W1": (1, 0.5, [0.5, 0, 0], [1, 1, 0], "labeled ~ x1 + x2"),
         "W2": (2, 0.3, [1, 0, 0], [0, 2.5, 0], "labeled ~ x1 + x2"),
         "POW": (1, 0.5, [0.5, 0, 0], [1, 1, 0], "labeled ~ x1 + x3")}


def out(mode: str) -> Path:
    return OUT if mode == "W1" else OUT.with_name(f"{OUT.stem}_{mode}.csv")


def data(r: int, mode: str = "W1") -> pd.DataFrame:
    from puinfer.simulate.detm import pu_normal

    world, pi, mu1, mu0, _ = MODES[mode]
    return pu_normal(1000, 1000, pi, [0, 0, 0], mu1, mu0,
                     rng=np.random.default_rng([world, 1000, R0 + r]))


def one(r: int, mode: str = "W1") -> dict:
    import puinfer as pu

    df = data(r, mode)
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small = pu.DETM.from_formula(MODES[mode][4], data=df).fit()
        big = pu.DETM.from_formula("labeled ~ x1 + x2 + x3", data=df).fit()
        t1 = time.process_time()
        chi = pu.lr_test(small, big)
        sm = pu.lr_test(small, big, reference="bootstrap", n_boot=99, rng=R0 + r)
        t2 = time.process_time()
        disc = None if mode == "POW" else pu.lr_test(
            small, big, reference="bootstrap", n_boot=99, rng=2 * R0 + r, smooth=0)
        t3 = time.process_time()
    nan = float("nan")
    return dict(r=r, stat=chi.statistic, p_chi2=chi.pvalue, p_smooth=sm.pvalue,
                p_discrete=disc.pvalue if disc else nan, pi_small=small.pi, pi_big=big.pi,
                crit_smooth=float(sm.extra["bootstrap 95% critical value"]),
                crit_discrete=float(disc.extra["bootstrap 95% critical value"]) if disc else nan,
                usable_smooth=sm.extra["bootstrap resamples"],
                usable_discrete=disc.extra["bootstrap resamples"] if disc else "",
                t_fits=t1 - t0, t_smooth=t2 - t1, t_discrete=t3 - t2)


def run(r0: int, r1: int, mode: str = "W1") -> None:
    path = out(mode)
    done = set(pd.read_csv(path)["r"]) if path.exists() else set()
    for r in range(r0, r1):
        if r in done:
            continue
        row = pd.DataFrame([one(r, mode)])
        row.to_csv(path, mode="a", header=not path.exists(), index=False)
        print(row.to_string(index=False, header=False), flush=True)


def summarise(mode: str = "W1") -> None:
    d = pd.read_csv(out(mode))
    n = len(d)
    print(f"{n} data sets; fits {d.t_fits.mean():.1f} s, bootstraps {d.t_smooth.mean():.1f} / "
          f"{d.t_discrete.mean():.1f} s each (CPU, mean)")
    for col in ("p_chi2", "p_smooth", "p_discrete"):
        for a in (0.05, 0.10):
            k = (d[col] <= a).mean()
            print(f"{col:11s} reject at {a:.2f}: {k:.3f} (MC SE {np.sqrt(k * (1 - k) / n):.3f})")
    moved = (d.pi_big - d.pi_small).abs()
    for lo, hi in ((0, 0.01), (0.01, 0.05), (0.05, 1.1)):
        s = d[(moved >= lo) & (moved < hi)]
        print(f"|pi move| in [{lo}, {hi}): {len(s)} data sets; reject at 5%: chi2 "
              f"{(s.p_chi2 <= 0.05).mean():.3f}, smoothed {(s.p_smooth <= 0.05).mean():.3f}, "
              f"discrete {(s.p_discrete <= 0.05).mean():.3f}")
    print("paired at 5% (chi2 rejects, smoothed does not / the reverse):",
          int(((d.p_chi2 <= 0.05) & (d.p_smooth > 0.05)).sum()),
          int(((d.p_chi2 > 0.05) & (d.p_smooth <= 0.05)).sum()))


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:5])
    else:
        summarise(*sys.argv[2:3])
