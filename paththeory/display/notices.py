"""A chapter that cannot find a file it needs shows a notice instead of a traceback.

Every file the book reads ships with the package (data in ``datafiles/``, networks in
``checkpoints/``), so this happens only when one was removed or a chapter asks for more (the full
Omniglot sets, a network of one's own) on a machine without internet. A chapter calls
:func:`notice_missing_files` once, in its setup cell, and its later cells read as plain calls::

    notice_missing_files()
    ...
    results = experiment.run(...)

When a later cell raises :class:`~paththeory.tasks.data.DataNotFoundError` or
:class:`~paththeory.training.checkpoints.CheckpointNotFoundError`, it shows a notice with the error's own
message (which file, which folder or command provides it); the rest of that cell and every later cell of
the chapter run as empty cells until the kernel restarts, and the rest of the book is unaffected.
(:func:`needs_files` does the same for the body of one ``with`` block.)
The book's Sphinx extension ``tools/paththeory_tools/sphinxext/reduced_chapters.py`` finds the notice on the built page
(the class :data:`REDUCED_CLASS`), prints a one-line summary of the reduced chapters at the end of
the build, and turns it into a warning (a failed strict build) when ``CI`` is set.

Outside IPython (a plain script) and in a graded run there is no later cell to skip, and the error is raised
as is.
"""

from __future__ import annotations

import ast
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


#: The name under which :func:`notice_missing_files` keeps its guard in the notebook's namespace.
GUARD_NAME = "_paththeory_missing_files"


def notice_missing_files() -> bool:
    """From the next cell on, a missing data file or network anywhere in a cell calls :func:`reduce_chapter`
    instead of raising, so that the chapter's cells need no wrapper; False (nothing done) outside IPython.

    Installs :class:`MissingFilesGuard` once as an IPython AST transformer; calling it again does nothing.
    """
    shell = _shell()
    if shell is None:
        return False
    if not any(isinstance(t, MissingFilesGuard) for t in shell.ast_transformers):
        shell.user_ns[GUARD_NAME] = shell.user_ns_hidden[GUARD_NAME] = _Guard()
        shell.ast_transformers.append(MissingFilesGuard())
    return True


class _Guard:
    """The guard's runtime half, kept in the notebook's namespace under :data:`GUARD_NAME`."""

    errors = MISSING_FILE_ERRORS

    def __call__(self, error: BaseException) -> None:
        """Reduce the chapter for ``error`` (a missing file), or raise it where that is not possible."""
        if not reduce_chapter(error):
            raise error


class MissingFilesGuard(ast.NodeTransformer):
    """Rewrites a cell ``body; last`` as ``try: body; value = last / except <missing file> as e: guard(e); value =
    None``, then ``value``, which IPython displays as it would ``last`` (when ``last`` is an expression): a missing
    file anywhere in the cell shows the notice and skips the rest of the cell. Cells with ``from __future__`` or
    ``await`` are left as they are."""

    def visit_Module(self, node: ast.Module) -> ast.Module:
        body = list(node.body)
        if not body or any(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in body):
            return node
        if any(isinstance(n, (ast.Await, ast.AsyncFor, ast.AsyncWith)) for n in ast.walk(node)):
            return node
        guard, value = ast.Name(GUARD_NAME, ast.Load()), "_paththeory_value"
        shown = isinstance(body[-1], ast.Expr)
        if shown:
            body[-1] = ast.copy_location(ast.Assign([ast.Name(value, ast.Store())], body[-1].value), body[-1])
        handler = [ast.Expr(ast.Call(guard, [ast.Name("_paththeory_error", ast.Load())], []))]
        if shown:
            handler.append(ast.Assign([ast.Name(value, ast.Store())], ast.Constant(None)))
        new: list[ast.stmt] = [ast.Try(body, [ast.ExceptHandler(ast.Attribute(guard, "errors", ast.Load()),
                                                                "_paththeory_error", handler)], [], [])]
        if shown:
            new.append(ast.Expr(ast.Name(value, ast.Load())))
        for stmt in new:
            ast.copy_location(stmt, node.body[-1])
        return ast.fix_missing_locations(ast.Module(new, node.type_ignores))


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
    and in a graded run (:mod:`paththeory.exercises.graded_cells`), where the missing file must fail loudly."""
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
