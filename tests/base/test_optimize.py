"""The shared optimisers (puinfer.base.optimize)."""

import numpy as np

from puinfer.base.optimize import newton_maximize, squarem


def test_squarem_when_feasible_refuses_every_extrapolation():
    # used to loop forever: halving alpha towards -1 never left the loop when even the plain EM
    # point was refused; now the plain EM step is taken
    x, info = squarem(lambda x: 0.5 * x, np.array([1.0, -2.0]), feasible=lambda x: False,
                      tol=1e-12, maxiter=200)
    assert info.converged
    np.testing.assert_allclose(x, 0.0, atol=1e-11)


def test_squarem_accelerates_a_linear_map():
    # M(x) = A x + b has the fixed point (I - A)^-1 b; SQUAREM needs far fewer map evaluations
    A = np.array([[0.9, 0.05], [0.0, 0.95]])
    b = np.array([1.0, 2.0])
    x, info = squarem(lambda x: A @ x + b, np.zeros(2), tol=1e-12, maxiter=500)
    np.testing.assert_allclose(x, np.linalg.solve(np.eye(2) - A, b), rtol=1e-9)
    assert info.iterations < 100  # plain EM needs ~600 steps for 1e-12 at rate 0.95


def test_newton_maximize_quadratic_in_one_step():
    Q = np.array([[2.0, 0.5], [0.5, 1.0]])
    c = np.array([1.0, -1.0])

    def fun(x, order):
        f = c @ x - 0.5 * x @ Q @ x
        return f if order == 0 else (f, c - Q @ x, -Q)

    x, f, g, H, info = newton_maximize(fun, np.zeros(2))
    np.testing.assert_allclose(x, np.linalg.solve(Q, c), rtol=1e-12)
    assert info.converged and info.iterations <= 2


def test_newton_stops_where_the_gain_is_below_the_rounding_of_f():
    """A Newton step whose predicted gain is below the rounding of ``f`` cannot be judged by
    the line search. Here (as on 1e7 rows, where numpy's summation error exceeds the gain)
    every move of ``x`` looks like a loss, so the only step accepted is one too small to change
    ``x`` at all (t ~ 1e-11): before, Newton repeated that null step up to ``maxiter``, about
    37 evaluations each; it now stops at the first, converged at floating-point precision."""
    big, x0 = 1e8, np.array([1.0 + 1e-5])
    calls = []

    def fun(x, order):
        calls.append(order)
        f = big - 0.5 * (x[0] - 1.0) ** 2 - (1e-8 if x[0] != x0[0] else 0.0)
        if order == 0:
            return f
        return f, np.array([-(x[0] - 1.0)]), np.array([[-1.0]])

    x, f, g, H, info = newton_maximize(fun, x0, tol=1e-12, maxiter=200)
    assert info.converged and info.message == "stopped at floating-point precision"
    assert info.iterations <= 1 and len(calls) < 60
    assert x[0] == x0[0]
