"""Elementwise log-sum-exp kernels shared by the models' likelihoods.

``numpy.logaddexp`` evaluates ``log1p(exp(.))`` one element at a time through the C library
(about 11 ns per element); the same formula on whole arrays uses numpy's vectorised ``exp`` and
``log1p`` (about 3 ns). The results agree to an ulp (issue 17: the per-row work of every
DETM/SETM evaluation and of CalEM's surrogate likelihood).
"""

from __future__ import annotations

import numpy as np

__all__ = ["logaddexp", "softplus", "below_zero", "sqrt_variances"]


def softplus(x):
    """``log(1 + exp(x))`` elementwise, stable for any ``x`` (``np.logaddexp(0, x)``):
    ``max(x, 0) + log1p(exp(-|x|))``, its steps in one buffer (fewer fresh arrays: on a
    million rows each costs about as much as the arithmetic)."""
    if not (isinstance(x, np.ndarray) and x.ndim and x.dtype.kind == "f"):  # scalars, ints
        return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))
    out = np.abs(x)
    np.negative(out, out=out)
    np.exp(out, out=out)
    np.log1p(out, out=out)
    out += np.maximum(x, 0.0)
    return out


def logaddexp(a, b):
    """``log(exp(a) + exp(b))`` elementwise (``np.logaddexp(a, b)`` on arrays), stable for any
    finite or infinite ``a`` and ``b``: ``max(a, b) + log1p(exp(-|a - b|))``."""
    m = np.maximum(a, b)
    with np.errstate(invalid="ignore", over="ignore"):
        # -|a - b| as min(a, b) - max(a, b): the same number (round to nearest is symmetric:
        # fl(b - a) = -fl(a - b); a signed zero at a = b is lost in exp), one pass fewer;
        # NaN where a and b are the same infinity
        d = np.asarray(np.minimum(a, b))
        np.subtract(d, m, out=d)
        # d is NaN only where m is not finite (a NaN input, or a = b = +-inf): one sum
        # decides (finite only if every m is) whether the rows need the look
        finite = np.isfinite(m.sum())
    np.exp(d, out=d)
    np.log1p(d, out=d)
    d += m
    if not finite:
        nan = np.isnan(d)
        if nan.any():  # a = b = +-inf: that infinity (NaN inputs stay NaN: m is NaN there)
            d[nan] = m[nan]
    return d


def below_zero(variances) -> np.ndarray:
    """Which of ``variances`` (a covariance matrix's diagonal) are below 0 beyond rounding
    (``< -1e-10`` times the largest magnitude), or not finite: no variance at all, e.g. from
    an ill-conditioned sandwich, rather than rounding noise around 0."""
    d = np.asarray(variances, dtype=float)
    scale = np.max(np.abs(d[np.isfinite(d)]), initial=0.0)
    return ~np.isfinite(d) | (d < -1e-10 * scale)


def sqrt_variances(variances) -> np.ndarray:
    """Standard errors from ``variances``: NaN where a variance is below 0 beyond rounding
    (:func:`below_zero`; no variance, rather than a standard error of 0 with z = -inf),
    rounding noise around 0 read as 0."""
    d = np.asarray(variances, dtype=float)
    return np.sqrt(np.where(below_zero(d), np.nan, np.clip(d, 0, None)))
