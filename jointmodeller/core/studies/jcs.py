"""Grood & Suntay joint coordinate system (JCS) between a fixed and a moving bone.

Each bone carries an anatomical frame A (fixed bone: axes I, J, K; moving bone: i, j, k) with its
origin at a joint landmark. The JCS axes are e1 = I (flexion axis, fixed in the proximal bone),
e3 = k (long axis, fixed in the distal bone) and the floating axis e2 = e3 × e1 / |e3 × e1|.

Angles: flexion α about e1, ab/adduction (varus–valgus) β about e2, axial rotation γ about e3;
they equal the intrinsic X–Y–Z Cardan angles of the relative rotation R_IM = R_GI^T R_GM, so
``R_GM = R_GI Rx(α) Ry(β) Rz(γ)``. Translations: the vector d from the fixed origin to the moving
origin written as d = q1 e1 + q2 e2 + q3 e3 (the non-orthogonal JCS components).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jointmodeller.core.spatial_math import euler_to_matrix

COORDINATE_NAMES = ("flexion", "varus_valgus", "internal_external", "medial_lateral", "anterior_posterior",
                    "distraction")
"""The six JCS coordinates, in the order of :func:`jcs_coordinates`: three angles [rad], three
translations [m] (along e1, e2, e3)."""


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, float)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def anatomical_frame(long_axis: np.ndarray, lateral_axis: np.ndarray) -> np.ndarray:
    """Rotation (3, 3) whose columns are (x, y, z) = (lateral, z × x, long): x is ``lateral_axis``
    made perpendicular to ``long_axis``; z is ``long_axis``. Both (3,), any frame, any length."""
    z = _unit(long_axis)
    x = np.asarray(lateral_axis, float)
    x = _unit(x - (x @ z) * z)
    return np.column_stack([x, np.cross(z, x), z])


@dataclass(frozen=True)
class JointFrames:
    """Where the two anatomical frames sit on their bodies (body frames B, SI).

    R_B1A (3, 3), o1_B (3,): frame of the fixed bone (columns I, J, K) and its origin, in its body
    frame; R_B2A, o2_B: the same for the moving bone (columns i, j, k).
    """

    R_B1A: np.ndarray
    o1_B: np.ndarray
    R_B2A: np.ndarray
    o2_B: np.ndarray

    def frames_G(self, p1_G, R_G1, p2_G, R_G2) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Anatomical rotations and origins in G for body poses (p (3,), R (3, 3)) of both bones."""
        return (R_G1 @ self.R_B1A, p1_G + R_G1 @ self.o1_B, R_G2 @ self.R_B2A, p2_G + R_G2 @ self.o2_B)

    def coordinates(self, p1_G, R_G1, p2_G, R_G2) -> np.ndarray:
        """JCS coordinates (6,) for the two body poses: see :func:`jcs_coordinates`."""
        return jcs_coordinates(*self.frames_G(p1_G, R_G1, p2_G, R_G2))

    def moving_pose(self, p1_G, R_G1, coords) -> tuple[np.ndarray, np.ndarray]:
        """Body pose (p2_G (3,), R_G2 (3, 3)) of the moving bone that has JCS ``coords`` (6,)."""
        R_GI = R_G1 @ self.R_B1A
        o_I = p1_G + R_G1 @ self.o1_B
        R_GM, o_M = jcs_pose(R_GI, o_I, coords)
        R_G2 = R_GM @ self.R_B2A.T
        return o_M - R_G2 @ self.o2_B, R_G2

    def moving_jacobian(self, p1_G, R_G1, coords) -> np.ndarray:
        """(6, 6): how the moving bone's pose from :meth:`moving_pose` changes with each JCS coordinate
        (columns α, β, γ [rad], q1, q2, q3 [m]); rows: its centre's velocity [m] and its angular
        velocity in G [rad] per unit coordinate. Analytic (:func:`jcs_pose_jacobian`), the fixed bone held."""
        R_GI = R_G1 @ self.R_B1A
        o_I = p1_G + R_G1 @ self.o1_B
        R_GM, _ = jcs_pose(R_GI, o_I, coords)
        J = jcs_pose_jacobian(R_GI, coords)
        arm_G = R_GM @ (self.R_B2A.T @ self.o2_B)  # from the moving origin to the body's centre, negated
        J[:3] -= np.cross(J[3:].T, arm_G).T  # the centre moves with the frame: v_c = v_o − ω × arm
        return J


