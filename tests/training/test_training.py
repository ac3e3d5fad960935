"""Gradient-descent training (the paper's Appendix H.1), checkpoints, head masks and the shipped checkpoint."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import zipfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from paththeory import training
from paththeory.tasks.data import DataNotFoundError
from paththeory.experiments.stats import standard_error
from paththeory.tasks.omniglot import icl_sequences
from paththeory.training import TrainConfig


def _params(heads=3, n=6, n0=8, g=4, seed=0, layers=2):
    config = TrainConfig(heads=heads, d_model=n, qk_dim=g, layers=layers, qk_init="random", qk_scale=2.0)
    return jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), training.init_params(config, n0, seed))


def _synthetic_batches(n0=8, tokens=5, batch=32, seed=0):
    """y = sign(u . mean_t x_t): learnable by the mean-readout network with any attention."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=n0)
    while True:
        x = rng.normal(size=(batch, tokens, n0))
        yield x, np.sign(x.mean(axis=1) @ u)


def test_loss_decreases_on_synthetic_task():
    config = TrainConfig(steps=100, batch_size=32, lr=1e-2, warmup=10, d_model=16, qk_dim=4, heads=2,
                         val_every=10, n_eval=200)
    val = next(_synthetic_batches(batch=200, seed=0))  # same teacher (seed 0), fresh inputs below
    result = training.train(config, _synthetic_batches(seed=0), val, progress=False)
    loss = result.history["loss"]
    # loss[0] is the step-0 record (no steps yet); loss[1] the mean over steps 0-9; 1 - 2/pi = 0.36 is
    # the least MSE a linear predictor of a sign target can reach
    assert loss[-1] < 0.5 * loss[1] and loss[-1] < 0.5, loss
    assert max(result.history["val_accuracy"]) > 0.8
    assert result.params["V0"].dtype == np.float32


def test_qk_gradient_matches_finite_differences():
    """Directional derivatives of the float64 loss along random Q and K directions (central differences)."""
    params = _params()
    rng = np.random.default_rng(1)
    x, y = jnp.asarray(rng.normal(size=(10, 5, 8))), jnp.asarray(np.sign(rng.normal(size=10)))
    loss = jax.jit(training.loss_fn)
    grads = jax.jit(jax.grad(training.loss_fn))(params, x, y)
    eps = 1e-5
    for name in ("Q", "K"):
        for layer in (0, 1):  # one direction per layer: first-layer and last-layer heads
            d = jnp.zeros_like(params[name]).at[layer].set(rng.normal(size=params[name].shape[1:]))
            numeric = (loss({**params, name: params[name] + eps * d}, x, y)
                       - loss({**params, name: params[name] - eps * d}, x, y)) / (2 * eps)
            analytic = jnp.vdot(grads[name], d)
            assert abs(float(analytic) - float(numeric)) < 1e-6 * max(1.0, abs(float(numeric))), (name, layer)
            assert abs(float(analytic)) > 1e-4  # a direction the loss actually depends on


@pytest.mark.parametrize("storage", ["float32", "float16"])
def test_checkpoint_round_trip(tmp_path, storage):
    params = jax.tree.map(lambda a: np.asarray(a, np.float32), _params())
    meta = {"command_line": "paththeory train omniglot --steps 1", "config": {"channels": 1}, "accuracies": {"test": 0.5}}
    npz, js = training.save_checkpoint(tmp_path / "ck", params, meta, storage=storage)
    with zipfile.ZipFile(npz) as z:  # plain .npy members, loadable without pickle
        assert sorted(z.namelist()) == ["K.npy", "Q.npy", "V0.npy", "V1.npy", "V2.npy", "a.npy"]
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_DEFLATED if storage == "float16" else zipfile.ZIP_STORED}
    ck = training.load_checkpoint(tmp_path / "ck.npz")
    assert ck.metadata == meta  # the json also records the npz's digest, checked on load
    assert json.loads(js.read_text()) == {**meta, "npz_sha256": hashlib.sha256(npz.read_bytes()).hexdigest()}
    # float16 keeps 11 significant bits: round to nearest is within 2^-11 of each (normal) value
    rtol, atol = (0, 0) if storage == "float32" else (2.0**-11, 2.0**-25)
    loaded = {**{n: ck.trained[n] for n in ("Q", "K", "V0", "a")}, **{f"V{l}": v for l, v in enumerate(ck.params["V"])}}
    wanted = {**{n: params[n] for n in ("Q", "K", "V0", "a")}, **{f"V{l}": v for l, v in enumerate(params["V"])}}
    for name, value in loaded.items():
        assert value.dtype == np.float32, name
        np.testing.assert_allclose(value, wanted[name], rtol=rtol, atol=atol, err_msg=name)
        if storage == "float16":
            assert not np.array_equal(value, wanted[name]), name  # it was rounded, not stored as float32
    assert ck.architecture.heads == (3, 3) and ck.architecture.readout == "mean"
    with pytest.raises(training.CheckpointNotFoundError, match="nothing"):
        training.load_checkpoint(tmp_path / "nothing")
    (tmp_path / "half.npz").write_bytes(npz.read_bytes())
    with pytest.raises(ValueError, match="missing"):  # an .npz without its .json
        training.load_checkpoint(tmp_path / "half.npz")


