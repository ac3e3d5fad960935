"""A tiny Sphinx build with one of the repository's extensions, for the extensions' tests."""

from __future__ import annotations

from pathlib import Path

import pytest

EXT = Path(__file__).resolve().parents[2] / "tools" / "paththeory_tools" / "sphinxext"


def build_with_extension(tmp_path: Path, extension: str, index_rst: str, files: dict[str, bytes] | None = None) -> str:
    """Build ``index_rst`` (plus ``files``, name -> bytes) with the extension ``extension`` under ``tmp_path``;
    return the page's HTML."""
    application = pytest.importorskip("sphinx.application")
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(f"import sys\nsys.path.insert(0, {str(EXT)!r})\nextensions = [{extension!r}]\n")
    for name, data in (files or {}).items():
        (src / name).write_bytes(data)
    (src / "index.rst").write_text(index_rst)
    out = tmp_path / "html"
    app = application.Sphinx(str(src), str(src), str(out), str(tmp_path / "doctrees"), "html",
                             status=None, warning=None, freshenv=True)
    app.build()
    return (out / "index.html").read_text()
