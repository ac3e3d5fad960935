"""The problem set (book/problems.md) and its grading module (paththeory/exercises/problems.py).

* The page and the registry agree: every exercise label has a kind and points, every exercise a
  solution with the label ``sol-<label>``, the points table matches, the counts are as promised.
* Every implement problem: the book's worked solution (executed from the page) passes the check,
  agrees with the package's reference, and the check rejects wrong variants and raising functions
  without printing the expected values.
* The closed forms of the derivations, checked numerically against the package where they can be.
"""

from __future__ import annotations

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, optimize, stats

import paththeory as pt
from paththeory import action as act
from paththeory import exercises
from paththeory.exercises import problems
from paththeory.kernels import gp_kernel
from paththeory.exercises.problems import IMPLEMENT, KINDS, POINTS, check_implementation, expected_outputs

try:
    from paththeory.exercises import WrongAnswer
except ImportError:  # pragma: no cover
    from paththeory.exercises.answers import WrongAnswer

PAGE = Path(__file__).resolve().parents[2] / "book" / "problems.md"
TEXT = PAGE.read_text()

_EXERCISE = re.compile(r"^`{3,}\{exercise\}[^\n]*\n:label: (\S+)", re.MULTILINE)
_SOLUTION = re.compile(r"^`{3,}\{solution(?:-start)?\} (\S+)\n:label: (\S+)", re.MULTILINE)
_CODE_CELL = re.compile(r"^```\{code-cell\} ipython3\n(.*?)^```$", re.MULTILINE | re.DOTALL)


# --------------------------------------------------------------------------- page and registry


def test_every_exercise_is_registered_and_vice_versa():
    labels = _EXERCISE.findall(TEXT)
    assert len(labels) == len(set(labels)), "duplicate exercise labels"
    assert set(labels) == set(KINDS) == set(POINTS)
    assert all(label.startswith("prob-") for label in labels)


def test_every_exercise_has_one_solution_with_the_right_label():
    solutions = _SOLUTION.findall(TEXT)
    targets = [t for t, _ in solutions]
    assert sorted(targets) == sorted(KINDS)
    for target, label in solutions:
        assert label == f"sol-{target}"
    # gated solutions are closed, and only implement problems use them
    gated = re.findall(r"^```\{solution-start\} (\S+)", TEXT, re.MULTILINE)
    assert sorted(gated) == sorted(spec.label for spec in IMPLEMENT.values())
    assert TEXT.count("```{solution-end}") == len(gated)


def test_counts_kinds_and_points():
    kinds = list(KINDS.values())
    assert kinds.count("derivation") >= 6
    assert kinds.count("implement") >= 3
    assert kinds.count("interpret") >= 3
    assert set(kinds) == {"derivation", "implement", "interpret"}
    assert all(isinstance(p, int) and p > 0 for p in POINTS.values())
    assert sorted(spec.label for spec in IMPLEMENT.values()) == sorted(k for k, v in KINDS.items() if v == "implement")
    for key, spec in IMPLEMENT.items():
        assert key == "problems." + spec.label[len("prob-"):].replace("-", "_")


def test_the_points_table_and_totals_match_the_registry():
    rows = re.findall(r"^\| \{ref\}`(prob-[\w-]+)` \| ([^|\n]+) \| (\w+) \| (\d+) \|$", TEXT, re.MULTILINE)
    assert {label: (kind, int(points)) for label, _, kind, points in rows} == {
        label: (KINDS[label], POINTS[label]) for label in KINDS}
    titles = dict(re.findall(r"^`{3,}\{exercise\} ([^\n]+)\n:label: (\S+)", TEXT, re.MULTILINE))
    assert {label: title for label, title, _, _ in rows} == {label: title for title, label in titles.items()}
    total = sum(POINTS.values())
    assert f"({total} in all)" in TEXT
    for kind, name in (("derivation", "Derivations"), ("implement", "Implement it yourself"),
                       ("interpret", "Interpretive questions")):
        points = sum(POINTS[k] for k, v in KINDS.items() if v == kind)
        assert f"**{name}** ({points} points)" in TEXT


