"""Validation of URC's inputs: predictions (columns matched to the classes by name), labels,
groups and base-rate vectors. Every error is a ``ValueError`` naming the URC argument.

Rows are matched by :func:`puinfer._align.align_rows` before these checkers see them; here the
**columns** of a prediction DataFrame are matched to the classes. When the lab predictions were
a DataFrame with two or more columns, its column names are the classes, and a DataFrame given
later (``field_pred``, ``recalibrate``'s ``pred``, ``assign``) must have the same set of column
names: they are reordered to the class order (a missing or an extra name is refused). Without
class names (lab predictions given as an array) DataFrame columns are taken by position, as
arrays are. A Series of base rates (``value``, ``old_prior``) is matched to the classes by its
index in the same way.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..._validation import refuse_dask, refuse_text, refuse_text_and_bools
from ._likelihood import ROW_TOL

__all__ = ["PredInput", "as_pred", "check_pred", "check_rowwise", "rates_vector",
           "labels_missing_hint", "label_array"]

_DROP_HINT = " (missing='drop' drops those rows)"


def label_array(labels) -> np.ndarray:
    """Group labels as an array: a numeric, boolean or str array keeps its dtype (as in a
    Series; as objects, the missing-value check and the factorisation of 1e7 labels took
    0.6 s); any other sequence becomes objects (numpy would turn mixed labels into strings;
    pandas cannot look up bytes of a fixed-width ``S`` dtype in an index)."""
    if isinstance(labels, np.ndarray) and labels.dtype.kind in "biufU":
        return labels
    return np.asarray(labels, dtype=object)


def labels_missing_hint(name: str, n: int, can_drop: bool) -> str:
    """The message for ``n`` missing values of ``name`` (with a hint at ``missing="drop"``)."""
    return f"{name}: {n} missing value(s)" + (_DROP_HINT if can_drop else "")


def check_rowwise(value, name: str) -> None:
    """Refuse a scalar (or None) where one value per row is expected."""
    if value is None or (not isinstance(value, (pd.Series, pd.DataFrame))
                         and np.ndim(value) == 0):
        raise ValueError(f"{name} must have one entry per row (an array, list, Series or "
                         f"DataFrame); got {type(value).__name__} {value!r:.40}")


class PredInput:
    """A prediction input as a float array in class order (NaN kept for ``missing=``).

    Attributes
    ----------
    arr : numpy.ndarray
        ``(n,)`` (binary ``P(Y = 1)``) or ``(n, m)`` in class order.
    columns : list or None
        The caller's column labels (DataFrame input), in the caller's order.
    order : numpy.ndarray or None
        Positions of the caller's columns among the classes (to put outputs back in the
        caller's order; a binary model's one named column: ``arr`` is then ``P(Y = 1)``,
        computed from the column where it names the first class).
    """

    def __init__(self, arr, columns=None, order=None):
        self.arr, self.columns, self.order = arr, columns, order


def as_pred(pred, name: str, classes=None, named: bool = False) -> PredInput:
    """Convert ``pred`` to a float array, matching DataFrame columns to ``classes`` by name
    when ``named`` (the lab predictions named the classes)."""
    refuse_dask(pred, name)
    if not isinstance(pred, pd.DataFrame):  # (a DataFrame's text columns: refused below)
        refuse_text(pred, name)
    if isinstance(pred, pd.Series):
        if pd.api.types.is_bool_dtype(pred):
            raise ValueError(_hard_labels(name))
        try:
            arr = pred.to_numpy(dtype=float, na_value=np.nan, copy=True)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be numeric predicted probabilities; the Series has "
                             f"dtype {pred.dtype}") from None
        if named and classes is not None and len(classes) == 2 and pred.name in classes:
            # a Series named as a class holds that class's probability, as a one-column frame
            # (a Series of another name is P(second class), by the binary convention)
            return _class_column(arr, pred.name, classes, None)
        _check_vector_convention(name, classes, named)
        return PredInput(arr)
    if isinstance(pred, pd.DataFrame):
        cols = list(pred.columns)
        if pred.columns.has_duplicates:
            dup = pred.columns[pred.columns.duplicated()].unique().tolist()
            raise ValueError(f"{name}: duplicate column name(s) {dup}")
        hard = [c for c in cols if pd.api.types.is_bool_dtype(pred[c])]
        if hard:
            raise ValueError(_hard_labels(f"{name}: column(s) {hard}"))
        nonnum = [c for c in cols if not pd.api.types.is_numeric_dtype(pred[c])]
        if nonnum:
            raise ValueError(f"{name}: non-numeric column(s) {nonnum}; predictions must be "
                             "probabilities")
        order = None
        if named and classes is not None and len(classes) == 2 and len(cols) == 1:
            # one column of a binary model whose lab predictions named the classes: matched
            # by its name too, never taken as P(second class) by position (session 67's
            # audit: a "ham" column read as P(spam) flipped the base rates)
            if cols[0] not in classes:
                raise ValueError(
                    f"{name}: the column {cols[0]!r} is not a class; with one column it must "
                    f"be named one of the classes {list(classes)} (named by the columns of "
                    "lab_pred), and holds that class's probability")
            arr = pred.to_numpy(dtype=float, na_value=np.nan, copy=True)[:, 0]
            return _class_column(arr, cols[0], classes, cols)
        if named and classes is not None and len(cols) >= 2:
            missing = [c for c in classes if c not in cols]
            extra = [c for c in cols if c not in classes]
            if missing or extra:
                raise ValueError(
                    f"{name}: the columns must be the classes {list(classes)} (named by the "
                    f"columns of lab_pred), matched by name; missing: {missing}, extra: "
                    f"{extra}")
            order = np.array([list(classes).index(c) for c in cols])
            pred = pred[list(classes)]
        elif classes is not None and len(cols) == len(classes) and len(cols) >= 2 and \
                _reordered(cols, list(classes)):
            # (session 76's audit) the lab predictions had no column names, so the classes are
            # positions 0..k-1, and columns named by them in another order were taken by
            # position: recalibrate() labelled class 2's values "0", fit() swapped the rates;
            # compared as text too (a frame read back from CSV names them "0", "1", "2")
            raise ValueError(
                f"{name}: the columns {cols} are the classes {list(classes)} in another order, "
                "but the lab predictions named no classes, so columns are taken by position; "
                f"reorder them as {list(classes)} (or give lab_pred as a DataFrame with named "
                "columns, to match them by name)")
        arr = pred.to_numpy(dtype=float, na_value=np.nan, copy=True)
        return PredInput(arr, cols, order)
    if np.asarray(pred).dtype == bool:
        raise ValueError(_hard_labels(name))
    try:
        arr = np.array(pred, dtype=float, copy=True)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric predicted probabilities") from None
    if arr.ndim == 1:
        _check_vector_convention(name, classes, named)
    return PredInput(arr)


def _check_vector_convention(name: str, classes, named: bool) -> None:
    """Refuse a vector of a binary model whose lab predictions named the classes 0 and 1 with
    class 1 first: a vector is ``P(Y = 1)`` by the documented convention but ``P(second
    class)`` by the binary one, and here the two differ (session 85's audit: lab columns
    ``[1, 0]`` and a field vector of ``P(Y = 1)`` gave a base rate of 0.887 for 0.31, silently)."""
    if not (named and classes is not None and len(classes) == 2):
        return
    try:
        as_numbers = [float(c) for c in classes]
    except (TypeError, ValueError):
        return  # (text classes: a vector is P(second class), the binary convention)
    if as_numbers == [1.0, 0.0]:
        raise ValueError(
            f"{name}: a vector of predictions is ambiguous here: the lab predictions name the "
            f"classes {list(classes)}, class {classes[0]!r} first, so a vector would be read "
            f"as P(second class) = P({classes[1]!r}), not P(Y = 1); give a DataFrame with the "
            f"columns {list(classes)}, or a Series named by the class whose probability it "
            "holds")


def _reordered(cols: list, classes: list) -> bool:
    """Whether ``cols`` name the ``classes`` in another order, as values (``2.0`` is class
    ``2``) or as text (``"2"``)."""
    def other_order(a, b):
        return set(a) == set(b) and a != b

    return other_order(cols, classes) or other_order([str(c) for c in cols],
                                                     [str(c) for c in classes])


def _class_column(arr, cls, classes, columns) -> PredInput:
    """A binary model's one column of probabilities of the class ``cls`` (named by the lab
    predictions' columns) as ``P(Y = 1)``, with the class it names kept for the outputs."""
    first = cls == classes[0]
    return PredInput(1.0 - arr if first else arr, columns, np.array([0 if first else 1]))


