"""Grading the exercises with nbgrader and a sandbox, without a JupyterHub: release, collect, grade,
mark, feedback.

Why nbgrader: it grades on the instructor's own machine (a folder and an SQLite gradebook; no
Docker, no hub), reads the ``### BEGIN SOLUTION`` / ``### END SOLUTION`` markers the book's
solutions already carry, and its formgrader marks written answers. Students on Colab download
their notebook and send the ``.ipynb``; nothing else is needed. Why not otter-grader: its
protection is a Docker container, in which the tests still run in the student's own kernel (a
patched ``numpy.allclose`` still works there); here no point is computed in a process that ran
student code (``book/instructor.md``).

The workflow (``paththeory-tools course ...`` on the command line, or these functions)::

    release("book/problems.md", "course")        # course/release/problems/problems.ipynb for students
    collect("course", "problems", "uploads/")    # uploads/<student>.ipynb -> course/submitted/...
    grade("course", "problems")                  # course/grades-problems.csv, course/feedback/...
    grade("course", "problems", student="ada")   # one student again
    mark("course", "problems", "ada", "prob-gamma-part3-answer", 2.0, "sign error")  # by hand, a part
    pending("course", "problems")                # written answers still to mark
    feedback("course", "problems", "ada")        # the feedback again, nothing run

:func:`release` cuts the gated solutions (:func:`paththeory_tools.edition.strip_solutions`), writes
nbgrader's source notebook and freezes the keys into ``<course>/keys/`` with the package version:
the chapters' check-style keys, and for each implement problem (:data:`paththeory.exercises.problems.IMPLEMENT`)
its public cases (the package's) and hidden cases drawn from ``<course>/secret``, with their
reference outputs. No key is in any notebook. What no student may see (the chapter's solution
fragments, its answer values, the frozen hidden outputs) is frozen with the keys, and one leak
check (:func:`_refuse_leaks`) refuses a released notebook or a feedback page that shows any of it.
Each derivation has one answer cell per part of its rubric
(:data:`paththeory.exercises.problems.PARTS`), marked as a question of its own.

:func:`grade` runs each submission in the sandbox (:mod:`paththeory_tools.sandbox`: its own copy,
no network, the course folder out of sight, time and memory limits; test cells and ``demo`` cells
skipped) and captures each check-style ``answer`` as numbers; it calls each implement answer in a
second sandbox on the public and hidden cases (inputs only), and computes every point here
(:mod:`paththeory_tools.autograde`): each output of a function earns its share. A static scan
refuses (no points, the reason shown) ``solution()``, ``reveal=``, a changed check or the
package's own implementation, and flags changing library code, stack frames, the gradebook or the
display. The gradebook is written after every sandbox has exited; a manual score that
:func:`mark` did not set is flagged and ignored.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from paththeory import _io
from paththeory.exercises.answers import GradingError
from paththeory_tools.plain_markdown import SOLUTION_DIRECTIVE
from paththeory.exercises.grading import HOW_GRADED


__all__ = ["collect", "feedback", "grade", "mark", "part_grade_id", "pending", "read_flags", "read_grades", "release",
           "source_notebook", "written_parts"]

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
    :data:`paththeory.exercises.problems.POINTS` (its model answer between the markers, stripped on release),
    a derivation one such cell per part of its rubric (:data:`paththeory.exercises.problems.PARTS`).
    """
    import jupytext

    from paththeory_tools.student import plain_notebook
    from paththeory_tools.notebooks import BOOK_URL
    from paththeory_tools.plain_markdown import MarkdownContext

    from paththeory_tools.edition import strip_solutions

    md = Path(md_path)
    nb = strip_solutions(jupytext.reads(md.read_text(), fmt="md:myst"), keep_answers=True, keep_written=True)
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


def part_grade_id(label: str, part: str) -> str:
    """The grade id of part ``part`` of derivation ``label`` (its own answer cell, a row of the grades CSV).

    Example:
      >>> part_grade_id("prob-gamma", "2")
      'prob-gamma-part2-answer'
    """
    return _grade_id(label, f"part{part}-answer")


def written_parts() -> dict:
    """``{grade id: (derivation label, its Part)}`` of every part of :data:`paththeory.exercises.problems.PARTS`."""
    from paththeory.exercises.problems import PARTS

    return {part_grade_id(label, p.part): (label, p) for label, parts in PARTS.items() for p in parts}


def _model_parts(label: str, body: str, parts) -> list[str]:
    """A derivation's model answer cut at its parts' headings (``**1.**``, ``**2.**``, ... at a line's start),
    one piece per part of the rubric (text before the first heading goes with the first part)."""
    pieces = re.split(r"^(?=\*\*\d+\.\*\*)", body, flags=re.MULTILINE)
    head = pieces.pop(0) if pieces and not re.match(r"\*\*\d+\.\*\*", pieces[0]) else ""
    found = [re.match(r"\*\*(\d+)\.\*\*", piece).group(1) for piece in pieces]
    if found != [p.part for p in parts]:
        raise GradingError(f"the written solution of {label} has the parts {found}, its rubric "
                           f"(paththeory.exercises.problems.PARTS) {[p.part for p in parts]}: head each part "
                           "of the solution with **1.**, **2.**, ... as the task numbers them.")
    pieces[0] = (head.strip() + "\n\n" + pieces[0]).strip() if head.strip() else pieces[0]
    return [piece.strip() for piece in pieces]


def _written_answer(cell, label: str) -> list:
    """A written solution: Markdown answer cells graded by hand, their model answers between the markers.

    A derivation with a rubric (:data:`paththeory.exercises.problems.PARTS`) gets one cell per part, whose
    text states the part's points and what earns them; any other written problem gets one cell worth
    its :data:`~paththeory.exercises.problems.POINTS`.
    """
    import nbformat

    from paththeory_tools.student import BEGIN, END
    from paththeory.exercises.problems import PARTS, POINTS

    body = re.sub(r"^> ?", "", cell.source, flags=re.MULTILINE).strip()
    body = re.sub(r"^\*\*Solution\*\*\s*", "", body).strip()
    if label not in PARTS:
        answer = nbformat.v4.new_markdown_cell(f"**Your answer.**\n\n{BEGIN}\n{body}\n{END}")
        answer.metadata = _nbgrader(_grade_id(label, "answer"), solution=True, grade=True, locked=False,
                                    points=POINTS[label])
        return [answer]
    cells = []
    for part, model in zip(PARTS[label], _model_parts(label, body, PARTS[label])):
        answer = nbformat.v4.new_markdown_cell(
            f"**Your answer to part {part.part}** ({part.points} points: {part.earns}).\n\n{BEGIN}\n{model}\n{END}")
        answer.metadata = _nbgrader(part_grade_id(label, part.part), solution=True, grade=True, locked=False,
                                    points=part.points)
        cells.append(answer)
    return cells


