"""Size of the likelihood-ratio test of a covariate subset for DETM and SETM (issue 15).

Design (one): source positives ``x1 ~ N(1, 1)``; unlabeled target with ``pi = 0.4``, positives
``x1 ~ N(1.5, 1)`` (SAR: a tilt in x1), negatives ``x1 ~ N(-1, 1)``; a second feature
``x2 ~ N(0, 1)`` independent of everything in every sample, so that ``beta_x2 = 0`` in both
tilts (the null). ``n`` source and ``m`` target rows. In each replicate

* DETM: ``lr_test(DETM(~ x1), DETM(~ x1 + x2))``, chi-square with 2 df;
* with ``--setm``, SETM: ``lr_test(SETM(~ x1), SETM(~ x1 + x2))``, chi-square with 1 df

(both fitted from one data frame by formula with the default ridge, as a user would). The
share of p-values below 0.05 and 0.01 is the size.

Usage::

    nice -n 10 python studies/detm_lr_subset_size.py --reps 1000 --n 500 --m 500

Appends every replicate to ``studies/results/detm_lr_subset_size.csv`` (restartable: seeds
already in the CSV are skipped) and writes ``studies/results/detm_lr_subset_size.md``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import puinfer as pu

OUT = Path(__file__).resolve().parent / "results"
CLASSES = (pu.DETM,)  # --setm adds the SETM subset test


def draw(n, m, pi, rng):
    pos = rng.random(m) < pi
    x1 = np.r_[rng.normal(1.0, 1.0, n), np.where(pos, rng.normal(1.5, 1.0, m),
                                                 rng.normal(-1.0, 1.0, m))]
    return pd.DataFrame({"labeled": np.r_[np.ones(n, int), np.zeros(m, int)], "x1": x1,
                         "x2": rng.normal(0.0, 1.0, n + m)})


def replicate(seed, n, m, pi, probe=None):
    df = draw(n, m, pi, np.random.default_rng(seed))
    row = {"seed": seed}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cls in CLASSES:
            small = cls.from_formula("labeled ~ x1", data=df).fit(probe=probe)
            big = small.update("labeled ~ . + x2", probe=probe)
            t = pu.lr_test(small, big)
            key = cls.__name__
            row[f"{key}_stat"], row[f"{key}_df"], row[f"{key}_p"] = t.statistic, t.df, t.pvalue
            row[f"{key}_converged"] = bool(small.converged and big.converged)
    return row


def summarise(raw: pd.DataFrame, args, elapsed) -> str:
    lines = [f"# LR test of a covariate subset: size ({len(raw)} null replicates)", "",
             f"Command: `nice -n 10 python studies/detm_lr_subset_size.py --reps {args.reps} "
             f"--n {args.n} --m {args.m}{' --setm' if args.setm else ''}"
             f"{' --no-probe' if args.no_probe else ''}`", "",
             f"Design: n = {args.n} source, m = {args.m} target rows, pi = {args.pi}; x1 tilts "
             "(SAR), x2 is noise in every sample (beta_x2 = 0 in both tilts). Default ridge "
             "penalty; models built by formula from one data frame, the larger by "
             "`update('labeled ~ . + x2')`.", "",
             "| test | df | replicates | size at 5% | MC s.e. | size at 1% | mean statistic |",
             "|---|---|---|---|---|---|---|"]
    for key in [c.__name__ for c in CLASSES]:
        p = raw[f"{key}_p"].to_numpy()
        ok = np.isfinite(p)
        r5, r1 = np.mean(p[ok] < 0.05), np.mean(p[ok] < 0.01)
        se = np.sqrt(0.05 * 0.95 / ok.sum())
        lines.append(f"| {key}(x1) vs {key}(x1 + x2) | {int(raw[f'{key}_df'].iloc[0])} | "
                     f"{ok.sum()} | {r5:.2%} | {se:.2%} | {r1:.2%} | "
                     f"{raw[f'{key}_stat'][ok].mean():.3f} |")
    conv = np.logical_and.reduce([raw[f"{c.__name__}_converged"] for c in CLASSES])
    lines += ["", f"Share of replicates where all fits converged: {np.mean(conv):.1%}. "
              f"Run time of this invocation: {elapsed / 60:.1f} min."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--m", type=int, default=500)
    ap.add_argument("--pi", type=float, default=0.4)
    ap.add_argument("--setm", action="store_true", help="also the SETM subset test")
    ap.add_argument("--no-probe", action="store_true",
                    help="fit(probe=False): skip the profile check of each fit (faster)")
    ap.add_argument("--out", default=str(OUT / "detm_lr_subset_size"))
    args = ap.parse_args(argv)
    global CLASSES
    if args.setm:
        CLASSES = (pu.DETM, pu.SETM)
    csv, md = Path(args.out + ".csv"), Path(args.out + ".md")
    csv.parent.mkdir(parents=True, exist_ok=True)
    done = set(pd.read_csv(csv)["seed"]) if csv.exists() else set()
    t0 = time.time()
    for seed in range(args.reps):
        if seed in done:
            continue
        row = pd.DataFrame([replicate(seed, args.n, args.m, args.pi,
                                      probe=False if args.no_probe else None)])
        row.to_csv(csv, mode="a", header=not csv.exists(), index=False)
    raw = pd.read_csv(csv)
    raw = raw[raw.seed < args.reps]
    md.write_text(summarise(raw, args, time.time() - t0))
    print(md.read_text())


if __name__ == "__main__":
    main()
