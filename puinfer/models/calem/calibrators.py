"""Calibrators fitted by a (weighted) logistic likelihood on a classifier score in (0, 1).

A calibrator maps a raw score ``s = f(x)`` to a probability ``g_theta(s) = expit(B(s)' theta)``
(Sergazinov et al., eqs. (5)-(6)) where ``B`` is a basis of the score:

* ``"logistic"``: basis ``1, logit(s)`` (Platt scaling; Platt 1999), optionally with Platt's
  prior correction of the targets;
* ``"temperature"``: basis ``logit(s)`` without intercept, ``g(s) = expit(logit(s) / T)``
  (temperature scaling; Guo et al. 2017);
* ``"beta"``: basis ``1, log(s), -log(1 - s)`` (beta calibration; Kull et al. 2017);
* ``"spline"``: natural cubic regression spline of ``logit(s)`` in the cardinal basis, whose
  parameters are the calibrated log-odds at the knots, with an optional curvature penalty
  (the GAM of Sergazinov et al., after Gupta et al. 2021);
* ``"isotonic"``: non-parametric monotone step function (weighted PAVA; Zadrozny & Elkan 2002);
* a formula: any right-hand side on the score, e.g. ``"~ logit(score)"``.

Every calibrator fits with sample weights and *soft* labels ``y`` in [0, 1] (the M-step of
CalEM, Sergazinov et al. eq. (17), is such a fit), predicts on new scores and exposes its parameters.
A calibrator object only holds its specification; :meth:`Calibrator.fit` returns a new
:class:`FittedCalibrator`.

The fitting core is an exact Newton method on the (penalised) weighted logistic
log-likelihood ``sum_i w_i {y_i log g_i + (1 - y_i) log(1 - g_i)} - lam/2 theta' P theta``.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.interpolate import CubicSpline, PPoly
from scipy.special import expit

from ..._align import align_rows
from ..._validation import as_float_vector, check_alpha, check_unit_interval, unwrap_0d, warn
from ...base.gram import weighted_grams
from ...base.numeric import softplus
from ...base.optimize import newton_maximize
from ...base.results import (
    ReadOnlyArrays,
    _readonly_in,
    freeze_arrays,
    readonly,
    standard_errors,
    wald_conf_int,
    wald_pvalues,
)
from ...base.results import data_fingerprint as _fingerprint
from ...exceptions import AssumptionWarning, ConvergenceWarning, SeparationWarning

__all__ = [
    "Calibrator",
    "LogisticCalibrator",
    "TemperatureCalibrator",
    "BetaCalibrator",
    "SplineCalibrator",
    "IsotonicCalibrator",
    "FormulaCalibrator",
    "FittedCalibrator",
    "make_calibrator",
    "platt_targets",
]

_EPS = 1e-15


# ---------------------------------------------------------------------------------------------
# weighted logistic likelihood with soft labels: the one fitting core
# ---------------------------------------------------------------------------------------------
def weighted_loglik(eta, y, w):
    """``sum w {y log g + (1-y) log(1-g)}`` with ``g = expit(eta)``, computed stably."""
    # y log g + (1-y) log(1-g) = y*eta - log(1 + exp(eta))
    t = y * eta
    t -= softplus(eta)
    return float(np.dot(w, t))


def logistic_derivs(X, y, w, eta):
    """Gradient and Hessian of ``sum w {y log g + (1-y) log(1-g)}`` (no penalty) at the linear
    predictor ``eta = X theta``: sums over the rows given. With :func:`weighted_loglik` these
    are the logistic likelihood's block sums, applied to all rows in memory and to each block
    of a Dask collection (``puinfer.models.calem._dask``), then added."""
    p = expit(eta)
    u = np.subtract(y, p)
    u *= w
    g = X.T @ u
    np.multiply(w, p, out=u)  # u's buffer reused for the Hessian's weights w p (1 - p)
    u *= 1.0 - p
    H = -weighted_grams(X, [u])[0]
    return g, H


def _logistic_objective(X, y, w, P):
    """``fun(theta, order)`` for :func:`~puinfer.base.optimize.newton_maximize`: the penalised
    weighted logistic log-likelihood, its gradient and Hessian."""

    last = {}  # the line search's accepted point is evaluated again with derivatives

    def fun(b, order):
        key = b.tobytes()
        if last.get("key") == key:
            eta, f = last["eta"], last["f"]
        else:
            eta = X @ b
            f = weighted_loglik(eta, y, w) - 0.5 * b @ P @ b
            last.update(key=key, eta=eta, f=f)
        if order == 0:
            return f
        g, H = logistic_derivs(X, y, w, eta)
        return f, g - P @ b, H - P

    return fun


class ArrayRows:
    """The rows of a weighted logistic fit held in memory: design ``X``, soft labels ``y``,
    weights ``w``. Everything a fit needs from its rows goes through these methods (sums,
    a maximum); ``puinfer.models.calem._dask.DaskRows`` provides the same from the blocks of
    Dask collections with the same block functions."""

    def __init__(self, X, y, w):
        self.X, self.y, self.w = X, y, w
        self.k = X.shape[1]
        self.n = int(len(y))

    @property
    def weight_sum(self) -> float:
        return float(self.w.sum())

    def gram(self):
        """``X' W X``."""
        return weighted_grams(self.X, [self.w])[0]

    def objective(self, P):
        """``fun(theta, order)`` of the penalised likelihood (see :func:`_logistic_objective`)."""
        return _logistic_objective(self.X, self.y, self.w, P)

    def max_abs_eta(self, theta) -> float:
        return float(np.max(np.abs(self.X @ theta), initial=0.0))

    def loglik(self, theta) -> float:
        return weighted_loglik(self.X @ theta, self.y, self.w)


def logistic_fit(X, y, w, *, penalty=None, start=None, maxiter: int = 100, tol: float = 1e-10):
    """Maximise a penalised weighted logistic log-likelihood with soft labels.

    The objective is ``sum_i w_i {y_i log g_i + (1 - y_i) log(1 - g_i)} - theta' P theta / 2``
    with ``g = expit(X theta)``; it is concave, so Newton's method
    (:func:`~puinfer.base.optimize.newton_maximize`) converges from any start.

    Parameters
    ----------
    X : ndarray, shape (n, k)
        Design (basis) matrix.
    y : ndarray, shape (n,)
        Labels in [0, 1] (soft labels allowed).
    w : ndarray, shape (n,)
        Non-negative weights.
    penalty : ndarray, shape (k, k), optional
        Penalty matrix ``P``.
    start : ndarray, optional
        Starting parameters (zero otherwise).
    maxiter : int
    tol : float
        Converged after a full Newton step smaller than ``tol * (1 + max |theta|)`` (Newton
        converges quadratically, so the result is then exact to machine precision), after
        one whose quadratic rate predicts the next below ``tol / 100 * (1 + max |theta|)``
        (the result is then within about that of the maximum; ``predict_xtol`` of
        :func:`~puinfer.base.optimize.newton_maximize`), or when the Newton decrement is
        below ``1e-24`` times the total weight.

    Returns
    -------
    theta : ndarray
    objective : float
        The penalised objective at ``theta``.
    information : ndarray
        Negative Hessian of the penalised objective at ``theta``.
    info : ConvergenceInfo
    separated : bool
        Whether the fitted log-odds exceed 30 (or the parameters 1000) in absolute value.
    """
    return logistic_fit_rows(ArrayRows(X, y, w), penalty=penalty, start=start,
                             maxiter=maxiter, tol=tol)


