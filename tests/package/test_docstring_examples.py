"""Run the ``Example:`` sections of the public modules' docstrings with doctest.

The examples assume ``import numpy as np`` and ``import paththeory as pt`` (as the API
reference says); floats are printed rounded so that the outputs are stable.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import paththeory as pt

import paththeory_tools


def _modules_with_examples() -> list[str]:
    """Every module of the package and of the repository tooling whose docstrings hold an example."""
    names = []
    for package in (pt, paththeory_tools):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            if any(t.examples for t in doctest.DocTestFinder().find(module)):
                names.append(info.name)
    return names


MODULES = ["paththeory", *_modules_with_examples()]


def test_the_theory_and_every_layer_have_examples():
    assert {f"paththeory.{m}" for m in ("model", "kernels", "action", "hessian", "solve", "predict", "pruning",
                                         "profiles", "_labels", "sampling.diagnostics", "sampling.nuts", "sampling.gibbs", "sampling.posterior",
                                         "tasks.data", "tasks.examples", "training.checkpoints", "display.plots",
                                         "display.tables", "experiments.stats", "exercises.answers",
                                         "exercises.checking", "exercises.graded_cells")} <= set(MODULES)
    assert {"paththeory_tools.student", "paththeory_tools.plain_markdown"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(module, globs={**vars(module), "np": np, "pt": pt})
    assert sum(len(t.examples) for t in tests) > 0, f"{name} has no examples"
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring examples of {name} failed (see stdout)"
