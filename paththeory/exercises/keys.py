"""The answer keys: every exercise of the chapters (:data:`EXERCISES`), the small problems they share, and how each expected answer is computed with the package."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from paththeory.exercises.answers import Answer, Exercise
from paththeory.tasks.examples import model_problem, toy_problem  # noqa: F401 (the exercises' problems)


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
    from paththeory.predict import accuracy, mean_predictor

    arch, f_train, y_train, f_test, y_test = problem
    U = arch.gp_scale * np.diag(np.isin(np.arange(arch.n_paths), paths).astype(float))
    return accuracy(mean_predictor(U, f_train, y_train, f_test, temperature), y_test)


OMNIGLOT_SPLITS = ("train", "validation", "test")


class OmniglotProblem(NamedTuple):
    """Data of the Omniglot and pruning exercises (:func:`omniglot_problem`).

    ``network``: the shipped :class:`paththeory.training.checkpoints.Checkpoint`; ``x``, ``y`` and ``features``:
    dicts over ``"train"``, ``"validation"`` and ``"test"`` (sequences of training, validation and
    held-out characters) of tokens ``[P, 48, 192]`` (48 tokens of 192 components: 16 patches of 64 pixels plus the
    label vectors), targets ``[P]`` (first half ``+1``) and path features ``[P, 16, 192]`` (one per path). The arrays are read-only.
    """

    network: Any
    x: dict
    y: dict
    features: dict


@functools.lru_cache(maxsize=None)
def omniglot_problem(n: int = 200) -> OmniglotProblem:
    """The trained network and ``n`` balanced sequences per split for the Omniglot and pruning exercises.

    The sequences are those of ``paththeory.experiments.omniglot.build_sequences`` with ``n``
    sequences per split (seed 0), whatever the profile; needs the Omniglot files (:mod:`paththeory.tasks.data`).

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


def _model_n_paths_truth() -> int:
    import paththeory as pt

    return int(pt.Architecture([pt.ScoreAttention(np.zeros((h, 2, 2))) for h in (3, 2, 4)]).n_paths)


def _model_path_expansion_truth():
    import paththeory as pt

    arch, params, x = model_problem("first")
    return pt.network_output(arch, params, x)


def _model_gp_arch():
    import paththeory as pt

    arch, _, x = model_problem("mean")
    return pt.Architecture(arch.attention, readout="mean", variances=(1.0, 0.5, 2.0, 3.0)), x


def _model_gp_kernel_truth():
    import paththeory as pt
    from paththeory.kernels import gp_kernel

    arch, x = _model_gp_arch()
    return gp_kernel(arch, pt.path_features(arch, x))


# --------------------------------------------------------------------------- the derivation chapters

#: One layer (L = 1) of three heads with unequal widths (n_0, n_1): the derivation chapter's exercise,
#: which has only the one-layer action.
READOUT_SETUP = {"trace": 2.5, "widths": (10.0, 20.0), "heads": (3,), "variances": (1.0, 0.8, 1.5)}
GP_SETUP = {"heads": (2, 3), "variances": (1.0, 0.6, 1.7, 2.1)}


def _derivation_readout_root_truth() -> float:
    from paththeory.action import readout_order_parameter

    s = READOUT_SETUP
    return float(readout_order_parameter(s["trace"], s["widths"], s["heads"], s["variances"]))


def _depth_gp_point_truth():
    from paththeory.action import gp_order_parameters

    return list(gp_order_parameters(GP_SETUP["heads"], GP_SETUP["variances"]))


#: The widths (n_0, n_1, n_2, n_3) of the depth-three single-path exercise: unequal, so that the
#: closed form of the equal-width corollary does not give the answer.
SINGLE_PATH_WIDTHS = (1.0, 2.0, 0.5, 1.5)


def _depth_single_path_truth() -> float:
    """min over log U^(2), log U^(3) of the entropy at U^(1) = 2, by BFGS with the exact gradient."""
    import jax
    import jax.numpy as jnp
    from scipy import optimize

    from paththeory.action import entropy

    jax.config.update("jax_enable_x64", True)

    def value(logs):
        Us = [jnp.array([[2.0]])] + [jnp.exp(v).reshape(1, 1) for v in logs]
        return entropy(Us, SINGLE_PATH_WIDTHS, (1, 1, 1), (1.0,) * 5)

    value_and_grad = jax.jit(jax.value_and_grad(value))
    result = optimize.minimize(lambda x: tuple(np.asarray(v, float) for v in value_and_grad(jnp.asarray(x))),
                               np.zeros(2), jac=True, method="BFGS", options={"gtol": 1e-12})
    return float(result.fun)


