"""Dynamic study: MJM Step 6, adaptive error-controlled integration of the free-body equations.

One accuracy knob α = 10^-digits (seed 003 §3.3) is used as the relative tolerance; absolute
tolerances are α times natural scales of each variable (model length for positions, 1 for
quaternions). Explicit Runge–Kutta (DOP853, RK45) by default; Radau, BDF or LSODA for stiff contact.
The run is sampled at a fixed report interval from the solver's dense output, checked after every
step for divergence (NaN/Inf, kinetic energy blow-up, a collapsed step size), and can report
progress and be cancelled.
Whatever was computed before a failure or a cancel is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy import integrate

from jointmodeller.core.spatial_math import normalize_quat
from jointmodeller.core.mechanics.system import MechanicalSystem, State
from jointmodeller.model.errors import SimulationError

METHODS = {
    "DOP853": integrate.DOP853,
    "RK45": integrate.RK45,
    "RK23": integrate.RK23,
    "Radau": integrate.Radau,
    "BDF": integrate.BDF,
    "LSODA": integrate.LSODA,
}
IMPLICIT_METHODS = ("Radau", "BDF", "LSODA")
ENERGY_BLOWUP_FACTOR = 1e6  # kinetic energy above this multiple of the reference energy = diverged
STEP_COLLAPSE_FRACTION = 1e-10
"""A step shorter than this fraction of the run's span counts as collapsed: at that pace the run
needs 1e10 steps (solvers fail by themselves only at a few ulps of t)."""
STEP_COLLAPSE_COUNT = 100
"""This many collapsed steps in a row stop the run as diverged (a single short step at a contact
onset or a load corner is normal)."""


@dataclass
class Trajectory:
    """Sampled states of a run.

    times (k,) [s], y (k, 13 n) state vectors (quaternions normalised), status "completed",
    "stopped" or "failed", message (why, when not completed), n_steps / n_rhs solver counts,
    error: the :class:`SimulationError` of a failed run (not raised, so the samples are kept).
    """

    times: np.ndarray
    y: np.ndarray
    status: str = "completed"
    message: str = ""
    n_steps: int = 0
    n_rhs: int = 0
    error: SimulationError | None = None
    parameters: dict = field(default_factory=dict)

    def raise_if_failed(self) -> None:
        if self.error is not None:
            raise self.error


def _is_cancelled(cancel) -> bool:
    if cancel is None:
        return False
    if hasattr(cancel, "is_set"):
        return bool(cancel.is_set())
    return bool(cancel())


def default_atol(system: MechanicalSystem, accuracy: float) -> np.ndarray:
    """Absolute tolerance per state variable (13n,): α × (length scale | 1 | length scale | 1)."""
    n = system.n_bodies
    L = system.length_scale
    return accuracy * np.concatenate([np.full(3 * n, L), np.ones(4 * n), np.full(3 * n, L), np.ones(3 * n)])


def reference_energy(system: MechanicalSystem, t: float, y: np.ndarray) -> float:
    """An energy scale [J] of the problem to judge blow-up: kinetic + elastic + work of loads over
    one model length."""
    kin = system.kinematics(y)
    L = system.length_scale
    loads = np.abs(system.loads.forces_at(t)).sum() if system.loads.count else 0.0
    weight = float(np.sum(system.bodies.mass[~system.bodies.fixed]) * np.linalg.norm(system.gravity_G))
    return (system.kinetic_energy(y) + abs(system.tissue_forces.energy(t, kin)) + (loads + weight) * L) or 1e-9


def _step_dense(solver) -> Callable[[], object]:
    """The solver's dense output of its last step, built at most once and only when asked for."""
    cache = []

    def get():
        if not cache:
            cache.append(solver.dense_output())
        return cache[0]

    return get


