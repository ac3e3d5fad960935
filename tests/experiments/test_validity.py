"""The validity figure (paththeory.experiments.validity): theory against NUTS and Gibbs over |Pi|/N.

The comparison is checked against records whose answer is known (the theory's own U and
predictions give distance 0 and no accuracy difference; the GP point gives its own distance),
the verdicts (debiased or bounded distances, the two tasks' order) are numbers from hand-built rows (their words:
tests/reports/test_validity.py), records of other data are refused, short real runs of
both samplers go through the command line, the JSON file and the comparison, a shipped file
serves only its own sampler, and the shipped Gibbs records reach the theory at N = 1000.
"""

import dataclasses
import json
import math

import numpy as np
import pytest

from paththeory.cli import main
from paththeory.experiments import ShippedRecords, schedule, stats, validity
from paththeory.experiments.claims import U_TOLERANCE
from paththeory.predict import mean_predictor
from paththeory.solve import Theory

TINY = validity.Config(markov_widths=(8,), omniglot_widths=(), num_warmup=20, num_samples=20, num_chains=1,
                       time_limit=3600.0, markov_train=20, markov_test=40, gibbs_markov_widths=(8, 40),
                       gibbs_warmup=10, gibbs_samples=20, gibbs_chains=2)


def _record(cfg, width, U, se, correct, complete=True):
    prob = validity.problem("markov", cfg)
    return {"task": "markov", "width": width, "paths": 4, "ratio": 4 / width, "temperature": prob.temperature,
            "n_train": len(prob.y_train), "n_test": len(prob.y_test), "digest": prob.digest, "complete": complete,
            "U": None if U is None else np.asarray(U).tolist(), "U_se": None if se is None else np.asarray(se).tolist(),
            "correct": None if correct is None else np.asarray(correct, dtype=int).tolist(),
            "diagnostics": {"r_hat_U_max": 1.01, "ess_bulk_U_min": 150.0}}


@pytest.fixture(scope="module")
def theory_at_8():
    prob = validity.problem("markov", TINY)
    U = np.asarray(Theory(prob.arch, prob.train, prob.y_train).solve(8, prob.temperature).U)
    right = np.asarray(mean_predictor(U, prob.train, prob.y_train, prob.test, prob.temperature)) * prob.y_test > 0
    return prob, U, right


def test_the_theory_against_itself_is_at_distance_zero(theory_at_8):
    prob, U, right = theory_at_8
    se = np.full(U.shape, 0.01)
    (row,) = validity.compare([_record(TINY, 8, U, se, right)], TINY)
    assert row.distance == pytest.approx(0, abs=1e-6)  # the solver's tolerance, not sampling
    assert row.noise == pytest.approx(np.linalg.norm(se) / np.linalg.norm(U), rel=1e-12)
    assert row.accuracy == 0 and row.accuracy_se == 0 and not row.accuracy_beyond
    gp = prob.arch.gp_scale * np.eye(4)
    assert row.gp_distance == pytest.approx(np.linalg.norm(U - gp) / np.linalg.norm(U), rel=1e-6)
    assert row.ratio == 0.5 and row.theory_accuracy == pytest.approx(right.mean())
    assert not row.resolved and row.upper_limit == pytest.approx(row.distance + 2 * row.noise)
    assert row.mixed  # R-hat 1.01


def test_a_gp_sample_is_as_far_as_the_gp_point_and_incomplete_runs_are_left_out(theory_at_8):
    prob, U, right = theory_at_8
    gp = prob.arch.gp_scale * np.eye(4)
    flipped = right.copy()
    flipped[:10] = ~flipped[:10]
    rows = validity.compare([_record(TINY, 8, gp, np.full((4, 4), 1e-3), flipped),
                             _record(TINY, 8, None, None, None, complete=False)], TINY)
    assert len(rows) == 1
    (row,) = rows
    assert row.distance == pytest.approx(np.linalg.norm(gp - U) / np.linalg.norm(U), rel=1e-6)
    assert row.gp_distance == pytest.approx(0, abs=1e-12) and row.gp_fraction is None
    assert row.n_test == len(right)
    expected = (flipped.astype(float) - right).mean()
    assert row.accuracy == pytest.approx(expected)
    assert row.resolved and row.value == pytest.approx(stats.debiased_distance(row.distance, row.noise)["value"])


