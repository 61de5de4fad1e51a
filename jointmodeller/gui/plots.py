"""The plots panel of a run: tissue forces and lengths, contact force over time, and laxity curves
(load against the measured quantity, with the cadaver data when the run has it). Which panels and
curves a run gives is app.plot_data (Qt-free); the matplotlib figure is gui.plot_figure; this module
is the widget that shows it.

A matplotlib draw of these panels takes 100-300 ms on a slow machine, so the figure is rasterised in
a worker thread and only the finished image is shown on the GUI thread; at most one draw is in
flight and requests made meanwhile are coalesced into one more (the newest figure and cursor time).
"""

from __future__ import annotations

import queue
import threading

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

from jointmodeller.app import plot_data
from jointmodeller.app.plot_data import Panel
from jointmodeller.gui.plot_figure import fit_margins, make_figure, save_figure
from jointmodeller.model.results import RunRecord

_SWITCH = {"drawing": 0, "interval": None}
_SWITCH_LOCK = threading.Lock()
DRAW_SWITCH_INTERVAL_S = 0.0005
"""Python's thread switch interval while a plot is drawn (default 5 ms): the GUI thread, which takes
the interpreter lock for every event it handles, gets it back within half a millisecond."""


def _yield_to_gui() -> None:
    """A drawing thread starts: lower the thread switch interval (and this thread's CPU priority)."""
    import os
    import sys

    with _SWITCH_LOCK:
        if _SWITCH["drawing"] == 0:
            _SWITCH["interval"] = sys.getswitchinterval()
            sys.setswitchinterval(DRAW_SWITCH_INTERVAL_S)
        _SWITCH["drawing"] += 1
    if hasattr(os, "setpriority"):
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)  # this thread only (Linux)
        except OSError:
            pass


def _stop_yielding() -> None:
    import sys

    with _SWITCH_LOCK:
        _SWITCH["drawing"] -= 1
        if _SWITCH["drawing"] == 0 and _SWITCH["interval"] is not None:
            sys.setswitchinterval(_SWITCH["interval"])


