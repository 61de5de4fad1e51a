"""Spatial math, one home for each concept: quaternions, rotation matrices, axis–angle (Rodrigues)
and rotation vectors, Euler angles, the cross-product (skew) matrix and the principal axes of an
inertia tensor.

Conventions. Quaternions are scalar-first ``(w, x, y, z)``; ``q_GB`` takes B components to G,
matching ``R_GB``. Euler sequences use scipy's notation: upper case (``"XYZ"``) = intrinsic
(body-fixed, rotating axes), lower case (``"xyz"``) = extrinsic (fixed axes). Angles in rad.

Two forms. The plain functions are vectorised numpy over leading axes (``(..., 4)``, ``(..., 3, 3)``).
The compiled kernels (mobilizers, the lean ABA, the MJM body kernels) call the numba versions below
(``*_into``, ``axis_rotation``, ``quat_to_R``, ``skew3``, ``cross3``; compiled through the
``core._jit`` switch, inlined where the kernels are): the same arithmetic element for element as
their vectorised twins, which the tests check.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.spatial.transform import Rotation

from jointmodeller.core._jit import njit
from jointmodeller.core.tolerances import tol

_SMALL_ANGLE = tol.small_angle


# --------------------------------------------------------------------------------------------------
# Scalar (numba) versions for compiled kernels
# --------------------------------------------------------------------------------------------------
@njit(inline="always")
def rodrigues_into(x, y, z, angle, out, o):
    """out[o:o+9] <- R (row-major), the rotation by ``angle`` about the unit axis (x, y, z)
    (Rodrigues: R = c I + s [a×] + (1 − c) a aᵀ)."""
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    out[o + 0] = t * x * x + c
    out[o + 1] = t * x * y - s * z
    out[o + 2] = t * x * z + s * y
    out[o + 3] = t * x * y + s * z
    out[o + 4] = t * y * y + c
    out[o + 5] = t * y * z - s * x
    out[o + 6] = t * x * z - s * y
    out[o + 7] = t * y * z + s * x
    out[o + 8] = t * z * z + c


@njit
def axis_rotation(axis, angle):
    """R (3, 3) rotating by ``angle`` about the unit ``axis`` (3,) (Rodrigues)."""
    R = np.empty(9)
    rodrigues_into(axis[0], axis[1], axis[2], angle, R, 0)
    return R.reshape((3, 3))


@njit(inline="always")
def quat_to_matrix_into(w, x, y, z, out, o):
    """out[o:o+9] <- R (row-major) of the quaternion (w, x, y, z), normalised on the fly."""
    n = np.sqrt(w**2 + x**2 + y**2 + z**2)
    w, x, y, z = w / n, x / n, y / n, z / n
    out[o + 0] = 1 - 2 * (y * y + z * z)
    out[o + 1] = 2 * (x * y - w * z)
    out[o + 2] = 2 * (x * z + w * y)
    out[o + 3] = 2 * (x * y + w * z)
    out[o + 4] = 1 - 2 * (x * x + z * z)
    out[o + 5] = 2 * (y * z - w * x)
    out[o + 6] = 2 * (x * z - w * y)
    out[o + 7] = 2 * (y * z + w * x)
    out[o + 8] = 1 - 2 * (x * x + y * y)


@njit
def quat_to_R(qt):
    """R (3, 3) of a quaternion (4,) (w, x, y, z); normalised on the fly."""
    R = np.empty(9)
    quat_to_matrix_into(qt[0], qt[1], qt[2], qt[3], R, 0)
    return R.reshape((3, 3))


@njit
def skew3(v):
    """Cross-product matrix [v×] (3, 3) of a vector (3,)."""
    S = np.zeros((3, 3))
    S[0, 1] = -v[2]
    S[0, 2] = v[1]
    S[1, 0] = v[2]
    S[1, 2] = -v[0]
    S[2, 0] = -v[1]
    S[2, 1] = v[0]
    return S


@njit
def cross3(a, b):
    """a × b (3,) for vectors (3,)."""
    out = np.empty(3)
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    return out


# --------------------------------------------------------------------------------------------------
# Vectorised numpy versions
# --------------------------------------------------------------------------------------------------
def cross(a, b) -> np.ndarray:
    """a × b: np.cross, but for two single 3-vectors written out (np.cross costs ~20 µs of axis
    handling per call; the same products and differences, so the same bits)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape == (3,) and b.shape == (3,):
        return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])
    return np.cross(a, b)


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


