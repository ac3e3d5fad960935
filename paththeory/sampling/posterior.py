"""Sampling the finite network's posterior (the paper's Eq. 8) by NUTS or by exact blocked Gibbs.

Both samplers return the same :class:`~paththeory.sampling.results.PosteriorSamples`: the mean
predictor and its variance on the test inputs, the sampled order parameter ``U`` (the paper's Eq. 13)
and the chains' diagnostics, computed the same way (rank-normalised R-hat, bulk ESS).
"""

from __future__ import annotations

import inspect
import math
from typing import Literal, Sequence

from paththeory.model import Architecture, check_architecture
from paththeory.sampling.auto import TARGET_ESS, choose
from paththeory.sampling.gibbs import sample_gibbs
from paththeory.sampling.nuts import sample_nuts
from paththeory.sampling.results import PosteriorSamples

SAMPLERS = {"nuts": sample_nuts, "gibbs": sample_gibbs}


def sample_posterior(
    arch: Architecture,
    features,
    y,
    width: int | Sequence[int],
    temperature: float,
    *,
    method: Literal["auto", "nuts", "gibbs"] = "auto",
    **options,
) -> PosteriorSamples:
    """Sample the network posterior; return predictions, sampled ``U`` and diagnostics.

    Args:
      arch: the architecture (its attention is already inside ``features``).
      features: training path features ``[P, n_paths, N0]`` (:func:`paththeory.model.path_features`).
      y: training labels ``[P]``, or ``[P, C]`` for ``C`` outputs.
      width: common width ``N`` or the widths ``(n_0..n_L)`` of the network.
      temperature: Gibbs temperature ``T`` (likelihood variance).
      method: ``"auto"`` (default: the sampler and a schedule that aims at an ESS of ``U``, chosen from the sizes
        by :func:`~paththeory.sampling.auto.choose`; ``settings["auto"]`` says what it chose and why), ``"nuts"``
        (:func:`~paththeory.sampling.nuts.sample_nuts`, NumPyro's NUTS over the value weights with the readout
        integrated out) or ``"gibbs"`` (:func:`~paththeory.sampling.gibbs.sample_gibbs`, exact draws of each weight
        block from its Gaussian conditional).
      options: the chosen sampler's keyword arguments (``features_test``, ``num_warmup``,
        ``num_samples``, ``num_chains``, ``target_ess``, ``max_samples``, ``time_limit``, ``on_time_limit``,
        ``seed``, ``progress_bar`` for both; NUTS also takes its tuning options). With ``"auto"``, ``num_warmup``
        and ``num_samples`` replace the chosen start, and ``target_ess=None`` keeps to it.

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem("mean")
      >>> out = sample_posterior(arch, pt.path_features(arch, x), np.array([1.0, -1.0, 1.0, -1.0]), 4, 0.1,
      ...                        method="gibbs", num_warmup=10, num_samples=10, num_chains=2, progress_bar=False)
      >>> out.U.shape, out.settings["method"]
      ((6, 6), 'gibbs')
    """
    if not isinstance(method, str) or method not in ("auto", *SAMPLERS):
        raise ValueError(f"method must be 'auto' or one of {sorted(SAMPLERS)}; got {method!r}.")
    if method == "auto":
        return _sample_auto(arch, features, y, width, temperature, options)
    sampler = SAMPLERS[method]
    accepted = set(inspect.signature(sampler).parameters) - {"arch", "features", "y", "width", "temperature"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        other = [m for m, fn in SAMPLERS.items() if m != method and set(unknown) <= set(inspect.signature(fn).parameters)]
        hint = f" (options of method={other[0]!r})" if other else ""
        raise TypeError(f"sample_posterior(method={method!r}) does not take {', '.join(unknown)}{hint}; "
                        f"it takes {', '.join(sorted(accepted))}.")
    return sampler(arch, features, y, width, temperature, **options)


def _sample_auto(arch: Architecture, features, y, width, temperature, options: dict) -> PosteriorSamples:
    """``method="auto"``: the sampler and schedule of :func:`~paththeory.sampling.auto.choose`, run to its ESS target
    (a :class:`~paththeory.sampling.results.SamplingWarning` where the cap stopped it short)."""
    check_architecture(arch)
    known = set().union(*(inspect.signature(fn).parameters for fn in SAMPLERS.values())) - {
        "arch", "features", "y", "width", "temperature"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"sample_posterior(method='auto') does not take {', '.join(unknown)}; it takes "
                        f"{', '.join(sorted(known - {'max_samples'}))}.")
    options = dict(options)
    target = options.pop("target_ess", TARGET_ESS)
    if "max_samples" in options:
        raise TypeError("sample_posterior(method='auto') sets max_samples itself (a multiple of the draws it starts "
                        "with); give num_samples and target_ess, or choose method='gibbs' or 'nuts' to set it.")
    choice = choose(arch, arch.network_widths(width), options, num_chains=options.get("num_chains", 4),
                    target_ess=target)
    schedule = dict(num_warmup=choice.num_warmup, num_samples=choice.num_samples)
    if choice.target_ess is not None:
        schedule.update(target_ess=choice.target_ess, max_samples=choice.max_samples)
    result = sample_posterior(arch, features, y, width, temperature, method=choice.method, **{**options, **schedule})
    ess = result.diagnostics["ess_bulk_U_min"]
    result.settings["auto"] = {**choice.as_dict(), "reached": result.diagnostics["target_reached"],
                               "ess_U_min": float(ess) if math.isfinite(ess) else None}
    return result
