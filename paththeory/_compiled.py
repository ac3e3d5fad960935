"""Large programs compiled before they run, with the compiler's freed memory handed back to the system.

XLA's compiler returns its working memory to the C heap, not to the operating system, and a program's own
buffers are then allocated beside it: the process holds both. The order-parameter solve with C = 10 outputs at
the Omniglot size (P = 600, 16 paths) kept 1.9 GB of freed compiler memory next to its 3.4 GB of buffers (2-core
CPU, glibc). :class:`Precompiled` compiles a jitted function for each new argument signature first, returns the
heap's free pages to the system (glibc's ``malloc_trim``; nothing happens where the C library has none), and only
then runs it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
import time
from collections import OrderedDict
from typing import Callable

import jax


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` where the C library has no such function."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return getattr(libc, "malloc_trim", None)


def trim_heap() -> bool:
    """Return the C heap's free pages to the operating system; whether any were returned (``False`` without
    glibc)."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False


def signature(args: tuple) -> tuple:
    """The tree structure, each leaf's type (shape, dtype, weak type) and placement of ``args``, and the JAX
    settings a compilation depends on (64-bit mode, default device, matmul precision): the key under which a
    compiled program can run them."""
    leaves, tree = jax.tree.flatten(args)
    config = (jax.config.jax_enable_x64, str(jax.config.jax_default_device),
              str(jax.config.jax_default_matmul_precision))
    return tree, tuple((jax.typeof(leaf), getattr(leaf, "sharding", None)) for leaf in leaves), config


def program_size(executable) -> int:
    """The size of a compiled program: the characters of its optimised HLO (``executable.as_text()``), which grows
    with every loop and function the compiler inlines. Its machine code has no size to read on CPU (the compiler's
    ``generated_code_size_in_bytes`` is zero there) and not every program can be serialised."""
    return len(executable.as_text())


class Precompiled:
    """``function(*args, **static)``, jitted with ``static_argnames``, through an executable compiled for the
    signature of ``args`` and the static arguments, the heap trimmed after each compilation; the ``size`` most
    recently used executables are kept. With ``measure`` set, every compilation appends to ``compilations`` its wall
    seconds (``seconds``), split into tracing and lowering to StableHLO (``lowering_seconds``) and XLA's compilation
    (``xla_seconds``), and the executable, for the benchmark (:func:`program_size` gives its size)."""

    def __init__(self, function: Callable, static_argnames: tuple[str, ...] = (), size: int = 16):
        self.jitted = jax.jit(function, static_argnames=static_argnames)
        self.static_argnames = frozenset(static_argnames)
        self.size = size
        self.executables: OrderedDict = OrderedDict()
        self.lock = threading.Lock()
        self.measure = False
        self.compilations: list[dict] = []

    def __call__(self, *args, **static):
        """Run ``jitted(*args, **static)``: ``args`` positional (traced), ``static`` by keyword."""
        unknown = sorted(set(static) - self.static_argnames)
        if unknown:
            raise TypeError(f"{unknown} are not static arguments ({sorted(self.static_argnames)}): pass them "
                            "positionally.")
        key = (signature(args), tuple(sorted(static.items())))
        with self.lock:
            executable = self.executables.pop(key, None)
            if executable is None:
                start = time.perf_counter()
                lowered = self.jitted.lower(*args, **static)
                lowering = time.perf_counter() - start
                executable = lowered.compile()
                seconds = time.perf_counter() - start
                trim_heap()
                if self.measure:
                    self.compilations.append({"seconds": seconds, "lowering_seconds": lowering,
                                              "xla_seconds": seconds - lowering, "executable": executable})
            self.executables[key] = executable
            while len(self.executables) > self.size:
                self.executables.popitem(last=False)
        return executable(*args)
