"""Table 1 of Sergazinov et al. (Section 5.1) rerun and compared: CalEM vs the spline baseline.

Not a reproduction: the measured gains are in most cells 2-5 times smaller than the paper's
(62 of 80 cells more than 3 Monte-Carlo standard errors from it at df = 5, 67 of 80 below it;
the ``.md`` written says how far, cell by cell). What the paper leaves open and this design
fills in: its baseline "GAM" (a spline calibrator of Gupta et al. 2021, smoothing not given) is
here an unpenalised natural cubic spline of logit(score) with ``--df`` knots, Beta(alpha,
beta)'s parameters (not given) are alpha = 1, beta = (1 - P) / P, and the "L2 error" (not
defined further) is the root mean square over the rows' scores. A helper's check (session 83)
of six definitions of the error (norm or its square; over the scores, a uniform score grid or
a uniform grid of true probabilities) moved single cells a lot (g1/h1/P=0.5/10%: 17% as a
norm, 29% squared) but reached none of the paper's g2 gains (g2/h2/P=0.3/10%: -34% to +2%
against +31.8%).

Design (Sergazinov et al., Section 5.1): p ~ Beta(alpha, beta) with E[p] = P in {0.5, 0.4, 0.3, 0.2}
(Table 1's "P(Y)"; alpha = 1, beta = (1 - P)/P: the paper does not give alpha, beta; E[p] is
P(Z = 1), the biased label's rate: the clean rate P(Y = 1) is lower, see
puinfer.simulate.calem.clean_event_rate), z ~ Bernoulli(p),
y = z * Bernoulli(1 - h(p)), score = ginv(p - h(p) p) with miscalibration g1 (over-confident
sigmoid) or g2 (p^3) and transition h1 = 0.5 p^2 or h2 = 0.3 * 1{p >= 0.3}; 10,000 rows of
which 10%-50% form the clean control set. Baseline: the spline calibrator (natural cubic
regression spline of logit(score), df knots) fitted on the control rows; CalEM: the same
calibrator fitted by Algorithm 3 on all rows. Error: L2 distance to the oracle curve g over
the empirical score distribution of the 10,000 rows, sqrt(mean (g_hat(s_i) - g(s_i))^2).
Improvement: (L_base - L_EM) / L_base * 100%, averaged over replicates; paired t-test of the
L2 errors (two-sided, 5%).

Usage::

    nice python studies/calem_table1.py --reps 100            # the full table
    python studies/calem_table1.py --reps 5 --quick           # a smoke run

Writes ``studies/results/calem_table1.csv`` (every cell, with more columns) and
``studies/results/calem_table1.md`` (the table beside the paper's, and how far apart they are).
``--render`` rewrites the ``.md`` from the ``.csv`` already written (no simulation).
"""

from __future__ import annotations

import argparse
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from puinfer.models.calem import CalEM
from puinfer.simulate.calibration import oracle_curve, simulate_calem

OUT = Path(__file__).resolve().parent / "results"

# Table 1 of Sergazinov et al.: rows (h, share), columns (g, P(Y)); "*" = significant at 5%.
# The paper's h2 50% row repeats its h2 10% row digit for digit (both text extractions of the
# paper, seed 001): most likely a typesetting error, compared here as printed and flagged.
PAPER = {
    ("h1", 0.1): "+35.55%* +24.49%* +32.00%* +11.26%* +21.62%* +47.51%* +46.96%* +52.82%*",
    ("h1", 0.2): "+21.14%* +18.68%* +19.45%* +7.17% +23.97%* +33.13%* +48.55%* +32.87%*",
    ("h1", 0.3): "+20.12%* +24.23%* +23.18%* -3.62% +18.79%* +12.91% +52.48%* +33.40%*",
    ("h1", 0.4): "+12.49%* +12.31%* +10.30%* +15.46%* +15.03%* +22.21% +27.56%* +38.04%*",
    ("h1", 0.5): "+4.94% +7.12%* +2.12% +4.82% +8.58%* +4.46% +20.08%* +25.09%*",
    ("h2", 0.1): "+3.95%* +2.62%* +4.77%* +2.94% +4.93%* +12.23%* +31.84%* +17.34%*",
    ("h2", 0.2): "+7.98%* +6.56%* +10.32%* +8.92%* +19.60%* +23.98%* +46.98%* +43.49%*",
    ("h2", 0.3): "+7.32%* +4.27%* +5.03%* +4.55%* +11.63%* +14.61%* +28.72%* +29.33%*",
    ("h2", 0.4): "+3.39%* +8.04%* +1.44% +0.79% +6.56%* +20.18%* +15.64%* +28.13%*",
    ("h2", 0.5): "+3.95%* +2.62%* +4.77%* +2.94% +4.93%* +12.23%* +31.84%* +17.34%*",
}
GS, PS = ("g1", "g2"), (0.5, 0.4, 0.3, 0.2)


