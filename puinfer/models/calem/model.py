"""The CalEM model: validated data and options; :meth:`CalEM.fit` does the estimation."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from scipy import stats

from ..._align import align_rows, check_missing_option, drop_missing
from ..._dask import any_dask
from ..._validation import as_float_vector, check_binary, check_real, warn_and_record
from ...base.model import Model
from ...base.results import freeze_arrays
from ...exceptions import AssumptionWarning, ClippingWarning
from ...formula import Design, _used_columns
from ._engine import fit_calem, setup
from .calibrators import (
    Calibrator,
    FormulaCalibrator,
    edge_bounds,
    edge_scores_moved,
    inner_extremes,
    make_calibrator,
    near_edge_count,
    near_edge_message,
)

_TREATED = "(treated)"  # column under which from_formula carries a treated vector

__all__ = ["CalEM"]


#: the check of Assumption 1 warns below this one-sided p-value and refuses the data below
#: the next (the treated rows then most likely are the control rows: 'treated' reversed)
ASSUMPTION1_WARN, ASSUMPTION1_REFUSE = 0.05, 1e-4

#: edges of the fine bins of logit(score) that the check of Assumption 1 counts rows in (the
#: same on both paths: the treated rows of Dask collections are counted in the validation pass)
_CHECK_EDGES = np.linspace(-15.0, 15.0, 301)


def _checked_eps(eps) -> float:
    """CalEM's ``eps``, checked: one number in (0, 0.5)."""
    # (one number: a one-element array failed in float() and a longer one in the comparison,
    # with numpy's messages; session 85's audit)
    eps = check_real(eps, "eps", what="a number in (0, 0.5)")
    if not 0 < eps < 0.5:
        raise ValueError(f"eps must be in (0, 0.5); got {eps}")
    return eps


def edge_message(n: int, bounds: tuple) -> str:
    """The warning for ``n`` scores of exactly 0 or 1 read at ``bounds``."""
    return (f"{n} score(s) equal to 0 or 1 were clipped to [{bounds[0]:g}, "
            f"1 - {1.0 - bounds[1]:g}]")


def score_histogram(s, lab) -> np.ndarray:
    """Rows and positive labels per fine bin of ``logit(s)`` (:data:`_CHECK_EDGES`, equally
    spaced: the bin by arithmetic, 4x faster than a search at 1e6 rows; the outer bins
    open-ended): a ``(2, 302)`` array that adds over row blocks."""
    lo, k = _CHECK_EDGES[0], _CHECK_EDGES.size + 1
    with np.errstate(divide="ignore"):
        x = np.log(s)
        x -= np.log1p(-s)
    x -= lo
    x *= 1.0 / (_CHECK_EDGES[1] - lo)
    np.clip(x, -1.0, k - 2.0, out=x)
    b = np.floor(x, out=x).astype(np.intp)
    b += 1
    return np.stack([np.bincount(b, minlength=k),
                     np.bincount(b, weights=np.asarray(lab, dtype=float), minlength=k)])


def assumption1_test(hist_c, hist_t) -> tuple[float, float]:
    """Cochran-Mantel-Haenszel test that the treated rows' positive rate is *below* the
    control rows' at equal scores: ``(z, one-sided p)``.

    The strata are the fine bins of :func:`score_histogram` (0.1 wide in ``logit(score)``)
    that hold rows of both groups: within each, under equal rates, the treated positives ``a``
    are hypergeometric with mean ``n_t m / N`` and variance
    ``n_t n_c m (N - m) / (N^2 (N - 1))`` (``m`` positives of ``N`` rows), and ``z`` is
    ``sum(a - E a) / sqrt(sum Var a)``, referred to the normal (small p: treated below). The
    test is built for many sparse strata; strata this narrow hold the score nearly fixed, so
    groups whose scores are distributed differently are compared fairly. Without bias the
    share of p < 0.05 was 2.7-5.7% in each of six designs (300 replicates each, session 60:
    equal score distributions; control Beta(2, 2) against treated Beta(1, 4); Beta(8, 2)
    against Beta(1, 8), where strata of 40 control quantiles gave 81%; Beta(4, 2) against
    Beta(1, 4); rare positives; a control set of 40 rows), its power against
    ``P(Z = 1 | s) = 0.85 s`` 0.98 (500 control, 3000 treated rows).
    """
    n_c, y_c = hist_c
    n_t, a = hist_t
    N, m = n_c + n_t, y_c + a
    ok = (N > 1) & (n_c > 0) & (n_t > 0)
    N, m, n_c, n_t, a = N[ok], m[ok], n_c[ok], n_t[ok], a[ok]
    var = np.sum(n_t * n_c * m * (N - m) / (N ** 2 * (N - 1)))
    if not var > 0:
        return float("nan"), float("nan")
    z = float(np.sum(a - n_t * m / N) / np.sqrt(var))
    return z, float(stats.norm.cdf(z))


