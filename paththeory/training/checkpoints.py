"""Checkpoints of trained networks: an ``.npz`` of float32 arrays and a ``.json`` of metadata, written
atomically with the npz's SHA-256 in the json, found in ``$PATHTHEORY_CHECKPOINTS``, the user cache
and the package.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import json
import os
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from paththeory import _io
from paththeory.model import Architecture
from paththeory.training.batches import evaluation_sets, omniglot_data
from paththeory.training.trainable import Params, TrainConfig, architecture


SHIPPED = "omniglot_l2h4"
#: Every network in the package's ``checkpoints/``: the default one (float32), the other H = 4 seed and
#: the deeper and wider networks of the chapter "Beyond two layers of four heads" (float16 storage).
SHIPPED_NETWORKS = (SHIPPED, "omniglot_l2h4_seed0", "omniglot_l3h3", "omniglot_l2h8")
CHECKPOINTS_ENV_VAR = "PATHTHEORY_CHECKPOINTS"


# --------------------------------------------------------------------------- checkpoints

#: The json key holding the SHA-256 of the ``.npz`` it was written with (see :func:`save_checkpoint`).
DIGEST_KEY = "npz_sha256"


@dataclass(frozen=True)
class Checkpoint:
    """A trained network: its :class:`Architecture` (trained Q/K heads, mean readout), the value
    params ``{"V0", "V", "a"}`` for :func:`paththeory.model.network_output`, and the json metadata."""

    architecture: Architecture
    params: dict
    metadata: dict

    @property
    def trained(self) -> Params:
        """The full training dict, Q/K included (float32), as :func:`~paththeory.training.evaluation.evaluate` takes it."""
        q = np.stack([layer.query for layer in self.architecture.attention]).astype(np.float32)
        k = np.stack([layer.key for layer in self.architecture.attention]).astype(np.float32)
        return {"Q": q, "K": k, **self.params}

    @property
    def config(self) -> TrainConfig:
        return TrainConfig(**self.metadata["config"])

    @property
    def channels(self) -> int:
        """Pixel copies in the tokens the network was trained on (``N0 = 64 * channels``)."""
        return self.config.channels


def checkpoint_files(stem: str | os.PathLike) -> tuple[Path, Path]:
    """``(stem.npz, stem.json)``. Only a final ``.npz`` or ``.json`` is taken off ``stem``; any other
    dot is part of the name (``"run.seed0"`` -> ``run.seed0.npz``, ``run.seed0.json``)."""
    path = Path(str(stem))
    if not path.name:
        raise ValueError(f"{str(stem)!r} is not a checkpoint name; give a name such as 'runs/mynet'.")
    if path.suffix in (".npz", ".json"):
        path = path.with_suffix("")
    return path.with_name(path.name + ".npz"), path.with_name(path.name + ".json")


def _config_problem(metadata) -> str | None:
    """What keeps ``metadata`` from holding a :class:`TrainConfig` under ``"config"``, or ``None``."""
    if not isinstance(metadata, dict):
        return "does not hold a json object"
    config = metadata.get("config")
    if not isinstance(config, dict):
        return "has no 'config' object (the TrainConfig settings the network was trained with)"
    unknown = sorted(set(config) - {f.name for f in dataclasses.fields(TrainConfig)})
    if unknown:
        return f"has config keys {unknown} that TrainConfig does not know (written by another version?)"
    try:
        TrainConfig(**config)
    except (TypeError, ValueError) as err:
        return f"has a config that TrainConfig rejects ({err})"
    return None


def save_checkpoint(stem: str | os.PathLike, params: Params, metadata: dict, *,
                    storage: str = "float32") -> tuple[Path, Path]:
    """Write ``stem.npz`` (``Q``, ``K``, ``V0``, ``V1..VL``, ``a``) and ``stem.json`` (``metadata``).

    ``metadata`` must hold the training ``config`` (``dataclasses.asdict`` of a :class:`TrainConfig`)
    and only what JSON can hold; both are checked before anything is written. The files are written
    atomically, and the json records the SHA-256 of the npz, so :func:`load_checkpoint` refuses a
    pair mixed by an interrupted save; two saves of one checkpoint at once take turns (they hold the
    folder's lock, ``paththeory._io.folder_lock``), so the pair is always one save's.
    ``storage="float16"`` halves the file (compressed npz, each weight rounded to a relative 5e-4);
    :func:`load_checkpoint` reads either back as float32.
    """
    if storage not in ("float32", "float16"):
        raise ValueError(f"storage must be 'float32' or 'float16', got {storage!r}.")
    npz, meta = checkpoint_files(stem)
    problem = _config_problem(metadata)
    if problem:
        raise ValueError(f"the checkpoint metadata {problem}; pass {{'config': dataclasses.asdict(config), ...}}. "
                         "Nothing was written.")
    _io.json_text(metadata, "the checkpoint metadata")  # fails here, before any file is written
    arrays = {"Q": params["Q"], "K": params["K"], "V0": params["V0"], "a": params["a"]}
    arrays.update({f"V{l + 1}": v for l, v in enumerate(params["V"])})
    arrays = {k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()}
    if storage == "float16":
        not_finite = [k for k, v in arrays.items() if not np.all(np.isfinite(v))]
        if not_finite:  # no storage helps these (and load_checkpoint refuses them from either)
            raise ValueError(f"weights {not_finite} hold NaN or infinite values (a diverged training run?); nothing "
                             "was written. Train again with a smaller learning rate, or save an earlier checkpoint.")
        too_large = [k for k, v in arrays.items() if not np.all(np.abs(v) < np.finfo(np.float16).max)]
        if too_large:
            raise ValueError(f"weights {too_large} exceed the float16 range (65504); save with storage='float32'.")
        arrays = {k: v.astype(np.float16) for k, v in arrays.items()}
    npz.parent.mkdir(parents=True, exist_ok=True)
    with _io.folder_lock(npz.parent), _io.atomic_path(npz) as tmp:  # two saves at once take turns
        (np.savez_compressed if storage == "float16" else np.savez)(tmp, **arrays)
        # the json goes first: between the two renames a reader sees new metadata beside old weights,
        # which their digests tell apart
        _io.write_json(meta, {**metadata, DIGEST_KEY: _io.sha256(tmp)})
    return npz, meta


class CheckpointNotFoundError(FileNotFoundError):
    """A named checkpoint that is in none of the folders searched; the message lists them."""


class CorruptCheckpointError(ValueError):
    """A checkpoint file that cannot be read or lacks what a checkpoint holds; the message names the file."""


def checkpoint_folders() -> list[Path]:
    """Where :func:`locate_checkpoint` looks, in order (yours first, as for data):
    ``$PATHTHEORY_CHECKPOINTS``, ``<user cache>/checkpoints`` (``~/.cache/paththeory/checkpoints``)
    and the package's own ``checkpoints/`` (:data:`SHIPPED_NETWORKS`)."""
    from paththeory._io import cache_dir

    folders = [Path(os.environ[CHECKPOINTS_ENV_VAR]).expanduser()] if os.environ.get(CHECKPOINTS_ENV_VAR) else []
    folders.append(cache_dir() / "checkpoints")
    folders.append(_shipped_folder())
    return list(dict.fromkeys(folders))


def _shipped_folder() -> Path:
    """The package's own ``checkpoints/`` (:data:`SHIPPED_NETWORKS`)."""
    return Path(str(importlib.resources.files("paththeory") / "checkpoints"))


def locate_checkpoint(name: str | os.PathLike) -> Path:
    """The ``.npz`` of checkpoint ``name`` (e.g. ``"omniglot_l2h8"``), or of a path given directly.

    Raises :class:`CheckpointNotFoundError`, naming the folders searched, when no folder of
    :func:`checkpoint_folders` holds both ``name.npz`` and ``name.json``.

    Example:
      >>> locate_checkpoint(SHIPPED).name
      'omniglot_l2h4.npz'
    """
    if not str(name).strip():
        raise ValueError(f"the checkpoint name is empty: pass a name such as {SHIPPED!r} or a path to a .npz.")
    npz, _ = checkpoint_files(name)
    stem = npz.with_name(npz.stem)
    candidates = [stem] if stem.parent != Path(".") or stem.is_absolute() else []
    candidates += [folder / stem.name for folder in checkpoint_folders()]
    for c in candidates:
        if all(f.is_file() for f in checkpoint_files(c)):
            return checkpoint_files(c)[0]
    raise CheckpointNotFoundError(
        f"checkpoint {stem.name!r} was not found: put {stem.name}.npz and {stem.name}.json in one of "
        f"{', '.join(str(c.parent) for c in candidates)} (or set {CHECKPOINTS_ENV_VAR} to their folder)."
    )


def load_checkpoint(path: str | os.PathLike | None = None) -> Checkpoint:
    """Read a checkpoint (``.npz`` + ``.json``, given with or without suffix, or by name as
    :func:`locate_checkpoint` finds it); default: the shipped one."""
    path = SHIPPED if path is None else path
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a checkpoint name such as {SHIPPED!r} or a path to a .npz; got "
                        f"{type(path).__name__} {path!r}.")
    if not str(path).strip() or not any(f.exists() for f in checkpoint_files(path)):
        path = locate_checkpoint(path)
    npz, meta = checkpoint_files(path)
    if not npz.is_file() or not meta.is_file():
        raise ValueError(f"a checkpoint needs both {npz} and {meta}; at least one is missing.")
    arrays, metadata = _read_arrays(npz), _read_metadata(meta)
    digest = metadata.pop(DIGEST_KEY, None)
    if digest is not None and digest != _io.sha256(npz):
        raise CorruptCheckpointError(
            f"checkpoint files {npz} and {meta} do not belong together (the npz is not the one the json was "
            "written with: an interrupted save or copy); copy or write both again."
        )
    n_layers = arrays["Q"].shape[0]
    params = {"V0": arrays["V0"], "V": tuple(arrays[f"V{l + 1}"] for l in range(n_layers)), "a": arrays["a"]}
    arch = architecture({"Q": arrays["Q"], "K": arrays["K"]})
    return Checkpoint(arch, params, metadata)


