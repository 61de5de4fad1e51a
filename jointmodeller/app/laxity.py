"""Laxity use cases: replay an experiment, compare with measured data, calibrate, report, study.

The GUI panel and the CLI both call these. Everything takes a :class:`Project` (plain specs) and
returns plain results (:class:`RunRecord`, dicts); files are written only by :func:`write_report`,
:func:`laxity_command` and the explicit save helpers.

JCS axes of an experiment (``Experiment.axes``, points and directions in each bone's mesh frame L):
``origin_fixed``, ``flexion_axis_fixed``, ``long_axis_fixed`` on the fixed bone; ``origin_moving``,
``long_axis_moving`` on the moving bone. Long axes point proximally. Missing entries default to:
origins = the mid-point of the attachments joining the two bones at the initial pose; moving long
axis = from the moving bone's centre of mass to the joint centre, made perpendicular to the flexion
axis (so varus–valgus starts at zero). Global axes are never assumed: a moving bone without a joint
needs ``flexion_axis_fixed`` and ``long_axis_fixed`` (the experiment is refused, naming them).

Where the moving bone rides a joint (a project with joints), the JCS comes from that joint: the
flexion axis e1 is the axis about which the held flexion coordinate turns the moving bone (times
``Experiment.flexion_sign``); the long axes are the joint's last rotational coordinate's axis (the
axial rotation of a Grood & Suntay sequence such as OpenSim's knee: flexion, ab/adduction,
rotation) in the moving bone and, with the joint's rotations at zero, in the fixed bone; a joint
with fewer rotations (a pin) takes the centre-of-mass lines above.

Signs (one convention for every joint and side): e1 is oriented so that positive α is flexion (the
right-hand rule about e1); e3 (moving long axis) points proximally; e2 = e3 × e1. The experiment's
``flexion_deg`` is positive flexion: on a joint the flexion coordinate is set to
``flexion_sign · flexion_deg`` before the unloaded pose is solved (OpenSim JAM's ``knee_flex_r`` is a
rotation about −z, medial on the right, and grows in flexion: sign +1; gait2392's ``knee_angle_r``
shrinks in flexion: −1); on free bones the JCS flexion is held at ``flexion_deg``. Because flexion
swings the distal bone posteriorly at the knee and anteriorly at the elbow, e2 points posteriorly at
the knee (an anterior drawer is the negative side of an ``anterior_posterior`` sweep) and anteriorly
at the elbow. A mirrored (left) joint has the same e1 and e3 in G as its right twin, so it gives the
mirror image: flexion, anterior–posterior and distraction equal; varus–valgus, internal–external and
medial–lateral with the opposite sign for the mirrored load (tests/laxity/test_tree_sweep.py).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence, overload

import numpy as np

from jointmodeller.app.build import build_mechanical_system
from jointmodeller.app.executors import run_cases
from jointmodeller.core.mechanics.loads import PointLoads
from jointmodeller.core.spatial_math import matrix_to_quat, quat_to_matrix
from jointmodeller.core.studies.calibration import CalibrationProgress, CalibrationResult, fit_metrics
from jointmodeller.core.studies.jcs import COORDINATE_NAMES, JointFrames, anatomical_frame
from jointmodeller.core.studies.laxity import (
    EquilibriumFailed,
    LaxityProtocol,
    LaxityResult,
    SweepCancelled,
    load_sequence,
    parse_measure,
    run_sweep,
)
from jointmodeller.io.measured_csv import read_measured_csv
from jointmodeller.model.errors import JointModellerError
from jointmodeller.model.results import RunRecord
from jointmodeller.model.specs import Experiment, MeasuredPoint, Project

Progress = Callable[[int, int, float, float], None]
AXIS_KEYS = ("origin_fixed", "flexion_axis_fixed", "long_axis_fixed", "origin_moving", "long_axis_moving")


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


def build_joint(project: Project, *, gravity: bool = True, contact: bool = True, wrapping: bool = True) -> BuiltJoint:
    """The project's free-body system for a laxity sweep (app.build; the project's own loads removed)."""
    built = build_mechanical_system(project, contact=contact, wrapping=wrapping)
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


MIN_LONG_AXIS_M = 1e-3
"""A centre-of-mass line shorter than this (a body whose centre of mass sits at the joint, as the
distal femur and proximal tibia of OpenSim JAM's knee) cannot serve as a long axis."""


def joint_frames(project: Project, experiment: Experiment, joint: BuiltJoint,
                 flexion_axis_G: np.ndarray | None = None,
                 long_axes_G: tuple[np.ndarray, np.ndarray] | None = None) -> JointFrames:
    """The experiment's JCS frames on the two bodies (see the module docstring for the defaults).

    flexion_axis_G: the flexion axis when the experiment gives none (on a joint: its flexion
    coordinate's axis); then the fixed bone's long axis defaults to ``long_axes_G[0]`` (from the
    joint) or, like the moving bone's, to the line from the joint centre to its centre of mass
    (pointing proximally). long_axes_G: (fixed, moving) long axes in G from the joint, or None.
    Without flexion_axis_G the experiment must give the fixed bone's flexion and long axes
    (ValueError naming them)."""
    sys_ = joint.system
    names = list(sys_.bodies.names)
    i1, i2 = names.index(experiment.fixed_body), names.index(experiment.moving_body)
    axes = dict(experiment.axes)
    unknown = set(axes) - set(AXIS_KEYS)
    if unknown:
        raise ValueError(f"experiment {experiment.name!r}: unknown axes {sorted(unknown)}; "
                         f"known: {', '.join(AXIS_KEYS)}")
    R = quat_to_matrix(joint.q0_GB)
    p = joint.p0_G
    R_BL, com_L = sys_.bodies.R_BL, sys_.bodies.com_L

    def point_G(body: int, r_L) -> np.ndarray:
        return p[body] + R[body] @ (R_BL[body] @ (np.asarray(r_L, float) - com_L[body]))

    def dir_G(body: int, d_L) -> np.ndarray:
        return R[body] @ (R_BL[body] @ np.asarray(d_L, float))

    ts = sys_.tissues
    between = [(i, a, b) for i, (a, b) in enumerate(zip(ts.body_a, ts.body_b)) if {int(a), int(b)} == {i1, i2}]
    if between:
        ends = [p[int(a)] + R[int(a)] @ ts.r_a_B[i] for i, a, _ in between]
        ends += [p[int(b)] + R[int(b)] @ ts.r_b_B[i] for i, _, b in between]
        centre = np.mean(ends, axis=0)
    else:
        centre = 0.5 * (p[i1] + p[i2])
    if flexion_axis_G is None:
        missing = [k for k in ("flexion_axis_fixed", "long_axis_fixed") if k not in axes]
        if missing:
            raise ValueError(
                f"experiment {experiment.name!r}: the moving body {experiment.moving_body!r} has no joint, so its "
                f"joint coordinate system needs anatomical axes; set {' and '.join(missing)} (directions in "
                f"{experiment.fixed_body!r}'s mesh frame, the flexion axis oriented so that flexion is positive, "
                "the long axis pointing proximally) in the experiment's axes, or give the moving body a joint")
    o1 = point_G(i1, axes["origin_fixed"]) if "origin_fixed" in axes else centre
    o2 = point_G(i2, axes["origin_moving"]) if "origin_moving" in axes else centre
    if "flexion_axis_fixed" in axes:
        I_G = dir_G(i1, axes["flexion_axis_fixed"])
    else:
        I_G = np.asarray(flexion_axis_G, float)

    def across(v: np.ndarray) -> np.ndarray:
        return v - (v @ I_G) / (I_G @ I_G) * I_G

    def com_line(v: np.ndarray, which: str) -> np.ndarray:
        if np.linalg.norm(v) < MIN_LONG_AXIS_M:
            raise ValueError(
                f"experiment {experiment.name!r}: the {which} bone's centre of mass lies at the joint centre, so it "
                f"gives no long axis; set long_axis_{which} in the experiment's axes")
        return v

    if "long_axis_fixed" in axes:
        K_G = dir_G(i1, axes["long_axis_fixed"])
    elif long_axes_G is not None:
        K_G = across(np.asarray(long_axes_G[0], float))
    else:
        K_G = com_line(across(p[i1] - centre), "fixed")
    if "long_axis_moving" in axes:
        k_G = dir_G(i2, axes["long_axis_moving"])
    elif long_axes_G is not None:
        k_G = np.asarray(long_axes_G[1], float)
    else:
        k_G = across(centre - p[i2])
        if np.linalg.norm(k_G) < MIN_LONG_AXIS_M:
            k_G = K_G
    R_GI = anatomical_frame(K_G, I_G)
    R_GM = anatomical_frame(k_G, R_GI[:, 0])
    R_G1, R_G2 = R[i1] , R[i2]
    return JointFrames(R_G1.T @ R_GI, R_G1.T @ (o1 - p[i1]), R_G2.T @ R_GM, R_G2.T @ (o2 - p[i2]))


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


def load_unit(experiment: Experiment) -> str:
    return "N·m" if experiment.load_kind == "internal_external" else "N"


# ------------------------------------------------------------------------------------------------
# running
# ------------------------------------------------------------------------------------------------
MARKOLF_1978_ANTERIOR_MM = 5.5
"""Anterior tibial translation of intact knees under a 100 N drawer at 20° flexion, in vivo
(Markolf, Graff-Radford & Amstutz 1978; docs/references.md): what a knee's report compares with."""


def is_knee(experiment: Experiment, flexion_coordinate: str = "") -> bool:
    """A tibia moving on a femur (the experiment's bodies or the held coordinate name say so)."""
    names = f"{experiment.fixed_body} {experiment.moving_body} {flexion_coordinate}".lower()
    return "tib" in names or "knee" in names


def jcs_statement(experiment: Experiment, flexion_coordinate: str | None) -> str:
    """The joint coordinate system of a sweep in words (Grood & Suntay), its e2's anatomical sense."""
    source = (f"the joint coordinate {flexion_coordinate} (positive in flexion)" if flexion_coordinate
              else "the experiment's axes")
    return (f"Grood & Suntay: e1 the flexion axis of {experiment.fixed_body} from {source}, e3 the long axis of "
            f"{experiment.moving_body} (proximal), e2 = e3 × e1, the way flexion moves the distal end of "
            f"{experiment.moving_body}" + (" (posterior at the knee: a negative anterior_posterior load is an "
                                           "anterior drawer)" if is_knee(experiment, flexion_coordinate or "")
                                          else ""))


def drawer_summary(result: LaxityResult, experiment: Experiment, flexion_coordinate: str = "") -> dict:
    """For an anterior–posterior sweep: the translations at the largest loads each way, the tissues
    that carry the largest share of the anterior load and, for a knee, the ACL bundles' tension and
    the comparison with Markolf 1978 (anterior translation at 100 N)."""
    if experiment.load_kind != "anterior_posterior" or result.loads.size == 0:
        return {}
    knee = is_knee(experiment, flexion_coordinate)
    out: dict = {}
    loads, mm = result.loads, result.coords[:, 4] * 1000.0
    names = list(result.tissue_names)
    T = result.tissue_tension_N
    i0 = int(np.argmin(np.abs(loads)))
    i_pos, i_neg = int(np.argmax(loads)), int(np.argmin(loads))
    sides = [("posterior" if knee else "along_e2", i_pos)] if loads[i_pos] > 0 else []
    sides += [("anterior" if knee else "against_e2", i_neg)] if loads[i_neg] < 0 else []
    for label, i in sides:
        key = f"{label}_mm_at_{abs(loads[i]):g}N"
        out[key] = float(abs(mm[i] - mm[i0]))
        if T.size:
            gain = T[i] - T[i0]
            top = [k for k in np.argsort(-gain)[:5] if gain[k] > 1e-6]
            out[f"tissues_loaded_{label}_N"] = {names[k]: float(T[i, k]) for k in top}
        if knee and label == "anterior":
            acl = [k for k, n in enumerate(names) if "acl" in n.lower()]
            if acl and T.size:
                out["acl_tension_at_anterior_max_N"] = {names[k]: float(T[i, k]) for k in acl}
                out["acl_total_at_anterior_max_N"] = float(T[i, acl].sum())
            if abs(loads[i]) == 100.0:
                out["markolf_1978"] = {"anterior_mm_in_vivo_20deg": MARKOLF_1978_ANTERIOR_MM,
                                       "model_anterior_mm": out[key],
                                       "model_minus_in_vivo_mm": out[key] - MARKOLF_1978_ANTERIOR_MM,
                                       "model_flexion_deg": float(experiment.flexion_deg)}
    return out


def result_to_run(result: LaxityResult, experiment: Experiment, status: str = "completed", message: str = "",
                  extra_parameters: dict | None = None) -> RunRecord:
    """A RunRecord (study "laxity") holding the curves, tissue forces and the summary numbers."""
    stiff = result.stiffness() if result.loads.size >= 2 and np.ptp(result.measure) > 0 else {}
    summary = {"laxity": result.laxity, "unit": result.unit, "measure": result.measure_name,
               "stiffness": stiff, "stiffness_unit": f"{load_unit(experiment)}/{result.unit}",
               "flexion_deg_held": float(experiment.flexion_deg),
               "flexion_deg_unloaded": float(np.degrees(result.reference_coords[0])),
               "seconds": result.seconds, "steps_solved": int(result.loads.size),
               "max_residual_N": float(result.residual_N.max()) if result.residual_N.size else 0.0}
    if experiment.load_kind == "varus_valgus" and stiff:
        summary["moment_stiffness_Nm_per_" + result.unit] = stiff["secant"] * experiment.lever_m
    summary = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in summary.items()}
    summary["stiffness"] = {k: (v if math.isfinite(v) else None) for k, v in stiff.items()}
    flexion_coordinate = (extra_parameters or {}).get("flexion_coordinate") or ""
    summary["jcs"] = jcs_statement(experiment, flexion_coordinate or None)
    summary.update(drawer_summary(result, experiment, flexion_coordinate))
    params = {"experiment": experiment.name, "fixed_body": experiment.fixed_body, "moving_body": experiment.moving_body,
              "load_kind": experiment.load_kind, "max_load": experiment.max_load, "lever_m": experiment.lever_m,
              "steps": experiment.steps, "unload": experiment.unload, "flexion_deg": experiment.flexion_deg,
              "measure": experiment.measure, "sides": experiment.sides, **(extra_parameters or {})}
    return RunRecord(
        study="laxity", parameters=params, status=status, message=message,
        series={"load": result.loads, "measure": result.measure, "jcs": result.coords,
                "tissue_tension_N": result.tissue_tension_N, "extra_force_N": result.extra_force_N,
                "moving_p_G": result.pose_p_G, "moving_q_GB": result.pose_q_GB,
                "iterations": result.iterations.astype(np.int64), "evaluations": result.evaluations.astype(np.int64),
                "residual_N": result.residual_N},
        labels={"jcs": list(COORDINATE_NAMES), "tissue_tension_N": list(result.tissue_names),
                "moving_p_G": ["x", "y", "z"], "moving_q_GB": ["w", "x", "y", "z"]},
        summary=summary,
    )


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


