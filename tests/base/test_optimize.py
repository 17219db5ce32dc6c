"""The shared optimisers (puinfer.base.optimize)."""

import numpy as np
import pytest

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


def test_newton_direction_is_scipys_cholesky_solve_and_modified_where_not_definite():
    """The Newton direction calls LAPACK's potrf/potrs directly (issue 17): the same numbers
    as scipy.linalg.cho_factor/cho_solve; where -H is not positive definite, the modified
    direction (absolute eigenvalues) is an ascent direction."""
    from scipy import linalg

    from puinfer.base.optimize import _ascent_direction

    rng = np.random.default_rng(3)
    A = rng.normal(size=(32, 32))
    H = -(A @ A.T + 0.1 * np.eye(32))
    g = rng.normal(size=32)
    d, newton = _ascent_direction(g, H)
    ref = linalg.cho_solve(linalg.cho_factor(-H, lower=True), g)
    assert newton and np.array_equal(d, ref)
    H2 = H + 50 * np.outer(A[0], A[0]) / (A[0] @ A[0])  # one positive eigenvalue
    d2, newton2 = _ascent_direction(g, H2)
    assert not newton2 and g @ d2 > 0
    assert _ascent_direction(g, H2, modify=False) == (None, False)
    d0, ok0 = _ascent_direction(np.zeros(0), np.zeros((0, 0)))
    assert ok0 and d0.shape == (0,)


def test_value_polish_takes_the_same_last_step_without_its_derivatives():
    """``polish="value"``: the last full Newton step is judged by ``f`` alone where that
    decides, so ``x`` and ``f`` equal the full polish's bitwise, with one evaluation of the
    derivatives fewer; ``H`` is then the last iterate's before that step (``g`` None,
    ``grad_norm`` NaN)."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((40, 3))
    y = np.r_[np.ones(20), np.zeros(20)]

    def make():
        calls = []

        def fun(x, order):  # a logistic log-likelihood with a ridge: far from quadratic
            calls.append((order, x.copy()))
            e = A @ x
            f = -np.logaddexp(0, e).sum() + y @ e - 0.1 * x @ x
            if order == 0:
                return f
            pr = 1 / (1 + np.exp(-e))
            return f, A.T @ (y - pr) - 0.2 * x, -(A.T * (pr * (1 - pr))) @ A - 0.2 * np.eye(3)
        return fun, calls

    fun_a, calls_a = make()
    fun_b, calls_b = make()
    xa, fa, ga, Ha, ia = newton_maximize(fun_a, np.full(3, 2.0), tol=1e-10)
    xb, fb, gb, Hb, ib = newton_maximize(fun_b, np.full(3, 2.0), tol=1e-10, polish="value")
    assert ia.converged and ib.converged
    assert np.array_equal(xa, xb) and fa == fb and np.array_equal(ia.trace, ib.trace)
    orders_a = [o for o, _ in calls_a]
    orders_b = [o for o, _ in calls_b]
    assert orders_b.count(2) == orders_a.count(2) - 1
    assert orders_b.count(0) == orders_a.count(0) + 1
    assert gb is None and np.isnan(ib.grad_norm) and ia.grad_norm < 1e-12
    # H is the Hessian at the last point evaluated with derivatives, the one before the step
    x_last = [x for o, x in calls_b if o == 2][-1]
    assert not np.array_equal(x_last, xb)
    assert np.array_equal(Hb, fun_b(x_last, 2)[2])
    np.testing.assert_allclose(Hb, Ha, rtol=1e-4)


def test_squarem_with_a_metric_iterates_as_the_larger_problem():
    # coordinates 1-3 of y move together (equal rows of A and b): from a start equal on them
    # the iterates stay equal there, and SQUAREM on the reduced (y0, y_group) with the metric
    # (1, 3) -- the group's size -- takes the steps of the full problem
    rng = np.random.default_rng(0)
    A = 0.2 * rng.uniform(size=(4, 4))
    A[2] = A[3] = A[1]
    b = np.array([1.0, -0.5, -0.5, -0.5])

    def expand(x):
        return x[[0, 1, 1, 1]]

    full_path, reduced_path = [], []
    x_full, info_full = squarem(lambda y: A @ y + b, expand(np.array([0.3, 0.7])), tol=1e-13,
                                callback=lambda old, new, ch: full_path.append(new))
    x_red, info_red = squarem(lambda x: (A @ expand(x) + b)[:2], np.array([0.3, 0.7]),
                              tol=1e-13, metric=np.array([1.0, 3.0]),
                              callback=lambda old, new, ch: reduced_path.append(new))
    assert info_red.iterations == info_full.iterations > 2
    for y, x in zip(full_path, reduced_path, strict=True):
        np.testing.assert_allclose(y, expand(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(x_full, np.linalg.solve(np.eye(4) - A, b), rtol=1e-10)
    # the metric matters: without it the reduced problem takes other steps
    other = []
    squarem(lambda x: (A @ expand(x) + b)[:2], np.array([0.3, 0.7]), tol=1e-13,
            callback=lambda old, new, ch: other.append(new))
    assert not np.allclose(other[0], reduced_path[0], rtol=1e-6)


def _logistic_objective(n=400, seed=3):
    """A logistic log-likelihood on simulated rows: concave, quadratic convergence."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ np.array([0.3, 1.0, -0.7])))).astype(float)
    calls = {"derivs": 0}

    def fun(b, order):
        eta = X @ b
        f = float(y @ eta - np.logaddexp(0, eta).sum())
        if order == 0:
            return f
        calls["derivs"] += 1
        p = 1 / (1 + np.exp(-eta))
        return f, X.T @ (y - p), -(X.T * (p * (1 - p))) @ X

    return fun, calls


