"""Grading the exercises with nbgrader, without a JupyterHub: release, autograde, grades and feedback.

Why nbgrader: it grades on the instructor's own machine (a folder and an SQLite gradebook; no
Docker, no hub), reads the ``### BEGIN SOLUTION`` / ``### END SOLUTION`` markers the book's
solutions already carry, strips hidden tests from the released notebook and puts them back
when grading, restores any test cell a student edited, gives partial credit (a test cell whose
last value is a number scores that many points) and writes per-student feedback. Students on
Colab download their notebook and send the ``.ipynb``; nothing else is needed.

The workflow (``paththeory-tools course ...`` on the command line, or these functions)::

    release("book/problems.md", "course")        # course/release/problems/problems.ipynb for students
    collect("course", "problems", "uploads/")    # uploads/<student>.ipynb -> course/submitted/...
    grade("course", "problems")                  # course/grades-problems.csv, course/feedback/...
    mark("course", "problems", "ada", "q-answer", 2.0)   # a written answer, graded by hand

A released notebook holds, after each exercise's answer cell, locked test cells:

* a **public** test (1 point) calling :func:`~paththeory.exercises.grading.graded` or
  :func:`~paththeory.exercises.grading.graded_function` without a key:
  the student sees :func:`paththeory.exercises.check`'s diagnoses while working;
* a **hidden** test (the rest of the points) with the key frozen at release (the expected values,
  written into the cell), which only the grader runs; an implement-it-yourself exercise gets
  partial credit, the fraction of hidden cases its function passes.

Both refuse (no points for that exercise) an answer that used :func:`~paththeory.exercises.solution`
or ``check(..., reveal=True)``, tried several answers against ``check`` (a loop over the candidates of
a discrete answer) or redefined a checking function (:func:`~paththeory.exercises.grading.assert_honest`). Written
answers (derivations, interpretations) are Markdown cells graded by hand (``nbgrader formgrader``
in a local Jupyter, or by editing the gradebook); :func:`grade` lists them as ungraded.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np

from paththeory import _io
from paththeory.exercises.answers import GRADING_ENV, GradingError
from paththeory_tools.plain_markdown import SOLUTION_DIRECTIVE
from paththeory.exercises.grading import HOW_GRADED


__all__ = ["collect", "grade", "mark", "read_grades", "release", "source_notebook"]

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
#: Points of a check-style exercise's public and hidden tests.
PUBLIC_POINTS, HIDDEN_POINTS = 1, 2


# --------------------------------------------------------------------------- the source notebook


def _frozen(values) -> str:
    """Python source for a list of arrays (exact: ``repr`` of floats round-trips)."""
    return "[" + ", ".join(repr(np.asarray(v, dtype=float).tolist()) for v in values) + "]"


def _nbgrader(grade_id: str, *, solution: bool, grade: bool, locked: bool, points: float | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
            "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def _grade_id(exercise_id: str, part: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", exercise_id.lower()).strip("-") + "-" + part


def _split_written_solutions(nb) -> None:
    """Give every ``{solution} <label>`` directive of the Markdown cells a cell of its own, tagged ``written:<label>``."""
    import nbformat

    cells = []
    for cell in nb.cells:
        if cell.cell_type != "markdown" or "{solution}" not in cell.source:
            cells.append(cell)
            continue
        text, at = cell.source, 0
        for m in SOLUTION_DIRECTIVE.finditer(text):
            label = re.fullmatch(r"[ \t]*(\S+)[ \t]*", m["args"])
            if not label:  # no single exercise label: no written answer, it stays in the text
                continue
            if text[at:m.start()].strip():
                cells.append(nbformat.v4.new_markdown_cell(text[at:m.start()].strip("\n")))
            written = nbformat.v4.new_markdown_cell(m.group(0).strip("\n"))
            written.metadata["tags"] = [f"written:{label.group(1)}"]
            cells.append(written)
            at = m.end()
        if text[at:].strip():
            cells.append(nbformat.v4.new_markdown_cell(text[at:].strip("\n")))
    nb.cells = cells


def source_notebook(md_path: str | Path, base_url: str | None = None):
    """The nbgrader *source* notebook of a chapter: answer cells, test cells with frozen keys, written answers.

    Every code cell with a solution becomes an answer cell (its lines after ``### END SOLUTION``
    move to the tests); a check-style exercise gets a public test (:data:`PUBLIC_POINTS`) and a
    hidden one (:data:`HIDDEN_POINTS`) holding its key; an implement-it-yourself exercise
    (:data:`paththeory.exercises.problems.IMPLEMENT`), whose check cell follows its function, gets a public
    test (1 point) and a hidden one with the rest of its points and its frozen outputs; every
    written ``{solution}`` becomes a Markdown answer cell graded by hand with the points of
    :data:`paththeory.exercises.problems.POINTS` (its model answer between the markers, stripped on release).
    """
    import jupytext

    from paththeory_tools.student import plain_notebook
    from paththeory_tools.notebooks import BOOK_URL
    from paththeory_tools.plain_markdown import MarkdownContext

    md = Path(md_path)
    nb = jupytext.reads(md.read_text(), fmt="md:myst")
    _split_written_solutions(nb)
    context = MarkdownContext.from_book(md.parent, base_url=base_url or BOOK_URL)
    plain = plain_notebook(nb, context, solutions=True)
    cells = []
    for cell in plain.cells:
        cells += _source_cells(cell, len(cells))
    plain.cells = cells
    plain.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return plain


def _source_cells(cell, position: int) -> list:
    """The source notebook's cells for one cell of the plain notebook, by its kind (``position``: how
    many source cells come before it)."""
    from paththeory_tools.student import BEGIN

    label = _written_label(cell)
    if label:
        return _written_answer(cell, label)
    if cell.cell_type != "code":
        return _text_cell(cell)
    if BEGIN in cell.source:
        return _solution_cells(cell, position)
    tests = _implement_tests(cell)
    return tests if tests is not None else _code_cell(cell)


def _written_label(cell) -> str | None:
    """The exercise label of a written ``{solution}``'s cell (tagged by :func:`_split_written_solutions`), else None."""
    return next((t.split(":", 1)[1] for t in cell.metadata.get("tags", []) if t.startswith("written:")), None)