def joint_long_axes(mp, state_q: np.ndarray, moving: str, coordinates: tuple[str, ...], flexion: str
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """(fixed, moving) long axes in G from the moving body's joint: the axis of its last rotational
    coordinate (of ``coordinates``, its joint's) other than ``flexion`` (Grood & Suntay's axial
    rotation) at ``state_q`` for the moving
    bone, and with the joint's own coordinates at zero for the fixed bone. None when the joint has
    no such coordinate (a pin) or its axis lies along the flexion axis."""
    from jointmodeller.core.studies.tree_equilibrium import rotational_speeds

    tree = mp.model.system
    names = [n for n in coordinates if n in mp.model.uindex]
    rot = rotational_speeds(tree, state_q)
    others = [n for n in names if n != flexion and rot[mp.model.uindex[n]]]
    if not others:
        return None
    last = others[-1]
    b = mp.model.body[moving]
    k_flex = mp.model.uindex[flexion]
    k_long = mp.model.uindex[last]
    Jw, _ = tree.jacobians(tree.kinematics(state_q))
    k_G, e1 = Jw[b, :, k_long], Jw[b, :, k_flex]
    q_zero = np.array(state_q, float)
    for n in names:
        if n in mp.model.qindex:
            q_zero[mp.model.qindex[n]] = 0.0
    Jw0, _ = tree.jacobians(tree.kinematics(q_zero))
    K_G = Jw0[b, :, k_long]
    for v in (k_G, K_G):
        if np.linalg.norm(np.cross(v, e1)) < 0.5 * np.linalg.norm(v) * np.linalg.norm(e1):
            return None  # within 30° of the flexion axis: not a long axis
    return K_G / np.linalg.norm(K_G), k_G / np.linalg.norm(k_G)


def _carried_masses(project: Project, body: str) -> list[str]:
    """``body`` and every mass whose joint chain leads to it (the limb it carries)."""
    parent = {m.name: (m.joint.parent if m.joint is not None else None) for m in project.masses}
    out = []
    for name in parent:
        n: str | None = name
        seen = set()
        while n is not None and n not in seen:
            if n == body:
                out.append(name)
                break
            seen.add(n)
            n = parent.get(n)
    return out


def _joint_child_origin_B(joint: BuiltJoint, body: int, spec) -> np.ndarray:
    """The moving body's joint frame origin (its frame_child) in the body frame B."""
    sys_ = joint.system
    r_L = np.zeros(3) if spec is None else np.asarray(spec.frame_child.origin_L, float)
    return sys_.bodies.R_BL[body] @ (r_L - sys_.bodies.com_L[body])


def sweep_tree_project(project: Project, experiment: Experiment, *, loads: np.ndarray | None = None,
                       progress: Progress | None = None, cancel: Callable[[], bool] | None = None,
                       tol_N: float | None = None, on_pose: Callable[[dict], None] | None = None
                       ) -> tuple[LaxityResult, dict]:
    """The sweep of an experiment on a project with joints: the moving body's flexion coordinate is
    locked at ``flexion_sign · experiment.flexion_deg``, every other coordinate is free or locked as
    the project says, and each load's equilibrium is solved on the tree with the project's loads,
    gravity, the experiment's preload and tissue tone acting. on_pose(sample): each solved pose as a
    live sample (app.mobilized.pose_sample). Returns the result and run parameters (the held
    coordinate and its value)."""
    from jointmodeller.app.coordinates import set_coordinates
    from jointmodeller.app.mobilized import (
        build_mobilized,
        equilibrium_solver,
        initial_state,
        mech_kinematics_at,
        pose_sample,
    )
    from jointmodeller.core.studies.equilibrium import default_load_time
    from jointmodeller.core.studies.laxity import ExperimentLoad, TissueTone, run_tree_sweep
    from jointmodeller.core.studies.tree_equilibrium import rotational_speeds

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
    if not rotational_speeds(tree, state0.q)[k] or np.linalg.norm(axis) < 1e-12:
        raise ValueError(f"experiment {experiment.name!r}: coordinate {flex!r} does not turn the moving body")
    axis = experiment.flexion_sign * axis / np.linalg.norm(axis)
    moving_joint = held.mass(experiment.moving_body).joint
    long_axes = joint_long_axes(mp, state0.q, experiment.moving_body,
                                moving_joint.coordinates if moving_joint else (), flex)
    if long_axes is not None:  # point them proximally: from the limb carried by the moving bone to the joint
        carried = _carried_masses(held, experiment.moving_body)
        m = np.array([held.mass(n).mass_kg for n in carried])
        com = (m[:, None] * kin0.p_G[[names.index(n) for n in carried]]).sum(axis=0) / m.sum()
        centre = kin0.p_G[load.body] + kin0.R_GB[load.body] @ _joint_child_origin_B(joint, load.body, moving_joint)
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
                  tol_N: float | None = None) -> LaxityResult:
    """The core sweep of an experiment of ``project`` on free bodies (builds the joint unless one is
    given), the JCS flexion held at ``experiment.flexion_deg``; projects with joints go through
    :func:`sweep_tree_project`."""
    joint = joint or build_joint(project)
    protocol = experiment_protocol(project, experiment, joint, loads)
    system = with_tone(experiment, joint.system)
    return run_sweep(system, protocol, joint.p0_G, joint.q0_GB, warm_start=warm_start,
                     progress=progress, cancel=cancel, tol_N=tol_N)


