"""A small HTML table reader (standard library only) for the ``_repr_html_`` tests."""

from html.parser import HTMLParser

import pytest


class _TableReader(HTMLParser):
    """Collects the caption and the rows of the first table: each row a list of
    ``(tag, text, colspan)`` for its ``th``/``td`` cells, entities decoded."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.caption, self.rows, self.tables = "", [], 0
        self._cell = None
        self._in_caption = False

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables += 1
        elif tag == "caption":
            self._in_caption = True
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("th", "td"):
            self._cell = [tag, "", int(dict(attrs).get("colspan", 1))]

    def handle_endtag(self, tag):
        if tag == "caption":
            self._in_caption = False
        elif tag in ("th", "td") and self._cell is not None:
            self.rows[-1].append(tuple(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data
        elif self._in_caption:
            self.caption += data


@pytest.fixture
def read_table():
    """``read_table(html) -> (caption, rows)``; fails unless ``html`` holds exactly one table."""

    def read(text):
        r = _TableReader()
        r.feed(text)
        r.close()
        assert r.tables == 1, f"expected one table, found {r.tables}"
        return r.caption, r.rows

    return read
