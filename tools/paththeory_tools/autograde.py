"""The grader's own judgement, in the grader's process: no student code runs here.

Small pure functions over data that came back from the sandbox (:mod:`paththeory_tools.runner`):
which cells belong to which question, the module an implement answer is called from, a static
scan of the student's code (flags for the instructor), and the points of each question, part by
part, from float arrays compared with keys the sandbox never held.
"""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

__all__ = ["Score", "code_flags", "implement_module", "part_points", "question_groups",
           "reference_uses", "score_check", "score_implement"]

#: Per implement problem: what in paththeory computes the same quantity (a dotted prefix).
REFERENCES: dict[str, tuple[str, ...]] = {
    "problems.action": ("paththeory.action", "paththeory.entropy", "paththeory.Theory"),
    "problems.predictor": ("paththeory.predict.predictor", "paththeory.predict.mean_predictor",
                           "paththeory.predict._fit", "paththeory.predictor", "paththeory.mean_predictor"),
    "problems.overlap_distance": ("paththeory.experiments.multiclass.relative",),
    "problems_residual.skip_action": ("paththeory.action", "paththeory.entropy", "paththeory.Theory"),
    "problems_residual.multi_output_mean": ("paththeory.predict", "paththeory.predictor", "paththeory.mean_predictor",
                                            "paththeory.Theory"),
    "problems_inference.action_gradient": ("paththeory.action", "paththeory.energy", "paththeory.entropy",
                                           "paththeory.Theory", "paththeory.hessian", "paththeory.solve"),
    "problems_inference.readout_evidence": ("paththeory.sampling", "paththeory.sample_posterior"),
}
#: What no implement answer may touch: the answer keys and checks.
ALWAYS_FORBIDDEN = ("paththeory.exercises",)


@dataclass
class Score:
    """One question's automatic score: ``points`` of ``max_points``, why (``notes``, for the feedback:
    never an expected value) and ``flags`` (for the instructor)."""

    points: float
    max_points: float
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- cells and questions


def _grade_id(cell: dict) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def question_groups(cells: list[dict], test_ids: dict[str, str]) -> dict[str, list[int]]:
    """``{exercise: indices of the code cells that answer it}``: the cells since the previous
    question's tests (answer cells and cells the student added), as the honesty scan reads them.
    ``test_ids`` maps each test cell's grade id to its exercise; code after the last test is
    grouped under ``"(after the last question)"``."""
    groups: dict[str, list[int]] = {}
    current: list[int] = []
    for i, cell in enumerate(cells):
        gid = _grade_id(cell)
        if gid in test_ids:
            groups.setdefault(test_ids[gid], []).extend(current)
            current = []
        elif cell.get("cell_type") == "code":
            current.append(i)
    if current:
        groups["(after the last question)"] = current
    return groups


_PARSING = threading.Lock()  # CPython 3.11's ast.parse is not safe in threads (gh-106905)


def _parses(source: str) -> ast.Module | None:
    with _PARSING:
        try:
            return ast.parse(_without_magics(source))
        except (SyntaxError, ValueError):
            return None


def _without_magics(source: str) -> str:
    return "\n".join("" if re.match(r"\s*[%!]", line) else line for line in source.splitlines())


def implement_module(cells: list[dict], answer: int, skip: Iterable[int] = ()) -> str:
    """The source the sandbox calls an implement answer from: the imports, functions and classes of
    the code cells before ``answer`` (not ``skip``), then the answer cell itself. Where it runs the
    package cannot be imported: each import is tried (one that fails binds nothing) and so is each
    statement of the answer cell that defines nothing (a call of the public check there is skipped)."""
    skipped, parts = set(skip), []
    for i, cell in enumerate(cells[:answer + 1]):
        tree = _parses(_source(cell)) if cell.get("cell_type") == "code" and i not in skipped else None
        for node in tree.body if tree else []:
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                parts.append(ast.unparse(node))
            elif isinstance(node, (ast.Import, ast.ImportFrom)) or i == answer:
                parts.append(ast.unparse(_tried(node)))
    if answer < len(cells) and _parses(_source(cells[answer])) is None:  # a syntax error: the module says so
        parts.append(_without_magics(_source(cells[answer])))
    return "\n".join(parts) + "\n"


