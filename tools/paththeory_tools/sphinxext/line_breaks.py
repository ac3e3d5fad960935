"""Sphinx extension of the book: lines break where a reader expects them, in the web book.

Two post-transforms of the HTML builders:

* :func:`identifier_breaks`: a long inline name (``paththeory.experiments.omniglot.build_sequences()``,
  ``paper_map.yml``) may break after each ``.``, ``_`` and ``/``, and only there: a ``<wbr>`` (the
  node :class:`wbr`) follows each. In a narrow table column (the paper map, the results tables on a
  phone) the name then wraps between its parts instead of mid-token; book/_static/paththeory.css lets
  a part break only when it alone is wider than its column.
* :func:`keep_punctuation_with_math`: a punctuation mark that follows inline maths (``$U^*$.``) stays
  on its line: MathJax's output ends an inline box after which the browser may break, which left a
  lone period at the start of the next line. The maths and the marks around it (a closing ``.,;:!?)``
  and an opening ``(`` just before) go into a ``span.pt-nowrap`` (white-space: nowrap); inline maths
  does not break inside in MathJax 3 in any case.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

#: After these a long name may break.
BREAK_AFTER = re.compile(r"(?<=[._/])(?=.)")
#: A name shorter than this never needs a break.
MIN_LENGTH = 12
#: Marks that close a phrase after inline maths, and marks that open one before it.
CLOSING = re.compile(r"^[.,;:!?)\]\u2019\u201d]+")
OPENING = re.compile(r"[(\[\u2018\u201c]$")


class wbr(nodes.Inline, nodes.Element):
    """A line-break opportunity (HTML ``<wbr>``); no text of its own."""


def visit_wbr(self, node: wbr) -> None:
    self.body.append("<wbr>")
    raise nodes.SkipNode


def identifier_breaks(document: nodes.Node) -> int:
    """Insert :class:`wbr` after every ``.``, ``_`` and ``/`` inside the text of each inline literal of
    ``document`` at least :data:`MIN_LENGTH` long (not inline code that is highlighted, nor keyboard
    keys); returns the number of literals changed. The literal's text is unchanged.

    Example:
      >>> from docutils.utils import new_document
      >>> from docutils.frontend import get_default_settings
      >>> from docutils.parsers.rst import Parser
      >>> doc = new_document("page", get_default_settings(Parser))
      >>> doc += nodes.paragraph("", "", nodes.literal("", "pt.tasks.markov.sample_task"), nodes.literal("", "x.y"))
      >>> identifier_breaks(doc), doc.children[0].children[0].astext()
      (1, 'pt.tasks.markov.sample_task')
      >>> [type(c).__name__ for c in doc.children[0].children[0].children]
      ['Text', 'wbr', 'Text', 'wbr', 'Text', 'wbr', 'Text', 'wbr', 'Text']
    """
    changed = 0
    for literal in list(document.findall(nodes.literal)):
        if {"kbd", "code"} & set(literal["classes"]) or len(literal.astext()) < MIN_LENGTH:
            continue
        children = []
        for child in literal.children:
            if not isinstance(child, nodes.Text):
                children.append(child)
                continue
            parts = BREAK_AFTER.split(str(child))
            for i, part in enumerate(parts):
                if i:
                    children.append(wbr())
                children.append(nodes.Text(part))
        if len(children) != len(literal.children):
            literal.children[:] = []
            literal.extend(children)
            changed += 1
    return changed


def keep_punctuation_with_math(document: nodes.Node) -> int:
    """Wrap each inline maths node of ``document`` that a punctuation mark follows (or an opening
    bracket precedes) together with those marks in ``inline(classes=["pt-nowrap"])``; returns how many.

    Example:
      >>> from docutils.utils import new_document
      >>> from docutils.frontend import get_default_settings
      >>> from docutils.parsers.rst import Parser
      >>> doc = new_document("page", get_default_settings(Parser))
      >>> doc += nodes.paragraph("", "", nodes.Text("at width ("), nodes.math("", "N"), nodes.Text("). Then"))
      >>> keep_punctuation_with_math(doc)
      1
      >>> [(type(c).__name__, c.astext()) for c in doc.children[0].children]
      [('Text', 'at width '), ('inline', '(N).'), ('Text', ' Then')]
    """
    changed = 0
    for math in list(document.findall(nodes.math)):
        parent = math.parent
        if parent is None or isinstance(parent, nodes.inline) and "pt-nowrap" in parent["classes"]:
            continue
        index = parent.index(math)
        after = parent[index + 1] if index + 1 < len(parent) else None
        before = parent[index - 1] if index else None
        closing = CLOSING.match(str(after)) if isinstance(after, nodes.Text) else None
        opening = OPENING.search(str(before)) if isinstance(before, nodes.Text) else None
        if not closing and not opening:
            continue
        group = nodes.inline(classes=["pt-nowrap"])
        new: list[nodes.Node] = []
        if opening:
            if str(before)[: opening.start()]:
                new.append(nodes.Text(str(before)[: opening.start()]))
            group += nodes.Text(opening.group())
        group += math
        new.append(group)
        if closing:
            group += nodes.Text(closing.group())
            if str(after)[closing.end():]:
                new.append(nodes.Text(str(after)[closing.end():]))
        parent[index - 1 if opening else index: index + 2 if closing else index + 1] = new
        changed += 1
    return changed


class LineBreaks(SphinxPostTransform):
    """Post-transform of the HTML builders: :func:`identifier_breaks` and :func:`keep_punctuation_with_math`."""

    default_priority = 900  # after references are resolved (a {py:func} role's name is a literal)
    formats = ("html",)

    def run(self, **kwargs) -> None:
        identifier_breaks(self.document)
        keep_punctuation_with_math(self.document)


def setup(app):
    app.add_node(wbr, html=(visit_wbr, None))
    app.add_post_transform(LineBreaks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