def _corrupt(path: Path, problem: str) -> CorruptCheckpointError:
    """The error for an unreadable or incomplete checkpoint file, with what to do about it: reinstall the package
    for a shipped network (training one anew would write into the package, and with other settings)."""
    fix = ("reinstall paththeory, which ships it" if path.parent.resolve() == _shipped_folder().resolve() else
           f"copy it again (both .npz and .json) or write a new one with `paththeory train omniglot --out "
           f"{path.with_suffix('')}`")
    return CorruptCheckpointError(f"checkpoint file {path} {problem}; it is damaged or incomplete: {fix}.")


def _read_arrays(npz: Path) -> dict[str, np.ndarray]:
    """The arrays of a checkpoint's ``.npz``: ``Q``, ``K`` ``[L, H, G, N0]``, ``V0``, ``V1..VL``, ``a``."""
    try:
        with np.load(npz, allow_pickle=False) as f:
            arrays = {k: np.asarray(f[k], dtype=np.float32) for k in f.files}  # float16 storage too
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise _corrupt(npz, f"cannot be read as an npz archive ({type(exc).__name__})") from exc
    n_layers = arrays["Q"].shape[0] if "Q" in arrays and arrays["Q"].ndim == 4 else 0
    missing = [k for k in ("Q", "K", "V0", "a", *(f"V{l + 1}" for l in range(n_layers))) if k not in arrays]
    if missing or not n_layers:
        problem = f"lacks the arrays {', '.join(missing)}" if missing else "has a Q that is not [L, H, G, N0]"
        raise _corrupt(npz, problem)
    _, heads, _, n0 = arrays["Q"].shape
    n = arrays["a"].shape[0] if arrays["a"].ndim == 1 else 0
    shapes = {"K": arrays["Q"].shape, "V0": (n, n0), "a": (n,), **{f"V{l + 1}": (heads, n, n) for l in range(n_layers)}}
    wrong = [f"{k} {arrays[k].shape}" for k, shape in shapes.items() if arrays[k].shape != shape]
    if wrong:
        raise _corrupt(npz, f"has arrays of inconsistent shapes ({', '.join(wrong)}; Q is {arrays['Q'].shape})")
    if not all(np.all(np.isfinite(a)) for a in arrays.values()):
        raise _corrupt(npz, "holds NaN or infinite weights")
    return arrays


def _read_metadata(meta: Path) -> dict:
    """The json metadata of a checkpoint: an object with (at least) the training ``config``."""
    try:
        metadata = json.loads(meta.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _corrupt(meta, f"is not valid json ({exc})") from exc
    problem = _config_problem(metadata)
    if problem:
        raise _corrupt(meta, problem)
    return metadata


def checkpoint_sequences(checkpoint: Checkpoint, names: Sequence[str] = ("test",), *,
                         root: str | os.PathLike | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Rebuild the evaluation sequences a checkpoint's accuracies were measured on."""
    recorded = checkpoint.metadata.get("data")
    if not isinstance(recorded, dict) or not {"source", "mnist_context"} <= set(recorded):
        raise ValueError("the checkpoint's metadata has no 'data' with 'source' and 'mnist_context' (written by "
                         "paththeory train omniglot), so its evaluation sequences cannot be rebuilt.")
    config = checkpoint.config
    data = omniglot_data(dataclasses.replace(config, augment="none"), root)
    if data.source != recorded["source"]:
        raise ValueError(f"the checkpoint was evaluated on {recorded['source']}, "
                         f"but {data.source} was found; its character split differs.")
    return evaluation_sets(config, data, names, root=root, mnist_context=recorded["mnist_context"])
