"""The command line speaks in one line: every bad argument or missing file ends with one line on
stderr and a non-zero exit status, before any work, and ``--debug`` brings the traceback back."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from paththeory import __version__, training


def _cli(*args: str, cwd, **env: str) -> subprocess.CompletedProcess:
    """``python -m paththeory ARGS`` in ``cwd`` with extra environment variables."""
    full = {k: v for k, v in os.environ.items() if k not in ("PATHTHEORY_PROFILE", "PATHTHEORY_DEBUG")}
    return subprocess.run([sys.executable, "-m", "paththeory", *args], cwd=cwd, env={**full, **env},
                          capture_output=True, text=True, timeout=300, check=False)


def _damaged_checkpoint(folder) -> str:
    """A checkpoint whose ``.npz`` was cut in half (an interrupted copy)."""
    params = {"Q": np.zeros((1, 2, 2, 4)), "K": np.zeros((1, 2, 2, 4)), "V0": np.zeros((3, 4)),
              "V": (np.zeros((2, 3, 3)),), "a": np.zeros(3)}
    npz, _ = training.save_checkpoint(folder / "damaged", params, {"config": {"channels": 1}})
    npz.write_bytes(npz.read_bytes()[:100])
    return str(folder / "damaged")


BAD_INPUTS = {
    "unknown checkpoint": (["reproduce", "omniglot", "--profile", "smoke", "--out", "o", "--checkpoint", "nosuch"],
                           {}, "put nosuch.npz and nosuch.json in one of"),
    "unknown profile in the environment": (["reproduce", "markov", "--out", "o"], {"PATHTHEORY_PROFILE": "bogus"},
                                           "valid profiles are smoke, colab, paper"),
    "unknown profile option": (["reproduce", "markov", "--profile", "bogus", "--out", "o"], {}, "invalid choice"),
    "negative training steps": (["train", "omniglot", "--steps", "-1", "--out", "o"], {},
                                "steps must be a positive integer"),
    "empty reproduce output": (["reproduce", "markov", "--profile", "smoke", "--out", ""], {}, "output path is empty"),
    "empty training output": (["train", "omniglot", "--out", ""], {}, "output path is empty"),
    "unknown training option": (["train", "omniglot", "--bogus", "--out", "o"], {}, "unrecognized arguments: --bogus"),
    "zero baseline steps": (["bench", "--baseline-max-steps", "0"], {}, "must be >= 1"),
    "checkpoint for the wrong chapter": (["reproduce", "markov", "--out", "o", "--checkpoint", "omniglot_l2h8"], {},
                                         "omniglot` only"),
    "no command": ([], {}, "required"),
    "empty checkpoint name": (["reproduce", "omniglot", "--profile", "smoke", "--out", "o", "--checkpoint", ""], {},
                              "checkpoint name is empty"),
    "negative training time limit": (["train", "omniglot", "--time-limit-minutes", "-1", "--out", "o"], {},
                                     "time_limit_minutes must be > 0"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_a_bad_argument_gives_one_line_and_no_work(case, tmp_path):
    args, env, message = BAD_INPUTS[case]
    out = _cli(*args, cwd=tmp_path, **env)
    assert out.returncode != 0
    assert "Traceback" not in out.stdout + out.stderr
    assert len(out.stderr.splitlines()) == 1 and message in out.stderr, out.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written, e.g. no ./results.json for --out ""


def test_an_existing_file_as_output_folder_and_a_damaged_checkpoint(tmp_path):
    (tmp_path / "taken").write_text("")
    out = _cli("reproduce", "markov", "--out", "taken", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "is an existing file" in out.stderr
    stem = _damaged_checkpoint(tmp_path)
    out = _cli("reproduce", "omniglot", "--profile", "smoke", "--out", "o", "--checkpoint", stem, cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr and out.stderr.count("\n") == 1
    assert f"{stem}.npz cannot be read" in out.stderr and "paththeory train omniglot" in out.stderr


@pytest.mark.parametrize("how", ["option", "environment"])
def test_debug_shows_the_traceback(how, tmp_path):
    args = ["reproduce", "omniglot", "--profile", "smoke", "--out", "o", "--checkpoint", "nosuch"]
    out = (_cli("--debug", *args, cwd=tmp_path) if how == "option"
           else _cli(*args, cwd=tmp_path, PATHTHEORY_DEBUG="1"))
    assert out.returncode != 0 and "Traceback" in out.stderr and "CheckpointNotFoundError" in out.stderr


def test_version_and_help(tmp_path):
    out = _cli("--version", cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == f"paththeory {__version__}"
    helps = {" ".join(args): _cli(*args, "--help", cwd=tmp_path).stdout
             for args in ([], ["bench"], ["reproduce"], ["train"], ["train", "omniglot"])}
    assert all("usage: paththeory" in text and "``" not in text and "spec §" not in text for text in helps.values())
    assert "--debug" in helps[""] and "--version" in helps[""]
