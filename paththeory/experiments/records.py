"""Where an experiment's records come from and how they are kept: JSON-ready values and typed findings
(:func:`jsonable`, :func:`typed`), the samplers' schedules in a configuration (:func:`schedule`), the run's
environment and provenance written in one place (:func:`environment`, :func:`provenance`), and the shipped files
of posterior samples (:class:`ShippedRecords`)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
import types
import typing
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

import jax
import numpy as np

#: The package's folder of shipped posterior records (:class:`ShippedRecords`).
SHIPPED = Path(__file__).resolve().parent.parent / "results"

#: Per sampler, the fields of every experiment's configuration that hold its schedule, by the argument of
#: :func:`paththeory.sampling.posterior.sample_posterior` that each fills: the one table of them, which
#: :func:`schedule` reads and :func:`schedule_fields` lends to the experiments' tables of shipped records.
_SCHEDULE_FIELDS = {"nuts": {"num_warmup": "num_warmup", "num_samples": "num_samples", "num_chains": "num_chains"},
                    "gibbs": {"num_warmup": "gibbs_warmup", "num_samples": "gibbs_samples",
                              "num_chains": "gibbs_chains"}}


def jsonable(obj):
    """Arrays to lists, numpy scalars to floats, NaN to None, typed findings (dataclasses) to dictionaries:
    strict JSON."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
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


def typed(cls: type, data: Any, where: str = "findings") -> Any:
    """``data`` (JSON, as :func:`jsonable` wrote it) read back as the type ``cls``: a dataclass of findings with its
    fields' types (nested dataclasses, tuples, dictionaries and ``X | None``) rebuilt from their hints. A key that the
    type does not declare, or a field that the data lack, is a clear error naming both, so a renamed finding fails
    where the results are read, not where a sentence formats them.

    Example:
      >>> @dataclass(frozen=True)
      ... class Fit:
      ...     b: float
      ...     widths: tuple[int, ...]
      >>> typed(Fit, {"b": 1.0, "widths": [10, 30]})
      Fit(b=1.0, widths=(10, 30))
    """
    if data is None:
        return None
    origin, args = typing.get_origin(cls), typing.get_args(cls)
    if origin in (typing.Union, types.UnionType):
        real = [a for a in args if a is not type(None)]
        return typed(real[0], data, where) if len(real) == 1 else data
    if is_dataclass(cls):
        return _typed_dataclass(cls, data, where)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(typed(args[0], v, where) for v in data)
        return tuple(typed(a, v, where) for a, v in zip(args, data)) if args else tuple(data)
    if origin is list:
        return [typed(args[0], v, where) for v in data] if args else list(data)
    if origin is dict:
        return {k: typed(args[1], v, f"{where}.{k}") for k, v in data.items()} if args else dict(data)
    if cls is float and data is not None:
        return float(data)
    return data


def _typed_dataclass(cls: type, data: Any, where: str) -> Any:
    """:func:`typed` of a dataclass ``cls``: every key declared and every field without a default present."""
    if not isinstance(data, Mapping):
        raise TypeError(f"{where}: expected a dictionary for {cls.__name__}; got {type(data).__name__}.")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - names)
    missing = sorted(f.name for f in dataclasses.fields(cls) if f.init and f.name not in data
                     and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
    if unknown or missing:
        raise KeyError(f"{where}: {cls.__name__} does not match the stored results (unknown keys {unknown}, "
                       f"missing fields {missing}); rerun the experiment that wrote them.")
    return cls(**{k: typed(hints[k], v, f"{where}.{k}") for k, v in data.items()})


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


def environment() -> dict:
    """Where a run computes: the versions of paththeory, JAX and NumPyro, JAX's backend and first device, and the
    machine; the one record of it that every experiment's results and every shipped file carry."""
    import platform

    import numpyro

    import paththeory

    return {"paththeory": paththeory.__version__, "jax": jax.__version__, "numpyro": numpyro.__version__,
            "backend": jax.default_backend(), "device": str(jax.devices()[0]),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores, JAX on {jax.default_backend()}"}


def provenance(config, profile: str, seconds: float, command: str) -> dict:
    """Where a file of shipped records comes from: the profile and its sizes (``config``, a dataclass), the
    command, the date, the time taken, and the :func:`environment` (its ``machine`` and ``versions`` too)."""
    from datetime import datetime, timezone

    env = environment()
    return {"profile": profile, "config": asdict(config), "command": command,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "seconds": round(seconds, 1),
            "machine": env["machine"], "versions": {"jax": env["jax"], "numpyro": env["numpyro"]},
            "environment": env}


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
        of another profile with the same sizes serves too), or ``None``. A file of another command whose name
        begins with this one's (``nonlinear_between_*`` beside ``nonlinear_*``) is not this command's: its
        provenance's command says so."""
        wanted = self.sizes(config, sampler)
        for path in sorted(self.folder.glob(f"{self.command}_*.json")):
            payload = json.loads(path.read_text())
            prov = payload["provenance"]
            if "command" in prov and prov["command"].split()[3:4] != [self.command]:
                continue
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
