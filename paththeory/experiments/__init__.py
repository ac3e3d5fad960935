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
from typing import Callable, Mapping, Protocol, Sequence

import jax
import numpy as np

from paththeory.sampling.diagnostics import SAMPLER_NAMES  # the samplers (``method``) and their names in text

__all__ = ["SAMPLER_NAMES", "ShippedRecords", "agreement_sentence", "jsonable", "provenance", "sampled_vs_theory",
           "record_batches", "relative_distance", "sampler_agreement", "samplers", "schedule", "schedule_fields"]

#: Per sampler, the fields of every experiment's configuration that hold its schedule, by the argument of
#: :func:`paththeory.sampling.posterior.sample_posterior` that each fills: the one table of them, which
#: :func:`schedule` reads and :func:`schedule_fields` lends to the experiments' tables of shipped records.
_SCHEDULE_FIELDS = {"nuts": {"num_warmup": "num_warmup", "num_samples": "num_samples", "num_chains": "num_chains"},
                    "gibbs": {"num_warmup": "gibbs_warmup", "num_samples": "gibbs_samples",
                              "num_chains": "gibbs_chains"}}


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


class SampledWidths(Protocol):
    """An experiment's configuration that samples: the widths each sampler draws."""

    sample_widths: Sequence[int]  # NUTS
    gibbs_widths: Sequence[int]  # the exact blocked Gibbs sampler


def schedule(config, sampler: str = "nuts") -> dict[str, int]:
    """``num_warmup``, ``num_samples`` and ``num_chains`` of ``sampler`` (``"nuts"`` or ``"gibbs"``) in an
    experiment's ``config`` (a dataclass or its JSON dictionary), as :func:`paththeory.sampling.posterior.sample_posterior`
    takes them.

    Example:
      >>> schedule({"num_warmup": 100, "num_samples": 300, "num_chains": 2, "gibbs_warmup": 200,
      ...           "gibbs_samples": 800, "gibbs_chains": 4}, "gibbs")
      {'num_warmup': 200, 'num_samples': 800, 'num_chains': 4}
    """
    fields = _fields(sampler)
    config = asdict(config) if is_dataclass(config) else config
    return {arg: config[name] for arg, name in fields.items()}


def schedule_fields(sampler: str) -> tuple[str, ...]:
    """The fields of an experiment's configuration that hold ``sampler``'s schedule (``"nuts"`` or ``"gibbs"``):
    its warm-up, kept draws and chains, in that order, as :func:`schedule` reads them.

    Example:
      >>> schedule_fields("nuts"), schedule_fields("gibbs")
      (('num_warmup', 'num_samples', 'num_chains'), ('gibbs_warmup', 'gibbs_samples', 'gibbs_chains'))
    """
    return tuple(_fields(sampler).values())


def _fields(sampler: str) -> dict[str, str]:
    """``sampler``'s row of :data:`_SCHEDULE_FIELDS`, or a clear error for a name that has none."""
    if not isinstance(sampler, str) or sampler not in _SCHEDULE_FIELDS:
        raise ValueError(f"sampler must be one of {sorted(_SCHEDULE_FIELDS)}; got {sampler!r}.")
    return _SCHEDULE_FIELDS[sampler]


def samplers(cfg: SampledWidths) -> dict[int, str]:
    """The widths that an experiment's ``cfg`` (a dataclass with ``sample_widths`` and ``gibbs_widths``) samples,
    smallest first, each with its sampler: ``"nuts"`` for ``sample_widths``, ``"gibbs"`` for ``gibbs_widths``.

    Example:
      >>> from paththeory.experiments import multiclass
      >>> samplers(multiclass.settings("colab"))
      {20: 'nuts', 30: 'gibbs', 60: 'gibbs', 120: 'gibbs', 300: 'gibbs'}
    """
    return dict(sorted([(int(w), "nuts") for w in cfg.sample_widths] + [(int(w), "gibbs") for w in cfg.gibbs_widths]))