def _block(kind: str, label: str) -> str:
    """The body of the ``{exercise}`` (``kind="exercise"``) or ``{solution}`` directive of ``label`` on the page."""
    head = rf"^`{{3,}}\{{exercise\}}[^\n]*\n:label: {re.escape(label)}\n" if kind == "exercise" else (
        rf"^`{{3,}}\{{solution\}} {re.escape(label)}\n")
    found = re.search(head + r"(.*?)^`{3,}$", TEXT, re.MULTILINE | re.DOTALL)
    assert found, f"no {kind} of {label} on the page"
    return found.group(1)


def test_every_derivation_lists_its_parts_with_points_as_the_registry_does():
    """PARTS is the one rubric: its parts sum to the problem's points, the task states each part's
    points in the same order, and the written solution answers each part under its number."""
    derivations = sorted(k for k, v in KINDS.items() if v == "derivation")
    assert sorted(problems.PARTS) == derivations
    for label, parts in problems.PARTS.items():
        assert sum(p.points for p in parts) == POINTS[label], label
        assert all(isinstance(p.points, int) and p.points > 0 and len(p.earns) > 20 for p in parts), label
        stated = re.findall(r"^(\d+)\. \((\d+) points?\) ", _block("exercise", label), re.MULTILINE)
        assert [(n, int(points)) for n, points in stated] == [(p.part, p.points) for p in parts], label
        numbered = re.findall(r"^\d+\. ", _block("exercise", label), re.MULTILINE)
        assert len(numbered) == len(parts), f"{label}: a numbered part without its points"
        headings = re.findall(r"^\*\*(\d+)\.\*\*", _block("solution", label), re.MULTILINE)
        assert headings == [p.part for p in parts], f"{label}: the solution's parts are not the rubric's"
    assert "each numbered part states its points" in TEXT


def test_implement_tasks_give_their_signature_and_their_checks_are_called():
    for spec in IMPLEMENT.values():
        block = TEXT[TEXT.index(f":label: {spec.label}\n"):]
        task = block[: block.index("```{solution-start}")]
        assert spec.signature in task, spec.id
        assert f'check_implementation("{spec.id}", {spec.function})' in block


def test_solution_bodies_are_marked_for_the_student_version():
    for spec in IMPLEMENT.values():
        cell = _solution_cell(spec.function)
        lines = cell.splitlines()
        assert lines[0].startswith(f"def {spec.function}(")
        assert lines[1].strip().startswith('"""')
        assert "### BEGIN SOLUTION" in cell and "### END SOLUTION" in cell
        assert cell.index('"""') < cell.index("### BEGIN SOLUTION")


# --------------------------------------------------------------------------- implement problems


def _solution_cell(function: str) -> str:
    cells = [c for c in _CODE_CELL.findall(TEXT) if c.startswith(f"def {function}(")]
    assert len(cells) == 1, function
    return cells[0]


def _book_solution(function: str):
    namespace = {"np": np}
    exec(compile(_solution_cell(function), f"problems.md:{function}", "exec"), namespace)
    return namespace[function]


@pytest.mark.parametrize("exercise_id", sorted(IMPLEMENT))
def test_book_solution_passes_and_agrees_with_the_reference(exercise_id, capsys):
    spec = IMPLEMENT[exercise_id]
    fn = _book_solution(spec.function)
    assert check_implementation(exercise_id, fn) == 1.0
    assert "Correct" in capsys.readouterr().out
    # and directly, at a tolerance much tighter than the check's
    for args, want in zip(spec.cases(), expected_outputs(exercise_id)):
        got = fn(*args)
        if isinstance(want, tuple):
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("exercise_id", sorted(IMPLEMENT))
def test_hidden_cases_are_seeded_and_differ_from_the_task(exercise_id):
    spec = IMPLEMENT[exercise_id]
    first, second = spec.cases(), spec.cases()
    assert len(first) >= 3
    for a, b in zip(first, second):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    outs = expected_outputs(exercise_id)
    assert len(outs) == len(first)
    # the page's own examples (hand check at U = I, the demos) are not among the hidden cases
    for args in first:
        assert not np.allclose(np.asarray(args[0]), np.eye(np.asarray(args[0]).shape[0]))


