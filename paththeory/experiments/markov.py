"""Fig. 2 of the paper, hidden-Markov-chain classification, at a profile's scale (the paper's Sec. 4.1 and Appendix G).

The pieces below are used by :func:`run` (and so by ``paththeory reproduce markov``) and by
the chapter ``book/markov.md``:

* :data:`SETTINGS` and :func:`settings`: sizes per profile (smoke, colab, paper);
* :func:`problem`: data set, architecture and path features of one variant (cached);
* :func:`theory_curve`: order parameters and test accuracy of the theory over widths;
* :func:`gp_accuracy`: the infinite-width (GP) accuracy, ``U = I``;
* :func:`paththeory.experiments.records.samplers` and :func:`sample_at`: which sampler draws each sampled
  width (NUTS at the small widths, the exact blocked Gibbs sampler at the wide ones) and its
  posterior samples at one width (``paththeory.sampling``);
* :func:`pc_overlaps` and :func:`pc_overlap`: overlaps of the training-kernel PCs with the labels;
* :func:`finite_vs_gp` and ``sampled_vs_theory``: the noise of Fig. 2's comparisons (paired
  standard errors on the same test sequences, the Monte Carlo error of the sampled ``U``), which
  :func:`paththeory.experiments.claims.fig2_claims` turns into one verdict per claim;
* findings, typed (:class:`Findings`, read back from the results by :func:`findings`): the predictor's
  variance against the draws (:class:`Variance`) and the kernels' alignment with the labels (:class:`PCOverlap`);
* figures :func:`plot_accuracy` (Fig. 2c), :func:`plot_order_parameters` (Fig. 2c, bottom),
  :func:`plot_sampled_order_parameters`, :func:`plot_pc_overlaps` (Fig. 2d),
  :func:`plot_two_path` (Fig. 2e) and :func:`plot_kernels` (App. Fig. 5b).

The words (the sizes table, the sentences under the figures) are :mod:`paththeory.reports.markov`.

The readout token is the **last** one, as in the authors' code; the paper's text says first.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from matplotlib.figure import Figure

from paththeory import _io
from paththeory.experiments import stats
from paththeory.experiments.records import environment, jsonable, samplers, schedule, typed
from paththeory.experiments.compare import sampled_vs_theory
from paththeory.experiments.claims import fig2_claims
from paththeory.kernels import gp_kernel, kernel_matrix, path_kernels
from paththeory.model import Architecture, path_features
from paththeory.display.plots import COLOURS, COLUMN_WIDTH, book_style, legend_below, matrix_heatmap, panel_grid, stamp_profile
from paththeory.predict import accuracy, mean_predictor, pc_label_overlap, predictor
from paththeory.profiles import choose, current_profile, time_limit
from paththeory.sampling import PosteriorSamples, sample_posterior
from paththeory.sampling.diagnostics import SAMPLER_NAMES
from paththeory.solve import Solution, Theory
from paththeory.tasks import markov

PAPER_WIDTHS = (10, 30, 50, 100, 300, 500, 1000)


@dataclass(frozen=True)
class Config:
    """Sizes of one profile.

    ``widths``: theory widths; ``sample_widths`` / ``two_path_sample_widths``: widths sampled
    with NUTS for the four-path and the noisier two-path experiment, each with ``num_chains`` chains
    of ``num_warmup`` + ``num_samples`` iterations; ``gibbs_widths``: widths of the four-path network
    sampled with the exact blocked Gibbs sampler (``sample_posterior(..., method="gibbs")``), each with
    ``gibbs_chains`` chains of ``gibbs_warmup`` + ``gibbs_samples`` sweeps (no width is sampled twice);
    ``time_limit``: a fail-safe against a stuck
    sampling run, in seconds per run, far above an honest run's time (times
    ``$PATHTHEORY_TIME_LIMIT_SCALE``, :func:`paththeory.profiles.time_limit`): a run that reaches it
    fails with :class:`paththeory.sampling.results.TimeLimitReached` and the experiment gives no result.
    """

    n_train: int
    n_test: int
    widths: tuple[int, ...]
    sample_widths: tuple[int, ...]
    two_path_sample_widths: tuple[int, ...]
    num_warmup: int
    num_samples: int
    num_chains: int
    time_limit: float
    gibbs_widths: tuple[int, ...] = ()
    gibbs_warmup: int = 200
    gibbs_samples: int = 800
    gibbs_chains: int = 4
    temperature: float = 0.01
    n_pcs: int = 30

    def __post_init__(self):
        twice = sorted(set(self.sample_widths) & set(self.gibbs_widths))
        if twice:
            raise ValueError(f"a width is sampled by one sampler only; N = {', '.join(map(str, twice))} "
                             "is in both sample_widths (NUTS) and gibbs_widths (Gibbs).")
        sampled = set(self.sample_widths) | set(self.gibbs_widths) | set(self.two_path_sample_widths)
        unsolved = sorted(sampled - set(self.widths))
        if unsolved:
            raise ValueError(f"every sampled width is compared with the theory there, so it must be one of "
                             f"widths {tuple(self.widths)}; N = {', '.join(map(str, unsolved))} is not.")


SETTINGS: dict[str, Config] = {
    # smoke: a NUTS chain takes 20-46 s on an unloaded 2-core CPU (P = 100, N = 30, compilation included;
    # paththeory.sampling), so two take 40-90 s; the one-hour fail-safe is 40 times that. Gibbs at
    # N = 100 and 300, two chains of 100 + 300 sweeps: about 10 s and 24 s on the same CPU.
    "smoke": Config(100, 500, (10, 30, 100, 300, 1000), (10,), (), 100, 100, 2, 3600.0,
                    gibbs_widths=(100, 300), gibbs_warmup=100, gibbs_samples=300, gibbs_chains=2),
    # colab: 4 chains x 100 draws give a bulk ESS of about 200 (0.5 per draw at N = 10 in the smoke
    # runs), a Monte Carlo error of about 7 % of a posterior standard deviation. Gibbs: 4 chains
    # x (200 + 800) sweeps, a few sweeps per effective draw of U at N >= 100 (paththeory.sampling.gibbs).
    "colab": Config(100, 1000, PAPER_WIDTHS, (10, 30), (10,), 150, 100, 4, 3600.0,
                    gibbs_widths=(100, 300, 1000), gibbs_warmup=200, gibbs_samples=800, gibbs_chains=4),
    "paper": Config(100, 1000, PAPER_WIDTHS, (10, 30, 50), (10, 30, 100), 300, 300, 4, 24 * 3600.0,
                    gibbs_widths=(100, 300, 500, 1000), gibbs_warmup=200, gibbs_samples=800, gibbs_chains=4),
}

# variant name -> (architecture factory, path names in matrix order, out-of-plane noise sigma_perp)
VARIANTS: dict[str, tuple[Callable[[], Architecture], tuple[str, ...], float]] = {
    "four_paths": (markov.four_paths, markov.FOUR_PATH_NAMES, 1.0),
    "good_path": (markov.good_path, markov.GOOD_PATH_NAMES, 1.0),
    "good_and_denoising": (markov.good_and_denoising, markov.TWO_PATH_NAMES, 1.0),
    "two_paths_noisy": (markov.two_paths_noisy, markov.TWO_PATH_NAMES, markov.NOISY_SIGMA_PERP),
    "good_path_noisy": (markov.good_path, markov.GOOD_PATH_NAMES, markov.NOISY_SIGMA_PERP),
}


def settings(profile: str | None = None) -> Config:
    """The :class:`Config` of ``profile`` (default: the current profile)."""
    return choose(SETTINGS, profile)


@dataclass(frozen=True)
class Problem:
    """One variant on one data set: path features ``train [P, n_paths, N0]``, ``test [P_test, ...]``."""

    arch: Architecture
    names: tuple[str, ...]
    train: np.ndarray
    test: np.ndarray
    y_train: np.ndarray
    y_test: np.ndarray


@lru_cache(maxsize=8)
def problem(variant: str, n_train: int, n_test: int) -> Problem:
    """Data (train seed 27, test seed 59), architecture and path features of a :data:`VARIANTS` entry.

    Cached, so its arrays are read-only: copy one (``prob.train.copy()``) to change it."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}; got {variant!r}.")
    make_arch, names, sigma_perp = VARIANTS[variant]
    arch = make_arch()
    train = markov.sample_task(n_train, seed=markov.TRAIN_SEED, sigma_perp=sigma_perp)
    test = markov.sample_task(n_test, seed=markov.TEST_SEED, sigma_perp=sigma_perp)
    arrays = (path_features(arch, train.x), path_features(arch, test.x), train.y, test.y)
    return Problem(arch, names, *map(_read_only, arrays))


