"""The laxity study: a quasi-static load sweep of one bone against another (seed 004 §6).

The moving bone is held at the experiment's flexion angle (as a testing rig does) and is otherwise
free: at each load step the five other Grood & Suntay coordinates of the moving bone (and the six of
any other free body) are solved so that every generalized force vanishes. Each step starts from the
solution (and the Jacobian) of the nearest load already solved, so a sweep costs a few force
evaluations per step. Curves are JCS coordinates relative to the unloaded pose.

Load kinds (directions fixed in G at the unloaded pose; JCS axes e1, e2, e3 of that pose):
``varus_valgus`` a force along +e1 at ``lever_m`` from the moving origin down the moving long axis
(a moment ≈ load·lever about e2); ``anterior_posterior`` a force along +e2 at the moving origin;
``internal_external`` a torque [N·m] about +e3; ``compression`` a force along +e3 (towards the
fixed bone when the long axes point proximally).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.spatial_math import matrix_to_quat, quat_to_matrix, rotvec_to_matrix
from jointmodeller.core.state import State
from jointmodeller.core.studies.jcs import COORDINATE_NAMES, JointFrames, jcs_coordinates

LOAD_KINDS = ("varus_valgus", "anterior_posterior", "internal_external", "compression")
MEASURE_UNITS = {"deg": np.degrees(1.0), "rad": 1.0, "mm": 1000.0, "m": 1.0}


class SweepCancelled(Exception):
    """The caller's cancel() returned True; the partial result rides along."""

    def __init__(self, partial: "LaxityResult"):
        super().__init__("laxity sweep cancelled")
        self.partial = partial


class EquilibriumFailed(RuntimeError):
    """Newton iterations did not bring the generalized forces under the tolerance. Raised from a
    sweep, it carries ``partial`` (the LaxityResult of the steps solved before) and ``load``."""

    partial: "LaxityResult | None" = None
    load: float | None = None


def parse_measure(measure: str) -> tuple[int, float, str]:
    """``"varus_valgus_deg"`` -> (JCS index, factor from SI to the unit, unit). Angles take deg/rad,
    translations mm/m; a bare name gets deg or mm."""
    for idx, name in enumerate(COORDINATE_NAMES):
        if measure == name or measure.startswith(name + "_"):
            unit = measure[len(name) + 1:] or ("deg" if idx < 3 else "mm")
            if (idx < 3 and unit not in ("deg", "rad")) or (idx >= 3 and unit not in ("mm", "m")):
                raise ValueError(f"measure {measure!r}: unit {unit!r} does not fit {name}")
            return idx, MEASURE_UNITS[unit], unit
    raise ValueError(f"unknown measure {measure!r}; expected one of "
                     + ", ".join(f"{n}_deg" if i < 3 else f"{n}_mm" for i, n in enumerate(COORDINATE_NAMES)))


SWEEP_SIDES = ("both", "positive", "negative")
"""Which way a sweep loads: 0 → +max then 0 → −max, only 0 → +max, or only 0 → −max."""


def load_sequence(max_load: float, steps: int, unload: bool = False, both: bool = True,
                  sides: str | None = None) -> np.ndarray:
    """Loads of a sweep: 0 → +max in ``steps`` values (then back to 0 if ``unload``), then
    −Δ → −max (and back). (k,) with k = 2·steps − 1 for a two-sided sweep without unloading.
    sides (one of :data:`SWEEP_SIDES`, overrides ``both``): "positive" is 0 → +max only,
    "negative" 0 → −max only (k = steps, or 2·steps − 1 with unloading)."""
    if steps < 2:
        raise ValueError("a sweep needs at least 2 steps")
    if sides is not None and sides not in SWEEP_SIDES:
        raise ValueError(f"sweep sides {sides!r}: expected one of {', '.join(SWEEP_SIDES)}")
    up = np.linspace(0.0, float(max_load), int(steps))
    if sides == "negative":
        up = -up
    seq = [up]
    if unload:
        seq.append(up[-2::-1])
    if (both and sides is None) or sides == "both":
        seq.append(-up[1:])
        if unload:
            seq.append(-up[-2::-1])
    return np.concatenate(seq) + 0.0  # no -0.0


@dataclass(frozen=True)
class LaxityProtocol:
    """What to do: bodies (indices into the system), joint frames, load kind, loads, measure."""

    fixed: int
    moving: int
    frames: JointFrames
    load_kind: str = "varus_valgus"
    loads: tuple[float, ...] = tuple(load_sequence(100.0, 11))
    lever_m: float = 0.30
    measure: str = "varus_valgus_deg"
    flexion_rad: float | None = None
    """Hold the flexion at this JCS angle; None holds the flexion of the initial pose."""
    load_point_B: tuple[float, float, float] | None = None
    """Where the sweep's force acts, in the moving body's frame B [m]; None: the moving origin (and
    ``lever_m`` down the moving long axis for varus_valgus)."""
    preload_force: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """A constant force [N] on the moving body at the load point, components along the JCS axes
    (e1, e2, e3) of the initial pose; acts at every step, the unloaded pose included."""
    preload_moment: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """A constant moment [N·m] on the moving body about the JCS axes (e1, e2, e3) of the initial pose."""

    def __post_init__(self) -> None:
        if self.load_kind not in LOAD_KINDS:
            raise ValueError(f"load kind {self.load_kind!r}: expected one of {', '.join(LOAD_KINDS)}")
        parse_measure(self.measure)


@dataclass
class ExperimentLoad:
    """ForceElement: ``magnitude`` times a unit force at a point fixed on a body plus a unit torque.

    body int, r_B (3,) point in the body frame [m], force_dir_G (3,), torque_dir_G (3,) per unit
    magnitude [N or N·m per unit].
    """

    body: int
    r_B: np.ndarray
    force_dir_G: np.ndarray
    torque_dir_G: np.ndarray
    magnitude: float = 0.0
    preload_force_G: np.ndarray = field(default_factory=lambda: np.zeros(3))
    """A constant force [N] at ``preload_r_B`` and a constant torque [N·m], whatever the magnitude."""
    preload_torque_G: np.ndarray = field(default_factory=lambda: np.zeros(3))
    preload_r_B: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def accumulate(self, t: float, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray) -> None:
        f = self.magnitude * self.force_dir_G
        R = kin.R_GB[self.body]
        force_G[self.body] += f + self.preload_force_G
        torque_G[self.body] += (np.cross(R @ self.r_B, f) + self.magnitude * self.torque_dir_G
                                + np.cross(R @ self.preload_r_B, self.preload_force_G) + self.preload_torque_G)

    def set_preload(self, protocol: "LaxityProtocol", p_G: np.ndarray, R_GB: np.ndarray) -> None:
        """The protocol's preload in G from the JCS axes at the pose p_G (n, 3), R_GB (n, 3, 3)."""
        self.preload_force_G, self.preload_torque_G, self.preload_r_B = preload_vectors(protocol, p_G, R_GB)


