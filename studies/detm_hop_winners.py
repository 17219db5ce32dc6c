"""Issue 17/19, session 32 (exploratory): which start reaches the fit's maximum, in the
replicates of ``detm_search_misses.py`` where the search with hops (session 31) found a
different maximum than the search before them (41 higher, 4 lower of 1,200; tags ``_s29after4a
_s29after4b _s29ext_a _s29ext_b`` before, ``_s31a _s31b`` after). Each replicate is fitted
again with the code at hand (``pi_interval="profile"``); printed: the first start whose run
reached the maximum (later runs merge into it) -- for DETM also the start that reached SETM's,
whose solution is DETM's first start -- and the fit's change between the two searches.

    PYTHONPATH=. python studies/detm_hop_winners.py
"""

from __future__ import annotations

import os
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from detm_interval import DESIGNS, OUT, formula  # noqa: E402

import puinfer as pu  # noqa: E402

KEY = ["design", "model", "pi", "n", "seed"]
BEFORE = ["_s29after4a", "_s29after4b", "_s29ext_a", "_s29ext_b"]
AFTER = ["_s31a", "_s31b"]


def winner(starts: pd.DataFrame) -> str:
    """Label of the first start whose objective is the table's maximum (to 1e-9 relative)."""
    obj = starts["objective"].to_numpy()
    top = np.nanmax(obj)
    first = np.flatnonzero(obj >= top - 1e-9 * max(1.0, abs(top)))[0]
    return str(starts["start"].iloc[first])


def main() -> None:
    before = pd.concat([pd.read_csv(OUT / f"detm_search_misses_raw{t}.csv") for t in BEFORE])
    after = pd.concat([pd.read_csv(OUT / f"detm_search_misses_raw{t}.csv") for t in AFTER])
    m = after.merge(before, on=KEY, suffixes=("", "_before"))
    m["change"] = m["f_fit"] - m["f_fit_before"]
    cases = m[m["change"].abs() > 1e-6]
    rows = []
    for _, c in cases.iterrows():
        df = DESIGNS[c.design](c.n, c.n, c.pi, p=15, rng=np.random.default_rng(int(c.seed)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = getattr(pu, c.model).from_formula(formula(15), data=df).fit(
                pi_interval="profile")
        row = dict(design=c.design, model=c.model, seed=int(c.seed), change=c.change,
                   f_now_minus_after=res.llf_penalized - c.f_fit, winner=winner(res.starts))
        if c.model == "DETM":
            row["setm_winner"] = winner(res.null_fit.starts)
        rows.append(row)
        print(row, flush=True)
    out = pd.DataFrame(rows)
    print(out.to_markdown(index=False, floatfmt=".3g"))
    kind = out["winner"].str.replace(r" #\d+", "", regex=True)
    print(pd.crosstab(kind, out["change"] > 0).to_markdown())


if __name__ == "__main__":
    main()
