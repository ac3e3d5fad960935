"""The nonlinear MLP block's heuristic against exact samples of the network (book: Beyond the paper: nonlinear MLP
blocks).

The residual chapter's task (the hidden-Markov-chain sequences, its two attention layers of two heads each,
last-token readout, P = 80 training and 500 test sequences, T = 0.01, every prior variance 1), with a nonlinear MLP
block ``phi(M z / sqrt(n))`` after the last attention layer (ReLU or erf). NUTS samples the network's posterior
(the exact Gibbs sampler needs a network linear in each weight matrix); at every sampled width three theories are
measured against the samples, on the same data:

* the **heuristic** (:class:`paththeory.nonlinear_theory.NonlinearTheory`): the linear theory's order parameters
  and entropy, the energy's kernel mapped through the nonlinearity;
* the **nonlinear GP**: the infinite-width limit (the heuristic at its GP point);
* the **linear theory**, ``phi`` ignored (:class:`paththeory.solve.Theory` of the same network with the identity).

Distances are relative to the samples' norm (Frobenius for ``U``, Euclidean for the test predictor), with the samples'
noise floors,
debiased where resolved (:func:`paththeory.experiments.compare.distance`); the findings are typed and stored, and
:mod:`paththeory.reports.nonlinear` puts them in words.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import ScalarFormatter

from paththeory import _io
from paththeory.display.plots import book_style, legend_below, panel_grid, stamp_profile
from paththeory.experiments import stats
from paththeory.experiments.compare import Distance, distance, record_batches, relative_distance
from paththeory.experiments.records import SHIPPED, ShippedRecords, jsonable, schedule, schedule_fields, typed
from paththeory.model import MLP, Architecture, TokenFeatures, path_features, token_features
from paththeory.nonlinear_theory import NonlinearSolution, NonlinearTheory, linear_counterpart
from paththeory.predict import mean_predictor
from paththeory.profiles import choose, current_profile, time_limit
from paththeory.solve import Theory
from paththeory.tasks import markov

#: The nonlinearities measured.
NONLINEARITIES = ("relu", "erf")
#: The theories measured against the samples, in the order of the tables.
THEORIES = ("heuristic", "gp", "linear")
THEORY_NAMES = {"heuristic": "the heuristic", "gp": "the nonlinear GP", "linear": "the linear theory, φ ignored"}
#: A point's chains are mixed when the worst R-hat of its U is at most this (the residual chapter's threshold,
#: two chains).
R_HAT_OK = 1.02


@dataclass(frozen=True)
class Config:
    """Sizes of one profile: ``sampled``, the ``(nonlinearity, width)`` points sampled with NUTS, ``num_chains``
    chains of ``num_warmup`` + ``num_samples`` iterations each; ``theory_widths``, the widths of the theories'
    curves; ``n_train`` / ``n_test`` sequences; ``temperature`` ``T``; ``time_limit``, a fail-safe per point
    (seconds), far above an honest run's time; ``seed``, the sampler's seed."""

    sampled: tuple[tuple[str, int], ...]
    num_warmup: int
    num_samples: int
    num_chains: int
    time_limit: float
    theory_widths: tuple[int, ...] = (10, 20, 30, 50, 100, 300, 1000)
    n_train: int = 80
    n_test: int = 500
    temperature: float = 0.01
    seed: int = 0


SAMPLERS = {"nuts": ("sampled", *schedule_fields("nuts"))}
#: The shipped records (``python -m paththeory nonlinear``).
RECORDS = ShippedRecords("nonlinear", SHIPPED, SAMPLERS, ("n_train", "n_test", "temperature", "seed"),
                         "the nonlinear-block records")
_POINTS = tuple((phi, n) for phi in NONLINEARITIES for n in (10, 30, 100))
SETTINGS: dict[str, Config] = {
    # smoke and colab: sampled once on a 2-core CPU (`python -m paththeory nonlinear`) and shipped.
    "smoke": Config(_POINTS, 200, 400, 2, 4 * 3600.0),
    "colab": Config(_POINTS, 200, 400, 2, 4 * 3600.0),
    "paper": Config(_POINTS + tuple((phi, 300) for phi in NONLINEARITIES), 400, 800, 4, 24 * 3600.0),
}


def settings(profile: str | None = None) -> Config:
    """The :class:`Config` of ``profile`` (default: the current profile)."""
    return choose(SETTINGS, profile)


def architecture(phi: str) -> Architecture:
    """The residual chapter's two attention layers, then an MLP block with nonlinearity ``phi``, last-token
    readout."""
    first, second = markov.four_paths().attention
    return Architecture((first, second, MLP(phi)), readout="last")


def problem(phi: str, cfg: Config) -> markov.ChapterProblem:
    """The data of the paper's Fig. 2 task (training seed 27, test seed 59) through the network with ``phi``
    (:func:`paththeory.tasks.markov.chapter_problem`)."""
    return markov.chapter_problem(architecture, phi, cfg.n_train, cfg.n_test)


@dataclass(frozen=True)
class BetweenProblem:
    """The same data through the network with the block between its two attention layers: its token features
    (:func:`paththeory.model.token_features`) for the heuristic and the samplers, and its path features for the linear
    theory."""

    arch: Architecture
    train: TokenFeatures
    y_train: np.ndarray
    test: TokenFeatures
    y_test: np.ndarray
    paths_train: np.ndarray
    paths_test: np.ndarray


def between_architecture(phi: str) -> Architecture:
    """The residual chapter's first attention layer, an MLP block with nonlinearity ``phi``, its second attention
    layer, last-token readout."""
    first, second = markov.four_paths().attention
    return Architecture((first, MLP(phi), second), readout="last")


@lru_cache(maxsize=8)
def between_problem(phi: str, n_train: int, n_test: int) -> BetweenProblem:
    """:class:`BetweenProblem` of the paper's Fig. 2 data (the first ``n_train`` training and ``n_test`` test
    sequences of :func:`paththeory.tasks.markov.chapter_problem`'s seeds)."""
    arch = between_architecture(phi)
    train = markov.sample_task(n_train, seed=markov.TRAIN_SEED)
    test = markov.sample_task(n_test, seed=markov.TEST_SEED)
    tokens = [TokenFeatures(*(np.asarray(a) for a in token_features(arch, d.x))) for d in (train, test)]
    return BetweenProblem(arch, tokens[0], np.asarray(train.y), tokens[1], np.asarray(test.y),
                          np.asarray(path_features(arch, train.x)), np.asarray(path_features(arch, test.x)))


