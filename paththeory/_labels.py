"""Labels with C outputs: validation and the packing of the multi-output theory.

Labels are ``y[P]`` (one output, the paper's ``+-1``) or ``Y[P, C]`` (C outputs, e.g. one-hot or
simplex-coded classes). The theory works with ``vec(Y)``, packed ``(c, mu)`` with the output
index slowest, ``vec(Y)[c P + mu] = Y[mu, c]``: the packing of the ``(CP) x (CP)`` kernel, and
the order parameters' index ``(c, pi)`` puts the output slowest too.
"""

from __future__ import annotations

import numpy as np

from paththeory._checks import as_float_array


def as_labels(y, n_examples: int, name: str = "y") -> np.ndarray:
    """Labels as a finite float64 ``[P, C]`` array (a ``[P]`` vector is one output).

    A 1-D array of integers other than ``+-1`` is read as class indices and refused: C classes
    are coded as ``[P, C]`` one-hot (or simplex) rows, two classes also as ``+-1`` in a ``[P]`` vector.

    Example:
      >>> as_labels([1.0, -1.0, 1.0], 3).shape, as_labels(np.eye(3), 3).shape
      ((3, 1), (3, 3))
    """
    try:
        shape = np.shape(y)
    except ValueError:  # a ragged list: as_float_array says so
        shape = ()
    if len(shape) == 2 and shape[1] == 0:
        raise ValueError(f"{name} has shape {shape}: no outputs (C = 0); pass [P, C] labels with C >= 1.")
    labels = np.asarray(as_float_array(y, name, ndim=(1, 2)))
    if labels.shape[0] != n_examples:
        raise ValueError(f"{name} has {labels.shape[0]} rows of labels but there are {n_examples} training examples.")
    if labels.ndim == 1 and np.all(labels == np.round(labels)) and not np.all(np.abs(labels) == 1):
        values = np.unique(labels)
        shown = ", ".join(f"{v:g}" for v in values[:6]) + (", ..." if values.size > 6 else "")
        raise ValueError(
            f"{name} looks like class indices (a 1-D array of integers {{{shown}}}, not +-1). Code C classes as a "
            f"[P, C] array: one-hot rows (np.eye(C)[{name}]) or simplex vectors; two classes also as +-1 in a [P] "
            f"vector. Real-valued targets of one output that happen to be integers: pass them as a [P, 1] array."
        )
    return labels.reshape(labels.shape[0], -1)


def stacked(labels: np.ndarray) -> np.ndarray:
    """``vec(Y)``, the ``C P`` labels packed ``(c, mu)`` with the output index slowest.

    Example:
      >>> stacked(np.array([[1.0, 2.0], [3.0, 4.0]]))
      array([1., 3., 2., 4.])
    """
    return np.asarray(labels).T.reshape(-1)
