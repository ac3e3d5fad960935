"""N-way Omniglot sequences (paththeory.tasks.omniglot) and the glue of
paththeory.experiments.omniglot_nway, against independent oracles.

Oracles: the structure a C-way one-shot sequence must have (one drawing of each of C distinct
classes in the context, the query's class among them, a permutation of the label ids), the 2-way
builder (C = 2 must give its tokens exactly), the official runs' answer keys, and hand loops for
the argmax accuracies and their paired standard errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from paththeory.tasks.data import OneShotRuns
from paththeory.experiments import omniglot_nway as nway
from paththeory.tasks import omniglot as om

N_CHARS, DRAWINGS = 12, 4
LABELS = np.repeat(np.arange(N_CHARS), DRAWINGS)[np.random.default_rng(3).permutation(N_CHARS * DRAWINGS)]


def fake_runs(n_runs: int = 3, n_classes: int = 20, seed: int = 0) -> OneShotRuns:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n_runs, n_classes, 8, 8), dtype=np.uint8)
    answers = np.stack([rng.permutation(n_classes) for _ in range(n_runs)])
    return OneShotRuns(images, images[:, :, ::-1].copy(), answers)


def check_structure(index: om.NWayIndex, character_of, n_ways: int) -> None:
    n = len(index.classes)
    assert index.images.shape == index.labels.shape == (n, n_ways + 1)
    ctx, query = index.images[:, :-1], index.images[:, -1]
    for k in range(n):
        chars = [character_of(i) for i in ctx[k]]
        assert len(set(chars)) == n_ways  # each class once
        assert sorted(index.labels[k, :-1]) == list(range(n_ways)) and index.labels[k, -1] == n_ways
        match = chars.index(character_of(query[k]))  # the query's class is in the context
        assert ctx[k, match] != query[k]  # with another drawing
        assert index.classes[k] == index.labels[k, match]


@pytest.mark.parametrize("n_ways", [2, 5, 12])
def test_nway_sequences_hold_each_class_once_and_the_query_class(n_ways):
    index = om.nway_indices(LABELS, 0, 300, n_ways)
    check_structure(index, lambda i: LABELS[i], n_ways)
    # the query's class is equally likely at every label id and context position
    assert np.bincount(index.classes, minlength=n_ways).min() > 300 / n_ways / 3


def test_characters_restrict_the_sequences():
    chars = np.array([1, 4, 5, 9, 11])
    index = om.nway_indices(LABELS, 1, 50, 5, characters=chars)
    assert set(LABELS[index.images.ravel()]) == set(chars)


def test_two_ways_give_the_binary_builders_tokens():
    patches = np.random.default_rng(0).standard_normal((len(LABELS), 16, 64))
    index = om.nway_indices(LABELS, 2, 40, 2)
    check_structure(index, lambda i: LABELS[i], 2)
    np.testing.assert_array_equal(om.assemble_nway_tokens(patches, index),
                                  om.assemble_tokens(patches, index.images, index.labels))
    for channels in (1, 3):
        x = om.assemble_nway_tokens(patches, om.nway_indices(LABELS, 2, 4, 5), channels=channels)
        assert x.shape == (4, 6 * 16, 64 * channels)


def test_label_vectors_keep_the_networks_and_add_fresh_ones():
    base = om.label_vectors(192, 0)
    v5, v20 = om.nway_label_vectors(5, 192, 0), om.nway_label_vectors(20, 192, 0)
    np.testing.assert_array_equal(v5[[0, 1, 5]], base)
    np.testing.assert_array_equal(v20[:5], v5[:5])  # the same extra vectors for every C
    gram = v20 @ v20.T / 192
    assert np.abs(gram - np.diag(np.diag(gram))).max() < 0.4  # distinct directions
    assert 0.7 < np.diag(gram).min() and np.diag(gram).max() < 1.3  # N(0, 1) entries


def test_each_control_changes_one_thing_only():
    """fresh_labels changes the contexts' label vectors and nothing else (the query keeps E_2);
    query_slot moves the query's positions to those of slot k and nothing else."""
    patches = np.random.default_rng(1).standard_normal((len(LABELS), 16, 64))
    index = om.nway_indices(LABELS, 4, 6, 2)
    plain = om.assemble_nway_tokens(patches, index)
    fresh = om.assemble_nway_tokens(patches, index, fresh_labels=True)
    new = om.nway_label_vectors(2, 192, 0, fresh=True)
    np.testing.assert_array_equal(new[2], om.label_vectors(192, 0)[2])
    for k in range(len(index.classes)):
        for slot in range(2):
            old_vec, new_vec = om.label_vectors(192, 0)[index.labels[k, slot]], new[index.labels[k, slot]]
            np.testing.assert_allclose(fresh[k, 16 * slot:16 * slot + 16] - plain[k, 16 * slot:16 * slot + 16],
                                       np.broadcast_to(new_vec - old_vec, (16, 192)), atol=1e-12)
    np.testing.assert_array_equal(fresh[:, 32:], plain[:, 32:])
    moved = om.assemble_nway_tokens(patches, index, query_slot=5)
    pe = om.positional_encoding(96, 192, standardise_over=48)
    np.testing.assert_array_equal(moved[:, :32], plain[:, :32])
    np.testing.assert_allclose(moved[:, 32:] - plain[:, 32:], np.broadcast_to(pe[80:96] - pe[32:48], (6, 16, 192)),
                               atol=1e-12)
    np.testing.assert_array_equal(om.assemble_nway_tokens(patches, index, query_slot=2), plain)
    with pytest.raises(ValueError, match="query_slot must be at least C = 2"):
        om.assemble_nway_tokens(patches, index, query_slot=1)
    with pytest.raises(TypeError, match="fresh must be True or False"):
        om.nway_label_vectors(2, fresh="yes")


