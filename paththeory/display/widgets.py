"""An interactive explorer of the theory over width ``N`` and temperature ``T``, and its static panels.

For one ``(N, T)`` a :class:`Panel` holds what the explorer draws (:func:`panel_figure`, drawn for
the book's column):

* the order parameter ``U*`` (RdBu heat map, limits symmetric about zero);
* the kernel-task alignment: overlaps ``|phi_i . y| / sqrt(P)`` of the labels with the top
  principal components of the training kernels ``K_{U*}`` and ``K_GP`` (Tiberi et al. 2024, Sec. 3.2 and Fig. 2d);
* the test accuracy of the mean predictor with ``U*`` and at the GP point ``gp_scale * I``.

:func:`explorer` wraps this in ipywidgets (a log slider for ``N``, a selection for ``T``) and
re-solves on every change, warm-started from the nearest width already solved at that
temperature. ipywidgets is imported inside :func:`explorer` only, so importing this module
needs matplotlib alone.

:func:`static_explorer` is the explorer for a page without a kernel (the built HTML book): it
solves a whole grid of ``(N, T)`` points once, draws each panel with :func:`panel_figure`, and returns HTML with the panels embedded as images and
a slider and a selection that switch between them in the browser.
"""

from __future__ import annotations

import base64
import html
import io
import math
import uuid
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from paththeory._checks import as_float_array, check_count
from paththeory.kernels import check_features, kernel_matrix
from paththeory.display.plots import COLOURS, COLUMN_WIDTH, book_style, matrix_heatmap, stamp_profile
from paththeory.predict import accuracy, mean_predictor, pc_label_overlap
from paththeory.solve import Solution, Theory

N_PCS = 30
PANEL_SIZE = (COLUMN_WIDTH, 6.0)  # inches: two rows for the book's column


@dataclass(frozen=True)
class Panel:
    """What the explorer shows for one ``(N, T)``.

    Attributes:
      solution: the solved order parameters at this point.
      overlap_theory: ``[k]`` label overlaps of the top-``k`` PCs of ``K_{U*}`` (largest eigenvalue first).
      overlap_gp: ``[k]`` the same for ``K_GP``.
      accuracy_theory: test accuracy of the mean predictor with ``U*``.
      accuracy_gp: test accuracy at the GP point, same temperature.
      alpha: the load ``P / N`` (``N`` = largest width).
    """

    solution: Solution
    overlap_theory: np.ndarray
    overlap_gp: np.ndarray
    accuracy_theory: float
    accuracy_gp: float
    alpha: float

    @property
    def width(self) -> float:
        return float(max(self.solution.widths))

    @property
    def temperature(self) -> float:
        return self.solution.temperature


def _check_test_set(theory: Theory, features_test, y_test) -> tuple[np.ndarray, np.ndarray]:
    feats = np.asarray(check_features(features_test, "features_test"))
    labels = as_float_array(y_test, "y_test", ndim=1)
    if feats.shape[1:] != tuple(theory.features.shape[1:]):
        raise ValueError(
            f"features_test must be [P_test, n_paths, N0] = [*, {', '.join(map(str, theory.features.shape[1:]))}] "
            f"like the training features; got {feats.shape}."
        )
    if labels.shape[0] != feats.shape[0]:
        raise ValueError(f"y_test has {labels.shape[0]} labels but features_test has {feats.shape[0]} examples.")
    return feats, labels


def panel_data(theory: Theory, features_test, y_test, solution: Solution, n_pcs: int = N_PCS) -> Panel:
    """The :class:`Panel` of an already solved point.

    Args:
      theory: the :class:`~paththeory.solve.Theory` that produced ``solution``.
      features_test: ``[P_test, n_paths, N0]`` test path features; y_test: ``[P_test]`` labels +-1.
      solution: a :class:`~paththeory.solve.Solution` of ``theory``.
      n_pcs: number of principal components in the overlaps.
    """
    feats, labels = _check_test_set(theory, features_test, y_test)
    n_pcs = check_count(n_pcs, "n_pcs")
    if not isinstance(solution, Solution) or not solution.solved_by(theory):
        raise ValueError("solution must be a Solution of this theory (theory.solve(...) or theory.sweep(...)); got "
                         + ("a solution of another Theory." if isinstance(solution, Solution)
                            else f"{type(solution).__name__}."))
    gp_u = theory.arch.gp_scale * np.eye(theory.arch.n_paths)
    y = np.asarray(theory.y)
    t = solution.temperature

    def test_accuracy(U) -> float:
        return accuracy(mean_predictor(U, theory.features, y, feats, t), labels)

    return Panel(
        solution=solution,
        overlap_theory=pc_label_overlap(kernel_matrix(solution.U, theory.features), y, n_pcs),
        overlap_gp=pc_label_overlap(kernel_matrix(gp_u, theory.features), y, n_pcs),
        accuracy_theory=test_accuracy(solution.U),
        accuracy_gp=test_accuracy(gp_u),
        alpha=y.size / float(max(solution.widths)),
    )


