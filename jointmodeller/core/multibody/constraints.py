"""Holonomic constraints c(t, q) = 0 with their acceleration form G u̇ + k = 0 (seed 003 §4).

Each constraint returns, for the current state, its position error c (k,), its rows of G (k, nu),
the bias k (k,) = c̈ at u̇ = 0, and ∂c/∂t (k,) so that ċ = G u + ∂c/∂t. Geometric constraints are
built from station kinematics (points and directions fixed on bodies, body -1 = ground);
coordinate constraints read q and u directly (their coordinates must have q̇ = u).

Also here: coordinate projection (position and velocity) and assembly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from jointmodeller.core.spatial_math import skew
from jointmodeller.core.tolerances import tol

from . import mobilizers as mob
from .functions import Function


class _Ctx:
    """Everything the constraint rows need, computed lazily once per evaluation (coordinate
    constraints never pay for body kinematics or Jacobians)."""

    def __init__(self, system, state, kin=None):
        self.system = system
        self.t, self.q, self.u = state.t, state.q, state.u
        self.nu = system.nu
        self._kin = kin

    @cached_property
    def kin(self):
        return self._kin or self.system.kinematics(self.q, self.u)

    @cached_property
    def R_GB(self):
        return self.kin.R_GB

    @cached_property
    def p_GB(self):
        return self.kin.p_GB

    @cached_property
    def w_G(self):
        return self.kin.w_G

    @cached_property
    def vo_G(self):
        return self.kin.vo_G

    @cached_property
    def _bias(self):  # bias accelerations (u̇ = 0)
        return self.system.body_accelerations(self.kin, np.zeros(self.nu))

    @property
    def alpha_G(self):
        return self._bias[0]

    @property
    def ao_G(self):
        return self._bias[1]

    @cached_property
    def _jac(self):
        return self.system.jacobians(self.kin)

    @property
    def Jw(self):
        return self._jac[0]

    @property
    def Jv(self):
        return self._jac[1]

    def station(self, body: int, r_B: np.ndarray):
        """Position, velocity, bias acceleration (3,) and Jacobian (3, nu) of a body point."""
        if body < 0:
            z = np.zeros(3)
            return np.asarray(r_B, float), z, z, np.zeros((3, self.nu))
        arm = self.R_GB[body] @ r_B
        w = self.w_G[body]
        p = self.p_GB[body] + arm
        v = self.vo_G[body] + np.cross(w, arm)
        a = self.ao_G[body] + np.cross(self.alpha_G[body], arm) + np.cross(w, np.cross(w, arm))
        J = self.Jv[body] - skew(arm) @ self.Jw[body]
        return p, v, a, J

    def follower(self, body: int, p_G: np.ndarray):
        """Velocity, bias acceleration and Jacobian of the body-fixed point now at p_G."""
        if body < 0:
            z = np.zeros(3)
            return z, z, np.zeros((3, self.nu))
        arm = p_G - self.p_GB[body]
        w = self.w_G[body]
        v = self.vo_G[body] + np.cross(w, arm)
        a = self.ao_G[body] + np.cross(self.alpha_G[body], arm) + np.cross(w, np.cross(w, arm))
        return v, a, self.Jv[body] - skew(arm) @ self.Jw[body]

    def direction(self, body: int, d_B: np.ndarray):
        """Direction d (3,), ḋ, bias d̈, and Jw (3, nu) of its body."""
        if body < 0:
            z = np.zeros(3)
            return np.asarray(d_B, float), z, z, np.zeros((3, self.nu))
        d = self.R_GB[body] @ d_B
        w = self.w_G[body]
        dd = np.cross(w, d)
        ddd = np.cross(self.alpha_G[body], d) + np.cross(w, dd)
        return d, dd, ddd, self.Jw[body]

    def omega(self, body: int):
        if body < 0:
            return np.zeros(3), np.zeros(3), np.zeros((3, self.nu))
        return self.w_G[body], self.alpha_G[body], self.Jw[body]


class Constraint:
    """Base class; ``rows(ctx)`` -> (c, G, k, c_t)."""

    n_eq = 1

    def bind(self, system) -> None:  # resolve coordinate indices etc.
        pass

    def rows(self, ctx: _Ctx):
        raise NotImplementedError


def _coord_speed_index(system, coord: int) -> int:
    """Speed index of a generalized coordinate whose mobilizer has q̇ = u."""
    tr = system.tree
    for b in range(system.n_bodies):
        qo, n = int(tr.qoff[b]), int(tr.nq[b])
        if qo <= coord < qo + n:
            if not mob.q_equals_u(system.codes[b]):
                raise ValueError(f"coordinate {coord} has q̇ ≠ u; couplers need q̇ = u mobilizers")
            return int(tr.uoff[b]) + coord - qo
    raise ValueError(f"no coordinate {coord}")


@dataclass
class CoordinateCoupler(Constraint):
    """q[dependent] = f(q[independent]) with f a Function whose ``arg`` indexes ``independent``."""

    dependent: int
    independent: list[int]
    function: Function

    def bind(self, system):
        from .functions import encode_for_table

        self._ud = _coord_speed_index(system, self.dependent)
        self._ui = [_coord_speed_index(system, c) for c in self.independent]
        self._enc = encode_for_table(self.function)

    def rows(self, ctx):
        from .functions import eval_function

        ftype, arg, data = self._enc
        m = len(self.independent)
        qi = ctx.q[self.independent]
        ui = ctx.u[self._ui]
        grad = np.zeros(max(m, 1))
        f, uhu = eval_function(ftype, arg, 0, data, qi, ui, m, grad)
        G = np.zeros((1, ctx.nu))
        G[0, self._ud] = 1.0
        for j, uj in enumerate(self._ui):
            G[0, uj] -= grad[j]
        return np.array([ctx.q[self.dependent] - f]), G, np.array([-uhu]), np.zeros(1)


@dataclass
class PrescribedMotion(Constraint):
    """q[coordinate] = s(t) with s a single-argument Function of time."""

    coordinate: int
    function: Function

    def bind(self, system):
        self._u = _coord_speed_index(system, self.coordinate)

    def rows(self, ctx):
        s, sd, sdd = self.function.derivatives_at(float(ctx.t))
        G = np.zeros((1, ctx.nu))
        G[0, self._u] = 1.0
        return np.array([ctx.q[self.coordinate] - s]), G, np.array([-sdd]), np.array([-sd])


@dataclass
class PointOnPlane(Constraint):
    """Point r_B on ``point_body`` stays on the plane {x: n·(x − o) = 0} fixed on ``plane_body``."""

    plane_body: int
    normal_B: np.ndarray
    origin_B: np.ndarray
    point_body: int
    point_B: np.ndarray

    def rows(self, ctx):
        n0 = np.asarray(self.normal_B, float)
        n, nd, ndd, _ = ctx.direction(self.plane_body, n0 / np.linalg.norm(n0))
        o, vo, ao, _ = ctx.station(self.plane_body, np.asarray(self.origin_B, float))
        p, vp, ap, Jp = ctx.station(self.point_body, np.asarray(self.point_B, float))
        vf, af, Jf = ctx.follower(self.plane_body, p)
        d = p - o
        dd = vp - vo
        c = n @ d
        k = (ap - ao) @ n + 2 * dd @ nd + d @ ndd
        G = n @ (Jp - Jf)
        return np.array([c]), G[None, :], np.array([k]), np.zeros(1)


@dataclass
class PointOnLine(Constraint):
    """Point r_B on ``point_body`` stays on the line through o along d fixed on ``line_body``."""

    line_body: int
    direction_B: np.ndarray
    origin_B: np.ndarray
    point_body: int
    point_B: np.ndarray
    n_eq = 2

    def __post_init__(self):
        d = np.asarray(self.direction_B, float)
        d = d / np.linalg.norm(d)
        a = np.eye(3)[np.argmin(np.abs(d))]
        e1 = np.cross(d, a)
        e1 /= np.linalg.norm(e1)
        self._planes = [
            PointOnPlane(self.line_body, e, self.origin_B, self.point_body, self.point_B)
            for e in (e1, np.cross(d, e1))
        ]

    def rows(self, ctx):
        parts = [pl.rows(ctx) for pl in self._planes]
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(4))


@dataclass
class Ball(Constraint):
    """Coincident points: r1_B on body1 and r2_B on body2."""

    body1: int
    point1_B: np.ndarray
    body2: int
    point2_B: np.ndarray
    n_eq = 3

    def rows(self, ctx):
        p1, v1, a1, J1 = ctx.station(self.body1, np.asarray(self.point1_B, float))
        p2, v2, a2, J2 = ctx.station(self.body2, np.asarray(self.point2_B, float))
        return p1 - p2, J1 - J2, a1 - a2, np.zeros(3)


@dataclass
class Rod(Constraint):
    """Fixed distance ``length`` between r1_B on body1 and r2_B on body2."""

    body1: int
    point1_B: np.ndarray
    body2: int
    point2_B: np.ndarray
    length: float

    def rows(self, ctx):
        p1, v1, a1, J1 = ctx.station(self.body1, np.asarray(self.point1_B, float))
        p2, v2, a2, J2 = ctx.station(self.body2, np.asarray(self.point2_B, float))
        d = p1 - p2
        L = np.linalg.norm(d)
        e = d / L
        dd = v1 - v2
        k = e @ (a1 - a2) + (dd @ dd - (e @ dd) ** 2) / L
        return np.array([L - self.length]), (e @ (J1 - J2))[None, :], np.array([k]), np.zeros(1)


@dataclass
class ConstantAngle(Constraint):
    """Unit direction a_B on body1 stays perpendicular to b_B on body2 (a·b = 0)."""

    body1: int
    a_B: np.ndarray
    body2: int
    b_B: np.ndarray

    def rows(self, ctx):
        a, ad, add, _ = ctx.direction(self.body1, np.asarray(self.a_B, float))
        b, bd, bdd, _ = ctx.direction(self.body2, np.asarray(self.b_B, float))
        w1, al1, Jw1 = ctx.omega(self.body1)
        w2, al2, Jw2 = ctx.omega(self.body2)
        axb = np.cross(a, b)
        k = add @ b + 2 * ad @ bd + a @ bdd
        return np.array([a @ b]), (axb @ (Jw1 - Jw2))[None, :], np.array([k]), np.zeros(1)


@dataclass
class Weld(Constraint):
    """Frame X1 (4x4) on body1 coincides with frame X2 on body2 (6 equations)."""

    body1: int
    X1: np.ndarray
    body2: int
    X2: np.ndarray
    n_eq = 6
    _parts: list = field(default_factory=list, init=False, repr=False)

    def __post_init__(self):
        X1, X2 = np.asarray(self.X1, float), np.asarray(self.X2, float)
        R1, R2 = X1[:3, :3], X2[:3, :3]
        self._parts = [Ball(self.body1, X1[:3, 3], self.body2, X2[:3, 3])] + [
            ConstantAngle(self.body1, R1[:, i], self.body2, R2[:, j]) for i, j in ((0, 1), (1, 2), (2, 0))
        ]

    def rows(self, ctx):
        parts = [p.rows(ctx) for p in self._parts]
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(4))


def make_context(system, state, kin=None) -> _Ctx:
    return _Ctx(system, state, kin)


def constraint_rows(system, state, kin=None):
    """Stacked (c (m,), G (m, nu), k (m,), c_t (m,)) over all constraints of the system."""
    ctx = make_context(system, state, kin)
    parts = [con.rows(ctx) for con in system.constraints]
    if not parts:
        return np.zeros(0), np.zeros((0, system.nu)), np.zeros(0), np.zeros(0)
    return tuple(np.concatenate([np.atleast_1d(p[i]) if i != 1 else np.atleast_2d(p[i]) for p in parts])
                 for i in range(4))


def position_error(system, state) -> np.ndarray:
    return constraint_rows(system, state)[0]


def _lstsq(G, r, free=None):
    if free is None:
        return np.linalg.lstsq(G, r, rcond=tol.rank)[0]
    x = np.zeros(G.shape[1])
    x[free] = np.linalg.lstsq(G[:, free], r, rcond=tol.rank)[0]
    return x


def project_positions(system, state, tol: float, max_iter: int = 20, free=None) -> float:
    """Coordinate projection q <- q − N G⁺ c until RMS(c) ≤ tol (in place). Returns RMS(c)."""
    for _ in range(max_iter):
        c, G, _, _ = constraint_rows(system, state)
        err = float(np.sqrt(np.mean(c**2))) if c.size else 0.0
        if err <= tol:
            return err
        du = _lstsq(G, c, free)
        state.q = system.normalize(state.q - system.N_matrix(state.q) @ du)
    c = constraint_rows(system, state)[0]
    return float(np.sqrt(np.mean(c**2))) if c.size else 0.0


def project_velocities(system, state, free=None) -> None:
    """u <- u − G⁺ (G u + c_t): the nearest velocities on the velocity manifold (in place)."""
    if not system.constraints:
        return
    _, G, _, ct = constraint_rows(system, state)
    state.u = state.u - _lstsq(G, G @ state.u + ct, free)


def assemble(system, state, tol: float = 1e-12, locked=(), max_iter: int = 100):
    """Find q (near the given one) satisfying all position constraints, keeping the speeds of
    ``locked`` speed indices' coordinates fixed; then project the velocities. Returns the state."""
    st = state.copy()
    free = np.setdiff1d(np.arange(system.nu), np.asarray(locked, int)) if len(locked) else None
    err = project_positions(system, st, tol, max_iter, free)
    if err > tol:
        raise RuntimeError(f"assembly failed: constraint error {err:.3g} > {tol:.3g}")
    project_velocities(system, st, free)
    return st