def _variants():
    """(exercise id, wrong function, words the diagnosis should contain)."""
    action = _book_solution("one_layer_action")
    predictor = _book_solution("path_predictor")
    overlap = _book_solution("overlap_distance")

    def no_prefactor(U, C, y, n, T, var_a=1.0, var_1=1.0):
        # the energy not divided by the width: entropy + E instead of entropy + E / n
        energy_per_width = action(U, C, y, n, T, var_a, var_1) - action(U, 0 * C, 0 * y, n, 1.0, var_a, var_1)
        return action(U, C, y, n, T, var_a, var_1) + (n - 1) * energy_per_width

    def flipped_energy(U, C, y, n, T, var_a=1.0, var_1=1.0):
        ent = action(U, 0 * C, 0 * y, n, 1.0, var_a, var_1)
        return 2 * ent - action(U, C, y, n, T, var_a, var_1)

    def swapped_variances(U, C, y, n, T, var_a=1.0, var_1=1.0):
        return action(U, C, y, n, T, var_1, var_a)

    def sign_mean(U, a, y, b, T):
        m, v = predictor(U, a, y, b, T)
        return -m, v

    def var_with_noise(U, a, y, b, T):
        m, v = predictor(U, a, y, b, T)
        return m, v + T

    def only_mean(U, a, y, b, T):
        return predictor(U, a, y, b, T)[0]

    def no_width(U, w):
        w = np.asarray(w)
        return overlap(U, w * np.sqrt(w.shape[2]))

    def transposed(U, w):
        w = np.asarray(w)
        return overlap(U, np.swapaxes(w, 1, 2)) if w.shape[1] == w.shape[2] else overlap(U, w[:, ::-1])

    return [
        ("problems.action", no_prefactor, "case 1"),
        ("problems.action", flipped_energy, "case"),
        ("problems.action", swapped_variances, "case 3"),
        ("problems.predictor", sign_mean, "wrong sign"),
        ("problems.predictor", var_with_noise, "item 1"),
        ("problems.predictor", only_mean, "should return"),
        ("problems.overlap_distance", no_width, "case"),
        ("problems.overlap_distance", transposed, "case"),
    ]


@pytest.mark.parametrize("exercise_id, fn, words", _variants())
def test_wrong_functions_are_rejected_without_revealing_the_answer(exercise_id, fn, words, capsys):
    with pytest.raises(WrongAnswer) as info:
        check_implementation(exercise_id, fn)
    message = str(info.value)
    assert words in message, message
    assert exercise_id in message
    _assert_no_expected_value(exercise_id, message + capsys.readouterr().out)


def _assert_no_expected_value(exercise_id: str, text: str) -> None:
    for want in expected_outputs(exercise_id):
        values = np.concatenate([np.ravel(w) for w in want]) if isinstance(want, tuple) else np.ravel(want)
        for v in values:
            for digits in (4, 6):
                assert f"{v:.{digits}f}" not in text, (v, text)


def test_a_raising_function_is_reported_by_case_and_exception():
    def broken(*args):
        raise ValueError("shapes do not match")

    with pytest.raises(WrongAnswer) as info:
        check_implementation("problems.action", broken)
    message = str(info.value)
    assert "case 1" in message and "raised ValueError: shapes do not match" in message
    assert "0 of 5" in message


