"""Input validation shared by every model.

Each checker returns a new float (or bool) array and never modifies its input; errors are
``ValueError`` naming the argument (and the column, where there is one).
"""

from __future__ import annotations

import numbers
import os
import re
import sys
import sysconfig
import warnings

import numpy as np
import pandas as pd

from ._dask import is_dask

__all__ = [
    "as_float_matrix",
    "as_float_vector",
    "check_binary",
    "check_unit_interval",
    "check_alpha",
    "check_full_rank",
    "check_feature_columns",
    "check_scale",
    "check_rng",
    "check_int",
    "check_real",
    "check_bool",
    "unwrap_0d",
    "refuse_text_and_bools",
    "warn_and_record",
]


def _names_of(x, k):
    if isinstance(x, pd.DataFrame):
        return [str(c) for c in x.columns]
    return [f"x{j + 1}" for j in range(k)]


def _is_nullable_numeric(dtype) -> bool:
    """pandas' nullable extension dtypes (Int64, Float64, boolean, ...): numeric with pd.NA."""
    return isinstance(dtype, pd.api.extensions.ExtensionDtype) and \
        pd.api.types.is_numeric_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)


def _numbers_as_text(col: pd.Series) -> bool:
    """Whether an object/string column holds only numbers written as text (e.g. "1.5")."""
    vals = col.dropna()
    if len(vals) == 0 or pd.api.types.infer_dtype(vals, skipna=True) != "string":
        return False
    # (as objects: on a pyarrow string column to_numeric gives double[pyarrow], whose NaN for
    # text that is not a number is not NA, so "north" counted as a number: session 83's audit)
    return bool(pd.to_numeric(vals.astype(object), errors="coerce").notna().all())


def _is_date_time(dtype) -> bool:
    """Dates, times, durations and periods, numpy's, pandas' or pyarrow's."""
    if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype) \
            or isinstance(dtype, pd.PeriodDtype):
        return True
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa  # (installed wherever an ArrowDtype exists)
        return bool(pa.types.is_temporal(dtype.pyarrow_dtype))
    return False


def check_feature_columns(df: pd.DataFrame, name: str, columns=None, *,
                          numeric: bool = True, encode: str | None = None) -> None:
    """Refuse DataFrame columns that would silently be misread as features.

    Parameters
    ----------
    df : pandas.DataFrame
    name : str
        The argument's name, for the message.
    columns : list, optional
        The columns to check (default: all).
    numeric : bool
        ``True`` (arrays of features): every column must be numeric (nullable ``Int64`` /
        ``Float64`` / ``boolean`` count as numeric, their ``pd.NA`` as missing). ``False``
        (formulas): categorical and text columns are allowed (they become dummies), but not
        numbers stored as text.
    encode : str, optional
        How the messages say a column of labels is to be encoded (default: as a pandas
        Categorical, for a formula), e.g. "with OneHotEncoder in a Pipeline".

    Raises
    ------
    ValueError
        Naming the column: duplicate column names, datetime/timedelta/period columns, numbers
        stored as text or in an object column, or (``numeric=True``) other non-numeric
        columns.
    """
    cols = list(df.columns) if columns is None else list(columns)
    labels = "to a pandas Categorical" if encode is None else f"encode them {encode}"
    dup = sorted({str(c) for c in df.columns[df.columns.duplicated()] if c in cols})
    if dup:
        raise ValueError(f"{name}: duplicate column name(s) {dup}; each column must have a "
                         "unique name (rename or drop the duplicates)")
    # (the dtypes read once, a column itself only where its values must be looked at:
    # selecting a column costs more than the checks, and the Dask routes check every
    # partition at every pass)
    dtypes = dict(zip(df.columns, df.dtypes, strict=True))
    for c in cols:
        dt = dtypes[c]
        if isinstance(dt, np.dtype) and dt.kind in "fiub":
            continue  # (numpy's real numbers and booleans: nothing below applies)
        if _is_date_time(dt):
            raise ValueError(f"{name}: column {str(c)!r} is a date/time ({dt}), not a number; "
                             "convert it (e.g. to days since a reference date, or to a "
                             "category)")
        if pd.api.types.is_complex_dtype(dt):
            # (numeric to pandas, so it was converted to float with its imaginary part dropped
            # and only numpy's ComplexWarning: session 82's audit)
            raise ValueError(f"{name}: column {str(c)!r} holds complex numbers ({dt}), not "
                             "real numbers")
        if (pd.api.types.is_object_dtype(dt) or pd.api.types.is_string_dtype(dt)) \
                and not isinstance(dt, pd.CategoricalDtype) and _numbers_as_text(df[c]):
            raise ValueError(f"{name}: column {str(c)!r} holds numbers stored as text; convert "
                             f"with pd.to_numeric (or {labels} if they are labels)")
        if pd.api.types.is_object_dtype(dt) and pd.api.types.infer_dtype(df[c], skipna=True) in (
                "integer", "floating", "mixed-integer-float", "decimal"):
            # (a formula made such a column categorical dummies, one per distinct number:
            # session 67's audit)
            raise ValueError(f"{name}: column {str(c)!r} holds numbers in an object column; "
                             f"convert with pd.to_numeric (or {labels} if they are labels)")
        if numeric and not pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt):
            how = "encode it or use a formula" if encode is None else f"encode it {encode}"
            raise ValueError(f"{name}: non-numeric column {str(c)!r} ({dt}); {how}")


