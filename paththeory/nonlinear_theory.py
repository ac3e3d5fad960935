"""Nonlinear MLP blocks: the heuristic kernel renormalisation of the paper's outlook (§5).

The paper's outlook proposes to carry its theory over to nonlinear MLP blocks by keeping the
renormalisation of the linear network and replacing its Gaussian-process path kernels by those of the
nonlinear case, as Li & Sompolinsky (2021) did for deep ReLU networks. For a block
``phi(M z / sqrt(n))`` after the last attention layer (placement ``"top"``, a one-token readout):

* the order parameters and the entropy are those of the network with ``phi`` replaced by the identity,
  levels ``[attention_1, ..., attention_L, MLP]`` and the readout: ``U^(1), ..., U^(L)``, ``U^(M)`` (1 x 1) and
  ``U_a`` (:func:`paththeory.action.entropy_with_readout`); in the network they are the Grams of the readout
  back-propagated *linearly* through ``M^T`` and the value weights;
* the energy's kernel is the linear one cut at the nonlinearity, normalised by the Gram of the vectors just
  above it (``U_a``), mapped through the Gaussian kernel map of ``phi`` and scaled back:

      K(U) = U_a F_phi[K_lin(U^(1)) / U_a],   K_lin(U) = sum_{pi sigma} U_{pi sigma} C^{pi sigma}

  (:func:`top_kernel`; for ReLU, positive homogeneity removes ``U_a``: ``K = F_relu[K_lin(U)]``).

What is exact: with ``phi`` the identity the action is the linear theory's at every ``U``; as the width grows
the minimum tends to the GP point, where ``K`` is the nonlinear network's GP kernel
``sigma_a^2 F_phi[sigma_M^2 Q_GP]`` (:func:`gp_kernel`); ``K(U)`` is positive semi-definite, so a minimum
exists. What is assumed: that the nonlinear network's posterior renormalises its pre-activation kernel as the
linear one does; that is a heuristic, to be judged against exact samples of the network.

The minimum is found by L-BFGS on ``S/N`` over Cholesky factors (every order parameter free, ``U_a`` included:
for erf it does not drop out), then Newton steps with the exact Hessian (a few tens of parameters).

Book: Beyond the paper: nonlinear MLP blocks (https://paththeory.github.io/paththeory/book/nonlinear.html)
"""

from __future__ import annotations

import time
import warnings
from functools import partial
from dataclasses import dataclass, field
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from paththeory._checks import (as_float_array, check_allocation, check_count, check_nonnegative, check_order_parameter,
                                check_positive)
from paththeory._labels import as_labels
from paththeory._lbfgs import State, reached
from paththeory._lbfgs import run as lbfgs
from paththeory.action import energy, entropy_with_readout, level_scale, order_parameter_sizes
from paththeory.kernel_maps import cross_map, kernel_map, second_moment
from paththeory.kernels import (
    DEFAULT_MEMORY_BUDGET,
    apply_operator,
    check_features,
    kernel_diagonal,
    kernel_matrix,
    kernel_operator,
)
from paththeory.kernels import gp_kernel as linear_gp_kernel
from paththeory.model import (MLP, Architecture, Residual, TokenFeatures, block_level, check_architecture,
                              token_path_counts)
from paththeory.solve import ConvergenceWarning, matrices_to_theta, theta_to_matrices

Array = jax.Array

#: Where a nonlinear MLP block may sit: ``"top"``, after the last attention layer (before the readout), or
#: ``"between"`` attention layers (the "path" variant, on token-resolved features).
PLACEMENTS = ("top", "between")
#: Test examples per chunk of the between-layers predictor (its token kernels are ``(chunk T) x (P T)``).
PREDICT_CHUNK = 16
#: L-BFGS hands over to Newton's method once ``max |d(S/N)/dU|`` is below this.
NEWTON_SWITCH = 1e-6


def placement(arch: Architecture) -> str:
    """Where ``arch``'s nonlinear MLP block sits (one of :data:`PLACEMENTS`), or a ValueError saying what the
    heuristic covers.

    Covered, without skip connections and with one MLP block: ``"top"``, the block as the top level after the
    attention layers, with a one-token readout (``"first"`` or ``"last"``: the block acts on the readout token alone;
    with ``"mean"`` it would act on every token before the average, which the path kernels do not see); and
    ``"between"``, the block between attention layers (any readout), whose kernel needs token-resolved features
    (:func:`paththeory.model.token_features`). Any nonlinearity, the identity included (the linear theory).

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, _ = model_problem()
      >>> placement(pt.Architecture((*arch.attention, pt.MLP("relu")), readout="last"))
      'top'
      >>> placement(pt.Architecture((arch.attention[0], pt.MLP("relu"), arch.attention[1])))
      'between'
    """
    check_architecture(arch)
    levels = [type(layer).__name__ for layer in arch.attention]
    blocks = [l for l, layer in enumerate(arch.attention) if isinstance(layer, MLP)]
    problems = []
    if len(blocks) != 1:
        problems.append(f"it has {len(blocks)} MLP blocks")
    elif blocks[0] == 0:
        problems.append("its MLP block sits below every attention layer")
    if any(arch.skips):
        problems.append("it has skip connections")
    top = bool(blocks) and blocks[-1] == arch.n_layers - 1
    if top and arch.readout == "mean":
        problems.append("its readout averages the tokens after a top block (use 'first' or 'last')")
    if problems:
        raise ValueError(f"the nonlinear heuristic covers one MLP block, without skip connections, either as the top "
                         f"level after the attention layers (readout 'first' or 'last') or between attention layers; "
                         f"this architecture (levels {levels}, readout {arch.readout!r}) fails it: "
                         f"{'; '.join(problems)}.")
    return "top" if top else "between"