def _read_only(array) -> np.ndarray:
    """A read-only numpy copy: the cached :func:`problem` is shared by every caller."""
    out = np.array(array)
    out.flags.writeable = False
    return out


@dataclass(frozen=True)
class TheoryPoint:
    """The theory at one width: the solver's :class:`~paththeory.solve.Solution`, the test accuracy
    and ``correct``, whether the mean predictor gets each test sequence right (``[P_test]`` bool)."""

    width: int
    solution: Solution
    accuracy: float
    correct: np.ndarray | None = None


def correct(U, prob: Problem, temperature: float) -> np.ndarray:
    """Whether the mean predictor with order parameter ``U`` classifies each test sequence of
    ``prob`` correctly: ``[P_test]`` bool, whose mean is the accuracy (the paper's Eq. 29)."""
    return np.asarray(mean_predictor(U, prob.train, prob.y_train, prob.test, temperature)) * prob.y_test > 0


def theory_curve(prob: Problem, widths: Sequence[int], temperature: float) -> list[TheoryPoint]:
    """Solve the action at every width (warm-started from the widest) and score the mean predictor."""
    solutions = Theory(prob.arch, prob.train, prob.y_train).sweep(list(widths), temperature)
    points = []
    for width, sol in zip(widths, solutions):
        right = correct(sol.U, prob, temperature)
        points.append(TheoryPoint(int(width), sol, float(right.mean()), right))
    return points