def logistic_fit_rows(rows, *, penalty=None, start=None, maxiter: int = 100,
                      tol: float = 1e-10):
    """:func:`logistic_fit` on rows given as an :class:`ArrayRows` (or its Dask counterpart):
    the optimiser sees only the rows' sums."""
    k = rows.k
    P = np.zeros((k, k)) if penalty is None else penalty
    beta = np.zeros(k) if start is None else np.array(start, dtype=float)
    # the gradient's stopping level scales with the weights (with a floor of 1 it stopped
    # after one step where all weights were 1e-30: session 67's audit)
    wsum = rows.weight_sum if rows.weight_sum > 0 else 1.0
    opts = dict(maxiter=maxiter, tol=1e-24 * wsum, xtol=tol, armijo=0.0, slack=1e-12,
                shrink=0.5, min_step=1e-10, escape_saddles=False, predict_xtol=1e-2 * tol,
                method="Newton (weighted logistic likelihood)")
    theta, f, _, H, info = newton_maximize(rows.objective(P), beta, **opts)
    if start is not None and not info.converged:
        # a warm start is a shortcut only: where Newton could not finish from it (CalEM's
        # biased fit started from a control-only fit that diverged on separated control
        # labels stopped at llf -842,900, not converged; from zero it converges to -290.58,
        # statsmodels' maximum: session 67's audit), the fit from zero, if higher
        cold = newton_maximize(rows.objective(P), np.zeros(k), **opts)
        if cold[1] > f or (cold[1] == f and cold[4].converged):
            theta, f, _, H, info = cold
    separated = bool(np.max(np.abs(theta), initial=0.0) > 1e3 or rows.max_abs_eta(theta) > 30)
    return theta, f, -H, info, separated


