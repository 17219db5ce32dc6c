"""Separation: target points outside the convex hull of the source sample, binding ridges.

A target point outside the convex hull of the source points can be strictly separated from
all of them; one tilt can then run off to infinity along the separating direction and the
unpenalised maximum of the empirical likelihood does not exist.
"""

from __future__ import annotations

import warnings

import numpy as np

from ...base.numeric import logaddexp, softplus
from ...base.optimize import newton_maximize
from . import _el
from ._label import swap_needed
from ._starts import free_fun, pi_of_v

__all__ = ["separated_target_points", "check_separation"]

#: number of target points (those with the smallest fitted source probability) whose
#: separation from the source sample is checked by a linear programme
N_CANDIDATES = 25
#: the ridge-binding check runs up to this many rows
RIDGE_CHECK_MAX_N = 50_000


def separated_target_points(Zs: np.ndarray, Zt: np.ndarray, candidates=None,
                            directions=()) -> np.ndarray:
    """Indices of target points that a hyperplane separates from *all* source points.

    A target point can be strictly separated from the source sample exactly when it lies
    outside the convex hull of the source points; then one tilt can run off to infinity along
    the separating direction, pushing that point's posterior to one, and the unpenalised
    maximum of the empirical likelihood does not exist. A candidate that lies beyond every
    source point along one of ``directions`` or along its own direction from the source
    centroid is outside (that direction's hyperplane separates it: an exact certificate);
    each other candidate is checked by the feasibility linear programme ``z_j = sum_i mu_i
    z_i, mu >= 0, sum_i mu_i = 1``. (The certificates save the programmes, about 8 ms each at
    1000 source points, where they apply: the fitted tilts' slopes certified all 25
    candidates of a SAR fit that the ridge holds, issue 17.)

    Parameters
    ----------
    Zs, Zt : source and target features.
    candidates : indices of target points to check (default: all).
    directions : sequence of (p,) arrays, optional
        Directions to try as certificates first (e.g. the fitted tilts' slopes).
    """
    from scipy.optimize import linprog

    n = Zs.shape[0]
    cand = np.arange(len(Zt)) if candidates is None else np.asarray(candidates, dtype=int)
    if cand.size == 0:
        return cand
    Zc = Zt[cand]
    # certificates: a candidate projected beyond the largest projection of the source points
    # (by more than rounding) along a shared direction or its own one from the centroid
    own = Zc - Zs.mean(axis=0)
    beyond = np.empty(len(cand), dtype=bool)
    for i in range(0, len(cand), 256):  # (n x 256) projections at a time
        o = own[i:i + 256]
        beyond[i:i + 256] = np.einsum("kj,kj->k", Zc[i:i + 256], o) > _margin(Zs @ o.T)
    dirs = [np.asarray(d, dtype=float) for d in directions if np.any(d)]
    if dirs:
        D = np.column_stack(dirs)
        beyond |= np.any(Zc @ D > _margin(Zs @ D), axis=1)
    A_eq = np.vstack([Zs.T, np.ones((1, n))])
    out = []
    for j, certified in zip(cand, beyond, strict=True):
        if certified:
            out.append(j)
            continue
        res = linprog(np.zeros(n), A_eq=A_eq, b_eq=np.r_[Zt[j], 1.0], bounds=(0, None),
                      method="highs")
        if res.status == 2:  # infeasible: outside the hull
            out.append(j)
    return np.asarray(out, dtype=int)


def _margin(proj: np.ndarray) -> np.ndarray:
    """Per column of source projections: their maximum plus a rounding margin (a point on
    the hull's face is not certified; the linear programme decides it)."""
    return proj.max(axis=0) + 1e-9 * (1.0 + np.abs(proj).max(axis=0))


def ridge_binding(data, restricted: bool, v: np.ndarray) -> tuple[bool, np.ndarray | None]:
    """Whether the unpenalised log-EL has no maximum near the penalised fit ``v``, and where
    that maximum is (``v`` of the unpenalised maximum, None where the ridge binds).

    Newton's method on the *unpenalised* log-EL, started at the fit, either settles nearby
    (the ridge only nudges an interior maximum) or runs off (slopes above 50), or stops where
    the log-EL is flat along some direction (the curvature along a ridge vanishes like the
    gain). ``tol=0``: Newton does not stop on a small gain (on a ridge the gain per step
    shrinks like ``exp(-margin * slope)``), but on a Newton step (negative definite Hessian)
    that moves the iterate by less than ``1e-10`` relative: at an interior maximum the steps
    shrink quadratically to that within a few iterations, while on a ridge the slopes keep
    moving by steps of order one. The step need not be a full one: at an interior maximum
    the line search may halve a step whose gain is below the rounding of the log-EL (a full
    step was required before, and such fits ran all 60 iterations in place).
    """
    p = data.p
    fun, expand = free_fun(data, 0.0, restricted)
    sidx = np.r_[0, p + 1:2 * p + 2]

    def settled(x, f, step):
        return step.kind == "newton" and step.dx <= 1e-10 * (1.0 + float(np.max(np.abs(x))))

    with warnings.catch_warnings(), np.errstate(over="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        u, _, _, Hu, info = newton_maximize(fun, v[sidx] if restricted else v, maxiter=60,
                                            tol=0.0, callback=settled)
    _, b1u, _, b2u = _el.split(expand(u), p)
    free = float(max(np.abs(b1u).max(initial=0), np.abs(b2u).max(initial=0)))
    ev = np.linalg.eigvalsh(-Hu) if np.all(np.isfinite(Hu)) else np.array([0.0])
    flat = bool(ev.min() <= 1e-12 * max(ev.max(), 1.0))
    # flat at zero slopes is not a ridge: the tilts vanish (e.g. target = source) and the
    # maximum exists but is not unique in pi (reported by conf_int_pi), not separation
    binding = bool(free > 50 or (flat and free > 1e-8))
    # (where it ran out of iterations without settling, no maximum is known)
    return binding, None if binding or flat or not info.converged else expand(u)


