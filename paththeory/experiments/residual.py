"""The residual stream: linear MLP blocks and skip connections on the hidden-Markov-chain task.

The book's chapter "The residual stream" (beyond the paper: its outlook, §5, says the theory extends to
linear MLP blocks and, it seems, to skip connections). Four networks share the attention heads of the
paper's Fig. 2 (layer 1: the good head and a random head; layer 2: the uniform head and a random head):

* ``attention``: the paper's network, 4 paths;
* ``mlp``: a linear MLP block after each attention layer, 4 paths and 4 levels;
* ``skip``: a skip connection around each attention layer, 9 paths (the all-skip path included);
* ``residual``: two residual blocks, each attention with a skip then an MLP with a skip, 36 paths.

* :data:`SETTINGS` and :func:`settings`: the sizes per profile;
* :func:`problem`: the data and each network's path features;
* :func:`sample_points`: NUTS, or the exact Gibbs sampler at wider networks, at every sampled (network,
  width), as JSON-ready records, shipped for the ``smoke`` and ``colab`` sizes (``python -m paththeory
  residual [--sampler gibbs]`` writes them) so that the book does not sample for half an hour;
* :func:`theory_curve`, :func:`compare`: the theory on the same data, against the records (one :class:`Row`
  per record);
* :func:`findings`: the chapter's verdicts (:class:`Findings`), stored by :func:`run` and read back by :func:`read`;
  their words: :mod:`paththeory.reports.residual`;
* :func:`path_shares`, :func:`plot_shares`, :func:`deep_linear_check`, :func:`run`.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from paththeory import _io
from paththeory.experiments import SAMPLER_NAMES, stats
from paththeory.experiments.records import SHIPPED, ShippedRecords, jsonable, schedule, schedule_fields, typed
from paththeory.experiments.compare import Distance, distance, record_batches, relative_distance, sampler_agreement
from paththeory.experiments.claims import (COMPARABLE_TOLERANCE, OWN_TEST, U_TOLERANCE, Claim, Evidence, claim_row,
                                         paired_claim, u_claim)
from paththeory.display.plots import book_style, legend_below, panel_grid, stamp_profile
from paththeory.model import MLP, Architecture, Residual, path_features
from paththeory.predict import mean_predictor
from paththeory.profiles import choose, current_profile, time_limit
from paththeory.solve import Theory
from paththeory.tasks import markov

#: The networks, in the order of the chapter's tables.
NETWORKS = ("attention", "mlp", "skip", "residual")
NETWORK_NAMES = {"attention": "attention only (the paper's)", "mlp": "attention + MLP blocks",
                 "skip": "skip around each attention layer", "residual": "two residual blocks"}
SHORT_NAMES = {"attention": "attention only", "mlp": "with MLP blocks", "skip": "with skips",
               "residual": "two residual blocks"}
#: One colour per path class (paths through 0, 1, 2 attention heads): the classes are three quantities.
CLASS_COLOURS = ("C1", "C0", "C4")
#: Largest rank-normalised R-hat of ``U``'s entries at which a record's Monte Carlo error is taken at face value:
#: 1.02 for the shipped runs of two chains (R-hat from two chains of 400 draws is itself noisy; the
#: validity records, four chains, use 1.01).
R_HAT_OK = 1.02


@dataclass(frozen=True)
class Config:
    """Sizes of one profile.

    ``theory_widths``: the widths of the theory's curves; ``sampled``: ``(network, width)`` pairs sampled
    with NUTS, ``num_chains`` chains of ``num_warmup`` + ``num_samples`` iterations each; ``gibbs``: pairs
    sampled with the exact Gibbs sampler, ``gibbs_chains`` chains of ``gibbs_warmup`` + ``gibbs_samples``
    sweeps; ``n_train`` / ``n_test`` sequences; ``temperature`` ``T``; ``time_limit``: a fail-safe per point
    (seconds), far above an honest run's time; ``seed``: the samplers' seed.
    """

    theory_widths: tuple[int, ...]
    sampled: tuple[tuple[str, int], ...]
    num_warmup: int
    num_samples: int
    num_chains: int
    time_limit: float
    n_train: int = 80
    n_test: int = 500
    temperature: float = 0.01
    seed: int = 0
    gibbs: tuple[tuple[str, int], ...] = ()
    gibbs_warmup: int = 200
    gibbs_samples: int = 1000
    gibbs_chains: int = 4


#: The samplers of the chapter and, for each, the fields of :class:`Config` that fix its records: its points and
#: its schedule (:func:`paththeory.experiments.records.schedule_fields`).
SAMPLERS = {"nuts": ("sampled", *schedule_fields("nuts")), "gibbs": ("gibbs", *schedule_fields("gibbs"))}
#: The shipped records, one file per sampler and profile (``python -m paththeory residual [--sampler gibbs]``).
RECORDS = ShippedRecords("residual", SHIPPED, SAMPLERS, ("n_train", "n_test", "temperature", "seed"),
                         "the residual-stream records")

_SAMPLED = (("attention", 10), ("attention", 30), ("mlp", 10), ("mlp", 30), ("skip", 10), ("skip", 30),
            ("residual", 30))
#: The exact sampler reaches wider networks: every network at N = 30 to 300 (two residual blocks up to 100).
#: Not N = 10, where it mixes slowly along directions that change a hidden layer's basis (the sampling
#: chapter's note); NUTS covers N = 10.
_GIBBS = tuple((n, w) for n in ("attention", "mlp", "skip") for w in (30, 100, 300)) + (
    ("residual", 30), ("residual", 100))
SETTINGS: dict[str, Config] = {
    # smoke and colab: sampled once on a 2-core CPU (`python -m paththeory residual [--sampler gibbs]`) and
    # shipped; the chapter solves the theory against them as it is built.
    "smoke": Config((10, 20, 30, 50, 100, 300, 1000), _SAMPLED, 200, 400, 2, 4 * 3600.0, gibbs=_GIBBS,
                    gibbs_warmup=200, gibbs_samples=800, gibbs_chains=4),
    "colab": Config((10, 20, 30, 50, 100, 300, 1000), _SAMPLED, 200, 400, 2, 4 * 3600.0, gibbs=_GIBBS,
                    gibbs_warmup=200, gibbs_samples=800, gibbs_chains=4),
    "paper": Config((10, 20, 30, 50, 100, 300, 1000), _SAMPLED + (("skip", 100), ("residual", 100)), 400, 800, 4,
                    24 * 3600.0, n_test=1000,
                    gibbs=_GIBBS + (("residual", 300), ("skip", 1000), ("residual", 1000)), gibbs_warmup=500,
                    gibbs_samples=2000, gibbs_chains=4),
}


def settings(profile: str | None = None) -> Config:
    """The :class:`Config` of ``profile`` (default: the current profile)."""
    return choose(SETTINGS, profile)


def architecture(network: str) -> Architecture:
    """One of :data:`NETWORKS`, built on the heads of :func:`paththeory.tasks.markov.four_paths`."""
    first, second = markov.four_paths().attention
    levels = {"attention": (first, second), "mlp": (first, MLP(), second, MLP()),
              "skip": (Residual(first), Residual(second)),
              "residual": (Residual(first), Residual(MLP()), Residual(second), Residual(MLP()))}
    if network not in levels:
        raise ValueError(f"network must be one of {NETWORKS}; got {network!r}.")
    return Architecture(levels[network], readout="last")


def problem(network: str, cfg: Config) -> markov.ChapterProblem:
    """The data of the paper's Fig. 2 (training seed 27, test seed 59) through ``network``'s paths (cached per network
    and data size, so every caller shares one: its arrays are read-only; :func:`paththeory.tasks.markov.chapter_problem`)."""
    return markov.chapter_problem(architecture, network, cfg.n_train, cfg.n_test)


# --------------------------------------------------------------------------- sampling


def sample_points(cfg: Config, sampler: str = "nuts", *, progress: bool = False) -> list[dict]:
    """``sampler`` (``"nuts"`` or ``"gibbs"``) at every ``(network, width)`` of its points in ``cfg``: one
    JSON-ready record per point, with the sampled ``U`` and its batch-means error ``U_se``, the levels above
    (``inner``: ``U^(2..L)``, ``U_a``) and theirs (``inner_se``), the mean predictor on the test set and its batch-means error, and the
    diagnostics."""
    from paththeory.sampling import sample_posterior

    points = getattr(cfg, SAMPLERS[RECORDS.check(sampler)][0])  # its (network, width) pairs, its first field
    problems: dict[str, markov.ChapterProblem] = {}
    records = []
    for i, (network, width) in enumerate(points):
        prob = problems.setdefault(network, problem(network, cfg))
        res = sample_posterior(prob.arch, prob.train, prob.y_train, width, cfg.temperature, method=sampler,
                               features_test=prob.test, **schedule(cfg, sampler),
                               time_limit=time_limit(cfg.time_limit), seed=cfg.seed + i, progress_bar=progress)
        if progress:
            print(f"{network} N = {width}:\n{res.summary()}", flush=True)
        records.append(jsonable({
            "network": network, "width": int(width), "paths": int(prob.arch.n_paths),
            "U": res.U, "U_se": stats.batch_means_se(res.U_draws), "inner": res.inner,
            "inner_se": [stats.batch_means_se(d) for d in res.inner_draws],
            "mean": res.mean, "mean_se": stats.batch_means_se(res.f_draws),
            "diagnostics": res.to_dict()["diagnostics"],
        }))
    return records


def write_samples(profile: str | None = None, out: str | os.PathLike | None = None, *, sampler: str = "nuts",
                  progress: bool = True) -> Path:
    """Sample every point of ``sampler`` in ``profile`` and write the records with their provenance to ``out``
    (default: the package's own file, which the book reads). Atomic: an interrupted run leaves the previous
    file intact."""
    profile = current_profile(profile)
    return RECORDS.write(settings(profile), profile, sampler, partial(sample_points, progress=progress), out)


def samples(profile: str | None = None, *, sampler: str = "nuts", progress: bool = False,
            config: Config | None = None) -> dict:
    """``sampler``'s shipped records whose sizes match ``config`` (default: ``profile``'s), else a fresh run
    (not written): ``{"sampler", "provenance", "records"}``."""
    return RECORDS.load(config or settings(profile), current_profile(profile), sampler,
                        partial(sample_points, progress=progress))


# --------------------------------------------------------------------------- the theory against the samples


def theory_curve(prob: markov.ChapterProblem, widths: Sequence[float], temperature: float) -> dict:
    """The theory at every width: ``U``, the levels above, the mean predictor on the test set, the test accuracy
    and ``correct`` per test sequence, and the solve's time per width."""
    theory = Theory(prob.arch, prob.train, prob.y_train)
    start = time.perf_counter()
    solutions = theory.sweep(list(widths), temperature)
    seconds = time.perf_counter() - start
    out = {}
    for width, sol in zip(widths, solutions):
        mean = np.asarray(mean_predictor(sol.U, prob.train, prob.y_train, prob.test, temperature))
        correct = mean * prob.y_test > 0
        out[int(width)] = {"solution": sol, "mean": mean, "correct": correct, "accuracy": float(correct.mean())}
    return {"points": out, "seconds_per_width": seconds / len(widths), "n_paths": prob.arch.n_paths}


