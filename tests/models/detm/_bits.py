"""Bitwise comparison of floating-point results, for the tests that check a faster form of a
computation against the previous one (``test_detm_bootstrap_speed``, ``test_detm_el_overhead``)."""

import numpy as np


def bits(x):
    return np.asarray(x, dtype=float).view(np.int64)


def same_bits(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    # NaNs compared as NaNs (their sign bit carries nothing)
    nan = np.isnan(a)
    assert np.array_equal(nan, np.isnan(b))
    assert np.array_equal(bits(a)[~nan], bits(b)[~nan])