#: numpy dtype kinds that a conversion to float would take silently but that are not real
#: numbers: complex (the imaginary part dropped), durations and dates (their integer counts)
_NOT_REAL = {"c": "complex numbers", "m": "durations (timedelta)", "M": "dates (datetime)"}


def refuse_text(x, name: str) -> None:
    """``ValueError`` if ``x`` (an array-like, not a DataFrame) holds text: numpy and pandas
    would convert numbers written as text ("0.3") to floats silently, which the columns of a
    DataFrame are refused for (:func:`check_feature_columns`); likewise complex numbers,
    durations and dates (``np.array(x, dtype=float)`` drops an imaginary part and reads a
    timedelta as its count of units: session 82's audit)."""
    kind = None
    if isinstance(x, (str, bytes)):
        text = True
    elif isinstance(x, pd.Series):
        kind = getattr(x.dtype, "kind", None)
        if isinstance(x.dtype, pd.CategoricalDtype):  # (numpy reads its text values too)
            text = any(isinstance(v, (str, bytes)) for v in x.dtype.categories)
        else:
            text = (pd.api.types.is_string_dtype(x.dtype)
                    or pd.api.types.is_object_dtype(x.dtype)) \
                and any(isinstance(v, (str, bytes)) for v in x.dropna())
    else:
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError):  # (ragged input: refused by the caller's conversion)
            return
        kind = arr.dtype.kind
        text = arr.dtype.kind in "US" or (arr.dtype.kind == "O" and any(
            isinstance(v, (str, bytes)) for v in arr.ravel()))
    if kind in _NOT_REAL:
        # ("Complex data not supported": scikit-learn's words, which its estimator checks ask
        # of the wrappers in puinfer.sklearn)
        what = "Complex data not supported: " if kind == "c" else ""
        raise ValueError(f"{what}{name} holds {_NOT_REAL[kind]}, not real numbers")
    if text:
        raise ValueError(f"{name} holds text, not numbers; convert it (e.g. with "
                         "pd.to_numeric) or pass numbers")


def refuse_dask(x, name: str) -> None:
    """``TypeError`` if ``x`` is a Dask collection: where a method takes in-memory data only,
    one would otherwise be computed silently and matched to the other rows by position."""
    if is_dask(x):
        raise TypeError(f"{name}: a Dask collection, which this method does not take; pass "
                        "in-memory data (e.g. .compute() a sample that fits in memory)")


def as_float_matrix(x, name: str) -> tuple[np.ndarray, list[str]]:
    """Return ``x`` as a new 2-D float array and its column names.

    Raises ``ValueError`` for non-numeric columns (naming datetimes and numbers stored as
    text), duplicate column names, missing (NaN, None, ``pd.NA``) or infinite values, or an
    empty array, naming the offending column. Nullable ``Int64``/``Float64``/``boolean``
    columns are numeric.
    """
    refuse_dask(x, name)
    if isinstance(x, pd.Series):
        x = x.to_frame()
    names = None
    if isinstance(x, pd.DataFrame):
        names = [str(c) for c in x.columns]
        check_feature_columns(x, name)
        dup = sorted({c for c in names if names.count(c) > 1})
        if dup:  # e.g. 1 and "1": one name once the parameters are labelled
            raise ValueError(f"{name}: column names {dup} occur more than once as text (e.g. "
                             "the number 1 and the string '1'); rename them")
        # pd.NA -> NaN (then refused below as missing, naming the column)
        arr = x.to_numpy(dtype=float, na_value=np.nan, copy=True)
    else:
        refuse_text(x, name)
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
    """Return ``x`` as a new 1-D float array; ``ValueError`` on text, missing values or bad
    shape."""
    refuse_dask(x, name)
    refuse_text(x, name)
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
    refuse_text(p, name)
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


