"""The multibody tree of a whole project: mass rows with a JointSpec ride their mobilizers, the
others are free 6-DOF bodies (MJM's case) or welded when fixed; the project's constraints, locked
coordinates and the MJM force elements (tissues with their via points and wrap objects, mesh
wrapping, contact, loads) act on the tree, built with the system, never patched in afterwards.

One way of doing each thing: the tree comes from ``core.studies.muscle_paths.build_multibody``, the
force elements from ``app.build.build_mechanical_system``; this module bridges their body orders and
frames and maps constraint rows and locked coordinates. Its statics: ``app.tree_statics``; its
equilibrium and dynamics studies: ``app.tree_studies`` (``app.studies`` sends every project with
joints, constraints or coordinate rows there).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from jointmodeller.app.build import BuiltMechanics, build_mechanical_system
from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.multibody import constraints as mbc
from jointmodeller.core.multibody.functions import Constant, Function
from jointmodeller.core.multibody.system import MultibodySystem
from jointmodeller.core.studies.muscle_paths import MultibodyModel, backend_function, build_multibody
from jointmodeller.model.errors import Problem, ValidationError
from jointmodeller.model.specs import GROUND, ConstraintSpec, FunctionSpec, Project


class MechanicsForcesOnTree:
    """A ForceElement for the tree that evaluates MJM force elements in their own body order.

    Tree bodies use the mesh frame L as their force frame (R_BK = I, origin at the COM after the
    adapter), the MJM elements the principal frame B: ``R_GB = R_GL R_BLᵀ``. Bodies of the MJM
    system that are not in the tree (the ground body) keep their initial pose.
    """

    def __init__(self, built: BuiltMechanics, tree_names: list[str], extra_elements=()):
        system = built.system
        self.elements = [e for e in system.force_elements() if e is not system.gravity] + list(extra_elements)
        self.n_mech = system.n_bodies
        self.mech_of_tree = np.array([built.body_names.index(n) for n in tree_names], dtype=np.int64)
        self.R_BL = system.bodies.R_BL[self.mech_of_tree]
        kin0 = built.system.kinematics(built.state.y)
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
        return BodyKinematics(p, R, v, w, kin.q)

    def accumulate(self, t: float, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray) -> None:
        f, m = self.tree_loads(t, kin, self.elements)
        force_G += f
        torque_G += m

    def tree_loads(self, t: float, kin: BodyKinematics, elements) -> tuple[np.ndarray, np.ndarray]:
        """Force and moment (nb, 3) on the tree's bodies of ``elements`` (in the MJM body order)."""
        mk = self.mech_kinematics(kin)
        f = np.zeros((self.n_mech, 3))
        m = np.zeros((self.n_mech, 3))
        for element in elements:
            element.accumulate(t, mk, f, m)
        return f[self.mech_of_tree], m[self.mech_of_tree]


@dataclass
class MobilizedProject:
    """A project built for the mobilizer backend."""

    model: MultibodyModel
    built: BuiltMechanics
    bridge: MechanicsForcesOnTree
    tree_names: list[str]


def _function(fn: FunctionSpec | None) -> Function:
    """A constraint's function of one argument (the independent coordinate, or time)."""
    if fn is None:
        raise ValueError("needs a function")
    return backend_function(replace(fn, coordinates=("x",)), ("x",))


def _constraint(c: ConstraintSpec, model: MultibodyModel):
    """A core constraint for one constraint row (bodies by name, points in each body's L)."""
    body = [model.body[b] if b != GROUND else -1 for b in c.bodies]
    pts = [np.asarray(p, float) for p in c.points_L]
    if c.kind in ("coordinate_coupler", "prescribed_motion"):
        unknown = [n for n in c.coordinates if n not in model.qindex]
        if unknown:
            raise ValueError(f"no coordinate named {unknown[0]!r}")
        if c.function is None:
            raise ValueError("needs a function")
    if c.kind == "coordinate_coupler":
        if len(c.coordinates) != 2:
            raise ValueError("names the dependent coordinate, then one independent coordinate")
        dep, ind = (model.qindex[n] for n in c.coordinates)
        return mbc.CoordinateCoupler(dep, [ind], _function(c.function))
    if c.kind == "prescribed_motion":
        if len(c.coordinates) != 1:
            raise ValueError("names exactly one coordinate")
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


def locked_coordinates(project: Project) -> list[tuple[str, str]]:
    """(mass, coordinate) of every coordinate the project locks, in row order."""
    return [(m.name, name) for m in project.masses if m.joint is not None
            for name, lock in zip(m.joint.coordinates, m.joint.locked) if lock]


def needs_tree(project: Project) -> bool:
    """Whether the project's rows need the multibody tree: a joint row, a constraint row, or a
    conditional via point (only a tree has coordinates). Projects of free and fixed bones run the
    same physics on the free-body fast path (``app.build``)."""
    return (any(m.joint is not None for m in project.masses) or bool(project.constraints)
            or any(v.coordinate for a in project.attachments for v in a.via_points))


