"""The book's graded problem sets, together: one registry module per set, and their problems joined.

Each set is a chapter ``book/<set>.md`` of the "Problems" part with a registry module
``paththeory.exercises.<set>`` (:mod:`~paththeory.exercises.problems`,
:mod:`~paththeory.exercises.problems_residual`, :mod:`~paththeory.exercises.problems_inference`) that defines
``KINDS``, ``POINTS`` and ``PARTS`` by exercise label and ``IMPLEMENT`` by id ``"<set>.<name>"``. The joined
dicts below are what the checker (:func:`paththeory.exercises.problems.check_implementation`) and the grader read; a
label or an id belongs to one set only.

Example:
  >>> list(SETS)
  ['problems', 'problems_residual', 'problems_inference']
  >>> set_of("res-skip-action"), set_of("problems.action")
  ('problems_residual', 'problems')
"""

from __future__ import annotations

from types import ModuleType

from paththeory.exercises import problems, problems_inference, problems_residual

#: Set name (its chapter's stem) -> its registry module.
SETS: dict[str, ModuleType] = {
    "problems": problems,
    "problems_residual": problems_residual,
    "problems_inference": problems_inference,
}


def _joined(name: str) -> dict:
    joined: dict = {}
    for set_name, module in SETS.items():
        table = getattr(module, name)
        taken = sorted(set(joined) & set(table))
        if taken:
            raise RuntimeError(f"the problem set {set_name} reuses the names {taken} of another set.")
        joined.update(table)
    return joined


#: Every set's problems: label -> kind, label -> points, derivation label -> rubric, id -> implement problem.
KINDS: dict = _joined("KINDS")
POINTS: dict = _joined("POINTS")
PARTS: dict = _joined("PARTS")
IMPLEMENT: dict = _joined("IMPLEMENT")


def set_of(name: str) -> str:
    """The set that a problem's label or implement id belongs to."""
    for set_name, module in SETS.items():
        if name in module.KINDS or name in module.IMPLEMENT:
            return set_name
    raise KeyError(f"no problem {name!r} in the sets {', '.join(SETS)}.")