def test_predict_xtol_stops_one_iteration_early_within_its_bound():
    # quadratic convergence: after steps dx_1, dx_2 the next is about dx_2^3 / dx_1^2; the
    # option stops there, saving the confirming iteration, and x is within that bound
    fun, calls = _logistic_objective()
    opts = dict(tol=0.0, xtol=1e-10, polish=False, armijo=0.0, slack=1e-12)
    x_ref, *_, info_ref = newton_maximize(fun, np.zeros(3), **opts)
    n_ref = calls["derivs"]
    calls["derivs"] = 0
    bound = 1e-14  # between the predicted 2e-16 and dx^2 / dx_prev = 2e-12
    x, *_, info = newton_maximize(fun, np.zeros(3), predict_xtol=bound, **opts)
    assert info.converged and info_ref.converged
    # steps 0.74, 0.18, 0.019, 2e-4, 2e-8: the last predicts 2e-16, below the bound (without
    # the option a sixth step, 2e-16, is needed to see it)
    assert info.iterations == info_ref.iterations - 1 == 5
    assert calls["derivs"] == n_ref - 1
    assert np.max(np.abs(x - x_ref)) <= bound * (1 + np.max(np.abs(x)))
    # a bound below the predicted next step does not stop
    *_, info_strict = newton_maximize(fun, np.zeros(3), predict_xtol=1e-17, **opts)
    assert info_strict.iterations == info_ref.iterations


def test_predict_xtol_does_not_stop_a_linearly_converging_newton():
    # f = -sum x^4: a singular Hessian at the maximum, Newton's steps shrink by 2/3 (never by
    # 100): the prediction must not fire, and the iterates are those without it
    def fun(x, order):
        f = -float(np.sum(x ** 4))
        return f if order == 0 else (f, -4 * x ** 3, np.diag(-12 * x ** 2))

    x0 = np.array([1.0, -0.5])
    a = newton_maximize(fun, x0, tol=0.0, xtol=1e-6, polish=False, maxiter=100)
    b = newton_maximize(fun, x0, tol=0.0, xtol=1e-6, polish=False, maxiter=100,
                        predict_xtol=1e-3)
    assert a[-1].iterations == b[-1].iterations > 20
    np.testing.assert_array_equal(a[0], b[0])


class _Orthant:
    """Maximise ``-|x - c|^2`` over ``x >= 0`` by Newton on the active face: the free
    components are the positive ones and those at 0 whose gradient points inwards; a
    positive component must stay positive (as URC's problem requires)."""

    def __init__(self, c):
        self.c = np.asarray(c, float)
        self.pos = None

    def fun(self, x, order):
        f = -float(np.sum((x - self.c) ** 2))
        return f if order == 0 else (f, -2.0 * (x - self.c), -2.0 * np.eye(x.size))

    def tangent(self, x, g):
        return np.eye(x.size)[:, (x > 1e-10) | (g > 0)]

    def feasible(self, x):
        return bool(np.all(x >= 0) and np.all(x[self.pos] > 0))

    def moved(self, x, f, step):
        self.pos = x > 1e-10

    def run(self, x0, to_boundary):
        x0 = np.asarray(x0, float)
        self.pos = x0 > 1e-10
        hook = None
        if to_boundary:
            def hook(x, dx):
                down = dx < 0
                t = float(np.min(x[down] / -dx[down]))
                out = x + t * dx
                out[down & (x / np.where(down, -dx, 1.0) <= t)] = 0.0
                return t, out
        return newton_maximize(self.fun, x0, tangent=self.tangent, feasible=self.feasible,
                               callback=self.moved, to_boundary=hook, polish=False)


