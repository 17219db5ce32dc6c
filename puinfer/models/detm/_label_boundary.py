"""The profile of pi on the boundary of the labelled parameter space.

DETM's profile of pi is taken over the labelled parameters (the KL rule of Liu et al.'s
Remark 1, ``KL(p_s || p_1) <= KL(p_s || p_2)``; :meth:`._profile.PiProfiler.labelled`). At a pi
where the best local maximum of the profile log-EL is unlabelled (e.g. near ``1 - pi-hat``,
where it is the fit's mirror image), the labelled maximum is either a lower labelled local
maximum or lies on the boundary ``KL1 = KL2``, where it is not a stationary point of the
log-EL: no Newton run reaches it. This module finds it: the profile log-EL maximised subject
to :func:`._el.label_gap` ``>= 0`` by SLSQP (scipy) with the exact gradients of both, from an
unlabelled maximum (where the constraint is violated, so that the solution lies on the
boundary).

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


def solve_on_label_boundary(data, pi: float, theta0: np.ndarray, c: float) -> FixedPiSolution:
    """Maximise the penalised profile log-EL at ``pi`` over the labelled parameters (margin
    :func:`._el.label_gap` ``>= 0``) by SLSQP from ``theta0`` (an unlabelled local maximum:
    the solution then lies on the boundary). DETM only; ``data`` in memory or in Dask
    collections (every sum then a pass over the blocks).

    Returns
    -------
    FixedPiSolution
        ``H`` None (the log-EL's Hessian is not the curvature of the constrained problem);
        ``dpi`` the profile's slope (the envelope theorem holds: the constraint does not
        depend on pi); ``f = -inf`` and ``info.converged`` False where SLSQP did not end at a
        labelled point.
    """
    d = data
    lam0 = (d.m * pi / d.N, d.m * (1 - pi) / d.N)
    method = f"SLSQP (label boundary, pi={pi:.6g})"
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
                                      X1=d.X1 if order else None)

        def gap(theta, lam, order=0):
            return _el.label_gap(theta, d.Z, lam, X1=d.X1, order=order)

        def slope(theta):
            return _el.pi_slope(theta, pi, d.Z[d.n:])

    theta0 = np.asarray(theta0, dtype=float)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        f0, _, H0, _ = log_el(theta0, lam0, 2)
    # SLSQP runs in coordinates u with theta = theta0 + T u, T' (-H0) T = I (H0 the log-EL's
    # Hessian at the start, a maximum): its quasi-Newton model starts as the identity, which
    # is then the curvature itself (measured: 42-69 iterations in theta, far fewer in u)
    try:
        T = np.linalg.inv(np.linalg.cholesky(-H0)).T
    except np.linalg.LinAlgError:
        T = np.eye(theta0.size)
    # where no multipliers exist the objective is a finite wall far above any value of it
    # (SLSQP's line search backs off from it; infinite values break its quadratic models)
    scale = 1.0 + abs(f0)
    wall = 1e6 * scale
    # the multipliers of the last point start the next solve; the margin and its gradient are
    # computed once per point (SLSQP asks for the constraint's value and gradient separately)
    lam_last = [lam0]
    margins: dict = {}

    def neg_f(u):
        f, g, _, extra = log_el(theta0 + T @ u, lam_last[0], 2)
        if not np.isfinite(f):
            return wall, np.zeros_like(u)
        lam_last[0] = tuple(extra["lam"])
        return -f, -(T.T @ g)

    def margin(u):
        key = u.tobytes()
        if key not in margins:
            margins.clear()
            out, g = gap(theta0 + T @ u, lam_last[0], order=1)
            margins[key] = (-1.0, np.zeros_like(u)) if out is None else (out, T.T @ g)
        return margins[key]

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # SLSQP's own on infinite values
        r = optimize.minimize(neg_f, np.zeros_like(theta0), jac=True, method="SLSQP",
                              constraints=[dict(type="ineq", fun=lambda u: margin(u)[0],
                                            jac=lambda u: margin(u)[1])],
                              options=dict(maxiter=MAXITER, ftol=FTOL * scale))
        theta = theta0 + T @ np.asarray(r.x, dtype=float)
        finite = bool(np.all(np.isfinite(theta)))
        f = log_el(theta, lam0, 0) if finite else -np.inf
        gap_end = gap(theta, lam0) if np.isfinite(f) else None
    ok = bool(r.success) and np.isfinite(f) and gap_end is not None and \
        gap_end >= -BOUNDARY_GAP_TOL
    info = ConvergenceInfo(ok, int(r.nit), method, "" if ok else str(r.message))
    if not ok:
        return FixedPiSolution(-np.inf, theta, info)
    return FixedPiSolution(f, theta, info, None, slope(theta))
