"""The experiments' shared records: typed findings survive JSON and a renamed key fails where results are read; the
package's face defines nothing; the run environment is recorded by one function."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from paththeory.experiments import records


@dataclass(frozen=True)
class _Fit:
    b: float | None
    widths: tuple[int, ...]


@dataclass(frozen=True)
class _Found:
    network: str
    fit: _Fit
    fits: tuple[_Fit, ...]
    z: dict[str, float] | None
    agree: bool = False


def test_typed_findings_survive_json():
    found = _Found("skip", _Fit(np.float64(1.25), (10, 30)), (_Fit(None, ()),), {"flat": 0.5}, True)
    text = json.dumps(records.jsonable(found))
    back = records.typed(_Found, json.loads(text))
    assert back == _Found("skip", _Fit(1.25, (10, 30)), (_Fit(None, ()),), {"flat": 0.5}, True)
    assert isinstance(back.fit.widths, tuple) and isinstance(back.fits[0], _Fit)


def test_a_renamed_key_fails_where_the_results_are_read():
    data = records.jsonable(_Found("skip", _Fit(1.0, (10,)), (), None))
    data["fit"]["exponent"] = data["fit"].pop("b")
    with pytest.raises(KeyError, match=r"_Fit does not match.*unknown keys \['exponent'\].*missing fields \['b'\]"):
        records.typed(_Found, data, "results")


def test_the_experiments_package_is_a_face():
    init = Path(records.__file__).with_name("__init__.py")
    body = [n for n in ast.parse(init.read_text()).body
            if not isinstance(n, (ast.Import, ast.ImportFrom))
            and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    assert [ast.unparse(n).split("=")[0].strip() for n in body] == ["__all__"]


def test_the_environment_is_written_in_one_place():
    env = records.environment()
    assert {"paththeory", "jax", "numpyro", "backend", "device", "machine"} <= set(env)
    root = Path(records.__file__).parents[1]
    writers = [p.relative_to(root).as_posix() for p in root.rglob("*.py")
               if "__version__" in p.read_text() and p.name not in ("__init__.py",)]
    assert writers in (["experiments/records.py"], ["cli.py", "experiments/records.py"],
                       ["experiments/records.py", "cli.py"]), writers
