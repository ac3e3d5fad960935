"""What runs inside the sandbox (:mod:`paththeory_tools.sandbox`): it holds no key and writes only data.

``python -m paththeory_tools.runner execute``: runs the code cells of ``submission.ipynb`` (working
directory) in an IPython shell, skipping those ``plan.json`` lists, and after each answer cell of a
check-style exercise saves the value of ``answer`` to ``answers/<exercise>.npz``; writes
``log.json`` (each cell's error and the start of its printed output).

``python -I runner.py call`` (this file copied, alone, into the scratch folder: it imports numpy
and the standard library only, and the sandbox hides paththeory, paththeory_tools and the answer
keys): for each job of ``plan.json`` (the grader gives one job per run, so that each graded
function has its own time limit), runs its module (the student's answer cell and the notebook's
imports and functions) in a fresh namespace, calls its function on every case of its ``cases``
file (inputs only: no expected value is ever here) and writes each case's outputs, as float
arrays, to its ``out`` file.

Everything here may be changed by the student's code, which runs in this same process: the grader
trusts none of it beyond reading numbers and short text (``allow_pickle=False``, numeric arrays,
sizes checked before loading), and computes points itself.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback
from pathlib import Path

import numpy as np

MAX_TEXT = 4000
#: The longest error text of a call kept per case (the grader caps it again).
MAX_ERROR = 300


def _save_npz(path: Path, arrays: dict) -> None:
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def _as_arrays(value) -> list[np.ndarray]:
    """An answer as float arrays: a list or tuple of arrays, or one array."""
    if isinstance(value, (list, tuple)) and value and all(np.ndim(v) > 0 for v in value):
        return [np.asarray(v, dtype=float) for v in value]
    return [np.asarray(value, dtype=float)]


def _capture(shell, exercise: str) -> None:
    value = shell.user_ns.get("answer", None)
    out = Path("answers")
    out.mkdir(exist_ok=True)
    try:
        arrays = _as_arrays(value) if value is not None else []
        _save_npz(out / f"{exercise}.npz", {f"item{i}": a for i, a in enumerate(arrays)})
    except (TypeError, ValueError) as exc:
        (out / f"{exercise}.error").write_text(f"answer is not numbers: {type(exc).__name__}")


def execute() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    plan = json.loads(Path("plan.json").read_text())
    cells = json.loads(Path("submission.ipynb").read_text())["cells"]
    skip, capture = set(plan.get("skip", [])), plan.get("capture", {})
    shell = InteractiveShell.instance()
    log = []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code" or i in skip:
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            result = shell.run_cell(source, store_history=True, silent=False)
        error = result.error_in_exec or result.error_before_exec
        log.append({"cell": i, "error": None if error is None else f"{type(error).__name__}: {error}"[:MAX_TEXT],
                    "printed": printed.getvalue()[:MAX_TEXT]})
        if str(i) in capture:
            _capture(shell, capture[str(i)])
    Path("log.json").write_text(json.dumps(log))


def _load_cases(path: str) -> list[tuple]:
    with np.load(path, allow_pickle=False) as data:
        counts = data["counts"]
        return [tuple(data[f"case{k}_arg{j}"].item() if data[f"case{k}_arg{j}"].ndim == 0
                      else data[f"case{k}_arg{j}"] for j in range(int(n))) for k, n in enumerate(counts)]


def _outputs(k: int, value) -> dict:
    """Case ``k``'s outputs as arrays: ``case<k>_n`` (the number of items of a returned tuple, -1 for
    one value) and each item as floats, or its error in words."""
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    out = {f"case{k}_n": np.array(len(items) if isinstance(value, (tuple, list)) else -1)}
    for j, item in enumerate(items):
        try:
            out[f"case{k}_p{j}"] = np.asarray(item, dtype=float)
        except (TypeError, ValueError) as exc:
            out[f"case{k}_p{j}_error"] = np.array(f"not numbers: {type(item).__name__} ({type(exc).__name__})")
    return out


class _Absorb:
    """What ``get_ipython()`` returns outside IPython: takes any attribute, call or assignment."""

    def __getattr__(self, name):
        return _Absorb()

    def __call__(self, *args, **kwargs):
        return _Absorb()


def _call_one(job: dict) -> None:
    cases = _load_cases(job["cases"])
    namespace: dict = {"__name__": "__student__", "get_ipython": lambda: _Absorb()}
    out: dict = {}
    try:
        exec(compile(Path(job["module"]).read_text(), "answer", "exec"), namespace)
        fn = namespace[job["function"]]
    except BaseException as exc:  # noqa: BLE001 - the student's cell may raise anything
        out["module_error"] = np.array(f"{type(exc).__name__}: {exc}"[:MAX_ERROR])
        _save_npz(Path(job["out"]), out)
        return
    for k, args in enumerate(cases):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                value = fn(*args)
            out.update(_outputs(k, value))
        except BaseException as exc:  # noqa: BLE001
            out[f"case{k}_error"] = np.array(f"{type(exc).__name__}: {exc}"[:MAX_ERROR])
    _save_npz(Path(job["out"]), out)


def call() -> None:
    for job in json.loads(Path("plan.json").read_text())["jobs"]:
        _call_one(job)


def main(argv: list[str]) -> int:
    if argv[:1] == ["execute"]:
        execute()
    elif argv[:1] == ["call"]:
        call()
    else:
        print("usage: python runner.py execute|call", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception:  # noqa: BLE001 - reported to the grader through stderr
        traceback.print_exc()
        sys.exit(1)