# ---------------------------------------------------------------------------------------------
# fitted calibrator
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FittedCalibrator:
    """A calibrator fitted to (score, label, weight) data.

    Attributes
    ----------
    calibrator : Calibrator
        The specification that was fitted.
    basis : object
        The learned basis (knots and transforms); reused by :meth:`predict`.
    params : pandas.Series
        Fitted parameters (for ``"isotonic"``: the fitted step values at the thresholds).
    llf : float
        Weighted log-likelihood at the fit (penalty not included).
    nobs : int
        Number of rows fitted.
    weight_sum : float
        Total weight.
    df_model : float
        Number of parameters (effective degrees of freedom for a penalised spline; number of
        distinct steps for isotonic).
    converged : bool
    iterations : int
    information : pandas.DataFrame or None
        Negative Hessian of the penalised objective at the fit (None for isotonic).
    warnings : tuple of (str, str)
    prior_corrected : bool
        Whether the fit used Platt's prior-corrected targets (then ``llf`` is the
        log-likelihood of the *labels* at parameters that do not maximise it, so the fit cannot
        enter a likelihood-ratio test, and ``information`` is that of the corrected targets).
    data_fingerprint : str or None
        Hash of ``(score, y, sample_weight)`` of a :meth:`Calibrator.fit` call (used by
        :func:`puinfer.lr_test` to refuse fits to different data); None inside CalEM.
    score_range : (float, float) or None
        The smallest and largest score of a :meth:`Calibrator.fit` call (where
        :func:`puinfer.lr_test` compares two families); None inside CalEM.
    edge_bounds : (float, float) or None
        Inside CalEM results, the model's ``edge_bounds``: :meth:`predict` and
        :meth:`linear_predictor` read scores as ``clip(score, lo, hi)`` (a score of exactly 0
        or 1 at ``lo`` or ``hi``), as the fit and :meth:`CalEMResults.predict` take them;
        None elsewhere (the calibrator's own ``eps`` clips them).
    edge_eps : float or None
        What results pickled before session 87 held instead: scores of exactly 0 and 1 moved
        to ``edge_eps`` and ``1 - edge_eps``, the others read as they are (the rule they were
        fitted with).
    """

    calibrator: Calibrator
    basis: object
    _params: pd.Series
    llf: float
    nobs: int
    weight_sum: float
    df_model: float
    converged: bool
    iterations: int
    _information: pd.DataFrame | None = None
    warnings: tuple = ()
    prior_corrected: bool = False
    data_fingerprint: str | None = None
    score_range: tuple | None = None
    edge_bounds: tuple | None = None
    edge_eps: float | None = None
    #: why :func:`puinfer.lr_test` cannot use this fit's log-likelihood (soft labels or
    #: weights that are not frequencies), or None
    lr_refusal: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "warnings", tuple(self.warnings))
        # the fit reads its specification (eps, lam, ...) whenever it predicts or is tested:
        # it keeps a read-only copy, so that changing the caller's spec afterwards (a penalty
        # sweep: cal.lam = 2.0; cal.fit(...)) cannot change fits already made (session 68's
        # audit: a CalEM result's test_bias moved from 51.74 to 49.55)
        object.__setattr__(self, "calibrator", self.calibrator._frozen())

    def __setstate__(self, state):
        # pickles written before the fields were renamed (params, information) load too
        for name, value in state.items():
            if name in ("params", "information"):
                name = "_" + name
            object.__setattr__(self, name, tuple(value) if name == "warnings" else value)
        if "calibrator" in state:  # (pickles written before the copies were read-only)
            object.__setattr__(self, "calibrator", self.calibrator._frozen())

    # pandas objects cannot be made read-only: they are handed out as copies, so that the fit
    # (its predictions, the results built on it) cannot be changed through them
    @property
    def params(self) -> pd.Series:
        return self._params.copy()

    @property
    def information(self) -> pd.DataFrame | None:
        return None if self._information is None else self._information.copy()

    def predict(self, score):
        """Calibrated probability ``g_theta(score)`` for new scores (a pandas Series in gives
        a Series with its index out; an array gives an array)."""
        s = self._edge(self.calibrator._prepare_score(score, "score"))
        return _like(score, self.calibrator._predict_fitted(self, s), "calibrated")

    def linear_predictor(self, score):
        """``logit g_theta(score)`` (parametric calibrators only; a Series in gives a Series
        out)."""
        eta = self.calibrator._eta(self.basis, self.params.to_numpy(),
                                   self._edge(self.calibrator._prepare_score(score, "score")))
        return _like(score, eta, "linear predictor")

    def _edge(self, s):
        """``s`` read as CalEM reads scores (``edge_bounds``) where set: a CalEM fit's maps
        predict them as the fit and ``CalEMResults.predict`` take them (session 74's audit:
        ``r.baseline.predict(0)`` gave 4.4e-4 where ``r.predict_baseline(0)`` gave 0.023)."""
        if self.edge_bounds is None and self.edge_eps is None:
            return s
        # (pickled before session 87: edge_eps, the rule the fit was made with)
        return edge_scores_moved(s, self.edge_bounds, self.edge_eps)

    # -- Wald inference from the information (statsmodels' names) ---------------------------
    def cov_params(self) -> pd.DataFrame:
        """Model-based covariance of the parameters: the (pseudo-)inverse of
        ``information``, the negative Hessian of the objective at the fit.

        Unpenalised, this is the inverse observed information of the weighted logistic
        likelihood (statsmodels' ``GLM(Binomial)`` covariance with ``freq_weights``); for a
        penalised spline (``lam > 0``) it is the Bayesian covariance
        ``(X' W X + lam P)^-1`` (Wood 2006), whose intervals have their coverage on average
        over the curve rather than for each coefficient. It assumes 0/1 labels and weights that
        count rows: for soft labels or importance weights (``lr_refusal`` says which) it is
        not a valid variance. With Platt's prior correction it is that of the corrected
        targets.

        Raises
        ------
        NotImplementedError
            For an isotonic fit (no parameters with a variance) and for the calibration maps
            inside a CalEM result (their covariance is the result's ``cov_params()``).
        """
        if self._information is None:
            where = ("an isotonic calibrator has no parametric covariance"
                     if not self.calibrator.parametric else
                     "this map was fitted inside CalEM: its covariance (sandwich, Murphy-Topel) "
                     "is the CalEM result's cov_params()")
            raise NotImplementedError(where)
        info = self._information
        return pd.DataFrame(np.linalg.pinv(info.to_numpy()), index=info.index.copy(),
                            columns=info.columns.copy())

    @property
    def bse(self) -> pd.Series:
        """Model-based standard errors ``sqrt(diag(cov_params()))`` (NaN where there is no
        covariance: isotonic, or a map inside a CalEM result)."""
        if self._information is None:
            return pd.Series(np.nan, index=self._params.index.copy(), name="std err")
        return standard_errors(self.cov_params(), self._params.index.copy())

    @property
    def tvalues(self) -> pd.Series:
        """Wald z statistics (estimate / standard error); named as in statsmodels."""
        return (self._params / self.bse).rename("z")

    @property
    def pvalues(self) -> pd.Series:
        """Two-sided Wald p-values for H0: parameter = 0 (normal reference; see
        :meth:`cov_params` for when the standard errors are valid)."""
        return wald_pvalues(self._params, self.bse)

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Wald confidence intervals ``estimate -/+ z_{1 - alpha/2} * se`` of the parameters
        (level ``1 - alpha``; see :meth:`cov_params` for when they are valid)."""
        return wald_conf_int(self._params, self.bse, alpha)

    def summary(self, alpha: float = 0.05):
        """The fit: rows, weights, log-likelihood, degrees of freedom, penalty, convergence,
        the coefficients with Wald inference (parametric families; the number of steps for
        isotonic) and the recorded warnings."""
        from ...summary import Summary, coef_table

        alpha = check_alpha(alpha)
        cal = self.calibrator
        s = Summary(f"{cal.name} calibrator: weighted logistic likelihood")
        s.add_info("Calibrator", repr(cal))
        s.add_info("No. rows", self.nobs)
        s.add_info("Total weight", self.weight_sum)
        s.add_info("Log-likelihood", self.llf)
        pen = cal.penalty(self.basis) if cal.parametric else None
        penalised = pen is not None and bool(np.any(pen))
        s.add_info("Effective df" if penalised else "Parameters" if cal.parametric
                   else "Distinct steps", f"{self.df_model:.4g}")
        s.add_info("Prior correction", "Platt" if self.prior_corrected else "none")
        s.add_info("Converged", f"{self.converged} ({self.iterations} iterations)")
        if cal.parametric:
            kind = ("Bayesian covariance of the penalised spline, Wood 2006" if penalised
                    else "observed information")
            s.add_table(f"Coefficients (Wald inference from the {kind})",
                        coef_table(self._params, self.bse, 1 - alpha))
        else:
            s.add_note(f"Isotonic: a step function, its fitted values at the {self._params.size} "
                       "distinct scores in params; no standard errors.")
        if cal.parametric and self._information is None:
            s.add_note("No standard errors here: this map was fitted inside CalEM, whose "
                       "result's cov_params() and summary() hold its covariance.")
        if self.prior_corrected:
            s.add_note("Platt's prior correction: the information, and so the Wald inference, "
                       "is that of the corrected (soft) targets; it describes the corrected "
                       "fit's parameters, not a maximum of the labels' likelihood.")
        elif self.lr_refusal is not None:
            s.add_note("The standard errors assume 0/1 labels and weights that count rows; "
                       f"not so here ({self.lr_refusal.split(':')[0]}).")
        for cat, msg in self.warnings:
            s.add_note(f"Warning ({cat}): {msg}")
        return s

    @property
    def temperature(self) -> float:
        """The fitted temperature ``T = 1 / coefficient`` (temperature scaling only)."""
        if not isinstance(self.calibrator, TemperatureCalibrator):
            raise AttributeError(f"a {self.calibrator.name} calibrator has no temperature")
        return float(1.0 / self.params.iloc[0])

    def _as_likelihood_results(self):
        """This fit as a :class:`~puinfer.base.results.LikelihoodResults` for
        :func:`puinfer.lr_test` (see :mod:`puinfer.inference.comparison`)."""
        from ...inference.comparison import CalibratorLikelihood

        return CalibratorLikelihood(self)

    def __repr__(self):
        return (f"<FittedCalibrator {self.calibrator.name}: {len(self.params)} parameters, "
                f"llf={self.llf:.4f}, nobs={self.nobs}>")


# ---------------------------------------------------------------------------------------------
# specifications
# ---------------------------------------------------------------------------------------------
class Calibrator:
    """Base class: a calibration-map specification ``g_theta(s) = expit(B(s)' theta)``.

    Subclasses define :meth:`make_basis` (learn knots etc. from scores) and :meth:`design`
    (evaluate the basis on scores). :meth:`fit` returns a :class:`FittedCalibrator`.

    Parameters
    ----------
    eps : float, default 1e-12
        Scores are used as ``clip(score, eps, 1 - eps)`` inside the log/logit transforms of
        parametric calibrators (a numerical guard: scores of exactly 0 or 1 would give
        infinite log-odds).
    """

    name = "calibrator"
    parametric = True

    def __init__(self, *, eps: float = 1e-12):
        eps = unwrap_0d(eps)
        if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, (int, float, np.integer,
                                                                     np.floating)):
            raise TypeError(f"eps must be a number in (0, 0.5); got {eps!r}")
        if not 0 < eps < 0.5:
            raise ValueError(f"eps must be in (0, 0.5); got {eps}")
        self.eps = float(eps)

    # -- read-only copies for fits and models ------------------------------------------------
    def _frozen(self) -> Calibrator:
        """A read-only copy of this specification (itself if it is one): what fits and CalEM
        models keep, so that the caller's later changes to the spec reach neither."""
        if self.__dict__.get("_frozen_spec", False):
            return self
        new = copy.deepcopy(self)
        freeze_arrays(new)
        object.__setattr__(new, "_frozen_spec", True)
        return new

    def __setattr__(self, name, value):
        if self.__dict__.get("_frozen_spec", False):
            raise AttributeError(
                f"this {self.name} calibrator belongs to a fit or a model: it is read-only "
                f"(cannot set {name!r}); build a new calibrator instead")
        object.__setattr__(self, name, value)

    def __setstate__(self, state):
        # a read-only copy stays so through pickling and deep copies (numpy does not keep an
        # array's write flag)
        frozen = state.get("_frozen_spec", False)
        for name, value in state.items():
            object.__setattr__(self, name, _readonly_in(value) if frozen else value)

    # -- to be provided by subclasses ------------------------------------------------------
    def make_basis(self, score, sample_weight=None):
        """Learn the basis (knots, transforms) from ``score`` (rows weighted by
        ``sample_weight``, as :meth:`fit` weighs them); returns an opaque basis object."""
        return None

    def design(self, basis, score) -> np.ndarray:
        """The basis matrix ``B(score)``."""
        raise NotImplementedError

    def param_names(self, basis) -> list[str]:
        """Parameter labels."""
        raise NotImplementedError

    def penalty(self, basis):
        """Penalty matrix or None."""
        return None

    # -- shared ----------------------------------------------------------------------------
    def _prepare_score(self, score, name) -> np.ndarray:
        s = check_unit_interval(as_float_vector(score, name), name)
        return s

    def _clip(self, s):
        return np.clip(s, self.eps, 1.0 - self.eps)

    def _eta(self, basis, params, s):
        return self.design(basis, s) @ params

    def _predict_fitted(self, fitted, s):
        return expit(self._eta(fitted.basis, fitted._params.to_numpy(), s))

    def fit(self, score, y, sample_weight=None, *, basis=None, start=None, maxiter: int = 100,
            tol: float = 1e-10) -> FittedCalibrator:
        """Fit by maximum (weighted, possibly penalised) logistic likelihood.

        Parameters
        ----------
        score : array_like
            Scores in [0, 1]. Pandas arguments (``score``, ``y``, ``sample_weight``) are
            matched on their index (refused if the labels differ); arrays by position.
        y : array_like
            Labels in [0, 1]; 0/1 labels, or soft labels (expected labels) as CalEM's M-step uses.
        sample_weight : array_like, optional
            Non-negative weights (default 1). Integer weights are equivalent to replicating
            rows (a :class:`FormulaCalibrator` whose transforms learn knots learns them,
            unweighted, from the rows of positive weight).
        basis : object, optional
            A basis from :meth:`make_basis`; learned from ``score`` if omitted.
        start : array_like, optional
            Starting parameters.
        maxiter, tol : int, float
            Newton iteration limits.

        Returns
        -------
        FittedCalibrator
            ``params``, ``bse``, ``pvalues``, ``conf_int()``, ``cov_params()`` (Wald, from
            the information; see :meth:`FittedCalibrator.cov_params` for when they hold),
            ``llf``, ``nobs``, ``df_model``, ``summary()`` and ``predict()``.

        Raises
        ------
        ValueError
            If scores are outside [0, 1], labels outside [0, 1], weights negative or all zero,
            or the lengths differ; if ``maxiter`` is not a positive integer, ``tol`` is not
            positive and finite, or ``start`` does not hold one finite number per parameter.
        TypeError
            If ``tol`` is not a number (text, a bool).
        """
        _check_newton_options(maxiter, tol)
        s, yy, w = _check_fit_inputs(score, y, sample_weight)
        if basis is None:
            # (unweighted, as before the weights were used: a subclass's make_basis(score))
            basis = self.make_basis(s) if sample_weight is None else self.make_basis(s, w)
        if start is not None and self.parametric:
            start = _check_start(start, self.param_names(basis))
        # of the rows as a set: the likelihood does not depend on their order (session 67's
        # audit: lr_test refused two fits of the same rows sorted differently)
        order = np.lexsort((w, yy, s))
        fingerprint = _fingerprint(s[order], yy[order], w[order])
        if self.parametric and sample_weight is not None and not np.all(w > 0):
            # rows of weight 0 are not fitted, as if dropped: a formula's bs() placed its knots
            # on the rows of positive weight and then could not evaluate the design at the
            # others (patsy: "some data points fall outside the outermost knots"; session
            # 85's audit)
            pos = w > 0
            s, yy, w = s[pos], yy[pos], w[pos]
        if getattr(self, "prior_correction", False):
            fitted = self._fit_arrays(basis, s, platt_targets(yy, w), w, start=start,
                                      maxiter=maxiter, tol=tol)
            # llf stays the log-likelihood of the labels (at the corrected fit)
            eta = self._eta(basis, fitted._params.to_numpy(), s)
            fitted = dataclasses.replace(fitted, llf=weighted_loglik(eta, yy, w),
                                         prior_corrected=True, data_fingerprint=fingerprint)
        else:
            fitted = self._fit_arrays(basis, s, yy, w, start=start, maxiter=maxiter, tol=tol)
            fitted = dataclasses.replace(fitted, data_fingerprint=fingerprint)
        fitted = dataclasses.replace(fitted, score_range=(float(s.min()), float(s.max())))
        # a chi-square likelihood ratio needs a likelihood: 0/1 labels, and weights that count
        # rows (integers); other weights rescale the statistic (weights w / n turn LR 8.4,
        # p = 0.004, into 0.017, p = 0.90; Exp(1) importance weights gave a 17% size at 5%)
        if sample_weight is not None and not np.allclose(w, np.round(w), rtol=1e-12, atol=0.0):
            # (integers up to rounding: 0.1 * 3 * 10 = 3.0000000000000004 counts 3 rows)
            fitted = dataclasses.replace(fitted, lr_refusal=(
                "fitted with non-integer sample weights: they are not frequencies, so the "
                "weighted log-likelihood has no chi-square likelihood-ratio reference"))
        elif np.any((yy > 0) & (yy < 1)):
            fitted = dataclasses.replace(fitted, lr_refusal=(
                "fitted to soft labels: the objective is not a likelihood of observed labels, "
                "so it has no chi-square likelihood-ratio reference"))
        from ... import exceptions as _exc

        for cat, msg in fitted.warnings:  # already recorded on the fit; now issue them
            warn(msg, getattr(_exc, cat, _exc.PuinferWarning))
        return fitted

    def _fit_design(self, basis, X, y, w, *, start=None, maxiter=100, tol=1e-10,
                    check_rank=True):
        """Fit on a precomputed design ``X = design(basis, s)`` (used inside CalEM)."""
        return self._fit_rows(basis, ArrayRows(X, y, w), start=start, maxiter=maxiter,
                              tol=tol, check_rank=check_rank)

    def _fit_rows(self, basis, rows, *, start=None, maxiter=100, tol=1e-10, check_rank=True):
        """Fit on rows given as an :class:`ArrayRows` (or its Dask counterpart).
        ``check_rank=False`` skips the design's rank check (its Gram matrix, a pass over the
        rows) where a subset of the rows was already checked (CalEM's pooled fit)."""
        rec = []
        P = self.penalty(basis)
        if check_rank:
            _check_design_rank(rows.gram(), self.param_names(basis), P)
        theta, f, info_mat, conv, separated = logistic_fit_rows(rows, penalty=P, start=start,
                                                                maxiter=maxiter, tol=tol)
        names = self.param_names(basis)
        if separated:
            rec.append((SeparationWarning.__name__,
                        f"{self.name} calibrator: fitted log-odds exceed 30, or a parameter "
                        "1000, in absolute value; the data are (quasi-)separated in the "
                        "score, or a covariate's scale makes its coefficient huge"))
        if not conv.converged:
            rec.append((ConvergenceWarning.__name__,
                        f"{self.name} calibrator: Newton did not converge in {maxiter} "
                        f"iterations ({conv.message})"))
        # unpenalised, the objective at theta is the log-likelihood: no pass more over the rows
        llf = f if P is None or not np.any(P) else rows.loglik(theta)
        df_model = float(rows.k)
        if P is not None and np.any(P):
            # effective degrees of freedom tr((H + P)^-1 H)
            df_model = float(np.trace(np.linalg.solve(info_mat, info_mat - P)))
        return FittedCalibrator(self, basis, pd.Series(theta, index=names), llf, rows.n,
                                rows.weight_sum, df_model, conv.converged, conv.iterations,
                                pd.DataFrame(info_mat, index=names, columns=names), rec)

    def _fit_arrays(self, basis, s, y, w, *, start=None, maxiter=100, tol=1e-10):
        return self._fit_design(basis, self.design(basis, s), y, w, start=start,
                                maxiter=maxiter, tol=tol)

    def __repr__(self):
        return f"{type(self).__name__}()"


def _check_newton_options(maxiter, tol) -> None:
    """``maxiter`` and ``tol`` of :meth:`Calibrator.fit`, checked as :meth:`CalEM.fit` checks
    them (``tol=inf`` or ``True`` stopped Newton after one step with ``converged=True``; a
    ``maxiter`` below 1 returned the zero start)."""
    if isinstance(maxiter, (bool, np.bool_)) or not isinstance(maxiter, (int, np.integer)) \
            or maxiter < 1:
        raise ValueError(f"maxiter must be a positive integer; got {maxiter!r}")
    tol = unwrap_0d(tol)
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, (int, float, np.integer,
                                                                 np.floating)):
        raise TypeError(f"tol must be a positive number; got {tol!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive finite number; got {tol}")


