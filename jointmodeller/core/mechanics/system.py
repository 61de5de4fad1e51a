"""The MJM system: every bone a free body, non-matrix Newton–Euler (constant after build).

The fast path of the one engine: a tree whose bodies all ride free mobilizers, written as MJM does
(seed 003 §2). It is evaluated at the same ``core.multibody.State(t, q, u)`` as the tree, with
q = [p_G (n,3), q_GB (n,4)] and u = [v_G (n,3), w_B (n,3)] flattened, so the integrators' vector is
``y = [q; u] = [p_G, q_GB, v_G, w_B]`` (13 n numbers). Every body is a free 6-DOF rigid body on its
principal axes at its centre of mass (frame B), or fixed in G (zero rates). It offers the
integrators' protocol (``core.multibody.integrate``).
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
from jointmodeller.core.state import State
from jointmodeller.core.tolerances import tol


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

    # ---------------------------------------------------------------- the integrators' protocol
    @property
    def nq(self) -> int:
        """Position coordinates: p_G (3) and q_GB (4) per body."""
        return 7 * self.n_bodies

    @property
    def nu(self) -> int:
        """Speeds: v_G (3) and w_B (3) per body."""
        return 6 * self.n_bodies

    constraints = ()
    """No constraints: a free body has none (the tree carries joints and constraints)."""

    needs_projection = False
    """``derivative`` pulls |q_GB| back to 1 itself, so integrators need not project."""

    def normalize(self, q: np.ndarray) -> np.ndarray:
        """A copy of q = [p_G, q_GB] (7n,) with unit quaternions."""
        q = np.array(q, float)
        n = self.n_bodies
        quat = q[3 * n:].reshape(n, 4)
        quat /= np.linalg.norm(quat, axis=1, keepdims=True)
        return q

    def error_scales(self) -> np.ndarray:
        """Natural scale of each of y (13n,) for absolute tolerances: the model length L for positions,
        1 for quaternions, L/τ and 1/τ for velocities and angular velocities (τ =
        ``tol.error_time_scale``: a speed is held to what moves a body by a position's tolerance in τ)."""
        n, L, tau = self.n_bodies, self.length_scale, tol.error_time_scale
        return np.concatenate([np.full(3 * n, L), np.ones(4 * n), np.full(3 * n, L / tau), np.full(3 * n, 1.0 / tau)])

    def reference_energy(self, state: State) -> float:
        """An energy scale [J] to judge blow-up: kinetic + elastic + work of loads and weight over
        one model length."""
        kin = self.kinematics(state.y)
        L = self.length_scale
        loads = np.abs(self.loads.forces_at(state.t)).sum() if self.loads.count else 0.0
        weight = float(np.sum(self.bodies.mass[~self.bodies.fixed]) * np.linalg.norm(self.gravity_G))
        return (self.kinetic_energy(state) + abs(self.tissue_forces.energy(state.t, kin))
                + (loads + weight) * L) or 1e-9

    def make_state(self, p_G, q_GB, v_G=None, w_B=None, t: float = 0.0) -> State:
        """The State of poses p_G (n,3), q_GB (n,4) (normalised) and rates (default at rest)."""
        n = self.n_bodies
        q_GB = np.asarray(q_GB, float).reshape(n, 4)
        q_GB = q_GB / np.linalg.norm(q_GB, axis=1, keepdims=True)
        v_G = np.zeros((n, 3)) if v_G is None else v_G
        w_B = np.zeros((n, 3)) if w_B is None else w_B
        return State(t, np.concatenate([np.ravel(p_G), np.ravel(q_GB)]),
                     np.concatenate([np.ravel(v_G), np.ravel(w_B)]))

    def state_at(self, t: float, y: np.ndarray) -> State:
        """The State of an integrator vector y (13n,) at time t."""
        return State(t, y[: self.nq], y[self.nq:])

    def tissue_loads(self, state: State):
        """Per-tissue lengths and tensions at a state (:class:`TissueLoads`)."""
        return self.tissue_forces.evaluate(state.t, self.kinematics(state.y))

    def positions(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        """Copies of p_G (n,3) and q_GB (n,4) of a state."""
        n = self.n_bodies
        return state.q[: 3 * n].reshape(n, 3).copy(), state.q[3 * n:].reshape(n, 4).copy()

    def force_elements(self) -> list[ForceElement]:
        """Everything that pushes on the bodies, in evaluation order."""
        return [self.tissue_forces, self.loads, self.gravity, *self.extra_elements]

    # ---------------------------------------------------------------- state vector helpers
    def moving_state_index(self) -> np.ndarray | None:
        """Indices of the state components the fixed bodies do not own (None when no body is fixed):
        a fixed body's pose and speeds never change, so an implicit integrator need not carry them,
        nor measure its Jacobian along them."""
        fixed = np.asarray(self.bodies.fixed, bool)
        if not fixed.any():
            return None
        free = ~fixed
        return np.flatnonzero(np.concatenate([np.repeat(free, 3), np.repeat(free, 4), np.repeat(free, 3),
                                              np.repeat(free, 3)]))

    def split(self, y: np.ndarray):
        """Views p_G (..., n, 3), q_GB (..., n, 4), v_G (..., n, 3), w_B (..., n, 3) into a state vector
        y (13n,) or a stack of them (..., 13n)."""
        n = self.n_bodies
        lead = y.shape[:-1]
        return (y[..., : 3 * n].reshape(*lead, n, 3), y[..., 3 * n: 7 * n].reshape(*lead, n, 4),
                y[..., 7 * n: 10 * n].reshape(*lead, n, 3), y[..., 10 * n:].reshape(*lead, n, 3))

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
    def kinetic_energy(self, state: State) -> float:
        """½ Σ (m v² + w_B·I w_B) over free bodies [J]."""
        n = self.n_bodies
        v, w_B = state.u[: 3 * n].reshape(n, 3), state.u[3 * n:].reshape(n, 3)
        free = ~self.bodies.fixed
        return float(0.5 * np.sum((self.bodies.mass[:, None] * v * v)[free])
                     + 0.5 * np.sum((self.bodies.inertia_B * w_B * w_B)[free]))

    def potential_energy(self, state: State) -> float:
        """Tissue elastic energy plus gravity [J] (external point loads excluded)."""
        kin = self.kinematics(state.y)
        free = ~self.bodies.fixed
        grav = float(-np.sum((self.bodies.mass * (kin.p_G @ self.gravity_G))[free]))
        return self.tissue_forces.energy(state.t, kin) + grav

    def angular_momentum_G(self, state: State, about_G=None) -> np.ndarray:
        """Total angular momentum (3,) of the free bodies about a point in G (default the origin)
        [kg·m²/s]."""
        about_G = np.zeros(3) if about_G is None else np.asarray(about_G, float)
        y = state.y
        p, _, v, w_B = self.split(y)
        kin = self.kinematics(y)
        free = ~self.bodies.fixed
        spin_G = np.einsum("nij,nj->ni", kin.R_GB, self.bodies.inertia_B * w_B)
        orbit = np.cross(p - about_G, self.bodies.mass[:, None] * v)
        return (spin_G + orbit)[free].sum(axis=0)
