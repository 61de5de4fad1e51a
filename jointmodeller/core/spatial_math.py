"""Spatial math, one home for each concept: quaternions, rotation matrices, axis–angle (Rodrigues)
and rotation vectors, Euler angles, the cross-product (skew) matrix and the principal axes of an
inertia tensor.

Conventions. Quaternions are scalar-first ``(w, x, y, z)``; ``q_GB`` takes B components to G,
matching ``R_GB``. Euler sequences use scipy's notation: upper case (``"XYZ"``) = intrinsic
(body-fixed, rotating axes), lower case (``"xyz"``) = extrinsic (fixed axes). Angles in rad.

Two forms. The plain functions are vectorised numpy over leading axes (``(..., 4)``, ``(..., 3, 3)``).
The compiled kernels (mobilizers, the lean ABA, the MJM body kernels) call the numba versions
(``*_into``, ``axis_rotation``, ``quat_to_R``, ``skew3``, ``cross3``; compiled through the
``core._jit`` switch, inlined where the kernels are): the same arithmetic element for element as
their vectorised twins, which the tests check. They live in ``core.spatial_kernels`` and are served
here too, imported on first access.

Import cost. This module imports numpy only: numba (the kernels above) and scipy's ``Rotation``
(matrix → quaternion and matrix → Euler angles) are imported where first needed, so a program that
only poses bones (the GUI's start-up) pays for neither (~0.4 s each). ``euler_to_matrix`` composes
the elementary quaternions in numpy with scipy's own operations in scipy's order (bit-identical
results, checked by the tests) and falls back to scipy for anything but a three-axis sequence.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from jointmodeller.core.tolerances import tol

if TYPE_CHECKING:
    from jointmodeller.core.spatial_kernels import (  # noqa: F401 - served by __getattr__
        axis_rotation,
        cross3,
        quat_to_matrix_into,
        quat_to_R,
        rodrigues_into,
        skew3,
    )

_SMALL_ANGLE = tol.small_angle

_KERNELS = frozenset({"rodrigues_into", "axis_rotation", "quat_to_matrix_into", "quat_to_R", "skew3", "cross3"})
"""The numba versions (``core.spatial_kernels``) this module serves, imported on first access."""


def __getattr__(name: str):
    """The compiled kernels and scipy's ``Rotation``, imported when first asked for (PEP 562)."""
    if name in _KERNELS:
        from jointmodeller.core import spatial_kernels

        value = getattr(spatial_kernels, name)
    elif name == "Rotation":
        value = _rotation()
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | _KERNELS | {"Rotation"})


def _rotation():
    """scipy's Rotation (scipy.spatial costs ~0.4 s to import: only the functions that need it do)."""
    from scipy.spatial.transform import Rotation

    return Rotation


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
    xyzw = _rotation().from_matrix(R.reshape(-1, 3, 3)).as_quat()
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
    if a.ndim and a.size and a.shape[-1] == 3 and _three_axes(sequence):
        return _euler_matrix_as_scipy(a, sequence)
    return _rotation().from_euler(sequence, a.reshape(-1, 3)).as_matrix().reshape(a.shape[:-1] + (3, 3))


def _three_axes(sequence: str) -> bool:
    """A sequence of three axes, all intrinsic or all extrinsic, no axis twice in a row."""
    return (isinstance(sequence, str) and len(sequence) == 3 and (set(sequence) <= set("XYZ")
            or set(sequence) <= set("xyz")) and sequence[0] != sequence[1] != sequence[2])


def _euler_matrix_as_scipy(a: np.ndarray, sequence: str) -> np.ndarray:
    """``Rotation.from_euler(sequence, a).as_matrix()`` computed in numpy with scipy's operations in
    scipy's order (elementary quaternions [sin(θ/2) on the axis, cos(θ/2)] composed left to right for
    an intrinsic sequence, right to left for an extrinsic one, then scipy's quaternion → matrix
    formula): the same bits, without importing scipy.spatial. a (..., 3), sequence of three axes."""
    intrinsic = sequence.isupper()
    half = a / 2.0
    cos_a, sin_a = np.cos(half), np.sin(half)
    single = a.shape == (3,)
    cos: Any
    sin: Any
    zero: Any
    if single:  # Python floats: the same IEEE products and sums as numpy's, without its per-call overhead
        cos, sin = cos_a.tolist(), sin_a.tolist()
        zero = 0.0
    else:
        cos, sin = [cos_a[..., k] for k in range(3)], [sin_a[..., k] for k in range(3)]
        zero = np.zeros(a.shape[:-1])

    def elementary(k: int) -> list:
        q = [zero, zero, zero, cos[k]]  # x, y, z, w
        q["xyz".index(sequence[k].lower())] = sin[k]
        return q

    def compose(p: list, q: list) -> list:
        c = (p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0])  # as np.cross
        return [p[3] * q[0] + q[3] * p[0] + c[0], p[3] * q[1] + q[3] * p[1] + c[1],
                p[3] * q[2] + q[3] * p[2] + c[2], p[3] * q[3] - p[0] * q[0] - p[1] * q[1] - p[2] * q[2]]

    q = elementary(0)
    for k in (1, 2):
        q = compose(q, elementary(k)) if intrinsic else compose(elementary(k), q)
    x, y, z, w = q
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    m = [x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw),
         2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw),
         2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2]
    if single:
        return np.array(m).reshape(3, 3)
    return np.stack(m, axis=-1).reshape(a.shape[:-1] + (3, 3))


def matrix_to_euler(R: np.ndarray, sequence: str = "ZYX") -> np.ndarray:
    """Euler angles (..., 3) [rad] of rotation matrices (..., 3, 3); at gimbal lock the third angle
    is set to zero (scipy's convention) and the matrix is still reproduced exactly."""
    R = np.asarray(R, float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # gimbal-lock notice: the result is still valid
        e = _rotation().from_matrix(R.reshape(-1, 3, 3)).as_euler(sequence)
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
