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

MODULES = ("model", "kernels", "action", "hessian", "solve", "predict", "pruning", "sampling", "profiles", "plots", "exercises.answers",
           "exercises.checking", "exercises.student", "plain_markdown", "grading", "data",
           "stats", "training", "outputs")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"paththeory.{name}")
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(module, globs={**vars(module), "np": np, "pt": pt})
    assert sum(len(t.examples) for t in tests) > 0, f"paththeory.{name} has no examples"
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring examples of paththeory.{name} failed (see stdout)"
