"""The ``clock`` marker of the experiment tests that no decorator in their file carries.

``clock`` (pyproject.toml) marks the tests that run package code reading the clock and check its outcome:
``.ci/busy`` runs only these on a busy machine. Here, two kinds get it:

* every test that uses a module fixture of :data:`CLOCK_FIXTURES`: the fixture runs its experiment, whose
  samplers run under the experiment's time limit (a fail-safe that raises), so the test's outcome passes
  through the clock;
* the tests named in :data:`CLOCK_TESTS`, of files whose tests carry no decorator for it (a parametrized test
  by its name, every case). A name that its file lacks stops the run, so a renamed test cannot silently leave
  the busy stage: rename it here too.
"""

from __future__ import annotations

import pytest

#: ``{file: module fixture}``: the tests that use the fixture are marked ``clock``.
CLOCK_FIXTURES = {
    "test_experiment_markov.py": "outputs",  # markov.run: NUTS at N = 10, Gibbs at N = 30, under the time limit
    "test_experiment_omniglot.py": "outputs",  # omniglot.run: NUTS under sample_time_limit, the timed sweep
}

#: ``{file: test names}`` marked ``clock``.
CLOCK_TESTS = {
    # the fail-safe of both samplers through an experiment, with the scale variable
    "test_experiment_markov.py": {"test_a_run_that_reaches_its_time_limit_fails_and_names_the_way_out"},
    # residual.run: both samplers under the time limit (experiments.sample), the timed theory curve
    "test_experiment_residual.py": {"test_a_tiny_run_writes_everything"},
    # validity: each sampler under the time limit, from the command line and as a fresh run
    "test_validity.py": {
        "test_a_short_nuts_run_from_the_command_line",
        "test_a_short_run_of_each_sampler_goes_through_the_command_line_and_the_comparison",
        "test_a_fresh_run_of_each_sampler_when_nothing_ships_for_its_sizes",
    },
}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    checked = set()
    for item in items:
        name = item.path.name
        if name not in CLOCK_TESTS and name not in CLOCK_FIXTURES:
            continue
        if name not in checked:
            checked.add(name)
            missing = sorted(t for t in CLOCK_TESTS.get(name, ()) if not hasattr(getattr(item, "module", None), t))
            if missing:
                raise pytest.UsageError(f"{__file__}: CLOCK_TESTS names {', '.join(missing)}, which {name} lacks: "
                                        "rename the test there too (the busy-machine stage runs these tests).")
        fixture = CLOCK_FIXTURES.get(name)
        if (getattr(item, "originalname", item.name) in CLOCK_TESTS.get(name, ())
                or (fixture and fixture in getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.clock)
