"""The face field (core.geometry.field_faces, issue 17): a signed distance field's node faces against a
brute-force closest face, the search on them against the same and against the exact search's arithmetic,
held faces and threads against a fresh single-threaded search (to the bit), and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from scipy.spatial import Delaunay

from jointmodeller.core.geometry import field_faces
from jointmodeller.core.geometry.collision_proximity import SurfaceProximity
from jointmodeller.core.geometry.field_faces import HeldFaces, check_field_faces, search_field_faces
from jointmodeller.core.geometry.sdf import BLOCK, SignedDistanceField


def _segment_distance2(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ab = b - a
    t = np.clip(((p - a) * ab).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-300), 0.0, 1.0)
    d = p - (a + t[..., None] * ab)
    return (d * d).sum(-1)


def brute_distance(points: np.ndarray, v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Distance of each point (k, 3) to the mesh (v, f), every face tested: the smaller of the distance to
    the face's plane where the point projects inside the triangle and the distances to its three edges
    (an implementation apart from the kernels' Ericson test)."""
    a, b, c = (v[f[:, i]][None] for i in range(3))
    p = points[:, None, :]
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    h = ((p - a) * n).sum(-1)
    x = p - h[..., None] * n  # projection onto the plane
    inside = np.ones(h.shape, bool)
    for u, w in ((a, b), (b, c), (c, a)):
        inside &= (np.cross(w - u, x - u) * n).sum(-1) >= 0.0
    d2 = np.where(inside, h * h, np.inf)
    for u, w in ((a, b), (b, c), (c, a)):
        d2 = np.minimum(d2, _segment_distance2(p, u, w))
    return np.sqrt(d2.min(axis=1))


def _sphere() -> tuple[np.ndarray, np.ndarray]:
    m = trimesh.creation.icosphere(3, radius=0.01)
    return np.asarray(m.vertices, float), np.asarray(m.faces, np.int64)


def _bumpy_sheet() -> tuple[np.ndarray, np.ndarray]:
    """An open, curved sheet (a cartilage-like cap with a rim), irregularly triangulated."""
    rng = np.random.default_rng(4)
    xy = rng.uniform(-0.01, 0.01, (700, 2))
    f = Delaunay(xy).simplices.astype(np.int64)
    z = 0.004 * np.exp(-(xy ** 2).sum(1) / 4e-5) + 0.0008 * np.sin(300 * xy[:, 0])
    return np.c_[xy, z], f


MESHES = {"sphere": _sphere, "sheet": _bumpy_sheet}


@pytest.fixture(scope="module", params=sorted(MESHES))
def mesh_field(request):
    v, f = MESHES[request.param]()
    prox = SurfaceProximity.build(v, f)
    sdf = SignedDistanceField.build(v, f, spacing=0.0006, keep_faces=True)
    return v, f, prox, sdf


