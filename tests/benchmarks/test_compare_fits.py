"""``benchmarks/compare_fits.py``: two versions' fits matched replicate by replicate."""

import argparse
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from compare_fits import VALUES, compare  # noqa: E402


def _record(seeds, **shift):
    rows = []
    for s in seeds:
        row = dict(design="sar", pi=0.3, n=1000, p=15, seed=s, t_fit=1.0)
        row.update({v: (-14000.0 if v.endswith("llf") else 0.3) for v in VALUES})
        rows.append(row)
    out = pd.DataFrame(rows)
    for (seed, col), d in shift.get("by", {}).items():
        out.loc[out.seed == seed, col] += d
    return out


def test_compare_matches_replicates_by_seed_and_reports_those_beyond_tol(tmp_path, capsys):
    old = _record([1, 2, 3])
    # new: rows in another order, one replicate off in a limit, one log-EL off by less than
    # tol relative to its size (1e-5 absolute on 14000)
    new = _record([3, 1, 2], by={(2, "detm_upper"): 0.01, (3, "setm_llf"): 1e-5})
    new = new.sample(frac=1.0, random_state=0)
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    old.to_csv(a, index=False)
    new.to_csv(b, index=False)
    table = compare(argparse.Namespace(old=str(a), new=str(b), tol=1e-8))
    assert table["replicates"].iloc[0] == 3
    assert table["detm_upper"].iloc[0] == pytest.approx(0.01)
    assert table["setm_llf"].iloc[0] == pytest.approx(1e-5 / 14000)
    out = capsys.readouterr().out
    assert "1 of 3 replicates differ by more than 1e-08" in out


def test_compare_includes_the_default_interval_where_both_records_have_it(tmp_path, capsys):
    from compare_fits import BOOT_VALUES

    old, new = _record([1, 2]), _record([1, 2])
    for df in (old, new):
        for v in BOOT_VALUES:
            df[v] = 0.5
    new.loc[new.seed == 2, "detm_bupper"] += 0.02
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    old.to_csv(a, index=False)
    new.to_csv(b, index=False)
    table = compare(argparse.Namespace(old=str(a), new=str(b), tol=1e-8))
    assert table["detm_bupper"].iloc[0] == pytest.approx(0.02)
    assert table["detm_bcut"].iloc[0] == 0.0
    assert "1 of 2 replicates differ" in capsys.readouterr().out
    # a record without them (an older run): compared on the plain values only
    old.drop(columns=BOOT_VALUES).to_csv(a, index=False)
    table = compare(argparse.Namespace(old=str(a), new=str(b), tol=1e-8))
    assert "detm_bupper" not in table
