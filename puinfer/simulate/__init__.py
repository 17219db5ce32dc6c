"""Simulators for the papers' designs; every function takes ``rng=`` (a numpy Generator or seed)."""

from .detm import gamma_design, pu_normal, sar_design, scar_design

__all__ = ["gamma_design", "pu_normal", "sar_design", "scar_design"]