def relative_distance(sampled, theory, se=None) -> tuple[float, float | None]:
    """``d = |sampled - theory|_F / |theory|_F`` and, from the entries' Monte Carlo errors ``se``, its noise floor
    ``s = |se|_F / |theory|_F`` (``None`` when ``se`` is): the distance that sampling noise alone gives
    (``E d^2 = d_true^2 + s^2``), and a bound on the standard deviation of ``d`` whatever the correlations between
    the entries (``g^T Sigma g <= Tr Sigma`` for a unit ``g``).

    Example:
      >>> d, s = relative_distance(1.1 * np.eye(3), np.eye(3), np.full((3, 3), 0.01))
      >>> round(d, 3), round(s, 3)
      (0.1, 0.017)
    """
    sampled, theory = np.asarray(sampled, dtype=float), np.asarray(theory, dtype=float)
    norm = float(np.linalg.norm(theory))
    noise = None if se is None else float(np.linalg.norm(np.asarray(se, dtype=float)) / norm)
    return float(np.linalg.norm(sampled - theory) / norm), noise


def sampled_vs_theory(theory, sampled, sampled_se, gp_scale: float, seed: int = 0) -> dict:
    """How far a sampled estimate of ``U`` (NUTS or Gibbs) lies from the theory's, shared by Fig. 2, Fig. 3
    and the validity figure.

    ``relative_distance = |U_sampled - U_theory|_F / |U_theory|_F``; its Monte Carlo ``noise`` is the
    Frobenius norm of the per-entry batch-means errors ``sampled_se`` on the same scale (``None``
    when ``sampled_se`` is; both by :func:`relative_distance`); ``gp_relative_distance`` is the distance
    of the sample from the GP point ``gp_scale I`` (for scale); ``mantel`` a Mantel test of the two
    patterns (``None`` below three paths, too few to permute).

    Example:
      >>> d = sampled_vs_theory(np.eye(3), 1.1 * np.eye(3), np.full((3, 3), 0.01), 1.0)
      >>> round(d["relative_distance"], 3), round(d["noise"], 3), round(d["gp_relative_distance"], 3)
      (0.1, 0.017, 0.1)
    """
    from paththeory.experiments import stats

    th, sampled = np.asarray(theory, dtype=float), np.asarray(sampled, dtype=float)
    distance, noise = relative_distance(sampled, th, sampled_se)
    return {"relative_distance": distance, "noise": noise,
            "gp_relative_distance": float(np.linalg.norm(sampled - gp_scale * np.eye(len(th))) / np.linalg.norm(th)),
            "mantel": stats.mantel_test(th, sampled, seed=seed) if len(th) >= 3 else None}


