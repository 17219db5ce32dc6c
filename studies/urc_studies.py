"""Monte-Carlo studies of URC (Ziegler and Czyż, "Unsupervised Recalibration"): interval
coverage, test sizes, power of the GOF test.

Design (:func:`puinfer.simulate.urc.simulate_urc`): a binary classifier that is the Bayes
classifier of a Gaussian score model calibrated on a balanced lab set (separation ``delta``; at
``delta = 1.5`` its accuracy on a balanced set is 77%, AUC 0.86); the lab set is stratified
(half of each class); field classes are drawn with the field base rate. ``|A| = 4`` cells of
equal lab probability (eq. (11)).

1. **Coverage** of the 95% profile-likelihood interval of the field base rate (0.2) with a lab
   set of 200 (the scale of the paper's experiment) and of 100,000, field 5000: the joint
   likelihood (lab counts as data) beside the fixed-M_A likelihood (the paper's).
2. **Size** (5% level) of ``test_no_shift`` (field base rate = lab's = 0.5),
   ``test_equal_base_rates`` (three groups of 2000 with base rate 0.2) and ``gof`` (Axiom 2
   holds), for both likelihoods.
3. **Power** of ``gof`` when Axiom 2 is broken: the field scores within each class are spread
   more widely (``field_scale``) or shifted (``field_shift``) than in the lab.
4. **Multiclass**: coverage of the per-class 95% intervals with three classes (field base
   rates 0.6, 0.3, 0.1; balanced lab set of 300 or 3000; field 5000; |A| = 6), and the size of
   ``test_no_shift`` (field = lab = 1/3 each) and ``gof``.

Usage::

    nice python studies/urc_studies.py --reps 500          # the full study (~10 min)
    python studies/urc_studies.py --reps 20                 # a smoke run

Writes ``studies/results/urc_coverage.{csv,md}``, ``studies/results/urc_tests.{csv,md}`` and
``studies/results/urc_multiclass.{csv,md}``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from puinfer import URC
from puinfer.simulate.urc import simulate_urc

OUT = Path(__file__).resolve().parent / "results"
LIKS = ("joint", "fixed")


def to_markdown(df: pd.DataFrame, index: bool = True) -> str:
    """A GitHub-flavoured markdown table (no optional dependency)."""
    d = df.reset_index() if index else df
    cols = [str(c) for c in d.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in d.itertuples(index=False):
        lines.append("| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v)
                                       for v in row) + " |")
    return "\n".join(lines)


def mc_se(p, reps):
    return float(np.sqrt(max(p * (1 - p), 1e-12) / reps))


def coverage_cell(n_lab, n_field, rate, reps, rng, delta=1.5, alpha=0.05):
    rows = []
    for _ in range(reps):
        s = simulate_urc(n_lab=n_lab, n_field=n_field, lab_base_rates=0.5,
                         field_base_rate=rate, separation=delta, rng=rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = URC(s.lab_pred, s.lab_y, lab_design="stratified")
            for lik in LIKS:
                r = m.fit(s.field_pred, likelihood=lik)
                lo, hi = r.conf_int(alpha).iloc[0]
                rows.append(dict(likelihood=lik, est=r.base_rate.iloc[0], lower=lo, upper=hi,
                                 cover=lo <= rate <= hi, naive=r.naive.iloc[0, 1]))
    df = pd.DataFrame(rows)
    out = []
    for lik in LIKS:
        d = df[df.likelihood == lik]
        cov = d.cover.mean()
        out.append(dict(n_lab=n_lab, n_field=n_field, true_rate=rate, likelihood=lik, reps=reps,
                        coverage=cov, mc_se=mc_se(cov, reps),
                        miss_below=(d.upper < rate).mean(), miss_above=(d.lower > rate).mean(),
                        mean_width=(d.upper - d.lower).mean(), mean_est=d.est.mean(),
                        sd_est=d.est.std(), mean_naive=d.naive.mean()))
    return out


def tests_cell(reps, rng, *, n_lab=200, n_field=5000, rate=0.5, groups=1, field_scale=1.0,
               field_shift=0.0, delta=1.5, alpha=0.05):
    rej = {(lik, t): 0 for lik in LIKS for t in ("no_shift", "equal", "gof_pearson", "gof_lr")}
    for _ in range(reps):
        s = simulate_urc(n_lab=n_lab, n_field=[n_field] * groups, lab_base_rates=0.5,
                         field_base_rate=[rate] * groups, separation=delta,
                         field_scale=field_scale, field_shift=field_shift, rng=rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = URC(s.lab_pred, s.lab_y, lab_design="stratified")
            for lik in LIKS:
                r = m.fit(s.field_pred, groups=s.field_group, likelihood=lik)
                rej[lik, "no_shift"] += r.test_no_shift().pvalue < alpha
                if groups > 1:
                    rej[lik, "equal"] += r.test_equal_base_rates().pvalue < alpha
                rej[lik, "gof_pearson"] += r.gof("pearson").pvalue < alpha
                rej[lik, "gof_lr"] += r.gof("lr").pvalue < alpha
    rows = []
    for (lik, t), v in rej.items():
        if t == "equal" and groups == 1:
            continue
        p = v / reps
        rows.append(dict(n_lab=n_lab, n_field=n_field, groups=groups, field_rate=rate,
                         field_scale=field_scale, field_shift=field_shift, likelihood=lik,
                         test=t, reps=reps, rejection_rate=p, mc_se=mc_se(p, reps)))
    return rows


def multiclass_cell(n_lab, reps, rng, truth=(0.6, 0.3, 0.1), n_field=5000, delta=1.5):
    truth = np.asarray(truth)
    k = truth.size
    cover = np.zeros(k)
    est = []
    rej = {"no_shift": 0, "gof_pearson": 0}
    for _ in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = simulate_urc(n_lab=n_lab, n_field=n_field, lab_base_rates=np.full(k, 1 / k),
                             field_base_rate=truth, separation=delta, rng=rng)
            r = URC(s.lab_pred, s.lab_y, lab_design="stratified").fit(s.field_pred)
            ci = r.conf_int()
            cover += (ci["lower"].to_numpy() <= truth) & (truth <= ci["upper"].to_numpy())
            est.append(r.base_rates.iloc[0].to_numpy())
            s0 = simulate_urc(n_lab=n_lab, n_field=n_field, lab_base_rates=np.full(k, 1 / k),
                              field_base_rate=np.full(k, 1 / k), separation=delta, rng=rng)
            r0 = URC(s0.lab_pred, s0.lab_y, lab_design="stratified").fit(s0.field_pred)
            rej["no_shift"] += r0.test_no_shift().pvalue < 0.05
            rej["gof_pearson"] += r0.gof().pvalue < 0.05
    est = np.array(est)
    rows = [dict(n_lab=n_lab, n_field=n_field, cls=j, true_rate=truth[j], reps=reps,
                 coverage=cover[j] / reps, mc_se=mc_se(cover[j] / reps, reps),
                 mean_est=est[:, j].mean(), sd_est=est[:, j].std()) for j in range(k)]
    sizes = [dict(n_lab=n_lab, test=t, reps=reps, size=v / reps, mc_se=mc_se(v / reps, reps))
             for t, v in rej.items()]
    return rows, sizes


def run_multiclass(reps, seed=3):
    rng = np.random.default_rng(seed)
    cov, size = [], []
    for n_lab in (300, 3000):
        t0 = time.time()
        c, s = multiclass_cell(n_lab, reps, rng)
        cov += c
        size += s
        print(f"multiclass n_lab={n_lab}: {time.time() - t0:.0f} s", flush=True)
    return pd.DataFrame(cov), pd.DataFrame(size)


def run_coverage(reps, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for n_lab in (200, 100_000):
        t0 = time.time()
        rows += coverage_cell(n_lab, 5000, 0.2, reps, rng)
        print(f"coverage n_lab={n_lab}: {time.time() - t0:.0f} s", flush=True)
    return pd.DataFrame(rows)


def run_tests(reps, seed=2):
    rng = np.random.default_rng(seed)
    rows = []
    designs = [
        ("size: no shift, gof (1 group)", dict(rate=0.5)),
        ("size: no shift, gof (1 group, lab 2000)", dict(rate=0.5, n_lab=2000)),
        ("size: equal base rates, gof (3 groups of 2000, rate 0.2)",
         dict(rate=0.2, groups=3, n_field=2000)),
        ("power of gof: field_scale = 1.5", dict(rate=0.2, field_scale=1.5)),
        ("power of gof: field_scale = 1.5, lab 2000", dict(rate=0.2, field_scale=1.5,
                                                          n_lab=2000)),
        ("power of gof: field_shift = 0.5", dict(rate=0.2, field_shift=0.5)),
    ]
    for name, kw in designs:
        t0 = time.time()
        for r in tests_cell(reps, rng, **kw):
            r["design"] = name
            rows.append(r)
        print(f"{name}: {time.time() - t0:.0f} s", flush=True)
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--only", choices=["coverage", "tests", "multiclass"], default=None)
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    if args.only in (None, "coverage"):
        cov = run_coverage(args.reps)
        cov.to_csv(OUT / "urc_coverage.csv", index=False)
        with open(OUT / "urc_coverage.md", "w") as f:
            f.write(f"# URC: coverage of 95% profile-likelihood intervals ({args.reps} "
                    "replicates per row)\n\nField base rate 0.2, lab base rate 0.5 (stratified), "
                    "separation 1.5, |A| = 4. Generated by `studies/urc_studies.py`.\n\n")
            f.write(to_markdown(cov, index=False))
            f.write("\n")
        print(cov.round(4).to_string())
    if args.only in (None, "tests"):
        tst = run_tests(args.reps)
        tst.to_csv(OUT / "urc_tests.csv", index=False)
        wide = tst.pivot_table(index=["design", "test"], columns="likelihood",
                               values="rejection_rate").round(4)
        with open(OUT / "urc_tests.md", "w") as f:
            f.write(f"# URC: rejection rates at the 5% level ({args.reps} replicates per "
                    "design)\n\nField 5000 per group unless stated, lab 200 balanced unless "
                    "stated, separation 1.5, |A| = 4. Generated by `studies/urc_studies.py`."
                    "\n\n")
            f.write(to_markdown(wide))
            f.write("\n")
        print(wide.to_string())
    if args.only in (None, "multiclass"):
        cov, size = run_multiclass(args.reps)
        cov.to_csv(OUT / "urc_multiclass.csv", index=False)
        with open(OUT / "urc_multiclass.md", "w") as f:
            f.write(f"# URC with three classes ({args.reps} replicates per row)\n\n"
                    "Field base rates (0.6, 0.3, 0.1), field 5000, balanced lab, separation "
                    "1.5, |A| = 6 (arg max x 2 quantile bins), joint likelihood. Coverage of "
                    "the 95% profile interval of each class's base rate:\n\n")
            f.write(to_markdown(cov, index=False))
            f.write("\n\nSize at 5% (field = lab = 1/3 each):\n\n")
            f.write(to_markdown(size, index=False))
            f.write("\n")
        print(cov.round(4).to_string())
        print(size.round(4).to_string())


if __name__ == "__main__":
    main()
