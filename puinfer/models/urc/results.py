"""Results of a URC fit: immutable; intervals, profiles and tests cached on first use."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..._align import align_rows
from ..._validation import check_alpha, check_rng, level_label, warn_and_record
from ...base.results import (
    ConvergenceInfo,
    InformationCriteria,
    LikelihoodResults,
    data_fingerprint,
    readonly,
)
from ...exceptions import ConfidenceSetWarning
from ...inference.hypothesis import HypothesisTestResult
from ...inference.profile import NEAR_BOUNDARY_SHARE, Profile, ProfileError, conf_ints
from ...prior_shift import adjust_prior
from ...summary import Summary, interval_labels
from . import _likelihood as lik
from . import _stacked
from ._inputs import check_rowwise, label_array, rates_vector
from .hypotheses import URCTestsMixin, _check_n_boot

__all__ = ["URCResults", "URCFitRecord"]


_MODEL_NAMES = {"free": "URC", "equal": "URC (equal base rates)",
                "rows": "URC (base rates fixed)", "entry": "URC (one base rate fixed)",
                "pooled": "URC (base rates = lab population's)"}
_DESIGN_TEXT = {"random": "random (class counts multinomial, lab base rates estimated)",
                "stratified": "stratified (class counts fixed by design)"}


@dataclass(frozen=True)
class URCFitRecord:
    """Everything :meth:`URC.fit` hands to :class:`URCResults`.

    Attributes
    ----------
    model : URC
    data : Data
        The lab and field histograms and the likelihood's options.
    estimate : Estimate
        The maximum: base rates ``P``, ``M_A``, the objective and convergence.
    groups : pandas.Index
    naive : numpy.ndarray
        Mean prediction per group and class.
    constraint : Constraint
        What was held fixed (nothing for the fit of :meth:`URC.fit`).
    options : FitOptions
        Used again by profiles and restricted fits.
    warnings : tuple of (str, str)
    n_dropped : int
        Field rows dropped for missing values (``missing="drop"``).
    """

    model: Any
    data: lik.Data
    estimate: lik.Estimate
    groups: pd.Index
    naive: np.ndarray
    constraint: lik.Constraint
    options: lik.FitOptions
    warnings: tuple = ()
    n_dropped: int = 0


def _tests_table(tests, several_groups, random_lab) -> pd.DataFrame:
    index = ["no shift (= lab population rates)" if random_lab else "no shift (= lab rates)",
             "equal across groups", "goodness of fit (Axiom 2)"]
    if not several_groups:
        index.pop(1)
    return pd.DataFrame({"statistic": [t.statistic for t in tests],
                         # (an effective df, RegressionURC's goodness of fit, kept as it is;
                         # the whole numbers shown as such: an object column)
                         "df": pd.Series([int(t.df) if float(t.df).is_integer() else t.df
                                          for t in tests], dtype=object, index=index),
                         "p-value": [t.pvalue for t in tests],
                         # (an invalid test has none: session 68's audit saw "chi2" there)
                         "reference": [None if t.invalid_reason else t.distribution
                                       for t in tests]}, index=index)


class URCResults(URCTestsMixin, InformationCriteria, LikelihoodResults):
    """Results of :meth:`URC.fit`: field base rates, profile intervals, tests, recalibration.

    Built once from a :class:`URCFitRecord`; immutable (setting an attribute raises
    ``AttributeError``) and picklable. The covariance, the profiles, the profile intervals at
    ``alpha=0.05`` and the restricted fits of the tests are computed on first use and cached.

    Attributes
    ----------
    model : URC
    likelihood : str
        ``"joint"`` or ``"fixed"``.
    lab_design : str
        ``"random"`` or ``"stratified"`` (the model's; see :class:`URC`).
    prior_strength : float
        Dirichlet prior strength (0: maximum likelihood).
    llf : float
        The log-likelihood of the counts at the estimate (with the multinomial coefficients);
        under a random lab design it includes the lab class counts' multinomial (at
        ``pi_lab = n_i / n`` except in the no-shift null).
    llf_penalized : float
        The maximised objective (used by the likelihood-ratio tests and the profiles): ``llf``
        plus, under the joint likelihood, the lab pseudo-counts' term ``sum C log M_A`` (the
        default Perks' ``1/|A|`` per cell included), plus the log Dirichlet prior when
        ``prior_strength > 0``.
    nobs : int
        Field items, plus lab items under the joint likelihood or a random lab design.
    df_model : int
        Number of free parameters (base rates, ``M_A`` under the joint likelihood, the lab
        population's base rates under a random lab design).
    constraint : Constraint
        What was held fixed (restricted fits of the tests only).
    convergence : ConvergenceInfo
    warnings : tuple of (str, str)
        ``(category, message)`` of every warning raised for this fit (and by the model).
    n_dropped : int
        Field rows dropped for missing values (``fit(..., missing="drop")``); the lab rows
        dropped are ``model.n_dropped``.
    """

    def __init__(self, record: URCFitRecord):
        d, est, con = record.data, record.estimate, record.constraint
        self.model = record.model
        self._record = record
        self._d = d
        self._P = readonly(est.P.copy())
        self._Mhat = readonly(est.M.copy())
        self._groups = record.groups
        self.constraint = con
        self.likelihood = "joint" if d.joint else "fixed"
        self.lab_design = "random" if d.random_lab else "stratified"
        self.prior_strength = d.strength
        k, (G, A) = self.model.n_classes, d.F.shape
        self._llf_penalized = est.objective + d.const
        self.lab_pseudocount = d.lab_pseudocount
        self.lab_prior = d.lab_prior if d.lab_pseudocount > 0 else None
        self.llf = lik.objective(est.P, est.M, dataclasses.replace(
            d, strength=0.0, penalty=None, lab_pseudocount=0.0)) + d.const
        self.llf_kind = (f"URC multinomial log-likelihood ({self.likelihood}, "
                         f"{self.lab_design} lab)"
                         + (f" + Dirichlet log prior (strength {d.strength:g})"
                            if d.strength > 0 else "")
                         + (f" + lab pseudo-counts ({d.lab_pseudocount:g} per cell on "
                            f"average, {d.lab_prior})" if d.lab_pseudocount > 0 else "")
                         + (f" + {d.penalty.describe()}" if d.penalty is not None else ""))
        self.nobs = int(d.F.sum() + (d.L.sum() if d.joint or d.random_lab else 0))
        # the lab population's base rates: free under a random design, except in the pooled
        # null where they are the shared base rates counted among the free rates
        n_pi = k - 1 if d.random_lab and con.kind != "pooled" else 0
        self.df_model = lik.n_free_rates(con, G, k) + n_pi + (k * (A - 1) if d.joint else 0)
        self.data_fingerprint = data_fingerprint(d.L, d.F, [d.strength, d.lab_pseudocount,
                                                              d.lab_prior == "pooled"])
        G = len(record.groups)
        # (the number of groups tells a pooled fit from a grouped one in tables: anova)
        self.model_name = _MODEL_NAMES[con.kind] + (f", {G} groups" if G > 1 else "")
        self.convergence: ConvergenceInfo = est.convergence
        self.warnings = tuple(record.warnings)
        self.n_dropped = int(record.n_dropped)

    @property
    def warnings(self) -> tuple:
        """``(category, message)`` of every warning raised for this fit (and by the model),
        then of those its later computations raised (intervals, bootstrap tests)."""
        return self.__dict__.get("_fit_warnings", ()) + self.__dict__.get("_late_warnings", ())

    @warnings.setter
    def warnings(self, value):  # (__init__ sets the fit's)
        object.__setattr__(self, "_fit_warnings", tuple(value))

    def _record_warning(self, category, message: str) -> None:
        """Issue a warning and record it with the results' warnings, once: a warning already
        recorded is not issued again (as DETM's: session 83's review found a ConfidenceSetWarning
        issued on every conf_int(alpha=0.1))."""
        late = self.__dict__.get("_late_warnings", ())
        if (category.__name__, message) in late:
            return
        rec: list = []
        warn_and_record(rec, message, category)
        self.__dict__["_late_warnings"] = late + tuple(rec)

    @property
    def llf_penalized(self) -> float:
        """The maximised objective: ``llf`` plus the lab pseudo-counts' term and the log
        prior, where they are used (see the class docstring)."""
        return self._llf_penalized

    # -- estimates ------------------------------------------------------------------------------
    @property
    def groups(self) -> pd.Index:
        """The field groups (``"all"`` when no groups were given)."""
        return self._groups.copy()

    def _frame(self, values, index, columns) -> pd.DataFrame:
        return pd.DataFrame(np.array(values), index=index, columns=columns)

    @property
    def _class_index(self) -> pd.Index:
        return pd.Index(self.model.classes, name="class")

    @property
    def _cell_index(self) -> pd.Index:
        return pd.Index(self.model.partition.labels, name="cell")

    @property
    def base_rates(self) -> pd.DataFrame:
        """Estimated field base rates: groups (rows) by classes (columns)."""
        return self._frame(self._P, self.groups, self._class_index)

    @property
    def base_rate(self) -> pd.Series:
        """Binary classifiers: the estimated field base rate ``P(Y = 1)`` per group."""
        if self.model.n_classes != 2:
            raise AttributeError("base_rate is for binary classifiers; use base_rates")
        return pd.Series(np.array(self._P[:, 1]), index=self.groups, name="base rate")

    @property
    def naive(self) -> pd.DataFrame:
        """The naive estimator (mean prediction per group and class; biased, Theorem 5)."""
        return self._frame(self._record.naive, self.groups, self._class_index)

    @property
    def lab_base_rates(self) -> pd.Series:
        """Class shares in the lab set."""
        return self.model.lab_base_rates

    @property
    def M(self) -> pd.DataFrame:
        """``M_A`` at the estimate (the lab estimate for the fixed likelihood)."""
        return self._frame(self._Mhat, self._class_index, self._cell_index)

    @property
    def observed(self) -> pd.DataFrame:
        """Field histogram: groups (rows) by cells (columns)."""
        return self._frame(self._d.F, self.groups, self._cell_index)

    @property
    def fitted(self) -> pd.DataFrame:
        """Fitted field histogram ``N_g M_A' p_g``."""
        E = self._d.F.sum(axis=1, keepdims=True) * (self._P @ self._Mhat)
        return self._frame(E, self.groups, self._cell_index)

    @property
    def n_field(self) -> pd.Series:
        """Number of field predictions per group."""
        return pd.Series(self._d.F.sum(axis=1).astype(int), index=self.groups, name="n_field")

    @functools.cached_property
    def _free_index(self) -> tuple:
        """(group, class) positions of the parameters; binary: class 1 only."""
        k = self.model.n_classes
        cls = [1] if k == 2 else list(range(k))
        return tuple((g, j) for g in range(len(self._groups)) for j in cls)

    @functools.cached_property
    def _params(self) -> pd.Series:
        idx = self._free_index
        return pd.Series([self._P[g, j] for g, j in idx],
                         index=pd.MultiIndex.from_tuples(
                             [(self._groups[g], self.model.classes[j]) for g, j in idx],
                             names=["group", "class"]), name="base rate")

    @property
    def params(self) -> pd.Series:
        """Base rates as a Series indexed by (group, class); binary: class 1 only."""
        return self._params.copy()

    @functools.cached_property
    def _cov(self) -> pd.DataFrame | None:
        """Inverse observed information of the base rates (None for restricted fits)."""
        if self.constraint.kind != "free":
            return None
        k = self.model.n_classes
        cov = lik.base_rate_cov(self._record.estimate, self._d,
                                [g * k + j for g, j in self._free_index])
        if cov is None:
            return None
        return pd.DataFrame(cov, index=self._params.index.copy(),
                            columns=self._params.index.copy())

    # -- profile likelihood ---------------------------------------------------------------------
    def _group_pos(self, group):
        if group is None:
            if len(self._groups) > 1:
                raise ValueError("group: several groups were fitted; name one")
            return 0
        pos = self._groups.get_indexer([group])[0]
        if pos < 0:
            raise ValueError(f"group {group!r} is not among the fitted groups")
        return pos

    def _class_pos(self, cls):
        if cls is None:
            if self.model.n_classes == 2:
                return 1
            raise ValueError("cls: name the class to profile")
        pos = pd.Index(self.model.classes).get_indexer([cls])[0]
        if pos < 0:
            raise ValueError(f"cls {cls!r} is not among the classes {self.model.classes}")
        return pos

    @functools.cached_property
    def _profiles(self) -> dict:
        """A :class:`Profile` per (group, class) position (evaluated lazily, cached)."""
        rec, P, out = self._record, self._P, {}
        # (the joint likelihood's profiles share one factorised Hessian at the maximum)
        curvature = lik.ModeCurvature(self._d, rec.estimate) if self._d.joint else None
        # the first step of each limit search: under the joint likelihood the standard error
        # with M profiled out (the fixed-M one, from the field counts alone, can be a tenth of
        # it: with 100 groups of 1e5 rows every search began at R = 0.05, and the 200 limits
        # took 1,171 evaluations, 611 with this step and Profile.newton_shortcuts; issue 17)
        cov = self._cov if self._d.joint else None
        var = {} if cov is None else dict(zip(self._free_index, np.diag(cov.to_numpy()),
                                              strict=True))
        hint = ("refit with more starts of the joint likelihood, which can have several local "
                "maxima with a small lab set: model.fit(..., random_starts="
                f"{lik.more_random_starts(rec.options)}) (or likelihood='fixed', whose maximum "
                "is unique)" if self._d.joint else None)
        for g in range(P.shape[0]):
            if not self._d.joint:
                curvature = None  # (the fixed likelihood: shared by the group's profiles)
            for j in range(P.shape[1]):
                ll = lik.profile_loglik(self._d, rec.estimate, g, j, self.llf_penalized,
                                        rec.options, curvature)
                curvature = ll.curvature
                # (binary: class 0's rate is one minus class 1's, the same error)
                v_gj = var.get((g, j if P.shape[1] > 2 else 1), np.nan)
                step = np.sqrt(v_gj) if v_gj > 0 else \
                    lik.approx_se(P[g], self._Mhat, self._d.F[g], j)
                out[g, j] = Profile(f"p[{self._groups[g]}, {self.model.classes[j]}]", P[g, j],
                                    self.llf_penalized, ll.loglik_at, bounds=(0.0, 1.0),
                                    step=step, derivative=ll.slope, refit_hint=hint)
        return out

    def profile(self, group=None, cls=None) -> Profile:
        """Profile likelihood of the base rate of class ``cls`` in ``group``.

        Every other parameter (the other base rates of the group, re-normalised; the other
        groups' base rates; ``M_A`` under the joint likelihood) is re-maximised at each value.

        Parameters
        ----------
        group : label, optional
            Needed when several groups were fitted.
        cls : label, optional
            Needed for more than two classes; binary: class 1.

        Returns
        -------
        Profile
            The same object on every call (its evaluations are cached).
        """
        self._require_unrestricted()
        return self._profiles[self._group_pos(group), self._class_pos(cls)]

    def _require_unrestricted(self):
        if self.constraint.kind != "free":
            raise ValueError("profiles are available for the unrestricted fit only")

    def _profile_intervals(self, alpha: float, cutoffs=None) -> pd.DataFrame:
        """Each free rate's profile interval (at ``cutoffs`` where given, e.g. Bartlett's).

        Under the joint likelihood the profile can have several modes (``M_A`` moving with
        the rates: session 83's audit found a 95% set [0.61, 0.72] and [0.987, 1] reported as
        [0.987, 1], a class never predicted in the field), so a fit of one group has each
        interval checked beyond its limits and widened to the set's hull (:meth:`Profile.hull
        <puinfer.inference.Profile.hull>`), with a ``ConfidenceSetWarning``. With several
        groups the check is not run: its points far from the estimates, each a constrained
        fit of every group, made the intervals of 100 and 300 groups 7-10 times as costly
        (``benchmarks/results/README.md``, session 83; with the points solved together, as
        below, still 14 s against 0.9 s for 300 groups: most such points need the full
        search, session 89), and a second mode needs ``M_A`` to move against every group's
        field data; ``profile(group, cls).hull()`` runs it for one rate. Nor under a penalty
        (RegressionURC's smoothness penalty): each point beyond a limit there is a penalised
        search from afar, often two, and the check took 21 times the intervals' time at
        RegressionURC's default 10 intervals, 8 times at 20 (7.5 and 62 s; it found no second
        part in any case tested; session 85's audit). Under the fixed likelihood the
        log-likelihood is concave in the rates and the set an interval.

        Without the check the limit searches of all rates run in lockstep
        (:func:`~puinfer.inference.profile.conf_ints`), and their points are solved
        together (:mod:`._stacked`: the same iterations from the same starts, the same
        limits to about 1e-10; with three or more classes the Newton runs that stay inside
        the simplices, the others one at a time)."""
        check = self.likelihood == "joint" and len(self._groups) == 1 and \
            self._d.active_penalty is None
        self._require_unrestricted()
        profs = [self._profiles[g, j] for g, j in self._free_index]
        cuts = [None if cutoffs is None or not np.isfinite(c) else float(c)
                for c in (cutoffs if cutoffs is not None else [None] * len(profs))]
        if check:
            rows = [p.hull(alpha, c) for p, c in zip(profs, cuts, strict=True)]
        else:
            # the limit searches of every rate in lockstep, their points solved together
            # (_stacked: under the joint likelihood each point alone is a fit of every group;
            # issue 17)
            rows = conf_ints(profs, alpha, cuts, self._stacked_points(profs))
        for prof, ci in zip(profs, rows, strict=True):
            if not ci.attrs.get("interval", True):
                self._record_warning(
                    ConfidenceSetWarning,
                    f"the {level_label(1 - alpha)} confidence set of {prof.name} is not an "
                    f"interval: the profile has another mode, and the statistic is below the "
                    f"cut-off ({ci.attrs['cutoff']:.4g}) at {ci.attrs['inside_beyond'][0]:.4g}, "
                    f"beyond the limit the search from the estimate found; the set's hull "
                    f"({ci['lower']:.4g}, {ci['upper']:.4g}) is reported")
        return pd.DataFrame({"lower": [r["lower"] for r in rows],
                             "upper": [r["upper"] for r in rows]},
                            index=self._params.index.copy())

    def _stacked_points(self, profs):
        """The ``evaluate`` of :func:`~puinfer.inference.profile.conf_ints` for ``profs``:
        the points of the profiles that :mod:`._stacked` solves, together; None if none is."""
        # (each profile calls its ProfileLoglik's loglik_at)
        lls = [getattr(p._loglik_at, "__self__", None) for p in profs]
        use = np.array([isinstance(ll, lik.ProfileLoglik) and _stacked.eligible(ll)
                        for ll in lls], dtype=bool)
        if not use.any():
            return None

        def evaluate(pos, values):
            out = np.full(values.size, np.nan)
            mine = use[pos]
            out[mine] = _stacked.profile_points([lls[i] for i in pos[mine]], values[mine])
            return out
        return evaluate

    @functools.cached_property
    def _profile_ci(self) -> pd.DataFrame:
        """Profile intervals at the default ``alpha = 0.05``."""
        return self._profile_intervals(0.05)

    def bartlett_factors(self, n_boot: int = 200, rng=0) -> pd.Series:
        """Bootstrap Bartlett factors ``E[R(p)]`` of the profile statistics (see
        :meth:`conf_int` with ``kind="bartlett"``).

        Parameters
        ----------
        n_boot : int
            Parametric-bootstrap resamples (of the lab and field histograms).
        rng : int, numpy.random.Generator or None
            Random source: an int seed (default 0: the same resamples, and so the same factors,
            on every call), or a Generator / None for fresh draws.

        Returns
        -------
        pandas.Series
            The mean bootstrap statistic ``R*(p_hat)`` per (group, class), with
            ``attrs["n_usable"]`` the resamples that could be fitted and
            ``attrs["boundary_share"]`` (an array in the Series' order) the share of them whose
            estimate of the rate lies on the boundary 0 or 1.
        """
        if self.constraint.kind != "free":
            raise ValueError("Bartlett factors are available for the unrestricted fit only")
        _check_n_boot(n_boot)
        gen = check_rng(rng)
        R, at_bound = lik.bootstrap_lr(self._d, self._record.estimate, list(self._free_index),
                                       int(n_boot), gen, self._record.options)
        ok = np.isfinite(R).all(axis=1)
        out = pd.Series(R[ok].mean(axis=0) if ok.any() else np.nan,
                        index=self._params.index.copy(), name="Bartlett factor")
        out.attrs["n_usable"] = int(ok.sum())
        out.attrs["boundary_share"] = (at_bound[ok].mean(axis=0) if ok.any()
                                       else np.full(R.shape[1], np.nan))
        return out

    def conf_int(self, alpha: float = 0.05, kind: str = "profile", *, n_boot: int = 200,
                 rng=0) -> pd.DataFrame:
        """Confidence intervals for the base rates: profile likelihood (default), Wald, or
        profile likelihood with a bootstrap Bartlett correction of the cut-off.

        Rows are (group, class); binary classifiers give class 1 only.

        Parameters
        ----------
        alpha : float
            Significance level in (0, 0.5]: the intervals have level ``1 - alpha``.
        kind : {"profile", "wald", "bartlett"}
            Profile: the limits solve ``R(v) = chi2_{1, 1 - alpha}`` by root-finding; a limit
            at 0 or 1 is one-sided (the profile never reaches the cut-off). Under the joint
            likelihood a fit of one group is checked beyond its limits for another part of
            the confidence set, and gets the set's hull where there is one (a
            ``ConfidenceSetWarning``; with several groups or a penalty, RegressionURC's, the
            check is not run, see ``profile(group, cls).hull()``). Wald:
            ``estimate -/+ z se`` with ``se`` from the observed information (``bse``), which
            can leave [0, 1], and NaN where the estimate is on the boundary. Near 0 or 1 it
            misses on one side: at a true base rate of 0.05 (binary, lab 500, field 5000,
            2000 replicates; session 75's audit) it covered 86.5% (NaN in 9% of fits; the
            others missed only below), the profile interval 95.2% with balanced tails; at
            0.3 both covered 95-96%. Bartlett: the profile interval with the cut-off
            ``b chi2_{1, 1 - alpha}``, ``b`` the mean of the profile statistic at the
            estimate over a parametric bootstrap of the histograms from the fitted model
            (:meth:`bartlett_factors`; ``E R = 1`` for an exact chi-square(1)); where at
            least :data:`~puinfer.inference.profile.NEAR_BOUNDARY_SHARE` of the resamples'
            estimates of a rate lie on the boundary 0 or 1, its factor is at least 1 (there
            ``R*`` is about 0 in most resamples, and a factor of 0.006 narrowed the interval
            130 times at a rate estimated at 0). With maximum
            likelihood (``fit(lab_pseudocount=0)``) and small lab sets ``R`` runs about 10-20%
            above chi-square(1); the defaults (the lab pseudo-counts, fewer cells for small
            lab sets) remove most of that, so the plain profile interval is the default and
            this correction an option for a remaining doubt
            (``studies/results/urc_labdesign.md``). It costs ``n_boot`` refits per base rate
            (0.9-3.1 s with ``n_boot = 200`` against 0.03-0.15 s for the profile intervals,
            lab 100-1000, field 3000, one core). (``"bootstrap"`` is not available for URC.)
        n_boot : int
            Bootstrap resamples for ``kind="bartlett"``.
        rng : int, numpy.random.Generator or None
            Random source for ``kind="bartlett"``: an int seed (default 0, the same interval
            on every call) or a Generator / None for fresh draws.

        Returns
        -------
        pandas.DataFrame
            Columns ``lower`` and ``upper`` (``kind="bartlett"`` adds ``factor``, the one
            used, and ``boundary_share``).

        Notes
        -----
        The profile intervals at ``alpha = 0.05`` are cached; other levels reuse the cached
        profile evaluations.
        """
        alpha = check_alpha(alpha)
        if kind not in ("profile", "wald", "bartlett"):
            raise ValueError(f"kind must be 'profile', 'wald' or 'bartlett' for "
                             f"{type(self.model).__name__}; got {kind!r}")
        # the bootstrap's options are checked whichever the kind (an invalid n_boot or rng was
        # ignored silently by the profile and Wald intervals)
        _check_n_boot(n_boot)
        check_rng(rng)
        if kind == "wald":
            return super().conf_int(alpha)
        if kind == "bartlett":
            b = self.bartlett_factors(n_boot, rng)
            factor = b.to_numpy()
            # where the bootstrap world is on or near the boundary (as DETM's calibrated
            # cut-off, NEAR_BOUNDARY_SHARE of the resamples' estimates on it), R* is about 0
            # in most resamples and the factor collapses: at a rate estimated at 0 it was
            # 0.006 (an interval 130 times narrower than the profile's), and the intervals
            # covered 64% at a true rate of 0.01 (session 85's audit); the cut-off is then at
            # least chi-square's
            near = np.asarray(b.attrs["boundary_share"]) >= NEAR_BOUNDARY_SHARE
            factor = np.where(near, np.maximum(factor, 1.0), factor)
            # the corrected cut-off itself (as the level whose chi-square(1) quantile it is,
            # clipped to at most 0.5, a cut-off below 0.455 became 0.455)
            out = self._profile_intervals(alpha, stats.chi2.ppf(1 - alpha, 1) * factor)
            return out.assign(factor=factor, boundary_share=b.attrs["boundary_share"])
        if alpha == 0.05:
            return self._profile_ci.copy()
        return self._profile_intervals(alpha)

    # -- recalibration --------------------------------------------------------------------------
    def recalibrate(self, pred, groups=None, *, old_prior=None):
        """Recalibrate predictions to the estimated field base rates (Lemma 3, Algorithm 1).

        Parameters
        ----------
        pred : array_like, pandas.Series or pandas.DataFrame
            Predictions of the same classifier (vector of ``P(Y = 1)``, an ``(n, 2)`` matrix
            for binary, or an ``(n, k)`` matrix). A DataFrame's columns are matched to the
            classes by name when the lab predictions named them (see :class:`URC`).
        groups : array_like or pandas.Series, optional
            Group of each prediction; required when several groups were fitted. Each row is
            recalibrated with its group's estimated base rates. **Alignment**: when ``pred``
            and ``groups`` are pandas objects their rows are matched on the index (the same
            labels, each once; otherwise a ``ValueError``), never by position; an array or list
            is matched by position and must have the same length.
        old_prior : float, array_like or pandas.Series, optional
            The base rates the classifier is calibrated for; default the lab base rates.
            Binary: ``P(Y = 1)`` in (0, 1) (or both shares); multiclass: ``k`` positive shares
            summing to 1 in the class order, or a Series indexed by the classes (matched by
            name).

        Returns
        -------
        numpy.ndarray, pandas.Series or pandas.DataFrame
            ``P_field(Y | C)`` by eqs. (5)-(6), in the shape and column order of ``pred``. When
            ``pred`` or ``groups`` is a pandas object the result is one too and carries the
            index of the first of them (``pred``'s, else ``groups``'), in that order.

        Raises
        ------
        ValueError
            Naming ``pred``, ``groups`` or ``old_prior``: predictions that are not
            probabilities, columns that are not the classes, inputs that cannot be aligned,
            missing or unknown groups, or an ``old_prior`` that is not a vector of positive
            class shares summing to 1.
        """
        m, P = self.model, np.array(self._P)
        check_rowwise(pred, "pred")
        if groups is None and len(self._groups) > 1:
            raise ValueError("groups: several groups were fitted; give each prediction's group")
        if groups is not None:
            check_rowwise(groups, "groups")
        al, index = align_rows({"pred": pred, "groups": groups})
        inp, arr = m._pred_input(al["pred"], "pred")
        old = self._d.pi_lab.copy() if old_prior is None else \
            rates_vector(old_prior, "old_prior", m.classes, open_=True)
        n = arr.shape[0]
        if groups is None:
            newp = np.broadcast_to(P[0], (n, P.shape[1]))
        else:
            g = al["groups"]
            if isinstance(g, pd.DataFrame):
                if g.shape[1] != 1:
                    raise ValueError("groups must be one label per row; got a DataFrame with "
                                     f"{g.shape[1]} columns")
                g = g.iloc[:, 0]
            gser = g.reset_index(drop=True) if isinstance(g, pd.Series) else \
                pd.Series(label_array(g).ravel())
            if len(gser) != n:
                raise ValueError(f"groups has {len(gser)} entries; pred has {n} rows")
            if gser.isna().any():
                raise ValueError(f"groups has {int(gser.isna().sum())} missing value(s)")
            pos = pd.Index(self._groups).get_indexer(gser)
            if np.any(pos < 0):
                bad = pd.unique(gser[pos < 0])[:5].tolist()
                raise ValueError(f"groups: {bad} were not among the fitted groups "
                                 f"{self._groups.tolist()}")
            newp = P[pos]
        # Lemma 3 (adjust_prior) on validated arrays only, so that it cannot fail on an
        # argument the caller did not pass
        newp = np.clip(newp, 0.0, 1.0)
        newp = newp / newp.sum(axis=1, keepdims=True)
        if arr.ndim == 1:
            p1 = adjust_prior(arr, float(old[1]), np.ascontiguousarray(newp[:, 1]))
            out = np.column_stack([1 - p1, p1])
        else:
            out = adjust_prior(arr, old, np.ascontiguousarray(newp))
        return self._wrap_recalibrated(out, inp, pred, index, arr.ndim == 1)

    def _wrap_recalibrated(self, out, inp, pred, index, binary_vector):
        """Put the recalibrated ``(n, k)`` matrix in ``pred``'s shape, columns and index."""
        if inp.columns is not None:  # a DataFrame: its columns in its order
            if inp.order is not None:  # (matched by name: the classes the columns name)
                vals = out[:, inp.order]
            elif len(inp.columns) == 1:
                vals = out[:, 1:2]
            else:
                vals = out
            return pd.DataFrame(vals, index=index, columns=inp.columns)
        raw_ndim = inp.arr.ndim
        if binary_vector and raw_ndim == 1:
            # (a Series named as a class: that class's probability)
            res = out[:, 1 if inp.order is None else int(inp.order[0])]
            if index is None:
                return res
            return pd.Series(res, index=index,
                             name=pred.name if isinstance(pred, pd.Series) else None)
        if binary_vector and inp.arr.shape[1] == 1:
            out = out[:, 1:2]
        if index is None:
            return out
        cols = list(self.model.classes) if out.shape[1] == self.model.n_classes else None
        return pd.DataFrame(out, index=index, columns=cols)

    # -- presentation ---------------------------------------------------------------------------
    def _table(self, alpha=0.05) -> pd.DataFrame:
        pidx = self._params.index
        cols = {"estimate": self.params}
        if self.constraint.kind == "free":  # (a restricted fit has no intervals)
            try:
                ci = self.conf_int(alpha)
            except ProfileError:  # (said by summary(); shown as NA, the estimates still are)
                ci = pd.DataFrame(np.nan, index=pidx, columns=["lower", "upper"])
            lower, upper = interval_labels(alpha)
            cols.update({"std err": self.bse, lower: ci["lower"], upper: ci["upper"]})
        return pd.DataFrame({
            **cols,
            "naive": self.naive.stack().reindex(pidx).to_numpy(),
            "lab sample": self.lab_base_rates.reindex(
                pidx.get_level_values("class")).to_numpy(),
        }, index=pidx)

    def update(self, formula=None, **fit_kwargs):
        """Not available: the results keep the field histogram, not the field predictions
        that ``fit`` takes (the inherited ``update`` called ``fit()`` without them, a
        ``TypeError`` about a missing argument; session 85's audit). Fit again with
        ``model.fit(field_pred, ...)`` and the changed options."""
        raise NotImplementedError(
            f"{type(self).__name__}.update: the results keep the field histogram, not the "
            "field predictions; fit again with model.fit(field_pred, ...) and the changed "
            "options")

    def summary(self, alpha: float = 0.05) -> Summary:
        """Base rates with profile intervals, the naive estimator, the tests and convergence.

        Parameters
        ----------
        alpha : float
            Significance level of the intervals (level ``1 - alpha``).

        Returns
        -------
        Summary
        """
        alpha = check_alpha(alpha)
        m = self.model
        free = self.constraint.kind == "free"
        s = Summary("Unsupervised recalibration (URC): field base rates" if free else
                    "Unsupervised recalibration (URC): restricted fit (a test's null)")
        if not free:
            s.add_info("Restriction", self._restriction)
        for key, value in [
                ("Likelihood", "joint (lab + field)" if self._d.joint else "fixed M_A (paper)"),
                ("Lab design", _DESIGN_TEXT[self.lab_design]),
                ("Classes", m.n_classes),
                ("Cells |A|", f"{m.partition.n_cells} (n_bins "
                 f"{getattr(m, 'n_bins_choice', 'given')})"),
                ("Partition", m.partition.kind), ("Lab n", m.n_lab),
                ("Field N", int(self._d.F.sum())), ("Groups", len(self._groups)),
                ("Prior strength", self.prior_strength),
                ("Lab pseudo-counts per cell", f"{self.lab_pseudocount:g}"
                 + (f" ({self.lab_prior})" if self.lab_prior else "")),
                ("Log-likelihood", self.llf)]:
            s.add_info(key, value)
        s.add_info("Lab rows dropped (missing)", m.n_dropped)
        s.add_info("Field rows dropped (missing)", self.n_dropped)
        if self.prior_strength > 0 or self.lab_pseudocount > 0 or self._d.penalty is not None:
            # (RegressionURC's smoothness penalty too: its tests compare these, session 83's
            # audit found only the unpenalised value shown beside a test of the penalised)
            s.add_info("Penalised log-likelihood", self.llf_penalized)
        s.add_info("cond(M_A)", m.condition_number)
        s.add_info("Converged", self.converged)
        n_random = getattr(self._record.options, "random_starts", 0)
        if n_random and self._d.joint:  # (the fixed likelihood has one maximum: none used)
            s.add_info("Random starts", f"{n_random} (seed {self._record.options.seed})")
        if not free:
            # (the restricted fit's own profiles and tests are not offered: it is the null of a
            # test of the free fit, compared with it by lr_test)
            s.add_table("Base rates under the restriction", self._table(alpha))
            s.add_note("A restricted fit: no intervals or tests of its own; compare it with "
                       "the free fit by puinfer.lr_test(restricted, free) (the free fit's "
                       "test_no_shift / test_equal_base_rates).")
        else:
            s.add_table(f"Base rates ({level_label(1 - alpha)} profile-likelihood intervals)",
                        self._table(alpha))
            try:
                self.conf_int(alpha)
            except ProfileError as exc:
                # (session 68's audit: summary() raised it; the table shows NA instead)
                s.add_note(f"Intervals not available: {exc}")
            several = len(self._groups) > 1
            tests = []
            for name, test in [("no shift", self.test_no_shift)] + (
                    [("equal base rates", self.test_equal_base_rates)] if several else []):
                try:
                    tests.append(test())
                except ValueError as exc:
                    # a test's null fit above the free fit: the fit is not the global
                    # maximum (session 68's audit: summary() raised lr_test's refusal)
                    s.add_note(f"Test of {name} not available: {exc}")
                    tests.append(HypothesisTestResult.invalid(str(exc), null=name,
                                                              method=name))
            s.add_table("Likelihood-ratio and chi-square tests (reference: the p-value's "
                        "distribution)",
                        _tests_table(tests + [self.gof()], several, self._d.random_lab))
        s.add_note(self.convergence.line())
        if self.prior_strength > 0:
            s.add_note("With a prior the estimates are MAP; intervals and tests use the "
                       "penalised log-likelihood (approximate).")
        if self.lab_pseudocount > 0:
            A = self.model.partition.n_cells
            which = None  # the named priors among uniform pseudo-counts
            if np.isclose(self.lab_pseudocount, 1 / A):
                which = "Perks' prior, 1/|A|, one per class"
                if A == 2:
                    which += "; with |A| = 2 also Firth's penalty"
            elif self.lab_pseudocount == 0.5:
                which = "Firth's penalty"
            spread = ("spread as the pooled lab histogram, shrinking each class's histogram "
                      "towards the lab marginal" if self.lab_prior == "pooled" else
                      "the same in every cell" + (f": {which}" if which else ""))
            s.add_note(f"M_A is penalised: {self.lab_pseudocount:g} pseudo-counts per lab cell "
                       f"on average ({spread}); estimates, profile intervals and tests use the "
                       "penalised likelihood, which holds the level at small lab sets; "
                       "lab_pseudocount=0 gives maximum likelihood.")
        for cat, msg in self.warnings:
            s.add_note(f"{cat}: {msg}")
        return s

    def plot_histogram(self, group=None, ax=None):
        """Observed field histogram against the fitted one (and the no-shift expectation).

        The cells are labelled with their ranges of predictions (the partition's edges).

        Returns
        -------
        matplotlib.axes.Axes
        """
        from ...plotting import get_ax, plain_text

        ax = get_ax(ax)
        g = self._group_pos(group)
        F = self._d.F[g]
        x = np.arange(F.size)
        ax.bar(x, F / F.sum(), width=0.7, color="lightgrey", edgecolor="grey", label="observed")
        ax.plot(x, self._P[g] @ self._Mhat, "o-", color="tab:blue", label="fitted $M_A' \\hat p$")
        ax.plot(x, self._d.pi_lab @ self._d.M_lab, "s--", color="tab:red",
                label="no shift (lab base rates)")
        # each cell by its range of predictions (the partition's edges), not by its number
        labels = list(self.model.partition.labels)
        long = max(len(t) for t in labels) > 12 or len(labels) > 6
        ax.set_xticks(x, labels, rotation=30 if long else 0, ha="right" if long else "center",
                      fontsize="small")
        ax.set_xlabel("cell of the partition (range of predictions)")
        ax.set_ylabel("share of field predictions")
        ax.set_title(f"URC histogram: {plain_text(self._groups[g])}")
        ax.legend(fontsize="small")
        return ax

    def plot_profile(self, group=None, cls=None, alpha: float = 0.05, ax=None,
                     true_value=None):
        """Profile likelihood-ratio curve of a base rate with the cut-off and the interval.

        Returns
        -------
        matplotlib.axes.Axes
        """
        return self.profile(group, cls).plot(ax=ax, alpha=alpha, true_value=true_value)

    @property
    def _restriction(self) -> str:
        """What a restricted fit holds fixed, in words."""
        con = self.constraint
        if con.kind == "pooled":
            return ("every group's base rates equal to the lab population's (estimated from "
                    "the lab class counts and the field histograms together)")
        if con.kind == "equal":
            return "one set of base rates shared by all groups"
        if con.kind == "rows":
            # (the value is one k-vector, broadcast to every group)
            rates = ", ".join(f"{c}: {v:.4g}" for c, v in
                              zip(self.model.classes, np.ravel(con.value), strict=True))
            return f"every group's base rates fixed at ({rates})"
        return con.kind

    def __repr__(self):
        kind = "" if self.constraint.kind == "free" else f", restricted: {self._restriction}"
        return (f"<URCResults: {len(self._groups)} group(s), {self.model.n_classes} classes, "
                f"likelihood={self.likelihood}, llf={self.llf:.4f}{kind}>")
