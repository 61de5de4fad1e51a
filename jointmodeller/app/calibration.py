"""Laxity calibration (issue 15 item 7): fit tissue stiffness (and slack) scales of a project to an
experiment's measured points, in a bounded time, saying how far it is.

One simulation is a free-body sweep at the measured loads only (0, then each side outwards; load
continuation reaches points far apart), at the sweep's own equilibrium tolerance
(``core.studies.laxity.solver_defaults``). The fit (``core.studies.calibration.calibrate``) needs the
curve at the current scales and its derivative. By default (``sensitivities="implicit"``) that comes
from the sweep's own equilibria by the implicit-function theorem
(``core.studies.laxity.sweep_sensitivity``: a central-difference Newton Jacobian at each solution and
the scaled groups' own tissue forces), measured only where the fit asks for it: no sensitivity
sweeps. With ``sensitivities="sweeps"`` (and wherever the implicit one is missing) it is one
central-difference column per free direction; the columns run
through a :class:`~jointmodeller.app.executors.CaseExecutor` — in this process, on local processes
(``workers``) or on a Dask scheduler — and every column's sweep starts each load from the current
scales' solution at that load (pose and Jacobian), so it costs a Newton step or two per load instead
of a sweep from the unloaded pose. The next iterate's sweep starts from the current one the same way.

The resolution of a point is the measured data's own (:func:`~jointmodeller.core.studies.calibration.data_resolution`)
combined with the sweep's error bound at that load (``SweepStarts.measure_error``: the residual
tolerance through the inverse Newton Jacobian); convergence and identifiability are judged in those
units (see the core module).
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from jointmodeller.app.executors import CaseExecutor, shared_object
from jointmodeller.app.laxity import BuiltJoint, build_joint, experiment_protocol, find_experiment, with_tone
from jointmodeller.core.studies.calibration import (
    CalibrationProgress,
    CalibrationResult,
    CalibrationStopped,
    calibrate,
    data_resolution,
)
from jointmodeller.core.studies.laxity import (
    EquilibriumFailed,
    LaxityResult,
    ParameterWrench,
    SweepCancelled,
    SweepStarts,
    parse_measure,
    run_sweep,
    solver_defaults,
    sweep_sensitivity,
    tissue_parameter_wrench,
)
from jointmodeller.model.specs import Project

DEFAULT_MAX_ITERATIONS = 20
"""Iterations of the fit at most (each: one sweep per free direction and one or more trial sweeps)."""
SENSITIVITY_METHODS = ("implicit", "sweeps")
"""How the fit gets its Jacobian (:func:`run_calibration`)."""
CALIBRATION_TOL_FACTOR = 0.1
"""Equilibrium tolerance of a calibration sweep, as a fraction of the replay's (core.studies.laxity.
solver_defaults: 1e-2 N with mesh contact, 1e-6 N smooth). A column is the difference of two sweeps
5 % apart in one scale: at the replay's tolerance the demo elbow's bound on a point's error is
2.7e-4°, about 1 % of what separates its radial from its lateral ulnar collateral ligament over 11
points; at a tenth of it the bound is 2.8e-5° (Newton reaches it in one or two more iterations, and
two sweeps of one model from different starts agree to 4e-7°)."""


def calibration_loads(measured_loads: np.ndarray) -> np.ndarray:
    """The sweep that reaches every measured load: 0, the positive loads ascending, the negative
    loads descending (each side from the unloaded pose outwards)."""
    u = np.unique(np.asarray(measured_loads, float))
    pos = np.unique(np.concatenate([[0.0], u[u >= 0]]))
    neg = np.sort(u[u < 0])[::-1]
    return np.concatenate([pos, neg])


@dataclass
class SimulatorSpec:
    """What a worker needs to rebuild the simulator (sent once per worker)."""

    project: Project
    experiment: str
    groups: list[str]
    fit_slack: bool
    measured_loads: np.ndarray


class LaxitySimulator:
    """The experiment's curve at the measured loads for given scales (p,) = stiffness scales of
    ``groups`` (then slack scales with ``fit_slack``), on the project's free-body joint."""

    def __init__(self, spec: SimulatorSpec, joint=None):
        from jointmodeller.app.laxity import build_joint, experiment_protocol, find_experiment

        self.spec = spec
        self.experiment = find_experiment(spec.project, spec.experiment)
        self.joint = joint if joint is not None else build_joint(spec.project)
        self.loads = calibration_loads(spec.measured_loads)
        self.protocol = experiment_protocol(spec.project, self.experiment, self.joint, self.loads)
        self.index = np.array([int(np.flatnonzero(self.loads == lo)[0]) for lo in spec.measured_loads])
        self.n_groups = len(spec.groups)
        ts = self.joint.system.tissues
        self.rows = [np.array([t for t, name in enumerate(self.joint.tissue_groups) if name == g or ts.names[t] == g],
                              np.int64) for g in spec.groups]
        """The tissue rows of each group (as scaled_tissue_system scales them)."""

    def system(self, x: np.ndarray):
        from jointmodeller.app.laxity import with_tone

        n = self.n_groups
        return with_tone(self.experiment, scaled_tissue_system(self.joint, self.spec.groups, x[:n],
                                                               x[n:] if self.spec.fit_slack else None))

    def run(self, x: np.ndarray, warm: SweepStarts | None = None, cancel: Callable[[], bool] | None = None,
            fresh: bool = False) -> tuple[np.ndarray, SweepStarts, np.ndarray]:
        """(values at the measured points (n,), the sweep's starts, its error bound per point (n,)).
        fresh: keep fresh Jacobians at the solutions in the starts (for sweeps others start from)."""
        res = self.sweep(x, warm, cancel, fresh)
        assert res.starts is not None
        return self.values(res)

    def sweep(self, x: np.ndarray, warm: SweepStarts | None = None, cancel: Callable[[], bool] | None = None,
              fresh: bool = False) -> LaxityResult:
        """The sweep itself at scales x (see :meth:`run`)."""
        system = self.system(np.asarray(x, float))
        return run_sweep(system, self.protocol, self.joint.p0_G, self.joint.q0_GB, warm_from=warm, cancel=cancel,
                         tol_N=self.tol_N(system), fresh_jacobians=fresh)

    def values(self, res: LaxityResult) -> tuple[np.ndarray, SweepStarts, np.ndarray]:
        """(values, starts, error bound) at the measured points of a sweep's result."""
        assert res.starts is not None
        error = res.starts.measure_error(self.protocol.measure, res.loads)
        return res.measure[self.index], res.starts, error[self.index]

    @staticmethod
    def tol_N(system) -> float:
        return CALIBRATION_TOL_FACTOR * solver_defaults(system)[0]

    def sensitivity(self, x: np.ndarray, res: LaxityResult) -> np.ndarray:
        """d values / d x (n, p) at the measured points of the sweep ``res`` at scales x, by the
        implicit-function theorem at its solutions (core.studies.laxity.sweep_sensitivity:
        central-difference Jacobians at the solutions, kept in ``res.starts``, and the groups' tissue
        forces; no sweep)."""
        x = np.asarray(x, float)
        system = self.system(x)
        sens = sweep_sensitivity(system, self.protocol, self.joint.p0_G, self.joint.q0_GB, res,
                                 self.parameter_wrench(x), tol_N=self.tol_N(system))
        return sens[self.index]

    def parameter_wrench(self, x: np.ndarray) -> ParameterWrench:
        """How the forces on the bodies change per unit of each parameter at x (stiffness scales,
        then slack scales): the scaled groups' own tissue forces (core.studies.laxity)."""
        n = self.n_groups
        base = self.joint.system
        return tissue_parameter_wrench(base.tissues, base.path_provider, self.rows, base.n_bodies, x[:n],
                                       x[n:] if self.spec.fit_slack else None, base.use_numba)


