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

from .._validation import as_float_matrix, check_binary, check_full_rank, warn_and_record
from ..base.optimize import newton_maximize
from ..base.results import ConvergenceInfo, LikelihoodResults, data_fingerprint
from ..exceptions import (
    BoundaryWarning,
    ConvergenceWarning,
    SeparationWarning,
    StartsDisagreeWarning,
)
from ..formula import build_design
from ..summary import Summary, coef_table
from . import _el

__all__ = ["DETM", "SETM", "TiltResults", "separated_target_points"]

LABEL_RULES = ("kl", "pi<0.5", "pi>0.5")


def separated_target_points(Zs: np.ndarray, Zt: np.ndarray) -> np.ndarray:
    """Indices of target points strictly separated from *all* source points by a hyperplane.

    Solves the linear programme ``max sum_j t_j`` subject to ``w'z_i <= c`` for every source
    point, ``t_j <= w'z_j - c`` for every target point, ``0 <= t_j <= 1``, ``|w| <= 1``. A
    target point with ``t_j > 0`` can be pushed to posterior one by a tilt running off to
    infinity, so the unpenalised maximum of the empirical likelihood does not exist.
    """
    from scipy import sparse
    from scipy.optimize import linprog

    n, p = Zs.shape
    m = Zt.shape[0]
    A = sparse.vstack([
        sparse.hstack([sparse.csr_matrix(Zs), sparse.csr_matrix(-np.ones((n, 1))),
                       sparse.csr_matrix((n, m))]),
        sparse.hstack([sparse.csr_matrix(-Zt), sparse.csr_matrix(np.ones((m, 1))),
                       sparse.eye(m)]),
    ]).tocsr()
    cost = np.r_[np.zeros(p + 1), -np.ones(m)]
    bounds = [(-1, 1)] * p + [(None, None)] + [(0, 1)] * m
    res = linprog(cost, A_ub=A, b_ub=np.zeros(n + m), bounds=bounds, method="highs")
    if res.status != 0:
        return np.empty(0, dtype=int)
    return np.flatnonzero(res.x[p + 1:] > 1e-7)


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
        X, _ = as_float_matrix(newdata, "newdata")
        if X.shape[1] != len(self.data.names):
            raise ValueError(f"newdata has {X.shape[1]} columns; the model has "
                             f"{len(self.data.names)}")
        return X

    # -- fitting --------------------------------------------------------------------------
    def fit(self, *, penalty="ridge", label_rule: str = "kl", maxiter: int = 200,
            tol: float = 1e-10, check_separation: bool | None = None) -> TiltResults:
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
            Run the separation linear programme. By default it runs when the fit shows the
            signs of separation (a target point with fitted source probability < e^-15, or a
            standardised slope above 10).

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
            c = float(penalty)
            if not c >= 0:
                raise ValueError("penalty strength must be non-negative")
        record: list = []
        runs = self._run_starts(c, maxiter, tol)
        best = max(runs, key=lambda r: r["f"])
        return TiltResults(self, best, runs, c=c, label_rule=label_rule, record=record,
                           check_separation=check_separation)

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
        """Slope and intercept of a plain logistic regression of target vs source."""
        d = self.data

        def fun(v, order):
            eta = d.X1 @ v
            f = eta @ d.y - np.logaddexp(0, eta).sum()
            if order == 0:
                return f
            pr = expit(eta)
            g = d.X1.T @ (d.y - pr)
            H = -(d.X1.T @ (d.X1 * (pr * (1 - pr))[:, None]))
            H -= np.diag(np.r_[0.0, np.full(d.Z.shape[1], 1e-3)]) * N_ridge
            return f, g, H

        N_ridge = 1.0
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

    def _run_starts(self, c, maxiter, tol, extra_starts=()):
        d = self.data
        p = d.Z.shape[1]
        bL = self._logistic_start()
        runs = []
        # SETM first: it is DETM's first start (b1 = 0)
        fun_r, expand_r = self._free_fun(c, True)
        sidx = np.r_[0, p + 1:2 * p + 2]
        starts_r, _ = self._starts(True, bL)
        setm_runs = []
        for label, v0 in starts_r:
            u, f, g, H, info = newton_maximize(fun_r, v0[sidx], maxiter=maxiter, tol=tol,
                                               method="Newton (SETM, pi free)")
            setm_runs.append(dict(label=f"SETM {label}", v=expand_r(u), f=f, info=info))
        if self._restricted:
            return setm_runs
        best_setm = max(setm_runs, key=lambda r: r["f"])
        fun, _ = self._free_fun(c, False)
        starts, _ = self._starts(False, bL)
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
    """

    def __init__(self, model: _TiltModel, best: dict, runs: list, *, c: float,
                 label_rule: str, record: list, check_separation):
        self.model = model
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
        self.df_model = (p + 2) if self.restricted else (2 * p + 3)
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
        with np.errstate(divide="ignore"):
            a1 = s1 - np.log(d.m * pi / d.n) if pi > 0 else -np.inf
            a2 = s2 - np.log(d.m * (1 - pi) / d.n) if pi < 1 else -np.inf
        if self.restricted:
            a1 = 0.0
        theta = np.r_[a1, b1, a2, b2]
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
        self.starts = pd.DataFrame({
            "start": [r["label"] for r in runs],
            "objective": [r["f"] for r in runs],
            "pi": [self._pi_of(r["v"]) for r in runs],
            "converged": [r["info"].converged for r in runs],
            "iterations": [r["info"].iterations for r in runs],
        })
        if not info.converged:
            warn_and_record(record, f"{self.model_name}: the optimiser did not converge "
                            f"({info.message})", ConvergenceWarning)
        self._check_starts(best)
        # covariance: inverse observed information of the profile log-EL (Theorem 2)
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
        tol = 1e-6 * max(1.0, abs(best["f"]))
        at_best = (best["f"] - st["objective"]) <= tol
        self.n_starts_at_best = int(at_best.sum())
        near = (~at_best) & ((best["f"] - st["objective"]) < 2.0) & \
            (np.abs(st["pi"] - self._pi) > 0.05)
        if near.any():
            alt = st.loc[near].sort_values("objective").iloc[-1]
            warn_and_record(self.warnings,
                            f"{self.model_name}: starts disagree: a local maximum with pi = "
                            f"{alt['pi']:.4f} is within {best['f'] - alt['objective']:.3f} "
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
        d = self.model.data
        p = len(d.names)
        s1, b1, s2, b2 = _el.split(v, p)
        logS_t = np.logaddexp(s1 + Zt @ b1, s2 + Zt @ b2)
        logP0_t = -np.logaddexp(0, logS_t)
        suspicious = bool(np.min(logP0_t) < -15 or max(np.abs(b1).max(initial=0),
                                                       np.abs(b2).max(initial=0)) > 10)
        self.separated_points = None
        if check is False or (check is None and not suspicious):
            return
        sep = separated_target_points(Zs, Zt)
        self.separated_points = sep
        big = max(np.abs(b1).max(initial=0), np.abs(b2).max(initial=0))
        if not sep.size and big > 25:
            warn_and_record(self.warnings,
                            f"{self.model_name}: standardised slopes reach {big:.3g}: the "
                            "samples are quasi-separated (e.g. a band of source points that "
                            "two tilts cut out), so the " + ("penalised estimate is driven by "
                            "the penalty" if c else "unpenalised maximum may not exist; refit "
                            "with penalty='ridge'"), SeparationWarning)
        if sep.size:
            msg = (f"{self.model_name}: {sep.size} target point(s) are separated from all "
                   "source points by a hyperplane, so the unpenalised empirical-likelihood "
                   "maximum does not exist (a tilt runs off to infinity). ")
            msg += ("The ridge penalty keeps the estimate finite; it depends on the penalty."
                    if c else "Refit with penalty='ridge'.")
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

    def summary(self) -> Summary:
        """Coefficients with SE, z, p-value and Wald interval; pi; log-EL; convergence."""
        s = Summary(f"{self.model_name} results: positive-unlabeled data, "
                    "maximum empirical likelihood")
        s.add_info("Model", self.model_name + (" (SCAR)" if self.restricted else " (SAR)"))
        s.add_info("No. source (labeled)", self.n_source)
        s.add_info("No. target (unlabeled)", self.n_target)
        s.add_info("pi (mixture proportion)", self.pi)
        s.add_info("SE(pi)", float(self.bse["pi"]))
        s.add_info("Log-EL", self.llf)
        if self.penalized:
            s.add_info("Penalised log-EL", self.llf_penalized)
        s.add_info("Penalty", f"ridge c={self.penalty_strength:.3g}" if self.penalized else "none")
        s.add_info("Label rule", self.label_rule)
        s.add_info("Starts at best", f"{self.n_starts_at_best} of {len(self.starts)}")
        s.add_table("Coefficients (Wald inference from the observed information, Theorem 2)",
                    coef_table(self.params.drop("pi"), self.bse.drop("pi")))
        s.add_note(f"Convergence: {self.convergence.line()}")
        for cat, msg in self.warnings:
            s.add_note(f"Warning ({cat}): {msg}")
        return s