@dataclass
class TissueTone:
    """ForceElement: a constant tension [N] along the current path of some tissues (muscle tone),
    added to whatever the tissues' own laws give. tissues: the system's TissueSet; rows (k,) which
    tissues; tension_N (k,); provider: the system's path provider (tissues routed through via points
    or wrap objects). The element is filled in after the system is built (``bind``)."""

    tension_N: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tissues: Any = None
    provider: Any = None
    smooth = True

    def bind(self, tissues, provider, rows, tension_N) -> None:
        self.tissues, self.provider = tissues, provider
        self.rows = np.asarray(rows, np.int64)
        self.tension_N = np.asarray(tension_N, float)
        wrapped = np.asarray(tissues.wrapped, bool)[self.rows] if self.rows.size else np.zeros(0, bool)
        if wrapped.any() and provider is None:
            raise ValueError("tone on a routed tissue needs the system's path provider")

    def accumulate(self, t: float, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray) -> None:
        from jointmodeller.core.mechanics.forces import apply_point_forces
        from jointmodeller.core.mechanics.tissues import straight_tissue_geometry

        if not self.rows.size:
            return
        ts = self.tissues
        wrapped = np.asarray(ts.wrapped, bool)[self.rows]
        bodies, points, forces = [], [], []
        for mask in (~wrapped, wrapped):
            idx = self.rows[mask]
            if not idx.size:
                continue
            T = self.tension_N[mask]
            if mask is wrapped:
                path = self.provider.wrapped_paths(t, kin, idx)
                order = np.asarray(path.index, np.int64)
                by_row = dict(zip(idx.tolist(), T))
                T = np.array([by_row[int(i)] for i in order], float)
                g = path.geometry
                if path.extra_body.size:
                    pos = np.asarray(path.extra_tissue, np.int64)
                    bodies.append(np.asarray(path.extra_body, np.int64))
                    points.append(path.extra_point_G)
                    forces.append(T[pos][:, None] * path.extra_dir_G)
                a, b = ts.body_a[order], ts.body_b[order]
            else:
                g = straight_tissue_geometry(kin, ts.body_a[idx], ts.r_a_B[idx], ts.body_b[idx], ts.r_b_B[idx])
                a, b = ts.body_a[idx], ts.body_b[idx]
            bodies += [a, b]
            points += [g.point_a_G, g.point_b_G]
            forces += [T[:, None] * g.dir_a_G, T[:, None] * g.dir_b_G]
        apply_point_forces(kin, np.concatenate(bodies), np.concatenate(points), np.concatenate(forces),
                           force_G, torque_G)


@dataclass
class LaxityResult:
    """A sweep's results, one row per load step (k steps, m tissues).

    loads (k,), coords (k, 6) JCS relative to the unloaded pose [rad, m], measure (k,) in ``unit``,
    tissue_tension_N (k, m), extra_force_N (k,) |net force of the extra elements (contact, ...) on
    the moving body|, iterations (k,), evaluations (k,), residual_N (k,), pose_p_G (k, 3) and
    pose_q_GB (k, 4) of the moving body, reference_coords (6,) the unloaded pose's absolute JCS.
    """

    loads: np.ndarray
    coords: np.ndarray
    measure: np.ndarray
    unit: str
    measure_name: str
    tissue_tension_N: np.ndarray
    tissue_names: list[str]
    extra_force_N: np.ndarray
    iterations: np.ndarray
    evaluations: np.ndarray
    residual_N: np.ndarray
    pose_p_G: np.ndarray
    pose_q_GB: np.ndarray
    reference_coords: np.ndarray
    seconds: float = 0.0
    final_y: np.ndarray | None = field(default=None, repr=False)
    starts: "SweepStarts | None" = field(default=None, repr=False)
    sensitivity: np.ndarray | None = field(default=None, repr=False)
    """(k, p) d measure / d parameter at each load (the measure's unit per unit parameter), by the
    implicit-function theorem at each solution (``run_sweep(parameter_wrench=...)``); None otherwise."""
    sensitivity_error: np.ndarray | None = field(default=None, repr=False)
    """(k, p) bound on the error of ``sensitivity`` from the error of the Newton Jacobians."""

    @property
    def laxity(self) -> float:
        """Total range of the measured quantity over the sweep (in ``unit``)."""
        return float(np.ptp(self.measure)) if self.measure.size else float("nan")

    def stiffness(self) -> dict:
        """Slopes of load against displacement (load per ``unit``): secant over the whole sweep
        and tangents at zero load and at both ends of the loading branches."""
        return curve_stiffness(self.loads, self.measure)


@dataclass
class SweepStarts:
    """Where a free-body sweep found its equilibria, to warm-start a sweep of a nearby model (the
    finite-difference columns of a calibration, its next iterate): the unknowns and Newton Jacobian
    of the unloaded pose (``reference``) and of every solved load, continuation points included
    (``solved``: (load, x, J)), with the solver's tolerance ``tol_N`` and length scale, which bound
    how far a solved pose may lie from the exact equilibrium (:meth:`measure_error`)."""

    reference: tuple[np.ndarray, np.ndarray]
    solved: list[tuple[float, np.ndarray, np.ndarray]]
    tol_N: float
    length_scale: float
    residuals: dict[float, np.ndarray] = field(default_factory=dict)
    """The residual (n,) at each reported load's solution, where the sweep measured it
    (``fresh_jacobians``)."""

    def measure_error(self, measure: str, loads: np.ndarray) -> np.ndarray:
        """Bound on the error of the measure (its unit) at each of ``loads`` (k,) that a residual
        within ``tol_N`` allows: |dx| <= |J⁻¹| tol_N (x the solver's unknowns, J its Jacobian at the
        solution), taken along the measured coordinate. NaN for a load that was not solved."""
        idx, factor, _ = parse_measure(measure)
        row = idx - 1  # unknowns: β, γ, q1/L, q2/L, q3/L (flexion is held)
        scale = factor * (self.length_scale if row >= 2 else 1.0)
        out = np.full(len(loads), np.nan)
        for i, load in enumerate(np.asarray(loads, float)):
            hit = [J for lo, _, J in self.solved if lo == load]
            if not hit or row < 0:
                continue
            try:
                inv = np.linalg.inv(hit[-1])
            except np.linalg.LinAlgError:
                continue
            out[i] = abs(scale) * float(np.abs(inv[row]).sum()) * self.tol_N
        return out


def curve_stiffness(loads: np.ndarray, values: np.ndarray) -> dict:
    """Secant (range/range) and tangent slopes |d load / d value| of a sweep's loading branches
    (magnitudes: the sign of the curve depends on the side and axis conventions, not on stiffness)."""
    loads = np.asarray(loads, float)
    values = np.asarray(values, float)
    order = np.argsort(loads, kind="stable")
    lo, va = loads[order], values[order]
    keep = np.concatenate([[True], np.diff(lo) > 0])  # one point per load (loading branch first)
    lo, va = lo[keep], va[keep]
    out = {"secant": float(np.ptp(lo) / np.ptp(va)) if np.ptp(va) > 0 else float("inf")}
    slope = np.abs(np.gradient(va, lo)) if lo.size >= 3 else None  # |d value / d load|
    if slope is not None:
        i0 = int(np.argmin(np.abs(lo)))
        with np.errstate(divide="ignore"):
            out["tangent_at_zero"] = float(1.0 / slope[i0])
            out["tangent_at_max"] = float(1.0 / slope[-1])
            out["tangent_at_min"] = float(1.0 / slope[0])
    return out