def linear_counterpart(arch: Architecture) -> Architecture:
    """``arch`` with every MLP block's nonlinearity replaced by the identity: the linear theory's network
    (``phi`` ignored), whose order parameters the heuristic keeps.

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, _ = model_problem()
      >>> linear_counterpart(pt.Architecture((*arch.attention, pt.MLP("erf")))).nonlinearities
      ('identity', 'identity', 'identity')
    """
    def linear(layer):
        if isinstance(layer, Residual):
            return Residual(linear(layer.layer), layer.skip_gain, layer.branch_gain)
        return MLP() if isinstance(layer, MLP) else layer

    levels = tuple(linear(layer) for layer in check_architecture(arch).attention)
    return Architecture(levels, readout=arch.readout, variances=arch.variances)


# --------------------------------------------------------------------------- kernels


def top_kernel(phi: str, K_lin: Array, U_a) -> Array:
    """``K = U_a F_phi[K_lin / U_a]``: the heuristic's kernel for a block after the last attention layer.

    Example:
      >>> K = top_kernel("relu", jnp.array([[2.0, 0.0], [0.0, 4.0]]), 3.0)
      >>> bool(jnp.allclose(K, top_kernel("relu", jnp.array([[2.0, 0.0], [0.0, 4.0]]), 0.5)))  # U_a drops out
      True
    """
    if not isinstance(U_a, jax.core.Tracer):
        U_a = check_positive(U_a, "U_a")
    return U_a * kernel_map(phi, K_lin / U_a)


class TokenGrams(NamedTuple):
    """The data of the between-layers kernel: the lower paths' token Grams ``S [G, G, P T, P T]``,
    ``S_{g g'}((x, s), (x', s')) = Y_g(x)_s . Y_{g'}(x')_{s'}``, and the upper paths' attention ``upper [P, H, T]``
    (:class:`~paththeory.model.TokenFeatures`)."""

    S: Array
    upper: Array


def token_grams(features: TokenFeatures, other: TokenFeatures | None = None) -> Array:
    """``S [G, G, P T, P' T]`` between the tokens of ``features`` and of ``other`` (default: the same)."""
    other = features if other is None else other
    a, b = (jnp.moveaxis(f.lower, 1, 0).reshape(f.lower.shape[1], -1, f.lower.shape[-1]) for f in (features, other))
    return jnp.einsum("gin,hjn->ghij", a, b)


def _pre_activation(U: Array, S: Array, n_upper: int) -> Array:
    """``Q_{hk} = sum_{g g'} U_{(g,h),(g',k)} S_{g g'}``: ``[H, H, n, m]`` for ``S [G, G, n, m]``."""
    G = S.shape[0]
    return jnp.einsum("ahbk,abij->hkij", U.reshape(G, n_upper, G, n_upper), S)


def _post_activation(phi: str, Qt: Array, q_a: Array, q_b: Array) -> Array:
    """``Phi_{hk} = F^c_phi[Qt]_{hk} + delta_{hk} m m^T``: the centred map between upper heads, the full second
    moment within one (``q_a [H, n]``, ``q_b [H, m]``: each head's variances)."""
    H = Qt.shape[0]
    return jnp.stack([jnp.stack([cross_map(phi, q_a[h], q_b[k], Qt[h, k], centred=h != k) for k in range(H)])
                      for h in range(H)])


