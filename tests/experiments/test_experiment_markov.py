"""Tests of the Fig. 2 reproduction pipeline (the paper's Sec. 4.1) on a tiny configuration.

Oracles: the GP limit of the theory at large width, the stored features re-scored with the
stored order parameters, and the GP accuracies of the one- and two-path variants recomputed
from the four-path features (a sub-network's path features are a rescaled subset).
"""

import dataclasses
import json
import math

import numpy as np
import pytest

from paththeory.experiments import markov as exp
from paththeory.experiments import samplers
from paththeory.predict import accuracy, predictor
from paththeory.profiles import PROFILES
from paththeory.sampling import TimeLimitReached

# The time limit is a hang guard only: far above the few seconds an honest run takes on a busy machine.
# N = 10 is sampled with NUTS, N = 30 with the exact Gibbs sampler.
TINY = exp.Config(n_train=20, n_test=40, widths=(10, 30, 1000), sample_widths=(10,), two_path_sample_widths=(),
                  num_warmup=10, num_samples=10, num_chains=1, time_limit=3600.0,
                  gibbs_widths=(30,), gibbs_warmup=10, gibbs_samples=20, gibbs_chains=2)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    out = tmp_path_factory.mktemp("markov")
    results = exp.run("smoke", out, config=TINY, progress=False)
    return results, out


def test_files_and_keys(outputs):
    results, out = outputs
    assert json.loads((out / "results.json").read_text()) == results
    for name in exp.FIGURES:
        assert (out / f"{name}.png").stat().st_size > 1000
    assert results["profile"] == "smoke" and results["widths"] == [10, 30, 1000]
    assert results["paths"] == ["g", "a1", "d", "a2"] and results["readout"] == "last"
    acc = results["accuracy"]
    assert set(acc) >= {"theory", "gp_all", "gp_good", "gp_good_denoising", "samples"}
    assert set(acc["theory"]) == {"10", "30", "1000"} and set(acc["samples"]) == {"10", "30"}
    assert 0.0 <= acc["samples"]["10"] <= 1.0 and 0.0 <= acc["samples"]["30"] <= 1.0
    diag = results["sampling_diagnostics"]["10"]
    assert {"r_hat_max", "ess_bulk_min", "divergences", "e_bfmi", "ess_per_second", "seconds"} <= set(diag)
    assert np.asarray(results["order_parameter"]["10"]).shape == (4, 4)
    assert results["two_path"]["paths"] == ["g", "d"] and results["two_path"]["accuracy"]["samples"] == {}
    assert len(results["pc_overlap"]["theory"]) == min(TINY.n_pcs, TINY.n_train)
    assert exp.findings(json.loads((out / "results.json").read_text())) == exp.findings(results)


def test_findings_are_typed_and_a_renamed_key_fails_where_they_are_read(outputs):
    results, _ = outputs
    found = exp.findings(results)
    assert isinstance(found.pc_overlap, exp.PCOverlap) and isinstance(found.variance_vs_samples["30"], exp.Variance)
    renamed = {**results, "pc_overlap": {**results["pc_overlap"], "best": results["pc_overlap"]["theory_leading"]}}
    del renamed["pc_overlap"]["theory_leading"]
    with pytest.raises(KeyError, match="unknown keys \\['best'\\], missing fields \\['theory_leading'\\]"):
        exp.findings(renamed)


def test_the_leading_pc_is_the_largest_overlap(outputs):
    """Each kernel's leading overlap is the largest of its top PCs, at its rank, and carries its square of |y|^2."""
    results, _ = outputs
    pcs = exp.findings(results).pc_overlap
    assert pcs.width == min(TINY.widths)
    for overlaps, lead in ((pcs.theory, pcs.theory_leading), (pcs.gp, pcs.gp_leading)):
        assert lead.overlap == max(overlaps) == overlaps[lead.rank - 1]
        assert lead.share == pytest.approx(lead.overlap ** 2)


def test_stored_features_reproduce_stored_accuracy(outputs):
    results, out = outputs
    f = np.load(out / "features.npz")
    temp = float(f["temperature"])
    for w in ("10", "1000"):
        mean, _ = predictor(np.asarray(results["order_parameter"][w]), f["train_features"], f["y_train"],
                            f["test_features"], temp)
        assert accuracy(mean, f["y_test"]) == results["accuracy"]["theory"][w]


def test_large_width_is_the_gp_limit(outputs):
    results, _ = outputs
    u = np.asarray(results["order_parameter"]["1000"])
    np.testing.assert_allclose(u, np.eye(4), atol=0.15)  # P/N = 0.02
    assert abs(results["accuracy"]["theory"]["1000"] - results["accuracy"]["gp_all"]) <= 0.05