def control_results(trained=(0.7, 0.75), fresh=(0.69, 0.74, (-0.01, -0.01)),
                    moved=(0.51, 0.5, (-0.19, -0.25))) -> dict:
    """Results of the 2-way controls built by hand: per format, the GP's and the theory's (N = 10) accuracy on the
    one-shot runs (SE 0.02, chance 0.5) and their paired changes from the trained format (SE 0.02)."""
    def entry(acc, diff=None):
        out = {"accuracy": acc, "se": 0.02}
        if diff is not None:
            out["gain"] = {"difference": diff, "se": 0.02, "n": 400}
        return out

    def fmt(gp, th, diff=None):
        return {"gp": {s: entry(gp, diff and diff[0]) for s in nway.SPLITS},
                "theory": {"10": {s: entry(th, diff and diff[1]) for s in nway.SPLITS}},
                "temperature": {"gp": 0.5, "10": 0.25}, "converged": {"10": True}}

    return {"config": {"widths": [10]}, "ways": {}, "controls": {
        "n_train": 120, "chance": 0.5, "n_eval": {s: 400 for s in nway.SPLITS}, "formats": {
            "trained format": fmt(*trained), "fresh label vectors": fmt(*fresh),
            "the query at its 5-way position": fmt(*moved)}}}


def test_controls_findings_follow_the_numbers():
    """Per changed format and predictor: the paired change and what is left against chance (two SEs), and which
    predictor above chance in the trained format each change brings to chance (a significant drop)."""
    def outcome(**formats):
        found = nway.findings(control_results(**formats)).controls["one_shot_runs"]
        return found, {c.format: (c.outcome, c.all_broken, c.all_to_chance) for c in found.changes}

    found, got = outcome()
    assert found.any_above and [p.chance for p in found.trained] == ["holds", "holds"]
    fresh, moved = found.changes
    assert [p.gain.verdict for p in fresh.predictors] == ["within noise"] * 2
    assert [(p.gain.verdict, p.chance) for p in moved.predictors] == [("fails", "within noise")] * 2
    assert got == {"fresh label vectors": (("kept", "kept"), False, False),
                   "the query at its 5-way position": (("to chance", "to chance"), True, True)}
    assert outcome(moved=(0.6, 0.5, (-0.1, -0.25)))[1]["the query at its 5-way position"] == (
        ("kept", "to chance"), False, False)
    # at chance afterwards without a significant drop: not brought to chance
    assert outcome(moved=(0.53, 0.53, (-0.01, -0.02)))[1]["the query at its 5-way position"] == (
        ("unclear", "unclear"), False, False)
    assert outcome(moved=(0.40, 0.40, (-0.3, -0.35)))[1]["the query at its 5-way position"] == (
        ("below chance", "below chance"), True, False)
    found, got = outcome(trained=(0.52, 0.51), moved=(0.40, 0.40, (-0.3, -0.35)))
    assert not found.any_above and got["the query at its 5-way position"][0] == ("was at chance",) * 2


