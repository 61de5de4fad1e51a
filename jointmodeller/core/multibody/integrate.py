"""Time integration of a System from a State: one ``simulate``, one ``Trajectory``.

Every system the studies build (``core.multibody.MultibodySystem``, the tree; and
``core.mechanics.MechanicalSystem``, its all-free-bodies fast path) offers the same small protocol:
``nq``, ``nu``, ``constraints``, ``derivative(t, y)`` with ``y = [q; u]``, ``normalize(q)``,
``needs_projection``, ``kinetic_energy(state)``, ``error_scales()`` and ``reference_energy(state)``
(an energy scale [J] to judge blow-up, or None).

One accuracy knob α (seed 003 §3.3) for two families of methods:

- ``"DOPRI5"`` (default): an embedded Dormand–Prince 5(4) Runge–Kutta. A step is accepted when
  the RMS of the error estimate, each weighted by 1/(α·max(s_i, |y_i|)) (s_i: the system's
  ``error_scales``), is ≤ 1; after every accepted step q is normalised and, with constraints, q
  and u are projected back onto the constraint manifolds (seed 003 §3.2) to RMS position error
  ≤ ``constraint_tol`` (default α). Systems without Python force elements whose constraints are
  all couplers run it compiled end to end.
- scipy's explicit ``DOP853``, ``RK45``, ``RK23`` and implicit ``Radau``, ``BDF``, ``LSODA`` (stiff
  contact; ``Radau`` is scipy's with RADAU5's carried Newton factor, ``core.multibody.radau``: the
  same method in about a quarter fewer evaluations), relative tolerance α and absolute tolerance
  α × the system's natural scales; for systems without constraints (nothing would project their drift).

Both give dense output to ``on_step(t, y, interpolate)`` after every accepted step (what the live
view draws between steps) and never loop without end: a step size that collapses, a non-finite
state, a kinetic-energy blow-up, the step limit or the caller's ``stop`` ends the run with status
"failed" or "stopped", the samples reached so far and the state reached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from jointmodeller.core._jit import njit
from jointmodeller.core.state import State
from jointmodeller.model.errors import Problem, SimulationError, ValidationError

from .coupled import N_CB, project_coupled
from .functions import FunctionTable
from .lean import coupled_into, fd_into, qdot_into, workspace_size
from .radau import CarriedRateRadau
from .tree import normalize_quaternions, unpack_tree

PROJECTED_METHOD = "DOPRI5"
SCIPY_METHODS = ("DOP853", "RK45", "RK23", "Radau", "BDF", "LSODA")
METHODS = (PROJECTED_METHOD, *SCIPY_METHODS)
IMPLICIT_METHODS = ("Radau", "BDF", "LSODA")
STIFF_CONTACT_METHOD = "Radau"
"""The integrator for stiff contact at loose tolerances (``app.studies.L_STABLE_MAX_DIGITS``): Radau IIA
(order 5) is L-stable, so a stiff, lightly damped mode dies out as it should. BDF is not A-stable at
its orders 3–5: at four digits it keeps such a mode ringing (on the demo elbow the forearm's 123 Hz
twist at ~1 % damping rang at 0.017 rad/s for the whole 8 s window, against nothing after 0.5 s at
six digits with either method) and pays for the ringing with ~4x more steps once the joint has
settled (docs/benchmarks.md, 2026-11-29)."""

# Dormand–Prince 5(4) tableau
_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
_A = np.array([
    [0, 0, 0, 0, 0, 0],
    [1 / 5, 0, 0, 0, 0, 0],
    [3 / 40, 9 / 40, 0, 0, 0, 0],
    [44 / 45, -56 / 15, 32 / 9, 0, 0, 0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84],
])
_B = _A[6].copy()
_E = np.array([71 / 57600, 0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40])
# its free 4th-order continuous extension (Hairer, Nørsett & Wanner; as scipy's RK45):
# y(t + θh) = y + h Kᵀ P [θ, θ², θ³, θ⁴]
_P = np.array([
    [1, -8048581381 / 2820520608, 8663915743 / 2820520608, -12715105075 / 11282082432],
    [0, 0, 0, 0],
    [0, 131558114200 / 32700410799, -68118460800 / 10900136933, 87487479700 / 32700410799],
    [0, -1754552775 / 470086768, 14199869525 / 1410260304, -10690763975 / 1880347072],
    [0, 127303824393 / 49829197408, -318862633887 / 49829197408, 701980252875 / 199316789632],
    [0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844],
    [0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423],
])

DEFAULT_MAX_STEPS = 1_000_000
"""Step attempts after which a run ends "failed" unless the caller gives its own limit."""
STOP_CHECK_EVERY = 16
"""``stop()`` is asked every this many step attempts of DOPRI5 (accepted or rejected)."""
STEP_COLLAPSE_EPS = 64.0 * np.finfo(float).eps
"""DOPRI5: smallest step relative to max(1, |t|) by default: shorter steps barely move t (a collapse)."""
ENERGY_BLOWUP_FACTOR = 1e6
"""Kinetic energy above this multiple of the system's reference energy counts as diverged."""
STEP_COLLAPSE_FRACTION = 1e-10
"""scipy's methods: a step shorter than this fraction of the run's span counts as collapsed (at that
pace the run needs 1e10 steps; the solvers fail by themselves only at a few ulps of t)."""
STEP_COLLAPSE_COUNT = 100
"""scipy's methods: this many collapsed steps in a row end the run as diverged (a single short step at
a contact onset or a load corner is normal)."""

