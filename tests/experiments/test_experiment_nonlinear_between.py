"""The nonlinear block between attention layers against NUTS: its shipped records, their fields, and the comparison
built from them (the rows, findings and words the chapter's section shows)."""

from __future__ import annotations

import numpy as np
import pytest

from paththeory.experiments import nonlinear as ex
from paththeory.experiments import nonlinear_between as nb
from paththeory.reports import nonlinear as report

RECORD_FIELDS = {"phi", "width", "U", "U_se", "inner", "inner_se", "mean", "mean_se", "diagnostics"}


@pytest.fixture(scope="module")
def shipped() -> dict:
    payload = nb.RECORDS.shipped(nb.settings("smoke"), "nuts")
    assert payload is not None, "the smoke records ship with the package (python -m paththeory nonlinear_between)"
    return payload


@pytest.fixture(scope="module")
def results() -> dict:
    return nb.run("smoke")


def test_the_shipped_records_match_the_smoke_config(shipped):
    """The smoke file serves colab too (the same sizes), not the paper profile; it names its command and holds the
    profile's points, each complete; the block on top does not read it as its own."""
    cfg = nb.settings("smoke")
    prov = shipped["provenance"]
    assert nb.RECORDS.sizes(prov["config"], "nuts") == nb.RECORDS.sizes(cfg, "nuts")
    assert prov["command"] == "python -m paththeory nonlinear_between --profile smoke"
    assert nb.RECORDS.shipped(nb.settings("colab"), "nuts") == shipped
    assert nb.RECORDS.shipped(nb.settings("paper"), "nuts") is None
    assert [(r["phi"], r["width"]) for r in shipped["records"]] == list(cfg.sampled)
    for rec in shipped["records"]:
        diag = rec["diagnostics"]
        assert diag["complete"] and diag["draws_used"] == cfg.num_chains * cfg.num_samples, rec["phi"]
    top = ex.RECORDS.shipped(ex.settings("smoke"), "nuts")
    assert top is None or top["provenance"]["command"] == "python -m paththeory nonlinear --profile smoke"


def test_the_records_fields_fit_the_between_network(shipped):
    """Every record holds U^(1) over the network's four paths (lower head, upper head), the levels above it
    (U^(2), the block's U^(M), U_a) with their errors, and the mean predictor on every test sequence; the theories'
    U and levels have the same shapes, so the three compare with the samples on one scale."""
    cfg = nb.settings("smoke")
    prob = nb.problem("relu", cfg)
    n_paths = prob.paths_train.shape[1]
    for rec in shipped["records"]:
        assert set(rec) == RECORD_FIELDS
        U = np.asarray(rec["U"])
        assert U.shape == np.shape(rec["U_se"]) == (n_paths, n_paths) and np.allclose(U, U.T)
        assert [np.shape(m) for m in rec["inner"]] == [np.shape(s) for s in rec["inner_se"]]
        assert np.shape(rec["inner"][-1]) == (1, 1) and rec["inner"][-1][0][0] > 0
        assert len(rec["mean"]) == len(rec["mean_se"]) == cfg.n_test


def test_the_comparison_has_a_row_per_record_against_the_three_theories(results, shipped):
    rows = ex.read_rows(results)
    assert [(r.phi, r.width) for r in rows] == [(r["phi"], r["width"]) for r in shipped["records"]]
    for row in rows:
        assert tuple(a.theory for a in row.against) == ex.THEORIES
        assert all(a.U.distance >= 0 and a.f.distance >= 0 for a in row.against)
        assert row.r_hat > 0 and row.ess > 0 and row.seconds > 0
    found = ex.read_findings(results)
    assert len(found.nearest) == 2 * sum(r.mixed for r in rows)
    assert {(u[0], u[1]) for u in found.unmixed} == {(r.phi, r.width) for r in rows if not r.mixed}
    text = report.verdict_text(found) + report.reading_text(ex.readings(rows))
    assert "R-hat" in report.distance_table(rows) and text


def test_the_theories_have_the_records_shapes(shipped):
    """U^(1) of the heuristic, the GP and the linear theory (on the path features) and their levels have the shapes
    of the samples', level by level."""
    cfg = nb.settings("smoke")
    rec = shipped["records"][0]
    curves = ex.theories(nb.problem(rec["phi"], cfg), [rec["width"]], cfg.temperature)
    for name in ex.THEORIES:
        point = curves[name][rec["width"]]
        assert np.shape(point.U) == np.shape(rec["U"]), name
        assert [np.shape(m) for m in point.inner] == [np.shape(m) for m in rec["inner"]], name
        assert np.shape(point.mean) == np.shape(rec["mean"]), name


def test_the_command_line_refuses_the_gibbs_sampler():
    from paththeory.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["nonlinear_between", "--sampler", "gibbs", "--out", "/nonexistent/x.json"])
    assert "nuts" in str(stop.value)


def test_the_reading_counts_the_mixed_points_where_the_heuristic_is_nearer():
    """Oracle: two mixed rows, the heuristic at 0.1 and the linear theory at 0.5 in U (noise 0.01: clearly nearer),
    at 0.10 and 0.11 in the predictor (noise 0.05: not clearly); an unmixed row is left out of the spans."""
    from paththeory.experiments.compare import distance

    def row(width: int, mixed: bool, shift: float = 0.0) -> ex.Row:
        theory = {"heuristic": (0.1, 0.10), "gp": (0.7, 0.2), "linear": (0.5, 0.11)}
        against = tuple(ex.Against(t, distance(u + shift, 0.01, 20), distance(0.0, None), distance(f, 0.05, 20),
                                   1.0, 1.0) for t, (u, f) in theory.items())
        return ex.Row("relu", width, against, 1.0, 1.001 if mixed else 1.2, 300.0, 60.0, mixed)

    text = report.reading_text(ex.readings([row(10, True), row(30, True, 0.05), row(100, False, 5.0)]))
    assert "the heuristic is 0.100 to 0.150 from the samples" in text
    assert "the linear theory 0.500 to 0.550" in text
    assert "at 2 of the 2 mixed points, by more than four noise floors at 2 of them" in text
    assert "at 2 of the 2 mixed points, by more than four noise floors at 0 of them" in text
    assert ex.readings([row(100, False)]) == [] and report.reading_text([]) == "No record mixed: nothing to read."
