"""The URC model: validated lab predictions and labels, the partition, and ``fit()``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from scipy import stats

from ..._align import align_rows, check_missing_option, drop_missing
from ..._validation import check_int, unwrap_0d, warn_and_record
from ...base.model import Model
from ...base.results import freeze_arrays
from ...exceptions import (
    AssumptionWarning,
    BoundaryWarning,
    ConvergenceWarning,
    EmptyBinWarning,
    GroupingWarning,
    IllConditionedWarning,
    StartsDisagreeWarning,
)
from . import _likelihood as lik
from ._inputs import as_pred, check_pred, check_rowwise, label_array, labels_missing_hint
from .partition import Partition, build_partition
from .results import URCFitRecord, URCResults

__all__ = ["URC"]

LAB_DESIGNS = ("random", "stratified")
#: a grouped joint fit warns (GroupingWarning) where its groups' size-weighted mean base rate
#: is more than this many standard errors from the pooled field's one-group fit. Session 87's
#: study (60 data sets per setting, studies/urc_grouping): 0 of 240 fits at equal rates without drift
#: (10 or 300 groups, lab 36 or 360) and 6 of 240 with rates spread over 0.1-0.5 exceeded 1;
#: 43-48% of the fits with drift (300 groups of 200 rows, lab 36-100, 4 cells) did, and
#: 62-78% of those whose 95% intervals covered below 0.9
POOLED_DRIFT_SE = 1.0
#: the named pseudo-count: 1/|A| per cell
PERKS = "perks"
#: pseudo-counts per lab (class, cell) in the joint likelihood: "perks", 1/|A| per cell (Perks'
#: prior: one pseudo-item per row of M_A whatever |A|), spread evenly (see ``URC.fit``; chosen by
#: the declared study studies/urc_pc_default.py, session 71, over sparse no-shift and shift
#: cells; |A| / 2 per row spread as the pooled lab histogram, the default before, biased the
#: base rates in the direction of a shift)
DEFAULT_LAB_PSEUDOCOUNT = PERKS
DEFAULT_LAB_PRIOR = "uniform"
LAB_PRIORS = ("pooled", "uniform")
#: the default n_bins keeps at least this many lab items per (class, cell) on average
MIN_LAB_PER_CELL = 15


def default_n_bins(n_lab: int, k: int, binary: bool) -> int:
    """The default ``n_bins`` of :class:`URC` for ``n_lab`` lab items and ``k`` classes.

    The paper's choice (4 intervals for a binary classifier; here 2 per predicted class for
    ``k > 2``), reduced while the lab histogram would hold fewer than
    :data:`MIN_LAB_PER_CELL` lab items per (class, cell) on average (``n_lab / (k |A|)``),
    down to 2 intervals (binary) or 1 per predicted class; never more bins than lab items.
    Sparse lab cells make the profile statistic exceed its chi-square reference; fewer cells
    at small lab sets restore the level at a small cost in precision
    (``studies/results/urc_labdesign.md``).

    Examples
    --------
    >>> default_n_bins(100, 2, True), default_n_bins(300, 2, True)
    (3, 4)
    >>> default_n_bins(100, 3, False), default_n_bins(300, 3, False)
    (1, 2)
    """
    if binary:
        nb = min(4, max(2, int(n_lab // (MIN_LAB_PER_CELL * 2))))
        return max(min(nb, n_lab), 2)
    nb = min(2, max(1, int(n_lab // (MIN_LAB_PER_CELL * k * k))))
    return max(min(nb, n_lab), 1)


def _binary_codes(labels, can_drop) -> np.ndarray:
    if isinstance(labels, pd.Series) and labels.dtype == bool:
        labels = labels.astype(float)
    try:
        arr = (labels.to_numpy(dtype=float, na_value=np.nan) if isinstance(labels, pd.Series)
               else np.array(labels, dtype=float, copy=True)).ravel()
    except (TypeError, ValueError):
        raise ValueError("lab_labels must be 0/1 for a binary classifier") from None
    if np.isnan(arr).any():
        raise ValueError(labels_missing_hint("lab_labels", int(np.isnan(arr).sum()), can_drop))
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        raise ValueError(f"lab_labels must be 0/1; found {np.unique(arr[bad])[:5].tolist()}")
    return arr.astype(np.intp)


def _class_codes(labels, classes, can_drop) -> np.ndarray:
    lab = pd.Series(labels.to_numpy() if isinstance(labels, pd.Series)
                    else np.asarray(labels, dtype=object).ravel())
    if lab.isna().any():
        raise ValueError(labels_missing_hint("lab_labels", int(lab.isna().sum()), can_drop))
    idx = pd.Index(classes).get_indexer(lab)
    if np.any(idx < 0):
        raise ValueError(f"lab_labels: value(s) {lab[idx < 0].unique()[:5].tolist()} are "
                         f"not among the classes {classes}")
    return idx.astype(np.intp)


def _field_groups(groups, N, can_drop=False):
    """Group codes and the group index (``"all"`` without groups); ``groups`` already aligned
    with the field predictions."""
    if groups is None:
        return np.zeros(N, dtype=np.intp), pd.Index(["all"], name="group")
    if isinstance(groups, pd.DataFrame):
        if groups.shape[1] != 1:
            raise ValueError(f"groups must be one label per row; got a DataFrame with "
                             f"{groups.shape[1]} columns")
        groups = groups.iloc[:, 0]
    if isinstance(groups, pd.Series):
        gser = groups.reset_index(drop=True)
    else:
        garr = label_array(groups)
        if garr.ndim == 2 and garr.shape[1] == 1:
            garr = garr[:, 0]
        if garr.ndim != 1:
            raise ValueError(f"groups must be one label per row; got shape {garr.shape}")
        gser = pd.Series(garr)
    if len(gser) != N:
        raise ValueError(f"groups has {len(gser)} entries; field_pred has {N} rows")
    if gser.isna().any():
        raise ValueError(f"groups has {int(gser.isna().sum())} missing value(s)"
                         + (" (missing='drop' drops those rows)" if can_drop else ""))
    try:
        codes, uniq = pd.factorize(gser, sort=True)
    except TypeError:  # labels of mixed types cannot be sorted
        codes, uniq = pd.factorize(gser, sort=False)
    check_groups_print_apart(uniq)
    return codes.astype(np.intp), pd.Index(uniq, name=gser.name if gser.name is not None
                                           else "group")


def check_groups_print_apart(labels) -> None:
    """Refuse distinct group labels that print alike: they would be told apart nowhere in
    the results (session 67's audit: groups 1 and "1"; on Dask, session 68's, in different
    partitions)."""
    text = pd.Series([str(u) for u in labels])  # (the distinct groups, not the rows)
    if text.duplicated().any():
        same = sorted(set(text[text.duplicated()]))[:3]
        raise ValueError(f"groups: labels of different types print alike ({same}: e.g. 1 and "
                         "'1'); give the groups labels of one type")


def _naive(pred, codes, G, Ng, binary, k):
    """Mean prediction per group and class (the naive estimator of Theorem 5)."""
    if binary:
        m1 = np.bincount(codes, weights=pred, minlength=G) / Ng
        return np.column_stack([1 - m1, m1])
    return np.column_stack([np.bincount(codes, weights=pred[:, j], minlength=G)
                            for j in range(k)]) / Ng[:, None]


def model_missing(model) -> str:
    """The model's ``missing=`` option, the default of its ``fit``'s (``"raise"`` for models
    pickled before session 87, which did not keep it)."""
    return getattr(model, "missing", "raise")


def field_cells(model, field_pred, groups, missing, allow_empty=False):
    """Validated field predictions, their groups (aligned), cells and the rows dropped
    (``None`` for the first three when ``allow_empty`` and no row is left: a block of a
    Dask collection may hold none)."""
    check_rowwise(field_pred, "field_pred")
    if groups is not None:
        check_rowwise(groups, "groups")
    al, _ = align_rows({"field_pred": field_pred, "groups": groups})
    inp = as_pred(al["field_pred"], "field_pred", model.classes, model._named)
    al, _, n_dropped = drop_missing({"field_pred": inp.arr, "groups": al["groups"]}, None,
                                    missing)
    if allow_empty and len(al["field_pred"]) == 0:
        return None, None, None, n_dropped
    pred, _ = check_pred(al["field_pred"], "field_pred", k=model.n_classes,
                         binary=model._binary, can_drop=missing == "raise")
    return pred, al["groups"], model.partition.assign(pred), n_dropped


def field_histogram(model, field_pred, groups, missing):
    """The field enters URC only through its histogram: counts per group and cell ``F``
    (``G x |A|``), the naive estimator, the group index and the rows dropped. Dask
    collections are binned block by block (:func:`._dask.field_histogram_dask`)."""
    from ..._dask import any_dask

    if any_dask(field_pred, groups):
        from ._dask import field_histogram_dask

        return field_histogram_dask(model, field_pred, groups, missing)
    pred, grp, cells, n_dropped = field_cells(model, field_pred, groups, missing)
    codes, gindex = _field_groups(grp, pred.shape[0], missing == "raise")
    G, A = len(gindex), model.partition.n_cells
    F = np.bincount(codes * A + cells, minlength=G * A).reshape(G, A).astype(float)
    naive = _naive(pred, codes, G, F.sum(axis=1), model._binary, model.n_classes)
    return F, naive, gindex, n_dropped


def _check_random_starts(n) -> int:
    """``random_starts`` as a count in [0, 10,000] (each start is built before any is run)."""
    n = check_int(n, "random_starts", minimum=0)
    if n > 10_000:
        raise ValueError(f"random_starts must be at most 10000; got {n}")
    return n


class URC(Model):
    """Unsupervised recalibration: estimate field base rates from a classifier's predictions.

    The method of Ziegler and Czyż, "Unsupervised Recalibration": a classifier calibrated on a
    labelled **lab** set is applied to unlabelled **field** data whose class base rates may
    differ. Under the consistency assumption (Axiom 2: the distribution of the predictions
    within each class is the same in lab and field) the field histogram of the predictions over
    a partition ``A`` satisfies ``v_A = M_A' p`` (Lemma 7), where
    ``M_A[i, a] = P_lab(C in A_a | Y = i)`` (eq. (9)). URC estimates ``p`` by maximum likelihood
    of the multinomial field histogram (Definition 8), per subpopulation for local URC
    (Algorithm 1), and recalibrates the predictions with Lemma 3.

    Parameters
    ----------
    lab_pred : array_like, pandas.Series or pandas.DataFrame
        The classifier's predictions on the labelled lab set: a vector of ``P(Y = 1)`` for a
        binary classifier (an ``(n, 2)`` matrix is reduced to its second column), or an
        ``(n, k)`` matrix of class probabilities whose rows sum to 1. The classifier is assumed
        calibrated on the lab population (eq. (1) of the paper). A DataFrame with two or more
        columns names the classes by its columns: predictions given later as a DataFrame
        (``fit``'s ``field_pred``, ``recalibrate``'s ``pred``) are matched to them **by column
        name** (reordered; a missing or extra column is refused). Without names (an array)
        later DataFrames are taken by position.
    lab_labels : array_like or pandas.Series
        True classes of the lab items: 0/1 for binary; for ``k`` classes integer codes
        ``0..k-1`` or, when ``lab_pred`` is a DataFrame, its column names. **Alignment**: when
        ``lab_pred`` and ``lab_labels`` are pandas objects their rows are matched on the index
        (they must hold the same labels, each once; otherwise a ``ValueError``), never by
        position; an array or list is matched by position and must have the same length.
    n_bins : int, optional
        Binary: the number of intervals of equal lab probability ``|A|`` (eq. (11)); default 4,
        as the paper recommends. Multiclass: the number of such intervals within each
        predicted class (arg max), ``|A| = k n_bins``; default 2. With a small lab set the
        default is reduced so that the lab histogram keeps on average at least
        :data:`MIN_LAB_PER_CELL` (15) lab items per (class, cell), down to 2 cells (binary) or
        one cell per predicted class (see :func:`default_n_bins`): below about 120 lab items
        (binary) or ``30 k^2`` (270 for three classes) the profile intervals of the sparse
        histogram fall short of their level (``studies/results/urc_labdesign.md``). With one
        cell per class (``|A| = k``) the goodness-of-fit test has no degrees of freedom left;
        give ``n_bins`` to trade the intervals' level for a test of Axiom 2.
    missing : {"raise", "drop"}
        What to do with lab rows holding a missing prediction or label (R's ``na.action``):
        refuse them (default) or drop them; the number dropped is ``n_dropped`` and is shown
        by the results' ``summary()``.
    lab_design : {"random", "stratified"}
        How the lab set was sampled from the lab population (the population the classifier is
        calibrated on, with base rates ``pi_lab``):

        * ``"random"`` (default, the common case): an ordinary random sample, so the lab class
          counts ``n_i ~ Multinomial(n, pi_lab)`` are data and ``pi_lab`` is a parameter. The
          default null of :meth:`URCResults.test_no_shift` is then "field base rates = lab
          population base rates", a two-sample likelihood-ratio test that estimates
          ``pi_lab`` from the lab class counts and the field histograms together and so carries
          the sampling error of the lab base rate.
        * ``"stratified"``: the lab class counts were fixed by design (e.g. 200 images of each
          class, as in the paper's experiment, or a case-control sample). The lab class shares
          say nothing about any population; the default null of ``test_no_shift`` takes them
          as the known lab base rates.

        Use ``"stratified"`` only when the class counts really were chosen; with a random lab
        set it treats the sample's class shares as known and the no-shift test over-rejects:
        at the 5% level 17% with three classes and 100 or 300 lab items, 15% with 1000, and
        9-11% with two classes (field 3000, 3000 replicates per cell, the default fit before
        session 71;
        ``studies/results/urc_labdesign.md``, column ``size_stratified_null``). The design is
        the lab data's, so it is given here, once for every fit of this lab set. The field
        base rates, their intervals and profiles are the same under both designs (``pi_lab``
        separates from them in the likelihood), and so is ``test_no_shift`` with an explicit
        ``value``; only the default no-shift null and the log-likelihood (``llf``, which
        includes the lab class counts under ``"random"``) differ.

    Attributes
    ----------
    partition : Partition
    classes : tuple
    n_classes : int
    condition_number : float
        Of the lab ``M_A``.
    lab_separation_pvalue : float
        Chi-square test that the classes have the same lab histogram (a permutation test of
        the same statistic where the expected counts are too small for the chi-square
        reference: any below 1, or over a fifth below 5).
    lab_design : str
        ``"random"`` or ``"stratified"``.
    warnings : tuple of (str, str)
        Warnings raised while building the partition.
    n_dropped : int
        Lab rows dropped for missing values (``missing="drop"``).

    Raises
    ------
    ValueError
        For lab inputs that cannot be aligned, predictions outside [0, 1], rows not summing to
        1, missing values (with ``missing="raise"``), labels that are not classes, a class
        without lab items, or a partition with fewer cells than classes.

    Warns
    -----
    IllConditionedWarning
        When the condition number of the lab ``M_A`` exceeds 10 (about AUC 0.56 for a binary
        classifier with four cells) or a chi-square test cannot tell the classes' lab histograms
        apart (p > 0.01): the base rates are then weakly identified (Lemma 7).
    EmptyBinWarning
        When raw bins hold no lab prediction (they are merged) or a class has no lab prediction
        in some cell (``M_A`` has a zero there).

    Notes
    -----
    Requires every class to occur in the lab set and ``|A| >= k``; the goodness-of-fit test has
    ``|A| - k`` degrees of freedom per group, so ``|A| > k`` is needed to test Axiom 2. URC has
    no formula interface (its data are predictions, not a design); it subclasses
    :class:`~puinfer.base.model.Model` for the common shape (data in, ``fit()`` out).

    Examples
    --------
    >>> import numpy as np, puinfer as pu
    >>> from puinfer.simulate.urc import simulate_urc
    >>> sim = simulate_urc(n_lab=400, n_field=5000, field_base_rate=0.2, separation=3.0,
    ...                    rng=np.random.default_rng(1))
    >>> res = pu.URC(sim.lab_pred, sim.lab_y).fit(sim.field_pred)
    >>> round(float(res.base_rate.iloc[0]), 2)
    0.2
    >>> res.conf_int().round(2).to_numpy().tolist()
    [[0.18, 0.23]]
    """

    _formula_lhs = None
    #: whether a grouped fit is checked against the pooled field (:meth:`_check_pooled`)
    _pooled_check = True

    def __init__(self, lab_pred, lab_labels, n_bins: int | None = None, *,
                 missing: str = "raise", lab_design: str = "random"):
        # (also the default of fit's: missing='drop' given here was refused there for the
        # field rows, with a hint to pass the option just passed; session 87's API audit)
        self.missing = check_missing_option(missing)
        if not isinstance(lab_design, str) or lab_design not in LAB_DESIGNS:
            raise ValueError(f"lab_design must be 'random' or 'stratified'; got {lab_design!r}")
        self.lab_design = lab_design
        check_rowwise(lab_pred, "lab_pred")
        check_rowwise(lab_labels, "lab_labels")
        al, _ = align_rows({"lab_pred": lab_pred, "lab_labels": lab_labels})
        lab_df = al["lab_pred"]
        inp = as_pred(lab_df, "lab_pred")
        arr, labels = inp.arr, al["lab_labels"]
        if isinstance(labels, pd.DataFrame):
            if labels.shape[1] != 1:
                raise ValueError("lab_labels must be one class per row; got a DataFrame with "
                                 f"{labels.shape[1]} columns")
            labels = labels.iloc[:, 0]
        al, _, self.n_dropped = drop_missing({"lab_pred": arr, "lab_labels": labels}, None,
                                             missing)
        pred, binary = check_pred(al["lab_pred"], "lab_pred", can_drop=missing == "raise")
        names = inp.columns
        self._binary = binary
        # the columns of a DataFrame with >= 2 columns name the classes (later DataFrames
        # are matched to them by name)
        self._named = names is not None and len(names) >= 2
        if binary:
            classes = list(names[-2:]) if self._named else [0, 1]
        else:
            classes = list(names) if self._named else list(range(pred.shape[1]))
        self.classes = classes
        self.n_classes = k = len(classes)
        codes = self._codes(al["lab_labels"], pred.shape[0], missing == "raise")
        #: how n_bins was chosen (shown by the results' summary)
        self.n_bins_choice = "given"
        if n_bins is None:
            n_bins = default_n_bins(pred.shape[0], k, binary)
            paper = 4 if binary else 2
            self.n_bins_choice = ("default" if n_bins >= min(paper, pred.shape[0]) else
                                  f"default {paper} reduced to {n_bins}: small lab set")
        lo = k if binary else 1
        ok = isinstance(n_bins, (int, np.integer, float, np.floating)) and \
            not isinstance(n_bins, bool) and np.isfinite(n_bins) and int(n_bins) == n_bins
        if not ok or n_bins < lo:
            raise ValueError(f"n_bins must be an integer >= {lo}; got {n_bins!r}")
        if n_bins > pred.shape[0]:  # more bins than lab items: empty bins only (and memory)
            raise ValueError(f"n_bins = {int(n_bins)} exceeds the number of lab predictions "
                             f"({pred.shape[0]}); use fewer bins")
        record: list = []
        self.partition: Partition = self._build_partition(pred, k, int(n_bins), binary, record)
        A = self.partition.n_cells
        if A < k:
            raise ValueError(f"the partition has |A| = {A} cells (after merging empty bins) for "
                             f"{k} classes; URC needs |A| >= k (more distinct lab predictions or "
                             "more bins)")
        cells = self.partition.assign(pred)
        L = np.bincount(codes * A + cells, minlength=k * A).reshape(k, A).astype(float)
        self._L = L
        self._n_lab = pred.shape[0]
        zero = np.argwhere(L == 0)
        if zero.size:
            which = ", ".join(f"class {classes[i]} in cell {a + 1}" for i, a in zero[:4])
            warn_and_record(record, f"{len(zero)} lab histogram cell(s) are empty ({which}"
                            f"{', ...' if len(zero) > 4 else ''}): the maximum-likelihood M_A "
                            "(fit(lab_pseudocount=0) or the fixed likelihood) has zeros there, "
                            "an estimate on the boundary (the joint likelihood's lab "
                            "pseudo-counts keep it off: URC.fit's default 1/|A|, "
                            "RegressionURC.fit's 0); consider fewer bins", EmptyBinWarning)
        self._check_identification(record)
        self.warnings = tuple(record)
        # the results share the model: its arrays read-only, its classes a tuple
        self.classes = tuple(self.classes)
        freeze_arrays(self)

    def _check_identification(self, record):
        """Condition number of the lab ``M_A`` and a chi-square test of homogeneity of the
        rows of the lab counts (are the classes' lab histograms distinguishable at all?)."""
        L, k = self._L, self.n_classes
        sv = np.linalg.svd(L / L.sum(axis=1, keepdims=True), compute_uv=False)
        self.condition_number = float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf
        E = np.outer(L.sum(axis=1), L.sum(axis=0)) / L.sum()
        keep = E.sum(axis=0) > 0
        X2 = float(np.sum((L[:, keep] - E[:, keep]) ** 2 / E[:, keep]))
        # the chi-square reference needs expected counts of about 5 (Cochran: none below 1,
        # at most a fifth below 5); below that the p-value is a permutation test's (999
        # relabellings of the lab rows, seeded: the same model gives the same p)
        Ek = E[:, keep]
        if Ek.min() >= 1 and np.mean(Ek < 5) <= 0.2:
            p = float(stats.chi2.sf(X2, (k - 1) * (keep.sum() - 1)))
        else:
            p = float(stats.chi2_contingency(
                np.rint(L[:, keep]).astype(np.int64), correction=False,
                method=stats.PermutationMethod(n_resamples=999, rng=0)).pvalue)
        self.lab_separation_pvalue = p
        ill, alike = self.condition_number > 10, p > 0.01
        if ill:
            warn_and_record(record, f"M_A is ill-conditioned (condition number "
                            f"{self.condition_number:.3g}; lab test that the classes have the "
                            f"same prediction histogram: p = {p:.3g}): the predictions separate "
                            "the classes poorly, so the base rates are weakly identified and "
                            "their intervals wide", IllConditionedWarning)
        elif alike:
            warn_and_record(record, f"the lab set does not show that the classes' prediction "
                            f"histograms differ (p = {p:.3g}; M_A's condition number "
                            f"{self.condition_number:.3g}): too few lab rows, or predictions "
                            "that separate the classes poorly; the base rates may be weakly "
                            "identified", IllConditionedWarning)

    def _build_partition(self, pred, k, n_bins, binary, record) -> Partition:
        """The partition of the lab predictions (eq. (11)); a hook for subclasses that
        partition differently (``RegressionURC``: quantiles of the predicted value)."""
        return build_partition(pred, k, n_bins, binary, record, self.classes)

    @classmethod
    def _from_design(cls, design, data, **kwargs):
        raise NotImplementedError("URC has no formula interface: pass the lab predictions and "
                                  "labels, URC(lab_pred, lab_labels)")

    def _codes(self, labels, n, can_drop=False):
        if self._binary and not self._named:
            codes = _binary_codes(labels, can_drop)
        else:
            codes = _class_codes(labels, self.classes, can_drop)
        if codes.shape[0] != n:
            raise ValueError(f"lab_labels has {codes.shape[0]} entries; lab_pred has {n} rows")
        missing = [self.classes[i] for i in range(self.n_classes) if not np.any(codes == i)]
        if missing:
            raise ValueError(f"lab_labels: class(es) {missing} have no lab items; URC needs every "
                             "class in the lab set")
        return codes

    def _pred_input(self, pred, name, can_drop=False):
        """``(PredInput, validated array)`` of predictions of this classifier (columns of a
        DataFrame matched to the classes by name when the lab DataFrame named them)."""
        inp = as_pred(pred, name, self.classes, self._named)
        arr, _ = check_pred(inp.arr, name, k=self.n_classes, binary=self._binary,
                            can_drop=can_drop)
        return inp, arr

    # -- lab summaries --------------------------------------------------------------------------
    @property
    def lab_counts(self) -> pd.DataFrame:
        """Lab histogram: classes (rows) by cells (columns)."""
        return pd.DataFrame(self._L.copy(), index=pd.Index(self.classes, name="class"),
                            columns=pd.Index(self.partition.labels, name="cell"))

    @property
    def M(self) -> pd.DataFrame:
        """Lab estimate of ``M_A`` (eq. (9))."""
        return self.lab_counts.div(self._L.sum(axis=1), axis=0)

    @property
    def lab_base_rates(self) -> pd.Series:
        """Class shares in the lab set."""
        n = self._L.sum(axis=1)
        return pd.Series(n / n.sum(), index=pd.Index(self.classes, name="class"),
                         name="lab base rate")

    @property
    def n_lab(self) -> int:
        """Number of lab items."""
        return self._n_lab

    def assign(self, pred):
        """Cell (0-based) of each prediction in ``pred``.

        Returns
        -------
        numpy.ndarray or pandas.Series
            A Series with ``pred``'s index when ``pred`` is a pandas object.
        """
        check_rowwise(pred, "pred")
        _, arr = self._pred_input(pred, "pred")
        cells = self.partition.assign(arr)
        if isinstance(pred, (pd.Series, pd.DataFrame)):
            return pd.Series(cells, index=pred.index, name="cell")
        return cells

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, field_pred, groups=None, *, likelihood: str = "joint",
            prior_strength: float = 0.0, lab_pseudocount: float | str = DEFAULT_LAB_PSEUDOCOUNT,
            lab_prior: str = DEFAULT_LAB_PRIOR, maxiter: int = 5000, tol: float = 1e-10,
            missing: str | None = None, penalty=None, random_starts: int = 0,
            seed: int = 0) -> URCResults:
        """Estimate the field base rates (Definition 8), per group when ``groups`` is given.

        Parameters
        ----------
        field_pred : array_like, pandas.Series or pandas.DataFrame
            Predictions on the field data, in the same form as ``lab_pred``. A DataFrame's
            columns are matched to the classes by name when ``lab_pred`` named them (see
            :class:`URC`). A binary model's vector is ``P(second class)``; where ``lab_pred``
            named the classes 1 and 0 in that order (so ``P(Y = 1)`` would be the first) a
            vector is refused as ambiguous: give a DataFrame, or a Series named by its class.
        groups : array_like or pandas.Series, optional
            A subpopulation label per field item (local URC, Algorithm 1 of the paper).
            **Alignment**: when ``field_pred`` and ``groups`` are pandas objects their rows are
            matched on the index (the same labels, each once; otherwise a ``ValueError``), never
            by position; an array or list is matched by position and must have the same length.
        likelihood : {"joint", "fixed"}
            ``"joint"`` (default): lab and field histograms in one likelihood with ``M_A`` free,
            so intervals and tests carry the lab set's uncertainty. ``"fixed"`` (alias
            ``"paper"``): ``M_A`` fixed at its lab estimate (eq. (13)); valid only where the
            lab set is much larger than the field: an
            :class:`~puinfer.exceptions.AssumptionWarning` says when the lab set's sampling
            error would widen the base rates' standard errors by more than 10% (their
            two-step, Murphy-Topel, variance). Under either, a random
            lab design (:class:`URC`'s ``lab_design``) adds the multinomial of the lab class
            counts, ``sum_i n_i log pi_lab[i]``, with ``pi_lab`` free: for the fixed likelihood
            too the lab class counts are data on the lab population's base rates, and
            ``M_A``'s lab estimate, conditional on them, does not depend on ``pi_lab``.
        prior_strength : float
            Strength ``s >= 0`` (in pseudo-observations per group) of a Dirichlet prior
            ``Dir(1 + s pi_lab)`` on each group's base rates, centred (its mode) at the lab base
            rates ``pi_lab``: the regulariser of Remark 11 in clean form (its log density is
            ``-s KL(pi_lab || p)`` up to a constant). ``0`` gives maximum likelihood; ``s > 0``
            the MAP estimate (Theorem 10, part 3). The prior is centred at the lab *sample*'s
            class shares under either lab design: a fixed, data-derived centre, not
            re-estimated with the field data.
        lab_pseudocount : float or "perks"
            Joint likelihood: pseudo-counts ``c >= 0`` per (class, cell) of the lab histogram
            on average, ``c |A|`` per class, added in the lab term,
            ``sum_{i,a} (L[i,a] + C[i,a]) log M[i,a]`` (``lab_prior`` says how they are
            spread). ``"perks"`` (default): ``c = 1/|A|``, one pseudo-item per class whatever
            the number of cells (Perks' prior ``Dir(1/|A|)`` of each row of ``M_A``, with the
            default ``lab_prior="uniform"``). They keep ``M_A`` off the boundary of its simplex
            (no structural zeros from empty lab cells) and make the profile likelihood less
            peaked where the lab cells are sparse: with ``c = 0`` (maximum likelihood) the
            profile statistic runs above chi-square(1) with three classes and 100-300 lab
            items. Under a shift pseudo-counts bias the estimates away from the lab base rates
            (the classes' lab histograms look less separated), the more so the more
            pseudo-items per class. The default was chosen by a declared study
            (``studies/urc_pc_default.py``, session 71: two and three classes, lab n 100 and
            300, random and stratified, no shift and shifts up to lab (0.5, 0.3, 0.2) against
            field (0.2, 0.3, 0.5), 1000 replicates per cell, the same data for every
            candidate): the smallest largest shortfall of the 95% profile intervals' coverage
            below 0.95 (Perks 0.938 at worst; ``c = 1/2`` uniform 0.941; ``c = 1/2`` pooled,
            the default before, 0.925; maximum likelihood 0.933), and among those within 0.005
            the lower RMSE; ``test_no_shift(value=truth)`` rejected 3.7-5.9% at 5%. In the
            large-shift cell with 300 lab items the bias was 0.16 and 0.12 SD for the outer
            classes (the pooled ``c = 1/2``: 0.56 and 0.41 SD). Those runs cut the cells at
            the lab order statistics; with today's midpoint cuts (session 72,
            ``studies/urc_midpoint_cuts.py``, the default on the same 9,000 data sets) the
            worst coverage is 0.939, the test's size 3.7-5.8%, the large-shift bias 0.12 and
            0.07 SD, and the binary shift cell's 0.20 SD (was 0.09); all five candidates
            re-run so (session 73, ``studies/urc_pc_default_newcuts.py``), the rule still
            chooses Perks, tied with ``c = 1/2`` uniform (worst 0.944) at exactly the 0.005
            bound, by the lower RMSE. ``c = 0`` gives maximum
            likelihood. Estimates, profiles and tests all use the penalised objective (as
            profile penalised likelihood intervals do for Firth's logistic regression);
            ``llf`` is the unpenalised log-likelihood at the estimate. Not used by the fixed
            likelihood (``M_A`` is then the lab estimate of eq. (9)). The lab class counts of
            a random lab design are the raw counts. (``RegressionURC.fit`` defaults to 0.)
        lab_prior : {"pooled", "uniform"}
            How the pseudo-counts are spread over a class's cells. ``"uniform"`` (default):
            ``c`` in every cell (at ``c = 1/2`` the Jeffreys prior of each row, Firth's
            penalty; at ``c = 1/|A|``, ``lab_pseudocount="perks"``, Perks' prior).
            ``"pooled"``: in proportion to the pooled lab histogram ``h`` (``C[i, a] = c |A|
            h[a]``), so each class's histogram is shrunk towards the lab marginal, a classifier
            whose output does not depend on the class (the pseudo-Bayes estimator of Bishop,
            Fienberg and Holland, 1975, ch. 12); with ``c = 1/2`` the default from issue 14's
            fourth round until session 71. With quantile cells of a binary score the pooled
            lab histogram is uniform and the two agree.
        maxiter, tol : int, float
            EM iterations (SQUAREM cycles) and the convergence tolerance on the largest
            parameter change.
        missing : {"raise", "drop"}, optional
            Field rows with a missing prediction or group: refused or dropped; the number
            dropped is the results' ``n_dropped`` and is shown by ``summary()``. Default: the
            model's ``missing`` (``"raise"`` unless the constructor was given ``"drop"``).
        penalty : object, optional
            An additive log-penalty on the base rates, added to the objective that the fit,
            the profiles and the tests maximise (see ``_likelihood.Data.penalty``; used by
            :class:`~puinfer.models.urc.regression.RegressionURC` for its smoothness penalty).
        random_starts : int, default 0
            Further starts of the joint likelihood, each row of ``M_A`` and one row of base
            rates drawn uniformly on their simplices (with ``seed``), on top of the fixed
            starts; the highest maximum is kept. With a small lab set the joint likelihood can
            have several local maxima that the fixed starts miss (session 86's audit: 36 lab
            items, 4 cells and 10 groups, base rates averaging 0.21 at the maximum found and
            0.43 at the global one, which 5 random starts reached). Where the profile of an
            interval rises above the fit, :meth:`URCResults.conf_int` raises ``ProfileError``
            and asks for a refit with more starts. The restricted fits of the tests use them
            too (the per-group fits of the tests, one per group: their cost grows with the
            number of groups). At most 10,000. Not used by the fixed likelihood (concave: one
            maximum).
        seed : int, default 0
            Seed of the random starts.

        Returns
        -------
        URCResults

        Raises
        ------
        ValueError
            For inputs that cannot be aligned, predictions outside [0, 1], missing values (with
            ``missing="raise"``), a shape or column names unlike the lab's, an unknown
            likelihood, a negative ``prior_strength`` or ``lab_pseudocount``, an unknown
            ``lab_prior``, or bad ``maxiter``/``tol``/``random_starts``/``seed``.

        Warns
        -----
        ConvergenceWarning
            When the optimiser did not converge.
        BoundaryWarning
            When a base rate is estimated at 0 or 1.
        StartsDisagreeWarning
            When the starts reached another local maximum of the joint likelihood within 2
            log-likelihood units of the fit with a base rate more than 0.05 away (the starts
            may then have missed a higher one: ``random_starts``).
        GroupingWarning
            Binary, under the joint likelihood (without ``prior_strength``) with several
            groups, when the groups' size-weighted mean base rate lies more than
            :data:`POOLED_DRIFT_SE` standard errors from the one-group fit of the pooled field
            rows (which costs one more fit): with many small groups and a small lab set the
            shared ``M_A`` follows the groups' sampling scatter (see the URC guide, "Many
            small groups").

        Notes
        -----
        The fit works on the ``k x |A|`` lab and ``G x |A|`` field histograms only (binning is
        ``np.searchsorted`` + ``np.bincount``): EM accelerated by SQUAREM, finished by Newton's
        method on the active face of the simplices (see ``puinfer.models.urc._likelihood``).
        The joint likelihood can have several local maxima with a small lab set; the fit starts
        from several points and keeps the highest maximum. Intervals, profiles and the
        restricted fits of the tests are computed when first asked for, and cached in the
        (immutable) results.
        """
        if isinstance(likelihood, str) and likelihood == "paper":
            likelihood = "fixed"
        if not isinstance(likelihood, str) or likelihood not in ("joint", "fixed"):
            raise ValueError(f"likelihood must be 'joint' or 'fixed' (alias 'paper'); got "
                             f"{likelihood!r}")
        try:
            s = np.nan if isinstance(prior_strength, (str, bool)) else float(prior_strength)
        except (TypeError, ValueError):
            s = np.nan
        if not (np.isfinite(s) and s >= 0):
            raise ValueError(f"prior_strength must be a non-negative number; got {prior_strength!r}")
        if isinstance(lab_pseudocount, str):
            # (a number written as text, "0.25", is refused as elsewhere in the package)
            c = 1.0 / self._L.shape[1] if lab_pseudocount == PERKS else np.nan
        else:
            try:
                c = float(lab_pseudocount)
            except (TypeError, ValueError):
                c = np.nan
        if isinstance(lab_pseudocount, bool) or not (np.isfinite(c) and c >= 0):
            raise ValueError(f"lab_pseudocount must be a non-negative number or 'perks'; got "
                             f"{lab_pseudocount!r}")
        if not isinstance(lab_prior, str) or lab_prior not in LAB_PRIORS:
            raise ValueError(f"lab_prior must be one of {LAB_PRIORS}; got {lab_prior!r}")
        if isinstance(maxiter, bool) or not isinstance(maxiter, (int, np.integer)) or maxiter < 1:
            raise ValueError(f"maxiter must be a positive integer; got {maxiter!r}")
        try:
            # (text and bools refused, as for prior_strength: tol="1e-6" and tol=True were
            # taken as numbers)
            tol = unwrap_0d(tol)  # (np.array("1e-6") is text)
            tol_ok = not isinstance(tol, (bool, np.bool_, str, bytes)) and float(tol) > 0 \
                and np.isfinite(float(tol))
        except (TypeError, ValueError):
            tol_ok = False
        if not tol_ok:
            raise ValueError(f"tol must be a positive number; got {tol!r}")
        missing = check_missing_option(model_missing(self) if missing is None else missing)
        if getattr(groups, "ndim", None) == 2 and len(getattr(groups, "columns", ())) == 1:
            # a one-column frame (pandas or Dask) is its column: its categories are then read
            # alike in memory and on Dask (session 68's audit: on Dask a categorical column's
            # unused categories went unreported and its order was lost)
            groups = groups[groups.columns[0]]
        F, naive, gindex, n_dropped = field_histogram(self, field_pred, groups, missing)
        L = self._L
        d = lik.Data(L, F, L.sum(axis=1) / L.sum(), likelihood == "joint", s,
                     random_lab=self.lab_design == "random",
                     lab_pseudocount=c if likelihood == "joint" else 0.0, lab_prior=lab_prior)
        if penalty is not None:
            missing_api = [a for a in ("value", "grad_hess", "mstep")
                           if not callable(getattr(penalty, a, None))]
            if missing_api:
                # (session 68's audit: penalty=0.1, as DETM's, failed inside the likelihood)
                raise TypeError(f"penalty must be a penalty object with methods value, "
                                f"grad_hess and mstep (see _likelihood.Data.penalty); got "
                                f"{penalty!r}, without {missing_api}")
            d = dataclasses.replace(d, penalty=penalty)
        options = lik.FitOptions(maxiter=int(maxiter), tol=float(tol),
                                 random_starts=_check_random_starts(random_starts),
                                 seed=check_int(seed, "seed", minimum=0))
        est = self._maximize(d, options)
        record = list(self.warnings)
        cats = getattr(getattr(groups, "dtype", None), "categories", None)
        if not getattr(getattr(groups, "cat", None), "known", True):
            cats = None  # (a Dask categorical whose categories are not known: nothing to say)
        unused = [] if cats is None else [c for c in cats if c not in set(gindex)]
        if unused:
            # a category without field rows has no base rate to estimate: said, not dropped
            # silently
            shown = ", ".join(map(str, unused[:5])) + (", ..." if len(unused) > 5 else "")
            warn_and_record(record, f"groups: {len(unused)} categories of the categorical groups "
                            f"have no field rows and are not fitted ({shown})",
                            EmptyBinWarning)
        n_g = F.sum(axis=1)
        few = np.flatnonzero(n_g < F.shape[1])
        if few.size:
            # (fitted as any other, but said: session 67's audit found a one-row group fitted
            # silently, its interval [0, 0.99], its cells still counted by gof())
            shown = ", ".join(f"{gindex[g]}: {int(n_g[g])}" for g in few[:5]) + (
                ", ..." if few.size > 5 else "")
            what = (f"groups: {few.size} group(s) have" if len(gindex) > 1 else
                    "field_pred: the field sample has")
            warn_and_record(record, f"{what} fewer field rows than the partition has cells "
                            f"({F.shape[1]}) ({shown}): their base "
                            "rates are barely determined, and the chi-square references of "
                            "gof() and the tests are poor there", EmptyBinWarning)
        self._check_fit(est, gindex, record, options)
        self._check_pooled(d, est, record, options)
        if not d.joint:
            self._check_fixed(d, est, record)
        return URCResults(URCFitRecord(self, d, est, gindex, naive, lik.Constraint(), options,
                                       tuple(record), n_dropped))

    def _check_pooled(self, d: lik.Data, est: lik.Estimate, record: list, options) -> None:
        """Under the joint likelihood with several groups, warn where the groups'
        size-weighted mean base rate lies more than :data:`POOLED_DRIFT_SE` standard errors
        from the one-group fit of the pooled field rows (the same lab set), which estimates
        the same quantity under the model: with many small groups and a small lab set the
        shared ``M_A`` follows the groups' sampling scatter (session 87's study). Only where the
        study calibrated it: binary URC (not RegressionURC, whose intervals are classes), the
        joint likelihood without a prior on the base rates (``prior_strength``: one prior per
        group against one for the pooled rows, which moves the mean by itself) or a penalty."""
        G, k = est.P.shape
        if not (self._pooled_check and d.joint and G >= 2 and k == 2 and d.penalty is None
                and d.strength <= 0):
            return
        pooled = dataclasses.replace(d, F=d.F.sum(axis=0, keepdims=True))
        one = lik.maximize(pooled, lik.Constraint(), options=options)
        cls = [1] if k == 2 else list(range(k))
        cov = lik.base_rate_cov(one, pooled, cls)
        if cov is None or not one.convergence.converged:
            return
        n_g = d.F.sum(axis=1)
        mean = (n_g @ est.P / n_g.sum())[cls]
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (mean - one.P[0, cls]) / np.sqrt(np.diag(cov))
        if not np.any(np.abs(z) > POOLED_DRIFT_SE):
            return
        j = int(np.nanargmax(np.abs(z)))
        warn_and_record(record, f"the {G} groups' size-weighted mean base rate of class "
                        f"{self.classes[cls[j]]} is {mean[j]:.4f}, the pooled field's "
                        f"one-group fit {one.P[0, cls[j]]:.4f} ({z[j]:+.2f} of its standard "
                        "errors), where under the model both estimate the same rate: with "
                        "many small groups and a small lab set the shared M_A follows the "
                        "groups' sampling scatter (in a study of 300 groups of 200 rows at "
                        "equal rates of 0.3, lab 36-100 items, 4 cells: group estimates "
                        "0.05-0.11 too high, 95% intervals covering 0.91-0.93). Compare with "
                        "the fit without groups; more lab items, fewer cells (n_bins=2) or "
                        "pooling groups reduce it. Where the groups' rates truly differ the "
                        "two fits can also differ without a drift", GroupingWarning)

    def _check_fixed(self, d: lik.Data, est: lik.Estimate, record: list) -> None:
        """The fixed likelihood takes ``M_A`` as known: warn where the lab set's sampling error
        would widen the base rates' standard errors by more than ``lik.FIXED_SE_RATIO``."""
        k = self.n_classes
        idx = [g * k + j for g in range(d.F.shape[0]) for j in ([1] if k == 2 else range(k))]
        ratio = lik.lab_error_se_ratio(d, est, idx)
        if ratio > lik.FIXED_SE_RATIO:
            warn_and_record(record, f"likelihood='fixed' takes M_A as known, but the lab set "
                            f"({int(d.L.sum())} items) is not large against the field: its "
                            f"sampling error would widen the base rates' standard errors by "
                            f"up to {ratio:.2f}x, so this fit's intervals are too narrow and "
                            "its tests (gof, test_no_shift, ...) reject too often; "
                            "likelihood='joint' (the default) counts it", AssumptionWarning)

    def _maximize(self, d: lik.Data, options: lik.FitOptions) -> lik.Estimate:
        """The unrestricted maximum of the fit's objective (a hook: RegressionURC also looks
        at the corners its smoothness penalty leaves free)."""
        return lik.maximize(d, lik.Constraint(), options=options)

    def _fit_constrained(self, record: URCFitRecord, con: lik.Constraint) -> URCResults:
        """The fit of ``record``'s data under the constraint ``con`` (the null of a test),
        started from the free estimate; called by the results when a test first needs it.
        ``"pooled"`` (random lab design: every group's base rates = the lab population's) ties
        the lab class counts to the base rates (``Data.pooled``)."""
        d = dataclasses.replace(record.data, pooled=con.kind == "pooled")
        est = lik.maximize(d, con, start=(record.estimate.P, record.estimate.M),
                           options=record.options)
        return URCResults(dataclasses.replace(record, data=d, estimate=est, constraint=con,
                                              warnings=tuple(self.warnings)))

    def _check_fit(self, est, gindex, record, options=None):
        """Warn about non-convergence, base rates on the boundary and a second maximum of the
        joint likelihood nearly as high (``options``: the fit's, for its random starts)."""
        if not est.convergence.converged:
            warn_and_record(record, f"URC did not converge: {est.convergence.message}",
                            ConvergenceWarning)
        at_b = (est.P < lik.BOUNDARY) | (est.P > 1 - lik.BOUNDARY)
        if np.any(at_b):
            gi, ci = np.nonzero(at_b)
            which = ", ".join(f"{gindex[g]}/{self.classes[c]}"
                              for g, c in zip(gi[:4], ci[:4], strict=True))
            warn_and_record(record, f"base rate(s) at the boundary 0 or 1 (group/class: "
                            f"{which}): profile intervals are one-sided there and the chi-square "
                            "approximations of the tests are unreliable", BoundaryWarning)
        # another local maximum the starts reached, nearly as high and elsewhere (DETM's
        # rule: within 2 log-likelihood units, a rate 0.05 away): the joint likelihood is
        # multimodal here, and its starts may have missed a higher maximum (session 86's
        # audit: one 0.26 below the fit, and the global maximum 0.055 above it, its base
        # rates averaging 0.43 against the fit's 0.21)
        near = [e for e in est.others if est.objective - e.objective < 2.0
                and float(np.max(np.abs(e.P - est.P))) > 0.05]
        if near:
            e = near[0]
            diff = np.abs(e.P - est.P)
            if diff.shape[1] == 2:
                diff[:, 0] = -1.0  # (binary: the rate of the second class, as base_rate)
            g, c = np.unravel_index(np.argmax(diff), diff.shape)
            n_random = getattr(options, "random_starts", 0)
            warn_and_record(record, f"starts disagree: a local maximum of the joint likelihood "
                            f"{est.objective - e.objective:.3f} log-likelihood units below the "
                            f"fit has the base rate of {gindex[g]}/{self.classes[c]} at "
                            f"{e.P[g, c]:.4f} (fit: {est.P[g, c]:.4f}); with a small lab set "
                            "the joint likelihood can have several maxima and the starts can "
                            "miss the highest: refit with random_starts (e.g. "
                            f"{lik.more_random_starts(options)}; this fit used {n_random}) to search "
                            "further", StartsDisagreeWarning)

    def __repr__(self):
        return (f"<URC: {self.n_classes} classes, |A| = {self.partition.n_cells} cells, "
                f"{self.n_lab} lab items ({self.lab_design})>")
