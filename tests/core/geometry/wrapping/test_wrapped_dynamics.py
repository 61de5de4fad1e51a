"""Wrapped tissues in motion: energy conservation of a pulley wound by a wrapped spring, and
invariants of taut paths between randomly placed bones."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from jointmodeller.core.geometry.wrapping.mjm_path import mjm_path
from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose, closest_over_obstacles
from jointmodeller.core.geometry.wrapping.taut_path import TautPathSolver
from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.mechanics.tissues import polynomial_energy
from jointmodeller.core.mechanics.wrapped_tissue import TissuePath, WrappedTissue
from tests.core.geometry.wrapping.wrap_helpers import RADIUS


@pytest.mark.slow
def test_pulley_wound_by_a_wrapped_spring_conserves_energy(cylinder_50k):
    """A pulley (body 1) turning about z, pulled by a spring wrapped round it from a ground point.

    The element's torque drives the pulley; ½Iω² + V(l) must stay constant (conservative force,
    exact virtual work), while the path is warm-started along the motion.
    """
    _, ob0 = cylinder_50k
    ob = MeshObstacle(ob0.vertices_B, ob0.faces, body=1)
    r = RADIUS
    D = 6 * r
    ang = np.radians(-90.0) + np.arccos(r / D) + np.radians(60.0)
    path = TissuePath(0, np.array([0.0, -D, 0.0]), 1, np.array([r * np.cos(ang), r * np.sin(ang), 0.0]), [ob])
    coeffs = np.array([500.0])
    el = WrappedTissue(path, rest_length=0.1, coeffs=coeffs)
    inertia = 2e-4  # kg m² about z

    def kin(theta: float, omega: float) -> BodyKinematics:
        R = Rotation.from_euler("z", theta).as_matrix()
        return BodyKinematics(np.zeros((2, 3)), np.stack([np.eye(3), R]), np.zeros((2, 3)),
                              np.array([[0, 0, 0], [0, 0, omega]], float))

    def rhs(t, y):
        f = np.zeros((2, 3))
        m = np.zeros((2, 3))
        el.accumulate(t, kin(y[0], y[1]), f, m)
        return [y[1], m[1, 2] / inertia]

    def energy(y) -> float:
        length = path(Pose(np.zeros((2, 3)), kin(y[0], 0).R_GB)).length
        return 0.5 * inertia * y[1] ** 2 + float(polynomial_energy(np.array([length - 0.1]), coeffs[None])[0])

    y0 = [0.0, 0.0]
    sol = solve_ivp(rhs, (0.0, 0.03), y0, rtol=1e-8, atol=1e-10, max_step=5e-4)
    assert sol.success
    theta = sol.y[0]
    assert np.ptp(theta) > 0.3  # it swings through a good angle (unwinding ~ 20°+ and back)
    E = np.array([energy(sol.y[:, k]) for k in range(0, sol.y.shape[1], 5)])
    assert np.ptp(E) < 1e-3 * E[0]


@pytest.mark.parametrize("seed", range(6))
def test_random_two_bone_paths_keep_their_invariants(seed):
    """Random poses of two bones: a converged path, outside both, no longer than MJM's, balanced."""
    rng = np.random.default_rng(seed)
    ell = trimesh.creation.icosphere(subdivisions=4, radius=1.0)
    m1 = trimesh.Trimesh(ell.vertices * [0.03, 0.018, 0.015], ell.faces)
    m2 = trimesh.Trimesh(ell.vertices * [0.012, 0.025, 0.014], ell.faces)
    obstacles = [MeshObstacle(m1.vertices, m1.faces, 1), MeshObstacle(m2.vertices, m2.faces, 2)]
    R = Rotation.random(3, random_state=seed).as_matrix()
    d = np.array([1.0, 0.4, 0.1]) / np.linalg.norm([1.0, 0.4, 0.1])
    p = np.stack([np.zeros(3), np.zeros(3), 0.05 * d]) + rng.normal(scale=0.003, size=(3, 3))
    pose = Pose(p, R)
    a = -0.06 * d + rng.normal(scale=0.004, size=3)  # the line a-b runs through both bones
    b = 0.11 * d + rng.normal(scale=0.004, size=3)
    solver = TautPathSolver(obstacles)
    path = solver.solve(a, b, 0, 3, pose, warm=False)
    assert path.converged
    assert path.length > np.linalg.norm(b - a) * 1.001
    assert (path.body == 1).sum() >= 1 and (path.body == 2).sum() >= 1  # it wraps both
    _, _, sd, _, _, _ = closest_over_obstacles(obstacles, pose, path.points_G)
    assert sd.min() > -1e-9
    for ob, mesh in zip(obstacles, (m1, m2)):
        inside = mesh.contains(pose.to_body(ob.body, path.points_G))
        assert not inside[path.body != ob.body].any()  # free or other-body points are not in it
    mjm = mjm_path(a, b, 0, 3, obstacles, pose, method="covariance")
    assert path.length <= mjm.length * (1 + 1e-3)
    f = path.load_dir_G.sum(axis=0)
    m = np.cross(path.load_point_G, path.load_dir_G).sum(axis=0)
    assert np.linalg.norm(f) < 1e-6 and np.linalg.norm(m) < 1e-7
