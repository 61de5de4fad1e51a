"""The demo elbow: builds and validates, watertight meshes in budget, bones articulate, ligaments
attach on the bone surfaces, load and experiment as MJM's laxity test (seed 004 §6)."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from scipy.spatial import cKDTree

from jointmodeller.app import demo
from jointmodeller.core.geometry.mesh_checks import surface_report
from jointmodeller.io import mesh_demo
from jointmodeller.model.validation import validate_project


@pytest.fixture(scope="module")
def project():
    return demo.build_demo_project()


def _tm(mesh) -> trimesh.Trimesh:
    return trimesh.Trimesh(mesh.vertices_L, mesh.faces, process=False)


def _distances(mesh, points: np.ndarray) -> np.ndarray:
    """Unsigned distances [m] from points (k, 3) to the mesh. trimesh's closest_point uses absolute
    tolerances that are off by up to ~0.2 mm on metre-scale meshes, so query in millimetres."""
    tm_mm = trimesh.Trimesh(mesh.vertices_L * 1e3, mesh.faces, process=False)
    return trimesh.proximity.closest_point(tm_mm, np.asarray(points) * 1e3)[1] * 1e-3


def test_committed_meshes_exist_and_are_used():
    paths = demo.demo_mesh_paths()
    assert all(p.parent == demo.REPO_ASSETS for p in paths.values())


def test_demo_builds_and_validates(project):
    assert validate_project(project) is project
    names = [m.name for m in project.masses]
    assert names == ["humerus", "ulna"]
    humerus, ulna = project.masses
    assert humerus.fixed and not ulna.fixed and ulna.joint is None
    assert len(project.attachments) >= 4 and len(project.springs) == len(project.attachments)
    assert all(s.tension_only and s.model == "axial" and s.kx[0] > 0 for s in project.springs)
    assert len(project.contacts) == 1 and {project.contacts[0].body_a, project.contacts[0].body_b} == set(names)


def test_meshes_are_watertight_and_within_budget(project):
    for m in project.masses:
        for mesh in (m.mesh, m.cartilage):
            rep = surface_report(mesh.faces, mesh.n_vertices)
            assert rep.closed and rep.consistently_wound, mesh.source
            assert mesh.n_vertices <= 20_000, mesh.source
            assert mesh.warnings == (), mesh.source
            assert _tm(mesh).is_watertight


def test_humerus_mass_properties_come_from_its_mesh(project):
    m = project.masses[0]
    assert m.properties_from_mesh and m.density_kg_m3 == demo.BONE_DENSITY_KG_M3
    vol = _tm(m.mesh).volume
    assert m.mass_kg == pytest.approx(vol * demo.BONE_DENSITY_KG_M3, rel=1e-9)
    assert np.allclose(m.position_G, m.com_L)  # L frame = G at the demo pose


def test_ulna_row_is_the_forearm_and_hand_segment(project):
    """arm26's r_ulna_radius_hand: its mass, its COM 18.15 cm down the shaft towards the load point,
    its principal inertias with the smallest about the shaft."""
    m = project.masses[1]
    assert not m.properties_from_mesh and m.mass_kg == pytest.approx(1.534315)
    com = np.asarray(m.com_L)
    assert np.allclose(m.position_G, com)
    load = np.asarray(demo.load_point_G())
    shaft = load / np.linalg.norm(load)
    assert np.linalg.norm(np.cross(com, shaft)) < 1e-12  # on the line from the elbow to the load
    assert com @ shaft > 0 and abs(com @ (mesh_demo.R_GE @ [0, 0, -1.0])) == pytest.approx(0.181479)
    w, v = np.linalg.eigh(np.asarray(m.inertia_L))
    assert np.allclose(w, sorted(demo.FOREARM_HAND_INERTIA_E), rtol=1e-12)
    assert abs(v[:, 0] @ (mesh_demo.R_GE @ [0, 0, 1.0])) == pytest.approx(1.0, abs=1e-12)
    assert abs(v[:, 2] @ [1.0, 0, 0]) == pytest.approx(1.0, abs=1e-12)  # largest about the flexion axis


def test_trochlea_sits_in_the_notch(project):
    humerus, ulna = project.masses
    H = _tm(humerus.mesh)
    u = ulna.mesh.vertices_L
    d_vv, _ = cKDTree(humerus.mesh.vertices_L).query(u)
    near = u[d_vv < 6e-3]
    dist = _distances(humerus.mesh, near)
    gap = dist.min()
    # bone surfaces never touch: the gap is about two cartilage layers plus the clearance
    assert 0.7 * mesh_demo.BONE_GAP < gap < 1.2 * mesh_demo.BONE_GAP
    assert not H.contains(near).any()
    # the notch wraps the trochlea: ulna points within 1.5 gaps of the humerus span > 170° about x
    close = near[dist < 1.5 * mesh_demo.BONE_GAP]
    angles = mesh_demo.notch_angle_deg(close)
    assert angles.max() - angles.min() > 170.0
    # and they lie around the trochlea (flexion axis), not elsewhere
    assert np.all(np.abs(close[:, 0]) < mesh_demo.TROCHLEA_HALF_WIDTH + 3e-3)
    nearest = near[np.argmin(dist)]
    assert abs(nearest[0]) < mesh_demo.TROCHLEA_HALF_WIDTH


def test_cartilage_layers_face_each_other_with_a_small_clearance(project):
    hc, uc = project.masses[0].cartilage, project.masses[1].cartilage
    d_vv, _ = cKDTree(hc.vertices_L).query(uc.vertices_L)
    near = uc.vertices_L[d_vv < 2e-3]
    dist = _distances(hc, near)
    assert 0.0 < dist.min() < 2 * mesh_demo.CLEARANCE


def _distance_to_mesh(mesh, p: np.ndarray) -> float:
    """Brute force, independent of the demo's snapping: min over triangles of the distance to the
    triangle's plane when the foot lies inside it, else to its three edges."""
    tri = mesh.vertices_L[mesh.faces]
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    h = np.einsum("ij,ij->i", p - a, n)
    foot = p - h[:, None] * n
    inside = np.ones(len(tri), dtype=bool)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= np.einsum("ij,ij->i", np.cross(v - u, foot - u), n) >= 0
    best = np.abs(h[inside]).min() if inside.any() else np.inf
    for u, v in ((a, b), (b, c), (c, a)):
        t = np.clip(np.einsum("ij,ij->i", p - u, v - u) / np.einsum("ij,ij->i", v - u, v - u), 0, 1)
        best = min(best, np.linalg.norm(u + t[:, None] * (v - u) - p, axis=1).min())
    return float(best)


