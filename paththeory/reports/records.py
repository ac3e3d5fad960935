"""Where an experiment's shipped records come from, in one sentence that every report of sampled records uses
(book: the validity and residual-stream chapters). Formats only: the provenance is
:func:`paththeory.experiments.records.ShippedRecords.provenance`'s."""

from __future__ import annotations

from paththeory.experiments import SAMPLER_NAMES
from paththeory.experiments.records import schedule

#: What a sampler's warm-up is made of, in words.
WARM_UP = {"nuts": "warm-up steps", "gibbs": "warm-up sweeps"}


def _minutes(seconds: float) -> str:
    """``seconds`` as whole minutes in words (``"1 minute"``, ``"22 minutes"``; under half a minute: ``"under a
    minute"``)."""
    m = f"{seconds / 60:.0f}"
    return "under a minute" if m == "0" else f"{m} minute" + ("" if m == "1" else "s")


def provenance_sentence(provenance: dict | None, sizes: str = "", chains: bool = True) -> str:
    """A reader's sentence on where one sampler's records come from: the sampler, the profile, the command, date,
    machine and minutes that drew them (or that this build drew them), and each point's chains, draws and
    warm-up (``chains`` False: left out, for a report that gives them itself); ``sizes``, the experiment's own sizes
    in words, follows. ``provenance`` ``None``: the profile samples nothing with that sampler.

    Example:
      >>> prov = {"sampler": "gibbs", "profile": "smoke", "command": "sampled in this run",
      ...         "config": {"gibbs_warmup": 10, "gibbs_samples": 20, "gibbs_chains": 2}}
      >>> text = provenance_sentence(prov, "T = 0.01.")
      >>> text[:70]
      'The Gibbs samples (smoke sizes) were drawn while this page was built. '
      >>> text[70:]
      'Each point is 2 chains of 20 draws after 10 warm-up sweeps. T = 0.01.'
    """
    if provenance is None:
        return "This profile samples no point with this sampler."
    sampler = provenance["sampler"]
    sched = schedule(provenance["config"], sampler)
    where = ("were drawn while this page was built" if provenance["command"] == "sampled in this run" else
             f"were drawn by `{provenance['command']}` on {provenance['date']} ({provenance['machine']}, "
             f"{_minutes(provenance['seconds'])}) and ship with the package; the theory is solved as the page "
             "is built")
    text = f"The {SAMPLER_NAMES[sampler]} samples ({provenance['profile']} sizes) {where}."
    if chains:
        text += (f" Each point is {sched['num_chains']} chains of {sched['num_samples']} draws after "
                 f"{sched['num_warmup']} {WARM_UP[sampler]}.")
    return f"{text} {sizes}" if sizes else text