def level_label(level: float) -> str:
    """A confidence level as printed in labels: ``0.95`` -> ``"95%"``, ``0.999`` ->
    ``"99.9%"`` (not rounded to ``"100%"``), ``0.975`` -> ``"97.5%"``; a level below 1 is never
    shown as 100% (``1 - 1e-10`` -> ``"99.99999999%"``)."""
    pct = 100 * float(level)
    for digits in (6, 9, 12, 17):
        text = f"{pct:.{digits}g}"
        if float(text) < 100 or pct >= 100:
            break
    return f"{text}%"


def check_alpha(alpha: float, name: str = "alpha") -> float:
    """Validate a significance level ``alpha`` (``1 - alpha`` is the confidence level).

    Values above 0.5 are refused: they almost always come from passing a confidence level
    (0.95) where a significance level (0.05) is meant, which would silently give a 5% interval.
    Values below :data:`ALPHA_MIN` are refused too: the quantiles of ``1 - alpha`` lose their
    digits there (``1 - 1e-17`` is 1: infinite Wald limits, an infinite profile cut-off;
    session 85's audit).
    """
    if isinstance(alpha, (bool, np.bool_, str, bytes)):
        raise TypeError(f"{name} must be a number in (0, 0.5], e.g. 0.05; got {alpha!r}")
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number in (0, 0.5], e.g. 0.05; got {alpha!r}") from None
    if not 0 < a < 1:
        raise ValueError(f"{name} must be in (0, 0.5], e.g. 0.05 for a 95% interval; got {alpha}")
    if a > 0.5:
        raise ValueError(f"{name} is the significance level (0.05 for a 95% interval); got {a}: "
                         f"did you mean {name}={1 - a:.3g}?")
    if a < ALPHA_MIN:
        raise ValueError(f"{name} must be at least {ALPHA_MIN:g} (the quantiles of 1 - {name} "
                         f"lose their precision below it); got {a:g}")
    return a


#: the smallest significance level accepted by :func:`check_alpha`
ALPHA_MIN = 1e-10


#: columns whose values (or spread) lie outside 10^-LIM..10^LIM are refused: squares and
#: products of such values (variances, covariances, standard errors on the user's scale)
#: under- or overflow in double precision.
SCALE_LIMIT = 1e150


#: rows per chunk of the passes over a tall design (:func:`robust_sd`,
#: :func:`check_full_rank`): the temporaries stay a few MB at any number of rows
ROW_CHUNK = 32_768


def _chunks(X: np.ndarray):
    return (X[i:i + ROW_CHUNK] for i in range(0, len(X), ROW_CHUNK))


def _max_abs(X: np.ndarray) -> np.ndarray:
    """Largest absolute value of each column (from the column extremes: no copy of ``X``)."""
    if not X.size:
        return np.zeros(X.shape[1])
    return np.maximum(np.abs(X.min(axis=0)), np.abs(X.max(axis=0)))


def robust_sd(X: np.ndarray, big: np.ndarray | None = None) -> np.ndarray:
    """Column standard deviations computed without overflow or underflow (each column is
    divided by its largest absolute value first, ``big`` if given), in chunks of rows."""
    X = np.asarray(X, dtype=float)
    n, k = X.shape
    if not n:
        return np.full(k, np.nan)
    scale = _max_abs(X) if big is None else big
    scale = np.where(scale > 0, scale, 1.0)
    mean = sum((c / scale).sum(axis=0) for c in _chunks(X)) / n
    ss = sum((((c / scale) - mean) ** 2).sum(axis=0) for c in _chunks(X))
    return np.sqrt(ss / n) * scale


