"""Formula adapter: the only module in puinfer that imports the formula engine (patsy).

Keeping the engine behind :func:`build_design` and :meth:`Design.transform` means the
engine could be swapped (formulaic is patsy's successor) without touching any model.
``Design`` never exposes patsy objects publicly; it keeps the formula string so that it
can be rebuilt, because patsy's ``DesignInfo`` does not pickle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import patsy

from ._align import check_missing_option
from ._validation import _is_nullable_numeric, check_feature_columns

__all__ = ["Design", "build_design", "logit", "expit", "poly", "FORMULA_NAMESPACE",
           "ColumnCoding", "plain_columns", "column_coding"]


def logit(p):
    """Log-odds ``log(p / (1 - p))``, elementwise; values must lie strictly in (0, 1)."""
    p = np.asarray(p, dtype=float)
    if np.any((p <= 0) | (p >= 1)):
        raise ValueError("logit() needs values strictly inside (0, 1); clip the scores first")
    return np.log(p) - np.log1p(-p)


def expit(x):
    """Inverse of :func:`logit`."""
    from scipy.special import expit as _expit

    return _expit(np.asarray(x, dtype=float))


class _Poly:
    """Stateful orthogonal polynomial basis, as R's ``poly(x, degree)``.

    patsy's stateful-transform protocol (``memorize_chunk``/``memorize_finish``/``transform``)
    makes the basis learned on the fitting data reusable on new data, as ``predict`` needs.
    The columns are orthonormal on the fitting data (three-term recurrence of R's ``poly``).
    """

    def __init__(self):
        self._chunks = []

    def memorize_chunk(self, x, degree=2):
        self._chunks.append(np.asarray(x, dtype=float).ravel())

    def memorize_finish(self):
        x = np.concatenate(self._chunks)
        self._chunks = []
        self._fitted_x = x

    def _fit(self, x, degree):
        # R's poly(): QR of the Vandermonde matrix gives alpha and norm2 for the recurrence.
        xbar = x.mean()
        xc = x - xbar
        if np.unique(x).size <= degree:
            raise ValueError(f"poly(): degree {degree} needs at least {degree + 1} distinct values")
        X = np.vander(xc, degree + 1, increasing=True)
        q, r = np.linalg.qr(X)
        # each power against its own norm, so that the unit of x does not matter (R's qr() rank
        # test is column-relative too): against the largest diagonal element, x in dollars
        # (values near 6e4) failed degree 3 as "needs at least 4 distinct values"
        if np.any(np.abs(np.diag(r)) <= 1e-10 * np.linalg.norm(X, axis=0)):
            raise ValueError(f"poly(): the powers of x up to degree {degree} are numerically "
                             "collinear (too few distinct values, or one value far from the "
                             "others); lower the degree")
        z = q * np.diag(r)
        norm2 = np.sum(z**2, axis=0)
        alpha = (np.sum(xc[:, None] * z**2, axis=0) / norm2 + xbar)[:degree]
        self._coefs = (alpha, np.concatenate([[1.0], norm2]))

    def _basis(self, x, degree):
        alpha, norm2 = self._coefs
        Z = np.empty((x.size, degree + 1))
        Z[:, 0] = 1.0
        Z[:, 1] = x - alpha[0]
        for i in range(1, degree):
            Z[:, i + 1] = (x - alpha[i]) * Z[:, i] - (norm2[i + 1] / norm2[i]) * Z[:, i - 1]
        return Z[:, 1:] / np.sqrt(norm2[2:])

    def transform(self, x, degree=2):
        x = np.asarray(x, dtype=float).ravel()
        if not hasattr(self, "_coefs"):
            self._fit(self._fitted_x, degree)
        return self._basis(x, degree)


poly = patsy.stateful_transform(_Poly)

#: Names available inside every puinfer formula, besides numpy as ``np``.
FORMULA_NAMESPACE = {"logit": logit, "expit": expit, "poly": poly, "np": np, "log": np.log,
                     "exp": np.exp, "sqrt": np.sqrt}


@dataclass(frozen=True)
class Design:
    """Design matrices built from a formula.

    Attributes
    ----------
    formula : str
        The formula as given.
    y : pandas.Series or None
        The left-hand side, if the formula has one.
    X : pandas.DataFrame
        The right-hand side design (columns named by the formula terms).
    has_intercept : bool
        Whether ``X`` contains the intercept column ``"Intercept"``.
    n_dropped : int
        Rows of ``data`` dropped for a missing value in a column the formula uses
        (``missing="drop"``; 0 with ``missing="raise"``).
    kept : numpy.ndarray of bool or None
        Which rows of ``data`` (by position) the design holds; None when none was dropped.
        ``X`` and ``y`` carry the kept rows' index.
    """

    formula: str
    #: (held privately and handed out as copies by :attr:`y` and :attr:`X`: a fitted model's
    #: design is read by its results, e.g. when it is rebuilt after unpickling; session 74's
    #: audit found ``r.model.design.X.rename(..., inplace=True)`` breaking the unpickled
    #: result's ``predict``)
    _y: pd.Series | None
    _X: pd.DataFrame
    has_intercept: bool
    _rhs_info: object = field(repr=False, compare=False, default=None)
    #: the data columns the formula reads (rows as fitted): the learned state of the
    #: formula's stateful transforms (centring, ``poly``, splines) is rebuilt from them
    _source: pd.DataFrame | None = field(repr=False, compare=False, default=None)
    n_dropped: int = 0
    kept: np.ndarray | None = field(repr=False, compare=False, default=None)

    @property
    def y(self) -> pd.Series | None:
        """The left-hand side (a copy), or None."""
        return None if self._y is None else self._y.copy(deep=False)

    @property
    def X(self) -> pd.DataFrame:
        """The right-hand side design (a copy)."""
        return self._X.copy(deep=False)

    @property
    def exog_names(self) -> list[str]:
        """Column names of the right-hand side design."""
        return list(self._X.columns)

    @property
    def rhs(self) -> str:
        """The right-hand side of the formula (without ``~``)."""
        return self.formula.split("~", 1)[-1]

    def __getstate__(self):
        # patsy's DesignInfo refuses to pickle; it is rebuilt on first use after unpickling
        state = dict(self.__dict__)
        state["_rhs_info"] = None
        return state

    def __setstate__(self, state):
        # (designs pickled before session 74 hold "X" and "y")
        state = dict(state)
        for name in ("X", "y"):
            if name in state:
                state["_" + name] = state.pop(name)
        self.__dict__.update(state)

    def _info(self):
        if self._rhs_info is None:
            if self._source is None:
                raise RuntimeError(f"the design of {self.formula!r} cannot be rebuilt: "
                                   "its source columns were not kept")
            X = patsy.dmatrix(self.rhs, self._source, eval_env=_env(),
                              NA_action=patsy.NAAction(NA_types=[]), return_type="dataframe")
            if list(X.columns) != list(self._X.columns):
                raise RuntimeError(f"rebuilding the design of {self.formula!r} gave columns "
                                   f"{list(X.columns)}, not {list(self._X.columns)}")
            object.__setattr__(self, "_rhs_info", X.design_info)
        return self._rhs_info

    def transform(self, newdata) -> pd.DataFrame:
        """Build the right-hand side design for new data with the fitted stateful transforms.

        The rows keep ``newdata``'s index (and order). Missing values in a used column are
        refused (naming the column), whatever ``missing`` was at fit time: a prediction is
        needed for every row asked for.
        """
        newdata = _as_frame(newdata, "newdata")
        newdata, _ = _clean(newdata, _used_columns(self.rhs, newdata), "newdata", "raise",
                            can_drop=False)
        try:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # see build_design
                (X,) = patsy.build_design_matrices([self._info()], newdata,
                                                   NA_action=patsy.NAAction(NA_types=[]),
                                                   return_type="dataframe")
        except patsy.PatsyError as exc:
            raise ValueError(f"cannot evaluate formula {self.formula!r} on newdata: {exc}") from None
        except (AttributeError, TypeError) as exc:
            # patsy's internals on a column of another kind than at fit time (categories or
            # True/False where the fit had numbers: "'DataFrame' object has no attribute
            # 'dtype'", session 68's audit)
            raise ValueError(f"cannot evaluate formula {self.formula!r} on newdata: a column "
                             "used by the formula is not of the kind it had at fit time "
                             f"(numbers vs categories) ({type(exc).__name__}: {exc})") from None
        _check_finite(X, "newdata")
        X.index = newdata.index
        return X


def _env():
    return patsy.EvalEnvironment([FORMULA_NAMESPACE])


def _used_columns(formula: str, data: pd.DataFrame) -> list:
    """The columns of ``data`` that ``formula`` names (as identifiers or quoted in ``Q()``)."""
    import io
    import tokenize

    words = set()
    prev: list = []  # the two tokens before this one
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(formula).readline))
    except tokenize.TokenError:
        # (session 68's audit: tokenize's "EOF in multi-line statement" reached the caller)
        raise ValueError(f"cannot parse formula {formula!r}: unbalanced parentheses or "
                         "quotes") from None
    for i, tok in enumerate(toks):
        after = toks[i + 1].string if i + 1 < len(toks) else ""
        before = prev[-1].string if prev else ""
        if tok.type == tokenize.NAME and after not in ("(", "=") and before != ".":
            # (a function called, a keyword argument or an attribute is not a column, even
            # where a column has its name: bs(x, df=4) on data with a column "df"; a name
            # followed by "." is: patsy looks names up in the data first, so g.str.upper() and
            # x.clip(0, 1) read the columns g and x, and np.log(x) would read a column "np")
            words.add(tok.string)
        elif tok.type == tokenize.STRING and [t.string for t in prev] == ["Q", "("]:
            # a column quoted as Q("name with spaces"); other strings (a reference level,
            # C(g, Treatment('b'))) are not columns
            try:
                words.add(eval(tok.string, {}))
            except Exception:  # noqa: BLE001 - not a plain literal: not a column name
                pass
        prev = [*prev, tok][-2:]
    return [c for c in data.columns if c in words]


def _clean(data: pd.DataFrame, used: list, what: str, missing: str, can_drop: bool = True
           ) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Check the columns a formula uses and apply ``missing``.

    Refuses (``ValueError`` naming the column) duplicate names, dates/times and numbers stored
    as text; nullable numeric columns (``Int64``, ``Float64``, ``boolean``, pyarrow's numbers)
    become numpy columns of the same kind (integer, float, bool) with ``pd.NA`` as missing,
    narrower numpy integers and floats become ``int64`` and ``float64`` (patsy computes
    ``I(x ** 2)`` in the column's width), pyarrow text becomes objects and pyarrow
    dictionaries Categoricals.
    ``missing="raise"`` refuses missing values in a used column, naming it; ``"drop"`` drops
    those rows. Returns the (new) frame and the boolean
    mask of kept rows (None if none was dropped). ``data`` is not modified.
    """
    check_feature_columns(data, what, used, numeric=False)
    if not used:
        return data, None
    sub = data[used]
    miss = sub.isna()
    keep = None
    if miss.to_numpy().any():
        if missing == "raise":
            cols = [str(c) for c in used if miss[c].any()]
            counts = [int(miss[c].sum()) for c in used if miss[c].any()]
            hint = ("rows are never dropped silently: fill them, or pass missing='drop' to "
                    "drop those rows" if can_drop else
                    "a prediction is made for every row: fill them, or leave those rows out")
            raise ValueError(f"{what}: missing values in column(s) {cols} ({counts} row(s)); "
                             + hint)
        keep = ~miss.any(axis=1).to_numpy()
        data = data[keep]
    conv = {}
    for c in used:
        dt = data[c].dtype
        if _is_nullable_numeric(dt):
            # patsy does not understand pandas' nullable dtypes: plain numpy columns of the
            # same kind (integers stay integers, so that C(k) names its levels T.1, not T.1.0;
            # no missing values are left here)
            # (int64 whatever the width, as a plain integer column: an UInt8 column kept as
            # uint8 made I(k - 1) wrap to 255 at k = 0, and Int8's I(k * k) overflow)
            conv[c] = data[c].to_numpy(dtype=bool if pd.api.types.is_bool_dtype(dt) else
                                       (np.uint64 if dt.numpy_dtype == np.uint64 else np.int64)
                                       if pd.api.types.is_integer_dtype(dt) else float)
        elif isinstance(dt, np.dtype) and dt.kind in "iu" and dt.itemsize < 8:
            # numpy's narrow integers too: patsy computes I(age ** 2) in the column's own
            # width, so an int8 age wrapped to -127..113 and the fit used those numbers
            # without a word (session 83's audit); int64 holds every such value
            conv[c] = data[c].to_numpy(dtype=np.int64)
        elif isinstance(dt, np.dtype) and dt.kind == "f" and dt.itemsize < 8:
            # (float16's I(x ** 2) overflowed to inf, np.log of a float16 kept 3 digits)
            conv[c] = data[c].to_numpy(dtype=float)
        elif isinstance(dt, pd.ArrowDtype):
            # patsy cannot read pyarrow's other dtypes (read_csv(dtype_backend="pyarrow"),
            # Parquet): text as objects, a dictionary (Parquet's categorical) as a Categorical
            # of its dictionary, in its order
            if str(dt.pyarrow_dtype).startswith("dictionary"):
                cat = data[c].astype("category").cat
                conv[c] = pd.Categorical(data[c].astype(object),
                                         categories=cat.categories.astype(object),
                                         ordered=cat.ordered)
            else:
                conv[c] = data[c].astype(object).to_numpy()
    if conv:
        data = data.copy(deep=False)  # a new frame: the caller's is not modified
        for c, v in conv.items():
            data[c] = v
    return data, keep


def _as_frame(data, name):
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, dict):
        if data and all(np.ndim(v) == 0 for v in data.values()):
            # (pandas' own "If using all scalar values, you must pass an index" reached the
            # caller of predict({"x1": 1.0, "x2": 0.0}): session 74's audit)
            raise ValueError(f"{name}: a dict of columns needs a list of values per column; "
                             f"for one row write {{{next(iter(data))!r}: [value], ...}}")
        return pd.DataFrame(data)
    raise TypeError(f"{name} must be a pandas DataFrame (or a dict of columns), got {type(data).__name__}")


