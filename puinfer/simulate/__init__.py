"""Simulators for the papers' designs; every function takes ``rng=`` (a numpy Generator or seed)."""

from .detm import pu_normal, sar_design, scar_design

__all__ = ["pu_normal", "sar_design", "scar_design"]