StepHook = Callable[[float, np.ndarray, Callable[[np.ndarray], np.ndarray]], None]


@dataclass
class Trajectory:
    """Output of a run: times t (k,) [s], coordinates q (k, nq) (unit quaternions), speeds u (k, nu),
    solver counts, the largest constraint error seen after projection, status "completed",
    "stopped" or "failed" with a message saying why, the :class:`SimulationError` of a failed run
    (not raised, so the samples are kept) and the integration parameters used."""

    t: np.ndarray
    q: np.ndarray
    u: np.ndarray
    n_steps: int = 0
    n_rejected: int = 0
    n_rhs: int = 0
    max_constraint_error: float = 0.0
    status: str = "completed"
    message: str = ""
    error: SimulationError | None = None
    parameters: dict = field(default_factory=dict)

    @property
    def y(self) -> np.ndarray:
        """[q u] per sample (k, nq + nu): the integrators' state vectors."""
        return np.hstack([self.q, self.u])

    def state(self, k: int = -1) -> State:
        """Sample k as a State."""
        return State(float(self.t[k]), self.q[k], self.u[k])

    def raise_if_failed(self) -> None:
        if self.error is not None:
            raise self.error


def report_times(start: float, t_end: float, report_dt: float) -> np.ndarray:
    """Sample times start, start + dt, … up to and including t_end [s]."""
    if not t_end > start:
        raise ValueError("end time must be after the start time")
    if not report_dt > 0:
        raise ValueError("report interval must be positive")
    times = start + report_dt * np.arange(int(np.floor((t_end - start) / report_dt + 1e-9)) + 1)
    if times[-1] < t_end - 1e-12 * max(1.0, abs(t_end)):
        times = np.append(times, t_end)
    return times


def stop_reason(stop, t: float) -> str | None:
    """What ``stop`` says: None to go on, else the message (a caller's text, or "stopped by the
    user" when it only says yes). ``stop`` is a callable or an Event (``is_set``)."""
    if stop is None:
        return None
    said = stop.is_set() if hasattr(stop, "is_set") else stop()
    if not said:
        return None
    return said if isinstance(said, str) else f"stopped by the user at t = {t:.6g} s"


def _err_norm(err, y, alpha, scale):
    w = alpha * np.maximum(scale, np.abs(y))
    return np.sqrt(np.mean((err / w) ** 2))


