"""Interval bootstrap (_interval_statistic) under start variants (paired, declared).

usage: python studies/detm_bootstrap_starts_interval.py DESIGN SEED NB NFULL -> out_int_DESIGN_SEED.npz
Resamples from detm_world (Silverman smoothing), R*_b(pi-hat). Variants of the starts:
  cur  : SETM start (fit.v with b1 = 0), extra DETM fit.v, profile from (rec.theta, fit.theta)  [HEAD]
  map  : the same three mapped to the resample's standardisation
  both : all of them
Reference for the resample's DETM maximum: the best of the variants and (first NFULL resamples)
DETM's default full search (fit_data with probe; SETM's full search first).
"""

import os
import sys
import time
import warnings
from pathlib import Path

os.environ["OPENBLAS_NUM_THREADS"] = "1"
import numpy as np  # noqa: E402

from puinfer.models.detm import bootstrap as boot  # noqa: E402
from puinfer.models.detm._data import prepare  # noqa: E402
from puinfer.models.detm._profile import PiProfiler  # noqa: E402
from puinfer.models.detm._starts import fit_fixed_pi  # noqa: E402
from puinfer.models.detm.model import fit_data  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from detm_bootstrap_starts import setm_runs, to_sample, world_fit  # noqa: E402

RAW = Path(__file__).resolve().parent / "results" / "detm_bootstrap_starts_raw"


def istat(dat, fit, setm_givens, extras, prof_starts, pi0):
    c = fit.penalty_strength
    assert not fit.restricted
    runs_r = setm_runs(dat, setm_givens, c, fit.maxiter, fit.tol)
    opts = {
        "setm_start": setm_givens[0],
        "grid": True,
        "setm_runs": runs_r,
        "extra_starts": [
            ("original DETM" if k == 0 else f"original DETM {k}", v) for k, v in enumerate(extras)
        ],
    }
    rec = fit_data(
        dat,
        False,
        c=c,
        label_rule=fit.label_rule,
        maxiter=fit.maxiter,
        tol=fit.tol,
        check_separation=False,
        probe=False,
        start_options=opts,
        lean=True,
    )[0]
    prof = PiProfiler(dat, rec, np.nan, quick=True)
    best = best_any = -np.inf
    unlabelled = []
    for th0 in (rec.theta, *prof_starts):
        f, th, info = fit_fixed_pi(dat, False, pi0, th0, c, fit.maxiter, fit.tol)
        if not (info.converged and np.isfinite(f)):
            continue
        best_any = max(best_any, f)
        if f > best:
            if prof.labelled(th, pi0):
                best = f
            else:
                unlabelled.append((f, th))
    if unlabelled and prof._on_boundary_applies:
        b = prof._on_boundary(pi0, unlabelled, (best,) if np.isfinite(best) else None)
        if b is not None:
            best = b.f
    best = best if np.isfinite(best) else best_any
    R = max(0.0, 2 * (rec.llf_penalized - best)) if np.isfinite(best) else np.nan
    return R, rec.llf_penalized, best, rec.pi


VARIANTS = ("cur", "map", "both")

if __name__ == "__main__":
    design, seed, nb, nfull = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    d = world_fit(design, seed)
    data0 = d.model.data
    p = data0.p
    fit = d._fit
    pi0 = float(d.pi)
    w = boot.detm_world(data0, fit)
    h = boot.bandwidth(data0, "silverman")
    rng = np.random.default_rng(seed)
    setm_v = np.r_[fit.v[0], np.zeros(p), fit.v[p + 1 :]]
    Q = np.full((nb, len(VARIANTS), 4), np.nan)
    T = np.full((nb, len(VARIANTS)), np.nan)
    F = np.full(nb, np.nan)
    t0 = time.time()
    for b in range(nb):
        Xs, Xt = boot.sample_detm(data0, w, rng, h)
        dat = prepare(Xs, Xt, names=data0.names)

        def M(v, dat=dat):
            return to_sample(v, p, data0.mean, data0.sd, dat)

        cfg = {
            "cur": ([setm_v], [fit.v], [fit.theta]),
            "map": ([M(setm_v)], [M(fit.v)], [M(fit.theta)]),
            "both": ([setm_v, M(setm_v)], [fit.v, M(fit.v)], [fit.theta, M(fit.theta)]),
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for k, vn in enumerate(VARIANTS):
                dat = prepare(Xs, Xt, names=data0.names)
                t = time.process_time()
                Q[b, k] = istat(dat, fit, *cfg[vn], pi0)
                T[b, k] = time.process_time() - t
            if b == 0:
                ref = boot._interval_statistic(fit, data0.names, Xs, Xt, pi0)[0]
                assert ref == Q[0, 0, 0], (ref, Q[0, 0, 0])
                print("check: cur == boot._interval_statistic:", ref, flush=True)
            if b < nfull:
                dat = prepare(Xs, Xt, names=data0.names)
                F[b] = fit_data(
                    dat,
                    False,
                    c=fit.penalty_strength,
                    label_rule=fit.label_rule,
                    maxiter=fit.maxiter,
                    tol=fit.tol,
                )[0].llf_penalized
        if b % 20 == 0:
            print(b, f"{time.time() - t0:.0f}s", flush=True)
    RAW.mkdir(parents=True, exist_ok=True)
    np.savez(RAW / f"out_int_{design}_{seed}.npz", Q=Q, T=T, F=F, h=h, pi0=pi0)
    print("done", f"{time.time() - t0:.0f}s")
