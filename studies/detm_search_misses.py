"""Issue 19: how often the default fit's search misses the global maximum, on fresh replicates.

For each replicate of a design (seeds ``1_000_000 * (cell + 70) + r``: a block used by no
other study, the cells as in ``detm_interval.py``) the default fit (``pi_interval="profile"``:
the bootstrap interval does not touch the search) is compared with the best of the polished
independent starts of ``detm_interval.py`` -- the design's true parameters, for DETM the SETM
fit in both labellings, and ``--random`` random starts drawn from the replicate's generator
after the data -- each maximised by the package's Newton (200 iterations, tol 1e-10) on the same
penalised objective. A miss: the independent best higher than the fit by more than 1e-6.

The same seeds run at two commits (each from its own tree; rows appended to
``results/detm_search_misses_raw<tag>.csv``, restartable) compare two searches:

    PYTHONPATH=. python studies/detm_search_misses.py run --design sar --model DETM --pi 0.7 \
        --reps 200 --tag _new
    PYTHONPATH=. python studies/detm_search_misses.py compare --before _old --after _new
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from detm_interval import (  # noqa: E402
    DESIGNS,
    OUT,
    SEED_OFFSET,
    formula,
    independent,
    random_starts,
    true_v,
)

import puinfer as pu  # noqa: E402
from puinfer.models.detm._starts import _setm_index  # noqa: E402

KEY = ["design", "model", "pi", "n", "seed"]


def seed_of(design: str, pi: float, n: int, r: int) -> int:
    return 1_000_000 * ({0.3: 1, 0.7: 2}[pi] + 10 * (n // 1000) + 70 + SEED_OFFSET[design]) + r


def one(design, model_name, pi, n, p, seed, n_random) -> dict:
    rng = np.random.default_rng(seed)
    df = DESIGNS[design](n, n, pi, p=p, rng=rng)
    restricted = model_name == "SETM"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(pu, model_name).from_formula(formula(p), data=df)
        t0 = time.process_time()
        res = model.fit(pi_interval="profile")
        t_fit = time.process_time() - t0
        data = model.data
        starts = [("truth", true_v(data, pi, p, design, restricted))]
        rand = random_starts(data, rng, n_random)
        if restricted:
            starts += [(f"random {k}", v[_setm_index(p)]) for k, v in enumerate(rand)]
        else:
            sv = np.asarray(model.restricted_model().fit()._fit.v)
            starts += [("SETM", sv), ("SETM mirrored", np.r_[sv[p + 1:], sv[: p + 1]])]
            starts += [(f"random {k}", v) for k, v in enumerate(rand)]
        f_ind, pi_ind, lab = independent(res, data, starts, restricted)
    return dict(design=design, model=model_name, pi=pi, n=n, p=p, seed=seed, pi_hat=res.pi,
                f_fit=res.llf_penalized, f_indep=f_ind, pi_indep=pi_ind, indep_label=lab,
                gap=f_ind - res.llf_penalized, miss=bool(f_ind > res.llf_penalized + 1e-6),
                t_fit=t_fit)


def run(args):
    path = OUT / f"detm_search_misses_raw{args.tag}.csv"
    done = set()
    if path.exists():
        old = pd.read_csv(path)
        done = set(zip(*(old[k] for k in KEY), strict=True))
    for r in range(args.first, args.first + args.reps):
        seed = seed_of(args.design, args.pi, args.n, r)
        if (args.design, args.model, args.pi, args.n, seed) in done:
            continue
        row = one(args.design, args.model, args.pi, args.n, args.p, seed, args.random)
        pd.DataFrame([row]).to_csv(path, mode="a", header=not path.exists(), index=False)
        print(f"{args.design} {args.model} {args.pi} {r}: pi-hat {row['pi_hat']:.3f} "
              f"gap {row['gap']:.3g} t {row['t_fit']:.1f}", flush=True)


def compare(args):
    a = pd.concat([pd.read_csv(OUT / f"detm_search_misses_raw{t}.csv") for t in args.before])
    b = pd.concat([pd.read_csv(OUT / f"detm_search_misses_raw{t}.csv") for t in args.after])
    m = a.merge(b, on=KEY, suffixes=("_before", "_after"))
    rows = []
    for (design, model, pi), g in m.groupby(["design", "model", "pi"]):
        rows.append({"design": design, "model": model, "pi": pi, "replicates": len(g),
                     "misses before": int(g["miss_before"].sum()),
                     "misses after": int(g["miss_after"].sum()),
                     "max gap after": g["gap_after"].max(),
                     "fit higher after (>1e-6)": int((g["f_fit_after"]
                                                      > g["f_fit_before"] + 1e-6).sum()),
                     "fit lower after (>1e-6)": int((g["f_fit_after"]
                                                     < g["f_fit_before"] - 1e-6).sum()),
                     "fit CPU s before": g["t_fit_before"].mean(),
                     "fit CPU s after": g["t_fit_after"].mean()})
    table = pd.DataFrame(rows).to_markdown(index=False, floatfmt=".3g")
    print(table)
    left = m[m["miss_after"]][KEY + ["pi_hat_after", "pi_indep_after", "indep_label_after",
                                     "gap_after"]]
    print(left.to_markdown(index=False, floatfmt=".4g"))
    if args.write:
        (OUT / f"detm_search_misses{args.write}.md").write_text(
            f"# Search misses on fresh replicates: {' '.join(args.before)} (before) vs "
            f"{' '.join(args.after)} (after)\n\n`PYTHONPATH=. python "
            f"studies/detm_search_misses.py compare --before {' '.join(args.before)} --after "
            f"{' '.join(args.after)} --write {args.write}`\n\n{table}\n\nMisses left after:\n\n"
            f"{left.to_markdown(index=False, floatfmt='.4g')}\n")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--design", choices=sorted(DESIGNS), default="sar")
    r.add_argument("--model", choices=["DETM", "SETM"], default="DETM")
    r.add_argument("--pi", type=float, default=0.7, choices=[0.3, 0.7])
    r.add_argument("--n", type=int, default=1000)
    r.add_argument("--p", type=int, default=15)
    r.add_argument("--reps", type=int, default=200)
    r.add_argument("--first", type=int, default=0)
    r.add_argument("--random", type=int, default=4)
    r.add_argument("--tag", default="")
    c = sub.add_parser("compare")
    c.add_argument("--before", nargs="+", required=True)
    c.add_argument("--after", nargs="+", required=True)
    c.add_argument("--write", default="")
    args = ap.parse_args()
    {"run": run, "compare": compare}[args.cmd](args)


if __name__ == "__main__":
    main()
