"""Tests of the in-context image task (paththeory.tasks.omniglot; the paper's §4.2, Fig. 3a, App. H).

Oracles: an independent numpy antialiased-bilinear resize (PIL's two 8-bit passes), a
loop-by-loop re-implementation of the authors' token pipeline (3-channel tensor, einops
patch order (p1, p2, c), LayerNorm over 192 features, torch-style sinusoidal encoding),
the one-shot runs' answer key, MNIST class indices computed here, and binomial error bars.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from paththeory.tasks import data
from paththeory.tasks import omniglot as om

SHARED = data.BUNDLED_DATA  # the copies shipped in the package


@pytest.fixture(scope="module")
def omni():
    s = data.load_omniglot("background_small", root=SHARED, download=False)
    return s, om.encode_images(s.images)


@pytest.fixture(scope="module")
def runs():
    return data.load_one_shot_runs(root=SHARED, download=False)


def resize_oracle(image: np.ndarray, n: int) -> np.ndarray:
    """Antialiased bilinear (triangle filter widened by the shrink factor), rows then columns, round half up."""

    def weights(n_in):
        scale = n_in / n
        centre = (np.arange(n) + 0.5) * scale
        w = np.clip(1 - np.abs(np.arange(n_in)[None] + 0.5 - centre[:, None]) / max(scale, 1.0), 0, None)
        return w / w.sum(1, keepdims=True)

    horizontal = np.clip(np.floor(image.astype(float) @ weights(image.shape[1]).T + 0.5), 0, 255)
    return np.clip(np.floor(weights(image.shape[0]) @ horizontal + 0.5), 0, 255)


def reference_tokens(images3, labels3, mean, std, channels, label_seed):
    """The authors' pipeline for one sequence, written out loop by loop: [48, 64 * channels]."""
    dim = 64 * channels
    div = np.exp(np.arange(0, dim, 2) * (-math.log(10000.0) / dim))
    pe = np.zeros((48, dim))
    pe[:, 0::2] = np.sin(np.arange(48)[:, None] * div)
    pe[:, 1::2] = np.cos(np.arange(48)[:, None] * div)
    pe = (pe - pe.mean()) / (pe.std(ddof=1) + 1e-6)
    emb = np.random.default_rng(label_seed).standard_normal((3, dim))
    tokens = []
    for image, label in zip(images3, labels3):
        t = (om.resize(image[None])[0] / 255.0 - mean) / std
        c = np.stack([t] * channels)  # Lambda(x.repeat(3, 1, 1))
        for h in range(4):
            for w in range(4):
                p = np.array([c[ch, h * 8 + p1, w * 8 + p2]
                              for p1 in range(8) for p2 in range(8) for ch in range(channels)])
                tokens.append((p - p.mean()) / np.sqrt(p.var() + 1e-5) + emb[label])
    return np.array(tokens) + pe


def test_resize_matches_independent_antialiased_bilinear(omni):
    s, _ = omni
    rng = np.random.default_rng(0)
    mnist = data.load_mnist("test", root=SHARED, download=False).images[:200]
    for images in (s.images[::25], mnist, rng.integers(0, 256, (40, 105, 105), dtype=np.uint8)):
        ours = om.resize(images).astype(int)
        ref = np.stack([resize_oracle(im, 32) for im in images]).astype(int)
        assert ours.shape == (len(images), 32, 32)
        diff = np.abs(ours - ref)
        assert diff.max() <= 1 and np.mean(diff > 0) < 2e-3  # PIL's fixed-point weights: off by one, rarely
    np.testing.assert_array_equal(om.resize(np.full((1, 105, 105), 77, np.uint8)), 77)


@pytest.mark.parametrize("channels", [3, 1])
def test_tokens_match_reference_pipeline(omni, channels):
    s, patches = omni
    index = om.icl_indices(s.labels, 5, 4)
    x, y = om.icl_sequences(patches, s.labels, 5, 4, channels=channels, label_seed=11)
    assert x.shape == (4, 48, 64 * channels) and x.dtype == np.float64
    np.testing.assert_array_equal(y, index.y)
    for p in range(4):
        ref = reference_tokens(s.images[index.images[p]], index.labels[p], 0.922, 0.084, channels, 11)
        np.testing.assert_allclose(x[p], ref, rtol=0, atol=1e-10)


