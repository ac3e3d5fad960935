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
    marks_template("course", "problems", "marks.csv")  # every hand-marked answer of the class, to fill in
    import_marks("course", "problems", "marks.csv")    # all its marks at once, all or nothing
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
no network, the course folder and the uploads out of sight, limits on time, memory, files and
processes; test cells and the release's ``demo`` cells skipped) and captures each check-style
``answer`` as numbers; it calls each implement answer in sandboxes of its own, where the package
cannot be imported, on the public cases and then on the hidden cases (inputs only, each run under
its own time limit), and computes every point here (:mod:`paththeory_tools.autograde`): each output
of a function earns its share. Whatever one submission does, the others are graded. A static scan
refuses (no points, the reason shown) the package's ``solution()``, ``reveal=``, ``check`` tried
several times, a private key name or a changed ``paththeory.exercises`` (never a name alone), and
flags changing library code, stack frames, the gradebook or the display. The feedback shows at
most a short excerpt of any text from the sandbox and only counts of the hidden cases. The
gradebook is written after every sandbox has exited; a manual score that :func:`mark` did not set
is flagged and ignored.
"""

from __future__ import annotations

import contextlib
import contextvars
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
from paththeory.exercises.graded_cells import HOW_GRADED


__all__ = ["collect", "feedback", "grade", "import_marks", "mark", "marks_template", "new_set", "part_grade_id",
           "pending", "read_flags", "read_grades", "release", "source_notebook", "written_parts"]

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
    a derivation one such cell per part of its rubric (:data:`paththeory.exercises.problems.PARTS`). A private
    set's chapter (:func:`new_set`) adds its own problems (``problems.py`` beside it).
    """
    md = Path(md_path)
    with _problem_set(md) if _PRIVATE.get() is None else contextlib.nullcontext():
        return _source_notebook(md, base_url)


def _source_notebook(md: Path, base_url: str | None):
    import jupytext

    from paththeory_tools.edition import strip_solutions
    from paththeory_tools.notebooks import BOOK_URL
    from paththeory_tools.plain_markdown import MarkdownContext
    from paththeory_tools.student import plain_notebook

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


#: The problem set being released: the registry module of a private set (:func:`new_set`), or None (the package's).
_PRIVATE: contextvars.ContextVar = contextvars.ContextVar("private_set", default=None)
#: The file beside a private set's chapter that holds its registry (``KINDS``, ``POINTS``, ``PARTS``, ``IMPLEMENT``).
SET_REGISTRY = "problems.py"


@dataclass(frozen=True)
class _Registry:
    implement: dict
    parts: dict
    points: dict


def _registry() -> _Registry:
    """The problems a release knows: those of the package's sets (:mod:`paththeory.exercises.sets`) and, while a
    private set is released, its own."""
    from paththeory.exercises import sets

    own = _PRIVATE.get()
    if own is None:
        return _Registry(sets.IMPLEMENT, sets.PARTS, sets.POINTS)
    return _Registry({**sets.IMPLEMENT, **own.IMPLEMENT}, {**sets.PARTS, **own.PARTS}, {**sets.POINTS, **own.POINTS})


def _load_set(md: Path):
    """The registry module of the private set whose chapter is ``md`` (:data:`SET_REGISTRY` beside it), or None.
    Its labels and ids must be its own: none may be the package's."""
    import importlib.util

    from paththeory.exercises import sets

    path = md.resolve().parent / SET_REGISTRY
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"paththeory_course_set_{md.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("KINDS", "POINTS", "PARTS", "IMPLEMENT"):
        if not isinstance(getattr(module, name, None), dict):
            raise GradingError(f"{path} defines no dict {name}: start from the template (course new-set).")
    taken = (set(module.POINTS) & set(sets.POINTS)) | (set(module.IMPLEMENT) & set(sets.IMPLEMENT))
    if taken:
        raise GradingError(f"{path} reuses the package's problems {sorted(taken)}: give them labels of its own.")
    return module


@contextmanager
def _problem_set(md: Path) -> Iterator[None]:
    """While releasing ``md``: its private set's registry, if it has one, joins the package's."""
    token = _PRIVATE.set(_load_set(md))
    try:
        yield
    finally:
        _PRIVATE.reset(token)


def written_parts() -> dict:
    """``{grade id: (derivation label, its Part)}`` of every part of :data:`paththeory.exercises.problems.PARTS`
    (and, while a private set is released, of its own)."""
    return {part_grade_id(label, p.part): (label, p) for label, parts in _registry().parts.items() for p in parts}


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

    PARTS, POINTS = _registry().parts, _registry().points
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

    IMPLEMENT = _registry().implement
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
    from paththeory.exercises import sets

    registry = _registry()
    implement = re.search(r"""check_implementation\(\s*["']([\w.]+)["']\s*,\s*(\w+)""", cell.source)
    if not (implement and implement.group(1) in registry.implement):
        return None
    name, fn = implement.group(1), implement.group(2)
    spec = registry.implement[name]
    public = None if name in sets.IMPLEMENT else _public_test(spec, fn)
    return _function_tests(name, fn, registry.points[spec.label], public)


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


def _public_test(spec, fn: str) -> str:
    """The public test of a private set's implement problem, which the package does not know: its public cases
    and their outputs written into the cell, compared with numpy alone."""
    cases = [[np.asarray(a, dtype=float).tolist() for a in args] for args in spec.cases()]
    wants = [[p.tolist() for p in _outputs_parts(spec.reference(*args))] for args in spec.cases()]
    return "\n".join([
        f"# Test: {spec.id} (1 point): {fn} on the public cases; the hidden cases are drawn for this course",
        "import numpy as np", "", f"_cases = {cases!r}", f"_outputs = {wants!r}",
        "for _k, (_args, _want) in enumerate(zip(_cases, _outputs)):",
        f"    _got = {fn}(*[np.array(a, dtype=float) for a in _args])",
        "    _got = list(_got) if isinstance(_got, tuple) else [_got]",
        "    assert len(_got) == len(_want), f\"case {_k + 1}: {len(_got)} outputs, expected {len(_want)}\"",
        "    for _g, _w in zip(_got, _want):",
        f"        assert np.allclose(np.asarray(_g, dtype=float), _w, rtol={spec.rtol!r}, atol={spec.atol!r}), (",
        "            f\"case {_k + 1}: got {_g}, expected {_w}\")",
        f"print(\"{fn} passes the public test ({len(cases)} cases)\")"])