def _written_answer(cell, label: str) -> list:
    """A written solution: a Markdown answer cell graded by hand, its model answer between the markers."""
    import nbformat

    from paththeory_tools.student import BEGIN, END
    from paththeory.exercises.problems import POINTS

    body = re.sub(r"^> ?", "", cell.source, flags=re.MULTILINE).strip()
    body = re.sub(r"^\*\*Solution\*\*\s*", "", body).strip()
    answer = nbformat.v4.new_markdown_cell(f"**Your answer.**\n\n{BEGIN}\n{body}\n{END}")
    answer.metadata = _nbgrader(_grade_id(label, "answer"), solution=True, grade=True, locked=False,
                                points=POINTS[label])
    return [answer]


def _text_cell(cell) -> list:
    """A Markdown cell, kept; the sentence on how the exercises work says how they are graded."""
    from paththeory_tools.plain_markdown import _HOW_WITH_SOLUTIONS

    cell.source = cell.source.replace(_HOW_WITH_SOLUTIONS, HOW_GRADED)
    return [cell]


def _solution_cells(cell, position: int) -> list:
    """A code cell with a solution: its answer cell (up to ``### END SOLUTION``), then the public and
    hidden tests of its check-style exercise, if it has one."""
    from paththeory.exercises.checking import _truth
    from paththeory_tools.student import END, exercise_id
    from paththeory.exercises.problems import IMPLEMENT

    head, _, tail = cell.source.partition(END)
    cell.source, cell.metadata = head + END, {}
    ex = exercise_id(tail)
    defined = re.findall(r"^def (\w+)\(", head, re.MULTILINE)
    owner = ex or next((name for name, spec in IMPLEMENT.items() if spec.function in defined), f"cell-{position}")
    cell.metadata.update(_nbgrader(_grade_id(owner, "answer"), solution=True, grade=False, locked=False))
    return [cell] + (_check_tests(ex, _truth(ex)) if ex else [])


