"""The validity figure (paththeory.experiments.validity): theory against NUTS over |Pi|/N.

The comparison is checked against records whose answer is known (the theory's own U and
predictions give distance 0 and no accuracy difference; the GP point gives its own distance),
the sentences change with the numbers, records of other data are refused, and a short real NUTS
run goes through the command line, the JSON file and the comparison.
"""

import dataclasses
import json

import numpy as np
import pytest

from paththeory.cli import main
from paththeory.experiments import validity
from paththeory.predict import mean_predictor
from paththeory.solve import Theory

TINY = validity.Config(markov_widths=(8,), omniglot_widths=(), num_warmup=20, num_samples=20, num_chains=1,
                       time_limit=3600.0, markov_train=20, markov_test=40)


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
    assert row["distance"] == pytest.approx(0, abs=1e-6)  # the solver's tolerance, not sampling
    assert row["noise"] == pytest.approx(np.linalg.norm(se) / np.linalg.norm(U), rel=1e-12)
    assert row["accuracy"]["difference"] == 0 and row["accuracy"]["se"] == 0
    gp = prob.arch.gp_scale * np.eye(4)
    assert row["gp_distance"] == pytest.approx(np.linalg.norm(U - gp) / np.linalg.norm(U), rel=1e-6)
    assert row["ratio"] == 0.5 and row["theory_accuracy"] == pytest.approx(right.mean())


def test_a_gp_sample_is_as_far_as_the_gp_point_and_incomplete_runs_are_left_out(theory_at_8):
    prob, U, right = theory_at_8
    gp = prob.arch.gp_scale * np.eye(4)
    flipped = right.copy()
    flipped[:10] = ~flipped[:10]
    rows = validity.compare([_record(TINY, 8, gp, np.full((4, 4), 1e-3), flipped),
                             _record(TINY, 8, None, None, None, complete=False)], TINY)
    assert len(rows) == 1
    (row,) = rows
    assert row["distance"] == pytest.approx(np.linalg.norm(gp - U) / np.linalg.norm(U), rel=1e-6)
    assert row["gp_distance"] == pytest.approx(0, abs=1e-12)
    assert row["accuracy"]["n"] == len(right)
    expected = (flipped.astype(float) - right).mean()
    assert row["accuracy"]["difference"] == pytest.approx(expected)


def test_records_of_other_data_are_refused(theory_at_8):
    _, U, right = theory_at_8
    rec = _record(TINY, 8, U, np.full(U.shape, 0.01), right)
    rec["digest"] = "0" * 16
    with pytest.raises(ValueError, match="sampled on other data.*paththeory validity"):
        validity.compare([rec], TINY)


def _row(task, width, distance, noise, gp, diff, se):
    return {"task": task, "width": width, "paths": 4 if task == "markov" else 16,
            "ratio": (4 if task == "markov" else 16) / width, "distance": distance, "noise": noise,
            "gp_distance": gp, "accuracy": {"difference": diff, "se": se, "n": 500},
            "theory_accuracy": 0.9, "nuts_accuracy": 0.9 + diff, "r_hat": 1.01, "ess": 100.0}


def test_the_summary_is_generated_from_the_numbers():
    rows = [_row("markov", 10, 0.05, 0.04, 0.5, 0.002, 0.004), _row("omniglot", 10, 0.3, 0.05, 0.6, 0.0, 0.01)]
    text = validity.summary(rows)
    assert "0.050 ± 0.040 at |Π|/N = 0.40 (N = 10, within two Monte Carlo errors; 0.10 of the GP point's)" in text
    assert "0.300 ± 0.050 at |Π|/N = 1.60 (N = 10, beyond two Monte Carlo errors; 0.50 of the GP point's)" in text
    assert text.count("no accuracy difference is beyond two paired standard errors") == 2
    rows[1]["accuracy"] = {"difference": -0.05, "se": 0.01, "n": 500}
    assert "differs beyond two paired standard errors at N = 10 (-5.0 ± 1.0 points)" in validity.summary(rows)
    assert validity.summary([]).startswith("No point was sampled")
    rows[0]["r_hat"] = 1.08
    assert "R-hat 1.08: the chains have not fully mixed" in validity.summary(rows)
    table = validity.table(rows)
    assert table.count("\n") == 3 and "+0.2 ± 0.4 pts" in table and "0.050 (0.040)" in table


def test_the_figure_has_both_panels():
    import matplotlib.pyplot as plt

    fig = validity.plot([_row("markov", 10, 0.05, 0.04, 0.5, 0.002, 0.004),
                         _row("markov", 30, 0.03, 0.02, 0.3, 0.0, 0.002)], "smoke")
    left, right = fig.axes[:2]
    assert left.get_xscale() == "log" and left.get_yscale() == "log" and "distance" in left.get_ylabel()
    assert "points" in right.get_ylabel()
    plt.close(fig)


def test_a_short_nuts_run_from_the_command_line(tmp_path, monkeypatch):
    monkeypatch.setitem(validity.SETTINGS, "smoke", TINY)
    out = tmp_path / "validity.json"
    assert main(["validity", "--profile", "smoke", "--out", str(out), "--quiet"]) == 0
    payload = json.loads(out.read_text())
    assert payload["provenance"]["config"] == json.loads(json.dumps(dataclasses.asdict(TINY)))
    (rec,) = payload["records"]
    assert rec["complete"] and rec["width"] == 8 and len(rec["correct"]) == 40
    (row,) = validity.compare(payload["records"], TINY)
    assert 0 <= row["distance"] < row["gp_distance"] + 1  # a finite, sane number from 20 draws
    assert "were drawn by `python -m paththeory validity --profile smoke`" in validity.provenance_text(payload)


def test_samples_of_other_sizes_are_not_used(monkeypatch):
    shipped = validity.shipped_samples("smoke")
    assert shipped is not None, "the smoke records ship with the package (python -m paththeory validity)"
    assert validity.shipped_samples("colab") == shipped  # the same sizes: the CPU run serves Colab too
    assert validity.shipped_samples("paper") is None
    monkeypatch.setitem(validity.SETTINGS, "smoke", dataclasses.replace(validity.SETTINGS["smoke"], num_samples=7))
    assert validity.shipped_samples("smoke") is None


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