def test_variant_gp_accuracies_from_four_path_features(outputs):
    results, out = outputs
    f = np.load(out / "features.npz")
    temp = float(f["temperature"])
    # xi scales as 1/sqrt(H_tot): good path = 2 xi^g, good + denoising = sqrt(2) (xi^g, xi^d)
    for key, paths, scale in (("gp_good", [0], 2.0), ("gp_good_denoising", [0, 2], math.sqrt(2.0))):
        mean, _ = predictor(np.eye(len(paths)), scale * f["train_features"][:, paths], f["y_train"],
                            scale * f["test_features"][:, paths], temp)
        assert accuracy(mean, f["y_test"]) == results["accuracy"][key], key


def test_profiles_and_bad_variant():
    assert set(exp.SETTINGS) == set(PROFILES)
    paper = exp.SETTINGS["paper"]
    assert (paper.n_train, paper.n_test, paper.temperature, paper.widths) == (100, 1000, 0.01, exp.PAPER_WIDTHS)
    # NUTS at the small widths, the exact Gibbs sampler at the wide ones, up to N = 1000 in colab and paper;
    # smoke samples with Gibbs exactly the widths the chapter's Gibbs section sampled on its own before
    expected = {"smoke": ({10}, {100, 300}), "colab": ({10, 30}, {100, 300, 1000}),
                "paper": ({10, 30, 50}, {100, 300, 500, 1000})}
    for name, (nuts, gibbs) in expected.items():
        cfg = exp.SETTINGS[name]
        assert (set(cfg.sample_widths), set(cfg.gibbs_widths)) == (nuts, gibbs), name
        assert samplers(cfg) == {**{w: "nuts" for w in nuts}, **{w: "gibbs" for w in gibbs}}
        assert list(samplers(cfg)) == sorted(nuts | gibbs)
    smoke = exp.SETTINGS["smoke"]
    assert exp.schedule(smoke, "gibbs") == {"num_warmup": 100, "num_samples": 300, "num_chains": 2}
    assert exp.schedule(smoke, "nuts") == {"num_warmup": 100, "num_samples": 100, "num_chains": 2}
    with pytest.raises(ValueError, match="variant"):
        exp.problem("five_paths", 10, 10)


def test_a_config_samples_each_width_once_and_only_where_the_theory_is_solved():
    with pytest.raises(ValueError, match="N = 10 is in both sample_widths"):
        dataclasses.replace(TINY, gibbs_widths=(10, 30))
    with pytest.raises(ValueError, match="N = 50 is not"):
        dataclasses.replace(TINY, gibbs_widths=(50,))
    with pytest.raises(ValueError, match="sampler must be one of"):
        exp.schedule(TINY, "hmc")


@pytest.mark.clock  # the fail-safe of both samplers through an experiment, with the scale variable
@pytest.mark.parametrize("sampler, width", [("nuts", 10), ("gibbs", 30)])
def test_a_run_that_reaches_its_time_limit_fails_and_names_the_way_out(monkeypatch, sampler, width):
    """The fail-safe raises instead of returning a shortened run, with either sampler; the scale
    variable multiplies it."""
    prob = exp.problem("four_paths", TINY.n_train, TINY.n_test)
    cfg = dataclasses.replace(TINY, time_limit=1e-3)
    with pytest.raises(TimeLimitReached, match=r"time limit of 0\.001 s .*raise the limit.*PATHTHEORY_TIME_LIMIT_SCALE") as err:
        exp.sample_at(prob, width, cfg, sampler=sampler, progress=False)
    assert not err.value.partial.complete and err.value.partial.stopped["time_limit"] == 1e-3
    assert err.value.partial.settings["method"] == sampler
    monkeypatch.setenv("PATHTHEORY_TIME_LIMIT_SCALE", "2")
    with pytest.raises(TimeLimitReached, match=r"time limit of 0\.002 s"):
        exp.sample_at(prob, width, cfg, sampler=sampler, progress=False)


