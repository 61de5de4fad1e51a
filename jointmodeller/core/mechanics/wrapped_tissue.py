"""Tissues whose force follows a path wrapped over the bones (seed 004 §3.3, §5 steps b–c).

:class:`WrappedTissue` is a :class:`~jointmodeller.core.mechanics.forces.ForceElement`: each call
recomputes the path in the current poses (warm-started), evaluates the tissue law of
:mod:`jointmodeller.core.mechanics.tissues` on the path length and its rate, and applies the tension
along the path: at the two ends along the path tangents and, for the taut path, at every contact
vertex the string's net push on the bone it touches (exact by virtual work: the generalised force
is -s ∂l/∂q). :class:`WrappingPathProvider` offers the same paths to a
:class:`~jointmodeller.core.mechanics.tissues.TissueSet` through its ``PathProvider`` protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from jointmodeller.core.data import work_of
from jointmodeller.core.geometry.wrapping.mjm_path import mjm_path
from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose
from jointmodeller.core.geometry.wrapping.path import WrapPath
from jointmodeller.core.geometry.wrapping.taut_path import TautOptions, TautPathSolver, lines_still_clear
from jointmodeller.core.mechanics.forces import BodyKinematics, apply_point_forces
from jointmodeller.core.mechanics.tissues import (
    TissueGeometry,
    TissueSet,
    WrappedPath,
    axial_tension,
    straight_tissue_geometry,
)

WRAP_METHODS = ("taut", "mjm-mass", "mjm-covariance", "mjm-residual")


class TissuePath:
    """The path of one tissue between points fixed on two bodies, by a chosen method.

    Calling it with a :class:`Pose` returns the :class:`WrapPath`; the taut method keeps its last
    solution to warm-start the next call. mjm_offset: MJM centroid distance from the surface [m].
    """

    def __init__(
        self,
        body_a: int,
        r_a_B: np.ndarray,
        body_b: int,
        r_b_B: np.ndarray,
        obstacles: list[MeshObstacle],
        method: str = "taut",
        options: TautOptions | None = None,
        mjm_offset: float = 0.0,
    ) -> None:
        if method not in WRAP_METHODS:
            raise ValueError(f"unknown wrapping method {method!r}; use one of {WRAP_METHODS}")
        self.body_a, self.body_b = int(body_a), int(body_b)
        self.r_a_B = np.asarray(r_a_B, float).reshape(3)
        self.r_b_B = np.asarray(r_b_B, float).reshape(3)
        self.obstacles = list(obstacles)
        self.method = method
        self.mjm_offset = float(mjm_offset)
        self.solver = TautPathSolver(self.obstacles, options) if method == "taut" else None

    def ends_G(self, pose: Pose) -> tuple[np.ndarray, np.ndarray]:
        a = pose.to_global(self.body_a, self.r_a_B[None])[0]
        b = pose.to_global(self.body_b, self.r_b_B[None])[0]
        return a, b

    def __call__(self, pose: Pose, warm: bool = True) -> WrapPath:
        a, b = self.ends_G(pose)
        if self.solver is not None:
            return self.solver.solve(a, b, self.body_a, self.body_b, pose, warm=warm)
        return mjm_path(a, b, self.body_a, self.body_b, self.obstacles, pose,
                        method=self.method.split("-", 1)[1], offset=self.mjm_offset)


def path_length_rate(path: WrapPath, kin: BodyKinematics) -> float:
    """dl/dt of a path whose load points move with their bodies: -Σ dir_i · v_i (envelope theorem)."""
    if len(path.load_body) == 0:
        return 0.0
    r_B = np.einsum("mji,mj->mi", kin.R_GB[path.load_body], path.load_point_G - kin.p_G[path.load_body])
    v = kin.point_velocities_G(path.load_body, r_B)
    return float(-np.einsum("mi,mi->", path.load_dir_G, v))


@dataclass
class LastWrap:
    """A WrappedTissue's latest path and tension (per core.data.SystemData)."""

    path: WrapPath | None = None
    tension: float = 0.0


