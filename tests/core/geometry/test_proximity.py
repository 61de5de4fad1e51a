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


def _nearest_with_spare(prox, q, distance):
    """The nearest vertices of points q as the search takes them, with each point's spare (from the
    2k-nearest lists, as the contact's certificates take it)."""
    k = prox.nearest_count(False)
    bound = prox.search_bound(distance)
    lists, outside = prox.nearest_lists(q, 2 * k, bound)
    near, ok, spare = prox.nearest_from_lists(q, lists, outside, k, bound)
    assert ok.all()
    return near, spare


SLACK_M = 1e-12  # the certificates' rounding slack, as the contact takes it


def _certificate(prox, q, near, spare, found, i, copies):
    """The one-slot certificate arrays (closest_certified's order) of search row i, repeated ``copies``
    times, and its bounds (reach, reach_k, next, near_margin)."""
    from jointmodeller.core.geometry.collision_proximity import certificate_bounds

    _, _, d2, f, gap, fk, gapk, dk = found
    bounds = [b[0] for b in certificate_bounds(q[i][None], near[i][None], prox.vertices, d2[i:i + 1], gap[i:i + 1],
                                               gapk[i:i + 1], spare[i:i + 1], SLACK_M)]
    reach, reach_k, nxt, near_margin = bounds
    arrays = (np.repeat(q[i][None], copies, axis=0), np.full(copies, f[i]), np.full(copies, reach),
              np.repeat(fk[i][None], copies, axis=0), np.repeat(dk[i][None] - SLACK_M, copies, axis=0),
              np.full(copies, reach_k), np.repeat(near[i][None], copies, axis=0), np.full(copies, nxt),
              np.full(copies, near_margin))
    return arrays, bounds


def _expected_held(prox, p, moved, near_row, face, face_k, bounds):
    """Whether the documented rule holds a certificate at point p, moved by ``moved`` since it was made,
    measured independently (brute-force distances): its nearest vertices all nearer than next − moved,
    and its face nearer than reach − moved or the nearest of its face set (no tie) nearer than
    reach_k − moved. None where a distance lies within 1e-12 m of its bound (rounding's side)."""
    reach, reach_k, nxt, _ = bounds
    eps = 1e-12
    far_vertex = np.linalg.norm(prox.vertices[near_row] - p, axis=1).max() + moved
    _, d_face = brute_closest(p, prox.vertices[prox.faces[[face]]])
    d_set = np.sort(brute_closest(p, prox.vertices[prox.faces[face_k[face_k >= 0]]])[1])
    margins = [nxt - far_vertex, reach - (d_face[0] + moved), reach_k - (d_set[0] + moved)]
    if any(abs(x) < eps for x in margins if np.isfinite(x)) or (len(d_set) > 1 and d_set[1] - d_set[0] < eps):
        return None
    keeps, by_face, by_set = (x > 0 for x in margins)
    return bool(keeps and (by_face or by_set))


def _assert_same_as_search(prox, moved_pts, rows, held, s4, n4, d4, f4, distance):
    """Every held row's answer is the full search's, to the bit."""
    full = prox.closest(moved_pts, distance, candidates=rows)
    assert np.array_equal(full.index, rows)
    for j in np.flatnonzero(held):
        assert full.face[j] == f4[j]
        np.testing.assert_array_equal(full.closest[j], s4[j])
        np.testing.assert_array_equal(full.normal[j], n4[j])
        assert abs(full.depth[j]) == np.sqrt(d4[j])


