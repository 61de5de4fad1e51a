"""Studies off the GUI thread: :class:`ProcessStudyRunner` runs the app's studies in a separate
process (the default: the solver never competes for this process's GIL), :class:`StudyRunner` runs
any callable in a worker thread. Both report progress, forward live samples and batches of streamed states
(the viewport plays them on a timer, so the event loop never waits), pause and stop.

A study is any callable ``fn(progress, cancel) -> RunRecord``; it calls ``progress(fraction)`` or
``progress(fraction, sample)`` as it goes (a sample is what ``render.frames.frame_from_sample``
understands) and checks ``cancel.is_set()``. Pausing blocks inside ``progress`` until resumed.
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from functools import partial
from typing import Callable

from PySide6.QtCore import QObject, QTimer, Signal

SAMPLE_INTERVAL_S = 1.0 / 60.0
"""Single live samples are forwarded at most this often (batches of streamed states, already paced
by their study, always are)."""
PROGRESS_INTERVAL_S = 1.0 / 20.0
"""Progress is forwarded at most this often (and always at the end): each queued signal costs the
GUI thread a turn at the GIL."""

StudyFn = Callable[[Callable, threading.Event], object]


def forward_messages(runner, get_nowait: Callable[[], tuple[str, object]]) -> tuple[str, object] | None:
    """Emit ``runner``'s signals for what a study queued (on the GUI thread): every progress report
    and batch of streamed states, only the newest single sample of this poll; return the study's end
    (``("done", run)`` or ``("failed", message)``) once reached, else None."""
    latest = None
    for _ in range(200):
        try:
            kind, payload = get_nowait()
        except queue.Empty:
            break
        if kind == "ready":  # a spare study process is up (it runs the study it is sent next)
            continue
        if kind == "progress":
            runner.progressed.emit(payload)
        elif kind == "sample":
            if isinstance(payload, dict) and payload.get("batch"):
                if latest is not None:
                    runner.sample.emit(latest)
                    latest = None
                runner.sample.emit(payload)  # streamed states: every one is a distinct state
            else:
                latest = payload  # single samples: only the newest of this poll
        else:
            if latest is not None:
                runner.sample.emit(latest)
            return kind, payload
    if latest is not None:
        runner.sample.emit(latest)
    return None


class StudyWorker:
    """Runs one study in a plain Python thread and hands what it reports to the GUI thread through a
    thread-safe queue (no Qt object lives in, or signals from, the worker thread: PySide6 ≥ 6.8 can
    crash delivering queued Python objects across threads, PYSIDE-3124, and a queue needs no Qt)."""

    def __init__(self, fn: StudyFn):
        self.fn = fn
        self.cancel = threading.Event()
        self.resume = threading.Event()
        self.resume.set()
        self.messages: queue.SimpleQueue = queue.SimpleQueue()
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
            self.messages.put(("progress", f))
        sample = args[0] if args else kwargs.get("sample", kwargs.get("frame", kwargs.get("state")))
        if sample is not None:
            if isinstance(sample, dict) and sample.get("batch"):
                self.messages.put(("sample", sample))
            elif now - self._last_sample >= SAMPLE_INTERVAL_S:
                self._last_sample = now
                self.messages.put(("sample", sample))

    def run(self) -> None:
        try:
            result = self.fn(self.report, self.cancel)
        except Exception as exc:  # the GUI shows why; the thread ends cleanly
            self.messages.put(("failed", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"))
            return
        self.messages.put(("done", result))


class StudyRunner(QObject):
    """Starts a study in a worker thread, and pauses, resumes or stops it. A GUI-thread timer drains
    the worker's queue every POLL_MS and emits the signals, so every slot runs in the GUI thread."""

    POLL_MS = 15
    progressed = Signal(float)
    sample = Signal(object)
    finished = Signal(object)
    failed = Signal(str)
    runningChanged = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.thread: threading.Thread | None = None
        self.worker: StudyWorker | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(self.POLL_MS)
        self._timer.timeout.connect(self._poll)

    @property
    def running(self) -> bool:
        return self.worker is not None

    @property
    def paused(self) -> bool:
        return self.worker is not None and not self.worker.resume.is_set()

    def start(self, fn: StudyFn) -> None:
        if self.running:
            raise RuntimeError("a study is already running")
        self.worker = StudyWorker(fn)
        self.thread = threading.Thread(target=self.worker.run, name="study", daemon=True)
        self.thread.start()
        self._timer.start()
        self.runningChanged.emit(True)

    def _poll(self) -> None:
        """Forward what the worker reported; end the run at its last message."""
        worker = self.worker
        if worker is None:
            return
        end = forward_messages(self, worker.messages.get_nowait)
        if end is not None:
            self._end()
            (self.finished if end[0] == "done" else self.failed).emit(end[1])

    def _end(self) -> None:
        self._timer.stop()
        if self.thread is not None:
            self.thread.join(timeout=5.0)  # it has sent its last message: only returning is left
        self.thread = None
        self.worker = None
        self.runningChanged.emit(False)

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
        """Process the worker's messages until the run ends (for closing and tests)."""
        end = time.perf_counter() + timeout_ms / 1000.0
        while self.running and time.perf_counter() < end:
            self._poll()
            if self.running:
                time.sleep(0.01)
        return not self.running


