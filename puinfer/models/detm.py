"""DETM and SETM: exponential tilting models for positive-unlabeled data (seed 004).

The source sample holds labeled positives ``x ~ p_s(x | y=1)``; the unlabeled target sample
holds ``x ~ pi p_t(x | y=1) + (1 - pi) p_t(x | y=0)``. The double exponential tilting model
(DETM, eq. (4)) writes both target components as exponential tilts of the source density,

    log p_t(x|y=1)/p_s(x|y=1) = alpha1 + T(x)'beta1,
    log p_t(x|y=0)/p_s(x|y=1) = alpha2 + T(x)'beta2,

leaving ``p_s`` unspecified (empirical likelihood). The single exponential tilting model (SETM,
the SCAR model of Remark 2) fixes ``alpha1 = 0, beta1 = 0``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
from scipy.special import expit

from .. import exceptions
from .._validation import (
    as_float_matrix,
    check_binary,
    check_full_rank,
    check_level,
    warn_and_record,
)
from ..base.optimize import newton_maximize
from ..base.results import ConvergenceInfo, LikelihoodResults, data_fingerprint
from ..exceptions import (
    BoundaryWarning,
    ConfidenceSetWarning,
    ConvergenceWarning,
    SeparationWarning,
    StartsDisagreeWarning,
)
from ..formula import build_design
from ..inference.hypothesis import HypothesisTestResult, chi2_test, format_pvalue, lr_test
from ..inference.profile import Profile, ProfileError
from ..summary import Summary, coef_table
from . import _el

__all__ = ["DETM", "SETM", "TiltResults", "separated_target_points"]

LABEL_RULES = ("kl", "pi<0.5", "pi>0.5")
#: pi is profiled on [eps, 1 - eps]; an interval reaching eps is reported as one-sided at 0.
_PI_EPS = 1e-6
#: number of target points (those with the smallest fitted source probability) whose
#: separation from the source sample is checked by a linear programme
_N_SEPARATION_CANDIDATES = 25
#: above twice this many rows, all starts run on a seeded subsample of this size first, and
#: the best subsample maxima start the fit on the full data
_SUBSAMPLE_SIZE = 20_000
#: up to this many rows, fit() probes the 95% profile interval of pi and restarts from any
#: higher point it finds (a maximum that the starts missed)
_PROBE_MAX_N = 50_000


def separated_target_points(Zs: np.ndarray, Zt: np.ndarray, candidates=None) -> np.ndarray:
    """Indices of target points that a hyperplane separates from *all* source points.

    A target point can be strictly separated from the source sample exactly when it lies
    outside the convex hull of the source points; then one tilt can run off to infinity along
    the separating direction, pushing that point's posterior to one, and the unpenalised
    maximum of the empirical likelihood does not exist. Each candidate is checked by the
    feasibility linear programme ``z_j = sum_i mu_i z_i, mu >= 0, sum_i mu_i = 1``.

    Parameters
    ----------
    Zs, Zt : source and target features.
    candidates : indices of target points to check (default: all).
    """
    from scipy.optimize import linprog

    n = Zs.shape[0]
    A_eq = np.vstack([Zs.T, np.ones((1, n))])
    cand = np.arange(len(Zt)) if candidates is None else np.asarray(candidates, dtype=int)
    out = []
    for j in cand:
        res = linprog(np.zeros(n), A_eq=A_eq, b_eq=np.r_[Zt[j], 1.0], bounds=(0, None),
                      method="highs")
        if res.status == 2:  # infeasible: outside the hull
            out.append(j)
    return np.asarray(out, dtype=int)


@dataclass(frozen=True)
class _Data:
    """Validated, standardised data shared by DETM and SETM."""

    X: np.ndarray          # (N, p) original features (no intercept), source rows first
    y: np.ndarray          # (N,) 1 = target, 0 = source
    names: list
    mean: np.ndarray
    sd: np.ndarray
    n: int
    m: int
    index: pd.Index | None

    @cached_property
    def Z(self):
        return (self.X - self.mean) / self.sd

    @cached_property
    def X1(self):
        return np.column_stack([np.ones(self.n + self.m), self.Z])

    @cached_property
    def fingerprint(self):
        return data_fingerprint(self.X, self.y)


def _prepare(source, target, names=None, index=None) -> _Data:
    Xs, ns = as_float_matrix(source, "source")
    Xt, nt = as_float_matrix(target, "target")
    if Xs.shape[1] != Xt.shape[1]:
        raise ValueError(f"source has {Xs.shape[1]} columns but target has {Xt.shape[1]}")
    names = list(names) if names is not None else ns
    if names != nt and names == ns and isinstance(target, pd.DataFrame) and \
            isinstance(source, pd.DataFrame):
        raise ValueError(f"source and target columns differ: {ns} vs {nt}")
    X = np.vstack([Xs, Xt])
    y = np.r_[np.zeros(len(Xs)), np.ones(len(Xt))]
    check_full_rank(np.column_stack([np.ones(len(X)), X]), ["Intercept", *names], "design")
    n_par = 2 * (X.shape[1] + 1) + 1
    if len(X) <= n_par:
        raise ValueError(f"{len(X)} rows for {n_par} DETM parameters; need more rows")
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    return _Data(X, y, names, mean, sd, len(Xs), len(Xt), index)


class _TiltModel:
    """Shared construction of DETM and SETM (a model holds data and options, never a fit)."""

    _restricted: bool = False
    _name = "DETM"

    def __init__(self, source, target, *, formula: str | None = None, _design=None,
                 _data: _Data | None = None):
        self.formula = formula
        self._design = _design
        self._names_from_frame = isinstance(source, pd.DataFrame)
        self.data = _data if _data is not None else _prepare(source, target)

    @classmethod
    def from_formula(cls, formula: str, data: pd.DataFrame | None = None, *, source=None,
                     target=None):
        """Build the model from a formula.

        Parameters
        ----------
        formula : str
            ``"labeled ~ x1 + x2"`` with ``data`` (``labeled`` is 1 for the labeled source
            positives and 0 for the unlabeled target), or ``"~ x1 + x2"`` with ``source`` and
            ``target`` data frames. The right-hand side builds ``T(x)``; ``poly``, ``logit``,
            splines and transforms are available. An intercept (alpha) is always included.
        data : pandas.DataFrame, optional
        source, target : pandas.DataFrame, optional

        Raises
        ------
        ValueError
            For missing values, a non-0/1 indicator, an empty sample, a constant or collinear
            column, too few rows, or a formula that cannot be evaluated.
        """
        if data is not None:
            if source is not None or target is not None:
                raise ValueError("give either data= (with an indicator) or source= and target=")
            design = build_design(formula, data, require_lhs=True)
            lab = check_binary(design.y, f"indicator {design.y.name!r}")
            X = design.X.drop(columns="Intercept", errors="ignore")
            if X.shape[1] == 0:
                raise ValueError("the formula has no feature columns")
            src, tgt = X[lab == 1], X[lab == 0]
            if len(src) == 0:
                raise ValueError(f"no labeled source rows ({design.y.name!r} == 1)")
            if len(tgt) == 0:
                raise ValueError(f"no unlabeled target rows ({design.y.name!r} == 0)")
        else:
            if source is None or target is None:
                raise ValueError("give data= with a two-sided formula, or source= and target=")
            design = build_design(formula, pd.concat([source, target], ignore_index=True),
                                  require_lhs=False)
            X = design.X.drop(columns="Intercept", errors="ignore")
            src, tgt = X.iloc[: len(source)], X.iloc[len(source):]
            if len(src) == 0 or len(tgt) == 0:
                raise ValueError("source and target must both have rows")
        return cls(src, tgt, formula=formula, _design=design)

    # -- conversions between the standardised and the user's scale ---------------------------
    def _param_names(self):
        names = self.data.names
        return (["alpha1"] + [f"beta1[{c}]" for c in names] + ["alpha2"]
                + [f"beta2[{c}]" for c in names] + ["pi"])

    def _to_original_map(self) -> np.ndarray:
        """Linear map J with ``params_original = J @ (a1, b1, a2, b2, pi)`` (standardised)."""
        p = len(self.data.names)
        k = p + 1
        J = np.eye(2 * k + 1)
        for t in range(2):
            o = t * k
            J[o + 1:o + k, o + 1:o + k] = np.diag(1.0 / self.data.sd)
            J[o, o + 1:o + k] = -self.data.mean / self.data.sd
        return J

    def _design_matrix(self, newdata) -> np.ndarray:
        if self._design is not None and isinstance(newdata, (pd.DataFrame, dict)):
            X = self._design.transform(newdata).drop(columns="Intercept", errors="ignore")
            return X.to_numpy(dtype=float)
        if isinstance(newdata, pd.DataFrame) and self._names_from_frame:
            missing = [c for c in self.data.names if c not in map(str, newdata.columns)]
            if missing:
                raise ValueError(f"newdata lacks the model's column(s) {missing}")
            newdata = newdata.rename(columns=str)[self.data.names]  # by name, not position
        X, _ = as_float_matrix(newdata, "newdata")
        if X.shape[1] != len(self.data.names):
            raise ValueError(f"newdata has {X.shape[1]} columns; the model has "
                             f"{len(self.data.names)}")
        return X

    # -- fitting --------------------------------------------------------------------------
    def fit(self, *, penalty="ridge", label_rule: str = "kl", maxiter: int = 200,
            tol: float = 1e-10, check_separation: bool | None = None,
            probe: bool | None = None, _start_options: dict | None = None) -> TiltResults:
        """Maximum empirical likelihood estimation.

        Parameters
        ----------
        penalty : {"ridge", "none"} or float
            ``"ridge"`` (default): the vanishing ridge ``c = 1/(2 sqrt(N))`` on the slopes of the
            internally standardised features, in glmnet's symmetric multinomial form (as the
            authors' R package); keeps the maximum finite under separation. ``"none"``: the
            plain empirical likelihood. A float sets ``c`` directly.
        label_rule : {"kl", "pi<0.5", "pi>0.5"}
            How DETM's label switching (Theorem 1) is resolved: ``"kl"`` (Remark 1, default)
            labels as component 1 the target component closer to the source in
            Kullback-Leibler divergence ``KL(p_s || p_t(.|y))``; ``"pi<0.5"`` / ``"pi>0.5"``
            label so that pi is below / above one half. Ignored by SETM (no switching).
        maxiter, tol : Newton iterations per start and the convergence tolerance on the
            Newton decrement (log-EL units).
        check_separation : bool, optional
            Check whether target points lie outside the convex hull of the source points (one
            linear programme for each of the 25 target points with the smallest fitted source
            probability), and, for a penalised fit on up to 50,000 rows, whether the ridge
            binds (``ridge_binding``: Newton's method on the unpenalised log-EL from the fit
            runs off or ends on a flat ridge). By default the hull check runs when a tilt
            diverges (a standardised slope above 10, or the ridge binding); a
            ``SeparationWarning`` is issued when the unpenalised maximum does not (or, not
            checked, may not) exist. ``False`` skips all checks (``ridge_binding`` is then
            ``None``).
        probe : bool, optional
            Check the fit against the profile of pi: compute the 95% profile interval and, if
            the profile rises above the fitted maximum (a maximum the starts missed; with many
            features, e.g. a tilt that concentrates on a few outlying target points), restart
            from there. Default: on up to 50,000 rows. (``conf_int_pi`` then profiles again
            from more starts, and raises ``ProfileError`` if it still finds a higher point.)

        Returns
        -------
        TiltResults
        """
        if label_rule not in LABEL_RULES:
            raise ValueError(f"label_rule must be one of {LABEL_RULES}; got {label_rule!r}")
        d = self.data
        N = d.n + d.m
        if isinstance(penalty, str):
            if penalty == "ridge":
                c = _el.ridge_strength(N)
            elif penalty == "none":
                c = 0.0
            else:
                raise ValueError("penalty must be 'ridge', 'none' or a non-negative float")
        else:
            if isinstance(penalty, bool) or not isinstance(penalty, (int, float, np.floating)):
                raise ValueError("penalty must be 'ridge', 'none' or a non-negative float")
            c = float(penalty)
            if not (np.isfinite(c) and c >= 0):
                raise ValueError(f"penalty strength must be finite and non-negative; got {c}")
        runs = self._run_starts(c, maxiter, tol, **(_start_options or {}))
        best = max(runs, key=lambda r: r["f"])
        if probe is None:
            probe = _start_options is None and N <= _PROBE_MAX_N
        fun, expand = self._free_fun(c, self._restricted)
        sidx = np.r_[0, d.Z.shape[1] + 1:2 * d.Z.shape[1] + 2]
        for attempt in range(6):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # re-issued below for the final fit only
                res = TiltResults(self, best, runs, c=c, label_rule=label_rule, record=[],
                                  check_separation=check_separation,
                                  options=dict(maxiter=maxiter, tol=tol))
                v0 = res._probe_interval() if probe and attempt < 5 else None
            if v0 is None:
                break
            u, f, g, H, info = newton_maximize(fun, v0[sidx] if self._restricted else v0,
                                               maxiter=maxiter, tol=tol,
                                               method=f"Newton ({self._name}, pi free)")
            runs.append(dict(label="profile probe", v=expand(u), f=f, info=info))
            if f <= best["f"]:
                break
            best = runs[-1]
        for cat, msg in res.warnings:
            warnings.warn(msg, getattr(exceptions, cat), stacklevel=2)
        return res

    # the engines ----------------------------------------------------------------------
    def _free_fun(self, c, restricted):
        d = self.data
        p = d.Z.shape[1]
        if not restricted:
            def fun(v, order):
                return _el.free_objective(v, d.Z, d.y, c, order, d.X1)
            return fun, lambda v: v
        # SETM: b1 = 0; free parameters (s1, s2, b2)
        full_idx = np.r_[0, p + 1:2 * p + 2]

        def expand(u):
            v = np.zeros(2 * p + 2)
            v[full_idx] = u
            return v

        def fun(u, order):
            out = _el.free_objective(expand(u), d.Z, d.y, c, order, d.X1)
            if order == 0:
                return out
            f, g, H = out
            return f, g[full_idx], H[np.ix_(full_idx, full_idx)]

        return fun, expand

    def _logistic_start(self):
        """Slopes of a logistic regression of target vs source (a start only; a small ridge,
        0.5e-3 |b|^2, keeps it finite under separation)."""
        d = self.data
        ridge = np.r_[0.0, np.full(d.Z.shape[1], 1e-3)]

        def fun(v, order):
            eta = d.X1 @ v
            f = eta @ d.y - np.logaddexp(0, eta).sum() - 0.5 * ridge @ v**2
            if order == 0:
                return f
            pr = expit(eta)
            g = d.X1.T @ (d.y - pr) - ridge * v
            H = -(d.X1.T @ (d.X1 * (pr * (1 - pr))[:, None])) - np.diag(ridge)
            return f, g, H

        v, *_ = newton_maximize(fun, np.zeros(d.X1.shape[1]), maxiter=50, tol=1e-8)
        return v[1:]

    def _starts(self, restricted, bL):
        """Deterministic starting points ``(s1, b1, s2, b2)``: shares pi0 on a grid."""
        d = self.data
        p = d.Z.shape[1]
        out = []
        configs = [(0.0, 1.0)] if restricted else [(0.0, 1.0), (0.3, 1.3), (-0.3, 1.0)]
        for pi0 in (0.2, 0.5, 0.8):
            for k1, k2 in configs:
                b1 = k1 * bL
                b2 = k2 * bL
                # intercepts that give each component its share pi_t m / n of the odds
                s1 = np.log(d.m * pi0 / d.n) - np.log(np.mean(np.exp(d.Z[: d.n] @ b1)))
                s2 = np.log(d.m * (1 - pi0) / d.n) - np.log(np.mean(np.exp(d.Z[: d.n] @ b2)))
                out.append((f"pi0={pi0:g}, b1={k1:g}*bL, b2={k2:g}*bL",
                            np.r_[s1, b1, s2, b2]))
        return out, p

    def _fit_fixed_pi(self, pi, theta0, c, maxiter, tol):
        """Maximise the penalised profile log-EL (12) over theta with pi fixed.

        Newton's method on ``l_N(theta)`` with the multipliers of (11) solved at every point;
        ``theta0`` is ``(a1, b1, a2, b2)`` on the standardised scale (SETM keeps a1 = b1 = 0).
        Returns the maximised value, theta and the ConvergenceInfo.
        """
        d = self.data
        p = len(d.names)
        idx = np.r_[p + 1:2 * p + 2] if self._restricted else np.arange(2 * p + 2)

        def expand(u):
            th = np.zeros(2 * p + 2)
            th[idx] = u
            return th

        lam_last = [None]  # warm start for the multipliers: the last Newton iterate's

        def fun(u, order):
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                out = _el.profile_log_el(expand(u), pi, d.Z, d.y, c, lam0=lam_last[0],
                                         order=order, X1=d.X1)
            if order == 0:
                return out
            f, g, H, extra = out
            if g is None:
                return -np.inf, None, None
            lam_last[0] = extra["lam"]
            return f, g[idx], H[np.ix_(idx, idx)]

        method = f"Newton (profile, pi={pi:.6g})"
        try:
            u, f, g, H, info = newton_maximize(fun, theta0[idx], maxiter=maxiter, tol=tol,
                                               method=method)
        except ValueError:  # the start is infeasible at this pi (a diverging tilt)
            return -np.inf, theta0, ConvergenceInfo(False, 0, method, "infeasible start")
        return f, expand(u), info

    def _theta_pi(self, v):
        """``(s1, b1, s2, b2)`` of the binary-regression form -> ``(theta, pi)`` (route 1)."""
        d = self.data
        p = len(d.names)
        s1, b1, s2, b2 = _el.split(v, p)
        Zt = d.Z[d.n:]
        pi = float(np.mean(expit((s1 + Zt @ b1) - (s2 + Zt @ b2))))
        # alpha_t = s_t - log(m pi_t / n); a component of weight 0 gets alpha_t = -inf
        a1 = 0.0 if self._restricted else (s1 - np.log(d.m * pi / d.n) if pi > 0 else -np.inf)
        a2 = s2 - np.log(d.m * (1 - pi) / d.n) if pi < 1 else -np.inf
        return np.r_[a1, b1, a2, b2], pi

    def _v_from(self, theta, pi):
        """Inverse of :meth:`_theta_pi`."""
        d = self.data
        p = len(d.names)
        a1, b1, a2, b2 = _el.split(theta, p)
        s1 = np.log(d.m * pi / d.n) + (0.0 if self._restricted else a1)
        s2 = a2 + np.log(d.m * (1 - pi) / d.n)
        return np.r_[s1, b1, s2, b2]

    def _subsample_starts(self, c, maxiter, tol):
        """For large samples, run every start on a fixed subsample and return the best
        solutions as starts for the full data (deterministic: a seeded subsample)."""
        d = self.data
        N = d.n + d.m
        k = _SUBSAMPLE_SIZE / N
        rng = np.random.default_rng(0)
        i_s = np.sort(rng.choice(d.n, size=max(int(round(d.n * k)), 50), replace=False))
        i_t = d.n + np.sort(rng.choice(d.m, size=max(int(round(d.m * k)), 50), replace=False))
        idx = np.r_[i_s, i_t]
        # same centring and scaling as the full data, so that solutions carry over
        sub = _Data(d.X[idx], d.y[idx], d.names, d.mean, d.sd, len(i_s), len(i_t), None)
        c_sub = c * len(idx) / N  # same penalty relative to the log-EL
        p = d.Z.shape[1]
        setm_runs = SETM(None, None, _data=sub)._run_starts(c_sub, maxiter, tol)
        setm_v = max(setm_runs, key=lambda r: r["f"])["v"]  # full (s1, b1 = 0, s2, b2)
        if self._restricted:
            return dict(setm_start=setm_v)
        runs = sorted(DETM(None, None, _data=sub)._run_starts(c_sub, maxiter, tol),
                      key=lambda r: -r["f"])
        # the best two distinct subsample maxima (by pi) start the full fit
        extra, seen = [], []
        for r in runs:
            s1, b1, s2, b2 = _el.split(r["v"], p)
            pi_r = float(np.mean(expit((s1 + sub.Z[sub.n:] @ b1) - (s2 + sub.Z[sub.n:] @ b2))))
            if all(abs(pi_r - q) > 1e-3 for q in seen):
                extra.append((f"subsample maximum ({r['label']})", r["v"]))
                seen.append(pi_r)
            if len(extra) == 2:
                break
        return dict(setm_start=setm_v, extra_starts=extra)

    def _run_starts(self, c, maxiter, tol, extra_starts=(), setm_start=None, grid=False,
                    setm_runs=None):
        """Fit from every start. With ``setm_start`` (large samples) SETM starts only there and
        DETM only from the SETM solution and ``extra_starts``; ``grid=True`` (the bootstrap)
        adds the SETM grid and a reduced DETM grid of three starts. ``setm_runs``: the SETM
        runs of these same data and options, already computed (the bootstrap's SETM refit),
        which DETM then does not repeat."""
        d = self.data
        p = d.Z.shape[1]
        if setm_start is None and d.n + d.m > 2 * _SUBSAMPLE_SIZE:
            opts = self._subsample_starts(c, maxiter, tol)
            # SETM's subsample gives only its start; DETM's adds its best subsample maxima
            opts["extra_starts"] = [*extra_starts, *opts.get("extra_starts", [])]
            return self._run_starts(c, maxiter, tol, **opts)
        runs = []
        # SETM first: it is DETM's first start (b1 = 0)
        fun_r, expand_r = self._free_fun(c, True)
        sidx = np.r_[0, p + 1:2 * p + 2]
        bL = self._logistic_start() if setm_start is None or grid else None
        if setm_start is None:
            starts_r, _ = self._starts(True, bL)
        else:
            starts_r = [("given", setm_start)] + (self._starts(True, bL)[0] if grid else [])
        if setm_runs is not None:
            starts_r = []
        setm_runs = list(setm_runs or [])
        for label, v0 in starts_r:
            u, f, g, H, info = newton_maximize(fun_r, v0[sidx], maxiter=maxiter, tol=tol,
                                               method="Newton (SETM, pi free)")
            setm_runs.append(dict(label=f"SETM {label}", v=expand_r(u), f=f, info=info))
        if self._restricted:
            return setm_runs
        best_setm = max(setm_runs, key=lambda r: r["f"])
        fun, _ = self._free_fun(c, False)
        if setm_start is None:
            starts = self._starts(False, bL)[0]
        elif grid:
            starts = [st for st in self._starts(False, bL)[0] if "b1=0.3" in st[0]]
        else:
            starts = []
        starts = [("SETM solution", best_setm["v"])] + starts + list(extra_starts)
        for label, v0 in starts:
            v, f, g, H, info = newton_maximize(fun, v0, maxiter=maxiter, tol=tol,
                                               method="Newton (DETM, pi free)")
            runs.append(dict(label=label, v=v, f=f, info=info))
        return runs


class DETM(_TiltModel):
    """Double exponential tilting model for (SAR) positive-unlabeled data (seed 004, eq. (4)).

    Parameters
    ----------
    source : array_like or DataFrame, (n, p)
        Features ``T(x)`` of the labeled positives.
    target : array_like or DataFrame, (m, p)
        Features of the unlabeled target sample.

    See Also
    --------
    SETM : the SCAR model (alpha1 = 0, beta1 = 0).

    Notes
    -----
    The maximum empirical likelihood estimate is computed exactly by Newton's method on the
    equivalent binary-regression form of the profile log-EL (see ``puinfer.models._el``), from
    several deterministic starts (the SETM solution and a grid of pi), keeping the best; the
    reported ``llf`` is the log-EL of eq. (9) at the profiled ``p_i``, ``l_N(theta) - N log N`` of
    eq. (12), with the Lagrange multipliers of eq. (11) solved to machine precision.

    Examples
    --------
    >>> import puinfer as pu
    >>> df = pu.datasets.load_mobile_pu()
    >>> res = pu.DETM.from_formula("labeled ~ ram + battery_power + px_height", data=df).fit()
    >>> round(res.pi, 2) > 0
    True
    """

    _restricted = False
    _name = "DETM"


class SETM(_TiltModel):
    """Single exponential tilting model: positive-unlabeled data under SCAR (seed 004, Remark 2).

    Same interface as :class:`DETM`; fixes ``alpha1 = 0`` and ``beta1 = 0`` (the target positives
    follow the source distribution).
    """

    _restricted = True
    _name = "SETM"


class TiltResults(LikelihoodResults):
    """Results of a DETM or SETM fit.

    Attributes
    ----------
    model : DETM or SETM
    pi : float
        Estimated mixture proportion of positives in the target sample.
    params : pandas.Series
        ``alpha1, beta1[...], alpha2, beta2[...], pi`` on the scale of the user's features.
    llf : float
        The log-EL ``sum_i log p_i + sum_target log{pi w1 + (1-pi) w2}`` (eq. (9) at the
        profiled ``p_i``; ``l_N(theta) - N log N`` of eq. (12)); it is <= 0. Unpenalised.
    llf_penalized : float
        ``llf`` minus the ridge penalty: the objective that was maximised (equal to ``llf``
        with ``penalty="none"``).
    ridge_binding : bool or None
        Whether the unpenalised log-EL has no maximum (it rises towards a supremum it never
        attains as the tilt slopes grow, so the ridge defines the estimate; a
        ``SeparationWarning`` says so). ``None`` when not checked (unpenalised fits,
        ``check_separation=False``, more than 50,000 rows).
    """

    def __init__(self, model: _TiltModel, best: dict, runs: list, *, c: float,
                 label_rule: str, record: list, check_separation, options=None):
        self.model = model
        self._options = dict(options or {})
        d = model.data
        self.restricted = model._restricted
        self.model_name = model._name
        self.penalty_strength = c
        self.label_rule = label_rule if not self.restricted else "none (SETM)"
        self.warnings = record
        self.nobs = d.n + d.m
        self.n_source = d.n
        self.n_target = d.m
        self.data_fingerprint = d.fingerprint
        self.llf_kind = ("profile log-EL (eq. 12 minus N log N); "
                         + (f"ridge c={c:.6g} on standardised slopes" if c else "unpenalised"))
        p = len(d.names)
        # free parameters: the slopes and pi (each alpha_t is fixed by its normalisation
        # constraint (8) given beta_t), so SETM vs DETM has p degrees of freedom (Theorem 3a)
        self.df_model = (p + 1) if self.restricted else (2 * p + 1)
        v = best["v"]
        s1, b1, s2, b2 = _el.split(v, p)
        Zs = d.Z[: d.n]
        Zt = d.Z[d.n:]
        eta1t, eta2t = s1 + Zt @ b1, s2 + Zt @ b2
        pi = float(np.mean(expit(eta1t - eta2t)))
        swapped = False
        if not self.restricted:
            swapped = self._resolve_labels(v, pi, label_rule)
            if swapped:
                v = np.r_[v[p + 1:], v[: p + 1]]
                pi = 1.0 - pi
        self.labels_swapped = swapped
        self.kl_divergences = self._kl(v, pi) if not self.restricted else (0.0, float("nan"))
        s1, b1, s2, b2 = _el.split(v, p)
        theta, _ = model._theta_pi(v)
        self._theta_std = theta
        self._pi = pi
        self._v_free = v
        # exact log-EL with the multipliers solved (never the shortcut formula)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            f, g, H, extra = _el.profile_log_el(theta, pi, d.Z, d.y, 0.0, X1=d.X1,
                                                with_pi=True)
        self.llf_method = "eq. (12), multipliers of (11) solved numerically"
        if extra is None or not np.isfinite(f) or not np.all(np.isfinite(H)):
            # A tilt has run off (w overflows). At the pi-free maximum the multipliers are
            # known exactly, lambda_t = m pi_t / N, and 1 + lambda'(w_i - 1) = (n/N)(1 + S_i):
            # evaluate eq. (12) with them in log space.
            fun, _ = model._free_fun(0.0, False)
            f = fun(self._v_free, 0) - d.n * np.log(d.n) - d.m * np.log(d.m)
            self.llf_method = "eq. (12) with the closed-form multipliers m pi_t / N (overflow)"
            H = np.full((2 * p + 3, 2 * p + 3), np.nan)
            eta1, eta2 = s1 + d.Z @ b1, s2 + d.Z @ b2
            logS = np.logaddexp(eta1, eta2)
            extra = {"lam": np.array([d.m * pi, d.m * (1 - pi)]) / self.nobs,
                     "p": np.exp(-np.logaddexp(0, logS)) / d.n,
                     "omega": expit((eta1 - eta2)[d.n:])}
            warn_and_record(record, f"{self.model_name}: a tilt diverges (exp overflow); the "
                            "log-EL uses the closed-form multipliers and standard errors are "
                            "not available", SeparationWarning)
        self.llf = float(f)
        self.llf_penalized = float(f - (_el.penalty(b1, b2, c) if c else 0.0))
        self.lagrange_multipliers = extra["lam"]
        self.el_weights = extra["p"]
        self._omega = extra["omega"]
        # convergence of the best start, with the trace of the maximised objective
        info = best["info"]
        self.convergence = info
        self._runs = runs
        self.starts = pd.DataFrame({
            "start": [r["label"] for r in runs],
            # on the scale of `objective`: the binary-regression form minus n log n + m log m
            "objective": [r["f"] - d.n * np.log(d.n) - d.m * np.log(d.m) for r in runs],
            "pi": [self._pi_of(r["v"]) for r in runs],
            "converged": [r["info"].converged for r in runs],
            "iterations": [r["info"].iterations for r in runs],
        })
        if not info.converged:
            warn_and_record(record, f"{self.model_name}: the optimiser did not converge "
                            f"({info.message})", ConvergenceWarning)
        self._check_starts(best)
        # covariance: inverse observed information of the profile log-EL (Theorem 2); with the
        # ridge, of the penalised log-EL actually maximised (its curvature is what the profile
        # of pi sees, and it stays positive definite when a direction is nearly separated)
        if c and np.all(np.isfinite(H)):
            _, _, ph = _el.penalty(b1, b2, c, 2)
            pidx = np.r_[1:p + 1, p + 2:2 * p + 2]
            H = H.copy()
            H[np.ix_(pidx, pidx)] -= ph
        self._cov = self._covariance(H)
        names = model._param_names()
        J = model._to_original_map()
        full = J @ np.r_[theta, pi]
        self._params = pd.Series(full, index=names, name="coef")
        if self.restricted:
            self._params = self._params.drop(names[: p + 1])
        self._separation(c, check_separation, Zs, Zt, v)
        if pi < 1e-6 or pi > 1 - 1e-6:
            warn_and_record(record, f"{self.model_name}: pi-hat = {pi:.3g} is at the boundary "
                            "of [0, 1]; its interval is one-sided and its SE is not valid",
                            BoundaryWarning)

    # -- construction helpers -------------------------------------------------------------
    def _pi_of(self, v):
        d = self.model.data
        p = len(d.names)
        s1, b1, s2, b2 = _el.split(v, p)
        Zt = d.Z[d.n:]
        pi = float(np.mean(expit((s1 + Zt @ b1) - (s2 + Zt @ b2))))
        if not self.restricted and self._resolve_labels(v, pi, self.label_rule):
            pi = 1 - pi
        return pi

    def _resolve_labels(self, v, pi, rule) -> bool:
        """True if components 1 and 2 must be swapped under ``rule`` (Remark 1)."""
        if rule == "pi<0.5":
            return pi > 0.5
        if rule == "pi>0.5":
            return pi < 0.5
        kl1, kl2 = self._kl(v, pi)
        return bool(kl1 > kl2)

    def _kl(self, v, pi) -> tuple[float, float]:
        """Estimated ``KL(p_s || p_t(.|y=1))`` and ``KL(p_s || p_t(.|y=0))`` (Remark 1).

        ``KL_t = -E_s log Lambda_t = -sum_i p_i (alpha_t + z_i'beta_t)`` with the EL weights
        ``p_i`` as the estimate of ``p_s``.
        """
        d = self.model.data
        p = len(d.names)
        s1, b1, s2, b2 = _el.split(v, p)
        eta1, eta2 = s1 + d.Z @ b1, s2 + d.Z @ b2
        P0 = np.exp(-np.logaddexp(0, np.logaddexp(eta1, eta2)))
        w = P0 / d.n
        with np.errstate(divide="ignore"):
            a1 = s1 - np.log(d.m * pi / d.n)
            a2 = s2 - np.log(d.m * (1 - pi) / d.n)
        return float(-(w @ (a1 + d.Z @ b1))), float(-(w @ (a2 + d.Z @ b2)))

    def _check_starts(self, best):
        st = self.starts
        f_best = st["objective"].max()
        gap = f_best - st["objective"]
        at_best = gap <= 1e-9 * max(1.0, abs(f_best))
        self.n_starts_at_best = int(at_best.sum())
        near = (~at_best) & (gap < 2.0) & (np.abs(st["pi"] - self._pi) > 0.05)
        if near.any():
            alt = st.loc[near].sort_values("objective").iloc[-1]
            warn_and_record(self.warnings,
                            f"{self.model_name}: starts disagree: a local maximum with pi = "
                            f"{alt['pi']:.4f} is within {f_best - alt['objective']:.3f} "
                            f"log-EL units of the best (pi = {self._pi:.4f})",
                            StartsDisagreeWarning)

    def _covariance(self, H):
        d = self.model.data
        p = len(d.names)
        k = 2 * (p + 1) + 1
        idx = np.arange(k)
        if self.restricted:
            idx = np.r_[p + 1:k]  # alpha2, beta2, pi
        Hs = H[np.ix_(idx, idx)]
        try:
            cov_s = np.linalg.inv(-Hs)
            if np.any(np.diag(cov_s) < 0):
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:
            warn_and_record(self.warnings, f"{self.model_name}: the observed information is "
                            "singular or not positive definite; standard errors are NaN",
                            ConvergenceWarning)
            cov_s = np.full((len(idx), len(idx)), np.nan)
        cov = np.zeros((k, k))
        cov[np.ix_(idx, idx)] = cov_s
        J = self.model._to_original_map()
        cov = J @ cov @ J.T
        names = self.model._param_names()
        out = pd.DataFrame(cov, index=names, columns=names)
        if self.restricted:
            drop = names[: p + 1]
            out = out.drop(index=drop, columns=drop)
        return out

    def _separation(self, c, check, Zs, Zt, v):
        """Detect a diverging tilt and, if so, target points separated from the source.

        A target point outside the convex hull of the source sample allows one tilt to run off
        to infinity. Unpenalised, that shows in the fit itself (huge standardised slopes).
        Penalised, the ridge keeps the slopes moderate, so the check is direct: Newton's method
        on the *unpenalised* log-EL, started at the fit, either settles nearby (the ridge only
        nudges an interior maximum) or runs off (slopes above 50: the unpenalised maximum does
        not exist and the ridge defines the estimate). ``ridge_binding`` records the answer;
        ``check=False`` skips all of this (the bootstrap refits).
        """
        self.separated_points = None
        self.ridge_binding = None
        if check is False:
            return
        d = self.model.data
        p = len(d.names)
        s1, b1, s2, b2 = _el.split(v, p)
        big = float(max(np.abs(b1).max(initial=0), np.abs(b2).max(initial=0)))
        diverging = big > 10
        if c and d.n + d.m <= _PROBE_MAX_N:
            fun, expand = self.model._free_fun(0.0, self.restricted)
            sidx = np.r_[0, p + 1:2 * p + 2]
            with warnings.catch_warnings(), np.errstate(over="ignore", invalid="ignore"):
                warnings.simplefilter("ignore")
                # tol=0: Newton stops only at floating-point precision, not on a small gain
                # (on a ridge the gain per step shrinks like exp(-margin * slope))
                u, _, _, Hu, _ = newton_maximize(fun, v[sidx] if self.restricted else v,
                                                 maxiter=60, tol=0.0)
            s1u, b1u, s2u, b2u = _el.split(expand(u) if self.restricted else u, p)
            free = float(max(np.abs(b1u).max(initial=0), np.abs(b2u).max(initial=0)))
            # binding: the slopes ran off, or Newton stopped where the log-EL is flat along
            # some direction (the curvature along a ridge vanishes like the gain)
            ev = np.linalg.eigvalsh(-Hu) if np.all(np.isfinite(Hu)) else np.array([0.0])
            flat = bool(ev.min() <= 1e-12 * max(ev.max(), 1.0))
            self.ridge_binding = bool(free > 50 or flat)
            diverging = diverging or self.ridge_binding
        if check is None and not diverging:
            return
        logS_t = np.logaddexp(s1 + Zt @ b1, s2 + Zt @ b2)
        logP0_t = -np.logaddexp(0, logS_t)
        # candidates: the target points the fit pushes furthest from the source
        cand = np.argsort(logP0_t)[:_N_SEPARATION_CANDIDATES]
        sep = separated_target_points(Zs, Zt, cand)
        self.separated_points = sep
        if not diverging:
            return
        if c and self.ridge_binding is False:
            return  # large slopes, but the unpenalised maximum exists: nothing to warn about
        if c:
            where = (f"; {sep.size} of the {len(cand)} most extreme target points lie outside "
                     "the convex hull of the source points). " if sep.size else "). ")
            if self.ridge_binding:
                msg = (f"{self.model_name}: without the ridge the empirical likelihood has no "
                       "maximum: it rises towards a supremum it never attains as the tilt "
                       f"slopes grow (standardised slopes at the penalised fit reach {big:.3g}"
                       + where)
            else:  # not checked (more than _PROBE_MAX_N rows)
                msg = (f"{self.model_name}: standardised slopes at the penalised fit reach "
                       f"{big:.3g}: the samples are nearly separated and the unpenalised "
                       f"maximum may not exist (not checked above {_PROBE_MAX_N} rows" + where)
            msg += (f"The estimates are those of the ridge-penalised EL (c = {c:.3g}) and "
                    "depend on it.")
        elif sep.size:
            msg = (f"{self.model_name}: standardised slopes reach {big:.3g} and {sep.size} of the "
                   f"{len(cand)} most extreme target points lie outside the convex hull of the "
                   "source points (a hyperplane separates each from all source points): a tilt "
                   "is running off to infinity. The unpenalised maximum does not exist; refit "
                   "with penalty='ridge'.")
        else:
            msg = (f"{self.model_name}: standardised slopes reach {big:.3g}: the samples are "
                   "quasi-separated (e.g. a band of source points that two tilts cut out), so "
                   "the unpenalised maximum may not exist; refit with penalty='ridge'.")
        warn_and_record(self.warnings, msg, SeparationWarning)

    # -- public API -----------------------------------------------------------------------
    @property
    def pi(self) -> float:
        """Estimated mixture proportion of positives in the target sample."""
        return self._pi

    @property
    def objective(self) -> float:
        """The maximised objective (penalised log-EL); used by LR tests and profiles."""
        return self.llf_penalized

    @property
    def penalized(self) -> bool:
        """Whether the ridge penalty was applied."""
        return self.penalty_strength > 0

    def is_nested_in(self, other) -> bool:
        """SETM is nested in DETM fitted to the same data with the same penalty."""
        return (isinstance(other, TiltResults) and self.restricted and not other.restricted
                and self.penalty_strength == other.penalty_strength)

    def predict(self, newdata=None) -> pd.Series | np.ndarray:
        """Posterior ``P_t(y=1 | x)`` of the approximate Bayes classifier (Section 4.2).

        ``phi(x) = pi w1(x) / {pi w1(x) + (1 - pi) w2(x)}``. With ``newdata=None`` the target
        rows are used.
        """
        m = self.model
        if newdata is None:
            return pd.Series(self._omega, name="P(y=1|x)")
        X = m._design_matrix(newdata)
        Z = (X - m.data.mean) / m.data.sd
        p = len(m.data.names)
        a1, b1, a2, b2 = _el.split(self._theta_std, p)
        with np.errstate(divide="ignore"):
            lo = (np.log(self._pi) + a1 + Z @ b1) - (np.log1p(-self._pi) + a2 + Z @ b2)
        out = expit(lo)
        if isinstance(newdata, pd.DataFrame):
            return pd.Series(out, index=newdata.index, name="P(y=1|x)")
        return out

    # -- inference on pi (Theorem 3b) -----------------------------------------------------
    def _fit_fixed_pi(self, pi: float, theta0: np.ndarray):
        """Maximise the (penalised) profile log-EL over theta with pi fixed (exact Newton)."""
        return self.model._fit_fixed_pi(pi, theta0, self.penalty_strength,
                                        self._options.get("maxiter", 200),
                                        self._options.get("tol", 1e-10))

    def _make_profile(self, quick: bool) -> tuple[Profile, dict]:
        """The profile of pi and its solved thetas. ``quick`` (the fit's probe) warm-starts
        each point from its nearest solved neighbour only; the full profile also starts from
        the neighbour on the other side and from the fit's other local maxima."""
        solved: dict[float, np.ndarray] = {self._pi: self._theta_std}
        if not quick:
            self.profile_trace: list = []
            self.profile_warnings: list = []

        def loglik_at(pi):
            # The profile at fixed pi can have several local maxima: start from the nearest
            # solved pi on each side (the fit itself is the first) and from the other local
            # maxima of the fit, and keep the best. Unconverged solutions are not used as
            # answers or as later starts.
            if quick:
                thetas = [solved[min(solved, key=lambda q: abs(q - pi))]]
            else:
                # a pure function of pi (no dependence on which points were profiled before):
                # the fit, the skeleton solutions at the grid points on each side, and the
                # fit's other local maxima
                skel = self._skeleton
                below = [g for g in skel if g <= pi]
                above = [g for g in skel if g >= pi]
                thetas = [self._theta_std]
                if below:
                    thetas.append(skel[max(below)])
                if above:
                    thetas.append(skel[min(above)])
                thetas += self._branch_starts
            best = best_any = None
            for th0 in thetas:
                f, th, info = self._fit_fixed_pi(pi, th0)
                if not info.converged:
                    continue
                if best_any is None or f > best_any[0]:
                    best_any = (f, th)
                if (best is None or f > best[0]) and self._labelled(th, pi):
                    best = (f, th)
            # no labelled solution: the labelled maximum lies on the boundary KL1 = KL2 and is
            # at most the unrestricted one, which is used (conservative: R* is not overstated)
            best = best if best is not None else best_any
            if best is None:
                if not quick:
                    msg = (f"{self.model_name}: the profile fit at pi = {pi:.6g} did not "
                           "converge from any start")
                    warn_and_record(self.profile_warnings, msg, ConvergenceWarning)
                    self.profile_trace.append((pi, np.nan, False))
                return np.nan
            solved[pi] = best[1]
            if not quick:
                self.profile_trace.append((pi, best[0], True))
            return best[0]

        se = float(self.bse["pi"])
        lo, hi = _PI_EPS, 1 - _PI_EPS
        if self.label_rule == "pi<0.5":
            hi = 0.5
        elif self.label_rule == "pi>0.5":
            lo = 0.5
        prof = Profile("pi", self._pi, self.objective, loglik_at,
                       bounds=(min(lo, self._pi), max(hi, self._pi)),
                       step=se if np.isfinite(se) and se > 0 else 0.01)
        return prof, solved

    @cached_property
    def _skeleton(self) -> dict:
        """Profile solutions on a grid of pi (step 0.1 within the profiled range), each the best
        of two chains of warm starts: outward from pi-hat and inward from the ends of the range.
        The two directions reach branches of the profile that a single sweep misses."""
        lo = 0.5 if self.label_rule == "pi>0.5" else 0.05
        hi = 0.5 if self.label_rule == "pi<0.5" else 0.95
        grid = [g for g in np.round(np.arange(lo, hi + 1e-9, 0.1), 10)
                if abs(g - self._pi) > 1e-9]
        best: dict[float, tuple[float, np.ndarray]] = {}

        def run(g, th0):
            f, th, info = self._fit_fixed_pi(g, th0)
            if info.converged and np.isfinite(f) and self._labelled(th, g) and \
                    (g not in best or f > best[g][0]):
                best[g] = (f, th)
            return th if info.converged else th0

        for side in ([g for g in grid if g > self._pi], [g for g in grid if g < self._pi][::-1]):
            th = self._theta_std
            for g in side:  # outward from pi-hat
                th = run(g, th)
            th = self._theta_std
            for g in side[::-1]:  # inward from the end of the range
                th = run(g, th)
        return {g: th for g, (_, th) in best.items()}

    def _labelled(self, theta, pi) -> bool:
        """Whether ``(theta, pi)`` satisfies the label rule. DETM's profile of pi is taken over
        the labelled parameter space: without it the profile has a mirror branch at 1 - pi
        (the same fit with the components swapped). The pi rules restrict the profiled range
        instead; the KL rule (Remark 1) needs KL(p_s||component 1) <= KL(p_s||component 2),
        with the EL weights at (theta, pi) as the estimate of p_s."""
        if self.restricted or self.label_rule != "kl":
            return True
        d = self.model.data
        p = len(d.names)
        a1, b1, a2, b2 = _el.split(theta, p)
        eta1, eta2 = a1 + d.Z @ b1, a2 + d.Z @ b2
        with np.errstate(over="ignore", invalid="ignore"):
            lam, D, ok = _el.solve_lambda(eta1, eta2, (d.m * pi / self.nobs,
                                                        d.m * (1 - pi) / self.nobs))
        if not ok:
            return True  # cannot tell: do not exclude
        w = 1.0 / (self.nobs * D)
        return bool(-(w @ eta1) <= -(w @ eta2))

    @cached_property
    def _profile(self) -> Profile:
        prof, self._profile_solutions = self._make_profile(quick=False)
        return prof

    def _probe_interval(self):
        """Compute the 95% profile interval, first with the quick one-start profile, then with
        the full one (which stays cached for ``conf_int_pi``). If either rises above the fit,
        return the binary-regression start ``v`` at its highest point, else None."""
        quick, solved = self._make_profile(quick=True)
        for prof, sol in ((quick, solved), (None, None)):
            if prof is None:
                prof = self._profile
                sol = self._profile_solutions
            try:
                prof.conf_int(0.95)
                continue
            except ProfileError:
                cache = {q: f for q, f in prof._cache.items() if np.isfinite(f)}
                q = max(cache, key=cache.get, default=None)
                if q is not None and cache[q] > self.objective:
                    return self.model._v_from(sol[q], q)
            except (ValueError, FloatingPointError):  # not computable: nothing to probe
                continue
        return None

    @cached_property
    def _branch_starts(self) -> list:
        """Other local maxima the starts found (distinct pi), in both labellings: the profile
        at fixed pi can follow another branch, reachable only from them."""
        obj = self.starts["objective"].to_numpy()
        p = len(self.model.data.names)
        out = []
        seen = [self._pi, 1 - self._pi]
        # the other local maxima, in both labellings (the label rule filters them)
        for i in obj.argsort()[::-1]:
            if obj.max() - obj[i] <= 1e-7 * max(1.0, abs(obj.max())):
                continue  # the fit itself (possibly in the other labelling)
            v = self._runs[i]["v"]
            theta, pi = self.model._theta_pi(v)
            if not np.all(np.isfinite(theta)) or min(abs(pi - q) for q in seen) < 1e-3:
                continue
            seen += [pi, 1 - pi]
            out.append(theta)
            if not self.restricted:
                out.append(self.model._theta_pi(np.r_[v[p + 1:], v[: p + 1]])[0])
            if len(out) >= 5:
                break
        return out

    def profile_pi(self) -> Profile:
        """Profile of the ELR function ``R*_N(pi) = 2{l_N(theta-hat) - l_N(theta-hat_pi)}``.

        Each point refits theta with pi fixed (exact Newton, warm-started from the nearest
        solved pi). The returned :class:`~puinfer.inference.Profile` gives ``.conf_int(level)``,
        ``.statistic(pi)``, ``.to_frame()`` and ``.plot(ax=None)`` (as seed 004, Figure 5).
        With the ridge penalty the penalised log-EL is profiled (the objective maximised).
        """
        return self._profile

    def conf_int_pi(self, level: float = 0.95) -> pd.Series:
        """Profile empirical-likelihood confidence interval for pi (seed 004, Theorem 3b).

        ``{pi : R*_N(pi) <= chi2_{1, level}}``, limits found by root-finding on each side of
        pi-hat; a limit that reaches 0 or 1 is reported as 0 or 1 (one-sided interval, flagged
        in ``.attrs``).

        Raises
        ------
        puinfer.inference.ProfileError
            If profiling finds a higher log-EL than the fit (the fit had not converged).
        """
        level = check_level(level)
        ci = self._profile.conf_int(level)
        extra = self._profile.outside_points(level, n=3)
        ci.attrs["interval"] = not extra
        if extra:
            warn_and_record(self.profile_warnings,
                            f"{self.model_name}: the {level:.0%} profile confidence set for pi is "
                            f"not an interval: R*(pi) is also below the cut-off at pi = "
                            f"{', '.join(f'{v:.3f}' for v in extra)} (a second local maximum "
                            "of the profile); the interval returned is the component around "
                            "pi-hat", ConfidenceSetWarning)
        if ci.attrs["lower_at_bound"]:
            ci["lower"] = 0.0
        if ci.attrs["upper_at_bound"]:
            ci["upper"] = 1.0
        return ci

    def test_pi(self, value: float) -> HypothesisTestResult:
        """Empirical likelihood-ratio test of H0: pi = value (``R*_N(value) ~ chi2_1``)."""
        value = float(value)
        if not 0 < value < 1:
            raise ValueError(f"value must be strictly inside (0, 1); got {value}")
        value = min(max(value, _PI_EPS), 1 - _PI_EPS)
        stat = self._profile.statistic(value)
        return chi2_test(stat, 1, null=f"pi = {value:g}",
                         method=f"Empirical likelihood-ratio test for pi ({self.model_name})")

    # -- the SCAR test (Theorem 3a) -------------------------------------------------------
    @cached_property
    def _setm(self) -> TiltResults:
        setm = SETM(None, None, _data=self.model.data, formula=self.model.formula,
                    _design=self.model._design)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return setm.fit(penalty=self.penalty_strength, **self._options)

    def test_scar(self, method: str = "asymptotic", *, n_boot: int = 200, rng=None,
                  smooth: float | str = "silverman", refit: str = "quick"
                  ) -> HypothesisTestResult:
        """Empirical likelihood-ratio test of SCAR: SETM (alpha1 = 0, beta1 = 0) against DETM.

        ``R_N = 2{l_N(DETM) - l_N(SETM)}`` (seed 004, eq. before Theorem 3), referred to
        ``chi2_p`` with ``p`` = number of slope columns (Theorem 3a).

        Parameters
        ----------
        method : {"asymptotic", "bootstrap"}
            ``"bootstrap"`` calibrates ``R_N`` by resampling from the fitted SETM (the null):
            source rows are drawn from the EL weights ``p_i`` (the estimate of ``p_s``) and
            target rows from ``p_i {pi-hat + (1 - pi-hat) w2_i}`` (the fitted target
            density), both models are refitted, and the p-value is
            ``(1 + #{R*_b >= R_N}) / (B + 1)``, ``B`` the number of usable resamples
            (resamples that cannot be fitted, e.g. with a constant column, are dropped and
            counted in ``extra``).
        n_boot : int
            Number of bootstrap resamples.
        rng : numpy.random.Generator or int, optional
            Random source for the bootstrap.
        smooth : "silverman" or float
            Smoothed bootstrap: each resampled row is jittered by ``N(0, h^2 S)``, ``S`` the
            EL-weighted source covariance, and the target negatives are the smoothed source
            tilted by ``exp(a* + beta*'x)``, ``beta* = beta2-hat / sqrt(1 + h^2)``: the
            resampling world lies exactly inside SETM whatever the distribution of the data,
            and (for Gaussian components exactly) is an affine image of the fitted null with
            the same pi and the same separation of the components. The jitter treats the
            columns as continuous; two-valued (dummy) columns are not jittered, and for
            other discrete columns ``smooth=0`` may suit better. ``h`` is in units of the
            source covariance; ``R_N`` is asymptotically pivotal, so any fixed ``h`` gives a
            consistent test and ``h`` only affects its small-sample accuracy. Default
            ``"silverman"``: Silverman's rule ``h = (4 / (p + 2))^(1/(p+4)) N^(-1/(p+4))``
            (``N = n + m``), the bandwidth whose size stayed at or below the nominal level
            (within Monte-Carlo error) in every design studied (warp-speed size at 5%,
            ``studies/results/README_detm.md``): seed 004's Gaussian design at
            n = m = 1000, p = 15: 3.7% (``chi2_p`` 8.2%; 3135 replicates); skewed gamma
            features, p = 15, n = m = 1000: 4.8% (``chi2_p`` 11.0%); p = 5, n = m = 300:
            5.0% (``chi2_p`` 8.3%). A fixed ``h = 0.4`` fits the Gaussian p = 15 design
            best (4.9%) but over-rejects on the gamma features (7.3-8.3%). The discrete
            bootstrap (``smooth=0``) reproduces ``chi2_p`` at p = 15 (8.6%, gamma 9.8%): its
            resamples repeat rows, which removes the near-separations that inflate ``R_N``.
        refit : {"quick", "full"}
            ``"quick"`` (default) refits each resample from the original solutions and a
            reduced grid of starts; ``"full"`` refits exactly as the observed fit (every start
            and the profile probe; about 20 times slower). With the discrete bootstrap both
            gave the same size (``studies/detm_studies.py bootwarp``, 400 replicates).
        """
        if self.restricted:
            raise ValueError("test_scar() is a method of a DETM fit (SETM is the null model)")
        res = lr_test(self._setm, self)
        res = HypothesisTestResult(res.statistic, res.df, res.pvalue,
                                   null="SCAR: p_t(x|y=1) = p_s(x|y=1) (alpha1 = 0, beta1 = 0)",
                                   method="Empirical likelihood-ratio test of SCAR "
                                          "(SETM vs DETM)", extra=res.extra)
        if method == "asymptotic":
            return res
        if method != "bootstrap":
            raise ValueError("method must be 'asymptotic' or 'bootstrap'")
        if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
            raise ValueError(f"n_boot must be a positive integer; got {n_boot!r}")
        if refit not in ("quick", "full"):
            raise ValueError(f"refit must be 'quick' or 'full'; got {refit!r}")
        h = self._bandwidth(smooth)
        stats_b = self._bootstrap_scar(int(n_boot), np.random.default_rng(rng), refit, h)
        ok = np.isfinite(stats_b)
        if not ok.any():
            return HypothesisTestResult.invalid("no bootstrap resample could be fitted",
                                                null=res.null, method=res.method, df=res.df)
        pval = (1 + np.sum(stats_b[ok] >= res.statistic)) / (ok.sum() + 1)
        extra = dict(res.extra)
        extra["bootstrap resamples"] = f"{ok.sum()} of {n_boot} usable"
        extra["bootstrap smoothing h"] = f"{h:.4g}" + (" (Silverman)" if smooth == "silverman"
                                                       else "")
        extra["asymptotic p-value"] = f"{res.pvalue:.4g}"
        extra["bootstrap 95% critical value"] = f"{np.quantile(stats_b[ok], 0.95):.4f}"
        kind = "smoothed EL bootstrap" if h else "EL bootstrap"
        return HypothesisTestResult(res.statistic, res.df, float(pval), null=res.null,
                                    method=f"{res.method}, {kind}",
                                    distribution="bootstrap", extra=extra)

    def _bandwidth(self, smooth) -> float:
        """Kernel bandwidth of the smoothed bootstrap (in units of the source covariance)."""
        d = self.model.data
        if isinstance(smooth, str):
            if smooth != "silverman":
                raise ValueError(f"smooth must be 'silverman' or a number >= 0; got {smooth!r}")
            p = len(d.names)
            return float((4 / (p + 2)) ** (1 / (p + 4)) * (d.n + d.m) ** (-1 / (p + 4)))
        if isinstance(smooth, bool) or not isinstance(smooth, (int, float, np.floating)) \
                or not np.isfinite(smooth) or smooth < 0:
            raise ValueError(f"smooth must be 'silverman' or a number >= 0; got {smooth!r}")
        return float(smooth)

    @cached_property
    def _bootstrap_world(self) -> dict:
        """The fitted SETM as a distribution on the pooled sample (read-only arrays).

        ``ps``: the EL weights ``p_i`` (source rows and target positives); ``pn``: ``p_i w2_i``
        (target negatives); ``pi``; ``pt = pi ps + (1 - pi) pn`` (the fitted target);
        ``L`` with ``L L' = S``, the EL-weighted source covariance with the rows and columns
        of two-valued (dummy) columns set to zero (they are not jittered); ``beta``: SETM's
        slopes on the scale of ``X``."""
        setm = self._setm
        d = self.model.data
        p = len(d.names)
        ps = setm.el_weights / setm.el_weights.sum()
        a2, b2 = setm._theta_std[p + 1], setm._theta_std[p + 2:]
        pn = ps * np.exp(a2 + d.Z @ b2)
        pn = pn / pn.sum()
        pt = setm.pi * ps + (1 - setm.pi) * pn
        Xc = d.X - ps @ d.X
        S = Xc.T @ (Xc * ps[:, None])
        smooth_cols = np.array([np.unique(d.X[:, j]).size > 2 for j in range(p)])
        S = S * np.outer(smooth_cols, smooth_cols)
        try:
            L = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:  # singular (dummy columns): L = V diag(sqrt(w))
            w, V = np.linalg.eigh(S)
            L = V * np.sqrt(np.clip(w, 0, None))
        world = dict(ps=ps, pn=pn, pt=pt / pt.sum(), pi=float(setm.pi), L=L, S=S,
                     beta=b2 / d.sd, smooth_cols=smooth_cols)
        for v in world.values():
            if isinstance(v, np.ndarray):
                v.flags.writeable = False
        return world

    def _bootstrap_null(self):
        """Source and target resampling probabilities of the discrete bootstrap."""
        w = self._bootstrap_world
        return w["ps"], w["pt"]

    def _bootstrap_sample(self, rng: np.random.Generator, smooth: float = 0.0):
        """One resample from the fitted null (SETM).

        Discrete (``smooth=0``): source rows and target positives (``Binomial(m, pi)`` of the
        target rows) are drawn from ``p_i``, target negatives from ``p_i w2_i``.

        Smoothed (``smooth = h > 0``): every row is jittered by ``N(0, V)``, ``V = h^2 S``, and
        the negatives are the smoothed source tilted by ``exp(a* + beta*'x)``. Because
        ``exp(b'x) phi(x; x_i, V) = exp(b'x_i + b'Vb / 2) phi(x; x_i + Vb, V)``, that is:
        negatives drawn from ``p_i exp(beta*'x_i)`` (normalised) and shifted by ``V beta*``,
        so the world lies exactly inside SETM whatever the distribution of the data. The tilt
        is ``beta* = beta / sqrt(1 + h^2)`` on the jittered columns: jittering inflates the within-component
        covariance by ``1 + h^2``, and this tilt inflates the distance between the component
        means by ``sqrt(1 + h^2)`` with it, so the world is (for Gaussian components exactly)
        an affine image of the fitted one, with the same separation of the components and the
        same pi; ``R_N`` is affine invariant. (Keeping ``beta`` would separate the components
        more than the fit does, and jittering without the shift less.)"""
        d = self.model.data
        w = self._bootstrap_world
        N = d.n + d.m
        m_pos = rng.binomial(d.m, w["pi"])
        if smooth:
            # jittered columns only: unjittered (dummy) columns keep their spread and tilt
            beta = np.where(w["smooth_cols"], w["beta"] / np.sqrt(1 + smooth ** 2), w["beta"])
            eta = d.X @ beta
            pn = w["ps"] * np.exp(eta - eta.max())
            pn = pn / pn.sum()
        else:
            pn = w["pn"]
        i_s = rng.choice(N, size=d.n, p=w["ps"])
        i_t = np.r_[rng.choice(N, size=m_pos, p=w["ps"]),
                    rng.choice(N, size=d.m - m_pos, p=pn)]
        Xs, Xt = d.X[i_s], d.X[i_t]
        if smooth:
            L = w["L"]
            Xs = Xs + smooth * rng.standard_normal(Xs.shape) @ L.T
            Xt = Xt + smooth * rng.standard_normal(Xt.shape) @ L.T
            Xt[m_pos:] += smooth ** 2 * (w["S"] @ beta)
        return Xs, Xt

    def _bootstrap_statistic(self, Xs, Xt, refit: str = "quick") -> float:
        """``R*`` on a resample (design rows ``Xs`` and ``Xt``). ``refit="full"`` fits both
        models exactly as the observed ones were fitted (every start and the profile probe),
        with the original solutions as extra starts; ``"quick"`` fits from the original
        solutions and a reduced grid of starts, without the probe."""
        setm = self._setm
        c = self.penalty_strength
        opts = self._options
        dat = _prepare(Xs, Xt, names=self.model.data.names)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s_opts = dict(setm_start=setm._v_free, grid=True)
            s_b = SETM(None, None, _data=dat).fit(penalty=c, check_separation=False,
                                                  _start_options=s_opts,
                                                  probe=refit == "full", **opts)
            extra = [("original DETM", self._v_free), ("resample SETM", s_b._v_free)]
            if refit == "full":
                d_opts = dict(extra_starts=extra)
            else:
                # DETM's own SETM starts are s_opts on the same data: reuse s_b's runs
                d_opts = dict(s_opts, extra_starts=extra, setm_runs=s_b._runs)
            d_b = DETM(None, None, _data=dat).fit(penalty=c, check_separation=False,
                                                  _start_options=d_opts,
                                                  probe=refit == "full", **opts)
        return max(0.0, 2 * (d_b.objective - s_b.objective))

    def _bootstrap_scar(self, n_boot: int, rng: np.random.Generator, refit: str = "quick",
                        smooth: float = 0.0) -> np.ndarray:
        out = np.full(n_boot, np.nan)
        for b in range(n_boot):
            Xs, Xt = self._bootstrap_sample(rng, smooth)
            try:
                out[b] = self._bootstrap_statistic(Xs, Xt, refit)
            except ValueError:  # e.g. a resample with a constant column
                continue
        return out

    def summary(self) -> Summary:
        """Coefficients with SE, z, p-value and Wald interval; pi; log-EL; convergence."""
        s = Summary(f"{self.model_name} results: positive-unlabeled data, "
                    "maximum empirical likelihood")
        s.add_info("Model", self.model_name + (" (SCAR)" if self.restricted else " (SAR)"))
        s.add_info("No. source (labeled)", self.n_source)
        s.add_info("No. target (unlabeled)", self.n_target)
        s.add_info("pi (mixture proportion)", self.pi)
        s.add_info("SE(pi)", float(self.bse["pi"]))
        try:
            ci = self.conf_int_pi(0.95)
            s.add_info("pi 95% profile CI", f"[{ci['lower']:.4f}, {ci['upper']:.4f}]"
                       + (" (one-sided)" if ci.attrs["lower_at_bound"]
                          or ci.attrs["upper_at_bound"] else ""))
        except ValueError as exc:  # e.g. ProfileError: reported, not hidden
            s.add_info("pi 95% profile CI", f"not available ({exc})")
        s.add_info("Log-EL", self.llf)
        if self.penalized:
            s.add_info("Penalised log-EL", self.llf_penalized)
        s.add_info("Penalty", f"ridge c={self.penalty_strength:.3g}" if self.penalized else "none")
        if self.ridge_binding is not None:
            s.add_info("Unpenalised maximum", "does not exist (ridge binding)"
                       if self.ridge_binding else "exists (ridge not binding)")
        s.add_info("Label rule", self.label_rule)
        s.add_info("Starts at best", f"{self.n_starts_at_best} of {len(self.starts)}")
        s.add_table("Coefficients (Wald inference from the observed information, Theorem 2)",
                    coef_table(self.params.drop("pi"), self.bse.drop("pi")))
        s.add_note(f"Convergence: {self.convergence.line()}")
        if not self.restricted:
            t = self.test_scar()
            s.add_note(f"SCAR test (SETM vs DETM): R_N = {t.statistic:.4f}, df = {t.df:g}, "
                       f"p-value = {format_pvalue(t.pvalue)}")
            s.add_note(f"KL(p_s || component 1) = {self.kl_divergences[0]:.4f}, "
                       f"KL(p_s || component 2) = {self.kl_divergences[1]:.4f}; labels "
                       + ("swapped" if self.labels_swapped else "as fitted")
                       + f" by rule {self.label_rule!r}")
        for cat, msg in self.warnings + getattr(self, "profile_warnings", []):
            s.add_note(f"Warning ({cat}): {msg}")
        return s
