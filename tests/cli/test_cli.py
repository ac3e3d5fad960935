"""The command line speaks in one line: every bad argument or missing file ends with one line on
stderr and a non-zero exit status, before any work, and ``--debug`` brings the traceback back."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import numpy as np
import pytest

from paththeory import __version__, cli, training


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
    "NaN learning rate": (["train", "omniglot", "--lr", "nan", "--out", "o"], {},
                          "TrainConfig.lr must be a finite number; got nan"),
    "unknown debug switch": (["reproduce", "markov", "--out", "o"], {"PATHTHEORY_DEBUG": "maybe"},
                             "$PATHTHEORY_DEBUG must be one of 1, true, yes, on or 0, false, no, off; got 'maybe'"),
    "data root typo": (["train", "omniglot", "--data-root", "nowhere", "--out", "o"], {},
                       "'nowhere' is not an existing folder"),
    "unknown validity sampler": (["validity", "--sampler", "hmc", "--out", "o"], {},
                                 "argument --sampler: invalid choice: 'hmc'"),
    "unknown residual sampler": (["residual", "--sampler", "Gibbs", "--out", "o"], {},
                                 "argument --sampler: invalid choice: 'Gibbs'"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_a_bad_argument_gives_one_line_and_no_work(case, tmp_path):
    args, env, message = BAD_INPUTS[case]
    out = _cli(*args, cwd=tmp_path, **env)
    assert out.returncode != 0
    assert "Traceback" not in out.stdout + out.stderr
    assert len(out.stderr.splitlines()) == 1 and message in out.stderr, out.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written, e.g. no ./results.json for --out ""


@pytest.mark.parametrize("args, message", [
    (["reproduce", "markov", "--out", "taken"], "the output folder taken is a file"),
    (["reproduce", "omniglot", "--out", "taken/out"], "the output folder taken/out cannot be created: taken is a file"),
    (["train", "omniglot", "--out", "taken/net"], "cannot write the checkpoint taken/net: the output folder taken is a file"),
    (["train", "omniglot", "--out", "folder"], "'folder' is a folder; give a checkpoint name in it, e.g. folder/mynet"),
    (["train", "omniglot", "--out", "net", "--data-root", "folder/typo"], "'folder/typo' is not an existing folder"),
])
def test_an_unusable_output_or_data_folder_fails_before_any_work(tmp_path, args, message):
    (tmp_path / "taken").write_text("")
    (tmp_path / "folder").mkdir()
    out = _cli(*args, cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and message in out.stderr, out.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["folder", "taken"]  # nothing created


def test_a_damaged_checkpoint(tmp_path):
    stem = _damaged_checkpoint(tmp_path)
    out = _cli("reproduce", "omniglot", "--profile", "smoke", "--out", "o", "--checkpoint", stem, cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr and out.stderr.count("\n") == 1
    assert f"{stem}.npz cannot be read" in out.stderr and "paththeory train omniglot" in out.stderr


@pytest.mark.parametrize("how", ["option", "environment", "environment, spelled true"])
def test_debug_shows_the_traceback(how, tmp_path):
    args = ["reproduce", "omniglot", "--profile", "smoke", "--out", "o", "--checkpoint", "nosuch"]
    out = (_cli("--debug", *args, cwd=tmp_path) if how == "option"
           else _cli(*args, cwd=tmp_path, PATHTHEORY_DEBUG="1" if how == "environment" else "True"))
    assert out.returncode != 0 and "Traceback" in out.stderr and "CheckpointNotFoundError" in out.stderr


@pytest.mark.parametrize("value", ["false", "OFF"])  # every spelling: tests/package/test_files_safety.py
def test_debug_switched_off_in_the_environment_keeps_one_line(value, tmp_path):
    out = _cli("reproduce", "omniglot", "--profile", "smoke", "--out", "o", "--checkpoint", "nosuch", cwd=tmp_path,
               PATHTHEORY_DEBUG=value)
    assert out.returncode == 1 and "Traceback" not in out.stderr and out.stderr.count("\n") == 1


def test_version_and_help(tmp_path):
    out = _cli("--version", cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == f"paththeory {__version__}"
    helps = {" ".join(args): _cli(*args, "--help", cwd=tmp_path).stdout
             for args in ([], ["bench"], ["reproduce"], ["train"], ["train", "omniglot"])}
    assert all("usage: paththeory" in text and "``" not in text and "spec §" not in text for text in helps.values())
    assert "--debug" in helps[""] and "--version" in helps[""]


def _fake_training(monkeypatch, stopped):
    """``train omniglot`` without data or training: a tiny network, stopped as asked."""
    params = {"Q": np.zeros((1, 2, 2, 64), np.float32), "K": np.zeros((1, 2, 2, 64), np.float32),
              "V0": np.ones((3, 64), np.float32), "V": (np.ones((2, 3, 3), np.float32),), "a": np.ones(3, np.float32)}
    data = types.SimpleNamespace(source="omniglot:fake", pool_labels=np.arange(4),
                                 split=types.SimpleNamespace(train=[0, 1], validation=[2], test=[3]))
    monkeypatch.setattr(training, "omniglot_data", lambda config, root: data)
    monkeypatch.setattr(training, "default_mnist_context", lambda root: "test")
    monkeypatch.setattr(training, "evaluation_sets", lambda *a, **k: {"validation": (None, None)})
    monkeypatch.setattr(training, "evaluate", lambda *a, **k: 0.75)
    monkeypatch.setattr(training, "train", lambda *a, **k: training.TrainResult(params, {"step": [0]}, 0, 7, 1.0, stopped))


@pytest.mark.parametrize("stopped, status", [("interrupted", 130), ("time limit", 0), (None, 0)])
def test_train_writes_the_best_model_also_when_stopped_early(tmp_path, monkeypatch, capsys, stopped, status):
    _fake_training(monkeypatch, stopped)
    argv = ["--out", str(tmp_path / "runs" / "run.v2"), "--layers", "1", "--heads", "2", "--d-model", "3",
            "--channels", "1", "--n-eval", "2"] + (["--time-limit-minutes", "1.5"] if stopped == "time limit" else [])
    assert cli.train_command(argv, "paththeory train omniglot ...") == status
    ck = training.load_checkpoint(tmp_path / "runs" / "run.v2")  # the dot is kept: run.v2.npz, not run.npz
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["run.v2.json", "run.v2.npz"]
    assert ck.metadata["stopped"] == stopped and ck.metadata["steps_done"] == 7
    assert ("accuracies" in ck.metadata) == (stopped != "interrupted")
    err = capsys.readouterr().err
    assert ("wrote the best model so far (step 0)" in err) == (stopped == "interrupted")
    assert ("stopped by --time-limit-minutes 1.5 after 7 of" in err) == (stopped == "time limit")


def test_settings_of_a_checkpoint_given_by_path(tmp_path):
    from paththeory.experiments import omniglot

    for spelling in ("omniglot_l2h8", tmp_path / "omniglot_l2h8.npz", f"{tmp_path}/omniglot_l2h8"):
        assert omniglot.settings("smoke", spelling) == omniglot.settings("smoke", "omniglot_l2h8")
    assert omniglot.settings("smoke", tmp_path / f"{training.SHIPPED}.json") == omniglot.SETTINGS["smoke"]
    with pytest.raises(ValueError, match="no settings for network 'mine'.*name the checkpoint files"):
        omniglot.settings("smoke", tmp_path / "mine.npz")


def test_bench_offers_every_case_and_all_runs_them(monkeypatch, capsys):
    from paththeory.experiments import bench
    from paththeory.cli import main

    ran = []
    monkeypatch.setattr(bench, "run", lambda cases, **kw: ran.append(tuple(cases)) or {"cases": []})
    monkeypatch.setattr(bench, "format_table", lambda report: "table")
    assert main(["bench"]) == 0 and ran[-1] == tuple(bench.CASES)
    for case in bench.CASES:
        assert main(["bench", "--case", case]) == 0 and ran[-1] == (case,)
    assert "sampling" not in bench.CASES  # about 20 minutes: run on its own


@pytest.mark.parametrize("command, what", [("validity", "the validity figure"),
                                           ("residual", "the residual-stream chapter")])
@pytest.mark.parametrize("sampler", [None, "nuts", "gibbs"])
def test_the_records_commands_pass_the_sampler_on(monkeypatch, capsys, command, what, sampler):
    import importlib

    from paththeory.cli import main

    module = importlib.import_module(f"paththeory.experiments.{command}")
    calls = []
    monkeypatch.setattr(module, "write_samples", lambda profile, out, **kw: calls.append((profile, out, kw)) or out)
    argv = [command, "--profile", "smoke", "--out", "r.json", "--quiet"] + ([] if sampler is None else
                                                                             ["--sampler", sampler])
    assert main(argv) == 0
    chosen = sampler or "nuts"
    assert calls == [("smoke", "r.json", {"sampler": chosen, "progress": False})]
    name = {"nuts": "NUTS", "gibbs": "Gibbs"}[chosen]
    assert capsys.readouterr().out.strip() == f"the {name} records of {what}: r.json"


def test_bench_sampling_prints_the_efficiency_table(monkeypatch, capsys):
    from paththeory.experiments import bench_sampling
    from paththeory.cli import main

    monkeypatch.setattr(bench_sampling, "sampling_case", lambda: {"rows": []})
    monkeypatch.setattr(bench_sampling, "format_rows", lambda case: "efficiency table")
    assert main(["bench", "--case", "sampling"]) == 0 and "efficiency table" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["notebooks", "student", "course"])
def test_a_command_that_moved_to_the_repository_tools_says_where(command, capsys):
    from paththeory.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert f"paththeory-tools {command}" in str(exit_info.value)


def test_a_corrupt_data_file_names_no_option_the_command_line_lacks(tmp_path):
    """A checksum failure used to suggest ``verify_checksums=False``, a Python argument the command line does not have."""
    (tmp_path / "root" / "omniglot").mkdir(parents=True)
    (tmp_path / "root" / "omniglot" / "images_background.zip").write_bytes(b"not a zip")
    out = _cli("train", "omniglot", "--data-root", "root", "--out", "net", cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert "has md5" in out.stderr and "Delete it and download it again" in out.stderr
    assert "the command line always checks" in out.stderr and "pass verify_checksums" not in out.stderr


def test_missing_data_names_the_command_line_option_too(tmp_path):
    from paththeory.tasks import data

    with pytest.raises(data.DataNotFoundError) as err:
        data.locate("mnist", ["nosuch-idx3-ubyte.gz"], root=tmp_path, download=False)
    assert "--data-root of `paththeory train omniglot`" in str(err.value) and "root= in Python" in str(err.value)


def test_a_damaged_shipped_network_asks_for_a_reinstall_not_a_training_into_the_package():
    from paththeory.training import checkpoints

    shipped = str(checkpoints._corrupt(checkpoints._shipped_folder() / "omniglot_l3h3.npz", "holds NaN weights"))
    assert "reinstall paththeory" in shipped and "train omniglot" not in shipped
    own = str(checkpoints._corrupt(checkpoints.Path("runs/mynet.npz"), "holds NaN weights"))
    assert "paththeory train omniglot --out runs/mynet" in own


def test_no_time_limit_is_spelled_on_the_command_line_by_leaving_the_option_out(tmp_path):
    out = _cli("train", "omniglot", "--time-limit-minutes", "0", "--out", "o", cwd=tmp_path)
    assert out.returncode == 1 and "on the command line, leave out --time-limit-minutes" in out.stderr, out.stderr


def test_the_sampler_choices_are_the_samplers():
    """The command line names the samplers without importing them: the same as the package's."""
    from paththeory.sampling.diagnostics import SAMPLER_NAMES

    assert cli.SAMPLERS == tuple(SAMPLER_NAMES)