@pytest.mark.clock
def test_controls_pair_the_same_sequences_across_formats():
    """A tiny real run of controls(): every format scores the same items (paired), and the changed
    formats' differences are those of the per-item correctness."""
    from paththeory import training

    net = training.load_checkpoint()
    cfg = nway.Config((3,), (8,), 6, 6, 6, (10,), (0.5,), n_control=10)
    data = nway.images(net)
    out = nway.controls(cfg, net, data)
    assert set(out["formats"]) == set(nway.CONTROLS) and out["n_train"] == 10
    assert out["n_eval"] == {"validation": 6, "test": 6, "one_shot_runs": 6}
    runs = {name: nway.evaluate_ways(cfg, 2, 10, net, data, tokens, items=True)
            for name, tokens in nway.CONTROLS.items()}
    base = runs["trained format"]["right"]["gp"]
    for name, r in runs.items():
        for s in nway.SPLITS:
            got = out["formats"][name]["gp"][s]
            assert got["accuracy"] == pytest.approx(np.mean(r["right"]["gp"][s]))
            if name != "trained format":
                d = np.asarray(r["right"]["gp"][s], float) - np.asarray(base[s], float)
                assert got["gain"]["difference"] == pytest.approx(d.mean())


def test_positions_extend_the_trained_encoding():
    long = om.positional_encoding(96, 192, standardise_over=48)
    np.testing.assert_array_equal(long[:48], om.positional_encoding(48, 192))
    raw = np.sin(50 * 10000.0 ** (-np.arange(0, 192, 2) / 192))  # position 50, the sines
    short = np.sin(np.arange(48)[:, None] * 10000.0 ** (-np.arange(0, 192, 2) / 192))
    assert np.corrcoef(long[50, ::2], raw)[0, 1] > 0.999 and not np.allclose(long[50, ::2], short[-1])
    with pytest.raises(ValueError, match="standardise_over"):
        om.positional_encoding(40, 192, standardise_over=48)


@pytest.mark.parametrize("n_ways", [2, 5, 20])
def test_one_shot_run_sequences_follow_the_answer_key(n_ways):
    runs = fake_runs()
    index = om.one_shot_run_nway_indices(runs, 0, n_ways)
    total = runs.answers.size
    assert len(index.classes) == total and len(set(index.images[:, -1])) == total  # every test item once
    assert index.images[:, -1].min() >= total  # queries are test drawings, contexts training ones
    assert index.images[:, :-1].max() < total

    def character(i):  # (run, class) of a drawing of one_shot_run_images
        run, k = divmod(i % total, 20)
        return run, (runs.answers[run, k] if i >= total else k)

    check_structure(index, character, n_ways)
    flat = om.one_shot_run_images(runs)
    assert flat.shape[0] == 2 * total


def test_bad_inputs_are_refused_with_clear_messages():
    with pytest.raises(ValueError, match="at least 2"):
        om.nway_indices(LABELS, 0, 10, 1)
    with pytest.raises(ValueError, match="hold only 12"):
        om.nway_indices(LABELS, 0, 10, 13)
    with pytest.raises(ValueError, match="hold only 3"):
        om.nway_indices(LABELS, 0, 10, 4, characters=np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="hold only 20"):
        om.one_shot_run_nway_indices(fake_runs(), 0, 21)
    with pytest.raises(ValueError, match="at least 2"):
        om.one_shot_run_nway_indices(fake_runs(), 0, 1)
    with pytest.raises(ValueError, match="between 1 and 60"):
        om.one_shot_run_nway_indices(fake_runs(), 0, 5, 61)
    with pytest.raises(TypeError, match="OneShotRuns"):
        om.one_shot_run_nway_indices(np.zeros(3), 0, 5)
    with pytest.raises(ValueError, match="at least 2"):
        om.nway_label_vectors(1)
    index = om.nway_indices(LABELS, 0, 3, 5)
    with pytest.raises(ValueError, match="label ids 0..4"):
        om.assemble_nway_tokens(np.zeros((len(LABELS), 16, 64)), index._replace(labels=index.labels + 1))
    with pytest.raises(ValueError, match="ways and n_train"):
        nway.Config((5, 20), (100,), 10, 10, 10, (10,), (0.1,))
    with pytest.raises(ValueError, match=">= 2"):
        nway.Config((1,), (100,), 10, 10, 10, (10,), (0.1,))