def _check_start(start, names) -> np.ndarray:
    """``start`` as a float vector with one finite value per parameter (``names``)."""
    if isinstance(start, (str, bytes)) or (np.ndim(start) and any(
            isinstance(v, (str, bytes)) for v in np.asarray(start, dtype=object).ravel())):
        raise ValueError(f"start holds text, not numbers; got {start!r:.60}")
    try:
        arr = np.array(start, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"start must be numeric; got {start!r:.60}") from None
    if arr.shape != (len(names),) or not np.all(np.isfinite(arr)):
        raise ValueError(f"start must hold {len(names)} finite value(s), one per parameter "
                         f"{names}; got {np.asarray(start).tolist()!r:.80}")
    return arr


def platt_targets(y, w=None) -> np.ndarray:
    """Platt's prior-corrected targets: ``(N+ + 1)/(N+ + 2)`` for positives and
    ``1/(N- + 2)`` for negatives (Platt 1999, section 2.2).

    ``N+`` and ``N-`` are the (weighted) numbers of positives and negatives. Soft labels
    ``y`` in [0, 1] get ``y t+ + (1 - y) t-`` with ``N+ = sum w y``, ``N- = sum w (1 - y)``
    (the same targets as splitting each row into a positive and a negative part).
    """
    y = np.asarray(y, dtype=float)
    w = np.ones_like(y) if w is None else np.asarray(w, dtype=float)
    n_pos, n_neg = float(w @ y), float(w @ (1.0 - y))
    return y * (n_pos + 1.0) / (n_pos + 2.0) + (1.0 - y) / (n_neg + 2.0)


