"""Fig. 3 (b-d) of the paper, one-shot in-context learning on Omniglot (§4.2, App. H), at a profile's scale.

A network trained by gradient descent (Q and K learned, ``paththeory.training``; App. H.1)
hands its query/key weights to the Bayesian theory (§4.2); the theory is solved over widths and
temperatures, the temperature is chosen on a **validation** split (App. H.2.1 selects it on the
test set), and the theory's ``U`` is compared with NUTS samples and with the trained weights.
Every claim of the paper is then tested with its noise (:mod:`paththeory.experiments.claims`).
Head scores and pruning (Fig. 3 e-f) live in ``paththeory.experiments.head_pruning``, which this
module's :func:`run` calls so that ``results.json`` holds the whole figure; what both need (the
profile's :class:`Config`, the character split, :class:`Sweep`, the split accuracies) lives below
them in ``paththeory.experiments.omniglot_base``.

The steps, used by :func:`run` (and so by ``paththeory reproduce omniglot``) and by the
chapters ``book/omniglot.md``, ``book/pruning.md`` and ``book/beyond.md``:

* :data:`SETTINGS`, :data:`NETWORK_SETTINGS` and :func:`settings`: sizes per profile and network;
* :func:`trained_network`: the shipped checkpoint, another one by name, or a network retrained here;
* :func:`build_sequences`: training / validation / held-out test sequences on the checkpoint's
  character split, the one-shot runs (evaluation alphabets), Fashion-MNIST (the paper's
  out-of-distribution set of Fig. 3) and MNIST (its App. H.2.2); :func:`build_features`: their
  path features;
* :func:`sweep_for` / :func:`theory_sweep` (cached on disk, :func:`cache_dir`), :func:`theory_stage`
  (validation-selected temperatures, finite width against the GP with paired standard errors,
  the temperature trend with a bootstrap);
* :func:`pc_overlap_stage`: overlaps of the training kernels' principal components with the
  labels, finite width against the GP (Fig. 3d);
* :func:`comparison_stage`: ``U`` from the theory, from NUTS and from the trained weights, with
  distances, Monte Carlo noise and Mantel tests, and the NUTS predictor's accuracy (Fig. 3b, c);
* :func:`path_similarity`: whether paths through the same first-layer head carry similar inputs, a
  typed finding (:class:`PathSimilarity`) with its verdict;
* figures :func:`plot_sequence` and :func:`plot_training` here, and those drawn from the results
  alone (``paththeory.experiments.omniglot_figures``, also importable from here):
  :func:`plot_accuracy`, :func:`plot_temperature_grid`, :func:`plot_pc_overlaps`,
  :func:`plot_order_parameters`; the words (the sizes and accuracy tables, the sentence on the paths'
  inputs) are :mod:`paththeory.reports.omniglot`.

Departures from the authors: the temperature is selected on validation characters, not on the
test set; offline, the data are the 242 characters of the two small background splits (the
paper trains on 1,028, App. H.1), the evaluation alphabets enter through the 20 official
one-shot runs, and Fashion-MNIST is the first 4,443 of its 10,000 test images, with context
images from the test set (the authors take them from the training set).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import re
import tempfile
import time
import warnings
import zipfile
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure
from scipy.stats import rankdata

from paththeory import _io, action, hessian, kernels, predict, solve, training
from paththeory.experiments import stats
from paththeory._checks import check_count, check_nonnegative
from paththeory.tasks.data import load_mnist, load_omniglot, load_one_shot_runs
from paththeory.experiments.records import environment, jsonable
from paththeory.experiments.compare import sampled_vs_theory
from paththeory.experiments.claims import fig3_claims
from paththeory.experiments.omniglot_base import (
    EVAL_SPLITS,
    PAPER_TEMPERATURES,
    PAPER_WIDTHS,
    Config,
    Sweep,
    _balanced_subset,
    _characters,
    _evaluation,
    _omniglot_subset,
    character_split,
    correctness,
    gp_grid,
)
from paththeory.experiments.omniglot_figures import (
    plot_accuracy,
    plot_head_scores,
    plot_order_parameters,
    plot_pc_overlaps,
    plot_pruning,
    plot_score_sensitivity,
    plot_temperature_grid,
)
from paththeory.experiments import head_pruning
from paththeory.kernels import DEFAULT_MEMORY_BUDGET
from paththeory.model import NETWORK_WIDTHS, Architecture, path_features
from paththeory.display.plots import COLOURS, book_style, panel_grid, stamp_profile
from paththeory.profiles import choose, current_profile, time_limit
from paththeory.sampling import sample_posterior
from paththeory.solve import Theory
from paththeory.tasks.omniglot import (
    icl_indices,
    icl_sequences,
    ood_sequences,
    one_shot_run_sequences,
)

SPLIT_NAMES = {
    "validation": "validation characters",
    "test": "held-out characters (in distribution)",
    "one_shot_runs": "evaluation alphabets (one-shot runs)",
    "fashion": "Fashion-MNIST T-shirt vs trouser (out of distribution, Fig. 3)",
    "mnist": "MNIST 0 vs 1 (out of distribution, App. H.2.2)",
}
FIGURES = ("accuracy", "temperature", "pc_overlap", "order_parameters", "head_scores", "pruning",
           "score_sensitivity")


SETTINGS: dict[str, Config] = {
    "smoke": Config(600, 500, 1000, (10, 100, 1000), (0.1, 0.25, 0.5, 1.0),
                    sample_n_train=600, num_warmup=100, num_samples=100, num_chains=1, sample_time_limit=3600.0,
                    demo_steps=300, score_resamples=2, score_train_sizes=(150, 300)),
    "colab": Config(600, 1000, 1000, PAPER_WIDTHS, PAPER_TEMPERATURES,
                    sample_n_train=600, num_warmup=200, num_samples=200, num_chains=4, sample_time_limit=3600.0,
                    demo_steps=1500, score_resamples=5, score_train_sizes=(150, 300)),
    "paper": Config(600, 1000, 1000, PAPER_WIDTHS, PAPER_TEMPERATURES,
                    sample_n_train=600, num_warmup=100, num_samples=100, num_chains=10, sample_time_limit=24 * 3600.0,
                    demo_steps=3000, score_resamples=10, score_train_sizes=(150, 300), retrain=True),
}

#: Changes to :data:`SETTINGS` for the deeper and wider networks of ``book/beyond.md``, which are read
#: (not retrained) and not sampled: 27 paths (L = 3, H = 3) and 64 paths (L = 2, H = 8). In the
#: smoke profile both theories are solved on P = 300 and tested on 500 sequences per split (one
#: solve of the 64-path theory at N = 10 takes about 15 s on a 2-core CPU at P = 300, about 60 s at
#: P = 600), so that the whole book builds within CI's time.
NETWORK_SETTINGS: dict[str, dict[str, dict]] = {
    "omniglot_l3h3": {
        "smoke": dict(n_train=300, n_test=500, widths=(10, 1000), temperatures=(0.25, 0.5, 1.0), sample_n_train=0,
                      score_resamples=0, score_train_sizes=(), retrain=False),
        "colab": dict(sample_n_train=0, score_resamples=0, score_train_sizes=(), retrain=False),
        "paper": dict(sample_n_train=0, retrain=False),
    },
    "omniglot_l2h8": {
        "smoke": dict(n_train=300, n_test=500, widths=(10, 1000), temperatures=(0.25, 0.5, 1.0), sample_n_train=0,
                      score_resamples=0, score_train_sizes=(), retrain=False),
        "colab": dict(sample_n_train=0, score_resamples=0, score_train_sizes=(), retrain=False),
        "paper": dict(sample_n_train=0, retrain=False),
    },
}


def settings(profile: str | None = None, network: str | None = None) -> Config:
    """The :class:`Config` of ``profile`` (default: the current profile), adjusted for ``network``
    (a checkpoint of :data:`NETWORK_SETTINGS` by name or by path, e.g. a copy ``/data/omniglot_l2h8.npz``;
    ``None`` is the shipped network)."""
    cfg = choose(SETTINGS, profile)
    name = None if network is None else training.checkpoint_files(network)[0].stem
    if name is None or name == training.SHIPPED:
        return cfg
    if name not in NETWORK_SETTINGS:
        raise ValueError(f"no settings for network {name!r}: sizes are known for {training.SHIPPED}, "
                         f"{', '.join(NETWORK_SETTINGS)}; name the checkpoint files after the network they hold, "
                         "or pass a Config to paththeory.experiments.omniglot.run().")
    return dataclasses.replace(cfg, **choose(NETWORK_SETTINGS[name], profile))


# --------------------------------------------------------------------------- the trained network


def trained_network(retrain: bool = False, *, name: str | None = None, root: str | os.PathLike | None = None,
                    progress: bool = False) -> training.Checkpoint:
    """The gradient-descent network whose Q/K the theory uses.

    ``name``: a checkpoint to read (:func:`paththeory.training.locate_checkpoint`, e.g.
    ``"omniglot_l2h8"``); default the shipped one. ``retrain=True``: train afresh with the shipped
    checkpoint's configuration (no time limit) on the Omniglot data found here (the full background
    set where it can be downloaded); the metadata then says so.
    """
    shipped = training.load_checkpoint(name)
    if not retrain:
        return shipped
    config = dataclasses.replace(shipped.config, time_limit_minutes=None)
    data = training.omniglot_data(config, root)
    val = training.evaluation_sets(config, data, ("validation",), root=root)["validation"]
    result = training.train(config, training.omniglot_batches(config, data), val, progress=progress)
    metadata = {
        "config": asdict(config),
        "data": {"source": data.source,
                 "characters": {k: len(getattr(data.split, k)) for k in ("train", "validation", "test")}},
        "provenance": "retrained in this run with the shipped checkpoint's configuration",
        "steps_done": result.steps_done, "best_step": result.best_step, "wall_time_s": round(result.wall_time_s, 1),
        "history": result.history,
    }
    return training.Checkpoint(training.architecture(result.params), training.value_params(result.params), metadata)


def provenance(network: training.Checkpoint) -> dict:
    """What the chapters and results.json say about the network: configuration, data, training (and how it
    differs from the paper's), accuracies; the training command without its output folder."""
    meta = network.metadata
    keys = ("provenance", "selection", "differences_from_paper", "command_line", "steps_done", "best_step", "stopped",
            "wall_time_s", "device", "package_version", "environment", "accuracies")
    out = {"config": meta["config"], "data": meta["data"], **{k: meta[k] for k in keys if k in meta}}
    if "command_line" in out:  # the output folder of the training machine says nothing about the network
        out["command_line"] = re.sub(r"--out\s+\S+", "--out <folder>", out["command_line"])
    return out


# --------------------------------------------------------------------------- data and features


@dataclass(frozen=True)
class Sequences:
    """Token sequences per split (``x[name] [P, 48, N0]``, ``y[name] [P]``) and where they came from.

    ``notes``: sets that are missing (e.g. Fashion-MNIST offline) or built differently from the
    authors (e.g. MNIST contexts from the test set); ``characters``: characters per split.
    """

    x: dict[str, np.ndarray]
    y: dict[str, np.ndarray]
    source: str
    characters: dict[str, int]
    notes: tuple[str, ...]


def build_sequences(cfg: Config, network: training.Checkpoint, *, root: str | os.PathLike | None = None) -> Sequences:
    """Balanced sequences (first half ``y = +1``) for the theory and every evaluation split.

    Omniglot splits use the network's own character split, so the held-out test characters were
    never seen in training; tokens have the network's ``channels`` (``N0 = 64 * channels``).
    Out of distribution: Fashion-MNIST (the paper's Fig. 3) and MNIST (its App. H.2.2), built by
    :func:`paththeory.tasks.omniglot.ood_sequences`; each is skipped, with a note, when it cannot
    be found or downloaded, and takes fewer queries, with a note, when the data hold too few.
    """
    channels = network.channels
    chars, patches, split = _characters(network, root)
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(cfg.seed).spawn(4)]
    x, y, notes = {}, {}, []
    for rng, (name, ids, n) in zip(rngs, (("train", split.train, cfg.n_train),
                                          ("validation", split.validation, cfg.n_validation),
                                          ("test", split.test, cfg.n_test))):
        x[name], y[name] = icl_sequences(patches, chars.labels, rng, n, characters=ids, balanced=True,
                                         channels=channels)
    x["one_shot_runs"], y["one_shot_runs"] = one_shot_run_sequences(
        load_one_shot_runs(root=root), rngs[3], cfg.n_test, balanced=True, channels=channels)
    for name in ("fashion", "mnist"):  # a missing file raises DataNotFoundError: no split is skipped silently
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                x[name], y[name] = ood_sequences(name, cfg.n_test // 2, root=root, channels=channels)
            except ValueError:  # fewer images than asked for (the shipped Fashion-MNIST subset)
                x[name], y[name] = ood_sequences(name, None, root=root, channels=channels)
                notes.append(f"{name}: {len(y[name]) // 2} queries per class (the data hold too few images "
                             f"for {cfg.n_test // 2}).")
        read = load_mnist("test", fashion=name == "fashion", root=root).note
        if read:
            notes.append(f"{name}: {read}.")
        if any("context" in str(w.message) for w in caught):  # training images missing
            notes.append(f"{name}: the training set is not available here, so the context images come from "
                         "the test set (disjoint from the queries), not from the training set as in the "
                         "authors' repository.")
    counts = {k: int(len(getattr(split, k))) for k in ("train", "validation", "test")}
    return Sequences(x, y, chars.source, counts, tuple(notes))


def build_features(arch: Architecture, seqs: Sequences) -> dict[str, np.ndarray]:
    """Path features ``[P, n_paths, N0]`` of every split (§2 of the paper)."""
    return {name: np.asarray(path_features(arch, x)) for name, x in seqs.x.items()}


# --------------------------------------------------------------------------- theory


def cache_dir() -> Path:
    """Where sweeps are cached: ``$PATHTHEORY_CACHE`` or ``<tmp>/paththeory-cache``, subfolder ``omniglot``."""
    return Path(os.environ.get("PATHTHEORY_CACHE") or Path(tempfile.gettempdir()) / "paththeory-cache") / "omniglot"


def _digest(arrays: Sequence[np.ndarray], params: dict) -> str:
    """A hash of the arrays, the parameters and the source of the theory's modules."""
    h = hashlib.sha256(json.dumps(params, sort_keys=True).encode())
    for module in (action, hessian, kernels, predict, solve):
        h.update(Path(module.__file__).read_bytes())
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:24]


