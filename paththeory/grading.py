"""The test cells of graded notebooks released before the package's layers (0.1): they import
:func:`graded` and :func:`graded_function` from here. New notebooks import them from
:mod:`paththeory.exercises`; the instructor's side of grading is ``paththeory-tools course``."""

from paththeory.exercises.grading import assert_honest, graded, graded_function

__all__ = ["assert_honest", "graded", "graded_function"]
