"""CalEM: probability calibration from a small clean set and a large set with biased labels.

Seed 000/001 (Sergazinov et al.), Algorithm 3 and Appendix A.2. A classifier's score ``s`` in
(0, 1) is observed on a small **control** set with clean labels ``y`` and on a large
**treated** set with labels ``z`` that the treatment can only turn from 0 into 1
(Assumption 1, eq. (8)): ``P(Y = 0 | Z = 1, x) = h(x)``, ``P(Y = 0 | Z = 0, x) = 1``.

Algorithm 3 fits ``g_theta0`` on the control rows and ``g_eta`` on the treated rows, sets
``h = (g_eta - g_theta) / g_eta`` (eq. (15), clipped to [0, 1]) and maximises the expected
complete-data log-likelihood (17)

    Q(theta | theta_t) = sum_control l(y; g_theta)
                       + sum_treated (1 - h_t) l(z; g_theta) + h_t l(0; g_theta),

a weighted logistic likelihood, until theta stops moving. Because ``z`` is 0/1, the two
treated terms are one soft-label term ``l(z (1 - h_t); g_theta)``: the M-step is a single
weighted logistic fit on control + treated rows with labels ``(y, z (1 - h_t))``, which is what
this module computes (it is exactly the fit on the paper's tripled data set D*; the tests check
it against statsmodels on D*).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from .._validation import as_float_vector, check_binary, warn_and_record
from ..base.results import ConvergenceInfo, LikelihoodResults, data_fingerprint
from ..exceptions import AssumptionWarning, ClippingWarning, ConvergenceWarning
from ..inference.hypothesis import HypothesisTestResult, chi2_test
from ..summary import Summary, coef_table
from .calibrators import (
    Calibrator,
    FittedCalibrator,
    FormulaCalibrator,
    logistic_newton,
    make_calibrator,
    weighted_loglik,
)

__all__ = ["CalEM", "CalEMResults"]


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------
class CalEM:
    """Calibration with a small clean (control) set and a large biased (treated) set.

    Parameters
    ----------
    score : array_like
        Classifier scores in [0, 1] for all rows (control and treated).
    label : array_like of 0/1
        The clean label ``y`` on control rows, the biased label ``z`` on treated rows.
    treated : array_like of 0/1 or bool
        1 (True) for treated rows (biased labels), 0 for control rows (clean labels).
    calibrator : str or Calibrator, default "spline"
        ``"logistic"`` (Platt), ``"beta"``, ``"spline"`` (natural cubic spline of
        ``logit(score)``), ``"isotonic"``, a right-hand-side formula in ``score`` such as
        ``"~ logit(score)"``, or a :class:`~puinfer.models.calibrators.Calibrator`.
    eps : float, default 1e-6
        Scores of exactly 0 or 1 are clipped to ``[eps, 1 - eps]`` (with a
        :class:`~puinfer.exceptions.ClippingWarning`) because the calibrators work on the
        log-odds of the score.
    **calibrator_options
        Options of a named calibrator, e.g. ``df=6`` or ``lam=1.0`` for ``"spline"``.

    Raises
    ------
    ValueError
        If a score lies outside [0, 1], a label or treatment indicator is not 0/1, the
        lengths differ, the control or the treated group is empty or has no positive labels,
        or the treated share of positives is clearly (one-sided two-proportion z-test,
        p < 1e-4) *below* the control's -- Assumption 1 (treatment only turns negatives into
        positives) is then contradicted by the data. A lower treated share that is not
        significant at that level gives an :class:`~puinfer.exceptions.AssumptionWarning`.

    Notes
    -----
    The basis of the calibrator (e.g. the spline knots) is learned once from the scores of
    *all* rows, so that the control-only fit, the biased fit ``g_eta`` and the CalEM fit use
    the same family of curves (needed for :meth:`CalEMResults.test_bias`).

    References
    ----------
    Sergazinov, R., Chen, R., Ji, C., Wu, J., Cociorva, D. and Brunzell, H. Improving model
    probability calibration by integration of large data sources with biased labels
    (seed 000), Algorithm 3, Appendix A.2.

    Examples
    --------
    >>> import numpy as np, puinfer as pu
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(0.02, 0.98, 3000); treated = rng.random(3000) < 0.8
    >>> y = rng.binomial(1, s); z = np.where(y == 1, 1, rng.binomial(1, 0.2 * s))
    >>> res = pu.CalEM(s, np.where(treated, z, y), treated, calibrator="logistic").fit()
    >>> bool(res.converged)
    True
    """

    def __init__(self, score, label, treated, *, calibrator="spline", eps: float = 1e-6,
                 **calibrator_options):
        self._index = score.index if isinstance(score, pd.Series) else None
        s = as_float_vector(score, "score")
        lab = check_binary(label, "label")
        tr = check_binary(treated, "treated").astype(bool)
        if not (s.size == lab.size == tr.size):
            raise ValueError(f"score, label and treated must have the same length; got "
                             f"{s.size}, {lab.size} and {tr.size}")
        bad = (s < 0) | (s > 1)
        if bad.any():
            raise ValueError(f"score must be in [0, 1]; {int(bad.sum())} value(s) are not "
                             f"(e.g. {s[bad][:3].tolist()})")
        self.calibrator: Calibrator = make_calibrator(calibrator, **calibrator_options)
        if not 0 < eps < 0.5:
            raise ValueError(f"eps must be in (0, 0.5); got {eps}")
        self.eps = float(eps)
        self.init_warnings: list = []
        edge = (s == 0) | (s == 1)
        if edge.any():
            warn_and_record(self.init_warnings,
                            f"{int(edge.sum())} score(s) equal to 0 or 1 were clipped to "
                            f"[{self.eps:g}, 1 - {self.eps:g}]", ClippingWarning)
            s = np.clip(s, self.eps, 1 - self.eps)
        n_c, n_t = int((~tr).sum()), int(tr.sum())
        self.n_control, self.n_treated = n_c, n_t
        if n_c == 0:
            raise ValueError("treated: the control group is empty (no row has treated == 0)")
        if n_t == 0:
            raise ValueError("treated: the treated group is empty (no row has treated == 1)")
        y, z = lab[~tr], lab[tr]
        if y.sum() == 0 or y.sum() == n_c:
            raise ValueError(f"label: the control group has only one class "
                             f"({int(y.sum())} positives of {n_c}); nothing to calibrate")
        if z.sum() == 0:
            raise ValueError("label: the treated group has no positive labels")
        self._check_assumption1(y, z)
        self.score = s
        self.label = lab
        self.treated = tr
        self.n_control, self.n_treated = n_c, n_t
        self.score_name = "score"
        self.formula = None

    def _check_assumption1(self, y, z):
        pc, pt = y.mean(), z.mean()
        if pt >= pc:
            return
        pool = (y.sum() + z.sum()) / (y.size + z.size)
        se = np.sqrt(pool * (1 - pool) * (1 / y.size + 1 / z.size))
        zstat = (pt - pc) / se
        p = float(stats.norm.cdf(zstat))
        msg = (f"the treated share of positives ({pt:.4f}) is below the control's ({pc:.4f}); "
               f"Assumption 1 of CalEM (treatment only turns negatives into positives, so "
               f"P(Z = 1 | x) >= P(Y = 1 | x)) ")
        if p < 1e-4:
            raise ValueError(msg + f"is violated (one-sided z-test p = {p:.2g}). Check that "
                             "'treated' marks the biased-label rows.")
        warn_and_record(self.init_warnings, msg + f"is in doubt (one-sided z-test p = {p:.2g})",
                        AssumptionWarning)

    @classmethod
    def from_formula(cls, formula: str, data: pd.DataFrame, *, treated, score: str | None = None,
                     eps: float = 1e-6):
        """Specify CalEM by a formula ``"label ~ <calibration map in the score>"``.

        Parameters
        ----------
        formula : str
            E.g. ``"y ~ logit(score)"`` (Platt), ``"y ~ np.log(score) + np.log1p(-score)"``
            (beta), ``"y ~ 0 + cr(logit(score), df=5)"`` (natural cubic spline). The left-hand
            side is the label column (clean on control rows, biased on treated rows).
        data : pandas.DataFrame
            The data; not modified.
        treated : str or array_like
            Column name (or values) of the 0/1 treatment indicator.
        score : str, optional
            The score column; inferred when the right-hand side names exactly one column.
        eps : float
            Clipping of scores equal to 0 or 1 (see :class:`CalEM`).

        Returns
        -------
        CalEM
        """
        if not isinstance(data, pd.DataFrame):
            raise TypeError("data must be a pandas DataFrame")
        if not isinstance(formula, str) or "~" not in formula:
            raise ValueError(f"formula must look like 'y ~ logit(score)'; got {formula!r}")
        lhs, rhs = (part.strip() for part in formula.split("~", 1))
        if not lhs:
            raise ValueError(f"formula {formula!r} needs the label on the left-hand side")
        if lhs not in data.columns:
            raise ValueError(f"formula: label column {lhs!r} is not in data")
        if score is None:
            names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", rhs))
            cols = [c for c in data.columns if c in names and c != lhs]
            if len(cols) != 1:
                raise ValueError(f"formula: cannot tell which column is the score (found "
                                 f"{cols}); pass score='column'")
            score = cols[0]
        if score not in data.columns:
            raise ValueError(f"score column {score!r} is not in data")
        if isinstance(treated, str) and treated not in data.columns:
            raise ValueError(f"treated column {treated!r} is not in data")
        tr = data[treated] if isinstance(treated, str) else treated
        cal = FormulaCalibrator("~" + rhs, score_name=score)
        model = cls(data[score], data[lhs], tr, calibrator=cal, eps=eps)
        model.score_name = score
        model.formula = formula
        return model

    # -----------------------------------------------------------------------------------------
    def fit(self, *, method: str = "auto", maxiter: int | None = None, tol: float = 1e-8,
            h=None) -> CalEMResults:
        """Run CalEM (Algorithm 3) and return a :class:`CalEMResults`.

        Parameters
        ----------
        method : {"auto", "newton", "em", "squarem"}, default "auto"
            How the fixed point of Algorithm 3 is found. ``"em"`` iterates Algorithm 3 exactly
            (E-step eq. (15), M-step = weighted logistic fit of eq. (17)). Its rate is about
            ``N / (n + N)``, slow when the treated set dominates. Algorithm 3 is an MM
            algorithm for the surrogate log-likelihood ``F`` (see :class:`CalEMResults`), whose
            stationary points are its fixed points, so ``"newton"`` (parametric calibrators)
            maximises ``F`` directly by a safeguarded Newton method (saddle-free steps where
            ``F`` is not locally concave, exact EM steps as the last resort) and certifies the
            result as a fixed point of Algorithm 3. ``"squarem"`` accelerates the EM map
            (Varadhan & Roland 2008; with ``"em"`` the choices for isotonic). ``"auto"``:
            Newton for parametric calibrators, SQUAREM for isotonic. All reach the same fixed
            point (tested).
        maxiter : int, optional
            Iteration limit (default 100 for Newton, 5000 for EM/SQUAREM map evaluations).
        tol : float, default 1e-8
            Stop when ``max |theta_{t+1} - theta_t| < tol * (1 + max |theta_t|)``.
        h : float or callable, optional
            A *known* treatment-effect curve: a constant in [0, 1] or a function of the score.
            Then there is nothing to iterate: one weighted fit of eq. (17) with this ``h``.
            ``h=0`` (no bias) gives the calibrator fitted on the pooled data.

        Returns
        -------
        CalEMResults
        """
        return _fit(self, method=method, maxiter=maxiter, tol=tol, h=h)

    def __repr__(self):
        return (f"CalEM({self.calibrator!r}, n_control={self.n_control}, "
                f"n_treated={self.n_treated})")


# ---------------------------------------------------------------------------------------------
# estimation
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _FitState:
    params: np.ndarray
    fitted: FittedCalibrator
    baseline: FittedCalibrator
    biased: FittedCalibrator
    g_eta_t: np.ndarray
    h_raw_t: np.ndarray
    objective: float
    surrogate: float
    trace: pd.DataFrame
    convergence: ConvergenceInfo
    method: str
    fixed_h: bool
    engine: object = None


def _soft_labels(z, g_t, g_eta_t):
    """E-step (eq. (15)-(16)): ``z (1 - h)`` with ``h = clip((g_eta - g)/g_eta, 0, 1)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        h_raw = np.where(g_eta_t > 0, (g_eta_t - g_t) / g_eta_t, 0.0)
    h = np.clip(h_raw, 0.0, 1.0)
    return z * (1.0 - h), h_raw