def check_scale(X: np.ndarray, names: list[str], name: str, *, big=None, sd=None) -> None:
    """Refuse feature columns on an extreme scale, naming them.

    A column whose magnitude exceeds 1e150, or whose spread is non-zero but below 1e-150,
    cannot be handled in double precision (its variance and its coefficient's variance
    under- or overflow): ``ValueError`` saying to rescale it. ``big``, ``sd``: the columns'
    largest absolute values and :func:`robust_sd`, if already computed.
    """
    X = np.asarray(X, dtype=float)
    big = _max_abs(X) if big is None else big
    sd = robust_sd(X, big) if sd is None else sd
    for j, nm in enumerate(names):
        if big[j] > SCALE_LIMIT or 0 < sd[j] < 1 / SCALE_LIMIT:
            what = f"values up to {big[j]:.3g}" if big[j] > SCALE_LIMIT else \
                f"a spread (sd) of {sd[j]:.3g}"
            raise ValueError(f"{name}: column {nm!r} has {what}: its scale is the problem, not "
                             "collinearity; rescale it (multiply or divide by a power of 10) "
                             "so that its values are of moderate size")


def _r_factor(blocks, k: int) -> np.ndarray:
    """The triangular factor ``R`` of ``Z = QR``, ``Z`` the row ``blocks`` (``k`` columns)
    stacked: Householder QR of one block at a time under the last block's ``R`` (``Z`` and
    ``R`` have the same singular values and right singular vectors; ``Z`` is never formed)."""
    R = np.zeros((0, k))
    for b in blocks:
        R = np.linalg.qr(np.vstack([R, b]), mode="r")
    return R


def check_full_rank(X: np.ndarray, names: list[str], name: str, *, tol: float = 1e-10,
                    intercept: bool = False) -> None:
    """Raise ``ValueError`` naming constant or collinear columns of ``X``.

    An intercept column (all ones, named ``Intercept``) is allowed once and is not counted as
    a constant feature; ``intercept=True`` says the model has an intercept that ``X`` does not
    hold (counted among the columns, without a copy of ``X`` with it), and then a constant
    ``Intercept`` column is refused as any constant column. Columns are
    standardised without overflow, so that the scale of a column is never reported as
    collinearity (see :func:`check_scale` for extreme scales). The singular values come from
    the chunked QR factor of the standardised columns (:func:`_r_factor`), so the temporaries
    stay small on tall designs.
    """
    n, k = X.shape
    if n <= k + intercept:
        raise ValueError(f"{name}: {n} rows for {k + intercept} columns; need more rows than "
                         "parameters")
    lo, hi = X.min(axis=0), X.max(axis=0)
    # (where the model has its own intercept, a column named Intercept is a constant like any
    # other: a patsy.dmatrix design passed to SETM failed later as "starting values
    # infeasible", session 83's audit)
    const = [names[j] for j in range(k)
             if hi[j] == lo[j] and (intercept or names[j] != "Intercept")]
    if const:
        own = (" (the model has its own intercept: leave out the design's intercept column)"
               if intercept and "Intercept" in const else "")
        raise ValueError(f"{name}: constant column(s) {const} (zero variance); drop them"
                         + own + _level_hint(const))
    big = np.maximum(np.abs(lo), np.abs(hi))
    sd = robust_sd(X, big)
    check_scale(X, names, name, big=big, sd=sd)
    keep = np.flatnonzero(sd > 0)
    if keep.size == 0:
        return
    mean = sum(c[:, keep].sum(axis=0) for c in _chunks(X)) / n
    R = _r_factor(((c[:, keep] - mean) / sd[keep] for c in _chunks(X)), keep.size)
    _, s, vt = np.linalg.svd(R)
    if s[-1] <= tol * s[0] * np.sqrt(n):
        # a minimal offending set from the right singular vector
        v = vt[-1]
        kept = [names[j] for j in keep]
        involved = [kept[j] for j in np.flatnonzero(np.abs(v) > 1e-6 * np.abs(v).max())]
        raise ValueError(f"{name}: collinear columns {involved} (the design is singular); drop one"
                         + _full_coding_hint(involved, intercept or "Intercept" in names))


#: a patsy indicator column: ``term[T.level]`` (treatment coding) or ``term[level]`` (all levels)
_INDICATOR = re.compile(r"^(?P<term>.+)\[(?P<t>T\.)?(?P<level>[^\[\]]*)\]$")


