"""The compiled MJM system (constant after build) and its State (Simbody's split, seed 003 §2).

Every body is a free 6-DOF rigid body on its principal axes at its centre of mass (frame B), or
fixed in G. The state vector used by integrators is ``y = [p_G (n,3), q_GB (n,4), v_G (n,3),
w_B (n,3)]`` flattened in that order (13 n numbers); fixed bodies keep zero rates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jointmodeller.core._jit import kernel
from jointmodeller.core.mechanics.forces import BodyKinematics, ForceElement
from jointmodeller.core.mechanics.loads import Gravity, PointLoads
from jointmodeller.core.mechanics.tissue_force import TissueForces
from jointmodeller.core.mechanics.tissues import PathProvider, TissueSet
from jointmodeller.core.spatial_math import quat_multiply, quat_to_matrix, quat_to_matrix_into


def _body_kinematics_py(q, w_B, R, w_G):  # pragma: no cover - compiled by numba
    """R_GB (n,3,3) (C-contiguous) and w_G (n,3) from quaternions q (n,4) (normalised on the fly)
    and w_B (n,3)."""
    flat = R.reshape(R.shape[0] * 9)
    for i in range(q.shape[0]):
        quat_to_matrix_into(q[i, 0], q[i, 1], q[i, 2], q[i, 3], flat, 9 * i)
        for r in range(3):
            w_G[i, r] = R[i, r, 0] * w_B[i, 0] + R[i, r, 1] * w_B[i, 1] + R[i, r, 2] * w_B[i, 2]


def _body_rates_py(q, v, w_B, R, F, T, I, inv_m, inv_I, fixed, out):  # pragma: no cover - compiled
    """Fill out (13n,) with [ṗ, q̇, v̇, ẇ_B] (same equations as MechanicalSystem.derivative)."""
    n = q.shape[0]
    for i in range(n):
        if fixed[i]:
            for j in range(3):
                out[3 * i + j] = 0.0
                out[7 * n + 3 * i + j] = 0.0
                out[10 * n + 3 * i + j] = 0.0
            for j in range(4):
                out[3 * n + 4 * i + j] = 0.0
            continue
        wx, wy, wz = w_B[i, 0], w_B[i, 1], w_B[i, 2]
        qw, qx, qy, qz = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        drift = qw * qw + qx * qx + qy * qy + qz * qz - 1.0
        out[3 * n + 4 * i + 0] = 0.5 * (-qx * wx - qy * wy - qz * wz) - drift * qw
        out[3 * n + 4 * i + 1] = 0.5 * (qw * wx + qy * wz - qz * wy) - drift * qx
        out[3 * n + 4 * i + 2] = 0.5 * (qw * wy - qx * wz + qz * wx) - drift * qy
        out[3 * n + 4 * i + 3] = 0.5 * (qw * wz + qx * wy - qy * wx) - drift * qz
        tb0 = R[i, 0, 0] * T[i, 0] + R[i, 1, 0] * T[i, 1] + R[i, 2, 0] * T[i, 2]
        tb1 = R[i, 0, 1] * T[i, 0] + R[i, 1, 1] * T[i, 1] + R[i, 2, 1] * T[i, 2]
        tb2 = R[i, 0, 2] * T[i, 0] + R[i, 1, 2] * T[i, 1] + R[i, 2, 2] * T[i, 2]
        Ix, Iy, Iz = I[i, 0], I[i, 1], I[i, 2]
        out[10 * n + 3 * i + 0] = (tb0 - (wy * Iz * wz - wz * Iy * wy)) * inv_I[i, 0]
        out[10 * n + 3 * i + 1] = (tb1 - (wz * Ix * wx - wx * Iz * wz)) * inv_I[i, 1]
        out[10 * n + 3 * i + 2] = (tb2 - (wx * Iy * wy - wy * Ix * wx)) * inv_I[i, 2]
        for j in range(3):
            out[3 * i + j] = v[i, j]
            out[7 * n + 3 * i + j] = F[i, j] * inv_m[i]


_BODY_KERNELS = None


def _body_kernels():
    """The two kernels compiled on first use (``core._jit``; plain Python when numba is off)."""
    global _BODY_KERNELS
    if _BODY_KERNELS is None:
        _BODY_KERNELS = (kernel(_body_kinematics_py), kernel(_body_rates_py))
    return _BODY_KERNELS


@dataclass
class Bodies:
    """Inertial data of n bodies.

    names (n,), mass (n,) [kg], inertia_B (n, 3) principal moments [kg·m²], fixed (n,) bool,
    R_BL (n, 3, 3) rotation taking the mesh frame L to B, com_L (n, 3) centre of mass in L [m]
    (a point r_L of the mesh is r_B = R_BL (r_L - com_L)).
    """

    names: list[str]
    mass: np.ndarray
    inertia_B: np.ndarray
    fixed: np.ndarray
    R_BL: np.ndarray
    com_L: np.ndarray

    @property
    def count(self) -> int:
        return int(self.mass.shape[0])

    @property
    def free(self) -> np.ndarray:
        """Indices of the bodies that move."""
        return np.flatnonzero(~self.fixed)

    def points_B(self, body: np.ndarray, r_L: np.ndarray) -> np.ndarray:
        """Mesh-frame points r_L (m, 3) of bodies ``body`` (m,) in their body frames."""
        return np.einsum("mij,mj->mi", self.R_BL[body], r_L - self.com_L[body])

    @classmethod
    def make(cls, mass, inertia_B, fixed=None, names=None, R_BL=None, com_L=None) -> "Bodies":
        mass = np.asarray(mass, float).reshape(-1)
        n = mass.shape[0]
        return cls(
            names=[f"body {i + 1}" for i in range(n)] if names is None else list(names),
            mass=mass,
            inertia_B=np.asarray(inertia_B, float).reshape(n, 3),
            fixed=np.zeros(n, bool) if fixed is None else np.asarray(fixed, bool).reshape(n),
            R_BL=np.tile(np.eye(3), (n, 1, 1)) if R_BL is None else np.asarray(R_BL, float).reshape(n, 3, 3),
            com_L=np.zeros((n, 3)) if com_L is None else np.asarray(com_L, float).reshape(n, 3),
        )


@dataclass
class MechanicalSystem:
    """Bodies, tissues, loads, gravity and any extra force elements (contact), constant once built.

    ``extra_elements`` are any objects with ``accumulate(t, kin, force_G, torque_G)`` (contact,
    wrapped tissues, ...). ``length_scale`` [m] is a typical model size used for tolerances.
    """

    bodies: Bodies
    tissues: TissueSet
    loads: PointLoads
    gravity_G: np.ndarray = field(default_factory=lambda: np.zeros(3))
    extra_elements: list = field(default_factory=list)
    path_provider: PathProvider | None = None
    length_scale: float = 0.1
    use_numba: bool | None = None

    def __post_init__(self) -> None:
        self.gravity_G = np.asarray(self.gravity_G, float).reshape(3)
        self.tissue_forces = TissueForces(self.tissues, self.path_provider, self.use_numba)
        self.gravity = Gravity(self.bodies.mass, self.gravity_G)
        self._inv_mass = np.where(self.bodies.fixed, 0.0, 1.0 / self.bodies.mass)
        self._inv_inertia = np.where(self.bodies.fixed[:, None], 0.0, 1.0 / self.bodies.inertia_B)

    @property
    def n_bodies(self) -> int:
        return self.bodies.count

    def force_elements(self) -> list[ForceElement]:
        """Everything that pushes on the bodies, in evaluation order."""
        return [self.tissue_forces, self.loads, self.gravity, *self.extra_elements]

    # ---------------------------------------------------------------- state vector helpers
    def split(self, y: np.ndarray):
        """Views p_G (n,3), q_GB (n,4), v_G (n,3), w_B (n,3) into a state vector y (13n,)."""
        n = self.n_bodies
        return (y[: 3 * n].reshape(n, 3), y[3 * n: 7 * n].reshape(n, 4),
                y[7 * n: 10 * n].reshape(n, 3), y[10 * n:].reshape(n, 3))

    def pack(self, p_G, q_GB, v_G, w_B) -> np.ndarray:
        return np.concatenate([np.ravel(p_G), np.ravel(q_GB), np.ravel(v_G), np.ravel(w_B)]).astype(float)

    def kinematics(self, y: np.ndarray) -> BodyKinematics:
        """Pose and velocity in G of a state vector y (quaternions normalised on the fly)."""
        p, q, v, w_B = self.split(y)
        R = quat_to_matrix(q)
        return BodyKinematics(p, R, v, np.einsum("nij,nj->ni", R, w_B))

    def generalized_forces(self, t: float, kin: BodyKinematics) -> tuple[np.ndarray, np.ndarray]:
        """Sum of all elements: force_G (n, 3) [N] and moment about each COM torque_G (n, 3) [N·m]."""
        n = self.n_bodies
        force_G = np.zeros((n, 3))
        torque_G = np.zeros((n, 3))
        for element in self.force_elements():
            element.accumulate(t, kin, force_G, torque_G)
        return force_G, torque_G

    def derivative(self, t: float, y: np.ndarray) -> np.ndarray:
        """dy/dt: MJM Step 5 (divide by mass / principal inertia) with Euler's equations.

        ``I ẇ_B + w_B × (I w_B) = M_B`` on principal axes; ``q̇ = ½ q ⊗ (0, w_B)`` plus a
        term that pulls |q| back to 1 (the RHS also normalises q, so drift never enters physics).
        """
        p, q, v, w_B = self.split(y)
        if self.tissue_forces.use_numba:
            return self._derivative_compiled(t, p, q, v, w_B)
        kin = self.kinematics(y)
        force_G, torque_G = self.generalized_forces(t, kin)
        torque_B = np.einsum("nji,nj->ni", kin.R_GB, torque_G)
        I = self.bodies.inertia_B
        gyro = np.cross(w_B, I * w_B)
        w_dot = (torque_B - gyro) * self._inv_inertia
        a = force_G * self._inv_mass[:, None]
        zero = np.zeros((q.shape[0], 1))
        q_dot = 0.5 * quat_multiply(q, np.concatenate([zero, w_B], axis=1))
        q_dot -= (np.einsum("ni,ni->n", q, q) - 1.0)[:, None] * q  # drift stabilisation
        fixed = self.bodies.fixed
        p_dot = np.where(fixed[:, None], 0.0, v)
        q_dot[fixed] = 0.0
        return np.concatenate([p_dot.ravel(), q_dot.ravel(), a.ravel(), w_dot.ravel()])

    def _derivative_compiled(self, t, p, q, v, w_B) -> np.ndarray:
        """The same equations through two small numba kernels (pose/velocity, then rates)."""
        kinematics, rates = _body_kernels()
        n = self.n_bodies
        R = np.empty((n, 3, 3))
        w_G = np.empty((n, 3))
        q = np.ascontiguousarray(q)
        w_B = np.ascontiguousarray(w_B)
        kinematics(q, w_B, R, w_G)
        kin = BodyKinematics(p, R, v, w_G)
        force_G, torque_G = self.generalized_forces(t, kin)
        out = np.empty(13 * n)
        rates(q, np.ascontiguousarray(v), w_B, R, force_G, torque_G, self.bodies.inertia_B, self._inv_mass,
              self._inv_inertia, self.bodies.fixed, out)
        return out

    # ---------------------------------------------------------------- invariants
    def kinetic_energy(self, y: np.ndarray) -> float:
        """½ Σ (m v² + w_B·I w_B) over free bodies [J]."""
        _, _, v, w_B = self.split(y)
        free = ~self.bodies.fixed
        return float(0.5 * np.sum((self.bodies.mass[:, None] * v * v)[free])
                     + 0.5 * np.sum((self.bodies.inertia_B * w_B * w_B)[free]))

    def potential_energy(self, t: float, y: np.ndarray) -> float:
        """Tissue elastic energy plus gravity [J] (external point loads excluded)."""
        kin = self.kinematics(y)
        free = ~self.bodies.fixed
        grav = float(-np.sum((self.bodies.mass * (kin.p_G @ self.gravity_G))[free]))
        return self.tissue_forces.energy(t, kin) + grav

    def angular_momentum_G(self, y: np.ndarray, about_G=np.zeros(3)) -> np.ndarray:
        """Total angular momentum (3,) of the free bodies about a point in G [kg·m²/s]."""
        p, _, v, w_B = self.split(y)
        kin = self.kinematics(y)
        free = ~self.bodies.fixed
        spin_G = np.einsum("nij,nj->ni", kin.R_GB, self.bodies.inertia_B * w_B)
        orbit = np.cross(p - about_G, self.bodies.mass[:, None] * v)
        return (spin_G + orbit)[free].sum(axis=0)


# ---------------------------------------------------------------- state with a staged cache

class Stage:
    """Realization stages, in order (seed 003 §2)."""

    TIME, POSITION, VELOCITY, DYNAMICS, ACCELERATION = 0, 1, 2, 3, 4


class State:
    """t, q = (p_G, q_GB), u = (v_G, w_B) and a cache of derived values filled stage by stage.

    Verbs as in Simbody: ``get_*`` reads (realising the needed stage lazily), ``set_*`` replaces and
    invalidates the later stages, ``upd_*`` hands out a writable view and invalidates, ``realize``
    fills the cache up to a stage. A copy is cheap: trial states can be made and thrown away.
    """

    def __init__(self, system: MechanicalSystem, y: np.ndarray, t: float = 0.0):
        self.system = system
        self._y = np.array(y, dtype=float)
        self._t = float(t)
        self._stage = Stage.TIME
        self._cache: dict = {}

    @classmethod
    def at_rest(cls, system: MechanicalSystem, p_G, q_GB, t: float = 0.0) -> "State":
        n = system.n_bodies
        return cls(system, system.pack(p_G, q_GB, np.zeros((n, 3)), np.zeros((n, 3))), t)

    def copy(self) -> "State":
        s = State(self.system, self._y, self._t)
        return s

    # ---- time and variables
    @property
    def stage(self) -> int:
        return self._stage

    def get_time(self) -> float:
        return self._t

    def set_time(self, t: float) -> None:
        self._t = float(t)
        self._invalidate(Stage.DYNAMICS)  # loads depend on time

    def get_y(self) -> np.ndarray:
        return self._y.copy()

    def set_y(self, y: np.ndarray) -> None:
        self._y[:] = y
        self._invalidate(Stage.POSITION)

    def get_positions(self) -> tuple[np.ndarray, np.ndarray]:
        p, q, _, _ = self.system.split(self._y)
        return p.copy(), q.copy()

    def set_positions(self, p_G: np.ndarray, q_GB: np.ndarray) -> None:
        p, q, _, _ = self.system.split(self._y)
        p[:] = p_G
        q[:] = np.asarray(q_GB) / np.linalg.norm(q_GB, axis=-1, keepdims=True)
        self._invalidate(Stage.POSITION)

    def get_velocities(self) -> tuple[np.ndarray, np.ndarray]:
        _, _, v, w = self.system.split(self._y)
        return v.copy(), w.copy()

    def set_velocities(self, v_G: np.ndarray, w_B: np.ndarray) -> None:
        _, _, v, w = self.system.split(self._y)
        v[:] = v_G
        w[:] = w_B
        self._invalidate(Stage.VELOCITY)

    def upd_y(self) -> np.ndarray:
        """Writable state vector; everything derived is invalidated."""
        self._invalidate(Stage.POSITION)
        return self._y

    # ---- cache
    def _invalidate(self, stage: int) -> None:
        if self._stage >= stage:
            self._stage = stage - 1
        for key in [k for k, s in self._cache.items() if s[0] >= stage]:
            del self._cache[key]

    def realize(self, stage: int) -> None:
        """Fill the cache up to ``stage``."""
        sys_ = self.system
        if self._stage < Stage.POSITION <= stage:
            p, q, _, _ = sys_.split(self._y)
            self._cache["R_GB"] = (Stage.POSITION, quat_to_matrix(q))
            self._stage = Stage.POSITION
        if self._stage < Stage.VELOCITY <= stage:
            p, _, v, w_B = sys_.split(self._y)
            R = self._cache["R_GB"][1]
            kin = BodyKinematics(p.copy(), R, v.copy(), np.einsum("nij,nj->ni", R, w_B))
            self._cache["kin"] = (Stage.VELOCITY, kin)
            self._stage = Stage.VELOCITY
        if self._stage < Stage.DYNAMICS <= stage:
            kin = self._cache["kin"][1]
            self._cache["forces"] = (Stage.DYNAMICS, sys_.generalized_forces(self._t, kin))
            self._cache["tissues"] = (Stage.DYNAMICS, sys_.tissue_forces.evaluate(self._t, kin))
            self._stage = Stage.DYNAMICS
        if self._stage < Stage.ACCELERATION <= stage:
            self._cache["ydot"] = (Stage.ACCELERATION, sys_.derivative(self._t, self._y))
            self._stage = Stage.ACCELERATION

    def _get(self, key: str, stage: int):
        if self._stage < stage:
            self.realize(stage)
        return self._cache[key][1]

    def get_R_GB(self) -> np.ndarray:
        return self._get("R_GB", Stage.POSITION)

    def get_kinematics(self) -> BodyKinematics:
        return self._get("kin", Stage.VELOCITY)

    def get_forces(self) -> tuple[np.ndarray, np.ndarray]:
        """Net force_G (n,3) and moment about each COM torque_G (n,3) of all elements."""
        return self._get("forces", Stage.DYNAMICS)

    def get_tissue_loads(self):
        """Per-tissue lengths and tensions (:class:`TissueLoads`)."""
        return self._get("tissues", Stage.DYNAMICS)

    def get_state_derivative(self) -> np.ndarray:
        return self._get("ydot", Stage.ACCELERATION)
