"""Marking by the batch (issue 48, item 9): ``course mark ASSIGNMENT --template FILE`` lists every hand-marked
answer of every graded student; ``--import FILE`` gives all its marks in one command, all or nothing, each wrong
row named by its line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import nbformat
import pytest

from paththeory.exercises.problems import PARTS
from paththeory_tools import grading
from paththeory_tools.cli import main

pytest.importorskip("nbgrader")

GAMMA_PARTS = "\n\n".join(f"**{p.part}.** The steps of part {p.part}." for p in PARTS["prob-gamma"])
CHAPTER = "\n".join([
    "---", "jupytext:", "  text_representation:", "    format_name: myst", "kernelspec:",
    "  display_name: Python 3", "  language: python", "  name: python3", "---", "", "# Two written problems", "",
    "```{exercise} A derivation", ":label: prob-gamma", "", "Derive it, in four parts.", "```", "",
    "```{solution} prob-gamma", ":label: sol-prob-gamma", ":class: dropdown", "", GAMMA_PARTS, "```", "",
    "```{exercise} An interpretation", ":label: prob-anticorrelation", "", "Say why.", "```", "",
    "```{solution} prob-anticorrelation", ":label: sol-prob-anticorrelation", ":class: dropdown", "",
    "Because of the sign.", "```", ""])
QUESTIONS = [grading.part_grade_id("prob-gamma", p.part) for p in PARTS["prob-gamma"]] + ["prob-anticorrelation-answer"]
STUDENTS = ("ada", "bo", "cy")


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A course of three graded students of a chapter with a derivation in four parts and an interpretation;
    a fourth collected but not graded."""
    root = tmp_path_factory.mktemp("marks")
    (root / "book").mkdir()
    (root / "book" / "written.md").write_text(CHAPTER)
    course, uploads = root / "course", root / "uploads"
    released = nbformat.read(grading.release(root / "book" / "written.md", course), as_version=4)
    uploads.mkdir()
    for student in STUDENTS:
        nb = nbformat.from_dict(json.loads(nbformat.writes(released)))
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("solution"):
                cell.source = f"{student}'s answer."
        nbformat.write(nb, uploads / f"{student}.ipynb")
    grading.collect(course, "written", uploads)
    grading.grade(course, "written")
    nbformat.write(released, uploads / "late.ipynb")
    grading.collect(course, "written", uploads)
    return root, course


