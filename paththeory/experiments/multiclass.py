"""Many outputs: the multi-output theory on the C-class hidden-Markov-chain task (the book's own).

Used by the chapter ``book/many_outputs.md`` and ``paththeory reproduce multiclass``:

* :data:`SETTINGS` and :func:`settings`: sizes per profile;
* :func:`problem`: data, architecture and path features for ``C`` classes (cached);
* :func:`independent_order_parameter`: ``C`` single-output theories, one per label column, as one
  block-diagonal ``U``; :func:`nearest_kronecker`: the Kronecker product ``A (x) B`` (outputs x
  paths) nearest to a ``U`` in Frobenius norm (Van Loan and Pitsianis 1993);
* :func:`compare_at`: the theory against NUTS at one width, with the GP, the independent and the
  Kronecker order parameters; :func:`decoupling`: two classes with two outputs; :func:`class_scaling`:
  finite width against the GP for ``C = 2, 3, 5`` at matched ``P / N``;
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

import jax
import numpy as np
from matplotlib.figure import Figure

import paththeory
from paththeory import _io
from paththeory.experiments import stats
from paththeory._checks import check_flag
from paththeory.display.tables import markdown_table
from paththeory.experiments import jsonable
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
    ``n_classes`` classes), the temperature, the widths sampled with NUTS (``num_chains`` chains of
    ``num_warmup`` + ``num_samples`` iterations; ``time_limit`` seconds per run is a fail-safe against a
    stuck run, far above an honest run's time, :func:`paththeory.profiles.time_limit`), and the
    class scaling: ``C`` in ``scaling_classes`` with ``per_class`` training sequences per class at
    width ``N = P / p_over_n``."""

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