def _function_tests(name: str, fn: str, points: int, public: str | None = None) -> list:
    """The public test (the package's visible cases, or for a private set ``public``: :func:`_public_test`) and
    the hidden test's cell, which holds nothing: the grader calls the function in a fresh sandbox on cases drawn
    at release from the course's secret."""
    public = public or (f"# Test: {name} (1 point)\nfrom paththeory.exercises import graded_function\n"
                        f"graded_function(\"{name}\", {fn})")
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
    IMPLEMENT = _registry().implement
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

    IMPLEMENT = _registry().implement
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
    grade_ids = {c.metadata.get("nbgrader", {}).get("grade_id") for c in source.cells}
    parts = {gid: [label, list(part)] for gid, (label, part) in written_parts().items() if gid in grade_ids}
    _io.write_json(keys.with_suffix(".json"), {"assignment": name, "paththeory_version": paththeory.__version__,
                                               "questions": questions, "parts": parts,
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
    md, course = Path(md_path), Path(course_dir)
    if not md.is_file():
        raise FileNotFoundError(f"no chapter {md}: give a chapter's .md, e.g. book/problems.md.")
    course.mkdir(parents=True, exist_ok=True)
    with _private(course), _problem_set(md):
        return _release(md, course, base_url)


#: The install cell's package (the book's branch) and what release writes instead: the released version's tag.
INSTALL_BRANCH = "git+https://github.com/paththeory/paththeory@main"


def pin_install(source: str, version: str) -> str:
    """``source`` (a notebook cell) with the install of the book's branch pinned to the tag ``v<version>``.

    Example:
      >>> pin_install('package = "paththeory @ git+https://github.com/paththeory/paththeory@main"', "0.2.0")
      'package = "paththeory @ git+https://github.com/paththeory/paththeory@v0.2.0"'
    """
    return source.replace(INSTALL_BRANCH, INSTALL_BRANCH.rsplit("@", 1)[0] + f"@v{version}")


def _release(md: Path, course: Path, base_url: str | None) -> Path:
    import nbformat
    import paththeory

    name = md.stem
    source_nb = source_notebook(md, base_url)
    for cell in source_nb.cells:  # the students install the version grade accepts, not a later one
        if cell.cell_type == "code":
            cell.source = pin_install(cell.source, paththeory.__version__)
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


UPLOADS_FILE = "uploads.json"


def collect(course_dir: str | Path, assignment: str, uploads: str | Path) -> list[str]:
    """Put the uploaded notebooks ``<uploads>/<student>.ipynb`` where nbgrader looks for submissions;
    returns the student ids (the file names).

    Nothing is lost: a later upload of a student (``<student>.ipynb`` collected again with other content, or
    ``<student> (2).ipynb`` beside it, as a browser names a second download) becomes the submission, the
    earlier ones are kept in ``submitted/<student>/<assignment>/earlier/``, and ``grade`` grades the latest and
    says so. The uploads folder is recorded (``<course>/uploads.json``) and hidden from the sandbox."""
    import hashlib
    import time

    course, up = Path(course_dir), Path(uploads)
    files = sorted(up.glob("*.ipynb"))
    if not files:
        raise FileNotFoundError(f"no notebooks in {up}: expected one <student>.ipynb per student.")
    by_student: dict[str, list[tuple[int, Path]]] = {}
    for f in files:
        m = re.fullmatch(r"(.+?)(?: \((\d+)\))?", f.stem)
        if not re.fullmatch(r"[\w.-]+", m.group(1)):
            raise ValueError(f"{f.name}: a student id is letters, digits, '.', '-' or '_'; rename the file.")
        by_student.setdefault(m.group(1), []).append((int(m.group(2) or 1), f))
    course.mkdir(parents=True, exist_ok=True)
    with _private(course):
        known = json.loads((course / UPLOADS_FILE).read_text()) if (course / UPLOADS_FILE).is_file() else []
        _io.write_json(course / UPLOADS_FILE, sorted(set(known) | {str(up.resolve())}), "the uploads folders")
        for student, uploaded in sorted(by_student.items()):
            target = course / "submitted" / student / assignment / f"{assignment}.ipynb"
            for _, f in sorted(uploaded):  # the earliest first: the last one stays the submission
                if target.is_file() and _io.sha256(target) == _io.sha256(f):
                    continue
                if target.is_file():
                    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(target.stat().st_mtime))
                    kept = target.parent / "earlier" / f"{stamp}-{hashlib.sha256(target.read_bytes()).hexdigest()[:8]}.ipynb"
                    kept.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(target, kept)
                _io.write_with(target, lambda tmp, f=f: shutil.copyfile(f, tmp))
    return sorted(by_student)


def earlier_uploads(course_dir: str | Path, assignment: str, student: str) -> list[Path]:
    """The earlier uploads of ``student`` kept by :func:`collect` (oldest first); the latest is the submission."""
    folder = Path(course_dir) / "submitted" / student / assignment / "earlier"
    return sorted(folder.glob("*.ipynb")) if folder.is_dir() else []


def _uploads(course: Path) -> list[Path]:
    """The uploads folders :func:`collect` read (hidden from the sandbox: classmates' notebooks)."""
    path = course / UPLOADS_FILE
    try:
        return [Path(p) for p in json.loads(path.read_text())] if path.is_file() else []
    except ValueError:
        return []


@contextmanager
def _private(course: Path) -> Iterator[None]:
    """Everything written into the course folder meanwhile, and all of it afterwards, is the instructor's
    alone (folders 0700, files 0600): keys, secret, source notebooks, gradebook, submissions, marks."""
    umask = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(umask)
        for path in [course, *course.rglob("*")] if course.is_dir() else []:
            if not path.is_symlink():
                with contextlib.suppress(OSError):
                    path.chmod(0o700 if path.is_dir() else 0o600)


# --------------------------------------------------------------------------- a private problem set

#: Where :func:`new_set` starts a private problem set: ``<course>/sets/<name>/book/`` (a book of one chapter).
SETS_DIR = "sets"

_SET_CHAPTER = '''---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# {name}: a problem set

One function to implement, graded on cases you have not seen, and one derivation in two
parts, marked by hand.

```{{code-cell}} ipython3
# On Colab: install paththeory (release pins the version that grading accepts).
import os
import sys

if "google.colab" in sys.modules:
    import subprocess

    package = "paththeory @ {install}"
    source = os.environ.get("PATHTHEORY_INSTALL", package)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", source], check=True)
```

```{{code-cell}} ipython3
import numpy as np
```

## Implement it yourself

```{{exercise}} The kernel of an order parameter
:label: {name}-kernel

Given the path-path kernels `C[a, b, mu, nu]` of $H$ paths on $P$ inputs and a symmetric
$H\\times H$ order parameter $U$, write the renormalised kernel
$K_U[\\mu,\\nu]=\\sum_{{ab}}U_{{ab}}C[a,b,\\mu,\\nu]$ with numpy alone:

~~~python
def renormalised_kernel(U, C):
    """U: [H, H]; C: [H, H, P, P]. Returns K_U: [P, P]."""
~~~

Tolerance: `rtol=1e-10`. Your function is graded on cases you have not seen.
```

```{{code-cell}} ipython3
def renormalised_kernel(U, C):
    """K_U = sum_ab U_ab C^ab."""
    ### BEGIN SOLUTION
    return np.einsum("ab,abmq->mq", np.asarray(U, float), np.asarray(C, float))
    ### END SOLUTION
```

```{{code-cell}} ipython3
check_implementation("{name}.kernel", renormalised_kernel)
```

## Derivation

```{{exercise}} A positive kernel
:label: {name}-positive

1. (2 points) Show that $K_U$ is positive semi-definite when $U$ is.
2. (3 points) Give a $U$ with a negative entry for which $K_U$ is still positive
   semi-definite for every choice of inputs, and say what the negative entry does.
```

```{{solution}} {name}-positive
:label: sol-{name}-positive
:class: dropdown

**1.** Write $U=LL^\\top$; then $v^\\top K_Uv=\\sum_c\\|\\sum_a L_{{ac}}\\sum_\\mu v_\\mu\\xi^a(x^\\mu)\\|^2\\ge0$.

**2.** Any positive-definite $U$ with $U_{{12}}<0$, for example $U_{{11}}=U_{{22}}=1$ and
$U_{{12}}=-1/2$: the readout then weighs the difference of the two paths' features.
```
'''

_SET_REGISTRY = '''"""The registry of the private problem set {name} (read by paththeory-tools course release).

{name}.md beside this file holds the problems in the book's format (book/problems.md): each an {{exercise}} labelled
"{name}-<problem>", an implement problem's answer cell between the solution markers followed by a cell
check_implementation("{name}.<problem>", <function>), a derivation's {{solution}} with its parts headed **1.**, **2.**.
This folder is inside the course folder, which only the instructor reads: the class has never seen these problems.

KINDS, POINTS: every problem by its exercise label; PARTS: the rubric of each derivation (its parts, their points,
what earns them: shown to the student beside each answer cell and in the feedback); IMPLEMENT: each implement problem
by its id "{name}.<problem>", with its reference (run by the grader, never by a student) and its cases: the public
cases are drawn from the default seed and written into the notebook's public test, the hidden ones from the course
secret at release.
"""

import numpy as np

from paththeory.exercises.problems import Implementation, Part

KINDS = {{"{name}-kernel": "implement", "{name}-positive": "derivation"}}
POINTS = {{"{name}-kernel": 5, "{name}-positive": 5}}
PARTS = {{
    "{name}-positive": (
        Part("1", 2, "U factored and the quadratic form written as a sum of squares"),
        Part("2", 3, "a positive-definite U with a negative entry, and what that entry does to the readout"),
    ),
}}


def _kernel_cases(seed=20250101):
    rng = np.random.default_rng(seed)
    cases = []
    for paths, examples, dim in [(1, 4, 3), (2, 6, 5), (3, 5, 4)]:
        xi = rng.normal(size=(examples, paths, dim)) / np.sqrt(dim * paths)
        B = rng.normal(size=(paths, paths))
        cases.append((B @ B.T / paths + 0.5 * np.eye(paths), np.einsum("man,qbn->abmq", xi, xi)))
    return cases


def _kernel_reference(U, C):
    return np.einsum("ab,abmq->mq", np.asarray(U, float), np.asarray(C, float))


IMPLEMENT = {{
    "{name}.kernel": Implementation(
        id="{name}.kernel", label="{name}-kernel", function="renormalised_kernel",
        signature="def renormalised_kernel(U, C):", rtol=1e-10, atol=1e-12, make_cases=_kernel_cases,
        reference_fn=_kernel_reference, output="K_U, an array of shape [P, P]"),
}}
'''


def new_set(course_dir: str | Path, name: str) -> Path:
    """Start the private problem set ``name`` in the course folder: ``<course>/sets/<name>/book/<name>.md`` (the
    problems in the book's format: an implement problem and a derivation in two parts, with model answers) and
    ``problems.py`` beside it (points, rubric, the implement problem's reference and cases). Edit both, then
    release the chapter (:func:`release`): its hidden cases are drawn from the course secret, and collect,
    grade, mark and feedback work as for the book's problem set. Returns the chapter's path."""
    course = Path(course_dir)
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"{name!r}: a problem set's name is lower-case letters, digits and '_', starting with a "
                         "letter (it names the assignment and prefixes its labels).")
    from paththeory.exercises import sets

    folder = course / SETS_DIR / name / "book"
    if folder.parent.exists() or (course / "source" / name).exists():
        raise FileExistsError(f"{course} already has an assignment or a set named {name}: choose another name.")
    if name in sets.SETS or any(label.startswith(f"{name}-") for label in sets.POINTS) or any(
            ex.startswith(f"{name}.") for ex in sets.IMPLEMENT):
        raise ValueError(f"{name!r} is a prefix of the package's problems: choose another name.")
    with _private(course):
        folder.mkdir(parents=True)
        _io.write_text(folder / SET_REGISTRY, _SET_REGISTRY.format(name=name))
        return _io.write_text(folder / f"{name}.md", _SET_CHAPTER.format(name=name, install=INSTALL_BRANCH))


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