def between_kernel(phi: str, grams: TokenGrams, U: Array, U_cut: Array) -> Array:
    """``K(x, x') = sum_{hk} D_h D_k upper_h(x)^T Phi_{hk}(x, x') upper_k(x')``: the "path" heuristic's kernel for a
    block between attention layers, ``Phi`` the centred map (:func:`_post_activation`) of
    ``Qt_{hk} = Q_{hk} / (D_h D_k)``, ``Q_{hk} = sum_{g g'} U_{(g,h),(g',k)} S_{g g'}``, ``D = sqrt(diag U_cut)``
    (``U_cut``: the order parameter of the level above the block).

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem()  # heads (3, 2)
      >>> tf = pt.token_features(pt.Architecture((arch.attention[0], pt.MLP("relu"), arch.attention[1])), x)
      >>> K = between_kernel("relu", TokenGrams(token_grams(tf), tf.upper), jnp.eye(6), jnp.eye(2))
      >>> K.shape, bool(jnp.allclose(K, K.T))
      ((4, 4), True)
    """
    P, H, T = grams.upper.shape
    G = grams.S.shape[0]
    u, d = U.reshape(G, H, G, H), jnp.sqrt(jnp.diagonal(U_cut))
    Qt = {(h, k): jnp.einsum("ab,abij->ij", u[:, h, :, k], grams.S) / (d[h] * d[k])
          for h in range(H) for k in range(h, H)}  # Qt_{kh} = Qt_{hk}^T: the upper triangle of head pairs
    q = [jnp.diagonal(Qt[h, h]) for h in range(H)]

    def term(h: int, k: int) -> Array:
        Phi = cross_map(phi, q[h], q[k], Qt[h, k], centred=h != k).reshape(P, T, P, T)
        return d[h] * d[k] * jnp.einsum("ps,psqt,qt->pq", grams.upper[:, h], Phi, grams.upper[:, k])

    K = sum(term(h, h) for h in range(H))
    for h in range(H):
        for k in range(h + 1, H):
            pair = term(h, k)  # the pair (k, h) gives its transpose
            K = K + pair + pair.T
    return K


def gp_kernel(arch: Architecture, features, features_b=None) -> Array:
    """The nonlinear network's Gaussian-process kernel (its infinite-width limit) ``[P, P']``: for a block on top,
    ``K_GP = sigma_a^2 F_phi[sigma_M^2 Q_GP]`` with ``Q_GP = sum_pi (prod_l sigma_l^2) C^{pi pi}`` the attention
    stack's GP kernel at the readout token; for a block between attention layers (``features``:
    :class:`~paththeory.model.TokenFeatures`), ``c_up sum_h upper_h^T F_phi[c_lo sum_g S_gg] upper_h`` with
    ``c_lo`` the variances up to the block's (``sigma_M^2`` included) and ``c_up`` those above it and ``sigma_a^2``.

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem()
      >>> arch = pt.Architecture((*arch.attention, pt.MLP("relu")), readout="last")
      >>> gp_kernel(arch, pt.path_features(arch, x)).shape
      (4, 4)
    """
    phi, where = _phi(arch)
    if where == "between":
        fa = _check_token_features(arch, features)
        fb = fa if features_b is None else _check_token_features(arch, features_b, "features_b")
        if fb.lower.shape[-1] != fa.lower.shape[-1]:
            raise ValueError(f"features_b must have N0 = {fa.lower.shape[-1]} features per token like features; got "
                             f"{fb.lower.shape[-1]}.")
        cut = block_level(arch)
        c_lo = float(np.prod(arch.variances[1:cut + 2]))
        c_up = float(arch.variances[-1] * np.prod(arch.variances[cut + 2:-1]))
        q_ab = c_lo * jnp.einsum("ggij->ij", token_grams(fa, fb))
        F = cross_map(phi, _token_variances(fa, c_lo), _token_variances(fb, c_lo), q_ab)
        F = F.reshape(*fa.upper.shape[::2], *fb.upper.shape[::2])
        return c_up * jnp.einsum("phs,psqt,qht->pq", fa.upper, F, fb.upper)
    var_a = arch.variances[-1]
    fa = _path_features_for_top(features, "features")
    fb = fa if features_b is None else _path_features_for_top(features_b, "features_b")
    q = linear_gp_kernel(linear_counterpart(arch), fa, fb) / var_a  # K_GP / sigma_a^2 of the linear network
    return var_a * cross_map(phi, _gp_diagonal(arch, fa) / var_a, _gp_diagonal(arch, fb) / var_a, q)


def _token_variances(features: TokenFeatures, scale: float) -> Array:
    """``scale sum_g |Y_g(x)_s|^2`` for every token ``(x, s)``: the GP's pre-activation variances ``[P T]``."""
    return scale * jnp.einsum("pgsn,pgsn->ps", features.lower, features.lower).reshape(-1)


def _gp_diagonal(arch: Architecture, features: Array) -> Array:
    """``K_GP(x, x)`` of the linear network, every example: the renormalised kernel's diagonal at the GP point."""
    return kernel_diagonal(np.diag(arch.gp_path_variances()), features)


def _phi(arch: Architecture) -> tuple[str, str]:
    """The block's nonlinearity and :func:`placement`."""
    where = placement(arch)
    return arch.nonlinearities[-1 if where == "top" else block_level(arch)], where


