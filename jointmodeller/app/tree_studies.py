"""Equilibrium and dynamics of a project with joints, constraints or coordinate rows, run on its
tree (app.studies sends such projects here) and reported like the free-body path: the poses in the
force elements' layout (app.studies.state_series) plus the tree's coordinates."""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from jointmodeller.app.mobilized import MobilizedProject, build_mobilized, initial_state, unsupported_bodies
from jointmodeller.app.studies import PoseProgress, state_series
from jointmodeller.app.tree_statics import equilibrium_solver
from jointmodeller.core.multibody.integrate import PROJECTED_METHOD, report_times, simulate
from jointmodeller.core.spatial_math import matrix_to_quat
from jointmodeller.model.results import RunRecord
from jointmodeller.model.specs import Project

Progress = Callable[[float], None]


def pose_sample(mp: MobilizedProject, q: np.ndarray, t: float = 0.0) -> dict:
    """A live sample of the tree at rest at coordinates q (what render.frames.frame_from_sample
    draws): its poses ("poses", one sample) and every series of app.studies.state_series at that
    pose, without the sample axis, with their labels — so a quasi-static study can show each pose it
    solves."""
    q = np.asarray(q, float)[None]
    ys = _mech_states(mp, q, np.zeros((1, mp.model.system.nu)))
    poses, series, labels = state_series(mp.built, np.array([float(t)]), ys, q)
    sample: dict = {k: np.asarray(v)[0] for k, v in series.items()}
    sample["poses"] = poses
    sample["labels"] = labels
    return sample