def test_closest_face_gap_is_a_lower_bound_and_certifies_moves_by_the_bounds():
    """``closest``'s gap never exceeds the true distance from the closest face to the next face
    searched (brute force over the same faces, an independent method). A certificate (its bounds from
    ``certificate_bounds``) holds a moved point exactly when its rule, measured independently, says
    so: the nearest vertices within next − move and the face within reach − move. Every held answer
    is the full search's to the bit; every move within half of min(gap, spare) is held (the classic
    guarantee), and some longer ones too (what measuring at the new point buys)."""
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
    found = prox.search_near(q, near)
    assert len(cp.index) == len(q)
    for r, i in enumerate(cp.index):
        faces = np.unique(prox.vertex_faces[near[i]])
        faces = faces[faces >= 0]
        _, dist = brute_closest(q[i], prox.vertices[prox.faces[faces]])
        order = np.argsort(dist)
        assert faces[order[0]] == cp.face[r] or dist[order[1]] - dist[order[0]] < 1e-12
        assert 0.0 <= cp.gap[r] <= dist[order[1]] - dist[order[0]] + 1e-12
    margin = 0.5 * np.minimum(cp.gap, spare[cp.index]) - SLACK_M
    certified = np.flatnonzero(margin > 0)
    assert len(certified) > 0.2 * len(q)  # most closest points of a sphere's points lie inside a face
    beyond_margin = 0
    for r in certified:
        i = cp.index[r]
        arrays, bounds = _certificate(prox, q, near, spare, found, i, 8)
        step = rng.normal(size=(8, 3))
        step *= (margin[r] * np.r_[0.999, 0.5, 0.999, 0.9, 1.5, 2.0, 3.0, 4.0] / np.linalg.norm(step, axis=1))[:, None]
        moved = q[i] + step
        rows = np.arange(8)
        held, s4, n4, d4, f4 = prox.closest_certified(moved, rows, *arrays)
        assert held[:4].all()  # within the classic margin
        _assert_same_as_search(prox, moved, rows, held, s4, n4, d4, f4, distance)
        for j in range(8):
            expected = _expected_held(prox, moved[j], np.linalg.norm(step[j]), near[i], found[3][i], found[5][i],
                                      bounds)
            assert expected is None or held[j] == expected
        beyond_margin += int(held[4:].sum())
    assert beyond_margin > 0


def test_face_set_gap_is_a_lower_bound_and_certifies_the_nearest_of_the_set():
    """``search_near``'s nearest faces and their set's gap: the gap never exceeds the true distance
    from the closest face to any other face searched (brute force over the same faces), and the set's
    distances are the faces' own. Points near the faces' edges and corners, where the single-face gap
    is tiny: a certificate holds a moved point by its face set exactly when the rule says so (the
    nearest vertices within next − move, the nearest of the set within reach_k − move, measured
    independently), answering as the full search does to the bit; moves within half of
    min(set gap, spare) are all held, some cross to another face of the set."""
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
    found = prox.search_near(q, near)
    s, n, d2, f, gap, fk, gapk, dk = found
    assert np.array_equal(fk[:, 0], f)  # nearest first
    for i in range(len(q)):
        faces = np.unique(prox.vertex_faces[near[i]])
        faces = faces[faces >= 0]
        _, dist = brute_closest(q[i], prox.vertices[prox.faces[faces]])
        rest = dist[~np.isin(faces, fk[i])]
        assert 0.0 <= gapk[i] <= rest.min() - np.sqrt(d2[i]) + 1e-12
        listed = fk[i][fk[i] >= 0]
        _, own = brute_closest(q[i], prox.vertices[prox.faces[listed]])
        np.testing.assert_allclose(dk[i][:len(listed)], own, rtol=0, atol=1e-12)
    margin_k = 0.5 * np.minimum(gapk, spare) - SLACK_M
    sets = np.flatnonzero(margin_k > 4.0 * np.maximum(0.5 * np.minimum(gap, spare), 0))
    assert len(sets) > 0.2 * len(q)  # near an edge or corner the set certifies far more than the face alone
    switched = 0
    for i in sets:
        arrays, bounds = _certificate(prox, q, near, spare, found, i, 6)
        step = rng.normal(size=(6, 3))
        step *= (margin_k[i] * np.r_[0.999, 0.999, 0.5, 1.5, 2.5, 4.0] / np.linalg.norm(step, axis=1))[:, None]
        moved = q[i] + step
        rows = np.arange(6)
        held, s4, n4, d4, f4 = prox.closest_certified(moved, rows, *arrays)
        _assert_same_as_search(prox, moved, rows, held, s4, n4, d4, f4, distance)
        for j in range(6):
            expected = _expected_held(prox, moved[j], np.linalg.norm(step[j]), near[i], f[i], fk[i], bounds)
            assert expected is None or held[j] == expected
            assert j >= 3 or expected is not False  # within the classic margin the rule holds
        switched += int(np.any(f4[held] != f[i]))
    assert switched > 0  # some moves crossed to another face of the set
