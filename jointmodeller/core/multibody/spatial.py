"""Small rotation and spatial-vector helpers shared by the compiled kernels.

Spatial vectors are Plücker (Featherstone): motion m = [w; v], force f = [n; f], 6 components.
A body-to-body motion transform X_{B<-A} is held as (E, r): E rotates A components to B
components, r is B's origin relative to A's origin in A components.
"""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import njit


@njit
def axis_rotation(axis, angle):
    """R (3, 3) rotating by ``angle`` about unit ``axis`` (Rodrigues)."""
    x, y, z = axis[0], axis[1], axis[2]
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    R = np.empty((3, 3))
    R[0, 0] = t * x * x + c
    R[0, 1] = t * x * y - s * z
    R[0, 2] = t * x * z + s * y
    R[1, 0] = t * x * y + s * z
    R[1, 1] = t * y * y + c
    R[1, 2] = t * y * z - s * x
    R[2, 0] = t * x * z - s * y
    R[2, 1] = t * y * z + s * x
    R[2, 2] = t * z * z + c
    return R


@njit
def quat_to_R(qt):
    """R (3, 3) of a quaternion (w, x, y, z); normalised on the fly."""
    n = np.sqrt(qt[0] ** 2 + qt[1] ** 2 + qt[2] ** 2 + qt[3] ** 2)
    w, x, y, z = qt[0] / n, qt[1] / n, qt[2] / n, qt[3] / n
    R = np.empty((3, 3))
    R[0, 0] = 1 - 2 * (y * y + z * z)
    R[0, 1] = 2 * (x * y - w * z)
    R[0, 2] = 2 * (x * z + w * y)
    R[1, 0] = 2 * (x * y + w * z)
    R[1, 1] = 1 - 2 * (x * x + z * z)
    R[1, 2] = 2 * (y * z - w * x)
    R[2, 0] = 2 * (x * z - w * y)
    R[2, 1] = 2 * (y * z + w * x)
    R[2, 2] = 1 - 2 * (x * x + y * y)
    return R


def R_to_quat(R: np.ndarray) -> np.ndarray:
    """Quaternion (w, x, y, z) of a rotation matrix (3, 3), w >= 0."""
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(R).as_quat()
    q = np.array([w, x, y, z])
    return q if w >= 0 else -q


@njit
def cross(a, b):
    out = np.empty(3)
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    return out


@njit
def crm(v, m):
    """Motion cross product v × m (6,)."""
    out = np.empty(6)
    out[:3] = cross(v[:3], m[:3])
    out[3:] = cross(v[:3], m[3:]) + cross(v[3:], m[:3])
    return out


@njit
def crf(v, f):
    """Force cross product v ×* f (6,)."""
    out = np.empty(6)
    out[:3] = cross(v[:3], f[:3]) + cross(v[3:], f[3:])
    out[3:] = cross(v[:3], f[3:])
    return out


@njit
def motion_matrix(E, r):
    """6x6 Plücker motion transform X = [[E, 0], [-E r×, E]]."""
    X = np.zeros((6, 6))
    rx = np.zeros((3, 3))
    rx[0, 1] = -r[2]
    rx[0, 2] = r[1]
    rx[1, 0] = r[2]
    rx[1, 2] = -r[0]
    rx[2, 0] = -r[1]
    rx[2, 1] = r[0]
    Erx = mm(E, rx)
    for i in range(3):
        for j in range(3):
            X[i, j] = E[i, j]
            X[3 + i, 3 + j] = E[i, j]
            X[3 + i, j] = -Erx[i, j]
    return X


@njit
def spatial_inertia(mass, com, I_com):
    """6x6 spatial inertia about the frame origin of a body with COM ``com`` and inertia I_com."""
    cx = np.zeros((3, 3))
    cx[0, 1] = -com[2]
    cx[0, 2] = com[1]
    cx[1, 0] = com[2]
    cx[1, 2] = -com[0]
    cx[2, 0] = -com[1]
    cx[2, 1] = com[0]
    I = np.zeros((6, 6))
    Io = I_com + mass * mm(cx, cx.T.copy())
    for i in range(3):
        for j in range(3):
            I[i, j] = Io[i, j]
            I[i, 3 + j] = mass * cx[i, j]
            I[3 + i, j] = mass * cx[j, i]
        I[3 + i, 3 + i] = mass
    return I


def transform(R: np.ndarray | None = None, p: np.ndarray | None = None) -> np.ndarray:
    """Homogeneous 4x4 transform from a rotation (3, 3) and a translation (3,)."""
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


# Loop-based small dense products: numba would otherwise call BLAS for every 3x3/6x6 product.
@njit
def mm(A, B):
    """A @ B for small matrices."""
    n, k = A.shape
    m = B.shape[1]
    out = np.zeros((n, m))
    for i in range(n):
        for r in range(k):
            a = A[i, r]
            if a != 0.0:
                for j in range(m):
                    out[i, j] += a * B[r, j]
    return out


@njit
def mtm(A, B):
    """A.T @ B for small matrices."""
    k, n = A.shape
    m = B.shape[1]
    out = np.zeros((n, m))
    for r in range(k):
        for i in range(n):
            a = A[r, i]
            if a != 0.0:
                for j in range(m):
                    out[i, j] += a * B[r, j]
    return out


@njit
def mv(A, x):
    """A @ x for a small matrix."""
    n, k = A.shape
    out = np.zeros(n)
    for i in range(n):
        s = 0.0
        for r in range(k):
            s += A[i, r] * x[r]
        out[i] = s
    return out


@njit
def mtv(A, x):
    """A.T @ x for a small matrix."""
    k, n = A.shape
    out = np.zeros(n)
    for r in range(k):
        xr = x[r]
        if xr != 0.0:
            for i in range(n):
                out[i] += A[r, i] * xr
    return out
