"""An interactive explorer of the theory over width ``N`` and temperature ``T``, and its static panels.

For one ``(N, T)`` a :class:`Panel` holds what the explorer draws, side by side
(:func:`panel_figure`):

* the order parameter ``U*`` (RdBu heat map, limits symmetric about zero);
* the kernel-task alignment: overlaps ``|v_i . y| / sqrt(P)`` of the labels with the top
  principal components of the training kernels ``K_{U*}`` and ``K_GP`` (spec §4);
* the test accuracy of the mean predictor with ``U*`` and at the GP point ``gp_scale * I``.

:func:`explorer` wraps this in ipywidgets (a log slider for ``N``, a selection for ``T``) and
re-solves on every change, warm-started from the nearest width already solved at that
temperature. ipywidgets is imported inside :func:`explorer` only, so importing this module
needs matplotlib alone. :func:`panel_grid` draws several panels as one static figure (for
pages where widgets are not live, e.g. the built HTML book).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from paththeory._checks import as_float_array
from paththeory.kernels import check_features, kernel_matrix
from paththeory.plots import matrix_heatmap, stamp_profile
from paththeory.predict import accuracy, pc_label_overlap, predictor
from paththeory.solve import Solution, Theory

N_PCS = 30
PANEL_SIZE = (13.0, 3.6)  # inches, one row of three axes


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
    if n_pcs < 1:
        raise ValueError(f"n_pcs must be >= 1; got {n_pcs}.")
    gp_u = theory.arch.gp_scale * np.eye(theory.arch.n_paths)
    y = np.asarray(theory.y)
    t = solution.temperature

    def test_accuracy(U) -> float:
        mean, _ = predictor(U, theory.features, y, feats, t)
        return accuracy(mean, labels)

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


def draw_order_parameter(ax: Axes, panel: Panel, labels: Sequence[str] | None) -> None:
    """Heat map of ``U*`` with the point's ``N``, ``alpha`` and ``T`` in the title."""
    title = f"$U^*$ at N = {panel.width:.3g} ($\\alpha$ = {panel.alpha:.3g}), T = {panel.temperature:g}"
    matrix_heatmap(ax, panel.solution.U, labels, title, cbar_label="$U^*_{\\pi\\sigma}$")


def draw_overlaps(ax: Axes, panel: Panel) -> None:
    """Label overlaps of the top principal components of ``K_{U*}`` and ``K_GP``."""
    k = np.arange(1, panel.overlap_theory.size + 1)
    ax.plot(k, panel.overlap_gp, "s-", color="0.5", ms=4, lw=1, label="$K_{GP}$")
    ax.plot(k, panel.overlap_theory, "o-", color="C3", ms=4, lw=1, label=f"$K_{{U^*}}$, N = {panel.width:.3g}")
    ax.set_xlabel("principal component $i$ (largest eigenvalue first)")
    ax.set_ylabel("$|v_i \\cdot y| / \\sqrt{P}$")
    ax.set_ylim(0, 1)
    ax.set_title("kernel-task alignment")
    ax.legend(fontsize=8)


def draw_accuracy(ax: Axes, panel: Panel) -> None:
    """Test accuracy of the theory's mean predictor next to the GP's."""
    values = [panel.accuracy_theory, panel.accuracy_gp]
    bars = ax.bar(["theory $U^*$", "GP $U \\propto I$"], values, color=["C3", "0.6"])
    ax.bar_label(bars, labels=[f"{v:.3f}" for v in values])
    ax.set_ylim(0.5, 1.0)
    ax.set_ylabel("test accuracy")
    ax.set_title(f"test accuracy, T = {panel.temperature:g}")


def draw_panel(axes: Sequence[Axes], panel: Panel, labels: Sequence[str] | None) -> None:
    """Draw ``panel`` on three axes: ``U*``, the PC overlaps and the accuracies."""
    if len(axes) != 3:
        raise ValueError(f"draw_panel needs 3 axes (U*, overlaps, accuracy); got {len(axes)}.")
    draw_order_parameter(axes[0], panel, labels)
    draw_overlaps(axes[1], panel)
    draw_accuracy(axes[2], panel)


def panel_grid(panels: Sequence[Panel], labels: Sequence[str] | None = None) -> Figure:
    """One row of :func:`draw_panel` per panel, as a static figure stamped with the profile."""
    import matplotlib.pyplot as plt

    if not panels:
        raise ValueError("panel_grid needs at least one panel.")
    fig, axes = plt.subplots(
        len(panels), 3, figsize=(PANEL_SIZE[0], PANEL_SIZE[1] * len(panels)), squeeze=False, layout="constrained"
    )
    for row, panel in zip(axes, panels):
        draw_panel(row, panel, labels)
    stamp_profile(fig)
    return fig


def panel_figure(panel: Panel, labels: Sequence[str] | None = None) -> Figure:
    """The figure of a single panel (what the explorer shows)."""
    return panel_grid([panel], labels)


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