#: The most a sandbox's ``.npz`` may hold, in all (uncompressed: checked before loading) and per array.
NPZ_BYTES, NPZ_MEMBERS = 64 * 2**20, 10_000
#: The longest text from inside the sandbox that a feedback page shows per cell or function.
EXCERPT = 200


def _read_npz(path: Path, limit: int = NPZ_BYTES) -> dict:
    """A sandbox's ``.npz`` as plain arrays: numeric arrays, and for keys ending in ``error`` a short text; anything
    else (pickles, text arrays, object arrays) is left out. The archive's members are checked before anything is
    loaded: at most ``limit`` bytes uncompressed in all (a zip bomb is refused unread) and :data:`NPZ_MEMBERS`
    members. Empty if unreadable or too large."""
    import zipfile

    if not path.is_file() or path.is_symlink() or path.stat().st_size > limit:
        return {}
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            if len(members) > NPZ_MEMBERS or sum(m.file_size for m in members) > limit:
                return {}
        with np.load(path, allow_pickle=False) as data:
            out = {}
            for k in data.files:
                value = data[k]
                if k.endswith("error"):
                    out[k] = _excerpt(str(value.item())) if value.dtype.kind == "U" and value.size == 1 else \
                        "an error (not text)"
                elif value.dtype.kind in "fiub":
                    out[k] = value
            return out
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, NotImplementedError, RuntimeError):
        return {}