class SpareStudyProcess:
    """A study process started before its study (app.live.serve_one_study): its interpreter and the
    studies' imports are up by the time the user presses Start, which then costs only sending the
    project. Spawned from a helper thread, like every study process; the queues and events are its own."""

    def __init__(self, ctx) -> None:
        from jointmodeller.app.live import serve_one_study

        self.queue = ctx.Queue()
        self.jobs = ctx.Queue()
        self.cancel = ctx.Event()
        self.resume = ctx.Event()
        self.resume.set()
        self.process = ctx.Process(target=serve_one_study, daemon=True,
                                   args=(self.jobs, self.queue, self.cancel, self.resume))
        self.started = threading.Event()
        self.errors: list[str] = []
        threading.Thread(target=self._spawn, name="study-spare", daemon=True).start()

    def _spawn(self) -> None:
        try:
            self.process.start()
        except Exception as exc:  # the runner starts the study in a process of its own instead
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            self.started.set()

    def usable(self) -> bool:
        """Still able to take a study: starting, or up and waiting (not failed, not ended)."""
        if self.errors:
            return False
        if not self.started.is_set():
            return True
        return self.process.is_alive()

    def send(self, study: str, project, options: dict) -> None:
        self.jobs.put((study, project, dict(options)))

    def retire(self) -> None:
        """Let the process exit unused (it reads None as its job)."""
        try:
            self.jobs.put(None)
        except (ValueError, OSError):  # the queue is closed already
            pass


_RETIRED: list[SpareStudyProcess] = []
"""Retired spares until their process has ended: a process still starting unpickles the queues' and
events' named semaphores, which must not be released before it has (they are unlinked when freed)."""


def _retire_spare(holder: list) -> None:
    """Retire the spare kept in ``holder`` (the runner's QObject may be gone: no method of it)."""
    spare, holder[:] = (holder[0] if holder else None), [None]
    _RETIRED[:] = [r for r in _RETIRED if not r.started.is_set() or r.process.is_alive()]
    if spare is not None:
        spare.retire()
        _RETIRED.append(spare)


