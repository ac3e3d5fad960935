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
* :func:`compare`: the theory solved on the same training sets, against the records: the relative
  distance of ``U`` with its Monte Carlo error, and the paired accuracy difference;
* :func:`plot` and :func:`summary`: the figure and its sentences, generated from :func:`compare`.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from paththeory.experiments import stats
from paththeory.display.tables import markdown_table
from paththeory.experiments import SAMPLER_NAMES
from paththeory.experiments.records import ShippedRecords, jsonable, schedule, schedule_fields
from paththeory.experiments.compare import record_batches, sampled_vs_theory
from paththeory.experiments import markov as markov_experiment
from paththeory.display.plots import COLOURS, book_style, legend_below, panel_grid, stamp_profile
from paththeory.predict import mean_predictor
from paththeory.profiles import choose, current_profile, time_limit
from paththeory.sampling import sample_posterior
from paththeory.solve import Theory

#: Where the shipped records live (one JSON file per profile).
SHIPPED = Path(__file__).resolve().parent.parent / "results"
TASKS = ("markov", "omniglot")
TASK_NAMES = {"markov": "the hidden Markov chain (4 paths)", "omniglot": "Omniglot (16 paths)"}
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
    training characters for training and of its held-out characters for testing.
    """
    if task == "markov":
        p = markov_experiment.problem("four_paths", cfg.markov_train, cfg.markov_test)
        return Problem(task, p.arch, p.train, p.y_train, p.test, p.y_test, cfg.markov_temperature)
    if task == "omniglot":
        from paththeory.experiments.omniglot import trained_network
        from paththeory.experiments.omniglot_base import training_sequences
        from paththeory.model import path_features

        network = trained_network()
        rng_train, rng_test = (np.random.default_rng(s) for s in np.random.SeedSequence(cfg.seed).spawn(2))
        x, y = training_sequences(network, cfg.omniglot_train, rng_train)
        xt, yt = training_sequences(network, cfg.omniglot_test, rng_test, characters="test")
        arch = network.architecture
        return Problem(task, arch, np.asarray(path_features(arch, x)), np.asarray(y),
                       np.asarray(path_features(arch, xt)), np.asarray(yt), cfg.omniglot_temperature)
    raise ValueError(f"task must be one of {TASKS}; got {task!r}.")


def _widths(cfg: Config, sampler: str) -> dict[str, tuple[int, ...]]:
    """``{task: widths}`` that ``sampler`` samples in ``cfg``: its first :data:`SAMPLERS` fields, one per task."""
    return {task: tuple(getattr(cfg, name)) for task, name in zip(TASKS, SAMPLERS[RECORDS.check(sampler)])}


def sample_points(cfg: Config, sampler: str = "nuts", *, progress: bool = False) -> list[dict]:
    """``sampler`` (``"nuts"`` or ``"gibbs"``) at every (task, width) of its points in ``cfg``: one
    JSON-ready record per point.

    A record holds the ``sampler``, the task, ``width``, ``paths``, ``ratio = paths / width``, the
    data ``digest``, the sampled ``U`` and its per-entry batch-means error ``U_se``, ``correct``
    (whether the sampled mean predictor classifies each test sequence correctly), ``diagnostics``
    and ``complete`` (``False`` when a chain has fewer than 4 draws, too few for a batch-means
    error; such a record's numbers are not used).
    """
    widths = _widths(cfg, sampler)
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


def _widths_text(widths: Sequence[int]) -> str:
    return ", ".join(map(str, widths))


def provenance_text(payload: dict) -> str:
    """A reader's sentence on where the records of ``payload`` (of either sampler) come from, and
    their sizes."""
    prov = payload["provenance"]
    sampler = prov["sampler"]
    cfg = Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in prov["config"].items()})
    widths, sched = _widths(cfg, sampler), schedule(cfg, sampler)
    where = ("were drawn while this page was built" if prov["command"] == "sampled in this run" else
             f"were drawn by `{prov['command']}` on {prov['date']} ({prov['machine']}, "
             f"{prov['seconds'] / 60:.0f} minutes) and ship with the package; the theory is solved as "
             "the page is built")
    steps = "warm-up steps" if sampler == "nuts" else "warm-up sweeps"
    tasks = []
    if widths["markov"]:
        tasks.append(f"Markov: P = {cfg.markov_train} training and {cfg.markov_test} test sequences, "
                     f"T = {cfg.markov_temperature:g}, N = {_widths_text(widths['markov'])}.")
    if widths["omniglot"]:
        tasks.append(f"Omniglot: P = {cfg.omniglot_train} training sequences (training characters) and "
                     f"{cfg.omniglot_test} test sequences (held-out characters), T = {cfg.omniglot_temperature:g}, "
                     f"N = {_widths_text(widths['omniglot'])}.")
    return " ".join([f"The {SAMPLER_NAMES[sampler]} samples ({prov['profile']} sizes) {where}. Each point is "
                     f"{sched['num_chains']} chains of {sched['num_samples']} draws after {sched['num_warmup']} "
                     f"{steps}.", *tasks])


def compare(runs: dict | Sequence[dict], cfg: Config) -> list[dict]:
    """The theory against every complete record, on the same data (checked by its digest).

    ``runs``: a payload of :func:`samples` (``{"sampler", "provenance", "records"}``) or a list of
    records; a record without a ``sampler`` is NUTS's (the first shipped records predate the key)
    unless the payload names another.

    Per point: ``sampler``, ``task``, ``width``, ``ratio``; ``distance``, the relative Frobenius
    distance ``|U_sampled - U*|_F / |U*|_F`` with its Monte Carlo ``noise`` and the GP point's
    distance ``gp_distance`` (:func:`paththeory.experiments.compare.sampled_vs_theory`); ``batch_means``, how many batch
    means the noise comes from (:func:`paththeory.experiments.compare.record_batches`); ``accuracy``, the
    paired difference sampled minus theory on the test sequences
    (:func:`paththeory.experiments.stats.paired_difference`); ``theory_accuracy``,
    ``sampled_accuracy``; ``r_hat`` and ``ess``, the worst R-hat and bulk ESS of ``U``. Sorted by
    task, then ``|Pi| / N``.
    """
    default = "nuts"
    if isinstance(runs, dict):
        default = runs.get("sampler") or runs["provenance"].get("sampler", "nuts")
        runs = runs["records"]
    rows = []
    problems = {}
    for rec in runs:
        if not rec["complete"]:
            continue
        task, sampler = rec["task"], RECORDS.check(rec.get("sampler", default))
        if task not in problems:  # built once per task (the Omniglot features take seconds)
            problems[task] = problem(task, cfg)
        prob = problems[task]
        if prob.digest != rec["digest"]:
            flag = "" if sampler == "nuts" else f" --sampler {sampler}"
            raise ValueError(f"the {task} record ({SAMPLER_NAMES[sampler]}) at N = {rec['width']} was sampled on "
                             f"other data than this version builds (digest {rec['digest']} against {prob.digest}); "
                             f"sample again with `python -m paththeory validity{flag}`.")
        U = Theory(prob.arch, prob.train, prob.y_train).solve(rec["width"], prob.temperature).U
        theory_right = np.asarray(mean_predictor(U, prob.train, prob.y_train, prob.test, prob.temperature)) * prob.y_test > 0
        sampled_right = np.asarray(rec["correct"], dtype=bool)
        d = sampled_vs_theory(U, rec["U"], rec["U_se"], prob.arch.gp_scale)
        diag = rec["diagnostics"]
        rows.append({"sampler": sampler, "task": task, "width": rec["width"], "paths": rec["paths"],
                     "ratio": rec["ratio"], "distance": d["relative_distance"], "noise": d["noise"],
                     "batch_means": record_batches(rec), "gp_distance": d["gp_relative_distance"],
                     "accuracy": stats.paired_difference(sampled_right, theory_right),
                     "theory_accuracy": float(theory_right.mean()), "sampled_accuracy": float(sampled_right.mean()),
                     "r_hat": diag.get("r_hat_U_max"), "ess": diag.get("ess_bulk_U_min")})
    return sorted(rows, key=lambda r: (r["task"], r["ratio"]))


def table(rows: Sequence[dict]) -> str:
    """The rows of :func:`compare` (of one sampler or both) as a Markdown table, narrow enough for a phone."""
    short = {"markov": "Markov (4 paths)", "omniglot": "Omniglot (16 paths)"}
    return markdown_table(
        ["task", "sampler", "N", "paths/N", "distance of U (Monte Carlo error)", "GP point's distance",
         "accuracy, sampled − theory", "R-hat / ESS of U"],
        [(short[r["task"]], SAMPLER_NAMES[r["sampler"]], r["width"], f"{r['ratio']:.2g}",
          f"{r['distance']:.3f} ({r['noise']:.3f})", f"{r['gp_distance']:.3f}",
          f"{100 * r['accuracy']['difference']:+.1f} ± {100 * r['accuracy']['se']:.1f} pts",
          "n/a" if r["r_hat"] is None or r["ess"] is None else f"{r['r_hat']:.2f} / {r['ess']:.0f}") for r in rows])


#: The figure's marker of each (task, sampler): circles and squares NUTS, diamonds and triangles Gibbs.
MARKERS = {("markov", "nuts"): "o", ("omniglot", "nuts"): "s", ("markov", "gibbs"): "D", ("omniglot", "gibbs"): "^"}


def debiased(r: dict) -> dict | None:
    """A row's distance with its noise floor (:func:`paththeory.experiments.stats.debiased_distance`, ``s``'s own error
    from the row's ``batch_means`` carried): debiased with its error where resolved, else an upper limit; ``None``
    where the noise is not known."""
    if r["noise"] is None or not math.isfinite(r["noise"]):
        return None
    return stats.debiased_distance(r["distance"], r["noise"], r.get("batch_means"))


@book_style
def plot(rows: Sequence[dict], profile: str | None = None) -> Figure:
    """Left: the distance of the sampled ``U`` from the theory's (filled: debiased with two errors where resolved,
    :func:`debiased`; a triangle at its 97.7 % upper limit where not) and the GP point's distance (open), against
    ``|Pi| / N``, on log scales. Right: the paired accuracy difference sampled minus theory with two standard
    errors. One marker per task and sampler (:data:`MARKERS`); the legend names the markers once and the kinds of
    points once."""
    fig, (left, right) = panel_grid(2, height=3.0)
    short = {"markov": "Markov", "omniglot": "Omniglot"}
    for (task, sampler), marker in MARKERS.items():
        sel = [r for r in rows if r["task"] == task and r["sampler"] == sampler]
        if not sel:
            continue
        x = np.array([r["ratio"] for r in sel])
        points = [(r["ratio"], debiased(r)) for r in sel]
        res = [(ratio, d) for ratio, d in points if d is not None and d["resolved"]]
        if res:
            d = np.array([v["value"] for _, v in res])
            err = 2 * np.array([v["se"] for _, v in res])
            left.errorbar([ratio for ratio, _ in res], d, yerr=[np.minimum(err, 0.9 * d), err],  # log axis: no zero
                          fmt=marker, color=COLOURS["theory"], capsize=3)
        limits = [(ratio, d) for ratio, d in points if d is not None and not d["resolved"]]
        if limits:
            left.plot([ratio for ratio, _ in limits], [v["upper_limit"] for _, v in limits], "v",
                      color=COLOURS["theory"], alpha=0.6)
        left.plot(x, [r["gp_distance"] for r in sel], marker, mfc="none", color=COLOURS["gp"])
        right.errorbar(x, [100 * r["accuracy"]["difference"] for r in sel],
                       yerr=[200 * r["accuracy"]["se"] for r in sel], fmt=marker, color=COLOURS["nuts"], capsize=3)
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


def _distance_text(r: dict, d: dict | None) -> str:
    """A row's distance in words: debiased with its error, or an upper limit, or the raw distance without a noise."""
    if d is None:
        return f"{r['distance']:.3f} (its noise not known)"
    if d["resolved"]:
        return f"{d['value']:.3f} ± {d['se']:.3f}"
    return f"below {d['upper_limit']:.3f} (not resolved: {r['distance']:.3f} against a noise floor of {r['noise']:.3f})"


