"""JAX's persistent compilation cache, as ``import paththeory`` sets it up (in fresh processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# A fresh process: import paththeory, compile one small function, report the cache folder in use.
PROGRAM = """
import json, jax, jax.numpy as jnp
import paththeory
from paththeory import _compilation_cache as compilation_cache
jax.jit(lambda x: jnp.linalg.cholesky(x @ x.T + jnp.eye(3)))(jnp.ones((3, 3))).block_until_ready()
print(json.dumps({"folder": None if compilation_cache.folder() is None else str(compilation_cache.folder())}))
"""


def _run(env: dict) -> dict:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("PATHTHEORY_", "JAX_COMPILATION"))}
    full.update(env, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")  # cache even this tiny program
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=full, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cache_folder_is_written_and_reused(tmp_path):
    folder = tmp_path / "jax"
    first = _run({"PATHTHEORY_COMPILATION_CACHE": str(folder)})
    assert first["folder"] == str(folder)
    entries = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    assert entries, "the compiled program was not written to the cache"
    _run({"PATHTHEORY_COMPILATION_CACHE": str(folder)})
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == entries  # read back, not written again


def test_default_folder_is_the_user_cache(tmp_path):
    assert _run({"XDG_CACHE_HOME": str(tmp_path)})["folder"] == str(tmp_path / "paththeory" / "jax")


def test_opt_out_and_a_folder_chosen_by_the_user(tmp_path):
    off = _run({"PATHTHEORY_NO_COMPILATION_CACHE": "1", "XDG_CACHE_HOME": str(tmp_path)})
    assert off["folder"] is None and not (tmp_path / "paththeory" / "jax").exists()
    mine = tmp_path / "mine"
    kept = _run({"JAX_COMPILATION_CACHE_DIR": str(mine), "PATHTHEORY_COMPILATION_CACHE": str(tmp_path / "other")})
    assert kept["folder"] == str(mine) and not (tmp_path / "other").exists()
