"""Figure helpers: the profile stamp and the symmetric matrix heatmap."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from paththeory.display import plots  # noqa: E402
from paththeory.display.plots import matrix_heatmap, stamp_profile  # noqa: E402


@pytest.fixture
def fig_ax():
    fig, ax = plt.subplots()
    yield fig, ax
    plt.close(fig)


def test_stamp_names_the_profile(fig_ax):
    fig, _ = fig_ax
    text = stamp_profile(fig, "paper")
    assert text.get_text() == "profile: paper"
    assert text in fig.texts


def test_stamp_rejects_unknown_profile(fig_ax):
    with pytest.raises(ValueError, match="valid profiles"):
        stamp_profile(fig_ax[0], "tiny")


def test_heatmap_limits_are_symmetric_and_axes_labelled(fig_ax):
    fig, ax = fig_ax
    m = np.array([[0.5, -2.0], [1.0, 0.25]])
    image = matrix_heatmap(ax, m, ["(0)", "(1)"], "U")
    assert image.get_clim() == (-2.0, 2.0)
    assert image.get_cmap().name == "RdBu_r"
    assert ax.get_title() == "U"
    assert ax.get_xlabel() and ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["(0)", "(1)"]
    assert len(fig.axes) == 2  # the matrix and its colour bar


def test_block_labels_sit_at_block_centres(fig_ax):
    _, ax = fig_ax
    matrix_heatmap(ax, np.eye(6), ["a", "b"], "blocks")
    np.testing.assert_allclose(ax.get_yticks(), [1.0, 4.0])


@pytest.mark.parametrize(
    "m, labels, message",
    [(np.ones((2, 3)), None, "square"), (np.ones((3, 3)), ["a", "b"], "labels")],
)
def test_heatmap_rejects_bad_input(fig_ax, m, labels, message):
    with pytest.raises(ValueError, match=message):
        matrix_heatmap(fig_ax[1], m, labels, "bad")


def test_point_labels_never_overlap_each_other_or_other_points():
    """The head-score scatter of 16 heads in a tight cluster (as for the L2H8 network): every label
    lies inside the axes, clear of every other label and of every marker but its own."""
    rng = np.random.default_rng(0)
    x = np.concatenate([0.65 + 0.02 * rng.random(10), rng.uniform(0.5, 1.0, 6)])
    y = np.concatenate([2 + rng.random(10), rng.uniform(0, 10, 6)])
    other = np.column_stack([x, y + rng.normal(0, 1, 16)])
    fig, (ax,) = plots.panel_grid(1, 4.4)
    ax.plot(x, y, "o")
    ax.plot(*other.T, "s")
    texts = plots.label_points(ax, x, y, [f"({i // 8},{i % 8})" for i in range(16)], avoid=other)
    renderer = fig.canvas.get_renderer()
    boxes = [Text.get_window_extent(t, renderer) for t in texts]  # the labels, without their leader lines
    frame = ax.get_window_extent(renderer)
    assert len(texts) == 16
    assert not [(i, j) for i in range(16) for j in range(i + 1, 16) if boxes[i].overlaps(boxes[j])]
    for b in boxes:
        assert frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1
    with pytest.raises(ValueError, match="labels has 2 entries for 16 points"):
        plots.label_points(ax, x, y, ["a", "b"])


def test_point_labels_clear_the_error_bars():
    """Figures 9.1, 10.2 and 10.5 (head scores): no head label sits on an error bar, its own included."""
    rng = np.random.default_rng(1)
    x = np.concatenate([0.66 + 0.03 * rng.random(8), rng.uniform(0.5, 1.0, 8)])
    y = rng.uniform(0, 10, 16)
    err = rng.uniform(1, 4, 16)
    bars = np.column_stack([x, y - err, y + err])
    fig, (ax,) = plots.panel_grid(1, 5.2)
    ax.errorbar(x, y, yerr=err, fmt="o", capsize=2)
    ax.margins(0.12)
    texts = plots.label_points(ax, x, y, [f"({i // 8},{i % 8})" for i in range(16)], bars=bars)
    renderer = fig.canvas.get_renderer()
    cap = 2.5 * fig.dpi / 72
    bar_boxes = []
    for bx, low, high in bars:
        (x0, y0), (_, y1) = ax.transData.transform([(bx, low), (bx, high)])
        bar_boxes.append(matplotlib.transforms.Bbox.from_extents(x0 - cap, y0, x0 + cap, y1))
    boxes = [Text.get_window_extent(t, renderer) for t in texts]
    assert len({t.get_text() for t in texts}) == len(ax.texts) == 16  # each label once, no leftovers
    hits = [(t.get_text(), j) for t, b in zip(texts, boxes) for j, bb in enumerate(bar_boxes) if b.overlaps(bb)]
    assert not hits
    plt.close(fig)


def test_legend_outside_sits_beside_the_data():
    """Figure 3.1's legend sat on the L = 1 curve; legend_outside puts it right of the axes."""
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for k in range(3):
        ax.plot([0.1, 1, 10], [k + 1, k, k + 1], label=f"L = {k + 1}")
    plots.legend_outside(ax, title="closed form")
    fig.canvas.draw()
    legend, frame = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.x0 >= frame.x1
    assert legend.x1 <= fig.bbox.x1 + 1  # inside the figure: the layout made room
    plots.legend_outside(ax, where="below")
    fig.canvas.draw()
    assert ax.get_legend().get_window_extent().y1 <= ax.get_window_extent().y0
    with pytest.raises(ValueError, match="where"):
        plots.legend_outside(ax, where="inside")
    plt.close(fig)