# --------------------------------------------------------------------------- the GP-vs-finite chapter

TOY_WIDTHS = (3, 10, 30, 100, 300, 1000, 3000)


@functools.lru_cache(maxsize=None)
def _toy_width_within_10_percent() -> int:
    from paththeory.solve import Theory

    arch, f_train, y_train, _, _ = toy_problem()
    gp = arch.gp_scale * np.eye(arch.n_paths)
    sols = Theory(arch, f_train, y_train).sweep(list(TOY_WIDTHS), 1.0)
    close = [w for w, s in zip(TOY_WIDTHS, sols) if np.linalg.norm(s.U - gp) <= 0.1 * np.linalg.norm(gp)]
    return int(min(close))


@functools.lru_cache(maxsize=None)
def _toy_top_overlaps() -> tuple[float, float]:
    from paththeory.kernels import gp_kernel, kernel_matrix
    from paththeory.predict import pc_label_overlap
    from paththeory.solve import Theory

    arch, f_train, y_train, _, _ = toy_problem()
    U = Theory(arch, f_train, y_train).solve(5, 1.0).U
    return (float(pc_label_overlap(gp_kernel(arch, f_train), y_train, 1)[0]),
            float(pc_label_overlap(kernel_matrix(U, f_train), y_train, 1)[0]))


# --------------------------------------------------------------------------- the Markov chapter


def _markov_agreement_truth():
    from paththeory.tasks import markov

    data = markov.sample_task(200, seed=1)
    agree = (data.states[:, 1:] == data.states[:, :-1]).mean(axis=1)
    return np.array([agree[data.y > 0].mean(), agree[data.y < 0].mean()])


@functools.lru_cache(maxsize=None)
def _markov_u_gd() -> float:
    from paththeory.solve import Theory

    arch, f_train, y_train, _, _ = markov_problem()
    return float(Theory(arch, f_train, y_train).solve(20, 0.01).U[0, 2])


# --------------------------------------------------------------------------- the Omniglot chapter

OMNIGLOT_GP_TEMPERATURES = (0.05, 0.25, 1.0)


def _omniglot_patches_truth():
    from paththeory.tasks.omniglot import encode_images

    image = np.random.default_rng(0).integers(0, 256, (32, 32), dtype=np.uint8)
    return encode_images(image[None])[0]


def _omniglot_gd_accuracy_truth() -> float:
    from paththeory.training import evaluate

    network, x, y, _ = omniglot_problem()
    return float(evaluate(network, x["test"], y["test"]))


def _omniglot_gd_explain(truth: float) -> str:
    n = len(omniglot_problem().y["test"])
    return (f"the trained network labels {truth:.3f} of {n} held-out sequences correctly "
            f"(standard error {np.sqrt(truth * (1 - truth) / n):.3f}; chance is 0.5).")


@functools.lru_cache(maxsize=None)
def _omniglot_gp_selection() -> tuple[float, float, float]:
    from paththeory.experiments.omniglot import gp_accuracies, select_temperature

    network, _, y, features = omniglot_problem()
    temps = OMNIGLOT_GP_TEMPERATURES
    acc = gp_accuracies(network.architecture, features, y, temps, splits=("validation", "test"))
    chosen = float(select_temperature(acc["validation"], temps))
    return chosen, float(acc["test"][temps.index(chosen)]), float(acc["test"].max())


def _omniglot_gp_explain(truth: float) -> str:
    chosen, _, best_test = _omniglot_gp_selection()
    return (f"T = {chosen:g} is best on validation and gives test accuracy {truth:.3f}; the best test "
            f"accuracy over T, {best_test:.3f}, would be an optimistic estimate.")


# --------------------------------------------------------------------------- the pruning chapter


def _pruning_head_scores_truth():
    from paththeory.pruning import head_scores

    a = np.random.default_rng(0).normal(size=(16, 16))
    return np.stack(head_scores(a @ a.T / 16, (4, 4)))


def _pruning_head_scores_explain(truth) -> str:
    layer, head = np.unravel_index(np.argmin(truth), truth.shape)
    return f"the lowest score, {truth.min():.3f}, is that of head {head} of layer {layer}."


def _pruning_path_removal_truth():
    import paththeory as pt
    from paththeory.pruning import head_mask

    network, x, _, _ = omniglot_problem()
    arch = network.architecture
    return pt.network_output(arch, network.params, x["test"][:8], head_mask=head_mask(arch.heads, [(0, 1)]))


