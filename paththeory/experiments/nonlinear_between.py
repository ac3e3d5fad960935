"""The nonlinear MLP block *between* the two attention layers against exact samples of the network (book: Beyond
the paper: nonlinear MLP blocks, "Between attention layers").

The network of :func:`paththeory.experiments.nonlinear.between_architecture` (first attention layer, the block
``phi(M z / sqrt(n))`` on every token, second attention layer, last-token readout) on the first ``n_train`` training
and ``n_test`` test sequences of the paper's Fig. 2 task, sampled with NUTS on its token features. At every sampled
width the three theories of :mod:`paththeory.experiments.nonlinear` are measured against the samples, with the same
distances, rows and findings: the heuristic (:class:`paththeory.nonlinear_theory.NonlinearTheory` on the token
features, its "path" variant), the nonlinear GP, and the linear theory on the same network's path features
(``phi`` ignored). Every theory's ``U`` is ``U^(1)`` over all paths (lower and upper head), so the three compare on
one scale.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from functools import partial
from pathlib import Path

from paththeory import _io
from paththeory.experiments.nonlinear import (NONLINEARITIES, SAMPLERS, Config, between_problem, compare, findings,
                                              read_rows, sample_points, theories)
from paththeory.experiments.records import SHIPPED, ShippedRecords, jsonable
from paththeory.profiles import choose, current_profile

#: The shipped records (``python -m paththeory nonlinear_between``).
RECORDS = ShippedRecords("nonlinear_between", SHIPPED, SAMPLERS, ("n_train", "n_test", "temperature", "seed"),
                         "the records of the nonlinear block between attention layers")
_POINTS = tuple((phi, n) for phi in NONLINEARITIES for n in (10, 30))
#: The chapter's section's sizes: 16 training and 200 test sequences (the token kernels are ``(P T)^2``); the
#: theories are solved at the sampled widths only.
_SIZES = dict(theory_widths=(10, 30), n_train=16, n_test=200)
SETTINGS: dict[str, Config] = {
    # smoke and colab: sampled once on a 2-core CPU (`python -m paththeory nonlinear_between`) and shipped.
    "smoke": Config(_POINTS, 200, 400, 2, 4 * 3600.0, **_SIZES),
    "colab": Config(_POINTS, 200, 400, 2, 4 * 3600.0, **_SIZES),
    "paper": Config(_POINTS + tuple((phi, 100) for phi in NONLINEARITIES), 400, 800, 4, 24 * 3600.0,
                    **{**_SIZES, "theory_widths": (10, 30, 100)}),
}
#: The samplers' names in words, for the command line.
SAMPLER_NAMES = {"nuts": "NUTS"}


def settings(profile: str | None = None) -> Config:
    """The :class:`~paththeory.experiments.nonlinear.Config` of ``profile`` (default: the current profile)."""
    return choose(SETTINGS, profile)


def problem(phi: str, cfg: Config):
    """:func:`paththeory.experiments.nonlinear.between_problem` at ``cfg``'s sizes."""
    return between_problem(phi, cfg.n_train, cfg.n_test)


def write_samples(profile: str | None = None, out: str | os.PathLike | None = None, *, sampler: str = "nuts",
                  progress: bool = True) -> Path:
    """Sample every point of ``profile`` and write the records with their provenance to ``out`` (default: the
    package's own file, which the book reads). Atomic: an interrupted run leaves the previous file intact."""
    profile = current_profile(profile)
    return RECORDS.write(settings(profile), profile, sampler,
                         partial(sample_points, progress=progress, problem_of=problem), out)


def samples(profile: str | None = None, *, progress: bool = False, config: Config | None = None) -> dict:
    """The shipped records whose sizes match ``config`` (default: ``profile``'s), else a fresh run (not written)."""
    return RECORDS.load(config or settings(profile), current_profile(profile), "nuts",
                        partial(sample_points, progress=progress, problem_of=problem))


def run(profile: str | None = None, out_dir: str | Path | None = None, *, config: Config | None = None,
        progress: bool = False) -> dict:
    """The section's numbers at the profile's scale, or ``config``'s (the NUTS records shipped for those sizes, or
    sampled afresh): the rows of :func:`paththeory.experiments.nonlinear.compare` against the three theories at the
    sampled widths and their findings (read back with :func:`paththeory.experiments.nonlinear.read_rows` and
    :func:`~paththeory.experiments.nonlinear.read_findings`); written to ``out_dir``'s ``results.json`` when given
    (``python -m paththeory reproduce nonlinear_between``)."""
    name = current_profile(profile)
    if out_dir is not None:
        out_dir = _io.check_output_folder(out_dir)
    cfg = config or settings(name)
    start = time.perf_counter()
    payload = samples(name, progress=progress, config=cfg)
    widths = sorted(set(cfg.theory_widths) | {rec["width"] for rec in payload["records"]})
    solve_start = time.perf_counter()
    curves = {phi: theories(problem(phi, cfg), widths, cfg.temperature) for phi in NONLINEARITIES}
    solve_seconds = time.perf_counter() - solve_start
    results = jsonable({
        "profile": name, "config": asdict(cfg), "provenance": payload["provenance"],
        "rows": compare(payload, cfg, curves, problem_of=problem), "solve_seconds": solve_seconds,
        "sampled_in_this_run": payload["provenance"]["command"] == "sampled in this run",
    })
    results["findings"] = jsonable(findings(read_rows(results)))
    results["seconds"] = time.perf_counter() - start
    if out_dir is not None:
        _io.write_outputs(Path(out_dir), results, {}, {})
    return results
