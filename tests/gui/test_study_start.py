"""What pressing Start leaves to the event loop (issue 18, gui.max_stall_ms): the study's system is
built on the study's worker thread (or in its own process), never on the GUI thread before the
study starts; progress and live poses still stream; a live batch is split without checking the
poses of states the view skips; the status line imports nothing heavy; and the stall probe
(gui.probes.StallWatch) says where the GUI thread was while it was late."""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest

from jointmodeller.app.live import LiveState, split_batch
from jointmodeller.model.results import BodyPoses


def _recording_builders(monkeypatch, gate: threading.Event | None = None) -> list[threading.Thread]:
    """Replace both system builders (free bodies, tree) by recorders of the thread that calls them;
    with ``gate``, a build waits for it (at most 30 s) before building."""
    import jointmodeller.app.studies as studies
    import jointmodeller.app.tree_studies as tree_studies

    calls: list[threading.Thread] = []

    def recorder(real):
        def build(*args, **kwargs):
            calls.append(threading.current_thread())
            if gate is not None:
                gate.wait(30.0)
            return real(*args, **kwargs)

        return build

    monkeypatch.setattr(studies, "build_mechanical_system", recorder(studies.build_mechanical_system))
    monkeypatch.setattr(tree_studies, "build_mobilized", recorder(tree_studies.build_mobilized))
    return calls


@pytest.mark.gui  # builds the main window
def test_start_returns_before_the_system_is_built_which_happens_on_the_worker_thread(qtbot, window,
                                                                                    small_project, monkeypatch):
    gate = threading.Event()
    calls = _recording_builders(monkeypatch, gate)
    w = window(small_project)
    w.study_in_process = False  # the study in a thread of this process, where the recorder sees it
    w.run_panel.t_end.setValue(0.02)
    progress, samples = [], []
    w.runner.progressed.connect(progress.append)
    w.runner.sample.connect(samples.append)
    gui = threading.current_thread()
    assert w.start_study("dynamics")
    assert gui not in calls  # start() returned without building (a build on this thread would wait here)
    assert w.study_running
    qtbot.wait(50)  # the event loop turns while the worker waits to build
    gate.set()
    with qtbot.waitSignal(w.runFinished, timeout=120000) as blocker:
        pass
    run = blocker.args[0]
    assert run.status == "completed", run.message
    assert calls and all(t is not gui and t.name == "study" for t in calls)
    assert progress and progress[-1] == 1.0
    assert samples and any(isinstance(s, dict) and s.get("batch") for s in samples)  # live states streamed
    assert w.viewport.playback.received > 0


@pytest.mark.gui  # builds the main window
@pytest.mark.slow
def test_an_app_study_in_its_own_process_builds_nothing_in_the_gui_process(qtbot, window, small_project,
                                                                        monkeypatch):
    calls = _recording_builders(monkeypatch)
    w = window(small_project)
    assert w.study_in_process
    w.run_panel.t_end.setValue(0.02)
    samples = []
    w.process_runner.sample.connect(samples.append)
    with qtbot.waitSignal(w.runFinished, timeout=180000) as blocker:
        assert w.start_study("dynamics")
    assert blocker.args[0].status == "completed", blocker.args[0].message
    assert calls == []  # built in the study's process
    assert samples


def _batch(k: int = 5, n: int = 2) -> dict:
    q = np.zeros((k, n, 4))
    q[..., 0] = 1.0
    p = np.arange(k * n * 3, dtype=float).reshape(k, n, 3)
    poses = BodyPoses(("a", "b"), p, q, np.broadcast_to(np.eye(3), (n, 3, 3)).copy(), np.zeros((n, 3)))
    return {"batch": True, "time": np.linspace(0.1, 0.5, k), "step": np.arange(k), "poses": poses,
            "labels": {"tissue_force_N": ["t"]}, "tissue_force_N": np.ones((k, 1)),
            "contact_points_G": np.zeros((1, 3))}


def test_a_split_batch_takes_a_state_s_poses_only_when_they_are_read(monkeypatch):
    batch = _batch()
    taken = []
    real_take = BodyPoses.take
    monkeypatch.setattr(BodyPoses, "take", lambda self, i: (taken.append(i), real_take(self, i))[1])
    states = split_batch(batch)
    assert taken == []  # splitting checks no pose
    assert [s["time"] for s in states] == list(batch["time"]) and [s["step"] for s in states] == list(range(5))
    assert all(isinstance(s, LiveState) and "poses" in s for s in states)
    assert "contact_points_G" in states[-1] and "contact_points_G" not in states[0]
    got = states[3].get("poses")
    assert taken == [[3]] and got == real_take(batch["poses"], [3])
    assert states[3]["poses"] is got and taken == [[3]]  # made once
    assert states[1]["poses"] == real_take(batch["poses"], [1])
    assert split_batch({"time": 1.0}) == [{"time": 1.0}]  # a plain sample comes back alone


@pytest.mark.gui  # builds the main window
def test_the_running_status_imports_nothing_for_the_automatic_integrator(qtbot, window, small_project,
                                                                        monkeypatch):
    import jointmodeller.gui.study_control as sc

    w = window(small_project)
    missing = "jointmodeller.not_imported_by_this_test"
    monkeypatch.setattr(sc, "STATUS_MODULES", (missing,))
    w.run_panel.study.setCurrentText("dynamics")
    text = w.study_control._running_text("dynamics")
    assert "integrator chosen automatically" in text and missing not in sys.modules
    monkeypatch.setattr(sc, "STATUS_MODULES", ("jointmodeller.app.studies",))
    import jointmodeller.app.studies  # noqa: F401

    assert "chosen automatically: DOP853" in w.study_control._running_text("dynamics")  # free boxes, no contact


def test_the_stall_watch_records_where_the_gui_thread_was_while_it_was_late(qtbot):
    from PySide6.QtCore import QTimer

    from jointmodeller.gui.probes import StallWatch

    def holds_the_event_loop() -> None:
        time.sleep(0.4)  # far beyond the 50 ms threshold, however loaded the machine

    watch = StallWatch(threshold_ms=50.0)
    watch.start()
    qtbot.wait(50)
    QTimer.singleShot(0, holds_the_event_loop)
    qtbot.wait(600)
    stalls = watch.stop()
    late = [s for s in stalls if s["ms"] >= 400.0]
    assert late, stalls
    assert any("holds_the_event_loop" in line for s in late for stack in s["stacks"] for line in stack)
    assert "holds_the_event_loop" in watch.report(min_ms=400.0)
