"""Former location of :mod:`puinfer.prior_shift` (functions, not a model); kept for imports."""

from ..prior_shift import adjust_prior, downsampling_correction

__all__ = ["adjust_prior", "downsampling_correction"]
