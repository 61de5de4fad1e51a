"""The multibody tree of a whole project: mass rows with a JointSpec ride their mobilizers, the
others are free 6-DOF bodies (MJM's case) or welded when fixed; the project's constraints, locked
coordinates and the MJM force elements (tissues with their via points and wrap objects, mesh
wrapping, contact, loads) act on the tree, built with the system, never patched in afterwards.

One way of doing each thing: the tree comes from ``core.studies.muscle_paths.build_multibody``, the
force elements from ``app.build.build_mechanical_system``; this module bridges their body orders and
frames, maps constraint rows and locked coordinates, and runs and reports equilibrium and dynamics
like ``app.studies`` (which sends every project with joints or constraints here).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from jointmodeller.app.build import BuiltMechanics, build_mechanical_system
from jointmodeller.app.studies import PoseProgress, state_series
from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.multibody import constraints as mbc
from jointmodeller.core.multibody.functions import Constant, Function
from jointmodeller.core.multibody.integrate import PROJECTED_METHOD, report_times, simulate
from jointmodeller.core.multibody.system import MultibodySystem
from jointmodeller.core.spatial_math import matrix_to_quat
from jointmodeller.core.state import State
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
                    extra_elements=()) -> MobilizedProject:
    """The tree (mobilizers, constraints, locked coordinates) with the MJM force elements acting on
    it; raises ValidationError naming every row that cannot be honoured. extra_elements: further
    force elements in the MJM body order (a laxity experiment's load)."""
    try:
        model = build_multibody(project)
    except ValueError as exc:
        raise ValidationError(Problem("Masses", None, "joint", str(exc))) from None
    built = build_mechanical_system(project, contact=contact, wrapping=wrapping, coordinate_index=model.qindex,
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
                                 forces=[bridge])
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


STALL_SETS = 8
"""Contact sets regenerated without lowering the best true residual before a contact equilibrium
gives up as stalled (a laxity sweep then approaches the load in smaller steps)."""


def contact_equilibrium(mp: MobilizedProject, state, *, force_tol: float, moment_tol: float,
                        max_regenerations: int = 40, iterations_per_set: int = 60, progress=None, cancel=None,
                        max_wall_s: float | None = None, on_pose: Callable[[np.ndarray], None] | None = None,
                        contact_scale: float = 1.0):
    """Static equilibrium of a tree with contact pairs: MJM's procedure for statics (seed 004 §3.4)
    in tree coordinates, as the free-body solver does it — freeze each pair's contact set (with a band
    of vertices about to touch), solve Newton on that smooth problem until a frozen vertex has moved
    half the band, regenerate the sets at the new pose, and repeat until the true residual
    (regenerated contact) meets the tolerances. on_pose(q): the pose after each contact set.
    contact_scale: solve with every contact pair's stiffness times this (copies of the pairs,
    ``ContactPair.scaled``; the built system is not changed).
    Returns a TreeEquilibriumResult judged on the true residual."""
    from jointmodeller.core.studies.equilibrium import contact_band, frozen_set_motion
    from jointmodeller.core.studies.tree_equilibrium import (
        TreeEquilibriumResult,
        residual_norms,
        solve_tree_equilibrium,
        unbalanced_forces,
    )

    system = mp.model.system
    L = mp.built.system.length_scale
    elements = [e.scaled(contact_scale) if contact_scale != 1.0 and hasattr(e, "scaled") else e
                for e in mp.bridge.elements]
    contacts = [e for e in elements if hasattr(e, "frozen")]
    others = [e for e in elements if not hasattr(e, "frozen")]
    band, limit = contact_band(contacts)
    true_forces = forces_with(mp, elements)
    t = float(state.t)
    started = time.perf_counter()
    q = np.array(state.q, float)
    its = evals = 0
    prev_keys = None
    ok = stopped = False
    history = []
    for k in range(max_regenerations):
        if (cancel is not None and cancel()) or (max_wall_s is not None and time.perf_counter() - started > max_wall_s):
            stopped = True
            break
        mk = mech_kinematics_at(mp, q)
        frozen = [c.frozen(mk, band) for c in contacts]
        sub = solve_tree_equilibrium(system, State(t, q, np.zeros(system.nu)), length_scale=L, t=t,
                                     force_tol=force_tol, moment_tol=moment_tol, max_iterations=iterations_per_set,
                                     forces=forces_with(mp, others + frozen), move_limit=limit,
                                     moved=frozen_set_motion(frozen, lambda x: mech_kinematics_at(mp, x)),
                                     broyden=True, cancel=cancel)
        q = sub.state.q
        its, evals = its + sub.iterations, evals + sub.evaluations
        r = unbalanced_forces(system, t, q, true_forces(t, q))
        f, m = residual_norms(system, q, r)
        history.append(max(f, m / L))
        if progress is not None:
            progress(min(0.99, (k + 1) / max_regenerations))
        if on_pose is not None:
            on_pose(q)
        if f <= force_tol and m <= moment_tol:
            ok = True
            break
        if sub.stopped:
            stopped = True
            break
        keys = [c.frozen(mech_kinematics_at(mp, q)).key() for c in contacts]
        if sub.converged and keys == prev_keys:
            break  # the set holds but the true residual differs: nothing left to regenerate
        if keys == prev_keys and not sub.converged and not (len(sub.history) > 1 and
                                                            sub.history[-1] < 0.99 * sub.history[0]):
            break  # the same frozen problem, on which Newton made no headway: repeating it cannot help
        prev_keys = keys
        if len(history) > STALL_SETS and min(history[-STALL_SETS:]) >= min(history[:-STALL_SETS]):
            break  # STALL_SETS regenerations without a better residual: stalled (a sweep bisects instead)
    r = unbalanced_forces(system, t, q, true_forces(t, q))
    f, m = residual_norms(system, q, r)
    if ok:
        message = f"equilibrium found: residual {f:.3g} N, {m:.3g} N·m (contact sets regenerated {k + 1} times)"
    elif stopped:
        message = (f"stopped (time limit or by the user) after {k + 1} contact sets: residual {f:.3g} N, "
                   f"{m:.3g} N·m")
    else:
        message = (f"no equilibrium within tolerance: residual {f:.3g} N, {m:.3g} N·m after {k + 1} contact "
                   "sets (the bones may not meet where contact is defined, or a coordinate is unconstrained)")
    return TreeEquilibriumResult(State(t, q, np.zeros(system.nu)), f, m, ok, its, evals, message, history, r,
                                 stopped=stopped and not ok)


def unbalanced_description(mp: MobilizedProject, q: np.ndarray, r: np.ndarray, count: int = 2) -> str:
    """Where a failed equilibrium is out of balance, in words: the ``count`` largest unbalanced
    generalized forces (force [N] on translations, moment [N·m] on rotations, compared per model
    length), each as the body its coordinate moves, the amount and the direction in ground
    ("patella_r: 3.95 N along (+0.00, −1.00, +0.00) (coordinate pf_ty_r)")."""
    from jointmodeller.core.studies.tree_equilibrium import rotational_speeds

    system = mp.model.system
    r = np.asarray(r, float)
    if r.size == 0 or not np.all(np.isfinite(r)):
        return "the unbalanced forces are not finite"
    rot = rotational_speeds(system, q)
    L = mp.built.system.length_scale
    scaled = np.abs(r) / np.where(rot, L, 1.0)
    Jw, Jv = system.jacobians(system.kinematics(q))
    coord = {k: n for n, k in mp.model.uindex.items()}
    body_name = {i: n for n, i in mp.model.body.items()}
    tree = system.tree
    parts = []
    for k in np.argsort(-scaled)[:count]:
        if scaled[k] <= 0.0:
            break
        owner = next((b for b in range(system.n_bodies)
                      if int(tree.uoff[b]) <= k < int(tree.uoff[b] + tree.nu[b])), None)
        if owner is None:
            continue
        body = body_name.get(owner, f"body {owner}")
        J = Jw[owner, :, k] if rot[k] else Jv[owner, :, k]
        n = float(np.linalg.norm(J))
        d = np.sign(r[k]) * J / n if n > 0 else np.zeros(3)
        amount = f"{abs(r[k]):.3g} N·m about" if rot[k] else f"{abs(r[k]):.3g} N along"
        parts.append(f"{body}: {amount} ({d[0]:+.2f}, {d[1]:+.2f}, {d[2]:+.2f}) in ground "
                     f"(coordinate {coord.get(int(k), f'u{k}')})")
    return "; ".join(parts) if parts else "no unbalanced force"


CONTACT_CONTINUATION = (0.1, 0.3, 1.0)
"""Contact stiffness scales solved in turn, each from the last's pose, when a contact equilibrium
fails at full stiffness: softer cartilage spreads the load over more springs and smooths the
problem (issue 15 item 5); the last scale is the material's."""

SETTLE_SPAN_S = 0.5
"""First span of damped dynamics [s] when tree Newton fails far from equilibrium (then ×4, ×16)."""


def equilibrium_solver(mp: MobilizedProject, *, max_iterations: int = 100, progress=None, cancel=None,
                       max_wall_s: float | None = None, settle: bool = True,
                       on_pose: Callable[[np.ndarray], None] | None = None) -> Callable:
    """solve(state, force_tol, moment_tol) -> TreeEquilibriumResult for this tree: Newton in tree
    coordinates, on frozen contact sets regenerated between solves when the project has contact
    (:func:`contact_equilibrium`); without contact, a Newton that fails is restarted from the pose
    damped dynamics settle to (kinetic damping, spans SETTLE_SPAN_S ×1, ×4, ×16), as the free-body
    solver does (``settle=False``: not — a laxity sweep bisects its load steps instead). The one
    choice every tree study (equilibrium, laxity) makes. on_pose(q): each intermediate pose (after
    a contact set, a Newton solve or a settling span), for a live view."""
    from jointmodeller.core.studies.tree_equilibrium import settle_tree, solve_tree_equilibrium

    system = mp.model.system
    has_contact = any(hasattr(e, "frozen") for e in mp.bridge.elements)

    def solve(state, force_tol: float, moment_tol: float):
        res = solve_on_tree(state, force_tol, moment_tol)
        if res.status == "failed" and res.residual is not None:
            res.message += "; most unbalanced: " + unbalanced_description(mp, res.state.q, res.residual)
        return res

    def on_contact(state, force_tol: float, moment_tol: float, budget_s: float | None, scale: float = 1.0):
        return contact_equilibrium(mp, state, force_tol=force_tol, moment_tol=moment_tol,
                                   iterations_per_set=max_iterations, progress=progress, cancel=cancel,
                                   max_wall_s=budget_s, on_pose=on_pose, contact_scale=scale)

    def solve_on_tree(state, force_tol: float, moment_tol: float):
        if has_contact:
            started = time.perf_counter()
            res = on_contact(state, force_tol, moment_tol, max_wall_s)
            if res.status != "failed" or (cancel is not None and cancel()):
                return res
            # continuation in contact stiffness: softer contact first, each solution the next start
            st, last = state, None
            for scale in CONTACT_CONTINUATION:
                left = None if max_wall_s is None else max_wall_s - (time.perf_counter() - started)
                if left is not None and left <= 0:
                    break
                last = on_contact(st, force_tol, moment_tol, left, scale)
                if not last.converged:
                    break
                st = State(float(state.t), last.state.q, np.zeros(system.nu))
            if last is not None and last.converged:  # converged at the last scale, 1
                last.message += (" (after continuation in contact stiffness ×"
                                 + ", ×".join(f"{c:g}" for c in CONTACT_CONTINUATION) + ")")
                return last
            return res
        started = time.perf_counter()

        def newton(st, budget):
            left = None if max_wall_s is None else max(max_wall_s - (time.perf_counter() - started), 0.0)
            res = solve_tree_equilibrium(system, st, length_scale=mp.built.system.length_scale, t=float(state.t),
                                         force_tol=force_tol, moment_tol=moment_tol, max_iterations=budget,
                                         progress=progress, cancel=cancel, max_wall_s=left)
            if on_pose is not None:
                on_pose(res.state.q)
            return res

        res = newton(state, max_iterations)
        span = SETTLE_SPAN_S
        for _ in range(3 if settle else 0):  # far from equilibrium: damped dynamics, then Newton (spans ×4)
            if res.status != "failed":
                break
            if max_wall_s is not None and time.perf_counter() - started > max_wall_s:
                break
            settled = settle_tree(system, State(float(state.t), res.state.q, np.zeros(system.nu)), span_s=span,
                                  cancel=cancel)
            again = newton(settled, max(max_iterations // 2, 10))
            if again.converged or again.residual_force_N + again.residual_moment_Nm / mp.built.system.length_scale < \
                    res.residual_force_N + res.residual_moment_Nm / mp.built.system.length_scale:
                again.message = again.message + " (after damped dynamics)" if again.converged else again.message
                res = again
            span *= 4.0
        return res

    return solve


def pose_sample(mp: MobilizedProject, q: np.ndarray, t: float = 0.0) -> dict:
    """A live sample of the tree at rest at coordinates q (what render.frames.frame_from_sample
    draws): every series of app.studies.state_series at that pose, without the sample axis, with
    their labels — so a quasi-static study can show each pose it solves."""
    q = np.asarray(q, float)[None]
    ys = _mech_states(mp, q, np.zeros((1, mp.model.system.nu)))
    series, labels = state_series(mp.built, np.array([float(t)]), ys, q)
    sample = {k: np.asarray(v)[0] for k, v in series.items()}
    sample["labels"] = labels
    return sample


def _mech_states(mp: MobilizedProject, q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """MJM state vectors (k, 13n) of tree states, so app.studies reports them the same way."""
    system = mp.model.system
    mech = mp.built.system
    n = mech.n_bodies
    y0 = mp.built.state.y
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
    method: str = PROJECTED_METHOD,
    progress: Progress | None = None,
    cancel=None,
    contact: bool = True,
    wrapping: bool = True,
    max_wall_s: float | None = None,
    max_steps: int | None = None,
    on_step: Callable | None = None,
) -> RunRecord:
    """Simulate the project's tree (``app.studies.run_dynamics`` sends projects with joints,
    constraints or coordinate rows here); the run reports like it plus the generalised coordinates
    ("q", "u") and the largest constraint error. Limits, divergence and the user's stop end the run
    as there; on_step: as there (given the built force elements, returns a hook called with (t, y,
    interpolate) in their state layout), after every accepted step."""
    from jointmodeller.app.studies import RunBudget, dynamics_summary

    params = {"study": "dynamics", "system": "tree", "t_end": float(t_end), "report_dt": float(report_dt),
              "digits": float(digits), "method": method, "contact": contact, "wrapping": wrapping,
              "max_wall_s": max_wall_s, "max_steps": max_steps}
    started = time.perf_counter()
    budget = RunBudget(max_wall_s, progress, cancel)
    mp = build_mobilized(project, contact=contact, wrapping=wrapping)
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
    series, labels = state_series(mp.built, traj.t, _mech_states(mp, traj.q, traj.u), traj.q)
    series["q"], series["u"] = traj.q, traj.u
    summary = dynamics_summary(traj, time.perf_counter() - started)
    summary["max_constraint_error"] = traj.max_constraint_error
    return RunRecord(study="dynamics", parameters=params, status=traj.status, message=traj.message, series=series,
                     labels=labels, summary=summary)


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
    series, labels = state_series(mp.built, np.array([t_load]), _mech_states(mp, q, u), q)
    series["q"] = q
    names = {k: n for n, k in mp.model.qindex.items()}
    labels["q"] = [names.get(k, f"q{k}") for k in range(system.nq)]
    return RunRecord(study="equilibrium", parameters=params, status=status, message=message, series=series,
                     labels=labels, summary=summary)