def _surrogate_treated(eta_t, z, eta_e):
    """Treated rows' part of the surrogate log-likelihood F (see :class:`CalEMResults`)."""
    log_g, log1m_g = -np.logaddexp(0.0, -eta_t), -np.logaddexp(0.0, eta_t)
    log_e, log1m_e = -np.logaddexp(0.0, -eta_e), -np.logaddexp(0.0, eta_e)
    e = expit(eta_e)
    c = 1.0 - 1.0 / np.maximum(e, 1e-300)
    free = eta_t < eta_e
    val = np.where(free, c * log1m_g, log_g + c * log1m_e - log_e)
    return float(np.sum(np.where(z == 1, val, log1m_g)))


def _fit(model: CalEM, *, method, maxiter, tol, h):
    cal = model.calibrator
    warns = list(model.init_warnings)
    s_c, s_t = model.score[~model.treated], model.score[model.treated]
    y, z = model.label[~model.treated], model.label[model.treated]
    basis = cal.make_basis(model.score)
    if method not in ("auto", "newton", "em", "squarem"):
        raise ValueError(f"method must be 'auto', 'newton', 'em' or 'squarem'; got {method!r}")
    if method == "auto":
        method = "newton" if cal.parametric else "squarem"
    if method == "newton" and not cal.parametric:
        raise ValueError("method='newton' needs a parametric calibrator; use 'squarem' or 'em' "
                         "for isotonic")
    if tol <= 0:
        raise ValueError(f"tol must be positive; got {tol}")

    if cal.parametric:
        X = cal.design(basis, np.concatenate([s_c, s_t]))
        nc = s_c.size
        P = cal.penalty(basis)
        baseline = cal._fit_design(basis, X[:nc], y, np.ones_like(y))
        biased = cal._fit_design(basis, X[nc:], z, np.ones_like(z),
                                 start=baseline.params.to_numpy())
        eta_e_t = X[nc:] @ biased.params.to_numpy()
        engine = _ParametricEngine(cal, basis, X, nc, y, z, eta_e_t, P)
        g_eta_t = engine.g_eta_t
    else:
        baseline = cal._fit_arrays(basis, s_c, y, np.ones_like(y))
        biased = cal._fit_arrays(basis, s_t, z, np.ones_like(z))
        g_eta_t = biased.predict(s_t)
        engine = _IsotonicEngine(cal, basis, s_c, s_t, y, z, g_eta_t)
        ge = np.clip(g_eta_t, cal.eps, 1 - cal.eps)
        engine.eta_e_t = np.log(ge) - np.log1p(-ge)
    from .. import exceptions as _exc

    for f in (baseline, biased):
        for cat, msg in f.warnings:
            warn_and_record(warns, f"{'control' if f is baseline else 'treated'} fit: {msg}",
                            getattr(_exc, cat, _exc.PuinferWarning))

    if h is not None:
        h_t = _known_h(h, s_t)
        a = z * (1.0 - h_t)
        theta = engine.mstep_labels(a, start=engine.theta_of(baseline))
        q = engine.q(theta, a)
        conv = ConvergenceInfo(True, 0, "known h: one weighted fit of eq. (17)",
                               "no iteration needed", np.array([q]))
        trace = pd.DataFrame({"objective": [q], "step": [np.nan]}, index=pd.Index([0],
                                                                              name="iteration"))
        state_method, fixed = "known h", True
    else:
        theta0 = engine.theta_of(baseline)
        if method == "newton":
            theta, trace, conv = engine.newton(theta0, maxiter or 100, tol)
        else:
            theta, trace, conv = engine.em(theta0, maxiter or 5000, tol,
                                           accelerate=(method == "squarem"))
        state_method, fixed = method, False
        if not conv.converged:
            warn_and_record(warns, f"CalEM ({method}) did not converge: {conv.message}",
                            ConvergenceWarning)
    fitted = engine.fitted(theta)
    g_t = fitted.predict(s_t) if not cal.parametric else expit(engine.Xt @ theta)
    a, h_raw = _soft_labels(z, g_t, g_eta_t)
    if fixed:
        a = z * (1.0 - _known_h(h, s_t))
    objective = engine.q(theta, a)
    surrogate = engine.surrogate(theta)  # the sandwich is computed on first use (cov_params)
    state = _FitState(theta, fitted, baseline, biased, g_eta_t, h_raw, objective, surrogate,
                      trace, conv, state_method, fixed, engine)
    return CalEMResults(model, basis, state, warns)


