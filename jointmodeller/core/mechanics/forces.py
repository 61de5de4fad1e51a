"""The contract between the dynamics integrator and everything that pushes on bodies.

A force element (tissues, contact, external loads, wrapped tissues) adds its resultant force and
moment about each body's centre of mass, both in global components, into caller-owned arrays. The
integrator sums all elements; nothing is assembled into matrices (seed 004 §3.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from jointmodeller.core._jit import NUMBA_ENABLED


@dataclass
class BodyKinematics:
    """Pose and velocity of every body, in global components.

    p_G:   (n, 3) centre-of-mass positions [m]
    R_GB:  (n, 3, 3) rotations taking body-frame (principal axes) components to global
    v_G:   (n, 3) centre-of-mass velocities [m/s]
    w_G:   (n, 3) angular velocities [rad/s]
    q:     generalized coordinates of the multibody tree these poses come from, when they do
           (conditional path points read their coordinate); None for free bodies
    """

    p_G: np.ndarray
    R_GB: np.ndarray
    v_G: np.ndarray
    w_G: np.ndarray
    q: np.ndarray | None = None

    @property
    def n_bodies(self) -> int:
        return self.p_G.shape[0]

    def points_G(self, body: np.ndarray, r_B: np.ndarray) -> np.ndarray:
        """Global positions of points r_B (m, 3) fixed on bodies ``body`` (m,)."""
        return self.p_G[body] + np.einsum("mij,mj->mi", self.R_GB[body], r_B)

    def point_velocities_G(self, body: np.ndarray, r_B: np.ndarray) -> np.ndarray:
        """Global velocities of points r_B (m, 3) fixed on bodies ``body`` (m,)."""
        if NUMBA_ENABLED and _real(self.R_GB, self.v_G, self.w_G, r_B) and _rows(body, r_B):
            from jointmodeller.core.mechanics.point_force_kernels import point_velocities

            return point_velocities(_f64(self.R_GB), _f64(self.v_G), _f64(self.w_G), _i64(body), _f64(r_B))
        arm_G = np.einsum("mij,mj->mi", self.R_GB[body], r_B)
        return self.v_G[body] + np.cross(self.w_G[body], arm_G)


def _f64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def _real(*arrays) -> bool:
    """Whether every array is real (the compiled loops take float64; complex or object stay numpy)."""
    return all(np.asarray(a).dtype.kind in "fiu" for a in arrays)


def _rows(body, points) -> bool:
    """Whether body is one index per row of points (m,) against (m, 3), as the compiled loops need."""
    b, p = np.asarray(body), np.asarray(points)
    return b.ndim == 1 and b.dtype.kind in "iu" and p.ndim == 2 and p.shape == (b.shape[0], 3)


def _i64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.int64)


class ForceElement(Protocol):
    """Anything that applies forces to bodies."""

    def accumulate(
        self, t: float, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray
    ) -> None:
        """Add this element's forces (n, 3) and moments about each centre of mass (n, 3), in G."""
        ...


def apply_point_forces(
    kin: BodyKinematics,
    body: np.ndarray,
    point_G: np.ndarray,
    f_G: np.ndarray,
    force_G: np.ndarray,
    torque_G: np.ndarray,
) -> None:
    """Scatter point forces f_G (m, 3) acting at point_G (m, 3) on bodies ``body`` (m,) into sums.

    The moment is (point - centre of mass) x force. A compiled loop (numba on), else ``np.add.at``.
    """
    if (NUMBA_ENABLED and force_G.dtype == np.float64 and torque_G.dtype == np.float64
            and _real(kin.p_G, point_G, f_G) and _rows(body, point_G) and _rows(body, f_G)):
        from jointmodeller.core.mechanics.point_force_kernels import scatter_point_forces

        scatter_point_forces(_f64(kin.p_G), _i64(body), _f64(point_G), _f64(f_G), force_G, torque_G)
        return
    np.add.at(force_G, body, f_G)
    np.add.at(torque_G, body, np.cross(point_G - kin.p_G[body], f_G))


class LinearizableForceElement(ForceElement, Protocol):
    """Optional extension: an element that knows its own tangent (used by the linear model and as
    the Newton Jacobian of static equilibrium; elements without it are differentiated numerically).

    Coordinates per body i are ``[δp_G, δθ_G]`` (COM translation, small rotation vector, both in G)
    and velocities ``[v_G, w_G]``; rows are the body's ``[force_G, torque_G]`` (moment about COM).
    """

    def tangent_stiffness(self, t: float, kin: BodyKinematics) -> np.ndarray:
        """K = -∂(force, moment)/∂(δp_G, δθ_G), shape (6n, 6n)."""
        ...

    def tangent_damping(self, t: float, kin: BodyKinematics) -> np.ndarray:
        """C = -∂(force, moment)/∂(v_G, w_G), shape (6n, 6n)."""
        ...