SETTINGS = {
    "smoke": Config(30, 20, 3, 60, 300, 0.01, (30, 15), 60, 80, 2, 3600.0, (2, 3, 5), 20, 1.5),
    "colab": Config(60, 20, 3, 90, 1500, 0.01, (60, 30, 20), 200, 300, 4, 3 * 3600.0, (2, 3, 5), 30, 1.5),
    "paper": Config(60, 20, 3, 90, 3000, 0.01, (120, 60, 30, 20), 300, 500, 4, 24 * 3600.0, (2, 3, 5), 40, 1.5),
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


def compare_at(prob: Problem, width: int, cfg: Config, *, seed: int = 0, progress: bool = False) -> dict:
    """The theory against NUTS at one width, and four other order parameters against both.

    Returns a dict with ``ratio`` (``C |Pi| / N``), the theory's ``U`` (and whether it converged),
    ``errors`` (per order parameter: ``U`` and mean-predictor distances to NUTS, relative to the
    theory's), ``noise`` (Monte-Carlo noise of NUTS's ``U``, mean and covariance), ``diagnostics``,
    ``accuracy`` and ``correct`` (argmax, per test sequence) of every predictor.
    """
    t, arch = cfg.temperature, prob.arch
    sol = Theory(arch, prob.train, prob.y_train).solve(width, t)
    candidates = {"theory": sol.U, "gp": arch.gp_scale * np.eye(len(sol.U)),
                  "independent": independent_order_parameter(prob, width, t),
                  "kronecker": nearest_kronecker(sol.U, prob.n_classes)}
    preds = {k: predictor(U, prob.train, prob.y_train, prob.test, t) for k, U in candidates.items()}
    samples: PosteriorSamples = sample_posterior(
        arch, prob.train, prob.y_train, width, t, features_test=prob.test, num_warmup=cfg.num_warmup,
        num_samples=cfg.num_samples, num_chains=cfg.num_chains, time_limit=time_limit(cfg.time_limit), seed=seed,
        progress_bar=progress)
    mean_th, cov_th = (np.asarray(a) for a in preds["theory"])
    out = {"width": int(width), "ratio": prob.n_classes * arch.n_paths / width, "U_theory": sol.U,
           "U_sampled": samples.U, "converged": bool(sol.report["converged"]),
           "diagnostics": samples.diagnostics}
    right = {k: task.correct(p[0], prob.classes_test) for k, p in preds.items()}
    right["nuts"] = task.correct(samples.mean, prob.classes_test)
    # every distance to NUTS relative to the theory's norm, as its Monte-Carlo noise is
    out["errors"] = {k: {"U": relative(candidates[k], samples.U, sol.U),
                         "mean": relative(preds[k][0], samples.mean, mean_th)} for k in candidates}
    out["theory_vs_nuts"] = {"U": relative(samples.U, sol.U), "mean": relative(samples.mean, mean_th),
                             "cov": relative(samples.var, cov_th)}
    out["noise"] = {"U": _noise(samples.U_draws, sol.U), "mean": _noise(samples.f_draws, mean_th)}
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
    results["widths"] = {}
    for i, w in enumerate(cfg.sample_widths):
        t = time.perf_counter()
        results["widths"][str(w)] = compare_at(prob, w, cfg, seed=i, progress=progress)
        timings[f"width {w}"] = time.perf_counter() - t
    t = time.perf_counter()
    two = problem(2, cfg.per_class * 2, cfg.n_test // 2 * 2, cfg.n_features, cfg.seq_len)
    results["decoupling"] = decoupling(two, min(cfg.sample_widths), cfg.temperature)
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
    results["environment"] = {"paththeory": paththeory.__version__, "jax": jax.__version__,
                              "backend": jax.default_backend()}
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
#: Row labels of the tables.
LABELS = {"theory": "theory", "nuts": "NUTS", "gp": "GP", "independent": "independent", "kronecker": "Kronecker"}


def multiclass_claims(results: dict) -> list[dict]:
    """Verdict rows, all :data:`~paththeory.experiments.claims.OWN_TEST`: per valid width, the theory's
    ``U`` within :data:`~paththeory.experiments.claims.U_TOLERANCE` of NUTS's; the theory's mean
    predictor closer to NUTS's than the GP's, the independent outputs' and the Kronecker ``U``'s
    (distance difference against the Monte-Carlo noise); argmax accuracy of the theory against each
    (paired); and finite width's gain over the GP larger at ``C = max`` than at ``C = min``."""
    rows = []
    for w in valid_widths(results):
        r = results["widths"][w]
        split = f"N = {w}"
        rel, noise = r["theory_vs_nuts"]["U"], r["noise"]["U"]
        rows.append(_row("u_nuts", "the theory's U matches NUTS's", split, rel,
                         f"Monte Carlo {noise:.1%}", stats.verdict(U_TOLERANCE - rel, noise),
                         f"relative error at most {U_TOLERANCE:.0%}", f"{rel:.1%}", OWN_TEST))
        for k, label in COMPETITORS.items():
            gap = r["errors"][k]["mean"] - r["errors"]["theory"]["mean"]
            rows.append(_row(f"mean_vs_{k}", f"NUTS's mean predictor lies closer to the theory than to {label}",
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


def nuts_table(results: dict) -> str:
    """Per sampled width: ``C |Pi| / N``, relative errors of the theory's ``U``, mean and covariance
    against NUTS (with the Monte-Carlo noise), R-hat, the smallest bulk ESS, time."""
    rows = []
    for w, r in results["widths"].items():
        d = r["diagnostics"]
        e, n = r["theory_vs_nuts"], r["noise"]
        rows.append([w, f"{r['ratio']:.2f}", f"{e['U']:.1%} ({n['U']:.1%})", f"{e['mean']:.1%} ({n['mean']:.1%})",
                     f"{e['cov']:.1%}", f"{d['r_hat_max']:.3f}", f"{d['ess_bulk_min']:.0f}", f"{d['seconds']:.0f} s"])
    return markdown_table(["N", "C|Π|/N", "U error (noise)", "mean error (noise)", "cov. error", "R-hat max",
                           "ESS min", "NUTS time"], rows)


def comparison_table(results: dict) -> str:
    """Per width and order parameter: distance of its ``U`` and of its mean predictor from NUTS's
    (relative to the theory's), and its argmax accuracy."""
    rows = []
    for w, r in results["widths"].items():
        for k in ("theory", *COMPETITORS):
            e = r["errors"][k]
            rows.append([w, LABELS[k], f"{e['U']:.1%}", f"{e['mean']:.1%}", f"{r['accuracy'][k]:.3f}"])
        rows.append([w, "NUTS", "", "", f"{r['accuracy']['nuts']:.3f}"])
    return markdown_table(["N", "U from", "U vs NUTS", "mean vs NUTS", "accuracy"], rows)


def accuracy_table(results: dict) -> str:
    """Argmax accuracy of every predictor and its paired difference from the theory's, per width."""
    rows = []
    for w, r in results["widths"].items():
        for k in ("nuts", *COMPETITORS):
            d = stats.paired_difference(r["correct"]["theory"], r["correct"][k])
            rows.append([w, LABELS[k], f"{r['accuracy'][k]:.3f}", f"{r['accuracy']['theory']:.3f}",
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
    """What the comparisons against NUTS say, from the verdict rows."""
    rows = [r for r in results["claims"] if r["id"].startswith("mean_vs_")]
    if not rows:
        return "No NUTS run at C|Π|/N ≤ 0.4: no comparison has a verdict."
    held = [r for r in rows if r["verdict"] == "holds"]
    others = [f"{COMPETITORS[r['id'][len('mean_vs_'):]]} at {r['split']} ({r['verdict']}: {r['measured']} from NUTS, "
              f"noise {r['noise'].split()[-1]})" for r in rows if r not in held]
    return (f"Of {len(rows)} comparisons of mean predictors (the GP, independent outputs and the nearest "
            f"Kronecker U, at {len(valid_widths(results))} width(s) with C|Π|/N ≤ 0.4), NUTS lies closer to the "
            f"full multi-output theory beyond twice the Monte-Carlo noise in {len(held)}"
            + ("." if not others else "; not beyond it against " + "; ".join(others) + "."))


# --------------------------------------------------------------------------- figures


@book_style
def plot_order_parameter(results: dict) -> Figure:
    """The theory's ``U*`` and NUTS's ``U`` at the first sampled width, with the ``C x C`` output blocks."""
    w = next(iter(results["widths"]))
    r = results["widths"][w]
    n_out = results["config"]["n_classes"]
    fig, axes = panel_grid(2, 3.6)
    labels = [f"c={c}" for c in range(n_out)]
    for ax, key, title in ((axes[0], "U_theory", f"theory, N = {w}"), (axes[1], "U_sampled", f"NUTS, N = {w}")):
        U = np.asarray(r[key], dtype=float)
        matrix_heatmap(ax, U, labels, title, xlabel="output block $c'$ (4 paths each)",
                       ylabel="output block $c$")
    stamp_profile(fig, results["profile"])
    return fig


@book_style
def plot_errors(results: dict) -> Figure:
    """Distance from NUTS of each order parameter's ``U`` (left) and mean predictor (right) against
    ``C |Pi| / N``, relative to the theory's; bars: two Monte-Carlo errors on the theory's points."""
    fig, axes = panel_grid(2, 3.2)
    done = list(results["widths"].values())
    x = [r["ratio"] for r in done]
    styles = (("theory", "o-", "theory"), ("gp", "s--", "GP"), ("independent", "^:", "independent"),
              ("kronecker", "d-.", "nearest Kronecker"))
    colours = {"theory": COLOURS["theory"], "gp": COLOURS["gp"], "independent": COLOURS["contrast"],
               "kronecker": COLOURS["second"]}
    for ax, q in zip(axes, ("U", "mean")):
        for k, style, label in styles:
            y = [r["errors"][k][q] for r in done]
            yerr = [2 * r["noise"][q] for r in done] if k == "theory" else None
            ax.errorbar(x, y, yerr=yerr, fmt=style, color=colours[k], label=label, capsize=3)
        ax.axvline(0.4, color=COLOURS["chance"], lw=0.8)
        ax.set_xlabel("C|Π| / N")
        ax.set_ylabel("relative distance from NUTS")
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
    """How large the theory's and NUTS's off-diagonal output blocks of ``U`` are against the diagonal ones."""
    n_out, n = results["config"]["n_classes"], results["n_paths"]
    parts = []
    for key, name in (("U_theory", "the theory's"), ("U_sampled", "NUTS's")):
        blocks = np.asarray(results["widths"][width][key], dtype=float).reshape(n_out, n, n_out, n)
        mask = ~np.eye(n_out, dtype=bool)
        off = np.linalg.norm(blocks.transpose(0, 2, 1, 3)[mask])
        diag = np.linalg.norm(blocks.transpose(0, 2, 1, 3)[~mask])
        parts.append(f"{off / diag:.2f} in {name}")
    return (f"At N = {width} the Frobenius norm of the off-diagonal output blocks of U, relative to that of the "
            f"diagonal blocks, is {' and '.join(parts)}.")