class _Rhs:
    """The system's derivative (with constant ``tau`` if given) as integrators call it, counting the
    calls; NaN for a non-finite trial stage (an overflowed step is then rejected and shortened,
    never handed to the force elements and their mesh queries)."""

    def __init__(self, system, tau=None) -> None:
        self.system, self.tau, self.calls = system, tau, 0

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        self.calls += 1
        if not np.all(np.isfinite(y)):
            return np.full(y.size, np.nan)
        if self.tau is None:
            return self.system.derivative(t, y)
        return self.system.derivative(t, y, self.tau)


def simulate(system, state: State, t_end: float, accuracy: float = 1e-6, out_times=None, *,
             method: str = PROJECTED_METHOD, on_step: StepHook | None = None,
             progress: Callable[[float], None] | None = None, stop=None, max_steps: int | None = None,
             min_step: float | None = None, max_step: float = np.inf, energy_limit: float | None = None,
             tau=None, constraint_tol: float | None = None, compiled: bool | None = None) -> Trajectory:
    """Integrate ``system`` from ``state`` to ``t_end`` [s] with accuracy α; samples at ``out_times``
    (default: every accepted step).

    method: one of :data:`METHODS` (the module docstring). on_step(t, y, interpolate) after every
    accepted step (``interpolate(ts) -> (k, nq + nu)`` states within the step); progress(fraction)
    after every accepted step; stop: a callable or an Event (:func:`stop_reason`). A run ends early
    with the samples so far and the state reached: "failed" after ``max_steps`` step attempts
    (default DEFAULT_MAX_STEPS), when the step size collapses (below ``min_step`` [s]), on a
    non-finite state or a kinetic energy above ``energy_limit`` [J] (default
    ENERGY_BLOWUP_FACTOR × the system's reference energy); "stopped" when ``stop`` says so.
    tau (nu,): constant generalized forces (trees). compiled: None runs DOPRI5 compiled end to end
    where it can (a tree with no Python force elements, couplers only, sampled at out_times, with
    no hooks), True insists (ValueError otherwise), False never does.
    """
    if method not in METHODS:
        raise ValueError(f"unknown integration method {method!r}; choose one of {', '.join(METHODS)}")
    if not t_end > state.t:
        raise ValueError("end time must be after the start time")
    hooks = on_step is not None or progress is not None or stop is not None
    is_tree = hasattr(system, "_couplers")
    can_compile = (method == PROJECTED_METHOD and is_tree and not system.forces
                   and (not system.constraints or system._couplers is not None) and out_times is not None
                   and not hooks and max_steps is None and min_step is None and energy_limit is None)
    if compiled and not can_compile:
        raise ValueError("the compiled driver runs DOPRI5 on trees with couplers only and no force elements, "
                         "sampled at out_times, with no hooks or limits")
    limit = DEFAULT_MAX_STEPS if max_steps is None else int(max_steps)
    if can_compile and compiled is not False:
        traj = _simulate_compiled(system, state, t_end, accuracy, out_times, tau, constraint_tol)
    elif method == PROJECTED_METHOD:
        traj = _run_dopri5(system, state, float(t_end), float(accuracy), out_times, on_step, progress, stop, limit,
                           min_step, tau, constraint_tol)
    else:
        if system.constraints:
            raise ValidationError(Problem("Run", None, "method",
                                          f"integrator {method} cannot keep the model's constraints (its joints' "
                                          f"couplers or the project's constraints): {PROJECTED_METHOD} projects "
                                          "onto them after every step; choose auto"))
        traj = _run_scipy(system, state, float(t_end), float(accuracy), out_times, method, on_step, progress, stop,
                          limit, min_step, max_step, energy_limit, tau)
    if traj.status == "failed":
        traj.error = SimulationError(traj.message)
    traj.parameters = {"t_end": float(t_end), "accuracy": float(accuracy), "method": method}
    return traj