def test_the_problem_is_built_once_per_data():
    """compare() and prefactor's scan share the data: a config that differs in widths and schedules only gets the
    same (read-only) arrays."""
    other = dataclasses.replace(TINY, gibbs_markov_widths=(100,), gibbs_samples=99)
    assert validity.problem("markov", other) is validity.problem("markov", TINY)
    other_data = dataclasses.replace(TINY, markov_train=22)
    assert validity.problem("markov", other_data) is not validity.problem("markov", TINY)
    assert not validity.problem("markov", TINY).train.flags.writeable


def test_records_of_other_data_are_refused(theory_at_8):
    _, U, right = theory_at_8
    rec = _record(TINY, 8, U, np.full(U.shape, 0.01), right)
    rec["digest"] = "0" * 16
    with pytest.raises(ValueError, match="sampled on other data.*paththeory validity"):
        validity.compare([rec], TINY)


def _row(task, width, distance, noise, gp, diff, se, sampler="nuts", batch_means=None, r_hat=1.01):
    return validity.row(sampler, task, width, 4 if task == "markov" else 16, distance, noise, batch_means, gp,
                        {"difference": diff, "se": se, "n": 500}, 0.9, 0.9 + diff, r_hat, 100.0)


def test_a_row_debiases_its_distance_and_judges_its_accuracy():
    """Oracle: stats.debiased_distance. A resolved distance (d > 2 s) is debiased with its error, an unresolved one
    is an upper limit d + 2 s; the floor's own error (batch means) widens the debiased error; an unknown floor
    resolves nothing and bounds nothing."""
    low, high = _row("markov", 10, 0.05, 0.04, 0.5, 0.002, 0.004), _row("omniglot", 10, 0.3, 0.05, 0.6, 0.0, 0.01)
    assert not low.resolved and low.upper_limit == pytest.approx(0.13) and low.value is None
    assert low.gp_fraction == pytest.approx(0.1) and low.ratio == 0.4 and not low.accuracy_beyond
    assert high.resolved and (high.value, high.se) == pytest.approx(
        (math.sqrt(0.3**2 - 0.05**2), 0.05 * 0.3 / math.sqrt(0.3**2 - 0.05**2)), rel=1e-12)
    assert high.ratio == 1.6 and high.upper_limit is None
    assert _row("omniglot", 10, 0.3, 0.05, 0.6, 0.0, 0.01, batch_means=20).se > high.se
    unknown = _row("markov", 10, 0.3, None, 0.6, 0.0, 0.01)
    assert (unknown.resolved, unknown.value, unknown.upper_limit) == (False, None, None)
    assert _row("markov", 10, 0.3, 0.05, 0.6, -0.05, 0.01).accuracy_beyond
    assert not _row("markov", 10, 0.3, 0.05, 0.6, -0.05, 0.01, r_hat=1.08).mixed
    assert not _row("markov", 10, 0.3, 0.05, 0.6, 0.0, 0.01, r_hat=None).mixed


def test_the_findings_group_by_task_and_sampler():
    rows = [_row("markov", 1000, 0.005, 0.002, 0.05, 0.0, 0.002, sampler="gibbs"), _row("omniglot", 10, 0.3, 0.05,
            0.6, 0.0, 0.01), _row("markov", 30, 0.03, 0.01, 0.3, 0.0, 0.002), _row("markov", 10, 0.05, 0.04, 0.5, 0, 1)]
    found = validity.findings(rows)
    assert [(g.task, g.sampler, tuple(r.width for r in g.rows)) for g in found.groups] == [
        ("markov", "nuts", (30, 10)), ("markov", "gibbs", (1000,)), ("omniglot", "nuts", (10,))]
    assert found.same_ratio == ()
    assert validity.findings([]).groups == ()


