"""Closest points and signed depth against a brute-force reference on a real bone mesh."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.geometry.collision_proximity import SurfaceProximity
from tests.core.mechanics.contact.helpers import plane_mesh, read_mesh


def brute_closest(p: np.ndarray, tri: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Closest point of p (3,) on every triangle (m, 3, 3): projection if inside, else nearest edge point.

    An independent method (plane projection + segment clamping), not Ericson's region test.
    Returns (closest points (m, 3), distances (m,)).
    """
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1)[:, None]
    proj = p - ((p - a) * n).sum(axis=1)[:, None] * n
    inside = np.ones(len(tri), bool)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= (np.cross(v - u, proj - u) * n).sum(axis=1) >= 0
    best = np.where(inside[:, None], proj, np.nan)
    dist = np.where(inside, np.linalg.norm(p - proj, axis=1), np.inf)
    for u, v in ((a, b), (b, c), (c, a)):
        d = v - u
        t = np.clip(((p - u) * d).sum(axis=1) / (d * d).sum(axis=1), 0, 1)
        q = u + t[:, None] * d
        dq = np.linalg.norm(p - q, axis=1)
        better = dq < dist
        best[better], dist[better] = q[better], dq[better]
    return best, dist


def test_closest_points_match_brute_force_on_real_mesh(shared_meshes):
    v, f = read_mesh(shared_meshes / "lenhart2015-R-tibia-subchondral-bone.stl")
    import trimesh
    m = trimesh.Trimesh(v, f)  # merged vertices
    v, f = np.asarray(m.vertices), np.asarray(m.faces)
    prox = SurfaceProximity.build(v, f)
    rng = np.random.default_rng(11)
    pts = v[rng.integers(0, len(v), 150)] + rng.normal(0, 0.0008, (150, 3))
    res = prox.closest(pts, 0.002)
    assert len(res.index) > 100
    tri = v[f]
    for k, i in enumerate(res.index):
        _, dist = brute_closest(pts[i], tri)
        assert abs(res.depth[k]) == pytest.approx(dist.min(), abs=1e-12)
    # points left out really are farther than the search distance
    left = np.setdiff1d(np.arange(len(pts)), res.index)
    for i in left:
        assert brute_closest(pts[i], tri)[1].min() > 0.002 - 1e-12
    # beneath_only keeps every point with positive depth
    under = prox.closest(pts, 0.002, beneath_only=True)
    assert set(res.index[res.depth > 0]) <= set(under.index)


def test_signed_depth_and_normal_on_a_plane():
    v, f = plane_mesh(0.02, 41)
    prox = SurfaceProximity.build(v, f)
    pts = np.array([[0.001, 0.002, -0.0003], [0.003, -0.001, 0.0004], [0.0, 0.0, 0.005]])
    res = prox.closest(pts, 0.001)
    assert res.index.tolist() == [0, 1]
    assert res.depth == pytest.approx([0.0003, -0.0004], abs=1e-15)
    assert np.allclose(res.normal, [0, 0, 1])
    assert np.allclose(res.closest, pts[:2] * [1, 1, 0], atol=1e-15)
    plain = prox.closest(pts, 0.001, use_numba=False)
    assert np.array_equal(plain.closest, res.closest) and np.array_equal(plain.depth, res.depth)
