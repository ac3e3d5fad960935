"""The finite network in path form and its readout's exact conditional, shared by the samplers.

The network of the paper's Eqs. (1-4) with the attention fixed is evaluated from path features
``xi`` computed once per data set (:func:`paththeory.model.path_features`): ``f = Phi b`` with the
pooled last-layer activations
``Phi = sigma_a / (sigma_0 sqrt(n_0...n_L)) sum_pi V^L_{h_L}...V^1_{h_1} V^0 xi^pi`` (:func:`readout_design`)
and the standardised readout ``b = a / sigma_a ~ N(0, I)``. Given the value weights, the labels are
Gaussian, ``y ~ N(0, T I_P + Phi Phi^T)`` (:func:`marginal_log_likelihood`), and ``b`` has an exact
Gaussian conditional, drawn by Matheron's rule (:func:`draw_readout`). Labels ``[P, C]`` give one
readout column per output; the columns are independent given ``Phi``.
"""

from __future__ import annotations

import math
from typing import Callable

import jax
import jax.numpy as jnp

from paththeory._checks import as_float_array, check_key, check_positive
from paththeory.kernel_maps import activation
from paththeory.model import Architecture, TokenFeatures, block_level, check_architecture, effective_weights

Array = jax.Array


def readout_design(arch: Architecture, params: dict, features: Array | TokenFeatures) -> Array:
    """``Phi = sigma_a df/da`` ``[B, n_L]``, so that ``f = Phi b`` with ``b = a / sigma_a`` (the paper's Eqs. 5-7).

    ``Phi = sigma_a / (sigma_0 sqrt(n_0 n_1 ... n_L)) sum_pi V^L_{h_L} ... V^1_{h_1} V^0 xi^pi``: the
    pooled last-layer activations computed from path features ``[B, n_paths, N0]``; ``params``
    needs ``V0`` and ``V`` only. A skip branch is the identity, without its level's width factor. A nonlinear
    :class:`~paththeory.model.MLP` block as the top level (one-token readout) applies its ``phi`` to the
    readout token's pre-activation. A block between attention layers needs the token-resolved
    :class:`~paththeory.model.TokenFeatures` (:func:`token_readout_design`).
    """
    check_architecture(arch)
    if not isinstance(params, dict) or "V0" not in params or "V" not in params:
        raise ValueError("params must be a dict with the weights 'V0' and 'V' (paththeory.sample_prior).")
    if isinstance(features, TokenFeatures):
        return token_readout_design(arch, params, features)
    n_in = params["V0"].shape[1]
    if jnp.ndim(features) != 3 or tuple(jnp.shape(features)[1:]) != (arch.n_paths, n_in):
        raise ValueError(f"features must be [B, n_paths={arch.n_paths}, N0={n_in}] (paththeory.path_features(arch, x)); "
                         f"got {tuple(jnp.shape(features))}.")
    check_nonlinear_placement(arch)
    z = jnp.einsum("in,bpn->bpi", params["V0"], features)  # [B, paths, n_0]
    sd0, n0 = math.sqrt(arch.variances[0]), params["V0"].shape[0]
    for skip, v, phi in zip(arch.skips, params["V"], arch.nonlinearities):  # contract the slowest path index
        z = z.reshape(z.shape[0], v.shape[0] + skip, -1, z.shape[-1])
        heads = jnp.einsum("hji,bhqi->bqj", v, z[:, skip:]) / math.sqrt(v.shape[1])
        if phi != "identity":  # the top level: z = sigma_0 sqrt(n_0 / n_l) times the network's pre-activation
            unit = sd0 * math.sqrt(n0 / v.shape[1])
            heads = unit * activation(phi, heads / unit)
        z = z[:, 0] + heads if skip else heads  # a skip adds its input, with no width factor
    scale = arch.variances[-1] / (arch.variances[0] * params["V0"].shape[0])
    return math.sqrt(scale) * z[:, 0, :]