class LogisticCalibrator(Calibrator):
    """Logistic (Platt) calibration ``logit g(s) = a + b logit(s)`` (Platt 1999).

    Parameters
    ----------
    prior_correction : bool, default False
        Fit to Platt's prior-corrected targets (:func:`platt_targets`): ``(N+ + 1)/(N+ + 2)``
        for positives, ``1/(N- + 2)`` for negatives, instead of 1 and 0 (Platt 1999, section
        2.2: a uniform prior on the probability of each label, which keeps the fit finite on
        separated data and shrinks it towards the base rate on small samples). This is what
        scikit-learn's ``CalibratedClassifierCV(method="sigmoid")`` fits. The default is the
        maximum-likelihood fit (uncorrected targets) because everything else in puinfer rests
        on it: ``llf`` and likelihood-ratio tests, the standard errors, and CalEM's EM (whose
        M-step is this fit); the correction changes the fit by O(1/N) and cannot be used
        inside CalEM.
    eps : float, default 1e-12
        See :class:`Calibrator`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(0.01, 0.99, 500); y = rng.binomial(1, s)
    >>> fit = LogisticCalibrator().fit(s, y)
    >>> list(fit.params.index)
    ['Intercept', 'logit(score)']
    """

    name = "logistic"

    def __init__(self, *, prior_correction: bool = False, eps: float = 1e-12):
        super().__init__(eps=eps)
        if not isinstance(prior_correction, (bool, np.bool_)):
            raise TypeError(f"prior_correction must be True or False; got {prior_correction!r}")
        self.prior_correction = bool(prior_correction)

    def design(self, basis, score):
        s = self._clip(score)
        return np.column_stack([np.ones_like(s), np.log(s) - np.log1p(-s)])

    def param_names(self, basis):
        return ["Intercept", "logit(score)"]

    def __repr__(self):
        return ("LogisticCalibrator(prior_correction=True)" if self.prior_correction
                else "LogisticCalibrator()")


class TemperatureCalibrator(Calibrator):
    """Temperature scaling ``g(s) = expit(logit(s) / T)`` (Guo et al. 2017).

    One parameter: the coefficient ``1/T`` of ``logit(score)`` in a logistic regression
    without intercept, fitted by maximum likelihood (equivalently, minimum log-loss). ``T > 1``
    softens over-confident scores, ``T < 1`` sharpens them; the score 0.5 stays 0.5. The
    fitted temperature is :attr:`FittedCalibrator.temperature`. It nests in
    :class:`LogisticCalibrator` (intercept 0, so :func:`puinfer.lr_test` can compare them).
    Inside :class:`~puinfer.CalEM` it represents no label bias: every curve passes through 0.5
    at the score 0.5, so Assumption 1 (the biased curve at or above the clean one) makes the
    two curves equal; CalEM warns (``AssumptionWarning``), and its ``test_bias`` stays valid.

    For a binary score this is Guo et al.'s ``softmax(z / T)`` with logits
    ``z = (log(1 - s), log s)``; the multiclass form (one ``T`` for a matrix of logits) is not
    provided, as puinfer's calibrators take one score per row.

    Parameters
    ----------
    eps : float, default 1e-12
        See :class:`Calibrator`.

    Warns
    -----
    AssumptionWarning
        If the fitted coefficient ``1/T`` is not positive (the score is uninformative or
        anti-informative for the labels: no temperature fits).
    """

    name = "temperature"

    def design(self, basis, score):
        s = self._clip(score)
        return (np.log(s) - np.log1p(-s))[:, None]

    def param_names(self, basis):
        return ["1/T"]

    def _fit_rows(self, basis, rows, *, start=None, maxiter=100, tol=1e-10, check_rank=True):
        fitted = super()._fit_rows(basis, rows, start=start, maxiter=maxiter, tol=tol,
                                   check_rank=check_rank)
        if fitted.params.iloc[0] <= 0:
            fitted = dataclasses.replace(fitted, warnings=(*fitted.warnings, (
                AssumptionWarning.__name__,
                f"temperature calibrator: the fitted 1/T = {fitted.params.iloc[0]:.4g} is not "
                "positive; the score does not rank the labels, and no temperature fits")))
        return fitted


