"""URC's default lab pseudo-counts: a declared study over sparse no-shift and shift cells
(session 71).

Question: which default for ``URC.fit(lab_pseudocount=..., lab_prior=...)`` (classification
URC, joint likelihood) gives 95% profile intervals that hold their level both in sparse lab
cells without a shift (where maximum likelihood undercovers, ``urc_labdesign.py``) and under a
large shift with unequal lab base rates (where the current default biases the base rates,
``urc_pseudocount_shift.py``)? Declared (this docstring, cells, candidates, seeds, metrics and
decision rule) before the runs at scale; a copy was saved before them.

Design
------
Data: :func:`puinfer.simulate.urc.simulate_urc` (separation 1.5, field n = 3000, one field
group), the lab design given to both the simulator and ``URC(lab_design=...)``; ``URC``'s
default ``n_bins`` (so |A| = 3 at lab n = 100 and 6 at lab n = 300 with three classes; 3 with
two classes at lab n = 100). Binary cells pass scalar base rates ``P(Y = 1)`` as
``urc_labdesign.py`` does; the tables report class 1 only (class 0's interval is its mirror).

Cells (index, classes, lab n, lab design, lab base rates -> field base rates):

====  ===  =====  ==========  =================  =================  =====================
cell   k   n_lab  design      lab                field              kind
====  ===  =====  ==========  =================  =================  =====================
0      3   100    random      (0.5, 0.3, 0.2)    (0.5, 0.3, 0.2)    sparse, no shift
1      3   100    stratified  (0.5, 0.3, 0.2)    (0.5, 0.3, 0.2)    sparse, no shift
2      3   300    random      (0.5, 0.3, 0.2)    (0.5, 0.3, 0.2)    sparse, no shift
3      3   300    stratified  (0.5, 0.3, 0.2)    (0.5, 0.3, 0.2)    sparse, no shift
4      2   100    random      (0.7, 0.3)         (0.7, 0.3)         sparse, no shift
5      3   300    random      (0.5, 0.3, 0.2)    (0.2, 0.3, 0.5)    large shift (s68)
6      3   100    random      (0.5, 0.3, 0.2)    (0.2, 0.3, 0.5)    large shift (s68)
7      3   100    random      (0.4, 0.3, 0.3)    (0.3, 0.3, 0.4)    moderate shift
8      2   100    random      (0.7, 0.3)         (0.4, 0.6)         binary shift
====  ===  =====  ==========  =================  =================  =====================

Cells 0-4 are the sparse no-shift cells of ``urc_labdesign.py`` (its cells 6, 7, 8, 9 and 0;
new seeds here); cell 5 is session 68's cell (``urc_pseudocount_shift.py``, new seeds).

Candidates (every one fitted on the same data set of each replicate: a paired design; ``A`` is
the fitted model's number of cells, ``URC(...).partition.n_cells``):

* ``pooled_half`` -- the current default, ``lab_pseudocount=0.5, lab_prior="pooled"``: |A|/2
  pseudo-items per class spread as the pooled lab histogram;
* ``ml`` -- ``lab_pseudocount=0`` (maximum likelihood);
* ``uniform_half`` -- ``lab_pseudocount=0.5, lab_prior="uniform"`` (Jeffreys/Firth, the
  default before issue 14's fourth round);
* ``perks`` -- Perks' prior, 1/|A| per cell: ``lab_pseudocount=1/A, lab_prior="uniform"``
  (exactly ``C[i, a] = 1/|A|``; total 1 per class; no patching needed);
* ``pooled_one`` -- ``lab_pseudocount=1/A, lab_prior="pooled"``: one pseudo-item per class
  (instead of |A|/2) spread as the pooled lab histogram, ``C[i, a] = h[a]``.

Seeds and replicates: replicate ``r`` of cell ``c`` simulates with ``rng = 71_000_000 +
10_000 * c + r``. Target 1000 replicates per cell (SE of a 0.95 coverage 0.0069); the cost
measured before the runs (smoke run, 4 replicates per cell: 0.10-0.38 CPU s per replicate by
cell for all five candidates, about 2.1 s per round of the nine cells with the simulation) puts
9 x 1000 replicates at about 35 CPU minutes, which fits the session's budget (one core, about
100 minutes), so R = 1000 is the declared number; if the session's wall-time limit stops the
runs earlier, every cell is run to the same number of replicates (replicates interleave the
cells: round r of all cells before round r + 1), the analysis uses the replicates 0..R'-1
present in every cell, and R' is reported. No replicate is dropped or rerun.

Metrics (per cell x candidate x class): coverage of the 95% profile interval
``res.conf_int()`` (``lower <= truth <= upper``), misses below (``upper < truth``) and above
(``lower > truth``), mean, bias, SD, bias in SD units, RMSE of the estimate
``res.base_rates``; per cell x candidate: rejection rate at 5% of
``res.test_no_shift(value=truth)`` (truth = the field base rates), convergence failures,
seconds.

Decision rule (declared before the runs)
----------------------------------------
Classes entering the rule: all three in three-class cells, class 1 in binary cells (23
cell-classes). For candidate ``m``: ``shortfall(m) = max over the 23 cell-classes of max(0,
0.95 - coverage)``.

1. Eligibility: a candidate whose ``test_no_shift(value=truth)`` size exceeds 0.080 in any
   cell is ineligible (unless every candidate is).
2. Primary: the smallest ``shortfall`` among the eligible candidates, ``S*``. Candidates with
   ``shortfall <= S* + 0.005`` are tied.
3. Ties: if the current default (``pooled_half``) is tied, it stays (a change needs evidence
   beyond Monte-Carlo noise). Otherwise the tied candidate with the smallest mean over the 23
   cell-classes of ``RMSE(m) / RMSE(pooled_half)`` is chosen.

Not part of the rule (reported only): the sum of shortfalls, the paired McNemar-type SEs of
coverage differences against the current default, and the test sizes.

Usage (``PYTHONPATH`` = the repository root, ``OPENBLAS_NUM_THREADS=1``)::

    python urc_pc_default.py --reps 3 --out /tmp/x          # smoke run
    python urc_pc_default.py --reps 1000 --max-seconds 540  # resumable chunks, repeated
    python urc_pc_default.py --report                       # tables from the CSV

Writes ``<out>/urc_pc_default_raw.csv`` (one row per replicate x candidate x class;
appended as replicates come, and a rerun resumes where the CSV stops) and, with ``--report``,
``<out>/urc_pc_default.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from puinfer import URC
from puinfer.simulate.urc import simulate_urc

OUT = Path(__file__).resolve().parent / "results"
RAW = "urc_pc_default_raw.csv"
N_FIELD = 3000
SEP = 1.5
SEED0 = 71_000_000
LEVEL = 0.95
SIZE_CAP = 0.080
TIE = 0.005
DEFAULT = "pooled_half"

CELLS = [
    dict(k=3, n_lab=100, design="random", lab=(0.5, 0.3, 0.2), field=(0.5, 0.3, 0.2),
         kind="sparse, no shift"),
    dict(k=3, n_lab=100, design="stratified", lab=(0.5, 0.3, 0.2), field=(0.5, 0.3, 0.2),
         kind="sparse, no shift"),
    dict(k=3, n_lab=300, design="random", lab=(0.5, 0.3, 0.2), field=(0.5, 0.3, 0.2),
         kind="sparse, no shift"),
    dict(k=3, n_lab=300, design="stratified", lab=(0.5, 0.3, 0.2), field=(0.5, 0.3, 0.2),
         kind="sparse, no shift"),
    dict(k=2, n_lab=100, design="random", lab=(0.7, 0.3), field=(0.7, 0.3),
         kind="sparse, no shift"),
    dict(k=3, n_lab=300, design="random", lab=(0.5, 0.3, 0.2), field=(0.2, 0.3, 0.5),
         kind="large shift (s68)"),
    dict(k=3, n_lab=100, design="random", lab=(0.5, 0.3, 0.2), field=(0.2, 0.3, 0.5),
         kind="large shift (s68)"),
    dict(k=3, n_lab=100, design="random", lab=(0.4, 0.3, 0.3), field=(0.3, 0.3, 0.4),
         kind="moderate shift"),
    dict(k=2, n_lab=100, design="random", lab=(0.7, 0.3), field=(0.4, 0.6),
         kind="binary shift"),
]


def candidates(A: int) -> dict:
    """The fit keywords of each candidate for a model with ``A`` cells."""
    return {"pooled_half": dict(lab_pseudocount=0.5, lab_prior="pooled"),
            "ml": dict(lab_pseudocount=0.0),
            "uniform_half": dict(lab_pseudocount=0.5, lab_prior="uniform"),
            "perks": dict(lab_pseudocount=1.0 / A, lab_prior="uniform"),
            "pooled_one": dict(lab_pseudocount=1.0 / A, lab_prior="pooled")}


CANDIDATES = list(candidates(1))


def classes(k: int) -> list:
    return [1] if k == 2 else list(range(k))


def one_replicate(c: int, r: int) -> list:
    cell = CELLS[c]
    k = cell["k"]
    seed = SEED0 + 10_000 * c + r
    lab, field = np.asarray(cell["lab"]), np.asarray(cell["field"])
    s = simulate_urc(n_lab=cell["n_lab"], n_field=N_FIELD,
                     lab_base_rates=lab[1] if k == 2 else lab,
                     field_base_rate=field[1] if k == 2 else field, separation=SEP,
                     rng=seed, lab_design=cell["design"])
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = URC(s.lab_pred, s.lab_y, lab_design=cell["design"])
        A = m.partition.n_cells
        for name, kw in candidates(A).items():
            t0 = time.process_time()
            res = m.fit(s.field_pred, **kw)
            ci = res.conf_int(1 - LEVEL).to_numpy()
            p = res.test_no_shift(value=field).pvalue
            sec = time.process_time() - t0
            est = res.base_rates.iloc[0].to_numpy()
            for j, (lo, hi) in zip(classes(k), ci, strict=True):
                rows.append(dict(cell=c, rep=r, seed=seed, cand=name, cls=j, A=A,
                                 truth=field[j], est=est[j], lower=lo, upper=hi,
                                 p_truth=p, converged=bool(res.converged),
                                 cpu_seconds=sec))
    return rows


def run(reps: int, out: Path, max_seconds: float, only=None, raw: str = RAW,
        replicate=None, **to_csv) -> None:
    """Fit replicates ``0..reps-1`` of every cell (of ``only``) by ``replicate(c, r)`` (default
    :func:`one_replicate`; its rows), appending to ``out / raw`` (``to_csv``: options of each
    append) and skipping those already there; stops after ``max_seconds``."""
    replicate = one_replicate if replicate is None else replicate
    path = out / raw
    have = set()
    if path.exists():
        d = pd.read_csv(path, usecols=["cell", "rep"])
        have = set(zip(d.cell, d.rep, strict=True))
    t0 = time.time()
    cpu0 = time.process_time()
    n = 0
    for r in range(reps):  # interleaved: round r of every cell before round r + 1
        for c in range(len(CELLS)):
            if (c, r) in have or (only is not None and c not in only):
                continue
            if time.time() - t0 > max_seconds:
                print(f"stopped at the time limit: {n} new replicates, "
                      f"{time.process_time() - cpu0:.0f} CPU s", flush=True)
                return
            df = pd.DataFrame(replicate(c, r))
            df.to_csv(path, mode="a", header=not path.exists(), index=False, **to_csv)
            n += 1
        if (r + 1) % 25 == 0:
            print(f"round {r + 1}: {n} new replicates, {time.time() - t0:.0f} s wall, "
                  f"{time.process_time() - cpu0:.0f} CPU s", flush=True)
    print(f"done: {n} new replicates, {time.process_time() - cpu0:.0f} CPU s", flush=True)


# -- analysis -----------------------------------------------------------------------------------
def load(out: Path) -> tuple[pd.DataFrame, int]:
    """The raw rows restricted to replicates 0..R'-1 present in every cell and candidate."""
    # (the repository keeps the rows gzipped, floats to 10 significant digits)
    return complete(pd.read_csv(out / RAW if (out / RAW).exists() else out / (RAW + ".gz")))


