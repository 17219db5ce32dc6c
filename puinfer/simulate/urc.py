"""Simulated lab and field predictions for unsupervised recalibration (Ziegler and Czyż).

The classifier is the exact Bayes classifier of a Gaussian model calibrated on the lab
population, so Axiom 2 (consistency) holds by construction unless ``field_scale``/``field_shift``
distort the field scores:

* binary: score ``s | Y = y ~ N((2y - 1) delta / 2, 1)``; prediction
  ``C = expit(logit pi_lab + delta s)`` = ``P_lab(Y = 1 | s)``; in the field
  ``s | Y = y ~ N((2y - 1) delta / 2 + shift, scale^2)``;
* ``k`` classes: ``s | Y = y ~ N(delta e_y, I_k)``; ``C = softmax(log pi_lab + delta s)``; in the
  field ``s | Y = y ~ N(delta e_y + shift e_{k-1}, scale^2 I_k)``.

The field shift is the same vector for every class. It moves the log-odds of the last class
against each other class by ``delta * shift`` for every item, in the binary case (class 1
against class 0) as with ``k`` classes. (A shift of every coordinate by the same amount would
cancel in the softmax and leave the predictions unchanged.)

By default the lab set is stratified (its class counts are fixed at ``n_lab * pi_lab``, rounded by
largest remainder), as in the paper's balanced lab set of 200 images; with
``lab_design="random"`` it is an i.i.d. sample of the lab population (class counts multinomial).
Field classes are drawn i.i.d. with the field base rates, per group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from .._validation import check_int, check_rng, refuse_text_and_bools

__all__ = ["URCSimulation", "simulate_urc", "spambase_lab_field", "SPAMBASE_FEATURES",
           "SPAMBASE_MAILBOXES"]

SPAMBASE_FEATURES = ["word_freq_free", "char_freq_!", "char_freq_$",
                     "capital_run_length_average", "word_freq_remove", "word_freq_your"]
# mailbox: (number of spam, number of non-spam) -> spam shares 5%, 15%, 40%
SPAMBASE_MAILBOXES = {"A": (42, 800), "B": (124, 700), "C": (333, 500)}


@dataclass(frozen=True)
class URCSimulation:
    """A simulated lab/field data set.

    Attributes
    ----------
    lab_pred, field_pred : numpy.ndarray
        Predictions: ``P(Y = 1)`` vectors (binary) or (n, k) matrices.
    lab_y, field_y : numpy.ndarray
        True classes (0..k-1).
    field_group : numpy.ndarray or None
        Group of each field item: from :func:`simulate_urc` the integers 0..G-1 when several
        groups were simulated (``None`` for one group); from :func:`spambase_lab_field` the
        mailbox names (strings, always given).
    lab_base_rates : numpy.ndarray
        Class shares of the lab population the classifier is calibrated on.
    field_base_rates : numpy.ndarray
        True field base rates, (G, k).
    lab_design : str
        How the lab set was drawn, ``"stratified"`` (class counts fixed) or ``"random"``:
        fit with ``URC(sim.lab_pred, sim.lab_y, lab_design=sim.lab_design)``. URC's own
        default is ``"random"``; a stratified lab set fitted as a random one makes
        ``test_no_shift`` conservative (session 87's API audit: data from
        ``simulate_urc()``'s defaults, with no shift, fitted with URC's defaults, rejected in
        2.0% of 300 replicates at 5%).
    """

    lab_pred: np.ndarray
    lab_y: np.ndarray
    field_pred: np.ndarray
    field_y: np.ndarray
    field_group: np.ndarray | None
    lab_base_rates: np.ndarray
    field_base_rates: np.ndarray
    lab_design: str = "stratified"


def _stratified_counts(n, p):
    raw = n * p
    base = np.floor(raw).astype(int)
    short = n - base.sum()
    order = np.argsort(-(raw - base), kind="stable")
    base[order[:short]] += 1
    return base


def _rates(value, name):
    refuse_text_and_bools(value, name)
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric; got {value!r:.60}") from None
    if arr.ndim == 1 and arr.size == 1:
        arr = np.array([1 - arr[0], arr[0]])
    # NaN fails every comparison: test for the good case
    if arr.ndim != 1 or not (np.all((arr >= 0) & (arr <= 1)) and abs(arr.sum() - 1) <= 1e-9):
        raise ValueError(f"{name} must be a base rate in [0, 1] or class shares summing to 1; "
                         f"got {np.asarray(value).tolist()}")
    return arr


def simulate_urc(n_lab=200, n_field=5000, lab_base_rates=0.5, field_base_rate=0.2, *,
                 separation=1.5, field_scale=1.0, field_shift=0.0, rng=None,
                 lab_design="stratified") -> URCSimulation:
    """Simulate a classifier's predictions on a labelled lab set and an unlabelled field set.

    Parameters
    ----------
    n_lab : int
        Lab set size (stratified by ``lab_base_rates``).
    n_field : int or sequence of int
        Field size, or one size per group.
    lab_base_rates : float or array_like
        Binary: ``P_lab(Y = 1)``; ``k`` classes: a vector of shares.
    field_base_rate : float, array_like or 2-D array_like
        The field base rate (binary ``P(Y = 1)``, or class shares); a sequence of them (binary)
        or a (G, k) array for G groups.
    separation : float
        ``delta``: the distance between the class means of the score (accuracy grows with it).
    field_scale, field_shift : float
        Distort the field scores within every class (``s = mean + scale * noise + shift``):
        values other than 1 and 0 break Axiom 2. Binary: ``shift`` is added to the score;
        ``k`` classes (or two given as a vector): to the last class's coordinate
        (``shift * e_{k-1}``, the same for every item). Either way the field log-odds of the
        last class against any other are moved by ``separation * shift``.
    rng : numpy.random.Generator, int, sequence of int or None
        Source of randomness: a Generator (used as it is) or a seed for
        :func:`numpy.random.default_rng`; ``None`` (default) gives fresh entropy.
    lab_design : {"stratified", "random"}
        ``"stratified"`` (default): lab class counts fixed at ``n_lab * lab_base_rates``
        (largest remainder); ``"random"``: lab classes drawn i.i.d. with ``lab_base_rates``
        (a draw that leaves a class without lab items is redrawn, since URC needs every class
        in the lab set). Recorded as the result's ``lab_design``, which ``URC`` should be
        given (its default is ``"random"``).

    Returns
    -------
    URCSimulation

    Raises
    ------
    ValueError
        For invalid sizes or rates, or an ``n_field`` whose length is neither 1 nor the number
        of groups in ``field_base_rate``.
    TypeError
        If ``rng`` is neither a Generator nor a seed.
    """
    if lab_design not in ("stratified", "random"):
        raise ValueError(f"lab_design must be 'stratified' or 'random'; got {lab_design!r}")
    rng = check_rng(rng)
    pi_lab = _rates(lab_base_rates, "lab_base_rates")
    k = pi_lab.size
    binary = np.ndim(lab_base_rates) == 0
    for name, val in (("n_lab", n_lab), ("n_field", n_field)):
        arr = np.asarray(val)
        if arr.dtype.kind not in "iuf" or arr.size == 0 or arr.ndim > (name == "n_field") \
                or not np.all(np.isfinite(arr)) or np.any(arr < 1) or np.any(arr != np.floor(arr)):
            raise ValueError(f"{name} must be a positive integer (or integers); got {val!r}")
    for name, val in (("separation", separation), ("field_scale", field_scale),
                      ("field_shift", field_shift)):
        if isinstance(val, (bool, np.bool_)) or \
                not isinstance(val, (int, float, np.integer, np.floating)) or not np.isfinite(val):
            raise ValueError(f"{name} must be a finite number; got {val!r}")
    if not field_scale > 0:  # (a scale of -1 is the scale 1, 0 no noise: session 67's audit)
        raise ValueError(f"field_scale must be positive; got {field_scale!r}")
    if np.any(pi_lab == 0):  # (its lab predictions would all be 0: URC refuses such a lab set)
        raise ValueError(f"lab_base_rates must be positive for every class; got "
                         f"{pi_lab.tolist()}")
    refuse_text_and_bools(field_base_rate, "field_base_rate")
    try:
        fb = np.asarray(field_base_rate, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"field_base_rate must be numeric; got {field_base_rate!r:.60}") from None
    if binary and fb.ndim <= 1:
        fb = np.atleast_1d(fb)
        P = np.column_stack([1 - fb, fb])
    else:
        P = np.atleast_2d(fb)
    P = np.vstack([_rates(row, "field_base_rate") for row in P])
    if P.shape[1] != k:
        raise ValueError("field_base_rate has a different number of classes from lab_base_rates")
    G = P.shape[0]
    if np.size(n_field) not in (1, G):
        raise ValueError(f"n_field has {np.size(n_field)} sizes but field_base_rate gives {G} "
                         "group(s): give one size, or one per group")
    sizes = np.broadcast_to(np.asarray(n_field, dtype=int).ravel(), (G,))
    delta = float(separation)

    def predict(y, scale, shift):
        n = y.size
        if binary:
            s = (2 * y - 1) * delta / 2 + scale * rng.standard_normal(n) + shift
            return special.expit(special.logit(pi_lab[1]) + delta * s)
        s = delta * np.eye(k)[y] + scale * rng.standard_normal((n, k))
        s[:, k - 1] += shift  # a shift of every coordinate would cancel in the softmax
        return special.softmax(np.log(pi_lab) + delta * s, axis=1)

    if lab_design == "stratified":
        counts = _stratified_counts(int(n_lab), pi_lab)
        if np.any(counts == 0):
            raise ValueError(f"n_lab = {int(n_lab)} with lab_base_rates {pi_lab.tolist()} "
                             f"leaves a class without lab items (counts {counts.tolist()})")
        lab_y = rng.permutation(np.repeat(np.arange(k), counts))
    else:
        if int(n_lab) < k:
            raise ValueError("n_lab: a random lab set needs at least one item per class")
        # conditional on every class present; refused where that is rare (an unbounded
        # redraw never ended for a rate of 1e-9: session 67's audit)
        p_all = 1.0 - np.sum((1.0 - pi_lab) ** int(n_lab))  # (a lower bound, Bonferroni)
        if p_all < 0.01:
            raise ValueError(f"n_lab = {int(n_lab)} with lab_base_rates {pi_lab.tolist()}: a "
                             "random lab set rarely holds every class; use more lab items or "
                             "lab_design='stratified'")
        while True:
            lab_y = rng.choice(k, size=int(n_lab), p=pi_lab)
            if np.all(np.bincount(lab_y, minlength=k) > 0):
                break
    lab_pred = predict(lab_y, 1.0, 0.0)
    field_y = np.concatenate([rng.choice(k, size=int(m), p=P[g]) for g, m in enumerate(sizes)])
    group = np.repeat(np.arange(G), sizes) if G > 1 else None
    field_pred = predict(field_y, float(field_scale), float(field_shift))
    return URCSimulation(lab_pred, lab_y, field_pred, field_y, group, pi_lab, P, lab_design)


def spambase_lab_field(seed: int = 42, *, n_train: int = 500, n_lab: int = 200,
                       mailboxes: dict | None = None) -> URCSimulation:
    """A lab/field split of the bundled UCI Spambase data for unsupervised recalibration.

    A logistic regression on ``log1p`` of six features (:data:`SPAMBASE_FEATURES`) is trained
    on a balanced set (``n_train`` spam + ``n_train`` non-spam); the **lab** set is another
    balanced set (``n_lab`` of each class); the **field** is drawn from the remaining e-mails
    as mailboxes of the given sizes, with different spam shares (default
    :data:`SPAMBASE_MAILBOXES`: 5%, 15%, 40%); the e-mails left over are not used.
    The field labels are kept (``field_y``) to evaluate the recalibration.

    Parameters
    ----------
    seed : int, numpy.random.Generator or None
        Seed of the random split (None: fresh draws, a different split each call).
    n_train, n_lab : int
        Per-class sizes of the training and lab sets.
    mailboxes : dict, optional
        ``{name: (n_spam, n_nonspam)}``.

    Returns
    -------
    URCSimulation
        ``field_group`` holds the mailbox names; ``lab_base_rates`` = (0.5, 0.5);
        ``field_base_rates`` the true shares per mailbox; ``lab_design`` ``"stratified"``
        (``n_lab`` of each class).
    """
    import statsmodels.api as sm

    from ..datasets import load_spambase

    boxes = dict(SPAMBASE_MAILBOXES if mailboxes is None else mailboxes)
    for name, val in (("n_train", n_train), ("n_lab", n_lab)):
        check_int(val, name, minimum=1)
    for name, box in boxes.items():
        ok = isinstance(box, (tuple, list)) and len(box) == 2
        sizes = [check_int(v, f"mailboxes[{name!r}]", minimum=0) for v in box] if ok else []
        if not ok or sum(sizes) == 0:
            raise ValueError(f"mailboxes[{name!r}] must be (n_spam, n_nonspam), not both 0; "
                             f"got {box!r}")
    # (checked: True ran as the seed 1, a RandomState was taken, 1.5 failed inside numpy)
    rng = check_rng(seed, "seed")
    df = load_spambase()
    X = sm.add_constant(np.log1p(df[SPAMBASE_FEATURES].to_numpy()))
    y = df["spam"].to_numpy().astype(int)
    spam = rng.permutation(np.flatnonzero(y == 1))
    ham = rng.permutation(np.flatnonzero(y == 0))
    a, b = n_train, n_train + n_lab
    if b + sum(v[0] for v in boxes.values()) > spam.size or \
            b + sum(v[1] for v in boxes.values()) > ham.size:
        raise ValueError("mailboxes: not enough e-mails left for these sizes")
    train = np.r_[spam[:a], ham[:a]]
    lab = rng.permutation(np.r_[spam[a:b], ham[a:b]])
    fit = sm.Logit(y[train], X[train]).fit(disp=0)
    field, group = [], []
    s0 = h0 = b
    for name, (ns, nh) in boxes.items():
        field.append(np.r_[spam[s0:s0 + ns], ham[h0:h0 + nh]])
        group += [name] * (ns + nh)
        s0 += ns
        h0 += nh
    field = np.concatenate(field)
    rates = np.array([[v[1] / (v[0] + v[1]), v[0] / (v[0] + v[1])] for v in boxes.values()])
    return URCSimulation(fit.predict(X[lab]), y[lab], fit.predict(X[field]), y[field],
                         np.array(group), np.array([0.5, 0.5]), rates, "stratified")
