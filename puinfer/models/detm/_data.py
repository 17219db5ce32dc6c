"""Validated, standardised data of a DETM/SETM fit (source rows first)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..._validation import as_float_matrix, check_full_rank
from ...base.gram import gemm_rows
from ...base.results import ReadOnlyArrays, data_fingerprint, readonly

__all__ = ["TiltData", "prepare"]


@dataclass(frozen=True)
class TiltData(ReadOnlyArrays):
    """The pooled sample: ``X`` (N, p) features without intercept, source rows first; ``y``
    (N,) 1 = target, 0 = source; the pooled mean and sd used to standardise; ``target_index``
    and ``source_index`` the caller's index of the target and source rows (None for
    arrays)."""

    X: np.ndarray
    y: np.ndarray
    names: list
    mean: np.ndarray
    sd: np.ndarray
    n: int
    m: int
    target_index: object = None
    source_index: object = None

    #: the cached arrays derived from ``X`` alone, left out of pickles and computed again on
    #: first use (the same arithmetic: bit for bit the same arrays); each is as large as ``X``
    DERIVED = ("Z", "X1", "X1F")

    def __post_init__(self):  # read-only: the model and every result share the rows
        for k in ("X", "y", "mean", "sd"):
            object.__setattr__(self, k, readonly(getattr(self, k)))
        object.__setattr__(self, "names", tuple(self.names))

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in self.DERIVED}

    @property
    def N(self) -> int:
        return self.n + self.m

    @property
    def p(self) -> int:
        return len(self.names)

    @cached_property
    def Z(self):
        """The standardised features, in Fortran order whatever the layout of ``X``: the tilts
        ``B' Z'`` read it 2-3x faster than C order (issue 17), and samples given as arrays and
        as DataFrames (C and F order) take the same arithmetic, so fit alike to the last bit."""
        return readonly(np.asfortranarray((self.X - self.mean) / self.sd))

    @cached_property
    def X1(self):
        """``(1, Z)`` in C order (the weighted Grams' fast layout, :mod:`puinfer.base.gram`)."""
        X1 = np.empty((self.N, self.p + 1))
        X1[:, 0] = 1.0
        X1[:, 1:] = self.Z
        return readonly(X1)

    @cached_property
    def X1F(self):
        """``X1`` in Fortran order where it is a single chunk of the weighted Grams (the
        bootstrap's resamples of up to about a thousand rows each), else None: there the
        Grams weight its columns contiguously, the same products bit for bit
        (:func:`puinfer.base.gram.weighted_grams`, ``Xf``)."""
        if self.N > gemm_rows(self.p + 1):
            return None
        return readonly(np.asfortranarray(self.X1))

    @cached_property
    def logistic_slopes(self):
        """The logistic regression's slopes that the grids of starts scale
        (:func:`._starts.logistic_start`), computed once per sample: SETM's and DETM's searches
        on the same data (a default DETM fit; each bootstrap resample) share them."""
        from ._starts import logistic_start

        out = logistic_start(self)
        out.flags.writeable = False
        return out

    @cached_property
    def fingerprint(self):
        return data_fingerprint(self.X, self.y)

    def subset(self, i_source, i_target) -> TiltData:
        """Rows ``i_source`` of the source and ``i_target`` (positions in the pooled sample) of
        the target, with the same centring and scaling (so that solutions carry over)."""
        idx = np.r_[i_source, i_target]
        return TiltData(self.X[idx], self.y[idx], self.names, self.mean, self.sd,
                        len(i_source), len(i_target))


def dropped_by_sample(indicator) -> tuple[int, int] | None:
    """``(source, target)`` counts of rows dropped for missing values, from their indicator
    values (1: source, 0: target); None where one is missing or not 0/1 (its sample is not
    known)."""
    if indicator.isna().any() or not indicator.isin([0, 1]).all():
        return None
    return int((indicator == 1).sum()), int((indicator == 0).sum())


def prepare(source, target, names=None, target_index=None, source_index=None) -> TiltData:
    """Validate the two samples and pool them (source first)."""
    import pandas as pd

    Xs, ns = as_float_matrix(source, "source")
    Xt, nt = as_float_matrix(target, "target")
    if Xs.shape[1] != Xt.shape[1]:
        raise ValueError(f"source has {Xs.shape[1]} columns but target has {Xt.shape[1]}")
    if Xs.shape[1] == 0:  # (DETM crashed in its starts, SETM "fitted" pi = 0.5)
        raise ValueError("source and target have no feature columns")
    names = list(names) if names is not None else ns

    def named(x):  # (a named Series is a named column, as a DataFrame's)
        return isinstance(x, pd.DataFrame) or (isinstance(x, pd.Series) and x.name is not None)

    if named(source) and named(target) and ns != nt:
        if sorted(ns) != sorted(nt):
            raise ValueError(f"source and target columns differ: only in source "
                             f"{[c for c in ns if c not in nt]}, only in target "
                             f"{[c for c in nt if c not in ns]}")
        Xt = Xt[:, [nt.index(c) for c in ns]]  # matched by name: target's in source's order
    if target_index is None and isinstance(target, (pd.DataFrame, pd.Series)):
        target_index = target.index
    if source_index is None and isinstance(source, (pd.DataFrame, pd.Series)):
        source_index = source.index
    # one layout for every input (a DataFrame's values come in Fortran order, arrays in C):
    # the column means and sds below, and all that follows, round alike for both
    X = np.asfortranarray(np.vstack([Xs, Xt]))
    y = np.r_[np.zeros(len(Xs)), np.ones(len(Xt))]
    check_full_rank(X, names, "design", intercept=True)
    n_par = 2 * (X.shape[1] + 1) + 1
    if len(X) <= n_par:
        raise ValueError(f"{len(X)} rows for {n_par} DETM parameters; need more rows")
    # check_full_rank refused extreme scales (check_scale), so the sd cannot under/overflow
    return TiltData(X, y, names, X.mean(axis=0), X.std(axis=0), len(Xs), len(Xt), target_index,
                    source_index)
