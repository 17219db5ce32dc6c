"""A smoothness penalty on ordered base rates: the continuity component of Ziegler and Czyż.

Section 5 of "Unsupervised Recalibration" recalibrates a regression model through the ordered
intervals of its support and asks for a regulariser that "should generally increase if
``|C_i - C_{i+1}| >> 0``": neighbouring intervals should have similar shifts. The penalty here
is a Gaussian random-walk prior of order ``r`` on the log shift ``x_j - x0_j``,
``x = log p``, ``x0 = log pi_lab``::

    log penalty(p) = -(lambda / 2) || D_r (log p - log pi_lab) ||^2,

``D_r`` the ``r``-th order difference matrix. Order 1 shrinks towards no shift (a constant
ratio ``p_j / pi_lab_j``); order 2 shrinks towards a log-linear ratio in the interval index,
which contains no shift and is close to a location shift. The penalty is a function of the
differences only, so it is unchanged by the normalisation of ``p`` (``D_r 1 = 0``).

**Random lab sample.** The prior is on the shift against the lab *population*, whose shares
``pi`` the lab sample estimates with multinomial error (for regression: the population mass
of intervals cut at the lab sample's quantiles). Centred at the lab *sample's* shares, the
random walk would also shrink that sampling error, which is no shift and is rough (white
noise across the intervals), and leave it as a bias that the profile intervals do not cover.
With ``n_lab`` given, ``log pi`` is integrated out under the Gaussian (Laplace) approximation
of the lab multinomial, ``log pi ~ N(log pi_hat, W^-)`` with ``W = n (diag(pi) - pi pi')``
its information: the penalty on ``u = log p - log pi_hat`` is then Gaussian with precision

    K = Q - Q (Q + W + 1 1')^-1 Q,      Q = lambda D_r' D_r,

the precision of a sum of the smooth shift (precision ``Q``) and the sampling error
(precision ``W``); ``1 1'`` only makes the sum invertible (``Q 1 = W 1 = 0``). ``K <= Q`` and
``K <= W``: a rough departure is penalised no more than the lab multinomial penalises it.

:class:`SmoothnessPenalty` has the interface of the ``penalty`` hook of
:class:`~puinfer.models.urc._likelihood.Data`: its value, gradient and Hessian in ``P`` (added
to the URC objective and its derivatives) and the penalised M-step of EM, which has no closed
form; it is solved by Newton's method in the softmax parameters (concave there for free rows).
"""

from __future__ import annotations

import numpy as np

from ...base.results import ReadOnlyArrays, readonly

__all__ = ["SmoothnessPenalty", "difference_matrix"]

_MSTEP_MAXITER = 1  # Newton steps per EM cycle: a generalised EM (see mstep)


def difference_matrix(k: int, order: int, positions=None) -> np.ndarray:
    """The ``(k - order) x k`` matrix of scaled ``order``-th differences at ``positions``.

    Order 1: ``(x_{j+1} - x_j) / sqrt(h_j)``, ``h_j = m_{j+1} - m_j`` (a Brownian motion in
    ``m``: the variance of an increment grows with the distance). Order 2: the differences of
    the slopes ``(x_{j+1} - x_j) / h_j``, divided by ``sqrt((m_{j+2} - m_j) / 2)`` (an
    integrated random walk in ``m``). Equally spaced positions (the default ``0, 1, ...``) give
    the plain differences."""
    m = np.arange(k, dtype=float) if positions is None else np.asarray(positions, dtype=float)
    h = np.diff(m)
    if np.any(h <= 0):
        raise ValueError("positions must be strictly increasing")
    D1 = np.diff(np.eye(k), axis=0)
    if order == 1:
        return D1 / np.sqrt(h)[:, None]
    S = D1 / h[:, None]                       # slopes
    return np.diff(S, axis=0) / np.sqrt((m[2:] - m[:-2]) / 2)[:, None]


def _softmax(eta):
    z = eta - eta.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def centred_positions(positions, k: int) -> np.ndarray:
    """The penalty's positions of the ``k`` intervals (``0..k-1`` where None), centred: the
    direction of the log-linear trend of the log shift, which an order-2 walk leaves free."""
    v = np.arange(k, dtype=float) if positions is None else np.array(positions, dtype=float)
    return v - v.mean()


