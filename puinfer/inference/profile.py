"""Profile likelihood: one object per parameter giving the curve, the interval and the plot.

As R's ``profile.glm`` -> ``confint`` -> ``plot``, but the interval limits are found by
root-finding (``scipy.optimize.brentq``) on ``R(theta) - chi2_{1,level}`` rather than by
interpolating a grid, and a limit at the parameter bound is reported as one-sided instead of
silently returning NA.
"""

from __future__ import annotations

import html
import numbers
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import optimize, stats

from .._validation import check_alpha, check_int, check_real, level_label

#: ``|R - cutoff|`` (relative to ``max(1, cutoff)``) below which a limit search whose Newton
#: residual no longer halves stops: the rounding of ``R`` (a difference of maximised
#: log-likelihoods, each a sum over many rows) then decides the steps, not the profile
_R_NOISE = 1e-6

#: a bootstrap world is near the boundary where at least this share of its resamples'
#: estimates lie on it (at 0 or 1; about where the estimate is within 1.6 bootstrap SEs of
#: it): a bootstrap-calibrated cut-off is then at least chi-square's, whose profile interval
#: is one-sided there (DETM's pi, ``studies/detm_near_boundary.py``; URC's Bartlett factors)
NEAR_BOUNDARY_SHARE = 0.05
_LIMITS = pd.Index(["lower", "upper"])  # (an interval's labels: see Profile._interval)

__all__ = ["Profile", "ProfileError", "conf_ints"]


class _NotComputable(Exception):
    """The profile is not computable at a point (stops :meth:`Profile.hull`'s root search)."""


class _InSet(Exception):
    """A point found in the confidence set (stops :meth:`Profile.hull`'s minimum search)."""

    def __init__(self, value: float):
        super().__init__(value)
        self.value = float(value)


