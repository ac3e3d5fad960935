"""The module paths of paththeory 0.1, before the package took its layers: ``import paththeory.stats``,
``from paththeory.problems import check_implementation`` and the like still work, each giving the
module's new home with a :class:`DeprecationWarning` that names it.

Graded notebooks released with 0.1 import ``paththeory.grading`` and ``paththeory.problems`` in their
test cells, and are graded by the instructor's current package: their imports must keep working.
The repository tooling that left the package (``paththeory.notebooks``, ``paththeory.edition``...)
is the ``paththeory-tools`` distribution now and has no alias here.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

#: Old module path -> the module(s) that hold its names now (several: a module built from them).
MOVED: dict[str, tuple[str, ...]] = {
    "paththeory.outputs": ("paththeory._labels",),
    "paththeory.lbfgs": ("paththeory._lbfgs",),
    "paththeory.compilation_cache": ("paththeory._compilation_cache",),
    "paththeory.data": ("paththeory.tasks.data",),
    "paththeory.stats": ("paththeory.experiments.stats",),
    "paththeory.bench": ("paththeory.experiments.bench",),
    "paththeory.plots": ("paththeory.display.plots",),
    "paththeory.widgets": ("paththeory.display.widgets",),
    "paththeory.chapter": ("paththeory.display.notices", "paththeory.display.tables"),
    "paththeory.problems": ("paththeory.exercises.problems",),
    "paththeory.grading": ("paththeory.exercises.graded_cells",),
}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of :data:`MOVED` and loads them from their new homes."""

    def find_spec(self, fullname, path=None, target=None):
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec):
        homes = MOVED[spec.name]
        warnings.warn(f"{spec.name} moved to {' and '.join(homes)}; import it from there "
                      "(the old path will be removed).", DeprecationWarning, stacklevel=3)
        modules = [importlib.import_module(home) for home in homes]
        if len(modules) == 1:
            return modules[0]
        merged = types.ModuleType(spec.name, f"{spec.name}: the names of {', '.join(homes)}.")
        for module in modules:
            merged.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("_")})
        return merged

    def exec_module(self, module) -> None:
        return None


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
