"""The optimisers every model uses: one safeguarded Newton method and one SQUAREM.

:func:`newton_maximize` maximises a smooth objective from its value, gradient and Hessian;
its safeguards (modified Newton directions, saddle escape, Armijo backtracking, feasibility,
a constraint tangent space, a fallback step) are options, so that each model states which it
needs. :func:`squarem` accelerates a monotone fixed-point map (an EM algorithm) by the
squared extrapolation of Varadhan and Roland (2008), scheme S3.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import lapack

from .results import ConvergenceInfo

__all__ = ["newton_maximize", "squarem"]


def _ascent_direction(g: np.ndarray, H: np.ndarray, modify: bool = True):
    """Newton direction ``-H^{-1} g`` if ``H`` is negative definite, else (``modify``) a
    modified Newton direction with the eigenvalues of ``H`` replaced by ``-max(|ev|, eps)``
    (always ascent), or None. A structured ``H`` (not an array: see :func:`newton_maximize`'s
    ``fun``) computes the same itself."""
    if not isinstance(H, np.ndarray):
        return H.ascent_direction(g, modify)
    if not H.size:
        return np.zeros_like(g, dtype=float), True
    # LAPACK potrf + potrs, as scipy.linalg.cho_factor / cho_solve call them (the same
    # arithmetic, without their wrappers, which cost more than the factorisation at these sizes)
    c, info = lapack.dpotrf(-H, lower=1, clean=0)
    if info == 0:
        d, info = lapack.dpotrs(c, g, lower=1)
        if info == 0:
            return d, True
    if not modify:
        return None, False
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


class _Step:
    """What one Newton iteration did (passed to ``callback``)."""

    __slots__ = ("kind", "t", "decrement", "dx")

    def __init__(self, kind, t, decrement, dx):
        self.kind, self.t, self.decrement, self.dx = kind, t, decrement, dx


def newton_maximize(fun: Callable, x0, *, maxiter: int = 200, tol: float = 1e-10,
                    method: str = "Newton", callback=None, xtol: float | None = None,
                    ftol_rel: float = 0.0, armijo: float = 1e-4, slack: float = 0.0,
                    shrink: float = 0.5, min_step: float = 1e-12, modify: bool = True,
                    escape_saddles: bool = True, polish: bool | str = True, tangent=None,
                    feasible=None, fallback=None, predict_xtol: float | None = None,
                    to_boundary=None, extend=None):
    """Maximise a smooth function by Newton's method with a backtracking line search.

    Parameters
    ----------
    fun : callable
        ``fun(x, order)`` returns ``f`` for ``order=0`` and ``(f, g, H)`` for ``order=2``
        (value, gradient, Hessian). ``f = -inf`` marks an infeasible point. With ``tangent``
        the Hessian may be a structured object instead of an array (URC's arrow matrix,
        :class:`puinfer.models.urc._face.BlockHessian`): ``H.reduce(T)`` returns ``T' H T``
        as an array or as an object whose ``ascent_direction(g, modify)`` returns what
        ``_ascent_direction`` returns for the array (the Newton or modified direction).
    x0 : array_like
        Start.
    maxiter : int
        Maximum number of Newton iterations.
    tol : float
        Convergence when the Newton decrement ``g' (-H)^{-1} g`` (twice the predicted gain,
        in units of ``f``) falls below ``max(tol, ftol_rel * |f|)`` where ``H`` is negative
        definite (on the tangent space, with ``tangent``); also (``"stopped at floating-point
        precision"``) when the line search has to shorten a Newton step whose decrement is
        below 1000 ulps of ``|f|``, a gain the rounding of ``f`` cannot resolve.
    method : str
        Name recorded in the returned :class:`ConvergenceInfo`.
    callback : callable, optional
        ``callback(x, f, step)`` after every accepted step (``step.kind``: ``"newton"``,
        ``"modified"``, ``"saddle"`` or the fallback's kind; ``step.t``: the step length;
        ``step.dx``: max-norm of the move). A true return value stops the iteration as
        converged (a model-specific certificate, e.g. a fixed point).
    xtol : float, optional
        Also converged after a full Newton step with ``max |dx| <= xtol (1 + max |x|)``.
    predict_xtol : float, optional
        Also converged (with ``xtol``) after two consecutive full Newton steps ``dx_1``,
        ``dx_2`` (max-norms) with ``dx_2 <= dx_1 / 100`` whose quadratic rate predicts the
        next step, ``dx_2^3 / dx_1^2``, below ``predict_xtol (1 + max |x|)``: ``x`` is then
        about that far from the maximum, and the iteration that would confirm it (an
        evaluation of ``f`` and one of its derivatives) is saved.
    ftol_rel : float
        Relative rounding-noise floor of the decrement (see ``tol``).
    armijo, slack, shrink, min_step : float
        Line search: accept ``x + t d`` when ``f_new >= f + armijo t g'd - slack |f|``,
        else ``t *= shrink`` until ``t < min_step``.
    modify : bool
        Where ``H`` is not negative definite, use the modified Newton direction (absolute
        eigenvalues); ``False`` stops instead (not converged).
    escape_saddles : bool
        At a stationary point with positive curvature, move along that direction.
    polish : bool or "value"
        After convergence, take one last full Newton step if it does not lower ``f``
        (quadratic convergence takes ``x`` from ~sqrt(tol) to rounding error). ``"value"``:
        the same step, judged by ``f`` alone where that suffices (for a caller that uses
        ``H`` only as an approximation: it saves an evaluation of the derivatives); ``x`` and
        ``f`` are then those of ``True``, the returned ``H`` is the point's before the step,
        ``g`` is None and ``grad_norm`` NaN (not evaluated at ``x``).
    tangent : callable, optional
        ``tangent(x, g)`` -> a (dense or sparse) matrix ``T`` whose columns span the feasible
        directions at ``x`` (equality constraints, an active set); Newton then runs on
        ``T' g`` and ``T' H T`` and moves by ``T step``. ``None`` from ``tangent`` stops (not
        converged); a matrix without columns means nothing is free (converged).
    feasible : callable, optional
        ``feasible(x)`` -> bool; the line search only accepts feasible points.
    fallback : callable, optional
        ``fallback(x, f, g, H)`` -> ``(x_new, kind)`` or None, tried when the line search
        fails (e.g. an EM step that never lowers ``f``).
    to_boundary : callable, optional
        ``to_boundary(x, dx)`` -> ``(t, x_b)`` or None: where an infeasible full step first
        meets the boundary of the feasible set (``0 < t < 1``) and that point, the components
        reaching the boundary set onto it (an active-set step: halving the step instead
        approaches a bound at a linear rate, one iteration per halving). The line search
        tries ``x_b`` (without ``feasible``: the callable vouches for it, and the caller's
        ``feasible`` must accept the new bound values at the next step, e.g. by re-tracking
        its active set in ``callback``) before halving; ``x_b`` must pass the same
        sufficient-increase test as any step.
    extend : callable, optional
        ``extend(x, dx)`` -> points to try, in order, after the full Newton step ``dx`` was
        accepted: the first that is feasible and has ``f`` above the full step's value is
        taken instead. For terms like ``c log x_i`` far below their maximum, where Newton's
        step only doubles ``x_i`` (see
        :meth:`puinfer.models.urc._likelihood._Problem.extend`).

    Returns
    -------
    x : numpy.ndarray
    f, g, H : the value, gradient and Hessian at ``x``
    info : ConvergenceInfo
        ``trace`` holds ``f`` at every iterate; it never decreases.
    """
    x = np.array(x0, dtype=float)
    f, g, H = fun(x, 2)
    if not np.isfinite(f):
        raise ValueError("the starting values are infeasible (objective is not finite)")
    trace, converged, it = [f], False, 0
    message = "maximum number of iterations reached"
    dx_full_prev = None  # the last step's max-norm if it was a full Newton step
    for it in range(1, maxiter + 1):
        T, gr, Hr, stop = _reduce(tangent, x, g, H)
        d, newton = (None, False) if stop else _ascent_direction(gr, Hr, modify)
        if d is None:
            converged, message = stop or (False, "Hessian not negative definite")
            it -= 1
            break
        dec = float(gr @ d)
        thresh = max(tol, ftol_rel * abs(f))
        if dec < thresh and not newton and escape_saddles and T is None:
            # the gradient vanishes but the Hessian is not negative definite: a saddle point
            # (escape along the direction of positive curvature) or flat directions (e.g. a
            # tilt that no data point weighs), where we stop
            x_esc = _escape_saddle(fun, x, f, H)
            if x_esc is not None:
                x, (f, g, H) = x_esc, fun(x_esc, 2)
                trace.append(f)
                continue
        dx_full = d if T is None else np.asarray(T @ d).ravel()
        if dec < thresh:
            converged, it = True, it - 1
            message = "" if newton else "Hessian singular at the solution (flat directions)"
            if newton and polish:
                x, f, g, H = _polish(fun, x, f, g, H, dx_full, feasible, trace,
                                     value_only=polish == "value")
            break
        t, x_new, f_new = _line_search(fun, x, f, dx_full, dec, feasible, armijo, slack,
                                       shrink, min_step, to_boundary)
        kind = "newton" if newton else "modified"
        if extend is not None and newton and t == 1.0:
            x_new = _extended(fun, x_new, f_new, extend(x, dx_full), feasible)
        if newton and t < 1.0 and dec < _noise_floor(f):
            # the predicted gain is below the rounding of f (a sum over many rows: on 1e7
            # rows numpy's summation error exceeds it), so the line search cannot judge the
            # step: a shrunken step it accepts is noise, and iterating on such steps ran to
            # maxiter at tens of evaluations each. f is maximal to its precision.
            converged, message = True, "stopped at floating-point precision"
            break
        if t < min_step:
            out = fallback(x, f, g, H) if fallback is not None else None
            if out is None:
                # no step increases f: we are at the maximum to floating-point precision if
                # the predicted gain is negligible relative to |f|
                at_eps = newton and dec < _noise_floor(f)
                converged = bool(at_eps)
                message = "stopped at floating-point precision" if at_eps else \
                    "line search failed"
                break
            x_new, kind = out
            t = float("nan")
        dx = float(np.max(np.abs(x_new - x))) if x.size else 0.0
        x = x_new
        f, g, H = fun(x, 2)
        trace.append(f)
        # a model's own certificate (callback), or a full Newton step below xtol (or, with
        # predict_xtol, the next one predicted below it)
        full = t == 1.0 and kind == "newton"
        if (callback is not None and callback(x, f, _Step(kind, t, dec, dx))) or (
                xtol is not None and full and _below_xtol(dx, dx_full_prev, xtol,
                                                          predict_xtol, x)):
            converged, message = True, ""
            break
        dx_full_prev = dx if full else None
    grad_norm = float("nan") if g is None else float(np.max(np.abs(g))) if g.size else 0.0
    info = ConvergenceInfo(converged=converged, iterations=it, method=method, message=message,
                           trace=np.asarray(trace), grad_norm=grad_norm)
    return x, f, g, H, info


def _below_xtol(dx, dx_prev, xtol, predict_xtol, x) -> bool:
    """Whether the full Newton step ``dx`` (max-norm) is below ``xtol (1 + max |x|)``, or,
    after the full Newton step ``dx_prev``, the next step predicted by the quadratic rate
    ``dx / dx_prev^2`` is below ``predict_xtol (1 + max |x|)`` (see :func:`newton_maximize`)."""
    scale = 1.0 + float(np.max(np.abs(x), initial=0.0))
    if dx <= xtol * scale:
        return True
    return (predict_xtol is not None and dx_prev is not None and dx <= 0.01 * dx_prev
            and dx ** 3 <= predict_xtol * scale * dx_prev ** 2)


def _noise_floor(f: float) -> float:
    """A Newton decrement (twice the predicted gain) below which a change of ``f`` is lost in
    the rounding of ``f``: 1000 ulps of ``|f|``."""
    return 1e3 * np.finfo(float).eps * max(1.0, abs(f))


def _reduce(tangent, x, g, H):
    """Gradient and Hessian on the tangent space ``T`` at ``x`` (the full ones without
    ``tangent``); ``stop = (converged, message)`` when no Newton step can be taken."""
    if tangent is None:
        return None, g, H, None
    T = tangent(x, g)
    if T is None:
        return None, None, None, (False, "too many free parameters for a Newton step")
    if T.shape[1] == 0:
        return None, None, None, (True, "no free parameters")
    Tt = T.T
    gr = np.asarray(Tt @ g).ravel()
    if not isinstance(H, np.ndarray):  # a structured Hessian reduces itself (see fun)
        return T, gr, H.reduce(T), None
    return T, gr, np.asarray(Tt @ np.asarray(Tt @ H).T), None


def _line_search(fun, x, f, dx, dec, feasible, armijo, slack, shrink, min_step,
                 to_boundary=None):
    """Backtrack from the full step ``dx`` until the Armijo condition holds at a feasible
    point; returns ``(t, x + t dx, f there)`` (``t < min_step``: no acceptable step). With
    ``to_boundary`` (see :func:`newton_maximize`), an infeasible full step is first cut
    where it meets the boundary."""
    t = 1.0
    if to_boundary is not None and feasible is not None and not feasible(x + dx):
        out = to_boundary(x, dx)
        if out is not None:
            tb, x_b = out
            if min_step <= tb < 1.0:
                f_b = fun(x_b, 0)
                if np.isfinite(f_b) and f_b >= f + armijo * tb * dec - slack * abs(f):
                    return tb, x_b, f_b
    f_new = -np.inf
    while t >= min_step:
        x_new = x + t * dx
        if feasible is None or feasible(x_new):
            f_new = fun(x_new, 0)
            if np.isfinite(f_new) and f_new >= f + armijo * t * dec - slack * abs(f):
                break
        t *= shrink
    return t, x_new, f_new


def _extended(fun, x1, f1, candidates, feasible):
    """The first of ``candidates`` that is feasible and has ``f`` above ``f1``, the value at
    the full Newton step's point ``x1``; else ``x1``."""
    for x_c in candidates:
        if (feasible is None or feasible(x_c)) and fun(x_c, 0) > f1:
            return x_c
    return x1


def _polish(fun, x, f, g, H, dx, feasible, trace, value_only=False):
    """One last full Newton step, kept if feasible and ``f`` does not drop (appended to
    ``trace``), or drops by no more than rounding error while the gradient shrinks: its
    predicted gain is below ``tol`` and can be lost in the rounding of ``f`` (a sum over many
    rows, added in another order on Dask blocks), which then cannot judge the step; keeping
    or not keeping it must not depend on that noise (the trace records ``f`` there).
    ``value_only``: where ``f`` alone decides, the derivatives at the new point are not
    evaluated (``g`` is returned as None there, ``H`` as the old point's)."""
    x_new = x + dx
    if feasible is None or feasible(x_new):
        noise = 1e3 * np.finfo(float).eps * max(1.0, abs(f))
        if value_only:
            f_new = fun(x_new, 0)
            if np.isfinite(f_new) and f_new >= f:
                trace.append(f_new)
                return x_new, f_new, None, H
            if not (np.isfinite(f_new) and f_new >= f - noise):
                return x, f, g, H
        f_new, g_new, H_new = fun(x_new, 2)
        if np.isfinite(f_new) and (f_new >= f or (
                f_new >= f - noise and np.all(np.isfinite(g_new))
                and np.linalg.norm(g_new) < np.linalg.norm(g))):
            trace.append(max(f_new, f))
            return x_new, f_new, g_new, H_new
    return x, f, g, H


def squarem(emap: Callable, x0, *, objective: Callable | None = None, maxiter: int = 500,
            tol: float = 1e-10, relative: bool = False, feasible=None, project=None,
            callback=None, metric=None, method: str = "EM (SQUAREM-accelerated)"):
    """Fixed point of a monotone map (an EM algorithm), accelerated by SQUAREM (scheme S3).

    Each iteration takes two map steps ``x1 = M(x0)``, ``x2 = M(x1)``, extrapolates along
    ``r = x1 - x0``, ``v = x2 - 2 x1 + x0`` with ``alpha = min(-|r|/|v|, -1)`` (Varadhan and
    Roland 2008), halves ``alpha`` towards -1 while the extrapolated point is not
    ``feasible`` (or clips it with ``project``), and takes a stabilising map step from it.
    With ``objective``, the accelerated point is kept only if its objective is no lower than
    that of ``x2`` (so the objective never decreases); without, it is always kept.

    Parameters
    ----------
    emap : callable
        The map ``x -> M(x)``.
    x0 : array_like
    objective : callable, optional
        The objective the map increases (for the monotonicity safeguard and the trace).
    maxiter : int
        Maximum number of iterations (each costs up to three map evaluations).
    tol : float
        Converged when ``min(max|x_new - x|, max|r|) < tol`` (times ``1 + max|x_new|`` if
        ``relative``): near the fixed point the extrapolation only amplifies rounding noise.
    feasible, project : callable, optional
        ``feasible(x) -> bool`` for the extrapolated point; ``project(x) -> x`` clips it.
    callback : callable, optional
        ``callback(x_old, x_new, change)`` after every iteration.
    metric : numpy.ndarray, optional
        Positive weights of the squared norms ``|r|^2 = sum_i metric_i r_i^2`` (and ``|v|``)
        that set ``alpha``: ``x`` holding the values of groups of ``metric_i`` equal
        coordinates of a larger problem, the iteration is that of the larger one.

    Returns
    -------
    x : numpy.ndarray
    info : ConvergenceInfo
        ``grad_norm`` is the fixed-point residual ``max |M(x) - x|``; ``trace`` the objective
        at every iterate (empty without ``objective``); ``message`` the number of map
        evaluations.
    """
    x = np.array(x0, dtype=float)
    f = objective(x) if objective is not None else np.nan
    trace = [f] if objective is not None else []
    converged = False
    it, evals = 0, 0
    change = np.inf
    # the vector arithmetic in place, in one scratch array (the same operations in the same
    # order as the plain expressions in the comments; on the isotonic CalEM map's ~5e5 cells
    # each fresh array costs about as much as the arithmetic on it)
    tmp = np.empty_like(x)
    for it in range(1, maxiter + 1):  # noqa: B007 (reported)
        x1 = emap(x)
        x2 = emap(x1)
        evals += 2
        r = x1 - x
        v = np.subtract(x2, x1)  # v = x2 - x1 - r
        v -= r
        if metric is None:
            nr, nv = np.sqrt(r @ r), np.sqrt(v @ v)
        else:  # sqrt(r @ (metric * r)), sqrt(v @ (metric * v))
            nr = np.sqrt(r @ np.multiply(metric, r, out=tmp))
            nv = np.sqrt(v @ np.multiply(metric, v, out=tmp))
        xn = x2
        fn = objective(x2) if objective is not None else np.nan
        if nr > 0 and nv > 0:
            alpha = min(-nr / nv, -1.0)
            xp = None
            # halve alpha towards -1 (where the candidate is the plain EM point x2); 60 halvings
            # bring it within ~1e-12 relative of -1, and if even that is refused (a boundary
            # that `feasible` excludes) the plain EM step x2 is kept
            for _ in range(60):
                cand = np.multiply(2.0 * alpha, r)  # x - 2.0 * alpha * r + alpha * alpha * v
                np.subtract(x, cand, out=cand)
                cand += np.multiply(alpha * alpha, v, out=tmp)
                if project is not None:
                    cand = project(cand)
                if feasible is None or feasible(cand):
                    xp = cand
                    break
                alpha = 0.5 * (alpha - 1.0)
            if xp is not None:
                x3 = emap(xp)
                evals += 1
                if objective is None:
                    xn = x3
                else:
                    f3 = objective(x3)
                    if f3 >= fn:
                        xn, fn = x3, f3
        d = np.subtract(xn, x, out=tmp)  # max |xn - x|, max |r|
        change = min(float(np.max(np.abs(d, out=d))), float(np.max(np.abs(r, out=r))))
        if callback is not None:
            callback(x, xn, change)
        x, f = xn, fn
        if objective is not None:
            trace.append(f)
        scale = 1.0 + float(np.max(np.abs(x, out=tmp))) if relative else 1.0
        if change < tol * scale:
            converged = True
            break
    resid = float(np.max(np.abs(emap(x) - x)))
    msg = f"{evals} map evaluations" + ("" if converged else
                                          f"; limit {maxiter} reached, last change {change:.2e}")
    info = ConvergenceInfo(converged=converged, iterations=it, method=method, message=msg,
                           trace=np.asarray(trace), grad_norm=resid)
    return x, info
