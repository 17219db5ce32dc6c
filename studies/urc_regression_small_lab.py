"""RegressionURC at small lab sets: ten outcome intervals against the lab-size default (session 69).

Session 69's audit found that ``RegressionURC`` with ten outcome intervals (``2 K = 20`` cells)
puts all the field in one interval at small lab sets -- 20 of 20 fits at lab 100 without a
shift, 11 of 20 at lab 200, none from lab 300 -- and reported those fits as converged. Commit
957ea8f made the default ``n_intervals`` :func:`puinfer.models.urc.regression.default_n_intervals`
(``floor(sqrt(n_lab / 4))`` clipped to [2, 10]) and marks a penalised fit at such a corner not
converged, with a ConvergenceWarning. This study compares the two on the audit's design.

Design: ``simulate_urc_regression(n_lab, 5000, field_shift=s)`` (its defaults otherwise), lab
``n_lab`` in {50, 100, 200, 300, 500, 1000}, location shift ``s`` in {0.0, 0.5} SD, replicates
``r = 0 .. R-1`` with the audit's seeds ``np.random.default_rng([69, r, n_lab, int(10 * s)])``.
Each replicate is fitted twice with the default fit (pooled, penalised):

* ``K10``: ``RegressionURC(lab_pred, lab_y, n_intervals=10)`` (the old default);
* ``default``: ``RegressionURC(lab_pred, lab_y)`` (``n_intervals=None``: 3, 5, 7, 8, 10, 10
  intervals at the six lab sizes; identical to ``K10`` from lab 400).

Recorded per fit (one row): K, ``converged``, whether a ConvergenceWarning was issued (from the
results' ``warnings`` record, cross-checked against the warnings caught), the other warnings'
classes, whether the fit is a corner (largest share > 0.9), the estimated and true shares
(``sim.field_interval_rates(m.edges)``, the field's true interval shares for that fit's own
edges), their total-variation distance and root mean square error, and -- for ``default``
only, since profiling a K10 corner takes ~25 s -- the 95% profile intervals (``conf_int()``)
and whether each covers its true share (a ProfileError is recorded, not raised). Warnings are
silenced inside the loop.

Summary per (n_lab, shift, variant): corner rate, share not converged, share with a
ConvergenceWarning, mean TV, mean RMSE, and (``default``) the coverage over all (replicate,
interval) pairs with its binomial SE ``sqrt(p (1 - p) / pairs)`` -- nominal: the intervals of
one fit are not independent -- and the mean over fits of the share of intervals covered.

Run: ``OPENBLAS_NUM_THREADS=1 python studies/urc_regression_small_lab.py 40`` from the repository
root (the argument is the number of replicates, default 20). Rows:
``studies/results/urc_regression_small_lab_raw.csv``; summary table:
``studies/results/urc_regression_small_lab.md`` (both overwritten). Session 69 ran 40 replicates
(960 fits) in one process: 648 s CPU, 11.6 min wall on a shared two-core machine, with the code
of 64441c6 (the fit, profile and simulator unchanged since 957ea8f; 12 rows refitted at 53cbec8
agreed exactly). Replicates 0-19 of ``K10`` reproduce the audit's fits exactly.
"""

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import puinfer as pu
from puinfer.exceptions import ConvergenceWarning
from puinfer.simulate.urc_regression import simulate_urc_regression

N_LABS = (50, 100, 200, 300, 500, 1000)
SHIFTS = (0.0, 0.5)
VARIANTS = (("K10", 10), ("default", None))
N_FIELD = 5000
CORNER = 0.9
RESULTS = Path(__file__).resolve().parent / "results"


def _join(x) -> str:
    return ";".join(f"{v:.6g}" for v in np.asarray(x, dtype=float).ravel())


def fit_one(sim, n_lab: int, shift: float, rep: int, variant: str, n_intervals) -> dict:
    t0 = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = pu.RegressionURC(sim.lab_pred, sim.lab_y, n_intervals=n_intervals)
        r = m.fit(sim.field_pred)
    t_fit = time.process_time() - t0
    est = r.base_rates.to_numpy().ravel()
    truth = np.asarray(sim.field_interval_rates(m.edges), dtype=float).ravel()
    names = [w[0] for w in r.warnings]
    row = dict(n_lab=n_lab, shift=shift, rep=rep, variant=variant, K=int(m.n_intervals),
               converged=bool(r.convergence.converged),
               conv_warning=("ConvergenceWarning" in names),
               conv_warning_caught=any(issubclass(w.category, ConvergenceWarning) for w in caught),
               other_warnings=";".join(sorted(set(names) - {"ConvergenceWarning"})),
               corner=bool(est.max() > CORNER), max_share=float(est.max()),
               min_share=float(est.min()),
               tv=float(0.5 * np.abs(est - truth).sum()),
               rmse=float(np.sqrt(np.mean((est - truth) ** 2))),
               est=_join(est), truth=_join(truth), t_fit=t_fit)
    if variant == "default":
        t0 = time.process_time()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ci = r.conf_int()
            lo, hi = ci["lower"].to_numpy().ravel(), ci["upper"].to_numpy().ravel()
            cover = (lo <= truth) & (truth <= hi)
            row.update(lo=_join(lo), hi=_join(hi), cover=";".join(str(int(c)) for c in cover),
                       n_cover=int(cover.sum()), ci_error="")
        except Exception as e:  # (e.g. a ProfileError: the fit was not the maximum)
            row.update(lo="", hi="", cover="", n_cover=np.nan, ci_error=f"{type(e).__name__}: {e}")
        row["t_ci"] = time.process_time() - t0
    return row


