"""The exercises of the chapters: every exercise has a check, its solution passes, a wrong answer
fails, and the student version raises NotImplementedError until solved."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import jupytext
import numpy as np
import pytest

from paththeory import data, exercises
from paththeory.exercises import BEGIN, END, EXERCISES, check, exercise_id, strip_solution, student_version

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ("model", "derivation", "gp_vs_finite", "markov", "omniglot", "pruning")
#: Exercises on the Omniglot data (``omniglot_problem``) are skipped where the offline copies are missing,
#: like the other tests on those data.
needs_data = pytest.mark.skipif(not data.SHARED_DATA.is_dir(),
                                reason="offline data copies (../shared/data) not present")


def exercise_cells() -> list[tuple[str, str]]:
    """``(exercise id, source)`` of every cell tagged ``exercise`` in the chapters."""
    found = []
    for name in CHAPTERS:
        for cell in jupytext.read(ROOT / "book" / f"{name}.md").cells:
            if cell.cell_type == "code" and "exercise" in cell.metadata.get("tags", []):
                found.append((exercise_id(cell.source), cell.source))
    return found


CELLS = exercise_cells()


def perturb(answer):
    """A wrong answer of the same shape."""
    if isinstance(answer, (list, tuple)) and answer and np.ndim(answer[0]) == 2:
        return [np.asarray(a) * 1.5 + 1.0 for a in answer]
    return np.asarray(answer, dtype=float) * 1.5 + 1.0


def run_cell(source: str) -> tuple[dict, str]:
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<exercise>", "exec"), namespace)
    return namespace, out.getvalue()


def test_every_chapter_has_three_exercises_with_checks():
    ids = [i for i, _ in CELLS]
    assert None not in ids, "every exercise cell must end with check(<id>, answer)"
    assert len(set(ids)) == len(ids), "exercise ids must be unique"
    assert set(ids) <= set(EXERCISES), f"ids without a check: {set(ids) - set(EXERCISES)}"
    for name in CHAPTERS:
        assert sum(i.startswith(name + ".") for i in ids) >= 3, name


@pytest.mark.parametrize("ex_id,source", [
    pytest.param(i, src, id=i, marks=[needs_data] if "omniglot_problem" in src else []) for i, src in CELLS
])
def test_exercise_cell(ex_id, source):
    assert source.count(BEGIN) == 1 and source.count(END) == 1
    namespace, printed = run_cell(source)
    assert f"Correct ({ex_id})" in printed
    with pytest.raises(AssertionError, match=ex_id.split(".")[0]):
        check(ex_id, perturb(namespace["answer"]))
    with pytest.raises(NotImplementedError, match=f"Exercise {ex_id}"):
        run_cell(strip_solution(source))


def test_exercise_cells_are_hidden_behind_a_toggle():
    for name in CHAPTERS:
        for cell in jupytext.read(ROOT / "book" / f"{name}.md").cells:
            if BEGIN in cell.source:
                assert {"exercise", "hide-input"} <= set(cell.metadata.get("tags", [])), name


def test_check_rejects_unknown_ids_and_missing_answers():
    with pytest.raises(KeyError, match="unknown exercise"):
        check("model.nope", 1)
    with pytest.raises(AssertionError, match="no answer"):
        check("model.n_paths", None)
    with pytest.raises(AssertionError, match="shape"):
        check("model.gp_kernel", np.zeros(3))


def test_student_version_strips_every_solution(tmp_path):
    nb = jupytext.read(ROOT / "book" / "model.md")
    student = student_version(nb)
    assert all(BEGIN not in c.source for c in student.cells)
    assert sum("NotImplementedError" in c.source for c in student.cells) >= 3
    assert any(BEGIN in c.source for c in nb.cells), "the original notebook must be left unchanged"
    written = exercises.write_student_notebooks(ROOT / "book", tmp_path)
    assert {p.stem for p in written} >= set(CHAPTERS)
    assert all(BEGIN not in p.read_text() for p in written)