def _check_finite(X: pd.DataFrame, what: str):
    bad = ~np.isfinite(X.to_numpy(dtype=float))
    if bad.any():
        cols = [c for c, b in zip(X.columns, bad.any(axis=0), strict=True) if b]
        raise ValueError(f"{what}: missing or non-finite values in design column(s) {cols}")


def _check_levels(info) -> None:
    """Refuse a categorical factor with a missing level: patsy (with no NA types, as here)
    codes NaN/None as a category of its own, which would be a silent wrong coding (rows that
    statsmodels and R drop, or the reference level taken by the missing values)."""
    for factor, fi in info.factor_infos.items():
        if fi.type == "categorical" and any(
                lv is None or (isinstance(lv, (float, np.floating)) and np.isnan(lv))
                or lv is pd.NA or lv is pd.NaT for lv in fi.categories):
            raise ValueError(f"data: the categorical term {factor.name()!r} has missing values "
                             "(from its expression, e.g. a map() that misses a level); fill "
                             "them in the expression or drop those rows first")


def lhs_column(formula: str, data: pd.DataFrame):
    """The column of ``data`` that the formula's left-hand side is (``y`` or ``Q("y")``), or
    None if it is an expression or has no left-hand side."""
    if "~" not in formula:
        return None
    lhs = formula.split("~", 1)[0].strip()
    if lhs in data.columns:
        return lhs
    m = re.fullmatch(r"""Q\(\s*('[^']*'|"[^"]*")\s*\)""", lhs)
    if m is not None and m.group(1)[1:-1] in data.columns:
        return m.group(1)[1:-1]
    return None