def _implement_tests(cell) -> list | None:
    """The check cell of an implement-it-yourself exercise: its public and hidden tests (the cell itself
    goes); None for any other code cell."""
    from paththeory.exercises.problems import IMPLEMENT, POINTS, expected_outputs

    implement = re.search(r"""check_implementation\(\s*["']([\w.]+)["']\s*,\s*(\w+)""", cell.source)
    if not (implement and implement.group(1) in IMPLEMENT):
        return None
    name, fn = implement.group(1), implement.group(2)
    return _function_tests(name, fn, expected_outputs(name), POINTS[IMPLEMENT[name].label])


def _code_cell(cell) -> list:
    """Any other code cell, kept without metadata."""
    cell.metadata = {}
    return [cell]


def _test_cell(grade_id: str, source: str, points: float):
    import nbformat

    cell = nbformat.v4.new_code_cell(source)
    cell.metadata = _nbgrader(grade_id, solution=False, grade=True, locked=True, points=points)
    return cell


def _check_tests(ex: str, key) -> list:
    public = f'# Test: {ex} ({PUBLIC_POINTS} point)\nfrom paththeory.exercises import graded\ngraded("{ex}", answer)'
    hidden = (f"# Hidden test: {ex} ({HIDDEN_POINTS} points), run when the notebook is graded\n"
              f"from paththeory.exercises import graded\n{HIDDEN_BEGIN}\ngraded(\"{ex}\", answer, key={_frozen(key)})\n"
              f"{HIDDEN_END}")
    return [_test_cell(_grade_id(ex, "public"), public, PUBLIC_POINTS),
            _test_cell(_grade_id(ex, "hidden"), hidden, HIDDEN_POINTS)]


def _function_tests(name: str, fn: str, key, points: int) -> list:
    hidden_points = points - 1
    key_source = "[" + ", ".join(_frozen([k]) if np.ndim(k) == 0 else repr(np.asarray(k, dtype=float).tolist())
                                 for k in key) + "]"
    public = f"# Test: {name} (1 point)\nfrom paththeory.exercises import graded_function\ngraded_function(\"{name}\", {fn})"
    hidden = (f"# Hidden tests: {name} ({hidden_points} points, partial credit per case), run when the notebook "
              f"is graded\nfrom paththeory.exercises import graded_function\n{HIDDEN_BEGIN}\n"
              f"graded_function(\"{name}\", {fn}, key={key_source}, points={hidden_points})\n{HIDDEN_END}")
    return [_test_cell(_grade_id(name, "public"), public, 1),
            _test_cell(_grade_id(name, "hidden"), hidden, hidden_points)]


# --------------------------------------------------------------------------- the nbgrader course


def _config(course: Path, timeout: int):
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.root = str(course.resolve())
    config.CourseDirectory.course_id = "paththeory"
    config.Execute.timeout = timeout
    config.Execute.allow_errors = True
    config.ExecutePreprocessor.timeout = timeout
    return config


def _api(course: Path, timeout: int = 900):
    from nbgrader.apps import NbGraderAPI

    # nbgrader runs ``alembic`` (installed beside this Python) to create its gradebook.
    scripts = str(Path(sys.executable).parent)
    if scripts not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")

    return NbGraderAPI(config=_config(course, timeout))