@functools.lru_cache(maxsize=None)
def _omniglot_lowest_two() -> tuple[list, float, float]:
    from paththeory.experiments.head_pruning import pruned_accuracy, scores_and_order
    from paththeory.solve import Theory

    network, x, y, features = omniglot_problem()
    arch = network.architecture
    U = Theory(arch, features["train"], y["train"]).solve(10, 0.25).U
    pair = [tuple(lh) for lh in scores_and_order(U, arch.heads)["order"][:2]]
    return (pair, pruned_accuracy(network, x["test"], y["test"], pair),
            pruned_accuracy(network, x["test"], y["test"], []))


def _pruning_lowest_two_explain(truth: float) -> str:
    pair, _, full = _omniglot_lowest_two()
    return (f"without heads {pair[0]} and {pair[1]} (layer, head), the lowest scores, the test accuracy is "
            f"{truth:.3f} (unpruned {full:.3f}).")


# --------------------------------------------------------------------------- the residual chapter

#: One attention layer of one head inside a skip, the readout above it, all widths ``n``: the exercise
#: on the coefficient of ``ln det U^(l+1)`` (``H`` in place of ``H + 1``).
SKIP_HEAD_SETUP = {"width": 10.0, "variances": (1.0, 0.7, 1.5)}


def _residual_h_instead_truth() -> float:
    """U_a at the minimum of the entropy with ``H`` in place of ``H + 1``: the package's entropy (with ``H + 1``)
    minus ``n ln U_a``, minimised over ``ln U_a``, the cross entry and the log of the Schur complement by BFGS."""
    import jax
    import jax.numpy as jnp
    from scipy import optimize

    from paththeory.action import entropy_with_readout

    jax.config.update("jax_enable_x64", True)
    n, variances = SKIP_HEAD_SETUP["width"], SKIP_HEAD_SETUP["variances"]

    def value(p):
        u_a, cross, schur = jnp.exp(p[0]), p[1], jnp.exp(p[2])
        U = jnp.array([[u_a, cross], [cross, schur + cross**2 / u_a]])
        return entropy_with_readout([U], u_a, (n, n), (1,), variances, (True,)) - n * p[0]

    value_and_grad = jax.jit(jax.value_and_grad(value))
    result = optimize.minimize(lambda x: tuple(np.asarray(v, float) for v in value_and_grad(jnp.asarray(x))),
                               np.array([0.0, 0.3, 0.0]), jac=True, method="BFGS", options={"gtol": 1e-12})
    return float(np.exp(result.x[0]))


#: A skip level of two heads below a readout of two outputs (so that ``U^(l+1) = U_a`` is 2 x 2), width ``n`` on
#: both sides: the exercise on the skip level's GP point at two upper order parameters.
SKIP_GP_SETUP = {"width": 10.0, "heads": 2, "variance": 0.7,
                 "uppers": ([[1.0, 0.3], [0.3, 0.5]], [[2.0, -0.6], [-0.6, 1.5]])}


def _residual_skip_gp_truth() -> np.ndarray:
    """The minimum of the skip level's term ``S_l / n`` over the free blocks, at each upper order parameter: the
    package's entropy of a skip level below a two-output readout, minus the readout's own term, minimised over the
    cross block and the Schur complement's Cholesky factor (log diagonal) by BFGS."""
    import jax
    import jax.numpy as jnp
    from scipy import optimize

    from paththeory.action import entropy_with_readout

    jax.config.update("jax_enable_x64", True)
    s = SKIP_GP_SETUP
    n, H, var = s["width"], s["heads"], s["variance"]
    minima = []
    for upper in s["uppers"]:
        A = jnp.asarray(upper)
        D = A.shape[0]
        lower = np.tril_indices(H * D)
        # the package packs the output index slowest, (c, branch), the skip branch first
        order = np.array([b * D + c for c in range(D) for b in range(H + 1)])

        def value(p, A=A, D=D, lower=lower, order=order):
            cross = p[: D * H * D].reshape(D, H * D)
            R = jnp.zeros((H * D, H * D)).at[lower].set(p[D * H * D:])
            R = R - jnp.diag(jnp.diag(R)) + jnp.diag(jnp.exp(jnp.diag(R)))
            hh = R @ R.T + cross.T @ jnp.linalg.solve(A, cross)
            U = jnp.block([[A, cross], [cross.T, hh]])[order][:, order]  # branch-major to the package's order
            readout = n * (jnp.trace(A) - jnp.linalg.slogdet(A)[1])
            return (entropy_with_readout([U], A, (n, n), (H,), (1.0, var, 1.0), (True,)) - readout) / n

        value_and_grad = jax.jit(jax.value_and_grad(value))
        start = np.concatenate([0.1 * np.ones(D * H * D), np.zeros(len(lower[0]))])
        result = optimize.minimize(lambda x: tuple(np.asarray(v, float) for v in value_and_grad(jnp.asarray(x))),
                                   start, jac=True, method="BFGS", options={"gtol": 1e-11})
        minima.append(float(result.fun))
    return np.array(minima)


