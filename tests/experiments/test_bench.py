"""The benchmark's comparison machinery on a tiny problem (no timing assertions)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from paththeory.experiments import bench
from paththeory.cli import build_parser, main
from paththeory.solve import Theory


def test_compare_reaches_the_baseline_gradient_and_the_same_minimum(small_problem):
    arch, feats, y, *_ = small_problem
    theory = Theory(arch, feats, y)
    result = bench.compare(theory, [5.0, 50.0], 0.1, lr=0.1, baseline_max_steps=20_000)
    assert result["converged"]
    assert result["grad_norm"] <= result["baseline_grad_norm"] < 1e-5
    assert result["grad_norm_tol_1e-9"] <= 1e-9
    assert all(steps < 20_000 for steps in result["baseline_steps"])
    # Adam and L-BFGS find the same order parameter (to the baseline's tolerance).
    Us, _, _ = bench.baseline_adam(theory, 5.0, 0.1, 0.1, 20_000)
    np.testing.assert_allclose(Us[0], theory.solve(5.0, 0.1).U, atol=1e-3)


def test_cli_parses_bench_and_reproduce():
    args = build_parser().parse_args(["bench", "--json", "--case", "markov", "--baseline-max-steps", "10"])
    assert args.json and args.case == "markov" and args.baseline_max_steps == 10
    args = build_parser().parse_args(["reproduce", "markov", "--profile", "smoke", "--out", "x"])
    assert args.experiment == "markov" and args.profile == "smoke"
    args = build_parser().parse_args(["reproduce", "omniglot", "--out", "x", "--checkpoint", "omniglot_l2h8"])
    assert args.checkpoint == "omniglot_l2h8"
    with pytest.raises(SystemExit, match="omniglot` only"):
        main(["reproduce", "markov", "--out", "x", "--checkpoint", "omniglot_l2h8"])


def test_python_dash_m_runs_the_command_line():
    out = subprocess.run([sys.executable, "-m", "paththeory", "reproduce", "--help"], capture_output=True, text=True,
                         check=True)
    assert "--checkpoint" in out.stdout and "--profile" in out.stdout


def test_first_order_reference_finds_the_solver_minimum(small_problem):
    """The multi-output cases' first-order reference (L-BFGS without the Hessian restart) reaches the same U
    as the restarted solver (both to max |dS/dU| <= 1e-9; U to 1e-7 as in tests/theory/test_hessian.py)."""
    arch, feats, y, *_ = small_problem
    Y = np.stack([y, -y, np.where(y > 0, 0.5, -0.5)], axis=1)
    theory = Theory(arch, feats, Y, hessian=True)
    result = bench.first_order(theory, [5.0, 50.0], 0.1)
    assert result["first_order_converged"] and result["first_order_grad_norm"] <= 1e-9
    assert result["max_abs_U_difference"] < 1e-7
    assert len(result["first_order_iterations"]) == 2


def test_all_runs_every_case_and_the_table_shows_first_order_rows(monkeypatch):
    assert bench.CASES == ("markov", "omniglot", "multioutput", "multioutput_omniglot")
    row = {"case": "multioutput_omniglot", "compile_seconds": 1.0, "seconds_tol_1e-9": 2.0,
           "iterations_tol_1e-9": [20], "first_order_seconds": 20.0, "first_order_iterations": [300],
           "ratio_first_order": 10.0, "max_abs_U_difference": 1e-9, "peak_memory_bytes": 2**30,
           "compilations": [{"seconds": 3.0, "lowering_seconds": 0.5, "xla_seconds": 2.5, "hlo_characters": 2_000_000},
                            {"seconds": 1.5, "lowering_seconds": 0.25, "xla_seconds": 1.25, "hlo_characters": 500_000}]}
    for name in bench.CASES:
        monkeypatch.setattr(bench, f"{name}_case", lambda baseline_max_steps, name=name: {**row, "case": name})
    report = bench.run("all", baseline_max_steps=10)
    assert [c["case"] for c in report["cases"]] == list(bench.CASES)
    table = bench.format_table({"device": "cpu", "cases": [row]})
    assert "first-order L-BFGS    20.00 s, [300] iterations  ratio   10.0x" in table
    assert "2 programs, 4.5 s (lowering 0.8 s, XLA 3.8 s), 2.5M HLO characters" in table


@pytest.mark.clock
def test_compare_survives_a_diverging_baseline(small_problem, monkeypatch):
    """Adam diverging (NaN gradient, as at lr 0.1 with three outputs) is reported, not a crash."""
    arch, feats, y, *_ = small_problem
    theory = Theory(arch, feats, y)
    monkeypatch.setattr(bench, "baseline_adam", lambda *a, **k: ([], float("nan"), 5))
    result = bench.compare(theory, [5.0], 0.1, lr=0.1)
    assert np.isnan(result["baseline_grad_norm"]) and result["grad_norm"] <= 1e-9 and result["converged"]


@pytest.mark.slow
def test_the_sampling_case_compares_both_samplers_at_each_width():
    """A tiny schedule at N = 3 and 4: one row per sampler and width, the ratios are Gibbs over NUTS
    of the rows' own rates, and the table prints every row."""
    from paththeory.experiments import bench_sampling

    case = bench_sampling.sampling_case((3, 4), {"nuts": (1, 10, 20), "gibbs": (2, 10, 40)}, methods=("nuts", "gibbs"))
    rows = case["rows"]
    assert [(r["method"], r["width"]) for r in rows] == [("nuts", 3), ("gibbs", 3), ("nuts", 4), ("gibbs", 4)]
    for nuts, gibbs in (rows[:2], rows[2:]):
        assert gibbs["ratio_ess_U_per_cpu_second"] == pytest.approx(
            gibbs["ess_U_per_cpu_second"] / nuts["ess_U_per_cpu_second"])
        assert gibbs["ratio_seconds_to_2_percent"] == pytest.approx(
            nuts["seconds_to_2_percent"] / gibbs["seconds_to_2_percent"])
        assert gibbs["kept"] == 40 and nuts["kept"] == 20 and gibbs["cpu_seconds"] > 0
    table = bench_sampling.format_rows(case).splitlines()
    assert len(table) == 5 and table[2].split()[:2] == ["3", "gibbs"]