def _check_token_features(arch: Architecture, features, name: str = "features") -> TokenFeatures:
    """``features`` if they are :class:`~paththeory.model.TokenFeatures` of ``arch``'s shapes, as float64 arrays."""
    if not isinstance(features, TokenFeatures):
        raise TypeError(f"a block between attention layers needs token-resolved features: {name} must be "
                        f"paththeory.token_features(arch, x); got {type(features).__name__}.")
    lower = jnp.asarray(as_float_array(features.lower, f"{name}.lower", ndim=4))
    upper = jnp.asarray(as_float_array(features.upper, f"{name}.upper", ndim=3))
    n_lower, n_upper = token_path_counts(arch)
    if lower.ndim != 4 or upper.ndim != 3 or lower.shape[:3] != (upper.shape[0], n_lower, upper.shape[2]) or \
            upper.shape[1] != n_upper:
        raise ValueError(f"{name} must hold lower [P, {n_lower}, T, N0] and upper [P, {n_upper}, T] for heads "
                         f"{arch.heads}; got {tuple(lower.shape)} and {tuple(upper.shape)}.")
    if not np.all(np.isfinite(np.asarray(_token_variances(TokenFeatures(lower, upper), 1.0)))):
        raise ValueError(f"{name} are too large for float64 (their token Grams overflow); rescale them.")
    return TokenFeatures(lower, upper)


def _path_features_for_top(features, name: str):
    """Refuse token features for a block on top, which takes path features."""
    if isinstance(features, TokenFeatures):
        raise TypeError(f"this architecture's MLP block is on top: {name} must be paththeory.path_features(arch, x); "
                        "token features are for a block between attention layers.")
    return check_features(features, name)


# --------------------------------------------------------------------------- the action and its minimum


def _kernel(us: list[Array], data, phi: str, cut: int | None) -> Array:
    """The heuristic's training kernel at ``us = [U^(1), ..., U_a]``: :func:`top_kernel` (``cut`` None, ``data`` the
    path kernels' operator) or :func:`between_kernel` (``data``: :class:`TokenGrams`; ``cut``: the block's level)."""
    if cut is None:
        return top_kernel(phi, apply_operator(data, us[0]), us[-1][0, 0])
    return between_kernel(phi, data, us[0], us[cut + 1])


def _action(us: list[Array], data, y: Array, temperature, widths, heads, variances, phi: str, cut: int | None) -> Array:
    """``S/N``: the linear network's entropy at ``us = [U^(1), ..., U_a]`` (levels in order, the readout's last)
    plus the energy of the heuristic's kernel (:func:`_kernel`)."""
    ent = entropy_with_readout(us[:-1], us[-1], widths, heads, variances)
    return (ent + energy(_kernel(us, data, phi, cut), y, temperature)) / jnp.max(jnp.asarray(widths))


_STATICS = ("sizes", "scales", "heads", "variances", "phi", "cut")


def _objective(theta, data, y, temperature, widths, *, sizes, scales, heads, variances, phi, cut):
    """``S/N`` as a function of the solver's coordinates (Cholesky factors with log-diagonals, ``U_a`` last)."""
    return _action(theta_to_matrices(theta, sizes, scales), data, y, temperature, widths, heads, variances, phi, cut)


@partial(jax.jit, static_argnames=_STATICS)
def _objective_and_grads(theta, data, y, temperature, widths, *, sizes, scales, heads, variances, phi, cut):
    """``(S/N, dS/dtheta, max |dS/dU|)``, the last over the symmetric order parameters."""
    us, pullback = jax.vjp(lambda t: theta_to_matrices(t, sizes, scales), theta)
    f, g_us = jax.value_and_grad(lambda u: _action(u, data, y, temperature, widths, heads, variances, phi, cut))(us)
    g_us = [0.5 * (g + g.T) for g in g_us]
    (g_theta,) = pullback(g_us)
    return f, g_theta, jnp.max(jnp.stack([jnp.max(jnp.abs(g)) for g in g_us]))


@partial(jax.jit, static_argnames=_STATICS)
def _hessian(theta, data, y, temperature, widths, **statics):
    """The Hessian of ``S/N`` in the solver's coordinates, one column at a time (forward over reverse): the
    between-layers kernel's intermediates are held once, not once per coordinate."""
    grad = jax.grad(lambda t: _objective(t, data, y, temperature, widths, **statics))
    H = jax.lax.map(lambda v: jax.jvp(grad, (theta,), (v,))[1], jnp.eye(theta.shape[0], dtype=theta.dtype))
    return 0.5 * (H + H.T)


