"""Static equilibrium: the pose where every free body carries zero net force and moment.

Newton's method on the residual ``g(q) = [Σ F; Σ M]`` of all free bodies at rest, with the tangent
stiffness K of the linear model (seed 004 §3.1) as Jacobian (analytic for tissues and loads, finite
differences for any other ForceElement such as contact), a backtracking line search on a scaled
residual norm, a Levenberg–Marquardt shift when K is singular, and a damped-dynamics fallback
(the bodies settle under added viscous damping) when Newton stalls.

The app runs every equilibrium study on the multibody tree (``app.mobilized``), which reaches the
same pose; this free-body solver is kept as the oracle the tests hold the tree to, and its contact
procedure (``contact_band``, ``frozen_set_motion``) is shared with the tree's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from jointmodeller.core.geometry.collision import relative_pose_B
from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.mechanics.system import MechanicalSystem
from jointmodeller.core.multibody.integrate import stop_reason
from jointmodeller.core.spatial_math import quat_multiply, rotvec_to_quat
from jointmodeller.core.state import State
from jointmodeller.core.studies.linear_model import stiffness_and_damping


def _is_cancelled(cancel) -> bool:
    """Whether the caller's cancel (a callable or an Event) says stop."""
    return stop_reason(cancel, 0.0) is not None


FORCE_TOLERANCE_N = 1e-10
MOMENT_TOLERANCE_NM = 1e-11
MAX_STEP_LENGTH = 0.05  # per Newton step, times the model length scale
MAX_STEP_ANGLE = 0.1  # rad per Newton step
MAX_SETTLE_SPAN_S = 5.0  # first damped-dynamics span at most (later spans grow 4x)
SETTLE_MAX_STEPS = 5000


@dataclass
class EquilibriumResult:
    """Outcome of :func:`solve_equilibrium`.

    state: the equilibrium (or last) state; residual_force_N / residual_moment_Nm: largest
    component over free bodies; converged; iterations (Newton); method ("newton", "newton after
    damped dynamics"); message; history: residual norms per iteration.
    """

    state: State
    residual_force_N: float
    residual_moment_Nm: float
    converged: bool
    iterations: int
    method: str
    message: str = ""
    history: list = field(default_factory=list)


class _ViscousDamping:
    """Extra dashpots -C·[v_G, w_G] on all bodies (damped-dynamics fallback only); C (6n, 6n)."""

    def __init__(self, C: np.ndarray):
        self.C = C

    def accumulate(self, t: float, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray) -> None:
        u = np.concatenate([kin.v_G, kin.w_G], axis=1).ravel()
        g = (self.C @ u).reshape(-1, 6)
        force_G -= g[:, :3]
        torque_G -= g[:, 3:]


def stiffness_floor(system: MechanicalSystem) -> np.ndarray:
    """A per-DOF stiffness scale (6n,) as if every tissue were taut: k1 summed over the tissues on
    each body (translations) and k1·r² (rotations). Regularises Newton and damps the fallback when
    slack tissues leave the tangent stiffness singular."""
    ts = system.tissues
    n = system.n_bodies
    k1 = np.abs(ts.coeffs[:, :, 0]).max(axis=1) if ts.count else np.zeros(0)
    lin = np.bincount(ts.body_a, k1, n) + np.bincount(ts.body_b, k1, n)
    r2a = np.einsum("mi,mi->m", ts.r_a_B, ts.r_a_B)
    r2b = np.einsum("mi,mi->m", ts.r_b_B, ts.r_b_B)
    rot = np.bincount(ts.body_a, k1 * r2a, n) + np.bincount(ts.body_b, k1 * r2b, n)
    w = float(np.linalg.norm(system.gravity_G)) * system.bodies.mass / system.length_scale  # weight per length
    lin = np.maximum(lin, np.maximum(w, 1e-6))
    rot = np.maximum(rot, np.maximum(w * system.length_scale**2, 1e-9))
    return np.concatenate([np.repeat(lin[:, None], 3, 1), np.repeat(rot[:, None], 3, 1)], axis=1).ravel()


def default_load_time(system: MechanicalSystem) -> float:
    """Time at which every load profile has reached its last value (statics uses the final loads)."""
    if system.loads.count == 0:
        return 0.0
    return float(np.max(system.loads.profile_t))


def residual(system: MechanicalSystem, t: float, y: np.ndarray) -> np.ndarray:
    """[force_G, torque_G] (f, 6) on the free bodies at the pose of y, at rest."""
    y = y.copy()
    n = system.n_bodies
    y[7 * n:] = 0.0
    F, T = system.generalized_forces(t, system.kinematics(y))
    free = system.bodies.free
    return np.concatenate([F[free], T[free]], axis=1)