def same_ratio(rows: Sequence[dict]) -> str:
    """The two tasks at equal ``|Pi| / N`` in words: at every ``|Pi| / N`` where both tasks have a point, the two
    distances (:func:`debiased`) and whether the 16-path point lies above, below or within two combined errors of
    the 4-path one; an unresolved point is below the other only where its upper limit lies two errors below the
    other's value, and two unresolved points are not ordered (the tasks differ in data, temperature and, possibly,
    sampler too)."""
    by_ratio: dict[float, dict[str, dict]] = {}
    for r in rows:
        by_ratio.setdefault(round(r["ratio"], 9), {}).setdefault(r["task"], r)
    parts = []
    for ratio, pair in sorted(by_ratio.items()):
        if len(pair) < 2:
            continue
        a, b = pair["markov"], pair["omniglot"]
        da, db = debiased(a), debiased(b)
        if da is None or db is None or not (da["resolved"] or db["resolved"]):
            where = "cannot be ordered against"
        elif da["resolved"] and db["resolved"]:
            gap, noise = db["value"] - da["value"], math.hypot(da["se"], db["se"])
            where = "above" if gap > 2 * noise else "below" if gap < -2 * noise else "within two errors of"
        elif db["resolved"]:  # the 4-path point is an upper limit
            where = "above" if db["value"] - 2 * db["se"] > da["upper_limit"] else "cannot be ordered against"
        else:
            where = "below" if da["value"] - 2 * da["se"] > db["upper_limit"] else "cannot be ordered against"
        parts.append(f"at |Π|/N = {ratio:.2g} the 16-path Omniglot point (N = {b['width']}, "
                     f"{SAMPLER_NAMES[b['sampler']]}) lies {where} the 4-path Markov one (N = {a['width']}, "
                     f"{SAMPLER_NAMES[a['sampler']]}): {_distance_text(b, db)} against {_distance_text(a, da)}")
    if not parts:
        return "No value of |Π|/N is sampled for both tasks in this profile."
    return ("Compared at equal |Π|/N: " + "; ".join(parts) + ". The two tasks differ in data, temperature and "
            "training set size per width too, so a gap does not by itself separate |Π|/N from the mode count.")