def normalize_quat(q: np.ndarray) -> np.ndarray:
    """Project quaternions (..., 4) back onto the unit sphere."""
    q = np.asarray(q, float)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def rotvec_to_quat(rotvec: np.ndarray) -> np.ndarray:
    """Quaternions (..., 4) of rotation vectors (..., 3) (axis times angle, rad)."""
    v = np.asarray(rotvec, float)
    angle = np.linalg.norm(v, axis=-1, keepdims=True)
    half = 0.5 * angle
    # sin(half)/angle, with its Taylor series near zero
    scale = np.where(angle > _SMALL_ANGLE, np.sin(half) / np.where(angle > 0, angle, 1.0), 0.5 - angle**2 / 48.0)
    return np.concatenate([np.cos(half), scale * v], axis=-1)


def quat_to_rotvec(q: np.ndarray) -> np.ndarray:
    """Rotation vectors (..., 3) (axis times angle, angle in [0, π]) of quaternions (..., 4)."""
    q = normalize_quat(q)
    q = q * np.where(q[..., :1] < 0, -1.0, 1.0)  # w >= 0: the shorter way round
    s = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    # angle / sin(angle/2), with its Taylor series near zero
    scale = np.where(angle > _SMALL_ANGLE, angle / np.where(s > 0, s, 1.0), 2.0 + angle**2 / 12.0)
    return scale * q[..., 1:]


def axis_angle_matrix(axis: np.ndarray, angle: np.ndarray | float) -> np.ndarray:
    """Rotation matrices (..., 3, 3) by ``angle`` (...) about ``axis`` (..., 3) (Rodrigues, the
    arithmetic of :func:`rodrigues_into`). The axis is normalised; a zero axis gives the identity."""
    a = np.asarray(axis, float)
    n = np.linalg.norm(a, axis=-1, keepdims=True)
    a = np.where(n > 0, a / np.where(n > 0, n, 1.0), 0.0)
    angle = np.where(n[..., 0] > 0, np.asarray(angle, float), 0.0)
    x, y, z = a[..., 0], a[..., 1], a[..., 2]
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    R = np.empty(np.broadcast_shapes(x.shape, c.shape) + (3, 3))
    R[..., 0, 0] = t * x * x + c
    R[..., 0, 1] = t * x * y - s * z
    R[..., 0, 2] = t * x * z + s * y
    R[..., 1, 0] = t * x * y + s * z
    R[..., 1, 1] = t * y * y + c
    R[..., 1, 2] = t * y * z - s * x
    R[..., 2, 0] = t * x * z - s * y
    R[..., 2, 1] = t * y * z + s * x
    R[..., 2, 2] = t * z * z + c
    return R


def rotvec_to_matrix(rotvec: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of rotation vectors (..., 3) (axis times angle)."""
    v = np.asarray(rotvec, float)
    return axis_angle_matrix(v, np.linalg.norm(v, axis=-1))


def matrix_to_rotvec(R: np.ndarray) -> np.ndarray:
    """Rotation vectors (..., 3) (angle in [0, π]) of rotation matrices (..., 3, 3)."""
    return quat_to_rotvec(matrix_to_quat(R))


def euler_to_matrix(angles_rad: np.ndarray, sequence: str = "ZYX") -> np.ndarray:
    """Rotation matrices (..., 3, 3) from Euler angles (..., 3) [rad] in the given sequence."""
    a = np.asarray(angles_rad, float)
    return Rotation.from_euler(sequence, a.reshape(-1, 3)).as_matrix().reshape(a.shape[:-1] + (3, 3))


def matrix_to_euler(R: np.ndarray, sequence: str = "ZYX") -> np.ndarray:
    """Euler angles (..., 3) [rad] of rotation matrices (..., 3, 3); at gimbal lock the third angle
    is set to zero (scipy's convention) and the matrix is still reproduced exactly."""
    R = np.asarray(R, float)
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
    """Cross-product matrices [v×] (..., 3, 3) of vectors (..., 3): [v×] w = v × w."""
    v = np.asarray(v, float)
    S = np.zeros(v.shape[:-1] + (3, 3))
    S[..., 0, 1] = -v[..., 2]
    S[..., 0, 2] = v[..., 1]
    S[..., 1, 0] = v[..., 2]
    S[..., 1, 2] = -v[..., 0]
    S[..., 2, 0] = -v[..., 1]
    S[..., 2, 1] = v[..., 0]
    return S


def principal_axes(inertia: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Principal moments (3,) ascending and R_BL (3, 3), a right-handed rotation whose rows are the
    principal axes, of a symmetric tensor given in frame L (``R_BL I R_BLᵀ = diag(moments)``).

    The axes are LAPACK's eigenvectors of the symmetrised tensor with the third one flipped when
    needed for a right-handed frame: this defines every body frame B the app builds (stored
    results hold orientations of B), so it must not change.
    """
    sym = 0.5 * (np.asarray(inertia, float) + np.asarray(inertia, float).T)
    moments, V = np.linalg.eigh(sym)
    if np.linalg.det(V) < 0:
        V[:, 2] *= -1
    return moments, V.T
