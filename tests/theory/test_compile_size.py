"""The solver compiles each phase's objective once: one L-BFGS loop over all phases (issue 50, "Compile in seconds").

In mixed precision with the Hessian restart the solver used to run three L-BFGS loops, each inlining the action and
its gradient in its own precision, plus three evaluations between them: six copies of the ``P x P`` factor and its
unrolled inverse. One loop whose body evaluates once, in the precision of its phase, holds one copy per precision.
The inverse of the factor halves a fixed number of times, so the program is the same size at every ``P``; and the
benchmark times its compilations with the persistent compilation cache off. The entropy's derivatives go through the
inverse of its small matrices, so the Hessian restart (second order) holds few triangular solves; and a solve stopped at
``max_iter`` (the benchmark's one-iteration compile timing) does not compute the restart.
"""

from __future__ import annotations

import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

# Program sizes and compile bookkeeping of this jax: the lower-bounds run (.ci/lower-bounds) leaves them out.
pytestmark = pytest.mark.slow

from paththeory import action as act
from paththeory import solve as slv
from paththeory.model import path_features
from paththeory.tasks import markov


def _theory(precision: str, hessian: bool, n_examples: int = 60) -> slv.Theory:
    """The Markov task at P = ``n_examples`` (4 paths; 60 by default)."""
    arch = markov.four_paths()
    data = markov.sample_task(n_examples)
    return slv.Theory(arch, path_features(arch, data.x), data.y, precision=precision, hessian=hessian)


@pytest.fixture(scope="module")
def small_mixed():
    """Mixed precision with the Hessian restart forced: every phase of the solver."""
    return _theory("mixed", True)


def _solver_program(theory: slv.Theory):
    """The optimised program (an executable) the solver compiles for ``theory``, compiled afresh."""
    solver = slv.COMPILED_SOLVER
    solver.executables.clear()
    before, solver.measure = len(solver.compilations), True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", slv.ConvergenceWarning)
            theory.solve(10.0, 0.01, max_iter=1)
    finally:
        solver.measure = False
    (record,) = solver.compilations[before:]
    del solver.compilations[before:]
    return record["executable"]


def _factorisations(theory: slv.Theory) -> dict[str, int]:
    """Cholesky factorisations (LAPACK ``potrf`` calls, by precision ``s``/``d``) in the optimised program the
    solver compiles for ``theory``."""
    hlo = _solver_program(theory).as_text()
    return {kind: hlo.count(f'custom_call_target="lapack_{kind}potrf') for kind in "sd"}


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="LAPACK's names: the CPU program")
def test_the_mixed_precision_program_inlines_the_objective_once_per_precision(small_mixed):
    """The mixed-precision program with the restart holds as many float64 factorisations as the float64 program
    without it (one objective: action and gradient), and at most twice as many in float32 (the objective and the
    Hessian). Measured at P = 60: 3 and 6 (9 and 12 with a loop per phase), the float64 program 3 (6 before: its
    start point was evaluated outside the loop)."""
    mixed, double = _factorisations(small_mixed), _factorisations(_theory("double", False))
    assert mixed["d"] == double["d"] and mixed["s"] <= 2 * double["d"], (mixed, double)


