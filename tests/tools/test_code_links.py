"""tools/paththeory_tools/sphinxext/code_links.py: in a real (tiny) strict Sphinx build, a ``py`` role to an
object of the package that the API documents builds, and one that points nowhere fails the build with
a warning at the role's line (Sphinx itself says nothing unless ``nitpicky`` is on)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sphinx")
from sphinx.cmd.build import build_main  # noqa: E402

from paththeory_tools.sphinxext import code_links  # noqa: E402

CONF = (
    "import sys\n"
    "sys.path.insert(0, {here!r})\n"
    "extensions = ['sphinx.ext.autodoc', 'paththeory_tools.sphinxext.code_links']\n"
    # Another in-process Sphinx build of the same test worker may have registered the docutils nodes first.
    "suppress_warnings = ['app.add_node', 'app.add_directive', 'app.add_role', 'app.add_generic_role']\n"
)

#: A module whose signature names an object of the package that the page does not document: a type
#: hint's cross-reference, which the extension leaves alone.
HINTED = (
    "from paththeory.kernels import GramBlocks\n\n\n"
    "def blocks() -> GramBlocks:\n"
    '    """Returns Gram blocks."""\n'
)

PAGE = (
    "Page\n====\n\n"
    ".. autofunction:: paththeory.action.entropy\n\n"
    ".. autofunction:: hinted.blocks\n\n"
    "The entropy is computed by :py:func:`paththeory.action.entropy`, also shown short as\n"
    ":py:func:`~paththeory.action.entropy`; :py:func:`numpy.linalg.slogdet` is not the package's.\n"
)


def _build(root: Path, extra: str = "") -> tuple[int, str, str]:
    """Build ``root/src`` strictly (``-W --keep-going``, as ``make book``): exit status, warnings, page HTML."""
    src = root / "src"
    src.mkdir()
    (src / "conf.py").write_text(CONF.format(here=str(src)))
    (src / "hinted.py").write_text(HINTED)
    (src / "index.rst").write_text(PAGE + extra)
    warnings = root / "warnings.txt"
    status = build_main(["-W", "--keep-going", "-E", "-q", "-b", "html", "-w", str(warnings),
                         "-d", str(root / "doctrees"), str(src), str(root / "html")])
    html = root / "html" / "index.html"
    return status, warnings.read_text(), (html.read_text() if html.exists() else "")


def test_a_role_to_a_documented_function_builds_strictly_and_links(tmp_path):
    status, warnings, html = _build(tmp_path)
    assert status == 0, warnings
    assert warnings == ""
    assert 'href="#paththeory.action.entropy"' in html


def test_a_role_that_points_nowhere_fails_the_strict_build(tmp_path):
    status, warnings, _ = _build(tmp_path, "\nAnd by :py:func:`paththeory.action.no_such_function`.\n")
    assert status != 0
    assert "py:func reference target not found: paththeory.action.no_such_function" in warnings
    assert "index.rst:" in warnings  # at the role's source location
    assert warnings.count("reference target not found") == 1  # the resolved roles and the type hint pass


@pytest.mark.parametrize("target, checked", [
    ("paththeory.action.entropy", True), ("~paththeory.solve.Theory", True), ("paththeory", True),
    (".paththeory.model", True), ("numpy.ndarray", False), ("paththeory_tools.cli", False), ("Theory", False),
])
def test_only_targets_in_the_package_are_checked(target, checked):
    assert code_links.is_package_target(target) is checked


def test_the_extension_is_registered_in_the_book():
    import yaml

    config = yaml.safe_load((Path(__file__).resolve().parents[2] / "_config.yml").read_text())
    assert "paththeory_tools.sphinxext.code_links" in config["sphinx"]["extra_extensions"]
    assert code_links.setup(type("App", (), {"connect": lambda *a, **k: 0})()) == {
        "parallel_read_safe": True, "parallel_write_safe": True}