class WrappedTissue:
    """A ligament or tendon wrapped over bone meshes, as a force element.

    Tissue law (as in TissueSet AXIAL): tension s = f(l - l0) + c·dl/dt with f the polynomial of
    ``coeffs`` (k1..kn), clipped at zero and slack below l0 when ``tension_only``.
    ``last_path`` / ``last_tension``: what the latest call computed (for reports and drawing), kept in
    the active core.data.SystemData.
    """

    def __init__(
        self,
        path: TissuePath,
        rest_length: float,
        coeffs: np.ndarray,
        damping: float = 0.0,
        tension_only: bool = True,
        tension_fn: Callable[[float, float], float] | None = None,
    ) -> None:
        self.path = path
        self.rest_length = float(rest_length)
        self.coeffs = np.asarray(coeffs, float).reshape(1, -1)
        self.damping = float(damping)
        self.tension_only = bool(tension_only)
        self.tension_fn = tension_fn

    @property
    def last_path(self) -> WrapPath | None:
        return work_of(self, LastWrap).path

    @property
    def last_tension(self) -> float:
        return work_of(self, LastWrap).tension

    def tension(self, length: float, rate: float) -> float:
        """Tension [N] for path length [m] and its rate [m/s]."""
        if self.tension_fn is not None:
            return float(self.tension_fn(length, rate))
        return float(axial_tension(
            np.array([length - self.rest_length]), np.array([rate]), self.coeffs,
            np.array([self.damping]), np.array([self.tension_only]),
        )[0])

    def accumulate(self, t: float, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray) -> None:
        """Add the wrapped tissue's forces and moments about each centre of mass (n, 3) in G."""
        path = self.path(Pose.from_kinematics(kin))
        rate = path_length_rate(path, kin)
        s = self.tension(path.length, rate)
        last = work_of(self, LastWrap)
        last.path, last.tension = path, s
        if s == 0.0 or len(path.load_body) == 0:
            return
        apply_point_forces(kin, path.load_body, path.load_point_G, s * path.load_dir_G, force_G, torque_G)


@dataclass
class _ProviderWork:
    """A provider's latest path per row and the pose they were solved at: an evaluation at exactly that
    pose (an integrator's Jacobian column that changes only a speed, a damping matrix) reuses them,
    as the paths depend on the pose alone."""

    paths: dict[int, WrapPath] = field(default_factory=dict)
    #: rows whose latest path is a certified free line, kept as its ends a_G, b_G (3,) until a reader
    #: asks for the path (``WrappingPathProvider.last`` builds it): most evaluations need only the ends
    lines: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    p_G: np.ndarray | None = None
    R_GB: np.ndarray | None = None
    solved: set[int] = field(default_factory=set)  # the rows whose latest path was solved at that pose
    refuted: set[int] = field(default_factory=set)  # the rows whose free-line certificate failed at that pose

    def at_pose(self, pose: Pose) -> set[int]:
        """The rows whose latest path was solved at ``pose`` (none when it is a new pose, which is then
        remembered: the rows solved next are added)."""
        same = (self.p_G is not None and self.R_GB is not None and np.array_equal(self.p_G, pose.p_G)
                and np.array_equal(self.R_GB, pose.R_GB))
        if not same:
            self.p_G, self.R_GB = pose.p_G.copy(), pose.R_GB.copy()
            self.solved = set()
            self.refuted = set()
        return self.solved