def gp_mean(prob: markov.ChapterProblem, temperature: float) -> np.ndarray:
    """The GP predictor (the infinite-width limit) on the test set."""
    U = np.diag(prob.arch.gp_path_variances())
    return np.asarray(mean_predictor(U, prob.train, prob.y_train, prob.test, temperature))


@dataclass(frozen=True)
class Paired:
    """A paired difference of two accuracies on the same test sequences, with its standard error over ``n``
    sequences (:func:`paththeory.experiments.stats.paired_difference`)."""

    difference: float
    se: float
    n: int


@dataclass(frozen=True)
class Accuracies:
    """Test accuracies at one record's width: the ``theory``'s, the ``sampled`` mean predictor's, the ``gp``'s, and
    the ``attention_theory``'s (the same heads without MLP blocks or skips)."""

    theory: float
    sampled: float
    gp: float
    attention_theory: float


@dataclass(frozen=True)
class Row:
    """One record against the theory at its width, on the same data (:func:`compare`): the ``network``, ``width``,
    ``paths``, ``ratio = paths / width`` and ``sampler``; relative distances of the sampled ``U`` and mean predictor
    from the theory's (``U_distance``, ``f_distance``) and from the GP point's (``U_gp_distance``,
    ``f_gp_distance``), over the theory's norm, with their noise floors ``U_noise``, ``f_noise`` from
    ``batch_means`` batch means (:func:`paththeory.experiments.compare.relative_distance`); ``inner``, the
    :class:`~paththeory.experiments.compare.Distance` of each level above (``U^(2)``, ..., ``U_a``), with its noise
    floor where the records keep the level's batch-means errors (``inner_se``); the :class:`Accuracies` and three :class:`Paired` differences; the share of the
    sampled ``U``'s kernel trace through no attention head, ``sampled_shares_none``; the worst R-hat and bulk ESS of
    ``U``, the sampler's seconds, ``converged`` (R-hat at most :data:`R_HAT_OK`), and ``in_regime`` (``N >= |Pi|``:
    the Gram-matrix representation of the derivation exists; below it the theory is unchecked). Stored as JSON in
    :func:`run`'s results (``rows``, ``gibbs_rows``) and read back by :func:`read_rows`."""

    network: str
    width: int
    paths: int
    ratio: float
    sampler: str
    U_distance: float
    U_noise: float | None
    batch_means: int | None
    U_gp_distance: float
    inner: tuple[Distance, ...]
    f_distance: float
    f_noise: float | None
    f_gp_distance: float
    accuracy: Accuracies
    theory_minus_sampled: Paired
    sampled_minus_gp: Paired
    sampled_minus_attention_theory: Paired
    sampled_shares_none: float
    r_hat: float
    ess: float
    seconds: float
    converged: bool
    in_regime: bool = True


