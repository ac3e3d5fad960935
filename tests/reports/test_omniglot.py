"""The wording of the Omniglot and pruning chapters' report (:mod:`paththeory.reports.omniglot`), on findings built by
hand."""

from __future__ import annotations

from paththeory.experiments import head_pruning
from paththeory.experiments.omniglot import SETTINGS, PathSimilarity
from paththeory.reports import omniglot as report


def test_the_omniglot_report_words_the_findings():
    table = report.sizes_table(SETTINGS["smoke"])
    assert table.splitlines()[1] == "|---|---|"
    assert "| training / validation / test sequences | P = 600 / 500 / 1000 |" in table
    assert "| NUTS samples | N = 10 on P = 600: 1 chain of 100 draws after 100 warm-up steps |" in table
    assert "| temperatures of the GP | 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1 |" in table

    results = {"splits": ["validation", "test", "fashion"], "widths": [10, 1000],
               "split_names": {"test": "held-out characters", "fashion": "Fashion-MNIST"},
               "temperature": {"theory": {"10": 0.5, "1000": 0.25}, "gp": 0.1},
               "accuracy": {"theory": {"test": {"10": 0.81, "1000": 0.7}, "fashion": {"10": 0.6, "1000": 0.55}},
                            "gp": {"test": 0.69, "fashion": 0.5}},
               "gd_accuracy": {"test": 0.9, "fashion": 0.65}}
    table = report.accuracy_table(results)
    assert table.splitlines()[0] == "| predictor | held-out characters | Fashion-MNIST |"
    assert "| theory, N = 10 (T = 0.5) | 0.810 | 0.600 |" in table and "| GP (T = 0.1) | 0.690 | 0.500 |" in table
    assert "| trained network | 0.900 | 0.650 |" in table

    mantel = {"r": 0.4, "p_greater": 0.001, "p_less": 0.999}
    alike = PathSimilarity(((1.0,),), 0.912, 0.105, 0.2, None, mantel, 0.05, True)
    text = report.path_similarity_sentence(alike)
    assert text == (
        "On the training sequences the attentioned inputs of two paths through the same first-layer head have a mean "
        "cosine similarity of 0.912, those of two paths through different first-layer heads 0.105, and 0.200 when "
        "those share a head of a later layer (Mantel test of the cosines against the same-head indicator: "
        "p = 0.001): paths that share their first-layer head do carry more similar inputs, as the explanation of the "
        "block structure requires.")
    unlike = PathSimilarity(((1.0,),), 0.1, 0.3, None, 0.3, {**mantel, "p_greater": 0.8}, 0.05, False)
    text = report.path_similarity_sentence(unlike)
    assert "heads 0.300, and - when" in text and "p = 0.8" in text and text.endswith(
        "do not carry measurably more similar inputs, so the explanation of the block structure stays a hypothesis "
        "that these inputs do not support.")

    assert set(report.SCORE_RULES) == set(head_pruning.SCORE_VARIANTS)
    assert "the paper's score" in report.SCORE_RULES["abs"]