def _step_dense(solver) -> Callable:
    """The solver's dense output of its last step, built at most once and only when asked for."""
    cache: list = []

    def get():
        if not cache:
            cache.append(solver.dense_output())
        return cache[0]

    return get


def _samples(ts, ys, nq) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    Y = np.array(ys, float).reshape(len(ys), -1)
    return np.array(ts, float), Y[:, :nq], Y[:, nq:]


def _run_dopri5(system, state, t_final, accuracy, out_times, on_step, progress, stop, max_steps, min_step, tau,
                constraint_tol) -> Trajectory:
    """DOPRI5 with coordinate projection after every accepted step (the module docstring)."""
    nq = system.nq
    tol = accuracy if constraint_tol is None else constraint_tol
    has_con = bool(system.constraints)
    if has_con:
        from .constraints import position_error, project_positions, project_velocities
    rhs = _Rhs(system, tau)
    scale = system.error_scales()

    def project(t, y):
        st = State(t, y[:nq], y[nq:])
        st.q = system.normalize(st.q)
        if has_con:
            project_positions(system, st, tol)
            project_velocities(system, st)
        return np.concatenate([st.q, st.u])

    t = t0 = float(state.t)
    y = project(t, state.y)
    outs = None if out_times is None else np.asarray(out_times, float)
    ts, ys = [t], [y.copy()]
    oi = 0
    if outs is not None:
        ts, ys = [], []
        while oi < outs.size and outs[oi] <= t + 1e-14:
            ts.append(t)
            ys.append(y.copy())
            oi += 1
    f0 = rhs(t, y)
    h = min(0.01 * max(1.0, float(np.linalg.norm(y))) / max(float(np.linalg.norm(f0)), 1e-8), t_final - t)
    h *= accuracy ** 0.2
    h = max(h, 1e-8)
    n_steps = n_rej = 0
    max_cerr = 0.0
    K = np.zeros((7, y.size))
    status, message = "completed", ""
    while t < t_final - 1e-14:
        attempts = n_steps + n_rej
        if attempts >= max_steps:
            status, message = "failed", f"step limit of {max_steps} steps reached at t = {t:.6g} s"
            break
        if stop is not None and attempts % STOP_CHECK_EVERY == 0:
            reason = stop_reason(stop, t)
            if reason:
                status, message = "stopped", reason
                break
        h_min = STEP_COLLAPSE_EPS * max(1.0, abs(t)) if min_step is None else max(float(min_step), 0.0)
        if not h >= h_min:  # also NaN
            finite = bool(np.all(np.isfinite(K)))
            status = "failed"
            message = (f"simulation diverged at t = {t:.6g} s: the step size collapsed to {h:.3g} s"
                       + ("" if finite else " (the trial states are not finite)")
                       + "; the model may be too stiff, too light or far out of balance")
            break
        target = t_final if outs is None or oi >= outs.size else min(outs[oi], t_final)
        hs = min(h, target - t)
        K[0] = f0
        with np.errstate(all="ignore"):  # trial stages of a diverging run overflow: the step is rejected
            for s in range(1, 7):
                K[s] = rhs(t + _C[s] * hs, y + hs * (_A[s, :s] @ K[:s]))
            y_new = y + hs * (_B @ K[:6])
            en = _err_norm(hs * (_E @ K), y_new, accuracy, scale)
        if en <= 1.0:
            t_old, y_old, Q = t, y, (K.T @ _P) if on_step is not None else None
            t += hs
            y = y_new
            f0 = K[6].copy()
            if system.needs_projection:
                y = project(t, y)
                f0 = rhs(t, y)
            if not (np.all(np.isfinite(y)) and np.all(np.isfinite(f0))):
                status, message = "failed", f"simulation diverged at t = {t:.6g} s: state is not finite (NaN/Inf)"
                break
            if has_con:
                c = position_error(system, State(t, y[:nq], y[nq:]))
                max_cerr = max(max_cerr, float(np.max(np.abs(c))) if c.size else 0.0)
            n_steps += 1
            if outs is None:
                ts.append(t)
                ys.append(y.copy())
            elif abs(t - target) < 1e-14 and oi < outs.size:
                ts.append(t)
                ys.append(y.copy())
                oi += 1
            if on_step is not None:
                def interpolate(tt, a=t_old, step=hs, ya=y_old, Qs=Q):
                    th = (np.atleast_1d(np.asarray(tt, float)) - a) / step
                    powers = np.cumprod(np.repeat(th[None], 4, axis=0), axis=0)  # θ, θ², θ³, θ⁴
                    return (ya[:, None] + step * Qs @ powers).T
                on_step(t, y.copy(), interpolate)
            if progress is not None:
                progress(min(1.0, (t - t0) / (t_final - t0)))
            if hs < h and abs(t - target) < 1e-14:
                continue  # a step clipped to an output time keeps the proposed h
        else:
            n_rej += 1
        h = hs * (min(5.0, max(0.2, 0.9 * (max(en, 1e-10)) ** -0.2)) if en == en else 0.2)  # NaN: shorten
    if status != "completed" and (not ts or t > ts[-1]) and np.all(np.isfinite(y)):
        ts.append(t)  # ended early: keep the state reached, not only the samples
        ys.append(y.copy())
    t_s, q_s, u_s = _samples(ts, ys, nq)
    return Trajectory(t_s, q_s, u_s, n_steps, n_rej, rhs.calls, max_cerr, status, message)