@pytest.mark.parametrize("damage, problem", [
    ("truncate", "cannot be read"),
    ("not_npz", "cannot be read"),
    ("drop_V2", "lacks the arrays V2"),
    ("bad_json", "is not valid json"),
    ("json_list", "does not hold a json object"),
])
def test_a_damaged_checkpoint_names_the_file_and_the_fix(tmp_path, damage, problem):
    params = jax.tree.map(lambda a: np.asarray(a, np.float32), _params())
    npz, js = training.save_checkpoint(tmp_path / "ck", params, {"config": {"channels": 1}})
    if damage == "truncate":
        npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])
    elif damage == "not_npz":
        npz.write_bytes(b"\x80\x04not an archive")
    elif damage == "drop_V2":
        with np.load(npz) as f:
            np.savez(npz, **{k: f[k] for k in f.files if k != "V2"})
    elif damage == "bad_json":
        js.write_text('{"config": ')
    else:
        js.write_text("[1, 2]")
    damaged = js if "json" in damage else npz
    with pytest.raises(training.CorruptCheckpointError, match=problem) as err:
        training.load_checkpoint(tmp_path / "ck")
    message = str(err.value)
    assert str(damaged) in message and "paththeory train omniglot" in message and "\n" not in message


def test_head_mask_equals_smaller_network():
    params = _params(heads=3)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 5, 8))
    keep = [np.array([0, 2]), np.array([0, 1, 2])]  # prune head 1 of layer 0 (0-based)
    mask = [np.isin(np.arange(3), k).astype(float) for k in keep]
    small = {
        "Q": [params["Q"][l][k] for l, k in enumerate(keep)], "K": [params["K"][l][k] for l, k in enumerate(keep)],
        "V0": params["V0"], "V": tuple(params["V"][l][k] for l, k in enumerate(keep)), "a": params["a"],
    }
    predict = jax.jit(training.predict)
    f_small = predict(small, x)
    np.testing.assert_allclose(predict(params, x, mask), f_small, rtol=1e-10, atol=1e-12)
    y = np.sign(np.asarray(f_small) + 0.3 * rng.normal(size=40))
    assert training.evaluate(params, x, y, head_mask=mask) == training.evaluate(small, x, y)


def test_gd_order_parameter_is_gram_of_raw_path_weights():
    params = _params(heads=2, layers=2)
    arch = training.architecture(params)
    raw = np.stack([np.asarray(params["V"][0][h1]).T @ np.asarray(params["V"][1][h2]).T @ np.asarray(params["a"])
                    for h1 in range(2) for h2 in range(2)])
    u = training.gd_order_parameter(arch, params)
    np.testing.assert_allclose(u / u.max(), (raw @ raw.T) / (raw @ raw.T).max(), rtol=1e-10)
    assert np.allclose(u, u.T)


