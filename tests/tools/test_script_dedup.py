"""tools/paththeory_tools/sphinxext/script_dedup.py: a script listed twice (same file, same attributes) is kept once."""

from __future__ import annotations


class _Script(str):
    def __new__(cls, filename, **attributes):
        obj = super().__new__(cls, filename or "")
        obj.filename, obj.attributes = filename, attributes
        return obj


def test_duplicate_scripts_are_dropped_in_order(book_extension):
    thebe = _Script(None, body="const THEBE_JS_URL = 'x'")
    context = {"script_files": [_Script("a.js"), thebe, _Script("b.js"), _Script(None, body="const THEBE_JS_URL = 'x'"),
                                _Script("a.js", defer="defer"), _Script("a.js")]}
    book_extension("script_dedup").dedup_scripts(None, "page", "page.html", context, None)
    assert [(s.filename, s.attributes) for s in context["script_files"]] == [
        ("a.js", {}), (None, {"body": "const THEBE_JS_URL = 'x'"}), ("b.js", {}), ("a.js", {"defer": "defer"})]
