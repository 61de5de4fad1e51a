"""Predictive collision search (seed 004 §3.4, §4.2): grid search = exhaustive search, and physics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

from jointmodeller.core.geometry.collision import (
    CollisionSurface,
    RelativeMotion,
    predict_collision,
    relative_motion_B,
    relative_pose_B,
)
from jointmodeller.core.geometry.collision_exhaustive import search_exhaustive
from jointmodeller.core.geometry.collision_grid import moving_candidates, search_grid
from jointmodeller.core.geometry.collision_refine import refine_mesh
from tests.core.mechanics.contact.helpers import needs_numba, plane_mesh, random_rotation, read_mesh

KNEE_B = np.array([0.0, -0.405, 0.0])  # the knee in the femur frame of the OpenSim gait model meshes


def crop(v: np.ndarray, f: np.ndarray, keep_vertex: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The faces whose three vertices are kept, with the vertices they use."""
    faces = f[keep_vertex[f].all(axis=1)]
    used = np.unique(faces)
    remap = np.full(len(v), -1)
    remap[used] = np.arange(len(used))
    return v[used], remap[faces]


@pytest.fixture(scope="module")
def knee(shared_meshes):
    """Femur (target, frame B) and tibia (moving, frame A) surfaces of a real knee: the distal femur
    and the proximal tibia of the gait-model meshes, each refined by one midpoint subdivision."""
    fv, ff = read_mesh(shared_meshes / "femur_r.vtp")
    tv, tf = read_mesh(shared_meshes / "tibia_r.vtp")
    fv, ff = trimesh.remesh.subdivide(*crop(fv, ff, fv[:, 1] < -0.34))
    tv, tf = trimesh.remesh.subdivide(*crop(tv, tf, tv[:, 1] > -0.10))
    return CollisionSurface.from_mesh(fv, ff), CollisionSurface.from_mesh(tv, tf)


def random_case(rng: np.random.Generator, rotating: bool):
    """A random tibia pose near the knee and a motion roughly towards the femur."""
    R = random_rotation(rng, math.radians(15))
    p = KNEE_B + rng.normal(0, 0.004, 3) + np.array([0, -0.02, 0])
    direction = np.array([0, 1.0, 0]) + rng.normal(0, 0.5, 3)
    V_c = direction / np.linalg.norm(direction)  # 1 m/s at the knee
    omega = rng.normal(size=3) * (rng.uniform(20, 150) if rotating else 0.0)
    centre = KNEE_B + rng.normal(0, 0.01, 3)
    return R, p, RelativeMotion(V_c - np.cross(omega, centre), omega)


@pytest.mark.slow
@needs_numba
def test_grid_search_equals_exhaustive_on_1000_poses(knee):
    """Issue 5 acceptance: same first-contact pair and distance on 1,000 random relative poses."""
    femur, tibia = knee
    rng = np.random.default_rng(2026)
    n_found = n_halved = 0
    max_halvings = 0
    for k in range(1000):
        R, p, motion = random_case(rng, rotating=(k % 2 == 1))
        fast = predict_collision(tibia, femur, R, p, motion, method="grid")
        slow = predict_collision(tibia, femur, R, p, motion, method="exhaustive")
        assert fast.found == slow.found, k
        if fast.found:
            n_found += 1
            assert (fast.i, fast.j, fast.halvings) == (slow.i, slow.j, slow.halvings), k
            assert fast.distance == slow.distance, k  # bit for bit
            assert fast.time == slow.time, k
            n_halved += fast.halvings > 0
            max_halvings = max(max_halvings, fast.halvings)
            assert fast.rotation <= math.radians(10) + 1e-12
    assert n_found > 700  # the cases really test something
    assert n_halved > 150  # and many rotate by more than 10 degrees before colliding
    assert max_halvings >= 3


