"""A problem set the class has not seen (issue 48, item 10): ``course new-set NAME`` starts a private set from a
template in the course folder, which the same release, collect, grade, mark and feedback commands grade. The
walk-through of book/instructor.md is run here as it stands, from an empty folder."""

from __future__ import annotations

import copy
import csv
import re
import shlex
from pathlib import Path

import nbformat
import numpy as np
import pytest

from paththeory_tools import grading
from paththeory_tools.cli import main

pytest.importorskip("nbgrader")

PAGE = Path(__file__).resolve().parents[2] / "book" / "instructor.md"
RIGHT = 'def renormalised_kernel(U, C):\n    return np.einsum("ab,abmq->mq", U, C)\n'
#: Right for one path only (it reads the diagonal of U).
WRONG = 'def renormalised_kernel(U, C):\n    return np.einsum("aa,abmq->mq", U, C)\n'


def walkthrough() -> list[str]:
    """The command lines of the page's walk-through (its section's bash block), comments left out."""
    text = PAGE.read_text()
    section = text[text.index("## A problem set the class has not seen"):]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def answered(released, code: str | None, text: str | None):
    nb = copy.deepcopy(released)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code" and code is not None:
            cell.source = code
        elif meta.get("solution") and text is not None:
            cell.source = text
    return nb


def public_test(nb) -> str:
    return next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("-public"))


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    """The walk-through run in an empty folder: three students (right, wrong for more than one path, blank), the
    marks CSV filled in for the two who answered."""
    root = tmp_path_factory.mktemp("private")
    lines = walkthrough()
    assert [shlex.split(line)[2] for line in lines] == ["new-set", "release", "collect", "grade", "mark", "mark",
                                                        "feedback"]
    mp = pytest.MonkeyPatch()
    mp.chdir(root)
    try:
        for line in lines:
            args = shlex.split(line)
            assert args[0] == "paththeory-tools"
            if args[2] == "collect":
                released = nbformat.read(root / "course" / "release" / "week7" / "week7.ipynb", as_version=4)
                (root / "uploads").mkdir()
                nbformat.write(answered(released, RIGHT, "U = L L^T: a sum of squares."), root / "uploads" / "ada.ipynb")
                nbformat.write(answered(released, WRONG, "It is."), root / "uploads" / "bo.ipynb")
                nbformat.write(released, root / "uploads" / "cy.ipynb")
            if "--import" in args:
                with open(root / "marks.csv", newline="") as f:
                    rows = list(csv.DictReader(f))
                for r in rows:
                    if r["student"] != "cy":
                        r["points"] = r["max_points"] if r["student"] == "ada" else "1"
                        r["comment"] = "see the rubric"
                with open(root / "marks.csv", "w", newline="") as f:
                    writer = csv.DictWriter(f, fieldnames=grading.MARKS_COLUMNS)
                    writer.writeheader()
                    writer.writerows(rows)
            assert main(args[1:]) == 0, line
    finally:
        mp.undo()
    return root, root / "course", released


def test_the_walkthrough_grades_the_private_set(walked):
    root, course, _ = walked
    grades = grading.read_grades(course / "grades-week7.csv")
    assert grades["ada"]["total"] == (10, 10)
    assert grades["bo"]["week7-kernel-public"] == (0, 1)
    assert 0 < grades["bo"]["week7-kernel-hidden"][0] < 4, "right on the one-path hidden cases only"
    assert grades["bo"]["week7-positive-part2-answer"] == (1, 3)
    assert grades["cy"]["total"] == (0, 10)
    page = (course / "feedback" / "bo" / "week7" / "week7.html").read_text()
    assert "week7-positive, part 2 (3 points)" in page and "see the rubric" in page
    assert "Grading report of week7" in (course / "grading-report-week7.txt").read_text()


def test_the_released_set_hides_its_answers_and_tests_in_the_notebook(walked):
    """The model answers stay in the course folder; the public test runs in the student's notebook with numpy
    alone (the package does not know the set) and fails a wrong function."""
    root, course, released = walked
    text = "\n".join(c.source for c in released.cells)
    assert "np.asarray(U, float), np.asarray(C, float)" not in text and "U_{12}<0" not in text
    assert "U=LL^\\top" not in text
    assert "YOUR ANSWER HERE" in text and "2 points: U factored" in text
    namespace = {"np": np}
    exec(RIGHT, namespace)
    exec(public_test(released), namespace)
    exec(WRONG, namespace)
    with pytest.raises(AssertionError, match="case 2"):
        exec(public_test(released), namespace)


def test_the_hidden_cases_come_from_the_course_secret(walked):
    """The hidden cases are not the public ones, and another secret draws others; the rubric is frozen at release."""
    root, course, _ = walked
    with np.load(course / "keys" / "week7.npz") as keys:
        public, hidden = keys["week7.kernel/public/case1_arg1"], keys["week7.kernel/hidden/case1_arg1"]
    assert public.shape[:2] == hidden.shape[:2] and not np.allclose(public, hidden)
    registry = grading._load_set(course / "sets" / "week7" / "book" / "week7.md")
    seed = grading._seed(grading._secret(course), "week7.kernel")
    assert np.array_equal(registry.IMPLEMENT["week7.kernel"].cases(seed)[1][1], hidden)
    assert not np.allclose(registry.IMPLEMENT["week7.kernel"].cases(grading._seed("0" * 32, "week7.kernel"))[1][1],
                           hidden)
    assert set(grading._rubric(course, "week7")) == {"week7-positive-part1-answer", "week7-positive-part2-answer"}


def test_a_new_set_needs_a_name_of_its_own(walked, tmp_path):
    _, course, _ = walked
    with pytest.raises(FileExistsError, match="already has an assignment or a set named week7"):
        grading.new_set(course, "week7")
    for name in ("Week 8", "8th", "a-b"):
        with pytest.raises(ValueError, match="lower-case letters"):
            grading.new_set(tmp_path / "course", name)
    for name in ("prob", "problems"):
        with pytest.raises(ValueError, match="prefix of the package's problems"):
            grading.new_set(tmp_path / "course", name)


def test_a_set_that_reuses_the_packages_problems_is_refused(tmp_path):
    course = tmp_path / "course"
    md = grading.new_set(course, "week9")
    registry = md.parent / grading.SET_REGISTRY
    registry.write_text(registry.read_text() + '\nPOINTS["prob-gamma"] = 10\n')
    with pytest.raises(grading.GradingError, match=r"reuses the package's problems \['prob-gamma'\]"):
        grading.release(md, course)
    assert not (course / "release").exists()
