"""Exact corrections of predicted probabilities for a change of class priors.

* :func:`adjust_prior` -- Lemma 3 of Ziegler & Czyz, *Unsupervised Recalibration*:
  reweight each class probability by ``new_prior / old_prior`` and renormalise.
* :func:`downsampling_correction` -- Haupt, *Recalibration after Negative Sampling*:
  ``p = p' / (p' + (1 - p') / w)`` for a model trained with negatives kept at rate ``w``.

Both are closed-form, vectorised and exact (no clipping, no logit round trip); both accept numpy
arrays or pandas objects and return the same kind, with the index and columns kept.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._align import align_rows
from ._validation import refuse_dask, refuse_text, warn
from .exceptions import BoundaryWarning

__all__ = ["adjust_prior", "downsampling_correction"]

_ROW_TOL = 1e-6


def _as_prob_array(prob, name="prob"):
    """Return ``(array, wrap)``: a new float array and a function re-attaching pandas labels."""
    refuse_dask(prob, name)  # (np.array would compute it and drop its index)
    if prob is None:  # (np.array(None, float) is NaN: "1 missing value(s)")
        raise TypeError(f"{name} must be probabilities (an array, list, Series or DataFrame); "
                        "got None")
    if isinstance(prob, pd.DataFrame):
        if prob.columns.has_duplicates:
            # (each duplicated name selected a frame, reported as a "non-numeric column";
            # session 85's audit)
            dup = prob.columns[prob.columns.duplicated()].unique().tolist()
            raise ValueError(f"{name}: duplicate column name(s) {dup[:5]}")
        bad = [c for c in prob.columns if not pd.api.types.is_numeric_dtype(prob[c])]
        if bad:
            raise ValueError(f"{name}: non-numeric column(s) {bad[:5]}")
        arr = prob.to_numpy(dtype=float, copy=True)
        index, columns = prob.index, prob.columns

        def wrap(a):
            return pd.DataFrame(a, index=index, columns=columns)
    elif isinstance(prob, pd.Series):
        refuse_text(prob, name)
        try:
            arr = prob.to_numpy(dtype=float, copy=True)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be numeric probabilities (the Series has dtype "
                             f"{prob.dtype})") from None
        index, sname = prob.index, prob.name

        def wrap(a):
            return pd.Series(a, index=index, name=sname)
    else:
        refuse_text(prob, name)
        try:
            arr = np.array(prob, dtype=float, copy=True)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be numeric probabilities") from None

        def wrap(a):
            return a
    if arr.ndim == 0:
        arr = arr.reshape(1)
        scalar_wrap = wrap

        def wrap(a):  # noqa: F811 - a scalar in, a scalar out
            return float(scalar_wrap(a)[0])
    if arr.ndim > 2:
        raise ValueError(f"{name} must be a vector (binary) or an (n, k) matrix; got {arr.ndim} "
                         "dimensions")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if np.isnan(arr).any():
        raise ValueError(f"{name}: {int(np.isnan(arr).sum())} missing value(s)")
    bad = (arr < 0) | (arr > 1)
    if bad.any():
        raise ValueError(f"{name} must be in [0, 1]; {int(bad.sum())} value(s) are not "
                         f"(e.g. {arr[bad].ravel()[:3].tolist()})")
    return arr, wrap


def _prior(value, name, k, *, n=None, open_=False, per_row=True):
    """Validate a prior: binary (k = 1) a scalar or (``per_row``) a per-row vector in [0, 1]
    ((0, 1) if open_); multiclass a length-k vector or (n, k) matrix on the simplex."""
    if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
        # (True would be taken as a prior of 1)
        raise ValueError(f"{name} must be numeric; got {value!r}")
    refuse_text(value, name)
    try:
        arr = np.array(value.to_numpy() if isinstance(value, (pd.Series, pd.DataFrame)) else value,
                       dtype=float, copy=True)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric") from None
    if np.isnan(arr).any():
        raise ValueError(f"{name} has missing values")
    lo_ok = arr > 0 if open_ else arr >= 0
    if not np.all(lo_ok & (arr <= 1)):
        rng = ("(0, 1)" if k == 1 else "(0, 1]") if open_ else "[0, 1]"
        raise ValueError(f"{name} must be in {rng}; got "
                         f"{arr.ravel()[~(lo_ok & (arr <= 1)).ravel()][:3].tolist()}")
    if k == 1:
        if arr.ndim != 0 and not per_row:
            raise ValueError(
                f"{name}: for binary probabilities give P(Y = 1) as one number in (0, 1); got "
                f"{arr.size} values {arr.ravel()[:3].tolist()} (for class priors "
                f"[P(Y = 0), P(Y = 1)] pass the second; they must sum to 1)")
        if arr.ndim == 0:
            if open_ and arr >= 1:
                raise ValueError(f"{name} must be strictly between 0 and 1 (a binary prior of 1 "
                                 "leaves no negatives to reweight); got 1.0")
            return arr
        if arr.ndim != 1 or arr.shape[0] != n:
            hint = (" (for class priors [P(Y = 0), P(Y = 1)] pass the second, P(Y = 1), as one "
                    "number)" if arr.shape == (2,) else "")
            raise ValueError(f"{name} must be a scalar or a vector of length {n} (one per row); "
                             f"got shape {arr.shape}" + hint)
        if open_ and np.any(arr >= 1):
            raise ValueError(f"{name} must be strictly between 0 and 1")
        return arr
    if arr.ndim == 1:
        if arr.shape[0] != k:
            raise ValueError(f"{name} must have {k} entries (one per class); got {arr.shape[0]}")
    elif arr.ndim == 2:
        if arr.shape != (n, k):
            raise ValueError(f"{name} must have shape ({k},) or ({n}, {k}); got {arr.shape}")
    else:
        raise ValueError(f"{name} must be a vector of {k} class priors")
    s = arr.sum(axis=-1)
    if np.any(np.abs(s - 1) > _ROW_TOL):
        raise ValueError(f"{name} must sum to 1 over the classes; sums to {np.ravel(s)[:3].tolist()}")
    return arr


def _match_classes(prob, prior, name):
    """A pandas Series of class priors is matched to a DataFrame ``prob``'s columns by name."""
    if not (isinstance(prior, pd.Series) and isinstance(prob, pd.DataFrame)):
        return prior
    cols = prob.columns
    if prior.index.has_duplicates or len(prior) != len(cols) or not prior.index.isin(cols).all():
        raise ValueError(f"{name} is indexed by {list(prior.index)[:5]} but prob's columns are "
                         f"{list(cols)[:5]}: class priors are matched to prob's columns by name")
    return prior.reindex(cols)