def _excerpt(text: str, limit: int = EXCERPT) -> str:
    """At most ``limit`` characters of a text from the sandbox, printable only."""
    text = "".join(c if c.isprintable() or c == "\n" else " " for c in str(text)[:limit + 1])
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _read_log(path: Path, limit: int = 8 * 2**20) -> list[dict]:
    """The sandbox's ``log.json`` as entries ``{"cell": int or None, "error": short text or None, "printed": short
    text}``; anything else in it is dropped (a log of the wrong kind or too large reads as one error)."""
    if not path.is_file() or path.is_symlink():
        return []
    try:
        if path.stat().st_size > limit:
            raise ValueError("too large")
        raw = json.loads(path.read_text(errors="replace"))
    except (ValueError, OSError, RecursionError):
        return [{"cell": None, "error": "the run's log is unreadable", "printed": ""}]
    entries = []
    for e in raw if isinstance(raw, list) else []:
        if isinstance(e, dict):
            cell = e.get("cell")
            error = e.get("error")
            entries.append({"cell": cell if isinstance(cell, int) and not isinstance(cell, bool) else None,
                            "error": None if error is None else _excerpt(str(error), 4000),
                            "printed": _excerpt(str(e.get("printed", "")), 4000)})
    return entries


def _plan(cells: list[dict], released_cells: list[dict], questions: list[dict]) -> tuple[set[int], dict]:
    """``(skipped cells, {index of a check-style answer cell: exercise})`` of a submission: the test cells
    (scored by the grader) and the release's own demo cells (the same source as a cell the release tagged
    ``demo``) are skipped; a tag the student added skips nothing (what runs is what is scanned)."""
    demos = {src(c) for c in released_cells if DEMO_TAG in c.get("metadata", {}).get("tags", [])}
    tests = {q[k] for q in questions for k in ("public", "hidden")}
    skip, capture = set(), {}
    answers = {q["answer"]: q["exercise"] for q in questions if q["kind"] == "check"}
    for i, c in enumerate(cells):
        gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in tests or src(c) in demos:
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


def _sandboxed(phase: str, scratch: Path, hide: list[Path], limits: dict, *, timeout: float | None = None):
    """Run :mod:`paththeory_tools.runner`'s ``phase`` in the sandbox. ``execute`` runs the notebook with the
    package; ``call`` runs a copy of the runner (numpy and the standard library only) as a script, where
    paththeory, paththeory_tools and the answer keys are hidden (:func:`paththeory_tools.sandbox.package_folders`)."""
    from paththeory_tools import runner, sandbox

    if phase == "call":
        _write_into(scratch, "runner.py", lambda p: shutil.copyfile(runner.__file__, p))
        # by its relative name: the scratch folder's path lies under a /tmp that the sandbox covers
        argv = [sys.executable, "-I", "-c", "exec(compile(open('runner.py').read(), 'runner.py', 'exec'), "
                "{'__name__': '__main__'})", "call"]
    else:
        argv = [sys.executable, "-I", "-m", "paththeory_tools.runner", phase]
    cpu = timeout or limits["timeout"]  # CPU seconds: the limit a busy machine does not shorten
    return sandbox.run(argv, scratch, hide, timeout=WALL_FACTOR * cpu, cpu_seconds=cpu, memory_bytes=limits["memory"],
                       packages=phase != "call")


def _write_into(scratch: Path, name: str, write) -> None:
    from paththeory_tools import sandbox

    path = scratch / name
    write(path)
    sandbox.give_to_sandbox(path)


def _execute(nb: dict, skip: set[int], capture: dict, hide: list[Path], limits: dict):
    """Run the notebook's code in the sandbox; returns ``(log, {exercise: arrays or None}, failure)``."""
    from paththeory_tools import sandbox

    scratch = sandbox.scratch_folder()
    try:
        _write_into(scratch, "submission.ipynb", lambda p: p.write_text(json.dumps(nb)))
        _write_into(scratch, "plan.json", lambda p: p.write_text(json.dumps(
            {"skip": sorted(skip), "capture": {str(i): ex for i, ex in capture.items()}})))
        done = _sandboxed("execute", scratch, hide, limits)
        log = _read_log(scratch / "log.json")
        answers = {}
        for ex in capture.values():
            data = _read_npz(scratch / "answers" / f"{ex}.npz")
            items = [data[f"item{i}"] for i in range(len(data)) if f"item{i}" in data]
            answers[ex] = items if items and len(items) == len(data) else None
        return log, answers, done.failure
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)


def _call_function(module: str, function: str, arrays: dict, ex: str, which: str, hide: list[Path],
                   limits: dict) -> tuple[dict, str | None]:
    """Call one implement answer in a fresh sandbox of its own (the package hidden, its own time limit
    ``limits["function_timeout"]``) on ``which`` cases (``public`` or ``hidden``: inputs only, and only
    those); returns ``(outputs, failure)``."""
    from paththeory_tools import sandbox

    counts = arrays[f"{ex}/{which}/counts"]
    cases = {f"case{k}_arg{j}": arrays[f"{ex}/{which}/case{k}_arg{j}"] for k, c in enumerate(counts)
             for j in range(int(c))}
    cases["counts"] = np.array(counts)
    scratch = sandbox.scratch_folder()
    try:
        _write_into(scratch, "module_0.py", lambda p: p.write_text(module))
        _write_into(scratch, "cases_0.npz", lambda p: np.savez(p, **cases))
        _write_into(scratch, "plan.json", lambda p: p.write_text(json.dumps({"jobs": [
            {"exercise": ex, "module": "module_0.py", "function": function, "cases": "cases_0.npz",
             "out": "outputs_0.npz"}]})))
        done = _sandboxed("call", scratch, hide, limits, timeout=limits["function_timeout"])
        return _read_npz(scratch / "outputs_0.npz"), done.failure
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)


def _call_functions(modules: dict, arrays: dict, questions: list[dict], hide: list[Path], limits: dict):
    """Call each implement answer on its public cases, then on its hidden cases, each in a sandbox of its own
    (a hang or crash costs that function alone; the hidden cases are never in a run whose text the
    feedback shows); returns ``({exercise: {"public": outputs, "hidden": outputs}}, {exercise: failure})``."""
    outputs, failures = {}, {}
    for q in questions:
        ex = q["exercise"]
        if ex not in modules:
            continue
        public, failure = _call_function(modules[ex], q["function"], arrays, ex, "public", hide, limits)
        if failure and "time limit" in failure:  # the hidden cases would hang too: not run, no points
            hidden, hidden_failure = {}, "not run: the public cases ran past the time limit"
        else:
            hidden, hidden_failure = _call_function(modules[ex], q["function"], arrays, ex, "hidden", hide, limits)
        outputs[ex] = {"public": public, "hidden": hidden}
        failures[ex] = "; ".join(f"{which}: {f}" for which, f in (("public", failure), ("hidden", hidden_failure))
                                 if f) or None
    return outputs, failures


