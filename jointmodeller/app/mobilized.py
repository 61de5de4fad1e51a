"""The mobilizer backend on a whole project: mass rows with a JointSpec ride their mobilizers, the
others are free 6-DOF bodies (MJM's case) or welded when fixed, and the project's constraints and
the MJM force elements (tissues, wrapping, contact, loads) act on the tree (issue 6 item 4).

One way of doing each thing: the tree comes from ``core.studies.muscle_paths.build_multibody``, the
force elements from ``app.build.build_mechanical_system``; this module only bridges their body
orders and frames, maps constraint rows, and runs and reports a simulation like ``app.studies``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from jointmodeller.app.build import BuiltMechanics, build_mechanical_system
from jointmodeller.app.studies import state_series
from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.mechanics.rotations import matrix_to_quat
from jointmodeller.core.multibody import constraints as mbc
from jointmodeller.core.multibody.functions import Function
from jointmodeller.core.multibody.integrate import simulate
from jointmodeller.core.studies.muscle_paths import MultibodyModel, backend_function, build_multibody
from jointmodeller.model.errors import Problem, ValidationError
from jointmodeller.model.results import RunRecord
from jointmodeller.model.specs import GROUND, ConstraintSpec, FunctionSpec, Project

Progress = Callable[[float], None]


class MechanicsForcesOnTree:
    """A ForceElement for the tree that evaluates MJM force elements in their own body order.

    Tree bodies use the mesh frame L as their force frame (R_BK = I, origin at the COM after the
    adapter), the MJM elements the principal frame B: ``R_GB = R_GL R_BLᵀ``. Bodies of the MJM
    system that are not in the tree (the ground body) keep their initial pose.
    """

    def __init__(self, built: BuiltMechanics, tree_names: list[str]):
        system = built.system
        self.elements = [e for e in system.force_elements() if e is not system.gravity]
        self.n_mech = system.n_bodies
        self.mech_of_tree = np.array([built.body_names.index(n) for n in tree_names], dtype=np.int64)
        self.R_BL = system.bodies.R_BL[self.mech_of_tree]
        kin0 = built.state.get_kinematics()
        self._p0, self._R0 = kin0.p_G.copy(), kin0.R_GB.copy()

    def mech_kinematics(self, kin: BodyKinematics) -> BodyKinematics:
        """Tree kinematics (K = L at the COM) as MJM kinematics (B = principal axes)."""
        p, R = self._p0.copy(), self._R0.copy()
        v, w = np.zeros((self.n_mech, 3)), np.zeros((self.n_mech, 3))
        idx = self.mech_of_tree
        p[idx] = kin.p_G
        R[idx] = np.einsum("nij,nkj->nik", kin.R_GB, self.R_BL)
        v[idx] = kin.v_G
        w[idx] = kin.w_G
        return BodyKinematics(p, R, v, w)

    def accumulate(self, t: float, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray) -> None:
        mk = self.mech_kinematics(kin)
        f = np.zeros((self.n_mech, 3))
        m = np.zeros((self.n_mech, 3))
        for element in self.elements:
            element.accumulate(t, mk, f, m)
        force_G += f[self.mech_of_tree]
        torque_G += m[self.mech_of_tree]


@dataclass
class MobilizedProject:
    """A project built for the mobilizer backend."""

    model: MultibodyModel
    built: BuiltMechanics
    bridge: MechanicsForcesOnTree
    tree_names: list[str]


def _function(fn: FunctionSpec) -> Function:
    """A constraint's function of one argument (the independent coordinate, or time)."""
    return backend_function(replace(fn, coordinates=("x",)), ("x",))


def _constraint(c: ConstraintSpec, model: MultibodyModel):
    """A core constraint for one constraint row (bodies by name, points in each body's L)."""
    body = [model.body[b] if b != GROUND else -1 for b in c.bodies]
    pts = [np.asarray(p, float) for p in c.points_L]
    if c.kind == "coordinate_coupler":
        dep, ind = (model.qindex[n] for n in c.coordinates[:2])
        return mbc.CoordinateCoupler(dep, ind, _function(c.function))
    if c.kind == "prescribed_motion":
        return mbc.PrescribedMotion(model.qindex[c.coordinates[0]], _function(c.function))
    if c.kind == "point_on_plane":
        return mbc.PointOnPlane(body[0], np.asarray(c.direction, float), pts[0], body[1], pts[1])
    if c.kind == "point_on_line":
        return mbc.PointOnLine(body[0], np.asarray(c.direction, float), pts[0], body[1], pts[1])
    if c.kind == "ball":
        return mbc.Ball(body[0], pts[0], body[1], pts[1])
    if c.kind == "rod":
        return mbc.Rod(body[0], pts[0], body[1], pts[1], c.length_m)
    if c.kind == "weld":
        X1, X2 = np.eye(4), np.eye(4)
        X1[:3, 3], X2[:3, 3] = pts[0], pts[1]
        return mbc.Weld(body[0], X1, body[1], X2)
    raise ValueError(f"unknown constraint kind {c.kind!r}")


