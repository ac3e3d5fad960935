"""The sampler chosen for you: ``sample_posterior(method="auto")`` picks the sampler and its schedule from the sizes.

**Which sampler.** Exact blocked Gibbs (:func:`~paththeory.sampling.gibbs.sample_gibbs`) wherever it applies, that
is wherever the network is linear in each weight block: on the Markov task (P = 100, four paths, T = 0.01,
``paththeory bench --case sampling``, one process, two chains each, on 2 CPU cores shared with other jobs), Gibbs
with this module's schedule gave 1.5, 8.7, 28 and 167 times NUTS's least ESS of ``U`` per CPU-second at
N = 10, 30, 100 and 300 (reaching the ESS target of 400 everywhere, R-hat of ``U`` at most 1.009). NUTS (:func:`~paththeory.sampling.nuts.sample_nuts`) where Gibbs does
not apply (a nonlinear MLP block has no Gaussian conditional) or where the caller gave an option only NUTS takes
(``integrate_readout``, ``dtype``, ``init``, ``max_tree_depth``, ``target_accept_prob``).

**Which schedule.** The run aims at an effective sample size, not a draw count: ``target_ess`` (default
:data:`TARGET_ESS`) for the least bulk ESS over ``U``'s entries, all chains together. It starts from the draws
that target takes at the rate measured on the Markov task at the network's smallest width (:data:`GIBBS_SWEEPS`,
kept Gibbs sweeps per effective draw of ``U``, interpolated in log-log; :data:`NUTS_DRAWS` for NUTS) and then goes
on while the ESS is short, at the rate its own draws show (:func:`~paththeory.sampling.results.draws_to_add`), up
to :data:`CAP` times the start. The sizes and the draws decide; the clock never does. A run that stops at its cap
short of the target says so in a :class:`~paththeory.sampling.results.SamplingWarning`, and
``settings["auto"]["reached"]`` is False.

**The slow direction at small width.** At N = 10 a Gibbs sweep is worth 1/18 to 1/50 of an independent draw of
``U`` (:mod:`~paththeory.sampling.gibbs`); the schedule pays for it with longer chains and more warm-up rather than
curing it, and Gibbs still leads NUTS there per CPU-second.

Book: Wider networks, sampled exactly (https://paththeory.github.io/paththeory/book/markov.html#markov-gibbs)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from paththeory._checks import check_count, check_positive
from paththeory.model import Architecture

#: Least bulk ESS over ``U``'s entries, all chains together, that an automatic run aims at (100 per chain of four).
TARGET_ESS = 400.0
#: Kept Gibbs sweeps per effective draw of ``U`` on the Markov task (P = 100, four paths, T = 0.01), by width:
#: N = 10 from four chains of 2,000-2,500 sweeps (1/18 to 1/50 of a draw: the slower end), N = 30, 100, 300 from two
#: chains of 200 + 1,000 sweeps.
GIBBS_SWEEPS = {10: 50.0, 30: 6.4, 100: 2.0, 300: 1.4}
#: NUTS iterations per effective draw of ``U`` assumed at the start (its draws then set the rate).
NUTS_DRAWS = 2.0
#: An automatic run takes at most this many times the kept draws it starts with.
CAP = 4
#: and starts with at most this many kept draws per chain.
MAX_START = 5000
#: The options only NUTS takes: given any of them, ``"auto"`` picks NUTS.
NUTS_OPTIONS = frozenset({"integrate_readout", "dtype", "init", "max_tree_depth", "target_accept_prob"})


@dataclass(frozen=True)
class Choice:
    """What ``method="auto"`` chose: the sampler, its schedule per chain (warm-up, kept draws to start with, at most
    ``max_samples``), the ESS it aims at (``None``: none, the schedule kept to), and the reason in words
    (``settings["auto"]`` of the result)."""

    method: str
    num_warmup: int
    num_samples: int
    max_samples: int
    target_ess: float | None
    reason: str

    def as_dict(self) -> dict:
        """The choice as plain values (JSON-friendly)."""
        return asdict(self)


def gibbs_sweeps_per_draw(width: int) -> float:
    """Kept Gibbs sweeps per effective draw of ``U`` at the smallest width ``width``: :data:`GIBBS_SWEEPS` interpolated
    in log-log, held at its end values beyond the measured widths (the run's own draws then set the rate)."""
    widths = sorted(GIBBS_SWEEPS)
    return float(np.exp(np.interp(math.log(width), np.log(widths), np.log([GIBBS_SWEEPS[w] for w in widths]))))


def choose(arch: Architecture, widths: Sequence[int], options: dict, num_chains: int = 4,
           target_ess: float | None = TARGET_ESS) -> Choice:
    """The sampler and schedule for ``arch`` at ``widths`` (the network's, ``n_0..n_L``) given the caller's other
    ``options``; ``num_warmup`` or ``num_samples`` among them replace the chosen ones. ``target_ess=None``: the
    schedule that :data:`TARGET_ESS` would start with, kept to (``max_samples = num_samples``)."""
    extend = target_ess is not None
    width, target_ess = int(min(widths)), check_positive(TARGET_ESS if target_ess is None else target_ess, "target_ess")
    num_chains = check_count(num_chains, "num_chains")
    nuts_options = sorted(NUTS_OPTIONS & set(options))
    if not arch.linear:
        method, per_draw = "nuts", NUTS_DRAWS
        why = (f"NUTS: the network has a nonlinear MLP block ({', '.join(sorted(set(arch.nonlinearities) - {'identity'}))}), so its weights have "
               f"no Gaussian conditional for the exact Gibbs sampler")
    elif nuts_options:
        method, per_draw = "nuts", NUTS_DRAWS
        why = f"NUTS: options only NUTS takes were given ({', '.join(nuts_options)})"
    else:
        method, per_draw = "gibbs", gibbs_sweeps_per_draw(width)
        why = ("exact blocked Gibbs: the network is linear in each weight block, and Gibbs gave 1.5-167 times "
               "NUTS's effective draws of U per CPU-second at N = 10-300 on the Markov task")
    kept = min(MAX_START, max(50, math.ceil(target_ess * per_draw / num_chains)))
    warmup = max(200, math.ceil(10 * per_draw)) if method == "gibbs" else 300
    num_warmup = check_count(options.get("num_warmup", warmup), "num_warmup", minimum=0)
    num_samples = check_count(options.get("num_samples", kept), "num_samples")
    unit = "sweeps" if method == "gibbs" else "iterations"
    reason = (f"{why}; at the smallest width N = {width}, about {per_draw:.3g} {unit} per effective draw of U, so "
              f"{num_warmup} warm-up and {num_samples} kept {unit} per chain")
    if not extend:
        return Choice(method, num_warmup, num_samples, num_samples, None, reason)
    reason += (f" to start, more while the least ESS of U is below {target_ess:g} (at most {CAP * num_samples} kept "
               f"per chain)")
    return Choice(method, num_warmup, num_samples, CAP * num_samples, float(target_ess), reason)
