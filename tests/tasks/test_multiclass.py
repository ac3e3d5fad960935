"""The C-class hidden-Markov-chain task (paththeory.tasks.multiclass) against independent oracles.

Oracles: the stationary distribution of a circulant chain (uniform: occupancies equal across
classes), the transition probabilities the chains were drawn with (counted back from the states),
the attention the heads should give on noise-free sequences (worked out by hand in the module's
docstring), and the geometry of the simplex code.
"""

from __future__ import annotations

import numpy as np
import pytest

import paththeory as pt
from paththeory.tasks import multiclass as mc

SMALL = dict(n_features=12, seq_len=8)


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_transition_probabilities_are_distinct_points_of_the_simplex(n_classes):
    p = mc.transition_probs(n_classes)
    assert p.shape == (n_classes, 3) and np.all(p > 0)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-15)
    gaps = np.linalg.norm(p[:, None] - p[None], axis=-1)[np.triu_indices(n_classes, 1)]
    assert gaps.min() > 0.1


@pytest.mark.parametrize("n_classes", [3, 5])
def test_occupancies_are_equal_across_classes_and_transitions_are_not(n_classes):
    """Per class: state frequencies 1/3 within 5 binomial SEs; step frequencies = transition_probs within 5 SEs."""
    data = mc.sample_task(600 * n_classes, n_classes=n_classes, seed=3, **SMALL)
    probs = mc.transition_probs(n_classes)
    for c in range(n_classes):
        states = data.states[data.classes == c]
        occupancy = np.bincount(states.ravel(), minlength=3) / states.size
        se = np.sqrt((1 / 3) * (2 / 3) / states.shape[0])  # positions of one chain are correlated: one SE per chain
        assert np.all(np.abs(occupancy - 1 / 3) < 5 * se), (c, occupancy)
        counts = mc.transition_counts(states)
        freq = counts.sum(axis=0) / counts.sum()
        se_t = np.sqrt(probs[c] * (1 - probs[c]) / counts.sum())
        assert np.all(np.abs(freq - probs[c]) < 5 * se_t), (c, freq, probs[c])
    assert np.ptp(probs[:, 0]) > 0.3  # the classes differ in their "same" probability


def test_labels_simplex_and_one_hot():
    classes = np.array([0, 1, 2, 1])
    s = mc.encode_labels(classes, 3)
    np.testing.assert_allclose(np.linalg.norm(s, axis=1), 1.0)
    np.testing.assert_allclose(s[0] @ s[1], -0.5)  # -1 / (C - 1)
    np.testing.assert_allclose(s.sum(axis=1), 0.0, atol=1e-15)
    onehot = mc.encode_labels(classes, 3, "onehot")
    np.testing.assert_array_equal(onehot, np.eye(3)[classes])
    for labels in (s, onehot):
        np.testing.assert_array_equal(np.argmax(labels, axis=1), classes)
    data = mc.sample_task(6, n_classes=3, coding="onehot", **SMALL)
    assert data.y.shape == (6, 3) and data.classes.tolist() == [0, 0, 1, 1, 2, 2]


def test_detector_heads_attend_to_the_previous_token_exactly_on_their_transition():
    """Noise-free chains: query t >= 2 attends to t - 1 if the step s_{t-1} -> s_t is the head's type, to
    bos otherwise. The target's score beats each of the other T keys by at least beta / 2 (the scores in
    the module's docstring), so its weight is at least 1 / (1 + T exp(-beta / 2))."""
    arch = mc.four_paths(**SMALL)
    data = mc.sample_task(30, seed=5, sigma=0.0, **SMALL)
    attn = np.asarray(pt.attention_matrices(arch, data.x)[0])  # [B, H, key, query]
    steps = np.diff(data.states, axis=1) % 3  # step into token t + 2 (tokens: bos, s_1, ..., s_T)
    for head, kind in enumerate((0, 1)):  # same, forward
        for t in range(2, SMALL["seq_len"] + 1):
            match = steps[:, t - 2] == kind
            target = np.where(match, t - 1, 0)
            weight = attn[np.arange(30), head, target, t]
            bound = 1.0 / (1.0 + SMALL["seq_len"] * np.exp(-mc.BETA / 2))
            assert np.all(weight >= bound - 1e-12), (head, t, weight.min(), bound)