def theory_sweep(arch: Architecture, features: dict, y: dict, widths: Sequence[int], temperatures: Sequence[float],
                 *, tol: float = 1e-6, memory_budget: int = DEFAULT_MEMORY_BUDGET,
                 splits: Sequence[str] = EVAL_SPLITS, cache: Path | None = None) -> Sweep:
    """Solve the action on ``temperatures x widths`` and score every split, sequence by sequence.

    :meth:`paththeory.solve.Theory.sweep` solves all widths of one temperature together and
    warm-starts each temperature from the previous one. With ``cache`` (a folder), the
    result is stored under a hash of every input (features, labels, grid, tolerance, and the
    source of the theory's modules) and reused when the same sweep is asked for again, e.g. by
    the pruning chapter. ``widths`` are whole numbers, the widths of the networks the sweep is compared with.
    """
    widths = tuple(check_count(w, f"widths[{i}]", hint=NETWORK_WIDTHS) for i, w in enumerate(widths))
    temperatures = tuple(check_nonnegative(t, f"temperatures[{i}]") for i, t in enumerate(temperatures))
    if not widths or not temperatures:
        raise ValueError(f"theory_sweep needs at least one width and one temperature; got {widths} and {temperatures}.")
    names = sorted(s for s in splits if s in features)
    key = _digest([features["train"], y["train"], *(features[s] for s in names), *(y[s] for s in names)],
                  {"format": 2, "widths": widths, "temperatures": temperatures, "tol": tol, "splits": names,
                   "heads": arch.heads, "variances": arch.variances})
    path = None if cache is None else Path(cache) / f"sweep-{key}.npz"
    stored = _read_sweep(path, names) if path is not None and path.is_file() else None
    if stored is not None:
        return Sweep(widths, temperatures, *stored, cached=True)
    start = time.perf_counter()
    grid = Theory(arch, features["train"], y["train"], memory_budget).sweep(list(widths), list(temperatures), tol=tol)
    U = np.array([[sol.U for sol in row] for row in grid])
    correct = {s: np.zeros((len(temperatures), len(widths), len(y[s])), dtype=bool) for s in names}
    for i, (t, row) in enumerate(zip(temperatures, grid)):
        for j, sol in enumerate(row):
            for s, c in correctness(sol.U, t, features, y, names).items():
                correct[s][i, j] = c
    reports = [[sol.report for sol in row] for row in grid]
    sweep = Sweep(widths, temperatures, U, correct, reports, time.perf_counter() - start)
    if path is not None:
        _io.save_npz(path, {"U": U, "reports": json.dumps(reports), "seconds": sweep.seconds,
                            **{f"correct_{s}": c for s, c in correct.items()}})
    return sweep


