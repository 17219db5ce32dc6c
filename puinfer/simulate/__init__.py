"""Simulators for the papers' designs.

Every simulator takes ``rng=``: a numpy Generator (used as it is, so its stream continues), a
seed for :func:`numpy.random.default_rng` (an int or a sequence of ints), or ``None`` for fresh
entropy. :func:`~puinfer.simulate.urc.spambase_lab_field` is a random split of a real data set
and takes ``seed=`` (an int) instead.
"""

from .detm import gamma_design, pu_normal, sar_design, scar_design

__all__ = ["gamma_design", "pu_normal", "sar_design", "scar_design"]