def test_the_two_tasks_are_ordered_at_equal_paths_per_width():
    """Oracle: rows built by hand. At |Pi|/N = 0.4 (Markov N = 10, Omniglot N = 40) the 16-path point is below,
    above or within two combined errors of the 4-path one (debiased values); an unresolved point is below only
    when its upper limit lies two errors under the other's value, two unresolved points are not ordered."""
    markov = _row("markov", 10, 0.10, 0.01, 1.0, 0.0, 0.01)
    m = stats.debiased_distance(0.10, 0.01)
    below = _row("omniglot", 40, 0.02, 0.01, 0.8, 0.0, 0.01, sampler="gibbs")  # unresolved: below 0.040
    assert m["value"] - 2 * m["se"] > 0.04
    (pair,) = validity.findings([markov, below]).same_ratio
    assert pair.ratio == 0.4 and pair.markov == markov and pair.omniglot == below and pair.order == "below"
    assert validity.order(markov, _row("omniglot", 40, 0.2, 0.01, 0.8, 0.0, 0.01)) == "above"
    assert validity.order(markov, _row("omniglot", 40, 0.12, 0.01, 0.8, 0.0, 0.01)) == "within"
    unresolved = _row("markov", 10, 0.015, 0.01, 1.0, 0.0, 0.01)  # below 0.035: no order against 0.03 ± 0.01
    assert validity.order(unresolved, _row("omniglot", 40, 0.0316, 0.01, 0.8, 0.0, 0.01)) == "unordered"
    assert validity.order(unresolved, _row("omniglot", 40, 0.01, 0.01, 0.8, 0.0, 0.01)) == "unordered"
    assert validity.order(markov, _row("omniglot", 40, 0.2, None, 0.8, 0.0, 0.01)) == "unordered"
    assert validity.findings([markov]).same_ratio == ()


def test_the_figure_has_both_panels_and_one_marker_per_task_and_sampler():
    import matplotlib.pyplot as plt

    fig = validity.plot([_row("markov", 10, 0.05, 0.04, 0.5, 0.002, 0.004),  # unresolved: a limit at 0.13
                         _row("markov", 30, 0.03, 0.01, 0.3, 0.0, 0.002),  # resolved
                         _row("markov", 1000, 0.004, 0.002, 0.05, 0.0, 0.002, sampler="gibbs")], "smoke")
    left, right = fig.axes[:2]
    assert left.get_xscale() == "log" and left.get_yscale() == "log" and "distance" in left.get_ylabel()
    assert "points" in right.get_ylabel()
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "Markov, NUTS" in labels and "Markov, Gibbs" in labels and "Omniglot, NUTS" not in labels  # drawn only
    assert {"distance to the theory", "distance to the GP point", "accuracy, sampled − theory"} <= set(labels)
    markers = {line.get_label(): line.get_marker() for line in left.get_lines() if not line.get_label().startswith("_")}
    assert markers["Markov, NUTS"] != markers["Markov, Gibbs"]
    assert len(set(validity.MARKERS.values())) == len(validity.MARKERS)
    limits = sorted(float(y) for line in left.get_lines() if line.get_marker() == "v" for y in line.get_ydata())
    assert limits == pytest.approx([0.008, 0.13])  # d + 2 s of the two unresolved points
    plt.close(fig)


@pytest.mark.clock  # the sampler under the time limit, from the command line
def test_a_short_nuts_run_from_the_command_line(tmp_path, monkeypatch):
    monkeypatch.setitem(validity.SETTINGS, "smoke", TINY)
    out = tmp_path / "validity.json"
    assert main(["validity", "--profile", "smoke", "--out", str(out), "--quiet"]) == 0
    payload = json.loads(out.read_text())
    assert payload["provenance"]["config"] == json.loads(json.dumps(dataclasses.asdict(TINY)))
    (rec,) = payload["records"]
    assert rec["complete"] and rec["width"] == 8 and len(rec["correct"]) == 40
    (row,) = validity.compare(payload["records"], TINY)
    assert 0 <= row.distance < row.gp_distance + 1  # a finite, sane number from 20 draws
    assert payload["provenance"]["command"] == "python -m paththeory validity --profile smoke"


