"""The many-outputs experiment's records (paththeory.experiments.multiclass): a record reduces the draws to what the
comparison needs, the comparison reads only the record, and the chapter's smoke profile reads the shipped file
instead of sampling while the book builds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from paththeory.experiments import multiclass, stats
from paththeory.experiments.compare import relative_distance


@pytest.fixture(scope="module")
def tiny():
    """Three classes at P = 30, 60 test sequences, Gibbs at N = 20 with 2 chains of 20 + 60 sweeps."""
    cfg = dataclasses.replace(multiclass.settings("smoke"), n_train=30, n_test=60, sample_widths=(),
                              gibbs_widths=(20,), gibbs_warmup=20, gibbs_samples=60, gibbs_chains=2)
    prob = multiclass.chapter_problem(cfg)
    (record,) = multiclass.sample_points(cfg, "gibbs")
    return cfg, prob, record


@pytest.mark.clock
def test_a_record_holds_the_reduced_draws_and_the_comparison_reads_only_it(tiny):
    cfg, prob, record = tiny
    C, n = cfg.n_classes, prob.arch.n_paths
    assert (record["width"], record["sampler"], record["seed"]) == (20, "gibbs", 0)
    assert np.shape(record["U"]) == np.shape(record["U_se"]) == (C * n, C * n)
    assert np.shape(record["mean"]) == np.shape(record["mean_se"]) == (60, C)
    assert np.shape(record["cov"]) == (60, C, C) and record["cov_se"] > 0
    assert record["batch_means"] == stats.batch_count(2, 60)
    row = multiclass.compare_at(prob, record, cfg)
    d, s = relative_distance(record["U"], row["U_theory"], record["U_se"])
    assert row["theory_vs_sampled"]["U"] == pytest.approx(d, rel=1e-12)
    assert row["noise"]["U"] == pytest.approx(s, rel=1e-12)
    assert row["accuracy"]["sampled"] == pytest.approx(np.mean(row["correct"]["sampled"]))
    with pytest.raises(ValueError, match="sampler must be one of"):
        multiclass.sample_points(cfg, "hmc")


def test_the_smoke_profile_reads_the_shipped_records():
    cfg = multiclass.settings("smoke")
    for sampler in ("gibbs",):
        payload = multiclass.RECORDS.shipped(cfg, sampler)
        assert payload is not None, "multiclass_gibbs_smoke.json must serve the smoke profile"
        assert payload["provenance"]["command"] == "python -m paththeory multiclass --profile smoke --sampler gibbs"
        assert [r["width"] for r in payload["records"]] == list(cfg.gibbs_widths)
    assert multiclass.RECORDS.shipped(cfg, "nuts") is None  # smoke samples no width with NUTS
    other = dataclasses.replace(cfg, n_train=cfg.n_train + 1)
    assert multiclass.RECORDS.shipped(other, "gibbs") is None  # other data: sampled again, never the shipped file
