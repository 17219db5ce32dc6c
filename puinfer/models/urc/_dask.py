"""URC on Dask collections: the field histogram, block by block.

The field enters URC only through its histogram (counts per group and cell) and the naive
estimator (mean prediction per group). Each block of the field predictions (and groups) is
validated, aligned and binned by :func:`~puinfer.models.urc.model.field_cells`, the function
the in-memory fit uses; the block's counts and prediction sums per group label are added up
the tree in one pass (:func:`puinfer._dask.reduce_blocks`). Everything after the histogram
(the likelihood, intervals, tests) is the in-memory code, unchanged: the results hold no Dask
object.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from ..._dask import in_one_partition, reduce_blocks, row_blocks, same_index_block


def _block_sums(model, missing, pred, groups):
    """One block: its histogram and prediction sums per group label (a DataFrame indexed by
    the labels: ``|A|`` count columns, then the sums of the class predictions), the rows
    dropped and the groups' name."""
    from .model import _field_groups, field_cells

    b = same_index_block({"field_pred": pred, "groups": groups})
    arr, grp, cells, n_dropped = in_one_partition(
        field_cells, model, b["field_pred"], b["groups"], missing, True)
    if arr is None:  # no row left in this block
        return None, int(n_dropped), None
    codes, gindex = in_one_partition(_field_groups, grp, arr.shape[0], missing == "raise")
    G, A = len(gindex), model.partition.n_cells
    F = np.bincount(codes * A + cells, minlength=G * A).reshape(G, A).astype(float)
    cols = arr[:, None] if arr.ndim == 1 else arr
    sums = np.column_stack([np.bincount(codes, weights=cols[:, j], minlength=G)
                            for j in range(cols.shape[1])])
    table = pd.DataFrame(np.hstack([F, sums]), index=pd.Index(gindex, dtype=object))
    return table, int(n_dropped), gindex.name


def _combine(a, b):
    tables = [t for t in (a[0], b[0]) if t is not None]
    table = pd.concat(tables).groupby(level=0, sort=False).sum() if tables else None
    return table, a[1] + b[1], a[2] if a[2] is not None else b[2]


def field_histogram_dask(model, field_pred, groups, missing):
    """:func:`~puinfer.models.urc.model.field_histogram` for Dask collections: ``(F, naive,
    group index, rows dropped)``, equal to the in-memory result on the same rows (the sums
    are added in another order: equal to rounding)."""
    from .model import check_groups_print_apart

    blocks = row_blocks({"field_pred": field_pred, "groups": groups})
    table, n_dropped, name = reduce_blocks(
        functools.partial(_block_sums, model, missing), blocks, combine=_combine)
    if table is None:
        raise ValueError("field_pred is empty" + (" (every row has a missing value)"
                                                  if n_dropped else ""))
    dt = getattr(groups, "dtype", None)
    if isinstance(dt, pd.CategoricalDtype) and getattr(groups.cat, "known", False):
        # categorical groups in their categories' order, as pd.factorize(sort=True) in memory
        table = table.reindex([c for c in dt.categories if c in table.index])
    else:
        try:  # the in-memory order: pd.factorize(sort=True), else order of appearance
            table = table.sort_index()
        except TypeError:
            pass
    check_groups_print_apart(table.index)  # (each block checked only its own labels)
    A = model.partition.n_cells
    F = table.iloc[:, :A].to_numpy(dtype=float)
    if not np.all(F.sum(axis=1) > 0):  # pragma: no cover - a label only appears with rows
        raise ValueError("groups: a group has no field rows")
    sums, Ng = table.iloc[:, A:].to_numpy(dtype=float), F.sum(axis=1)
    if model._binary:
        m1 = sums[:, 0] / Ng
        naive = np.column_stack([1 - m1, m1])
    else:
        naive = sums / Ng[:, None]
    gindex = pd.Index(table.index.tolist(), name=name if groups is not None else "group")
    return F, naive, gindex, n_dropped