class ProcessStudyRunner(QObject):
    """Runs a named study in a separate process (so the solver never holds this process's GIL and
    the event loop only draws), with the same signals and controls as :class:`StudyRunner`.

    The process is started from a helper thread (spawning writes the pickled project to the child,
    which reads it only once its interpreter is up: seconds the event loop must not wait). The child
    runs at a lower CPU priority than this process (CHILD_NICE) and sends progress, live samples and
    the finished run through a queue that a timer drains every POLL_MS; an ended child is reaped
    without waiting.

    After :meth:`prepare` the runner keeps a spare study process (:class:`SpareStudyProcess`) waiting
    for the next study, made again SPARE_AFTER_RUN_MS after each run ends: Start then skips the
    process start and the studies' imports (seconds on a desktop machine, docs/benchmarks.md).
    """

    POLL_MS = 15
    SPARE_AFTER_RUN_MS = 1000
    """A new spare is started this long after a run ends (the machine is not busy with the run)."""
    REAP_AFTER_S = 5.0
    """A child still alive this long after sending its run is terminated."""
    progressed = Signal(float)
    sample = Signal(object)
    finished = Signal(object)
    failed = Signal(str)
    runningChanged = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        import multiprocessing as mp

        self._ctx = mp.get_context("spawn")
        self.process = None
        self._queue = None
        self._cancel = None
        self._resume = None
        self._timer = QTimer(self)
        self._timer.setInterval(self.POLL_MS)
        self._timer.timeout.connect(self._poll)
        self._started: threading.Event | None = None
        self._start_error: list[str] = []
        self._ending: list[tuple[object, float]] = []
        self._reaper = QTimer(self)
        self._reaper.setInterval(200)
        self._reaper.timeout.connect(self._reap)
        self.keep_spare = False
        self._spare_in_use: SpareStudyProcess | None = None
        self._spare_holder: list = [None]  # [SpareStudyProcess | None], shared with the destroyed hook
        self.destroyed.connect(partial(_retire_spare, self._spare_holder))

    @property
    def spare(self) -> SpareStudyProcess | None:
        """The study process waiting for the next study (after :meth:`prepare`), if any."""
        return self._spare_holder[0]

    def prepare(self) -> None:
        """Keep a spare study process from now on (the first now, unless a study is running)."""
        self.keep_spare = True
        if not self.running:
            self._replenish()

    def _replenish(self) -> None:
        spare = self._spare_holder[0]
        if not self.keep_spare or self.running or (spare is not None and spare.usable()):
            return
        self._spare_holder[0] = SpareStudyProcess(self._ctx)

    def retire_spare(self) -> None:
        """Let the spare process exit and keep none from now on (closing the window)."""
        self.keep_spare = False
        spare = self._spare_holder[0]
        _retire_spare(self._spare_holder)
        if spare is not None:
            self._ending.append((spare.process, time.perf_counter()))
            self._reaper.start()

    @property
    def running(self) -> bool:
        return self.process is not None

    @property
    def paused(self) -> bool:
        return self._resume is not None and not self._resume.is_set()

    def start(self, study: str, project, options: dict | None = None) -> None:
        from jointmodeller.app.live import run_in_child

        if self.running:
            raise RuntimeError("a study is already running")
        spare, self._spare_holder[0] = self._spare_holder[0], None
        self._spare_in_use = None
        if spare is not None and spare.usable():  # up (or starting) with the imports done: send the study
            self._spare_in_use = spare  # its queues and events live as long as its process may read them
            self._queue, self._cancel, self._resume = spare.queue, spare.cancel, spare.resume
            self.process = spare.process
            self._started, self._start_error = spare.started, spare.errors
            spare.send(study, project, dict(options or {}))
            self._timer.start()
            self.runningChanged.emit(True)
            return
        self._queue = self._ctx.Queue()
        self._cancel = self._ctx.Event()
        self._resume = self._ctx.Event()
        self._resume.set()
        self.process = self._ctx.Process(target=run_in_child, daemon=True,
                                         args=(study, project, dict(options or {}), self._queue, self._cancel,
                                               self._resume))
        started = self._started = threading.Event()
        errors = self._start_error = []
        process = self.process

        def spawn() -> None:
            try:
                process.start()
            except Exception as exc:  # reported by _poll
                errors.append(f"{type(exc).__name__}: {exc}")
            finally:
                started.set()

        threading.Thread(target=spawn, name="study-spawn", daemon=True).start()
        self._timer.start()
        self.runningChanged.emit(True)

    def _poll(self) -> None:
        end = forward_messages(self, self._queue.get_nowait)
        if end is not None:
            self._finish()
            (self.finished if end[0] == "done" else self.failed).emit(end[1])
            return
        if self.process is None or self._started is None or not self._started.is_set():
            return
        if self._start_error:
            message = self._start_error[0]
            self._finish()
            self.failed.emit(f"the study process did not start: {message}")
            return
        if not self.process.is_alive() and self._queue.empty():
            code = self.process.exitcode
            self._finish()
            self.failed.emit(f"the study process ended without a result (exit code {code})")

    def _finish(self) -> None:
        self._timer.stop()
        if self.process is not None:
            self._ending.append((self.process, time.perf_counter()))
            self._reaper.start()
        self.process = None
        self.runningChanged.emit(False)
        if self.keep_spare:
            QTimer.singleShot(self.SPARE_AFTER_RUN_MS, self, self._replenish)

    def _reap(self) -> None:
        """Join ended children without blocking; terminate one that outlives REAP_AFTER_S."""
        keep = []
        for process, since in self._ending:
            try:
                if process._popen is None:  # still being started by the spawn thread (or it failed)
                    if time.perf_counter() - since <= 60.0:
                        keep.append((process, since))
                    continue
                process.join(timeout=0)
                if process.is_alive():
                    if time.perf_counter() - since > self.REAP_AFTER_S:
                        process.terminate()
                    keep.append((process, since))
            except (AssertionError, ValueError, OSError):
                pass
        self._ending = keep
        if not keep:
            self._reaper.stop()

    def pause(self) -> None:
        if self._resume is not None:
            self._resume.clear()

    def resume(self) -> None:
        if self._resume is not None:
            self._resume.set()

    def stop(self) -> None:
        """Ask the study to stop; it ends with what it computed so far."""
        if self._cancel is not None:
            self._cancel.set()
            self._resume.set()

    def wait(self, timeout_ms: int = 30000) -> bool:
        """Process queued messages until the run ends (for closing and tests)."""
        import time as _t

        end = _t.perf_counter() + timeout_ms / 1000.0
        while self.running and _t.perf_counter() < end:
            self._poll()
            _t.sleep(0.01)
        return not self.running


__all__ = ["ProcessStudyRunner", "SpareStudyProcess", "StudyRunner", "StudyWorker"]