def build_design(formula: str, data, *, require_lhs: bool | None = None,
                 missing: str = "raise") -> Design:
    """Evaluate ``formula`` on ``data`` and return a :class:`Design`.

    The design's rows carry ``data``'s index, in ``data``'s order (the package's alignment
    rule, :mod:`puinfer._align`: outputs carry the caller's index).

    Parameters
    ----------
    formula : str
        A patsy/R-style formula, e.g. ``"labeled ~ x1 + poly(x2, 3)"`` or ``"~ x1 + x2"``.
        ``logit``, ``expit``, ``poly`` (orthogonal, as R) and numpy (``np``) are available.
    data : pandas.DataFrame
        The data. It is not modified.
    require_lhs : bool, optional
        ``True`` to demand a left-hand side, ``False`` to forbid one, ``None`` for either.
    missing : {"raise", "drop"}
        Missing values (NaN, None, ``pd.NA``) in a column the formula uses (either side):
        ``"raise"`` (default) refuses them, naming the column; ``"drop"`` drops those rows
        (R's ``na.action = na.omit``), recorded in ``Design.n_dropped`` and ``Design.kept``.

    Returns
    -------
    Design

    Raises
    ------
    ValueError
        If the formula cannot be evaluated or names a missing column; if a used column is a
        date/time, holds numbers stored as text, or has a duplicated name; or if a used
        column has missing values with ``missing="raise"`` (rows are never dropped
        silently). Nullable ``Int64``/``Float64``/``boolean`` columns are numeric, their
        ``pd.NA`` missing.
    """
    check_missing_option(missing)
    data = _as_frame(data, "data")
    if not isinstance(formula, str):
        raise TypeError("formula must be a string")
    used = _used_columns(formula, data)
    if "Intercept" in used:
        # (patsy's own "mismatch between column_names and columns coded by given terms" was
        # all the caller saw: session 83's audit)
        raise ValueError("data: a column named 'Intercept' clashes with the intercept column "
                         "of the design; rename it")
    data, keep = _clean(data, used, "data", missing)
    has_lhs = "~" in formula and formula.split("~", 1)[0].strip() != ""
    if require_lhs is True and not has_lhs:
        raise ValueError(f"formula {formula!r} needs a left-hand side (the response)")
    if require_lhs is False and has_lhs:
        raise ValueError(f"formula {formula!r} must not have a left-hand side here; write '~ x1 + x2'")
    lhs = lhs_column(formula, data)
    dt = data[lhs].dtype if lhs is not None else None
    if dt is not None and dt.kind == "O" and len(data) and data[lhs].map(type).isin([bool, np.bool_]).all():
        # True/False held as objects (a bool column that had a missing value, after the
        # rows with it were dropped): the 0/1 response as well
        dt = np.dtype(bool)
    if dt is not None and pd.api.types.is_bool_dtype(dt):
        # a True/False response is the 0/1 one (patsy would make it two indicator columns)
        data = data.assign(**{lhs: data[lhs].to_numpy(dtype=float)})
    elif isinstance(dt, pd.CategoricalDtype) and \
            pd.api.types.is_numeric_dtype(dt.categories.dtype) and set(dt.categories) <= {0, 1}:
        # so is a categorical one with categories 0 and 1 (as on Dask): its values, not codes
        data = data.assign(**{lhs: data[lhs].astype(float)})
    env = _env()
    # NA_types=[] makes patsy keep NaN rows so that we can name the offending column
    # instead of silently dropping rows.
    na = patsy.NAAction(NA_types=[])
    try:
        # a transform outside its domain (np.log(0)) gives inf/NaN: named by _check_finite
        # below rather than leaked as a numpy RuntimeWarning
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if has_lhs:
                y, X = patsy.dmatrices(formula, data, eval_env=env, NA_action=na,
                                       return_type="dataframe")
            else:
                rhs = formula.split("~", 1)[-1]
                X = patsy.dmatrix(rhs, data, eval_env=env, NA_action=na, return_type="dataframe")
                y = None
    except patsy.PatsyError as exc:
        raise ValueError(f"cannot evaluate formula {formula!r}: {exc}") from None
    except NameError as exc:
        raise ValueError(f"formula {formula!r} names an unknown column or function: {exc}") from None
    _check_finite(X, "data")
    for info in [X.design_info] + ([y.design_info] if y is not None else []):
        _check_levels(info)
    ys = None
    if y is not None:
        cols = [str(c) for c in y.columns]
        if len(cols) == 2 and cols[0].endswith("[False]") and cols[1].endswith("[True]") \
                and cols[0][:-7] == cols[1][:-6]:
            # a True/False expression, I(y == 1): the 0/1 response, as a bool column is
            y = y.iloc[:, [1]].set_axis([cols[1][:-6]], axis=1)
        if y.shape[1] != 1:
            raise ValueError(
                f"the left-hand side of {formula!r} must be one numeric 0/1 column; "
                f"got columns {list(y.columns)} (a non-numeric response?)")
        ys = y.iloc[:, 0]
        if not np.all(np.isfinite(ys.to_numpy(dtype=float))):
            raise ValueError(f"data: missing values in the response {ys.name!r}")
        ys.index = data.index
    X.index = data.index
    source = data[_used_columns(formula.split("~", 1)[-1], data)].copy()
    n_dropped = 0 if keep is None else int((~keep).sum())
    return Design(formula=formula, _y=ys, _X=X, has_intercept="Intercept" in X.columns,
                  _rhs_info=X.design_info, _source=source, n_dropped=n_dropped, kept=keep)


