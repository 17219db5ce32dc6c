"""Wald coverage of the tilts under the default (bootstrap) fit, SE of pi from the hull (session
77) vs from the component (before), the same fits; the carried covariance re-implemented here
(``cov_k``). World: pu_normal(300, 300, 0.3, [0,0], [1,0], [0,2]). A reviewer's check (session 77):

    OPENBLAS_NUM_THREADS=1 python studies/detm_pi_hull_tilts.py 0 150 \\
        > studies/results/detm_pi_hull_tilts.jsonl
    python studies/detm_pi_hull_tilts_sum.py   # -> studies/results/detm_pi_hull_tilts.txt
"""

import json
import sys
import warnings

import numpy as np
from scipy.stats import norm

import puinfer as pu
from puinfer.simulate import pu_normal

warnings.simplefilter("ignore")
TRUE = {
    "alpha1": -0.5,
    "beta1[x1]": 1.0,
    "beta1[x2]": 0.0,
    "alpha2": -2.0,
    "beta2[x1]": 0.0,
    "beta2[x2]": 2.0,
    "pi": 0.3,
}
z = norm.ppf(0.975)


def se_from(lo, hi, lo_b, hi_b, pi):
    if lo_b and hi_b:
        return np.nan
    half = (hi - lo) / 2
    if lo_b:
        return max(hi - pi, half) / z
    if hi_b:
        return max(pi - lo, half) / z
    return half / z


def cov_k(info, k):
    c = info["pi"].to_numpy()
    V = float(info.loc["pi", "pi"])
    kt = max(k, 1.0)
    out = info + (kt * kt - 1.0) * np.outer(c, c) / V
    if k < 1:
        out.loc["pi"] *= k
        out.loc[:, "pi"] *= k
    return out


s0, s1 = int(sys.argv[1]), int(sys.argv[2])
for seed in range(s0, s1):
    df = pu_normal(300, 300, 0.3, [0, 0], [1, 0], [0, 2], rng=np.random.default_rng(seed))
    try:
        r = pu.DETM.from_formula("labeled ~ x1 + x2", data=df).fit()
        ci = r.conf_int_pi()
        lo_c, hi_c = ci.attrs["component"]
        info = r._cov
        se_info = float(np.sqrt(info.loc["pi", "pi"]))
        se_h = r._interval_se()
        se_c = se_from(lo_c, hi_c, lo_c == 0.0, hi_c == 1.0, r.pi)
        row = dict(
            seed=seed,
            pi=r.pi,
            interval=bool(ci.attrs["interval"]),
            hull=[float(ci["lower"]), float(ci["upper"])],
            comp=[lo_c, hi_c],
            se_h=se_h,
            se_c=se_c,
        )
        for tag, se in (("h", se_h), ("c", se_c)):
            k = se / se_info
            if not np.isfinite(k):
                row[f"cover_{tag}"] = None
                continue
            C = cov_k(info, k)
            sd = np.sqrt(np.diag(C))
            est = r.params
            row[f"cover_{tag}"] = {n: bool(abs(est[n] - TRUE[n]) <= z * sd[i]) for i, n in enumerate(C.index)}
            row[f"k_{tag}"] = k
        print(json.dumps(row), flush=True)
    except Exception as e:
        print(json.dumps(dict(seed=seed, error=f"{type(e).__name__}: {e}")), flush=True)