def _indicator(col):
    """The match of an indicator column of a categorical term, or None. patsy names the
    columns of a numeric term with several (a spline basis ``bs(x, df=3)``, a matrix) as
    ``term[0]``, ``term[1]``, ...: an integer in brackets is an indicator only for a ``C()``
    term or in treatment coding (``[T.1]``)."""
    m = _INDICATOR.match(col)
    if m is None or (m["t"] is None and m["level"].isdigit()
                     and not m["term"].startswith("C(")):
        return None
    return m


def _level_hint(cols) -> str:
    """What a constant indicator column of a categorical term means (a level without rows: a
    user cannot drop a column patsy made)."""
    if not any(_indicator(c) for c in cols):
        return ""
    return (" (an indicator of a categorical level with no rows, or with every row -- with "
            "missing='drop', a level whose rows were all dropped: remove unused categories "
            "from the column after dropping them, e.g. .cat.remove_unused_categories(), or "
            "merge the level)")


def _full_coding_hint(cols, intercept: bool) -> str:
    """Where every collinear column is an all-levels indicator of one term beside the
    intercept: the formula's ``0 +`` / ``- 1``, which the model's own intercept overrides."""
    m = [_indicator(c) for c in cols]
    if not (intercept and cols and all(x is not None and x["t"] is None for x in m)
            and len({x["term"] for x in m}) == 1):
        return ""
    return (" (the model always has an intercept: a categorical term coded with all its levels, "
            "as '0 +' or '- 1' in the formula makes it, is collinear with it; keep the "
            "intercept in the formula)")


def check_int(value, name: str, *, minimum: int | None = None) -> int:
    """Return ``value`` as an int; ``TypeError`` if it is not an integer (bools, floats with a
    fraction, strings are refused), ``ValueError`` if below ``minimum``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, float,
                                                                      np.floating)):
        raise TypeError(f"{name} must be an integer; got {value!r}")
    if isinstance(value, (float, np.floating)) and not (np.isfinite(value)
                                                         and float(value).is_integer()):
        raise TypeError(f"{name} must be an integer; got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {value}")
    return value


def check_real(value, name: str, *, minimum: float | None = None,
               maximum: float | None = None, what: str | None = None) -> float:
    """Return ``value`` as a float; ``TypeError`` if it is not one real number (text such as
    ``"0.3"``, bools, ``None``, arrays are refused; a 0-d numeric array counts as its number),
    ``ValueError`` if it is not finite or lies outside ``[minimum, maximum]``. ``what``
    (default from the bounds, e.g. ``"a finite number >= 0"``) completes the message
    ``"<name> must be <what>; got <value>"``."""
    if what is None:
        what = ("a finite number" if minimum is None and maximum is None else
                f"a number in [{minimum:g}, {maximum:g}]" if minimum is not None
                and maximum is not None else
                f"a finite number >= {minimum:g}" if minimum is not None else
                f"a finite number <= {maximum:g}")
    value = unwrap_0d(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {what}; got {value!r:.60}")
    v = float(value)
    if not np.isfinite(v) or (minimum is not None and v < minimum) or \
            (maximum is not None and v > maximum):
        raise ValueError(f"{name} must be {what}; got {v}")
    return v


def _is_bool_valued(value) -> bool:
    """Whether ``value`` is True/False or an array of them (False where it cannot be read as
    an array, e.g. ragged: the caller's conversion refuses that)."""
    try:
        return isinstance(value, (bool, np.bool_)) or np.asarray(value).dtype == bool
    except (TypeError, ValueError):
        return False


def refuse_text_and_bools(value, name: str, what: str = "numeric") -> None:
    """``ValueError`` naming ``name`` if ``value`` holds numbers written as text
    (:func:`refuse_text`) or is True/False (or an array of them): rates and shares so written
    were taken as numbers (True as a base rate of 1). ``what`` completes "<name> must be
    <what>, not True/False"."""
    refuse_text(value, name)
    if _is_bool_valued(value):
        raise ValueError(f"{name} must be {what}, not True/False; got {value!r:.60}")


def unwrap_0d(value):
    """The element of a 0-d numpy array (as numpy's reductions may give), else ``value``: a
    scalar check then sees what the array holds (``np.array("0.3")`` is text, not a number)."""
    return value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value


def check_bool(value, name: str) -> bool:
    """``value`` if it is ``True`` or ``False`` (numpy's too), else ``ValueError`` naming
    ``name``: an option read by its truthiness took ``"False"`` as true and ``None`` as false."""
    value = unwrap_0d(value)
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r:.60}")
    return bool(value)


