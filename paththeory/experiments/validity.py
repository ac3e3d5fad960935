"""Where the saddle point stops being accurate: the theory against posterior samples over ``|Pi| / N``.

The theory's one approximation, Laplace's (the posterior mean of the overlaps read off their mode), is controlled
only when ``|Pi| / N`` is small, and how its error grows with the number of paths is not derived (the book's
``validity`` chapter, "One approximation: Laplace's"). This module measures how far the
theory's order parameter and predictor lie from posterior samples of the finite network as that
ratio grows: the four-path hidden-Markov-chain task (the paper's Fig. 2) at several widths, and
the 16-path Omniglot network (its Fig. 3) at the smallest widths, where ``|Pi| / N`` reaches 1.6.
NUTS samples the narrow networks; the exact blocked Gibbs sampler
(``sample_posterior(..., method="gibbs")``) the wide ones, up to ``N = 1000``.

* :data:`SETTINGS` and :func:`settings`: the sizes per profile, each sampler's widths and schedule;
* :func:`sample_points`: one sampler at every one of its points (the expensive part), as JSON-ready
  records;
* :func:`shipped_samples` / :func:`write_samples`: the records of a profile shipped with the
  package, one file per sampler (written by ``python -m paththeory validity [--sampler gibbs]``),
  so that the book need not sample again;
* :func:`compare`: the theory solved on the same training sets, against the records: one :class:`Row` per point,
  the relative distance of ``U`` with its noise floor, debiased or bounded, and the paired accuracy difference;
* :func:`findings`: the verdicts (:class:`Findings`: per task and sampler, and the two tasks at equal
  ``|Pi| / N``); :func:`plot`: the figure. Their words: :mod:`paththeory.reports.validity`.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import asdict, dataclass, is_dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from paththeory.experiments import stats
from paththeory.experiments import SAMPLER_NAMES
from paththeory.experiments.records import SHIPPED, ShippedRecords, jsonable, schedule, schedule_fields
from paththeory.experiments.compare import distance as compare_distance, record_batches, sampled_vs_theory
from paththeory.experiments import markov as markov_experiment
from paththeory.display.plots import COLOURS, book_style, legend_below, panel_grid, stamp_profile
from paththeory.predict import mean_predictor
from paththeory.profiles import choose, current_profile, time_limit
from paththeory.sampling import sample_posterior
from paththeory.solve import Theory

#: Where the shipped records live (one JSON file per profile).
TASKS = ("markov", "omniglot")
#: Largest rank-normalised R-hat of ``U``'s entries at which a point's Monte Carlo error is taken at face value.
R_HAT_OK = 1.01


@dataclass(frozen=True)
class Config:
    """Sizes of one profile.

    ``markov_widths`` / ``omniglot_widths``: the widths ``N`` sampled for each task (4 and 16
    paths); ``*_train`` / ``*_test``: training and test sequences (balanced for Omniglot);
    ``*_temperature``: the temperature ``T`` of both the theory and the samples; ``num_chains``
    chains of ``num_warmup`` + ``num_samples`` NUTS iterations per point; ``gibbs_markov_widths`` /
    ``gibbs_omniglot_widths``: the widths sampled with the exact Gibbs sampler, ``gibbs_chains``
    chains of ``gibbs_warmup`` + ``gibbs_samples`` sweeps per point; ``time_limit``: a
    fail-safe against a stuck run, in seconds per point, far above an honest run's time (a run that
    reaches it fails, :class:`paththeory.sampling.results.TimeLimitReached`;
    :func:`paththeory.profiles.time_limit`); ``seed``: data and sampler seed.
    """

    markov_widths: tuple[int, ...]
    omniglot_widths: tuple[int, ...]
    num_warmup: int
    num_samples: int
    num_chains: int
    time_limit: float
    markov_train: int = 100
    markov_test: int = 500
    markov_temperature: float = 0.01
    omniglot_train: int = 300
    omniglot_test: int = 500
    omniglot_temperature: float = 0.25
    seed: int = 0
    gibbs_markov_widths: tuple[int, ...] = ()
    gibbs_omniglot_widths: tuple[int, ...] = ()
    gibbs_warmup: int = 200
    gibbs_samples: int = 800
    gibbs_chains: int = 4


#: The samplers and, for each, the fields of :class:`Config` that fix its records: the Markov and Omniglot
#: widths, warm-up, kept draws and chains (the last three: :func:`paththeory.experiments.records.schedule_fields`).
SAMPLERS = {"nuts": ("markov_widths", "omniglot_widths", *schedule_fields("nuts")),
            "gibbs": ("gibbs_markov_widths", "gibbs_omniglot_widths", *schedule_fields("gibbs"))}
#: The shipped records, one file per sampler and profile (``python -m paththeory validity [--sampler gibbs]``):
#: a file serves a :class:`Config` that agrees on its sampler's fields and the data's.
RECORDS = ShippedRecords("validity", SHIPPED, SAMPLERS,
                         ("markov_train", "markov_test", "markov_temperature", "omniglot_train", "omniglot_test",
                          "omniglot_temperature", "seed"), "the validity records")

SETTINGS: dict[str, Config] = {
    # smoke: sampled once on a 2-core CPU by `python -m paththeory validity [--sampler gibbs]` and
    # shipped (the NUTS run takes about half an hour there, longer than the whole book build of
    # CI; the Gibbs run about 20 minutes, most of it at N = 1000); the chapter solves the theory
    # against them. NUTS, 4 chains x 300 draws: the Monte Carlo error of U's distance is a few per
    # cent of U (2 chains x 150 draws gave 1.5-6 %). Gibbs, 4 chains x 800 sweeps, at the widths
    # NUTS does not reach on a CPU (and at N = 100, beside NUTS, to compare the two); measured on the
    # shared 2-core CPU, one sweep of one chain took
    # 0.017 s (Markov, N = 300), 0.21 s (N = 1000), 0.015 s (Omniglot, N = 40), 0.044 s (N = 100).
    "smoke": Config((10, 30, 100), (10, 20), 200, 300, 4, 4 * 3600.0, gibbs_markov_widths=(100, 300, 1000),
                    gibbs_omniglot_widths=(40, 100)),
    # colab: the same sizes, so the chapter reads the shipped CPU runs instead of sampling for ten
    # minutes or more on the GPU (python -m paththeory validity --profile colab samples afresh).
    "colab": Config((10, 30, 100), (10, 20), 200, 300, 4, 4 * 3600.0, gibbs_markov_widths=(100, 300, 1000),
                    gibbs_omniglot_widths=(40, 100)),
    "paper": Config((10, 30, 50, 100), (10, 20, 40), 300, 300, 4, 24 * 3600.0, omniglot_train=600,
                    omniglot_test=1000, gibbs_markov_widths=(100, 300, 1000), gibbs_omniglot_widths=(40, 100, 300),
                    gibbs_warmup=500, gibbs_samples=2000),
}


def settings(profile: str | None = None) -> Config:
    """The :class:`Config` of ``profile`` (default: the current profile)."""
    return choose(SETTINGS, profile)


@dataclass(frozen=True)
class Problem:
    """One task's training and test path features ``[P, n_paths, N0]`` with their labels."""

    task: str
    arch: object
    train: np.ndarray
    y_train: np.ndarray
    test: np.ndarray
    y_test: np.ndarray
    temperature: float

    @property
    def digest(self) -> str:
        """A short hash of the training and test arrays: a record is compared only with its own data."""
        h = hashlib.sha256()
        for a in (self.train, self.y_train, self.test, self.y_test):
            h.update(np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes())
        return h.hexdigest()[:16]