def _run_scipy(system, state, t_end, alpha, out_times, method, on_step, progress, stop, max_steps, min_step,
               max_step, energy_limit, tau) -> Trajectory:
    """scipy's solve_ivp methods step by step, sampled from their dense output (no projection: the
    samples' quaternions are normalised). A free-body system's fixed bodies are left out of the
    integrated state (``moving_state_index``): an implicit method's Jacobian then has no columns
    for states that never change."""
    from scipy import integrate

    nq = system.nq
    start = float(state.t)
    y0 = state.y
    fun = _Rhs(system, tau)
    keep = system.moving_state_index() if hasattr(system, "moving_state_index") else None

    def full(y_moving):
        """The whole state (k, n) or (n,) from the integrated components (the fixed ones as at the start)."""
        if keep is None:
            return y_moving
        y_moving = np.asarray(y_moving)
        out = np.broadcast_to(y0, y_moving.shape[:-1] + y0.shape).copy()
        out[..., keep] = y_moving
        return out

    def rhs(t, y_moving):
        return fun(t, full(y_moving))[keep]

    def normalized(y):
        return np.concatenate([system.normalize(y[:nq]), y[nq:]])

    if energy_limit is None:
        reference = system.reference_energy(state)
        energy_limit = np.inf if reference is None else ENERGY_BLOWUP_FACTOR * reference
    h_collapse = STEP_COLLAPSE_FRACTION * (t_end - start) if min_step is None else float(min_step)
    solvers = {name: getattr(integrate, name) for name in SCIPY_METHODS}
    solvers["Radau"] = CarriedRateRadau
    atol = alpha * system.error_scales()
    if keep is None:
        solver = solvers[method](fun, start, y0, t_end, rtol=alpha, atol=atol, max_step=max_step)
    else:
        solver = solvers[method](rhs, start, y0[keep], t_end, rtol=alpha, atol=atol[keep], max_step=max_step)
    outs = None if out_times is None else np.asarray(out_times, float)
    ts, ys, oi = [start], [normalized(y0)], 0
    if outs is not None:
        ts, ys = [], []
        while oi < outs.size and outs[oi] <= start + 1e-14:
            ts.append(start)
            ys.append(normalized(y0))
            oi += 1
    status, message = "completed", ""
    n_steps, t_last, n_short = 0, start, 0

    def keep_reached():
        if not ts or solver.t > ts[-1]:
            ts.append(float(solver.t))
            ys.append(normalized(full(solver.y)))

    while solver.status == "running":
        with np.errstate(all="ignore"):  # trial steps of a diverging run overflow; judged below
            msg = solver.step()
        n_steps += 1
        if solver.status == "failed":
            status, message = "failed", f"integration failed at t = {solver.t:.6g} s: {msg}"
            break
        y = full(solver.y)
        if not np.all(np.isfinite(y)):
            status, message = "failed", f"simulation diverged at t = {solver.t:.6g} s: state is not finite (NaN/Inf)"
            break
        ke = system.kinetic_energy(State(solver.t, y[:nq], y[nq:]))
        if ke > energy_limit:
            status = "failed"
            message = (f"simulation diverged at t = {solver.t:.6g} s: kinetic energy {ke:.3g} J exceeds "
                       f"{energy_limit:.3g} J (energy blow-up); try more digits of accuracy or an implicit method")
            break
        n_short = n_short + 1 if solver.t - t_last < h_collapse else 0
        t_last = solver.t
        if n_short >= STEP_COLLAPSE_COUNT and solver.status == "running":
            status = "failed"
            message = (f"simulation diverged at t = {solver.t:.6g} s: the step size collapsed below {h_collapse:.3g} s "
                       f"for {n_short} steps in a row; the model may be too stiff, too light or far out of balance "
                       f"for {method}")
            keep_reached()  # the state reached is finite: keep it
            break
        dense = _step_dense(solver)
        if on_step is not None:
            on_step(float(solver.t), y.copy(),
                    lambda tt, dense=dense: full(np.asarray(dense()(np.atleast_1d(np.asarray(tt, float)))).T))
        slack = 1e-12 * max(1.0, abs(solver.t))
        if outs is None:
            ts.append(float(solver.t))
            ys.append(normalized(y))
        while outs is not None and oi < outs.size and outs[oi] <= solver.t + slack:
            tk = min(outs[oi], solver.t)
            ts.append(float(outs[oi]))
            ys.append(normalized(full(dense()(tk)) if tk < solver.t else y))
            oi += 1
        if progress is not None:
            progress(min(1.0, (solver.t - start) / (t_end - start)))
        if n_steps >= max_steps and solver.status == "running":
            status, message = "failed", f"step limit of {max_steps} steps reached at t = {solver.t:.6g} s"
            keep_reached()
            break
        reason = stop_reason(stop, float(solver.t)) if solver.status == "running" else None
        if reason:
            status, message = "stopped", reason
            keep_reached()
            break
    t_s, q_s, u_s = _samples(ts, ys, nq)
    return Trajectory(t_s, q_s, u_s, n_steps, 0, fun.calls, 0.0, status, message)