def release(md_path: str | Path, course_dir: str | Path, base_url: str | None = None) -> Path:
    """Write the source notebook of chapter ``md_path`` into the nbgrader course ``course_dir`` and
    generate the students' version; returns ``<course>/release/<name>/<name>.ipynb`` (hand it out).

    The keys are computed now, with the installed package, and frozen into the hidden tests.
    """
    import nbformat

    md, course = Path(md_path), Path(course_dir)
    if not md.is_file():
        raise FileNotFoundError(f"no chapter {md}: give a chapter's .md, e.g. book/problems.md.")
    name = md.stem
    course.mkdir(parents=True, exist_ok=True)
    source = course / "source" / name / f"{name}.ipynb"
    source.parent.mkdir(parents=True, exist_ok=True)
    _io.write_text(source, nbformat.writes(source_notebook(md, base_url)).rstrip("\n") + "\n")
    result = _api(course).generate_assignment(name, force=True)
    if not result["success"]:
        raise GradingError(f"nbgrader could not release {name}:\n{result.get('error') or result.get('log')}")
    return course / "release" / name / f"{name}.ipynb"


def collect(course_dir: str | Path, assignment: str, uploads: str | Path) -> list[str]:
    """Put the uploaded notebooks ``<uploads>/<student>.ipynb`` where nbgrader looks for submissions;
    returns the student ids (the file names)."""
    course, up = Path(course_dir), Path(uploads)
    files = sorted(up.glob("*.ipynb"))
    if not files:
        raise FileNotFoundError(f"no notebooks in {up}: expected one <student>.ipynb per student.")
    students = []
    for f in files:
        target = course / "submitted" / f.stem / assignment / f"{assignment}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
        students.append(f.stem)
    return students


def _missing_file_errors(notebook: Path) -> list[str]:
    """The missing-file errors a graded notebook raised (their messages)."""
    import nbformat

    from paththeory.display.notices import MISSING_FILE_ERRORS

    names = {cls.__name__ for cls in MISSING_FILE_ERRORS}
    return [f"{out.ename}: {out.evalue}" for cell in nbformat.read(notebook, as_version=4).cells
            if cell.cell_type == "code" for out in cell.get("outputs", [])
            if out.get("output_type") == "error" and out.get("ename") in names]


def grade(course_dir: str | Path, assignment: str, timeout: int = 900) -> Path:
    """Autograde every submission of ``assignment``, write feedback and ``<course>/grades-<assignment>.csv``.

    The CSV has one row per student and question (``student, question, kind, score, max_score``;
    ``kind`` is ``auto`` or ``manual``, a manual question's score empty until graded by hand), then a
    row ``total`` per student. Raises :class:`GradingError` naming the file when a notebook could not
    find a data file (the graded run needs every file; see :mod:`paththeory.display.notices`).
    """
    course = Path(course_dir)
    api = _api(course, timeout)
    students = sorted(p.name for p in (course / "submitted").iterdir()
                      if (p / assignment).is_dir()) if (course / "submitted").is_dir() else []
    if not students:
        raise FileNotFoundError(f"no submissions of {assignment} in {course / 'submitted'} (use collect first).")
    previous = os.environ.get(GRADING_ENV)
    os.environ[GRADING_ENV] = "1"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        with warnings.catch_warnings():
            # SQLAlchemy's notes on nbgrader's sessions ("... not in session"): nbgrader's, not the grades'.
            warnings.filterwarnings("ignore", message=".*not in session.*")
            _autograde_all(api, course, assignment, students)
    finally:
        if previous is None:
            os.environ.pop(GRADING_ENV, None)
        else:
            os.environ[GRADING_ENV] = previous
    return _write_grades(course, assignment, students)


def _autograde_all(api, course: Path, assignment: str, students: list[str]) -> None:
    for student in students:
        result = api.autograde(assignment, student, force=True, create=True)
        if not result["success"]:
            raise GradingError(f"nbgrader could not grade {student}'s {assignment}:\n"
                               f"{result.get('error') or result.get('log')}")
        graded_nb = course / "autograded" / student / assignment / f"{assignment}.ipynb"
        missing = _missing_file_errors(graded_nb)
        if missing:
            raise GradingError(f"grading {student}'s {assignment} needs a file this machine lacks: "
                               f"{missing[0]} Install it (or set PATHTHEORY_DATA) and grade again.")
        api.generate_feedback(assignment, student, force=True)


