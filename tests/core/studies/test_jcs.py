"""Grood & Suntay JCS: checked against SciPy's intrinsic XYZ Cardan angles and by round trips."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from jointmodeller.core.studies.jcs import JointFrames, anatomical_frame, jcs_coordinates, jcs_pose

RNG = np.random.default_rng(8)


def random_frame():
    return Rotation.random(random_state=RNG).as_matrix(), RNG.normal(size=3) * 0.05


@pytest.mark.parametrize("trial", range(20))
def test_angles_equal_intrinsic_xyz_cardan_angles(trial):
    R_GI, o_I = random_frame()
    angles = RNG.uniform([-2.5, -1.2, -2.5], [2.5, 1.2, 2.5])
    R_GM = R_GI @ Rotation.from_euler("XYZ", angles).as_matrix()
    c = jcs_coordinates(R_GI, o_I, R_GM, o_I + RNG.normal(size=3) * 0.01)
    np.testing.assert_allclose(c[:3], Rotation.from_matrix(R_GI.T @ R_GM).as_euler("XYZ"), atol=1e-10)
    np.testing.assert_allclose(c[:3], angles, atol=1e-10)


@pytest.mark.parametrize("trial", range(20))
def test_pose_round_trip(trial):
    R_GI, o_I = random_frame()
    coords = np.concatenate([RNG.uniform([-2.5, -1.2, -2.5], [2.5, 1.2, 2.5]), RNG.normal(size=3) * 0.02])
    R_GM, o_M = jcs_pose(R_GI, o_I, coords)
    np.testing.assert_allclose(jcs_coordinates(R_GI, o_I, R_GM, o_M), coords, atol=1e-12)


def test_translations_are_components_along_e1_e2_e3():
    """Pure translation of an aligned pair: q = the displacement in the fixed frame's axes."""
    R = Rotation.from_euler("z", 0.3).as_matrix()
    d = np.array([0.01, -0.02, 0.03])
    c = jcs_coordinates(R, np.zeros(3), R, R @ d)
    np.testing.assert_allclose(c, [0, 0, 0, *d], atol=1e-14)


def test_flexion_axis_rotation_changes_only_flexion():
    R_GI, o_I = random_frame()
    R_GM = R_GI @ Rotation.from_rotvec([0.7, 0, 0]).as_matrix()
    c = jcs_coordinates(R_GI, o_I, R_GM, o_I)
    np.testing.assert_allclose(c, [0.7, 0, 0, 0, 0, 0], atol=1e-12)


def test_joint_frames_moving_pose_round_trip():
    frames = JointFrames(anatomical_frame([0, 0, 1], [1, 0.1, 0]), np.array([0, 0, -0.1]),
                         anatomical_frame([0.1, 0, 1], [1, 0, 0]), np.array([0.0, 0.01, 0.12]))
    R1, p1 = random_frame()
    coords = np.array([0.5, 0.05, -0.1, 0.001, 0.002, -0.003])
    p2, R2 = frames.moving_pose(p1, R1, coords)
    np.testing.assert_allclose(frames.coordinates(p1, R1, p2, R2), coords, atol=1e-12)
    np.testing.assert_allclose(R2.T @ R2, np.eye(3), atol=1e-12)


def test_anatomical_frame_is_right_handed_with_given_long_axis():
    R = anatomical_frame([0, 0, 2.0], [1.0, 0.0, 0.5])
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-14)
    assert np.linalg.det(R) == pytest.approx(1.0)
    np.testing.assert_allclose(R[:, 2], [0, 0, 1])
    np.testing.assert_allclose(R[:, 0], [1, 0, 0])


@pytest.mark.parametrize("trial", range(10))
def test_moving_jacobian_equals_central_differences_of_the_pose(trial):
    """JointFrames.moving_jacobian (analytic) against central differences of moving_pose: the centre's
    displacement and the rotation vector of R(c + h) R(c − h)ᵀ over 2h, whose truncation error is
    O(h²) times the pose map's third derivative (~1e-12 relative at h = 1e-6 on a 0.1 m joint); the
    tolerance 1e-8 leaves rounding (~1e-16 / h) its room. Wrong signs, a missing lever or the
    floating axis e2 held fixed each miss by more than 1e-3."""
    frames = JointFrames(random_frame()[0], RNG.normal(size=3) * 0.05, random_frame()[0], RNG.normal(size=3) * 0.08)
    R1, p1 = random_frame()
    coords = np.concatenate([RNG.uniform([-2.0, -1.0, -2.0], [2.0, 1.0, 2.0]), RNG.normal(size=3) * 0.02])
    J = frames.moving_jacobian(p1, R1, coords)
    h = 1e-6
    for col in range(6):
        dc = np.zeros(6)
        dc[col] = h
        pp, Rp = frames.moving_pose(p1, R1, coords + dc)
        pm, Rm = frames.moving_pose(p1, R1, coords - dc)
        np.testing.assert_allclose(J[:3, col], (pp - pm) / (2 * h), atol=1e-8)
        np.testing.assert_allclose(J[3:, col], Rotation.from_matrix(Rp @ Rm.T).as_rotvec() / (2 * h), atol=1e-8)