def test_argmax_accuracy_and_paired_errors_match_a_hand_loop():
    rng = np.random.default_rng(5)
    classes = {s: rng.integers(0, 5, size=n) for s, n in zip(nway.SPLITS, (7, 11, 13))}
    mean = rng.standard_normal((31, 5))
    right = nway.split_correct(mean, classes)
    row = 0
    for s in nway.SPLITS:
        for k, c in enumerate(classes[s]):
            best = max(range(5), key=lambda j: mean[row, j])
            assert right[s][k] == (best == c)
            row += 1
    a, b = right["one_shot_runs"], rng.random(13) < 0.5
    got = nway.score(a, b)
    d = a.astype(float) - b
    assert got["accuracy"] == pytest.approx(sum(a) / 13)
    assert got["se"] == pytest.approx(math.sqrt(got["accuracy"] * (1 - got["accuracy"]) / 13))
    assert got["gain"]["difference"] == pytest.approx(d.mean())
    assert got["gain"]["se"] == pytest.approx(math.sqrt(sum((d - d.mean()) ** 2) / 12 / 13))
    with pytest.raises(ValueError, match=r"mean must be \[31, C\]"):
        nway.split_correct(mean[:30], classes)


def way_results() -> dict:
    """Results of one C = 5 built by hand: on the test split the GP and the theory (N = 10) at chance, on the runs
    the theory above chance and above the GP (paired 0.1 ± 0.01)."""
    def entry(acc, se, diff):
        return {"accuracy": acc, "se": se, "gain": {"difference": diff, "se": 0.01, "n": 400}}

    way = {"chance": 0.2, "n_eval": {"test": 400, "one_shot_runs": 400}, "converged": {"10": True},
           "gp": {"test": entry(0.21, 0.02, 0), "one_shot_runs": entry(0.5, 0.025, 0)},
           "theory": {"10": {"test": entry(0.2, 0.02, -0.01), "one_shot_runs": entry(0.6, 0.024, 0.1)}}}
    for r in (way["gp"], way["theory"]["10"]):
        r["validation"] = r["test"]
    return {"config": {"widths": [10]}, "ways": {"5": way}, "controls": control_results()["controls"]}


def test_verdicts_say_at_chance_when_the_accuracy_is_chance():
    found = nway.findings(way_results())
    gp, theory = found.ways["5"]["test"]
    assert (gp.name, gp.chance, theory.name, theory.chance, theory.gain.verdict) == (
        "gp", "within noise", "10", "within noise", "within noise")
    gp, theory = found.ways["5"]["one_shot_runs"]
    assert (gp.chance, theory.chance, theory.gain.verdict, theory.gain.difference) == ("holds", "holds", "holds", 0.1)
    assert found.converged == {"5": True}


def test_feature_batches_bound_the_attention_memory():
    for c in (2, 5, 20):
        b = nway.feature_batch(c, 4)
        assert b >= 1 and b * 8 * 4 * (16 * (c + 1)) ** 2 <= 2**27


def test_the_gp_of_the_pipeline_is_dense_kernel_regression_on_a_tiny_case():
    from paththeory import training

    net = training.load_checkpoint()
    cfg = nway.Config((3,), (8,), 6, 6, 6, (10,), (0.5,))
    data = nway.images(net)
    prob = nway.nway_problem(cfg, 3, 8, net, data)
    f, y = prob["features"], prob["y_train"]
    assert f["train"].shape == (8, net.architecture.n_paths, 192) and y.shape == (8, 3)
    np.testing.assert_allclose(y.sum(axis=1), 0.0, atol=1e-12)  # simplex code

    def kernel(a, b):  # the GP kernel: the same for every output, no output-output blocks
        return net.architecture.gp_scale * np.einsum("apn,bpn->ab", a, b)

    alpha = np.linalg.solve(kernel(f["train"], f["train"]) + 0.5 * np.eye(8), y)
    out = nway.evaluate_ways(cfg, 3, 8, net, data)
    for s in nway.SPLITS:
        hand = np.argmax(kernel(f[s], f["train"]) @ alpha, axis=1) == prob["classes"][s]
        assert out["gp"][s]["accuracy"] == pytest.approx(hand.mean())
        assert 0 <= out["theory"]["10"][s]["accuracy"] <= 1
    assert out["ratio"]["10"] == pytest.approx(3 * net.architecture.n_paths / 10)


