"""DETM and SETM: exponential tilting models for positive-unlabeled data.

Liu, Yeh, Zhang, Tian and Li, *Positive and Unlabeled Data: Model, Estimation, Inference,
and Classification*. The source sample holds labeled positives ``x ~ p_s(x | y=1)``; the
unlabeled target sample holds ``x ~ pi p_t(x | y=1) + (1 - pi) p_t(x | y=0)``. The double
exponential tilting model (DETM, eq. (4)) writes both target components as exponential tilts
of the source density,

    log p_t(x|y=1)/p_s(x|y=1) = alpha1 + T(x)'beta1,
    log p_t(x|y=0)/p_s(x|y=1) = alpha2 + T(x)'beta2,

leaving ``p_s`` unspecified (empirical likelihood). The single exponential tilting model (SETM,
the SCAR model of Remark 2) fixes ``alpha1 = 0, beta1 = 0``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ... import exceptions
from ..._align import check_missing_option, drop_missing
from ..._dask import any_dask
from ..._validation import check_binary, check_bool, refuse_dask, warn
from ...base.model import Model
from ...base.optimize import newton_maximize
from ...formula import Design, _used_columns, build_design, lhs_column
from . import _el
from ._data import TiltData, dropped_by_sample, prepare
from ._profile import probe as probe_profile
from ._record import LABEL_RULES, TiltFit, build_record
from ._starts import StartRun, _tie, free_fun, run_starts

__all__ = ["DETM", "SETM", "fit_data"]

def penalty_strength(penalty, N: int) -> float:
    """The ridge strength ``c`` for ``penalty`` ("ridge": ``1 / (2 sqrt(N))``, "none": 0)."""
    if isinstance(penalty, str):
        if penalty == "ridge":
            return _el.ridge_strength(N)
        if penalty == "none":
            return 0.0
    elif not isinstance(penalty, bool) and isinstance(penalty, (int, float, np.floating)):
        c = float(penalty)
        if not (np.isfinite(c) and c >= 0):
            raise ValueError(f"penalty strength must be finite and non-negative; got {c}")
        return c
    raise ValueError(f"penalty must be 'ridge', 'none' or a non-negative float; got {penalty!r}")


def fit_data(data: TiltData, restricted: bool, *, c: float, label_rule: str, maxiter: int,
             tol: float, check_separation=None, probe=None, start_options=None, null=None,
             seed: int = 0, lean: bool = False):
    """Maximum empirical likelihood on ``data``: every start, then (``probe``) restarts from
    any point where the 95% profile of pi rises above the best fit, or away from pi-hat
    (:meth:`._profile.PiProfiler.higher_point`).

    Returns ``(fit record, full profiler or None)``; warnings are in the record, not issued.
    ``null``: a list to which a default DETM fit appends ``(record, profiler)`` of the SETM
    fit its search starts from (SETM's default fit with the same ``c``, ``maxiter``, ``tol``,
    ``seed``: the SCAR test's null fit, which the results then need not refit). ``seed``: of
    the search's random moves (basin hopping). ``lean``: the record holds the estimates only
    (:func:`._record.build_record`; the bootstrap's refits, which do not probe).
    """
    name = "SETM" if restricted else "DETM"
    if probe is None:
        # at every n (issue 17: it was switched off above 50,000 rows); the bootstrap's
        # refits (start_options) say themselves whether they probe
        probe = start_options is None
    if lean and probe:
        raise ValueError("a lean record has no standard error for the probe to start from")
    floor_ceiling = np.inf
    if not restricted and probe and start_options is None:
        # DETM starts from SETM's certified maximum: SETM's fit as SETM.fit() makes it (its
        # probe, label rule "kl", the separation check). SETM's grid of starts misses that
        # maximum at times, and from the lower SETM solution DETM's search then missed
        # DETM's (issue 19: 14 of 400 replicates of the SCAR design at n = m = 1000,
        # pi = 0.7, by up to 2.0 log-EL units)
        setm, setm_profiler = fit_data(data, True, c=c, label_rule="kl", maxiter=maxiter,
                                       tol=tol, check_separation=None, probe=True, seed=seed)
        if null is not None:
            null.append((setm, setm_profiler))
        start_options = dict(setm_runs=list(setm.runs))
        floor_ceiling = setm.llf_penalized  # (SETM's maximum: at least its fit at pi = 0)
    runs = run_starts(data, restricted, c, maxiter, tol, **(start_options or {}), seed=seed)
    best = max(runs, key=lambda r: r.f)
    fun, expand = free_fun(data, c, restricted)
    sidx = np.r_[0, data.p + 1:2 * data.p + 2]
    for attempt in range(6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rec = build_record(data, restricted, name, best, runs, c=c, label_rule=label_rule,
                               check_separation_opt=check_separation, maxiter=maxiter, tol=tol,
                               seed=seed, lean=lean)
            restarts, profiler = (probe_profile(data, rec,
                                                float(np.sqrt(rec.cov.loc["pi", "pi"])),
                                                floor_ceiling)
                                  if probe and attempt < 5 else ([], None))
        top = best
        for v0, kind in restarts:  # the higher first; stop at the first that beats the fit
            u, f, _, _, info = newton_maximize(fun, v0[sidx] if restricted else v0,
                                               maxiter=maxiter, tol=tol,
                                               method=f"Newton ({name}, pi free)")
            runs.append(StartRun(kind, expand(u), f, info))
            # higher beyond rounding, as in the search (a climb that returns to the fit's
            # own maximum 2e-12 higher would otherwise cost another whole probe)
            if f > best.f + _tie(best):
                top = runs[-1]
                break
        if top is best:
            break
        best = top
    return rec, profiler


def check_sample_size(data: TiltData, restricted: bool) -> None:
    """Refuse samples too small to identify the model's parameters, with the numbers.

    DETM has ``2p + 3`` parameters (``alpha1, beta1, alpha2, beta2, pi``) and SETM ``p + 2``;
    the unlabeled target sample, whose two components carry them, needs at least that many
    rows, and the labeled source sample (the baseline ``p_s`` both tilts are relative to) at
    least ``p + 2``. Below that the empirical likelihood is maximised at a degenerate point
    (a component with no target points, an unbounded tilt) that says nothing about pi.
    """
    name = "SETM" if restricted else "DETM"
    p = data.p
    k = p + 2 if restricted else 2 * p + 3
    what = ("alpha2, beta2, pi" if restricted else "alpha1, beta1, alpha2, beta2, pi")
    if data.m < k:
        raise ValueError(
            f"the target sample is too small for {name}: {data.m} unlabeled row(s) for "
            f"{k} parameters ({what}; p = {p} feature(s)); {name} needs at least {k} target "
            "rows (use fewer features, or more data)")
    if data.n < p + 2:
        raise ValueError(
            f"the source sample is too small for {name}: {data.n} labeled row(s) for a tilt "
            f"with {p + 1} parameters (intercept and p = {p} slope(s)); at least {p + 2} "
            "source rows are needed")


def _drop_rows(x, name: str, missing: str):
    """``x`` without its rows with a missing value (``missing="drop"``) and how many."""
    if missing == "raise" or x is None:
        return x, 0
    if not isinstance(x, (pd.DataFrame, pd.Series)):
        arr = np.asarray(x)
        x = arr if arr.dtype.kind in "fciub" else pd.DataFrame(arr.reshape(len(arr), -1))
    index = x.index if isinstance(x, (pd.DataFrame, pd.Series)) else None
    out, _, k = drop_missing({name: x}, index, missing)
    return out[name], k


def _count_dropped_by_sample(model, data: pd.DataFrame) -> None:
    """``n_dropped_source`` / ``n_dropped_target`` of a model built from ``data`` with
    ``missing="drop"``, where the indicator (the formula's left-hand side, a column of
    ``data``) is 1 or 0 on every dropped row; left None where it is missing on one."""
    name = lhs_column(model.design.formula, data)  # (the column of y or Q("y"))
    if name is None:
        return
    counts = dropped_by_sample(data[name][~np.asarray(model.design.kept)])
    if counts is not None:
        model.n_dropped_source, model.n_dropped_target = counts


class _TiltModel(Model):
    """Shared construction and fitting of DETM and SETM (a model holds data, never a fit).

    Attributes
    ----------
    missing : {"raise", "drop"}
    n_dropped : int
        Rows dropped for missing values (``missing="drop"``), source and target together.
    n_dropped_source, n_dropped_target : int
        The same for each sample.
    """

    _restricted: bool = False

    def __init__(self, source, target, *, missing: str = "raise"):
        check_missing_option(missing)
        if any_dask(source, target):  # rows in Dask collections: see ._dask
            from ._dask import init_dask

            init_dask(self, source, target, missing)
            return
        # source and target are two samples, not columns of one: their rows are never matched
        # to each other (each keeps its own index; predict() uses the target's)
        self._named_features = isinstance(source, (pd.Series, pd.DataFrame))
        source, ks = _drop_rows(source, "source", missing)
        target, kt = _drop_rows(target, "target", missing)
        self.design = None
        self.data = prepare(source, target)
        self._set_missing(missing, ks, kt)
        check_sample_size(self.data, self._restricted)
        self.exog_names = list(self.data.names)

    def _set_missing(self, missing, ks, kt):
        self.missing = missing
        self.n_dropped_source, self.n_dropped_target = int(ks), int(kt)
        self.n_dropped = int(ks + kt)

    @classmethod
    def _from_parts(cls, data: TiltData, design: Design | None, missing="raise", ks=0, kt=0):
        self = cls.__new__(cls)
        self.design, self.data, self.exog_names = design, data, list(data.names)
        self._set_missing(missing, ks, kt)
        check_sample_size(data, cls._restricted)
        return self

    @classmethod
    def from_formula(cls, formula: str, data: pd.DataFrame | None = None, *, source=None,
                     target=None, missing: str = "raise"):
        """Build the model from a formula.

        Parameters
        ----------
        formula : str
            ``"labeled ~ x1 + x2"`` with ``data`` (``labeled`` is 1 for the labeled source
            positives and 0 for the unlabeled target), or ``"~ x1 + x2"`` with ``source`` and
            ``target`` data frames. The right-hand side builds ``T(x)``; ``poly``, ``logit``,
            splines and transforms are available. An intercept (alpha) is always included.
        data : pandas.DataFrame, optional
            One frame holding both samples; ``predict()`` returns the target rows with their
            index in ``data`` (so ``df.loc[df.labeled == 0, "post"] = res.predict()`` fills
            them).
        source, target : pandas.DataFrame, optional
            The two samples as separate frames. They are separate samples, so their rows are
            never matched to each other; ``predict()`` carries ``target``'s index.
        missing : {"raise", "drop"}
            Missing values in a column the formula uses: ``"raise"`` (default) refuses them,
            naming the column; ``"drop"`` drops those rows (R's ``na.action = na.omit``); the
            number dropped is in ``n_dropped`` (and ``n_dropped_source``/``_target``) and in
            ``summary()``.

        Raises
        ------
        ValueError
            For missing values (``missing="raise"``), a non-0/1 indicator, an empty or too
            small sample, a constant, collinear or extremely scaled column, a date/time column,
            numbers stored as text, duplicate column names, or a formula that cannot be
            evaluated.
        """
        check_missing_option(missing)
        if any_dask(data, source, target):  # rows in Dask collections: see ._dask
            from ._dask import from_formula_dask

            if data is not None and (source is not None or target is not None):
                raise ValueError("give either data= (with an indicator) or source= and target=")
            return from_formula_dask(cls, formula, data, missing, source=source, target=target)
        if data is not None:
            if source is not None or target is not None:
                raise ValueError("give either data= (with an indicator) or source= and target=")
            model = super().from_formula(formula, data, missing=missing)
            if model.design.kept is not None:
                _count_dropped_by_sample(model, pd.DataFrame(data) if isinstance(data, dict)
                                         else data)
            return model
        if source is None or target is None:
            raise ValueError("give data= with a two-sided formula, or source= and target=")
        for nm, df in (("source", source), ("target", target)):
            if not isinstance(df, pd.DataFrame) or len(df) == 0:
                raise ValueError(f"{nm} must be a DataFrame with rows")
        # a column the formula uses must be in both samples (pooled, a column missing from
        # one would look like missing values in its rows)
        used_s, used_t = _used_columns(formula, source), _used_columns(formula, target)
        for nm, cols in (("source", [c for c in used_t if c not in used_s]),
                         ("target", [c for c in used_s if c not in used_t])):
            if cols:
                raise ValueError(f"{nm} has no column(s) {cols}, which the formula uses (the "
                                 "other sample has them)")
        # one design on both samples (the stateful transforms see the pooled data, as with
        # data=); positions, not labels, split it back, since the two indexes may overlap
        design = build_design(formula, pd.concat([source, target], ignore_index=True),
                              require_lhs=False, missing=missing)
        keep = design.kept if design.kept is not None else np.ones(len(source) + len(target),
                                                                    dtype=bool)
        ks, kt = keep[: len(source)], keep[len(source):]
        X = design.X.drop(columns="Intercept", errors="ignore")
        src, tgt = X.iloc[: int(ks.sum())], X.iloc[int(ks.sum()):]
        for nm, part in (("source", src), ("target", tgt)):
            if len(part) == 0:
                raise ValueError(f"no {nm} rows left after dropping rows with missing values")
        model = cls._from_parts(prepare(src, tgt, target_index=target.index[kt],
                                        source_index=source.index[ks]), design,
                                missing, int((~ks).sum()), int((~kt).sum()))
        model._formula_call = {"source": source, "target": target, "missing": missing}
        return model

    @classmethod
    def _from_design(cls, design: Design, data: pd.DataFrame):
        lab = check_binary(design.y, f"indicator {design.y.name!r}")
        X = design.X.drop(columns="Intercept", errors="ignore")
        if X.shape[1] == 0:
            raise ValueError("the formula has no feature columns")
        src, tgt = X[lab == 1], X[lab == 0]
        if len(src) == 0:
            raise ValueError(f"no labeled source rows ({design.y.name!r} == 1)")
        if len(tgt) == 0:
            raise ValueError(f"no unlabeled target rows ({design.y.name!r} == 0)")
        self = cls._from_parts(prepare(src, tgt), design)  # from_formula sets the counts
        if design.kept is not None:
            # which sample each dropped row belonged to: from_formula counts them where the
            # indicator is known for every dropped row (_count_dropped_by_sample)
            self.n_dropped_source = self.n_dropped_target = None
        return self

    def exog(self, newdata) -> tuple[np.ndarray, pd.Index | None]:
        """The model's features for ``newdata`` (see :meth:`Model.exog`); a formula with
        categorical or quoted columns fitted on Dask collections codes ``newdata``'s columns
        as at fit time (its design's names are not columns of the data)."""
        coding = getattr(self.data, "coding", None)
        if coding is None:
            return super().exog(newdata)
        refuse_dask(newdata, "newdata")
        if not isinstance(newdata, (pd.DataFrame, dict)):
            raise TypeError("newdata must be a DataFrame with the formula's columns "
                            f"({self.formula!r}); got {type(newdata).__name__}")
        X = coding.transform(newdata)
        return X.to_numpy(dtype=float), X.index

    def restricted_model(self) -> SETM:
        """SETM on the same data (and formula): the null model of the SCAR test."""
        out = SETM._from_parts(self.data, self.design, self.missing)
        out.n_dropped_source, out.n_dropped_target = self.n_dropped_source, self.n_dropped_target
        out.n_dropped = self.n_dropped
        out._named_features = self._named_features
        if "_formula_call" in self.__dict__:  # update() builds SETM from the same call
            out._formula_call = self._formula_call
        return out

    def fit(self, *, penalty="ridge", label_rule: str = "kl", maxiter: int = 200,
            tol: float = 1e-10, check_separation: bool | None = None,
            probe: bool | None = None, pi_interval: str | None = None, seed: int = 0):
        """Maximum empirical likelihood estimation.

        Parameters
        ----------
        penalty : {"ridge", "none"} or float
            ``"ridge"`` (default): the vanishing ridge ``c = 1/(2 sqrt(N))`` on the slopes of
            the internally standardised features, in glmnet's symmetric multinomial form (the
            authors' R package's form and strength, ``lambda = N^-1.5``; its ``DETMnull.R``
            passes ``standardize=FALSE``, so there the slopes of the features as given are
            penalised, and on features of very different scales the two penalised fits
            differ); keeps the maximum finite under separation. As it acts on
            standardised columns, it depends a little on how a factor is coded (with reference
            level a / b / c of a three-level ``C(g)``, n = m = 500: pi-hat 0.5157 / 0.5142 /
            0.5165, upper 95% limit 0.861 / 0.851 / 0.861; unpenalised, the codings agree).
            It depends more on how strongly correlated columns are written: ``age +
            I(age**2)`` with an uncentred age and ``poly(age, 2)`` are one model, but their
            penalised fits differ (DETM pi-hat 0.173 and 0.573 at n = m = 500; with
            ``penalty="none"`` 0.626 both). ``pi_unpenalised`` on the results gives pi at the
            unpenalised maximum nearest the fit (0.222 and 0.626 here), and a
            ``PenaltyWarning`` says when the ridge moves pi-hat by more than 0.25 standard
            errors from it (here both fits); write polynomial terms with ``poly()`` or of
            centred features, and compare with ``penalty="none"``.
            ``"none"``: the plain empirical likelihood, whose maximum may not exist (the
            profile interval is then refused with the reason where a run is seen to climb
            without end). At fixed pi the profile may also have only a supremum, approached
            as one component's tilt concentrates on a single extreme target row; runs from
            the package's starts need not go there, and the interval then ends short of it
            without a warning (session 68's audit: n = 150, m = 200, upper limit 0.895 where
            such a direction stays below the cut-off to at least 0.917). Prefer the ridge for
            intervals. A float sets ``c`` directly.
        label_rule : {"kl", "pi<0.5", "pi>0.5"}
            How DETM's label switching (Theorem 1) is resolved: ``"kl"`` (Remark 1, default)
            labels as component 1 the target component closer to the source in
            Kullback-Leibler divergence ``KL(p_s || p_t(.|y))``; ``"pi<0.5"`` / ``"pi>0.5"``
            label so that pi is below / above one half. Ignored by SETM (no switching).
            The rule compares estimates: when the two sides are within their sampling error
            (a two-sided test of equality at 5%: the delta-method sandwich SE of the KL
            difference, or the profile likelihood ratio of pi = 0.5) a
            ``LabelAmbiguityWarning`` says the
            labelling is weakly determined; ``label_check`` on the results and the summary
            always show what the rule compared. On the Mobile Phone data the KL rule compares
            13.74 with 14.20 (SE of the difference 0.73): weakly determined. Where a tilt
            diverges (a ``SeparationWarning``) the diverging component's divergence is set by
            the ridge, not the data, and the KL rule calls that component the negatives
            whatever its size: a ``LabelAmbiguityWarning`` says so. (Session 86's audit:
            under Liu et al.'s SAR design at pi = 0.01, 5 of 10 fits at n = 2000, m = 10,000
            reported the mirror, pi-hat near 0.97; ``"pi<0.5"`` none.)
        maxiter, tol : Newton iterations per start and the convergence tolerance on the
            Newton decrement (log-EL units).
        check_separation : bool, optional
            Check whether target points lie outside the convex hull of the source points (one
            linear programme for each of the 25 target points with the smallest fitted source
            probability), and, for a penalised fit on up to 50,000 rows, whether the ridge
            binds (``ridge_binding``: Newton's method on the unpenalised log-EL from the fit
            runs off or ends on a flat ridge). By default the hull check runs when a tilt
            diverges (a standardised slope above 10, or the ridge binding); a
            ``SeparationWarning`` is issued when the unpenalised maximum does not (or, not
            checked, may not) exist. ``False`` skips all checks (``ridge_binding`` is then
            ``None``).
        probe : bool, optional
            Check the fit against the profile of pi: compute the 95% profile interval and, if
            the profile rises above the fitted maximum (a maximum the starts missed; with many
            features, e.g. a tilt that concentrates on a few outlying target points), restart
            from there. Default: on, at every sample size (above 40,000 rows the skeleton of
            profile solutions and the far starts run on the seeded subsample first, the
            interval and the points beyond it on the full data); the interval it computes is
            kept, so ``conf_int_pi()`` at the 95% level costs nothing more. ``False`` skips it
            (``conf_int_pi`` then profiles and raises ``ProfileError`` if it finds a higher
            point than the fit).
        pi_interval : {"bootstrap", "profile"}, optional
            The inference on pi the results give by default (``conf_int_pi()``, and with it
            pi's row of ``conf_int()``, ``bse["pi"]``, ``test_pi`` and the summary).
            ``"bootstrap"`` (the default for data in memory; data in Dask collections default
            to ``"profile"``, as the bootstrap needs every row in memory): the profile
            interval with its cut-off calibrated by the smoothed empirical-likelihood
            bootstrap from the fitted model (199 resamples, seed 0, computed once when first
            needed: 13-14 CPU s for DETM, 3 s for SETM at n = m = 1000 with 15 features on
            ``benchmarks/bench_detm.py``'s data, ``bench_detm_s59``/``s60`` in
            ``benchmarks/results/README.md``; it depends on the data; the cut-off is at least
            ``chi2_1``'s where pi-hat is on or near the boundary, see
            ``DETMResults.conf_int_pi``) and the SE it implies (its width over
            ``2 z_0.975``). ``"profile"``:
            the plain profile interval (``chi2_1`` cut-off, Theorem 3b) and the
            observed-information SE, at no further cost (for DETM an ``AssumptionWarning``
            where that interval is more than 1.25 times as wide as the SE implies: the tilts'
            Wald inference is then unreliable). Why the default (issue 19,
            ``studies/results/README_detm.md``): in Liu et al.'s SAR design (p = 15, n = m =
            1000) the plain interval covers 0.74 / 0.69 (pi = 0.3 / 0.7) and the observed-
            information SE is a third of the SD of pi-hat; the calibrated interval covers
            0.95 / 0.975 (400 replicates each), and the Wald interval of its SE covers within
            0.015 of it in each of eight cells of three designs (0.93-0.99).

        seed : int
            Seed of the random moves of the search for the global maximum (basin hopping:
            64 moves of the best solution's slopes per round, and for DETM a round after any
            stretch move that reaches a higher maximum; a non-negative integer). The
            same data and seed give the same fit. Another seed is another search: where the
            penalised likelihood has several maxima close together, it can reach a higher
            one (issue 19, Liu et al.'s SAR design with p = 15, n = m = 1000, pi = 0.7: seed 1
            reached a higher maximum than seed 0 in 8 of 100 replicates, by 0.2-1.1 log-EL
            units; ``studies/results/README_detm.md``, session 37). To check a fit, refit with
            a few seeds and keep the one with the highest ``llf_penalized``.

        Returns
        -------
        DETMResults or SETMResults

        Notes
        -----
        With pi free, the maximum of the profile log-EL (eq. 12) equals the maximum of a
        binary-regression likelihood with odds ``e^{s1+x'b1} + e^{s2+x'b2}``, maximised by
        Newton's method from deterministic starts (the SETM solution -- for DETM, SETM's
        fit with its own profile probe --, a grid of pi and tilts and tilts from the samples'
        moments), then from random moves of the best solution's slopes and, for DETM, from
        its slopes stretched by 1.5, 2 and 3 (above 40,000 rows all of it first on a seeded
        20,000-row subsample); then the profile probe. ``llf`` is then
        evaluated from eq. (12) with the Lagrange multipliers of eq. (11) solved to machine
        precision. With pi fixed (profiling) Newton's method runs on ``l_N(theta)`` itself,
        with the multipliers solved inside and the Hessian by implicit differentiation.
        """
        if label_rule not in LABEL_RULES:
            raise ValueError(f"label_rule must be one of {LABEL_RULES}; got {label_rule!r}")
        lazy = getattr(self.data, "lazy", False)  # rows in Dask collections
        if pi_interval is None:
            pi_interval = "profile" if lazy else "bootstrap"
        if pi_interval not in ("bootstrap", "profile"):
            raise ValueError(f"pi_interval must be 'bootstrap' or 'profile'; got {pi_interval!r}")
        if lazy and pi_interval == "bootstrap":
            from ._dask import refuse

            refuse("fit(pi_interval='bootstrap')")
        # (True/False/None by type: 0 and numpy's False compared equal to False, passed, and
        # were read by identity as "not False", running the check asked to be skipped;
        # session 85's audit)
        if check_separation is not None:
            check_separation = check_bool(check_separation, "check_separation")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
        if isinstance(maxiter, bool) or not isinstance(maxiter, (int, np.integer)) or \
                maxiter < 1:
            raise ValueError(f"maxiter must be a positive integer; got {maxiter!r}")
        if isinstance(tol, bool) or not isinstance(tol, (int, float, np.number)) or \
                not (np.isfinite(tol) and tol > 0):
            raise ValueError(f"tol must be a positive number; got {tol!r}")
        if probe is not None:
            probe = check_bool(probe, "probe")
        c = penalty_strength(penalty, self.data.N)
        null: list = []
        rec, profiler = fit_data(self.data, self._restricted, c=c, label_rule=label_rule,
                                 maxiter=maxiter, tol=tol, check_separation=check_separation,
                                 probe=probe, null=null, seed=int(seed))
        # the fit's own and its profile probe's (a profile point or interval limit whose
        # search did not converge): both are recorded in the results' ``warnings``
        for cat, msg in [*rec.warnings, *(profiler.warnings if profiler is not None else [])]:
            warn(msg, getattr(exceptions, cat))
        res = self._results(rec, profiler, pi_interval, null=null[0] if null else None)
        return res._with_fit_options(dict(
            penalty=penalty, label_rule=label_rule, maxiter=maxiter, tol=tol,
            check_separation=check_separation, probe=probe, pi_interval=pi_interval,
            seed=seed))

    def _results(self, rec: TiltFit, profiler, pi_interval: str = "bootstrap", null=None):
        from .results import DETMResults, SETMResults

        if self._restricted:
            return SETMResults(self, rec, profiler, pi_interval=pi_interval)
        return DETMResults(self, rec, profiler, pi_interval=pi_interval, null=null)


class DETM(_TiltModel):
    """Double exponential tilting model for (SAR) positive-unlabeled data (Liu et al., eq. (4)).

    Parameters
    ----------
    source : array_like or DataFrame, (n, p)
        Features ``T(x)`` of the labeled positives.
    target : array_like or DataFrame, (m, p)
        Features of the unlabeled target sample. ``source`` and ``target`` are two separate
        samples: their rows are never matched to each other (so their indexes may overlap),
        DataFrame columns are matched by name, and ``predict()`` returns one value per target
        row carrying ``target``'s index (a RangeIndex for arrays).
    missing : {"raise", "drop"}
        Missing values (NaN, None, ``pd.NA``): ``"raise"`` (default) refuses them, naming the
        sample and column; ``"drop"`` drops those rows from their sample (R's ``na.action``);
        the counts are in ``n_dropped``, ``n_dropped_source``, ``n_dropped_target`` and in
        ``summary()``.

    Raises
    ------
    ValueError
        For missing values, non-numeric, date/time or extremely scaled columns, constant or
        collinear columns, or a sample too small for the parameters (DETM: at least
        ``2p + 3`` target rows and ``p + 2`` source rows).

    See Also
    --------
    SETM : the SCAR model (alpha1 = 0, beta1 = 0).

    Examples
    --------
    >>> import puinfer as pu
    >>> df = pu.datasets.load_mobile_pu()
    >>> res = pu.DETM.from_formula("labeled ~ ram + battery_power + px_height", data=df).fit()
    >>> round(res.pi, 2) > 0
    True
    """

    _restricted = False


class SETM(_TiltModel):
    """Single exponential tilting model: positive-unlabeled data under SCAR (Liu et al.,
    Remark 2).

    Same interface (and alignment rule, ``missing=`` option) as :class:`DETM`; fixes
    ``alpha1 = 0`` and ``beta1 = 0`` (the target positives follow the source distribution). It
    has ``p + 2`` parameters and needs at least that many target rows.
    """

    _restricted = True