_WORKER_SIMULATORS: dict[str, LaxitySimulator] = {}


def column_case(case: dict) -> np.ndarray:
    """One finite-difference column's sweep (module-level, picklable): {"token", "spec" (a shared
    reference to a SimulatorSpec), "x", "warm"} -> values at the measured points. The simulator is
    built once per worker process and kept."""
    sim = _WORKER_SIMULATORS.get(case["token"])
    if sim is None:
        sim = LaxitySimulator(shared_object(case["spec"]))
        _WORKER_SIMULATORS.clear()  # one calibration at a time per worker
        _WORKER_SIMULATORS[case["token"]] = sim
    return sim.run(case["x"], case["warm"])[0]


def _token(spec: SimulatorSpec) -> str:
    """A name for this calibration's simulator in the workers' cache (unique per call)."""
    h = hashlib.sha256(repr((spec.experiment, spec.groups, spec.fit_slack, time.time_ns())).encode())
    return h.hexdigest()[:16]


def run_calibration(project: Project, experiment_name: str, groups: list[str], *, fit_slack: bool = False,
                    bounds: tuple[float, float] = (0.05, 20.0), slack_bounds: tuple[float, float] = (0.9, 1.1),
                    joint=None, xtol: float | None = None, max_iterations: int = DEFAULT_MAX_ITERATIONS,
                    max_wall_s: float | None = None, scheduler: Any = None, workers: int = 1,
                    progress: Callable[[CalibrationProgress], None] | None = None,
                    cancel: Callable[[], bool] | None = None, identify: bool = True,
                    sensitivities: str = "implicit") -> CalibrationResult:
    """Fit the scales of ``groups`` (see the module docstring); the result's ``x`` are the scales in
    the order of its ``names``. scheduler: a Dask address, "local[:N]" or Client for the columns;
    workers > 1: local processes; else in this process. max_wall_s: the fit ends with the best scales
    so far (status "budget") after that many seconds, a sweep in progress included.
    sensitivities: "implicit" (default) — the Jacobian of the fit from each sweep's own solutions by
    the implicit-function theorem, no extra sweeps; "sweeps" — central-difference sensitivity sweeps
    warm-started from the current solution, run on ``scheduler`` / ``workers`` (also the fallback
    wherever the implicit one is missing)."""
    from jointmodeller.app.laxity import find_experiment

    if sensitivities not in SENSITIVITY_METHODS:
        raise ValueError(f"sensitivities {sensitivities!r}: expected one of {', '.join(SENSITIVITY_METHODS)}")
    implicit = sensitivities == "implicit"

    experiment = find_experiment(project, experiment_name)
    ml = np.array([p.load for p in experiment.measured], float)
    mv = np.array([p.value for p in experiment.measured], float)
    spec = SimulatorSpec(project, experiment.name, list(groups), fit_slack, ml)
    sim = LaxitySimulator(spec, joint)
    n = len(groups)
    names = [f"stiffness scale: {g}" for g in groups]
    x0 = np.ones(n)
    lower, upper = np.full(n, bounds[0]), np.full(n, bounds[1])
    if fit_slack:
        names += [f"slack scale: {g}" for g in groups]
        x0 = np.ones(2 * n)
        lower = np.concatenate([lower, np.full(n, slack_bounds[0])])
        upper = np.concatenate([upper, np.full(n, slack_bounds[1])])
    t0 = time.perf_counter()
    deadline = None if max_wall_s is None else t0 + float(max_wall_s)

    def stop_now() -> bool:
        return (cancel is not None and cancel()) or (deadline is not None and time.perf_counter() > deadline)

    # the solutions of every simulated point (keyed by its bytes), to warm-start its columns and the
    # next iterate; only the last few are kept
    starts: dict[bytes, SweepStarts] = {}
    sweeps: dict[bytes, LaxityResult] = {}  # the sweeps themselves, for their implicit sensitivities
    derivative: dict[bytes, np.ndarray] = {}
    latest: dict[str, Any] = {"starts": None, "error": None}

    def simulate(x: np.ndarray) -> np.ndarray:
        key = np.asarray(x, float).tobytes()
        try:
            # implicit: the Jacobians at the solutions are measured (central differences) where the
            # fit asks for its derivative (own_derivative), and at once at the start point, whose
            # error bound (from those Jacobians) sets the resolution; the sensitivity sweeps need
            # them fresh (forward differences) at every point they start from
            res = sim.sweep(x, latest["starts"], cancel=stop_now, fresh=not implicit)
            if implicit:
                sweeps[key] = res
                if latest["starts"] is None:
                    with contextlib.suppress(np.linalg.LinAlgError):  # else: difference columns
                        derivative[key] = sim.sensitivity(x, res)
            values, st, err = sim.values(res)
        except SweepCancelled:
            raise CalibrationStopped(
                "stopped by the user" if cancel is not None and cancel() else
                f"stopped at the wall-time budget of {max_wall_s:g} s", "stopped" if cancel is not None and cancel()
                else "budget") from None
        except EquilibriumFailed:
            if latest["starts"] is None:
                raise
            return np.full(mv.size, np.inf)  # a trial step too far: rejected, the fit damps its steps
        starts[key] = st
        while len(starts) > 4:
            starts.pop(next(iter(starts)))
        for cache in (sweeps, derivative):
            while len(cache) > 4:
                cache.pop(next(iter(cache)))
        latest["error"] = err
        return values

    token = _token(spec)
    executor = CaseExecutor(scheduler=scheduler, workers=workers, shared=spec if (scheduler or workers > 1) else None,
                            token=token)
    try:
        if executor.kind == "sequential":
            _WORKER_SIMULATORS.clear()
            _WORKER_SIMULATORS[token] = sim  # the columns reuse this process's build

        def simulate_many(base: np.ndarray, points: list[np.ndarray]) -> list[np.ndarray]:
            warm = starts.get(np.asarray(base, float).tobytes())
            latest["starts"] = warm  # the next trial starts from the accepted point too
            cases = [{"token": token, "spec": executor.shared_ref, "x": np.asarray(q, float), "warm": warm}
                     for q in points]
            out = executor.map(column_case, cases)
            if stop_now():
                raise CalibrationStopped(f"stopped at the wall-time budget of {max_wall_s:g} s"
                                         if not (cancel is not None and cancel()) else "stopped by the user",
                                         "stopped" if cancel is not None and cancel() else "budget")
            return out

        def own_derivative(x: np.ndarray) -> np.ndarray | None:
            """The implicit sensitivities at x, the point the fit now stands on: its next trials
            start from x's solutions, as the columns' sweeps do."""
            key = np.asarray(x, float).tobytes()
            if key not in derivative and key in sweeps:
                try:
                    derivative[key] = sim.sensitivity(x, sweeps[key])
                except np.linalg.LinAlgError:
                    return None  # a singular Jacobian at a solution: difference columns instead
            if key in starts:
                latest["starts"] = starts[key]
            return derivative.get(key)

        unit = parse_measure(experiment.measure)[2]

        def report(state: CalibrationProgress) -> None:
            state.unit = unit
            assert progress is not None
            progress(state)

        fit = calibrate(simulate, mv, x0, lower, upper, names, simulate_many=simulate_many,
                        simulation_error=lambda: latest["error"], data_resolution=data_resolution(mv, ml),
                        xtol=xtol, max_iterations=max_iterations, max_wall_s=max_wall_s,
                        progress=None if progress is None else report, cancel=cancel, identify=identify,
                        jacobian=own_derivative if implicit else None)
    finally:
        executor.close()
        _WORKER_SIMULATORS.clear()
    fit.executor = f"{executor.kind} ({executor.workers} worker{'s' if executor.workers > 1 else ''})"
    return fit


