"""Issue 17: does the jump into SETM's maximum at pi = 0 change any run of the search?

SETM runs that head for a maximum at pi = 0 (``s1 -> -inf``) creep one unit of ``s1`` per
Newton iteration; :data:`puinfer.models.detm._starts.TAIL_STEP` (session 57) merges them as
soon as the rest of the run has settled and the log-EL at the maximum's ``s1`` confirms the
tail. A merged run reports the maximum it merged into, so the rule changes nothing where it
only merges earlier a run that would have merged (or converged) there anyway. This study
records, for the default DETM fit and the bootstrap SCAR test (199 resamples, ``rng=0``) of
each replicate, every Newton run of the search (label, reported log-EL, whether it merged,
iterations) and the bootstrap statistics; run it once per version of the package and compare:

    PYTHONPATH=<old tree> python studies/detm_boundary_jump.py run /tmp/old.pkl
    PYTHONPATH=<new tree> python studies/detm_boundary_jump.py run /tmp/new.pkl
    python studies/detm_boundary_jump.py compare /tmp/old.pkl /tmp/new.pkl

Replicates: Liu et al.'s SAR design at pi = 0.3 and 0.7 and the SCAR design at pi = 0.5
(:mod:`puinfer.simulate`), n = m = 1000, p = 15, seeds ``57_000_000 + 100_000 * cell + r``.
"""

from __future__ import annotations

import argparse
import os
import pickle
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

CELLS = (("sar", 0.3), ("sar", 0.7), ("scar", 0.5))


def run(args) -> None:
    import puinfer as pu
    from puinfer.models.detm import _starts, bootstrap
    from puinfer.simulate import sar_design, scar_design

    runs: list = []
    orig_runs = _starts._newton_runs

    def recorded(fun, starts, *a, **k):
        out = orig_runs(fun, starts, *a, **k)
        runs.extend((r.label, r.f, "stopped there" in (r.info.message or ""),
                     r.info.iterations) for r in out)
        return out

    stats: list = []
    orig_rep = bootstrap.replicate

    def replicate(*a, **k):
        out = orig_rep(*a, **k)
        stats.append(np.asarray(out, dtype=float))
        return out

    _starts._newton_runs = recorded
    bootstrap.replicate = replicate
    rows = []
    for i, (design, pi) in enumerate(CELLS):
        make = {"sar": sar_design, "scar": scar_design}[design]
        for r in range(args.reps):
            seed = 57_000_000 + 100_000 * i + r
            df = make(args.n, args.n, pi, p=15, rng=np.random.default_rng(seed))
            X = df[[f"x{j}" for j in range(1, 16)]].to_numpy()
            lab = df.labeled.to_numpy() == 1
            runs.clear()
            stats.clear()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.process_time()
                d = pu.DETM(X[lab], X[~lab]).fit(pi_interval="profile")
                t_fit = time.process_time() - t0
                fit_runs = list(runs)
                runs.clear()
                t0 = time.process_time()
                test = d.test_scar("bootstrap", n_boot=199, rng=0)
                t_boot = time.process_time() - t0
            rows.append(dict(design=design, pi=pi, seed=seed, detm_pi=d.pi,
                             setm_pi=d.null_fit.pi, pvalue=test.pvalue,
                             statistic=test.statistic, fit_runs=fit_runs,
                             boot_runs=list(runs), boot_stats=stats[0], t_fit=t_fit,
                             t_boot=t_boot))
            print(f"{design}:{pi} #{r}: SETM pi {d.null_fit.pi:.4g}, p = {test.pvalue:.3f}, "
                  f"fit {t_fit:.1f} s, bootstrap {t_boot:.1f} s", flush=True)
            with open(args.out, "wb") as fh:
                pickle.dump(rows, fh)


def compare(args) -> None:
    with open(args.old, "rb") as fh:
        old = pickle.load(fh)
    with open(args.new, "rb") as fh:
        new = pickle.load(fh)
    n_runs = n_diff = 0
    for a, b in zip(old, new, strict=True):
        assert a["seed"] == b["seed"]
        diffs = []
        for part in ("fit_runs", "boot_runs"):
            for ra, rb in zip(a[part], b[part], strict=True):
                n_runs += 1
                if ra[0] != rb[0] or ra[1] != rb[1]:
                    diffs.append((part, ra, rb))
        n_diff += len(diffs)
        same = np.array_equal(a["boot_stats"], b["boot_stats"], equal_nan=True)
        it = {p: (sum(r[3] for r in a[p]), sum(r[3] for r in b[p]))
              for p in ("fit_runs", "boot_runs")}
        print(f"{a['design']}:{a['pi']} seed {a['seed']}: SETM pi {a['setm_pi']:.3g}; "
              f"statistics {'identical' if same else 'DIFFER'}; p {a['pvalue']:.3f} / "
              f"{b['pvalue']:.3f}; runs differing {len(diffs)}; Newton iterations fit "
              f"{it['fit_runs'][0]} -> {it['fit_runs'][1]}, bootstrap {it['boot_runs'][0]} -> "
              f"{it['boot_runs'][1]}; CPU s fit {a['t_fit']:.2f} / {b['t_fit']:.2f}, "
              f"bootstrap {a['t_boot']:.2f} / {b['t_boot']:.2f}")
        for d in diffs[:5]:
            print("   ", d)
    print(f"{n_diff} of {n_runs} runs report another log-EL or label")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--reps", type=int, default=4)
    r.add_argument("--n", type=int, default=1000)
    c = sub.add_parser("compare")
    c.add_argument("old")
    c.add_argument("new")
    args = ap.parse_args()
    (run if args.cmd == "run" else compare)(args)


if __name__ == "__main__":
    main()