def _near_points(v: np.ndarray, f: np.ndarray, k: int, spread: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    tri = v[f[rng.integers(0, len(f), k)]]
    w = rng.dirichlet(np.ones(3), k)
    return (w[:, :, None] * tri).sum(axis=1) + rng.normal(0.0, spread, (k, 3))


def test_node_faces_are_the_closest_faces(mesh_field):
    """Every band node's face is a closest face of the mesh (its distance is the brute-force distance: ties
    may pick either face), and the nodes without one lie beyond the band."""
    v, f, _, sdf = mesh_field
    rng = np.random.default_rng(0)
    blocks = np.argwhere(sdf.block_index >= 0)
    pick = blocks[rng.integers(0, len(blocks), 60)]
    nodes, faces = [], []
    for bi, bj, bk in pick:
        b = sdf.block_index[bi, bj, bk]
        for li, lj, lk in rng.integers(0, BLOCK, (20, 3)):
            ijk = np.array([bi, bj, bk]) * BLOCK + [li, lj, lk]
            if np.all(ijk < sdf.node_dims):
                nodes.append(sdf.origin + sdf.spacing * ijk)
                faces.append(sdf.node_faces[b, li, lj, lk])
    nodes, faces = np.array(nodes), np.array(faces)
    true = brute_distance(nodes, v, f)
    has = faces >= 0
    assert has.sum() > 200 and (~has).sum() > 20  # both kinds sampled
    own = brute_distance_to_faces(nodes[has], v, f[faces[has]])
    np.testing.assert_allclose(own, true[has], rtol=0, atol=1e-12)
    assert np.all(true[~has] > sdf.band * (1 - 1e-6))
    assert np.all(true[has] <= sdf.band * (1 + 1e-6))


def brute_distance_to_faces(points: np.ndarray, v: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Distance of point i to face faces[i] alone."""
    return np.array([brute_distance(p[None], v, face[None])[0] for p, face in zip(points, faces)])


def test_search_finds_the_closest_point_the_exact_way(mesh_field):
    """Points near the surface (within about a tenth of the band, where contact lives): the search's
    distance is the brute-force distance for all but a few in a thousand (where a face that is not its
    cell's nodes' nor next to the best one's closest edge or corner is nearer: measured 2 of 3,000 on the
    sphere and 11 on the sheet, whose Delaunay slivers the exact search misses 24 times), never nearer
    than it; where it picks the face the exact search (SurfaceProximity.search_near round the nearest
    vertices) picks, closest point and smooth normal are that search's to the bit (the same triangle
    test and interpolation)."""
    v, f, prox, sdf = mesh_field
    q = _near_points(v, f, 3000, 0.1 * sdf.band, seed=1)
    s, n, d2, face = search_field_faces(sdf, prox, q)
    assert np.all(face >= 0)
    off = np.sqrt(d2) - brute_distance(q, v, f)
    assert off.min() >= -1e-12
    assert np.mean(off > 1e-12) < 0.005
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-12)
    near, _ = prox.nearest_lists(q, prox.nearest_count(False), np.inf)
    s_e, n_e, d2_e, face_e, *_ = prox.search_near(q, near)
    same = face == face_e
    assert same.mean() > 0.95  # the others: ties on shared edges and corners, and the exact search's misses
    np.testing.assert_array_equal(s[same], s_e[same])
    np.testing.assert_array_equal(n[same], n_e[same])
    np.testing.assert_array_equal(d2[same], d2_e[same])


def test_points_beyond_the_band_or_not_finite_find_no_face(mesh_field):
    v, f, prox, sdf = mesh_field
    q = np.array([[np.nan, 0.0, 0.0], [1.0, 1.0, 1.0], sdf.origin - 1.0])
    s, n, d2, face = search_field_faces(sdf, prox, q)
    assert np.all(face == -1) and np.all(np.isinf(d2)) and not s.any() and not n.any()


def _walk(v, f, sdf, steps: int, k: int, scale: float, seed: int) -> list[np.ndarray]:
    """k points near the surface moving in small random steps (a few micrometres to a few hundred, with
    repeats of a position as Radau's stages and Newton iterations make them)."""
    rng = np.random.default_rng(seed)
    p = _near_points(v, f, k, 0.1 * sdf.band, seed)
    out = []
    for i in range(steps):
        if i % 3 != 2:  # every third step revisits the last position
            p = p + rng.normal(0.0, scale * 10.0 ** rng.uniform(-2, 0), (k, 3))
        out.append(p.copy())
    return out


def _run(sdf, prox, walk, rows, held):
    return [search_field_faces(sdf, prox, q, rows=rows, held=held) for q in walk]


def test_held_faces_give_the_same_bits_as_fresh_searches(mesh_field, monkeypatch):
    """Along random walks, searches that reuse held faces answer to the bit what fresh searches answer, and
    they do reuse them (a hit writes no slot: the cursor stays). A hold rule without its reach test (the
    slack made −1 m) changes answers, so the comparison can fail."""
    v, f, prox, sdf = mesh_field
    walk = _walk(v, f, sdf, 60, 1500, 0.05 * sdf.spacing, seed=2)
    rows = np.arange(1500) * 2 + 1  # bed vertices of the points (any distinct indices)
    fresh = _run(sdf, prox, walk, None, None)
    held = HeldFaces.empty(rows.max() + 1)
    hits = 0
    for q, ref in zip(walk, fresh):
        cursor = held.cursor.copy()
        got = search_field_faces(sdf, prox, q, rows=rows, held=held)
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)
        hits += int((held.cursor[rows] == cursor[rows]).sum())
    assert hits > 0.3 * 1500 * 60

    monkeypatch.setattr(field_faces, "HOLD_SLACK_M", -1.0)
    loose = _run(sdf, prox, walk, rows, HeldFaces.empty(rows.max() + 1))
    assert any(not np.array_equal(a[3], b[3]) for a, b in zip(loose, fresh))


def test_threads_serial_and_plain_python_agree(mesh_field):
    """The search on numba's threads, on one thread (another thread holds the parallel search) and as plain
    Python (numba off) answer the same bits."""
    v, f, prox, sdf = mesh_field
    q = _near_points(v, f, max(600, 2 * field_faces.PARALLEL_MIN_ROWS), 0.1 * sdf.band, seed=3)
    threads = search_field_faces(sdf, prox, q)
    with field_faces._parallel_lock:
        serial = search_field_faces(sdf, prox, q)
    plain = search_field_faces(sdf, prox, q[:200], use_numba=False)
    for a, b, c in zip(threads, serial, plain):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a[:200], c)