def _match_prior_rows(prob, prior):
    """Per-row priors (binary: a length-n vector; multiclass: an (n, k) matrix) are matched to
    ``prob``'s rows by the package's alignment rule (pandas on the index, arrays by position);
    a Series of class priors for a DataFrame ``prob`` is matched on its column names."""
    if not isinstance(prior, (pd.Series, pd.DataFrame)):
        return prior
    if isinstance(prior, pd.Series) and np.ndim(prob) == 2:  # one prior per class
        return _match_classes(prob, prior, "new_prior")
    if isinstance(prior, pd.DataFrame) and isinstance(prob, pd.DataFrame):
        cols = prob.columns
        if (prior.columns.has_duplicates or len(prior.columns) != len(cols)
                or not prior.columns.isin(cols).all()):
            raise ValueError(f"new_prior has columns {list(prior.columns)[:5]} but prob has "
                             f"{list(cols)[:5]}: class priors are matched to prob's columns "
                             "by name")
        prior = prior[cols]
    if np.ndim(prob) == 0:
        return prior
    return align_rows({"prob": prob, "new_prior": prior})[0]["new_prior"]


def adjust_prior(prob, old_prior, new_prior):
    """Recalibrate predicted probabilities for a change of class priors (Lemma 3 of Ziegler and Czyż).

    Parameters
    ----------
    prob : array_like, pandas.Series or pandas.DataFrame
        Either a vector of binary probabilities ``P_old(Y = 1 | x)`` (shape ``(n,)``), or an
        ``(n, k)`` matrix of class probabilities whose rows sum to 1.
    old_prior : float or array_like
        The class prior the probabilities were calibrated under. Binary: ``P_old(Y = 1)``, one
        number strictly inside (0, 1) (a vector is refused). Multiclass: a length-``k`` vector
        on the simplex with strictly positive entries.
    new_prior : float or array_like
        The class prior to recalibrate to. Binary: ``P_new(Y = 1)``, a float in [0, 1] or a
        length-``n`` vector (one prior per row, e.g. per subpopulation; so with two rows
        ``[0.8, 0.2]`` is one prior per row, not the class priors ``[P(Y = 0), P(Y = 1)]``).
        Multiclass: a length-``k`` vector or an ``(n, k)`` matrix on the simplex.

        pandas inputs are matched, never taken by position: per-row priors (a Series, or a
        DataFrame) on ``prob``'s index, class priors (a Series, or a DataFrame's columns) on
        ``prob``'s column names; labels that differ are refused. Arrays are matched by
        position.

    Returns
    -------
    same type as ``prob``
        ``P_new(Y = i | x) = p_i r_i / sum_j p_j r_j`` with ``r_i = new_prior_i / old_prior_i``
        (eqs. (5)-(6) of Ziegler and Czyż). A pandas ``prob`` gives the same kind of object
        with its index and columns.

    Raises
    ------
    ValueError
        If ``prob`` is outside [0, 1], has missing values or rows not summing to 1; if a prior
        is missing, outside its range, does not sum to 1, has the wrong length, or its pandas
        labels do not match ``prob``'s; each message names the argument.

    Warns
    -----
    BoundaryWarning
        For rows where the recalibrated probability is undefined (0/0: a prediction that puts all
        its mass on classes the new prior gives probability 0); those rows are NaN.

    Notes
    -----
    For a binary classifier the correction is a shift of the logit by the log odds ratio of the
    priors, ``logit p_new = logit p + logit new_prior - logit old_prior``; it is computed here in
    the ratio form ``p w1 / (p w1 + (1 - p) w0)``, with ``w1 = new (1 - old)``,
    ``w0 = (1 - new) old``, which is exact at ``p = 0`` and ``p = 1`` and round-trips
    (old -> new -> old) to machine precision unless the shift takes ``p`` to within a few ulps
    of 0 or 1, where a probability keeps few digits (old and new priors 1e-12 and 0.5 send 0.5
    to ``1 - 1e-12``, about four significant digits of ``1 - p``). Where ``p w1`` and ``(1 -
    p) w0`` underflow (subnormal ``p``) the rows are computed in the logit form. The
    assumption (Axiom 2 of Ziegler and Czyż) is that the class-conditional distributions of
    the features are the same under both priors.

    References
    ----------
    A. Ziegler, P. Czyz. Unsupervised Recalibration. Lemma 3.

    Examples
    --------
    >>> import numpy as np, puinfer as pu
    >>> pu.adjust_prior(np.array([0.5, 0.9]), old_prior=0.5, new_prior=0.2)
    array([0.2       , 0.69230769])
    """
    for value, name in ((prob, "prob"), (old_prior, "old_prior"), (new_prior, "new_prior")):
        refuse_dask(value, name)  # (a Dask Series of priors was matched to prob by position)
    new_prior = _match_prior_rows(prob, new_prior)
    old_prior = _match_classes(prob, old_prior, "old_prior")
    arr, wrap = _as_prob_array(prob, "prob")
    if arr.ndim == 1:
        n = arr.shape[0]
        old = _prior(old_prior, "old_prior", 1, n=n, open_=True, per_row=False)
        new = _prior(new_prior, "new_prior", 1, n=n)
        w1 = new * (1.0 - old)
        w0 = (1.0 - new) * old
        num = arr * w1
        den = num + (1.0 - arr) * w0
    else:
        n, k = arr.shape
        if k < 2:
            raise ValueError("prob: a class-probability matrix needs at least 2 columns; pass a "
                             "vector for binary probabilities")
        rs = arr.sum(axis=1)
        if np.any(np.abs(rs - 1) > _ROW_TOL):
            bad = np.flatnonzero(np.abs(rs - 1) > _ROW_TOL)
            raise ValueError(f"prob: rows must sum to 1; {bad.size} row(s) do not (e.g. row "
                             f"{int(bad[0])} sums to {rs[bad[0]]:.6g})")
        old = _prior(old_prior, "old_prior", k, n=n)
        if old.ndim != 1:
            raise ValueError("old_prior must be a single vector of k class priors")
        if np.any(old <= 0):
            raise ValueError("old_prior must be strictly positive for every class (it divides)")
        new = _prior(new_prior, "new_prior", k, n=n)
        with np.errstate(over="ignore"):
            ratio = new / old
        if not np.all(np.isfinite(ratio)):
            # a tiny (e.g. subnormal) old prior overflows new / old; the ratios matter only up
            # to a common factor, so scale them by the smallest old prior (each at most new)
            ratio = new * (old.min() / old)
        num = arr * ratio
        den = num.sum(axis=1, keepdims=True)
    undefined = den == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    if np.any(undefined):
        out, undefined = _underflowed(out, undefined, arr, w1, w0) if arr.ndim == 1 else \
            _underflowed_rows(out, undefined[:, 0], arr, ratio)
    if np.any(undefined):
        warn(f"{int(np.sum(undefined))} row(s) put all their probability on classes "
             "with new prior 0; their recalibrated probability is undefined (NaN)",
             BoundaryWarning)
    return wrap(out)


