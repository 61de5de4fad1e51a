"""The worker-thread study runner: every signal reaches its slots on the GUI thread, the newest
sample and the run arrive, pause holds the study and stop ends it with what it computed."""

from __future__ import annotations

import threading
import time

import numpy as np

from jointmodeller.gui.runner import StudyRunner


def counting_study(n: int, started: threading.Event | None = None):
    def fn(progress, cancel):
        done = 0
        for k in range(n):
            if cancel.is_set():
                return {"status": "stopped", "done": done}
            if started is not None:
                started.set()
            progress((k + 1) / n, {"k": k, "pose": np.full((2, 3), float(k))})
            done += 1
            time.sleep(0.0005)
        return {"status": "completed", "done": done}

    return fn


def test_signals_arrive_on_the_gui_thread_with_the_newest_sample_and_the_run(qtbot):
    runner = StudyRunner()
    gui = threading.current_thread()
    threads, samples, progress = set(), [], []
    runner.sample.connect(lambda s: (threads.add(threading.current_thread()), samples.append(s)))
    runner.progressed.connect(lambda f: (threads.add(threading.current_thread()), progress.append(f)))
    with qtbot.waitSignal(runner.finished, timeout=30000) as blocker:
        runner.start(counting_study(400))
    assert blocker.args[0] == {"status": "completed", "done": 400}
    assert threads == {gui}
    assert progress[-1] == 1.0 and progress == sorted(progress)
    assert samples and samples[-1]["k"] <= 399 and not runner.running


def test_pause_holds_the_study_and_stop_ends_it_with_what_it_computed(qtbot):
    runner = StudyRunner()
    started = threading.Event()
    runner.start(counting_study(10**6, started))
    assert started.wait(10)
    runner.pause()
    assert runner.paused
    qtbot.wait(100)
    seen = []
    runner.progressed.connect(seen.append)
    qtbot.wait(200)  # what was queued before the pause is drained in the first poll
    count = len(seen)
    qtbot.wait(200)
    assert len(seen) == count  # nothing new while paused
    with qtbot.waitSignal(runner.finished, timeout=30000) as blocker:
        runner.stop()
    assert blocker.args[0]["status"] == "stopped" and 0 < blocker.args[0]["done"] < 10**6
    assert not runner.running


def test_a_failing_study_reports_its_error(qtbot):
    def fn(progress, cancel):
        raise ValueError("ulna mass is negative")

    runner = StudyRunner()
    with qtbot.waitSignal(runner.failed, timeout=30000) as blocker:
        runner.start(fn)
    assert "ValueError: ulna mass is negative" in blocker.args[0]
    assert not runner.running
