"""Benchmark: exact blocked Gibbs and ``method="auto"`` against NUTS on the Markov-chain task, in one process.

Both samplers draw the posterior of the four-path network of the Markov chapter (P = 100, T = 0.01)
at each width from a prior draw, with the same chain count. Each row gives, per sampler and width,
the least bulk ESS over ``U``'s entries per CPU-second (user + system time of the whole process,
compilation included) and per wall-second, the largest R-hat over ``U``, and the time to a 2 %
Monte Carlo error on ``|U|`` (Frobenius): the draws needed, ``(sd(|U|) / (0.02 mean |U|))^2``, at
the measured rate of effective draws of ``|U|``. The ratios are each sampler's over NUTS's; ``auto`` runs its own
schedule to its ESS target and names the sampler it chose.

:func:`mixing` measures which quantities a Gibbs chain moves slowly: sweeps per effective draw of
every entry of ``U`` and of the squared norm of each weight block.
"""

from __future__ import annotations

import os
import time
from typing import Sequence

import jax
import numpy as np

from paththeory.sampling import effective_sample_size, output_effective_weights, rank_rhat_ess, sample_posterior

WIDTHS = (10, 30, 100, 300)
#: chains and (warm-up, kept) draws per chain: NUTS iterations, Gibbs sweeps; ``"auto"`` chooses its own
#: (:func:`paththeory.sampling.auto.choose`, to its default ESS target) with the same chains
SCHEDULE = {"nuts": (2, 100, 100), "gibbs": (2, 500, 2000), "auto": (2, None, None)}


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def _row(method: str, width: int, prob, schedule: tuple[int, int, int], temperature: float) -> dict:
    """One sampler at one width: effective draws of ``U`` per CPU- and wall-second, R-hat, time to 2 %."""
    chains, warmup, kept = schedule
    given = {} if warmup is None else {"num_warmup": warmup, "num_samples": kept}
    cpu, wall = _cpu_seconds(), time.perf_counter()
    res = sample_posterior(prob.arch, prob.train, prob.y_train, width, temperature, features_test=prob.test,
                           method=method, num_chains=chains, progress_bar=False, **given)
    cpu, wall = _cpu_seconds() - cpu, time.perf_counter() - wall
    d = res.diagnostics
    norms = np.linalg.norm(res.U_draws, axis=(2, 3))  # [chains, draws]
    ess_norm = float(effective_sample_size(norms[..., None])[0])
    needed = (norms.std() / (0.02 * norms.mean())) ** 2  # effective draws for a 2 % error on the mean |U|
    auto = res.settings.get("auto")
    return {"method": method if auto is None else f"auto:{auto['method']}", "width": width, "chains": chains,
            "warmup": res.settings["num_warmup"], "kept": res.settings["num_samples"],
            "cpu_seconds": cpu, "wall_seconds": wall, "ess_U_min": d["ess_bulk_U_min"], "r_hat_U_max": d["r_hat_U_max"],
            "ess_U_per_cpu_second": d["ess_bulk_U_min"] / cpu, "ess_U_per_wall_second": d["ess_bulk_U_min"] / wall,
            "ess_norm": ess_norm, "seconds_to_2_percent": needed / ess_norm * wall,
            "U_norm_mean": float(norms.mean())}


def sampling_case(widths: Sequence[int] = WIDTHS, schedule: dict = SCHEDULE, temperature: float = 0.01,
                  methods: Sequence[str] = ("nuts", "gibbs", "auto")) -> dict:
    """Each sampler of ``methods`` at each width of ``widths`` (one process, NUTS first at each width); every other
    row holds its ratios to NUTS's."""
    from paththeory.experiments.markov import problem

    prob = problem("four_paths", 100, 500)
    rows = []
    for width in widths:
        here = [_row(method, int(width), prob, schedule[method], temperature) for method in methods]
        nuts = next(r for r in here if r["method"] == "nuts")
        for row in here:
            if row is not nuts:
                for key in ("ess_U_per_cpu_second", "ess_U_per_wall_second"):
                    row[f"ratio_{key}"] = row[key] / nuts[key]
                row["ratio_seconds_to_2_percent"] = nuts["seconds_to_2_percent"] / row["seconds_to_2_percent"]
        rows += here
    return {"case": "sampling", "device": str(jax.devices()[0]), "temperature": temperature,
            "size": {"P": 100, "paths": 4, "N0": 231, "test": 500}, "rows": rows}


