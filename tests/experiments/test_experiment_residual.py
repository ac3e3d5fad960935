"""The residual-stream chapter's pipeline (MLP blocks and skip connections on the Markov task).

Oracles: the shipped NUTS records of the finite networks (the theory within the stated tolerance of
them where the chains mixed, and closer to them than the GP point), the path counts of the
definition (prod_l (H_l + 1) with skips), the GP limit of the path shares, and a tiny fresh run of
the whole pipeline written to disk.
"""

import dataclasses
import json

import numpy as np
import pytest

from paththeory.experiments import residual as exp
from paththeory.experiments.claims import U_TOLERANCE

# The time limit is a hang guard only: far above the seconds an honest tiny run takes on a busy machine.
TINY = dataclasses.replace(exp.settings("smoke"), theory_widths=(10, 1000), sampled=(("skip", 6),), num_warmup=10,
                           num_samples=10, num_chains=1, n_train=16, n_test=40, time_limit=3600.0)


def test_the_four_networks_have_the_paths_of_the_definition():
    counts = {name: exp.architecture(name).n_paths for name in exp.NETWORKS}
    assert counts == {"attention": 4, "mlp": 4, "skip": 9, "residual": 36}
    assert exp.architecture("skip").path_names()[0] == "(s,s)"  # the all-skip path first
    with pytest.raises(ValueError, match="network must be one of"):
        exp.architecture("transformer")


def test_path_classes_count_attention_heads_only():
    classes = exp.path_classes(exp.architecture("residual"))
    assert [int(m.sum()) for m in classes.values()] == [4, 16, 16]  # {s, M}^2 levels; 2 heads x 4; 4 x 4
    shares = exp.path_shares(np.eye(9), exp.problem("skip", TINY).train)
    assert shares.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.fixture(scope="module")
def shipped():
    payload = exp.samples("smoke")
    assert payload["provenance"]["command"] != "sampled in this run", "the smoke records must ship with the package"
    return exp.compare(payload, exp.settings("smoke"))


def test_the_theory_lies_near_the_shipped_nuts_records(shipped):
    """Where the chains mixed and |Pi| / N <= 0.4, U within U_TOLERANCE of NUTS's (beyond two Monte Carlo
    errors) and at most a third of the GP point's distance; the predictor closer to the theory than the GP."""
    checked = [r for r in shipped if r["converged"] and r["paths"] / r["width"] <= 0.4]
    assert len(checked) >= 3
    for r in checked:
        assert r["U_distance"] + 2 * r["U_noise"] < U_TOLERANCE, r
        assert r["U_distance"] < r["U_gp_distance"] / 3, r
        assert r["f_distance"] < r["f_gp_distance"], r


def test_the_sampled_skip_blocks_are_the_level_above(shipped):
    """NUTS's inner order parameters: one per level above the first, and U_a last (a 1 x 1 matrix)."""
    payload = exp.samples("smoke")
    for rec in payload["records"]:
        levels = exp.architecture(rec["network"]).n_layers
        assert len(rec["inner"]) == levels and np.shape(rec["inner"][-1]) == (1, 1)


def test_a_tiny_run_writes_everything(tmp_path):
    results = exp.run("smoke", tmp_path, config=TINY)
    assert results["sampled_in_this_run"]
    assert json.loads((tmp_path / "results.json").read_text()) == results
    for name in ("shares", "order_parameters"):
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
    (row,) = results["rows"]
    assert row["network"] == "skip" and row["paths"] == 9 and len(row["inner_distance"]) == 2
    gp = np.asarray(results["gp_shares"]["skip"])
    wide = np.asarray(results["shares"]["skip"]["1000"])
    assert np.max(np.abs(wide - gp)) < 0.02  # the GP limit of the shares, approached as 1 / N
    assert {r["levels"] for r in results["deep_linear"]} == {2, 3, 4}
    assert [r["head"] for r in results["pruning"] if r["network"] == "skip"] == [
        "layer 1, head 0", "layer 1, head 1", "layer 2, head 0", "layer 2, head 1"]
    assert max(r["score"] for r in results["pruning"] if r["network"] == "skip") == pytest.approx(1.0)
    for r in results["deep_linear"]:
        assert r["theory"] == pytest.approx(r["closed_form"], rel=1e-7)


def test_the_theorys_path_contributions_sum_to_its_mean_predictor():
    """Oracle: :func:`paththeory.predict.mean_predictor` with the same U (a solution at N = 10)."""
    from paththeory.predict import mean_predictor

    prob = exp.problem("skip", TINY)
    U = exp.theory_curve(prob, [10], TINY.temperature)["points"][10]["solution"].U
    c = exp.theory_path_contributions(U, prob, TINY.temperature)
    mean = np.asarray(mean_predictor(U, prob.train, prob.y_train, prob.test, TINY.temperature))
    np.testing.assert_allclose(c.sum(axis=1), mean, rtol=1e-10, atol=1e-12)
