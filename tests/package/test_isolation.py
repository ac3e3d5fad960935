"""Tests and chapters name no folder of one machine: the audit hook of ``conftest.py`` catches what a
test writes (or reads from the temporary folder) outside pytest's folders, and no file under
``tests/``, ``paththeory/``, ``book/`` or ``.ci/`` spells an absolute path of a machine."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

from tests import conftest

REPO = Path(__file__).resolve().parents[2]
#: A quoted absolute path under a machine's own folders (a home, the temporary folder, a workspace).
MACHINE_PATH = re.compile(r"""["'`](/tmp|/var/tmp|/home|/root|/work|/mnt|/Users|/opt|/srv)/""")
#: Files that spell such paths on purpose: the page checker's patterns, the audit hook and their tests.
EXEMPT = {".ci/check_html.py", "tests/book/test_book.py", "tests/package/test_isolation.py", "tests/conftest.py"}


@pytest.mark.parametrize("event, args, caught", [
    ("open", ("/tmp/paththeory-not-allowed/x.png", "w", 0), True),
    ("open", ("/tmp/paththeory-not-allowed/x.json", "r", 0), True),
    ("os.mkdir", ("/tmp/paththeory-not-allowed", 0o777, -1), True),
    ("os.rename", ("/tmp/a", "/tmp/b", -1, -1), True),
    ("open", ("/dev/null", "w", 0), False),
    ("open", (3, "w", 0), False),
])
def test_the_audit_hook_sees_files_outside_the_test_folders(event, args, caught):
    before = len(conftest._outside)
    conftest._audit(event, args)
    new = conftest._outside[before:]
    del conftest._outside[before:]  # recorded by hand here, not by this test's own file access
    assert bool(new) is caught


def test_tempfile_writes_inside_the_session_folder(tmp_path_factory):
    base = tmp_path_factory.getbasetemp().resolve()
    with tempfile.NamedTemporaryFile() as f:
        assert Path(f.name).resolve().is_relative_to(base)


def test_no_file_names_an_absolute_path_of_one_machine():
    files = [p for top in ("tests", "paththeory", "tools", "book", ".ci") for p in (REPO / top).rglob("*")
             if p.is_file() and p.suffix in {"", ".py", ".md", ".yml", ".sh", ".toml", ".ipynb"}
             and "__pycache__" not in p.parts and not p.name.startswith(".")]
    assert len(files) > 30
    hits = [f"{p.relative_to(REPO)}:{n}" for p in files if str(p.relative_to(REPO)) not in EXEMPT
            for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if MACHINE_PATH.search(line)]
    assert hits == []