def run_laxity(project: Project, experiment_name: str | None = None, progress: Progress | None = None,
               cancel: Callable[[], bool] | None = None, *, joint: BuiltJoint | None = None,
               max_wall_s: float | None = None, tol_N: float | None = None,
               on_pose: Callable[[dict], None] | None = None) -> RunRecord:
    """Replay a laxity experiment: a RunRecord with the curves (status "stopped" with the steps done
    when cancel() turned True or ``max_wall_s`` seconds passed; "failed" with the message when an
    equilibrium was not found). tol_N: each step's residual tolerance, force [N] and moment per model
    length (default: the sweep's own, 1e-6 N on smooth models and 1e-2 N with contact or wrapping).
    on_pose(sample): each solved pose as a live sample (projects with joints: the tree sweep).

    progress(done, total, load, value) after each load step (value in the measure's unit) - the GUI
    draws the live curve from it.
    """
    from jointmodeller.app.mobilized import needs_tree

    experiment = find_experiment(project, experiment_name)
    extra: dict[str, Any] = {"system": "free bodies"}
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
                     "flexion_coordinate_deg": experiment.flexion_sign * experiment.flexion_deg}
            result, extra = sweep_tree_project(project, experiment, progress=progress, cancel=cancel, tol_N=tol_N,
                                               on_pose=on_pose)
        else:
            result = sweep_project(project, experiment, joint=joint, progress=progress, cancel=cancel, tol_N=tol_N)
    except SweepCancelled as stop:
        why = (f"stopped at the wall-time limit of {max_wall_s:g} s with {stop.partial.loads.size} step(s) solved"
               if timed_out[0] else "stopped by the user")
        return result_to_run(stop.partial, experiment, "stopped", why, extra)
    except EquilibriumFailed as exc:  # keep the steps solved before, say where it stopped
        where = "the unloaded pose" if exc.load is None else f"load {exc.load:g} {load_unit(experiment)}"
        message = f"no equilibrium at {where}: {exc}"
        if exc.partial is not None:
            return result_to_run(exc.partial, experiment, "failed", message, extra)
        return RunRecord(study="laxity", parameters={"experiment": experiment.name}, status="failed", message=message)
    except Exception as exc:  # the run is stored as failed, with the reason
        run = RunRecord(study="laxity", parameters={"experiment": experiment.name}, status="failed",
                        message=f"{type(exc).__name__}: {exc}")
        return run
    run = result_to_run(result, experiment, extra_parameters=extra)
    if experiment.measured:
        run.summary["fit"] = compare_with_measured(run, experiment.measured)
        if run.summary["fit"].get("note"):
            run.message = run.summary["fit"]["note"]
    return run