def check_rng(rng, name: str = "rng") -> np.random.Generator:
    """``numpy.random.default_rng(rng)`` for ``None`` (fresh entropy), an int seed, a sequence
    of int seeds, a ``SeedSequence`` or ``BitGenerator`` (e.g. from ``SeedSequence.spawn``),
    or a Generator (returned as it is: its stream continues); else ``TypeError``
    (``ValueError`` for a negative seed) saying what is accepted."""
    if rng is None or isinstance(rng, (np.random.Generator, np.random.SeedSequence,
                                       np.random.BitGenerator)):
        return np.random.default_rng(rng)

    def is_int(v):
        return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))

    if is_int(rng):
        seed = int(rng)
    elif isinstance(rng, (list, tuple, np.ndarray)) and np.ndim(rng) == 1 and len(rng) and \
            all(is_int(v) for v in rng):
        seed = [int(v) for v in rng]
    else:
        raise TypeError(f"{name} must be an int seed (or a sequence of them), a "
                        "numpy.random.Generator, SeedSequence or BitGenerator, or None (fresh "
                        f"draws); got {rng!r:.60}")
    if np.min(seed) < 0:
        raise ValueError(f"{name} must be a non-negative int seed; got {rng}")
    return np.random.default_rng(seed)


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
# the standard library's own files (site-packages may lie inside its directory: not those)
_STDLIB = tuple(os.path.abspath(p) + os.sep for p in
                {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})
_SITE = tuple(os.path.abspath(p) + os.sep for p in
              {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})


def _stdlib(filename: str) -> bool:
    return filename.startswith("<frozen") or (
        filename.startswith(_STDLIB) and not filename.startswith(_SITE))


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` in the calling function (a puinfer
    function) point at the line that called into puinfer: the caller of the outermost puinfer
    frame on the stack, past any standard-library frames that called it (a
    ``functools.cached_property``; third-party frames, e.g. a scikit-learn pipeline calling
    puinfer, are callers like any other), however deep in the package the warning arises.
    Where no frame outside the standard library called puinfer (``python -m puinfer``, a
    thread running a puinfer function), the outermost puinfer frame itself."""
    frames = []
    frame = sys._getframe(1)
    while frame is not None:
        frames.append(frame.f_code.co_filename)
        frame = frame.f_back
    inside = [i for i, f in enumerate(frames) if f.startswith(_PACKAGE)]
    outer = inside[-1] if inside else 0
    i = outer + 1
    while i < len(frames) and _stdlib(frames[i]):
        i += 1
    return (i if i < len(frames) else outer) + 1  # (stacklevel 1 is the calling function)


def warn(message: str, category) -> None:
    """``warnings.warn`` at the caller's line (:func:`user_stacklevel`)."""
    warnings.warn(message, category, stacklevel=user_stacklevel())


def warn_and_record(record: list, message: str, category) -> None:
    """:func:`warn` and append ``(category.__name__, message)`` to ``record``."""
    record.append((category.__name__, message))
    warnings.warn(message, category, stacklevel=user_stacklevel())


#: an ``InfluenceWarning`` where one row carries more than this share of a feature's (or an
#: outcome's) sum of squares about its mean. 0.9: ordinary heavy tails pass (lognormal with
#: sigma 1: at most 1% of samples of 40-10,000 rows; t with 3 df: 0.3%; at 0.5 these were 30%
#: and 14% at 40 rows, the review of session 83), a lognormal with sigma 2 or a Cauchy sample
#: warns in 5-20% of samples: one row then does drive a standardised fit
INFLUENCE_SHARE = 0.9


def largest_share(X: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """Per column of ``X`` (``(N, p)``; or a vector), the share of its sum of squares about
    ``mean`` that its row furthest from the mean carries (``sd`` the population sd: the sum
    is ``N sd^2``); 1 for a constant column."""
    X = X.reshape(len(X), -1)
    big = np.maximum(np.abs(X.max(axis=0) - mean), np.abs(X.min(axis=0) - mean))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, (big / np.where(sd > 0, sd, 1.0)) ** 2 / len(X), 1.0)

