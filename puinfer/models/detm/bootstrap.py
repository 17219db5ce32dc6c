"""The smoothed empirical-likelihood bootstrap of the SCAR test (SETM against DETM).

Resamples are drawn from the fitted SETM (the null): source rows and target positives from the
EL weights ``p_i`` (the estimate of ``p_s``), target negatives from ``p_i w2_i``; with
smoothing, every row is jittered by ``N(0, h^2 S)`` and the negatives are tilted so that the
resampling world lies exactly inside SETM. Both models are refitted on every resample.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ...base.results import readonly
from ._data import prepare

__all__ = ["BootstrapWorld", "bandwidth", "world", "sample", "statistic", "replicate"]


@dataclass(frozen=True)
class BootstrapWorld:
    """The fitted SETM as a distribution on the pooled sample (read-only arrays).

    ``ps``: the EL weights ``p_i`` (source rows and target positives); ``pn``: ``p_i w2_i``
    (target negatives); ``pi``; ``pt = pi ps + (1 - pi) pn`` (the fitted target); ``L`` with
    ``L L' = S``, the EL-weighted source covariance with the rows and columns of two-valued
    (dummy) columns set to zero (they are not jittered); ``beta``: SETM's slopes on the scale
    of ``X``; ``smooth_cols``: the jittered columns."""

    ps: np.ndarray
    pn: np.ndarray
    pt: np.ndarray
    pi: float
    L: np.ndarray
    S: np.ndarray
    beta: np.ndarray
    smooth_cols: np.ndarray


def bandwidth(data, smooth) -> float:
    """Kernel bandwidth of the smoothed bootstrap (in units of the source covariance):
    Silverman's rule ``(4 / (p + 2))^(1/(p+4)) N^(-1/(p+4))`` or the number given."""
    if isinstance(smooth, str):
        if smooth != "silverman":
            raise ValueError(f"smooth must be 'silverman' or a number >= 0; got {smooth!r}")
        p = data.p
        return float((4 / (p + 2)) ** (1 / (p + 4)) * data.N ** (-1 / (p + 4)))
    if isinstance(smooth, bool) or not isinstance(smooth, (int, float, np.floating)) \
            or not np.isfinite(smooth) or smooth < 0:
        raise ValueError(f"smooth must be 'silverman' or a number >= 0; got {smooth!r}")
    return float(smooth)


def world(data, setm) -> BootstrapWorld:
    """The resampling world of the fitted SETM ``setm`` (a fit record or results)."""
    p = data.p
    ps = setm.el_weights / setm.el_weights.sum()
    a2, b2 = setm.theta[p + 1], setm.theta[p + 2:]
    pn = ps * np.exp(a2 + data.Z @ b2)
    pn = pn / pn.sum()
    pt = setm.pi * ps + (1 - setm.pi) * pn
    Xc = data.X - ps @ data.X
    S = Xc.T @ (Xc * ps[:, None])
    smooth_cols = np.array([np.unique(data.X[:, j]).size > 2 for j in range(p)])
    S = S * np.outer(smooth_cols, smooth_cols)
    try:
        L = np.linalg.cholesky(S)
    except np.linalg.LinAlgError:  # singular (dummy columns): L = V diag(sqrt(w))
        w, V = np.linalg.eigh(S)
        L = V * np.sqrt(np.clip(w, 0, None))
    return BootstrapWorld(readonly(ps), readonly(pn), readonly(pt / pt.sum()), float(setm.pi),
                          readonly(L), readonly(S), readonly(b2 / data.sd),
                          readonly(smooth_cols))


