"""Small example problems: the networks and data that the docstrings' examples, the exercises and
the tests share (a two-layer network with random heads, the toy needle task, one path with a random teacher)."""

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


def one_path_problem():
    """One layer of one random head and a pool of 100 sequences of 4 tokens in 20 dimensions labelled by a random
    linear teacher: ``(arch, features [100, 1, 20], y [100])``, the task on which the validity chapter measures the
    theory's one approximation against the exact posterior (:mod:`paththeory.one_path`).

    Example:
      >>> arch, f, y = one_path_problem()
      >>> arch.n_paths, f.shape, sorted(set(y.tolist()))
      (1, (100, 1, 20), [-1.0, 1.0])
    """
    rng = np.random.default_rng(0)
    arch = Architecture([QKAttention(rng.normal(size=(1, 4, 20)), rng.normal(size=(1, 4, 20)))], readout="first")
    data = np.random.default_rng(100)
    x = data.normal(size=(100, 4, 20))
    teacher = data.normal(size=20)
    y = np.sign(x[:, 0] @ teacher + 0.5 * x[:, 1] @ teacher)
    return arch, np.asarray(path_features(arch, x)), y


def two_layer_problem():
    """Two layers of two random heads (four paths, mean readout) and 50 random sequences of 6 tokens in 10 dimensions
    with labels ``sign(x_00 + x_11 / 2)``: ``(arch, x [50, 6, 10], y [50])``, the problem on which the theory chapters
    check the solver, the inner order parameter and Result 2.

    Example:
      >>> arch, x, y = two_layer_problem()
      >>> arch.heads, x.shape, y.shape
      ((2, 2), (50, 6, 10), (50,))
    """
    rng = np.random.default_rng(7)
    layers = [QKAttention(rng.normal(size=(2, 4, 10)), rng.normal(size=(2, 4, 10))) for _ in range(2)]
    arch = Architecture(layers, readout="mean")
    x = rng.normal(size=(50, 6, 10))
    return arch, x, np.sign(x[:, 0, 0] + 0.5 * x[:, 1, 1])
