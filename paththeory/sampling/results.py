"""What a posterior sampler returns: the draws of the test outputs and of the order parameter, their
summaries (the paper's Eqs. 9 and 13) and the chains' convergence diagnostics, assembled the same way
for every sampler (:mod:`~paththeory.sampling.nuts`, :mod:`~paththeory.sampling.gibbs`).
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from dataclasses import dataclass, field

import jax
import numpy as np

from paththeory._checks import as_float_array, check_allocation, check_count, check_positive, check_targets
from paththeory._labels import as_labels
from paththeory.model import Architecture, TokenFeatures, check_architecture, token_path_counts
from paththeory.sampling.diagnostics import SAMPLER_NAMES, rank_rhat_ess, stopped_text
from paththeory.sampling.path_form import check_nonlinear_placement


@dataclass
class ChainReport:
    """What one chain did: iterations reached, time, and its sampler's statistics over the kept draws.

    NUTS fills every field; an exact Gibbs chain has no step size, trees, divergences or energy
    (``step_size``, ``mean_tree_steps`` and ``e_bfmi`` are NaN, every draw is accepted), and since its
    chains run in one call, ``seconds`` is an equal share of the run's time.
    """

    chain: int
    warmup_done: int
    samples_done: int
    completed: bool
    seconds: float
    step_size: float
    mean_tree_steps: float  # leapfrog steps per iteration (sampling phase)
    max_depth_hits: int  # iterations that hit the maximum tree depth (sampling phase)
    divergences: int
    accept_prob: float
    e_bfmi: float
    trace: dict = field(default_factory=dict, repr=False)  # per iteration: num_steps, step_size, potential


class TimeLimitReached(RuntimeError):
    """A sampling run reached its ``time_limit`` fail-safe; ``partial`` holds the draws made so far.

    A cut run's numbers depend on the machine's speed, so no result is returned in its place.
    """

    def __init__(self, partial: "PosteriorSamples"):
        self.partial = partial
        where, limit = partial.stopped, partial.stopped["time_limit"]
        sampler = SAMPLER_NAMES[partial.settings.get("method", "nuts")]
        super().__init__(
            f"{sampler} reached its time limit of {limit:g} s after {where['seconds']:.0f} s ({where['phase']}, "
            f"iteration {where['iteration']} of {where['of']}); "
            "the limit is a fail-safe against a stuck run, so nothing was returned. If this machine is just "
            f"slow or busy, raise the limit (sample_posterior(..., time_limit=...) above {limit:g}, or None for "
            "none; an experiment's config field of that name, or $PATHTHEORY_TIME_LIMIT_SCALE for "
            "`paththeory reproduce` and the book); to keep a cut run as an incomplete result, pass "
            "on_time_limit='stop'."
        )


class SamplingWarning(RuntimeWarning):
    """A run with an ESS target (``target_ess``) stopped at its cap of draws before the least ESS of ``U`` reached it."""


@dataclass
class PosteriorSamples:
    """Result of :func:`sample_posterior`.

    Attributes:
      mean, var: sampled mean predictor and unbiased variance of ``f`` on the test inputs ``[P_test]``;
        with ``C`` outputs the means ``[P_test, C]`` and output-output covariances ``[P_test, C, C]``.
      U: sampled order parameter ``<w^pi . w^sigma> / n_0`` ``[n_paths, n_paths]``; with ``C`` outputs
        ``<w^{c pi} . w^{c' sigma}> / n_0``, ``C n_paths`` square with the output index slowest.
      f_draws: ``[chains, draws, P_test]`` (``[..., P_test, C]``) test outputs of the kept draws (complete chains only
        when a run stopped early and at least one chain completed).
      U_draws: ``[chains, draws, C n_paths, C n_paths]`` per-draw ``w^{c pi} . w^{c' sigma} / n_0``.
      inner: the sampled order parameters of the levels above, ``[U^(2), ..., U^(L), U_a]`` (means over the
        kept draws of :func:`~paththeory.sampling.path_form.level_order_parameters`), to compare with a
        :class:`~paththeory.solve.Solution`'s ``inner`` and ``U_a``.
      inner_draws: the per-draw values behind ``inner``, one ``[chains, draws, ...]`` array per level (for their
        Monte-Carlo errors).
      chains: one :class:`ChainReport` per started chain.
      diagnostics: R-hat, bulk ESS, divergences, E-BFMI, acceptance, wall time, ESS/s, and
        ``complete``, ``draws_used``, ``draws_planned`` and ``stopped`` (:func:`~paththeory.sampling.diagnostics.diagnostics_summary`
        turns them into one readable line, also when read back from JSON).
      stopped: ``None``, or what the time limit interrupted.
      settings: the arguments of the run.

    A run cut by a time budget its caller asked for (``on_time_limit="stop"``) is *incomplete*
    (``complete`` is False): its numbers come from fewer draws than planned, and so depend on how busy
    the machine was; a verdict must not use them. (By default a run that reaches ``time_limit`` raises
    :class:`TimeLimitReached` and returns nothing.)
    """

    mean: np.ndarray = field(repr=False)
    var: np.ndarray = field(repr=False)
    U: np.ndarray
    f_draws: np.ndarray = field(repr=False)
    U_draws: np.ndarray = field(repr=False)
    chains: list[ChainReport]
    diagnostics: dict
    stopped: dict | None
    settings: dict = field(default_factory=dict)
    inner: list = field(default_factory=list, repr=False)
    inner_draws: list = field(default_factory=list, repr=False)

    @property
    def complete(self) -> bool:
        """Whether every planned draw was taken (the time limit did not stop the run)."""
        return self.stopped is None

    def summary(self) -> str:
        """A few lines for logs and notebooks."""
        d, s = self.diagnostics, self.settings
        method = s.get("method", "nuts")
        lines = [
            f"{SAMPLER_NAMES[method]} posterior  N={s['widths']}  T={s['temperature']}  {s['dtype']}  "
            f"{len(self.chains)}/{s['num_chains']} chains x ({s['num_warmup']} warm-up + {s['num_samples']} draws), "
            f"{s['chain_method']}, init={s['init']}",
            f"  wall {d['seconds']:.1f} s   R-hat max {d['r_hat_max']:.3f} (U: {d['r_hat_U_max']:.3f})   "
            f"bulk ESS min {d['ess_bulk_min']:.0f} (U: {d['ess_bulk_U_min']:.0f}, median {d['ess_bulk_median']:.0f})   "
            f"ESS/s (U) {d['ess_per_second']:.2f}",
        ]
        if method == "gibbs":
            lines.append("  chains " + ", ".join(f"{c.chain}: {c.warmup_done}+{c.samples_done} sweeps" for c in self.chains)
                         + " (one compiled call per sweep for all of them)")
        else:
            lines.append(f"  divergences {d['divergences']}   accept {d['accept_prob']:.2f}   "
                         f"E-BFMI min {d['e_bfmi_min']:.2f}   steps/iter {d['mean_tree_steps']:.0f}")
            lines += [
                f"  chain {c.chain}: {c.warmup_done}+{c.samples_done} it, {c.seconds:.1f} s, step {c.step_size:.2e}, "
                f"{c.mean_tree_steps:.0f} steps/it ({c.max_depth_hits} at max depth), acc {c.accept_prob:.2f}, "
                f"E-BFMI {c.e_bfmi:.2f}, div {c.divergences}"
                for c in self.chains
            ]
        if "auto" in s:
            lines.append(f"  chosen by method='auto': {s['auto']['reason']}")
        if self.stopped:
            lines.append(f"  STOPPED (incomplete): {stopped_text(self.stopped)}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-friendly summary (no per-draw arrays)."""
        return {
            "U": self.U.tolist(),
            "diagnostics": self.diagnostics,
            "chains": [{k: v for k, v in vars(c).items() if k != "trace"} for c in self.chains],
            "stopped": self.stopped,
            "settings": self.settings,
        }


def check_inputs(arch: Architecture, features, y, features_test, temperature) -> tuple:
    """``(features [P, paths, N0], labels [P] or [P, C], test features, T)`` checked, as a sampler takes them;
    :class:`~paththeory.model.TokenFeatures` for a network with an MLP block between attention layers."""
    check_architecture(arch)
    if isinstance(features, TokenFeatures):
        return _check_token_inputs(arch, features, y, features_test, temperature)
    check_nonlinear_placement(arch)
    xi = as_float_array(features, "features", ndim=3)
    if xi.shape[1] != arch.n_paths:
        raise ValueError(
            f"features must be path features [P, n_paths={arch.n_paths}, N0] (paththeory.path_features); "
            f"got shape {xi.shape}."
        )
    labels = as_labels(y, xi.shape[0])  # [P, C]; refuses NaN, C = 0, wrong rows and class indices
    check_targets(y, "y", ndim=(1, 2))  # and booleans
    yy = labels if np.ndim(y) == 2 else labels[:, 0]
    xt = xi if features_test is None else as_float_array(features_test, "features_test", ndim=3)
    if xt.shape[1:] != xi.shape[1:]:
        raise ValueError(f"features_test must be [P_test, {xi.shape[1]}, {xi.shape[2]}]; got {xt.shape}.")
    return xi, yy, xt, check_positive(temperature, "temperature")



def _check_token_inputs(arch: Architecture, features: TokenFeatures, y, features_test, temperature) -> tuple:
    """:func:`check_inputs` for token features: the block's placement, both feature arrays' shapes (their lower and
    upper paths those of ``arch``'s heads), the labels."""
    check_nonlinear_placement(arch, tokens=True)
    n_lower, n_upper = token_path_counts(arch)
    shapes = []
    for f, name in ((features, "features"), (features if features_test is None else features_test, "features_test")):
        if not isinstance(f, TokenFeatures):
            raise TypeError(f"{name} must be paththeory.token_features(arch, x) like features; got {type(f).__name__}.")
        lower, upper = as_float_array(f.lower, f"{name}.lower", ndim=4), as_float_array(f.upper, f"{name}.upper", ndim=3)
        if lower.shape[0] != upper.shape[0] or lower.shape[2] != upper.shape[2] or lower.shape[1] != n_lower or \
                upper.shape[1] != n_upper:
            raise ValueError(f"{name} must hold lower [P, {n_lower}, T, N0] and upper [P, {n_upper}, T] of the same "
                             f"examples and tokens for heads {arch.heads}; got {lower.shape} and {upper.shape} "
                             f"(compute them with paththeory.token_features(arch, x)).")
        shapes.append((lower.shape[1:], upper.shape[1:]))
        f = TokenFeatures(lower, upper)
        if name == "features":
            xi = f
        else:
            xt = f
    if shapes[0] != shapes[1]:
        raise ValueError(f"features_test must have the training features' paths, tokens and N0; got {shapes[1]} "
                         f"against {shapes[0]}.")
    labels = as_labels(y, xi.lower.shape[0])
    check_targets(y, "y", ndim=(1, 2))
    return xi, labels if np.ndim(y) == 2 else labels[:, 0], xt, check_positive(temperature, "temperature")


def feature_shape(features) -> tuple[int, int]:
    """``(P, N0)`` of path features ``[P, paths, N0]`` or of :class:`~paththeory.model.TokenFeatures`."""
    x = features.lower if isinstance(features, TokenFeatures) else features
    return int(x.shape[0]), int(x.shape[-1])


def check_schedule(num_warmup, num_samples, num_chains, seed, time_limit, on_time_limit) -> tuple:
    """A run's schedule as every sampler takes it: ``(num_warmup, num_samples, num_chains, seed)``, checked,
    after checking the fail-safe ``time_limit`` (seconds or None) and ``on_time_limit`` ("raise" or "stop")."""
    if time_limit is not None:
        check_positive(time_limit, "time_limit")
    if on_time_limit not in ("raise", "stop"):
        raise ValueError(f"on_time_limit must be 'raise' or 'stop'; got {on_time_limit!r}.")
    return (check_count(num_warmup, "num_warmup", minimum=0), check_count(num_samples, "num_samples"),
            check_count(num_chains, "num_chains"), _check_seed(seed))


def _check_seed(seed) -> int:
    """``seed`` as an int in ``[0, 2**63 - 1]``, the range a JAX key takes."""
    seed = check_count(seed, "seed", minimum=0)
    if seed > 2**63 - 1:
        raise ValueError(f"seed must be a whole number between 0 and 2**63 - 1; got {seed}.")
    return seed


def resolve_chain_method(chain_method) -> str:
    """``"sequential"`` or ``"vectorized"`` from a sampler's ``chain_method`` (``"auto"``: vectorized on a GPU)."""
    if chain_method not in ("auto", "sequential", "vectorized"):
        raise ValueError(f"chain_method must be 'auto', 'sequential' or 'vectorized'; got {chain_method!r}.")
    if chain_method == "auto":
        return "vectorized" if jax.default_backend() in ("gpu", "cuda", "rocm") else "sequential"
    return chain_method


def check_target(target_ess, max_samples, num_samples: int) -> tuple[float | None, int]:
    """A sampler's ESS target checked: ``(target_ess or None, max_samples)``; ``max_samples`` (kept draws per chain,
    at least ``num_samples``) defaults to ``num_samples`` (no extension) without a target."""
    if target_ess is None:
        if max_samples is not None:
            raise ValueError("max_samples caps the draws that target_ess asks for; give target_ess too, or leave "
                             "max_samples out.")
        return None, num_samples
    target_ess = check_positive(target_ess, "target_ess")
    max_samples = check_count(20 * num_samples if max_samples is None else max_samples, "max_samples")
    if max_samples < num_samples:
        raise ValueError(f"max_samples ({max_samples}) is below num_samples ({num_samples}): it caps the kept draws "
                         f"per chain, so it must be at least num_samples.")
    return target_ess, max_samples


def check_draws_memory(num_chains: int, max_samples: int, size_U: int, n_test: int, n_outputs: int) -> None:
    """Refuse before sampling when the kept draws (``U`` and the test outputs, float64, at most ``max_samples`` per
    chain) would not fit in memory."""
    check_allocation(8.0 * num_chains * max_samples * (size_U**2 + n_test * n_outputs),
                     f"{num_chains} chains x {max_samples} kept draws of U ({size_U} x {size_U}) and of "
                     f"{n_test} test outputs; lower num_samples, max_samples or the test set")


def check_finite_draws(draws: list, temperature: float) -> None:
    """Raise if a kept draw holds NaN or infinite values (a temperature too small for float64, or features too
    large)."""
    if not all(np.all(np.isfinite(a)) for a in draws):
        raise ValueError(
            f"the posterior draws hold NaN or infinite values: temperature={temperature:g} is too small for float64 "
            "next to the scale of the features (or the features are too large); raise the temperature or rescale "
            "the features.")


def target_reached(result: "PosteriorSamples") -> bool | None:
    """Whether a run with an ESS target reached it (``None`` without a target), with a :class:`SamplingWarning` where a
    complete run stopped at ``max_samples`` short of it; stored as ``diagnostics["target_reached"]``."""
    target = result.settings.get("target_ess")
    if target is None:
        return None
    ess = result.diagnostics["ess_bulk_U_min"]
    reached = bool(np.isfinite(ess) and ess >= target)
    if not reached and result.complete:
        warnings.warn(f"the sampler stopped at max_samples = {result.settings['max_samples']} kept draws per chain "
                      f"with a least ESS of U of {ess:.0f}, short of its target {target:g}: it mixes more slowly here "
                      f"than the target assumed. Give a larger num_samples or max_samples, or accept the ESS "
                      f"reached (target_ess={ess:.0f}).", SamplingWarning, stacklevel=_caller_level())
    return reached


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside this package, seen from the function that calls this one: a
    warning then points at the user's line, however many of the package's calls lie between."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def least_ess_U(u_draws: np.ndarray) -> float:
    """The least bulk ESS over the entries of ``U``'s upper triangle, ``u_draws [chains, draws, k, k]`` (the
    ``ess_bulk_U_min`` of the diagnostics); 0 where it is undefined (fewer than four draws, constant draws)."""
    iu = np.triu_indices(u_draws.shape[-1])
    _, ess = rank_rhat_ess(u_draws[:, :, iu[0], iu[1]])
    ess_min = float(np.min(ess))
    return ess_min if np.isfinite(ess_min) else 0.0


def draws_to_add(ess: float, kept: int, target_ess: float | None, max_samples: int) -> int:
    """Kept draws per chain to add after ``kept`` so that the least ESS of ``U`` (now ``ess``) reaches ``target_ess``:
    the draws it takes at the rate measured so far, plus a fifth, at least a quarter of ``kept`` and at most up to
    ``max_samples``; 0 when the target is met, absent or the cap reached. A function of the draws only, never of
    the clock."""
    if target_ess is None or ess >= target_ess or kept >= max_samples:
        return 0
    wanted = math.ceil(1.2 * kept * target_ess / max(ess, 1.0)) - kept
    return int(min(max(wanted, math.ceil(kept / 4)), max_samples - kept))


def stopped_record(time_limit: float, chains, iteration: int, num_warmup: int, total: int, seconds: float) -> dict:
    """What the time limit interrupted: the ``stopped`` of :class:`PosteriorSamples` (``chains``: a chain or a list)."""
    return {"time_limit": float(time_limit), "chain": chains, "phase": "warmup" if iteration <= num_warmup else "sampling",
            "iteration": iteration, "of": total, "seconds": seconds}


def collect(
    records: dict, reports: list[ChainReport], seconds: float, stopped: dict | None, settings: dict
) -> PosteriorSamples:
    """Assemble per-chain records (``U`` and ``f`` per kept draw, ``meta``) and the chains' reports
    into a :class:`PosteriorSamples`; R-hat and ESS are computed the same way for every sampler."""
    complete = [c for c, r in sorted(records.items()) if r["meta"]["completed"]]
    use = complete or [c for c, r in sorted(records.items()) if r["f"]]  # cut chains: to the shortest
    n_draws = min((len(records[c]["f"]) for c in use), default=0)
    if n_draws:
        f_draws = np.stack([np.stack(records[c]["f"][:n_draws]) for c in use])
        u_draws = np.stack([np.stack(records[c]["U"][:n_draws]) for c in use])
    else:  # stopped during warm-up: nothing to summarise
        n_out = settings.get("n_outputs")
        f_draws = np.zeros((0, 0, settings["n_test"]) + (() if n_out is None else (n_out,)))
        size = settings["n_paths"] * (n_out or 1)
        u_draws = np.zeros((0, 0, size, size))
    inner_draws = [np.asarray([[records[c]["levels"][d][k] for d in range(n_draws)] for c in use], dtype=float)
                   for k in range(len(records[use[0]]["levels"][0]))] if n_draws and records[use[0]].get("levels") else []
    inner = [draws.reshape(-1, *draws.shape[2:]).mean(axis=0) for draws in inner_draws]
    n_paths = u_draws.shape[-1]  # C n_paths with C outputs
    iu = np.triu_indices(n_paths)
    summaries = np.concatenate([u_draws[:, :, iu[0], iu[1]], f_draws.reshape(f_draws.shape[:2] + (int(np.prod(f_draws.shape[2:])),))], axis=2)
    r_hat, ess = rank_rhat_ess(summaries) if n_draws else (np.full(1, np.nan),) * 2
    flat_f = f_draws.reshape((-1,) + f_draws.shape[2:])  # [draws, P_test] or [draws, P_test, C]
    ess_min = float(np.min(ess))
    nanstat = lambda fn, xs: float(fn(xs)) if len(xs) and not np.all(np.isnan(xs)) else float("nan")  # noqa: E731
    n_u = len(iu[0])
    diagnostics = dict(
        r_hat_max=float(np.max(r_hat)),
        r_hat_U_max=float(np.max(r_hat[:n_u])),
        ess_bulk_min=ess_min,
        ess_bulk_median=float(np.median(ess)),
        ess_bulk_U_min=float(np.min(ess[:n_u])),
        ess_per_second=float(np.min(ess[:n_u])) / seconds,
        divergences=int(sum(r.divergences for r in reports)),
        accept_prob=nanstat(np.nanmean, [r.accept_prob for r in reports]),
        e_bfmi=[r.e_bfmi for r in reports],
        e_bfmi_min=nanstat(np.nanmin, [r.e_bfmi for r in reports]),
        mean_tree_steps=nanstat(np.nanmean, [r.mean_tree_steps for r in reports]),
        seconds=seconds,
        draws_used=int(f_draws.shape[0] * f_draws.shape[1]),
        draws_planned=int(settings["num_chains"] * settings["num_samples"]),
        complete=stopped is None,
        method=settings.get("method", "nuts"),
        stopped=stopped,
    )
    result = PosteriorSamples(
        mean=flat_f.mean(axis=0) if n_draws else np.full(f_draws.shape[2:], np.nan),
        var=_output_covariance(flat_f),
        U=u_draws.reshape(-1, n_paths, n_paths).mean(axis=0) if n_draws else np.full((n_paths, n_paths), np.nan),
        f_draws=f_draws,
        U_draws=u_draws,
        chains=reports,
        diagnostics=diagnostics,
        stopped=stopped,
        settings=settings,
        inner=inner,
        inner_draws=inner_draws,
    )
    result.diagnostics["target_reached"] = target_reached(result)
    return result


def _output_covariance(flat_f: np.ndarray) -> np.ndarray:
    """Unbiased variance over draws of ``flat_f [draws, P_test]``, or the output-output covariance
    ``[P_test, C, C]`` of ``flat_f [draws, P_test, C]``; NaN with fewer than two draws."""
    n = flat_f.shape[0]
    if flat_f.ndim == 2:
        return flat_f.var(axis=0, ddof=1) if n > 1 else np.full(flat_f.shape[1:], np.nan)
    if n < 2:
        return np.full(flat_f.shape[1:] + flat_f.shape[-1:], np.nan)
    centred = flat_f - flat_f.mean(axis=0)
    return np.einsum("dpc,dpe->pce", centred, centred) / (n - 1)

