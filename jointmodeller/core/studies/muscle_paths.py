"""Muscle path lengths and moment arms over a coordinate range (OpenSim's path model).

The project's masses and mobilizers become a mobilizer-backend system (``build_multibody`` over
``core.multibody.model_tree``; a mass's body frame B is its L frame). Each attachment becomes a path
of points fixed on bodies (conditional via points active inside their coordinate range) that wraps
over analytic obstacles with OpenSim's rules (``core.geometry.wrap_analytic`` plus OpenSim's choice of segment and
iteration over several wrap objects). At each sample of the swept coordinate the study reports

* the path length L(q),
* the moment arm by the generalized-force method (seed 002): apply unit tension along every
  straight stretch of the path, map the body forces to generalized forces f = JᵀF with the
  mobilizer backend's recursion; for coordinate k this is r_k = −∂L/∂q_k, including couplers
  (dependent coordinates' generalized forces times ∂q_dep/∂q_k),
* the moment arm by excursion, −ΔL/Δq by central differences, as an independent check.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from jointmodeller.core.geometry import wrap_analytic as wa
from jointmodeller.core.multibody import functions as mbf
from jointmodeller.core.multibody.functions import from_spec as backend_function  # noqa: F401 (re-export)
from jointmodeller.core.multibody.model_tree import frame_transform, mass_tree
from jointmodeller.core.multibody.system import MultibodySystem
from jointmodeller.core.studies import path_kernel as pk
from jointmodeller.core.studies.path_kernel import WRAP_CONVERGENCE_M  # noqa: F401 (re-export)
from jointmodeller.model.specs import Attachment, Project, WrapObject

EXCURSION_STEP = 1e-4


@dataclass
class MultibodyModel:
    """A project's bodies as a mobilizer-backend system, with name lookups.

    body: mass name -> body index (ground -1); qindex: coordinate name -> index into q;
    couplers: (dependent q index, independent q index, backend Function of the independent
    coordinate) from coordinate_coupler constraints (dependent coordinates follow their function);
    uindex: coordinate -> index into u. ``backend_function`` (core.multibody.functions.from_spec) is
    re-exported here for the modules that import it from this one.
    """

    system: MultibodySystem
    body: dict[str, int]
    qindex: dict[str, int]
    q0: np.ndarray
    couplers: list[tuple[int, int, mbf.Function]] = field(default_factory=list)
    uindex: dict[str, int] = field(default_factory=dict)

    def apply_couplers(self, q: np.ndarray) -> np.ndarray:
        q = np.array(q, float)
        for dep, ind, fn in self.couplers:
            q[dep] = fn.calc(q[ind])[0]
        return q


def build_multibody(project: Project) -> MultibodyModel:
    """Mobilizer-backend system of a project's masses (B = L frames; joints from JointSpec), with
    its coordinate couplers applied to the default coordinates."""
    tree = mass_tree(project.masses, project.info.gravity_G)
    couplers = []
    for c in project.constraints:
        if c.kind == "coordinate_coupler" and c.function is not None and len(c.coordinates) == 2 \
                and all(n in tree.qindex for n in c.coordinates):
            # the function of the independent coordinate, whatever name the spec gives it
            couplers.append((tree.qindex[c.coordinates[0]], tree.qindex[c.coordinates[1]],
                             backend_function(replace(c.function, coordinates=("x",)))))
    model = MultibodyModel(tree.system, tree.body, tree.qindex, tree.q0, couplers, tree.uindex)
    model.q0 = model.apply_couplers(model.q0)
    return model


# --------------------------------------------------------------------------------------------------
# Paths
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PathWrap:
    """A wrap object used by a path: body index, pose of its frame W in B, kind, dimensions,
    quadrant, and the 1-based point range it may wrap (-1 = path ends)."""

    name: str
    body: int
    R_BW: np.ndarray
    p_BW: np.ndarray
    kind: str
    dims: tuple[float, ...]
    quadrant: str = "all"
    start: int = -1
    end: int = -1


@dataclass(frozen=True)
class MovingPoint:
    """A path point that moves on its body with the coordinates (OpenSim's MovingPathPoint):
    r_B = A r_L(q) + b, each component of r_L a Function of the coordinate q[qidx] (qidx -1: the
    constant it takes at 0). uidx: that coordinate's index into the generalized speeds (-1 unknown)."""

    index: int
    fns: tuple[mbf.Function, mbf.Function, mbf.Function]
    qidx: tuple[int, int, int]
    uidx: tuple[int, int, int] = (-1, -1, -1)
    A: np.ndarray = field(default_factory=lambda: np.eye(3))
    b: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def r_B(self, q: np.ndarray) -> np.ndarray:
        local = np.array([float(f.calc(q[i] if i >= 0 else 0.0)[0]) for f, i in zip(self.fns, self.qidx)])
        return self.A @ local + self.b

    def dr_B(self, q: np.ndarray) -> np.ndarray:
        """(3, 3): column a = ∂r_B/∂q[qidx[a]] of component a's function (zero for a constant)."""
        d = np.zeros((3, 3))
        for a, (f, i) in enumerate(zip(self.fns, self.qidx)):
            if i >= 0:
                d[:, a] = self.A[:, a] * float(f.calc(q[i], 1)[0])
        return d


@dataclass(frozen=True)
class PathSpec:
    """A path's points (in order): body index (m,), r_B (m, 3), conditional coordinate q index
    (-1 = always active) and range (m, 2); its wrap objects in order; its moving points (r_B of
    those rows is their default-pose location, replaced at every pose)."""

    name: str
    body: np.ndarray
    r_B: np.ndarray
    cond: np.ndarray
    cond_range: np.ndarray
    wraps: tuple[PathWrap, ...] = ()
    moving: tuple[MovingPoint, ...] = ()

    @cached_property
    def packed(self) -> pk.PackedPaths:
        """This path alone as the path kernel's arrays (packed once)."""
        return pk.pack_paths([self])

    def points_B(self, q: np.ndarray) -> np.ndarray:
        """r_B (m, 3) of every point at coordinates q (moving points evaluated)."""
        if not self.moving:
            return self.r_B
        r = np.array(self.r_B, float)
        for mp in self.moving:
            r[mp.index] = mp.r_B(q)
        return r


def _moving_points(att: Attachment, qindex: dict[str, int], uindex: dict[str, int] | None,
                   affine=None) -> tuple[MovingPoint, ...]:
    """MovingPoints of an attachment's moving end and via points; affine(k) -> (A, b) maps point k's
    L coordinates into its B frame (identity when None). ValueError names an unknown coordinate."""
    specs = [att.moving_a, *(v.moving for v in att.via_points), att.moving_b]
    out = []
    for k, fns in enumerate(specs):
        if not fns:
            continue
        funcs, qi, ui = [], [], []
        for fn in fns:
            c = fn.coordinates[0] if fn.coordinates and fn.kind != "constant" else ""
            if c and c not in qindex:
                raise ValueError(f"path point {k + 1} moves with coordinate {c!r}, which no joint of the project has")
            funcs.append(mbf.from_spec(fn, (c,)) if c else mbf.from_spec(replace(fn, coordinates=())))
            qi.append(qindex[c] if c else -1)
            ui.append(uindex.get(c, -1) if (c and uindex is not None) else -1)
        A, b = affine(k) if affine is not None else (np.eye(3), np.zeros(3))
        (f0, f1, f2), (q0, q1, q2), (u0, u1, u2) = funcs, qi, ui  # one function per component
        out.append(MovingPoint(k, (f0, f1, f2), (q0, q1, q2), (u0, u1, u2), np.asarray(A, float),
                               np.asarray(b, float)))
    return tuple(out)


def path_spec(model: MultibodyModel, att: Attachment, wrap_objects: Sequence[WrapObject],
              ranges: Sequence[tuple[int, int]] | None = None) -> PathSpec:
    """PathSpec of an attachment; each wrap's 1-based point range comes from ``ranges`` when given,
    else from the attachment's own ``wrap_ranges`` (empty: the whole path)."""
    if ranges is None and att.wrap_ranges:
        ranges = att.wrap_ranges
    pts = [(att.body_a, att.point_a_L, "", 0.0, 0.0)]
    pts += [(v.body, v.point_L, v.coordinate, v.range_min, v.range_max) for v in att.via_points]
    pts.append((att.body_b, att.point_b_L, "", 0.0, 0.0))
    by_name = {w.name: w for w in wrap_objects}
    wraps = []
    for k, name in enumerate(att.wrap_objects):
        w = by_name[name]
        T = frame_transform(w.frame)
        s, e = (ranges[k] if ranges is not None and k < len(ranges) else (-1, -1))
        wraps.append(PathWrap(name, model.body[w.body], T[:3, :3], T[:3, 3], w.kind, tuple(w.dimensions_m),
                              w.quadrant, int(s), int(e)))
    return PathSpec(
        att.name,
        np.array([model.body[b] for b, *_ in pts], int),
        np.array([p for _, p, *_ in pts], float).reshape(-1, 3),
        np.array([model.qindex.get(c, -1) if c else -1 for _, _, c, *_ in pts], int),
        np.array([[lo, hi] for *_, lo, hi in pts], float).reshape(-1, 2),
        tuple(wraps),
        _moving_points(att, model.qindex, model.uindex),
    )


@dataclass
class _Pt:
    body: int
    r_B: np.ndarray
    wrap: int = -1  # index of the path's wrap object for automatic wrap points
    arc: float = 0.0  # surface length from the previous wrap point (second wrap point only)
    seg_W: np.ndarray | None = None  # (6,) the wrapped segment's ends in the wrap frame (second wrap point only)
    slot: int = 0  # 1 or 2 for the first / second wrap point of a wrap object
    index: int = -1  # the path point this is (-1 for wrap points)


@dataclass
class PathState:
    """The path at one pose: its points (body, r_B, wrap id), their positions x_G (k, 3), length;
    ``path``: the PathSpec it was solved from (to redraw wrap arcs)."""

    points: list
    x_G: np.ndarray
    length: float
    path: PathSpec | None = None

    def polyline_G(self, kin) -> np.ndarray:
        """(k, 3) points along the whole path in G, wrap arcs sampled on their surfaces (drawing)."""
        out = [self.x_G[0]]
        for k in range(1, len(self.points)):
            p = self.points[k]
            if p.seg_W is not None and p.wrap == self.points[k - 1].wrap and self.path is not None:
                w = self.path.wraps[p.wrap]
                axis, sign = wa.parse_quadrant(w.quadrant)
                dims = np.zeros(3)
                dims[:min(3, len(w.dims))] = np.asarray(w.dims, float)[:3]
                pts = wa.wrap_kernel(wa.KINDS.get(w.kind, wa.UNWRAPPED), p.seg_W[:3].copy(), p.seg_W[3:].copy(), dims,
                                     axis, sign, len(self.path.wraps) == 1)[4]
                out += [_to_G(kin, p.body, w.R_BW @ r + w.p_BW) for r in pts[1:-1]]
            out.append(self.x_G[k])
        return np.array(out)


def _to_G(kin, body: int, r: np.ndarray) -> np.ndarray:
    if body < 0:
        return r
    return kin.p_GB[body] + kin.R_GB[body] @ r


def path_states(solved: pk.SolvedPaths, specs: Sequence[PathSpec],
                which: Sequence[int] | None = None) -> list[PathState]:
    """The kernel's solved paths ``which`` (default all) as PathStates (one _Pt per point); specs:
    the PathSpec of each of them."""
    out = []
    for p, spec in zip(range(len(specs)) if which is None else which, specs):
        o, n = int(solved.off[p]), int(solved.n[p])
        pts = [_Pt(int(solved.body[k]), solved.r_B[k].copy(), int(solved.wrap[k]), float(solved.arc[k]),
                   solved.seg[k].copy() if solved.slot[k] == 2 else None, int(solved.slot[k]), int(solved.index[k]))
               for k in range(o, o + n)]
        out.append(PathState(pts, solved.x_G[o:o + n].copy(), float(solved.length[p]), spec))
    return out


def calc_path(model: MultibodyModel | None, path: PathSpec, q: np.ndarray, kin=None,
              opensim_stale_wrap_points: bool = False) -> PathState:
    """The wrapped path at coordinates q, following OpenSim's GeometryPath rules (the path kernel,
    ``core.studies.path_kernel``, on this one path).

    kin: body poses (attributes p_GB (n, 3), R_GB (n, 3, 3)); computed from ``model`` when None.
    opensim_stale_wrap_points: reproduce OpenSim 4.x exactly for paths with several wrap objects:
    there a wrap point's position in ground is cached the first time it is asked for at a pose, so
    later passes of the wrap iteration measure straight stretches (and apply forces) from the wrap
    points' first positions while using their latest surface lengths. Off (default), every pass
    uses the current wrap points; single-wrap paths are the same either way.
    """
    if kin is None:
        if model is None:
            raise ValueError("calc_path needs the body poses (kin) or the model to compute them")
        kin = model.system.kinematics(q)
    solved = pk.solve_paths(path.packed, kin.R_GB, kin.p_GB, q, opensim_stale_wrap_points)
    return path_states(solved, [path])[0]


def _solved_of(state: PathState) -> pk.SolvedPaths:
    """A PathState as the kernel's solved arrays (one path)."""
    pts = state.points
    n = len(pts)
    return pk.SolvedPaths(np.zeros(1, np.int64), np.array([n], np.int64), np.array([p.body for p in pts], np.int64),
                          np.array([p.r_B for p in pts], float).reshape(n, 3), np.asarray(state.x_G, float),
                          np.array([p.wrap for p in pts], np.int64), np.array([p.slot for p in pts], np.int64),
                          np.array([p.arc for p in pts], float), np.array([p.index for p in pts], np.int64),
                          np.zeros((n, 6)), np.array([state.length]))


def _shares(packed: pk.PackedPaths, solved: pk.SolvedPaths, share: np.ndarray, g: np.ndarray,
            p: int) -> list[tuple[int, int, float]]:
    """(point index within path p, q index, share) of path p's moving points, from
    ``pk.moving_shares`` (share) and ``pk.point_rows`` (g) of the solved paths."""
    o = int(solved.off[p])
    out = []
    for k in range(int(solved.n[p])):
        gk = g[o + k]
        if gk >= 0 and packed.mv_on[gk]:
            out += [(k, int(packed.mv_q[gk, a]), float(share[o + k, a])) for a in range(3) if packed.mv_q[gk, a] >= 0]
    return out


def moving_point_shares(path: PathSpec, state: PathState, R_GB, q: np.ndarray) -> list[tuple[int, int, float]]:
    """(point index in state.points, q index, −∂L/∂q share) of each moving point's own motion on its
    body: the unit-tension force on the point, F = e_i − e_{i−1} over its straight neighbours (any
    bodies), times R_GB ∂r_B/∂q of each component's coordinate (the path kernel's
    ``moving_shares``)."""
    if not path.moving:
        return []
    solved = _solved_of(state)
    return _shares(path.packed, solved, pk.moving_shares(path.packed, solved, R_GB, q),
                   pk.point_rows(path.packed, solved)[1], 0)


def moving_point_forces(path: PathSpec, state: PathState, kin, q: np.ndarray, nu: int) -> np.ndarray:
    """Generalized forces (nu,) of unit tension from the moving points' motion relative to their
    bodies (−∂L/∂q_k of that motion; needs MovingPoint.uidx)."""
    tau = np.zeros(nu)
    uidx = {qi: ui for mp in path.moving for qi, ui in zip(mp.qidx, mp.uidx) if qi >= 0 and ui >= 0}
    for _, qi, g in moving_point_shares(path, state, kin.R_GB, q):
        if qi in uidx:
            tau[uidx[qi]] += g
    return tau


def coordinate_columns(model: MultibodyModel, coordinates: Sequence[str], q: np.ndarray) -> np.ndarray:
    """C (nu, m): the generalized speeds of a unit rate of each coordinate at q — its own speed 1,
    the speeds of coordinates coupled to it (coordinate couplers) their function's slope — so the
    generalized-force moment arms about the coordinates are ``tau @ C``."""
    qname = {v: n for n, v in model.qindex.items()}
    C = np.zeros((model.system.nu, len(coordinates)))
    for j, name in enumerate(coordinates):
        k = model.qindex[name]
        C[model.uindex[name], j] = 1.0
        for dep, ind, fn in model.couplers:
            if ind == k:
                C[model.uindex[qname[dep]], j] += fn.calc(q[k], 1)[0]
    return C


def paths_at_pose(model: MultibodyModel, packed: pk.PackedPaths, q: np.ndarray, coordinates: Sequence[str],
                  opensim_stale_wrap_points: bool = False, kin=None):
    """Every packed path at coordinates q in one call of the path kernel: (length (P,) [m], moment
    arms (P, m) [m] about each of ``coordinates`` by the generalized-force method — all from one
    unit-tension solve per path —, the solved paths)."""
    kin = kin if kin is not None else model.system.kinematics(q)
    solved = pk.solve_paths(packed, kin.R_GB, kin.p_GB, q, opensim_stale_wrap_points)
    tau = pk.generalized_forces(model.system, kin, packed, solved, q)
    return solved.length, tau @ coordinate_columns(model, coordinates, q), solved


@dataclass
class MusclePathResult:
    """Path lengths and moment arms over a sweep of one coordinate.

    values (n,) [rad or m]; names (m,) attachment names; length (n, m) [m]; moment_arm (n, m) [m]
    by the generalized-force method; moment_arm_excursion (n, m) by −ΔL/Δq; wrapped (n, m) bool
    (any wrap object in use).
    """

    coordinate: str
    values: np.ndarray
    names: list[str]
    length: np.ndarray
    moment_arm: np.ndarray
    moment_arm_excursion: np.ndarray
    wrapped: np.ndarray


def muscle_paths(project: Project, coordinate: str, values: ArrayLike,
                 attachments: Sequence[str] | None = None,
                 wrap_ranges: dict[str, Sequence[tuple[int, int]]] | None = None,
                 q_fixed: dict[str, float] | None = None, model: MultibodyModel | None = None,
                 opensim_stale_wrap_points: bool = False) -> MusclePathResult:
    """Sweep ``coordinate`` over ``values`` (other coordinates at their defaults or ``q_fixed``)
    and compute every selected attachment's path length and moment arm about it.
    opensim_stale_wrap_points: see ``calc_path`` (bit-for-bit OpenSim 4.x on multi-wrap paths)."""
    model = model or build_multibody(project)
    if coordinate not in model.qindex:
        raise KeyError(f"no coordinate named {coordinate!r}; one of {sorted(model.qindex)}")
    k = model.qindex[coordinate]
    names = [a.name for a in project.attachments if attachments is None or a.name in attachments]
    atts = {a.name: a for a in project.attachments}
    wrap_ranges = wrap_ranges or {}  # overrides of the attachments' own wrap_ranges
    specs = [path_spec(model, atts[n], project.wrap_objects, wrap_ranges.get(n)) for n in names]
    base = model.q0.copy()
    for name, v in (q_fixed or {}).items():
        base[model.qindex[name]] = v
    xs = np.asarray(values, float)
    L = np.zeros((len(xs), len(specs)))
    R = np.zeros_like(L)
    RE = np.zeros_like(L)
    W = np.zeros(L.shape, bool)

    def q_at(x):
        q = base.copy()
        q[k] = x
        return model.apply_couplers(q)

    packed = pk.pack_paths(specs)
    for i, x in enumerate(xs):
        q = q_at(x)
        L[i], ma, solved = paths_at_pose(model, packed, q, [coordinate], opensim_stale_wrap_points)
        R[i] = ma[:, 0]
        W[i] = solved.wrapped()
        lp, lm = (pk.solve_paths(packed, kk.R_GB, kk.p_GB, qq, opensim_stale_wrap_points).length
                  for qq in (q_at(x + EXCURSION_STEP), q_at(x - EXCURSION_STEP))
                  for kk in (model.system.kinematics(qq),))
        RE[i] = -(lp - lm) / (2 * EXCURSION_STEP)
    return MusclePathResult(coordinate, xs, names, L, R, RE, W)


# --------------------------------------------------------------------------------------------------
# The same paths as a force-element geometry for the MJM (free-body) backend
# --------------------------------------------------------------------------------------------------
def mjm_path_specs(project: Project, tissue_names: Sequence[str], body_index: dict[str, int],
                   R_BL: np.ndarray, com_L: np.ndarray,
                   wrap_ranges: dict[str, Sequence[tuple[int, int]]] | None = None,
                   coordinate_index: dict[str, int] | None = None) -> dict[int, PathSpec]:
    """PathSpecs, in the MJM bodies' B frames (r_B = R_BL (r_L − com_L)), of the tissue rows whose
    attachment has via points or wrap objects: {row index: PathSpec}.

    coordinate_index: name -> index into the tree's q of the system the poses come from; a
    conditional via point is active while its coordinate (read from ``kin.q``) is in its range.
    Without it (free bodies: no coordinates) a conditional via point raises ValueError naming it."""
    atts = {a.name: a for a in project.attachments}
    wraps = {w.name: w for w in project.wrap_objects}
    R_BL = np.asarray(R_BL, float)
    com_L = np.asarray(com_L, float)
    out: dict[int, PathSpec] = {}
    for row, name in enumerate(tissue_names):
        a = atts.get(name)
        if a is None or (not a.via_points and not a.wrap_objects and not a.moving_a and not a.moving_b):
            continue
        pts = [(a.body_a, a.point_a_L)] + [(v.body, v.point_L) for v in a.via_points] + [(a.body_b, a.point_b_L)]
        body = np.array([body_index[b] for b, _ in pts], int)
        r_B = np.array([R_BL[i] @ (np.asarray(p, float) - com_L[i]) for i, (_, p) in zip(body, pts)])
        cond = -np.ones(len(pts), int)
        cond_range = np.zeros((len(pts), 2))
        for k, v in enumerate(a.via_points, start=1):
            if not v.coordinate:
                continue
            if coordinate_index is None or v.coordinate not in coordinate_index:
                raise ValueError(f"via point {k} is conditional on coordinate {v.coordinate!r}, which no "
                                 "joint of the project has")
            cond[k] = coordinate_index[v.coordinate]
            cond_range[k] = (v.range_min, v.range_max)
        ranges = (wrap_ranges or {}).get(name) or a.wrap_ranges or None
        ws = []
        for k, wname in enumerate(a.wrap_objects):
            w = wraps[wname]
            i = body_index[w.body]
            T = frame_transform(w.frame)
            s, e = ranges[k] if ranges is not None and k < len(ranges) else (-1, -1)
            ws.append(PathWrap(wname, i, R_BL[i] @ T[:3, :3], R_BL[i] @ (T[:3, 3] - com_L[i]), w.kind,
                               tuple(w.dimensions_m), w.quadrant, int(s), int(e)))
        moving: tuple[MovingPoint, ...] = ()
        if a.moving_a or a.moving_b or any(v.moving for v in a.via_points):
            if coordinate_index is None:
                raise ValueError("a path point moves with the joint coordinates, and the project has no joints")
            moving = _moving_points(a, coordinate_index, None,
                                    lambda k, body=body: (R_BL[body[k]], -R_BL[body[k]] @ com_L[body[k]]))
        out[row] = PathSpec(name, body, r_B, cond, cond_range, tuple(ws), moving)
    return out


@dataclass
class MovingPointLink:
    """What the path provider needs to give a moving point's own motion its generalized force in the
    tree studies: the tree (its poses at q) and, for each coordinate (q index), its joint's child and
    parent body (tree indices; parent -1 = ground), their indices in the provider's bodies (-1: not
    there, e.g. ground) and the q indices of that joint."""

    model: MultibodyModel
    joint: dict[int, tuple[int, int, int, int, tuple[int, ...]]]


def moving_point_link(project: Project, model: MultibodyModel, body_index: dict[str, int]) -> MovingPointLink:
    """MovingPointLink of a project's joints; body_index: mass name -> the provider's body index."""
    joint = {}
    for m in project.masses:
        if m.joint is None:
            continue
        qs = tuple(model.qindex[c] for c in m.joint.coordinates if c in model.qindex)
        for qi in qs:
            joint[qi] = (model.body[m.name], model.body.get(m.joint.parent, -1), body_index.get(m.name, -1),
                         body_index.get(m.joint.parent, -1), qs)
    return MovingPointLink(model, joint)


LINK_STEP = 1e-6
"""Step [rad or m] of the central difference for a joint's relative point velocity (error ~h²)."""


def _joint_point_velocities(link: MovingPointLink, q: np.ndarray, x_G: np.ndarray, child: int, parent: int,
                            qs: tuple[int, ...]) -> np.ndarray:
    """(len(qs), 3) in G: velocity of the point of ``child`` at x_G relative to ``parent`` per unit
    rate of each of the joint's coordinates (central differences of the tree's kinematics)."""
    system = link.model.system

    def pose(kin, b):
        return (np.eye(3), np.zeros(3)) if b < 0 else (kin.R_GB[b], kin.p_GB[b])

    k0 = system.kinematics(q)
    RC, pC = pose(k0, child)
    RP, _ = pose(k0, parent)
    rC = RC.T @ (x_G - pC)
    V = np.zeros((len(qs), 3))
    for i, qi in enumerate(qs):
        rel = []
        for sgn in (1.0, -1.0):
            qq = np.array(q, float)
            qq[qi] += sgn * LINK_STEP
            kk = system.kinematics(qq)
            Rc, pc = pose(kk, child)
            Rp, pp = pose(kk, parent)
            rel.append(Rp.T @ (pc + Rc @ rC - pp))
        V[i] = RP @ (rel[0] - rel[1]) / (2 * LINK_STEP)
    return V


class AnalyticPathProvider:
    """Geometry of tissues routed through via points and over analytic wrap objects (OpenSim's
    path rules) for the MJM backend: implements core.mechanics.tissues.PathProvider.

    The tension acts at the two ends along the first/last straight stretches; every intermediate
    point and each wrap object's tangent points push their bodies (``extra_*``). The length rate is
    Σ e·(v_next − v_prev) over the straight stretches (wrap points moving with their obstacle).
    """

    def __init__(self, paths: dict[int, PathSpec], link: MovingPointLink | None = None):
        self.paths = dict(paths)
        self.link = link
        self._packed: dict[bytes, pk.PackedPaths] = {}

    def _pack(self, index: np.ndarray) -> pk.PackedPaths:
        key = index.tobytes()
        if key not in self._packed:
            self._packed[key] = pk.pack_paths([self.paths[int(r)] for r in index])
        return self._packed[key]

    def wrapped_paths(self, t: float, kin, index: np.ndarray):
        """Every requested path in one call of the path kernel; the stretches' directions, length
        rates and the points' pushes vectorised over all paths' points."""
        from jointmodeller.core.mechanics.tissues import TissueGeometry, WrappedPath

        index = np.asarray(index, np.int64)
        k = len(index)
        q = kin.q if getattr(kin, "q", None) is not None else np.zeros(0)
        solved = pk.solve_paths(self._pack(index), kin.R_GB, kin.p_G, q)
        n = solved.n
        start = np.cumsum(n) - n  # each path's first row in the compacted point list
        path_of = np.repeat(np.arange(k), n)
        local = np.arange(int(n.sum())) - np.repeat(start, n)
        rows = np.repeat(solved.off, n) + local
        x = solved.x_G[rows]
        body = solved.body[rows]
        wrap = solved.wrap[rows]
        vel = kin.point_velocities_G(body, solved.r_B[rows])
        # stretch i -> i+1 within a path (not the last point); straight unless both ends are one wrap object's
        stretch = local < np.repeat(n, n) - 1
        nxt = np.minimum(np.arange(len(rows)) + 1, len(rows) - 1)
        straight = stretch & ~((wrap >= 0) & (wrap == wrap[nxt]))
        d = x[nxt] - x
        e = np.where(straight[:, None], d / np.maximum(np.linalg.norm(d, axis=1), 1e-300)[:, None], 0.0)
        rate = np.bincount(path_of, np.einsum("ij,ij->i", e, vel[nxt] - vel), minlength=k)
        first = start
        last = start + n - 1
        pa, pb = x[first], x[last]
        da, db = e[first], -e[last - 1]
        inner = (local > 0) & (local < np.repeat(n, n) - 1)
        prev = np.maximum(np.arange(len(rows)) - 1, 0)
        xb = [body[inner]]
        xt = [path_of[inner]]
        xp = [x[inner]]
        xd = [(e - e[prev])[inner]]
        if self.link is not None:
            rate = rate + self._moving_shares(self.link, kin, q, index, solved, xb, xt, xp, xd)
        geo = TissueGeometry(solved.length.copy(), rate, pa, pb, da, db)
        extra_body = np.concatenate(xb).astype(np.int64)
        if not len(extra_body):
            return WrappedPath(index, geo)
        return WrappedPath(index, geo, extra_body, np.concatenate(xt).astype(np.int64), np.concatenate(xp),
                           np.concatenate(xd))

    def _moving_shares(self, link: MovingPointLink, kin, q, index, solved, xb, xt, xp, xd) -> np.ndarray:
        """A moving point's own motion: its share g of −∂L/∂q_k as a force pair at the point on the
        joint's child and parent (f on the child, −f on the parent: only that joint's coordinates feel
        it, V f = g e_k), appended to the pushes; returns its part of each path's length rate."""
        rate = np.zeros(len(index))
        packed = self._pack(index)
        share = pk.moving_shares(packed, solved, kin.R_GB, q)
        _, g_rows = pk.point_rows(packed, solved)
        for j, row in enumerate(index):
            spec = self.paths[int(row)]
            if not spec.moving:
                continue
            st = path_states(solved, [spec], [j])[0]
            for kk, qi, g in _shares(packed, solved, share, g_rows, j):
                if qi not in link.joint:
                    continue
                ct, pt, cm, pm, qs = link.joint[qi]
                x = st.x_G[kk]
                V = _joint_point_velocities(link, q, x, ct, pt, qs)
                rhs = np.zeros(len(qs))
                rhs[qs.index(qi)] = g
                f = np.linalg.lstsq(V, rhs, rcond=None)[0]
                for b, sign in ((cm, 1.0), (pm, -1.0)):
                    if b < 0:
                        continue
                    xb.append([b])
                    xt.append([j])
                    xp.append(x[None])
                    xd.append((sign * f)[None])
                    v = kin.v_G[b] + np.cross(kin.w_G[b], x - kin.p_G[b])
                    rate[j] -= sign * (f @ v)
        return rate
