"""Results base class: estimates, log-likelihood, covariance, Wald inference, presentation."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from .._validation import check_level

__all__ = ["ConvergenceInfo", "LikelihoodResults", "data_fingerprint"]


def data_fingerprint(*arrays) -> str:
    """A hash of the data a model was fitted to, so that tests can refuse mismatched fits."""
    h = hashlib.sha1()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a, dtype=float))
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class ConvergenceInfo:
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

    def line(self) -> str:
        """A one-line description for summaries."""
        state = "converged" if self.converged else "NOT converged"
        g = "" if np.isnan(self.grad_norm) else f", |grad| = {self.grad_norm:.2e}"
        return f"{self.method}: {state} in {self.iterations} iterations{g}" + (
            f" ({self.message})" if self.message else "")


class LikelihoodResults:
    """Base class of every puinfer results object.

    Subclasses set, in ``__init__``: ``model``, ``_params`` (pandas Series), ``_cov``
    (DataFrame or None), ``llf``, ``nobs``, ``df_model`` (number of free parameters),
    ``llf_kind`` (how the log-likelihood was computed: only equal kinds can be compared),
    ``data_fingerprint``, ``model_name``, ``convergence`` and ``warnings``.
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

    @property
    def bse(self) -> pd.Series:
        """Standard errors of the parameters."""
        if self._cov is None:
            return pd.Series(np.nan, index=self._params.index, name="std err")
        return pd.Series(np.sqrt(np.clip(np.diag(self._cov.to_numpy()), 0, None)),
                         index=self._cov.index, name="std err").reindex(self._params.index)

    @property
    def zvalues(self) -> pd.Series:
        """Wald z statistics (estimate / standard error)."""
        return self._params / self.bse

    @property
    def pvalues(self) -> pd.Series:
        """Two-sided Wald p-values for H0: parameter = 0."""
        return pd.Series(2 * stats.norm.sf(np.abs(self.zvalues)), index=self._params.index)

    def conf_int(self, level: float = 0.95) -> pd.DataFrame:
        """Wald confidence intervals ``estimate -/+ z_{(1+level)/2} * se``."""
        level = check_level(level)
        q = stats.norm.ppf(0.5 + level / 2)
        se = self.bse
        return pd.DataFrame({"lower": self._params - q * se, "upper": self._params + q * se})

    # -- information criteria --------------------------------------------------------------
    @property
    def aic(self) -> float:
        """Akaike information criterion, ``-2 llf + 2 df_model``."""
        return -2 * self.llf + 2 * self.df_model

    @property
    def bic(self) -> float:
        """Bayesian information criterion, ``-2 llf + log(nobs) df_model``."""
        return -2 * self.llf + np.log(self.nobs) * self.df_model

    @property
    def objective(self) -> float:
        """The maximised objective used by likelihood-ratio tests and profiles.

        Equal to ``llf`` unless the model maximised a penalised likelihood, in which case it is
        the penalised value (so that nested fits compare the quantities actually maximised).
        """
        return self.llf

    @property
    def converged(self) -> bool:
        """Whether the optimiser met its convergence criterion."""
        return self.convergence.converged

    # -- nesting for lr_test -----------------------------------------------------------------
    def is_nested_in(self, other: LikelihoodResults) -> bool:
        """Whether this model is a restriction of ``other`` (used by :func:`puinfer.lr_test`)."""
        return False

    # -- presentation ---------------------------------------------------------------------
    def summary(self):
        raise NotImplementedError

    def __str__(self):
        return str(self.summary())

    def _repr_html_(self):
        return self.summary().as_html()

    def __repr__(self):
        return f"<{type(self).__name__}: {self.model_name}, llf={self.llf:.4f}, nobs={self.nobs}>"
