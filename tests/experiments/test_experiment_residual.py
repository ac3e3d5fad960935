"""The residual-stream chapter's pipeline (MLP blocks and skip connections on the Markov task).

Oracles: the shipped NUTS records of the finite networks (the theory within the stated tolerance of
them where the chains mixed, and closer to them than the GP point), the path counts of the
definition (prod_l (H_l + 1) with skips), the GP limit of the path shares, and a tiny fresh run of
the whole pipeline written to disk. The verdicts are numbers; their words are tested once, in
tests/reports/test_residual.py.
"""

import dataclasses
import json

import numpy as np
import pytest

from paththeory.experiments import sampler_agreement
from paththeory.reports.agreement import agreement_sentence
from paththeory.experiments import residual as exp
from paththeory.experiments.claims import U_TOLERANCE

# The time limit is a hang guard only: far above the seconds an honest tiny run takes on a busy machine.
TINY = dataclasses.replace(exp.settings("smoke"), theory_widths=(10, 1000), sampled=(("skip", 6),), num_warmup=10,
                           num_samples=10, num_chains=1, n_train=16, n_test=40, time_limit=3600.0,
                           gibbs=(("skip", 6), ("attention", 12)), gibbs_warmup=5, gibbs_samples=20, gibbs_chains=2)


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


def test_gp_means_passed_in_give_the_rows_computed_without_them(shipped):
    cfg = exp.settings("smoke")
    problems = {n: exp.problem(n, cfg) for n in exp.NETWORKS}
    gp_means = {n: exp.gp_mean(problems[n], cfg.temperature) for n in exp.NETWORKS}
    assert exp.compare(exp.samples("smoke"), cfg, problems=problems, gp_means=gp_means) == shipped


def test_the_theory_lies_near_the_shipped_nuts_records(shipped):
    """Where the chains mixed and |Pi| / N <= 0.4, U within U_TOLERANCE of NUTS's (beyond two Monte Carlo
    errors) and at most a third of the GP point's distance; the predictor closer to the theory than the GP."""
    checked = [r for r in shipped if r.converged and r.ratio <= 0.4]
    assert len(checked) >= 3
    for r in checked:
        assert r.U_distance + 2 * r.U_noise < U_TOLERANCE, r
        assert r.U_distance < r.U_gp_distance / 3, r
        assert r.f_distance < r.f_gp_distance, r


@pytest.fixture(scope="module")
def shipped_gibbs():
    payload = exp.samples("smoke", sampler="gibbs")
    assert payload["provenance"]["command"] != "sampled in this run", "the smoke records must ship with the package"
    return payload


def test_the_shipped_gibbs_records_agree_with_nuts_where_both_sampled(shipped_gibbs):
    """The two samplers on the same posteriors (the four points both sampled, N = 30): where both mixed, their U
    within two combined Monte Carlo errors (Frobenius, relative to Gibbs's U) and every entry within the Sidak
    threshold at a 5 % family-wise false-alarm rate, the errors' own noise (20 and 40 batch means) taken into the
    degrees of freedom. The closest call, two residual blocks (666 entries): max |z| = 4.28 at U[19, 27],
    family-wise p = 0.078 with Student's t (0.012 with a normal z, which would ignore that the errors are
    estimated); the unmixed point is marked so."""
    from scipy.stats import norm

    rows = sampler_agreement(exp.samples("smoke")["records"], shipped_gibbs["records"], ("network", "width"),
                             exp.R_HAT_OK)
    assert {(r["network"], r["width"]) for r in rows} == {(n, 30) for n in exp.NETWORKS}
    mixed = [r for r in rows if r["mixed"]]
    assert len(mixed) >= 3
    for r in mixed:
        assert r["agree"] and not r["resolved"] and r["distance"] < 2 * r["noise"], r
        assert r["max_z"] <= r["threshold"] and r["p_family"] >= 0.05 and r["level"] == 0.05, r
    (blocks,) = [r for r in rows if r["network"] == "residual"]
    assert blocks["k"] == 36 * 37 // 2 and blocks["entry"] == (19, 27)
    assert blocks["max_z"] == pytest.approx(4.28, abs=0.01) and blocks["p_family"] == pytest.approx(0.078, abs=0.001)
    assert 19 <= blocks["dof"] <= 19 + 39  # Welch-Satterthwaite: between NUTS's (2 x 10 batches) and the sum
    assert 1 - (1 - 2 * norm.sf(blocks["max_z"])) ** blocks["k"] == pytest.approx(0.012, abs=0.001)
    text = agreement_sentence(rows, ("NUTS", "Gibbs"), lambda r: f"{r['network']} at N = {r['width']}")
    assert "U[19, 27] against 4.4 for 666 entries, family-wise p = 0.078" in text
    assert f"at {len(mixed)} of the {len(mixed)}" in text