def test_ligament_ends_lie_on_the_bone_surfaces(project):
    meshes = {m.name: m.mesh for m in project.masses}
    for a in project.attachments:
        for body, point in ((a.body_a, a.point_a_L), (a.body_b, a.point_b_L)):
            assert _distance_to_mesh(meshes[body], np.asarray(point)) < 1e-6, (a.name, body)
        assert a.initial_length_m > 0.01


def test_distance_helper_is_exact_on_the_surface(project):
    ulna = project.masses[1].mesh
    rng = np.random.default_rng(0)
    w = rng.dirichlet([1, 1, 1], 300)
    on = np.einsum("ij,ijk->ik", w, ulna.vertices_L[ulna.faces[rng.integers(0, ulna.n_faces, 300)]])
    assert _distances(ulna, on).max() < 1e-9


def test_snapping_finds_the_closest_surface_point():
    """snap_to_surface against brute force on a sphere: the foot is on the surface along the ray."""
    s = trimesh.creation.icosphere(3, radius=0.01)
    from jointmodeller.model.mesh import MeshData

    mesh = MeshData(s.vertices, s.faces)
    rng = np.random.default_rng(1)
    pts = rng.normal(size=(20, 3)) * 0.01
    snapped = demo.snap_to_surface(mesh, pts)
    for p, q in zip(pts, snapped):
        assert _distance_to_mesh(mesh, q) < 1e-12
        assert np.linalg.norm(q - p) <= _distance_to_mesh(mesh, p) + 1e-12


def test_straight_ligament_lines_do_not_cut_through_bone_at_the_demo_pose(project):
    meshes = [_tm(m.mesh) for m in project.masses]
    for a in project.attachments:
        A, B = np.array(a.point_a_L), np.array(a.point_b_L)
        L = np.linalg.norm(B - A)
        t = np.linspace(0.5e-3 / L, 1 - 0.5e-3 / L, 100)
        P = A + t[:, None] * (B - A)
        assert not any(m.contains(P).any() for m in meshes), a.name


def test_rest_lengths_follow_the_reference_strains(project):
    for a, b in zip(project.attachments, demo.DEMO_TISSUES):
        L0 = np.linalg.norm(np.subtract(a.point_a_L, a.point_b_L))
        assert L0 / a.initial_length_m - 1 == pytest.approx(b.reference_strain, abs=1e-12)
    by_name = {b.name: b for b in demo.DEMO_TISSUES}
    # Regan et al. 1991: AMCL and RCL taut through the arc, PMCL taut only in flexion (slack at 30°)
    assert by_name["MCL anterior bundle"].reference_strain > 0
    assert by_name["radial collateral ligament"].reference_strain > 0
    assert by_name["MCL posterior bundle"].reference_strain < 0
    # and the AMCL is the stiffest bundle
    assert max(demo.DEMO_TISSUES, key=lambda b: b.stiffness_N_per_m).name == "MCL anterior bundle"


