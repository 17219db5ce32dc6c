"""Weighted Gram matrices on chunks of rows (issue 17: the Hessians of every model)."""

import numpy as np
import pytest

from puinfer.base.gram import GEMM_SIZE, MAX_ROWS, gemm_rows, weighted_grams


def test_gemm_rows_keep_the_products_small():
    # a power of two, the largest with k^2 rows <= GEMM_SIZE, within [256, MAX_ROWS]
    for k, rows in [(6, 16384), (16, 2048), (31, 1024), (51, 256), (2, MAX_ROWS), (200, 256)]:
        assert gemm_rows(k) == rows
    for k in range(2, 60):
        r = gemm_rows(k)
        assert r & (r - 1) == 0 and 256 <= r <= MAX_ROWS
        assert r == 256 or r * k * k <= GEMM_SIZE
        assert r == MAX_ROWS or 2 * r * k * k > GEMM_SIZE


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("k", [3, 10])
def test_weighted_grams_equal_the_single_products(order, k):
    # over two full chunks and a partial one, weights of either sign: the plain products up
    # to summation-order rounding; within one chunk, bitwise the plain product in X's layout
    rng = np.random.default_rng(48)
    N = 2 * gemm_rows(k) + 77
    X = np.asarray(rng.standard_normal((N, k)), order=order)
    ws = list(rng.standard_normal((3, N)))
    G = weighted_grams(X, ws)
    assert G.shape == (3, k, k)
    for g, w in zip(G, ws, strict=True):
        expected = X.T @ (X * w[:, None])
        np.testing.assert_allclose(g, expected, rtol=1e-11, atol=1e-11 * np.abs(expected).max())
    n1 = gemm_rows(k)
    X1 = X[:n1]
    np.testing.assert_array_equal(weighted_grams(X1, [ws[0][:n1]])[0],
                                  X1.T @ (X1 * ws[0][:n1, None]))


@pytest.mark.parametrize("k", [2, 6, 16, 31, 51])
def test_weighted_grams_from_a_fortran_twin_are_the_same_products(k):
    # Xf (X in Fortran order) is read where X is one chunk: each Gram bitwise X's own product
    # X' (X * w) (session 58: the column-wise weighting gives the same products, and OpenBLAS
    # packs either layout of the weighted copy alike); at every size up to one chunk, with
    # weights of either sign spread over several orders of magnitude and a constant column
    rng = np.random.default_rng(58)
    for N in (k + 1, 97, gemm_rows(k) - 1, gemm_rows(k)):
        X = rng.standard_normal((N, k)) * rng.lognormal(0.0, 2.0, size=k)
        X[:, 0] = 1.0
        Xf = np.asfortranarray(X)
        ws = [rng.standard_normal(N) * rng.lognormal(0.0, 3.0, size=N) for _ in range(3)]
        G = weighted_grams(X, ws, Xf)
        for g, w in zip(G, ws, strict=True):
            np.testing.assert_array_equal(g, X.T @ (X * w[:, None]))
        np.testing.assert_array_equal(G, weighted_grams(X, ws))
    # beyond one chunk the twin is not read: the chunked products of X alone
    N = gemm_rows(k) + 5
    X = rng.standard_normal((N, k))
    ws = [rng.standard_normal(N)]
    np.testing.assert_array_equal(weighted_grams(X, ws, np.zeros((N, k), order="F")),
                                  weighted_grams(X, ws))


def test_weighted_grams_leave_their_inputs_alone():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5000, 4))
    w = rng.standard_normal(5000)
    X0, w0 = X.copy(), w.copy()
    weighted_grams(X, [w])
    weighted_grams(X[:100], [w[:100]], np.asfortranarray(X[:100]))
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(w, w0)
