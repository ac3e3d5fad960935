"""Sphinx extension of the book: the paper map's tables are printed into its page, book/paper_map.md.

The page is plain MyST (no code cells: it needs nothing installed on Colab). Where a table goes it
holds a placeholder::

    ```{paper-map} equation
    ```

On ``source-read`` of that page each placeholder becomes the Markdown that
:mod:`paththeory_tools.paper_map` renders from ``book/paper_map.yml``, with ``{ref}`` and ``{doc}``
links (the page is parsed as MyST, so the tables render): ``summary``, ``legend`` (the statuses),
the rows of one kind of item (``equation``, ``figure``, ``appendix``, ``book``) or ``labels`` (the
items by book section). A placeholder of another kind is a warning, which fails the strict build.
The page depends on the YAML file, so an incremental build rereads it when the rows change.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sphinx.util import logging

from paththeory_tools import paper_map

logger = logging.getLogger(__name__)

#: The docname of the paper map's page.
PAGE = "book/paper_map"
#: A placeholder: an empty ``{paper-map}`` fence whose argument is the kind of table.
PLACEHOLDER = re.compile(r"^```\{paper-map\}[ \t]*(?P<kind>[^\n]*?)[ \t]*\n```[ \t]*$", flags=re.M)
_OTHER: dict[str, Callable[[], str]] = {"summary": paper_map.summary, "legend": paper_map.status_legend,
                                        "labels": paper_map.label_table}
#: The kinds a placeholder may name.
PLACEHOLDER_KINDS: tuple[str, ...] = ("summary", "legend", *paper_map.KINDS, "labels")


def render(kind: str) -> str:
    """The Markdown of the placeholder of ``kind`` (one of :data:`PLACEHOLDER_KINDS`).

    Example:
      >>> render("equation").splitlines()[2].startswith("| **Eq. 1**")
      True
    """
    if kind in paper_map.KINDS:
        return paper_map.markdown_table(paper_map.rows(kind=kind), myst=True)
    return _OTHER[kind]()


def fill_placeholders(app, docname: str, source: list[str]) -> None:
    """``source-read``: on the paper map's page, replace each placeholder by its table; a placeholder
    of an unknown kind is dropped with a warning."""
    if docname != PAGE:
        return
    app.env.note_dependency(str(paper_map.DATA))
    text = source[0]

    def replace(match: re.Match) -> str:
        kind = match["kind"]
        if kind in PLACEHOLDER_KINDS:
            return render(kind)
        line = text.count("\n", 0, match.start()) + 1
        logger.warning(f"{{paper-map}} of unknown kind {kind!r}; the kinds are {', '.join(PLACEHOLDER_KINDS)}",
                       location=(docname, line))
        return ""

    source[0] = PLACEHOLDER.sub(replace, text)


def setup(app) -> dict:
    app.connect("source-read", fill_placeholders)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
