"""Exact blocked Gibbs sampling of the finite network's posterior (the paper's Eqs. 8 and 13).

With the attention fixed, the output is linear (affine at a skip level) in each weight block given the
others: the input projection ``V^0``, each layer's value weights ``V^l`` (all its heads in one block) and
the standardised readout ``b``. Priors and likelihood are Gaussian, so each block's conditional
posterior is exactly Gaussian, and a sweep draws every block from it in turn.

**Skip connections** (:class:`~paththeory.model.Residual`). A skip level has ``B_l = H_l + 1`` branches, the skip
first; in path form the skip branch is the identity without the level's width factor, written here as the
branch matrix ``sqrt(n_l) I`` next to the heads' ``V^l_h`` so that the common ``scale`` stays that of the network
without skips (:func:`branch_weights`). Given the other blocks the output is then *affine* in a skip level's
``V^l``: the paths through its skip do not involve ``V^l`` and add a constant ``f_skip``, so ``V^l`` is drawn as
below with labels ``y - f_skip`` and only the heads' paths in ``J`` (:func:`level_draw`). ``V^0`` and ``b`` enter
every path and stay linear. Without skips every step is the one described below, unchanged.

**One block's draw** (Matheron's rule; Bhattacharya, Chakraborty and Mallick 2016). Write the block's
entries as ``theta`` (prior ``N(0, s2 I)``, ``d`` entries) and the outputs as ``f = J theta``
``[P C]``. Then

    theta = theta0 + s2 J^T (s2 J J^T + T I)^{-1} (y - J theta0 - sqrt(T) eps),
    theta0 ~ N(0, s2 I),  eps ~ N(0, I_{PC}),

is an exact draw from ``N(mu, Sigma)``, ``Sigma = (I / s2 + J^T J / T)^{-1}``, ``mu = Sigma J^T y / T``:
one ``PC x PC`` Cholesky factor, and no ``d x d`` matrix. ``J`` itself is never formed either. In
path form ``f_{mu c} = s sum_pi l_{pi c}^T W_{h(pi)} r_{mu pi}``, with ``r_{mu pi}`` the path's
activations below the block (``V^{l-1}_{h_{l-1}}...V^0 xi^pi_mu``), ``l_{pi c}`` the readout pulled back
through the layers above (``(V^L_{h_L}...V^{l+1}_{h_{l+1}})^T b_c``) and ``s`` the network's scale
(:func:`~paththeory.sampling.path_form.readout_design`). So ``J J^T`` is a sum over pairs of paths through
the same head of ``(l_pi . l_sigma)(r_mu pi . r_nu sigma)``, and ``J^T alpha`` a sum of outer products.
A block with ``H`` heads between widths ``n_in`` and ``n_out`` costs about ``2 P |Pi| n_out n_in C`` flops
(its outputs and pull-back), ``(P C)^2 |Pi|^2 n_in / H`` (the Gram matrix: pairs of paths through one
head) and ``(P C)^3 / 3`` (its Cholesky factor).

**A sweep**: the left factors of every block top-down from ``b``, then ``V^0, V^1, ..., V^L`` bottom-up
(each draw updates the activations the next block needs), then ``b`` given them all
(:func:`~paththeory.sampling.path_form.draw_readout`). One compiled call sweeps every chain (as a batch on
a GPU, one after another on a CPU); each kept sweep gives one
draw of the test outputs and of ``U = w w^T / n_0`` (the effective weights of
:func:`~paththeory.sampling.path_form.output_effective_weights`), summarised with the same R-hat and
ESS as NUTS (:func:`~paththeory.sampling.results.collect`).

**Speed** (``paththeory bench --case sampling``: the Markov task, P = 100, T = 0.01, four paths, both
samplers from a prior draw with two chains, NUTS 100 + 100 iterations, Gibbs 500 + 2000 sweeps; one
process on the 2-core CPU, shared with other jobs, so the numbers move with the load: a rerun at
N = 10 gave 1.8x; compilation included). Least bulk ESS over ``U``'s
entries per CPU-second, NUTS -> Gibbs: N = 10: 3.9 -> 9.7 (2.5x); N = 30: 8.3 -> 33 (4.0x);
N = 100: 2.0 -> 60 (30x); N = 300: 0.13 -> 16 (128x). Time to a 2 % Monte Carlo error on ``|U|``:
25 -> 9.3 s, 10 -> 4.3 s, 18 -> 1.1 s, 89 -> 2.0 s. R-hat over ``U``: at most 1.046 (Gibbs) and 1.037
(NUTS).

**The slow direction at small width** (``paththeory.experiments.bench_sampling.mixing``). At N = 10 a kept sweep is worth 1/18 to 1/50 of an independent
draw of an entry of ``U`` (four chains of 2,000 or 2,500 sweeps), and the readout's norm ``|b|^2`` is the slowest
quantity (1/69), while the norms of ``V^0``, ``V^1``, ``V^2`` mix within a few sweeps. Two exact extra
moves were measured on prototypes (not kept in the package) and left out: drawing the scale that moves ``b`` against the part of ``V^0`` the
outputs see (a one-dimensional conditional along a group of moves that leaves every output unchanged)
doubled the ESS of ``|b|^2`` and left that of ``U`` unchanged; twenty Metropolis-Hastings steps per
sweep on ``V^1 -> V^1 G`` (``G`` in GL(n_0)) with ``V^0`` integrated out raised ``U``'s ESS per sweep
1.1-2.3x at five times the cost of a sweep, a loss per second.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Literal, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from paththeory._checks import check_allocation, check_flag
from paththeory.model import Architecture, sample_prior, weight_count
from paththeory.sampling.path_form import draw_readout, draw_statistics
from paththeory.sampling.results import (
    ChainReport, PosteriorSamples, TimeLimitReached, check_draws_memory, check_finite_draws, check_inputs,
    check_schedule, check_target, collect, draws_to_add, least_ess_U, resolve_chain_method, stopped_record)

Array = jax.Array


# --------------------------------------------------------------------------- one block


def block_outputs(w: Array, left: Array, right: Array, scale: float) -> Array:
    """``f = J w``: ``f_{mu c} = scale sum_{a h b} left[a, h, b, :, c] . (w_h right[mu, a, h, b])`` ``[P, C]``.

    Paths are indexed ``(a, h, b)`` with ``h`` the block's head (:func:`block_layout`); ``w [H, n_out, n_in]``,
    ``left [A, H, B, n_out, C]`` (the readout pulled back from above), ``right [P, A, H, B, n_in]`` (the
    paths' activations below the block).
    """
    return scale * jnp.einsum("ahbic,mahbi->mc", left, jnp.einsum("hij,mahbj->mahbi", w, right))


def block_gram(left: Array, right: Array, scale: float) -> Array:
    """``J J^T`` ``[P C, P C]``: pairs of paths through the same head, ``(l_pi . l_sigma)(r_mu pi . r_nu sigma)``."""
    p, c = right.shape[0], left.shape[-1]
    same = jnp.einsum("ahbic,xhyid->habxycd", left, left)  # l_pi . l_sigma, same head only
    return scale**2 * jnp.einsum("habxycd,mahbj,nxhyj->mcnd", same, right, right).reshape(p * c, p * c)


def block_pullback(alpha: Array, left: Array, right: Array, scale: float) -> Array:
    """``J^T alpha`` ``[H, n_out, n_in]`` for ``alpha [P, C]``: a sum of outer products, never ``J`` itself."""
    return scale * jnp.einsum("ahbic,mc,mahbj->hij", left, alpha, right)


def block_draw(w: Array, left: Array, right: Array, y: Array, scale: float, variance: float,
               temperature: float, key: Array) -> Array:
    """One exact draw of a weight block ``w [H, n_out, n_in]`` from its Gaussian conditional (Matheron's rule).

    ``f = J w`` (:func:`block_outputs`), labels ``y [P, C]``, prior ``N(0, variance)`` per entry, likelihood
    variance ``temperature``: ``w = w0 + variance J^T (variance J J^T + T I)^{-1} (y - J w0 - sqrt(T) eps)``
    with ``w0`` a prior draw; a block with fewer entries than ``P C`` uses the precision form
    ``w = M^{-1} (J^T (y + sqrt(T) eps) + T e / sqrt(variance))``, ``M = T I / variance + J^T J``, which never
    divides by ``T``. ``w`` gives only the shape: a Gibbs draw does not depend on the block's current value.
    """
    k_prior, k_noise = jax.random.split(key)
    p, c = y.shape
    noise = jnp.sqrt(temperature) * jax.random.normal(k_noise, y.shape, y.dtype)
    if w.size < p * c:  # fewer entries than outputs: the precision form, T Sigma^{-1} = T I / variance + J^T J
        jac = jax.vmap(lambda e: block_pullback(e.reshape(p, c), left, right, scale).reshape(-1))(
            jnp.eye(p * c, dtype=y.dtype))  # [P C, d]
        chol = jnp.linalg.cholesky(temperature / variance * jnp.eye(w.size, dtype=y.dtype) + jac.T @ jac)
        e = jax.random.normal(k_prior, (w.size,), y.dtype)
        rhs = jac.T @ (y + noise).reshape(-1) + jnp.sqrt(temperature / variance) * jnp.sqrt(temperature) * e
        return jax.scipy.linalg.cho_solve((chol, True), rhs).reshape(w.shape)
    w0 = math.sqrt(variance) * jax.random.normal(k_prior, w.shape, y.dtype)
    gram = block_gram(left, right, scale)
    chol = jnp.linalg.cholesky(variance * gram + temperature * jnp.eye(p * c, dtype=y.dtype))
    residual = y - block_outputs(w0, left, right, scale) - noise
    alpha = jax.scipy.linalg.cho_solve((chol, True), residual.reshape(-1)).reshape(p, c)
    return w0 + variance * block_pullback(alpha, left, right, scale)


def block_layout(heads: Sequence[int]) -> list[tuple[int, int, int]]:
    """``(A, H, B)`` of each block ``V^0, V^1..V^L``: the path index ``(a, h, b)`` with ``h`` the block's branch.

    Paths run with layer 1's branch slowest (``paththeory.Architecture.path_names``), so layer
    ``l`` has ``A = H_1...H_{l-1}`` and ``B = H_{l+1}...H_L``; ``V^0`` acts on every path alike (one "head").
    With skip connections pass ``arch.branches`` (a skip level's ``H_l + 1`` branches, the skip first).
    """
    heads = tuple(heads)
    layout = [(1, 1, math.prod(heads))]
    for l, h in enumerate(heads):
        layout.append((math.prod(heads[:l]), h, math.prod(heads[l + 1:])))
    return layout


def branch_weights(v: Array, skip: bool) -> Array:
    """Every branch's matrix of one level, ``[B_l, n_l, n_{l-1}]``: ``v`` itself without a skip; with one the skip
    first, as ``sqrt(n_l) I`` (the identity, with the level's width factor ``1 / sqrt(n_l)`` of the common
    ``scale`` undone, :func:`gibbs_sweep`), then the heads ``v``."""
    if not skip:
        return v
    n = v.shape[1]
    return jnp.concatenate([math.sqrt(n) * jnp.eye(n, dtype=v.dtype)[None], v])


def left_factors(vs: Sequence[Array], b: Array, layout: list[tuple[int, int, int]]) -> list[Array]:
    """The readout pulled back below each block: ``[A, H, B, n_l, C]`` for ``V^0..V^L`` (top-down from ``b [n_L, C]``).

    ``vs``: every level's branch matrices (:func:`branch_weights`; the value weights without skips)."""
    n_paths = layout[0][2]
    left = jnp.broadcast_to(b, (n_paths,) + b.shape)  # [paths, n_L, C]
    lefts: list[Array] = [left] * (len(vs) + 1)
    for l in range(len(vs), 0, -1):  # V^l maps n_{l-1} to n_l: pull the readout back through it
        lefts[l] = left.reshape(layout[l] + left.shape[1:])
        left = jnp.einsum("hij,ahbic->ahbjc", vs[l - 1], lefts[l]).reshape(n_paths, -1, b.shape[-1])
    lefts[0] = left.reshape(layout[0] + left.shape[1:])
    return lefts


def level_draw(w: Array, left: Array, right: Array, y: Array, scale: float, variance: float,
               temperature: float, key: Array, skip: bool) -> Array:
    """One exact draw of a level's value weights ``w [H, n_out, n_in]`` given the rest (:func:`block_draw`).

    ``left``, ``right``: as for :func:`block_outputs`, over all the level's branches. With a skip the
    paths through branch 0 do not involve ``w``: their outputs, a constant offset, are taken off the labels
    and ``w`` is drawn from the regression on the heads' paths alone.
    """
    if not skip:
        return block_draw(w, left, right, y, scale, variance, temperature, key)
    n = w.shape[1]
    offset = block_outputs(math.sqrt(n) * jnp.eye(n, dtype=w.dtype)[None], left[:, :1], right[:, :, :1], scale)
    return block_draw(w, left[:, 1:], right[:, :, 1:], y - offset, scale, variance, temperature, key)


def network_scale(arch: Architecture, widths: Sequence[int]) -> float:
    """``sigma_a / (sigma_0 sqrt(n_0 n_1 ... n_L))``: the common factor of every path's output (a skip's
    missing width factor sits in its branch matrix, :func:`branch_weights`)."""
    return math.sqrt(arch.variances[-1] / (arch.variances[0] * math.prod(widths)))


def conditional_draw(arch: Architecture, xi: Array, y: Array, temperature: float, state: dict, block: int,
                     key: Array) -> Array:
    """One exact draw of block ``block`` (0: ``V^0 [n_0, N0]``, ``l >= 1``: ``V^l [H_l, n_l, n_{l-1}]``) from its
    conditional given the other weights in ``state`` (as for :func:`gibbs_sweep`). Each call computes its
    factors from scratch; :func:`gibbs_sweep` draws every block with the same steps, updating them in turn."""
    layout = block_layout(arch.branches)
    p, n_paths = xi.shape[:2]
    widths = (state["V0"].shape[0],) + tuple(v.shape[1] for v in state["V"])
    branches = [branch_weights(v, s) for v, s in zip(state["V"], arch.skips)]
    lefts = left_factors(branches, state["b"], layout)
    right = jnp.einsum("ij,mpj->mpi", state["V0"], xi)
    if block == 0:
        w = block_draw(state["V0"][None], lefts[0], xi.reshape((p,) + layout[0] + (xi.shape[-1],)), y,
                       network_scale(arch, widths), arch.variances[0], temperature, key)
        return w[0]
    for l in range(1, block):
        r = right.reshape((p,) + layout[l] + (right.shape[-1],))
        right = jnp.einsum("hij,mahbj->mahbi", branches[l - 1], r).reshape(p, n_paths, -1)
    r = right.reshape((p,) + layout[block] + (right.shape[-1],))
    return level_draw(state["V"][block - 1], lefts[block], r, y, network_scale(arch, widths),
                      arch.variances[block], temperature, key, arch.skips[block - 1])


# --------------------------------------------------------------------------- a sweep


def gibbs_sweep(arch: Architecture, xi: Array, y: Array, temperature: float, state: dict, key: Array) -> dict:
    """One sweep: ``V^0, V^1..V^L`` bottom-up, each from its exact conditional, then the readout ``b``.

    ``state``: ``V0 [n_0, N0]``, ``V`` (tuple of ``[H_l, n_l, n_{l-1}]``), ``b [n_L, C]``; ``xi [P, paths, N0]``,
    ``y [P, C]``. Returns the new state.
    """
    layout = block_layout(arch.branches)
    p, n_paths = xi.shape[:2]
    widths = (state["V0"].shape[0],) + tuple(v.shape[1] for v in state["V"])
    scale = network_scale(arch, widths)
    keys = jax.random.split(key, arch.n_layers + 2)
    lefts = left_factors([branch_weights(v, s) for v, s in zip(state["V"], arch.skips)], state["b"], layout)
    r = xi.reshape((p,) + layout[0] + (xi.shape[-1],))
    v0 = block_draw(state["V0"][None], lefts[0], r, y, scale, arch.variances[0], temperature, keys[0])
    right, drawn = jnp.einsum("hij,mahbj->mahbi", v0, r).reshape(p, n_paths, -1), []
    for l, (w, skip) in enumerate(zip(state["V"], arch.skips), start=1):
        r = right.reshape((p,) + layout[l] + (right.shape[-1],))
        w = level_draw(w, lefts[l], r, y, scale, arch.variances[l], temperature, keys[l], skip)
        drawn.append(w)
        right = jnp.einsum("hij,mahbj->mahbi", branch_weights(w, skip), r).reshape(p, n_paths, -1)
    phi = scale * right.sum(axis=1)  # = readout_design(arch, params, xi)
    return {"V0": v0[0], "V": tuple(drawn), "b": draw_readout(phi, y, temperature, keys[-1])}


# --------------------------------------------------------------------------- the sampler


def sample_gibbs(
    arch: Architecture,
    features,
    y,
    width: int | Sequence[int],
    temperature: float,
    *,
    features_test=None,
    num_warmup: int = 200,
    num_samples: int = 200,
    num_chains: int = 4,
    target_ess: float | None = None,
    max_samples: int | None = None,
    chain_method: Literal["auto", "sequential", "vectorized"] = "auto",
    time_limit: float | None = None,
    on_time_limit: Literal["raise", "stop"] = "raise",
    seed: int = 0,
    progress_bar: bool = True,
) -> PosteriorSamples:
    """Sample the network posterior by exact blocked Gibbs; return predictions, sampled ``U`` and diagnostics
    (:func:`paththeory.sampling.posterior.sample_posterior` with ``method="gibbs"``).

    Args:
      arch, features, y, width, temperature, features_test: as for
        :func:`~paththeory.sampling.nuts.sample_nuts` (path features ``[P, n_paths, N0]``, labels ``[P]`` or
        ``[P, C]``, the network's widths, the likelihood variance ``T``).
      num_warmup: sweeps discarded at the start of each chain (from a prior draw).
      num_samples: sweeps kept per chain, one draw each.
      num_chains: chains; each sweep of all chains is one compiled call.
      target_ess, max_samples: with ``target_ess``, the chains go on past ``num_samples`` kept sweeps until the
        least bulk ESS over ``U``'s entries (all chains together) reaches it, or until ``max_samples`` kept sweeps
        per chain (default ``20 num_samples``); how many more is computed from the ESS so far
        (:func:`~paththeory.sampling.results.draws_to_add`), never from the clock.
      chain_method: ``"vectorized"`` (the chains as one batch), ``"sequential"`` (one after the other
        inside the call; on a 2-core CPU a batch of two chains at N = 300 took 2.7 times one chain's
        time) or ``"auto"`` (vectorized on a GPU, sequential otherwise).
      time_limit, on_time_limit: the fail-safe of :func:`~paththeory.sampling.nuts.sample_nuts`, checked
        after every sweep.
      seed: seeds initialisation and every draw; same seed, same result.
      progress_bar: show a tqdm bar on stderr.

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem("mean")
      >>> out = sample_gibbs(arch, pt.path_features(arch, x), np.array([1.0, -1.0, 1.0, -1.0]), 4, 0.1,
      ...                    num_warmup=20, num_samples=20, num_chains=2, progress_bar=False)
      >>> out.U.shape, out.mean.shape, out.f_draws.shape
      ((6, 6), (4,), (2, 20, 4))
    """
    xi, yy, xt, temperature = check_inputs(arch, features, y, features_test, temperature)
    if not arch.linear:
        raise ValueError(f"the exact Gibbs sampler draws each weight matrix from its Gaussian conditional, which exists "
                         f"only when the network is linear in it; a nonlinear MLP block (nonlinearities "
                         f"{arch.nonlinearities}) has none. Sample with NUTS: sample_posterior(..., method='nuts').")
    widths = arch.network_widths(width)
    num_warmup, num_samples, num_chains, seed = check_schedule(
        num_warmup, num_samples, num_chains, seed, time_limit, on_time_limit)
    target_ess, max_samples = check_target(target_ess, max_samples, num_samples)
    progress_bar = check_flag(progress_bar, "progress_bar")
    chain_method = resolve_chain_method(chain_method)
    n_out = 1 if yy.ndim == 1 else yy.shape[1]
    p, n_paths, n_in = xi.shape
    check_draws_memory(num_chains, max_samples, n_out * n_paths, xt.shape[0], n_out)
    check_allocation(8 * num_chains * (3 * weight_count(arch, widths, n_in, n_out) + 2 * (p * n_out) ** 2 + 2 * p * n_paths * max(widths + (n_in,))),
                     f"{num_chains} Gibbs chains' weights (current, prior draw, new draw), Gram matrix and "
                     f"activations (P = {p}, C = {n_out}, widths {widths}, N0 = {n_in})")

    with jax.enable_x64(True):
        # The data enter the compiled sweeps as arguments, not as constants: one program per shape, whatever the
        # labels, features and temperature (JAX's persistent cache then serves another run of the same shapes).
        data = (jnp.asarray(xi, jnp.float64), jnp.asarray(yy, jnp.float64).reshape(p, n_out),
                jnp.asarray(xt, jnp.float64), jnp.asarray(temperature, jnp.float64))

        def start(key: Array) -> dict:  # a prior draw of every weight
            k_weights, k_readout = jax.random.split(key)
            prior = sample_prior(arch, widths, n_in, k_weights)
            b = jax.random.normal(k_readout, (widths[-1], n_out), jnp.float64)
            return {"V0": prior["V0"], "V": prior["V"], "b": b}

        def summary(state: dict, xt_j: Array) -> tuple[Array, Array, tuple[Array, ...]]:
            u, f, levels = draw_statistics(arch, {"V0": state["V0"], "V": state["V"]}, state["b"], xt_j)
            return u, f if yy.ndim == 2 else f[:, 0], levels

        def sweep(state: dict, key: Array, it: Array, data: tuple) -> dict:
            xi_j, y2, _, t = data
            return gibbs_sweep(arch, xi_j, y2, t, state, jax.random.fold_in(key, it))

        def kept_sweep(state: dict, key: Array, it: Array, data: tuple) -> tuple[dict, tuple]:
            state = sweep(state, key, it, data)
            return state, summary(state, data[2])

        compiled_sweep, compiled_kept = _over_chains(sweep, chain_method), _over_chains(kept_sweep, chain_method)

        def warmup_step(state: dict, keys: Array, it: int) -> dict:
            return compiled_sweep(state, keys, it, data)

        def kept_step(state: dict, keys: Array, it: int) -> tuple[dict, tuple]:
            return compiled_kept(state, keys, it, data)

        init_keys, chain_keys = jnp.moveaxis(jax.vmap(jax.random.split)(
            jax.random.split(jax.random.PRNGKey(seed), num_chains)), 1, 0)
        state = jax.jit(jax.vmap(start))(init_keys)
        kept_u, kept_f, kept_levels, it, total, stopped, seconds = _sweeps(
            warmup_step, kept_step, state, chain_keys, num_warmup=num_warmup, total=num_warmup + num_samples,
            target_ess=target_ess, max_samples=max_samples, time_limit=time_limit, progress_bar=progress_bar)
    check_finite_draws(kept_u + kept_f, temperature)
    records = {
        c: {"U": [u[c] for u in kept_u], "f": [f[c] for f in kept_f], "levels": [[v[c] for v in ls] for ls in kept_levels],
            "meta": dict(warmup_done=min(it, num_warmup), samples_done=max(0, it - num_warmup),
                         completed=it == total and stopped is None, seconds=seconds / num_chains,
                         step_size=float("nan"))}
        for c in range(num_chains)
    }
    reports = [ChainReport(chain=c, **rec["meta"], mean_tree_steps=float("nan"), max_depth_hits=0, divergences=0,
                           accept_prob=1.0, e_bfmi=float("nan")) for c, rec in records.items()]
    result = collect(records, reports, seconds, stopped, dict(
        method="gibbs", widths=widths, temperature=temperature, dtype="float64", num_warmup=num_warmup,
        num_samples=total - num_warmup, num_chains=num_chains, target_ess=target_ess, max_samples=max_samples,
        chain_method=chain_method, init="prior",
        n_test=xt.shape[0], n_paths=arch.n_paths, n_outputs=None if yy.ndim == 1 else yy.shape[1],
        time_limit=time_limit, seed=seed,
    ))
    if stopped is not None and on_time_limit == "raise":
        raise TimeLimitReached(result)
    return result


def _sweeps(warmup_step, kept_step, state: dict, chain_keys: Array, *, num_warmup: int, total: int,
            target_ess: float | None, max_samples: int, time_limit: float | None, progress_bar: bool) -> tuple:
    """Sweep every chain ``total`` times (then more while ``U``'s least ESS is short of ``target_ess``, up to
    ``max_samples`` kept sweeps); return the kept ``U``, ``f`` and level draws, the sweeps done, the sweeps planned,
    the stop record of the fail-safe ``time_limit`` (or ``None``) and the seconds taken."""
    kept_u, kept_f, kept_levels, stopped, it = [], [], [], None, 0
    bar = tqdm(total=total, desc="Gibbs sweeps", disable=not progress_bar, file=sys.stderr, mininterval=1.0)
    t_start = time.perf_counter()
    while it < total:
        it += 1
        if it > num_warmup:
            state, (u, f, levels) = kept_step(state, chain_keys, it)
            kept_u.append(np.asarray(u, np.float64))
            kept_levels.append([np.asarray(v, np.float64) for v in levels])
            kept_f.append(np.asarray(f, np.float64))
        else:
            state = warmup_step(state, chain_keys, it)
        bar.update(1)
        if time_limit is not None and time.perf_counter() - t_start > time_limit and it < total:
            stopped = stopped_record(time_limit, list(range(len(chain_keys))), it, num_warmup, total,
                                     time.perf_counter() - t_start)
            break
        if it == total:  # the planned sweeps taken: more where U's ESS is short of target_ess
            total += draws_to_add(least_ess_U(np.stack(kept_u, axis=1)), it - num_warmup, target_ess, max_samples)
            bar.total = total
    bar.close()
    return kept_u, kept_f, kept_levels, it, total, stopped, time.perf_counter() - t_start


def _over_chains(fn, chain_method: str):
    """``fn(state, key, it, data)`` compiled for all chains at once (``data`` shared): one call per sweep, batched
    (``"vectorized"``) or one chain after the other inside the call (``"sequential"``)."""
    if chain_method == "vectorized":
        return jax.jit(jax.vmap(fn, in_axes=(0, 0, None, None)))
    return jax.jit(lambda s, k, it, data: jax.lax.map(lambda sk: fn(sk[0], sk[1], it, data), (s, k)))
