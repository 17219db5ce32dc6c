"""RegressionURC's corners at small lab sets: the trend prior against session 69's fit (session 73).

``docs/guide/urc.md`` said that with ten intervals at lab 100 and 200 no default fit reached a
corner (all the field in one interval), while ``fit(trend_sd=None, lab_pseudocount=0.5)`` (the
fit before session 70's two default changes) did in 7-9 of 10 data sets; the check that gave
those counts was not kept. This script is that check, reproducible.

Design: ``simulate_urc_regression(n_lab, 5000, field_shift=s)`` (its defaults otherwise) with
``n_lab`` in {100, 200}, a location shift ``s`` in {0.0, 0.5} SD, replicates ``r = 0 .. R-1``
with the seeds of ``studies/urc_regression_small_lab.py``
(``np.random.default_rng([69, r, n_lab, int(10 * s)])``), ``RegressionURC(lab_pred, lab_y,
n_intervals=10)`` fitted twice: the default fit (the N(0, 1) prior on the trend's slope, no lab
pseudo-counts) and ``fit(trend_sd=None, lab_pseudocount=0.5)``. A corner: the largest estimated
interval share above 0.9 (the small-lab study's rule). Warnings are silenced; the fits'
``converged`` flags are counted too (a penalised fit at a corner is reported not converged).

Run: ``OPENBLAS_NUM_THREADS=1 python studies/urc_regression_corner_check.py 10`` from the
repository root (the argument is R, default 10); prints the table (and writes it to
``studies/results/urc_regression_corner_check.md``).
"""

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import puinfer as pu
from puinfer.simulate.urc_regression import simulate_urc_regression

N_LABS = (100, 200)
SHIFTS = (0.0, 0.5)
FITS = (("default", {}), ("trend_sd=None, lab_pseudocount=0.5",
                          {"trend_sd": None, "lab_pseudocount": 0.5}))
CORNER = 0.9
RESULTS = Path(__file__).resolve().parent / "results"


def run(R: int) -> pd.DataFrame:
    rows = []
    for n_lab in N_LABS:
        for shift in SHIFTS:
            for r in range(R):
                sim = simulate_urc_regression(n_lab, 5000, field_shift=shift,
                                              rng=np.random.default_rng([69, r, n_lab,
                                                                         int(10 * shift)]))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # (the small-lab warnings, every time)
                    m = pu.RegressionURC(sim.lab_pred, sim.lab_y, n_intervals=10)
                for name, opts in FITS:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        res = m.fit(sim.field_pred, **opts)
                    share = res.base_rates.to_numpy().ravel()
                    rows.append(dict(n_lab=n_lab, shift=shift, rep=r, fit=name,
                                     corner=bool(share.max() > CORNER),
                                     max_share=float(share.max()),
                                     converged=bool(res.convergence.converged)))
    return pd.DataFrame(rows)


def main(R: int = 10) -> None:
    t0 = time.process_time()
    df = run(R)
    table = (df.groupby(["n_lab", "shift", "fit"], sort=False)
             .agg(data_sets=("corner", "size"), corners=("corner", "sum"),
                  not_converged=("converged", lambda c: int((~c).sum())),
                  largest_share=("max_share", "max"))
             .reset_index())
    cpu = time.process_time() - t0
    text = (f"# RegressionURC corners at small lab sets (ten intervals)\n\n"
            f"`OPENBLAS_NUM_THREADS=1 python studies/urc_regression_corner_check.py {R}` "
            f"({cpu:.0f} s CPU); design in the script's docstring. A corner: the largest "
            f"estimated interval share above {CORNER}.\n\n" + table.to_markdown(index=False)
            + "\n")
    print(text)
    (RESULTS / "urc_regression_corner_check.md").write_text(text)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