class BetaCalibrator(Calibrator):
    """Beta calibration ``logit g(s) = c + a log(s) - b log(1 - s)`` (Kull et al. 2017).

    The parameters are reported as ``Intercept`` (c), ``log(score)`` (a) and
    ``-log(1-score)`` (b). The unconstrained maximum-likelihood fit is used (Kull et al.
    additionally refit with a or b set to 0 when one is negative; that monotonicity fix is not
    applied, so that the fit is a plain logistic likelihood as CalEM requires).
    """

    name = "beta"

    def design(self, basis, score):
        s = self._clip(score)
        return np.column_stack([np.ones_like(s), np.log(s), -np.log1p(-s)])

    def param_names(self, basis):
        return ["Intercept", "log(score)", "-log(1-score)"]


@dataclass(frozen=True)
class _SplineBasis(ReadOnlyArrays):
    knots: np.ndarray
    #: ``CubicSpline(knots, I, bc_type="natural")``: column j is the cardinal function b_j
    cardinal: CubicSpline

    def __post_init__(self):  # read-only: fits and their results share the basis
        object.__setattr__(self, "knots", readonly(self.knots))
        self._freeze_cardinal()

    def _freeze_cardinal(self):
        # the spline's own arrays too (in its __slots__, out of ReadOnlyArrays' reach): a
        # write into basis.cardinal.c changed every prediction, of pickled copies as well,
        # while the summary kept the fitted parameters (session 85's audit)
        for arr in (self.cardinal.c, self.cardinal.x):
            arr.flags.writeable = False

    def __setstate__(self, state):
        super().__setstate__(state)
        self._freeze_cardinal()  # (numpy does not pickle the write flag)

    def __call__(self, x):
        """The ``(n, K)`` basis at ``x`` (logit scores), linear beyond the boundary knots;
        column-major (every fit's products are faster on it), each column evaluated by its
        own piecewise polynomial (the same values as the K-column spline's, without a copy
        into that layout)."""
        k, cs = self.knots, self.cardinal
        xc = np.clip(x, k[0], k[-1])
        if xc.ndim == 1:
            out = np.empty((xc.size, k.size), order="F")
            for j in range(k.size):  # a handful of columns (the knots), not rows
                out[:, j] = PPoly(cs.c[:, :, j], cs.x)(xc)
        else:
            out = cs(xc)
        for edge, beyond in ((k[0], x < k[0]), (k[-1], x > k[-1])):
            if beyond.any():
                out[beyond] += (x[beyond] - edge)[:, None] * cs(edge, 1)
        return out


class SplineCalibrator(Calibrator):
    """Natural cubic regression spline of ``logit(score)`` (the GAM calibrator of Sergazinov et al.).

    ``logit g(s) = sum_j theta_j b_j(logit s)`` with the cardinal natural-cubic basis (the basis
    of mgcv's and patsy's ``cr()``, computed by :class:`scipy.interpolate.CubicSpline` with
    natural end conditions; linear beyond the boundary knots), knots at equally spaced quantiles of
    ``logit(score)`` in the fitting data (with ``sample_weight``, of its rows replicated by
    their weights: a row of weight 0 places no knot; weights are frequencies, so integer
    weights ``w`` and ``2 w`` place the knots of differently many replicated rows, slightly
    apart, and other weights are first scaled to average 1). With the cardinal basis ``theta_j`` is
    the calibrated log-odds at knot ``j``, so the parameters are directly interpretable.

    Parameters
    ----------
    df : int, default 5
        Number of knots = number of parameters (at least 2; ``df=2`` is Platt scaling).
    lam : float, default 0
        Curvature penalty ``lam/2 * sum_j (second divided difference of theta at knot j)^2``,
        a discrete version of the GAM penalty ``integral s''(t)^2 dt``. ``0`` for an
        unpenalised regression spline.
    knots : array_like, optional
        Knots on the logit scale (overrides ``df``).
    eps : float, default 1e-12
        See :class:`Calibrator`.
    """

    name = "spline"

    def __init__(self, df: int = 5, *, lam: float = 0.0, knots=None, eps: float = 1e-12):
        super().__init__(eps=eps)
        if isinstance(df, bool) or not isinstance(df, (int, float, np.number)) or \
                not np.isfinite(df) or int(df) != df or df < 2:
            raise ValueError(f"df must be an integer >= 2; got {df!r}")
        if isinstance(lam, bool) or not isinstance(lam, (int, float, np.number)) or \
                not np.isfinite(lam) or lam < 0:
            raise ValueError(f"lam must be a finite number >= 0; got {lam!r}")
        self.df = int(df)
        self.lam = float(lam)
        self.knots = None if knots is None else np.sort(as_float_vector(knots, "knots"))
        if self.knots is not None and self.knots.size < 2:
            raise ValueError("knots: need at least 2 knots")
        if self.knots is not None and np.any(np.diff(self.knots) == 0):
            raise ValueError(f"knots must be distinct; {self.knots.size - np.unique(self.knots).size}"
                             " repeated")

    def logit_score(self, score):
        """``logit(clip(score))``: the scale of the knots."""
        s = self._clip(np.asarray(score, dtype=float))
        return np.log(s) - np.log1p(-s)

    def make_basis(self, score, sample_weight=None):
        if self.knots is not None:
            return self._basis_from_knots(self.knots)
        x = self.logit_score(score)
        # more knots than distinct scores: interpolated quantiles are distinct, so the check in
        # basis_from_quantiles passes and a singular df x df basis is built (df = 1e5: 75 GB,
        # session 85's audit); counted only for a df beyond the usual (a sort of the rows)
        if self.df > 32 and self.df > (n_distinct := np.unique(x).size):
            raise ValueError(f"spline calibrator: df={self.df} exceeds the {n_distinct} distinct "
                             "scores; lower df")
        q = np.linspace(0.0, 1.0, self.df)
        # weighted, the quantiles of the rows replicated by their weights (so a row of weight
        # 0 places no knot and integer weights give the knots of replicated rows)
        return self.basis_from_quantiles(np.quantile(x, q) if sample_weight is None
                                         else _replicated_quantiles(x, sample_weight, q))

    def basis_from_quantiles(self, q):
        """The basis with knots at the quantiles ``q`` of ``logit(score)`` at
        ``linspace(0, 1, df)`` (computed in memory, or exactly on Dask collections)."""
        k = np.unique(q)
        if k.size < self.df:
            raise ValueError(f"spline calibrator: only {k.size} distinct knots from the "
                             f"scores for df={self.df}; lower df")
        return self._basis_from_knots(k)

    @staticmethod
    def _basis_from_knots(k):
        return _SplineBasis(k, CubicSpline(k, np.eye(k.size), bc_type="natural"))

    def design(self, basis, score):
        s = self._clip(score)
        return basis(np.log(s) - np.log1p(-s))

    def param_names(self, basis):
        return [f"s({v:.4g})" for v in basis.knots]

    def penalty(self, basis):
        if self.lam == 0:
            return None
        k = basis.knots
        m = k.size
        if m < 3:
            return None
        D = np.zeros((m - 2, m))
        for j in range(m - 2):  # loop over knots (a handful), not rows
            h1, h2 = k[j + 1] - k[j], k[j + 2] - k[j + 1]
            D[j, j:j + 3] = [1 / h1, -(1 / h1 + 1 / h2), 1 / h2]
        return self.lam * D.T @ D

    def __repr__(self):
        return f"SplineCalibrator(df={self.df}, lam={self.lam})"


