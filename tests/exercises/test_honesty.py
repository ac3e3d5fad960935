"""The honesty check of graded answers sees the package under any name the answer gave it."""

from __future__ import annotations

import pytest

from paththeory.exercises import GradingError, assert_honest


@pytest.mark.parametrize("cell", [
    "pt.exercises.checking.check = lambda *a, **k: None",
    "import paththeory as pt\npt.exercises.check = print",
    "import paththeory.exercises.checking as c\nc.check = print",
    "from paththeory.exercises import checking\nchecking.check = print",
    "from paththeory.exercises import checking as ch\nch.EXERCISES = {}",
    "import paththeory\npaththeory.exercises.keys.EXERCISES = {}",
])
def test_changing_the_checks_through_an_alias_earns_nothing(cell):
    with pytest.raises(GradingError, match="changed the package's checking code"):
        assert_honest("demo.q1", [cell])


@pytest.mark.parametrize("cell", [
    "import paththeory as pt\narch = pt.Architecture([])\nanswer = arch.n_paths",
    "from paththeory.tasks.examples import model_problem\narch, params, x = model_problem()\nanswer = x.shape",
    "import paththeory as pt\nU = pt.Theory(a, f, y).solve(10, 0.1).U\nanswer = U == U",
])
def test_using_the_package_under_an_alias_is_honest(cell):
    assert_honest("demo.q1", [cell])