@contextmanager
def _gradebook(course: Path) -> Iterator:
    """nbgrader's gradebook of ``course``, with SQLAlchemy's notes on nbgrader's sessions silenced."""
    from nbgrader.api import Gradebook

    with warnings.catch_warnings(), Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        warnings.simplefilter("ignore")
        yield gb


def _write_grades(course: Path, assignment: str, students: list[str]) -> Path:
    import nbformat

    out = course / f"grades-{assignment}.csv"
    source = nbformat.read(course / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    order = {c.metadata["nbgrader"]["grade_id"]: i for i, c in enumerate(source.cells) if "nbgrader" in c.metadata}
    with _gradebook(course) as gb:
        rows = []
        for student in students:
            submission = gb.find_submission(assignment, student)
            total = 0.0
            for notebook in submission.notebooks:
                for g in sorted(notebook.grades, key=lambda g: order.get(g.name, len(order))):
                    manual = g.cell.cell_type == "markdown"
                    score = None if g.needs_manual_grade and g.manual_score is None else g.score
                    total += score or 0.0
                    rows.append([student, g.name, "manual" if manual else "auto",
                                 "" if score is None else f"{score:g}", f"{g.max_score:g}"])
            rows.append([student, "total", "", f"{total:g}", f"{submission.max_score:g}"])
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["student", "question", "kind", "score", "max_score"])
    writer.writerows(rows)
    return _io.write_text(out, text.getvalue())


def mark(course_dir: str | Path, assignment: str, student: str, question: str, points: float,
         comment: str | None = None) -> Path:
    """Grade a written answer by hand: give ``student``'s ``question`` (a ``manual`` row of the grades
    CSV, e.g. ``prob-omniglot-validity-answer``) ``points`` out of its maximum, with an optional
    ``comment`` (it shows in the student's feedback after the next :func:`grade`), and rewrite
    ``grades-<assignment>.csv``. The same as nbgrader's formgrader, from the command line.
    """
    from nbgrader.api import MissingEntry

    course = Path(course_dir)
    if not (course / "gradebook.db").is_file():
        raise FileNotFoundError(f"no gradebook in {course}: grade {assignment} first (paththeory-tools course grade).")
    points = float(points)
    with _gradebook(course) as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            raise ValueError(f"no graded submission of {assignment} by {student!r}; the graded students are "
                             f"{sorted(s.student.id for s in gb.assignment_submissions(assignment))}.") from None
        grades = {g.name: g for nb in submission.notebooks for g in nb.grades}
        manual = sorted(name for name, g in grades.items() if g.cell.cell_type == "markdown")
        if question not in manual:
            raise ValueError(f"{question!r} is not a written answer of {assignment}; grade one of {manual} "
                             "(the automatic questions are graded by their tests).")
        g = grades[question]
        if not 0 <= points <= g.max_score:
            raise ValueError(f"points must be between 0 and {g.max_score:g} for {question}; got {points:g}.")
        g.manual_score = points
        if comment is not None:
            notebook = next(nb for nb in submission.notebooks if g in nb.grades)
            gb.find_comment(question, notebook.name, assignment, student).manual_comment = comment
        gb.db.commit()
        students = sorted(s.student.id for s in gb.assignment_submissions(assignment))
    return _write_grades(course, assignment, students)


def read_grades(path: str | Path) -> dict:
    """``{student: {question: (score or None, max_score)}}`` from a grades CSV of :func:`grade`."""
    out: dict = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            score = float(row["score"]) if row["score"] else None
            out.setdefault(row["student"], {})[row["question"]] = (score, float(row["max_score"]))
    return out