@partial(jax.jit, static_argnames=("max_iter", *_STATICS))
def _quasi_newton(theta0, op, y, temperature, widths, tol, max_iter, **statics):
    """L-BFGS (:func:`paththeory._lbfgs.run`) from ``theta0`` down to ``max |dS/dU| <= tol``."""
    fun = lambda t: _objective_and_grads(t, op, y, temperature, widths, **statics)  # noqa: E731
    f0, g0, gmax0 = fun(theta0)
    d = theta0.shape[0]
    state = State(theta0, f0, g0, gmax0, jnp.zeros((40, d)), jnp.zeros((40, d)), jnp.array(0), jnp.array(0),
                  jnp.array(1), jnp.where(reached(gmax0, f0, tol, 0.0), 1, 0), jnp.array(0))
    return lbfgs(state, fun, tol, max_iter, roundoff=1e-12, max_backtracks=50)


@dataclass(frozen=True)
class NonlinearSolution:
    """A minimum of the heuristic's action at one ``(widths, temperature)``.

    Book: Beyond the paper: nonlinear MLP blocks (https://paththeory.github.io/paththeory/book/nonlinear.html)

    Attributes:
      order_parameters: ``[U^(1), ..., U^(L), U^(M)]``: the paths' ``U`` first, the MLP block's (1 x 1) last.
      U_a: the readout's order parameter (a float).
      widths: ``(n_0, ..., n_L, n_M)``; temperature: ``T``.
      report: ``action`` (S/N), ``grad_norm`` (max ``|d(S/N)/dU|`` over every order parameter, ``U_a``
        included), ``iterations`` (L-BFGS), ``newton_steps``, ``hessian_min_eig`` (the smallest eigenvalue of
        the Hessian of S/N in the solver's coordinates at the end), ``converged``, ``seconds``.
    """

    order_parameters: list[np.ndarray]
    U_a: float
    widths: tuple[float, ...]
    temperature: float
    report: dict = field(default_factory=dict)

    @property
    def U(self) -> np.ndarray:
        """``U^(1)``, the paths' order parameter."""
        return self.order_parameters[0]