class WrappingPathProvider:
    """``PathProvider`` for the wrapped rows of a TissueSet: one :class:`TissuePath` per row.

    obstacles: the bone meshes (in their body frames); method: one of WRAP_METHODS; rows: the rows
    it serves (default: every wrapped row; others may be served by another provider, see
    ``tissues.CombinedPathProvider``).
    """

    def __init__(
        self,
        tissues: TissueSet,
        obstacles: list[MeshObstacle],
        method: str = "taut",
        options: TautOptions | None = None,
        rows: np.ndarray | None = None,
    ) -> None:
        self.tissues = tissues
        rows = np.flatnonzero(tissues.wrapped) if rows is None else np.asarray(rows, np.int64)
        self.obstacles = list(obstacles)
        self.paths = {
            int(i): TissuePath(tissues.body_a[i], tissues.r_a_B[i], tissues.body_b[i], tissues.r_b_B[i],
                               obstacles, method, options)
            for i in rows
        }

    @property
    def last(self) -> dict[int, WrapPath]:
        """Each row's latest path (in the active core.data.SystemData)."""
        work = work_of(self, _ProviderWork)
        for i, (a_G, b_G) in work.lines.items():
            tp = self.paths[i]
            assert tp.solver is not None  # only the taut solver certifies free lines
            work.paths[i] = tp.solver.free_line_path(a_G, b_G, tp.body_a, tp.body_b)
        work.lines.clear()
        return work.paths

    def _certified_lines(self, kin: BodyKinematics, pose: Pose, index: np.ndarray,
                         work: _ProviderWork) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """{position j in index: the ends (a_G, b_G) (3,)} of the rows whose path at ``pose`` is the
        straight line their taut solver's free-line certificate vouches for (what the solve would
        return), checked all at once and recorded as solved at this pose; rows already solved at this
        pose keep their line, rows whose certificate failed at it are not checked again."""
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        fresh: list[int] = []
        for j, i in enumerate(index):
            i = int(i)
            if i in work.solved:
                if i in work.lines:
                    out[j] = work.lines[i]
                continue
            if i in work.refuted:
                continue
            solver = self.paths[i].solver
            if solver is not None and solver.has_free_line():
                fresh.append(j)
        if not fresh:
            return out
        rows = index[fresh]
        ts = self.tissues
        a_G = kin.points_G(ts.body_a[rows], ts.r_a_B[rows])
        b_G = a_G + (kin.points_G(ts.body_b[rows], ts.r_b_B[rows]) - a_G)  # the line's last vertex as solve makes it
        warms = [self.paths[int(i)].solver.warm for i in rows]  # type: ignore[union-attr]
        clear = lines_still_clear(self.obstacles, warms, np.stack([a_G, b_G], axis=1), pose)
        clear &= np.any(a_G != b_G, axis=1)  # coincident ends: the solve's own case
        for n, j in enumerate(fresh):
            i = int(index[j])
            if clear[n]:
                out[j] = work.lines[i] = (a_G[n], b_G[n])
                work.solved.add(i)
            else:
                work.refuted.add(i)
        return out

    def free_lines(self, kin: BodyKinematics, index: np.ndarray) -> np.ndarray:
        """(k,) bool: which of the rows ``index`` (k,) are, at this pose, the straight line between their
        attachments that their free-line certificate vouches for (what a solve would return). Those
        are recorded as solved here, as :meth:`wrapped_paths` records them, so a caller may treat them
        as straight tissues (the compiled kernel) and ask :meth:`wrapped_paths` for the rest only."""
        index = np.asarray(index, np.int64)
        pose = Pose.from_kinematics(kin)
        work = work_of(self, _ProviderWork)
        work.at_pose(pose)
        mask = np.zeros(len(index), dtype=bool)
        mask[list(self._certified_lines(kin, pose, index, work))] = True
        return mask

    def wrapped_paths(self, t: float, kin: BodyKinematics, index: np.ndarray) -> WrappedPath:
        """Geometry of the tissues ``index`` (k,): ends, directions, length, rate, and extra pushes."""
        pose = Pose.from_kinematics(kin)
        k = len(index)
        length = np.zeros(k)
        rate = np.zeros(k)
        pa = np.zeros((k, 3))
        pb = np.zeros((k, 3))
        da = np.zeros((k, 3))
        db = np.zeros((k, 3))
        eb, et, ep, ed = [], [], [], []
        work = work_of(self, _ProviderWork)
        latest, lines = work.paths, work.lines
        solved = work.at_pose(pose)
        index = np.asarray(index, np.int64)
        free = self._certified_lines(kin, pose, index, work)
        for j, i in enumerate(index):  # loop over tissues (each solves a path)
            i = int(i)
            line = free.get(j)
            if line is not None:  # a free straight line (recorded): its ends carry the loads, nothing to solve
                continue
            path = latest[i] if i in solved else self.paths[i](pose)
            latest[i] = path
            lines.pop(i, None)
            solved.add(i)
            length[j] = path.length
            rate[j] = path_length_rate(path, kin)
            body = path.load_body
            ia = np.flatnonzero(body == self.tissues.body_a[i])
            ib = np.flatnonzero(body == self.tissues.body_b[i])
            first = int(ia[0]) if ia.size else -1
            last = int(ib[-1]) if ib.size and (ib[-1] != first) else -1
            if first >= 0:
                pa[j], da[j] = path.load_point_G[first], path.load_dir_G[first]
            if last >= 0:
                pb[j], db[j] = path.load_point_G[last], path.load_dir_G[last]
            rest_mask = np.ones(len(body), dtype=bool)  # the pushes between the two ends
            rest_mask[[j for j in (first, last) if j >= 0]] = False
            rest = np.flatnonzero(rest_mask)
            eb.append(body[rest])
            et.append(np.full(len(rest), j, np.int64))
            ep.append(path.load_point_G[rest])
            ed.append(path.load_dir_G[rest])
        if free:  # the free lines are straight tissues: their geometry as such, all at once
            at = np.fromiter(free, np.int64, len(free))
            ts, rows = self.tissues, index[at]
            g = straight_tissue_geometry(kin, ts.body_a[rows], ts.r_a_B[rows], ts.body_b[rows], ts.r_b_B[rows])
            length[at], rate[at], pa[at], pb[at], da[at], db[at] = (g.length, g.length_rate, g.point_a_G,
                                                                    g.point_b_G, g.dir_a_G, g.dir_b_G)
        geom = TissueGeometry(length, rate, pa, pb, da, db)

        def cat(xs, shape):
            return np.concatenate(xs) if xs else np.zeros(shape)

        return WrappedPath(
            index=np.asarray(index, np.int64),
            geometry=geom,
            extra_body=cat(eb, (0,)).astype(np.int64),
            extra_tissue=cat(et, (0,)).astype(np.int64),
            extra_point_G=cat(ep, (0, 3)).reshape(-1, 3),
            extra_dir_G=cat(ed, (0, 3)).reshape(-1, 3),
        )

