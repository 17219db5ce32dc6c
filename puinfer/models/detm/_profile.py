"""The profile of pi: constrained refits at fixed pi for the interval and the probe.

``R*_N(pi) = 2{l_N(theta-hat) - l_N(theta-hat_pi)}`` (Liu et al., Theorem 3b); each point
refits theta with pi fixed by Newton's method on the exact profile log-EL (:mod:`._el`). The
profile at fixed pi can have several local maxima, so each point starts from the fit, from the
solutions of a coarse skeleton on either side, and from the fit's other local maxima.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ...exceptions import ConvergenceWarning
from ...inference.profile import Profile, ProfileError
from . import _el
from ._starts import fit_fixed_pi, theta_pi, v_from

__all__ = ["PiProfiler", "PI_EPS", "OUTSIDE_POINTS"]

#: pi is profiled on [eps, 1 - eps]; an interval reaching eps is reported as one-sided at 0.
PI_EPS = 1e-6

#: points per side beyond the interval limits where ``conf_int_pi`` (and the fit's probe)
#: looks for a second component of the confidence set
OUTSIDE_POINTS = 3


class PiProfiler:
    """Profile log-EL of pi for one fit (picklable: no closures).

    Parameters
    ----------
    data : TiltData
    fit : TiltFit
        The fit record (its ``theta``, ``pi``, ``llf_penalized``, runs and options).
    se_pi : float
        A first bracketing step for the interval limits.
    quick : bool
        ``True`` (the fit's probe): each point warm-starts from its nearest solved neighbour
        only. ``False``: a pure function of pi, from the fit, the skeleton on each side and
        the fit's other local maxima; the best labelled solution is kept.
    """

    def __init__(self, data, fit, se_pi: float, quick: bool = False):
        self.data = data
        self.fit = fit
        self.se_pi = se_pi
        self.quick = quick
        self.solved = {fit.pi: fit.theta}
        self.trace: list = []       # (pi, value, converged) of every full-profile point
        self.warnings: list = []    # (category name, message)

    def refit(self, pi: float, theta0: np.ndarray):
        f = self.fit
        return fit_fixed_pi(self.data, f.restricted, pi, theta0, f.penalty_strength,
                            f.maxiter, f.tol)

    def labelled(self, theta, pi) -> bool:
        """Whether ``(theta, pi)`` satisfies the label rule. DETM's profile of pi is taken
        over the labelled parameter space: without it the profile has a mirror branch at
        1 - pi (the same fit with the components swapped). The pi rules restrict the profiled
        range instead; the KL rule needs KL(p_s||component 1) <= KL(p_s||component 2), with
        the EL weights at (theta, pi) as the estimate of p_s."""
        if self.fit.restricted or self.fit.label_rule != "kl":
            return True
        d = self.data
        a1, b1, a2, b2 = _el.split(theta, d.p)
        eta1, eta2 = a1 + d.Z @ b1, a2 + d.Z @ b2
        with np.errstate(over="ignore", invalid="ignore"):
            lam, D, ok = _el.solve_lambda(eta1, eta2, (d.m * pi / d.N, d.m * (1 - pi) / d.N))
        if not ok:
            return True  # cannot tell: do not exclude
        w = 1.0 / (d.N * D)
        return bool(-(w @ eta1) <= -(w @ eta2))

    @cached_property
    def skeleton(self) -> dict:
        """Profile solutions on a grid of pi (step 0.1 within the profiled range), each the
        best of two chains of warm starts: outward from pi-hat and inward from the ends of the
        range. The two directions reach branches of the profile that a single sweep misses."""
        rule, pi_hat, theta_hat = self.fit.label_rule, self.fit.pi, self.fit.theta
        lo = 0.5 if rule == "pi>0.5" else 0.05
        hi = 0.5 if rule == "pi<0.5" else 0.95
        grid = [g for g in np.round(np.arange(lo, hi + 1e-9, 0.1), 10) if abs(g - pi_hat) > 1e-9]
        best: dict = {}

        def run(g, th0):
            f, th, info = self.refit(g, th0)
            if info.converged and np.isfinite(f) and self.labelled(th, g) and \
                    (g not in best or f > best[g][0]):
                best[g] = (f, th)
            return th if info.converged else th0

        for side in ([g for g in grid if g > pi_hat], [g for g in grid if g < pi_hat][::-1]):
            for chain in (side, side[::-1]):  # outward from pi-hat, inward from the end
                th = theta_hat
                for g in chain:
                    th = run(g, th)
        return {g: th for g, (_, th) in best.items()}

    @cached_property
    def branch_starts(self) -> list:
        """Other local maxima the starts found (distinct pi), in both labellings: the profile
        at fixed pi can follow another branch, reachable only from them."""
        f = self.fit
        obj = f.starts["objective"].to_numpy()
        p = self.data.p
        out, seen = [], [f.pi, 1 - f.pi]
        for i in obj.argsort()[::-1]:
            if obj.max() - obj[i] <= 1e-7 * max(1.0, abs(obj.max())):
                continue  # the fit itself (possibly in the other labelling)
            v = f.runs[i].v
            theta, pi = theta_pi(self.data, f.restricted, v)
            if not np.all(np.isfinite(theta)) or min(abs(pi - q) for q in seen) < 1e-3:
                continue
            seen += [pi, 1 - pi]
            out.append(theta)
            if not f.restricted:
                out.append(theta_pi(self.data, False, np.r_[v[p + 1:], v[: p + 1]])[0])
            if len(out) >= 5:
                break
        return out

    def _starts_at(self, pi) -> list:
        if self.quick:
            return [self.solved[min(self.solved, key=lambda q: abs(q - pi))]]
        skel = self.skeleton
        below = [g for g in skel if g <= pi]
        above = [g for g in skel if g >= pi]
        thetas = [self.fit.theta]
        if below:
            thetas.append(skel[max(below)])
        if above:
            thetas.append(skel[min(above)])
        return thetas + self.branch_starts

    def __call__(self, pi: float) -> float:
        """The profile log-EL at ``pi``: the best converged labelled refit (NaN if none)."""
        best = best_any = None
        f_max = self.fit.llf_penalized
        for th0 in self._starts_at(pi):
            f, th, info = self.refit(pi, th0)
            # A point at the fit's log-EL is a maximum at this pi (the profile cannot exceed
            # the overall maximum) even where Newton stops: with target = source the maximum
            # at every pi is theta = 0, where both tilts are identically 1, the constraints
            # (10) degenerate and the derivatives are undefined (pi is not identified).
            at_max = np.isfinite(f) and abs(f - f_max) <= 1e-9 * max(1.0, abs(f_max))
            if not (info.converged or at_max):
                continue  # unconverged solutions are neither answers nor later starts
            if best_any is None or f > best_any[0]:
                best_any = (f, th)
            if (best is None or f > best[0]) and self.labelled(th, pi):
                best = (f, th)
        # no labelled solution: the labelled maximum lies on the boundary KL1 = KL2 and is at
        # most the unrestricted one, which is used (conservative: R* is not overstated)
        best = best if best is not None else best_any
        if best is None:
            if not self.quick:
                self.warnings.append((ConvergenceWarning.__name__,
                                      f"{self.fit.name}: the profile fit at pi = {pi:.6g} did "
                                      "not converge from any start"))
                self.trace.append((pi, np.nan, False))
            return np.nan
        self.solved[pi] = best[1]
        if not self.quick:
            self.trace.append((pi, best[0], True))
        return best[0]

    @cached_property
    def profile(self) -> Profile:
        f = self.fit
        lo, hi = PI_EPS, 1 - PI_EPS
        if f.label_rule == "pi<0.5":
            hi = 0.5
        elif f.label_rule == "pi>0.5":
            lo = 0.5
        se = self.se_pi
        return Profile("pi", f.pi, f.llf_penalized, self, bounds=(min(lo, f.pi), max(hi, f.pi)),
                       step=se if np.isfinite(se) and se > 0 else 0.01)

    def higher_point(self):
        """If the 95% interval search, or the points beyond its limits that ``conf_int_pi``
        checks for a second component of the confidence set, found a point above the fit, the
        binary-regression start ``v`` there, else None. (The points beyond the limits are
        where a maximum far from the fit shows: issue 19 found one 0.18 log-EL units higher
        at pi = 0.68, beyond the interval of a fit at pi = 0.95.)"""
        try:
            self.profile.conf_int(0.05)
            self.profile.outside_points(0.05, n=OUTSIDE_POINTS)
        except ProfileError:
            cache = {q: f for q, f in self.profile._cache.items() if np.isfinite(f)}
            q = max(cache, key=cache.get, default=None)
            if q is not None and cache[q] > self.fit.llf_penalized:
                return v_from(self.data, self.fit.restricted, self.solved[q], q)
        except (ValueError, FloatingPointError):  # not computable: nothing to probe
            pass
        return None


def probe(data, fit, se_pi):
    """Check the fit against the profile of pi: first with the quick one-start profile, then
    with the full one. Returns ``(v, full_profiler)``: the start ``v`` at a point where the
    profile rises above the fit (None if there is none) and the full profiler (None if the
    quick one already found a higher point); the full profiler's cache serves ``conf_int_pi``."""
    v = PiProfiler(data, fit, se_pi, quick=True).higher_point()
    if v is not None:
        return v, None
    full = PiProfiler(data, fit, se_pi)
    return full.higher_point(), full
