"""Let Sphinx read (and so execute) the book's chapters in parallel processes.

Sphinx reads serially, with a warning, when any loaded extension does not declare whether parallel
reading is safe. Two extensions that Jupyter Book loads into every build declare nothing:

* ``sphinx_multitoc_numbering`` renumbers sections across toctrees in ``assign_section_numbers``,
  which Sphinx calls on the merged environment in the main process, after every document is read;
* ``sphinx_jupyterbook_latex`` adds node types and transforms that act only for LaTeX builders.

Neither keeps per-document state that a parallel read would lose, so this extension declares both
safe. With ``make book`` (``BOOK_JOBS`` processes, see book/_ext/build.py) two chapters execute at once.
"""

from __future__ import annotations

#: Extensions loaded by Jupyter Book that are safe to read in parallel but do not say so.
UNDECLARED_SAFE = ("sphinx_multitoc_numbering", "sphinx_jupyterbook_latex")


def _declare(app, config) -> None:
    for name in UNDECLARED_SAFE:
        ext = app.extensions.get(name)
        if ext is not None and ext.parallel_read_safe is None:
            ext.parallel_read_safe = True


def setup(app) -> dict:
    app.connect("config-inited", _declare)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
