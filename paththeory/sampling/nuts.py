"""Posterior sampling of the finite network with NumPyro NUTS (the paper's Eqs. 8 and 13, Appendix F).

The Gibbs posterior of the paper's Eq. (8) is sampled over the value weights ``V^0 [n_0, N_0]`` and
``V^l [H_l, n_l, n_{l-1}]`` with the attention fixed. The network is evaluated in path form
from path features ``xi`` computed once per data set (:func:`paththeory.model.path_features`):
``f = Phi b`` with the pooled last-layer activations
``Phi = sigma_a / (sigma_0 sqrt(n_0...n_L)) sum_pi V^L_{h_L}...V^1_{h_1} V^0 xi^pi`` (:func:`~paththeory.sampling.path_form.readout_design`).
This is the layer-by-layer forward pass of the paper's Eqs. (1-4) (a test checks it against
:func:`paththeory.model.network_output`) with ``n_tokens / n_paths`` times fewer operations in the first layer.

**The readout is integrated out.** Given the other weights, ``f = Phi b`` is linear in the
standardised readout ``b = a / sigma_a ~ N(0, I)``, with ``Phi = sigma_a df/da`` ``[P, n_L]``.
So the labels are Gaussian, ``y ~ N(0, C)`` with ``C = T I_P + Phi Phi^T``, and NUTS samples
only the ``V``'s against this marginal likelihood. ``log det C`` and ``C^{-1}`` are computed
with a Cholesky factor of ``T I + Phi^T Phi`` (Woodbury, ``n_L <= P``) or of ``C`` itself
(``n_L > P``), whichever is smaller. For every kept draw, ``b`` is then drawn from its exact
Gaussian conditional by Matheron's rule, ``b = e + Phi^T C^{-1} (y - Phi e - sqrt(T) d)`` with
``e, d`` standard normal, so that predictions and effective weights ``w^pi`` are exact
posterior draws. Sampling ``a`` jointly (``integrate_readout=False``) targets the same
posterior; at small temperature ``a`` is pinned by the likelihood while it multiplies
every other weight, a funnel that forces tiny steps.

**Outputs.** Mean and unbiased variance of ``f`` over draws on the test inputs (the paper's Eq. 9
and Appendix B.1), and the sampled order parameter ``U_{pi sigma} = < w^pi . w^sigma > / n_0``
(the paper's Eq. 13).

**C outputs.** Labels ``[P]`` (one output, as in the paper) or ``[P, C]`` go through the same code:
the readout ``a`` becomes ``[n_L, C]``, one standardised column ``b_c`` per output, and given ``Phi``
the label columns are independent, ``Y_{:, c} ~ N(0, T I_P + Phi Phi^T)``, so the marginal likelihood
is ``-1/2 [tr(Y^T C^{-1} Y) + C log det C + P C log 2 pi]`` with one Cholesky factor for all outputs.
Each output has its effective weights ``w^{c pi}`` (those of ``a_c``); the sampled order parameter is
``U^{cc'}_{pi sigma} = < w^{c pi} . w^{c' sigma} > / n_0``, ``(C n_paths)`` square with the output index
slowest (the packing of ``paththeory._labels`` and of the theory's ``U``). The mean predictor is
``[P_test, C]`` and ``var`` holds the unbiased output-output covariance ``[P_test, C, C]``. ``[P]``
labels give ``[P_test]`` arrays, exactly as a ``[P, 1]`` spelling would.

**Diagnostics.** Each run's R-hat, bulk ESS, divergences, E-BFMI, acceptance, wall time and ESS/s come
from :mod:`paththeory.sampling.diagnostics`.

**Stalling chains, and what fixes them** (measured on the 2-core CPU shared with other jobs:
Markov task, P = 100, N = 30, T = 0.01, 100 warm-up iterations, one chain per run). A chain
that "stalls" is one whose every iteration reaches the maximum tree depth: 1023 gradient
evaluations per draw. Sampling the readout ``a`` jointly (``init_to_uniform``), the step size adapted to 4e-3 and
every post-warm-up iteration hit depth 10 (129 s for 150 iterations). With ``a`` integrated
out, 24 of 24 chains (both initialisations, warm-up 50 or 100, float32 or float64) adapted
to steps of 0.03-0.06 with 63-255 leapfrog steps per iteration and never reached the maximum
depth (20-46 s per chain, compilation included). The initialisation is not the cause:
``init_to_uniform`` (every weight uniform in ``(-2, 2)``) starts at potential energy ~19 000
and a prior draw (the default, ``init="prior"``) at ~17 100; both reach the typical set
(~15 000) within 10 iterations. The funnel between ``a`` and the other weights is the
cause, and integrating ``a`` out removes it. Each
:class:`ChainReport` counts the iterations at maximum depth and keeps the per-iteration
step size, tree size and potential energy (``trace``).

**Sizes, not the clock.** A run takes a fixed number of draws, so its numbers depend on the seed and
the sizes only. ``time_limit`` (seconds, checked after each NUTS iteration) is a fail-safe against a
run that is stuck: a run that reaches it raises :class:`TimeLimitReached`, which names the limit, where
the run stood and how to raise the limit, and carries the draws made so far (``partial``, marked
incomplete). Only a caller who asks for a budget (``on_time_limit="stop"``) gets the cut run as a
result, marked incomplete (``complete`` is False), and every consumer in the package says so.

**Speed** (same setting, two chains of 100 + 100 iterations, wall time with compilation):
sequential float64 70 s, sequential float32 52 s (second chain 20 s vs 31 s: 1.5x faster, same
accuracy and U within Monte Carlo error), vectorized float64 138 s (a batched tree runs as
long as its longest member). Hence float64 by default, and ``chain_method="auto"``, which runs
the chains one after another on a CPU and as one batch on a GPU, where a batched leapfrog step
costs about as much as a single one (small models leave the GPU idle between kernel launches), so
four chains should take about the time of the longest (expected, not yet measured here: no GPU
was available when this was written).
"""