class SmoothnessPenalty(ReadOnlyArrays):
    """Gaussian random-walk prior of order ``order`` on ``log(p / pi_lab)`` across ordered classes.

    Parameters
    ----------
    strength : float
        ``lambda > 0``: the precision of each ``order``-th difference of the log shift (its prior
        standard deviation is ``lambda ** -0.5``), applied to every group's base rates.
    order : {1, 2}
        Order of the differences.
    pi_lab : array_like
        Lab base rates (the centre: ``p = pi_lab`` has penalty 0).
    positions : array_like, optional
        Positions of the ordered classes (regression: the lab mean of the outcome in each
        interval, in lab standard deviations); differences are scaled by their distances
        (see :func:`difference_matrix`). Default equally spaced.
    n_lab : int, optional
        Size of the lab sample when ``pi_lab`` are a random sample's shares (URC's random lab
        design): the prior is then on the shift against the lab population, with the
        sample's error integrated out (module docstring). Default: ``pi_lab`` known.
    trend_sd : float, optional
        Prior standard deviation ``tau`` of the slope ``b`` of the least-squares log-linear
        trend of the log shift in the positions (``b = c' u``, ``c = v / (v' v)``, ``v`` the
        centred positions): the term ``-(b / tau)^2 / 2`` is added to the log penalty, i.e.
        ``c c' / tau^2`` to the shift's precision before the lab sample's error is integrated
        out. The order-2 walk leaves that trend unpenalised, and along it the likelihood can
        rise to a corner of the simplex; with the term the penalty is proper apart from the
        constant. Default None: no such term.

    Its arrays (``K``, ``x0``, ``positions``) are read-only: the fits, profiles and tests of
    a result share the penalty (a pickle round trip keeps them so).
    """

    def __init__(self, strength: float, order: int, pi_lab, positions=None, n_lab=None,
                 trend_sd=None):
        self.strength = float(strength)
        self.order = int(order)
        pi = np.asarray(pi_lab, dtype=float)
        self.x0 = readonly(np.log(pi))
        k = self.x0.size
        self.positions = None if positions is None else readonly(
            np.array(positions, dtype=float))
        self.n_lab = None if n_lab is None else float(n_lab)
        D = difference_matrix(k, self.order, self.positions)
        Q = self.strength * (D.T @ D)
        self.trend_sd = None if trend_sd is None else float(trend_sd)
        if self.trend_sd is not None:
            if not (np.isfinite(self.trend_sd) and self.trend_sd > 0):
                raise ValueError(f"trend_sd must be a positive number; got {trend_sd!r}")
            v = centred_positions(self.positions, k)
            c = v / (v @ v)
            Q = Q + np.outer(c, c) / self.trend_sd ** 2
        if self.n_lab is not None:
            W = self.n_lab * (np.diag(pi) - np.outer(pi, pi))
            Q = Q - Q @ np.linalg.solve(Q + W + np.ones((k, k)), Q)
            Q = (Q + Q.T) / 2
        self.K = readonly(Q)

    def describe(self) -> str:
        """Words for the results' ``llf_kind`` and summary."""
        return (f"smoothness penalty (random walk of order {self.order} on log(p / pi_lab), "
                f"strength {self.strength:g}"
                + (f", N(0, {self.trend_sd:g}^2) prior on its log-linear trend's slope"
                   if getattr(self, "trend_sd", None) is not None else "")
                + (", lab population's shares integrated out" if self.n_lab is not None
                   else "") + ")")

    def __repr__(self):
        tau = getattr(self, "trend_sd", None)
        return (f"<SmoothnessPenalty: order {self.order}, strength {self.strength:g}"
                + (f", trend_sd {tau:g}" if tau is not None else "") + ">")

    # -- the objective's terms --------------------------------------------------------------------
    def value(self, P) -> float:
        """Sum over the rows of ``P`` of the log penalty (-inf when a rate is 0)."""
        P = np.asarray(P, dtype=float)
        if np.any(P <= 0):
            return -np.inf
        u = np.log(P) - self.x0
        return float(-0.5 * np.einsum("gi,ij,gj->", u, self.K, u))

    def grad_hess(self, P):
        """Gradient ``(G, k)`` and per-row Hessian ``(G, k, k)`` of :meth:`value` in ``P``."""
        P = np.asarray(P, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            u = np.log(P) - self.x0
            a = -(u @ self.K)                      # d penalty / d log p
            g = a / P
            H = -self.K[None, :, :] / (P[:, :, None] * P[:, None, :])
            k = P.shape[1]
            H[:, np.arange(k), np.arange(k)] -= a / P ** 2
        return g, H

    # -- the penalised M-step ----------------------------------------------------------------------
    def mstep(self, C, P, con):
        """Maximise ``sum_i C[g, i] log p_g[i] + penalty(p_g)`` under the constraint ``con``
        (``"free"``, ``"equal"``/``"pooled"`` or ``"entry"``), warm-started at ``P``."""
        C = np.asarray(C, dtype=float)
        P = np.asarray(P, dtype=float)
        if con.kind in ("equal", "pooled"):
            G = P.shape[0]
            row = self._free_rows(C.sum(axis=0, keepdims=True), P[:1], G)
            return np.broadcast_to(row, P.shape).copy()
        out = self._free_rows(C, P, 1)
        if con.kind == "entry":
            g = con.group
            out[g] = self._entry_row(C[g], P[g], con.cls, con.v)
        return out

    def _free_rows(self, C, P, weight):
        """Newton in ``eta`` (``p = softmax(eta)``) for each row: the objective is concave in
        ``eta``; its Hessian is singular along ``1`` only, which ``- 1 1'`` removes."""
        K = weight * self.K
        x0 = self.x0
        csum = C.sum(axis=1)
        eta = np.log(np.maximum(P, 1e-300))
        k = P.shape[1]
        ones = np.ones((k, k))

        def f(eta):
            x = eta - _lse(eta)
            u = x - x0
            return np.sum(C * x, axis=1) - 0.5 * np.einsum("gi,ij,gj->g", u, K, u)

        fe = f(eta)
        for _ in range(_MSTEP_MAXITER):
            s = _softmax(eta)
            x = np.log(s)
            grad = C - csum[:, None] * s - (x - x0) @ K
            if np.max(np.abs(grad) / (1.0 + csum[:, None])) < 1e-12:
                break
            H = (-csum[:, None, None] * (s[:, :, None] * np.eye(k) - s[:, :, None] * s[:, None, :])
                 - K[None] - ones[None])
            try:
                step = np.linalg.solve(H, -grad[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:
                # a row without counts (csum 0): the penalty alone, flat along its null space
                # beyond the constant (session 68's audit: numpy's "Singular matrix" from
                # conf_int); the least-norm step
                step = (np.linalg.pinv(H, hermitian=True) @ -grad[:, :, None])[:, :, 0]
            t = np.ones(eta.shape[0])
            for _ in range(60):  # backtracking, row by row (vectorised)
                new = eta + t[:, None] * step
                fn = f(new)
                bad = ~(fn >= fe - 1e-13 * (1.0 + np.abs(fe)))
                if not bad.any():
                    break
                t = np.where(bad, t / 2, t)
            eta = np.where(bad[:, None], eta, new)
            fe = np.where(bad, fe, fn)
            if bad.all():
                break
        return _softmax(eta)

    def _entry_row(self, c, p, j, v):
        """One row with ``p[j] = v`` fixed: the others are ``(1 - v) softmax(eta)``; Newton
        with the Hessian made negative definite (Fisher-type), and backtracking."""
        k = c.size
        if not (0 < v < 1):  # the penalty is -inf there: any feasible point will do
            out = np.full(k, (1.0 - v) / (k - 1))
            out[j] = v
            return out
        S = np.delete(np.arange(k), j)
        cs = c[S]
        K, x0 = self.K, self.x0
        lm = np.log1p(-v)
        eta = np.log(np.maximum(p[S], 1e-300))

        def xfull(eta):
            x = np.empty(k)
            x[S] = lm + eta - _lse(eta[None])[0]
            x[j] = np.log(v)
            return x

        def f(eta):
            x = xfull(eta)
            u = x - x0
            return float(cs @ x[S] - 0.5 * u @ K @ u)

        fe = f(eta)
        m = S.size
        eye = np.eye(m)
        for _ in range(_MSTEP_MAXITER):
            x = xfull(eta)
            s = np.exp(x[S] - lm)
            h = cs - (K @ (x - x0))[S]
            grad = h - s * h.sum()
            if np.max(np.abs(grad)) < 1e-12 * (1.0 + c.sum()):
                break
            J = eye - np.outer(np.ones(m), s)
            V = np.diag(s) - np.outer(s, s)
            H = (-J.T @ K[np.ix_(S, S)] @ J - (max(h.sum(), 0.0) + 1e-8 * (1 + c.sum())) * V
                 - np.ones((m, m)))
            try:
                step = np.linalg.solve(H, -grad)
            except np.linalg.LinAlgError:
                # (as in mstep: numpy's "Singular matrix" reached conf_int where one lab
                # outcome of 1e12 squashed the penalty's positions, session 83's audit)
                step = np.linalg.pinv(H, hermitian=True) @ -grad
            t, moved = 1.0, False
            for _ in range(60):
                fn = f(eta + t * step)
                if fn >= fe - 1e-13 * (1.0 + abs(fe)):
                    eta, fe, moved = eta + t * step, fn, True
                    break
                t /= 2
            if not moved:
                break
        return np.exp(xfull(eta))


def _lse(eta):
    m = eta.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(eta - m).sum(axis=1, keepdims=True)))