def test_the_theory_approaches_the_gibbs_records_as_the_width_grows(shipped_gibbs):
    """Wider than NUTS reaches: at |Pi| / N <= 0.1 the theory's U within 5 % of Gibbs's (beyond two Monte Carlo
    errors; a quarter of the claims' U_TOLERANCE) for every network but two residual blocks (36 paths, never
    that wide here), and the distance at the largest width below the one at the smallest."""
    rows = exp.compare(shipped_gibbs, exp.settings("smoke"))
    assert {r.sampler for r in rows} == {"gibbs"}
    narrow = [r for r in rows if r.ratio <= 0.1]
    assert {r.network for r in narrow} == {"attention", "mlp", "skip"}
    for r in narrow:
        assert r.converged and r.U_distance + 2 * r.U_noise < 0.05, r
    for network in exp.NETWORKS:
        sel = sorted((r for r in rows if r.network == network), key=lambda r: r.width)
        assert sel[-1].U_distance < sel[0].U_distance, network


def test_a_sampler_is_named_or_refused():
    with pytest.raises(ValueError, match="sampler must be one of"):
        exp.samples("smoke", sampler="hmc")


def test_the_sampled_skip_blocks_are_the_level_above(shipped):
    """NUTS's inner order parameters: one per level above the first, and U_a last (a 1 x 1 matrix)."""
    payload = exp.samples("smoke")
    for rec in payload["records"]:
        levels = exp.architecture(rec["network"]).n_layers
        assert len(rec["inner"]) == levels and np.shape(rec["inner"][-1]) == (1, 1)


@pytest.mark.clock  # residual.run: both samplers under the time limit (experiments.sample), the timed theory curve
def test_a_tiny_run_writes_everything(tmp_path):
    results = exp.run("smoke", tmp_path, config=TINY)
    assert results["sampled_in_this_run"]
    assert json.loads((tmp_path / "results.json").read_text()) == results
    for name in ("shares", "order_parameters"):
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
    (row,) = exp.read_rows(results)  # the JSON rows read back as typed rows
    assert row.network == "skip" and row.paths == 9 and len(row.inner) == 2 and row.ratio == 1.5
    gibbs = exp.read_rows(results, "gibbs_rows")
    assert row.sampler == "nuts" and [r.sampler for r in gibbs] == ["gibbs", "gibbs"]
    assert [r.width for r in gibbs] == [6, 12]
    found = exp.read(json.loads(json.dumps(results)))
    (share,) = found.shares  # the network with skips at its one NUTS width
    none = np.asarray(results["path_classes"]["skip"]["0 heads"])
    assert (share.network, share.width, share.sampled) == ("skip", 6, row.sampled_shares_none)
    assert share.theory == pytest.approx(np.asarray(results["shares"]["skip"]["6"])[none].sum(), rel=1e-12)
    assert share.gp == pytest.approx(np.asarray(results["gp_shares"]["skip"])[none].sum(), rel=1e-12)
    assert (found.gp_skip, found.gp_attention) == (results["gp_accuracy"]["skip"], results["gp_accuracy"]["attention"])
    (agree,) = results["sampler_agreement"]  # the one point both samplers drew
    assert (agree["network"], agree["width"]) == ("skip", 6) and agree["distance"] > 0
    mixed = {s: [dataclasses.replace(r, converged=True) for r in exp.read_rows(results, k)]
             for s, k in (("nuts", "rows"), ("gibbs", "gibbs_rows"))}
    for sampler, rows in mixed.items():  # the claims name their sampler (a tiny run's chains have not mixed)
        assert {c.id for c in exp.residual_claims(rows)} == {
            f"u_{sampler}", "mean_vs_gp", f"acc_theory_{sampler}", f"acc_{sampler}_gp"}
    gp = np.asarray(results["gp_shares"]["skip"])
    wide = np.asarray(results["shares"]["skip"]["1000"])
    assert np.max(np.abs(wide - gp)) < 0.02  # the GP limit of the shares, approached as 1 / N
    assert {r["levels"] for r in results["deep_linear"]} == {2, 3, 4}
    attention, skip = found.pruning
    assert [h.head for h in skip.heads] == ["layer 1, head 1", "layer 1, head 2", "layer 2, head 1", "layer 2, head 2"]
    assert max(h.score for h in skip.heads) == pytest.approx(1.0) and attention.network == "attention"
    for p in found.pruning:
        assert p.lowest.score == min(h.score for h in p.heads)
        assert p.cheapest.accuracy == max(h.accuracy for h in p.heads)
        assert all(h.change == pytest.approx(h.accuracy - h.unpruned) for h in p.heads)
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