def _real(x, arg: str, name: str) -> float:
    """``x`` as a float; ``TypeError`` naming ``arg`` if it is not a real number."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer,
                                                             np.floating)):
        raise TypeError(f"Profile of {name}: {arg} must be a real number; got {x!r}")
    return float(x)


class ProfileError(ValueError):
    """Profiling found a higher log-likelihood than the fit: the fit had not converged."""


class Profile:
    """Profile log-likelihood ratio of one scalar parameter.

    Parameters
    ----------
    name : str
        Parameter name (e.g. ``"pi"``).
    estimate : float
        The maximum-likelihood estimate.
    llf_max : float
        The maximised log-likelihood.
    loglik_at : callable
        ``loglik_at(value) -> float``: the log-likelihood maximised over all other parameters
        with this one fixed at ``value``. It may keep a warm start between calls; calls are
        made outwards from the estimate.
    bounds : (float, float)
        The parameter space; ``loglik_at`` must be defined on the closed interval.
    step : float
        A first step for bracketing the interval limits (e.g. a standard error); ``None``,
        NaN or 0 (a standard error that is not available) mean 0.01, a negative step is
        refused.
    tol : float
        Relative tolerance (finite, >= 0) for "the profile exceeds the maximum": larger
        excesses raise
        :class:`ProfileError`.
    derivative : callable, optional
        ``derivative(value) -> float``: the slope of the profile log-likelihood at a value
        where ``loglik_at`` has just been evaluated (e.g. by the envelope theorem, the partial
        derivative of the log-likelihood in the parameter at the constrained maximum). With
        it the interval limits are found by a safeguarded Newton iteration on the signed root
        ``sqrt(R)``, which is nearly linear in the parameter (three or four profile
        evaluations per limit instead of about eight); without it by bracketing and
        ``brentq``. Both locate the root to about 1e-12 (Newton stops earlier, with ``R``
        within ``1e-6 max(1, cut-off)`` of the cut-off, where the rounding of ``R`` stops
        its progress). Where Newton's steps shrink quadratically, the limit is its last step,
        not evaluated (see :attr:`newton_shortcuts`).
    floor : float or callable, optional
        A log-likelihood that the profile reaches or exceeds at every value within ``bounds``
        (e.g. that of a degenerate model which holds whatever the parameter's value), or a
        function of no arguments returning it, called once when an interval is first asked
        for. Where ``2 (llf_max - floor)`` lies below a cut-off (by more than the rounding of
        ``R``), ``R`` lies below it at every value: the interval is the whole of ``bounds``
        and no limit is searched (``attrs["floor_statistic"]`` holds that bound on ``R``).
        None or NaN: no such level is known.
    refit_hint : str, optional
        What the ``ProfileError`` of a profile that rises above the fit tells the caller to
        do (the model's own way to a higher maximum); default "refit (e.g. with more starts)
        before profiling".

    Raises
    ------
    TypeError
        If an argument is not of the documented type (a number given as a string, a
        ``loglik_at`` that is not callable), naming the argument.
    ValueError
        If ``estimate`` or ``llf_max`` is not finite, ``bounds`` are not finite and increasing
        or exclude the estimate, ``step`` is negative or ``tol`` is negative or NaN.

    Notes
    -----
    The statistic is ``R(v) = 2 {llf_max - loglik_at(v)}`` (Liu et al., eq. of Theorem 3b), and
    the level-``L`` interval is ``{v : R(v) <= chi2_{1, L}}``.
    """

    #: With ``derivative``, two evaluations saved where Newton's steps vouch for them (each
    #: evaluation a constrained fit): a limit is Newton's last step once the steps shrink
    #: quadratically (a step at most a hundredth of the one before, and the next one
    #: predicted below 1e-14 relative, ``|dv|^3 / |dv_prev|^2``), without the evaluation that
    #: would only confirm it; and where a Newton step from inside the set leaves through the
    #: bound, the bound is evaluated next (unless the profile is not computable there), not
    #: the points halfway towards it. False: every limit is an evaluated point, and the
    #: search approaches the bound by halving (a subclass that tests the profile at its
    #: limits and between them and the bound).
    newton_shortcuts: bool = True

    def __init__(self, name: str, estimate: float, llf_max: float,
                 loglik_at: Callable[[float], float], bounds=(0.0, 1.0), step: float = 0.01,
                 tol: float = 1e-7, derivative: Callable[[float], float] | None = None,
                 floor: float | Callable[[], float] | None = None,
                 refit_hint: str | None = None):
        if not isinstance(name, str):
            raise TypeError(f"Profile: name must be a string; got {name!r}")
        self.name = name
        self.estimate = _real(estimate, "estimate", name)
        self.llf_max = _real(llf_max, "llf_max", name)
        if not (np.isfinite(self.estimate) and np.isfinite(self.llf_max)):
            raise ValueError(f"Profile of {name}: the estimate ({estimate}) and the maximised "
                             f"log-likelihood llf_max ({llf_max}) must be finite")
        if not callable(loglik_at):
            raise TypeError(f"Profile of {name}: loglik_at must be a function of the value; "
                            f"got {type(loglik_at).__name__}")
        try:
            lo, hi = bounds
        except (TypeError, ValueError):
            raise TypeError(f"Profile of {name}: bounds must be a pair (lower, upper); "
                            f"got {bounds!r}") from None
        lo, hi = _real(lo, "bounds", name), _real(hi, "bounds", name)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"Profile of {name}: bounds must be finite with lower < upper; "
                             f"got {tuple(bounds)}")
        if not (lo <= self.estimate <= hi):
            raise ValueError(f"Profile of {name}: the estimate {estimate} lies outside the "
                             f"bounds {tuple(bounds)}")
        self._loglik_at = loglik_at
        self.bounds = (lo, hi)
        # step is only a first bracketing step: a missing one (None, NaN, 0: e.g. a standard
        # error that is not available) means the default; a negative one is a mistake
        step = 0.01 if step is None else _real(step, "step", name)
        if step < 0:
            raise ValueError(f"Profile of {name}: step must be positive; got {step}")
        self.step = step if np.isfinite(step) and step > 0 else 0.01
        tol = _real(tol, "tol", name)
        if not (np.isfinite(tol) and tol >= 0):
            raise ValueError(f"Profile of {name}: tol must be finite and non-negative; got {tol}")
        self.tol = tol
        if derivative is not None and not callable(derivative):
            raise TypeError(f"Profile of {name}: derivative must be a function of the value; "
                            f"got {type(derivative).__name__}")
        self._derivative = derivative
        if floor is not None and not callable(floor):
            floor = _real(floor, "floor", name)
        self._floor = floor
        self._refit_hint = refit_hint
        self._cache: dict[float, float] = {}
        object.__setattr__(self, "_frozen", True)

    # A profile is shared by the results that made it (their intervals, tests and summaries
    # read it): its settings cannot be changed afterwards (only its caches grow)
    def __setattr__(self, name, value):
        if self.__dict__.get("_frozen", False):
            raise AttributeError(f"Profile of {self.name} is immutable: cannot set {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if self.__dict__.get("_frozen", False):
            raise AttributeError(f"Profile of {self.name} is immutable: cannot delete {name!r}")
        object.__delattr__(self, name)

    def loglik(self, value: float) -> float:
        """Profile log-likelihood at ``value`` (cached), at least ``floor`` where one is given
        (and in force): a constrained fit that stopped below the floor's level at some value
        is no evidence against it (session 83's audit: a DETM fit on Dask drew R* = 5.6037
        at pi = 0.999999, above the floor's bound 5.5937, and above the cut-off of an
        interval that held the point)."""
        value = _real(value, "value", self.name)
        if np.isnan(value):
            raise ValueError(f"Profile of {self.name}: value is NaN")
        if value not in self._cache:
            if not self.bounds[0] <= value <= self.bounds[1]:
                raise ValueError(f"{self.name} = {value} is outside {self.bounds}")
            self._cache[value] = float(self._loglik_at(value))
        ll = self._cache[value]
        if getattr(self, "_floor", None) is not None and not np.isnan(ll) \
                and self._floor_in_force():
            bound = self.floor_statistic()
            # (beyond the rounding of R only: a floor level within it is the same level, and a
            # search for the cut-off's crossing there must see R as computed)
            if np.isfinite(bound) and 2.0 * (self.llf_max - ll) - bound > \
                    _R_NOISE * max(1.0, bound):
                ll = self.llf_max - bound / 2
        return ll

    def statistic(self, value: float) -> float:
        """Likelihood-ratio statistic ``R(value) = 2 {llf_max - profile llf(value)}``.

        Raises ``ProfileError`` if the profile could not be computed at ``value``
        (``loglik_at`` returned NaN) or rises above the maximum.
        """
        ll = self.loglik(value)
        if np.isnan(ll):
            raise ProfileError(f"the profile log-likelihood could not be computed at "
                               f"{self.name} = {value:.6g} (the constrained fit did not "
                               "converge); no interval limit is reported there")
        excess = ll - self.llf_max
        if excess > self.tol * max(1.0, abs(self.llf_max)):
            raise ProfileError(
                f"the profile log-likelihood at {self.name} = {value:.6g} is {excess:.3g} higher "
                "than at the fitted maximum: the original fit had not converged to the global "
                "maximum; " + (getattr(self, "_refit_hint", None)
                               or "refit (e.g. with more starts) before profiling"))
        return max(0.0, 2.0 * (self.llf_max - ll))

    def floor_statistic(self) -> float:
        """``2 (llf_max - floor)``: an upper bound of ``R`` at every value within the bounds
        (``floor``, computed once); NaN where no floor was given or it is not finite."""
        if "_floor_statistic" not in self.__dict__:
            floor = getattr(self, "_floor", None)  # (None on a profile pickled before it)
            floor = floor() if callable(floor) else floor
            floor = np.nan if floor is None else float(floor)
            # (set in the instance's dict, as the caches are: the settings stay frozen)
            self.__dict__["_floor_statistic"] = \
                max(0.0, 2.0 * (self.llf_max - floor)) if np.isfinite(floor) else np.nan
        return self.__dict__["_floor_statistic"]

    def _floor_in_force(self) -> bool:
        """Whether :meth:`conf_int` may take the whole range from the floor (a subclass whose
        limit searches do more than find the limits can say no while they must run)."""
        return True

    def _toward_edge(self, inner: float, edge: float, step: float) -> float:
        """The next trial point beyond ``inner`` when the step would reach the bound: halfway
        first (profiles are often hard to compute at the bound itself, where a parameter
        becomes unidentified), the bound itself when within 1e-4."""
        if abs(edge - inner) < 1e-3 * max(step, 1e-12) or abs(edge - inner) < 1e-4:
            return edge
        return inner + (edge - inner) / 2

    def _limit(self, direction: int, cutoff: float) -> tuple[float, bool]:
        return _run(self._limit_steps(direction, cutoff))

    def _limit_steps(self, direction: int, cutoff: float):
        """:meth:`_limit` as a generator that yields each trial point of the Newton search
        before evaluating it (so :func:`conf_ints` can have many searches' points evaluated
        together) and returns the limit."""
        if self._derivative is not None and cutoff > 0:
            out = yield from self._newton_steps(direction, cutoff)
            if out is not None:
                return out
        return self._limit_bracket(direction, cutoff)

    def _computable(self, v: float):
        """Whether the profile is computable at ``v`` (a generator: yields ``v`` first, the
        point about to be evaluated)."""
        yield v
        return not np.isnan(self.loglik(v))

    def _newton_steps(self, direction: int, cutoff: float):
        """The limit by Newton's method on ``sqrt(R(v)) - sqrt(cutoff)`` (slope from
        ``derivative``), kept inside the bracket of evaluated points and replaced by bisection
        (or, before a point beyond the limit is found, by doubling the distance from the
        estimate) whenever a step would leave it or fails to halve the residual. None if it
        does not settle within 60 evaluations (the caller then brackets and uses brentq).

        A trial point where the profile is not computable (``loglik_at`` NaN) is no evidence
        either way: the search retreats from it (halving towards it from the last point inside
        the set, as towards a bound) and finds the limit from points it can compute; only if
        the set reaches within 1e-4 of such a point does ``statistic`` raise there -- unless
        the point is the bound itself: the interval then reaches the bound, one-sided (session
        82's audit: a profile not computable only at its bound gave no interval at all)."""
        lo_b, hi_b = self.bounds
        edge = hi_b if direction > 0 else lo_b
        est = self.estimate
        if (direction > 0 and est >= hi_b) or (direction < 0 and est <= lo_b):
            return edge, True
        target = np.sqrt(cutoff)
        inner, outer = est, None
        # the innermost trial point beyond inner where the profile was not computable (e.g. a
        # constrained fit near the parameter bound that does not converge): the search stays
        # inside it, as inside the bound (session 78: DETM's first trial point of the upper
        # limit at pi = 0.999939, the quadratic approximation from pi-hat 0.867, not computable
        # there; the profile crosses the cut-off at 0.961)
        gap = None

        def far_side():
            far = outer if outer is not None else edge
            return gap if gap is not None and direction * (gap - far) < 0 else far

        v = est + direction * target * self.step  # the quadratic approximation
        prev, dv_prev = np.inf, None  # (the last step taken, if it was Newton's)
        for _ in range(60):
            far = far_side()
            if not (min(inner, far) < v < max(inner, far)):
                newton, dv_prev = dv_prev is not None, None  # (the step taken is not it)
                if far == gap:
                    v = self._toward_edge(inner, gap, self.step)
                elif outer is not None:
                    v = (inner + outer) / 2
                elif self.newton_shortcuts and newton and (yield from self._computable(edge)):
                    # Newton's step from inside the set puts the crossing beyond the bound:
                    # the bound itself (halving towards it took up to ten evaluations; the
                    # randomised comparison of session 64: 11% of URC's evaluations saved,
                    # every limit and one-sided flag the same)
                    v = edge
                else:
                    v = self._toward_edge(inner, edge, self.step)
            if v != gap and not (yield from self._computable(v)):
                # not computable here: retreat towards the last point inside (at gap itself,
                # within 1e-4 of it, statistic raises)
                gap, dv_prev = v, None
                v = self._toward_edge(inner, gap, self.step)
                continue
            if v == gap == edge:
                return edge, True  # inside the set to within 1e-4 of the bound: one-sided
            r = self.statistic(v)
            if r < cutoff:
                if v == edge:
                    return edge, True  # one-sided: the interval reaches the bound
                inner = v
            else:
                outer = v
            res = np.sqrt(r) - target
            if res == 0.0:
                return float(v), False
            if outer is not None and abs(outer - inner) <= 1e-12 * max(1.0, abs(v)):
                return float(v), False
            with np.errstate(invalid="ignore"):  # (an infinite slope where R is infinite)
                ds = -float(self._derivative(v)) / np.sqrt(r) if r > 0 else np.nan
            usable = np.isfinite(ds) and ds * direction > 0
            dv = None
            if usable and abs(res) <= 0.5 * prev:
                v_new = v - res / ds
                dv, scale = v_new - v, max(1.0, abs(v))
                if abs(dv) <= 1e-12 * scale:
                    return float(v), False
                far = far_side()
                if self.newton_shortcuts and dv_prev is not None and \
                        abs(dv) <= 0.01 * abs(dv_prev) and \
                        abs(dv) ** 3 <= 1e-14 * scale * dv_prev ** 2 and \
                        min(inner, far) < v_new < max(inner, far):
                    # quadratic convergence (the step a hundredth of the last one or less)
                    # puts v_new about |dv|^3 / |dv_prev|^2 from the root: returned without
                    # the evaluation that would confirm it, as scipy.optimize.newton returns
                    # its last step. (1e-14, not 1e-12: where the last step was not yet
                    # quadratic the estimate is short; 20,000 random binomial and
                    # exponential profiles, session 64's review: errors up to 1.8e-11 with
                    # 1e-12, none above 1e-12 with 1e-14, at 11% fewer evaluations than
                    # evaluating every limit)
                    return float(v_new), False
            elif usable and abs(r - cutoff) <= _R_NOISE * max(1.0, cutoff):
                # the residual stopped halving at the rounding of R (each value a maximised
                # log-likelihood, a sum over many rows): v is the limit to that precision
                return float(v), False
            elif outer is not None:
                v_new = (inner + outer) / 2
            else:
                v_new = est + 2 * (inner - est)
            prev, dv_prev = abs(res), dv
            v = v_new
        return None

    def _limit_bracket(self, direction: int, cutoff: float) -> tuple[float, bool]:
        """The limit by doubling steps from the estimate until ``R`` reaches the cut-off, then
        ``brentq`` (the search without a derivative, and the fallback where
        :meth:`_newton_steps` does not settle). A trial point where the profile is not
        computable is stepped back from, as in :meth:`_newton_steps`."""
        lo_b, hi_b = self.bounds
        edge = hi_b if direction > 0 else lo_b
        if (direction > 0 and self.estimate >= hi_b) or (direction < 0 and self.estimate <= lo_b):
            return edge, True  # the estimate is on the bound: one-sided
        inner = self.estimate
        step = self.step
        # the innermost trial point where the profile was not computable: no evidence either
        # way, so the search stays inside it as inside the bound, halving towards it (as
        # _newton_steps does; at the point itself, within 1e-4, statistic raises)
        gap = None
        while True:
            far = edge if gap is None else gap
            outer = inner + direction * step
            if direction * (outer - far) >= 0:
                outer = self._toward_edge(inner, far, step)
            if outer != gap and np.isnan(self.loglik(outer)):
                gap = outer
                continue
            if outer == gap == edge:
                return edge, True  # (as in _newton_steps: the set reaches the bound)
            r = self.statistic(outer)
            if r >= cutoff:
                break
            if outer == edge:
                return edge, True  # one-sided: the interval reaches the bound
            inner = outer
            step *= 2.0
        f = lambda v: self.statistic(v) - cutoff  # noqa: E731
        if inner == self.estimate and f(inner) >= 0:  # only if cutoff <= 0
            return inner, False
        root = optimize.brentq(f, min(inner, outer), max(inner, outer), xtol=1e-12, rtol=1e-12,
                               maxiter=200)
        return float(root), False

    def outside_points(self, alpha: float = 0.05, n: int = 4,
                       cutoff: float | None = None) -> list[float]:
        """Values beyond the interval limits (``n`` per side, evenly spaced up to the bound)
        where ``R`` is below the cut-off (``chi2_{1, 1 - alpha}`` unless given): if any, the
        confidence set is not an interval. ``n`` is a positive integer."""
        # (n=-1 or True searched no point and said none was inside; "4" and 2.5 failed inside
        # numpy without naming n)
        n = check_int(n, "n", minimum=1)
        ci = self.conf_int(alpha, cutoff)
        cutoff = ci.attrs["cutoff"]
        out = []
        for lim, edge, at in ((ci["lower"], self.bounds[0], ci.attrs["lower_at_bound"]),
                              (ci["upper"], self.bounds[1], ci.attrs["upper_at_bound"])):
            if not at:
                out += self._inside_beyond(lim, edge, n, cutoff)
        return out

    def _inside_beyond(self, lim: float, edge: float, n: int, cutoff: float) -> list[float]:
        """Of ``n`` points evenly spaced from the limit ``lim`` to the bound ``edge`` (interior
        points only: at the bound itself a parameter is often unidentified), those where ``R``
        is below ``cutoff``; a point where the profile is not computable is no evidence either
        way."""
        return [float(v) for v in np.linspace(lim, edge, n + 2)[1:-1]
                if not np.isnan(self.loglik(v)) and self.statistic(v) < cutoff]

    def conf_int(self, alpha: float = 0.05, cutoff: float | None = None) -> pd.Series:
        """Profile-likelihood confidence interval ``{v : R(v) <= chi2_{1, 1 - alpha}}``.

        ``cutoff``, if given, replaces ``chi2_{1, 1 - alpha}`` (a calibrated cut-off, e.g. a
        bootstrap quantile of ``R`` for the level ``1 - alpha``).

        Returns
        -------
        pandas.Series
            ``lower`` and ``upper``; attribute-like flags ``lower_at_bound`` and
            ``upper_at_bound`` in ``Series.attrs`` say which limits are the parameter bounds
            (one-sided intervals).
        """
        setup = self._interval_setup(alpha, cutoff)
        limits = None if setup["whole"] else (self._limit(-1, setup["cutoff"]),
                                              self._limit(+1, setup["cutoff"]))
        return self._interval(setup, limits)

    def _interval_setup(self, alpha, cutoff) -> dict:
        """The checked level and cut-off of :meth:`conf_int`, and whether the floor gives the
        whole range (``"whole"``: no limit search)."""
        level = 1 - check_alpha(alpha)
        method = "chi-square" if cutoff is None else "given"
        if cutoff is None:
            cutoff = float(stats.chi2.ppf(level, 1))
        elif isinstance(cutoff, (bool, np.bool_)) or not isinstance(cutoff, numbers.Real) \
                or not (np.isfinite(cutoff) and cutoff >= 0):
            raise ValueError(f"cutoff must be finite and non-negative; got {cutoff!r}")
        cutoff = float(cutoff)
        bound = self.floor_statistic() if self._floor_in_force() else np.nan
        # R stays below the cut-off everywhere (its bound from the floor): the whole range
        whole = bool(bound <= cutoff - _R_NOISE * max(1.0, cutoff))
        return dict(level=level, method=method, cutoff=cutoff, bound=bound, whole=whole)

    def _interval(self, setup: dict, limits) -> pd.Series:
        """:meth:`conf_int`'s Series from its setup and the limits ``((lower, at_bound),
        (upper, at_bound))`` (None: the whole range)."""
        if limits is None:
            limits = (self.bounds[0], True), (self.bounds[1], True)
        (lo, lo_b), (hi, hi_b) = limits
        level, bound = setup["level"], setup["bound"]
        # (a copy of one index, a quarter of the cost of one built from the labels: many
        # groups' intervals make hundreds; a copy, so that renaming one's index renames none
        # of the others)
        out = pd.Series(np.array([lo, hi], dtype=float), index=_LIMITS.copy(), copy=False,
                        name=f"{self.name} {level_label(level)} profile CI")
        out.attrs.update(level=level, lower_at_bound=lo_b, upper_at_bound=hi_b,
                         cutoff=setup["cutoff"], method=setup["method"])
        if np.isfinite(bound):
            out.attrs["floor_statistic"] = bound
        return out

    def hull(self, alpha: float = 0.05, cutoff: float | None = None, n: int = 3) -> pd.Series:
        """:meth:`conf_int`, checked beyond each limit and widened to the hull of the
        confidence set where the check finds a part of the set the limit search missed.

        Beyond each limit that is not a bound, ``n`` evenly spaced points between it and the
        bound are evaluated. The statistic ``R`` of a profile with one mode rises from the
        limit to the bound; where it falls towards the bound at one of these points instead
        (from the point before it, or by its slope where the profile gives one), the profile
        has another mode there, and ``R``'s minimum is searched between the points on either
        side (the bound after the last point, not evaluated; Brent's method, stopping at the
        first point in the set). Where such a point (or a point evaluated) lies in the set,
        the limit moves out to the root of ``R = cut-off`` beyond the outermost point known in
        the set (between it and the next point beyond it where ``R`` is at least the cut-off;
        the bound if there is none, or where the profile is not computable at the points
        beyond). A check, not a proof: a mode between two points where ``R`` still rises
        (values and slopes) is not seen.

        Returns
        -------
        pandas.Series
            As :meth:`conf_int`, with ``attrs["interval"]`` False where the set was found not
            to be an interval, and ``attrs["inside_beyond"]`` the points beyond the limits
            found in the set.
        """
        n = check_int(n, "n", minimum=1)
        out = self.conf_int(alpha, cutoff)
        cut = out.attrs["cutoff"]
        found = []
        for key, edge in (("lower", self.bounds[0]), ("upper", self.bounds[1])):
            if out.attrs[f"{key}_at_bound"]:
                continue
            # interior points (at the bound a parameter is often unidentified, e.g. a log-rate
            # penalty there), the bound only as the last point of the hull's limit search
            trial = [float(v) for v in np.linspace(out[key], edge, n + 2)[1:-1]]
            inside = self._mode_beyond(out[key], trial, edge, cut)
            if inside is None:
                continue
            found.append(inside)
            beyond = [v for v in trial if abs(v - out[key]) > abs(inside - out[key])] + [edge]
            out[key], out.attrs[f"{key}_at_bound"] = self._hull_limit(inside, beyond, cut)
        out.attrs["interval"] = not found
        out.attrs["inside_beyond"] = found
        return out

    def _R_or_nan(self, v: float) -> float:
        return np.nan if np.isnan(self.loglik(v)) else self.statistic(v)

    def _mode_beyond(self, lim: float, trial: list, edge: float, cutoff: float
                     ) -> float | None:
        """The outermost of ``trial`` (interior points from the limit ``lim`` towards the bound
        ``edge``) in the set; else a point in the set found at a minimum of ``R`` searched
        where ``R`` falls towards the bound at a trial point (from the point before it, or by
        its slope where the profile gives one), between the point before it and the point
        after it (the bound after the last: not evaluated by the search); else None."""
        out = np.sign(edge - lim)  # (outwards: towards the bound)
        pts = []
        for v in trial:
            r = self._R_or_nan(v)
            if np.isnan(r):
                continue
            # dR along the way out, read right after the evaluation (the documented contract
            # of ``derivative``: at a value where ``loglik_at`` has just been evaluated)
            fall = -2.0 * out * float(self._derivative(v)) if self._derivative is not None \
                else np.nan
            pts.append((v, r, fall))
        inside = [v for v, r, _ in pts if r < cutoff]
        if inside:
            return inside[-1]
        seq = [(lim, cutoff, np.nan)] + pts
        for i in range(1, len(seq)):
            (a, ra, _), (_, rb, slope_b) = seq[i - 1], seq[i]
            if not (rb < ra or slope_b < 0):
                continue
            c = seq[i + 1][0] if i + 1 < len(seq) else edge

            def f(x):
                r = self._R_or_nan(x)
                if r < cutoff:
                    raise _InSet(x)
                return np.inf if np.isnan(r) else r

            try:
                optimize.minimize_scalar(f, bounds=(min(a, c), max(a, c)), method="bounded",
                                         options={"xatol": 1e-4, "maxiter": 30})
            except _InSet as hit:
                return hit.value
        return None

    def _hull_limit(self, inner: float, beyond: list, cutoff: float) -> tuple[float, bool]:
        """The limit of the set beyond ``inner`` (in it): the root of ``R = cutoff`` between
        ``inner`` and the first point of ``beyond`` (the points towards the bound, the bound
        last) where ``R`` is at least the cut-off; the bound, one-sided, if there is none.
        Points where the profile is not computable are passed over (a root search that meets
        one stops at the point known in the set); a profile above the maximum raises
        ``ProfileError``, as everywhere (except at the bound itself, where a parameter is
        often unidentified: no evidence either way)."""
        for v in beyond:
            try:
                r = self._R_or_nan(v)
            except ProfileError:
                if v != beyond[-1]:
                    raise
                r = np.nan
            if np.isnan(r):
                continue
            if r < cutoff:
                inner = v
                continue

            def excess(x):
                r = self._R_or_nan(x)
                if np.isnan(r):
                    raise _NotComputable(x)
                return r - cutoff

            try:
                root = optimize.brentq(excess, inner, v, xtol=1e-10, rtol=1e-12)
            except _NotComputable:
                return float(inner), False
            return float(root), False
        return float(beyond[-1]) if beyond else float(inner), True

    def to_frame(self, n: int = 41, alpha: float = 0.05, interval: pd.Series | None = None
                 ) -> pd.DataFrame:
        """The curve on a grid spanning the interval plus a margin: columns ``value``, ``R``
        (``interval``: span this interval instead of the chi-square one at ``alpha``); ``R`` is
        NaN where the profile could not be computed (e.g. at a bound where the parameter is
        not identified: a gap in the plot, not an error)."""
        n = check_int(n, "n", minimum=2)
        ci = self.conf_int(alpha) if interval is None else interval
        width = max(ci["upper"] - ci["lower"], 1e-6)
        lo = max(self.bounds[0], ci["lower"] - 0.3 * width)
        hi = min(self.bounds[1], ci["upper"] + 0.3 * width)
        grid = np.unique(np.concatenate([np.linspace(lo, hi, n), [self.estimate]]))
        # evaluate outwards from the estimate so that warm starts follow the path
        order = np.argsort(np.abs(grid - self.estimate), kind="stable")
        # (session 67's audit: a NaN at the bound made plot() fail after conf_int() had
        # succeeded; a profile above the maximum still raises)
        values = {g: np.nan if np.isnan(self.loglik(g)) else self.statistic(g)
                  for g in grid[order]}
        return pd.DataFrame({"value": grid, "R": [values[g] for g in grid]})

    def plot(self, ax=None, alpha: float = 0.05, true_value: float | None = None, n: int = 41,
             interval: pd.Series | None = None):
        """Plot ``R(value)`` with the chi-square cut-off and the interval (as Liu et al., Fig. 5).

        Parameters
        ----------
        true_value : float, optional
            A finite number, drawn as a vertical line (e.g. the truth of a simulation).
        interval : pandas.Series, optional
            An interval for this parameter to draw instead of the chi-square one at ``alpha``
            (e.g. DETM's bootstrap-calibrated ``conf_int_pi()``): its limits, and its cut-off
            and level from its ``attrs``.

        Returns
        -------
        matplotlib.axes.Axes
        """
        from ..plotting import get_ax, plain_text

        if true_value is not None:
            # ("0.2" failed in the legend's format; NaN and inf drew no line, silently)
            true_value = check_real(true_value, "true_value")
        ax = get_ax(ax)
        ci = self.conf_int(alpha) if interval is None else interval
        if not isinstance(ci, pd.Series) or not {"level", "cutoff"} <= set(ci.attrs):
            raise ValueError("interval: a Series from conf_int_pi() or Profile.conf_int(), whose "
                             "attrs give its level and cut-off")
        df = self.to_frame(n=n, alpha=alpha, interval=ci)
        name = plain_text(self.name)
        level, cutoff = ci.attrs["level"], ci.attrs["cutoff"]
        # (which cut-off, said in the legend and the title: session 67's audit found a
        # default bootstrap-calibrated DETM interval beside a plot of the chi-square one)
        how = ci.attrs.get("method", "given")
        how = "chi-square" if how == "profile" else how  # (DETM's plain interval)
        ax.plot(df["value"], df["R"], color="black", lw=1.5, label=f"R*({name})")
        ax.axhline(cutoff, color="red", lw=1,
                   label=(f"chi-square {level_label(level)} cut-off = {cutoff:.3f}"
                          if how == "chi-square" else f"{how} cut-off = {cutoff:.3f}"))
        for v in (ci["lower"], ci["upper"]):
            ax.axvline(v, color="grey", ls="--", lw=1)
        ax.axvline(self.estimate, color="black", ls=":", lw=1, label=f"estimate {self.estimate:.4f}")
        if true_value is not None:
            ax.axvline(true_value, color="tab:blue", lw=1.5, label=f"true {true_value:g}")
        ax.set_xlabel(name)
        ax.set_ylabel("profile likelihood-ratio statistic")
        # (a DETM set that is not an interval is reported by its hull: said in the title)
        hull = "" if ci.attrs.get("interval", True) else ", the hull of a set of parts"
        ax.set_title(f"{level_label(level)} CI for {name} ({how} cut-off{hull}): "
                     f"[{ci['lower']:.4f}, {ci['upper']:.4f}]")
        ax.legend(fontsize="small")
        return ax

    def _table(self, alpha: float = 0.05) -> list[tuple[str, str]]:
        """Rows (label, text) of the printed and HTML forms: estimate, interval, level,
        cut-off and the number of profile evaluations."""
        level = 1 - check_alpha(alpha)
        cutoff = float(stats.chi2.ppf(level, 1))
        try:
            ci = self.conf_int(alpha)
        except ProfileError as exc:
            interval = f"not available: {exc}"
        else:
            def lim(v, at_bound):
                return f"{v:.6g}" + (" (bound)" if at_bound else "")

            interval = (f"[{lim(ci['lower'], ci.attrs['lower_at_bound'])}, "
                        f"{lim(ci['upper'], ci.attrs['upper_at_bound'])}]")
            if ci.attrs["lower_at_bound"] and ci.attrs["upper_at_bound"]:
                interval += ", both ends at the bounds (not identified at this level)"
            elif ci.attrs["lower_at_bound"] or ci.attrs["upper_at_bound"]:
                interval += ", one-sided"
        return [("estimate", f"{self.estimate:.6g}"),
                ("profile-likelihood interval", interval),
                ("level", f"{level_label(level)}"),
                ("cut-off", f"{cutoff:.4f} (chi2(1) {level_label(level)} quantile; interval: R <= cut-off)"),
                ("parameter bounds", f"[{self.bounds[0]:g}, {self.bounds[1]:g}]"),
                ("evaluations", f"{len(self._cache)} (profile fits so far)")]

    def __str__(self):
        rows = self._table()
        w = max(len(k) for k, _ in rows)
        return "\n".join([f"Profile likelihood of {self.name}"]
                          + [f"  {k + ':':<{w + 1}} {v}" for k, v in rows])

    def _repr_html_(self):
        esc = html.escape
        body = "".join(f"<tr><th scope='row' style='text-align:left'>{esc(k)}</th>"
                       f"<td style='text-align:left'>{esc(v)}</td></tr>"
                       for k, v in self._table())
        return ("<table class='puinfer-profile'><caption style='text-align:left'>"
                f"<b>Profile likelihood of {esc(self.name)}</b></caption>"
                f"<tbody>{body}</tbody></table>")

    def __repr__(self):
        return (f"<Profile of {self.name}: estimate {self.estimate:.6g}, "
                f"{len(self._cache)} evaluations>")


def _run(steps):
    """Run a search generator (:meth:`Profile._limit_steps`) to its end; its return value."""
    try:
        while True:
            next(steps)
    except StopIteration as stop:
        return stop.value


def conf_ints(profiles, alpha: float = 0.05, cutoffs=None,
              evaluate: Callable | None = None) -> list[pd.Series]:
    """:meth:`Profile.conf_int` of several profiles, their limit searches run in lockstep.

    Each round gathers the next trial point of every search still running and hands those not
    yet evaluated to ``evaluate`` at once; its values go into the profiles' caches, where the
    searches then read them. The searches, and so the intervals, are those of
    :meth:`Profile.conf_int`: what changes is only that the points of many searches can be
    evaluated together (e.g. many constrained fits of one model solved as one stacked
    problem, where each alone costs mostly the overhead of its small arrays). The searches of
    a profile's two limits interleave, so its ``loglik_at`` must give each point's value
    whatever was evaluated before (no warm start carried between calls). A profile whose
    class has its own limit search (a subclass overriding ``_limit``) runs it alone.

    Parameters
    ----------
    profiles : sequence of Profile
    alpha : float
        As :meth:`Profile.conf_int`.
    cutoffs : sequence of float or None, optional
        Per profile, as :meth:`Profile.conf_int`'s ``cutoff`` (None: chi-square's).
    evaluate : callable, optional
        ``evaluate(positions, values) -> values`` with ``positions`` the profiles'
        positions in ``profiles`` (an int array) and ``values`` the trial points: each
        profile's ``loglik_at`` there, or NaN where it leaves the point to ``loglik_at``
        (which is then called as usual). None: every point by ``loglik_at``.

    Returns
    -------
    list of pandas.Series
        One :meth:`Profile.conf_int` Series per profile.
    """
    profiles = list(profiles)
    cutoffs = [None] * len(profiles) if cutoffs is None else list(cutoffs)
    if len(cutoffs) != len(profiles):
        raise ValueError(f"cutoffs: one per profile ({len(profiles)}); got {len(cutoffs)}")
    setups = [p._interval_setup(alpha, c) for p, c in zip(profiles, cutoffs, strict=True)]
    limits: dict = {}
    searches: dict = {}
    for i, (p, setup) in enumerate(zip(profiles, setups, strict=True)):
        if setup["whole"]:
            continue
        for side, direction in ((0, -1), (1, +1)):
            if type(p)._limit is Profile._limit:
                searches[i, side] = p._limit_steps(direction, setup["cutoff"])
            else:
                limits[i, side] = p._limit(direction, setup["cutoff"])
    pending: dict = {}  # (i, side) -> the trial point its search is about to evaluate

    def advance(key):
        try:
            pending[key] = next(searches[key])
        except StopIteration as stop:
            limits[key] = stop.value
            pending.pop(key, None)

    for key in list(searches):
        advance(key)
    while pending:
        if evaluate is not None:
            todo = {}
            for (i, _), v in pending.items():
                if v not in profiles[i]._cache:
                    todo.setdefault((i, v), None)
            if todo:
                pos = np.array([i for i, _ in todo], dtype=int)
                vals = np.array([v for _, v in todo], dtype=float)
                out = np.asarray(evaluate(pos, vals), dtype=float)
                for (i, v), ll in zip(todo, out, strict=True):
                    if not np.isnan(ll):
                        profiles[i]._cache[v] = float(ll)
        for key in list(pending):
            advance(key)
    return [p._interval(setup, None if setup["whole"] else (limits[i, 0], limits[i, 1]))
            for i, (p, setup) in enumerate(zip(profiles, setups, strict=True))]
