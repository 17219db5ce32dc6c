"""Do two versions of the package fit the same maxima and intervals? (issue 17's record)

A speed change that alters rounding (e.g. the order of a sum over rows) must leave the default
fits and their intervals as they were to 1e-8 (issue 17). ``fit`` writes, for each replicate of
the cells given, the default DETM fit (``pi_interval="profile"``: the probe and the plain 95%
profile interval, no bootstrap) and its null SETM fit: pi-hat, penalised log-EL and the plain
95% limits of each, with the fit's CPU seconds; ``compare`` matches two such files replicate by
replicate and reports the largest differences (of the log-ELs relative to their size) and
every replicate that differs by more than ``--tol``. Run each version with its own tree first on the path:

    PYTHONPATH=<old tree> python benchmarks/compare_fits.py fit /tmp/old.csv --cells sar:0.3:3000
    PYTHONPATH=<new tree> python benchmarks/compare_fits.py fit /tmp/new.csv --cells sar:0.3:3000
    python benchmarks/compare_fits.py compare /tmp/old.csv /tmp/new.csv

``--frames`` fits from DataFrames (F-ordered values, as formula and DataFrame fits have)
instead of C-ordered arrays. Up to session 49 the two took their sums over rows in another
order, so the two runs of one version showed which answers rounding decides (session 48, (F48)
in ``studies/results/README_detm.md``); since session 50 the pooled sample is stored in one
layout for both, and the two runs must agree to the last bit.

A cell is ``design:pi:n[:p]`` (Liu et al.'s SAR design or the SCAR design of
``puinfer.simulate``, p = 15 unless given); replicate ``r`` of a cell is seeded
``47_000_000 + 100_000 * cell index + r`` (the cells' order on the command line).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

VALUES = ["detm_pi", "detm_llf", "detm_lower", "detm_upper",
          "setm_pi", "setm_llf", "setm_lower", "setm_upper"]
#: with ``--bootstrap``: DETM's default (bootstrap-calibrated) 95% interval and its cut-off
BOOT_VALUES = ["detm_blower", "detm_bupper", "detm_bcut"]


def _cell(text: str) -> tuple:
    design, pi, n, *rest = text.split(":")
    return design, float(pi), int(n), int(rest[0]) if rest else 15


def fit_one(design: str, pi: float, n: int, p: int, seed: int, frames: bool = False,
            bootstrap: bool = False) -> dict:
    """The default DETM fit of one replicate and its null SETM fit, with their plain 95%
    profile intervals (``t_fit``: the DETM fit's CPU seconds, SETM's included; ``t_ci``: both
    intervals' after it); from DataFrames (whose values are F-ordered) if ``frames``, else from
    C-ordered arrays. ``bootstrap``: also DETM's default interval (the bootstrap-calibrated
    cut-off, 199 resamples, ``rng=0``), its cut-off and whether it is an interval
    (``t_boot``: its CPU seconds)."""
    import puinfer as pu
    from puinfer.simulate import sar_design, scar_design

    make = {"sar": sar_design, "scar": scar_design}[design]
    df = make(n, n, pi, p=p, rng=np.random.default_rng(seed))
    X = df[[f"x{j}" for j in range(1, p + 1)]]
    lab = df.labeled.to_numpy() == 1
    if not frames:
        X = X.to_numpy()  # rows picked by a mask come out C-ordered
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        d = pu.DETM(X[lab], X[~lab]).fit(pi_interval="profile")
        t_fit = time.process_time() - t0
        cd = d.conf_int_pi(method="profile")
        s = d.null_fit
        cs = s.conf_int_pi(method="profile")
        t_ci = time.process_time() - t0 - t_fit
    out = dict(design=design, pi=pi, n=n, p=p, seed=seed, detm_pi=d.pi,
               detm_llf=d.llf_penalized, detm_lower=cd["lower"], detm_upper=cd["upper"],
               setm_pi=s.pi, setm_llf=s.llf_penalized, setm_lower=cs["lower"],
               setm_upper=cs["upper"], t_fit=t_fit, t_ci=t_ci)
    if bootstrap:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            cb = d.conf_int_pi(method="bootstrap")
            out.update(detm_blower=cb["lower"], detm_bupper=cb["upper"],
                       detm_bcut=cb.attrs["cutoff"], detm_binterval=cb.attrs.get("interval"),
                       t_boot=time.process_time() - t0)
    return out


def fit(args) -> None:
    rows = []
    for i, text in enumerate(args.cells):
        design, pi, n, p = _cell(text)
        k, parts = (int(v) for v in args.part.split("/"))
        for r in range(k, args.reps, parts):
            seed = 47_000_000 + 100_000 * i + r
            rows.append(fit_one(design, pi, n, p, seed, args.frames, args.bootstrap))
            print(f"{text} #{r}: pi-hat {rows[-1]['detm_pi']:.6f} "
                  f"({rows[-1]['t_fit']:.1f} s)", flush=True)
            pd.DataFrame(rows).to_csv(args.out, index=False)


def compare(args) -> pd.DataFrame:
    """The largest difference of each value per cell, and the replicates beyond ``tol``."""
    a, b = pd.read_csv(args.old), pd.read_csv(args.new)
    key = ["design", "pi", "n", "p", "seed"]
    m = a.merge(b, on=key, suffixes=("_old", "_new"))
    # log-ELs relative to their size (a sum over N rows carries N ulps of rounding), the
    # rest absolute
    values = VALUES + [v for v in BOOT_VALUES if v in a and v in b]
    diff = pd.DataFrame({v: (m[f"{v}_new"] - m[f"{v}_old"]).abs()
                         / (np.maximum(1.0, m[f"{v}_old"].abs()) if v.endswith("llf") else 1.0)
                         for v in values})
    out = pd.concat([m[key], diff], axis=1)
    table = out.groupby(["design", "pi", "n", "p"])[values].max()
    table.insert(0, "replicates", out.groupby(["design", "pi", "n", "p"]).size())
    table["fit CPU s old"] = m.groupby(["design", "pi", "n", "p"])["t_fit_old"].mean()
    table["fit CPU s new"] = m.groupby(["design", "pi", "n", "p"])["t_fit_new"].mean()
    print(table.to_markdown(floatfmt=".3g"))
    beyond = out[(diff > args.tol).any(axis=1)]
    print(f"\n{len(beyond)} of {len(out)} replicates differ by more than {args.tol:g}")
    if len(beyond):
        print(beyond.to_markdown(index=False, floatfmt=".3g"))
    return table


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fit")
    f.add_argument("out")
    f.add_argument("--cells", nargs="+", required=True, help="design:pi:n[:p]")
    f.add_argument("--reps", type=int, default=10)
    f.add_argument("--frames", action="store_true",
                   help="fit from DataFrames (F-ordered values) instead of C-ordered arrays")
    f.add_argument("--bootstrap", action="store_true",
                   help="also DETM's default (bootstrap-calibrated) interval")
    f.add_argument("--part", default="0/1",
                   help="k/K: the replicates r with r %% K == k (split a run over processes)")
    c = sub.add_parser("compare")
    c.add_argument("old")
    c.add_argument("new")
    c.add_argument("--tol", type=float, default=1e-8)
    args = ap.parse_args()
    {"fit": fit, "compare": compare}[args.cmd](args)


if __name__ == "__main__":
    main()
