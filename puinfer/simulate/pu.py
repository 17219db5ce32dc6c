"""Former name of :mod:`puinfer.simulate.detm`; kept for imports."""

from .detm import pu_normal, sar_design, scar_design

__all__ = ["pu_normal", "sar_design", "scar_design"]
