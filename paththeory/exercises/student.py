"""Student notebooks and the exercises page, from the chapters' MyST sources."""

from __future__ import annotations

import re
from pathlib import Path

from paththeory.exercises.keys import EXERCISES
from paththeory.plain_markdown import MarkdownContext, _equation_numbers, myst_to_markdown

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_CHECK_CALL = re.compile(r"""check\(\s*["']([\w.]+)["']""")
_SOLUTION = re.compile(r"^([ \t]*)" + re.escape(BEGIN) + r"[^\n]*\n.*?^[ \t]*" + re.escape(END) + r"[^\n]*$",
                       re.MULTILINE | re.DOTALL)

def exercise_id(source: str) -> str | None:
    """The id in the ``check("...", ...)`` call of a cell's source, or ``None``.

    Example:
      >>> exercise_id('answer = 24\\ncheck("model.n_paths", answer)')
      'model.n_paths'
    """
    found = _CHECK_CALL.search(source)
    return found.group(1) if found else None


def exercise_label(exercise_id: str) -> str:
    """The MyST label put right before an exercise's task: ``exercise-<chapter>-<name>``.

    Example:
      >>> exercise_label("model.n_paths")
      'exercise-model-n-paths'
    """
    return "exercise-" + re.sub(r"[^a-z0-9]+", "-", exercise_id.lower()).strip("-")


def strip_solution(source: str) -> str:
    """Replace every ``BEGIN/END SOLUTION`` block of ``source`` by a stub raising ``NotImplementedError``.

    Example:
      >>> src = 'x = 1\\n### BEGIN SOLUTION\\nanswer = 24\\n### END SOLUTION\\ncheck("model.n_paths", answer)'
      >>> print(strip_solution(src))
      x = 1
      # Your solution: store the result in `answer`.
      raise NotImplementedError("Exercise model.n_paths: replace this line with your solution (the task is above; paththeory.exercises.hint('model.n_paths') gives a hint)")
      check("model.n_paths", answer)
    """
    name = exercise_id(source) or "?"
    stub = (f"# Your solution: store the result in `answer`.\n"
            f'raise NotImplementedError("Exercise {name}: replace this line with your solution (the task is '
            f"above; paththeory.exercises.hint('{name}') gives a hint)\")")
    return _SOLUTION.sub(lambda m: "\n".join(m.group(1) + line for line in stub.splitlines()), source)


_STUDENT_NOTE = (
    "> **Student notebook.** The exercises of this chapter are at its end. In each exercise cell, replace "
    "the line `raise NotImplementedError(...)` with your solution, store the result in `answer` and run "
    "the cell: `check(...)` prints \"Correct\", or says what is off and which step to revisit. "
    "`paththeory.exercises.hint(\"<id>\")` repeats the task and the hint; "
    "`check(\"<id>\", answer, reveal=True)` shows the expected value. Run the cells from the top: the "
    "exercises use the imports and data of the chapter, and the first cell installs `paththeory` on Colab."
)


def student_version(notebook, book_dir: str | Path | None = None, chapters=()):
    """A copy of an ``nbformat`` notebook for students: solutions stubbed, Markdown made plain.

    Every solution is replaced (:func:`strip_solution`) and its outputs removed; the Markdown
    cells are converted from MyST to plain Markdown (:func:`myst_to_markdown`, with the chapter
    titles and references of ``book_dir`` if given; ``{doc}`` links to ``chapters`` point to their
    student notebooks); cell metadata other than the ``exercise`` tag is dropped, and a note on
    how to do the exercises follows the title. :func:`plain_notebook` does the conversion.

    Example:
      >>> import nbformat
      >>> cell = nbformat.v4.new_code_cell('### BEGIN SOLUTION\\nanswer = 24\\n### END SOLUTION\\ncheck("model.n_paths", answer)')
      >>> print(student_version(nbformat.v4.new_notebook(cells=[cell])).cells[-1].source)
      # Your solution: store the result in `answer`.
      raise NotImplementedError("Exercise model.n_paths: replace this line with your solution (the task is above; paththeory.exercises.hint('model.n_paths') gives a hint)")
      check("model.n_paths", answer)
    """
    import nbformat

    out = plain_notebook(notebook, MarkdownContext.from_book(book_dir, chapters), solutions=False)
    cells = out.cells
    if any(BEGIN in c.source for c in notebook.cells):
        at = 1 if cells and cells[0].cell_type == "markdown" and cells[0].source.lstrip().startswith("#") else 0
        cells.insert(at, nbformat.v4.new_markdown_cell(_STUDENT_NOTE))
    return out


