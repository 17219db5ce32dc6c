"""Weighted Gram matrices ``X' diag(w) X`` over many rows: the Hessians of every model.

One product ``X.T @ (X * w[:, None])`` on a tall, narrow ``X`` runs far below the machine's
speed. The same sum over chunks of a few thousand rows reaches OpenBLAS's kernels for small
matrices (AVX-512), each chunk and its weighted copy staying in cache: 2-3x faster at a million
rows (session 47's machine: for C-ordered ``X`` only; session 48's: either layout); on AVX2
kernels chunking costs little (0.9-1.3x). Issue 17; sessions 47-48 in
``benchmarks/results/README.md``. Up to one chunk the arithmetic is that single product's.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["GEMM_SIZE", "MAX_ROWS", "gemm_rows", "weighted_grams"]

#: a chunk holds at most ``GEMM_SIZE / k^2`` rows of a ``k``-column ``X`` (a power of two): the
#: products ``X' (X * w)`` stay within about 1e6 multiply-adds
GEMM_SIZE = 1_000_000

#: and at most this many rows (narrow designs: beyond it a chunk gains nothing)
MAX_ROWS = 32_768


@functools.lru_cache(maxsize=64)
def gemm_rows(k: int) -> int:
    """Rows per chunk of :func:`weighted_grams` for ``k`` columns (see :data:`GEMM_SIZE`): at
    least 256, at most :data:`MAX_ROWS`."""
    rows = 256
    while 2 * rows * k * k <= GEMM_SIZE and 2 * rows <= MAX_ROWS:
        rows *= 2
    return rows


def weighted_grams(X, weights, Xf=None, out=None) -> np.ndarray:
    """``X' diag(w) X`` for each ``w`` of ``weights``, as a ``(len(weights), k, k)`` array.

    Each chunk of :func:`gemm_rows` rows is weighted into one reused buffer in ``X``'s layout
    (C or F, as ``X * w[:, None]`` would be), so that on a single chunk the result is bitwise
    ``X.T @ (X * w[:, None])``.

    Parameters
    ----------
    X : numpy.ndarray
        ``(N, k)`` design.
    weights : sequence of numpy.ndarray
        Row weights, each ``(N,)`` (any sign).
    Xf : numpy.ndarray, optional
        ``X`` in Fortran order, read where ``X`` is a single chunk: the weighted copy is then
        made column by column (contiguous passes, where a weight broadcast over C-ordered
        rows of ``k`` values runs at about half the speed) into a Fortran-ordered buffer, and
        ``X' W`` is the same product bit for bit (OpenBLAS packs either layout of ``W`` into
        the same panels; 282 shapes checked in session 58). Above one chunk it is not read:
        two copies of the rows no longer fit in cache (1.3x slower at 2e5 rows).
    out : sequence of numpy.ndarray, optional
        One ``(k, k)`` array per weight, zero on entry (e.g. blocks of a larger matrix), to
        which each Gram is added as it would be to the new zero array (the same values bit
        for bit); returned. Saves the copy from a new array into a larger one.
    """
    N, k = X.shape
    if out is None:
        out = np.zeros((len(weights), k, k))
    rows = gemm_rows(k)
    if Xf is not None and N <= rows:
        W = np.empty((N, k), order="F")
        for j, w in enumerate(weights):
            np.multiply(Xf, w[:, None], out=W)
            out[j] += X.T @ W
        return out
    buf = np.empty_like(X[:min(rows, N)])
    for i in range(0, N, rows):
        Xc = X[i:i + rows]
        Wc = buf if len(Xc) == len(buf) else np.empty_like(Xc)
        for j, w in enumerate(weights):
            np.multiply(Xc, w[i:i + rows, None], out=Wc)
            out[j] += Xc.T @ Wc
    return out
