"""Gradient-descent training of the attention network with trainable Q/K (the paper's Appendix H.1).

The network is the one of :func:`paththeory.model.network_output` (the paper's Eqs. 1-4: explicit
``1/sqrt(width)`` factors, no residual, LayerNorm or MLP, every layer's attention from the bare
input, mean-pooling readout). All of it is trained with AdamW on the MSE against ``y = +-1``
(decision by sign): the input projection ``V0 [n, N0]``, the value weights ``V[l] [H, n, n]``, the
readout ``a [n]`` and the query/key weights ``Q[l], K[l] [H, G, N0]``. The model kept is the one
with the best accuracy on sequences of held-out *validation* characters.

The shipped network (``paththeory/checkpoints/omniglot_l2h4``) was trained with this module on
one H100 GPU (with a recipe that differs from the paper's in the ways listed in its ``.json``,
``differences_from_paper``: AdamW, warm-up, gradient clipping, fp32, explicit ``1/sqrt(n)``
factors): ``paththeory train omniglot --steps 41000
--batch-size 128 --d-model 512 --qk-dim 128 --channels 3 --lr 3e-4 --warmup 200 --seed 1``
(about 8 minutes; its ``.json`` holds the command line, the validation history and the
accuracies). Of the two H = 4 networks trained so (seeds 0 and 1; seed 0 ships too, in float16), it is the one with the better *validation* accuracy (0.854 against 0.834); on 1,000 balanced
sequences each it reaches 0.838 on held-out characters (the paper: 83.8 %), 0.798 on the one-shot
runs of the evaluation alphabets and 0.711 on MNIST 0 vs 1. The :class:`TrainConfig` defaults are
its settings, except the seed.

On a CPU the same training is out of reach (12-17 hours, estimated by scaling), and a smaller network
(``d_model`` 64, ``--channels 1``, batch 64, lr 5e-3, 20,000 steps, 31 min on 2 cores) stalled on
the loss plateau at MSE ~1, reaching only 56.9 % on held-out characters: with random Q/K the
attention carries no information on which context image matches the query (the correlation
between the label mass reaching the query tokens and ``y`` is ``|r| < 0.05`` at initialisation),
so the value and readout weights shrink first and the Q/K gradients then vanish too, a saddle that
only batch noise leaves. Options kept from those trials: ``--qk-scale`` (Q/K initial std times
``sqrt(N0)``), ``--qk-init shared`` (``K = Q``), warm-up, global-norm clipping, ``--channels 1``
(``N0 = 64``) and ``--augment dihedral`` (8 rotations/reflections of each training character as
new classes, 158 -> 1,264).

Data: the 242 background characters available offline (``load_omniglot("auto")`` uses the full
964-character background set where it can be found); characters are split into train /
validation / held-out test (:func:`paththeory.tasks.omniglot.split_characters`), and the training
characters can be augmented by rotations (and reflections) of every drawing, each a new class.

Checkpoints are an ``.npz`` of float32 arrays (``Q``, ``K`` ``[L, H, G, N0]``, ``V0``, ``V1..VL``,
``a``) and a ``.json`` of metadata (config, command line, data, steps, wall time, accuracies): no
pickles. :func:`save_checkpoint` writes both atomically and records the npz's SHA-256 in the json,
so a pair mixed by an interrupted save is refused on load. :func:`load_checkpoint` reads the shipped
one by default; checkpoints of your own (``$PATHTHEORY_CHECKPOINTS``, the user cache) are looked up
first. The command line ``paththeory train omniglot`` is :func:`paththeory.cli.train_command`.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import json
import math
import numbers
import os
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from paththeory import _io
from paththeory._checks import check_sign_labels
from paththeory.model import Architecture, QKAttention, _check_head_mask, effective_weights, network_output

Params = dict  # {"Q", "K": [L, H, G, N0], "V0": [n, N0], "V": tuple of [H, n, n], "a": [n]}
SHIPPED = "omniglot_l2h4"
#: Every network in the package's ``checkpoints/``: the default one (float32), the other H = 4 seed and
#: the deeper and wider networks of the chapter "Beyond two layers of four heads" (float16 storage).
SHIPPED_NETWORKS = (SHIPPED, "omniglot_l2h4_seed0", "omniglot_l3h3", "omniglot_l2h8")
CHECKPOINTS_ENV_VAR = "PATHTHEORY_CHECKPOINTS"
EVAL_SETS = ("train", "validation", "test", "one_shot_runs", "mnist")


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class TrainConfig:
    """Sizes and optimiser settings of one training run (defaults: the shipped checkpoint's, but its seed 1)."""

    steps: int = 41000
    batch_size: int = 128
    lr: float = 3e-4
    warmup: int = 200
    clip: float = 1.0
    weight_decay: float = 5e-5
    d_model: int = 512
    qk_dim: int = 128
    heads: int = 4
    layers: int = 2
    channels: int = 3
    qk_scale: float = 1.0
    qk_init: str = "random"
    augment: str = "dihedral"
    seed: int = 0
    val_every: int = 1000
    n_eval: int = 1000
    split_seed: int = 0
    validation: float = 0.1
    test: float = 0.25
    time_limit_minutes: float | None = None

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value, kind = getattr(self, field.name), field.type.removesuffix(" | None")
            cls, word = _FIELD_KINDS[kind]
            if value is None and field.type.endswith("| None"):
                continue
            if isinstance(value, bool) or not isinstance(value, cls) or kind != "str" and not math.isfinite(value):
                raise TypeError(f"TrainConfig.{field.name} must be {word}; got {value!r} ({type(value).__name__}).")
        for name in ("steps", "batch_size", "d_model", "qk_dim", "heads", "layers", "val_every", "n_eval"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be a positive integer; got {getattr(self, name)!r}.")
        if self.channels not in (1, 3):
            raise ValueError(f"channels must be 1 (N0 = 64) or 3 (N0 = 192); got {self.channels!r}.")
        if self.qk_init not in ("random", "shared"):
            raise ValueError(f"qk_init must be 'random' or 'shared'; got {self.qk_init!r}.")
        if self.augment not in AUGMENTATIONS:
            raise ValueError(f"augment must be one of {tuple(AUGMENTATIONS)}; got {self.augment!r}.")
        if not (self.lr > 0 and self.clip > 0 and self.weight_decay >= 0 and self.warmup >= 0 and self.qk_scale > 0):
            raise ValueError("lr, clip and qk_scale must be > 0; weight_decay and warmup >= 0.")
        if self.n_eval % 2:
            raise ValueError(f"n_eval must be even (balanced evaluation sets); got {self.n_eval}.")
        if self.time_limit_minutes is not None and not (self.time_limit_minutes > 0):
            raise ValueError(f"time_limit_minutes must be > 0 (or None for no limit); got {self.time_limit_minutes!r}.")


#: The Python type and its description of each kind of :class:`TrainConfig` field.
_FIELD_KINDS = {"int": (numbers.Integral, "an integer"), "float": (numbers.Real, "a finite number"),
                "str": (str, "a string")}

#: Image transforms whose results are new training classes: rotations by k * 90 degrees, then
#: optionally a left-right flip.
AUGMENTATIONS: dict[str, tuple[tuple[int, bool], ...]] = {
    "none": ((0, False),),
    "rot4": tuple((k, False) for k in range(4)),
    "dihedral": tuple((k, f) for f in (False, True) for k in range(4)),
}


# --------------------------------------------------------------------------- parameters and model


def init_params(config: TrainConfig, input_dim: int, seed: int = 0) -> Params:
    """Initial weights (numpy float32). ``V0, V, a ~ N(0, 1)`` (the 1/sqrt(width) factors are explicit);
    ``Q, K ~ N(0, qk_scale^2 / N0)``, and with ``qk_init="shared"`` ``K = Q`` (``K^T Q`` positive
    semi-definite: every head starts out attending to tokens similar to the query)."""
    L, H, G, n = config.layers, config.heads, config.qk_dim, config.d_model
    rng = np.random.default_rng(seed)
    std = config.qk_scale / math.sqrt(input_dim)
    q = std * rng.standard_normal((L, H, G, input_dim))
    k = q if config.qk_init == "shared" else std * rng.standard_normal((L, H, G, input_dim))
    params = {
        "Q": q,
        "K": k,
        "V0": rng.standard_normal((n, input_dim)),
        "V": tuple(rng.standard_normal((H, n, n)) for _ in range(L)),
        "a": rng.standard_normal(n),
    }
    return jax.tree.map(lambda a: a.astype(np.float32), params)


def architecture(params: Params) -> Architecture:
    """The :class:`Architecture` of the trained Q/K (mean readout); works on traced arrays too."""
    return Architecture(
        tuple(QKAttention(q, k) for q, k in zip(params["Q"], params["K"])), readout="mean"
    )


def value_params(params: Params) -> dict:
    """The ``{"V0", "V", "a"}`` part that :func:`paththeory.model.network_output` takes."""
    return {"V0": params["V0"], "V": tuple(params["V"]), "a": params["a"]}


def predict(params: Params, x: jax.Array, head_mask: Sequence | None = None) -> jax.Array:
    """Network output ``f(x)`` ``[B]`` for tokens ``x [B, 48, N0]`` (the paper's Eqs. 1-4)."""
    return network_output(architecture(params), value_params(params), x, head_mask=head_mask)


def loss_fn(params: Params, x: jax.Array, y: jax.Array) -> jax.Array:
    """Mean squared error ``mean (f(x) - y)^2`` against ``y = +-1`` (the paper's Appendix H.1)."""
    return jnp.mean((predict(params, x) - y) ** 2)


def optimizer(config: TrainConfig) -> optax.GradientTransformation:
    """Global-norm clipping, then AdamW with a linear warm-up to a constant learning rate."""
    schedule = optax.linear_schedule(0.0, config.lr, max(config.warmup, 1))
    return optax.chain(
        optax.clip_by_global_norm(config.clip), optax.adamw(schedule, weight_decay=config.weight_decay)
    )


# --------------------------------------------------------------------------- evaluation


@jax.jit
def _predict_jit(params: Params, x: jax.Array, head_mask) -> jax.Array:
    return predict(params, x, head_mask)


def evaluate(checkpoint_or_params, x, y, head_mask: Sequence | None = None, batch_size: int = 500) -> float:
    """Accuracy ``mean(sign f(x) == y)`` of a :class:`Checkpoint` or a training params dict.

    Args:
      x: tokens ``[P, 48, N0]``; ``y``: targets ``[P]`` in ``{-1, +1}``.
      head_mask: list over layers of ``[H_l]`` 0/1 arrays: pruned heads (the paper's Appendix H.2.3).
    Computed in float32, as in training.
    """
    params = checkpoint_or_params.trained if isinstance(checkpoint_or_params, Checkpoint) else checkpoint_or_params
    missing = [k for k in ("Q", "K", "V0", "V", "a") if k not in params]
    if missing:
        raise ValueError(f"params lacks {missing}: pass a Checkpoint or the params of paththeory.training "
                         "(init_params, train), whose queries and keys are trained too.")
    if np.ndim(x) != 3 or np.ndim(y) != 1 or len(x) != len(y) or len(y) == 0:
        raise ValueError(f"x must be [P >= 1, T, N0] and y [P] in {{-1, +1}}; got {np.shape(x)} and {np.shape(y)}.")
    y = check_sign_labels(y, "y")
    if not np.all(np.isfinite(x)):
        raise ValueError("x contains NaN or infinite tokens; clean the input before calling.")
    if head_mask is not None:  # checked here: inside the compiled forward pass the mask is not inspected
        head_mask = _check_head_mask(architecture(params), head_mask, jnp.float32)
    with jax.enable_x64(False):
        p32 = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), params)
        mask = None if head_mask is None else [jnp.asarray(m, jnp.float32) for m in head_mask]
        f = np.concatenate([
            np.asarray(_predict_jit(p32, jnp.asarray(x[i : i + batch_size], jnp.float32), mask))
            for i in range(0, len(y), batch_size)
        ])
    if not np.all(np.isfinite(f)):
        raise ValueError("the network's outputs came out NaN or infinite: its weights are not finite "
                         "(a damaged checkpoint?) or the tokens are too large for float32.")
    return float(np.mean(np.sign(f) == y))


