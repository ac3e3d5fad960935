"""Reproduction pipelines, one module per figure of the paper, shared by the chapters and the CLI, with
the statistics behind their verdicts (:mod:`.stats`), the claims machinery (:mod:`.claims`) and the
solver's benchmark (:mod:`.bench`). The modules are imported by name (``from paththeory.experiments
import markov``); the package itself holds the helpers they share."""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Callable, Mapping

import jax
import numpy as np

from paththeory.sampling.diagnostics import SAMPLER_NAMES  # the samplers (``method``) and their names in text

__all__ = ["SAMPLER_NAMES", "ShippedRecords", "jsonable", "provenance", "sampled_vs_theory"]


def jsonable(obj):
    """Arrays to lists, numpy scalars to floats, NaN to None (strict JSON)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (np.ndarray, jax.Array)):
        return jsonable(np.asarray(obj).tolist())
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def sampled_vs_theory(theory, sampled, sampled_se, gp_scale: float, seed: int = 0) -> dict:
    """How far a sampled estimate of ``U`` (NUTS or Gibbs) lies from the theory's, shared by Fig. 2, Fig. 3
    and the validity figure.

    ``relative_distance = |U_sampled - U_theory|_F / |U_theory|_F``; its Monte Carlo ``noise`` is the
    Frobenius norm of the per-entry batch-means errors ``sampled_se`` on the same scale (``None``
    when ``sampled_se`` is); ``gp_relative_distance`` is the distance of the sample from the GP
    point ``gp_scale I`` (for scale); ``mantel`` a Mantel test of the two patterns (``None`` below
    three paths, too few to permute).

    Example:
      >>> d = sampled_vs_theory(np.eye(3), 1.1 * np.eye(3), np.full((3, 3), 0.01), 1.0)
      >>> round(d["relative_distance"], 3), round(d["noise"], 3), round(d["gp_relative_distance"], 3)
      (0.1, 0.017, 0.1)
    """
    from paththeory.experiments import stats

    th, sampled = np.asarray(theory, dtype=float), np.asarray(sampled, dtype=float)
    norm = float(np.linalg.norm(th))
    noise = None if sampled_se is None else float(np.linalg.norm(np.asarray(sampled_se, dtype=float)) / norm)
    return {"relative_distance": float(np.linalg.norm(sampled - th) / norm), "noise": noise,
            "gp_relative_distance": float(np.linalg.norm(sampled - gp_scale * np.eye(len(th))) / norm),
            "mantel": stats.mantel_test(th, sampled, seed=seed) if len(th) >= 3 else None}


def provenance(config, profile: str, seconds: float, command: str) -> dict:
    """Where a file of shipped records comes from: the profile and its sizes (``config``, a dataclass), the
    command, the date, the time taken, the machine and the versions of JAX and NumPyro."""
    import os
    import platform
    from dataclasses import asdict
    from datetime import datetime, timezone

    import numpyro

    return {"profile": profile, "config": asdict(config), "command": command,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "seconds": round(seconds, 1),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores, JAX on {jax.default_backend()}",
            "versions": {"jax": jax.__version__, "numpyro": numpyro.__version__}}


@dataclass(frozen=True)
class ShippedRecords:
    """The records of an experiment sampled with several samplers, shipped one JSON file per sampler and profile.

    ``command``: the experiment's command, ``python -m paththeory COMMAND --profile PROFILE [--sampler S]``
    (NUTS is the default and takes no flag), and the files' prefix: ``COMMAND_PROFILE.json`` for NUTS,
    ``COMMAND_S_PROFILE.json`` for another sampler ``S``, in ``folder``. ``samplers``: per sampler, the fields
    of the experiment's configuration (a dataclass) that fix its records (its points and schedule); ``data``: the
    fields that fix the data every sampler sees. A file serves a configuration when its provenance names the
    sampler and agrees on exactly these fields: a field added for one sampler leaves the other's files valid, and
    a time limit, which changes no number, is never compared. ``what``: the records in an error message.

    Example:
      >>> files = ShippedRecords("demo", Path("."), {"nuts": ("widths",), "gibbs": ("gibbs_widths",)}, ("seed",))
      >>> files.file_name("smoke", "nuts"), files.file_name("smoke", "gibbs")
      ('demo_smoke.json', 'demo_gibbs_smoke.json')
      >>> files.sizes({"widths": (10, 30), "gibbs_widths": (300,), "seed": 0, "time_limit": 60.0}, "gibbs")
      {'gibbs_widths': [300], 'seed': 0}
    """

    command: str
    folder: Path
    samplers: Mapping[str, tuple[str, ...]]
    data: tuple[str, ...]
    what: str = "the records"

    def check(self, sampler: str) -> str:
        """``sampler`` when it is one of :attr:`samplers`; a clear error otherwise."""
        if not isinstance(sampler, str) or sampler not in self.samplers:
            raise ValueError(f"sampler must be one of {tuple(self.samplers)}; got {sampler!r}.")
        return sampler

    def sizes(self, config, sampler: str) -> dict:
        """The fields of ``config`` (a dataclass or its JSON dictionary) that fix ``sampler``'s records."""
        config = asdict(config) if is_dataclass(config) else config
        return {k: jsonable(config[k]) for k in (*self.samplers[self.check(sampler)], *self.data)}

    def file_name(self, profile: str, sampler: str) -> str:
        """The shipped file of ``sampler``'s records at ``profile``'s sizes."""
        return (f"{self.command}_{profile}.json" if self.check(sampler) == "nuts"
                else f"{self.command}_{sampler}_{profile}.json")

    def provenance(self, config, profile: str, seconds: float, sampler: str) -> dict:
        """:func:`provenance` of ``sampler``'s records, with the sampler and the command that writes them."""
        flag = "" if self.check(sampler) == "nuts" else f" --sampler {sampler}"
        command = f"python -m paththeory {self.command} --profile {profile}{flag}"
        return {**provenance(config, profile, seconds, command), "sampler": sampler}

    def shipped(self, config, sampler: str) -> dict | None:
        """The shipped ``{"sampler", "provenance", "records"}`` of ``sampler`` whose sizes are ``config``'s (a file
        of another profile with the same sizes serves too), or ``None``."""
        wanted = self.sizes(config, sampler)
        for path in sorted(self.folder.glob(f"{self.command}_*.json")):
            payload = json.loads(path.read_text())
            prov = payload["provenance"]
            if prov.get("sampler") == sampler and self.sizes(prov["config"], sampler) == wanted:
                return {"sampler": sampler, **payload}
        return None

    def sample(self, config, profile: str, sampler: str, sample_points: Callable[..., list]) -> dict:
        """A fresh ``{"sampler", "provenance", "records"}``: ``sample_points(config, sampler)``, timed."""
        self.check(sampler)
        start = time.perf_counter()
        records = sample_points(config, sampler)
        prov = self.provenance(config, profile, time.perf_counter() - start, sampler)
        return {"sampler": sampler, "provenance": prov, "records": records}

    def load(self, config, profile: str, sampler: str, sample_points: Callable[..., list]) -> dict:
        """The shipped records of ``sampler`` at ``config``'s sizes, else a fresh :meth:`sample` (not written),
        whose provenance's command reads ``"sampled in this run"``."""
        payload = self.shipped(config, sampler)
        if payload is None:
            payload = self.sample(config, profile, sampler, sample_points)
            payload["provenance"]["command"] = "sampled in this run"
        return payload

    def write(self, config, profile: str, sampler: str, sample_points: Callable[..., list],
              out: str | os.PathLike | None = None) -> Path:
        """:meth:`sample` written to ``out`` (default: the shipped file, :meth:`file_name` in ``folder``); atomic:
        an interrupted run leaves the previous file intact."""
        from paththeory import _io

        payload = self.sample(config, profile, sampler, sample_points)
        path = Path(out) if out is not None else self.folder / self.file_name(profile, sampler)
        _io.write_json(path, {"provenance": payload["provenance"], "records": payload["records"]}, self.what)
        return path
