"""The exercises of the chapters: every exercise has a check, its solution passes, a wrong answer
fails with a hint (not the answer), an answer of the wrong kind is named as such, each task is a
sphinx-exercise ``{exercise}`` whose gated solution holds the solution cell and its check's output,
and the student notebooks are plain Markdown with the solutions stubbed."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import jupytext
import nbformat
import numpy as np
import pytest

import paththeory_tools.notebooks
import paththeory_tools.student
from paththeory import exercises
from paththeory.exercises import EXERCISES, InvalidAnswer, WrongAnswer, check
from paththeory_tools.plain_markdown import MarkdownContext, _equation_numbers, myst_to_markdown
from paththeory_tools.student import BEGIN, END, exercise_id, exercise_label, strip_solution, student_version

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ("model", "derivation", "depth", "order_parameter", "solver", "gp_vs_finite", "markov", "omniglot", "pruning",
            "many_outputs", "residual", "nonlinear")
#: Chapters that share their three exercises: the one-layer derivation and its continuation.
SHARED = {"derivation": ("derivation", "depth"), "depth": ("derivation", "depth")}
#: The chapters beyond the paper and the order parameter's have one or two exercises each (the residual and
#: many-outputs chapters are at their length limit; the problem set grades the skip level in full); the others three.
FEWER = {"order_parameter": 1, "solver": 1, "many_outputs": 1, "residual": 2, "nonlinear": 2}


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


def revealing_strings(ex_id: str) -> list[str]:
    """Ways the expected value could be printed: its entries to 4 significant digits."""
    truth = exercises.solution(ex_id)
    values = np.concatenate([np.ravel(t) for t in truth]) if isinstance(truth, list) else np.ravel(truth)
    values = [v for v in values[:6] if v not in (0.0, 1.0, -1.0)]
    return [f"{v:.4g}" for v in values] + [f"{v:.4f}" for v in values]


def test_every_chapter_has_its_exercises_with_checks():
    ids = [i for i, _ in CELLS]
    assert None not in ids, "every exercise cell must end with check(<id>, answer)"
    assert len(set(ids)) == len(ids), "exercise ids must be unique"
    assert set(ids) <= set(EXERCISES), f"ids without a check: {set(ids) - set(EXERCISES)}"
    for name in CHAPTERS:
        group = SHARED.get(name, (name,))
        assert sum(i.split(".")[0] in group for i in ids) >= FEWER.get(name, 3), name
        assert any(i.startswith(name + ".") for i in ids), name


@pytest.mark.parametrize("ex_id,source", [
    pytest.param(i, src, id=i) for i, src in CELLS
])
def test_exercise_cell(ex_id, source):
    assert source.count(BEGIN) == 1 and source.count(END) == 1
    namespace, printed = run_cell(source)
    assert f"Correct ({ex_id})" in printed
    with pytest.raises(WrongAnswer, match=re.escape(ex_id)) as wrong:
        check(ex_id, perturb(namespace["answer"]))
    message = str(wrong.value)
    assert "reveal=True" in message and EXERCISES[ex_id].hint in message
    assert not [s for s in revealing_strings(ex_id) if s in message], "a wrong answer must not print the answer"
    with pytest.raises(NotImplementedError, match=f"Exercise {ex_id}"):
        run_cell(strip_solution(source))


def test_each_exercise_is_a_labelled_task_with_a_gated_solution():
    """``{exercise}`` labelled ``exercise-<id>``, then ``{solution-start}`` of that label, the solution
    cell (tag ``exercise``, nothing hidden by a toggle), ``{solution-end}``: the student edition drops the
    gated part, solution and check output together."""
    for name in CHAPTERS:
        text = (ROOT / "book" / f"{name}.md").read_text()
        for cell in jupytext.reads(text, fmt="md:myst").cells:
            if BEGIN not in cell.source:
                continue
            ex_id = exercise_id(cell.source)
            label = exercise_label(ex_id)
            tags = set(cell.metadata.get("tags", []))
            assert tags == {"exercise"} and "mystnb" not in cell.metadata, (name, ex_id, tags)
            gated = re.search(r"```\{exercise\}[^\n]*\n:label: " + re.escape(label) + r"\n.*?```\n\n"
                              r"```\{solution-start\} " + re.escape(label) + r"\n(?::[\w-]+:.*\n)*```\n\n"
                              r"```\{code-cell\} ipython3\n(?:(?!```\n).*\n)*?```\n\n```\{solution-end\}\n```",
                              text, re.DOTALL)
            assert gated and cell.source.splitlines()[-1] in gated.group(0), (name, ex_id)
        assert "toggle" not in text.lower() and "Show solution" not in text, f"{name}: the text describes the old toggle"
        assert "{admonition} Exercise" not in text, f"{name}: an exercise is still an admonition"


# --------------------------------------------------------------------------- hints and revealing


def test_wrong_answers_give_hints_not_the_answer():
    with pytest.raises(WrongAnswer) as wrong:
        check("model.n_paths", 23)
    message = str(wrong.value)
    assert message.startswith("model.n_paths: not quite") and "24" not in message
    assert "too small" in message and "Revisit" in message and "reveal=True" in message

    with pytest.raises(WrongAnswer, match="10\\^2 times too large"):
        check("model.n_paths", 2400)

    truth = exercises.solution("model.gp_kernel")
    with pytest.raises(WrongAnswer, match="wrong sign"):
        check("model.gp_kernel", -truth)
    with pytest.raises(WrongAnswer, match="proportional") as wrong:
        check("model.gp_kernel", truth / 3)
    assert len(str(wrong.value)) < 800 and f"{truth[0, 0]:.4g}" not in str(wrong.value)

    truth = exercises.solution("derivation.readout_root")
    with pytest.raises(WrongAnswer, match="sign is wrong"):
        check("derivation.readout_root", -truth)

    with pytest.raises(WrongAnswer, match="item 1") as wrong:
        check("depth.gp_point", [*exercises.solution("depth.gp_point")[:1], np.eye(3)])
    assert "item 0" not in str(wrong.value)


def test_the_typical_slips_of_the_newest_exercises_fail_with_a_pointer():
    """The inner quadratic solved entry by entry, and the skip level's term with H in place of H + 1: both fail,
    with a hint that names the step (the eigenbasis; the GP point of the skip level), and without the answer."""
    v = np.array([1.0, 1.0, 0.5, 2.0])
    U_bar = np.trace((np.eye(4) + np.outer(v, v) / 2).reshape(2, 2, 2, 2), axis1=0, axis2=2)
    beta2, gamma2 = 1.5 * 1.2 * (2 * 30 / 20 - 1), 1.5 * 1.2 * 30 / (0.8 * 20)
    omega, O = np.linalg.eigh(U_bar)
    check("order_parameter.inner_quadratic", O @ np.diag((-beta2 + np.sqrt(beta2**2 + 4 * gamma2 * omega)) / 2) @ O.T)
    entrywise = (-beta2 + np.sqrt(beta2**2 + 4 * gamma2 * U_bar)) / 2
    with pytest.raises(WrongAnswer, match="eigenbasis of Tr_h1 U") as wrong:
        check("order_parameter.inner_quadratic", entrywise)
    assert not [s for s in revealing_strings("order_parameter.inner_quadratic") if s in str(wrong.value)]

    minima, slips = [], []
    for upper in ([[1, 0.3], [0.3, 0.5]], [[2, -0.6], [-0.6, 1.5]]):
        A = np.array(upper)
        logdet_U = 3 * np.linalg.slogdet(A)[1] + 4 * np.log(0.7)  # at the GP point: (H + 1) ln det A + H D ln 0.7
        minima.append(4 - logdet_U + 3 * np.linalg.slogdet(A)[1])
        slips.append(4 - logdet_U + 2 * np.linalg.slogdet(A)[1])  # H in place of H + 1
    check("residual.skip_gp", minima)
    with pytest.raises(WrongAnswer, match="GP point") as wrong:
        check("residual.skip_gp", slips)
    assert not [s for s in revealing_strings("residual.skip_gp") if s in str(wrong.value)]


def test_the_typical_slips_of_the_nonlinear_exercises_fail_with_a_pointer():
    """ReLU's map with arccos(rho) in place of pi - arccos(rho), and the erf map without the normalisation by U_a: both
    fail with a hint that names the step, without the answer."""
    def slipped(q1, q2, q12):  # the angle's complement
        return (np.sqrt(q1 * q2 - q12**2) + np.arccos(q12 / np.sqrt(q1 * q2)) * q12) / (2 * np.pi)

    with pytest.raises(WrongAnswer, match="arccos") as wrong:
        check("nonlinear.homogeneity", [slipped(1, 2, 0.3), slipped(3, 6, 0.9)])
    assert not [s for s in revealing_strings("nonlinear.homogeneity") if s in str(wrong.value)]
    truth = exercises.solution("nonlinear.normalisation")
    with pytest.raises(WrongAnswer, match="U_a"):
        check("nonlinear.normalisation", [truth[1], truth[1]])  # the bare map on both


def test_the_answer_is_revealed_only_on_request(capsys):
    assert exercises.solution("model.n_paths") == 24 and isinstance(exercises.solution("model.n_paths"), int)
    with pytest.raises(WrongAnswer, match="Expected value:\n  24"):
        check("model.n_paths", 23, reveal=True)
    kernel = exercises.solution("model.gp_kernel")
    kernel[0, 0] = 99.0  # a copy: the stored truth is unchanged
    check("model.gp_kernel", exercises.solution("model.gp_kernel"), reveal=True)
    assert "Correct (model.gp_kernel)" in capsys.readouterr().out
    exercises.hint("model.gp_kernel")
    printed = capsys.readouterr().out
    assert "Answer: an array of shape (4, 4)" in printed and "Revisit" in printed


@pytest.mark.parametrize("answer,problem", [
    (None, "no answer given"),
    ("24", "a string, '24'"),
    (float("nan"), "contains NaN"),
    (np.inf, "infinite"),
    (True, "a boolean"),
    ({"answer": 24}, "a dict"),
    (np.array([24, 24]), "not a single number"),
    (24.5, "not a whole number"),
    (len, "forget to call"),
    (24 + 0j, "complex"),
])
def test_answers_of_the_wrong_kind_are_named(answer, problem):
    with pytest.raises(InvalidAnswer) as invalid:
        check("model.n_paths", answer)
    message = str(invalid.value)
    assert message.startswith("model.n_paths: ") and problem in message
    assert "Expected an integer" in message


@pytest.mark.parametrize("ex_id,answer,problem", [
    ("model.gp_kernel", np.zeros(3), "not shape (4, 4)"),
    ("model.gp_kernel", np.full((4, 4), np.nan), "contains NaN (16 of 16 entries)"),
    ("model.gp_kernel", [["a"] * 4] * 4, "not numbers"),
    ("model.gp_kernel", [[1, 2], [3]], "cannot be read as numbers"),
    ("markov.agreement", "0.7, 0.3", "a string"),
    ("derivation.readout_root", np.array([1.0, 2.0]), "not a single number"),
    ("depth.gp_point", np.eye(6), "got an array of shape (6, 6)"),
    ("depth.gp_point", [np.eye(6)], "a list of 1 items"),
    ("depth.gp_point", [np.eye(6), None], "item 1 is None"),
])
def test_array_answers_of_the_wrong_kind_are_named(ex_id, answer, problem):
    with pytest.raises(InvalidAnswer) as invalid:
        check(ex_id, answer)
    message = str(invalid.value)
    assert message.startswith(ex_id + ": ") and problem in message, message
    assert f"Expected {EXERCISES[ex_id].expects.describe()}" in message


def test_answers_of_other_numeric_types_are_accepted(capsys):
    import jax.numpy as jnp

    for answer in (24, np.int64(24), 24.0, np.array(24), jnp.asarray(24)):
        check("model.n_paths", answer)
    truth = exercises.solution("depth.gp_point")
    check("depth.gp_point", tuple(jnp.asarray(t) for t in truth))
    check("markov.agreement", list(exercises.solution("markov.agreement")))
    assert capsys.readouterr().out.count("Correct") == 7


def test_check_rejects_unknown_ids():
    with pytest.raises(KeyError, match="Did you mean 'model.n_paths'"):
        check("model.npaths", 1)


def test_errors_print_without_a_traceback_in_ipython():
    with pytest.raises(WrongAnswer) as wrong:
        check("model.n_paths", 23)
    lines = wrong.value._render_traceback_()
    assert "WrongAnswer" in lines[0] and "model.n_paths: not quite" in lines[0]
    assert not any("Traceback" in line or "File " in line for line in lines)


# --------------------------------------------------------------------------- student notebooks


def test_student_version_strips_every_solution():
    nb = jupytext.read(ROOT / "book" / "model.md")
    student = student_version(nb)
    assert all(BEGIN not in c.source for c in student.cells)
    assert sum("NotImplementedError" in c.source for c in student.cells) >= 3
    assert any(BEGIN in c.source for c in nb.cells), "the original notebook must be left unchanged"


@pytest.fixture(scope="module")
def student_notebooks(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    return {p.stem: nbformat.read(p, as_version=4) for p in paththeory_tools.notebooks.write_student_notebooks(ROOT / "book", out)}


@pytest.mark.parametrize("name", CHAPTERS)
def test_student_notebooks_are_plain_notebooks(student_notebooks, name):
    nb = student_notebooks[name]
    nbformat.validate(nb)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    everything = "\n".join(c.source for c in nb.cells)
    for markup in ("```{", ":::{", "{doc}`", "{ref}`", "{cite}`", "{eq}`", "{numref}`"):
        assert markup not in everything, f"{name}: MyST markup {markup!r} left"
    assert not re.search(r"^\s*\([\w:-]+\)=\s*$", markdown, re.MULTILINE), f"{name}: a (label)= target left"
    assert not re.search(r"^\s*\$\$\s*\([\w:-]+\)\s*$", markdown, re.MULTILINE), f"{name}: an equation label left"
    assert not re.search(r"toggle", everything, re.IGNORECASE), f"{name}: mentions a toggle"
    assert BEGIN not in everything and "jupytext" not in nb.metadata
    ids = [i for i, _ in CELLS if i.startswith(name + ".")]
    cells = {exercise_id(c.source): c for c in nb.cells if c.cell_type == "code" and "exercise" in c.metadata.get("tags", [])}
    assert sorted(cells) == sorted(ids), name
    for ex_id, cell in cells.items():
        assert f'check("{ex_id}", answer)' in cell.source
        assert f'raise NotImplementedError("Exercise {ex_id}: ' in cell.source and f"hint('{ex_id}')" in cell.source
        assert cell.outputs == []
    assert "**Student notebook.**" in markdown


def test_myst_to_markdown():
    ctx = MarkdownContext({"model": "The model"}, {"tiberi2024dissecting": "Tiberi et al. (2024)"}, {},
                                     chapters=("model",))
    text = "\n".join([
        "(sec-a)=",
        "% a comment",
        "See {doc}`model`, {doc}`the notation <notation>` and {cite}`tiberi2024dissecting`, {eq}`eq-a`.",
        "",
        "$$",
        "x = 1",
        "$$ (eq-a)",
        "",
        "````{admonition} Exercise 1: counting",
        ":class: tip",
        "",
        "Count {math}`n`.",
        "",
        "```python",
        "{doc}`kept in code`",
        "```",
        "````",
        "",
        ":::{note}",
        "A note.",
        ":::",
    ])
    out = myst_to_markdown(text, ctx)
    assert "See [The model](model.ipynb), *the notation* and Tiberi et al. (2024), (1)." in out
    assert "x = 1\n\\tag{1}\n$$" in out
    assert "> **Exercise 1: counting**\n>\n> Count $n$.\n>\n> ```python\n> {doc}`kept in code`\n> ```" in out
    assert "> **Note**\n>\n> A note." in out
    assert "(sec-a)=" not in out and "comment" not in out


def test_myst_to_markdown_names_theorems_and_numbers_only_equations(tmp_path):
    """sphinx-proof directives: a ``{prf:ref}`` names the result's kind and title, and their
    ``:label:`` options do not count as equations."""
    page = "\n".join([
        "# A page",
        "",
        "```{prf:lemma} Gamma identity",
        ":label: lem-a",
        "",
        "A statement.",
        "```",
        "",
        "```{math}",
        ":label: eq-b",
        "y = 2",
        "```",
        "",
        "$$",
        "x = 1",
        "$$ (eq-a)",
        "",
        "By {prf:ref}`lem-a`, {eq}`eq-a` and {eq}`eq-b`.",
    ])
    (tmp_path / "page.md").write_text(page)
    ctx = MarkdownContext.from_book(tmp_path, chapters=("page",))
    ctx.equations = _equation_numbers(page)
    out = myst_to_markdown(page, ctx)
    assert "By Lemma (Gamma identity), (2) and (1)." in out
    assert "> **Lemma (Gamma identity)**\n>\n> A statement." in out


# --------------------------------------------------------------------------- the chapters' source and the page


def test_myst_to_markdown_exercises_and_solutions():
    """An ``{exercise}`` becomes a quoted task with its title; a written ``{solution}`` is kept only
    with the solutions; gated solution fences go (their cells stay, stubbed for students);
    ``{ref}`` to an exercise names it."""
    page = "\n".join([
        "```{exercise} Counting paths", ":label: exercise-model-n-paths", "", "Count them.", "```", "",
        "```{solution} exercise-model-n-paths", ":label: sol-a", ":class: dropdown", "", "There are 24.", "```", "",
        "```{solution-start} exercise-model-n-paths", ":class: dropdown", "```", "",
        "```{solution-end}", "```", "", "See {ref}`exercise-model-n-paths`."])
    ctx = MarkdownContext({}, {}, {"exercise-model-n-paths": "Exercise (Counting paths)"})
    student = myst_to_markdown(page, ctx)
    assert "> **Exercise: Counting paths**\n>\n> Count them." in student
    assert "24" not in student and "solution" not in student.lower()
    assert student.endswith("See Exercise (Counting paths).")
    ctx.solutions = True
    full = myst_to_markdown(page, ctx)
    assert "> **Solution**\n>\n> There are 24." in full


def test_exercises_page_lists_every_exercise():
    page = (ROOT / "book" / "exercises.md").read_text()
    assert page == paththeory_tools.student.exercises_page(ROOT / "book"), (
        "book/exercises.md is out of date: run paththeory_tools.student.write_exercises_page('book')")
    for ex_id in EXERCISES:
        assert f"`{ex_id}`" in page
        chapter = (ROOT / "book" / f"{ex_id.split('.')[0]}.md").read_text()
        assert f":label: {exercise_label(ex_id)}" in chapter, ex_id
        assert f"<{exercise_label(ex_id)}>`" in page
    assert "## Using the exercises in a course" in page and "write_student_notebooks" in page


# --------------------------------------------------------------------------- diagnoses that do not mislead


def test_float32_precision_is_named_as_such():
    want = np.linspace(1.0, 2.0, 16).reshape(4, 4)
    notes = exercises.diagnose(want.astype(np.float32).astype(float) * (1 + 3e-7), want, 1e-8, 1e-12)
    assert len(notes) == 1 and "float32" in notes[0] and "constant factor" not in notes[0]
    scalar = exercises.diagnose(np.array(0.1 + 1e-8), np.array(0.1), 1e-9, 0)
    assert "float32" in scalar[-1] and "too" not in scalar[-1]


def test_an_accuracy_on_the_wrong_set_is_not_blamed_on_float32():
    notes = exercises.diagnose(np.array(0.99), np.array(0.95), 1e-9, 0, accuracy=True)
    assert "float32" not in " ".join(notes) and "test set" in notes[-1]
    with pytest.raises(WrongAnswer, match="test set") as wrong:
        check("markov.good_path", exercises.solution("markov.good_path") + 0.02)
    assert "float32" not in str(wrong.value)


def test_an_error_rate_is_not_called_a_magnitude_error():
    notes = exercises.diagnose(np.array(0.03), np.array(0.97), 1e-9, 0, accuracy=True)
    assert notes == ["it is 1 minus the expected value: an error rate instead of an accuracy?"]


def test_a_flipped_sign_is_only_a_sign():
    with pytest.raises(WrongAnswer) as wrong:
        check("model.n_paths", -24)
    message = str(wrong.value)
    assert "only the sign is wrong" in message and "magnitude" not in message


@pytest.mark.parametrize("value", [__import__("fractions").Fraction(48, 2), 24 * 10**0, np.int64(24)])
def test_exact_numbers_are_numbers(value, capsys):
    check("model.n_paths", value)
    assert "Correct" in capsys.readouterr().out


def test_a_huge_int_is_a_number_that_is_too_large():
    with pytest.raises(WrongAnswer, match="too large"):
        check("model.n_paths", 10**30)
    with pytest.raises(InvalidAnswer, match="too large for a floating-point number"):
        check("model.n_paths", 10**400)
