"""Declared paired study: quick-refit misses of the SCAR bootstrap under start variants.

usage: python studies/detm_bootstrap_starts.py DESIGN SEED NB NFULL  -> writes out_DESIGN_SEED.npz
Per resample b (Silverman-smoothed, from the fitted SETM, as test_scar(reference="bootstrap")):
  quick refits (boot._statistic's quick branch, reimplemented with a configurable start list;
  variant "cur" checked equal to boot._statistic bit for bit on the first resample):
    cur   : SETM given = setm_v,  DETM extra = fit.v         (HEAD)
    map   : SETM given = map(setm_v), DETM extra = map(fit.v) (exact coordinate map)
    both  : both SETM givens, both DETM extras
    mapsh : mapped + slopes shrunk by 1/sqrt(1+h^2) on jittered columns (prototype's mapshrink)
  reference (first NFULL resamples): boot's refit="full" (its SETM and DETM) and SETM's default
  full search (SETM.fit()'s: grid, moments, hops, probe).
"""

import os
import sys
import time
import warnings
from pathlib import Path

os.environ["OPENBLAS_NUM_THREADS"] = "1"
import numpy as np  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.models.detm import _starts  # noqa: E402
from puinfer.models.detm import bootstrap as boot  # noqa: E402
from puinfer.models.detm._data import prepare  # noqa: E402
from puinfer.models.detm.model import fit_data  # noqa: E402
from puinfer.simulate import sar_design, scar_design  # noqa: E402

RAW = Path(__file__).resolve().parent / "results" / "detm_bootstrap_starts_raw"


def setm_runs(dat, setm_givens, c, maxiter, tol):
    """SETM's quick-refit runs on the resample ``dat``: from each given start and SETM's grid
    (as the bootstrap's quick refit, with several given starts)."""
    starts_r = [
        ("given" if k == 0 else f"given{k}", v) for k, v in enumerate(setm_givens)
    ] + _starts.grid_starts(dat, True, dat.logistic_slopes)
    fun_r, expand_r = _starts.free_fun(dat, c, True)
    return _starts._newton_runs(
        fun_r,
        [(f"SETM {lab}", v) for lab, v in starts_r],
        maxiter,
        tol,
        "Newton (SETM, pi free)",
        known=[],
        boundary=True,
        pick=_starts._setm_index(dat.p),
        expand=expand_r,
    )


def to_sample(v, p, m0, s0, dat, shrink=None):
    v = np.array(v, float)
    out = v.copy()
    for t in range(2):
        i = t * (p + 1)
        beta = v[i + 1 : i + p + 1] / s0
        a = v[i] - m0 @ beta
        if shrink is not None:
            beta_new = beta * shrink
            Xs = dat.X[dat.y == 0]
            e_old, e_new = Xs @ beta, Xs @ beta_new
            mo, mn = e_old.max(), e_new.max()
            a = a + (mo + np.log(np.mean(np.exp(e_old - mo)))) - (mn + np.log(np.mean(np.exp(e_new - mn))))
            beta = beta_new
        out[i + 1 : i + p + 1] = beta * dat.sd
        out[i] = a + dat.mean @ beta
    return out


def quick(dat, fit, setm_givens, detm_extras):
    """boot._statistic(refit='quick') with several SETM 'given' starts and DETM extras."""
    c, maxiter, tol = fit.penalty_strength, fit.maxiter, fit.tol
    opts = {
        "c": c,
        "label_rule": "kl",
        "maxiter": maxiter,
        "tol": tol,
        "check_separation": False,
        "probe": False,
        "lean": True,
    }
    runs_r = setm_runs(dat, setm_givens, c, maxiter, tol)
    so = {"setm_start": setm_givens[0], "grid": True, "setm_runs": runs_r}
    s_b = fit_data(dat, True, start_options=so, **opts)[0]
    d_b = fit_data(
        dat,
        False,
        start_options=dict(
            so,
            extra_starts=[
                ("original DETM" if k == 0 else f"original DETM {k}", v) for k, v in enumerate(detm_extras)
            ],
        ),
        **opts,
    )[0]
    nit = sum(r.info.iterations for r in runs_r) + sum(r.info.iterations for r in d_b.runs)
    return s_b.llf_penalized, d_b.llf_penalized, nit, s_b.pi, d_b.pi