def _known_h(h, s_t):
    if callable(h):
        ht = as_float_vector(h(s_t), "h(score)")
        if ht.size != s_t.size:
            raise ValueError("h(score) must return one value per score")
    else:
        ht = np.full(s_t.size, float(h))
    if np.any((ht < 0) | (ht > 1)):
        raise ValueError("h must be in [0, 1]")
    return ht


def _softplus(x):
    """``log(1 + exp(x))``, stable and faster than ``np.logaddexp(0, x)``."""
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


class _ParametricEngine:
    """Fixed-point machinery for ``g_theta = expit(B(s)' theta)``.

    Rows are stacked control first, then treated. One call of :meth:`evaluate` makes one pass
    over the data and returns everything an iteration needs.
    """

    def __init__(self, cal, basis, X, nc, y, z, eta_e_t, P):
        self.cal, self.basis = cal, basis
        self.X = np.ascontiguousarray(X)
        self.nc = nc
        self.y, self.z = y, z
        self.eta_e_t = eta_e_t
        self.g_eta_t = expit(eta_e_t)
        self.P = np.zeros((X.shape[1],) * 2) if P is None else P
        self.w = np.ones(X.shape[0])
        self.z1 = z == 1
        e = self.g_eta_t
        log_e, log1m_e = -_softplus(-eta_e_t), -_softplus(eta_e_t)
        self._c = 1.0 - 1.0 / np.maximum(e, 1e-300)       # phi below the kink
        self._k = self._c * log1m_e - log_e                 # phi's constant above it

    @property
    def Xc(self):
        return self.X[:self.nc]

    @property
    def Xt(self):
        return self.X[self.nc:]

    def theta_of(self, fitted):
        return fitted.params.to_numpy()

    def evaluate(self, theta, *, grad=True, jac=False):
        """F, (17), E-step labels, gradient G of F and (optionally) its Hessian J at theta."""
        nc = self.nc
        eta = self.X @ theta
        log1m = -_softplus(eta)                     # log(1 - g)
        eta_t, log1m_t = eta[nc:], log1m[nc:]
        free = self.z1 & (eta_t < self.eta_e_t)     # treated positives with h > 0 (unclipped)
        pen = 0.5 * theta @ self.P @ theta
        F = (float(self.y @ eta[:nc] + log1m[:nc].sum())
             + float(np.where(self.z1, np.where(free, self._c * log1m_t,
                                                eta_t + log1m_t + self._k), log1m_t).sum())
             - pen)
        out = {"F": F, "eta": eta, "free": free}
        if grad or jac:
            p = np.exp(eta + log1m)                 # g
            pt = p[nc:]
            a = np.where(free, pt / self.g_eta_t, self.z)   # z min(1, g / g_eta)
            lab = np.concatenate([self.y, a])
            out["a"] = a
            out["Q"] = float(lab @ eta + log1m.sum()) - pen
            out["G"] = self.X.T @ (lab - p) - self.P @ theta
            if jac:
                d = p * (1.0 - p)
                d[nc:] -= np.where(free, pt * (1.0 - pt) / self.g_eta_t, 0.0)
                out["J"] = -(self.X.T @ (self.X * d[:, None])) - self.P
                out["d_q"] = p * (1.0 - p)
        return out

    def q(self, theta, a):
        """Objective (17) (penalised as Algorithm 2) at ``theta`` with E-step labels ``a``."""
        eta = self.X @ theta
        return weighted_loglik(eta, np.concatenate([self.y, a]), self.w) \
            - 0.5 * theta @ self.P @ theta

    def estep(self, theta):
        g_t = expit(self.Xt @ theta)
        return _soft_labels(self.z, g_t, self.g_eta_t)

    def surrogate(self, theta):
        """F(theta): the function Algorithm 3 increases at every EM step (an MM algorithm)."""
        return self.evaluate(theta, grad=False)["F"]

    def mstep_labels(self, a, start):
        nf = logistic_newton(self.X, np.concatenate([self.y, a]), self.w,
                             penalty=self.P if np.any(self.P) else None, start=start)
        return nf.params

    def mstep(self, theta):
        a, _ = self.estep(theta)
        return self.mstep_labels(a, theta), a

    def fitted(self, theta):
        names = self.cal.param_names(self.basis)
        ev = self.evaluate(theta)
        return FittedCalibrator(self.cal, self.basis, pd.Series(theta, index=names),
                                ev["Q"] + 0.5 * theta @ self.P @ theta, int(self.X.shape[0]),
                                float(self.X.shape[0]), float(len(theta)), True, 0, None, [])

    # G(theta) = sum_c (y - g) x + sum_t (z min(1, g/g_eta) - g) x - P theta: the M-step score
    # with the E-step plugged in; its roots are the fixed points of Algorithm 3.
    def residual(self, theta):
        return self.evaluate(theta)["G"]

    def jacobian(self, theta):
        return self.evaluate(theta, jac=True)["J"]

    def newton(self, theta0, maxiter, tol):
        """Safeguarded Newton ascent on the surrogate F (whose gradient is G).

        Each iteration tries the Newton step ``-J^{-1} G`` when ``J`` (the Hessian of F) is
        negative definite, else the saddle-free Newton step ``|J|^{-1} G`` (absolute
        eigenvalues), each with Armijo backtracking on F; if neither raises F, the
        gradient-EM direction ``H_Q^{-1} G`` with step doubling; and as a last resort an exact
        EM step of Algorithm 3, which never decreases F. So F rises monotonically and the
        iterates reach a fixed point of Algorithm 3; near it the Newton steps converge
        quadratically.
        """
        theta = np.asarray(theta0, dtype=float).copy()
        ev = self.evaluate(theta, jac=True)
        rows, converged = [], False
        rows.append((ev["Q"], ev["F"], np.nan, float(np.max(np.abs(ev["G"]))), ""))
        it, n_em = 0, 0
        for it in range(1, maxiter + 1):  # noqa: B007 (it is reported)
            G, J, f = ev["G"], ev["J"], ev["F"]
            lam, V = np.linalg.eigh(-J)
            scale = max(float(np.abs(lam).max()), 1e-300)
            concave = lam.min() > 1e-10 * scale
            lam_abs = np.maximum(np.abs(lam), 1e-8 * scale)
            step = V @ ((V.T @ G) / lam_abs)
            kind = "newton" if concave else "saddle-free"
            slope = float(G @ step)
            cand = None
            tstep = 1.0
            while tstep >= 1e-4:
                c = theta + tstep * step
                fc = self.surrogate(c)
                if fc >= f + 1e-4 * tstep * slope:
                    cand = c
                    break
                tstep *= 0.25
            full = tstep == 1.0
            if cand is None:  # gradient-EM direction with step doubling
                HQ = self.X.T @ (self.X * ev["d_q"][:, None]) + self.P
                dq = np.linalg.solve(HQ, G)
                best, fbest, tstep = None, f, 1.0
                while tstep <= 1024:
                    c = theta + tstep * dq
                    fc = self.surrogate(c)
                    if fc <= fbest:
                        break
                    best, fbest = c, fc
                    tstep *= 2
                if best is not None:
                    cand, kind = best, "gradient-em"
            if cand is None:  # exact EM step: never decreases F
                cand, _ = self.mstep(theta)
                kind = "em"
                n_em += 1
            delta = float(np.max(np.abs(cand - theta)))
            theta = cand
            ev = self.evaluate(theta, jac=True)
            rows.append((ev["Q"], ev["F"], delta, float(np.max(np.abs(ev["G"]))), kind))
            small = delta < tol * (1 + np.max(np.abs(theta)))
            # after a small *full* Newton step the error is of order delta^2
            if kind == "newton" and full and small:
                converged = True
                break
            if small:  # a small damped or EM step: stop if theta is a fixed point (|H_Q^-1 G|)
                HQ = self.X.T @ (self.X * ev["d_q"][:, None]) + self.P
                if np.max(np.abs(np.linalg.solve(HQ, ev["G"]))) < 0.01 * tol * (
                        1 + np.max(np.abs(theta))):
                    converged = True
                    break
        # certify: the EM map must leave the solution in place. To first order
        # M(theta) - theta = H_Q^{-1} G (one Newton step on (17) from theta).
        HQ = self.X.T @ (self.X * ev["d_q"][:, None]) + self.P
        fp = float(np.max(np.abs(np.linalg.solve(HQ, ev["G"]))))
        msg = f"fixed-point residual |M(theta) - theta| = {fp:.2e}"
        if n_em:
            msg += f"; {n_em} safeguarding EM steps"
        trace = pd.DataFrame(rows, columns=["objective", "surrogate_llf", "step", "score_norm",
                                            "step_kind"])
        if fp > 10 * tol * (1 + np.max(np.abs(theta))):
            # a solution on a kink of G (a treated row with g = g_eta exactly) stalls Newton:
            # finish with the EM map itself, SQUAREM-accelerated
            theta, tr2, c2 = _em_loop(self, theta, 2000, tol, accelerate=True)
            tr2 = tr2.iloc[:-1].assign(step_kind="squarem")[["objective", "surrogate_llf",
                                                            "step", "step_kind"]]
            trace = pd.concat([trace, tr2], ignore_index=True)
            converged = c2.converged
            it += c2.iterations
            HQ = self.X.T @ (self.X * self.evaluate(theta, jac=True)["d_q"][:, None]) + self.P
            fp = float(np.max(np.abs(np.linalg.solve(HQ, self.residual(theta)))))
            msg = (f"fixed-point residual |M(theta) - theta| = {fp:.2e} after "
                   f"{c2.iterations} SQUAREM polishing steps")
        if fp > max(1e-6, 100 * tol) * (1 + np.max(np.abs(theta))):
            converged = False
        trace.index.name = "iteration"
        conv = ConvergenceInfo(converged, it, "Newton ascent on F (fixed point of Algorithm 3)",
                               msg, trace["surrogate_llf"].to_numpy(),
                               float(np.max(np.abs(self.residual(theta)))))
        return theta, trace, conv

    def em(self, theta0, maxiter, tol, accelerate):
        return _em_loop(self, theta0, maxiter, tol, accelerate)

    def sandwich(self, theta):
        """Sandwich covariance of the CalEM fixed point as a stacked M-estimator in (theta, eta).

        Estimating equations: ``U_eta = sum_t (z - g_eta) x`` (the biased fit) and
        ``U_theta = G(theta, eta)`` (the fixed-point equation). ``cov = A^-1 B A^-T`` with
        ``A = -dU/d(theta, eta)`` and ``B = sum_j psi_j psi_j'`` over rows.
        """
        k = theta.size
        Xt, Xc, z, y = self.Xt, self.Xc, self.z, self.y
        ge = self.g_eta_t
        ev = self.evaluate(theta, jac=True)
        p = np.exp(ev["eta"] - _softplus(ev["eta"]))
        pc, pt = p[:self.nc], p[self.nc:]
        a, free = ev["a"], ev["free"]
        A = np.zeros((2 * k, 2 * k))
        A[:k, :k] = -ev["J"]
        # d U_theta / d eta = sum_t z 1{free} g d(1/g_eta)/d eta x x' = -(...)(1 - g_eta)/g_eta
        d = np.where(free, pt * (1 - ge) / ge, 0.0)
        A[:k, k:] = Xt.T @ (Xt * d[:, None])
        A[k:, k:] = Xt.T @ (Xt * (ge * (1 - ge))[:, None]) + self.P
        psi_c = Xc * (y - pc)[:, None]
        psi_t = np.hstack([Xt * (a - pt)[:, None], Xt * (z - ge)[:, None]])
        B = psi_t.T @ psi_t
        B[:k, :k] += psi_c.T @ psi_c
        try:
            Ainv = np.linalg.inv(A)
        except np.linalg.LinAlgError:
            return None
        return (Ainv @ B @ Ainv.T)[:k, :k]


