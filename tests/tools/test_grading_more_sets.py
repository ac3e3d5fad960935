"""The book's other graded sets (issue 48, item 12): book/problems_residual.md and book/problems_inference.md are
released, collected and graded with the same commands as book/problems.md. A small class per set: the worked
solutions (every automatic point), a function wrong for a reason (right on the hidden cases where the reason does not
bite), a blank notebook (nothing) and one that calls the package's own code (nothing, flagged); the hidden cases
are drawn from the course secret."""

from __future__ import annotations

import numpy as np
import pytest

from paththeory.exercises import sets
from paththeory_tools import grading
from paththeory_tools.cli import main
from tests.tools.test_grading import submit

pytest.importorskip("nbgrader")

#: Per set: the wrong-for-a-reason and the package-calling answers, ``{grade id of the answer cell: source}``.
CLASSES = {
    "problems_residual": {
        "partial": {"problems-residual-skip-action-answer": lambda worked: worked.replace(
            "heads / (var_1 * U_a)", "heads / U_a")},  # forgets sigma_1^2: right where it is 1
        "package": {
            "problems-residual-skip-action-answer": "import paththeory as pt\n\n"
            "def skip_layer_action(U, C, y, n, temperature, var_a=1.0, var_1=1.0):\n"
            "    K = np.einsum('ab,abmq->mq', U, C)\n"
            "    return float(pt.action.action([U], K, y, temperature, (n, n), (len(U) - 1,), (1.0, var_1, var_a),\n"
            "                                  skips=(True,), U_a=U[0, 0]))\n",
            "problems-residual-multi-output-mean-answer":
            "from paththeory.exercises.problems_residual import _multi_output_reference\n\n"
            "def multi_output_mean(U, xi_train, Y, xi_test, temperature):\n"
            "    return _multi_output_reference(U, xi_train, Y, xi_test, temperature)\n",
        },
    },
    "problems_inference": {
        "partial": {
            "problems-inference-action-gradient-answer": lambda worked: worked.replace(
                "np.eye(H) / (var_1 * U_a)", "np.eye(H) / U_a"),  # forgets sigma_1^2: right where it is 1
            "problems-inference-readout-evidence-answer": lambda worked: worked.replace(
                "C * logdet", "logdet"),  # one determinant for all outputs: right for one output
        },
        "package": {
            "problems-inference-action-gradient-answer":
            "from paththeory.exercises.problems_inference import _gradient_reference as action_gradient\n",
            "problems-inference-readout-evidence-answer":
            "from paththeory.sampling.path_form import marginal_log_likelihood\n\n"
            "def readout_log_evidence(phi, Y, temperature):\n"
            "    return float(marginal_log_likelihood(phi, Y, temperature))\n",
        },
    },
}
#: Per set: the automatic points of the wrong-for-a-reason answers, ``{question: points}`` (all others: full).
PARTIAL = {
    "problems_residual": {"problems-residual-skip-action-public": 0.0,
                          "problems-residual-skip-action-hidden": 14 * 2 / 4},  # sigma_1^2 = 1 in 2 of 4 cases
    "problems_inference": {"problems-inference-action-gradient-public": 0.0,
                           "problems-inference-action-gradient-hidden": 14 * 2 / 5,  # sigma_1^2 = 1 in 2 of 5
                           "problems-inference-readout-evidence-public": 0.0,
                           "problems-inference-readout-evidence-hidden": 9 * 2 / 4},  # one output in 2 of 4
}


@pytest.fixture(scope="module", params=list(CLASSES))
def graded_set(request, tmp_path_factory):
    """One set released into a fresh course, its class collected and graded (the command line's grade)."""
    name = request.param
    course = tmp_path_factory.mktemp(name)
    released, _, students = submit(course, name, CLASSES[name])
    assert students == ["blank", "correct", "package", "partial"]
    assert main(["course", "grade", name, "--course", str(course)]) == 0
    csv_path = course / f"grades-{name}.csv"
    grades, flags = grading.read_grades(csv_path), grading.read_flags(csv_path)
    automatic = {s: sum(v[0] for q, v in g.items() if q.endswith(("-public", "-hidden"))) for s, g in grades.items()}
    print(f"\n{name}: automatic points {automatic}")
    return name, course, released, grades, flags


def automatic(grades: dict, student: str) -> dict:
    return {q: v for q, v in grades[student].items() if q.endswith(("-public", "-hidden"))}


def test_the_class_gets_the_points_it_should(graded_set):
    name, _, released, grades, flags = graded_set
    module = sets.SETS[name]
    full = automatic(grades, "correct")
    assert full and all(score == top for score, top in full.values())
    assert sum(top for _, top in full.values()) == sum(module.POINTS[s.label] for s in module.IMPLEMENT.values())
    assert grades["correct"]["total"][1] == sum(module.POINTS.values())
    assert not flags.get("correct"), "honest code is not flagged"
    assert all(score == 0 for score, _ in automatic(grades, "blank").values())
    partial = automatic(grades, "partial")
    assert {q: v[0] for q, v in partial.items() if v[0] != full[q][0]} == pytest.approx(PARTIAL[name])
    assert all(score == 0 for score, _ in automatic(grades, "package").values())
    flagged = " ".join(flags.get("package", {}).values())
    assert "paththeory.exercises" in flagged, "a call of the registry's reference is flagged"
    written = [c for c in released.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "markdown"]
    assert len(written) == sum(len(module.PARTS.get(label, [0])) for label, kind in module.KINDS.items()
                               if kind != "implement"), "one cell per interpretation, one per part of a derivation"
    assert all(score is None for q, (score, _) in grades["correct"].items() if q.endswith("-answer"))


def test_the_hidden_cases_come_from_the_course_secret(graded_set):
    name, course, released, _, _ = graded_set
    shown = "\n".join(c.source for c in released.cells)
    secret = grading._secret(course)
    with np.load(course / "keys" / f"{name}.npz") as keys:
        for ex, spec in sets.SETS[name].IMPLEMENT.items():
            public, hidden = keys[f"{ex}/public/case1_arg0"], keys[f"{ex}/hidden/case1_arg0"]
            assert public.shape == hidden.shape and not np.allclose(public, hidden)
            assert np.array_equal(np.asarray(spec.cases()[1][0], float), public)
            assert np.array_equal(np.asarray(spec.cases(grading._seed(secret, ex))[1][0], float), hidden)
            assert not np.allclose(spec.cases(grading._seed("0" * 32, ex))[1][0], hidden), "another secret, others"
            out = float(np.ravel(keys[f"{ex}/hidden/case1_out0"])[0])
            assert repr(out) not in shown and f"{out:.5f}" not in shown


def test_the_sets_share_no_label_and_keep_the_first_sets_ids():
    labels = [label for module in sets.SETS.values() for label in module.KINDS]
    assert len(labels) == len(set(labels)) == len(sets.KINDS)
    assert all(ex.startswith(f"{name}.") for name, module in sets.SETS.items() for ex in module.IMPLEMENT)
    assert sorted(sets.SETS["problems"].IMPLEMENT) == ["problems.action", "problems.overlap_distance",
                                                       "problems.predictor"]
    for module in sets.SETS.values():
        assert set(module.POINTS) == set(module.KINDS) and set(module.PARTS) <= set(module.KINDS)
        assert all(sum(p.points for p in parts) == module.POINTS[label] for label, parts in module.PARTS.items())
        assert all(spec.label in module.KINDS for spec in module.IMPLEMENT.values())
    with pytest.raises(ValueError, match="prefix of the package's problems"):
        grading.new_set("unused-course", "problems_residual")
