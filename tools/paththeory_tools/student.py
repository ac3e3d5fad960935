"""Student notebooks and the exercises page, from the chapters' MyST sources."""

from __future__ import annotations

import re
from pathlib import Path

from paththeory.exercises.keys import EXERCISES
from paththeory_tools.plain_markdown import MarkdownContext, _equation_numbers, myst_to_markdown

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
    "> **Student notebook.** Each exercise is a block quote headed **Exercise**. Under a computational one, "
    "replace the line `raise NotImplementedError(...)` with your solution, store the result in `answer` (or "
    "define the function the task names) and run the cell: `check(...)` prints \"Correct\", or says what is "
    "off and which step to revisit, without giving the answer. `paththeory.exercises.hint(\"<id>\")` repeats "
    "the task and the hint. Write a derivation or an interpretation in a Markdown cell under its task. "
    "Run the cells from the top: the exercises use the chapter's imports and data, and the first cell "
    "installs `paththeory` on Colab. In a graded notebook, asking for an answer (`solution()`, "
    "`reveal=True`) or changing a check earns no points."
)


def student_version(notebook, context: MarkdownContext | None = None):
    """A copy of an ``nbformat`` notebook for students: solutions stubbed, written solutions left out,
    Markdown made plain, figure captions kept.

    Every solution is replaced (:func:`strip_solution`) and its outputs removed; the Markdown
    cells are converted from MyST to plain Markdown (:func:`~paththeory_tools.plain_markdown.myst_to_markdown`
    with ``context``: the chapter titles and references, and links to the web book if it has a
    ``base_url``); cell metadata other than the ``exercise`` tag is dropped, and a note on how to do
    the exercises follows the title. :func:`plain_notebook` does the conversion.

    Example:
      >>> import nbformat
      >>> cell = nbformat.v4.new_code_cell('### BEGIN SOLUTION\\nanswer = 24\\n### END SOLUTION\\ncheck("model.n_paths", answer)')
      >>> print(student_version(nbformat.v4.new_notebook(cells=[cell])).cells[-1].source)
      # Your solution: store the result in `answer`.
      raise NotImplementedError("Exercise model.n_paths: replace this line with your solution (the task is above; paththeory.exercises.hint('model.n_paths') gives a hint)")
      check("model.n_paths", answer)
    """
    import nbformat

    from paththeory_tools.edition import strip_solutions

    out = plain_notebook(strip_solutions(notebook, keep_answers=True), context, solutions=False)
    cells = out.cells
    if any(BEGIN in c.source or "{exercise}" in c.source for c in notebook.cells):
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
    # The page's labelled equations, numbered as the web book numbers them ((2.3) in chapter 2) where the
    # context knows the book's numbers, else 1, 2, ... in order.
    local = _equation_numbers("\n".join(c.source for c in notebook.cells if c.cell_type == "markdown"))
    ctx.equations = {label: ctx.equation_numbers.get(label, n) for label, n in local.items()}
    out = copy.deepcopy(notebook)
    cells = []
    for cell in out.cells:
        tags = list(cell.metadata.get("tags", []))
        caption = None
        if cell.cell_type == "markdown":
            cell.source = myst_to_markdown(cell.source, ctx)
            cell.metadata = {"tags": tags} if solutions and tags else {}
            if not cell.source.strip():
                continue
        elif cell.cell_type == "code":
            caption = figure_caption(cell)
            figure = cell.metadata.get("mystnb", {}).get("figure", {})
            # "Figure 7.3", as the web book numbers it, where the context knows the number
            heading = ctx.numbers.get(figure.get("name", "") if isinstance(figure, dict) else "", "Figure")
            if BEGIN in cell.source and not solutions:
                cell.source = strip_solution(cell.source)
            cell.outputs, cell.execution_count = [], None
            if solutions:
                cell.metadata = {"tags": tags} if tags else {}
            else:
                cell.metadata = {"tags": ["exercise"]} if "exercise" in tags else {}
        cells.append(cell)
        if caption:
            cells.append(nbformat.v4.new_markdown_cell(f"**{heading}.** " + myst_to_markdown(caption, ctx)))
    out.cells = cells
    out.metadata.pop("jupytext", None)
    return out


# --------------------------------------------------------------------------- the exercises page