# --------------------------------------------------------------------------- sampling


def sample_points(cfg: Config, sampler: str = "nuts", *, progress: bool = False,
                  problem_of: Callable[[str, Config], Any] = problem) -> list[dict]:
    """NUTS at every ``(nonlinearity, width)`` of ``cfg.sampled``: one JSON-ready record per point with the sampled
    ``U`` and its batch-means error ``U_se``, the levels above (``inner``: ``U^(2)``, ``U^(M)``, ``U_a``) and theirs
    (``inner_se``), the mean predictor on the test set and its error, and the diagnostics. ``problem_of(phi, cfg)``:
    the network and its data (default: the block on top, :func:`problem`; the block between attention layers:
    :func:`paththeory.experiments.nonlinear_between.problem`)."""
    from paththeory.sampling import sample_posterior

    RECORDS.check(sampler)
    records = []
    for i, (phi, width) in enumerate(cfg.sampled):
        prob = problem_of(phi, cfg)
        res = sample_posterior(prob.arch, prob.train, prob.y_train, width, cfg.temperature, method="nuts",
                               features_test=prob.test, **schedule(cfg, "nuts"),
                               time_limit=time_limit(cfg.time_limit), seed=cfg.seed + i, progress_bar=progress)
        if progress:
            print(f"{phi} N = {width}:\n{res.summary()}", flush=True)
        records.append(jsonable({
            "phi": phi, "width": int(width), "U": res.U, "U_se": stats.batch_means_se(res.U_draws),
            "inner": res.inner, "inner_se": [stats.batch_means_se(d) for d in res.inner_draws],
            "mean": res.mean, "mean_se": stats.batch_means_se(res.f_draws),
            "diagnostics": res.to_dict()["diagnostics"],
        }))
    return records


