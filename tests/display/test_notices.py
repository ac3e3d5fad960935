"""A chapter without a file it needs: a notice on the page, its later cells skipped, the build's
summary naming it, and a failed build under CI (paththeory.display.notices, tools/paththeory_tools/sphinxext/reduced_chapters.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from paththeory.display import notices as chapter
from paththeory.display import tables
from paththeory.tasks.data import DataNotFoundError
from paththeory.training import CheckpointNotFoundError, load_checkpoint

ROOT = Path(__file__).resolve().parents[2]


def test_outside_ipython_the_error_is_raised_as_is():
    with pytest.raises(CheckpointNotFoundError, match="nowhere"):
        with chapter.needs_files():
            load_checkpoint("nowhere")
    with pytest.raises(ZeroDivisionError):  # other errors are never a "missing file"
        with chapter.needs_files():
            raise ZeroDivisionError("division by zero")


def test_the_notice_escapes_the_message_and_carries_it_for_the_build():
    page = chapter.notice_html("Missing omniglot data file(s) a<b>.zip: put them in /x/omniglot")
    assert f'class="admonition warning {chapter.REDUCED_CLASS}"' in page
    assert "a&lt;b&gt;.zip" in page and "<b>" not in page
    assert issubclass(DataNotFoundError, chapter.MISSING_FILE_ERRORS)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CHAPTER = """\
---
jupytext:
  text_representation: {extension: .md, format_name: myst}
kernelspec: {display_name: Python 3, language: python, name: python3}
---
# Needs a file

```{code-cell} ipython3
from paththeory.display.notices import notice_missing_files
from paththeory.tasks.data import load_omniglot

notice_missing_files()
```

```{code-cell} ipython3
load_omniglot("evaluation")  # not shipped, and the download fails
print("the rest of " + "the cell ran")
```

```{code-cell} ipython3
print("a skipped " + "cell ran")
```

```{code-cell} ipython3
raise RuntimeError("a skipped cell raised")
```
"""


GUARDED_SESSION = """\
from IPython.core.interactiveshell import InteractiveShell
from paththeory.display.notices import notice_missing_files
shell = InteractiveShell.instance(history_length=0)
assert notice_missing_files() and notice_missing_files() and len(shell.ast_transformers) == 1
assert shell.run_cell("x = 2").success and shell.run_cell("x + 1").result == 3  # a last expression: shown
raised = shell.run_cell("1 / 0").error_in_exec
assert isinstance(raised, ZeroDivisionError)  # other errors are never a "missing file"
cell = "from paththeory.training import load_checkpoint\\nz = load_checkpoint('nowhere')\\nprint('REST')\\nz"
assert shell.run_cell(cell).success
assert shell.run_cell("print('LATER')").success  # an empty cell now
"""


def test_a_guarded_session_reduces_the_chapter_from_a_plain_cell():
    """``notice_missing_files`` once, then a plain cell that lacks a checkpoint: the notice, no error, and neither
    the rest of the cell nor a later cell runs; other errors and the display of a last expression are untouched."""
    run = subprocess.run([sys.executable, "-c", GUARDED_SESSION], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr[-2000:]
    assert "This chapter is reduced here: checkpoint 'nowhere' was not found" in run.stdout
    assert "Out[" in run.stdout and "ZeroDivisionError" in run.stdout
    assert "REST" not in run.stdout and "LATER" not in run.stdout


def test_outside_ipython_nothing_is_installed():
    assert chapter.notice_missing_files() is False


@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory) -> Path:
    book = tmp_path_factory.mktemp("tiny_book")
    (book / "_config.yml").write_text(textwrap.dedent("""\
        title: tiny
        only_build_toc_files: true
        exclude_patterns: ["**/*.ipynb", ".*", "_build"]
        execute:
          execute_notebooks: force
          timeout: 300
        sphinx:
          extra_extensions:
            - paththeory_tools.sphinxext.reduced_chapters
        """))
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n- file: needs\n")
    (book / "intro.md").write_text("# Intro\n\nA page without code.\n")
    (book / "needs.md").write_text(CHAPTER)
    (book / "empty").mkdir()
    return book


def _build(book: Path, ci: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(PATHTHEORY_DATA=str(book / "empty"), XDG_CACHE_HOME=str(book / "empty"),
               PATHTHEORY_DATA_URL=f"http://127.0.0.1:{_closed_port()}", PYTHONPATH=str(ROOT))
    if ci:
        env["CI"] = "true"
    jb = Path(sys.executable).parent / "jupyter-book"
    return subprocess.run([str(jb), "build", str(book), "-W", "--keep-going", "--all"], env=env,
                          capture_output=True, text=True, timeout=600)


def test_a_reduced_chapter_shows_the_notice_and_the_build_names_it(tiny_book):
    run = _build(tiny_book, ci=False)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    assert "paththeory: 1 chapter(s) reduced for a missing file: needs (Missing omniglot data file(s) " \
           "images_evaluation.zip" in log
    page = (tiny_book / "_build" / "html" / "needs.html").read_text()
    assert f"warning {chapter.REDUCED_CLASS}" in page and "images_evaluation.zip" in page
    assert "a skipped cell ran" not in page and "the rest of the cell ran" not in page and "Traceback" not in page
    assert "reduced" not in (tiny_book / "_build" / "html" / "intro.html").read_text()


def test_under_ci_a_reduced_chapter_fails_the_build(tiny_book):
    run = _build(tiny_book, ci=True)
    log = run.stdout + run.stderr
    assert run.returncode != 0
    assert "WARNING: paththeory: 1 chapter(s) reduced for a missing file: needs" in log


def test_markdown_table_and_run_time_for_readers():
    table = tables.markdown_table(["split", "accuracy"], [["held-out", "0.912"], ["a|b", 1]])
    assert table.splitlines() == ["| split | accuracy |", "|---|---|", "| held-out | 0.912 |", "| a\\|b | 1 |"]
    with pytest.raises(ValueError, match="2 cells"):
        tables.markdown_table(["a", "b"], [["only one"]])
    assert chapter.run_time(12.6, "colab") == "Computing this page took 13 s with the colab sizes."