def _colour(artist):
    return matplotlib.colors.to_hex(artist.get_color())


def test_one_colour_per_quantity_across_the_figures():
    """The theory is COLOURS['theory'], the GP COLOURS['gp'] and NUTS COLOURS['nuts'] in the Markov,
    Omniglot and many-outputs figures alike."""
    from paththeory.experiments import markov, multiclass, omniglot_figures

    assert len(set(plots.COLOURS.values())) == len(plots.COLOURS)  # no two quantities share a colour
    want = {k: matplotlib.colors.to_hex(v) for k, v in plots.COLOURS.items()}
    acc = {"theory": {"10": 0.7, "100": 0.65}, "samples": {"10": 0.71}, "gp_all": 0.6, "gp_good": 0.62,
           "gp_good_denoising": 0.64}
    fig = markov.plot_accuracy({"accuracy": acc, "config": {"n_train": 100}, "temperature": 0.01,
                                "profile": "smoke"})
    lines = {line.get_label(): _colour(line) for line in fig.axes[0].get_lines()}
    assert lines["theory (renormalised kernel)"] == want["theory"]
    assert lines["NUTS samples"] == want["nuts"]
    assert {lines[k] for k in lines if k.startswith("GP")} == {want["gp"]}
    plt.close(fig)

    fig = multiclass.plot_scaling({"scaling": {"2": {"theory": 0.8, "gp": 0.7}, "3": {"theory": 0.6, "gp": 0.5}},
                                   "config": {"n_test": 300}, "profile": "smoke"})
    handles, labels = fig.axes[0].get_legend_handles_labels()
    colours = {label: _colour(h.lines[0] if hasattr(h, "lines") else h) for h, label in zip(handles, labels)}
    assert colours["finite width (theory)"] == want["theory"] and colours["GP"] == want["gp"]
    plt.close(fig)

    results = {"profile": "smoke", "split_names": {"test": "held-out characters"}, "splits": ["test"],
               "accuracy": {"theory": {"test": {"10": 0.7, "100": 0.66}}, "gp": {"test": 0.6}},
               "finite_vs_gp": {"test": {"10": {"se": 0.01}, "100": {"se": 0.01}}},
               "temperature": {"theory": {"10": 0.5, "100": 0.5}, "gp": 0.25}, "gd_accuracy": {"test": 0.75},
               "order_parameter_comparison": {"width": 10, "n_train": 100,
                                              "sampled_accuracy": {"test": {"accuracy": 0.69, "se": 0.02}}}}
    fig = omniglot_figures.plot_accuracy(results)
    ax = fig.axes[0]
    lines = {line.get_label(): _colour(line) for line in ax.get_lines() if not line.get_label().startswith("_")}
    lines |= {c.get_label(): _colour(c.lines[0]) for c in ax.containers}  # the error-bar series
    assert lines["theory (renormalised kernel)"] == want["theory"]
    assert lines["GP (T=0.25)"] == want["gp"] and lines["trained network (GD)"] == want["trained"]
    assert lines["NUTS (P = 100)"] == want["nuts"]
    plt.close(fig)


