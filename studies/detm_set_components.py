"""Session 51: how often does the plain 95% profile confidence set of pi go on beyond a limit
of the interval ``conf_int_pi`` reports without its check saying so?

``conf_int_pi`` returned the component of the set around pi-hat (since session 77 its hull,
the component in ``attrs["component"]``) and flags the set as not an
interval (``attrs["interval"]``, a ``ConfidenceSetWarning``) when one of
``OUTSIDE_POINTS`` points spaced evenly between a limit and the bound lies inside the set. On
SAR replicate 47000020 (pi = 0.3, n = m = 1000) the set has a component at pi = 0.50-0.547
beyond the upper limit 0.4615 and a stretch outside it (R* 4.0 at 0.47-0.48) that those
points (0.596, 0.731, 0.865) miss: nothing flagged it (64a8e3e; since 24d9fff the maxima
already found beyond the limits count too, and flag it). Here each replicate's default DETM fit
(``pi_interval="profile"``, from arrays; seeds as ``benchmarks/compare_fits.py``: replicate
``r`` of the ``i``-th cell is ``47_000_000 + 100_000 i + r``) and its plain interval are
computed, then ``R*`` from every start (``profile_pi().statistic``) on a grid of step
:data:`STEP` from each limit to 1e-3 from the bound. Written per replicate: the limits, the
flag, the number of grid points inside the set beyond each limit and the outermost of them,
and the smallest ``R*`` on each side.

    PYTHONPATH=. python studies/detm_set_components.py run --cells sar:0.3:1000 \\
        sar:0.7:1000 --reps 50 --part 0/2 --out _s51c0
    python studies/detm_set_components.py summarise --tag _s51c0 _s51c1
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"

#: the grid's step in pi beyond each limit
STEP = 0.01
CUT = float(stats.chi2.ppf(0.95, 1))


def _side(res, limit: float, edge: float) -> dict:
    """``R*`` from every start on the grid from ``limit`` (exclusive) towards ``edge``."""
    from puinfer.inference import ProfileError

    limit = float(limit)
    prof = res.profile_pi()
    direction = 1 if edge > limit else -1
    grid = np.arange(limit + direction * STEP, edge, direction * STEP)
    r = np.full(grid.size, np.nan)
    above = False
    for i, q in enumerate(grid):
        try:
            r[i] = prof.statistic(float(q))
        except ProfileError:  # the profile above the fit there: the fit is not the maximum
            above = True
    inside = grid[r < CUT]
    return dict(n_grid=int(grid.size), n_inside=int(inside.size),
                outermost=float(inside[-1]) if inside.size else np.nan,
                min_r=float(np.nanmin(r)) if np.isfinite(r).any() else np.nan, above=above)


#: a limit at the bound: no grid beyond it
_NO_SIDE = dict(n_grid=0, n_inside=0, outermost=np.nan, min_r=np.nan, above=False)


def replicate(design: str, pi: float, n: int, p: int, seed: int) -> tuple:
    """The source and target features (C-ordered arrays) of one replicate of ``design`` (as
    ``benchmarks/compare_fits.py`` draws them)."""
    from puinfer.simulate import sar_design, scar_design

    make = {"sar": sar_design, "scar": scar_design}[design]
    df = make(n, n, pi, p=p, rng=np.random.default_rng(seed))
    X = df[[f"x{j}" for j in range(1, p + 1)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    return X[lab], X[~lab]


def one(design: str, pi: float, n: int, p: int, seed: int) -> dict:
    """The default DETM fit of one replicate, its plain 95% interval and the grid beyond
    each limit (:func:`_side`), as one row."""
    import puinfer as pu

    Xs, Xt = replicate(design, pi, n, p, seed)
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pu.DETM(Xs, Xt).fit(pi_interval="profile")
        ci = res.conf_int_pi(method="profile")
        # the component around pi-hat (since session 77 the interval reported is the set's
        # hull where the set is not an interval: hull_lower, hull_upper)
        lower, upper = ci.attrs["component"]
        up = _NO_SIDE if upper == 1.0 else _side(res, upper, 1 - 1e-3)
        lo = _NO_SIDE if lower == 0.0 else _side(res, lower, 1e-3)
    row = dict(design=design, pi=pi, n=n, p=p, seed=seed, pi_hat=res.pi,
               llf=res.llf_penalized, lower=lower, upper=upper,
               hull_lower=ci["lower"], hull_upper=ci["upper"],
               interval=bool(ci.attrs["interval"]), t=time.process_time() - t0)
    row.update({f"upper_{k}": v for k, v in up.items()})
    row.update({f"lower_{k}": v for k, v in lo.items()})
    return row


def run(args) -> None:
    cells = []
    for i, text in enumerate(args.cells):
        design, pi, n, *rest = text.split(":")
        cells += [(design, float(pi), int(n), int(rest[0]) if rest else 15,
                   47_000_000 + 100_000 * i + r) for r in range(args.reps)]
    k, K = (int(v) for v in args.part.split("/"))
    path = OUT / f"detm_set_components_raw{args.out}.csv"
    done = set(pd.read_csv(path)["seed"]) if path.exists() else set()
    for cell in cells[k::K]:
        if cell[-1] in done:
            continue
        row = one(*cell)
        print(row, flush=True)
        pd.DataFrame([row]).to_csv(path, mode="a", header=not path.exists(), index=False)


def summarise(args) -> None:
    d = pd.concat([pd.read_csv(OUT / f"detm_set_components_raw{t}.csv") for t in args.tag])
    d["beyond"] = (d["upper_n_inside"] > 0) | (d["lower_n_inside"] > 0)
    g = d.groupby(["design", "pi", "n"])
    table = pd.DataFrame({
        "replicates": g.size(),
        "flagged not an interval": g["interval"].apply(lambda s: int((~s).sum())),
        "set goes on beyond a limit (grid)": g["beyond"].sum(),
        "of which unflagged": g.apply(lambda x: int((x["beyond"] & x["interval"]).sum()),
                                      include_groups=False),
        "flagged, none on the grid": g.apply(lambda x: int((~x["beyond"] & ~x["interval"])
                                                           .sum()), include_groups=False),
        "profile above the fit": g.apply(lambda x: int((x["upper_above"] | x["lower_above"])
                                                       .sum()), include_groups=False),
        "mean CPU s": g["t"].mean(),
    })
    print(table.to_markdown(floatfmt=".3g"))
    cols = ["design", "pi", "seed", "lower", "upper", "interval", "lower_n_inside",
            "lower_outermost", "lower_min_r", "upper_n_inside", "upper_outermost",
            "upper_min_r"]
    print()
    print(d[d["beyond"] | ~d["interval"]][cols].to_markdown(index=False, floatfmt=".4g"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--cells", nargs="+", required=True, help="design:pi:n[:p]")
    r.add_argument("--reps", type=int, default=50)
    r.add_argument("--part", default="0/1", help="k/K: every K-th replicate from the k-th")
    r.add_argument("--out", required=True, help="tag of the raw file")
    s = sub.add_parser("summarise")
    s.add_argument("--tag", nargs="+", required=True)
    args = ap.parse_args()
    (run if args.cmd == "run" else summarise)(args)


if __name__ == "__main__":
    main()
