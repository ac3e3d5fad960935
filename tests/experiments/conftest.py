"""The ``clock`` marker of the experiment tests that use a module fixture running an experiment.

``clock`` (pyproject.toml) marks the tests that run package code reading the clock and check its outcome:
``.ci/busy`` runs only these on a busy machine. A test that runs such code itself carries
``@pytest.mark.clock`` in its file; here, every test that uses a module fixture of :data:`CLOCK_FIXTURES` gets
it: the fixture runs its experiment, whose samplers run under the experiment's time limit (a fail-safe that
raises), so the test's outcome passes through the clock.
"""

from __future__ import annotations

import pytest

#: ``{file: module fixture}``: the tests that use the fixture are marked ``clock``.
CLOCK_FIXTURES = {
    "test_experiment_markov.py": "outputs",  # markov.run: NUTS at N = 10, Gibbs at N = 30, under the time limit
    "test_experiment_omniglot.py": "outputs",  # omniglot.run: NUTS under sample_time_limit, the timed sweep
}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        fixture = CLOCK_FIXTURES.get(item.path.name)
        if fixture and fixture in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.clock)
