"""The linear small-motion model (seed 004 §3.1): K, C, M at a pose, modes, joint stiffness, laxity.

Coordinates per body: ``[δp_G (3), δθ_G (3)]`` about the centre of mass in G components; the same
ordering is used for loads ``[F_G (3), M_G (3)]`` (moment about the centre of mass).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.mechanics.linearization import finite_difference_stiffness
from jointmodeller.core.mechanics.system import MechanicalSystem
from jointmodeller.core.state import State


@dataclass
class LinearModel:
    """Assembled matrices at one state.

    K, C, M (6n, 6n): stiffness, damping and mass (about each COM, in G). free (6f,) indices of the
    DOFs of non-fixed bodies. ``M δü + C δu + K δq = δ(load)`` on the free DOFs.
    """

    K: np.ndarray
    C: np.ndarray
    M: np.ndarray
    free: np.ndarray
    body_names: list[str]

    def free_block(self, A: np.ndarray) -> np.ndarray:
        return A[np.ix_(self.free, self.free)]


def body_dofs(body: int) -> np.ndarray:
    return 6 * body + np.arange(6)


def mass_matrix(system: MechanicalSystem, kin: BodyKinematics) -> np.ndarray:
    """M (6n, 6n): diag(m I3, R_GB diag(I_B) R_GB^T) per body."""
    n = system.n_bodies
    M = np.zeros((6 * n, 6 * n))
    for i in range(n):  # a loop per body is fine
        M[6 * i: 6 * i + 3, 6 * i: 6 * i + 3] = system.bodies.mass[i] * np.eye(3)
        R = kin.R_GB[i]
        M[6 * i + 3: 6 * i + 6, 6 * i + 3: 6 * i + 6] = R @ np.diag(system.bodies.inertia_B[i]) @ R.T
    return M


def stiffness_and_damping(
    system: MechanicalSystem, kin: BodyKinematics, t: float = 0.0, damping: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """K and C (6n, 6n) of all force elements: analytic where an element offers it, else numerical
    (contact pairs on their frozen contact set, whose dissipation is zero at rest).

    ``damping=False`` skips C (returned as zeros): statics needs only K.
    """
    n = system.n_bodies
    K = np.zeros((6 * n, 6 * n))
    C = np.zeros((6 * n, 6 * n))
    numeric = []
    for el in system.force_elements():
        if hasattr(el, "tangent_stiffness"):
            K += el.tangent_stiffness(t, kin)
            if damping and hasattr(el, "tangent_damping"):
                C += el.tangent_damping(t, kin)
        elif hasattr(el, "frozen"):
            # contact: central differences of its contact set frozen at kin — the exact tangent of
            # the regenerated contact while the set holds (curvature and the lever of each spring
            # included; the analytic material part alone overstates stiff modes nearly twofold)
            K += finite_difference_stiffness([el.frozen(kin)], t, kin, system.length_scale)
        else:
            numeric.append(el)
    if numeric:
        K += finite_difference_stiffness(numeric, t, kin, system.length_scale)
        if damping:
            C += finite_difference_stiffness(numeric, t, kin, system.length_scale, velocity=True)
    return K, C


def assemble_linear_model(system: MechanicalSystem, state: State, t: float | None = None) -> LinearModel:
    """K, C and M at ``state`` (its time unless t is given)."""
    kin = system.kinematics(state.y)
    K, C = stiffness_and_damping(system, kin, state.t if t is None else t)
    free = np.concatenate([body_dofs(i) for i in system.bodies.free]) if system.bodies.free.size else np.zeros(0, int)
    return LinearModel(K, C, mass_matrix(system, kin), free, list(system.bodies.names))


@dataclass
class Modes:
    """Undamped natural modes of the free DOFs, sorted by frequency.

    frequency_hz (k,), omega (k,) [rad/s] (negative where K has a negative eigenvalue: unstable),
    shapes (6n, k): mode shapes on all DOFs (zeros on fixed bodies), mass-normalised.
    """

    frequency_hz: np.ndarray
    omega: np.ndarray
    shapes: np.ndarray


def natural_modes(model: LinearModel) -> Modes:
    """Generalised eigenproblem K φ = ω² M φ on the free DOFs (K symmetrised: at equilibrium the
    antisymmetric part comes only from loads that do not follow the body)."""
    Kf = model.free_block(model.K)
    Mf = model.free_block(model.M)
    Ks = 0.5 * (Kf + Kf.T)
    lam, vec = scipy.linalg.eigh(Ks, Mf)
    omega = np.sign(lam) * np.sqrt(np.abs(lam))
    shapes = np.zeros((model.K.shape[0], lam.size))
    shapes[model.free] = vec
    return Modes(omega / (2 * np.pi), omega, shapes)


def joint_compliance(model: LinearModel, body: int, reference: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Joint stiffness and compliance (6, 6) of ``body`` relative to ``reference`` (held fixed).

    Other free bodies relax (static condensation). Rows/columns [δp_G, δθ_G] vs [F_G, M_G] at the
    body's centre of mass. Returns (stiffness, compliance); compliance @ load = predicted laxity.
    """
    keep = np.asarray([d for d in model.free if reference is None or d // 6 != reference])
    Kf = model.K[np.ix_(keep, keep)]
    where = np.flatnonzero(np.isin(keep, body_dofs(body)))
    if where.size != 6:
        raise ValueError("the body must be free (not fixed, not the reference)")
    comp_all = np.linalg.inv(Kf)
    compliance = comp_all[np.ix_(where, where)]
    return np.linalg.inv(compliance), compliance


def load_at_point(force_G: np.ndarray, moment_G: np.ndarray, point_G: np.ndarray, com_G: np.ndarray) -> np.ndarray:
    """The load (6,) at a centre of mass equivalent to force and moment applied at a point."""
    return np.concatenate([force_G, moment_G + np.cross(np.asarray(point_G) - com_G, force_G)])


def predicted_laxity(model: LinearModel, body: int, load: np.ndarray, reference: int | None = None) -> np.ndarray:
    """Small displacement (6,) [δp_G m, δθ_G rad] of ``body`` under ``load`` (6,) [N, N·m] at its COM."""
    return joint_compliance(model, body, reference)[1] @ np.asarray(load, float)
