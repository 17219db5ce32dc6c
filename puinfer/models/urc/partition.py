"""The partition of the prediction space into cells (eq. (11) of Ziegler and Czyż).

A :class:`Partition` is built once from the lab predictions by :func:`build_partition`; it
assigns any prediction to a cell by ``np.searchsorted``, so binning costs ``O(n log |A|)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._validation import warn_and_record
from ...base.results import ReadOnlyArrays, readonly
from ...exceptions import EmptyBinWarning

__all__ = ["Partition", "build_partition"]


@dataclass(frozen=True)
class Partition(ReadOnlyArrays):
    """A partition of the prediction space into cells, built from the lab predictions.

    Binary (``kind="quantile"``): ``n_bins`` intervals of equal lab probability (eq. (11) of
    Ziegler and Czyż, "Unsupervised Recalibration"): a prediction ``c`` is in interval ``a``
    (1-based) when ``(a - 1)/m < F_lab(c) <= a/m``, ``F_lab`` being the empirical CDF of the
    lab predictions (for the lab predictions); ``a - 1 = #{j : c >= t_j}`` with cut points
    ``t_j`` halfway between ``c_(r)`` and ``c_(r + 1)``, ``r = floor(j n / m)`` (so a new
    prediction between two lab order statistics is put in the nearer cell, the same under a
    relabelling ``c -> 1 - c``).

    Multiclass (``kind="argmax-quantile"``): the predicted class (arg max) crossed with
    ``n_bins`` intervals of equal lab probability of that class's predicted probability among
    the lab items predicted as that class: ``k * n_bins`` raw cells.

    Raw cells that hold no lab item are merged into the nearest non-empty cell (by index), with
    an :class:`~puinfer.exceptions.EmptyBinWarning`.

    Attributes
    ----------
    kind : str
        ``"quantile"`` (binary) or ``"argmax-quantile"`` (multiclass).
    n_bins : int
        Intervals per predicted class.
    edges : tuple of numpy.ndarray
        Cut points (one array per predicted class for the multiclass scheme).
    cell_of_raw : numpy.ndarray
        Map from raw bin to cell.
    labels : tuple of str
        A label per cell.
    """

    kind: str
    n_bins: int
    edges: tuple
    cell_of_raw: np.ndarray
    labels: tuple
    #: multiclass: the classes' positions in the order that breaks ties of the top
    #: probability (their names' text order: the first of the tied classes in it); None: the
    #: class order itself (numpy's argmax; partitions pickled before session 85)
    tie_order: tuple | None = None

    def __post_init__(self):  # read-only: the fitted models and their results share it
        object.__setattr__(self, "edges", tuple(readonly(e) for e in self.edges))
        object.__setattr__(self, "cell_of_raw", readonly(self.cell_of_raw))
        object.__setattr__(self, "labels", tuple(self.labels))

    @property
    def n_cells(self) -> int:
        """Number of cells ``|A|``."""
        return len(self.labels)

    def raw_bins(self, pred: np.ndarray) -> np.ndarray:
        """Raw bin of each prediction (validated array: vector for binary, (n, k) matrix)."""
        if self.kind == "quantile":
            return np.searchsorted(self.edges[0], pred, side="right")
        am = _top_class(pred, self.tie_order)
        top = np.take_along_axis(pred, am[:, None], axis=1)[:, 0]
        raw = am * self.n_bins
        for j, e in enumerate(self.edges):
            mask = am == j
            raw[mask] += np.searchsorted(e, top[mask], side="right")
        return raw

    def assign(self, pred: np.ndarray) -> np.ndarray:
        """Cell index (0-based) of each prediction."""
        return self.cell_of_raw[self.raw_bins(pred)]


def _top_class(pred: np.ndarray, tie_order) -> np.ndarray:
    """The predicted class (arg max) of each row, ties going to the first of the tied classes
    in ``tie_order`` (positions; None: the class order). With the classes' text order, a tied
    row's cell does not depend on the order of the lab frame's columns (session 85's audit:
    probabilities in tenths, 4.5% of rows tied, base rates 0.012 apart between the column
    orders a, b, c and c, b, a)."""
    if tie_order is None:
        return np.argmax(pred, axis=1)
    order = np.asarray(tie_order)
    return order[np.argmax(pred[:, order], axis=1)]


def _tie_order(class_names):
    """:attr:`Partition.tie_order` for the classes ``class_names`` (None where their text order
    is their order)."""
    if class_names is None:
        return None
    order = sorted(range(len(class_names)), key=lambda j: str(class_names[j]))
    return None if order == list(range(len(class_names))) else tuple(order)


def _quantile_edges(sorted_vals: np.ndarray, m: int) -> np.ndarray:
    """Cut points of ``m`` cells of equal lab probability: halfway between the lab order
    statistic ``c_(r + 1)``, ``r = floor(j n / m)``, and the largest lab value below it
    (``c_(r)`` where the two differ; ``c_(r + 1)`` itself where no lab value lies below it or
    the two are adjacent floats), so the lab rows fall in the cells of eq. (11), a prediction
    between the two is split at the middle, and a lab set with its rows replicated has the
    same cuts. The cut at ``c_(r + 1)`` itself (the
    empirical CDF's convention) put every prediction in that gap into the lower cell: the
    lowest cell's population share is then ``1 / (n + 1)`` above the lab count's, which biased
    the base rates towards the class of low predictions (binary URC at lab 60: 0.480 for 0.5,
    the relabelled fit 0.512; session 72's audit), and RegressionURC's shares of the outcome
    intervals towards the low intervals (reflecting the outcome moved them by up to 0.014)."""
    n = sorted_vals.size
    if n == 0:
        return np.full(m - 1, np.inf)
    idx = np.minimum((np.arange(1, m) * n) // m, n - 1)
    hi = sorted_vals[idx]
    # the largest lab value below c_(r + 1): c_(r) itself without ties; with c_(r) tied to
    # c_(r + 1) the cut fell on c_(r + 1) itself (the rule session 72 replaced), so a lab set
    # with every row given twice cut the field differently (URC's base rate 0.464 -> 0.451;
    # session 85's audit). Where no lab value lies below, the cut is c_(r + 1).
    below = np.searchsorted(sorted_vals, hi, side="left") - 1
    lo = sorted_vals[np.maximum(below, 0)]
    with np.errstate(invalid="ignore", over="ignore"):
        mid = lo + (hi - lo) / 2.0
    # (the midpoint must lie above the lower value, else it would move to the upper cell)
    return np.where((below >= 0) & (mid > lo) & np.isfinite(mid), mid, hi)


def _raw_partition(pred: np.ndarray, k: int, n_bins: int, binary: bool,
                   class_names=None, ties_by_name: bool = True) -> Partition:
    """The partition before merging empty bins (multiclass cells labelled by
    ``class_names``, else by the classes' positions; ties of the top probability broken in
    the names' text order where ``ties_by_name``, else in the class order)."""
    tie_order = None
    if binary:
        edges = (_quantile_edges(np.sort(pred), n_bins),)
        kind = "quantile"
        bounds = np.concatenate([[0.0], edges[0], [1.0]])
        raw_labels = [f"[{bounds[a]:.4g}, {bounds[a + 1]:.4g}" + ("]" if a == n_bins - 1 else ")")
                      for a in range(n_bins)]
    else:
        tie_order = _tie_order(class_names) if ties_by_name else None
        am = _top_class(pred, tie_order)
        top = np.take_along_axis(pred, am[:, None], axis=1)[:, 0]
        edges = tuple(_quantile_edges(np.sort(top[am == j]), n_bins) for j in range(k))
        kind = "argmax-quantile"
        raw_labels = []
        for j in range(k):
            b = np.concatenate([[0.0], edges[j], [1.0]])
            name = j if class_names is None else class_names[j]
            if not np.any(am == j):  # (no lab item has it: its bins are merged away)
                raw_labels += [f"argmax={name} (no lab item)"] * n_bins
                continue
            for a in range(n_bins):
                raw_labels.append(f"argmax={name}, [{b[a]:.3g}, {b[a + 1]:.3g}"
                                  + ("]" if a == n_bins - 1 else ")"))
    return Partition(kind, n_bins, edges, np.arange(len(raw_labels)), tuple(raw_labels),
                     tie_order)


def build_partition(pred: np.ndarray, k: int, n_bins: int, binary: bool,
                    record: list, class_names=None, ties_by_name: bool = True) -> Partition:
    """Build the partition from the (validated) lab predictions.

    Parameters
    ----------
    pred : numpy.ndarray
        Lab predictions: a vector of ``P(Y = 1)`` (binary) or an ``(n, k)`` matrix.
    k : int
        Number of classes.
    n_bins : int
        Intervals of equal lab probability (per predicted class for multiclass).
    binary : bool
    record : list
        Receives ``(category, message)`` of an :class:`EmptyBinWarning` (also issued).
    class_names : sequence, optional
        The classes, in order, for the multiclass cells' labels (``argmax=<class>``).
    ties_by_name : bool
        Break ties of the top probability in the text order of ``class_names`` (names the
        user gave the classes: the cells then do not depend on the order of the lab frame's
        columns), else in the class order (classes with an order of their own, e.g.
        RegressionURC's outcome intervals).

    Returns
    -------
    Partition
    """
    part = _raw_partition(pred, k, n_bins, binary, class_names, ties_by_name)
    raw_labels = part.labels
    n_raw = len(raw_labels)
    lab_tot = np.bincount(part.raw_bins(pred), minlength=n_raw)
    nonempty = np.flatnonzero(lab_tot > 0)
    if nonempty.size == n_raw:
        return part
    empty = np.flatnonzero(lab_tot == 0)
    # nearest non-empty raw bin (ties: the lower one)
    pos = np.searchsorted(nonempty, empty)
    lo = nonempty[np.clip(pos - 1, 0, nonempty.size - 1)]
    hi = nonempty[np.clip(pos, 0, nonempty.size - 1)]
    target = np.where(np.abs(empty - lo) <= np.abs(hi - empty), lo, hi)
    full = np.arange(n_raw)
    full[empty] = target
    cell_of_raw = np.searchsorted(nonempty, full)
    labels = tuple(" + ".join(dict.fromkeys(raw_labels[r] for r in np.flatnonzero(full == ne)))
                   for ne in nonempty)
    warn_and_record(record, f"{empty.size} of {n_raw} bins hold no lab predictions (ties or "
                    "an empty predicted class); they were merged into their nearest "
                    f"neighbours, leaving |A| = {nonempty.size} cells", EmptyBinWarning)
    return Partition(part.kind, n_bins, part.edges, cell_of_raw, labels, part.tie_order)
