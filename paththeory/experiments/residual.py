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
* :func:`theory_curve`, :func:`compare`: the theory on the same data, against the records;
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
from paththeory.experiments.records import ShippedRecords, jsonable, schedule, schedule_fields
from paththeory.experiments.compare import record_batches, relative_distance, sampler_agreement
from paththeory.experiments.claims import COMPARABLE_TOLERANCE, OWN_TEST, U_TOLERANCE, _paired_row, _row
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
SHIPPED = Path(__file__).resolve().parent.parent / "results"
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


@dataclass(frozen=True)
class Problem:
    """One network's path features ``[P, n_paths, N0]`` of the shared training and test sequences."""

    network: str
    arch: Architecture
    train: np.ndarray
    y_train: np.ndarray
    test: np.ndarray
    y_test: np.ndarray


def problem(network: str, cfg: Config) -> Problem:
    """The data of the paper's Fig. 2 (training seed 27, test seed 59) through ``network``'s paths."""
    arch = architecture(network)
    train = markov.sample_task(cfg.n_train, seed=markov.TRAIN_SEED)
    test = markov.sample_task(cfg.n_test, seed=markov.TEST_SEED)
    return Problem(network, arch, np.asarray(path_features(arch, train.x)), np.asarray(train.y),
                   np.asarray(path_features(arch, test.x)), np.asarray(test.y))


# --------------------------------------------------------------------------- sampling


def sample_points(cfg: Config, sampler: str = "nuts", *, progress: bool = False) -> list[dict]:
    """``sampler`` (``"nuts"`` or ``"gibbs"``) at every ``(network, width)`` of its points in ``cfg``: one
    JSON-ready record per point, with the sampled ``U`` and its batch-means error ``U_se``, the levels above
    (``inner``: ``U^(2..L)``, ``U_a``), the mean predictor on the test set and its batch-means error, and the
    diagnostics."""
    from paththeory.sampling import sample_posterior

    points = getattr(cfg, SAMPLERS[RECORDS.check(sampler)][0])  # its (network, width) pairs, its first field
    problems: dict[str, Problem] = {}
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


def provenance_text(payload: dict) -> str:
    """A reader's sentence on where a sampler's records come from, and their sizes (``payload["provenance"]``
    ``None``: this profile samples nothing with that sampler)."""
    if payload["provenance"] is None:
        return "This profile samples no point with this sampler."
    prov, cfg = payload["provenance"], payload["provenance"]["config"]
    sched = schedule(cfg, prov["sampler"])
    steps = "warm-up steps" if prov["sampler"] == "nuts" else "warm-up sweeps"
    where = ("were drawn while this page was built" if prov["command"] == "sampled in this run" else
             f"were drawn by `{prov['command']}` on {prov['date']} ({prov['machine']}, "
             f"{prov['seconds'] / 60:.0f} minutes) and ship with the package; the theory is solved as the page is built")
    return (f"The {SAMPLER_NAMES[prov['sampler']]} samples ({prov['profile']} sizes) {where}. Each point is "
            f"{sched['num_chains']} chains of {sched['num_samples']} draws after {sched['num_warmup']} {steps}; "
            f"P = {cfg['n_train']} training and {cfg['n_test']} test sequences, T = {cfg['temperature']:g}.")


# --------------------------------------------------------------------------- the theory against the samples


def theory_curve(prob: Problem, widths: Sequence[float], temperature: float) -> dict:
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


def gp_mean(prob: Problem, temperature: float) -> np.ndarray:
    """The GP predictor (the infinite-width limit) on the test set."""
    U = np.diag(prob.arch.gp_path_variances())
    return np.asarray(mean_predictor(U, prob.train, prob.y_train, prob.test, temperature))


