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

    OPENBLAS_NUM_THREADS=1 python studies/detm_lr_subset_boot.py run 0 400
    python studies/detm_lr_subset_boot.py summarise

Rows: ``studies/results/detm_lr_subset_boot.csv`` (appended, restartable).
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


def data(r: int) -> pd.DataFrame:
    from puinfer.simulate.detm import pu_normal

    return pu_normal(1000, 1000, 0.5, [0, 0, 0], [0.5, 0, 0], [1, 1, 0],
                     rng=np.random.default_rng([1, 1000, R0 + r]))


def one(r: int) -> dict:
    import puinfer as pu

    df = data(r)
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small = pu.DETM.from_formula("labeled ~ x1 + x2", data=df).fit()
        big = pu.DETM.from_formula("labeled ~ x1 + x2 + x3", data=df).fit()
        t1 = time.process_time()
        chi = pu.lr_test(small, big)
        sm = pu.lr_test(small, big, reference="bootstrap", n_boot=99, rng=R0 + r)
        t2 = time.process_time()
        disc = pu.lr_test(small, big, reference="bootstrap", n_boot=99, rng=2 * R0 + r,
                          smooth=0)
        t3 = time.process_time()
    return dict(r=r, stat=chi.statistic, p_chi2=chi.pvalue, p_smooth=sm.pvalue,
                p_discrete=disc.pvalue, pi_small=small.pi, pi_big=big.pi,
                crit_smooth=float(sm.extra["bootstrap 95% critical value"]),
                crit_discrete=float(disc.extra["bootstrap 95% critical value"]),
                usable_smooth=sm.extra["bootstrap resamples"],
                usable_discrete=disc.extra["bootstrap resamples"],
                t_fits=t1 - t0, t_smooth=t2 - t1, t_discrete=t3 - t2)


def run(r0: int, r1: int) -> None:
    done = set(pd.read_csv(OUT)["r"]) if OUT.exists() else set()
    for r in range(r0, r1):
        if r in done:
            continue
        row = pd.DataFrame([one(r)])
        row.to_csv(OUT, mode="a", header=not OUT.exists(), index=False)
        print(row.to_string(index=False, header=False), flush=True)


def summarise() -> None:
    d = pd.read_csv(OUT)
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
        run(int(sys.argv[2]), int(sys.argv[3]))
    else:
        summarise()
