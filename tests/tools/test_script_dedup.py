"""tools/paththeory_tools/sphinxext/script_dedup.py: a script listed twice (same file, same attributes) is kept once."""

from __future__ import annotations

from sphinx.builders.html._assets import _JavaScript  # what Sphinx puts in a page's script_files


def test_duplicate_scripts_are_dropped_in_order(book_extension):
    """Sphinx's own script objects, as sphinx-thebe and sphinx-togglebutton leave them: an inline script
    once with the file None and once with "" (a copy the page would run twice)."""
    body = {"body": "const THEBE_JS_URL = 'x'"}
    context = {"script_files": [_JavaScript("a.js"), _JavaScript(None, **body), _JavaScript("b.js"),
                                _JavaScript("", **body), _JavaScript("a.js", defer="defer"), _JavaScript("a.js"),
                                _JavaScript(None, body="other")]}
    book_extension("script_dedup").dedup_scripts(None, "page", "page.html", context, None)
    assert [(s.filename, s.attributes) for s in context["script_files"]] == [
        ("a.js", {}), (None, body), ("b.js", {}), ("a.js", {"defer": "defer"}), (None, {"body": "other"})]
