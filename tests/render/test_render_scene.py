"""The pyvista scene without Qt: actors follow poses exactly, tissue points follow their bones,
tension colours blend from the spring colour to red, wrapped paths replace the straight lines, and
run series turn into the same poses as the project's initial pose at t = 0."""

from __future__ import annotations

import numpy as np
import pytest
import pyvista as pv

from jointmodeller.app.picking import mass_pose, to_global
from jointmodeller.model.results import RunRecord
from jointmodeller.render.frames import frame_from_sample, frames_from_run
from jointmodeller.render.scene import (
    HEADLIGHT_INTENSITY,
    TENSION_HOT,
    JointScene,
    SceneFrame,
    hex_rgb,
    pose_matrix,
    tension_colours,
)


@pytest.fixture
def scene(small_project):
    pl = pv.Plotter(off_screen=True, window_size=(320, 240))
    sc = JointScene(pl)
    sc.build(small_project, reset_camera=True)
    yield sc
    pl.close()


def rot_z(th: float) -> np.ndarray:
    return np.array([[np.cos(th), -np.sin(th), 0], [np.sin(th), np.cos(th), 0], [0, 0, 1.0]])


def test_initial_pose_and_tissue_end_points(scene, small_project):
    for m in small_project.masses:
        assert np.asarray(scene.mass_actors[m.name].user_matrix) == pytest.approx(pose_matrix(mass_pose(m)))
    att = small_project.attachments[0]
    pts = np.asarray(scene.tissue_poly.points)
    assert pts[0] == pytest.approx(to_global(mass_pose(small_project.mass(att.body_a)), att.point_a_L))
    assert pts[1] == pytest.approx(to_global(mass_pose(small_project.mass(att.body_b)), att.point_b_L))


def test_pose_update_moves_actor_and_tissue_end_only(scene, small_project):
    pose = (rot_z(0.3), np.array([0.01, -0.02, 0.15]))
    n_cells = scene.tissue_poly.n_cells
    scene.set_frame(SceneFrame(poses={"upper": pose}, tissue_force_N=np.array([25.0])), render=False)
    assert np.asarray(scene.mass_actors["upper"].user_matrix) == pytest.approx(pose_matrix(pose))
    att = small_project.attachments[0]
    pts = np.asarray(scene.tissue_poly.points)
    assert pts[1] == pytest.approx(to_global(pose, att.point_b_L))
    assert pts[0] == pytest.approx(to_global(mass_pose(small_project.mass("lower")), att.point_a_L))
    base = hex_rgb(small_project.springs[0].colour)
    assert scene.tissue_poly.cell_data["rgb"][0] == pytest.approx(0.5 * base + 0.5 * TENSION_HOT)
    assert scene.tissue_poly.n_cells == n_cells


def test_the_scene_is_lit_by_one_headlight(scene):
    """One light at the camera instead of pyvista's light kit of five (each light is shaded per
    fragment on software OpenGL), kept through a rebuild."""
    for _ in range(2):
        lights = list(scene.plotter.renderer.GetLights())
        assert len(lights) == 1
        assert lights[0].GetLightType() == 1  # VTK_LIGHT_TYPE_HEADLIGHT
        assert lights[0].GetIntensity() == pytest.approx(HEADLIGHT_INTENSITY)
        scene.build(scene.project)
        scene.plotter.render()


def test_tension_colours_limits():
    base = np.array([[0.2, 0.4, 0.6], [0.2, 0.4, 0.6]])
    out = tension_colours(base, np.array([-5.0, 1e9]), 50.0)
    assert out[0] == pytest.approx(base[0]) and out[1] == pytest.approx(TENSION_HOT)
    assert tension_colours(base, None, 50.0) is base


def test_wrapped_path_replaces_the_straight_line(scene):
    path = np.array([[0, 0, 0.0], [0.03, 0, 0.05], [0.02, 0, 0.1]])
    scene.set_frame(SceneFrame(tissue_paths_G=[path]), render=False)
    assert scene.tissue_poly.n_points == 3 and scene.tissue_poly.n_cells == 1
    assert np.asarray(scene.tissue_poly.points) == pytest.approx(path)


