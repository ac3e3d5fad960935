"""Posterior sampling of the finite network: NumPyro NUTS over the value weights with the readout
integrated out (:mod:`~paththeory.sampling.nuts`), and the chains' convergence diagnostics
(:mod:`~paththeory.sampling.diagnostics`)."""

from __future__ import annotations

from paththeory.sampling.nuts import (
    ChainReport,
    INITS,
    PosteriorSamples,
    TimeLimitReached,
    draw_readout,
    marginal_log_likelihood,
    output_effective_weights,
    posterior_model,
    readout_design,
    sample_posterior,
)
from paththeory.sampling.diagnostics import (
    diagnostics_summary,
    e_bfmi,
    effective_sample_size,
    rank_rhat_ess,
)

__all__ = [
    "ChainReport",
    "INITS",
    "PosteriorSamples",
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
    "sample_posterior",
]