class _IsotonicEngine:
    """EM map for the isotonic calibrator: theta = fitted values at the distinct scores."""

    def __init__(self, cal, basis, s_c, s_t, y, z, g_eta_t):
        self.cal, self.basis = cal, basis
        s = np.concatenate([s_c, s_t])
        self.xs, self.inv = np.unique(s, return_inverse=True)
        self.ws = np.bincount(self.inv, minlength=self.xs.size).astype(float)
        self.nc = s_c.size
        self.y, self.z, self.g_eta_t = y, z, g_eta_t
        self.w = np.ones(s.size)
        self.P = None

    def theta_of(self, fitted):
        return np.interp(self.xs, fitted.params.index.to_numpy(dtype=float),
                         fitted.params.to_numpy())

    def mstep_labels(self, a, start=None):
        from scipy.optimize import isotonic_regression

        lab = np.concatenate([self.y, a])
        ys = np.bincount(self.inv, weights=lab, minlength=self.xs.size) / self.ws
        return np.clip(isotonic_regression(ys, weights=self.ws, increasing=True).x, 0, 1)

    def estep(self, theta):
        g_t = theta[self.inv[self.nc:]]
        return _soft_labels(self.z, g_t, self.g_eta_t)

    def mstep(self, theta):
        a, _ = self.estep(theta)
        return self.mstep_labels(a), a

    def surrogate(self, theta):
        """F(theta) for the isotonic map (probabilities clipped to [eps, 1 - eps])."""
        p = np.clip(theta[self.inv], self.cal.eps, 1 - self.cal.eps)
        eta = np.log(p) - np.log1p(-p)
        return (weighted_loglik(eta[:self.nc], self.y, self.w[:self.nc])
                + _surrogate_treated(eta[self.nc:], self.z, self.eta_e_t))

    def q(self, theta, a):
        p = np.clip(theta[self.inv], self.cal.eps, 1 - self.cal.eps)
        lab = np.concatenate([self.y, a])
        return float(np.sum(lab * np.log(p) + (1 - lab) * np.log1p(-p)))

    def fitted(self, theta):
        a, _ = self.estep(theta)
        params = pd.Series(theta, index=pd.Index(self.xs, name="score"), name="g")
        return FittedCalibrator(self.cal, self.basis, params, self.q(theta, a), self.w.size,
                                float(self.w.size), float(np.unique(theta).size), True, 0,
                                None, [])

    def em(self, theta0, maxiter, tol, accelerate):
        return _em_loop(self, theta0, maxiter, tol, accelerate)