class PlotPanel(QWidget):
    """Time series of the shown run with a cursor at the replayed time."""

    RESULT_POLL_MS = 15
    """How often the GUI thread looks for a finished drawing while one is in flight."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.figure = None
        self.canvas = None
        """The QLabel showing the last finished image of :attr:`figure`."""
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self.choice = QComboBox(self)
        """Which panel to show: "All" or one panel's title (kept across runs that have it)."""
        self.choice.setToolTip("Show every plot of the run, or one of them at the panel's full height")
        self.choice.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self._choice_row = QWidget(self)
        row = QHBoxLayout(self._choice_row)
        row.setContentsMargins(4, 2, 4, 0)
        row.addWidget(QLabel("Show", self._choice_row))
        row.addWidget(self.choice)
        row.addStretch(1)
        self._choice_row.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Fixed)
        self._choice_row.hide()
        self._layout.addWidget(self._choice_row)
        self.choice.currentTextChanged.connect(self._choice_changed)
        self._placeholder = QLabel("Run a study or choose a stored run to see its plots.", self)
        self._layout.addWidget(self._placeholder)
        self._cursors: list = []
        self.plotted: list[str] = []
        self.run: RunRecord | None = None
        """The run whose plots are shown (None: nothing to export)."""
        self._generation = 0
        self._drawing = False
        self._draw_wanted = False
        self._cursor_t: float | None = None
        self._build_wanted: tuple | None = None
        self._pixmap: QPixmap | None = None
        self.draws_started = 0
        self.draws_shown = 0
        self._results: queue.SimpleQueue = queue.SimpleQueue()
        """From the drawing thread: {"generation", "image" (h, w, 4) RGBA, "figure", "cursors"}; read
        by a GUI-thread timer (no Qt signal crosses threads: PySide6 ≥ 6.8 can crash delivering queued
        Python objects from a Python thread, PYSIDE-3124)."""
        self._result_timer = QTimer(self)
        self._result_timer.setInterval(self.RESULT_POLL_MS)
        self._result_timer.timeout.connect(self._take_result)

    def _ensure_canvas(self) -> None:
        """Create the image view on first use (keeps matplotlib out of start-up)."""
        if self.canvas is not None:
            return
        self.canvas = QLabel(self)
        self.canvas.setAlignment(Qt.AlignCenter)
        self.canvas.setSizePolicy(QSizePolicy(QSizePolicy.Ignored, QSizePolicy.Ignored))
        self._placeholder.hide()
        self._layout.addWidget(self.canvas, 1)  # every pixel the chooser row does not need

    @staticmethod
    def preload() -> None:
        """Import matplotlib in a background thread (the first plot would otherwise wait ~0.5 s)."""
        def load() -> None:
            import importlib

            for name in ("matplotlib.figure", "matplotlib.backends.backend_agg"):
                importlib.import_module(name)

        threading.Thread(target=load, name="matplotlib-import", daemon=True).start()

    # ------------------------------------------------------------------ drawing off the GUI thread
    def _size_inches(self, n_axes: int, dpi: float) -> tuple[float, float]:
        """The figure's size: the image area (the panel without the chooser row), at least 80 px per axes."""
        area = self.canvas if self.canvas is not None and self.canvas.height() > 0 else self
        w, h = max(area.width(), 300), max(area.height(), 80 * max(n_axes, 1))
        return w / dpi, h / dpi

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
        fig = self.figure
        fig.set_size_inches(*self._size_inches(len(fig.axes), fig.dpi))
        self._result_timer.start()
        threading.Thread(target=self._work, args=(self._generation, fig, None, None), name="plot-draw",
                         daemon=True).start()

    def _start_build(self, run: RunRecord, panels: list[Panel]) -> None:
        """Build and rasterise the run's figure in a worker thread (after the one in flight)."""
        if self._drawing:
            self._build_wanted = (run, panels)
            return
        self._build_wanted = None
        self._draw_wanted = False
        self._drawing = True
        self.draws_started += 1
        size = self._size_inches(len(panels), 100.0)
        cursor_t, self._cursor_t = self._cursor_t, None
        self._result_timer.start()
        threading.Thread(target=self._work, args=(self._generation, None, (run, panels, cursor_t), size),
                         name="plot-build", daemon=True).start()

    def _work(self, generation: int, fig, build, size) -> None:
        """Worker thread: (build the figure and) draw it with Agg; the image goes to the GUI thread."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        result = {"generation": generation, "image": None, "figure": None, "cursors": None}
        _yield_to_gui()
        try:
            if build is not None:
                fig, cursors = make_figure(*build)
                fig.set_dpi(100.0)
                fig.set_size_inches(*size)
                result["figure"], result["cursors"] = fig, cursors
            fit_margins(fig)
            agg = FigureCanvasAgg(fig)
            agg.draw()
            result["image"] = np.asarray(agg.buffer_rgba()).copy()
        except Exception:  # a plot that cannot be drawn leaves the last image
            pass
        finally:
            _stop_yielding()
        self._results.put(result)

    def _take_result(self) -> None:
        """GUI thread: show a finished drawing, if one has arrived."""
        try:
            result = self._results.get_nowait()
        except queue.Empty:
            return
        self._result_timer.stop()
        self._show_image(result)

    def _show_image(self, result: dict) -> None:
        self._drawing = False
        current = result["generation"] == self._generation
        if current and result["figure"] is not None:
            self.figure, self._cursors = result["figure"], result["cursors"]
        image = result["image"]
        if current and image is not None and self.canvas is not None:
            h, w = image.shape[:2]
            self._pixmap = QPixmap.fromImage(QImage(image.data, w, h, 4 * w, QImage.Format_RGBA8888).copy())
            self._fit_pixmap()
            self.draws_shown += 1
        if self._build_wanted is not None:
            self._start_build(*self._build_wanted)
            return
        if self._cursor_t is not None and self._cursors:
            for c in self._cursors:
                c.set_xdata([self._cursor_t, self._cursor_t])
            self._cursor_t = None
            self._draw_wanted = True
        if self._draw_wanted:
            self.request_draw()

    def _fit_pixmap(self) -> None:
        """Show the last image scaled into the panel (until the redraw at the new size arrives)."""
        if self._pixmap is None or self.canvas is None:
            return
        size = self.canvas.size()
        pix = self._pixmap
        if pix.width() > size.width() or pix.height() > size.height():
            pix = pix.scaled(size, Qt.KeepAspectRatio, Qt.SmoothTransformation)
        self.canvas.setPixmap(pix)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_pixmap()
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

    def show_run(self, run: RunRecord | None, defer: bool = False) -> None:
        """Plot what the run holds (nothing when None) in a new figure, drawn off the GUI thread.

        :attr:`plotted` is set at once; the figure is built here, or with ``defer`` in the worker
        thread too (tens of milliseconds of figure building the GUI thread does not wait for); the
        figure being drawn is never touched, a new one is made."""
        self.run = run
        if run is None and self.canvas is None:
            self.plotted = []
            return
        self._ensure_canvas()
        self._generation += 1
        self._cursors = []
        self._cursor_t = None
        self._build_wanted = None
        panels = [] if run is None else self.shown_panels(run)
        self.plotted = [p.plotted for p in panels]
        if run is None:
            self.figure = None
            self._pixmap = None
            self.canvas.clear()
        elif defer:  # started in the next turn, with the cursor time set meanwhile
            self.figure = None
            generation = self._generation
            QTimer.singleShot(0, lambda: self._start_build(run, panels) if generation == self._generation else None)
        else:
            self.figure, self._cursors = make_figure(run, panels, None)
            QTimer.singleShot(0, self.request_draw)  # in a later turn of the event loop

    ALL = "All"

    def shown_panels(self, run: RunRecord) -> list[Panel]:
        """The run's panels as the chooser selects them (all, or the one whose title is chosen); the
        chooser lists the run's panels and keeps a choice the new run also has."""
        panels = plot_data.panels(run)
        titles = [p.title for p in panels]
        want = self.choice.currentText() or self.ALL
        self.choice.blockSignals(True)
        self.choice.clear()
        self.choice.addItems([self.ALL] + titles)
        self.choice.setCurrentText(want if want in titles else self.ALL)
        self.choice.blockSignals(False)
        self._choice_row.setVisible(len(panels) > 1)
        chosen = self.choice.currentText()
        return panels if chosen == self.ALL else [p for p, t in zip(panels, titles) if t == chosen]

    def _choice_changed(self, _text: str) -> None:
        if self.run is not None:
            self.show_run(self.run)

    # ------------------------------------------------------------------ export
    EXPORT_FORMATS = ("png", "svg", "csv")

    def export(self, path: str, width_in: float = 8.0, dpi: float = 150.0) -> str:
        """Save the shown run's plots: .png (``dpi``) or .svg as a figure ``width_in`` wide with 2.5 in
        per panel, or .csv as the plotted data (app.plot_data.write_plot_csv). ValueError without a
        run or for another suffix. Returns the path."""
        from pathlib import Path

        if self.run is None:
            raise ValueError("no run is shown: run a study or choose a stored run first")
        suffix = Path(path).suffix.lower().lstrip(".")
        if suffix not in self.EXPORT_FORMATS:
            raise ValueError(f"plots are exported as {', '.join(self.EXPORT_FORMATS)}, not {suffix or 'no suffix'!r}")
        run, panels = self.run, self.shown_panels(self.run)
        if suffix == "csv":
            return plot_data.write_plot_csv(path, run, panels)
        return save_figure(path, run, panels, suffix, width_in, dpi)

    def set_time(self, t: float) -> None:
        """Move the time cursors (redrawn off the GUI thread; while a draw is in flight only the
        newest time is kept)."""
        if not self._cursors:  # the figure is still to be built: it starts there
            self._cursor_t = float(t)
            return
        if self._drawing:
            self._cursor_t = float(t)
            self._draw_wanted = True
            return
        for c in self._cursors:
            c.set_xdata([t, t])
        self.request_draw()


__all__ = ["PlotPanel"]