def compare(payload: dict, cfg: Config, curves: dict | None = None,
            problems: dict[str, markov.ChapterProblem] | None = None,
            gp_means: dict[str, np.ndarray] | None = None) -> list[Row]:
    """Every record of ``payload`` (:func:`samples`) against the theory at its width, on the same data: one
    :class:`Row` per record. ``problems``: :func:`problem` of every network, ``curves``: :func:`theory_curve` of
    every network at (at least) the sampled widths, and ``gp_means``: :func:`gp_mean` of every network (at least
    the sampled ones); each computed here when not given."""
    if problems is None:
        problems = {n: problem(n, cfg) for n in NETWORKS}
    widths = sorted({rec["width"] for rec in payload["records"]})
    if curves is None or any(w not in c["points"] for c in curves.values() for w in widths):
        curves = {n: theory_curve(problems[n], widths, cfg.temperature) for n in NETWORKS}
    base = curves["attention"]
    if gp_means is None:
        gp_means = {n: gp_mean(problems[n], cfg.temperature) for n in {rec["network"] for rec in payload["records"]}}
    rows = []
    for rec in payload["records"]:
        prob, width = problems[rec["network"]], rec["width"]
        point = curves[rec["network"]]["points"][width]
        sol = point["solution"]
        gp_u = np.diag(prob.arch.gp_path_variances())
        mean_gp = gp_means[rec["network"]]
        u_dist, u_noise = relative_distance(rec["U"], sol.U, rec["U_se"])
        f_dist, f_noise = relative_distance(rec["mean"], point["mean"], rec["mean_se"])
        sampled_correct = np.asarray(rec["mean"]) * prob.y_test > 0
        gp = mean_gp * prob.y_test > 0
        plain = base["points"][width]["correct"]
        diag = rec["diagnostics"]
        rows.append(Row(
            rec["network"], width, prob.arch.n_paths, prob.arch.n_paths / width, payload["sampler"],
            u_dist, u_noise, record_batches(rec),
            float(np.linalg.norm(np.asarray(rec["U"]) - gp_u) / np.linalg.norm(sol.U)),
            tuple(distance(*relative_distance(s, t, se), record_batches(rec)) for t, s, se in
                  zip(sol.inner + [np.atleast_2d(sol.U_a)], rec["inner"], rec.get("inner_se", [None] * len(rec["inner"])))),
            f_dist, f_noise,
            float(np.linalg.norm(np.asarray(rec["mean"]) - mean_gp) / np.linalg.norm(point["mean"])),
            Accuracies(float(point["correct"].mean()), float(sampled_correct.mean()), float(gp.mean()),
                       float(plain.mean())),
            Paired(**stats.paired_difference(point["correct"], sampled_correct)),
            Paired(**stats.paired_difference(sampled_correct, gp)),
            Paired(**stats.paired_difference(sampled_correct, plain)),
            float(path_shares(rec["U"], prob.train)[path_classes(prob.arch)["0 heads"]].sum()),
            diag["r_hat_U_max"], diag["ess_bulk_U_min"], diag["seconds"], diag["r_hat_U_max"] <= R_HAT_OK,
            width >= prob.arch.n_paths))
    return rows