def gp_correct(prob: Problem, temperature: float) -> np.ndarray:
    """:func:`correct` for the GP (infinite-width) predictor, ``U = sigma_a^2 prod sigma_l^2 I``."""
    return correct(prob.arch.gp_scale * np.eye(prob.arch.n_paths), prob, temperature)


def gp_accuracy(prob: Problem, temperature: float) -> float:
    """Test accuracy of the GP (infinite-width) predictor, ``U = sigma_a^2 prod sigma_l^2 I``."""
    return float(gp_correct(prob, temperature).mean())


def sample_at(prob: Problem, width: int, cfg: Config, *, sampler: str = "nuts", seed: int = 0,
              progress: bool = True) -> PosteriorSamples:
    """Posterior samples at ``width`` by ``sampler`` (``"nuts"`` or ``"gibbs"``,
    :func:`paththeory.sampling.posterior.sample_posterior`) with the profile's schedule for it
    (:func:`paththeory.experiments.records.schedule`) and its fail-safe time limit."""
    return sample_posterior(
        prob.arch, prob.train, prob.y_train, width, cfg.temperature, features_test=prob.test, method=sampler,
        **schedule(cfg, sampler), time_limit=time_limit(cfg.time_limit), seed=seed, progress_bar=progress,
    )


@dataclass(frozen=True)
class Variance:
    """The theory's predictor variance (the paper's Eq. 30) against posterior draws of the test outputs at ``width``.

    ``theory`` and ``sampled``: the two variances averaged over the ``n`` test sequences (the sampled one pools the
    ``draws`` of ``sampler``, unbiased per sequence); ``relative_difference`` = ``sampled / theory - 1``; ``noise``,
    the batch-means Monte Carlo error of the sampled average (of the per-draw mean squared deviation from the sampled
    mean) on that scale (``None``: fewer than four draws per chain);
    ``resolved``, whether the difference exceeds two such errors (:func:`paththeory.experiments.stats.resolved`;
    ``None`` without an error); ``r``, the Pearson correlation of the two per-sequence variances."""

    width: int
    sampler: str
    theory: float
    sampled: float
    relative_difference: float
    noise: float | None
    resolved: bool | None
    r: float
    n: int
    draws: int