def _text_cell(cell) -> list:
    """A Markdown cell, kept; the sentence on how the exercises work says how they are graded."""
    from paththeory_tools.plain_markdown import _HOW_WITH_SOLUTIONS

    cell.source = cell.source.replace(_HOW_WITH_SOLUTIONS, HOW_GRADED)
    return [cell]


def _solution_cells(cell, position: int) -> list:
    """A code cell with a solution: its answer cell (up to ``### END SOLUTION``), then the public and
    hidden tests of its check-style exercise, if it has one."""
    from paththeory_tools.student import END, exercise_id
    from paththeory.exercises.problems import IMPLEMENT

    head, _, tail = cell.source.partition(END)
    cell.source, cell.metadata = head + END, {}
    ex = exercise_id(tail)
    defined = re.findall(r"^def (\w+)\(", head, re.MULTILINE)
    owner = ex or next((name for name, spec in IMPLEMENT.items() if spec.function in defined), f"cell-{position}")
    cell.metadata.update(_nbgrader(_grade_id(owner, "answer"), solution=True, grade=False, locked=False))
    return [cell] + (_check_tests(ex) if ex else [])


def _implement_tests(cell) -> list | None:
    """The check cell of an implement-it-yourself exercise: its public and hidden tests (the cell itself
    goes); None for any other code cell."""
    from paththeory.exercises.problems import IMPLEMENT, POINTS

    implement = re.search(r"""check_implementation\(\s*["']([\w.]+)["']\s*,\s*(\w+)""", cell.source)
    if not (implement and implement.group(1) in IMPLEMENT):
        return None
    name, fn = implement.group(1), implement.group(2)
    return _function_tests(name, fn, POINTS[IMPLEMENT[name].label])


#: A code cell the grader skips: tagged ``demo`` in the book (prior draws, figures), or a NUTS run
#: (``sample_posterior``): they illustrate and affect no grade. (A cell whose names later cells
#: use, such as a setup cell that draws from the prior, must not be tagged.)
DEMO_TAG = "demo"
_DEMO_CODE = re.compile(r"\bsample_posterior\s*\(")


def _code_cell(cell) -> list:
    """Any other code cell, kept without metadata but its ``demo`` tag (given to sampling cells)."""
    demo = DEMO_TAG in cell.metadata.get("tags", []) or bool(_DEMO_CODE.search(cell.source))
    cell.metadata = {"tags": [DEMO_TAG]} if demo else {}
    return [cell]


def _test_cell(grade_id: str, source: str, points: float):
    import nbformat

    cell = nbformat.v4.new_code_cell(source)
    cell.metadata = _nbgrader(grade_id, solution=False, grade=True, locked=True, points=points)
    return cell


def _check_tests(ex: str) -> list:
    """The public test (the student's :func:`~paththeory.exercises.check`) and the hidden test's cell,
    which holds no key: the grader scores both outside the notebook, from the key in the course folder."""
    public = f'# Test: {ex} ({PUBLIC_POINTS} point)\nfrom paththeory.exercises import graded\ngraded("{ex}", answer)'
    hidden = (f"# Hidden test: {ex} ({HIDDEN_POINTS} points): the grader checks your `answer` outside this "
              "notebook, against the key kept in the course folder.")
    return [_test_cell(_grade_id(ex, "public"), public, PUBLIC_POINTS),
            _test_cell(_grade_id(ex, "hidden"), hidden, HIDDEN_POINTS)]


def _function_tests(name: str, fn: str, points: int) -> list:
    """The public test (the package's visible cases) and the hidden test's cell, which holds nothing:
    the grader calls the function in a fresh sandbox on cases drawn at release from the course's secret."""
    public = f"# Test: {name} (1 point)\nfrom paththeory.exercises import graded_function\ngraded_function(\"{name}\", {fn})"
    hidden = (f"# Hidden tests: {name} ({points - 1} points, each output earns its share per case): the grader "
              f"calls {fn} outside this notebook on cases drawn for this course.")
    return [_test_cell(_grade_id(name, "public"), public, 1), _test_cell(_grade_id(name, "hidden"), hidden, points - 1)]


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


SECRET_FILE = "secret"


def _secret(course: Path) -> str:
    """The course's secret (``<course>/secret``, mode 0600), created at the first release."""
    import secrets

    path = course / SECRET_FILE
    if not path.is_file():
        _io.write_text(path, secrets.token_hex(16) + "\n")
        os.chmod(path, 0o600)
    text = path.read_text().strip()
    if not re.fullmatch(r"[0-9a-fA-F]{16,}", text):
        raise GradingError(f"{path} is not a course secret (16 or more hex digits); remove it to draw a new one "
                           "(before release only: the keys of released assignments are drawn from it).")
    return text


def _seed(secret: str, exercise: str) -> int:
    import hashlib

    return int.from_bytes(hashlib.sha256(f"{secret}:{exercise}".encode()).digest()[:8], "big")