def test_run_poses_give_the_stored_mesh_frames(small_project):
    from jointmodeller.app.run_poses import poses_from_mesh_frames

    R = np.stack([np.stack([mass_pose(m)[0] for m in small_project.masses])] * 2)
    R[1, 1] = rot_z(0.5) @ R[1, 1]
    origin = np.stack([np.stack([mass_pose(m)[1] for m in small_project.masses])] * 2)
    poses = poses_from_mesh_frames(small_project, R, origin)
    run = RunRecord(study="dynamics", series={"time": np.array([0.0, 0.1]), "tissue_force_N": np.array([[0.0], [3.0]])},
                    labels={"tissue_force_N": ["MCL"]}, poses=poses)
    frames = frames_from_run(small_project, run)
    f1 = frames.frame(1)
    assert f1.time == 0.1 and f1.tissue_force_N == pytest.approx([3.0])
    assert f1.poses["upper"][0] == pytest.approx(R[1, 1], abs=1e-12)
    assert f1.poses["upper"][1] == pytest.approx(origin[1, 1], abs=1e-12)
    live = frame_from_sample(small_project, {"time": 0.1, "poses": poses.take([1])})
    assert live.time == 0.1 and live.poses["upper"][0] == pytest.approx(R[1, 1], abs=1e-12)
    assert frames_from_run(small_project, RunRecord(study="laxity", series={"load": np.zeros(3)})) is None
    assert frame_from_sample(small_project, {"time": 0.1, "tissue_force_N": np.zeros(1)}) is None  # no pose


def test_live_sample_with_paths_and_contact(small_project):
    from jointmodeller.app.run_poses import poses_from_mesh_frames

    R = np.stack([mass_pose(m)[0] for m in small_project.masses])
    t = np.stack([mass_pose(m)[1] for m in small_project.masses])
    path = np.array([[0, 0, 0.04], [0.025, 0, 0.06], [0.02, 0, 0.08], [0.0, 0.0, 0.07]])
    f = frame_from_sample(small_project, {
        "time": 0.2, "poses": poses_from_mesh_frames(small_project, R[None], t[None]),
        "tissue_force_N": np.array([7.0]),
        "tissue_paths_G": [path], "contact_points_G": np.zeros((2, 3)), "contact_pressure_Pa": np.array([1e6, 2e6]),
        "labels": {"tissue_force_N": ["MCL"]}})
    assert f.tissue_paths_G[0] == pytest.approx(path) and f.tissue_force_N == pytest.approx([7.0])
    assert f.contact_pressure_Pa == pytest.approx([1e6, 2e6])


def test_laxity_sweep_frames_pose_the_moving_body(small_project):
    pytest.importorskip("jointmodeller.app.build")
    from jointmodeller.app.run_poses import body_frames
    from jointmodeller.core.spatial_math import matrix_to_quat
    from jointmodeller.model.results import BodyPoses

    upper = small_project.mass("upper")
    R_BL, com_L = body_frames(small_project)
    R_GL = np.stack([rot_z(a) @ mass_pose(upper)[0] for a in (0.0, 0.1, 0.2)])
    p_G = np.array([[0, 0, 0.11], [0.001, 0, 0.11], [0.002, 0, 0.11]])
    poses = BodyPoses(("upper",), p_G[:, None], matrix_to_quat(R_GL @ R_BL[1].T)[:, None], R_BL[1:], com_L[1:])
    run = RunRecord(study="laxity", parameters={"moving_body": "upper", "load_kind": "varus_valgus"},
                    series={"load": np.array([0.0, 50.0, 100.0]), "tissue_tension_N": np.array([[0.0], [1.0], [2.0]])},
                    labels={"tissue_tension_N": ["MCL"]}, poses=poses)
    frames = frames_from_run(small_project, run)
    f = frames.frame(2)
    assert f.poses["upper"][0] == pytest.approx(R_GL[2], abs=1e-12)
    assert to_global(f.poses["upper"], upper.com_L) == pytest.approx(p_G[2], abs=1e-12)
    assert f.poses["lower"][1] == pytest.approx(mass_pose(small_project.mass("lower"))[1])
    assert f.tissue_force_N == pytest.approx([2.0]) and frames.label(1) == "load = 50 N"


def test_display_mesh_is_decimated_but_keeps_the_shape():
    import trimesh

    from jointmodeller.model.mesh import MeshData
    from jointmodeller.render.scene import DISPLAY_MAX_FACES, display_mesh

    tm = trimesh.creation.icosphere(subdivisions=6, radius=0.02)  # 81,920 faces
    mesh = MeshData(tm.vertices, tm.faces, source="sphere")
    poly = display_mesh(mesh)
    assert poly.n_cells <= DISPLAY_MAX_FACES * 1.02 and display_mesh(mesh) is poly
    r = np.linalg.norm(np.asarray(poly.points), axis=1)
    assert np.abs(r - 0.02).max() < 0.02 * 0.02  # every drawn vertex within 2 % of the true surface


