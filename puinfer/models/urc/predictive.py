"""Predictive distributions of a regression model, one per row, for :class:`RegressionURC`.

Three forms, each validated on construction, with the few vectorised operations that
regression URC needs (no Python loop over rows):

* :class:`NormalPredictive` -- a mean and a standard deviation per row;
* :class:`GridPredictive` -- the predictive CDF of each row at common points ``y_grid``
  (an ``n x g`` matrix), linear between the points;
* :class:`QuantilePredictive` -- predictive quantiles of each row at common levels (an
  ``n x m`` matrix), the CDF linear between them and continued linearly beyond the outermost
  ones (with the slope of the outermost segment) until it reaches 0 and 1.

Each has ``cdf_at(t)`` (CDF of every row at common points: ``n x len(t)``), ``cdf_rows(Z)``
(row ``i``'s CDF at row ``i``'s points ``Z[i]``), ``ppf_rows(U)`` (its inverse), ``pdf_rows(y)``
and ``take(rows)``; ``index`` is the pandas index of the inputs (``None`` for arrays), used to
match rows with the other arguments of a call (the package's rule, :mod:`puinfer._align`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ..._align import align_rows
from ..._validation import refuse_dask, refuse_text, refuse_text_and_bools

__all__ = ["NormalPredictive", "GridPredictive", "QuantilePredictive", "as_predictive"]

_CDF_TOL = 1e-9   # CDF values may leave [0, 1] or decrease by this much (rounding)


def _matrix(value, name, ncol=None):
    # numbers written as text are refused, as wherever else the package reads numbers (numpy
    # and pandas converted "0.5" to 0.5 silently)
    if isinstance(value, pd.DataFrame):
        refuse_text(value.to_numpy(), name)
        arr = value.to_numpy(dtype=float, na_value=np.nan, copy=True)
    else:
        refuse_text(value, name)
        try:
            arr = np.array(value, dtype=float, copy=True)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be numeric") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-d matrix (rows x points); got shape {arr.shape}")
    if ncol is not None and arr.shape[1] != ncol:
        raise ValueError(f"{name} has {arr.shape[1]} columns; expected {ncol} (one per point)")
    return arr


def _vector(value, name):
    refuse_text(value, name)
    if isinstance(value, pd.Series):
        try:
            return value.to_numpy(dtype=float, na_value=np.nan, copy=True)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be numeric; the Series has dtype {value.dtype}") from None
    try:
        arr = np.array(value, dtype=float, copy=True)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one value per row (1-d); got shape {arr.shape}")
    return arr


def _increasing(points, name, lo=-np.inf, hi=np.inf):
    refuse_text(points, name)
    try:
        p = np.array(points, dtype=float, copy=True).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric") from None
    if p.size < 2 or not np.all(np.isfinite(p)) or np.any(np.diff(p) <= 0):
        raise ValueError(f"{name} must hold at least 2 finite, strictly increasing values")
    if p[0] <= lo or p[-1] >= hi:
        raise ValueError(f"{name} must lie strictly inside ({lo}, {hi})")
    return p


def _segments(V, K, strict: bool):
    """Row-wise knot segments of the points ``V`` (one row, or one value per row) against
    the knot rows ``K`` (``n x m``): returns ``V`` as a 2-d array, whether it was 1-d, the
    number of knots below each point (``<=``, or ``<`` with ``strict``; a pass per knot, not
    per row), the segment's left knot clipped to ``0 .. m - 2``, and the row numbers."""
    V = np.asarray(V, dtype=float)
    vec = V.ndim == 1
    V2 = V[:, None] if vec else V
    m = K.shape[1]
    idx = np.zeros(V2.shape, dtype=np.intp)
    for j in range(m):
        idx += (V2 > K[:, j:j + 1]) if strict else (V2 >= K[:, j:j + 1])
    lo = np.clip(idx - 1, 0, m - 2)
    return V2, vec, idx, lo, np.arange(K.shape[0])[:, None]


