"""Shape buckets (issue 50, "Compile in seconds"): ``Theory(..., bucket=True)`` pads the training set to
:func:`~paththeory.solve.bucket_size` with zero features and zero targets, so that nearby ``P`` share one compiled
solver, and takes the padding out of the action exactly: the same ``U`` as the unpadded solve."""

from __future__ import annotations

import numpy as np
import pytest

from paththeory import solve as slv
from paththeory.model import path_features
from paththeory.tasks import markov

#: ``U`` of the padded solve against the unpadded one, relative to ``max |U|``, both to ``tol = 1e-11`` (measured
#: 3e-14 with one output, 4e-13 with three outputs in mixed precision with the Hessian restart).
U_RTOL = 1e-10


def test_bucket_sizes_pad_by_at_most_a_quarter_and_never_shrink():
    sizes = [slv.bucket_size(p) for p in range(1, 5001)]
    assert all(b >= p for p, b in zip(range(1, 5001), sizes))
    assert all(b <= 1.25 * p for p, b in zip(range(4, 5001), sizes[3:]))
    assert sizes == sorted(sizes)
    assert len(set(sizes[99:1000])) == 14  # P = 100..1000: 14 programs instead of 901


def _solve(theory: slv.Theory) -> tuple[slv.Solution, int]:
    """The solve at N = 30, T = 0.01 to ``tol = 1e-11`` and the programs it compiled."""
    solver = slv.COMPILED_SOLVER
    before, solver.measure = len(solver.compilations), True
    try:
        sol = theory.solve(30.0, 0.01, tol=1e-11)
    finally:
        solver.measure = False
    compiled = len(solver.compilations) - before
    del solver.compilations[before:]
    return sol, compiled


def _agree(padded: slv.Solution, plain: slv.Solution) -> None:
    assert padded.report["converged"] and plain.report["converged"]
    assert np.max(np.abs(padded.U - plain.U)) <= U_RTOL * np.max(np.abs(plain.U))
    assert padded.report["action"] == pytest.approx(plain.report["action"], rel=1e-12)
    np.testing.assert_allclose(padded.U_a, plain.U_a, rtol=U_RTOL)


def test_two_sizes_in_one_bucket_compile_once_and_solve_as_unpadded():
    """P = 100 and 110 (bucket 112): the second padded solve compiles nothing, and each padded solve finds the
    unpadded ``U`` and action."""
    arch = markov.four_paths()
    compiled = []
    for p in (100, 110):
        data = markov.sample_task(p)
        feats = path_features(arch, data.x)
        plain, _ = _solve(slv.Theory(arch, feats, data.y))
        padded_theory = slv.Theory(arch, feats, data.y, bucket=True)
        padded, count = _solve(padded_theory)
        compiled.append(count)
        assert padded_theory._solver_data[1].shape == (112,)
        _agree(padded, plain)
    assert compiled[1] == 0, compiled


@pytest.mark.slow
def test_padding_is_exact_with_many_outputs_in_mixed_precision_with_the_hessian():
    """Three outputs (the padded ``C P`` kernel), the float32 phase and the Hessian restart from the padded
    features: the same ``U`` as the unpadded solve."""
    arch = markov.four_paths()
    data = markov.sample_task(66)
    teacher = np.random.default_rng(0).normal(size=(data.x.shape[2], 3))
    labels = np.eye(3)[np.argmax(data.x.mean(axis=1) @ teacher, axis=1)]
    feats = path_features(arch, data.x)
    opts = dict(precision="mixed", hessian=True)
    plain, _ = _solve(slv.Theory(arch, feats, labels, **opts))
    padded, _ = _solve(slv.Theory(arch, feats, labels, bucket=True, **opts))
    assert padded.report["hessian"] and padded.report["precision"] == "mixed"
    _agree(padded, plain)
