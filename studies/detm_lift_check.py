"""Issue 17, session 32: default DETM fits (and the SETM fit inside each) on four designs above
40,000 rows, to compare two commits' fits and 95% profile intervals. Run once per commit, with
``PYTHONPATH`` at its tree; writes the figures as JSON and prints them:

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=<tree> taskset -c 0 python studies/detm_lift_check.py out.json
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.simulate.detm import gamma_design, sar_design, scar_design  # noqa: E402

#: name -> (design, n = m, pi, seed)
CASES = {"scar1e5": (scar_design, 100_000, 0.3, 1), "sar1e5_0.7": (sar_design, 100_000, 0.7, 2),
         "gamma1e5": (gamma_design, 100_000, 0.3, 3), "sar3e4": (sar_design, 30_000, 0.3, 4)}


def _limits(res) -> list:
    return res.conf_int_pi(method="profile").to_numpy().ravel().tolist()


def main(out_path: str) -> None:
    warnings.simplefilter("ignore")
    out = {}
    for name, (design, n, pi, seed) in CASES.items():
        df = design(n, n, pi, p=15, rng=np.random.default_rng(seed))
        X = df[[f"x{j}" for j in range(1, 16)]].to_numpy()
        lab = df.labeled.to_numpy() == 1
        t0 = time.process_time()
        d = pu.DETM(X[lab], X[~lab]).fit()
        t = time.process_time() - t0
        s = d.null_fit
        out[name] = dict(t=t, dpi=d.pi, dllf=d.llf_penalized, dci=_limits(d), spi=s.pi,
                         sllf=s.llf_penalized, sci=_limits(s))
        print(name, out[name], flush=True)
    with open(out_path, "w") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main(sys.argv[1])
