"""The graded set on the solver and the sampler (``book/problems_inference.md``): its registry.

The same kinds of problems as :mod:`paththeory.exercises.problems`, labelled ``inf-<name>``; the implement
problems have the ids ``"problems_inference.<name>"`` and their references are computed by the package (the
gradient of :func:`paththeory.action.action` by automatic differentiation, and
:func:`paththeory.sampling.path_form.marginal_log_likelihood`).

Example:
  >>> sorted(IMPLEMENT)
  ['problems_inference.action_gradient', 'problems_inference.readout_evidence']
  >>> sum(POINTS.values())
  40
"""

from __future__ import annotations

import numpy as np

from paththeory.exercises.registry import Implementation, Part, _action_cases, _x64

#: Exercise label -> kind of every problem of ``book/problems_inference.md``.
KINDS: dict[str, str] = {
    "inf-collapsed-readout": "derivation",
    "inf-action-gradient": "implement",
    "inf-readout-evidence": "implement",
    "inf-tolerance": "interpret",
}

#: Exercise label -> points.
POINTS: dict[str, int] = {
    "inf-collapsed-readout": 10,
    "inf-action-gradient": 15,
    "inf-readout-evidence": 10,
    "inf-tolerance": 5,
}

#: Derivation label -> its rubric (as :data:`paththeory.exercises.problems.PARTS`).
PARTS: dict[str, tuple[Part, ...]] = {
    "inf-collapsed-readout": (
        Part("1", 2, "the law of the outputs given the design matrix, with its covariance; the log-evidence "
                     "written out, constant included; the columns of several outputs shown independent"),
        Part("2", 3, "the conditional law of the readout by completing the square; the push-through and "
                     "determinant identities proved; which matrix to factor and why"),
        Part("3", 2, "the rule's draw shown Gaussian, with the conditional's mean and covariance computed"),
        Part("4", 3, "the autocorrelation of the chain; the limit of N_draws times the variance of the mean of "
                     "N_draws draws, with the integrated autocorrelation time summed; the effective sample size and "
                     "the numbers asked"),
    ),
}


# --------------------------------------------------------------------------- problems_inference.action_gradient


def _gradient_cases(seed: int = 8675309) -> list[tuple]:
    return _action_cases(seed)


def _gradient_reference(U, C, y, n, temperature, var_a=1.0, var_1=1.0) -> np.ndarray:
    """The symmetric gradient of the package's S/N: autodiff, symmetrised (only symmetric directions count)."""
    _x64()
    import jax
    import jax.numpy as jnp

    from paththeory import action as act

    C, y = jnp.asarray(C, dtype=float), jnp.asarray(y, dtype=float)
    U = jnp.asarray(U, dtype=float)

    def per_width(u):
        K = jnp.einsum("ab,abmq->mq", u, C)
        return act.action([u], K, y, float(temperature), (float(n), float(n)), (U.shape[0],),
                          (1.0, float(var_1), float(var_a)))

    g = np.asarray(jax.grad(per_width)(U))
    return 0.5 * (g + g.T)


# --------------------------------------------------------------------------- problems_inference.readout_evidence


def _evidence_cases(seed: int = 1618) -> list[tuple]:
    rng = np.random.default_rng(seed)
    cases = []
    # (P, n_L, outputs (0: labels [P]), temperature)
    for P, width, C, T in [(10, 4, 0, 0.3), (8, 15, 0, 0.05), (14, 6, 3, 0.5), (9, 12, 2, 1.2)]:
        phi = rng.normal(size=(P, width)) / np.sqrt(width)
        Y = rng.normal(size=(P, C)) if C else np.where(rng.random(P) < 0.5, -1.0, 1.0)
        cases.append((phi, Y, T))
    return cases


def _evidence_reference(phi, Y, temperature) -> float:
    _x64()
    from paththeory.sampling.path_form import marginal_log_likelihood

    return float(marginal_log_likelihood(np.asarray(phi, float), np.asarray(Y, float), float(temperature)))


#: Id -> implement problem.
IMPLEMENT: dict[str, Implementation] = {
    "problems_inference.action_gradient": Implementation(
        id="problems_inference.action_gradient",
        label="inf-action-gradient",
        function="action_gradient",
        signature="def action_gradient(U, C, y, n, temperature, var_a=1.0, var_1=1.0):",
        rtol=1e-6,
        atol=1e-9,
        make_cases=_gradient_cases,
        reference_fn=_gradient_reference,
        output="the symmetric gradient of S/n, an array of shape [H, H]",
    ),
    "problems_inference.readout_evidence": Implementation(
        id="problems_inference.readout_evidence",
        label="inf-readout-evidence",
        function="readout_log_evidence",
        signature="def readout_log_evidence(phi, Y, temperature):",
        rtol=1e-8,
        atol=1e-9,
        make_cases=_evidence_cases,
        reference_fn=_evidence_reference,
        output="the log-evidence, one float",
    ),
}