class FormulaCalibrator(Calibrator):
    """A calibrator given by a right-hand-side formula on the score, e.g. ``"~ logit(score)"``.

    Parameters
    ----------
    formula : str
        Right-hand side (a left-hand side is ignored) in the score column ``score_name``;
        ``logit``, ``poly``, ``cr``/``bs`` (splines) and numpy are available.
    score_name : str, default "score"
        Name of the score variable in the formula.
    eps : float
        Scores are clipped to ``[eps, 1 - eps]`` before the formula is evaluated.
    """

    name = "formula"

    def __init__(self, formula: str, *, score_name: str = "score", eps: float = 1e-12):
        super().__init__(eps=eps)
        if not isinstance(formula, str) or "~" not in formula:
            raise ValueError(f"formula must be a string like '~ logit(score)'; got {formula!r}")
        self.formula = "~" + formula.split("~", 1)[1]
        self.score_name = score_name
        self.name = f"formula {self.formula.strip()}"

    def make_basis(self, score, sample_weight=None):
        from ...formula import build_design

        s = self._clip(np.asarray(score, dtype=float))
        if sample_weight is not None:
            # the transforms (e.g. bs() knots) are learned by patsy, unweighted: from the
            # rows the fit uses at least (integer weights are not replication here)
            s = s[np.asarray(sample_weight) > 0]
        return build_design(self.formula, pd.DataFrame({self.score_name: s}), require_lhs=False)

    def design(self, basis, score):
        s = self._clip(score)
        return basis.transform(pd.DataFrame({self.score_name: s})).to_numpy()

    def param_names(self, basis):
        return basis.exog_names

    def __repr__(self):
        return f"FormulaCalibrator({self.formula!r})"


@dataclass(frozen=True)
class _IsoBasis:
    pass


class IsotonicCalibrator(Calibrator):
    """Weighted isotonic regression (pool-adjacent-violators) of the label on the score.

    The fit is the non-decreasing step function maximising the weighted (soft-label)
    logistic — equivalently least-squares — likelihood (Zadrozny & Elkan 2002; both criteria
    share the PAVA solution). Ties in the score are pooled. Predictions between fitted scores
    interpolate linearly, and are constant beyond the range. Fitted values are computed with
    :func:`scipy.optimize.isotonic_regression` (scipy >= 1.12).

    Parameters
    ----------
    eps : float, default 1e-12
        Probabilities used in log-likelihoods are clipped to ``[eps, 1 - eps]`` (isotonic fits
        are 0 or 1 on blocks with a single class).
    """

    name = "isotonic"
    parametric = False

    def make_basis(self, score, sample_weight=None):
        return _IsoBasis()

    def param_names(self, basis):  # pragma: no cover - not used
        return []

    def _fit_arrays(self, basis, s, y, w, *, start=None, maxiter=100, tol=1e-10):
        from scipy.optimize import isotonic_regression

        # everything on the distinct scores (sorted): the rows enter only through their sums
        xs_all, inv = np.unique(s, return_inverse=True)
        ws_all = np.bincount(inv, weights=w, minlength=xs_all.size)
        wy_all = np.bincount(inv, weights=w * y, minlength=xs_all.size)
        pos = ws_all > 0
        xs, ys, ws = xs_all[pos], wy_all[pos] / ws_all[pos], ws_all[pos]
        fitted = isotonic_regression(ys, weights=ws, increasing=True).x
        fitted = np.clip(fitted, 0.0, 1.0)
        params = pd.Series(fitted, index=pd.Index(xs, name="score"), name="g")
        p = np.clip(np.interp(xs_all, xs, fitted), self.eps, 1 - self.eps)
        llf = float(wy_all @ np.log(p) + (ws_all - wy_all) @ np.log1p(-p))
        n_steps = float(np.unique(fitted).size)
        # (nobs: the rows of positive weight, as the parametric fits count them: a row of
        # weight 0 is a dropped row)
        return FittedCalibrator(self, basis, params, llf, int(np.count_nonzero(w > 0)),
                                float(w.sum()), n_steps, True, 1, None, [])

    def _predict_fitted(self, fitted, s):
        return np.interp(s, fitted._params.index.to_numpy(dtype=float), fitted._params.to_numpy())

    def __repr__(self):
        return "IsotonicCalibrator()"


def _check_design_rank(G, names, P):
    """``ValueError`` naming the columns of a singular (weighted) design, from its Gram
    matrix ``G = X' W X``."""
    if P is not None:
        G = G + P
    d = np.sqrt(np.clip(np.diag(G), 0, None))
    if np.any(d == 0):
        bad = [names[j] for j in np.flatnonzero(d == 0)]
        raise ValueError(f"calibrator design: column(s) {bad} are zero on the data")
    C = G / np.outer(d, d)
    lam, V = np.linalg.eigh(C)
    if lam[0] < 1e-12 * lam[-1]:
        v = V[:, 0]
        bad = [names[j] for j in np.flatnonzero(np.abs(v) > 1e-3 * np.abs(v).max())]
        raise ValueError(f"calibrator design is singular: columns {bad} are collinear on the "
                         "data (too few distinct scores for this calibrator?)")


def _like(score, values, name):
    """``values`` as a Series with ``score``'s index where ``score`` is a pandas object."""
    if isinstance(score, (pd.Series, pd.DataFrame)):
        return pd.Series(values, index=score.index, name=name)
    return values


