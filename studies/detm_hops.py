"""Issue 19, exploratory (session 31): basin hopping from the fit. On the 7 known misses at
n = m = 1000, pi = 0.7 (``detm_homotopy_starts.CASES``: a polished independent start -- the
truth or a random start -- above the search of session 29/30), the fit of that search
(``HOP_ROUNDS = 0``: no hops) is restarted ``--hops`` times per radius r from its solution with
the slopes moved by ``N(0, (r^2 / p) I)`` (SETM: ``b2`` only), each run polished by the
package's Newton. Each line: the gap of the best known maximum (truth, or the best hop) to
the fit, then per radius the number of hops that reach a higher maximum (> 1e-6) and the
best gain.

    PYTHONPATH=. python studies/detm_hops.py [0|1]     # half of the cases each
"""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from detm_homotopy_starts import CASES, fit_case  # noqa: E402
from detm_interval import independent  # noqa: E402

from puinfer.models.detm import _starts  # noqa: E402

RADII = (1.0, 2.0, 3.0, 4.0, 6.0, 8.0)


def main(cases, hops=16, pi=0.7, n=1000, p=15):
    warnings.simplefilter("ignore")
    _starts.HOP_ROUNDS = 0  # the fit of the search without hops
    for design, name, seed in cases:
        restricted = name == "SETM"
        model, res, f_t, pi_t = fit_case(design, name, seed, pi, n, p)
        data, f0 = model.data, res.llf_penalized
        v = np.asarray(res._fit.v)
        slopes = np.r_[p + 2:2 * p + 2] if restricted else np.r_[1:p + 1, p + 2:2 * p + 2]
        idx = _starts._setm_index(p) if restricted else np.arange(2 * p + 2)
        rng = np.random.default_rng(0)
        out = [f"{design} {name} {seed}: fit pi {res.pi:.3f} | truth {f_t - f0:+.3f} "
               f"(pi {pi_t:.3f}) |"]
        for r in RADII:
            gains = []
            for _ in range(hops):
                w = v.copy()
                w[slopes] += (r / np.sqrt(p)) * rng.standard_normal(slopes.size)
                f_h, _, _ = independent(res, data, [("hop", w[idx])], restricted)
                gains.append(f_h - f0)
            g = np.array(gains)
            out.append(f"r={r:g}: {np.sum(g > 1e-6)}/{hops} {g.max():+.3f}")
        print(" ".join(out), flush=True)


if __name__ == "__main__":
    main(CASES[int(sys.argv[1])::2] if len(sys.argv) > 1 else CASES)
