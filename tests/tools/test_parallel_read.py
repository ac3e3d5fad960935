"""tools/paththeory_tools/sphinxext/parallel_read.py: a strict parallel Sphinx build of pages with sphinx-proof directives
(the theory's definitions, lemmas and propositions) reads in two processes and resolves
references between pages."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sphinx.application")
pytest.importorskip("sphinx_proof")

EXT = Path(__file__).resolve().parents[2] / "tools" / "paththeory_tools" / "sphinxext"
PAGES = 6  # Sphinx reads in parallel only from more than five pages


def _project(root: Path) -> Path:
    src = root / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(EXT)!r})\n"
        "extensions = ['sphinx_proof', 'parallel_read']\n"
    )
    names = [f"page{i}" for i in range(PAGES)]
    (src / "index.rst").write_text("Index\n=====\n\n.. toctree::\n\n" + "".join(f"   {n}\n" for n in names))
    for i, name in enumerate(names):
        other = names[(i + 1) % PAGES]
        (src / f"{name}.rst").write_text(
            f"Page {i}\n=======\n\n"
            f".. prf:lemma:: Lemma of page {i}\n   :label: lem-{name}\n\n   A statement.\n\n"
            f"See :prf:ref:`lem-{other}`.\n"
        )
    return src


#: The build, run in a fresh interpreter: Sphinx forks its readers, and this test process has started JAX's threads
#: (other tests of the worker), which a fork must not inherit.
BUILD = """
import sys
from sphinx.application import Sphinx
src, out, doctrees = sys.argv[1:4]
app = Sphinx(src, src, out, doctrees, "html", warningiserror=True, parallel=2, status=None)
assert app.is_parallel_allowed("read"), "parallel read not allowed"
app.build()
sys.exit(app.statuscode)
"""


def test_sphinx_proof_pages_build_in_parallel_without_warnings(tmp_path):
    import subprocess
    import sys

    src = _project(tmp_path)
    out = tmp_path / "html"
    done = subprocess.run([sys.executable, "-c", BUILD, str(src), str(out), str(tmp_path / "doctrees")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "fork" not in done.stderr, done.stderr[-3000:]
    page = (out / "page0.html").read_text()
    assert "page1.html#lem-page1" in page and "Lemma" in page
