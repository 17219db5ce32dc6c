"""Liu et al., Section 5.1 designs."""

import numpy as np
import pytest

from puinfer.simulate import gamma_design, sar_design, scar_design


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


def test_gamma_design_components_are_exact_tilts():
    """Gamma(2, scale s) is Gamma(2, 1) tilted by exp((1 - 1/s) x): the target components'
    shares of the tilted source weights reproduce their means (the DETM is exact)."""
    df = gamma_design(20000, 40000, 0.3, rng=np.random.default_rng(3))
    x = df[[f"x{j}" for j in range(1, 16)]].to_numpy()
    src = x[df.labeled == 1]
    pos = x[(df.labeled == 0) & (df.y_true == 1)]
    neg = x[(df.labeled == 0) & (df.y_true == 0)]
    assert src.min() > 0 and np.mean((src - src.mean(0)) ** 3) > 0  # skewed, positive
    scale_pos = np.r_[np.full(7, 1.25), np.ones(8)]
    np.testing.assert_allclose(pos.mean(0), 2 * scale_pos, rtol=0.03)
    np.testing.assert_allclose(neg.mean(0), 2 * 0.6, rtol=0.03)
    # coordinate by coordinate (independent coordinates; one-dimensional tilts keep the
    # importance weights' variance small): the tilted source mean is the component's
    for comp, b in ((pos, 1 - 1 / scale_pos), (neg, np.full(15, 1 - 1 / 0.6))):
        w = np.exp(src * b)
        np.testing.assert_allclose((w * src).sum(0) / w.sum(0), comp.mean(0), rtol=0.03)
    assert abs((df.y_true[df.labeled == 0]).mean() - 0.3) < 0.01
    scar = gamma_design(2000, 2000, 0.5, n_shift=0, rng=np.random.default_rng(4))
    y = scar[(scar.labeled == 0) & (scar.y_true == 1)][[f"x{j}" for j in range(1, 16)]]
    np.testing.assert_allclose(y.mean(0), 2.0, rtol=0.1)
    with pytest.raises(ValueError, match="n_shift"):
        gamma_design(10, 10, 0.5, n_shift=16)


def test_bad_arguments():
    with pytest.raises(ValueError, match="pi"):
        scar_design(10, 10, 1.5)
    with pytest.raises(ValueError, match="n_shift"):
        scar_design(10, 10, 0.5, n_shift=20)


@pytest.mark.parametrize("shape", [0, -1.0, float("nan"), float("inf"), "2", True])
def test_gamma_design_refuses_a_bad_shape(shape):
    # session 68's audit: shape 0 gave all-zero features, nan and inf non-finite ones, -1
    # numpy's bare "shape < 0"
    with pytest.raises(ValueError, match="shape must be a finite number > 0"):
        gamma_design(10, 10, 0.3, p=2, shape=shape, rng=0)