def _attention_to(blocks_of: np.ndarray, n_ways: int, heads: int = 2) -> np.ndarray:
    """``[P, H, T, T]`` attention in which every query token of sequence ``b`` attends uniformly to the
    tokens of image ``blocks_of[b]`` (key index ``s``, query index ``t``), for every head."""
    n, t = len(blocks_of), 16 * (n_ways + 1)
    attn = np.zeros((n, heads, t, t))
    for b, block in enumerate(blocks_of):
        attn[b, :, 16 * block:16 * (block + 1), :] = 1 / 16
    return attn


def test_match_share_is_one_on_the_match_and_one_over_c_when_uniform():
    n_ways = 5
    index = om.nway_indices(LABELS, np.random.default_rng(0), 30, n_ways)
    match = np.argmax(index.labels[:, :n_ways] == index.classes[:, None], axis=1)
    assert np.allclose(nway.match_share(_attention_to(match, n_ways), index), 1.0)
    assert np.allclose(nway.match_share(_attention_to((match + 1) % n_ways, n_ways), index), 0.0)
    uniform = np.full((30, 2, 96, 96), 1 / 96)
    assert np.allclose(nway.match_share(uniform, index), 1 / n_ways)
    blocks = nway.block_attention(_attention_to(np.full(30, n_ways), n_ways), n_ways)  # all on the query
    assert blocks.shape == (30, 2, n_ways + 1) and np.allclose(blocks[..., -1], 1) and np.allclose(blocks.sum(axis=2), 1)
    assert np.allclose(nway.block_attention(uniform, n_ways), 1 / (n_ways + 1))
    with pytest.raises(ValueError, match="T = 96 tokens"):
        nway.match_share(np.zeros((30, 2, 48, 48)), index)


def attention_measurements() -> dict:
    """Per-C measurements of query_attention built by hand, two heads: at C = 2 head 1.2 (0.9) far above chance and
    head 1.1 (0.52 ± 0.02) not (Bonferroni z = 1.96 for 2 heads); at C = 5 neither."""
    def entry(chance, share, se, on_query, on_33_48):
        return {"chance": chance, "uniform": chance * 2 / 3 if chance == 0.5 else 1 / 6, "n": 200,
                "share": [share], "se": [se], "on_query": [on_query], "on_query_se": [[0.01, 0.01]],
                "on_trained_query": [on_33_48], "on_trained_query_se": [[0.02, 0.02]]}

    return {"2": entry(0.5, [0.52, 0.9], [0.02, 0.02], [0.4, 0.8], [0.4, 0.8]),
            "5": entry(0.2, [0.2, 0.19], [0.02, 0.02], [0.3, 0.05], [0.1, 0.4])}


def test_query_attention_findings_test_each_head_at_the_family_wise_level():
    att = attention_measurements()
    found = nway.attention_findings(att)
    two, five = found.ways
    assert two.z == pytest.approx(1.95996, abs=1e-4) and two.heads == 2 and found.alpha == 0.05
    assert (two.above, two.best, five.above, five.best) == (((0, 1),), (0, 1), (), (0, 0))
    assert (found.trained_above, found.lost, found.query_head) == (True, True, (0, 1))
    att["2"]["share"] = [[0.5, 0.5]]
    found = nway.attention_findings(att)
    assert (found.trained_above, found.lost) == (False, False)
    assert nway.attention_findings({"5": att["5"]}).query_head is None
    assert nway.attention_findings(att, alpha=1.0).ways[0].z == pytest.approx(0.0, abs=1e-12)  # 1 - 1 / 2: the median