def _read_sweep(path: Path, splits: Sequence[str]) -> tuple | None:
    """``(U, correct, reports, seconds)`` of a cached sweep; ``None``, with a warning, for a damaged
    file, which is removed (and so computed and written again)."""
    try:
        with np.load(path, allow_pickle=False) as f:
            return (f["U"], {s: f[f"correct_{s}"].astype(bool) for s in splits}, json.loads(str(f["reports"])),
                    float(f["seconds"]))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as err:
        warnings.warn(f"ignoring the damaged sweep cache {path} ({type(err).__name__}: {err}); it is computed "
                      "and written again.", stacklevel=3)
        path.unlink(missing_ok=True)
        return None


def sweep_for(cfg: Config, arch: Architecture, features: dict, y: dict, *, cache: Path | None = None) -> Sweep:
    """:func:`theory_sweep` on the profile's grid, tolerance and memory budget."""
    return theory_sweep(arch, features, y, cfg.widths, cfg.temperatures, tol=cfg.tol,
                        memory_budget=cfg.memory_budget, cache=cache)


def gp_correctness(arch: Architecture, features: dict, y: dict, temperatures: Sequence[float],
                   splits: Sequence[str] = EVAL_SPLITS) -> dict[str, np.ndarray]:
    """GP (``U = sigma_a^2 prod sigma_l^2 I``, the GP limit of §3) correctness ``{split: [n_T, n] bool}``."""
    U = arch.gp_scale * np.eye(arch.n_paths)
    rows = [correctness(U, t, features, y, splits) for t in temperatures]
    return {s: np.array([r[s] for r in rows]) for s in rows[0]}


