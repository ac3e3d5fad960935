"""Run profiles: one switch for the sizes every chapter and experiment uses.

The environment variable ``PATHTHEORY_PROFILE`` picks one of

* ``smoke``: CPU continuous integration, tiny sizes, each chapter in a few minutes;
* ``colab``: one GPU (e.g. a Colab runtime), each chapter within 20 minutes;
* ``paper``: the sizes of the paper (hours on one GPU).

When it is unset, the profile is ``colab`` if JAX sees a GPU and ``smoke`` otherwise. Each
experiment module keeps its own per-profile sizes in a dict keyed by profile name and reads
the entry for the current profile with :func:`choose`. Every size of a profile is fixed, the
number of NUTS draws included, so no number depends on how busy the machine is. An experiment's
wall-clock limit is only a fail-safe against a stuck run, far above an honest run's time: a run
that reaches it fails with an error (:class:`paththeory.sampling.results.TimeLimitReached`) and gives no
number. ``PATHTHEORY_TIME_LIMIT_SCALE`` multiplies every such limit (``0`` removes them) for a
machine too slow for them (:func:`time_limit`).
"""

from __future__ import annotations

import os
from typing import Mapping, TypeVar

import jax

from paththeory._checks import check_positive

T = TypeVar("T")

ENV_VAR = "PATHTHEORY_PROFILE"
#: Multiplies every experiment's time limit, a fail-safe against stuck runs; 0 removes them.
TIME_LIMIT_SCALE_VAR = "PATHTHEORY_TIME_LIMIT_SCALE"
PROFILES: dict[str, str] = {
    "smoke": "CPU continuous integration; tiny sizes, a few minutes per chapter",
    "colab": "one GPU (e.g. Colab); reduced sizes, at most 20 minutes per chapter",
    "paper": "the sizes of the paper; hours on one GPU",
}


def _has_gpu() -> bool:
    """Whether JAX's default backend is a GPU."""
    return jax.default_backend() in ("gpu", "cuda", "rocm")


def _validate(name: str, source: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"a profile is a name, one of {', '.join(PROFILES)}; got {name!r} (from {source}).")
    key = name.strip().lower()
    if key not in PROFILES:
        raise ValueError(
            f"Unknown profile {name!r} (from {source}); valid profiles are {', '.join(PROFILES)}. "
            f"Set {ENV_VAR} to one of them or pass it explicitly."
        )
    return key


def current_profile(name: str | None = None) -> str:
    """The profile to run: ``name`` if given, else ``$PATHTHEORY_PROFILE``, else the default.

    The default is ``"colab"`` when JAX sees a GPU and ``"smoke"`` otherwise.
    Raises ``ValueError`` for a name that is not one of :data:`PROFILES`.

    Example:
      >>> current_profile("smoke")
      'smoke'
    """
    if name is not None:
        return _validate(name, "the argument")
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return _validate(env, f"${ENV_VAR}")
    return "colab" if _has_gpu() else "smoke"


def choose(settings: Mapping[str, T], profile: str | None = None) -> T:
    """Pick the entry of ``settings`` (a dict keyed by profile name) for the current profile.

    Raises ``ValueError`` when ``settings`` has a key that is not a profile (a typo) or lacks
    the current profile.

    Example:
      >>> choose({"smoke": 50, "colab": 400, "paper": 1000}, profile="smoke")
      50
    """
    unknown = [k for k in settings if k not in PROFILES]
    if unknown:
        raise ValueError(f"settings have keys {unknown} that are not profiles; use only {', '.join(PROFILES)}.")
    name = current_profile(profile)
    if name not in settings:
        raise ValueError(
            f"settings give no entry for profile {name!r} (they have {', '.join(settings) or 'none'}); "
            f"add one or pick another profile with {ENV_VAR}."
        )
    return settings[name]


def time_limit(seconds: float | None) -> float | None:
    """An experiment's fail-safe ``seconds`` times ``$PATHTHEORY_TIME_LIMIT_SCALE`` (default 1);
    ``None`` when the scale is 0 or ``seconds`` is ``None`` (no limit).

    Example:
      >>> time_limit(3600.0)  # with PATHTHEORY_TIME_LIMIT_SCALE unset
      3600.0
    """
    if seconds is not None:
        seconds = check_positive(seconds, "the time limit (seconds)")
    raw = os.environ.get(TIME_LIMIT_SCALE_VAR, "").strip() or "1"
    try:
        scale = float(raw)
    except ValueError:
        scale = float("nan")
    if not scale >= 0 or scale == float("inf"):
        raise ValueError(f"${TIME_LIMIT_SCALE_VAR} must be a number >= 0 (a factor on the experiments' time "
                         f"limits; 0 for none); got {raw!r}.")
    return None if seconds is None or scale == 0 else seconds * scale


#: What each profile means for a reader of a page computed with it (:func:`describe`).
FOR_READERS: dict[str, str] = {
    "smoke": "small sizes that compute each chapter in minutes on a CPU, so its numbers are "
             "noisier than the paper's (set PATHTHEORY_PROFILE=colab on a GPU for larger runs)",
    "colab": "reduced sizes that compute each chapter in at most 20 minutes on one GPU",
    "paper": "the sizes of the paper, which take hours on one GPU",
}


def describe(profile: str | None = None, *, device: bool = False) -> str:
    """One sentence for the top of a chapter: which sizes the page was computed with, and what
    that means for its numbers; with ``device=True`` a second one says what computed it (a CPU or
    a GPU, as JAX reports it).

    Example:
      >>> describe("paper")
      'This page was computed with the paper sizes: the sizes of the paper, which take hours on one GPU.'
    """
    name = current_profile(profile)
    text = f"This page was computed with the {name} sizes: {FOR_READERS[name]}."
    if device:
        import jax

        kind = jax.default_backend()
        where = {"cpu": "a CPU", "gpu": "a GPU", "tpu": "a TPU"}.get(kind, kind)
        model = jax.devices()[0].device_kind
        text += f" It ran on {where}{'' if kind == 'cpu' else f' ({model})'}."
    return text
