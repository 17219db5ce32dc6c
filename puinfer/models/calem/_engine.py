"""Estimation for CalEM: the E- and M-steps, the surrogate log-likelihood and the solvers.

Everything :meth:`CalEM.fit <puinfer.models.calem.CalEM.fit>` computes lives here; it returns a
:class:`CalEMFit` record from which :class:`~puinfer.models.calem.CalEMResults` is built. The
algorithms are described in the Notes of ``CalEM.fit``. The optimisers are the shared ones of
:mod:`puinfer.base.optimize`: Newton ascent on the surrogate ``F`` is
:func:`~puinfer.base.optimize.newton_maximize` (with CalEM's safeguards as its ``fallback``
and ``callback`` options) and the accelerated EM map is :func:`~puinfer.base.optimize.squarem`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import isotonic_regression
from scipy.special import expit

from ..._validation import as_float_vector, warn_and_record
from ...base.gram import weighted_grams
from ...base.numeric import below_zero, softplus
from ...base.optimize import newton_maximize, squarem
from ...base.results import ConvergenceInfo
from ...exceptions import AssumptionWarning, ConvergenceWarning, SeparationWarning
from .calibrators import FittedCalibrator, logistic_derivs, logistic_fit, weighted_loglik

METHODS = ("auto", "newton", "em", "squarem")


@dataclass(frozen=True)
class CalEMFit:
    """Everything :meth:`CalEM.fit` estimated (the record a :class:`CalEMResults` is built from).

    Attributes
    ----------
    basis : object
        The calibrator's basis, learned from all scores.
    fitted, baseline, biased, pooled : FittedCalibrator
        The CalEM map ``g_theta``, the control-only fit ``g_theta0``, the fit to the treated
        rows' biased labels ``g_eta`` and the fit to all rows as if every label were clean.
    h_raw_treated : numpy.ndarray
        Unclipped ``(g_eta - g_theta) / g_eta`` on the treated rows (a fit with a known ``h``:
        that ``h``).
    objective_17 : float
        ``Q(theta_hat | theta_hat)`` (penalised for a penalised spline).
    surrogate : float
        The surrogate log-likelihood ``F(theta_hat)`` (penalised for a penalised spline).
    penalty : float
        ``theta' P theta / 2`` at the solution (0 without a penalty).
    cov : numpy.ndarray or None
        Sandwich covariance of the parameters (None for isotonic or a known ``h``).
    trace : pandas.DataFrame
    convergence : ConvergenceInfo
    method : str
        ``"newton"``, ``"em"``, ``"squarem"`` or ``"known h"``.
    warnings : tuple of (str, str)
    """

    basis: object
    fitted: FittedCalibrator
    baseline: FittedCalibrator
    biased: FittedCalibrator
    pooled: FittedCalibrator
    h_raw_treated: np.ndarray
    objective_17: float
    surrogate: float
    penalty: float
    cov: np.ndarray | None
    trace: pd.DataFrame
    convergence: ConvergenceInfo
    method: str
    warnings: tuple
    #: Dask data (``h_raw_treated`` is then None): the results' statistics of ``h``
    h_stats: dict | None = None
    #: Dask data: the joint ``(theta, eta)`` sandwich (in memory it is recomputed for plots)
    cov_joint: np.ndarray | None = None


# ---------------------------------------------------------------------------------------------
# shared pieces
# ---------------------------------------------------------------------------------------------
def soft_labels(z, g_t, g_eta_t):
    """E-step (eq. (15)-(16)): ``z (1 - h)`` with ``h = clip((g_eta - g)/g_eta, 0, 1)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        h_raw = np.where(g_eta_t > 0, (g_eta_t - g_t) / g_eta_t, 0.0)
    h = np.clip(h_raw, 0.0, 1.0)
    return z * (1.0 - h), h_raw


def _surrogate_treated(eta_t, z, eta_e):
    """Treated rows' part of the surrogate log-likelihood F (see :class:`CalEMResults`)."""
    log_g, log1m_g = -np.logaddexp(0.0, -eta_t), -np.logaddexp(0.0, eta_t)
    log_e, log1m_e = -np.logaddexp(0.0, -eta_e), -np.logaddexp(0.0, eta_e)
    c = 1.0 - 1.0 / np.maximum(expit(eta_e), 1e-300)
    val = np.where(eta_t < eta_e, c * log1m_g, log_g + c * log1m_e - log_e)
    return float(np.sum(np.where(z == 1, val, log1m_g)))


