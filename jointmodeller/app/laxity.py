"""Laxity use cases: build the joint of an experiment and replay it (a sweep on free bodies or on the
project's tree), with preload and tissue tone.

The GUI panel and the CLI both call these. Everything takes a :class:`Project` (plain specs) and
returns plain results (:class:`RunRecord`, dicts). Beside this module: the JCS of an experiment
(:mod:`~jointmodeller.app.laxity_frames`), what a run reports and the comparison with measured points
(:mod:`~jointmodeller.app.laxity_report`), calibration (:mod:`~jointmodeller.app.calibration`),
parameter studies (:mod:`~jointmodeller.app.parameter_study`) and the ``laxity`` command
(:mod:`~jointmodeller.app.laxity_command`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import replace
from typing import Any, Callable, Sequence, overload

import numpy as np

from jointmodeller.app.build import (
    AUTO_CONTACT_GEOMETRY,
    build_mechanical_system,
    check_contact_geometry,
    resolve_contact_geometry,
)
from jointmodeller.app.laxity_frames import carried_masses, joint_child_origin_B, joint_frames, joint_long_axes
from jointmodeller.app.laxity_report import compare_with_measured, load_unit, result_to_run
from jointmodeller.core.mechanics.loads import PointLoads
from jointmodeller.core.spatial_math import matrix_to_quat
from jointmodeller.core.studies.jcs import JointFrames
from jointmodeller.core.studies.laxity import (
    EquilibriumFailed,
    LaxityProtocol,
    LaxityResult,
    SweepCancelled,
    load_sequence,
    run_sweep,
)
from jointmodeller.model.results import RunRecord
from jointmodeller.model.specs import Experiment, Project

Progress = Callable[[int, int, float, float], None]


# ------------------------------------------------------------------------------------------------
# building the system
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class BuiltJoint:
    """A built system ready for a sweep: the system without the project's own loads, the initial
    pose of every body p0_G (n, 3), q0_GB (n, 4), and the group (spring type) of every tissue row."""

    system: Any
    p0_G: np.ndarray
    q0_GB: np.ndarray
    tissue_groups: list[str]


def _no_loads() -> PointLoads:
    return PointLoads.constant(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3)))


def build_joint(project: Project, *, gravity: bool = True, contact: bool = True, wrapping: bool = True,
                contact_geometry: str = AUTO_CONTACT_GEOMETRY) -> BuiltJoint:
    """The project's free-body system for a laxity sweep (app.build; the project's own loads removed).
    contact_geometry: "exact" (closest points on the meshes), "field" (signed distance fields) or
    "auto" (the laxity sweep's default, app.build.resolve_contact_geometry: fields), so the studies
    that sweep (laxity, calibration, parameter studies) share one geometry. Wrapped paths that stay
    free skip their iterations (``free_path_shortcut``, as dynamics and the tree's sweep have it): on
    the high-resolution demo the sweep takes half the time, the same 151 evaluations and the same
    laxity to 1e-10° (docs/benchmarks.md, 2026-11-29 third session)."""
    geometry = resolve_contact_geometry(contact_geometry, study="laxity", tree=False)
    built = build_mechanical_system(project, contact=contact, wrapping=wrapping, contact_geometry=geometry,
                                    free_path_shortcut=True)
    p0, q0 = built.system.positions(built.state)
    system = replace(built.system, loads=_no_loads(), gravity_G=built.system.gravity_G if gravity else np.zeros(3))
    by_name = {a.name: a.spring for a in project.attachments}
    groups = [by_name.get(n, n) for n in system.tissues.names]
    return BuiltJoint(system, np.asarray(p0, float), np.asarray(q0, float), groups)


# ------------------------------------------------------------------------------------------------
# experiment -> protocol
# ------------------------------------------------------------------------------------------------
def find_experiment(project: Project, name: str | None = None) -> Experiment:
    """The experiment called ``name`` (the first when None); KeyError naming the choices."""
    if not project.experiments:
        raise KeyError("the project has no experiments (add one in the Experiments list)")
    if name is None:
        return project.experiments[0]
    for e in project.experiments:
        if e.name == name:
            return e
    raise KeyError(f"no experiment named {name!r}; the project has: "
                   + ", ".join(repr(e.name) for e in project.experiments))


def experiment_protocol(project: Project, experiment: Experiment, joint: BuiltJoint,
                        loads: np.ndarray | None = None) -> LaxityProtocol:
    """The core protocol of an experiment (loads: override the experiment's sweep)."""
    names = list(joint.system.bodies.names)
    for role, body in (("fixed body", experiment.fixed_body), ("moving body", experiment.moving_body)):
        if body not in names:
            raise KeyError(f"experiment {experiment.name!r}: {role} {body!r} is not a mass of the project")
    seq = experiment_loads(experiment) if loads is None else loads
    frames = joint_frames(project, experiment, joint)
    return replace(protocol_for(experiment, joint, names.index(experiment.fixed_body),
                                names.index(experiment.moving_body), frames, seq),
                   flexion_rad=math.radians(experiment.flexion_deg))


def experiment_loads(experiment: Experiment) -> np.ndarray:
    """The experiment's sweep: 0 → ±max_load on its sides (with unloading when asked)."""
    return load_sequence(experiment.max_load, experiment.steps, experiment.unload, sides=experiment.sides)


def protocol_for(experiment: Experiment, joint: BuiltJoint, fixed: int, moving: int, frames: JointFrames,
                 loads) -> LaxityProtocol:
    """The core protocol (without the held flexion) for bodies ``fixed``/``moving`` of the built
    system: load kind, loads, lever, measure, the load point (L -> the moving body's B) and preload."""
    point_B = None
    if experiment.load_point_L is not None:
        sys_ = joint.system
        point_B = tuple(float(v) for v in sys_.bodies.R_BL[moving]
                        @ (np.asarray(experiment.load_point_L, float) - sys_.bodies.com_L[moving]))
    return LaxityProtocol(fixed, moving, frames, experiment.load_kind, tuple(float(x) for x in loads),
                          experiment.lever_m, experiment.measure, load_point_B=_vec3(point_B),
                          preload_force=_vec3(experiment.preload_force_N),
                          preload_moment=_vec3(experiment.preload_moment_Nm))


@overload
def _vec3(v: None) -> None:
    ...


@overload
def _vec3(v: Sequence[float] | np.ndarray) -> tuple[float, float, float]:
    ...


def _vec3(v):
    """Three Python floats (None stays None)."""
    if v is None:
        return None
    x, y, z = (float(c) for c in v)
    return x, y, z


# ------------------------------------------------------------------------------------------------
# running
# ------------------------------------------------------------------------------------------------


def flexion_coordinate(project: Project, experiment: Experiment) -> str:
    """The coordinate of the moving body's joint that a sweep holds at the experiment's flexion:
    ``experiment.flexion_coordinate``, else its rotational coordinate named like "flex", else its
    first rotational coordinate. ValueError when the moving body has no joint coordinate to hold."""
    from jointmodeller.app.coordinates import coordinate_table

    rows = [r for r in coordinate_table(project) if r.mass == experiment.moving_body]
    if experiment.flexion_coordinate:
        if experiment.flexion_coordinate not in [r.name for r in rows]:
            raise ValueError(f"experiment {experiment.name!r}: flexion coordinate {experiment.flexion_coordinate!r} "
                             f"is not a coordinate of {experiment.moving_body!r}'s joint")
        return experiment.flexion_coordinate
    rot = [r.name for r in rows if r.rotational]
    if not rot:
        raise ValueError(f"experiment {experiment.name!r}: the moving body {experiment.moving_body!r} has no "
                         "rotational joint coordinate to hold at the flexion angle; give it a joint, or name "
                         "the experiment's flexion coordinate")
    return next((n for n in rot if "flex" in n.lower()), rot[0])


def _tone(experiment: Experiment, system):
    """The experiment's muscle tone as a TissueTone element bound to ``system``'s tissues (None when
    it has none). ValueError naming a tone row that is no tissue of the system."""
    from jointmodeller.core.studies.laxity import TissueTone

    if not experiment.tissue_tone:
        return None
    names = list(system.tissues.names)
    missing = [n for n, _ in experiment.tissue_tone if n not in names]
    if missing:
        raise ValueError(f"experiment {experiment.name!r}: tissue tone on {', '.join(map(repr, missing))}, which "
                         "is not a tissue of the built model (an attachment wrapped over a bone mesh cannot carry "
                         "tone)")
    tone = TissueTone()
    tone.bind(system.tissues, system.path_provider, [names.index(n) for n, _ in experiment.tissue_tone],
              [float(t) for _, t in experiment.tissue_tone])
    return tone


def with_tone(experiment: Experiment, system):
    """``system`` (free bodies) with the experiment's tissue tone added as an extra element."""
    tone = _tone(experiment, system)
    return system if tone is None else replace(system, extra_elements=[*system.extra_elements, tone])


def sweep_tree_project(project: Project, experiment: Experiment, *, loads: np.ndarray | None = None,
                       progress: Progress | None = None, cancel: Callable[[], bool] | None = None,
                       tol_N: float | None = None, on_pose: Callable[[dict], None] | None = None
                       ) -> tuple[LaxityResult, dict]:
    """The sweep of an experiment on a project with joints: the moving body's flexion coordinate is
    locked at ``flexion_sign · experiment.flexion_deg``, every other coordinate is free or locked as
    the project says, and each load's equilibrium is solved on the tree with the project's loads,
    gravity, the experiment's preload and tissue tone acting. on_pose(sample): each solved pose as a
    live sample (app.tree_studies.pose_sample). Returns the result and run parameters (the held
    coordinate and its value)."""
    from jointmodeller.app.coordinates import set_coordinates
    from jointmodeller.app.mobilized import build_mobilized, initial_state, mech_kinematics_at
    from jointmodeller.app.tree_statics import equilibrium_solver
    from jointmodeller.app.tree_studies import pose_sample
    from jointmodeller.core.studies.equilibrium import default_load_time
    from jointmodeller.core.studies.laxity import ExperimentLoad, TissueTone, run_tree_sweep

    for role, body in (("fixed body", experiment.fixed_body), ("moving body", experiment.moving_body)):
        if body not in [m.name for m in project.masses]:
            raise KeyError(f"experiment {experiment.name!r}: {role} {body!r} is not a mass of the project")
    flex = flexion_coordinate(project, experiment)
    held_rad = experiment.flexion_sign * math.radians(experiment.flexion_deg)
    held = set_coordinates(project, lock=(flex,), values={flex: held_rad})
    load = ExperimentLoad(0, np.zeros(3), np.zeros(3), np.zeros(3))
    tone = TissueTone()
    mp = build_mobilized(held, extra_elements=[load, tone])
    names = list(mp.built.body_names)
    load.body = names.index(experiment.moving_body)
    bound = _tone(experiment, mp.built.system)
    if bound is not None:
        tone.bind(bound.tissues, bound.provider, bound.rows, bound.tension_N)
    state0 = initial_state(mp, t=default_load_time(mp.built.system))
    kin0 = mech_kinematics_at(mp, state0.q)
    by_name = {a.name: a.spring for a in held.attachments}
    joint = BuiltJoint(mp.built.system, kin0.p_G, matrix_to_quat(kin0.R_GB),
                       [by_name.get(n, n) for n in mp.built.tissue_names])
    tree = mp.model.system
    k = mp.model.uindex[flex]
    Jw, _ = tree.jacobians(tree.kinematics(state0.q))
    axis = Jw[mp.model.body[experiment.moving_body], :, k]
    if not tree.rotational_u[k] or np.linalg.norm(axis) < 1e-12:
        raise ValueError(f"experiment {experiment.name!r}: coordinate {flex!r} does not turn the moving body")
    axis = experiment.flexion_sign * axis / np.linalg.norm(axis)
    moving_joint = held.mass(experiment.moving_body).joint
    long_axes = joint_long_axes(mp, state0.q, experiment.moving_body,
                                moving_joint.coordinates if moving_joint else (), flex)
    if long_axes is not None:  # point them proximally: from the limb carried by the moving bone to the joint
        carried = carried_masses(held, experiment.moving_body)
        m = np.array([held.mass(n).mass_kg for n in carried])
        com = (m[:, None] * kin0.p_G[[names.index(n) for n in carried]]).sum(axis=0) / m.sum()
        centre = kin0.p_G[load.body] + kin0.R_GB[load.body] @ joint_child_origin_B(joint, load.body, moving_joint)
        if (centre - com) @ long_axes[1] < 0:
            long_axes = (-long_axes[0], -long_axes[1])
    frames = joint_frames(held, experiment, joint, flexion_axis_G=axis, long_axes_G=long_axes)
    seq = experiment_loads(experiment) if loads is None else loads
    protocol = protocol_for(experiment, joint, names.index(experiment.fixed_body), load.body, frames, seq)
    result = run_tree_sweep(tree, state0, mp.built.system, lambda q: mech_kinematics_at(mp, q), protocol, load,
                            progress=progress, cancel=cancel, tol_N=tol_N,
                            on_solved=None if on_pose is None else (lambda q: on_pose(pose_sample(mp, q))),
                            equilibrium=equilibrium_solver(mp, max_iterations=60, cancel=cancel,
                                                               settle=False))
    return result, {"system": "tree", "flexion_coordinate": flex,
                    "flexion_coordinate_deg": math.degrees(held_rad)}


def sweep_project(project: Project, experiment: Experiment, *, joint: BuiltJoint | None = None,
                  loads: np.ndarray | None = None, progress: Progress | None = None,
                  cancel: Callable[[], bool] | None = None, warm_start: bool = True,
                  tol_N: float | None = None, contact_geometry: str = "exact") -> LaxityResult:
    """The core sweep of an experiment of ``project`` on free bodies (builds the joint unless one is
    given, its contact on ``contact_geometry``), the JCS flexion held at ``experiment.flexion_deg``;
    projects with joints go through :func:`sweep_tree_project`."""
    joint = joint or build_joint(project, contact_geometry=contact_geometry)
    protocol = experiment_protocol(project, experiment, joint, loads)
    system = with_tone(experiment, joint.system)
    return run_sweep(system, protocol, joint.p0_G, joint.q0_GB, warm_start=warm_start,
                     progress=progress, cancel=cancel, tol_N=tol_N)


def joint_contact_geometry(joint: BuiltJoint) -> str:
    """The contact geometry a built joint's contact pairs run on ("exact" without contact pairs)."""
    kinds = {getattr(e, "geometry", "exact") for e in joint.system.extra_elements if hasattr(e, "frozen")}
    return kinds.pop() if len(kinds) == 1 else "exact"


def run_laxity(project: Project, experiment_name: str | None = None, progress: Progress | None = None,
               cancel: Callable[[], bool] | None = None, *, joint: BuiltJoint | None = None,
               max_wall_s: float | None = None, tol_N: float | None = None,
               on_pose: Callable[[dict], None] | None = None, contact_geometry: str = AUTO_CONTACT_GEOMETRY
               ) -> RunRecord:
    """Replay a laxity experiment: a RunRecord with the curves (status "stopped" with the steps done
    when cancel() turned True or ``max_wall_s`` seconds passed; "failed" with the message when an
    equilibrium was not found). tol_N: each step's residual tolerance, force [N] and moment per model
    length (default: the sweep's own, 1e-6 N on smooth models and 1e-2 N with contact or wrapping).
    on_pose(sample): each solved pose as a live sample (projects with joints: the tree sweep).
    contact_geometry: "exact" (closest points on the meshes), "field" (signed distance fields, read
    from the disk cache: ~3x faster on the high-resolution demo, laxity within 0.1 %, docs/sdf.md) or
    "auto" (the default: fields for free bones, the exact meshes for a tree), recorded in the
    parameters as run (and as asked, "contact_geometry_requested"); projects with joints sweep on the
    exact meshes only (their statics freeze contact sets of mesh faces), and ask for "field" in vain
    with a ValidationError. A given ``joint`` runs on the geometry it was built with.

    progress(done, total, load, value) after each load step (value in the measure's unit) - the GUI
    draws the live curve from it.
    """
    from jointmodeller.app.mobilized import needs_tree
    from jointmodeller.model.errors import Problem, ValidationError

    requested_geometry = contact_geometry
    tree = needs_tree(project)
    if check_contact_geometry(contact_geometry) == "field" and tree:
        raise ValidationError(Problem("Run", None, "contact geometry",
                                      f"{contact_geometry!r}: a laxity sweep of a project with joints runs on the "
                                      "exact meshes (its statics freeze contact sets of mesh faces); distance "
                                      "fields serve free-bone projects and dynamics"))
    contact_geometry = (joint_contact_geometry(joint) if joint is not None
                        else resolve_contact_geometry(contact_geometry, study="laxity", tree=tree))
    experiment = find_experiment(project, experiment_name)
    extra: dict[str, Any] = {"system": "free bodies", "contact_geometry": contact_geometry,
                             "contact_geometry_requested": requested_geometry}
    timed_out = [False]
    if max_wall_s is not None:
        deadline = time.perf_counter() + float(max_wall_s)
        user_cancel = cancel

        def cancel() -> bool:
            if user_cancel is not None and user_cancel():
                return True
            timed_out[0] = time.perf_counter() > deadline
            return timed_out[0]
    try:
        if needs_tree(project):
            flex = flexion_coordinate(project, experiment)  # named in a stopped or failed run too
            extra = {"system": "tree", "flexion_coordinate": flex,
                     "flexion_coordinate_deg": experiment.flexion_sign * experiment.flexion_deg,
                     "contact_geometry": contact_geometry, "contact_geometry_requested": requested_geometry}
            result, tree_extra = sweep_tree_project(project, experiment, progress=progress, cancel=cancel,
                                                    tol_N=tol_N, on_pose=on_pose)
            extra.update(tree_extra)
        else:
            result = sweep_project(project, experiment, joint=joint, progress=progress, cancel=cancel, tol_N=tol_N,
                                   contact_geometry=contact_geometry)
    except SweepCancelled as stop:
        why = (f"stopped at the wall-time limit of {max_wall_s:g} s with {stop.partial.loads.size} step(s) solved"
               if timed_out[0] else "stopped by the user")
        return result_to_run(stop.partial, experiment, "stopped", why, extra, project)
    except EquilibriumFailed as exc:  # keep the steps solved before, say where it stopped
        where = "the unloaded pose" if exc.load is None else f"load {exc.load:g} {load_unit(experiment)}"
        message = f"no equilibrium at {where}: {exc}"
        if exc.partial is not None:
            return result_to_run(exc.partial, experiment, "failed", message, extra, project)
        return RunRecord(study="laxity", parameters={"experiment": experiment.name}, status="failed", message=message)
    except Exception as exc:  # the run is stored as failed, with the reason
        run = RunRecord(study="laxity", parameters={"experiment": experiment.name}, status="failed",
                        message=f"{type(exc).__name__}: {exc}")
        return run
    run = result_to_run(result, experiment, extra_parameters=extra, project=project)
    if experiment.measured:
        run.summary["fit"] = compare_with_measured(run, experiment.measured)
        if run.summary["fit"].get("note"):
            run.message = run.summary["fit"]["note"]
    return run


# ------------------------------------------------------------------------------------------------
# measured data
# ------------------------------------------------------------------------------------------------


# ------------------------------------------------------------------------------------------------
# calibration
# ------------------------------------------------------------------------------------------------


# ------------------------------------------------------------------------------------------------
# parameter study
# ------------------------------------------------------------------------------------------------


# ------------------------------------------------------------------------------------------------
# report and the CLI entry
# ------------------------------------------------------------------------------------------------


