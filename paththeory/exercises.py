"""Exercises of the book: automatic checks and student versions of the chapters.

An exercise in a chapter is one code cell tagged ``exercise``. Its solution sits between
``### BEGIN SOLUTION`` and ``### END SOLUTION``, stores the result in ``answer`` and the cell
ends with ``check("<chapter>.<name>", answer)``. Every check recomputes the truth with the
package and compares with a stated tolerance; a wrong answer raises an ``AssertionError``
that says what was expected.

* :func:`check` runs the check of one exercise; :data:`EXERCISES` lists them all.
* :func:`student_version` replaces every solution by ``raise NotImplementedError(...)``.
* :func:`write_student_notebooks` writes the student notebooks of a book directory.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_CHECK_CALL = re.compile(r"""check\(\s*["']([\w.]+)["']""")
_SOLUTION = re.compile(r"^([ \t]*)" + re.escape(BEGIN) + r"[^\n]*\n.*?^[ \t]*" + re.escape(END) + r"[^\n]*$",
                       re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Exercise:
    """One exercise: its task in a sentence and the function that checks an answer."""

    task: str
    checker: Callable[[Any], str]


# --------------------------------------------------------------------------- comparisons


def _close(name: str, answer, truth, rtol: float = 1e-6, atol: float = 1e-9) -> None:
    """Raise an ``AssertionError`` unless ``answer`` equals ``truth`` within the tolerances."""
    got = np.asarray(answer, dtype=float)
    want = np.asarray(truth, dtype=float)
    if got.shape != want.shape:
        raise AssertionError(f"{name}: expected an answer of shape {want.shape}, got shape {got.shape}.")
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        raise AssertionError(
            f"{name}: not quite. Expected {np.round(want, 6)} (relative tolerance {rtol:g}, absolute {atol:g}), "
            f"got {np.round(got, 6)}."
        )


# --------------------------------------------------------------------------- shared exercise data


def model_problem(readout: str = "first"):
    """The small network of the model exercises: ``(arch, params, x)``, L = 2, heads (3, 2).

    Example:
      >>> arch, params, x = model_problem()
      >>> arch.heads, x.shape
      ((3, 2), (4, 5, 6))
    """
    import jax

    import paththeory as pt

    rng = np.random.default_rng(0)
    layers = [pt.QKAttention(rng.normal(size=(h, 3, 6)), rng.normal(size=(h, 3, 6))) for h in (3, 2)]
    arch = pt.Architecture(layers, readout=readout)
    params = pt.sample_prior(arch, 8, 6, jax.random.PRNGKey(1))
    return arch, params, rng.normal(size=(4, 5, 6))


@functools.lru_cache(maxsize=None)
def toy_problem(n_train: int = 100, n_test: int = 1000):
    """The toy needle task of the GP-vs-finite exercises: ``(arch, f_train, y_train, f_test, y_test)``.

    Example:
      >>> arch, f_train, y_train, f_test, y_test = toy_problem(10, 20)
      >>> f_train.shape, f_test.shape
      ((10, 4, 48), (20, 4, 48))
    """
    import paththeory as pt
    from paththeory.tasks import toy

    arch = toy.architecture()
    train = toy.sample_task(n_train, seed=toy.TRAIN_SEED)
    test = toy.sample_task(n_test, seed=toy.TEST_SEED)
    return arch, pt.path_features(arch, train.x), train.y, pt.path_features(arch, test.x), test.y


@functools.lru_cache(maxsize=None)
def markov_problem(n_train: int = 100, n_test: int = 1000):
    """The four-path Markov task of the Markov exercises: ``(arch, f_train, y_train, f_test, y_test)``.

    Example:
      >>> arch, f_train, y_train, f_test, y_test = markov_problem(10, 20)
      >>> f_train.shape, f_test.shape
      ((10, 4, 231), (20, 4, 231))
    """
    from paththeory.experiments.markov import problem

    prob = problem("four_paths", n_train, n_test)
    return prob.arch, prob.train, prob.y_train, prob.test, prob.y_test


def _gp_accuracy(problem, paths: list[int], temperature: float) -> float:
    from paththeory.predict import accuracy, predictor

    arch, f_train, y_train, f_test, y_test = problem
    U = arch.gp_scale * np.diag(np.isin(np.arange(arch.n_paths), paths).astype(float))
    return accuracy(predictor(U, f_train, y_train, f_test, temperature)[0], y_test)


OMNIGLOT_SPLITS = ("train", "validation", "test")


class OmniglotProblem(NamedTuple):
    """Data of the Omniglot and pruning exercises (:func:`omniglot_problem`).

    ``network``: the shipped :class:`paththeory.training.Checkpoint`; ``x``, ``y`` and ``features``:
    dicts over ``"train"``, ``"validation"`` and ``"test"`` (sequences of training, validation and
    held-out characters) of tokens ``[P, 48, 64]``, targets ``[P]`` (first half ``+1``) and path
    features ``[P, 16, 64]``. The arrays are read-only.
    """

    network: Any
    x: dict
    y: dict
    features: dict


@functools.lru_cache(maxsize=None)
def omniglot_problem(n: int = 200) -> OmniglotProblem:
    """The trained network and ``n`` balanced sequences per split for the Omniglot and pruning exercises.

    The sequences are those of :func:`paththeory.experiments.omniglot.build_sequences` with ``n``
    sequences per split (seed 0), whatever the profile; needs the Omniglot files (:mod:`paththeory.data`).

    Example:
      >>> network, x, y, features = omniglot_problem(20)
      >>> network.architecture.heads, x["test"].shape, features["train"].shape
      ((4, 4), (20, 48, 192), (20, 16, 192))
    """
    import dataclasses

    from paththeory.experiments import omniglot

    network = omniglot.trained_network()
    cfg = dataclasses.replace(omniglot.settings("smoke"), n_train=n, n_validation=n, n_test=n, sample_n_train=0,
                              score_train_sizes=())
    seqs = omniglot.build_sequences(cfg, network)
    x = {s: seqs.x[s] for s in OMNIGLOT_SPLITS}
    y = {s: seqs.y[s] for s in OMNIGLOT_SPLITS}
    features = omniglot.build_features(network.architecture, dataclasses.replace(seqs, x=x))
    for arrays in (x, y, features):
        for a in arrays.values():
            a.flags.writeable = False
    return OmniglotProblem(network, x, y, features)


# --------------------------------------------------------------------------- the model chapter


def _model_n_paths(answer) -> str:
    import paththeory as pt

    layers = [pt.ScoreAttention(np.zeros((h, 2, 2))) for h in (3, 2, 4)]
    truth = pt.Architecture(layers).n_paths
    _close("model.n_paths", answer, truth, rtol=0, atol=0)
    return f"{truth} paths: one head per layer, 3 x 2 x 4 choices."


def _model_path_expansion(answer) -> str:
    import paththeory as pt

    arch, params, x = model_problem("first")
    _close("model.path_expansion", answer, pt.network_output(arch, params, x), rtol=1e-8, atol=1e-10)
    return "the sum over the 6 paths equals the layer-by-layer forward pass (readout = first token)."


def _model_gp_kernel(answer) -> str:
    import paththeory as pt
    from paththeory.kernels import gp_kernel

    arch, _, x = model_problem("mean")
    arch = pt.Architecture(arch.attention, readout="mean", variances=(1.0, 0.5, 2.0, 3.0))
    _close("model.gp_kernel", answer, gp_kernel(arch, pt.path_features(arch, x)), rtol=1e-8, atol=1e-12)
    return f"K_GP = {arch.gp_scale:g} x sum_pi C^(pi pi) (gp_scale = sigma_a^2 sigma_1^2 sigma_2^2)."


# --------------------------------------------------------------------------- the derivation chapter

READOUT_SETUP = {"trace": 2.5, "widths": (10.0, 10.0, 30.0), "heads": (2, 3), "variances": (1.0, 1.0, 0.8, 1.5)}
GP_SETUP = {"heads": (2, 3), "variances": (1.0, 0.6, 1.7, 2.1)}


def _derivation_readout_root(answer) -> str:
    from paththeory.action import readout_order_parameter

    s = READOUT_SETUP
    truth = float(readout_order_parameter(s["trace"], s["widths"], s["heads"], s["variances"]))
    _close("derivation.readout_root", answer, truth, rtol=1e-8)
    return f"U_a = {truth:.6f}, the positive root of the quadratic."


def _derivation_gp_point(answer) -> str:
    from paththeory.action import gp_order_parameters

    truth = gp_order_parameters(GP_SETUP["heads"], GP_SETUP["variances"])
    if not isinstance(answer, (list, tuple)) or len(answer) != len(truth):
        raise AssertionError(f"derivation.gp_point: expected a list of {len(truth)} matrices [U^(1), U^(2)].")
    for l, (a, t) in enumerate(zip(answer, truth)):
        _close(f"derivation.gp_point, U^({l + 1})", a, t)
    return f"U^(1) = {truth[0][0, 0]:.4g} I (6 x 6) and U^(2) = {truth[1][0, 0]:.4g} I (3 x 3)."


def _derivation_single_path(answer) -> str:
    from paththeory.action import single_path_entropy_minimum

    truth = float(single_path_entropy_minimum(2.0, 3))
    _close("derivation.single_path", answer, truth, rtol=1e-5)
    return f"min over the inner order parameters = {truth:.6f} = 4 * 2^(1/4) - ln 2."


# --------------------------------------------------------------------------- the GP-vs-finite chapter

TOY_WIDTHS = (3, 10, 30, 100, 300, 1000, 3000)


@functools.lru_cache(maxsize=None)
def _toy_width_within_10_percent() -> float:
    from paththeory.solve import Theory

    arch, f_train, y_train, _, _ = toy_problem()
    gp = arch.gp_scale * np.eye(arch.n_paths)
    sols = Theory(arch, f_train, y_train).sweep(list(TOY_WIDTHS), 1.0)
    close = [w for w, s in zip(TOY_WIDTHS, sols) if np.linalg.norm(s.U - gp) <= 0.1 * np.linalg.norm(gp)]
    return float(min(close))


def _gvf_good_path(answer) -> str:
    truth = _gp_accuracy(toy_problem(), [0], 1.0)
    _close("gp_vs_finite.good_path", answer, truth, rtol=0, atol=1e-9)
    return f"test accuracy {truth:.3f} with the good path alone (all paths: {_gp_accuracy(toy_problem(), [0, 1, 2, 3], 1.0):.3f})."


def _gvf_width_10(answer) -> str:
    truth = _toy_width_within_10_percent()
    _close("gp_vs_finite.width_10", answer, truth, rtol=0, atol=0)
    return f"from N = {truth:g} on, ||U* - U_GP||_F is within 10% of ||U_GP||_F."


@functools.lru_cache(maxsize=None)
def _toy_top_overlaps() -> tuple[float, float]:
    from paththeory.kernels import gp_kernel, kernel_matrix
    from paththeory.predict import pc_label_overlap
    from paththeory.solve import Theory

    arch, f_train, y_train, _, _ = toy_problem()
    U = Theory(arch, f_train, y_train).solve(5, 1.0).U
    return (float(pc_label_overlap(gp_kernel(arch, f_train), y_train, 1)[0]),
            float(pc_label_overlap(kernel_matrix(U, f_train), y_train, 1)[0]))


def _gvf_alignment(answer) -> str:
    truth = _toy_top_overlaps()
    _close("gp_vs_finite.alignment", answer, truth, rtol=1e-4, atol=1e-6)
    return f"top-PC overlap: K_GP {truth[0]:.3f}, K_U* at N = 5 {truth[1]:.3f}."


# --------------------------------------------------------------------------- the Markov chapter


def _markov_agreement(answer) -> str:
    from paththeory.tasks import markov

    data = markov.sample_task(200, seed=1)
    agree = (data.states[:, 1:] == data.states[:, :-1]).mean(axis=1)
    truth = [agree[data.y > 0].mean(), agree[data.y < 0].mean()]
    _close("markov.agreement", answer, truth, rtol=1e-9)
    return f"agreeing neighbours: {truth[0]:.3f} for y = +1 (expected 0.7), {truth[1]:.3f} for y = -1 (0.3)."


def _markov_good_path(answer) -> str:
    truth = _gp_accuracy(markov_problem(), [0], 0.01)
    _close("markov.good_path", answer, truth, rtol=0, atol=1e-9)
    return f"GP accuracy of the good path alone: {truth:.3f}."


@functools.lru_cache(maxsize=None)
def _markov_u_gd() -> float:
    from paththeory.solve import Theory

    arch, f_train, y_train, _, _ = markov_problem()
    return float(Theory(arch, f_train, y_train).solve(10, 0.01).U[0, 2])


def _markov_u_gd_check(answer) -> str:
    truth = _markov_u_gd()
    _close("markov.u_gd", answer, truth, rtol=1e-3, atol=1e-5)
    return f"U*_gd = {truth:.4f} at N = 10: the good and denoising paths are anti-correlated."


# --------------------------------------------------------------------------- the Omniglot chapter

OMNIGLOT_GP_TEMPERATURES = (0.05, 0.25, 1.0)


def _omniglot_patches(answer) -> str:
    from paththeory.tasks.omniglot import encode_images

    image = np.random.default_rng(0).integers(0, 256, (32, 32), dtype=np.uint8)
    _close("omniglot.patches", answer, encode_images(image[None])[0], rtol=1e-9, atol=1e-9)
    return "16 patches of 64 pixels, row-major, each LayerNormed: the tokens' image part (encode_images)."


def _omniglot_gd_accuracy(answer) -> str:
    from paththeory.training import evaluate

    network, x, y, _ = omniglot_problem()
    truth = evaluate(network, x["test"], y["test"])
    _close("omniglot.gd_accuracy", answer, truth, rtol=0, atol=1e-12)
    noise = np.sqrt(truth * (1 - truth) / len(y["test"]))
    return (f"the trained network labels {truth:.3f} of {len(y['test'])} held-out sequences correctly "
            f"(standard error {noise:.3f}; chance is 0.5).")


@functools.lru_cache(maxsize=None)
def _omniglot_gp_selection() -> tuple[float, float, float]:
    from paththeory.experiments.omniglot import gp_accuracies, select_temperature

    network, _, y, features = omniglot_problem()
    temps = OMNIGLOT_GP_TEMPERATURES
    acc = gp_accuracies(network.architecture, features, y, temps, splits=("validation", "test"))
    chosen = float(select_temperature(acc["validation"], temps))
    return chosen, float(acc["test"][temps.index(chosen)]), float(acc["test"].max())


def _omniglot_gp_temperature(answer) -> str:
    chosen, truth, best_test = _omniglot_gp_selection()
    _close("omniglot.gp_temperature", answer, truth, rtol=0, atol=1e-12)
    return (f"T = {chosen:g} is best on validation and gives test accuracy {truth:.3f}; the best test "
            f"accuracy over T, {best_test:.3f}, would be an optimistic estimate.")


# --------------------------------------------------------------------------- the pruning chapter


def _pruning_head_scores(answer) -> str:
    from paththeory.pruning import head_scores

    a = np.random.default_rng(0).normal(size=(16, 16))
    truth = np.stack(head_scores(a @ a.T / 16, (4, 4)))
    _close("pruning.head_scores", answer, truth, rtol=1e-12, atol=1e-12)
    layer, head = np.unravel_index(np.argmin(truth), truth.shape)
    return f"the lowest score, {truth.min():.3f}, is that of head {head} of layer {layer}."


def _pruning_path_removal(answer) -> str:
    import paththeory as pt
    from paththeory.pruning import head_mask

    network, x, _, _ = omniglot_problem()
    arch = network.architecture
    truth = pt.network_output(arch, network.params, x["test"][:8], head_mask=head_mask(arch.heads, [(0, 1)]))
    _close("pruning.path_removal", answer, truth, rtol=1e-8, atol=1e-12)
    return "dropping the 4 paths through head 1 of layer 0 and rescaling by sqrt(4/3) is pruning that head."


@functools.lru_cache(maxsize=None)
def _omniglot_lowest_two() -> tuple[list, float, float]:
    from paththeory.experiments.omniglot import head_scores, pruned_accuracy
    from paththeory.solve import Theory

    network, x, y, features = omniglot_problem()
    arch = network.architecture
    U = Theory(arch, features["train"], y["train"]).solve(10, 0.25).U
    pair = [tuple(lh) for lh in head_scores(U, arch.heads)["order"][:2]]
    return (pair, pruned_accuracy(network, x["test"], y["test"], pair),
            pruned_accuracy(network, x["test"], y["test"], []))


def _pruning_lowest_two(answer) -> str:
    pair, truth, full = _omniglot_lowest_two()
    _close("pruning.lowest_two", answer, truth, rtol=0, atol=1e-12)
    return (f"without heads {pair[0]} and {pair[1]} (layer, head), the lowest scores, the test accuracy is "
            f"{truth:.3f} (unpruned {full:.3f}).")


EXERCISES: dict[str, Exercise] = {
    "model.n_paths": Exercise("number of paths of a network with heads (3, 2, 4)", _model_n_paths),
    "model.path_expansion": Exercise("f(x) as a sum over paths, readout = first token", _model_path_expansion),
    "model.gp_kernel": Exercise("GP kernel from path features with non-unit variances", _model_gp_kernel),
    "derivation.readout_root": Exercise("U_a from its quadratic equation", _derivation_readout_root),
    "derivation.gp_point": Exercise("the GP point of every order parameter", _derivation_gp_point),
    "derivation.single_path": Exercise("single-path entropy minimum by numerical minimisation", _derivation_single_path),
    "gp_vs_finite.good_path": Exercise("GP test accuracy of the good path alone", _gvf_good_path),
    "gp_vs_finite.width_10": Exercise("smallest width with U* within 10% of the GP point", _gvf_width_10),
    "gp_vs_finite.alignment": Exercise("top-PC label overlap of K_GP and K_U*", _gvf_alignment),
    "markov.agreement": Exercise("fraction of agreeing neighbours per class", _markov_agreement),
    "markov.good_path": Exercise("GP test accuracy of the good path alone", _markov_good_path),
    "markov.u_gd": Exercise("the good-denoising entry of U* at N = 10", _markov_u_gd_check),
    "omniglot.patches": Exercise("the 16 LayerNormed 8 x 8 patches of a 32 x 32 image", _omniglot_patches),
    "omniglot.gd_accuracy": Exercise("test accuracy of the trained network", _omniglot_gd_accuracy),
    "omniglot.gp_temperature": Exercise("GP test accuracy at the validation-selected temperature",
                                        _omniglot_gp_temperature),
    "pruning.head_scores": Exercise("normalised head scores from a given order parameter", _pruning_head_scores),
    "pruning.path_removal": Exercise("pruning a head as removing its paths from the path expansion",
                                     _pruning_path_removal),
    "pruning.lowest_two": Exercise("test accuracy without the two lowest-scoring heads", _pruning_lowest_two),
}


def check(exercise_id: str, answer) -> None:
    """Check ``answer`` for exercise ``exercise_id``: print a short message if right, else raise.

    Raises:
      KeyError: for an unknown exercise id.
      AssertionError: when the answer is wrong (the message says what was expected).

    Example:
      >>> check("model.n_paths", 24)
      Correct (model.n_paths): 24 paths: one head per layer, 3 x 2 x 4 choices.
    """
    if exercise_id not in EXERCISES:
        raise KeyError(f"unknown exercise {exercise_id!r}; known: {', '.join(EXERCISES)}.")
    if answer is None:
        raise AssertionError(f"{exercise_id}: no answer given (set `answer` in the solution).")
    print(f"Correct ({exercise_id}): {EXERCISES[exercise_id].checker(answer)}")


# --------------------------------------------------------------------------- student notebooks


def exercise_id(source: str) -> str | None:
    """The id in the ``check("...", ...)`` call of a cell's source, or ``None``.

    Example:
      >>> exercise_id('answer = 24\\ncheck("model.n_paths", answer)')
      'model.n_paths'
    """
    found = _CHECK_CALL.search(source)
    return found.group(1) if found else None


def strip_solution(source: str) -> str:
    """Replace every ``BEGIN/END SOLUTION`` block of ``source`` by a ``NotImplementedError``.

    Example:
      >>> src = 'x = 1\\n### BEGIN SOLUTION\\nanswer = 24\\n### END SOLUTION\\ncheck("model.n_paths", answer)'
      >>> print(strip_solution(src))
      x = 1
      raise NotImplementedError("Exercise model.n_paths: replace this line with your solution")
      check("model.n_paths", answer)
    """
    name = exercise_id(source) or "?"
    message = f'raise NotImplementedError("Exercise {name}: replace this line with your solution")'
    return _SOLUTION.sub(lambda m: m.group(1) + message, source)


def student_version(notebook):
    """A copy of an ``nbformat`` notebook with every solution replaced (:func:`strip_solution`).

    Example:
      >>> import nbformat
      >>> cell = nbformat.v4.new_code_cell('### BEGIN SOLUTION\\nanswer = 24\\n### END SOLUTION\\ncheck("model.n_paths", answer)')
      >>> print(student_version(nbformat.v4.new_notebook(cells=[cell])).cells[0].source)
      raise NotImplementedError("Exercise model.n_paths: replace this line with your solution")
      check("model.n_paths", answer)
    """
    import copy

    out = copy.deepcopy(notebook)
    for cell in out.cells:
        if cell.cell_type == "code" and BEGIN in cell.source:
            cell.source = strip_solution(cell.source)
            cell.outputs, cell.execution_count = [], None
    return out


def write_student_notebooks(book_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Write ``<out_dir>/<chapter>.ipynb`` for every MyST chapter of ``book_dir`` with exercises.

    Needs ``jupytext`` (the ``book`` extra). Returns the paths written.

    Example:
      >>> import pathlib, tempfile
      >>> book = pathlib.Path(tempfile.mkdtemp())
      >>> cell = '```{code-cell} ipython3\\n### BEGIN SOLUTION\\nanswer = 24\\n### END SOLUTION\\ncheck("model.n_paths", answer)\\n```\\n'
      >>> _ = (book / "chapter.md").write_text(cell)
      >>> [p.name for p in write_student_notebooks(book, book / "student")]
      ['chapter.ipynb']
    """
    import jupytext

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for md in sorted(Path(book_dir).glob("*.md")):
        text = md.read_text()
        if BEGIN not in text:
            continue
        target = out / f"{md.stem}.ipynb"
        jupytext.write(student_version(jupytext.reads(text, fmt="md:myst")), target, fmt="ipynb")
        written.append(target)
    return written