def apply_fit(project: Project, joint, groups: list[str], fit: CalibrationResult, fit_slack: bool) -> Project:
    """The project with the fitted scales written into its spring types / attachments."""

    n = len(groups)
    return scaled_project(project, joint, groups, fit.x[:n], fit.x[n:] if fit_slack else None)


__all__ = ["DEFAULT_MAX_ITERATIONS", "SENSITIVITY_METHODS", "LaxitySimulator", "SimulatorSpec", "apply_fit",
           "calibration_loads", "column_case", "run_calibration"]


def scaled_tissue_system(joint: BuiltJoint, group_of_param: list[str], stiffness: np.ndarray,
                         slack: np.ndarray | None = None):
    """A copy of the joint's system with tissue coefficients (and rest lengths) of each group scaled.

    Wrapped tissues that the builder made as separate force elements (``WrappedTissue``) are scaled
    through their ``coeffs``/``rest_length`` when their ``name`` attribute names a group member.
    """
    sys_ = joint.system
    ts = sys_.tissues
    k_scale = np.ones(ts.count)
    l_scale = np.ones(ts.count)
    for j, g in enumerate(group_of_param):
        rows = np.array([t for t, name in enumerate(joint.tissue_groups) if name == g or ts.names[t] == g], int)
        k_scale[rows] = stiffness[j]
        if slack is not None:
            l_scale[rows] = slack[j]
    new_ts = replace(ts, coeffs=ts.coeffs * k_scale[:, None, None], rest_length=ts.rest_length * l_scale,
                     rest_S=ts.rest_S)
    return replace(sys_, tissues=new_ts)