def test_to_boundary_reaches_a_bound_in_one_step():
    """The maximum of ``-|x - c|^2`` on the orthant is ``max(c, 0)``. Halving the infeasible
    step only approaches the bound at a linear rate (one iteration per halving, until the
    component counts as 0: 20 iterations here); the step cut at the bound lands on it exactly,
    and the next step finishes."""
    prob = _Orthant([-0.7, 2.0, 0.5])
    x, f, *_, info = prob.run([1.0, 1.0, 1.0], to_boundary=True)
    assert info.converged and info.iterations <= 2
    assert x[0] == 0.0
    np.testing.assert_allclose(x, [0.0, 2.0, 0.5], atol=1e-12)
    xh, fh, *_, infoh = prob.run([1.0, 1.0, 1.0], to_boundary=False)
    assert infoh.iterations >= 15 and 0 < xh[0] < 1e-9     # the halving path (20 here)
    assert f >= fh


def test_to_boundary_point_refused_by_the_objective_falls_back_to_halving():
    """Where ``f`` is not finite at the cut step's point (here: at 0 itself) the line search
    halves as before."""
    prob = _Orthant([-0.7, 2.0])
    inner = prob.fun

    def fun(x, order):
        if x[0] == 0.0:
            return -np.inf if order == 0 else (-np.inf, None, None)
        return inner(x, order)

    prob.fun = fun
    x, f, *_, info = prob.run([1.0, 1.0], to_boundary=True)
    assert 0 < x[0] < 1e-9 and abs(x[1] - 2.0) < 1e-9


def test_to_boundary_point_must_increase_f():
    """The point on the bound passes the line search's test like any step: here the
    quadratic model at the start (where the cubic term vanishes) points at x0 = -0.7, but at
    the bound x0 = 0 the cubic term makes f lower than at the start, so the cut step is
    refused and the search halves (accepting it would lower f from -2.89 to -5.49)."""
    prob = _Orthant([-0.7, 2.0])
    quad = prob.fun

    def fun(x, order):
        u = max(0.5 - x[0], 0.0)
        f = -40.0 * u ** 3
        if order == 0:
            return quad(x, 0) + f
        fq, g, H = quad(x, 2)
        g, H = g.copy(), H.copy()
        g[0] += 120.0 * u ** 2
        H[0, 0] -= 240.0 * u
        return fq + f, g, H

    prob.fun = fun
    x0 = np.array([1.0, 2.0])
    x, f, *_, info = prob.run(x0, to_boundary=True)
    assert np.all(np.diff(info.trace) >= 0)
    assert info.trace[1] > fun(x0, 0) and x[0] > 0
    g = fun(x, 2)[1]
    assert info.converged and abs(g[0]) < 1e-4   # an interior maximum (decrement < 1e-10)


def _log_term(c=3.0, a=1.0):
    """``f(x) = c log x - a x`` on x > 0 (maximum at ``c / a``): from far below it Newton's
    step is ``x (1 - a x / c)``, about doubling ``x``."""
    def fun(x, order):
        if x[0] <= 0:
            return -np.inf if order == 0 else (-np.inf, None, None)
        f = c * np.log(x[0]) - a * x[0]
        if order == 0:
            return f
        return f, np.array([c / x[0] - a]), np.array([[-c / x[0] ** 2]])
    return fun


def test_extend_takes_a_longer_step_where_f_rises_and_only_there():
    """From x = 1e-9 Newton doubles x about 30 times to reach the maximum 3 of
    ``3 log x - x``; the move the log term predicts, ``x + dx / (1 - r)`` (``r = dx / x``),
    lands on it: the same maximum in a few iterations. A candidate where ``f`` is lower is not
    taken: the run is the plain one, step for step."""
    fun = _log_term()
    x0 = np.array([1e-9])
    plain = newton_maximize(fun, x0, tol=1e-14, feasible=lambda x: x[0] > 0)
    assert plain[4].converged and plain[4].iterations >= 28

    def predicted(x, dx):
        r = dx[0] / x[0]
        return [x + dx / (1.0 - r)] if 0.5 <= r < 1.0 else []
    ext = newton_maximize(fun, x0, tol=1e-14, feasible=lambda x: x[0] > 0, extend=predicted)
    assert ext[4].converged and ext[4].iterations <= 4
    assert ext[0][0] == pytest.approx(3.0, rel=1e-12) == plain[0][0]
    assert np.all(np.diff(ext[4].trace) > 0)

    def worse(x, dx):  # (past the maximum by far: f there is below the full step's)
        return [np.array([1e6])]
    same = newton_maximize(fun, x0, tol=1e-14, feasible=lambda x: x[0] > 0, extend=worse)
    np.testing.assert_array_equal(same[4].trace, plain[4].trace)