#: A run's wall-clock fail-safe, in multiples of its CPU-time limit: only a run that sleeps reaches it.
WALL_FACTOR = 10
#: The limits of each sandboxed run of a submission, in CPU seconds of all its processes (the same on a busy machine as on
#: an idle one; the wall clock allows :data:`WALL_FACTOR` times as much): ``timeout`` for the notebook's run,
#: ``function_timeout`` for each graded function's run on its public cases and on its hidden cases (a
#: hang costs that function alone), ``memory`` (bytes) per process and for all of a run's processes together.
DEFAULT_LIMITS = {"timeout": 600.0, "function_timeout": 120.0, "memory": 4 * 2**30}
_AFTER_LAST = "(after the last question)"


def _student_cells(cells: list[dict], indices: list[int], book: set[str], skip: set[int]) -> list[str]:
    return [src(cells[i]) for i in indices if i not in skip and src(cells[i]) not in book]


def _honesty(exercise: str, code: list[str], context: str) -> tuple[list[str], list[str]]:
    """``(reasons the answer earns nothing, flags that change no points)`` from the static scans of the code
    that ran (``context``: the notebook's code before it, whose imports name what the code calls)."""
    from paththeory.exercises.graded_cells import dishonest_code
    from paththeory_tools.autograde import code_flags

    found = dishonest_code(code, context)
    refused = [f"{exercise} earns no points: the answer {', '.join(found)}."] if found else []
    return refused, [f for c in code for f in code_flags(c)]


def _answer_index(cells: list[dict], q: dict) -> int | None:
    return next((i for i, c in enumerate(cells)
                 if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == q["answer"]), None)


def _implement_outputs(cells, questions, skip, book, arrays, hide, limits):
    """The modules of the implement answers, the flags of a static scan of each module (all the student's
    code it runs, the book's imports naming the modules), and their outputs and failures (:func:`_call_functions`)."""
    from paththeory_tools.autograde import code_flags, implement_module, reference_uses

    modules, flags = {}, {}
    theirs = [{**c, "source": ""} if src(c) in book else c for c in cells]
    for q in questions:
        at = _answer_index(cells, q) if q["kind"] == "implement" else None
        if at is None:
            continue
        modules[q["exercise"]] = implement_module(cells, at, skip)
        module = implement_module(theirs, at, skip)
        uses = reference_uses(module, q["exercise"], "\n".join(src(c) for c in cells[:at] if src(c) in book))
        flags[q["exercise"]] = code_flags(module) + (
            [f"names paththeory's own {', '.join(uses)} (not importable where the function is called)"] if uses else [])
    outputs, failures = _call_functions(modules, arrays, questions, hide, limits)
    return outputs, flags, failures


def _expected(arrays: dict, ex: str, which: str) -> list[list[np.ndarray]]:
    counts = arrays[f"{ex}/{which}/counts"]
    return [[arrays[k] for j in range(8) if (k := f"{ex}/{which}/case{c}_out{j}") in arrays] for c in range(len(counts))]


def _score_question(q: dict, arrays: dict, answers: dict, outputs: dict, refused: list[str],
                    flags: list[str]) -> dict:
    """``{grade id: Score}`` of one automatic question (public and hidden test)."""
    from paththeory_tools.autograde import score_check, score_implement

    ex = q["exercise"]
    if q["kind"] == "implement":
        got = outputs.get(ex, {})
        common = dict(single=q["single"], rtol=q["rtol"], atol=q["atol"])
        scores = []
        for which, what in (("public", "public test"), ("hidden", "hidden test")):
            out = got.get(which) or {"module_error": "no outputs came back that the grader could read (numbers, "
                                                     f"at most {NPZ_BYTES // 2**20} MiB; see the flags)"}
            scores.append(score_implement(out, _expected(arrays, ex, which), points=q[f"{which}_points"], what=what,
                                          all_cases=which == "public", hidden=which == "hidden", **common))
        public, hidden = scores
        errors = " ".join(str(v) for d in got.values() for k, v in d.items() if k.endswith("error"))
        if "MemoryError" in errors:
            flags = flags + ["the answer hit the memory limit (MemoryError)"]
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


class RunStopped(GradingError):
    """A check of the grader's own (never a submission's report) found that no submission can be graded here."""


def _grade_submission(course: Path, assignment: str, student: str, info: dict, arrays: dict, released: dict,
                      limits: dict, hide: list[Path], reference: "_ReferenceRun") -> Graded:
    """Grade one submission: run it in the sandbox, call its functions in others, score here."""
    import time

    from paththeory_tools import sandbox
    from paththeory_tools.autograde import code_flags, question_groups

    start = time.monotonic()
    path = course / "submitted" / student / assignment / f"{assignment}.ipynb"
    try:
        nb = json.loads(path.read_text())
        cells = [c for c in nb["cells"] if isinstance(c, dict)]
    except (ValueError, KeyError, TypeError, OSError, UnicodeDecodeError) as err:
        raise ValueError(f"the submission is not a notebook ({type(err).__name__}); ask {student} to upload it "
                         "again") from None
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    questions = info["questions"]
    skip, capture = _plan(cells, released["cells"], questions)
    log, answers, failure = _execute(nb, skip, capture, hide, limits)
    reference.check(log, released, cells)
    tests = {q[k]: q["exercise"] for q in questions for k in ("public", "hidden")}
    groups = question_groups(cells, tests)
    book = _book_code(released["cells"])
    outputs, module_flags, call_failures = _implement_outputs(cells, questions, skip, book, arrays, hide, limits)
    notebook_flags = [f"the notebook run was {failure}" for _ in [0] if failure]
    earlier = earlier_uploads(course, assignment, student)
    notebook_flags += [f"graded the latest of {len(earlier) + 1} uploads (the earlier ones are kept in "
                       f"{earlier[0].parent})" for _ in [0] if earlier]
    notebook_flags += [f"cell {e.get('cell')} hit the memory limit (MemoryError)" for e in log
                       if str(e.get("error") or "").startswith("MemoryError")]
    scores = {}
    for q in questions:
        ex = q["exercise"]
        code = _student_cells(cells, groups.get(ex, []), book, skip)
        at = _answer_index(cells, q)
        context = "\n".join(src(c) for i, c in enumerate(cells[:at or 0]) if c.get("cell_type") == "code"
                            and i not in skip)
        refused, flags = _honesty(ex, code, context)
        if q["kind"] == "implement":
            flags = flags + module_flags.get(ex, []) + [f"the function's run: {call_failures[ex]}" for _ in [0]
                                                        if call_failures.get(ex)]
        scores.update(_score_question(q, arrays, answers, outputs, refused, flags))
    after = _student_cells(cells, groups.get(_AFTER_LAST, []), book, skip)
    notebook_flags += [f for c in after for f in code_flags(c)]
    return Graded(student, {k: vars(v) for k, v in scores.items()}, list(dict.fromkeys(notebook_flags)), log,
                  round(time.monotonic() - start, 2), sandbox.detect().kind)


