"""The student edition (paththeory_tools.edition): the solutions are cut from every chapter, its
configuration executes nothing and opens the student notebooks, and the leak check finds a
marker, a line of solution code, a written solution and an answer value wherever they show."""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml

from paththeory.exercises.sets import SETS
from paththeory_tools import edition
from paththeory_tools.student import BEGIN
from paththeory_tools.notebooks import toc_chapters

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("chapter", toc_chapters(ROOT))
def test_no_chapter_keeps_a_solution(chapter):
    source = jupytext.read(ROOT / "book" / f"{chapter}.md")
    student = edition.strip_solutions(source)
    text = "\n".join(c.source for c in student.cells)
    for mark in (BEGIN, "{solution}", "{solution-start}", "{solution-end}"):
        assert mark not in text, f"{chapter}: {mark!r} left"
    tasks = sum(c.source.count("```{exercise}") for c in source.cells if c.cell_type == "markdown")
    assert text.count("```{exercise}") == tasks, f"{chapter}: a task was cut with its solution"
    kept = [c.source for c in student.cells if c.cell_type == "code"]
    solutions = [c.source for c in source.cells if c.cell_type == "code" and BEGIN in c.source]
    assert len(kept) <= sum(c.cell_type == "code" for c in source.cells) - len(solutions)
    assert kept[0] == next(c.source for c in source.cells if c.cell_type == "code"), "the install cell must stay"
    fragments = edition.solution_fragments(ROOT).get(chapter, [])
    assert not [f for f in fragments if f in text], chapter
    if tasks:
        assert edition.STUDENT_SENTENCE in text or chapter in SETS, chapter  # a problem set's page says it its own way


def test_an_unclosed_gated_solution_is_an_error():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("```{solution-start} ex\n```"),
                                         nbformat.v4.new_code_cell("answer = 24")])
    with pytest.raises(ValueError, match="solution-end"):
        edition.strip_solutions(nb)


def test_the_student_configuration_executes_nothing_and_opens_the_student_notebooks():
    config = edition._student_config(ROOT, yaml.safe_load((ROOT / "_config.yml").read_text()))
    assert config["execute"]["execute_notebooks"] == "off"
    assert "**/*.ipynb" not in config["exclude_patterns"] and "_build" in config["exclude_patterns"]
    assert config["sphinx"]["config"]["colab_notebooks_folder"] == "notebooks/student"
    assert config["title"].endswith("(student edition)")
    assert "sphinx_exercise" in config["sphinx"]["extra_extensions"]


def test_staging_needs_the_full_build(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "_toc.yml").write_text((ROOT / "_toc.yml").read_text())
    for md in (ROOT / "book").glob("*.md"):
        (tmp_path / "book" / md.name).write_text(md.read_text())
    with pytest.raises(FileNotFoundError, match="make book"):
        edition.stage(tmp_path, tmp_path / "out")


def test_the_leak_check_finds_every_kind_of_leak(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    (root / "book").mkdir(parents=True)
    header = "---\nkernelspec:\n  name: python3\n---\n"
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/model\nchapters:\n  - file: book/markov\n")
    (root / "book" / "markov.md").write_text(header + "# Markov\n")
    (root / "book" / "model.md").write_text(header + "\n".join([
        "```{code-cell} ipython3", BEGIN, "answer = pt.Architecture(layers).n_paths  # counted", "### END SOLUTION",
        "```", "", "```{solution} exercise-x", ":label: sol-x", "",
        "The Gamma integral is a Laplace transform of a power law.", "```", ""]))
    monkeypatch.setattr(edition, "answer_values", lambda: {"model.gp_kernel": ["1.234"], "markov.u_gd": ["-2.776"]})
    html = tmp_path / "html"
    (html / "book").mkdir(parents=True)
    (html / "_sources" / "book").mkdir(parents=True)
    (html / "book" / "model.html").write_text("<p>clean page: 1.2345 and 11.234 are other numbers</p>")
    (html / "book" / "markov.html").write_text("<p>U<sub>gd</sub> = -2.776</p>")
    (html / "_sources" / "book" / "model.ipynb").write_text(
        '{"source": "answer = pt.Architecture(layers).n_paths  # counted"}')
    students = tmp_path / "students"
    students.mkdir()
    (students / "model.ipynb").write_text(f"{BEGIN}\nThe Gamma integral is a Laplace transform of a power law.")
    found = edition.leaks(root, html, students)
    assert any("markov.html: the answer of markov.u_gd, -2.776" in f for f in found)
    assert any("_sources/book/model.ipynb: solution text" in f for f in found)
    assert any("students/model.ipynb" in f and "marker" in f for f in found)
    assert any("students/model.ipynb" in f and "Laplace" in f for f in found)
    assert not [f for f in found if f.startswith(str(html / "book" / "model.html"))], found