def format_rows(case: dict) -> str:
    """The efficiency table of :func:`sampling_case`."""
    lines = [f"{'N':>5} {'sampler':>10} {'kept':>6} {'ESS(U)/cpu-s':>12} {'ESS(U)/wall-s':>13} {'R-hat(U)':>8} "
             f"{'s to 2 %':>9} {'ratio cpu':>9} {'ratio wall':>10} {'ratio 2 %':>9}"]
    for r in case["rows"]:
        ratios = (f"{r['ratio_ess_U_per_cpu_second']:9.1f} {r['ratio_ess_U_per_wall_second']:10.1f} "
                  f"{r['ratio_seconds_to_2_percent']:9.1f}" if "ratio_ess_U_per_cpu_second" in r else "")
        lines.append(f"{r['width']:5d} {r['method']:>10} {r['kept']:6d} {r['ess_U_per_cpu_second']:12.3f} "
                     f"{r['ess_U_per_wall_second']:13.3f} {r['r_hat_U_max']:8.3f} {r['seconds_to_2_percent']:9.1f} "
                     + ratios)
    return "\n".join(lines)


def mixing(width: int = 10, chains: int = 4, warmup: int = 500, kept: int = 2000, seed: int = 0) -> dict:
    """Sweeps per effective draw (kept draws over bulk ESS) of each entry of ``U`` and of ``|V^0|^2``,
    ``|V^l|^2`` and ``|b|^2``, for Gibbs chains from prior draws on the Markov task (P = 100, T = 0.01)."""
    import jax.numpy as jnp

    from paththeory.experiments.markov import problem
    from paththeory.model import sample_prior
    from paththeory.sampling.gibbs import gibbs_sweep

    prob = problem("four_paths", 100, 500)
    arch, temperature = prob.arch, 0.01
    widths = arch.network_widths(width)
    with jax.enable_x64(True):
        xi, y = jnp.asarray(prob.train), jnp.asarray(prob.y_train).reshape(-1, 1)

        def start(key):
            k_weights, k_readout = jax.random.split(key)
            prior = sample_prior(arch, widths, xi.shape[2], k_weights)
            return {"V0": prior["V0"], "V": prior["V"], "b": jax.random.normal(k_readout, (widths[-1], 1))}

        def sweep(state, key):
            state = gibbs_sweep(arch, xi, y, temperature, state, key)
            w = output_effective_weights(arch, {"V0": state["V0"], "V": state["V"]}, state["b"])
            iu = jnp.triu_indices(arch.n_paths)
            norms = [jnp.sum(state["V0"] ** 2)] + [jnp.sum(v**2) for v in state["V"]] + [jnp.sum(state["b"] ** 2)]
            return state, jnp.concatenate([(w @ w.T / widths[0])[iu], jnp.stack(norms)])

        keys = jax.random.split(jax.random.PRNGKey(seed), chains)
        state, step = jax.vmap(start)(keys), jax.jit(jax.vmap(sweep))
        out = []
        for it in range(warmup + kept):
            state, q = step(state, jax.vmap(lambda k: jax.random.fold_in(k, it))(keys))
            if it >= warmup:
                out.append(np.asarray(q))
    _, ess = rank_rhat_ess(np.stack(out, axis=1))
    iu = np.triu_indices(arch.n_paths)
    names = [f"U[{prob.names[i]},{prob.names[j]}]" for i, j in zip(*iu)]
    names += ["|V0|^2"] + [f"|V{l + 1}|^2" for l in range(arch.n_layers)] + ["|b|^2"]
    return {"width": width, "draws": chains * kept,
            "sweeps_per_effective_draw": {n: chains * kept / float(e) for n, e in zip(names, ess)}}
