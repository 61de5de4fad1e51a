"""The matplotlib figure of a run's plots (Figure and Agg, never pyplot; no Qt, so any thread may
build one): one axes per app.plot_data panel, time cursors, margins that fit any panel size, and
the figure saved as PNG or SVG."""

from __future__ import annotations

import numpy as np

from jointmodeller.app.plot_data import Panel, axis_label, curve_names, curves, measured, times
from jointmodeller.model.results import RunRecord

MARGINS_PT = {"left": 58.0, "bottom": 30.0, "top": 6.0}
"""Figure margins in points (tick labels and axis titles fit at any panel size)."""


def fit_margins(fig) -> None:
    """Set the figure's left, bottom and top margins to MARGINS_PT at its current size."""
    w_in, h_in = fig.get_size_inches()
    if w_in <= 0 or h_in <= 0:
        return
    left = min(0.4, MARGINS_PT["left"] / 72.0 / w_in)
    bottom = min(0.4, MARGINS_PT["bottom"] / 72.0 / h_in)
    top = max(0.6, 1.0 - MARGINS_PT["top"] / 72.0 / h_in)
    fig.subplots_adjust(left=left, bottom=bottom, top=top)


def _legend(ax, names: list, n: int) -> None:
    """A legend beside the axes (outside, so it never hides a curve) for up to 12 named curves."""
    if names and 1 <= n <= 12:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)


def _draw_panel(ax, run: RunRecord, panel: Panel, last_time_axes: bool, shared: bool, cursor_t: float):
    """Draw one panel into ``ax``; returns its time cursor line (at ``cursor_t``) or None."""
    if panel.kind == "time":
        t, y, names = curves(run, panel)
        for j in range(y.shape[1]):
            ax.plot(t, y[:, j], label=names[j] if j < len(names) else None)
        ax.set_ylabel(panel.label)
        if shared and not last_time_axes:
            ax.tick_params(labelbottom=False)
        else:
            ax.set_xlabel("time [s]")
        _legend(ax, names, y.shape[1])
        return ax.axvline(cursor_t, color="0.4", lw=0.8)
    if panel.kind == "bars":
        _, y, names = curves(run, panel)
        row = y[0]
        ticks = [names[j] if j < len(names) else str(j + 1) for j in range(len(row))]
        ax.barh(np.arange(len(row)), row, color="#4878a8")
        ax.set_yticks(np.arange(len(row)), ticks, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(panel.label)
    elif panel.kind == "sweep":
        x, y, names = curves(run, panel)
        for j in range(y.shape[1]):
            ax.plot(x, y[:, j], label=names[j] if j < len(names) else None)
        ax.set_xlabel(axis_label(run, str(panel.key[0])))
        ax.set_ylabel(panel.label)
        _legend(ax, names, y.shape[1])
    else:
        xk, yk = panel.key
        ax.plot(np.asarray(run.series[xk], float), np.asarray(run.series[yk], float), "o-", ms=3, label="model")
        data = measured(run)
        if data is not None:
            ax.plot(*data, "s", ms=4, label="measured")
            ax.legend(fontsize=7)
        ax.set_xlabel(axis_label(run, xk))
        ax.set_ylabel(axis_label(run, yk))
    return None


def make_figure(run: RunRecord, shown: list[Panel], cursor_t: float | None):
    """(Figure, time cursors) of the run's panels; touches nothing else (any thread)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3))
    legend_out = any(p.kind in ("time", "sweep") and len(curve_names(run, p)) >= 1 for p in shown)
    time_axes = [k for k, p in enumerate(shown) if p.kind == "time"]
    shared = len(time_axes) > 1 and len(time_axes) == len(shown)  # one time axis, labelled once
    fig.subplots_adjust(left=0.1, right=0.8 if legend_out else 0.98, top=0.96, bottom=0.12,
                        hspace=0.25 if shared else 0.7)
    if not shown:
        ax = fig.add_subplot(111)
        ax.text(0.5, 0.5, f"{run.study}: {run.status}\n(no series to plot)", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
    t = times(run)
    at = cursor_t if cursor_t is not None else (float(t[0]) if t is not None and t.size else 0.0)
    cursors = []
    for k, panel in enumerate(shown):
        ax = fig.add_subplot(len(shown), 1, k + 1)
        cursor = _draw_panel(ax, run, panel, bool(time_axes) and k == time_axes[-1], shared, at)
        if cursor is not None:
            cursors.append(cursor)
    return fig, cursors


def save_figure(path: str, run: RunRecord, shown: list[Panel], fmt: str, width_in: float, dpi: float) -> str:
    """The panels as a .png (``dpi``) or .svg figure ``width_in`` wide with 2.5 in per panel, without
    the replay cursor (it belongs to the screen). Returns the path."""
    fig, cursors = make_figure(run, shown, None)
    for c in cursors:
        c.remove()
    fig.set_size_inches(width_in, 2.5 * max(len(shown), 1))
    fit_margins(fig)
    fig.savefig(path, dpi=dpi, format=fmt)
    return str(path)


__all__ = ["MARGINS_PT", "fit_margins", "make_figure", "save_figure"]