def _questions(source) -> list[dict]:
    """Each automatic question of a source notebook: exercise, kind, grade ids, points and the
    answer's function (implement) from its test cells."""
    from paththeory.exercises.problems import IMPLEMENT

    out = []
    for cell in source.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        found = re.match(r"# Test: ([\w.]+)", cell.source) if gid.endswith("-public") else None
        if not found:
            continue
        ex = found.group(1)
        stem = gid[: -len("-public")]
        implement = ex in IMPLEMENT
        hidden = next(c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id") == stem + "-hidden")
        out.append({"exercise": ex, "kind": "implement" if implement else "check", "answer": stem + "-answer",
                    "public": gid, "hidden": stem + "-hidden", "public_points": cell.metadata["nbgrader"]["points"],
                    "hidden_points": hidden.metadata["nbgrader"]["points"],
                    "function": IMPLEMENT[ex].function if implement else None})
    return out


def _outputs_parts(value) -> list[np.ndarray]:
    return [np.asarray(v, dtype=float) for v in value] if isinstance(value, tuple) else [np.asarray(value, float)]


def _implement_keys(spec, seed: int) -> dict:
    """The public (package) and hidden (``seed``) cases of an implement problem and their reference outputs."""
    arrays = {}
    for which, cases in (("public", spec.cases()), ("hidden", spec.cases(seed))):
        for k, args in enumerate(cases):
            for j, a in enumerate(args):
                arrays[f"{spec.id}/{which}/case{k}_arg{j}"] = np.asarray(a, dtype=float)
            for j, part in enumerate(_outputs_parts(spec.reference(*args))):
                arrays[f"{spec.id}/{which}/case{k}_out{j}"] = part
        arrays[f"{spec.id}/{which}/counts"] = np.array([len(args) for args in cases])
    return arrays


def _write_keys(course: Path, name: str, source, root: Path) -> Path:
    """Freeze the keys of ``name`` into ``<course>/keys/<name>.npz`` and ``.json`` (the package version,
    the questions, what the leak check looks for): check-style keys from the package, implement cases
    drawn from the course secret."""
    import paththeory
    from paththeory.exercises import EXERCISES
    from paththeory.exercises.checking import _truth
    from paththeory.exercises.problems import IMPLEMENT

    secret = _secret(course)
    questions = _questions(source)
    arrays: dict = {}
    for q in questions:
        if q["kind"] == "implement":
            spec = IMPLEMENT[q["exercise"]]
            arrays.update(_implement_keys(spec, _seed(secret, q["exercise"])))
            q.update(rtol=spec.rtol, atol=spec.atol, single=not isinstance(arrays.get(f"{spec.id}/public/case0_out1"),
                                                                            np.ndarray))
        else:
            ex = EXERCISES[q["exercise"]]
            for i, a in enumerate(_truth(q["exercise"])):
                arrays[f"{q['exercise']}/key{i}"] = np.asarray(a, dtype=float)
            q.update(rtol=ex.rtol, atol=ex.atol, items=len(_truth(q["exercise"])))
    keys = course / "keys" / f"{name}.npz"
    _io.write_with(keys, lambda tmp: np.savez(tmp, **arrays))
    _io.write_json(keys.with_suffix(".json"), {"assignment": name, "paththeory_version": paththeory.__version__,
                                               "questions": questions,
                                               "leaks": _leak_material(root, name, questions, arrays)})
    return keys


def _leak_material(root: Path, name: str, questions: list[dict], arrays: dict) -> dict:
    """What no student artefact of ``name`` may show, frozen at release (the feedback is checked with it
    later, without the book): the chapter's solution fragments and answer values
    (:func:`paththeory_tools.edition.solution_fragments`, :func:`~paththeory_tools.edition.answer_values`)
    and each frozen hidden output of an implement problem (``repr`` and 6 significant digits; values
    with fewer than 4 significant digits are left out: they occur by chance)."""
    from paththeory_tools.edition import answer_values, solution_fragments

    fragments = solution_fragments(root).get(name, []) if (root / "book").is_dir() else []
    values = {ex: forms for ex, forms in answer_values([name]).items() if ex.split(".")[0] == name}
    for q in questions:
        if q["kind"] != "implement":
            continue
        frozen = set()
        for key, value in arrays.items():
            if key.startswith(f"{q['exercise']}/hidden/") and "_out" in key:
                for v in np.ravel(value).astype(float):
                    short = f"{v:.6g}"
                    digits = re.sub(r"\D", "", short.split("e")[0]).lstrip("0")
                    if np.isfinite(v) and not v.is_integer() and len(digits) >= 4:
                        frozen |= {repr(float(v)), short}
        values[q["exercise"]] = sorted(set(values.get(q["exercise"], [])) | frozen)
    return {"fragments": {name: fragments}, "values": values}


def _frozen_leak_material(course: Path, assignment: str) -> dict:
    """The leak material of ``assignment`` frozen at release (:func:`_leak_material`)."""
    path = course / "keys" / f"{assignment}.json"
    info = json.loads(path.read_text()) if path.is_file() else {}
    if "leaks" not in info:
        raise GradingError(f"{path} holds no leak check (a release older than this paththeory-tools, or none): "
                           f"release {assignment} again (same secret, same hidden cases) before writing feedback.")
    return info["leaks"]


def release(md_path: str | Path, course_dir: str | Path, base_url: str | None = None) -> Path:
    """Write the source notebook of chapter ``md_path`` into the nbgrader course ``course_dir``, generate
    the students' version and freeze the keys; returns ``<course>/release/<name>/<name>.ipynb`` (hand it out).

    The keys are computed now, with the installed package (its version is recorded: grading refuses
    another), into ``<course>/keys/``; an implement problem's hidden cases are drawn from the course's
    secret (``<course>/secret``, created at the first release). Neither is in any notebook.
    """
    import nbformat

    md, course = Path(md_path), Path(course_dir)
    if not md.is_file():
        raise FileNotFoundError(f"no chapter {md}: give a chapter's .md, e.g. book/problems.md.")
    name = md.stem
    course.mkdir(parents=True, exist_ok=True)
    source_nb = source_notebook(md, base_url)
    source = course / "source" / name / f"{name}.ipynb"
    source.parent.mkdir(parents=True, exist_ok=True)
    _io.write_text(source, nbformat.writes(source_nb).rstrip("\n") + "\n")
    _write_keys(course, name, source_nb, md.resolve().parent.parent)
    result = _api(course).generate_assignment(name, force=True)
    if not result["success"]:
        raise GradingError(f"nbgrader could not release {name}:\n{result.get('error') or result.get('log')}")
    released = course / "release" / name / f"{name}.ipynb"
    try:
        _refuse_leaks([(released, name)], _frozen_leak_material(course, name),
                      "nothing is handed out (the released notebook is removed)")
    except GradingError:
        released.unlink(missing_ok=True)  # no leaky notebook stays where one would hand it out
        raise
    return released


def _refuse_leaks(files: list[tuple], material: dict, consequence: str) -> None:
    """Raise :class:`GradingError` if a student artefact shows a solution: the one leak check of the
    released notebook and of every feedback page (:func:`paththeory_tools.edition.artefact_leaks` with
    the material frozen at release, :func:`_leak_material`). ``files``: ``(path, chapter)`` or
    ``(path, chapter, name to report)``; ``consequence``: what the refusal means, for the message."""
    from paththeory_tools.edition import artefact_leaks

    found = artefact_leaks(Path.cwd(), files, material["fragments"], material["values"])
    if found:
        raise GradingError(f"a student artefact shows a solution; {consequence}:\n  " + "\n  ".join(found[:10]))


def collect(course_dir: str | Path, assignment: str, uploads: str | Path) -> list[str]:
    """Put the uploaded notebooks ``<uploads>/<student>.ipynb`` where nbgrader looks for submissions;
    returns the student ids (the file names)."""
    course, up = Path(course_dir), Path(uploads)
    files = sorted(up.glob("*.ipynb"))
    if not files:
        raise FileNotFoundError(f"no notebooks in {up}: expected one <student>.ipynb per student.")
    students = []
    for f in files:
        if not re.fullmatch(r"[\w.-]+", f.stem):
            raise ValueError(f"{f.name}: a student id is letters, digits, '.', '-' or '_'; rename the file.")
        target = course / "submitted" / f.stem / assignment / f"{assignment}.ipynb"
        _io.write_with(target, lambda tmp, f=f: shutil.copyfile(f, tmp))
        students.append(f.stem)
    return students


# --------------------------------------------------------------------------- grading


def _keys(course: Path, assignment: str) -> tuple[dict, dict]:
    """The frozen keys of ``assignment``: ``(the JSON: version and questions, the arrays)``; refuses a
    release made with another version of paththeory."""
    import paththeory

    info_path = course / "keys" / f"{assignment}.json"
    if not info_path.is_file():
        raise GradingError(f"no keys for {assignment} in {course / 'keys'}: release it with this version of "
                           "paththeory-tools (course release) before grading.")
    info = json.loads(info_path.read_text())
    if info.get("paththeory_version") != paththeory.__version__:
        raise GradingError(f"{assignment} was released with paththeory {info.get('paththeory_version')} and this is "
                           f"paththeory {paththeory.__version__}: grade with the version it was released with "
                           f"(pip install paththeory=={info.get('paththeory_version')}), or release it again "
                           "(new keys: only before students start).")
    with np.load(info_path.with_suffix(".npz"), allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    return info, arrays


def _read_npz(path: Path, limit: int = 64 * 2**20) -> dict:
    """A sandbox's ``.npz`` as plain arrays (no pickles; at most ``limit`` bytes); empty if unreadable."""
    if not path.is_file() or path.is_symlink() or path.stat().st_size > limit:
        return {}
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError):
        return {}


def _plan(cells: list[dict], released_cells: list[dict], questions: list[dict]) -> tuple[set[int], dict]:
    """``(skipped cells, {index of a check-style answer cell: exercise})`` of a submission: the test
    cells (scored by the grader) and the demo cells (tagged or the release's) are skipped."""
    demos = {src(c) for c in released_cells if DEMO_TAG in c.get("metadata", {}).get("tags", [])}
    tests = {q[k] for q in questions for k in ("public", "hidden")}
    skip, capture = set(), {}
    answers = {q["answer"]: q["exercise"] for q in questions if q["kind"] == "check"}
    for i, c in enumerate(cells):
        gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in tests or DEMO_TAG in c.get("metadata", {}).get("tags", []) or src(c) in demos:
            skip.add(i)
        if gid in answers:
            capture[i] = answers[gid]
    return skip, capture


def src(cell: dict) -> str:
    """A notebook cell's source as one string."""
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else str(s)


def _book_code(released_cells: list[dict]) -> set[str]:
    """The sources of the released notebook's own code cells (not answers): not the student's code."""
    return {src(c) for c in released_cells if c.get("cell_type") == "code"
            and not c.get("metadata", {}).get("nbgrader", {}).get("solution")}


@dataclass
class Graded:
    """One submission graded: ``scores`` by grade id, flags of the notebook, the cells' log."""

    student: str
    scores: dict
    flags: list
    log: list
    seconds: float
    sandbox: str


def _sandboxed(argv_tail: list[str], scratch: Path, course: Path, limits: dict):
    from paththeory_tools import sandbox

    return sandbox.run([sys.executable, "-I", "-m", "paththeory_tools.runner", *argv_tail], scratch, [course],
                       timeout=limits["timeout"], memory_bytes=limits["memory"])


def _write_into(scratch: Path, name: str, write) -> None:
    from paththeory_tools import sandbox

    path = scratch / name
    write(path)
    sandbox.give_to_sandbox(path)


def _execute(cells: list[dict], nb: dict, skip: set[int], capture: dict, course: Path, limits: dict):
    """Run the notebook's code in the sandbox; returns ``(log, {exercise: arrays or None}, failure)``."""
    from paththeory_tools import sandbox

    scratch = sandbox.scratch_folder()
    try:
        _write_into(scratch, "submission.ipynb", lambda p: p.write_text(json.dumps(nb)))
        _write_into(scratch, "plan.json", lambda p: p.write_text(json.dumps(
            {"skip": sorted(skip), "capture": {str(i): ex for i, ex in capture.items()}})))
        done = _sandboxed(["execute"], scratch, course, limits)
        log_path = scratch / "log.json"
        try:
            log = json.loads(log_path.read_text()[:5_000_000]) if log_path.is_file() else []
            log = [e for e in log if isinstance(e, dict)] if isinstance(log, list) else []
        except (ValueError, OSError):
            log = []
        answers = {}
        for ex in capture.values():
            data = _read_npz(scratch / "answers" / f"{ex}.npz")
            items = [data[f"item{i}"] for i in range(len(data)) if f"item{i}" in data]
            answers[ex] = items if items and all(a.dtype.kind in "fiub" for a in items) else None
        return log, answers, done.failure
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)


