"""Compiled loops of :mod:`jointmodeller.core.mechanics.forces`: scattering point forces into the
bodies' force and moment sums, and the velocities of points fixed on bodies. Same arithmetic as the
numpy forms there (which run when numba is switched off), without their per-call temporaries and
``np.add.at``: the contact and tissue elements call them several times per state derivative."""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import njit


@njit
def scatter_point_forces(p_G: np.ndarray, body: np.ndarray, point_G: np.ndarray, f_G: np.ndarray,
                         force_G: np.ndarray, torque_G: np.ndarray) -> None:  # pragma: no cover
    """force_G[body[i]] += f_G[i]; torque_G[body[i]] += (point_G[i] − p_G[body[i]]) × f_G[i], in order."""
    for i in range(body.shape[0]):
        b = body[i]
        rx = point_G[i, 0] - p_G[b, 0]
        ry = point_G[i, 1] - p_G[b, 1]
        rz = point_G[i, 2] - p_G[b, 2]
        fx = f_G[i, 0]
        fy = f_G[i, 1]
        fz = f_G[i, 2]
        force_G[b, 0] += fx
        force_G[b, 1] += fy
        force_G[b, 2] += fz
        torque_G[b, 0] += ry * fz - rz * fy
        torque_G[b, 1] += rz * fx - rx * fz
        torque_G[b, 2] += rx * fy - ry * fx


@njit
def point_velocities(R_GB: np.ndarray, v_G: np.ndarray, w_G: np.ndarray, body: np.ndarray,
                     r_B: np.ndarray) -> np.ndarray:  # pragma: no cover
    """v_G[body] + w_G[body] × (R_GB[body] r_B) (m, 3)."""
    m = body.shape[0]
    out = np.empty((m, 3))
    for i in range(m):
        b = body[i]
        ax = R_GB[b, 0, 0] * r_B[i, 0] + R_GB[b, 0, 1] * r_B[i, 1] + R_GB[b, 0, 2] * r_B[i, 2]
        ay = R_GB[b, 1, 0] * r_B[i, 0] + R_GB[b, 1, 1] * r_B[i, 1] + R_GB[b, 1, 2] * r_B[i, 2]
        az = R_GB[b, 2, 0] * r_B[i, 0] + R_GB[b, 2, 1] * r_B[i, 1] + R_GB[b, 2, 2] * r_B[i, 2]
        wx = w_G[b, 0]
        wy = w_G[b, 1]
        wz = w_G[b, 2]
        out[i, 0] = v_G[b, 0] + (wy * az - wz * ay)
        out[i, 1] = v_G[b, 1] + (wz * ax - wx * az)
        out[i, 2] = v_G[b, 2] + (wx * ay - wy * ax)
    return out