# ------------------------------------------------------------------------------------------------
# measured data
# ------------------------------------------------------------------------------------------------
def import_measured(project: Project, experiment_name: str | None, csv_path) -> Project:
    """A copy of ``project`` whose experiment holds the measured points read from ``csv_path``
    (values converted to the experiment measure's unit). Errors name file, line and column."""
    experiment = find_experiment(project, experiment_name)
    _, _, unit = parse_measure(experiment.measure)
    points = read_measured_csv(csv_path, value_unit=unit)
    new = replace(experiment, measured=points)
    return project.with_rows("experiments", tuple(new if e is experiment else e for e in project.experiments))


def simulated_at(loads_sim: np.ndarray, values_sim: np.ndarray, loads: np.ndarray) -> np.ndarray:
    """Simulated values at measured loads: linear interpolation along the loading curve (one value
    per load; measured loads outside the simulated range are an error)."""
    lo = np.asarray(loads_sim, float)
    va = np.asarray(values_sim, float)
    order = np.argsort(lo, kind="stable")
    lo, va = lo[order], va[order]
    keep = np.concatenate([[True], np.diff(lo) > 0])
    lo, va = lo[keep], va[keep]
    loads = np.asarray(loads, float)
    span = max(abs(lo[0]), abs(lo[-1]), 1e-12)
    if loads.size and (loads.min() < lo[0] - 1e-9 * span or loads.max() > lo[-1] + 1e-9 * span):
        raise ValueError(f"measured loads {loads.min():g}..{loads.max():g} exceed the simulated range "
                         f"{lo[0]:g}..{lo[-1]:g}: raise the experiment's max_load")
    return np.interp(loads, lo, va)