def problem(task: str, cfg: Config) -> Problem:
    """The data of ``task`` (``"markov"`` or ``"omniglot"``) at the sizes of ``cfg``.

    Markov: the four-path task of the paper's Fig. 2 (``paththeory.experiments.markov.problem``).
    Omniglot: the shipped ``L = 2, H = 4`` network's queries and keys, balanced sequences of its
    training characters for training and of its held-out characters for testing. Built once per task and sizes
    (the Omniglot features take seconds; the arrays are read-only): every :func:`compare` of the same data shares it.
    """
    if task == "markov":
        return _problem(task, cfg.markov_train, cfg.markov_test, cfg.markov_temperature, cfg.seed)
    if task == "omniglot":
        return _problem(task, cfg.omniglot_train, cfg.omniglot_test, cfg.omniglot_temperature, cfg.seed)
    raise ValueError(f"task must be one of {TASKS}; got {task!r}.")


@lru_cache(maxsize=8)
def _problem(task: str, n_train: int, n_test: int, temperature: float, seed: int) -> Problem:
    """:func:`problem` of the sizes that fix the data (a :class:`Config` is more: its widths and schedules)."""
    if task == "markov":
        p = markov_experiment.problem("four_paths", n_train, n_test)
        arrays, arch = (p.train, p.y_train, p.test, p.y_test), p.arch
    else:
        from paththeory.experiments.omniglot import trained_network
        from paththeory.experiments.omniglot_base import training_sequences
        from paththeory.model import path_features

        network = trained_network()
        rng_train, rng_test = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
        x, y = training_sequences(network, n_train, rng_train)
        xt, yt = training_sequences(network, n_test, rng_test, characters="test")
        arch = network.architecture
        arrays = (path_features(arch, x), y, path_features(arch, xt), yt)
    arrays = [np.array(a) for a in arrays]
    for a in arrays:
        a.setflags(write=False)
    return Problem(task, arch, *arrays, temperature)


