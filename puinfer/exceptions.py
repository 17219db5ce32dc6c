"""Warning classes used across puinfer.

Every warning is also recorded on the results object that triggered it
(``results.warnings``), so that it is not lost when warnings are filtered.
"""

__all__ = [
    "PuinferWarning",
    "ConvergenceWarning",
    "BoundaryWarning",
    "SeparationWarning",
    "ClippingWarning",
    "StartsDisagreeWarning",
    "IllConditionedWarning",
    "ConfidenceSetWarning",
    "AssumptionWarning",
    "EmptyBinWarning",
    "LabelAmbiguityWarning",
    "BootstrapWarning",
    "PenaltyWarning",
    "InfluenceWarning",
    "GroupingWarning",
]


class PuinferWarning(UserWarning):
    """Base class of all puinfer warnings."""


class ConvergenceWarning(PuinferWarning):
    """An optimiser stopped before meeting its convergence criterion."""


class BoundaryWarning(PuinferWarning):
    """An estimate lies on (or numerically at) the boundary of the parameter space."""


class SeparationWarning(PuinferWarning):
    """The samples are (quasi-)separated, so the unpenalised maximum does not exist."""


class ClippingWarning(PuinferWarning):
    """Values were clipped into their valid range."""


class StartsDisagreeWarning(PuinferWarning):
    """Different starting values reached different local maxima."""


class IllConditionedWarning(PuinferWarning):
    """A matrix the estimate depends on is (nearly) singular."""


class EmptyBinWarning(PuinferWarning):
    """A bin of a partition holds no (or, for some class, no) reference observations."""


class AssumptionWarning(PuinferWarning):
    """The data cast doubt on an assumption the method rests on (e.g. CalEM's Assumption 1)."""


class ConfidenceSetWarning(PuinferWarning):
    """The profile-likelihood confidence set is not an interval (the profile is multimodal)."""


class LabelAmbiguityWarning(PuinferWarning):
    """A label-switching rule chose between two labellings whose comparison is within its
    sampling error (e.g. DETM's two KL divergences, or pi-hat and 0.5): the data barely
    determine which component is "positive"."""


class BootstrapWarning(PuinferWarning):
    """Some bootstrap resamples could not be used (the procedure failed on them), so the
    reference distribution rests on the others, which need not be a random subset."""


class PenaltyWarning(PuinferWarning):
    """A penalty meant to vanish (a default ridge) moves an estimate by a material part of its
    standard error away from the unpenalised maximum nearby: the estimate depends on the
    penalty and on how the features are written (e.g. an uncentred feature and its square)."""


class InfluenceWarning(PuinferWarning):
    """One row dominates a feature's spread (an outlier carrying most of its variance): a fit
    on standardised features, and a ridge on their slopes, hinge on that row."""



class GroupingWarning(PuinferWarning):
    """A fit of several groups disagrees with the fit of the same rows pooled into one group
    by more than the pooled estimate's sampling error, where under the model the groups'
    size-weighted mean equals the pooled quantity (e.g. URC's base rates with many small
    groups and a small lab set: the shared ``M_A`` follows the groups' sampling scatter)."""
