"""paththeory: the statistical mechanics of attention paths in transformers.

``import paththeory as pt`` reaches the names a chapter needs (:data:`__all__`): the model and its
path features, the path-path kernels, the action, the order-parameter solver (:class:`Theory`,
:func:`sweep`), the predictor and its accuracy, head scores, the posterior sampler, the profiles and
the shipped networks. The layers below are importable too, one folder each: :mod:`paththeory.tasks`,
:mod:`paththeory.sampling`, :mod:`paththeory.training`, :mod:`paththeory.display`,
:mod:`paththeory.experiments` and :mod:`paththeory.exercises` (the README's "Where things are").

Example:
  >>> import paththeory as pt
  >>> len(pt.__all__), all(getattr(pt, name) is not None for name in pt.__all__)
  (36, True)
  >>> arch = pt.Architecture([pt.ScoreAttention([[[0.0]]])])
  >>> arch.n_paths, callable(pt.Theory), callable(pt.sample_posterior)
  (1, True, True)

Importing the package turns on JAX's 64-bit mode (``jax_enable_x64``), because the
theory (Cholesky factors of ill-conditioned kernels, stationarity to 1e-8) needs
float64. The switch is global for the process: after ``import paththeory`` any JAX
array you create from Python floats or float64 numpy arrays is float64 too, and
integer arrays default to int64. Code that wants float32 must ask for it
(``jnp.asarray(x, dtype=jnp.float32)``). Set ``PATHTHEORY_NO_X64=1`` before the import to
leave JAX's setting untouched.

It also sets ``OPENBLAS_NUM_THREADS=1`` unless you set it yourself. JAX's CPU LAPACK
(Cholesky, LU) comes from SciPy's OpenBLAS; on a small machine, OpenBLAS threads competing
with XLA's own made a 600 x 600 Cholesky factorisation 100x slower (1 s instead of 3 ms,
measured on 2 cores). The variable only takes effect if SciPy has not been imported yet.

Finally it turns on JAX's persistent compilation cache in ``~/.cache/paththeory/jax``, so that
the solvers compile once per machine rather than once per process
(:mod:`paththeory._compilation_cache`; opt out with ``PATHTHEORY_NO_COMPILATION_CACHE=1``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402

from paththeory import _io  # noqa: E402

if not _io.env_flag("PATHTHEORY_NO_X64"):  # 1/true/yes/on or 0/false/no/off; anything else raises
    jax.config.update("jax_enable_x64", True)

__version__ = "0.2.0"
#: The repository: the Colab install cell of every chapter, the book's launch buttons (_config.yml)
#: and the README use this address (tests/book/test_book.py checks every copy).
REPOSITORY = "https://github.com/paththeory/paththeory"

from paththeory import _compilation_cache  # noqa: E402

_compilation_cache.enable()

from paththeory import _moved  # noqa: E402

_moved.install()  # the module paths of 0.1 (paththeory.stats, paththeory.grading...) still import

# The public face: explicit re-exports, from the theory up to the shipped networks. No name here may be
# a submodule's (``action``, ``solve``, ``pruning``...): ``from paththeory import solve`` must stay the module.
from paththeory.action import entropy, gp_order_parameters  # noqa: E402
from paththeory.kernels import gp_kernel, kernel_matrix, path_kernels  # noqa: E402
from paththeory.model import (  # noqa: E402
    MLP,
    Architecture,
    FixedAttention,
    QKAttention,
    Residual,
    ScoreAttention,
    TokenFeatures,
    attention_matrices,
    effective_weights,
    network_output,
    path_attention,
    path_contributions,
    path_expansion_output,
    path_features,
    sample_prior,
    token_features,
)
from paththeory.predict import accuracy, mean_predictor, pc_label_overlap, predictor  # noqa: E402
from paththeory.profiles import current_profile, describe  # noqa: E402
from paththeory.pruning import head_scores, pruning_curves  # noqa: E402
from paththeory.solve import ConvergenceWarning, Solution, Theory, sweep  # noqa: E402

__all__ = [
    # the model and its attention paths (paththeory.model)
    "Architecture", "FixedAttention", "MLP", "QKAttention", "Residual", "ScoreAttention",
    "attention_matrices", "effective_weights", "network_output", "path_attention", "path_contributions",
    "path_expansion_output", "path_features", "sample_prior", "TokenFeatures", "token_features",
    # path-path kernels and the action (paththeory.kernels, paththeory.action)
    "gp_kernel", "kernel_matrix", "path_kernels", "entropy", "gp_order_parameters",
    # the order parameter (paththeory.solve)
    "ConvergenceWarning", "Solution", "Theory", "sweep",
    # the predictor (paththeory.predict)
    "accuracy", "mean_predictor", "pc_label_overlap", "predictor",
    # head pruning (paththeory.pruning)
    "head_scores", "pruning_curves",
    # the finite network's posterior (paththeory.sampling)
    "PosteriorSamples", "sample_posterior",
    # sizes and the shipped networks (paththeory.profiles, paththeory.training)
    "current_profile", "describe", "load_checkpoint",
]

#: Names of ``__all__`` whose layer is imported on first use: the sampler pulls in NumPyro and the
#: networks optax, which ``import paththeory`` alone should not pay for.
_LAZY = {"PosteriorSamples": "paththeory.sampling", "sample_posterior": "paththeory.sampling",
         "load_checkpoint": "paththeory.training"}


def __getattr__(name: str):
    """``pt.sample_posterior`` and the other :data:`_LAZY` names, imported on first use."""
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'paththeory' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