from __future__ import annotations

import math
import sys
import time
from functools import partial
from typing import Literal, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer.hmc import HMCState, hmc
from numpyro.infer.util import potential_energy
from tqdm import tqdm

from paththeory._checks import check_choice, check_count, check_flag, check_open_interval
from paththeory.model import Architecture, sample_prior
from paththeory.sampling.diagnostics import e_bfmi
from paththeory.sampling.path_form import draw_readout, draw_statistics, marginal_log_likelihood, readout_design
from paththeory.sampling.results import (
    ChainReport, PosteriorSamples, TimeLimitReached, check_inputs, check_schedule, check_target, collect, draws_to_add,
    check_draws_memory, check_finite_draws, feature_shape, least_ess_U, resolve_chain_method,
    stopped_record)


Array = jax.Array
ChainMethod = Literal["auto", "sequential", "vectorized"]
INITS = ("prior", "uniform")

# --------------------------------------------------------------------------- the model


def posterior_model(
    features: Array,
    y: Array,
    *,
    arch: Architecture,
    widths: tuple[int, ...],
    temperature: float,
    integrate_readout: bool = True,
) -> None:
    """NumPyro model of the posterior (the paper's Eq. 8): Normal priors, likelihood ``Normal(f, sqrt(T))``.

    Sites ``V0 [n_0, N0]``, ``V1..VL [H_l, n_l, n_{l-1}]`` and, unless ``integrate_readout``,
    ``a [n_L]`` (``[n_L, C]`` for labels ``y [P, C]``). ``features``: path features ``[P, n_paths, N0]`` (or
    :class:`~paththeory.model.TokenFeatures` for a block between attention layers); the labels' dtype sets the
    precision; ``temperature`` may be a traced scalar (the sampler passes it as an argument).
    """
    zero = jnp.zeros((), y.dtype)
    sd = [math.sqrt(v) for v in arch.variances]
    v0 = numpyro.sample("V0", dist.Normal(zero, sd[0]).expand((widths[0], feature_shape(features)[1])).to_event(2))
    vs = tuple(
        numpyro.sample(f"V{l + 1}", dist.Normal(zero, sd[l + 1]).expand((h, widths[l + 1], widths[l])).to_event(3))
        for l, h in enumerate(arch.heads)
    )
    params = {"V0": v0, "V": vs}
    if integrate_readout:
        numpyro.factor("y", marginal_log_likelihood(readout_design(arch, params, features), y, temperature))
    else:
        a = numpyro.sample("a", dist.Normal(zero, sd[-1]).expand((widths[-1],) + y.shape[1:]).to_event(y.ndim))
        f = readout_design(arch, params, features) @ a / sd[-1]
        numpyro.sample("y", dist.Normal(f, jnp.sqrt(temperature)), obs=y)