def test_a_field_without_or_with_foreign_faces_is_refused():
    v, f = _sphere()
    prox = SurfaceProximity.build(v, f)
    plain = SignedDistanceField.build(v, f, spacing=0.001)
    with pytest.raises(ValueError, match="keep_faces"):
        search_field_faces(plain, prox, v[:3])
    other = SignedDistanceField.build(v, f[:-1], spacing=0.001, keep_faces=True)
    with pytest.raises(ValueError, match="faces"):
        check_field_faces(other, prox)
    field = SignedDistanceField.build(v, f, spacing=0.001, keep_faces=True)
    with pytest.raises(ValueError, match="rows"):
        search_field_faces(field, prox, v[:3], held=HeldFaces.empty(len(v)))
    with pytest.raises(ValueError, match="distinct"):
        search_field_faces(field, prox, v[:3], rows=np.array([0, 2, 1]), held=HeldFaces.empty(len(v)))


def test_node_faces_survive_storage_and_bad_ones_are_named():
    """to_arrays / from_arrays keep the node faces (and a field without them stays without); a stored
    face out of the mesh's range, of another dtype or shape, or half the face arrays is a ValueError (the
    kernel indexes the mesh by them unchecked)."""
    v, f = _sphere()
    field = SignedDistanceField.build(v, f, spacing=0.001, keep_faces=True)
    back = SignedDistanceField.from_arrays(field.to_arrays())
    np.testing.assert_array_equal(back.node_faces, field.node_faces)
    assert back.mesh_face_count == len(f) and back.digest() == field.digest()
    plain = SignedDistanceField.build(v, f, spacing=0.001)
    assert SignedDistanceField.from_arrays(plain.to_arrays()).node_faces is None
    arrays = field.to_arrays()
    for name, value, message in (
            ("node_faces", np.where(field.node_faces >= 0, len(f), -1).astype(np.int32), "outside"),
            ("node_faces", np.full_like(field.node_faces, -2), "outside"),
            ("node_faces", field.node_faces.astype(np.int64), "node faces"),
            ("node_faces", field.node_faces[:-1], "node faces"),
            ("mesh_face_count", np.array(0, np.int64), "face count")):
        bad = dict(arrays, **{name: value})
        with pytest.raises(ValueError, match=message):
            SignedDistanceField.from_arrays(bad)
    half = dict(arrays)
    del half["mesh_face_count"]
    with pytest.raises(ValueError, match="all of"):
        SignedDistanceField.from_arrays(half)


def test_the_disk_cache_keeps_fields_with_and_without_faces_apart(tmp_path):
    from jointmodeller.io.sdf_cache import cached_field

    v, f = _sphere()
    with_faces = cached_field(v, f, spacing=0.001, folder=tmp_path, keep_faces=True)
    without = cached_field(v, f, spacing=0.001, folder=tmp_path)
    assert with_faces.path != without.path and without.field.node_faces is None
    again = cached_field(v, f, spacing=0.001, folder=tmp_path, keep_faces=True)
    assert again.hit and again.field.digest() == with_faces.field.digest()
    np.testing.assert_array_equal(again.field.node_faces, with_faces.field.node_faces)


def test_thread_choice_takes_the_faster_way_and_retries_the_other():
    """Each way is tried first (its first timing, which may include compiling, not counted), then the
    faster one is taken, the other retried every PROBE_EVERY searches; a way that turns slow (busy cores
    under OpenMP's waiting threads) loses its turn within a few retries."""
    choice = field_faces.ThreadChoice()
    ways = []
    for _ in range(4):  # the untried way first, until each has a counted timing
        way = choice.parallel()
        first = way not in ways
        ways.append(way)
        choice.record(way, 10.0 if first else (1e-3 if way else 2e-3), 1000)
    assert ways == [True, True, False, False]
    picks = [choice.parallel() for _ in range(2 * field_faces.PROBE_EVERY)]
    assert picks.count(False) == 2 and picks.count(True) == 2 * field_faces.PROBE_EVERY - 2
    for _ in range(10):  # the threads turn ten times slower: one thread wins
        choice.record(True, 1e-2, 1000)
    assert not choice.parallel()
