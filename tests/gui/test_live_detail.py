"""The live view's level of detail (issue 18): while a run's live states play, the bones and cartilage
are drawn by coarse twins (LIVE_MAX_FACES triangles) made one per turn of the event loop when the
study starts, at the states' poses; when the run ends the full display meshes are drawn again. An
edited bone is drawn in full until its twin is made again. Behaviour only: no timing asserts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.gui.live_study import turning_batch

pytestmark = pytest.mark.gui


def _drawn_cells(vp) -> dict:
    """Triangles drawn for each bone and cartilage: those of its visible actor (full or twin)."""
    scene = vp.scene
    twins = {f"{kind}:{name}": t.actor for (kind, name), t in scene.live_detail._twins.items()}
    actors = {f"mass:{n}": a for n, a in scene.mass_actors.items()}
    actors.update({f"cartilage:{n}": a for n, a in scene.cartilage_actors.items()})
    out = {}
    for key, full in actors.items():
        shown = [a for a in (full, twins.get(key)) if a is not None and a.GetVisibility()]
        assert len(shown) == 1, f"{key}: {len(shown)} actors visible"
        out[key] = shown[0].GetMapper().GetInput().GetNumberOfCells()
    return out


def _play(qtbot, w, project, k: int) -> None:
    vp = w.viewport
    w.study_control.live_project = project
    f0 = vp.frames_drawn
    w.study_control.live_sample(turning_batch(project, k))
    qtbot.waitUntil(lambda: len(vp.playback) == 0 and vp._awaiting is None, timeout=30000)
    assert vp.frames_drawn > f0


def _foreground(img: np.ndarray) -> np.ndarray:
    """Pixels that are not the background (the scene's first pixel's colour)."""
    return np.any(np.abs(img[..., :3].astype(int) - img[0, 0, :3].astype(int)) > 8, axis=-1)


def test_live_states_are_drawn_coarse_at_their_poses_and_in_full_after_the_run(qtbot, window, demo_project):
    from jointmodeller.render.live_detail import LIVE_MAX_FACES

    w = window(demo_project)
    vp = w.viewport
    full = _drawn_cells(vp)
    assert len(full) >= 4 and min(full.values()) > LIVE_MAX_FACES  # the demo's bones and cartilage
    vp.prepare_live_detail()  # what starting a study does (StudyController.start)
    qtbot.waitUntil(lambda: not vp._making_twins, timeout=60000)
    assert _drawn_cells(vp) == full  # nothing changes before live states come
    _play(qtbot, w, demo_project, 20)
    live = _drawn_cells(vp)
    assert all(0 < live[n] <= LIVE_MAX_FACES for n in full), live
    coarse_img = vp.screenshot(None)
    w.process_runner.failed.emit("the study process ended without a result")  # the run ends
    qtbot.waitUntil(lambda: _drawn_cells(vp) == full, timeout=30000)
    assert all(a.prop.GetBackfaceCulling() for a in vp.scene.mass_actors.values())  # the culling is kept
    full_img = vp.screenshot(None)
    # the twins stood where the full bones stand at the last state: the silhouettes agree (a twin left
    # at the rest pose would miss the turned forearm's pixels)
    a, b = _foreground(coarse_img), _foreground(full_img)
    assert b.sum() > 0.05 * b.size
    assert (a & b).sum() / (a | b).sum() > 0.9


def test_a_picked_twin_is_its_bone(qtbot, window, demo_project):
    w = window(demo_project)
    vp = w.viewport
    vp.prepare_live_detail()
    qtbot.waitUntil(lambda: not vp._making_twins, timeout=60000)
    for (kind, name), twin in vp.scene.live_detail._twins.items():
        assert vp.scene.mass_of_actor(twin.actor) == (name if kind == "mass" else None)


def test_an_edited_bone_is_drawn_in_full_until_its_twin_is_made_again(qtbot, window, demo_project):
    w = window(demo_project)
    vp = w.viewport
    vp.ensure_view()
    vp.prepare_live_detail()
    qtbot.waitUntil(lambda: not vp._making_twins, timeout=60000)
    _play(qtbot, w, demo_project, 5)
    m = demo_project.masses[1]
    mesh = dataclasses.replace(m.mesh, vertices_L=m.mesh.vertices_L * 1.01)  # another mesh object
    edited = dataclasses.replace(demo_project, masses=[demo_project.masses[0], dataclasses.replace(m, mesh=mesh),
                                                       *demo_project.masses[2:]])
    vp.show_project(edited)
    cells = _drawn_cells(vp)
    assert cells[f"mass:{m.name}"] > 4000  # its old twin is gone: the full bone is drawn
    assert ("mass", m.name) in vp.scene.live_detail.pending()
    vp.prepare_live_detail()
    qtbot.waitUntil(lambda: not vp._making_twins, timeout=60000)
    assert _drawn_cells(vp)[f"mass:{m.name}"] <= 4000


def test_live_states_outside_a_run_keep_the_full_meshes(qtbot, window, demo_project):
    """States queued when no study runs (e.g. after it ended) do not switch to the coarse twins."""
    w = window(demo_project)
    vp = w.viewport
    full = _drawn_cells(vp)
    vp.prepare_live_detail()
    qtbot.waitUntil(lambda: not vp._making_twins, timeout=60000)
    vp.end_live()
    _play(qtbot, w, demo_project, 5)
    assert _drawn_cells(vp) == full


def test_closing_the_window_while_twins_are_made_stops_making_them(qtbot, window, demo_project):
    """A study started just before the window closed: no twin is added to the closed plotter."""
    w = window(demo_project)
    vp = w.viewport
    vp.prepare_live_detail()
    w.close()
    qtbot.waitUntil(lambda: not vp._making_twins, timeout=30000)
    assert not vp.scene.live_detail._twins



def test_the_coarse_meshes_are_made_with_the_scene_not_when_a_study_starts(qtbot, window, demo_project, monkeypatch,
                                                                             tmp_path):
    """Starting a study only adds the twins' actors: their decimation (~50 ms a mesh, a stall of the
    GUI thread while the study starts) was done when the scene was built."""
    import pyvista as pv

    from jointmodeller.render import display_mesh

    monkeypatch.setenv("JOINTMODELLER_CACHE", str(tmp_path / "cache"))  # nothing decimated before
    monkeypatch.setattr(display_mesh, "_DISPLAY_CACHE", {})
    w = window(demo_project)
    vp = w.viewport
    _drawn_cells(vp)  # the scene is built

    def no_decimation(*args, **kwargs):
        raise AssertionError("a mesh was decimated while the study started")

    monkeypatch.setattr(pv.PolyData, "decimate", no_decimation)
    vp.prepare_live_detail()
    qtbot.waitUntil(lambda: not vp._making_twins, timeout=60000)
    assert len(vp.scene.live_detail._twins) >= 4 and not vp.scene.live_detail.pending()


def test_the_knee_demo_gets_twins_only_for_its_meshes_above_the_live_detail(qtbot, window):
    """On the lenhart2015 knee (its packaged meshes): a bone or cartilage of more than LIVE_MAX_FACES
    triangles gets a coarse twin, a smaller one is drawn as it is."""
    from jointmodeller.app.knee_demo import build_knee_demo_project
    from jointmodeller.render.live_detail import LIVE_MAX_FACES

    project = build_knee_demo_project()
    w = window(project)
    vp = w.viewport
    full = _drawn_cells(vp)
    vp.prepare_live_detail()
    qtbot.waitUntil(lambda: not vp._making_twins, timeout=60000)
    _play(qtbot, w, project, 5)
    live = _drawn_cells(vp)
    assert any(n > LIVE_MAX_FACES for n in full.values())
    for key, n in full.items():
        if n <= LIVE_MAX_FACES:
            assert live[key] == n, key
        else:
            assert 0 < live[key] <= LIVE_MAX_FACES, key


def test_a_study_started_before_the_view_is_made_gets_its_twins_with_the_view(qtbot, window, demo_project):
    """Start pressed while the 3D view is still being prepared (the progressive start-up): the twins
    are made and drawn once the view exists."""
    from jointmodeller.render.live_detail import LIVE_MAX_FACES

    w = window(demo_project)
    vp = w.viewport
    if vp.has_view:
        pytest.skip("the view was made before the window was shown")
    vp.prepare_live_detail()
    w.study_control.live_project = demo_project
    w.study_control.live_sample(turning_batch(demo_project, 5))
    vp.ensure_view()
    qtbot.waitUntil(lambda: not vp._making_twins and len(vp.playback) == 0 and vp._awaiting is None,
                    timeout=60000)
    assert all(0 < n <= LIVE_MAX_FACES for n in _drawn_cells(vp).values())
