"""The public face: ``import paththeory as pt`` reaches the common names, every subpackage says what
it exports, and the API page documents every name of ``pt.__all__``, the theory first and the
repository tooling not at all."""

from __future__ import annotations

import importlib
import pkgutil
import re
import types
from pathlib import Path

import pytest

import paththeory as pt

ROOT = Path(__file__).resolve().parents[2]
API_PAGE = ROOT / "book" / "api.md"
THEORY = ("model", "kernels", "action", "solve", "hessian", "predict", "pruning")
SUBPACKAGES = ("sampling", "tasks", "training", "display", "experiments", "exercises")


def documented(page: str) -> dict[str, set[str] | None]:
    """``{module: documented member names}`` from the page's ``automodule`` blocks (``None``: all members)."""
    found: dict[str, set[str] | None] = {}
    for module, options in re.findall(r"^\.\. automodule:: ([\w.]+)\n((?:[ \t]+:.*\n)*)", page, flags=re.M):
        members = re.search(r":members:(.*)", options)
        names = {n.strip() for n in members.group(1).split(",") if n.strip()} if members else set()
        found[module] = None if members and not names else names
    return found


def on_page(obj_module: str, name: str, pages: dict[str, set[str] | None]) -> bool:
    members = pages.get(obj_module, set())
    return members is None or name in members


def test_the_common_names_are_about_thirty_and_none_hides_a_module():
    assert 25 <= len(pt.__all__) <= 40 and len(set(pt.__all__)) == len(pt.__all__)
    submodules = {m.name for m in pkgutil.iter_modules(pt.__path__)}
    assert not set(pt.__all__) & submodules, "a re-export would hide the module of the same name"
    for name in pt.__all__:
        assert not isinstance(getattr(pt, name), types.ModuleType)
    assert {"Architecture", "path_features", "kernel_matrix", "Theory", "sweep", "predictor", "accuracy",
            "head_scores", "sample_posterior"} <= set(pt.__all__)


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_every_subpackage_declares_its_exports(name):
    package = importlib.import_module(f"paththeory.{name}")
    assert isinstance(getattr(package, "__all__", None), list), f"paththeory.{name} has no __all__"
    missing = [n for n in package.__all__ if not hasattr(package, n)]
    assert missing == []


def test_every_common_name_is_on_the_api_page():
    pages = documented(API_PAGE.read_text())
    missing = [f"{getattr(pt, n).__module__}.{n}" for n in pt.__all__
               if not on_page(getattr(pt, n).__module__, n, pages)]
    assert missing == []


def test_the_api_page_lists_the_theory_first_and_no_tooling():
    modules = list(documented(API_PAGE.read_text()))
    assert not [m for m in modules if not m.startswith("paththeory.")], "the tools are not part of the API"
    first_layer = next(i for i, m in enumerate(modules) if m.split(".")[1] in SUBPACKAGES)
    assert {f"paththeory.{m}" for m in THEORY} <= set(modules[:first_layer])


def test_the_page_reader_sees_members_and_all_members():
    page = ".. automodule:: paththeory.model\n   :members: Architecture, path_features\n\n" \
           ".. automodule:: paththeory.action\n   :members:\n"
    pages = documented(page)
    assert pages == {"paththeory.model": {"Architecture", "path_features"}, "paththeory.action": None}
    assert on_page("paththeory.action", "entropy", pages) and not on_page("paththeory.model", "sweep", pages)


def test_the_readme_counts_the_common_names_right():
    from pathlib import Path
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    said = re.search(r"`pt\.__all__`, (\d+) of them", readme)
    assert said and int(said.group(1)) == len(pt.__all__), "README.md gives a stale count of pt.__all__"