def _apply_step(system: MechanicalSystem, y: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Move the free bodies by small-motion coordinates step (f, 6) = [δp_G, δθ_G]."""
    y = y.copy()
    p, q, _, _ = system.split(y)
    free = system.bodies.free
    p[free] += step[:, :3]
    qn = quat_multiply(rotvec_to_quat(step[:, 3:]), q[free])
    q[free] = qn / np.linalg.norm(qn, axis=1, keepdims=True)
    return y


def solve_equilibrium(
    system: MechanicalSystem,
    state: State,
    *,
    t: float | None = None,
    force_tol: float = FORCE_TOLERANCE_N,
    moment_tol: float = MOMENT_TOLERANCE_NM,
    max_iterations: int = 60,
    fallback: bool = True,
    settle_time: float | None = None,
    progress: Callable[[float], None] | None = None,
    cancel=None,
    max_wall_s: float | None = None,
) -> EquilibriumResult:
    """Find the static equilibrium starting from ``state`` (velocities are ignored and returned 0).

    t: load time (default: when all load profiles have ended). Converged when the largest residual
    force component ≤ force_tol [N] and moment component ≤ moment_tol [N·m]. ``max_wall_s``: give
    up (not converged) after this many seconds of wall time, returning the pose reached so far.
    """
    import time

    deadline = None if max_wall_s is None else time.perf_counter() + float(max_wall_s)
    user_cancel = cancel
    timed_out = [False]

    def stop() -> bool:  # the user's cancel, or the time limit
        if deadline is not None and time.perf_counter() >= deadline:
            timed_out[0] = True
            return True
        return _is_cancelled(user_cancel)

    cancel = stop

    n = system.n_bodies
    t_load = default_load_time(system) if t is None else float(t)
    free = system.bodies.free
    y = state.y
    y[7 * n:] = 0.0
    L = system.length_scale
    dofs = np.concatenate([6 * i + np.arange(6) for i in free]) if free.size else np.zeros(0, int)
    history: list[float] = []
    floor = 1e-6 * stiffness_floor(system)[dofs]

    def merit(g: np.ndarray) -> float:
        return float(np.sqrt(np.sum(g[:, :3] ** 2) + np.sum((g[:, 3:] / L) ** 2)))

    def done(g: np.ndarray) -> bool:
        return g.size == 0 or (np.abs(g[:, :3]).max() <= force_tol and np.abs(g[:, 3:]).max() <= moment_tol)

    def newton(y: np.ndarray, budget: int, move_limit: float | None = None,
               moved: Callable[[np.ndarray, np.ndarray], float] | None = None) -> tuple[np.ndarray, bool, int]:
        """Damped Newton on the current force elements. move_limit [m]: stop once moved(y, y_now)
        (a frozen contact vertex's displacement) passes it."""
        y_anchor = y
        g = residual(system, t_load, y)
        it = 0
        mu = 0.0
        while not done(g) and it < budget and not cancel():
            it += 1
            kin = system.kinematics(y)
            K = stiffness_and_damping(system, kin, t_load, damping=False)[0][np.ix_(dofs, dofs)]
            rhs = g.ravel()
            scale = np.maximum(np.abs(np.diag(K)), floor * 1e6)
            step = None
            for _ in range(8):  # Levenberg–Marquardt shift only when plain Newton fails
                try:
                    A = K + mu * np.diag(scale)
                    step = np.linalg.solve(A, rhs)
                    if np.all(np.isfinite(step)):
                        break
                except np.linalg.LinAlgError:
                    pass
                mu = max(mu * 10.0, 1e-8)
                step = None
            if step is None:
                break
            step = step.reshape(-1, 6)
            # trust region: no body moves more than MAX_STEP_LENGTH·L or turns more than MAX_STEP_ANGLE
            biggest = max(np.abs(step[:, :3]).max() / (MAX_STEP_LENGTH * L), np.abs(step[:, 3:]).max() / MAX_STEP_ANGLE)
            if biggest > 1.0:
                step = step / biggest
            m0 = merit(g)
            alpha = 1.0
            accepted = False
            for _ in range(30):  # backtracking line search
                y_try = _apply_step(system, y, alpha * step)
                g_try = residual(system, t_load, y_try)
                if np.all(np.isfinite(g_try)) and merit(g_try) < m0 * (1 - 1e-4 * alpha):
                    accepted = True
                    break
                alpha *= 0.5
            if not accepted:
                # Levenberg–Marquardt: shift towards a scaled gradient step, up to a limit
                mu = max(mu * 10.0, 1e-3)
                if mu > 1e4:
                    break
                continue
            mu = 0.0 if (alpha == 1.0 and mu < 1e-2) else (mu * 0.3 if alpha == 1.0 else mu)
            y, g = y_try, g_try
            history.append(merit(g))
            if progress is not None:
                progress(min(0.99, it / budget))
            if _is_cancelled(cancel):
                break
            if move_limit is not None and moved is not None and moved(y_anchor, y) > move_limit:
                break
        return y, done(g), it

    contacts = [el for el in system.extra_elements if hasattr(el, "frozen")]
    # with contact the regenerated contact set makes the residual only piecewise smooth, and a free
    # Newton step (up to MAX_STEP_LENGTH·L) can carry a bone through the cartilage: contact problems
    # go straight to the frozen sets, whose steps are bounded by the contact band
    if contacts:
        y_new, ok, its = y, done(residual(system, t_load, y)), 0
    else:
        y_new, ok, its = newton(y, max_iterations)
    method = "newton"
    if contacts and not ok and not _is_cancelled(cancel):
        # finish on frozen contact sets (smooth), regenerated between solves (seed 004 §3.4)
        y_new, ok, its2 = _solve_frozen_contacts(system, y_new, contacts, newton, t_load, done, cancel,
                                                 max_iterations)
        its += its2
        method = "newton, then frozen contact sets"
        fallback = False
    if not ok and fallback and not _is_cancelled(cancel):
        # damped dynamics: settle for growing spans, retrying Newton after each
        y_settled, span = y, settle_time
        for _ in range(4):
            y_settled, span = _settle(system, y_settled, t_load, span, cancel)
            y2, ok2, its2 = newton(y_settled, max_iterations // 2)
            its += its2
            if ok2 or merit(residual(system, t_load, y2)) < merit(residual(system, t_load, y_new)):
                y_new, ok = y2, ok2
                method = "newton after damped dynamics"
            if ok or _is_cancelled(cancel):
                break
            span *= 4.0
    return _result(system, y_new, t_load, ok, its, method, timed_out[0], max_wall_s, user_cancel, progress, history)


def _result(system, y_new, t_load, ok, its, method, timed_out, max_wall_s, user_cancel, progress, history):
    """The EquilibriumResult with the true residual of all force elements at y_new."""
    g = residual(system, t_load, y_new)
    out = system.state_at(t_load, y_new)
    fmax = float(np.abs(g[:, :3]).max()) if g.size else 0.0
    mmax = float(np.abs(g[:, 3:]).max()) if g.size else 0.0
    if ok:
        message = f"equilibrium found: residual {fmax:.3g} N, {mmax:.3g} N·m"
    elif timed_out:
        message = (f"no equilibrium within the time limit of {max_wall_s:.3g} s: residual {fmax:.3g} N, "
                   f"{mmax:.3g} N·m")
    elif _is_cancelled(user_cancel):
        message = f"stopped by the user: residual {fmax:.3g} N, {mmax:.3g} N·m"
    else:
        message = (f"no equilibrium within tolerance: residual {fmax:.3g} N, {mmax:.3g} N·m "
                   "(a body may be unconstrained, or a ligament slack in every direction)")
    if progress is not None:
        progress(1.0)
    return EquilibriumResult(out, fmax, mmax, ok, its, method, message, history)



def contact_band(contacts) -> tuple[float, float]:
    """(band, move limit) [m] of frozen contact sets: the band of vertices about to touch that a
    frozen set includes, and how far a solve on one set may move the bodies before it is regenerated
    (half the band, and half a face: frozen vertices may slide about half a face before their face
    patch stops covering them)."""
    band = max(min(c.search_distance, 2.0 * c.penetration_limit) for c in contacts)
    limit = min(0.5 * band, 0.5 * min(min(c.surface_a.proximity.max_edge, c.surface_b.proximity.max_edge)
                                      for c in contacts))
    return band, limit


def frozen_set_motion(frozen, kinematics: Callable[[np.ndarray], BodyKinematics]) -> Callable:
    """moved(x0, x1): the largest displacement [m] of a frozen bed vertex relative to the other body
    between two sets of coordinates x that ``kinematics`` turns into body poses (free-body state
    vectors or tree coordinates): a solve on frozen sets regenerates once this passes the limit."""

    def moved(x0, x1) -> float:
        k0, k1 = kinematics(x0), kinematics(x1)
        out = 0.0
        for f in frozen:
            for bd in f.beds:
                if len(bd.vertex):
                    bed = f.pair.surface_a if bd.bed_body == f.pair.a else f.pair.surface_b
                    v = bed.vertices_B[bd.vertex]
                    R0, p0 = relative_pose_B(k0.p_G, k0.R_GB, bd.bed_body, bd.other)
                    R1, p1 = relative_pose_B(k1.p_G, k1.R_GB, bd.bed_body, bd.other)
                    d = v @ (R1 - R0).T + (p1 - p0)
                    out = max(out, float(np.sqrt((d * d).sum(axis=1).max())))
        return out

    return moved

def _solve_frozen_contacts(system, y, contacts, newton, t_load, done, cancel, max_iterations,
                           max_regenerations: int = 40):
    """MJM's contact procedure for statics (seed 004 §3.4): freeze each pair's contact set (with a
    band of vertices about to touch), solve Newton on that smooth problem, regenerate the set at the
    new pose and repeat until the *true* residual (regenerated contact) meets the tolerance.

    Newton steps are capped to half the band, and a solve that moved that far regenerates, so the
    bones approach and settle on their cartilage without plunging through it. Returns (y, ok, its).
    """
    band, limit = contact_band(contacts)
    original = system.extra_elements
    its = 0
    ok = False
    prev_keys = None
    try:
        for _ in range(max_regenerations):
            kin = system.kinematics(y)
            frozen = [c.frozen(kin, band) for c in contacts]
            system.extra_elements = [frozen[contacts.index(e)] if e in contacts else e for e in original]
            moved = frozen_set_motion(frozen, system.kinematics)
            y, sub_ok, k = newton(y, max_iterations, move_limit=limit, moved=moved)
            its += k
            system.extra_elements = original
            if done(residual(system, t_load, y)):
                ok = True
                break
            kin = system.kinematics(y)
            keys = [c.frozen(kin).key() for c in contacts]
            if sub_ok and keys == prev_keys:
                break  # the set holds but the true residual differs: nothing left to regenerate
            prev_keys = keys
            if _is_cancelled(cancel):
                break
    finally:
        system.extra_elements = original
    return y, ok, its


def _settle(system: MechanicalSystem, y: np.ndarray, t_load: float, span: float | None,
            cancel=None) -> tuple[np.ndarray, float]:
    """Damped dynamics by kinetic damping (dynamic relaxation): integrate the undamped motion and
    stop every body whenever the total kinetic energy passes a peak, so each mode loses its energy
    at its own pace, soft and stiff alike. Runs for ``span`` s (default: 5 periods of the softest
    taut-tissue mode) or until the residual fell a millionfold. Returns the settled y and the span."""
    from scipy import integrate

    n = system.n_bodies
    free = system.bodies.free
    if span is None:
        floor = stiffness_floor(system).reshape(n, 6)
        m = system.bodies.mass
        I = system.bodies.inertia_B.max(axis=1)
        periods = 2 * np.pi * np.sqrt(np.r_[m[free] / floor[free, 0], I[free] / floor[free, 3]])
        span = min(5.0 * float(periods.max()), MAX_SETTLE_SPAN_S)
    y = y.copy()
    y[7 * n:] = 0.0
    L = system.length_scale
    g0 = residual(system, t_load, y)
    target = 1e-6 * float(np.sqrt(np.sum(g0[:, :3] ** 2) + np.sum((g0[:, 3:] / L) ** 2)))
    atol = 1e-9 * np.concatenate([np.full(3 * n, L), np.ones(4 * n), np.full(3 * n, L), np.ones(3 * n)])

    def start(t0, y0):
        return integrate.DOP853(system.derivative, t0, y0, t_load + span, rtol=1e-6, atol=atol)

    solver = start(t_load, y)
    ke_prev, steps = 0.0, 0
    with np.errstate(all="ignore"):
        while solver.status == "running" and steps < SETTLE_MAX_STEPS and not _is_cancelled(cancel):
            solver.step()
            steps += 1
            if not np.all(np.isfinite(solver.y)):
                break
            y = solver.y
            ke = system.kinetic_energy(system.state_at(solver.t, y))
            if ke < ke_prev:  # past a kinetic-energy peak: stop all motion and restart from rest
                y = y.copy()
                y[7 * n:] = 0.0
                g = residual(system, t_load, y)
                if float(np.sqrt(np.sum(g[:, :3] ** 2) + np.sum((g[:, 3:] / L) ** 2))) < target:
                    break
                solver = start(solver.t, y)
                ke = 0.0
            ke_prev = ke
    out = y.copy()
    out[7 * n:] = 0.0
    return out, span
