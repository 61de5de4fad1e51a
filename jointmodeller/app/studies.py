"""Use cases: run the equilibrium and dynamics studies on a project and return a RunRecord.

The CLI and the GUI call these; they build the MJM system (app.build), run the core study and turn
the states into a run: the poses of every body (model.results.BodyPoses) and named series (each
tissue's length, strain and force, velocities, kinetic energy, contact forces).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from jointmodeller.app.build import (
    AUTO_CONTACT_GEOMETRY,
    BuiltMechanics,
    build_mechanical_system,
    resolve_contact_geometry,
)
from jointmodeller.app.run_poses import poses_of_states, rotations_GB
from jointmodeller.core.mechanics.system import MechanicalSystem
from jointmodeller.core.multibody.integrate import (
    METHODS,
    PROJECTED_METHOD,
    STIFF_CONTACT_METHOD,
    Trajectory,
    report_times,
    simulate,
)
from jointmodeller.model.errors import Problem, ValidationError
from jointmodeller.model.results import BodyPoses, RunRecord
from jointmodeller.model.specs import Project

Progress = Callable[[float], None]
DEFAULT_EQUILIBRIUM_WALL_S = 300.0  # an equilibrium that has not converged by then reports failure
DEFAULT_DYNAMICS_WALL_S = 3600.0
"""Wall-time limit of a dynamics run unless asked otherwise (CLI --max-wall-s, the GUI run panel's
limit): the demo's stiff cartilage advances ~4e-4 of real time, so an hour is ~1.5 s simulated."""
DEFAULT_DYNAMICS_MAX_STEPS = 1_000_000
"""Step limit (integrator steps) of a dynamics run unless asked otherwise (CLI --max-steps)."""


class RunBudget:
    """The limits of one run: wall time (not counting time spent in the caller's ``progress`` and
    live-view hooks, where a paused GUI study waits) and the user's ``cancel`` (callable or Event).

    ``stop_reason()`` is None while the run may go on, else why it must end; ``limit_hit`` tells a
    limit (the run "failed": it did not reach its end) from the user's stop ("stopped")."""

    def __init__(self, max_wall_s: float | None, progress: Progress | None = None, cancel=None):
        self.max_wall_s = None if max_wall_s is None else float(max_wall_s)
        self.started = time.perf_counter()
        self.waited = 0.0
        self.limit_hit = False
        self._progress = progress
        self._cancel = cancel

    def timed(self, fn: Callable, *args, **kwargs):
        """Call ``fn`` without charging its time to the run."""
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self.waited += time.perf_counter() - t0

    def progress(self, fraction: float, *args, **kwargs) -> None:
        if self._progress is not None:
            self.timed(self._progress, fraction, *args, **kwargs)

    def elapsed(self) -> float:
        """Wall time spent computing [s]."""
        return time.perf_counter() - self.started - self.waited

    def cancelled(self) -> bool:
        c = self._cancel
        if c is None:
            return False
        return bool(c.is_set()) if hasattr(c, "is_set") else bool(c())

    def stop_reason(self) -> str | None:
        if self.max_wall_s is not None and self.elapsed() >= self.max_wall_s:
            self.limit_hit = True
            return f"wall-time limit of {self.max_wall_s:.3g} s reached"
        if self.cancelled():
            return "stopped by the user"
        return None

    def judge(self, traj: Trajectory, t_end: float) -> None:
        """A run that the budget stopped: "failed" with the limit's message when a limit was hit,
        else "stopped" by the user (the integrator only knew that it was asked to stop)."""
        if traj.status == "stopped":
            traj.message = self.stopped_message(float(traj.t[-1]), t_end)
            if self.limit_hit:
                traj.status = "failed"

    def stopped_message(self, t: float, t_end: float) -> str:
        """The message of a run ended by a limit or the user at simulated time t."""
        if self.limit_hit:
            return (f"stopped at the wall-time limit of {self.max_wall_s:.3g} s at t = {t:.6g} s of {t_end:.6g} s "
                    "(the samples computed so far are kept)")
        return f"stopped by the user at t = {t:.6g} s"


