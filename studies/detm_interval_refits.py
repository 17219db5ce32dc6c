"""How often do the refits of DETM's bootstrap-calibrated interval miss a resample's maximum?
(issue 17's record, session 46)

On the benchmark's data (``sar_design(1000, 1000, 0.3, p=15)``, seed 1015, as
``benchmarks/bench_detm.py``) the default interval draws 199 resamples from the fitted DETM
(Silverman's h, ``rng = default_rng(1)``, as ``benchmarks/compare_draws.py``) and on each
computes ``R*_b(pi-hat) = 2 {l_b - l_b(pi-hat)}`` from a quick refit
(:func:`puinfer.models.detm.bootstrap._interval_statistic`: the SETM start, a reduced grid and
the original fit, no probe; the profile at pi-hat from the refit and the original fit). Here
each resample is also fitted by the default ``DETM.fit()`` (every start, hops, stretch moves,
the profile probe) and profiled at pi-hat from every start of that fit's profiler; the best
of both routes gives ``R_best``. Written per resample: the quick and the thorough log-EL and
profile value, ``R_quick``, ``R_best``, the pi-hats and the label of the thorough fit's first
run that reached its maximum (``full_winner``).

    OPENBLAS_NUM_THREADS=1 python studies/detm_interval_refits.py run --part 0/2 --out A.csv
    OPENBLAS_NUM_THREADS=1 python studies/detm_interval_refits.py run --part 1/2 --out B.csv
    python studies/detm_interval_refits.py summarise A.csv B.csv
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

N_BOOT = 199


def _observed():
    """The benchmark's default DETM fit (``benchmarks/compare_draws.py``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from compare_draws import bench_fit

    return bench_fit("sar")


def _quick(fit, names, Xs, Xt, pi0):
    """The quick refit of ``bootstrap._interval_statistic`` (same starts and options), with
    its log-EL and both fixed-pi values."""
    from puinfer.models.detm._data import prepare
    from puinfer.models.detm._profile import PiProfiler
    from puinfer.models.detm._starts import fit_fixed_pi
    from puinfer.models.detm.model import fit_data

    p = Xs.shape[1]
    dat = prepare(Xs, Xt, names=names)
    setm_v = np.r_[fit.v[0], np.zeros(p), fit.v[p + 1:]]
    opts = dict(setm_start=setm_v, grid=True, extra_starts=[("original DETM", fit.v)])
    rec = fit_data(dat, False, c=fit.penalty_strength, label_rule=fit.label_rule,
                   maxiter=fit.maxiter, tol=fit.tol, check_separation=False, probe=False,
                   start_options=opts, lean=True)[0]
    prof = PiProfiler(dat, rec, np.nan, quick=True)
    vals = []
    for th0 in (rec.theta, fit.theta):
        f, th, info = fit_fixed_pi(dat, False, pi0, th0, fit.penalty_strength, fit.maxiter,
                                   fit.tol)
        ok = info.converged and np.isfinite(f)
        vals.append(f if ok and prof.labelled(th, pi0) else -np.inf)
    return rec.llf_penalized, rec.pi, max(vals)


def run(part: str, out: str) -> None:
    import puinfer as pu
    from puinfer.models.detm import bootstrap as boot

    k, parts = (int(v) for v in part.split("/"))
    d = _observed()
    data, fit, pi0 = d.model.data, d._fit, float(d.pi)
    h = boot.bandwidth(data, "silverman")
    rng = np.random.default_rng(1)
    w = boot.detm_world(data, fit)
    samples = [boot.sample_detm(data, w, rng, h) for _ in range(N_BOOT)]
    rows = []
    for i in range(k, N_BOOT, parts):
        Xs, Xt = samples[i]
        t0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r_q, pi_q = boot._interval_statistic(fit, data.names, Xs, Xt, pi0)
            l_q, _, prof_q = _quick(fit, data.names, Xs, Xt, pi0)
            t1 = time.process_time()
            res = pu.DETM(Xs, Xt).fit(penalty=fit.penalty_strength, label_rule=fit.label_rule)
            prof_full = res._profiler(pi0)
        t2 = time.process_time()
        l_full = res._fit.llf_penalized
        top = max(r.f for r in res._fit.runs)
        winner = next(r.label for r in res._fit.runs
                      if r.f >= top - 1e-6 * max(1.0, abs(top)))
        l_best, prof_best = max(l_q, l_full), np.nanmax([prof_q, prof_full])
        rows.append(dict(resample=i, R_quick=r_q, pi_quick=pi_q, llf_quick=l_q,
                         prof_quick=prof_q, llf_full=l_full, pi_full=float(res.pi),
                         prof_full=prof_full, R_best=max(0.0, 2 * (l_best - prof_best)),
                         cpu_quick=t1 - t0, cpu_full=t2 - t1, full_winner=winner))
        pd.DataFrame(rows).to_csv(out, index=False)
        print(i, f"R_quick {r_q:.4f} R_best {rows[-1]['R_best']:.4f}", flush=True)