def gd_order_parameter(arch: Architecture, params: dict) -> np.ndarray:
    """"Gradient-descent U" ``w^pi . w^sigma`` ``[n_paths, n_paths]`` from trained weights (the paper's Eqs. 6 and 13).

    ``w^pi`` are the effective weights of :func:`paththeory.effective_weights` (``V0`` excluded);
    they differ from the raw products ``V1^T V2^T a`` by one factor common to all paths, so only
    the colour pattern is meaningful. ``params`` may be the value part or the full training dict.
    """
    w = np.asarray(effective_weights(arch, value_params(params)), dtype=np.float64)
    if w.shape[0] != arch.n_paths:
        raise ValueError(f"params give {w.shape[0]} paths but the architecture has {arch.n_paths}.")
    return w @ w.T


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class OmniglotData:
    """Encoded drawings and the character split of one training run.

    Attributes:
      patches: ``[n_images, 16, 64]`` encoded drawings (:func:`encode_images`); ``labels`` their characters.
      split: train / validation / test character ids.
      pool_patches, pool_labels: the training pool, training characters only, augmented (each
        transform of a character is a new class id).
      source: the data set's ``source`` string, e.g. ``"omniglot:background_small"``.
    """

    patches: np.ndarray
    labels: np.ndarray
    split: object
    pool_patches: np.ndarray
    pool_labels: np.ndarray
    source: str