def variance_vs_samples(U, prob: Problem, temperature: float, f_draws, *, width: int,
                        sampler: str = "nuts") -> Variance:
    """The :class:`Variance` of the theory with order parameter ``U`` (:func:`paththeory.predict.predictor`) against
    the draws ``f_draws`` ``[chains, draws, P_test]`` of the test outputs by ``sampler`` at ``width``."""
    f = np.asarray(f_draws, dtype=float)
    if f.ndim != 3 or f.shape[2] != len(prob.y_test) or f.shape[0] * f.shape[1] < 2:
        raise ValueError(f"f_draws must be [chains, draws, P_test={len(prob.y_test)}] with at least two "
                         f"draws; got {f.shape}.")
    _, var = predictor(U, prob.train, prob.y_train, prob.test, temperature)
    theory = np.asarray(var, dtype=float)
    pooled = f.reshape(-1, f.shape[2])
    sampled = pooled.var(axis=0, ddof=1)
    per_draw = ((f - pooled.mean(axis=0)) ** 2).mean(axis=2)  # [chains, draws]
    mean_theory = float(theory.mean())
    noise = float(stats.batch_means_se(per_draw)) / mean_theory if f.shape[1] >= 4 else None
    difference = float(sampled.mean() / mean_theory - 1)
    return Variance(int(width), sampler, mean_theory, float(sampled.mean()), difference, noise,
                    None if noise is None else stats.resolved(abs(difference), noise),
                    float(np.corrcoef(theory, sampled)[0, 1]), int(f.shape[2]), int(f.shape[0] * f.shape[1]))


