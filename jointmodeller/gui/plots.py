"""Plots of a run (matplotlib Qt canvas): tissue forces and lengths, contact force over time, and
laxity curves (load against the measured quantity, with the cadaver data when the run has it)."""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from jointmodeller.model.results import RunRecord

TIME_SERIES = (
    ("tissue_force_N", "tissue force [N]", 1.0),
    ("tissue_length_m", "tissue length [mm]", 1000.0),
    ("contact_force_G", "contact force [N]", 1.0),
)
VECTOR_SERIES = ("contact_force_G",)
"""Series of vectors (k, c, 3) plotted as their magnitudes."""
LAXITY_X = ("load", "load_N", "load_Nm", "applied_load")
LAXITY_Y = ("value", "measure", "laxity_deg", "varus_valgus_deg", "displacement")


class PlotPanel(QWidget):
    """Time series of the shown run with a cursor at the replayed time."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.figure = None
        self.canvas = None
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._placeholder = QLabel("Run a study or choose a stored run to see its plots.", self)
        self._layout.addWidget(self._placeholder)
        self._cursors: list = []
        self.plotted: list[str] = []

    def _ensure_canvas(self) -> None:
        """Create the matplotlib canvas on first use (keeps matplotlib out of start-up)."""
        if self.canvas is not None:
            return
        from matplotlib.backends.backend_qtagg import FigureCanvasQTAgg
        from matplotlib.figure import Figure

        self.figure = Figure(figsize=(5, 3), tight_layout=True)
        self.canvas = FigureCanvasQTAgg(self.figure)
        self._placeholder.hide()
        self._layout.addWidget(self.canvas)

    def show_run(self, run: RunRecord | None) -> None:
        """Draw what the run holds (nothing when None)."""
        if run is None and self.canvas is None:
            self.plotted = []
            return
        self._ensure_canvas()
        self.figure.clear()
        self._cursors = []
        self.plotted = []
        if run is None:
            self.canvas.draw_idle()
            return
        s = run.series
        panels = []
        t = np.asarray(s["time"], float).reshape(-1) if "time" in s else None
        if t is not None:
            for key, label, scale in TIME_SERIES:
                if key in s and np.asarray(s[key]).shape[0] == t.shape[0]:
                    panels.append(("time", key, label, scale))
        xk = next((k for k in LAXITY_X if k in s), None)
        yk = next((k for k in LAXITY_Y if k in s), None)
        if xk and yk:
            panels.append(("laxity", (xk, yk), "laxity", 1.0))
        if not panels:
            ax = self.figure.add_subplot(111)
            ax.text(0.5, 0.5, f"{run.study}: {run.status}\n(no series to plot)", ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_axis_off()
        for k, (kind, key, label, scale) in enumerate(panels):
            ax = self.figure.add_subplot(len(panels), 1, k + 1)
            if kind == "time":
                y = np.asarray(s[key], float)
                if key in VECTOR_SERIES:
                    y = np.linalg.norm(y.reshape(t.shape[0], -1, 3), axis=-1)
                y = y.reshape(t.shape[0], -1) * scale
                names = run.labels.get(key) or run.labels.get("tissue") or []
                for j in range(y.shape[1]):
                    ax.plot(t, y[:, j], label=names[j] if j < len(names) else None)
                ax.set_ylabel(label)
                ax.set_xlabel("time [s]")
                if names and y.shape[1] <= 8:
                    ax.legend(fontsize=7, loc="best")
                self._cursors.append(ax.axvline(t[0], color="0.4", lw=0.8))
            else:
                xk, yk = key
                ax.plot(np.asarray(s[xk], float), np.asarray(s[yk], float), "o-", ms=3, label="model")
                if "measured_load" in s and "measured_value" in s:
                    ax.plot(s["measured_load"], s["measured_value"], "s", ms=4, label="measured")
                    ax.legend(fontsize=7)
                ax.set_xlabel(xk)
                ax.set_ylabel(yk)
            self.plotted.append(key if isinstance(key, str) else "laxity")
        self.canvas.draw_idle()

    def set_time(self, t: float) -> None:
        """Move the time cursors (redrawn when Qt is idle)."""
        for c in self._cursors:
            c.set_xdata([t, t])
        if self._cursors:
            self.canvas.draw_idle()


__all__ = ["PlotPanel"]