def omniglot_data(config: TrainConfig, root: str | os.PathLike | None = None) -> OmniglotData:
    """Load Omniglot, split its characters (``config.split_seed``) and build the augmented training pool."""
    from paththeory.data import load_omniglot
    from paththeory.tasks.omniglot import encode_images, split_characters

    chars = load_omniglot(root=root)
    split = split_characters(chars.n_classes, validation=config.validation, test=config.test, seed=config.split_seed)
    patches = encode_images(chars.images)
    train_images = np.isin(chars.labels, split.train)
    pool_patches, pool_labels = [], []
    for i, (k, flip) in enumerate(AUGMENTATIONS[config.augment]):
        images = np.rot90(chars.images[train_images], k, axes=(1, 2))
        images = np.ascontiguousarray(images[:, :, ::-1] if flip else images)
        pool_patches.append(patches[train_images] if i == 0 else encode_images(images))
        pool_labels.append(chars.labels[train_images] + i * chars.n_classes)
    return OmniglotData(
        patches, np.asarray(chars.labels), split, np.concatenate(pool_patches), np.concatenate(pool_labels), chars.source
    )


def default_mnist_context(root: str | os.PathLike | None = None) -> str:
    """``"train"`` where the MNIST training set is on disk (the authors' contexts), else ``"test"``."""
    from paththeory.data import DataNotFoundError, load_mnist

    try:
        load_mnist("train", root=root, download=False)
        return "train"
    except DataNotFoundError:
        return "test"