@pytest.mark.slow
def test_decimated_display_meshes_are_kept_on_disk_and_read_back_alike(tmp_path):
    """With a cache folder (the GUI's per-user cache) the decimation is done once per mesh: a later
    session reads the same points and triangles back; a damaged file is decimated and written again."""
    import trimesh

    from jointmodeller.model.mesh import MeshData
    from jointmodeller.render import scene as sc

    tm = trimesh.creation.icosphere(subdivisions=6, radius=0.02)
    first = sc.display_mesh(MeshData(tm.vertices, tm.faces, source="a"), tmp_path)
    files = list(tmp_path.glob("display-*.vtp"))
    assert len(files) == 1 and not list(first.field_data.keys())
    sc._DISPLAY_CACHE.clear()  # a new session
    again = sc.display_mesh(MeshData(tm.vertices.copy(), tm.faces.copy(), source="b"), tmp_path)
    assert again is not first and again.points.dtype == first.points.dtype
    np.testing.assert_array_equal(again.points, first.points)
    np.testing.assert_array_equal(again.faces, first.faces)
    assert not list(again.field_data.keys()) and not list(again.point_data.keys())
    files[0].write_bytes(files[0].read_bytes()[:500])
    sc._DISPLAY_CACHE.clear()
    rebuilt = sc.display_mesh(MeshData(tm.vertices, tm.faces, source="c"), tmp_path)
    np.testing.assert_array_equal(rebuilt.points, first.points)
    assert files[0].stat().st_size > 500
    other = trimesh.creation.icosphere(subdivisions=6, radius=0.03)  # another mesh, another file
    sc.display_mesh(MeshData(other.vertices, other.faces, source="d"), tmp_path)
    assert len(list(tmp_path.glob("display-*.vtp"))) == 2
    small = trimesh.creation.box(extents=(0.01, 0.01, 0.01))  # not decimated: nothing kept
    sc.display_mesh(MeshData(small.vertices, small.faces, source="e"), tmp_path)
    assert len(list(tmp_path.glob("*"))) == 2


def test_body_axes_are_the_principal_axes(small_project):
    from jointmodeller.render.scene import body_axes_L

    I = np.diag([1.0, 3.0, 2.0])
    R = body_axes_L(I)
    for k in range(3):  # each drawn axis is an eigenvector of the inertia
        v = R[k]
        assert np.cross(I @ v, v) == pytest.approx(np.zeros(3), abs=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0)


def test_contact_patch_updates_in_place(scene):
    pts = np.array([[0, 0, 0.05], [0.01, 0, 0.05], [0, 0.01, 0.05]])
    scene.set_frame(SceneFrame(contact_points_G=pts, contact_pressure_Pa=np.array([1e6, 2e6, 3e6])), render=False)
    actor = scene.contact_actor
    assert actor.GetVisibility() and scene.contact_poly.n_points == 3
    assert scene.contact_poly.point_data["pressure [MPa]"] == pytest.approx([1.0, 2.0, 3.0])
    scene.set_frame(SceneFrame(), render=False)  # no contact data: the patch stays
    assert actor.GetVisibility()
    scene.set_frame(SceneFrame(contact_points_G=pts[:2], contact_pressure_Pa=np.array([4e6, 5e6])), render=False)
    assert scene.contact_actor is actor and scene.contact_poly.n_points == 2
    scene.set_frame(SceneFrame(contact_points_G=np.zeros((0, 3))), render=False)
    assert not actor.GetVisibility()


def test_cartilage_layers_are_drawn_and_follow_their_bone(small_project):
    """A mass's cartilage (imported or grown: docs/cartilage.md) gets its own actor, posed with the bone."""
    from dataclasses import replace

    from jointmodeller.model.mesh import MeshData

    m0 = small_project.masses[0]
    v = np.asarray(m0.mesh.vertices_L) * 1.01
    project = small_project.with_rows("masses", (replace(m0, cartilage=MeshData(v, m0.mesh.faces)),)
                                      + tuple(small_project.masses[1:]))
    pl = pv.Plotter(off_screen=True, window_size=(320, 240))
    try:
        sc = JointScene(pl)
        sc.build(project)
        assert set(sc.cartilage_actors) == {m0.name}
        pose = (rot_z(0.3), np.array([0.01, -0.02, 0.15]))
        sc.set_frame(SceneFrame(poses={m0.name: pose}))
        assert np.asarray(sc.cartilage_actors[m0.name].user_matrix) == pytest.approx(pose_matrix(pose))
        assert sc.mass_of_actor(sc.cartilage_actors[m0.name]) is None  # picking stays on the bone
        sc.build(small_project)
        assert not sc.cartilage_actors
    finally:
        pl.close()


def test_tension_colours_have_a_legend_while_forces_are_shown(scene, small_project):
    """Issue 18 item 10, part: the tension colour map says what its colours mean."""
    assert scene.legend_text() is None and (scene.legend_actor is None or not scene.legend_actor.GetVisibility())
    scene.force_scale_N = 80.0
    scene.set_frame(SceneFrame(tissue_force_N=np.array([20.0])), render=False)
    assert scene.legend_text() == "tissue tension: spring colour at 0 N, red at 80 N or more"
    assert scene.legend_actor.GetVisibility() and "80 N" in scene.legend_actor.GetText(0)
    scene.set_frame(SceneFrame(), render=False)  # back to the project's pose: spring colours, no legend
    assert scene.legend_text() is None and not scene.legend_actor.GetVisibility()
    scene.build(small_project)
    assert not scene.legend_actor.GetVisibility()