def test_each_width_is_drawn_by_its_sampler_and_the_results_say_which(outputs):
    """N = 10 by NUTS, N = 30 by Gibbs, with each sampler's schedule; the results record the sampler
    of every sampled width, and the two-path experiment stays NUTS."""
    results, out = outputs
    assert results["samplers"] == {"10": "nuts", "30": "gibbs"}
    assert json.loads((out / "results.json").read_text())["samplers"] == results["samplers"]
    assert results["two_path"]["samplers"] == {}
    for w, sampler in results["samplers"].items():
        diag = results["sampling_diagnostics"][w]
        assert diag["method"] == sampler and diag["settings"]["method"] == sampler
        assert diag["complete"] and diag["draws_used"] == diag["draws_planned"]
        assert results["variance_vs_samples"][w]["sampler"] == sampler
        assert results["variance_vs_samples"][w]["width"] == int(w)
        assert np.asarray(results["order_parameter_samples"][w]).shape == (4, 4)
    gibbs = results["sampling_diagnostics"]["30"]["settings"]
    assert (gibbs["num_warmup"], gibbs["num_samples"], gibbs["num_chains"]) == (
        TINY.gibbs_warmup, TINY.gibbs_samples, TINY.gibbs_chains)
    assert results["variance_vs_samples"]["30"]["draws"] == TINY.gibbs_chains * TINY.gibbs_samples
    rows = {r["id"]: r for r in results["claims"]}
    assert "Gibbs" in rows["u_sampled:four_paths:30"]["claim"] and "NUTS" not in rows["u_sampled:four_paths:30"]["claim"]
    assert "NUTS" in rows["u_sampled:four_paths:10"]["claim"] and "Gibbs" in rows["accuracy_sampled:four_paths:30"]["claim"]
    assert results["config"]["gibbs_widths"] == [30]


def test_results_carry_paired_errors_and_verdicts(outputs):
    """Every Fig. 2 comparison has its noise: paired SEs against each GP line on the same test
    sequences, the NUTS distance with its Monte Carlo error, and one verdict per claim."""
    from paththeory.experiments import stats
    from paththeory.experiments.claims import OWN_TEST, fig2_claims, read_claims

    results, _ = outputs
    acc = results["accuracy"]
    for key in ("gp_all", "gp_good", "gp_good_denoising"):
        for w in ("10", "1000"):
            d = results["finite_vs_gp"][key][w]
            assert d["n"] == TINY.n_test and d["se"] >= 0
            assert d["difference"] == pytest.approx(acc["theory"][w] - acc[key], abs=1e-12)
    assert results["gp_vs_gp"]["good_vs_all"]["difference"] == pytest.approx(acc["gp_good"] - acc["gp_all"])
    two = results["two_path"]
    assert two["finite_vs_gp"]["gp_good_denoising"]["10"]["difference"] == pytest.approx(
        two["accuracy"]["theory"]["10"] - two["accuracy"]["gp_good_denoising"])
    nuts = results["sampled_vs_theory"]["10"]
    assert nuts["accuracy"]["difference"] == pytest.approx(acc["samples"]["10"] - acc["theory"]["10"])
    assert nuts["relative_distance"] >= 0 and nuts["noise"] > 0 and nuts["mantel"] is not None
    rows = read_claims(results["claims"])
    assert rows == fig2_claims(results)
    ids = {r.id for r in rows}
    assert {"finite_vs_gp_all", "finite_vs_gp_good", "finite_vs_gp_good_denoising", "gp_good_vs_all",
            "gp_denoising_vs_good", "pc_overlap", "u_sampled:four_paths:10", "accuracy_sampled:four_paths:10",
            "finite_vs_gp_good_denoising:two_path"} <= ids
    for r in rows:
        assert r.verdict in stats.OUTCOMES and r.source and r.source != OWN_TEST
        assert r.evidence.kind == ("none" if r.id == "pc_overlap" else "monte_carlo" if r.id.startswith("u_")
                                   else "paired")
        assert r.evidence.se is not None or r.evidence.noise is not None or r.id == "pc_overlap"
    two_row = next(r for r in rows if r.id == "finite_vs_gp_good_denoising:two_path")
    assert two_row.source == "§4.1, Fig. 2e; App. G.2.2, Fig. 5c"  # the uniform denoising head is App. G's variant


def test_verdicts_and_summary_follow_the_results(outputs):
    """Change a result and the verdict, and the count of the paper's claims that hold, change with it."""
    import copy

    from paththeory.experiments.claims import fig2_claims, reproduction

    results, _ = outputs
    changed = copy.deepcopy(results)
    def row(res):
        return next(r for r in fig2_claims(res) if r.id == "finite_vs_gp_all")

    changed["finite_vs_gp"]["gp_all"]["10"].update(difference=0.2, se=0.01)
    assert row(changed).verdict == "holds"
    before = reproduction(fig2_claims(changed))
    changed["finite_vs_gp"]["gp_all"]["10"].update(difference=-0.2, se=0.01)
    assert row(changed).verdict == "fails" and row(changed).value == -0.2
    after = reproduction(fig2_claims(changed))
    assert after.held == before.held - 1 and "finite_vs_gp_all" in {c.id for c in after.fails}
    changed["sampled_vs_theory"]["10"].update(relative_distance=0.9, noise=0.01)
    u_row = next(r for r in fig2_claims(changed) if r.id == "u_sampled:four_paths:10")
    assert u_row.verdict == "fails" and u_row.value == 0.9 and u_row.evidence.noise == 0.01
    changed["sampling_diagnostics"]["10"].update(complete=False, stopped={
        "chain": 0, "time_limit": 1.0, "phase": "sampling", "iteration": 3, "of": 10})
    u_row = next(r for r in fig2_claims(changed) if r.id == "u_sampled:four_paths:10")
    assert u_row.verdict == "not enough draws" and u_row.value is None