def _hard_labels(what: str) -> str:
    """The refusal of boolean predictions: hard class decisions (``clf.predict``) taken as
    probabilities of 0 and 1 fall in the partition's two end cells only (session 67's audit:
    a field base rate of 9e-13 where it was 0.3, with only a BoundaryWarning)."""
    return (f"{what} holds booleans (hard class decisions, e.g. clf.predict); URC needs "
            "predicted probabilities (e.g. clf.predict_proba) for the lab and the field alike")


def check_pred(arr: np.ndarray, name: str, *, k=None, binary=None, can_drop=False):
    """The probability checks; returns ``(array, is_binary)`` with binary input reduced to
    the vector of ``P(Y = 1)`` (an ``(n, 2)`` matrix to its second column)."""
    if arr.ndim == 0:
        raise ValueError(f"{name} must have one prediction per row; got a scalar")
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must be a vector of binary probabilities or an (n, k) matrix "
                         f"of class probabilities; got {arr.ndim} dimensions")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    # every column is checked, the first of a binary (n, 2) matrix too, before it is dropped
    nan = np.isnan(arr)
    if nan.any():
        rows = int(nan.reshape(arr.shape[0], -1).any(axis=1).sum())
        raise ValueError(f"{name}: {int(nan.sum())} missing value(s) in {rows} row(s)"
                         + (_DROP_HINT if can_drop else ""))
    bad = ~((arr >= 0) & (arr <= 1))
    if bad.any():
        raise ValueError(f"{name} must be probabilities in [0, 1]; {int(bad.sum())} value(s) are "
                         f"not (e.g. {arr[bad].ravel()[:3].tolist()})")
    if arr.ndim == 2:
        rs = arr.sum(axis=1)
        off = np.abs(rs - 1) > ROW_TOL
        if off.any():
            raise ValueError(f"{name}: rows must sum to 1; {int(off.sum())} do not (e.g. row "
                             f"{int(np.flatnonzero(off)[0])} sums to {rs[off][0]:.6g})")
    if arr.shape[1:] == (2,) and binary is not False:
        arr = arr[:, 1]  # binary given as two columns: keep P(class 1)
    is_binary = arr.ndim == 1
    if binary is not None and is_binary != binary:
        want = "a vector of binary probabilities" if binary else "an (n, k) matrix"
        raise ValueError(f"{name} must be {want} like the lab predictions; got shape "
                         f"{arr.shape}")
    if k is not None and not is_binary and arr.shape[1] != k:
        raise ValueError(f"{name} has {arr.shape[1]} columns; the lab predictions have {k}")
    return arr, is_binary