# ---------------------------------------------------------------------------------------------
# a right-hand side of plain columns, coded without the rows (data in blocks: Dask)
# ---------------------------------------------------------------------------------------------
def _quoted_column(code: str, columns=None) -> str | None:
    """The column that a factor's code names: ``x`` or ``Q("x")`` (else None); with
    ``columns``, only one of them."""
    import ast
    import io
    import tokenize

    if code in (columns or ()) or (columns is None and code.isidentifier()):
        return code
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
                if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)]
    except tokenize.TokenError:
        return None
    if [t.string for t in toks[:2]] != ["Q", "("] or len(toks) != 4 or toks[3].string != ")" \
            or toks[2].type != tokenize.STRING:
        return None
    try:
        name = ast.literal_eval(toks[2].string)
    except (ValueError, SyntaxError):
        return None
    return name if columns is None or name in columns else None


def plain_columns(rhs: str, columns) -> list:
    """The data columns that the terms of the right-hand side ``rhs`` name, in order.

    Every term must be one column, named as it is or quoted as ``Q("name")``: what can be
    coded as in memory without seeing the rows first (:func:`column_coding`).

    Parameters
    ----------
    rhs : str
        The right-hand side, without ``~``.
    columns : sequence of str
        The data's column names.

    Returns
    -------
    list of str
        The columns, each once.

    Raises
    ------
    NotImplementedError
        For a transform or an interaction (naming the term).
    ValueError
        If a term names a column that ``columns`` lacks, or no term names a column.
    """
    columns = [str(c) for c in columns]
    try:
        desc = patsy.ModelDesc.from_formula("~" + rhs)
    except patsy.PatsyError as exc:
        raise ValueError(f"cannot parse formula '~{rhs}': {exc}") from None
    out = []
    for term in desc.rhs_termlist:
        if not term.factors:
            continue  # the intercept (always included by the model)
        col = _quoted_column(term.factors[0].code, columns) if len(term.factors) == 1 else None
        if col is None and len(term.factors) == 1 and \
                _quoted_column(term.factors[0].code) is not None:
            # (a name that is no column was refused as a transform)
            raise ValueError(f"formula '~{rhs}' names an unknown column "
                             f"{_quoted_column(term.factors[0].code)!r}")
        if col is None:
            # (a stateful transform -- centring, poly, splines -- learns its state from all
            # rows, which the blocks cannot share; other transforms, interactions and C() are
            # refused with them rather than a part of the formula language taken)
            raise NotImplementedError(
                f"formula term {term.name()!r}: with a Dask DataFrame the right-hand side must "
                "name plain columns (numeric, True/False, categorical or text, as they are or "
                "quoted as Q('name')); transforms, interactions and C() are not evaluated on "
                "Dask collections (some, as poly() and splines, learn their state from all "
                "rows); compute the column in the Dask DataFrame first, e.g. "
                "ddf.assign(x2=ddf.x ** 2)")
        if col not in out:
            out.append(col)
    if not out:
        raise ValueError("the formula has no feature columns")
    return out


