"""Tests of the Fig. 3 reproduction pipeline (spec §5, §7) on a tiny configuration.

Oracles: a brute-force temperature pick, the trained network evaluated directly (no heads
pruned), the stored features re-scored with the stored order parameters, the GP accuracy
recomputed from the stored features, and a second run with the same seed.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from paththeory import data, training
from paththeory.experiments import omniglot as exp
from paththeory.predict import accuracy, predictor
from paththeory.profiles import PROFILES
from paththeory.pruning import head_scores, score_order

pytestmark = [
    pytest.mark.skipif(not data.SHARED_DATA.is_dir(), reason="offline data copies (../shared/data) not present"),
    pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning"),  # NUTS ESS of 5 draws
]

TINY = exp.Config(n_train=24, n_validation=20, n_test=20, widths=(10, 1000), temperatures=(0.1, 1.0),
                  sample_n_train=8, num_warmup=5, num_samples=5, num_chains=1, sample_time_limit=60.0,
                  n_random_orders=2, demo_steps=0, gp_temperatures=(0.1, 0.25))
NO_SAMPLES = dataclasses.replace(TINY, sample_n_train=0)


def tiny_network(seed: int = 0) -> training.Checkpoint:
    """A random L = 2, H = (3, 3) network on N0 = 64 tokens, with the metadata of a checkpoint."""
    config = training.TrainConfig(d_model=8, qk_dim=4, heads=3, layers=2, channels=1)
    params = training.init_params(config, 64, seed)
    return training.Checkpoint(training.architecture(params), training.value_params(params),
                               {"config": dataclasses.asdict(config), "data": {"source": "omniglot:background_small"},
                                "provenance": "random test network"})


@pytest.fixture(scope="module")
def network():
    return tiny_network()


@pytest.fixture(scope="module")
def outputs(network, tmp_path_factory):
    out = tmp_path_factory.mktemp("omniglot")
    results = exp.run("smoke", out, config=TINY, network=network, cache=False, progress=False)
    return results, out


def test_files_and_keys(outputs):
    results, out = outputs
    assert json.loads((out / "results.json").read_text()) == results
    for name in exp.FIGURES:
        assert (out / f"{name}.png").stat().st_size > 1000
    assert results["profile"] == "smoke" and results["widths"] == [10, 1000]
    splits = {"validation", "test", "one_shot_runs", "mnist"}
    assert splits <= set(results["splits"])
    acc = results["accuracy"]
    assert set(acc) == {"theory", "gp"} and set(acc["theory"]) == set(results["splits"])
    assert all(set(acc["theory"][s]) == {"10", "1000"} for s in splits)
    assert set(results["temperature"]["theory"]) == {"10", "1000"}
    assert results["temperature"]["gp"] in TINY.gp_temperatures
    assert {"scores", "order", "width", "temperature"} <= set(results["head_scores"])
    assert {"single_head_drop", "cumulative", "orders", "spearman"} <= set(results["pruning"])
    assert set(results["pruning"]["cumulative"]["test"]) == {"score_ascending", "score_descending", "random_0", "random_1"}
    assert splits <= set(results["gd_accuracy"])
    comp = results["order_parameter_comparison"]
    for key in ("theory", "sampled", "gd"):
        assert np.asarray(comp[key]).shape == (9, 9), key
        assert comp["block_contrast"][key] > 0, key
    assert comp["n_train"] == 8 and comp["width"] == 10
    lines = exp.paper_expectations(results)
    assert len(lines) == (len(results["splits"]) - 1) + 1 + len(results["pruning"]["cumulative"])
    with np.load(out / "features.npz") as f:
        assert f["features_train"].shape == (24, 9, 64) and f["y_train"].shape == (24,)
        assert {"features_validation", "features_test", "features_one_shot_runs", "features_mnist"} <= set(f.files)
        np.testing.assert_array_equal(f["y_train"], np.repeat([1.0, -1.0], 12))  # balanced, +1 then -1


def test_fashion_is_skipped_with_a_note_when_missing(outputs):
    results, _ = outputs
    if "fashion" not in results["splits"]:
        assert any(n.startswith("fashion: skipped") for n in results["data"]["notes"])


def test_select_temperature_is_the_validation_best():
    rng = np.random.default_rng(0)
    temps = [0.5, 0.01, 1.5, 0.1, 0.25]  # deliberately unsorted
    table = rng.integers(0, 6, size=(5, 7)) / 10  # many ties
    chosen = exp.select_temperature(table, temps)
    for j in range(table.shape[1]):
        best = max(table[:, j])
        brute = max(t for t, a in zip(temps, table[:, j]) if a == best)  # ties: the larger T
        assert chosen[j] == brute
    np.testing.assert_array_equal(exp.selected(table, temps, chosen), table.max(axis=0))
    assert float(exp.select_temperature([0.6, 0.7, 0.7], [1.0, 0.5, 0.1])) == 0.5
    with pytest.raises(ValueError, match="n_T"):
        exp.select_temperature(table, temps[:3])


def test_selected_temperatures_and_stored_features_reproduce_stored_accuracy(outputs):
    results, out = outputs
    grid = {s: np.asarray(v) for s, v in results["accuracy_grid"]["theory"].items()}
    with np.load(out / "features.npz") as f:
        for j, w in enumerate(results["widths"]):
            t = results["temperature"]["theory"][str(w)]
            i = results["temperatures"].index(t)
            assert grid["validation"][i, j] == grid["validation"][:, j].max()
            U = np.asarray(results["order_parameter"]["theory_by_width"][str(w)])
            mean, _ = predictor(U, f["features_train"], f["y_train"], f["features_test"], t)
            assert accuracy(mean, f["y_test"]) == results["accuracy"]["theory"]["test"][str(w)]
        t_gp = results["temperature"]["gp"]
        mean, _ = predictor(np.eye(9), f["features_train"], f["y_train"], f["features_mnist"], t_gp)
        assert accuracy(mean, f["y_mnist"]) == results["accuracy"]["gp"]["mnist"]


def test_no_pruning_is_the_unpruned_network(outputs, network):
    results, _ = outputs
    seqs = exp.build_sequences(TINY, network)
    for s, curves in results["pruning"]["cumulative"].items():
        full = training.evaluate(network, seqs.x[s], seqs.y[s])
        assert full == results["gd_accuracy"][s]
        assert all(c[0] == full for c in curves.values())
        assert len(curves["score_ascending"]) == 7


def test_head_scores_and_orders(outputs):
    results, _ = outputs
    hs = results["head_scores"]
    U = np.asarray(results["order_parameter"]["theory_by_width"]["10"])
    assert hs["scores"] == [s.tolist() for s in head_scores(U, (3, 3))]
    assert hs["order"] == [list(lh) for lh in score_order(head_scores(U, (3, 3)))]
    orders = results["pruning"]["orders"]
    assert orders["score_descending"] == hs["order"][::-1]
    assert all(sorted(o) == sorted(hs["order"]) for o in orders.values())


def test_pruning_rules(network):
    seqs = exp.build_sequences(NO_SAMPLES, network)
    x, y = seqs.x["test"], seqs.y["test"]
    assert np.isnan(exp.pruned_accuracy(network, x, y, [(0, 0), (0, 1), (0, 2)]))  # layer 1 emptied
    masks = exp.head_mask((3, 3), [(1, 2)])
    assert masks[0].tolist() == [1, 1, 1] and masks[1].tolist() == [1, 1, 0]
    assert exp.pruned_accuracy(network, x, y, [(1, 2)]) == training.evaluate(network, x, y, head_mask=masks)
    with pytest.raises(ValueError, match="does not exist"):
        exp.head_mask((3, 3), [(2, 0)])


def test_reproducible_with_a_seed(outputs, network):
    results, _ = outputs
    again = exp.run("smoke", None, config=TINY, network=network, cache=False, progress=False)
    for key in ("accuracy", "accuracy_grid", "temperature", "head_scores", "pruning", "gd_accuracy"):
        assert again[key] == results[key], key
    np.testing.assert_allclose(again["order_parameter_comparison"]["sampled"],
                               results["order_parameter_comparison"]["sampled"], rtol=1e-10)
    other = exp.build_sequences(dataclasses.replace(TINY, seed=1), network)
    assert not np.array_equal(other.x["train"], exp.build_sequences(TINY, network).x["train"])


def test_sweep_cache_is_reused(network, tmp_path, monkeypatch):
    seqs = exp.build_sequences(NO_SAMPLES, network)
    feats = exp.build_features(network.architecture, seqs)
    first = exp.theory_sweep(network.architecture, feats, seqs.y, (10,), (0.5,), cache=tmp_path)
    monkeypatch.setattr(exp, "Theory", None)  # a cache hit never builds a Theory
    second = exp.theory_sweep(network.architecture, feats, seqs.y, (10,), (0.5,), cache=tmp_path)
    np.testing.assert_array_equal(first.U, second.U)
    assert first.accuracy.keys() == second.accuracy.keys()
    assert all(np.array_equal(first.accuracy[s], second.accuracy[s]) for s in first.accuracy)


def test_block_contrast():
    heads = (2, 3)
    block = np.kron(np.eye(2), np.full((3, 3), 0.5)) + np.eye(6)  # correlated within first-layer heads only
    cross = block + 0.25 * (1 - np.kron(np.eye(2), np.ones((3, 3))))
    assert exp.block_contrast(cross, heads) == pytest.approx(0.5 / 0.25)
    assert np.isinf(exp.block_contrast(block, heads))
    with pytest.raises(ValueError, match="H_1 >= 2"):
        exp.block_contrast(np.eye(3), (1, 3))


def test_comparison_without_sampling_reuses_the_theory(network):
    seqs = exp.build_sequences(NO_SAMPLES, network)
    feats = exp.build_features(network.architecture, seqs)
    U = np.eye(9) * 1.5
    comp = exp.compare_order_parameters(NO_SAMPLES, network, feats, seqs.y, 0.5, theory_U=U)
    assert comp["sampled"] is None and comp["n_train"] == NO_SAMPLES.n_train
    np.testing.assert_array_equal(comp["theory"], U)  # the full training set: no second solve


def test_profiles_and_bad_configs():
    assert set(exp.SETTINGS) == set(PROFILES)
    paper = exp.SETTINGS["paper"]
    assert (paper.widths, paper.temperatures, paper.n_train) == (exp.PAPER_WIDTHS, exp.PAPER_TEMPERATURES, 600)
    assert exp.SETTINGS["smoke"].n_train == 600
    with pytest.raises(ValueError, match="even"):
        dataclasses.replace(TINY, n_train=25)
    with pytest.raises(ValueError, match="score_width"):
        dataclasses.replace(TINY, score_width=20)