def solve_panel(
    theory: Theory,
    features_test,
    y_test,
    width: float,
    temperature: float,
    *,
    init: Solution | None = None,
    n_pcs: int = N_PCS,
) -> Panel:
    """Solve the theory at ``(N, T) = (width, temperature)`` (from ``init`` if given) and build its :class:`Panel`."""
    return panel_data(theory, features_test, y_test, theory.solve(width, temperature, init=init), n_pcs)


# --------------------------------------------------------------------------- drawing


def _width(n: float) -> str:
    """A width for a label: ``3000``, not ``3e+03``; three significant digits below 100."""
    return f"{n:.0f}" if n >= 100 else f"{n:.3g}"


def draw_order_parameter(ax: Axes, panel: Panel, labels: Sequence[str] | None) -> None:
    """Heat map of ``U*`` with the point's ``N``, load ``P/N`` and ``T`` in the title."""
    title = f"$U^*$ at N = {_width(panel.width)} (P/N = {panel.alpha:.3g}), T = {panel.temperature:g}"
    matrix_heatmap(ax, panel.solution.U, labels, title, cbar_label="$U^*_{\\pi\\pi'}$")


def draw_overlaps(ax: Axes, panel: Panel) -> None:
    """Label overlaps of the top principal components of ``K_{U*}`` and ``K_GP``."""
    k = np.arange(1, panel.overlap_theory.size + 1)
    ax.plot(k, panel.overlap_gp, "s-", color=COLOURS["gp"], ms=4, lw=1, label="$K_{GP}$")
    ax.plot(k, panel.overlap_theory, "o-", color=COLOURS["theory"], ms=4, lw=1,
            label=f"$K_{{U^*}}$, N = {_width(panel.width)}")
    ax.set_xlabel("principal component $i$ (largest eigenvalue first)")
    ax.set_ylabel("$|\\phi_i \\cdot y| / \\sqrt{P}$")
    ax.set_ylim(0, 1)
    ax.set_title("kernel-task alignment")
    ax.legend()


def draw_accuracy(ax: Axes, panel: Panel) -> None:
    """Test accuracy of the theory's mean predictor next to the GP's, as a dot plot: the axis runs from chance
    (0.5, two balanced classes) to 1, and a dot's position, not a bar's length, carries its value."""
    values = [panel.accuracy_theory, panel.accuracy_gp]
    rows = [1, 0]
    ax.scatter(values, rows, s=40, color=[COLOURS["theory"], COLOURS["gp"]], zorder=3)
    for value, row in zip(values, rows):
        left = value > 0.92  # a label near 1 goes to the left of its dot
        ax.annotate(f"{value:.3f}", (value, row), xytext=(-7 if left else 7, 0), textcoords="offset points",
                    ha="right" if left else "left", va="center")
    ax.set_yticks(rows, ["theory $U^*$", "GP $U \\propto I$"])
    ax.set_ylim(-0.7, 1.7)
    ax.set_xlim(min(0.5, min(values) - 0.05), 1.0)
    ax.grid(axis="x", alpha=0.4)
    ax.set_xlabel("test accuracy (0.5: chance)")
    ax.set_ylabel("predictor")
    ax.set_title(f"test accuracy, T = {panel.temperature:g}")


def draw_panel(axes: Sequence[Axes], panel: Panel, labels: Sequence[str] | None) -> None:
    """Draw ``panel`` on three axes: ``U*``, the PC overlaps and the accuracies."""
    if len(axes) != 3:
        raise ValueError(f"draw_panel needs 3 axes (U*, overlaps, accuracy); got {len(axes)}.")
    draw_order_parameter(axes[0], panel, labels)
    draw_overlaps(axes[1], panel)
    draw_accuracy(axes[2], panel)


@book_style
def panel_figure(panel: Panel, labels: Sequence[str] | None = None) -> Figure:
    """One panel drawn for the book's text column, as the explorer shows it: ``U*`` and the
    overlaps side by side, the accuracies below them (at most two axes per row, so that the type
    stays legible), stamped with the profile."""
    fig = Figure(figsize=PANEL_SIZE, layout="constrained")
    fig.get_layout_engine().set(wspace=0.12)  # the colour bar's label apart from the next panel's axis label
    grid = fig.add_gridspec(2, 2, height_ratios=(3.0, 1.0))
    draw_panel([fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, :])], panel, labels)
    fig.axes[0].set_title(f"$U^*$, N = {_width(panel.width)}, T = {panel.temperature:g}")
    fig.axes[1].set_xlabel("principal component $i$")
    stamp_profile(fig)
    return fig


