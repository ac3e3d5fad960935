"""Small figure helpers shared by the chapters, and the book's figure style.

* :data:`BOOK_STYLE` and :data:`COLUMN_WIDTH`: every figure is drawn for the book's text column
  (about 760 px at a 1400 px window), so that it is shown at its drawn size and its type
  (9-10 pt, never smaller) stays legible; a phone shows a figure at no less than 0.7 of its drawn
  size, scrolling sideways (``book/_static/paththeory.css``), so 9 pt is 8.4 px there;
  :func:`use_book_style` applies the style to a notebook's figures and
  :func:`book_style` to one figure function's;
* :func:`panel_grid` lays out ``n`` panels at most two side by side, as wide as the column (a short
  last row centred, never an empty cell), and
  :func:`legend_below` gives them one legend outside the data;
* :data:`COLOURS` gives every quantity one colour across the book (the finite-width theory blue,
  the GP grey, NUTS red, the trained network green), and :func:`legend_outside` puts one panel's
  legend beside its data, never on it;
* :func:`label_points` writes point labels clear of every marker, error bar and other label;
* :func:`stamp_profile` writes which profile produced a figure in its bottom-left corner;
* :func:`matrix_heatmap` draws an order-parameter or kernel matrix (RdBu, limits symmetric
  about zero, colour bar, labelled axes), optionally as blocks, one per path.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, Sequence

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.text import Text

from paththeory._checks import as_float_array, check_count, check_positive
from paththeory.profiles import current_profile

#: Width of the book's text column in inches at :data:`BOOK_STYLE`'s 100 dpi: a figure this wide
#: is shown at the size it was drawn, so 9 pt type is 12.5 px on the page.
COLUMN_WIDTH = 7.6
#: Matplotlib settings of every figure of the book: type sizes at display size, no legend frames.
BOOK_STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "figure.titlesize": 10,
    "figure.figsize": (COLUMN_WIDTH / 2 + 0.6, 3.2),
    "svg.hashsalt": "paththeory",  # the same figure gives the same SVG in every build
}


#: One colour per quantity across the book's figures, so that a reader who has learned that the
#: theory is blue never meets it in red. Lines of the same quantity differ by line style (the GP of
#: all paths ``-``, of the good path ``--``...), never by colour.
COLOURS = {
    "theory": "C0",  # the finite-width theory: renormalised kernel K_U, the order parameter U*
    "gp": "0.4",  # the Gaussian-process limit (infinite width), any set of paths
    "nuts": "C3",  # posterior samples of the finite network (NUTS)
    "trained": "C2",  # the network trained by gradient descent
    "data": "0.15",  # a measured quantity of the network that is none of the above (pruning drops)
    "contrast": "C4",  # a baseline the paper does not draw (highest score first)
    "second": "C1",  # a second data set or series of the same quantity (out of distribution)
    "random": "0.5",  # random baselines
    "chance": "0.6",  # chance level, reference lines
}


def use_book_style() -> None:
    """Apply :data:`BOOK_STYLE` to every later figure of this Python session (a chapter calls it once);
    in a notebook, figures are also shown as SVG, whose text stays sharp when a reader zooms into
    a figure on a phone (where the page shows it at half its drawn size).

    Example:
      >>> import matplotlib
      >>> with matplotlib.rc_context():
      ...     use_book_style()
      ...     matplotlib.rcParams["legend.fontsize"]
      9.0
    """
    matplotlib.rcParams.update(BOOK_STYLE)
    _vector_figures_in_notebooks()


def _vector_figures_in_notebooks() -> None:
    """In an IPython kernel, show figures as SVG instead of PNG; elsewhere do nothing."""
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:
        return
    if get_ipython() is not None:
        set_matplotlib_formats("svg")


def book_style(draw: Callable) -> Callable:
    """Decorator: ``draw`` creates its figure under :data:`BOOK_STYLE`, whatever the caller's settings.

    Example:
      >>> @book_style
      ... def tick_size():
      ...     return matplotlib.rcParams["xtick.labelsize"]
      >>> tick_size()
      9.0
    """

    @functools.wraps(draw)
    def styled(*args, **kwargs):
        with matplotlib.rc_context(BOOK_STYLE):
            return draw(*args, **kwargs)

    return styled


def panel_grid(n: int, height: float = 3.0, *, max_columns: int = 2, width: float | None = None,
               **subplot_kw) -> tuple[Figure, list[Axes]]:
    """A figure of ``n`` panels, at most ``max_columns`` side by side, ``width`` inches wide in all
    (default: :data:`COLUMN_WIDTH` for several columns, 4.8 inches for a single one).

    Rows are ``height`` inches tall; the layout is constrained (labels never overlap). A last row
    with fewer panels than the others is centred under them (each panel spans two cells of a grid
    twice as fine), so that no grid shows an empty cell. ``subplot_kw`` goes to
    :meth:`Figure.subplots` (``sharey``...; with a centred last row ``sharex``, ``sharey``,
    ``height_ratios``, ``subplot_kw`` and ``gridspec_kw``). Draw into it under the same style (a
    function decorated with :func:`book_style`).

    Example:
      >>> fig, axes = panel_grid(3)
      >>> len(axes), len(fig.axes), fig.get_size_inches().round(1).tolist()
      (3, 3, [7.6, 6.0])
      >>> [ax.get_subplotspec().colspan for ax in axes]  # the third panel centred under the first two
      [range(0, 2), range(2, 4), range(1, 3)]
    """
    n = check_count(n, "n", hint="panel_grid needs at least one panel.")
    height, max_columns = check_positive(height, "height"), check_count(max_columns, "max_columns")
    width = None if width is None else check_positive(width, "width")
    columns = min(n, max_columns)
    rows = math.ceil(n / columns)
    if width is None:
        width = COLUMN_WIDTH if columns > 1 else 4.8
    fig = _new_figure(figsize=(min(width, COLUMN_WIDTH), height * rows))
    if n % columns:
        return fig, _centred_grid(fig, n, rows, columns, **subplot_kw)
    grid = fig.subplots(rows, columns, squeeze=False, **subplot_kw)
    return fig, list(grid.ravel())


def _centred_grid(fig: Figure, n: int, rows: int, columns: int, *, sharex=False, sharey=False,
                  height_ratios=None, subplot_kw=None, gridspec_kw=None, **unknown) -> list[Axes]:
    """``n`` panels in ``rows`` rows of ``columns``, the short last row centred: a grid of
    ``2 * columns`` columns, each panel two of them wide, the last row's shifted by one per missing panel.
    ``sharex``/``sharey`` as in :meth:`Figure.subplots` (``True``/``"all"``, ``"row"``, ``"col"``); inner
    y tick labels of panels sharing a row's y axis are hidden, as :meth:`Figure.subplots` does."""
    if unknown:
        raise TypeError(f"panel_grid with a centred last row ({n} panels in rows of {columns}) does not take "
                        f"{sorted(unknown)}; give it a multiple of {columns} panels or leave them out.")
    grid = fig.add_gridspec(rows, 2 * columns, height_ratios=height_ratios, **(gridspec_kw or {}))
    last = n - (rows - 1) * columns
    axes: list[Axes] = []

    def partner(share, row: int, column: int) -> Axes | None:
        if share in (True, "all"):
            return axes[0] if axes else None
        if share == "row":
            return axes[row * columns] if column else None
        if share == "col":
            return axes[column] if row else None
        return None

    for i in range(n):
        row, column = divmod(i, columns)
        start = 2 * column + (columns - last if row == rows - 1 else 0)
        ax = fig.add_subplot(grid[row, start:start + 2], sharex=partner(sharex, row, column),
                             sharey=partner(sharey, row, column), **(subplot_kw or {}))
        if sharey in (True, "all", "row") and column:
            ax.tick_params(labelleft=False)
        axes.append(ax)
    return axes