@njit
def _rhs_compiled(ib, fb, y, nq, nu, tau, fz, cb, cft, cfa, cfo, cfd, W, out):
    """[q̇; u̇] -> out through the lean kernels (lean.py), the same for trees and coupled trees."""
    q = y[:nq]
    u = y[nq:]
    qdot_into(ib, q, u, out[:nq])
    if cb.shape[0] == 0:
        fd_into(ib, fb, q, u, tau, fz, W, out[nq:])
    else:
        coupled_into(ib, fb, cb, cft, cfa, cfo, cfd, q, u, tau, fz, W, out[nq:])


@njit
def _dopri_compiled(ib, fb, y0, t0, t1, alpha, scale, nq, nu, tau, out_times, A, B, C, E, cb, cft, cfa, cfo, cfd,
                    ctol):
    tr = unpack_tree(ib, fb)
    nb = tr.parent.shape[0]
    fz = np.zeros((nb, 6))
    n = y0.shape[0]
    y = y0.copy()
    t = t0
    nout = out_times.shape[0]
    Y = np.zeros((nout, n))
    oi = 0
    while oi < nout and out_times[oi] <= t + 1e-14:
        Y[oi] = y
        oi += 1
    K = np.zeros((7, n))
    W = np.empty(workspace_size(nb, nu, cb.shape[0]))
    f0 = np.empty(n)
    cmax = 0.0
    if cb.shape[0] > 0:
        project_coupled(tr, cb, cft, cfa, cfo, cfd, y[:nq], y[nq:], ctol)
    _rhs_compiled(ib, fb, y, nq, nu, tau, fz, cb, cft, cfa, cfo, cfd, W, f0)
    nrhs = 1
    h = min(0.01 * max(1.0, np.linalg.norm(y)) / max(np.linalg.norm(f0), 1e-8), t1 - t) * alpha**0.2
    h = max(h, 1e-8)
    nsteps = 0
    nrej = 0
    ytmp = np.zeros(n)
    while t < t1 - 1e-14:
        target = t1
        if oi < nout and out_times[oi] < t1:
            target = out_times[oi]
        hs = min(h, target - t)
        K[0] = f0
        for s in range(1, 7):
            for i in range(n):
                acc = 0.0
                for r in range(s):
                    acc += A[s, r] * K[r, i]
                ytmp[i] = y[i] + hs * acc
            _rhs_compiled(ib, fb, ytmp, nq, nu, tau, fz, cb, cft, cfa, cfo, cfd, W, K[s])
            nrhs += 1
        # ytmp now holds the 5th-order solution (row 6 of A equals B)
        ssum = 0.0
        for i in range(n):
            e = 0.0
            for r in range(7):
                e += E[r] * K[r, i]
            w = alpha * max(scale[i], abs(ytmp[i]))
            ssum += (hs * e / w) ** 2
        en = np.sqrt(ssum / n)
        if en <= 1.0:
            t += hs
            y[:] = ytmp
            normalize_quaternions(tr, y[:nq])
            f0[:] = K[6]
            if cb.shape[0] > 0:
                cmax = max(cmax, project_coupled(tr, cb, cft, cfa, cfo, cfd, y[:nq], y[nq:], ctol))
                _rhs_compiled(ib, fb, y, nq, nu, tau, fz, cb, cft, cfa, cfo, cfd, W, f0)
                nrhs += 1
            nsteps += 1
            if oi < nout and abs(t - out_times[oi]) < 1e-14:
                Y[oi] = y
                oi += 1
            if hs < h and abs(t - target) < 1e-14:
                continue
        else:
            nrej += 1
        h = hs * min(5.0, max(0.2, 0.9 * max(en, 1e-10) ** -0.2))
    while oi < nout:
        Y[oi] = y
        oi += 1
    return Y, nsteps, nrej, nrhs, cmax