def test_paths_are_named_and_theory_accepts_both_codings():
    from paththeory.solve import Theory

    arch = mc.four_paths(**SMALL)
    assert arch.n_paths == len(mc.PATH_NAMES) == 4
    for coding in ("simplex", "onehot"):
        data = mc.sample_task(12, coding=coding, **SMALL)
        sol = Theory(arch, pt.path_features(arch, data.x), data.y).solve(20, 0.1)
        assert sol.U.shape == (12, 12) and sol.report["converged"]


@pytest.mark.parametrize("kwargs,message", [
    (dict(n_examples=7), "multiple of n_classes"),
    (dict(n_examples=6, n_classes=1), "at least 2"),
    (dict(n_examples=6, strength=1.2), "strength"),
    (dict(n_examples=6, n_features=10), "multiple of 6"),
    (dict(n_examples=6, coding="binary"), "coding"),
    (dict(n_examples=6, sigma=-1.0), "sigma"),
])
def test_bad_inputs_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mc.sample_task(**{"seq_len": 4, **kwargs})


def test_bad_labels_and_heads_are_refused():
    with pytest.raises(ValueError, match="whole numbers in 0..2"):
        mc.encode_labels([0, 3], 3)
    with pytest.raises(ValueError, match="kind"):
        mc.transition_head("backward")
    with pytest.raises(ValueError, match="summing to 1"):
        mc.hidden_chains(2, [0.5, 0.5, 0.5], 4, np.random.default_rng(0))


# --------------------------------------------------------------------------- the chapter's experiment


def test_nearest_kronecker_matches_alternating_least_squares():
    """Van Loan-Pitsianis against an independent minimiser of |U - A (x) B|_F (alternating least squares),
    and exact on a Kronecker product."""
    from paththeory.experiments.multiclass import nearest_kronecker

    rng = np.random.default_rng(0)
    A0, B0 = rng.normal(size=(3, 3)), rng.normal(size=(4, 4))
    A0, B0 = A0 @ A0.T + np.eye(3), B0 @ B0.T + np.eye(4)
    np.testing.assert_allclose(nearest_kronecker(np.kron(A0, B0), 3), np.kron(A0, B0), rtol=1e-10, atol=1e-10)

    M = rng.normal(size=(12, 12))
    U = M @ M.T + np.kron(A0, B0)
    blocks = U.reshape(3, 4, 3, 4).transpose(0, 2, 1, 3)  # [c, d, pi, sigma]
    A, B = np.eye(3), np.eye(4)
    for _ in range(500):  # each step is the exact least-squares update of one factor
        A = np.einsum("cdps,ps->cd", blocks, B) / np.sum(B * B)
        B = np.einsum("cdps,cd->ps", blocks, A) / np.sum(A * A)
    best = np.linalg.norm(U - np.kron(A, B))
    got = nearest_kronecker(U, 3)
    assert np.linalg.norm(U - got) <= best * (1 + 1e-8)
    assert np.linalg.eigvalsh(got).min() >= -1e-10
    with pytest.raises(ValueError, match="C n_paths"):
        nearest_kronecker(np.eye(10), 3)