def test_one_loop_takes_the_same_steps_as_a_loop_per_phase(small_mixed):
    """The fused loop (CPU) and the loop per phase (``vmap``, GPU) reach the same point by the same iterations."""
    theory = small_mixed
    f32 = jnp.float32
    widths = jnp.asarray(theory.arch.widths(10.0))
    temperature = jnp.asarray(0.01)
    data = slv._Data(theory.operator, theory.targets, temperature, widths, theory.features)
    low = slv._Data(theory._low_operator, theory.targets.astype(f32), temperature.astype(f32), widths.astype(f32),
                    theory.features.astype(f32))
    opts = dict(sizes=theory.sizes, scales=theory.scales, heads=theory.arch.heads, variances=theory.arch.variances,
                skips=theory.skips)
    theta0 = jnp.zeros(slv.parameter_count(theory.sizes))
    runs = {fused: jax.jit(partial(slv._minimise, low=low, hessian=True, fused=fused, **opts))(
        theta0, data, jnp.asarray(1e-9), jnp.asarray(500)) for fused in (True, False)}
    one, per_phase = runs[True], runs[False]
    assert int(one.status) == int(per_phase.status) == 1
    assert (int(one.it), int(one.evals)) == (int(per_phase.it), int(per_phase.evals))
    # The two programs round differently (XLA fuses them differently, more so across versions): the end points
    # agree to what the stopping rule fixes, |theta_1 - theta_2| <= (|g_1| + |g_2|) / lambda_min(H) (both near one
    # minimum of a locally strongly convex S/N; measured here 0 apart, 4e-10 at jax 0.8.0, the bound ~2e-8).
    objective = partial(slv._objective, data=data, **opts)
    grad, hessian = jax.jit(jax.grad(objective)), jax.jit(jax.hessian(objective))  # one program each, not eager ops
    slack = sum(float(jnp.linalg.norm(grad(run.theta))) for run in (one, per_phase))
    least = min(float(jnp.linalg.eigvalsh(hessian(run.theta))[0]) for run in (one, per_phase))
    assert least > 0 and float(jnp.linalg.norm(one.theta - per_phase.theta)) <= slack / least



def _instructions(executable) -> int:
    """The instructions of a compiled program (lines of its optimised HLO that define a value)."""
    return executable.as_text().count(" = ")


def test_the_energy_gradient_compiles_to_the_same_program_at_every_P():
    """The energy's gradient inverts the ``P x P`` factor (:func:`~paththeory.action.inverse_upper_triangular`)
    by a fixed depth of halving: as many instructions at P = 1200 as at P = 300. Halving down to 32 rows unrolled
    a solve per block: 768 and 2916 instructions there (226 and 226 now)."""
    def count(p):
        grad = jax.jit(jax.grad(act.energy)).lower(jnp.eye(p), jnp.ones(p), 0.1).compile()
        return _instructions(grad)

    small, large = count(300), count(1200)
    assert large <= 1.02 * small, (small, large)


def test_the_solver_program_does_not_grow_with_P():
    """The solver's compiled program (float64, L-BFGS alone) at P = 300 is no larger than at P = 150 (2% for the
    compiler's choices at each size). With the inverse halved down to 32 rows it grew with every doubling of P
    (3178 instructions at P = 200, 3512 at P = 400; 3010 and 3006 with the fixed depth)."""
    small, large = (_instructions(_solver_program(_theory("double", False, p))) for p in (150, 300))
    assert large <= 1.02 * small, (small, large)


# A fresh process with a persistent cache in a folder of its own: a small program compiled through the benchmark's
# compile timing, then the same kind of program outside it; the cache's state and the entries written each time.
BENCH_PROGRAM = """
import json, sys
from pathlib import Path
import jax, jax.numpy as jnp
from paththeory import _compilation_cache
from paththeory.experiments import bench

folder = Path(sys.argv[1])
seen = {}

def first_solve():
    seen["in_use"] = _compilation_cache.in_use()
    jax.jit(lambda x: jnp.linalg.cholesky(x @ x.T + jnp.eye(3)))(jnp.ones((3, 3))).block_until_ready()
    seen["entries"] = len(list(folder.iterdir())) if folder.exists() else 0

bench._compiled_during(first_solve)
jax.jit(lambda x: jnp.linalg.cholesky(x @ x.T + 2 * jnp.eye(3)))(jnp.ones((3, 3))).block_until_ready()
print(json.dumps({**seen, "in_use_after": _compilation_cache.in_use(), "entries_after": len(list(folder.iterdir()))}))
"""