@pytest.mark.clock  # each sampler under the time limit, from the command line
@pytest.mark.parametrize("sampler", ["nuts", "gibbs"])
def test_a_short_run_of_each_sampler_goes_through_the_command_line_and_the_comparison(sampler, tmp_path,
                                                                                       monkeypatch, capsys):
    monkeypatch.setitem(validity.SETTINGS, "smoke", TINY)
    out = tmp_path / f"{sampler}.json"
    assert main(["validity", "--profile", "smoke", "--sampler", sampler, "--out", str(out), "--quiet"]) == 0
    assert f"the {validity.SAMPLER_NAMES[sampler]} records of the validity figure" in capsys.readouterr().out
    payload = json.loads(out.read_text())
    assert payload["provenance"]["sampler"] == sampler
    widths = TINY.markov_widths if sampler == "nuts" else TINY.gibbs_markov_widths
    assert [(r["sampler"], r["width"]) for r in payload["records"]] == [(sampler, w) for w in widths]
    for rec in payload["records"]:
        draws = TINY.num_chains * TINY.num_samples if sampler == "nuts" else TINY.gibbs_chains * TINY.gibbs_samples
        assert rec["complete"] and rec["diagnostics"]["draws_used"] == rec["diagnostics"]["draws_planned"] == draws
    rows = validity.compare(payload, TINY)
    assert [r.sampler for r in rows] == [sampler] * len(widths)
    assert all(0 <= r.distance < r.gp_distance + 1 for r in rows)  # finite, sane numbers from a few draws
    flag = "" if sampler == "nuts" else " --sampler gibbs"
    assert payload["provenance"]["command"] == f"python -m paththeory validity --profile smoke{flag}"
    assert validity.sampled_widths(payload["provenance"]["config"], sampler) == {"markov": widths, "omniglot": ()}


@pytest.mark.clock  # each sampler under the time limit, as a fresh run
def test_a_fresh_run_of_each_sampler_when_nothing_ships_for_its_sizes():
    nuts, gibbs = (validity.samples("smoke", sampler=s, config=TINY) for s in ("nuts", "gibbs"))
    assert nuts["provenance"]["command"] == gibbs["provenance"]["command"] == "sampled in this run"
    assert (nuts["sampler"], gibbs["sampler"]) == ("nuts", "gibbs")
    rows = validity.compare(nuts, TINY) + validity.compare(gibbs, TINY)
    assert sorted((r.sampler, r.width) for r in rows) == [("gibbs", 8), ("gibbs", 40), ("nuts", 8)]


def test_samples_of_other_sizes_are_not_used(monkeypatch):
    shipped = validity.shipped_samples("smoke")
    assert shipped is not None, "the smoke records ship with the package (python -m paththeory validity)"
    assert validity.shipped_samples("colab") == shipped  # the same sizes: the CPU run serves Colab too
    assert validity.shipped_samples("paper") is None
    monkeypatch.setitem(validity.SETTINGS, "smoke", dataclasses.replace(validity.SETTINGS["smoke"], num_samples=7))
    assert validity.shipped_samples("smoke") is None


def test_a_shipped_file_serves_its_own_sampler_only(tmp_path):
    """The NUTS file's sizes never match a Gibbs request and the other way round, even where the sizes agree; a
    change of the other sampler's widths leaves a file valid, and a time limit is not a size."""
    cfg = dataclasses.replace(TINY, gibbs_markov_widths=TINY.markov_widths, gibbs_warmup=TINY.num_warmup,
                              gibbs_samples=TINY.num_samples, gibbs_chains=TINY.num_chains)
    records = ShippedRecords("validity", tmp_path, validity.SAMPLERS, validity.RECORDS.data)
    for sampler in ("nuts", "gibbs"):
        payload = {"provenance": records.provenance(cfg, "smoke", 1.0, sampler), "records": [sampler]}
        (tmp_path / records.file_name("smoke", sampler)).write_text(json.dumps(payload))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["validity_gibbs_smoke.json", "validity_smoke.json"]
    for sampler in ("nuts", "gibbs"):
        found = records.shipped(cfg, sampler)
        assert found["sampler"] == found["provenance"]["sampler"] == sampler and found["records"] == [sampler]
    (tmp_path / "validity_smoke.json").unlink()
    assert records.shipped(cfg, "nuts") is None and records.shipped(cfg, "gibbs")["records"] == ["gibbs"]
    other = dataclasses.replace(cfg, markov_widths=(9,), time_limit=1.0)  # NUTS's widths and the time limit only
    assert records.shipped(other, "gibbs")["records"] == ["gibbs"]
    assert records.shipped(dataclasses.replace(cfg, gibbs_chains=3), "gibbs") is None
    assert records.shipped(dataclasses.replace(cfg, markov_train=21), "gibbs") is None  # other data


def test_the_shipped_nuts_file_does_not_serve_gibbs():
    nuts = validity.shipped_samples("smoke")
    assert nuts["provenance"]["sampler"] == "nuts" and "gibbs_markov_widths" not in nuts["provenance"]["config"]
    gibbs_sized_as_nuts = dataclasses.replace(validity.settings("smoke"), gibbs_markov_widths=(10, 30, 100),
                                              gibbs_omniglot_widths=(10, 20), gibbs_warmup=200, gibbs_samples=300)
    assert validity.shipped_samples(sampler="gibbs", config=gibbs_sized_as_nuts) is None