def sampled_widths(cfg: Config | dict, sampler: str) -> dict[str, tuple[int, ...]]:
    """``{task: widths}`` that ``sampler`` samples in ``cfg`` (a :class:`Config` or its JSON, as a provenance keeps
    it): its first :data:`SAMPLERS` fields, one per task.

    Example:
      >>> sampled_widths(settings("smoke"), "gibbs")
      {'markov': (100, 300, 1000), 'omniglot': (40, 100)}
    """
    cfg = asdict(cfg) if is_dataclass(cfg) else cfg
    return {task: tuple(cfg[name]) for task, name in zip(TASKS, SAMPLERS[RECORDS.check(sampler)])}


def sample_points(cfg: Config, sampler: str = "nuts", *, progress: bool = False) -> list[dict]:
    """``sampler`` (``"nuts"`` or ``"gibbs"``) at every (task, width) of its points in ``cfg``: one
    JSON-ready record per point.

    A record holds the ``sampler``, the task, ``width``, ``paths``, ``ratio = paths / width``, the
    data ``digest``, the sampled ``U`` and its per-entry batch-means error ``U_se``, ``correct``
    (whether the sampled mean predictor classifies each test sequence correctly), ``diagnostics``
    and ``complete`` (``False`` when a chain has fewer than 4 draws, too few for a batch-means
    error; such a record's numbers are not used).
    """
    widths = sampled_widths(cfg, sampler)
    records = []
    for task in TASKS:
        if not widths[task]:
            continue
        prob = problem(task, cfg)
        for i, width in enumerate(widths[task]):
            res = sample_posterior(prob.arch, prob.train, prob.y_train, width, prob.temperature, method=sampler,
                                   features_test=prob.test, **schedule(cfg, sampler),
                                   time_limit=time_limit(cfg.time_limit), seed=cfg.seed + i, progress_bar=progress)
            if progress:
                print(f"{task} N = {width} ({SAMPLER_NAMES[sampler]}):\n{res.summary()}", flush=True)
            complete = res.U_draws.shape[1] >= 4
            records.append(jsonable({
                "sampler": sampler, "task": task, "width": int(width), "paths": int(prob.arch.n_paths),
                "ratio": prob.arch.n_paths / width, "temperature": prob.temperature,
                "n_train": len(prob.y_train), "n_test": len(prob.y_test), "digest": prob.digest,
                "complete": complete,
                "U": np.asarray(res.U) if complete else None,
                "U_se": stats.batch_means_se(res.U_draws) if complete else None,
                "correct": (np.asarray(res.mean) * prob.y_test > 0).astype(int) if complete else None,
                "diagnostics": res.to_dict()["diagnostics"],
            }))
    return records


def write_samples(profile: str | None = None, out: str | os.PathLike | None = None, *, sampler: str = "nuts",
                  progress: bool = True) -> Path:
    """Sample every point of ``sampler`` in ``profile`` and write the records with their provenance to
    ``out`` (default: the package's own file for the profile and sampler, ``validity_<profile>.json``
    for NUTS and ``validity_gibbs_<profile>.json`` for Gibbs, which the book then reads). Atomic: an
    interrupted run leaves the previous file intact."""
    profile = current_profile(profile)
    return RECORDS.write(settings(profile), profile, sampler, partial(sample_points, progress=progress), out)