def read_rows(results: dict, key: str = "rows") -> tuple[Row, ...]:
    """The rows of :func:`run`'s ``results`` (``key``: ``"rows"`` for NUTS, ``"gibbs_rows"`` for Gibbs), read back
    as :class:`Row` (:func:`paththeory.experiments.records.typed`: a renamed field fails here)."""
    return tuple(typed(Row, r, f"results[{key!r}]") for r in results[key])


# --------------------------------------------------------------------------- the findings


@dataclass(frozen=True)
class Shares:
    """The kernel's trace share of the paths through no attention head (:func:`path_shares`), for one ``network``
    at its smallest NUTS ``width``: in the ``theory``, with the ``sampled`` ``U``, and in the ``gp`` limit;
    ``in_regime`` as the record's (``N >= |Pi|``)."""

    network: str
    width: int
    theory: float
    sampled: float
    gp: float
    in_regime: bool = True

    @property
    def direction(self) -> int:
        """Where finite width moves the share against the GP: +1 towards the paths through no head, -1 away, 0 not."""
        return int(np.sign(self.theory - self.gp))


@dataclass(frozen=True)
class AgainstAttention:
    """One mixed NUTS record of a network with MLP blocks or skips against the attention-only theory at its width:
    both accuracies, their paired ``difference`` and ``verdict``, :func:`paththeory.experiments.stats.verdict` on
    ``|difference| > 0`` (``"holds"``: they differ; ``"fails"``: they match; ``"within noise"``)."""

    network: str
    width: int
    sampled: float
    attention_theory: float
    difference: Paired
    verdict: str


@dataclass(frozen=True)
class Gain:
    """One mixed record (either sampler) of a network with skips: finite width's ``gain`` over its GP, and, where
    the attention-only network was sampled at the same width by the same sampler, the two ``sampled`` accuracies
    (``plain``: without a residual stream) and their ``gap``."""

    network: str
    width: int
    sampler: str
    gain: Paired
    sampled: float
    plain: float | None
    gap: float | None


@dataclass(frozen=True)
class MlpEffect:
    """MLP blocks against the attention-only theory over the ``count`` mixed records (both samplers): the
    ``largest`` ``|difference|`` with its ``sampler`` and ``width``, and at how many records it is ``beyond`` two
    paired standard errors."""

    largest: Paired
    sampler: str
    width: int
    beyond: int
    count: int


@dataclass(frozen=True)
class SkipTheory:
    """The theory with skips against the ``count`` mixed records (both samplers) of the networks with skips: its
    accuracy ``above`` the samples' at how many (``low`` to ``high``: the smallest and largest difference, theory
    minus samples; ``beyond``: above by more than two paired standard errors), and its predictor ``further`` from
    the samples' than the attention-only network's at the same width and sampler, beyond two combined Monte Carlo
    errors, at how many of the ``pairs`` that have one."""

    above: int
    count: int
    low: float
    high: float
    beyond: int
    further: int
    pairs: int