def write_samples(profile: str | None = None, out: str | os.PathLike | None = None, *, sampler: str = "nuts",
                  progress: bool = True) -> Path:
    """Sample every point of ``profile`` and write the records with their provenance to ``out`` (default: the
    package's own file, which the book reads). Atomic: an interrupted run leaves the previous file intact."""
    profile = current_profile(profile)
    return RECORDS.write(settings(profile), profile, sampler, partial(sample_points, progress=progress), out)


#: The samplers' names in words, for the command line.
SAMPLER_NAMES = {"nuts": "NUTS"}


def samples(profile: str | None = None, *, progress: bool = False, config: Config | None = None) -> dict:
    """The shipped records whose sizes match ``config`` (default: ``profile``'s), else a fresh run (not written)."""
    return RECORDS.load(config or settings(profile), current_profile(profile), "nuts",
                        partial(sample_points, progress=progress))


# --------------------------------------------------------------------------- the theories


@dataclass(frozen=True)
class TheoryPoint:
    """One theory at one width: its ``U`` (``U^(1)``), the levels above (``U^(2)``, ``U^(M)``, ``U_a``), its mean
    predictor on the test set and the test accuracy of its sign."""

    U: np.ndarray
    inner: list[np.ndarray]
    mean: np.ndarray
    accuracy: float


def theories(prob: markov.ChapterProblem | BetweenProblem, widths: Sequence[float],
             temperature: float) -> dict[str, dict[int, TheoryPoint]]:
    """:data:`THEORIES` at every width: the heuristic's minimum, the GP point (the same at every width) and the
    linear theory's minimum, each with its predictor. For the block between attention layers (a
    :class:`BetweenProblem`) the nonlinear theories read the token features and the linear theory the path features;
    every theory's ``U`` is ``U^(1)`` over all paths."""
    heuristic = NonlinearTheory(prob.arch, prob.train, prob.y_train)
    paths_train, paths_test = ((prob.paths_train, prob.paths_test) if isinstance(prob, BetweenProblem)
                               else (prob.train, prob.test))
    linear = Theory(linear_counterpart(prob.arch), paths_train, prob.y_train)
    out: dict[str, dict[int, TheoryPoint]] = {name: {} for name in THEORIES}

    def nonlinear_point(sol: NonlinearSolution) -> TheoryPoint:
        mean = np.asarray(heuristic.predictor(sol, prob.test)[0])
        return TheoryPoint(sol.U, [*sol.order_parameters[1:], np.atleast_2d(sol.U_a)], mean, _accuracy(mean, prob))

    gp = nonlinear_point(heuristic.gp_solution(1.0, temperature))
    previous = None
    for width in sorted(widths):
        sol = heuristic.solve(width, temperature, init=previous)
        previous = sol
        lin = linear.solve(width, temperature, tol=1e-10)
        lin_mean = np.asarray(mean_predictor(lin.U, paths_train, prob.y_train, paths_test, temperature))
        out["heuristic"][int(width)] = nonlinear_point(sol)
        out["gp"][int(width)] = gp
        out["linear"][int(width)] = TheoryPoint(lin.U, [*lin.inner, np.atleast_2d(lin.U_a)], lin_mean,
                                                _accuracy(lin_mean, prob))
    return out


def _accuracy(mean: np.ndarray, prob: markov.ChapterProblem) -> float:
    return float(np.mean(mean * prob.y_test > 0))


# --------------------------------------------------------------------------- the comparison


@dataclass(frozen=True)
class Against:
    """One theory against one record: the :class:`~paththeory.experiments.compare.Distance` of the theory's ``U``
    (``U^(1)``), ``U_a`` and mean predictor from the samples', each over the samples' norm (one scale for the three
    theories) with the samples' noise floor; the theory's test accuracy; and ``diag_ratio``, the mean over paths of
    ``U_pp`` (theory) over ``U_pp`` (samples): above one, the theory's ``U`` is too large."""

    theory: str
    U: Distance
    U_a: Distance
    f: Distance
    accuracy: float
    diag_ratio: float


@dataclass(frozen=True)
class Row:
    """One record (``phi``, ``width``) against the three theories (``against``, in the order of :data:`THEORIES`);
    the samples' test ``accuracy``, the worst R-hat and bulk ESS of ``U``, the sampler's ``seconds`` and ``mixed``
    (R-hat at most :data:`R_HAT_OK`)."""

    phi: str
    width: int
    against: tuple[Against, ...]
    accuracy: float
    r_hat: float
    ess: float
    seconds: float
    mixed: bool


