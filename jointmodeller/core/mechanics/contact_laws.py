"""Contact force laws: elastic-foundation stiffness, Hunt–Crossley dissipation, Stribeck friction.

Seed 003 §5 and its appendix A; all vectorised over contact points. ``hunt_crossley`` and
``smoothstep`` are written so that they also take single numbers, in numba's compiled code too:
``hunt_crossley_jit`` and ``smoothstep_jit`` are the same functions compiled (core._jit; the plain
functions with numba switched off), for the contact kernels (core.mechanics.contact_field_kernels).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jointmodeller.core._jit import njit


def foundation_modulus(youngs_modulus: float, poisson: float, thickness: float) -> float:
    """Spring-bed stiffness per unit area K = (1−ν)E / ((1+ν)(1−2ν)h) [N/m³] of a thin layer.

    The layer is confined laterally (Johnson, Contact Mechanics §5.9); ν must lie in [0, 0.5).
    """
    if not thickness > 0:
        raise ValueError("cartilage thickness must be positive")
    if not youngs_modulus > 0:
        raise ValueError("Young's modulus must be positive")
    if not 0.0 <= poisson < 0.5:
        raise ValueError("Poisson's ratio must lie in [0, 0.5)")
    return (1.0 - poisson) * youngs_modulus / ((1.0 + poisson) * (1.0 - 2.0 * poisson) * thickness)


def combined_plane_strain_modulus(e1: float, nu1: float, e2: float, nu2: float) -> float:
    """E* for linear (foundation) elements: E1* E2* / (E1* + E2*) with Ei* = Ei / (1 − νi²) (seed 003 A.1)."""
    a = e1 / (1 - nu1 * nu1)
    b = e2 / (1 - nu2 * nu2)
    return a * b / (a + b)


def hunt_crossley(f_elastic: np.ndarray, rate: np.ndarray, c: float) -> np.ndarray:
    """Normal force f_e (1 + 1.5 c ẋ), never negative (seed 003 eqs 24–26).

    f_elastic (m,) [N] ≥ 0, rate (m,) penetration rate ẋ [m/s] (positive while closing), c [s/m]
    (or single numbers).
    """
    return np.maximum(f_elastic * (1.0 + 1.5 * c * rate), 0.0)


def smoothstep(x: np.ndarray) -> np.ndarray:
    """3x² − 2x³ on [0, 1], 0 below, 1 above: a C¹ ramp (arrays or single numbers)."""
    x = np.minimum(np.maximum(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


hunt_crossley_jit = njit(hunt_crossley)
smoothstep_jit = njit(smoothstep)


@dataclass(frozen=True)
class StribeckFriction:
    """Smooth Stribeck friction curve μ(v) (seed 003 eq. 27, Fig. 5).

    Rises from 0 at zero slip to μ_static at the transition speed v_t (quadratic, zero slope at
    v_t), falls smoothly to μ_dynamic by 3 v_t, then grows with the viscous coefficient μ_v [s/m].
    """

    static: float = 0.0
    dynamic: float = 0.0
    viscous: float = 0.0
    transition_speed: float = 1e-3

    def coefficient(self, slip: np.ndarray) -> np.ndarray:
        """μ(v) for slip speeds v (m,) ≥ 0 [m/s]."""
        v = np.asarray(slip, dtype=float)
        vt = self.transition_speed
        w = np.clip(v / vt, 0.0, 1.0)
        rise = self.static * w * (2.0 - w)
        smooth = smoothstep((v - vt) / (2.0 * vt))
        fall = self.static - (self.static - self.dynamic) * smooth
        return np.where(v <= vt, rise, fall) + self.viscous * v

    def force(self, slip_velocity: np.ndarray, normal_force: np.ndarray) -> np.ndarray:
        """Friction forces (m, 3) opposing the tangential slip velocities (m, 3) under normal forces (m,)."""
        v = np.linalg.norm(slip_velocity, axis=1)
        mu = self.coefficient(v)
        unit = np.divide(slip_velocity, v[:, None], out=np.zeros_like(slip_velocity), where=v[:, None] > 0)
        return -(mu * normal_force)[:, None] * unit