AUTO_METHOD = "auto"
"""Integration method chosen from the project: see :func:`choose_method`."""
L_STABLE_MAX_DIGITS = 4
"""With contact, "auto" takes the L-stable ``STIFF_CONTACT_METHOD`` (Radau) up to this many digits and
BDF beyond. At loose tolerances BDF's steps grow until a stiff, lightly damped mode sits where its
orders 3–5 are unstable, and it rings there (the demo elbow's forearm twist: 0.017 rad/s at 4 digits,
~0.002 at 5, nothing above the physics at 6); at tight ones its steps stay short and it is the faster
(the demo's onset at 6 digits: 8.9 s per 0.1 s against Radau's 21 s; docs/benchmarks.md)."""


def choose_method(project: Project, method: str = AUTO_METHOD, digits: float = 6.0) -> str:
    """The integrator for ``method`` (core.multibody.integrate.METHODS) at accuracy 10^-digits: itself
    when named; for "auto", DOPRI5 with coordinate projection on a project with joints, constraints or
    coordinate rows (the tree), else, when the project has contact pairs (cartilage springs are stiff:
    an explicit method's step is bounded by their fastest mode, 3–4× more wall time per simulated
    second on the demo), Radau up to ``L_STABLE_MAX_DIGITS`` digits and BDF beyond, and DOP853
    otherwise (high order, cheap steps for smooth tissue-only models). A project with constraints
    takes DOPRI5 only (nothing else projects onto them)."""
    from jointmodeller.app.mobilized import needs_tree

    if method == AUTO_METHOD:
        if needs_tree(project):
            return PROJECTED_METHOD
        if project.contacts:
            return STIFF_CONTACT_METHOD if digits <= L_STABLE_MAX_DIGITS else "BDF"
        return "DOP853"
    if method not in METHODS:
        raise ValueError(f"unknown integration method {method!r}; choose auto or one of {', '.join(METHODS)}")
    if project.constraints and method != PROJECTED_METHOD:
        raise ValidationError(Problem("Run", None, "method",
                                      f"integrator {method} cannot keep the project's constraints: "
                                      f"{PROJECTED_METHOD} projects onto them after every step; choose auto"))
    return method


class PoseProgress:
    """A study's progress callback that also carries poses: calling it reports a fraction (and
    remembers it); ``pose(sample)`` reports that fraction again with a live sample, so a viewer
    follows a quasi-static study's poses (``progress(fraction, sample)``)."""

    def __init__(self, progress: Callable) -> None:
        self.progress = progress
        self.fraction = 0.0

    def __call__(self, fraction: float) -> None:
        self.fraction = float(fraction)
        self.progress(self.fraction)

    def pose(self, sample: dict) -> None:
        self.progress(self.fraction, sample)