@dataclass(frozen=True)
class PrunedHead:
    """One head of ``network`` pruned from the theory's mean predictor at ``width`` (:func:`pruning_table`): its
    ``score``, the test ``accuracy`` with it pruned, the ``unpruned`` one and the ``change``."""

    network: str
    width: int
    head: str
    score: float
    accuracy: float
    unpruned: float
    change: float


@dataclass(frozen=True)
class Pruning:
    """Per network, its pruned ``heads``, the ``lowest``-scored one and the ``cheapest`` to prune (highest accuracy
    pruned), and whether they are the ``same`` head."""

    network: str
    heads: tuple[PrunedHead, ...]
    lowest: PrunedHead
    cheapest: PrunedHead
    same: bool


@dataclass(frozen=True)
class Findings:
    """The chapter's verdicts, stored in :func:`run`'s results (``findings``) and read back by :func:`read`: the
    kernel :class:`Shares`; NUTS's records against the attention-only theory (:class:`AgainstAttention`) and those
    left out, ``unmixed`` (network, width); the GP accuracies with and without skips (``gp_skip``,
    ``gp_attention``); finite width's :class:`Gain` with skips; the :class:`MlpEffect`; the :class:`SkipTheory`;
    :class:`Pruning` per network."""

    shares: tuple[Shares, ...]
    against_attention: tuple[AgainstAttention, ...]
    unmixed: tuple[tuple[str, int], ...]
    gp_skip: float
    gp_attention: float
    gains: tuple[Gain, ...]
    mlp: MlpEffect | None
    skips: SkipTheory | None
    pruning: tuple[Pruning, ...]


def shares(results: dict, nuts: Sequence[Row]) -> tuple[Shares, ...]:
    """:class:`Shares` of the two networks with skips, at the smallest width NUTS sampled (none where it sampled
    none), from :func:`run`'s ``results`` (``path_classes``, ``shares``, ``gp_shares``)."""
    out = []
    for network in ("skip", "residual"):
        sampled = [r for r in nuts if r.network == network]
        if not sampled:
            continue
        r = min(sampled, key=lambda row: row.width)
        none = np.asarray(results["path_classes"][network]["0 heads"], bool)
        out.append(Shares(network, r.width, float(np.asarray(results["shares"][network][str(r.width)])[none].sum()),
                          r.sampled_shares_none, float(np.asarray(results["gp_shares"][network])[none].sum()),
                          r.in_regime))
    return tuple(out)


def against_attention(nuts: Sequence[Row]) -> tuple[AgainstAttention, ...]:
    """:class:`AgainstAttention` of every mixed NUTS record of a network other than attention only."""
    return tuple(AgainstAttention(r.network, r.width, r.accuracy.sampled, r.accuracy.attention_theory,
                                  r.sampled_minus_attention_theory,
                                  stats.verdict(abs(r.sampled_minus_attention_theory.difference),
                                                r.sampled_minus_attention_theory.se))
                 for r in nuts if r.network != "attention" and r.converged)


def _mixed(rows: Sequence[Row]) -> dict[tuple[str, int, str], Row]:
    """The mixed records by (network, width, sampler), sorted."""
    return dict(sorted(((r.network, r.width, r.sampler), r) for r in rows if r.converged))


def gains(rows: Sequence[Row]) -> tuple[Gain, ...]:
    """:class:`Gain` of every mixed record (both samplers) of the networks with skips, with skips first."""
    mixed = _mixed(rows)
    out = []
    for network in ("skip", "residual"):
        for (n, w, sampler), r in mixed.items():
            if n != network:
                continue
            plain = mixed.get(("attention", w, sampler))
            p = None if plain is None else plain.accuracy.sampled
            out.append(Gain(n, w, sampler, r.sampled_minus_gp, r.accuracy.sampled, p,
                            None if p is None else r.accuracy.sampled - p))
    return tuple(out)


def mlp_effect(rows: Sequence[Row]) -> MlpEffect | None:
    """:class:`MlpEffect` of the mixed records (both samplers) with MLP blocks; ``None`` without one."""
    mlp = [r for r in _mixed(rows).values() if r.network == "mlp"]
    if not mlp:
        return None
    worst = max(mlp, key=lambda r: abs(r.sampled_minus_attention_theory.difference))
    beyond = sum(abs(r.sampled_minus_attention_theory.difference) > 2 * r.sampled_minus_attention_theory.se
                 for r in mlp)
    return MlpEffect(worst.sampled_minus_attention_theory, worst.sampler, worst.width, int(beyond), len(mlp))


def skip_theory(rows: Sequence[Row]) -> SkipTheory | None:
    """:class:`SkipTheory` of the mixed records (both samplers) with skips; ``None`` without one."""
    mixed = _mixed(rows)
    skips = [r for r in mixed.values() if r.network in ("skip", "residual")]
    if not skips:
        return None
    diffs = [r.theory_minus_sampled.difference for r in skips]
    pairs = [(r, mixed[("attention", r.width, r.sampler)]) for r in skips
             if ("attention", r.width, r.sampler) in mixed]
    further = sum(r.f_distance - a.f_distance > 2 * math.hypot(r.f_noise or 0, a.f_noise or 0) for r, a in pairs)
    beyond = sum(r.theory_minus_sampled.difference > 2 * r.theory_minus_sampled.se for r in skips)
    return SkipTheory(sum(d > 0 for d in diffs), len(skips), min(diffs), max(diffs), int(beyond), int(further),
                      len(pairs))