def sample(data, w: BootstrapWorld, rng: np.random.Generator, smooth: float = 0.0):
    """One resample ``(Xs, Xt)`` from the fitted null (SETM).

    Discrete (``smooth=0``): source rows and target positives (``Binomial(m, pi)`` of the
    target rows) are drawn from ``p_i``, target negatives from ``p_i w2_i``.

    Smoothed (``smooth = h > 0``): every row is jittered by ``N(0, V)``, ``V = h^2 S``, and
    the negatives are the smoothed source tilted by ``exp(a* + beta*'x)``. Because
    ``exp(b'x) phi(x; x_i, V) = exp(b'x_i + b'Vb / 2) phi(x; x_i + Vb, V)``, that is:
    negatives drawn from ``p_i exp(beta*'x_i)`` (normalised) and shifted by ``V beta*``, so
    the world lies exactly inside SETM whatever the distribution of the data. The tilt is
    ``beta* = beta / sqrt(1 + h^2)`` on the jittered columns: jittering inflates the
    within-component covariance by ``1 + h^2``, and this tilt inflates the distance between
    the component means by ``sqrt(1 + h^2)`` with it, so the world is (for Gaussian components
    exactly) an affine image of the fitted one, with the same separation of the components and
    the same pi; ``R_N`` is affine invariant.
    """
    m_pos = rng.binomial(data.m, w.pi)
    if smooth:
        # jittered columns only: unjittered (dummy) columns keep their spread and tilt
        beta = np.where(w.smooth_cols, w.beta / np.sqrt(1 + smooth ** 2), w.beta)
        eta = data.X @ beta
        pn = w.ps * np.exp(eta - eta.max())
        pn = pn / pn.sum()
    else:
        pn = w.pn
    i_s = rng.choice(data.N, size=data.n, p=w.ps)
    i_t = np.r_[rng.choice(data.N, size=m_pos, p=w.ps),
                rng.choice(data.N, size=data.m - m_pos, p=pn)]
    Xs, Xt = data.X[i_s], data.X[i_t]
    if smooth:
        Xs = Xs + smooth * rng.standard_normal(Xs.shape) @ w.L.T
        Xt = Xt + smooth * rng.standard_normal(Xt.shape) @ w.L.T
        Xt[m_pos:] += smooth ** 2 * (w.S @ beta)
    return Xs, Xt


def statistic(detm, setm, Xs, Xt, refit: str = "quick") -> float:
    """``R*`` on a resample (design rows ``Xs`` and ``Xt``), given the observed DETM and SETM
    results. ``refit="full"`` fits both models exactly as the observed ones were fitted (every
    start and the profile probe), with the original solutions as extra starts; ``"quick"``
    fits from the original solutions and a reduced grid of starts, without the probe."""
    from .model import fit_data  # the estimation entry point shared with DETM/SETM.fit

    fit = detm._fit
    dat = prepare(Xs, Xt, names=detm.model.data.names)
    opts = dict(c=fit.penalty_strength, label_rule="kl", maxiter=fit.maxiter, tol=fit.tol,
                check_separation=False, probe=refit == "full")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s_opts = dict(setm_start=setm._fit.v, grid=True)
        s_b = fit_data(dat, True, start_options=s_opts, **opts)[0]
        extra = [("original DETM", fit.v), ("resample SETM", s_b.v)]
        if refit == "full":
            d_opts = dict(extra_starts=extra)
        else:
            # DETM's own SETM starts are s_opts on the same data: reuse s_b's runs
            d_opts = dict(s_opts, extra_starts=extra, setm_runs=list(s_b.runs))
        d_b = fit_data(dat, False, start_options=d_opts, **opts)[0]
    return max(0.0, 2 * (d_b.llf_penalized - s_b.llf_penalized))


def replicate(detm, setm, n_boot: int, rng: np.random.Generator, refit: str = "quick",
              smooth: float = 0.0) -> np.ndarray:
    """``n_boot`` bootstrap statistics (NaN where a resample cannot be fitted)."""
    data = detm.model.data
    w = world(data, setm)
    out = np.full(n_boot, np.nan)
    for b in range(n_boot):
        Xs, Xt = sample(data, w, rng, smooth)
        try:
            out[b] = statistic(detm, setm, Xs, Xt, refit)
        except ValueError:  # e.g. a resample with a constant column
            continue
    return out