def _not_graded(student: str, questions: list[dict], why: str, seconds: float) -> Graded:
    """The record of a submission the grader could not grade: no automatic point, ``why`` in its notes."""
    from paththeory_tools import sandbox
    from paththeory_tools.autograde import Score

    scores = {q[k]: vars(Score(0.0, q[f"{k}_points"], [f"not graded: {why}"], [f"not graded: {why}"]))
              for q in questions for k in ("public", "hidden")}
    return Graded(student, scores, [f"not graded: {why}"], [], round(seconds, 2), sandbox.detect().kind)


class _ReferenceRun:
    """The grader's own check for a data file this machine lacks. A submission's log naming a missing-file
    error (text from the sandbox: never trusted) in one of the release's own cells only triggers it: the
    released notebook, untouched, runs once in the sandbox, and only a missing-file error there stops the run."""

    def __init__(self, course: Path, assignment: str, hide: list[Path], limits: dict):
        import threading

        self.course, self.assignment, self.hide, self.limits = course, assignment, hide, limits
        self._lock, self._missing, self._done = threading.Lock(), None, False

    def check(self, log: list[dict], released: dict, cells: list[dict]) -> None:
        from paththeory.display.notices import MISSING_FILE_ERRORS

        names = {cls.__name__ for cls in MISSING_FILE_ERRORS}
        book = _book_code(released["cells"])
        claimed = [e for e in log if str(e.get("error") or "").split(":")[0] in names
                   and isinstance(e.get("cell"), int) and 0 <= e["cell"] < len(cells) and src(cells[e["cell"]]) in book]
        if not claimed:
            return
        with self._lock:
            if not self._done:
                self._missing = self._run(released, names)
                self._done = True
        if self._missing:
            raise RunStopped(f"grading {self.assignment} needs a file this machine lacks: {self._missing} "
                             "Install it (or set PATHTHEORY_DATA) and grade again.")

    def _run(self, released: dict, names: set[str]) -> str | None:
        cells = [c for c in released["cells"] if isinstance(c, dict)]
        skip, _ = _plan(cells, released["cells"], [])
        skip |= {i for i, c in enumerate(cells) if c.get("metadata", {}).get("nbgrader", {}).get("grade")
                 and c.get("cell_type") == "code"}
        log, _, _ = _execute({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, skip, {},
                             self.hide, self.limits)
        return next((str(e["error"]) for e in log if str(e.get("error") or "").split(":")[0] in names), None)


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
          memory_bytes: int | None = None, function_timeout: float | None = None, workers: int = 2) -> Path:
    """Grade every submission of ``assignment`` (or only ``student``'s), write the gradebook, the
    feedback and ``<course>/grades-<assignment>.csv``; returns the CSV's path.

    Each submission runs in the sandbox (:mod:`paththeory_tools.sandbox`: no network, the course
    folder and the uploads out of sight, ``timeout`` seconds and ``memory_bytes`` per run); each implement
    answer is called in sandboxes of its own where the package cannot be imported, on the public cases,
    then on the hidden ones, each run at most ``function_timeout`` seconds (:data:`DEFAULT_LIMITS`), and
    every point is computed here from the numbers that come back. Whatever a submission does, the others
    are graded: one the grader cannot grade gets no automatic point and the reason (in its feedback, the
    CSV's flags and the report); only the grader's own checks stop the run (a data file this machine lacks,
    found by running the released notebook itself). The gradebook is written after every sandbox has exited.
    The CSV has one row per student and question (``student, question, kind, score, max_score,
    flags``), then a row ``total``. ``<course>/grading-report-<assignment>.txt`` has one entry per
    graded student (time, sandbox, flags): a run for one ``student`` replaces that student's entry and
    keeps the others. A sandbox weaker than the strongest is reported there and as a warning, and so
    is a feedback page withheld by the leak check (:func:`feedback`).
    """
    from concurrent.futures import ThreadPoolExecutor

    from paththeory_tools import sandbox

    course = Path(course_dir)
    with _private(course):
        info, arrays = _keys(course, assignment)
        students = _students(course, assignment, student)
        released = json.loads((course / "release" / assignment / f"{assignment}.ipynb").read_text())
        limits = {"timeout": float(timeout or DEFAULT_LIMITS["timeout"]),
                  "function_timeout": float(function_timeout or DEFAULT_LIMITS["function_timeout"]),
                  "memory": int(memory_bytes or DEFAULT_LIMITS["memory"])}
        box = sandbox.detect()
        if box.warning:
            warnings.warn(box.warning, stacklevel=2)
        hide = [course, *_uploads(course)]
        reference = _ReferenceRun(course, assignment, hide, limits)

        def one(s: str) -> Graded:
            import time

            start = time.monotonic()
            try:
                return _grade_submission(course, assignment, s, info, arrays, released, limits, hide, reference)
            except RunStopped:
                raise
            except Exception as err:  # noqa: BLE001 - whatever one submission does, the others are graded
                return _not_graded(s, info["questions"], f"{type(err).__name__}: {_excerpt(str(err), 300)}",
                                   time.monotonic() - start)

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:  # the keys stay in this process
            graded = list(pool.map(one, students))
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
            try:
                submitted = json.loads((course / "submitted" / g.student / assignment / f"{assignment}.ipynb")
                                       .read_text())
                answers = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id"): src(c)
                           for c in submitted.get("cells", []) if isinstance(c, dict)
                           and isinstance(c.get("metadata", {}), dict) and isinstance(c["metadata"].get("nbgrader", {}), dict)}
            except (ValueError, OSError, TypeError, AttributeError, UnicodeDecodeError):
                answers = {}
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
    from nbgrader.api import MissingEntry

    out = course / f"grades-{assignment}.csv"
    order = _order(course, assignment)
    marks = _marks(course, assignment)
    rows = []
    with _gradebook(course) as gb:
        for student in students:
            result_path = _result_path(course, assignment, student)
            result = json.loads(result_path.read_text()) if result_path.is_file() else {"scores": {}, "flags": []}
            flags = {gid: s.get("flags", []) for gid, s in result["scores"].items()}
            try:
                submission = gb.find_submission(assignment, student)
            except MissingEntry:  # collected, not graded yet: one row says so
                rows.append([student, "total", "", "", "", f"not graded yet: course grade {assignment} --student "
                                                            f"{student}"])
                continue
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
    is a warning: the mark stands). The same as nbgrader's formgrader, from the command line; many
    marks at once: :func:`import_marks`.
    """
    with _private(Path(course_dir)):
        return _apply_marks(Path(course_dir), assignment, [(student, question, float(points), comment)])[0]


#: The columns of a marks CSV (:func:`marks_template`, :func:`import_marks`); ``max_points`` and ``rubric``
#: are there for the marker and are not read back.
MARKS_COLUMNS = ("student", "question", "max_points", "points", "comment", "rubric")


def marks_template(course_dir: str | Path, assignment: str, out: str | Path) -> tuple[Path, int, list[str]]:
    """Write ``out``, a CSV (:data:`MARKS_COLUMNS`) with one row per hand-marked cell (a written answer, a part
    of a derivation) of every graded student of ``assignment``, in the notebook's order, with its points, its
    rubric and the mark already given (points and comment; empty where none). Fill in ``points`` and
    ``comment`` and give it to :func:`import_marks`. Refuses to overwrite a file. Returns ``(out, its rows,
    the collected students not graded yet, left out)``."""
    course, out = Path(course_dir), Path(out)
    if out.exists():
        raise FileExistsError(f"{out} exists: give another file name (a template never replaces marks).")
    if not (course / "gradebook.db").is_file():
        raise FileNotFoundError(f"no gradebook in {course}: grade {assignment} first (paththeory-tools course grade).")
    rubric, marks, order = _rubric(course, assignment), _marks(course, assignment), _order(course, assignment)
    rows = []
    with _gradebook(course) as gb:
        graded = sorted(s.student.id for s in gb.assignment_submissions(assignment))
        for student in graded:
            grades = [g for nb in gb.find_submission(assignment, student).notebooks for g in nb.grades
                      if g.cell.cell_type == "markdown"]
            for g in sorted(grades, key=lambda g: order.get(g.name, len(order))):
                given = marks.get(student, {}).get(g.name, {})
                rows.append([student, g.name, f"{g.max_score:g}", f"{given['points']:g}" if given else "",
                             given.get("reason", ""), rubric[g.name][1].earns if g.name in rubric else ""])
    waiting = [s for s in _students(course, assignment, None) if s not in graded] if (course / "submitted").is_dir() \
        else []
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(MARKS_COLUMNS)
    writer.writerows(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    return _io.write_text(out, text.getvalue()), len(rows), waiting


def _read_marks(path: Path) -> tuple[list[tuple[int, str, str, float | None, str | None]], list[str]]:
    """The rows of a marks CSV as ``(line, student, question, points or None, comment or None)`` and what is
    wrong with the file, one line per wrong row (nothing may be imported if any)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        return [], [f"{path.name} is not UTF-8 text (byte {err.start}): save it as CSV, UTF-8"]
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = [h.strip() for h in next(reader, [])]
        missing = [c for c in ("student", "question", "points") if c not in header]
        if missing:
            return [], [f"{path.name}, line 1: the header {header} lacks {missing}: write the columns "
                        f"{', '.join(MARKS_COLUMNS)} (course mark ... --template FILE writes them)"]
        rows, errors, at = [], [], {c: header.index(c) for c in ("student", "question", "points", "comment")
                                    if c in header}
        for fields in reader:
            if not any(f.strip() for f in fields):
                continue
            if len(fields) != len(header):
                errors.append(f"line {reader.line_num}: {len(fields)} fields, the header has {len(header)}")
                continue
            row, error = _mark_row(reader.line_num, fields, at)
            rows += [row] if row else []
            errors += [error] if error else []
    except csv.Error as err:
        return [], [f"{path.name}, line {reader.line_num}: not a CSV file ({err})"]
    return rows, errors