@pytest.mark.slow
@needs_numba
def test_grid_search_equals_exhaustive_on_refined_lenhart_knee(shared_meshes):
    """Dense real meshes (femoral condyles of the 9.8k-vertex femur, tibia refined from 2.6k to 8k
    vertices), translation and rotation."""
    fv, ff = read_mesh(shared_meshes / "lenhart2015-R-femur-subchondral-bone.stl")
    tv, tf = read_mesh(shared_meshes / "lenhart2015-R-tibia-subchondral-bone.stl")
    tv, tf = refine_mesh(tv, tf, 8000)
    # the femur's condyles: the part within 15 mm of the tibia's bounding box (keeps the test short)
    lo, hi = tv.min(axis=0) - 0.015, tv.max(axis=0) + 0.015
    fv, ff = crop(fv, ff, np.all((fv > lo) & (fv < hi), axis=1))
    femur, tibia = CollisionSurface.from_mesh(fv, ff), CollisionSurface.from_mesh(tv, tf)
    rng = np.random.default_rng(7)
    towards = fv.mean(axis=0) - tv.mean(axis=0)
    towards /= np.linalg.norm(towards)
    for k in range(6):
        R = random_rotation(rng, math.radians(8))
        p = rng.normal(0, 0.002, 3) - 0.004 * towards
        omega = rng.normal(size=3) * (5.0 if k % 2 else 0.0)
        V = towards + rng.normal(0, 0.3, 3) - np.cross(omega, tv.mean(axis=0))
        motion = RelativeMotion(V, omega)
        fast = predict_collision(tibia, femur, R, p, motion)
        slow = predict_collision(tibia, femur, R, p, motion, method="exhaustive")
        assert fast.found and slow.found
        assert (fast.i, fast.j, fast.distance, fast.halvings) == (slow.i, slow.j, slow.distance, slow.halvings)


def test_plain_python_kernel_matches_compiled(knee):
    """The numba kernels and their plain-Python fallback give the same answer."""
    femur, tibia = knee
    rng = np.random.default_rng(3)
    for k in range(3):
        R, p, motion = random_case(rng, rotating=bool(k % 2))
        pa, ea, ia, sa = moving_candidates(tibia.vertices_B, tibia.normals_B, R, p, motion.V_B, motion.omega_B)
        pa2, ea2, ia2, _ = moving_candidates(tibia.vertices_B, tibia.normals_B, R, p, motion.V_B, motion.omega_B,
                                             use_numba=False)
        assert np.array_equal(pa, pa2) and np.array_equal(ea, ea2) and np.array_equal(ia, ia2)
        tol = femur.tolerance()
        assert search_grid(pa, ea, sa, ia, femur.grid, tol) == search_grid(pa, ea, sa, ia, femur.grid, tol,
                                                                        use_numba=False)


def test_exhaustive_search_follows_the_paper_rules():
    """Normal filters, fly-past tolerance and smallest l·e, on a hand-made point set."""
    pa = np.array([[0.0, 0, 0]])
    ea = np.array([[0.0, 0, 1]])
    ia = np.array([0])
    sa = np.array([2.0])  # speed 2: times are half the distances
    pb = np.array([
        [0.0, 0.0, 5.0],    # 0: ahead, on the ray, facing back: candidate d = 5
        [0.9, 0.0, 3.0],    # 1: ahead, fly-past 0.9 < tol: candidate d = 3 (the answer)
        [1.1, 0.0, 1.0],    # 2: fly-past 1.1 > tol: misses
        [0.0, 0.0, 2.0],    # 3: normal faces along the motion: excluded
        [0.0, 0.0, -1.0],   # 4: behind the moving point: excluded (d < 0)
    ])
    nb = np.array([[0, 0, -1.0], [0, 0, -1.0], [0, 0, -1.0], [0, 0, 1.0], [0, 0, -1.0]])
    ib = np.arange(5)
    assert search_exhaustive(pa, ea, sa, ia, pb, nb, ib, tol=1.0) == (1.5, 0, 1)
    assert search_exhaustive(pa, ea, sa, ia, pb, nb, ib, tol=1.2) == (0.5, 0, 2)
    assert search_exhaustive(pa, ea, sa, ia, pb, nb, ib, tol=1.0, d_min=-2.0) == (-0.5, 0, 4)
    # moving points whose normals face away from the motion are dropped before the search
    _, _, keep, _ = moving_candidates(np.zeros((2, 3)), np.array([[0, 0, 1.0], [0, 0, -1.0]]), np.eye(3),
                                      np.zeros(3), np.array([0, 0, 1.0]), np.zeros(3))
    assert keep.tolist() == [0]


def test_sphere_falling_on_plane_distance_and_time_are_the_gap():
    """Translation: first contact is the lowest downward-facing vertex; time = gap / speed."""
    sphere = trimesh.creation.icosphere(4, 0.02)
    pv, pf = plane_mesh(0.1, 101)
    plane, ball = CollisionSurface.from_mesh(pv, pf), CollisionSurface.from_mesh(sphere.vertices, sphere.faces)
    height = 0.0312
    for method in ("grid", "exhaustive"):
        res = predict_collision(ball, plane, np.eye(3), np.array([0, 0, height]),
                                RelativeMotion(np.array([0, 0, -0.5]), np.zeros(3)), method=method)
        gap = height + sphere.vertices[:, 2].min()
        assert res.found and res.distance == pytest.approx(gap, abs=1e-15)
        assert res.time == pytest.approx(gap / 0.5, rel=1e-12)
        assert sphere.vertices[res.i, 2] == sphere.vertices[:, 2].min()
        assert res.halvings == 0