def test_layernorm_blank_patches_and_label_vectors(omni):
    s, patches = omni
    index = om.icl_indices(s.labels, 2, 200)
    x, _ = om.icl_sequences(patches, s.labels, 2, 200)
    pe, emb = om.positional_encoding(), om.label_vectors()
    residual = x - pe  # LN(patch) + E
    token_labels = np.repeat(index.labels, 16, axis=1)  # [P, 48]
    ln = residual - emb[token_labels]
    np.testing.assert_allclose(ln.mean(-1), 0, atol=1e-12)
    small = om.resize(s.images[index.images.ravel()]).reshape(200, 3, 4, 8, 4, 8)
    blank = (small.min(axis=(3, 5)) == small.max(axis=(3, 5))).reshape(200, 48)  # constant 8x8 patches
    assert 0 < blank.mean() < 1
    np.testing.assert_allclose(ln[blank], 0.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(om.encode_images(np.full((1, 105, 105), 255, np.uint8)), 0.0, rtol=0, atol=1e-12)
    v = ((small / 255.0 - 0.922) / 0.084).var(axis=(3, 5)).reshape(200, 48)  # biased variance per patch
    np.testing.assert_allclose(ln.var(-1), v / (v + 1e-5), rtol=1e-9, atol=1e-12)
    assert np.median(ln[~blank].var(-1)) > 0.999
    # E2 sits on exactly the 16 query tokens, E0/E1 on the two contexts (one each)
    assert np.all(index.labels[:, 2] == 2) and np.all(np.sort(index.labels[:, :2], 1) == [0, 1])
    for label in range(3):
        on = token_labels == label
        np.testing.assert_allclose((residual - ln)[on], np.broadcast_to(emb[label], (on.sum(), 192)), atol=1e-12)
    assert on[:, 32:].all() and not on[:, :32].any()


def test_positional_encoding_is_globally_standardised():
    for dim in (192, 64):
        pe = om.positional_encoding(48, dim)
        assert pe.shape == (48, dim)
        assert abs(pe.mean()) < 1e-12 and abs(pe.std(ddof=1) - 1) < 1e-5
    with pytest.raises(ValueError, match="even"):
        om.positional_encoding(48, 63)


def test_split_characters_disjoint_and_seeded():
    split = om.split_characters(242, validation=0.1, test=0.25, seed=3)
    parts = (split.train, split.validation, split.test)
    assert [len(p) for p in parts] == [242 - 24 - 60, 24, 60]
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(242))  # disjoint and complete
    again = om.split_characters(242, validation=0.1, test=0.25, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(parts, (again.train, again.validation, again.test)))
    assert not np.array_equal(om.split_characters(242, seed=4).test, split.test)
    with pytest.raises(ValueError, match="fractions"):
        om.split_characters(242, validation=0.5, test=0.5)
    with pytest.raises(ValueError, match="fewer than 2"):
        om.split_characters(4, validation=0.3, test=0.4)


def test_icl_indices_pairs_drawings_and_statistics(omni):
    s, _ = omni
    split = om.split_characters(s.n_classes, seed=0)
    n = 4000
    idx = om.icl_indices(s.labels, 7, n, characters=split.test)
    chars = s.labels[idx.images]  # [n, 3]
    assert np.isin(chars, split.test).all()  # held-out characters only
    match = np.where(chars[:, 0] == chars[:, 2], 0, 1)
    assert np.all(chars[np.arange(n), match] == chars[:, 2])  # one context shares the query's character
    assert np.all(chars[np.arange(n), 1 - match] != chars[:, 2])  # the other does not
    assert np.all(idx.images[np.arange(n), match] != idx.images[:, 2])  # ... in a different drawing
    np.testing.assert_array_equal(idx.y, 2.0 * idx.labels[np.arange(n), match] - 1)
    se = 0.5 / math.sqrt(n)  # binomial standard error; 4 se bands
    assert abs(np.mean(match == 0) - 0.5) < 4 * se and abs(np.mean(idx.y == 1) - 0.5) < 4 * se
    assert abs(np.mean(idx.labels[:, 0] == 0) - 0.5) < 4 * se
    assert len(np.unique(chars[:, 2])) == len(split.test)