def pruning(heads: Sequence[PrunedHead]) -> tuple[Pruning, ...]:
    """:class:`Pruning` of each network of :func:`pruning_table`'s ``heads``: the lowest-scored head against the
    cheapest to prune."""
    out = []
    for network in dict.fromkeys(h.network for h in heads):
        own = tuple(h for h in heads if h.network == network)
        low, cheapest = min(own, key=lambda h: h.score), max(own, key=lambda h: h.accuracy)
        out.append(Pruning(network, own, low, cheapest, low == cheapest))
    return tuple(out)


def findings(results: dict, heads: Sequence[PrunedHead]) -> Findings:
    """:class:`Findings` of :func:`run`'s ``results`` (its rows of both samplers, shares and GP accuracies) and the
    pruned ``heads``."""
    nuts, gibbs = read_rows(results), read_rows(results, "gibbs_rows")
    both = nuts + gibbs
    gp = results["gp_accuracy"]
    return Findings(shares(results, nuts), against_attention(nuts),
                    tuple((r.network, r.width) for r in nuts if not r.converged), gp["skip"], gp["attention"],
                    gains(both), mlp_effect(both), skip_theory(both), pruning(heads))


def read(results: dict) -> Findings:
    """The :class:`Findings` stored in :func:`run`'s ``results`` (or its ``results.json``), typed: a renamed or
    missing field fails here, not where a sentence formats it."""
    return typed(Findings, results["findings"], "results['findings']")


def residual_claims(rows: Sequence[Row]) -> list[Claim]:
    """Verdicts (:class:`~paththeory.experiments.claims.Claim`), all :data:`~paththeory.experiments.claims.OWN_TEST`,
    per :class:`Row` whose chains mixed (R-hat of ``U`` at most :data:`R_HAT_OK`), against its sampler (NUTS or
    Gibbs): the theory's ``U`` within :data:`~paththeory.experiments.claims.U_TOLERANCE` of the sampled one; the
    sampled mean predictor closer to the theory's than to the GP's (distance difference against the Monte Carlo
    noise); the theory's accuracy within :data:`~paththeory.experiments.claims.COMPARABLE_TOLERANCE` of the samples';
    the samples above the GP (paired)."""
    claims = []
    for r in rows:
        if not r.converged:
            continue
        name, split = SAMPLER_NAMES[r.sampler], f"{NETWORK_NAMES[r.network]}, N = {r.width}"
        claims.append(u_claim(f"u_{r.sampler}", f"the theory's U matches {name}'s", split, r.U_distance, r.U_noise,
                              f"relative error at most {U_TOLERANCE:.0%}", OWN_TEST, r.U_gp_distance))
        gap = r.f_gp_distance - r.f_distance
        claims.append(claim_row("mean_vs_gp", f"{name}'s mean predictor lies closer to the theory's than to the GP's",
                                split, gap, stats.verdict(gap, r.f_noise if r.f_noise is not None else float("nan")),
                                "not in the paper", OWN_TEST, Evidence("monte_carlo", noise=r.f_noise), "distances",
                                {"theory": r.f_distance, "gp": r.f_gp_distance}))
        claims.append(paired_claim(f"acc_theory_{r.sampler}", f"the theory's accuracy matches {name}'s (within 2 "
                                   "points)", split, asdict(r.theory_minus_sampled), "not in the paper", OWN_TEST,
                                   tolerance=COMPARABLE_TOLERANCE))
        claims.append(paired_claim(f"acc_{r.sampler}_gp", f"the finite network ({name}) beats the GP", split,
                                   asdict(r.sampled_minus_gp), "not in the paper", OWN_TEST))
    return claims


# --------------------------------------------------------------------------- which paths carry the kernel


def path_classes(arch: Architecture) -> dict[str, np.ndarray]:
    """Paths grouped by how many attention heads they pass (MLP and skip branches do not count):
    ``{"0 heads": mask, "1 head": mask, "2 heads": mask}`` of ``[n_paths]`` booleans."""
    attention = [not isinstance(layer.layer if isinstance(layer, Residual) else layer, MLP) for layer in arch.attention]
    count = np.array([sum(a and h is not None for a, h in zip(attention, p)) for p in arch.paths])
    return {f"{k} head{'s' if k != 1 else ''}": count == k for k in range(int(count.max()) + 1)}


def path_shares(U, features) -> np.ndarray:
    """Each path's share of the training kernel's trace, ``sum_sigma U_{pi sigma} Tr C^{pi sigma} / Tr K``
    ``[n_paths]`` (sums to one): how much of the kernel runs through each path."""
    gram = np.einsum("man,mbn->ab", np.asarray(features), np.asarray(features))  # Tr C^{pi sigma}
    contributions = np.sum(np.asarray(U) * gram, axis=1)
    return contributions / contributions.sum()