def gp_accuracies(arch: Architecture, features: dict, y: dict, temperatures: Sequence[float],
                  splits: Sequence[str] = EVAL_SPLITS) -> dict[str, np.ndarray]:
    """GP (infinite-width) accuracy ``{split: [n_T]}`` (the GP limit of §3)."""
    return {s: c.mean(axis=-1) for s, c in gp_correctness(arch, features, y, temperatures, splits).items()}


def select_temperature(val_accuracy, temperatures: Sequence[float]) -> np.ndarray:
    """The temperature of best validation accuracy, per column: ``[n_T, ...] -> [...]``.

    Ties go to the larger temperature (the smoother predictor).
    """
    acc = np.asarray(val_accuracy, dtype=float)
    temps = np.asarray(temperatures, dtype=float)
    if acc.ndim < 1 or acc.shape[0] != temps.size:
        raise ValueError(f"val_accuracy must be [n_T={temps.size}, ...]; got shape {acc.shape}.")
    best = acc >= acc.max(axis=0, keepdims=True)
    ranked = np.where(best, temps.reshape((-1,) + (1,) * (acc.ndim - 1)), -np.inf)
    return ranked.max(axis=0)


def selected(table, temperatures: Sequence[float], chosen: Sequence[float]) -> np.ndarray:
    """Entries of ``table [n_T, n_N, ...]`` at the chosen temperature of each column ``[n_N]``."""
    rows = [list(temperatures).index(float(t)) for t in chosen]
    return np.asarray(table)[rows, np.arange(len(rows))]


def temperature_trend(correct_validation, temperatures: Sequence[float], widths: Sequence[int],
                      n_bootstrap: int = 1000, seed: int = 0) -> dict:
    """Does the validation-selected temperature grow as the width shrinks? (App. H.2.1)

    The statistic is Spearman's ``rho`` between the widths and their selected temperatures (negative
    when the optimum grows as ``N`` shrinks; 0 when the same temperature is selected everywhere). Its
    noise comes from re-selecting the temperatures on ``n_bootstrap`` resamples of the validation
    sequences (``correct_validation [n_T, n_N, n]``). Returns ``rho``, the selected temperatures,
    the 2.5 and 97.5 % bootstrap quantiles ``interval`` and ``n_bootstrap``.
    """
    c = np.asarray(correct_validation, dtype=float)
    temps, ws = np.asarray(temperatures, dtype=float), np.asarray(widths, dtype=float)
    if c.ndim != 3 or c.shape[:2] != (temps.size, ws.size):
        raise ValueError(f"correct_validation must be [n_T={temps.size}, n_N={ws.size}, n]; got {c.shape}.")

    def rho(chosen: np.ndarray) -> np.ndarray:  # [B, n_N] selected temperatures -> [B]; 0 where undefined
        return np.nan_to_num(stats.row_correlations(rankdata(ws), rankdata(chosen, axis=-1)), nan=0.0)

    chosen = select_temperature(c.mean(axis=-1), temps)
    idx = np.random.default_rng(seed).integers(0, c.shape[2], size=(n_bootstrap, c.shape[2]))
    boot = np.stack([select_temperature(c[:, :, i].mean(axis=-1), temps) for i in idx])  # [B, n_N]
    low, high = np.quantile(rho(boot), [0.025, 0.975])
    return {"rho": float(rho(chosen[None])[0]), "selected": dict(zip(map(str, widths), chosen.tolist())),
            "interval": [float(low), float(high)], "n_bootstrap": int(n_bootstrap)}


