"""The profile of pi on the boundary of the labelled parameter space.

DETM's profile of pi is taken over the labelled parameters (the KL rule of Liu et al.'s
Remark 1, ``KL(p_s || p_1) <= KL(p_s || p_2)``; :meth:`._profile.PiProfiler.labelled`). At a pi
where the best local maximum of the profile log-EL is unlabelled (e.g. near ``1 - pi-hat``,
where it is the fit's mirror image), the labelled maximum is either a lower labelled local
maximum or lies on the boundary ``KL1 = KL2``, where it is not a stationary point of the
log-EL: no Newton run reaches it. This module finds it: the profile log-EL maximised subject
to :func:`._el.label_gap` ``>= 0`` from an unlabelled maximum (where the constraint is violated,
so that the solution lies on the boundary), by Newton's method on the KL1 = KL2 problem's
optimality conditions (:func:`_sqp`), with SLSQP (scipy) from the same start where that does
not converge.

Why (session 52, ``studies/results/README_detm.md``): without it, a pi where no start reached
a labelled maximum took the best unlabelled one -- a value that belongs to no labelled
parameter and overstates the profile (on Liu et al.'s SAR design at pi = 0.7, n = m = 1000,
R* = 0.02-3.7 where the labelled boundary maximum gives 12-25), and a pi where a lower
labelled maximum was found ignored the boundary above it (R* 35.1 where the boundary gives
15.5).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import optimize

from ...base.results import ConvergenceInfo
from . import _el
from ._starts import FixedPiSolution

__all__ = ["solve_on_label_boundary", "BOUNDARY_GAP_TOL"]

#: a solution counts as labelled (on the boundary) where the margin is above minus this (the
#: margin is a difference of two KL divergences; SLSQP meets the constraint to rounding)
BOUNDARY_GAP_TOL = 1e-9

#: SLSQP's iterations at most, and its tolerance on the change of the objective relative to
#: the log-EL's size (SLSQP's own is absolute: below the rounding of a sum over many rows it
#: does not stop; measured: 1e-12 absolute at a log-EL of -3,798 ran to the iteration limit
#: at the solution)
MAXITER = 200
FTOL = 1e-13

#: The Newton (SQP) solve of the boundary problem (:func:`_sqp`, session 53): its iterations
#: at most, the margin's size at a solution, and the Newton decrement there relative to the
#: log-EL's size. Measured against SLSQP on 173 boundary problems of 18 default fits (SAR
#: design, n = m = 1000, p = 15; `studies/results/README_detm.md`, session 53): 2-12 iterations
#: where SLSQP took 3-69, every maximum's log-EL equal to 1e-7, their CPU 8.9 -> 3.3 s; where
#: it does not converge (3 of the 173) SLSQP runs from the start as before.
SQP_MAXITER = 40
SQP_GAP_TOL = 1e-11
SQP_DEC_TOL = 1e-13


def _sqp(log_el, gap, theta0, start, scale):
    """Maximise ``f`` (``log_el(theta, order)``: the value, or value, gradient and Hessian)
    subject to the margin ``gap(theta, order)`` ``= 0`` by Newton's method on the optimality
    conditions ``grad f + mu grad gap = 0``, ``gap = 0`` (sequential quadratic programming):
    the log-EL's exact Hessian plus ``mu`` times a symmetric-rank-one model of the margin's,
    built from its gradients along the steps; a backtracking line search on the exact penalty
    ``f - rho |gap|``. ``start``: ``(f, grad, H)`` at ``theta0``.

    Returns ``(theta, iterations)`` at a point with ``|gap| <= SQP_GAP_TOL``, a Newton
    decrement below ``SQP_DEC_TOL * scale`` and ``mu >= 0`` (the constraint holds the maximum
    back: a maximum of the labelled problem), else None."""
    theta = np.array(theta0, dtype=float)
    f, gf, H = start
    g, a = gap(theta, 1)
    if g is None or not np.isfinite(f):
        return None
    n = theta.size
    G = np.zeros((n, n))  # the margin's Hessian, as far as the steps have measured it
    mu = max(0.0, -(a @ gf) / (a @ a))
    for k in range(SQP_MAXITER):
        W = H + max(mu, 0.0) * G  # far from the solution mu's estimate can be negative
        # the step: normal to the constraint to gap + a'd = 0, and Newton's on its tangent
        # space (the columns of Q), where W's eigenvalues are made negative by their absolute
        # values if they are not (a modified Newton step, as newton_maximize's)
        Q = np.linalg.qr(a[:, None], mode="complete")[0][:, 1:]
        dn = -g * a / (a @ a)
        ev, V = np.linalg.eigh(Q.T @ W @ Q)
        concave = ev[-1] < 0
        ev = -np.maximum(np.abs(ev), 1e-8 * np.abs(ev).max())
        r = V.T @ (Q.T @ (gf + W @ dn))
        d = dn - Q @ (V @ (r / ev))
        mu_new = -(a @ (gf + W @ d)) / (a @ a)
        dec = -(r @ (r / ev))
        if abs(g) <= SQP_GAP_TOL and dec <= SQP_DEC_TOL * scale:
            return (theta, k) if concave and mu_new >= 0 else None
        rho = 2.0 * max(abs(mu), abs(mu_new)) + 1.0
        phi0 = f - rho * abs(g)
        slope = gf @ d + rho * abs(g)  # the penalty's derivative along d (a'd = -gap)
        t = 1.0
        while True:
            trial = theta + t * d
            f_t = log_el(trial, 0)
            g_t = gap(trial, 0) if np.isfinite(f_t) else None
            if g_t is not None and \
                    f_t - rho * abs(g_t) >= phi0 + 1e-4 * t * slope - 1e-13 * scale:
                break
            t *= 0.5
            if t < 1e-10:
                return None
        a_old = a
        theta = trial
        f, gf, H, _ = log_el(theta, 2)
        g, a = gap(theta, 1)
        if g is None or not np.isfinite(f):
            return None
        s_k = t * d
        y = (a - a_old) - G @ s_k
        den = y @ s_k
        if abs(den) > 1e-8 * np.linalg.norm(y) * np.linalg.norm(s_k):  # SR1's usual guard
            G += np.outer(y, y) / den
        mu += t * (mu_new - mu)
    return None


def solve_on_label_boundary(data, pi: float, theta0: np.ndarray, c: float) -> FixedPiSolution:
    """Maximise the penalised profile log-EL at ``pi`` over the labelled parameters (margin
    :func:`._el.label_gap` ``>= 0``) from ``theta0`` (an unlabelled local maximum: the solution
    then lies on the boundary) by :func:`_sqp`, else by SLSQP. DETM only; ``data`` in memory
    or in Dask collections (every sum then a pass over the blocks).

    Returns
    -------
    FixedPiSolution
        ``H`` None (the log-EL's Hessian is not the curvature of the constrained problem);
        ``dpi`` the profile's slope (the envelope theorem holds: the constraint does not
        depend on pi); ``f = -inf`` and ``info.converged`` False where neither solver ended at a
        labelled point.
    """
    d = data
    lam0 = (d.m * pi / d.N, d.m * (1 - pi) / d.N)
    if getattr(d, "lazy", False):  # rows in Dask collections: block sums
        def log_el(theta, lam, order):
            return d.profile_log_el(theta, pi, c, lam0=lam, order=order)

        def gap(theta, lam, order=0):
            return d.label_gap(theta, pi, order)

        def slope(theta):
            return d.pi_slope(theta, pi)
    else:
        def log_el(theta, lam, order):
            return _el.profile_log_el(theta, pi, d.Z, d.y, c, lam0=lam, order=order,
                                      X1=d.X1 if order else None,
                                      X1F=d.X1F if order else None)

        def gap(theta, lam, order=0):
            return _el.label_gap(theta, d.Z, lam, X1=d.X1, order=order)

        def slope(theta):
            return _el.pi_slope(theta, pi, d.Z[d.n:])

    theta0 = np.asarray(theta0, dtype=float)
    # the multipliers of the last point evaluated with derivatives start the next solve
    lam_last = [lam0]

    def log_el_warm(theta, order):
        out = log_el(theta, lam_last[0], order)
        if order and np.isfinite(out[0]):
            lam_last[0] = tuple(out[3]["lam"])
        return out

    def gap_warm(theta, order):
        return gap(theta, lam_last[0], order)

    def finish(theta, converged, iterations, method, message=""):
        """The solution at ``theta`` if it is a converged labelled point."""
        finite = bool(np.all(np.isfinite(theta)))
        f = log_el(theta, lam0, 0) if finite else -np.inf
        gap_end = gap(theta, lam0) if np.isfinite(f) else None
        ok = converged and np.isfinite(f) and gap_end is not None and \
            gap_end >= -BOUNDARY_GAP_TOL
        info = ConvergenceInfo(ok, int(iterations), f"{method} (label boundary, pi={pi:.6g})",
                               "" if ok else message or "not a labelled point")
        if not ok:
            return FixedPiSolution(-np.inf, theta, info)
        return FixedPiSolution(f, theta, info, None, slope(theta))

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        f0, g0, H0, _ = log_el_warm(theta0, 2)
        scale = 1.0 + abs(f0)
        if np.isfinite(f0):
            out = _sqp(log_el_warm, gap_warm, theta0, (f0, g0, H0), scale)
            if out is not None:
                sol = finish(out[0], True, out[1], "Newton-SQP")
                if sol.info.converged:
                    return sol
    lam_last[0] = lam0
    theta, nit, success, message = _slsqp(log_el_warm, gap_warm, theta0, H0, scale)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return finish(theta, success, nit, "SLSQP", message)


def _slsqp(log_el, gap, theta0, H0, scale):
    """The boundary problem of :func:`solve_on_label_boundary` by scipy's SLSQP from
    ``theta0`` (``H0`` the log-EL's Hessian there): ``(theta, iterations, success,
    message)``."""
    # SLSQP runs in coordinates u with theta = theta0 + T u, T' (-H0) T = I (H0 the log-EL's
    # Hessian at the start, a maximum): its quasi-Newton model starts as the identity, which
    # is then the curvature itself (measured: 42-69 iterations in theta, far fewer in u)
    try:
        T = np.linalg.inv(np.linalg.cholesky(-H0)).T
    except (np.linalg.LinAlgError, TypeError):
        T = np.eye(theta0.size)
    # where no multipliers exist the objective is a finite wall far above any value of it
    # (SLSQP's line search backs off from it; infinite values break its quadratic models)
    wall = 1e6 * scale
    margins: dict = {}  # the margin and its gradient once per point (SLSQP asks separately)

    def neg_f(u):
        # (order 1: the value and gradient of order 2 bit for bit, without the Hessian,
        # which SLSQP does not use)
        f, g, _, _ = log_el(theta0 + T @ u, 1)
        if not np.isfinite(f):
            return wall, np.zeros_like(u)
        return -f, -(T.T @ g)

    def margin(u):
        key = u.tobytes()
        if key not in margins:
            margins.clear()
            out, g = gap(theta0 + T @ u, 1)
            margins[key] = (-1.0, np.zeros_like(u)) if out is None else (out, T.T @ g)
        return margins[key]

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # SLSQP's own on infinite values
        r = optimize.minimize(neg_f, np.zeros_like(theta0), jac=True, method="SLSQP",
                              constraints=[dict(type="ineq", fun=lambda u: margin(u)[0],
                                            jac=lambda u: margin(u)[1])],
                              options=dict(maxiter=MAXITER, ftol=FTOL * scale))
    return theta0 + T @ np.asarray(r.x, dtype=float), r.nit, bool(r.success), str(r.message)