def _em_loop(engine, theta0, maxiter, tol, accelerate):
    """Algorithm 3's iteration, optionally accelerated by SQUAREM (scheme S3).

    Each row of the trace holds ``Q(theta_t | theta_t)`` (objective (17) at the current
    iterate, E-step at the same iterate), ``Q(theta_{t+1} | theta_t)`` (after the M-step;
    never below the former: the M-step maximises (17)), and the step size.
    """
    theta = np.asarray(theta0, dtype=float).copy()
    rows, converged, evals = [], False, 0
    it = 0
    while evals < maxiter:
        it += 1
        a0, _ = engine.estep(theta)
        q_old = engine.q(theta, a0)
        t1 = engine.mstep_labels(a0, theta)
        evals += 1
        q_new = engine.q(t1, a0)
        new = t1
        if accelerate and evals < maxiter:
            t2, _ = engine.mstep(t1)
            evals += 1
            r, v = t1 - theta, t2 - 2 * t1 + theta
            nv = np.sqrt(v @ v)
            if nv > 0:
                alpha = -max(1.0, np.sqrt(r @ r) / nv)
                ext = theta - 2 * alpha * r + alpha**2 * v
                if engine.P is None and not engine.cal.parametric:
                    ext = np.clip(ext, 0.0, 1.0)
                new, _ = engine.mstep(ext)  # stabilising EM step
                evals += 1
            else:
                new = t2
        step = float(np.max(np.abs(new - theta)))
        rows.append((q_old, q_new, engine.surrogate(theta), step))
        theta = new
        if step < tol * (1 + np.max(np.abs(theta))):
            converged = True
            break
    rows.append((np.nan, np.nan, engine.surrogate(theta), np.nan))
    trace = pd.DataFrame(rows, columns=["objective", "objective_after_mstep", "surrogate_llf",
                                        "step"])
    trace.index.name = "iteration"
    name = "SQUAREM-accelerated EM (Algorithm 3)" if accelerate else "EM (Algorithm 3)"
    msg = f"{evals} EM-map evaluations" + ("" if converged else f"; limit {maxiter} reached")
    conv = ConvergenceInfo(converged, it, name, msg, trace["surrogate_llf"].to_numpy())
    return theta, trace, conv


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
class CalEMResults(LikelihoodResults):
    """Results of :meth:`CalEM.fit`.

    The calibrated map ``g_theta`` (:meth:`predict`), the control-only fit (:attr:`baseline`),
    the fit to the biased labels ``g_eta`` (:attr:`biased`), the treatment-effect curve ``h``
    (:meth:`treatment_effect`), the iteration trace, convergence, the likelihood-ratio test of
    "treated labels carry no bias" (:meth:`test_bias`), metrics and plots.

    ``objective_17`` is the objective (17) at the fixed point, ``Q(theta_hat | theta_hat)``, the
    expected complete-data log-likelihood (penalised for a penalised spline). ``llf`` is the
    surrogate log-likelihood ``F(theta)`` that Algorithm 3 increases at every iteration:

        F(theta) = sum_control l(y; g) + sum_{treated, z=0} log(1 - g)
                   + sum_{treated, z=1} phi(g; g_eta),
        phi(g; e) = (1 - 1/e) log(1 - g)                          if g < e,
                    log g + (1 - 1/e) log(1 - e) - log e            if g >= e.

    ``F`` is continuously differentiable, its gradient is the M-step score with the E-step
    plugged in (so the fixed points of Algorithm 3 are its stationary points), and
    ``F(theta) - Q(theta | theta_t)`` is minimised at ``theta = theta_t`` row by row, so
    every EM step satisfies ``F(theta_{t+1}) - F(theta_t) >= Q(theta_{t+1} | theta_t) -
    Q(theta_t | theta_t) >= 0``: Algorithm 3 is an MM algorithm for ``F`` (this makes the
    ascent of Appendix A.1 exact rather than conditional on assumption (3)). The sequence of
    (17) values ``Q(theta_t | theta_t)`` itself need not increase, because the E-step labels
    change between iterations. Neither quantity is an observed-data log-likelihood, so
    AIC/BIC of CalEM results are not meaningful.
    Standard errors (parametric calibrators) are the sandwich of the stacked estimating
    equations of ``(theta, eta)`` (see :meth:`cov_params`); the naive inverse Hessian of (17)
    would ignore both the missing information and the estimated ``g_eta``. The estimating
    equation has a kink where ``h`` reaches 0 (``g_theta = g_eta``); when many treated rows sit
    there (the clean and the biased curves coincide over a range of scores) the estimator is
    not asymptotically normal there and the sandwich is only a rough guide (a Monte-Carlo test
    checks it where ``h`` is interior).

    Where the treated set helps. With ``h`` strictly inside (0, 1) the treated part of the
    fixed-point equation is ``sum_t (1 - h_j)(z_j - g_eta_j) x_j``; ``g_eta``'s own score
    equations make ``sum_t (z_j - g_eta_j) x_j = 0``, so the treated rows contribute only
    through the *variation* of ``1 - h`` across rows (if ``h`` is constant, CalEM returns the
    control-only fit exactly -- tested) and through the rows where ``h`` is clipped at 0,
    whose positives count as clean positives. This is eq. (9): under Assumption 1 alone the
    biased labels bound the clean curve from above (``g <= g_eta``) but do not identify it
    where ``h > 0``. The gains of seed 000's Table 1 come from the regions where ``h`` is
    near 0.
    """

    model_name = "CalEM"
    llf_kind = "CalEM surrogate log-likelihood F"

    def __init__(self, model: CalEM, basis, state: _FitState, warnings: list):
        self.model = model
        self.basis = basis
        self._state = state
        self.warnings = list(warnings)
        fitted = state.fitted
        self._fitted = fitted
        self._params = fitted.params.copy()
        if model.calibrator.parametric:
            self._params.name = "coef"
        self.llf = float(state.surrogate)
        self._objective_17 = float(state.objective)
        self.nobs = int(model.score.size)
        self.df_model = float(fitted.df_model)
        self.convergence = state.convergence
        self.data_fingerprint = data_fingerprint(model.score, model.label, model.treated)
        self.method = state.method
        h = np.clip(state.h_raw_t, 0, 1)
        zpos = model.label[model.treated] == 1
        self._share_clipped = float(np.mean((state.h_raw_t < 0) | (state.h_raw_t > 1)))
        self._share_clipped_pos = float(np.mean(
            (state.h_raw_t[zpos] < 0) | (state.h_raw_t[zpos] > 1))) if zpos.any() else np.nan
        self._mean_h_pos = float(h[zpos].mean()) if zpos.any() else np.nan

    # -- estimates ---------------------------------------------------------------------------
    @cached_property
    def _cov(self):
        """Sandwich covariance (parametric calibrators after EM; None otherwise)."""
        st = self._state
        if not self.model.calibrator.parametric or st.fixed_h:
            return None
        cov = st.engine.sandwich(st.params)
        if cov is None:
            return None
        return pd.DataFrame(cov, index=self._params.index, columns=self._params.index)

    @property
    def objective_17(self) -> float:
        """Objective (17) at the solution, ``Q(theta_hat | theta_hat)``."""
        return self._objective_17

    @property
    def calibrator(self) -> FittedCalibrator:
        """The CalEM calibration map as a fitted calibrator."""
        return self._fitted

    @property
    def baseline(self) -> FittedCalibrator:
        """The calibrator fitted on the control rows only (``g_theta0``, the baseline)."""
        return self._state.baseline

    @property
    def biased(self) -> FittedCalibrator:
        """The calibrator fitted on the treated rows with their biased labels (``g_eta``)."""
        return self._state.biased

    @cached_property
    def pooled(self) -> FittedCalibrator:
        """The calibrator fitted on all rows as if the treated labels were clean (h = 0)."""
        m = self.model
        return m.calibrator.fit(m.score, m.label, basis=self.basis)

    @property
    def trace(self) -> pd.DataFrame:
        """The iteration trace: objective (17) at each iterate, step size, ..."""
        return self._state.trace.copy()

    @property
    def share_clipped(self) -> float:
        """Share of treated rows whose raw ``h = (g_eta - g)/g_eta`` fell outside [0, 1]."""
        return self._share_clipped

    @property
    def share_clipped_positives(self) -> float:
        """As :attr:`share_clipped`, among treated rows with ``z = 1`` (the only ones affected)."""
        return self._share_clipped_pos

    @property
    def mean_h_treated_positives(self) -> float:
        """Mean estimated ``h`` over treated positives: the share of their positives
        attributed to the treatment."""
        return self._mean_h_pos

    @property
    def n_control(self) -> int:
        """Number of control rows (clean labels)."""
        return self.model.n_control

    @property
    def n_treated(self) -> int:
        """Number of treated rows (biased labels)."""
        return self.model.n_treated

    # -- prediction --------------------------------------------------------------------------
    def _score_in(self, score):
        if score is None:
            return self.model.score, self.model._index
        idx = score.index if isinstance(score, pd.Series) else None
        s = as_float_vector(score, "score")
        bad = (s < 0) | (s > 1)
        if bad.any():
            raise ValueError(f"score must be in [0, 1]; {int(bad.sum())} value(s) are not")
        return s, idx

    @staticmethod
    def _out(values, idx, name):
        return pd.Series(values, index=idx, name=name) if idx is not None else values

    def predict(self, score=None):
        """Calibrated probability ``g_theta_hat(score)`` (default: the model's scores).

        A pandas Series in gives a Series (same index) out; an array gives an array.
        """
        s, idx = self._score_in(score)
        return self._out(self._fitted.predict(s), idx, "calem")

    def predict_baseline(self, score=None):
        """The control-only calibration ``g_theta0(score)``."""
        s, idx = self._score_in(score)
        return self._out(self.baseline.predict(s), idx, "baseline")

    def predict_biased(self, score=None):
        """The biased-label calibration ``g_eta(score)``."""
        s, idx = self._score_in(score)
        return self._out(self.biased.predict(s), idx, "biased")

    def treatment_effect(self, score=None, *, clip: bool = True):
        """Estimated ``h(score) = (g_eta - g_theta)/g_eta`` (eq. (15)), the probability that a
        treated positive would have been negative without treatment; clipped to [0, 1] unless
        ``clip=False``."""
        s, idx = self._score_in(score)
        ge = self.biased.predict(s)
        g = self._fitted.predict(s)
        with np.errstate(divide="ignore", invalid="ignore"):
            h = np.where(ge > 0, (ge - g) / ge, 0.0)
        if clip:
            h = np.clip(h, 0, 1)
        return self._out(h, idx, "h")

    # -- inference ---------------------------------------------------------------------------
    def test_bias(self) -> HypothesisTestResult:
        """Likelihood-ratio test that the treated labels carry no bias.

        H0: control and treated labels follow one calibration curve (``h = 0``); the
        alternative fits separate curves ``g_theta0`` (control) and ``g_eta`` (treated) of the
        same family. ``LR = 2 {l_c(theta0) + l_t(eta) - l_pooled}``, chi-square with
        ``k`` (number of parameters) degrees of freedom. For a penalised spline the
        effective degrees of freedom are used (approximate); for isotonic calibration there is
        no chi-square reference and the result is marked invalid.
        """
        null = "treated labels carry no bias (one calibration curve for control and treated)"
        method = "Likelihood-ratio test of no label bias"
        cal = self.model.calibrator
        if not cal.parametric:
            return HypothesisTestResult.invalid(
                "isotonic calibration has no chi-square reference distribution; use a "
                "parametric calibrator", null=null, method=method)
        pooled = self.pooled
        stat = 2.0 * (self.baseline.llf + self.biased.llf - pooled.llf)
        df = self.baseline.df_model + self.biased.df_model - pooled.df_model
        extra = {"llf (control, treated, pooled)":
                 f"{self.baseline.llf:.4f}, {self.biased.llf:.4f}, {pooled.llf:.4f}"}
        if cal.penalty(self.basis) is not None:
            extra["note"] = "penalised spline: effective degrees of freedom (approximate)"
        return chi2_test(max(stat, 0.0), df, null=null, method=method, extra=extra)

    # -- metrics and plots -------------------------------------------------------------------
    def metrics(self, score, y, *, n_bins: int = 15) -> pd.DataFrame:
        """Brier, log-loss, KS error and ECE of the baseline, ``g_eta`` and CalEM on labelled
        data (e.g. a held-out control set): one row per calibrator."""
        from ..metrics import compare_calibration

        s, _ = self._score_in(score)
        return compare_calibration(y, {"baseline": self.baseline.predict(s),
                                       "biased (g_eta)": self.biased.predict(s),
                                       "CalEM": self._fitted.predict(s)}, n_bins=n_bins)

    def plot_reliability(self, score=None, y=None, *, n_bins: int = 10, ax=None):
        """Reliability diagram of the baseline and CalEM on ``(score, y)``.

        Defaults to the control rows (in-sample: optimistic for the baseline); pass held-out
        clean data for an honest comparison. Returns the Axes.
        """
        from ..metrics import plot_reliability

        if (score is None) != (y is None):
            raise ValueError("give both score and y, or neither (control rows)")
        if score is None:
            s = self.model.score[~self.model.treated]
            y = self.model.label[~self.model.treated]
        else:
            s, _ = self._score_in(score)
        ax = plot_reliability(y, self.baseline.predict(s), n_bins=n_bins, ax=ax,
                              label="baseline (control only)")
        plot_reliability(y, self._fitted.predict(s), n_bins=n_bins, ax=ax, label="CalEM")
        ax.set_title("Reliability: baseline vs CalEM")
        return ax

    def plot_calibration(self, *, ax=None, n_points: int = 200):
        """The three calibration curves (baseline, ``g_eta``, CalEM) against the score."""
        from ..plotting import get_ax

        ax = get_ax(ax)
        q = np.quantile(self.model.score, [0.005, 0.995])
        s = np.linspace(q[0], q[1], n_points)
        ax.plot(s, self.baseline.predict(s), label="baseline (control only)")
        ax.plot(s, self.biased.predict(s), ls="--", label="g_eta (biased labels)")
        ax.plot(s, self._fitted.predict(s), lw=2, label="CalEM")
        ax.set_xlabel("score")
        ax.set_ylabel("calibrated probability")
        ax.legend()
        return ax

    def plot_treatment_effect(self, *, ax=None, n_points: int = 200):
        """The estimated treatment-effect curve ``h(score)``."""
        from ..plotting import get_ax

        ax = get_ax(ax)
        q = np.quantile(self.model.score, [0.005, 0.995])
        s = np.linspace(q[0], q[1], n_points)
        ax.plot(s, self.treatment_effect(s), color="C3")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("score")
        ax.set_ylabel("h(score) = P(Y = 0 | Z = 1, score)")
        return ax

    # -- presentation ------------------------------------------------------------------------
    def summary(self, level: float = 0.95) -> Summary:
        """Calibrator, sample sizes, coefficients (sandwich SEs), h, convergence, bias test."""
        m = self.model
        s = Summary("CalEM: calibration with clean control and biased treated labels")
        s.add_info("Calibrator", m.calibrator.name if m.formula is None else m.formula)
        s.add_info("Control rows (clean y)", m.n_control)
        s.add_info("Treated rows (biased z)", m.n_treated)
        s.add_info("Positives: control", f"{m.label[~m.treated].mean():.4f}")
        s.add_info("Positives: treated", f"{m.label[m.treated].mean():.4f}")
        s.add_info("Objective (17)", self.objective_17)
        s.add_info("Surrogate log-lik. F", self.llf)
        s.add_info("Mean h (treated z=1)", self.mean_h_treated_positives)
        s.add_info("Share h clipped", self.share_clipped)
        s.add_info("Method", self.method)
        if m.calibrator.parametric:
            tab = coef_table(self._params, self.bse if self._cov is not None else None, level)
            tab.insert(1, "baseline", self.baseline.params.reindex(self._params.index))
            s.add_table("CalEM parameters (sandwich standard errors, approximate where h is "
                        "clipped at 0; 'baseline' = control-only fit)", tab)
        else:
            s.add_note(f"Isotonic calibration: {len(self._params)} fitted values, "
                       f"{int(self.df_model)} distinct levels")
        s.add_note(self.convergence.line())
        t = self.test_bias()
        s.add_note(str(t).replace("\n", "; "))
        for cat, msg in self.warnings:
            s.add_note(f"Warning ({cat}): {msg}")
        return s

    def __repr__(self):
        return (f"<CalEMResults: {self.model.calibrator.name}, n_control={self.n_control}, "
                f"n_treated={self.n_treated}, converged={self.converged}>")
