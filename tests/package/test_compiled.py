"""paththeory._compiled: programs compiled before they run, one executable per argument signature."""

import platform

import jax.numpy as jnp
import numpy as np
import pytest

from paththeory import _compiled


def test_precompiled_matches_jit_and_compiles_once_per_signature(monkeypatch):
    calls = []
    monkeypatch.setattr(_compiled, "trim_heap", lambda: calls.append("trim") or True)
    run = _compiled.Precompiled(lambda x, y, *, k: k * x + (0.0 if y is None else y), ("k",), size=2)
    x, y = jnp.arange(3.0), jnp.ones(3)
    np.testing.assert_array_equal(run(x, y, k=2), 2 * x + y)
    np.testing.assert_array_equal(run(x + 1, y, k=2), 2 * (x + 1) + y)  # same signature: no new compilation
    assert len(run.executables) == 1 and calls == ["trim"]
    np.testing.assert_array_equal(run(x, y, k=3), 3 * x + y)  # a new static argument
    np.testing.assert_array_equal(run(x, None, k=3), 3 * x)  # a None leaf: another tree
    assert len(run.executables) == 2 and calls == ["trim"] * 3  # the least recently used one was dropped
    assert (_compiled.signature((x, y)), (("k", 2),)) not in run.executables
    assert _compiled.signature((jnp.ones(3, jnp.int32),)) != _compiled.signature((jnp.ones(3),))
    assert _compiled.signature((jnp.asarray(1.0),)) != _compiled.signature((1.0,))  # weak type
    with pytest.raises(TypeError, match="not static arguments.*positionally"):
        run(x, y=y, k=2)


def test_measured_compilations_record_their_time_and_program_size():
    """With ``measure`` set, each compilation (and only a compilation) is recorded; a program that inlines a larger
    computation is larger."""
    small = _compiled.Precompiled(lambda x: x + 1.0)
    large = _compiled.Precompiled(lambda x: jnp.sin(jnp.cumsum(jnp.exp(x) @ jnp.outer(x, x))) + jnp.linalg.norm(x))
    for run in (small, large):
        run(jnp.ones(4))  # not measured
        run.measure = True
        run(jnp.ones(4))  # cached: nothing compiled
        run(jnp.ones(5))
    assert [len(r.compilations) for r in (small, large)] == [1, 1]
    record = small.compilations[0]
    assert record["seconds"] > 0 and _compiled.program_size(record["executable"]) > 0
    assert record["lowering_seconds"] > 0 and record["xla_seconds"] > 0
    assert record["lowering_seconds"] + record["xla_seconds"] == pytest.approx(record["seconds"], rel=1e-12)
    assert _compiled.program_size(large.compilations[0]["executable"]) > _compiled.program_size(record["executable"])


def test_the_solver_reuses_its_compiled_program():
    from paththeory import solve as slv
    from paththeory.tasks.examples import model_problem
    import paththeory as pt

    arch, _, x = model_problem("mean")
    theory = slv.Theory(arch, pt.path_features(arch, x), np.array([1.0, -1.0, 1.0, -1.0]))
    theory.solve(10, 0.1)
    before = len(slv._minimise_many_jit.executables)
    theory.solve(12, 0.2)  # other values, same signature
    assert len(slv._minimise_many_jit.executables) == before


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_the_heap_can_be_trimmed_with_glibc():
    assert _compiled._malloc_trim() is not None and isinstance(_compiled.trim_heap(), bool)