def state_series(built: BuiltMechanics, times: np.ndarray, ys: np.ndarray,
                 tree_q: np.ndarray | None = None) -> tuple[BodyPoses, dict, dict]:
    """Poses, named series and labels of sampled states ys (k, 13n) at times (k,); tree_q (k, nq):
    the tree's coordinates at each sample when the states come from a multibody tree (conditional
    via points).

    Poses: model.results.BodyPoses of every body (the run's one pose encoding; rotation matrices,
    mesh frames and Euler angles are derived from it by app.run_poses). Series: time (k,) [s];
    body_v_G, body_w_G (k, n, 3) velocity of the centre of mass and angular velocity in G;
    tissue_length_m, tissue_strain, tissue_force_N (k, m) (strain = (L - L0)/L0 for axial tissues,
    |deflection| / rest length for bushings, NaN where L0 = 0); kinetic_energy_J (k,);
    contact_force_G (k, c, 3) per contact pair.
    """
    system: MechanicalSystem = built.system
    ys = np.asarray(ys, float)
    k = len(times)
    poses = poses_of_states(system, built.body_names, ys)
    _, _, v, w_B = system.split(ys)
    m = system.tissues.count
    length = np.zeros((k, m))
    force = np.zeros((k, m))
    elong = np.zeros((k, m))
    n_contacts = len(built.contacts)
    contact_G = np.zeros((k, n_contacts, 3))
    ke = np.zeros(k)
    for j in range(k):  # a loop over report samples, after the run
        kin = system.kinematics(ys[j])
        if tree_q is not None:
            kin.q = np.asarray(tree_q[j], float)
        loads = system.tissue_forces.evaluate(float(times[j]), kin)
        length[j], force[j], elong[j] = loads.length, loads.tension, loads.elongation
        ke[j] = system.kinetic_energy(system.state_at(float(times[j]), ys[j]))
        for c, pair in enumerate(built.contacts):
            if hasattr(pair, "evaluate"):
                contact_G[j, c] = pair.evaluate(float(times[j]), kin).total_force_G
    ts = system.tissues
    ref = np.where(ts.model == 0, ts.rest_length, np.linalg.norm(ts.rest_S, axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        strain = np.where(ref > 0, elong / np.where(ref > 0, ref, 1.0), np.nan)
    series = {
        "time": np.asarray(times, float),
        "body_v_G": np.array(v),
        "body_w_G": np.einsum("knij,knj->kni", rotations_GB(poses), w_B),
        "tissue_length_m": length,
        "tissue_strain": strain,
        "tissue_force_N": force,
        "kinetic_energy_J": ke,
    }
    labels = {key: list(built.body_names) for key in ("body_v_G", "body_w_G")}
    for key in ("tissue_length_m", "tissue_strain", "tissue_force_N"):
        labels[key] = list(built.tissue_names)
    if n_contacts:
        series["contact_force_G"] = contact_G
        labels["contact_force_G"] = [getattr(c, "name", f"contact {i + 1}") for i, c in enumerate(built.contacts)]
    return poses, series, labels


def run_equilibrium(project: Project, *, progress: Progress | None = None, cancel=None, **options) -> RunRecord:
    """Static equilibrium of the project under its loads (at the end of their profiles), on the
    multibody tree for every project (a bone without a joint rides a free mobilizer): Newton in tree
    coordinates, on frozen contact sets regenerated between solves where there is contact
    (``app.mobilized``). The free-body solver (``core.studies.equilibrium``) finds the same pose and
    stays as the tests' oracle for it.

    options: contact (bool), wrapping (bool), t (load time), force_tol [N], moment_tol [N·m],
    max_iterations, max_wall_s (time limit, default DEFAULT_EQUILIBRIUM_WALL_S), live (report each
    intermediate pose as a sample for a viewer). Summary: residuals,
    iterations, method and the natural frequencies of the linear model at the equilibrium.
    """
    from jointmodeller.app.tree_studies import run_equilibrium_mobilized

    unknown = set(options) - {"contact", "wrapping", "t", "force_tol", "moment_tol", "max_iterations", "max_wall_s",
                              "live"}
    if unknown:
        raise TypeError(f"run_equilibrium takes no option {sorted(unknown)[0]!r}")
    options.setdefault("max_wall_s", DEFAULT_EQUILIBRIUM_WALL_S)
    return run_equilibrium_mobilized(project, progress=progress, cancel=cancel, **options)


def run_dynamics(
    project: Project,
    *,
    t_end: float = 1.0,
    report_dt: float = 0.01,
    digits: float = 6.0,
    method: str = AUTO_METHOD,
    progress: Progress | None = None,
    cancel=None,
    contact: bool = True,
    wrapping: bool = True,
    max_wall_s: float | None = DEFAULT_DYNAMICS_WALL_S,
    max_steps: int | None = DEFAULT_DYNAMICS_MAX_STEPS,
    on_step: Callable[[BuiltMechanics], Callable[[float, np.ndarray, Callable], None]] | None = None,
    contact_geometry: str = AUTO_CONTACT_GEOMETRY,
) -> RunRecord:
    """Simulate the project from its initial pose (at rest) to ``t_end`` [s] with the one
    ``core.multibody.integrate.simulate``: on the tree when the project has joints, constraints or
    coordinate rows (app.mobilized), else on its all-free-bodies fast path.

    max_wall_s, max_steps: limits (None: none) on the wall time spent computing (time waiting in
    ``progress`` or the live hook, as a paused GUI study does, is not counted) and on integrator
    steps; a run that hits one ends with status "failed", the message saying which, and every sample
    computed so far — as does a diverged run (state not finite, kinetic energy blow-up, step size
    collapse). The user's cancel: "stopped".
    on_step: given the built force elements, returns a hook called after every accepted integrator
    step with (t, y, interpolate) in their state layout (y (13n,), interpolate(ts) -> (k, 13n));
    the GUI streams the simulated states live through it, for every method.

    digits: accuracy α = 10^-digits; method: "auto" (:func:`choose_method`) or one of
    core.multibody.integrate.METHODS; the run's parameters record the method used.
    contact_geometry: "exact" (closest points on the meshes), "field" (signed distance fields, read
    from the disk cache; docs/sdf.md gives the difference measured) or "auto" (the default: the
    fields, :func:`app.build.resolve_contact_geometry`), recorded in the parameters as run (and as
    asked, "contact_geometry_requested").
    """
    from jointmodeller.app.mobilized import needs_tree
    from jointmodeller.app.tree_studies import run_dynamics_mobilized

    requested_geometry = contact_geometry
    contact_geometry = resolve_contact_geometry(contact_geometry, study="dynamics", tree=needs_tree(project))

    requested = method
    method = choose_method(project, method, digits)
    if needs_tree(project):
        run = run_dynamics_mobilized(project, t_end=t_end, report_dt=report_dt, digits=digits, method=method,
                                     progress=progress, cancel=cancel, contact=contact, wrapping=wrapping,
                                     max_wall_s=max_wall_s, max_steps=max_steps, on_step=on_step,
                                     contact_geometry=contact_geometry)
        run.parameters["method_requested"] = requested
        run.parameters["contact_geometry_requested"] = requested_geometry
        return run
    params = {"study": "dynamics", "t_end": float(t_end), "report_dt": float(report_dt), "digits": float(digits),
              "method": method, "method_requested": requested, "contact": contact, "wrapping": wrapping,
              "contact_geometry": contact_geometry, "contact_geometry_requested": requested_geometry,
              "max_wall_s": max_wall_s, "max_steps": max_steps}
    started = time.perf_counter()
    budget = RunBudget(max_wall_s, progress, cancel)
    built = build_mechanical_system(project, contact=contact, wrapping=wrapping, contact_geometry=contact_geometry,
                                    free_path_shortcut=True)
    hook = None if on_step is None else on_step(built)
    traj = simulate(built.system, built.state, t_end, 10.0 ** -digits, report_times(built.state.t, t_end, report_dt),
                    method=method, progress=budget.progress, stop=budget.stop_reason, max_steps=max_steps,
                    on_step=None if hook is None else (lambda t, y, interpolate: budget.timed(hook, t, y, interpolate)))
    budget.judge(traj, t_end)
    wall = time.perf_counter() - started
    poses, series, labels = state_series(built, traj.t, traj.y)
    return RunRecord(study="dynamics", parameters=params, status=traj.status, message=traj.message,
                     series=series, labels=labels, summary=dynamics_summary(traj, wall), poses=poses)


def dynamics_summary(traj: Trajectory, wall_s: float) -> dict:
    """Steps, force evaluations, simulated and wall time and the real-time factor of a run."""
    simulated = float(traj.t[-1] - traj.t[0]) if len(traj.t) else 0.0
    return {
        "steps": traj.n_steps,
        "force_evaluations": traj.n_rhs,
        "simulated_s": simulated,
        "wall_time_s": wall_s,
        "realtime_factor": simulated / wall_s if wall_s > 0 else None,
    }
