"""Plots of a run (matplotlib, Agg): tissue forces and lengths, contact force over time, and laxity
curves (load against the measured quantity, with the cadaver data when the run has it).

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

from jointmodeller.model.results import RunRecord

TIME_SERIES = (
    ("tissue_force_N", "tissue force [N]", 1.0),
    ("tissue_length_m", "tissue length [mm]", 1000.0),
    ("contact_force_G", "contact force [N]", 1.0),
)
VECTOR_SERIES = ("contact_force_G",)
"""Series of vectors (k, c, 3) plotted as their magnitudes."""
SWEEP_SERIES = (
    ("length_m", "tissue length [mm]", 1000.0),
    ("moment_arm_m", "moment arm [mm]", 1000.0),
)
"""Series of a coordinate sweep (muscle paths), plotted per tissue against the coordinate."""
LAXITY_X = ("load", "load_N", "load_Nm", "applied_load")
LAXITY_Y = ("value", "measure", "laxity_deg", "varus_valgus_deg", "displacement")


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


UNIT_SUFFIXES = (("_deg", "°"), ("_rad", "rad"), ("_mm", "mm"), ("_m", "m"), ("_N", "N"), ("_Nm", "N·m"))


def _with_unit(name: str) -> str:
    """"varus_valgus_deg" -> "varus valgus [°]"; a name without a unit suffix keeps its words."""
    for suffix, unit in sorted(UNIT_SUFFIXES, key=lambda su: -len(su[0])):
        if name.endswith(suffix) and len(name) > len(suffix):
            return f"{name[: -len(suffix)].replace('_', ' ')} [{unit}]"
    return name.replace("_", " ")


MARGINS_PT = {"left": 58.0, "bottom": 30.0, "top": 6.0}
"""Figure margins in points (tick labels and axis titles fit at any panel size)."""


def _fit_margins(fig) -> None:
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


def _curves(run: RunRecord, kind: str, key, scale: float) -> tuple[np.ndarray | None, np.ndarray, list[str]]:
    """(x (k,) or None, y (k, c) in the plotted units, curve names) of a "time", "bars" (k = 1, the
    one sample) or "sweep" panel: the one reading of a panel's series, for the figure and the CSV."""
    s = run.series
    if kind == "sweep":
        xk, yk = key
        x = np.asarray(s[xk], float).reshape(-1)
        return x, np.asarray(s[yk], float).reshape(x.shape[0], -1) * scale, run.labels.get(yk) or []
    x = np.asarray(s["time"], float).reshape(-1) if kind == "time" else None
    k = 1 if x is None else x.shape[0]
    y = np.asarray(s[key], float)
    if key in VECTOR_SERIES:
        y = np.linalg.norm(y.reshape(k, -1, 3), axis=-1)
    return x, y.reshape(k, -1) * scale, run.labels.get(key) or run.labels.get("tissue") or []


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

    def _start_build(self, run: RunRecord, panels: list[tuple]) -> None:
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
                fig, cursors = self._make_figure(*build)
                fig.set_dpi(100.0)
                fig.set_size_inches(*size)
                result["figure"], result["cursors"] = fig, cursors
            _fit_margins(fig)
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
        self.plotted = [key if isinstance(key, str) else (key[1] if kind == "sweep" else "laxity")
                        for kind, key, _, _ in panels]
        if run is None:
            self.figure = None
            self._pixmap = None
            self.canvas.clear()
        elif defer:  # started in the next turn, with the cursor time set meanwhile
            self.figure = None
            generation = self._generation
            QTimer.singleShot(0, lambda: self._start_build(run, panels) if generation == self._generation else None)
        else:
            self.figure, self._cursors = self._make_figure(run, panels, None)
            QTimer.singleShot(0, self.request_draw)  # in a later turn of the event loop

    ALL = "All"

    def shown_panels(self, run: RunRecord) -> list[tuple]:
        """The run's panels as the chooser selects them (all, or the one whose title is chosen); the
        chooser lists the run's panels and keeps a choice the new run also has."""
        panels = self._panels(run)
        titles = [self._title(p) for p in panels]
        want = self.choice.currentText() or self.ALL
        self.choice.blockSignals(True)
        self.choice.clear()
        self.choice.addItems([self.ALL] + titles)
        self.choice.setCurrentText(want if want in titles else self.ALL)
        self.choice.blockSignals(False)
        self._choice_row.setVisible(len(panels) > 1)
        chosen = self.choice.currentText()
        return panels if chosen == self.ALL else [p for p, t in zip(panels, titles) if t == chosen]

    @staticmethod
    def _title(panel: tuple) -> str:
        kind, key, label, _ = panel
        return "laxity curve" if kind == "laxity" else label

    def _choice_changed(self, _text: str) -> None:
        if self.run is not None:
            self.show_run(self.run)

    @staticmethod
    def axis_label(run: RunRecord, key: str) -> str:
        """An axis title with its unit for a series name: the laxity load (N or N·m, from the run's
        stiffness unit) and measure (e.g. varus_valgus_deg -> "varus valgus [°]"), a swept
        coordinate, or the name itself."""
        if key == "load" and run.study == "laxity":
            unit = str(run.summary.get("stiffness_unit") or "").split("/")[0]
            kind = str(run.parameters.get("load_kind", "")).replace("_", "–")
            return f"applied {kind + ' ' if kind else ''}load" + (f" [{unit}]" if unit else "")
        if key == "measure" and run.study == "laxity":
            name = str(run.parameters.get("measure") or run.summary.get("measure") or "measure")
            return _with_unit(name)
        return _with_unit(key)

    @staticmethod
    def _panels(run: RunRecord) -> list[tuple]:
        """(kind, key, label, scale) of each panel the run's series give."""
        s = run.series
        panels = []
        t = np.asarray(s["time"], float).reshape(-1) if "time" in s else None
        if t is not None:
            # one sample (an equilibrium): a bar per tissue or contact, not a one-point time series
            kind = "bars" if t.shape[0] == 1 else "time"
            for key, label, scale in TIME_SERIES:
                if key in s and np.asarray(s[key]).shape[0] == t.shape[0] and np.asarray(s[key]).size:
                    panels.append((kind, key, label, scale))
        xk = next((k for k in LAXITY_X if k in s), None)
        yk = next((k for k in LAXITY_Y if k in s), None)
        if xk and yk:
            panels.append(("laxity", (xk, yk), "laxity", 1.0))
            tension = np.asarray(s.get("tissue_tension_N", np.zeros((0, 0))))
            n = np.asarray(s[xk]).reshape(-1).shape[0]
            if tension.ndim == 2 and tension.shape[0] == n and tension.shape[1] > 0 and n > 0:
                panels.append(("sweep", (xk, "tissue_tension_N"), "tissue tension [N]", 1.0))
        coordinate = run.parameters.get("coordinate") if run.study == "muscle_paths" else None
        xk = f"{coordinate}_{run.parameters.get('unit', 'deg')}" if coordinate else None
        if xk in s:  # a coordinate sweep: one curve per tissue against the coordinate
            for key, label, scale in SWEEP_SERIES:
                if key in s and np.asarray(s[key]).shape[0] == np.asarray(s[xk]).shape[0]:
                    panels.append(("sweep", (xk, key), label, scale))
        return panels

    @staticmethod
    def _make_figure(run: RunRecord, panels: list[tuple], cursor_t: float | None):
        """(Figure, time cursors) of the run's panels; touches nothing else (any thread)."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(5, 3))
        legend_out = any(kind in ("time", "sweep") and len(run.labels.get(key if isinstance(key, str) else key[1])
                                                             or run.labels.get("tissue") or []) >= 1
                         for kind, key, _, _ in panels)
        time_axes = [k for k, p in enumerate(panels) if p[0] == "time"]
        shared = len(time_axes) > 1 and len(time_axes) == len(panels)  # one time axis, labelled once
        fig.subplots_adjust(left=0.1, right=0.8 if legend_out else 0.98, top=0.96, bottom=0.12,
                            hspace=0.25 if shared else 0.7)
        cursors = []
        s = run.series
        t = np.asarray(s["time"], float).reshape(-1) if "time" in s else None
        if not panels:
            ax = fig.add_subplot(111)
            ax.text(0.5, 0.5, f"{run.study}: {run.status}\n(no series to plot)", ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_axis_off()
        for k, (kind, key, label, scale) in enumerate(panels):
            ax = fig.add_subplot(len(panels), 1, k + 1)
            if kind == "time":
                _, y, names = _curves(run, kind, key, scale)
                for j in range(y.shape[1]):
                    ax.plot(t, y[:, j], label=names[j] if j < len(names) else None)
                ax.set_ylabel(label)
                if shared and k != time_axes[-1]:
                    ax.tick_params(labelbottom=False)
                else:
                    ax.set_xlabel("time [s]")
                _legend(ax, names, y.shape[1])
                cursors.append(ax.axvline(t[0] if cursor_t is None else cursor_t, color="0.4", lw=0.8))
            elif kind == "bars":
                _, y, names = _curves(run, kind, key, scale)
                y = y[0]
                ticks = [names[j] if j < len(names) else str(j + 1) for j in range(len(y))]
                ax.barh(np.arange(len(y)), y, color="#4878a8")
                ax.set_yticks(np.arange(len(y)), ticks, fontsize=7)
                ax.invert_yaxis()
                ax.set_xlabel(label)
            elif kind == "sweep":
                x, y, names = _curves(run, kind, key, scale)
                for j in range(y.shape[1]):
                    ax.plot(x, y[:, j], label=names[j] if j < len(names) else None)
                ax.set_xlabel(PlotPanel.axis_label(run, key[0]))
                ax.set_ylabel(label)
                _legend(ax, names, y.shape[1])
            else:
                xk, yk = key
                ax.plot(np.asarray(s[xk], float), np.asarray(s[yk], float), "o-", ms=3, label="model")
                if "measured_load" in s and "measured_value" in s:
                    ax.plot(s["measured_load"], s["measured_value"], "s", ms=4, label="measured")
                    ax.legend(fontsize=7)
                ax.set_xlabel(PlotPanel.axis_label(run, xk))
                ax.set_ylabel(PlotPanel.axis_label(run, yk))
        return fig, cursors

    # ------------------------------------------------------------------ export
    EXPORT_FORMATS = ("png", "svg", "csv")

    def export(self, path: str, width_in: float = 8.0, dpi: float = 150.0) -> str:
        """Save the shown run's plots: .png (``dpi``) or .svg as a figure ``width_in`` wide with 2.5 in
        per panel, or .csv as the plotted data (time, then one column per curve in the plotted units;
        a laxity curve as its load and measure columns). ValueError without a run or for another
        suffix. Returns the path."""
        import csv
        from pathlib import Path

        if self.run is None:
            raise ValueError("no run is shown: run a study or choose a stored run first")
        suffix = Path(path).suffix.lower().lstrip(".")
        if suffix not in self.EXPORT_FORMATS:
            raise ValueError(f"plots are exported as {', '.join(self.EXPORT_FORMATS)}, not {suffix or 'no suffix'!r}")
        run, panels = self.run, self.shown_panels(self.run)
        if suffix == "csv":
            header, columns = self.plot_columns(run, panels)
            n = max((len(c) for c in columns), default=0)
            with open(path, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(header)
                for i in range(n):
                    w.writerow([repr(float(c[i])) if i < len(c) else "" for c in columns])
            return str(path)
        fig, cursors = self._make_figure(run, panels, None)
        for c in cursors:  # the replay cursor belongs to the screen, not to the exported figure
            c.remove()
        fig.set_size_inches(width_in, 2.5 * max(len(panels), 1))
        _fit_margins(fig)
        fig.savefig(path, dpi=dpi, format=suffix)
        return str(path)

    @staticmethod
    def plot_columns(run: RunRecord, panels: list[tuple]) -> tuple[list[str], list[np.ndarray]]:
        """(header, columns) of the plotted curves, in the units of the plot axes."""
        s = run.series
        header, columns = [], []
        t = np.asarray(s["time"], float).reshape(-1) if "time" in s else None
        if t is not None and any(kind in ("time", "bars") for kind, *_ in panels):
            header.append("time [s]")
            columns.append(t)
        for kind, key, label, scale in panels:
            if kind in ("bars", "time", "sweep"):
                x, y, names = _curves(run, kind, key, scale)
                if kind == "sweep" and key[0] not in header:
                    header.append(key[0])
                    columns.append(x)
                for j in range(y.shape[1]):
                    header.append(f"{label} {names[j] if j < len(names) else j}")
                    columns.append(y[:, j])
            else:
                xk, yk = key
                header += [xk, yk]
                columns += [np.asarray(s[xk], float).reshape(-1), np.asarray(s[yk], float).reshape(-1)]
                if "measured_load" in s and "measured_value" in s:
                    header += ["measured_load", "measured_value"]
                    columns += [np.asarray(s["measured_load"], float).reshape(-1),
                                np.asarray(s["measured_value"], float).reshape(-1)]
        return header, columns

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