def known_h_values(h, s_t):
    """A known treatment effect (constant or function of the score) on the treated scores.

    Raises ``ValueError``/``TypeError`` naming ``h`` for a value that is not a number in
    [0, 1] (NaN, infinite, a string, a sequence) or a function that does not return one such
    number per score.
    """
    if callable(h):
        ht = as_float_vector(h(s_t), "h(score)")
        if ht.size != s_t.size:
            raise ValueError(f"h(score) must return one value per score; got {ht.size} "
                             f"values for {s_t.size} scores")
        what = "h(score)"
    else:
        msg = f"h must be one number in [0, 1] or a function of the score; got {h!r}"
        if isinstance(h, (bool, np.bool_, str, bytes)):
            raise TypeError(msg)
        try:
            h0 = np.asarray(h, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(msg) from None
        if h0.ndim != 0:
            raise TypeError(msg)
        if not np.isfinite(h0):
            raise ValueError(f"h must be a number in [0, 1]; got {float(h0)}")
        ht = np.full(s_t.size, float(h0))
        what = "h"
    bad = (ht < 0) | (ht > 1)
    if np.any(bad):
        raise ValueError(f"{what} must be in [0, 1]; {int(bad.sum())} value(s) are not "
                         f"(e.g. {ht[bad][:3].tolist()})")
    return ht


# ---------------------------------------------------------------------------------------------
# engines: the E-step, M-step, F and (parametric) its derivatives and the sandwich
# ---------------------------------------------------------------------------------------------
class Rows:
    """A block of rows of the fixed-point iteration: ``nc`` control rows first, then treated
    rows, with the biased fit's constants on the treated rows. In memory one block holds all
    rows; on Dask collections each partition's treated rows are a block (and the control rows
    one more), and the block sums of :func:`block_sums` / :func:`sandwich_block` are added."""

    def __init__(self, X, nc, y, z, eta_e_t):
        # column-major: ``X @ theta`` and ``X.T @ v``, once per iteration, are twice as fast
        self.X = np.asfortranarray(X)
        self.nc = nc
        self.y, self.z = y, z
        self.eta_e_t = eta_e_t
        self.g_eta_t = expit(eta_e_t)
        # F, the E-step and their derivatives differ from the logistic likelihood only on the
        # treated positives (``i1``): the per-row constants are kept for those rows alone
        self.i1 = np.flatnonzero(z == 1)
        self.j1 = nc + self.i1                  # the same rows among all (control first)
        g1, ee1 = self.g_eta_t[self.i1], eta_e_t[self.i1]
        log_e1, log1m_e1 = -softplus(-ee1), -softplus(ee1)
        self._ee1, self._log_e1 = ee1, log_e1
        self._c1 = 1.0 - 1.0 / np.maximum(g1, 1e-300)   # phi below the kink
        self._k1 = self._c1 * log1m_e1 - log_e1           # phi's constant above it

    def ratio(self, e1, l1, free1):
        """``min(1, g / g_eta)`` on the treated positives (linear predictor ``e1``,
        ``l1 = log(1 - g)``): ``exp(log g - log g_eta)`` where ``g < g_eta`` (``free1``),
        exact where ``g_eta`` underflows to 0; 1 elsewhere."""
        return np.where(free1, np.exp(np.minimum(e1 + l1 - self._log_e1, 0.0)), 1.0)


def block_sums(r: Rows, theta, *, grad=True, jac=False, hq=False, pre=None):
    """F, (17), E-step labels, the gradient G of F and (optionally) its Hessian J, without the
    penalty, summed over the block's rows (plus the per-row ``eta``, ``log1m``, ``a``,
    ``d_q`` and, on the treated positives, ``free1`` that the in-memory engine keeps).
    ``hq``: also ``H_Q = X' diag(g (1 - g)) X``. ``pre``: the output of an earlier call at
    the same ``theta``, whose F, ``eta``, ``log1m`` and ``free1`` are reused (a line search's
    value, then its derivatives)."""
    nc, i1 = r.nc, r.i1
    j1 = r.j1
    if pre is not None:
        F, eta, log1m, free1 = pre["F"], pre["eta"], pre["log1m"], pre["free1"]
        e1, l1 = eta[j1], log1m[j1]
    else:
        eta = r.X @ theta
        log1m = softplus(eta)
        np.negative(log1m, out=log1m)           # log(1 - g)
        e1, l1 = eta[j1], log1m[j1]
        free1 = e1 < r._ee1                     # treated positives with h > 0 (unclipped)
        # every row adds log(1 - g) (control positives also eta); treated positives add
        # (c - 1) log(1 - g) below the kink, eta + k above it; c log(1 - g) only where it is
        # used: elsewhere c (~ -1/g_eta) can overflow it
        F = (float(r.y @ eta[:nc] + log1m.sum())
             + float(np.where(free1, r._c1 * np.where(free1, l1, 0.0) - l1,
                              e1 + r._k1).sum()))
    out = {"F": F, "eta": eta, "log1m": log1m, "free1": free1}
    if grad or jac:
        p = np.add(eta, log1m)
        np.exp(p, out=p)                        # g
        # g / g_eta on the log scale: g_eta can underflow to 0 on separated data
        ratio1 = r.ratio(e1, l1, free1)
        a = np.zeros(r.z.size)
        a[i1] = ratio1                          # z min(1, g / g_eta)
        lab = np.concatenate([r.y, a])
        out["a"] = a
        out["Q"] = float(lab @ eta + log1m.sum())
        lab -= p                                # (its buffer reused: lab - g)
        out["G"] = r.X.T @ lab
        if jac:
            q = np.subtract(1.0, p, out=lab)    # 1 - g
            d_q = p * q
            d = np.multiply(p, q, out=q)        # the same g (1 - g), then the kink's part
            d[j1] -= np.where(free1, ratio1 * (1.0 - p[j1]), 0.0)
            out["d_q"] = d_q
            grams = weighted_grams(r.X, [d, d_q] if hq else [d])
            out["J"] = -grams[0]
            if hq:
                out["HQ"] = grams[1]
    return out


def sandwich_block(r: Rows, theta, ev=None, a22=None):
    """The block sums of the sandwich (see :meth:`ParametricEngine.sandwich`), without the
    penalty: ``J`` (the Hessian of F), ``A12 = d U_theta / d eta``, ``A22 = X_t' W X_t`` and
    ``B = sum psi psi'`` (``2k x 2k``). ``ev``: :func:`block_sums` with ``jac=True`` at
    ``theta``, if already computed; ``a22``: ``A22``, if known (the unpenalised biased fit's
    information: the same product)."""
    k = theta.size
    Xt, Xc, z, y = r.X[r.nc:], r.X[:r.nc], r.z, r.y
    ge = r.g_eta_t
    if ev is None:
        ev = block_sums(r, theta, jac=True)
    eta, log1m = ev["eta"], ev["log1m"]
    p = np.exp(eta + log1m)
    pc, pt = p[:r.nc], p[r.nc:]
    a, free1, i1 = ev["a"], ev["free1"], r.i1
    # d U_theta / d eta = sum_t z 1{free} g d(1/g_eta)/d eta x x' = -(...)(1 - g_eta)/g_eta
    d = np.zeros(pt.size)
    d[i1] = np.where(free1, a[i1], 0.0) * (1 - ge[i1])
    # B = sum psi psi', psi = (x (a - g), x (z - g_eta)) on treated rows, (x (y - g), 0) on
    # control rows: weighted Gram matrices (no (rows x 2k) array is built)
    u, v = a - pt, z - ge
    if a22 is None:
        A12, a22, Buu, Buv, Bvv = weighted_grams(Xt, [d, ge * (1 - ge), u * u, u * v, v * v])
    else:
        A12, Buu, Buv, Bvv = weighted_grams(Xt, [d, u * u, u * v, v * v])
    B = np.empty((2 * k, 2 * k))
    B[:k, :k] = Buu + weighted_grams(Xc, [(y - pc) ** 2])[0]
    B[:k, k:] = Buv
    B[k:, :k] = Buv.T
    B[k:, k:] = Bvv
    return {"J": ev["J"], "A12": A12, "A22": a22, "B": B}


def sandwich_from_sums(S, P, joint=False):
    """``A^-1 B A^-T`` from the summed :func:`sandwich_block` (None if ``A`` is singular)."""
    k = P.shape[0]
    A = np.zeros((2 * k, 2 * k))
    A[:k, :k] = -(S["J"] - P)
    A[:k, k:] = S["A12"]
    A[k:, k:] = S["A22"] + P
    try:
        Ainv = np.linalg.inv(A)
    except np.linalg.LinAlgError:
        return None
    cov = Ainv @ S["B"] @ Ainv.T
    # A^-1 B A^-T is positive semi-definite (B is a sum of outer products): a variance below
    # 0 beyond rounding is A's ill-conditioning (-4.8e18 at a separated spline fit), as good
    # as singular
    if np.any(below_zero(np.diag(cov))):
        return None
    return cov if joint else cov[:k, :k]


class ParametricEngine:
    """Fixed-point machinery for ``g_theta = expit(B(s)' theta)``.

    Rows are stacked control first, then treated. One call of :meth:`evaluate` makes one pass
    over the data and returns everything an iteration needs: the block sums of
    :func:`block_sums` on one block holding all rows (the Dask engine adds them over blocks).
    """

    parametric = True

    def __init__(self, cal, basis, X, nc, y, z, eta_e_t, P, a22=None):
        self.cal, self.basis = cal, basis
        self._a22 = a22  # A22 of the sandwich, if known (see sandwich_block)
        self.rows = Rows(X, nc, y, z, eta_e_t)
        self.X = self.rows.X
        self.nc = nc
        self.y, self.z = y, z
        self.eta_e_t = eta_e_t
        self.g_eta_t = self.rows.g_eta_t
        self.P = np.zeros((X.shape[1],) * 2) if P is None else P
        self.w = np.ones(X.shape[0])
        # the last block_sums and its theta: Newton's line search asks for F at a point and
        # then, once accepted, for its derivatives; the certificate and the sandwich ask
        # again at the solution
        self._last = (None, None)

    @property
    def Xc(self):
        return self.X[:self.nc]

    @property
    def Xt(self):
        return self.X[self.nc:]

    def theta_of(self, fitted):
        return fitted._params.to_numpy()

    def evaluate(self, theta, *, grad=True, jac=False):
        """F, (17), E-step labels, gradient G of F and (optionally) its Hessian J at theta."""
        pen = 0.5 * theta @ self.P @ theta
        out = self._block_sums(theta, grad=grad, jac=jac)
        out["F"] = out["F"] - pen
        out["pen"] = pen
        if grad or jac:
            out["Q"] = out["Q"] - pen
            out["G"] = out["G"] - self.P @ theta
            if jac:
                out["J"] = out["J"] - self.P
        return out

    def _block_sums(self, theta, *, grad, jac):
        """:func:`block_sums` over the rows (a copy of the dict: callers add the penalty),
        reusing the last call's if it was at the same ``theta``."""
        theta = np.asarray(theta, dtype=float)
        key, last = self._last
        same = key is not None and np.array_equal(key, theta)
        if same and ("J" in last if jac else ("G" in last or not grad)):
            out = last
        else:
            out = block_sums(self.rows, theta, grad=grad, jac=jac, pre=last if same else None)
            self._last = (theta.copy(), out)
        return dict(out)

    def q(self, theta, a):
        """Objective (17) (penalised as Algorithm 2) at ``theta`` with E-step labels ``a``."""
        eta = self.X @ theta
        return weighted_loglik(eta, np.concatenate([self.y, a]), self.w) \
            - 0.5 * theta @ self.P @ theta

    def estep(self, theta):
        return soft_labels(self.z, expit(self.Xt @ theta), self.g_eta_t)

    def surrogate(self, theta):
        """F(theta): the function Algorithm 3 increases at every EM step (an MM algorithm)."""
        return self.evaluate(theta, grad=False)["F"]

    def trace_values(self, x0, a0, x1):
        """A row of the EM trace: ``Q(x0 | x0)``, ``Q(x1 | x0)`` and ``F(x0)`` (``a0``: the
        E-step at ``x0``)."""
        q0, f0 = self.q(x0, a0), self.surrogate(x0)
        return q0, self.q(x1, a0), f0

    def penalty_value(self, theta):
        return float(0.5 * theta @ self.P @ theta)

    def labels_of_rows(self, a):
        """Row-wise treated labels as the engine's E-step labels (here the same)."""
        return a

    def mstep_labels(self, a, start):
        theta, *_ = logistic_fit(self.X, np.concatenate([self.y, a]), self.w,
                                 penalty=self.P if np.any(self.P) else None, start=start)
        return theta

    def mstep(self, theta):
        a, _ = self.estep(theta)
        return self.mstep_labels(a, theta), a

    def emap(self, theta):
        """One iteration of Algorithm 3 (E-step, then M-step)."""
        return self.mstep(theta)[0]

    def g_treated(self, theta):
        return expit(self.Xt @ theta)

    def fitted(self, theta):
        names = self.cal.param_names(self.basis)
        ev = self.evaluate(theta)
        n = int(self.X.shape[0])
        return FittedCalibrator(self.cal, self.basis, pd.Series(theta, index=names),
                                ev["Q"] + ev["pen"], n, float(n), self.edf(theta), True, 0,
                                None, [])

    def edf(self, theta) -> float:
        """Effective degrees of freedom ``tr((H + P)^-1 H)`` at ``theta``, ``H`` the negative
        Hessian of the surrogate ``F`` (the number of parameters without a penalty)."""
        k = len(theta)
        if not np.any(self.P):
            return float(k)
        A = -self.evaluate(theta, jac=True)["J"]  # H + P
        try:
            return float(np.trace(np.linalg.solve(A, A - self.P)))
        except np.linalg.LinAlgError:
            return float("nan")

    # G(theta) = sum_c (y - g) x + sum_t (z min(1, g/g_eta) - g) x - P theta: the M-step score
    # with the E-step plugged in; its roots are the fixed points of Algorithm 3.
    def residual(self, theta):
        return self.evaluate(theta)["G"]

    def jacobian(self, theta):
        return self.evaluate(theta, jac=True)["J"]

    def em_direction(self, ev):
        """``H_Q^{-1} G``: to first order the EM step ``M(theta) - theta`` (one Newton step
        on (17) from ``theta``)."""
        HQ = (ev["HQ"] if "HQ" in ev else weighted_grams(self.X, [ev["d_q"]])[0]) + self.P
        try:
            return np.linalg.solve(HQ, ev["G"])
        except np.linalg.LinAlgError:
            # every fitted probability is 0 or 1 (diverging, separated fit): least squares
            return np.linalg.lstsq(HQ, ev["G"], rcond=None)[0]

    def sandwich(self, theta, joint: bool = False):
        """Sandwich covariance of the CalEM fixed point as a stacked M-estimator in (theta, eta)
        (the ``theta`` block; both, ``2k x 2k``, with ``joint=True``).

        Estimating equations: ``U_eta = sum_t (z - g_eta) x`` (the biased fit) and
        ``U_theta = G(theta, eta)`` (the fixed-point equation). ``cov = A^-1 B A^-T`` with
        ``A = -dU/d(theta, eta)`` and ``B = sum_j psi_j psi_j'`` over rows.
        """
        ev = self._block_sums(theta, grad=True, jac=True)
        return sandwich_from_sums(sandwich_block(self.rows, theta, ev, self._a22), self.P,
                                  joint)


class IsotonicEngine:
    """EM map for the isotonic calibrator: theta = fitted values at the distinct scores.

    The biased fit ``g_eta`` is itself a function of the score, so the E-step, the M-step, F
    and objective (17) depend on the rows only through counts at each distinct score: every
    iteration works on the distinct scores alone (with tied scores, far fewer than the rows).
    The E-step labels are kept in that form, as the sum of the treated rows' labels at each
    distinct score (:meth:`labels_of_rows` converts row-wise labels).
    """

    parametric = False

    def __init__(self, cal, basis, s_c, s_t, y, z, g_eta_t, g_eta_distinct):
        self.cal, self.basis = cal, basis
        s = np.concatenate([s_c, s_t])
        self.xs, self.inv = np.unique(s, return_inverse=True)
        m = self.xs.size
        self.ws = np.bincount(self.inv, minlength=m).astype(float)
        self.nc = s_c.size
        self.inv_t = self.inv[self.nc:]
        self.y, self.z, self.g_eta_t = y, z, g_eta_t
        inv_c = self.inv[:self.nc]
        self._y_sums = np.bincount(inv_c, weights=y, minlength=m)      # control positives
        self._wc = np.bincount(inv_c, minlength=m).astype(float)       # control rows
        self._z_sums = np.bincount(self.inv_t, weights=z, minlength=m)  # treated positives
        self._z0 = np.bincount(self.inv_t, minlength=m) - self._z_sums  # treated negatives
        # E-step (eq. (15)-(16)): a = z (1 - h) = z min(1, g / g_eta); a = z where g_eta = 0
        ge = np.asarray(g_eta_distinct, dtype=float)
        with np.errstate(divide="ignore"):
            self._inv_ge = np.where(ge > 0, 1.0 / ge, 0.0)
        self._ge0 = (ge <= 0).astype(float)
        # scores with treated positives, where the E-step labels can be non-zero: computed
        # there alone when they are at most half of the scores (the rest are 0 either way)
        pos = np.flatnonzero(self._z_sums > 0)
        self._estep_at = None if 2 * pos.size > m else \
            (pos, self._z_sums[pos], self._inv_ge[pos], self._ge0[pos])
        # F's treated constants (see _surrogate_treated), on the clipped g_eta
        gc = np.clip(ge, cal.eps, 1 - cal.eps)
        self.eta_e_t = np.log(gc) - np.log1p(-gc)
        self._ge_clipped = gc
        c = 1.0 - 1.0 / gc
        self._zc = self._z_sums * c
        self._zk = self._z_sums * (c * np.log1p(-gc) - np.log(gc))
        # F's coefficients of log(1 - p) that do not depend on p (see surrogate)
        self._l1p_sums = self._wc + self._z0 - self._y_sums
        self.w = np.ones(s.size)
        self._runs_cache = (None, None)

    def theta_of(self, fitted):
        return np.interp(self.xs, fitted._params.index.to_numpy(dtype=float),
                         fitted._params.to_numpy())

    def cells(self):
        """The engine on *cells* and the index of each distinct score's cell.

        A cell is a single distinct score with treated positives or a maximal stretch of
        adjacent distinct scores without any whose M-step value ``y_sums / w`` is the same:
        adjacent equal values lie in one block of every weighted isotonic regression (where
        a solution split them, their common value would fit both better than the two values
        do), and only the scores with treated positives change between iterations (the
        E-step labels are 0 elsewhere). So every M-step output is constant on the cells, and
        the map, F and objective (17) are those of a smaller isotonic problem: the cells with
        their summed weights and counts (on the bench's 1e6 distinct scores, 46% as many
        cells). The engine returned is this class on the cells' arrays, so its methods are
        these; ``theta`` on the scores is ``theta_cells[index]``, on the cells
        ``theta[starts]`` (the first score of each cell)."""
        m = self.xs.size
        var = self._z_sums > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            value = self._y_sums / self.ws
        new = np.empty(m, dtype=bool)
        new[0] = True
        new[1:] = var[1:] | var[:-1] | (value[1:] != value[:-1])
        starts = np.flatnonzero(new)
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        for name in ("ws", "_y_sums", "_wc", "_z_sums", "_z0", "_l1p_sums", "_zc", "_zk"):
            setattr(out, name, np.add.reduceat(getattr(self, name), starts))
        # at a cell of several scores z_sums = 0: its g_eta terms vanish, any score's will do
        for name in ("xs", "_inv_ge", "_ge0", "eta_e_t", "_ge_clipped"):
            setattr(out, name, getattr(self, name)[starts])
        index = np.cumsum(new) - 1
        out.inv = index[self.inv]
        out.inv_t = out.inv[self.nc:]
        pos = np.flatnonzero(out._z_sums > 0)
        out._estep_at = None if 2 * pos.size > starts.size else \
            (pos, out._z_sums[pos], out._inv_ge[pos], out._ge0[pos])
        out.size = np.diff(np.r_[starts, m]).astype(float)  # distinct scores per cell
        out._runs_cache = (None, None)
        return out, index, starts

    def labels_of_rows(self, a):
        """Row-wise treated labels ``a`` as the engine's E-step labels (sums per score)."""
        return np.bincount(self.inv_t, weights=a, minlength=self.xs.size)

    def mstep_labels(self, a_sums, start=None):
        ys = np.add(self._y_sums, a_sums)  # (y_sums + a_sums) / ws, in place
        ys /= self.ws
        x = isotonic_regression(ys, weights=self.ws, increasing=True).x  # a fresh array
        return np.clip(x, 0, 1, out=x)

    def estep(self, theta):
        if self._estep_at is None:  # z_sums min(theta / g_eta + [g_eta = 0], 1), in place
            t = theta * self._inv_ge
            t += self._ge0
            np.minimum(t, 1.0, out=t)
            return np.multiply(self._z_sums, t, out=t), None
        pos, z, inv_ge, ge0 = self._estep_at
        t = theta[pos] * inv_ge
        t += ge0
        np.minimum(t, 1.0, out=t)
        t *= z
        a = np.zeros(theta.size)
        a[pos] = t
        return a, None

    def g_treated(self, theta):
        return theta[self.inv_t]

    def mstep(self, theta):
        a, _ = self.estep(theta)
        return self.mstep_labels(a), a

    def emap(self, theta):
        return self.mstep(theta)[0]

    def penalty_value(self, theta):
        return 0.0

    def _runs(self, theta):
        """:meth:`_runs_of` ``theta``, the last one kept (:meth:`fitted` asks for the same
        theta as the trace's last row)."""
        key, val = self._runs_cache
        if key is not None and np.array_equal(key, theta):
            return val
        val = self._runs_of(theta)
        self._runs_cache = (theta.copy(), val)
        return val

    def _runs_of(self, theta):
        """``theta`` as runs of equal values (an isotonic fit is a step function: on a million
        distinct scores a few thousand runs), so that the logs are taken once per run: the
        runs' starts, ``p`` (clipped to [eps, 1 - eps]), ``log p``, ``log(1 - p)`` and the sums
        per run of the rows' weights, of F's constant coefficients of ``log(1 - p)`` and of
        the control positives."""
        new = np.empty(theta.size, dtype=bool)
        new[0] = True
        np.not_equal(theta[1:], theta[:-1], out=new[1:])
        starts = np.flatnonzero(new)
        p = np.clip(theta[starts], self.cal.eps, 1 - self.cal.eps)
        return (starts, p, np.log(p), np.log1p(-p), np.add.reduceat(self.ws, starts),
                np.add.reduceat(self._l1p_sums, starts), np.add.reduceat(self._y_sums, starts))

    def trace_values(self, x0, a0, x1):
        """A row of the EM trace: ``Q(x0 | x0)``, ``Q(x1 | x0)`` and ``F(x0)`` (``a0``: the
        E-step at ``x0``), each iterate's runs found once."""
        r0 = self._runs_of(x0)
        return self.q(x0, a0, r0), self.q(x1, a0, self._runs_of(x1)), self.surrogate(x0, r0)

    def surrogate(self, theta, runs=None):
        """F(theta) for the isotonic map (probabilities clipped to [eps, 1 - eps]); ``runs``:
        :meth:`_runs_of` ``theta``, if known."""
        starts, _, lp, l1p, _, l1p_sums, y_runs = self._runs(theta) if runs is None else runs
        # treated positives (see _surrogate_treated; eta < eta_e <=> p < g_eta):
        # c log(1 - p) below their g_eta, log p + k at or above it
        below = np.clip(theta, self.cal.eps, 1 - self.cal.eps) < self._ge_clipped
        zc = np.add.reduceat(np.where(below, self._zc, 0.0), starts)
        z_above = np.add.reduceat(np.where(below, 0.0, self._z_sums), starts)
        return float((y_runs + z_above) @ lp + (l1p_sums + zc) @ l1p + self._zk @ ~below)

    def q(self, theta, a_sums, runs=None):
        starts, _, lp, l1p, w_runs, _, y_runs = self._runs(theta) if runs is None else runs
        return float((y_runs + np.add.reduceat(a_sums, starts)) @ (lp - l1p) + w_runs @ l1p)

    def fitted(self, theta):
        a, _ = self.estep(theta)
        params = pd.Series(theta, index=pd.Index(self.xs, name="score"), name="g")
        return FittedCalibrator(self.cal, self.basis, params, self.q(theta, a), self.w.size,
                                float(self.w.size), float(np.unique(theta).size), True, 0,
                                None, [])

    def sandwich(self, theta):
        return None


@dataclass(frozen=True)
class Setup:
    """The parts of a CalEM fit that do not depend on the fit options."""

    engine: ParametricEngine | IsotonicEngine
    basis: object
    baseline: FittedCalibrator
    biased: FittedCalibrator
    warnings: tuple
    #: the engine's rows: control scores ``s_c`` then treated scores ``s_t``, each in the
    #: canonical order; the treated rows are ``model.score[model.treated][order_t]``
    order_t: np.ndarray
    s_c: np.ndarray
    s_t: np.ndarray


def canonical_rows(model):
    """Control and treated rows, each sorted by (score, label): every sum of the fit then
    runs in one order whatever the order of the caller's rows, so the estimates depend only
    on the data, not on how the rows were shuffled (bit for bit)."""
    s_c, s_t = model.score[~model.treated], model.score[model.treated]
    y, z = model.label[~model.treated], model.label[model.treated]
    oc, ot = _score_label_order(s_c, y), _score_label_order(s_t, z)
    return s_c[oc], s_t[ot], y[oc], z[ot], ot


def _score_label_order(s, lab):
    """The order of ``np.lexsort((lab, s))`` up to rows equal in both (interchangeable), by
    numpy's fast unstable argsort: a second sort only orders the labels within tied scores."""
    o = np.argsort(s)
    ss = s[o]
    new = np.empty(ss.size, dtype=bool)
    new[:1] = True
    np.not_equal(ss[1:], ss[:-1], out=new[1:])
    if not new.all():
        group = np.cumsum(new)
        o = o[np.argsort(2 * group + (lab[o] > 0))]
    return o


def _fit_set(who, cal, basis, X, lab, start=None):
    """The calibrator fitted to one set (control or treated); errors name the set."""
    try:
        return cal._fit_design(basis, X, lab, np.ones_like(lab), start=start)
    except np.linalg.LinAlgError as exc:
        raise ValueError(f"{who} set: the {cal.name} calibrator cannot be fitted ({exc}); "
                         "too few rows or distinct scores?") from None
    except ValueError as exc:
        raise ValueError(f"{who} set: {exc}") from None


def extreme_fit_warning(warns: list, theta, eta_max: float, score_at: float) -> None:
    """Warn (and record) where CalEM's own fit has fitted log-odds beyond +-30 on the rows
    (``eta_max``, signed, at the score ``score_at``) or a parameter beyond 1e3: the criterion
    of the calibrator fits (:func:`~.calibrators.logistic_fit_rows`), which CalEM's fit of
    ``F`` did not get. Session 70's audit: with 500 control and 20,000 treated rows
    (``simulate_calem``, g2, h1, P = 0.5, seeds 1 and 2) the spline's log-odds at its lowest
    knot (the lowest scores, 6e-14 and 1.5e-12) were -172.6 and -291.7 (sandwich SE 236 and
    160; control-only fits -12.0 and -32.8), without a warning. ``F`` has a finite maximum
    there, but nearly flat in that parameter: the data do not determine the curve at that end
    of the scores."""
    big = float(np.max(np.abs(theta), initial=0.0))
    if not (abs(eta_max) > 30 or big > 1e3):
        return
    what = (f"fitted log-odds reach {eta_max:.4g} at score {score_at:.3g} (beyond +-30, where "
            "the calibrator fits warn too)" if abs(eta_max) > 30 else
            f"a parameter reaches {big:.4g} in absolute value (beyond 1e3, where the "
            "calibrator fits warn too; the largest fitted log-odds are "
            f"{eta_max:.4g}, at score {score_at:.3g})")
    warn_and_record(
        warns, f"CalEM fit: {what}: the data barely determine the "
        "curve there (the maximum of F is flat or missing in that direction: separated or "
        "sparse rows at an end of the score range), so its parameters there and their "
        "standard errors are not reliable; clip the scores further from 0 and 1 (the "
        "calibrator's eps: a spline's outer knots are the extreme scores' log-odds) or use a "
        "calibrator with fewer parameters", SeparationWarning)


def no_sandwich_warning(warns: list) -> None:
    """Warn (``IllConditionedWarning``) and record that a parametric fit's sandwich covariance
    does not exist (the estimating equations' derivative is singular, e.g. on separated data):
    a defect of this fit. Isotonic fits and fits with a known ``h`` have no covariance by
    design; the results' summary notes that instead."""
    from ...exceptions import IllConditionedWarning
    from .results import _NO_COV_SINGULAR

    warn_and_record(warns, f"CalEM: {_NO_COV_SINGULAR}", IllConditionedWarning)


def _pooled_warnings(pooled, warns: list) -> None:
    """Issue and record the pooled fit's warnings (it is the null fit of ``test_bias``: a
    separated or unconverged pooled fit bears on that test)."""
    from ... import exceptions as _exc

    for cat, msg in pooled.warnings:
        warn_and_record(warns, f"pooled fit (test_bias's null): {msg}",
                        getattr(_exc, cat, _exc.PuinferWarning))


def pooled_start(Xc, y, biased):
    """The pooled fit's start: one Newton step from the biased fit on the pooled likelihood.
    The treated rows' part of that step is known from the biased fit (gradient zero,
    Hessian minus its information), so only the control rows ``Xc``, ``y`` are summed: the
    step a first iteration on all rows would take, without its pass over them."""
    theta = biased._params.to_numpy()
    if not biased.converged or biased.information is None:
        return theta
    g, H = logistic_derivs(Xc, y, np.ones(y.size), Xc @ theta)
    try:
        step = np.linalg.solve(biased.information.to_numpy() - H, g)
    except np.linalg.LinAlgError:
        return theta
    return theta + step if np.all(np.isfinite(step)) else theta


#: why CalEM with a family like the temperature calibrator represents no label bias
NO_BIAS_FAMILY = (
    "calibrator: the {name} family can represent no label bias: under Assumption 1 (the "
    "biased curve at or above the clean one at every score) its two curves are equal over the "
    "control scores' range (every temperature curve, e.g., passes through 0.5 at the score "
    "0.5), so h is 0 wherever it is not clipped, and where the labels are biased the clean "
    "curve and h are off; use the logistic, beta or spline calibrator (test_bias() remains a "
    "valid test of bias)")


def represents_no_bias(cal, basis, scores) -> bool:
    """Whether Assumption 1 leaves the family no biased curve but the clean one: no direction
    ``d != 0`` of the parameters with ``X(s) d >= 0`` (``logit g_eta - logit g_theta``) at
    every score of a grid over the range of ``scores`` (a linear programme; session 85's
    audit: the temperature calibrator, or the formula ``~ logit(score) - 1``, whose curves all
    pass through 0.5 at 0.5, gave 1/T 7.7 SEs from the truth with biased labels, silently)."""
    from scipy.optimize import linprog

    if not cal.parametric:
        return False
    lo, hi = (float(np.clip(v, 1e-9, 1 - 1e-9)) for v in (np.min(scores), np.max(scores)))
    grid = np.clip(expit(np.linspace(np.log(lo / (1 - lo)), np.log(hi / (1 - hi)), 101)),
                   lo, hi)
    grid[[0, -1]] = lo, hi  # (expit(logit(lo)) can fall below lo: outside a bs() basis)
    try:
        X = np.asarray(cal.design(basis, grid), dtype=float)
    except ValueError:  # (a check whose only outcome is a warning never fails a fit)
        return False
    scale = np.abs(X).max(axis=0)
    X = X / np.where(scale > 0, scale, 1.0)
    # (a column of one sign -- an intercept -- or the columns' sum -- a spline's cardinal
    # basis sums to 1 -- is such a direction: the LP only where neither is)
    for v in np.column_stack([X, X.sum(axis=1)]).T:
        if np.any(v != 0) and (np.all(v >= 0) or np.all(v <= 0)):
            return False
    res = linprog(-X.sum(axis=0), A_ub=-X, b_ub=np.zeros(grid.size),
                  bounds=[(-1.0, 1.0)] * X.shape[1], method="highs")
    return bool(res.status == 0 and -res.fun <= 1e-9 * grid.size)


def no_bias_warning(warns: list, cal, basis, s_c, h) -> None:
    """:data:`NO_BIAS_FAMILY` where the family can represent no label bias over the control
    scores ``s_c`` (:func:`represents_no_bias`) and ``h`` is not given (a known ``h`` sets
    the biased curve itself)."""
    if h is None and represents_no_bias(cal, basis, s_c):
        warn_and_record(warns, NO_BIAS_FAMILY.format(name=cal.name), AssumptionWarning)


def setup(model) -> Setup:
    """Basis from all scores, the control-only fit ``g_theta0``, the biased fit ``g_eta`` and
    the engine of the fixed-point iteration."""
    from ... import exceptions as _exc

    if model._dask is not None:  # rows in Dask collections
        from ._dask import setup_dask

        return setup_dask(model)
    cal = model.calibrator
    s_c, s_t, y, z, order_t = canonical_rows(model)
    s_all = np.concatenate([s_c, s_t])
    # all scores sorted (two sorted runs: a stable sort merges them in linear time), which
    # also makes np.quantile's selection of the knots fast
    basis = cal.make_basis(np.sort(s_all, kind="stable"))
    if cal.parametric:
        # column-major once, before the fits: ``X @ theta``, ``X.T @ v`` and the weighted
        # Grams of every Newton iteration are faster on it (see :class:`Rows`)
        X = np.asfortranarray(cal.design(basis, s_all))
        nc = s_c.size
        k = X.shape[1]
        for who, m in (("control", nc), ("treated", s_t.size)):
            if m <= k:
                raise ValueError(
                    f"calibrator: the {who} set has {m} row(s) for the {cal.name} calibrator's "
                    f"{k} parameters; each set needs more rows than parameters (more data, or "
                    "a calibrator with fewer parameters)")
        baseline = _fit_set("control", cal, basis, X[:nc], y)
        biased = _fit_set("treated", cal, basis, X[nc:], z, start=baseline._params.to_numpy())
        P = cal.penalty(basis)
        # unpenalised, the biased fit's information is X_t' W X_t at g_eta, bit for bit the
        # sandwich's A22 (the same weights and product): a pass over the rows saved
        a22 = biased.information.to_numpy() if P is None else None
        engine = ParametricEngine(cal, basis, X, nc, y, z, X[nc:] @ biased._params.to_numpy(),
                                  P, a22)
    else:
        baseline = cal._fit_arrays(basis, s_c, y, np.ones_like(y))
        biased = cal._fit_arrays(basis, s_t, z, np.ones_like(z))
        xs = np.unique(np.concatenate([s_c, s_t]))
        engine = IsotonicEngine(cal, basis, s_c, s_t, y, z, biased.predict(s_t),
                                biased.predict(xs))
    warns = []
    for f, who in ((baseline, "control"), (biased, "treated")):
        for cat, msg in f.warnings:
            warn_and_record(warns, f"{who} fit: {msg}", getattr(_exc, cat, _exc.PuinferWarning))
    return Setup(engine, basis, baseline, biased, tuple(warns), order_t, s_c, s_t)


# ---------------------------------------------------------------------------------------------
# solvers
# ---------------------------------------------------------------------------------------------
def _scale(theta):
    return 1.0 + float(np.max(np.abs(theta)))


def _on_cells(solver):
    """``solver(engine, theta0, maxiter, tol)`` run on the isotonic engine's cells
    (:meth:`IsotonicEngine.cells`: the same iterates, M-step outputs being constant on them;
    the start is taken at each cell's first score, which the first E-step does not read
    elsewhere), its solution returned on the distinct scores. Parametric engines as they
    are."""

    @functools.wraps(solver)
    def run(engine, theta0, maxiter, tol):
        if engine.parametric:
            return solver(engine, theta0, maxiter, tol)
        cells, index, starts = engine.cells()
        theta, trace, info = solver(cells, np.asarray(theta0, dtype=float)[starts], maxiter,
                                    tol)
        return theta[index], trace, info

    return run


@_on_cells
def solve_em(engine, theta0, maxiter, tol):
    """Algorithm 3 itself: ``maxiter`` E- and M-steps at most.

    Each row of the trace holds ``Q(theta_t | theta_t)`` (objective (17) at the current
    iterate, E-step at the same iterate), ``Q(theta_{t+1} | theta_t)`` (after the M-step;
    never below the former: the M-step maximises (17)), ``F(theta_t)`` and the step size.
    """
    theta = np.asarray(theta0, dtype=float).copy()
    rows, converged = [], False
    for _ in range(maxiter):
        a0, _ = engine.estep(theta)
        new = engine.mstep_labels(a0, theta)
        step = float(np.max(np.abs(new - theta)))
        rows.append((*engine.trace_values(theta, a0, new), step))
        theta = new
        if step < tol * _scale(theta):
            converged = True
            break
    trace = _em_trace(rows, engine.surrogate(theta))
    msg = f"{len(rows)} EM-map evaluations" + ("" if converged else f"; limit {maxiter} reached")
    return theta, trace, ConvergenceInfo(converged, len(rows), "EM (Algorithm 3)", msg,
                                         trace["surrogate_llf"].to_numpy())


def _em_trace(rows, f_last):
    rows = rows + [(np.nan, np.nan, f_last, np.nan)]
    trace = pd.DataFrame(rows, columns=["objective", "objective_after_mstep", "surrogate_llf",
                                        "step"])
    trace.index.name = "iteration"
    return trace


@_on_cells
def solve_squarem(engine, theta0, maxiter, tol):
    """The EM map accelerated by :func:`~puinfer.base.optimize.squarem` (scheme S3); the
    isotonic map's extrapolated fitted values are clipped to [0, 1]. ``maxiter`` counts map
    evaluations (each SQUAREM iteration takes up to three); a run that does not converge
    within them is continued once, with as many, under the monotone safeguard."""
    first = {}  # the first map evaluation of each iteration: M(theta_t) for the trace

    def emap(theta):
        a, _ = engine.estep(theta)
        new = engine.mstep_labels(a, theta)
        first.setdefault("v", (theta, a, new))
        return new

    rows = []

    def record(x_old, x_new, change):
        x0, a0, x1 = first.pop("v")
        d = np.subtract(x_new, x_old)  # max |x_new - x_old|
        rows.append((*engine.trace_values(x0, a0, x1), float(np.max(np.abs(d, out=d)))))

    project = None if engine.parametric else (lambda x: np.clip(x, 0.0, 1.0))
    opts = dict(maxiter=max(1, maxiter // 3), tol=tol, relative=True, project=project,
                callback=record, metric=getattr(engine, "size", None))
    theta, info = squarem(emap, theta0, method="SQUAREM-accelerated EM (Algorithm 3)", **opts)
    if not info.converged:
        # the extrapolations can cycle without settling (isotonic CalEM, 440 rows: F
        # alternating between -23.536 and -23.542 for 5,000 map evaluations, where EM reaches
        # its fixed point at -23.508): again from there, each extrapolation kept only where F
        # does not decrease (then F increases monotonically, as under EM)
        first.clear()
        theta, info2 = squarem(emap, theta, objective=engine.surrogate,
                               method="SQUAREM-accelerated EM (Algorithm 3), restarted with "
                               "the monotone safeguard", **opts)
        info = ConvergenceInfo(info2.converged, info.iterations + info2.iterations,
                               info2.method, f"{info.message}; then {info2.message}",
                               info2.trace, info2.grad_norm)
    trace = _em_trace(rows, engine.surrogate(theta))
    info = ConvergenceInfo(info.converged, info.iterations, info.method, info.message,
                           trace["surrogate_llf"].to_numpy(), info.grad_norm)
    return theta, trace, info


def solve_newton(engine, theta0, maxiter, tol, polish=2000):
    """Newton ascent on ``F`` with CalEM's safeguards, certified as a fixed point of
    Algorithm 3 (and finished by at most ``polish`` SQUAREM iterations if it stalls on a kink
    of ``F``'s gradient)."""
    cache = {}

    def fun(theta, order):
        if order == 0:
            return engine.surrogate(theta)
        ev = engine.evaluate(theta, jac=True)
        cache["ev"] = ev
        return ev["F"], ev["G"], ev["J"]

    n_em = []
    rows = []

    def fallback(theta, f, g, H):
        step = _fallback_step(engine, theta, f, cache["ev"])
        if step[1] == "em":
            n_em.append(1)
        return step

    def certify(theta, f, step):
        ev = cache["ev"]
        rows.append((ev["Q"], f, step.dx, float(np.max(np.abs(ev["G"]))), step.kind))
        small = step.dx < tol * _scale(theta)
        # a small damped or EM step: stop if theta is a fixed point (|H_Q^-1 G| tiny); after
        # a small *full* Newton step the error is of order step^2 (newton_maximize's xtol)
        return small and not (step.kind == "newton" and step.t == 1.0) and \
            np.max(np.abs(engine.em_direction(ev))) < 0.01 * tol * _scale(theta)

    ev0 = engine.evaluate(np.asarray(theta0, dtype=float), jac=True)
    rows.append((ev0["Q"], ev0["F"], np.nan, float(np.max(np.abs(ev0["G"]))), ""))
    theta, _, _, _, info = newton_maximize(
        # slack: near the solution F's predicted gain falls below the rounding of F (a sum
        # over all rows), which must not decide whether the Newton step is taken
        fun, theta0, maxiter=maxiter, tol=0.0, xtol=tol, armijo=1e-4, shrink=0.25,
        slack=1e3 * np.finfo(float).eps,
        min_step=1e-4, escape_saddles=False, polish=False, fallback=fallback, callback=certify,
        predict_xtol=1e-2 * tol, method="Newton ascent on F (fixed point of Algorithm 3)")
    trace = pd.DataFrame(rows, columns=["objective", "surrogate_llf", "step", "score_norm",
                                        "step_kind"])
    return _certify_fixed_point(engine, theta, trace, info, tol, len(n_em), polish)


def run_solver(method, engine, theta0, maxiter, tol):
    """The solver of ``method`` with the iteration limit ``maxiter`` (None: its default); a
    limit given also bounds Newton's SQUAREM polishing (session 67's audit: ``maxiter=1`` ran
    up to 2000 polishing steps and reported convergence)."""
    if method == "newton":
        return solve_newton(engine, theta0, maxiter or 100, tol,
                            polish=2000 if maxiter is None else maxiter)
    solver = {"em": solve_em, "squarem": solve_squarem}[method]
    return solver(engine, theta0, maxiter or 5000, tol)


def _fallback_step(engine, theta, f, ev):
    """Where no (modified) Newton step raises F: the gradient-EM direction ``H_Q^{-1} G``
    with step doubling, else an exact EM step of Algorithm 3 (which never lowers F)."""
    dq = engine.em_direction(ev)
    best, fbest, t = None, f, 1.0
    while t <= 1024:
        c = theta + t * dq
        fc = engine.surrogate(c)
        if fc <= fbest:
            break
        best, fbest = c, fc
        t *= 2
    if best is not None:
        return best, "gradient-em"
    return engine.mstep(theta)[0], "em"


def _certify_fixed_point(engine, theta, trace, info, tol, n_em, polish=2000):
    """The EM map must leave the solution in place: ``|M(theta) - theta| ~ |H_Q^{-1} G|``. A
    solution on a kink of ``G`` (a treated row with ``g = g_eta`` exactly) stalls Newton: it
    is then finished by the EM map itself, SQUAREM-accelerated."""
    fp = float(np.max(np.abs(engine.em_direction(engine.evaluate(theta, jac=True)))))
    msg = f"fixed-point residual |M(theta) - theta| = {fp:.2e}"
    if n_em:
        msg += f"; {n_em} safeguarding EM steps"
    converged, it = info.converged, info.iterations
    if fp > 10 * tol * _scale(theta):
        theta, tr2, c2 = solve_squarem(engine, theta, polish, tol)
        tr2 = tr2.iloc[:-1].assign(step_kind="squarem")[["objective", "surrogate_llf", "step",
                                                        "step_kind"]]
        trace = pd.concat([trace, tr2], ignore_index=True)
        converged, it = c2.converged, it + c2.iterations
        fp = float(np.max(np.abs(engine.em_direction(engine.evaluate(theta, jac=True)))))
        msg = (f"fixed-point residual |M(theta) - theta| = {fp:.2e} after "
               f"{c2.iterations} SQUAREM polishing steps")
    if fp > max(1e-6, 100 * tol) * _scale(theta):
        converged = False
    trace.index.name = "iteration"
    conv = ConvergenceInfo(converged, it, info.method, msg, trace["surrogate_llf"].to_numpy(),
                           float(np.max(np.abs(engine.residual(theta)))))
    return theta, trace, conv


# ---------------------------------------------------------------------------------------------
# the fit
# ---------------------------------------------------------------------------------------------
def check_method(cal, method, tol):
    """The algorithm ``method="auto"`` stands for, after checking the options."""
    if method not in METHODS:
        raise ValueError(f"method must be 'auto', 'newton', 'em' or 'squarem'; got {method!r}")
    if method == "auto":
        method = "newton" if cal.parametric else "squarem"
    if method == "newton" and not cal.parametric:
        raise ValueError("method='newton' needs a parametric calibrator; use 'squarem' or 'em' "
                         "for isotonic")
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, (int, float, np.number)):
        raise TypeError(f"tol must be a positive number; got {tol!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be positive; got {tol}")
    return method


def _known_h_fit(engine, theta0, a):
    a = engine.labels_of_rows(a)
    theta = engine.mstep_labels(a, theta0)
    q = engine.q(theta, a)
    conv = ConvergenceInfo(True, 0, "known h: one weighted fit of eq. (17)",
                           "no iteration needed", np.array([q]))
    trace = pd.DataFrame({"objective": [q], "step": [np.nan]},
                         index=pd.Index([0], name="iteration"))
    return theta, trace, conv


def check_fit_options(cal, method, maxiter, tol, h) -> str:
    """The options of :meth:`CalEM.fit` checked before any (costly) setup; returns the solver
    (``method="auto"`` resolved by :func:`check_method`)."""
    method = check_method(cal, method, tol)
    if maxiter is not None and (isinstance(maxiter, (bool, np.bool_))
                                or not isinstance(maxiter, (int, np.integer)) or maxiter < 1):
        raise ValueError(f"maxiter must be a positive integer (or None); got {maxiter!r}")
    if h is not None and not callable(h):
        known_h_values(h, np.zeros(1))
    return method


def fit_calem(model, *, method, maxiter, tol, h) -> CalEMFit:
    """All of the estimation of :meth:`CalEM.fit`; see its docstring."""
    if model._dask is not None:  # rows in Dask collections: the same solvers on block sums
        from ._dask import fit_calem_dask

        return fit_calem_dask(model, method=method, maxiter=maxiter, tol=tol, h=h)
    cal = model.calibrator
    method = check_fit_options(cal, method, maxiter, tol, h)
    st = setup(model)
    eng, warns = st.engine, list(model.init_warnings) + list(st.warnings)
    no_bias_warning(warns, cal, st.basis, st.s_c, h)
    z, s_t = eng.z, st.s_t
    theta0 = eng.theta_of(st.baseline)
    if h is not None:
        a_known = z * (1.0 - known_h_values(h, s_t))
        theta, trace, conv = _known_h_fit(eng, theta0, a_known)
        method = "known h"
    else:
        theta, trace, conv = run_solver(method, eng, theta0, maxiter, tol)
        if not conv.converged:
            warn_and_record(warns, f"CalEM ({method}) did not converge: {conv.message}",
                            ConvergenceWarning)
    a, h_raw = soft_labels(z, eng.g_treated(theta), eng.g_eta_t)
    if h is not None:  # the h the fit used (the results' statistics of h are of it)
        a, h_raw = a_known, known_h_values(h, s_t)
    lab = np.concatenate([eng.y, z]).astype(float)
    if cal.parametric:  # the engine holds the basis of all rows: not built a second time
        # its rows' rank was checked on the treated rows (the biased fit)
        pooled = cal._fit_design(st.basis, eng.X, lab, eng.w, check_rank=False,
                                 start=pooled_start(eng.Xc, eng.y, st.biased))
    else:
        pooled = cal._fit_arrays(st.basis, np.concatenate([st.s_c, st.s_t]), lab, eng.w)
    _pooled_warnings(pooled, warns)
    if cal.parametric:
        eta = eng.X @ theta
        i = int(np.argmax(np.abs(eta)))
        extreme_fit_warning(warns, theta, float(eta[i]),
                            float(st.s_c[i] if i < st.s_c.size else st.s_t[i - st.s_c.size]))
    cov = None if h is not None else eng.sandwich(theta)
    if h is None and cov is None and cal.parametric:
        no_sandwich_warning(warns)
    h_model = np.empty_like(h_raw)
    h_model[st.order_t] = h_raw  # back to the model's order of the treated rows
    return CalEMFit(st.basis, eng.fitted(theta), st.baseline, st.biased, pooled, h_model,
                    float(eng.q(theta, eng.labels_of_rows(a))), float(eng.surrogate(theta)),
                    eng.penalty_value(theta), cov, trace, conv, method, tuple(warns))
