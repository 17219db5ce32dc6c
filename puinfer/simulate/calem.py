"""Simulation design of Sergazinov et al., Section 5.1 (CalEM, Table 1).

    p_i ~ Beta(alpha, beta),  z_i ~ Bernoulli(p_i),
    p~_i = p_i - h(p_i) p_i,  y_i | z_i = 0 -> 0,  y_i | z_i = 1 ~ Bernoulli(1 - h(p_i)),
    score_i = ginv(p~_i),

so that ``P(Y = 1 | p) = p~`` and the oracle calibration curve is ``g = ginv^{-1}``:
``g(score) = p~``. A share of the rows forms the clean control set ``(score, y)``, the rest the
biased treated set ``(score, z)``.

The paper does not give ``alpha, beta``; it says they "control the event probability" ``P(Y)``
in {0.5, 0.4, 0.3, 0.2}. Here ``alpha = 1, beta = (1 - P) / P`` so that ``E[p] = P(Z = 1) = P``
(``P = 0.5`` is the uniform distribution); the clean event rate ``E[p~]`` is a little lower.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["MISCALIBRATIONS", "TRANSITIONS", "simulate_calem", "oracle_curve", "beta_params"]


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
    """``(alpha, beta) = (1, (1 - P) / P)``: Beta distribution with mean ``P``."""
    if not 0 < event_prob < 1:
        raise ValueError(f"event_prob must be in (0, 1); got {event_prob}")
    return 1.0, (1.0 - event_prob) / event_prob


def simulate_calem(n: int = 10_000, *, event_prob: float = 0.5, miscalibration: str = "g1",
                   transition: str = "h1", clean_share: float = 0.1,
                   rng: np.random.Generator) -> pd.DataFrame:
    """Draw one data set of Sergazinov et al.'s Section 5.1 design.

    Parameters
    ----------
    n : int, default 10_000
        Total rows.
    event_prob : float, default 0.5
        ``P`` in Table 1 (the mean of the Beta distribution of ``p``).
    miscalibration : {"g1", "g2"}
    transition : {"h1", "h2"}
    clean_share : float, default 0.1
        Share of rows in the clean control set (the "%" of Table 1).
    rng : numpy.random.Generator

    Returns
    -------
    pandas.DataFrame
        ``score``, ``label`` (``y`` on control rows, ``z`` on treated rows), ``treated``,
        ``y``, ``z``, ``p`` (probability of z), ``p_clean`` (the oracle ``g(score)``).
    """
    if miscalibration not in MISCALIBRATIONS:
        raise ValueError(f"miscalibration must be one of {list(MISCALIBRATIONS)}")
    if transition not in TRANSITIONS:
        raise ValueError(f"transition must be one of {list(TRANSITIONS)}")
    if not 0 < clean_share < 1:
        raise ValueError(f"clean_share must be in (0, 1); got {clean_share}")
    a, b = beta_params(event_prob)
    ginv, _ = MISCALIBRATIONS[miscalibration]
    h = TRANSITIONS[transition]
    p = rng.beta(a, b, size=n)
    z = (rng.random(n) < p).astype(float)
    hp = h(p)
    p_clean = p - hp * p
    y = np.where(z == 1, (rng.random(n) < 1 - hp).astype(float), 0.0)
    score = ginv(p_clean)
    treated = np.ones(n, dtype=int)
    treated[rng.permutation(n)[: int(round(clean_share * n))]] = 0
    label = np.where(treated == 1, z, y)
    return pd.DataFrame({"score": score, "label": label, "treated": treated, "y": y, "z": z,
                         "p": p, "p_clean": p_clean})


def oracle_curve(score, miscalibration: str):
    """The true calibration curve ``g(score) = P(Y = 1 | score)`` of the design."""
    return MISCALIBRATIONS[miscalibration][1](np.asarray(score, dtype=float))