def compare(payload: dict, cfg: Config, curves: dict | None = None, problems: dict[str, Problem] | None = None,
            gp_means: dict[str, np.ndarray] | None = None) -> list[dict]:
    """Every record against the theory at its width, on the same data: relative distances of the sampled ``U``
    and mean predictor from the theory's (and the GP point's), over the theory's norm, with their Monte Carlo
    noise floors ``s`` (the distance sampling noise alone gives, ``E d^2 = d_true^2 + s^2``, and a bound on
    the standard deviation of ``d``) and ``batch_means``, how many batch means the errors come from
    (:func:`paththeory.experiments.compare.record_batches`); ``inner_distance``, the levels above (``U^(2)``, ..., ``U_a``),
    has no noise floor: the records keep the means of those levels, not their draws or errors; and the accuracies of the theory, the
    samples, the GP and the attention-only theory (the same heads, no MLP and no skip) with paired standard
    errors of the differences. ``problems``: :func:`problem` of every network, ``curves``: :func:`theory_curve` of
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
        rows.append({
            "network": rec["network"], "width": width, "paths": prob.arch.n_paths, "sampler": payload["sampler"],
            "U_distance": u_dist, "U_noise": u_noise, "batch_means": record_batches(rec),
            "U_gp_distance": float(np.linalg.norm(np.asarray(rec["U"]) - gp_u) / np.linalg.norm(sol.U)),
            "inner_distance": [relative_distance(s, t)[0]
                               for t, s in zip(sol.inner + [np.atleast_2d(sol.U_a)], rec["inner"])],
            "f_distance": f_dist, "f_noise": f_noise,
            "f_gp_distance": float(np.linalg.norm(np.asarray(rec["mean"]) - mean_gp) / np.linalg.norm(point["mean"])),
            "accuracy": {"theory": float(point["correct"].mean()), "sampled": float(sampled_correct.mean()),
                         "gp": float(gp.mean()), "attention_theory": float(plain.mean())},
            "theory_minus_sampled": stats.paired_difference(point["correct"], sampled_correct),
            "sampled_minus_gp": stats.paired_difference(sampled_correct, gp),
            "sampled_minus_attention_theory": stats.paired_difference(sampled_correct, plain),
            "sampled_shares_none": float(path_shares(rec["U"], prob.train)[path_classes(prob.arch)["0 heads"]].sum()),
            "r_hat": diag["r_hat_U_max"], "ess": diag["ess_bulk_U_min"], "seconds": diag["seconds"],
            "converged": diag["r_hat_U_max"] <= R_HAT_OK,
        })
    return rows


def _sampler_name(rows: Sequence[dict]) -> str:
    """The name of the one sampler behind ``rows`` (rows of two samplers are tabled apart)."""
    samplers = {r["sampler"] for r in rows}
    if len(samplers) != 1:
        raise ValueError(f"rows of one sampler expected; got {sorted(samplers) or 'none'}.")
    return SAMPLER_NAMES[samplers.pop()]


def distance_table(rows: Sequence[dict]) -> str:
    """The theory against the samples of one sampler, one row per record, with ``|Pi| / N`` (markdown)."""
    from paththeory.display.tables import markdown_table

    if not rows:
        return "No record to compare in this profile."
    _sampler_name(rows)

    def noise(x):
        return "" if x is None else f" ({x:.3f})"

    body = [[NETWORK_NAMES[r["network"]], str(r["paths"]), str(r["width"]), f"{r['paths'] / r['width']:.2g}",
             f"{r['U_distance']:.3f}{noise(r['U_noise'])}", f"{r['U_gp_distance']:.3f}",
             f"{r['f_distance']:.3f}{noise(r['f_noise'])}", f"{r['f_gp_distance']:.3f}",
             f"{r['r_hat']:.3f}", f"{r['ess']:.0f}"] for r in rows]
    return markdown_table(["network", "paths", "N", "|Π|/N", "U: theory (MC error)", "U: GP",
                           "predictor: theory (MC error)", "predictor: GP", "R-hat (U)", "ESS (U)"], body)


def accuracy_table(rows: Sequence[dict]) -> str:
    """Test accuracies with the paired standard errors of the differences (markdown)."""
    from paththeory.display.tables import markdown_table

    if not rows:
        return "No record to compare in this profile."
    def diff(d):
        return f"{d['difference']:+.3f} ± {d['se']:.3f}"

    name = _sampler_name(rows)
    body = [[NETWORK_NAMES[r["network"]], str(r["width"]), f"{r['accuracy']['theory']:.3f}",
             f"{r['accuracy']['sampled']:.3f}", f"{r['accuracy']['gp']:.3f}", f"{r['accuracy']['attention_theory']:.3f}",
             diff(r["theory_minus_sampled"]), diff(r["sampled_minus_gp"]), diff(r["sampled_minus_attention_theory"])]
            for r in rows]
    return markdown_table(["network", "N", "theory", name, "GP", "attention-only theory", f"theory − {name}",
                           f"{name} − GP", f"{name} − attention-only"], body)


def inner_table(rows: Sequence[dict]) -> str:
    """Relative distances of the levels above, ``U^(2)`` to ``U_a``, from the sampled ones (markdown)."""
    from paththeory.display.tables import markdown_table

    if not rows:
        return "No record to compare in this profile."
    name = _sampler_name(rows)
    body = [[NETWORK_NAMES[r["network"]], str(r["width"]), ", ".join(f"{d:.3f}" for d in r["inner_distance"])]
            for r in rows]
    return markdown_table(["network", "N", f"U^(2), ..., U_a: theory vs {name}"], body)


def _fraction(x: float) -> str:
    return f"{100 * x:.0f} %"


def shares_sentence(results: dict) -> str:
    """What the figure of path-class shares shows, in numbers: the share of the paths through no attention head
    at the smallest sampled width (theory and NUTS) and in the GP limit, for the two networks with skips."""
    parts = []
    for network in ("skip", "residual"):
        classes = {k: np.asarray(m) for k, m in results["path_classes"][network].items()}
        none = classes["0 heads"]
        sampled = [r for r in results["rows"] if r["network"] == network]
        if not sampled:
            continue
        r = min(sampled, key=lambda row: row["width"])
        theory = np.asarray(results["shares"][network][str(r["width"])])[none].sum()
        parts.append(f"with {NETWORK_NAMES[network]} at N = {r['width']}, the paths through no attention head carry "
                     f"{_fraction(theory)} of the kernel's trace in the theory and {_fraction(r['sampled_shares_none'])} "
                     f"with NUTS's U, against {_fraction(np.asarray(results['gp_shares'][network])[none].sum())} in "
                     "the GP limit")
    return ("On this page's training set, " + "; ".join(parts) + ". The direction differs between the two networks, "
            "and the trace share does not by itself explain the accuracies below: the off-diagonal entries of U, "
            "which the share splits between classes, matter too.")


def accuracy_sentence(results: dict) -> str:
    """The accuracy comparison in words, from the rows: where the finite network with a residual stream
    differs from the attention-only theory, and by how much."""
    out = []
    for r in results["rows"]:
        if r["network"] == "attention" or not r["converged"]:
            continue
        d = r["sampled_minus_attention_theory"]
        verdict = stats.verdict(abs(d["difference"]), d["se"])
        word = {"holds": "differs from", "fails": "matches", "within noise": "cannot be told apart from"}[verdict]
        out.append(f"{NETWORK_NAMES[r['network']]} at N = {r['width']}: NUTS {r['accuracy']['sampled']:.3f}, "
                   f"which {word} the attention-only theory's {r['accuracy']['attention_theory']:.3f} "
                   f"({100 * d['difference']:+.1f} ± {100 * d['se']:.1f} points)")
    skipped = [f"{r['network']} at N = {r['width']}" for r in results["rows"] if not r["converged"]]
    tail = (f" Left out, their chains not mixed (R-hat of U above {R_HAT_OK}): {', '.join(skipped)}." if skipped
            else "")
    return "Per sampled point: " + "; ".join(out) + "." + tail


def conclusion(results: dict) -> str:
    """What this page's numbers say about the residual stream on this task, each statement with its noise and
    its sampler, from every record whose chains mixed (NUTS and Gibbs): the GP with and without skips, finite
    width's gain over the GP, the samples with a residual stream against those without one at the same width,
    MLP blocks against the attention-only theory (the largest effect, and whether it is beyond two paired
    SEs), and, with skips, where the theory's accuracy and predictor stand against the samples."""
    rows = {(r["network"], r["width"], r["sampler"]): r
            for r in [*results["rows"], *results.get("gibbs_rows", [])] if r["converged"]}
    gp = results["gp_accuracy"]
    parts = [f"The all-skip path carries kernel weight in the GP limit but no information about this task's label "
             f"(it reads the last token alone): the GP of the network with skips scores {gp['skip']:.3f} against "
             f"{gp['attention']:.3f} without them."]
    for network in ("skip", "residual"):
        for (n, w, sampler), r in sorted(rows.items()):
            if n != network:
                continue
            name, g = SAMPLER_NAMES[sampler], r["sampled_minus_gp"]
            text = (f"With {NETWORK_NAMES[network]} at N = {w}, finite width gains {100 * g['difference']:+.1f} ± "
                    f"{100 * g['se']:.1f} points over that GP ({name})")
            plain = rows.get(("attention", w, sampler))
            if plain is not None:
                gap = r["accuracy"]["sampled"] - plain["accuracy"]["sampled"]
                text += (f", and the finite network scores {r['accuracy']['sampled']:.3f} against "
                         f"{plain['accuracy']['sampled']:.3f} for the paper's network without a residual stream "
                         f"({name} both, {100 * gap:+.1f} points)")
            parts.append(text + ".")
    mlp = [r for (n, _, _), r in sorted(rows.items()) if n == "mlp"]
    if mlp:
        worst = max(mlp, key=lambda r: abs(r["sampled_minus_attention_theory"]["difference"]))
        d = worst["sampled_minus_attention_theory"]
        beyond = [r for r in mlp if abs(r["sampled_minus_attention_theory"]["difference"])
                  > 2 * r["sampled_minus_attention_theory"]["se"]]
        parts.append(f"MLP blocks move the accuracy by at most {100 * d['difference']:+.1f} ± {100 * d['se']:.1f} "
                     f"points ({SAMPLER_NAMES[worst['sampler']]} at N = {worst['width']} against the attention-only "
                     f"theory), beyond two paired SEs at {len(beyond)} of {len(mlp)} points: they add order "
                     "parameters, not paths.")
    skips = [r for (n, _, _), r in sorted(rows.items()) if n in ("skip", "residual")]
    if skips:
        signs = [r["theory_minus_sampled"]["difference"] for r in skips]
        above = [r for r in skips if r["theory_minus_sampled"]["difference"] > 2 * r["theory_minus_sampled"]["se"]]
        pairs = [(r, rows[("attention", r["width"], r["sampler"])]) for r in skips
                 if ("attention", r["width"], r["sampler"]) in rows]
        further = [r for r, a in pairs if r["f_distance"] - a["f_distance"]
                   > 2 * math.hypot(r["f_noise"] or 0, a["f_noise"] or 0)]
        parts.append(f"With skips, the theory's accuracy lies above the samples' at {sum(x > 0 for x in signs)} of "
                     f"{len(signs)} points (by {100 * min(signs):+.1f} to {100 * max(signs):+.1f} points; beyond two "
                     f"paired SEs at {len(above)}), and its predictor is further from the samples' than without skips "
                     f"at the same width, beyond two Monte Carlo errors, at {len(further)} of {len(pairs)} points.")
    return " ".join(parts)