def figure_caption(cell) -> str | None:
    """The caption of a figure cell (its ``mystnb: figure: caption`` metadata), or ``None``."""
    figure = (cell.get("metadata", {}).get("mystnb") or {}).get("figure") or {}
    caption = figure.get("caption") if isinstance(figure, dict) else None
    return str(caption).strip() if caption else None


def plain_notebook(notebook, context: MarkdownContext | None = None, *, solutions: bool = False):
    """A copy of an ``nbformat`` notebook in plain Markdown (no MyST markup), as Jupyter and Colab render it.

    The Markdown cells are converted by :func:`myst_to_markdown` with ``context`` (chapter titles,
    citations, labels and, if it has a ``base_url``, links to the published book); a figure's
    caption becomes a Markdown cell under its code cell. Outputs are removed. With
    ``solutions=False`` (the student notebooks) every solution is replaced by a stub
    (:func:`strip_solution`) and cell metadata other than the ``exercise`` tag is dropped; with
    ``solutions=True`` (the full edition) the solutions and the cells' tags are kept.

    Example:
      >>> import nbformat
      >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("(sec)=\\n# Title {cite}`x`")])
      >>> print(plain_notebook(nb).cells[0].source)
      # Title x
    """
    import copy

    import nbformat

    ctx = copy.copy(context) if context is not None else MarkdownContext({}, {}, {})
    ctx.solutions = solutions
    ctx.equations = _equation_numbers("\n".join(c.source for c in notebook.cells if c.cell_type == "markdown"))
    out = copy.deepcopy(notebook)
    cells = []
    for cell in out.cells:
        tags = list(cell.metadata.get("tags", []))
        caption = None
        if cell.cell_type == "markdown":
            cell.source = myst_to_markdown(cell.source, ctx)
            cell.metadata = {}
            if not cell.source.strip():
                continue
        elif cell.cell_type == "code":
            caption = figure_caption(cell)
            if BEGIN in cell.source and not solutions:
                cell.source = strip_solution(cell.source)
            cell.outputs, cell.execution_count = [], None
            if solutions:
                cell.metadata = {"tags": tags} if tags else {}
            else:
                cell.metadata = {"tags": ["exercise"]} if "exercise" in tags else {}
        cells.append(cell)
        if caption and solutions:
            cells.append(nbformat.v4.new_markdown_cell("**Figure.** " + myst_to_markdown(caption, ctx)))
    out.cells = cells
    out.metadata.pop("jupytext", None)
    return out


