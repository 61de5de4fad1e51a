"""Rotations: unit quaternions for integration, Euler angles only for input and output.

Quaternions are scalar-first ``(w, x, y, z)``; ``q_GB`` takes body-frame components to global,
matching ``R_GB``. Euler sequences use scipy's convention: upper case (``"ZYX"``) = intrinsic
(rotating axes), lower case (``"zyx"``) = extrinsic (fixed axes).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of quaternions q (..., 4); q need not be exactly unit."""
    q = np.asarray(q, dtype=float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    R = np.empty(q.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1 - 2 * (y * y + z * z)
    R[..., 0, 1] = 2 * (x * y - w * z)
    R[..., 0, 2] = 2 * (x * z + w * y)
    R[..., 1, 0] = 2 * (x * y + w * z)
    R[..., 1, 1] = 1 - 2 * (x * x + z * z)
    R[..., 1, 2] = 2 * (y * z - w * x)
    R[..., 2, 0] = 2 * (x * z - w * y)
    R[..., 2, 1] = 2 * (y * z + w * x)
    R[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternions (..., 4), scalar first with w >= 0, of rotation matrices R (..., 3, 3)."""
    R = np.asarray(R, dtype=float)
    xyzw = Rotation.from_matrix(R.reshape(-1, 3, 3)).as_quat()
    q = np.concatenate([xyzw[:, 3:], xyzw[:, :3]], axis=1)
    q *= np.where(q[:, :1] < 0, -1.0, 1.0)
    return q.reshape(R.shape[:-2] + (4,))


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a ⊗ b of quaternions (..., 4)."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, float), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, float), -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def quat_rate_body(q: np.ndarray, w_B: np.ndarray) -> np.ndarray:
    """dq/dt = ½ q ⊗ (0, w_B) for body-frame angular velocities w_B (..., 3); shape (..., 4)."""
    w = np.asarray(w_B, float)
    zero = np.zeros(w.shape[:-1] + (1,))
    return 0.5 * quat_multiply(q, np.concatenate([zero, w], axis=-1))


def rotvec_to_quat(rotvec: np.ndarray) -> np.ndarray:
    """Quaternions (..., 4) of rotation vectors (..., 3) (axis times angle, rad)."""
    v = np.asarray(rotvec, float)
    angle = np.linalg.norm(v, axis=-1, keepdims=True)
    half = 0.5 * angle
    # sin(half)/angle, with its Taylor series near zero
    scale = np.where(angle > 1e-8, np.sin(half) / np.where(angle > 0, angle, 1.0), 0.5 - angle**2 / 48.0)
    return np.concatenate([np.cos(half), scale * v], axis=-1)


def normalize_quat(q: np.ndarray) -> np.ndarray:
    """Project quaternions (..., 4) back onto the unit sphere."""
    q = np.asarray(q, float)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def euler_to_matrix(angles_rad: np.ndarray, sequence: str = "ZYX") -> np.ndarray:
    """Rotation matrices (..., 3, 3) from Euler angles (..., 3) [rad] in the given sequence."""
    a = np.asarray(angles_rad, float)
    return Rotation.from_euler(sequence, a.reshape(-1, 3)).as_matrix().reshape(a.shape[:-1] + (3, 3))


def matrix_to_euler(R: np.ndarray, sequence: str = "ZYX") -> np.ndarray:
    """Euler angles (..., 3) [rad] of rotation matrices (..., 3, 3); at gimbal lock the third angle
    is set to zero (scipy's convention) and the matrix is still reproduced exactly."""
    R = np.asarray(R, float)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # gimbal-lock notice: the result is still valid
        e = Rotation.from_matrix(R.reshape(-1, 3, 3)).as_euler(sequence)
    return e.reshape(R.shape[:-2] + (3,))


def euler_to_quat(angles_rad: np.ndarray, sequence: str = "ZYX") -> np.ndarray:
    """Unit quaternions (..., 4) from Euler angles (..., 3) [rad]."""
    return matrix_to_quat(euler_to_matrix(angles_rad, sequence))


def quat_to_euler(q: np.ndarray, sequence: str = "ZYX") -> np.ndarray:
    """Euler angles (..., 3) [rad] of quaternions (..., 4)."""
    return matrix_to_euler(quat_to_matrix(q), sequence)


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrices [v×] (..., 3, 3) of vectors (..., 3)."""
    v = np.asarray(v, float)
    S = np.zeros(v.shape[:-1] + (3, 3))
    S[..., 0, 1] = -v[..., 2]
    S[..., 0, 2] = v[..., 1]
    S[..., 1, 0] = v[..., 2]
    S[..., 1, 2] = -v[..., 0]
    S[..., 2, 0] = -v[..., 1]
    S[..., 2, 1] = v[..., 0]
    return S
