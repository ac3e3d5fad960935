"""Figure helpers: the profile stamp and the symmetric matrix heatmap."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from paththeory import plots  # noqa: E402
from paththeory.plots import matrix_heatmap, stamp_profile  # noqa: E402


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
