"""The package's one rule for matching rows of several inputs, and for missing values.

**Alignment.** The row-wise arguments of one call (e.g. CalEM's ``score``, ``label`` and
``treated``) are matched as follows:

* pandas objects (Series, DataFrame) are matched **on their index**, never by position. They
  must hold the same set of labels, each label once; they are put in the order of the first
  pandas argument (the *reference*), whose index the outputs carry.
* Arrays and lists have no index: they are taken in the reference's row order (by position),
  and must have its length.
* Without any pandas argument the rows match by position and outputs carry a RangeIndex.

Inputs that cannot be aligned are refused with a ``ValueError`` naming the arguments: label
sets that differ (the message shows labels found in one and not the other), duplicate labels,
or lengths that differ; and pandas' default index ``0..n-1`` (``pd.Series(array)``) next to
another index, whose labels only number the rows: matched to a shuffled frame's index they
would pair different rows, so the array, not a Series made from it, must be passed to take it
in the other's row order.

**Missing values** (R's ``na.action``): ``missing="raise"`` (default) refuses missing values,
naming the argument and column; ``missing="drop"`` drops every row with a missing value in any
row-wise argument, and the number dropped is reported (models record it in their summary).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ._validation import refuse_dask

__all__ = ["align_rows", "drop_missing", "check_missing_option", "MISSING_OPTIONS"]

MISSING_OPTIONS = ("raise", "drop")


def _is_pandas(x) -> bool:
    return isinstance(x, (pd.Series, pd.DataFrame))


def _length(x, name: str) -> int:
    if _is_pandas(x):
        return len(x)
    arr = np.asarray(x, dtype=object) if not isinstance(x, np.ndarray) else x
    if arr.ndim == 0:
        raise ValueError(f"{name}: a single value was given where one value per row is expected")
    return arr.shape[0]


def _is_default_index(ix: pd.Index) -> bool:
    """Whether ``ix`` is pandas' default ``RangeIndex(0, n)``: labels that only number the
    rows (``pd.Series(array)``, ``reset_index(drop=True)``, a scikit-learn step with
    ``set_output(transform="pandas")``)."""
    return isinstance(ix, pd.RangeIndex) and ix.start == 0 and ix.step == 1


def _refuse_default_next_to_other(a: str, ia: pd.Index, b: str, ib: pd.Index) -> None:
    """``ValueError`` where one of two different indexes is the default ``0..n-1`` and the
    other is not: its labels only number the rows, and matching them to the other's labels
    pairs rows that are not the same (``pd.Series(model_scores)`` next to the label column of
    a shuffled frame, whose index is a permutation of ``0..n-1``: session 82's audit found a
    scikit-learn Pipeline doing this silently). Whether by label or by position was meant
    cannot be told, so neither is guessed."""
    da, db = _is_default_index(ia), _is_default_index(ib)
    if da == db:
        return
    plain, other = (a, b) if da else (b, a)
    raise ValueError(
        f"{plain} has the default index 0..n-1 (as pd.Series(array), pd.DataFrame(array) or a "
        f"scikit-learn step with set_output(transform='pandas') gives) and {other} another "
        f"index: matching their rows by label (puinfer's rule for pandas inputs) or by "
        f"position would pair different rows. Pass one of them as an array "
        f"({plain}.to_numpy() or {other}.to_numpy()) to match the rows by position, or give "
        f"both the same index")


def align_rows(args: Mapping[str, object]) -> tuple[dict[str, object], pd.Index | None]:
    """Match the rows of several row-wise arguments by the package's alignment rule.

    Parameters
    ----------
    args : mapping of str to array_like, Series or DataFrame
        Argument name -> value; ``None`` values are passed through untouched.

    Returns
    -------
    aligned : dict
        The same keys; pandas values reindexed to the reference order (new objects; the
        inputs are never modified), other values unchanged.
    index : pandas.Index or None
        The reference index (``None`` when no argument is a pandas object).

    Raises
    ------
    ValueError
        Naming the arguments whose index labels differ, contain duplicates, or whose lengths
        differ.
    """
    present = {k: v for k, v in args.items() if v is not None}
    # the methods that take Dask collections route them to their own code before this; here
    # one would be computed silently and matched by position
    for k, v in present.items():
        refuse_dask(v, k)
    pandas_args = [k for k, v in present.items() if _is_pandas(v)]
    ref_name = pandas_args[0] if pandas_args else None
    ref_index = present[ref_name].index if ref_name is not None else None
    out = dict(args)
    n = len(ref_index) if ref_index is not None else None
    for k, v in present.items():
        if _is_pandas(v) and k != ref_name:
            idx = v.index
            # (the same labels in the same order match row for row, duplicates or not: e.g.
            # two columns of one frame after pd.concat, session 67's audit)
            if idx.equals(ref_index):
                continue
            _refuse_default_next_to_other(ref_name, ref_index, k, idx)
            if ref_index.has_duplicates:
                dup = ref_index[ref_index.duplicated()].unique()[:3].tolist()
                raise ValueError(f"{ref_name}: duplicate index labels (e.g. {dup}); {k} cannot "
                                 "be matched to it on the index (reset both indexes, or give "
                                 f"{k} the same index in the same order)")
            if idx.has_duplicates:
                dup = idx[idx.duplicated()].unique()[:3].tolist()
                raise ValueError(f"{k}: duplicate index labels (e.g. {dup}); it cannot be "
                                 f"matched to {ref_name} on the index")
            if len(idx) != len(ref_index) or not idx.isin(ref_index).all():
                only_here = idx.difference(ref_index)[:3].tolist()
                only_ref = ref_index.difference(idx)[:3].tolist()
                raise ValueError(
                    f"{k} and {ref_name} have different index labels (e.g. only in {k}: "
                    f"{only_here}; only in {ref_name}: {only_ref}): pandas inputs are matched "
                    "on their index, never by position")
            out[k] = v.reindex(ref_index)
        else:
            m = _length(v, k)
            if n is None:
                n, ref_name = m, ref_name or k
            elif m != n:
                raise ValueError(f"{k} has {m} rows but {ref_name} has {n}")
    return out, ref_index


def check_missing_option(missing: str) -> str:
    """Validate ``missing=`` (``"raise"`` or ``"drop"``)."""
    if missing not in MISSING_OPTIONS:
        raise ValueError(f"missing must be 'raise' or 'drop'; got {missing!r}")
    return missing


def _row_missing(x) -> np.ndarray:
    if isinstance(x, pd.DataFrame):
        return x.isna().any(axis=1).to_numpy()
    if isinstance(x, pd.Series):
        return x.isna().to_numpy()
    arr = np.asarray(x)
    if arr.shape[0] == 0:  # (reshape(0, -1) is refused: an empty Dask partition)
        return np.zeros(0, dtype=bool)
    if arr.dtype.kind in "fc":
        miss = np.isnan(arr)
    else:
        miss = pd.isna(pd.DataFrame(arr.reshape(arr.shape[0], -1))).to_numpy()
    return miss.reshape(arr.shape[0], -1).any(axis=1)


def drop_missing(args: Mapping[str, object], index: pd.Index | None, missing: str
                 ) -> tuple[dict[str, object], pd.Index | None, int]:
    """Apply ``missing=`` to aligned row-wise arguments.

    With ``"raise"`` nothing is changed (the checkers then refuse missing values, naming the
    argument); with ``"drop"`` the rows with a missing value in any argument are removed from
    all of them (and from ``index``).

    Returns
    -------
    args : dict
    index : pandas.Index or None
    n_dropped : int
    """
    check_missing_option(missing)
    present = {k: v for k, v in args.items() if v is not None}
    if missing == "raise" or not present:
        return dict(args), index, 0
    first = next(iter(present))
    miss = np.zeros(_length(present[first], first), dtype=bool)
    for v in present.values():
        miss |= _row_missing(v)
    if not miss.any():
        return dict(args), index, 0
    keep = ~miss
    out = dict(args)
    for k, v in present.items():
        out[k] = v[keep] if _is_pandas(v) else np.asarray(v)[keep]
    if index is not None:
        index = index[keep]
    return out, index, int(miss.sum())
