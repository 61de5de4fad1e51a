"""The main window's studies: start, pause and stop through the run panel, the progress bar and its
clock, live states streamed to the 3D view, finished runs stored with the project, and stored runs
replayed with the time slider and plotted."""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np
from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QMainWindow

from jointmodeller.app.live import split_batch, study_function
from jointmodeller.model.results import RunRecord
from jointmodeller.render.frames import RunFrames, frame_from_sample, frames_from_run

TIME_LABEL_INTERVAL_S = 0.25
"""The live time caption is rewritten at most this often."""
PROGRESS_BAR_INTERVAL_S = 0.25
"""The progress bar moves at most this often."""
STATUS_MODULES = ("jointmodeller.app.studies", "jointmodeller.app.mobilized")
"""What naming the integrator "auto" chooses imports (the GUI thread only uses them once imported)."""


def imported(names: tuple[str, ...]) -> bool:
    """Whether every module named is imported (not still being imported by another thread, whose
    import lock a use here would wait for)."""
    for name in names:
        module = sys.modules.get(name)
        if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
            return False
    return True


def duration_text(seconds: float) -> str:
    """12 s, 3 min 05 s, 1 h 02 min."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class StudyController(QObject):
    """Runs the studies of one main window: its ``run_panel``, ``runner`` (a study function in a
    thread) and ``process_runner`` (an app study in its own process), ``viewport``, ``plots`` and
    ``doc`` (where finished runs are stored). ``active`` is the runner of the latest start."""

    RUNNING_ITEM = "▶ {study} (running…)"

    def __init__(self, window: QMainWindow):
        super().__init__(window)
        self.window = window
        self.active = window.runner
        self.frames: RunFrames | None = None
        """The samples of the shown run as scene frames (the slider's positions)."""
        self.shown_run: RunRecord | None = None
        self.live_project = window.doc.project
        """The project the running study was started on (its live samples are drawn over it)."""
        self._time_label_at = 0.0
        self._progress_at = 0.0
        self._running_status = ""
        self._run_clock: dict | None = None
        rp = window.run_panel
        window.viewport.liveFrameShown.connect(self._live_frame_shown)
        for runner in (window.runner, window.process_runner):
            runner.progressed.connect(self._progress)
            runner.sample.connect(self.live_sample)
            runner.finished.connect(self._run_finished)
            runner.failed.connect(self._run_failed)
            runner.runningChanged.connect(rp.set_running)
        rp.start.clicked.connect(lambda: self.start())
        rp.pause.toggled.connect(self._pause_toggled)
        rp.stop.clicked.connect(lambda: self.active.stop())
        rp.runs.currentIndexChanged.connect(self._run_chosen)
        rp.slider.valueChanged.connect(self.show_sample)
        for name in window.studies:
            rp.study.addItem(name)
        if not window.studies:
            rp.status.setText("No study code is installed yet.")
        rp.set_running(False)
        self._clock_timer = QTimer(self)
        self._clock_timer.setInterval(1000)
        self._clock_timer.timeout.connect(self._show_clock)
        for runner in (window.runner, window.process_runner):
            runner.runningChanged.connect(lambda on: None if on else self._clock_timer.stop())

    # ------------------------------------------------------------------ running
    def study_function(self, study: str, t_end: float | None = None):
        """``fn(progress, cancel) -> RunRecord`` running ``study`` on a snapshot of the project."""
        options = self.window.run_panel.dynamics_options()
        if t_end is not None:
            options["t_end"] = float(t_end)
        return study_function(study, self.window.doc.project, **options)

    @property
    def running(self) -> bool:
        return self.window.runner.running or self.window.process_runner.running

    def start(self, study: str | None = None, fn=None) -> bool:
        """Start a study off the GUI thread: the chosen app study in its own process (or thread), or
        ``fn(progress, cancel)`` in a worker thread."""
        w, rp = self.window, self.window.run_panel
        if self.running:
            return False
        if fn is None:
            study = study or rp.study.currentText()
            if study not in w.studies:
                rp.status.setText(f"The {study or 'chosen'} study is not available.")
                return False
            problems = w.doc.problems()
            if problems:
                rp.status.setText(f"Fix the marked problems first ({len(problems)}): {problems[0]}")
                return False
            if not w.study_in_process:
                fn = self.study_function(study)
        rp.progress.setValue(0)
        rp.status.setText(self._running_text(study))
        self._running_status = rp.status.text()
        self._run_clock = {"started": time.perf_counter(), "paused_s": 0.0, "paused_at": None, "fraction": 0.0,
                           "t_end": rp.dynamics_options()["t_end"] if study == "dynamics" else None}
        self._clock_timer.start()
        rp.time_label.setText("t = –")  # not the last run's time
        self._show_running_in_run_box(study or "study")
        w.plots.preload()  # the run's plots are drawn when it ends
        self.live_project = w.doc.project
        w.viewport.prepare_live_detail()  # coarse bones and cartilage for its live states
        if fn is None:
            self.active = w.process_runner
            w.process_runner.start(study, w.doc.project, rp.dynamics_options())
        else:
            self.active = w.runner
            w.runner.start(fn)
        return True

    def stop_all(self, wait_ms: int = 10000) -> None:
        """Stop every running study and wait for it (the window closes)."""
        for runner in (self.window.runner, self.window.process_runner):
            if runner.running:
                runner.stop()
                runner.wait(wait_ms)

    def _show_running_in_run_box(self, study: str) -> None:
        """The run box names the study that runs (not the last stored run) until it ends."""
        box = self.window.run_panel.runs
        box.blockSignals(True)
        box.addItem(self.RUNNING_ITEM.format(study=study), None)
        box.setCurrentIndex(box.count() - 1)
        box.blockSignals(False)

    def _pause_toggled(self, on: bool) -> None:
        """Pause or resume the running study; the panel shows the paused state."""
        rp = self.window.run_panel
        clock = self._run_clock
        now = time.perf_counter()
        if clock is not None and on and clock["paused_at"] is None:
            clock["paused_at"] = now
        elif clock is not None and not on and clock["paused_at"] is not None:
            clock["paused_s"] += now - clock["paused_at"]
            clock["paused_at"] = None
        if on:
            self.active.pause()
            rp.pause.setText("Resume")
            rp.progress.setFormat("%p% — paused")
            rp.status.setText("Paused: Resume continues the study, Stop ends it keeping what was computed.")
        else:
            self.active.resume()
            rp.pause.setText("Pause")
            rp.progress.setFormat("%p%")
            if rp.status.text().startswith("Paused"):
                rp.status.setText(self._running_status)

    def _running_text(self, study: str | None) -> str:
        """What the status line says while ``study`` runs (dynamics: the integrator and accuracy used)."""
        if study != "dynamics":
            return f"Running {study or 'study'}…"
        opts = self.window.run_panel.dynamics_options()
        method = opts["method"]
        if method == "auto":
            # which integrator "auto" picks needs app.mobilized (the multibody core, numba): imported by
            # the window's warm-up; until then the study (in its own thread or process) decides alone,
            # as importing it here would hold the event loop for a second
            if not imported(STATUS_MODULES):
                return f"Running dynamics to {opts['t_end']:g} s (integrator chosen automatically, " \
                       f"accuracy 1e-{int(opts['digits'])})…"
            from jointmodeller.app.studies import choose_method

            method = "chosen automatically: " + choose_method(self.window.doc.project, method, opts["digits"])
        return f"Running dynamics to {opts['t_end']:g} s ({method}, accuracy 1e-{int(opts['digits'])})…"

    # ------------------------------------------------------------------ progress and live states
    def _progress(self, fraction: float) -> None:
        """Move the progress bar, at most PROGRESS_BAR_INTERVAL_S apart (each repaint of a widget
        beside the 3D view costs a recomposition of the window) and always to the end."""
        now = time.perf_counter()
        f = min(max(fraction, 0.0), 1.0)
        if f < 1.0 and now - self._progress_at < PROGRESS_BAR_INTERVAL_S:
            return
        self._progress_at = now
        self.window.run_panel.progress.setValue(int(round(1000 * f)))
        if self._run_clock is not None:
            self._run_clock["fraction"] = f
            self._show_clock()

    def _show_clock(self) -> None:
        """The progress bar's text while a study runs: done, elapsed (pauses not counted), an
        estimate of the time left from the rate so far, and for dynamics the simulated seconds per
        wall second. Refreshed by each progress report and once a second."""
        clock = self._run_clock
        rp = self.window.run_panel
        if clock is None or not self.running or rp.pause.isChecked():
            return
        now = time.perf_counter()
        elapsed = max(now - clock["started"] - clock["paused_s"], 1e-9)
        f = clock["fraction"]
        parts = ["%p%", f"{duration_text(elapsed)} elapsed"]
        if 0.005 <= f < 1.0:
            parts.append(f"~{duration_text(elapsed * (1.0 - f) / f)} left")
        if clock["t_end"] and f > 0.0:
            parts.append(f"{f * clock['t_end'] / elapsed:.3g} simulated s per s")
        rp.progress.setFormat(" · ".join(parts))

    def live_sample(self, sample) -> None:
        """Queue a live sample or a batch of streamed states: the viewport plays them at a steady rate
        and converts only the states it draws."""
        project = self.live_project
        self.window.viewport.queue_live(split_batch(sample), lambda s: frame_from_sample(project, s))

    def _live_frame_shown(self, t: float) -> None:
        now = time.perf_counter()
        if now - self._time_label_at >= TIME_LABEL_INTERVAL_S and np.isfinite(t):
            self._time_label_at = now
            self.window.run_panel.time_label.setText(f"t = {t:.4g} s")

    # ------------------------------------------------------------------ finished runs
    def _run_finished(self, run) -> None:
        w, rp = self.window, self.window.run_panel
        w.viewport.end_live()
        w.runFinished.emit(run)
        if not isinstance(run, RunRecord):
            rp.status.setText("The study returned no run record.")
            self.refresh_runs()  # the "running" entry goes
            return
        if run.status == "completed":
            rp.progress.setValue(1000)
        w.doc.runs.add_run(run)
        rp.status.setText(f"{run.study}: {run.status}. {run.message}".strip())

    def _run_failed(self, message: str) -> None:
        self.window.viewport.end_live()
        self.window.run_panel.status.setText(f"The study failed: {message.splitlines()[0]}")
        self.refresh_runs()  # the "running" entry goes

    def refresh_runs(self, select_last: bool = False) -> None:
        """List the document's stored runs in the run box (``select_last``: show the newest)."""
        box = self.window.run_panel.runs
        box.blockSignals(True)
        box.clear()
        for r in self.window.doc.runs.list_runs():
            box.addItem(f"#{r.id} {r.study} ({r.status}) {r.created}", r.id)
        box.blockSignals(False)
        if select_last and box.count():
            box.setCurrentIndex(box.count() - 1)
            self._run_chosen(box.count() - 1)

    def _run_chosen(self, index: int) -> None:
        rid = self.window.run_panel.runs.itemData(index)
        if rid is None:
            return
        self.show_run(self.window.doc.runs.load_run(rid))

    # ------------------------------------------------------------------ replay
    def clear_run(self) -> None:
        """Show no run (another document is shown)."""
        self.frames = None
        self.shown_run = None
        self.window.plots.show_run(None)

    def show_run(self, run: RunRecord) -> None:
        """Replay a stored run: plots and the time slider over its samples."""
        w = self.window
        self.shown_run = run
        w.viewport.scene.clear_contacts()
        w.plots.show_run(self._with_measured(run), defer=True)
        self.frames = frames_from_run(w.doc.project, run)
        s = w.run_panel.slider
        s.blockSignals(True)
        if self.frames is not None and len(self.frames) > 0:
            forces = self.frames.tissue_force_N
            if forces is not None and np.isfinite(forces).any():
                w.viewport.scene.force_scale_N = max(float(np.nanmax(forces)), 1.0)
            s.setRange(0, len(self.frames) - 1)
            s.setEnabled(True)
            s.setValue(len(self.frames) - 1)
            s.blockSignals(False)
            self.show_sample(len(self.frames) - 1)
        else:
            s.setEnabled(False)
            s.blockSignals(False)

    def _with_measured(self, run: RunRecord) -> RunRecord:
        """A laxity run with its experiment's measured points as series (measured_load,
        measured_value, in the units of the run's measure) so the plot draws them over the curve."""
        if run.study != "laxity" or "measured_load" in run.series:
            return run
        name = run.parameters.get("experiment")
        exp = next((e for e in self.window.doc.project.experiments if e.name == name), None)
        if exp is None or not exp.measured:
            return run
        series = dict(run.series, measured_load=np.array([p.load for p in exp.measured], float),
                      measured_value=np.array([p.value for p in exp.measured], float))
        return dataclasses.replace(run, series=series)

    def show_sample(self, i: int) -> None:
        if self.frames is None:
            return
        frame = self.frames.frame(i)
        self.window.viewport.show_frame(frame, now=True)
        self.window.plots.set_time(frame.time or 0.0)
        self.window.run_panel.time_label.setText(self.frames.label(i))


__all__ = ["PROGRESS_BAR_INTERVAL_S", "TIME_LABEL_INTERVAL_S", "StudyController", "duration_text"]
