"""Figure helpers: the profile stamp and the symmetric matrix heatmap."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

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