class _Predictive:
    """Shared bits: row count, index, missing rows, subsetting."""

    index: pd.Index | None

    @property
    def n(self) -> int:
        return self._n

    def __len__(self):
        return self._n

    def missing_rows(self) -> np.ndarray:
        """Rows with a missing value."""
        raise NotImplementedError

    def take(self, rows):
        """The rows ``rows`` (positions or a boolean mask) as a new object."""
        raise NotImplementedError

    def positions_proxy(self):
        """A stand-in for :func:`~puinfer._align.align_rows`: a Series of row positions on the
        index (an array of positions when there is no index)."""
        pos = np.arange(self._n)
        return pos if self.index is None else pd.Series(pos, index=self.index)

    def _sub_index(self, rows):
        return None if self.index is None else self.index[rows]


class NormalPredictive(_Predictive):
    """Normal predictive distributions ``N(mean_i, sd_i^2)``.

    Parameters
    ----------
    mean, sd : array_like or pandas.Series
        One value per row; ``sd > 0``. Two Series are matched on their index.
    """

    def __init__(self, mean, sd):
        scalar_sd = not isinstance(sd, pd.Series) and np.ndim(sd) == 0
        al, index = align_rows({"mean": mean, "sd": None if scalar_sd else sd})
        self.mean = _vector(al["mean"], "mean")
        if scalar_sd:
            refuse_text_and_bools(sd, "sd")
            try:
                self.sd = np.full(self.mean.size, float(sd))
            except (TypeError, ValueError):
                raise ValueError(f"sd must be numeric; got {sd!r:.40}") from None
        else:
            self.sd = _vector(al["sd"], "sd")
        self.index = index
        self._n = self.mean.size
        ok = ~np.isnan(self.mean) & ~np.isnan(self.sd)
        if np.any(~np.isfinite(self.mean[ok])):
            raise ValueError("mean must be finite")
        if np.any(~(self.sd[ok] > 0) | ~np.isfinite(self.sd[ok])):
            raise ValueError("sd must be positive and finite")

    def missing_rows(self):
        return np.isnan(self.mean) | np.isnan(self.sd)

    def take(self, rows):
        out = object.__new__(NormalPredictive)
        out.mean, out.sd, out.index = self.mean[rows], self.sd[rows], self._sub_index(rows)
        out._n = out.mean.size
        return out

    def cdf_at(self, t):
        return stats.norm.cdf((np.asarray(t, dtype=float)[None, :] - self.mean[:, None])
                              / self.sd[:, None])

    def cdf_rows(self, Z):
        Z = np.asarray(Z, dtype=float)
        m, s = (self.mean, self.sd) if Z.ndim == 1 else (self.mean[:, None], self.sd[:, None])
        return stats.norm.cdf((Z - m) / s)

    def ppf_rows(self, U):
        U = np.asarray(U, dtype=float)
        m, s = (self.mean, self.sd) if U.ndim == 1 else (self.mean[:, None], self.sd[:, None])
        return m + s * stats.norm.ppf(U)

    def pdf_rows(self, y):
        return stats.norm.pdf((np.asarray(y, dtype=float) - self.mean) / self.sd) / self.sd

    def support_rows(self, eps=1e-7):
        """Per-row points below/above which the mass is ``eps``."""
        z = stats.norm.isf(eps)
        return self.mean - z * self.sd, self.mean + z * self.sd

    def __repr__(self):
        return f"<NormalPredictive: {self._n} rows>"


