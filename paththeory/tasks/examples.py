"""Small example problems: the networks and data that the docstrings' examples, the exercises and
the tests share (a two-layer network with random heads, the toy needle task)."""

from __future__ import annotations

import functools

import jax
import numpy as np

from paththeory.model import Architecture, QKAttention, path_features, sample_prior
from paththeory.tasks import toy


def model_problem(readout: str = "first"):
    """The small network of the model exercises: ``(arch, params, x)``, L = 2, heads (3, 2).

    Example:
      >>> arch, params, x = model_problem()
      >>> arch.heads, x.shape
      ((3, 2), (4, 5, 6))
    """
    rng = np.random.default_rng(0)
    layers = [QKAttention(rng.normal(size=(h, 3, 6)), rng.normal(size=(h, 3, 6))) for h in (3, 2)]
    arch = Architecture(layers, readout=readout)
    params = sample_prior(arch, 8, 6, jax.random.PRNGKey(1))
    return arch, params, rng.normal(size=(4, 5, 6))


@functools.lru_cache(maxsize=None)
def toy_problem(n_train: int = 100, n_test: int = 1000):
    """The toy needle task of the GP-vs-finite exercises: ``(arch, f_train, y_train, f_test, y_test)``.

    Example:
      >>> arch, f_train, y_train, f_test, y_test = toy_problem(10, 20)
      >>> f_train.shape, f_test.shape
      ((10, 4, 48), (20, 4, 48))
    """
    arch = toy.architecture()
    train = toy.sample_task(n_train, seed=toy.TRAIN_SEED)
    test = toy.sample_task(n_test, seed=toy.TEST_SEED)
    y_train, y_test = np.array(train.y), np.array(test.y)  # cached: one caller's change must not reach the next
    y_train.flags.writeable = y_test.flags.writeable = False
    return arch, path_features(arch, train.x), y_train, path_features(arch, test.x), y_test
