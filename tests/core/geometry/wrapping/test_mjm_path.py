"""The MJM heuristic (seed 004 §3.3): frame, sectors, mid-plane intersections, hull, bodies."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from jointmodeller.core.geometry.wrapping.mjm_path import (
    N_SECTORS,
    SECTOR,
    choose_sectors,
    cylindrical_frame,
    midplane_intersections,
    mjm_path,
    sector_statistics,
    upper_hull_chain,
)
from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose
from tests.core.geometry.wrapping.wrap_helpers import RADIUS, helix_length


@pytest.fixture(scope="module")
def small_sphere():
    mesh = trimesh.creation.icosphere(subdivisions=3, radius=1.0)
    return mesh, MeshObstacle(mesh.vertices, mesh.faces, body=1)


@pytest.mark.parametrize("direction", [[0.3, 1.0, -0.2], [1.0, 0.0, 0.0], [-1.0, 1e-9, 0.0], [0, 0, 1.0]])
def test_frame_is_orthonormal_even_along_the_helper_vector(direction):
    a = np.array([0.1, 0.2, 0.3])
    b = a + np.asarray(direction, float)
    u, v, w, L = cylindrical_frame(a, b)
    F = np.stack([u, v, w])
    assert np.allclose(F @ F.T, np.eye(3), atol=1e-12)
    assert np.allclose(v * L, b - a) and np.allclose(np.cross(v, w), u)


def test_sector_statistics_match_a_plain_loop(small_sphere):
    _, ob = small_sphere
    pose = Pose.identity(2)
    a, b = np.array([-1.5, 0.1, 0.2]), np.array([1.4, -0.2, 0.1])
    frame = cylindrical_frame(a, b)
    u, v, w, L = frame
    count, cov = sector_statistics(a, frame, [ob], pose, search_radius=0.8, n_stages=3)
    c_ref = np.zeros((3, N_SECTORS))
    v_ref = np.zeros((3, N_SECTORS))
    for r in ob.vertices_B:  # eqs. 42–46, one point at a time
        li = r - a
        s, pu, pw = li @ v, li @ u, li @ w
        if 0 <= s <= L and pu * pu + pw * pw <= 0.8**2:
            ang = np.degrees(np.arctan2(pw, pu)) % 360.0
            k = int(ang // 10)
            st = min(int(s / L * 3), 2)
            c_ref[st, k] += 1
            v_ref[st, k] += pu * pu + pw * pw
    assert np.array_equal(count, c_ref) and np.allclose(cov, v_ref)


def test_sector_choice_rules():
    count = np.ones((4, N_SECTORS)) * 10
    cov = np.ones((4, N_SECTORS)) * 5.0
    count[:, 7] = 1  # fewest points in sector 7
    cov[:, 20] = 0.1  # least covariance in sector 20 (total 8.2 against 11 for sector 21)...
    cov[2:, 20] = 4.0  # ...but over the last stages its neighbour 21 is better (1 against 8)
    cov[2:, 21] = 0.5
    assert (choose_sectors(count, cov, "mass") == 7).all()
    assert (choose_sectors(count, cov, "covariance") == 20).all()
    res = choose_sectors(count, cov, "residual")
    assert res[0] == 20 and res[-1] == 21 and np.all(np.abs(np.diff(res)) <= 1)


def test_midplane_points_lie_on_the_plane_and_on_edges(small_sphere):
    _, ob = small_sphere
    pose = Pose.identity(2)
    a, b = np.array([-1.5, 0.1, 0.2]), np.array([1.4, -0.2, 0.1])
    frame = cylindrical_frame(a, b)
    u, v, w, L = frame
    alpha = 4.5 * SECTOR
    P, sh, nrm, bod = midplane_intersections(a, frame, alpha, (0.0, L), [ob], pose, 10.0)
    assert len(P) > 20 and (bod == 1).all()
    rel = P - a
    # eq. 48: each point's angle about the line is the mid-plane angle
    assert np.allclose(np.arctan2(rel @ w, rel @ u), alpha, atol=1e-9)
    assert np.allclose(rel @ v, sh[:, 0]) and (sh[:, 1] > 0).all()
    # on the sphere's polyhedral surface: between the inscribed radius and 1
    rad = np.linalg.norm(P, axis=1)
    assert (rad <= 1 + 1e-12).all() and (rad > 0.99).all()
    assert np.allclose(np.linalg.norm(nrm, axis=1), 1.0)


def test_upper_hull_chain_is_concave_and_covers_all_points():
    rng = np.random.default_rng(0)
    s = rng.uniform(0, 1, 200)
    h = rng.uniform(0, 1, 200) * np.sin(np.pi * s)
    sh = np.stack([s, h], 1)
    chain = upper_hull_chain(sh, 1.0)
    P = np.vstack([[0, 0], sh[chain], [1, 0]])
    assert np.all(np.diff(P[:, 0]) >= 0)
    slopes = np.diff(P[:, 1]) / np.diff(P[:, 0])
    assert np.all(np.diff(slopes) < 0)  # concave chain
    assert np.all(np.interp(s, P[:, 0], P[:, 1]) >= h - 1e-12)  # every point on or under it


def test_unobstructed_line_is_straight(small_sphere):
    _, ob = small_sphere
    a, b = np.array([-2.0, 1.5, 0.0]), np.array([2.0, 1.2, 0.3])
    path = mjm_path(a, b, 0, 2, [ob], Pose.identity(3), search_radius=0.5)
    assert len(path.points_G) == 2 and path.length == pytest.approx(np.linalg.norm(b - a), rel=1e-15)


@pytest.mark.parametrize("method", ["mass", "covariance", "residual"])
def test_path_over_two_bodies_gives_segments_and_attachments(method):
    s1 = trimesh.creation.icosphere(subdivisions=4, radius=1.0)
    ob1 = MeshObstacle(s1.vertices, s1.faces, body=1)
    ob2 = MeshObstacle(s1.vertices * 0.8, s1.faces, body=2)
    pose = Pose(np.array([[0, 0, 0], [-1.2, 0, 0], [1.2, 0, 0], [0, 0, 0]], float), np.tile(np.eye(3), (4, 1, 1)))
    a, b = np.array([-3.0, -0.3, 0.0]), np.array([3.0, -0.2, 0.1])  # through both spheres
    path = mjm_path(a, b, 0, 3, [ob1, ob2], pose, method=method, search_radius=1.5)
    assert [(s.body_a, s.body_b) for s in path.segments] == [(0, 1), (1, 2), (2, 3)]
    runs = path.body_contacts()
    assert [r[0] for r in runs] == [0, 1, 2, 3]
    assert all(np.allclose(r[2], s.point_a_G) for r, s in zip(runs[:-1], path.segments))
    assert all(np.allclose(r[1], s.point_b_G) for r, s in zip(runs[1:], path.segments))
    assert path.length > np.linalg.norm(b - a)
    # effective attachments: the origin/insertion themselves here (their bodies have no mesh)
    assert np.allclose(path.attach_a_G, a) and np.allclose(path.attach_b_G, b)
    # each sub-segment pulls its two bodies equally and oppositely: no net force or moment
    f, m = path.body_forces(1.0, 4)
    assert np.allclose(f.sum(0), 0, atol=1e-12) and np.allclose(m.sum(0), 0, atol=1e-12)
    # the body on which a segment ends receives the pull towards the segment's other end
    seg = path.segments[1]
    e = (seg.point_b_G - seg.point_a_G) / seg.length
    i1 = np.flatnonzero((path.load_body == 1) & np.all(np.isclose(path.load_point_G, seg.point_a_G), 1))
    assert i1.size == 1 and np.allclose(path.load_dir_G[i1[0]], e)


def test_centroid_offset_lifts_the_path_off_the_surface():
    mesh = trimesh.creation.icosphere(subdivisions=5, radius=1.0)
    ob = MeshObstacle(mesh.vertices, mesh.faces, body=0)
    a, b = np.array([-2.0, 0.05, 0.0]), np.array([2.0, -0.05, 0.02])
    p0 = mjm_path(a, b, 1, 2, [ob], Pose.identity(3), method="covariance", search_radius=1.5)
    p1 = mjm_path(a, b, 1, 2, [ob], Pose.identity(3), method="covariance", offset=0.05, search_radius=1.5)
    r0 = np.linalg.norm(p0.points_G[1:-1], axis=1)
    r1 = np.linalg.norm(p1.points_G[1:-1], axis=1)
    assert np.allclose(r0, 1.0, atol=1e-3) and np.allclose(r1, 1.05, atol=1e-3)


def test_mjm_error_on_the_cylinder_is_within_the_paper_figure(cylinder_50k):
    """Seed 004 §4.1: the heuristic is within about 7 % of the helix (least-covariance rule)."""
    _, ob = cylinder_50k
    errs = []
    for hr in (0.5, 1, 2, 4):
        h = hr * RADIUS
        a, b = np.array([RADIUS, 0, -h / 2]), np.array([-RADIUS, 0, h / 2])
        p = mjm_path(a, b, 0, 0, [ob], Pose.identity(1), method="covariance")
        errs.append(p.length / helix_length(RADIUS, h) - 1)
    errs = np.array(errs)
    assert np.all(errs > 0) and errs.max() < 0.07


def test_hull_chain_qhull_matches_the_monotone_scan():
    from jointmodeller.core.geometry.wrapping.mjm_path import _upper_chain_scan

    rng = np.random.default_rng(5)
    for _ in range(20):
        s = rng.uniform(0, 2, 300)
        h = rng.uniform(0, 1, 300) ** 3
        sh = np.stack([s, h], 1)
        a = upper_hull_chain(sh, 2.0)
        b = _upper_chain_scan(sh, 2.0)
        assert np.allclose(sh[a], sh[b])
    line = np.stack([np.linspace(0.1, 0.9, 5), np.full(5, 0.0)], 1)  # degenerate: on the line
    assert len(upper_hull_chain(line, 1.0)) == 0