def rates_vector(value, name: str, classes, *, open_: bool = False) -> np.ndarray:
    """Class shares over ``classes`` (length ``k``, summing to 1) from ``value``.

    Binary: a scalar ``P(Y = 1)`` or two shares. A Series is matched to the classes by its
    index (reordered when it holds the same class labels; refused otherwise). ``open_``:
    every share strictly positive (a prior to divide by)."""
    k = len(classes)
    if isinstance(value, pd.DataFrame):
        raise ValueError(f"{name} must be a number or a vector of {k} class shares; got a "
                         "DataFrame")
    if isinstance(value, pd.Series):
        idx = list(value.index)
        missing = [c for c in classes if c not in idx]
        extra = [c for c in idx if c not in classes]
        if missing or extra or value.index.has_duplicates:
            raise ValueError(f"{name}: a Series is matched to the classes {list(classes)} by "
                             f"its index (one share per class); missing: {missing}, extra: "
                             f"{extra}")
        value = value.reindex(list(classes)).to_numpy()
    # (True was the base rate 1, False 0: test_no_shift(value=True) tested P(Y = 1) = 1;
    # adjust_prior refuses a bool prior too)
    refuse_text_and_bools(value, name, "numeric base rates")
    try:
        arr = np.array(value, dtype=float, copy=True)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric base rates; got {value!r:.60}") from None
    if arr.ndim > 1:
        raise ValueError(f"{name} must be a number or a vector of {k} class shares; got shape "
                         f"{arr.shape}")
    arr = np.atleast_1d(arr)
    shown = arr.tolist() if arr.size > 1 else float(arr[0]) if arr.size else []
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite base rates; got {shown}")
    if k == 2 and arr.size == 1:
        arr = np.array([1 - arr[0], arr[0]])
        what = "a base rate P(Y = 1)"
    else:
        what = f"{k} class shares summing to 1" if k > 2 else \
            "a base rate P(Y = 1) or 2 class shares summing to 1"
    if arr.size != k:
        raise ValueError(f"{name} must be {what} (classes {list(classes)}); got {arr.size} "
                         "values")
    lo = arr > 0 if open_ else arr >= 0
    if not np.all(lo & (arr <= 1)):
        rng = "(0, 1)" if open_ else "[0, 1]"
        raise ValueError(f"{name} must be {what} in {rng}; got {shown}")
    if abs(arr.sum() - 1) > ROW_TOL:
        raise ValueError(f"{name} must be {what}; the values {arr.tolist()} sum to "
                         f"{arr.sum():.6g}")
    return arr / arr.sum()