def _chapter_tasks(text: str) -> dict:
    """``{exercise label: title}`` of the ``{exercise}`` directives of a chapter's MyST source."""
    return {m.group(2): m.group(1).strip() for m in
            re.finditer(r"^`{3,}\{exercise\}[ \t]*(.*)\n(?:[ \t]*:[\w-]+:.*\n)*?[ \t]*:label:[ \t]*(\S+)", text, re.MULTILINE)}


_COURSE_SECTION = """\
## Using the exercises in a course

**The student edition.** `make student` (after `make book`) builds the web book without any
solution into `_build/student/html`, from the figures the full build computed, and checks that
no solution code, written solution or answer value shows on its pages, in its downloadable
notebooks or in the student notebooks; its Colab buttons open the student notebooks,
`notebooks/student/<chapter>.ipynb`: plain Markdown, solutions stubbed, figure captions kept,
links to the student web book, stable cell ids, a GPU requested on Colab. The first cell of every
notebook installs the package from the branch the notebook was opened from, so the answer keys
are always those of the notebook's own commit.
`paththeory_tools.notebooks.write_student_notebooks("book", "student")` writes the same notebooks
into another folder.

**Checks.** Each exercise cell ends with `check("<chapter>.<name>", answer)`. A right answer
prints `Correct (...)` with a sentence on what the number means. A wrong one raises
`WrongAnswer` with a diagnosis (sign, order of magnitude, an error rate for an accuracy,
float32 precision, which entries are off, which step to revisit) but *not* the expected
value. An answer of the wrong kind (`None`, the text `"24"` instead of the number, NaN, a
wrong shape) raises `InvalidAnswer`, saying which exercise and what kind of answer it expects.
`paththeory.exercises.hint("<id>")` repeats the task and the hint.

**Grading, with nbgrader.** nbgrader grades on the instructor's machine, no JupyterHub needed
(a folder and an SQLite gradebook), and students on Colab simply send their `.ipynb`:

```bash
# writes course/release/problems/problems.ipynb
paththeory-tools course release book/problems.md --course course
# reads uploads/<student>.ipynb
paththeory-tools course collect problems --uploads uploads/ --course course
# writes course/grades-problems.csv and course/feedback/
paththeory-tools course grade problems --course course
```

`release` writes nbgrader's source notebook from the chapter, gated solution prose and
demonstrations cut: after each answer cell, a public test that calls `check` (1 point: the
student sees its diagnoses while working) and a hidden test (2 points), whose key, frozen at
release, stays in the course folder with the package version; an implement-it-yourself problem
is called on hidden cases drawn from the course's secret, each output earning its share per case;
each derivation or interpretation gets a Markdown answer cell graded by hand. `grade` runs every
submission in a sandbox, computes the points outside it, writes one feedback page per student and
a CSV of the points and flags per question. An answer that calls `solution()` or
`check(..., reveal=True)`, redefines a check or calls the package's own implementation earns no
points for that exercise, with the reason, and a notebook that cannot find a data file fails the
grade run, naming the file, instead of being graded on empty cells. {doc}`instructor` describes
the private setup, the sandbox and the rest of the loop (`mark`, `pending`, `feedback`).
"""


#: The plain-text maths of the exercises' tasks (written for a terminal and a notebook's messages) and
#: its typeset form on the exercises page, so that the table does not set ``U_a`` beside $U_a$.
TASK_MATHS = ((re.compile(r"\bK_U\*"), "$K_{U^*}$"), (re.compile(r"\bK_GP\b"), "$K_{GP}$"),
              (re.compile(r"\bU\*"), "$U^*$"), (re.compile(r"\bU_a\b"), "$U_a$"),
              (re.compile(r"\bN = (\d+)\b"), r"$N = \1$"), (re.compile(r"\b(\d+) x (\d+)\b"), r"$\1\\times\2$"), (re.compile(r"^f\(x\)"), "$f(x)$"))


def task_markdown(task: str) -> str:
    """An exercise's task as the exercises page shows it: its maths typeset (:data:`TASK_MATHS`).

    Example:
      >>> task_markdown("the top-PC label overlap of K_GP and K_U*")
      'the top-PC label overlap of $K_{GP}$ and $K_{U^*}$'
      >>> task_markdown("the good-denoising entry of U* at N = 20")
      'the good-denoising entry of $U^*$ at $N = 20$'
    """
    for pattern, maths in TASK_MATHS:
        task = pattern.sub(maths, task)
    return task


