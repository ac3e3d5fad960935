"""paththeory: the statistical mechanics of attention paths in transformers.

Importing the package turns on JAX's 64-bit mode (``jax_enable_x64``), because the
theory (Cholesky factors of ill-conditioned kernels, stationarity to 1e-8) needs
float64. The switch is global for the process: after ``import paththeory`` any JAX
array you create from Python floats or float64 numpy arrays is float64 too, and
integer arrays default to int64. Code that wants float32 must ask for it
(``jnp.asarray(x, dtype=jnp.float32)``). Set ``PATHTHEORY_NO_X64=1`` before the import to
leave JAX's setting untouched (the theory functions then refuse to run).
"""

from __future__ import annotations

import os

import jax

if os.environ.get("PATHTHEORY_NO_X64", "") not in ("1", "true", "yes"):
    jax.config.update("jax_enable_x64", True)

__version__ = "0.1.0"

from paththeory.model import (  # noqa: E402
    Architecture,
    FixedAttention,
    QKAttention,
    ScoreAttention,
    attention_matrices,
    effective_weights,
    network_output,
    path_attention,
    path_expansion_output,
    path_features,
    sample_prior,
)

__all__ = [
    "Architecture",
    "FixedAttention",
    "QKAttention",
    "ScoreAttention",
    "attention_matrices",
    "effective_weights",
    "network_output",
    "path_attention",
    "path_expansion_output",
    "path_features",
    "sample_prior",
]
