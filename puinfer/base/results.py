"""Results base classes: immutable, picklable, statsmodels-like.

Every puinfer results object is built once, by its model's ``fit()``, from a typed fit record
(a frozen dataclass). After construction it cannot be changed: setting or deleting an
attribute raises ``AttributeError``. Derived values (covariances, profiles, intervals, tests)
are ``functools.cached_property``: computed on first use, stored, never recomputed, and
pickled with the object (so a result that has shown its summary once never refits).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from .._validation import check_alpha
from .numeric import sqrt_variances

__all__ = ["ConvergenceInfo", "Results", "LikelihoodResults", "InformationCriteria",
           "data_fingerprint", "readonly", "wald_conf_int", "wald_pvalues"]


def data_fingerprint(*arrays) -> str:
    """A hash of the data a model was fitted to, so that tests can refuse mismatched fits."""
    h = hashlib.sha1()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a, dtype=float))
        h.update(str(a.shape).encode())
        h.update(a.data)  # the buffer itself: the bytes of a.tobytes() without their copy
    return h.hexdigest()


def readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (results hand out arrays that cannot be changed in place)."""
    a = np.asarray(a).view()
    a.flags.writeable = False
    return a


class ReadOnlyArrays:
    """Mixin: numpy does not pickle an array's write flag, so on unpickling the arrays among
    the attributes become read-only views again (models, results and their records hand out
    read-only arrays; a pickle round trip keeps it so)."""

    def __setstate__(self, state):
        for name, value in state.items():
            object.__setattr__(self, name, _readonly_in(value))


def _readonly_in(value):
    """``value`` with its arrays (itself, or the items of a tuple) as read-only views."""
    if isinstance(value, np.ndarray):
        return readonly(value)
    if type(value) is tuple and any(isinstance(v, np.ndarray) for v in value):
        return tuple(readonly(v) if isinstance(v, np.ndarray) else v for v in value)
    return value


def freeze_arrays(obj) -> None:
    """Replace every numpy array among ``obj``'s attributes by a read-only view of it: a
    model's data, which its results read, cannot be written into through them (the caller's
    arrays are views' bases only where the model copied them)."""
    for name, value in list(vars(obj).items()):
        if isinstance(value, np.ndarray):
            object.__setattr__(obj, name, readonly(value))


class FrozenDict(dict):
    """A dict that refuses changes (the details of a cached test result, which several calls
    hand out); it pickles, and ``copy()`` gives a plain dict."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("this mapping is read-only (part of a result); copy it with dict(...) "
                        "to change it")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def copy(self) -> dict:
        return dict(self)

    def __hash__(self):
        # (read-only, so hashable where its values are: a frozen test result holding one
        # could not be hashed, session 67's audit)
        return hash(frozenset(self.items()))

    def __reduce__(self):
        return (type(self), (dict(self),))


@dataclass(frozen=True)
class ConvergenceInfo(ReadOnlyArrays):
    """How an optimiser finished.

    Attributes
    ----------
    converged : bool
    iterations : int
    method : str
        The algorithm (e.g. ``"Newton (profile log-EL)"``).
    message : str
        Why it stopped.
    trace : numpy.ndarray
        The objective at each iteration.
    grad_norm : float
        Max-norm of the gradient of the objective at the solution.
    """

    converged: bool
    iterations: int
    method: str
    message: str = ""
    trace: np.ndarray = field(default_factory=lambda: np.empty(0))
    grad_norm: float = float("nan")

    def __post_init__(self):
        object.__setattr__(self, "trace", readonly(np.asarray(self.trace, dtype=float)))

    def line(self) -> str:
        """A one-line description for summaries."""
        state = "converged" if self.converged else "NOT converged"
        g = "" if np.isnan(self.grad_norm) else f", |grad| = {self.grad_norm:.2e}"
        return f"{self.method}: {state} in {self.iterations} iterations{g}" + (
            f" ({self.message})" if self.message else "")


def _freeze_model(results) -> None:
    """Make the model that ``results`` read read-only: it must not change under them."""
    freeze = getattr(results.__dict__.get("model"), "_freeze", None)
    if callable(freeze):
        freeze()


class Results(ReadOnlyArrays):
    """Base of every puinfer results object: immutable once its ``__init__`` has run.

    Subclasses set their attributes in ``__init__`` as usual; when the most-derived
    ``__init__`` returns, the object is frozen. ``functools.cached_property`` values are
    stored directly in the instance dictionary, so they still work (and are pickled).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        @functools.wraps(init)
        def __init__(self, *args, **kw):
            # freeze when the outermost __init__ returns (subclass inits may call super())
            depth = self.__dict__.get("_init_depth", 0)
            object.__setattr__(self, "_init_depth", depth + 1)
            try:
                init(self, *args, **kw)
            finally:
                object.__setattr__(self, "_init_depth", depth)
            if depth == 0:
                object.__delattr__(self, "_init_depth")
                object.__setattr__(self, "_frozen", True)
                _freeze_model(self)

        cls.__init__ = __init__

    def __setstate__(self, state):
        super().__setstate__(state)
        _freeze_model(self)  # (results pickled before models were frozen by their fits)

    def __setattr__(self, name, value):
        if self.__dict__.get("_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r} "
                                 "(fit the model again to change a result)")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if self.__dict__.get("_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")
        object.__delattr__(self, name)