def simulate(
    system: MechanicalSystem,
    state: State | np.ndarray,
    t_end: float,
    report_dt: float,
    *,
    digits: float = 6.0,
    accuracy: float | None = None,
    method: str = "DOP853",
    t0: float | None = None,
    max_step: float = np.inf,
    progress: Callable[[float], None] | None = None,
    cancel=None,
    energy_limit: float | None = None,
    max_steps: int | None = None,
    min_step: float | None = None,
    on_step: Callable[[float, np.ndarray, Callable[[np.ndarray], np.ndarray]], None] | None = None,
) -> Trajectory:
    """Integrate from ``state`` to ``t_end``, sampling every ``report_dt`` seconds.

    accuracy α = 10^-digits unless given; ``method`` one of :data:`METHODS`. ``progress(fraction)``
    is called after each step; ``cancel`` is a callable or an Event, checked after each step.
    ``energy_limit`` [J]: kinetic energy that counts as divergence (default 1e6 × reference energy).
    ``max_steps``: stop ("failed") after this many solver steps.
    ``min_step`` [s]: STEP_COLLAPSE_COUNT steps in a row shorter than this stop the run ("failed",
    step size collapse); default STEP_COLLAPSE_FRACTION × (t_end − start).
    ``on_step(t, y, interpolate)``: called after every accepted step with its end time and state and
    the step's dense output (``interpolate(ts) -> (k, d)`` states at times ts within the step), for
    any method — what a live view needs to show the motion between steps.
    Never raises for a diverged run: the Trajectory says "failed" and keeps the samples so far.
    """
    if method not in METHODS:
        raise ValueError(f"unknown integration method {method!r}; choose one of {', '.join(METHODS)}")
    alpha = float(accuracy) if accuracy is not None else 10.0 ** (-float(digits))
    if isinstance(state, State):
        y0, start = state.get_y(), state.get_time()
    else:
        y0, start = np.asarray(state, float).copy(), 0.0
    if t0 is not None:
        start = float(t0)
    if not t_end > start:
        raise ValueError("end time must be after the start time")
    if not report_dt > 0:
        raise ValueError("report interval must be positive")
    n = system.n_bodies
    report = start + report_dt * np.arange(int(np.floor((t_end - start) / report_dt + 1e-9)) + 1)
    if report[-1] < t_end - 1e-12 * max(1.0, abs(t_end)):
        report = np.append(report, t_end)
    limit = energy_limit if energy_limit is not None else ENERGY_BLOWUP_FACTOR * reference_energy(system, start, y0)
    h_collapse = STEP_COLLAPSE_FRACTION * (t_end - start) if min_step is None else float(min_step)

    n_rhs = [0]

    def fun(t, y):
        n_rhs[0] += 1
        if not np.all(np.isfinite(y)):
            # an explicit trial stage of a too-long step overflowed: answer NaN so the solver rejects
            # the step and shortens it, instead of handing the force elements (mesh queries) NaNs
            return np.full_like(y, np.nan)
        return system.derivative(t, y)

    kwargs = dict(rtol=alpha, atol=default_atol(system, alpha), max_step=max_step)
    solver = METHODS[method](fun, start, y0, t_end, **kwargs)

    times = [start]
    samples = [y0.copy()]
    next_k = 1
    status, message, error = "completed", "", None
    n_steps = 0
    t_last, n_short = start, 0

    def _normalized(y):
        y = y.copy()
        q = y[3 * n: 7 * n].reshape(n, 4)
        q[:] = normalize_quat(q)
        return y

    while solver.status == "running":
        with np.errstate(all="ignore"):  # trial steps of a diverging run overflow; judged below
            msg = solver.step()
        n_steps += 1
        if solver.status == "failed":
            status, message = "failed", f"integration failed at t = {solver.t:.6g} s: {msg}"
            break
        y = solver.y
        if not np.all(np.isfinite(y)):
            status, message = "failed", f"simulation diverged at t = {solver.t:.6g} s: state is not finite (NaN/Inf)"
            break
        ke = system.kinetic_energy(y)
        if ke > limit:
            status = "failed"
            message = (f"simulation diverged at t = {solver.t:.6g} s: kinetic energy {ke:.3g} J exceeds "
                       f"{limit:.3g} J (energy blow-up); try more digits of accuracy or an implicit method")
            break
        n_short = n_short + 1 if solver.t - t_last < h_collapse else 0
        t_last = solver.t
        if n_short >= STEP_COLLAPSE_COUNT and solver.status == "running":
            status = "failed"
            message = (f"simulation diverged at t = {solver.t:.6g} s: the step size collapsed below {h_collapse:.3g} s "
                       f"for {n_short} steps in a row; the model may be too stiff, too light or far out of balance "
                       f"for {method}")
            times.append(float(solver.t))  # the state reached is finite: keep it
            samples.append(_normalized(solver.y))
            break
        step_dense = _step_dense(solver)
        if on_step is not None:
            on_step(float(solver.t), solver.y.copy(),
                    lambda ts: np.asarray(step_dense()(np.atleast_1d(np.asarray(ts, float)))).T)
        if next_k < len(report) and report[next_k] <= solver.t + 1e-12 * max(1.0, abs(solver.t)):
            dense = step_dense()
            while next_k < len(report) and report[next_k] <= solver.t + 1e-12 * max(1.0, abs(solver.t)):
                tk = min(report[next_k], solver.t)
                yk = dense(tk) if tk < solver.t else solver.y.copy()
                times.append(report[next_k])
                samples.append(_normalized(yk))
                next_k += 1
        if progress is not None:
            progress(min(1.0, (solver.t - start) / (t_end - start)))
        if max_steps is not None and n_steps >= max_steps and solver.status == "running":
            status, message = "failed", f"step limit of {max_steps} reached at t = {solver.t:.6g} s"
            if solver.t > times[-1]:  # keep the state reached, not only the last report sample
                times.append(float(solver.t))
                samples.append(_normalized(solver.y))
            break
        if _is_cancelled(cancel) and solver.status == "running":
            status, message = "stopped", f"stopped by the user at t = {solver.t:.6g} s"
            if solver.t > times[-1]:  # keep the state reached, not only the last report sample
                times.append(float(solver.t))
                samples.append(_normalized(solver.y))
            break

    if status == "failed":
        error = SimulationError(message)
    return Trajectory(
        times=np.asarray(times),
        y=np.asarray(samples),
        status=status,
        message=message,
        n_steps=n_steps,
        n_rhs=n_rhs[0],
        error=error,
        parameters={"t_end": float(t_end), "report_dt": float(report_dt), "accuracy": alpha, "method": method},
    )
