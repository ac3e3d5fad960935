"""Grading with nbgrader (paththeory_tools.grading): a released notebook hides solutions and keys; four
sample submissions of the model chapter (all correct, blank, one wrong, spoofed) get exactly the
points they should; a graded run that lacks a data file fails, naming the file; the honesty scan
catches the ways around the checks without flagging honest code."""

from __future__ import annotations

import ast
import copy
import csv
import json
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from paththeory.exercises import graded_cells as honesty
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
        if gid in cells and isinstance(cells[gid], dict):  # a source with tags of the student's own
            cell.source = cells[gid]["source"]
            cell.metadata["tags"] = cells[gid]["tags"]
        elif gid in cells:
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
        assert next(csv.reader(f)) == ["student", "question", "kind", "score", "max_score", "flags"]
    assert all(any(q.startswith("model-" + name) for q in grades["correct"]) for name in questions)


def test_feedback_says_why_a_spoofed_answer_earns_nothing(graded_model):
    course = graded_model[0]
    feedback = (course / "feedback" / "spoofed" / "model" / "model.html").read_text()
    assert "model.n_paths: the expected answer is not available in a graded run" in feedback  # solution()
    assert "model.path_expansion earns no points: the answer asked check() to reveal the answer" in feedback
    # a redefined check and doctored test cells change nothing: the grader scores the answer itself (0)
    assert "model-gp-kernel-hidden</td><td>0 / 2" in feedback


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


def test_a_release_that_would_leak_is_refused_and_removed(tmp_path, monkeypatch):
    """The release's leak check, fed a fragment that the released notebook shows (its title, standing in
    for a solution the stripping missed), refuses the release and leaves no notebook to hand out."""
    book = tmp_path / "book"
    book.mkdir()
    (book / "tiny.md").write_text("\n".join([
        "---", "jupytext:", "  text_representation:", "    format_name: myst", "kernelspec:",
        "  display_name: Python 3", "  language: python", "  name: python3", "---", "", "# A tiny chapter", "",
        "```{code-cell} ipython3", "from paththeory.exercises import check",
        BEGIN, "answer = 24", END, 'check("model.n_paths", answer)', "```", ""]))
    course = tmp_path / "course"
    monkeypatch.setattr(grading, "_frozen_leak_material",
                        lambda *a: {"fragments": {"tiny": ["A tiny chapter"]}, "values": {}})
    with pytest.raises(answers.GradingError, match="shows a solution; nothing is handed out"):
        grading.release(book / "tiny.md", course)
    assert not (course / "release" / "tiny" / "tiny.ipynb").exists()


#: Honest code with unlucky names (issue 48): a variable ``check``, a helper ``solution``, ``setattr`` and
#: ``globals()`` on the student's own objects. None earns less than the same code with other names.
HONEST_VARIANTS = [
    "import numpy as np\nU = np.eye(2)\ncheck = np.allclose(U, U.T)\nanswer = 24 if check else 0",
    "def solution(n):\n    return 2 * n\n\nanswer = solution(12)",
    "class Box:\n    pass\n\nbox = Box()\nsetattr(box, 'n', 24)\nanswer = box.n",
    "globals()['answer'] = 24",
    "def check(x):\n    return x > 0\n\nanswer = 24 if check(3) and check(4) else 0",
]