def test_load_is_100_N_medial_lateral_30_cm_distal_on_the_ulna(project):
    (f,) = project.forces
    assert f.body == "ulna" and f.magnitude_N == 100.0
    d = np.asarray(f.direction_G)
    assert np.allclose(np.abs(d), [1.0, 0.0, 0.0])  # medial–lateral
    p = np.asarray(f.point_L)  # L = G for the ulna at the demo pose
    assert np.hypot(p[1], p[2]) == pytest.approx(0.30, abs=2e-3)  # 30 cm from the flexion axis
    # distal along the ulna's shaft, which is flexed 30° forward
    flex = np.degrees(np.arctan2(p[1], -p[2]))
    assert flex == pytest.approx(30.0, abs=1.0)
    (e,) = project.experiments
    assert (e.fixed_body, e.moving_body, e.load_kind) == ("humerus", "ulna", "varus_valgus")
    assert (e.max_load, e.lever_m, e.flexion_deg) == (100.0, 0.30, 30.0)


def test_stiffness_scale_scales_every_bundle():
    scaled = demo.build_demo_project(stiffness_scale=2.0)
    for s, b in zip(scaled.springs, demo.DEMO_TISSUES):
        assert s.kx[0] == pytest.approx(2.0 * b.stiffness_N_per_m)


def test_generation_is_deterministic(tmp_path):
    """Generating twice gives identical files, and the committed assets are what the script makes
    (same vertices, whatever order a VTK version emits them in; one small mesh regenerated)."""
    a = mesh_demo.write_demo_meshes(tmp_path / "a", names=("ulna_cartilage",))["ulna_cartilage"]
    b = mesh_demo.write_demo_meshes(tmp_path / "b", names=("ulna_cartilage",))["ulna_cartilage"]
    assert a.read_bytes() == b.read_bytes()
    new = trimesh.load(a, process=False).vertices
    old = trimesh.load(demo.REPO_ASSETS / a.name, process=False).vertices
    assert len(new) == len(old)
    assert cKDTree(old).query(new)[0].max() < 1e-9 and cKDTree(new).query(old)[0].max() < 1e-9


@pytest.mark.slow
def test_high_res_meshes_meet_the_benchmark_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("JOINTMODELLER_CACHE", str(tmp_path))
    paths = mesh_demo.write_demo_meshes(tmp_path, high_res=True, names=("humerus", "ulna"))
    for name, budget in (("humerus", 50_000), ("ulna", 20_000)):
        v = trimesh.load(paths[name], process=False)
        assert len(v.vertices) >= budget
        rep = surface_report(np.asarray(v.faces), len(v.vertices))
        assert rep.closed and rep.consistently_wound


def _rot_y(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def test_lever_arms_match_a_finite_rotation_of_the_ulna(project):
    """dL/dθ of varus_valgus_lever_arms against bundle lengths after rotating the ulnar ends by ±1e-5
    rad about the same pivot axes (central differences, independent of the cross-product formula)."""
    h, x_p = 1e-5, 0.015
    levers = demo.varus_valgus_lever_arms(project, x_p)
    for a in project.attachments:
        A, B = np.array(a.point_a_L), np.array(a.point_b_L)
        for i, (sign, pivot) in enumerate(((-1.0, x_p), (1.0, -x_p))):  # valgus = −y about +x_p
            c = np.array([pivot, 0.0, 0.0])
            lengths = [np.linalg.norm(c + _rot_y(sign * d) @ (B - c) - A) for d in (h, -h)]
            assert levers[a.name][i] == pytest.approx((lengths[0] - lengths[1]) / (2 * h), abs=1e-7), a.name


def test_collaterals_are_placed_to_resist_varus_and_valgus(project):
    """Anatomy (Regan 1991, Ikezu 2020): the AMCL (≈ 22 mm long) is stretched by valgus opening about the
    lateral edge, the lateral collaterals by varus opening about the medial edge, each with a lever of
    tens of millimetres; and the tension-side stiffness grows with the pivot's distance."""
    amcl = next(a for a in project.attachments if a.name == "MCL anterior bundle")
    assert 0.020 <= np.linalg.norm(np.subtract(amcl.point_a_L, amcl.point_b_L)) <= 0.027
    levers = demo.varus_valgus_lever_arms(project)
    assert levers["MCL anterior bundle"][0] > 0.015 and levers["MCL anterior bundle"][1] < 0
    for name in ("radial collateral ligament", "lateral ulnar collateral ligament"):
        assert levers[name][1] > 0.025 and levers[name][0] < 0
    near, far = demo.tension_side_stiffness(project, 0.0105), demo.tension_side_stiffness(project, 0.02)
    assert far[0] > near[0] > 0 and far[1] > near[1] > 0
