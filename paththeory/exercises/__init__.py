"""Exercises of the book: automatic checks with diagnoses, the answer keys, the problem set's checks and
what a graded notebook calls.

An exercise in a chapter is a sphinx-exercise ``{exercise}`` (the task, labelled
``exercise-<chapter>-<name>``) followed by its solution, gated by ``{solution-start}`` /
``{solution-end}`` around a code cell: between ``### BEGIN SOLUTION`` and ``### END SOLUTION``
the worked solution stores its result in ``answer``, and the cell ends with
``check("<chapter>.<name>", answer)``. The student edition leaves the solutions out.

Every check compares with the expected answer, computed with the package, within a stated
tolerance. A right answer prints ``Correct (<id>): ...``. A wrong one raises
:class:`WrongAnswer` with a diagnosis (shape, sign, order of magnitude, which entries, which
step to revisit) and without the expected value, which only ``check(id, answer, reveal=True)``
or :func:`solution` show (a graded run, :mod:`paththeory.exercises.graded_cells`, refuses both). An answer of
the wrong kind (``None``, a string, NaN, a dict, a wrong shape) raises :class:`InvalidAnswer`,
naming the exercise and the kind of answer expected.

* ``paththeory.exercises.answers``: the kinds of answer, their validation and diagnoses.
* ``paththeory.exercises.keys``: every exercise (:data:`EXERCISES`) and its answer key.
* ``paththeory.exercises.checking``: :func:`check`, :func:`hint`, :func:`solution`.
* :mod:`~paththeory.exercises.problems`: the first problem set's registry and the implement-it-yourself checks
  of every set; :mod:`~paththeory.exercises.problems_residual` and :mod:`~paththeory.exercises.problems_inference`:
  the other sets' registries; :mod:`~paththeory.exercises.sets`: the sets joined.
* :mod:`~paththeory.exercises.graded_cells`: what a graded notebook's test cells call (:func:`graded`,
  :func:`graded_function`, :func:`assert_honest`).

Student notebooks, the exercises page and the instructor's side of grading are repository tools
(``paththeory-tools``, in ``tools/``), not part of the package.
"""

from paththeory.exercises.answers import Answer, Exercise, ExerciseError, InvalidAnswer, WrongAnswer, diagnose, validate
from paththeory.exercises.checking import check, hint, solution
from paththeory.exercises.keys import (
    EXERCISES,
    GP_SETUP,
    OMNIGLOT_GP_TEMPERATURES,
    OMNIGLOT_SPLITS,
    READOUT_SETUP,
    SINGLE_PATH_WIDTHS,
    TOY_WIDTHS,
    OmniglotProblem,
    markov_problem,
    model_problem,
    omniglot_problem,
    toy_problem,
)
from paththeory.exercises.graded_cells import GradingError, assert_honest, graded, graded_function
from paththeory.exercises.problems import check_implementation

# The errors print as ``paththeory.exercises.WrongAnswer`` wherever they are raised.
for _cls in (ExerciseError, WrongAnswer, InvalidAnswer, GradingError):
    _cls.__module__ = __name__

__all__ = [
    "Answer", "EXERCISES", "Exercise", "ExerciseError", "GP_SETUP", "GradingError", "InvalidAnswer",
    "OMNIGLOT_GP_TEMPERATURES", "OMNIGLOT_SPLITS", "OmniglotProblem", "READOUT_SETUP", "SINGLE_PATH_WIDTHS",
    "TOY_WIDTHS", "WrongAnswer",
    "assert_honest", "check", "check_implementation", "diagnose", "graded", "graded_function", "hint",
    "markov_problem", "model_problem", "omniglot_problem", "solution", "toy_problem", "validate",
]