def _formula_score(formula: str, data: pd.DataFrame):
    """The score column of ``formula``'s right-hand side where it names exactly one column of
    ``data`` (as :meth:`CalEM._from_design` infers it), else None."""
    rhs = formula.split("~", 1)[1] if "~" in formula else formula
    cols = _used_columns(rhs, data)
    return cols[0] if len(cols) == 1 else None


def _refuse_missing_with_treated(formula: str, data: pd.DataFrame, treated: str) -> None:
    """``ValueError`` naming every column with missing values where both the formula's
    columns and ``treated`` (a column of ``data``, or the values given, carried as a column)
    have some (one of them alone is refused, named, by the formula's check or by the
    constructor)."""
    if not data.columns.is_unique:  # (refused, named, by the formula's check)
        return
    used = list(dict.fromkeys([*_used_columns(formula, data), treated]))
    n_miss = data[used].isna().sum()
    bad = [c for c in used if n_miss[c]]
    if treated not in bad or len(bad) < 2:
        return
    names = [("treated" if c == _TREATED else c) for c in bad]
    raise ValueError(f"data: missing values in column(s) {names} "
                     f"({[int(n_miss[c]) for c in bad]} row(s)); rows are never dropped "
                     "silently: fill them, or pass missing='drop' to drop those rows")


def _is_scalar(v) -> bool:
    return v is None or isinstance(v, (str, bytes)) or np.isscalar(v) or \
        (isinstance(v, np.ndarray) and v.ndim == 0)


def checked_columns(args: dict, where: str = "") -> tuple:
    """``(score, label, treated)`` of aligned rows as arrays (float, 0/1, bool), validated:
    equal lengths, binary labels and treatment, scores in [0, 1]. ``where`` ends the length
    message (e.g. ``" in a partition"``)."""
    s = as_float_vector(args["score"], "score")
    lab = check_binary(args["label"], "label")
    tr = check_binary(args["treated"], "treated").astype(bool)
    if not (s.size == lab.size == tr.size):
        raise ValueError(f"score, label and treated must have the same length; got "
                         f"{s.size}, {lab.size} and {tr.size}{where}")
    bad = (s < 0) | (s > 1)
    if bad.any():
        raise ValueError(f"score must be in [0, 1]; {int(bad.sum())} value(s) are not "
                         f"(e.g. {s[bad][:3].tolist()})")
    return s, lab, tr


def formula_score(rhs: str, data: pd.DataFrame, score=None, exclude=()) -> str:
    """The score column of a formula calibrator's right-hand side ``rhs`` on ``data`` (a
    frame, or a Dask frame's ``_meta``): the one column it uses, which ``score``, if given,
    must be (``exclude``: columns not counted, e.g. the label)."""
    used = [c for c in _used_columns(rhs, data) if c not in exclude]
    if score is None:
        if len(used) != 1:
            raise ValueError(f"formula: cannot tell which column is the score (found "
                             f"{used}); pass score='column'")
        return used[0]
    if score not in data.columns:
        raise ValueError(f"score column {score!r} is not in data")
    if used != [score]:
        # (the calibrator evaluates the formula on the score alone: session 67's audit,
        # score="score2" with "~ logit(score)" failed at fit() with "name 'score' is not
        # defined")
        raise ValueError(f"score={score!r}: the formula's right-hand side {rhs.strip()!r} "
                         f"uses the column(s) {used}; the calibrator must be a function of the "
                         "score column alone")
    return score