class _PiecewiseLinear(_Predictive):
    """A CDF linear between knots: ``X`` (n x m, rows non-decreasing) at CDF values ``Fv``
    (n x m, rows non-decreasing from 0 to 1)."""

    def _knots(self):
        raise NotImplementedError

    def cdf_rows(self, Z):
        X, Fv = self._knots()
        Z2, vec, idx, lo, r = _segments(Z, X, strict=False)
        m = X.shape[1]
        x0, x1, f0, f1 = X[r, lo], X[r, lo + 1], Fv[r, lo], Fv[r, lo + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(x1 > x0, (Z2 - x0) / (x1 - x0), 1.0)
        out = np.where(idx == 0, 0.0, np.where(idx >= m, 1.0, f0 + np.clip(w, 0, 1) * (f1 - f0)))
        return out[:, 0] if vec else out

    def cdf_at(self, t):
        t = np.asarray(t, dtype=float)
        return self.cdf_rows(np.broadcast_to(t[None, :], (self._n, t.size)))

    def ppf_rows(self, U):
        X, Fv = self._knots()
        U2, vec, _, lo, r = _segments(U, Fv, strict=True)
        x0, x1, f0, f1 = X[r, lo], X[r, lo + 1], Fv[r, lo], Fv[r, lo + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(f1 > f0, (U2 - f0) / (f1 - f0), 0.0)
        out = x0 + np.clip(w, 0, 1) * (x1 - x0)
        return out[:, 0] if vec else out

    def pdf_rows(self, y):
        X, Fv = self._knots()
        y = np.asarray(y, dtype=float)
        m = X.shape[1]
        idx = np.zeros(y.shape, dtype=np.intp)
        for j in range(m):
            idx += y >= X[:, j]
        inside = (idx >= 1) & (idx <= m - 1)
        lo = np.clip(idx - 1, 0, m - 2)
        r = np.arange(X.shape[0])
        dx = X[r, lo + 1] - X[r, lo]
        with np.errstate(divide="ignore", invalid="ignore"):
            dens = np.where(dx > 0, (Fv[r, lo + 1] - Fv[r, lo]) / dx, 0.0)
        return np.where(inside, dens, 0.0)

    def support_rows(self, eps=1e-7):
        X, _ = self._knots()
        return X[:, 0], X[:, -1]


class GridPredictive(_PiecewiseLinear):
    """Predictive CDFs given on a common grid of outcome values.

    Parameters
    ----------
    y_grid : array_like
        ``g >= 2`` strictly increasing outcome values.
    cdf : array_like or pandas.DataFrame
        ``n x g``: row ``i``'s predictive CDF at ``y_grid``; non-decreasing along each row, in
        [0, 1]. Linear between the grid points; the CDF is taken as 0 below ``y_grid[0]`` and
        1 above ``y_grid[-1]`` only when its values there are 0 and 1 -- interval cut points
        outside the grid are refused by :class:`RegressionURC`. A DataFrame's index names the
        rows.
    """

    def __init__(self, y_grid, cdf):
        self.y_grid = _increasing(y_grid, "y_grid")
        self.cdf = _matrix(cdf, "cdf", self.y_grid.size)
        self.index = cdf.index if isinstance(cdf, pd.DataFrame) else None
        self._n = self.cdf.shape[0]
        ok = ~self.missing_rows()
        c = self.cdf[ok]
        if np.any(~np.isfinite(c)) or np.any(c < -_CDF_TOL) or np.any(c > 1 + _CDF_TOL):
            raise ValueError("cdf: values must be in [0, 1]")
        if np.any(np.diff(c, axis=1) < -_CDF_TOL):
            bad = int(np.flatnonzero(ok)[np.any(np.diff(c, axis=1) < -_CDF_TOL, axis=1)][0])
            raise ValueError(f"cdf: row {bad} decreases; a CDF is non-decreasing in y")
        self.cdf[ok] = np.maximum.accumulate(np.clip(c, 0.0, 1.0), axis=1)

    def missing_rows(self):
        return np.isnan(self.cdf).any(axis=1)

    def take(self, rows):
        out = object.__new__(GridPredictive)
        out.y_grid, out.cdf, out.index = self.y_grid, self.cdf[rows], self._sub_index(rows)
        out._n = out.cdf.shape[0]
        return out

    def _knots(self):
        return np.broadcast_to(self.y_grid, self.cdf.shape), self.cdf

    def cdf_at(self, t):
        # common grid: one interpolation weight per point, the same for every row
        t = np.asarray(t, dtype=float)
        g = self.y_grid
        j = np.clip(np.searchsorted(g, t, side="right") - 1, 0, g.size - 2)
        w = np.clip((t - g[j]) / (g[j + 1] - g[j]), 0.0, 1.0)
        return self.cdf[:, j] * (1 - w) + self.cdf[:, j + 1] * w

    def __repr__(self):
        return f"<GridPredictive: {self._n} rows, {self.y_grid.size} grid points>"


class QuantilePredictive(_PiecewiseLinear):
    """Predictive quantiles at common levels.

    Parameters
    ----------
    levels : array_like
        ``m >= 2`` strictly increasing levels in (0, 1).
    quantiles : array_like or pandas.DataFrame
        ``n x m``: row ``i``'s predictive quantiles at ``levels``, non-decreasing along each
        row. The CDF is linear between them and continues linearly beyond the outermost
        quantiles with the slope of the outermost segment, reaching 0 and 1 there (a tail
        assumption: give outer levels such as 0.01 and 0.99 when the tails matter). A
        DataFrame's index names the rows.
    """

    def __init__(self, levels, quantiles):
        self.levels = _increasing(levels, "levels", 0.0, 1.0)
        self.quantiles = _matrix(quantiles, "quantiles", self.levels.size)
        self.index = quantiles.index if isinstance(quantiles, pd.DataFrame) else None
        self._n = self.quantiles.shape[0]
        ok = ~self.missing_rows()
        q = self.quantiles[ok]
        if np.any(~np.isfinite(q)):
            raise ValueError("quantiles must be finite")
        if np.any(np.diff(q, axis=1) < 0):
            bad = int(np.flatnonzero(ok)[np.any(np.diff(q, axis=1) < 0, axis=1)][0])
            raise ValueError(f"quantiles: row {bad} decreases; quantiles are non-decreasing "
                             "in the level")
        self._X = None

    def missing_rows(self):
        return np.isnan(self.quantiles).any(axis=1)

    def take(self, rows):
        return QuantilePredictive.__new__(QuantilePredictive)._set(
            self.levels, self.quantiles[rows], self._sub_index(rows))

    def _set(self, levels, q, index):
        self.levels, self.quantiles, self.index = levels, q, index
        self._n, self._X = q.shape[0], None
        return self

    def _knots(self):
        if self._X is None:
            lv, Q = self.levels, self.quantiles
            lo = Q[:, 0] - lv[0] * (Q[:, 1] - Q[:, 0]) / (lv[1] - lv[0])
            hi = Q[:, -1] + (1 - lv[-1]) * (Q[:, -1] - Q[:, -2]) / (lv[-1] - lv[-2])
            self._X = np.column_stack([lo, Q, hi])
            self._F = np.broadcast_to(np.concatenate([[0.0], lv, [1.0]]), self._X.shape)
        return self._X, self._F

    def __getstate__(self):
        st = dict(self.__dict__)
        st["_X"] = None
        st.pop("_F", None)
        return st

    def __repr__(self):
        return f"<QuantilePredictive: {self._n} rows, {self.levels.size} levels>"


def as_predictive(value, name: str):
    """Accept a predictive object, or a DataFrame with columns ``mean`` and ``sd``."""
    if isinstance(value, _Predictive):
        return value
    refuse_dask(value, name)  # (named as such, not as "a DataFrame without mean and sd")
    if isinstance(value, pd.DataFrame) and {"mean", "sd"} <= set(value.columns):
        return NormalPredictive(value["mean"], value["sd"])
    raise ValueError(f"{name} must be predictive distributions: a NormalPredictive, "
                     "GridPredictive or QuantilePredictive, or a DataFrame with columns 'mean' "
                     f"and 'sd'; got {type(value).__name__}")