def agreement_table(rows: Sequence[dict]) -> str:
    """:func:`paththeory.experiments.compare.sampler_agreement` of NUTS against Gibbs as markdown: the distance with its
    combined Monte Carlo error, the largest entry-wise ``|z|`` against the Sidak threshold (5 % family-wise over the
    ``k`` entries), the entry ``(i, j)`` of ``U`` it is at and the family-wise p-value."""
    from paththeory.display.tables import markdown_table

    body = [[NETWORK_NAMES[r["network"]], str(r["width"]), f"{r['distance']:.3f}", f"{r['noise']:.3f}",
             f"{r['max_z']:.1f} ({r['threshold']:.1f})", f"({r['entry'][0]}, {r['entry'][1]}) of {r['k']}",
             f"{r['p_family']:.2g}", "yes" if r["mixed"] else "no",
             f"{r['ess_per_second'][0]:.1f}", f"{r['ess_per_second'][1]:.1f}"] for r in rows]
    return markdown_table(["network", "N", "U: NUTS vs Gibbs", "MC error", "max |z| (threshold)", "entry",
                           "p (family)", "both mixed", "ESS/s NUTS", "ESS/s Gibbs"], body)


def residual_claims(rows: Sequence[dict]) -> list[dict]:
    """Verdict rows, all :data:`~paththeory.experiments.claims.OWN_TEST`, per record whose chains mixed (R-hat of
    ``U`` at most :data:`R_HAT_OK`), against its sampler (NUTS or Gibbs): the theory's ``U`` within
    :data:`~paththeory.experiments.claims.U_TOLERANCE` of the sampled one; the sampled mean predictor closer to
    the theory's than to the GP's (distance difference against the Monte Carlo noise); the theory's accuracy
    within :data:`~paththeory.experiments.claims.COMPARABLE_TOLERANCE` of the samples'; the samples above the GP
    (paired)."""
    claims = []
    for r in rows:
        if not r["converged"]:
            continue
        sampler, name = r["sampler"], SAMPLER_NAMES[r["sampler"]]
        split = f"{NETWORK_NAMES[r['network']]}, N = {r['width']}"
        noise = r["U_noise"] if r["U_noise"] is not None else float("nan")
        claims.append(_row(f"u_{sampler}", f"the theory's U matches {name}'s", split, r["U_distance"],
                           f"Monte Carlo {noise:.1%} (GP point: {r['U_gp_distance']:.0%})",
                           stats.verdict(U_TOLERANCE - r["U_distance"], noise),
                           f"relative error at most {U_TOLERANCE:.0%}", f"{r['U_distance']:.1%}", OWN_TEST))
        gap = r["f_gp_distance"] - r["f_distance"]
        f_noise = r["f_noise"] if r["f_noise"] is not None else float("nan")
        claims.append(_row("mean_vs_gp", f"{name}'s mean predictor lies closer to the theory's than to the GP's",
                           split, gap, f"Monte Carlo {f_noise:.1%}", stats.verdict(gap, f_noise), "not in the paper",
                           f"{r['f_distance']:.1%} vs {r['f_gp_distance']:.1%}", OWN_TEST))
        claims.append(_paired_row(f"acc_theory_{sampler}", f"the theory's accuracy matches {name}'s (within 2 points)",
                                  split, r["theory_minus_sampled"], "not in the paper", OWN_TEST,
                                  tolerance=COMPARABLE_TOLERANCE))
        claims.append(_paired_row(f"acc_{sampler}_gp", f"the finite network ({name}) beats the GP", split,
                                  r["sampled_minus_gp"], "not in the paper", OWN_TEST))
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