# --------------------------------------------------------------------------- the many-outputs chapter


@functools.lru_cache(maxsize=None)
def _many_outputs_decoupling() -> tuple[float, float, float, float]:
    """Two outputs ``Y = [y, -y] / sqrt 2`` on the toy task at ``N = 5``, ``T = 1``, rotated by
    ``O = [[1, 1], [-1, 1]] / sqrt 2``: the largest entry of the off-diagonal block, the traces of the dead and the
    live output's blocks, and the trace of one output's block at the GP point."""
    from paththeory.solve import Theory

    arch, f_train, y_train, _, _ = toy_problem()
    n = arch.n_paths
    U = Theory(arch, f_train, np.stack([y_train, -y_train], axis=1) / np.sqrt(2.0)).solve(5, 1.0).U
    O = np.array([[1.0, 1.0], [-1.0, 1.0]]) / np.sqrt(2.0)
    rot = np.kron(O.T, np.eye(n)) @ U @ np.kron(O, np.eye(n))
    return (float(np.max(np.abs(rot[:n, n:]))), float(np.trace(rot[n:, n:])), float(np.trace(rot[:n, :n])),
            float(arch.gp_scale * n))


# --------------------------------------------------------------------------- the order-parameter chapter

#: Two layers of two heads at a fixed readout order parameter: the exercise on the inner order parameter's matrix
#: quadratic. ``U = I + v v^T / 2`` over the paths ``(h_1, h_2)``, ``h_1`` slowest.
INNER_SETUP = {"widths": (30.0, 20.0, 20.0), "heads": (2, 2), "variances": (1.0, 0.8, 1.5, 1.0), "U_a": 1.2,
               "v": (1.0, 1.0, 0.5, 2.0)}


def _inner_setup_U() -> np.ndarray:
    v = np.asarray(INNER_SETUP["v"])
    return np.eye(4) + np.outer(v, v) / 2


def _order_parameter_inner_truth() -> np.ndarray:
    """``U^(2)`` minimising the package's entropy at the fixed ``U`` and ``U_a`` (BFGS over a Cholesky factor with a
    log diagonal): an oracle that does not use the quadratic."""
    import jax
    import jax.numpy as jnp
    from scipy import optimize

    from paththeory.action import entropy_with_readout

    jax.config.update("jax_enable_x64", True)
    s = INNER_SETUP
    U = jnp.asarray(_inner_setup_U())

    def factor(p):
        return jnp.array([[jnp.exp(p[0]), 0.0], [p[1], jnp.exp(p[2])]])

    def value(p):
        R = factor(p)
        return entropy_with_readout([U, R @ R.T], s["U_a"], s["widths"], s["heads"], s["variances"])

    value_and_grad = jax.jit(jax.value_and_grad(value))
    result = optimize.minimize(lambda x: tuple(np.asarray(v, float) for v in value_and_grad(jnp.asarray(x))),
                               np.zeros(3), jac=True, method="BFGS", options={"gtol": 1e-12})
    R = np.asarray(factor(jnp.asarray(result.x)))
    return R @ R.T


def _order_parameter_inner_explain(truth: np.ndarray) -> str:
    s = INNER_SETUP
    n0, n1, _ = s["widths"]
    scale = s["variances"][2] * s["U_a"]
    beta, gamma = scale * (s["heads"][0] * n0 / n1 - 1), scale * n0 / (s["variances"][1] * n1)
    return (f"beta_2 = {beta:g}, gamma_2 = {gamma:g}: in the eigenbasis of Tr_h1 U each eigenvalue w gives the "
            "positive root of k^2 + beta_2 k - gamma_2 w = 0, and U^(2) has the same eigenvectors (its "
            "off-diagonal entry is not the root of the quadratic for the off-diagonal entry of Tr_h1 U).")


# --------------------------------------------------------------------------- the solver chapter


def _solver_curvature_truth() -> float:
    """d^2/dt^2 E(U + t Delta) at t = 0 by automatic differentiation of the package's energy."""
    import jax
    import jax.numpy as jnp

    import paththeory as pt
    from paththeory.action import energy
    from paththeory.kernels import kernel_matrix
    from paththeory.tasks.examples import two_layer_problem

    jax.config.update("jax_enable_x64", True)
    arch, x, y = two_layer_problem()
    features = pt.path_features(arch, x)
    U = arch.gp_scale * np.eye(arch.n_paths)
    delta = np.zeros_like(U)
    delta[0, 1] = delta[1, 0] = 1.0
    along = lambda t: energy(kernel_matrix(jnp.asarray(U) + t * delta, features), jnp.asarray(y, float), 0.05)
    return float(jax.grad(jax.grad(along))(0.0))


