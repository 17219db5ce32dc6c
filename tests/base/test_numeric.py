"""The vectorised log-sum-exp kernels against numpy's own (issue 17)."""

import warnings

import numpy as np
import pytest

from puinfer.base.numeric import logaddexp, softplus

SPECIAL = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-300, -745.0, 745.0, 710.0, -1e308,
                    1e308, 3.0])


def _numpy(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy warns on NaN inputs
        return f(*args)


def test_logaddexp_equals_numpys_to_an_ulp_on_random_and_special_values():
    rng = np.random.default_rng(0)
    a = np.r_[rng.normal(scale=30, size=5000), np.repeat(SPECIAL, SPECIAL.size)]
    b = np.r_[rng.normal(scale=30, size=5000), np.tile(SPECIAL, SPECIAL.size)]
    got, ref = logaddexp(a, b), _numpy(np.logaddexp, a, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_array_equal(np.isinf(got[ok]), np.isinf(ref[ok]))
    np.testing.assert_allclose(got[ok], ref[ok], rtol=4 * np.finfo(float).eps, atol=1e-300)
    # the same infinity on both sides, where a - b is NaN
    assert logaddexp(np.inf, np.inf) == np.inf and logaddexp(-np.inf, -np.inf) == -np.inf
    assert logaddexp(2.0, 2.0) == pytest.approx(2.0 + np.log(2.0), rel=1e-15)


def test_softplus_equals_log1p_exp():
    x = np.r_[np.linspace(-800, 800, 4001), SPECIAL]
    got, ref = softplus(x), _numpy(np.logaddexp, 0.0, x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_allclose(got[ok], ref[ok], rtol=4 * np.finfo(float).eps, atol=1e-300)


def test_inputs_are_not_modified():
    a, b = np.array([1.0, -2.0, np.inf]), np.array([0.5, np.inf, np.inf])
    a0, b0 = a.copy(), b.copy()
    logaddexp(a, b)
    softplus(a)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)


def test_sqrt_variances_nan_below_zero_beyond_rounding():
    from puinfer.base.numeric import sqrt_variances

    got = sqrt_variances([4.0, 0.0, -1e-12, -1e-3, np.inf, np.nan])
    # rounding noise below 0 (1e-12 of the largest variance, 4) is 0; a clearly negative
    # variance, or none at all, is no standard error (NaN), not 0
    np.testing.assert_array_equal(got[:3], [2.0, 0.0, 0.0])
    assert np.isnan(got[3:]).all()