def rows_of(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_rows(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=grading.MARKS_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_the_template_lists_every_hand_marked_answer_of_every_graded_student(written, tmp_path):
    _, course = written
    path, count, waiting = grading.marks_template(course, "written", tmp_path / "marks.csv")
    rows = rows_of(path)
    assert count == len(rows) == len(STUDENTS) * len(QUESTIONS) and waiting == ["late"]
    assert [(r["student"], r["question"]) for r in rows] == [(s, q) for s in STUDENTS for q in QUESTIONS]
    part2 = next(r for r in rows if r["question"] == QUESTIONS[1])
    assert part2["max_points"] == f"{PARTS['prob-gamma'][1].points:g}" and part2["rubric"] == PARTS["prob-gamma"][1].earns
    assert all(r["points"] == "" and r["comment"] == "" for r in rows)
    with pytest.raises(FileExistsError, match="exists"):
        grading.marks_template(course, "written", path)


@pytest.mark.parametrize("change, error", [
    ({"student": "nobody"}, "line 3: nobody, prob-gamma-part1-answer: 'nobody' has no graded submission"),
    ({"student": "late"}, "line 3: late, prob-gamma-part1-answer: 'late' has no graded submission"),
    ({"question": "prob-nothing-answer"}, "line 3: ada, prob-nothing-answer: 'prob-nothing-answer' is not a question"),
    ({"question": "prob-gamma-answer"}, "line 3: ada, prob-gamma-answer: prob-gamma-answer is marked part by part"),
    ({"points": "4"}, "line 3: ada, prob-gamma-part1-answer: points must be between 0 and 3"),
    ({"points": "-1"}, "line 3: ada, prob-gamma-part1-answer: points must be between 0 and 3"),
    ({"points": "two"}, "line 3: ada, prob-gamma-part1-answer: points 'two' is not a number"),
    ({"points": "nan"}, "line 3: ada, prob-gamma-part1-answer: points 'nan' is not a finite number"),
    ({"points": "", "comment": "fine"}, "line 3: ada, prob-gamma-part1-answer: a comment without points"),
    ({"question": "prob-gamma-part2-answer"}, "line 3: ada, prob-gamma-part2-answer is given twice (line 2 too)"),
])
def test_a_wrong_row_imports_nothing_and_is_named(written, tmp_path, change, error):
    _, course = written
    before = (course / "grades-written.csv").read_text()
    marks = course / "marks" / "written.json"
    kept = marks.read_text() if marks.is_file() else None
    rows = [{"student": "ada", "question": QUESTIONS[1], "points": "1", "comment": "good"},
            {"student": "ada", "question": QUESTIONS[0], "points": "1", "comment": ""},
            {"student": "bo", "question": QUESTIONS[4], "points": "5", "comment": ""}]
    rows[1] = {**rows[1], **change}
    with pytest.raises(ValueError, match="nothing imported, 1 wrong row") as refused:
        grading.import_marks(course, "written", write_rows(tmp_path / "marks.csv", rows))
    assert error in str(refused.value)
    assert (course / "grades-written.csv").read_text() == before
    assert (marks.read_text() if marks.is_file() else None) == kept


@pytest.mark.parametrize("text, error", [
    (b"student,question\nada,prob-gamma-part1-answer\n", "line 1: the header ['student', 'question'] lacks ['points']"),
    (b"student,question,points\nada,prob-gamma-part1-answer,1,extra\n", "line 2: 4 fields, the header has 3"),
    (b"student,question,points\nada,prob-gamma-part1-answer,\xff\n", "is not UTF-8 text"),
    (b"student,question,points\nada,\"prob-gamma-part1-answer,1\n", "not a CSV file"),
    (b"", "lacks ['student', 'question', 'points']"),
])
def test_a_malformed_file_imports_nothing(written, tmp_path, text, error):
    _, course = written
    path = tmp_path / "marks.csv"
    path.write_bytes(text)
    with pytest.raises(ValueError, match="nothing imported") as refused:
        grading.import_marks(course, "written", path)
    assert error in str(refused.value)


def test_the_filled_template_is_imported_in_one_command(written, tmp_path, capsys):
    """The template filled in (one answer left for later) and imported from the command line: the grades CSV,
    the pending count and each student's feedback show the marks and comments; the template written again
    carries them, and importing it again changes nothing."""
    _, course = written
    template = tmp_path / "marks.csv"
    assert main(["course", "mark", "written", "--course", str(course), "--template", str(template)]) == 0
    assert "not graded yet, left out: late" in capsys.readouterr().out
    rows = rows_of(template)
    for r in rows[:-1]:
        r["points"], r["comment"] = r["max_points"], f"{r['student']}: complete"
    rows[0]["points"] = "1.5"
    write_rows(template, rows)
    assert main(["course", "mark", "written", "--course", str(course), "--import", str(template)]) == 0
    out = capsys.readouterr().out
    assert f"imported {len(rows) - 1} marks of 3 students" in out and "pending: 1 written answers" in out
    grades = grading.read_grades(course / "grades-written.csv")
    assert grades["ada"][QUESTIONS[0]] == (1.5, PARTS["prob-gamma"][0].points)
    assert grades["bo"]["total"] == (15, 15) and grades["cy"][QUESTIONS[-1]] == (None, 5)
    page = (course / "feedback" / "ada" / "written" / "written.html").read_text()
    assert "ada: complete" in page and "1.5 / 3" in page
    again = grading.marks_template(course, "written", tmp_path / "again.csv")[0]
    assert [(r["points"], r["comment"]) for r in rows_of(again)] == [(r["points"], r["comment"]) for r in rows]
    grading.import_marks(course, "written", again)
    assert grading.read_grades(course / "grades-written.csv") == grades