class CalEM(Model):
    """Calibration with a small clean (control) set and a large biased (treated) set.

    A classifier's score ``s`` in (0, 1) is observed on a small **control** set with clean
    labels ``y`` and on a large **treated** set with labels ``z`` that the treatment can only
    turn from 0 into 1 (Assumption 1, eq. (8)): ``P(Y = 0 | Z = 1, x) = h(x)``,
    ``P(Y = 0 | Z = 0, x) = 1``. CalEM (Algorithm 3 of Sergazinov et al.) estimates the clean
    calibration map ``g_theta`` from both sets.

    Parameters
    ----------
    score : array_like or pandas.Series
        Classifier scores in [0, 1] for all rows (control and treated).
    label : array_like or pandas.Series of 0/1
        The clean label ``y`` on control rows, the biased label ``z`` on treated rows.
    treated : array_like or pandas.Series of 0/1 or bool
        1 (True) for treated rows (biased labels), 0 for control rows (clean labels).

        pandas inputs are aligned on their index (never by position) and refused if their
        labels differ; arrays are matched by position. Outputs (e.g. ``predict()``) carry the
        index of the first pandas argument (see :mod:`puinfer._align`).
    calibrator : str or Calibrator, default "spline"
        ``"logistic"`` (Platt), ``"beta"``, ``"spline"`` (natural cubic spline of
        ``logit(score)``), ``"isotonic"``, a right-hand-side formula in ``score`` such as
        ``"~ logit(score)"``, or a :class:`~puinfer.models.calem.Calibrator`.
    eps : float, default 1e-6
        Scores of exactly 0 or 1 are read as ``eps`` and ``1 - eps`` (with a
        :class:`~puinfer.exceptions.ClippingWarning`) because the calibrators work on the
        log-odds of the score; as the smallest score above 0 (largest below 1) where the data
        hold one nearer the edge, so that a 0 is never read above another score. New scores
        (``predict``) are read as ``clip(score, lo, hi)`` with these two values
        (:attr:`edge_bounds`).
    missing : {"raise", "drop"}, default "raise"
        Rows with a missing value in ``score``, ``label`` or ``treated``: ``"raise"`` refuses
        them (naming the argument), ``"drop"`` drops them; the number dropped is
        :attr:`n_dropped` and is shown in the results' ``summary()``.
    **calibrator_options
        Options of a named calibrator, e.g. ``df=6`` or ``lam=1.0`` for ``"spline"``.

    Raises
    ------
    ValueError
        If a score lies outside [0, 1], a label or treatment indicator is not 0/1, the
        lengths differ or pandas indexes do not match, the control or the treated group is
        empty or has no positive labels,
        or the treated rows' labels are clearly positive less often than the control rows'
        at the same scores (a one-sided Cochran-Mantel-Haenszel test over narrow strata of
        the score, p < 1e-4) -- Assumption 1 (treatment only turns negatives into positives) is
        then contradicted by the data (is ``treated`` reversed?). At 1e-4 <= p < 0.05 an
        :class:`~puinfer.exceptions.AssumptionWarning` says the assumption is in doubt.

    Notes
    -----
    The basis of the calibrator (e.g. the spline knots) is learned once from the scores of
    *all* rows, so that the control-only fit, the biased fit ``g_eta`` and the CalEM fit use
    the same family of curves (needed for :meth:`CalEMResults.test_bias`).

    A model pickles; it holds its data and options, never a fit.

    References
    ----------
    Sergazinov, R., Chen, R., Ji, C., Wu, J., Cociorva, D. and Brunzell, H. Improving Model
    Probability Calibration by Integration of Large Data Sources with Biased Labels,
    Algorithm 3 and Appendix A.2.

    Examples
    --------
    >>> import numpy as np, puinfer as pu
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(0.02, 0.98, 3000); treated = rng.random(3000) < 0.8
    >>> y = rng.binomial(1, s); z = np.where(y == 1, 1, rng.binomial(1, 0.2 * s))
    >>> res = pu.CalEM(s, np.where(treated, z, y), treated, calibrator="logistic").fit()
    >>> bool(res.converged)
    True
    """

    _exog_names = ("score",)

    #: rows dropped for missing values (``missing="drop"``); 0 otherwise
    n_dropped: int = 0
    #: the ``missing=`` option
    missing: str = "raise"
    #: the index of the rows (the first pandas argument's, after alignment and drops), or None
    index: pd.Index | None = None
    #: rows given as Dask collections: their in-memory summaries and blocks (see ``._dask``)
    _dask = None
    #: the stratified CMH z of the Assumption-1 check (treated minus control positives at equal
    #: scores; :func:`assumption1_test`), None for models pickled before it was kept
    _cmh_z: float | None = None
    #: ``(lo, hi)``: where scores of exactly 0 and 1 are read (:func:`.calibrators.edge_bounds`:
    #: ``eps`` and ``1 - eps``, or the data's extreme scores inside (0, 1) nearer the edge);
    #: None for models pickled before session 87 (their rule: only 0 and 1 move, to ``eps``
    #: and ``1 - eps``; :meth:`_read_scores`)
    _edge_bounds: tuple | None = None

    @property
    def edge_bounds(self) -> tuple:
        """``(lo, hi)``: CalEM reads every score as ``clip(score, lo, hi)``; on the model's
        rows only scores of exactly 0 and 1 move, to ``lo = min(eps, smallest score above 0)``
        and ``hi = max(1 - eps, largest score below 1)``, so that a 0 is never read above a
        score the data hold."""
        return self._edge_bounds or (self.eps, 1.0 - self.eps)

    def _read_scores(self, s: np.ndarray) -> np.ndarray:
        """New scores as the fit read its own: ``clip(s, *edge_bounds)``; for models pickled
        before session 87, their rule (only the scores 0 and 1 moved, to ``eps``)."""
        return edge_scores_moved(s, self._edge_bounds, self.eps)

    def __init__(self, score, label, treated, *, calibrator="spline", eps: float = 1e-6,
                 missing: str = "raise", **calibrator_options):
        self.missing = check_missing_option(missing)
        if any_dask(score, label, treated):  # rows in Dask collections: see ._dask
            from ._dask import init_dask

            self._set_options(calibrator, eps, calibrator_options)
            init_dask(self, score, label, treated)
            return
        for name, v in (("score", score), ("label", label), ("treated", treated)):
            if _is_scalar(v):
                raise ValueError(f"{name} must hold one value per row; got {v!r}")
        # a named score Series names the score column of later DataFrames (predict)
        self._score_label = score.name if isinstance(score, pd.Series) else None
        args, index = align_rows({"score": score, "label": label, "treated": treated})
        args, index, self.n_dropped = drop_missing(args, index, missing)
        self.index = index
        s, lab, tr = checked_columns(args)
        self._set_options(calibrator, eps, calibrator_options)
        self._edge_bounds = edge_bounds(inner_extremes(s), self.eps)
        near = near_edge_count(s, self.calibrator)  # (the scores as given: not the 0s and 1s)
        n_edge = int(np.count_nonzero((s == 0) | (s == 1)))
        if n_edge:
            warn_and_record(self._init_warnings, edge_message(n_edge, self._edge_bounds),
                            ClippingWarning)
            s = edge_scores_moved(s, self._edge_bounds)
        if near:
            warn_and_record(self._init_warnings, near_edge_message(near, self.calibrator),
                            ClippingWarning)
        self.score, self.label, self.treated = s, lab, tr
        self.n_control, self.n_treated = int((~tr).sum()), int(tr.sum())
        y, z = lab[~tr], lab[tr]
        self._check_groups(y.sum(), z.sum(), score_histogram(s[tr], z))
        self.score_name = "score"
        freeze_arrays(self)  # the results share the model's rows

    def _set_options(self, calibrator, eps, calibrator_options):
        """The calibrator and ``eps``, checked (also for Dask collections)."""
        # a read-only copy: the fits read it, so the caller's spec may change afterwards
        self.calibrator: Calibrator = make_calibrator(calibrator, **calibrator_options)._frozen()
        if getattr(self.calibrator, "prior_correction", False):
            raise ValueError("calibrator: Platt's prior correction (prior_correction=True) is "
                             "not available in CalEM, whose EM maximises the likelihood of the "
                             "labels themselves; use LogisticCalibrator()")
        self.eps = _checked_eps(eps)
        self._init_warnings: list = []

    @property
    def init_warnings(self) -> tuple:
        """The warnings issued when the model was built, each fit's record starts with them (a
        tuple: the list itself was handed out, and an entry appended to it reached every later
        fit's record)."""
        return tuple(self.__dict__.get("_init_warnings", ()))

    @init_warnings.setter
    def init_warnings(self, found) -> None:  # (pickles of earlier versions set it)
        self._init_warnings = list(found)

    def _check_groups(self, pos_c, pos_t, hist_t):
        """Checks of the group sizes, and of Assumption 1 (``hist_t``: the treated rows'
        :func:`score_histogram`; the control rows are in memory on either path)."""
        n_c, n_t = self.n_control, self.n_treated
        if n_c == 0:
            raise ValueError("treated: the control group is empty (no row has treated == 0)")
        if n_t == 0:
            raise ValueError("treated: the treated group is empty (no row has treated == 1)")
        if pos_c == 0 or pos_c == n_c:
            raise ValueError(f"label: the control group has only one class "
                             f"({int(pos_c)} positives of {n_c}); nothing to calibrate")
        if pos_t == 0:
            raise ValueError("label: the treated group has no positive labels")
        s_c, y = self._control_rows()
        self._check_assumption1(score_histogram(s_c, y), hist_t)

    def _control_rows(self):
        """The control rows' scores and labels (in memory on either path)."""
        if self._dask is not None:
            return self._dask.s_c, self._dask.y
        return self.score[~self.treated], self.label[~self.treated]

    def _assumption1_z(self) -> float | None:
        """The stratified CMH z of the Assumption-1 check (:func:`assumption1_test`; positive:
        treated labels positive more often at equal scores). Kept by the constructor; for a
        model pickled before it was kept, recomputed from the model's rows (the control rows
        and the treated rows' histogram are kept on the Dask path too)."""
        z = self.__dict__.get("_cmh_z")
        if z is not None:
            return z
        if self._dask is not None:
            hist_t = getattr(self._dask, "hist_treated", None)
            if hist_t is None:
                return None
        else:
            hist_t = score_histogram(self.score[self.treated], self.label[self.treated])
        return assumption1_test(score_histogram(*self._control_rows()), hist_t)[0]

    def _check_assumption1(self, hist_c, hist_t):
        """One-sided test of Assumption 1 at equal scores: are the treated rows' labels
        positive less often than the control rows' at the same score? Assumption 1 gives
        ``P(Z = 1 | s) >= P(Y = 1 | s)``; a Cochran-Mantel-Haenszel comparison of the two
        groups' positive rates within strata of the score (:func:`assumption1_test`) tests
        its boundary. Comparing the overall shares instead refused valid data whose treated
        rows simply have lower scores."""
        z, p = assumption1_test(hist_c, hist_t)
        # kept: read upwards (treated positives more often), it is the family-free test of no
        # label bias that CalEMResults.test_bias reports beside its likelihood ratio
        self._cmh_z = z
        if not p < ASSUMPTION1_WARN:
            return
        msg = ("the treated rows' labels are positive less often than the control rows' at "
               f"the same scores (stratified z = {z:.2f}); Assumption 1 of CalEM (treatment "
               "only turns negatives into positives, so P(Z = 1 | s) >= P(Y = 1 | s)) ")
        if p < ASSUMPTION1_REFUSE:
            raise ValueError(msg + f"is violated (one-sided p = {p:.2g}). Check that "
                             "'treated' marks the biased-label rows.")
        warn_and_record(self._init_warnings, msg + f"is in doubt (one-sided p = {p:.2g})",
                        AssumptionWarning)

    # -- formula ---------------------------------------------------------------------------------
    @classmethod
    def from_formula(cls, formula: str, data: pd.DataFrame, *, treated, score: str | None = None,
                     eps: float = 1e-6, missing: str = "raise"):
        """Specify CalEM by a formula ``"label ~ <calibration map in the score>"``.

        Parameters
        ----------
        formula : str
            E.g. ``"y ~ logit(score)"`` (Platt), ``"y ~ np.log(score) + np.log1p(-score)"``
            (beta), ``"y ~ 0 + cr(logit(score), df=5)"`` (natural cubic spline). The left-hand
            side is the 0/1 label (clean on control rows, biased on treated rows).
        data : pandas.DataFrame
            The data; not modified.
        treated : str or array_like
            Column name (or values) of the 0/1 treatment indicator. A pandas Series is aligned
            on ``data``'s index (refused if the labels differ); an array is matched by position.
        score : str, optional
            The score column; inferred when the right-hand side names exactly one column.
        eps : float
            Clipping of scores equal to 0 or 1 (see :class:`CalEM`).
        missing : {"raise", "drop"}, default "raise"
            Rows with a missing value in a column the formula uses or in ``treated``:
            ``"raise"`` refuses them (naming every such column), ``"drop"`` drops them and
            records the number in :attr:`n_dropped` (shown in ``summary()``).

        Returns
        -------
        CalEM
            Its calibrator is a :class:`~puinfer.models.calem.FormulaCalibrator` with the
            right-hand side; the formula's basis (e.g. spline knots) is learned from the
            (clipped) scores of all rows when the model is fitted. Outputs carry ``data``'s
            index.
        """
        check_missing_option(missing)
        if any_dask(data):  # a Dask DataFrame: see ._dask
            from ._dask import from_formula_dask

            return from_formula_dask(cls, formula, data, treated=treated, score=score, eps=eps,
                                     missing=missing)
        call = {"data": data, "treated": treated, "score": score, "eps": eps, "missing": missing}
        if isinstance(data, dict):
            data = pd.DataFrame(data)
        if not isinstance(data, pd.DataFrame):
            raise TypeError(f"data must be a pandas DataFrame; got {type(data).__name__}")
        if score is not None and score not in data.columns:
            raise ValueError(f"score column {score!r} is not in data")
        if isinstance(treated, str):
            if treated not in data.columns:
                raise ValueError(f"treated column {treated!r} is not in data")
        else:
            if _is_scalar(treated):
                raise ValueError(f"treated must be a column name or one value per row of data; "
                                 f"got {treated!r}")
            # aligned on data's index (or by position for an array) before any row is dropped,
            # and carried as a column of a copy of data so that dropping keeps it aligned
            tr = align_rows({"data": data, "treated": treated})[0]["treated"]
            data = data.assign(**{_TREATED: np.asarray(tr).ravel()})
            treated = _TREATED
        # the formula's own columns are handled by Model.from_formula; with missing="drop" the
        # rows missing treated (or a score named outside the formula) are dropped here, with
        # missing="raise" the constructor refuses them, naming the argument -- or, where the
        # formula's columns miss values too, one refusal here names them all (session 70's
        # audit: score and treated missing named ['score'] alone)
        if missing == "raise":
            _refuse_missing_with_treated(formula, data, treated)
        n_extra = 0
        if missing == "drop":
            extra = [c for c in dict.fromkeys([treated, score]) if c is not None]
            miss = data[extra].isna().any(axis=1).to_numpy()
            n_extra = int(miss.sum())
            data = data[~miss]
        # scores of exactly 0 or 1 are clipped before the formula sees them (as the
        # constructor clips them): its transforms, e.g. logit(), are infinite there
        name = score if score is not None else _formula_score(formula, data)
        n_edge = 0
        if name is not None and pd.api.types.is_numeric_dtype(data[name]):
            col = data[name]
            # (na_value: a nullable Float64 score's pd.NA is a missing value, handled by
            # ``missing`` below, not a score out of range; to_numpy(dtype=bool) raised on it)
            out = ((col < 0) | (col > 1)).to_numpy(dtype=bool, na_value=False)
            if out.any():
                raise ValueError(f"score column {name!r} must hold scores in [0, 1]; "
                                 f"{int(out.sum())} value(s) are not (e.g. "
                                 f"{col[out].iloc[:3].tolist()})")
            lo = (col == 0).to_numpy(dtype=bool, na_value=False)
            hi = (col == 1).to_numpy(dtype=bool, na_value=False)
            n_edge = int((lo | hi).sum())
            if n_edge:
                # the bounds of the rows the fit keeps (missing="drop" drops rows missing a
                # formula column below: their scores must not place the 0s; review of
                # session 87), as the constructor and the Dask route find them
                used = [c for c in dict.fromkeys([*_used_columns(formula, data), name])
                        if c in data.columns]
                kept = data[used].notna().all(axis=1).to_numpy()
                values = col.to_numpy(dtype=float, na_value=np.nan)[kept]
                bounds = edge_bounds(inner_extremes(values), _checked_eps(eps))
                data = data.assign(**{name: col.mask(lo, bounds[0]).mask(hi, bounds[1])})
        model = super().from_formula(formula, data, missing=missing, treated=treated,
                                     score=score, eps=eps)
        if n_edge:
            warn_and_record(model._init_warnings, edge_message(n_edge, model.edge_bounds),
                            ClippingWarning)
        model.n_dropped += n_extra
        model._formula_call = call  # for update(): the caller's data and treated
        return model

    @classmethod
    def _from_design(cls, design: Design, data: pd.DataFrame, *, treated, score=None,
                     eps=1e-6):
        score = formula_score(design.rhs, data, score)
        if isinstance(treated, str) and treated not in data.columns:
            raise ValueError(f"treated column {treated!r} is not in data")
        tr = data[treated] if isinstance(treated, str) else treated
        cal = FormulaCalibrator("~" + design.rhs, score_name=score)
        if isinstance(tr, pd.Series) and tr.name == _TREATED:
            tr = tr.rename("treated")
        model = cls(data[score], design.y, tr, calibrator=cal, eps=eps)
        model.score_name = score
        model.design = design
        return model

    # -- estimation ------------------------------------------------------------------------------
    def fit(self, *, method: str = "auto", maxiter: int | None = None, tol: float = 1e-8,
            h=None):
        """Run CalEM (Algorithm 3) and return a :class:`CalEMResults`.

        Parameters
        ----------
        method : {"auto", "newton", "em", "squarem"}, default "auto"
            The algorithm that finds the fixed point of Algorithm 3 (see Notes). ``"auto"``:
            Newton for parametric calibrators, SQUAREM for isotonic. All reach the same fixed
            point (tested).
        maxiter : int, optional
            Iteration limit: Newton iterations (default 100; a limit given also bounds the
            SQUAREM steps that finish a Newton run stalled on a kink, default 2000); EM steps
            (``"em"``) or EM-map
            evaluations (``"squarem"``, up to three per iteration; a run that has not converged
            within them is continued once more as far, each extrapolation then kept only where
            the surrogate ``F`` does not decrease); default 5000.
        tol : float, default 1e-8
            Stop when ``max |theta_{t+1} - theta_t| < tol * (1 + max |theta_{t+1}|)`` (see
            Notes for Newton's fixed-point certificate).
        h : float or callable, optional
            A *known* treatment-effect curve: a constant in [0, 1] or a function of the score.
            Then there is nothing to iterate: one weighted fit of eq. (17) with this ``h``.
            ``h=0`` (no bias) gives the calibrator fitted on the pooled data.

        Returns
        -------
        CalEMResults
            Built once from everything estimated here: the CalEM map, the control-only fit
            ``g_theta0``, the biased fit ``g_eta``, the pooled fit (for
            :meth:`CalEMResults.test_bias`) and the sandwich covariance.

        Raises
        ------
        ValueError
            For an unknown ``method``, ``"newton"`` with the isotonic calibrator, ``tol <= 0``
            or an ``h`` outside [0, 1].

        Warns
        -----
        SeparationWarning
            Where CalEM's fit has fitted log-odds beyond +-30 on its rows or a parameter
            beyond 1e3 in absolute value (the criterion of the calibrator fits, which warn
            too): the data barely determine the curve at that end of the scores (e.g. a
            spline's lowest knot at scores near 0 with a small control set), so those
            parameters and their standard errors are not reliable. Recorded in the results'
            ``warnings`` and shown by ``summary()``.
        ConvergenceWarning
            When the algorithm did not converge within ``maxiter``.

        Notes
        -----
        Algorithm 3 fits ``g_theta0`` on the control rows and ``g_eta`` on the treated rows,
        sets ``h = (g_eta - g_theta) / g_eta`` (eq. (15), clipped to [0, 1]) and maximises the
        expected complete-data log-likelihood (17)

            Q(theta | theta_t) = sum_control l(y; g_theta)
                               + sum_treated (1 - h_t) l(z; g_theta) + h_t l(0; g_theta),

        a weighted logistic likelihood, until theta stops moving. Because ``z`` is 0/1, the
        two treated terms are one soft-label term ``l(z (1 - h_t); g_theta)``: the M-step is a
        single weighted logistic fit on control + treated rows with labels
        ``(y, z (1 - h_t))`` -- exactly the fit on the paper's tripled data set D* (tested
        against statsmodels on D*). The basis is learned from all scores; the M-step starts
        from the current ``theta`` and is solved by Newton's method
        (:func:`~puinfer.base.optimize.newton_maximize`), as are the three calibrator fits.

        ``"em"`` iterates Algorithm 3 exactly. Its rate is about ``N / (n + N)``, slow when
        the treated set dominates. Algorithm 3 is an MM algorithm for the surrogate
        log-likelihood ``F`` (see :class:`CalEMResults`), whose stationary points are its
        fixed points, so ``"newton"`` (parametric calibrators) maximises ``F`` directly with
        :func:`~puinfer.base.optimize.newton_maximize`: Newton steps where ``F`` is locally
        concave, modified (absolute-eigenvalue, "saddle-free") Newton steps elsewhere, each
        with Armijo backtracking (factor 1/4, down to step 1e-4); where neither raises ``F``,
        the ``fallback`` tries the gradient-EM direction ``H_Q^{-1} G`` with step doubling
        and, as the last resort, an exact EM step (which never lowers ``F``). It stops after a
        small full Newton step, or after two full Newton steps whose quadratic rate predicts
        the next below ``0.01 tol (1 + |theta|)`` (``predict_xtol``), or (its ``callback``)
        after a small damped step at which the EM map leaves ``theta`` in place
        (``|H_Q^{-1} G| < 0.01 tol (1 + |theta|)``).
        The solution is then certified as a fixed point of Algorithm 3; a solution on a kink
        of ``F``'s gradient (a treated row with ``g_theta = g_eta`` exactly) stalls Newton
        and is finished by SQUAREM. ``"squarem"`` accelerates the EM map
        (:func:`~puinfer.base.optimize.squarem`, Varadhan and Roland 2008, scheme S3; the
        extrapolated isotonic fitted values are projected on [0, 1]). The isotonic map
        (``"em"`` and ``"squarem"``) is iterated on *cells* of the distinct scores: each
        score with treated positives, and each stretch of scores without them whose M-step
        value is the same (adjacent equal values share a block of every isotonic regression,
        and only scores with treated positives change between iterations), which is the same
        map on fewer values (about half as many on continuous scores).

        The sandwich covariance of the stacked estimating equations of ``(theta, eta)`` is
        computed here (parametric calibrators, ``h`` estimated).
        """
        from .results import CalEMResults

        return CalEMResults(self, fit_calem(self, method=method, maxiter=maxiter, tol=tol, h=h)
                            )._with_fit_options(dict(method=method, maxiter=maxiter, tol=tol, h=h))

    # -- the surrogate log-likelihood (for checks and diagnostics) ------------------------------
    @functools.cached_property
    def _setup(self):
        return setup(self)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_setup", None)  # rebuilt on demand; holds the basis matrix
        return state

    def _parametric_engine(self):
        eng = self._setup.engine
        if not eng.parametric:
            raise NotImplementedError("the isotonic surrogate log-likelihood has no derivatives")
        return eng

    def loglike(self, params) -> float:
        """The surrogate log-likelihood ``F(params)`` that Algorithm 3 increases (penalised
        for a penalised spline), with ``g_eta`` the biased fit; see :class:`CalEMResults`."""
        return self._setup.engine.surrogate(np.asarray(params, dtype=float))

    def loglike_gradient(self, params) -> np.ndarray:
        """Gradient of :meth:`loglike`: the M-step score with the E-step plugged in (its roots
        are the fixed points of Algorithm 3). Parametric calibrators only."""
        return self._parametric_engine().residual(np.asarray(params, dtype=float))

    def loglike_hessian(self, params) -> np.ndarray:
        """Hessian of :meth:`loglike` (where it exists). Parametric calibrators only."""
        return self._parametric_engine().jacobian(np.asarray(params, dtype=float))

    def em_step(self, params) -> np.ndarray:
        """One iteration of Algorithm 3 (E-step, M-step) from ``params`` (for isotonic: the
        fitted values at the distinct scores)."""
        return self._setup.engine.emap(np.asarray(params, dtype=float))

    def __repr__(self):
        return (f"CalEM({self.calibrator!r}, n_control={self.n_control}, "
                f"n_treated={self.n_treated})")
