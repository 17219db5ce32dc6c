"""URC's default lab pseudo-counts under the midpoint quantile cuts: session 71's declared
decision rule applied again to all five candidates (session 73).

Question: ``urc_pc_default.py`` (session 71) chose ``perks`` among five pseudo-count
candidates by the decision rule declared in its docstring, with the old quantile cuts (at the
lab order statistic ``c_(r+1)``). Commit 90abb61 cut halfway between ``c_(r)`` and ``c_(r+1)``;
``urc_midpoint_cuts.py`` (session 72) reran only ``perks`` under the new cuts. Would the same
rule, on the same nine cells and the same data sets, still choose ``perks`` under the new cuts?

Design
------
Everything -- cells, simulation, seeds (``71_000_000 + 10_000 * c + r``, ``r = 0..999``),
candidates, metrics, decision rule (``urc_pc_default.decide``) and tables -- is
``urc_pc_default.py``'s, imported from it, not copied. Each replicate is fitted by
``urc_pc_default.one_replicate`` itself, with its candidate list restricted to the four
candidates other than ``perks`` (``pooled_half``, ``ml``, ``uniform_half``, ``pooled_one``);
the ``perks`` rows under the new cuts are session 72's (``results/urc_midpoint_cuts_raw.csv.gz``,
same seeds, same call). ``--verify N`` first refits ``perks`` on replicates ``0..N-1`` of every
cell with the installed package and compares with those rows (estimates, limits, test
p-values; the stored rows have 10 significant digits), so the pairing of the two runs is
checked, not assumed. The old-cut comparator is ``results/urc_pc_default_raw.csv.gz``
(session 71, all five candidates). The analysis uses the replicates ``0..R'-1`` complete in
every cell for all five candidates (``urc_pc_default.load``'s rule) and reports ``R'``.

Usage (``PYTHONPATH`` = the repository root, ``OPENBLAS_NUM_THREADS=1``)::

    python urc_pc_default_newcuts.py --verify 3 --reps 0               # pairing check only
    python urc_pc_default_newcuts.py --reps 1000 --max-seconds 540      # resumable, repeated
    python urc_pc_default_newcuts.py --report                          # tables from the CSVs

Writes ``<out>/urc_pc_default_newcuts_raw.csv.gz`` (one row per replicate x candidate x
class, the columns of ``urc_pc_default_raw.csv``, floats to 10 significant digits; appended as
replicates come, and a rerun resumes where it stops) and, with ``--report`` (or after a run),
``<out>/urc_pc_default_newcuts.md``.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd

STUDIES = Path(__file__).resolve().parent
# (next to this script in studies/, else <PYTHONPATH entry>/studies: run from a copy elsewhere)
for p in [STUDIES] + [Path(x) / "studies" for x in sys.path if x]:
    if (p / "urc_pc_default.py").exists():
        sys.path.insert(0, str(p))
        break
import urc_pc_default as pc  # noqa: E402

OLD_DIR = Path(pc.__file__).resolve().parent / "results"
OUT = OLD_DIR
RAW = "urc_pc_default_newcuts_raw.csv.gz"
PERKS_RAW = "urc_midpoint_cuts_raw.csv.gz"  # session 72: perks under the new cuts
OLD_RAW = "urc_pc_default_raw.csv.gz"       # session 71: all five under the old cuts
OTHERS = [c for c in pc.CANDIDATES if c != "perks"]


@contextlib.contextmanager
def only_candidates(names):
    """``urc_pc_default.one_replicate`` with its candidate list restricted to ``names``."""
    full = pc.candidates
    pc.candidates = lambda A: {k: v for k, v in full(A).items() if k in names}
    try:
        yield
    finally:
        pc.candidates = full


def verify(n: int, old_dir: Path) -> float:
    """Refit perks on replicates 0..n-1 of every cell; the largest absolute difference from
    session 72's rows."""
    ref = pd.read_csv(old_dir / PERKS_RAW)
    worst = 0.0
    cols = ["est", "lower", "upper", "p_truth"]
    with only_candidates(["perks"]):
        for r in range(n):
            for c in range(len(pc.CELLS)):
                new = pd.DataFrame(pc.one_replicate(c, r)).set_index("cls")
                old = ref[(ref.cell == c) & (ref.rep == r)].set_index("cls")
                if not (new.A == old.A).all() or len(new) != len(old):
                    raise AssertionError(f"cell {c} rep {r}: rows do not pair")
                diff = float(np.max(np.abs(new[cols].to_numpy() - old.loc[new.index, cols]
                                           .to_numpy())))
                rel = float(np.max(np.abs(new[cols].to_numpy() - old.loc[new.index, cols]
                                          .to_numpy())
                                   / np.maximum(np.abs(new[cols].to_numpy()), 1e-300)))
                print(f"verify cell {c} rep {r}: max |diff| {diff:.2e} (rel {rel:.1e})",
                      flush=True)
                worst = max(worst, diff)
    print(f"verify: largest |diff| over {n * len(pc.CELLS)} replicates: {worst:.2e}", flush=True)
    return worst


