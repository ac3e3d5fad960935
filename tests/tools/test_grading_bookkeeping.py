"""A small course (issue 48): a submission that claims a missing data file or is not a notebook stops no one;
a second upload is kept and the latest graded; one student is graded while another waits; the course folder is
the instructor's alone; the released notebook installs the version it was released with."""

from __future__ import annotations

import stat
from pathlib import Path

import nbformat
import pytest

import paththeory
from paththeory_tools import grading
from paththeory_tools.student import BEGIN, END

pytest.importorskip("nbgrader")

CHAPTER = "\n".join([
    "---", "jupytext:", "  text_representation:", "    format_name: myst", "kernelspec:",
    "  display_name: Python 3", "  language: python", "  name: python3", "---", "", "# A small assignment", "",
    "```{code-cell} ipython3",
    'package = "paththeory @ git+https://github.com/paththeory/paththeory@main"',
    "from paththeory.exercises import check",
    "```", "",
    "```{code-cell} ipython3",
    BEGIN, "answer = 24", END, 'check("model.n_paths", answer)', "```", "",
    "```{code-cell} ipython3",
    'print("the end")',
    "```", ""])

#: Makes the book's last cell raise an error named like the grader's missing-file error: the grader's own run
#: of the released notebook finds no file missing, so the class is graded.
CLAIMS_A_MISSING_FILE = """import builtins

class DataNotFoundError(Exception):
    pass

def _claim(*args, **kwargs):
    raise DataNotFoundError("images_missing.zip is not in the data folder")

builtins.print = _claim
answer = 24
"""


def answered(released, source: str):
    nb = nbformat.from_dict(nbformat.reads(nbformat.writes(released), as_version=4))
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = source
    return nb


@pytest.fixture(scope="module")
def small_course(tmp_path_factory):
    root = tmp_path_factory.mktemp("small")
    (root / "book").mkdir()
    (root / "book" / "small.md").write_text(CHAPTER)
    course, uploads = root / "course", root / "uploads"
    released = nbformat.read(grading.release(root / "book" / "small.md", course), as_version=4)
    uploads.mkdir()
    nbformat.write(answered(released, "answer = 12"), uploads / "ada.ipynb")
    nbformat.write(answered(released, CLAIMS_A_MISSING_FILE), uploads / "sly.ipynb")
    (uploads / "junk.ipynb").write_text("this is not a notebook")
    grading.collect(course, "small", uploads)
    nbformat.write(answered(released, "answer = 24"), uploads / "ada.ipynb")  # ada's second upload
    nbformat.write(answered(released, "answer = 24"), uploads / "cy.ipynb")
    grading.collect(course, "small", uploads)
    first = grading.read_grades(grading.grade(course, "small", student="ada"))  # sly, junk, cy wait
    everyone = grading.read_grades(grading.grade(course, "small"))
    return root, course, released, first, everyone


def test_one_student_is_graded_while_the_others_wait(small_course):
    _, _, _, first, _ = small_course
    assert first["ada"]["total"] == (3, 3)
    assert first["sly"] == {"total": (None, None)} and first["cy"] == {"total": (None, None)}


def test_no_submission_stops_the_class(small_course):
    """A claim of a missing file from inside the sandbox is never believed; a file that is not a notebook gets
    nothing, with the reason, and the CSV holds every student."""
    _, course, _, _, grades = small_course
    assert set(grades) == {"ada", "cy", "junk", "sly"}
    assert grades["sly"]["total"] == (3, 3) and grades["cy"]["total"] == (3, 3)
    assert grades["junk"]["total"] == (0, 3)
    flags = grading.read_flags(course / "grades-small.csv")
    assert "not graded: ValueError: the submission is not a notebook" in flags["junk"]["total"]
    page = (course / "feedback" / "junk" / "small" / "small.html").read_text()
    assert "not graded" in page


def test_a_second_upload_is_kept_and_the_latest_graded(small_course):
    _, course, _, _, grades = small_course
    assert grades["ada"]["total"] == (3, 3), "the latest upload is graded"
    earlier = grading.earlier_uploads(course, "small", "ada")
    assert len(earlier) == 1 and "answer = 12" in earlier[0].read_text()
    assert "the latest upload was graded" in (course / "feedback" / "ada" / "small" / "small.html").read_text()
    assert "graded the latest of 2 uploads" in grading.read_flags(course / "grades-small.csv")["ada"]["total"]
    assert grading.earlier_uploads(course, "small", "cy") == []


def test_the_course_folder_is_the_instructors_alone(small_course):
    _, course, _, _, _ = small_course
    for path in [course, *course.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path.relative_to(course)} is mode {oct(mode)}"


def test_the_released_notebook_installs_the_released_version(small_course):
    _, course, released, _, _ = small_course
    text = "\n".join(c.source for c in released.cells)
    assert f"paththeory@v{paththeory.__version__}" in text and "paththeory@main" not in text
    assert f"@v{paththeory.__version__}" in (course / "source" / "small" / "small.ipynb").read_text()


def test_a_file_the_grader_reads_is_checked_before_it_is_loaded(tmp_path):
    """A zip bomb (a small ``.npz`` that unpacks to 200 MiB), text arrays and a huge log read as nothing, without
    the grader loading them."""
    import resource
    import zipfile

    import numpy as np

    bomb = tmp_path / "outputs.npz"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z, z.open("case0_p0.npy", "w", force_zip64=True) as f:
        head = np.lib.format.header_data_from_array_1_0(np.zeros(1))
        head["shape"] = (200 * 2**20 // 8,)
        np.lib.format.write_array_header_1_0(f, head)
        for _ in range(200):
            f.write(bytes(2**20))
    assert bomb.stat().st_size < 2**20
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert grading._read_npz(bomb) == {}
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 2**10, "the bomb was unpacked"
    text = tmp_path / "text.npz"
    np.savez(text, case0_p0=np.array(["a"]), case0_n=np.array(2), case0_error=np.array([1.0]))
    assert set(grading._read_npz(text)) == {"case0_n", "case0_error"}
    assert grading._read_npz(text)["case0_error"] == "an error (not text)"
    log = tmp_path / "log.json"
    log.write_text('[{"cell": "x", "error": 5, "printed": [1]}, 3, "text"]')
    assert grading._read_log(log) == [{"cell": None, "error": "5", "printed": "[1]"}]
    log.write_text("[" + "0, " * 5_000_000 + "0]")
    assert grading._read_log(log) == [{"cell": None, "error": "the run's log is unreadable", "printed": ""}]


def test_the_published_limits_are_documented():
    """book/instructor.md states the function time limit the grader uses."""
    page = (Path(__file__).resolve().parents[2] / "book" / "instructor.md").read_text()
    assert f"{grading.DEFAULT_LIMITS['function_timeout']:g} s" in page and "--function-timeout" in page