def write_student_notebooks(book_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Write ``<out_dir>/<chapter>.ipynb`` for every MyST chapter of ``book_dir`` with exercises.

    The notebooks are plain Jupyter notebooks (:func:`student_version`): they read well in
    Jupyter and on Colab. Needs ``jupytext`` (the ``book`` extra). Returns the paths written, each
    written atomically. ``out_dir`` must be another folder than ``book_dir`` (the book's own files are
    never overwritten), and ``book_dir`` must hold at least one chapter with exercises.

    Example:
      >>> import pathlib, tempfile
      >>> book = pathlib.Path(tempfile.mkdtemp())
      >>> cell = '```{code-cell} ipython3\\n### BEGIN SOLUTION\\nanswer = 24\\n### END SOLUTION\\ncheck("model.n_paths", answer)\\n```\\n'
      >>> _ = (book / "chapter.md").write_text(cell)
      >>> [p.name for p in write_student_notebooks(book, book / "student")]
      ['chapter.ipynb']
    """
    import jupytext
    import nbformat

    from paththeory import _io

    book, out = Path(book_dir), _io.check_output_folder(out_dir)
    if not book.is_dir():
        raise NotADirectoryError(f"the book folder {book} does not exist; give the folder of the chapters' .md files.")
    if out.resolve() == book.resolve():
        raise ValueError(f"the output folder {out} is the book folder itself; give another folder so that "
                         "the book's own files are not overwritten.")
    chapters = {md.stem: md.read_text() for md in sorted(book.glob("*.md")) if BEGIN in md.read_text()}
    if not chapters:
        raise ValueError(f"{book} holds no chapter (.md) with exercises ({BEGIN!r} cells); give the book's folder.")
    written = []
    for name, text in chapters.items():
        nb = student_version(jupytext.reads(text, fmt="md:myst"), book, tuple(chapters))
        written.append(_io.write_text(out / f"{name}.ipynb", nbformat.writes(nb).rstrip("\n") + "\n"))
    return written

# --------------------------------------------------------------------------- the exercises page


def _chapter_tasks(text: str) -> dict:
    """``{exercise label: title}`` of the ``{exercise}`` directives of a chapter's MyST source."""
    return {m.group(2): m.group(1).strip() for m in
            re.finditer(r"^`{3,}\{exercise\}[ \t]*(.*)\n(?:[ \t]*:[\w-]+:.*\n)*?[ \t]*:label:[ \t]*(\S+)", text, re.MULTILINE)}


_COURSE_SECTION = """\
## Using the exercises in a course

**Student notebooks.** One call writes a notebook per chapter with exercises, with every
solution replaced by a stub that raises `NotImplementedError`:

```python
from paththeory.exercises import write_student_notebooks
write_student_notebooks("book", "student")   # student/model.ipynb, student/derivation.ipynb, ...
```

They are plain Jupyter notebooks: the book's MyST markup is turned into Markdown that Jupyter
and Colab render (admonitions as block quotes, numbered equations, citations as
"Author (year)", chapter links to the other student notebooks), and the first cell installs
`paththeory` when the notebook runs on Colab. Hand them out as files or upload them to a
repository and open them on Colab.

**Checks.** Each exercise cell ends with `check("<chapter>.<name>", answer)`, which recomputes
the expected answer with the package and compares within a stated tolerance. A right answer
prints `Correct (...)` with a sentence on what the number means. A wrong one raises
`WrongAnswer` with hints (sign, order of magnitude, which entries are off, which step to
revisit) but *not* the expected value. An answer of the wrong kind (`None`, the text `"24"`
instead of the number, NaN, a wrong shape) raises `InvalidAnswer`, saying which exercise and
what kind of answer it expects. In Jupyter both print as a short message, without a traceback;
both are `AssertionError`s, so a notebook run by an autograder (e.g. `nbclient` or
`jupyter nbconvert --execute`) fails at the first unsolved or wrong exercise.

**Hints and solutions.** `paththeory.exercises.hint("<id>")` prints the task, the kind of
answer and the step to revisit. The expected value is shown only on request:
`check("<id>", answer, reveal=True)` or `paththeory.exercises.solution("<id>")`. The worked
solutions are on the chapters' pages, under **Show solution**, together with the output of
their check; `paththeory.exercises.EXERCISES` lists every exercise by id.
"""


def exercises_page(book_dir: str | Path) -> str:
    """The MyST source of the book's exercises page (``book/exercises.md``).

    Lists every exercise of :data:`EXERCISES` with its chapter, its task and a link to it (a
    ``{ref}`` to its label when the chapter has one, else a ``{doc}`` link to the chapter), and
    says how a course uses them.
    """
    book = Path(book_dir)
    chapters: dict[str, list[str]] = {}
    for name in EXERCISES:
        chapters.setdefault(name.split(".")[0], []).append(name)
    rows = []
    for chapter, names in chapters.items():
        md = book / f"{chapter}.md"
        tasks = _chapter_tasks(md.read_text()) if md.exists() else {}
        for number, name in enumerate(names, 1):
            title = tasks.get(exercise_label(name))
            link = f"{{ref}}`{title} <{exercise_label(name)}>`" if title else f"Exercise {number}"
            task = EXERCISES[name].task.replace("*", "\\*")
            rows.append(f"| {{doc}}`{chapter}` | {link} | {task} | `{name}` |")
    table = "\n".join(["| Chapter | Exercise | Task | Check id |", "|---|---|---|---|", *rows])
    return f"""\
# Exercises

Every chapter of the paper's experiments ends with three exercises, and so do the theory's
{{doc}}`model` and {{doc}}`gp_vs_finite`; the derivation chapters {{doc}}`derivation` and
{{doc}}`depth` share three. Each states a task, which the package solves in a few lines; on
the chapter's page, **Show solution** under the task opens a worked solution together with
the output of its check. In a notebook, `check("<id>", answer)` says whether an answer is
right and, if not, gives a hint without giving the answer away.

{table}

{_COURSE_SECTION}"""


def write_exercises_page(book_dir: str | Path, path: str | Path | None = None) -> Path:
    """Write :func:`exercises_page` to ``path`` (default ``<book_dir>/exercises.md``) and return it."""
    target = Path(path) if path is not None else Path(book_dir) / "exercises.md"
    from paththeory._io import write_text

    return write_text(target, exercises_page(book_dir))
