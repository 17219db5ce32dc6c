"""Optimiser drivers shared by the models: a safeguarded Newton method for maximisation."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .results import ConvergenceInfo

__all__ = ["newton_maximize"]


def _ascent_direction(g: np.ndarray, H: np.ndarray) -> tuple[np.ndarray, bool]:
    """Newton direction ``-H^{-1} g`` if ``H`` is negative definite, else a modified Newton
    direction with the eigenvalues of ``H`` replaced by ``-max(|ev|, eps)`` (always ascent)."""
    try:
        L = np.linalg.cholesky(-H)
        d = np.linalg.solve(L.T, np.linalg.solve(L, g))
        return d, True
    except np.linalg.LinAlgError:
        ev, V = np.linalg.eigh(-H)
        scale = max(np.abs(ev).max(), 1.0)
        ev = np.maximum(np.abs(ev), 1e-8 * scale)
        return V @ ((V.T @ g) / ev), False


def _escape_saddle(fun, x, f, H):
    """If ``H`` has a clearly positive eigenvalue, return a point along its eigenvector with a
    higher objective (trying both signs and shrinking steps); None if there is none."""
    ev, V = np.linalg.eigh(H)
    if ev[-1] <= 1e-8 * max(1.0, np.abs(ev).max()):
        return None
    v = V[:, -1]
    t = 1.0
    while t > 1e-8:
        for sgn in (1.0, -1.0):
            x_new = x + sgn * t * v
            f_new = fun(x_new, 0)
            if np.isfinite(f_new) and f_new > f + 1e-12 * max(1.0, abs(f)):
                return x_new
        t *= 0.5
    return None


def newton_maximize(fun: Callable, x0, *, maxiter: int = 200, tol: float = 1e-10,
                    method: str = "Newton", callback=None):
    """Maximise a smooth function by Newton's method with a backtracking line search.

    Parameters
    ----------
    fun : callable
        ``fun(x, order)`` returns ``f`` for ``order=0`` and ``(f, g, H)`` for ``order=2``
        (value, gradient, Hessian). ``f = -inf`` marks an infeasible point.
    x0 : array_like
        Start.
    maxiter : int
        Maximum number of Newton iterations.
    tol : float
        Convergence when the Newton decrement ``g' (-H)^{-1} g`` (the predicted gain, in units
        of ``f``) falls below ``tol`` at a point where ``H`` is negative definite.

    Returns
    -------
    x : numpy.ndarray
    f, g, H : the value, gradient and Hessian at ``x``
    info : ConvergenceInfo
        ``trace`` holds ``f`` at every iterate; it never decreases (Armijo line search).
    """
    x = np.array(x0, dtype=float)
    f, g, H = fun(x, 2)
    if not np.isfinite(f):
        raise ValueError("the starting values are infeasible (objective is not finite)")
    trace = [f]
    converged = False
    message = "maximum number of iterations reached"
    it = 0
    for it in range(1, maxiter + 1):
        d, newton = _ascent_direction(g, H)
        dec = float(g @ d)
        if dec < tol and not newton:
            # the gradient vanishes but the Hessian is not negative definite: a saddle point
            # (escape along the direction of positive curvature) or flat directions (e.g. a
            # tilt that no data point weighs), where we stop
            x_esc = _escape_saddle(fun, x, f, H)
            if x_esc is not None:
                x = x_esc
                f, g, H = fun(x, 2)
                trace.append(f)
                continue
        if dec < tol:
            converged = True
            message = "" if newton else "Hessian singular at the solution (flat directions)"
            it -= 1
            if newton:
                # one last Newton step: quadratic convergence takes the parameters from
                # ~sqrt(tol) to rounding error (kept only if the objective does not drop)
                x_new = x + d
                f_new, g_new, H_new = fun(x_new, 2)
                if np.isfinite(f_new) and f_new >= f:
                    x, f, g, H = x_new, f_new, g_new, H_new
                    trace.append(f)
            break
        t = 1.0
        while True:
            x_new = x + t * d
            f_new = fun(x_new, 0)
            if np.isfinite(f_new) and f_new >= f + 1e-4 * t * dec:
                break
            t *= 0.5
            if t < 1e-12:
                break
        if t < 1e-12:
            # no step increases f: we are at the maximum to floating-point precision if the
            # predicted gain is negligible relative to |f|
            if newton and dec < 1e3 * np.finfo(float).eps * max(1.0, abs(f)):
                converged, message = True, "stopped at floating-point precision"
            else:
                message = "line search failed"
            break
        x = x_new
        f, g, H = fun(x, 2)
        trace.append(f)
        if callback is not None:
            callback(x, f)
    grad_norm = float(np.max(np.abs(g))) if g.size else 0.0
    info = ConvergenceInfo(converged=converged, iterations=it, method=method, message=message,
                           trace=np.asarray(trace), grad_norm=grad_norm)
    return x, f, g, H, info