def compare(payload: dict, cfg: Config, curves: dict | None = None, *,
            problem_of: Callable[[str, Config], Any] = problem) -> list[Row]:
    """Every record of ``payload`` (:func:`samples`) against :data:`THEORIES` at its width (``curves``:
    :func:`theories` per nonlinearity, computed here when not given; ``problem_of``: as for :func:`sample_points`)."""
    widths = sorted({rec["width"] for rec in payload["records"]})
    if curves is None:
        curves = {phi: theories(problem_of(phi, cfg), widths, cfg.temperature) for phi in NONLINEARITIES}
    rows = []
    for rec in payload["records"]:
        prob, width, batches = problem_of(rec["phi"], cfg), rec["width"], record_batches(rec)
        versus = []
        for name in THEORIES:
            point = curves[rec["phi"]][name][width]
            # over the samples' norm, common to the three theories (relative_distance divides by its second argument)
            versus.append(Against(
                name, distance(*relative_distance(point.U, rec["U"], rec["U_se"]), batches),
                distance(*relative_distance(point.inner[-1], rec["inner"][-1], rec["inner_se"][-1]), batches),
                distance(*relative_distance(point.mean, rec["mean"], rec["mean_se"]), batches), point.accuracy,
                float(np.mean(np.diag(point.U) / np.diag(np.asarray(rec["U"]))))))
        diag = rec["diagnostics"]
        rows.append(Row(rec["phi"], width, tuple(versus), _accuracy(np.asarray(rec["mean"]), prob),
                        diag["r_hat_U_max"], diag["ess_bulk_U_min"], diag["seconds"],
                        diag["r_hat_U_max"] <= R_HAT_OK))
    return rows


@dataclass(frozen=True)
class Reading:
    """Over the mixed rows, one ``quantity`` (``"U"`` or ``"f"``): each theory's smallest and largest distance from
    the samples (``spans``), the largest noise floor of the heuristic's (``floor``; None where none is resolved),
    and at how many of the ``mixed`` points the heuristic is nearer the samples than the linear theory
    (``nearer``) and by more than four noise floors (``clear``, as :class:`Nearest`)."""

    quantity: str
    spans: dict[str, tuple[float, float]]
    floor: float | None
    nearer: int
    clear: int
    mixed: int


def readings(rows: Sequence[Row]) -> list[Reading]:
    """A :class:`Reading` of ``U`` and of the predictor over the mixed ``rows`` (none when no row is mixed)."""
    mixed = [r for r in rows if r.mixed]
    out = []
    for q in ("U", "f") if mixed else ():
        by = [{a.theory: getattr(a, q) for a in r.against} for r in mixed]
        spans = {t: (min(d[t].distance for d in by), max(d[t].distance for d in by)) for t in THEORIES}
        floors = [d["heuristic"].noise for d in by if d["heuristic"].noise is not None]
        gaps = [(d["linear"].distance - d["heuristic"].distance, d["heuristic"].noise) for d in by]
        out.append(Reading(q, spans, max(floors) if floors else None, sum(g > 0 for g, _ in gaps),
                           sum(noise is not None and g > 4 * noise for g, noise in gaps), len(mixed)))
    return out


@dataclass(frozen=True)
class Nearest:
    """At one mixed record, the theory nearest the samples in ``quantity`` (``"U"`` or ``"f"``, the predictor), its
    ``distance``, and the ``runner_up``; ``gap``, the runner-up's distance minus the nearest's, and ``noise``, the samples' floor on
    that scale. ``clear`` when ``gap > 4 noise``: both distances move with the same sampling error, of standard
    deviation at most ``noise`` each, so their difference has one of at most ``2 noise``; ``clear`` is that
    difference at two of its standard errors (calibrated in the tests on simulated samples of two equidistant
    theories)."""

    phi: str
    width: int
    quantity: str
    theory: str
    distance: float
    runner_up: str
    gap: float
    noise: float | None
    clear: bool