def _tried(node: ast.stmt) -> ast.Try:
    """``try: <node> except Exception: pass``."""
    handler = ast.ExceptHandler(type=ast.Name("Exception", ast.Load()), name=None, body=[ast.Pass()])
    return ast.fix_missing_locations(ast.Try(body=[node], handlers=[handler], orelse=[], finalbody=[]))


# --------------------------------------------------------------------------- the static scan


def _aliases(tree: ast.AST) -> dict[str, str]:
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in aliases:
        return ".".join([aliases[node.id]] + parts[::-1])
    return None


def _used_names(tree: ast.AST, aliases: dict[str, str]) -> set[str]:
    used = set(_aliases(tree).values())
    for node in ast.walk(tree):
        if isinstance(node, (ast.Attribute, ast.Name)):
            name = _dotted(node, aliases)
            if name:
                used.add(name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "paththeory" in node.value:
            used.add(node.value.strip())
    return used


def reference_uses(source: str, exercise: str, context: str = "") -> list[str]:
    r"""What the student's code ``source`` uses of paththeory's own implementation of ``exercise``'s
    quantity or of its answer keys (dotted names; empty when none); ``context``: the notebook's
    earlier code, whose imports name the modules (``import paththeory as pt`` in a setup cell).

    Example:
      >>> reference_uses("def f(U, a, y, b, T):\n    return pt.predictor(U, a, y, b, T)",
      ...                "problems.predictor", "import paththeory as pt")
      ['paththeory.predictor']
    """
    tree = _parses(source)
    if tree is None:
        return []
    context_tree = _parses(context)
    aliases = {**(_aliases(context_tree) if context_tree else {}), **_aliases(tree)}
    forbidden = REFERENCES.get(exercise, ()) + ALWAYS_FORBIDDEN
    return sorted({name for name in _used_names(tree, aliases)
                   if any(name == f or name.startswith(f + ".") for f in forbidden)})


#: Code that a graded answer has no reason to run: ``(test on a dotted name or node, flag)``.
_SUSPICIOUS_CALLS = {
    "sys._getframe": "reads the caller's stack frame (sys._getframe)",
    "inspect.currentframe": "reads the caller's stack frame (inspect)",
    "inspect.stack": "reads the caller's stack frame (inspect)",
    "gc.get_objects": "searches the interpreter's objects (gc)",
    "sqlite3.connect": "opens a database (sqlite3)",
}
_LIBRARIES = ("numpy", "paththeory", "sys", "builtins", "IPython", "scipy", "jax", "math")


def code_flags(source: str) -> list[str]:
    """Flags for the instructor from a static scan of one cell: changing a library's code (an
    assignment to an attribute of numpy, paththeory, sys...), reading stack frames, opening the
    gradebook, turning the display off. Flags do not change points."""
    tree = _parses(source)
    if tree is None:
        return []
    aliases = _aliases(tree)
    flags = [flag for node in ast.walk(tree) for flag in _node_flags(node, aliases)]
    text = _without_magics(source)
    if re.search(r"display_formatter|display_pub|\bformatters\b.*enabled|sys\.displayhook", text):
        flags.append("changes IPython's display")
    return list(dict.fromkeys(flags))


def _node_flags(node: ast.AST, aliases: dict[str, str]) -> list[str]:
    """The flags of :func:`code_flags` that one node of a cell's syntax tree raises."""
    flags = []
    targets = node.targets if isinstance(node, ast.Assign) else (
        [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
    for t in targets:
        name = _dotted(t, aliases) if isinstance(t, ast.Attribute) else None
        if name and name.split(".")[0] in _LIBRARIES:
            flags.append(f"changes library code: assigns {name}")
    if isinstance(node, ast.Call):
        name = _dotted(node.func, aliases) or (node.func.id if isinstance(node.func, ast.Name) else "")
        if name in _SUSPICIOUS_CALLS:
            flags.append(_SUSPICIOUS_CALLS[name])
        if name in ("setattr", "builtins.setattr") and node.args:
            target = _dotted(node.args[0], aliases)
            if target and target.split(".")[0] in _LIBRARIES:
                flags.append(f"changes library code: setattr on {target}")
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and "gradebook" in node.value:
        flags.append("refers to the gradebook")
    return flags


# --------------------------------------------------------------------------- points


def _close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> bool:
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if got.size == 1 and want.size == 1:
        got, want = got.reshape(()), want.reshape(())
    return got.shape == want.shape and bool(np.all(np.isfinite(got))) and bool(
        np.allclose(got, want, rtol=rtol, atol=atol))


def part_points(points: float, parts: int, passed: list[int], cases: int) -> float:
    """``points`` shared equally by ``parts``; part ``j`` earns its share times the fraction of the
    ``cases`` it got right (``passed[j]``)."""
    if cases == 0 or parts == 0:
        return 0.0
    return round(sum(points / parts * p / cases for p in passed), 6)


def score_implement(outputs: dict, expected: list[list[np.ndarray]], *, single: bool, points: float,
                    rtol: float, atol: float, what: str, all_cases: bool = False, hidden: bool = False) -> Score:
    """Points of one set of cases of an implement problem: ``outputs`` (read from the sandbox's
    ``outputs.npz``) against ``expected`` (per case, its output's parts; ``single``: the function
    returns one value, not a tuple). Each part (output) earns its share of ``points``: for each case it
    gets right, or, with ``all_cases`` (the public test), only if it gets every case right. With
    ``hidden`` the notes are counts only: no case, no output, no text from the sandbox."""
    parts = len(expected[0]) if expected else 0
    passed, notes, errors, shape = [0] * parts, [], 0, 0
    if "module_error" in outputs:
        text = "" if hidden else f": {outputs['module_error']}"
        return Score(0.0, points, [f"{what}: the answer cell failed{text}"])
    for k, want in enumerate(expected):
        if f"case{k}_error" in outputs:
            errors += 1
            notes.append(f"{what}, case {k + 1}: your function raised {outputs[f'case{k}_error']}")
            continue
        n = int(np.ravel(outputs.get(f"case{k}_n", -2))[0]) if np.size(outputs.get(f"case{k}_n", -2)) == 1 else -2
        if (single and n != -1 and n != 1) or (not single and n != parts):
            shape += 1
            notes.append(f"{what}, case {k + 1}: it should return {'one value' if single else f'{parts} values'}")
            continue
        for j, w in enumerate(want):
            got = outputs.get(f"case{k}_p{j}")
            if got is not None and _close(got, w, rtol, atol):
                passed[j] += 1
            else:
                notes.append(f"{what}, case {k + 1}: output {j + 1} is wrong "
                             f"{'(shape)' if got is not None and np.shape(got) != np.shape(w) else ''}".rstrip())
    if all_cases:
        passed = [p if p == len(expected) else 0 for p in passed]
    earned = part_points(points, parts, passed, len(expected))
    if hidden:
        notes = [f"{what}: your function raised an error on {errors} of {len(expected)} cases"] if errors else []
        notes += [f"{what}: it returned the wrong number of values on {shape} of {len(expected)} cases"] if shape else []
    if parts > 1 or hidden:
        notes.append(f"{what}: " + ", ".join(f"output {j + 1} right on {p} of {len(expected)} cases"
                                             for j, p in enumerate(passed)))
    return Score(earned, points, notes)


def score_check(answer: list[np.ndarray] | None, key: list[np.ndarray], *, points: float, rtol: float,
                atol: float, exercise: str) -> Score:
    """Points of a check-style answer (the float arrays captured in the sandbox) against its key:
    all or nothing, with a diagnosis that never shows the key."""
    from paththeory.exercises.answers import diagnose

    if answer is None:
        return Score(0.0, points, [f"{exercise}: no answer (the variable `answer` was not numbers)"])
    if len(answer) != len(key):
        return Score(0.0, points, [f"{exercise}: {len(answer)} items, expected {len(key)}"])
    wrong = [i for i, (g, w) in enumerate(zip(answer, key)) if not _close(g, w, rtol, atol)]
    if not wrong:
        return Score(points, points)
    notes = [f"{exercise}: " + note for i in wrong
             for note in (diagnose(np.asarray(answer[i], float), np.asarray(key[i], float), rtol, atol)
                          if np.shape(answer[i]) == np.shape(key[i]) else ["wrong shape"])]
    return Score(0.0, points, notes)