def legend_below(fig: Figure, axes: Sequence[Axes], columns: int = 2) -> None:
    """One legend for all ``axes``, below them and outside the data, each label once. It sits on
    the right, so that it never covers the profile stamp in the bottom-left corner.

    Example:
      >>> fig, (a, b) = panel_grid(2)
      >>> _ = a.plot([0, 1], label="x"); _ = b.plot([1, 0], label="x"); _ = b.plot([0, 0], label="y")
      >>> legend_below(fig, [a, b])
      >>> [t.get_text() for t in fig.legends[0].get_texts()]
      ['x', 'y']
    """
    entries = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if entries:
        fig.legend(list(entries.values()), list(entries), loc="outside lower right", ncols=columns)


def legend_outside(ax: Axes, *, title: str | None = None, where: str = "right") -> None:
    """``ax``'s legend outside its data: to the right of the axes (``where="right"``) or below them
    (``"below"``), so that it never covers a curve at any display width. A figure without a layout
    engine gets the constrained layout, which makes room for it.

    Example:
      >>> fig, (ax,) = panel_grid(1)
      >>> _ = ax.plot([0, 1], label="L = 1")
      >>> legend_outside(ax, title="closed form")
      >>> fig.canvas.draw(); box = ax.get_legend().get_window_extent()
      >>> bool(box.x0 >= ax.get_window_extent().x1)
      True
    """
    if ax.figure.get_layout_engine() is None:  # room for the legend beside the axes
        ax.figure.set_layout_engine("constrained")
    if where == "right":
        ax.legend(title=title, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    elif where == "below":
        ax.legend(title=title, loc="upper center", bbox_to_anchor=(0.5, -0.18), borderaxespad=0.0,
                  ncols=min(3, len(ax.get_legend_handles_labels()[1]) or 1))
    else:
        raise ValueError(f"where must be 'right' or 'below'; got {where!r}.")


#: Where :func:`label_points` tries a label, in points from its marker: beside it, then above or below.
_NEAR = ((5, 3, "left", "bottom"), (-5, 3, "right", "bottom"), (5, -3, "left", "top"), (-5, -3, "right", "top"),
         (0, 7, "center", "bottom"), (0, -7, "center", "top"))


def _ring(radius: float, n: int = 12) -> tuple:
    """``n`` label places at ``radius`` points around a marker, each aligned away from it."""
    out = []
    for a in np.arange(n) * 2 * np.pi / n:
        c, s = math.cos(a), math.sin(a)
        out.append((radius * c, radius * s, "left" if c > 0.3 else "right" if c < -0.3 else "center",
                    "bottom" if s >= 0 else "top"))
    return tuple(out)


#: Farther places, with a leader line: rings of growing radius.
_FAR = tuple(place for radius in (14, 20, 28, 36, 46) for place in _ring(radius))
#: Every place in the order tried, with whether it gets a leader line; the last (the first place
#: again) is taken even when it is not free.
_PLACES = tuple((*p, False) for p in _NEAR) + tuple((*p, True) for p in _FAR) + ((*_NEAR[0], False),)
_LEADER = dict(arrowstyle="-", color="0.6", lw=0.6, shrinkA=0, shrinkB=3)


def label_points(ax: Axes, x, y, labels: Sequence[str], *, avoid=None, bars=None, fontsize: float = 9,
                 color: str = "0.25") -> list[Text]:
    """Write ``labels[i]`` next to the point ``(x[i], y[i])`` where it overlaps no other label or point.

    Greedy, in display space: each label takes the first free place of six around its marker, then
    of rings of places farther out (14 to 46 points) with a thin leader line; if none is free, the
    least crowded place (first clear of the other labels, then of the points, then of the bars).
    Free means inside the axes and clear of every label already placed, of every other point
    (these and ``avoid``, an ``[m, 2]`` array of data coordinates, e.g. a second series) and of
    every error bar (``bars``, an ``[k, 3]`` array of ``(x, low, high)`` in data coordinates, the
    label's own point's bar included). Call it once the figure's layout is final (after its
    legend); the labels themselves are kept out of the layout.

    Example:
      >>> fig, (ax,) = panel_grid(1)
      >>> _ = ax.plot([0, 0.01, 0.02], [0, 0, 0], "o")
      >>> texts = label_points(ax, [0, 0.01, 0.02], [0, 0, 0], ["a", "b", "c"])
      >>> r = fig.canvas.get_renderer(); boxes = [Text.get_window_extent(t, r) for t in texts]
      >>> any(p.overlaps(q) for i, p in enumerate(boxes) for q in boxes[i + 1:])
      False
    """
    from matplotlib.transforms import Bbox

    xs, ys = as_float_array(x, "x", ndim=1), as_float_array(y, "y", ndim=1)
    if xs.shape != ys.shape:
        raise ValueError(f"x and y must give one coordinate per point; got {xs.size} x and {ys.size} y.")
    if isinstance(labels, str):
        raise TypeError(f"labels must be a list of one text per point, not the string {labels!r:.60}.")
    if len(labels) != len(xs):
        raise ValueError(f"labels has {len(labels)} entries for {len(xs)} points.")
    xy = np.column_stack([xs, ys])
    others = np.asarray(avoid, float).reshape(-1, 2) if avoid is not None else np.empty((0, 2))
    fig = ax.figure
    fig.canvas.draw()  # the final layout, so that display coordinates hold
    renderer = fig.canvas.get_renderer()
    r = 4.0 * fig.dpi / 72  # a marker's half-size in pixels
    points = [Bbox.from_extents(px - r, py - r, px + r, py + r)
              for px, py in ax.transData.transform(np.vstack([xy, others]))]
    segments = np.asarray(bars, float).reshape(-1, 3) if bars is not None else np.empty((0, 3))
    segments = segments[np.all(np.isfinite(segments), axis=1)]
    cap = 2.5 * fig.dpi / 72  # an error bar's half-width (its caps) in pixels
    bar_boxes = []
    for bx, low, high in segments:
        (x0, y0), (x1, y1) = ax.transData.transform([(bx, low), (bx, high)])
        bar_boxes.append(Bbox.from_extents(x0 - cap, min(y0, y1), x0 + cap, max(y0, y1)))
    frame = ax.get_window_extent(renderer)
    placed: list = []
    texts = []
    for i in np.argsort(xy[:, 0], kind="stable"):
        best = None  # (cost, place) of the least crowded place, taken when none is free
        for dx, dy, ha, va, leader in _PLACES:
            t = ax.annotate(labels[i], xy[i], xytext=(dx, dy), textcoords="offset points", ha=ha, va=va,
                            fontsize=fontsize, color=color, arrowprops=_LEADER if leader else None,
                            annotation_clip=False)
            t.set_in_layout(False)
            t.update_positions(renderer)
            box = Text.get_window_extent(t, renderer)  # the text alone; a leader line may cross markers
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            cost = (100 * (not inside) + 10 * sum(box.overlaps(b) for b in placed)
                    + 5 * sum(box.overlaps(b) for k, b in enumerate(points) if k != i)
                    + sum(box.overlaps(b) for b in bar_boxes))
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, t, box)
            else:
                t.remove()
            if cost == 0:
                break
        placed.append(best[2])
        texts.append(best[1])
    return texts


def _new_figure(**kwargs) -> Figure:
    """A pyplot figure (shown inline in Jupyter) with the book's style and a constrained layout."""
    import matplotlib.pyplot as plt

    with matplotlib.rc_context(BOOK_STYLE):
        return plt.figure(layout="constrained", **kwargs)


def stamp_profile(fig: Figure, profile: str | None = None) -> Text:
    """Write ``"profile: <name>"`` in grey type in the figure's bottom-left corner (9 pt, the book's
    smallest, so that it stays readable where a phone shows the figure at 0.7 of its drawn size).

    ``profile=None`` stamps the current profile (:func:`paththeory.profiles.current_profile`).

    Example:
      >>> from matplotlib.figure import Figure
      >>> stamp_profile(Figure(), "smoke").get_text()
      'profile: smoke'
    """
    return fig.text(
        0.005, 0.005, f"profile: {current_profile(profile)}", ha="left", va="bottom", fontsize=9, color="0.5"
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
    m = as_float_array(M, "M", ndim=2)
    if m.shape[0] != m.shape[1]:
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