def summarise(paths) -> None:
    tab = pd.concat([pd.read_csv(p) for p in paths]).sort_values("resample")
    tab = tab.reset_index(drop=True)
    d = _observed()
    miss_l = tab.llf_quick < tab.llf_full - 1e-6
    miss_p = tab.prof_quick < tab.prof_full - 1e-6
    diff = tab.R_quick - tab.R_best
    print(f"{len(tab)} resamples; the quick refit below the thorough fit's log-EL in "
          f"{int(miss_l.sum())} (by up to {(tab.llf_full - tab.llf_quick)[miss_l].max():.3g}),"
          f" above it in {int((tab.llf_quick > tab.llf_full + 1e-6).sum())}; its profile at "
          f"pi-hat below the thorough one in {int(miss_p.sum())}")
    print(f"R_quick - R_best: {int((diff < -1e-6).sum())} lower (down to {diff.min():.3g}), "
          f"{int((diff > 1e-6).sum())} higher (up to {diff.max():.3g})")
    k = int(np.ceil(0.95 * (N_BOOT + 1))) - 1
    for col in ("R_quick", "R_best"):
        cut = float(np.sort(tab[col].to_numpy())[k]) if len(tab) == N_BOOT else float("nan")
        ci = d.profile_pi().conf_int(0.05, cut) if np.isfinite(cut) else [np.nan, np.nan]
        print(f"{col}: cut-off (190th of 199) {cut:.4f}, interval "
              f"[{ci.iloc[0]:.4f}, {ci.iloc[1]:.4f}]")
    print(f"CPU per resample: quick {tab.cpu_quick.median():.2f} s, thorough "
          f"{tab.cpu_full.median():.2f} s (medians)")
    print(f"|R_quick - R_best| quartiles: "
          f"{', '.join(f'{q:.3g}' for q in diff.abs().quantile([0.25, 0.5, 0.75]))}; "
          f"Spearman correlation of R_quick and R_best "
          f"{tab.R_quick.corr(tab.R_best, method='spearman'):.3f}")
    if "full_winner" in tab:  # which of the thorough fit's starts reached its maximum first
        kind = tab.full_winner.str.replace(r"( r=| #|=| x|, ).*$", "", regex=True)
        missed = tab.llf_quick < tab.llf_full - 1e-6
        print("the thorough maximum first reached from (resamples where the quick refit "
              "missed it / all):")
        for k, c in kind[missed].value_counts().items():
            print(f"  {k}: {c} / {int((kind == k).sum())}")
    print("the ten largest differences:")
    for _, r in tab.loc[diff.abs().sort_values(ascending=False).index[:10]].iterrows():
        print(f"  {int(r['resample'])}: R_quick {r.R_quick:.4f} R_best {r.R_best:.4f}; log-EL "
              f"quick {r.llf_quick:.4f} thorough {r.llf_full:.4f}; profile at pi-hat quick "
              f"{r.prof_quick:.4f} thorough {r.prof_full:.4f}; pi-hat_b {r.pi_quick:.4f} / "
              f"{r.pi_full:.4f}")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--part", default="0/1")
    r.add_argument("--out", required=True)
    s = sub.add_parser("summarise")
    s.add_argument("paths", nargs="+")
    a = ap.parse_args()
    if a.cmd == "run":
        run(a.part, a.out)
    else:
        summarise(a.paths)


if __name__ == "__main__":
    main()
