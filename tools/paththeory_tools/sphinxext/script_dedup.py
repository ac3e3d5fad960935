"""Sphinx extension of the book: each script is loaded once per page.

sphinx-thebe 0.3.1 with Sphinx 7.4 adds its configuration script twice, and the second copy fails
in the browser ("Identifier 'THEBE_JS_URL' has already been declared"). This drops any script
that the page's context already lists with the same file and attributes. An inline script has no
file: one copy says so with ``None``, the other with ``""``, so both count as no file.
"""

from __future__ import annotations


def dedup_scripts(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    seen, kept = set(), []
    for js in context.get("script_files", []):
        filename = js if isinstance(js, str) else getattr(js, "filename", None)
        key = (filename or "", tuple(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    context["script_files"] = kept


def setup(app):
    app.connect("html-page-context", dedup_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