_ACCURACY = "a test accuracy, a fraction between 0 and 1"

# --------------------------------------------------------------------------- the nonlinear-block chapter


def _nonlinear_homogeneity_truth() -> np.ndarray:
    """``[F_relu(1, 2, 0.3), F_relu(3, 6, 0.9)]`` by adaptive quadrature of ``E[relu(u) relu(v)]``
    (the inner mean in closed form), not from the package's map."""
    from scipy.integrate import quad
    from scipy.stats import norm

    def moment(q1: float, q2: float, q12: float) -> float:
        l11 = np.sqrt(q1)
        l21, l22 = q12 / l11, np.sqrt(q2 - (q12 / l11) ** 2)

        def inner(a: float) -> float:  # E_b relu(l21 a + l22 b)
            m = l21 * a
            return m * norm.cdf(m / l22) + l22 * norm.pdf(m / l22)

        return quad(lambda a: l11 * a * inner(a) * norm.pdf(a), 0, np.inf, epsabs=1e-14, epsrel=1e-13)[0]

    return np.array([moment(1.0, 2.0, 0.3), moment(3.0, 6.0, 0.9)])


#: The erf network of the normalisation exercise: the chapter's heads, sigma_a^2 = 2, the first 20 sequences.
NORMALISATION_SETUP = {"variances": (1.0, 1.0, 1.0, 1.0, 2.0), "n_train": 20}


def _nonlinear_normalisation_truth() -> np.ndarray:
    """The largest relative distance from the erf network's GP kernel ``sigma_a^2 F[sigma_M^2 Q_GP]`` (written here
    from the path features and the arcsine formula) of ``U_a F[K_lin / U_a]`` and of ``F[K_lin]`` at the GP point."""
    from paththeory.model import MLP, Architecture, path_features
    from paththeory.tasks import markov

    first, second = markov.four_paths().attention
    arch = Architecture((first, second, MLP("erf")), readout="last", variances=NORMALISATION_SETUP["variances"])
    x = markov.sample_task(NORMALISATION_SETUP["n_train"], seed=markov.TRAIN_SEED).x
    xi = np.asarray(path_features(arch, x))
    q = np.einsum("pan,qan->pq", xi, xi)  # sigma_M^2 Q_GP: sigma_1^2 = sigma_2^2 = sigma_M^2 = 1

    def arcsine(Q: np.ndarray) -> np.ndarray:
        d = np.diag(Q)
        return 2 / np.pi * np.arcsin(2 * Q / np.sqrt(np.outer(1 + 2 * d, 1 + 2 * d)))

    var_a = NORMALISATION_SETUP["variances"][-1]
    gp = var_a * arcsine(q)
    K_lin = var_a * q  # the linear kernel at the GP point, U^(1) = sigma_a^2 I
    normalised, bare = var_a * arcsine(K_lin / var_a), arcsine(K_lin)
    scale = np.max(np.abs(gp))
    return np.array([np.max(np.abs(normalised - gp)) / scale, np.max(np.abs(bare - gp)) / scale])


