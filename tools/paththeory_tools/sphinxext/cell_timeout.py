"""Sphinx extension of the book: the per-cell execution timeout follows the active profile.

A hung cell must fail the build quickly and loudly, not after half an hour. The `smoke`
timeout leaves room for the slowest `smoke` cells, the NUTS cells of the Markov and Omniglot
chapters, whose sampling stops itself after at most 360 s and 480 s (`sampling`'s fail-safe)
and then still summarises the chains; `colab` and `paper` run larger experiments in one cell
and get more. The value replaces `execute.timeout` of `_config.yml`.
"""

from __future__ import annotations

from paththeory.profiles import choose

#: Seconds one cell may run, per profile (PATHTHEORY_PROFILE).
CELL_TIMEOUT_S = {"smoke": 900, "colab": 1800, "paper": 4 * 3600}


def _set_timeout(app, config) -> None:
    config.nb_execution_timeout = choose(CELL_TIMEOUT_S)


def setup(app) -> dict:
    app.connect("config-inited", _set_timeout)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