def scaled_project(project: Project, joint: BuiltJoint, groups: list[str], stiffness: np.ndarray,
                   slack: np.ndarray | None = None, suffix: str = " (calibrated)") -> Project:
    """The project with spring types (or single tissues) scaled: stiffness multiplies every
    coefficient; slack multiplies the rest length of the group's attachments (written explicitly)."""
    springs = list(project.springs)
    attachments = list(project.attachments)
    rest_by_name = dict(zip(joint.system.tissues.names, joint.system.tissues.rest_length))
    spring_names = {s.name for s in springs}
    for j, g in enumerate(groups):
        if g in spring_names:  # a spring type: scale it (every attachment using it follows)
            springs = [replace(s, kx=tuple(float(c) * float(stiffness[j]) for c in s.kx),
                               ky=tuple(float(c) * float(stiffness[j]) for c in s.ky),
                               kz=tuple(float(c) * float(stiffness[j]) for c in s.kz)) if s.name == g else s
                       for s in springs]
            members = [a.name for a in attachments if a.spring == g]
        else:  # a single tissue: give it its own scaled spring type
            a = next(a for a in attachments if a.name == g)
            base = project.spring(a.spring)
            own = replace(base, name=f"{base.name} [{g}]", kx=tuple(float(c) * float(stiffness[j]) for c in base.kx))
            springs.append(own)
            attachments = [replace(x, spring=own.name) if x.name == g else x for x in attachments]
            members = [g]
        if slack is not None:
            attachments = [replace(x, initial_length_m=float(rest_by_name[x.name] * slack[j]))
                           if x.name in members and x.name in rest_by_name else x for x in attachments]
    info = replace(project.info, title=project.info.title + suffix)
    return replace(project, springs=tuple(springs), attachments=tuple(attachments), info=info)


