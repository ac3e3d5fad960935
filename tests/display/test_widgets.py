"""The explorer's panel data (against independent numpy oracles), its figures, and the widget
itself, built without a frontend."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from paththeory.display.plots import COLUMN_WIDTH  # noqa: E402
from paththeory.predict import accuracy, predictor  # noqa: E402
from paththeory.solve import Theory  # noqa: E402
from paththeory.display.widgets import (  # noqa: E402
    draw_panel,
    explorer,
    nearest_solution,
    panel_data,
    panel_figure,
    solve_panel,
)

T = 0.1


@pytest.fixture
def setup(small_problem):
    arch, f_train, y_train, f_test, y_test = small_problem
    return Theory(arch, f_train, y_train), f_test, y_test


def _numpy_mean_predictor(U, f_train, y, f_test, temperature):
    """``k_*^T (K + T I)^{-1} y`` with kernels built entry by entry from the path features."""
    K = np.einsum("man,ab,qbn->mq", f_train, U, f_train)
    k_star = np.einsum("man,ab,qbn->mq", f_train, U, f_test)
    return k_star.T @ np.linalg.solve(K + temperature * np.eye(len(y)), y)


def _numpy_overlaps(U, f_train, y, k):
    K = np.einsum("man,ab,qbn->mq", f_train, U, f_train)
    vals, vecs = np.linalg.eigh(K)
    top = vecs[:, np.argsort(vals)[::-1][:k]]
    return np.abs(top.T @ y) / np.sqrt(len(y))


def test_panel_data_matches_numpy_oracles(setup):
    theory, f_test, y_test = setup
    f_train, y = np.asarray(theory.features), np.asarray(theory.y)
    panel = solve_panel(theory, f_test, y_test, 8.0, T, n_pcs=12)
    U = panel.solution.U
    assert panel.width == 8.0 and panel.temperature == T and panel.alpha == len(y) / 8.0
    assert not np.allclose(U, np.eye(4), atol=1e-2)  # finite width moved U* away from the GP point
    acc = np.mean(np.sign(_numpy_mean_predictor(U, f_train, y, f_test, T)) == y_test)
    acc_gp = np.mean(np.sign(_numpy_mean_predictor(np.eye(4), f_train, y, f_test, T)) == y_test)
    assert panel.accuracy_theory == pytest.approx(acc) and panel.accuracy_gp == pytest.approx(acc_gp)
    assert panel.overlap_theory.shape == panel.overlap_gp.shape == (12,)
    np.testing.assert_allclose(panel.overlap_theory, _numpy_overlaps(U, f_train, y, 12), atol=1e-8)
    np.testing.assert_allclose(panel.overlap_gp, _numpy_overlaps(np.eye(4), f_train, y, 12), atol=1e-8)


def test_all_overlaps_square_to_one(setup):
    theory, f_test, y_test = setup
    panel = solve_panel(theory, f_test, y_test, 30.0, T, n_pcs=len(theory.y))
    assert np.sum(panel.overlap_theory**2) == pytest.approx(1.0) and np.sum(panel.overlap_gp**2) == pytest.approx(1.0)


def test_wide_network_is_the_gp(setup):
    theory, f_test, y_test = setup
    panel = solve_panel(theory, f_test, y_test, 1e8, T)
    np.testing.assert_allclose(panel.solution.U, np.eye(4), atol=1e-5)
    assert panel.accuracy_theory == panel.accuracy_gp
    np.testing.assert_allclose(panel.overlap_theory, panel.overlap_gp, atol=1e-4)


def test_warm_start_reaches_the_same_point(setup):
    theory, f_test, y_test = setup
    cold = solve_panel(theory, f_test, y_test, 10.0, T)
    warm = solve_panel(theory, f_test, y_test, 10.0, T, init=theory.solve(12.0, T))
    np.testing.assert_allclose(warm.solution.U, cold.solution.U, atol=1e-6)


def test_panel_data_rejects_bad_test_sets(setup):
    theory, f_test, y_test = setup
    solution = theory.solve(1e4, T)
    with pytest.raises(ValueError, match="y_test has"):
        panel_data(theory, f_test, y_test[:-1], solution)
    with pytest.raises(ValueError, match="like the training features"):
        panel_data(theory, f_test[:, :2], y_test, solution)
    with pytest.raises(ValueError, match="n_pcs"):
        panel_data(theory, f_test, y_test, solution, n_pcs=0)


def test_nearest_solution_on_a_log_scale():
    cache = {(10.0, 0.1): "a", (1000.0, 0.1): "b", (90.0, 1.0): "c"}
    assert nearest_solution(cache, 90.0, 0.1) == "a"  # log distance 2.2 < 2.4
    assert nearest_solution(cache, 120.0, 0.1) == "b"
    assert nearest_solution(cache, 5.0, 1.0) == "c"
    assert nearest_solution(cache, 5.0, 0.01) is None


def test_panel_figure_draws_three_labelled_axes_for_the_column(setup):
    theory, f_test, y_test = setup
    panel = solve_panel(theory, f_test, y_test, 8.0, T)
    fig = panel_figure(panel, ["a", "b", "c", "d"])
    plots = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(plots) == 3
    assert all(ax.get_xlabel() or ax.get_xticklabels() for ax in plots) and all(ax.get_ylabel() for ax in plots)
    assert any(t.get_text().startswith("profile: ") for t in fig.texts)
    assert fig.get_size_inches()[0] <= COLUMN_WIDTH  # shown at its drawn size in the book
    with pytest.raises(ValueError, match="3 axes"):
        draw_panel(plots[:2], panel, None)


def test_explorer_builds_and_resolves_without_a_frontend(setup):
    widgets = pytest.importorskip("ipywidgets")
    theory, f_test, y_test = setup
    box = explorer(theory, f_test, y_test, widths=(4, 400), temperatures=(T, 1.0))
    assert isinstance(box, widgets.VBox)
    slider, choice = box.children[0].children
    status = box.children[1]
    assert isinstance(slider, widgets.FloatLogSlider) and slider.value == pytest.approx(4.0)
    assert list(box.solutions) == [(4.0, T)] and "GP point" in status.value
    slider.value = 40.0
    assert (40.0, T) in box.solutions and "warm start" in status.value
    choice.value = 1.0
    assert (40.0, 1.0) in box.solutions and "GP point" in status.value
    plt.close("all")
    with pytest.raises(ValueError, match="widths"):
        explorer(theory, f_test, y_test, widths=(0, 10))


def test_static_explorer_embeds_every_panel_and_the_switching_script(setup):
    import re

    from paththeory.display.widgets import static_explorer

    theory, f_test, y_test = setup
    ex = static_explorer(theory, f_test, y_test, widths=(30, 3), temperatures=(T, 1.0), dpi=30)
    assert ex.widths == [3.0, 30.0] and ex.temperatures == [T, 1.0]
    images = re.findall(r'<img data-w="(\d)" data-t="(\d)"[^>]*src="data:image/png;base64,', ex.html)
    assert sorted(images) == [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]
    assert ex.html.count('display:block') == 1  # only the first panel is visible before the script runs
    root = re.search(r'<div class="pt-explorer" id="(pt-explorer-[0-9a-f]+)"', ex.html).group(1)
    assert f'document.getElementById("{root}")' in ex.html and ex._repr_html_() == ex.html
    assert '<input type="range" min="0" max="1"' in ex.html and ex.html.count("<option") == 2
    for (width, temperature), panel in ex.panels.items():  # warm starts reach the same point as a cold solve
        cold = theory.solve(width, temperature)
        np.testing.assert_allclose(panel.solution.U, cold.U, rtol=1e-6, atol=1e-8)


def test_static_explorer_rejects_an_empty_grid(setup):
    from paththeory.display.widgets import static_explorer

    theory, f_test, y_test = setup
    with pytest.raises(ValueError, match="widths"):
        static_explorer(theory, f_test, y_test, widths=(), temperatures=(T,))
    with pytest.raises(ValueError, match="temperatures"):
        static_explorer(theory, f_test, y_test, widths=(3,), temperatures=())


def test_explorer_table_prints_the_panels_it_shows(setup):
    from paththeory.display.widgets import explorer_table, static_explorer

    theory, f_test, y_test = setup
    ex = static_explorer(theory, f_test, y_test, widths=(3, 30), temperatures=(1.0, T), dpi=30)
    n = theory.arch.n_paths
    labels = [f"p{i}" for i in range(n)]
    lines = explorer_table(ex, 3, labels).splitlines()
    assert lines[0].startswith("| T | U* p0 |") and len(lines) == 4
    for line, t in zip(lines[2:], (1.0, T)):
        panel = ex.panels[(3.0, t)]
        U = np.asarray(panel.solution.U)
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[0] == f"{t:g}" and cells[1:1 + n] == [f"{u:.2f}" for u in np.diag(U)]
        off = np.where(np.eye(n, dtype=bool), np.inf, U)
        assert cells[1 + n].endswith(f"{off.min():.2f}")
        assert cells[-1] == f"{100 * (panel.accuracy_theory - panel.accuracy_gp):+.1f}"
        mean, _ = predictor(U, theory.features, np.asarray(theory.y), f_test, t)
        assert cells[-3] == f"{accuracy(mean, y_test):.3f}"
    with pytest.raises(ValueError, match="not one of the explorer's widths"):
        explorer_table(ex, 10, labels)