class QuasiStaticSolver:
    """Equilibria of the free bodies with the moving bone's flexion held (Newton–Broyden).

    Unknowns x: the moving bone's JCS (β, γ, q1/L, q2/L, q3/L) and for every other free body
    (Δp/L, rotation vector); residual: the matching generalized forces divided by L [N]
    (L = system.length_scale), so forces and moments share one tolerance ``tol_N``.
    """

    def __init__(self, system, protocol: LaxityProtocol, p0_G: np.ndarray, q0_GB: np.ndarray,
                 tol_N: float = 1e-6, max_iter: int = 60, fd_step: float = 1e-7,
                 max_rotation_rad: float = 0.05, max_translation_m: float = 2e-3):
        self.system = system
        self.max_rotation_rad = max_rotation_rad
        self.max_translation_m = max_translation_m
        self.protocol = protocol
        self.L = float(system.length_scale)
        self.tol_N = tol_N
        self.max_iter = max_iter
        self.fd_step = fd_step
        self.p0_G = np.array(p0_G, float)
        self.R0_GB = quat_to_matrix(np.asarray(q0_GB, float))
        fixed = np.asarray(system.bodies.fixed, bool)
        if not fixed[protocol.fixed]:
            raise ValueError(f"body {system.bodies.names[protocol.fixed]!r} must be fixed for a laxity sweep")
        if fixed[protocol.moving]:
            raise ValueError(f"body {system.bodies.names[protocol.moving]!r} must be free for a laxity sweep")
        self.others = [int(b) for b in np.flatnonzero(~fixed) if b != protocol.moving]
        self.n = 5 + 6 * len(self.others)
        p1, R1 = self.p0_G[protocol.fixed], self.R0_GB[protocol.fixed]
        c0 = protocol.frames.coordinates(p1, R1, self.p0_G[protocol.moving], self.R0_GB[protocol.moving])
        self.flexion = c0[0] if protocol.flexion_rad is None else float(protocol.flexion_rad)
        self.c_initial = c0
        self.load = ExperimentLoad(protocol.moving, np.zeros(3), np.zeros(3), np.zeros(3))
        self.evaluations = 0

    # ---------------------------------------------------------------- unknowns <-> poses
    def x_initial(self) -> np.ndarray:
        x = np.zeros(self.n)
        x[:5] = self._coords_to_x(self.c_initial)
        return x

    def _coords_to_x(self, c: np.ndarray) -> np.ndarray:
        return np.array([c[1], c[2], c[3] / self.L, c[4] / self.L, c[5] / self.L])

    def coords(self, x: np.ndarray) -> np.ndarray:
        """Absolute JCS (6,) of the moving bone for unknowns x."""
        return np.array([self.flexion, x[0], x[1], x[2] * self.L, x[3] * self.L, x[4] * self.L])

    def poses(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Body positions (n, 3) and rotations (n, 3, 3) for unknowns x."""
        pr = self.protocol
        p = self.p0_G.copy()
        R = self.R0_GB.copy()
        p[pr.moving], R[pr.moving] = pr.frames.moving_pose(p[pr.fixed], R[pr.fixed], self.coords(x))
        for j, b in enumerate(self.others):
            seg = x[5 + 6 * j: 11 + 6 * j]
            p[b] = self.p0_G[b] + self.L * seg[:3]
            R[b] = rotvec_to_matrix(seg[3:]) @ self.R0_GB[b]
        return p, R

    def kinematics(self, x: np.ndarray) -> BodyKinematics:
        p, R = self.poses(x)
        z = np.zeros_like(p)
        return BodyKinematics(p, R, z, z.copy())

    # ---------------------------------------------------------------- residual
    def _moving_jacobian(self, x: np.ndarray) -> np.ndarray:
        """(6, 5): d(p_G, rotation)/d x[:5] of the moving body (analytic, JointFrames.moving_jacobian;
        no force evaluations)."""
        pr = self.protocol
        J = pr.frames.moving_jacobian(self.p0_G[pr.fixed], self.R0_GB[pr.fixed], self.coords(x))[:, 1:]
        J[:, 2:] *= self.L  # x[2:5] are the translations over L
        return J

    def wrench(self, kin: BodyKinematics) -> tuple[np.ndarray, np.ndarray]:
        """Net force_G and moment about each COM torque_G (n, 3) including the experiment load."""
        f, m = self.system.generalized_forces(0.0, kin)
        self.load.accumulate(0.0, kin, f, m)
        self.evaluations += 1
        return f, m

    def residual(self, x: np.ndarray, J_mov: np.ndarray | None = None) -> np.ndarray:
        """Generalized forces (n,) / L [N] at unknowns x."""
        kin = self.kinematics(x)
        f, m = self.wrench(kin)
        return self.wrench_residual(x, f, m, J_mov)

    def wrench_residual(self, x: np.ndarray, f: np.ndarray, m: np.ndarray,
                        J_mov: np.ndarray | None = None) -> np.ndarray:
        """The residual (n,) [N] that forces f (n_bodies, 3) and moments about the COMs m (n_bodies, 3)
        make at unknowns x (virtual work through the pose map; no force evaluation)."""
        mv = self.protocol.moving
        if J_mov is None:
            J_mov = self._moving_jacobian(x)
        r = np.empty(self.n)
        r[:5] = J_mov.T @ np.concatenate([f[mv], m[mv]]) / self.L
        for j, b in enumerate(self.others):
            r[5 + 6 * j: 8 + 6 * j] = f[b]
            r[8 + 6 * j: 11 + 6 * j] = m[b] / self.L
        return r

    def jacobian(self, x: np.ndarray, r: np.ndarray) -> np.ndarray:
        """d residual / d x (n, n) by forward differences (n force evaluations)."""
        J = np.empty((self.n, self.n))
        for i in range(self.n):
            xi = x.copy()
            xi[i] += self.fd_step
            J[:, i] = (self.residual(xi) - r) / self.fd_step
        return J

    def central_jacobian(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(J, δJ, r): d residual / d x (n, n) by central differences (2n force evaluations), a bound
        on its error δJ (n, n) — half the gap between the forward and the backward quotient, what the
        force's noise over the step and its curvature make of it — and the residual r (n,) at x."""
        r = self.residual(x)
        fwd, bwd = np.empty((self.n, self.n)), np.empty((self.n, self.n))
        for i in range(self.n):
            xp, xm = x.copy(), x.copy()
            xp[i] += self.fd_step
            xm[i] -= self.fd_step
            fwd[:, i] = (self.residual(xp) - r) / self.fd_step
            bwd[:, i] = (r - self.residual(xm)) / self.fd_step
        return 0.5 * (fwd + bwd), 0.5 * np.abs(fwd - bwd), r

    def step_limits(self) -> np.ndarray:
        """Largest move per unknown in one Newton step (n,): ``max_rotation_rad`` for angles and
        ``max_translation_m`` / L for translations (contact is stiff: keep steps short)."""
        lim = np.empty(self.n)
        lim[:2] = self.max_rotation_rad
        lim[2:5] = self.max_translation_m / self.L
        for j in range(len(self.others)):
            lim[5 + 6 * j: 8 + 6 * j] = self.max_translation_m / self.L
            lim[8 + 6 * j: 11 + 6 * j] = self.max_rotation_rad
        return lim

    def solve(self, x: np.ndarray, J: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, int, float]:
        """Newton–Broyden from x (and an optional Jacobian); returns (x, J, iterations, |r|_inf).

        Steps are limited per unknown (:meth:`step_limits`) and back-tracked (Armijo); a stale
        Jacobian is refreshed by finite differences when a step fails; with a fresh one the best
        trial point is taken if it lowers |r| at all (kinks where contact points switch on or off).
        """
        x = np.array(x, float)
        r = self.residual(x)
        fresh = False
        if J is None:
            J, fresh = self.jacobian(x, r), True
        limits = self.step_limits()
        failures = 0
        for it in range(self.max_iter):
            norm = float(np.max(np.abs(r)))
            if norm < self.tol_N:
                return x, J, it, norm
            try:
                dx = np.linalg.solve(J, -r)
            except np.linalg.LinAlgError:
                dx = np.linalg.lstsq(J, -r, rcond=None)[0]
            over = float(np.max(np.abs(dx) / limits))
            if over > 1.0:
                dx = dx / over
            t, accepted = 1.0, False
            n0 = float(np.linalg.norm(r))
            best = (np.inf, 0.0, r)
            while t >= 1.0 / 16:
                r_new = self.residual(x + t * dx)
                r2 = float(np.linalg.norm(r_new))
                if r2 < best[0]:
                    best = (r2, t, r_new)
                if r2 <= (1.0 - 1e-4 * t) * n0:
                    accepted = True
                    break
                t *= 0.5
            if not accepted:
                if not fresh:  # a stale (Broyden / previous step) Jacobian: refresh and retry
                    J, fresh = self.jacobian(x, r), True
                    continue
                failures += 1
                if best[0] < n0 and failures <= 5:  # any decrease: take it, then a fresh Jacobian
                    x, r = x + best[1] * dx, best[2]
                    J, fresh = self.jacobian(x, r), True
                    continue
                raise EquilibriumFailed(f"line search failed at |r| = {n0:.3g} N")
            s = t * dx
            J = J + np.outer(r_new - r - J @ s, s) / (s @ s)  # Broyden's good update
            fresh = False
            x, r = x + s, r_new
        norm = float(np.max(np.abs(r)))
        if norm < self.tol_N * 10:
            return x, J, self.max_iter, norm
        raise EquilibriumFailed(f"no equilibrium after {self.max_iter} iterations (|r| = {norm:.3g} N)")


def _limit_step(dx: np.ndarray, max_rad: float) -> np.ndarray:
    """Scale a Newton step so no unknown moves more than ``max_rad`` (rad or units of L)."""
    big = float(np.max(np.abs(dx))) if dx.size else 0.0
    return dx * (max_rad / big) if big > max_rad else dx


def load_directions(protocol: LaxityProtocol, p_G: np.ndarray,
                    R_GB: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit force direction (3,), unit torque direction (3,) in G and point r_B (3,) on the moving
    body, from the JCS axes at the pose (p_G (n, 3), R_GB (n, 3, 3))."""
    pr = protocol
    R_GI, o_I, R_GM, o_M = pr.frames.frames_G(p_G[pr.fixed], R_GB[pr.fixed], p_G[pr.moving], R_GB[pr.moving])
    e1 = R_GI[:, 0]
    e3 = R_GM[:, 2]
    e2 = np.cross(e3, e1)
    e2 /= np.linalg.norm(e2)
    zero = np.zeros(3)
    point_G = o_M if pr.load_point_B is None else p_G[pr.moving] + R_GB[pr.moving] @ np.asarray(pr.load_point_B, float)
    if pr.load_kind == "varus_valgus":
        force, torque = e1, zero
        if pr.load_point_B is None:
            point_G = o_M - pr.lever_m * e3
    elif pr.load_kind == "anterior_posterior":
        force, torque = e2, zero
    elif pr.load_kind == "internal_external":
        force, torque = zero, e3
    else:  # compression
        force, torque = e3, zero
    r_B = R_GB[pr.moving].T @ (point_G - p_G[pr.moving])
    return force.copy(), torque.copy(), r_B


def jcs_axes_G(protocol: LaxityProtocol, p_G: np.ndarray, R_GB: np.ndarray) -> np.ndarray:
    """(3, 3) columns e1, e2 (unit), e3 of the JCS at the pose p_G (n, 3), R_GB (n, 3, 3)."""
    pr = protocol
    R_GI, _, R_GM, _ = pr.frames.frames_G(p_G[pr.fixed], R_GB[pr.fixed], p_G[pr.moving], R_GB[pr.moving])
    e1, e3 = R_GI[:, 0], R_GM[:, 2]
    e2 = np.cross(e3, e1)
    return np.column_stack([e1, e2 / np.linalg.norm(e2), e3])


def preload_vectors(protocol: LaxityProtocol, p_G: np.ndarray, R_GB: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The protocol's constant preload at the pose: force_G (3,), torque_G (3,), point r_B (3,) on
    the moving body (the load point, else the moving origin)."""
    pr = protocol
    E = jcs_axes_G(pr, p_G, R_GB)
    if pr.load_point_B is not None:
        r_B = np.asarray(pr.load_point_B, float)
    else:
        r_B = np.asarray(pr.frames.o2_B, float)
    return E @ np.asarray(pr.preload_force, float), E @ np.asarray(pr.preload_moment, float), r_B.copy()


SMOOTH_TOL_N, SMOOTH_FD_STEP = 1e-6, 1e-7
"""Tolerance and finite-difference step for models whose forces are smooth (straight tissues)."""
CONTACT_TOL_N, CONTACT_FD_STEP = 1e-2, 1e-4
"""... and for models with mesh contact or wrapped paths, whose forces carry a noise of ~0.01 N
(contact points switching, path solver tolerance): the step must dwarf it. 0.01 N on the moment
residual is ~1e-3 N·m, i.e. < 0.01° at elbow stiffness."""


def solver_defaults(system) -> tuple[float, float]:
    """(tol_N, fd_step) suited to the system: smooth (every extra element says ``smooth = True``), or
    with mesh contact / wrapping."""
    rough = any(not getattr(e, "smooth", False) for e in getattr(system, "extra_elements", ())) or (
        getattr(system, "path_provider", None) is not None)
    return (CONTACT_TOL_N, CONTACT_FD_STEP) if rough else (SMOOTH_TOL_N, SMOOTH_FD_STEP)


MAX_LOAD_BISECTIONS = 4
"""A load step whose Newton solve fails is approached through up to this many halvings of the step
(load continuation), so coarse load steps on stiff contact still solve."""


def run_sweep(
    system,
    protocol: LaxityProtocol,
    p0_G: np.ndarray,
    q0_GB: np.ndarray,
    *,
    warm_start: bool = True,
    reuse_jacobian: bool = True,
    tol_N: float | None = None,
    fd_step: float | None = None,
    progress: Callable[[int, int, float, float], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    warm_from: SweepStarts | None = None,
    fresh_jacobians: bool = False,
    parameter_wrench: "ParameterWrench | None" = None,
) -> LaxityResult:
    """Solve the unloaded pose, then one equilibrium per load of ``protocol.loads``.

    system: a MechanicalSystem; p0_G (n, 3), q0_GB (n, 4): the initial pose of every body.
    warm_start: start each step from the nearest solved load's pose and Jacobian (False: from the
    unloaded pose with a fresh Jacobian, the baseline). reuse_jacobian=False: warm-started poses but a
    fresh finite-difference Jacobian at every step (the baseline where a cold start cannot reach the
    larger loads of a stiff contact model). A step that fails is reached by load continuation
    (:data:`MAX_LOAD_BISECTIONS`, warm start only). tol_N, fd_step: default by
    :func:`solver_defaults`. progress(done, total, load, value) after each
    step (``value`` in the measure's unit); cancel() polled between steps raises SweepCancelled.
    warm_from: the ``starts`` of a sweep of a nearby model (same bodies and protocol, other tissue
    parameters): the unloaded pose and each load start from that sweep's solution at the same load
    (with its Jacobian) instead of this sweep's nearest load. The result's ``starts`` serve the next.
    fresh_jacobians: after each load (and the unloaded pose) measure the residual and a fresh
    finite-difference Jacobian at the solution (n + 1 force evaluations) and keep them in ``starts``:
    a sweep warm-started from them then takes a Newton step or two per load.
    parameter_wrench(kin): how the forces on the bodies change per unit of each of p model parameters
    at a pose (:data:`ParameterWrench`); given, the result carries ``sensitivity`` (k, p), the
    derivative of the measure at each load by the implicit-function theorem
    (:func:`sweep_sensitivity`: central-difference Jacobians at the solutions, measured after the
    sweep; the starts keep them).
    """
    t0 = time.perf_counter()
    d_tol, d_step = solver_defaults(system)
    solver = QuasiStaticSolver(system, protocol, p0_G, q0_GB, tol_N=d_tol if tol_N is None else tol_N,
                               fd_step=d_step if fd_step is None else fd_step)
    idx, factor, unit = parse_measure(protocol.measure)
    solver.load.magnitude = 0.0
    solver.load.set_preload(protocol, *solver.poses(solver.x_initial()))
    try:
        x_ref, J_ref, _, _ = solver.solve(*(warm_from.reference if warm_from is not None else (solver.x_initial(),)))
    except EquilibriumFailed as exc:
        exc.partial, exc.load = None, None
        raise
    measured_residuals: dict[float, np.ndarray] = {}
    if fresh_jacobians:
        measured_residuals[0.0] = solver.residual(x_ref)
        J_ref = solver.jacobian(x_ref, measured_residuals[0.0])
    p_ref, R_ref = solver.poses(x_ref)
    f_dir, t_dir, r_B = load_directions(protocol, p_ref, R_ref)
    solver.load.r_B, solver.load.force_dir_G, solver.load.torque_dir_G = r_B, f_dir, t_dir
    c_ref = solver.coords(x_ref)
    loads = np.asarray(protocol.loads, float)
    k = loads.size
    m = system.tissues.count
    out = dict(coords=np.zeros((k, 6)), tension=np.zeros((k, m)), extra=np.zeros(k), iters=np.zeros(k, int),
               evals=np.zeros(k, int), res=np.zeros(k), p=np.zeros((k, 3)), q=np.zeros((k, 4)))
    solved: list[tuple[float, np.ndarray, np.ndarray]] = [(0.0, x_ref, J_ref)]

    def result(n_done: int) -> LaxityResult:
        c = out["coords"][:n_done]
        return LaxityResult(loads[:n_done], c, c[:, idx] * factor, unit, protocol.measure,
                            out["tension"][:n_done], list(system.tissues.names), out["extra"][:n_done],
                            out["iters"][:n_done], out["evals"][:n_done], out["res"][:n_done],
                            out["p"][:n_done], out["q"][:n_done], c_ref, time.perf_counter() - t0,
                            final_y=None, starts=SweepStarts((x_ref, J_ref), list(solved), solver.tol_N, solver.L,
                                                                 dict(measured_residuals)))

    for i, load in enumerate(loads):
        if cancel is not None and cancel():
            raise SweepCancelled(result(i))
        x_secant = None
        if warm_start:
            near, x_start, J_start = min(reversed(solved), key=lambda s: abs(s[0] - load))
            step = secant_step([s[0] for s in solved], near, float(load))
            if step is not None:
                x_secant = x_start + step[1] * (x_start - solved[step[0]][1])
            if warm_from is not None:  # the nearby model's solution at this load beats another load's
                same = [s for s in warm_from.solved if s[0] == load]
                if same:
                    _, x_start, J_start = same[-1]
                    x_secant = None
            if not reuse_jacobian:
                J_start = None
        else:
            x_start, J_start = x_ref, None
        e0 = solver.evaluations
        try:
            solved_secant = None
            if x_secant is not None:
                solver.load.magnitude = float(load)
                try:
                    solved_secant = solver.solve(x_secant, J_start)
                except EquilibriumFailed:
                    pass  # the extrapolation misled: from the solved pose itself
            x, J, iters, res = solved_secant or _solve_with_continuation(
                solver, float(load), x_start, J_start, solved, MAX_LOAD_BISECTIONS if warm_start else 0,
                reuse_jacobian)
        except EquilibriumFailed as exc:
            exc.partial, exc.load = result(i), float(load)
            raise
        if fresh_jacobians:
            measured_residuals[float(load)] = solver.residual(x)
            J = solver.jacobian(x, measured_residuals[float(load)])
        solved.append((float(load), x, J))
        kin = solver.kinematics(x)
        out["coords"][i] = solver.coords(x) - c_ref
        out["tension"][i] = system.tissue_forces.evaluate(0.0, kin).tension
        out["extra"][i] = _extra_force(system, kin, protocol.moving)
        out["iters"][i], out["evals"][i], out["res"][i] = iters, solver.evaluations - e0, res
        out["p"][i] = kin.p_G[protocol.moving]
        out["q"][i] = matrix_to_quat(kin.R_GB[protocol.moving][None])[0]
        if progress is not None:
            progress(i + 1, k, float(load), float(out["coords"][i, idx] * factor))
    res = result(k)
    if parameter_wrench is not None:
        res.sensitivity = _sensitivity(solver, res, parameter_wrench, refresh=True)
    return res


def sweep_sensitivity(system, protocol: LaxityProtocol, p0_G: np.ndarray, q0_GB: np.ndarray, result: LaxityResult,
                      parameter_wrench: "ParameterWrench", *, tol_N: float | None = None,
                      fd_step: float | None = None, refresh: bool = True) -> np.ndarray:
    """d measure / d parameters (k, p) at the loads of a finished :func:`run_sweep` result (same
    system, protocol and initial pose; tol_N and fd_step as that sweep had them), by
    :func:`equilibrium_sensitivity`. refresh: first measure a central-difference Jacobian at the
    unloaded pose and at each load's solution (2n force evaluations each; the Newton's own is a
    Broyden update, exact only along the steps it took, and a forward difference on mesh contact
    is off by up to 40 % at the demo's 100 N) with its error bound, and keep them in
    ``result.starts``, so sweeps warm-started from it start from them. Sets and returns
    ``result.sensitivity`` (and ``result.sensitivity_error``: the bound that the Jacobians' error
    allows, zero without refresh)."""
    d_tol, d_step = solver_defaults(system)
    solver = QuasiStaticSolver(system, protocol, p0_G, q0_GB, tol_N=d_tol if tol_N is None else tol_N,
                               fd_step=d_step if fd_step is None else fd_step)
    solver.load.set_preload(protocol, *solver.poses(solver.x_initial()))
    result.sensitivity = _sensitivity(solver, result, parameter_wrench, refresh)
    return result.sensitivity


def _sensitivity(solver: QuasiStaticSolver, result: LaxityResult, parameter_wrench: "ParameterWrench",
                 refresh: bool) -> np.ndarray:
    """:func:`sweep_sensitivity` with the sweep's solver (its preload set)."""
    starts = result.starts
    if starts is None:
        raise ValueError("the sweep result keeps no solutions (starts)")
    x_ref, J_ref = starts.reference
    dJ_ref = np.zeros_like(J_ref)
    solver.load.magnitude = 0.0
    if refresh:
        J_ref, dJ_ref, r0 = solver.central_jacobian(x_ref)
        starts.reference = (x_ref, J_ref)
        starts.residuals[0.0] = r0
    p_ref, R_ref = solver.poses(x_ref)
    f_dir, t_dir, r_B = load_directions(solver.protocol, p_ref, R_ref)
    solver.load.r_B, solver.load.force_dir_G, solver.load.torque_dir_G = r_B, f_dir, t_dir
    reported = []
    for load in np.asarray(result.loads, float):
        at = [i for i, s in enumerate(starts.solved) if s[0] == load]
        if not at:
            raise ValueError(f"load {load:g} was not solved")
        _, x, J = starts.solved[at[-1]]
        dJ = np.zeros_like(J)
        if refresh:
            solver.load.magnitude = float(load)
            J, dJ, r = solver.central_jacobian(x)
            starts.solved[at[-1]] = (float(load), x, J)
            starts.residuals[float(load)] = r
        reported.append((float(load), x, J, dJ))
    solver.load.magnitude = 0.0
    sens, err = equilibrium_sensitivity(solver, (x_ref, J_ref, dJ_ref), reported, parameter_wrench)
    result.sensitivity_error = err
    return sens


ParameterWrench = Callable[[BodyKinematics], tuple[np.ndarray, np.ndarray]]
"""kin -> (dF (p, n_bodies, 3), dM (p, n_bodies, 3)): the change of the force on each body and of its
moment about the body's centre of mass per unit of each of p model parameters, at a fixed pose (for
a stiffness scale of a group of tissues: that group's own forces at unit scale)."""

LOAD_DIRECTION_STEP = 1e-6
"""Central-difference step in the unknowns (rad, units of L) of the load directions' dependence on
the unloaded pose (pure geometry, smooth)."""


SLACK_STEP = 1e-6
"""Central-difference step of a slack (rest-length) scale in :func:`tissue_parameter_wrench` (the
stiffness scales need none: the tissue laws are linear in their coefficients)."""


def tissue_parameter_wrench(tissues, provider, rows: list[np.ndarray], n_bodies: int, stiffness: np.ndarray,
                            slack: np.ndarray | None = None, use_numba: bool | None = None) -> ParameterWrench:
    """The :data:`ParameterWrench` of stiffness scales (then slack scales) of groups of tissues.

    tissues: the model's TissueSet *before* scaling (coefficients and rest lengths at scale 1);
    provider: its path provider; rows: the tissue rows of each group (p groups); stiffness (p,) and
    slack (p,): the current scales (slack None: 1, and no slack parameters). Parameters: the
    stiffness scale of each group — the forces are linear in it, so d/ds_j is that group's own force
    at unit scale with the current rest lengths, one evaluation of the tissues —, then with ``slack``
    the slack scale of each group (central difference of the group's force at its current stiffness
    in its rest lengths, :data:`SLACK_STEP`)."""
    from dataclasses import replace as _replace

    from jointmodeller.core.mechanics.tissue_force import TissueForces, _ReindexedProvider, _subset

    p = len(rows)
    rows = [np.asarray(r, np.int64) for r in rows]
    l_scale = np.ones(tissues.count)
    if slack is not None:
        for j, r in enumerate(rows):
            l_scale[r] = slack[j]
    rest = tissues.rest_length * l_scale

    def group(j: int, k_factor: float, rest_factor: float) -> TissueForces:
        """The tissues of group j alone (their paths only), coefficients × k_factor, rest lengths
        at the current slack × rest_factor."""
        r = rows[j]
        sub = _subset(_replace(tissues, coeffs=tissues.coeffs * k_factor, rest_length=rest * rest_factor), r)
        return TissueForces(sub, None if provider is None else _ReindexedProvider(provider, r), use_numba)

    elements = [group(j, 1.0, 1.0) for j in range(p)]
    slack_elements = []
    if slack is not None:
        for j in range(p):
            slack_elements.append([group(j, float(stiffness[j]), 1.0 + sign * SLACK_STEP / float(slack[j]))
                                   for sign in (1.0, -1.0)])

    def wrench(kin: BodyKinematics) -> tuple[np.ndarray, np.ndarray]:
        q = p + len(slack_elements)
        dF, dM = np.zeros((q, n_bodies, 3)), np.zeros((q, n_bodies, 3))
        for j, el in enumerate(elements):
            el.accumulate(0.0, kin, dF[j], dM[j])
        for j, (plus, minus) in enumerate(slack_elements):
            fp, mp_ = np.zeros((n_bodies, 3)), np.zeros((n_bodies, 3))
            fm, mm = np.zeros((n_bodies, 3)), np.zeros((n_bodies, 3))
            plus.accumulate(0.0, kin, fp, mp_)
            minus.accumulate(0.0, kin, fm, mm)
            dF[p + j] = (fp - fm) / (2.0 * SLACK_STEP)
            dM[p + j] = (mp_ - mm) / (2.0 * SLACK_STEP)
        return dF, dM

    return wrench


def equilibrium_sensitivity(solver: QuasiStaticSolver, reference: tuple[np.ndarray, np.ndarray, np.ndarray],
                            reported: list[tuple[float, np.ndarray, np.ndarray, np.ndarray]],
                            parameter_wrench: ParameterWrench) -> tuple[np.ndarray, np.ndarray]:
    """d measure / d parameters (k, p) at the solutions of a sweep, by the implicit-function theorem.

    At each solved load the equilibrium satisfies r(x*, p) = 0, so dx*/dp = −J⁻¹ ∂r/∂p with J the
    Newton Jacobian at the solution (the sweep's fresh finite-difference one) and ∂r/∂p the
    parameters' forces (``parameter_wrench``) through the residual's virtual-work map — no force
    evaluation of the whole model. The load's directions are fixed at the unloaded pose x_ref, which
    moves with p too: ∂r/∂p at a load gains (∂r_load/∂x_ref) dx_ref/dp (central differences of the
    load alone, no force evaluation). The measure is a JCS coordinate relative to the unloaded pose,
    linear in the unknowns: dm/dp = scale · (dx/dp − dx_ref/dp) along its row.

    Contact: at a fixed pose a tissue parameter changes no contact force, so ∂r/∂p holds none; the
    contact's response enters through J, measured over the finite-difference step, with the contact
    points active at the solution (the set the sweep's own Newton sees there).

    Error: with δJ a bound on the error of each J, dx/dp is off by at most |J⁻¹| δJ |dx/dp| (first
    order), and a load's by |J⁻¹| |∂r_load/∂x_ref| times the unloaded pose's.

    reference: (x_ref, J_ref, δJ_ref) of the unloaded pose; reported: (load, x, J, δJ) per load in
    order. Returns (dm/dp (k, p), its error bound (k, p)) in the measure's unit per unit parameter.
    """
    idx, factor, _ = parse_measure(solver.protocol.measure)
    row = idx - 1
    scale = factor * (solver.L if row >= 2 else 1.0)
    x_ref, J_ref, dJ_ref = reference

    def d_residual(x: np.ndarray, J_mov: np.ndarray) -> np.ndarray:
        dF, dM = parameter_wrench(solver.kinematics(x))
        return np.column_stack([solver.wrench_residual(x, dF[j], dM[j], J_mov) for j in range(dF.shape[0])])

    dx_ref = -np.linalg.solve(J_ref, d_residual(x_ref, solver._moving_jacobian(x_ref)))
    err_ref = np.abs(np.linalg.inv(J_ref)) @ (dJ_ref @ np.abs(dx_ref))
    out = np.zeros((len(reported), dx_ref.shape[1]))
    bound = np.zeros_like(out)
    if row < 0:  # the flexion is held: it has no sensitivity
        return out, bound
    h = LOAD_DIRECTION_STEP
    directions = []
    for kcol in range(solver.n):  # the load's directions from the unloaded pose moved along each unknown
        pair = []
        for sign in (1.0, -1.0):
            xr = x_ref.copy()
            xr[kcol] += sign * h
            pair.append(load_directions(solver.protocol, *solver.poses(xr)))
        directions.append(pair)
    moving = solver.protocol.moving
    n_bodies = solver.p0_G.shape[0]
    for i, (load, x, J, dJ) in enumerate(reported):
        J_mov = solver._moving_jacobian(x)
        dr = d_residual(x, J_mov)
        G = np.zeros((solver.n, solver.n))
        if load != 0.0:
            kin = solver.kinematics(x)
            for kcol, pair in enumerate(directions):
                rs = []
                for f_dir, t_dir, r_B in pair:
                    f, m = np.zeros((n_bodies, 3)), np.zeros((n_bodies, 3))
                    ExperimentLoad(moving, r_B, f_dir, t_dir, load).accumulate(0.0, kin, f, m)
                    rs.append(solver.wrench_residual(x, f, m, J_mov))
                G[:, kcol] = (rs[0] - rs[1]) / (2.0 * h)
            dr = dr + G @ dx_ref
        dx = -np.linalg.solve(J, dr)
        out[i] = scale * (dx[row] - dx_ref[row])
        err = np.abs(np.linalg.inv(J)) @ (dJ @ np.abs(dx) + np.abs(G) @ err_ref)
        bound[i] = abs(scale) * (err[row] + err_ref[row])
    return out, bound


def _solve_with_continuation(solver: QuasiStaticSolver, load: float, x_start: np.ndarray,
                             J_start: np.ndarray | None, solved: list, depth: int, reuse_jacobian: bool = True):
    """Solve at ``load``; when Newton fails, solve half-way from the nearest solved load first and
    retry from there (up to ``depth`` halvings; the intermediate equilibria join ``solved`` as warm
    starts but are not reported). Returns what QuasiStaticSolver.solve returns."""
    solver.load.magnitude = load
    try:
        return solver.solve(x_start, J_start)
    except EquilibriumFailed:
        if depth <= 0:
            raise
    near_load, x_near, J_near = min(reversed(solved), key=lambda s: abs(s[0] - load))
    mid = 0.5 * (near_load + load)
    xm, Jm, _, _ = _solve_with_continuation(solver, mid, x_near, J_near if reuse_jacobian else None, solved,
                                            depth - 1, reuse_jacobian)
    solved.append((mid, xm, Jm))
    return _solve_with_continuation(solver, load, xm, Jm if reuse_jacobian else None, solved, depth - 1,
                                    reuse_jacobian)


def _extra_force(system, kin: BodyKinematics, body: int) -> float:
    """|Net force| of the system's extra elements (contact, wrapped tissues) on ``body`` [N]."""
    if not system.extra_elements:
        return 0.0
    f = np.zeros_like(kin.p_G)
    m = np.zeros_like(kin.p_G)
    for element in system.extra_elements:
        element.accumulate(0.0, kin, f, m)
    return float(np.linalg.norm(f[body]))


def _reference_tol(sweep_tol: float) -> float:
    """Tolerance of a linear model's reference pose: far below a smooth sweep's, and a tenth of a
    rough (contact) sweep's, whose noise floor is near its tolerance."""
    return sweep_tol * (1e-3 if sweep_tol <= SMOOTH_TOL_N else 0.1)


def linear_sweep(system, protocol: LaxityProtocol, p0_G: np.ndarray, q0_GB: np.ndarray,
                 loads: np.ndarray | None = None, tol_N: float | None = None) -> np.ndarray:
    """The linear small-motion model's curve: JCS displacement (k, 6) = K⁻¹ · (generalized load),
    with the stiffness K of the held-flexion coordinates taken at the unloaded equilibrium by
    central differences (seed 004 §3.1). loads (k,) default: the protocol's. tol_N default: 1e-3 of
    :func:`solver_defaults` (the reference pose must be tighter than the sweep's)."""
    d_tol, d_step = solver_defaults(system)
    solver = QuasiStaticSolver(system, protocol, p0_G, q0_GB, tol_N=_reference_tol(d_tol) if tol_N is None else tol_N,
                               fd_step=d_step)
    solver.load.magnitude = 0.0
    solver.load.set_preload(protocol, *solver.poses(solver.x_initial()))
    x_ref, _, _, _ = solver.solve(solver.x_initial())
    p_ref, R_ref = solver.poses(x_ref)
    f_dir, t_dir, r_B = load_directions(protocol, p_ref, R_ref)
    h = max(1e-6, d_step)
    J = np.empty((solver.n, solver.n))
    for i in range(solver.n):
        xp, xm = x_ref.copy(), x_ref.copy()
        xp[i] += h
        xm[i] -= h
        J[:, i] = (solver.residual(xp) - solver.residual(xm)) / (2 * h)
    solver.load.r_B, solver.load.force_dir_G, solver.load.torque_dir_G = r_B, f_dir, t_dir
    solver.load.magnitude = 1.0
    q_unit = solver.residual(x_ref)  # unloaded residual is ~0, so this is the load's share per unit
    solver.load.magnitude = 0.0
    q_unit = q_unit - solver.residual(x_ref)
    dx_unit = np.linalg.solve(J, -q_unit)
    loads = np.asarray(protocol.loads if loads is None else loads, float)
    c_ref = solver.coords(x_ref)
    return np.array([solver.coords(x_ref + lo * dx_unit) - c_ref for lo in loads])


def absolute_coordinates(frames: JointFrames, fixed: int, moving: int, p_G: np.ndarray, R_GB: np.ndarray) -> np.ndarray:
    """JCS (6,) of ``moving`` relative to ``fixed`` for body poses p_G (n, 3), R_GB (n, 3, 3)."""
    return jcs_coordinates(*frames.frames_G(p_G[fixed], R_GB[fixed], p_G[moving], R_GB[moving]))


def linear_sweep_assembled(system, protocol: LaxityProtocol, p0_G: np.ndarray, q0_GB: np.ndarray,
                           loads: np.ndarray | None = None, tol_N: float | None = None) -> np.ndarray:
    """The same linear curve (k, 6) as :func:`linear_sweep`, but from the assembled 6n×6n stiffness
    matrix of :mod:`jointmodeller.core.studies.linear_model` (seed 004 §3.1), projected on the
    held-flexion coordinates: K_c = J_cᵀ K J_c with J_c = d(δp_G, δθ_G)/d(β, γ, q). Only for systems
    whose moving bone is the one free body."""
    from jointmodeller.core.studies.linear_model import body_dofs, stiffness_and_damping

    d_tol, d_step = solver_defaults(system)
    solver = QuasiStaticSolver(system, protocol, p0_G, q0_GB, tol_N=_reference_tol(d_tol) if tol_N is None else tol_N,
                               fd_step=d_step)
    if solver.others:
        raise ValueError("linear_sweep_assembled needs the moving bone to be the only free body")
    x_ref, _, _, _ = solver.solve(solver.x_initial())
    kin = solver.kinematics(x_ref)
    K, _ = stiffness_and_damping(system, kin)
    dofs = body_dofs(protocol.moving)
    J_c = solver._moving_jacobian(x_ref)
    K_c = J_c.T @ K[np.ix_(dofs, dofs)] @ J_c
    p_ref, R_ref = solver.poses(x_ref)
    f_dir, t_dir, r_B = load_directions(protocol, p_ref, R_ref)
    arm_G = R_ref[protocol.moving] @ r_B
    w_unit = np.concatenate([f_dir, t_dir + np.cross(arm_G, f_dir)])
    dx_unit = np.linalg.solve(K_c, J_c.T @ w_unit)
    loads = np.asarray(protocol.loads if loads is None else loads, float)
    c_ref = solver.coords(x_ref)
    return np.array([solver.coords(x_ref + lo * dx_unit) - c_ref for lo in loads])


# ------------------------------------------------------------------------------------------------
# the same sweep on a multibody tree (joints, locked coordinates, constraints)
# ------------------------------------------------------------------------------------------------
def secant_step(loads: list[float], near: float, target: float) -> tuple[int, float] | None:
    """How to carry the solution at load ``near`` on to ``target`` along the secant of the last two
    solutions on the way (x + ratio · (x − x_before)): (index in ``loads`` of the solved load just
    behind ``near``, ratio = (target − near)/(near − before)); None when no solved load lies behind
    ``near`` or the extrapolation would be longer than the secant. Newton then starts about one
    step's curvature from the answer instead of one step's displacement."""
    behind = [i for i, f in enumerate(loads) if f != near and (near - f) * (target - near) > 0]
    if not behind or target == near:
        return None
    i = min(behind, key=lambda j: (abs(loads[j] - near), -j))
    ratio = (target - near) / (near - loads[i])
    return (i, ratio) if 0.0 < ratio <= 1.0 else None


def secant_start(tree, solved: list, near: float, state, target: float):
    """The start for the load ``target`` of a tree sweep: the solved state at load ``near`` carried on
    along the secant (:func:`secant_step`, quaternions renormalised); the solved state itself when
    there is no secant."""
    step = secant_step([f for f, _ in solved], near, target)
    if step is None:
        return state
    i, ratio = step
    q = tree.normalize(state.q + ratio * (state.q - solved[i][1].q))
    return State(state.t, q, np.zeros_like(state.u))


def run_tree_sweep(
    tree,
    state0,
    mech_system,
    poses: Callable[[np.ndarray], BodyKinematics],
    protocol: LaxityProtocol,
    load: ExperimentLoad,
    *,
    tol_N: float | None = None,
    max_iterations: int = 60,
    progress: Callable[[int, int, float, float], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    equilibrium: Callable | None = None,
    on_solved: Callable[[np.ndarray], None] | None = None,
) -> LaxityResult:
    """The laxity sweep on a multibody tree: each load's equilibrium in the tree's own coordinates
    (core.studies.tree_equilibrium), the flexion held by the joint's locked flexion coordinate.

    tree: the MultibodySystem, whose force elements include ``load`` (an ExperimentLoad in the body
    order of ``mech_system``, its magnitude set here step by step); state0: the tree's initial state;
    mech_system: the force elements' own system (tissues, extra elements: tensions and contact are
    reported from it); poses(q): the force elements' BodyKinematics at tree coordinates q (at rest);
    protocol: bodies (indices of mech_system), frames, loads and measure, as for :func:`run_sweep`.
    A step that fails is approached by load continuation, as there. tol_N: residual tolerance, force
    [N] and moment per model length [N·m / L] (default :func:`solver_defaults`). equilibrium(state,
    force_tol, moment_tol): the tree's equilibrium solver (default: Newton in tree coordinates; with
    contact the app passes its frozen-contact-set solver). on_solved(q): called with each load step's
    solved coordinates (the unloaded pose first), e.g. to show the pose while the sweep runs.
    """
    from jointmodeller.core.studies.tree_equilibrium import solve_tree_equilibrium

    t0 = time.perf_counter()
    L = float(mech_system.length_scale)
    tol = solver_defaults(mech_system)[0] if tol_N is None else float(tol_N)
    idx, factor, unit = parse_measure(protocol.measure)
    evaluations = [0]

    def solve(state, magnitude: float):
        load.magnitude = float(magnitude)
        if equilibrium is not None:
            res = equilibrium(state, tol, tol * L)
        else:
            res = solve_tree_equilibrium(tree, state, length_scale=L, force_tol=tol, moment_tol=tol * L,
                                         max_iterations=max_iterations, cancel=cancel)
        evaluations[0] += res.evaluations
        if not res.converged:
            if cancel is not None and cancel():
                raise SweepCancelled(result(done[0]))
            raise EquilibriumFailed(res.message)
        return res

    def coords(q: np.ndarray) -> np.ndarray:
        kin = poses(q)
        return protocol.frames.coordinates(kin.p_G[protocol.fixed], kin.R_GB[protocol.fixed],
                                           kin.p_G[protocol.moving], kin.R_GB[protocol.moving])

    loads = np.asarray(protocol.loads, float)
    k = loads.size
    m = mech_system.tissues.count
    out = dict(coords=np.zeros((k, 6)), tension=np.zeros((k, m)), extra=np.zeros(k), iters=np.zeros(k, int),
               evals=np.zeros(k, int), res=np.zeros(k), p=np.zeros((k, 3)), q=np.zeros((k, 4)))
    done = [0]
    c_ref = np.zeros(6)

    def result(n_done: int) -> LaxityResult:
        c = out["coords"][:n_done]
        return LaxityResult(loads[:n_done], c, c[:, idx] * factor, unit, protocol.measure,
                            out["tension"][:n_done], list(mech_system.tissues.names), out["extra"][:n_done],
                            out["iters"][:n_done], out["evals"][:n_done], out["res"][:n_done],
                            out["p"][:n_done], out["q"][:n_done], c_ref, time.perf_counter() - t0)

    kin0 = poses(state0.q)
    load.set_preload(protocol, kin0.p_G, kin0.R_GB)
    ref = solve(state0, 0.0)
    if on_solved is not None:
        on_solved(ref.state.q)
    kin_ref = poses(ref.state.q)
    c_ref[:] = coords(ref.state.q)
    f_dir, t_dir, r_B = load_directions(protocol, kin_ref.p_G, kin_ref.R_GB)
    load.r_B, load.force_dir_G, load.torque_dir_G = r_B, f_dir, t_dir
    solved = [(0.0, ref.state)]

    def reach(target: float, depth: int):
        near, st = min(reversed(solved), key=lambda s: abs(s[0] - target))
        start = secant_start(tree, solved, near, st, target)
        try:
            return solve(start, target)
        except EquilibriumFailed:
            if start is not st:  # the extrapolation misled: from the solved pose itself
                try:
                    return solve(st, target)
                except EquilibriumFailed:
                    pass
            if depth <= 0:
                raise
        mid = 0.5 * (near + target)
        solved.append((mid, reach(mid, depth - 1).state))
        return reach(target, depth - 1)

    for i, magnitude in enumerate(loads):
        if cancel is not None and cancel():
            raise SweepCancelled(result(i))
        e0 = evaluations[0]
        try:
            res = reach(float(magnitude), MAX_LOAD_BISECTIONS)
        except EquilibriumFailed as exc:
            exc.partial, exc.load = result(i), float(magnitude)
            raise
        solved.append((float(magnitude), res.state))
        kin = poses(res.state.q)
        out["coords"][i] = coords(res.state.q) - c_ref
        out["tension"][i] = mech_system.tissue_forces.evaluate(0.0, kin).tension
        out["extra"][i] = _extra_force(mech_system, kin, protocol.moving)
        out["iters"][i], out["evals"][i] = res.iterations, evaluations[0] - e0
        out["res"][i] = max(res.residual_force_N, res.residual_moment_Nm / L)
        out["p"][i] = kin.p_G[protocol.moving]
        out["q"][i] = matrix_to_quat(kin.R_GB[protocol.moving][None])[0]
        done[0] = i + 1
        if progress is not None:
            progress(i + 1, k, float(magnitude), float(out["coords"][i, idx] * factor))
        if on_solved is not None:
            on_solved(res.state.q)
    return result(k)