# --------------------------------------------------------------------------- the explorer


def nearest_solution(cache: dict[tuple[float, float], Solution], width: float, temperature: float) -> Solution | None:
    """The cached solution at ``temperature`` whose width is nearest to ``width`` on a log scale."""
    same_t = [(w, s) for (w, t), s in cache.items() if t == temperature]
    if not same_t:
        return None
    return min(same_t, key=lambda ws: abs(math.log(ws[0] / width)))[1]


def explorer(
    theory: Theory,
    features_test,
    y_test,
    widths: Sequence[float] = (3.0, 3000.0),
    temperatures: Sequence[float] = (0.01, 0.1, 1.0),
    *,
    labels: Sequence[str] | None = None,
    n_pcs: int = N_PCS,
    steps_per_decade: int = 10,
):
    """An ipywidgets explorer of the theory over ``(N, T)``.

    A log slider spans ``[min(widths), max(widths)]`` (``steps_per_decade`` positions per factor
    of ten) and starts at ``widths[0]``; a selection offers ``temperatures`` and starts at the
    first. Every change re-solves (warm-started from the nearest width already solved at that
    temperature, see :func:`nearest_solution`) and redraws :func:`panel_figure`.

    Returns:
      an ``ipywidgets.VBox`` (controls, a status line, the figure). Its ``solutions`` attribute
      is the dict ``{(N, T): Solution}`` of every point solved so far.
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt
    from IPython.display import display

    _check_test_set(theory, features_test, y_test)
    ws = [float(w) for w in widths]
    temps = [float(t) for t in temperatures]
    if not ws or min(ws) <= 0:
        raise ValueError(f"widths must be positive numbers; got {list(widths)}.")
    if not temps:
        raise ValueError("temperatures must list at least one temperature.")
    lo, hi = math.log10(min(ws)), math.log10(max(ws))
    slider = widgets.FloatLogSlider(
        value=ws[0], base=10, min=lo, max=hi, step=1.0 / steps_per_decade,
        description="width N", continuous_update=False, readout_format=".3g",
    )
    choice = widgets.Dropdown(options=[(f"{t:g}", t) for t in temps], value=temps[0], description="temperature T")
    status = widgets.HTML()
    out = widgets.Output()
    cache: dict[tuple[float, float], Solution] = {}

    def redraw(_change=None) -> None:
        width, temperature = float(slider.value), float(choice.value)
        init = nearest_solution(cache, width, temperature)
        panel = solve_panel(theory, features_test, y_test, width, temperature, init=init, n_pcs=n_pcs)
        cache[(width, temperature)] = panel.solution
        report = panel.solution.report
        status.value = (
            f"N = {width:.3g}, T = {temperature:g}: {report['status']} in {report['iterations']} iterations "
            f"({report['seconds']:.2f} s, max |dS/dU| = {report['grad_norm']:.1e}); "
            f"{'warm start' if init is not None else 'started at the GP point'}"
        )
        with out:
            out.clear_output(wait=True)
            fig = panel_figure(panel, labels)
            display(fig)
            plt.close(fig)

    slider.observe(redraw, names="value")
    choice.observe(redraw, names="value")
    redraw()
    box = widgets.VBox([widgets.HBox([slider, choice]), status, out])
    box.solutions = cache
    return box


# --------------------------------------------------------------------------- the explorer without a kernel


def _png_data_uri(fig: Figure, dpi: int) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


class StaticExplorer:
    """The HTML of :func:`static_explorer`; Jupyter and the book display it through ``_repr_html_``.

    Attributes:
      html: the markup (controls, one ``<img>`` per ``(N, T)``, the switching script).
      widths, temperatures: the grid.
      panels: ``{(N, T): Panel}`` of every point.
    """

    def __init__(self, markup: str, widths: list[float], temperatures: list[float], panels: dict) -> None:
        self.html, self.widths, self.temperatures, self.panels = markup, widths, temperatures, panels

    def _repr_html_(self) -> str:
        return self.html


def explorer_table(view: StaticExplorer, width: float, labels: Sequence[str]) -> str:
    """A Markdown table of the explorer's panels at ``width``, one row per temperature: the
    diagonal of ``U*`` (one column per path, named by ``labels``), its most negative entry, the
    test accuracies of the theory and of the GP, and the gap between them in points.

    Raises ``ValueError`` when ``width`` is not one of the explorer's widths.
    """
    from paththeory.display.tables import markdown_table

    if float(width) not in view.widths:
        raise ValueError(f"width {width:g} is not one of the explorer's widths {view.widths}.")
    labels = list(labels)
    rows = []
    for t in view.temperatures:
        panel = view.panels[(float(width), t)]
        U = np.asarray(panel.solution.U)
        if U.shape[0] != len(labels):
            raise ValueError(f"labels name {len(labels)} paths; U* has {U.shape[0]}.")
        i, j = np.unravel_index(np.argmin(np.where(np.eye(len(U), dtype=bool), np.inf, U)), U.shape)
        gap = 100 * (panel.accuracy_theory - panel.accuracy_gp)
        rows.append([f"{t:g}", *(f"{u:.2f}" for u in np.diag(U)), f"{labels[i]}–{labels[j]}: {U[i, j]:.2f}",
                     f"{panel.accuracy_theory:.3f}", f"{panel.accuracy_gp:.3f}", f"{gap:+.1f}"])
    head = ["T", *(f"U* {name}" for name in labels), "most negative U*", "theory", "GP", "gap (points)"]
    return markdown_table(head, rows)


_SCRIPT = """<script>
(function () {
  var root = document.getElementById("%(id)s");
  var slider = root.querySelector("input"), choice = root.querySelector("select");
  var shown = root.querySelector("output"), widths = %(widths)s;
  function update() {
    shown.textContent = widths[slider.value];
    root.querySelectorAll("img").forEach(function (img) {
      var on = img.dataset.w === slider.value && img.dataset.t === choice.value;
      img.style.display = on ? "block" : "none";
    });
  }
  slider.addEventListener("input", update);
  choice.addEventListener("change", update);
  update();
})();
</script>"""


def static_explorer(
    theory: Theory,
    features_test,
    y_test,
    widths: Sequence[float],
    temperatures: Sequence[float],
    *,
    labels: Sequence[str] | None = None,
    n_pcs: int = N_PCS,
    dpi: int = 100,
) -> StaticExplorer:
    """The explorer as self-contained HTML: every ``(N, T)`` of the grid solved and drawn in advance.

    Each temperature's widths are solved in increasing order, each warm-started from the
    previous one; every panel is drawn by :func:`panel_figure` and embedded as a PNG. A
    slider over ``widths`` and a selection of ``temperatures`` show one panel at a time, in any
    browser, with no kernel (a few lines of JavaScript switch the images).
    """
    _check_test_set(theory, features_test, y_test)
    ws = sorted(float(w) for w in widths)
    temps = [float(t) for t in temperatures]
    if not ws or min(ws) <= 0:
        raise ValueError(f"widths must be positive numbers; got {list(widths)}.")
    if not temps:
        raise ValueError("temperatures must list at least one temperature.")
    for name, values in (("widths", ws), ("temperatures", temps)):
        if len(set(values)) < len(values):
            raise ValueError(f"{name} repeat {sorted({v for v in values if values.count(v) > 1})}; each point of the "
                             "explorer's grid is one panel, so list every value once.")
    uid = f"pt-explorer-{uuid.uuid4().hex[:8]}"
    panels: dict[tuple[float, float], Panel] = {}
    images = []
    for j, temperature in enumerate(temps):
        previous = None
        for i, width in enumerate(ws):
            panel = solve_panel(theory, features_test, y_test, width, temperature, init=previous, n_pcs=n_pcs)
            previous, panels[(width, temperature)] = panel.solution, panel
            alt = f"U*, kernel-task alignment and test accuracy at N = {width:g}, T = {temperature:g}"
            images.append(
                f'<img data-w="{i}" data-t="{j}" alt="{html.escape(alt)}" style="max-width:100%;height:auto;'
                f'display:{"block" if i == j == 0 else "none"}" src="{_png_data_uri(panel_figure(panel, labels), dpi)}">'
            )
    options = "".join(f'<option value="{j}">{t:g}</option>' for j, t in enumerate(temps))
    controls = (
        f'<div style="display:flex;flex-wrap:wrap;gap:0.5em 1.5em;align-items:center">'
        f'<label>width N <input type="range" min="0" max="{len(ws) - 1}" step="1" value="0" '
        f'aria-label="width N"> <output>{ws[0]:g}</output></label>'
        f'<label>temperature T <select aria-label="temperature T">{options}</select></label></div>'
    )
    script = _SCRIPT % {"id": uid, "widths": "[" + ", ".join(f'"{w:g}"' for w in ws) + "]"}
    markup = f'<div class="pt-explorer" id="{uid}">{controls}{"".join(images)}</div>{script}'
    return StaticExplorer(markup, ws, temps, panels)