def _mark_row(line: int, fields: list[str], at: dict) -> tuple[tuple | None, str | None]:
    """One row of a marks CSV (``at``: the column of each field) as ``(row, None)``, or ``(row or None, what is
    wrong)``."""
    student, question, given = (fields[at[c]].strip() for c in ("student", "question", "points"))
    comment = fields[at["comment"]].strip() if "comment" in at else ""
    where = f"line {line}: {student}, {question}"
    if not given:
        return (line, student, question, None, None), f"{where}: a comment without points" if comment else None
    try:
        points = float(given)
    except ValueError:
        return None, f"{where}: points {given!r} is not a number"
    if not np.isfinite(points):
        return None, f"{where}: points {given!r} is not a finite number"
    return (line, student, question, points, comment or None), None


def import_marks(course_dir: str | Path, assignment: str, path: str | Path) -> tuple[Path, int, list[str]]:
    """Mark by the batch: every row of the CSV ``path`` (:func:`marks_template`'s columns; a row with empty
    ``points`` is skipped) is a :func:`mark`, all in one gradebook session, then one grades CSV and one
    feedback page per student marked. All or nothing: a malformed file, an unknown student or question, points
    out of range, an override without a comment or a question given twice, and nothing is imported (the
    error names every wrong row by its line). Returns ``(the grades CSV, the marks imported, the students)``."""
    course, path = Path(course_dir), Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no marks file {path}: write one with course mark {assignment} --template FILE.")
    rows, errors = _read_marks(path)
    seen: dict[tuple[str, str], int] = {}
    for line, student, question, _, _ in rows:
        if (student, question) in seen:
            errors.append(f"line {line}: {student}, {question} is given twice (line {seen[student, question]} too)")
        seen.setdefault((student, question), line)
    marked = [(s, q, p, c, line) for line, s, q, p, c in rows if p is not None]
    if errors:
        raise ValueError(_batch_refused(path, errors))
    if not marked:
        raise ValueError(f"{path}: no row has points; nothing to import.")
    with _private(course):
        out, students = _apply_marks(course, assignment, marked, batch=path)
    return out, len(marked), students


def _batch_refused(path: Path, errors: list[str]) -> str:
    shown = errors[:20] + ([f"... and {len(errors) - 20} more"] if len(errors) > 20 else [])
    return f"{path}: nothing imported, {len(errors)} wrong row(s):\n  " + "\n  ".join(shown)


