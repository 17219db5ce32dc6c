"""Plot helpers: every public plotting function takes ``ax=None`` and returns the Axes."""

from __future__ import annotations

__all__ = ["get_ax", "plain_text"]


def get_ax(ax=None):
    """Return ``ax``, or a new Axes on a new figure if ``ax`` is None; ``TypeError`` for
    anything else (a figure, a string: matplotlib's own AttributeError named neither)."""
    if ax is not None:
        from matplotlib.axes import Axes

        if not isinstance(ax, Axes):
            raise TypeError(f"ax must be a matplotlib Axes (or None for a new figure); got "
                            f"{type(ax).__name__}")
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(6, 4))
    return ax


def plain_text(text) -> str:
    """``text`` (a name from the data: a group, class or parameter) as matplotlib prints it
    literally: each ``$`` escaped, which would otherwise start mathtext (session 68's audit: a
    group "spend $5-$20" was titled "spend 5-20", and "$x_{1}^$" made ``savefig`` raise)."""
    return str(text).replace("$", r"\$")
