"""The taut-string shortest path against analytic geodesics, the MJM heuristic and edge paths."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from scipy.spatial.transform import Rotation

from jointmodeller.core.geometry.wrapping.edge_path import edge_path
from jointmodeller.core.geometry.wrapping.mjm_path import mjm_path
from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose, closest_point_on_triangles
from jointmodeller.core.geometry.wrapping.path import FREE
from jointmodeller.core.geometry.wrapping.taut_path import TautPathSolver, resample_polyline
from tests.core.geometry.wrapping.wrap_helpers import RADIUS, helix_length


def brute_distance(mesh: trimesh.Trimesh, points: np.ndarray) -> np.ndarray:
    """Distance of each point to the nearest of *all* triangles (no spatial index to trust)."""
    tri = mesh.triangles
    out = np.empty(len(points))
    for i, p in enumerate(points):  # test-only brute force
        q, _ = closest_point_on_triangles(np.broadcast_to(p, (len(tri), 3)), tri[:, 0], tri[:, 1], tri[:, 2])
        out[i] = np.sqrt(((q - p) ** 2).sum(1).min())
    return out


def assert_outside(mesh: trimesh.Trimesh, points: np.ndarray) -> None:
    """No point inside the mesh by more than 1e-6 of its size.

    Inside-ness by ray parity (trimesh ``contains``); every point it calls inside must lie within
    the tolerance of the surface by a brute-force distance over all triangles. (trimesh 5.2's own
    closest_point misreports points on thin triangles, so it is not used here.)
    """
    size = float(np.linalg.norm(mesh.extents))
    inside = mesh.contains(points)
    if inside.any():
        depth = brute_distance(mesh, points[inside])
        assert depth.max() <= 1e-6 * size, f"a path point is {depth.max():.3g} m inside"


def test_unobstructed_path_is_the_exact_straight_line(cylinder_50k):
    _, ob = cylinder_50k
    a = np.array([0.05, -0.03, 0.01])
    b = np.array([0.04, 0.06, -0.02])  # the line passes beside the cylinder (x >= 0.04 > r)
    path = TautPathSolver([ob]).solve(a, b, 1, 2, Pose.identity(1), warm=False)
    assert path.length == pytest.approx(np.linalg.norm(b - a), rel=1e-14)
    t = np.linspace(0, 1, len(path.points_G))[:, None]
    assert np.allclose(path.points_G, a + t * (b - a), atol=1e-15)
    assert (path.body[1:-1] == FREE).all() and path.segments[0].length == pytest.approx(path.length)


@pytest.mark.slow
@pytest.mark.parametrize("h_over_r", [0.5, 1.0, 2.0, 4.0])
def test_cylinder_helix_geodesic(cylinder_50k, h_over_r, record_property):
    mesh, ob = cylinder_50k
    r, h = RADIUS, h_over_r * RADIUS
    a = np.array([r, 0.0, -h / 2])
    b = np.array([-r, 0.0, h / 2])  # the opposite face
    exact = helix_length(r, h)
    path = TautPathSolver([ob]).solve(a, b, 0, 0, Pose.identity(1), warm=False)
    err = path.length / exact - 1
    assert path.converged and abs(err) < 0.005
    # the path lies on the cylinder surface: every contact vertex at radius r (within facet sag)
    rad = np.hypot(path.points_G[:, 0], path.points_G[:, 1])
    assert np.all(rad > r * np.cos(np.pi / 256) - 1e-12) and np.all(rad < r + 1e-12)
    assert_outside(mesh, path.points_G)
    # independent feasible paths on the same surface can only be longer (up to the polyline's
    # chord shortening, (π/96)²/24 ~ 5e-5 relative)
    edge_len, _ = edge_path(ob, a, b)
    mjm = mjm_path(a, b, 0, 0, [ob], Pose.identity(1), method="covariance")
    assert path.length <= edge_len and path.length <= mjm.length * (1 + 1e-4)
    record_property("taut_error_pct", 100 * err)
    record_property("edge_path_error_pct", 100 * (edge_len / exact - 1))
    record_property("mjm_error_pct", 100 * (mjm.length / exact - 1))
    print(f"h/r={h_over_r}: taut {100 * err:+.4f}%  edge {100 * (edge_len / exact - 1):+.2f}%  "
          f"mjm {100 * (mjm.length / exact - 1):+.2f}%")


@pytest.mark.parametrize("angle_deg", [60.0, 120.0, 170.0])
def test_sphere_great_circle(sphere_41k, angle_deg):
    mesh, ob = sphere_41k
    R = RADIUS
    phi = np.radians(angle_deg)
    axis = Rotation.from_rotvec([0.3, -0.5, 0.8]).as_matrix()  # an arbitrary great circle
    a = axis @ np.array([R, 0, 0])
    b = axis @ np.array([R * np.cos(phi), R * np.sin(phi), 0])
    path = TautPathSolver([ob]).solve(a, b, 0, 0, Pose.identity(1), warm=False)
    assert path.converged
    assert path.length == pytest.approx(R * phi, rel=0.005)
    # and it is the great circle: every point in the plane of a, b and the centre
    normal = np.cross(a, b) / np.linalg.norm(np.cross(a, b))
    assert np.abs(path.points_G @ normal).max() < 0.01 * R
    assert_outside(mesh, path.points_G)


def test_string_over_a_sphere_from_far_points(sphere_41k):
    """Ends off the surface: straight tangent spans + great-circle arc (analytic)."""
    mesh, ob = sphere_41k
    R = RADIUS
    d = 3 * R
    a = np.array([-d, -0.2 * R, 0.0])
    b = np.array([d, -0.2 * R, 0.0])  # the line passes 0.2 R below the centre... through the sphere
    path = TautPathSolver([ob]).solve(a, b, 1, 2, Pose.identity(1), warm=False)
    # analytic: in the plane through a, b and the centre (z = 0): tangent length sqrt(|p|²-R²),
    # arc between the tangent points
    def tangent_geom(p):
        dist = np.linalg.norm(p)
        return np.sqrt(dist**2 - R**2), np.arccos(R / dist), np.arctan2(p[1], p[0])
    ta, ca, pa = tangent_geom(a[:2])
    tb, cb, pb = tangent_geom(b[:2])
    # the string goes over the top (y > 0) or bottom: take the shorter
    arcs = []
    for sgn in (+1, -1):
        qa = pa - sgn * ca
        qb = pb + sgn * cb
        arcs.append(R * abs((qb - qa + np.pi) % (2 * np.pi) - np.pi))
    exact = ta + tb + min(arcs)
    assert path.length == pytest.approx(exact, rel=2e-3)
    assert path.points_G[:, 1].mean() < 0  # the short way is under the sphere
    assert_outside(mesh, path.points_G)
    # Newton's third law: the tension's pushes on all bodies balance (force and moment)
    f = path.load_dir_G.sum(axis=0)
    m = np.cross(path.load_point_G, path.load_dir_G).sum(axis=0)
    assert np.linalg.norm(f) < 1e-6 and np.linalg.norm(m) < 1e-6 * R


def test_warm_start_tracks_a_moving_body_smoothly(cylinder_50k):
    """Rotating the cylinder under the string: warm-started paths equal cold ones, change smoothly."""
    _, ob0 = cylinder_50k
    ob = MeshObstacle(ob0.vertices_B, ob0.faces, body=1)
    a = np.array([0.05, -0.01, -0.06])
    b = np.array([-0.05, 0.005, 0.07])
    warm = TautPathSolver([ob])
    cold = TautPathSolver([ob])
    prev = None
    iters, iters_cold = [], []
    for k in range(12):
        R = Rotation.from_rotvec([0.02 * k, 0.01 * k, 0.05 * k]).as_matrix()
        pose = Pose(np.array([[0, 0, 0], [0.001 * k, 0, 0]], float), np.stack([np.eye(3), R]))
        pw = warm.solve(a, b, 0, 0, pose, warm=True)
        pc = cold.solve(a, b, 0, 0, pose, warm=False)
        assert pw.converged
        assert pw.length == pytest.approx(pc.length, rel=1e-6)
        if prev is not None:
            # small pose change -> small path change (no jumps to another side)
            assert np.abs(pw.points_G - prev.points_G).max() < 0.005
            iters.append(pw.iterations)
            iters_cold.append(pc.iterations)
        prev = pw
    assert np.mean(iters) < 0.75 * np.mean(iters_cold)  # 3° steps here; simulation steps are far smaller


def test_resample_polyline_is_even_and_keeps_ends():
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 2, 0]], float)
    out = resample_polyline(pts, 6)
    seg = np.linalg.norm(np.diff(out, axis=0), axis=1)
    assert np.allclose(seg, 0.5) and np.allclose(out[0], pts[0]) and np.allclose(out[-1], pts[-1])


def test_plain_numpy_kernels_give_the_same_path(sphere_41k, monkeypatch):
    """The numba kernels have a numpy fallback; both must produce the same taut path."""
    from jointmodeller.core.geometry.wrapping import _kernels

    _, ob = sphere_41k
    R = RADIUS
    a = np.array([R, 0.0, 0.0])
    b = np.array([-0.5 * R, 0.8 * R, np.sqrt(1 - 0.25 - 0.64) * R])
    lengths = []
    for use in (True, False):
        monkeypatch.setattr(_kernels, "USE_NUMBA", use)
        lengths.append(TautPathSolver([ob]).solve(a, b, 0, 0, Pose.identity(1), warm=False).length)
    assert lengths[0] == pytest.approx(lengths[1], rel=1e-9)


def test_coincident_ends_give_an_empty_path(sphere_41k):
    _, ob = sphere_41k
    p = np.array([0.05, 0.0, 0.0])
    for path in (TautPathSolver([ob]).solve(p, p, 1, 2, Pose.identity(3)),
                 mjm_path(p, p, 1, 2, [ob], Pose.identity(3))):
        assert path.length == 0.0 and not np.any(path.load_dir_G)
