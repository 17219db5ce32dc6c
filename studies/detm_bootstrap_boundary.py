"""Does the bootstrap interval's resample statistic need the label boundary? (session 53)

Since session 52 the data's profile of pi (``PiProfiler``) takes the labelled maximum on the
label boundary KL1 = KL2 where unlabelled maxima lie above every labelled one; the statistic of
each resample that calibrates the default interval's cut-off
(:func:`puinfer.models.detm.bootstrap.interval_statistic`, ``R*_b(pi-hat)``) does not: it takes
the best labelled of its two fixed-pi solutions, or with none the unlabelled one. For each
replicate of Liu et al.'s SAR design (n = m = 1000, p = 15, seeds ``47_000_000 + 100_000 *
cell + r`` as ``benchmarks/compare_fits.py``; cell 0: pi = 0.3, 1: pi = 0.7) this draws the
default interval's 199 resamples (``rng=0``, Silverman's bandwidth) and computes the statistic
as the package does and with the boundary maximum (:func:`solve_on_label_boundary` from the two
highest unlabelled solutions above the best labelled one), and prints the resamples where an
unlabelled solution was above the labelled ones (``fallback``: no labelled one at all), their
statistic both ways, and the cut-off (the 190th of 199) both ways (``--design scar``: Liu et
al.'s SCAR design, seeds ``48_000_000 + 100_000 * cell + r``; ``--n`` other than 1000: seeds
``49_000_000`` (SAR) or ``50_000_000`` (SCAR) ``+ 100_000 * cell + r``); with ``--out`` also
``R*(pi)`` at the true pi and whether each cut-off covers it (``--summarise``: the coverage
both ways on the same replicates).

    OPENBLAS_NUM_THREADS=1 python studies/detm_bootstrap_boundary.py --cell 1 --first 0 --reps 5
    OPENBLAS_NUM_THREADS=1 python studies/detm_bootstrap_boundary.py --cell 1 --reps 100 --out _s53c0
    python studies/detm_bootstrap_boundary.py --summarise _s53c0 _s53c1
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from detm_set_components import OUT, replicate  # studies/, the script's directory

import puinfer as pu
from puinfer.models.detm import bootstrap as B
from puinfer.models.detm._data import prepare
from puinfer.models.detm._label_boundary import solve_on_label_boundary
from puinfer.models.detm._profile import PiProfiler
from puinfer.models.detm._starts import fit_fixed_pi
from puinfer.models.detm.model import fit_data


def statistic(fit, names, Xs, Xt, pi0):
    """``(R*_b as the package computes it, R*_b with the boundary, kind)``; ``kind`` 0: the
    best solution labelled, 1: none labelled, 2: an unlabelled one above the best labelled.
    The refit and the fixed-pi solves are those of ``bootstrap._interval_statistic``."""
    p = Xs.shape[1]
    dat = prepare(Xs, Xt, names=names)
    setm_v = np.r_[fit.v[0], np.zeros(p), fit.v[p + 1:]]
    opts = dict(setm_start=setm_v, grid=True, extra_starts=[("original DETM", fit.v)])
    c = fit.penalty_strength
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = fit_data(dat, False, c=c, label_rule=fit.label_rule, maxiter=fit.maxiter,
                       tol=fit.tol, check_separation=False, probe=False, start_options=opts,
                       lean=True)[0]
        prof = PiProfiler(dat, rec, np.nan, quick=True)
        best = best_any = -np.inf
        unlabelled = []
        for th0 in (rec.theta, fit.theta):
            f, th, info = fit_fixed_pi(dat, False, pi0, th0, c, fit.maxiter, fit.tol)
            if not (info.converged and np.isfinite(f)):
                continue
            best_any = max(best_any, f)
            if f > best:
                if prof.labelled(th, pi0):
                    best = f
                else:
                    unlabelled.append((f, th))
        with_boundary = best
        for f, th in sorted(unlabelled, key=lambda u: -u[0])[:2]:
            if f > best:
                sol = solve_on_label_boundary(dat, pi0, th, c)
                if sol.info.converged and sol.f > with_boundary:
                    with_boundary = sol.f
    kind = 1 if not np.isfinite(best) and np.isfinite(best_any) else \
        2 if np.isfinite(best) and best_any > best + 1e-9 * abs(best) else 0

    def r_star(value):
        return max(0.0, 2 * (rec.llf_penalized - value)) if np.isfinite(value) else np.nan

    return (r_star(best if np.isfinite(best) else best_any),
            r_star(with_boundary if np.isfinite(with_boundary) else best_any), kind)


def cutoff(draws, alpha=0.05) -> float:
    """The default interval's cut-off from the draws: the ``ceil((B + 1)(1 - alpha))``-th order
    statistic of the finite ones (``DETMResults._bootstrap_cutoff``)."""
    srt = np.sort(draws[np.isfinite(draws)])
    return float(srt[min(int(np.ceil((srt.size + 1) * (1 - alpha))), srt.size) - 1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--design", choices=("sar", "scar"), default="sar",
                    help="Liu et al.'s SAR design (seeds 47_000_000 + ...) or SCAR "
                         "(48_000_000 + ...)")
    ap.add_argument("--n", type=int, default=1000, help="n = m (default 1000)")
    ap.add_argument("--cell", type=int, default=1)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--n-boot", type=int, default=199)
    ap.add_argument("--out", default="", help="append rows to results/..._raw<out>.csv")
    ap.add_argument("--summarise", nargs="+", metavar="TAG", help="summarise these runs")
    args = ap.parse_args()
    if args.summarise:
        summarise(args.summarise)
        return
    p = 15
    for r in range(args.first, args.first + args.reps):
        base = {("sar", 1000): 47_000_000, ("scar", 1000): 48_000_000}.get(
            (args.design, args.n), (49_000_000 if args.design == "sar" else 50_000_000))
        seed = base + 100_000 * args.cell + r
        Xs, Xt = replicate(args.design, (0.3, 0.7)[args.cell], args.n, p, seed)
        t0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = pu.DETM(Xs, Xt).fit(pi_interval="profile")
        data = res.model.data
        world = B.detm_world(data, res._fit)
        rng = np.random.default_rng(0)
        h = B.bandwidth(data, "silverman")
        rows = np.array([statistic(res._fit, data.names, *B.sample_detm(data, world, rng, h),
                                   float(res.pi)) for _ in range(args.n_boot)])
        now, bnd, kind = rows.T
        flagged = [f"{a:.2f}->{b:.2f}" for a, b in zip(now[kind > 0], bnd[kind > 0], strict=True)]
        pi_true = (0.3, 0.7)[args.cell]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r_true = float(res.profile_pi().statistic(pi_true))
        row = dict(design=args.design, n=args.n, seed=seed, pi=pi_true, pi_hat=res.pi,
                   fallback=int(np.sum(kind == 1)),
                   unlabelled_above=int(np.sum(kind == 2)), cutoff_now=cutoff(now),
                   cutoff_boundary=cutoff(bnd), rstar_truth=r_true,
                   t=time.process_time() - t0)
        row.update(covers_now=r_true <= row["cutoff_now"],
                   covers_boundary=r_true <= row["cutoff_boundary"])
        print(f"{seed} pi-hat {res.pi:.4f}: fallback {row['fallback']}, unlabelled above "
              f"{row['unlabelled_above']} of {args.n_boot}; cut-off {row['cutoff_now']:.3f}"
              f" -> with the boundary {row['cutoff_boundary']:.3f}; R*(pi) {r_true:.3f}; "
              f"flagged R*_b (now -> with the boundary): {flagged} ({row['t']:.1f} s)",
              flush=True)
        if args.out:
            path = OUT / f"detm_bootstrap_boundary_raw{args.out}.csv"
            pd.DataFrame([row]).to_csv(path, mode="a", header=not path.exists(), index=False)


def summarise(tags) -> None:
    """Coverage of the true pi by the default interval's cut-off as computed now and with the
    boundary, on the same replicates (a profile set covers pi iff ``R*(pi) <= cut-off``)."""
    d = pd.concat([pd.read_csv(OUT / f"detm_bootstrap_boundary_raw{t}.csv") for t in tags])
    n = len(d)
    for col in ("covers_now", "covers_boundary"):
        c = d[col].mean()
        print(f"{col}: {d[col].sum()} of {n} = {c:.4f} (MC SE {np.sqrt(c * (1 - c) / n):.4f})")
    diff = d[d.covers_now != d.covers_boundary]
    print(f"decisions that differ: {len(diff)}; cut-off changed in "
          f"{int((d.cutoff_now - d.cutoff_boundary).abs().gt(1e-12).sum())}; mean change "
          f"{(d.cutoff_boundary - d.cutoff_now).mean():.3f}; CPU {d.t.sum():.0f} s")
    if len(diff):
        print(diff[["seed", "pi_hat", "cutoff_now", "cutoff_boundary", "rstar_truth"]]
              .to_string(index=False))


if __name__ == "__main__":
    main()
