"""Dask collections as data: detection, the row blocks of aligned collections and the one
block-wise reduction every model uses (the optional extra ``puinfer[dask]``).

A model whose likelihood needs only sums over rows evaluates a *block function* -- the same
function that it applies, in memory, to all rows at once -- on each partition of the Dask
collections, and adds the results up the tree (:func:`reduce_blocks`). The reduction runs on
the scheduler in use (a ``distributed.Client`` if one is active); only the small sums travel.

Nothing here imports dask unless a Dask collection was given: :func:`is_dask` looks for the
module among those already imported, so puinfer never needs dask itself.
"""

from __future__ import annotations

import functools
import re
import sys

import numpy as np

__all__ = ["is_dask", "any_dask", "require_dask", "row_blocks", "reduce_blocks", "add_sums",
           "same_index_block"]


def is_dask(x) -> bool:
    """Whether ``x`` is a Dask collection (array, Series, DataFrame, ...)."""
    dask = sys.modules.get("dask")
    return dask is not None and bool(dask.is_dask_collection(x))


def any_dask(*xs) -> bool:
    """Whether any of ``xs`` is a Dask collection."""
    return any(is_dask(x) for x in xs)


def require_dask():
    """Import dask (with dask.dataframe and dask.array), or an ImportError saying how to get it."""
    try:
        import dask
        import dask.array  # noqa: F401
        import dask.dataframe  # noqa: F401
    except ImportError as exc:  # pragma: no cover - only without the extra
        raise ImportError("Dask collections need the optional extra: pip install "
                          "'puinfer[dask]' (dask[dataframe], distributed)") from exc
    return dask


def _delayed_blocks(x, name):
    """One delayed object per row block of a Dask array, Series or DataFrame."""
    import dask.array as da

    if isinstance(x, da.Array):
        if x.ndim not in (1, 2):
            raise ValueError(f"{name} must be 1- or 2-dimensional; got a {x.ndim}-d Dask array")
        if x.ndim == 2:
            x = x.rechunk({1: -1})  # blocks of whole rows
        return list(np.ravel(x.to_delayed())), x.chunks[0]
    if hasattr(x, "to_delayed") and hasattr(x, "npartitions"):
        return list(x.to_delayed()), None
    raise TypeError(f"{name}: a Dask array, Series or DataFrame was expected; got "
                    f"{type(x).__name__}")


def row_blocks(named: dict) -> list[tuple]:
    """Zip the row blocks of row-aligned Dask collections: one tuple per block (None for an
    argument given as None).

    Every collection must be a Dask collection with the same number of blocks (and, for
    Dask arrays, the same chunk sizes); pandas objects are aligned on their index inside each
    block by the block function (:func:`puinfer._align.align_rows`). Anything else is refused
    with a ``ValueError`` naming the arguments, since in-memory data cannot be matched to the
    blocks of a Dask collection by position.
    """
    require_dask()
    given = {k: v for k, v in named.items() if v is not None}
    not_dask = [k for k, v in given.items() if not is_dask(v)]
    if not_dask:
        raise ValueError(f"{', '.join(not_dask)}: with Dask collections every row-wise argument "
                         f"must be a Dask collection from the same data (got in-memory "
                         f"{', '.join(type(given[k]).__name__ for k in not_dask)}); build them "
                         "from one Dask DataFrame, e.g. ddf['pred'] and ddf['group']")
    blocks, chunks = {}, {}
    for k, v in given.items():
        blocks[k], chunks[k] = _delayed_blocks(v, k)
    sizes = {k: len(b) for k, b in blocks.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"{', '.join(sizes)} have different numbers of partitions/blocks "
                         f"({sizes}); give them from one Dask DataFrame or with equal chunks")
    arr_chunks = {k: c for k, c in chunks.items() if c is not None}
    if len({c for c in arr_chunks.values()}) > 1:
        raise ValueError(f"{', '.join(arr_chunks)}: Dask arrays with different row chunks; "
                         "rechunk them alike")
    n = next(iter(sizes.values()))
    return [tuple(blocks[k][i] if k in blocks else None for k in named) for i in range(n)]


def same_index_block(named: dict) -> dict:
    """A block's pandas arguments whose indexes are the same labels in the same order (the
    columns of one Dask DataFrame's partition) are already aligned: their indexes are reset,
    so the one alignment rule (:func:`puinfer._align.align_rows`) then matches them by
    position -- a partition of ``read_parquet`` often repeats index labels across files.
    Other blocks are returned unchanged (and aligned, or refused, by that rule)."""
    import pandas as pd

    pandas = {k: v for k, v in named.items() if isinstance(v, (pd.Series, pd.DataFrame))}
    if not pandas:
        return named
    first = next(iter(pandas.values())).index
    if not all(v.index.equals(first) for v in pandas.values()):
        return named
    return {k: v.reset_index(drop=True) if k in pandas else v for k, v in named.items()}


def add_sums(a, b):
    """Add two block results: numbers and arrays add, dicts and tuples add by entry, lists
    concatenate (to collect small row sets), and None stands for a block that contributes
    nothing."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, dict):
        return {k: add_sums(a.get(k), b.get(k)) for k in dict.fromkeys([*a, *b])}
    if isinstance(a, tuple):
        return tuple(add_sums(x, y) for x, y in zip(a, b, strict=True))
    return a + b


#: a refusal that counts values or rows (of one partition, where it is raised in a block)
_COUNTED = re.compile(r"missing value|\b\d+ value\(s\)|\b\d+ do not \(e\.g\. row \d+")


def in_one_partition(func, *args):
    """``func(*args)`` on one block; a refusal that counts missing or bad values says that its
    count is one partition's (session 67's audit: "[1] row(s)" where the collection held 3;
    "score must be in [0, 1]; 1 value(s) are not" where it held 3)."""
    try:
        return func(*args)
    except ValueError as exc:
        if not _COUNTED.search(str(exc)):
            raise
        # (URC's "rows must sum to 1; 1 do not (e.g. row 900 ...)" named the row by its place
        # in the partition: row 2900 of the collection; session 85's audit)
        rows = ", its rows numbered from 0 within it" if re.search(r"\brow \d", str(exc)) \
            else ""
        raise ValueError(f"{exc} (counted in one partition of the Dask collection{rows}; others "
                         "may hold more)") from None


def reduce_blocks(func, blocks: list[tuple], *, combine=add_sums, split_every: int = 8,
                  extra=None):
    """``combine``-reduce ``func(*block)`` over the blocks, in one pass, on the scheduler in use.

    ``func`` must be picklable (a module-level function or a ``functools.partial`` of one);
    ``extra`` is an in-memory result combined last (e.g. the sums of the control rows). The
    partial results are combined up a tree with ``split_every`` children per node.
    """
    dask = require_dask()
    delayed = dask.delayed
    # (not pure: each pass is a new computation, whose keys need not be tokens of the
    # arguments; tokenizing ``func``'s arrays and the blocks cost about a quarter of a pass on
    # small partitions, session 92)
    parts = [delayed(func, pure=False)(*blk) for blk in blocks]
    comb = delayed(functools.partial(functools.reduce, combine), pure=False)
    while len(parts) > 1:
        parts = [comb(parts[i:i + split_every]) for i in range(0, len(parts), split_every)]
    total = dask.compute(parts[0])[0] if parts else None
    return total if extra is None else combine(total, extra)