def full(dat, fit, setm_v):
    """boot._statistic(refit='full') (its SETM, DETM) and SETM's default full search."""
    opts = {
        "c": fit.penalty_strength,
        "label_rule": "kl",
        "maxiter": fit.maxiter,
        "tol": fit.tol,
        "check_separation": False,
        "probe": True,
        "lean": False,
    }
    s_b = fit_data(dat, True, start_options={"setm_start": setm_v, "grid": True}, **opts)[0]
    d_b = fit_data(
        dat,
        False,
        start_options={"extra_starts": [("original DETM", fit.v), ("resample SETM", s_b.v)]},
        **opts,
    )[0]
    s_def = fit_data(
        dat,
        True,
        c=fit.penalty_strength,
        label_rule="kl",
        maxiter=fit.maxiter,
        tol=fit.tol,
        check_separation=None,
        probe=True,
    )[0]
    return s_b.llf_penalized, d_b.llf_penalized, s_def.llf_penalized


VARIANTS = ("cur", "map", "both", "mapsh")


def world_fit(design: str, seed: int, n: int = 1000):
    """The default DETM fit (its null fit is the SETM world) of the world ``design``
    (``"sar"`` or ``"scar"``, n = m = ``n``, p = 15, pi = 0.3, seed ``n + 15 + seed``)."""
    sim = {"sar": sar_design, "scar": scar_design}[design]
    df = sim(n, n, 0.3, p=15, rng=np.random.default_rng(n + 15 + seed))
    X = df[[f"x{j}" for j in range(1, 16)]].to_numpy()
    lab = df.labeled.to_numpy() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pu.DETM(X[lab], X[~lab]).fit()


if __name__ == "__main__":
    design, seed, nb, nfull = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    d = world_fit(design, seed)
    s = d.null_fit
    data0 = d.model.data
    p = data0.p
    fit = d._fit
    setm_v = s._fit.v
    w = boot.world(data0, s)
    h = boot.bandwidth(data0, "silverman")
    shrink = np.where(w.smooth_cols, 1 / np.sqrt(1 + h * h), 1.0)
    rng = np.random.default_rng(seed)
    R_obs = 2 * (d.llf_penalized - s.llf_penalized) if hasattr(d, "llf_penalized") else np.nan
    Q = np.full((nb, len(VARIANTS), 5), np.nan)
    T = np.full((nb, len(VARIANTS)), np.nan)
    F = np.full((nb, 3), np.nan)
    TF = np.full(nb, np.nan)
    t_start = time.time()
    for b in range(nb):
        Xs, Xt = boot.sample(data0, w, rng, h)
        dat = prepare(Xs, Xt, names=data0.names)
        ms, md = (
            to_sample(setm_v, p, data0.mean, data0.sd, dat),
            to_sample(fit.v, p, data0.mean, data0.sd, dat),
        )
        ss = to_sample(setm_v, p, data0.mean, data0.sd, dat, shrink)
        sd_ = to_sample(fit.v, p, data0.mean, data0.sd, dat, shrink)
        cfg = {
            "cur": ([setm_v], [fit.v]),
            "map": ([ms], [md]),
            "both": ([setm_v, ms], [fit.v, md]),
            "mapsh": ([ss], [sd_]),
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for k, vname in enumerate(VARIANTS):
                dat = prepare(Xs, Xt, names=data0.names)  # fresh caches: fair CPU
                t = time.process_time()
                Q[b, k] = quick(dat, fit, *cfg[vname])
                T[b, k] = time.process_time() - t
            if b == 0:  # the reimplementation equals HEAD's quick refit
                ref = boot._statistic(fit, setm_v, data0.names, Xs, Xt, "quick")
                mine = max(0.0, 2 * (Q[0, 0, 1] - Q[0, 0, 0]))
                assert ref == mine, (ref, mine)
                print("check: cur == boot._statistic quick:", ref, mine, flush=True)
            if b < nfull:
                dat = prepare(Xs, Xt, names=data0.names)
                t = time.process_time()
                F[b] = full(dat, fit, setm_v)
                TF[b] = time.process_time() - t
        if b % 10 == 0:
            print(b, f"{time.time() - t_start:.0f}s", flush=True)
    RAW.mkdir(parents=True, exist_ok=True)
    np.savez(RAW / f"out_{design}_{seed}.npz", Q=Q, T=T, F=F, TF=TF, h=h, variants=np.array(VARIANTS))
    print("done", design, seed, f"{time.time() - t_start:.0f}s")