def compare_with_measured(run: RunRecord, measured: tuple[MeasuredPoint, ...]) -> dict:
    """RMSE and maximum error of the run's curve against measured points (all repeats), and per repeat.
    Measured points outside the swept loads are left out of the comparison; ``note`` says how many."""
    ml = np.array([p.load for p in measured])
    mv = np.array([p.value for p in measured])
    mr = np.array([p.repeat for p in measured])
    swept = np.asarray(run.series["load"], float)
    note = ""
    if swept.size:
        span = max(abs(swept.min()), abs(swept.max()), 1e-12)
        inside = (ml >= swept.min() - 1e-9 * span) & (ml <= swept.max() + 1e-9 * span)
        if not inside.all():
            note = (f"{int((~inside).sum())} of {ml.size} measured points lie outside the swept loads "
                    f"{swept.min():g}..{swept.max():g} and were left out of the comparison")
            ml, mv, mr = ml[inside], mv[inside], mr[inside]
    if not ml.size or not swept.size:
        return {"note": note or "no measured point to compare", "points_compared": 0}
    sim = simulated_at(run.series["load"], run.series["measure"], ml)
    out = fit_metrics(sim, mv)
    out["points_compared"] = int(ml.size)
    if note:
        out["note"] = note
    out["per_repeat"] = {str(int(r)): fit_metrics(sim[mr == r], mv[mr == r]) for r in np.unique(mr)}
    out["measured_laxity"] = float(np.ptp(mv))
    return out