@pytest.mark.slow
def test_experiment_runs_end_to_end_at_a_tiny_size(tmp_path, monkeypatch):
    """A tiny config through run(): every comparison present, verdict rows generated, outputs written;
    the N-way section (stubbed here: tests/experiments/test_omniglot_nway.py checks it) joins the results when
    writing them."""
    from paththeory.experiments import multiclass as ex
    from paththeory.experiments import omniglot_nway

    cfg = ex.Config(n_features=6, seq_len=4, n_classes=3, n_train=12, n_test=30, temperature=0.1,
                    sample_widths=(10,), num_warmup=20, num_samples=20, num_chains=2, time_limit=3600.0,
                    scaling_classes=(2, 3), per_class=4, p_over_n=0.5, gibbs_widths=(30,), gibbs_warmup=20,
                    gibbs_samples=40, gibbs_chains=2)
    with pytest.raises(TypeError, match="nway must be True or False"):
        ex.run("smoke", config=cfg, nway="yes")
    monkeypatch.setattr(omniglot_nway, "images", lambda network: {"chars": None})
    monkeypatch.setattr(omniglot_nway, "run", lambda profile, network, data: {"profile": profile, "ways": {}, **data})
    results = ex.run("smoke", tmp_path, config=cfg, progress=False)
    assert results["nway"] == {"profile": "smoke", "ways": {}, "chars": None}
    assert (tmp_path / "results.json").exists() and (tmp_path / "order_parameter.png").exists()
    mixed = results["widths"]["30"]["diagnostics"]["r_hat_U_max"] <= ex.R_HAT_OK
    assert ex.valid_widths(results) == (["30"] if mixed else [])  # C |Pi| / N = 1.2 and 0.4; chains mixed or not
    # each width records its sampler, and its diagnostics are that sampler's
    assert results["samplers"] == {"10": "nuts", "30": "gibbs"} and list(results["widths"]) == ["10", "30"]
    for w, sampler in results["samplers"].items():
        r = results["widths"][w]
        assert r["sampler"] == r["diagnostics"]["method"] == sampler
        assert set(r["accuracy"]) == set(r["correct"]) == {"theory", "sampled", *ex.COMPETITORS}
        assert set(r["theory_vs_sampled"]) == {"U", "mean", "cov"}
    assert results["widths"]["30"]["diagnostics"]["draws_used"] == 2 * 40
    ids = {r["id"] for r in results["claims"]}
    assert {"gain_vs_classes"} | ({"u_sampled", "mean_vs_gp", "acc_vs_independent", "acc_vs_kronecker"} if mixed
                                  else set()) <= ids
    assert all(r["source"] == "this book's own test" for r in results["claims"])
    assert all("Gibbs samples" in r["claim"] for r in results["claims"] if r["id"] in ("u_sampled", "mean_vs_gp"))
    d = results["decoupling"]
    assert d["width"] == 10.0
    assert d["off_block_max"] < 1e-6 * d["live_trace"] and d["first_block_vs_single"] < 1e-6 * d["live_trace"]
    found = ex.stored_findings(results)
    assert found == ex.findings(results) and found.structure_width == 30 and found.valid_widths == ((30,) if mixed else ())
    assert found.decoupling.exact and [w.sampler for w in found.widths] == ["nuts", "gibbs"]
    assert found.widths[1].batch_means == 2 * 10  # 2 chains of 40 sweeps, 10 batches each
    from paththeory.reports import multiclass as report

    for text in (report.sampled_table(results), report.comparison_table(results), report.accuracy_table(results),
                 report.scaling_table(results), report.scaling_sentence(results), report.comparison_sentence(results),
                 report.decoupling_sentence(results), report.block_sentence(results),
                 report.resolution_sentence(results), report.sampler_sentence(results),
                 report.sampler_speed_table(results)):
        assert text and "nan" not in text.lower()


def test_profiles_sample_with_gibbs_exactly_where_its_measured_lead_is_at_least_twofold():
    """Every profile samples with NUTS only below the widths where the measured Gibbs lead (SAMPLER_SPEED) is
    at least twofold, and with Gibbs only from there on; a width in both lists is refused."""
    from paththeory.experiments import multiclass as ex
    from paththeory.experiments import samplers

    def lead(w):
        m = ex.SAMPLER_SPEED[w]
        return min(m["gibbs"][0] / g / (m["nuts"][0] / n) for g, n in zip(m["gibbs"][2], m["nuts"][2]))

    first_win = min(w for w in ex.SAMPLER_SPEED if all(lead(v) >= 2 for v in ex.SAMPLER_SPEED if v >= w))
    for name, cfg in ex.SETTINGS.items():
        assert max(cfg.sample_widths, default=0) < first_win <= min(cfg.gibbs_widths), name
        assert list(samplers(cfg)) == sorted({*cfg.sample_widths, *cfg.gibbs_widths}), name
    speed = {s.width: s for s in ex.sampler_speed()}
    assert speed[30].lead == pytest.approx((4.0, 4.2488), abs=1e-3)  # two runs at N = 30: least and most
    assert speed[300].rate["gibbs"] == (569.3 / 23.0, 569.3 / 23.0)  # one run
    with pytest.raises(ValueError, match="one sampler only; N = 30"):
        ex.Config(6, 4, 3, 12, 30, 0.1, (30,), 20, 20, 2, 3600.0, (2, 3), 4, 0.5, gibbs_widths=(30,))


