"""Grading with nbgrader (paththeory_tools.grading): a released notebook hides solutions and keys; four
sample submissions of the model chapter (all correct, blank, one wrong, spoofed) get exactly the
points they should; a graded run that lacks a data file fails, naming the file; the honesty scan
catches the ways around the checks without flagging honest code."""

from __future__ import annotations

import copy
import csv
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from paththeory.exercises import grading as honesty
from paththeory.exercises import answers
from paththeory_tools import grading
from paththeory.exercises import solution
from paththeory_tools.student import BEGIN, END
from paththeory.exercises.checking import _truth

pytest.importorskip("nbgrader")

ROOT = Path(__file__).resolve().parents[2]
IDS = ("model.n_paths", "model.path_expansion", "model.gp_kernel")


@pytest.fixture(autouse=True)
def nothing_revealed():
    """Each test starts with no answer shown in this process (other test files call solution())."""
    answers._REVEALED.clear()
    yield
    answers._REVEALED.clear()


def answer_sources(source_nb) -> dict:
    """``{grade_id: the worked solution without markers}`` of the answer cells of a source notebook."""
    return {c.metadata["nbgrader"]["grade_id"]: re.sub(r"^[ \t]*### (BEGIN|END) SOLUTION[^\n]*\n?", "", c.source,
                                                        flags=re.MULTILINE)
            for c in source_nb.cells if c.metadata.get("nbgrader", {}).get("solution")}


def filled(released, cells: dict):
    """A copy of the released notebook with the cells of ``cells`` (``{grade_id: source}``: answer cells
    and, to spoof, test cells) replaced."""
    nb = copy.deepcopy(released)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in cells:
            cell.source = cells[gid]
    return nb


def submit(course: Path, chapter: str, wrong: dict) -> tuple:
    """Release ``book/<chapter>.md`` into ``course`` and hand in (:func:`grading.collect`) the notebooks
    of the students ``correct`` (every worked solution), ``blank`` (the released notebook as it is) and
    each student of ``wrong``: ``{student: {grade_id: source}}``, the worked solutions with those cells
    (answer or test cells) replaced, a replacement that is a function getting that cell's worked solution.
    Returns ``(released, source, the student ids collected)``."""
    released = nbformat.read(grading.release(ROOT / "book" / f"{chapter}.md", course), as_version=4)
    source = nbformat.read(course / "source" / chapter / f"{chapter}.ipynb", as_version=4)
    right = answer_sources(source)
    uploads = course / "uploads"
    uploads.mkdir()
    nbformat.write(filled(released, right), uploads / "correct.ipynb")
    nbformat.write(released, uploads / "blank.ipynb")
    for student, cells in wrong.items():
        cells = {gid: cell(right[gid]) if callable(cell) else cell for gid, cell in cells.items()}
        nbformat.write(filled(released, {**right, **cells}), uploads / f"{student}.ipynb")
    return released, source, grading.collect(course, chapter, uploads)


@pytest.fixture(scope="module")
def graded_model(tmp_path_factory):
    course = tmp_path_factory.mktemp("course")
    spoofed = {
        "model-n-paths-answer": "from paththeory.exercises import solution\nanswer = solution('model.n_paths')",
        "model-path-expansion-answer": lambda worked: worked
        + "\ntry:\n    check('model.path_expansion', 0 * answer, reveal=True)\nexcept Exception:\n    pass",
        "model-gp-kernel-answer": "check = lambda *args, **kwargs: print('Correct')\nanswer = 0",
        "model-gp-kernel-public": "print('Correct')",
        "model-gp-kernel-hidden": "pass",
    }
    released, source, students = submit(course, "model", {"one_wrong": {"model-n-paths-answer": "answer = 12"},
                                                          "spoofed": spoofed})
    assert students == ["blank", "correct", "one_wrong", "spoofed"]
    csv_path = grading.grade(course, "model")
    return course, released, source, csv_path