def test_rotation_above_ten_degrees_is_halved_and_converges_to_the_true_time():
    """A bar swinging about a pivot onto a plane: halving keeps each straight step under 10 degrees
    and the predicted time approaches the exact angle / ω (which straight-line prediction misses)."""
    bar = trimesh.creation.box(extents=(0.18, 0.01, 0.01))
    bar = trimesh.Trimesh(*trimesh.remesh.subdivide_to_size(bar.vertices, bar.faces, 0.002))
    bar.vertices[:, 0] += 0.11  # from x = 0.02 to 0.2 on an arm about the pivot at x = 0
    pv, pf = plane_mesh(0.6, 301)
    plane, rod = CollisionSurface.from_mesh(pv, pf), CollisionSurface.from_mesh(bar.vertices, bar.faces)
    lift = math.radians(40)
    c, s = math.cos(lift), math.sin(lift)
    R = np.array([[c, 0, -s], [0, 1, 0], [s, 0, c]])  # tip raised by 40 degrees
    height = 0.02
    pivot = np.array([0.0, 0.0, height])
    omega = np.array([0.0, 2.0, 0.0])  # swings the tip down at 2 rad/s
    motion = RelativeMotion(-np.cross(omega, pivot), omega)
    res = predict_collision(rod, plane, R, pivot, motion)
    # exact: the lower tip corner (0.2, -0.005) touches when height + 0.2 sin(phi) - 0.005 cos(phi) = 0
    beta = math.atan2(0.005, 0.2)
    phi = beta - math.asin(height / math.hypot(0.2, 0.005))
    angle = lift - phi
    assert res.found and res.halvings >= 2
    assert res.rotation <= math.radians(10)
    assert res.time == pytest.approx(angle / 2.0, rel=0.02)
    straight = predict_collision(rod, plane, R, pivot, motion, max_rotation=math.inf)
    assert abs(straight.time - angle / 2.0) > abs(res.time - angle / 2.0)


def test_relative_motion_and_pose_from_body_kinematics():
    """The twist seen from body b reproduces the relative velocity of any point of body a."""
    rng = np.random.default_rng(5)
    p_G = rng.normal(size=(2, 3))
    R_GB = np.stack([random_rotation(rng, 3.0), random_rotation(rng, 3.0)])
    v_G, w_G = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    m = relative_motion_B(p_G, R_GB, v_G, w_G, 0, 1)
    R_ba, p_ba = relative_pose_B(p_G, R_GB, 0, 1)
    r_a = rng.normal(size=3)
    x_G = p_G[0] + R_GB[0] @ r_a
    # finite difference of the point's coordinates in b's frame
    h = 1e-7
    def coords(dt):
        from scipy.spatial.transform import Rotation
        Ra = Rotation.from_rotvec(w_G[0] * dt).as_matrix() @ R_GB[0]
        Rb = Rotation.from_rotvec(w_G[1] * dt).as_matrix() @ R_GB[1]
        pa, pb = p_G[0] + v_G[0] * dt, p_G[1] + v_G[1] * dt
        return Rb.T @ (pa + Ra @ r_a - pb)
    fd = (coords(h) - coords(-h)) / (2 * h)
    x_b = R_ba @ r_a + p_ba
    assert np.allclose(R_GB[1].T @ (x_G - p_G[1]), x_b)
    assert np.allclose(m.velocities(x_b[None])[0], fd, atol=1e-6)


def test_flow_is_the_exact_rigid_motion_of_the_twist():
    """Integrating ẋ = V + ω × x numerically matches RelativeMotion.flow."""
    from scipy.integrate import solve_ivp
    m = RelativeMotion(np.array([0.3, -0.2, 0.5]), np.array([1.0, 2.0, -0.5]))
    x0 = np.array([0.1, 0.2, -0.3])
    sol = solve_ivp(lambda t, x: m.velocities(x[None])[0], (0, 0.7), x0, rtol=1e-11, atol=1e-12)
    R, t = m.flow(0.7)
    assert np.allclose(R @ x0 + t, sol.y[:, -1], atol=1e-8)
    assert np.allclose(R @ R.T, np.eye(3), atol=1e-12)
