"""Issue 19: does the bootstrap interval's quick refit find each resample's maximum?

For ``--worlds`` SAR samples (Liu et al.'s design, n = m = 1000, p = 15; seeds
``77_000_000 + 1000 * round(10 pi) + world``) the default DETM fit (``--penalty``: the ridge
strength, default the vanishing ridge) defines the smoothed EL bootstrap world of
:func:`puinfer.models.detm.bootstrap.detm_world`; on ``--resamples`` resamples of each world
three searches for the resample's maximum are compared:

* ``quick``: the refit of :func:`~puinfer.models.detm.bootstrap.interval_statistic` (the SETM
  start and grid, a reduced DETM grid, the original fit; no probe);
* ``extended``: ``quick`` plus the original fit's distinct local maxima as starts;
* ``skeleton``: ``quick`` checked at the original fit's profile skeleton (a fixed-pi solve on
  the resample at each of its points, from the original solution there; a free Newton run
  from the best point above the quick maximum);
* ``rskel``: ``quick`` checked against the resample's own profile skeleton (the probe's
  first part) and refitted from a higher point;
* ``starts``: every start of the default fit plus the original fit, without the probe;
* ``full``: the default fit (every start and the profile probe) plus the original fit.

``gap_*`` is the full search's penalised log-EL minus the other's (> 0: that search missed
the maximum); ``r_quick`` is ``R*_b(pi-hat)`` as the bootstrap interval computes it and
``r_full = r_quick + 2 gap_quick`` the statistic with the full search's maximum.

    python studies/detm_bootstrap_search.py --pi 0.3 --worlds 2 --resamples 25 --tag _ridge
    python studies/detm_bootstrap_search.py --pi 0.3 --worlds 3 --resamples 12 --penalty 0.16 \\
        --tag _c016
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
from puinfer.models.detm._starts import pi_of_v  # noqa: E402
from puinfer.models.detm.model import fit_data  # noqa: E402
from puinfer.simulate import sar_design  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
P = 15
FORMULA = "labeled ~ " + " + ".join(f"x{j}" for j in range(1, P + 1))


def distinct_maxima(data, fit):
    """The original search's converged runs with distinct pi (best first), as starts."""
    seen, out = [], []
    for r in sorted(fit.runs, key=lambda r: -r.f):
        if not (r.info.converged and np.isfinite(r.f)):
            continue
        q = pi_of_v(data, r.v)
        if all(abs(q - s) > 1e-3 for s in seen):
            seen.append(q)
            out.append((f"original local maximum {len(out)}", r.v))
    return out


def skeleton_refit(dat, fit, skeleton, quick):
    """``quick`` checked against the original fit's profile skeleton: a fixed-pi solve on the
    resample at each skeleton point, warm-started from the original solution there; from the
    best point above ``quick``'s maximum, a free Newton run. Returns (objective, pi)."""
    from puinfer.base.optimize import newton_maximize
    from puinfer.models.detm._starts import free_fun, solve_fixed_pi, v_from

    best = (quick.llf_penalized, quick.pi, None)
    for q, th in skeleton.items():
        sol = solve_fixed_pi(dat, False, q, th, fit.penalty_strength, fit.maxiter, fit.tol)
        if sol.info.converged and np.isfinite(sol.f) and sol.f > best[0] + 1e-9:
            best = (sol.f, q, v_from(dat, False, sol.theta, q))
    if best[2] is None:
        return best[:2]
    # the free objective differs from the record's log-EL by a constant: compare differences
    fun, _ = free_fun(dat, fit.penalty_strength, False)
    f_quick = fun(np.asarray(quick.v, dtype=float), 0)
    u, f, _, _, info = newton_maximize(fun, best[2], maxiter=fit.maxiter, tol=fit.tol)
    f = quick.llf_penalized + (f - f_quick)
    return (f, pi_of_v(dat, u)) if f > best[0] else best[:2]


def resample_skeleton_refit(dat, quick):
    """``quick`` checked against the resample's own profile skeleton (the probe's first part:
    fixed-pi solves on a 0.1 grid of pi, chains of warm starts from ``quick``); from the best
    fixed-pi maximum above ``quick``, a free Newton run. Returns (objective, pi)."""
    from puinfer.base.optimize import newton_maximize
    from puinfer.models.detm._profile import PiProfiler
    from puinfer.models.detm._starts import free_fun, v_from

    prof = PiProfiler(dat, quick, float("nan"))
    prof.skeleton  # noqa: B018
    top = max(((s.f, q, s.theta) for q, sols in prof._maxima.items() for s in sols),
              key=lambda t: t[0], default=None)
    if top is None or top[0] <= quick.llf_penalized + 1e-9:
        return quick.llf_penalized, quick.pi
    fun, _ = free_fun(dat, quick.penalty_strength, False)
    f_quick = fun(np.asarray(quick.v, dtype=float), 0)
    u, f, _, _, info = newton_maximize(fun, v_from(dat, False, top[2], top[1]),
                                       maxiter=quick.maxiter, tol=quick.tol)
    f = quick.llf_penalized + (f - f_quick)
    return (f, pi_of_v(dat, u)) if f > top[0] else (top[0], top[1])


