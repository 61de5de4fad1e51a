"""Spatial-vector (Plücker) helpers and small dense products shared by the compiled kernels.

Spatial vectors are Plücker (Featherstone): motion m = [w; v], force f = [n; f], 6 components.
Rotations, cross products and skew matrices live in ``core.spatial_math``.
"""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import njit
from jointmodeller.core.spatial_math import cross3, skew3


@njit
def crf(v, f):
    """Force cross product v ×* f (6,)."""
    out = np.empty(6)
    out[:3] = cross3(v[:3], f[:3]) + cross3(v[3:], f[3:])
    out[3:] = cross3(v[:3], f[3:])
    return out


@njit
def spatial_inertia(mass, com, I_com):
    """6x6 spatial inertia about the frame origin of a body with COM ``com`` and inertia I_com."""
    cx = skew3(com)
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
