"""The search for the global maximum of the DETM/SETM empirical likelihood.

Newton's method on the binary-regression form of the profile log-EL with pi free (route 1 of
:mod:`._el`) from deterministic starts: the SETM solution, a grid of pi and tilts along the
logistic slope, and tilts from the samples' moments at five shares, then restarts from random
moves of the best one's slopes (basin hopping, :data:`HOP_RADII`) and, for DETM, from its
slopes stretched (:data:`STRETCH_FACTORS`); the best is kept and every run is reported.
Above twice ``SUBSAMPLE_SIZE`` rows the starts run on a seeded subsample first and its best
maxima start the fit on the full data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from ...base.numeric import softplus
from ...base.optimize import _ascent_direction, newton_maximize
from ...base.results import ConvergenceInfo
from . import _el

__all__ = ["StartRun", "free_fun", "run_starts", "fit_fixed_pi", "solve_fixed_pi",
           "FixedPiSolution", "subsample", "theta_pi", "v_from", "SUBSAMPLE_SIZE", "MERGE_RADIUS"]

#: above twice this many rows, all starts run on a seeded subsample of this size first
SUBSAMPLE_SIZE = 20_000


@dataclass(frozen=True)
class StartRun:
    """One Newton run from one start: its label, the solution ``v = (s1, b1, s2, b2)`` of the
    binary-regression form, the maximised value ``f`` and how Newton finished."""

    label: str
    v: np.ndarray
    f: float
    info: ConvergenceInfo


def _setm_index(p: int) -> np.ndarray:
    return np.r_[0, p + 1:2 * p + 2]


def free_fun(data, c: float, restricted: bool):
    """``fun(v, order)`` of the penalised binary-regression form, and ``expand`` (SETM's free
    parameters ``(s1, s2, b2)`` -> the full ``v`` with ``b1 = 0``; identity for DETM)."""
    if getattr(data, "lazy", False):  # rows in Dask collections: block sums (._dask)
        return data.free_fun(c, restricted)
    p = data.p
    memo: dict = {}  # the line search's accepted point, reused by the next Hessian
    if not restricted:
        def fun(v, order):
            return _el.free_objective(v, data.Z, data.y, c, order, data.X1, memo=memo,
                                      X1F=data.X1F)
        return fun, lambda v: v
    full_idx = _setm_index(p)
    sub = np.ix_(full_idx, full_idx)

    def expand(u):
        v = np.zeros(2 * p + 2)
        v[full_idx] = u
        return v

    def fun_r(u, order):
        out = _el.free_objective(expand(u), data.Z, data.y, c, order, data.X1, memo=memo,
                                 fixed_tilt1=True, X1F=data.X1F)
        if order == 0:
            return out
        f, g, H = out
        return f, g[full_idx], H[sub]

    return fun_r, expand


def logistic_start(data) -> np.ndarray:
    """Slopes of a logistic regression of target vs source (a start only; a small ridge,
    0.5e-3 |b|^2, keeps it finite under separation)."""
    ridge = np.r_[0.0, np.full(data.p, 1e-3)]
    X1, y = data.X1, data.y

    def fun(v, order):
        eta = X1 @ v
        f = eta @ y - softplus(eta).sum() - 0.5 * ridge @ v**2
        if order == 0:
            return f
        pr = expit(eta)
        g = X1.T @ (y - pr) - ridge * v
        H = -(X1.T @ (X1 * (pr * (1 - pr))[:, None])) - np.diag(ridge)
        return f, g, H

    v, *_ = newton_maximize(fun, np.zeros(X1.shape[1]), maxiter=50, tol=1e-8)
    return v[1:]


def _log_mean_tilt(data, b: np.ndarray) -> float:
    """``log mean_source exp(z'b)``: minus the intercept that normalises the tilt ``b`` on the
    source rows."""
    return np.log(np.mean(np.exp(data.Z[: data.n] @ b)))


def _with_shares(data, pi0: float, b1: np.ndarray, b2: np.ndarray, lm=None) -> np.ndarray:
    """The start ``(s1, b1, s2, b2)`` whose intercepts give each component its share
    ``pi_t m / n`` of the odds; ``lm``: :func:`_log_mean_tilt` of ``b1`` and ``b2`` if known."""
    lm1, lm2 = lm if lm is not None else (_log_mean_tilt(data, b1), _log_mean_tilt(data, b2))
    s1 = np.log(data.m * pi0 / data.n) - lm1
    s2 = np.log(data.m * (1 - pi0) / data.n) - lm2
    return np.r_[s1, b1, s2, b2]


#: the grid's tilts ``(b1, b2) = (k1 bL, k2 bL)``: SETM's, and DETM's
GRID_CONFIGS = {True: ((0.0, 1.0),), False: ((0.0, 1.0), (0.3, 1.3), (-0.3, 1.0))}


def grid_starts(data, restricted: bool, bL: np.ndarray, configs=None) -> list:
    """Deterministic starting points ``(s1, b1, s2, b2)``: shares pi0 on a grid, for each
    ``(k1, k2)`` of ``configs`` (default :data:`GRID_CONFIGS`). Each config's tilts and their
    normalisers are computed once for the three shares (the same numbers as three times)."""
    configs = GRID_CONFIGS[restricted] if configs is None else configs
    tilt = {}
    for k1, k2 in configs:
        b1, b2 = k1 * bL, k2 * bL
        tilt[k1, k2] = b1, b2, (_log_mean_tilt(data, b1), _log_mean_tilt(data, b2))
    out = []
    for pi0 in (0.2, 0.5, 0.8):
        for k1, k2 in configs:
            b1, b2, lm = tilt[k1, k2]
            out.append((f"pi0={pi0:g}, b1={k1:g}*bL, b2={k2:g}*bL",
                        _with_shares(data, pi0, b1, b2, lm)))
    return out


#: shares of the moment starts (DETM: with both signs of the split; the mirror images
#: ``(1 - pi0, -sign)`` are the same starts with the components swapped)
MOMENT_SHARES = (0.2, 0.35, 0.5, 0.65, 0.8)

#: floor on the eigenvalues of the source's covariance (standardised scale) in the moment
#: starts: a feature (nearly) constant in the source would otherwise get an unbounded tilt
_MOMENT_VAR_FLOOR = 0.05


def moment_starts(data, restricted: bool) -> list:
    """Starts ``(label, v)`` from the moments of the two samples (:func:`moment_thetas`) at
    the shares :data:`MOMENT_SHARES` (DETM: mirror images left out). Why (issue 19): the
    grid's tilts are all multiples of one logistic slope, which points at neither component
    when pi is far from 1/2. At pi = 0.7, n = m = 1000 the fits from the grid missed the
    maximum that a polished independent start (the truth, random starts) reached in 25 of
    1,150 replicates; with these starts 14 of the 25 reach it
    (``studies/results/README_detm.md``, session 29)."""
    out = []
    for label, pi0, sign, theta in moment_thetas(data, restricted, MOMENT_SHARES):
        if not restricted and (pi0 > 0.5 or (pi0 == 0.5 and sign < 0)):
            continue  # DETM: the mirror image (1 - pi0, -sign) of a start already made
        out.append((label, v_from(data, False, theta, pi0)))
    return out


def moment_thetas(data, restricted: bool, shares) -> list:
    """``(label, pi0, sign, theta)`` of normal tilts matching the samples' moments at each
    share ``pi0`` (DETM: both signs of the split).

    A normal source ``N(mu0, S0)`` tilted by ``exp(a + b'z)`` is ``N(mu0 + S0 b, S0)``, so a
    mixture of two tilts has mean ``pi mu1 + (1 - pi) mu2`` and covariance
    ``S0 + pi (1 - pi) d d'`` with ``d = mu1 - mu2``: the target's mean gives the mixture's
    centre and the top eigenvector of the target's covariance, whitened by the source's,
    the direction and length of ``d``. For each share ``pi0`` this gives ``b_t =
    S0^{-1}(mu_t - mu0)``; SETM (``mu1 = mu0``) needs only the mean, ``b2 = S0^{-1}(mean_t -
    mu0) / (1 - pi0)``. The intercept is the normal tilt's, ``a = -|mu_w|^2 / 2 - b'mu0``
    (``mu_w`` whitened), not the empirical normaliser of the grid's starts: with tilts this
    large that rests on a few source points. (Either fixed 14 of the 25 misses of
    :func:`moment_starts`, not the same 14: which maximum Newton reaches from a start this
    far out is fragile.)"""
    Zs, Zt = data.Z[: data.n], data.Z[data.n:]
    mu0 = Zs.mean(axis=0)
    lam, E = np.linalg.eigh(np.atleast_2d(np.cov(Zs, rowvar=False)))
    W = E / np.sqrt(np.maximum(lam, _MOMENT_VAR_FLOOR))   # whitening: w = W'(z - mu0)
    centre = W.T @ (Zt.mean(axis=0) - mu0)

    def theta(means):
        out = []
        for mu in means:  # None: the source itself
            b = np.zeros(data.p) if mu is None else W @ mu
            out += [0.0 if mu is None else -0.5 * mu @ mu - b @ mu0, b]
        return np.r_[out[0], out[1], out[2], out[3]]

    if restricted:
        return [(f"moments, pi0={pi0:g}", pi0, 1, theta((None, centre / (1 - pi0))))
                for pi0 in shares]
    Dt = (Zt - Zt.mean(axis=0)) @ W
    ev, U = np.linalg.eigh(np.atleast_2d(Dt.T @ Dt / (data.m - 1)))
    excess, u = max(ev[-1] - 1.0, 1e-3), U[:, -1]
    out = []
    for pi0 in shares:
        for sign in (1, -1):
            d = sign * np.sqrt(excess / (pi0 * (1 - pi0))) * u
            out.append((f"moments, pi0={pi0:g}, split {'+' if sign > 0 else '-'}", pi0, sign,
                        theta((centre + (1 - pi0) * d, centre - pi0 * d))))
    return out


def pi_of_v(data, v) -> float:
    """The mixture proportion of a binary-regression solution (before label resolution)."""
    if getattr(data, "lazy", False):
        return data.pi_of_v(v)
    s1, b1, s2, b2 = _el.split(v, data.p)
    Zt = data.Z[data.n:]
    return float(np.mean(expit((s1 + Zt @ b1) - (s2 + Zt @ b2))))


def theta_pi(data, restricted: bool, v):
    """``(s1, b1, s2, b2)`` of the binary-regression form -> ``(theta, pi)`` (route 1)."""
    s1, b1, s2, b2 = _el.split(v, data.p)
    pi = pi_of_v(data, v)
    # alpha_t = s_t - log(m pi_t / n); a component of weight 0 gets alpha_t = -inf
    a1 = 0.0 if restricted else (s1 - np.log(data.m * pi / data.n) if pi > 0 else -np.inf)
    a2 = s2 - np.log(data.m * (1 - pi) / data.n) if pi < 1 else -np.inf
    return np.r_[a1, b1, a2, b2], pi


def v_from(data, restricted: bool, theta, pi):
    """Inverse of :func:`theta_pi`."""
    a1, b1, a2, b2 = _el.split(theta, data.p)
    s1 = np.log(data.m * pi / data.n) + (0.0 if restricted else a1)
    s2 = a2 + np.log(data.m * (1 - pi) / data.n)
    return np.r_[s1, b1, s2, b2]


#: A Newton run at fixed pi that comes near a maximum ``x_k`` already found at the same pi,
#: ``q = (x - x_k)' (-H_k) (x - x_k)``, is stopped there and reported as that maximum when
#: ``q < MERGE_RADIUS[0]`` (the quadratic model predicts ``x_k`` within 0.005 log-EL units:
#: Newton would reach it in one or two more steps), or when ``q < MERGE_RADIUS[1]`` and the
#: log-EL at ``x`` and at the midpoint of ``x`` and ``x_k`` agrees with the concave quadratic
#: model at ``x_k`` to a quarter of its predicted drop (the log-EL rises along the segment to
#: ``x_k`` as that quadratic does: no valley, no second maximum between them). A Hessian
#: at ``x_k`` that is not clearly negative definite is never used.
MERGE_RADIUS = (1e-2, 1.0)


@dataclass(frozen=True)
class FixedPiSolution:
    """A maximum of the profile log-EL at fixed pi: its value, ``theta``, how Newton finished,
    the Hessian in the free parameters (for merging later runs into it), the slope of the
    log-EL in pi there (the profile's derivative, by the envelope theorem) and whether this run
    was merged into an earlier solution."""

    f: float
    theta: np.ndarray
    info: ConvergenceInfo
    H: np.ndarray | None = None
    dpi: float = float("nan")
    merged: bool = False


class _Merged(Exception):
    def __init__(self, k):
        self.k = k


def _merge_targets(known):
    """``(item, x_k, -H_k)`` for the known maxima ``(item, x_k, H_k)`` whose Hessian is
    clearly negative definite (the others are never merged into)."""
    out = []
    for item, x_k, H in known:
        if H is None or not np.all(np.isfinite(H)):
            continue
        ev = np.linalg.eigvalsh(-H)
        if ev[0] > 1e-8 * max(ev[-1], 1.0):
            out.append((item, x_k, -H))
    return out


def _merge_target(fun, u, targets):
    """Index of the known maximum (``(f_k, x_k, -H_k)``) that ``u`` merges into by the rule of
    :data:`MERGE_RADIUS`, or None; ``fun(x, 0)`` gives the objective."""
    if not np.all(np.isfinite(u)):
        return None  # (a run gone off to infinity merges into nothing; its d' A d is NaN)
    for k, (f_k, u_k, A) in enumerate(targets):
        d = u - u_k
        q = d @ A @ d
        if q < MERGE_RADIUS[0]:
            return k
        if q < MERGE_RADIUS[1]:
            # the objective along the segment to x_k against the quadratic model there
            for t, drop in ((1.0, q / 2), (0.5, q / 8)):
                f_t = fun(u_k + t * d, 0)
                if not (np.isfinite(f_t) and abs(f_t - (f_k - drop)) <= 0.25 * drop):
                    break
            else:
                return k
    return None


#: SETM's maximum at pi = 0 (``s1 -> -inf``, the binary-regression form's first component
#: emptied) is a limit: there ``f = f_0(w) + C(w) e^{s1} + O(e^{2 s1})`` with ``C < 0``, and
#: Newton creeps towards it by one unit of ``s1`` per iteration (about 30 iterations to the
#: tolerance). A later SETM run merges into such a maximum ``(s1_k, w_k)`` (``w`` the other
#: parameters; ``A_w`` minus their Hessian block there, clearly negative definite) once its
#: predicted remaining rise ``drop = -g_s1 + q / 2``, ``q = (w - w_k)' A_w (w - w_k)`` (the
#: exponential term's ``-C e^{s1} = -g_s1`` to go, and the quadratic model in ``w``), is
#: below ``BOUNDARY_DROP`` (the 0.005 log-EL units of the quadratic rule's ``q <
#: MERGE_RADIUS[0]``) and its log-EL is ``f_k - drop`` to a quarter of ``drop`` -- the level
#: of the limit is what the model of the tail predicts (no other maximum between). Measured
#: on the bench's SAR data (n = m = 1000): the runs merge 17-19 iterations before they would
#: reach the tolerance, their log-EL then ``f_k - drop`` to 1%.
BOUNDARY_DROP = MERGE_RADIUS[0] / 2

#: The jump (session 57): a SETM run whose remaining rise is above :data:`BOUNDARY_DROP` only
#: in ``s1`` -- the other parameters already within it of the boundary maximum's (``q / 2 <
#: BOUNDARY_DROP``) -- and whose Newton step there is a step of the tail, ``s1`` by ``-1`` to
#: ``TAIL_STEP`` and the others by less than ``BOUNDARY_DROP`` in the same metric, would creep
#: on towards that maximum one unit of ``s1`` per iteration; it merges at once if the log-EL at
#: the maximum's ``s1`` with its own other parameters is what the tail model predicts: the rise
#: ``-g_s1 (1 - e^{s1_k - s1})`` from the run's point to a quarter, and the maximum's level less
#: its own remaining drop ``-g_s1 e^{s1_k - s1} + q / 2`` (below ``BOUNDARY_DROP``) to a
#: quarter (one evaluation of the value). The Newton step's condition keeps out a run whose
#: ``s1`` is still coupled to the others: a first version that asked only ``H_s1s1 = g_s1`` to
#: 20% merged into the boundary a start that goes on to a higher maximum at pi > 0. With it, on
#: 12 replicates (SAR pi = 0.3, 0.7, SCAR pi = 0.5, n = m = 1000) every one of the 23,652 runs
#: of the default fits and of their bootstrap SCAR tests reports what it reported without the
#: jump, and every bootstrap statistic is the same bit for bit; the SETM runs of the tests on
#: SAR data take 9% fewer Newton iterations (``studies/detm_boundary_jump.py``; session 57).
TAIL_STEP = 0.1


def _boundary_targets(known):
    """``(item, x_k, A_w)`` for the known maxima ``(item, x_k, H_k)`` at the lower boundary of
    coordinate 0 (:data:`BOUNDARY_DROP`): ``x_k[0] < 0``, the curvature there negligible and
    ``A_w = -H_k[1:, 1:]`` clearly negative definite."""
    out = []
    for item, x_k, H in known:
        if H is None or not np.all(np.isfinite(H)) or H.shape[0] < 2 or not x_k[0] < 0:
            continue
        A = -H[1:, 1:]
        ev = np.linalg.eigvalsh(A)
        if ev[0] > 1e-8 * max(ev[-1], 1.0) and abs(H[0, 0]) <= 1e-8 * max(ev[-1], 1.0):
            out.append((item, x_k, A))
    return out


def _boundary_target(u, f, g, targets, fun=None, H=None):
    """Index of the boundary maximum (``(f_k, x_k, A_w)``) that the point ``u`` (log-EL ``f``,
    gradient ``g``) merges into by the rule of :data:`BOUNDARY_DROP`, or None; with ``fun``
    (``fun(x, 0)`` the objective) and the Hessian ``H`` at ``u`` also by the jump of
    :data:`TAIL_STEP`."""
    if not g[0] < 0:
        return None
    step, stepped = None, False  # Newton's step at u, once (None: H not negative definite)
    for k, (f_k, u_k, A) in enumerate(targets):
        d = u[1:] - u_k[1:]
        half_q = (d @ A @ d) / 2
        drop = -g[0] + half_q
        if drop < BOUNDARY_DROP and abs(f - (f_k - drop)) <= 0.25 * drop:
            return k
        if fun is None or not u_k[0] < u[0]:
            continue
        shrink = np.exp(u_k[0] - u[0])
        rise = -g[0] * (1.0 - shrink)     # the tail's rise from s1 to s1_k
        drop_k = -g[0] * shrink + half_q  # and what remains at (s1_k, w)
        if not drop_k < BOUNDARY_DROP:
            continue
        if not stepped:
            (step, _), stepped = _ascent_direction(g, H, modify=False), True
        if step is None or abs(step[0] + 1.0) > TAIL_STEP or \
                step[1:] @ A @ step[1:] / 2 >= BOUNDARY_DROP:
            continue
        u_j = np.array(u, dtype=float)
        u_j[0] = u_k[0]
        f_j = fun(u_j, 0)
        if np.isfinite(f_j) and abs(f_j - (f + rise)) <= 0.25 * rise and \
                abs(f_j - (f_k - drop_k)) <= 0.25 * drop_k:
            return k
    return None


def solve_fixed_pi(data, restricted: bool, pi, theta0, c, maxiter, tol, known=()):
    """Maximise the penalised profile log-EL (12) over theta with pi fixed.

    Newton's method on ``l_N(theta)`` with the multipliers of (11) solved at every point;
    ``theta0`` is ``(a1, b1, a2, b2)`` on the standardised scale (SETM keeps a1 = b1 = 0).
    ``known``: converged :class:`FixedPiSolution` at this same pi; a run that reaches one's
    region of quadratic convergence (:data:`MERGE_RADIUS`) returns it (``merged=True``).
    ``H`` of the result is the Hessian in the free parameters (SETM: ``alpha2, beta2``) at the
    last Newton iterate (before the final step to rounding error, ``polish="value"`` of
    :func:`~puinfer.base.optimize.newton_maximize`).
    """
    p = data.p
    idx = np.r_[p + 1:2 * p + 2] if restricted else np.arange(2 * p + 2)
    sub = np.ix_(idx, idx)
    targets = _merge_targets([(s, s.theta[idx], s.H) for s in known if s.info.converged])

    def expand(u):
        th = np.zeros(2 * p + 2)
        th[idx] = u
        return th

    def check_merge(u):
        k = _merge_target(fun, u, [(s.f, u_k, A) for s, u_k, A in targets])
        if k is not None:
            raise _Merged(k)

    lam_last = [None]  # warm start for the multipliers: the last Newton iterate's
    memo: dict = {}  # the line search's accepted point, reused by the next Hessian
    lazy = getattr(data, "lazy", False)  # rows in Dask collections: block sums (._dask)

    def fun(u, order):
        if order == 2:
            check_merge(u)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            out = (data.profile_log_el(expand(u), pi, c, lam0=lam_last[0], order=order)
                   if lazy else
                   _el.profile_log_el(expand(u), pi, data.Z, data.y, c, lam0=lam_last[0],
                                      order=order, X1=data.X1, memo=memo,
                                      fixed_tilt1=restricted, X1F=data.X1F))
        if order == 0:
            return out
        f, g, H, extra = out
        if g is None:
            return -np.inf, None, None
        lam_last[0] = extra["lam"]
        return f, g[idx], H[sub]

    method = f"Newton (profile, pi={pi:.6g})"
    try:
        # H serves later runs as an approximation (merges, the path's tangent): the last
        # full Newton step is judged by the log-EL alone (one evaluation of the derivatives
        # fewer per point of the profile; theta and f as with the full polish)
        u, f, g, H, info = newton_maximize(fun, theta0[idx], maxiter=maxiter, tol=tol,
                                           method=method, polish="value")
    except _Merged as m:
        memo.clear()  # fun and check_merge form a cycle: free the rows now, not at gc
        s = targets[m.k][0]
        return FixedPiSolution(s.f, s.theta, s.info, s.H, s.dpi, merged=True)
    except ValueError:  # the start is infeasible at this pi (a diverging tilt)
        memo.clear()
        return FixedPiSolution(-np.inf, theta0,
                               ConvergenceInfo(False, 0, method, "infeasible start"))
    memo.clear()
    theta = expand(u)
    dpi = data.pi_slope(theta, pi) if lazy else _el.pi_slope(theta, pi, data.Z[data.n:])
    return FixedPiSolution(f, theta, info, H, dpi)


def fit_fixed_pi(data, restricted: bool, pi, theta0, c, maxiter, tol):
    """:func:`solve_fixed_pi` from one start: the maximised value, theta and the
    ConvergenceInfo."""
    s = solve_fixed_pi(data, restricted, pi, theta0, c, maxiter, tol)
    return s.f, s.theta, s.info


def subsample(data):
    """The seeded subsample of about ``SUBSAMPLE_SIZE`` rows (the same share of each sample;
    same centring and scaling, so that solutions carry over to the full data)."""
    if getattr(data, "lazy", False):  # Dask collections: the sample drawn in their first pass
        return data.subsample()
    k = SUBSAMPLE_SIZE / data.N
    rng = np.random.default_rng(0)
    i_s = np.sort(rng.choice(data.n, size=max(int(round(data.n * k)), 50), replace=False))
    i_t = data.n + np.sort(rng.choice(data.m, size=max(int(round(data.m * k)), 50),
                                      replace=False))
    return data.subset(i_s, i_t)


def subsample_starts(data, restricted: bool, c, maxiter, tol, seed=0) -> dict:
    """For large samples, run every start on a fixed subsample and return the best
    solutions as starts for the full data (deterministic: a seeded subsample; ``seed`` is
    that of the hops on it)."""
    sub = subsample(data)
    c_sub = c * sub.N / data.N  # same penalty relative to the log-EL
    setm_runs = run_starts(sub, True, c_sub, maxiter, tol, seed=seed)
    setm_v = max(setm_runs, key=lambda r: r.f).v  # full (s1, b1 = 0, s2, b2)
    if restricted:
        return dict(setm_start=setm_v)
    runs = sorted(run_starts(sub, False, c_sub, maxiter, tol, seed=seed), key=lambda r: -r.f)
    # the best two distinct subsample maxima (by pi; a mirror image, the same maximum with
    # the components swapped, is not distinct) start the full fit
    extra, seen = [], []
    for r in runs:
        pi_r = pi_of_v(sub, r.v)
        if all(abs(pi_r - q) > 1e-3 for q in seen):
            extra.append((f"subsample maximum ({r.label})", r.v))
            seen += [pi_r, 1 - pi_r]
        if len(extra) == 2:
            break
    return dict(setm_start=setm_v, extra_starts=extra)


def _newton_runs(fun, starts, maxiter, tol, method, pick=None, expand=None,
                 known=None, boundary=False) -> list:
    """One Newton run per start; a run that reaches the region of quadratic convergence of a
    maximum an earlier run found (:data:`MERGE_RADIUS`) stops there and reports it; with
    ``boundary`` (SETM: coordinate 0 is ``s1``) also one that is near enough to an earlier
    maximum at pi = 0 (:data:`BOUNDARY_DROP`). ``known``: a list of the maxima found so far
    (``((run, label), u, H)``), extended here, to carry them over to a later call."""
    out = []
    known = [] if known is None else known
    # each known maximum's merge and boundary targets (or None), computed once per call
    # rather than once per start (the eigenvalues of its Hessian; ``known`` only grows)
    cache: dict = {"merge": [], "edge": []}

    def targets_of(kind, select):
        done = cache[kind]
        for entry in known[len(done):]:
            t = select([entry])
            done.append(t[0] if t else None)
        return [t for t in done if t is not None]

    for label, v0 in starts:
        targets = targets_of("merge", _merge_targets)
        edge = targets_of("edge", _boundary_targets) if boundary else []
        count = [0]
        t_k = [(r.f, u_k, A) for (r, _), u_k, A in targets]  # (f_k, x_k, A) of each
        e_k = [(r.f, u_k, A) for (r, _), u_k, A in edge]

        def fun_m(u, order, count=count, t_k=t_k, e_k=e_k):
            if order != 2:
                return fun(u, order)
            k = _merge_target(fun, u, t_k)
            if k is not None:
                raise _Merged(k)
            count[0] += 1
            out = fun(u, order)
            if e_k:
                k = _boundary_target(u, out[0], out[1], e_k, fun, out[2])
                if k is not None:
                    raise _Merged(len(t_k) + k)
            return out

        try:
            u, f, _, H, info = newton_maximize(fun_m, v0 if pick is None else v0[pick],
                                               maxiter=maxiter, tol=tol, method=method)
        except _Merged as m:
            (r, lab), _, _ = [*targets, *edge][m.k]
            info = ConvergenceInfo(True, max(count[0] - 1, 0), method,
                                   f"reached the maximum of start {lab!r} (stopped there)")
            out.append(StartRun(label, r.v, r.f, info))
            continue
        run = StartRun(label, u if expand is None else expand(u), f, info)
        out.append(run)
        if info.converged and np.isfinite(f):
            known.append(((run, label), u, H))
    return out


#: Basin hopping (issue 19, sessions 31-32): after the deterministic starts, the search restarts
#: from the best maximum with its slopes moved by ``N(0, (r^2 / p) I)`` for each radius ``r``
#: (standardised scale), :data:`HOPS_PER_RADIUS` times each, and again from any higher maximum
#: found (at most :data:`HOP_ROUNDS` rounds). On the 7 replicates at n = m = 1000, pi = 0.7
#: where a polished independent start (the truth, random starts) beat the search of session
#: 29, such moves from the fit reached the higher maximum in 6 (``studies/detm_hops.py``).
#: Session 31 shipped 8 moves per radius: on 1,200 replicates of that study the fit was then
#: higher in 41 and lower in 4, and 1 miss was left in 1,800 fresh ones. 16 moves per radius
#: (64 per round; a declared study on the same 1,800 replicates, session 32): misses 1 -> 0,
#: fit higher in 29 and lower in 11 than with 8, fit CPU 1.26-1.36x
#: (``studies/results/detm_search_misses_s32.md``, ``studies/results/README_detm.md``).
HOP_RADII = (2.0, 3.0, 4.0, 6.0)
HOPS_PER_RADIUS = 16
HOP_ROUNDS = 3


def _hop_starts(v, p: int, restricted: bool, rng) -> list:
    """``(label, v')``: the slopes of ``v = (s1, b1, s2, b2)`` moved at random (SETM: ``b2``
    only), :data:`HOPS_PER_RADIUS` per radius of :data:`HOP_RADII`."""
    slopes = np.r_[p + 2:2 * p + 2] if restricted else np.r_[1:p + 1, p + 2:2 * p + 2]
    out = []
    for r in HOP_RADII:
        for k in range(HOPS_PER_RADIUS):
            w = np.array(v, dtype=float)
            w[slopes] += (r / np.sqrt(p)) * rng.standard_normal(slopes.size)
            out.append((f"hop r={r:g} #{k + 1}", w))
    return out


def _hop(fun, runs, known, maxiter, tol, method, p, restricted, pick=None, expand=None,
         prefix="", seed=0) -> list:
    """Basin hopping from the best of ``runs`` (see :data:`HOP_RADII`); the new runs, which
    merge into the maxima of ``known`` where they reach one. Deterministic: the moves are drawn
    with ``seed`` (the fit's ``seed``)."""
    rng = np.random.default_rng(seed)
    best = max(runs, key=lambda r: r.f)
    out = []
    for _ in range(HOP_ROUNDS if HOP_RADII and HOPS_PER_RADIUS else 0):
        if not np.isfinite(best.f):
            break
        starts = [(prefix + lab, w) for lab, w in _hop_starts(best.v, p, restricted, rng)]
        new = _untie(_newton_runs(fun, starts, maxiter, tol, method, pick=pick,
                                  expand=expand, known=known, boundary=restricted),
                     best, method)
        out += new
        top = max(new, key=lambda r: r.f)
        if not top.f > best.f + _tie(best):
            break
        best = top
    return out


def _tie(best) -> float:
    """How far above ``best`` a maximum must lie to count as higher (rounding)."""
    return 1e-9 * max(1.0, abs(best.f))


def _untie(new, best, method) -> list:
    """``new`` with every run that only ties ``best`` (to rounding: e.g. where pi is not
    identified and the maximum is a flat ridge) reporting ``best``, so that it cannot
    displace it."""
    tie = _tie(best)
    return [StartRun(r.label, best.v, best.f,
                     ConvergenceInfo(r.info.converged, r.info.iterations, method,
                                     f"reached the level of {best.label!r} (a tie)"))
            if best.f < r.f <= best.f + tie else r for r in new]


#: Stretch moves (issue 19, session 39): DETM's maxima that the hops miss differ from the fit
#: mostly in how far one component's slopes reach -- a longer ``b2`` moves that component's
#: EL mass off the source rows, a nearly flat direction of the log-EL (session 38) that
#: isotropic moves rarely follow. From the best maximum the search restarts with each
#: component's slopes, and their difference from the other's, scaled by these factors (the
#: shares kept); from a higher maximum it hops and stretches again, at most
#: :data:`STRETCH_ROUNDS` times. On the 100 replicates of the SAR design at n = m = 1000,
#: pi = 0.7 where five searches had been compared, these moves raised 8 fits (2 above the best
#: of the five) at about 0.1 s (``studies/results/README_detm.md``, session 39).
STRETCH_FACTORS = (1.5, 2.0, 3.0)
STRETCH_ROUNDS = 3
#: how the stretch moves' runs are labelled (the profile probe leaves their lower maxima out)
STRETCH_LABEL = "stretch "


def _stretch_starts(data, v) -> list:
    """``(label, v')``: the slopes of ``v = (s1, b1, s2, b2)`` stretched by
    :data:`STRETCH_FACTORS` -- ``b_t`` itself and ``b_t - b_u`` (the other component's held) --
    with the intercepts that keep each component's share of the odds."""
    _, b1, _, b2 = _el.split(v, data.p)
    pi0 = min(max(pi_of_v(data, v), 1e-3), 1 - 1e-3)
    out = []
    for k in STRETCH_FACTORS:
        for label, c1, c2 in ((f"b2 x{k:g}", b1, k * b2), (f"b1 x{k:g}", k * b1, b2),
                              (f"b2 - b1 x{k:g}", b1, b1 + k * (b2 - b1)),
                              (f"b1 - b2 x{k:g}", b2 + k * (b1 - b2), b2)):
            with np.errstate(over="ignore", divide="ignore"):
                w = _with_shares(data, pi0, c1, c2)
            if np.all(np.isfinite(w)):
                out.append((STRETCH_LABEL + label, w))
    return out


def _hop_and_stretch(data, fun, runs, known, maxiter, tol, method, seed) -> list:
    """DETM's full search after its deterministic starts: basin hopping (:func:`_hop`) from
    the best, then stretch moves (:data:`STRETCH_FACTORS`) from the best; from a higher
    maximum, hops (drawn with ``(seed, round)``) and stretches again."""
    out = _hop(fun, runs, known, maxiter, tol, method, data.p, False, seed=seed)
    for k in range(STRETCH_ROUNDS):
        best = max([*runs, *out], key=lambda r: r.f)
        if not np.isfinite(best.f):
            break
        new = _untie(_newton_runs(fun, _stretch_starts(data, best.v), maxiter, tol, method,
                                  known=known), best, method)
        out += new
        if not new or not max(r.f for r in new) > best.f + _tie(best):
            break
        out += _hop(fun, [*runs, *out], known, maxiter, tol, method, data.p, False,
                    seed=[seed, k + 1])
    return out


def run_starts(data, restricted: bool, c, maxiter, tol, extra_starts=(), setm_start=None,
               grid=False, setm_runs=None, seed=0) -> list:
    """Fit from every start and return the list of :class:`StartRun`.

    Without ``setm_start`` (the full search): the grid and moment starts, then the hops from
    the best (:func:`_hop`; SETM's only where its runs are not given). With ``setm_start``
    (large samples, bootstrap refits) SETM starts only there and DETM only from the SETM
    solution and ``extra_starts``, without hops; ``grid=True`` (the bootstrap) adds the SETM
    grid and a reduced DETM grid of three starts. ``setm_runs``: the SETM runs of these same
    data and options, already computed, which DETM then does not repeat. ``seed``: of the
    hops' random moves.
    """
    lazy = getattr(data, "lazy", False)
    if setm_start is None and lazy and data.local:
        # rows in Dask collections, every one of them held in memory (small data): the
        # in-memory search itself, whose runs make the starts table (session 73's audit:
        # polished from the sample's best only, a Dask fit reported "1 of 1" starts at the
        # best and lost the StartsDisagreeWarning that the same rows in memory give)
        return run_starts(subsample(data), restricted, c, maxiter, tol, extra_starts,
                          setm_runs=setm_runs, seed=seed)
    # (rows in Dask collections: always, on the partition route)
    if setm_start is None and (data.N > 2 * SUBSAMPLE_SIZE or lazy):
        opts = subsample_starts(data, restricted, c, maxiter, tol, seed=seed)
        # SETM's subsample gives only its start; DETM's adds its best subsample maxima
        opts["extra_starts"] = [*extra_starts, *opts.get("extra_starts", [])]
        return run_starts(data, restricted, c, maxiter, tol, setm_runs=setm_runs, **opts)
    # SETM first: it is DETM's first start (b1 = 0)
    bL = data.logistic_slopes if setm_start is None or grid else None
    if setm_runs is not None:
        starts_r = []
    elif setm_start is None:
        starts_r = grid_starts(data, True, bL) + moment_starts(data, True)
    else:
        starts_r = [("given", setm_start)] + (grid_starts(data, True, bL) if grid else [])
    fun_r, expand_r = free_fun(data, c, True)
    known_r: list = []
    setm_opts = dict(pick=_setm_index(data.p), expand=expand_r)
    new_r = _newton_runs(fun_r, [(f"SETM {lab}", v) for lab, v in starts_r], maxiter, tol,
                         "Newton (SETM, pi free)", known=known_r, boundary=True,
                         **setm_opts)
    if setm_start is None and setm_runs is None:  # the full search: hop from its best
        new_r += _hop(fun_r, new_r, known_r, maxiter, tol, "Newton (SETM, pi free)", data.p,
                      True, prefix="SETM ", seed=seed, **setm_opts)
    setm_runs = list(setm_runs or []) + new_r
    if restricted:
        return setm_runs
    best_setm = max(setm_runs, key=lambda r: r.f)
    if setm_start is None:
        starts = grid_starts(data, False, bL) + moment_starts(data, False)
    elif grid:
        starts = grid_starts(data, False, bL, configs=((0.3, 1.3),))  # the reduced grid
    else:
        starts = []
    starts = [("SETM solution", best_setm.v)] + starts + list(extra_starts)
    fun, _ = free_fun(data, c, False)
    known: list = []
    runs = _newton_runs(fun, starts, maxiter, tol, "Newton (DETM, pi free)", known=known)
    if setm_start is None:  # the full search: hop and stretch from its best
        runs += _hop_and_stretch(data, fun, runs, known, maxiter, tol, "Newton (DETM, pi free)",
                                 seed)
    return runs
