"""Coverage of the default (bootstrap-calibrated) interval for pi near the boundary (session 69).

Session 68 changed the default interval of DETM/SETM where pi-hat is on the boundary
(``pi-hat < 1e-6`` or ``> 1 - 1e-6``, the fit's BoundaryWarning): its cut-off is then at least
the chi-square one (before, the bootstrap world with pi = 0 gave a cut-off near 0 and an
interval [0, 1.6e-8]). Its own check was machine-local (60 replicates per cell, seeds reused
from the audit). This is the declared study of the rule, on fresh seeds fixed before the run:

* design: ``pu_normal(n, n, pi, [0], [0], [3])`` (one feature; the target's positives are the
  source's distribution, its negatives shifted by 3 SD: SCAR holds, pi is well identified);
* cells: SETM at n = m = 50 and 200 with pi in {0, 0.02, 0.05, 0.15}; DETM at n = m = 100 with
  pi in {0.02, 0.05};
* seeds ``69_000_000 + 10_000 * cell + r`` (cell numbered in the order above, r = 0..R-1);
* recorded per replicate: pi-hat, whether pi-hat is on the boundary, the default interval
  and its cut-off (and the bootstrap's own where the chi-square one was used), the plain
  profile interval (chi-square cut-off), and whether each covers pi.
  At pi = 0 the truth is on the boundary: an interval covers it when its lower end is 0.

The claim under test: the default interval covers at least about as well as the plain
profile one in the boundary cells (nominal 0.95), and the rule does not change the interior
cells (pi = 0.15 at n = 200), where pi-hat is never on the boundary.

Run (one process per cell, one BLAS thread; about 1-3 s per SETM replicate and 8 s per DETM
one)::

    OPENBLAS_NUM_THREADS=1 python studies/detm_boundary_rule.py --cell 0 --reps 200
    python studies/detm_boundary_rule.py --summarise

Rows: ``studies/results/detm_boundary_rule_cell{k}.csv``; ``--summarise`` prints the table
(coverage with its binomial standard error, median widths, share of boundary fits).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import puinfer as pu
from puinfer.simulate.detm import pu_normal

OUT = Path(__file__).resolve().parent / "results"
CELLS = [("SETM", n, pi) for n in (50, 200) for pi in (0.0, 0.02, 0.05, 0.15)] + \
    [("DETM", 100, pi) for pi in (0.02, 0.05)]
SEED0 = 69_000_000


def _covers(ci: pd.Series, pi: float) -> bool:
    lo = 0.0 if ci.attrs.get("lower_at_bound") else float(ci["lower"])
    hi = 1.0 if ci.attrs.get("upper_at_bound") else float(ci["upper"])
    return bool(lo <= pi <= hi)


def run_one(model: str, n: int, pi: float, seed: int) -> dict:
    """One replicate: the fit of ``pu_normal(n, n, pi, [0], [0], [3], rng=seed)``, its default
    and plain intervals, and the share of the bootstrap's resamples whose pi-hat is on the
    boundary (the bootstrap world's nearness to it)."""
    df = pu_normal(n, n, pi, [0], [0], [3], rng=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # boundary and bootstrap warnings: recorded below
        res = getattr(pu, model).from_formula("labeled ~ x1", data=df).fit()
        ci = res.conf_int_pi()
        plain = res.conf_int_pi(method="profile")
    draws = res._default_draws
    pi_b = draws[np.isfinite(draws[:, 0]), 1]
    return dict(model=model, n=n, pi=pi, seed=seed, pi_hat=res.pi,
                on_boundary=bool(res.pi < 1e-6 or res.pi > 1 - 1e-6),
                cutoff=ci.attrs["cutoff"], chi2_cutoff_used="bootstrap_cutoff" in ci.attrs,
                bootstrap_cutoff=ci.attrs.get("bootstrap_cutoff", ci.attrs["cutoff"]),
                default_lo=float(ci["lower"]), default_hi=float(ci["upper"]),
                plain_lo=float(plain["lower"]), plain_hi=float(plain["upper"]),
                plain_at_bound=bool(plain.attrs.get("lower_at_bound")
                                    or plain.attrs.get("upper_at_bound")),
                boot_on_boundary=float(np.mean((pi_b < 1e-6) | (pi_b > 1 - 1e-6))),
                default_covers=_covers(ci, pi), plain_covers=_covers(plain, pi))


def summarise() -> pd.DataFrame:
    d = pd.concat([pd.read_csv(f) for f in sorted(OUT.glob("detm_boundary_rule_cell*.csv"))])
    d["default_width"] = d.default_hi - d.default_lo
    d["plain_width"] = d.plain_hi - d.plain_lo
    g = d.groupby(["cell", "model", "n", "pi"]).agg(
        reps=("seed", "size"), on_boundary=("on_boundary", "mean"),
        chi2_cutoff_used=("chi2_cutoff_used", "mean"),
        default_cov=("default_covers", "mean"), plain_cov=("plain_covers", "mean"),
        default_width=("default_width", "median"), plain_width=("plain_width", "median"))
    g["se_cov"] = np.sqrt(0.95 * 0.05 / g.reps)
    return g


def cli(doc: str, cells: list, seed0: int, stem: str, summarise) -> None:
    """The command line of a study of cells ``cells`` (``--cell K --reps R [--first F]``:
    replicates r = F, ..., F + R - 1 of cell K from seeds ``seed0 + 10_000 K + r``, rows to
    ``results/{stem}_cell{K}.csv``, or ``..._cell{K}_from{F}.csv`` for F > 0;
    ``--summarise``: print ``summarise()``)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--cell", type=int, choices=range(len(cells)))
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--first", type=int, default=0,
                    help="first replicate (an extension: rows to ..._cell{K}_from{first}.csv)")
    ap.add_argument("--summarise", action="store_true")
    a = ap.parse_args()
    if a.summarise:
        print(summarise().round(4).to_string())
        return
    if a.cell is None:
        ap.error("give --cell or --summarise")
    t = time.process_time()
    rows = [dict(cell=a.cell, **run_one(*cells[a.cell], seed0 + 10_000 * a.cell + r))
            for r in range(a.first, a.first + a.reps)]
    OUT.mkdir(exist_ok=True)
    tail = f"_from{a.first}" if a.first else ""
    pd.DataFrame(rows).to_csv(OUT / f"{stem}_cell{a.cell}{tail}.csv", index=False)
    print(f"cell {a.cell} {cells[a.cell]}: {a.reps} replicates, "
          f"{time.process_time() - t:.0f} s CPU")


def main():
    cli(__doc__, CELLS, SEED0, "detm_boundary_rule", summarise)


if __name__ == "__main__":
    main()