def test_partial_credit_and_expected_values():
    spec = IMPLEMENT["problems.action"]
    right = spec.reference
    first = spec.cases()[0]

    def sometimes(*args):
        same = all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(args, first))
        return right(*args) if same else 0.0

    assert check_implementation("problems.action", sometimes, partial=True) == pytest.approx(1 / 5)
    with pytest.raises(WrongAnswer):
        check_implementation("problems.action", sometimes)
    # frozen expected outputs are used as given
    frozen = expected_outputs("problems.action")
    assert check_implementation("problems.action", right, expected=frozen) == 1.0
    shifted = [v + 1.0 for v in frozen]
    with pytest.raises(WrongAnswer):
        check_implementation("problems.action", right, expected=shifted)
    with pytest.raises(WrongAnswer):
        check_implementation("problems.action", "not a function")
    with pytest.raises(KeyError):
        check_implementation("problems.nope", right)


def test_answers_of_the_wrong_kind_and_frozen_json_like_outputs():
    with pytest.raises(WrongAnswer) as info:
        check_implementation("problems.overlap_distance", lambda U, w: None)
    assert "should return the relative Frobenius distance" in str(info.value)
    with pytest.raises(WrongAnswer) as info:
        check_implementation("problems.predictor", lambda U, a, y, b, T: (np.zeros(2), np.zeros(2)))
    assert "shape" in str(info.value)
    # outputs frozen as nested lists (e.g. through JSON) are accepted
    spec = IMPLEMENT["problems.predictor"]
    frozen = [[list(map(float, m)), list(map(float, v))] for m, v in expected_outputs("problems.predictor")]
    assert check_implementation("problems.predictor", spec.reference, expected=frozen) == 1.0


def test_expected_outputs_are_plain_numpy():
    for exercise_id in IMPLEMENT:
        for out in expected_outputs(exercise_id):
            items = out if isinstance(out, tuple) else (out,)
            for item in items:
                assert isinstance(item, (float, np.ndarray))
                assert np.all(np.isfinite(item))


# --------------------------------------------------------------------------- the derivations' closed forms


def test_gamma_saddle_and_large_n_form():
    n, var, q = 12.0, 1.3, 2.7
    phi = lambda u, qq=q: n / 2 * (u / var - np.log(u)) + u * qq / 2
    res = optimize.minimize_scalar(phi, bounds=(1e-6, 20), method="bounded", options={"xatol": 1e-12})
    u_saddle = var / (1 + var * q / n)
    assert abs(res.x - u_saddle) < 1e-6
    # -2 ln of the weight at its maximum, minus the same at q = 0 (maximum at U = var): n ln(1 + var q / n)
    assert abs(2 * (phi(u_saddle) - phi(var, 0.0)) - n * np.log1p(var * q / n)) < 1e-12
    weight = lambda u, qq: u ** (n / 2) * np.exp(-n * u / (2 * var) - u * qq / 2)
    ratio = integrate.quad(weight, 0, np.inf, args=(q,))[0] / integrate.quad(weight, 0, np.inf, args=(0.0,))[0]
    assert abs(ratio / (1 + var * q / n) ** (-n / 2 - 1) - 1) < 1e-9


def test_gp_point_minimum_value():
    heads, widths, variances = (2, 3), (5.0, 7.0, 13.0), (1.0, 0.6, 1.7, 2.1)
    gp = [jnp.asarray(u) for u in act.gp_order_parameters(heads, variances)]
    value = float(act.entropy(gp, widths, heads, variances))
    n0, n1, n2 = widths
    closed = (n2 * (1 - np.log(variances[3])) + n0 * 6 * (1 - np.log(variances[1]))
              + n1 * 3 * (1 - np.log(variances[2])))
    assert abs(value - closed) < 1e-10 * abs(closed)
    # and 70 for two layers of two heads at width 10, unit variances
    assert float(act.entropy([jnp.eye(4), jnp.eye(2)], (10.0,) * 3, (2, 2), (1.0,) * 4)) == pytest.approx(70.0)


