"""URC's default under the midpoint quantile cuts: a confirmation study paired with the old
cuts (session 72).

Question: commit 90abb61 moved URC's quantile cut points from the lab order statistic
``c_(r+1)`` to halfway between ``c_(r)`` and ``c_(r+1)`` (``puinfer/models/urc/partition.py``,
``_quantile_edges``), so a field prediction in that gap goes to the nearer cell (lab rows keep
their cells; only field predictions in the gaps move). The default ``URC.fit`` pseudo-counts
(``lab_pseudocount="perks", lab_prior="uniform"``) were chosen by ``urc_pc_default.py``
(session 71) with the old cuts. Do the default's 95% profile intervals, bias and no-shift test
size in that study's nine cells stay as they were, replicate by replicate, under the new cuts?

Design
------
The nine cells, the simulation, the seeds and the metrics of ``urc_pc_default.py`` (see its
docstring; its cell definitions and helpers are imported from it, not copied). One fit per
replicate: the package default, called exactly as ``urc_pc_default.py``'s candidate ``perks``
(``lab_pseudocount=1/A, lab_prior="uniform"``, ``A = URC(...).partition.n_cells``). That call
equals ``URC.fit``'s default (``lab_pseudocount="perks"`` is ``1 / A`` with
``lab_prior="uniform"``); ``--check-default`` verifies it on the first replicates (the two
fits' estimates, interval limits and test p-values must be identical).

Old-cut comparator: the rows of candidate ``perks`` in
``results/urc_pc_default_raw.csv.gz`` for the same (cell, replicate), i.e. the same simulated
data set (seed ``71_000_000 + 10_000 * c + r``) fitted by the package before 90abb61: a paired
design. (The old rows were checked against a fit of one replicate with the code of 90abb61~1;
see the report.)

Seeds and replicates: replicate ``r`` of cell ``c`` simulates with ``rng = 71_000_000 +
10_000 * c + r``, ``r = 0..999`` (target 1000 per cell; replicates interleave the cells, round
``r`` of all cells before round ``r + 1``; the analysis uses the replicates ``0..R'-1`` present
in every cell and reports ``R'``).

Metrics (per cell x class; classes as in ``urc_pc_default.py``'s decision rule: all three in
three-class cells, class 1 in binary cells, 23 cell-classes): coverage of the 95% profile
interval ``res.conf_int()`` (``lower <= truth <= upper``), misses below (``upper < truth``) and
above (``lower > truth``), bias, SD and bias in SD units of ``res.base_rates``, RMSE, new and
old; the paired coverage difference new - old with its SE (McNemar type: from the discordant
replicates); per cell: the size at 5% of ``res.test_no_shift(value=truth)`` new and old. Over
the 23 cell-classes: the worst coverage and the largest shortfall ``max(0, 0.95 - coverage)``,
new and old (old: 0.938). Reported also: how many replicates' estimates moved at all.

Usage (``PYTHONPATH`` = the repository root, ``OPENBLAS_NUM_THREADS=1``)::

    python urc_midpoint_cuts.py --reps 3 --out /tmp/x --check-default 3  # smoke run
    python urc_midpoint_cuts.py --reps 1000 --max-seconds 540          # resumable, repeated
    python urc_midpoint_cuts.py --report                               # tables from the CSV

Writes ``<out>/urc_midpoint_cuts_raw.csv.gz`` (one row per replicate x class, floats to 10
significant digits; appended as replicates come, and a rerun resumes where it stops) and, with
``--report`` (or after a run), ``<out>/urc_midpoint_cuts.md``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import urc_pc_default as pc  # noqa: E402  (cells, seeds, candidates, analysis helpers)

from puinfer import URC  # noqa: E402
from puinfer.simulate.urc import simulate_urc  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
RAW = "urc_midpoint_cuts_raw.csv.gz"
OLD_RAW = "urc_pc_default_raw.csv.gz"
CAND = "perks"
CELLS = pc.CELLS
N_CELL_CLASSES = 23


def simulate(c: int, r: int):
    """Replicate ``r`` of cell ``c``: the data of ``urc_pc_default.one_replicate``."""
    cell = CELLS[c]
    k = cell["k"]
    seed = pc.SEED0 + 10_000 * c + r
    lab, field = np.asarray(cell["lab"]), np.asarray(cell["field"])
    # (the call of urc_pc_default.one_replicate, which does not expose it separately)
    s = simulate_urc(n_lab=cell["n_lab"], n_field=pc.N_FIELD,
                     lab_base_rates=lab[1] if k == 2 else lab,
                     field_base_rate=field[1] if k == 2 else field, separation=pc.SEP,
                     rng=seed, lab_design=cell["design"])
    return s, seed, field


def one_replicate(c: int, r: int, check_default: bool = False) -> list:
    cell = CELLS[c]
    k = cell["k"]
    s, seed, field = simulate(c, r)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = URC(s.lab_pred, s.lab_y, lab_design=cell["design"])
        A = m.partition.n_cells
        kw = pc.candidates(A)[CAND]
        t0 = time.process_time()
        res = m.fit(s.field_pred, **kw)
        ci = res.conf_int(1 - pc.LEVEL).to_numpy()
        p = res.test_no_shift(value=field).pvalue
        sec = time.process_time() - t0
        est = res.base_rates.iloc[0].to_numpy()
        if check_default:  # the package default must be the same fit
            d = m.fit(s.field_pred)
            same = (np.array_equal(d.base_rates.iloc[0].to_numpy(), est)
                    and np.array_equal(d.conf_int(1 - pc.LEVEL).to_numpy(), ci)
                    and d.test_no_shift(value=field).pvalue == p)
            if not same:
                raise AssertionError(f"cell {c} rep {r}: the default fit differs from {kw}")
    for j, (lo, hi) in zip(pc.classes(k), ci, strict=True):
        rows.append(dict(cell=c, rep=r, seed=seed, cand=CAND, cls=j, A=A, truth=field[j],
                         est=est[j], lower=lo, upper=hi, p_truth=p,
                         converged=bool(res.converged), cpu_seconds=sec))
    return rows


def run(reps: int, out: Path, max_seconds: float, only=None, check_default=0) -> None:
    """``urc_pc_default.run`` with this study's replicate, into ``out / RAW`` (gzipped, floats
    to 10 significant digits; each append is a gzip member, and readers take the
    concatenation); the first ``check_default`` replicates also check the package default."""
    pc.run(reps, out, max_seconds, only, raw=RAW,
           replicate=lambda c, r: one_replicate(c, r, check_default=r < check_default),
           float_format="%.10g", compression="gzip")


# -- analysis -----------------------------------------------------------------------------------
def load(out: Path, old_dir: Path = OUT) -> tuple[pd.DataFrame, int]:
    """New and old rows (``cuts`` = "new" / "old") of the replicates 0..R'-1 present in every
    cell of the new run."""
    new = pd.read_csv(out / RAW)
    have = new.drop_duplicates(["cell", "rep"])
    R = min(next((i for i in range(len(have) + 1)
                  if i not in set(have[have.cell == c].rep)), 0) for c in range(len(CELLS)))
    old = pd.read_csv(old_dir / OLD_RAW)
    old = old[old.cand == CAND]
    d = pd.concat([new.assign(cuts="new"), old.assign(cuts="old")], ignore_index=True)
    d = d[d.rep < R].copy()
    # the comparison is paired: every new row must have its old row (same seed, same A)
    key = ["cell", "rep", "cls"]
    w = d.pivot_table(index=key, columns="cuts", values=["seed", "A"])
    if w.isna().any().any() or not ((w["seed"]["new"] == w["seed"]["old"]).all()
                                    and (w["A"]["new"] == w["A"]["old"]).all()):
        raise ValueError("new and old rows do not pair")
    return d, R


def cell_table(d: pd.DataFrame) -> pd.DataFrame:
    """``urc_pc_default.cell_table`` with the cut convention in place of the candidate."""
    t = pc.cell_table(d.assign(cand=d.cuts))
    return t.rename(columns={"cand": "cuts"})


def size_table(d: pd.DataFrame) -> pd.DataFrame:
    t = pc.size_table(d.assign(cand=d.cuts))
    return t.rename(columns={"cand": "cuts"})


def paired_table(d: pd.DataFrame) -> pd.DataFrame:
    """Per cell-class: coverage new and old, their paired difference and SE, discordant
    replicates, bias in SD units new and old, estimates moved."""
    d = d.assign(cov=(d.lower <= d.truth) & (d.truth <= d.upper))
    ct = cell_table(d).set_index(["cell", "cls", "cuts"])
    rows = []
    for (c, j), g in d.groupby(["cell", "cls"]):
        w = g.pivot_table(index="rep", columns="cuts", values=["cov", "est"])
        cn, co = w["cov"]["new"].astype(float), w["cov"]["old"].astype(float)
        diff = cn - co
        n = len(diff)
        b, a = int((diff > 0).sum()), int((diff < 0).sum())
        delta = w["est"]["new"] - w["est"]["old"]
        moved = delta.abs()
        rows.append(dict(
            cell=c, cls=j, truth=g.truth.iloc[0], reps=n, cov_old=co.mean(), cov_new=cn.mean(),
            diff=diff.mean(), se=float(np.sqrt(((diff - diff.mean()) ** 2).sum() / (n - 1) / n)),
            only_new=b, only_old=a,
            below_old=ct.loc[(c, j, "old"), "below"], below_new=ct.loc[(c, j, "new"), "below"],
            above_old=ct.loc[(c, j, "old"), "above"], above_new=ct.loc[(c, j, "new"), "above"],
            bias_sd_old=ct.loc[(c, j, "old"), "bias_sd"],
            bias_sd_new=ct.loc[(c, j, "new"), "bias_sd"],
            rmse_old=ct.loc[(c, j, "old"), "rmse"], rmse_new=ct.loc[(c, j, "new"), "rmse"],
            est_moved=int((moved > 1e-8).sum()), max_abs_move=float(moved.max()),
            mean_move_sd=float(delta.mean() / ct.loc[(c, j, "old"), "sd"]),
            mean_move_se_sd=float(delta.std() / np.sqrt(n) / ct.loc[(c, j, "old"), "sd"])))
    return pd.DataFrame(rows)


def summary(pt: pd.DataFrame, st: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for cuts in ("old", "new"):
        cov = pt[f"cov_{cuts}"].to_numpy()
        short = np.maximum(0.0, pc.LEVEL - cov)
        w = int(np.argmin(cov))
        rows.append(dict(cuts=cuts, min_coverage=cov.min(),
                         worst_cell_class=f"{int(pt.cell.iloc[w])}/{int(pt.cls.iloc[w])}",
                         max_shortfall=short.max(), sum_shortfall=short.sum(),
                         n_below_095=int((cov < pc.LEVEL).sum()),
                         max_abs_bias_sd=pt[f"bias_sd_{cuts}"].abs().max(),
                         min_size=st[st.cuts == cuts]["size"].min(),
                         max_size=st[st.cuts == cuts]["size"].max()))
    return pd.DataFrame(rows)


def report(out: Path) -> str:
    d, R = load(out)
    pt = paired_table(d)
    if len(pt) != N_CELL_CLASSES:
        raise ValueError(f"{len(pt)} cell-classes, expected {N_CELL_CLASSES}")
    st = size_table(d)
    sw = st.pivot_table(index="cell", columns="cuts",
                        values=["size", "nonconverged", "cpu_s_per_fit"])
    sw.columns = [f"{a}_{b}" for a, b in sw.columns]
    sw = sw[["size_old", "size_new", "nonconverged_old", "nonconverged_new",
             "cpu_s_per_fit_old", "cpu_s_per_fit_new"]]
    one = d.drop_duplicates(["cell", "rep", "cuts"]).pivot_table(
        index=["cell", "rep"], columns="cuts", values="p_truth")
    rej = (one < 0.05)
    sw["only_new"] = (rej["new"] & ~rej["old"]).groupby(level="cell").sum()
    sw["only_old"] = (~rej["new"] & rej["old"]).groupby(level="cell").sum()
    dd = (rej["new"].astype(float) - rej["old"].astype(float)).groupby(level="cell")
    sw["diff"] = dd.mean()
    sw["se"] = dd.apply(lambda x: float(np.sqrt(((x - x.mean()) ** 2).sum()
                                                / (len(x) - 1) / len(x))))
    sm = summary(pt, st)
    md = ["# URC's default (Perks) under the midpoint quantile cuts: paired confirmation "
          "(session 72)\n",
          "Generated by `OPENBLAS_NUM_THREADS=1 PYTHONPATH=<repo> python "
          "studies/urc_midpoint_cuts.py --report` (the runs: `--reps 1000 --max-seconds 540`, "
          "repeated until done); design, seeds and metrics in its docstring. `new`: the package "
          "at commit 90abb61 or later (cuts halfway between the lab order statistics); `old`: "
          "the `perks` rows of `urc_pc_default_raw.csv.gz` (cuts at `c_(r+1)`), the same "
          f"simulated data sets. Replicates per cell: R' = {R}. Monte-Carlo SE of a coverage "
          f"of 0.95: {pc.mc_se(0.95, max(R, 1)):.4f}. Binary cells: class 1.\n",
          "## Summary over the 23 cell-classes\n", pc.to_markdown(sm), "",
          "## Coverage, misses, bias per cell x class, new vs old (paired)\n",
          "`diff` = coverage(new) - coverage(old) on the same replicates, `se` its paired SE "
          "(McNemar: from the discordant replicates `only_new` / `only_old`); `bias_sd` = "
          "bias / SD of the estimate; `est_moved`: replicates whose estimate of the class "
          "changed by more than 1e-8; `max_abs_move`: the largest change; `mean_move_sd`: the "
          "paired mean change of the estimate (new - old) in units of the old SD, "
          "`mean_move_se_sd` its SE (the paired difference of the two biases).\n",
          pc.to_markdown(pt), "",
          "## Size of `test_no_shift(value=truth)` at 5% per cell, new vs old\n",
          "`only_new` / `only_old`: replicates rejected by one only; `diff`, `se`: paired.\n",
          pc.to_markdown(sw.reset_index()), ""]
    text = "\n".join(md) + "\n"
    (out / "urc_midpoint_cuts.md").write_text(text)
    return text


def main(argv=None):
    ap = pc.study_parser(__doc__, OUT)
    ap.add_argument("--check-default", type=int, default=0, metavar="N",
                    help="in replicates r < N also fit with URC.fit's defaults and require "
                         "the same result")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    if not a.report:
        run(a.reps, a.out, a.max_seconds, a.cells, a.check_default)
    print(report(a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
