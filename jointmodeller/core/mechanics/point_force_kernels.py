"""Compiled loops of :mod:`jointmodeller.core.mechanics.forces`: scattering point forces into the
bodies' force and moment sums, and the velocities of points fixed on bodies. Same arithmetic as the
numpy forms there (which run when numba is switched off), without their per-call temporaries and
``np.add.at``: the contact and tissue elements call them several times per state derivative."""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import njit


@njit
def scatter_point_force_at(p_G: np.ndarray, b: int, px: float, py: float, pz: float, fx: float, fy: float,
                           fz: float, force_G: np.ndarray, torque_G: np.ndarray) -> None:  # pragma: no cover
    """force_G[b] += f; torque_G[b] += (point − p_G[b]) × f, for one point (px, py, pz) and force f."""
    rx = px - p_G[b, 0]
    ry = py - p_G[b, 1]
    rz = pz - p_G[b, 2]
    force_G[b, 0] += fx
    force_G[b, 1] += fy
    force_G[b, 2] += fz
    torque_G[b, 0] += ry * fz - rz * fy
    torque_G[b, 1] += rz * fx - rx * fz
    torque_G[b, 2] += rx * fy - ry * fx


@njit
def scatter_point_forces(p_G: np.ndarray, body: np.ndarray, point_G: np.ndarray, f_G: np.ndarray,
                         force_G: np.ndarray, torque_G: np.ndarray) -> None:  # pragma: no cover
    """force_G[body[i]] += f_G[i]; torque_G[body[i]] += (point_G[i] − p_G[body[i]]) × f_G[i], in order."""
    for i in range(body.shape[0]):
        scatter_point_force_at(p_G, body[i], point_G[i, 0], point_G[i, 1], point_G[i, 2],
                               f_G[i, 0], f_G[i, 1], f_G[i, 2], force_G, torque_G)


@njit
def point_velocity_at(R_GB: np.ndarray, v_G: np.ndarray, w_G: np.ndarray, b: int, rx: float, ry: float,
                      rz: float) -> tuple[float, float, float]:  # pragma: no cover
    """v_G[b] + w_G[b] × (R_GB[b] r_B) for one point r_B = (rx, ry, rz) fixed on body b."""
    ax = R_GB[b, 0, 0] * rx + R_GB[b, 0, 1] * ry + R_GB[b, 0, 2] * rz
    ay = R_GB[b, 1, 0] * rx + R_GB[b, 1, 1] * ry + R_GB[b, 1, 2] * rz
    az = R_GB[b, 2, 0] * rx + R_GB[b, 2, 1] * ry + R_GB[b, 2, 2] * rz
    wx = w_G[b, 0]
    wy = w_G[b, 1]
    wz = w_G[b, 2]
    return (v_G[b, 0] + (wy * az - wz * ay), v_G[b, 1] + (wz * ax - wx * az), v_G[b, 2] + (wx * ay - wy * ax))


@njit
def point_velocities(R_GB: np.ndarray, v_G: np.ndarray, w_G: np.ndarray, body: np.ndarray,
                     r_B: np.ndarray) -> np.ndarray:  # pragma: no cover
    """v_G[body] + w_G[body] × (R_GB[body] r_B) (m, 3)."""
    m = body.shape[0]
    out = np.empty((m, 3))
    for i in range(m):
        out[i, 0], out[i, 1], out[i, 2] = point_velocity_at(R_GB, v_G, w_G, body[i], r_B[i, 0], r_B[i, 1],
                                                            r_B[i, 2])
    return out