def test_prior_covariance_is_the_gp_kernel_at_finite_width():
    rng = np.random.default_rng(4)
    layers = [pt.QKAttention(rng.normal(size=(h, 3, 5)), rng.normal(size=(h, 3, 5))) for h in (2, 2)]
    arch = pt.Architecture(layers, readout="mean", variances=(1.3, 0.7, 1.4, 0.9))
    x = rng.normal(size=(3, 4, 5))
    widths = (2, 3, 2)

    @jax.jit
    def outputs(keys):
        return jax.vmap(lambda k: pt.network_output(arch, pt.sample_prior(arch, widths, 5, k), x))(keys)

    f = np.asarray(outputs(jax.random.split(jax.random.PRNGKey(0), 200_000)))  # [S, 3]
    products = f[:, :, None] * f[:, None, :]
    se = products.std(axis=0) / np.sqrt(len(f))
    gp = np.asarray(gp_kernel(arch, pt.path_features(arch, x)))
    assert np.all(np.abs(products.mean(axis=0) - gp) < 5 * se), (products.mean(axis=0), gp, se)


def test_one_path_prior_kurtosis():
    rng = np.random.default_rng(5)
    n0, n1, N0, S = 3, 4, 2, 400_000
    m = np.array([0.8, -0.5])
    v0 = rng.normal(size=(S, n0, N0))
    v1 = rng.normal(size=(S, n1, n0))
    a = rng.normal(size=(S, n1))
    f = np.einsum("si,sij,sjk,k->s", a, v1, v0, m) / np.sqrt(n1 * n0 * N0)
    kurtosis = np.mean(f**4) / np.mean(f**2) ** 2
    assert kurtosis == pytest.approx(3 * (1 + 2 / n0) * (1 + 2 / n1), rel=0.06)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_single_path_with_variances(depth):
    rng = np.random.default_rng(depth)
    variances = tuple(float(v) for v in rng.uniform(0.5, 2.0, size=depth + 2))  # sigma_0^2 .. sigma_a^2
    u_gp = variances[-1] * np.prod(variances[1:-1])

    @jax.jit
    def ent(u, logs):
        inner = [jnp.exp(v).reshape(1, 1) for v in logs]
        return act.entropy([jnp.reshape(u, (1, 1))] + inner, (1.0,) * (depth + 1), (1,) * depth, variances)

    for u in (0.3, 1.7, 6.0):
        closed = (depth + 1) * (u / u_gp) ** (1 / (depth + 1)) - np.log(u)
        if depth == 1:
            numeric = float(ent(u, jnp.zeros(0)))
        else:
            numeric = optimize.minimize(lambda p: float(ent(u, jnp.asarray(p))), np.zeros(depth - 1),
                                        method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-13}).fun
        assert numeric == pytest.approx(closed, abs=1e-8)


def test_single_path_unequal_widths_readout_root():
    n0, n1, var_a, var_1, U = 7.0, 19.0, 1.4, 0.6, 2.3
    ua = var_a / (2 * n1) * (n1 - n0 + np.sqrt((n0 - n1) ** 2 + 4 * n0 * n1 * U / (var_a * var_1)))
    package = float(act.readout_order_parameter(U, (n0, n1), (1,), (1.0, var_1, var_a)))
    assert ua == pytest.approx(package, rel=1e-12)


def test_one_path_zero_temperature_cubic():
    rng = np.random.default_rng(11)
    P, N0, N = 6, 9, 10.0
    xi = rng.normal(size=(P, 1, N0)) / 3
    C = np.einsum("man,qan->mq", xi, xi)
    y = np.where(rng.random(P) < 0.5, -1.0, 1.0)
    action = jax.jit(lambda logu: act.action([jnp.exp(logu).reshape(1, 1)], jnp.exp(logu) * C, y, 0.0,
                                             (N, N), (1,), (1.0, 1.0, 1.0)))
    res = optimize.minimize_scalar(lambda s: float(action(s)), bounds=(-6, 6), method="bounded",
                                   options={"xatol": 1e-11})
    alpha, q = P / N, y @ np.linalg.solve(C, y) / N
    roots = np.roots([1.0, -(1 - alpha), 0.0, -q])
    positive = [r.real for r in roots if abs(r.imag) < 1e-12 and r.real > 0]
    assert len(positive) == 1
    assert np.exp(res.x) == pytest.approx(positive[0] ** 2, rel=1e-6)
    # U* > 1 exactly when y^T C^{-1} y > P (g(1) = alpha - q)
    assert (np.exp(res.x) > 1) == (y @ np.linalg.solve(C, y) > P)
    # the mean predictor at (almost) zero temperature does not depend on U
    test = rng.normal(size=(4, 1, N0)) / 3
    means = [np.asarray(pt.predict.mean_predictor(np.array([[u]]), xi, y, test, 1e-9)) for u in (0.2, 5.0)]
    np.testing.assert_allclose(means[0], means[1], rtol=1e-6, atol=1e-8)


