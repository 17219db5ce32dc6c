"""Liu et al., Section 5.1 designs."""

import numpy as np
import pytest

from puinfer.simulate import sar_design, scar_design


def test_shapes_labels_and_seeding():
    a = scar_design(300, 500, 0.3, rng=np.random.default_rng(1))
    b = scar_design(300, 500, 0.3, rng=np.random.default_rng(1))
    assert a.equals(b)
    assert a.shape == (800, 17)
    assert a.labeled.sum() == 300
    assert set(a.y_true[a.labeled == 1]) == {1}


def test_component_means():
    df = sar_design(4000, 20000, 0.3, rng=np.random.default_rng(2))
    x = df[[f"x{j}" for j in range(1, 16)]].to_numpy()
    src = x[df.labeled == 1]
    pos = x[(df.labeled == 0) & (df.y_true == 1)]
    neg = x[(df.labeled == 0) & (df.y_true == 0)]
    np.testing.assert_allclose(src.mean(0), 0, atol=0.06)
    np.testing.assert_allclose(pos.mean(0), np.r_[np.ones(7), np.zeros(8)], atol=0.06)
    np.testing.assert_allclose(neg.mean(0), 1, atol=0.06)
    assert abs((df.y_true[df.labeled == 0]).mean() - 0.3) < 0.015


def test_bad_arguments():
    with pytest.raises(ValueError, match="pi"):
        scar_design(10, 10, 1.5)
    with pytest.raises(ValueError, match="n_shift"):
        scar_design(10, 10, 0.5, n_shift=20)