def shipped_samples(profile: str | None = None, sampler: str = "nuts", *, config: Config | None = None) -> dict | None:
    """Shipped records (``{"sampler", "provenance", "records"}``) of ``sampler`` sampled with the sizes of
    ``config`` (default: ``profile``'s :class:`Config`; those of another profile with the same sizes
    serve too), or ``None``. Only the fields that fix ``sampler``'s records are compared
    (:data:`SAMPLERS` and the data's): the time limit changes no number, and the other sampler's
    widths do not change these records."""
    return RECORDS.shipped(config or settings(profile), sampler)


def samples(profile: str | None = None, *, sampler: str = "nuts", progress: bool = False,
            config: Config | None = None) -> dict:
    """``sampler``'s shipped records of ``profile`` (or ``config``) when they match its sizes, else a fresh
    run (not written): ``{"sampler", "provenance", "records"}``."""
    return RECORDS.load(config or settings(profile), current_profile(profile), sampler,
                        partial(sample_points, progress=progress))


@dataclass(frozen=True)
class Row:
    """One sampled point against the theory on the same data: the ``sampler``, ``task``, ``width``, ``paths`` and
    ``ratio = paths / width``; ``distance`` ``d = |U_sampled - U*|_F / |U*|_F`` with its noise floor ``noise`` ``s``
    (``None``: not known) from ``batch_means`` batch means, and the GP point's distance ``gp_distance``
    (:func:`paththeory.experiments.compare.sampled_vs_theory`); the paired accuracy difference sampled minus theory,
    ``accuracy`` with its error ``accuracy_se`` over ``n_test`` sequences
    (:func:`paththeory.experiments.stats.paired_difference`), and both accuracies; the worst R-hat and bulk ESS of
    ``U``.

    The verdicts: ``mixed`` (R-hat at most :data:`R_HAT_OK`); ``resolved`` (``d > 2 s``) with the debiased ``value``
    and its error ``se``, else an ``upper_limit`` (and the ``limit``/``limit_se`` a censored fit takes:
    :func:`paththeory.experiments.compare.distance`); ``gp_fraction`` ``d / d_GP`` (``None`` at the GP
    point); ``accuracy_beyond``, the accuracy difference beyond two paired standard errors."""

    sampler: str
    task: str
    width: int
    paths: int
    ratio: float
    distance: float
    noise: float | None
    batch_means: int | None
    gp_distance: float
    accuracy: float
    accuracy_se: float
    n_test: int
    theory_accuracy: float
    sampled_accuracy: float
    r_hat: float | None
    ess: float | None
    mixed: bool
    resolved: bool
    value: float | None
    se: float | None
    upper_limit: float | None
    limit: float | None
    limit_se: float | None
    gp_fraction: float | None
    accuracy_beyond: bool


def row(sampler: str, task: str, width: int, paths: int, distance: float, noise: float | None,
        batch_means: int | None, gp_distance: float, accuracy: dict, theory_accuracy: float, sampled_accuracy: float,
        r_hat: float | None = None, ess: float | None = None) -> Row:
    """A :class:`Row` with its verdicts: the distance debiased or bounded where its noise floor is known
    (:func:`paththeory.experiments.compare.distance`), and ``accuracy`` (a
    :func:`~paththeory.experiments.stats.paired_difference`) beyond two errors or not.

    Example:
      >>> r = row("nuts", "markov", 10, 4, 0.05, 0.04, None, 0.5, {"difference": 0.002, "se": 0.004, "n": 500},
      ...         0.9, 0.902, 1.01, 100.0)
      >>> r.ratio, r.resolved, round(r.upper_limit, 2), r.gp_fraction, r.mixed, r.accuracy_beyond
      (0.4, False, 0.13, 0.1, True, False)
    """
    known = noise is not None and math.isfinite(noise)
    d = compare_distance(distance, noise if known else None, batch_means)
    return Row(sampler, task, int(width), int(paths), paths / width, float(distance), d.noise,
               batch_means, float(gp_distance), accuracy["difference"], accuracy["se"], accuracy["n"],
               float(theory_accuracy), float(sampled_accuracy), r_hat, ess,
               r_hat is not None and r_hat <= R_HAT_OK, d.resolved, d.value, d.se, d.upper_limit,
               d.limit, d.limit_se, distance / gp_distance if gp_distance > 0 else None,
               abs(accuracy["difference"]) > 2 * accuracy["se"])