def record_batches(record: dict) -> int | None:
    """How many batch means a record's ``U_se`` averages over (:func:`paththeory.experiments.stats.batch_count`, 10
    batches per chain as :func:`~paththeory.experiments.stats.batch_means_se` takes by default), from its diagnostics:
    one ``e_bfmi`` per chain and ``draws_used`` over all of them; ``None`` when the diagnostics do not say."""
    from paththeory.experiments import stats

    diag = record.get("diagnostics", {})
    chains, draws = len(diag.get("e_bfmi") or ()), diag.get("draws_used")
    if not chains or not draws or draws // chains < 4:
        return None
    return stats.batch_count(chains, draws // chains)


def sampler_agreement(first: Sequence[dict], second: Sequence[dict], key: Sequence[str], r_hat_ok: float,
                      level: float = 0.05) -> list[dict]:
    """Two samplers' records of the same posteriors against each other, at every point (the record fields
    ``key``) both sampled. Records without ``U_se`` (incomplete runs) are left out. Per point:

    * ``distance``: ``|U_1 - U_2|_F / |U_2|_F``, with ``noise`` the combined Monte Carlo error on the same scale
      (``|(se_1^2 + se_2^2)^{1/2}|_F / |U_2|_F``: the distance two agreeing samplers show, ``E d^2 = s^2``) and
      ``resolved`` (``d > 2 s``, :func:`paththeory.experiments.stats.resolved`);
    * the entry-wise test of :func:`paththeory.experiments.stats.agreement_test` over the ``k`` upper-triangle
      entries of ``U`` with ``z = (U_1 - U_2) / (se_1^2 + se_2^2)^{1/2}``, at family-wise false-alarm rate ``level``
      (Sidak): ``max_z`` at ``entry`` ``(i, j)``, the ``threshold`` it is held to, ``p_family`` and ``k``. The errors
      are batch-means estimates, so each ``z`` is a Student's t with Welch-Satterthwaite degrees of freedom ``dof``
      (of the worst entry) from the two records' numbers of batch means (:func:`record_batches`; a normal ``z``,
      ``dof`` ``None``, where the diagnostics do not say). Entries with no error on either side and no difference
      are left out of ``k``;
    * ``agree``: the entry-wise test passes and the distance is not resolved;
    * ``mixed``: both runs' R-hat of ``U`` at most ``r_hat_ok``; ``ess_per_second``: each run's effective draws of
      ``U`` per second.

    Example:
      >>> a = {"task": "x", "width": 10, "U": [[1.0, 0.0], [0.0, 1.0]], "U_se": [[0.1, 0.1], [0.1, 0.1]],
      ...      "diagnostics": {"r_hat_U_max": 1.0, "ess_per_second": 5.0}}
      >>> b = {**a, "U": [[1.1, 0.0], [0.0, 1.6]], "diagnostics": {"r_hat_U_max": 1.2, "ess_per_second": 50.0}}
      >>> row = sampler_agreement([a], [b], ("task", "width"), 1.01)[0]
      >>> round(row["distance"], 3), round(row["noise"], 3), row["entry"], round(row["max_z"], 2), row["k"]
      (0.313, 0.146, (1, 1), 4.24, 3)
      >>> round(row["threshold"], 2), round(row["p_family"], 4), row["agree"], row["mixed"]
      (2.39, 0.0001, False, False)
    """
    from paththeory.experiments import stats

    others = {tuple(r[k] for k in key): r for r in second if r.get("U_se") is not None}
    rows = []
    for a in first:
        b = others.get(tuple(a[k] for k in key))
        if b is None or a.get("U_se") is None:
            continue
        ua, ub = np.asarray(a["U"], float), np.asarray(b["U"], float)
        sa, sb = np.asarray(a["U_se"], float), np.asarray(b["U_se"], float)
        se = np.hypot(sa, sb)
        iu = np.triu_indices(len(ub))
        diff, err = (ua - ub)[iu], se[iu]
        keep = (err > 0) | (diff != 0)  # 0 / 0: an entry both samplers hold fixed
        with np.errstate(divide="ignore"):
            z = diff[keep] / err[keep]
        na, nb = record_batches(a), record_batches(b)
        dof = None
        if na is not None and nb is not None:  # Welch-Satterthwaite, per entry
            va, vb = sa[iu][keep] ** 2, sb[iu][keep] ** 2
            with np.errstate(divide="ignore", invalid="ignore"):
                dof = np.where(va + vb > 0, (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1)), np.inf)
        test = stats.agreement_test(z, level, dof)
        norm = float(np.linalg.norm(ub))
        distance, noise = float(np.linalg.norm(ua - ub)) / norm, float(np.linalg.norm(se)) / norm
        da, db = a["diagnostics"], b["diagnostics"]
        resolved = stats.resolved(distance, noise)
        rows.append({**{k: a[k] for k in key}, "distance": distance, "noise": noise, "resolved": resolved,
                     "max_z": test["max_z"], "entry": tuple(int(i[keep][test["index"]]) for i in iu), "k": test["k"],
                     "threshold": test["threshold"], "p_family": test["p_family"],
                     "dof": None if dof is None else float(dof[test["index"]]), "level": level,
                     "agree": test["agree"] and not resolved,
                     "mixed": da["r_hat_U_max"] <= r_hat_ok and db["r_hat_U_max"] <= r_hat_ok,
                     "ess_per_second": (da["ess_per_second"], db["ess_per_second"])})
    return rows


