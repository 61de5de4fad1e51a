"""The live view's level of detail (issue 18): while a run's live states play, the bones and cartilage
are drawn with meshes decimated to LIVE_MAX_FACES triangles, made off the GUI thread when the study
starts; when the run ends the full display meshes are drawn again. Behaviour only: no timing asserts."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.app.run_poses import poses_from_mesh_frames

pytestmark = pytest.mark.gui


def _burst(project, k: int) -> dict:
    """A live batch of k distinct states turning the second mass about z."""
    n = len(project.masses)
    th = np.linspace(0.0, 0.5, k)
    R = np.tile(np.eye(3), (k, n, 1, 1))
    R[:, 1] = [[[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]] for a in th]
    origin = np.zeros((k, n, 3))
    origin[:, 1, 2] = 0.11 + 0.001 * np.arange(k)
    return {"batch": True, "time": 0.01 * np.arange(1, k + 1), "step": np.zeros(k, int),
            "poses": poses_from_mesh_frames(project, R, origin), "labels": {}}


def _drawn_cells(vp) -> dict:
    """Triangles each bone and cartilage actor drew in the last render (its mapper's input, after
    pyvista's smooth-shading filter)."""
    actors = {f"mass:{n}": a for n, a in vp.scene.mass_actors.items()}
    actors.update({f"cartilage:{n}": a for n, a in vp.scene.cartilage_actors.items()})
    return {n: a.GetMapper().GetInput().GetNumberOfCells() for n, a in actors.items()}


def test_live_states_are_drawn_with_coarse_meshes_and_the_full_ones_after_the_run(qtbot, window, demo_project):
    from jointmodeller.render.live_detail import LIVE_MAX_FACES

    w = window(demo_project)
    vp = w.viewport
    full = _drawn_cells(vp)
    assert len(full) >= 4 and min(full.values()) > LIVE_MAX_FACES  # the demo's bones and cartilage
    vp.prepare_live_detail()  # what starting a study does (StudyController.start)
    qtbot.waitUntil(lambda: not vp._preparing_detail, timeout=60000)  # made in a background thread
    assert _drawn_cells(vp) == full  # nothing changes before live states come
    w.study_control.live_project = demo_project
    f0 = vp.frames_drawn
    k = 20
    w.study_control.live_sample(_burst(demo_project, k))
    qtbot.waitUntil(lambda: len(vp.playback) == 0 and vp._awaiting is None, timeout=30000)
    assert vp.frames_drawn - f0 >= 1 and vp.playback.taken + vp.playback.dropped == k
    live = _drawn_cells(vp)
    assert all(0 < live[n] <= LIVE_MAX_FACES for n in full), live
    w.process_runner.failed.emit("the study process ended without a result")  # the run ends
    qtbot.waitUntil(lambda: _drawn_cells(vp) == full, timeout=30000)  # redrawn in full without asking
    assert all(a.prop.GetBackfaceCulling() for a in vp.scene.mass_actors.values())  # the culling is kept


def test_live_states_outside_a_run_keep_the_full_meshes(qtbot, window, demo_project):
    """States queued when no study runs (e.g. after it ended) do not switch to the coarse meshes."""
    w = window(demo_project)
    vp = w.viewport
    full = _drawn_cells(vp)
    vp.prepare_live_detail()
    qtbot.waitUntil(lambda: not vp._preparing_detail, timeout=60000)
    vp.end_live()
    w.study_control.live_project = demo_project
    w.study_control.live_sample(_burst(demo_project, 5))
    qtbot.waitUntil(lambda: len(vp.playback) == 0 and vp._awaiting is None, timeout=30000)
    assert _drawn_cells(vp) == full