def theory_stage(cfg: Config, arch: Architecture, features: dict, y: dict, sweep: Sweep) -> dict:
    """Select temperatures on the validation split and compare finite width with the GP.

    Returns the ``accuracy`` (theory per split and width at the selected T; GP per split at its
    selected T), ``accuracy_grid`` (the GP's over ``temperature["gp_grid"]``, :func:`gp_grid`: the
    theory's temperatures and the authors' GP list), ``temperature``, ``temperature_trend`` (:func:`temperature_trend`),
    ``finite_vs_gp`` (per split and width, the paired difference theory minus GP on the same
    sequences and its standard error), ``order_parameter`` (``theory_by_width`` at the selected T)
    and ``solver`` entries of ``results.json``.
    """
    if sweep.widths != tuple(cfg.widths) or sweep.temperatures != tuple(float(t) for t in cfg.temperatures):
        raise ValueError("the sweep's grid differs from the config's widths and temperatures; use sweep_for(cfg, ...).")
    gp_temperatures = gp_grid(cfg)  # the theory's grid and the authors' GP list
    gp = gp_correctness(arch, features, y, gp_temperatures)
    acc = sweep.accuracy
    t_theory = select_temperature(acc["validation"], cfg.temperatures)
    t_gp = float(select_temperature(gp["validation"].mean(axis=-1), gp_temperatures))
    gp_row = gp_temperatures.index(t_gp)
    rows = [cfg.temperatures.index(float(t)) for t in t_theory]
    finite_vs_gp = {
        s: {str(w): stats.paired_difference(sweep.correct[s][rows[j], j], gp[s][gp_row])
            for j, w in enumerate(cfg.widths)}
        for s in sweep.correct if s != "validation"
    }
    return jsonable({
        "accuracy": {
            "theory": {s: dict(zip(map(str, cfg.widths), selected(a, cfg.temperatures, t_theory)))
                       for s, a in acc.items()},
            "gp": {s: c[gp_row].mean() for s, c in gp.items()},
        },
        "accuracy_grid": {"theory": acc, "gp": {s: c.mean(axis=-1) for s, c in gp.items()}},
        "temperature": {"theory": dict(zip(map(str, cfg.widths), t_theory)), "gp": t_gp, "gp_grid": gp_temperatures,
                        "selected_on": "validation"},
        "temperature_trend": temperature_trend(sweep.correct["validation"], cfg.temperatures, cfg.widths,
                                               cfg.n_bootstrap, cfg.seed),
        "finite_vs_gp": finite_vs_gp,
        "order_parameter": {"theory_by_width": {str(w): sweep.U[i, j]
                                                for j, (w, i) in enumerate(zip(cfg.widths, rows))}},
        "solver": {"reports": sweep.reports, "seconds": sweep.seconds, "cached": sweep.cached},
    })


# --------------------------------------------------------------------------- kernel-task alignment


def pc_overlaps(arch: Architecture, U, features_train, y_train, k: int = 50) -> dict:
    """Overlaps ``|phi_i . y| / sqrt(P)`` of the top-``k`` principal components of the training kernels
    ``K_U`` (finite width) and ``K_GP`` with the labels (Fig. 3d), and summaries.

    Since ``|y|^2 = P``, the squared overlaps of all ``P`` components add up to 1; ``captured``
    is the fraction of the label vector that the top 1, 5, 10 and ``k`` components hold,
    ``best`` the largest overlap among the top ``k`` and ``best_rank`` its rank (1 = leading PC).
    """
    out = {"k": int(k)}
    for name, K in (("theory", kernels.kernel_matrix(U, features_train)), ("gp", kernels.gp_kernel(arch, features_train))):
        ov = predict.pc_label_overlap(np.asarray(K), y_train, k)
        cum = np.cumsum(ov**2)
        out[name] = ov
        out[f"{name}_summary"] = {"captured": {str(m): float(cum[min(m, len(ov)) - 1]) for m in (1, 5, 10, k)},
                                  "best": float(ov.max()), "best_rank": int(np.argmax(ov)) + 1}
    return out


def pc_overlap_stage(cfg: Config, arch: Architecture, features: dict, y: dict, results: dict, k: int = 50) -> dict:
    """``pc_overlap``: :func:`pc_overlaps` on the theory's training set, with ``U`` at the smallest
    width (``cfg.score_width``) and its validation-selected temperature (Fig. 3d; 50 PCs as in the
    authors' plot)."""
    width = str(cfg.score_width)
    U = np.asarray(results["order_parameter"]["theory_by_width"][width])
    ov = pc_overlaps(arch, U, features["train"], y["train"], k)
    return jsonable({"pc_overlap": {"width": cfg.score_width, "temperature": results["temperature"]["theory"][width],
                                    "n_train": int(len(y["train"])), **ov}})


# --------------------------------------------------------------------------- order parameters


def same_first_head(heads: Sequence[int]) -> np.ndarray:
    """``[n_paths, n_paths]`` indicator of path pairs that share their first-layer head (``h_1``)."""
    first = np.array([p[0] for p in itertools.product(*(range(h) for h in heads))])
    return (first[:, None] == first[None, :]).astype(float)


def block_contrast(U, heads: Sequence[int]) -> float:
    """Mean ``|U_{pi sigma}|`` over distinct paths with the same first-layer head, divided by the mean
    over paths through different first-layer heads: above 1 when ``U`` is block-structured by ``h_1``."""
    u = np.abs(np.asarray(U, dtype=float))
    same = same_first_head(heads).astype(bool)
    if u.shape != same.shape or heads[0] < 2:
        raise ValueError(f"U must be [{same.shape[0]}, {same.shape[0]}] for heads {tuple(heads)} with H_1 >= 2.")
    within, between = u[same & ~np.eye(u.shape[0], dtype=bool)].mean(), u[~same].mean()
    if between == 0:  # e.g. the GP point U = I: no off-diagonal weight at all
        return float("inf") if within > 0 else float("nan")
    return float(within / between)