def _problem_set_section(name: str, module, titles: dict[str, str]) -> str:
    """One graded set on the exercises page: its size, then its problems with their kind and points."""
    kinds = {k: sum(v == k for v in module.KINDS.values()) for k in ("derivation", "implement", "interpret")}
    rows = [f"| {{ref}}`{titles.get(label, label)} <{label}>` | {kind} | {module.POINTS[label]} |"
            for label, kind in module.KINDS.items()]
    return "\n".join([f"{{doc}}`{name}`: {len(module.KINDS)} problems worth {sum(module.POINTS.values())} points "
                      f"({kinds['derivation']} derivation{'s' if kinds['derivation'] != 1 else ''}, "
                      f"{kinds['implement']} to implement, "
                      f"{kinds['interpret']} to interpret).", "", "| Problem | Kind | Points |", "|---|---|---|",
                      *rows, ""])


def exercises_page(book_dir: str | Path) -> str:
    """The MyST source of the book's exercises page (``book/exercises.md``).

    Lists every exercise of :data:`EXERCISES` with its chapter, its task and a link to it, then each graded
    problem set of :data:`paththeory.exercises.sets.SETS` with its problems' kinds and points, and how a course
    uses them.
    """
    from paththeory.exercises import sets

    book = Path(book_dir)
    needed = {f"{name.split('.')[0]}.md" for name in EXERCISES} | {f"{name}.md" for name in sets.SETS}
    missing = sorted(needed - {p.name for p in book.glob("*.md")}) if book.is_dir() else None
    if missing is None or missing:
        raise FileNotFoundError(f"{book} is not the book's folder (book/ of the repository): "
                                + ("no such folder." if missing is None else f"it lacks {', '.join(missing)}."))
    chapters: dict[str, list[str]] = {}
    for name in EXERCISES:
        chapters.setdefault(name.split(".")[0], []).append(name)
    rows = []
    for chapter, names in chapters.items():
        md = book / f"{chapter}.md"
        tasks = _chapter_tasks(md.read_text())
        for number, name in enumerate(names, 1):
            title = tasks.get(exercise_label(name))
            link = f"{{ref}}`{title} <{exercise_label(name)}>`" if title else f"Exercise {number}"
            task = task_markdown(EXERCISES[name].task)
            rows.append(f"| {{doc}}`{chapter}` | {link} | {task} | `{name}` |")
    table = "\n".join(["| Chapter | Exercise | Task | Check id |", "|---|---|---|---|", *rows])
    sections = [_problem_set_section(name, module, _chapter_tasks((book / f"{name}.md").read_text()))
                for name, module in sets.SETS.items()]
    n_problems = sum(len(module.KINDS) for module in sets.SETS.values())
    return f"""\
# Exercises

The chapters on the paper's main experiments, {{doc}}`markov`, {{doc}}`omniglot` and
{{doc}}`pruning`, end with three exercises each, and so do the theory's {{doc}}`model` and
{{doc}}`gp_vs_finite`; the derivation chapters {{doc}}`derivation` and
{{doc}}`depth` share three. {{doc}}`order_parameter`, {{doc}}`solver` and {{doc}}`many_outputs` end
with one each, on what they add: the inner order parameter's matrix quadratic, the Hessian along a
symmetric direction and the decoupling of two outputs; {{doc}}`residual` with two, the $+1$ of a
level with a skip and its GP point, which the problem set takes further; {{doc}}`nonlinear` with two,
ReLU's homogeneity and why the heuristic's kernel is normalised by $U_a$. Each states a task, which the package solves in a few lines; on
the chapter's page the **Solution** under the task holds a worked solution together with the
output of its check. In a notebook, `check("<id>", answer)` says whether an answer is right and,
if not, what is off, without giving the answer away.

{table}

## The problem sets

The book has {len(sets.SETS)} graded problem sets of derivations on paper, functions to implement
from scratch (hidden tests call them on inputs the student never sees) and questions on the
book's numbers. With the {len(EXERCISES)} computed exercises above, the book has
{len(EXERCISES) + n_problems} exercises and problems.

{chr(10).join(sections)}
{_COURSE_SECTION}"""


def write_exercises_page(book_dir: str | Path, path: str | Path | None = None) -> Path:
    """Write :func:`exercises_page` to ``path`` (default ``<book_dir>/exercises.md``) and return it."""
    target = Path(path) if path is not None else Path(book_dir) / "exercises.md"
    from paththeory._io import write_text

    return write_text(target, exercises_page(book_dir))