def _call_functions(modules: dict, arrays: dict, questions: list[dict], course: Path, limits: dict):
    """Call each implement answer in one fresh sandbox on its public and hidden cases (inputs only);
    returns ``({exercise: outputs}, failure)``."""
    from paththeory_tools import sandbox

    if not modules:
        return {}, None
    scratch = sandbox.scratch_folder()
    try:
        jobs = []
        for n, q in enumerate(q for q in questions if q["exercise"] in modules):
            ex = q["exercise"]
            # the public cases, then the hidden ones: one list of inputs
            flat, counts_all = {}, []
            for which in ("public", "hidden"):
                counts = arrays[f"{ex}/{which}/counts"]
                for k, c in enumerate(counts):
                    idx = len(counts_all)
                    for j in range(int(c)):
                        flat[f"case{idx}_arg{j}"] = arrays[f"{ex}/{which}/case{k}_arg{j}"]
                    counts_all.append(int(c))
            flat["counts"] = np.array(counts_all)
            _write_into(scratch, f"module_{n}.py", lambda p, m=modules[ex]: p.write_text(m))
            _write_into(scratch, f"cases_{n}.npz", lambda p, f=flat: np.savez(p, **f))
            jobs.append({"exercise": ex, "module": f"module_{n}.py", "function": q["function"],
                         "cases": f"cases_{n}.npz", "out": f"outputs_{n}.npz"})
        _write_into(scratch, "plan.json", lambda p: p.write_text(json.dumps({"jobs": jobs})))
        done = _sandboxed(["call"], scratch, course, limits)
        return {j["exercise"]: _read_npz(scratch / j["out"]) for j in jobs}, done.failure
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)