def _mech_states(mp: MobilizedProject, q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """MJM state vectors (k, 13n) of tree states, so app.studies reports them the same way."""
    system = mp.model.system
    mech = mp.built.system
    y0 = mp.built.state.y
    out = np.empty((len(q), mech.nq + mech.nu))
    for k in range(len(q)):  # one pass per report sample, after the run
        bk = mp.bridge.mech_kinematics(system.body_kinematics(system.kinematics(q[k], u[k])))
        y = y0.copy()
        p, quat, v, w_B = mech.split(y)
        p[:] = bk.p_G
        quat[:] = matrix_to_quat(bk.R_GB)
        v[:] = bk.v_G
        w_B[:] = np.einsum("nji,nj->ni", bk.R_GB, bk.w_G)
        out[k] = y
    return out


def run_dynamics_mobilized(
    project: Project,
    *,
    t_end: float = 1.0,
    report_dt: float = 0.01,
    digits: float = 6.0,
    method: str = PROJECTED_METHOD,
    progress: Progress | None = None,
    cancel=None,
    contact: bool = True,
    wrapping: bool = True,
    max_wall_s: float | None = None,
    max_steps: int | None = None,
    on_step: Callable | None = None,
    contact_geometry: str = "auto",
) -> RunRecord:
    """Simulate the project's tree (``app.studies.run_dynamics`` sends projects with joints,
    constraints or coordinate rows here); the run reports like it plus the generalised coordinates
    ("q", "u") and the largest constraint error. Limits, divergence and the user's stop end the run
    as there; on_step: as there (given the built force elements, returns a hook called with (t, y,
    interpolate) in their state layout), after every accepted step. contact_geometry: as there."""
    from jointmodeller.app.build import resolve_contact_geometry
    from jointmodeller.app.studies import RunBudget, dynamics_summary

    contact_geometry = resolve_contact_geometry(contact_geometry, study="dynamics", tree=True)

    params = {"study": "dynamics", "system": "tree", "t_end": float(t_end), "report_dt": float(report_dt),
              "digits": float(digits), "method": method, "contact": contact, "wrapping": wrapping,
              "contact_geometry": contact_geometry, "max_wall_s": max_wall_s, "max_steps": max_steps}
    started = time.perf_counter()
    budget = RunBudget(max_wall_s, progress, cancel)
    mp = build_mobilized(project, contact=contact, wrapping=wrapping, contact_geometry=contact_geometry,
                         free_path_shortcut=True)
    system = mp.model.system
    state = initial_state(mp, tol=min(1e-10, 10.0 ** -digits))
    hook = None if on_step is None else on_step(mp.built)
    nq = system.nq

    def live_view(hook: Callable) -> Callable:
        """``hook`` in the force elements' state layout: the live view draws their bodies."""
        def on_tree_step(t: float, y: np.ndarray, interpolate: Callable) -> None:
            def interpolate_mech(ts):
                ys = interpolate(ts)
                return _mech_states(mp, ys[:, :nq], ys[:, nq:])
            y_mech = _mech_states(mp, y[None, :nq], y[None, nq:])[0]
            budget.timed(hook, t, y_mech, interpolate_mech)
        return on_tree_step

    traj = simulate(system, state, t_end, 10.0 ** -digits, report_times(state.t, t_end, report_dt), method=method,
                    progress=budget.progress, stop=budget.stop_reason, max_steps=max_steps,
                    on_step=None if hook is None else live_view(hook))
    budget.judge(traj, t_end)
    poses, series, labels = state_series(mp.built, traj.t, _mech_states(mp, traj.q, traj.u), traj.q)
    series["q"], series["u"] = traj.q, traj.u
    summary = dynamics_summary(traj, time.perf_counter() - started)
    summary["max_constraint_error"] = traj.max_constraint_error
    return RunRecord(study="dynamics", parameters=params, status=traj.status, message=traj.message, series=series,
                     labels=labels, summary=summary, poses=poses)


def run_equilibrium_mobilized(
    project: Project,
    *,
    progress: Progress | None = None,
    cancel=None,
    contact: bool = True,
    wrapping: bool = True,
    t: float | None = None,
    force_tol: float | None = None,
    moment_tol: float | None = None,
    max_iterations: int = 100,
    max_wall_s: float | None = None,
    live: bool = False,
) -> RunRecord:
    """Static equilibrium of the project's tree under its loads (at the end of their profiles),
    locked coordinates held, prescribed ones at their value at that time, constraints honoured.
    live: also report each intermediate pose as a sample (progress(f, sample)) for a viewer.

    A project with a body that gravity pulls along a free translation with nothing to hold it has no
    equilibrium: the run fails at once with one line naming it, instead of iterating.
    """
    from jointmodeller.core.studies.equilibrium import default_load_time
    from jointmodeller.core.studies.tree_equilibrium import FORCE_TOLERANCE_N, MOMENT_TOLERANCE_NM

    started = time.perf_counter()
    mp = build_mobilized(project, contact=contact, wrapping=wrapping)
    t_load = default_load_time(mp.built.system) if t is None else float(t)
    params = {"study": "equilibrium", "system": "tree", "contact": contact, "wrapping": wrapping, "t": t_load,
              "max_iterations": max_iterations, "max_wall_s": max_wall_s}
    state = initial_state(mp, t=t_load)
    system = mp.model.system
    unsupported = unsupported_bodies(project, mp, state.q)
    summary: dict[str, Any]
    if unsupported:
        q, message = state.q, "no static equilibrium: " + "; ".join(unsupported)
        status = "failed"
        summary = {"converged": False, "iterations": 0, "wall_time_s": time.perf_counter() - started}
    else:
        stop = None if cancel is None else (cancel if callable(cancel) else cancel.is_set)
        report, on_pose = progress, None
        if live and progress is not None:
            report = PoseProgress(progress)

            def on_pose(q: np.ndarray) -> None:
                report.pose(pose_sample(mp, q, t_load))
        solve = equilibrium_solver(mp, max_iterations=max_iterations, progress=report, cancel=stop,
                                   max_wall_s=max_wall_s, on_pose=on_pose)
        if moment_tol is None and force_tol is not None:  # moments held to the force tolerance per model length
            moment_tol = force_tol * mp.built.system.length_scale
        res = solve(state, FORCE_TOLERANCE_N if force_tol is None else force_tol,
                    MOMENT_TOLERANCE_NM if moment_tol is None else moment_tol)
        q, message, status = res.state.q, res.message, res.status
        summary = {"residual_force_N": res.residual_force_N, "residual_moment_Nm": res.residual_moment_Nm,
                   "converged": bool(res.converged), "iterations": int(res.iterations),
                   "force_evaluations": int(res.evaluations),
                   "method": "newton in tree coordinates" + (", frozen contact sets" if "contact sets" in
                                                            res.message else "")}
        if res.converged:
            from jointmodeller.core.studies.tree_equilibrium import tree_linear_model

            try:
                lin = tree_linear_model(system, res.state, length_scale=mp.built.system.length_scale)
                summary["natural_frequencies_hz"] = [float(f) for f in lin.frequency_hz]
                summary["stable"] = bool(np.all(lin.frequency_hz > 0))
            except (np.linalg.LinAlgError, ValueError):
                pass
        summary["wall_time_s"] = time.perf_counter() - started
    q = np.asarray(q, float)[None]
    u = np.zeros((1, system.nu))
    poses, series, labels = state_series(mp.built, np.array([t_load]), _mech_states(mp, q, u), q)
    series["q"] = q
    names = {k: n for n, k in mp.model.qindex.items()}
    labels["q"] = [names.get(k, f"q{k}") for k in range(system.nq)]
    return RunRecord(study="equilibrium", parameters=params, status=status, message=message, series=series,
                     labels=labels, summary=summary, poses=poses)
