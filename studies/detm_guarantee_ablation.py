"""Issue 17: what each piece of the default fit's global-maximum search costs, and what it finds.

Each piece of the DETM/SETM search and probe was added for a miss a study found (issue 19,
``results/README_detm.md``); this study measures them together, in today's configuration. On
fresh replicates (n = m = 1000, p = 15; seeds ``59_000_000 + 100_000 * cell + r``, a block
used by no other study; cells ``design:pi`` from ``detm_interval.DESIGNS``) the default DETM
fit (``pi_interval="profile"``; it contains SETM's default fit, the SCAR test's null fit) runs
once as shipped and once with each piece switched off (:data:`VARIANTS`), one after the other
in one process:

* ``hops8``: basin hopping with 8 moves per radius instead of 16 (``_starts.HOPS_PER_RADIUS``);
* ``nohops``: no basin hopping (``_starts.HOP_RADII = ()``; SETM's and DETM's);
* ``nostretch``: no stretch moves (``_starts.STRETCH_FACTORS = ()``);
* ``noskelmoment``: the profile skeleton without its moment starts
  (``_profile.moment_thetas``);
* ``nooutside``: the probe without the points beyond the interval limits
  (``_profile.OUTSIDE_POINTS = 0``);
* ``noprobe``: ``fit(probe=False)``: the search alone (SETM's null fit then unprobed too);
* (``--variants``, session 59's (A59b)) ``seed1``, ``seed2``: the shipped search with other
  random moves (``fit(seed=...)``: the hops' draws), and ``hops32``: 32 moves per radius;
* ((A59c)) ``extra8``, ``extra16``: every hop phase (SETM's and DETM's) followed by another of
  8 or 16 moves per radius drawn from an independent stream -- the shipped search plus runs.

Per replicate and variant: pi-hat and penalised log-EL of DETM and of its SETM null fit, the
plain 95% profile interval of DETM (NaN where it cannot be computed, e.g. a ``ProfileError``
without the probe), and the fit's CPU seconds. A variant *misses* where its log-EL is below
the best any variant reached on that replicate by more than 1e-6 (the shipped fit can miss
too: then another variant found a higher maximum).

    PYTHONPATH=. python studies/detm_guarantee_ablation.py run --part 0/2 --out _s59a0
    PYTHONPATH=. python studies/detm_guarantee_ablation.py run --part 1/2 --out _s59a1
    python studies/detm_guarantee_ablation.py summarise --tag _s59a0 _s59a1
    PYTHONPATH=. python studies/detm_guarantee_ablation.py run --part 0/2 --out _s59b0 \
        --variants seed1 seed2 hops32
    python studies/detm_guarantee_ablation.py summarise --tag _s59a0 _s59a1 _s59b0 _s59b1
    PYTHONPATH=. python studies/detm_guarantee_ablation.py run --part 0/2 --out _s59c0 \
        --variants extra8 extra16

Rows are appended to ``results/detm_guarantee_ablation_raw<tag>.csv`` as they come
(restartable: replicates already there are skipped).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from detm_interval import DESIGNS, OUT  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.inference.profile import ProfileError  # noqa: E402
from puinfer.models.detm import _profile, _starts  # noqa: E402

CELLS = ["sar:0.3", "sar:0.7", "scar:0.7", "gamma:0.7"]
#: variant -> {(module, attribute): value} patched for its fit (restored after)
VARIANTS = {
    "base": {},
    "hops8": {(_starts, "HOPS_PER_RADIUS"): 8},
    "nohops": {(_starts, "HOP_RADII"): ()},
    "nostretch": {(_starts, "STRETCH_FACTORS"): ()},
    "noskelmoment": {(_profile, "moment_thetas"): lambda *a, **k: []},
    "nooutside": {(_profile, "OUTSIDE_POINTS"): 0},
    "noprobe": {},
    # (A59b) the same search with other random moves (the fit's ``seed``), and twice the moves
    "seed1": {},
    "seed2": {},
    "hops32": {(_starts, "HOPS_PER_RADIUS"): 32},
}
_HOP = _starts._hop


def _extra_hops(k):
    """``_starts._hop`` followed by another hop phase of ``k`` moves per radius from the best so
    far, drawn from an independent stream (``(seed, 59)``): a superset of the shipped search
    (its runs unchanged and first), for (A59c)."""
    def hop(fun, runs, known, maxiter, tol, method, p, restricted, pick=None, expand=None,
            prefix="", seed=0):
        out = _HOP(fun, runs, known, maxiter, tol, method, p, restricted, pick=pick,
                   expand=expand, prefix=prefix, seed=seed)
        saved = _starts.HOPS_PER_RADIUS
        _starts.HOPS_PER_RADIUS = k
        try:
            out += _HOP(fun, [*runs, *out], known, maxiter, tol, method, p, restricted,
                        pick=pick, expand=expand, prefix=prefix + "extra ",
                        seed=[*np.atleast_1d(seed).tolist(), 59])
        finally:
            _starts.HOPS_PER_RADIUS = saved
        return out
    return hop


VARIANTS["extra8"] = {(_starts, "_hop"): _extra_hops(8)}
VARIANTS["extra16"] = {(_starts, "_hop"): _extra_hops(16)}
#: variant -> keyword arguments of its fit
FIT_KW = {"noprobe": dict(probe=False), "seed1": dict(seed=1), "seed2": dict(seed=2)}
TOL = 1e-6


@contextlib.contextmanager
def patched(changes):
    saved = {key: getattr(*key) for key in changes}
    try:
        for (mod, name), value in changes.items():
            setattr(mod, name, value)
        yield
    finally:
        for (mod, name), value in saved.items():
            setattr(mod, name, value)


def seed_of(cell: int, r: int) -> int:
    return 59_000_000 + 100_000 * cell + r


def one(cell_i, cell, r, n, p, variants) -> list:
    design, pi = cell.split(":")
    seed = seed_of(cell_i, r)
    df = DESIGNS[design](n, n, float(pi), p=p, rng=np.random.default_rng(seed))
    X = df[[f"x{j}" for j in range(1, p + 1)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    rows = []
    for name in variants:
        changes = VARIANTS[name]
        with warnings.catch_warnings(), patched(changes):
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            res = pu.DETM(X[lab], X[~lab]).fit(pi_interval="profile", **FIT_KW.get(name, {}))
            t_fit = time.process_time() - t0
            try:
                ci = res.conf_int_pi(method="profile").to_numpy()
            except (ProfileError, ValueError):
                ci = np.array([np.nan, np.nan])
        null = res.null_fit
        rows.append(dict(cell=cell, seed=seed, variant=name, pi=res.pi,
                         llf=res.llf_penalized, setm_pi=null.pi,
                         setm_llf=null.llf_penalized, lower=ci[0], upper=ci[1], t_fit=t_fit))
    return rows


def run(args):
    path = OUT / f"detm_guarantee_ablation_raw{args.out}.csv"
    done = set(pd.read_csv(path).seed) if path.exists() else set()
    k, K = map(int, args.part.split("/"))
    jobs = [(i, c, r) for i, c in enumerate(args.cells) for r in range(args.reps)]
    for j, (i, c, r) in enumerate(jobs):
        if j % K != k or seed_of(i, r) in done:
            continue
        rows = one(i, c, r, args.n, args.p, args.variants)
        pd.DataFrame(rows).to_csv(path, mode="a", header=not path.exists(), index=False)
        print(c, r, " ".join(f"{x['variant']}:{x['t_fit']:.1f}s" for x in rows), flush=True)


def summarise(args):
    df = pd.concat([pd.read_csv(OUT / f"detm_guarantee_ablation_raw{t}.csv") for t in args.tag])
    for what in ("llf", "setm_llf"):
        best = df.groupby("seed")[what].transform("max")
        df[f"miss_{what}"] = df[what] < best - TOL
        df[f"gap_{what}"] = best - df[what]
    base = df[df.variant == "base"].set_index("seed")
    df["dlim"] = [max(abs(row.lower - base.lower[row.seed]), abs(row.upper - base.upper[row.seed]))
                  for row in df.itertuples()]
    df["dllf"] = df.llf - base.llf.reindex(df.seed).to_numpy()
    out = []
    for (cell, var), g in df.groupby(["cell", "variant"], sort=False):
        out.append(dict(cell=cell, variant=var, reps=len(g),
                        detm_misses=int(g.miss_llf.sum()),
                        max_gap=float(g.gap_llf.max()),
                        above_base=int((g.dllf > TOL).sum()),
                        below_base=int((g.dllf < -TOL).sum()),
                        setm_misses=int(g.miss_setm_llf.sum()),
                        limits_moved=int((g.dlim > 1e-6).sum()),
                        no_interval=int(g.lower.isna().sum()),
                        cpu_mean=float(g.t_fit.mean())))
    tab = pd.DataFrame(out)
    allc = tab.groupby("variant", sort=False).agg(
        reps=("reps", "sum"), detm_misses=("detm_misses", "sum"), max_gap=("max_gap", "max"),
        above_base=("above_base", "sum"), below_base=("below_base", "sum"),
        setm_misses=("setm_misses", "sum"), limits_moved=("limits_moved", "sum"),
        no_interval=("no_interval", "sum"))
    allc["cpu_mean"] = df.groupby("variant", sort=False).t_fit.mean()
    allc["cpu_vs_base"] = allc.cpu_mean / allc.cpu_mean["base"]
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(tab.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        print()
        print(allc.to_string(float_format=lambda x: f"{x:.4g}"))
        misses = df[df.miss_llf | df.miss_setm_llf]
        if len(misses):
            print()
            print(misses[["cell", "seed", "variant", "pi", "llf", "gap_llf", "setm_pi",
                          "gap_setm_llf"]].to_string(index=False))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--cells", nargs="+", default=CELLS)
    r.add_argument("--reps", type=int, default=50)
    r.add_argument("--n", type=int, default=1000)
    r.add_argument("--p", type=int, default=15)
    r.add_argument("--part", default="0/1")
    r.add_argument("--out", default="")
    r.add_argument("--variants", nargs="+", default=list(VARIANTS)[:7], choices=list(VARIANTS))
    s = sub.add_parser("summarise")
    s.add_argument("--tag", nargs="+", default=[""])
    args = ap.parse_args()
    {"run": run, "summarise": summarise}[args.cmd](args)


if __name__ == "__main__":
    main()
