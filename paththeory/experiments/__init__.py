"""Reproduction pipelines, one module per figure or chapter, shared by the chapters and the CLI: each computes
its findings (numbers, errors, verdicts) and stores them with its results; their words live apart, in
:mod:`paththeory.reports`.

* :mod:`.records`: JSON-ready values and typed findings, the samplers' schedules, the run's environment and
  provenance, the shipped files of posterior samples;
* :mod:`.compare`: the theory against samples, one sampler against another; :mod:`.stats`: the calibrated
  statistics behind every verdict;
* the experiments: :mod:`.markov` (Fig. 2), :mod:`.omniglot` and :mod:`.pruning` (Fig. 3), :mod:`.claims` (the
  paper's claims as verdicts), :mod:`.validity` and :mod:`.prefactor` (where the theory holds), :mod:`.multiclass`
  and :mod:`.omniglot_nway` (many outputs), :mod:`.residual` (the residual stream); :mod:`.bench` (the solver's
  benchmark).

This package is a face: the names below are defined in :mod:`.records` and :mod:`.compare`; the experiments are
imported by name (``from paththeory.experiments import markov``).
"""

from paththeory.experiments.compare import record_batches, relative_distance, sampled_vs_theory, sampler_agreement
from paththeory.experiments.records import (ShippedRecords, environment, jsonable, provenance, samplers, schedule,
                                            schedule_fields, typed)
from paththeory.sampling.diagnostics import SAMPLER_NAMES  # the samplers (``method``) and their names in text

__all__ = ["SAMPLER_NAMES", "ShippedRecords", "environment", "jsonable", "provenance", "record_batches",
           "relative_distance", "sampled_vs_theory", "sampler_agreement", "samplers", "schedule", "schedule_fields",
           "typed"]
