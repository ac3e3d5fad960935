"""``jupyter-book build`` with Sphinx's parallel processes: ``python tools/paththeory_tools/build.py ARGS...``.

Takes the arguments of ``jupyter-book build`` (``make book`` passes ``. -W --keep-going --all``).
Jupyter Book 1.x builds with one Sphinx process and has no option for more; this runs its own
command with ``jobs`` set to ``$BOOK_JOBS`` (default 2), so that Sphinx reads, and myst-nb executes,
that many chapters at once (the extension ``parallel_read.py`` makes the read parallel). The
chapters are independent notebooks, each executed in its own kernel, so the pages are the same.
``BOOK_JOBS=1`` builds exactly as ``jupyter-book build`` does.

Sphinx would cut the sorted page list into ``BOOK_JOBS`` fixed batches, so that one process could be
left with the long chapters while the other idles. Here every page is its own batch, handed to the
next free process, longest chapter first (:data:`EXECUTION_ORDER`): the short ones fill in around
the long ones.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys

import jupyter_book.sphinx
import sphinx.builders
from jupyter_book.cli.main import main

#: Chapters in the order they start executing: longest first (their execution times in the smoke
#: profile, printed by .ci/run, decide), so the short ones fill in at the end. ``book/omniglot``
#: starts before ``book/pruning``, which then finds the theory sweep omniglot left in the cache.
#: A page not listed starts after these, in Sphinx's order.
EXECUTION_ORDER = ("book/omniglot", "book/beyond", "book/pruning", "book/markov", "book/many_outputs",
                   "book/gp_vs_finite", "book/model", "book/depth", "book/order_parameter", "book/intro",
                   "book/solver", "book/derivation")


def one_page_per_batch(docnames: list[str], nproc: int, maxbatch: int = 10) -> list[list[str]]:
    """Sphinx's ``make_chunks`` replaced: one page per batch, in :data:`EXECUTION_ORDER`."""
    rank = {name: i for i, name in enumerate(EXECUTION_ORDER)}
    return [[name] for name in sorted(docnames, key=lambda name: rank.get(name, len(rank)))]


def jobs_from_environment() -> int:
    """``$BOOK_JOBS`` as a positive integer (default 2)."""
    value = os.environ.get("BOOK_JOBS", "2").strip()
    if not value.isdigit() or int(value) < 1:
        sys.exit(f"tools/paththeory_tools/build.py: BOOK_JOBS must be a positive integer; got {value!r}")
    return int(value)


#: The environment of every chapter's kernel (inherited from this process): XLA's C++ log silenced below FATAL, so that
#: its "Very slow compile?" alarm, printed only on a busy machine, never reaches a page (where ``stderr_output: warn``
#: of ``_config.yml`` would fail the strict build on it: whether the build passes must not depend on the load).
KERNEL_ENVIRONMENT = {"TF_CPP_MIN_LOG_LEVEL": "3"}


if __name__ == "__main__":
    for name, value in KERNEL_ENVIRONMENT.items():  # before any kernel starts, and before JAX loads here
        os.environ.setdefault(name, value)
    jobs = jobs_from_environment()
    if "jobs" not in inspect.signature(jupyter_book.sphinx.build_sphinx).parameters:
        sys.exit("tools/paththeory_tools/build.py: this Jupyter Book's build_sphinx takes no 'jobs'; "
                 "run `jupyter-book build` directly (BOOK_JOBS needs Jupyter Book 1.x)")
    # jupyter-book's `build` command imports build_sphinx from this module when it runs.
    jupyter_book.sphinx.build_sphinx = functools.partial(jupyter_book.sphinx.build_sphinx, jobs=jobs)
    sphinx.builders.make_chunks = one_page_per_batch  # the readers' and writers' batches
    sys.exit(main(["build", *sys.argv[1:]]))
