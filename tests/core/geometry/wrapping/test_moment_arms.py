"""Moment arms (seed 002) by tendon excursion and by the force method."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose
from jointmodeller.core.mechanics.wrapped_tissue import TissuePath
from tests.core.geometry.wrapping.axis_moment_arms import moment_arm, moment_arm_force, rotate_body
from tests.core.geometry.wrapping.wrap_helpers import RADIUS


@pytest.fixture(scope="module")
def pulley(cylinder_50k):
    """The cylinder as body 1 (a pulley turning about its own axis z); ground is body 0."""
    _, ob = cylinder_50k
    return MeshObstacle(ob.vertices_B, ob.faces, body=1)


@pytest.mark.parametrize("wrap_deg", [30.0, 60.0, 90.0])
def test_tissue_over_a_pulley_has_the_radius_as_moment_arm(pulley, wrap_deg):
    """A string from a ground point round the pulley to a point on its rim: |r| = radius.

    From g = (0, -D) the string touches the rim at φ_t = -90° + acos(r/D) and wraps
    counter-clockwise by wrap_deg (< 99° keeps this the shorter way round). Turning the pulley
    counter-clockwise winds the string on, so dl/dθ = +r and r_θ = -dl/dθ = -r.
    """
    r = RADIUS
    D = 6 * r
    ang = np.radians(-90.0) + np.arccos(r / D) + np.radians(wrap_deg)
    insertion = np.array([r * np.cos(ang), r * np.sin(ang), 0.003])
    path = TissuePath(0, np.array([0.0, -D, -0.004]), 1, insertion, [pulley])
    pose = Pose.identity(2)
    ma = moment_arm(path, pose, 1, np.zeros(3), np.array([0.0, 0.0, 1.0]), delta=1e-3)
    assert ma.excursion == pytest.approx(-r, rel=0.01)
    assert ma.force == pytest.approx(-r, rel=0.01)
    assert ma.agreement < 0.01
    # and it really wraps: contact vertices on the pulley over about the wrap angle
    p = path(pose)
    on = p.body[1:-1] == 1
    arc = np.degrees(np.ptp(np.unwrap(np.arctan2(p.points_G[1:-1][on, 1], p.points_G[1:-1][on, 0]))))
    step_deg = np.degrees(p.length / (len(p.points_G) - 1) / r)  # one vertex spacing, as an angle
    assert wrap_deg - 2 * step_deg - 1.0 < arc < wrap_deg + 1.0


def test_straight_tissue_moment_arm_is_the_lever_arm():
    """No obstacle in the way: r = k · ((p - a) × e) for the insertion p on the turning body."""
    import trimesh

    m = trimesh.creation.icosphere(subdivisions=3, radius=0.01)
    ob = MeshObstacle(m.vertices, m.faces, body=1)  # far away from the tissue
    a_G = np.array([0.0, 0.0, 0.0])
    p_B = np.array([0.05, 0.02, -0.01])
    pose = Pose(np.array([[0, 0, 0], [0.0, 0.5, 0.0], [0.01, 0.0, 0.0]]), np.tile(np.eye(3), (3, 1, 1)))
    path = TissuePath(0, a_G, 2, p_B, [ob])
    axis_pt = np.array([0.02, -0.03, 0.01])
    k = np.array([0.3, 0.2, 0.9])
    k /= np.linalg.norm(k)
    ma = moment_arm(path, pose, 2, axis_pt, k)
    p_G = p_B + pose.p_G[2]
    e = (a_G - p_G) / np.linalg.norm(a_G - p_G)  # tension pulls the insertion towards the origin
    expected = float(np.cross(p_G - axis_pt, e) @ k)
    assert ma.force == pytest.approx(expected, rel=1e-9)
    assert ma.excursion == pytest.approx(expected, rel=1e-5)


def test_rotate_body_turns_points_about_the_axis():
    pose = Pose(np.array([[1.0, 0, 0]]), np.eye(3)[None])
    out = rotate_body(pose, 0, np.array([0.0, 0, 0]), np.array([0, 0, 2.0]), np.pi / 2)
    assert np.allclose(out.p_G[0], [0, 1, 0]) and np.allclose(out.R_GB[0] @ [1, 0, 0], [0, 1, 0])
    assert np.allclose(pose.p_G[0], [1, 0, 0])  # the input pose is untouched


def test_force_method_uses_only_the_turning_body(pulley):
    path = TissuePath(0, np.array([0.06, -0.12, 0.0]), 1, np.array([-RADIUS, 0.0, 0.0]), [pulley])(Pose.identity(2))
    on_ground = moment_arm_force(path, 0, np.zeros(3), np.array([0, 0, 1.0]))
    # the ground end is a single point on the axis' side: its moment is that of one pull
    e = path.load_dir_G[path.load_body == 0][0]
    p = path.load_point_G[path.load_body == 0][0]
    assert on_ground == pytest.approx(np.cross(p, e)[2], rel=1e-12)
