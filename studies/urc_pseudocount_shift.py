"""URC's default lab pseudo-counts under a large shift with moderate lab sets (session 68).

Three classes, random lab set (base rates 0.5, 0.3, 0.2) of ``n_lab`` items, field of 3000 at
(0.2, 0.3, 0.5), ``simulate_urc``'s default separation. Each replicate is fitted with the
defaults (``lab_pseudocount=0.5``, pooled) and by plain maximum likelihood
(``lab_pseudocount=0``); recorded per class: estimate, 95% profile interval, and the p-value of
``test_no_shift(value=truth)``.

Run: ``OPENBLAS_NUM_THREADS=1 python studies/urc_pseudocount_shift.py 1000 300`` (seeds
68_050_000 + r) and ``... 500 1000`` (seeds 68_150_000 + r); about 8 and 5 minutes on one
core. Rows: ``studies/results/urc_pseudocount_shift_lab{300,1000}_raw.csv``; summary in
``studies/results/urc_pseudocount_variants.md`` (session 68).
"""

import sys
import warnings

import numpy as np
import pandas as pd

import puinfer as pu
from puinfer.simulate.urc import simulate_urc

TRUTH = np.array([0.2, 0.3, 0.5])


def run(replicates: int, n_lab: int) -> pd.DataFrame:
    rows = []
    for r in range(replicates):
        seed = 68_050_000 + r + (0 if n_lab == 300 else 100_000)
        sim = simulate_urc(n_lab=n_lab, n_field=3000, lab_base_rates=[0.5, 0.3, 0.2],
                           field_base_rate=TRUTH, lab_design="random", rng=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (empty lab cells: an EmptyBinWarning)
            m = pu.URC(sim.lab_pred, sim.lab_y)
        # ("default": the default of session 68, pinned since session 71 changed it)
        for variant, kw in (("default", {"lab_pseudocount": 0.5, "lab_prior": "pooled"}),
                            ("pc0", {"lab_pseudocount": 0.0})):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = m.fit(sim.field_pred, **kw)
                ci = res.conf_int().to_numpy()
                p = res.test_no_shift(value=TRUTH).pvalue
            est = res.base_rates.to_numpy().ravel()
            for c in range(3):
                rows.append(dict(seed=seed, nlab=n_lab, variant=variant, cls=c, est=est[c],
                                 lo=ci[c, 0], hi=ci[c, 1], p_value_truth=p))
    return pd.DataFrame(rows)


def summarise(d: pd.DataFrame) -> pd.DataFrame:
    t = TRUTH[d.cls]
    d = d.assign(cov=(d.lo <= t) & (t <= d.hi), below=d.hi < t, above=d.lo > t)
    g = d.groupby(["variant", "cls"]).agg(n=("cov", "size"), coverage=("cov", "mean"),
                                          below=("below", "mean"), above=("above", "mean"),
                                          mean=("est", "mean"), sd=("est", "std"))
    g["bias_in_sd"] = (g["mean"] - TRUTH[g.index.get_level_values("cls")]) / g["sd"]
    return g


if __name__ == "__main__":
    reps, n_lab = int(sys.argv[1]), int(sys.argv[2])
    d = run(reps, n_lab)
    d.to_csv(f"urc_pseudocount_shift_lab{n_lab}_raw.csv", index=False)
    print(summarise(d).round(4))
    one = d.drop_duplicates(["seed", "variant"])
    print((one.p_value_truth < 0.05).groupby(one.variant).mean().rename("rejects truth"))