@pytest.mark.parametrize("cell,what", [
    ("answer = solution('model.n_paths')", "called solution()"),
    ("check('model.n_paths', 0, reveal=True)", "reveal"),
    ("from paththeory.exercises import solution as check\nanswer = check('model.n_paths')", "called solution()"),
    ("import paththeory.exercises as ex\nanswer = ex.solution('model.n_paths')", "called solution()"),
    ("setattr(pt.exercises, 'check', print)", "changed"),
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
    *HONEST_VARIANTS,
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


#: What a submission sees from inside the sandbox (printed; the grader keeps the first lines).
PROBE = """import os, socket
print("uid", os.getuid(), "cwd", os.getcwd(), "cwd holds", sorted(os.listdir(".")))
print("root holds", sorted(os.listdir("/")))
print("tmp holds", sorted(os.listdir("/tmp")))
print("processes", sorted(p for p in os.listdir("/proc") if p.isdigit()))
print("course folder", COURSE, "exists", os.path.exists(COURSE), "holds", os.listdir(COURSE) if os.path.isdir(COURSE) else None)
try:
    os.listdir("..")
    print("parent of cwd: listed", sorted(os.listdir("..")))
except OSError as err:
    print("parent of cwd:", type(err).__name__)
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3)
    print("network: connected")
except OSError as err:
    print("network:", type(err).__name__, err)
"""

#: Open the gradebook and give every written answer full marks (the issue's first cheat).
TAMPER = """import sqlite3
for path in (COURSE + "/gradebook.db", "../../../gradebook.db", "gradebook.db"):
    try:
        db = sqlite3.connect("file:" + path + "?mode=rw", uri=True)
        db.execute("UPDATE grade SET manual_score = 15")
        db.commit()
        print("tampered with", path)
    except Exception as err:
        print("gradebook", path, type(err).__name__, err)
"""

ZERO_PREDICTOR = """
def path_predictor(U, xi_train, y, xi_test, temperature):
    return np.zeros(len(xi_test)), np.zeros(len(xi_test))
"""

#: The issue's cheats and two more, as ``{student: {grade id: cell source or f(worked solution)}}``.
CHEATS = {
    "tamper": {"problems-predictor-answer": lambda worked: PROBE + TAMPER + worked},
    "allclose": {"problems-predictor-answer": "import numpy as np\nnp.allclose = lambda *a, **k: True\n"
                                              "np.isclose = lambda *a, **k: True\n" + ZERO_PREDICTOR},
    "frame": {"problems-predictor-answer": """import sys
import numpy as np

def path_predictor(U, xi_train, y, xi_test, temperature):
    for depth in range(1, 8):
        try:
            frame = sys._getframe(depth)
        except ValueError:
            break
        for name in ("want", "expected", "key"):
            if name in frame.f_locals:
                value = frame.f_locals[name]
                return tuple(value) if isinstance(value, (tuple, list)) else value
    return np.zeros(len(xi_test)), np.zeros(len(xi_test))
"""},
    "reference": {"problems-predictor-answer": """import paththeory as pt

def path_predictor(U, xi_train, y, xi_test, temperature):
    return pt.predictor(U, xi_train, y, xi_test, temperature)
"""},
    "replaced": {"problems-predictor-answer": "import paththeory.exercises.graded_cells\nimport paththeory.exercises\n"
                                              "paththeory.exercises.graded_cells.graded_function = lambda *a, **k: 9\n"
                                              "paththeory.exercises.graded_function = lambda *a, **k: 9\n"
                                              + ZERO_PREDICTOR},
    "display_off": {"problems-overlap-distance-answer": "get_ipython().display_formatter.active = False\n"
                                                        + PARTIAL_OVERLAP},
    # two of our own: a memory hog (killed, loudly) and an output whose == is always True
    "memory_hog": {"problems-predictor-answer": "hog = bytearray(64 * 2**30)\n" + ZERO_PREDICTOR},
    "always_equal": {"problems-overlap-distance-answer": """class Anything(float):
    def __eq__(self, other):
        return True
    def __float__(self):
        return float("nan")
    def __array__(self, dtype=None, copy=None):
        import numpy as np
        return np.array(np.nan)

def overlap_distance(U_theory, w_draws):
    return Anything()
"""},
    "variance_off": {"problems-predictor-answer": lambda worked: worked.replace(
        "return v.T @ white, k_diag - np.sum(v * v, axis=0)",
        "return v.T @ white, k_diag - np.sum(v * v, axis=0) + temperature")},
    "partial": {"problems-overlap-distance-answer": PARTIAL_OVERLAP},
}

# --------------------------------------------------------------------------- issue 48: a class of submission kinds

#: A run-stopper of the last round: its own exception class named like the grader's missing-file error, raised
#: in its cell, and at exit a log of the wrong kind and an outputs file of text (numbers are what the grader reads).
RUN_STOPPER = """import atexit, json, os
import numpy as np

class DataNotFoundError(Exception):
    pass

def _spoil():
    if os.path.exists("plan.json"):
        with open("log.json", "w") as f:
            f.write(json.dumps([{"cell": "x", "error": 5, "printed": [1]}, 3, "text", None]))
        for name in os.listdir("."):
            if name.startswith("outputs"):
                np.savez(name, case0_n=np.array("two"), case0_p0=np.array(["a", "b"]), module_error=np.array([1, 2]))

atexit.register(_spoil)
"""
RUN_STOPPER_RAISE = "\nraise DataNotFoundError('images_missing.zip is not in the data folder')\n"

#: The package's own predictor by each route of the last round: an attribute of the setup's module, an import in a
#: cell tagged demo, an import in another question's cell, ``import_module`` of the keys.
BY_GETATTR = """def path_predictor(U, xi_train, y, xi_test, temperature):
    return getattr(pt, "predictor")(U, xi_train, y, xi_test, temperature)
"""
BY_DEMO_CELL = {"tags": ["demo"], "source": """from paththeory.predict import predictor

def path_predictor(U, xi_train, y, xi_test, temperature):
    return predictor(U, xi_train, y, xi_test, temperature)
"""}
BY_IMPORT_MODULE = """import importlib

def path_predictor(U, xi_train, y, xi_test, temperature):
    spec = importlib.import_module("paththeory.exercises.problems").IMPLEMENT["problems.predictor"]
    return spec.reference(U, xi_train, y, xi_test, temperature)
"""

#: Packs the cases it is given into its error: the hidden inputs must never reach the feedback.
EXFILTRATOR = """import glob, json
import numpy as np

def path_predictor(U, xi_train, y, xi_test, temperature):
    packed = {}
    for name in glob.glob("cases_*.npz") + glob.glob("*/cases_*.npz"):
        with np.load(name) as data:
            packed[name] = {k: np.ravel(data[k])[:50].tolist() for k in data.files}
    raise ValueError("LEAK " + json.dumps(packed) + " " + repr(np.ravel(xi_test)[:50].tolist()))
"""

#: Looks for a classmate's notebook to run their function, where the course keeps them and beside every folder the
#: mount table names; returns zeros when it finds none.
CLASSMATE_READER = """import glob, json, os, tempfile
import numpy as np

def path_predictor(U, xi_train, y, xi_test, temperature):
    mounts = [os.path.dirname(line.split()[4]) for line in open("/proc/self/mountinfo")]
    for pattern in (COURSE + "/uploads/*.ipynb", COURSE + "/submitted/*/problems/*.ipynb", tempfile.gettempdir() + "/*/*.ipynb",
                    *(m + suffix for m in mounts for suffix in ("/*/*.ipynb", "/*/*/*.ipynb", "/*/*/*/*/*.ipynb"))):
        for name in sorted(glob.glob(pattern)):
            cells = json.load(open(name))["cells"]
            code = [("".join(c["source"])) for c in cells if "def path_predictor" in "".join(c["source"])]
            if code:
                space = {"np": np}
                exec(code[-1], space)
                return space["path_predictor"](U, xi_train, y, xi_test, temperature)
    return np.zeros(len(xi_test)), np.zeros(len(xi_test))
"""

#: An outputs file that unpacks to 200 MiB (a zip bomb: 200 KB on disk), written at exit.
ZIP_BOMB = """import atexit, os, zipfile
import numpy as np

def _bomb():
    for name in [n for n in os.listdir(".") if n.startswith("outputs")] or ["outputs_0.npz"]:
        with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as z, z.open("case0_p0.npy", "w", force_zip64=True) as f:
            n = 200 * 2**20 // 8
            head = np.lib.format.header_data_from_array_1_0(np.zeros(1))
            head["shape"] = (n,)
            np.lib.format.write_array_header_1_0(f, head)
            for _ in range(200):
                f.write(bytes(2**20))

atexit.register(_bomb)
"""

#: A gigabyte to stdout from the answer cell (the grader reads the end of a capped file).
FLOOD = """import os
for _ in range(1024):
    os.write(1, b"flood " * 174763)
"""

#: Forks until it cannot (each child sleeps), then sleeps: killed by the limits on processes and memory.
FORK_BOMB = """import os, time
import numpy as np

def path_predictor(U, xi_train, y, xi_test, temperature):
    for _ in range(100000):
        try:
            if os.fork() == 0:
                time.sleep(600)
                os._exit(0)
        except OSError:
            break
    time.sleep(600)
"""

HANG = """def path_predictor(U, xi_train, y, xi_test, temperature):
    while True:
        pass
"""

#: Correct code with the names the last round's scan refused: ``check``, ``solution``, ``setattr``, ``globals()[...]``.
UNLUCKY_NAMES = """import numpy as np

class Settings:
    pass

settings = Settings()
setattr(settings, "jitter", 0.0)
globals()["EXTRA"] = 0.0


def solution(chol, rhs):
    return np.linalg.solve(chol, rhs)


def path_predictor(U, xi_train, y, xi_test, temperature):
    U = np.asarray(U, dtype=float)
    check = np.allclose(U, U.T)
    if not check:
        U = (U + U.T) / 2
    xi_train, xi_test = np.asarray(xi_train, dtype=float), np.asarray(xi_test, dtype=float)
    K = np.einsum("man,ab,qbn->mq", xi_train, U, xi_train)
    k_star = np.einsum("man,ab,qbn->mq", xi_train, U, xi_test)
    k_diag = np.einsum("qan,ab,qbn->q", xi_test, U, xi_test)
    chol = np.linalg.cholesky(K + (temperature + settings.jitter + EXTRA) * np.eye(K.shape[0]))
    v = solution(chol, k_star)
    white = solution(chol, np.asarray(y, dtype=float))
    return v.T @ white, k_diag - np.sum(v * v, axis=0)
"""

#: The class of issue 48: ``{student: (cells, what is expected of the predictor's points)}``; every other
#: question of each gets the worked solution, so every other automatic point must be earned.
CLASS = {
    "run_stopper": ({"problems-predictor-answer": lambda worked: RUN_STOPPER + worked + RUN_STOPPER_RAISE},
                    "none (outputs rewritten as text)"),
    "by_getattr": ({"problems-predictor-answer": BY_GETATTR}, "none"),
    "by_demo_cell": ({"problems-predictor-answer": BY_DEMO_CELL}, "none"),
    "by_other_group": ({"problems-action-answer": lambda worked: "from paththeory.predict import predictor as _pred\n"
                        + worked, "problems-predictor-answer": "def path_predictor(U, xi_train, y, xi_test, "
                        "temperature):\n    return _pred(U, xi_train, y, xi_test, temperature)\n"}, "none"),
    "by_import_module": ({"problems-predictor-answer": BY_IMPORT_MODULE}, "none"),
    "exfiltrator": ({"problems-predictor-answer": EXFILTRATOR}, "none, and no hidden input in the feedback"),
    "classmate_reader": ({"problems-predictor-answer": CLASSMATE_READER}, "none (no classmate in sight)"),
    "zip_bomb": ({"problems-predictor-answer": lambda worked: ZIP_BOMB + worked}, "none (outputs refused unread)"),
    "flood": ({"problems-predictor-answer": lambda worked: FLOOD + worked}, "full"),
    "fork_bomb": ({"problems-predictor-answer": FORK_BOMB}, "none (killed)"),
    "hang": ({"problems-predictor-answer": HANG}, "none (its own time limit)"),
    "unlucky_names": ({"problems-predictor-answer": UNLUCKY_NAMES}, "full"),
}
#: The time limit of each graded function's run in the class test (the hang costs this twice at most).
FUNCTION_TIMEOUT = 30.0


@pytest.fixture(scope="module")
def graded_problems(tmp_path_factory):
    course = tmp_path_factory.mktemp("problems")

    def with_course(cell):
        if callable(cell):
            return lambda worked: cell(worked).replace("COURSE", repr(str(course)))
        if isinstance(cell, dict):
            return {**cell, "source": cell["source"].replace("COURSE", repr(str(course)))}
        return cell.replace("COURSE", repr(str(course)))

    everyone = {**CHEATS, **{student: cells for student, (cells, _) in CLASS.items()}}
    released, _, _ = submit(course, "problems", {student: {gid: with_course(cell) for gid, cell in cells.items()}
                                                 for student, cells in everyone.items()})
    import time

    start = time.monotonic()
    csv_path = grading.grade(course, "problems", function_timeout=FUNCTION_TIMEOUT)
    seconds = time.monotonic() - start
    grades = grading.read_grades(csv_path)
    print(f"\ngraded {len(everyone) + 2} submissions of the problem set in {seconds:.1f} s")
    flags = grading.read_flags(csv_path)
    print(f"{'student':18} {'automatic':>9}  predictor  expected of the predictor; reason recorded")
    for student, (_, expected) in {**CLASS, "correct": ({}, "full")}.items():
        auto = sum(v[0] for q, v in grades[student].items() if q.endswith(("-public", "-hidden")))
        predictor = sum(grades[student][f"problems-predictor-{w}"][0] for w in ("public", "hidden"))
        reason = flags.get(student, {}).get("problems-predictor-hidden", "")[:90]
        print(f"{student:18} {auto:9g}  {predictor:9g}  {expected}; {reason}")
    return released, grades, course


def test_the_problem_set_has_manual_and_automatic_questions(graded_problems):
    from paththeory.exercises import problems

    released, grades, _ = graded_problems
    manual = [c for c in released.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "markdown"]
    assert len(manual) == sum(len(problems.PARTS.get(label, [0])) for label, kind in problems.KINDS.items()
                              if kind != "implement"), "one cell per interpretation, one per part of a derivation"
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
    with pytest.raises(ValueError, match="scored automatically: overriding it needs a reason"):
        grading.mark(course, "problems", "correct", "problems-action-hidden", 1)
    with pytest.raises(ValueError, match="not a question of problems"):
        grading.mark(course, "problems", "correct", "prob-nothing-answer", 1)
    with pytest.raises(ValueError, match="no graded submission of problems by 'nobody'"):
        grading.mark(course, "problems", "nobody", question, 1)
    assert main(["course", "mark", "problems", "--course", str(course), "--student", "blank",
                 "--question", question, "--points", "0"]) == 0
    assert grading.read_grades(path)["blank"][question] == (0, top)


# --------------------------------------------------------------------------- issue 36: cheats, sandbox, keys


def flags_of(course: Path) -> dict:
    return grading.read_flags(course / "grades-problems.csv")


def test_each_cheat_earns_nothing_for_its_question_and_is_flagged(graded_problems):
    _, grades, course = graded_problems
    flags = flags_of(course)
    for student in ("allclose", "frame", "reference", "replaced", "memory_hog"):
        for part in ("public", "hidden"):
            assert grades[student][f"problems-predictor-{part}"][0] == 0, f"{student} earned predictor points"
        assert flags[student].get("problems-predictor-hidden" if student != "memory_hog" else "total"), \
            f"{student} is not flagged"
    assert "numpy.allclose" in flags["allclose"]["problems-predictor-hidden"]
    assert "stack frame" in flags["frame"]["problems-predictor-hidden"]
    assert "paththeory.predictor" in flags["reference"]["problems-predictor-hidden"]
    assert "checking code" in flags["replaced"]["problems-predictor-hidden"]
    assert "memory" in (flags["memory_hog"].get("problems-predictor-hidden", "") + flags["memory_hog"]["total"]).lower()
    assert grades["always_equal"]["problems-overlap-distance-hidden"][0] == 0
    assert grades["always_equal"]["problems-overlap-distance-public"][0] == 0
    # turning the display off changes nothing: the same points as the same function without it, flagged
    assert grades["display_off"]["problems-overlap-distance-hidden"] == grades["partial"]["problems-overlap-distance-hidden"]
    assert grades["display_off"]["problems-overlap-distance-public"][0] == 0
    assert "display" in flags["display_off"]["problems-overlap-distance-hidden"]
    assert not flags.get("correct"), "an honest submission is not flagged"


def result_of(course: Path, student: str) -> dict:
    return json.loads((course / "graded" / student / "problems.json").read_text())


def test_the_class_gets_what_each_kind_deserves(graded_problems):
    """Issue 48's class in one grade run: every student is graded (none stops the run); each kind earns exactly
    what it should for the predictor, with a reason recorded, and every other automatic point of its notebook
    (the worked solutions) is earned, a hang and a fork bomb included."""
    _, grades, course = graded_problems
    full = {q: v for q, v in grades["correct"].items() if q.endswith(("-public", "-hidden"))}
    for student, (_, expected) in CLASS.items():
        others = {q: grades[student][q] for q in full if "predictor" not in q}
        assert others == {q: v for q, v in full.items() if "predictor" not in q}, f"{student} lost other points"
        predictor = [grades[student][f"problems-predictor-{w}"][0] for w in ("public", "hidden")]
        if expected == "full":
            assert predictor == [full[f"problems-predictor-{w}"][0] for w in ("public", "hidden")], student
        else:
            assert predictor == [0, 0], f"{student} earned {predictor} for the predictor"
            notes = result_of(course, student)["scores"]["problems-predictor-hidden"]["notes"]
            assert notes, f"{student}: no reason recorded"
    flags = flags_of(course)
    assert "time limit" in flags["hang"]["problems-predictor-hidden"]
    assert "killed" in flags["fork_bomb"]["problems-predictor-hidden"]
    assert not flags.get("unlucky_names"), "honest code with unlucky names is flagged"
    assert not any("earns no points" in n for s in result_of(course, "unlucky_names")["scores"].values()
                   for n in s["notes"])
    log = result_of(course, "run_stopper")["log"]  # its own log, rewritten at exit: read as plain entries only
    assert all(set(e) == {"cell", "error", "printed"} and (e["cell"] is None or isinstance(e["cell"], int))
               for e in log)


def test_no_hidden_input_and_no_long_text_reaches_the_feedback(graded_problems):
    """The exfiltrator packs every case it sees into its error: the feedback shows a short excerpt of the
    public run's error and only counts of the hidden run, so no hidden input leaves the grader."""
    _, _, course = graded_problems
    page = (course / "feedback" / "exfiltrator" / "problems" / "problems.html").read_text()
    assert "LEAK" in page and len(page) < 30_000, f"a feedback page of {len(page)} characters"
    with np.load(course / "keys" / "problems.npz") as keys:
        hidden = [float(v) for k in keys.files if "/hidden/" in k and "_arg" in k for v in np.ravel(keys[k])[:20]]
    distinct = [v for v in hidden if len(re.sub(r"\D", "", f"{v:.6g}".split("e")[0]).lstrip("0")) >= 4]
    assert distinct, "the hidden inputs have values that cannot occur by chance"
    shown = [v for v in distinct if repr(v) in page or f"{v:.6g}" in page]
    assert not shown, f"hidden inputs in the feedback: {shown[:3]}"
    import html

    longest = max((len(html.unescape(m)) for m in re.findall(r"LEAK[^<]*", page)), default=0)
    assert longest <= grading.EXCERPT


def test_the_gradebook_tampering_changes_nothing(graded_problems):
    _, grades, course = graded_problems
    written = [q for q in grades["tamper"] if q.startswith("prob-")]
    assert written and all(grades["tamper"][q][0] is None for q in written), "written answers wait for a person"
    from nbgrader.api import Gradebook
    from paththeory_tools import sandbox

    if sandbox.detect().kind != "plain":  # without namespaces the CSV still ignores the forged scores
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
            sub = gb.find_submission("problems", "tamper")
            assert all(g.manual_score is None for nb in sub.notebooks for g in nb.grades)
    printed = "\n".join(e["printed"] for e in json.loads((course / "graded" / "tamper" / "problems.json").read_text())["log"])
    assert ("tampered" not in printed or sandbox.detect().kind == "plain") and "course folder" in printed
    assert "refers to the gradebook" in flags_of(course)["tamper"]["problems-predictor-hidden"]
    assert grades["tamper"]["problems-predictor-hidden"] == grades["correct"]["problems-predictor-hidden"]


def test_what_a_submission_sees_in_the_sandbox(graded_problems):
    from paththeory_tools import sandbox

    _, _, course = graded_problems
    printed = "\n".join(e["printed"] for e in json.loads((course / "graded" / "tamper" / "problems.json").read_text())["log"])
    print(printed)
    if sandbox.detect().kind == "plain":
        pytest.skip("no namespaces on this machine: the plain subprocess hides nothing (the report says so)")
    seen = re.search(r"course folder \S+ exists (\w+) holds (.*)", printed)
    assert seen and seen.groups() in (("False", "None"), ("True", "[]")), "the course folder is out of sight"
    assert re.search(r"parent of cwd: (PermissionError|FileNotFoundError|listed \['work'\])", printed), printed
    assert "network: OSError" in printed or "network: ConnectionRefusedError" in printed or "Network is unreachable" in printed
    # A minimal root: a fresh /tmp holding the way to the scratch folder (and to a bound environment under /tmp, as a
    # CI clone's), and of the host only what the sandbox binds.
    bound, cwd = sandbox.bound_paths(), Path(re.search(r" cwd (\S+) cwd holds", printed).group(1))
    ways = {p.relative_to("/tmp").parts[0] for p in [*bound, cwd] if Path("/tmp") in p.parents}
    listed = ast.literal_eval(re.search(r"tmp holds (\[.*?\])", printed).group(1))
    assert set(listed) <= {".ipython", *ways}, "a fresh /tmp"
    root = ast.literal_eval(re.search(r"root holds (\[.*?\])", printed).group(1))
    assert set(root) <= {"proc", "dev", "tmp", "etc", *(p.parts[1] for p in bound)}, root
    assert re.search(r"processes \['1', '\d+'\]|processes \['1'\]", printed), "the grader's processes are hidden"


def test_a_predictor_with_the_right_mean_gets_the_means_points(graded_problems):
    _, grades, _ = graded_problems
    public, public_top = grades["variance_off"]["problems-predictor-public"]
    hidden, hidden_top = grades["variance_off"]["problems-predictor-hidden"]
    assert (public, hidden) == (public_top / 2, hidden_top / 2)


def test_an_automatic_score_overridden_keeps_its_reason_and_a_forged_one_is_ignored(graded_problems):
    _, grades, course = graded_problems
    path = grading.mark(course, "problems", "reference", "problems-predictor-hidden", 9,
                        "pt.predictor was allowed in this course's version of the task")
    after = grading.read_grades(path)
    assert after["reference"]["problems-predictor-hidden"] == (9, 9)
    marks = json.loads((course / "marks" / "problems.json").read_text())
    assert marks["reference"]["problems-predictor-hidden"]["reason"].startswith("pt.predictor was allowed")
    html = (course / "feedback" / "reference" / "problems" / "problems.html").read_text()
    assert "pt.predictor was allowed" in html
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:  # a score set behind course mark's back
        gb.find_grade("prob-gamma-part1-answer", "problems", "problems", "blank").manual_score = 3
        gb.db.commit()
    path = grading.mark(course, "problems", "blank", "prob-width-gain-answer", 1, "a start")
    assert grading.read_grades(path)["blank"]["prob-gamma-part1-answer"][0] == 0
    assert "not set by course mark" in grading.read_flags(path)["blank"]["prob-gamma-part1-answer"]


def test_hidden_cases_are_drawn_from_the_course_secret_and_never_shown(graded_problems):
    from paththeory.exercises.problems import IMPLEMENT

    released, _, course = graded_problems
    assert (course / "secret").is_file() and oct((course / "secret").stat().st_mode)[-3:] == "600"
    with np.load(course / "keys" / "problems.npz") as keys:
        public, hidden = keys["problems.action/public/case0_arg0"], keys["problems.action/hidden/case0_arg0"]
        outputs = [float(np.ravel(keys[k])[0]) for k in keys.files if "/hidden/" in k and "_out" in k]
    assert not np.array_equal(public, hidden)
    assert not np.array_equal(IMPLEMENT["problems.action"].cases()[0][0], hidden)
    shown = "\n".join(c.source for c in released.cells)
    shown += "\n".join(p.read_text() for p in (course / "feedback").rglob("*.html"))
    shown += (course / "source" / "problems" / "problems.ipynb").read_text()
    for value in outputs:  # printed to 5 decimals at least: "{:.6g}" of 2.4000041 is "2.4", which "C.2.4" contains
        assert repr(value) not in shown and f"{value:.5f}" not in shown, "a hidden expected value is shown"


def test_grading_refuses_another_package_version(graded_problems):
    _, _, course = graded_problems
    info_path = course / "keys" / "problems.json"
    text = info_path.read_text()
    info = json.loads(text)
    info["paththeory_version"] = "0.0.1"
    info_path.write_text(json.dumps(info))
    try:
        with pytest.raises(answers.GradingError, match="released with paththeory 0.0.1"):
            grading.grade(course, "problems", student="blank")
    finally:
        info_path.write_text(text)


def test_feedback_regenerates_without_running_anything_and_pending_counts(graded_problems, monkeypatch):
    from paththeory_tools import sandbox
    from paththeory.exercises import problems

    _, grades, course = graded_problems
    monkeypatch.setattr(sandbox, "run", lambda *a, **k: pytest.fail("feedback ran a sandbox"))
    html = grading.feedback(course, "problems", "partial").read_text()
    assert "problems-overlap-distance-hidden" in html and "hidden test: output 1 right on" in html
    assert "hidden test, case" not in html, "a hidden case is never named, only counted"
    written = sum(len(problems.PARTS.get(label, [0])) for label, kind in problems.KINDS.items() if kind != "implement")
    left = grading.pending(course, "problems")
    assert 0 < left <= written * len(grades)
    now = grading.read_grades(course / "grades-problems.csv")  # other tests may have marked some
    assert left == sum(1 for s in now.values() for q, (score, _) in s.items() if q.startswith("prob-") and score is None)
    from paththeory_tools.cli import main

    assert main(["course", "pending", "problems", "--course", str(course)]) == 0
    assert main(["course", "feedback", "problems", "--course", str(course), "--student", "partial"]) == 0


def report_entries(course: Path) -> dict:
    """``{student: their entry of the grading report (time, sandbox, flags)}``."""
    text = (course / "grading-report-problems.txt").read_text()
    return dict(re.findall(r"^([\w.-]+): (\d+\.\d s.*?)(?=^[\w.-]+: \d+\.\d s|\Z)", text, re.M | re.S))


def test_one_student_is_graded_alone(graded_problems, monkeypatch):
    """``--student`` grades one submission and leaves the others' results, grades and report entries;
    a feedback page the leak check refuses is reported, and the grades are written all the same."""
    _, grades, course = graded_problems
    before = (course / "graded" / "correct" / "problems.json").stat().st_mtime
    report = report_entries(course)
    assert set(report) == set(grades), "the first run reports every student"
    real = grading.feedback

    def refused(course_dir, assignment, student):
        if student == "variance_off":
            raise answers.GradingError("a doctored refusal of the leak check")
        return real(course_dir, assignment, student)

    monkeypatch.setattr(grading, "feedback", refused)
    with pytest.warns(UserWarning, match="a doctored refusal"):
        after = grading.read_grades(grading.grade(course, "problems", student="variance_off"))
    assert (course / "graded" / "correct" / "problems.json").stat().st_mtime == before
    assert after["variance_off"]["problems-predictor-hidden"] == grades["variance_off"]["problems-predictor-hidden"]
    assert set(after) == set(grades)
    now = report_entries(course)
    assert set(now) == set(report), "grading one student keeps the class's report"
    others = set(report) - {"variance_off"}
    assert {s: now[s] for s in others} == {s: report[s] for s in others}, "the other entries are kept as they were"
    assert "FEEDBACK WITHHELD a doctored refusal" in now["variance_off"]


def test_the_report_is_merged_by_student(tmp_path):
    """The grading report keeps each student's last entry: a run for one student replaces only its own."""
    from paththeory import _io
    from paththeory_tools import sandbox

    def stored(student, flags, seconds, kind="namespaces"):
        g = grading.Graded(student, {}, flags, [], seconds, kind)
        _io.write_json(grading._result_path(tmp_path, "problems", student), vars(g))
        return g

    box = sandbox.Sandbox("namespaces")
    everyone = [stored("ada", ["flag A"], 1.0), stored("bob", [], 2.0), stored("cy", ["flag C"], 3.0, "plain")]
    grading._write_report(tmp_path, "problems", everyone, box)
    bob = stored("bob", ["flag B"], 4.0)
    text = grading._write_report(tmp_path, "problems", [bob], box, {"bob": "why"}).read_text()
    assert "ada: 1.0 s\n  FLAG flag A\n" in text
    assert "bob: 4.0 s\n  FLAG flag B\n  FEEDBACK WITHHELD why\n" in text and "bob: 2.0" not in text
    assert "cy: 3.0 s (sandbox: plain)\n  FLAG flag C\n" in text
    assert "sandbox of earlier runs: plain" in text and "could read and write the course folder" in text
    assert text.index("ada:") < text.index("bob:") < text.index("cy:")


def test_each_part_of_a_derivation_is_marked_against_its_rubric(graded_problems):
    """Every derivation has one answer cell per part of PARTS, stating its points and rubric; a part is
    a question of ``course mark`` (never above its points), ``pending`` counts parts, and the
    feedback lists each part's rubric."""
    import html

    from paththeory.exercises import problems

    released, grades, course = graded_problems
    cells = {c.metadata["nbgrader"]["grade_id"]: c for c in released.cells
             if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")}
    for label, parts in problems.PARTS.items():
        assert f"{label}-answer" not in cells and f"{label}-answer" not in grades["correct"]
        for part in parts:
            gid = grading.part_grade_id(label, part.part)
            assert cells[gid].metadata["nbgrader"]["points"] == part.points
            assert f"part {part.part}** ({part.points} points: {part.earns})" in cells[gid].source
            assert grades["correct"][gid] == (None, part.points), "a part waits for a person"
    gid = grading.part_grade_id("prob-gamma", "2")
    with pytest.raises(ValueError, match="marked part by part") as refused:
        grading.mark(course, "problems", "display_off", "prob-gamma-answer", 1)
    assert all(grading.part_grade_id("prob-gamma", p.part) in str(refused.value) for p in problems.PARTS["prob-gamma"])
    with pytest.raises(ValueError, match=r"between 0 and 2 for prob-gamma-part2-answer \(its rubric"):
        grading.mark(course, "problems", "display_off", gid, 3)
    waiting = grading.pending(course, "problems")
    path = grading.mark(course, "problems", "display_off", gid, 1.5, "named, without its parameters")
    assert grading.read_grades(path)["display_off"][gid] == (1.5, 2)
    assert grading.pending(course, "problems") == waiting - 1
    page = (course / "feedback" / "display_off" / "problems" / "problems.html").read_text()
    gamma = problems.PARTS["prob-gamma"]
    assert all(html.escape(f"prob-gamma, part {p.part} ({p.points} points): {p.earns}") in page for p in gamma)
    assert "1.5 / 2" in page and "named, without its parameters" in page


def test_feedback_that_would_show_a_solution_is_refused(graded_problems, monkeypatch):
    """The feedback passes the release's own leak check before it is written: a doctored grading
    result whose note holds a model answer, solution code, gated prose or a frozen hidden value
    gets no page (and the previous one goes)."""
    from paththeory_tools import edition

    _, _, course = graded_problems
    result_path = course / "graded" / "blank" / "problems.json"
    page = course / "feedback" / "blank" / "problems" / "problems.html"
    original = result_path.read_text()
    checked = []
    release_check = grading._refuse_leaks
    monkeypatch.setattr(grading, "_refuse_leaks", lambda *a: checked.append(a[0]) or release_check(*a))
    assert grading.feedback(course, "problems", "blank") == page and len(checked) == 1, "one check, the release's"
    fragments = edition.solution_fragments(ROOT)["problems"]
    source = (course / "source" / "problems" / "problems.ipynb").read_text()
    with np.load(course / "keys" / "problems.npz") as keys:
        frozen = float(np.ravel(keys["problems.action/hidden/case2_out0"])[0])
    leaks = {"model answer": next(f for f in fragments if f.startswith("The width $n_L$ cancels")),
             "solution code": next(f for f in fragments if "np." in f and "=" in f and f in source),
             "gated prose": next(f for f in fragments if f.startswith("The hand check")),
             "frozen value (repr)": repr(frozen), "frozen value (6 digits)": f"{frozen:.6g}"}
    try:
        for what, leak in leaks.items():
            doctored = json.loads(original)
            doctored["scores"]["problems-action-hidden"]["notes"].append(f"doctored: {leak} (end)")
            result_path.write_text(json.dumps(doctored))
            with pytest.raises(answers.GradingError, match="the feedback of blank is not written") as refused:
                grading.feedback(course, "problems", "blank")
            assert str(page) in str(refused.value), "the message names the page, not a temporary file"
            assert not page.exists(), f"a page showing a {what} is left behind"
    finally:
        result_path.write_text(original)
        grading.feedback(course, "problems", "blank")
    assert page.is_file()


def test_the_leak_check_finds_a_solution_sentence_planted_in_each_student_artefact(graded_problems, tmp_path):
    """One stripping function makes every student artefact; one leak check reads them all, gated
    solution prose and demonstrations included."""
    from paththeory_tools import edition

    _, _, course = graded_problems
    fragments = edition.solution_fragments(ROOT)["problems"]
    planted = {"gated prose": next(f for f in fragments if f.startswith("The hand check")),
               "demonstration": next(f for f in fragments if "sample_posterior(" in f),
               "written solution": next(f for f in fragments if "Solution" not in f and f[0].isupper()
                                        and not f.startswith("The hand check"))}
    web_page = tmp_path / "problems.html"
    web_page.write_text("<html><body><p>Problem set</p></body></html>")
    artefacts = {"student notebook": ROOT / "notebooks" / "student" / "problems.ipynb",
                 "released notebook": course / "release" / "problems" / "problems.ipynb",
                 "web student edition": web_page,
                 "feedback": course / "feedback" / "partial" / "problems" / "problems.html"}
    for name, original in artefacts.items():
        copy_ = tmp_path / f"{name.replace(' ', '_')}{original.suffix}"
        copy_.write_text(original.read_text())
        assert edition.artefact_leaks(ROOT, [(copy_, "problems")]) == [], f"the {name} leaks as it is"
        for what, sentence in planted.items():
            copy_.write_text(original.read_text().replace("</body>", "") + "\n" + sentence + "\n")
            found = edition.artefact_leaks(ROOT, [(copy_, "problems")])
            assert any(sentence[:40] in f for f in found), f"a {what} planted in the {name} is not found"