@pytest.mark.slow
def test_mixing_reports_sweeps_per_effective_draw_of_every_quantity():
    from paththeory.experiments import bench_sampling

    out = bench_sampling.mixing(width=3, chains=2, warmup=5, kept=30)
    per = out["sweeps_per_effective_draw"]
    assert out["draws"] == 60 and len(per) == 10 + 4  # 10 entries of U (4 paths), |V0|^2, |V1|^2, |V2|^2, |b|^2
    assert {"U[g,g]", "|V0|^2", "|V2|^2", "|b|^2"} <= set(per) and all(v > 0 for v in per.values())


def test_large_p_point_runs_in_its_own_process_and_reports_its_peak_memory():
    """One small point of the ``large_p`` case through the subprocess it runs in (P = 40 < n N0 = 924, so the
    feature-space backend is forced there): a converged solve, its U and the child's own ru_maxrss."""
    row = bench._point_in_subprocess(40, "low_rank")
    assert row["P"] == 40 and row["kernel_backend"] == "LowRankKernel" and row["converged"]
    assert np.shape(row["U"]) == (4, 4) and row["grad_norm"] <= 1e-9
    assert row["peak_memory_bytes"] > 2**20 and row["seconds"] > 0


def test_large_p_case_reports_the_crossover_and_the_backends_agreement():
    """The crossover is the smallest P where the feature-space solve (operator included) was faster; the dense
    backend runs only up to ``dense_max``. A fake point stands in for the solves (no timing is measured)."""
    seconds = {(1000, "low_rank"): 5.0, (1000, "dense"): 4.0, (2000, "low_rank"): 5.0, (2000, "dense"): 30.0,
               (5000, "low_rank"): 6.0}
    calls = []

    def point(p, backend):
        calls.append((p, backend))
        return {"P": p, "backend": backend, "kernel_backend": "K", "seconds": seconds[p, backend],
                "operator_seconds": 0.5, "compile_seconds": 9.0, "features_seconds": 1.0, "iterations": 30,
                "U": (np.eye(2) * (1.0 + 1e-9 * (backend == "dense"))).tolist(), "peak_memory_bytes": 2**30}

    case = bench.large_p_case((1000, 2000, 5000), dense_max=2000, point=point)
    assert calls == [(1000, "low_rank"), (1000, "dense"), (2000, "low_rank"), (2000, "dense"), (5000, "low_rank")]
    assert case["crossover_P"] == 2000
    assert set(case["max_abs_U_difference"]) == {"1000", "2000"}
    assert case["max_abs_U_difference"]["1000"] == pytest.approx(1e-9)
    table = bench.format_table({"device": "cpu", "cases": [case]})
    assert "crossover at P = 2000" in table and table.count("LowRank") == 0 and len(table.splitlines()) == 8
    assert build_parser().parse_args(["bench", "--case", "large_p"]).case == "large_p"
