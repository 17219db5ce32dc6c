"""Simulation designs of Liu et al., Section 5.1 (positive-unlabeled data, p = 15)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._validation import check_int, check_real, check_rng

__all__ = ["pu_normal", "scar_design", "sar_design", "gamma_design"]


def _rng(rng):
    return check_rng(rng)


def _sizes(n, m, p=None, n_shift=None):
    """The sample sizes (and dimension, shifted coordinates) as ints, checked with their
    names (a float 5.0 or a string failed inside numpy: session 67's audit)."""
    out = [check_int(n, "n", minimum=1), check_int(m, "m", minimum=1)]
    if p is not None:
        out.append(check_int(p, "p", minimum=1))
    if n_shift is not None:
        out.append(check_int(n_shift, "n_shift", minimum=0))
    return out


def _pi(pi) -> float:
    """The share of positives among the target rows, a number in [0, 1] (True was taken as 1;
    "0.3" failed in a comparison without naming pi)."""
    return check_real(pi, "pi", minimum=0.0, maximum=1.0)


def pu_normal(n: int, m: int, pi: float, mu_source, mu_target_pos, mu_target_neg, *,
              rng=None) -> pd.DataFrame:
    """Positive-unlabeled sample with multivariate normal components (identity covariance).

    Source ``x ~ N(mu_source, I)`` (n rows, ``labeled = 1``); target ``x ~ pi N(mu_target_pos, I)
    + (1 - pi) N(mu_target_neg, I)`` (m rows, ``labeled = 0``). The number of target positives is
    Binomial(m, pi). Columns ``x1..xp``, ``labeled`` and ``y_true`` (the latent class; 1 for
    source rows).
    """
    pi = _pi(pi)
    n, m = _sizes(n, m)
    rng = _rng(rng)
    mu_s = np.asarray(mu_source, dtype=float)
    mu_1 = np.asarray(mu_target_pos, dtype=float)
    mu_0 = np.asarray(mu_target_neg, dtype=float)
    p = mu_s.size
    if not (mu_1.size == p and mu_0.size == p):
        raise ValueError("the three mean vectors must have the same length")
    if p == 0:
        raise ValueError("the mean vectors are empty: the sample would have no feature")
    for name, mu in (("mu_source", mu_s), ("mu_target_pos", mu_1), ("mu_target_neg", mu_0)):
        if not np.all(np.isfinite(mu)):  # (a NaN mean gave a sample of NaN features)
            raise ValueError(f"{name} must be finite; got {mu.tolist()}")
    ys = rng.random(m) < pi
    Xs = rng.standard_normal((n, p)) + mu_s
    Xt = rng.standard_normal((m, p)) + np.where(ys[:, None], mu_1, mu_0)
    df = pd.DataFrame(np.vstack([Xs, Xt]), columns=[f"x{j + 1}" for j in range(p)])
    df["labeled"] = np.r_[np.ones(n, dtype=int), np.zeros(m, dtype=int)]
    df["y_true"] = np.r_[np.ones(n, dtype=int), ys.astype(int)]
    return df


def scar_design(n: int, m: int, pi: float, *, n_shift: int = 0, p: int = 15,
                rng=None) -> pd.DataFrame:
    """Liu et al.'s Table 1 design: source N(0, I), target positives N(mu3, I), negatives N(1, I).

    ``mu3`` has ``n_shift`` leading ones (0 gives SCAR data; Table 1 uses 0..7 with pi = 0.75).
    """
    n, m, p, n_shift = _sizes(n, m, p, n_shift)
    if not n_shift <= p:
        raise ValueError(f"n_shift must be between 0 and p = {p}; got {n_shift}")
    mu3 = np.r_[np.ones(n_shift), np.zeros(p - n_shift)]
    return pu_normal(n, m, pi, np.zeros(p), mu3, np.ones(p), rng=rng)


def sar_design(n: int, m: int, pi: float, *, p: int = 15, rng=None) -> pd.DataFrame:
    """Liu et al.'s SAR design of Table 2 / Figure 3: target positives N((1_7, 0_8), I).

    For ``p`` other than 15 the first ``round(7 p / 15)`` coordinates are shifted.
    """
    p = check_int(p, "p", minimum=1)
    return scar_design(n, m, pi, n_shift=7 if p == 15 else int(round(7 * p / 15)), p=p, rng=rng)


def gamma_design(n: int, m: int, pi: float, *, p: int = 15, shape: float = 2.0,
                 n_shift: int | None = None, rng=None) -> pd.DataFrame:
    """Skewed features, DETM correctly specified: independent Gamma(``shape``) coordinates.

    Source ``Gamma(shape, scale 1)``; target positives scale 1.25 on the first ``n_shift``
    coordinates (default ``round(7 p / 15)``, the SAR design's; 0 gives SCAR data) and 1 on
    the rest; target negatives scale 0.6 on every coordinate. A Gamma(k, s) density is the
    Gamma(k, 1) density tilted by ``exp(b x)`` with ``b = 1 - 1/s``, so both target
    components are exponential tilts of the source, linear in ``x`` (the DETM), with slopes
    0.2 and -2/3. (The heavier-tailed component is the mildly tilted one: a target tail far
    beyond the source sample's has no empirical-likelihood weight to carry it.) Columns as
    :func:`pu_normal`.
    """
    pi = _pi(pi)
    try:
        shape_ok = float(shape) > 0 and np.isfinite(float(shape))
    except (TypeError, ValueError):
        shape_ok = False
    if isinstance(shape, (bool, str, bytes)) or not shape_ok:
        # (session 68's audit: 0 gave all-zero features, nan NaN ones, -1 numpy's message)
        raise ValueError(f"shape must be a finite number > 0; got {shape!r}")
    n, m, p = _sizes(n, m, p)
    k = int(round(7 * p / 15)) if n_shift is None else check_int(n_shift, "n_shift", minimum=0)
    if not k <= p:
        raise ValueError(f"n_shift must be between 0 and p = {p}; got {n_shift}")
    rng = _rng(rng)
    ys = rng.random(m) < pi
    scale_pos = np.r_[np.full(k, 1.25), np.ones(p - k)]
    Xs = rng.gamma(shape, 1.0, size=(n, p))
    Xt = rng.gamma(shape, 1.0, size=(m, p)) * np.where(ys[:, None], scale_pos, 0.6)
    df = pd.DataFrame(np.vstack([Xs, Xt]), columns=[f"x{j + 1}" for j in range(p)])
    df["labeled"] = np.r_[np.ones(n, dtype=int), np.zeros(m, dtype=int)]
    df["y_true"] = np.r_[np.ones(n, dtype=int), ys.astype(int)]
    return df