def _model_of_arguments(features: Array, labels: Array, temperature: Array, _test, **statics) -> None:
    """:func:`posterior_model` of the sampler's arguments ``(features, labels, temperature, test features)``: the data
    enter its compiled programs as arguments, not constants (the test features serve the draws' summary only)."""
    posterior_model(features, labels, temperature=temperature, **statics)


# --------------------------------------------------------------------------- the sampler


def sample_nuts(
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
    chain_method: ChainMethod = "auto",
    dtype: Literal["float64", "float32"] = "float64",
    init: Literal["prior", "uniform"] = "prior",
    integrate_readout: bool = True,
    max_tree_depth: int = 10,
    target_accept_prob: float = 0.8,
    time_limit: float | None = None,
    on_time_limit: Literal["raise", "stop"] = "raise",
    seed: int = 0,
    progress_bar: bool = True,
) -> PosteriorSamples:
    """Sample the network posterior with NUTS; return predictions, sampled ``U`` and diagnostics
    (:func:`paththeory.sampling.posterior.sample_posterior` with ``method="nuts"``).

    Args:
      arch: the architecture (its attention is already inside ``features``).
      features: training path features ``[P, n_paths, N0]`` (:func:`paththeory.model.path_features`), or
        :func:`~paththeory.model.token_features` for a nonlinear MLP block between attention layers.
      y: training labels ``[P]``, or ``[P, C]`` for ``C`` outputs (one-hot or simplex-coded classes).
      width: common width ``N`` or the widths ``(n_0..n_L)``, whole numbers (the network's).
      temperature: Gibbs temperature ``T`` (likelihood variance).
      features_test: test path features ``[P_test, n_paths, N0]``; predictions are on the
        training inputs when omitted.
      num_warmup, num_samples, num_chains: NUTS schedule; the warm-up adapts step size and a
        diagonal mass matrix (NumPyro's windowed schedule).
      target_ess, max_samples: with ``target_ess``, every chain goes on past ``num_samples`` kept draws until the
        least bulk ESS over ``U``'s entries (all chains together) reaches it, or until ``max_samples`` per chain
        (default ``20 num_samples``), as in :func:`~paththeory.sampling.gibbs.sample_gibbs`.
      chain_method: ``"sequential"`` (one chain after the other), ``"vectorized"`` (all chains
        in one batched computation; about 2x slower on a 2-core CPU) or ``"auto"`` (vectorized
        on a GPU, sequential otherwise).
      dtype: ``"float64"`` or ``"float32"`` for the sampler's arithmetic.
      init: ``"prior"`` (a draw from the prior, :func:`paththeory.model.sample_prior`) or ``"uniform"``
        (NumPyro's default ``init_to_uniform``: every weight uniform in ``(-2, 2)``).
      integrate_readout: integrate ``a`` out analytically (default) or sample it.
      max_tree_depth, target_accept_prob: NUTS settings (NumPyro defaults 10 and 0.8; the target in (0, 1)).
      time_limit: a fail-safe on the wall-clock seconds of the whole run (checked after every
        iteration), to be set far above an honest run's time; ``None`` (default) for none.
      on_time_limit: what a run that reaches ``time_limit`` does: ``"raise"`` (default) raises
        :class:`TimeLimitReached` (its ``partial`` holds the draws so far); ``"stop"`` returns the cut
        run, incomplete (``complete`` is False, ``stopped`` says where), to be reported, never used
        for a verdict.
      seed: seeds initialisation, NUTS and the readout draws; same seed, same result.
      progress_bar: show a tqdm bar per chain on stderr.

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem("mean")
      >>> out = sample_nuts(arch, pt.path_features(arch, x), np.array([1.0, -1.0, 1.0, -1.0]), 4, 0.1,
      ...                  num_warmup=20, num_samples=20, num_chains=1, progress_bar=False)
      >>> out.U.shape, out.mean.shape, len(out.chains)
      ((6, 6), (4,), 1)
    """
    xi, yy, xt, temperature = check_inputs(arch, features, y, features_test, temperature)
    widths = arch.network_widths(width)
    num_warmup, num_samples, num_chains, seed = check_schedule(
        num_warmup, num_samples, num_chains, seed, time_limit, on_time_limit)
    target_ess, max_samples = check_target(target_ess, max_samples, num_samples)
    n_out = 1 if yy.ndim == 1 else yy.shape[1]
    check_draws_memory(num_chains, max_samples, n_out * arch.n_paths, feature_shape(xt)[0], n_out)
    max_tree_depth = check_count(max_tree_depth, "max_tree_depth")
    target_accept_prob = check_open_interval(target_accept_prob, "target_accept_prob")
    integrate_readout, progress_bar = check_flag(integrate_readout, "integrate_readout"), check_flag(
        progress_bar, "progress_bar")
    chain_method = resolve_chain_method(chain_method)
    dtype, init = check_choice(dtype, "dtype", ("float64", "float32")), check_choice(init, "init", INITS)

    # float32 runs with JAX's 64-bit mode switched off, so that NUTS's own constants stay float32
    with jax.enable_x64(dtype == "float64"):
        dt = jnp.dtype(dtype)
        # The data enter the compiled programs as arguments, not as constants: one program per shape, whatever the
        # labels, features and temperature (JAX's persistent cache then serves another run of the same shapes).
        args = (jax.tree.map(lambda a: jnp.asarray(a, dt), xi), jnp.asarray(yy, dt), jnp.asarray(temperature, dt),
                jax.tree.map(lambda a: jnp.asarray(a, dt), xt))
        model = partial(_model_of_arguments, arch=arch, widths=widths, integrate_readout=integrate_readout)
        init_kernel, sample_kernel = hmc(
            potential_fn_gen=lambda *a: partial(potential_energy, model, a, {}), algo="NUTS"
        )
        sd_a = math.sqrt(arch.variances[-1])

        def initial_point(key: Array) -> dict:
            prior = sample_prior(arch, widths, feature_shape(xi)[1], key)
            z = {"V0": prior["V0"], **{f"V{l + 1}": v for l, v in enumerate(prior["V"])}}
            if not integrate_readout:  # C outputs: the prior's readout, then C - 1 more prior columns
                extra = sd_a * jax.random.normal(jax.random.fold_in(key, 2), (widths[-1], yy.size // yy.shape[0] - 1))
                z["a"] = prior["a"] if yy.ndim == 1 else jnp.concatenate([prior["a"][:, None], extra], axis=1)
            if init == "uniform":  # NumPyro's init_to_uniform: U(-2, 2) in every coordinate
                keys = jax.random.split(jax.random.fold_in(key, 1), len(z))
                z = {k: jax.random.uniform(kk, v.shape, minval=-2.0, maxval=2.0) for kk, (k, v) in zip(keys, z.items())}
            return {k: v.astype(dt) for k, v in z.items()}

        def start(key: Array, a: tuple) -> HMCState:
            k_init, k_run = jax.random.split(key)
            return init_kernel(
                initial_point(k_init), num_warmup, target_accept_prob=target_accept_prob,
                max_tree_depth=max_tree_depth, model_args=a, rng_key=k_run,
            )

        def draw_summary(z: dict, key: Array, a: tuple) -> tuple[Array, Array, tuple[Array, ...]]:
            params = {"V0": z["V0"], "V": tuple(z[f"V{l + 1}"] for l in range(arch.n_layers))}
            if integrate_readout:
                b = draw_readout(readout_design(arch, params, a[0]), a[1], a[2], key)
            else:
                b = z["a"] / sd_a
            return draw_statistics(arch, params, b, a[3])

        vectorized = chain_method == "vectorized"
        batch = (lambda fn, axes: jax.jit(jax.vmap(fn, in_axes=axes))) if vectorized else (lambda fn, _: jax.jit(fn))
        start, step = batch(start, (0, None)), batch(lambda s, a: sample_kernel(s, model_args=a), (0, None))
        summarise = batch(draw_summary, (0, 0, None))
        total = num_warmup + num_samples
        chain_keys = jax.random.split(jax.random.PRNGKey(seed), num_chains)
        groups = [list(range(num_chains))] if vectorized else [[c] for c in range(num_chains)]
        runs = [{"group": g, "keys": chain_keys[jnp.asarray(g)],
                 "label": f"chains {g[0]}-{g[-1]}" if vectorized else f"chain {g[0] + 1}/{num_chains}"} for g in groups]

        records: dict[int, dict[str, list]] = {}
        stopped = None
        t_start = time.perf_counter()
        while True:  # the planned iterations, then more while U's ESS is short of target_ess
            stopped = _run_groups(records, runs, start, step, summarise, args, vectorized=vectorized,
                                  num_warmup=num_warmup, total=total, progress_bar=progress_bar,
                                  time_limit=time_limit, t_start=t_start)
            more = 0 if stopped else draws_to_add(
                least_ess_U(np.stack([np.stack(records[c]["U"]) for c in range(num_chains)])),
                total - num_warmup, target_ess, max_samples)
            if not more:
                break
            total += more
    seconds = time.perf_counter() - t_start
    check_finite_draws([np.asarray(rec[k]) for rec in records.values() for k in ("U", "f") if rec[k]], temperature)
    result = collect(records, _chain_reports(records, max_tree_depth), seconds, stopped, dict(
        method="nuts",
        widths=widths, temperature=temperature, dtype=dtype, num_warmup=num_warmup, num_samples=total - num_warmup,
        target_ess=target_ess, max_samples=max_samples,
        num_chains=num_chains, chain_method=chain_method, init=init,
        integrate_readout=integrate_readout, max_tree_depth=max_tree_depth, n_test=feature_shape(xt)[0], n_paths=arch.n_paths,
        n_outputs=None if yy.ndim == 1 else yy.shape[1],
        target_accept_prob=target_accept_prob, time_limit=time_limit, seed=seed,
    ))
    if stopped is not None and on_time_limit == "raise":
        raise TimeLimitReached(result)
    return result



def _run_groups(records: dict, runs: list[dict], *args, **kwargs) -> dict | None:
    """:func:`_run_group` for each group of chains in turn, up to the first one the time limit stops (its record)."""
    for run in runs:
        stopped = _run_group(records, run, *args, **kwargs)
        if stopped:
            return stopped
    return None


def _run_group(records: dict, run: dict, start, step, summarise, args: tuple, *, vectorized: bool, num_warmup: int,
               total: int, progress_bar: bool, time_limit: float | None, t_start: float) -> dict | None:
    """Run one group of chains (all of them when vectorized, one otherwise; ``run`` holds its ``group``, ``keys`` and
    ``label``, and after a first call its state and draws) from where it stopped to ``total`` iterations and store
    each chain's record in ``records``; return the stop record where ``time_limit`` (seconds since ``t_start``) cut
    the run, else ``None``."""
    t_chain = time.perf_counter()
    group = run["group"]
    if "state" not in run:
        run_keys, run["draw_keys"] = (jnp.stack(k) for k in zip(*(jax.random.split(k) for k in run["keys"])))
        run.update(state=start(run_keys if vectorized else run_keys[0], args), it=0, seconds=0.0,
                   rec={k: [] for k in ("U", "f", "levels", "energy", "accept", "steps", "div", "trace")})
    state, rec, draw_keys, it = run["state"], run["rec"], run["draw_keys"], run["it"]
    bar = tqdm(total=total, initial=it, desc=run["label"], disable=not progress_bar, file=sys.stderr, mininterval=1.0)
    stopped = None
    while it < total:
        it += 1
        state = step(state, args)
        rec["trace"].append(np.stack(np.broadcast_arrays(
            np.asarray(state.num_steps, np.float64), np.asarray(state.adapt_state.step_size, np.float64),
            np.asarray(state.potential_energy, np.float64)), axis=-1))
        if it > num_warmup:
            k = it - num_warmup - 1
            dkeys = jax.vmap(lambda kk: jax.random.fold_in(kk, k))(draw_keys)
            u_d, f_d, levels_d = summarise(state.z, dkeys if vectorized else dkeys[0], args)
            rec["U"].append(np.asarray(u_d, np.float64))
            rec["levels"].append([np.asarray(u, np.float64) for u in levels_d])
            rec["f"].append(np.asarray(f_d, np.float64))
            rec["energy"].append(np.asarray(state.energy, np.float64))
            rec["accept"].append(np.asarray(state.accept_prob, np.float64))
            rec["steps"].append(np.asarray(state.num_steps))
            rec["div"].append(np.asarray(state.diverging))
        bar.update(1)
        if progress_bar and (it % 5 == 0 or it == total):
            bar.set_postfix_str(
                f"step {float(np.mean(state.adapt_state.step_size)):.2e}  "
                f"{int(np.max(state.num_steps))} steps  acc {float(np.mean(state.mean_accept_prob)):.2f}"
            )
        if time_limit is not None and time.perf_counter() - t_start > time_limit and it < total:
            stopped = stopped_record(time_limit, group if vectorized else group[0], it, num_warmup, total,
                                     time.perf_counter() - t_start)
            break
    bar.close()
    run.update(state=state, it=it, seconds=run["seconds"] + time.perf_counter() - t_chain)
    seconds = run["seconds"]
    step_sizes = np.atleast_1d(np.asarray(state.adapt_state.step_size, np.float64))
    for j, c in enumerate(group):
        records[c] = {k: [_chain_entry(v, j, vectorized) for v in vals] for k, vals in rec.items()}
        records[c]["meta"] = dict(
            warmup_done=min(it, num_warmup),
            samples_done=max(0, it - num_warmup),
            completed=it == total and stopped is None,
            seconds=seconds,
            step_size=float(step_sizes[j]),
        )
    return stopped


def _chain_entry(value, chain: int, vectorized: bool):
    """One chain's part of a recorded value (a list of per-level arrays stays a list)."""
    if not vectorized:
        return value
    if isinstance(value, list):
        return [v[chain] for v in value]
    return np.atleast_1d(value)[chain]


def _chain_reports(records: dict, max_tree_depth: int) -> list[ChainReport]:
    """Each chain's NUTS statistics over its kept draws."""
    reports = []
    for c, rec in sorted(records.items()):
        steps = np.asarray(rec["steps"], np.float64)
        trace = np.asarray(rec["trace"]).reshape(-1, 3)
        reports.append(ChainReport(
            chain=c,
            **rec["meta"],
            mean_tree_steps=float(steps.mean()) if steps.size else float("nan"),
            max_depth_hits=int(np.sum(steps >= 2**max_tree_depth - 1)),
            divergences=int(np.sum(rec["div"])),
            accept_prob=float(np.mean(rec["accept"])) if rec["accept"] else float("nan"),
            e_bfmi=e_bfmi(np.asarray(rec["energy"])),
            trace=dict(num_steps=trace[:, 0], step_size=trace[:, 1], potential=trace[:, 2]),
        ))
    return reports