#: The limits of each sandboxed run of a submission.
DEFAULT_LIMITS = {"timeout": 600.0, "memory": 4 * 2**30}
_AFTER_LAST = "(after the last question)"


def _student_cells(cells: list[dict], indices: list[int], book: set[str], skip: set[int]) -> list[str]:
    return [src(cells[i]) for i in indices if i not in skip and src(cells[i]) not in book]


def _honesty(exercise: str, code: list[str]) -> tuple[list[str], list[str]]:
    """``(reasons the answer earns nothing, flags that change no points)`` from the static scans."""
    from paththeory.exercises.grading import dishonest_code
    from paththeory_tools.autograde import code_flags

    found = dishonest_code(code)
    refused = [f"{exercise} earns no points: the answer {', '.join(found)}."] if found else []
    return refused, [f for c in code for f in code_flags(c)]


def _answer_index(cells: list[dict], q: dict) -> int | None:
    return next((i for i, c in enumerate(cells)
                 if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == q["answer"]), None)


def _implement_outputs(cells, questions, skip, book, groups, arrays, course, limits):
    """The modules of the implement answers, the static findings on them (the student's code of
    each question's group of cells), and their outputs."""
    from paththeory_tools.autograde import implement_module, reference_uses

    modules, uses = {}, {}
    for q in questions:
        at = _answer_index(cells, q) if q["kind"] == "implement" else None
        if at is None:
            continue
        modules[q["exercise"]] = implement_module(cells, at, skip)
        context = "\n".join(src(c) for c in cells[:at] if c.get("cell_type") == "code")
        student = "\n".join(_student_cells(cells, groups.get(q["exercise"], []), book, skip))
        uses[q["exercise"]] = reference_uses(student, q["exercise"], context)
    outputs, failure = _call_functions(modules, arrays, questions, course, limits)
    return outputs, uses, failure


def _expected(arrays: dict, ex: str, which: str) -> list[list[np.ndarray]]:
    counts = arrays[f"{ex}/{which}/counts"]
    return [[arrays[k] for j in range(8) if (k := f"{ex}/{which}/case{c}_out{j}") in arrays] for c in range(len(counts))]


def _split_outputs(outputs: dict, n_public: int) -> tuple[dict, dict]:
    """A call's outputs over public-then-hidden cases as two dicts numbered from 0."""
    public, hidden = {}, {}
    for key, value in outputs.items():
        m = re.match(r"case(\d+)_(.*)", key)
        if not m:
            public[key] = hidden[key] = value
            continue
        k = int(m.group(1))
        (public if k < n_public else hidden)[f"case{k if k < n_public else k - n_public}_{m.group(2)}"] = value
    return public, hidden


def _score_question(q: dict, arrays: dict, answers: dict, outputs: dict, uses: dict, refused: list[str],
                    flags: list[str]) -> dict:
    """``{grade id: Score}`` of one automatic question (public and hidden test)."""
    from paththeory_tools.autograde import score_check, score_implement

    ex = q["exercise"]
    if q["kind"] == "implement":
        expected_public, expected_hidden = _expected(arrays, ex, "public"), _expected(arrays, ex, "hidden")
        got_public, got_hidden = _split_outputs(outputs.get(ex, {}), len(expected_public))
        if not outputs.get(ex):
            got_public = got_hidden = {"module_error": "no output came back (see the notebook's errors)"}
        common = dict(single=q["single"], rtol=q["rtol"], atol=q["atol"])
        public = score_implement(got_public, expected_public, points=q["public_points"], what="public test",
                                 all_cases=True, **common)
        hidden = score_implement(got_hidden, expected_hidden, points=q["hidden_points"], what="hidden test", **common)
        errors = " ".join(str(v) for k, v in outputs.get(ex, {}).items() if k.endswith("error"))
        if "MemoryError" in errors:
            flags = flags + ["the answer hit the memory limit (MemoryError)"]
        if uses.get(ex):
            refused = refused + [f"{ex} earns no points: the answer uses paththeory's own "
                                 f"{', '.join(uses[ex])} (the task forbids it: the instructor may override "
                                 "it with course mark)"]
    else:
        key = [arrays[f"{ex}/key{i}"] for i in range(q["items"])]
        public = score_check(answers.get(ex), key, points=q["public_points"], rtol=q["rtol"], atol=q["atol"],
                             exercise=ex)
        hidden = score_check(answers.get(ex), key, points=q["hidden_points"], rtol=q["rtol"], atol=q["atol"],
                             exercise=ex)
        hidden.notes = [] if hidden.points else ["hidden test fails"]
    for s in (public, hidden):
        s.flags = list(dict.fromkeys(flags + refused))
        if refused:
            s.points, s.notes = 0.0, refused + s.notes
    return {q["public"]: public, q["hidden"]: hidden}


