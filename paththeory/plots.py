"""Small figure helpers shared by the chapters.

* :func:`stamp_profile` writes which profile produced a figure in its bottom-left corner;
* :func:`matrix_heatmap` draws an order-parameter or kernel matrix (RdBu, limits symmetric
  about zero, colour bar, labelled axes), optionally as blocks, one per path.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.text import Text

from paththeory.profiles import current_profile


def stamp_profile(fig: Figure, profile: str | None = None) -> Text:
    """Write ``"profile: <name>"`` in small grey type in the figure's bottom-left corner.

    ``profile=None`` stamps the current profile (:func:`paththeory.profiles.current_profile`).

    Example:
      >>> from matplotlib.figure import Figure
      >>> stamp_profile(Figure(), "smoke").get_text()
      'profile: smoke'
    """
    return fig.text(
        0.005, 0.005, f"profile: {current_profile(profile)}", ha="left", va="bottom", fontsize=7, color="0.55"
    )


def matrix_heatmap(
    ax: Axes,
    M,
    labels: Sequence[str] | None,
    title: str,
    *,
    xlabel: str = "path $\\pi'$",
    ylabel: str = "path $\\pi$",
    cbar_label: str | None = None,
) -> AxesImage:
    """Draw a square matrix ``M[n, n]``: RdBu map (red positive, blue negative), limits ``+-max|M|``.

    Args:
      M: ``[n, n]``; ``M[i, j]`` is drawn at row ``i`` (``ylabel``), column ``j`` (``xlabel``).
      labels: names of the rows/columns; either ``n`` names, or ``k`` names when ``M`` is made of
        ``k x k`` equal blocks (``n = k m``), e.g. a kernel ``[paths * P, paths * P]`` with one block
        per pair of paths: then the ticks sit at block centres and thin lines separate the blocks.
        ``None`` leaves numeric ticks.
      title: axes title.
    Returns:
      the image (its colour bar is attached to ``ax``'s figure).

    Example:
      >>> from matplotlib.figure import Figure
      >>> ax = Figure().subplots()
      >>> matrix_heatmap(ax, np.array([[1.0, -0.5], [-0.5, 2.0]]), ["a", "b"], "U").get_clim()
      (-2.0, 2.0)
    """
    m = np.asarray(M, dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"matrix_heatmap needs a square matrix [n, n]; got shape {m.shape}.")
    n = m.shape[0]
    if labels is not None and (len(labels) == 0 or n % len(labels)):
        raise ValueError(
            f"labels must give one name per row ({n}) or per block of equal size (a divisor of {n}); "
            f"got {len(labels)} labels."
        )
    vmax = float(np.max(np.abs(m))) or 1.0
    image = ax.imshow(m, cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest")
    if labels is not None:
        block = n // len(labels)
        ticks = block * np.arange(len(labels)) + (block - 1) / 2
        ax.set_xticks(ticks, labels, rotation=90 if max(map(len, labels)) > 3 else 0)
        ax.set_yticks(ticks, labels)
        if block > 1:
            for edge in block * np.arange(1, len(labels)) - 0.5:
                ax.axhline(edge, color="0.3", lw=0.5)
                ax.axvline(edge, color="0.3", lw=0.5)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    colorbar = ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    if cbar_label:
        colorbar.set_label(cbar_label)
    return image
