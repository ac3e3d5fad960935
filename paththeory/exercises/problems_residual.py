"""The graded set on the residual stream and many outputs (``book/problems_residual.md``): its registry.

The same kinds of problems as :mod:`paththeory.exercises.problems`, labelled ``res-<name>``; the implement
problems have the ids ``"problems_residual.<name>"`` and their references are computed by the package
(:func:`paththeory.action.action` with a skip, :func:`paththeory.predict.mean_predictor` with ``C`` outputs).

Example:
  >>> sorted(IMPLEMENT)
  ['problems_residual.multi_output_mean', 'problems_residual.skip_action']
  >>> sum(POINTS.values())
  40
"""

from __future__ import annotations

import numpy as np

from paththeory.exercises.registry import Implementation, Part, _features, _kernel_action_cases, _random_pd, _x64

#: Exercise label -> kind of every problem of ``book/problems_residual.md``.
KINDS: dict[str, str] = {
    "res-outputs-symmetry": "derivation",
    "res-skip-action": "implement",
    "res-multi-output-mean": "implement",
    "res-all-skip": "interpret",
}

#: Exercise label -> points.
POINTS: dict[str, int] = {
    "res-outputs-symmetry": 10,
    "res-skip-action": 15,
    "res-multi-output-mean": 10,
    "res-all-skip": 5,
}

#: Derivation label -> its rubric (as :data:`paththeory.exercises.problems.PARTS`).
PARTS: dict[str, tuple[Part, ...]] = {
    "res-outputs-symmetry": (
        Part("1", 3, "the kernel of a block-diagonal U with equal blocks written with a Kronecker product; the "
                     "energy and the mean predictor split output by output, each step justified"),
        Part("2", 3, "the partial trace, the determinants and the traces of the entropy evaluated at equal "
                     "blocks; the action as a sum of one-output actions; what a stationary point in this family "
                     "satisfies; the full gradient there, in every output block of U (diagonal blocks included) "
                     "and in U_a; the condition on the dual vectors under which it vanishes, and the case of one "
                     "output without labels judged by it"),
        Part("3", 4, "the invariance of the energy and of the entropy under a rotation of the outputs, each "
                     "term checked; the consequence for the minimiser and for the mean predictor (how the dual "
                     "vector and the test kernel transform), and for a relabelling of the classes"),
    ),
}


# --------------------------------------------------------------------------- problems_residual.skip_action


def _skip_action_cases(seed: int = 5150) -> list[tuple]:
    # (heads, P, N0, width, temperature, var_a, var_1); path 0 is the skip
    return _kernel_action_cases(seed, [
        (1, 8, 5, 6.0, 0.3, 1.0, 1.0),
        (2, 13, 6, 20.0, 0.05, 1.0, 1.0),
        (3, 11, 7, 4.0, 0.7, 1.5, 0.8),
        (2, 17, 5, 150.0, 0.02, 0.7, 1.3),
    ], extra_paths=1)


def _skip_action_reference(U, C, y, n, temperature, var_a=1.0, var_1=1.0) -> float:
    _x64()
    import jax.numpy as jnp

    from paththeory import action as act

    U = np.asarray(U, dtype=float)
    K = np.einsum("ab,abmq->mq", U, np.asarray(C, dtype=float))
    value = act.action([jnp.asarray(U)], jnp.asarray(K), jnp.asarray(y, dtype=float), float(temperature),
                       (float(n), float(n)), (U.shape[0] - 1,), (1.0, float(var_1), float(var_a)),
                       skips=(True,), U_a=float(U[0, 0]))
    return float(value)


# --------------------------------------------------------------------------- problems_residual.multi_output_mean


def _multi_output_cases(seed: int = 2718) -> list[tuple]:
    rng = np.random.default_rng(seed)
    cases = []
    # (outputs, paths, P, P_test, N0, temperature)
    for C, n_paths, P, P_test, dim, T in [(2, 1, 9, 4, 5, 0.2), (3, 2, 15, 6, 7, 0.05), (2, 3, 12, 5, 6, 0.5),
                                          (4, 2, 20, 7, 8, 0.01)]:
        xi = _features(rng, P + P_test, n_paths, dim)
        U = _random_pd(rng, C * n_paths, scale=1.3)
        Y = np.eye(C)[rng.integers(0, C, size=P)]
        cases.append((U, xi[:P], Y, xi[P:], T))
    return cases


def _multi_output_reference(U, xi_train, Y, xi_test, temperature) -> np.ndarray:
    _x64()
    from paththeory.predict import mean_predictor

    return np.asarray(mean_predictor(np.asarray(U, float), np.asarray(xi_train, float), np.asarray(Y, float),
                                     np.asarray(xi_test, float), float(temperature)))


#: Id -> implement problem.
IMPLEMENT: dict[str, Implementation] = {
    "problems_residual.skip_action": Implementation(
        id="problems_residual.skip_action",
        label="res-skip-action",
        function="skip_layer_action",
        signature="def skip_layer_action(U, C, y, n, temperature, var_a=1.0, var_1=1.0):",
        rtol=1e-7,
        atol=1e-9,
        make_cases=_skip_action_cases,
        reference_fn=_skip_action_reference,
        output="the action per unit width S/n, one float",
    ),
    "problems_residual.multi_output_mean": Implementation(
        id="problems_residual.multi_output_mean",
        label="res-multi-output-mean",
        function="multi_output_mean",
        signature="def multi_output_mean(U, xi_train, Y, xi_test, temperature):",
        rtol=1e-6,
        atol=1e-9,
        make_cases=_multi_output_cases,
        reference_fn=_multi_output_reference,
        output="the mean predictor, an array of shape [P_test, C]",
    ),
}