def run(reps: int, out: Path, max_seconds: float, only=None) -> None:
    """``urc_pc_default.run`` for the four other candidates, into ``out / RAW`` (gzipped,
    floats to 10 significant digits; each append is a gzip member, and readers take the
    concatenation)."""
    with only_candidates(OTHERS):
        pc.run(reps, out, max_seconds, only, raw=RAW, float_format="%.10g",
               compression="gzip")


# -- analysis -----------------------------------------------------------------------------------
def load_new(out: Path, old_dir: Path) -> tuple[pd.DataFrame, int]:
    others = pd.read_csv(out / RAW)
    perks = pd.read_csv(old_dir / PERKS_RAW)
    d = pd.concat([others, perks[perks.cand == "perks"]], ignore_index=True)
    return pc.complete(d)  # (urc_pc_default.load's rule)


def analyse(d: pd.DataFrame):
    ct, st = pc.cell_table(d), pc.size_table(d)
    summ, choice, tied = pc.decide(ct, st)
    return ct, st, summ, choice, tied


def rule_text(choice, tied, summ=None, R=1000) -> str:
    slack = ""
    if summ is not None:  # how far each tied candidate is from leaving the tie
        el = summ[summ.eligible]
        bound = el.max_shortfall.min() + pc.TIE
        slack = " Slack to the tie bound (S* + 0.005 = {:.3f}), in replicates of {}: {}.".format(
            bound, R, ", ".join(f"{c} {round((bound - el.max_shortfall[c]) * R)}"
                                for c in el.index[el.tied]))
    return (f"Tied (max shortfall within {pc.TIE} of the best eligible): {', '.join(tied)}. "
            f"**Rule's choice: `{choice}`**"
            + (" (the default of the rule, `pooled_half`, is tied: it stays)."
               if choice == pc.DEFAULT else ".") + slack)


def size_range(st: pd.DataFrame) -> pd.Series:
    g = st.groupby("cand")["size"]
    return g.min().map("{:.3f}".format) + "-" + g.max().map("{:.3f}".format)


def bias_summary(ct: pd.DataFrame) -> pd.DataFrame:
    """Per candidate: the largest |bias| / SD over the 23 cell-classes, and over the shift
    cells (5-8)."""
    return pd.DataFrame({
        "max_abs_bias_sd": ct.groupby("cand").bias_sd.apply(lambda x: x.abs().max()),
        "max_abs_bias_sd_shift": ct[ct.cell >= 5].groupby("cand").bias_sd.apply(
            lambda x: x.abs().max())})


