"""The shared results base: standard errors from a covariance matrix."""

import numpy as np
import pandas as pd
import pytest

from puinfer.base.results import LikelihoodResults


class _Fixed(LikelihoodResults):
    def __init__(self, params, cov):
        idx = pd.Index([f"b{j}" for j in range(len(params))])
        self._params = pd.Series(params, index=idx, dtype=float)
        self._cov = pd.DataFrame(cov, index=idx, columns=idx)
        self.llf = 0.0


def test_a_negative_variance_is_no_standard_error():
    # session 69's audit: np.clip(diag, 0) turned a variance of -4.8e18 (an ill-conditioned
    # sandwich) into a standard error of 0, z = -inf, p < 2e-16 and a zero-width interval
    r = _Fixed([1.0, 2.0, 3.0], np.diag([-4.8e18, 0.04, -1e-20]))
    assert np.isnan(r.bse["b0"]) and r.bse["b1"] == pytest.approx(0.2)
    assert r.bse["b2"] == 0.0  # rounding noise around 0 is 0
    assert np.isnan(r.pvalues["b0"]) and np.isnan(r.conf_int().loc["b0"]).all()
    assert r.tvalues["b1"] == pytest.approx(10.0)