def test_shipped_checkpoint_reproduces_held_out_accuracy():
    """The shipped network (GPU-trained, 2 x 4 heads, n = 512, N0 = 192) re-measured on CPU.

    On the json's own 1,000 held-out sequences (rebuilt from their seed) only float32 rounding on a
    different device can differ: at most 5 sequences. On 1,000 fresh held-out sequences the two
    accuracies differ by sampling alone: within three standard errors of a difference of two
    independent binomial accuracies.
    """
    ck = training.load_checkpoint()
    meta = ck.metadata
    for field in ("command_line", "selection", "config", "data", "steps_done", "wall_time_s", "accuracies"):
        assert field in meta
    assert set(meta["accuracies"]) == set(training.EVAL_SETS)
    assert ck.architecture.heads == (4, 4) and ck.channels == 3 and ck.params["V0"].shape == (512, 192)
    try:
        sets = training.checkpoint_sequences(ck, ("test",))
        data = training.omniglot_data(dataclasses.replace(ck.config, augment="none"))
    except DataNotFoundError as err:
        pytest.skip(f"Omniglot data not found here, so the accuracy cannot be re-measured: {err}")
    x, y = sets["test"]
    assert x.shape[2] == 64 * ck.channels
    recorded = meta["accuracies"]["test"]
    assert abs(training.evaluate(ck, x, y) - recorded) <= 5 / len(y)
    x_new, y_new = icl_sequences(data.patches, data.labels, 777, 1000, characters=data.split.test, balanced=True,
                                 channels=ck.channels)
    fresh = training.evaluate(ck, x_new, y_new)
    assert abs(fresh - recorded) <= 3 * np.sqrt(2) * standard_error(recorded, 1000)


def test_float16_storage_rejects_weights_out_of_its_range(tmp_path):
    params = jax.tree.map(lambda a: np.asarray(a, np.float32), _params())
    params["a"] = params["a"] * 0 + 1e5
    with pytest.raises(ValueError, match=r"\['a'\] exceed the float16 range"):
        training.save_checkpoint(tmp_path / "ck", params, {"config": {}}, storage="float16")
    with pytest.raises(ValueError, match="storage must be"):
        training.save_checkpoint(tmp_path / "ck", params, {"config": {}}, storage="bfloat16")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", training.SHIPPED_NETWORKS[1:])
def test_float16_networks_ship_and_reproduce_their_accuracy(name):
    """The other networks ship in float16; their json accuracies were measured on a GPU from the
    float32 weights. On the json's own 1,000 held-out sequences only rounding can differ: the
    float16 storage (an output change of about 1e-3 of the outputs' spread) and float32 on another
    device; at most 5 sequences."""
    path = training.locate_checkpoint(name)
    assert path.parent == training.checkpoint_folders()[-1]  # the package's own folder (looked in last)
    ck = training.load_checkpoint(name)
    for field in ("storage", "differences_from_paper", "command_line", "config", "accuracies"):
        assert field in ck.metadata, field
    assert "NOT the paper's training" in ck.metadata["differences_from_paper"]
    x, y = training.checkpoint_sequences(ck, ("test",))["test"]
    assert abs(training.evaluate(ck, x, y) - ck.metadata["accuracies"]["test"]) <= 5 / len(y)


def test_locate_checkpoint_by_name_and_a_clear_error(tmp_path, monkeypatch):
    assert training.locate_checkpoint(training.SHIPPED) == training.locate_checkpoint(
        training.locate_checkpoint(training.SHIPPED))
    params = jax.tree.map(lambda a: np.asarray(a, np.float32), _params())
    training.save_checkpoint(tmp_path / "mine", params, {"config": {"channels": 1}})
    monkeypatch.setenv(training.CHECKPOINTS_ENV_VAR, str(tmp_path))
    assert training.locate_checkpoint("mine") == tmp_path / "mine.npz"
    assert training.load_checkpoint("mine").architecture.heads == (3, 3)
    with pytest.raises(training.CheckpointNotFoundError, match=r"'nowhere' was not found: put nowhere.npz"):
        training.load_checkpoint("nowhere")


# --------------------------------------------------------------------------- files and bad input


def _np_params(**kw):
    return jax.tree.map(lambda a: np.asarray(a, np.float32), _params(**kw))


@pytest.mark.parametrize("name", ["run.seed0", "run.v2", "my.net.final", "run.npz.bak"])
def test_a_dot_in_a_checkpoint_name_is_kept(tmp_path, name):
    training.save_checkpoint(tmp_path / "run", _np_params(heads=2), {"config": {"heads": 2}})
    npz, js = training.save_checkpoint(tmp_path / name, _np_params(heads=3), {"config": {"heads": 3}})
    assert (npz.name, js.name) == (f"{name}.npz", f"{name}.json")
    assert training.load_checkpoint(tmp_path / "run").architecture.heads == (2, 2)  # not overwritten
    for spelling in (tmp_path / name, npz, js, str(npz)):
        assert training.load_checkpoint(spelling).architecture.heads == (3, 3)