@dataclass(frozen=True, eq=False)
class ColumnCoding:
    """The design of a right-hand side whose terms are plain columns, coded without the rows.

    Built by :func:`column_coding` from the columns' dtypes (and the levels of text columns):
    numeric columns as they are, True/False, categorical and text columns by the contrast
    matrices patsy gives them in memory (treatment coding, the first level the reference),
    with patsy's column names and order. Each block of rows (a partition of a Dask DataFrame)
    is then coded alike, with no state learned from it.

    Attributes
    ----------
    formula : str
        The right-hand side, as ``"~ ..."``.
    columns : tuple of str
        The data columns read.
    names : tuple of str
        The design's column names, without the intercept (patsy's, in patsy's order).
    parts : tuple
        One ``(column, levels, contrast)`` per term, in the design's order: ``levels`` and
        ``contrast`` (levels x columns) are None for a numeric column.
    """

    formula: str
    columns: tuple
    names: tuple
    parts: tuple = field(repr=False)

    def __dask_tokenize__(self):
        # (deterministic: a model's data fingerprint is a token of its formula's coding)
        return ("ColumnCoding", self.formula, self.columns, self.names,
                tuple((c, lv, None if m is None else (m.shape, m.tobytes()))
                      for c, lv, m in self.parts))

    @property
    def plain(self) -> bool:
        """Whether the design is the numeric columns themselves, by their names."""
        return self.names == self.columns and all(lv is None for _, lv, _ in self.parts)

    def code(self, frame: pd.DataFrame, what: str = "data") -> pd.DataFrame:
        """The design of the rows of ``frame`` (cleaned by :func:`_clean`: no missing values
        in the columns read), on its index; ``what`` names it in a refusal."""
        cols = []
        for col, levels, contrast in self.parts:
            v = frame[col]
            if levels is None:
                if not (pd.api.types.is_numeric_dtype(v.dtype) and
                        not pd.api.types.is_bool_dtype(v.dtype)):
                    raise ValueError(f"cannot evaluate formula {self.formula!r} on {what}: "
                                     f"column {col!r} is not numeric ({v.dtype}) as at fit "
                                     "time")
                cols.append(v.to_numpy(dtype=float)[:, None])
                continue
            codes = pd.Index(levels).get_indexer(v)
            if (codes < 0).any():
                # patsy looks levels up by Python equality, so in memory 0/1 (or 0.0/1.0)
                # code a True/False column; pandas' typed index does not match them across
                # dtypes: looked up again as Python objects (session 87's review)
                codes = pd.Index(list(levels), dtype=object).get_indexer(
                    pd.Index(np.asarray(v, dtype=object)))
            if (codes < 0).any():
                bad = list(pd.unique(np.asarray(v, dtype=object)[codes < 0]))[:3]
                raise ValueError(f"cannot evaluate formula {self.formula!r} on {what}: column "
                                 f"{col!r} has value(s) {bad} that are not among its levels "
                                 f"{list(levels)}")
            cols.append(contrast[codes])
        X = np.hstack(cols) if cols else np.empty((len(frame), 0))
        return pd.DataFrame(X, columns=list(self.names), index=frame.index)

    def transform(self, newdata) -> pd.DataFrame:
        """The design for new data (as :meth:`Design.transform`: missing values refused,
        naming the column; the rows keep ``newdata``'s index)."""
        newdata = _as_frame(newdata, "newdata")
        absent = [c for c in self.columns if c not in newdata.columns]
        if absent:
            raise ValueError(f"cannot evaluate formula {self.formula!r} on newdata: it lacks "
                             f"the column(s) {absent}")
        newdata, _ = _clean(newdata, list(self.columns), "newdata", "raise", can_drop=False)
        X = self.code(newdata, "newdata")
        _check_finite(X, "newdata")
        return X


