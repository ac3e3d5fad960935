"""The module paths of paththeory 0.1 still import (graded notebooks released with 0.1 use them), each
with a DeprecationWarning naming the new home, and give the very objects of the new modules."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from paththeory import _moved


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_an_old_path_gives_the_new_objects_with_a_warning(old):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {_moved.MOVED[old][0]}"):
        module = importlib.import_module(old)
    for home in _moved.MOVED[old]:
        new = importlib.import_module(home)
        names = [n for n in vars(new) if not n.startswith("_") and n != "annotations"]
        assert names and all(getattr(module, n) is getattr(new, n) for n in names)


def test_a_released_graded_notebook_imports_as_before():
    """The test cells of a 0.1 problem-set notebook, in a fresh process."""
    code = ("import warnings; warnings.simplefilter('ignore')\n"
            "from paththeory.grading import graded, graded_function\n"
            "from paththeory.problems import IMPLEMENT, POINTS, check_implementation\n"
            "from paththeory.stats import batch_means_se\n"
            "from paththeory.chapter import markdown_table, needs_files, run_time\n"
            "import paththeory.exercises as ex\n"
            "assert graded is ex.graded and check_implementation is ex.check_implementation\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_path_that_never_existed_still_fails():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("paththeory.no_such_module")