def run(replicates: int) -> pd.DataFrame:
    rows = []
    for shift in SHIFTS:
        for n_lab in N_LABS:
            t0 = time.process_time()
            for rep in range(replicates):
                sim = simulate_urc_regression(n_lab, N_FIELD, field_shift=shift,
                                              rng=np.random.default_rng([69, rep, n_lab, int(10 * shift)]))
                for variant, n_intervals in VARIANTS:
                    rows.append(fit_one(sim, n_lab, shift, rep, variant, n_intervals))
            print(f"shift {shift}, lab {n_lab}: {replicates} replicates, "
                  f"{time.process_time() - t0:.0f} s CPU", flush=True)
    return pd.DataFrame(rows)


def summarise(d: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (n_lab, shift, variant), g in d.groupby(["n_lab", "shift", "variant"], sort=False):
        row = {"lab": n_lab, "shift": shift, "variant": variant,
               "K": ",".join(str(k) for k in sorted(g.K.unique())), "fits": len(g),
               "corner": g.corner.mean(), "not conv.": 1 - g.converged.mean(),
               "ConvWarn": g.conv_warning.mean(), "mean TV": g.tv.mean(), "mean RMSE": g.rmse.mean()}
        if variant == "default":
            ok = g[g.ci_error == ""]
            pairs = int(ok.K.sum())
            p = ok.n_cover.sum() / pairs if pairs else np.nan
            row.update({"coverage": p, "SE": np.sqrt(p * (1 - p) / pairs) if pairs else np.nan,
                        "cov./fit": (ok.n_cover / ok.K).mean(), "min cov./fit": (ok.n_cover / ok.K).min(),
                        "CI errors": int((g.ci_error != "").sum())})
        out.append(row)
    order = {v: i for i, (v, _) in enumerate(VARIANTS)}
    s = pd.DataFrame(out)
    return s.sort_values(["shift", "lab", "variant"], ignore_index=True,
                         key=lambda c: c.map(order) if c.name == "variant" else c)


def to_markdown(s: pd.DataFrame) -> str:
    def cell(v, col):
        if isinstance(v, float) and np.isnan(v):
            return ""
        if col == "shift":
            return f"{v:.1f}"
        if col == "CI errors":
            return f"{v:.0f}"
        if isinstance(v, float):
            return f"{v:.3f}"
        return str(v)
    cols = list(s.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(cell(v, c) for v, c in zip(row, cols, strict=True)) + " |"
              for row in s.itertuples(index=False)]
    return "\n".join(lines)


if __name__ == "__main__":
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    cpu0, wall0 = time.process_time(), time.time()
    d = run(reps)
    cpu, wall = time.process_time() - cpu0, time.time() - wall0
    RESULTS.mkdir(exist_ok=True)
    d.to_csv(RESULTS / "urc_regression_small_lab_raw.csv", index=False)
    s = summarise(d)
    table = to_markdown(s)
    mismatch = int((d.conv_warning != d.conv_warning_caught).sum())
    text = (f"# RegressionURC at small lab sets: K = 10 against the lab-size default (session 69)\n\n"
            f"`studies/urc_regression_small_lab.py` ({reps} replicates per cell, seeds "
            f"`default_rng([69, r, n_lab, int(10 * shift)])`, field 5000; {len(d)} fits, "
            f"{cpu:.0f} s CPU, {wall:.0f} s wall). Raw rows: `urc_regression_small_lab_raw.csv`.\n\n"
            "corner: largest estimated share > 0.9; not conv.: `converged=False`; ConvWarn: a "
            "ConvergenceWarning recorded; TV and RMSE of the estimated interval shares against the "
            "field's true shares for the fit's own edges; coverage: 95% profile intervals "
            "(`conf_int()`, default variant only) over all (replicate, interval) pairs, SE its "
            "binomial SE (nominal: one fit's intervals are dependent); cov./fit: mean over fits "
            "of the share of intervals covered, min cov./fit its smallest.\n\n"
            + table + "\n\n"
            f"ConvergenceWarning in the results' record but not caught, or the reverse: {mismatch} fits.\n")
    (RESULTS / "urc_regression_small_lab.md").write_text(text)
    print(table)
    print(f"\n{len(d)} fits, {cpu:.1f} s CPU, {wall:.1f} s wall; "
          f"warning record/caught mismatches: {mismatch}")
