"""Issue 19, session 39: do stretch moves reach the maxima the hops miss?

Exploratory. For the first 100 replicates of the SAR design at n = m = 1000 (pi = 0.7 by
default), where five searches were compared in session 37 (refit tags ``_s37d`` -- the
default search, seed 0 --, ``_s37h``, ``_s37i``, ``_s37x``, ``_s35d``), the default fit of the
search as it was before the stretch moves (``STRETCH_ROUNDS = 0``) is remade, and Newton runs
from its best solution with the package's stretch moves (``_starts._stretch_starts``: each
component's slopes, and their difference from the other's, scaled by 1.5, 2 and 3). Printed per
replicate (``--all``; else only where the default is below the best of the five): the default
fit, the best of the five, the best of the stretch moves and each move's gain::

    python studies/detm_stretch_moves.py [--pi 0.7] [--all]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import detm_interval as di  # noqa: E402
import numpy as np  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.base.optimize import newton_maximize  # noqa: E402
from puinfer.models.detm import _starts  # noqa: E402
from puinfer.models.detm._el import ridge_strength  # noqa: E402
from puinfer.models.detm.model import fit_data  # noqa: E402

SEARCHES = {"d": ["_s37d0", "_s37d1"], "h": ["_s37h0", "_s37h1"], "i": ["_s37i0", "_s37i1"],
            "x": ["_s37x0", "_s37x1"], "s35": ["_s35d0", "_s35d1"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pi", type=float, default=0.7)
    ap.add_argument("--all", action="store_true")
    args = ap.parse_args()
    m = None
    for k, tags in SEARCHES.items():
        d = di._load_refit(tags)
        d = d[(d.design == "sar") & (d.model == "DETM") & (d.n == 1000) & (d.pi == args.pi)]
        d = d[di.REFIT_KEY + ["f_fit"]].rename(columns={"f_fit": f"f_{k}"})
        m = d if m is None else m.merge(d, on=di.REFIT_KEY)
    m["best"] = m[[f"f_{k}" for k in SEARCHES]].max(axis=1)
    below = m["best"] > m["f_d"] + 1e-6
    print(f"{len(m)} replicates; the default below the best of the five searches in {below.sum()}")
    _starts.STRETCH_ROUNDS = 0  # the search before the stretch moves
    for _, o in (m if args.all else m[below]).iterrows():
        df = di.DESIGNS["sar"](1000, 1000, args.pi, p=15, rng=np.random.default_rng(int(o.seed)))
        data = pu.DETM.from_formula(di.formula(15), data=df).data
        c = ridge_strength(data.N)
        const = data.n * np.log(data.n) + data.m * np.log(data.m)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rec, _ = fit_data(data, False, c=c, label_rule="kl", maxiter=200, tol=1e-10)
        best = max(rec.runs, key=lambda r: r.f)
        f0 = best.f - const
        fun, _ = _starts.free_fun(data, c, False)
        t0 = time.process_time()
        gains = {}
        for label, v0 in _starts._stretch_starts(data, best.v):  # the package's 12 moves
            try:
                _, f, *_ = newton_maximize(fun, v0, maxiter=200, tol=1e-10)
                gains[label] = round(float(f - const - f0), 3)
            except ValueError:
                gains[label] = float("nan")
        top = f0 + max(gains.values())
        verdict = ("above the best of five" if top > o.best + 1e-3 else
                   "reaches it" if top > f0 + 1e-3 and top >= o.best - 1e-3 else
                   "higher" if top > f0 + 1e-3 else "")
        print(int(o.seed), f"default {f0:.3f} best of five {o.best:.3f} stretch {top:.3f}",
              verdict, f"{time.process_time() - t0:.2f} s", gains, flush=True)


if __name__ == "__main__":
    main()