def jcs_coordinates(R_GI: np.ndarray, o_I: np.ndarray, R_GM: np.ndarray, o_M: np.ndarray) -> np.ndarray:
    """Grood & Suntay coordinates (α, β, γ, q1, q2, q3) of frame M relative to frame I.

    R_GI, R_GM (3, 3): anatomical frames (columns = axes) in G; o_I, o_M (3,) their origins in G.
    Angles [rad] from the axis definitions (not from a generic Euler routine), translations [m].
    """
    I, J, K = R_GI.T
    i, j, k = R_GM.T
    e1, e3 = I, k
    e2 = _unit(np.cross(e3, e1))
    alpha = np.arctan2(e2 @ K, e2 @ J)
    beta = np.arcsin(np.clip(I @ k, -1.0, 1.0))
    gamma = np.arctan2(e2 @ i, e2 @ j)
    d = np.asarray(o_M, float) - np.asarray(o_I, float)
    E = np.column_stack([e1, e2, e3])
    q = np.linalg.solve(E, d)
    return np.array([alpha, beta, gamma, *q])


def jcs_pose(R_GI: np.ndarray, o_I: np.ndarray, coords) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`jcs_coordinates`: the moving frame (R_GM (3, 3), o_M (3,)) for ``coords`` (6,)."""
    a, b, g, q1, q2, q3 = (float(c) for c in coords)
    R_GM = R_GI @ euler_to_matrix(np.array([a, b, g]), "XYZ")  # body-fixed x, then y, then z
    e1 = R_GI[:, 0]
    e3 = R_GM[:, 2]
    e2 = _unit(np.cross(e3, e1))
    return R_GM, np.asarray(o_I, float) + q1 * e1 + q2 * e2 + q3 * e3


def jcs_pose_jacobian(R_GI: np.ndarray, coords) -> np.ndarray:
    """(6, 6): d(o_M, θ_M)/d coords of :func:`jcs_pose` (rows: the moving origin's velocity and the
    moving frame's angular velocity in G per unit coordinate; columns α, β, γ, q1, q2, q3), the fixed
    frame held. From R_GM = R_GI Rx(α) Ry(β) Rz(γ): ω = e1 α̇ + R_GI Rx(α) ŷ β̇ + e3 γ̇; o_M = o_I +
    q1 e1 + q2 e2 + q3 e3 with e3 turning by ω and e2 = e3 × e1 / |e3 × e1|."""
    a, b, g, q1, q2, q3 = (float(c) for c in coords)
    R_GM = R_GI @ euler_to_matrix(np.array([a, b, g]), "XYZ")
    e1 = R_GI[:, 0]
    e3 = R_GM[:, 2]
    c = np.cross(e3, e1)
    n = float(np.linalg.norm(c))
    e2 = c / n
    ca, sa = np.cos(a), np.sin(a)
    w = np.column_stack([e1, R_GI @ np.array([0.0, ca, sa]), e3])  # angular velocity per α, β, γ
    J = np.zeros((6, 6))
    J[3:, :3] = w
    for col in range(3):
        de3 = np.cross(w[:, col], e3)
        dc = np.cross(de3, e1)
        de2 = (dc - (dc @ e2) * e2) / n
        J[:3, col] = q2 * de2 + q3 * de3
    J[:3, 3], J[:3, 4], J[:3, 5] = e1, e2, e3
    return J