def summary(rows: Sequence[dict]) -> str:
    """Sentences generated from :func:`compare`: per task and sampler, the distance at every ``|Pi| / N`` debiased
    with its error where the run resolves it (beyond twice its noise floor) and an upper limit where it does not
    (:func:`debiased`), the raw distance's ratio to the GP point's, a note where R-hat exceeds :data:`R_HAT_OK`,
    and whether any accuracy difference is beyond two SEs."""
    if not rows:
        return "No point was sampled to completion, so this build has no comparison."
    out = []
    for task in TASKS:
        for sampler in SAMPLERS:
            sel = sorted((r for r in rows if r["task"] == task and r["sampler"] == sampler), key=lambda r: r["ratio"])
            if not sel:
                continue
            parts = []
            for r in sel:
                mixing = "" if r["r_hat"] is None or r["r_hat"] <= R_HAT_OK else (
                    f"; R-hat {r['r_hat']:.2f}: the chains have not fully mixed, so the error is itself uncertain")
                parts.append(f"{_distance_text(r, debiased(r))} at |Π|/N = {r['ratio']:.2g} (N = {r['width']}; "
                             f"{r['distance'] / r['gp_distance']:.2f} of the GP point's distance{mixing})")
            beyond = [r for r in sel if abs(r["accuracy"]["difference"]) > 2 * r["accuracy"]["se"]]
            acc = ("no accuracy difference is beyond two paired standard errors" if not beyond else
                   "the accuracy differs beyond two paired standard errors at " +
                   ", ".join(f"N = {r['width']} ({100 * r['accuracy']['difference']:+.1f} ± "
                             f"{100 * r['accuracy']['se']:.1f} points)" for r in beyond))
            name = TASK_NAMES[task]
            out.append(f"{name[0].upper()}{name[1:]}, {SAMPLER_NAMES[sampler]}: the distance of U is "
                       + "; ".join(parts) + f"; {acc}.")
    return ("The distance of the sampled U from the theory's, debiased with its error where the run resolves it "
            "(beyond twice its noise floor s: sqrt(d² − s²) ± s·d/sqrt(d² − s²)), else an upper limit at 97.7 % "
            "(d + 2s). " + " ".join(out))
