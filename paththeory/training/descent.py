"""The training loop: AdamW on the MSE, keeping the parameters of best validation accuracy.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass
from typing import Iterator

import jax
import jax.numpy as jnp
import numpy as np
import optax
from paththeory.training.batches import evaluation_sets, omniglot_batches, omniglot_data
from paththeory.training.evaluation import evaluate
from paththeory.training.trainable import Params, TrainConfig, init_params, loss_fn, optimizer



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
