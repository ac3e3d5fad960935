"""The graded sets beyond the first (book/problems_residual.md, book/problems_inference.md): each page agrees with
its registry (labels, points table, the parts of each derivation and their points, the implement tasks' signatures
and checks), and the derivations' results hold numerically against the package."""

from __future__ import annotations

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from paththeory import action as act
from paththeory.exercises import sets
from paththeory.kernels import kernel_matrix
from paththeory.sampling.diagnostics import effective_sample_size

BOOK = Path(__file__).resolve().parents[2] / "book"
NEW_SETS = ["problems_residual", "problems_inference"]

_EXERCISE = re.compile(r"^`{3,}\{exercise\} ([^\n]+)\n:label: (\S+)", re.MULTILINE)
_SOLUTION = re.compile(r"^`{3,}\{solution(?:-start)?\} (\S+)\n:label: (\S+)", re.MULTILINE)


def _block(text: str, kind: str, label: str) -> str:
    head = rf"^`{{3,}}\{{exercise\}}[^\n]*\n:label: {re.escape(label)}\n" if kind == "exercise" else (
        rf"^`{{3,}}\{{solution\}} {re.escape(label)}\n")
    found = re.search(head + r"(.*?)^`{3,}$", text, re.MULTILINE | re.DOTALL)
    assert found, f"no {kind} of {label}"
    return found.group(1)


@pytest.mark.parametrize("name", NEW_SETS)
def test_the_page_agrees_with_its_registry(name):
    text, module = (BOOK / f"{name}.md").read_text(), sets.SETS[name]
    titles = {label: title for title, label in _EXERCISE.findall(text)}
    assert set(titles) == set(module.KINDS) == set(module.POINTS)
    kinds = set(module.KINDS.values())
    assert kinds == {"derivation", "implement", "interpret"}, "a derivation, implement problems, an interpretation"
    assert sum(v == "implement" for v in module.KINDS.values()) >= 2
    solutions = _SOLUTION.findall(text)
    assert sorted(t for t, _ in solutions) == sorted(module.KINDS) and all(s == f"sol-{t}" for t, s in solutions)
    gated = re.findall(r"^```\{solution-start\} (\S+)", text, re.MULTILINE)
    assert sorted(gated) == sorted(spec.label for spec in module.IMPLEMENT.values())
    assert text.count("```{solution-end}") == len(gated)
    rows = re.findall(r"^\| \{ref\}`([\w-]+)` \| ([^|\n]+) \| (\w+) \| (\d+) \|$", text, re.MULTILINE)
    assert {label: (title, kind, int(points)) for label, title, kind, points in rows} == {
        label: (titles[label], module.KINDS[label], module.POINTS[label])
        for label in module.KINDS}
    for label, parts in module.PARTS.items():
        stated = re.findall(r"^(\d+)\. \((\d+) points?\) ", _block(text, "exercise", label), re.MULTILINE)
        assert [(n, int(p)) for n, p in stated] == [(p.part, p.points) for p in parts], label
        assert re.findall(r"^\*\*(\d+)\.\*\*", _block(text, "solution", label), re.MULTILINE) == [p.part for p in parts]
    for spec in module.IMPLEMENT.values():
        block = text[text.index(f":label: {spec.label}\n"):]
        assert spec.signature in block[: block.index("```{solution-start}")], spec.id
        assert f'check_implementation("{spec.id}", {spec.function})' in block


# --------------------------------------------------------------------------- the derivations, numerically


def _multi_output_problem(seed: int, C: int = 2, H: int = 2, P: int = 7, N0: int = 5):
    rng = np.random.default_rng(seed)
    xi = rng.normal(size=(P, H, N0)) / np.sqrt(N0 * H)
    B = rng.normal(size=(C * H, C * H))
    return xi, B @ B.T / (C * H) + 0.5 * np.eye(C * H), rng.normal(size=(P, C))


def _action(U, xi, Y, U_a=None, n=9.0, T=0.3, variances=(1.0, 0.8, 1.4)):
    jax.config.update("jax_enable_x64", True)
    C = Y.shape[1]
    K = kernel_matrix(U, xi, n_outputs=C)
    return float(act.action([jnp.asarray(U)], K, jnp.asarray(Y.T.reshape(-1)), T, (n, n), (xi.shape[1],),
                            variances, U_a=U_a))