_NO_COUPLERS = (np.zeros((0, N_CB), np.int64), FunctionTable().arrays())  # empty coupler table


def _simulate_compiled(system, state: State, t_final: float, accuracy: float, out_times, tau,
                       constraint_tol: float | None) -> Trajectory:
    """DOPRI5 compiled end to end (the same steps as ``_run_dopri5``) for trees without force
    elements whose constraints (if any) are all coordinate couplers (gravity and constant tau)."""
    packed = system._couplers  # packed once when the system was built
    cb, (cft, cfa, cfo, cfd) = _NO_COUPLERS if packed is None else packed
    ctol = accuracy if constraint_tol is None else constraint_tol
    outs = np.asarray(out_times, float)
    tau = system._tau0 if tau is None else np.asarray(tau, float)
    q0 = system.normalize(state.q) if system.codes_have_quaternions else state.q
    y0 = np.concatenate((q0, state.u))  # State holds float arrays
    nq = system.nq
    Y, ns, nr, nf, cmax = _dopri_compiled(
        system._ib, system._fb, y0, float(state.t), float(t_final), float(accuracy), system.error_scales(),
        nq, system.nu, tau, outs, _A, _B, _C, _E, cb, cft, cfa, cfo, cfd, float(ctol),
    )
    return Trajectory(outs, Y[:, :nq], Y[:, nq:], ns, nr, nf, cmax)
