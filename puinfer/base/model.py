"""Model base class: data and options in, ``fit()`` out; formulas built once here.

A model holds validated data and its options, never a fit. ``fit()`` does all of the
estimation and returns an immutable results object. Models built from a formula keep the
:class:`~puinfer.formula.Design`, so that ``predict(newdata)`` evaluates the same formula (with
the stateful transforms learned on the fitting data) on new data; the design pickles.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .._validation import as_float_matrix, refuse_dask
from ..formula import Design, build_design
from .results import ReadOnlyArrays

__all__ = ["Model", "update_formula"]

# a "." standing alone (not part of a name or a number such as 1.5 or x.1)
_DOT = re.compile(r"(?<![\w.])\.(?![\w.])")


def update_formula(old: str, new: str) -> str:
    """R's ``update.formula``: ``new`` with each ``.`` replaced by the same side of ``old``.

    >>> update_formula("y ~ x1 + x2", ". ~ . - x2")
    'y ~ (x1 + x2) - x2'
    >>> update_formula("y ~ x1", "~ . + x2")
    'y ~ (x1) + x2'
    """
    if not isinstance(new, str) or "~" not in new:
        raise ValueError(f"formula must be a string with '~' (e.g. '. ~ . - x2'); got {new!r}")
    old_lhs, old_rhs = (s.strip() for s in old.split("~", 1))
    new_lhs, new_rhs = (s.strip() for s in new.split("~", 1))
    if not new_lhs:
        new_lhs = old_lhs  # "~ . + x2" keeps the response, as R does
    lhs = _DOT.sub(lambda _: old_lhs, new_lhs)
    rhs = _DOT.sub(lambda _: f"({old_rhs})", new_rhs)
    if _DOT.search(new_lhs) and not old_lhs:
        raise ValueError(f"formula {new!r}: '.' on the left but {old!r} has no left-hand side")
    return f"{lhs} ~ {rhs}".strip()


class Model(ReadOnlyArrays):
    """Base of every puinfer model.

    Subclasses implement ``_from_design(design, data, **kwargs)`` (build the model from the
    design of a formula) and ``fit(...)``; they set ``exog_names`` (the feature names) and
    ``design`` (the :class:`~puinfer.formula.Design`, or None without a formula).

    Attributes
    ----------
    formula : str or None
    design : Design or None
    exog_names : list of str
    missing : {"raise", "drop"}
        How missing values were handled (R's ``na.action``).
    n_dropped : int
        Rows dropped for missing values (``missing="drop"``); shown by ``summary()``.
    """

    #: whether the formula must have a left-hand side (True), must not (False), or either (None)
    _formula_lhs: bool | None = True
    design: Design | None = None
    #: the feature names, held as a tuple (``exog_names`` hands out a list)
    _exog_names: tuple = ()
    missing: str = "raise"
    n_dropped: int = 0
    #: whether ``exog_names`` came from the caller's pandas columns (not generated for arrays)
    _named_features: bool = False

    @property
    def exog_names(self) -> list[str]:
        """The feature names (a new list on each call: editing it changes nothing; a list the
        model handed out used to be its own, and ``exog_names.reverse()`` made later
        predictions read the wrong columns, session 83's audit)."""
        return list(self._exog_names)

    @exog_names.setter
    def exog_names(self, names) -> None:  # (also what a pickle of an earlier version sets)
        self._exog_names = tuple(names)

    @property
    def formula(self) -> str | None:
        """The formula the model was built from (None if built from arrays)."""
        if self.design is None:  # (a model of Dask collections keeps the formula's text)
            return self.__dict__.get("_formula_text")
        return self.design.formula

    @classmethod
    def from_formula(cls, formula: str, data: pd.DataFrame, *, missing: str = "raise",
                     **kwargs):
        """Build the model from an R-style formula evaluated on ``data``.

        ``data`` is not modified; the model's rows carry ``data``'s index. ``missing``
        (``"raise"`` or ``"drop"``, R's ``na.action``) applies to the columns the formula uses:
        ``"drop"`` drops the rows with a missing value there, and ``_from_design`` receives
        ``data`` without them (so that further row-wise arguments can be aligned to
        ``design.X.index``); the count is recorded in ``n_dropped``. The subclass's docstring
        says what the two sides mean and which further keyword arguments it takes.
        """
        original = data
        if isinstance(data, dict):  # (as build_design takes it; data[kept] below needs a frame)
            data = pd.DataFrame(data)
        design = build_design(formula, data, require_lhs=cls._formula_lhs, missing=missing)
        if design.kept is not None:
            data = data[design.kept]
        model = cls._from_design(design, data, **kwargs)
        # the subclass may add rows it dropped itself (e.g. from further arguments)
        model.missing = missing
        model.n_dropped = int(design.n_dropped + model.__dict__.get("n_dropped", 0))
        model._formula_call = {"data": original, "missing": missing, **kwargs}
        return model

    def update(self, formula: str | None = None, **kwargs):
        """The same model built again with a changed formula (R's ``update``).

        Parameters
        ----------
        formula : str, optional
            The new formula. A ``.`` stands for the current side, as in R:
            ``"labeled ~ . - x2"`` drops ``x2``, ``". ~ . + I(x1**2)"`` adds a term; a formula
            without ``.`` replaces the old one. Default: the current formula.
        **kwargs
            Further arguments of ``from_formula`` to change (e.g. ``missing="drop"``); the
            others are those the model was built with (the same data frame).

        Returns
        -------
        Model
            A new model of the same class (not fitted); this one is unchanged.

        Raises
        ------
        ValueError
            For a model not built by ``from_formula``.
        """
        call = self.__dict__.get("_formula_call")
        if call is None or self.formula is None:
            raise ValueError(f"update() needs a {type(self).__name__} built by from_formula "
                             "(this one was built from arrays); build the new model directly")
        new = self.formula if formula is None else update_formula(self.formula, formula)
        return type(self).from_formula(new, **{**call, **kwargs})

    @classmethod
    def _from_design(cls, design: Design, data: pd.DataFrame, **kwargs):
        raise NotImplementedError

    def exog(self, newdata) -> tuple[np.ndarray, pd.Index | None]:
        """The model's features for ``newdata`` as a float array, with the rows' index.

        With a formula, the formula's right-hand side (without the intercept column) is
        evaluated on ``newdata``; without one, a DataFrame's (or a dict's) columns are selected
        by name (never by position) and an array must have the model's number of columns.
        """
        # (a Dask DataFrame was refused as "must be a DataFrame ...; got DataFrame"; session
        # 85's audit)
        refuse_dask(newdata, "newdata")
        if self.design is not None:
            if not isinstance(newdata, (pd.DataFrame, dict)):
                raise TypeError("newdata must be a DataFrame with the formula's columns "
                                f"({self.formula!r}); got {type(newdata).__name__}")
            X = self.design.transform(newdata).drop(columns="Intercept", errors="ignore")
            return X.to_numpy(dtype=float), X.index
        names = list(self.exog_names)
        index = None
        if isinstance(newdata, dict):
            # a dict of columns, as for a formula model (session 74's audit: it was read as an
            # array, "newdata must be numeric; got values that cannot be converted to float")
            from ..formula import _as_frame

            newdata = _as_frame(newdata, "newdata")
        if isinstance(newdata, pd.DataFrame):
            cols = [str(c) for c in newdata.columns]
            missing = [c for c in names if c not in cols]
            if missing:
                raise ValueError(f"newdata lacks the model's column(s) {missing}")
            index = newdata.index
            newdata = newdata.rename(columns=str)[names]
        elif isinstance(newdata, pd.Series):
            index = newdata.index
            if self._named_features and newdata.name is not None and \
                    str(newdata.name) not in names:
                # (a named Series is a column like a DataFrame's: matched by name, never by
                # position; session 67's audit found a Series x2 predicted as feature x1)
                raise ValueError(f"newdata: the Series is named {newdata.name!r}, not a "
                                 f"feature of the model ({names}); a named Series is matched "
                                 "by name (rename it, or pass its values)")
        X, _ = as_float_matrix(newdata, "newdata")
        if X.shape[1] != len(names):
            raise ValueError(f"newdata has {X.shape[1]} columns; the model has {len(names)} "
                             f"({names})")
        return X, index

    def __repr__(self):
        what = f"formula={self.formula!r}" if self.formula else f"features={self.exog_names}"
        return f"<{type(self).__name__}: {what}>"

    # -- read-only once fitted ---------------------------------------------------------------
    # Results keep a reference to their model and read its data, design and options when they
    # compute intervals, tests, predictions and summaries; rebinding one of those after a fit
    # would change results already built (a fitted DETM's SCAR statistic 0.82 -> 177 after
    # ``model.data = other``, session 67's audit). The first results built from a model make
    # its public attributes read-only (Results.__init_subclass__ calls _freeze).
    def _freeze(self) -> None:
        object.__setattr__(self, "_fitted", True)

    def __copy__(self):
        # a copy has no results yet: its attributes may be set until it is fitted
        # (studies/urc_labdesign.py refits a copy with another partition)
        new = type(self).__new__(type(self))
        new.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_fitted"})
        return new

    def __setattr__(self, name, value):
        self._check_unfrozen(name, "set")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._check_unfrozen(name, "delete")
        object.__delattr__(self, name)

    def _check_unfrozen(self, name: str, what: str) -> None:
        if not name.startswith("_") and self.__dict__.get("_fitted", False):
            raise AttributeError(
                f"{type(self).__name__} has been fitted: its attributes are read-only so that "
                f"its results stay as fitted (cannot {what} {name!r}); build a new model "
                "instead (for a model built from a formula, update() changes its formula or "
                "arguments)")