def _replicated_quantiles(x, w, q):
    """Quantiles ``q`` of ``x`` with frequency weights ``w``: numpy's default (linear)
    quantiles of the rows replicated ``w`` times, for integer ``w`` (to the last bit); the
    same interpolation on the cumulative weights otherwise, the weights first scaled to
    average 1 over the rows of positive weight (so that among non-integer weights the knots do
    not depend on their scale; integer weights keep their counts, so ``w`` and ``2 w`` give
    the quantiles of differently many replicated rows: session 68's audit).
    ``q = 0`` and ``1`` are the extreme rows of positive weight."""
    order = np.argsort(x, kind="stable")
    keep = w[order] > 0
    xs, ws = x[order][keep], w[order][keep]
    if np.allclose(ws, np.round(ws), rtol=1e-12, atol=0.0):
        # integers up to rounding (0.1 * 3 * 10 = 3.0000000000000004 counts 3 rows, as in the
        # fit's likelihood-ratio rule: compared exactly, such weights were rescaled and the
        # knots moved by 0.08; session 85's audit)
        ws = np.round(ws)
    else:
        # (constant weights: exactly the unweighted quantiles, with no rounding in the sums)
        ws = np.ones_like(ws) if np.all(ws == ws[0]) else ws * (ws.size / ws.sum())
    cw = np.cumsum(ws)
    q = np.asarray(q, dtype=float)
    h = (cw[-1] - 1.0) * q  # positions among the replicated rows
    lo = np.floor(h)
    a = xs[np.minimum(np.searchsorted(cw, lo, side="right"), xs.size - 1)]
    b = xs[np.minimum(np.searchsorted(cw, lo + 1.0, side="right"), xs.size - 1)]
    t = h - lo
    out = np.where(t >= 0.5, b - (b - a) * (1.0 - t), a + (b - a) * t)  # numpy's lerp
    return np.where(q <= 0, xs[0], np.where(q >= 1, xs[-1], out))


def _check_fit_inputs(score, y, sample_weight):
    # pandas arguments are matched on their index (refused if the labels differ), never by
    # position
    args, _ = align_rows({"score": score, "y": y, "sample_weight": sample_weight})
    score, y, sample_weight = args["score"], args["y"], args["sample_weight"]
    s = check_unit_interval(as_float_vector(score, "score"), "score")
    yy = as_float_vector(y, "y")
    if np.any((yy < 0) | (yy > 1)):
        raise ValueError("y must be 0/1 labels (or soft labels in [0, 1])")
    if sample_weight is None:
        w = np.ones_like(s)
    else:
        w = as_float_vector(sample_weight, "sample_weight")
        if np.any(w < 0):
            raise ValueError("sample_weight must be non-negative")
        if not np.any(w > 0):
            raise ValueError("sample_weight: all weights are zero")
    return s, yy, w


_REGISTRY = {
    "logistic": LogisticCalibrator,
    "platt": LogisticCalibrator,
    "temperature": TemperatureCalibrator,
    "beta": BetaCalibrator,
    "spline": SplineCalibrator,
    "gam": SplineCalibrator,
    "isotonic": IsotonicCalibrator,
}


def make_calibrator(spec, **kwargs) -> Calibrator:
    """Turn a name (``"logistic"``/``"platt"``, ``"temperature"``, ``"beta"``, ``"spline"``/``"gam"``,
    ``"isotonic"``), a formula string (``"~ logit(score)"``) or a :class:`Calibrator` into a
    :class:`Calibrator`. ``kwargs`` go to the constructor (e.g. ``df=6`` for the spline)."""
    if isinstance(spec, Calibrator):
        if kwargs:
            raise ValueError("calibrator options are given to the Calibrator object itself")
        return spec
    if isinstance(spec, str):
        if "~" in spec:
            return FormulaCalibrator(spec, **kwargs)
        key = spec.lower()
        if key in _REGISTRY:
            return _REGISTRY[key](**kwargs)
    raise ValueError(f"calibrator must be one of {sorted(_REGISTRY)}, a formula such as "
                     f"'~ logit(score)', or a Calibrator object; got {spec!r}")


def inner_extremes(s: np.ndarray) -> tuple[float, float]:
    """The smallest and the largest score of ``s`` strictly inside (0, 1) (``inf`` and
    ``-inf`` where there is none); NaN ignored."""
    inner = s[(s > 0) & (s < 1)]
    return (float(inner.min()), float(inner.max())) if inner.size else (np.inf, -np.inf)


def edge_bounds(extremes: tuple[float, float], eps: float) -> tuple[float, float]:
    """``(lo, hi)``: where CalEM reads scores of exactly 0 and 1. ``eps`` and ``1 - eps``, or,
    nearer the edge, the data's smallest score above 0 and largest below 1
    (:func:`inner_extremes`): a 0 is never read above a score the data hold. Session 87's
    audit: with the 0 read at ``eps = 1e-6`` and smaller scores read as they are, CalEM's map
    gave ``predict(0) = 0.0134`` above ``predict(1e-9) = 0.0017``."""
    return min(eps, extremes[0]), max(1.0 - eps, extremes[1])


def edge_scores_moved(s: np.ndarray, bounds: tuple[float, float] | None,
                      eps: float | None = None) -> np.ndarray:
    """``s`` as CalEM reads scores: ``clip(s, lo, hi)``, ``(lo, hi)`` from :func:`edge_bounds`.
    On the model's rows only the scores 0 and 1 move (session 69's audit: clipping at ``eps``
    moved every score below it, 225 where one score was 0, while the warning counted one);
    a new score below ``lo`` (above ``hi``) is read at it, so that the map is monotone.
    ``bounds=None``: the rule of fits made before session 87, whose ``eps`` is given: only
    the scores 0 and 1 move, to ``eps`` and ``1 - eps`` (their pickles predict as fitted)."""
    if bounds is None:
        return np.where(s == 0, eps, np.where(s == 1, 1 - eps, s))
    return np.clip(s, bounds[0], bounds[1])


def near_edge_count(s: np.ndarray, calibrator) -> int:
    """How many scores strictly inside (0, 1) a parametric calibrator's transform moves
    (:meth:`Calibrator._clip`): within its ``eps`` of 0 or 1 (0 for the isotonic
    calibrator, which reads scores as they are). Scores of exactly 0 or 1 are CalEM's to
    move, said by their own warning."""
    ceps = getattr(calibrator, "eps", None)
    if not getattr(calibrator, "parametric", False) or ceps is None:
        return 0
    near = ((s > 0) & (s < ceps)) | ((s < 1) & (s > 1 - ceps))
    return int(np.count_nonzero(near))


def near_edge_message(n: int, calibrator) -> str:
    """The warning for :func:`near_edge_count`'s scores (session 83's audit: scores of 1e-300
    were read as 1e-12, log-odds -27.6 for -690.8, without a word, and the fit moved)."""
    how = (f"FormulaCalibrator({calibrator.formula!r}, eps=1e-300)"
           if isinstance(calibrator, FormulaCalibrator)
           else f"{type(calibrator).__name__}(eps=1e-300)")
    return (f"{n} score(s) within {calibrator.eps:g} of 0 or 1 are read as {calibrator.eps:g} "
            f"or 1 - {calibrator.eps:g} by the {calibrator.name} calibrator (its eps); to use "
            f"them as they are, pass a calibrator with a smaller eps, e.g. calibrator={how}")
