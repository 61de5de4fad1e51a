"""Closest-point queries on obstacles against trimesh's brute-force proximity and inside tests."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from jointmodeller.core.geometry.wrapping import _kernels
from jointmodeller.core.geometry.wrapping.obstacles import (
    MeshObstacle,
    Pose,
    closest_over_obstacles,
    closest_point_on_triangles,
)


@pytest.fixture(scope="module")
def blob():
    """A non-convex closed surface: an icosphere with a bump and a dent."""
    m = trimesh.creation.icosphere(subdivisions=4, radius=1.0)
    v = m.vertices.copy()
    v *= (1.0 + 0.3 * np.exp(-8 * np.sum((v - [1, 0, 0]) ** 2, 1))
          - 0.2 * np.exp(-8 * np.sum((v - [0, 1, 0]) ** 2, 1)))[:, None]
    mesh = trimesh.Trimesh(v, m.faces)
    return mesh, MeshObstacle(mesh.vertices, mesh.faces, body=0)


def test_point_triangle_matches_brute_force():
    rng = np.random.default_rng(1)
    a, b, c = rng.normal(size=(3, 200, 3))
    p = rng.normal(size=(200, 3)) * 2
    q, bary = closest_point_on_triangles(p, a, b, c)
    assert np.allclose(bary.sum(1), 1.0) and (bary >= -1e-12).all()
    # brute force: dense barycentric grid on each triangle
    s = np.linspace(0, 1, 121)
    S, T = np.meshgrid(s, s)
    keep = S + T <= 1
    S, T = S[keep], T[keep]
    grid = a[:, None] + S[None, :, None] * (b - a)[:, None] + T[None, :, None] * (c - a)[:, None]
    brute = np.sqrt(((grid - p[:, None]) ** 2).sum(-1)).min(1)
    mine = np.linalg.norm(p - q, axis=1)
    assert (mine <= brute + 1e-12).all()
    edge = max(np.linalg.norm(b - a, axis=1).max(), np.linalg.norm(c - a, axis=1).max())
    assert np.allclose(mine, brute, atol=1e-2 * edge)


@pytest.mark.parametrize("use_numba", [True, False])
def test_closest_matches_trimesh(blob, use_numba, monkeypatch):
    mesh, ob = blob
    monkeypatch.setattr(_kernels, "USE_NUMBA", use_numba)
    rng = np.random.default_rng(2)
    # points near the surface, on both sides (where wrapping asks)
    v = mesh.vertices[rng.integers(0, len(mesh.vertices), 400)]
    p = v * rng.uniform(0.9, 1.1, size=(400, 1)) + rng.normal(scale=0.01, size=(400, 3))
    q, n, sd, face = ob.closest(p)
    q_ref, d_ref, _ = trimesh.proximity.closest_point(mesh, p)
    assert np.allclose(np.abs(sd), d_ref, atol=1e-9)
    inside = mesh.contains(p)
    assert np.array_equal(sd < 0, inside)
    assert np.allclose(np.linalg.norm(n, axis=1), 1.0)


def test_numba_and_numpy_kernels_agree(blob, monkeypatch):
    _, ob = blob
    from jointmodeller.core._jit import NUMBA_ENABLED

    if not NUMBA_ENABLED:
        pytest.skip("numba switched off (JOINTMODELLER_NUMBA=0)")
    p = np.random.default_rng(3).normal(size=(300, 3))
    monkeypatch.setattr(_kernels, "USE_NUMBA", True)
    a = ob.closest(p, shape=True)
    monkeypatch.setattr(_kernels, "USE_NUMBA", False)
    b = ob.closest(p, shape=True)
    # closest point, normal and signed distance agree; the face (and its shape operator) may
    # differ where the closest point is a vertex or edge shared by several faces
    for x, y in zip(a[:3], b[:3]):
        assert np.allclose(x, y, atol=1e-12)
    same = a[3] == b[3]
    assert same.mean() > 0.8 and np.allclose(a[4][same], b[4][same])


def test_shape_operator_of_sphere_is_identity_over_radius(sphere_41k):
    _, ob = sphere_41k
    R = 0.02
    rng = np.random.default_rng(4)
    d = rng.normal(size=(50, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    q, n, sd, face, S = ob.closest(d * R * 1.01, shape=True)
    P = np.eye(3) - n[:, :, None] * n[:, None, :]
    assert np.allclose(S * R, P, atol=0.05)


def test_queries_in_moved_body_frames(blob):
    """A rigidly moved body answers like the unmoved one with the query moved along."""
    _, ob = blob
    ob1 = MeshObstacle(ob.vertices_B, ob.faces, body=1)
    rng = np.random.default_rng(5)
    from scipy.spatial.transform import Rotation

    R = Rotation.random(random_state=6).as_matrix()
    t = np.array([0.3, -0.2, 1.0])
    pose = Pose(np.vstack([np.zeros(3), t]), np.stack([np.eye(3), R]))
    p_B = rng.normal(size=(100, 3))
    p_G = p_B @ R.T + t
    c_G, n_G, sd, which, c_B, S = closest_over_obstacles([ob1], pose, p_G)
    q, n, sd0, _ = ob.closest(p_B)
    assert np.allclose(sd, sd0) and np.allclose(c_B, q)
    assert np.allclose(c_G, q @ R.T + t) and np.allclose(n_G, n @ R.T)


def test_inside_out_closed_mesh_is_turned_outwards(blob):
    mesh, ob = blob
    flipped = MeshObstacle(mesh.vertices, mesh.faces[:, ::-1], body=0)
    p = np.array([[0.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    assert np.array_equal(np.sign(flipped.closest(p)[2]), np.sign(ob.closest(p)[2]))
    assert flipped.closest(p)[2][0] < 0 < flipped.closest(p)[2][1]


def test_a_surface_built_again_shares_its_structures_and_a_different_one_does_not():
    """MeshObstacle keeps each surface's derived structures per process (a project rebuilt for every
    study makes the same bones again): the same vertices and faces share them, a changed vertex or an
    inside-out winding gets its own, and the obstacles' own state (body, name) stays apart."""
    box = trimesh.creation.box((0.02, 0.03, 0.04))
    a = MeshObstacle(box.vertices, box.faces, 1, "a")
    b = MeshObstacle(box.vertices.copy(), box.faces.copy(), 2, "b")
    assert b.tree is a.tree and b.vertex_faces is a.vertex_faces
    assert (a.body, a.name, b.body, b.name) == (1, "a", 2, "b")
    moved = box.vertices.copy()
    moved[0, 0] += 1e-9
    c = MeshObstacle(moved, box.faces, 1)
    assert c.tree is not a.tree and c.vertices_B[0, 0] == moved[0, 0]
    inside_out = MeshObstacle(box.vertices, box.faces[:, ::-1], 1)  # turned outside out again, not shared
    assert inside_out.tree is not a.tree
    np.testing.assert_array_equal(inside_out.face_normals_B, a.face_normals_B)