def _rubric(course: Path, assignment: str) -> dict:
    """``{grade id: (label, Part)}`` of the parts of ``assignment``'s derivations, as frozen at release
    (a private problem set's own), else the package's (:func:`written_parts`)."""
    from paththeory.exercises.problems import Part

    path = course / "keys" / f"{assignment}.json"
    info = json.loads(path.read_text()) if path.is_file() else {}
    if "parts" in info:
        return {gid: (label, Part(*part)) for gid, (label, part) in info["parts"].items()}
    return written_parts()


def _order(course: Path, assignment: str) -> dict:
    """``{grade id: its position}`` in the source notebook of ``assignment``."""
    import nbformat

    source = nbformat.read(course / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: i for i, c in enumerate(source.cells) if "nbgrader" in c.metadata}


def _question_error(grades: dict, question: str, assignment: str, rubric: dict, short: bool) -> str | None:
    """Why ``question`` is not one of ``grades`` (a whole derivation's id: its parts listed), or None; ``short``: a
    line of a batch, without the lists."""
    if question in grades:
        return None
    parts = [f"{gid} ({part.points} points: {part.earns})" for gid, (label, part) in rubric.items()
             if gid in grades and question in (label, _grade_id(label, "answer"))]
    if parts:
        return (f"{question} is marked part by part, each part a question of its own:\n  "
                + (", ".join(p.split(" (")[0] for p in parts) if short else "\n  ".join(parts)))
    return f"{question!r} is not a question of {assignment}" + ("" if short else f"; the questions are {sorted(grades)}.")


def _mark_error(g, question: str, points: float, comment: str | None, assignment: str, rubric: dict) -> str | None:
    """Why ``points`` (and ``comment``) cannot be the mark of gradebook grade ``g``, or None."""
    if g.cell.cell_type != "markdown" and not (comment and comment.strip()):
        return f"{question} is scored automatically: overriding it needs a reason (--comment TEXT)."
    if not (np.isfinite(points) and 0 <= points <= g.max_score):
        what = f" (its rubric: {rubric[question][1].earns})" if question in rubric else ""
        return f"points must be between 0 and {g.max_score:g} for {question}{what}; got {points:g}."
    return None


def _apply_marks(course: Path, assignment: str, rows: list[tuple], batch: Path | None = None) -> tuple[Path, list]:
    """Give every mark ``(student, question, points, comment[, line])`` of ``rows`` in one gradebook session, or,
    if any is wrong, none (a :func:`mark`'s error as it is; a ``batch``'s, every wrong line); then rewrite the
    grades CSV once and the feedback of each student marked. Returns ``(the grades CSV, the students)``."""
    if not (course / "gradebook.db").is_file():
        raise FileNotFoundError(f"no gradebook in {course}: grade {assignment} first (paththeory-tools course grade).")
    rubric, errors, found = _rubric(course, assignment), [], []
    with _gradebook(course) as gb:
        graded = sorted(s.student.id for s in gb.assignment_submissions(assignment))
        submissions: dict = {}
        for row in rows:
            student, question, points, comment = row[:4]
            where = f"line {row[4]}: {student}, {question}: " if batch else ""
            if student not in graded:
                errors.append(where + (f"{student!r} has no graded submission of {assignment}" if batch else
                                       f"no graded submission of {assignment} by {student!r}; the graded students "
                                       f"are {graded}."))
                continue
            if student not in submissions:
                submissions[student] = gb.find_submission(assignment, student)
            grades = {g.name: g for nb in submissions[student].notebooks for g in nb.grades}
            error = _question_error(grades, question, assignment, rubric, batch is not None) or _mark_error(
                grades[question], question, points, comment, assignment, rubric)
            if error:
                errors.append(where + error)
            else:
                found.append((student, question, points, comment, grades[question]))
        if errors:
            raise ValueError(_batch_refused(batch, errors) if batch else errors[0])
        for student, question, points, comment, g in found:
            g.manual_score = points
            g.needs_manual_grade = False
            if comment is not None and g.cell.cell_type == "markdown":
                notebook = next(nb for nb in submissions[student].notebooks if g in nb.grades)
                gb.find_comment(question, notebook.name, assignment, student).manual_comment = comment
        gb.db.commit()
    return _after_marks(course, assignment, found, graded)


def _after_marks(course: Path, assignment: str, found: list[tuple], graded: list[str]) -> tuple[Path, list]:
    """After the gradebook took the marks ``found``: keep them in ``marks/``, write the grades CSV once and the
    feedback of each student marked."""
    marks = _marks(course, assignment)
    for student, question, points, comment, _ in found:
        marks.setdefault(student, {})[question] = {"points": points, "reason": comment or ""}
    _io.write_json(_marks_path(course, assignment), marks, "the marks")
    path = _write_grades(course, assignment, graded)
    students = sorted({row[0] for row in found})
    for student in students:
        try:
            _feedback(course, assignment, student)
        except GradingError as err:  # the mark and the grades stand; the page waits for the instructor
            warnings.warn(str(err), stacklevel=4)
    return path, students


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
    with _private(Path(course_dir)):
        return _feedback(Path(course_dir), assignment, student)


def _feedback_tail(result: dict, earlier: int) -> list[str]:
    """The end of a feedback page: the errors of the student's cells (a short excerpt each) and, after more
    than one upload, that the latest was graded."""
    import html

    parts = ["</table><h2>Errors in your cells</h2><ul>"]
    parts += [f"<li>cell {e.get('cell')}: {html.escape(_excerpt(str(e['error'])))}</li>" for e in result.get("log", [])
              if isinstance(e, dict) and e.get("error")]
    parts.append("</ul>")
    if earlier:
        parts.append(f"<p>You uploaded this assignment {earlier + 1} times; the latest upload was graded.</p>")
    return parts + ["</body></html>"]


def _feedback(course: Path, assignment: str, student: str) -> Path:
    import html

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
    rubric = _rubric(course, assignment)
    for name, score, top in grades:
        s = result["scores"].get(name, {})
        notes = [_excerpt(n, 400) for n in s.get("notes", [])]  # the grader's words around a short excerpt
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
    parts += _feedback_tail(result, len(earlier_uploads(course, assignment, student)))
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
    """``{student: {question: (score or None, max_score)}}`` from a grades CSV of :func:`grade` (a student
    collected but not graded yet: ``{"total": (None, None)}``)."""
    out: dict = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            score = float(row["score"]) if row["score"] else None
            top = float(row["max_score"]) if row["max_score"] else None
            out.setdefault(row["student"], {})[row["question"]] = (score, top)
    return out


def read_flags(path: str | Path) -> dict:
    """``{student: {question: flags text}}`` (only the non-empty ones) from a grades CSV of :func:`grade`."""
    out: dict = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("flags"):
                out.setdefault(row["student"], {})[row["question"]] = row["flags"]
    return out