def test_cli_reproduce_accepts_multiclass(tmp_path):
    from paththeory.cli import build_parser

    args = build_parser().parse_args(["reproduce", "multiclass", "--profile", "smoke", "--out", str(tmp_path)])
    assert args.experiment == "multiclass"


# --------------------------------------------------------------------------- the chapter's findings


def fake_results(cov=(0.149, 0.0683), gains=((0.073, 0.017), (0.08, 0.022), (-0.037, 0.022))) -> dict:
    """Results of :func:`paththeory.experiments.multiclass.run` built by hand (C = 3, 4 paths), at N = 30 (Gibbs,
    C |Pi| / N = 0.4) and N = 10 (NUTS, 1.2): the theory's ``U`` the identity, the samples' with off-diagonal blocks
    of 0.1; the covariance's distance ``cov`` = (d, s); finite width's gains over the GP at C = 2, 3, 5."""
    U = np.eye(12)
    sampled = U + 0.1 * (np.kron(np.ones((3, 3)), np.eye(4)) - np.eye(12))
    right = {"theory": [1, 1, 1, 0, 1, 0], "sampled": [1, 1, 0, 0, 1, 0], "gp": [0, 1, 0, 0, 0, 0],
             "independent": [1, 1, 1, 0, 1, 0], "kronecker": [1, 0, 1, 0, 1, 1]}

    def width(sampler, ratio, errors, noise):
        return {"sampler": sampler, "ratio": ratio, "U_theory": U.tolist(), "U_sampled": sampled.tolist(),
                "batch_means": 20, "noise": {"U": noise, "mean": noise, "cov": cov[1]},
                "errors": {k: {"U": e, "mean": e} for k, e in errors.items()},
                "theory_vs_sampled": {"U": errors["theory"], "mean": errors["theory"], "cov": cov[0]},
                "accuracy": {k: sum(v) / 6 for k, v in right.items()}, "correct": right,
                "diagnostics": {"r_hat_max": 1.02, "r_hat_U_max": 1.005, "ess_bulk_min": 205.0, "ess_per_second": 55.3,
                                "seconds": 4.0, "method": sampler}}

    return {"config": {"n_classes": 3, "num_warmup": 60, "num_samples": 80, "num_chains": 2, "gibbs_warmup": 100,
                       "gibbs_samples": 400, "gibbs_chains": 2},
            "n_paths": 4, "samplers": {"10": "nuts", "30": "gibbs"},
            "widths": {"10": width("nuts", 1.2, {"theory": 0.3, "gp": 0.9, "independent": 0.5, "kronecker": 0.31},
                                   0.02),
                       "30": width("gibbs", 0.4, {"theory": 0.05, "gp": 0.45, "independent": 0.174,
                                                  "kronecker": 0.035}, 0.02)},
            "decoupling": {"off_block_max": 1e-9, "first_block_vs_single": 2e-9, "live_trace": 2.0,
                           "dead_trace": 0.71},
            "scaling": {str(c): {"n_train": 20 * c, "width": 40 * c / 3, "ratio": 0.3, "chance": 1 / c,
                                 "theory": 0.6, "gp": 0.55, "gain": {"difference": g, "se": se, "n": 300}}
                        for c, (g, se) in zip((2, 3, 5), gains)}}


def with_findings(results: dict) -> dict:
    from paththeory.experiments import multiclass as ex
    from paththeory.experiments.records import jsonable

    return {**results, "findings": jsonable(ex.findings(results))}


