"""Many outputs: the multi-output theory on the C-class hidden-Markov-chain task (the book's own).

Used by the chapter ``book/many_outputs.md`` and ``paththeory reproduce multiclass``:

* :data:`SETTINGS` and :func:`settings`: sizes per profile;
* :func:`problem`: data, architecture and path features for ``C`` classes (cached);
* :func:`independent_order_parameter`: ``C`` single-output theories, one per label column, as one
  block-diagonal ``U``; :func:`nearest_kronecker`: the Kronecker product ``A (x) B`` (outputs x
  paths) nearest to a ``U`` in Frobenius norm (Van Loan and Pitsianis 1993);
* :func:`paththeory.experiments.records.samplers`: which sampler draws each sampled width (NUTS at the small
  widths, the exact blocked Gibbs sampler from ``N = 30``, where it gives several times NUTS's
  effective draws per second: :data:`SAMPLER_SPEED`);
* :func:`sample_points`: the posterior records of one sampler, reduced (:func:`sample_record`) and shipped for the
  ``smoke`` profile (``RECORDS``; ``python -m paththeory multiclass --sampler gibbs`` writes them);
* :func:`compare_at`: the theory against the posterior records at one width, with the GP, the independent
  and the Kronecker order parameters; :func:`decoupling`: two classes with two outputs;
  :func:`class_scaling`: finite width against the GP for ``C = 2, 3, 5`` at matched ``P / N``;
* :func:`findings`: the chapter's findings as types (:class:`Findings`; every distance from the samples with its
  noise floor, resolved or bounded as in :func:`paththeory.experiments.stats.debiased_distance`), stored in the
  results and read back by :func:`stored_findings`; their words: :mod:`paththeory.reports.multiclass`;
* :func:`multiclass_claims`: one verdict row per comparison (:mod:`paththeory.experiments.claims`);
* the chapter's figures.

Relative errors are Frobenius norms, ``|X - X_theory| / |X_theory|``; their Monte-Carlo noise is
the Frobenius norm of the per-entry batch-means errors (:func:`paththeory.experiments.stats.batch_means_se`) on
the same scale. Accuracies are argmax decisions on the same test sequences, so every difference
has a paired standard error (:func:`paththeory.experiments.stats.paired_difference`).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from functools import lru_cache, partial
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from paththeory import _io
from paththeory.experiments import stats
from paththeory._checks import check_flag
from paththeory.experiments import SAMPLER_NAMES
from paththeory.experiments.records import (SHIPPED, ShippedRecords, environment, jsonable, samplers, schedule,
                                            schedule_fields, typed)
from paththeory.experiments.compare import Distance, distance, relative_distance
from paththeory.experiments.claims import OWN_TEST, U_TOLERANCE, Claim, Evidence, claim_row, paired_claim, u_claim
from paththeory.model import Architecture, path_features
from paththeory.display.plots import COLOURS, book_style, legend_below, matrix_heatmap, panel_grid, stamp_profile
from paththeory.predict import predictor
from paththeory.profiles import choose, current_profile, time_limit
from paththeory.solve import Solution, Theory
from paththeory.tasks import multiclass as task


@dataclass(frozen=True)
class Config:
    """Sizes of one profile: the task (``n_features``, ``seq_len``, ``n_train``, ``n_test`` sequences of
    ``n_classes`` classes), the temperature, the widths sampled with NUTS (``sample_widths``, each with
    ``num_chains`` chains of ``num_warmup`` + ``num_samples`` iterations) and with the exact blocked Gibbs
    sampler (``gibbs_widths``, each with ``gibbs_chains`` chains of ``gibbs_warmup`` + ``gibbs_samples``
    sweeps; no width is sampled twice), ``time_limit`` seconds per run (a fail-safe against a stuck run, far
    above an honest run's time, :func:`paththeory.profiles.time_limit`), and the class scaling: ``C`` in
    ``scaling_classes`` with ``per_class`` training sequences per class at width ``N = P / p_over_n``."""

    n_features: int
    seq_len: int
    n_classes: int
    n_train: int
    n_test: int
    temperature: float
    sample_widths: tuple[int, ...]
    num_warmup: int
    num_samples: int
    num_chains: int
    time_limit: float
    scaling_classes: tuple[int, ...]
    per_class: int
    p_over_n: float
    gibbs_widths: tuple[int, ...] = ()
    gibbs_warmup: int = 100
    gibbs_samples: int = 400
    gibbs_chains: int = 2

    def __post_init__(self):
        widths = (*self.sample_widths, *self.gibbs_widths)
        if not widths or any(not isinstance(w, int) or w < 1 for w in widths):
            raise ValueError("sample_widths (NUTS) and gibbs_widths (Gibbs) need at least one width between them, "
                             f"each a positive integer; got {self.sample_widths} and {self.gibbs_widths}.")
        twice = sorted(set(self.sample_widths) & set(self.gibbs_widths))
        if twice:
            raise ValueError(f"a width is sampled by one sampler only; N = {', '.join(map(str, twice))} "
                             "is in both sample_widths (NUTS) and gibbs_widths (Gibbs).")


#: Per width and sampler, ``(ess, r_hat, seconds)`` of one measurement on the ``smoke`` problem (P = 60,
#: C = 3, T = 0.01), seed 0: the effective draws of ``U``'s slowest entry (the least bulk ESS over its
#: entries), the largest R-hat over them, and the seconds of the run in each of two runs (one at N = 300),
#: compilation included; NUTS with 2 chains of 60 + 80 iterations (the smoke schedule), Gibbs with 2 chains
#: of 100 + 400 sweeps; one process on a 2-core CPU shared with other jobs, so the seconds move with the
#: load while the draws are the same in both runs. :func:`sampler_speed` reduces it for the chapter's table;
#: :data:`SETTINGS` follows it: Gibbs where its lead in draws per second is at least 2x in every run (from N = 30:
#: four times or more, growing with the width), NUTS below, where the two are within 1.5x of each other (Gibbs
#: 0.9-1.0x at N = 15, 1.2-1.5x at N = 20) and NUTS stays as the gradient-based reference.
SAMPLER_SPEED = {
    15: {"nuts": (55.9, 1.045, (17.5, 17.4)), "gibbs": (39.3, 1.061, (13.6, 12.3))},
    20: {"nuts": (58.6, 1.051, (19.4, 14.8)), "gibbs": (55.5, 1.045, (12.1, 11.3))},
    30: {"nuts": (73.9, 1.025, (20.4, 18.3)), "gibbs": (195.6, 1.019, (13.5, 11.4))},
    60: {"nuts": (76.3, 1.041, (29.2, 30.9)), "gibbs": (359.2, 1.012, (8.4, 12.4))},
    120: {"nuts": (75.3, 1.039, (40.1, 49.3)), "gibbs": (381.5, 1.009, (10.2, 14.7))},
    300: {"nuts": (34.2, 1.058, (411.4,)), "gibbs": (569.3, 1.009, (23.0,))},
}

SETTINGS = {
    # smoke: Gibbs at N = 30 and 120, 4 chains x (200 + 1600) sweeps, enough for R-hat of U within R_HAT_OK (2 chains
    # of 400 sweeps left N = 30 at 1.02); the records ship (multiclass_gibbs_smoke.json), so the chapter samples
    # nothing. No width below 30, where NUTS would be the sampler, is sampled: the colab and paper profiles sample N = 20.
    "smoke": Config(30, 20, 3, 60, 300, 0.01, (), 60, 80, 2, 3600.0, (2, 3, 5), 20, 1.5,
                    gibbs_widths=(30, 120), gibbs_warmup=200, gibbs_samples=1600, gibbs_chains=4),
    # colab and paper: NUTS at N = 20, Gibbs from N = 30 up to C |Pi| / N = 0.04 (colab) and 0.012 (paper),
    # 4 chains x (200 + 800) sweeps: a few sweeps per effective draw of U from N = 30 (SAMPLER_SPEED).
    "colab": Config(60, 20, 3, 90, 1500, 0.01, (20,), 200, 300, 4, 3 * 3600.0, (2, 3, 5), 30, 1.5,
                    gibbs_widths=(30, 60, 120, 300), gibbs_warmup=200, gibbs_samples=800, gibbs_chains=4),
    "paper": Config(60, 20, 3, 90, 3000, 0.01, (20,), 300, 500, 4, 24 * 3600.0, (2, 3, 5), 40, 1.5,
                    gibbs_widths=(30, 60, 120, 300, 1000), gibbs_warmup=200, gibbs_samples=800, gibbs_chains=4),
}


def settings(profile: str | None = None) -> Config:
    """The :class:`Config` of ``profile`` (default: the current profile)."""
    return choose(SETTINGS, profile)


#: The largest R-hat of the sampled ``U`` at which a record's chains count as mixed (the validity chapter's rule).
R_HAT_OK = 1.01

#: The shipped posterior records (``multiclass_<sampler>_<profile>.json`` in the package's ``results/``): per sampler
#: the fields of :class:`Config` that fix its records, and the fields that fix the data every sampler sees.
RECORDS = ShippedRecords("multiclass", SHIPPED, {"nuts": ("sample_widths", *schedule_fields("nuts")),
                                                 "gibbs": ("gibbs_widths", *schedule_fields("gibbs"))},
                         ("n_features", "seq_len", "n_classes", "n_train", "n_test", "temperature"),
                         "the many-outputs records")


@dataclass(frozen=True)
class Problem:
    """``C`` classes: path features ``train [P, n_paths, N0]``, ``test``, labels ``y_train [P, C]``
    (simplex-coded) and the test classes ``[P_test]``."""

    arch: Architecture
    n_classes: int
    train: np.ndarray
    test: np.ndarray
    y_train: np.ndarray
    classes_test: np.ndarray


@lru_cache(maxsize=8)
def problem(n_classes: int, n_train: int, n_test: int, n_features: int, seq_len: int) -> Problem:
    """Data (seeds ``paththeory.tasks.multiclass.TRAIN_SEED``, ``TEST_SEED``), architecture and path
    features (cached: its arrays are read-only)."""
    sizes = dict(n_features=n_features, seq_len=seq_len)
    arch = task.four_paths(**sizes)
    train = task.sample_task(n_train, n_classes=n_classes, seed=task.TRAIN_SEED, **sizes)
    test = task.sample_task(n_test, n_classes=n_classes, seed=task.TEST_SEED, **sizes)
    arrays = [np.array(a) for a in (path_features(arch, train.x), path_features(arch, test.x), train.y, test.classes)]
    for a in arrays:
        a.flags.writeable = False
    return Problem(arch, n_classes, *arrays)


def chapter_problem(cfg: Config) -> Problem:
    """The :func:`problem` of ``cfg``'s sizes: ``cfg.n_classes`` classes, ``n_train`` and ``n_test`` sequences."""
    return problem(cfg.n_classes, cfg.n_train, cfg.n_test, cfg.n_features, cfg.seq_len)


def independent_order_parameter(prob: Problem, width: float, temperature: float) -> np.ndarray:
    """``C`` single-output theories, one per label column ``Y_{:, c}``, as one block-diagonal ``(C |Pi|)``
    square ``U`` (every output its own network: no output-output blocks)."""
    n = prob.arch.n_paths
    U = np.zeros((prob.n_classes * n,) * 2)
    for c in range(prob.n_classes):
        sol = Theory(prob.arch, prob.train, prob.y_train[:, c:c + 1]).solve(width, temperature)
        U[c * n:(c + 1) * n, c * n:(c + 1) * n] = sol.U
    return U


def nearest_kronecker(U, n_outputs: int) -> np.ndarray:
    """The Kronecker product ``A (x) B`` (``A [C, C]`` outputs, ``B [|Pi|, |Pi|]`` paths) nearest to ``U``
    in Frobenius norm, made positive semi-definite.

    Rearranging ``R[(c, d), (pi, sigma)] = U^{cd}_{pi sigma}`` turns ``|U - A (x) B|_F`` into
    ``|R - vec A vec B^T|_F``, which the leading singular pair of ``R`` minimises (Van Loan and
    Pitsianis 1993); negative eigenvalues left by round-off are clipped to zero.

    Example:
      >>> A, B = np.array([[2.0, 0.5], [0.5, 1.0]]), np.diag([1.0, 3.0])
      >>> bool(np.allclose(nearest_kronecker(np.kron(A, B), 2), np.kron(A, B)))
      True
    """
    u = np.asarray(U, dtype=float)
    n = u.shape[0] // n_outputs
    if n_outputs < 1 or u.shape != (n_outputs * n, n_outputs * n):
        raise ValueError(f"U must be (C n_paths) square with C = {n_outputs}; got shape {u.shape}.")
    R = u.reshape(n_outputs, n, n_outputs, n).transpose(0, 2, 1, 3).reshape(n_outputs**2, n * n)
    left, s, right = np.linalg.svd(R, full_matrices=False)
    A = (np.sqrt(s[0]) * left[:, 0]).reshape(n_outputs, n_outputs)
    B = (np.sqrt(s[0]) * right[0]).reshape(n, n)
    if np.trace(A) < 0:
        A, B = -A, -B
    vals, vecs = np.linalg.eigh(np.kron(A, B))
    return (vecs * np.clip(vals, 0.0, None)) @ vecs.T


def relative(a, b, scale=None) -> float:
    """``|a - b|_F / |scale|_F`` (``scale`` defaults to ``b``)."""
    b = np.asarray(b, dtype=float)
    scale = b if scale is None else np.asarray(scale, dtype=float)
    return float(np.linalg.norm(np.asarray(a, dtype=float) - b) / np.linalg.norm(scale))


def sample_record(prob: Problem, width: int, cfg: Config, sampler: str, seed: int, progress: bool = False) -> dict:
    """``sampler`` (``"nuts"`` or ``"gibbs"``, :func:`paththeory.sampling.posterior.sample_posterior`) at one width
    with ``cfg``'s schedule for it (:func:`paththeory.experiments.records.schedule`), reduced to a JSON-ready record:
    the sampled ``U`` and the mean predictor on the test set with their batch-means errors per entry (``U_se``,
    ``mean_se``, :func:`paththeory.experiments.stats.batch_means_se`), the output-output covariance per test
    sequence ``cov`` ``[P_test, C, C]`` and the Frobenius norm ``cov_se`` of its batch-means errors
    (:func:`_covariance_se`), the ``batch_means`` behind them, and the diagnostics."""
    from paththeory.sampling import sample_posterior

    samples = sample_posterior(
        prob.arch, prob.train, prob.y_train, width, cfg.temperature, features_test=prob.test, method=sampler,
        **schedule(cfg, sampler), time_limit=time_limit(cfg.time_limit), seed=seed, progress_bar=progress)
    return jsonable({"width": int(width), "sampler": sampler, "seed": int(seed),
                     "U": samples.U, "U_se": stats.batch_means_se(samples.U_draws),
                     "mean": samples.mean, "mean_se": stats.batch_means_se(samples.f_draws),
                     "cov": samples.var, "cov_se": _covariance_se(samples.f_draws),
                     "batch_means": stats.batch_count(*np.shape(samples.U_draws)[:2]),
                     "diagnostics": samples.diagnostics})


def _covariance_se(f_draws) -> float:
    """The Frobenius norm of the batch-means errors of the sampled output-output covariance ``[P_test, C, C]``: the
    mean over draws of ``(f - f_mean)(f - f_mean)^T`` (``f_mean`` over all draws), with the batches of
    :func:`paththeory.experiments.stats.batch_means_se`. The per-draw products are summed batch by batch, never held
    at once (``[chains, draws, P_test, C, C]`` would take hundreds of megabytes at the colab sizes)."""
    f = np.asarray(f_draws, dtype=float)  # [chains, draws, P_test, C]
    b = stats.batch_count(1, f.shape[1])
    size = f.shape[1] // b
    dev = f - f.reshape(-1, *f.shape[2:]).mean(axis=0)
    means = np.stack([np.einsum("dpc,dpe->pce", block, block) / size
                      for chain in dev for block in np.split(chain[: b * size], b)])
    return float(np.linalg.norm(means.std(axis=0, ddof=1) / np.sqrt(len(means))))


def sample_points(cfg: Config, sampler: str = "nuts", *, progress: bool = False) -> list[dict]:
    """:func:`sample_record` at every width that ``sampler`` draws in ``cfg``, on the profile's problem; the seed of a
    width is its place among all the sampled widths (:func:`paththeory.experiments.records.samplers`)."""
    prob = chapter_problem(cfg)
    return [sample_record(prob, w, cfg, s, seed=i, progress=progress)
            for i, (w, s) in enumerate(samplers(cfg).items()) if s == RECORDS.check(sampler)]


def write_samples(profile: str | None = None, out: str | os.PathLike | None = None, *, sampler: str = "gibbs",
                  progress: bool = True) -> Path:
    """Sample every width of ``sampler`` in ``profile`` and write the records with their provenance to ``out``
    (default: the package's own file, which the chapter reads; ``python -m paththeory multiclass``). Atomic: an
    interrupted run leaves the previous file intact."""
    profile = current_profile(profile)
    return RECORDS.write(settings(profile), profile, sampler, partial(sample_points, progress=progress), out)


def samples(profile: str | None = None, *, sampler: str = "gibbs", progress: bool = False,
            config: Config | None = None) -> dict:
    """``sampler``'s shipped records whose sizes match ``config`` (default: ``profile``'s), else a fresh run
    (not written): ``{"sampler", "provenance", "records"}``."""
    return RECORDS.load(config or settings(profile), current_profile(profile), sampler,
                        partial(sample_points, progress=progress))


def theory_against(prob: Problem, record: dict, cfg: Config) -> tuple[Solution, float, float]:
    """The theory solved at a record's width, and the relative distance of the record's sampled ``U`` from its ``U``
    with the noise floor (:func:`paththeory.experiments.compare.relative_distance`): all that the prefactor question
    needs of a record, and the start of :func:`compare_at`."""
    sol = Theory(prob.arch, prob.train, prob.y_train).solve(record["width"], cfg.temperature)
    return (sol, *relative_distance(record["U"], sol.U, record["U_se"]))


def compare_at(prob: Problem, record: dict, cfg: Config) -> dict:
    """The theory against one width's posterior samples (``record``, :func:`sample_record`), with four other order
    parameters against both.

    Returns a dict with ``sampler``, ``ratio`` (``C |Pi| / N``), the theory's ``U`` (and whether it
    converged), ``errors`` (per order parameter: ``U`` and mean-predictor distances to the samples', relative
    to the theory's), ``theory_vs_sampled`` (the samples' ``U``, mean and covariance against the theory's),
    ``noise`` (Monte-Carlo noise floors of the samples' ``U``, mean and covariance: the norms of their batch-means
    errors on the same scale) over ``batch_means`` batch means, ``diagnostics``, ``accuracy`` and
    ``correct`` (argmax, per test sequence) of every predictor, the samples' under ``"sampled"``.
    """
    t, arch, width = cfg.temperature, prob.arch, record["width"]
    sol, u_distance, u_noise = theory_against(prob, record, cfg)
    candidates = {"theory": sol.U, "gp": arch.gp_scale * np.eye(len(sol.U)),
                  "independent": independent_order_parameter(prob, width, t),
                  "kronecker": nearest_kronecker(sol.U, prob.n_classes)}
    preds = {k: predictor(U, prob.train, prob.y_train, prob.test, t) for k, U in candidates.items()}
    U_s, mean_s, cov_s = (np.asarray(record[k], dtype=float) for k in ("U", "mean", "cov"))
    mean_th, cov_th = (np.asarray(a) for a in preds["theory"])
    out = {"width": int(width), "sampler": record["sampler"], "ratio": prob.n_classes * arch.n_paths / width,
           "U_theory": sol.U, "U_sampled": U_s, "converged": bool(sol.report["converged"]),
           "diagnostics": record["diagnostics"]}
    right = {k: task.correct(p[0], prob.classes_test) for k, p in preds.items()}
    right["sampled"] = task.correct(mean_s, prob.classes_test)
    # every distance to the samples relative to the theory's norm, as their Monte-Carlo noise is
    out["errors"] = {k: {"U": relative(candidates[k], U_s, sol.U),
                         "mean": relative(preds[k][0], mean_s, mean_th)} for k in candidates}
    mean_distance, mean_noise = relative_distance(mean_s, mean_th, record["mean_se"])
    cov_distance, cov_noise = relative_distance(cov_s, cov_th, record["cov_se"])  # cov_se: already a norm
    out["theory_vs_sampled"] = {"U": u_distance, "mean": mean_distance, "cov": cov_distance}
    out["noise"] = {"U": u_noise, "mean": mean_noise, "cov": cov_noise}
    out["batch_means"] = int(record["batch_means"])
    out["accuracy"] = {k: float(v.mean()) for k, v in right.items()}
    out["correct"] = {k: v.astype(int) for k, v in right.items()}
    return out


def decoupling(prob2: Problem, width: float, temperature: float) -> dict:
    """Two classes coded with two outputs, ``Y = [y, -y] / sqrt 2``: in the output basis
    ``O = [[1, 1], [-1, 1]] / sqrt 2`` the labels are ``[y, 0]``, and the rotated ``U`` should be the
    single-output theory of ``y`` plus an output with zero labels and no output-output block.

    Returns the largest entries of the rotated off-diagonal block, of its first block minus the
    single-output ``U`` of ``y``, and the trace of the second ("dead") block against the first.
    """
    if prob2.n_classes != 2:
        raise ValueError(f"decoupling needs the two-class problem; got {prob2.n_classes} classes.")
    n = prob2.arch.n_paths
    U = Theory(prob2.arch, prob2.train, prob2.y_train).solve(width, temperature).U
    O = np.array([[1.0, 1.0], [-1.0, 1.0]]) / np.sqrt(2.0)
    rot = np.kron(O.T, np.eye(n)) @ U @ np.kron(O, np.eye(n))
    y = prob2.y_train @ O[:, 0]
    single = Theory(prob2.arch, prob2.train, y).solve(width, temperature).U
    return {"width": float(width), "labels_second_output": float(np.max(np.abs(prob2.y_train @ O[:, 1]))),
            "off_block_max": float(np.max(np.abs(rot[:n, n:]))),
            "first_block_vs_single": float(np.max(np.abs(rot[:n, :n] - single))),
            "dead_trace": float(np.trace(rot[n:, n:])), "live_trace": float(np.trace(rot[:n, :n]))}


def class_scaling(cfg: Config) -> dict:
    """For each ``C`` in ``cfg.scaling_classes``: ``P = per_class C`` training sequences, width
    ``N = P / p_over_n``, so that ``P / N`` and ``C |Pi| / N = |Pi| p_over_n / per_class`` are the same for
    every ``C``; theory and GP argmax accuracy and their paired difference on ``n_test`` test sequences."""
    rows = {}
    for c in cfg.scaling_classes:
        n_train, n_test = cfg.per_class * c, cfg.n_test // c * c
        prob = problem(c, n_train, n_test, cfg.n_features, cfg.seq_len)
        width = n_train / cfg.p_over_n
        U = Theory(prob.arch, prob.train, prob.y_train).solve(width, cfg.temperature).U
        th = task.correct(predictor(U, prob.train, prob.y_train, prob.test, cfg.temperature)[0], prob.classes_test)
        gp_U = prob.arch.gp_scale * np.eye(len(U))
        gp = task.correct(predictor(gp_U, prob.train, prob.y_train, prob.test, cfg.temperature)[0], prob.classes_test)
        rows[str(c)] = {"n_train": n_train, "width": width, "ratio": c * prob.arch.n_paths / width,
                        "theory": float(th.mean()), "gp": float(gp.mean()), "chance": 1.0 / c,
                        "gain": stats.paired_difference(th.astype(float), gp.astype(float))}
    return rows


def run(profile: str | None = None, out_dir: str | Path | None = None, *, config: Config | None = None,
        progress: bool = True, nway: bool | None = None) -> dict:
    """All of the chapter's numbers at the profile's scale; write ``results.json``, ``features.npz`` and
    PNGs to ``out_dir`` when given (all or nothing). ``nway``: also the Omniglot N-way section
    (:func:`paththeory.experiments.omniglot_nway.run`, key ``"nway"``, at the profile's sizes whatever
    ``config`` says); by default only when writing ``out_dir`` (``paththeory reproduce multiclass``), since
    the chapter runs that section in its own cell. It needs the shipped network and the Omniglot data
    (downloaded unless present), checked before any work."""
    name = current_profile(profile)
    if out_dir is not None:
        out_dir = _io.check_output_folder(out_dir)
    with_nway = out_dir is not None if nway is None else check_flag(nway, "nway")
    if with_nway:  # a missing network or data file fails here, before any work
        from paththeory import training
        from paththeory.experiments import omniglot_nway

        network = training.load_checkpoint()
        images = omniglot_nway.images(network)
    cfg = config or settings(name)
    start = time.perf_counter()
    prob = chapter_problem(cfg)
    results = {"profile": name, "config": asdict(cfg), "paths": list(task.PATH_NAMES),
               "n_paths": prob.arch.n_paths, "transition_probs": task.transition_probs(cfg.n_classes)}
    timings = {"problem": time.perf_counter() - start}
    sampled = samplers(cfg)
    results["samplers"] = {str(w): s for w, s in sampled.items()}
    records, results["records"] = {}, {}
    for sampler in sorted(set(sampled.values())):
        t = time.perf_counter()
        payload = samples(name, sampler=sampler, progress=progress, config=cfg)
        records.update({r["width"]: r for r in payload["records"]})
        results["records"][sampler] = payload["provenance"]
        timings[f"records ({sampler})"] = time.perf_counter() - t
    results["widths"] = {}
    for w in sampled:
        t = time.perf_counter()
        results["widths"][str(w)] = compare_at(prob, records[w], cfg)
        timings[f"width {w}"] = time.perf_counter() - t
    t = time.perf_counter()
    two = problem(2, cfg.per_class * 2, cfg.n_test // 2 * 2, cfg.n_features, cfg.seq_len)
    results["decoupling"] = decoupling(two, min(sampled), cfg.temperature)
    timings["decoupling"] = time.perf_counter() - t
    t = time.perf_counter()
    results["scaling"] = class_scaling(cfg)
    timings["scaling"] = time.perf_counter() - t
    if with_nway:
        t = time.perf_counter()
        results["nway"] = omniglot_nway.run(name, network=network, data=images)
        timings["nway"] = time.perf_counter() - t
    results["timings"] = timings
    results["seconds"] = time.perf_counter() - start
    results["environment"] = environment()
    results = jsonable(results)
    results["findings"] = jsonable(findings(results))
    results["claims"] = jsonable(multiclass_claims(results))
    if out_dir is not None:
        arrays = dict(train_features=prob.train, test_features=prob.test, y_train=prob.y_train,
                      classes_test=prob.classes_test, temperature=cfg.temperature)
        figures = {"order_parameter": lambda: plot_order_parameter(results),
                   "errors": lambda: plot_errors(results), "scaling": lambda: plot_scaling(results)}
        _io.write_outputs(Path(out_dir), results, arrays, figures)
    return results


# --------------------------------------------------------------------------- claims


def valid_widths(results: dict) -> list[str]:
    """The sampled widths (keys) with ``C |Pi| / N <= 0.4`` whose chains mixed (R-hat of ``U`` at most
    :data:`R_HAT_OK`, the rule of every comparison with samples in the book)."""
    return [w for w, r in results["widths"].items()
            if r["ratio"] <= 0.4 + 1e-12 and r["diagnostics"]["r_hat_U_max"] <= R_HAT_OK]


#: The order parameters compared with the theory's, as the claims name them.
COMPETITORS = {"gp": "the GP", "independent": "independent outputs", "kronecker": "the nearest Kronecker U"}


def sampler_name(record: dict) -> str:
    """The name of the sampler that drew one width's record (``results["widths"][w]``; NUTS where the
    record names none)."""
    return SAMPLER_NAMES[record.get("sampler", "nuts")]


def multiclass_claims(results: dict) -> list[Claim]:
    """Verdicts (:class:`~paththeory.experiments.claims.Claim`), all :data:`~paththeory.experiments.claims.OWN_TEST`:
    per valid width, the theory's ``U`` within :data:`~paththeory.experiments.claims.U_TOLERANCE` of the samples';
    the samples' mean predictor closer to the theory's than to the GP's, the independent outputs' and the Kronecker
    ``U``'s (distance difference against the Monte-Carlo noise); argmax accuracy of the theory against each
    (paired); and finite width's gain over the GP larger at ``C = max`` than at ``C = min``. Each claim on samples
    names their sampler."""
    rows = []
    for w in valid_widths(results):
        r = results["widths"][w]
        split, name = f"N = {w}", sampler_name(r)
        rows.append(u_claim("u_sampled", f"the theory's U matches the {name} samples'", split,
                            r["theory_vs_sampled"]["U"], r["noise"]["U"], f"relative error at most {U_TOLERANCE:.0%}",
                            OWN_TEST))
        for k, label in COMPETITORS.items():
            gap = r["errors"][k]["mean"] - r["errors"]["theory"]["mean"]
            rows.append(claim_row(f"mean_vs_{k}", f"the {name} samples' mean predictor lies closer to the theory than "
                                  f"to {label}", split, gap, stats.verdict(gap, r["noise"]["mean"]), "not in the paper",
                                  OWN_TEST, Evidence("monte_carlo", noise=r["noise"]["mean"]), "distances",
                                  {k: r["errors"][k]["mean"], "theory": r["errors"]["theory"]["mean"]}))
            d = stats.paired_difference(r["correct"]["theory"], r["correct"][k])
            rows.append(paired_claim(f"acc_vs_{k}", f"the theory's argmax accuracy beats that of {label}", split, d,
                                     "not in the paper", OWN_TEST))
    sc = results["scaling"]
    lo, hi = sc[min(sc, key=int)], sc[max(sc, key=int)]
    diff = hi["gain"]["difference"] - lo["gain"]["difference"]
    se = float(np.hypot(hi["gain"]["se"], lo["gain"]["se"]))
    rows.append(claim_row("gain_vs_classes", f"finite width helps more with C = {max(sc, key=int)} classes than with "
                          f"C = {min(sc, key=int)}", None, diff, stats.verdict(diff, se), "not in the paper", OWN_TEST,
                          Evidence("independent", se=se), "points"))
    return rows


# --------------------------------------------------------------------------- findings

#: Largest deviation from exact decoupling, relative to the live block's trace, that counts as "exact"
#: (the solver converges to a gradient of about 1e-9 in units of S/N).
DECOUPLING_TOLERANCE = 1e-6
#: The order parameters whose ``U`` and mean predictor are measured against the samples: the theory's, then
#: :data:`COMPETITORS`.
ORDER_PARAMETERS = ("theory", *COMPETITORS)


@dataclass(frozen=True)
class Difference:
    """An estimate ``difference`` ± ``se`` (two errors decide) and the ``verdict`` on ``difference > 0``
    (:func:`paththeory.experiments.stats.verdict`: ``"holds"``, ``"within noise"`` or ``"fails"``)."""

    difference: float
    se: float
    verdict: str


def difference(d: float, se: float) -> Difference:
    """:class:`Difference` of ``d`` ± ``se``."""
    return Difference(float(d), float(se), stats.verdict(d, se))


@dataclass(frozen=True)
class Width:
    """One sampled width against its samples (drawn by ``sampler``; ``valid``: ``C |Pi| / N <= 0.4``): per order
    parameter of :data:`ORDER_PARAMETERS`, the distance of its ``U`` (``U``) and of its mean predictor (``mean``)
    from the samples', relative to the theory's, and of the theory's output-output covariance (``cov``), each
    against the noise floor of the samples' average; ``closer``: per competitor, the samples' mean predictor lies
    closer to the theory's than to its (distance gap against the floor of the mean); ``accuracy``: per other
    predictor (the samples', then the competitors), the theory's argmax accuracy minus its, paired; ``blocks``: the
    Frobenius norm of ``U``'s off-diagonal output blocks over that of its diagonal ones, the theory's and the
    samples'; ``dead``: the label-free output's coupling to the others in the same two ``U``
    (:func:`dead_coupling`), for three outputs or more."""

    width: int
    sampler: str
    ratio: float
    valid: bool
    batch_means: int
    U: dict[str, Distance]
    mean: dict[str, Distance]
    cov: Distance
    closer: dict[str, Difference]
    accuracy: dict[str, Difference]
    blocks: dict[str, float]
    dead: dict[str, float] | None = None


@dataclass(frozen=True)
class Decoupling:
    """Two outputs for two classes (:func:`decoupling`): the larger deviation from exact decoupling over the live
    block's trace (``worst``), ``exact`` when at most :data:`DECOUPLING_TOLERANCE`, and the dead block's trace."""

    worst: float
    tolerance: float
    exact: bool
    dead_trace: float


@dataclass(frozen=True)
class ClassGain:
    """Finite width's gain over the GP at the most classes minus that at the fewest (``largest``, ``smallest``;
    independent test sets, so the errors add in quadrature)."""

    smallest: int
    largest: int
    gain: Difference


@dataclass(frozen=True)
class Findings:
    """The chapter's findings: every sampled :class:`Width`; the ``valid_widths`` (``C |Pi| / N <= 0.4``, chains
    mixed: :func:`valid_widths`); of their
    comparisons of mean predictors (``comparisons``), those where the samples lie closer to the theory beyond the
    noise (``closer``); the width whose ``U`` the chapter draws (``structure_width``: the narrowest valid one, where
    the finite-width structure is largest while the theory is expected to hold; the widest when none is valid);
    the :class:`Decoupling` and the :class:`ClassGain`."""

    widths: tuple[Width, ...]
    valid_widths: tuple[int, ...]
    comparisons: int
    closer: int
    structure_width: int
    decoupling: Decoupling
    class_gain: ClassGain


def _blocks(U, n_outputs: int) -> float:
    """``|off-diagonal output blocks|_F / |diagonal output blocks|_F`` of a ``(C |Pi|)`` square ``U``."""
    u = np.asarray(U, dtype=float)
    n = u.shape[0] // n_outputs
    blocks = u.reshape(n_outputs, n, n_outputs, n).transpose(0, 2, 1, 3)
    diag = np.eye(n_outputs, dtype=bool)
    return float(np.linalg.norm(blocks[~diag]) / np.linalg.norm(blocks[diag]))


def label_free_basis(n_outputs: int) -> np.ndarray:
    """An orthonormal basis of the outputs whose first vector is ``(1, ..., 1) / sqrt C``: the direction the simplex
    code of the labels leaves without labels (its rows sum to zero), so in this basis the first output decouples
    exactly (the many-outputs chapter, "Where the output-output blocks come from", (iii)).

    Example:
      >>> O = label_free_basis(3)
      >>> np.allclose(O.T @ O, np.eye(3)), np.allclose(O[:, 0], 1 / np.sqrt(3))
      (True, True)
    """
    q, _ = np.linalg.qr(np.column_stack([np.ones(n_outputs), np.eye(n_outputs)[:, 1:]]))
    return q * np.sign(q[0, 0])


def dead_coupling(U, n_outputs: int) -> float:
    """``U`` in the :func:`label_free_basis`: the Frobenius norm of the label-free output's blocks with the other
    outputs over that of the other outputs' whole block (both unchanged by rotations among those ``C - 1``; zero when
    the label-free output decouples)."""
    u = np.asarray(U, dtype=float)
    n = u.shape[0] // n_outputs
    rotate = np.kron(label_free_basis(n_outputs), np.eye(n))
    r = rotate.T @ u @ rotate
    return float(np.linalg.norm(r[:n, n:]) / np.linalg.norm(r[n:, n:]))


def width_findings(w: str, r: dict, n_outputs: int, valid: bool) -> Width:
    """:class:`Width` of one record ``r`` of :func:`compare_at` (``results["widths"][w]``)."""
    b = r.get("batch_means")
    noise = r["noise"]
    acc = {k: stats.paired_difference(r["correct"]["theory"], r["correct"][k]) for k in ("sampled", *COMPETITORS)}
    gaps = {k: r["errors"][k]["mean"] - r["errors"]["theory"]["mean"] for k in COMPETITORS}
    return Width(int(w), r.get("sampler", "nuts"), float(r["ratio"]), valid, b,
                 {k: distance(r["errors"][k]["U"], noise["U"], b) for k in ORDER_PARAMETERS},
                 {k: distance(r["errors"][k]["mean"], noise["mean"], b) for k in ORDER_PARAMETERS},
                 distance(r["theory_vs_sampled"]["cov"], noise["cov"], b),
                 {k: difference(g, noise["mean"]) for k, g in gaps.items()},
                 {k: difference(d["difference"], d["se"]) for k, d in acc.items()},
                 {k: _blocks(r[f"U_{k}"], n_outputs) for k in ("theory", "sampled")},
                 {k: dead_coupling(r[f"U_{k}"], n_outputs) for k in ("theory", "sampled")} if n_outputs > 2 else None)


def findings(results: dict) -> Findings:
    """:class:`Findings` of the chapter's ``results`` (of :func:`run`, as JSON)."""
    valid = valid_widths(results)
    widths = tuple(width_findings(w, r, results["config"]["n_classes"], w in valid)
                   for w, r in results["widths"].items())
    closer = [v.verdict for x in widths if x.valid for v in x.closer.values()]
    d = results["decoupling"]
    worst = max(d["off_block_max"], d["first_block_vs_single"]) / d["live_trace"]
    sc = results["scaling"]
    lo, hi = min(sc, key=int), max(sc, key=int)
    gain = difference(sc[hi]["gain"]["difference"] - sc[lo]["gain"]["difference"],
                      float(np.hypot(sc[hi]["gain"]["se"], sc[lo]["gain"]["se"])))
    shown = min(valid, key=int) if valid else max(results["widths"], key=int)
    return Findings(widths, tuple(int(w) for w in valid), len(closer), closer.count("holds"), int(shown),
                    Decoupling(float(worst), DECOUPLING_TOLERANCE, bool(worst <= DECOUPLING_TOLERANCE),
                               float(d["dead_trace"])),
                    ClassGain(int(lo), int(hi), gain))


def stored_findings(results: dict) -> Findings:
    """The :class:`Findings` stored in ``results["findings"]`` by :func:`run`, typed
    (:func:`paththeory.experiments.records.typed`: a renamed finding fails here)."""
    return typed(Findings, results["findings"], "multiclass findings")


@dataclass(frozen=True)
class SamplerSpeed:
    """One width of :data:`SAMPLER_SPEED`: per sampler its effective draws of ``U``'s slowest entry (``ess``), their
    R-hat, and the lowest and highest draws per second over the repeated runs (``rate``); Gibbs's lead in draws per
    second over NUTS, lowest and highest over the pairs of runs (``lead``)."""

    width: int
    ess: dict[str, float]
    r_hat: dict[str, float]
    rate: dict[str, tuple[float, float]]
    lead: tuple[float, float]


def sampler_speed() -> tuple[SamplerSpeed, ...]:
    """:class:`SamplerSpeed` of every width of :data:`SAMPLER_SPEED`.

    Example:
      >>> s = sampler_speed()[2]
      >>> s.width, round(s.lead[0], 1)
      (30, 4.0)
    """
    out = []
    for w, m in SAMPLER_SPEED.items():
        rate = {k: [m[k][0] / s for s in m[k][2]] for k in m}
        lead = [g / n for g, n in zip(rate["gibbs"], rate["nuts"])]
        out.append(SamplerSpeed(w, {k: m[k][0] for k in m}, {k: m[k][1] for k in m},
                                {k: (min(v), max(v)) for k, v in rate.items()}, (min(lead), max(lead))))
    return tuple(out)


# --------------------------------------------------------------------------- figures


@book_style
def plot_order_parameter(results: dict, width: str | None = None) -> Figure:
    """The theory's ``U*`` and the samples' ``U`` (titled with their sampler) at ``width`` (default
    :attr:`Findings.structure_width`), with the ``C x C`` output blocks."""
    w = str(stored_findings(results).structure_width if width is None else width)
    r = results["widths"][w]
    n_out = results["config"]["n_classes"]
    fig, axes = panel_grid(2, 3.6)
    labels = [f"c={c}" for c in range(n_out)]
    for ax, key, title in ((axes[0], "U_theory", f"theory, N = {w}"),
                           (axes[1], "U_sampled", f"{sampler_name(r)}, N = {w}")):
        U = np.asarray(r[key], dtype=float)
        matrix_heatmap(ax, U, labels, title, xlabel="output block $c'$ (4 paths each)",
                       ylabel="output block $c$")
    stamp_profile(fig, results["profile"])
    return fig


@book_style
def plot_errors(results: dict) -> Figure:
    """Distance from the samples of each order parameter's ``U`` (left) and mean predictor (right) against
    ``C |Pi| / N`` (log scale), relative to the theory's; bars: two Monte-Carlo errors on the theory's points;
    open markers where NUTS drew the samples, filled where the exact Gibbs sampler did."""
    fig, axes = panel_grid(2, 3.2)
    done = list(results["widths"].values())
    x = [r["ratio"] for r in done]
    styles = (("theory", "o-", "theory"), ("gp", "s--", "GP"), ("independent", "^:", "independent"),
              ("kronecker", "d-.", "nearest Kronecker"))
    colours = {"theory": COLOURS["theory"], "gp": COLOURS["gp"], "independent": COLOURS["contrast"],
               "kronecker": COLOURS["second"]}
    gibbs = [r.get("sampler") == "gibbs" for r in done]
    for ax, q in zip(axes, ("U", "mean")):
        for k, style, label in styles:
            y = [r["errors"][k][q] for r in done]
            yerr = [2 * r["noise"][q] for r in done] if k == "theory" else None
            ax.errorbar(x, y, yerr=yerr, fmt=style, color=colours[k], label=label, capsize=3, mfc="none")
            filled = [(xi, yi) for xi, yi, g in zip(x, y, gibbs) if g]
            if filled:
                ax.plot(*zip(*filled), style[0], color=colours[k])
        ax.axvline(0.4, color=COLOURS["chance"], lw=0.8)
        ax.set_xscale("log")
        ax.minorticks_off()
        ticks = sorted(set(x))
        ax.set_xticks(ticks, [f"{t:.2g}" for t in ticks])
        ax.set_xlabel("C|Π| / N")
        ax.set_ylabel("relative distance from the samples")
        ax.set_title("order parameter U" if q == "U" else "mean predictor")
        ax.set_ylim(bottom=0)
    legend_below(fig, [axes[0]], columns=4)
    stamp_profile(fig, results["profile"])
    return fig


@book_style
def plot_scaling(results: dict) -> Figure:
    """Theory and GP argmax accuracy against the number of classes at matched ``P / N`` (bars: two
    binomial SEs), with chance."""
    fig, axes = panel_grid(1, 3.0)
    ax = axes[0]
    sc = results["scaling"]
    cs = [int(c) for c in sc]
    n = results["config"]["n_test"]
    for key, style, label in (("theory", "o-", "finite width (theory)"), ("gp", "s--", "GP")):
        acc = [sc[str(c)][key] for c in cs]
        ax.errorbar(cs, acc, yerr=[2 * stats.standard_error(a, n // c * c) for a, c in zip(acc, cs)], fmt=style,
                    color=COLOURS[key], label=label, capsize=3)
    ax.plot(cs, [1 / c for c in cs], ":", color=COLOURS["chance"], label="chance")
    ax.set_xticks(cs)
    ax.set_xlabel("number of classes C")
    ax.set_ylabel("test accuracy (argmax)")
    legend_below(fig, [ax], columns=3)
    stamp_profile(fig, results["profile"])
    return fig
