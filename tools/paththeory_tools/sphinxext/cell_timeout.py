"""Sphinx extension of the book: the per-cell execution timeout follows the active profile.

The timeout is a hang guard, not a budget: a hung cell must fail the build loudly, and an honest
cell must never reach it, however busy the machine. So it sits far above the slowest honest cell
of each profile (in `smoke`, the NUTS cells of the Markov and Omniglot chapters, a few minutes on
an unloaded 2-core CPU, whose own fail-safes are an hour per sampling run and raise, never return
fewer draws). The value replaces `execute.timeout` of `_config.yml`.
"""

from __future__ import annotations

from paththeory.profiles import choose

#: Seconds one cell may run, per profile (PATHTHEORY_PROFILE).
CELL_TIMEOUT_S = {"smoke": 3600, "colab": 4 * 3600, "paper": 24 * 3600}


def _set_timeout(app, config) -> None:
    config.nb_execution_timeout = choose(CELL_TIMEOUT_S)


def setup(app) -> dict:
    app.connect("config-inited", _set_timeout)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