EXERCISES: dict[str, Exercise] = {
    "model.n_paths": Exercise(
        "the number of paths of a network with heads (3, 2, 4)",
        Answer("integer", meaning="a number of paths"),
        _model_n_paths_truth,
        lambda t: f"{t} paths: one head per layer, 3 x 2 x 4 choices.",
        "Revisit the definition of an attention path in this chapter: what a path chooses in each layer.",
        rtol=0, atol=0),
    "model.path_expansion": Exercise(
        "f(x) as a sum over paths, readout = first token",
        Answer("array", (4,), "f(x) on the 4 inputs"),
        _model_path_expansion_truth,
        lambda t: "the sum over the 6 paths equals the layer-by-layer forward pass (readout = first token).",
        "Revisit the path expansion f(x) = sum_pi w^pi . V0 xi^pi(x) / (sigma_0 sqrt(n0)): contract the "
        "indices [paths, n0] of w, [n0, N0] of V0 and [B, paths, N0] of xi, and divide by sigma_0 sqrt(n0).",
        rtol=1e-8, atol=1e-10),
    "model.gp_kernel": Exercise(
        "the GP kernel from path features with non-unit variances",
        Answer("array", (4, 4), "the GP kernel on the 4 inputs"),
        _model_gp_kernel_truth,
        lambda t: "K_GP = 3 x sum_pi C^(pi pi) (gp_scale = sigma_a^2 sigma_1^2 sigma_2^2 = 3 x 0.5 x 2).",
        "Revisit the GP kernel in this chapter: which blocks of the path kernels enter, and which of this "
        "exercise's variances multiply them.",
        rtol=1e-8, atol=1e-12),
    "derivation.readout_root": Exercise(
        "U_a from its quadratic equation",
        Answer("number", meaning="the readout order parameter U_a"),
        _derivation_readout_root_truth,
        lambda t: f"U_a = {t:.6f}, the positive root of the quadratic.",
        "Revisit the readout order parameter (one layer): n_0 = widths[0], n_1 = widths[1], H = heads[0], "
        "sigma_1^2 = variances[1], sigma_a^2 = variances[2]; U_a is the positive root.",
        rtol=1e-8),
    "depth.gp_point": Exercise(
        "the GP point of every order parameter",
        Answer("arrays", ((6, 6), (3, 3)), "[U^(1), U^(2)]"),
        _depth_gp_point_truth,
        lambda t: f"U^(1) = {t[0][0, 0]:.4g} I (6 x 6) and U^(2) = {t[1][0, 0]:.4g} I (3 x 3).",
        "Revisit the GP limit of the order parameters (the GP point at any depth): what each U^(l) is "
        "proportional to, and which variances set its scale.",
        rtol=1e-6),
    "depth.single_path": Exercise(
        "the single-path entropy minimum by numerical minimisation",
        Answer("number", meaning="the minimum of the entropy over the inner order parameters"),
        _depth_single_path_truth,
        lambda t: f"min over the inner order parameters = {t:.6f} at widths (1, 2, 0.5, 1.5); the "
                  "corollary's closed form holds for equal widths only.",
        "Revisit the single-path entropy: fix U^(1) = 2, minimise over U^(2) and U^(3) (positive: optimise "
        "their logs), with the widths SINGLE_PATH_WIDTHS and unit variances, and store the minimum value, "
        "not the minimiser.",
        rtol=1e-6),
    "order_parameter.inner_quadratic": Exercise(
        "the inner order parameter from its matrix quadratic",
        Answer("array", (2, 2), "U^(2)"),
        _order_parameter_inner_truth,
        _order_parameter_inner_explain,
        "Revisit the inner order parameter at two layers: beta_2 and gamma_2 from the widths (30, 20, 20), "
        "sigma_1^2 = 0.8, sigma_2^2 = 1.5 and U_a = 1.2; the quadratic is a matrix equation, solved in the "
        "eigenbasis of Tr_h1 U (sum the diagonal blocks over h_1, the slow index), with the positive root.",
        rtol=1e-6, atol=1e-9),
    "solver.curvature": Exercise(
        "the second derivative of the energy along a symmetric direction",
        Answer("number", meaning="d^2 E(U + t Delta) / dt^2 at t = 0"),
        _solver_curvature_truth,
        lambda t: f"{t:.4f}: -Tr(K^-1 C_D K^-1 C_D) + 2 psi^T C_D K^-1 C_D psi, the sum of four entries of "
                  "the entrywise Hessian, not one of them.",
        "Revisit the Hessian of the energy in this chapter: the direction Delta is symmetric (1 at [0, 1] "
        "and [1, 0]), so C_Delta = C^01 + C^10, and along it the two label terms count equally; the GP "
        "point of two_layer_problem, T = 0.05.",
        rtol=1e-6),
    "gp_vs_finite.good_path": Exercise(
        "the GP test accuracy of the good path alone",
        Answer("number", meaning=_ACCURACY),
        lambda: _gp_accuracy(toy_problem(), [0], 0.1),
        lambda t: f"test accuracy {t:.3f} with the good path alone at T = 0.1 "
                  f"(all paths: {_gp_accuracy(toy_problem(), [0, 1, 2, 3], 0.1):.3f}).",
        "Revisit the GP predictor of this chapter: U = gp_scale on the good path (path 0) and 0 elsewhere, "
        "T = 0.1, accuracy on the 1000 test sequences.",
        rtol=0, atol=1e-9),
    "gp_vs_finite.width_10": Exercise(
        "the smallest width with U* within 10% of the GP point",
        Answer("integer", meaning="one of TOY_WIDTHS"),
        _toy_width_within_10_percent,
        lambda t: f"from N = {t:g} on, ||U* - U_GP||_F is within 10% of ||U_GP||_F.",
        "Revisit the width sweep: U_GP = gp_scale * I, the distance is ||U* - U_GP||_F / ||U_GP||_F at T = 1, "
        "and the answer is the smallest width of TOY_WIDTHS at which it is <= 0.1.",
        rtol=0, atol=0),
    "gp_vs_finite.alignment": Exercise(
        "the top-PC label overlap of K_GP and K_U*",
        Answer("array", (2,), "[overlap_gp, overlap_theory]"),
        lambda: np.array(_toy_top_overlaps()),
        lambda t: f"top-PC overlap: K_GP {t[0]:.3f}, K_U* at N = 5 {t[1]:.3f}.",
        "Revisit kernel-task alignment: the top principal component (k = 1) of the training kernels K_GP and "
        "K_U, with U* solved at N = 5, T = 1; the order is [GP, theory].",
        rtol=1e-4, atol=1e-6),
    "markov.agreement": Exercise(
        "the fraction of agreeing neighbours per class",
        Answer("array", (2,), "[class +1, class -1]"),
        _markov_agreement_truth,
        lambda t: f"agreeing neighbours: {t[0]:.3f} for y = +1 (expected 0.7), {t[1]:.3f} for y = -1 (0.3).",
        "Revisit the Markov task: compare consecutive hidden states (data.states[:, 1:] and [:, :-1]), average "
        "over each sequence, then over the sequences of each class; the order is [y = +1, y = -1].",
        rtol=1e-9),
    "markov.good_path": Exercise(
        "the GP test accuracy of the good path alone",
        Answer("number", meaning=_ACCURACY),
        lambda: _gp_accuracy(markov_problem(), [0], 0.01),
        lambda t: f"GP accuracy of the good path alone: {t:.3f}.",
        "Revisit the GP predictor of this chapter: U = gp_scale e_0 e_0^T (path 0 only), T = 0.01, accuracy "
        "on the 1000 test sequences.",
        rtol=0, atol=1e-9),
    "markov.u_gd": Exercise(
        "the good-denoising entry of U* at N = 20",
        Answer("number", meaning="the entry U*[0, 2]"),
        _markov_u_gd,
        lambda t: f"U*_gd = {t:.4f} at N = 20: the good and denoising paths are anti-correlated.",
        "Revisit the theory's solution at the stated width and temperature, and which entry of U* pairs the "
        "good path (0) with the denoising path (2).",
        rtol=1e-3, atol=1e-5),
    "omniglot.patches": Exercise(
        "the 16 LayerNormed 8 x 8 patches of a 32 x 32 image",
        Answer("array", (16, 64), "16 patches of 64 pixels"),
        _omniglot_patches_truth,
        lambda t: "16 patches of 64 pixels, row-major, each LayerNormed: the tokens' image part (encode_images).",
        "Revisit the tokenisation in this chapter: the scaling of the pixels, the order of the patches and "
        "the normalisation of each patch.",
        rtol=1e-9, atol=1e-9),
    "omniglot.gd_accuracy": Exercise(
        "the test accuracy of the trained network",
        Answer("number", meaning=_ACCURACY),
        _omniglot_gd_accuracy_truth,
        _omniglot_gd_explain,
        "Revisit the evaluation: which set, and how the sign of the output gives the prediction.",
        rtol=0, atol=1e-12),
    "omniglot.gp_temperature": Exercise(
        "the GP test accuracy at the validation-selected temperature",
        Answer("number", meaning=_ACCURACY),
        lambda: _omniglot_gp_selection()[1],
        _omniglot_gp_explain,
        "Revisit model selection: choose T by the validation accuracy (ties to the larger T), then report "
        "the test accuracy at that T only.",
        rtol=0, atol=1e-12),
    "pruning.head_scores": Exercise(
        "the normalised head scores from a given order parameter",
        Answer("array", (2, 4), "scores [layer, head]"),
        _pruning_head_scores_truth,
        _pruning_head_scores_explain,
        "Revisit the head scores: which pairs of paths count for a head, how often each pair counts, and "
        "the normalisation.",
        rtol=1e-12, atol=1e-12),
    "pruning.path_removal": Exercise(
        "pruning a head as removing its paths from the path expansion",
        Answer("array", (8,), "the outputs on the first 8 test sequences"),
        _pruning_path_removal_truth,
        lambda t: "dropping the 4 paths through head 1 of layer 0 and rescaling by sqrt(4/3) is pruning that head.",
        "Revisit pruning as path removal: which paths go through the pruned head, how the remaining heads "
        "of that layer are rescaled, and the precision.",
        rtol=1e-8, atol=1e-12),
    "pruning.lowest_two": Exercise(
        "the test accuracy without the two lowest-scoring heads",
        Answer("number", meaning=_ACCURACY),
        lambda: _omniglot_lowest_two()[1],
        _pruning_lowest_two_explain,
        "Revisit the pruning experiment: U solved at N = 10, T = 0.25 on the training features, heads scored "
        "from that U, and the two lowest-scoring heads pruned together.",
        rtol=0, atol=1e-12),
    "many_outputs.decoupling": Exercise(
        "two classes on two outputs: the rotated U*",
        Answer("array", (2,), "[largest |entry| of the rotated off-diagonal block, trace of the dead block]"),
        lambda: np.array(_many_outputs_decoupling()[:2]),
        lambda t: f"the rotated off-diagonal block vanishes (largest entry {t[0]:.1e}); the dead output's block "
                  f"has trace {t[1]:.4f} against {_many_outputs_decoupling()[2]:.4f} for the live one and "
                  f"{_many_outputs_decoupling()[3]:g} at the GP point: without labels, only the entropy and the "
                  "log-determinant shape it, and they shrink it.",
        "Revisit the decoupling case: U* with labels Y = [y, -y] / sqrt 2 at N = 5, T = 1, rotated by "
        "O (x) I with O = [[1, 1], [-1, 1]] / sqrt 2 (U -> (O^T (x) I) U (O (x) I)); the live output is "
        "the first block, the dead one the second.",
        rtol=1e-4, atol=1e-6),
    "residual.h_instead": Exercise(
        "the readout order parameter at the minimum, one head and a skip, with H in place of H + 1",
        Answer("number", meaning="the readout order parameter U_a at the minimum"),
        _residual_h_instead_truth,
        lambda t: f"U_a* = {t:.6f} = 2 sigma_a^2 with H; with H + 1 it is sigma_a^2 = 1.5, the GP point.",
        "Revisit the lemma on a level with a skip: fix U_a, minimise the level's term over the free cross "
        "entry and the Schur complement, then minimise over U_a; the wrong coefficient leaves an extra "
        "-n ln U_a (widths n = 10, sigma_1^2 = 0.7, sigma_a^2 = 1.5).",
        rtol=1e-6),
    "residual.skip_gp": Exercise(
        "the minimum of a skip level's term at two upper order parameters",
        Answer("array", (2,), "[minimum of S_l / n at the first upper order parameter, at the second]"),
        _residual_skip_gp_truth,
        lambda t: f"both minima are {t[0]:.6f} = H D (1 - ln sigma^2), at U_sh = 0 and U_hh = sigma^2 I (x) "
                  "U^(l+1): the H + 1 in front of ln det U^(l+1) cancels ln det U^(l) there, so the level pulls "
                  "on nothing above it.",
        "Revisit the skip level's GP point (the corollary on the GP point with a residual stream): the minimiser "
        "of the free blocks, then S_l / n = Tr[M^-1 U_hh] / sigma^2 - ln det U^(l) + (H + 1) ln det U^(l+1) "
        "there, with M = I_H (x) U^(l+1), H = 2, sigma^2 = 0.7.",
        rtol=1e-6, atol=1e-8),
    "nonlinear.homogeneity": Exercise(
        "the ReLU map at (1, 2, 0.3) and at three times the arguments",
        Answer("array", (2,), "[F_relu(1, 2, 0.3), F_relu(3, 6, 0.9)]"),
        _nonlinear_homogeneity_truth,
        lambda t: f"F_relu(1, 2, 0.3) = {t[0]:.12f} and F_relu(3, 6, 0.9) = {t[1]:.12f}, exactly three times as much: "
                  "both terms of the arc-cosine kernel are homogeneous of degree one and rho is unchanged, so "
                  "U_a F[K / U_a] = F[K] for ReLU.",
        "Revisit the definition of the kernel maps: sqrt(q1 q2 - q12^2) and (pi - arccos rho) q12, over 2 pi, "
        "with rho = q12 / sqrt(q1 q2).",
        rtol=1e-9),
    "nonlinear.normalisation": Exercise(
        "the erf network at its GP point, sigma_a^2 = 2: the normalised and the bare map against the GP kernel",
        Answer("array", (2,), "[largest relative distance of U_a F[K_lin / U_a], of F[K_lin]]"),
        _nonlinear_normalisation_truth,
        lambda t: f"the normalised kernel is the GP kernel ({t[0]:.0e}); the bare map is {t[1]:.3f} off: erf is "
                  "not homogeneous, and only the normalisation by U_a hands F its pre-activation kernel.",
        "Revisit the heuristic's assumption: at the GP point U^(1) = sigma_a^2 I (sigma_l^2 = 1), U_a = sigma_a^2, "
        "K_lin = sigma_a^2 Q_GP; the GP kernel is sigma_a^2 F[Q_GP] (the chapter's first 20 training sequences).",
        rtol=1e-6, atol=1e-12),
}
