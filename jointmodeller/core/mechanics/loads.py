"""External loads: point forces with time profiles, and gravity. Both are ForceElements."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jointmodeller.core.mechanics.forces import BodyKinematics, apply_point_forces


@dataclass
class PointLoads:
    """Forces fixed in G direction acting at points fixed on bodies, scaled by a time profile.

    body (k,) int, r_B (k, 3) [m] points in body frames, force_G (k, 3) [N] full-scale force,
    profile_t (k, p) / profile_scale (k, p): piecewise-linear scale factor vs time per load, padded
    by repeating the last knot (held constant outside the table). names: one label per load.
    """

    body: np.ndarray
    r_B: np.ndarray
    force_G: np.ndarray
    profile_t: np.ndarray
    profile_scale: np.ndarray
    names: list[str]

    @classmethod
    def constant(cls, body, r_B, force_G, names=None) -> "PointLoads":
        """Loads at full scale at all times."""
        body = np.asarray(body, np.int64).reshape(-1)
        k = body.shape[0]
        return cls(body, np.asarray(r_B, float).reshape(k, 3), np.asarray(force_G, float).reshape(k, 3),
                   np.zeros((k, 1)), np.ones((k, 1)), names or [f"load {i + 1}" for i in range(k)])

    @property
    def count(self) -> int:
        return int(self.body.shape[0])

    def scale(self, t: float) -> np.ndarray:
        """Profile factor (k,) at time t. A loop over loads (few), not over tissues."""
        return np.array([np.interp(t, self.profile_t[i], self.profile_scale[i]) for i in range(self.count)])

    def forces_at(self, t: float) -> np.ndarray:
        """Force vectors (k, 3) [N] at time t."""
        return self.force_G * self.scale(t)[:, None]

    def accumulate(self, t: float, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray) -> None:
        if self.count == 0:
            return
        apply_point_forces(kin, self.body, kin.points_G(self.body, self.r_B), self.forces_at(t), force_G, torque_G)

    def tangent_stiffness(self, t: float, kin: BodyKinematics) -> np.ndarray:
        """K (6n, 6n): a force fixed in G at a turning arm has moment stiffness -[f×][a×]."""
        from jointmodeller.core.mechanics.linearization import point_load_stiffness

        return point_load_stiffness(kin, self.body, self.r_B, self.forces_at(t))

    def tangent_damping(self, t: float, kin: BodyKinematics) -> np.ndarray:
        n = kin.n_bodies
        return np.zeros((6 * n, 6 * n))


@dataclass
class Gravity:
    """Weight m·g at every centre of mass (no moment)."""

    mass: np.ndarray
    gravity_G: np.ndarray

    def accumulate(self, t: float, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray) -> None:
        force_G += self.mass[:, None] * self.gravity_G[None, :]

    def tangent_stiffness(self, t: float, kin: BodyKinematics) -> np.ndarray:
        n = kin.n_bodies
        return np.zeros((6 * n, 6 * n))

    tangent_damping = tangent_stiffness

    def energy(self, kin: BodyKinematics) -> float:
        """Potential energy -Σ m g·p [J] (zero at the origin)."""
        return float(-np.sum(self.mass * (kin.p_G @ self.gravity_G)))
