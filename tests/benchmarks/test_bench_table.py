"""The benchmark scripts' shared record (``benchmarks/_table.py``): ratios to the previous
commit's CSV, matched on the key columns."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _table import with_ratios  # noqa: E402


def test_ratios_match_rows_on_their_keys(tmp_path):
    prev = pd.DataFrame({"case": ["b", "a", "a"], "N": [10, 10, 20],
                         "fit_s": [4.0, 2.0, 8.0], "ci_s": [1.0, 1.0, 1.0]})
    path = tmp_path / "prev.csv"
    prev.to_csv(path, index=False)
    new = pd.DataFrame({"case": ["a", "a", "c"], "N": [20, 10, 10],
                        "fit_s": [2.0, 3.0, 1.0], "ci_s": [0.5, 2.0, 1.0],
                        "other": [1, 2, 3]})
    out = with_ratios(new, str(path), ["case", "N"], ["fit_s", "ci_s", "total_s"])
    # by key, not by position; no match -> NaN; a column the record lacks -> no ratio
    np.testing.assert_array_equal(out["fit_s/prev"], [0.25, 1.5, np.nan])
    np.testing.assert_array_equal(out["ci_s/prev"], [0.5, 2.0, np.nan])
    assert "total_s/prev" not in out and list(out.index) == [0, 1, 2]
    pd.testing.assert_frame_equal(out[new.columns], new)


def test_missing_keys_in_older_records_are_filled_or_refused(tmp_path):
    path = tmp_path / "prev.csv"
    pd.DataFrame({"task": [np.nan], "n": [5], "t": [2.0]}).to_csv(path, index=False)
    new = pd.DataFrame({"task": ["fit"], "n": [5], "t": [1.0]})
    assert with_ratios(new, str(path), ["task", "n"], ["t"], fill={"task": "fit"}
                       )["t/prev"].tolist() == [0.5]
    with pytest.raises(ValueError, match="lacks the key column"):
        with_ratios(new, str(path), ["task", "n", "p"], ["t"])
    with pytest.raises(FileNotFoundError, match="no such file"):
        with_ratios(new, str(tmp_path / "nope.csv"), ["task"], ["t"])


def test_finish_records_the_machines_reference_time_and_its_ratio(tmp_path, capsys):
    import argparse

    from _table import finish

    prev = tmp_path / "prev.csv"
    pd.DataFrame({"n": [5], "t": [2.0], "machine_s": [1e-6]}).to_csv(prev, index=False)
    args = argparse.Namespace(out=str(tmp_path / "new.csv"), previous=str(prev))
    shown = finish(pd.DataFrame({"n": [5], "t": [1.0]}), args, ["n"], ["t"])
    written = pd.read_csv(tmp_path / "new.csv")
    # the reference workload takes real time, and its ratio to the record is reported
    assert written["machine_s"].iloc[0] > 1e-3
    assert shown["machine_s/prev"].iloc[0] == pytest.approx(written["machine_s"].iloc[0] / 1e-6)
    assert shown["t/prev"].tolist() == [0.5] and "machine_s" in capsys.readouterr().out