def theory_path_contributions(U, prob: Problem, temperature: float) -> np.ndarray:
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


def pruning_table(results: dict, problems: dict[str, Problem], temperature: float) -> list[dict]:
    """Per network without and with a skip around each attention layer, at the smallest theory width: each head's
    score from ``U*`` (:func:`paththeory.pruning.head_scores`, the skip no head) and the test accuracy of the
    theory's predictor with that head pruned (its paths dropped, a skip level's paths falling back on its skip)."""
    from paththeory.pruning import all_heads, head_scores, pruned_accuracies

    width = min(int(w) for w in results["U"]["skip"])
    rows = []
    for network in ("attention", "skip"):
        prob = problems[network]
        U = np.asarray(results["U"][network][str(width)])
        c = theory_path_contributions(U, prob, temperature)
        scores = head_scores(U, prob.arch.heads, skips=prob.arch.skips)
        heads = all_heads(prob.arch.heads)
        acc = pruned_accuracies(c, prob.y_test, prob.arch.heads, [[]] + [[h] for h in heads], prob.arch.skips)
        for (layer, head), a in zip(heads, acc[1:]):
            rows.append({"network": network, "width": width, "head": f"layer {layer + 1}, head {head}",
                         "score": float(scores[layer][head]), "accuracy": float(a), "unpruned": float(acc[0])})
    return rows


