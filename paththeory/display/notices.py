"""A chapter that cannot find a file it needs shows a notice instead of a traceback.

Every file the book reads ships with the package (data in ``datafiles/``, networks in
``checkpoints/``), so this happens only when one was removed or a chapter asks for more (the full
Omniglot sets, a network of one's own) on a machine without internet. A chapter wraps the cell
that first reads files in :func:`needs_files`::

    with needs_files():
        results = experiment.run(...)

When that cell raises :class:`~paththeory.tasks.data.DataNotFoundError` or
:class:`~paththeory.training.checkpoints.CheckpointNotFoundError`, it shows a notice with the error's own
message (which file, which folder or command provides it) and every later cell of the chapter runs
as an empty cell until the kernel restarts; the rest of the book is unaffected.
The book's Sphinx extension ``tools/paththeory_tools/sphinxext/reduced_chapters.py`` finds the notice on the built page
(the class :data:`REDUCED_CLASS`), prints a one-line summary of the reduced chapters at the end of
the build, and turns it into a warning (a failed strict build) when ``CI`` is set.

Outside IPython (a plain script) there is no later cell to skip, and the error is raised as is.
"""

from __future__ import annotations

import contextlib
import html
from collections.abc import Iterator

from paththeory.tasks.data import DataNotFoundError
from paththeory.training import CheckpointNotFoundError

#: The HTML class of the notice; the book build looks for it.
REDUCED_CLASS = "pt-reduced"
MISSING_FILE_ERRORS = (DataNotFoundError, CheckpointNotFoundError)


@contextlib.contextmanager
def needs_files() -> Iterator[None]:
    """Run the body; on a missing data file or network, :func:`reduce_chapter` instead of a traceback."""
    try:
        yield
    except MISSING_FILE_ERRORS as err:
        if not reduce_chapter(err):
            raise


def run_time(seconds: float, profile: str) -> str:
    """The closing line of a chapter, for readers: how long this page took to compute, and with
    which sizes (:func:`paththeory.profiles.describe`).

    Example:
      >>> run_time(367.4, "smoke")
      'Computing this page took 367 s with the smoke sizes.'
    """
    return f"Computing this page took {seconds:.0f} s with the {profile} sizes."


def notice_html(reason: str) -> str:
    """The notice: a warning box with ``reason`` and what happens to the rest of the chapter."""
    text = html.escape(" ".join(reason.split()))
    return (
        f'<div class="admonition warning {REDUCED_CLASS}" data-reason="{text}">'
        '<p class="admonition-title">This chapter is reduced here: a file it needs is missing</p>'
        f"<p>{text}</p>"
        "<p>The rest of this chapter's cells were not run. The package ships every file the book "
        "needs, so reinstalling paththeory restores a removed one; then restart the kernel and run "
        "the chapter again.</p></div>"
    )


def reduce_chapter(reason: BaseException | str) -> bool:
    """Show the notice and skip the chapter's later cells; False (nothing done) outside IPython
    and in a graded run (:mod:`paththeory.exercises.grading`), where the missing file must fail loudly."""
    from paththeory._io import grading

    shell = _shell()
    if shell is None or grading():
        return False
    from IPython.display import display

    text = str(reason)
    display({"text/html": notice_html(text),
             "text/plain": f"This chapter is reduced here: {text} The rest of its cells are skipped."}, raw=True)
    if _skip_cell not in shell.input_transformers_post:
        shell.input_transformers_post.append(_skip_cell)
    return True


def _skip_cell(lines: list[str]) -> list[str]:
    """An IPython input transformer that turns every cell into an empty one."""
    return []


def _shell():
    """The running IPython shell, or None."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()
