"""Sphinx extension of the book: say which chapters a build reduced, and fail CI on any.

A chapter that cannot find a file it needs shows the notice of `paththeory.display.notices` (an HTML
block of class `pt-reduced`) and skips its later cells, so the rest of the book still builds.
This extension finds those notices in the executed pages, prints one line at the end of the
build naming every reduced chapter and its missing file, and makes that line a warning, which
fails the strict build (`-W`), when the environment variable CI is set.
"""

from __future__ import annotations

import html
import os
import re

from docutils import nodes
from sphinx.util import logging

from paththeory.display.notices import REDUCED_CLASS

logger = logging.getLogger(__name__)
_NOTICE = re.compile(rf'class="admonition warning {REDUCED_CLASS}" data-reason="([^"]*)"')


def _collect(app, doctree) -> None:
    reasons = [html.unescape(m.group(1)) for node in doctree.findall(nodes.raw) for m in _NOTICE.finditer(node.astext())]
    reduced = getattr(app.env, "paththeory_reduced", {})
    reduced.pop(app.env.docname, None)
    if reasons:
        reduced[app.env.docname] = reasons[0]
    app.env.paththeory_reduced = reduced


def _purge(app, env, docname) -> None:
    getattr(env, "paththeory_reduced", {}).pop(docname, None)


def _merge(app, env, docnames, other) -> None:
    env.paththeory_reduced = {**getattr(env, "paththeory_reduced", {}), **getattr(other, "paththeory_reduced", {})}


def _summary(app, exception) -> None:
    reduced = getattr(app.env, "paththeory_reduced", {})
    if exception is not None or not reduced:
        return
    line = (f"paththeory: {len(reduced)} chapter(s) reduced for a missing file: "
            + "; ".join(f"{doc} ({reason})" for doc, reason in sorted(reduced.items())))
    if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
        logger.warning(line + " [CI fails on a reduced chapter]")
    else:
        logger.info(line)


def setup(app) -> dict:
    app.connect("doctree-read", _collect)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _summary)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