def token_readout_design(arch: Architecture, params: dict, features: TokenFeatures) -> Array:
    """:func:`readout_design` of a network with one :class:`~paththeory.model.MLP` block between attention layers,
    from its token-resolved features (:func:`paththeory.model.token_features`): the lower paths' activations
    ``V^k ... V^1 V^0 Y_g(x)_t / (sigma_0 sqrt(n_0 ... n_{k-1}))`` token by token, the block's
    ``phi(M z_t / sqrt(n_k))``, then the upper paths' attention to the readout and their value weights.

    Book: Beyond the paper: nonlinear MLP blocks (https://paththeory.github.io/paththeory/book/nonlinear.html)
    """
    cut = block_level(arch)
    lower, upper = features
    z = jnp.einsum("in,bgtn->bgti", params["V0"], lower) / math.sqrt(arch.variances[0])  # [B, paths, T, n_0]
    for v in params["V"][:cut]:  # contract the slowest lower path index
        z = z.reshape(z.shape[0], v.shape[0], -1, *z.shape[2:])
        z = jnp.einsum("hji,bhqti->bqtj", v, z) / math.sqrt(v.shape[2])
    block = params["V"][cut][0]
    z = activation(arch.nonlinearities[cut], jnp.einsum("ji,bti->btj", block, z[:, 0]) / math.sqrt(block.shape[1]))
    w = jnp.einsum("bht,btj->bhj", upper, z)  # [B, upper paths, n_k]
    for v in params["V"][cut + 1:]:  # contract the slowest upper path index
        w = w.reshape(w.shape[0], v.shape[0], -1, w.shape[-1])
        w = jnp.einsum("hji,bhqi->bqj", v, w) / math.sqrt(v.shape[2])
    return math.sqrt(arch.variances[-1] / w.shape[-1]) * w[:, 0]


def check_nonlinear_placement(arch: Architecture, tokens: bool = False) -> None:
    """Path features reach a nonlinear MLP block only as the top level (no skip) with a one-token readout: there
    the block acts on the pooled activation. Anywhere else the nonlinearity would act on a sum over tokens, except
    with token features (``tokens``), which take one block between attention layers (:func:`block_level`)."""
    if tokens:
        block_level(arch)
        return
    top = arch.n_layers - 1
    inside = [l for l, phi in enumerate(arch.nonlinearities) if phi != "identity"]
    if inside and (inside != [top] or arch.skips[top] or arch.readout == "mean"):
        between = "; a block between attention layers takes paththeory.token_features(arch, x)" if (
            len(inside) == 1 and 0 < inside[0] < top and not any(arch.skips)) else ""
        raise ValueError(f"the samplers take a nonlinear MLP block only as the top level, without a skip, with the "
                         f"readout 'first' or 'last' (there it acts on the one readout token's vector){between}; got "
                         f"nonlinearities {arch.nonlinearities}, skips {arch.skips}, readout {arch.readout!r}.")


def _gaussian_factor(phi: Array, temperature: float) -> tuple[Callable[[Array], Array], Array]:
    """``v -> C^{-1} v`` and ``log det C`` for ``C = T I_P + Phi Phi^T``, by the smaller Cholesky factor."""
    if not isinstance(temperature, jax.core.Tracer):
        temperature = check_positive(temperature, "temperature")
    p, n = phi.shape
    if n <= p:  # Woodbury: C^{-1} = (I - Phi M^{-1} Phi^T) / T with M = T I_n + Phi^T Phi
        chol = jnp.linalg.cholesky(temperature * jnp.eye(n, dtype=phi.dtype) + phi.T @ phi)
        logdet = 2.0 * jnp.sum(jnp.log(jnp.diag(chol))) + (p - n) * jnp.log(temperature)

        def solve(v: Array) -> Array:
            return (v - phi @ jax.scipy.linalg.cho_solve((chol, True), phi.T @ v)) / temperature

    else:
        chol = jnp.linalg.cholesky(temperature * jnp.eye(p, dtype=phi.dtype) + phi @ phi.T)
        logdet = 2.0 * jnp.sum(jnp.log(jnp.diag(chol)))

        def solve(v: Array) -> Array:
            return jax.scipy.linalg.cho_solve((chol, True), v)

    return solve, logdet


def _check_design(phi: Array, y: Array) -> tuple[Array, Array]:
    """``phi`` and ``y`` as real arrays (traced ones pass through), after checking that ``phi`` is
    ``[P, n_L]``, ``y`` is ``[P]`` or ``[P, C]``, and both are finite."""
    phi, y = as_float_array(phi, "phi", ndim=2), as_float_array(y, "y", ndim=(1, 2))
    if jnp.shape(y)[0] != jnp.shape(phi)[0]:
        raise ValueError(f"phi must be [P, n_L] and y [P] or [P, C] with the same P; got {tuple(jnp.shape(phi))} "
                         f"and {tuple(jnp.shape(y))}.")
    return phi, y


def marginal_log_likelihood(phi: Array, y: Array, temperature: float) -> Array:
    """``sum_c log N(Y_{:, c}; 0, T I + Phi Phi^T)``: the likelihood with the readout integrated out.

    ``phi [P, n_L]``; ``y [P]`` (one output) or ``[P, C]`` (the columns are independent given ``Phi``).
    """
    phi, y = _check_design(phi, y)
    solve, logdet = _gaussian_factor(phi, temperature)
    n_outputs = y.size // y.shape[0]
    return -0.5 * (jnp.vdot(y, solve(y)) + n_outputs * logdet + y.size * math.log(2.0 * math.pi))


