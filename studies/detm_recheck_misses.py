"""Recheck the search misses of ``detm_interval.py run`` files with the current code.

For every replicate of the given files where a polished independent start beat the fit
(``beats``), regenerate the data from its seed exactly as ``run`` did, refit the model with
today's default search and compare its maximum with the independent start's (``f_indep``, the
same penalised objective): a miss is fixed when the new fit is within 1e-6 of it or above.

    PYTHONPATH=. python studies/detm_recheck_misses.py --tag _w1000a _w1000b
"""

from __future__ import annotations

import argparse
import os
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from detm_interval import DESIGNS, OUT, formula  # noqa: E402

import puinfer as pu  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", nargs="+", required=True)
    args = ap.parse_args()
    rows = []
    for t in args.tag:
        f = pd.read_csv(OUT / f"detm_interval_raw{t}.csv")
        for r in f[f["beats"]].itertuples():
            df = DESIGNS[r.design](r.n, r.n, r.pi, p=r.p, rng=np.random.default_rng(r.seed))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = getattr(pu, r.model).from_formula(formula(r.p), data=df).fit(
                    pi_interval="profile")
            gap = r.f_indep - res.llf_penalized
            rows.append(dict(file=t, design=r.design, model=r.model, pi=r.pi, seed=r.seed,
                             independent_start=r.indep_label, gap_then=r.f_indep - r.f_fit,
                             pi_then=r.pi_hat, gap_now=gap, pi_now=res.pi, fixed=gap <= 1e-6))
            print(rows[-1], flush=True)
    out = pd.DataFrame(rows)
    print(out.to_markdown(index=False, floatfmt=".4g"))
    print(f"fixed: {int(out['fixed'].sum())} of {len(out)}")


if __name__ == "__main__":
    main()
