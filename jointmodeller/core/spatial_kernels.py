"""The compiled (numba) twins of :mod:`jointmodeller.core.spatial_math` for kernels: Rodrigues and
quaternion matrices written into a flat buffer (``*_into``, inlined where the kernels are),
``axis_rotation``, ``quat_to_R``, ``skew3`` and ``cross3`` — the same arithmetic element for element as
their vectorised numpy twins, which the tests check.

Their own module so that the numpy functions of ``spatial_math`` do not import numba (~0.4 s): the
GUI's start-up uses those and no kernel. ``spatial_math`` still serves these names (loaded on first
access), so kernels import them from either.
"""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import njit


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