def test_findings_resolve_every_distance_and_decide_every_verdict_from_the_numbers():
    """Distances against twice their floor (stats.debiased_distance); the samples' mean closer to the theory than to
    each competitor (gap against the floor); the gain's change with C (errors in quadrature); decoupling within
    DECOUPLING_TOLERANCE; the block ratio of U; the width drawn: the narrowest valid one."""
    import json

    from paththeory.experiments import multiclass as ex

    results = with_findings(fake_results())
    found = ex.stored_findings(json.loads(json.dumps(results)))
    assert found == ex.findings(results)
    n30 = {w.width: w for w in found.widths}[30]
    assert n30.valid and not {w.width: w for w in found.widths}[10].valid
    assert n30.cov.resolved and n30.cov.value == pytest.approx(np.sqrt(0.149**2 - 0.0683**2))
    assert n30.U["theory"].resolved and not n30.U["kronecker"].resolved  # 0.05 > 2 x 0.02 > 0.035
    assert n30.U["kronecker"].upper_limit > 0.035 and n30.U["kronecker"].value is None
    assert {k: v.verdict for k, v in n30.closer.items()} == {"gp": "holds", "independent": "holds",
                                                              "kronecker": "within noise"}
    assert n30.closer["gp"].difference == pytest.approx(0.4) and n30.closer["gp"].se == 0.02
    assert n30.accuracy["gp"].difference == pytest.approx(3 / 6) and n30.accuracy["sampled"].difference == 1 / 6
    assert n30.blocks["theory"] == 0.0 and n30.blocks["sampled"] == pytest.approx(0.1 * np.sqrt(24 / 12))
    assert n30.dead["theory"] == pytest.approx(0.0, abs=1e-12)  # the identity: nothing couples
    assert (found.comparisons, found.closer, found.valid_widths, found.structure_width) == (3, 2, (30,), 30)
    g = found.class_gain
    assert (g.smallest, g.largest) == (2, 5) and g.gain.difference == pytest.approx(-0.11)
    assert g.gain.se == pytest.approx(np.hypot(0.017, 0.022)) and g.gain.verdict == "fails"
    assert found.decoupling.exact and found.decoupling.worst == pytest.approx(1e-9)
    # the covariance within twice its floor: bounded, not resolved (the chapter's N = 120 in smoke)
    unresolved = ex.findings(fake_results(cov=(0.0995, 0.0677))).widths[1].cov
    assert not unresolved.resolved and unresolved.value is None and unresolved.upper_limit > 0.0995
    # chains not mixed (R-hat of U above R_HAT_OK): no verdict at that width
    unmixed = fake_results()
    unmixed["widths"]["30"]["diagnostics"]["r_hat_U_max"] = 1.02
    assert ex.valid_widths(unmixed) == []
    # no width with C |Pi| / N <= 0.4: no comparison, and the widest width is the one drawn
    results["widths"]["30"]["ratio"] = 0.5
    found = ex.findings(results)
    assert (found.comparisons, found.valid_widths, found.structure_width) == (0, (), 30)
    equal = ex.findings(fake_results(gains=((0.05, 0.02), (0.05, 0.02), (0.06, 0.02)))).class_gain.gain
    assert equal.verdict == "within noise"
    off = dict(fake_results(), decoupling={"off_block_max": 1e-5, "first_block_vs_single": 0.0, "live_trace": 2.0,
                                           "dead_trace": 0.7})
    assert not ex.findings(off).decoupling.exact


def test_the_label_free_output_decouples_where_its_direction_is_an_eigenvector():
    """Oracle: U = U_out (x) U_path. With U_out = a I + b 1 1^T the direction (1, ..., 1)/sqrt C is an eigenvector of
    U_out, so in any basis that starts with it the first output's blocks vanish; with U_out = diag(1, 2, 3) they do
    not, and their size is the same in scipy's Helmert basis (another basis of the live outputs) as in ours."""
    from scipy.linalg import helmert

    from paththeory.experiments import multiclass as ex

    path = np.array([[2.0, 0.3], [0.3, 1.0]])
    assert ex.dead_coupling(np.kron(0.5 * np.eye(3) + 0.2 * np.ones((3, 3)), path), 3) == pytest.approx(0, abs=1e-14)
    U = np.kron(np.diag([1.0, 2.0, 3.0]), path)
    H = helmert(3, full=True).T  # columns: (1, 1, 1)/sqrt 3, then two contrasts
    R = np.kron(H, np.eye(2)).T @ U @ np.kron(H, np.eye(2))
    expected = np.linalg.norm(R[:2, 2:]) / np.linalg.norm(R[2:, 2:])
    assert expected > 0.1 and ex.dead_coupling(U, 3) == pytest.approx(expected, rel=1e-12)
    O = ex.label_free_basis(4)
    assert np.allclose(O.T @ O, np.eye(4)) and np.allclose(O[:, 0], 0.5)
