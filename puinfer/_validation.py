"""Input validation shared by every model.

Each checker returns a new float (or bool) array and never modifies its input; errors are
``ValueError`` naming the argument (and the column, where there is one).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

__all__ = [
    "as_float_matrix",
    "as_float_vector",
    "check_binary",
    "check_unit_interval",
    "check_alpha",
    "check_full_rank",
    "warn_and_record",
]


def _names_of(x, k):
    if isinstance(x, pd.DataFrame):
        return [str(c) for c in x.columns]
    return [f"x{j + 1}" for j in range(k)]


def as_float_matrix(x, name: str) -> tuple[np.ndarray, list[str]]:
    """Return ``x`` as a new 2-D float array and its column names.

    Raises ``ValueError`` for non-numeric columns, missing or infinite values, or an empty
    array, naming the offending column.
    """
    if isinstance(x, pd.Series):
        x = x.to_frame()
    names = None
    if isinstance(x, pd.DataFrame):
        names = [str(c) for c in x.columns]
        nonnum = [str(c) for c in x.columns if not pd.api.types.is_numeric_dtype(x[c])]
        if nonnum:
            raise ValueError(f"{name}: non-numeric column(s) {nonnum}; encode them or use a formula")
        arr = x.to_numpy(dtype=float, copy=True)
    else:
        try:
            arr = np.array(x, dtype=float, copy=True)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be numeric; got values that cannot be "
                             "converted to float") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (rows x features); got {arr.ndim} dimensions")
    if names is None:
        names = _names_of(x, arr.shape[1])
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty (no rows)")
    bad = ~np.isfinite(arr)
    if bad.any():
        cols = [names[j] for j in np.flatnonzero(bad.any(axis=0))]
        raise ValueError(f"{name}: missing or non-finite values in column(s) {cols}")
    return arr, names


def as_float_vector(x, name: str, *, allow_empty: bool = False) -> np.ndarray:
    """Return ``x`` as a new 1-D float array; ``ValueError`` on missing values or bad shape."""
    try:
        arr = np.array(x, dtype=float, copy=True)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric") from None
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional; got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty")
    if np.isnan(arr).any():
        raise ValueError(f"{name}: {int(np.isnan(arr).sum())} missing value(s)")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name}: infinite values")
    return arr


def check_binary(y, name: str) -> np.ndarray:
    """Return ``y`` as a new 0/1 float vector; ``ValueError`` if any value is not 0 or 1."""
    if isinstance(y, pd.Series) and y.dtype == bool:
        y = y.astype(float)
    arr = as_float_vector(y, name)
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        vals = np.unique(arr[bad])[:5]
        raise ValueError(f"{name} must be 0/1; found value(s) {vals.tolist()}")
    return arr


def check_unit_interval(p, name: str, *, open_: bool = False) -> np.ndarray:
    """Return ``p`` as a new float array; ``ValueError`` if outside [0, 1] (or (0, 1))."""
    try:
        arr = np.array(p, dtype=float, copy=True)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric probabilities") from None
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if np.isnan(arr).any():
        raise ValueError(f"{name}: {int(np.isnan(arr).sum())} missing value(s)")
    if open_:
        bad = (arr <= 0) | (arr >= 1)
        what = "strictly inside (0, 1)"
    else:
        bad = (arr < 0) | (arr > 1)
        what = "in [0, 1]"
    if bad.any():
        raise ValueError(f"{name} must be {what}; {int(bad.sum())} value(s) are not "
                         f"(e.g. {arr[bad].ravel()[:3].tolist()})")
    return arr


def check_alpha(alpha: float, name: str = "alpha") -> float:
    """Validate a significance level ``alpha`` (``1 - alpha`` is the confidence level).

    Values above 0.5 are refused: they almost always come from passing a confidence level
    (0.95) where a significance level (0.05) is meant, which would silently give a 5% interval.
    """
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number in (0, 0.5], e.g. 0.05; got {alpha!r}") from None
    if not 0 < a < 1:
        raise ValueError(f"{name} must be in (0, 0.5], e.g. 0.05 for a 95% interval; got {alpha}")
    if a > 0.5:
        raise ValueError(f"{name} is the significance level (0.05 for a 95% interval); got {a}: "
                         f"did you mean {name}={1 - a:.3g}?")
    return a


def check_full_rank(X: np.ndarray, names: list[str], name: str, *, tol: float = 1e-10) -> None:
    """Raise ``ValueError`` naming constant or collinear columns of ``X``.

    An intercept column (all ones, named ``Intercept``) is allowed once and is not counted as
    a constant feature.
    """
    n, k = X.shape
    if n <= k:
        raise ValueError(f"{name}: {n} rows for {k} columns; need more rows than parameters")
    sd = X.std(axis=0)
    const = [names[j] for j in range(k) if sd[j] == 0 and names[j] != "Intercept"]
    if const:
        raise ValueError(f"{name}: constant column(s) {const} (zero variance); drop them")
    Z = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    Z = Z[:, sd > 0]
    if Z.shape[1] == 0:
        return
    s = np.linalg.svd(Z, compute_uv=False)
    if s[-1] <= tol * s[0] * np.sqrt(n):
        # find a minimal offending set from the right singular vector
        _, _, vt = np.linalg.svd(Z, full_matrices=False)
        v = vt[-1]
        kept = [names[j] for j in np.flatnonzero(sd > 0)]
        involved = [kept[j] for j in np.flatnonzero(np.abs(v) > 1e-6 * np.abs(v).max())]
        raise ValueError(f"{name}: collinear columns {involved} (the design is singular); drop one")


def warn_and_record(record: list, message: str, category, stacklevel: int = 3) -> None:
    """Issue ``warnings.warn`` and append ``(category.__name__, message)`` to ``record``."""
    record.append((category.__name__, message))
    warnings.warn(message, category, stacklevel=stacklevel)
