"""tools/paththeory_tools/sphinxext/line_breaks.py: long inline names break only after '.', '_' and '/', and a
punctuation mark after inline maths stays on its line: the transforms on small doctrees, and one tiny Sphinx build."""

from __future__ import annotations

import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from tests.tools.sphinx_build import build_with_extension


@pytest.fixture(scope="module")
def ext(book_extension):
    return book_extension("line_breaks")


def _doc(*children: nodes.Node) -> nodes.document:
    doc = new_document("page", get_default_settings(Parser))
    doc += nodes.paragraph("", "", *children)
    return doc


def _shape(node: nodes.Element) -> list:
    return [c.astext() if isinstance(c, nodes.Text) else type(c).__name__ for c in node.children]


def test_long_names_break_after_dots_underscores_and_slashes_only(ext):
    name = "paththeory.experiments.omniglot.build_sequences()"
    doc = _doc(nodes.literal("", name), nodes.literal("", "book/paper_map.yml"), nodes.literal("", "x.y_z"),
               nodes.literal("", "keep_this_key.", classes=["kbd"]))
    assert ext.identifier_breaks(doc) == 2
    first, second, short, key = doc.children[0].children
    assert first.astext() == name  # the text a reader copies is unchanged
    assert _shape(first) == ["paththeory.", "wbr", "experiments.", "wbr", "omniglot.", "wbr", "build_",
                             "wbr", "sequences()"]
    assert _shape(second) == ["book/", "wbr", "paper_", "wbr", "map.", "wbr", "yml"]
    assert _shape(short) == ["x.y_z"] and _shape(key) == ["keep_this_key."]


def test_a_trailing_mark_never_breaks_a_break_opportunity_of_its_own(ext):
    doc = _doc(nodes.literal("", "ends_with_a_dot."))
    ext.identifier_breaks(doc)
    assert _shape(doc.children[0].children[0]) == ["ends_", "wbr", "with_", "wbr", "a_", "wbr", "dot."]


def test_punctuation_stays_with_inline_maths(ext):
    doc = _doc(nodes.Text("the order parameter "), nodes.math("", "U^*"), nodes.Text(". At width ("),
               nodes.math("", "N"), nodes.Text("), and "), nodes.math("", "T"), nodes.Text(" alone"))
    assert ext.keep_punctuation_with_math(doc) == 2
    paragraph = doc.children[0]
    assert paragraph.astext() == "the order parameter U^*. At width (N), and T alone"
    groups = [c for c in paragraph.children if isinstance(c, nodes.inline)]
    assert [g.astext() for g in groups] == ["U^*.", "(N),"]
    assert all(g["classes"] == ["pt-nowrap"] for g in groups)
    assert isinstance(paragraph.children[-2], nodes.math)  # T: nothing to keep with it, left alone
    assert ext.keep_punctuation_with_math(doc) == 0  # a second pass changes nothing


def test_the_extension_works_in_a_sphinx_build(tmp_path):
    html = build_with_extension(
        tmp_path, "line_breaks",
        "Page\n====\n\n=====  ===================================\nname   ``paththeory.tasks.markov.sample_task``\n"
        "=====  ===================================\n\nThe width :math:`N`. Next.\n",
    )
    assert ('<span class="pre">paththeory.</span><wbr><span class="pre">tasks.</span><wbr>'
            '<span class="pre">markov.</span><wbr><span class="pre">sample_</span><wbr>'
            '<span class="pre">task</span>') in html
    assert '<span class="pt-nowrap"><span class="math notranslate nohighlight">\\(N\\)</span>.</span> Next.' in html