def world_rows(pi, world, n_resamples, penalty):
    seed = 77_000_000 + 1000 * int(round(10 * pi)) + world
    df = sar_design(1000, 1000, pi, p=P, rng=np.random.default_rng(seed))
    res = pu.DETM.from_formula(FORMULA, data=df).fit(penalty=penalty, pi_interval="profile")
    data, fit = res.model.data, res._fit
    w = boot.detm_world(data, fit)
    h = boot.bandwidth(data, "silverman")
    rng = np.random.default_rng(world)
    setm_v = np.r_[fit.v[0], np.zeros(P), fit.v[P + 1:]]
    extra = distinct_maxima(data, fit)
    skeleton = res._profiler.skeleton
    opts = dict(c=fit.penalty_strength, label_rule=fit.label_rule, maxiter=fit.maxiter,
                tol=fit.tol, check_separation=False)
    rows = []
    for b in range(n_resamples):
        Xs, Xt = boot.sample_detm(data, w, rng, h)
        t0 = time.process_time()
        r_quick, _ = boot._interval_statistic(fit, data.names, Xs, Xt, res.pi)
        t1 = time.process_time()
        dat = prepare(Xs, Xt, names=data.names)
        quick = fit_data(dat, False, probe=False, start_options=dict(
            setm_start=setm_v, grid=True, extra_starts=[("original DETM", fit.v)]), **opts)[0]
        ext = fit_data(dat, False, probe=False, start_options=dict(
            setm_start=setm_v, grid=True, extra_starts=extra), **opts)[0]
        ts = time.process_time()
        f_skel, pi_skel = skeleton_refit(dat, fit, skeleton, quick)
        t_skel = time.process_time() - ts
        tq = time.process_time()
        f_rskel, pi_rskel = resample_skeleton_refit(dat, quick)
        t_rskel = time.process_time() - tq
        tq = time.process_time()
        starts = fit_data(dat, False, probe=False, start_options=dict(
            extra_starts=[("original DETM", fit.v)]), **opts)[0]
        t_starts = time.process_time() - tq
        t2 = time.process_time()
        full = fit_data(dat, False, probe=True, start_options=dict(
            extra_starts=[("original DETM", fit.v)]), **opts)[0]
        t3 = time.process_time()
        gap = full.llf_penalized - quick.llf_penalized
        rows.append(dict(pi=pi, world=world, seed=seed, penalty=fit.penalty_strength, b=b,
                         pi_hat=res.pi, n_original_maxima=len(extra), r_quick=r_quick,
                         gap_quick=gap, gap_extended=full.llf_penalized - ext.llf_penalized,
                         gap_skeleton=full.llf_penalized - f_skel, pi_skeleton=pi_skel,
                         t_skeleton=t_skel, gap_starts=full.llf_penalized - starts.llf_penalized,
                         pi_starts=starts.pi, t_starts=t_starts,
                         gap_rskel=full.llf_penalized - f_rskel, pi_rskel=pi_rskel,
                         t_rskel=t_rskel,
                         r_full=r_quick + 2 * max(gap, 0.0), pi_quick=quick.pi,
                         pi_full=full.pi, t_quick=t1 - t0, t_full=t3 - t2))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pi", type=float, default=0.3)
    ap.add_argument("--worlds", type=int, default=2)
    ap.add_argument("--resamples", type=int, default=25)
    ap.add_argument("--penalty", default="ridge")
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    pen = a.penalty if a.penalty in ("ridge", "none") else float(a.penalty)
    warnings.simplefilter("ignore")
    rows = []
    for world in range(a.worlds):
        rows += world_rows(a.pi, world, a.resamples, pen)
    d = pd.DataFrame(rows)
    d.to_csv(OUT / f"detm_bootstrap_search_raw{a.tag}.csv", index=False)
    tab = d.groupby(["pi", "penalty", "world"]).agg(
        resamples=("b", "size"), pi_hat=("pi_hat", "first"),
        quick_misses=("gap_quick", lambda g: int((g > 1e-6).sum())),
        extended_misses=("gap_extended", lambda g: int((g > 1e-6).sum())),
        skeleton_misses=("gap_skeleton", lambda g: int((g > 1e-6).sum())),
        skeleton_beats_full=("gap_skeleton", lambda g: int((g < -1e-6).sum())),
        starts_misses=("gap_starts", lambda g: int((g > 1e-6).sum())),
        rskel_misses=("gap_rskel", lambda g: int((g > 1e-6).sum())),
        rskel_beats_full=("gap_rskel", lambda g: int((g < -1e-6).sum())),
        max_gap=("gap_quick", "max"), q95_r_quick=("r_quick", lambda r: r.quantile(0.95)),
        q95_r_full=("r_full", lambda r: r.quantile(0.95)), cpu_quick=("t_quick", "mean"),
        cpu_skeleton=("t_skeleton", "mean"), cpu_starts=("t_starts", "mean"),
        cpu_rskel=("t_rskel", "mean"),
        cpu_full=("t_full", "mean"))
    print(tab.to_markdown(floatfmt=".3g"))


if __name__ == "__main__":
    main()
