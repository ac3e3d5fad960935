"""The words of the residual-stream chapter (paththeory.reports.residual), checked once against rows and findings
built by hand; the verdicts themselves are tested as numbers in tests/experiments/test_experiment_residual.py."""

from __future__ import annotations

import dataclasses

import pytest

from paththeory.experiments import residual as exp
from paththeory.experiments.compare import distance
from paththeory.reports import residual as report


def _row(network, width, sampler="nuts", converged=True):
    paired = exp.Paired(0.02, 0.006, 500)
    inner = (distance(0.089, 0.02, 20), distance(0.159, 0.1, 20))  # one resolved level, one bounded
    return exp.Row(network, width, 9, 9 / width, sampler, 0.075, 0.022, 20, 0.882, inner, 0.094, None,
                   0.556, exp.Accuracies(0.89, 0.87, 0.672, 0.95), paired, exp.Paired(0.198, 0.019, 500),
                   exp.Paired(-0.08, 0.015, 500), 0.41, 1.007, 392.0, 60.0, converged)


def _head(network, name, score, accuracy):
    return exp.PrunedHead(network, 10, name, score, accuracy, 0.95, accuracy - 0.95)


def test_the_residual_report_words_the_findings():
    rows = [_row("skip", 10), _row("skip", 30, converged=False)]
    table = report.distance_table(rows)
    assert "| skip around each attention layer | 9 | 10 | 0.9 | 0.075 (0.022) | 0.882 | 0.094 | 0.556 | 1.007 | 392 |" \
        in table
    assert "| 0.890 | 0.870 | 0.672 | 0.950 | +0.020 ± 0.006 | +0.198 ± 0.019 | -0.080 ± 0.015 |" in \
        report.accuracy_table(rows)
    assert "theory − NUTS" in report.accuracy_table(rows)
    assert "Gibbs − GP" in report.accuracy_table([_row("skip", 30, "gibbs")])
    outside = dataclasses.replace(rows[0], network="residual", paths=36, in_regime=False)
    assert "| two residual blocks | 36 | 10 (< \\|Π\\|) |" in report.distance_table([outside])
    inner = report.inner_table(rows)
    assert "| $U^{(2)}, \\dots, U_a$: theory vs NUTS, d (s): debiased d |" in inner
    assert "| 0.089 (0.020): 0.087 ± 0.021; 0.159 (0.100): < 0.373 |" in inner
    old = report.inner_table([dataclasses.replace(rows[0], inner=(distance(0.05, None),))])
    assert "| 0.050 (no floor) |" in old
    assert report.inner_table([]) == "No record to compare in this profile."
    with pytest.raises(ValueError, match="rows of one sampler"):
        report.distance_table(rows + [_row("skip", 30, "gibbs")])
    heads = [_head("attention", "layer 2, head 1", 0.15, 0.862), _head("attention", "layer 1, head 0", 0.81, 0.5),
             _head("skip", "layer 1, head 1", 0.25, 0.606), _head("skip", "layer 2, head 1", 0.27, 0.984)]
    found = exp.Findings(
        shares=(exp.Shares("skip", 10, 0.40, 0.41, 0.36),),
        against_attention=(exp.AgainstAttention("skip", 10, 0.87, 0.95, exp.Paired(-0.08, 0.015, 500), "holds"),
                           exp.AgainstAttention("mlp", 10, 0.946, 0.95, exp.Paired(-0.004, 0.005, 500),
                                                "within noise")),
        unmixed=(("skip", 30),), gp_skip=0.672, gp_attention=0.79,
        gains=(exp.Gain("skip", 10, "nuts", exp.Paired(0.198, 0.019, 500), 0.87, 0.948, -0.078),
               exp.Gain("skip", 300, "gibbs", exp.Paired(0.012, 0.007, 500), 0.684, None, None)),
        mlp=exp.MlpEffect(exp.Paired(0.022, 0.007, 500), "gibbs", 100, 2, 5),
        skips=exp.SkipTheory(5, 7, -0.008, 0.02, 3, 0, 7), pruning=exp.pruning(heads))
    assert report.shares_sentence(found).startswith(
        "On this page's training set, with skip around each attention layer at N = 10, the paths through no attention "
        "head carry 40 % of the kernel's trace in the theory and 41 % with NUTS's U, against 36 % in the GP limit. "
        "Fewer than two networks are inside the regime here")
    towards, away = exp.Shares("skip", 10, 0.40, 0.41, 0.36), exp.Shares("residual", 30, 0.20, 0.3, 0.25, False)
    assert (towards.direction, away.direction) == (1, -1)
    two = dataclasses.replace(found, shares=(towards, away))
    assert ("at N = 30, the paths through no attention head carry 20 % of the kernel's trace in the theory and 30 % "
            "with NUTS's U, against 25 % in the GP limit (more paths than units at this width: outside the theory's "
            "regime, so the theory's number is not checked). Fewer than two") in report.shares_sentence(two)
    inside = dataclasses.replace(found, shares=(towards, dataclasses.replace(away, in_regime=True)))
    assert "The direction is different between the networks inside the regime" in report.shares_sentence(inside)
    same = dataclasses.replace(found, shares=(towards, dataclasses.replace(towards, network="residual")))
    assert "The direction is the same for the networks inside the regime" in report.shares_sentence(same)
    assert report.accuracy_sentence(found) == (
        "Per sampled point: skip around each attention layer at N = 10: NUTS 0.870, which differs from the "
        "attention-only theory's 0.950 (-8.0 ± 1.5 points); attention + MLP blocks at N = 10: NUTS 0.946, which "
        "cannot be told apart from the attention-only theory's 0.950 (-0.4 ± 0.5 points). Left out, their chains not "
        "mixed (R-hat of U above 1.02): skip at N = 30.")
    text = report.conclusion(found)
    assert "the GP of the network with skips scores 0.672 against 0.790 without them." in text
    assert ("With skip around each attention layer at N = 10, finite width gains +19.8 ± 1.9 points over that GP "
            "(NUTS), and the finite network scores 0.870 against 0.948 for the paper's network without a residual "
            "stream (NUTS both, -7.8 points).") in text
    assert "at N = 300, finite width gains +1.2 ± 0.7 points over that GP (Gibbs)." in text
    assert ("MLP blocks move the accuracy by at most +2.2 ± 0.7 points (Gibbs at N = 100 against the attention-only "
            "theory), beyond two paired SEs at 2 of 5 points") in text
    assert ("the theory's accuracy lies above the samples' at 5 of 7 points (by -0.8 to +2.0 points; beyond two "
            "paired SEs at 3), and its predictor is further from the samples' than without skips at the same width, "
            "beyond two Monte Carlo errors, at 0 of 7 points.") in text
    assert "| attention only (the paper's) | layer 2, head 1 | 0.15 | 0.862 | -8.8 |" in report.pruning_markdown(found)
    assert report.pruning_sentence(found) == (
        "At N = 10: with attention only (the paper's), the lowest-scored head (layer 2, head 1, score 0.15) is also "
        "the cheapest to prune (-8.8 points; the cheapest: layer 2, head 1, -8.8); with skip around each attention "
        "layer, the lowest-scored head (layer 1, head 1, score 0.25) is not the cheapest to prune (-34.4 points; the "
        "cheapest: layer 2, head 1, +3.4).")
    agreement = [{"network": "residual", "width": 30, "distance": 0.06, "noise": 0.058, "max_z": 4.28,
                  "threshold": 4.4, "entry": (7, 27), "k": 666, "p_family": 0.062, "mixed": True,
                  "ess_per_second": (0.5, 2.6)}]
    assert "| two residual blocks | 30 | 0.060 | 0.058 | 4.3 (4.4) | (7, 27) of 666 | 0.062 | yes | 0.5 | 2.6 |" in \
        report.agreement_table(agreement)
    prov = {"sampler": "nuts", "profile": "smoke", "command": "python -m paththeory residual --profile smoke",
            "date": "2026-11-27", "machine": "x86_64, 2 CPU cores, JAX on cpu", "seconds": 1320.0,
            "config": exp.SETTINGS["smoke"].__dict__}
    assert report.provenance_text(prov) == (
        "The NUTS samples (smoke sizes) were drawn by `python -m paththeory residual --profile smoke` on 2026-11-27 "
        "(x86_64, 2 CPU cores, JAX on cpu, 22 minutes) and ship with the package; the theory is solved as the page "
        "is built. Each point is 2 chains of 400 draws after 200 warm-up steps. P = 80 training and 500 test "
        "sequences (the Markov chapter's task, with 100 and 500 there: here four networks are sampled at several "
        "widths each), T = 0.01.")
    assert report.provenance_text(None) == "This profile samples no point with this sampler."
