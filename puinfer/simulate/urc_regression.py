"""A shifted regression problem for regression URC (Section 5 of Ziegler and Czyż).

Prior shift in the outcome: ``p(x | y)`` is the same in lab and field, ``p(y)`` changes, so
Axiom 2 holds for any prediction computed from ``x``. The design is Gaussian, so every truth is
known in closed form:

* lab: ``y ~ N(0, 1)``; field: ``y ~ N(field_shift, field_scale^2)`` (per group);
* feature ``x = y + e``, ``e ~ N(0, noise_sd^2)``, the same in lab and field;
* the model is the exact conditional of the lab population, ``y | x ~ N(b x, b noise_sd^2)``
  with ``b = 1 / (1 + noise_sd^2)`` (its R^2 on the lab population is ``b``): calibrated on the
  lab, miscalibrated in a shifted field;
* the field's own conditional (the oracle a recalibration aims at) is
  ``N((x / noise_sd^2 + mu / s^2) v, v)`` with ``v = 1 / (1 / noise_sd^2 + 1 / s^2)``.

The lab rows are an ordinary random sample of the lab population (the intervals of
:class:`~puinfer.models.urc.regression.RegressionURC` are cut at their sample quantiles).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from .._validation import check_int, check_rng, refuse_text_and_bools
from ..models.urc.predictive import NormalPredictive

__all__ = ["URCRegressionSimulation", "simulate_urc_regression"]


@dataclass(frozen=True)
class URCRegressionSimulation:
    """A simulated lab/field regression data set.

    Attributes
    ----------
    lab_pred, field_pred : NormalPredictive
        The lab-calibrated model's predictive distributions.
    lab_y, field_y : numpy.ndarray
        Outcomes (``field_y`` is unknown to URC; for scoring).
    field_group : numpy.ndarray or None
        Group (0..G-1) of each field row when several groups were simulated (``None`` for
        one group).
    field_shift, field_scale : numpy.ndarray
        Mean and SD of the field outcome per group.
    noise_sd : float
    oracle_pred : NormalPredictive
        The field's own conditional distribution of ``y`` given ``x`` (each row's group).
    """

    lab_pred: NormalPredictive
    lab_y: np.ndarray
    field_pred: NormalPredictive
    field_y: np.ndarray
    field_group: np.ndarray | None
    field_shift: np.ndarray
    field_scale: np.ndarray
    noise_sd: float
    oracle_pred: NormalPredictive

    def field_interval_rates(self, edges) -> np.ndarray:
        """True field probabilities of the intervals cut at ``edges`` (groups x intervals)."""
        e = np.concatenate([[-np.inf], np.asarray(edges, dtype=float), [np.inf]])
        F = stats.norm.cdf((e[None, :] - self.field_shift[:, None]) / self.field_scale[:, None])
        return np.diff(F, axis=1)

    def lab_interval_rates(self, edges) -> np.ndarray:
        """Lab-population probabilities of the intervals cut at ``edges``."""
        e = np.concatenate([[-np.inf], np.asarray(edges, dtype=float), [np.inf]])
        return np.diff(stats.norm.cdf(e))


def simulate_urc_regression(n_lab: int = 1000, n_field=5000, field_shift=0.5, field_scale=1.0,
                            noise_sd: float = 1.0, rng=None) -> URCRegressionSimulation:
    """Simulate lab and field rows of a regression problem with a prior shift in ``y``.

    Parameters
    ----------
    n_lab : int
        Lab rows (at least 2).
    n_field : int or sequence of int
        Field rows, shared by the groups or one number per group.
    field_shift, field_scale : float or sequence of float
        Mean and SD of the field outcome (lab: 0 and 1), shared or one per group. ``0`` and
        ``1`` give no shift. The number of groups ``G`` is the length of whichever of
        ``n_field``, ``field_shift`` and ``field_scale`` is a sequence of more than one value;
        these must then all have length ``G`` or 1.
    noise_sd : float
        SD of the feature noise: the model's lab R^2 is ``1 / (1 + noise_sd^2)``.
    rng : numpy.random.Generator, int, sequence of int or None
        Source of randomness: a Generator (used as it is) or a seed for
        :func:`numpy.random.default_rng`; ``None`` (default) gives fresh entropy.

    Returns
    -------
    URCRegressionSimulation

    Raises
    ------
    ValueError
        For ``n_lab < 2``, a non-integer or too small ``n_field``, ``field_scale <= 0``,
        ``noise_sd <= 0``, non-finite values, or group lengths that do not match.
    TypeError
        If ``rng`` is neither a Generator nor a seed, or ``n_lab`` is not an integer.
    """
    rng = check_rng(rng)
    n_lab = check_int(n_lab, "n_lab", minimum=2)
    vals = {}
    for name, val in (("n_field", n_field), ("field_shift", field_shift),
                      ("field_scale", field_scale)):
        # (field_shift="2" was taken as 2, True as 1)
        try:
            refuse_text_and_bools(val, name)
        except ValueError:
            raise ValueError(f"{name} must be a number or a sequence of numbers, not text or "
                             f"True/False; got {val!r:.60}") from None
        try:
            arr = np.asarray(val, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number or a sequence of numbers; "
                             f"got {val!r:.60}") from None
        if arr.ndim > 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be a finite number or a 1-D sequence of them; "
                             f"got {val!r:.60}")
        vals[name] = arr.ravel()
    lengths = {name: arr.size for name, arr in vals.items()}
    G = max(lengths.values())
    if any(m not in (1, G) for m in lengths.values()):
        raise ValueError("n_field, field_shift and field_scale give different numbers of groups "
                         f"({', '.join(f'{k}: {v}' for k, v in lengths.items())}): each must "
                         "have length 1 or the number of groups")
    if np.any(vals["n_field"] < 1) or np.any(vals["n_field"] != np.floor(vals["n_field"])):
        raise ValueError(f"n_field must be an integer >= 1 (or integers); got {n_field!r:.60}")
    sizes = np.broadcast_to(vals["n_field"].astype(int), (G,))
    mu = np.broadcast_to(vals["field_shift"], (G,)).copy()
    sc = np.broadcast_to(vals["field_scale"], (G,)).copy()
    nsd = np.asarray(noise_sd) if not isinstance(noise_sd, (str, bytes)) else None
    if np.any(sc <= 0) or nsd is None or nsd.ndim != 0 or nsd.dtype.kind not in "iuf" \
            or not (np.isfinite(nsd) and nsd > 0):
        raise ValueError(f"field_scale > 0 and a finite noise_sd > 0 needed; got field_scale "
                         f"{field_scale!r:.60}, noise_sd {noise_sd!r:.60}")
    b = 1.0 / (1.0 + noise_sd ** 2)
    sd_model = np.sqrt(b) * noise_sd
    y_lab = rng.standard_normal(n_lab)
    x_lab = y_lab + noise_sd * rng.standard_normal(n_lab)
    grp = np.repeat(np.arange(G), sizes)
    y_f = mu[grp] + sc[grp] * rng.standard_normal(grp.size)
    x_f = y_f + noise_sd * rng.standard_normal(grp.size)
    v = 1.0 / (1.0 / noise_sd ** 2 + 1.0 / sc[grp] ** 2)
    oracle = NormalPredictive((x_f / noise_sd ** 2 + mu[grp] / sc[grp] ** 2) * v, np.sqrt(v))
    return URCRegressionSimulation(
        lab_pred=NormalPredictive(b * x_lab, np.full(n_lab, sd_model)), lab_y=y_lab,
        field_pred=NormalPredictive(b * x_f, np.full(grp.size, sd_model)), field_y=y_f,
        field_group=grp if G > 1 else None, field_shift=mu, field_scale=sc,
        noise_sd=float(noise_sd), oracle_pred=oracle)