def test_the_benchmark_times_compilations_with_the_persistent_cache_off(tmp_path):
    """``bench`` times a first solve with JAX's persistent cache off (a program loaded from it is no compilation):
    nothing is read or written meanwhile, and the cache is back on after it."""
    import json
    import os
    import subprocess
    import sys

    folder = tmp_path / "jax"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PATHTHEORY_", "JAX_COMPILATION"))}
    env.update(PATHTHEORY_COMPILATION_CACHE=str(folder), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    out = subprocess.run([sys.executable, "-c", BENCH_PROGRAM, str(folder)], env=env, capture_output=True,
                         text=True, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["in_use"] is False and seen["entries"] == 0, seen
    assert seen["in_use_after"] is True and seen["entries_after"] > 0, seen


def test_the_entropy_derivatives_are_products_past_the_first_order():
    """The entropy's log-determinants and ``Tr(A^{-1} B)`` have their derivatives written through the inverse
    (:func:`~paththeory.action._inverse_pd`), so their second and third derivatives are the factorisations' along
    symmetric directions (the solver's), to rounding."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 5))
    b = rng.normal(size=(5, 5))
    rows, cols = np.tril_indices(5)
    B = jnp.asarray(b + b.T)

    def sym(v):
        lower = jnp.zeros((5, 5)).at[rows, cols].set(v)
        return lower + jnp.tril(lower, -1).T

    def new(v):
        return act._logdet_pd(sym(v)) + act._trace_solve(sym(v), B)

    def factorised(v):
        U = sym(v)
        return 2.0 * jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(U)))) + jnp.trace(jnp.linalg.solve(U, B))

    v = jnp.asarray((a @ a.T + 5.0 * np.eye(5))[rows, cols])
    for order in (jax.grad, jax.hessian, lambda f: jax.jacfwd(jax.hessian(f))):  # jitted: one program each
        np.testing.assert_allclose(jax.jit(order(new))(v), jax.jit(order(factorised))(v), rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def three_outputs():
    """The Markov task at P = 40 with C = 3 one-hot outputs (levels of 12 and 6 paths), float64, the restart on:
    ``(theory, data, opts)`` for :func:`~paththeory.solve._hessian` and :class:`~paththeory.solve._Steps`."""
    arch = markov.four_paths()
    data = markov.sample_task(40)
    teacher = np.random.default_rng(0).normal(size=(data.x.shape[2], 3))
    labels = np.eye(3)[np.argmax(data.x.mean(axis=1) @ teacher, axis=1)]
    theory = slv.Theory(arch, path_features(arch, data.x), labels, precision="double", hessian=True)
    problem = slv._Data(theory.operator, theory.targets, jnp.asarray(0.01), jnp.asarray(arch.widths(10.0)),
                        theory.features)
    opts = dict(sizes=theory.sizes, scales=theory.scales, heads=arch.heads, variances=arch.variances,
                skips=theory.skips)
    return theory, problem, opts


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="LAPACK's names: the CPU program")
def test_the_many_output_restart_holds_few_triangular_solves(three_outputs):
    """The Hessian restart with C = 3 outputs compiles to 17 triangular solves (LAPACK ``trsm``) and 2823
    instructions; differentiated twice through the entropy's Cholesky factors and LU solves it held 55 and 4530 (at
    the Omniglot size the restart was 40% of the solver's program)."""
    theory, problem, opts = three_outputs
    hlo = jax.jit(lambda t: slv._hessian(t, problem, **opts)).lower(
        jnp.asarray(theory._initial_theta(None))).compile().as_text()
    assert hlo.count("trsm_ffi") <= 24, hlo.count("trsm_ffi")


def test_a_solve_stopped_at_max_iter_skips_the_restart(three_outputs):
    """At the restart a solve that has reached ``max_iter`` (status 2) stops: its initial matrix is not computed
    (left zero, no factor), while a solve that goes on gets the factor of the Hessian."""
    theory, problem, opts = three_outputs
    steps = slv._Steps(problem, None, True, 1e-9, 1, 0.0, opts)
    theta = jnp.asarray(theory._initial_theta(None))
    d = theta.shape[0]
    h0 = jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), jax.eval_shape(steps.restart_matrix, theta))
    x = slv._Extra(jnp.array(0), jnp.asarray(1e-9), jnp.zeros(1), h0)
    for status, factored in ((2, False), (0, True)):
        s = slv._State(theta, jnp.asarray(1.0), jnp.zeros(d), jnp.asarray(1.0), jnp.zeros((2, d)), jnp.zeros((2, d)),
                       jnp.array(0), jnp.array(1), jnp.array(1), jnp.array(status), jnp.array(0))
        _, after = jax.jit(steps.after_restart)(s, x)
        assert bool(after.h0.ok) is factored and bool(jnp.any(after.h0.upper != 0)) is factored
