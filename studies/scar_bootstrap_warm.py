"""Issue 17: can the bootstrap SCAR test refit each resample from the fitted models only?

The bootstrap SCAR test (``test_scar("bootstrap")``) refits SETM and DETM on every resample
with the quick search of :func:`puinfer.models.detm.bootstrap.statistic`: SETM from the
original SETM solution and SETM's start grid, DETM from the resample's SETM solution, a
reduced grid of three starts and the original DETM fit. Issue 17 asks for refits
"warm-started from the fitted SETM/DETM". This study draws resamples from the fitted SETM
(the test's null world, Silverman's h) and refits each twice, paired on the same rows:

* ``quick``: the test's refit (above);
* ``warm``: the same without the grids: SETM from the original SETM solution only, DETM from
  the resample's SETM solution and the original DETM fit.

It records both statistics ``R_b = 2 (l_DETM - l_SETM)``, the differences of the two maxima
(``dd``, ``ds``: warm minus quick; < 0 where the warm search stops lower) and CPU seconds.

    python studies/scar_bootstrap_warm.py --design scar --worlds 5 --resamples 40
    python studies/scar_bootstrap_warm.py --design gamma --worlds 5 --resamples 40

Worlds: ``--design``'s sample with n = m = 1000, p = 15, pi = 0.75 (the SCAR test's size
designs), seeds ``900 + world``; resamples from ``default_rng(world)``.
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

import puinfer as pu  # noqa: E402
from puinfer.models.detm import bootstrap as boot  # noqa: E402
from puinfer.models.detm._data import prepare  # noqa: E402
from puinfer.models.detm.model import fit_data  # noqa: E402
from puinfer.simulate import gamma_design, scar_design  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
DESIGNS = {"scar": scar_design, "gamma": gamma_design}


def refit(fit, setm_v, names, Xs, Xt, grid: bool):
    """``(R_b, l_DETM, l_SETM)`` of one resample; ``grid=True`` is the test's own refit
    (:func:`puinfer.models.detm.bootstrap._statistic` with ``refit="quick"``)."""
    dat = prepare(Xs, Xt, names=names)
    opts = dict(c=fit.penalty_strength, label_rule="kl", maxiter=fit.maxiter, tol=fit.tol,
                check_separation=False, probe=False)
    s_opts = dict(setm_start=setm_v, grid=grid)
    s_b = fit_data(dat, True, start_options=s_opts, **opts)[0]
    extra = [("original DETM", fit.v), ("resample SETM", s_b.v)]
    d_opts = dict(s_opts, extra_starts=extra, setm_runs=list(s_b.runs))
    d_b = fit_data(dat, False, start_options=d_opts, **opts)[0]
    return 2 * (d_b.llf_penalized - s_b.llf_penalized), d_b.llf_penalized, s_b.llf_penalized


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--design", choices=sorted(DESIGNS), default="scar")
    ap.add_argument("--worlds", type=int, default=5)
    ap.add_argument("--resamples", type=int, default=40)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    for wi in range(args.worlds):
        df = DESIGNS[args.design](1000, 1000, 0.75, p=15, rng=np.random.default_rng(900 + wi))
        X = df[[f"x{j}" for j in range(1, 16)]].to_numpy()
        lab = df["labeled"].to_numpy() == 1
        d = pu.DETM(X[lab], X[~lab]).fit()
        s = pu.SETM(X[lab], X[~lab]).fit()
        data = d.model.data
        w, h = boot.world(data, s), boot.bandwidth(data, "silverman")
        rng = np.random.default_rng(wi)
        # the test's own statistic on the first resample: the script's refit is the test's
        first = boot.sample(data, w, np.random.default_rng(wi), h)
        assert refit(d._fit, s._fit.v, data.names, *first, True)[0] == \
            boot.statistic(d, s, *first)
        for b in range(args.resamples):
            Xs, Xt = boot.sample(data, w, rng, h)
            t0 = time.process_time()
            q = refit(d._fit, s._fit.v, data.names, Xs, Xt, True)
            t1 = time.process_time()
            v = refit(d._fit, s._fit.v, data.names, Xs, Xt, False)
            t2 = time.process_time()
            rows.append(dict(design=args.design, world=wi, b=b, r_quick=max(q[0], 0.0),
                             r_warm=max(v[0], 0.0), dd=v[1] - q[1], ds=v[2] - q[2],
                             t_quick=t1 - t0, t_warm=t2 - t1))
    r = pd.DataFrame(rows)
    path = OUT / f"scar_bootstrap_warm_{args.design}.csv"
    r.to_csv(path, index=False)
    tol = 1e-6
    print(f"{args.design}: {len(r)} resamples of {args.worlds} worlds ({path.name})")
    print(f"  warm SETM maximum lower than quick's: {(r.ds < -tol).sum()}, higher: "
          f"{(r.ds > tol).sum()}; DETM lower: {(r.dd < -tol).sum()}, higher: "
          f"{(r.dd > tol).sum()}")
    print(f"  R_b differs by > 0.01: {((r.r_warm - r.r_quick).abs() > 0.01).sum()}; 95% "
          f"quantile quick {r.r_quick.quantile(0.95):.2f}, warm {r.r_warm.quantile(0.95):.2f}")
    print(f"  CPU s per resample: quick {r.t_quick.mean():.4f}, warm {r.t_warm.mean():.4f}")


if __name__ == "__main__":
    main()