def test_a_rotation_of_the_outputs_leaves_the_action_unchanged():
    xi, U, Y = _multi_output_problem(0)
    angle = 0.7
    O = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    rotate = np.kron(O, np.eye(xi.shape[1]))
    assert _action(rotate.T @ U @ rotate, xi, Y @ O) == pytest.approx(_action(U, xi, Y), rel=1e-10)
    swap = np.kron(np.array([[0.0, 1.0], [1.0, 0.0]]), np.eye(xi.shape[1]))  # a permutation of the classes
    assert _action(swap.T @ U @ swap, xi, Y[:, ::-1]) == pytest.approx(_action(U, xi, Y), rel=1e-10)


def test_equal_blocks_split_the_action_output_by_output():
    xi, U, Y = _multi_output_problem(1)
    U1, u = U[:2, :2], 1.3
    together = _action(np.kron(np.eye(2), U1), xi, Y, U_a=u * np.eye(2))
    apart = sum(_action(U1, xi, Y[:, [c]], U_a=u) for c in range(2))
    assert together == pytest.approx(apart, rel=1e-10)


def test_at_equal_blocks_the_full_gradient_is_the_shared_pull_minus_the_dual_vectors_overlaps():
    """res-outputs-symmetry, part 2: dS/dU^{cc'}_{hh'} = delta_{cc'} A_{hh'} - psi_c^T C^{hh'} psi_{c'}, so with one
    output without labels the off-diagonal blocks vanish but the diagonal ones differ: never stationary."""
    jax.config.update("jax_enable_x64", True)
    xi, U, Y = _multi_output_problem(4)
    Y[:, 1] = 0.0  # the second output has no labels
    (P, H, _), C, n, T, var_1, u = xi.shape, 2, 9.0, 0.3, 0.8, 1.3
    U_path = U[:H, :H]

    def per_width(U_full):
        K = kernel_matrix(U_full, xi, n_outputs=C)
        return act.action([U_full], K, jnp.asarray(Y.T.reshape(-1)), T, (n, n), (H,), (1.0, var_1, 1.4),
                          U_a=u * jnp.eye(C))

    grad = np.asarray(jax.grad(per_width)(jnp.asarray(np.kron(np.eye(C), U_path))))
    grad = n * 0.5 * (grad + grad.T)  # the symmetric gradient of S
    kernels = np.einsum("man,qbn->abmq", xi, xi)
    K_path = np.einsum("ab,abmq->mq", U_path, kernels) + T * np.eye(P)
    Psi = np.linalg.solve(K_path, Y)
    A = n * (np.eye(H) / (var_1 * u) - np.linalg.inv(U_path)) + np.einsum("qm,abmq->ab", np.linalg.inv(K_path),
                                                                          kernels)
    pull = np.einsum("mc,abmq,qd->cadb", Psi, kernels, Psi)
    assert np.allclose(grad, (np.einsum("cd,ab->cadb", np.eye(C), A) - pull).reshape(C * H, C * H), atol=1e-10)
    assert np.allclose(grad[:H, H:], 0.0, atol=1e-12)
    assert np.allclose(grad[H:, H:] - grad[:H, :H], pull[0, :, 0, :]) and np.abs(pull[0, :, 0, :]).max() > 0.1


def test_matheron_draws_have_the_conditional_covariance_and_the_determinants_agree():
    rng = np.random.default_rng(2)
    P, n, var, T = 6, 9, 0.7, 0.4
    J = rng.normal(size=(P, n))
    S = var * J @ J.T + T * np.eye(P)
    G = var * J.T @ np.linalg.inv(S)
    rule = var * (np.eye(n) - G @ J) @ (np.eye(n) - G @ J).T + T * G @ G.T
    assert np.allclose(rule, np.linalg.inv(np.eye(n) / var + J.T @ J / T), rtol=1e-10, atol=1e-12)
    Z = J / np.sqrt(n)
    assert np.linalg.slogdet(T * np.eye(P) + Z @ Z.T)[1] == pytest.approx(
        (P - n) * np.log(T) + np.linalg.slogdet(T * np.eye(n) + Z.T @ Z)[1], rel=1e-12)


def test_an_ar1_chain_has_the_effective_sample_size_derived():
    rng = np.random.default_rng(3)
    n, rho = 20_000, 0.9
    x = np.empty(n)
    x[0] = rng.normal()
    noise = rng.normal(size=n) * np.sqrt(1 - rho**2)
    for i in range(1, n):
        x[i] = rho * x[i - 1] + noise[i]
    assert effective_sample_size(x[None]) == pytest.approx(n * (1 - rho) / (1 + rho), rel=0.2)
