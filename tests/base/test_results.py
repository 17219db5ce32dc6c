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


def test_model_lists_handed_out_are_copies():
    # session 83's audit: exog_names was the model's own list (CalEM's the class's), so
    # r.model.exog_names.reverse() made later predictions read the columns in another order,
    # silently; CalEM's init_warnings list reached every later fit's record
    import warnings

    import puinfer as pu
    from puinfer.simulate import sar_design

    df = sar_design(200, 200, 0.3, p=2, rng=3)
    src, tgt = df[df.labeled == 1][["x1", "x2"]], df[df.labeled == 0][["x1", "x2"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pu.DETM(src, tgt).fit(pi_interval="profile")
    before = r.predict(tgt.head(3))
    r.model.exog_names.reverse()
    assert r.model.exog_names == ["x1", "x2"]
    pd.testing.assert_series_equal(r.predict(tgt.head(3)), before)
    m = pu.CalEM([.2, .5, .8] * 50, [0, 1, 1] * 50, [0, 1] * 75, calibrator="logistic")
    m.exog_names.append("oops")
    assert m.exog_names == ["score"] and pu.CalEM([.2, .5, .8] * 50, [0, 1, 1] * 50,
                                                   [0, 1] * 75).exog_names == ["score"]
    with pytest.raises(AttributeError):
        m.init_warnings.append(("x", "y"))


def test_wald_helpers_match_standard_errors_by_label():
    """``wald_pvalues`` / ``wald_conf_int`` match ``se`` to ``params`` by label (the review of
    session 86: ``params / se`` sorted the labels, and the values were then laid on
    ``params``' order, swapping two p-values)."""
    import pandas as pd
    from scipy import stats

    from puinfer.base.results import wald_conf_int, wald_pvalues

    p = pd.Series([1.0, 3.0], index=["b", "a"])
    se = pd.Series([1.0, 2.0], index=["a", "b"])
    pv = wald_pvalues(p, se)
    assert list(pv.index) == ["b", "a"]
    np.testing.assert_allclose(pv.to_numpy(), 2 * stats.norm.sf([0.5, 3.0]))
    ci = wald_conf_int(p, se, 0.05)
    assert list(ci.index) == ["b", "a"]
    q = stats.norm.ppf(0.975)
    np.testing.assert_allclose(ci.to_numpy(), [[1 - 2 * q, 1 + 2 * q], [3 - q, 3 + q]])


def test_calibrator_standard_errors_follow_the_shared_rule():
    """A fitted calibrator's ``bse`` reads its covariance as every other result does
    (``standard_errors``): a variance below 0 beyond rounding is NaN, not a standard error of 0
    (it clipped such variances to 0 before session 87, giving z = +-inf and p = 0)."""
    import copy

    import pandas as pd

    from puinfer.base.results import standard_errors
    from puinfer.models.calem.calibrators import LogisticCalibrator

    rng = np.random.default_rng(0)
    s = rng.uniform(0.05, 0.95, 400)
    fitted = LogisticCalibrator().fit(s, rng.uniform(size=400) < s)
    names = fitted.params.index
    pd.testing.assert_series_equal(fitted.bse, standard_errors(fitted.cov_params(), names))
    assert np.isfinite(fitted.bse).all()
    # an indefinite information (its inverse has a negative variance) gives NaN for it
    broken = copy.copy(fitted)
    object.__setattr__(broken, "_information",
                       pd.DataFrame([[1.0, 2.0], [2.0, 1.0]], index=names, columns=names))
    assert (np.diag(broken.cov_params()) < 0).all()
    assert broken.bse.isna().all() and broken.pvalues.isna().all()