def test_head_score_labels_clear_markers_and_error_bars_of_both_splits():
    """Figures 9.1, 10.2, 10.5: the head labels of plot_head_scores sit on no marker and no error bar."""
    from paththeory.experiments import omniglot_figures

    rng = np.random.default_rng(2)
    scores = np.concatenate([0.66 + 0.03 * rng.random(4), rng.uniform(0.5, 1.0, 5)])
    pruning = {}
    for s, scale in (("test", 0.05), ("fashion", 0.12)):
        drops, se = rng.normal(0.04, scale, 9), rng.uniform(0.01, 0.02, 9)
        pruning[s] = {"single_head_drop": [drops[:3].tolist(), drops[3:6].tolist(), drops[6:].tolist()],
                      "single_head_se": [se[:3].tolist(), se[3:6].tolist(), se[6:].tolist()],
                      "spearman": {"rho": 0.5, "p_greater": 0.1}}
    results = {"profile": "smoke", "heads": [3, 3, 3], "pruning": pruning,
               "split_names": {"test": "held-out characters", "fashion": "Fashion-MNIST (out of distribution)"},
               "head_scores": {"width": 10, "temperature": 1.0,
                               "scores": [scores[:3].tolist(), scores[3:6].tolist(), scores[6:].tolist()]}}
    fig = omniglot_figures.plot_head_scores(results)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.texts if t.get_text().startswith("(")]
    assert sorted(t.get_text() for t in labels) == sorted(f"({l},{h})" for l in range(3) for h in range(3))
    boxes = [Text.get_window_extent(t, renderer) for t in labels]
    r, cap = 4.0 * fig.dpi / 72, 2.5 * fig.dpi / 72
    obstacles = []
    for s in ("test", "fashion"):
        drops = 100 * np.concatenate(pruning[s]["single_head_drop"])
        se = 100 * np.concatenate(pruning[s]["single_head_se"])
        for x, d, e in zip(scores, drops, se):
            (px, py), (_, lo), (_, hi) = ax.transData.transform([(x, d), (x, d - 2 * e), (x, d + 2 * e)])
            obstacles.append(("bar", matplotlib.transforms.Bbox.from_extents(px - cap, lo, px + cap, hi)))
            if s == "fashion":
                obstacles.append(("marker", matplotlib.transforms.Bbox.from_extents(px - r, py - r, px + r, py + r)))
    hits = [(t.get_text(), kind) for t, b in zip(labels, boxes) for kind, o in obstacles if b.overlaps(o)]
    assert not hits
    assert [t.get_text() for t in fig.legends[0].get_texts()][0].startswith("held-out characters")
    plt.close(fig)


def test_notebook_figures_are_vector_graphics(tmp_path, monkeypatch):
    """In a kernel, use_book_style makes figures SVG (sharp when zoomed on a phone), not PNG."""
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))  # the kernel's profile folder, not the home's
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import matplotlib.pyplot as plt\nfrom paththeory.display.plots import use_book_style\n"
        "use_book_style()\nplt.plot([0, 1], [1, 0])\nplt.show()")])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    kinds = [set(o.get("data", {})) for o in nb.cells[0].outputs if o.output_type == "display_data"]
    assert kinds and all("image/svg+xml" in k and "image/png" not in k for k in kinds), kinds


def test_stamp_is_the_books_smallest_type(fig_ax):
    """9 pt: a phone shows a figure at 0.7 of its drawn size at least (book/_static/paththeory.css), 8.4 px."""
    assert stamp_profile(fig_ax[0], "smoke").get_fontsize() == 9


@pytest.mark.parametrize("n, columns", [(3, 2), (5, 2), (4, 3), (5, 3)])
def test_panel_grid_centres_a_short_last_row(n, columns):
    """No grid shows an empty cell: the panels of a short last row are centred under the full rows."""
    fig, axes = plots.panel_grid(n, max_columns=columns)
    try:
        assert len(axes) == len(fig.axes) == n
        fig.canvas.draw()
        boxes = [ax.get_position() for ax in axes]
        full = [b for b, ax in zip(boxes, axes) if ax.get_subplotspec().rowspan.start == 0]
        last_row = axes[-(n % columns):]
        last = [ax.get_position() for ax in last_row]
        # The last row's span is centred under the first row's (to a fraction of a panel's width).
        first_mid = (min(b.x0 for b in full) + max(b.x1 for b in full)) / 2
        last_mid = (min(b.x0 for b in last) + max(b.x1 for b in last)) / 2
        assert abs(first_mid - last_mid) < 0.05 * full[0].width
        # Its panels are as wide as the others and do not overlap.
        for b in last:
            assert b.width == pytest.approx(full[0].width, rel=0.15)
        assert all(a.x1 <= b.x0 for a, b in zip(last, last[1:]))
    finally:
        plt.close(fig)


def test_panel_grid_full_rows_and_shared_axes():
    fig, axes = plots.panel_grid(4)
    assert [ax.get_subplotspec().colspan for ax in axes] == [range(0, 1), range(1, 2)] * 2
    plt.close(fig)
    fig, axes = plots.panel_grid(3, sharey=True)
    assert axes[0].get_shared_y_axes().joined(axes[0], axes[2])
    fig.canvas.draw()
    assert not any(t.get_visible() for t in axes[1].get_yticklabels())  # the shared axis labelled once per row
    assert any(t.get_visible() for t in axes[2].get_yticklabels())  # the centred panel starts its row
    plt.close(fig)
    with pytest.raises(TypeError, match="centred last row"):
        plots.panel_grid(3, width_ratios=[1, 2])
    plt.close("all")