def path_cosines(features) -> np.ndarray:
    """``[n_paths, n_paths]`` cosine similarity of the attentioned inputs ``xi^pi`` of two paths over
    a whole set: ``sum_mu xi^pi_mu . xi^sigma_mu / sqrt(sum_mu |xi^pi_mu|^2 sum_mu |xi^sigma_mu|^2)``,
    the trace of the path-path kernel ``C^{pi sigma}`` normalised by those of the two paths
    (``features``: ``[P, n_paths, N0]``, as :func:`paththeory.model.path_features` returns)."""
    f = np.asarray(features, dtype=float)
    if f.ndim != 3 or f.shape[1] < 2:
        raise ValueError(f"features must be [examples, paths >= 2, N0]; got shape {f.shape}.")
    flat = f.transpose(1, 0, 2).reshape(f.shape[1], -1)
    norms = np.linalg.norm(flat, axis=1)
    if not np.all(norms > 0):
        raise ValueError("every path needs a nonzero attentioned input to have a cosine similarity.")
    gram = flat @ flat.T
    return gram / np.outer(norms, norms)


@dataclass(frozen=True)
class PathSimilarity:
    """Do paths that share their first-layer head carry similar inputs? (the chapter's explanation of the block
    structure of ``U``). ``cosine``: the :func:`path_cosines` ``[n_paths, n_paths]``; their mean over distinct pairs
    with the same ``h_1`` (``same_first``) and with different ``h_1`` (``different_first``), the latter split into
    pairs that share a head of a later layer (``shared_later``) and pairs that share none (``shared_none``), each
    ``None`` without such a pair; ``mantel``, a Mantel test of the cosines against the same-``h_1`` indicator
    (:func:`paththeory.experiments.stats.mantel_test`); ``alike``, the verdict: the same-head pairs more alike on
    average and the Mantel test's one-sided p-value ``p_greater`` below ``alpha``."""

    cosine: tuple[tuple[float, ...], ...]
    same_first: float | None
    different_first: float | None
    shared_later: float | None
    shared_none: float | None
    mantel: dict
    alpha: float
    alike: bool


def path_similarity(features, heads: Sequence[int], seed: int = 0, alpha: float = 0.05) -> PathSimilarity:
    """The :class:`PathSimilarity` of the paths' attentioned inputs ``features`` ``[P, n_paths, N0]`` (a network with
    ``heads`` per layer, ``H_1 >= 2``), its Mantel test with permutations drawn from ``seed``, judged at ``alpha``."""
    cos = path_cosines(features)
    paths = np.array(list(itertools.product(*(range(h) for h in heads))))
    if len(paths) != cos.shape[0] or heads[0] < 2:
        raise ValueError(f"features have {cos.shape[0]} paths; heads {tuple(heads)} give {len(paths)} "
                         "(and H_1 must be at least 2).")
    same = same_first_head(heads).astype(bool)
    distinct = ~np.eye(len(paths), dtype=bool)
    later = (paths[:, None, 1:] == paths[None, :, 1:]).any(axis=2) & ~same

    def mean(mask: np.ndarray) -> float | None:
        return float(cos[mask].mean()) if mask.any() else None

    within, between = mean(same & distinct), mean(~same)
    mantel = stats.mantel_test(cos, same.astype(float), seed=seed)
    alike = within is not None and between is not None and within > between and mantel["p_greater"] < alpha
    return PathSimilarity(tuple(map(tuple, cos.tolist())), within, between, mean(later), mean(~same & ~later),
                          mantel, float(alpha), bool(alike))


def agreement(comp: dict, heads: Sequence[int], gp_scale: float, seed: int = 0) -> dict:
    """Numbers for the comparison of the order parameters of :func:`compare_order_parameters`.

    * ``theory_vs_sampled``: ``relative_distance = |U_NUTS - U_theory|_F / |U_theory|_F``, its Monte
      Carlo ``noise`` (Frobenius norm of the per-entry batch-means errors, same scale), the same
      distance for the GP point (``gp_relative_distance``, for scale) and a Mantel test;
    * ``theory_vs_gd`` and ``sampled_vs_gd``: Mantel tests (the gradient-descent ``U`` has an
      arbitrary scale, so only its pattern is compared);
    * ``block``: for each ``U``, the block contrast and a Mantel test of ``|U|`` against the
      same-first-layer-head indicator.
    """
    th = np.asarray(comp["theory"], dtype=float)
    out: dict = {"theory_vs_sampled": None, "sampled_vs_gd": None,
                 "theory_vs_gd": stats.mantel_test(th, comp["gd"], seed=seed)}
    if comp["sampled"] is not None:
        sampled = np.asarray(comp["sampled"], dtype=float)
        out["theory_vs_sampled"] = sampled_vs_theory(th, sampled, comp["sampled_se"], gp_scale, seed)
        out["sampled_vs_gd"] = stats.mantel_test(sampled, comp["gd"], seed=seed)
    indicator = same_first_head(heads)
    out["block"] = {k: None if comp[k] is None else {
        "contrast": block_contrast(comp[k], heads),
        "mantel": stats.mantel_test(np.abs(np.asarray(comp[k], dtype=float)), indicator, seed=seed)}
        for k in ("theory", "sampled", "gd")}
    return out