def calibration_groups(project: Project, joint: BuiltJoint, per: str = "spring") -> list[str]:
    """Parameter groups: spring type names ("spring") or attachment names ("tissue") that have tissues."""
    if per == "tissue":
        return [n for n in joint.system.tissues.names]
    if per != "spring":
        raise ValueError("calibrate per 'spring' (tissue type) or 'tissue'")
    seen: list[str] = []
    for g in joint.tissue_groups:
        if g not in seen:
            seen.append(g)
    return seen


def calibrate_experiment(project: Project, experiment_name: str | None = None, *, per: str = "spring",
                         groups: list[str] | None = None, fit_slack: bool = False,
                         bounds: tuple[float, float] = (0.05, 20.0), slack_bounds: tuple[float, float] = (0.9, 1.1),
                         joint: BuiltJoint | None = None, xtol: float | None = None,
                         progress: Callable[[CalibrationProgress], None] | None = None,
                         scheduler: Any = None, workers: int = 1, max_wall_s: float | None = None,
                         max_iterations: int | None = None, cancel: Callable[[], bool] | None = None,
                         sensitivities: str = "implicit") -> tuple[Project, CalibrationResult]:
    """Fit stiffness scale factors (and optionally slack-length scales) of tissue groups to the
    experiment's measured points (app.calibration: sweeps at the measured loads, finite-difference
    columns warm-started and run through ``scheduler`` (Dask) or ``workers`` local processes,
    tolerances from the sweep's accuracy, parameters the data cannot determine fixed or grouped).
    Returns the fitted project (a new version, title marked "(calibrated)"; the given project is
    unchanged) and the fit — the best scales so far with status "budget" when ``max_wall_s`` ran
    out. xtol: also stop when no scale would change by more than this fraction.
    progress(CalibrationProgress) after the start and every iteration. sensitivities: "implicit"
    (the fit's Jacobian from each sweep's own equilibria, no extra sweeps) or "sweeps" (warm-started
    finite-difference sensitivity sweeps, on ``scheduler`` / ``workers``)."""
    from jointmodeller.app.calibration import DEFAULT_MAX_ITERATIONS, apply_fit, run_calibration
    from jointmodeller.app.mobilized import needs_tree

    experiment = find_experiment(project, experiment_name)
    if not experiment.measured:
        raise ValueError(f"experiment {experiment.name!r} has no measured data to calibrate against")
    if needs_tree(project):
        raise ValueError(f"experiment {experiment.name!r}: calibration runs on free-body projects; this one has "
                         "joint, constraint or coordinate rows (calibrate a copy without them)")
    joint = joint or build_joint(project)
    groups = groups or calibration_groups(project, joint, per)
    fit = run_calibration(project, experiment.name, groups, fit_slack=fit_slack, bounds=bounds,
                          slack_bounds=slack_bounds, joint=joint, xtol=xtol,
                          max_iterations=DEFAULT_MAX_ITERATIONS if max_iterations is None else max_iterations,
                          max_wall_s=max_wall_s, scheduler=scheduler, workers=workers, progress=progress,
                          cancel=cancel, sensitivities=sensitivities)
    return apply_fit(project, joint, groups, fit, fit_slack), fit


def stiffness_scale_for_laxity(project: Project, target: float, experiment_name: str | None = None, *,
                               groups: list[str] | None = None, bracket: tuple[float, float] = (0.05, 50.0),
                               joint: BuiltJoint | None = None) -> float:
    """One common stiffness scale of ``groups`` (default: every tissue type) that gives the laxity
    ``target`` (measure unit): Brent's method on log(scale). For tuning a model to a published band."""
    from scipy.optimize import brentq

    experiment = find_experiment(project, experiment_name)
    joint = joint or build_joint(project)
    groups = groups or calibration_groups(project, joint)
    protocol = experiment_protocol(project, experiment, joint)

    def excess(log_s: float) -> float:
        system = with_tone(experiment, scaled_tissue_system(joint, groups, np.full(len(groups), np.exp(log_s))))
        try:
            return run_sweep(system, protocol, joint.p0_G, joint.q0_GB).laxity - target
        except EquilibriumFailed:  # too soft to hold the load: laxer than any target
            return 1e6

    return float(np.exp(brentq(excess, np.log(bracket[0]), np.log(bracket[1]), xtol=1e-4)))
