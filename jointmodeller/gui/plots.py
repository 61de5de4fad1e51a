"""Plots of a run (matplotlib, Agg): tissue forces and lengths, contact force over time, and laxity
curves (load against the measured quantity, with the cadaver data when the run has it).

A matplotlib draw of these panels takes 100-300 ms on a slow machine, so the figure is rasterised in
a worker thread and only the finished image is shown on the GUI thread; at most one draw is in
flight and requests made meanwhile are coalesced into one more (the newest figure and cursor time).
"""

from __future__ import annotations

import threading

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

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

    _rendered = Signal(object, int)
    """(RGBA image (h, w, 4), generation) from the drawing thread."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.figure = None
        self.canvas = None
        """The QLabel showing the last finished image of :attr:`figure`."""
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._placeholder = QLabel("Run a study or choose a stored run to see its plots.", self)
        self._layout.addWidget(self._placeholder)
        self._cursors: list = []
        self.plotted: list[str] = []
        self._generation = 0
        self._drawing = False
        self._draw_wanted = False
        self._cursor_t: float | None = None
        self.draws_started = 0
        self.draws_shown = 0
        self._rendered.connect(self._show_image)

    def _ensure_canvas(self) -> None:
        """Create the image view on first use (keeps matplotlib out of start-up)."""
        if self.canvas is not None:
            return
        self.canvas = QLabel(self)
        self.canvas.setAlignment(Qt.AlignCenter)
        self.canvas.setSizePolicy(QSizePolicy(QSizePolicy.Ignored, QSizePolicy.Ignored))
        self._placeholder.hide()
        self._layout.addWidget(self.canvas)

    @staticmethod
    def preload() -> None:
        """Import matplotlib in a background thread (the first plot would otherwise wait ~0.5 s)."""
        def load() -> None:
            import matplotlib.backends.backend_agg  # noqa: F401
            import matplotlib.figure  # noqa: F401

        threading.Thread(target=load, name="matplotlib-import", daemon=True).start()

    def _new_figure(self):
        from matplotlib.figure import Figure

        fig = Figure(figsize=(5, 3))
        fig.subplots_adjust(left=0.1, right=0.98, top=0.96, bottom=0.12, hspace=0.7)
        return fig

    # ------------------------------------------------------------------ drawing off the GUI thread
    def request_draw(self) -> None:
        """Rasterise the current figure in a worker thread (coalesced: one draw in flight)."""
        if self.figure is None:
            return
        if self._drawing:
            self._draw_wanted = True
            return
        self._draw_wanted = False
        self._drawing = True
        self.draws_started += 1
        fig, generation = self.figure, self._generation
        dpi = fig.dpi
        w, h = max(self.width(), 300), max(self.height(), 110 * max(len(fig.axes), 1))
        fig.set_size_inches(w / dpi, h / dpi)
        threading.Thread(target=self._draw_in_thread, args=(fig, generation), name="plot-draw", daemon=True).start()

    def _draw_in_thread(self, fig, generation: int) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        try:
            agg = FigureCanvasAgg(fig)
            agg.draw()
            image = np.asarray(agg.buffer_rgba()).copy()
        except Exception:  # a plot that cannot be drawn leaves the last image
            image = None
        self._rendered.emit(image, generation)

    def _show_image(self, image, generation: int) -> None:
        self._drawing = False
        if image is not None and generation == self._generation and self.canvas is not None:
            h, w = image.shape[:2]
            qimg = QImage(image.data, w, h, 4 * w, QImage.Format_RGBA8888).copy()
            self.canvas.setPixmap(QPixmap.fromImage(qimg))
            self.draws_shown += 1
        if self._cursor_t is not None and self._cursors:
            for c in self._cursors:
                c.set_xdata([self._cursor_t, self._cursor_t])
            self._cursor_t = None
            self._draw_wanted = True
        if self._draw_wanted:
            self.request_draw()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.figure is not None and self.isVisible():
            self.request_draw()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.figure is not None:
            self.request_draw()

    @property
    def drawing(self) -> bool:
        """A draw is in flight."""
        return self._drawing

    def show_run(self, run: RunRecord | None) -> None:
        """Plot what the run holds (nothing when None) in a new figure, drawn off the GUI thread."""
        if run is None and self.canvas is None:
            self.plotted = []
            return
        self._ensure_canvas()
        self._generation += 1
        self.figure = self._new_figure()  # a new figure: the one being drawn is never touched
        self._cursors = []
        self._cursor_t = None
        self.plotted = []
        if run is None:
            self.canvas.clear()
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
        self.request_draw()

    def set_time(self, t: float) -> None:
        """Move the time cursors (redrawn off the GUI thread; while a draw is in flight only the
        newest time is kept)."""
        if not self._cursors:
            return
        if self._drawing:
            self._cursor_t = float(t)
            self._draw_wanted = True
            return
        for c in self._cursors:
            c.set_xdata([t, t])
        self.request_draw()


__all__ = ["PlotPanel"]