def _is_text(dtype) -> bool:
    """Text or Python objects (patsy codes them by their sorted distinct values)."""
    return not isinstance(dtype, pd.CategoricalDtype) and (
        pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype))


def column_coding(rhs: str, meta: pd.DataFrame, levels: dict | None = None) -> ColumnCoding:
    """Code the right-hand side ``rhs`` (plain columns: :func:`plain_columns`) as the
    in-memory formula does, from the columns' dtypes alone.

    A small frame holding every level of each categorical column (a category dtype's
    categories in their order, ``False``/``True``, the given levels of a text column) is built
    with ``meta``'s dtypes and passed through :func:`build_design`, the in-memory route: the
    same checks, levels, contrast matrices, names and column order as a fit on all rows.

    Parameters
    ----------
    rhs : str
        The right-hand side, without ``~``.
    meta : pandas.DataFrame
        The data's columns with the dtypes of the rows (no rows needed); a categorical dtype
        must hold its categories.
    levels : dict, optional
        For each text (object or string) column the formula uses, its distinct values among
        the rows that the fit keeps (in any order: patsy sorts them, as in memory).

    Returns
    -------
    ColumnCoding

    Raises
    ------
    NotImplementedError
        For a term that is not a plain column (:func:`plain_columns`).
    ValueError
        As :func:`build_design` for the columns used (dates, numbers stored as text, ...), for
        a categorical column without categories, or a text column without its levels.
    """
    levels = levels or {}
    used = plain_columns(rhs, meta.columns)
    meta, _ = _clean(meta.iloc[:0], used, "data", "raise")  # checks and dtypes as in memory
    sizes = [len(meta[c].dtype.categories) if isinstance(meta[c].dtype, pd.CategoricalDtype)
             else len(levels.get(c, ())) for c in used]
    k = max([2, *sizes])
    proto = {}
    for c in used:
        dt = meta[c].dtype
        if isinstance(dt, pd.CategoricalDtype):
            if len(dt.categories) == 0:
                raise ValueError(f"data: the categorical column {c!r} has no categories")
            proto[c] = pd.Categorical.from_codes(np.arange(k) % len(dt.categories), dtype=dt)
        elif _is_text(dt):
            if c not in levels:
                raise ValueError(f"data: the levels of the text column {c!r} are needed")
            lv = list(levels[c])
            # (no level: no row is kept, so none is coded; the fit's first pass refuses or
            # drops every row, naming why)
            vals = np.empty(k, dtype=object)
            vals[:] = [lv[i % len(lv)] if lv else "" for i in range(k)]
            proto[c] = vals
        elif pd.api.types.is_bool_dtype(dt):
            proto[c] = np.arange(k) % 2 == 1
        else:
            proto[c] = (np.arange(k) % 2).astype(dt)
    design = build_design("~" + rhs, pd.DataFrame(proto))
    info = design._info()
    parts = []
    for term in info.terms:
        if not term.factors:
            continue  # the intercept column: the model has its own
        (factor,) = term.factors
        col = _quoted_column(factor.code, used)
        fi = info.factor_infos[factor]
        if fi.type == "numerical":
            parts.append((col, None, None))
        else:
            (sub,) = info.term_codings[term]
            parts.append((col, tuple(fi.categories),
                          np.asarray(sub.contrast_matrices[factor].matrix, dtype=float)))
    names = tuple(c for c in info.column_names if c != "Intercept")
    return ColumnCoding(formula="~" + rhs, columns=tuple(used), names=names, parts=tuple(parts))
