"""Plot helpers: every public plotting function takes ``ax=None`` and returns the Axes."""

from __future__ import annotations

__all__ = ["get_ax"]


def get_ax(ax=None):
    """Return ``ax``, or a new Axes on a new figure if ``ax`` is None."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(6, 4))
    return ax