def standard_errors(cov: pd.DataFrame | None, index: pd.Index) -> pd.Series:
    """Standard errors from a covariance matrix (its labelled diagonal), in the order of
    ``index``; all NaN if ``cov`` is None."""
    if cov is None:
        return pd.Series(np.nan, index=index, name="std err")
    # (a variance below 0 beyond rounding is no variance: NaN, not a standard error of 0
    # with z = -inf and p < 2e-16)
    se = sqrt_variances(np.diag(cov.to_numpy()))
    return pd.Series(se, index=cov.index, name="std err").reindex(index)


def wald_pvalues(params: pd.Series, se: pd.Series) -> pd.Series:
    """Two-sided Wald p-values ``2 P(|Z| > |params / se|)`` for H0: parameter = 0."""
    # (outputs on copies of the indexes: an Index's names can be set in place, and a
    # renamed level of the result's own index broke its summary; session 85's audit)
    se = se.reindex(params.index)  # (matched by label: params / se would sort the labels)
    return pd.Series(2 * stats.norm.sf(np.abs(params / se)), index=params.index.copy(),
                     name="P>|z|")


def wald_conf_int(params: pd.Series, se: pd.Series, alpha: float) -> pd.DataFrame:
    """Wald intervals ``params -/+ z_{1 - alpha/2} se`` (columns ``lower``, ``upper``)."""
    alpha = check_alpha(alpha)
    q = stats.norm.ppf(1 - alpha / 2)
    se = se.reindex(params.index)
    out = pd.DataFrame({"lower": params - q * se, "upper": params + q * se})
    return out.set_axis(out.index.copy())  # (the results' own index is never handed out)