@dataclass(frozen=True)
class Scaling:
    """How a theory's distance from the samples in ``quantity`` falls with the width, ``d ~ N^-b``
    (:func:`paththeory.experiments.stats.power_law_fit` through the debiased distances, unresolved ones as upper
    limits): ``determined`` with two resolved widths at least, else ``b`` is ``None``."""

    phi: str
    theory: str
    quantity: str
    widths: tuple[int, ...]
    determined: bool
    b: float | None
    b_se: float | None


@dataclass(frozen=True)
class Ratios:
    """At the widest mixed record of ``phi`` (``width``), the heuristic's and the linear theory's ``diag_ratio``
    (:class:`Against`): in which direction each errs on the diagonal of ``U``."""

    phi: str
    width: int
    heuristic: float
    linear: float


@dataclass(frozen=True)
class Findings:
    """The chapter's verdicts: the :class:`Nearest` theory at every mixed record, in ``U`` and in the predictor, the
    heuristic's :class:`Scaling` in both, and the :class:`Ratios` at the widest width, per nonlinearity; ``unmixed``,
    the records left out, ``(phi, width, R-hat)``."""

    nearest: tuple[Nearest, ...]
    scaling: tuple[Scaling, ...]
    ratios: tuple[Ratios, ...]
    unmixed: tuple[tuple[str, int, float], ...]


def nearest(row: Row, quantity: str) -> Nearest:
    """The theory nearest ``row``'s samples in ``quantity`` and its margin (:class:`Nearest`)."""
    ranked = sorted(row.against, key=lambda a: getattr(a, quantity).distance)
    first, second = getattr(ranked[0], quantity), getattr(ranked[1], quantity)
    gap = second.distance - first.distance
    return Nearest(row.phi, row.width, quantity, ranked[0].theory, first.distance, ranked[1].theory, gap, first.noise,
                   first.noise is not None and gap > 4 * first.noise)


def scaling(rows: Sequence[Row], phi: str, theory: str, quantity: str) -> Scaling:
    """:class:`Scaling` of ``theory``'s distance in ``quantity`` over the mixed records of ``phi``."""
    points = [(r.width, getattr(next(a for a in r.against if a.theory == theory), quantity))
              for r in rows if r.phi == phi and r.mixed]
    usable = [(w, d) for w, d in points if d.noise is not None and (d.value if d.resolved else d.limit)]
    widths = tuple(w for w, _ in usable)
    if sum(d.resolved for _, d in usable) < 2:
        return Scaling(phi, theory, quantity, widths, False, None, None)
    fit = stats.power_law_fit([w for w, _ in usable], [d.value if d.resolved else d.limit for _, d in usable],
                              [d.se if d.resolved else d.limit_se for _, d in usable],
                              [not d.resolved for _, d in usable])
    return Scaling(phi, theory, quantity, widths, bool(fit["determined"]), fit["b"], fit["b_se"])


def findings(rows: Sequence[Row]) -> Findings:
    """:class:`Findings` of the rows."""
    ratios = []
    for phi in NONLINEARITIES:
        mixed = [r for r in rows if r.phi == phi and r.mixed]
        if mixed:
            widest = max(mixed, key=lambda r: r.width)
            by = {a.theory: a.diag_ratio for a in widest.against}
            ratios.append(Ratios(phi, widest.width, by["heuristic"], by["linear"]))
    return Findings(tuple(nearest(r, q) for r in rows if r.mixed for q in ("U", "f")),
                    tuple(scaling(rows, phi, "heuristic", q) for phi in NONLINEARITIES for q in ("U", "f")),
                    tuple(ratios), tuple((r.phi, r.width, r.r_hat) for r in rows if not r.mixed))


def read_findings(results: dict) -> Findings:
    """:func:`run`'s ``findings``, read back as :class:`Findings`."""
    return typed(Findings, results["findings"])


def read_rows(results: dict) -> tuple[Row, ...]:
    """The rows of :func:`run`'s ``results``, read back as :class:`Row`."""
    return tuple(typed(Row, r, "results['rows']") for r in results["rows"])


#: The theories' colours and markers in the figure.
STYLES = {"heuristic": ("C0", "o"), "gp": ("C3", "s"), "linear": ("C2", "^")}