def pc_overlaps(prob: Problem, U: np.ndarray, k: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """``|phi_i . y| / sqrt(P)`` for the top-``k`` PCs of the training kernels ``K_U`` and ``K_GP``
    (the kernel-task alignment of the paper's Sec. 3.2)."""
    k_u = kernel_matrix(U, prob.train)
    k_gp = gp_kernel(prob.arch, prob.train)
    return pc_label_overlap(k_u, prob.y_train, k), pc_label_overlap(k_gp, prob.y_train, k)


@dataclass(frozen=True)
class Leading:
    """A kernel's largest overlap with the labels among its top PCs: ``overlap`` ``|phi_i . y| / sqrt(P)``, on the PC
    of rank ``rank`` (1 = the largest eigenvalue), which carries the ``share`` ``overlap**2`` of ``|y|^2 = P``."""

    overlap: float
    rank: int
    share: float


@dataclass(frozen=True)
class PCOverlap:
    """Fig. 2d: the overlaps of the top PCs of the renormalised kernel ``K_U`` at ``width`` (``theory``) and of the
    GP kernel (``gp``) with the labels, and each kernel's :class:`Leading` overlap."""

    width: int
    theory: tuple[float, ...]
    gp: tuple[float, ...]
    theory_leading: Leading
    gp_leading: Leading


def pc_overlap(prob: Problem, U: np.ndarray, width: int, k: int = 30) -> PCOverlap:
    """The :class:`PCOverlap` of ``prob``'s training kernels, ``K_U`` with the order parameter ``U`` at ``width``."""
    def leading(o: np.ndarray) -> Leading:
        best = float(o.max())
        return Leading(best, int(o.argmax()) + 1, best ** 2)

    theory, gp = (np.asarray(o, dtype=float) for o in pc_overlaps(prob, U, k))
    return PCOverlap(int(width), tuple(theory.tolist()), tuple(gp.tolist()), leading(theory), leading(gp))


@dataclass(frozen=True)
class Findings:
    """The typed findings of a results dict of :func:`run`: the :class:`Variance` of the four-path network at each
    sampled width (keyed by the width) and its :class:`PCOverlap`."""

    variance_vs_samples: dict[str, Variance]
    pc_overlap: PCOverlap


def findings(results: dict) -> Findings:
    """The :class:`Findings` of ``results`` (as :func:`run` returns them or ``results.json`` holds them), typed: a key
    renamed since they were written fails here (:func:`paththeory.experiments.records.typed`)."""
    return typed(Findings, {f: results[f] for f in ("variance_vs_samples", "pc_overlap")}, "markov results")


# --------------------------------------------------------------------------- the pipeline


def _experiment(prob: Problem, widths, sampled: dict[int, str], cfg: Config, progress: bool, timings: dict,
                tag: str) -> tuple[dict, dict[str, np.ndarray]]:
    """Theory over ``widths`` and posterior samples at each width of ``sampled`` (``{width: sampler}``,
    :func:`paththeory.experiments.records.samplers`) for one problem: a JSON-ready dict, and the theory's
    per-sequence correctness ``{width: [P_test] bool}`` (for paired comparisons).

    The dict's ``samplers`` says which sampler drew each sampled width; its ``sampled_vs_theory`` holds,
    per sampled width, the paired accuracy difference samples minus theory on the same test sequences
    (:func:`paththeory.experiments.stats.paired_difference`) and the distance of the sampled ``U`` from the
    theory's with its batch-means Monte Carlo error
    (:func:`paththeory.experiments.compare.sampled_vs_theory`)."""
    t = time.perf_counter()
    curve = theory_curve(prob, widths, cfg.temperature)
    theory_correct = {str(p.width): p.correct for p in curve}
    timings[f"{tag}theory"] = time.perf_counter() - t
    out = {
        "paths": list(prob.names),
        "accuracy": {"theory": {str(p.width): p.accuracy for p in curve}, "samples": {}},
        "order_parameter": {str(p.width): p.solution.U for p in curve},
        "solver": {str(p.width): p.solution.report for p in curve},
        "samplers": {str(w): s for w, s in sampled.items()},
        "order_parameter_samples": {},
        "sampling_diagnostics": {},
        "sampled_vs_theory": {},
        "variance_vs_samples": {},
    }
    for i, (width, sampler) in enumerate(sampled.items()):
        t = time.perf_counter()
        res = sample_at(prob, width, cfg, sampler=sampler, seed=i, progress=progress)
        timings[f"{tag}sampling_N{width}"] = time.perf_counter() - t
        if progress:
            print(res.summary(), flush=True)
        out["accuracy"]["samples"][str(width)] = accuracy(res.mean, prob.y_test)
        out["order_parameter_samples"][str(width)] = res.U
        theory_u = out["order_parameter"][str(width)]
        se = stats.batch_means_se(res.U_draws) if res.U_draws.shape[1] >= 4 else None
        out["sampled_vs_theory"][str(width)] = {
            "accuracy": stats.paired_difference(np.asarray(res.mean) * prob.y_test > 0, theory_correct[str(width)]),
            **sampled_vs_theory(theory_u, res.U, se, prob.arch.gp_scale)}
        out["variance_vs_samples"][str(width)] = variance_vs_samples(theory_u, prob, cfg.temperature, res.f_draws,
                                                                     width=width, sampler=sampler)
        summary = res.to_dict()
        out["sampling_diagnostics"][str(width)] = {**summary["diagnostics"], "chains": summary["chains"],
                                                   "settings": summary["settings"]}
    return out, theory_correct


def finite_vs_gp(theory_correct: dict[str, np.ndarray], gp: dict[str, np.ndarray]) -> dict:
    """Paired accuracy difference theory minus each GP line on the same test sequences, per GP line and
    width: ``{gp_key: {width: paired_difference}}`` (:func:`paththeory.experiments.stats.paired_difference`)."""
    return {key: {w: stats.paired_difference(c, g) for w, c in theory_correct.items()} for key, g in gp.items()}


def run(profile: str | None = None, out_dir: str | Path | None = None, *, config: Config | None = None,
        progress: bool = True) -> dict:
    """Reproduce Fig. 2 at the profile's scale; write ``results.json``, ``features.npz`` and PNGs to ``out_dir``.

    Args:
      profile: ``smoke``, ``colab`` or ``paper`` (default: :func:`paththeory.profiles.current_profile`).
      out_dir: output folder (created); nothing is written when ``None``.
      config: sizes overriding the profile's :data:`SETTINGS` entry.
      progress: show the samplers' progress bars and print sampling summaries.
    Returns:
      the content of ``results.json`` (see the chapter for its keys).
    """
    name = current_profile(profile)
    if out_dir is not None:
        out_dir = _io.check_output_folder(out_dir)  # an unusable folder fails now, not after the work
    cfg = config or settings(name)
    temp = cfg.temperature
    timings: dict[str, float] = {}
    start = time.perf_counter()

    main = problem("four_paths", cfg.n_train, cfg.n_test)
    results = {"profile": name, "config": asdict(cfg), "temperature": temp, "widths": list(cfg.widths),
               "display_order": list(markov.DISPLAY_ORDER), "readout": main.arch.readout}
    four, theory_correct = _experiment(main, cfg.widths, samplers(cfg), cfg, progress, timings, "")
    results.update(four)
    t = time.perf_counter()
    # the variants' test sets are the same sequences (same seed and noise), so every difference is paired
    gp = {"gp_all": gp_correct(main, temp),
          "gp_good": gp_correct(problem("good_path", cfg.n_train, cfg.n_test), temp),
          "gp_good_denoising": gp_correct(problem("good_and_denoising", cfg.n_train, cfg.n_test), temp)}
    results["accuracy"].update({k: float(c.mean()) for k, c in gp.items()})
    results["finite_vs_gp"] = finite_vs_gp(theory_correct, gp)
    results["gp_vs_gp"] = {"good_vs_all": stats.paired_difference(gp["gp_good"], gp["gp_all"]),
                           "good_denoising_vs_good": stats.paired_difference(gp["gp_good_denoising"], gp["gp_good"])}
    n_small = min(cfg.widths)
    results["pc_overlap"] = pc_overlap(main, results["order_parameter"][str(n_small)], n_small, cfg.n_pcs)
    timings["gp_and_pcs"] = time.perf_counter() - t

    noisy = problem("two_paths_noisy", cfg.n_train, cfg.n_test)
    two_sampled = {int(w): "nuts" for w in sorted(cfg.two_path_sample_widths)}
    two, two_correct = _experiment(noisy, cfg.widths, two_sampled, cfg, progress, timings, "two_path_")
    two_gp = {"gp_good_denoising": gp_correct(noisy, temp),
              "gp_good": gp_correct(problem("good_path_noisy", cfg.n_train, cfg.n_test), temp)}
    two["accuracy"].update({k: float(c.mean()) for k, c in two_gp.items()})
    two["finite_vs_gp"] = finite_vs_gp(two_correct, two_gp)
    results["two_path"] = {"sigma_perp": markov.NOISY_SIGMA_PERP, "denoising": "uniform", **two}
    timings["total"] = time.perf_counter() - start
    results["timings"] = timings
    results["environment"] = environment()
    results = jsonable(results)
    results["claims"] = jsonable(fig2_claims(results))
    if out_dir is not None:
        write_outputs(results, main, noisy, Path(out_dir))
    return results


@book_style
def key_figure(widths: Sequence[int] = (10, 20, 50, 100, 200, 500, 1000), temperature: float = 0.01,
               n_train: int = 100, n_test: int = 1000) -> Figure:
    """The book's key figure, computed live in seconds (no sampling): on the Markov-chain task,
    the theory's test accuracy against the width ``N`` next to the GP lines (left), and ``U*`` at
    the smallest width (right), where finite width has up-weighted the good path and
    anti-correlated it with the denoising path."""
    prob = problem("four_paths", n_train, n_test)
    curve = theory_curve(prob, widths, temperature)
    acc = {"theory": {str(p.width): p.accuracy for p in curve}, "samples": {},
           "gp_all": gp_accuracy(prob, temperature),
           "gp_good": gp_accuracy(problem("good_path", n_train, n_test), temperature)}
    fig, (left, right) = panel_grid(2, 3.6, width_ratios=[1.2, 1])
    _accuracy_axes(left, acc, [("gp_all", "-", "GP, all paths"), ("gp_good", "--", "GP, good path only")])
    left.set_title(f"test accuracy, P = {n_train}, T = {temperature}")
    order = list(markov.DISPLAY_ORDER)
    matrix_heatmap(right, _display(curve[0].solution.U, order), [prob.names[i] for i in order],
                   f"$U^*$ at N = {curve[0].width}")
    legend_below(fig, [left], columns=3)
    stamp_profile(fig)
    return fig


FIGURES = ("accuracy", "order_parameters", "order_parameters_sampled", "pc_overlap", "two_path", "kernels")


def write_outputs(results: dict, main: Problem, noisy: Problem, out_dir: Path) -> list[Path]:
    """``results.json``, ``features.npz`` (the theory's inputs) and one PNG per entry of :data:`FIGURES`,
    all or nothing (:func:`paththeory._io.write_outputs`: ``results.json`` last)."""
    arrays = dict(train_features=main.train, test_features=main.test, y_train=main.y_train,
                  y_test=main.y_test, temperature=results["temperature"], paths=np.array(main.names),
                  two_path_train_features=noisy.train, two_path_test_features=noisy.test,
                  two_path_y_train=noisy.y_train, two_path_y_test=noisy.y_test)
    figures = {
        "accuracy": lambda: plot_accuracy(results), "order_parameters": lambda: plot_order_parameters(results),
        "order_parameters_sampled": lambda: plot_sampled_order_parameters(results),
        "pc_overlap": lambda: plot_pc_overlaps(results), "two_path": lambda: plot_two_path(results),
        "kernels": lambda: plot_kernels(results, main),
    }
    return _io.write_outputs(out_dir, results, arrays, figures)


# --------------------------------------------------------------------------- figures


def _curve(d: dict) -> tuple[np.ndarray, np.ndarray]:
    """``{"N": value}`` -> sorted widths and values."""
    items = sorted((int(k), v) for k, v in d.items())
    return np.array([k for k, _ in items]), np.array([v for _, v in items], dtype=float)


#: How an accuracy figure draws the samples of each sampler: marker, its name in a caption, legend label (the caption's
#: line is :func:`paththeory.reports.markov.sampled_points`).
SAMPLE_MARKERS = {"nuts": ("s", "squares", "NUTS samples"), "gibbs": ("D", "diamonds", "exact Gibbs samples")}


def by_sampler(accuracy: dict, sampled: dict | None) -> dict[str, dict[str, float]]:
    """``accuracy["samples"]`` split by sampler, ``{sampler: {width: accuracy}}`` in the order of
    :data:`SAMPLE_MARKERS` (``sampled``: a results ``samplers`` entry; a width it does not name, or
    every width when it is ``None``, as in a ``results.json`` written before Gibbs, is NUTS's).

    Example:
      >>> by_sampler({"samples": {"10": 0.7, "100": 0.8}}, {"100": "gibbs"})
      {'nuts': {'10': 0.7}, 'gibbs': {'100': 0.8}}
    """
    sampled = sampled or {}
    groups: dict[str, dict[str, float]] = {}
    for w, a in accuracy["samples"].items():
        groups.setdefault(sampled.get(w, "nuts"), {})[w] = a
    return {k: groups[k] for k in SAMPLE_MARKERS if k in groups}


def _accuracy_axes(ax, acc: dict, gp_lines: Sequence[tuple[str, str, str]], sampled: dict | None = None) -> None:
    widths, theory = _curve(acc["theory"])
    ax.semilogx(widths, theory, "o-", color=COLOURS["theory"], label="theory (renormalised kernel)")
    for sampler, points in by_sampler(acc, sampled).items():
        marker, _, label = SAMPLE_MARKERS[sampler]
        ws, values = _curve(points)
        ax.semilogx(ws, values, marker, color=COLOURS["nuts"], ms=8 if marker == "s" else 7, mfc="none", mew=2,
                    label=label)
    for key, style, label in gp_lines:
        ax.axhline(acc[key], color=COLOURS["gp"], ls=style, label=label)
    ax.set_xlabel("width $N$")
    ax.set_ylabel("test accuracy")


@book_style
def plot_accuracy(results: dict) -> Figure:
    """Fig. 2c: test accuracy vs width; theory, sampled points (NUTS squares, exact Gibbs diamonds, as
    ``results["samplers"]`` says) and GP lines (all, good, good + denoising)."""
    fig, (ax,) = panel_grid(1, 3.8, width=0.75 * COLUMN_WIDTH)
    _accuracy_axes(ax, results["accuracy"], [("gp_all", "-", "GP, all paths"), ("gp_good", "--", "GP, good path"),
                                             ("gp_good_denoising", ":", "GP, good + denoising")],
                   results.get("samplers"))
    ax.set_title(f"Hidden Markov chain, P = {results['config']['n_train']}, T = {results['temperature']}")
    legend_below(fig, [ax])
    stamp_profile(fig, results["profile"])
    return fig


def _display(U, order: Sequence[int]) -> np.ndarray:
    return np.asarray(U, dtype=float)[np.ix_(order, order)]


def _pick_widths(available: Sequence[int]) -> list[int]:
    """N = 10, 100, 1000 when available, else the smallest, middle and largest width."""
    wanted = [w for w in (10, 100, 1000) if w in available]
    ordered = sorted(available)
    return wanted if len(wanted) == 3 else sorted({ordered[0], ordered[len(ordered) // 2], ordered[-1]})


@book_style
def plot_order_parameters(results: dict, widths: Sequence[int] | None = None) -> Figure:
    """Fig. 2c (bottom): the theory's ``U`` at ``N = 10, 100, 1000``, paths in the order g, d, a1, a2."""
    widths = list(widths) if widths is not None else _pick_widths([int(w) for w in results["order_parameter"]])
    order = results["display_order"]
    names = [results["paths"][i] for i in order]
    fig, axes = panel_grid(len(widths), 3.2)
    for ax, w in zip(axes, widths):
        matrix_heatmap(ax, _display(results["order_parameter"][str(w)], order), names, f"theory $U$, N = {w}")
    stamp_profile(fig, results["profile"])
    return fig


@book_style
def plot_sampled_order_parameters(results: dict) -> Figure:
    """Theory ``U`` next to the sampled estimate ``<w^pi . w^pi'> / n_0`` at every sampled width, each
    titled with its sampler (``results["samplers"]``; NUTS where absent)."""
    sampled = {w: u for w, u in results["order_parameter_samples"].items() if u is not None}
    by = results.get("samplers") or {}
    order = results["display_order"]
    names = [results["paths"][i] for i in order]
    fig, flat = panel_grid(2 * max(1, len(sampled)), 3.2)
    axes = [flat[i:i + 2] for i in range(0, len(flat), 2)]
    for row, (w, u) in zip(axes, sampled.items()):
        matrix_heatmap(row[0], _display(results["order_parameter"][w], order), names, f"theory, N = {w}")
        matrix_heatmap(row[1], _display(u, order), names, f"{SAMPLER_NAMES[by.get(w, 'nuts')]}, N = {w}")
    if not sampled:
        for ax in axes[0]:
            ax.text(0.5, 0.5, "no samples in this profile", ha="center", va="center")
            ax.set_axis_off()
    stamp_profile(fig, results["profile"])
    return fig


@book_style
def plot_pc_overlaps(results: dict) -> Figure:
    """Fig. 2d: ``|phi_i . y| / sqrt(P)`` for the top kernel PCs, renormalised kernel vs GP kernel."""
    pcs = results["pc_overlap"]
    k = np.arange(1, len(pcs["theory"]) + 1)
    fig, (ax,) = panel_grid(1, 3.4, width=0.75 * COLUMN_WIDTH)
    ax.plot(k, pcs["theory"], "o-", color=COLOURS["theory"], label=f"renormalised kernel, N = {pcs['width']}")
    ax.plot(k, pcs["gp"], "s--", color=COLOURS["gp"], label="GP kernel")
    ax.set_xlabel("principal component (by decreasing eigenvalue)")
    ax.set_ylabel(r"overlap $|\phi_i\cdot y|/\sqrt{P}$")
    ax.legend()
    stamp_profile(fig, results["profile"])
    return fig


@book_style
def plot_two_path(results: dict) -> Figure:
    """Fig. 2e: the noisier task (``sigma_perp = 5``) with paths g and d: accuracy vs N and ``U`` at the smallest N."""
    two = results["two_path"]
    fig, (ax, ax_u) = panel_grid(2, 3.6, width_ratios=[1.2, 1])
    _accuracy_axes(ax, two["accuracy"], [("gp_good_denoising", ":", "GP, good + denoising"),
                                         ("gp_good", "--", "GP, good path")], two.get("samplers"))
    ax.set_title(rf"noisier task, $\sigma_\perp$ = {two['sigma_perp']}" + f"\n{two['denoising']} denoising head")
    n_small = min(int(w) for w in two["order_parameter"])
    matrix_heatmap(ax_u, two["order_parameter"][str(n_small)], two["paths"], f"theory $U$, N = {n_small}")
    legend_below(fig, [ax], columns=3)
    stamp_profile(fig, results["profile"])
    return fig


@book_style
def plot_kernels(results: dict, prob: Problem, per_class: int = 25) -> Figure:
    """App. Fig. 5b: same-path kernels ``H_tot C^{pi pi}``, ``K_GP`` and ``K_U`` at the smallest N.

    Training examples ``0..per_class-1`` (class +1) and ``P/2..P/2+per_class-1`` (class -1).
    """
    half = prob.train.shape[0] // 2
    m = min(per_class, half)
    idx = np.r_[0:m, half : half + m]
    feats = prob.train[idx]
    c = np.asarray(path_kernels(feats))
    n_small = min(int(w) for w in results["order_parameter"])
    panels = [(f"path {prob.names[i]}", prob.arch.n_paths * c[i, i]) for i in results["display_order"]]
    panels += [("GP kernel", np.asarray(gp_kernel(prob.arch, feats))),
               (f"$K_U$, N = {n_small}", np.asarray(kernel_matrix(results["order_parameter"][str(n_small)], feats)))]
    fig, axes = panel_grid(len(panels), 3.2)
    for ax, (title, k) in zip(axes, panels):
        matrix_heatmap(ax, k, None, title, xlabel="example", ylabel="example")
    stamp_profile(fig, results["profile"])
    return fig
