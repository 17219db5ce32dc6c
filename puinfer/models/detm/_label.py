"""DETM's label rule (Liu et al., Theorem 1 and Remark 1) and how well the data determine it.

DETM is identified only up to swapping its two target components. The rule ``"kl"`` labels as
component 1 the one closer to the source, ``KL(p_s || p_t(.|y=1)) < KL(p_s || p_t(.|y=0))``;
``"pi<0.5"`` / ``"pi>0.5"`` compare pi with one half. Either comparison is made between
estimates: when the two sides differ by less than their sampling error the data barely choose
the labelling, and a ``LabelAmbiguityWarning`` says so.

Sampling error of the KL difference. In the binary-regression form of :mod:`._el` (``v = (s1,
b1, s2, b2)``, ``eta_t = s_t + z'b_t``, ``S = e^eta1 + e^eta2``) the EL weights are
``p_i = 1 / (n (1 + S_i))`` and ``alpha_t + z'beta_t = eta_t - log(m pi_t / n)``, so

    D = KL1 - KL2 = logit(pi) - g,   g = sum_i p_i (eta1_i - eta2_i),

a smooth function of the stacked M-estimator ``phi = (v, pi, g)`` with estimating functions
(one row each)

    psi_v,i  = the score of the binary-regression log-likelihood (the penalty is a constant
               shift of the summed equations),
    psi_pi,i = y_i {expit(eta1_i - eta2_i) - pi}          (target rows only),
    psi_g,i  = {(eta1_i - eta2_i) - g} / (1 + S_i).

The source and the target are two independent samples of fixed size, so the sandwich
``A^{-1} B A^{-T}`` uses for ``B`` the within-sample covariance of the ``psi_i`` (each sample
centred on its own mean), and ``Var(D) = c' A^{-1} B A^{-T} c`` with ``c = dD/dphi``.

Accuracy (issue 19, ``studies/results/README_detm.md``): with p = 2 features, n = m = 500, the
SD of the estimated difference over 400 replicates is 0.73 and the mean SE 0.70. With Liu et
al.'s SAR design (p = 15, n = m = 1000, pi = 0.3) the KL estimates are far from normal (true
difference 4; estimates with mean 10.1 and SD 9.5 over 40 replicates) and the SE is too small
(mean 3.9): there the warning errs towards silence, and a near-tie it reports is real.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.special import expit

from ...base.numeric import logaddexp, softplus
from . import _el

__all__ = ["LABEL_RULES", "LabelCheck", "kl_divergences", "kl_difference_se", "swap_needed",
           "label_check", "NEAR_TIE_LEVEL"]

LABEL_RULES = ("kl", "pi<0.5", "pi>0.5")

#: the comparison of the label rule is a near-tie when a two-sided test of equality at this
#: level does not reject: |difference| <= z_{1 - level/2} SE
NEAR_TIE_LEVEL = 0.05


def kl_divergences(data, v, pi) -> tuple[float, float]:
    """Estimated ``KL(p_s || p_t(.|y=1))`` and ``KL(p_s || p_t(.|y=0))`` (Remark 1 of Liu et
    al.): ``KL_t = -sum_i p_i (alpha_t + z_i'beta_t)`` with the EL weights ``p_i``."""
    if getattr(data, "lazy", False):  # rows in Dask collections: block sums
        return data.kl_divergences(v, pi)
    s1, b1, s2, b2 = _el.split(v, data.p)
    eta1, eta2 = s1 + data.Z @ b1, s2 + data.Z @ b2
    w = np.exp(-softplus(logaddexp(eta1, eta2))) / data.n
    with np.errstate(divide="ignore"):
        a1 = s1 - np.log(data.m * pi / data.n)
        a2 = s2 - np.log(data.m * (1 - pi) / data.n)
    return float(-(w @ (a1 + data.Z @ b1))), float(-(w @ (a2 + data.Z @ b2)))


def swap_needed(data, v, pi, rule) -> bool:
    """True if components 1 and 2 must be swapped under the label ``rule``."""
    if rule == "pi<0.5":
        return pi > 0.5
    if rule == "pi>0.5":
        return pi < 0.5
    kl1, kl2 = kl_divergences(data, v, pi)
    return bool(kl1 > kl2)


def _stacked(data, v, c):
    """The per-row factors of the estimating functions ``psi`` of ``phi = (v, pi, g)`` at the
    fit (:func:`stacked_at`), the Jacobian ``A`` of their sum, and ``(pi, g)``."""
    s1, b1, s2, b2 = _el.split(v, data.p)
    eta1, eta2 = s1 + data.Z @ b1, s2 + data.Z @ b2
    d = eta1 - eta2
    inv1pS = np.exp(-softplus(logaddexp(eta1, eta2)))
    pi = float(np.mean(expit(d)[data.y == 1]))
    g = float(np.sum(inv1pS * d) / np.sum(inv1pS))
    F, A = stacked_at(data.Z, data.X1, data.y, v, c, pi, g)
    return F, A, pi, g


def stacked_at(Z, X1, y, v, c, pi, g):
    """The rows' estimating functions and the Jacobian ``A`` of their sum (:func:`_stacked`)
    at given ``(pi, g)``: every entry of ``A`` is a sum over the rows given (``c = 0``), so
    that blocks of rows add up (the Dask path).

    The rows' ``psi`` (N x (2p + 4)) are ``(x_i F_i0, x_i F_i1, F_i2, F_i3)`` with ``x_i`` the
    row of ``X1``: ``F`` (N x 4) is returned instead (:func:`psi_rows` builds ``psi``,
    :func:`psi_dot` its product with a vector without it: at 1e6 rows ``psi`` is 270 MB)."""
    p = Z.shape[1]
    s1, b1, s2, b2 = _el.split(v, p)
    eta1, eta2 = s1 + Z @ b1, s2 + Z @ b2
    d = eta1 - eta2
    logS = logaddexp(eta1, eta2)
    log1pS = softplus(logS)
    inv1pS = np.exp(-log1pS)                       # 1 / (1 + S_i)
    P1, P2 = np.exp(eta1 - log1pS), np.exp(eta2 - log1pS)
    q1 = expit(d)                                  # e^eta1 / S
    t = y == 1
    F = np.column_stack([y * q1 - P1, y * (1 - q1) - P2, y * (q1 - pi), (d - g) * inv1pS])
    _, _, H = _el.free_objective(v, Z, y, c, 2, X1)
    k = 2 * (p + 1)
    A = np.zeros((k + 2, k + 2))
    A[:k, :k] = H
    w = y * q1 * (1 - q1)
    A[k, :k] = np.r_[X1.T @ w, -(X1.T @ w)]
    A[k, k] = -float(t.sum())
    r = (d - g) * inv1pS
    A[k + 1, :k] = np.r_[X1.T @ (inv1pS - r * P1), X1.T @ (-inv1pS - r * P2)]
    A[k + 1, k + 1] = -float(np.sum(inv1pS))       # = -n at the fit
    return F, A


def psi_rows(X1, F):
    """The rows' estimating functions ``psi`` from their factors ``F`` (:func:`stacked_at`)."""
    return np.column_stack([X1 * F[:, :1], X1 * F[:, 1:2], F[:, 2:]])


def psi_dot(X1, F, u):
    """``psi @ u`` from the factors ``F`` of ``psi`` (:func:`stacked_at`), without ``psi``."""
    k = X1.shape[1]
    return (X1 @ u[:k]) * F[:, 0] + (X1 @ u[k:2 * k]) * F[:, 1] + F[:, 2:] @ u[2 * k:]


def delta_direction(A, pi: float):
    """``u = A^-T d(KL1 - KL2)/d(params)``: the sandwich variance of ``KL1 - KL2`` is
    ``u' B u`` (``B`` the covariance of the stacked estimating functions); None when pi is at a
    bound (within 1e-6) or ``A`` is not finite or singular."""
    if not (1e-6 < pi < 1 - 1e-6) or not np.all(np.isfinite(A)):
        return None
    k = A.shape[0]
    grad = np.zeros(k)
    grad[k - 2] = 1.0 / (pi * (1 - pi))
    grad[k - 1] = -1.0
    try:
        return np.linalg.solve(A.T, grad)
    except np.linalg.LinAlgError:
        return None


def kl_difference_se(data, v, c: float = 0.0) -> float:
    """Sandwich standard error of ``KL1 - KL2`` at the binary-regression solution ``v`` (see
    the module docstring); NaN when pi-hat is at a bound (within 1e-6, where ``logit(pi)`` has no
    useful linearisation) or the Jacobian is singular or not finite (a diverging tilt)."""
    if getattr(data, "lazy", False):  # rows in Dask collections: block sums
        return data.kl_difference_se(v, c)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        F, A, pi, _ = _stacked(data, v, c)
    u = delta_direction(A, pi) if np.all(np.isfinite(F)) else None
    if u is None:
        return float("nan")
    r = psi_dot(data.X1, F, u)
    src, tgt = r[: data.n], r[data.n:]
    var = np.sum((src - src.mean()) ** 2) + np.sum((tgt - tgt.mean()) ** 2)
    return float(np.sqrt(var)) if np.isfinite(var) else float("nan")


@dataclass(frozen=True)
class LabelCheck:
    """What DETM's label rule compared and how clearly.

    Attributes
    ----------
    rule : str
    compared : str
        A readable line: both KL divergences, or pi-hat against 0.5, with the SE.
    difference : float
        The margin of the chosen labelling: ``KL2 - KL1`` for ``"kl"``, ``pi - 0.5`` for
        ``"pi>0.5"``, ``0.5 - pi`` for ``"pi<0.5"`` (>= 0 after labelling).
    se : float
        Its standard error (sandwich for the KL difference, pi's observed-information SE for
        the pi rules; NaN when not available).
    z, pvalue : float
        The two-sided test of equality (the two labellings equally supported by the rule):
        for ``"kl"``, ``z = difference / se`` against the normal; for the pi rules, the
        profile likelihood ratio ``R(0.5)`` against ``chi2_1`` and ``z`` its signed root
        (at a true tie, n = m = 500, 600 data sets, the Wald ``z`` of pi-hat against 0.5
        rejected 8.7% at 5%, this statistic 6.0%: session 74's size audit), the Wald test
        where the profile at 0.5 could not be computed.
    near_tie : bool
        ``pvalue > NEAR_TIE_LEVEL`` (0.05): the data do not clearly determine the labelling.
    """

    rule: str
    compared: str
    difference: float
    se: float
    z: float
    pvalue: float
    near_tie: bool


def label_check(rule: str, kl: tuple, kl_se: float, pi: float, pi_se: float,
                lr_half: float | None = None) -> LabelCheck:
    """The :class:`LabelCheck` of a fit labelled by ``rule``; ``lr_half``: the profile
    likelihood ratio statistic of pi = 0.5 (the pi rules' test, if computed)."""
    if rule == "kl":
        diff = kl[1] - kl[0]
        se = kl_se
        compared = (f"KL(p_s || component 1) = {kl[0]:.4f} vs KL(p_s || component 2) = "
                    f"{kl[1]:.4f}: difference {diff:.4f} (SE {se:.3g})")
    else:
        diff = (pi - 0.5) if rule == "pi>0.5" else (0.5 - pi)
        se = pi_se
        # the fit's observed-information SE (the default bse["pi"] comes from the bootstrap,
        # computed later and only on request)
        if lr_half is not None and np.isfinite(lr_half):
            lr = max(float(lr_half), 0.0)
            compared = (f"pi-hat = {pi:.4f} vs 0.5 (profile likelihood ratio {lr:.3g}; "
                        f"observed-information SE {se:.3g})")
            pval = float(stats.chi2.sf(lr, 1))
            return LabelCheck(rule, compared, float(diff), float(se),
                              float(np.copysign(np.sqrt(lr), diff)), pval,
                              bool(pval > NEAR_TIE_LEVEL))
        compared = f"pi-hat = {pi:.4f} vs 0.5 (observed-information SE {se:.3g})"
    ok = np.isfinite(se) and se > 0
    z = diff / se if ok else float("nan")
    pval = float(2 * stats.norm.sf(abs(z))) if ok else float("nan")
    return LabelCheck(rule, compared, float(diff), float(se), float(z), pval,
                      bool(ok and pval > NEAR_TIE_LEVEL))
