"""The formula adapter (puinfer.formula): design building, logit, orthogonal poly."""

import numpy as np
import pandas as pd
import pytest

from puinfer.formula import build_design, logit


def test_poly_matches_r():
    # R 4.x: poly(1:5, 2)
    ref = np.array([[-0.6324555320336759, 0.5345224838248488],
                    [-0.3162277660168379, -0.2672612419124244],
                    [0.0, -0.5345224838248488],
                    [0.3162277660168379, -0.2672612419124244],
                    [0.6324555320336759, 0.5345224838248488]])
    d = build_design("~ poly(x, 2)", pd.DataFrame({"x": np.arange(1.0, 6.0)}))
    np.testing.assert_allclose(d.X.iloc[:, 1:].to_numpy(), ref, atol=1e-12)


def test_poly_orthonormal_and_reused_on_newdata(rng):
    df = pd.DataFrame({"x": rng.normal(size=200)})
    d = build_design("~ poly(x, 3)", df)
    P = d.X.iloc[:, 1:].to_numpy()
    np.testing.assert_allclose(P.T @ P, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(P.sum(axis=0), 0, atol=1e-10)
    # the basis learned on the fitting data is applied to new data (predict), not refitted
    new = df.iloc[:7]
    np.testing.assert_allclose(d.transform(new).to_numpy(), d.X.iloc[:7].to_numpy(), atol=1e-12)


def test_logit_and_lhs():
    df = pd.DataFrame({"y": [0, 1, 1, 0], "s": [0.2, 0.5, 0.9, 0.4]})
    d = build_design("y ~ logit(s)", df)
    np.testing.assert_allclose(d.X["logit(s)"], np.log(df.s / (1 - df.s)))
    assert d.y.name == "y" and d.has_intercept
    with pytest.raises(ValueError, match="strictly inside"):
        logit([0.0, 0.5])


def test_missing_values_named_not_dropped():
    df = pd.DataFrame({"y": [0, 1, 1], "a": [1.0, np.nan, 2.0], "b": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match=r"\['a'\]"):
        build_design("y ~ a + b", df)


def test_unknown_column_and_sides():
    df = pd.DataFrame({"y": [0, 1], "a": [1.0, 2.0]})
    with pytest.raises(ValueError, match="nope"):
        build_design("y ~ nope", df)
    with pytest.raises(ValueError, match="left-hand side"):
        build_design("~ a", df, require_lhs=True)
    with pytest.raises(ValueError, match="must not have"):
        build_design("y ~ a", df, require_lhs=False)


def test_data_not_modified():
    df = pd.DataFrame({"y": [0, 1, 1, 0, 1], "x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    before = df.copy()
    build_design("y ~ poly(x, 2) + np.log(x)", df)
    pd.testing.assert_frame_equal(df, before)
