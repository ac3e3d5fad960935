"""tools/paththeory_tools/sphinxext/solution_markers.py: opened solutions show no nbgrader markers, and the
built-HTML check (.ci/check_html.py) fails a page that still shows one."""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

ROOT = Path(__file__).resolve().parents[2]


def test_marker_lines_leave_the_code_and_nothing_else_does(book_extension):
    ext = book_extension("solution_markers")
    doc = new_document("page", get_default_settings(Parser))
    solution = "def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n\ncheck('a.b', f)"
    untouched = "print('### BEGIN SOLUTION is a marker')"  # not a marker line
    doc += [nodes.literal_block(solution, solution), nodes.literal_block(untouched, untouched)]
    assert ext.drop_markers(doc) == 1
    shown = doc.children[0]
    assert shown.astext() == "def f(x):\n    return 2 * x\n\ncheck('a.b', f)" and shown.rawsource == shown.astext()
    assert doc.children[1].astext() == untouched


def test_the_html_check_flags_a_marker_on_a_page(tmp_path, module_from_file):
    check = module_from_file("check_html", ROOT / ".ci" / "check_html.py")
    (tmp_path / "page.html").write_text("<html><body><article><pre>### BEGIN SOLUTION\nx = 1</pre></article></body></html>")
    assert [p.split(" (")[0] for p in check.problems(tmp_path)] == ["page.html: nbgrader solution marker"]