def compare_order_parameters(cfg: Config, network: training.Checkpoint, features: dict, y: dict,
                             temperature: float, *, theory_U=None, progress: bool = False) -> dict:
    """``U`` at ``cfg.sample_width`` from the theory and from NUTS on the same training sequences
    (the first ``cfg.sample_n_train / 2`` of each label, all when that is 0), and the
    gradient-descent ``U`` of the trained weights (the paper's Eq. 13, Fig. 3c).

    ``theory_U``: the theory's ``U`` on the full training set at this width and temperature,
    reused instead of solving again when the sampled set is the full set. Returns ``theory``,
    ``sampled`` and its Monte Carlo error ``sampled_se`` (``None`` when ``sample_n_train = 0``),
    ``sampled_accuracy`` (the accuracy of the NUTS mean predictor on every evaluation split but
    validation, with its standard error, Fig. 3b), the NUTS ``diagnostics``, ``gd``,
    ``n_train``, ``width``, ``temperature`` and the :func:`agreement` numbers.
    """
    arch = network.architecture
    n = cfg.sample_n_train or len(y["train"])
    idx = _balanced_subset(y["train"], n)
    f_sub, y_sub = features["train"][idx], y["train"][idx]
    if theory_U is None or n != len(y["train"]):
        theory_U = Theory(arch, f_sub, y_sub, cfg.memory_budget).solve(cfg.sample_width, temperature, tol=cfg.tol).U
    out = {"width": cfg.sample_width, "temperature": float(temperature), "n_train": n,
           "theory": np.asarray(theory_U), "gd": training.gd_order_parameter(arch, network.params),
           "sampled": None, "sampled_se": None, "diagnostics": None}
    out["sampled_accuracy"] = None
    if cfg.sample_n_train:
        f_eval, y_eval, bounds = _evaluation(features, y, [s for s in EVAL_SPLITS if s != "validation"])
        res = sample_posterior(arch, f_sub, y_sub, cfg.sample_width, temperature, method="nuts", features_test=f_eval,
                               num_warmup=cfg.num_warmup, num_samples=cfg.num_samples, num_chains=cfg.num_chains,
                               time_limit=time_limit(cfg.sample_time_limit), seed=cfg.seed, progress_bar=progress)
        out["sampled"] = res.U
        out["sampled_se"] = stats.batch_means_se(res.U_draws) if res.U_draws.shape[1] >= 4 else None
        right = np.asarray(res.mean) * y_eval > 0  # the sampled mean predictor on every evaluation split
        out["sampled_accuracy"] = {s: {"accuracy": float(right[a:b].mean()),
                                       "se": stats.standard_error(float(right[a:b].mean()), b - a), "n": b - a}
                                   for s, a, b in bounds}
        out["diagnostics"] = res.diagnostics
    out["agreement"] = agreement(out, arch.heads, arch.gp_scale, cfg.seed)
    return out


def comparison_stage(cfg: Config, network: training.Checkpoint, features: dict, y: dict, results: dict,
                     *, progress: bool = False) -> dict:
    """``order_parameter_comparison``: theory, NUTS and gradient-descent ``U`` (at the validation-selected T)."""
    width = str(cfg.sample_width)
    comp = compare_order_parameters(cfg, network, features, y, results["temperature"]["theory"][width],
                                    theory_U=results["order_parameter"]["theory_by_width"][width], progress=progress)
    return jsonable({"order_parameter_comparison": comp})


def gd_accuracies(network: training.Checkpoint, seqs: Sequences) -> dict[str, float]:
    """Accuracy of the trained network itself on every evaluation split (float32 forward pass)."""
    return {s: training.evaluate(network, seqs.x[s], seqs.y[s]) for s in EVAL_SPLITS if s in seqs.x}


# --------------------------------------------------------------------------- the pipeline


def header(cfg: Config, network: training.Checkpoint, seqs: Sequences, profile: str | None = None) -> dict:
    """The part of ``results.json`` that describes the run: profile, sizes, splits, network and data."""
    splits = [s for s in EVAL_SPLITS if s in seqs.x]
    arch = network.architecture
    return jsonable({
        "profile": current_profile(profile),
        "config": asdict(cfg),
        "widths": list(cfg.widths),
        "temperatures": list(cfg.temperatures),
        "splits": splits,
        "split_names": {s: SPLIT_NAMES[s] for s in splits},
        "heads": list(arch.heads),
        "paths": arch.path_names(),
        "network": provenance(network),
        "data": {"source": seqs.source, "characters": seqs.characters, "notes": list(seqs.notes),
                 "n": {s: int(len(y)) for s, y in seqs.y.items()}},
    })