def complete(d: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Rows ``d`` restricted to replicates 0..R'-1 complete (every candidate) in every cell."""
    done = d.groupby(["cell", "rep"]).cand.nunique()
    done = done[done == len(CANDIDATES)].reset_index()
    R = min(int(done[done.cell == c].rep.max()) + 1 if (done.cell == c).any() else 0
            for c in range(len(CELLS)))
    # every rep below R must be complete in every cell
    for c in range(len(CELLS)):
        reps = set(done[done.cell == c].rep)
        R = min(R, next((i for i in range(R) if i not in reps), R))
    return d[d.rep < R].copy(), R


def mc_se(p, n):
    return np.sqrt(np.maximum(p * (1 - p), 1e-12) / n)


def cell_table(d: pd.DataFrame) -> pd.DataFrame:
    d = d.assign(cov=(d.lower <= d.truth) & (d.truth <= d.upper), below=d.upper < d.truth,
                 above=d.lower > d.truth, err=d.est - d.truth)
    rows = []
    for (c, cand, j), g in d.groupby(["cell", "cand", "cls"]):
        sd = g.est.std()
        rows.append(dict(cell=c, cand=cand, cls=j, truth=g.truth.iloc[0], reps=len(g),
                         coverage=g["cov"].mean(), below=g.below.mean(), above=g.above.mean(),
                         mean=g.est.mean(), bias=g.err.mean(), sd=sd,
                         bias_sd=g.err.mean() / sd, rmse=float(np.sqrt((g.err ** 2).mean()))))
    return pd.DataFrame(rows)


def size_table(d: pd.DataFrame) -> pd.DataFrame:
    one = d.drop_duplicates(["cell", "rep", "cand"])
    g = one.groupby(["cell", "cand"])
    t = pd.DataFrame({"reps": g.size(), "size": g.p_truth.apply(lambda p: (p < 0.05).mean()),
                      "nonconverged": g.converged.apply(lambda x: int((~x).sum())),
                      "cpu_s_per_fit": g.cpu_seconds.mean()})
    return t.reset_index()


def decide(ct: pd.DataFrame, st: pd.DataFrame) -> tuple[pd.DataFrame, str, list]:
    short = ct.assign(short=np.maximum(0.0, LEVEL - ct.coverage))
    ref = ct[ct.cand == DEFAULT].set_index(["cell", "cls"]).rmse
    short["rel_rmse"] = short.rmse.to_numpy() / ref.loc[
        list(zip(short.cell, short.cls, strict=True))].to_numpy()
    worst = short.loc[short.groupby("cand").short.idxmax()].set_index("cand")
    s = pd.DataFrame({
        "max_shortfall": short.groupby("cand").short.max(),
        "worst_cell_class": worst.apply(lambda r: f"{int(r.cell)}/{int(r.cls)}", axis=1),
        "sum_shortfall": short.groupby("cand").short.sum(),
        "min_coverage": short.groupby("cand").coverage.min(),
        "max_size": st.groupby("cand")["size"].max(),
        "mean_rel_rmse": short.groupby("cand").rel_rmse.mean()})
    s["eligible"] = s.max_size <= SIZE_CAP
    if not s.eligible.any():
        s["eligible"] = True
    el = s[s.eligible]
    best = el.max_shortfall.min()
    tied = list(el.index[el.max_shortfall <= best + TIE + 1e-12])
    s["tied"] = s.index.isin(tied)
    if DEFAULT in tied:
        choice = DEFAULT
    else:
        choice = el.loc[tied].mean_rel_rmse.idxmin()
    return s.loc[CANDIDATES], choice, tied


def paired_table(d: pd.DataFrame) -> pd.DataFrame:
    """Coverage difference (candidate - current default) per cell-class with its paired SE."""
    d = d.assign(cov=((d.lower <= d.truth) & (d.truth <= d.upper)).astype(int))
    w = d.pivot_table(index=["cell", "cls", "rep"], columns="cand", values="cov")
    rows = []
    for (c, j), g in w.groupby(level=["cell", "cls"]):
        n = len(g)
        for cand in CANDIDATES:
            if cand == DEFAULT:
                continue
            diff = g[cand] - g[DEFAULT]
            rows.append(dict(cell=c, cls=j, cand=cand, diff=diff.mean(),
                             se=float(np.sqrt(((diff - diff.mean()) ** 2).sum() / (n - 1) / n)),
                             only_cand=int((diff > 0).sum()), only_default=int((diff < 0).sum())))
    return pd.DataFrame(rows)


def to_markdown(df: pd.DataFrame, floatfmt="{:.4g}") -> str:
    d = df.reset_index(drop=True) if df.index.name is None else df.reset_index()
    cols = [str(c) for c in d.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in d.itertuples(index=False):
        lines.append("| " + " | ".join(floatfmt.format(v) if isinstance(v, float) else str(v)
                                       for v in row) + " |")
    return "\n".join(lines)


def report(out: Path) -> str:
    d, R = load(out)
    ct, st = cell_table(d), size_table(d)
    summ, choice, tied = decide(ct, st)
    cells = pd.DataFrame([dict(cell=i, k=c["k"], n_lab=c["n_lab"], design=c["design"],
                               lab=str(c["lab"]), field=str(c["field"]), kind=c["kind"],
                               A=int(d[d.cell == i].A.iloc[0]) if (d.cell == i).any() else -1)
                          for i, c in enumerate(CELLS)])
    md = ["# URC: choosing the default lab pseudo-counts (declared study, session 71)\n",
          "Generated by `urc_pc_default.py --report`; design, candidates, seeds and the "
          "decision rule are in its docstring (declared before the runs). "
          f"Replicates per cell used: R' = {R} (replicates 0..{R - 1} of every cell, "
          "every candidate fitted on the same data). Monte-Carlo SE of a coverage of 0.95: "
          f"{mc_se(0.95, max(R, 1)):.4f}. Binary cells: class 1.\n",
          "## Cells\n", to_markdown(cells), "",
          "## Decision\n",
          to_markdown(summ.reset_index().rename(columns={"index": "cand"})), "",
          f"Tied (max shortfall within {TIE} of the best eligible): {', '.join(tied)}. "
          f"**Rule's choice: `{choice}`**"
          + (" (the current default: no change)." if choice == DEFAULT else "."), "",
          "## Coverage, misses, bias and RMSE per cell x candidate x class\n"]
    ct = ct.assign(cand=pd.Categorical(ct.cand, CANDIDATES)).sort_values(["cell", "cls", "cand"])
    md += [to_markdown(ct[["cell", "cls", "truth", "cand", "reps", "coverage", "below", "above",
                           "bias", "sd", "bias_sd", "rmse"]]), ""]
    st = st.assign(cand=pd.Categorical(st.cand, CANDIDATES)).sort_values(["cell", "cand"])
    md += ["## Size of `test_no_shift(value=truth)` at 5%, convergence, cost\n",
           to_markdown(st), ""]
    pt = paired_table(d)
    pt = pt.assign(cand=pd.Categorical(pt.cand, CANDIDATES)).sort_values(["cell", "cls", "cand"])
    md += ["## Paired coverage differences against the current default\n",
           "`diff` = coverage(candidate) - coverage(pooled_half) on the same replicates; `se` "
           "its paired SE; `only_cand` / `only_default`: replicates covered by one only.\n",
           to_markdown(pt), ""]
    text = "\n".join(md) + "\n"
    (out / "urc_pc_default.md").write_text(text)
    return text


def study_parser(doc: str, out: Path = OUT) -> argparse.ArgumentParser:
    """The options of this study's runs, shared by the studies that rerun its cells
    (``urc_midpoint_cuts.py``, ``urc_pc_default_newcuts.py``): ``--reps``, ``--out``,
    ``--max-seconds``, ``--cells``, ``--report``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=out)
    ap.add_argument("--max-seconds", type=float, default=540.0)
    ap.add_argument("--cells", type=lambda v: {int(c) for c in v.split(",")}, default=None)
    ap.add_argument("--report", action="store_true", help="only write the tables")
    return ap


def main(argv=None):
    a = study_parser(__doc__).parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    if not a.report:
        run(a.reps, a.out, a.max_seconds, a.cells)
    print(report(a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
