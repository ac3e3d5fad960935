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
* :func:`compare_at`: the theory against the posterior samples at one width, with the GP, the independent
  and the Kronecker order parameters; :func:`decoupling`: two classes with two outputs;
  :func:`class_scaling`: finite width against the GP for ``C = 2, 3, 5`` at matched ``P / N``;
* :func:`multiclass_claims`: one verdict row per comparison (:mod:`paththeory.experiments.claims`);
* tables and figures for the chapter.

Relative errors are Frobenius norms, ``|X - X_theory| / |X_theory|``; their Monte-Carlo noise is
the Frobenius norm of the per-entry batch-means errors (:func:`paththeory.experiments.stats.batch_means_se`) on
the same scale. Accuracies are argmax decisions on the same test sequences, so every difference
has a paired standard error (:func:`paththeory.experiments.stats.paired_difference`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from paththeory import _io
from paththeory.experiments import stats
from paththeory._checks import check_flag
from paththeory.display.tables import markdown_table
from paththeory.experiments import SAMPLER_NAMES
from paththeory.experiments.records import environment, jsonable, samplers, schedule
from paththeory.experiments.claims import OWN_TEST, U_TOLERANCE, _paired_row, _row
from paththeory.model import Architecture, path_features
from paththeory.display.plots import COLOURS, book_style, legend_below, matrix_heatmap, panel_grid, stamp_profile
from paththeory.predict import predictor
from paththeory.profiles import choose, current_profile, time_limit
from paththeory.sampling import PosteriorSamples, sample_posterior
from paththeory.solve import Theory
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
#: load while the draws are the same in both runs. :func:`sampler_speed_table` shows it; :data:`SETTINGS`
#: follows it: Gibbs where its lead in draws per second is at least 2x in every run (from N = 30: four times
#: or more, growing with the width), NUTS below, where the two are within 1.5x of each other (Gibbs 0.9-1.0x
#: at N = 15, 1.2-1.5x at N = 20) and NUTS stays as the gradient-based reference.
SAMPLER_SPEED = {
    15: {"nuts": (55.9, 1.045, (17.5, 17.4)), "gibbs": (39.3, 1.061, (13.6, 12.3))},
    20: {"nuts": (58.6, 1.051, (19.4, 14.8)), "gibbs": (55.5, 1.045, (12.1, 11.3))},
    30: {"nuts": (73.9, 1.025, (20.4, 18.3)), "gibbs": (195.6, 1.019, (13.5, 11.4))},
    60: {"nuts": (76.3, 1.041, (29.2, 30.9)), "gibbs": (359.2, 1.012, (8.4, 12.4))},
    120: {"nuts": (75.3, 1.039, (40.1, 49.3)), "gibbs": (381.5, 1.009, (10.2, 14.7))},
    300: {"nuts": (34.2, 1.058, (411.4,)), "gibbs": (569.3, 1.009, (23.0,))},
}

SETTINGS = {
    # smoke: Gibbs at N = 30 and 120 (11-15 s each in SAMPLER_SPEED), in less time than NUTS took at N = 15
    # and 30 (17-18 s and 18-20 s); a third width would cost 15 s more. No width below 30, where NUTS would be
    # the sampler, is sampled: the colab and paper profiles sample N = 20.
    "smoke": Config(30, 20, 3, 60, 300, 0.01, (), 60, 80, 2, 3600.0, (2, 3, 5), 20, 1.5,
                    gibbs_widths=(30, 120), gibbs_warmup=100, gibbs_samples=400, gibbs_chains=2),
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
    """Data (seeds :data:`~paththeory.tasks.multiclass.TRAIN_SEED`, ``TEST_SEED``), architecture and path
    features (cached: its arrays are read-only)."""
    sizes = dict(n_features=n_features, seq_len=seq_len)
    arch = task.four_paths(**sizes)
    train = task.sample_task(n_train, n_classes=n_classes, seed=task.TRAIN_SEED, **sizes)
    test = task.sample_task(n_test, n_classes=n_classes, seed=task.TEST_SEED, **sizes)
    arrays = [np.array(a) for a in (path_features(arch, train.x), path_features(arch, test.x), train.y, test.classes)]
    for a in arrays:
        a.flags.writeable = False
    return Problem(arch, n_classes, *arrays)


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


def _noise(draws: np.ndarray, reference) -> float:
    """Frobenius norm of the batch-means errors of the mean of ``draws [chains, draws, ...]`` over
    ``|reference|_F``."""
    return float(np.linalg.norm(stats.batch_means_se(draws)) / np.linalg.norm(np.asarray(reference)))


def _covariance_noise(f_draws, reference) -> float:
    """The noise floor of the sampled output-output covariance ``[P_test, C, C]``: the Frobenius norm of the
    batch-means errors of the mean over draws of ``(f - f_mean)(f - f_mean)^T`` (``f_mean`` over all draws), with
    the batches of :func:`paththeory.experiments.stats.batch_means_se`, over ``|reference|_F``. The per-draw
    products are summed batch by batch, never held at once (``[chains, draws, P_test, C, C]`` would take hundreds
    of megabytes at the colab sizes)."""
    f = np.asarray(f_draws, dtype=float)  # [chains, draws, P_test, C]
    b = stats.batch_count(1, f.shape[1])
    size = f.shape[1] // b
    dev = f - f.reshape(-1, *f.shape[2:]).mean(axis=0)
    means = np.stack([np.einsum("dpc,dpe->pce", block, block) / size
                      for chain in dev for block in np.split(chain[: b * size], b)])
    se = means.std(axis=0, ddof=1) / np.sqrt(len(means))
    return float(np.linalg.norm(se) / np.linalg.norm(np.asarray(reference)))


def compare_at(prob: Problem, width: int, cfg: Config, *, sampler: str = "nuts", seed: int = 0,
               progress: bool = False) -> dict:
    """The theory against posterior samples at one width, drawn by ``sampler`` (``"nuts"`` or ``"gibbs"``,
    :func:`paththeory.sampling.posterior.sample_posterior`) with the profile's schedule for it
    (:func:`paththeory.experiments.records.schedule`), and four other order parameters against both.

    Returns a dict with ``sampler``, ``ratio`` (``C |Pi| / N``), the theory's ``U`` (and whether it
    converged), ``errors`` (per order parameter: ``U`` and mean-predictor distances to the samples', relative
    to the theory's), ``theory_vs_sampled`` (the samples' ``U``, mean and covariance against the theory's),
    ``noise`` (Monte-Carlo noise floors of the samples' ``U``, mean and covariance: :func:`_noise`,
    :func:`_covariance_noise`), ``diagnostics``, ``accuracy`` and
    ``correct`` (argmax, per test sequence) of every predictor, the samples' under ``"sampled"``.
    """
    t, arch = cfg.temperature, prob.arch
    sol = Theory(arch, prob.train, prob.y_train).solve(width, t)
    candidates = {"theory": sol.U, "gp": arch.gp_scale * np.eye(len(sol.U)),
                  "independent": independent_order_parameter(prob, width, t),
                  "kronecker": nearest_kronecker(sol.U, prob.n_classes)}
    preds = {k: predictor(U, prob.train, prob.y_train, prob.test, t) for k, U in candidates.items()}
    samples: PosteriorSamples = sample_posterior(
        arch, prob.train, prob.y_train, width, t, features_test=prob.test, method=sampler,
        **schedule(cfg, sampler), time_limit=time_limit(cfg.time_limit), seed=seed, progress_bar=progress)
    mean_th, cov_th = (np.asarray(a) for a in preds["theory"])
    out = {"width": int(width), "sampler": sampler, "ratio": prob.n_classes * arch.n_paths / width,
           "U_theory": sol.U, "U_sampled": samples.U, "converged": bool(sol.report["converged"]),
           "diagnostics": samples.diagnostics}
    right = {k: task.correct(p[0], prob.classes_test) for k, p in preds.items()}
    right["sampled"] = task.correct(samples.mean, prob.classes_test)
    # every distance to the samples relative to the theory's norm, as their Monte-Carlo noise is
    out["errors"] = {k: {"U": relative(candidates[k], samples.U, sol.U),
                         "mean": relative(preds[k][0], samples.mean, mean_th)} for k in candidates}
    out["theory_vs_sampled"] = {"U": relative(samples.U, sol.U), "mean": relative(samples.mean, mean_th),
                                "cov": relative(samples.var, cov_th)}
    out["noise"] = {"U": _noise(samples.U_draws, sol.U), "mean": _noise(samples.f_draws, mean_th),
                    "cov": _covariance_noise(samples.f_draws, cov_th)}
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
    prob = problem(cfg.n_classes, cfg.n_train, cfg.n_test, cfg.n_features, cfg.seq_len)
    results = {"profile": name, "config": asdict(cfg), "paths": list(task.PATH_NAMES),
               "n_paths": prob.arch.n_paths, "transition_probs": task.transition_probs(cfg.n_classes)}
    timings = {"problem": time.perf_counter() - start}
    sampled = samplers(cfg)
    results["samplers"] = {str(w): s for w, s in sampled.items()}
    results["widths"] = {}
    for i, (w, sampler) in enumerate(sampled.items()):
        t = time.perf_counter()
        results["widths"][str(w)] = compare_at(prob, w, cfg, sampler=sampler, seed=i, progress=progress)
        timings[f"width {w} ({sampler})"] = time.perf_counter() - t
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
    results["claims"] = multiclass_claims(results)
    if out_dir is not None:
        arrays = dict(train_features=prob.train, test_features=prob.test, y_train=prob.y_train,
                      classes_test=prob.classes_test, temperature=cfg.temperature)
        figures = {"order_parameter": lambda: plot_order_parameter(results),
                   "errors": lambda: plot_errors(results), "scaling": lambda: plot_scaling(results)}
        _io.write_outputs(Path(out_dir), results, arrays, figures)
    return results


# --------------------------------------------------------------------------- claims and tables


def valid_widths(results: dict) -> list[str]:
    """The sampled widths (keys) with ``C |Pi| / N <= 0.4``."""
    return [w for w, r in results["widths"].items() if r["ratio"] <= 0.4 + 1e-12]


#: The order parameters compared with the theory's, as the claims name them.
COMPETITORS = {"gp": "the GP", "independent": "independent outputs", "kronecker": "the nearest Kronecker U"}
#: Row labels of the tables (the samples' row also names its sampler).
LABELS = {"theory": "theory", "sampled": "samples", "gp": "GP", "independent": "independent",
          "kronecker": "Kronecker"}


def sampler_name(record: dict) -> str:
    """The name of the sampler that drew one width's record (``results["widths"][w]``; NUTS where the
    record names none)."""
    return SAMPLER_NAMES[record.get("sampler", "nuts")]


def multiclass_claims(results: dict) -> list[dict]:
    """Verdict rows, all :data:`~paththeory.experiments.claims.OWN_TEST`: per valid width, the theory's
    ``U`` within :data:`~paththeory.experiments.claims.U_TOLERANCE` of the samples'; the samples' mean
    predictor closer to the theory's than to the GP's, the independent outputs' and the Kronecker ``U``'s
    (distance difference against the Monte-Carlo noise); argmax accuracy of the theory against each
    (paired); and finite width's gain over the GP larger at ``C = max`` than at ``C = min``. Each row on
    samples names their sampler."""
    rows = []
    for w in valid_widths(results):
        r = results["widths"][w]
        split, name = f"N = {w}", sampler_name(r)
        rel, noise = r["theory_vs_sampled"]["U"], r["noise"]["U"]
        rows.append(_row("u_sampled", f"the theory's U matches the {name} samples'", split, rel,
                         f"Monte Carlo {noise:.1%}", stats.verdict(U_TOLERANCE - rel, noise),
                         f"relative error at most {U_TOLERANCE:.0%}", f"{rel:.1%}", OWN_TEST))
        for k, label in COMPETITORS.items():
            gap = r["errors"][k]["mean"] - r["errors"]["theory"]["mean"]
            rows.append(_row(f"mean_vs_{k}", f"the {name} samples' mean predictor lies closer to the theory than "
                             f"to {label}",
                             split, gap, f"Monte Carlo {r['noise']['mean']:.1%}",
                             stats.verdict(gap, r["noise"]["mean"]), "not in the paper",
                             f"{r['errors'][k]['mean']:.1%} vs {r['errors']['theory']['mean']:.1%}", OWN_TEST))
            d = stats.paired_difference(r["correct"]["theory"], r["correct"][k])
            rows.append(_paired_row(f"acc_vs_{k}", f"the theory's argmax accuracy beats that of {label}", split, d,
                                    "not in the paper", OWN_TEST))
    sc = results["scaling"]
    lo, hi = sc[min(sc, key=int)], sc[max(sc, key=int)]
    diff = hi["gain"]["difference"] - lo["gain"]["difference"]
    se = float(np.hypot(hi["gain"]["se"], lo["gain"]["se"]))
    rows.append(_row("gain_vs_classes", f"finite width helps more with C = {max(sc, key=int)} classes than with "
                     f"C = {min(sc, key=int)}", None, diff, f"SE {100 * se:.1f} points (independent test sets)",
                     stats.verdict(diff, se), "not in the paper", f"{100 * diff:+.1f} points", OWN_TEST))
    return rows


def sampled_table(results: dict) -> str:
    """Per sampled width: its sampler, ``C |Pi| / N``, relative errors of the theory's ``U``, mean and
    covariance against the samples' (each with its Monte-Carlo noise floor), R-hat, the smallest bulk ESS, the effective
    draws of ``U``'s slowest entry per second and the sampler's time."""
    rows = []
    for w, r in results["widths"].items():
        d = r["diagnostics"]
        e, n = r["theory_vs_sampled"], r["noise"]
        rows.append([w, sampler_name(r), f"{r['ratio']:.2f}", f"{e['U']:.1%} ({n['U']:.1%})",
                     f"{e['mean']:.1%} ({n['mean']:.1%})", f"{e['cov']:.1%} ({n['cov']:.1%})",
                     f"{d['r_hat_max']:.3f}",
                     f"{d['ess_bulk_min']:.0f}", f"{d['ess_per_second']:.1f}", f"{d['seconds']:.0f} s"])
    return markdown_table(["N", "sampler", "C|Π|/N", "U error (noise)", "mean error (noise)", "cov. error (noise)",
                           "R-hat max", "ESS min", "ESS/s of U", "time"], rows)


def _range(values) -> str:
    """``"a"`` or ``"a–b"``, smallest to largest: whole numbers from 10, one decimal from 1, two decimals from
    0.1, two significant figures below."""
    def fmt(v: float) -> str:
        return f"{v:.0f}" if v >= 10 else f"{v:.1f}" if v >= 1 else f"{v:.2f}" if v >= 0.1 else f"{v:.2g}"

    lo, hi = min(values), max(values)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}–{fmt(hi)}"


def sampler_speed_table(results: dict | None = None) -> str:
    """:data:`SAMPLER_SPEED` for a reader: per width, each sampler's effective draws of ``U``'s slowest entry
    (with their R-hat) and per second (over the repeated runs), Gibbs's lead, and, given ``results``, the
    sampler its profile uses there."""
    chosen = {} if results is None else results.get("samplers", {})
    rows = []
    for w, m in SAMPLER_SPEED.items():
        rate = {k: [m[k][0] / s for s in m[k][2]] for k in m}
        lead = [g / n for g, n in zip(rate["gibbs"], rate["nuts"])]
        row = [w, *(f"{m[k][0]:.0f} ({m[k][1]:.3f})" for k in ("nuts", "gibbs")),
               *(_range(rate[k]) for k in ("nuts", "gibbs")), f"{_range(lead)}×"]
        if results is not None:
            row.append(SAMPLER_NAMES[chosen[str(w)]] if str(w) in chosen else "not sampled")
        rows.append(row)
    head = ["N", "NUTS: ESS of U (R-hat)", "Gibbs: ESS of U (R-hat)", "NUTS: ESS/s", "Gibbs: ESS/s", "Gibbs/NUTS"]
    return markdown_table(head + (["this profile"] if results is not None else []), rows)


def sampler_sentence(results: dict) -> str:
    """Which sampler drew each width of ``results``, with the profile's chains for each
    (:func:`paththeory.experiments.records.schedule`)."""
    by: dict[str, list[str]] = {}
    for w, s in results.get("samplers", {}).items():
        by.setdefault(s, []).append(w)
    parts = []
    for s, widths in by.items():
        sch = schedule(results["config"], s)
        step, warm = ("draws", "warm-up steps") if s == "nuts" else ("sweeps", "warm-up sweeps")
        chains = sch["num_chains"]
        name = "NUTS" if s == "nuts" else "the exact Gibbs sampler"
        parts.append(f"N = {', '.join(widths)} with {name} ({chains} chain{'s' if chains > 1 else ''} of "
                     f"{sch['num_samples']} {step} after {sch['num_warmup']} {warm})")
    if not parts:
        return "This run samples no width."
    return "This run samples " + " and ".join(parts) + "."


def comparison_table(results: dict) -> str:
    """Per width and order parameter: distance of its ``U`` and of its mean predictor from the samples'
    (relative to the theory's), and its argmax accuracy; the samples' row names their sampler."""
    rows = []
    for w, r in results["widths"].items():
        for k in ("theory", *COMPETITORS):
            e = r["errors"][k]
            rows.append([w, LABELS[k], f"{e['U']:.1%}", f"{e['mean']:.1%}", f"{r['accuracy'][k]:.3f}"])
        rows.append([w, f"{LABELS['sampled']} ({sampler_name(r)})", "", "", f"{r['accuracy']['sampled']:.3f}"])
    return markdown_table(["N", "U from", "U vs samples", "mean vs samples", "accuracy"], rows)


def accuracy_table(results: dict) -> str:
    """Argmax accuracy of every predictor and its paired difference from the theory's, per width (the
    samples' row names their sampler)."""
    rows = []
    for w, r in results["widths"].items():
        for k in ("sampled", *COMPETITORS):
            d = stats.paired_difference(r["correct"]["theory"], r["correct"][k])
            label = f"{LABELS[k]} ({sampler_name(r)})" if k == "sampled" else LABELS[k]
            rows.append([w, label, f"{r['accuracy'][k]:.3f}", f"{r['accuracy']['theory']:.3f}",
                         f"{100 * d['difference']:+.1f} ± {100 * d['se']:.1f}"])
    return markdown_table(["N", "other", "its accuracy", "theory's", "theory − other (points, paired SE)"], rows)


def scaling_table(results: dict) -> str:
    """Per number of classes: sizes, theory and GP accuracy, and the gain with its paired SE."""
    rows = [[c, r["n_train"], f"{r['width']:.1f}", f"{r['ratio']:.2f}", f"{r['chance']:.2f}", f"{r['theory']:.3f}",
             f"{r['gp']:.3f}", f"{100 * r['gain']['difference']:+.1f} ± {100 * r['gain']['se']:.1f}"]
            for c, r in results["scaling"].items()]
    return markdown_table(["C", "P", "N", "C|Π|/N", "chance", "theory", "GP", "gain (points, paired SE)"], rows)


def scaling_sentence(results: dict) -> str:
    """Whether finite width helps more with more classes, from the class-scaling numbers."""
    row = {r["id"]: r for r in results["claims"]}["gain_vs_classes"]
    sc = results["scaling"]
    gains = ", ".join(f"{100 * r['gain']['difference']:+.1f} ± {100 * r['gain']['se']:.1f} points at C = {c}"
                      for c, r in sc.items())
    reading = {"holds": "helps more with more classes", "fails": "helps less with more classes",
               "within noise": "does not help measurably more or less with more classes"}[row["verdict"]]
    return (f"Finite width's gain over the GP: {gains}. The difference between the largest and the smallest C "
            f"is {row['measured']} ({row['noise']}), so at these sizes finite width {reading}.")


def comparison_sentence(results: dict) -> str:
    """What the comparisons against the samples say, from the verdict rows."""
    rows = [r for r in results["claims"] if r["id"].startswith("mean_vs_")]
    if not rows:
        return "No sampled width at C|Π|/N ≤ 0.4: no comparison has a verdict."
    held = [r for r in rows if r["verdict"] == "holds"]
    others = [f"{COMPETITORS[r['id'][len('mean_vs_'):]]} at {r['split']} ({r['verdict']}: {r['measured']} from the "
              f"samples, noise {r['noise'].split()[-1]})" for r in rows if r not in held]
    return (f"Of {len(rows)} comparisons of mean predictors (the GP, independent outputs and the nearest "
            f"Kronecker U, at {len(valid_widths(results))} width(s) with C|Π|/N ≤ 0.4), the samples lie closer to "
            f"the full multi-output theory beyond twice the Monte-Carlo noise in {len(held)}"
            + ("." if not others else "; not beyond it against " + "; ".join(others) + "."))


# --------------------------------------------------------------------------- figures


def structure_width(results: dict) -> str:
    """The width (key of ``results["widths"]``) whose ``U`` the chapter draws: the narrowest with
    ``C |Pi| / N <= 0.4`` (:func:`valid_widths`), where the finite-width structure is largest while the
    theory is expected to hold; the widest sampled width when none is."""
    valid = valid_widths(results)
    return min(valid, key=int) if valid else max(results["widths"], key=int)


@book_style
def plot_order_parameter(results: dict, width: str | None = None) -> Figure:
    """The theory's ``U*`` and the samples' ``U`` (titled with their sampler) at ``width`` (default
    :func:`structure_width`), with the ``C x C`` output blocks."""
    w = structure_width(results) if width is None else str(width)
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


#: Largest deviation from exact decoupling, relative to the live block's trace, that counts as "exact"
#: (the solver converges to a gradient of about 1e-9 in units of S/N).
DECOUPLING_TOLERANCE = 1e-6


def decoupling_sentence(d: dict) -> str:
    """Whether two outputs for two classes decouple into the single-output theory, from :func:`decoupling`."""
    worst = max(d["off_block_max"], d["first_block_vs_single"]) / d["live_trace"]
    if worst <= DECOUPLING_TOLERANCE:
        return (f"Both deviations are below {DECOUPLING_TOLERANCE:.0e} of the live block's trace: two outputs for "
                f"two classes are the single-output theory of the paper plus an output with no labels, whose "
                f"U has shrunk to a trace of {d['dead_trace']:.2f}.")
    return (f"The deviations reach {worst:.1e} of the live block's trace, above {DECOUPLING_TOLERANCE:.0e}: "
            "the outputs do not decouple to the solver's accuracy here.")


def block_sentence(results: dict, width: str) -> str:
    """How large the theory's and the samples' off-diagonal output blocks of ``U`` are against the diagonal
    ones."""
    n_out, n = results["config"]["n_classes"], results["n_paths"]
    parts = []
    sampled = f"the {sampler_name(results['widths'][str(width)])} samples'"
    for key, name in (("U_theory", "the theory's"), ("U_sampled", sampled)):
        blocks = np.asarray(results["widths"][width][key], dtype=float).reshape(n_out, n, n_out, n)
        mask = ~np.eye(n_out, dtype=bool)
        off = np.linalg.norm(blocks.transpose(0, 2, 1, 3)[mask])
        diag = np.linalg.norm(blocks.transpose(0, 2, 1, 3)[~mask])
        parts.append(f"{off / diag:.2f} in {name}")
    return (f"At N = {width} the Frobenius norm of the off-diagonal output blocks of U, relative to that of the "
            f"diagonal blocks, is {' and '.join(parts)}.")
