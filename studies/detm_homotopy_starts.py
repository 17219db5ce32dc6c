"""Issue 19, exploratory (session 30): would a start from a more strongly penalised fit (a
homotopy in the ridge: the fit at 4, 16 or 64 times the default strength, polished at the
default) reach the higher maxima the default search misses? On the 7 known misses at
n = m = 1000, pi = 0.7 (2 fresh of ``detm_search_misses.py``, 5 left of session 28's
``_w1000`` runs), each line: the default fit, the polished truth and the polished
homotopy starts (gap to the fit in brackets).

    PYTHONPATH=. python studies/detm_homotopy_starts.py [0|1]   # half of the cases each
"""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from detm_interval import DESIGNS, formula, independent, true_v  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.models.detm._starts import _setm_index  # noqa: E402

CASES = [("sar", "DETM", 82000022), ("scar", "SETM", 182000228), ("scar", "SETM", 112000112),
         ("scar", "SETM", 112000141), ("scar", "SETM", 112000362), ("sar", "DETM", 12000221),
         ("sar", "DETM", 12000311)]


def fit_case(design, name, seed, pi, n, p):
    """One known miss: its model, default fit (plain interval) and the polished truth's
    ``(objective, pi)``."""
    df = DESIGNS[design](n, n, pi, p=p, rng=np.random.default_rng(seed))
    restricted = name == "SETM"
    model = getattr(pu, name).from_formula(formula(p), data=df)
    res = model.fit(pi_interval="profile")
    f_t, pi_t, _ = independent(res, model.data, [("truth", true_v(model.data, pi, p, design,
                                                                  restricted))], restricted)
    return model, res, f_t, pi_t


def main(cases, pi=0.7, n=1000, p=15):
    warnings.simplefilter("ignore")
    for design, name, seed in cases:
        restricted = name == "SETM"
        model, res, f_t, pi_t = fit_case(design, name, seed, pi, n, p)
        data, c = model.data, res.penalty_strength
        out = [f"{design} {name} {seed}: fit {res.llf_penalized:.3f} pi {res.pi:.3f} | "
               f"truth {f_t:.3f} pi {pi_t:.3f} |"]
        for k in (4, 16, 64):
            v = np.asarray(model.fit(penalty=k * c, pi_interval="profile", probe=False)._fit.v)
            starts = [("h", v[_setm_index(p)] if restricted else v)]
            if not restricted:
                starts.append(("h mirrored", np.r_[v[p + 1:], v[: p + 1]]))
            f_h, pi_h, _ = independent(res, data, starts, restricted)
            out.append(f"x{k}: {f_h:.3f} pi {pi_h:.3f} ({f_h - res.llf_penalized:+.3f})")
        print(" ".join(out), flush=True)


if __name__ == "__main__":
    main(CASES[int(sys.argv[1])::2] if len(sys.argv) > 1 else CASES)
