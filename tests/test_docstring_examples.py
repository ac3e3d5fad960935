"""Run the ``Example:`` sections of the public modules' docstrings with doctest.

The examples assume ``import numpy as np`` and ``import paththeory as pt`` (as the API
reference says); floats are printed rounded so that the outputs are stable.
"""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

import paththeory as pt
from paththeory import data

NEEDS_DATA = {"omniglot_problem"}
MODULES = ("model", "kernels", "action", "hessian", "solve", "predict", "pruning", "sampling", "profiles", "plots", "exercises",
           "stats", "training")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"paththeory.{name}")
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(module, globs={**vars(module), "np": np, "pt": pt})
    if not data.SHARED_DATA.is_dir():  # these examples read the offline Omniglot copies
        tests = [t for t in tests if t.name.rsplit(".", 1)[-1] not in NEEDS_DATA]
    assert sum(len(t.examples) for t in tests) > 0, f"paththeory.{name} has no examples"
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring examples of paththeory.{name} failed (see stdout)"