def test_the_verdicts_read_both_samplers(shipped, shipped_gibbs):
    """The shipped records of both samplers (mixed ones only): numbers, checked against the rows themselves. Against
    the attention-only theory (NUTS), MLP blocks cannot be told apart from it and every network with skips differs;
    MLP blocks move the accuracy by at most +2.2 ± 0.7 points (Gibbs, N = 100), beyond two SEs at 2 of 5 records;
    with skips the theory's accuracy lies above the samples' at 5 of 7 (-0.8 to +2.2 points, beyond two SEs at 3)
    and its predictor is never further from the samples' than without skips beyond two Monte Carlo errors."""
    gibbs = exp.compare(shipped_gibbs, exp.settings("smoke"))
    both = shipped + gibbs
    verdicts = {(a.network, a.width): a.verdict for a in exp.against_attention(shipped)}
    assert verdicts == {("mlp", 10): "within noise", ("mlp", 30): "within noise", ("skip", 10): "holds",
                        ("skip", 30): "holds", ("residual", 30): "holds"}
    mlp = exp.mlp_effect(both)
    worst = max((r for r in both if r.network == "mlp" and r.converged),
                key=lambda r: abs(r.sampled_minus_attention_theory.difference))
    assert (mlp.largest, mlp.sampler, mlp.width) == (worst.sampled_minus_attention_theory, "gibbs", 100)
    assert mlp.largest.difference == pytest.approx(0.022, abs=1e-9) and (mlp.beyond, mlp.count) == (2, 5)
    skips = exp.skip_theory(both)
    assert (skips.above, skips.count, skips.beyond, skips.further, skips.pairs) == (5, 7, 3, 0, 7)
    assert (skips.low, skips.high) == pytest.approx((-0.008, 0.022), abs=1e-9)
    gains = exp.gains(both)
    assert [(g.network, g.width, g.sampler) for g in gains] == [
        ("skip", 10, "nuts"), ("skip", 30, "nuts"), ("skip", 100, "gibbs"), ("skip", 300, "gibbs"),
        ("residual", 30, "gibbs"), ("residual", 30, "nuts"), ("residual", 100, "gibbs")]  # skip N = 30 Gibbs: unmixed
    for g in gains:
        assert g.gap == pytest.approx(g.sampled - g.plain, abs=1e-12)
    assert exp.mlp_effect(shipped[:2]) is None and exp.skip_theory(shipped[:2]) is None  # attention only


def test_the_pruning_verdict_compares_the_lowest_score_with_the_cheapest_head():
    def head(network, name, score, accuracy):
        return exp.PrunedHead(network, 10, name, score, accuracy, 0.95, accuracy - 0.95)

    heads = [head("attention", "a", 0.2, 0.9), head("attention", "b", 0.8, 0.5),
             head("skip", "a", 0.3, 0.6), head("skip", "b", 0.9, 0.92)]
    attention, skip = exp.pruning(heads)
    assert attention.same and attention.lowest.head == attention.cheapest.head == "a"
    assert not skip.same and (skip.lowest.head, skip.cheapest.head) == ("a", "b") and len(skip.heads) == 2