def _underflowed(out, zero, p, w1, w0):
    """Binary rows whose ``p w1 + (1 - p) w0`` is 0: 0/0 (undefined) only where both terms
    are 0 exactly (``p`` or ``w1``, and ``1 - p`` or ``w0``, zero); elsewhere the products
    underflowed (subnormal ``p``), and the logit form ``logit p + log w1 - log w0`` gives the
    answer. Returns ``out`` and the undefined rows."""
    w1, w0 = np.broadcast_to(w1, p.shape), np.broadcast_to(w0, p.shape)
    undefined = zero & (((p == 0) | (w1 == 0)) & ((p == 1) | (w0 == 0)))
    fix = zero & ~undefined
    if fix.any():
        from scipy.special import expit

        q, a, b = p[fix], w1[fix], w0[fix]
        with np.errstate(divide="ignore"):
            out = np.array(out, dtype=float)
            out[fix] = expit(np.log(q) - np.log1p(-q) + np.log(a) - np.log(b))
    return out, undefined


def _underflowed_rows(out, zero, p, ratio):
    """Multiclass rows whose ``sum_j p_j r_j`` is 0: undefined only where every term is 0
    exactly; elsewhere they underflowed, and the rows are normalised in logs."""
    terms = (p[zero] > 0) & (np.broadcast_to(ratio, p.shape)[zero] > 0)
    undefined = np.zeros(p.shape[0], dtype=bool)
    undefined[np.flatnonzero(zero)[~terms.any(axis=1)]] = True
    fix = zero & ~undefined
    if fix.any():
        from scipy.special import softmax

        with np.errstate(divide="ignore"):
            logs = np.log(p[fix]) + np.log(np.broadcast_to(ratio, p.shape)[fix])
        out = np.array(out, dtype=float)
        out[fix] = softmax(logs, axis=1)
    return out, undefined[:, None]


