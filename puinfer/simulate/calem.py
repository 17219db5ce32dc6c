"""Simulation design of Sergazinov et al., Section 5.1 (CalEM, Table 1).

    p_i ~ Beta(alpha, beta),  z_i ~ Bernoulli(p_i),
    p~_i = p_i - h(p_i) p_i,  y_i | z_i = 0 -> 0,  y_i | z_i = 1 ~ Bernoulli(1 - h(p_i)),
    score_i = ginv(p~_i),

so that ``P(Y = 1 | p) = p~`` and the oracle calibration curve is ``g = ginv^{-1}``:
``g(score) = p~``. A share of the rows forms the clean control set ``(score, y)``, the rest the
biased treated set ``(score, z)``.

The paper does not give ``alpha, beta``; it says they "control the event probability", and
its Table 1 heads the values {0.5, 0.4, 0.3, 0.2} "P(Y)". Here ``alpha = 1, beta = (1 - P) / P``,
so that the Beta mean is ``P``: ``event_prob`` is ``E[p] = P(Z = 1)``, the rate of the
**biased** (treated) label ``z`` (``P = 0.5`` is the uniform distribution). The **clean** event
rate ``P(Y = 1) = E[p~] = E[p (1 - h(p))]`` is lower (:func:`clean_event_rate`):

===========  =====  =====  =====  =====
``P``         0.5    0.4    0.3    0.2
h1            0.375  0.324  0.261  0.186
h2            0.363  0.298  0.233  0.168
===========  =====  =====  =====  =====

The Beta mean is what ``alpha, beta`` control directly. Reading "P(Y)" as the clean rate fits
the paper's design badly: under h1, ``p (1 - h1(p))`` is at most 0.544 (at ``p = 0.816``), so a
clean rate of 0.5 needs ``p`` piled up near that maximum; with ``alpha = 1`` the clean rate
increases towards 0.5 only in the limit ``beta -> 0`` (a point mass at ``p = 1``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import integrate, stats

from .._validation import check_int, check_real, check_rng, check_unit_interval

__all__ = ["MISCALIBRATIONS", "TRANSITIONS", "simulate_calem", "oracle_curve", "beta_params",
           "clean_event_rate"]


def _g1inv(p):
    return 1.0 / (1.0 + np.exp(-20.0 * (p - 0.5)))


def _g1(s):
    s = np.clip(s, 1e-300, 1 - 1e-16)
    return 0.5 + (np.log(s) - np.log1p(-s)) / 20.0


def _g2inv(p):
    return p ** 3


def _g2(s):
    return np.cbrt(s)


#: ``name -> (ginv, g)``: score = ginv(true probability), oracle calibration g = ginv^{-1}.
MISCALIBRATIONS = {
    "g1": (_g1inv, _g1),  # over-confident: 1 / (1 + exp(-20 (p - 0.5)))
    "g2": (_g2inv, _g2),  # scores pushed towards 0: p^3
}

#: ``name -> h(p)``: share of treated positives that would be negative without treatment.
TRANSITIONS = {
    "h1": lambda p: 0.5 * p ** 2,
    "h2": lambda p: 0.3 * (p >= 0.3),
}


def beta_params(event_prob: float) -> tuple[float, float]:
    """Return the parameters of the Beta distribution of ``p`` in :func:`simulate_calem`.

    Parameters
    ----------
    event_prob : float
        ``P`` in (0, 1): the mean of ``p``, i.e. ``P(Z = 1)``, the biased label's rate.

    Returns
    -------
    tuple of float
        ``(alpha, beta) = (1, (1 - P) / P)``.
    """
    # ("0.5" failed in a comparison without naming the argument; True was refused as "in
    # (0, 1); got True")
    event_prob = check_real(event_prob, "event_prob", what="a number in (0, 1)")
    if not 0 < event_prob < 1:
        raise ValueError(f"event_prob must be in (0, 1); got {event_prob}")
    return 1.0, (1.0 - event_prob) / event_prob


def clean_event_rate(event_prob: float, transition: str = "h1") -> float:
    """The clean label's rate ``P(Y = 1)`` in :func:`simulate_calem`'s design.

    ``P(Y = 1) = E[p~] = E[p (1 - h(p))]`` with ``p ~ Beta(1, (1 - P) / P)``, computed by
    quadrature; ``event_prob = P`` is ``P(Z = 1)``, the biased label's rate.

    Parameters
    ----------
    event_prob : float
        ``P`` in (0, 1), as in :func:`simulate_calem`.
    transition : {"h1", "h2"}
        The transition function ``h``.

    Returns
    -------
    float

    Examples
    --------
    >>> round(clean_event_rate(0.5, "h1"), 4)
    0.375
    """
    if transition not in TRANSITIONS:
        raise ValueError(f"transition must be one of {list(TRANSITIONS)}")
    a, b = beta_params(event_prob)
    h = TRANSITIONS[transition]

    def f(p):
        return p * (1.0 - h(p)) * stats.beta.pdf(p, a, b)

    # split at 0.3, where h2 jumps
    return float(sum(integrate.quad(f, lo, hi, limit=200)[0] for lo, hi in ((0, 0.3), (0.3, 1))))


def simulate_calem(n: int = 10_000, *, event_prob: float = 0.5, miscalibration: str = "g1",
                   transition: str = "h1", clean_share: float = 0.1,
                   rng=None) -> pd.DataFrame:
    """Draw one data set of Sergazinov et al.'s Section 5.1 design.

    Parameters
    ----------
    n : int, default 10_000
        Total rows (at least 2: the control and treated sets each need a row).
    event_prob : float, default 0.5
        ``P``, the value Table 1 heads "P(Y)": the mean of the Beta distribution of ``p``, so
        ``P(Z = 1) = P``, the rate of the **biased** label ``z``. The clean label's rate
        ``P(Y = 1)`` is lower (0.375 for ``P = 0.5`` under h1; :func:`clean_event_rate`).
    miscalibration : {"g1", "g2"}
        The miscalibration ``g^{-1}`` turning ``p~`` into the score.
    transition : {"h1", "h2"}
        The transition function ``h``.
    clean_share : float, default 0.1
        Share of rows in the clean control set (the "%" of Table 1); the control set has
        ``round(clean_share * n)`` rows, which must leave both sets non-empty.
    rng : numpy.random.Generator, int, sequence of int or None
        Source of randomness: a Generator (used as it is) or a seed for
        :func:`numpy.random.default_rng`; ``None`` (default) gives fresh entropy.

    Returns
    -------
    pandas.DataFrame
        ``score``, ``label`` (``y`` on control rows, ``z`` on treated rows), ``treated``,
        ``y``, ``z``, ``p`` (probability of z), ``p_clean`` (the oracle ``g(score)``).

    Raises
    ------
    ValueError
        For an unknown ``miscalibration``/``transition``, ``event_prob`` or ``clean_share``
        outside (0, 1), ``n < 2``, or a ``clean_share`` that leaves the control or the
        treated set empty.
    TypeError
        If ``rng`` is neither a Generator nor a seed, or ``n`` is not an integer.
    """
    if miscalibration not in MISCALIBRATIONS:
        raise ValueError(f"miscalibration must be one of {list(MISCALIBRATIONS)}")
    if transition not in TRANSITIONS:
        raise ValueError(f"transition must be one of {list(TRANSITIONS)}")
    clean_share = check_real(clean_share, "clean_share", what="a number in (0, 1)")
    if not 0 < clean_share < 1:
        raise ValueError(f"clean_share must be in (0, 1); got {clean_share}")
    n = check_int(n, "n", minimum=2)
    n_control = int(round(clean_share * n))
    if not 0 < n_control < n:
        raise ValueError(f"n={n} and clean_share={clean_share} give {n_control} control and "
                         f"{n - n_control} treated rows: both sets need at least one row "
                         "(raise n or move clean_share away from 0 and 1)")
    a, b = beta_params(event_prob)
    rng = check_rng(rng)
    ginv, _ = MISCALIBRATIONS[miscalibration]
    h = TRANSITIONS[transition]
    p = rng.beta(a, b, size=n)
    z = (rng.random(n) < p).astype(float)
    hp = h(p)
    p_clean = p - hp * p
    y = np.where(z == 1, (rng.random(n) < 1 - hp).astype(float), 0.0)
    score = ginv(p_clean)
    treated = np.ones(n, dtype=int)
    treated[rng.permutation(n)[:n_control]] = 0
    label = np.where(treated == 1, z, y)
    return pd.DataFrame({"score": score, "label": label, "treated": treated, "y": y, "z": z,
                         "p": p, "p_clean": p_clean})


def oracle_curve(score, miscalibration: str):
    """The true calibration curve ``g(score) = P(Y = 1 | score)`` of the design.

    Raises
    ------
    ValueError
        For an unknown ``miscalibration``, or scores outside [0, 1] or missing (the curve is
        defined on the scores' range; outside it the formula gave values beyond [0, 1]).
    """
    if miscalibration not in MISCALIBRATIONS:
        raise ValueError(f"miscalibration must be one of {list(MISCALIBRATIONS)}; got "
                         f"{miscalibration!r}")
    s = check_unit_interval(score, "score")
    return MISCALIBRATIONS[miscalibration][1](s)
