"""Closest points and signed depth against a brute-force reference on a real bone mesh."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.geometry.collision_proximity import CERTIFIED_FACES, SurfaceProximity
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


def _nearest_with_spare(prox, q, distance):
    """The nearest vertices of points q as the search takes them, with each point's spare (from the
    2k-nearest lists, as the contact's certificates take it)."""
    k = prox.nearest_count(False)
    bound = prox.search_bound(distance)
    lists, outside = prox.nearest_lists(q, 2 * k, bound)
    near, ok, spare = prox.nearest_from_lists(q, lists, outside, k, bound)
    assert ok.all()
    return near, spare


def test_closest_face_gap_is_a_lower_bound_and_certifies_small_moves():
    """``closest``'s gap never exceeds the true distance from the closest face to the next face
    searched (brute force over the same faces, an independent method); a point moved less than half
    of min(gap, nearest-vertex spare) keeps its face, and ``closest_certified`` then gives the full
    search's result to the bit."""
    import trimesh

    sphere = trimesh.creation.icosphere(subdivisions=3, radius=0.02)
    prox = SurfaceProximity.build(np.asarray(sphere.vertices), np.asarray(sphere.faces))
    rng = np.random.default_rng(11)
    direction = rng.normal(size=(300, 3))
    direction /= np.linalg.norm(direction, axis=1)[:, None]
    q = direction * (0.02 + rng.uniform(-1e-3, 1e-3, 300))[:, None]
    distance = 2e-3
    near, spare = _nearest_with_spare(prox, q, distance)
    cp = prox.closest(q, distance, candidates=np.arange(len(q)), near=near)
    assert len(cp.index) == len(q)
    for r, i in enumerate(cp.index):
        faces = np.unique(prox.vertex_faces[near[i]])
        faces = faces[faces >= 0]
        _, dist = brute_closest(q[i], prox.vertices[prox.faces[faces]])
        order = np.argsort(dist)
        assert faces[order[0]] == cp.face[r] or dist[order[1]] - dist[order[0]] < 1e-12
        assert 0.0 <= cp.gap[r] <= dist[order[1]] - dist[order[0]] + 1e-12
    margin = 0.5 * np.minimum(cp.gap, spare[cp.index]) - 1e-12
    certified = np.flatnonzero(margin > 0)
    assert len(certified) > 0.2 * len(q)  # most closest points of a sphere's points lie inside a face
    for r in certified:
        i = cp.index[r]
        step = rng.normal(size=(4, 3))
        step *= 0.999 * margin[r] / np.linalg.norm(step, axis=1)[:, None]
        moved = q[i] + step
        full = prox.closest(moved, distance, candidates=np.arange(4))
        held, s4, n4, d4, f4 = prox.closest_certified(moved, np.arange(4), np.repeat(q[i][None], 4, axis=0),
                                                      np.full(4, cp.face[r]), np.full(4, margin[r]),
                                                      np.full((4, CERTIFIED_FACES), -1), np.zeros(4))
        assert held.all()
        np.testing.assert_array_equal(full.face, f4)
        np.testing.assert_array_equal(full.closest, s4)
        np.testing.assert_array_equal(full.normal, n4)
        np.testing.assert_array_equal(np.abs(full.depth), np.sqrt(d4))


def test_face_set_gap_is_a_lower_bound_and_certifies_the_nearest_of_the_set():
    """``search_near``'s nearest faces and their set's gap: the gap never exceeds the true distance
    from the closest face to any other face searched (brute force over the same faces); a point moved
    less than half of min(set gap, nearest-vertex spare) has its closest face in the set, and
    ``closest_certified`` (no single-face margin) gives the full search's result to the bit; past
    the margin nothing is held. Points are taken near the faces' edges and corners, where the
    single-face gap is tiny."""
    import trimesh

    sphere = trimesh.creation.icosphere(subdivisions=3, radius=0.02)
    prox = SurfaceProximity.build(np.asarray(sphere.vertices), np.asarray(sphere.faces))
    rng = np.random.default_rng(13)
    corner = prox.vertices[prox.faces[:, 0]]
    edge = 0.5 * (corner + prox.vertices[prox.faces[:, 1]])
    pick = rng.choice(len(edge), 200, replace=False)
    direction = np.where((np.arange(200) % 2 == 0)[:, None], edge[pick], corner[pick]) + rng.normal(0.0, 2e-4, (200, 3))
    direction /= np.linalg.norm(direction, axis=1)[:, None]
    q = direction * (0.02 + rng.uniform(-1e-3, -2e-4, 200))[:, None]  # beneath the surface
    distance = 2e-3
    near, spare = _nearest_with_spare(prox, q, distance)
    s, n, d2, f, gap, fk, gapk = prox.search_near(q, near)
    assert np.array_equal(fk[:, 0], f)  # nearest first
    for i in range(len(q)):
        faces = np.unique(prox.vertex_faces[near[i]])
        faces = faces[faces >= 0]
        _, dist = brute_closest(q[i], prox.vertices[prox.faces[faces]])
        rest = dist[~np.isin(faces, fk[i])]
        assert 0.0 <= gapk[i] <= rest.min() - np.sqrt(d2[i]) + 1e-12
    margin_k = 0.5 * np.minimum(gapk, spare) - 1e-12
    sets = np.flatnonzero(margin_k > 4.0 * np.maximum(0.5 * np.minimum(gap, spare), 0))
    assert len(sets) > 0.2 * len(q)  # near an edge or corner the set certifies far more than the face alone
    switched = 0
    for i in sets:
        step = rng.normal(size=(4, 3))
        step *= 0.999 * margin_k[i] / np.linalg.norm(step, axis=1)[:, None]
        rows = np.arange(4)
        point_o = np.repeat(q[i][None], 4, axis=0)
        certificate = (np.full(4, f[i]), np.zeros(4), np.repeat(fk[i][None], 4, axis=0), np.full(4, margin_k[i]))
        beyond = prox.closest_certified(q[i] + step * (1.002 / 0.999), rows, point_o, *certificate)[0]
        assert not beyond.any()  # a point past its margin is searched again
        moved = q[i] + step
        held, s4, n4, d4, f4 = prox.closest_certified(moved, rows, point_o, *certificate)
        if not held.all():  # an exact tie of two faces: left to the search
            continue
        full = prox.closest(moved, distance, candidates=rows)
        np.testing.assert_array_equal(full.face, f4)
        np.testing.assert_array_equal(full.closest, s4)
        np.testing.assert_array_equal(full.normal, n4)
        np.testing.assert_array_equal(np.abs(full.depth), np.sqrt(d4))
        switched += int(np.any(f4 != f[i]))
    assert switched > 0  # some moves crossed to another face of the set
