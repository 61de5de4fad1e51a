"""Data-driven construction of a mobilized-body tree and the System that evaluates it.

A model is a list of ``BodySpec`` (mass properties + one ``MobilizerSpec`` to its parent), a list
of constraints and a list of force elements. Everything is plain data: type names, parent indices,
4x4 frame transforms, parameter dicts and ``functions.Function`` objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from jointmodeller.core.spatial_math import matrix_to_quat
from jointmodeller.core.state import State
from jointmodeller.core.tolerances import tol

from . import mobilizers as mob
from .functions import Function, FunctionTable, coordinates_read
from .lean import coupled_udot_lean, forward_dynamics_lean, state_derivative_lean
from .packed import aba_p, crba_p, kin_p, normalize_p, qdot_p, rnea_p
from .spatial import spatial_inertia
from .tree import Tree, pack_tree

CUSTOM_KEYS = ("theta1", "theta2", "theta3", "p1", "p2", "p3")


@dataclass
class MobilizerSpec:
    """One mobilizer: frame F on the parent (X_PF), frame M on the child (X_BM), 0–6 mobilities.

    type: one of mobilizers.TYPE_CODES ("weld", "pin", "slider", "screw", "universal",
        "cylinder", "planar", "ball" (Euler x-y-z, u = w), "ball_quaternion", "ellipsoid",
        "free", "custom").
    parent: parent body index (-1 = ground); must be smaller than the child's index.
    X_PF, X_BM: 4x4 homogeneous transforms (F in parent body frame, M in child body frame).
    params: "pitch" (screw, m/rad); "radii" (ellipsoid a, b, c); custom: "coordinates" (m, 1–6),
        "rotation_axes" (3, 3) rows = body-fixed rotation axes (default x, y, z),
        "translation_axes" (3, 3) rows = translation axes in F (default x, y, z).
    functions: custom only — {"theta1".."theta3", "p1".."p3": Function}; missing ones are zero.
    reversed: the definition describes the parent's frame F moving on the child's frame M
        (seed 000 §2.4); q and u keep that meaning while the tree runs parent -> child.
    """

    type: str
    parent: int = -1
    X_PF: np.ndarray = field(default_factory=lambda: np.eye(4))
    X_BM: np.ndarray = field(default_factory=lambda: np.eye(4))
    params: dict = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)
    reversed: bool = False


@dataclass
class BodySpec:
    """A mobilized body: mass [kg], centre of mass in B (3,), inertia about the COM in B (3, 3).

    R_BK: orientation (3, 3) in B of the frame K that force elements use for this body
    (core.mechanics BodyKinematics: origin at the COM, usually the principal axes). Identity when
    B already is that frame; pass the mass row's principal axes when B is, e.g., the mesh frame.
    """

    name: str
    mass: float
    com_B: np.ndarray
    inertia_B: np.ndarray
    mobilizer: MobilizerSpec
    R_BK: np.ndarray | None = None


def _frame(T) -> tuple[np.ndarray, np.ndarray]:
    T = np.asarray(T, float)
    if T.shape != (4, 4):
        raise ValueError("frame transforms must be 4x4")
    R = T[:3, :3]
    if not np.allclose(R @ R.T, np.eye(3), atol=1e-9):
        raise ValueError("frame rotation is not orthonormal")
    return R.copy(), T[:3, 3].copy()


def build_tree(bodies: Sequence[BodySpec], gravity_G) -> tuple[Tree, list[int], int, int]:
    """Flatten body specs into a Tree. Returns (tree, type codes, nq, nu)."""
    nb = len(bodies)
    table = FunctionTable()
    parent = np.zeros(nb, np.int64)
    jtype = np.zeros(nb, np.int64)
    rev = np.zeros(nb, np.int64)
    nq = np.zeros(nb, np.int64)
    nu = np.zeros(nb, np.int64)
    R_PF = np.zeros((nb, 3, 3))
    p_PF = np.zeros((nb, 3))
    R_BM = np.zeros((nb, 3, 3))
    p_BM = np.zeros((nb, 3))
    prm = np.zeros((nb, mob.N_PRM))
    fidx = -np.ones((nb, 6), np.int64)
    I6 = np.zeros((nb, 6, 6))
    for i, b in enumerate(bodies):
        m = b.mobilizer
        if m.type not in mob.TYPE_CODES:
            raise ValueError(f"body {b.name!r}: unknown mobilizer type {m.type!r}")
        if not (-1 <= m.parent < i):
            raise ValueError(f"body {b.name!r}: parent {m.parent} must be -1 or an earlier body")
        jt = mob.TYPE_CODES[m.type]
        if not (np.isfinite(b.mass) and b.mass > 0):
            raise ValueError(f"body {b.name!r}: mass must be positive")
        I = np.asarray(b.inertia_B, float)
        if I.shape != (3, 3) or not np.allclose(I, I.T, atol=1e-12) or np.any(np.linalg.eigvalsh(I) < 0):
            raise ValueError(f"body {b.name!r}: inertia must be a symmetric positive semi-definite 3x3")
        parent[i], jtype[i], rev[i] = m.parent, jt, int(bool(m.reversed))
        R_PF[i], p_PF[i] = _frame(m.X_PF)
        R_BM[i], p_BM[i] = _frame(m.X_BM)
        if jt == mob.CUSTOM:
            nc = int(m.params.get("coordinates", 1))
            if not 1 <= nc <= 6:
                raise ValueError(f"body {b.name!r}: custom mobilizer needs 1–6 coordinates")
            nq[i] = nu[i] = nc
            rot = np.asarray(m.params.get("rotation_axes", np.eye(3)), float)
            tra = np.asarray(m.params.get("translation_axes", np.eye(3)), float)
            rot = rot / np.linalg.norm(rot, axis=1, keepdims=True)
            tra = tra / np.linalg.norm(tra, axis=1, keepdims=True)
            prm[i, :9] = rot.ravel()
            prm[i, 9:] = tra.ravel()
            unknown = set(m.functions) - set(CUSTOM_KEYS)
            if unknown:
                raise ValueError(f"body {b.name!r}: unknown custom functions {sorted(unknown)}")
            for k, key in enumerate(CUSTOM_KEYS):
                fn = m.functions.get(key)
                if fn is not None and getattr(fn, "arg", 0) >= nc:
                    raise ValueError(f"body {b.name!r}: {key} reads coordinate beyond {nc}")
                fidx[i, k] = table.add(fn)
        else:
            nq[i], nu[i] = mob.SIZES[jt]
            if jt == mob.SCREW:
                prm[i, 0] = float(m.params.get("pitch", 0.0))
            if jt == mob.ELLIPSOID:
                prm[i, :3] = np.asarray(m.params.get("radii", (1.0, 1.0, 1.0)), float)
        I6[i] = spatial_inertia(float(b.mass), np.asarray(b.com_B, float), np.asarray(b.inertia_B, float))
    qoff = np.concatenate([[0], np.cumsum(nq)[:-1]]).astype(np.int64)
    uoff = np.concatenate([[0], np.cumsum(nu)[:-1]]).astype(np.int64)
    ftype, farg, foff, fdata = table.arrays()
    tree = Tree(
        parent, jtype, rev, qoff, uoff, nq, nu, R_PF, p_PF, R_BM, p_BM, prm, fidx,
        ftype, farg, foff, fdata, I6, np.asarray(gravity_G, float).copy(),
    )
    return tree, list(jtype), int(nq.sum()), int(nu.sum())


def rotational_coordinates(bodies: Sequence[BodySpec]) -> tuple[np.ndarray, np.ndarray]:
    """((nq,), (nu,)) bool: the coordinates and speeds that turn their body (rad, rad/s), by the
    mobilizers' kinds; the others translate it (m, m/s). A custom mobilizer's coordinate turns its
    body when a rotation function reads it, translates it when only translation functions do (an
    OpenSim coordinate's motion type); one that no function reads counts as rotational. A test checks
    the classification against the kinematics' Jacobians at random poses."""
    rot_q: list[bool] = []
    rot_u: list[bool] = []
    for b in bodies:
        m = b.mobilizer
        jt = mob.TYPE_CODES[m.type]
        if jt == mob.CUSTOM:
            nc = int(m.params.get("coordinates", 1))
            turns = set().union(*(coordinates_read(m.functions.get(k)) for k in CUSTOM_KEYS[:3]))
            moves = set().union(*(coordinates_read(m.functions.get(k)) for k in CUSTOM_KEYS[3:]))
            kinds = tuple(j in turns or j not in moves for j in range(nc))
            rot_q.extend(kinds)
            rot_u.extend(kinds)
        else:
            q_kinds, u_kinds = mob.ROTATIONAL[jt]
            rot_q.extend(q_kinds)
            rot_u.extend(u_kinds)
    return np.array(rot_q, bool), np.array(rot_u, bool)


@dataclass
class Kinematics:
    """Results of the position/velocity pass for one (q, u), global and recursive forms."""

    Xup: np.ndarray
    S: np.ndarray
    v: np.ndarray
    c: np.ndarray
    R_GB: np.ndarray  # (nb, 3, 3)
    p_GB: np.ndarray  # (nb, 3) body-frame origins
    w_G: np.ndarray  # (nb, 3)
    vo_G: np.ndarray  # (nb, 3) velocity of the body-frame origin
    q: np.ndarray | None = None  # the coordinates these were computed from


class MultibodySystem:
    """A constant tree of mobilized bodies plus constraints and force elements.

    Generalized coordinates q (nq,) and speeds u (nu,) are stacked body by body in index order.
    ``forces`` are ForceElement objects (core.mechanics.forces) that act through the
    BodyKinematics adapter; gravity is applied inside the recursion.
    """

    def __init__(
        self,
        bodies: Sequence[BodySpec],
        constraints: Sequence = (),
        gravity_G=(0.0, -9.81, 0.0),
        forces: Sequence = (),
        length_scale: float = 1.0,
    ):
        if not (np.isfinite(length_scale) and length_scale > 0):
            raise ValueError(f"length scale must be a positive length in metres, not {length_scale!r}")
        self.length_scale = float(length_scale)
        self.bodies = list(bodies)
        self.tree, self.codes, self.nq, self.nu = build_tree(self.bodies, gravity_G)
        self.rotational_q, self.rotational_u = rotational_coordinates(self.bodies)
        """(nq,), (nu,) bool: the coordinates and speeds that turn their body (rad, rad/s; generalized
        forces in N·m), the others translate it (m, m/s; N). Read-only: callers share them."""
        self.rotational_q.setflags(write=False)
        self.rotational_u.setflags(write=False)
        self._ib, self._fb = pack_tree(self.tree)
        self.constraints = list(constraints)
        self.forces = list(forces)
        self.n_bodies = len(self.bodies)
        self.codes_have_quaternions = any(c in (mob.BALL_QUAT, mob.FREE) for c in self.codes)
        # per body: COM position in B and the force-element frame's rotation R_BK (BodyKinematics)
        self.com_B = np.array([np.asarray(b.com_B, float) for b in self.bodies]).reshape(-1, 3)
        self.mass = np.array([float(b.mass) for b in self.bodies])
        R_BK = []
        for b in self.bodies:
            R = np.eye(3) if b.R_BK is None else np.asarray(b.R_BK, float)
            if not np.allclose(R @ R.T, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
                raise ValueError(f"body {b.name!r}: R_BK is not a rotation")
            R_BK.append(R)
        self.R_BK = np.array(R_BK).reshape(-1, 3, 3)
        for con in self.constraints:
            if hasattr(con, "bind"):
                con.bind(self)
        from .coupled import pack_couplers

        self._couplers = pack_couplers(self)  # compiled path when all constraints are couplers
        # zero loads reused by every call (the kernels never write them)
        self._tau0 = np.zeros(self.nu)
        self._f0 = np.zeros((self.n_bodies, 6))

    # ---- coordinates -------------------------------------------------------------------------
    def default_state(self) -> State:
        """q = 0 (identity quaternions), u = 0, t = 0."""
        q = np.zeros(self.nq)
        for i, jt in enumerate(self.codes):
            if jt in (mob.BALL_QUAT, mob.FREE):
                q[self.tree.qoff[i]] = 1.0
        return State(0.0, q, np.zeros(self.nu))

    def q_slice(self, body: int) -> slice:
        o = int(self.tree.qoff[body])
        return slice(o, o + int(self.tree.nq[body]))

    def u_slice(self, body: int) -> slice:
        o = int(self.tree.uoff[body])
        return slice(o, o + int(self.tree.nu[body]))

    def set_free_pose(self, state: State, body: int, R: np.ndarray, p: np.ndarray) -> None:
        """Set a free/ball_quaternion mobilizer's coordinates from the relative pose R_FM, p_FM."""
        s = self.q_slice(body)
        q = state.q.copy()
        q[s.start : s.start + 4] = matrix_to_quat(np.asarray(R, float))
        if self.codes[body] == mob.FREE:
            q[s.start + 4 : s.start + 7] = p
        state.q = q

    def set_free_velocity(self, state: State, body: int, w_F: np.ndarray, v_F=None) -> None:
        """Set a free/ball_quaternion mobilizer's speeds: angular velocity of M in F and (free)
        the velocity of the M origin, both in F components."""
        s = self.u_slice(body)
        u = state.u.copy()
        u[s.start : s.start + 3] = w_F
        if self.codes[body] == mob.FREE and v_F is not None:
            u[s.start + 3 : s.start + 6] = v_F
        state.u = u

    def qdot(self, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        qd = np.zeros(self.nq)
        qdot_p(self._ib, self._fb, np.asarray(q, float), np.asarray(u, float), qd)
        return qd

    def N_matrix(self, q: np.ndarray) -> np.ndarray:
        """N(q) (nq, nu) with q̇ = N u, by columns."""
        N = np.zeros((self.nq, self.nu))
        for j in range(self.nu):
            e = np.zeros(self.nu)
            e[j] = 1.0
            N[:, j] = self.qdot(q, e)
        return N

    def normalize(self, q: np.ndarray) -> np.ndarray:
        """A copy of q with unit quaternions (ball and free mobilizers)."""
        q = np.array(q, float)
        normalize_p(self._ib, self._fb, q)
        return q

    @property
    def needs_projection(self) -> bool:
        """Whether integrators must project after each step (quaternions, constraints)."""
        return bool(self.constraints) or self.codes_have_quaternions

    def error_scales(self) -> np.ndarray:
        """Natural scale of each of [q; u] (nq + nu,) for absolute tolerances: the model length L for
        a translational coordinate and its speed (m, m/s), 1 for a rotational one (rad, quaternion,
        rad/s). Speeds are weighed per second, not over ``tol.error_time_scale`` as on the free
        bodies: on the knee demo, speeds over 0.1 s put its bodies 53 µm off a 9-digit run at 4
        digits, against a tolerance of α·L = 16 µm (5.8 µm per second; docs/benchmarks.md)."""
        L = self.length_scale
        return np.concatenate([np.where(self.rotational_q, 1.0, L), np.where(self.rotational_u, 1.0, L)])

    # ---- kinematics --------------------------------------------------------------------------
    def kinematics(self, q: np.ndarray, u: np.ndarray | None = None) -> Kinematics:
        u = np.zeros(self.nu) if u is None else np.asarray(u, float)
        Xup, S, v, c, R_GB, p_GB = kin_p(self._ib, self._fb, np.asarray(q, float), u)
        w_G = np.einsum("nij,nj->ni", R_GB, v[:, :3])
        vo_G = np.einsum("nij,nj->ni", R_GB, v[:, 3:])
        return Kinematics(Xup, S, v, c, R_GB, p_GB, w_G, vo_G, np.asarray(q, float))

    def body_accelerations(self, kin: Kinematics, udot: np.ndarray):
        """Angular accelerations alpha_G (nb, 3) and classical accelerations of the body-frame
        origins ao_G (nb, 3) for speeds' derivatives udot (no gravity)."""
        nb = self.n_bodies
        a = np.zeros((nb, 6))
        tr = self.tree
        for i in range(nb):
            par = tr.parent[i]
            ai = kin.c[i].copy()
            if par >= 0:
                ai += kin.Xup[i] @ a[par]
            n = tr.nu[i]
            if n:
                ai += kin.S[i, :, :n] @ udot[tr.uoff[i] : tr.uoff[i] + n]
            a[i] = ai
        alpha_B = a[:, :3]
        ao_B = a[:, 3:] + np.cross(kin.v[:, :3], kin.v[:, 3:])
        return (
            np.einsum("nij,nj->ni", kin.R_GB, alpha_B),
            np.einsum("nij,nj->ni", kin.R_GB, ao_B),
        )

    def jacobians(self, kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
        """Jw (nb, 3, nu) angular-velocity and Jv (nb, 3, nu) origin-velocity Jacobians in G."""
        nb, nu, tr = self.n_bodies, self.nu, self.tree
        Jw = np.zeros((nb, 3, nu))
        Jv = np.zeros((nb, 3, nu))
        for k in range(nb):
            j = k
            while j >= 0:
                n = tr.nu[j]
                if n:
                    cols = slice(tr.uoff[j], tr.uoff[j] + n)
                    Sw = kin.R_GB[j] @ kin.S[j, :3, :n]
                    Sv = kin.R_GB[j] @ kin.S[j, 3:, :n]
                    Jw[k, :, cols] = Sw
                    Jv[k, :, cols] = Sv + np.cross(Sw.T, kin.p_GB[k] - kin.p_GB[j]).T
                j = tr.parent[j]
        return Jw, Jv

    # ---- forces ------------------------------------------------------------------------------
    def body_kinematics(self, kin: Kinematics):
        """Adapter to core.mechanics.forces.BodyKinematics (COM on principal axes, in G)."""
        from jointmodeller.core.mechanics.forces import BodyKinematics

        arm = np.einsum("nij,nj->ni", kin.R_GB, self.com_B)
        return BodyKinematics(
            p_G=kin.p_GB + arm,
            R_GB=np.einsum("nij,njk->nik", kin.R_GB, self.R_BK),
            v_G=kin.vo_G + np.cross(kin.w_G, arm),
            w_G=kin.w_G.copy(),
            q=kin.q,
        )

    def spatial_forces(self, kin: Kinematics, force_G: np.ndarray, torque_G: np.ndarray) -> np.ndarray:
        """Per-body force (at the COM) and moment about the COM, in G -> spatial forces
        (nb, 6) in body components about the body origin, for the recursions."""
        arm = np.einsum("nij,nj->ni", kin.R_GB, self.com_B)
        n_G = torque_G + np.cross(arm, force_G)
        f = np.empty((self.n_bodies, 6))
        f[:, :3] = np.einsum("nji,nj->ni", kin.R_GB, n_G)
        f[:, 3:] = np.einsum("nji,nj->ni", kin.R_GB, force_G)
        return f

    def applied_forces(self, t: float, kin: Kinematics) -> np.ndarray:
        """Sum of all force elements as body spatial forces (nb, 6)."""
        if not self.forces:
            return np.zeros((self.n_bodies, 6))
        bk = self.body_kinematics(kin)
        force_G = np.zeros((self.n_bodies, 3))
        torque_G = np.zeros((self.n_bodies, 3))
        for el in self.forces:
            el.accumulate(t, bk, force_G, torque_G)
        return self.spatial_forces(kin, force_G, torque_G)

    # ---- dynamics ----------------------------------------------------------------------------
    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        kin = self.kinematics(q)
        return crba_p(self._ib, self._fb, kin.Xup, kin.S, self.nu)

    def minv(self, kin: Kinematics, f: np.ndarray) -> np.ndarray:
        """M⁻¹ f in O(n)."""
        z = np.zeros((self.n_bodies, 6))
        return aba_p(self._ib, self._fb, kin.Xup, kin.S, z, z, np.asarray(f, float), z, False)

    def unconstrained_udot(self, state: State, tau=None, f_ext=None, kin=None) -> np.ndarray:
        tau = self._tau0 if tau is None else np.asarray(tau, float)
        if kin is None and not self.forces:  # one compiled call (lean kernel, lean.py)
            f = self._f0 if f_ext is None else np.asarray(f_ext, float)
            return forward_dynamics_lean(self._ib, self._fb, state.q, state.u, tau, f)
        kin = kin or self.kinematics(state.q, state.u)
        f = self.applied_forces(state.t, kin)
        if f_ext is not None:
            f = f + f_ext
        return aba_p(self._ib, self._fb, kin.Xup, kin.S, kin.v, kin.c, tau, f, True)

    def forward_dynamics(self, state: State, tau=None, f_ext=None, return_multipliers=False):
        """u̇ (nu,) with constraint multipliers from Y λ = G u̇0 + k (least squares when redundant)."""
        if not self.constraints:
            udot0 = self.unconstrained_udot(state, tau, f_ext)
            return (udot0, np.zeros(0)) if return_multipliers else udot0
        if self._couplers is not None and not self.forces and not return_multipliers:
            cb, (cft, cfa, cfo, cfd) = self._couplers
            t = self._tau0 if tau is None else np.asarray(tau, float)
            f = self._f0 if f_ext is None else np.asarray(f_ext, float)
            return coupled_udot_lean(self._ib, self._fb, cb, cft, cfa, cfo, cfd, state.q, state.u, t, f)
        kin = self.kinematics(state.q, state.u)
        udot0 = self.unconstrained_udot(state, tau, f_ext, kin if self.forces else None)
        from .constraints import constraint_rows

        _, G, k, _ = constraint_rows(self, state, kin)
        MiGt = np.column_stack([self.minv(kin, G[r]) for r in range(G.shape[0])])
        Y = G @ MiGt
        lam = np.linalg.lstsq(Y, G @ udot0 + k, rcond=tol.rank)[0]
        udot = udot0 - MiGt @ lam
        return (udot, lam) if return_multipliers else udot

    def inverse_dynamics(self, state: State, udot, f_ext=None) -> np.ndarray:
        """Generalized forces tau that produce udot (no constraint forces)."""
        kin = self.kinematics(state.q, state.u)
        f = self.applied_forces(state.t, kin)
        if f_ext is not None:
            f = f + f_ext
        tau, _ = rnea_p(self._ib, self._fb, kin.Xup, kin.S, kin.v, kin.c, np.asarray(udot, float), f, True)
        return tau

    def reaction_forces(self, state: State, udot=None, tau=None):
        """Spatial force each mobilizer applies to its child, as (moment_G about the M origin,
        force_G) arrays (nb, 3) each. ``udot`` defaults to the forward-dynamics result; generalized
        forces along the mobilities (tau) are part of the transmitted load. With constraints, the
        constraint forces are attributed to the mobilizers (exact for unconstrained trees)."""
        kin = self.kinematics(state.q, state.u)
        if udot is None:
            udot = self.forward_dynamics(state, tau)
        f = self.applied_forces(state.t, kin)
        _, fj = rnea_p(self._ib, self._fb, kin.Xup, kin.S, kin.v, kin.c, np.asarray(udot, float), f, True)
        n_G = np.einsum("nij,nj->ni", kin.R_GB, fj[:, :3])
        f_G = np.einsum("nij,nj->ni", kin.R_GB, fj[:, 3:])
        # shift the moment from the body origin to the M frame origin
        pM_G = kin.p_GB + np.einsum("nij,nj->ni", kin.R_GB, self.tree.p_BM)
        n_M = n_G + np.cross(kin.p_GB - pM_G, f_G)
        return n_M, f_G

    def derivative(self, t: float, y: np.ndarray, tau=None) -> np.ndarray:
        """[q̇; u̇] of y = [q; u] (with constraint forces): what the integrators step."""
        q, u = y[: self.nq], y[self.nq:]
        if not self.constraints and not self.forces:  # one compiled call (lean kernel)
            return state_derivative_lean(self._ib, self._fb, q, u, self._tau0 if tau is None else
                                         np.asarray(tau, float), self._f0)
        st = State(t, q, u)
        return np.concatenate([self.qdot(st.q, st.u), self.forward_dynamics(st, tau)])

    def reference_energy(self, state: State) -> float | None:
        """No energy scale to judge blow-up by (the force elements are opaque here): None."""
        return None

    def kinetic_energy(self, state: State) -> float:
        kin = self.kinematics(state.q, state.u)
        return float(0.5 * sum(kin.v[i] @ self.tree.I6[i] @ kin.v[i] for i in range(self.n_bodies)))

    def potential_energy(self, state: State) -> float:
        """Gravitational potential −Σ m g·p_COM."""
        kin = self.kinematics(state.q)
        com = kin.p_GB + np.einsum("nij,nj->ni", kin.R_GB, self.com_B)
        return float(-np.sum(self.mass * (com @ self.tree.gravity)))

    def station_positions(self, q, body: np.ndarray, r_B: np.ndarray, kin=None) -> np.ndarray:
        """Global positions (m, 3) of points r_B (m, 3) on bodies (m,) (-1 = ground)."""
        kin = kin or self.kinematics(q)
        body = np.asarray(body, int)
        r_B = np.asarray(r_B, float).reshape(-1, 3)
        out = r_B.copy()
        on = body >= 0
        out[on] = kin.p_GB[body[on]] + np.einsum("mij,mj->mi", kin.R_GB[body[on]], r_B[on])
        return out
