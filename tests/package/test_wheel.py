"""The wheel holds the package and its data, and none of the repository's tooling (tools/, book/, tests/)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Modules of the repository tooling (tools/paththeory_tools): none may reach the wheel.
TOOLING = ("notebooks.py", "plain_markdown.py", "edition.py", "paper_map.py", "student.py", "build.py",
           "sphinxext/")


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory) -> list[str]:
    """The file list of a wheel built from a copy of the checkout (the build writes only under tmp)."""
    src = tmp_path_factory.mktemp("src")
    shutil.copytree(ROOT / "paththeory", src / "paththeory", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tools", src / "tools", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)]
    if subprocess.run(cmd[:5] + ["--no-build-isolation"] + cmd[5:], env=env, capture_output=True).returncode:
        subprocess.run(cmd, env=env, check=True, capture_output=True)
    (wheel,) = out.glob("paththeory-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


def test_the_wheel_has_the_package_and_its_data(wheel_files):
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "paththeory").rglob("*.py")}
    assert modules <= set(wheel_files)
    for data in ("paththeory/checkpoints/omniglot_l2h4.npz", "paththeory/datafiles/README.md",
                 "paththeory/results/validity_smoke.json"):
        assert data in wheel_files


def test_the_wheel_has_none_of_the_tooling(wheel_files):
    tops = {name.split("/")[0] for name in wheel_files}
    assert tops == {"paththeory", *(t for t in tops if t.endswith(".dist-info"))}
    leaked = [name for name in wheel_files for tool in TOOLING if name.startswith("paththeory/") and
              (name.endswith("/" + tool) or f"/{tool}" in name)]
    assert leaked == []