def _grade_submission(course: Path, assignment: str, student: str, info: dict, arrays: dict, released: dict,
                      limits: dict) -> Graded:
    """Grade one submission: run it in the sandbox, call its functions in another, score here."""
    import time

    from paththeory_tools import sandbox
    from paththeory_tools.autograde import code_flags, question_groups

    start = time.monotonic()
    path = course / "submitted" / student / assignment / f"{assignment}.ipynb"
    try:
        nb = json.loads(path.read_text())
        cells = [c for c in nb["cells"] if isinstance(c, dict)]
    except (ValueError, KeyError, TypeError, OSError) as err:
        raise GradingError(f"{path} is not a notebook ({type(err).__name__}); ask {student} to upload it again.") from None
    nb["cells"] = cells
    questions = info["questions"]
    skip, capture = _plan(cells, released["cells"], questions)
    book = _book_code(released["cells"])
    log, answers, failure = _execute(cells, nb, skip, capture, course, limits)
    _refuse_missing_files(log, student, assignment)
    tests = {q[k]: q["exercise"] for q in questions for k in ("public", "hidden")}
    groups = question_groups(cells, tests)
    outputs, uses, call_failure = _implement_outputs(cells, questions, skip, book, groups, arrays, course, limits)
    notebook_flags = [f"the notebook run was {failure}" for _ in [0] if failure]
    notebook_flags += [f"the function calls were {call_failure}" for _ in [0] if call_failure]
    notebook_flags += [f"cell {e.get('cell')} hit the memory limit (MemoryError)" for e in log
                       if str(e.get("error") or "").startswith("MemoryError")]
    scores = {}
    for q in questions:
        code = _student_cells(cells, groups.get(q["exercise"], []), book, skip)
        refused, flags = _honesty(q["exercise"], code)
        scores.update(_score_question(q, arrays, answers, outputs, uses, refused, flags))
    after = _student_cells(cells, groups.get(_AFTER_LAST, []), book, skip)
    notebook_flags += [f for c in after for f in code_flags(c)]
    return Graded(student, {k: vars(v) for k, v in scores.items()}, list(dict.fromkeys(notebook_flags)), log,
                  round(time.monotonic() - start, 2), sandbox.detect().kind)


def _refuse_missing_files(log: list[dict], student: str, assignment: str) -> None:
    """Raise :class:`GradingError` naming the file when the graded run lacked a data file."""
    from paththeory.display.notices import MISSING_FILE_ERRORS

    names = {cls.__name__ for cls in MISSING_FILE_ERRORS}
    missing = [str(e["error"]) for e in log if str(e.get("error") or "").split(":")[0] in names]
    if missing:
        raise GradingError(f"grading {student}'s {assignment} needs a file this machine lacks: {missing[0]} "
                           "Install it (or set PATHTHEORY_DATA) and grade again.")


def _students(course: Path, assignment: str, student: str | None) -> list[str]:
    submitted = course / "submitted"
    students = sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir()) if submitted.is_dir() else []
    if not students:
        raise FileNotFoundError(f"no submissions of {assignment} in {submitted} (use collect first).")
    if student is not None:
        if student not in students:
            raise ValueError(f"no submission of {assignment} by {student!r}; the students are {students}.")
        return [student]
    return students


def grade(course_dir: str | Path, assignment: str, timeout: float | None = None, *, student: str | None = None,
          memory_bytes: int | None = None, workers: int = 2) -> Path:
    """Grade every submission of ``assignment`` (or only ``student``'s), write the gradebook, the
    feedback and ``<course>/grades-<assignment>.csv``; returns the CSV's path.

    Each submission runs in the sandbox (:mod:`paththeory_tools.sandbox`: no network, the course
    folder out of sight, ``timeout`` seconds and ``memory_bytes`` per run); its implement answers are
    called in a second, fresh sandbox on the public and hidden cases, and every point is computed
    here from the numbers that come back. The gradebook is written after every sandbox has exited.
    The CSV has one row per student and question (``student, question, kind, score, max_score,
    flags``), then a row ``total``. ``<course>/grading-report-<assignment>.txt`` has one entry per
    graded student (time, sandbox, flags): a run for one ``student`` replaces that student's entry and
    keeps the others. A sandbox weaker than the strongest is reported there and as a warning, and so
    is a feedback page withheld by the leak check (:func:`feedback`).
    """
    from concurrent.futures import ThreadPoolExecutor

    from paththeory_tools import sandbox

    course = Path(course_dir)
    info, arrays = _keys(course, assignment)
    students = _students(course, assignment, student)
    released = json.loads((course / "release" / assignment / f"{assignment}.ipynb").read_text())
    limits = {"timeout": float(timeout or DEFAULT_LIMITS["timeout"]),
              "memory": int(memory_bytes or DEFAULT_LIMITS["memory"])}
    box = sandbox.detect()
    if box.warning:
        warnings.warn(box.warning, stacklevel=2)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:  # the keys stay in this process
        graded = list(pool.map(lambda s: _grade_submission(course, assignment, s, info, arrays, released, limits),
                               students))
    for g in graded:  # every student's code has exited: now the grader writes
        _io.write_json(_result_path(course, assignment, g.student), vars(g), "the grading result")
    _save_to_gradebook(course, assignment, graded, released)
    withheld = {}
    for g in graded:
        try:
            feedback(course, assignment, g.student)
        except GradingError as err:
            withheld[g.student] = str(err)
            warnings.warn(str(err), stacklevel=2)
    _write_report(course, assignment, graded, box, withheld)
    return _write_grades(course, assignment, _students(course, assignment, None))


def _result_path(course: Path, assignment: str, student: str) -> Path:
    return course / "graded" / student / f"{assignment}.json"