def check_separation(data, restricted: bool, name: str, c: float, check, v: np.ndarray,
                     label_rule: str | None = None):
    """Detect a diverging tilt and, if so, the target points separated from the source.

    Unpenalised, a diverging tilt shows in the fit itself (standardised slopes above 10).
    Penalised, the ridge keeps the slopes moderate, so :func:`ridge_binding` checks directly
    (up to 50,000 rows). ``check=False`` skips everything (the bootstrap refits); ``None``
    runs the hull check only when a tilt diverges.

    Returns
    -------
    separated_points : numpy.ndarray or None
    ridge_binding : bool or None
    message : str or None
        The text of a ``SeparationWarning``, if one is due.
    pi_unpenalised : float or None
        pi at the unpenalised maximum that Newton's method reaches from the fit (where the
        ridge was checked and does not bind, and that maximum is not flat), labelled by
        ``label_rule`` (DETM) as an unpenalised fit would label it.
    """
    if check is False:
        return None, None, None, None
    p = data.p
    s1, b1, s2, b2 = _el.split(v, p)
    big = float(max(np.abs(b1).max(initial=0), np.abs(b2).max(initial=0)))
    binding = pi_free = None
    if c and data.N <= RIDGE_CHECK_MAX_N:
        # Dask rows: on the starts' in-memory sample when it holds every row (up to 60
        # Newton steps on a ridge would each cost passes), else by passes
        rows = (data.in_memory() or data) if getattr(data, "lazy", False) else data
        binding, v_free = ridge_binding(rows, restricted, v)
        if v_free is not None:
            pi_free = pi_of_v(rows, v_free)
            # labelled by the fit's rule, as an unpenalised fit labels it (DETM): near 0.5
            # the nearby maximum can lie on the other side of the rule's line
            if not restricted and label_rule is not None and \
                    swap_needed(rows, v_free, pi_free, label_rule):
                pi_free = 1.0 - pi_free
    diverging = big > 10 or bool(binding)
    if check is None and not diverging:
        return None, binding, None, pi_free
    if getattr(data, "lazy", False):  # Dask rows: the hull LPs need every source point
        if not diverging or (c and binding is False):
            return None, binding, None, pi_free
        return None, binding, (_message(name, c, big, np.array([], dtype=int), 0, binding)
                               + " (The convex-hull check is not run on Dask collections.)"), \
            pi_free
    Zs, Zt = data.Z[: data.n], data.Z[data.n:]
    logP0_t = -softplus(logaddexp(s1 + Zt @ b1, s2 + Zt @ b2))
    # candidates: the target points the fit pushes furthest from the source
    cand = np.argsort(logP0_t)[:N_CANDIDATES]
    sep = separated_target_points(Zs, Zt, cand, directions=(b1, b2))
    if not diverging or (c and binding is False):
        return sep, binding, None, pi_free  # large slopes, but the unpenalised maximum exists
    return sep, binding, _message(name, c, big, sep, len(cand), binding), pi_free


def _message(name, c, big, sep, n_cand, binding) -> str:
    if c:
        where = (f"; {sep.size} of the {n_cand} most extreme target points lie outside "
                 "the convex hull of the source points). " if sep.size else "). ")
        if binding:
            msg = (f"{name}: without the ridge the empirical likelihood has no maximum: it "
                   "rises towards a supremum it never attains as the tilt slopes grow "
                   f"(standardised slopes at the penalised fit reach {big:.3g}" + where)
        else:  # not checked (more than RIDGE_CHECK_MAX_N rows)
            msg = (f"{name}: standardised slopes at the penalised fit reach {big:.3g}: the "
                   "samples are nearly separated and the unpenalised maximum may not exist "
                   f"(not checked above {RIDGE_CHECK_MAX_N} rows" + where)
        return msg + (f"The estimates are those of the ridge-penalised EL (c = {c:.3g}) and "
                      "depend on it.")
    if sep.size:
        return (f"{name}: standardised slopes reach {big:.3g} and {sep.size} of the "
                f"{n_cand} most extreme target points lie outside the convex hull of the "
                "source points (a hyperplane separates each from all source points): a tilt "
                "is running off to infinity. The unpenalised maximum does not exist; refit "
                "with penalty='ridge'.")
    return (f"{name}: standardised slopes reach {big:.3g}: the samples are quasi-separated "
            "(e.g. a band of source points that two tilts cut out), so the unpenalised "
            "maximum may not exist; refit with penalty='ridge'.")