def report(out: Path, old_dir: Path = OLD_DIR, header: str = "") -> str:
    dn, Rn = load_new(out, old_dir)
    do, Ro = pc.load(old_dir)
    ctn, stn, sn, chn, tin = analyse(dn)
    cto, sto, so, cho, tio = analyse(do)
    for ct in (ctn, cto):
        if len(ct) != 23 * len(pc.CANDIDATES):
            raise ValueError(f"{len(ct)} cell x candidate x classes, expected 115")
    sn = sn.join(bias_summary(ctn)).assign(size_range=size_range(stn))
    so = so.join(bias_summary(cto)).assign(size_range=size_range(sto))
    cols = ["min_coverage", "worst_cell_class", "max_shortfall", "sum_shortfall",
            "size_range", "max_size", "eligible", "mean_rel_rmse", "max_abs_bias_sd",
            "max_abs_bias_sd_shift", "tied"]
    side = pd.concat({"old": so[cols], "new": sn[cols]}, axis=1).swaplevel(axis=1)
    side = side[[(c, w) for c in cols for w in ("old", "new")]]
    side.columns = [f"{c}_{w}" for c, w in side.columns]
    side.index.name = "cand"
    # per cell-class coverage, old vs new, every candidate
    cw = pd.concat([cto.assign(cuts="old"), ctn.assign(cuts="new")]).pivot_table(
        index=["cell", "cls"], columns=["cand", "cuts"], values="coverage")
    cw = cw[[(c, w) for c in pc.CANDIDATES for w in ("old", "new")]]
    cw.columns = [f"{c}_{w}" for c, w in cw.columns]
    sw = pd.concat([sto.assign(cuts="old"), stn.assign(cuts="new")]).pivot_table(
        index="cell", columns=["cand", "cuts"], values="size")
    sw = sw[[(c, w) for c in pc.CANDIDATES for w in ("old", "new")]]
    sw.columns = [f"{c}_{w}" for c, w in sw.columns]
    pt = pc.paired_table(dn)
    pt = pt.assign(cand=pd.Categorical(pt.cand, pc.CANDIDATES)).sort_values(["cell", "cls",
                                                                             "cand"])
    ctn = ctn.assign(cand=pd.Categorical(ctn.cand, pc.CANDIDATES)).sort_values(
        ["cell", "cls", "cand"])
    stn = stn.assign(cand=pd.Categorical(stn.cand, pc.CANDIDATES)).sort_values(["cell", "cand"])
    md = ["# URC's default lab pseudo-counts under the midpoint cuts: session 71's rule "
          "rerun on all five candidates (session 73)\n",
          header,
          "Generated by `urc_pc_default_newcuts.py --report`; design in its docstring (cells, "
          "seeds, candidates, metrics and the decision rule are `urc_pc_default.py`'s). "
          "`new`: the installed package (midpoint cuts; four candidates from this run, `perks` "
          "from session 72's `urc_midpoint_cuts_raw.csv.gz`); `old`: session 71's "
          f"`urc_pc_default_raw.csv.gz`. Replicates per cell: new R' = {Rn}, old R' = {Ro}. "
          f"Monte-Carlo SE of a coverage of 0.95: {pc.mc_se(0.95, max(Rn, 1)):.4f}. "
          "Binary cells: class 1.\n",
          "## Decision under the new cuts (`urc_pc_default.decide`)\n",
          pc.to_markdown(sn[["max_shortfall", "worst_cell_class", "sum_shortfall",
                             "min_coverage", "max_size", "mean_rel_rmse", "eligible", "tied"]]
                         .reset_index().rename(columns={"index": "cand"})), "",
          "New cuts: " + rule_text(chn, tin, sn, Rn), "",
          "Old cuts (session 71, recomputed from its raw rows): " + rule_text(cho, tio, so, Ro), "",
          "## Per candidate, old vs new cuts\n",
          "`size_range`: min-max over the nine cells of the size of "
          "`test_no_shift(value=truth)` at 5%; `max_abs_bias_sd`: largest |bias| / SD over "
          "the 23 cell-classes (`_shift`: cells 5-8 only); `mean_rel_rmse`: mean over the 23 "
          "cell-classes of RMSE / RMSE(pooled_half) under the same cuts.\n",
          pc.to_markdown(side.reset_index()), "",
          "## Coverage per cell-class, old vs new, every candidate\n",
          pc.to_markdown(cw.reset_index()), "",
          "## Size of `test_no_shift(value=truth)` at 5% per cell, old vs new\n",
          pc.to_markdown(sw.reset_index()), "",
          "## New cuts: coverage, misses, bias and RMSE per cell x candidate x class\n",
          pc.to_markdown(ctn[["cell", "cls", "truth", "cand", "reps", "coverage", "below",
                              "above", "bias", "sd", "bias_sd", "rmse"]]), "",
          "## New cuts: size, convergence, cost\n", pc.to_markdown(stn), "",
          "## New cuts: paired coverage differences against `pooled_half`\n",
          pc.to_markdown(pt), ""]
    text = "\n".join(md) + "\n"
    (out / "urc_pc_default_newcuts.md").write_text(text)
    return text


def main(argv=None):
    ap = pc.study_parser(__doc__, OUT)
    ap.add_argument("--old-dir", type=Path, default=OLD_DIR,
                    help="where urc_pc_default_raw.csv.gz and urc_midpoint_cuts_raw.csv.gz are")
    ap.add_argument("--verify", type=int, default=0, metavar="N",
                    help="refit perks on replicates 0..N-1 of every cell and compare with "
                         "session 72's rows first")
    ap.add_argument("--header", type=Path, default=None,
                    help="a file whose text goes at the top of the report (commands, CPU)")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    if a.verify:
        verify(a.verify, a.old_dir)
    if not a.report:
        run(a.reps, a.out, a.max_seconds, a.cells)
        if not (a.out / RAW).exists():
            return 0
    header = a.header.read_text() if a.header is not None and a.header.exists() else ""
    print(report(a.out, a.old_dir, header))
    return 0


if __name__ == "__main__":
    sys.exit(main())