def build_mobilized(project: Project, *, contact: bool = True, wrapping: bool = True) -> MobilizedProject:
    """The tree (mobilizers and constraints) with the MJM force elements acting on it."""
    try:
        model = build_multibody(project)
    except ValueError as exc:
        raise ValidationError(Problem("Masses", None, "joint", str(exc))) from None
    built = build_mechanical_system(project, contact=contact, wrapping=wrapping)
    system = model.system
    tree_names = [n for n in sorted(model.body, key=model.body.get) if n != GROUND]
    problems = []
    constraints = []
    for i, c in enumerate(project.constraints):
        try:
            constraints.append(_constraint(c, model))
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            problems.append(Problem("Constraints", c.name or f"row {i + 1}", None,
                                    f"cannot be used by the mobilizer backend: {exc}"))
    if problems:
        raise ValidationError(problems)
    bridge = MechanicsForcesOnTree(built, tree_names)
    system.constraints = list(constraints)
    system.forces = [bridge]
    return MobilizedProject(model, built, bridge, tree_names)


def _mech_states(mp: MobilizedProject, q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """MJM state vectors (k, 13n) of tree states, so app.studies reports them the same way."""
    system = mp.model.system
    mech = mp.built.system
    n = mech.n_bodies
    y0 = mp.built.state.get_y()
    out = np.empty((len(q), 13 * n))
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
    progress: Progress | None = None,
    cancel=None,
    contact: bool = True,
    wrapping: bool = True,
) -> RunRecord:
    """Simulate the project on the mobilizer backend; the run reports like ``app.studies.run_dynamics``
    plus the generalised coordinates ("q", "u") and the largest constraint error."""
    params = {"study": "dynamics", "backend": "mobilizer", "t_end": float(t_end), "report_dt": float(report_dt),
              "digits": float(digits), "contact": contact, "wrapping": wrapping}
    started = time.perf_counter()
    mp = build_mobilized(project, contact=contact, wrapping=wrapping)
    system = mp.model.system
    state = system.default_state()
    state.q[:] = mp.model.q0
    if system.constraints:
        try:
            state = mbc.assemble(system, state, tol=min(1e-10, 10.0 ** -digits))
        except RuntimeError as exc:
            raise ValidationError(Problem("Constraints", None, None,
                                          f"no pose satisfies the constraints near the initial one ({exc})")) from None
    accuracy = 10.0 ** -digits
    times = np.arange(0.0, t_end + 0.5 * report_dt, report_dt)
    chunks = np.array_split(times[1:], max(1, min(50, len(times) - 1)))
    qs, us, ts = [state.q.copy()], [state.u.copy()], [0.0]
    status, message, steps, rhs, cmax = "completed", "", 0, 0, 0.0
    for chunk in chunks:
        if cancel is not None and (cancel() if callable(cancel) else getattr(cancel, "is_set", lambda: False)()):
            status, message = "stopped", f"stopped by the user at t = {ts[-1]:.4g} s"
            break
        traj = simulate(system, state, float(chunk[-1]), accuracy=accuracy, out_times=chunk)
        if not (np.isfinite(traj.q).all() and np.isfinite(traj.u).all()):
            status, message = "failed", f"the simulation diverged between t = {ts[-1]:.4g} s and {chunk[-1]:.4g} s"
            break
        qs.extend(traj.q)
        us.extend(traj.u)
        ts.extend(traj.t)
        steps, rhs = steps + traj.n_steps, rhs + traj.n_rhs
        cmax = max(cmax, traj.max_constraint_error)
        state.t, state.q, state.u = float(traj.t[-1]), traj.q[-1].copy(), traj.u[-1].copy()
        if progress is not None:
            progress(float(chunk[-1]) / t_end if t_end > 0 else 1.0)
    q, u, t = np.asarray(qs), np.asarray(us), np.asarray(ts)
    series, labels = state_series(mp.built, t, _mech_states(mp, q, u))
    series["q"], series["u"] = q, u
    wall = time.perf_counter() - started
    summary = {"steps": steps, "force_evaluations": rhs, "simulated_s": float(t[-1]), "wall_time_s": wall,
               "max_constraint_error": cmax, "realtime_factor": float(t[-1]) / wall if wall > 0 else None}
    return RunRecord(study="dynamics", parameters=params, status=status, message=message, series=series,
                     labels=labels, summary=summary)