def draw_readout(phi: Array, y: Array, temperature: float, key: Array) -> Array:
    """One exact draw of ``b = a / sigma_a`` given ``Phi``: ``[n_L]`` for ``y [P]``, ``[n_L, C]`` for ``y [P, C]``
    (one column per output). The posterior is ``N(M^{-1} Phi^T y, T M^{-1})`` with ``M = T I + Phi^T Phi``;
    for ``n_L <= P`` it is drawn in that form, otherwise by Matheron's rule,
    ``b = e + Phi^T (T I + Phi Phi^T)^{-1} (y - Phi e - sqrt(T) d)``: either way without dividing by ``T``."""
    phi, y = _check_design(phi, y)
    key = check_key(key)
    k_e, k_d = jax.random.split(key)
    e = jax.random.normal(k_e, (phi.shape[1],) + y.shape[1:], phi.dtype)
    d = jax.random.normal(k_d, y.shape, phi.dtype)
    if phi.shape[1] <= phi.shape[0]:  # b = M^{-1} (Phi^T (y + sqrt(T) d) + T e), M = T I + Phi^T Phi: no 1 / T
        if not isinstance(temperature, jax.core.Tracer):
            temperature = check_positive(temperature, "temperature")
        chol = jnp.linalg.cholesky(temperature * jnp.eye(phi.shape[1], dtype=phi.dtype) + phi.T @ phi)
        return jax.scipy.linalg.cho_solve((chol, True), phi.T @ (y + jnp.sqrt(temperature) * d) + temperature * e)
    solve, _ = _gaussian_factor(phi, temperature)
    return e + phi.T @ solve(y - phi @ e - jnp.sqrt(temperature) * d)


def draw_statistics(arch: Architecture, params: dict, b: Array, features_test: Array
                    ) -> tuple[Array, Array, tuple[Array, ...]]:
    """One posterior draw's order parameter ``w w^T / n_0`` ``[C n_paths, C n_paths]`` (the paper's Eq. 13), test
    outputs ``Phi_test b`` (``[P_test]`` or ``[P_test, C]``, as ``b``) and the order parameters of the levels
    above, ``(U^(2), ..., U^(L), U_a)`` (:func:`level_order_parameters`)."""
    levels = level_order_parameters(arch, params, b)
    return levels[0], readout_design(arch, params, features_test) @ b, levels[1:]


def level_order_parameters(arch: Architecture, params: dict, b: Array) -> tuple[Array, ...]:
    """``(U^(1), ..., U^(L), U_a)`` of one draw: the Gram matrices ``w^(l) w^(l)^T / n_{l-1}`` of the partial
    effective weights ``w^(l),(c, b_l..b_L) = M_l(b_l)^T ... M_L(b_L)^T a_c`` (``M(h) = V_h / sqrt(n_l)``, the
    identity for a skip), output index slowest; ``U_a = a^T a / n_L``. A skip level's skip block is the level
    above's Gram matrix, draw by draw.

    ``b``: standardised readout ``[n_L]`` (one output) or ``[n_L, C]``.
    """
    a = math.sqrt(arch.variances[-1]) * jnp.reshape(b, (b.shape[0], -1)).T  # [C, n_L]
    w, grams = a[:, None, :], [a @ a.T / a.shape[1]]  # w: [C, partial paths, width]
    for skip, v in zip(reversed(arch.skips), reversed(params["V"])):
        heads = jnp.einsum("cpj,hji->chpi", w, v) / math.sqrt(v.shape[1])
        w = jnp.concatenate([w[:, None], heads], axis=1) if skip else heads
        w = w.reshape(w.shape[0], -1, v.shape[2])  # this level's branch slowest after the output
        flat = w.reshape(-1, w.shape[-1])
        grams.append(flat @ flat.T / flat.shape[1])
    return tuple(grams[::-1])


def output_effective_weights(arch: Architecture, params: dict, b: Array) -> Array:
    """``w^{c pi}`` of every output, ``[C n_paths, n_0]`` with the output index slowest.

    ``b``: standardised readout ``[n_L]`` (one output) or ``[n_L, C]``; output ``c`` has readout
    ``a_c = sigma_a b_{:, c}`` and the effective weights of :func:`paththeory.model.effective_weights`.

    Book: The derivation with an output index
    (https://paththeory.github.io/paththeory/book/many_outputs.html#many-outputs-derivation)
    """
    columns = jnp.reshape(b, (b.shape[0], -1)).T  # [C, n_L]
    sd_a = math.sqrt(arch.variances[-1])
    w = jax.vmap(lambda bc: effective_weights(arch, {**params, "a": sd_a * bc}))(columns)
    return w.reshape(-1, w.shape[-1])