class LikelihoodResults(Results):
    """Base class of the results of a likelihood fit, with statsmodels' attribute names.

    Subclasses set, in ``__init__``: ``model``, ``_params`` (pandas Series), ``llf``,
    ``nobs``, ``df_model`` (the number of free parameters), ``llf_kind`` (how the
    log-likelihood was computed: only equal kinds can be compared by :func:`lr_test`),
    ``data_fingerprint``, ``model_name``, ``convergence`` and ``warnings`` (a tuple of
    ``(category name, message)``); and either set ``_cov`` or define it as a cached property
    (a DataFrame, or None when there is no covariance estimate).

    ``llf`` is the maximised log-likelihood; ``llf_penalized`` the objective actually
    maximised (``llf`` minus a penalty or plus a log prior; equal to ``llf`` without one).
    Likelihood-ratio tests and profiles compare ``llf_penalized``.
    """

    model_name: str = "model"
    llf_kind: str = ""

    # -- estimates -----------------------------------------------------------------------
    @property
    def params(self) -> pd.Series:
        """Estimated parameters, labelled."""
        return self._params.copy()

    def cov_params(self) -> pd.DataFrame:
        """Estimated covariance matrix of the parameters."""
        if self._cov is None:
            raise NotImplementedError(f"{type(self).__name__} has no covariance estimate")
        return self._cov.copy()

    @functools.cached_property
    def _bse(self) -> pd.Series:
        return standard_errors(self._cov, self._params.index)

    @property
    def bse(self) -> pd.Series:
        """Standard errors of the parameters."""
        return self._bse.copy()

    @property
    def tvalues(self) -> pd.Series:
        """Wald z statistics (estimate / standard error); named as in statsmodels."""
        return (self._params / self._bse).rename("z")

    @property
    def pvalues(self) -> pd.Series:
        """Two-sided Wald p-values for H0: parameter = 0 (normal reference)."""
        return wald_pvalues(self._params, self._bse)

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Wald confidence intervals ``estimate -/+ z_{1 - alpha/2} * se`` (level ``1 - alpha``)."""
        return wald_conf_int(self._params, self._bse, alpha)

    @property
    def llf_penalized(self) -> float:
        """The maximised objective; equal to ``llf`` unless a penalty or prior was applied."""
        return self.llf

    @property
    def converged(self) -> bool:
        """Whether the optimiser met its convergence criterion."""
        return self.convergence.converged

    # -- nesting for lr_test -----------------------------------------------------------------
    def is_nested_in(self, other: LikelihoodResults) -> bool:
        """Whether this model is a restriction of ``other`` (used by :func:`puinfer.lr_test`)."""
        return False

    def _nesting(self, other: LikelihoodResults) -> str | None:
        """Why this fit cannot be tested as a restriction of ``other`` by :func:`puinfer.lr_test`
        (a sentence), or None when it can.

        The default asks for the same data (``data_fingerprint``), the same kind of
        log-likelihood (``llf_kind``) and :meth:`is_nested_in`; models that nest in further
        ways (covariate subsets, calibrator families, pooled groups) override it.
        """
        if self.data_fingerprint != other.data_fingerprint:
            return "the two models were not fitted to the same data"
        if self.llf_kind != other.llf_kind:
            return (f"the log-likelihoods were computed differently ({self.llf_kind!r} vs "
                    f"{other.llf_kind!r}); they cannot be compared")
        if not self.is_nested_in(other):
            return (f"{type(self).__name__} ({self.model_name}) is not nested in "
                    f"{type(other).__name__} ({other.model_name})")
        return None

    def _lr_notes(self, restricted: LikelihoodResults) -> dict:
        """Notes :func:`puinfer.lr_test` adds to its result's ``extra`` when this fit is the
        full model of the test (e.g. a caveat on the chi-square reference); none by default."""
        return {}

    def _llf_as_restriction_of(self, other: LikelihoodResults) -> float:
        """The maximised objective of this fit on the scale of ``other``'s (the two differ by a
        constant when the data are arranged differently, e.g. pooled vs grouped counts)."""
        return self.llf_penalized

    # -- refits ----------------------------------------------------------------------------
    #: the keyword arguments of the ``fit()`` call that made these results (:meth:`update`
    #: fits again with them); set by the model's ``fit`` (:meth:`_with_fit_options`)
    _fit_options: dict = {}

    def __getstate__(self):
        # a fit option that does not pickle (e.g. a known h given as a lambda) is left out
        # of the pickle: update() then takes that option's default unless it is given again
        state = dict(self.__dict__)
        opts = state.get("_fit_options")
        if opts:
            state["_fit_options"] = {k: v for k, v in opts.items() if _picklable(v)}
        return state

    def _with_fit_options(self, options: dict):
        """These results with the ``fit()`` options that made them recorded (part of their
        construction by the model's ``fit``); returns them."""
        object.__setattr__(self, "_fit_options", dict(options))
        return self

    def update(self, formula: str | None = None, **fit_kwargs):
        """Refit with a changed formula, as R's ``update(fit, . ~ . - x2)``.

        ``self.model.update(formula)`` (see :meth:`puinfer.base.model.Model.update`), then
        ``fit()`` with the options this fit was made with (e.g. the penalty, the interval
        method, the solver), those given here replacing them. Without ``formula`` the same
        model is fitted again with the changed options (a model built from arrays too).
        """
        model = self.model if formula is None else self.model.update(formula)
        return model.fit(**{**self._fit_options, **fit_kwargs})

    # -- presentation ---------------------------------------------------------------------
    def summary(self, alpha: float = 0.05):
        """A :class:`~puinfer.summary.Summary` (``as_text``, ``as_html``, ``as_latex``)."""
        raise NotImplementedError

    @functools.cached_property
    def _default_summary(self):
        return self.summary()

    def __str__(self):
        return self._default_summary.as_text()

    def _repr_html_(self):
        return self._default_summary.as_html()

    def __repr__(self):
        return f"<{type(self).__name__}: {self.model_name}, llf={self.llf:.4f}, nobs={self.nobs}>"


def _picklable(value) -> bool:
    import pickle

    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001 - whatever pickling raises, the value does not pickle
        return False
    return True


class InformationCriteria:
    """Mixin: AIC and BIC, for results whose ``llf`` is a genuine log-likelihood."""

    @property
    def aic(self) -> float:
        """Akaike information criterion, ``-2 llf + 2 df_model``."""
        return -2 * self.llf + 2 * self.df_model

    @property
    def bic(self) -> float:
        """Bayesian information criterion, ``-2 llf + log(nobs) df_model``."""
        return -2 * self.llf + np.log(self.nobs) * self.df_model