def test_balanced_and_reproducible(omni):
    s, patches = omni
    x, y = om.icl_sequences(patches, s.labels, 1, 600, balanced=True)
    np.testing.assert_array_equal(y, np.repeat([1.0, -1.0], 300))
    x2, y2 = om.icl_sequences(patches, s.labels, np.random.default_rng(1), 600, balanced=True)
    np.testing.assert_array_equal(x, x2)
    x3, _ = om.icl_sequences(patches, s.labels, 2, 600, balanced=True)
    assert not np.array_equal(x, x3)
    rng = np.random.default_rng(9)  # a generator advances: fresh batches
    a, _ = om.icl_sequences(patches, s.labels, rng, 8)
    b, _ = om.icl_sequences(patches, s.labels, rng, 8)
    assert not np.array_equal(a, b)


def test_one_shot_run_sequences_follow_the_answer_key(runs):
    idx = om.one_shot_run_indices(runs, 0)
    n = len(idx.y)
    assert n == 20 * 20 * 19 and len(np.unique(idx.images, axis=0)) == n
    pool = om.one_shot_run_images(runs)
    assert pool.shape == (800, 105, 105)
    query = idx.images[:, 2] - 400  # test drawings come after the 400 training drawings
    assert np.all(query >= 0)
    run, item = np.divmod(query, 20)
    match = np.where(idx.images[:, 0] == run * 20 + runs.answers[run, item], 0, 1)
    np.testing.assert_array_equal(idx.images[np.arange(n), match], run * 20 + runs.answers[run, item])
    other = idx.images[np.arange(n), 1 - match]
    assert np.all(other // 20 == run) and np.all(other != idx.images[np.arange(n), match])
    np.testing.assert_array_equal(pool[idx.images[:5, 2]], runs.test[run[:5], item[:5]])
    np.testing.assert_array_equal(idx.y, 2.0 * idx.labels[np.arange(n), match] - 1)
    x, y = om.one_shot_run_sequences(runs, 3, 100, balanced=True, channels=1)
    assert x.shape == (100, 48, 64)
    np.testing.assert_array_equal(y, np.repeat([1.0, -1.0], 50))


def test_ood_mnist_from_the_test_set(monkeypatch, tmp_path):
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "torchvision", None)  # no download attempt
    m = data.load_mnist("test", root=SHARED, download=False)
    with pytest.warns(UserWarning, match="test set"):
        x, y = om.ood_sequences("mnist", 50, root=SHARED)
    assert x.shape == (100, 48, 192)
    np.testing.assert_array_equal(y, np.repeat([-1.0, 1.0], 50))
    zeros, ones = np.flatnonzero(m.labels == 0), np.flatnonzero(m.labels == 1)
    queries = np.concatenate([zeros[:50], ones[:50]])
    i = np.arange(100)
    ctx0, ctx1 = zeros[50:][i % (len(zeros) - 50)], ones[50:][i % (len(ones) - 50)]
    assert not np.isin(np.concatenate([ctx0, ctx1]), queries).any()  # disjoint parts of the test set
    for p in (0, 99):
        ref = reference_tokens(m.images[[ctx0[p], ctx1[p], queries[p]]], [0, 1, 2], 0.1307, 0.3081, 3, 0)
        np.testing.assert_allclose(x[p], ref, rtol=0, atol=1e-10)
    with pytest.raises(data.DataNotFoundError):
        om.ood_sequences("mnist", 50, context="train", root=SHARED)