@book_style
def plot_shares(results: dict, networks: Sequence[str] = ("skip", "residual")) -> Figure:
    """Per network, the kernel's share of each path class against the width (the theory, filled markers)
    and in the GP limit (dashed lines)."""
    fig, axes = panel_grid(len(networks), height=3.0, sharey=True)
    for ax, network in zip(axes, networks):
        classes = {k: np.asarray(m) for k, m in results["path_classes"][network].items()}
        shares = results["shares"][network]
        widths = sorted(shares, key=float)
        gp = np.asarray(results["gp_shares"][network])
        for (name, mask), colour in zip(classes.items(), CLASS_COLOURS):
            ax.plot([float(w) for w in widths], [np.asarray(shares[w])[mask].sum() for w in widths], "o-",
                    color=colour, label=f"paths through {name}")
            ax.axhline(gp[mask].sum(), color=colour, ls="--", lw=1.2)
        ax.set_xscale("log")
        ax.set_xlabel("width N")
        ax.set_title(f"{NETWORK_NAMES[network]} ({len(gp)} paths)", fontsize=10)
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("share of the training kernel")
    legend_below(fig, axes, columns=3)
    stamp_profile(fig, results["profile"])
    return fig


@book_style
def plot_order_parameters(results: dict, network: str = "skip", widths: Sequence[int] | None = None) -> Figure:
    """The theory's ``U*`` of ``network`` divided entry by entry by the GP point's scale
    ``sqrt(U^GP_pp U^GP_qq)``, at ``widths`` (default: the smallest, a middle and the largest solved); the GP
    point is the identity on this scale."""
    available = sorted(int(w) for w in results["U"][network])
    widths = widths or sorted({available[0], available[len(available) // 2], available[-1]})
    names = results["path_names"][network]
    gp = np.sqrt(np.asarray(results["gp_path_variances"][network]))
    fig, axes = panel_grid(len(widths), height=3.2, max_columns=2)
    scaled = {w: np.asarray(results["U"][network][str(w)]) / np.outer(gp, gp) for w in widths}
    top = max(float(np.max(np.abs(u))) for u in scaled.values())
    image = None
    for ax, w in zip(axes, widths):
        image = ax.imshow(scaled[w], cmap="RdBu_r", vmin=-top, vmax=top)
        ax.set_title(f"N = {w}", fontsize=10)
        ax.set_xticks(range(len(names)), names, rotation=90)
        ax.set_yticks(range(len(names)), names)
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="U* / GP scale")
    stamp_profile(fig, results["profile"])
    return fig


def deep_linear_check(levels: Sequence[int] = (2, 3, 4), width: float = 30.0, temperature: float = 0.05,
                      n_train: int = 40) -> list[dict]:
    """One path (the good head, then the uniform head, then MLP blocks): the solver's ``U`` against the
    deep-linear stationarity ``U^{1/(k+1)} = 1 - (U / N) E'(U)`` with ``k`` weight levels, solved by bisection."""
    from paththeory.kernels import kernel_matrix

    first, second = markov.good_path().attention
    data = markov.sample_task(n_train, seed=markov.TRAIN_SEED)
    rows = []
    for k in levels:
        arch = Architecture((first, second) + (MLP(),) * (k - 2), readout="last")
        feats = np.asarray(path_features(arch, data.x))
        y = np.asarray(data.y, float)
        sol = Theory(arch, feats, y).solve(width, temperature, tol=1e-11)
        K0 = np.asarray(kernel_matrix(np.eye(1), feats))
        lam, vecs = np.linalg.eigh(K0)
        proj = (vecs.T @ y) ** 2

        def stationarity(u):  # U^{1/(k+1)} - 1 + (U / N) E'(U)
            d = u * lam + temperature
            e_prime = np.sum(lam / d) - np.sum(proj * lam / d**2)
            return u ** (1.0 / (k + 1)) - 1.0 + u / width * e_prime

        lo, hi = 1e-8, 1e3
        for _ in range(200):
            mid = np.sqrt(lo * hi)
            lo, hi = (mid, hi) if stationarity(mid) < 0 else (lo, mid)
        rows.append({"levels": k, "theory": float(sol.U[0, 0]), "closed_form": float(np.sqrt(lo * hi))})
    return rows


# --------------------------------------------------------------------------- head pruning with a residual stream


def theory_path_contributions(U, prob: markov.ChapterProblem, temperature: float) -> np.ndarray:
    """Each path's share of the theory's mean predictor on the test set, ``[P_test, n_paths]`` (sums to the mean
    predictor): ``c_pi(x) = xi^pi(x) . sum_sigma U_{pi sigma} sum_mu alpha_mu xi^sigma(x^mu)`` with
    ``alpha = (K_U + T I)^{-1} y``. Pruning after learning, as the paper prunes a trained network, multiplies
    the contributions by :func:`paththeory.pruning.path_weights`."""
    from paththeory.kernels import kernel_matrix

    U = np.asarray(U)
    K = np.asarray(kernel_matrix(U, prob.train))
    alpha = np.linalg.solve(K + temperature * np.eye(len(K)), prob.y_train)
    dual = np.einsum("m,mbn->bn", alpha, prob.train)  # [n_paths, N0]
    return np.einsum("tan,ab,bn->ta", prob.test, U, dual)


def pruning_table(results: dict, problems: dict[str, markov.ChapterProblem],
                  temperature: float) -> list[PrunedHead]:
    """Per network without and with a skip around each attention layer, at the smallest theory width: each head's
    score from ``U*`` (:func:`paththeory.pruning.head_scores`, the skip no head) and the test accuracy of the
    theory's predictor with that head pruned (its paths dropped, a skip level's paths falling back on its skip)."""
    from paththeory.pruning import all_heads, head_scores, pruned_accuracies

    width = min(int(w) for w in results["U"]["skip"])
    heads_pruned = []
    for network in ("attention", "skip"):
        prob = problems[network]
        U = np.asarray(results["U"][network][str(width)])
        c = theory_path_contributions(U, prob, temperature)
        scores = head_scores(U, prob.arch.heads, skips=prob.arch.skips)
        heads = all_heads(prob.arch.heads)
        acc = pruned_accuracies(c, prob.y_test, prob.arch.heads, [[]] + [[h] for h in heads], prob.arch.skips)
        for (layer, head), a in zip(heads, acc[1:]):
            heads_pruned.append(PrunedHead(network, width, f"layer {layer + 1}, head {head + 1}",
                                           float(scores[layer][head]), float(a), float(acc[0]),
                                           float(a) - float(acc[0])))
    return heads_pruned


# --------------------------------------------------------------------------- the whole chapter


def run(profile: str | None = None, out_dir: str | Path | None = None, *, config: Config | None = None,
        progress: bool = False) -> dict:
    """The chapter's numbers at the profile's scale, or ``config``'s (the NUTS and Gibbs records shipped for
    those sizes, or sampled afresh), with their :class:`Findings` (``findings``, :func:`read`); write
    ``results.json``, ``features.npz`` and the figures to ``out_dir`` when given (all or nothing)."""
    name = current_profile(profile)
    if out_dir is not None:
        out_dir = _io.check_output_folder(out_dir)
    cfg = config or settings(name)
    start = time.perf_counter()
    payload = samples(name, progress=progress, config=cfg)
    exact = samples(name, sampler="gibbs", progress=progress, config=cfg) if cfg.gibbs else None
    problems = {n: problem(n, cfg) for n in NETWORKS}
    widths = sorted(set(cfg.theory_widths) | {w for _, w in cfg.sampled} | {w for _, w in cfg.gibbs})
    curves = {n: theory_curve(problems[n], widths, cfg.temperature) for n in NETWORKS}
    gp_means = {n: gp_mean(problems[n], cfg.temperature) for n in NETWORKS}
    rows = compare(payload, cfg, curves, problems, gp_means)
    gibbs_rows = compare(exact, cfg, curves, problems, gp_means) if exact else []
    skip = problems["skip"]
    results = jsonable({
        "profile": name, "config": asdict(cfg), "provenance": payload["provenance"], "rows": rows,
        "gibbs_provenance": exact["provenance"] if exact else None, "gibbs_rows": gibbs_rows,
        "sampler_agreement": sampler_agreement(payload["records"], exact["records"], ("network", "width"), R_HAT_OK)
        if exact else [],
        "solve_seconds": {n: {"paths": c["n_paths"], "seconds_per_width": c["seconds_per_width"]}
                          for n, c in curves.items()},
        "shares": {n: {str(w): path_shares(p["solution"].U, problems[n].train).tolist()
                       for w, p in c["points"].items()} for n, c in curves.items()},
        "gp_shares": {n: path_shares(np.diag(problems[n].arch.gp_path_variances()), problems[n].train).tolist()
                      for n in NETWORKS},
        "path_classes": {n: {k: m.tolist() for k, m in path_classes(problems[n].arch).items()} for n in NETWORKS},
        "path_names": {n: problems[n].arch.path_names() for n in NETWORKS},
        "gp_accuracy": {n: float((gp_means[n] * problems[n].y_test > 0).mean()) for n in NETWORKS},
        "gp_path_variances": {n: problems[n].arch.gp_path_variances() for n in NETWORKS},
        "U": {n: {str(w): p["solution"].U for w, p in c["points"].items()} for n, c in curves.items()},
        "accuracy_curves": {n: {str(w): p["accuracy"] for w, p in c["points"].items()} for n, c in curves.items()},
        "deep_linear": deep_linear_check(),
        "sampled_in_this_run": payload["provenance"]["command"] == "sampled in this run",
        "seconds": time.perf_counter() - start,
    })
    results["findings"] = jsonable(findings(results, pruning_table(results, problems, cfg.temperature)))
    results["claims"] = jsonable(residual_claims(read_rows(results)))
    results["gibbs_claims"] = jsonable(residual_claims(read_rows(results, "gibbs_rows")))
    if out_dir is not None:
        _io.write_outputs(Path(out_dir), results, {"train_features_skip": skip.train, "y_train": skip.y_train},
                          {"shares": lambda: plot_shares(results), "order_parameters": lambda: plot_order_parameters(results)})
    return results