# ------------------------------------------------------------------------------------------------
# calibration
# ------------------------------------------------------------------------------------------------
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


# ------------------------------------------------------------------------------------------------
# parameter study
# ------------------------------------------------------------------------------------------------
def laxity_case(case: dict) -> dict:
    """One parameter-study case (module-level, picklable): {"project": Project, "experiment": name,
    "stiffness": {group: scale}, "slack": {group: scale}} -> laxity and the curve."""
    project: Project = case["project"]
    experiment = find_experiment(project, case.get("experiment"))
    joint = build_joint(project)
    stiff = case.get("stiffness", {}) or {}
    slack = case.get("slack", {}) or {}
    groups = sorted(set(stiff) | set(slack))
    if groups:
        joint = replace(joint, system=scaled_tissue_system(
            joint, groups, np.array([stiff.get(g, 1.0) for g in groups]),
            np.array([slack.get(g, 1.0) for g in groups]) if slack else None))
    res = sweep_project(project, experiment, joint=joint)
    return {"stiffness": dict(stiff), "slack": dict(slack), "laxity": res.laxity,
            "loads": res.loads.tolist(), "values": res.measure.tolist()}


def one_at_a_time_cases(groups: list[str], scales=(0.5, 0.75, 1.0, 1.5, 2.0)) -> list[dict]:
    """Stiffness of each group alone at each scale (the others at 1)."""
    return [{"stiffness": {g: float(s)}} for g in groups for s in scales]


def parameter_study(project: Project, experiment_name: str | None, cases: list[dict], *, scheduler: Any = None,
                    max_workers: int | None = None, progress: Callable[[int, int], None] | None = None,
                    case_fn: Callable[[dict], dict] = laxity_case) -> RunRecord:
    """Run independent laxity cases through an executor (local processes, or Dask when ``scheduler``
    is an address or Client) and collect them into one RunRecord (study "laxity_study")."""
    t0 = time.perf_counter()
    full = [{"project": project, "experiment": experiment_name, **c} for c in cases]
    results = run_cases(case_fn, full, scheduler=scheduler, max_workers=max_workers, progress=progress)
    return study_run(results, executor="dask" if scheduler is not None else "processes",
                     seconds=time.perf_counter() - t0)


def study_run(results: list[dict], executor: str, seconds: float = 0.0) -> RunRecord:
    """Stack case results (dicts with stiffness/slack/laxity/loads/values) into a RunRecord."""
    keys = sorted({f"stiffness:{g}" for r in results for g in r.get("stiffness", {})}
                  | {f"slack:{g}" for r in results for g in r.get("slack", {})})
    P = np.array([[r.get(k.split(":", 1)[0], {}).get(k.split(":", 1)[1], 1.0) for k in keys] for r in results],
                 float).reshape(len(results), len(keys))
    lax = np.array([r["laxity"] for r in results], float)
    width = max((len(r["values"]) for r in results), default=0)
    curves = np.full((len(results), width), np.nan)
    loads = np.full((len(results), width), np.nan)
    for i, r in enumerate(results):
        curves[i, : len(r["values"])] = r["values"]
        loads[i, : len(r["loads"])] = r["loads"]
    return RunRecord(study="laxity_study", parameters={"executor": executor, "cases": len(results)},
                     series={"parameters": P, "laxity": lax, "loads": loads, "values": curves},
                     labels={"parameters": keys},
                     summary={"laxity_min": float(np.nanmin(lax)) if lax.size else None,
                              "laxity_max": float(np.nanmax(lax)) if lax.size else None, "seconds": seconds})


# ------------------------------------------------------------------------------------------------
# report and the CLI entry
# ------------------------------------------------------------------------------------------------
def experiment_dict(experiment: Experiment) -> dict:
    return {"name": experiment.name, "fixed_body": experiment.fixed_body, "moving_body": experiment.moving_body,
            "load_kind": experiment.load_kind, "max_load": experiment.max_load, "lever_m": experiment.lever_m,
            "steps": experiment.steps, "unload": experiment.unload, "flexion_deg": experiment.flexion_deg,
            "measure": experiment.measure, "measured_points": len(experiment.measured), "sides": experiment.sides,
            "flexion_sign": experiment.flexion_sign,
            "load_point_L": None if experiment.load_point_L is None else list(experiment.load_point_L),
            "preload_force_N": list(experiment.preload_force_N),
            "preload_moment_Nm": list(experiment.preload_moment_Nm),
            "tissue_tone_N": dict(experiment.tissue_tone)}