def test_ood_fashion_from_the_shipped_subset(monkeypatch, tmp_path):
    """Fashion-MNIST, the paper's OOD set of Fig. 3: the shipped 4,443-image subset, T-shirt/top vs
    trouser, balanced labels, contexts from the other half of the test images (disjoint from the queries)."""
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "torchvision", None)  # no download attempt
    f = data.load_mnist("test", fashion=True, root=SHARED, download=False)
    assert len(f.labels) == 4443 and "4,443" in f.note and "10,000" in f.note
    shirts, trousers = np.flatnonzero(f.labels == 0), np.flatnonzero(f.labels == 1)
    with pytest.warns(UserWarning, match="test set"):
        x, y = om.ood_sequences("fashion", None, root=SHARED)
    n = min(len(shirts), len(trousers)) // 2
    assert n == 214 and x.shape == (2 * n, 48, 192)
    assert (y == 1).sum() == (y == -1).sum() == n  # balanced labels
    np.testing.assert_array_equal(y, np.repeat([-1.0, 1.0], n))
    ctx0, ctx1 = shirts[n:][np.arange(2 * n) % (len(shirts) - n)], trousers[n:][np.arange(2 * n) % (len(trousers) - n)]
    queries = np.concatenate([shirts[:n], trousers[:n]])
    for p in (0, n, 2 * n - 1):
        ref = reference_tokens(f.images[[ctx0[p], ctx1[p], queries[p]]], [0, 1, 2], 0.286, 0.353, 3, 0)
        np.testing.assert_allclose(x[p], ref, rtol=0, atol=1e-10)
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="between 1 and"):
        om.ood_sequences("fashion", 500, root=SHARED)  # more queries than the subset holds


def test_ood_with_training_contexts_from_generated_files(tmp_path):
    rng = np.random.default_rng(4)
    sets = {"train": rng.integers(0, 3, 40), "t10k": np.array([1, 0, 2, 0, 1, 1, 0, 2, 0, 1])}
    images = {}
    for prefix, labels in sets.items():
        images[prefix] = rng.integers(0, 256, (len(labels), 28, 28), dtype=np.uint8)
        for kind, array in (("images-idx3", images[prefix]), ("labels-idx1", labels.astype(np.uint8))):
            path = tmp_path / "fashion_mnist" / f"{prefix}-{kind}-ubyte"  # uncompressed: no md5 to check
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(bytes([0, 0, 8, array.ndim]) + np.array(array.shape, ">u4").tobytes() + array.tobytes())
    x, y = om.ood_sequences("fashion", 2, context="train", root=tmp_path, download=False, channels=1)
    test0, test1 = np.flatnonzero(sets["t10k"] == 0), np.flatnonzero(sets["t10k"] == 1)
    train0, train1 = np.flatnonzero(sets["train"] == 0), np.flatnonzero(sets["train"] == 1)
    position = [0, 1, len(test0), len(test0) + 1]  # among all class-0 then all class-1 test images
    queries = [test0[0], test0[1], test1[0], test1[1]]
    np.testing.assert_array_equal(y, [-1, -1, 1, 1])
    for p in range(4):
        imgs = np.stack([images["train"][train0[position[p]]], images["train"][train1[position[p]]],
                         images["t10k"][queries[p]]])
        ref = reference_tokens(imgs, [0, 1, 2], 0.286, 0.353, 1, 0)
        np.testing.assert_allclose(x[p], ref, rtol=0, atol=1e-10)


def test_bad_inputs_raise_clear_errors(omni, runs):
    s, patches = omni
    with pytest.raises(ValueError, match="at least 2 characters"):
        om.icl_indices(s.labels, 0, 4, characters=[3])
    with pytest.raises(ValueError, match="even"):
        om.icl_indices(s.labels, 0, 5, balanced=True)
    with pytest.raises(ValueError, match="no images"):
        om.icl_indices(s.labels, 0, 4, characters=[0, 9999])
    with pytest.raises(ValueError, match="patches"):
        om.icl_sequences(patches[:10], s.labels, 0, 4)
    with pytest.raises(ValueError, match="uint8"):
        om.resize(np.zeros((2, 28, 28)))
    with pytest.raises(ValueError, match="between 1 and 7600"):
        om.one_shot_run_indices(runs, 0, 7601)
    with pytest.raises(ValueError, match="dataset"):
        om.ood_sequences("cifar")