@pytest.mark.parametrize("metadata, message", [
    ({"config": {}, "accuracy": np.float32(0.5)}, r"\['accuracy'\] is a float32"),
    ({"config": {}, "history": {"loss": [0.1, np.float64(0.2), np.int64(3)]}}, r"\['history'\]\['loss'\]\[2\] is a int64"),
    ({"config": {}, "path": Path("x")}, r"\['path'\] is a PosixPath"),
    ({"config": {}, "done": {1, 2}}, r"\['done'\] is a set"),
])
def test_metadata_json_cannot_hold_fails_before_anything_is_written(tmp_path, metadata, message):
    params = _np_params()
    training.save_checkpoint(tmp_path / "ck", params, {"config": {"seed": 7}})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ValueError, match=message):
        training.save_checkpoint(tmp_path / "ck", _np_params(seed=1), metadata)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # the old pair, nothing else
    assert training.load_checkpoint(tmp_path / "ck").config.seed == 7


@pytest.mark.parametrize("metadata, message", [
    ({}, "has no 'config' object"),
    ({"config": [1]}, "has no 'config' object"),
    ({"config": {"stpes": 10}}, r"has config keys \['stpes'\] that TrainConfig does not know"),
    ({"config": {"steps": "10"}}, "TrainConfig.steps must be an integer"),
    ({"config": {"channels": 2}}, "channels must be 1"),
])
def test_metadata_without_a_usable_config_is_refused_on_save_and_on_load(tmp_path, metadata, message):
    with pytest.raises(ValueError, match=message):
        training.save_checkpoint(tmp_path / "new", _np_params(), metadata)
    assert list(tmp_path.iterdir()) == []
    _, js = training.save_checkpoint(tmp_path / "ck", _np_params(), {"config": {}})
    js.write_text(json.dumps(metadata))  # e.g. written by hand or by another program
    with pytest.raises(training.CorruptCheckpointError, match=message) as err:
        training.load_checkpoint(tmp_path / "ck")
    assert str(js) in str(err.value) and "\n" not in str(err.value)


def test_a_mixed_pair_is_refused(tmp_path):
    a_npz, _ = training.save_checkpoint(tmp_path / "a", _np_params(seed=0), {"config": {}})
    b_npz, _ = training.save_checkpoint(tmp_path / "b", _np_params(seed=1), {"config": {}})
    a_npz.write_bytes(b_npz.read_bytes())  # new weights beside old metadata
    with pytest.raises(training.CorruptCheckpointError, match="do not belong together"):
        training.load_checkpoint(tmp_path / "a")


