"""Sphinx extension of the book: the Colab button of a chapter opens its plain notebook.

sphinx-book-theme points the button at the chapter's paired MyST notebook (``book/<chapter>.ipynb``),
whose roles, directives and labels Colab shows raw. This extension rewrites the button's address,
after the theme has built it (``html-page-context``, priority 502 > the theme's 501), to
``notebooks/<chapter>.ipynb`` in the repository (:func:`paththeory_tools.notebooks.colab_url`): the plain
Markdown edition written by ``paththeory-tools notebooks``; the student edition (config value
``colab_notebooks_folder = "notebooks/student"``, set by ``paththeory-tools student``) opens the
student notebooks there instead. A chapter without its plain notebook is a warning, which fails the
strict build.

The page's download button offers the same plain notebook: the theme's ``.ipynb`` entry points at the
executed MyST notebook (``_sources/book/<chapter>.ipynb``, whose text keeps MyST's roles and directives);
:func:`point_download_button` points it at ``_notebooks/<chapter>.ipynb`` of the built site instead, where
:func:`copy_notebooks` copies the plain notebooks of the built pages when the build has finished. The
``.md`` entry stays, named as the MyST source it is.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.util import logging

from paththeory_tools.notebooks import COLAB_URL, NOTEBOOKS_DIR, REGENERATE, colab_url

logger = logging.getLogger(__name__)


def colab_buttons(context: dict) -> list[dict]:
    """The Colab entries of the page's launch buttons (empty on a page without them)."""
    return [button for group in context.get("header_buttons", []) if group.get("label") == "launch-buttons"
            for button in group.get("buttons", []) if button.get("text") == "Colab"]


def point_colab_button(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    buttons = colab_buttons(context)
    if not buttons:
        return
    theme = app.config.html_theme_options
    folder = app.config.colab_notebooks_folder
    notebook = Path(app.config.colab_notebooks_root or app.srcdir) / folder / f"{Path(pagename).name}.ipynb"
    if not notebook.exists():
        logger.warning(f"{pagename}: no Colab notebook {folder}/{notebook.name}; run `{REGENERATE}`",
                       location=pagename)
    url = colab_url(pagename, theme.get("repository_url", ""), theme.get("repository_branch") or "main",
                    theme.get("launch_buttons", {}).get("colab_url") or COLAB_URL, folder)
    for button in buttons:
        button["url"] = url


#: The folder of the built site that holds the plain notebooks the download buttons offer.
DOWNLOAD_DIR = "_notebooks"


def plain_notebook(app, pagename: str) -> Path:
    """The plain notebook of page ``pagename`` (it may not exist: a page that is not a chapter)."""
    folder = app.config.colab_notebooks_folder
    return Path(app.config.colab_notebooks_root or app.srcdir) / folder / f"{Path(pagename).name}.ipynb"


def point_download_button(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """The download button's ``.ipynb`` entry offers the plain notebook; the ``.md`` entry says it is the
    MyST source."""
    notebook = plain_notebook(app, pagename)
    for group in context.get("header_buttons", []):
        if group.get("label") != "download-buttons":
            continue
        for button in group.get("buttons", []):
            if button.get("label") == "download-notebook-button" and notebook.exists():
                button["url"] = context["pathto"](f"{DOWNLOAD_DIR}/{notebook.name}", 1)
                button["tooltip"] = "Download the notebook (.ipynb, plain Markdown: Jupyter, Colab)"
            elif button.get("label") == "download-source-button":
                button["tooltip"] = "Download the MyST Markdown source (.md, for building the book)"


def copy_notebooks(app, exception) -> list[Path]:
    """Copy the plain notebook of every built page that has one into ``<outdir>/_notebooks``."""
    if exception is not None or app.builder.format != "html":
        return []
    target = Path(app.outdir) / DOWNLOAD_DIR
    copied = []
    for docname in sorted(app.env.found_docs):
        notebook = plain_notebook(app, docname)
        if notebook.exists():
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(notebook, target / notebook.name)
            copied.append(target / notebook.name)
    return copied


def setup(app):
    app.add_config_value("colab_notebooks_folder", NOTEBOOKS_DIR, "html")
    # The repository root holding the folder (default: the book's source folder).
    app.add_config_value("colab_notebooks_root", "", "html")
    app.connect("html-page-context", point_colab_button, priority=502)
    app.connect("html-page-context", point_download_button, priority=502)
    app.connect("build-finished", copy_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
