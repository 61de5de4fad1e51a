"""Mass properties against analytic solids, an independent implementation (trimesh) and invariances."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from jointmodeller.core.geometry.mass_properties import mass_properties, validate_inertia

RHO = 1900.0
TOL = 1e-3  # the 0.1 %


def _rel(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(b))


def test_sphere_matches_analytic_volume_com_inertia():
    r, c = 0.02, np.array([0.1, -0.2, 0.3])
    s = trimesh.creation.icosphere(subdivisions=6, radius=r)
    p = mass_properties(s.vertices + c, s.faces, RHO)
    V = 4.0 / 3.0 * np.pi * r**3
    assert p.method == "closed" and not p.warnings
    assert abs(p.volume_m3 / V - 1) < TOL
    assert abs(p.mass_kg / (RHO * V) - 1) < TOL
    assert np.linalg.norm(p.com_L - c) < 1e-6 * r
    assert _rel(p.inertia_L, 0.4 * RHO * V * r**2 * np.eye(3)) < TOL


def test_box_is_exact_and_principal_axes_follow_a_rotation():
    a, b, c = 0.01, 0.02, 0.04
    box = trimesh.creation.box((a, b, c))
    R = trimesh.transformations.rotation_matrix(0.7, [1, 2, 3])[:3, :3]
    shift = np.array([0.3, 0.1, -0.2])
    p = mass_properties(box.vertices @ R.T + shift, box.faces, RHO)
    m = RHO * a * b * c
    I_box = m / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    assert abs(p.volume_m3 / (a * b * c) - 1) < 1e-12
    assert np.allclose(p.com_L, shift, atol=1e-12)
    assert _rel(p.inertia_L, R @ I_box @ R.T) < 1e-10
    assert np.allclose(p.principal_moments, np.sort(np.diag(I_box)), rtol=1e-10)
    # principal axes: right-handed and diagonalising
    assert np.isclose(np.linalg.det(p.R_LB), 1.0)
    assert np.allclose(p.R_LB.T @ p.inertia_L @ p.R_LB, np.diag(p.principal_moments), atol=1e-12 * m)


def test_cylinder_matches_analytic():
    r, h = 0.01, 0.05
    cyl = trimesh.creation.cylinder(radius=r, height=h, sections=512)
    p = mass_properties(cyl.vertices, cyl.faces, RHO)
    V = np.pi * r * r * h
    m = RHO * V
    I = np.diag([m * (3 * r * r + h * h) / 12] * 2 + [m * r * r / 2])
    assert abs(p.volume_m3 / V - 1) < TOL
    assert np.linalg.norm(p.com_L) < 1e-9
    assert _rel(p.inertia_L, I) < TOL


def test_agrees_with_trimesh_on_an_irregular_closed_mesh():
    rng = np.random.default_rng(3)
    s = trimesh.creation.icosphere(3, radius=0.03)
    v = s.vertices * (1 + 0.2 * rng.random((len(s.vertices), 1))) * [1.0, 0.6, 1.7] + [0.05, 0.0, -0.1]
    tm = trimesh.Trimesh(v, s.faces, process=False)
    tm.density = RHO
    p = mass_properties(v, s.faces, RHO)
    assert abs(p.volume_m3 / tm.volume - 1) < 1e-10
    assert np.allclose(p.com_L, tm.center_mass, atol=1e-12)
    assert _rel(p.inertia_L, tm.moment_inertia) < 1e-9


def test_inward_winding_gives_the_same_solid_with_a_warning():
    s = trimesh.creation.icosphere(3, radius=0.02)
    out = mass_properties(s.vertices, s.faces, RHO)
    inv = mass_properties(s.vertices, s.faces[:, ::-1], RHO)
    assert np.isclose(inv.volume_m3, out.volume_m3) and np.allclose(inv.inertia_L, out.inertia_L)
    assert any("inward" in w for w in inv.warnings)


def test_open_mesh_is_capped_and_says_so():
    s = trimesh.creation.icosphere(4, radius=0.02)
    keep = s.triangles_center[:, 2] < 0.015  # cut the top cap off: one hole
    p = mass_properties(s.vertices, s.faces[keep], RHO)
    assert p.method == "capped_holes" and p.warnings
    # the capped solid is the sphere minus a thin cap: volume between that and the full sphere
    V = 4.0 / 3.0 * np.pi * 0.02**3
    assert 0.9 * V < p.volume_m3 < V


def test_non_manifold_mesh_falls_back_to_convex_hull():
    a = trimesh.creation.box((0.01, 0.01, 0.01))
    b = trimesh.creation.box((0.01, 0.01, 0.01))
    b.apply_translation([0.0, 0.0, 0.01])  # shares a face's edges with a -> non-manifold edges
    m = trimesh.util.concatenate([a, b])
    m.merge_vertices()
    faces = np.asarray(m.faces)[:-1]  # and open
    p = mass_properties(m.vertices, faces, RHO)
    assert p.method == "convex_hull" and any("convex hull" in w for w in p.warnings)
    assert np.isclose(p.volume_m3, 2e-6, rtol=1e-9)


def test_flat_sheet_has_no_volume_and_says_what_to_do():
    from jointmodeller.model.errors import MeshError

    grid = trimesh.creation.box((0.02, 0.02, 0.001))
    v = grid.vertices.copy()
    v[:, 2] = 0.0  # squash: a flat sheet
    with pytest.raises(MeshError, match="no volume"):
        mass_properties(v, grid.faces, RHO)


def test_bad_density_raises():
    s = trimesh.creation.box((1, 1, 1))
    with pytest.raises(ValueError):
        mass_properties(s.vertices, s.faces, 0.0)


@pytest.mark.parametrize(
    "inertia, ok",
    [
        (np.diag([1.0, 2.0, 2.5]), True),
        (np.diag([1.0, 1.0, 2.0]), True),  # flat plate: equality holds
        (np.diag([1.0, 1.0, 3.0]), False),  # breaks I1 + I2 >= I3
        (np.diag([1.0, -1.0, 1.0]), False),  # not positive definite
        (np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), False),  # not symmetric
        (np.full((3, 3), np.nan), False),
    ],
)
def test_validate_inertia(inertia, ok):
    assert (validate_inertia(inertia) == []) is ok


@pytest.mark.parametrize("name", ["lenhart2015-R-tibia-subchondral-bone.stl",
                                  "lenhart2015-R-femur-subchondral-bone.stl",
                                  "lenhart2015-R-tibia-cartilage.stl", "lenhart2015-R-fibula-bone.stl"])
def test_open_segmented_meshes_get_the_properties_of_a_real_body(shared_meshes, name):
    """Issue 18 item 2: capping the two holes of the Lenhart tibia subchondral sheet gives fans that
    cross the surface, whose signed integrals broke the triangle inequality (I1 + I2 < I3). Every open
    real mesh now yields a physically possible inertia, the hull when capping cannot, and says so."""
    from jointmodeller.io.meshes import read_mesh

    f = shared_meshes / name
    if not f.exists():
        pytest.skip(f"{name} absent")
    mesh = read_mesh(f, "m")
    p = mass_properties(mesh.vertices_L, mesh.faces, RHO)
    assert validate_inertia(p.inertia_L) == []
    assert p.principal_moments[0] + p.principal_moments[1] >= p.principal_moments[2]
    assert p.method in ("capped_holes", "convex_hull") and p.warnings
    if p.method == "convex_hull":
        assert any("triangle inequality" in w and "convex hull" in w for w in p.warnings)
        hull = trimesh.Trimesh(mesh.vertices_L, mesh.faces).convex_hull
        assert abs(p.volume_m3 / hull.volume - 1) < 1e-9
    if name.startswith("lenhart2015-R-tibia-subchondral"):
        assert p.method == "convex_hull"
