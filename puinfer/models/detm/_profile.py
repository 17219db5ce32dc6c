"""The profile of pi: constrained refits at fixed pi for the interval and the probe.

``R*_N(pi) = 2{l_N(theta-hat) - l_N(theta-hat_pi)}`` (Liu et al., Theorem 3b); each point
refits theta with pi fixed by Newton's method on the exact profile log-EL (:mod:`._el`). The
profile at fixed pi can have several local maxima, so each point starts from the nearest point
already solved, from the fit, from the solutions of a coarse skeleton on either side, and from
the fit's other local maxima.

Cost (issue 17): a run that enters the region of quadratic convergence of a maximum already
found at the same pi stops there (:data:`._starts.MERGE_RADIUS`); a run from a start already
run at that pi is not repeated (so the skeleton's second chain stops as soon as it joins the
first); the interval limits are found by Newton's method on the signed root of ``R*`` with the
profile's slope from the envelope theorem, the intermediate points from the nearest solved
point only and the limit itself from every start (if that finds a higher branch, or the
limit is not a crossing of the cut-off but a jump of the search's values across it, the search
is repeated, with the points beyond the last one inside the set evaluated again). Above
40,000 rows a start far from the solution runs on the subsample first, and its maximum there
is run on all rows only if it is not the subsample's image of a maximum already found on all
rows at that pi.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from ...exceptions import ConvergenceWarning
from ...inference.profile import _R_NOISE, Profile, ProfileError
from . import _el
from ._label_boundary import solve_on_label_boundary
from ._starts import (
    STRETCH_LABEL,
    SUBSAMPLE_SIZE,
    FixedPiSolution,
    _log_mean_tilt,
    moment_thetas,
    solve_fixed_pi,
    subsample,
    theta_pi,
    v_from,
)

__all__ = ["PiProfiler", "PI_EPS", "OUTSIDE_POINTS"]

#: pi is profiled on [eps, 1 - eps]; an interval reaching eps is reported as one-sided at 0.
PI_EPS = 1e-6

#: points per side beyond the interval limits where ``conf_int_pi`` (and the fit's probe)
#: looks for a second component of the confidence set
OUTSIDE_POINTS = 3
#: at most this many points per side beyond a limit where a maximum already found at that pi
#: (either labelling: the skeleton's, the probe's, the searches') has ``R*`` below the cut-off
#: are evaluated again, from every start and from those maxima (:meth:`_PiProfile.suspected_outside`)
SUSPECT_POINTS = 8
#: a point beyond a limit is evaluated again (:meth:`_PiProfile.suspected_outside`) only where
#: its ``R*`` plus this share of the quadratic model's rise from the unlabelled maximum there to
#: the label boundary (:meth:`PiProfiler.boundary_rise`) is below the cut-off. The model
#: overstates the rise where the margin is far from linear: by up to 6.3 times on the
#: candidates found inside the set in session 75's world (session 79,
#: ``studies/results/detm_boundary_screen.md``: 2,297 candidates of 148 data sets in three
#: worlds, 128 inside). With 0.2 none of those was left out (the smallest margin 0.185 in R*)
#: and no interval changed; with 0.25 two were left out. On bench_detm's data at n = m = 3000
#: (rises of 16-23) the interval after the fit took 0.009 s with 0.2, 0.063 s with 0.15 and
#: 0.004 s without the checks.
BOUNDARY_RISE_SHARE = 0.2
#: points of the profile evaluated between a rise and the dip before it (``higher_point``)
RISE_POINTS = 3
#: limit searches from warm starts only (each point from its nearest solved neighbour), then
#: from every start, until the profile from every start crosses the cut-off at the limit.
#: One warm search: where its limit is not accepted the profile has several branches there,
#: and a second warm chain can follow the wrong one again (session 44: with three warm
#: searches SAR seed 62000033's upper limit was a crossing of a lower branch, 0.835, the
#: set continuing to 0.869)
WARM_SEARCHES = 1
FULL_SEARCHES = 5
#: an accepted limit is checked this far beyond it (in pi), from every start: a limit can be
#: a crossing of a lower branch while a higher one, reached from no start at the limit
#: itself, keeps the set going (session 45: SAR design, n = m = 1000, pi = 0.7, seed
#: 62000015, bootstrap lower limit 0.5776 with R* = 14.21 at 1e-3 beyond it, cut-off 18.66)
BEYOND = 1e-3
#: where the confidence set goes on at a point further out than an accepted limit (the points
#: ``conf_int_pi`` checks, :data:`OUTSIDE_POINTS`), the point :data:`BEYOND` the limit is
#: evaluated again from the fit's this many highest other local maxima (distinct pi, both
#: labellings; the branch starts' among them): the branch on which the set goes on can be
#: reachable from none of the branch starts
#: (session 48-49: SAR design, n = m = 1000, pi = 0.7, seed 47100011 from DataFrames, upper
#: limit 0.8413 where the profile from the search's sixth maximum is 3.36 < 3.84 at 0.8423
#: and the set goes on to 0.9027, as the same fit from arrays finds); and from the solutions
#: at those further points themselves, moved along their paths' tangents: they lie on the
#: branch that keeps the set going (session 50: seed 47100008 of the same cell, upper limit
#: 0.7420 where that branch, from the point 0.8065 inside the set, has R* = 3.22 at 0.7430).
#: For the interval the results report, the point past each limit is evaluated from them
#: even where no point further out lies inside the set (:meth:`_PiProfile.deepen`,
#: ``past_limits``; session 51, seed 47000032)
DEEP_MAXIMA = 12
#: at a pi where unlabelled maxima lie above every labelled one, the labelled maximum on the
#: label boundary is sought from this many of the highest of them (:mod:`._label_boundary`)
BOUNDARY_STARTS = 2


#: DETM's single-tilt fit (:meth:`PiProfiler.floor`) is not computed where ``2 (l_max -
#: floor_ceiling)`` (the SCAR test's statistic, with SETM's maximum as the ceiling) is above
#: this: its ``R*`` is then far above the chi-square cut-offs of 95-99.9% intervals (3.84-10.8)
#: and could not shorten their searches. (Its cost on determined fits: 3 ms of 1.7 s at
#: n = m = 3000, 0.1 s of 10 s at 1e5, 9 passes of 1,697 on Dask; session 81.) Leaving it out
#: never changes an interval, only its cost: the limits are then searched (as they are under a
#: larger calibrated cut-off, or where the ceiling is wrong, SETM's fit below its maximum).
FLOOR_CEILING_STATISTIC = 50.0


@dataclass(frozen=True)
class _SubFit:
    """What :meth:`PiProfiler.solve` needs of a fit record (for the subsample's profiler)."""

    restricted: bool
    penalty_strength: float
    maxiter: int
    tol: float
    pi: float
    theta: np.ndarray
    label_rule: str


class PiProfiler:
    """Profile log-EL of pi for one fit (picklable: no closures).

    Parameters
    ----------
    data : TiltData
    fit : TiltFit
        The fit record (its ``theta``, ``pi``, ``llf_penalized``, runs and options).
    se_pi : float
        A first step for the interval limits.
    quick : bool
        ``True``: each point starts from its nearest solved neighbour only. ``False``: also
        from the fit, the skeleton on each side and the fit's other local maxima; the best
        labelled solution is kept.
    floor_ceiling : float
        DETM: a log-EL at least that of the single-tilt fit (SETM's maximum, where known;
        :meth:`floor`), which is then not computed where ``R*`` at it exceeds
        :data:`FLOOR_CEILING_STATISTIC`.
    """

    #: ``(inner, direction)`` while set (a limit search after a jump, see :class:`_PiProfile`):
    #: a point's start is the nearest solved point not beyond both itself and ``inner``, the
    #: outermost point known inside the set: the chain goes on outward from inside the set,
    #: not back from points solved further out (which can be on a lower branch), while points
    #: up to ``inner`` still start from its solution
    frontier: tuple | None = None
    #: while True (:meth:`deep`) a full evaluation also starts from :attr:`deep_starts`
    deep_mode: bool = False
    #: while True (:meth:`_PiProfile.suspected_outside`, :meth:`_PiProfile._mirrored`) a full
    #: evaluation also starts from the maxima already found at that pi (either labelling: an
    #: unlabelled one above every labelled one then starts the search on the label boundary)
    #: and from :attr:`known_extra`
    known_mode: bool = False
    known_extra: tuple = ()
    #: while True (the results' intervals and profile, after the fit's probe) a point where no
    #: start converges takes the best value an unconverged run reached there, a lower bound of
    #: the profile (its ``R*`` an upper bound: inside the set where below the cut-off), with a
    #: ConvergenceWarning; the probe leaves such points out (:meth:`for_results`)
    bound_unconverged: bool = False
    #: solved points whose solutions, moved along their paths' tangents, also start every full
    #: evaluation: while a limit search goes on past a crossing of a lower branch, the point
    #: beyond the limit where the set goes on (its branch also reaches the points between the
    #: limit and it, which otherwise start from the limit's own solution, on the lower
    #: branch); in :meth:`deep`, also the points further out that lie inside the set
    via: tuple = ()
    #: (a class default too: a profiler pickled before session 81 has none of its own)
    floor_ceiling: float = np.inf
    #: while True (:meth:`higher_point`, the fit's probe) the interval searches run even where
    #: the floor puts every pi inside the set: their walk to the bounds is part of the search
    #: for a higher maximum (session 81: without it, on 40 small SCAR/SAR replicates, two SETM
    #: fits stopped 0.28 and 0.41 log-EL units below the maximum that the walk's points reach,
    #: e.g. R* = -0.59 at pi = 0.980, the third point of the upper limit's walk from 0.838)
    probing: bool = False

    def __init__(self, data, fit, se_pi: float, quick: bool = False,
                 floor_ceiling: float = np.inf):
        self.data = data
        self.fit = fit
        self.se_pi = se_pi
        self.quick = quick
        self.floor_ceiling = floor_ceiling
        self.solved = {fit.pi: fit.theta}
        self.hessians: dict = {}    # pi -> Hessian in the free parameters at solved[pi]
        self.slopes = {fit.pi: 0.0}
        self.trace: list = []       # (pi, value, converged) of every full-profile point
        self.warnings: list = []    # (category name, message)
        #: while True (the intermediate points of a limit search) a point starts from its
        #: nearest solved neighbour only; its value is recorded in ``warm_values`` (unless that
        #: start reaches the other labelling: then the point is evaluated from every start)
        self.warm_only = False
        self.warm_values: dict = {}
        self._maxima: dict = {}     # pi -> distinct converged maxima found there
        self._runs: dict = {}       # (pi, start) -> FixedPiSolution (runs are deterministic)
        self._images: dict = {}     # (pi, i) -> the subsample's run from _maxima[pi][i]
        self._boundary_runs: dict = {}  # (pi, start) -> run on the label boundary

    @cached_property
    def _sub(self):
        """Above twice ``SUBSAMPLE_SIZE`` rows, the profiler of the seeded subsample (the one
        the starts use, penalty scaled with it): a start far from the solution runs there first
        and its solution starts the run on the full data (as the starts of the fit do), unless
        a maximum already found there has it as its image (:meth:`_known_with_image`)."""
        d, f = self.data, self.fit
        if d.N <= 2 * SUBSAMPLE_SIZE and not getattr(d, "lazy", False):
            return None
        sub = subsample(d)
        rec = _SubFit(f.restricted, f.penalty_strength * sub.N / d.N, f.maxiter, f.tol, f.pi,
                      f.theta, f.label_rule)
        return PiProfiler(sub, rec, float("nan"), quick=True)

    def floor(self) -> float:
        """A penalised log-EL that the profile of pi reaches or exceeds at every pi (-inf where
        none can be computed): the level of a fit in which pi plays no part.

        SETM: ``theta = 0``, the target distributed as the source (both components the
        source, at any pi). DETM: also the single-tilt fit, both components one tilt of the
        source (``eta1 = eta2``), at its maximum: the log-EL of SETM at pi = 0 (the same
        target term, multipliers and ridge). Where the two tilts coincide the two constraints
        of (11) are one, but the profile approaches this level at every pi, in either
        labelling under the KL rule: tilting one component by ``eps x'd`` away from the other
        (its intercept keeping the single-tilt EL weights feasible) loses nothing as ``eps ->
        0``, and the label margin of the two directions ``+-d`` has opposite signs. So ``R*``
        is at most ``2 (l_max - floor)`` at every pi, and where that is below a cut-off the
        interval is the whole range (:class:`~puinfer.inference.Profile`'s ``floor``).

        Why (issue 17, session 81): on weakly determined data the limit searches walk to both
        ends of the range, whose maxima creep towards this level without reaching it (Newton
        runs of 50-155 iterations near pi = 0 and 1, SLSQP on the label boundary up to its 200
        iterations). The fit's probe still walks there (:attr:`probing`); the intervals asked
        for after it do not (the default bootstrap-calibrated one: 5.4 -> 3.1 s on 270 rows),
        nor fail where that walk met a point it could not compute (``ProfileError``: 4 of 40
        small SCAR replicates). Computed once."""
        return self._floor

    @cached_property
    def _floor(self) -> float:
        d, f = self.data, self.fit
        if getattr(d, "blocks", True) is None:
            return -np.inf  # an unpickled Dask fit: no rows to evaluate
        lazy = getattr(d, "lazy", False)
        zero = np.zeros(2 * d.p + 2)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            base = float(d.profile_log_el(zero, f.pi, f.penalty_strength, order=0) if lazy else
                         _el.profile_log_el(zero, f.pi, d.Z, d.y, f.penalty_strength,
                                            order=0))
        base = base if np.isfinite(base) else -np.inf
        if f.restricted or 2 * (f.llf_penalized - self.floor_ceiling) > FLOOR_CEILING_STATISTIC:
            return base
        tilt = self._single_tilt()
        return max(base, tilt.f) if tilt.info.converged and np.isfinite(tilt.f) else base

    def _single_tilt(self) -> FixedPiSolution:
        """The single-tilt fit (SETM's profile at pi = 0) from the logistic regression's
        slopes (the target against the source: the same model, whose log-likelihood is
        concave), on the subsample first where there is one."""
        f = self.fit
        small = self._sub.data if self._sub is not None else self.data
        b = np.asarray(small.logistic_slopes, dtype=float)
        with np.errstate(over="ignore"):
            a = -_log_mean_tilt(small, b)
        th = np.r_[0.0, np.zeros(small.p), a, b]
        for data, c in ([(small, f.penalty_strength * small.N / self.data.N)]
                        if self._sub is not None else []) + [(self.data, f.penalty_strength)]:
            s = solve_fixed_pi(data, True, 0.0, th, c, f.maxiter, f.tol)
            if s.info.converged and np.isfinite(s.f):
                th = s.theta
        return s

    def solve(self, pi: float, theta0: np.ndarray, far: bool = False) -> FixedPiSolution:
        """Newton's method at ``pi`` from ``theta0``, merged into a maximum already found at
        ``pi`` when it reaches one; a start already run at ``pi`` is not run again. ``far``:
        the start may be far from the solution (on large samples it runs on the subsample
        first)."""
        key = (pi, np.asarray(theta0, dtype=float).tobytes())
        if key in self._runs:
            return self._runs[key]
        if far and self._sub is not None:
            s0 = self._sub.solve(pi, theta0)
            if s0.info.converged and np.isfinite(s0.f):
                out = self._known_with_image(pi, s0)
                if out is None:
                    out = self.solve(pi, s0.theta)
                self._runs[key] = out
                return out
        f = self.fit
        known = self._maxima.setdefault(pi, [])
        s = solve_fixed_pi(self.data, f.restricted, pi, theta0, f.penalty_strength, f.maxiter,
                           f.tol, known=known)
        if s.info.converged and not s.merged and np.isfinite(s.f):
            known.append(s)
        self._runs[key] = s
        return s

    def _known_with_image(self, pi: float, s0: FixedPiSolution):
        """The maximum already found on the full data at ``pi`` whose image on the subsample
        (the subsample's run from it) is the subsample's maximum ``s0``, as a merged
        solution; None if there is none. A subsample maximum is lifted to the full data (a
        run from it there) only where no known full-data maximum maps to it: such a lift
        reaches that known maximum (on Liu et al.'s SAR design at n = m = 1e5, each of the
        92 lifts of the default DETM fit's probe did, after one or two evaluations on all
        rows), and a run on the subsample costs a fraction of one there."""
        for i, s in enumerate(self._maxima.get(pi, [])):
            if (pi, i) not in self._images:
                self._images[pi, i] = self._sub.solve(pi, s.theta)
            img = self._images[pi, i]
            if img.info.converged and np.isfinite(img.f) and _same_maximum(img, s0):
                return replace(s, merged=True)
        return None

    def refit(self, pi: float, theta0: np.ndarray):
        s = self.solve(pi, theta0)
        return s.f, s.theta, s.info

    def labelled(self, theta, pi) -> bool:
        """Whether ``(theta, pi)`` satisfies the label rule. DETM's profile of pi is taken
        over the labelled parameter space: without it the profile has a mirror branch at
        1 - pi (the same fit with the components swapped). The pi rules restrict the profiled
        range instead; the KL rule needs KL(p_s||component 1) <= KL(p_s||component 2), with
        the EL weights at (theta, pi) as the estimate of p_s."""
        if self.fit.restricted or self.fit.label_rule != "kl":
            return True
        d = self.data
        if getattr(d, "lazy", False):  # rows in Dask collections: block sums
            return d.labelled(theta, pi)
        with np.errstate(over="ignore", invalid="ignore"):
            gap = _el.label_gap(theta, d.Z, (d.m * pi / d.N, d.m * (1 - pi) / d.N))
        return True if gap is None else bool(gap >= 0)  # None: cannot tell, do not exclude

    @property
    def mirrored(self) -> bool:
        """DETM under a pi rule: the profile at pi is also the mirror image of the profile at
        ``1 - pi`` (the components swapped), and the skeleton covers both halves."""
        return self.fit.label_rule in ("pi<0.5", "pi>0.5") and not self.fit.restricted

    @cached_property
    def skeleton(self) -> dict:
        """Profile solutions on a grid of pi (step 0.1 within the profiled range; for DETM
        under a pi rule over the whole range, a solution in the other half kept at its mirror
        image), each the
        best of two chains of warm starts -- outward from pi-hat and inward from the ends of
        the range -- and the moment starts at that pi (:func:`._starts.moment_thetas`, both
        signs of the split). The two directions reach branches of the profile that a single
        sweep misses (without the inward chain the upper limit on SAR seed 12000001 moves
        in from 0.832 to 0.742); where they join, the second chain's runs merge into the
        first's. The moment starts reach branches that both chains miss (issue 19, session
        29: 4 of the 9 search misses left at n = m = 1000, pi = 0.7). Above twice
        ``SUBSAMPLE_SIZE`` rows the skeleton is the subsample's: its solutions are starts
        only, each run on the full data (from the subsample, as the fit's starts are)."""
        if self._sub is not None:
            return self._sub.skeleton
        rule, pi_hat, theta_hat = self.fit.label_rule, self.fit.pi, self.fit.theta
        # Under "pi<0.5" / "pi>0.5" the profile at pi is a maximum over both labellings, so it
        # is also the mirror image of the profile at 1 - pi (components swapped): the chains
        # run over the whole grid 0.05, .., 0.95, as under "kl", and a solution at g in the
        # other half is kept at 1 - g, swapped. (On the rule's half alone they missed the
        # branches a chain reaches through pi = 0.5: a fit 0.30 log-EL units below the
        # maximum the "kl" fit found, pi-hat 0.2287 for 0.1064; and "pi>0.5"'s grid 0.5, ..,
        # 0.9 was not the mirror of "pi<0.5"'s 0.05, .., 0.45: upper limit 0.9463 for the
        # mirror's 0.9573; session 72's metamorphic audit)
        mirror = self.mirrored
        # (SETM has no mirror: its range under a pi rule stays that half)
        lo = 0.5 if rule == "pi>0.5" and not mirror else 0.05
        hi = 0.5 if rule == "pi<0.5" and not mirror else 0.95
        grid = [g for g in np.round(np.arange(lo, hi + 1e-9, 0.1), 10) if abs(g - pi_hat) > 1e-9]
        p = self.data.p
        swap = np.r_[p + 1:2 * p + 2, :p + 1]  # (a1, b1, a2, b2) -> (a2, b2, a1, b1)
        best: dict = {}

        def run(g, prev):
            # each step starts from the previous solution itself: moved along the path's
            # tangent (0.1 away) it can land on another, lower branch (SAR design, seed
            # 12000001: the profile at pi = 0.75 then lost 1.7 log-EL units)
            th_prev, H_prev, q_prev = prev
            s = self.solve(g, th_prev, far=True)
            if s.info.converged and np.isfinite(s.f) and self.labelled(s.theta, g):
                q, th, H = g, s.theta, s.H
                if mirror and (g > 0.5) == (rule == "pi<0.5"):
                    q, th = float(np.round(1 - g, 10)), s.theta[swap]
                    H = None if H is None else H[np.ix_(swap, swap)]
                if q not in best or s.f > best[q][0]:
                    best[q] = (s.f, th, H)
            return (s.theta, s.H, g) if s.info.converged else prev

        for side in ([g for g in grid if g > pi_hat], [g for g in grid if g < pi_hat][::-1]):
            for chain in (side, side[::-1]):  # outward from pi-hat, inward from the end
                prev = (theta_hat, None, pi_hat)
                for g in chain:
                    prev = run(g, prev)
        for _, g, _, th in moment_thetas(self.data, self.fit.restricted, grid):
            run(g, (th, None, g))
        for g, (_, th, H) in best.items():  # warm starts for points near the grid
            if g not in self.solved:
                self.solved[g] = th
                if H is not None:
                    self.hessians[g] = H
        return {g: th for g, (_, th, _) in best.items()}

    @cached_property
    def branch_starts(self) -> list:
        """Other local maxima the starts found (distinct pi), in both labellings: the profile
        at fixed pi can follow another branch, reachable only from them.

        The stretch moves' lower maxima are left out (a stretch run that is the fit is the fit
        itself): the branch starts are the five highest, and a stretch move's lower maximum
        displaced one the probe needed (SAR design, n = m = 1000, pi = 0.7, seed 62000108:
        the probe then missed a maximum 1.78 log-EL units above the fit, which it finds
        without them; session 39). So where the stretch moves find nothing higher, the probe
        is the one the search without them runs."""
        f = self.fit
        obj = f.starts["objective"].to_numpy()
        p = self.data.p
        out, seen = [], [f.pi, 1 - f.pi]
        for i in obj.argsort()[::-1]:
            if obj.max() - obj[i] <= 1e-7 * max(1.0, abs(obj.max())):
                continue  # the fit itself (possibly in the other labelling)
            if f.runs[i].label.startswith(STRETCH_LABEL):
                continue
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

    @cached_property
    def deep_starts(self) -> list:
        """The fit's :data:`DEEP_MAXIMA` highest other local maxima (distinct pi, stretch
        moves' included), in both labellings, but those of :attr:`branch_starts`: the starts
        :meth:`deep` adds."""
        f = self.fit
        obj = f.starts["objective"].to_numpy()
        p = self.data.p
        known = [np.asarray(th) for th in self.branch_starts]
        out, seen = [], [f.pi, 1 - f.pi]
        for i in obj.argsort()[::-1]:
            if obj.max() - obj[i] <= 1e-7 * max(1.0, abs(obj.max())):
                continue  # the fit itself
            v = f.runs[i].v
            theta, pi = theta_pi(self.data, f.restricted, v)
            if not np.all(np.isfinite(theta)) or min(abs(pi - q) for q in seen) < 1e-3:
                continue
            seen += [pi, 1 - pi]
            pair = [theta] if f.restricted else \
                [theta, theta_pi(self.data, False, np.r_[v[p + 1:], v[: p + 1]])[0]]
            out += [th for th in pair if not any(np.array_equal(th, k) for k in known)]
            if len(seen) >= 2 * (DEEP_MAXIMA + 1):
                break
        return out

    def deep(self, pi: float, via=()) -> float:
        """The profile log-EL at ``pi`` from every start and also from :attr:`deep_starts` and
        from the solutions at the solved points ``via``, each moved to ``pi`` along its path's
        tangent (the runs already made at ``pi`` are not repeated)."""
        saved = self.via
        self.deep_mode, self.via = True, (*saved, *via)
        try:
            return self(pi)
        finally:
            self.deep_mode, self.via = False, saved

    def _nearest(self, pi) -> float:
        """The solved point nearest ``pi`` (see :attr:`frontier`)."""
        qs = self.solved
        if self.frontier is not None:
            inner, d = self.frontier
            reach = max(d * pi, d * inner)
            qs = [q for q in qs if d * q <= reach] or qs
        return min(qs, key=lambda q: abs(q - pi))

    def _predicted(self, pi):
        """The solution at the nearest solved point moved to ``pi`` along the path's tangent
        (:meth:`_moved`)."""
        q = self._nearest(pi)
        return self._moved(self.solved[q], self.hessians.get(q), q, pi)

    def _moved(self, th, H, q, pi):
        """The maximum ``th`` at ``q`` moved to ``pi`` along the tangent of its path,
        ``d theta / d pi = -H^{-1} d^2 l / d theta d pi`` (implicit function theorem); ``th``
        itself where the Hessian ``H`` (free parameters) is unknown or not negative
        definite."""
        if H is None or q == pi:
            return th
        d = self.data
        idx = np.r_[d.p + 1:2 * d.p + 2] if self.fit.restricted else np.arange(2 * d.p + 2)
        hpt = (d.pi_cross(th, q) if getattr(d, "lazy", False)
               else _el.pi_cross(th, q, d.Z[d.n:], d.X1[d.n:]))[idx]
        try:
            c = np.linalg.cholesky(-H)
        except np.linalg.LinAlgError:
            return th
        step = np.linalg.solve(c.T, np.linalg.solve(c, hpt))  # -H^{-1} hpt = (-H)^{-1} hpt
        out = np.array(th, dtype=float)
        out[idx] += (pi - q) * step
        return out if np.all(np.isfinite(out)) else th

    def _starts_at(self, pi) -> list:
        """``(start, fallback, far)``: the nearest solved point (the skeleton's included)
        moved along the path's tangent, with the point itself as the fallback if that run
        fails; then (unless ``quick`` or ``warm_only``) the fit, the skeleton on either side
        and the fit's other local maxima."""
        if not (self.quick or self.warm_only):
            self.skeleton  # noqa: B018 (its solutions join the warm starts)
        near = self.solved[self._nearest(pi)]
        pred = self._predicted(pi)
        first = [(pred, near if pred is not near else None, False)]
        if self.quick or self.warm_only:
            return first
        skel = self.skeleton
        below = [g for g in skel if g <= pi]
        above = [g for g in skel if g >= pi]
        thetas = [self.fit.theta]
        if below:
            thetas.append(skel[max(below)])
        if above:
            thetas.append(skel[min(above)])
        extra = self.deep_starts if self.deep_mode else []
        if self.known_mode:
            extra = extra + [m.theta for m in self._maxima.get(pi, [])] + list(self.known_extra)
        via = [self._moved(self.solved[v], self.hessians.get(v), v, pi)
               for v in self.via if v in self.solved and v != pi]
        return first + [(th, None, True) for th in thetas + self.branch_starts + extra] + \
            [(th, None, False) for th in via]

    def slope(self, pi: float) -> float:
        """Slope of the profile log-EL at an evaluated ``pi`` (NaN if unknown)."""
        return self.slopes.get(pi, float("nan"))

    def __call__(self, pi: float) -> float:
        """The profile log-EL at ``pi``: the best converged labelled refit, or (full
        evaluations, DETM under the KL rule) the labelled maximum on the label boundary where
        it is higher (:meth:`_on_boundary`); NaN if nothing converged."""
        best = best_any = None
        unlabelled = []  # converged unlabelled solutions above the best labelled one so far
        unconverged = []  # finite values of unconverged runs (bound_unconverged)
        f_max = self.fit.llf_penalized
        for th0, fallback, far in self._starts_at(pi):
            s = self.solve(pi, th0, far=far)
            if fallback is not None and not (s.info.converged and np.isfinite(s.f)):
                s = self.solve(pi, fallback)
            f, th, info = s.f, s.theta, s.info
            # A point at the fit's log-EL is a maximum at this pi (the profile cannot exceed
            # the overall maximum) even where Newton stops: with target = source the maximum
            # at every pi is theta = 0, where both tilts are identically 1, the constraints
            # (10) degenerate and the derivatives are undefined (pi is not identified).
            at_max = np.isfinite(f) and abs(f - f_max) <= 1e-9 * max(1.0, abs(f_max))
            if not (info.converged or at_max):
                # neither an answer nor a later start; but its log-EL (the multipliers solved
                # at its theta) is one of the values the profile maximises over
                if self.bound_unconverged and np.isfinite(f):
                    unconverged.append((f, th))
                continue
            if best_any is None or f > best_any[0]:
                best_any = (f, th, s.dpi, s.H)
            if best is None or f > best[0]:
                if self.labelled(th, pi):
                    best = (f, th, s.dpi, s.H)
                else:
                    unlabelled.append((f, th))
        if best is None and self.warm_only and (best_any is not None or self.bound_unconverged):
            # the one warm start reached the other labelling, which says nothing of the
            # labelled maximum here: the point from every start instead (a warm chain on the
            # mirror branch ended a lower limit at 1 - the upper one, 0.124 for 0.359, where
            # R* of the labelled profile is 7.1; session 48, SCAR design, n = m = 200, p = 2,
            # seed 0, from a DataFrame)
            self.warm_only = False
            try:
                return self(pi)
            finally:
                self.warm_only = True
        full = not (self.quick or self.warm_only)
        if full and unlabelled and self._on_boundary_applies:
            # an unlabelled maximum above every labelled one: the labelled maximum may lie on
            # the boundary KL1 = KL2 between them (:mod:`._label_boundary`)
            b = self._on_boundary(pi, unlabelled, best)
            if b is not None:
                best = (b.f, b.theta, b.dpi, None)
        # no labelled solution at all (none from any start, no boundary solution): the
        # labelled maximum is at most the unrestricted one, which is used (R* not overstated)
        best = best if best is not None else best_any
        lower = None
        if full and unconverged:
            # the best labelled unconverged value above every converged one (labels checked
            # last): the profile is at least that value. Without the ridge a run can climb
            # without end where the unpenalised maximum does not exist (a tilt slope of ~900
            # at pi = 0.8607, 0.8 log-EL units above the fit, where the converged starts gave
            # R* = 5.8 and the interval ended; session 61's metamorphic review)
            floor = -np.inf if best is None else best[0] + 1e-9 * max(1.0, abs(best[0]))
            lower = next((u for u in sorted(unconverged, key=lambda u: -u[0])
                          if u[0] > floor and self.labelled(u[1], pi)), None)
        if lower is not None:
            # e.g. where pi is not identified and the profile is flat in theta (no start
            # converged), or where a run diverges upwards
            what = ("did not converge from any start" if best is None else
                    "reached a higher value in a run that did not converge than in any that "
                    "did")
            self.warnings.append((ConvergenceWarning.__name__,
                                  f"{self.fit.name}: the profile fit at pi = {pi:.6g} {what}; "
                                  "the interval search uses the best value reached there, a "
                                  f"lower bound of the profile (R* <= "
                                  f"{max(0.0, 2 * (f_max - lower[0])):.4g}: inside the set if "
                                  "below the cut-off; a limit placed there may lie further "
                                  "out)"))
            self.trace.append((pi, lower[0], False))
            return lower[0]
        if best is None:
            if full:
                self.warnings.append((ConvergenceWarning.__name__,
                                      f"{self.fit.name}: the profile fit at pi = {pi:.6g} did "
                                      "not converge from any start"))
                self.trace.append((pi, np.nan, False))
            return np.nan
        self.solved[pi] = best[1]
        self.slopes[pi] = best[2]
        if best[3] is not None:
            self.hessians[pi] = best[3]
        else:  # e.g. a boundary solution: no tangent from an earlier solution's Hessian
            self.hessians.pop(pi, None)
        if self.warm_only:
            self.warm_values[pi] = best[0]
        elif full:
            self.trace.append((pi, best[0], True))
        return best[0]

    def for_results(self) -> PiProfiler:
        """Switch on :attr:`bound_unconverged` (the results' intervals, after the probe) and
        forget the points the probe could not compute, to evaluate them again so."""
        if not self.bound_unconverged:
            self.bound_unconverged = True
            # (rows in Dask collections dropped by pickling: nothing can be evaluated again,
            # and the probe's evaluations stand as they are)
            if "profile" in self.__dict__ and getattr(self.data, "blocks", True) is not None:
                cache = self.profile._cache
                for q in [q for q, v in cache.items() if np.isnan(v)]:
                    del cache[q]
        return self

    @property
    def _on_boundary_applies(self) -> bool:
        """Whether the profile looks for labelled maxima on the label boundary: DETM under the
        KL rule."""
        return not (self.fit.restricted or self.fit.label_rule != "kl")

    def mirror_start(self, pi: float):
        """DETM under the KL rule: the mirror image (components swapped) of the solution at
        the solved point nearest ``1 - pi``, moved to ``1 - pi`` along its path's tangent: a
        start at ``pi`` near the maximum with the other labelling and the log-EL of the
        profile at ``1 - pi`` (unlabelled there, it starts the search on the label boundary;
        :meth:`_on_boundary`). None elsewhere."""
        if not self._on_boundary_applies or not self.solved:
            return None
        m = 1 - pi
        q = min(self.solved, key=lambda t: abs(t - m))
        th = np.asarray(self._moved(self.solved[q], self.hessians.get(q), q, m), dtype=float)
        p = self.data.p
        return th[np.r_[p + 1:2 * p + 2, :p + 1]]

    def boundary_rise(self, pi: float, theta, H) -> float:
        """How far ``R*`` rises from the unlabelled local maximum ``theta`` at ``pi`` (``H``:
        the log-EL's Hessian there) to the labelled maximum on the label boundary next to it,
        by the quadratic model of the log-EL and the linear one of the label margin ``g``
        (gradient ``a``): ``g^2 / a'(-H)^{-1} a``, the first step of the boundary's Newton
        solve (:func:`._label_boundary._sqp`) at the cost of one margin gradient. 0 where it
        cannot be told (no Hessian, or not negative definite; no multipliers)."""
        if H is None:
            return 0.0
        d = self.data
        with np.errstate(over="ignore", invalid="ignore"):
            if getattr(d, "lazy", False):
                g, a = d.label_gap(theta, pi, order=1)
            else:
                g, a = _el.label_gap(theta, d.Z, (d.m * pi / d.N, d.m * (1 - pi) / d.N),
                                     X1=d.X1, order=1)
        if g is None or g >= 0 or not np.all(np.isfinite(a)):
            return 0.0  # (labelled already, or cannot tell)
        try:
            c = np.linalg.cholesky(-np.asarray(H, dtype=float))
        except np.linalg.LinAlgError:
            return 0.0
        u = np.linalg.solve(c, a)
        q = float(u @ u)
        return float(g * g / q) if q > 0 and np.isfinite(q) else 0.0

    def _on_boundary(self, pi: float, unlabelled: list, best):
        """The highest maximum on the label boundary at ``pi`` above ``best`` (``(f, ...)``
        or None) from the :data:`BOUNDARY_STARTS` highest distinct unlabelled solutions of
        ``unlabelled`` (``(f, theta)``) above it; None if none is higher. Runs are cached."""
        tie = 1e-9 * max(1.0, abs(self.fit.llf_penalized))
        floor = -np.inf if best is None else best[0]
        starts = []
        for f, th in sorted(unlabelled, key=lambda u: -u[0]):
            if f > floor + tie and not any(np.array_equal(th, t) for t in starts):
                starts.append(th)
        out = None
        for th in starts[:BOUNDARY_STARTS]:
            key = (pi, np.asarray(th, dtype=float).tobytes())
            if key not in self._boundary_runs:
                self._boundary_runs[key] = solve_on_label_boundary(
                    self.data, pi, th, self.fit.penalty_strength)
            b = self._boundary_runs[key]
            if b.info.converged and b.f > floor and (out is None or b.f > out.f):
                out = b
        return out

    @cached_property
    def profile(self) -> Profile:
        f = self.fit
        lo, hi = PI_EPS, 1 - PI_EPS
        if f.label_rule == "pi<0.5":
            hi = 0.5
        elif f.label_rule == "pi>0.5":
            lo = 0.5
        se = self.se_pi
        return _PiProfile("pi", f.pi, f.llf_penalized, self,
                          bounds=(min(lo, f.pi), max(hi, f.pi)),
                          step=se if np.isfinite(se) and se > 0 else 0.01, derivative=self.slope,
                          floor=self.floor)

    def higher_point(self) -> list:
        """Where the fit should restart: a list of ``(v, kind)``, binary-regression starts
        ``v`` (empty if none).

        ``kind`` is ``"profile probe"`` if the 95% interval search, the points beyond its
        limits that ``conf_int_pi`` checks for a second component of the confidence set, four
        points inside it (half and one standard error from pi-hat), or any other maximum
        found at a fixed pi (the skeleton's included) lies above the fit: ``v`` is the highest
        of them, the only start. (The points beyond the limits are where a maximum far from
        the fit shows: issue 19 found one 0.18 log-EL units higher at pi = 0.68, beyond the
        interval of a fit at pi = 0.95.) Otherwise ``"profile climb"`` from each side of
        pi-hat where the profile rises away from it between its points (:meth:`_rise`), the
        higher first."""
        self.probing = True
        try:
            return self._higher_point()
        finally:
            self.probing = False

    def _higher_point(self) -> list:
        f_max = self.fit.llf_penalized
        tol = self.profile.tol * max(1.0, abs(f_max))
        try:
            ci = self.profile.conf_int(0.05)
            if self.profile.outside_points(0.05, n=OUTSIDE_POINTS) and \
                    self.profile.deepen(ci.attrs["cutoff"]):
                ci = self.profile.conf_int(0.05)
                self.profile.outside_points(0.05, n=OUTSIDE_POINTS)
            # inside the interval, from every start: half and one step (SE) from pi-hat (the
            # limit search jumps there directly; a higher branch at pi-hat's own level shows
            # here: SAR design, seed 12000005, 0.41 higher at pi-hat + 0.01)
            prof = self.profile
            for k in (0.5, -0.5, 1.0, -1.0):
                v = prof.estimate + k * prof.step
                if ci["lower"] < v < ci["upper"]:
                    prof.statistic(v)
            self(self.fit.pi)  # pi-hat itself from every other start: another branch there
        except ProfileError:
            pass
        except (ValueError, FloatingPointError):  # not computable: nothing to probe
            return []
        # every maximum found at a fixed pi, labelled or not (its mirror is labelled)
        top = max(((s.f, q, s.theta) for q, sols in self._maxima.items() for s in sols),
                  key=lambda t: t[0], default=None)
        rises = self._rise(tol)
        if rises and not (top is not None and top[0] - f_max > tol):
            # the profile between each rise and the dip before it, from every start: the
            # rising branch can peak above the fit there, out of reach of a climb from the
            # rise (SAR design, n = m = 1000, pi = 0.7, seed 62000120: the profile rises
            # from -1.92 at pi = 0.857 to -0.30 at 0.643 and is 0.63 above the fit at 0.68)
            for q, dip in rises:
                for x in np.linspace(dip, q, RISE_POINTS + 2)[1:-1]:
                    self(float(x))
            top = max(((s.f, q, s.theta) for q, sols in self._maxima.items() for s in sols),
                      key=lambda t: t[0])
            rises = self._rise(tol)
        if top is not None and top[0] - f_max > tol:
            return [(v_from(self.data, self.fit.restricted, top[2], top[1]), "profile probe")]
        return [(v_from(self.data, self.fit.restricted, self.solved[q], q), "profile climb")
                for q, _ in rises]

    def _rise(self, tol: float) -> list:
        """``(pi, dip)`` pairs: on each side of pi-hat, the pi of the highest point of the
        profile evaluated so far that lies above a point nearer pi-hat on its side, and the
        pi of the lowest point between it and pi-hat (the higher side first; empty if the
        points fall away from pi-hat on both sides).

        A profile that rises away from pi-hat is not one concave branch: another branch
        lies between the two points, and its maximum with pi free may lie above the fit
        although no point evaluated does. (Issue 19, SAR design, n = m = 3000, seed
        32000556: the fit at pi = 0.608, the profile -0.63 at pi = 0.657 and -0.003 at
        0.704 (the upper limit's search) on a branch whose maximum, 0.59 above the fit at
        pi = 0.686, the probe's points did not reach.) Both sides, because a climb can return
        to the fit: n = m = 1000, pi = 0.7, seed 62000120, the fit at 0.905 rises to -0.24 at
        0.945 (whose climb returns to the fit) and to -0.30 at 0.643, whose branch holds a
        maximum near 0.7 above the fit.
        """
        pts: dict = {}
        for q, v in [(q, v) for q, v, ok in self.trace if ok] + list(self.warm_values.items()):
            if np.isfinite(v) and q in self.solved:
                pts[q] = max(v, pts.get(q, -np.inf))
        pi_hat, out = self.fit.pi, []
        for side in (sorted(q for q in pts if q > pi_hat),
                     sorted((q for q in pts if q < pi_hat), reverse=True)):
            low, low_q, best = self.fit.llf_penalized, pi_hat, None
            for q in side:  # outward from pi-hat
                if pts[q] > low + tol and (best is None or pts[q] > pts[best[0]]):
                    best = (q, low_q)
                if pts[q] < low:
                    low, low_q = pts[q], q
            if best is not None:
                out.append(best)
        return sorted(out, key=lambda b: -pts[b[0]])


def _same_maximum(a: FixedPiSolution, b: FixedPiSolution) -> bool:
    """Whether two solutions at the same pi are one maximum (a run that reaches a known
    maximum reports that maximum's own values)."""
    return bool(abs(a.f - b.f) <= 1e-9 * max(1.0, abs(a.f))
                and np.max(np.abs(a.theta - b.theta), initial=0.0) <= 1e-6)


class _PiProfile(Profile):
    """The profile of pi with the limit search of :class:`PiProfiler`: Newton's method on the
    signed root of ``R*`` from warm starts only, then the limit from every start. If that
    finds a higher branch there, the warm starts of the search's points are dropped; if the
    limit is not a crossing of the cut-off (``R*`` there, from every start, differs from it by
    more than its rounding), every point beyond the outermost point inside the set is
    forgotten, and from then on a point beyond it starts from the nearest solved point inside
    it (:attr:`PiProfiler.frontier`). Either way the search is repeated with every point from
    every start (as :class:`~puinfer.inference.Profile` does; at most ``FULL_SEARCHES``
    times). A jump between adjacent points (1e-9 apart) that the point outside keeps when
    solved again from the one inside is the profile's own: the set ends there. An accepted
    limit is checked :data:`BEYOND` past it, from every start: if the set goes on there (a
    crossing of a lower branch; the higher one is reached from no start at the limit), the
    points beyond the last one inside are forgotten but that one, and the search goes on from
    its solution. Limits are cached per side and cut-off."""

    # every limit an evaluated point: the search tests R* there for a crossing (and the
    # fit's probe path, the studies of its misses, rest on the points it evaluates)
    newton_shortcuts = False

    def _floor_in_force(self) -> bool:
        return not getattr(self._loglik_at, "probing", False)  # (see PiProfiler.probing)

    def _limit(self, direction: int, cutoff: float) -> tuple[float, bool]:
        limits = self.__dict__.setdefault("_limits", {})
        key = (direction, cutoff)
        if key not in limits:
            limits[key] = self._search(direction, cutoff)
        return limits[key]

    def _search(self, direction: int, cutoff: float) -> tuple[float, bool]:
        prof = self._loglik_at
        if prof.quick:
            return super()._limit(direction, cutoff)
        try:
            return self._searches(direction, cutoff)
        finally:
            prof.frontier, prof.via = None, ()

    def deepen(self, cutoff: float, past_limits: bool = False) -> bool:
        """Where a point further out than a limit (of the interval with this cut-off, already
        searched) lies inside the set (:meth:`outside_points`), the point :data:`BEYOND` the
        limit again from the deep starts and from those points' solutions
        (:meth:`PiProfiler.deep`); if the set goes on there after all, the limit search goes
        on from its solution, as after any crossing of a lower branch. Returns whether a
        limit moved. Nothing is evaluated for a side whose outside points all lie outside the
        set, nor again for a cut-off already deepened so (its limits are cached as they came
        out).

        ``past_limits``: the point past each limit from the deep starts even where no point
        further out lies inside the set -- for the interval the results report, after the fit
        (session 51: SAR design, n = m = 1000, pi = 0.3, seed 47000032, upper limit 0.8728
        with R* = 3.94 at 0.8738 from every start, 3.08 from the deep starts, and no point
        further out inside the set). Not in the fit's probe: there the same check moved the
        probe's path and lost a maximum 1.78 log-EL units higher (session 50, seed 62000108).
        """
        prof = self._loglik_at
        noise = _R_NOISE * max(1.0, cutoff)
        if self._floor_in_force() and self.floor_statistic() <= cutoff - noise:
            return False  # every pi is in the set (the floor): no limit to move
        done = self.__dict__.setdefault("_deepened", set())
        if (cutoff, past_limits) in done:
            return False
        done.add((cutoff, past_limits))  # a search below must not deepen again (re-entry)
        try:
            return self._deepen(cutoff, past_limits, prof, noise)
        except BaseException:
            # not done: a search that failed or was interrupted (KeyboardInterrupt in a
            # notebook) must run again on the next call, not be skipped as finished
            done.discard((cutoff, past_limits))
            raise

    def _deepen(self, cutoff, past_limits, prof, noise) -> bool:
        """:meth:`deepen`'s searches; whether a limit moved."""
        limits = self.__dict__.get("_limits", {})
        moved = False
        for direction in (-1, 1):
            key = (direction, cutoff)
            if key not in limits or limits[key][1]:
                continue  # not searched, or one-sided
            for _ in range(FULL_SEARCHES):
                lim = limits[key][0]
                edge = self.bounds[1] if direction > 0 else self.bounds[0]
                inside = self._inside_beyond(lim, edge, OUTSIDE_POINTS, cutoff)
                if not (inside or past_limits):
                    break
                q = self._beyond(lim, direction)
                value = prof.deep(q, via=inside) if q is not None else np.nan
                if not (np.isfinite(value) and 2 * (self.llf_max - value) < cutoff - noise):
                    break
                self._cache[q] = max(value, self._cache.get(q, -np.inf))
                self._continue_from(q, lim, direction, cutoff)
                try:
                    limits[key] = self._searches(direction, cutoff, start=WARM_SEARCHES)
                finally:
                    prof.frontier, prof.via = None, ()
                moved = True
        return moved

    def known_outside(self, alpha: float = 0.05, cutoff: float | None = None) -> list[float]:
        """The values of pi beyond the interval's limits where a labelled maximum at that pi,
        found by any solve so far (:attr:`PiProfiler._maxima`: the probe's, the skeleton's and
        the limit searches' points, those the searches later forgot included; and the maxima
        on the label boundary, :meth:`PiProfiler._on_boundary`), has ``R*``
        below the cut-off by more than rounding: each shows the set going on there (the
        profile is at least that maximum), at no further evaluation. Session 51, (C51): of
        100 SAR replicates at n = m = 1000, 14 had points inside the set beyond a limit that
        :meth:`outside_points` missed; such maxima were known in 3 of them (seed 47000020:
        R* = 3.33 at pi = 0.525, beyond the upper limit 0.4615). Cached per cut-off, as the
        limits are: the interval reported does not change with later evaluations."""
        ci = self.conf_int(alpha, cutoff)
        cutoff = ci.attrs["cutoff"]
        done = self.__dict__.setdefault("_known_outside", {})
        if cutoff in done:
            return list(done[cutoff])
        bar = cutoff - _R_NOISE * max(1.0, cutoff)
        prof = self._loglik_at
        out = []
        lo, hi = self.bounds
        for q, sols in prof._maxima.items():
            if not lo <= q <= hi:
                # beyond the profiled range: under DETM's pi rules the skeleton's other half,
                # whose maxima are the labelled maxima at 1 - q with the components swapped
                if not prof.mirrored:
                    continue
                q = 1 - q
            if ci["lower"] <= q <= ci["upper"]:
                continue
            for s in sorted(sols, key=lambda s: -s.f):
                if not 2 * (self.llf_max - s.f) < bar:
                    break
                if prof.labelled(s.theta, q):
                    out.append(float(q))
                    break
        # and the labelled maxima found on the label boundary (session 52: seed 47000046,
        # R* = 2.42 at 0.6813 beyond the upper limit 0.5365, a point of the probe)
        out += [float(q) for (q, _), b in prof._boundary_runs.items()
                if not ci["lower"] <= q <= ci["upper"] and b.info.converged
                and 2 * (self.llf_max - b.f) < bar]
        done[cutoff] = sorted(set(out))
        return list(done[cutoff])

    def suspected_outside(self, alpha: float = 0.05, cutoff: float | None = None) -> list[float]:
        """The values of pi beyond the interval's limits where the set is found to go on by
        evaluating again (from every start and from the maxima already found there, so that an
        unlabelled one starts the search on the label boundary) the points where a maximum
        already found (either labelling; the skeleton's runs included) has ``R*`` below the
        cut-off: at most :data:`SUSPECT_POINTS` per side, the lowest first. The three evenly
        spaced points of :meth:`outside_points` can miss a narrow part, or land in it on a
        lower branch (session 78: ``pu_normal(300, 300, 0.3, [0, 0], [1, 0], [0, 2])``, seed
        2, the 90% set [0.1374, 0.3894] and a part near 0.826-0.852, R* = 2.58 at 0.84, where
        0.8473 was evaluated at R* = 23.8 without the label boundary; the skeleton's
        unlabelled maximum at 0.85 has R* = 2.00, the labelled one on the boundary there
        2.67). Only the candidates that the quadratic model of the rise to the label
        boundary leaves inside are evaluated (:meth:`_plausible`, :data:`BOUNDARY_RISE_SHARE`;
        session 79). A point found inside raises its cached value (a lower bound of the
        profile, as the deep search's). Cached per cut-off."""
        ci = self.conf_int(alpha, cutoff)
        cutoff = ci.attrs["cutoff"]
        done = self.__dict__.setdefault("_suspected_outside", {})
        if cutoff in done:
            return list(done[cutoff])
        known = set(self.known_outside(alpha, cutoff))
        out = []
        for direction, key in ((-1, "lower"), (1, "upper")):
            if not ci.attrs[f"{key}_at_bound"]:
                out += self._suspects(float(ci[key]), direction, cutoff, known)
        done[cutoff] = sorted(out)
        return list(done[cutoff])

    def _suspects(self, lim: float, direction: int, cutoff: float, skip=()) -> list[float]:
        """Of the points beyond ``lim`` (on the side ``direction``, short of the bound, not in
        ``skip``) where a maximum already found has ``R*`` below ``cutoff``, the
        :data:`SUSPECT_POINTS` lowest, evaluated again (:meth:`suspected_outside`): those
        inside the set."""
        bar = cutoff - _R_NOISE * max(1.0, cutoff)
        prof = self._loglik_at
        if getattr(prof.data, "blocks", True) is None:
            return []  # an unpickled Dask fit: no rows to evaluate (it keeps what was computed)
        cands = sorted((2 * (self.llf_max - max(s.f for s in sols)), q)
                       for q, sols in prof._maxima.items()
                       if sols and direction * (q - lim) > 0
                       and self.bounds[0] < q < self.bounds[1] and q not in skip)
        known = {q for _, q in cands}  # (points with maxima found there already)
        mirror = {}
        if prof._on_boundary_applies:
            # DETM under the KL rule: the mirror image (components swapped) of a point solved
            # inside the set is an unlabelled maximum at 1 - q with the same R*
            p = prof.data.p
            swap = np.r_[p + 1:2 * p + 2, :p + 1]
            for q, ll in self._cache.items():
                m = float(np.round(1 - q, 12))
                if (q in prof.solved and np.isfinite(ll) and 2 * (self.llf_max - ll) < bar
                        and direction * (m - lim) > 0 and self.bounds[0] < m < self.bounds[1]
                        and m not in skip):
                    H = prof.hessians.get(q)
                    mirror.setdefault(m, (2 * (self.llf_max - ll), prof.solved[q][swap],
                                          None if H is None else H[np.ix_(swap, swap)]))
            cands = sorted(cands + [(r, m) for m, (r, _, _) in mirror.items()])

        def rise(q):  # the quadratic model's rise to the label boundary (a cheap screen)
            if q in mirror and q not in known:
                th, H = mirror[q][1:]
            else:
                top = max(prof._maxima[q], key=lambda s: s.f)
                th, H = top.theta, top.H
            return prof.boundary_rise(q, th, H)

        out = []
        for _, q in [(r, q) for r, q in cands
                     if r < bar and self._plausible(r, rise(q), bar)][:SUSPECT_POINTS]:
            if q in mirror and q not in known and \
                    not self._mirror_inside(q, *mirror[q][:2], bar):
                # (the full evaluation from every start only where the mirror's labelled
                # maximum on the label boundary lies inside: on well determined fits every
                # point solved inside has a mirror beyond the limit, and evaluating them all
                # cost 0.22 s after a 1.7 s fit; bench_detm, n = m = 3000, p = 15)
                continue
            prof.known_mode = True
            prof.known_extra = (mirror[q][1],) if q in mirror else ()
            try:
                value = prof(q)
            finally:
                prof.known_mode, prof.known_extra = False, ()
            if np.isfinite(value):
                self._cache[q] = max(value, self._cache.get(q, -np.inf))
            if np.isfinite(self._cache.get(q, np.nan)) and self.statistic(q) < bar:
                out.append(float(q))
        return out

    @staticmethod
    def _plausible(r: float, rise: float, bar: float) -> bool:
        """Whether a point beyond a limit with ``R* = r`` at a maximum there (or at the mirror
        image of a point inside) and the quadratic model's ``rise`` to the label boundary is
        evaluated again (:data:`BOUNDARY_RISE_SHARE`; on well determined fits every point
        solved inside has a mirror beyond the limit, far below the label boundary)."""
        return r + BOUNDARY_RISE_SHARE * rise < bar

    def _mirror_inside(self, q: float, r: float, theta: np.ndarray, bar: float) -> bool:
        """Whether the labelled maximum on the label boundary at ``q`` from ``theta`` (the
        mirror image of a point solved inside the set: an unlabelled maximum with ``R* = r``)
        has ``R*`` below ``bar``; its log-EL is a lower bound of the profile there, so then
        ``q`` lies inside the set. The run is cached (:meth:`PiProfiler._on_boundary`)."""
        b = self._loglik_at._on_boundary(q, [(self.llf_max - r / 2, theta)], None)
        return b is not None and 2 * (self.llf_max - b.f) < bar

    def _set_hull(self, alpha: float, cutoff: float | None, inside: list) -> tuple:
        """The hull of the confidence set whose component around pi-hat is
        ``conf_int(alpha, cutoff)`` and which also holds the points ``inside`` beyond its
        limits: on each side with such points, the limit of the set's part holding the
        outermost of them, searched outward from it as the limits are from pi-hat, and again
        from any of :data:`OUTSIDE_POINTS` points evenly spaced from that limit to the bound
        that lies inside the set (at most :data:`FULL_SEARCHES` times; a
        ``ConvergenceWarning`` is recorded if the set still goes on). Returns
        ``((lower, lower_at_bound), (upper, upper_at_bound))``, cached per cut-off as the
        limits are.

        Why the hull and not the component (session 77): where the set is not an interval
        its other part can hold the true pi. In session 75's audit world (p = 3, pi = 0.5,
        n = m = 1000; pi-hat's SD 0.26), on 399 fresh data sets, 60 default sets were not
        intervals; the default interval covered 0.895 with the component and 0.935 with the
        hull (16 more data sets, none fewer), and no hull of such a set missed
        (``studies/results/detm_pi_hull.md``)."""
        cut = self.conf_int(alpha, cutoff).attrs["cutoff"]
        done = self.__dict__.setdefault("_hulls", {})
        if cut not in done:
            done[cut] = tuple(self._hull_side(direction, alpha, cutoff, inside)
                              for direction in (-1, 1))
        return done[cut]

    def _hull_side(self, direction: int, alpha, cutoff, inside) -> tuple[float, bool]:
        ci = self.conf_int(alpha, cutoff)
        cut = ci.attrs["cutoff"]
        key = "upper" if direction > 0 else "lower"
        lim, at = float(ci[key]), bool(ci.attrs[f"{key}_at_bound"])
        edge = self.bounds[1] if direction > 0 else self.bounds[0]
        far = [q for q in inside if direction * (q - lim) > 0]
        for _ in range(FULL_SEARCHES):
            if at or not far:
                break
            # the limit search of this class (jumps between branches, the check past the
            # limit) from the outermost point inside, as from pi-hat: a profile whose estimate
            # is that point, on the same profiler (a plain bracket there stopped at a jump,
            # 0.7396 with R* = 19.7 at 0.7397 and 3.5 at 0.7406: SAR seed 47000046)
            part = _PiProfile(self.name, max(far, key=lambda q: direction * q), self.llf_max,
                              self._loglik_at, bounds=self.bounds, step=self.step,
                              tol=self.tol, derivative=self._derivative)
            lim, at = part._limit(direction, cut)
            far = [] if at else part._inside_beyond(lim, edge, OUTSIDE_POINTS, cut) + \
                self._suspects(lim, direction, cut)
        if far and not at:
            # out of searches: the hull reaches at least the points known inside the set
            outer = max(far, key=lambda q: direction * q)
            prof = self._loglik_at
            prof.warnings.append((ConvergenceWarning.__name__, (
                f"{prof.fit.name}: the confidence set for pi goes on beyond the last "
                f"{'upper' if direction > 0 else 'lower'} limit {lim:.6g} searched for its "
                f"hull (R* below the cut-off {cut:.4g} at {outer:.6g}) after {FULL_SEARCHES} "
                f"searches: the hull is taken to {outer:.6g} and may reach further")))
            lim = outer
        return lim, at

    def _searches(self, direction: int, cutoff: float, start: int = 0) -> tuple[float, bool]:
        prof = self._loglik_at
        noise = _R_NOISE * max(1.0, cutoff)
        beyond = None  # (q, R*(q)) when the last search's limit had the set going on at q
        for attempt in range(start, WARM_SEARCHES + FULL_SEARCHES):
            before = set(prof.warm_values)
            prof.warm_only = attempt < WARM_SEARCHES
            try:
                lim, at_bound = super()._limit(direction, cutoff)
            finally:
                prof.warm_only = False
            warm = [q for q in prof.warm_values if q not in before]
            for q in warm:  # later evaluations there are from every start
                self._cache.pop(q, None)
            if at_bound and lim not in warm:
                return lim, at_bound  # the bound, already evaluated from every start
            # the limit from every start (ProfileError if above the fit; cached if it was
            # already evaluated so)
            if not at_bound:  # and from the mirror start (DETM under the KL rule)
                self._mirrored(lim)
            r_full = self.statistic(lim)
            higher = lim in warm and self._cache[lim] > prof.warm_values[lim] + 1e-9 * max(
                1.0, abs(prof.warm_values[lim]))
            # not a crossing: the search's values jumped across the cut-off between two points
            # on different branches (each point starts from its nearest solved neighbour, and
            # a neighbour evaluated earlier can be on a lower branch) and it closed in on that
            # jump (SAR design, n = m = 1000, pi = 0.7, seed 62000000: a lower limit at 0.591
            # with R* = 0.23 there, an upper one at 0.732 with R* = 3.17; seed 62000033: an
            # upper limit at 0.850 with R* = 5.19, where the branch of the point inside, 2.83
            # at 1e-12 from it, continues at 2.84)
            jump = not at_bound and abs(r_full - cutoff) > noise
            if not (higher or jump):
                q = None if at_bound else self._beyond(lim, direction)
                # (a point past the limit where the profile is not computable is no evidence
                # that the set goes on, as in deepen: the limit stands)
                if q is None or np.isnan(self._mirrored(q)) or \
                        not self.statistic(q) < cutoff - noise:
                    return lim, at_bound
                # a crossing of a lower branch: the set goes on at q, on a branch that no
                # start reaches at lim; search again past lim from q's solution
                self._continue_from(q, lim, direction, cutoff)
                beyond = (q, self.statistic(q))
                continue
            beyond = None
            inner, outer = self._pair(direction, cutoff, lim) if jump else (lim, None)
            for q in warm:  # a higher branch at the limit: search again along it
                if q not in (lim, inner):
                    prof.solved.pop(q, None)
            if not jump:
                continue
            # from now on a point beyond inner continues from the solved point nearest it
            # inside (one solved beyond it can be on the lower branch: past a fold of the
            # higher branch, the lower is all there is)
            self._forget_beyond(inner, direction)
            if outer is not None and abs(outer - inner) <= 1e-9 * max(1.0, abs(outer)):
                # a jump between adjacent points: from the one inside, does its branch go on?
                r_full = self.statistic(outer)
                if abs(r_full - cutoff) <= noise:
                    return outer, False  # a crossing after all
                if r_full > cutoff:
                    return inner, False  # the profile's own jump: the set ends at inner
                self._forget_beyond(outer, direction)
        side = "upper" if direction > 0 else "lower"
        what = (f"the profile of pi jumps across the cut-off {cutoff:.4g} at the {side} limit "
                f"{lim:.6g} (R* = {r_full:.4g} there)" if beyond is None else
                f"the confidence set goes on beyond the {side} limit {lim:.6g} (a crossing of "
                f"the cut-off {cutoff:.4g}; R* = {beyond[1]:.4g} at {beyond[0]:.6g})")
        prof.warnings.append((ConvergenceWarning.__name__,
                              f"{prof.fit.name}: {what} after {WARM_SEARCHES + FULL_SEARCHES} "
                              "searches: the limit may lie further out"))
        return lim, at_bound

    def _mirrored(self, q: float) -> float:
        """The profile log-EL at ``q`` from every start (cached) and, DETM under the KL rule,
        also from the maxima already found there and :meth:`PiProfiler.mirror_start` (runs
        already made at ``q`` are not repeated); the cached value raised to the best. The
        limit and the point :data:`BEYOND` it: the branch on which the set goes on can be the
        labelled maximum on the label boundary next to the mirror image of the profile at
        ``1 - q``, reached from no other start (session 78: ``pu_normal(300, 300, 0.5,
        [0, 0, 0], [0.5, 0, 0], [1, 1, 0])``, seed 78200041, upper limit 0.7875 where that
        maximum has R* = 3.50 and the set goes on to 0.833; seed 78200028, 0.9844 for
        0.992)."""
        value = self.loglik(q)
        prof = self._loglik_at
        th = prof.mirror_start(q)
        if th is None:
            return value
        prof.known_mode, prof.known_extra = True, (th,)
        try:
            again = prof(q)
        finally:
            prof.known_mode, prof.known_extra = False, ()
        if np.isfinite(again) and not again <= value:
            self._cache[q] = again
        return self._cache[q]

    def _beyond(self, lim: float, direction: int) -> float | None:
        """The point :data:`BEYOND` past the limit ``lim`` (at most half way to the bound;
        None at the bound)."""
        edge = self.bounds[1] if direction > 0 else self.bounds[0]
        gap = abs(edge - lim)
        return lim + direction * min(BEYOND, gap / 2) if gap > 0 else None

    def _continue_from(self, q: float, lim: float, direction: int, cutoff: float) -> None:
        """The set goes on at ``q`` beyond the accepted limit ``lim``: forget every point
        beyond the outermost point inside the set before ``lim`` (:meth:`_forget_beyond`; the
        limit's own solution, on the lower branch, among them unless it lies inside the set to
        rounding) but ``q``, whose solution then starts the points beyond it
        (:attr:`PiProfiler.frontier`) and every point from then on (:attr:`PiProfiler.via`):
        the points between the limit and ``q`` too, which are nearer the limit (session 50:
        seed 47100008, SAR, pi = 0.7, n = m = 1000, whose search went on from 4e-6 past the
        limit 0.7420, started there from the limit's solution)."""
        prof = self._loglik_at
        inner, _ = self._pair(direction, cutoff, lim)
        value, theta, H = self._cache[q], prof.solved[q], prof.hessians.get(q)
        self._forget_beyond(inner, direction)
        self._cache[q], prof.solved[q] = value, theta
        if H is not None:
            prof.hessians[q] = H
        prof.frontier, prof.via = (q, direction), (q,)

    def _pair(self, direction: int, cutoff: float, lim: float) -> tuple:
        """``(inner, outer)`` about a limit ``lim`` that is not a crossing: the outermost
        point up to ``lim`` (on its side of the estimate) with a solution inside the set (the
        estimate if none), and the innermost point from ``lim`` outward evaluated outside it
        (None if none). Points evaluated from a warm start only count too: each value is a
        maximum at its pi, so the profile's is no lower."""
        prof = self._loglik_at
        values = {**prof.warm_values, **self._cache}
        side = {q: 2 * (self.llf_max - ll) for q, ll in values.items()
                if direction * (q - self.estimate) >= 0}
        inside = [q for q, r in side.items()
                  if q in prof.solved and direction * (q - lim) <= 0 and r < cutoff]
        outside = [q for q, r in side.items() if direction * (q - lim) >= 0 and r >= cutoff]
        return (max(inside, key=lambda q: direction * q, default=self.estimate),
                min(outside, key=lambda q: direction * q, default=None))

    def _forget_beyond(self, inner: float, direction: int) -> None:
        """Drop every point beyond ``inner`` (evaluated or solved, the skeleton's included):
        each was solved before ``inner``'s solution was known, possibly on a lower branch, and
        as the nearest solved neighbour of later points would lead them there. Evaluated
        again, they start from ``inner``'s solution (and every other start), and points
        solved beyond them do not start points nearer ``inner`` (:attr:`PiProfiler.frontier`)."""
        prof = self._loglik_at
        prof.frontier = (inner, direction)
        for q in [q for q in self._cache if direction * (q - inner) > 0]:
            del self._cache[q]
        for q in [q for q in prof.solved if direction * (q - inner) > 0]:
            del prof.solved[q]
            prof.hessians.pop(q, None)


def probe(data, fit, se_pi, floor_ceiling=np.inf):
    """Check the fit against the profile of pi (:meth:`PiProfiler.higher_point`). Returns
    ``(restarts, profiler)``: a list of ``(v, kind)``, starts ``v`` where the profile rises
    above the fit, or away from pi-hat (empty if it does neither), and the profiler, whose
    cached interval serves ``conf_int_pi``. ``floor_ceiling``: see :class:`PiProfiler`."""
    full = PiProfiler(data, fit, se_pi, floor_ceiling=floor_ceiling)
    return full.higher_point(), full
