"""Figures of the Omniglot experiments (Fig. 3 b-f), drawn from a ``results.json`` dict of
``paththeory.experiments.omniglot.run`` alone, so they can be redrawn from a saved run.

:func:`plot_accuracy` (Fig. 3b, with the NUTS points), :func:`plot_temperature_grid`,
:func:`plot_pc_overlaps` (Fig. 3d), :func:`plot_order_parameters` (Fig. 3c), :func:`plot_head_scores` (Fig. 3e), :func:`plot_pruning` (Fig. 3f) and
:func:`plot_score_sensitivity`. Each is stamped with the profile that produced the results.
"""

from __future__ import annotations

import textwrap
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from paththeory.display.plots import (COLOURS, COLUMN_WIDTH, book_style, label_points, legend_below, matrix_heatmap,
                              panel_grid, stamp_profile)


def _floats(values) -> np.ndarray:
    """A list (or nested lists) from JSON, ``None`` (NaN in JSON) back to NaN."""
    a = np.array(values, dtype=object)
    a[np.equal(a, None)] = np.nan
    return a.astype(float)


def _finish_split_panel(ax, results: dict, split: str, xlabel: str) -> None:
    """The axis labels and title (the split's name) shared by the per-split panels."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel("accuracy")
    ax.set_title(textwrap.fill(results["split_names"][split], 40))


def _finish(fig: Figure, results: dict) -> Figure:
    """The profile stamp (and a tight layout for a figure without a layout engine)."""
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    stamp_profile(fig, results["profile"])
    return fig


def _curve(d: dict) -> tuple[np.ndarray, np.ndarray]:
    items = sorted((int(k), np.nan if v is None else v) for k, v in d.items())
    return np.array([k for k, _ in items]), np.array([v for _, v in items], dtype=float)


@book_style
def plot_accuracy(results: dict, splits: Sequence[str] | None = None) -> Figure:
    """Fig. 3b: theory accuracy (validation-selected T per N) against N, with the GP and the trained network.

    The error bars are two paired standard errors of the difference from the GP on the same sequences;
    each panel marks the selected temperature where it changes with N. The NUTS point (when the run
    sampled) carries two standard errors of its own accuracy and is drawn just right of its width, so
    that it does not hide the theory's point.
    """
    splits = [s for s in (splits or results["splits"]) if s != "validation"]
    fig, axes = panel_grid(len(splits), 2.9)
    for ax, s in zip(axes, splits):
        widths, acc = _curve(results["accuracy"]["theory"][s])
        se = np.array([results["finite_vs_gp"][s][str(w)]["se"] for w in widths])
        temps = [results["temperature"]["theory"][str(w)] for w in widths]
        ax.errorbar(widths, acc, yerr=2 * se, fmt="o-", color=COLOURS["theory"], capsize=2,
                    label="theory (renormalised kernel)")
        ax.set_xscale("log")
        for k, (w, tt) in enumerate(zip(widths, temps)):  # the selected T where it changes, above the data
            if k == 0 or tt != temps[k - 1]:
                ax.text(w, 0.97, f"T={tt:g}", transform=ax.get_xaxis_transform(), fontsize=9, ha="center",
                        va="top", color="0.3")
        ax.margins(x=0.15, y=0.12)
        ax.axhline(results["accuracy"]["gp"][s], color=COLOURS["gp"], ls="--",
                   label=f"GP (T={results['temperature']['gp']:g})")
        if "gd_accuracy" in results:
            ax.axhline(results["gd_accuracy"][s], color=COLOURS["trained"], ls=":",
                       label="trained network (GD)")
        sampled = (results.get("order_parameter_comparison") or {}).get("sampled_accuracy") or {}
        if s in sampled:
            comp = results["order_parameter_comparison"]
            ax.errorbar([comp["width"] * 1.2], [sampled[s]["accuracy"]], yerr=[2 * sampled[s]["se"]], fmt="D",
                        color=COLOURS["nuts"], ms=5, capsize=2, label=f"NUTS (P = {comp['n_train']})")
        low, high = ax.get_ylim()
        ax.set_ylim(low, high + 0.12 * (high - low))  # room for the T labels above the data
        _finish_split_panel(ax, results, s, "width $N$")
    legend_below(fig, axes)
    return _finish(fig, results)


@book_style
def plot_temperature_grid(results: dict) -> Figure:
    """Validation accuracy of the theory on the (T, N) grid; the selected temperature per N is boxed."""
    grid = np.asarray(results["accuracy_grid"]["theory"]["validation"], dtype=float)
    widths, temps = results["widths"], results["temperatures"]
    fig, ax = plt.subplots(figsize=(max(4.5, 1.5 + 0.6 * len(widths)), max(3.2, 1.2 + 0.4 * len(temps))))
    image = ax.imshow(grid, cmap="viridis", aspect="auto", origin="lower")
    for j, w in enumerate(widths):
        i = temps.index(results["temperature"]["theory"][str(w)])
        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="w", lw=2))
    ax.set_xticks(range(len(widths)), [str(w) for w in widths])
    ax.set_yticks(range(len(temps)), [f"{t:g}" for t in temps])
    ax.set_xlabel("width $N$")
    ax.set_ylabel("temperature $T$")
    ax.set_title("validation accuracy (selected T boxed)")
    fig.colorbar(image, ax=ax, label="accuracy")
    stamp_profile(fig, results["profile"])
    return fig


@book_style
def plot_pc_overlaps(results: dict) -> Figure:
    """Fig. 3d: overlap ``|phi_i . y| / sqrt(P)`` of the training kernel's top principal components with the
    labels, finite-width ``K_U`` against the GP kernel, and the cumulative fraction of the labels they hold."""
    pcs = results["pc_overlap"]
    fig, (ax, ax_c) = panel_grid(2, 3.2)
    for key, label, color in (("theory", f"$K_U$, N = {pcs['width']}", COLOURS["theory"]),
                                 ("gp", "$K_{GP}$", COLOURS["gp"])):
        ov = np.asarray(pcs[key], dtype=float)
        rank = np.arange(1, len(ov) + 1)
        ax.bar(rank + (-0.2 if key == "theory" else 0.2), ov, width=0.4, color=color, label=label)
        ax_c.plot(rank, np.cumsum(ov**2), "o-" if key == "theory" else "s--", ms=3, color=color, label=label)
    ax.set_xlabel("principal component (by eigenvalue)")
    ax.set_ylabel(r"overlap $|\phi_i\cdot y|/\sqrt{P}$")
    ax.legend()
    ax_c.set_xlabel("number of leading components")
    ax_c.set_ylabel("fraction of $y$ they hold")
    ax_c.set_ylim(0, 1)
    ax_c.legend()
    fig.suptitle(f"training set, P = {pcs['n_train']}")
    return _finish(fig, results)


@book_style
def plot_order_parameters(results: dict) -> Figure:
    """Fig. 3c: ``U`` from the theory, from NUTS (when sampled) and from gradient descent, paths grouped by
    first-layer head."""
    comp = results["order_parameter_comparison"]
    heads = results["heads"]
    labels = [f"$h_1$={h}" for h in range(heads[0])]
    w = comp["width"]
    panels = [(comp["theory"], f"theory, N = {w}, P = {comp['n_train']}"),
              (comp["sampled"], f"NUTS, N = {w}, P = {comp['n_train']}"),
              (comp["gd"], "gradient descent ($w^\\pi\\cdot w^{\\pi'}$)")]
    panels = [p for p in panels if p[0] is not None]  # no NUTS panel when the run did not sample
    fig, axes = panel_grid(len(panels), 3.5)
    for ax, (U, title) in zip(axes, panels):
        matrix_heatmap(ax, U, labels, title, xlabel="path $\\pi'$ (by $h_1$)", ylabel="path $\\pi$ (by $h_1$)")
    return _finish(fig, results)


def _flat(per_layer) -> np.ndarray:
    return np.concatenate([np.asarray(v, dtype=float) for v in per_layer])


@book_style
def plot_head_scores(results: dict, splits: Sequence[str] = ("test", "fashion")) -> Figure:
    """Fig. 3e: accuracy drop when pruning one head (two paired standard errors) against its theory score."""
    hs, pr = results["head_scores"], results["pruning"]
    scores = _flat(hs["scores"])
    names = [f"({l},{h})" for l, n in enumerate(results["heads"]) for h in range(n)]
    fig, (ax,) = panel_grid(1, 4.4 if len(names) <= 9 else 5.2, width=0.8 * COLUMN_WIDTH)
    series, bars = [], []
    for k, s in enumerate(s for s in splits if s in pr):
        drops, se = 100 * _flat(pr[s]["single_head_drop"]), 100 * _flat(pr[s]["single_head_se"])
        rho, p = pr[s]["spearman"]["rho"], pr[s]["spearman"]["p_greater"]
        text = "undefined" if rho is None else f"{rho:.2f} (p = {p:.3f})"
        # the labelled split dark, the second one in the book's colour for a second data set
        ax.errorbar(scores, drops, yerr=2 * se, fmt="os"[k % 2], color=(COLOURS["data"], COLOURS["second"])[k % 2],
                    capsize=2, ms=5 if k == 0 else 4, zorder=3 - k,
                    label=f"{results['split_names'][s].split(' (')[0]}, $\\rho$ = {text}")
        series.append(drops)
        bars += [(x, d - 2 * e, d + 2 * e) for x, d, e in zip(scores, drops, se)]
    ax.axhline(0, color=COLOURS["chance"], lw=0.8)
    ax.set_xlabel(f"head score (theory, N = {hs['width']}, T = {hs['temperature']:g})")
    ax.set_ylabel("accuracy drop when pruned (points)")
    ax.margins(x=0.12, y=0.12)
    legend_below(fig, [ax], columns=1)
    if series and len(names) <= 16:  # heads labelled on the first split, clear of every marker and bar
        label_points(ax, scores, series[0], names,
                     avoid=[(s_, d) for drops in series[1:] for s_, d in zip(scores, drops)], bars=bars)
    return _finish(fig, results)


@book_style
def plot_pruning(results: dict, splits: Sequence[str] = ("test", "fashion", "mnist")) -> Figure:
    """Fig. 3f: accuracy against the number of heads pruned, theory order vs reverse and random orders."""
    pr = results["pruning"]
    splits = [s for s in splits if s in pr]
    fig, axes = panel_grid(len(splits), 2.9)
    for ax, s in zip(axes, splits):
        cum = pr[s]["cumulative"]
        band = {k: _floats(v) for k, v in cum["random"].items() if k != "n"}
        k = np.arange(len(band["mean"]))
        ax.fill_between(k, band["q05"], band["q95"], color="0.85",  # a lighter shade of COLOURS["random"]
                        label=f"{cum['random']['n']} random orders (5-95 %)")
        ax.plot(k, band["mean"], color=COLOURS["random"], lw=1, label="random orders (mean)")
        ax.plot(k, _floats(cum["score_ascending"]), "o-", color=COLOURS["theory"],
                label="lowest score first (theory)")
        ax.plot(k, _floats(cum["score_descending"]), "s--", color=COLOURS["contrast"],
                label="highest score first")
        ax.axhline(0.5, color=COLOURS["chance"], ls=":", lw=0.8)
        _finish_split_panel(ax, results, s, "heads pruned")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # a count of heads
    legend_below(fig, axes)
    return _finish(fig, results)


@book_style
def plot_score_sensitivity(results: dict) -> Figure:
    """Spearman's rho (score against single-head drop) over the (T, N) grid of the score, and for the
    other rules, training-set sizes and fresh training sets at the score's (N, T)."""
    sens = results["score_sensitivity"]
    grid = _floats(sens["grid"]["rho"])
    fig, (ax_g, ax_b) = panel_grid(2, 3.6, max_columns=1, width=0.8 * COLUMN_WIDTH)
    image = ax_g.imshow(grid, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", origin="lower")
    ax_g.set_xticks(range(len(sens["grid"]["widths"])), [str(w) for w in sens["grid"]["widths"]])
    ax_g.set_yticks(range(len(sens["grid"]["temperatures"])), [f"{t:g}" for t in sens["grid"]["temperatures"]])
    ax_g.set_xlabel("width $N$ of the score's $U$")
    ax_g.set_ylabel("temperature $T$")
    ax_g.set_title("Spearman $\\rho$(score, drop), paper's score")
    fig.colorbar(image, ax=ax_g)
    bars = [(f"rule: {k}", v["rho"]) for k, v in sens["variants"].items()]
    bars += [(f"P = {p}", v["rho"]) for p, v in sens["train_sizes"].items()]
    bars += [(f"fresh set {i + 1}", v["rho"]) for i, v in enumerate(sens["resamples"])]
    values = _floats([v for _, v in bars])
    ax_b.barh(range(len(bars)), values, color=["C0" if b.startswith("rule") else "C1" if b.startswith("P")
                                                else "C2" for b, _ in bars])
    ax_b.set_yticks(range(len(bars)), [b for b, _ in bars])
    ax_b.axvline(0, color="0.4", lw=0.8)
    ax_b.set_xlim(-1, 1)
    ax_b.invert_yaxis()
    ax_b.set_xlabel(f"Spearman $\\rho$ at N = {sens['width']}, T = {sens['temperature']:g}")
    return _finish(fig, results)