def test_the_released_notebook_hides_solutions_and_keys(graded_model):
    _, released, source, _ = graded_model
    text = "\n".join(c.source for c in released.cells)
    assert BEGIN not in text and "HIDDEN TESTS" not in text and not re.search(r"graded(_function)?\([^)]*key=", text)
    for gid, worked in answer_sources(source).items():
        body = worked.split("\n")[-2] if worked.strip() else ""
        assert body.strip() and body not in text, f"{gid}: its solution line is in the released notebook"
    for ex in IDS:
        assert f'graded("{ex}", answer)' in text, f"{ex}: no public test"
        for value in np.ravel(_truth(ex)[0])[:3]:
            if value not in (0.0, 1.0):
                assert repr(float(value)) not in text
    points = [c.metadata["nbgrader"].get("points") for c in released.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert sum(points) == len(IDS) * (grading.PUBLIC_POINTS + grading.HIDDEN_POINTS)


def test_the_grades_of_the_four_sample_submissions(graded_model):
    _, _, _, csv_path = graded_model
    grades = grading.read_grades(csv_path)
    questions = [f"{ex.split('.')[1].replace('_', '-')}" for ex in IDS]
    full = len(IDS) * (grading.PUBLIC_POINTS + grading.HIDDEN_POINTS)
    for student in ("correct", "blank", "one_wrong", "spoofed"):
        asked = [q for q in grades[student] if q != "total"]
        assert len(asked) == 2 * len(IDS), f"{student}: every question must be reported, got {asked}"
        assert grades[student]["total"][1] == full
    assert grades["correct"]["total"][0] == full
    assert all(score == top for score, top in grades["correct"].values())
    assert grades["blank"]["total"][0] == 0
    assert all(score == 0 for q, (score, _) in grades["blank"].items())
    lost = {q: top - score for q, (score, top) in grades["one_wrong"].items() if q != "total" and score != top}
    assert lost == {"model-n-paths-public": 1, "model-n-paths-hidden": 2}
    for q, (score, _) in grades["spoofed"].items():
        assert score == 0, f"spoofed earned {score} for {q}"
    with open(csv_path) as f:
        assert next(csv.reader(f)) == ["student", "question", "kind", "score", "max_score"]
    assert all(any(q.startswith("model-" + name) for q in grades["correct"]) for name in questions)


def test_feedback_says_why_a_spoofed_answer_earns_nothing(graded_model):
    course = graded_model[0]
    feedback = (course / "feedback" / "spoofed" / "model" / "model.html").read_text()
    assert "model.n_paths: the expected answer is not available in a graded run" in feedback  # solution()
    assert "model.path_expansion earns no points: the answer asked for the expected answer" in feedback
    assert "model.gp_kernel earns no points: the answer redefined a checking function" in feedback


def test_a_graded_run_that_lacks_a_file_fails_naming_it(tmp_path):
    """Outside a graded run a missing file reduces the chapter to a notice; under the grader it must
    fail the grade run, with the file's name, instead of grading empty cells."""
    book = tmp_path / "book"
    book.mkdir()
    (book / "needs.md").write_text("\n".join([
        "---", "jupytext:", "  text_representation:", "    format_name: myst", "kernelspec:",
        "  display_name: Python 3", "  language: python", "  name: python3", "---", "", "# Needs a file", "",
        "```{code-cell} ipython3",
        "from paththeory.display.notices import needs_files",
        "from paththeory.tasks.data import DataNotFoundError",
        "with needs_files():",
        "    raise DataNotFoundError('images_missing.zip is not in the data folder')",
        "```", "",
        "```{code-cell} ipython3",
        "from paththeory.exercises import check",
        BEGIN, "answer = 24", END, 'check("model.n_paths", answer)', "```", ""]))
    course = tmp_path / "course"
    released = grading.release(book / "needs.md", course)
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    nbformat.write(nbformat.read(released, as_version=4), uploads / "student.ipynb")
    grading.collect(course, "needs", uploads)
    with pytest.raises(answers.GradingError, match="images_missing.zip"):
        grading.grade(course, "needs")


@pytest.mark.parametrize("cell,what", [
    ("answer = solution('model.n_paths')", "called solution()"),
    ("check('model.n_paths', 0, reveal=True)", "reveal"),
    ("def check(*a):\n    pass", "redefined"),
    ("check = print", "redefined"),
    ("from paththeory.exercises import solution as check", "redefined"),
    ("globals()['check'] = print", "redefined"),
    ("import paththeory.exercises.checking as c\npaththeory.exercises.checking.check = print", "changed"),
    ("from paththeory.exercises.checking import _truth\nanswer = _truth('model.n_paths')", "answer key"),
    ("for w in (3, 10, 30):\n    try:\n        check('gp_vs_finite.width_10', w)\n        answer = w\n    except Exception:\n"
     "        pass", "tried several answers"),
    ("check('model.n_paths', 23)\ncheck('model.n_paths', 24)", "tried several answers"),
    ("while True: check('model.n_paths', 24)", "tried several answers"),
    ("_ = [check('gp_vs_finite.width_10', w) for w in (3, 10)]", "tried several answers"),
])
def test_the_honesty_scan_catches(cell, what):
    with pytest.raises(answers.GradingError, match=what):
        honesty.assert_honest("model.n_paths", ["x = 1", cell])


@pytest.mark.parametrize("cell", [
    "import subprocess\nsubprocess.run(['true'], check=True)",
    "# I did not call solution() here\nanswer = 24",
    "checked = 3\nanswer = checked * 8",
    "from paththeory.exercises import check\nanswer = 24\nassert answer == 24",
    "answer = 24\ncheck('model.n_paths', answer)",
    "for h in (3, 2, 4):\n    layers.append(h)\nanswer = 24\ncheck('model.n_paths', answer)",
])
def test_the_honesty_scan_leaves_honest_answers_alone(cell):
    honesty.assert_honest("model.n_paths", [cell])


def test_solution_and_reveal_refuse_in_a_graded_run(monkeypatch):
    monkeypatch.setenv(answers.GRADING_ENV, "1")
    with pytest.raises(answers.GradingError, match="not available in a graded run"):
        solution("model.gp_kernel")
    monkeypatch.delenv(answers.GRADING_ENV)
    assert solution("model.n_paths") == 24
    with pytest.raises(answers.GradingError, match="asked for the expected answer"):
        honesty.assert_honest("model.n_paths", ["answer = 24"])


def test_the_honesty_scan_passes_a_whole_chapter_of_honest_code():
    """The scan reads every cell before the first exercise: a chapter's loops and indented code (a
    scan whose pattern backtracked would hang here)."""
    code = (ROOT / "book" / "omniglot.md").read_text().replace("check(", "chk(")
    honesty.assert_honest("model.n_paths", [code, code])


def test_answer_cells_are_those_since_the_previous_exercise():
    history = ["", "setup = 1", 'graded("a.b", x)', 'graded("a.b", x, key=[[1.0]])', "answer = 24",
               'graded("c.d", answer)', 'graded("c.d", answer, key=[[24.0]])']
    assert honesty.answer_cells(history, "c.d") == ["answer = 24"]
    assert honesty.answer_cells(history[:3], "a.b") == ["", "setup = 1"]


# --------------------------------------------------------------------------- the problem set

#: An overlap distance that gives up on a single draw: right for every case with more than one.
PARTIAL_OVERLAP = """import numpy as np

def overlap_distance(U_theory, w_draws):
    w = np.asarray(w_draws, float)
    S, _, n0 = w.shape
    if S == 1:
        return 0.0
    U_hat = np.einsum("san,sbn->ab", w, w) / (S * n0)
    return float(np.linalg.norm(U_hat - U_theory) / np.linalg.norm(U_theory))
"""


@pytest.fixture(scope="module")
def graded_problems(tmp_path_factory):
    course = tmp_path_factory.mktemp("problems")
    released, _, _ = submit(course, "problems", {"partial": {"problems-overlap-distance-answer": PARTIAL_OVERLAP}})
    return released, grading.read_grades(grading.grade(course, "problems")), course


def test_the_problem_set_has_manual_and_automatic_questions(graded_problems):
    from paththeory.exercises import problems

    released, grades, _ = graded_problems
    manual = [c for c in released.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "markdown"]
    assert len(manual) == sum(kind != "implement" for kind in problems.KINDS.values())
    assert all(c.metadata["nbgrader"]["grade"] and "YOUR ANSWER HERE" in c.source for c in manual)
    assert grades["correct"]["total"][1] == sum(problems.POINTS.values())


def test_the_problem_set_grades_functions_with_partial_credit(graded_problems):
    from paththeory.exercises import problems

    _, grades, _ = graded_problems
    automatic = {q: v for q, v in grades["correct"].items() if q.endswith(("-public", "-hidden"))}
    assert automatic and all(score == top for score, top in automatic.values())
    assert sum(top for _, top in automatic.values()) == sum(problems.POINTS[s.label] for s in problems.IMPLEMENT.values())
    manual = {q: v for q, v in grades["correct"].items() if q.endswith("-answer")}
    assert manual and all(score is None for score, _ in manual.values()), "written answers wait for a person"
    assert all(grades["blank"][q][0] == 0 for q in manual), "an untouched answer cell earns nothing"
    assert all(score in (0, None) for q, (score, _) in grades["blank"].items() if q != "total")
    score, top = grades["partial"]["problems-overlap-distance-hidden"]
    assert 0 < score < top, "a function wrong on a single draw passes the other cases only"
    assert grades["partial"]["problems-overlap-distance-public"][0] == 0
    assert grades["partial"]["problems-action-hidden"] == grades["correct"]["problems-action-hidden"]


def test_a_written_answer_graded_by_hand_counts(graded_problems):
    """What formgrader does, from Python and the command line: a manual score enters the CSV and the total."""
    from paththeory_tools.cli import main

    _, grades, course = graded_problems
    question = next(q for q in grades["correct"] if q.endswith("-answer"))
    top = grades["correct"][question][1]
    path = grading.mark(course, "problems", "correct", question, top - 1, "Right idea; give the number.")
    after = grading.read_grades(path)
    assert after["correct"][question] == (top - 1, top)
    assert after["correct"]["total"][0] == grades["correct"]["total"][0] + top - 1
    assert after["blank"] == grades["blank"]
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        assert gb.find_comment(question, "problems", "problems", "correct").manual_comment == "Right idea; give the number."
    with pytest.raises(ValueError, match=f"between 0 and {top:g}"):
        grading.mark(course, "problems", "correct", question, top + 1)
    with pytest.raises(ValueError, match="not a written answer.*prob"):
        grading.mark(course, "problems", "correct", "problems-action-hidden", 1)
    with pytest.raises(ValueError, match="no graded submission of problems by 'nobody'"):
        grading.mark(course, "problems", "nobody", question, 1)
    assert main(["course", "mark", "problems", "--course", str(course), "--student", "blank",
                 "--question", question, "--points", "0"]) == 0
    assert grading.read_grades(path)["blank"][question] == (0, top)
