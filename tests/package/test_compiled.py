"""paththeory._compiled: programs compiled before they run, one executable per argument signature."""

import jax
import jax.numpy as jnp
import numpy as np

from paththeory import _compiled


def test_precompiled_matches_jit_and_compiles_once_per_signature(monkeypatch):
    calls = []
    monkeypatch.setattr(_compiled, "trim_heap", lambda: calls.append("trim") or True)
    f = jax.jit(lambda x, y, *, k: k * x + y, static_argnames=("k",))
    run = _compiled.Precompiled(f, size=2)
    x, y = jnp.arange(3.0), jnp.ones(3)
    np.testing.assert_array_equal(run(x, y, k=2), f(x, y, k=2))
    np.testing.assert_array_equal(run(x + 1, y, k=2), f(x + 1, y, k=2))  # same signature: no new compilation
    assert len(run.executables) == 1 and calls == ["trim"]
    np.testing.assert_array_equal(run(x, y, k=3), f(x, y, k=3))  # a new static argument
    np.testing.assert_array_equal(run(jnp.arange(4.0), jnp.ones(4), k=2), f(jnp.arange(4.0), jnp.ones(4), k=2))
    assert len(run.executables) == 2 and calls == ["trim"] * 3  # the least recently used one was dropped
    assert (_compiled.signature((x, y)), (("k", 2),)) not in run.executables


def test_trim_heap_answers_whether_it_could():
    assert isinstance(_compiled.trim_heap(), bool)