def tissue_parameters(project: Project) -> dict:
    """Spring type and attachment parameters for the summary (what the curves were computed with)."""
    return {"springs": {s.name: {"kx": list(s.kx), "tension_only": s.tension_only, "slack_length_m": s.slack_length_m}
                        for s in project.springs},
            "attachments": {a.name: {"spring": a.spring, "initial_length_m": a.initial_length_m}
                            for a in project.attachments}}


def write_report(out_dir, project: Project, experiment: Experiment, run: RunRecord, *,
                 calibration: CalibrationResult | None = None, calibrated_run: RunRecord | None = None,
                 study: RunRecord | None = None, extra: dict | None = None) -> dict:
    """Write summary.json, curve CSVs, PNG plots and report.html into ``out_dir``; returns the summary."""
    from jointmodeller.io import report

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lunit = load_unit(experiment)
    files = []
    cols = {"load": run.series["load"], f"{experiment.measure}": run.series["measure"]}
    for j, name in enumerate(COORDINATE_NAMES):
        cols[f"{name}_{'deg' if j < 3 else 'mm'}"] = run.series["jcs"][:, j] * (np.degrees(1) if j < 3 else 1000.0)
    for j, name in enumerate(run.labels.get("tissue_tension_N", [])):
        cols[f"tension_N:{name}"] = run.series["tissue_tension_N"][:, j]
    cols["extra_force_N"] = run.series["extra_force_N"]
    files.append(report.write_curve_csv(out / "curve.csv", cols))
    measured = None
    if experiment.measured:
        measured = (np.array([p.load for p in experiment.measured]), np.array([p.value for p in experiment.measured]),
                    np.array([p.repeat for p in experiment.measured]))
        files.append(report.write_curve_csv(out / "measured.csv", {"load": measured[0], "value": measured[1],
                                                                   "repeat": measured[2]}))
    extra_curves = {}
    if calibrated_run is not None:
        extra_curves["calibrated model"] = (calibrated_run.series["load"], calibrated_run.series["measure"])
        calibrated_curve = {"load": calibrated_run.series["load"], experiment.measure: calibrated_run.series["measure"]}
        files.append(report.write_curve_csv(out / "curve_calibrated.csv", calibrated_curve))
    images = [report.plot_curve(out / "curve.png", run.series["load"], run.series["measure"],
                                xlabel=f"load [{lunit}]", ylabel=f"{experiment.measure.replace('_', ' ')}",
                                title=f"{experiment.name}", measured=measured, extra_curves=extra_curves)]
    if run.series["tissue_tension_N"].size:
        images.append(report.plot_tissue_forces(out / "tissue_forces.png", run.series["load"],
                                                run.series["tissue_tension_N"], run.labels.get("tissue_tension_N", []),
                                                xlabel=f"load [{lunit}]", title="tissue forces"))
    files += images
    summary = {"title": f"{project.info.title}: {experiment.name}", "project": project.info.title,
               "experiment": experiment_dict(experiment), **run.summary, "status": run.status,
               **({"message": run.message} if run.message else {}),
               **{k: run.parameters[k] for k in ("system", "flexion_coordinate", "flexion_coordinate_deg")
                  if k in run.parameters},
               "parameters": tissue_parameters(project)}
    if calibration is not None:
        summary["calibration"] = calibration.as_dict()
        if calibrated_run is not None:
            summary["calibrated"] = {k: calibrated_run.summary.get(k) for k in ("laxity", "stiffness", "fit")}
    if study is not None:
        files.append(report.write_curve_csv(out / "study.csv", {
            **{k: study.series["parameters"][:, j] for j, k in enumerate(study.labels["parameters"])},
            "laxity": study.series["laxity"]}))
        summary["study"] = {**study.summary, **study.parameters}
    summary.update(extra or {})
    summary["files"] = sorted({Path(f).name for f in files} | {"summary.json", "report.html"})
    report.write_summary_json(out / "summary.json", summary)
    report.write_html_summary(out / "report.html", summary, images)
    return summary


def _check_output_folder(out_dir) -> Path:
    """The report folder, checked before any sweep (nothing is made here): one clear error when it is a
    file, or when it or the folder it would be made in cannot be written."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise JointModellerError(f"--out {out}: exists and is not a folder; give a folder for the report")
    base = out
    while not base.exists():  # the nearest existing folder, where the new ones would be made
        if base.parent == base:
            break
        base = base.parent
    if not base.is_dir():
        raise JointModellerError(f"--out {out}: {base} is not a folder, so the report folder cannot be made there")
    if not os.access(base, os.W_OK):
        raise JointModellerError(f"--out {out}: {base} is read-only")
    return out


def _check_measured_in_sweep(experiment: Experiment, source=None) -> None:
    """Measured loads must lie within the experiment's sweep (its curve is interpolated at them)."""
    if not experiment.measured:
        return
    loads = np.array([p.load for p in experiment.measured], float)
    sweep = experiment_loads(experiment)
    lo, hi = float(sweep.min()), float(sweep.max())
    span = max(abs(lo), abs(hi), 1e-12)
    if loads.min() < lo - 1e-9 * span or loads.max() > hi + 1e-9 * span:
        where = f" in {source}" if source is not None else ""
        raise JointModellerError(
            f"experiment {experiment.name!r}: measured loads{where} reach {loads.min():g}..{loads.max():g} "
            f"{load_unit(experiment)}, beyond the sweep {lo:g}..{hi:g} {load_unit(experiment)}; raise the "
            f"experiment's max_load (now {experiment.max_load:g}) or leave those rows out")