def test_each_sampler_reads_its_own_schedule_from_a_config_or_its_json():
    cfg = validity.settings("paper")
    assert schedule(cfg, "nuts") == {"num_warmup": 300, "num_samples": 300, "num_chains": 4}
    assert schedule(cfg, "gibbs") == schedule(dataclasses.asdict(cfg), "gibbs") == {
        "num_warmup": 500, "num_samples": 2000, "num_chains": 4}


@pytest.mark.parametrize("call", [lambda: validity.samples("smoke", sampler="hmc"),
                                  lambda: validity.sample_points(TINY, "NUTS"),
                                  lambda: validity.shipped_samples("smoke", "metropolis"),
                                  lambda: validity.write_samples("smoke", "x.json", sampler="hmc")])
def test_a_bad_sampler_name_is_refused_before_any_work(call, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"sampler must be one of \('nuts', 'gibbs'\); got '"):
        call()
    assert list(tmp_path.iterdir()) == []


def test_the_shipped_smoke_records_match_this_version():
    """Every shipped point is complete and was sampled on the data this version builds."""
    payload = validity.shipped_samples("smoke")
    cfg = validity.settings("smoke")
    records = payload["records"]
    assert [(r["task"], r["width"]) for r in records] == (
        [("markov", w) for w in cfg.markov_widths] + [("omniglot", w) for w in cfg.omniglot_widths])
    for rec in records:
        assert rec["complete"], rec["diagnostics"]
        assert rec["digest"] == validity.problem(rec["task"], cfg).digest
        assert len(rec["correct"]) == rec["n_test"]


def test_the_shipped_gibbs_records_match_this_version_and_reach_the_theory_at_the_largest_width():
    """The Gibbs file ships for the smoke sizes (python -m paththeory validity --profile smoke --sampler gibbs):
    every point complete and sampled on this version's data; at the largest Markov width the theory's U lies
    within the claims' tolerance of Gibbs's, beyond two Monte Carlo errors, with the chains mixed."""
    payload = validity.shipped_samples("smoke", "gibbs")
    assert payload is not None, "validity_gibbs_smoke.json ships (python -m paththeory validity --sampler gibbs)"
    assert payload["provenance"]["sampler"] == "gibbs"
    assert "--sampler gibbs" in payload["provenance"]["command"]
    assert validity.shipped_samples("colab", "gibbs") == payload
    cfg = validity.settings("smoke")
    records = payload["records"]
    assert [(r["sampler"], r["task"], r["width"]) for r in records] == (
        [("gibbs", "markov", w) for w in cfg.gibbs_markov_widths]
        + [("gibbs", "omniglot", w) for w in cfg.gibbs_omniglot_widths])
    digests = {task: validity.problem(task, cfg).digest for task in validity.TASKS}
    for rec in records:
        assert rec["complete"], rec["diagnostics"]
        assert rec["digest"] == digests[rec["task"]] and len(rec["correct"]) == rec["n_test"]
    widest = max(cfg.gibbs_markov_widths)
    (row,) = [r for r in validity.compare(payload, cfg) if r.task == "markov" and r.width == widest]
    assert row.sampler == "gibbs" and row.mixed, row
    assert row.distance + 2 * row.noise < U_TOLERANCE, row
    # where NUTS sampled the same posterior (Markov, N = 100): the two samplers' U within three combined
    # Monte Carlo errors (Frobenius, relative to Gibbs's; measured 1.3 % against 0.85 %)
    nuts = {(r["task"], r["width"]): r for r in validity.shipped_samples("smoke")["records"]}
    shared = [r for r in records if (r["task"], r["width"]) in nuts]
    assert [(r["task"], r["width"]) for r in shared] == [("markov", 100)]
    for rec in shared:
        other = nuts[(rec["task"], rec["width"])]
        a, b = np.asarray(other["U"]), np.asarray(rec["U"])
        noise = np.linalg.norm(np.hypot(other["U_se"], rec["U_se"])) / np.linalg.norm(b)
        assert np.linalg.norm(a - b) / np.linalg.norm(b) < 3 * noise