def compare(runs: dict | Sequence[dict], cfg: Config) -> list[Row]:
    """The theory against every complete record, on the same data (checked by its digest): one :class:`Row` per
    point, sorted by task, then ``|Pi| / N``.

    ``runs``: a payload of :func:`samples` (``{"sampler", "provenance", "records"}``) or a list of
    records; a record without a ``sampler`` is NUTS's (the first shipped records predate the key)
    unless the payload names another. The data of each task are :func:`problem`'s, built once.
    """
    default = "nuts"
    if isinstance(runs, dict):
        default = runs.get("sampler") or runs["provenance"].get("sampler", "nuts")
        runs = runs["records"]
    rows = []
    for rec in runs:
        if not rec["complete"]:
            continue
        task, sampler = rec["task"], RECORDS.check(rec.get("sampler", default))
        prob = problem(task, cfg)
        if prob.digest != rec["digest"]:
            flag = "" if sampler == "nuts" else f" --sampler {sampler}"
            raise ValueError(f"the {task} record ({SAMPLER_NAMES[sampler]}) at N = {rec['width']} was sampled on "
                             f"other data than this version builds (digest {rec['digest']} against {prob.digest}); "
                             f"sample again with `python -m paththeory validity{flag}`.")
        U = Theory(prob.arch, prob.train, prob.y_train).solve(rec["width"], prob.temperature).U
        theory_mean = np.asarray(mean_predictor(U, prob.train, prob.y_train, prob.test, prob.temperature))
        theory_right = theory_mean * prob.y_test > 0
        sampled_right = np.asarray(rec["correct"], dtype=bool)
        d = sampled_vs_theory(U, rec["U"], rec["U_se"], prob.arch.gp_scale)
        diag = rec["diagnostics"]
        rows.append(row(sampler, task, rec["width"], rec["paths"], d["relative_distance"], d["noise"],
                        record_batches(rec), d["gp_relative_distance"],
                        stats.paired_difference(sampled_right, theory_right), float(theory_right.mean()),
                        float(sampled_right.mean()), diag.get("r_hat_U_max"), diag.get("ess_bulk_U_min")))
    return sorted(rows, key=lambda r: (r.task, r.ratio))


@dataclass(frozen=True)
class Group:
    """The points of one ``task`` and ``sampler``, smallest ``|Pi| / N`` first."""

    task: str
    sampler: str
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class SameRatio:
    """The two tasks at one ``ratio`` ``|Pi| / N``: the 4-path ``markov`` and 16-path ``omniglot`` points and
    ``order``, where the 16-path distance lies against the 4-path one: ``"above"`` or ``"below"`` (beyond two
    combined errors; an unresolved point is below the other only where its upper limit lies two errors under the
    other's value), ``"within"`` (two resolved distances within two combined errors) or ``"unordered"`` (two
    unresolved points, an unknown noise floor, or a limit that does not clear the other's value)."""

    ratio: float
    markov: Row
    omniglot: Row
    order: str


@dataclass(frozen=True)
class Findings:
    """The validity figure's verdicts: per task and sampler, its points (:class:`Group`), and the two tasks at every
    ``|Pi| / N`` both sampled (:class:`SameRatio`)."""

    groups: tuple[Group, ...]
    same_ratio: tuple[SameRatio, ...]


def order(markov: Row, omniglot: Row) -> str:
    """:attr:`SameRatio.order` of the 16-path ``omniglot`` point against the 4-path ``markov`` one.

    Example:
      >>> def at(task, d, s):
      ...     return row("nuts", task, 10, 4, d, s, None, 1.0, {"difference": 0.0, "se": 0.01, "n": 500}, 0.9, 0.9)
      >>> order(at("markov", 0.10, 0.01), at("omniglot", 0.20, 0.01)), order(at("markov", 0.10, 0.01),
      ...                                                                    at("omniglot", 0.02, 0.01))
      ('above', 'below')
    """
    a, b = markov, omniglot
    if a.noise is None or b.noise is None or not (a.resolved or b.resolved):
        return "unordered"
    if a.resolved and b.resolved:
        gap, noise = b.value - a.value, math.hypot(a.se, b.se)
        return "above" if gap > 2 * noise else "below" if gap < -2 * noise else "within"
    if b.resolved:  # the 4-path point is an upper limit
        return "above" if b.value - 2 * b.se > a.upper_limit else "unordered"
    return "below" if a.value - 2 * a.se > b.upper_limit else "unordered"


