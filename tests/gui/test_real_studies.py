"""The app's own studies run from the main window: dynamics of the two-box project to 100 % with the
stored run replayable, and a live dynamics run of the demo that draws frames while the event loop
keeps ticking."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from jointmodeller.app.picking import mass_pose
from jointmodeller.app.run_poses import mesh_frames
from jointmodeller.render.scene import pose_matrix
from tests.gui.live_study import TickGaps

pytestmark = [pytest.mark.gui]


def test_dynamics_study_reaches_100_percent_and_is_stored(qtbot, window, small_project):
    w = window(small_project)
    w.run_panel.study.setCurrentText("dynamics")
    w.run_panel.t_end.setValue(0.05)
    with qtbot.waitSignal(w.runFinished, timeout=180000) as blocker:
        w.run_panel.start.click()
    run = blocker.args[0]
    assert run.status == "completed", run.message
    assert w.run_panel.progress.value() == w.run_panel.progress.maximum()
    stored = w.doc.runs.list_runs()
    assert [r.study for r in stored] == ["dynamics"] and w.run_panel.runs.count() == 1
    # the replay slider shows the stored poses: the last sample's mesh transform is the actor's
    s = w.run_panel.slider
    assert s.isEnabled() and s.maximum() == len(run.series["time"]) - 1
    s.setValue(s.maximum())
    M = np.asarray(w.viewport.scene.mass_actors["upper"].user_matrix)
    j = run.poses.index("upper")
    R_GL, origin_G = mesh_frames(run.poses)
    assert M[:3, :3] == pytest.approx(R_GL[-1, j], abs=1e-12)
    assert M[:3, 3] == pytest.approx(origin_G[-1, j], abs=1e-12)
    s.setValue(0)  # the first sample is the initial pose of the project
    R0, t0 = mass_pose(small_project.mass("upper"))
    M0 = np.asarray(w.viewport.scene.mass_actors["upper"].user_matrix)
    assert M0[:3, :3] == pytest.approx(R0, abs=1e-9) and M0[:3, 3] == pytest.approx(t0, abs=1e-9)
    assert "tissue_force_N" in w.plots.plotted


def test_integrator_and_accuracy_chosen_in_the_run_panel_reach_the_study(qtbot, window, small_project):
    """BDF at 1e-4 chosen in the run panel is what the stored run used; the choices are greyed out for
    studies they do not apply to; Auto resolves from the project (no contact here: DOP853)."""
    w = window(small_project)
    rp = w.run_panel
    rp.study.setCurrentText("equilibrium")
    assert not rp.method.isEnabled() and not rp.digits.isEnabled()
    rp.study.setCurrentText("dynamics")
    assert rp.method.isEnabled() and rp.digits.isEnabled() and rp.method.currentData() == "auto"
    rp.t_end.setValue(0.02)
    rp.method.setCurrentIndex(rp.method.findData("BDF"))
    rp.digits.setValue(4)
    with qtbot.waitSignal(w.runFinished, timeout=180000) as blocker:
        rp.start.click()
        assert rp.status.text() == "Running dynamics to 0.02 s (BDF, accuracy 1e-4)…"
    run = blocker.args[0]
    assert run.status == "completed", run.message
    assert run.parameters["method"] == "BDF" and run.parameters["digits"] == 4.0
    assert w.doc.runs.list_runs()[-1].parameters["method"] == "BDF"  # stored as run
    rp.method.setCurrentIndex(rp.method.findData("auto"))
    with qtbot.waitSignal(w.runFinished, timeout=180000) as blocker:
        rp.start.click()
        assert "chosen automatically: DOP853" in rp.status.text()
    assert blocker.args[0].parameters["method"] == "DOP853"
    assert blocker.args[0].parameters["method_requested"] == "auto"


@pytest.mark.slow
def test_live_dynamics_of_the_demo_keeps_the_event_loop_running(qtbot, window, demo_project, artifacts_dir):
    """Frames of the running demo reach the viewport; between ticks of a 10 ms timer the GUI thread
    never works 100 ms (its CPU time; wall-clock gaps, which include other processes' turns on a
    shared machine, are recorded in test-artifacts/gui_stall_demo.json and in the benchmark)."""
    w = window(demo_project)
    w.run_panel.study.setCurrentText("dynamics")
    w.run_panel.t_end.setValue(1.0)
    w.run_panel.start.click()
    qtbot.waitUntil(lambda: w.viewport.frames_drawn > 0, timeout=120000)
    gaps = TickGaps()
    wall, cpu = gaps.wall, gaps.cpu
    f0 = w.viewport.frames_drawn
    gaps.start()
    t0 = time.perf_counter()
    while w.viewport.frames_drawn - f0 < 3 and time.perf_counter() - t0 < 60:
        qtbot.wait(50)
    gaps.stop()
    frames = w.viewport.frames_drawn - f0
    with qtbot.waitSignal(w.runFinished, timeout=120000):
        w.run_panel.stop.click()
    (artifacts_dir / "gui_stall_demo.json").write_text(json.dumps(
        {"max_gap_ms_wall": 1000 * max(wall), "median_gap_ms_wall": 1000 * float(np.median(wall)),
         "max_gui_thread_cpu_ms": 1000 * max(cpu), "ticks": len(wall), "frames_drawn": frames,
         "seconds": time.perf_counter() - t0}))
    assert frames >= 3
    frame = w.viewport.scene.frame  # the last live frame drawn: the actors show its poses
    assert frame.time is not None and "ulna" in frame.poses
    assert np.asarray(w.viewport.scene.mass_actors["ulna"].user_matrix) == pytest.approx(
        pose_matrix(frame.poses["ulna"]), abs=1e-15)
    assert 1000 * max(cpu) < 100.0
    assert w.doc.runs.list_runs()[-1].status in ("stopped", "completed")
