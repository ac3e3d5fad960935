"""Sphinx extension of the book: the Colab button of a chapter opens its plain notebook.

sphinx-book-theme points the button at the chapter's paired MyST notebook (``book/<chapter>.ipynb``),
whose roles, directives and labels Colab shows raw. This extension rewrites the button's address,
after the theme has built it (``html-page-context``, priority 502 > the theme's 501), to
``notebooks/<chapter>.ipynb`` in the repository (:func:`paththeory_tools.notebooks.colab_url`): the plain
Markdown edition written by ``paththeory-tools notebooks``; the student edition (config value
``colab_notebooks_folder = "notebooks/student"``, set by ``paththeory-tools student``) opens the
student notebooks there instead. A chapter without its plain notebook is a warning, which fails the
strict build.
"""

from __future__ import annotations

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


def setup(app):
    app.add_config_value("colab_notebooks_folder", NOTEBOOKS_DIR, "html")
    # The repository root holding the folder (default: the book's source folder).
    app.add_config_value("colab_notebooks_root", "", "html")
    app.connect("html-page-context", point_colab_button, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