@pytest.mark.parametrize("when", ["after the json", "while writing the npz"])
def test_a_save_cut_short_never_leaves_a_pair_that_loads_as_one_network(tmp_path, monkeypatch, when):
    training.save_checkpoint(tmp_path / "ck", _np_params(seed=0), {"config": {"seed": 0}})
    real = os.replace

    def crash(src, dst):
        if when == "after the json" and str(dst).endswith(".npz"):
            raise KeyboardInterrupt  # the json was renamed, the npz not yet
        real(src, dst)

    monkeypatch.setattr(os, "replace", crash)
    if when == "while writing the npz":
        monkeypatch.setattr(np, "savez", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        training.save_checkpoint(tmp_path / "ck", _np_params(seed=1), {"config": {"seed": 1}})
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.json", "ck.npz"]  # no temporaries left
    if when == "after the json":
        with pytest.raises(training.CorruptCheckpointError, match="do not belong together"):
            training.load_checkpoint(tmp_path / "ck")
    else:
        assert training.load_checkpoint(tmp_path / "ck").config.seed == 0  # the old pair, intact


@pytest.mark.parametrize("name, value, message", [
    ("K", np.zeros((2, 3, 5, 8)), r"inconsistent shapes \(K \(2, 3, 5, 8\)"),
    ("V", (np.zeros((3, 6, 6)), np.zeros((3, 5, 5))), r"inconsistent shapes \(V2 \(3, 5, 5\)"),
    ("a", np.zeros(4), r"inconsistent shapes \(V0 \(6, 8\)"),
    ("V0", np.full((6, 8), np.nan), "holds NaN or infinite weights"),
])
def test_inconsistent_or_non_finite_weights_are_named(tmp_path, name, value, message):
    training.save_checkpoint(tmp_path / "ck", {**_np_params(), name: value}, {"config": {}})
    with pytest.raises(training.CorruptCheckpointError, match=message):
        training.load_checkpoint(tmp_path / "ck")


@pytest.mark.parametrize("field, value, message", [
    ("steps", "100", "TrainConfig.steps must be an integer; got '100'"),
    ("steps", 2.5, "TrainConfig.steps must be an integer; got 2.5"),
    ("heads", True, "TrainConfig.heads must be an integer; got True"),
    ("lr", "3e-4", "TrainConfig.lr must be a finite number"),
    ("lr", float("nan"), "TrainConfig.lr must be a finite number; got nan"),
    ("clip", float("inf"), "TrainConfig.clip must be a finite number"),
    ("qk_init", 1, "TrainConfig.qk_init must be a string"),
    ("augment", None, "TrainConfig.augment must be a string"),
    ("time_limit_minutes", "5", "TrainConfig.time_limit_minutes must be a finite number"),
    ("validation", [0.1], "TrainConfig.validation must be a finite number"),
])
def test_train_config_rejects_a_field_of_the_wrong_type(field, value, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        TrainConfig(**{field: value})


def test_train_config_accepts_numpy_numbers_and_no_time_limit():
    config = TrainConfig(steps=np.int64(5), lr=np.float32(1e-3), warmup=0, time_limit_minutes=None)
    assert config.steps == 5 and TrainConfig(time_limit_minutes=2).time_limit_minutes == 2


def _interrupting(batches, after):
    for i, batch in enumerate(batches):
        if i == after:
            raise KeyboardInterrupt
        yield batch


def test_an_interrupt_keeps_the_best_model_so_far():
    config = TrainConfig(steps=100, batch_size=32, lr=1e-2, warmup=10, d_model=16, qk_dim=4, heads=2,
                         val_every=10, n_eval=200)
    val = next(_synthetic_batches(batch=200, seed=0))
    result = training.train(config, _interrupting(_synthetic_batches(seed=0), 35), val, progress=False)
    assert result.stopped == "interrupted" and result.steps_done == 35
    assert result.history["step"] == [0, 10, 20, 30] and result.best_step in (0, 10, 20, 30)
    assert training.evaluate(result.params, *val) == max(result.history["val_accuracy"])
    with pytest.raises(KeyboardInterrupt):  # before the first validation there is nothing to keep
        training.train(config, _interrupting(_synthetic_batches(seed=0), 0), val, progress=False)
    complete = training.train(dataclasses.replace(config, steps=5), _synthetic_batches(seed=0), val, progress=False)
    assert complete.stopped is None and complete.steps_done == 5


@pytest.mark.parametrize("mask, message", [
    ([np.zeros(3), np.ones(3)], "removes every head of layer 1"),
    ([np.ones(3), np.zeros(3)], "removes every head of layer 2"),
    ([np.ones(3)], "must be a list of L arrays"),
    ([np.ones(2), np.ones(3)], "must be a list of L arrays"),
])
def test_a_head_mask_that_empties_a_layer_is_named_not_blamed_on_the_checkpoint(mask, message):
    params = _params(heads=3)
    x = np.random.default_rng(0).normal(size=(4, 5, 8))
    with pytest.raises(ValueError, match=message) as err:
        training.evaluate(params, x, np.array([1, -1, 1, -1]), head_mask=mask)
    assert "damaged" not in str(err.value)


def test_your_checkpoint_named_like_a_shipped_one_is_found_first(tmp_path, monkeypatch):
    monkeypatch.setenv(training.CHECKPOINTS_ENV_VAR, str(tmp_path))
    training.save_checkpoint(tmp_path / training.SHIPPED, _np_params(heads=3), {"config": {"heads": 3}})
    assert training.checkpoint_folders()[0] == tmp_path
    assert training.locate_checkpoint(training.SHIPPED) == tmp_path / f"{training.SHIPPED}.npz"
    assert training.load_checkpoint().architecture.heads == (3, 3)
    monkeypatch.delenv(training.CHECKPOINTS_ENV_VAR)
    assert training.load_checkpoint().architecture.heads == (4, 4)  # the shipped one again
