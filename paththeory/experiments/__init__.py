"""Reproduction pipelines, one module per figure of the paper, shared by the chapters and the CLI, with
the statistics behind their verdicts (:mod:`.stats`), the claims machinery (:mod:`.claims`) and the
solver's benchmark (:mod:`.bench`). The modules are imported by name (``from paththeory.experiments
import markov``); the package itself holds two helpers they share."""

from __future__ import annotations

import math

import jax
import numpy as np

__all__ = ["jsonable", "provenance", "sampled_vs_theory"]


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
    """How far a NUTS estimate of ``U`` lies from the theory's, shared by Fig. 2 and Fig. 3.

    ``relative_distance = |U_NUTS - U_theory|_F / |U_theory|_F``; its Monte Carlo ``noise`` is the
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
    """Where a file of shipped NUTS records comes from: the profile and its sizes (``config``, a dataclass), the
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
