"""Tests of the Fig. 3 reproduction pipeline (§4.2 and App. H of the paper) on a tiny configuration.

Oracles: a brute-force temperature pick, the trained network evaluated directly (layer by layer,
with and without pruned heads), the stored features re-scored with the stored order parameters,
the GP accuracy and the paired finite-width-minus-GP differences recomputed from the stored
features, and a second run with the same seed.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from paththeory import training
from paththeory.tasks import data
from paththeory.experiments import stats
from paththeory.experiments import omniglot as exp
from paththeory.experiments import omniglot_base
from paththeory.experiments import head_pruning
from paththeory.experiments.records import jsonable, typed
from paththeory.predict import accuracy, predictor
from paththeory.profiles import PROFILES
from paththeory.pruning import head_mask, head_scores, score_order

pytestmark = [
    pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning"),  # NUTS ESS of 5 draws
]

TINY = exp.Config(n_train=24, n_validation=20, n_test=20, widths=(10, 1000), temperatures=(0.1, 1.0),
                  sample_n_train=8, num_warmup=5, num_samples=12, num_chains=1, sample_time_limit=3600.0,
                  n_random_orders=50, n_bootstrap=50, demo_steps=0, gp_temperatures=(0.1, 0.25),
                  score_resamples=1, score_train_sizes=(12,))
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
    if "fashion" in results["splits"]:  # the paper's OOD set of Fig. 3 comes before its appendix's MNIST
        assert results["splits"].index("fashion") < results["splits"].index("mnist")
    pcs = results["pc_overlap"]
    assert pcs["width"] == 10 and pcs["n_train"] == 24 and len(pcs["theory"]) == len(pcs["gp"]) == 24
    for key in ("theory", "gp"):
        cap = pcs[f"{key}_summary"]["captured"]
        assert 0 <= cap["1"] <= cap["5"] <= cap["10"] <= 1 + 1e-9
        np.testing.assert_allclose(np.sum(np.square(pcs[key])), 1.0, rtol=1e-8)  # all P PCs hold all of y
    acc = results["accuracy"]
    assert set(acc) == {"theory", "gp"} and set(acc["theory"]) == set(results["splits"])
    assert all(set(acc["theory"][s]) == {"10", "1000"} for s in splits)
    assert set(results["temperature"]["theory"]) == {"10", "1000"}
    # the GP is searched over the theory's grid and the authors' list, and its accuracy shown over all of it
    grid = results["temperature"]["gp_grid"]
    assert grid == sorted(set(TINY.temperatures) | set(TINY.gp_temperatures)) and results["temperature"]["gp"] in grid
    assert all(len(results["accuracy_grid"]["gp"][s]) == len(grid) for s in results["accuracy_grid"]["gp"])
    assert set(results["finite_vs_gp"]) == splits - {"validation"} | ({"fashion"} & set(results["splits"]))
    assert {"rho", "interval", "selected", "n_bootstrap"} <= set(results["temperature_trend"])
    assert {"scores", "order", "width", "temperature"} <= set(results["head_scores"])
    assert {"test", "one_shot_runs", "mnist"} <= set(results["pruning"])
    pr = results["pruning"]["test"]
    assert {"single_head_drop", "single_head_se", "spearman", "cumulative", "area", "two_lowest", "best_pair"} <= set(pr)
    assert set(pr["cumulative"]) == {"score_ascending", "score_descending", "random"}
    assert pr["cumulative"]["random"]["n"] == TINY.n_random_orders
    assert splits <= set(results["gd_accuracy"])
    comp = results["order_parameter_comparison"]
    for key in ("theory", "sampled", "gd", "sampled_se"):
        assert np.asarray(comp[key]).shape == (9, 9), key
    assert comp["n_train"] == 8 and comp["width"] == 10
    sampled = comp["sampled_accuracy"]  # the NUTS predictor on every evaluation split (Fig. 3b)
    assert set(sampled) == set(results["splits"]) - {"validation"}
    assert all(0 <= v["accuracy"] <= 1 and v["se"] >= 0 for v in sampled.values())
    assert all(v["n"] == results["data"]["n"][s] for s, v in sampled.items())
    ag = comp["agreement"]
    assert set(ag["block"]) == {"theory", "sampled", "gd"} and ag["theory_vs_sampled"]["noise"] > 0
    assert typed(exp.PathSimilarity, results["path_similarity"]).alike in (True, False)
    sens = results["score_sensitivity"]
    assert set(sens["variants"]) == set(head_pruning.SCORE_VARIANTS) and len(sens["resamples"]) == 1
    assert set(sens["train_sizes"]) == {"12", "24"}
    ids = {r["id"] for r in results["claims"]}
    assert {"finite_vs_gp:test", "temperature_trend", "u_sampled", "u_gd", "u_block", "score_drop:test",
            "ascending_vs_random:mnist", "two_lowest:test", "pc_overlap", "ood_after_pruning:mnist"} <= ids
    if "fashion" in results["splits"]:
        assert {"finite_vs_gp:fashion", "ood_after_pruning:fashion"} <= ids
    assert all(r["verdict"] in stats.OUTCOMES for r in results["claims"])
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
    t_gp = results["temperature"]["gp"]
    with np.load(out / "features.npz") as f:
        gp_mean, _ = predictor(np.eye(9), f["features_train"], f["y_train"], f["features_mnist"], t_gp)
        assert accuracy(gp_mean, f["y_mnist"]) == results["accuracy"]["gp"]["mnist"]
        for j, w in enumerate(results["widths"]):
            t = results["temperature"]["theory"][str(w)]
            i = results["temperatures"].index(t)
            assert grid["validation"][i, j] == grid["validation"][:, j].max()
            U = np.asarray(results["order_parameter"]["theory_by_width"][str(w)])
            mean, _ = predictor(U, f["features_train"], f["y_train"], f["features_test"], t)
            assert accuracy(mean, f["y_test"]) == results["accuracy"]["theory"]["test"][str(w)]
            mean, _ = predictor(U, f["features_train"], f["y_train"], f["features_mnist"], t)
            paired = stats.paired_difference(np.asarray(mean) * f["y_mnist"] > 0, np.asarray(gp_mean) * f["y_mnist"] > 0)
            assert paired == results["finite_vs_gp"]["mnist"][str(w)]


def test_pruning_study_against_the_network_itself(outputs, network):
    """Unpruned and single-head-pruned accuracies (from path contributions, float64) against the
    trained network evaluated layer by layer (float32) with head masks, on the same sequences."""
    results, _ = outputs
    seqs = exp.build_sequences(TINY, network)
    for s, pr in results["pruning"].items():
        x, y = seqs.x[s], seqs.y[s]
        tol = 1.5 / len(y)  # float32 against float64: at most one sequence may change sign
        full = pr["cumulative"]["score_ascending"][0]
        assert full == pr["cumulative"]["score_descending"][0]
        assert abs(full - results["gd_accuracy"][s]) <= tol
        for l, drops in enumerate(pr["single_head_drop"]):
            for h, drop in enumerate(drops):
                assert abs(full - drop - head_pruning.pruned_accuracy(network, x, y, [(l, h)])) <= tol
        assert len(pr["cumulative"]["score_ascending"]) == 7
        low = [tuple(lh) for lh in results["head_scores"]["order"][:2]]
        assert abs(full - pr["two_lowest"]["difference"] - head_pruning.pruned_accuracy(network, x, y, low)) <= tol
        assert pr["best_pair"]["cost"] <= pr["two_lowest"]["difference"] + 1e-12
        four = [tuple(lh) for lh in results["head_scores"]["order"][:4]]
        if pr["four_lowest"] is None:  # four lowest would empty a layer of this small network
            assert any(sum(lh[0] == layer for lh in four) == n for layer, n in enumerate(results["heads"]))
        else:
            assert abs(full - pr["four_lowest"]["difference"]
                       - head_pruning.pruned_accuracy(network, x, y, four)) <= tol


def test_head_scores_orders_and_sensitivity(outputs):
    results, _ = outputs
    hs = results["head_scores"]
    U = np.asarray(results["order_parameter"]["theory_by_width"]["10"])
    assert hs["scores"] == [s.tolist() for s in head_scores(U, (3, 3))]
    assert hs["order"] == [list(lh) for lh in score_order(head_scores(U, (3, 3)))]
    sens = results["score_sensitivity"]
    i = results["temperatures"].index(sens["temperature"])
    rho = sens["grid"]["rho"][i][results["widths"].index(sens["width"])]
    assert rho == sens["variants"]["abs"]["rho"] == results["pruning"]["test"]["spearman"]["rho"]
    assert sens["train_sizes"]["24"] == sens["variants"]["abs"]


def test_pruning_rules(network):
    seqs = exp.build_sequences(NO_SAMPLES, network)
    x, y = seqs.x["test"], seqs.y["test"]
    assert np.isnan(head_pruning.pruned_accuracy(network, x, y, [(0, 0), (0, 1), (0, 2)]))  # layer 1 emptied
    masks = head_mask((3, 3), [(1, 2)])
    assert masks[0].tolist() == [1, 1, 1] and masks[1].tolist() == [1, 1, 0]
    assert head_pruning.pruned_accuracy(network, x, y, [(1, 2)]) == training.evaluate(network, x, y, head_mask=masks)
    with pytest.raises(ValueError, match="does not exist"):
        head_mask((3, 3), [(2, 0)])


def test_temperature_trend_bootstrap():
    rng = np.random.default_rng(0)
    temps, widths = (0.1, 0.5), (10, 100, 1000)
    p = np.array([[0.6, 0.7, 0.8], [0.8, 0.7, 0.6]])  # T = 0.5 best at N = 10, T = 0.1 at N = 1000
    clear = rng.random((2, 3, 4000)) < p[:, :, None]
    clear[1, 1] = clear[0, 1]  # N = 100: both temperatures right on the same sequences, an exact tie
    trend = exp.temperature_trend(clear, temps, widths, n_bootstrap=200)
    assert trend["rho"] < -0.8 and trend["interval"][1] < 0
    assert trend["selected"] == {"10": 0.5, "100": 0.5, "1000": 0.1}  # the tie at N = 100 goes to the larger T
    flat = rng.random((2, 3, 400)) < 0.7
    trend = exp.temperature_trend(flat, temps, widths, n_bootstrap=200)
    assert trend["interval"][0] < 0 < trend["interval"][1] or trend["interval"] == [0.0, 0.0]
    with pytest.raises(ValueError, match="n_T"):
        exp.temperature_trend(flat[:, :2], temps, widths)


def test_reproducible_with_a_seed(outputs, network):
    results, _ = outputs
    again = exp.run("smoke", None, config=TINY, network=network, cache=False, progress=False)
    for key in ("accuracy", "accuracy_grid", "temperature", "temperature_trend", "finite_vs_gp", "head_scores",
                "pruning", "gd_accuracy", "score_sensitivity", "claims"):
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
    assert first.correct.keys() == second.correct.keys() and second.cached
    assert all(np.array_equal(first.correct[s], second.correct[s]) for s in first.correct)


def test_block_contrast_and_indicator():
    heads = (2, 3)
    block = np.kron(np.eye(2), np.full((3, 3), 0.5)) + np.eye(6)  # correlated within first-layer heads only
    cross = block + 0.25 * (1 - np.kron(np.eye(2), np.ones((3, 3))))
    assert exp.block_contrast(cross, heads) == pytest.approx(0.5 / 0.25)
    assert np.isinf(exp.block_contrast(block, heads))
    np.testing.assert_array_equal(exp.same_first_head(heads), np.kron(np.eye(2), np.ones((3, 3))))
    with pytest.raises(ValueError, match="H_1 >= 2"):
        exp.block_contrast(np.eye(3), (1, 3))


def test_path_cosines_against_a_loop():
    rng = np.random.default_rng(3)
    f = rng.normal(size=(7, 6, 5))
    cos = exp.path_cosines(f)
    for a in range(6):
        for b in range(6):
            u, v = f[:, a].ravel(), f[:, b].ravel()
            assert cos[a, b] == pytest.approx(u @ v / np.sqrt((u @ u) * (v @ v)), rel=1e-12)
    with pytest.raises(ValueError, match="nonzero"):
        exp.path_cosines(np.zeros((3, 2, 4)))


def test_path_similarity_sees_paths_that_share_their_first_head():
    rng = np.random.default_rng(4)
    heads = (4, 2)  # paths (h1, h2) in the order 00 01 10 11 20 21 30 31
    base = rng.normal(size=(4, 40, 8))  # one input per first-layer head
    f = np.stack([base[i // 2] + 0.2 * rng.normal(size=(40, 8)) for i in range(8)], axis=1)
    sim = exp.path_similarity(f, heads)
    cos = exp.path_cosines(f)
    np.testing.assert_allclose(sim.cosine, cos)
    pairs = [(a, b) for a in range(8) for b in range(8) if a != b]
    same = [(a, b) for a, b in pairs if a // 2 == b // 2]
    later = [(a, b) for a, b in pairs if a // 2 != b // 2 and a % 2 == b % 2]
    none = [(a, b) for a, b in pairs if a // 2 != b // 2 and a % 2 != b % 2]
    for key, group in (("same_first", same), ("shared_later", later), ("shared_none", none),
                       ("different_first", later + none)):
        assert getattr(sim, key) == pytest.approx(np.mean([cos[a, b] for a, b in group]))
    assert sim.same_first > 0.9 > 0.3 > abs(sim.different_first)
    assert sim.mantel["p_greater"] < 0.05 and sim.alpha == 0.05 and sim.alike is True
    assert exp.path_similarity(f, heads, alpha=sim.mantel["p_greater"]).alike is False  # p must be below alpha
    shuffled = f[:, [0, 2, 4, 6, 1, 3, 5, 7]]  # now the paths sharing h1 hold unrelated inputs
    flipped = exp.path_similarity(shuffled, heads)
    assert flipped.same_first < flipped.different_first and flipped.alike is False
    stored = json.loads(json.dumps(jsonable(sim)))  # as results.json holds it, read back typed
    assert typed(exp.PathSimilarity, stored) == sim
    with pytest.raises(ValueError, match="heads"):
        exp.path_similarity(f, (2, 2))


def test_agreement_numbers():
    heads = (2, 2)
    th = np.diag([4.0, 1.0, 2.0, 1.0]) + 0.5
    comp = {"theory": th, "sampled": th + 0.1 * np.eye(4), "sampled_se": np.full((4, 4), 0.01), "gd": 3 * th}
    ag = exp.agreement(comp, heads, 1.0)
    assert ag["theory_vs_sampled"]["relative_distance"] == pytest.approx(0.2 / np.linalg.norm(th))
    assert ag["theory_vs_sampled"]["noise"] == pytest.approx(0.04 / np.linalg.norm(th))
    assert ag["theory_vs_gd"]["r"] == pytest.approx(1.0)


def test_comparison_without_sampling_reuses_the_theory(network):
    seqs = exp.build_sequences(NO_SAMPLES, network)
    feats = exp.build_features(network.architecture, seqs)
    U = np.eye(9) * 1.5
    comp = exp.compare_order_parameters(NO_SAMPLES, network, feats, seqs.y, 0.5, theory_U=U)
    assert comp["sampled"] is None and comp["n_train"] == NO_SAMPLES.n_train
    assert comp["agreement"]["theory_vs_sampled"] is None and comp["agreement"]["block"]["sampled"] is None
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
    with pytest.raises(ValueError, match="score_train_sizes"):
        dataclasses.replace(TINY, score_train_sizes=(30,))
    for name in exp.NETWORK_SETTINGS:
        for profile in PROFILES:
            assert exp.settings(profile, name).sample_n_train == 0
    assert exp.settings("smoke", "omniglot_l2h8").n_train == 300
    assert exp.settings("smoke", training.SHIPPED) == exp.SETTINGS["smoke"]
    with pytest.raises(ValueError, match="no settings"):
        exp.settings("smoke", "omniglot_l9h9")


def test_pruning_code_lives_in_its_own_module():
    """The pruning chapter's experiment is :mod:`paththeory.experiments.head_pruning`, and only there."""
    for name in ("pruning_stage", "pruning_study", "pruned_accuracy", "score_sensitivity", "scores_and_order"):
        assert getattr(head_pruning, name).__module__ == "paththeory.experiments.head_pruning"
        assert not hasattr(exp, name), f"{name} is defined or re-exported by experiments.omniglot too"


