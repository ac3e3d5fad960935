"""Sphinx extension of the book: the bibliography labels its entries the way the text cites them.

The text cites author-year ("Li and Sompolinsky (2021)"); sphinxcontrib-bibtex's default list
labels entries alpha-style ("[LS21]"), so a reader cannot match a citation to its entry at a
glance. The style ``authoryear`` (``bibtex_default_style`` in ``_config.yml``) is ``unsrt``
sorted by author and year, each entry labelled "Li and Sompolinsky, 2021" (three or more
authors: "Tiberi et al., 2024").
"""

from __future__ import annotations

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle


def author_year(entry) -> str:
    """``"Last, year"``, ``"Last and Last, year"`` or ``"Last et al., year"`` of a pybtex entry."""
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    last = [" ".join(p.last_names) for p in people]
    names = last[0] if len(last) == 1 else " and ".join(last) if len(last) == 2 else f"{last[0]} et al."
    return f"{names}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            yield author_year(entry)


class AuthorYearStyle(UnsrtStyle):
    default_label_style = "authoryear"
    default_sorting_style = "author_year_title"


def setup(app) -> dict:
    register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabels)
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