def run(profile: str | None = None, out_dir: str | Path | None = None, *, config: Config | None = None,
        network: training.Checkpoint | str | None = None, root: str | os.PathLike | None = None,
        cache: Path | None | bool = True, progress: bool = True) -> dict:
    """Reproduce Fig. 3 (b-f) at the profile's scale and test its claims; write ``results.json``,
    ``features.npz`` and PNGs.

    Args:
      profile: ``smoke``, ``colab`` or ``paper`` (default: :func:`paththeory.profiles.current_profile`).
      out_dir: output folder (created); nothing is written when ``None``.
      config: sizes overriding the profile's entry (:func:`settings`).
      network: the trained network, or a checkpoint name (e.g. ``"omniglot_l2h8"``; its sizes come
        from :data:`NETWORK_SETTINGS`); default :func:`trained_network` with ``config.retrain``.
      root: data folder (see :mod:`paththeory.tasks.data`).
      cache: folder for the theory sweep (``True``: :func:`cache_dir`; ``False``/``None``: no cache).
      progress: print the time of each stage and show the NUTS bar.
    Returns:
      the content of ``results.json``: :func:`header`, :func:`theory_stage`, :func:`pc_overlap_stage`,
      :func:`comparison_stage`, ``gd_accuracy``, :func:`paththeory.experiments.head_pruning.pruning_stage`,
      ``score_sensitivity`` and the verdicts ``claims``
      (:func:`paththeory.experiments.claims.fig3_claims`), plus ``timings`` and ``environment``.
    """
    name = current_profile(profile)
    if out_dir is not None:
        out_dir = _io.check_output_folder(out_dir)  # an unusable folder fails now, not after the work
    if isinstance(network, str):
        cfg = config or settings(name, network)
        network = trained_network(cfg.retrain, name=network, root=root, progress=progress)
    else:
        cfg = config or settings(name)
    cache_path = cache_dir() if cache is True else (cache or None)
    timings: dict[str, float] = {}
    start = t = time.perf_counter()

    def lap(key: str) -> None:
        nonlocal t
        timings[key] = time.perf_counter() - t
        if progress:
            print(f"[omniglot] {key}: {timings[key]:.1f} s", flush=True)
        t = time.perf_counter()

    network = network or trained_network(cfg.retrain, root=root, progress=progress)
    arch = network.architecture
    seqs = build_sequences(cfg, network, root=root)
    features = build_features(arch, seqs)
    results = header(cfg, network, seqs, name)
    results["path_similarity"] = jsonable(path_similarity(features["train"], arch.heads, cfg.seed))
    lap("data_and_features")
    sweep = sweep_for(cfg, arch, features, seqs.y, cache=cache_path)
    results.update(theory_stage(cfg, arch, features, seqs.y, sweep))
    results.update(pc_overlap_stage(cfg, arch, features, seqs.y, results))
    lap("theory")
    results.update(comparison_stage(cfg, network, features, seqs.y, results, progress=progress))
    lap("order_parameters")
    results["gd_accuracy"] = gd_accuracies(network, seqs)
    results.update(head_pruning.pruning_stage(cfg, network, features, seqs.y, results))
    lap("pruning")
    results["score_sensitivity"] = head_pruning.score_sensitivity(cfg, network, features, seqs.y, sweep, results,
                                                                         root=root)
    lap("score_sensitivity")
    results["claims"] = jsonable(fig3_claims(results))
    timings["total"] = time.perf_counter() - start
    results["timings"] = timings
    results["environment"] = environment()
    if out_dir is not None:
        write_outputs(results, features, seqs, Path(out_dir))
    return results


def write_outputs(results: dict, features: dict, seqs: Sequences, out_dir: Path) -> list[Path]:
    """``results.json``, ``features.npz`` (the theory's inputs per split) and one PNG per :data:`FIGURES`
    entry, all or nothing (:func:`paththeory._io.write_outputs`: ``results.json`` last)."""
    arrays = {"paths": np.array(results["paths"]), **{f"features_{s}": f for s, f in features.items()},
              **{f"y_{s}": y for s, y in seqs.y.items()}}
    figures = {"accuracy": plot_accuracy, "temperature": plot_temperature_grid, "pc_overlap": plot_pc_overlaps,
               "order_parameters": plot_order_parameters, "head_scores": plot_head_scores,
               "pruning": plot_pruning, "score_sensitivity": plot_score_sensitivity}
    makers = {name: (lambda plot=plot: plot(results)) for name, plot in figures.items()}
    return _io.write_outputs(out_dir, results, arrays, makers)


# --------------------------------------------------------------------------- figures


@book_style
def plot_sequence(network: training.Checkpoint, seed: int = 0, *, root: str | os.PathLike | None = None,
                  profile: str | None = None) -> Figure:
    """The three drawings of one training sequence: two labelled contexts and the query (Fig. 3a)."""
    chars = load_omniglot(_omniglot_subset(network), root=root)
    split = character_split(network, chars.n_classes)
    index = icl_indices(chars.labels, seed, 1, characters=split.train)
    fig, axes = panel_grid(3, 2.9, max_columns=3, width=6.0)
    for ax, image, label, title in zip(axes, index.images[0], index.labels[0], ("context 1", "context 2", "query")):
        ax.imshow(chars.images[image], cmap="gray")
        ax.set_title(f"{title}\n{'label ' + str(label) if label < 2 else 'label unknown'}")
        ax.set_xticks([])
        ax.set_yticks([])
    axes[2].set_xlabel(f"target y = {int(index.y[0]):+d}")
    fig.supxlabel(f"query character: {chars.classes[chars.labels[index.images[0, 2]]]}", fontsize=9)
    stamp_profile(fig, profile)
    return fig


@book_style
def plot_training(history: dict, profile: str | None = None) -> Figure:
    """Training loss and validation accuracy against the step (``history`` of :func:`paththeory.training.train`)."""
    steps = np.asarray(history["step"])
    loss = np.array([np.nan if v is None else v for v in history["loss"]], dtype=float)
    fig, (ax_l, ax_a) = panel_grid(2, 3.2)
    ax_l.plot(steps, loss, "o-", ms=3, color=COLOURS["trained"])
    ax_l.set_xlabel("step")
    ax_l.set_ylabel("training loss (MSE)")
    ax_a.plot(steps, history["val_accuracy"], "o-", ms=3, color=COLOURS["trained"])
    ax_a.axhline(0.5, color=COLOURS["chance"], ls=":", label="chance")
    ax_a.set_xlabel("step")
    ax_a.set_ylabel("validation accuracy")
    ax_a.legend()
    stamp_profile(fig, profile)
    return fig