def test_predictor_variance_against_draws_of_known_variance():
    """Draws from the theory's own Gaussian predictive distribution agree with Eq. 30 within their
    Monte Carlo error; draws of twice the variance are +100 % off, beyond it."""
    prob = exp.problem("four_paths", TINY.n_train, TINY.n_test)
    U = prob.arch.gp_scale * np.eye(4)
    mean, var = predictor(U, prob.train, prob.y_train, prob.test, 0.01)
    mean, var = np.asarray(mean), np.asarray(var)
    rng = np.random.default_rng(0)
    draws = mean + np.sqrt(var) * rng.normal(size=(2, 400, len(var)))
    v = exp.variance_vs_samples(U, prob, 0.01, draws, width=10)
    assert (v.width, v.sampler, v.n, v.draws) == (10, "nuts", len(var), 800)
    assert v.theory == pytest.approx(var.mean(), rel=1e-12)
    assert v.sampled == pytest.approx(draws.reshape(-1, len(var)).var(axis=0, ddof=1).mean(), rel=1e-12)
    assert abs(v.relative_difference) < 3 * v.noise < 0.1 and v.r > 0.9
    assert v.resolved is False
    wide = exp.variance_vs_samples(U, prob, 0.01, mean + math.sqrt(2) * (draws - mean), width=10)
    assert wide.relative_difference == pytest.approx(2 * (1 + v.relative_difference) - 1, rel=1e-9)
    assert wide.relative_difference > 2 * wide.noise and wide.resolved is True
    few = exp.variance_vs_samples(U, prob, 0.01, draws[:, :3], width=10, sampler="gibbs")
    assert few.noise is None and few.resolved is None and few.sampler == "gibbs"
    with pytest.raises(ValueError, match="f_draws"):
        exp.variance_vs_samples(U, prob, 0.01, draws[0], width=10)


def test_results_compare_the_predictor_variance_with_nuts(outputs):
    results, _ = outputs
    v = exp.findings(results).variance_vs_samples["10"]
    assert v.theory > 0 and v.sampled > 0 and v.noise > 0 and v.resolved == (abs(v.relative_difference) > 2 * v.noise)
    assert v.draws == TINY.num_chains * TINY.num_samples and v.n == TINY.n_test
    assert results["two_path"]["variance_vs_samples"] == {}


def test_samples_are_grouped_by_their_sampler(outputs):
    results, _ = outputs
    assert exp.by_sampler(results["accuracy"], results["samplers"]) == {
        "nuts": {"10": results["accuracy"]["samples"]["10"]}, "gibbs": {"30": results["accuracy"]["samples"]["30"]}}
    assert exp.by_sampler(results["two_path"]["accuracy"], results["two_path"]["samplers"]) == {}
    # a results.json written before the Gibbs sampler has no samplers: its points are NUTS's
    assert exp.by_sampler({"samples": {"10": 0.7}}, None) == {"nuts": {"10": 0.7}}


def test_the_figures_tell_the_samplers_apart(outputs):
    """Fig. 2c draws NUTS as squares and Gibbs as diamonds, each named in the legend; the sampled
    order parameters are titled with their sampler."""
    import matplotlib.pyplot as plt

    results, _ = outputs
    fig = exp.plot_accuracy(results)
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    assert lines["NUTS samples"].get_marker() == "s" and list(lines["NUTS samples"].get_xdata()) == [10]
    assert lines["exact Gibbs samples"].get_marker() == "D" and list(lines["exact Gibbs samples"].get_xdata()) == [30]
    legend = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "NUTS samples" in legend and "exact Gibbs samples" in legend
    plt.close(fig)
    fig = exp.plot_sampled_order_parameters(results)
    titles = {ax.get_title() for ax in fig.axes}
    assert {"NUTS, N = 10", "Gibbs, N = 30"} <= titles
    plt.close(fig)
    fig = exp.plot_two_path(results)
    assert not [line for line in fig.axes[0].get_lines() if "samples" in line.get_label()]
    plt.close(fig)