def _write_report(course: Path, assignment: str, graded: list[Graded], box, withheld: dict | None = None) -> Path:
    """Write ``<course>/grading-report-<assignment>.txt``: the sandbox of this run, then one entry per
    student, merged by student: those of ``graded`` from this run, every other student's from their
    stored grading result (so grading one student keeps the class's report). ``withheld``:
    ``{student: why}`` of the feedback pages the leak check refused in this run."""
    from paththeory_tools.sandbox import WARNINGS

    entries = {}
    folder = course / "graded"
    for path in sorted(folder.glob(f"*/{assignment}.json")) if folder.is_dir() else []:
        try:
            stored = json.loads(path.read_text())
            entries[path.parent.name] = (float(stored["seconds"]), str(stored["sandbox"]), list(stored["flags"]))
        except (ValueError, KeyError, TypeError, OSError):
            entries[path.parent.name] = None  # unreadable: named as such, never dropped
    entries.update({g.student: (g.seconds, g.sandbox, list(g.flags)) for g in graded})
    lines = [f"Grading report of {assignment}", f"sandbox: {box.kind}"] + ([box.warning] if box.warning else [])
    earlier = sorted({e[1] for e in entries.values() if e and e[1] != box.kind})
    for kind in earlier:
        lines.append(f"sandbox of earlier runs: {kind}" + (f"\n{WARNINGS[kind]}" if WARNINGS.get(kind) else ""))
    for student in sorted(entries):
        entry = entries[student]
        if entry is None:
            lines.append(f"{student}: its stored grading result is unreadable; grade it again (--student {student})")
            continue
        seconds, kind, flags = entry
        lines.append(f"{student}: {seconds:.1f} s" + (f" (sandbox: {kind})" if kind != box.kind else "")
                     + "".join(f"\n  FLAG {f}" for f in flags)
                     + (f"\n  FEEDBACK WITHHELD {withheld[student]}" if student in (withheld or {}) else ""))
    return _io.write_text(course / f"grading-report-{assignment}.txt", "\n".join(lines) + "\n")


def _save_to_gradebook(course: Path, assignment: str, graded: list[Graded], released: dict) -> None:
    """Write the automatic scores into nbgrader's gradebook (manual scores are left as they are)."""
    blank = {c["metadata"]["nbgrader"]["grade_id"]: src(c) for c in released["cells"]
             if c.get("metadata", {}).get("nbgrader", {}).get("solution")}
    with _gradebook(course) as gb:
        for g in graded:
            gb.update_or_create_student(g.student)
            gb.update_or_create_submission(assignment, g.student)
            submitted = json.loads((course / "submitted" / g.student / assignment / f"{assignment}.ipynb").read_text())
            answers = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id"): src(c)
                       for c in submitted.get("cells", []) if isinstance(c, dict)}
            submission = gb.find_submission(assignment, g.student)
            for notebook in submission.notebooks:
                for grade_ in notebook.grades:
                    if grade_.name in g.scores:
                        grade_.auto_score = g.scores[grade_.name]["points"]
                    elif grade_.cell.cell_type == "markdown":
                        untouched = answers.get(grade_.name, blank.get(grade_.name)) == blank.get(grade_.name)
                        grade_.auto_score = 0.0 if untouched else None
                    grade_.needs_manual_grade = grade_.manual_score is not None or grade_.auto_score is None
            gb.db.commit()


@contextmanager
def _gradebook(course: Path) -> Iterator:
    """nbgrader's gradebook of ``course``, with SQLAlchemy's notes on nbgrader's sessions silenced."""
    from nbgrader.api import Gradebook

    with warnings.catch_warnings(), Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        warnings.simplefilter("ignore")
        yield gb


# --------------------------------------------------------------------------- marks, grades, feedback


def _marks_path(course: Path, assignment: str) -> Path:
    return course / "marks" / f"{assignment}.json"


def _marks(course: Path, assignment: str) -> dict:
    """``{student: {question: {"points", "reason"}}}``: every score set by :func:`mark`."""
    path = _marks_path(course, assignment)
    return json.loads(path.read_text()) if path.is_file() else {}


def _row(student: str, g, marks: dict, flags: dict) -> tuple[list, float]:
    """One CSV row of a gradebook grade, a manual score not set by :func:`mark` flagged and ignored."""
    written = g.cell.cell_type == "markdown"
    notes = list(flags.get(g.name, []))
    mark_ = marks.get(student, {}).get(g.name)
    manual = g.manual_score
    if manual is not None and (mark_ is None or abs(float(mark_["points"]) - manual) > 1e-9):
        notes.append(f"manual score {manual:g} in the gradebook was not set by course mark: ignored")
        manual = None
    if manual is not None:
        score, kind = manual, "manual" if written else "override"
    else:
        score = g.auto_score if not (written and g.auto_score is None) else None
        kind = "manual" if written else "auto"
    return [student, g.name, kind, "" if score is None else f"{score:g}", f"{g.max_score:g}",
            "; ".join(dict.fromkeys(notes))], score or 0.0


def _write_grades(course: Path, assignment: str, students: list[str]) -> Path:
    import nbformat

    out = course / f"grades-{assignment}.csv"
    source = nbformat.read(course / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    order = {c.metadata["nbgrader"]["grade_id"]: i for i, c in enumerate(source.cells) if "nbgrader" in c.metadata}
    marks = _marks(course, assignment)
    rows = []
    with _gradebook(course) as gb:
        for student in students:
            result_path = _result_path(course, assignment, student)
            result = json.loads(result_path.read_text()) if result_path.is_file() else {"scores": {}, "flags": []}
            flags = {gid: s.get("flags", []) for gid, s in result["scores"].items()}
            submission = gb.find_submission(assignment, student)
            total = 0.0
            for notebook in submission.notebooks:
                for g in sorted(notebook.grades, key=lambda g: order.get(g.name, len(order))):
                    row, score = _row(student, g, marks, flags)
                    rows.append(row)
                    total += score
            rows.append([student, "total", "", f"{total:g}", f"{submission.max_score:g}",
                         "; ".join(result.get("flags", []))])
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["student", "question", "kind", "score", "max_score", "flags"])
    writer.writerows(rows)
    return _io.write_text(out, text.getvalue())