class NonlinearTheory:
    """The heuristic theory of one architecture with a nonlinear MLP block and one training set.

    Book: Beyond the paper: nonlinear MLP blocks (https://paththeory.github.io/paththeory/book/nonlinear.html)

    Args:
      arch: attention layers, then one :class:`~paththeory.model.MLP` block (:func:`placement`).
      features: path features of the training set ``[P, n_paths, N0]`` (:func:`~paththeory.model.path_features` of
        ``arch``: the block has identity attention, so they are the attention stack's).
      y: training targets ``[P]`` (one output).
      memory_budget: bytes allowed for precomputed Gram blocks (:func:`~paththeory.kernels.kernel_operator`).

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem()
      >>> arch = pt.Architecture((*arch.attention, pt.MLP("relu")), readout="last")
      >>> theory = NonlinearTheory(arch, pt.path_features(arch, x), np.array([1.0, -1.0, 1.0, -1.0]))
      >>> sol = theory.solve(10, 0.1)
      >>> [u.shape for u in sol.order_parameters], sol.report["converged"]
      ([(6, 6), (2, 2), (1, 1)], True)
    """

    def __init__(self, arch: Architecture, features, y, memory_budget: int = DEFAULT_MEMORY_BUDGET):
        self.phi, self.placement = _phi(arch)
        self.arch = arch
        self.cut = None if self.placement == "top" else block_level(arch)
        if self.cut is None:
            feats = _path_features_for_top(features, "features")
            if feats.shape[1] != arch.n_paths:
                raise ValueError(f"features have {feats.shape[1]} paths but the architecture with heads {arch.heads} "
                                 f"has {arch.n_paths}; compute them with paththeory.path_features(arch, x).")
            zero = np.flatnonzero(np.asarray(_gp_diagonal(arch, feats)) <= 0)
            what = "zero path features (their pre-activation variance is zero at every U)"
        else:
            feats = _check_token_features(arch, features)
            P, H, T = feats.upper.shape
            G = feats.lower.shape[1]
            check_allocation(8 * (G * G + 4 * H * H) * (P * T) ** 2,
                             f"the token kernels of P = {P} examples of T = {T} tokens ({G} lower and {H} upper paths)")
            zero = np.flatnonzero(np.asarray(_token_variances(feats, 1.0)).reshape(P, T).min(axis=1) <= 0)
            what = "tokens with zero features (their pre-activation variance is zero at every U)"
        if zero.size:
            raise ValueError(f"training examples {zero[:5].tolist()} have {what}: the kernel map needs a positive "
                             "variance. Drop them.")
        n_examples = feats.shape[0] if self.cut is None else feats.upper.shape[0]
        labels = as_labels(y, n_examples)
        if labels.shape[1] != 1:
            raise ValueError(f"the nonlinear heuristic takes one output, labels [P]; got {labels.shape[1]} outputs.")
        self.features = feats
        self.y = jnp.asarray(labels[:, 0])
        self.data = (kernel_operator(feats, memory_budget, 1, "dense") if self.cut is None
                     else TokenGrams(token_grams(feats), feats.upper))
        L = arch.n_layers
        self.sizes = tuple(order_parameter_sizes(arch.heads)) + (1,)
        self.scales = tuple(level_scale(l, arch.variances) for l in range(L)) + (arch.variances[-1],)
        self._statics = dict(sizes=self.sizes, scales=self.scales, heads=arch.heads, variances=arch.variances,
                             phi=self.phi, cut=self.cut)

    # ------------------------------------------------------------------ order parameters
    def gp_order_parameters(self) -> list[np.ndarray]:
        """The GP point ``[U^(1), ..., U^(M), U_a]``: ``sigma_a^2 prod_{m >= l} sigma_m^2 I`` and ``sigma_a^2``."""
        return [s * np.eye(n) for s, n in zip(self.scales, self.sizes)]

    def _matrices(self, Us: Sequence, U_a, name: str) -> list[np.ndarray]:
        if not isinstance(Us, (list, tuple)) or len(Us) != len(self.sizes) - 1:
            raise ValueError(f"{name} must be a list of {len(self.sizes) - 1} matrices [U^(1), ..., U^(M)]; got "
                             f"{len(Us) if isinstance(Us, (list, tuple)) else type(Us).__name__}.")
        mats = [check_order_parameter(U, f"{name} U^({l + 1})", n) for l, (U, n) in enumerate(zip(Us, self.sizes))]
        return mats + [np.array([[check_positive(U_a, "U_a")]])]

    def action(self, Us: Sequence, U_a: float, width, temperature) -> float:
        """``S/N`` at explicit order parameters ``[U^(1), ..., U^(M)]`` and ``U_a``."""
        widths = self.arch.widths(width)
        t = check_nonnegative(temperature, "temperature")
        mats = [jnp.asarray(m) for m in self._matrices(Us, U_a, "Us")]
        return float(_action(mats, self.data, self.y, t, widths, self.arch.heads, self.arch.variances, self.phi,
                             self.cut))

    def _check_solution(self, solution, name: str) -> NonlinearSolution:
        """``solution`` if it is a :class:`NonlinearSolution` of this network's sizes, else a clear error."""
        if not isinstance(solution, NonlinearSolution):
            raise TypeError(f"{name} must be a NonlinearSolution (NonlinearTheory.solve); got {type(solution).__name__}.")
        shapes = [np.shape(u) for u in solution.order_parameters]
        if shapes != [(n, n) for n in self.sizes[:-1]]:
            raise ValueError(f"{name} holds order parameters of shapes {shapes}, not this network's "
                             f"{[(n, n) for n in self.sizes[:-1]]}: it was solved for another architecture.")
        return solution

    def kernel(self, solution: NonlinearSolution) -> Array:
        """The training kernel ``K(U) [P, P]`` at a solution."""
        self._check_solution(solution, "solution")
        us = [jnp.asarray(u) for u in solution.order_parameters] + [jnp.array([[solution.U_a]])]
        return _kernel(us, self.data, self.phi, self.cut)

    # ------------------------------------------------------------------ the minimum
    def solve(self, width, temperature, init: NonlinearSolution | None = None, tol: float = 1e-10,
              max_iter: int = 2000, newton_steps: int = 30) -> NonlinearSolution:
        """Minimise ``S/N`` at widths ``width`` (N, or ``(n_0, ..., n_M)``) and temperature ``T > 0``: L-BFGS from
        the GP point (or ``init``) down to ``max |d(S/N)/dU| <=`` :data:`NEWTON_SWITCH`, then Newton steps with the
        exact Hessian (a shift where it is not positive definite, backtracking) down to ``tol``.

        Example:
          >>> from paththeory.tasks.examples import model_problem
          >>> arch, _, x = model_problem()
          >>> arch = pt.Architecture((*arch.attention, pt.MLP("erf")), readout="last")
          >>> sol = NonlinearTheory(arch, pt.path_features(arch, x), np.array([1.0, -1.0, 1.0, -1.0])).solve(10, 0.1)
          >>> sol.report["grad_norm"] <= 1e-10, sol.report["hessian_min_eig"] > 0
          (True, True)
        """
        widths = self.arch.widths(width)
        t = check_positive(temperature, "temperature")
        tol = check_positive(tol, "tol")
        max_iter, newton_steps = check_count(max_iter, "max_iter"), check_count(newton_steps, "newton_steps", minimum=0)
        start = time.perf_counter()
        if init is not None:
            self._check_solution(init, "init")
        mats = self.gp_order_parameters() if init is None else [*init.order_parameters, np.array([[init.U_a]])]
        theta = jnp.asarray(matrices_to_theta(mats, self.scales))
        args = (self.data, self.y, t, jnp.asarray(widths))
        state = _quasi_newton(theta, *args, max(tol, NEWTON_SWITCH), max_iter, **self._statics)
        theta, (f, g, gmax) = state.theta, (state.f, state.g, state.gmax)
        steps = 0
        while float(gmax) > tol and steps < newton_steps:
            moved = self._newton_step(theta, f, g, gmax, args)
            if moved is None:  # no finite step left (a singular order parameter): stop, unconverged
                break
            theta, f, g, gmax = moved
            steps += 1
        H = np.asarray(_hessian(theta, *args, **self._statics))
        eig = float(np.linalg.eigvalsh(H)[0]) if np.all(np.isfinite(H)) else float("nan")
        us = [np.asarray(u) for u in theta_to_matrices(theta, self.sizes, self.scales)]
        converged = bool(float(gmax) <= tol and eig > 0)
        report = {"action": float(f), "grad_norm": float(gmax), "iterations": int(state.it), "newton_steps": steps,
                  "hessian_min_eig": eig, "converged": converged, "seconds": time.perf_counter() - start,
                  "tolerance": tol}
        if not converged:
            warnings.warn(f"NonlinearTheory.solve did not converge at widths {widths}, T = {t:g}: max |dS/dU| = "
                          f"{float(gmax):.2e} (tolerance {tol:g}), least Hessian eigenvalue {eig:.3g}; raise max_iter "
                          "or newton_steps, or check the data's scale.", ConvergenceWarning, stacklevel=2)
        return NonlinearSolution(us[:-1], float(us[-1][0, 0]), widths, t, report)

    def _newton_step(self, theta, f, g, gmax, args):
        """One Newton step on ``S/N`` with backtracking (the Hessian shifted to positive definite if needed), or
        ``None`` where the Hessian or the gradient is not finite."""
        H = np.asarray(_hessian(theta, *args, **self._statics))
        if not (np.all(np.isfinite(H)) and np.all(np.isfinite(np.asarray(g)))):
            return None
        eig = np.linalg.eigvalsh(H)
        shift = 0.0 if eig[0] > 1e-12 * max(abs(eig[-1]), 1.0) else 1e-8 * abs(eig[-1]) - eig[0]
        direction = -np.linalg.solve(H + shift * np.eye(H.shape[0]), np.asarray(g))
        for k in range(40):
            trial = theta + (0.5**k) * direction
            f_new, g_new, gmax_new = _objective_and_grads(trial, *args, **self._statics)
            if not (np.isfinite(float(f_new)) and np.isfinite(float(gmax_new))):
                continue
            if float(f_new) <= float(f) + 1e-4 * (0.5**k) * float(np.asarray(g) @ direction) or (
                    float(gmax_new) < float(gmax) and float(f_new) <= float(f) + 1e-13 * abs(float(f))):
                return trial, f_new, g_new, gmax_new
        return None

    def gp_solution(self, width, temperature) -> NonlinearSolution:
        """The GP point as a solution (its predictor is the nonlinear GP's), not a minimum: ``report`` is empty."""
        mats = self.gp_order_parameters()
        return NonlinearSolution(mats[:-1], float(mats[-1][0, 0]), self.arch.widths(width),
                                 check_positive(temperature, "temperature"), {})

    # ------------------------------------------------------------------ the predictor
    def predictor(self, solution: NonlinearSolution, features_test) -> tuple[Array, Array]:
        """Mean and variance of the output on test inputs, ``([P_test], [P_test])``: with ``k_*`` the same map applied
        to the test-training kernel (each point's variance from its own diagonal),
        ``<f(x_*)> = k_*^T (K + T I)^{-1} y`` and ``Var = K(x_*, x_*) - k_*^T (K + T I)^{-1} k_*``. Between attention
        layers, ``features_test`` are :class:`~paththeory.model.TokenFeatures`, taken :data:`PREDICT_CHUNK` test
        examples at a time.

        Example:
          >>> from paththeory.tasks.examples import model_problem
          >>> arch, _, x = model_problem()
          >>> arch = pt.Architecture((*arch.attention, pt.MLP("relu")), readout="last")
          >>> f = pt.path_features(arch, x)
          >>> theory = NonlinearTheory(arch, f[:3], np.array([1.0, -1.0, 1.0]))
          >>> mean, var = theory.predictor(theory.solve(10, 0.1), f)
          >>> mean.shape, bool(np.all(var > -1e-12))
          ((4,), True)
        """
        self._check_solution(solution, "solution")
        K = self.kernel(solution)
        chol = jnp.linalg.cholesky(K + solution.temperature * jnp.eye(K.shape[0]))
        alpha = jax.scipy.linalg.cho_solve((chol, True), self.y)
        if self.cut is None:
            k_star, prior = self._top_cross(solution, features_test)
        else:
            k_star, prior = self._between_cross(solution, _check_token_features(self.arch, features_test,
                                                                                "features_test"))
        v = jax.scipy.linalg.solve_triangular(chol, k_star, lower=True)
        mean, var = k_star.T @ alpha, prior - jnp.sum(v * v, axis=0)
        if not (np.all(np.isfinite(np.asarray(mean))) and np.all(np.isfinite(np.asarray(var)))):
            raise ValueError("the predictor is not finite: features_test are too large for float64 next to the "
                             "training features; rescale them.")
        return mean, var

    def _top_cross(self, solution: NonlinearSolution, features_test) -> tuple[Array, Array]:
        """``(k_* [P, P_test], K(x_*, x_*) [P_test])`` for a block on top."""
        test = check_features(features_test, "features_test")
        if test.shape[1:] != self.features.shape[1:]:
            raise ValueError(f"features_test must be [P_test, {self.features.shape[1]}, {self.features.shape[2]}] like "
                             f"the training features; got {tuple(test.shape)}.")
        U, U_a = jnp.asarray(solution.U), solution.U_a
        q_train = kernel_diagonal(U, self.features) / U_a
        q_test = kernel_diagonal(U, test) / U_a
        k_star = U_a * cross_map(self.phi, q_train, q_test, kernel_matrix(U, self.features, test) / U_a)
        return k_star, U_a * second_moment(self.phi, q_test, q_test, q_test)

    def _between_cross(self, solution: NonlinearSolution, test: TokenFeatures) -> tuple[Array, Array]:
        """``(k_* [P, P_test], K(x_*, x_*) [P_test])`` for a block between attention layers, in chunks of test
        examples (the last one padded with copies of the first test example)."""
        if test.lower.shape[1:] != self.features.lower.shape[1:] or test.upper.shape[1:] != self.features.upper.shape[1:]:
            raise ValueError(f"features_test must hold lower [P_test, {', '.join(map(str, self.features.lower.shape[1:]))}]"
                             f" and upper [P_test, {', '.join(map(str, self.features.upper.shape[1:]))}] like the "
                             f"training features; got {tuple(test.lower.shape)} and {tuple(test.upper.shape)}.")
        n = test.upper.shape[0]
        pad = (-n) % PREDICT_CHUNK
        padded = TokenFeatures(*(jnp.concatenate([a, jnp.repeat(a[:1], pad, axis=0)]) for a in test))
        us = [jnp.asarray(u) for u in solution.order_parameters]
        parts = [_between_test_chunk(self.phi, self.features, TokenFeatures(*(a[i:i + PREDICT_CHUNK] for a in padded)),
                                     us[0], us[self.cut + 1])
                 for i in range(0, n + pad, PREDICT_CHUNK)]
        return jnp.concatenate([p[0] for p in parts], axis=1)[:, :n], jnp.concatenate([p[1] for p in parts])[:n]