def laxity_command(project_path, experiment: str | None = None, data=None, calibrate: bool = False,
                   out_dir="laxity-report", scheduler: str | None = None,
                   progress: Callable[[str, int, int], None] | None = None, *, per: str = "spring",
                   fit_slack: bool = False, groups: list[str] | None = None,
                   study_cases: list[dict] | None = None, max_wall_s: float | None = None, workers: int = 1,
                   calibration_progress: Callable[[CalibrationProgress], None] | None = None,
                   max_iterations: int | None = None) -> dict:
    """``jointmodeller laxity PROJECT [--experiment NAME] [--data FILE] [--calibrate] [--scheduler ADDR]
    [--workers N] [--max-wall-s S] --out DIR``: replay, compare, calibrate, study and report; returns
    the summary (summary.json).

    The run is stored in the project file; a calibrated project goes to ``<out>/<stem>-calibrated.jmdb``
    (the original is kept). With ``calibrate`` the fit's finite-difference columns run on ``scheduler``
    (Dask: an address, "local[:N]") or on ``workers`` local processes. Without ``calibrate``, a
    ``scheduler`` (or ``study_cases``) runs a one-at-a-time stiffness study through the executor (Dask
    at that address; local processes when only cases are given). progress(stage, done, total) with
    stage "sweep", "calibrate" (done = iterations, total = the most allowed), "study";
    calibration_progress(CalibrationProgress) instead for the calibration's iterations and cost.
    max_wall_s: the sweep stops after this many seconds and keeps (stores and reports) the steps solved
    by then; the calibration, given as long, ends with the best scales so far (status "budget").
    """
    from jointmodeller.persistence.store import ProjectStore, load_project, save_project

    project_path = Path(project_path)
    out_dir = _check_output_folder(out_dir)  # before the sweep: a bad --out must not lose its results
    project = load_project(project_path)
    exp = find_experiment(project, experiment)
    if data is not None:
        project = import_measured(project, exp.name, data)
        exp = find_experiment(project, exp.name)
    _check_measured_in_sweep(exp, data)
    out_dir.mkdir(parents=True, exist_ok=True)  # every input checked: now the folder may be made
    joint = build_joint(project)
    total = len(experiment_loads(exp))
    run = run_laxity(project, exp.name, None if progress is None else (lambda i, n, lo, v: progress("sweep", i, n)),
                     joint=joint, max_wall_s=max_wall_s)
    with ProjectStore(project_path) as store:  # a failed sweep too: its solved steps are kept
        run_id = store.save_run(run)
    if run.status == "failed":
        solved = int(run.series["load"].size) if "load" in run.series else 0
        if solved:
            write_report(out_dir, project, exp, run, extra={"run_id": run_id, "steps": total})
        kept = (f"its {solved} solved step(s) are stored as run #{run_id} and reported in {out_dir}" if solved
                else f"stored as failed run #{run_id}")
        raise RuntimeError(f"laxity sweep failed: {run.message}; {kept}")
    fit = cal_run = None
    extra: dict = {}
    if calibrate:
        from jointmodeller.app.calibration import DEFAULT_MAX_ITERATIONS

        most = DEFAULT_MAX_ITERATIONS if max_iterations is None else max_iterations
        report_fit = calibration_progress
        if report_fit is None and progress is not None:
            def report_fit(state: CalibrationProgress) -> None:
                progress("calibrate", state.iteration, most)
        fitted, fit = calibrate_experiment(project, exp.name, per=per, groups=groups, fit_slack=fit_slack, joint=joint,
                                           progress=report_fit, scheduler=scheduler, workers=workers,
                                           max_wall_s=max_wall_s, max_iterations=most)
        out_project = Path(out_dir) / f"{project_path.stem}-calibrated{project_path.suffix or '.jmdb'}"
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        if out_project.exists():
            out_project.unlink()
        save_project(out_project, fitted)
        cal_run = run_laxity(fitted, exp.name, max_wall_s=max_wall_s)
        cal_run.parameters["calibrated_from"] = str(project_path)
        with ProjectStore(out_project) as store:
            store.save_run(cal_run)
        extra["calibrated_project"] = str(out_project)
        extra["parameters_fitted"] = tissue_parameters(fitted)
    study = None
    if (scheduler is not None and not calibrate) or study_cases is not None:
        cases = study_cases or one_at_a_time_cases(calibration_groups(project, joint))
        study = parameter_study(project, exp.name, cases, scheduler=scheduler,
                                progress=None if progress is None else (lambda i, n: progress("study", i, n)))
        with ProjectStore(project_path) as store:
            store.save_run(study)
    extra["run_id"] = run_id
    extra["steps"] = total
    return write_report(out_dir, project, exp, run, calibration=fit, calibrated_run=cal_run, study=study, extra=extra)