def mark(course_dir: str | Path, assignment: str, student: str, question: str, points: float,
         comment: str | None = None) -> Path:
    """Score ``student``'s ``question`` by hand: a written answer (a ``manual`` row of the grades CSV,
    e.g. ``prob-omniglot-validity-answer``), one part of a derivation (each part is a question of
    its own, e.g. ``prob-gamma-part2-answer``: at most that part's points of its rubric,
    :data:`paththeory.exercises.problems.PARTS`), or an override of any automatic score, which needs a
    ``comment`` (the reason, kept in ``<course>/marks/<assignment>.json`` and shown in the feedback).
    Rewrites ``grades-<assignment>.csv``, then the student's feedback (a page the leak check refuses
    is a warning: the mark stands). The same as nbgrader's formgrader, from the command line.
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
        rubric = written_parts()
        if question not in grades:
            parts = [f"{gid} ({part.points} points: {part.earns})" for gid, (label, part) in rubric.items()
                     if gid in grades and question in (label, _grade_id(label, "answer"))]
            if parts:
                raise ValueError(f"{question} is marked part by part, each part a question of its own:\n  "
                                 + "\n  ".join(parts))
            raise ValueError(f"{question!r} is not a question of {assignment}; the questions are {sorted(grades)}.")
        g = grades[question]
        written = g.cell.cell_type == "markdown"
        if not written and not (comment and comment.strip()):
            raise ValueError(f"{question} is scored automatically: overriding it needs a reason (--comment TEXT).")
        if not 0 <= points <= g.max_score:
            what = f" (its rubric: {rubric[question][1].earns})" if question in rubric else ""
            raise ValueError(f"points must be between 0 and {g.max_score:g} for {question}{what}; got {points:g}.")
        g.manual_score = points
        g.needs_manual_grade = False
        if comment is not None and written:
            notebook = next(nb for nb in submission.notebooks if g in nb.grades)
            gb.find_comment(question, notebook.name, assignment, student).manual_comment = comment
        gb.db.commit()
        students = sorted(s.student.id for s in gb.assignment_submissions(assignment))
    marks = _marks(course, assignment)
    marks.setdefault(student, {})[question] = {"points": points, "reason": comment or ""}
    _io.write_json(_marks_path(course, assignment), marks, "the marks")
    path = _write_grades(course, assignment, students)
    try:
        feedback(course, assignment, student)
    except GradingError as err:  # the mark and the grades stand; the page waits for the instructor
        warnings.warn(str(err), stacklevel=2)
    return path


def pending(course_dir: str | Path, assignment: str) -> int:
    """How many written answers of ``assignment`` still wait for a person (empty manual scores; each
    part of a derivation is an answer of its own)."""
    path = Path(course_dir) / f"grades-{assignment}.csv"
    if not path.is_file():
        raise FileNotFoundError(f"no grades of {assignment} in {course_dir}: grade it first.")
    with open(path, newline="") as f:
        return sum(1 for row in csv.DictReader(f) if row["kind"] == "manual" and row["score"] == "")


def feedback(course_dir: str | Path, assignment: str, student: str) -> Path:
    """Write ``<course>/feedback/<student>/<assignment>/<assignment>.html`` from the stored grading
    result, the gradebook and the marks, without running anything. It shows scores, diagnoses, the
    rubric of each part of a derivation, the errors of the student's cells and the instructor's
    comments; never a key or a hidden case.

    The page passes the release's leak check (:func:`_refuse_leaks`, with what release froze) before
    it is published: one that would show a model answer, solution code, gated prose or a frozen
    answer value raises :class:`GradingError`, and the student's previous page is removed.
    """
    import html

    course = Path(course_dir)
    material = _frozen_leak_material(course, assignment)
    path = _result_path(course, assignment, student)
    if not path.is_file():
        raise FileNotFoundError(f"{student} has no graded {assignment}: grade it first (course grade).")
    result = json.loads(path.read_text())
    marks = _marks(course, assignment).get(student, {})
    comments = {}
    with _gradebook(course) as gb:
        submission = gb.find_submission(assignment, student)
        grades = [(g.name, g.score, g.max_score) for nb in submission.notebooks for g in nb.grades]
        for nb in submission.notebooks:
            for c in nb.comments:
                if c.manual_comment:
                    comments[c.name] = c.manual_comment
    esc = html.escape
    parts = [f"<html><head><meta charset='utf-8'><title>{esc(assignment)}: {esc(student)}</title></head><body>",
             f"<h1>{esc(assignment)}: feedback for {esc(student)}</h1>", "<table border='1'>",
             "<tr><th>question</th><th>score</th><th>notes</th></tr>"]
    rubric = written_parts()
    for name, score, top in grades:
        s = result["scores"].get(name, {})
        notes = list(s.get("notes", []))
        if name in rubric:
            label, part = rubric[name]
            notes.insert(0, f"{label}, part {part.part} ({part.points} points): {part.earns}")
        if name in marks:
            score = marks[name]["points"]
            notes.append(f"marked by the instructor: {marks[name]['reason']}" if marks[name]["reason"] else
                         "marked by the instructor")
        if name in comments:
            notes.append(f"comment: {comments[name]}")
        shown = "waits for marking" if score is None else f"{score:g} / {top:g}"
        parts.append(f"<tr><td>{esc(name)}</td><td>{esc(shown)}</td><td>{'<br>'.join(map(esc, notes))}</td></tr>")
    parts.append("</table><h2>Errors in your cells</h2><ul>")
    parts += [f"<li>cell {e.get('cell')}: {esc(str(e['error']))}</li>" for e in result.get("log", []) if e.get("error")]
    parts.append("</ul></body></html>")
    target = course / "feedback" / student / assignment / f"{assignment}.html"
    try:
        with _io.atomic_path(target) as tmp:
            tmp.write_text("\n".join(parts) + "\n", encoding="utf-8")
            _refuse_leaks([(tmp, assignment, target)], material,
                          f"the feedback of {student} is not written (and its previous page is removed)")
    except GradingError:
        target.unlink(missing_ok=True)
        raise
    return target


def read_grades(path: str | Path) -> dict:
    """``{student: {question: (score or None, max_score)}}`` from a grades CSV of :func:`grade`."""
    out: dict = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            score = float(row["score"]) if row["score"] else None
            out.setdefault(row["student"], {})[row["question"]] = (score, float(row["max_score"]))
    return out


def read_flags(path: str | Path) -> dict:
    """``{student: {question: flags text}}`` (only the non-empty ones) from a grades CSV of :func:`grade`."""
    out: dict = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("flags"):
                out.setdefault(row["student"], {})[row["question"]] = row["flags"]
    return out
