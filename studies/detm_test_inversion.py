"""Would a cut-off calibrated at the tested pi repair DETM's default interval at n = m = 100?
(Session 71; exploratory, not declared: a diagnostic of session 70's one cell left below
nominal.)

Session 70's declared study (``detm_near_boundary.py``, cell 3: DETM, ``pu_normal(100, 100,
0.15, [0], [0], [3])``) found the default interval covering 0.92 (plain profile 0.95), its
misses below pi with pi-hat 0.03-0.08 and bootstrap cut-offs 2.5-3.3, and named a cut-off that
depends on the pi tested (test inversion: a bootstrap world at each candidate value) as the
principled repair. This script checks that claim on the same data sets (seeds
``70_030_000 + r``) before anyone builds it: for each replicate it computes

* ``R``: the data's ``R*(pi0)`` at the true ``pi0 = 0.15`` (the default fit's profile);
* ``cut_hat``: the default interval's cut-off (the world at pi-hat, with the boundary rules);
* ``cut_pi0``: the cut-off of the world at pi0 itself -- the 190th of 199 draws of
  ``R*_b(pi0)`` from :func:`~puinfer.models.detm.bootstrap.detm_world` of the data's
  constrained fit at pi0 (its theta and EL weights), Silverman's bandwidth, each resample
  refitted as the default interval's bootstrap refits (``_interval_statistic``).

The test-inversion interval covers pi0 exactly when ``R <= cut_pi0``; the default when
``R <= cut_hat``. ``share0``: the share of the world's resamples with pi-hat on the boundary.

    OPENBLAS_NUM_THREADS=1 python studies/detm_test_inversion.py 0 200     # ~6.5 CPU s each
    python studies/detm_test_inversion.py --summarise

Rows: ``studies/results/detm_test_inversion_cell3.csv``; reading in
``studies/results/detm_test_inversion.md``.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import puinfer as pu  # noqa: E402
from puinfer.models.detm import _el  # noqa: E402
from puinfer.models.detm import bootstrap as B  # noqa: E402
from puinfer.simulate import pu_normal  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "detm_test_inversion_cell3.csv"
SEED0, N, PI0, N_BOOT = 70_030_000, 100, 0.15, 199
CHI2 = 3.841458820694124


def one(seed: int) -> dict:
    """One replicate: ``R(pi0)``, the default cut-off and the cut-off of the world at pi0."""
    df = pu_normal(N, N, PI0, [0], [0], [3], rng=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pu.DETM.from_formula("labeled ~ x1", data=df).fit()
        ci = res.conf_int_pi()
        prof = res._profiler
        f0 = prof(PI0)
    data = res.model.data
    th = prof.solved[PI0]  # the constrained fit at pi0 (standardised scale)
    extra = _el.profile_log_el(th, PI0, data.Z, data.y, res._fit.penalty_strength,
                               X1=data.X1, order=2, with_pi=True)[3]
    w = B.detm_world(data, SimpleNamespace(el_weights=extra["p"], pi=PI0, theta=np.asarray(th)))
    h = B.bandwidth(data, "silverman")
    rng = np.random.default_rng(seed)
    draws = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(N_BOOT):
            Xs, Xt = B.sample_detm(data, w, rng, h)
            try:
                draws.append(B._interval_statistic(res._fit, data.names, Xs, Xt, PI0))
            except ValueError:  # a resample that cannot be fitted
                draws.append((np.nan, np.nan))
    d = np.asarray(draws)
    ok = np.isfinite(d[:, 0])
    k = int(np.ceil((ok.sum() + 1) * 0.95))  # the default interval's order statistic
    return dict(seed=seed, pi_hat=res.pi, R=max(0.0, 2 * (res.llf_penalized - f0)),
                cut_hat=ci.attrs["cutoff"], cut_pi0=float(np.sort(d[ok, 0])[k - 1]),
                lo=float(ci["lower"]), hi=float(ci["upper"]),
                mean_draw_pi0=float(np.mean(d[ok, 0])),
                share0=float(np.mean(d[ok, 1] < 1e-6)))


def summarise(d: pd.DataFrame) -> pd.Series:
    return pd.Series({
        "replicates": len(d),
        "default covers (R <= cut_hat)": (d.R <= d.cut_hat).mean(),
        "test inversion covers (R <= cut_pi0)": (d.R <= d.cut_pi0).mean(),
        "plain covers (R <= 3.84)": (d.R <= CHI2).mean(),
        "mean R (chi2_1: 1)": d.R.mean(),
        "P(R > 3.84) (chi2_1: 0.05)": (d.R > CHI2).mean(),
        "median cut_hat": d.cut_hat.median(),
        "median cut_pi0": d.cut_pi0.median(),
    } | ({"mean of the pi0-world's draws R*_b(pi0)": d.mean_draw_pi0.mean()}
         if "mean_draw_pi0" in d else {}))


if __name__ == "__main__":
    if sys.argv[1:] == ["--summarise"]:
        print(summarise(pd.read_csv(OUT)).round(4).to_string())
        sys.exit()
    a, b = int(sys.argv[1]), int(sys.argv[2])
    if a:  # a later chunk: its own file (the first chunk's rows are not overwritten)
        OUT = OUT.with_name(f"{OUT.stem}_from{a}.csv")
    rows = []
    for r in range(a, b):
        t = time.process_time()
        rows.append(one(SEED0 + r) | {"cpu": time.process_time() - t})
        pd.DataFrame(rows).to_csv(OUT, index=False)