@book_style
def plot_comparison(results: dict) -> Figure:
    """Per nonlinearity, two panels: ``U_a`` of the three theories against the width (lines) and of the samples
    (points with two Monte-Carlo errors); and each theory's distance from the samples' mean predictor at the sampled
    widths, with the samples' noise floor (grey band: a distance below it is not resolved)."""
    rows = read_rows(results)
    fig, axes = panel_grid(2 * len(NONLINEARITIES), height=2.9)
    for k, phi in enumerate(NONLINEARITIES):
        left, right = axes[2 * k], axes[2 * k + 1]
        for theory in THEORIES:
            colour, marker = STYLES[theory]
            curve = results["curves"][phi][theory]
            widths = sorted(curve, key=float)
            left.plot([float(w) for w in widths], [curve[w]["U_a"] for w in widths], "-", color=colour,
                      label=THEORY_NAMES[theory])
            mine = [r for r in rows if r.phi == phi]
            right.plot([r.width for r in mine], [a.f.distance for r in mine for a in r.against if a.theory == theory],
                       marker + "-", color=colour)
        mine = [r for r in rows if r.phi == phi]
        mixed = {r.width: r.mixed for r in mine}
        for ok, style in ((True, dict(fmt="k*", label="NUTS (± 2 errors)")),
                          (False, dict(fmt="*", color="0.5", mfc="none", label="NUTS, chains not mixed"))):
            records = [rec for rec in results["sampled_U_a"][phi] if mixed[rec["width"]] == ok]
            if records:
                left.errorbar([r["width"] for r in records], [r["U_a"] for r in records],
                              yerr=[2 * r["U_a_se"] for r in records], ms=8, **style)
        floors = [r.against[0].f.noise or 0.0 for r in mine]
        right.fill_between([r.width for r in mine], 0, floors, color="0.85", label="noise floor")
        for ax in (left, right):
            ax.set_xscale("log")
            ax.set_xlabel("width N")
            ax.xaxis.set_major_formatter(ScalarFormatter())
        right.set_ylim(0, None)
        left.set_title(f"{PHI_NAMES[phi]}: the readout's U_a", fontsize=10)
        right.set_title(f"{PHI_NAMES[phi]}: predictor's distance from NUTS", fontsize=10)
    legend_below(fig, axes[:2], columns=2)
    stamp_profile(fig, results["profile"])
    return fig


#: The nonlinearities' names in figures and tables.
PHI_NAMES = {"relu": "ReLU", "erf": "erf"}


def run(profile: str | None = None, out_dir: str | Path | None = None, *, config: Config | None = None,
        progress: bool = False) -> dict:
    """The chapter's numbers at the profile's scale, or ``config``'s (the NUTS records shipped for those sizes, or
    sampled afresh); write ``results.json`` and the figure to ``out_dir`` when given (all or nothing)."""
    name = current_profile(profile)
    if out_dir is not None:
        out_dir = _io.check_output_folder(out_dir)
    cfg = config or settings(name)
    start = time.perf_counter()
    payload = samples(name, progress=progress, config=cfg)
    widths = sorted(set(cfg.theory_widths) | {w for _, w in cfg.sampled})
    solve_start = time.perf_counter()
    curves = {phi: theories(problem(phi, cfg), widths, cfg.temperature) for phi in NONLINEARITIES}
    solve_seconds = time.perf_counter() - solve_start
    rows = compare(payload, cfg, curves)
    results = jsonable({
        "profile": name, "config": asdict(cfg), "provenance": payload["provenance"], "rows": rows,
        "curves": {phi: {theory: {str(w): {"U_a": float(p.inner[-1][0, 0]), "U_diag": np.diag(p.U),
                                           "accuracy": p.accuracy} for w, p in points.items()}
                         for theory, points in c.items()} for phi, c in curves.items()},
        "sampled_U_a": {phi: [{"width": rec["width"], "U_a": rec["inner"][-1][0][0], "U_a_se": rec["inner_se"][-1][0][0]}
                              for rec in payload["records"] if rec["phi"] == phi] for phi in NONLINEARITIES},
        "solve_seconds": solve_seconds,
        "sampled_in_this_run": payload["provenance"]["command"] == "sampled in this run",
        "seconds": time.perf_counter() - start,
    })
    results["findings"] = jsonable(findings(read_rows(results)))
    if out_dir is not None:
        _io.write_outputs(Path(out_dir), results, {}, {"comparison": lambda: plot_comparison(results)})
    return results