def evaluation_sets(
    config: TrainConfig,
    data: OmniglotData,
    names: Sequence[str] = EVAL_SETS,
    *,
    root: str | os.PathLike | None = None,
    mnist_context: str | None = None,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Fixed, balanced evaluation sequences ``{name: (x, y)}`` of ``config.n_eval`` sequences each.

    ``train``/``validation``/``test``: Omniglot sequences of those characters (no augmentation);
    ``one_shot_runs``: the 20 runs of the evaluation alphabets; ``mnist``: MNIST 0 vs 1 (the paper's Appendix H.2.2),
    contexts from ``mnist_context`` (default: the training set if present, else the test set).
    Seeds are fixed (``10_000 + index in EVAL_SETS``), so a checkpoint's numbers can be rebuilt.
    """
    from paththeory.data import load_one_shot_runs
    from paththeory.tasks.omniglot import icl_sequences, ood_sequences, one_shot_run_sequences

    unknown = set(names) - set(EVAL_SETS)
    if unknown:
        raise ValueError(f"unknown evaluation sets {sorted(unknown)}; choose from {EVAL_SETS}.")
    n, ch = config.n_eval, config.channels
    out = {}
    for name in names:
        seed = 10_000 + EVAL_SETS.index(name)
        if name in ("train", "validation", "test"):
            chars = getattr(data.split, name)
            out[name] = icl_sequences(data.patches, data.labels, seed, n, characters=chars, balanced=True, channels=ch)
        elif name == "one_shot_runs":
            out[name] = one_shot_run_sequences(load_one_shot_runs(root=root), seed, n, balanced=True, channels=ch)
        else:
            context = mnist_context or default_mnist_context(root)
            out[name] = ood_sequences("mnist", n // 2, context=context, root=root, channels=ch)
    return out


# --------------------------------------------------------------------------- training loop


@dataclass(frozen=True)
class TrainResult:
    """Best-validation parameters (numpy float32), the history and bookkeeping of one run.

    ``history``: ``step``, ``loss`` (mean training loss since the previous record; ``None`` at
    step 0) and ``val_accuracy`` at every validation point (step 0 included).
    """

    params: Params
    history: dict
    best_step: int
    steps_done: int
    wall_time_s: float
    stopped: str | None = None  #: ``"time limit"`` or ``"interrupted"`` (Ctrl-C) when cut short


def omniglot_batches(config: TrainConfig, data: OmniglotData) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Endless fresh training sequences from the (augmented) training pool, seeded by ``config.seed``."""
    from paththeory.tasks.omniglot import icl_sequences

    rng = np.random.default_rng(config.seed)
    while True:
        yield icl_sequences(data.pool_patches, data.pool_labels, rng, config.batch_size, channels=config.channels)


def train(
    config: TrainConfig,
    batches: Iterator[tuple[np.ndarray, np.ndarray]],
    val: tuple[np.ndarray, np.ndarray],
    *,
    progress: bool = True,
) -> TrainResult:
    """AdamW on the MSE over the training batches; keep the parameters of best validation accuracy.

    Args:
      batches: yields ``(x [B, T, N0], y [B])`` (e.g. :func:`omniglot_batches`); ``config.batch_size``
        is not used here.
      val: validation sequences ``(x, y)``, checked every ``config.val_every`` steps and at step 0.
    Runs ``config.steps`` steps or until ``config.time_limit_minutes``, in float32 (with a tqdm bar
    showing loss and validation accuracy if ``progress``). An interrupt (Ctrl-C) after the first
    validation ends the run like the time limit: the best model so far is returned.
    """
    from tqdm.auto import tqdm

    start = time.perf_counter()
    limit = math.inf if config.time_limit_minutes is None else 60.0 * config.time_limit_minutes
    opt = optimizer(config)
    with jax.enable_x64(False):
        x, y = next(batches)
        params = init_params(config, x.shape[2], config.seed)
        state = opt.init(params)

        @jax.jit
        def step(params, state, x, y):
            loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
            updates, state = opt.update(grads, state, params)
            return optax.apply_updates(params, updates), state, loss

        history = {"step": [], "loss": [], "val_accuracy": []}
        best, best_step, losses, kept, stopped = -1.0, 0, [], None, None
        bar = tqdm(total=config.steps, disable=not progress, desc="train", mininterval=2.0)
        done = 0
        try:
            for done in range(config.steps + 1):
                if done % config.val_every == 0 or done == config.steps or time.perf_counter() - start > limit:
                    acc = evaluate(params, *val)
                    history["step"].append(done)
                    history["loss"].append(float(np.mean(losses)) if losses else None)
                    history["val_accuracy"].append(acc)
                    if acc > best:
                        best, best_step, kept = acc, done, jax.tree.map(np.asarray, params)
                    bar.set_postfix(loss=f"{np.mean(losses) if losses else np.nan:.3f}", val_acc=f"{acc:.3f}",
                                    best=f"{best:.3f}")
                    losses = []
                    if done == config.steps or time.perf_counter() - start > limit:
                        stopped = None if done == config.steps else "time limit"
                        break
                if done:
                    x, y = next(batches)
                params, state, loss = step(params, state, jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32))
                losses.append(float(loss))
                bar.update(1)
        except KeyboardInterrupt:
            if kept is None:  # interrupted before the first validation: nothing to keep
                raise
            stopped = "interrupted"
        finally:
            bar.close()
    return TrainResult(kept, history, best_step, done, time.perf_counter() - start, stopped)


def training_demo(steps: int = 300, *, d_model: int = 32, batch_size: int = 32, val_every: int = 25,
                  seed: int = 0, root: str | os.PathLike | None = None) -> dict:
    """A short run for the ``smoke`` profile (about a minute on CPU): the loss/accuracy history.

    Returns ``train(...).history`` plus ``"config"`` (the :class:`TrainConfig` as a dict).
    """
    config = TrainConfig(steps=steps, d_model=d_model, batch_size=batch_size, val_every=val_every,
                         warmup=min(100, steps // 4), seed=seed, n_eval=400, augment="none", lr=5e-3, qk_dim=32,
                         channels=1)
    data = omniglot_data(config, root)
    val = evaluation_sets(config, data, ("validation",), root=root)["validation"]
    result = train(config, omniglot_batches(config, data), val, progress=False)
    return {**result.history, "config": dataclasses.asdict(config)}


# --------------------------------------------------------------------------- checkpoints

#: The json key holding the SHA-256 of the ``.npz`` it was written with (see :func:`save_checkpoint`).
DIGEST_KEY = "npz_sha256"


@dataclass(frozen=True)
class Checkpoint:
    """A trained network: its :class:`Architecture` (trained Q/K heads, mean readout), the value
    params ``{"V0", "V", "a"}`` for :func:`paththeory.network_output`, and the json metadata."""

    architecture: Architecture
    params: dict
    metadata: dict

    @property
    def trained(self) -> Params:
        """The full training dict, Q/K included (float32), as :func:`evaluate` takes it."""
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
    pair mixed by an interrupted save. ``storage="float16"`` halves the file (compressed npz, each
    weight rounded to a relative 5e-4); :func:`load_checkpoint` reads either back as float32.
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
        too_large = [k for k, v in arrays.items() if not np.all(np.abs(v) < np.finfo(np.float16).max)]
        if too_large:
            raise ValueError(f"weights {too_large} exceed the float16 range (65504); save with storage='float32'.")
        arrays = {k: v.astype(np.float16) for k, v in arrays.items()}
    with _io.atomic_path(npz) as tmp:
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
    from paththeory.data import cache_dir

    folders = [Path(os.environ[CHECKPOINTS_ENV_VAR]).expanduser()] if os.environ.get(CHECKPOINTS_ENV_VAR) else []
    folders.append(cache_dir() / "checkpoints")
    folders.append(Path(str(importlib.resources.files("paththeory") / "checkpoints")))
    return list(dict.fromkeys(folders))


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
    """The error for an unreadable or incomplete checkpoint file, with what to do about it."""
    return CorruptCheckpointError(
        f"checkpoint file {path} {problem}; it is damaged or incomplete: copy it again (both .npz and .json) "
        f"or write a new one with `paththeory train omniglot --out {path.with_suffix('')}`."
    )


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