def test_fig3d_finite_width_kernel_aligns_better_with_the_labels():
    """Fig. 3d on a small training set of the shipped network: the top principal components of K_U
    at N = 10 hold more of the label vector than those of the GP kernel."""
    try:
        network = exp.trained_network()
        x, y = omniglot_base.training_sequences(network, 120, 0)
    except (data.DataNotFoundError, training.CheckpointNotFoundError) as err:
        pytest.skip(f"needs the Omniglot data and the shipped checkpoint: {err}")
    from paththeory.solve import Theory

    arch = network.architecture
    feats = np.asarray(exp.path_features(arch, x))
    U = Theory(arch, feats, y).solve(10, 0.5).U
    ov = exp.pc_overlaps(arch, U, feats, y, k=20)
    th, gp = ov["theory_summary"]["captured"], ov["gp_summary"]["captured"]
    assert th["10"] > gp["10"] and th["20"] > gp["20"], (th, gp)


def test_a_missing_out_of_distribution_file_stops_the_pipeline_by_name(tmp_path, monkeypatch):
    """No split is dropped silently: without the MNIST files (and no way to download them) the
    sequences are not built, and the error names the file (the book then shows its notice)."""
    root = tmp_path / "data"
    root.mkdir()
    for name in ("omniglot", "fashion_mnist"):  # everything but MNIST
        (root / name).symlink_to(data.BUNDLED_DATA / name)
    monkeypatch.setattr(data, "BUNDLED_DATA", tmp_path / "nothing")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(data.URL_ENV_VAR, "http://127.0.0.1:9")  # the discard port: the download fails
    with pytest.raises(data.DataNotFoundError, match=r"mnist .*t10k-images-idx3-ubyte"):
        exp.build_sequences(NO_SAMPLES, tiny_network(), root=root)
