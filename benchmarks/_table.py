"""The record every benchmark script keeps (issue 17): its table printed, written as CSV with
``--out``, and with ``--previous`` (a CSV the same script wrote at the previous commit) the
ratio new / previous of every time column, rows matched on their key columns.

Run the previous commit's package with the current script (``PYTHONPATH=<worktree of that
commit>``) so that both CSVs hold the same columns.

Every table also records ``machine_s``, the CPU time of a fixed reference workload
(:func:`machine_seconds`): figures from another machine compare only through it (session 46's
machine ran the package's code about twice as slowly as session 45's).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """``--out`` and ``--previous``."""
    ap.add_argument("--out", help="write the raw table (CSV) here")
    ap.add_argument("--previous", help="CSV of the previous commit's figures (ratios)")


def with_ratios(tab: pd.DataFrame, previous: str | None, key: list[str],
                times: list[str], fill: dict | None = None) -> pd.DataFrame:
    """``tab`` with a column ``<time>/prev`` (new / previous) for each column of ``times``
    that the CSV ``previous`` also holds, rows matched on ``key`` (the last of duplicate keys
    in ``previous``; NaN where a row has no match); ``fill``: values for missing keys in
    ``previous`` (older records). Unchanged without ``previous``."""
    out = tab.copy()
    if not previous:
        return out
    if not os.path.exists(previous):
        raise FileNotFoundError(f"--previous: no such file {previous!r}")
    prev = pd.read_csv(previous)
    for c, v in (fill or {}).items():
        if c in prev:  # (as object: a column of NaNs only is read back as float)
            prev[c] = prev[c].astype(object).where(prev[c].notna(), v)
    missing = [c for c in key if c not in prev]
    if missing:
        raise ValueError(f"--previous {previous!r} lacks the key column(s) {missing}")
    have = [c for c in times if c in prev]  # older records may lack later columns
    prev = prev[key + have].drop_duplicates(key, keep="last")
    merged = out[key].merge(prev, on=key, how="left")
    for c in have:
        out[f"{c}/prev"] = out[c].to_numpy(dtype=float) / merged[c].to_numpy(dtype=float)
    return out


def machine_seconds(repeat: int = 3) -> float:
    """CPU seconds of a fixed workload like the models' inner loops (the best of ``repeat``):
    1,000 Newton-size steps on 6,000 rows and 16 columns -- a weighted cross product (BLAS),
    ``exp``/``log1p`` over the rows and a 32 x 32 linear solve. A machine's speed for this
    package, to read figures recorded on different machines against each other."""
    rng = np.random.default_rng(0)
    X = np.ascontiguousarray(rng.standard_normal((6000, 16)))
    eta = rng.standard_normal(6000)
    A = rng.standard_normal((32, 32))
    A = A @ A.T + 32 * np.eye(32)
    best = np.inf
    for _ in range(repeat):
        t0 = time.process_time()
        for _ in range(1000):
            w = np.exp(-np.abs(eta))
            np.log1p(w).sum()
            H = X.T @ (X * w[:, None])
            np.linalg.solve(A + np.kron(np.eye(2), H) * 1e-3, A[:, 0])
        best = min(best, time.process_time() - t0)
    return best


def finish(tab: pd.DataFrame, args, key: list[str], times: list[str],
           floatfmt: str = ".3g", shown_columns: list[str] | None = None,
           fill: dict | None = None) -> pd.DataFrame:
    """Write ``tab`` to ``args.out`` (if given), then print it (``shown_columns`` only) as a
    markdown table with the ratios to ``args.previous`` (:func:`with_ratios`); returns the
    printed table. Adds the column ``machine_s`` (:func:`machine_seconds`), so that
    ``--previous`` also gives the ratio of the two machines."""
    tab = tab.assign(machine_s=machine_seconds())
    times = [*times, "machine_s"]
    if args.out:
        tab.to_csv(args.out, index=False)
    cols = None if shown_columns is None else [*shown_columns, "machine_s"]
    shown = with_ratios(tab if cols is None else tab[cols], args.previous, key, times, fill)
    print("\n" + shown.to_markdown(index=False, floatfmt=floatfmt), flush=True)
    return shown
