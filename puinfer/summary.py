"""Summary tables rendered as text and HTML, shared by every results class."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .base.results import wald_conf_int, wald_pvalues
from .inference.hypothesis import format_pvalue

__all__ = ["Summary", "coef_table", "interval_labels"]


def coef_table(params: pd.Series, bse: pd.Series | None, level: float = 0.95) -> pd.DataFrame:
    """Coefficient table: estimate, std. error, z, p-value and Wald interval."""
    # (on a copy of the index: a renamed index of the table would rename the result's own)
    params = params.set_axis(params.index.copy())
    df = pd.DataFrame({"coef": params})
    if bse is not None:
        se = bse.reindex(params.index)
        df["std err"] = se
        df["z"] = params / se
        df["P>|z|"] = wald_pvalues(params, se)
        ci = wald_conf_int(params, se, 1 - level)
        lower, upper = interval_labels(1 - level)
        df[lower] = ci["lower"]
        df[upper] = ci["upper"]
    return df


def interval_labels(alpha: float) -> tuple[str, str]:
    """The columns of a two-sided interval at level ``1 - alpha``, named by their tail
    probabilities as statsmodels prints them (``[0.025``, ``0.975]``), with every digit the
    level has (``0.9995]`` at alpha = 0.001, not ``1]``)."""
    lo = float(f"{alpha / 2:.6g}")
    return f"[{lo:.6g}", f"{float(f'{1 - lo:.10g}'):.10g}]"


def _map_labels(index: pd.Index, func) -> pd.Index:
    """``index`` with ``func`` applied to every label and name; a MultiIndex level by level
    (``Index.map`` would turn its tuples into one text each: URC's (group, class) rows)."""
    names = [None if n is None else func(n) for n in index.names]
    if isinstance(index, pd.MultiIndex):
        return pd.MultiIndex.from_tuples([tuple(func(x) for x in t) for t in index],
                                         names=names)
    return pd.Index([func(x) for x in index], name=names[0])


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        if np.isnan(v):
            return "NA"
        if v != 0 and abs(v) < 1e-4:
            return f"{v:.4g}"
        if abs(v) >= 1e15:
            return f"{v:.6g}"
        # (fixed notation up to 1e15: with 4 significant digits from 1e5 on, two log-likelihoods
        # of -190345.1 and -190312.9, 64 apart in LR, both printed as -1.903e+05; session 82)
        return f"{v:.4f}"
    return str(v)


@dataclass
class Summary:
    """A summary: a title, key-value information, tables and notes.

    ``str(summary)`` gives plain text (fixed width), ``summary._repr_html_()`` HTML.
    """

    title: str
    info: list[tuple[str, object]] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add_info(self, key: str, value) -> None:
        self.info.append((key, value))

    def add_table(self, caption: str, table: pd.DataFrame) -> None:
        self.tables.append((caption, table))

    def add_note(self, note: str) -> None:
        self.notes.append(note)

    @staticmethod
    def _format_table(t: pd.DataFrame) -> pd.DataFrame:
        out = t.copy().astype(object)
        for c in t.columns:
            if c == "P>|z|" or str(c).lower() in ("p-value", "pvalue"):
                out[c] = [format_pvalue(v) for v in t[c]]
            else:
                out[c] = [_fmt(v) for v in t[c]]
        return out

    def as_text(self) -> str:
        pairs = [(k, _fmt(v)) for k, v in self.info]
        kw = max((len(k) for k, _ in pairs), default=0)
        half = (len(pairs) + 1) // 2
        left, right = pairs[:half], pairs[half:]
        lines_info = []
        wl = max((kw + 2 + len(v) for _, v in left), default=0)
        for i, (k, v) in enumerate(left):
            s = f"{k + ':':<{kw + 1}} {v}"
            if i < len(right):
                k2, v2 = right[i]
                s = f"{s:<{wl + 4}}{k2 + ':':<{kw + 1}} {v2}"
            lines_info.append(s)
        blocks = [self._format_table(t).to_string() for _, t in self.tables]
        width = max([len(self.title)] + [len(x) for x in lines_info]
                    + [len(line) for b in blocks for line in b.splitlines()] + [40])
        out = [self.title.center(width), "=" * width, *lines_info]
        for (cap, _), b in zip(self.tables, blocks, strict=True):
            out += ["-" * width, cap, b]
        if self.notes:
            out.append("-" * width)
            out += self.notes
        out.append("=" * width)
        return "\n".join(out)

    def __str__(self):
        return self.as_text()

    def __repr__(self):
        return self.as_text()

    def as_html(self) -> str:
        rows = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                       f"<td>{html.escape(_fmt(v))}</td></tr>" for k, v in self.info)
        parts = [f"<h4>{html.escape(self.title)}</h4>", f"<table>{rows}</table>"]
        for cap, t in self.tables:
            parts.append(f"<p><b>{html.escape(cap)}</b></p>")
            parts.append(self._format_table(t).to_html())
        if self.notes:
            parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
                         + "</ul>")
        return "<div>" + "".join(parts) + "</div>"

    def _repr_html_(self):
        return self.as_html()

    def as_latex(self) -> str:
        """LaTeX: the information as a two-column tabular, each table via ``DataFrame.to_latex``
        (booktabs rules: ``\\usepackage{booktabs}``). Every text is escaped, ``<``, ``>`` and
        ``|`` too (``P>|z|``, ``< 2.2e-16``), which the default font encoding would print as
        other glyphs."""
        def esc(x) -> str:
            out = str(x).replace("\\", "\0")
            for a, b in (("&", r"\&"), ("%", r"\%"), ("$", r"\$"),
                         ("#", r"\#"), ("_", r"\_"), ("{", r"\{"), ("}", r"\}"),
                         ("~", r"\textasciitilde{}"), ("^", r"\textasciicircum{}"),
                         ("<", r"\textless{}"), (">", r"\textgreater{}"), ("|", r"\textbar{}"),
                         ("\0", r"\textbackslash{}")):
                out = out.replace(a, b)
            return out

        rows = "\n".join(f"{esc(k)} & {esc(_fmt(v))} \\\\" for k, v in self.info)
        parts = [f"\\begin{{center}}\\textbf{{{esc(self.title)}}}\\end{{center}}",
                 "\\begin{tabular}{ll}", rows, "\\end{tabular}"]
        for cap, t in self.tables:
            parts.append(f"\n\\noindent\\textit{{{esc(cap)}}}\n")
            tab = self._format_table(t).map(esc)
            tab.index, tab.columns = _map_labels(tab.index, esc), _map_labels(tab.columns, esc)
            parts.append(tab.to_latex(escape=False))
        if self.notes:
            parts.append("\\begin{itemize}")
            parts += [f"\\item {esc(n)}" for n in self.notes]
            parts.append("\\end{itemize}")
        return "\n".join(parts)