def findings(rows: Sequence[Row]) -> Findings:
    """:class:`Findings` of the rows of :func:`compare` (of one sampler or both): per task and sampler in the order
    of :data:`TASKS` and :data:`SAMPLERS`, and at every ``|Pi| / N`` where both tasks have a point, the first of
    each task there (the tasks differ in data, temperature and, possibly, sampler too)."""
    groups = []
    for task in TASKS:
        for sampler in SAMPLERS:
            sel = sorted((r for r in rows if r.task == task and r.sampler == sampler), key=lambda r: r.ratio)
            if sel:
                groups.append(Group(task, sampler, tuple(sel)))
    by_ratio: dict[float, dict[str, Row]] = {}
    for r in rows:
        by_ratio.setdefault(round(r.ratio, 9), {}).setdefault(r.task, r)
    same = tuple(SameRatio(ratio, pair["markov"], pair["omniglot"], order(pair["markov"], pair["omniglot"]))
                 for ratio, pair in sorted(by_ratio.items()) if len(pair) == 2)
    return Findings(tuple(groups), same)


#: The figure's marker of each (task, sampler): circles and squares NUTS, diamonds and triangles Gibbs.
MARKERS = {("markov", "nuts"): "o", ("omniglot", "nuts"): "s", ("markov", "gibbs"): "D", ("omniglot", "gibbs"): "^"}


@book_style
def plot(rows: Sequence[Row], profile: str | None = None) -> Figure:
    """Left: the distance of the sampled ``U`` from the theory's (filled: debiased with two errors where resolved;
    a triangle at its 97.7 % upper limit where not: :class:`Row`) and the GP point's distance (open), against
    ``|Pi| / N``, on log scales. Right: the paired accuracy difference sampled minus theory with two standard
    errors. One marker per task and sampler (:data:`MARKERS`); the legend names the markers once and the kinds of
    points once."""
    fig, (left, right) = panel_grid(2, height=3.0)
    short = {"markov": "Markov", "omniglot": "Omniglot"}
    for (task, sampler), marker in MARKERS.items():
        sel = [r for r in rows if r.task == task and r.sampler == sampler]
        if not sel:
            continue
        x = np.array([r.ratio for r in sel])
        res = [r for r in sel if r.resolved]
        if res:
            d = np.array([r.value for r in res])
            err = 2 * np.array([r.se for r in res])
            left.errorbar([r.ratio for r in res], d, yerr=[np.minimum(err, 0.9 * d), err],  # log axis: no zero
                          fmt=marker, color=COLOURS["theory"], capsize=3)
        limits = [r for r in sel if r.upper_limit is not None]
        if limits:
            left.plot([r.ratio for r in limits], [r.upper_limit for r in limits], "v", color=COLOURS["theory"],
                      alpha=0.6)
        left.plot(x, [r.gp_distance for r in sel], marker, mfc="none", color=COLOURS["gp"])
        right.errorbar(x, [100 * r.accuracy for r in sel], yerr=[200 * r.accuracy_se for r in sel], fmt=marker,
                       color=COLOURS["nuts"], capsize=3)
        left.plot([], [], marker, color="0.3", ls="none", label=f"{short[task]}, {SAMPLER_NAMES[sampler]}")
    left.plot([], [], "o", color=COLOURS["theory"], label="distance to the theory")
    left.plot([], [], "v", color=COLOURS["theory"], alpha=0.6, label="not resolved: below")
    left.plot([], [], "o", mfc="none", color=COLOURS["gp"], label="distance to the GP point")
    left.plot([], [], "o", color=COLOURS["nuts"], label="accuracy, sampled − theory")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel("paths per unit width |Π|/N")
    left.set_yscale("log")
    left.set_ylabel("distance of the sampled U")
    right.axhline(0, color="0.6", lw=0.8)
    right.set_ylabel("sampled − theory (points)")
    legend_below(fig, [left, right], columns=3)
    stamp_profile(fig, profile)
    return fig
