"""Posterior sampling of the finite network: :func:`sample_posterior` (by default choosing the sampler and its
schedule from the sizes, :mod:`~paththeory.sampling.auto`) by NUTS over the value weights
with the readout integrated out (:mod:`~paththeory.sampling.nuts`) or by exact blocked Gibbs
(:mod:`~paththeory.sampling.gibbs`), both in path form (:mod:`~paththeory.sampling.path_form`), returning
the same results (:mod:`~paththeory.sampling.results`) with the chains' convergence diagnostics
(:mod:`~paththeory.sampling.diagnostics`)."""

from __future__ import annotations

from paththeory.sampling.diagnostics import (
    diagnostics_summary,
    e_bfmi,
    effective_sample_size,
    rank_rhat_ess,
)
from paththeory.sampling.gibbs import sample_gibbs
from paththeory.sampling.path_form import (
    draw_readout,
    marginal_log_likelihood,
    output_effective_weights,
    readout_design,
)
from paththeory.sampling.nuts import INITS, posterior_model, sample_nuts
from paththeory.sampling.posterior import SAMPLERS, sample_posterior
from paththeory.sampling.results import ChainReport, PosteriorSamples, SamplingWarning, TimeLimitReached

__all__ = [
    "ChainReport",
    "INITS",
    "PosteriorSamples",
    "SAMPLERS",
    "SamplingWarning",
    "TimeLimitReached",
    "diagnostics_summary",
    "draw_readout",
    "e_bfmi",
    "effective_sample_size",
    "marginal_log_likelihood",
    "output_effective_weights",
    "posterior_model",
    "rank_rhat_ess",
    "readout_design",
    "sample_gibbs",
    "sample_nuts",
    "sample_posterior",
]
