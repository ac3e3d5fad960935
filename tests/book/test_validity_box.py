"""The validity chapter's comparison box states the thresholds the experiments use: its numbers are the constants'."""

from __future__ import annotations

from pathlib import Path

from paththeory.experiments import claims, multiclass, nonlinear, residual, validity

BOX = (Path(__file__).resolve().parents[2] / "book" / "validity.md").read_text()


def test_the_box_states_each_experiments_r_hat_threshold_and_the_claims_tolerances():
    assert validity.R_HAT_OK == multiclass.R_HAT_OK == 1.01
    assert residual.R_HAT_OK == nonlinear.R_HAT_OK == 1.02
    assert "R-hat of $U$ at most 1.01 here and in {doc}`many_outputs`" in BOX
    assert "1.02 in {doc}`residual` and {doc}`nonlinear`" in BOX
    assert f"$U$ within {claims.U_TOLERANCE:.0%} of the samples'".replace("%", " %") in BOX
    assert f"within {round(100 * claims.COMPARABLE_TOLERANCE)} points of the one" in BOX