def _token_diagonal(U: Array, lower: Array, n_upper: int) -> Array:
    """``Q_{hh}((x, s), (x, s))`` for every token of ``lower [P, G, T, N0]``: ``[H, P T]``."""
    G = lower.shape[1]
    u = jnp.einsum("ahbh->hab", U.reshape(G, n_upper, G, n_upper))
    return jnp.einsum("hab,abps->hps", u, jnp.einsum("pgsn,pksn->gkps", lower, lower)).reshape(n_upper, -1)


@partial(jax.jit, static_argnames=("phi",))
def _between_test_chunk(phi: str, train: TokenFeatures, test: TokenFeatures, U: Array, U_cut: Array) -> tuple:
    """``(k_* [P, chunk], K(x_*, x_*) [chunk])`` of :func:`between_kernel` between training and test examples."""
    P, H, T = train.upper.shape
    C = test.upper.shape[0]
    d = jnp.sqrt(jnp.diagonal(U_cut))
    dd = d[:, None, None, None] * d[None, :, None, None]
    q_train, q_test = (_token_diagonal(U, f.lower, H) / d[:, None] ** 2 for f in (train, test))
    Qt = _pre_activation(U, token_grams(train, test), H) / dd
    Phi = _post_activation(phi, Qt, q_train, q_test).reshape(H, H, P, T, C, T)
    k_star = jnp.einsum("h,k,phs,hkpsqt,qkt->pq", d, d, train.upper, Phi, test.upper)
    self_grams = jnp.einsum("pgsn,phtn->ghpst", test.lower, test.lower)  # each test example with itself
    Q_self = jnp.einsum("ahbk,abpst->hkpst", U.reshape(train.lower.shape[1], H, -1, H), self_grams) / dd[..., None]
    Phi_self = jax.vmap(lambda Qp, qp: _post_activation(phi, Qp, qp, qp), in_axes=(2, 1))(
        Q_self, q_test.reshape(H, C, T))  # [C, H, H, T, T]
    prior = jnp.einsum("h,k,phs,phkst,pkt->p", d, d, test.upper, Phi_self, test.upper)
    return k_star, prior