def one_cell(h, share, g, P, reps, rng, df, lam, n):
    lb, le, lp, clip, conv = [], [], [], [], []
    for _ in range(reps):
        d = simulate_calem(n, event_prob=P, miscalibration=g, transition=h, clean_share=share,
                           rng=rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Assumption-1 doubts etc. are recorded on r
            r = CalEM(d["score"].to_numpy(), d["label"].to_numpy(), d["treated"].to_numpy(),
                      calibrator="spline", df=df, lam=lam).fit()
        s = d["score"].to_numpy()
        truth = oracle_curve(s, g)
        lb.append(np.sqrt(np.mean((r.predict_baseline(s) - truth) ** 2)))
        le.append(np.sqrt(np.mean((r.predict(s) - truth) ** 2)))
        lp.append(np.sqrt(np.mean((r.pooled.predict(s) - truth) ** 2)))
        clip.append(r.share_clipped_positives)
        conv.append(r.converged)
    lb, le, lp = map(np.asarray, (lb, le, lp))
    imp = (lb - le) / lb * 100
    t = stats.ttest_rel(lb, le)
    return {"h": h, "share": share, "g": g, "P": P, "reps": reps,
            "L2_baseline": lb.mean(), "L2_calem": le.mean(), "L2_pooled": lp.mean(),
            "improvement_pct": imp.mean(), "improvement_se": imp.std(ddof=1) / np.sqrt(reps),
            "ratio_of_means_pct": (lb.mean() - le.mean()) / lb.mean() * 100,
            "t": t.statistic, "pvalue": t.pvalue, "share_clipped_pos": np.mean(clip),
            "converged": np.mean(conv)}


def fmt(v, p):
    return f"{v:+.2f}%" + ("*" if p < 0.05 else "")


def paper_value(h, share, g, P) -> float:
    """The paper's mean percent improvement in cell ``(h, share, g, P)``."""
    cell = PAPER[(h, share)].split()[[(gg, PP) for gg in GS for PP in PS].index((g, P))]
    return float(cell.rstrip("*%"))


def comparison(res: pd.DataFrame) -> list[str]:
    """How far the measured table is from the paper's: each cell's distance in the study's own
    Monte-Carlo standard errors, ``z = (measured - paper) / improvement_se``."""
    paper = np.array([paper_value(r.h, r.share, r.g, r.P) for r in res.itertuples()])
    z = (res.improvement_pct.to_numpy() - paper) / res.improvement_se.to_numpy()
    pos = paper > 0
    ratio = np.median(res.improvement_pct.to_numpy()[pos] / paper[pos])
    return [
        f"**Not reproduced.** Of {len(z)} cells, {np.sum(np.abs(z) > 3)} differ from the paper's "
        f"by more than 3 Monte-Carlo standard errors of the measured mean ({np.sum(z < -3)} "
        f"below it, {np.sum(z > 3)} above); {np.sum(z < 0)} of {len(z)} are below it; the "
        f"median z is {np.median(z):.1f}, and the median ratio measured / paper (cells where "
        f"the paper's gain is positive) {ratio:.2f}. CalEM improves on the control-only fit in "
        f"{np.sum((res.improvement_pct > 0) & (res.pvalue < 0.05))} of {len(z)} cells "
        "(significant at 5%), as the paper finds, but by less. What the paper leaves open "
        "(its GAM baseline's smoothing, Beta(alpha, beta)'s parameters, the L2 error's exact "
        "definition) is filled in as the script's docstring says; which choice explains the "
        "gap is not known.",
        "",
        "The paper's h2 50% row repeats its h2 10% row digit for digit (a typesetting error, "
        "most likely); it is compared as printed.",
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--df", type=int, default=5)
    ap.add_argument("--lam", type=float, default=0.0)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=20240813)
    ap.add_argument("--quick", action="store_true", help="only the 10%% and 50%% rows")
    ap.add_argument("--tag", default="")
    ap.add_argument("--render", action="store_true",
                    help="rewrite the .md from the .csv already written (same --tag; the "
                         "settings are read from the .md's header)")
    a = ap.parse_args(argv)
    stem = f"calem_table1{a.tag}"
    t0 = time.time()
    if a.render:
        res = pd.read_csv(OUT / f"{stem}.csv")
        shares = tuple(sorted(res.share.unique()))
        # the settings as the table was simulated with (the CSV does not hold them: the
        # .md's header does; command-line flags would mislabel it)
        old = re.search(r"spline df=(\d+), lam=([^,]+), n=(\d+), seed=(\d+); (\d+) s\)",
                        (OUT / f"{stem}.md").read_text())
        if old is None:
            raise SystemExit(f"--render: no settings found in {stem}.md's header")
        a.df, a.lam, a.n, a.seed = int(old[1]), float(old[2]), int(old[3]), int(old[4])
        seconds = old[5]
    else:
        rng = np.random.default_rng(a.seed)
        shares = (0.1, 0.5) if a.quick else (0.1, 0.2, 0.3, 0.4, 0.5)
        rows = []
        for h in ("h1", "h2"):
            for share in shares:
                for g in GS:
                    for P in PS:
                        rows.append(one_cell(h, share, g, P, a.reps, rng, a.df, a.lam, a.n))
                print(f"{h} {share:.0%} done ({time.time() - t0:.0f} s)", flush=True)
        res = pd.DataFrame(rows)
        OUT.mkdir(exist_ok=True)
        res.to_csv(OUT / f"{stem}.csv", index=False)
        seconds = f"{time.time() - t0:.0f}"
    reps = int(res.reps.iloc[0])
    lines = [f"# Table 1 of Sergazinov et al. rerun and compared ({reps} replicates per cell, "
             f"spline df={a.df}, lam={a.lam}, n={a.n}, seed={a.seed}; {seconds} s)", "",
             "Mean percent improvement in L2 error of CalEM over the control-only spline; "
             "* = paired t-test p < 0.05. Each cell: **measured** / paper.", "",
             *comparison(res), "",
             "| h | % | " + " | ".join(f"{g} P={P}" for g in GS for P in PS) + " |",
             "|---|---|" + "---|" * 8]
    for h in ("h1", "h2"):
        for share in shares:
            paper = PAPER[(h, share)].split()
            cells = []
            for j, (g, P) in enumerate((g, P) for g in GS for P in PS):
                r = res[(res.h == h) & (res.share == share) & (res.g == g) & (res.P == P)].iloc[0]
                cells.append(f"**{fmt(r.improvement_pct, r.pvalue)}** / {paper[j]}")
            lines.append(f"| {h} | {share:.0%} | " + " | ".join(cells) + " |")
    lines += ["", "Mean L2 errors, baseline / CalEM / pooled fit treating z as clean:", "",
              "| h | % | " + " | ".join(f"{g} P={P}" for g in GS for P in PS) + " |",
              "|---|---|" + "---|" * 8]
    for h in ("h1", "h2"):
        for share in shares:
            cells = []
            for g in GS:
                for P in PS:
                    r = res[(res.h == h) & (res.share == share) & (res.g == g)
                            & (res.P == P)].iloc[0]
                    cells.append(f"{r.L2_baseline:.4f} / {r.L2_calem:.4f} / {r.L2_pooled:.4f}")
            lines.append(f"| {h} | {share:.0%} | " + " | ".join(cells) + " |")
    (OUT / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