def pruning_markdown(rows: Sequence[dict]) -> str:
    """:func:`pruning_table` as markdown."""
    from paththeory.display.tables import markdown_table

    body = [[NETWORK_NAMES[r["network"]], r["head"], f"{r['score']:.2f}", f"{r['accuracy']:.3f}",
             f"{100 * (r['accuracy'] - r['unpruned']):+.1f}"] for r in rows]
    return markdown_table(["network", "pruned head", "score", "accuracy", "change (points)"], body)


def pruning_sentence(rows: Sequence[dict]) -> str:
    """Whether the lowest-scored head is the cheapest to prune, per network, with the numbers."""
    parts = []
    for network in ("attention", "skip"):
        sel = [r for r in rows if r["network"] == network]
        low = min(sel, key=lambda r: r["score"])
        cheapest = max(sel, key=lambda r: r["accuracy"])
        same = "is also" if low is cheapest else "is not"
        parts.append(f"with {NETWORK_NAMES[network]}, the lowest-scored head ({low['head']}, score {low['score']:.2f}) "
                     f"{same} the cheapest to prune ({100 * (low['accuracy'] - low['unpruned']):+.1f} points; the "
                     f"cheapest: {cheapest['head']}, {100 * (cheapest['accuracy'] - cheapest['unpruned']):+.1f})")
    return "At N = " + str(rows[0]["width"]) + ": " + "; ".join(parts) + "."


# --------------------------------------------------------------------------- the whole chapter


def run(profile: str | None = None, out_dir: str | Path | None = None, *, config: Config | None = None,
        progress: bool = False) -> dict:
    """The chapter's numbers at the profile's scale, or ``config``'s (the NUTS and Gibbs records shipped for
    those sizes, or sampled afresh); write ``results.json``, ``features.npz`` and the figures to ``out_dir`` when
    given (all or nothing)."""
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
    results["pruning"] = jsonable(pruning_table(results, problems, cfg.temperature))
    results["claims"] = residual_claims(results["rows"])
    results["gibbs_claims"] = residual_claims(results["gibbs_rows"])
    if out_dir is not None:
        _io.write_outputs(Path(out_dir), results, {"train_features_skip": skip.train, "y_train": skip.y_train},
                          {"shares": lambda: plot_shares(results), "order_parameters": lambda: plot_order_parameters(results)})
    return results
