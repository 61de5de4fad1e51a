"""Studies off the GUI thread: a QThread worker with progress, pause and stop, forwarding live
samples to the GUI thread (which draws the newest one on a timer, so the event loop never waits).

A study is any callable ``fn(progress, cancel) -> RunRecord``; it calls ``progress(fraction)`` or
``progress(fraction, sample)`` as it goes (a sample is what ``render.frames.frame_from_sample``
understands) and checks ``cancel.is_set()``. Pausing blocks inside ``progress`` until resumed.
"""

from __future__ import annotations

import threading
import time
import traceback
from typing import Callable

from PySide6.QtCore import QObject, QThread, Signal, Slot

SAMPLE_INTERVAL_S = 1.0 / 40.0
"""Live samples are forwarded at most this often (the viewport draws at most 30 per second)."""
PROGRESS_INTERVAL_S = 1.0 / 20.0
"""Progress is forwarded at most this often (and always at the end): each queued signal costs the
GUI thread a turn at the GIL."""

StudyFn = Callable[[Callable, threading.Event], object]


class StudyWorker(QObject):
    """Runs one study in its thread; signals cross to the GUI thread as queued connections."""

    progressed = Signal(float)
    sample = Signal(object)
    finished = Signal(object)
    failed = Signal(str)

    def __init__(self, fn: StudyFn):
        super().__init__()
        self.fn = fn
        self.cancel = threading.Event()
        self.resume = threading.Event()
        self.resume.set()
        self._last_sample = 0.0
        self._last_progress = -1.0
        self._last_progress_t = 0.0

    def report(self, fraction: float, *args, **kwargs) -> None:
        """The study's progress callback: waits while paused, forwards progress and live samples."""
        self.resume.wait()
        f = float(fraction)
        now = time.perf_counter()
        if (f > self._last_progress and now - self._last_progress_t >= PROGRESS_INTERVAL_S) or f >= 1.0:
            self._last_progress = f
            self._last_progress_t = now
            self.progressed.emit(f)
        sample = args[0] if args else kwargs.get("sample", kwargs.get("frame", kwargs.get("state")))
        if sample is not None:
            if now - self._last_sample >= SAMPLE_INTERVAL_S:
                self._last_sample = now
                self.sample.emit(sample)

    @Slot()
    def run(self) -> None:
        try:
            result = self.fn(self.report, self.cancel)
        except Exception as exc:  # the GUI shows why; the thread ends cleanly
            self.failed.emit(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}")
            return
        self.finished.emit(result)


class StudyRunner(QObject):
    """Starts a study in a new QThread, and pauses, resumes or stops it."""

    progressed = Signal(float)
    sample = Signal(object)
    finished = Signal(object)
    failed = Signal(str)
    runningChanged = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.thread: QThread | None = None
        self.worker: StudyWorker | None = None

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.isRunning()

    @property
    def paused(self) -> bool:
        return self.worker is not None and not self.worker.resume.is_set()

    def start(self, fn: StudyFn) -> None:
        if self.running:
            raise RuntimeError("a study is already running")
        self.worker = StudyWorker(fn)
        self.thread = QThread()
        self.worker.moveToThread(self.thread)
        self.thread.started.connect(self.worker.run)
        self.worker.progressed.connect(self.progressed)
        self.worker.sample.connect(self.sample)
        self.worker.finished.connect(self._done)
        self.worker.failed.connect(self._failed)
        self.thread.start()
        self.runningChanged.emit(True)

    def _stop_thread(self) -> None:
        if self.thread is not None:
            self.thread.quit()
            self.thread.wait()
            self.thread.deleteLater()
        if self.worker is not None:
            self.worker.deleteLater()
        self.thread = None
        self.worker = None
        self.runningChanged.emit(False)

    def _done(self, result) -> None:
        self._stop_thread()
        self.finished.emit(result)

    def _failed(self, message: str) -> None:
        self._stop_thread()
        self.failed.emit(message)

    def pause(self) -> None:
        if self.worker is not None:
            self.worker.resume.clear()

    def resume(self) -> None:
        if self.worker is not None:
            self.worker.resume.set()

    def stop(self) -> None:
        """Ask the study to stop; it finishes with what it computed so far."""
        if self.worker is not None:
            self.worker.cancel.set()
            self.worker.resume.set()

    def wait(self, timeout_ms: int = 30000) -> bool:
        return True if self.thread is None else self.thread.wait(timeout_ms)


__all__ = ["StudyRunner", "StudyWorker"]