def _number(v, name):
    if isinstance(v, (bool, np.bool_, str, bytes)) or np.ndim(v) != 0:
        raise TypeError(f"{name} must be one number; got {v!r}")
    try:
        return float(v)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be one number; got {v!r}") from None


def downsampling_correction(prob, w=None, *, base_rate=None, sampled_base_rate=None):
    """Correct the predictions of a model trained on negatively down-sampled data (Haupt).

    Parameters
    ----------
    prob : array_like or pandas.Series
        Binary probabilities ``p'`` from the model trained on the down-sampled data.
    w : float, optional
        The rate at which negatives were kept, in (0, 1].
    base_rate, sampled_base_rate : float, optional
        Instead of ``w``: the base rate ``b`` of positives in the original data and ``b'`` in the
        down-sampled training data; then ``w = b/(1-b) * (1-b')/b'`` (Haupt, formula 1),
        which must lie in (0, 1] (i.e. ``b' >= b``).

    Returns
    -------
    same type as ``prob``
        ``p = p' / (p' + (1 - p') / w)`` (Haupt, formula 2), computed as
        ``w p' / (w p' + 1 - p')``.

    Raises
    ------
    ValueError
        If ``prob`` is outside [0, 1], ``w`` is outside (0, 1], both or neither of ``w`` and the
        base rates are given, or the base rates are not in (0, 1).

    Notes
    -----
    This is Lemma 3 of Ziegler and Czyż with ``old_prior = b'`` and ``new_prior = b``:
    ``downsampling_correction(p, base_rate=b, sampled_base_rate=b')`` equals
    ``adjust_prior(p, b', b)``.

    Examples
    --------
    >>> import puinfer as pu
    >>> pu.downsampling_correction([0.5], w=1/9)
    array([0.1])
    """
    arr, wrap = _as_prob_array(prob, "prob")
    if arr.ndim != 1:
        raise ValueError("prob must be a vector of binary probabilities")
    if w is not None and (base_rate is not None or sampled_base_rate is not None):
        raise ValueError("give either w or (base_rate, sampled_base_rate), not both")
    if w is None:
        if base_rate is None or sampled_base_rate is None:
            raise ValueError("give w, or both base_rate and sampled_base_rate")
        b = _number(base_rate, "base_rate")
        bs = _number(sampled_base_rate, "sampled_base_rate")
        for nm, v in (("base_rate", b), ("sampled_base_rate", bs)):
            if not 0 < v < 1:
                raise ValueError(f"{nm} must be strictly between 0 and 1; got {v}")
        w = (b / (1 - b)) * ((1 - bs) / bs)
        if w > 1 + 1e-12:
            raise ValueError(f"base_rate = {b} and sampled_base_rate = {bs} imply w = {w:.6g} > 1:"
                             " down-sampling negatives cannot lower the base rate")
        w = min(w, 1.0)
    else:
        w = _number(w, "w")
        if not 0 < w <= 1:
            raise ValueError(f"w (the rate at which negatives were kept) must be in (0, 1]; got {w}")
    num = w * arr
    return wrap(num / (num + (1.0 - arr)))