def agreement_sentence(rows: Sequence[dict], names: tuple[str, str], label: Callable[[dict], str]) -> str:
    """:func:`sampler_agreement` in words: per point (named by ``label(row)``) whether the two samplers (``names``)
    agree: their distance not resolved (within twice the combined Monte Carlo error) and the largest entry-wise
    ``|z|`` within the Sidak threshold, a 5 % family-wise false-alarm rate over the ``k`` entries; where they differ,
    the entry ``U[i, j]`` that differs most, with its family-wise p-value; points whose chains did not both mix are
    named apart."""
    if not rows:
        return f"No point was sampled by both {names[0]} and {names[1]}."
    mixed = [r for r in rows if r["mixed"]]
    agree = [r for r in mixed if r["agree"]]
    differ = [r for r in mixed if not r["agree"]]

    def point(r):
        return (f"{label(r)} (distance {r['distance']:.3f} against {r['noise']:.3f}; max |z| {r['max_z']:.1f} at "
                f"U[{r['entry'][0]}, {r['entry'][1]}] against {r['threshold']:.1f} for {r['k']} entries, "
                f"family-wise p = {r['p_family']:.2g})")

    level = rows[0]["level"]
    text = (f"{names[0]} and {names[1]} agree within their Monte Carlo errors (distance within two errors, every "
            f"entry within the threshold of a {100 * level:g} % family-wise false-alarm rate) at {len(agree)} of the "
            f"{len(mixed)} shared points whose chains mixed"
            + (f": {', '.join(point(r) for r in agree)}" if agree else ""))
    if differ:
        text += f"; they differ at {', '.join(point(r) for r in differ)}"
    unmixed = [r for r in rows if not r["mixed"]]
    if unmixed:
        text += f"; not compared, a chain not mixed: {', '.join(label(r) for r in unmixed)}"
    return text + "."


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

    def file_name(self, profile: str, sampler: str, variant: str = "") -> str:
        """The shipped file of ``sampler``'s records at ``profile``'s sizes (``variant``: another set of points
        of the same experiment, e.g. ``"scan"``, written by the command's ``--scan``)."""
        parts = [self.command] + ([] if self.check(sampler) == "nuts" else [sampler]) + ([variant] if variant else [])
        return "_".join(parts + [profile]) + ".json"

    def provenance(self, config, profile: str, seconds: float, sampler: str, variant: str = "") -> dict:
        """:func:`provenance` of ``sampler``'s records, with the sampler and the command that writes them."""
        flag = ("" if self.check(sampler) == "nuts" else f" --sampler {sampler}") + (f" --{variant}" if variant else "")
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

    def sample(self, config, profile: str, sampler: str, sample_points: Callable[..., list], variant: str = "") -> dict:
        """A fresh ``{"sampler", "provenance", "records"}``: ``sample_points(config, sampler)``, timed."""
        self.check(sampler)
        start = time.perf_counter()
        records = sample_points(config, sampler)
        prov = self.provenance(config, profile, time.perf_counter() - start, sampler, variant)
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
              out: str | os.PathLike | None = None, variant: str = "") -> Path:
        """:meth:`sample` written to ``out`` (default: the shipped file, :meth:`file_name` in ``folder``); atomic:
        an interrupted run leaves the previous file intact."""
        from paththeory import _io

        payload = self.sample(config, profile, sampler, sample_points, variant)
        path = Path(out) if out is not None else self.folder / self.file_name(profile, sampler, variant)
        _io.write_json(path, {"provenance": payload["provenance"], "records": payload["records"]}, self.what)
        return path
