"""Sphinx extension of the book: the web book shows a solution's code without nbgrader's markers.

A solution cell keeps its code between ``### BEGIN SOLUTION`` and ``### END SOLUTION``: the student
notebooks and the nbgrader release stub out what lies between them
(:mod:`paththeory_tools.student`). On the page of the full book, where the solution is opened
under its task, the two marker lines say nothing to a reader; this post-transform drops them from
every code block's text, and nothing else. ``.ci/check_html.py`` fails a page that still shows one.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

#: A marker line of nbgrader, with its line end.
MARKER_LINE = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.MULTILINE)


def drop_markers(document: nodes.Node) -> int:
    """Remove the marker lines from every literal block of ``document``; returns how many blocks changed.

    Example:
      >>> from docutils.utils import new_document
      >>> from docutils.frontend import get_default_settings
      >>> from docutils.parsers.rst import Parser
      >>> doc = new_document("page", get_default_settings(Parser))
      >>> doc += nodes.literal_block("", "x = 1\\n### BEGIN SOLUTION\\nanswer = 24\\n### END SOLUTION\\ncheck(answer)")
      >>> drop_markers(doc), doc.children[0].astext()
      (1, 'x = 1\\nanswer = 24\\ncheck(answer)')
    """
    changed = 0
    for block in list(document.findall(nodes.literal_block)):
        text = block.astext()
        if MARKER_LINE.search(text):
            # the text and its rawsource stay equal, or Sphinx takes the block for a parsed literal
            block.rawsource = MARKER_LINE.sub("", text)
            block.children[:] = [nodes.Text(block.rawsource)]
            changed += 1
    return changed


class DropSolutionMarkers(SphinxPostTransform):
    """Post-transform: nbgrader's solution markers leave the page's code (:func:`drop_markers`)."""

    default_priority = 50

    def run(self, **kwargs) -> None:
        drop_markers(self.document)


def setup(app):
    app.add_post_transform(DropSolutionMarkers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