def build_mobilized(project: Project, *, contact: bool = True, wrapping: bool = True,
                    extra_elements=(), contact_geometry: str = "exact",
                    free_path_shortcut: bool = False) -> MobilizedProject:
    """The tree (mobilizers, constraints, locked coordinates) with the MJM force elements acting on
    it; raises ValidationError naming every row that cannot be honoured. extra_elements: further
    force elements in the MJM body order (a laxity experiment's load); contact_geometry: as
    app.build.build_mechanical_system's (dynamics only: statics freeze contact sets on "exact"), and
    free_path_shortcut likewise (dynamics)."""
    try:
        model = build_multibody(project)
    except ValueError as exc:
        raise ValidationError(Problem("Masses", None, "joint", str(exc))) from None
    built = build_mechanical_system(project, contact=contact, wrapping=wrapping, coordinate_index=model.qindex,
                                    contact_geometry=contact_geometry, free_path_shortcut=free_path_shortcut,
                                    q0=model.q0)
    tree_names = [n for n in sorted(model.body, key=lambda name: model.body[name]) if n != GROUND]
    problems = []
    constraints = []
    for i, c in enumerate(project.constraints):
        try:
            constraints.append(_constraint(c, model))
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            problems.append(Problem("Constraints", c.name or f"row {i + 1}", None,
                                    f"cannot be used: {str(exc).strip(chr(39))}"))
    for mass, name in locked_coordinates(project):
        k = model.qindex.get(name)
        if k is None:
            problems.append(Problem("Masses", mass, "joint.locked",
                                    f"coordinate {name!r} is not a coordinate of the tree"))
            continue
        constraints.append(mbc.PrescribedMotion(k, Constant(float(model.q0[k]))))
    bridge = MechanicsForcesOnTree(built, tree_names, extra_elements)
    try:
        system = MultibodySystem(model.system.bodies, constraints=constraints, gravity_G=project.info.gravity_G,
                                 forces=[bridge], length_scale=built.system.length_scale)
    except ValueError as exc:  # a coupled or locked coordinate whose mobilizer has q̇ ≠ u
        problems.append(Problem("Constraints", None, None, f"cannot be used: {exc}"))
    if problems:
        raise ValidationError(problems)
    model = replace(model, system=system)
    return MobilizedProject(model, built, bridge, tree_names)


def initial_state(mp: MobilizedProject, t: float = 0.0, tol: float = 1e-10):
    """The tree's state at the project's default coordinates, assembled onto its constraints."""
    system = mp.model.system
    state = system.default_state()
    state.t = float(t)
    state.q[:] = mp.model.q0
    if system.constraints:
        try:
            state = mbc.assemble(system, state, tol=tol)
        except RuntimeError as exc:
            raise ValidationError(Problem("Constraints", None, None,
                                          f"no pose satisfies the constraints near the initial one ({exc})")) from None
    return state


def free_speeds(mp: MobilizedProject) -> np.ndarray:
    """(nu,) bool: speeds neither locked, prescribed nor following a coupler."""
    free = np.ones(mp.model.system.nu, bool)
    for con in mp.model.system.constraints:
        if isinstance(con, mbc.PrescribedMotion):
            free[con._u] = False
        elif isinstance(con, mbc.CoordinateCoupler):
            free[con._ud] = False
    return free


def _connections(project: Project, model: MultibodyModel) -> list[tuple[int, int]]:
    """Body pairs (tree indices, ground −1) that a tissue, contact pair or geometric constraint joins."""
    idx = model.body
    wraps = {w.name: w.body for w in project.wrap_objects}
    out = []
    for a in project.attachments:
        bodies = [a.body_a, *(v.body for v in a.via_points), *(wraps.get(w, a.body_a) for w in a.wrap_objects),
                  a.body_b]
        ids = [idx.get(b, -1) for b in bodies]
        out += [(ids[0], j) for j in ids[1:]]
    out += [(idx.get(c.body_a, -1), idx.get(c.body_b, -1)) for c in project.contacts]
    for c in project.constraints:
        ids = [idx.get(b, -1) for b in c.bodies]
        out += [(ids[0], j) for j in ids[1:]]
    return out


def unsupported_bodies(project: Project, mp: MobilizedProject, q: np.ndarray) -> list[str]:
    """One line per body that gravity pulls along a free translation with nothing to hold it."""
    from jointmodeller.core.studies.tree_equilibrium import unsupported_translations

    system = mp.model.system
    if not np.any(system.tree.gravity):
        return []
    uname = {k: n for n, k in mp.model.uindex.items()}
    lines = []
    for b, speeds in unsupported_translations(system, q, free_speeds(mp), _connections(project, mp.model)):
        coords = ", ".join(uname.get(k, f"speed {k}") for k in speeds)
        lines.append(f"{mp.tree_names[b]!r} can translate freely ({coords}) and nothing but gravity acts on it "
                     "and the bodies it carries; lock those coordinates or add what holds it")
    return lines


def mech_kinematics_at(mp: MobilizedProject, q: np.ndarray) -> BodyKinematics:
    """The force elements' BodyKinematics (MJM body order and frames) at tree coordinates q, at rest."""
    system = mp.model.system
    return mp.bridge.mech_kinematics(system.body_kinematics(system.kinematics(q)))


def forces_with(mp: MobilizedProject, elements) -> Callable[[float, np.ndarray], np.ndarray]:
    """Q(t, q): generalized forces at rest of gravity and ``elements`` (MJM body order) on the tree —
    the tree's own force elements with some replaced (contact sets frozen, for instance)."""
    from jointmodeller.core.studies.tree_equilibrium import generalized_forces_of

    system = mp.model.system

    def Q(t: float, q: np.ndarray) -> np.ndarray:
        kin = system.kinematics(q)
        f, m = mp.bridge.tree_loads(t, system.body_kinematics(kin), elements)
        return generalized_forces_of(system, q, f, m, kin)

    return Q
