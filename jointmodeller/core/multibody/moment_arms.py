"""Moment arms by the generalized-force method (seed 002) and by tendon excursion.

r_θ = fᵀ C_θ / s: C_θ (nu,) is the coupling matrix from a velocity solve with θ̇ = 1 (all
velocity constraints satisfied, uncoupled speeds zero), f (nu,) the generalized forces of a tension
s mapped to body forces. Excursion (the check): r = −dl/dθ along the same coupled motion.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jointmodeller.core.state import State
from jointmodeller.core.tolerances import tol

from .packed import rnea_p


def coupling_matrix(system, state: State, speed_index: int) -> np.ndarray:
    """C (nu,): speeds compatible with all constraints when u[speed_index] = 1 and every speed not
    coupled to it by a constraint is zero (least-norm velocity solve)."""
    C = np.zeros(system.nu)
    C[speed_index] = 1.0
    if not system.constraints:
        return C
    from .constraints import constraint_rows

    _, G, _, _ = constraint_rows(system, state)
    others = np.setdiff1d(np.arange(system.nu), [speed_index])
    C[others] = np.linalg.lstsq(G[:, others], -G[:, speed_index], rcond=tol.rank)[0]
    return C


def generalized_forces(system, state: State, force_G: np.ndarray, torque_G: np.ndarray) -> np.ndarray:
    """f = Jᵀ F (nu,) for per-body forces at the COM and moments about the COM (nb, 3), in G."""
    kin = system.kinematics(state.q, np.zeros(system.nu))
    F = system.spatial_forces(kin, force_G, torque_G)
    z = np.zeros_like(kin.v)
    tau, _ = rnea_p(system._ib, system._fb, kin.Xup, kin.S, z, z, np.zeros(system.nu), F, False)
    return -tau


@dataclass
class PointPath:
    """A straight-segment tendon through points fixed on bodies (body -1 = ground).

    bodies (k,) int, points_B (k, 3): each point in its body's frame B.
    """

    bodies: np.ndarray
    points_B: np.ndarray

    def positions(self, system, q) -> np.ndarray:
        return system.station_positions(q, np.asarray(self.bodies), np.asarray(self.points_B, float))

    def length(self, system, q) -> float:
        x = self.positions(system, q)
        return float(np.sum(np.linalg.norm(np.diff(x, axis=0), axis=1)))

    def body_forces(self, system, q, tension: float):
        """force_G, torque_G (nb, 3) about each COM of a tension pulling the points together."""
        x = self.positions(system, q)
        seg = np.diff(x, axis=0)
        e = seg / np.linalg.norm(seg, axis=1, keepdims=True)
        f_pts = np.zeros_like(x)
        f_pts[:-1] += tension * e
        f_pts[1:] -= tension * e
        kin = system.kinematics(q)
        com = kin.p_GB + np.einsum("nij,nj->ni", kin.R_GB, system.com_B)
        force_G = np.zeros((system.n_bodies, 3))
        torque_G = np.zeros((system.n_bodies, 3))
        b = np.asarray(self.bodies)
        on = b >= 0
        np.add.at(force_G, b[on], f_pts[on])
        np.add.at(torque_G, b[on], np.cross(x[on] - com[b[on]], f_pts[on]))
        return force_G, torque_G


def moment_arm(system, state: State, speed_index: int, path: PointPath, tension: float = 1.0) -> float:
    """Generalized-force moment arm r = fᵀC/s about the coordinate driven by ``speed_index``."""
    C = coupling_matrix(system, state, speed_index)
    force_G, torque_G = path.body_forces(system, state.q, tension)
    f = generalized_forces(system, state, force_G, torque_G)
    return float(f @ C / tension)


def moment_arm_excursion(system, state: State, speed_index: int, path: PointPath, h: float = 1e-6) -> float:
    """−dl/dθ by central differences along the coupled motion q ± h·N C (then re-assembled)."""
    from .constraints import project_positions

    C = coupling_matrix(system, state, speed_index)
    lengths = []
    for s in (h, -h):
        st = state.copy()
        st.q = system.normalize(st.q + s * (system.N_matrix(st.q) @ C))
        if system.constraints:
            free = np.setdiff1d(np.arange(system.nu), [speed_index])
            project_positions(system, st, 1e-14, free=free)
        lengths.append(path.length(system, st.q))
    return -(lengths[0] - lengths[1]) / (2 * h)