def test_tilted_wishart_and_gamma_mean_and_mode():
    rng = np.random.default_rng(2)
    H, n = 3, 9
    B = rng.normal(size=(H, H))
    X = B @ B.T
    scale = np.linalg.inv(n * np.eye(H) + X)
    dist = stats.wishart(df=n, scale=scale)
    large_n = np.linalg.inv(np.eye(H) + X / n)
    np.testing.assert_allclose(dist.mean(), large_n, rtol=1e-12)
    np.testing.assert_allclose(dist.mode(), (1 - (H + 1) / n) * large_n, rtol=1e-12)
    # the large-n weight is stationary at (I + X/n)^{-1}
    grad = n / 2 * (np.eye(H) - np.linalg.inv(large_n)) + X / 2
    np.testing.assert_allclose(grad, 0, atol=1e-12)
    var, q, m = 1.3, 2.0, 11
    c = m / (2 * var) * (1 + var * q / m)
    gamma = stats.gamma(a=m / 2, scale=1 / c)
    assert gamma.mean() == pytest.approx(var / (1 + var * q / m), rel=1e-12)
    mode = optimize.minimize_scalar(lambda u: -gamma.logpdf(u), bounds=(1e-3, 10), method="bounded",
                                    options={"xatol": 1e-12}).x
    assert mode == pytest.approx((1 - 2 / m) * gamma.mean(), rel=1e-7)


def test_skip_level_minimum_and_the_plus_one():
    """prob-skip-level: at fixed A the skip level's term is least at U_sh = 0, U_hh = sigma^2 I_H x A, where it is
    n H D (1 - ln sigma^2) whatever A; a random point of the free blocks lies above; with H in place of H + 1, one
    head and a skip put U_a at 2 sigma_a^2 (the exercise residual.h_instead)."""
    H, D, var, n = 2, 3, 0.5, 10.0
    rng = np.random.default_rng(12)

    def level(U, A):
        both = act.entropy_with_readout([jnp.asarray(U), jnp.asarray(A)], 1.0, (n,) * 3, (H, D), (1.0, var, 1.0, 1.0),
                                        (True, False))
        return float(both - act.entropy_with_readout([jnp.asarray(A)], 1.0, (n,) * 2, (D,), (var, 1.0, 1.0))) / n

    for _ in range(3):
        B = rng.normal(size=(D, D))
        A = B @ B.T + 0.3 * np.eye(D)
        gp = np.kron(np.diag([1.0] + [var] * H), A)
        assert level(gp, A) == pytest.approx(H * D * (1 - np.log(var)), rel=1e-12)
        shift = 0.1 * rng.normal(size=(D, H * D))
        moved = gp.copy()
        moved[:D, D:], moved[D:, :D] = shift, shift.T
        moved[D:, D:] += shift.T @ np.linalg.solve(A, shift)  # the same Schur complement, a cross block
        assert level(moved, A) > level(gp, A)
    assert exercises.solution("residual.h_instead") == pytest.approx(2 * 1.5, rel=1e-8)


def test_registry_module_docstring_example():
    assert problems.IMPLEMENT["problems.action"].function == "one_layer_action"
