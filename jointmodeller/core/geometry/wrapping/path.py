"""The result of a wrapping computation: a polyline over the bones, with what the dynamics need.

Every method (MJM heuristic, taut string) returns a :class:`WrapPath`. The tension ``s`` of the
tissue acts on the bodies through ``load_body``/``load_point_G``/``load_dir_G``: body
``load_body[i]`` receives force ``s * load_dir_G[i]`` at ``load_point_G[i]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FREE = -1  #: body label of a path point that touches no bone


@dataclass(frozen=True)
class PathSegment:
    """A straight sub-segment of a tissue between two bodies (MJM §5: tissues over > 2 bodies)."""

    body_a: int
    body_b: int
    point_a_G: np.ndarray
    point_b_G: np.ndarray

    @property
    def length(self) -> float:
        return float(np.linalg.norm(self.point_b_G - self.point_a_G))


@dataclass
class WrapPath:
    """A tissue path from origin (points_G[0]) to insertion (points_G[-1]).

    points_G (p, 3) polyline; body (p,) body of each point (FREE off the bones);
    length: polyline length [m]; method: which algorithm made it.
    attach_a_G / attach_b_G (3,): effective attachment points on the origin / insertion body (the
    last point on the origin body, the first on the insertion body); dir_a_G / dir_b_G (3,): unit
    directions along which positive tension pulls the origin / insertion body there.
    segments: straight sub-segments between consecutive bodies along the path.
    load_body (q,), load_point_G (q, 3), load_dir_G (q, 3): force per unit tension on bodies.
    iterations, converged: solver diagnostics (taut path).
    """

    points_G: np.ndarray
    body: np.ndarray
    length: float
    method: str
    attach_a_G: np.ndarray
    attach_b_G: np.ndarray
    dir_a_G: np.ndarray
    dir_b_G: np.ndarray
    segments: list[PathSegment]
    load_body: np.ndarray
    load_point_G: np.ndarray
    load_dir_G: np.ndarray
    iterations: int = 0
    converged: bool = True
    info: dict = field(default_factory=dict)

    @property
    def origin_body(self) -> int:
        return int(self.body[0])

    @property
    def insertion_body(self) -> int:
        return int(self.body[-1])

    def body_contacts(self) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """Per run of points on one body along the path: (body, entry point (3,), exit point (3,)).

        The first run's exit is the origin body's effective attachment, the last run's entry the
        insertion body's; runs in between are the bones the tissue wraps over.
        """
        return [(b, self.points_G[i].copy(), self.points_G[j].copy()) for b, i, j in runs_of_bodies(self.body)]

    def body_forces(self, tension: float, n_bodies: int) -> tuple[np.ndarray, np.ndarray]:
        """Net force (n, 3) and moment about the G origin (n, 3) on each body for tension s [N]."""
        f = tension * self.load_dir_G
        force = np.zeros((n_bodies, 3))
        moment = np.zeros((n_bodies, 3))
        np.add.at(force, self.load_body, f)
        np.add.at(moment, self.load_body, np.cross(self.load_point_G, f))
        return force, moment


def polyline_length(points: np.ndarray) -> float:
    """Length of a polyline (p, 3)."""
    return float(np.linalg.norm(np.diff(points, axis=0), axis=1).sum())


def runs_of_bodies(body: np.ndarray) -> list[tuple[int, int, int]]:
    """Consecutive runs (label, first index, last index) of non-FREE labels along the path."""
    idx = np.flatnonzero(body != FREE)
    if idx.size == 0:
        return []
    lab = body[idx]
    brk = np.flatnonzero(lab[1:] != lab[:-1]) + 1
    starts = np.concatenate([[0], brk])
    ends = np.concatenate([brk - 1, [len(idx) - 1]])
    return [(int(lab[s]), int(idx[s]), int(idx[e])) for s, e in zip(starts, ends)]


def segments_from_labels(points: np.ndarray, body: np.ndarray,
                         runs: list[tuple[int, int, int]] | None = None) -> list[PathSegment]:
    """Straight spans between the last point of one body's run and the first of the next body's
    (``runs``: runs_of_bodies(body), when the caller has them already)."""
    if runs is None:
        runs = runs_of_bodies(body)
    segs = []
    for (la, _, ea), (lb, sb, _) in zip(runs[:-1], runs[1:]):
        segs.append(PathSegment(la, lb, points[ea].copy(), points[sb].copy()))
    return segs


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 0.0, n, 1.0)


def vertex_pull_directions(points: np.ndarray) -> np.ndarray:
    """Force per unit tension that a taut string puts on each of its vertices (p, 3).

    Interior vertex: t_prev + t_next (unit vectors towards both neighbours) = -dl/dx_i; ends: the
    unit vector towards the single neighbour. Zero-length spans contribute nothing.
    """
    t = _unit(np.diff(points, axis=0))  # (p-1, 3), from i to i+1
    d = np.zeros_like(points)
    d[:-1] += t
    d[1:] -= t
    return d


def make_path(
    points: np.ndarray,
    body: np.ndarray,
    method: str,
    per_vertex_loads: bool,
    **extra,
) -> WrapPath:
    """Assemble a :class:`WrapPath` from a labelled polyline.

    per_vertex_loads: the taut-string model (every body-bound vertex carries -s dl/dx_i, which is
    exact by virtual work); otherwise the MJM model (each straight sub-segment pulls its two end
    bodies at the effective attachment points, and nothing acts in between).
    """
    points = np.asarray(points, float)
    body = np.asarray(body, np.int64)
    length = polyline_length(points)
    runs = runs_of_bodies(body)
    first_run, last_run = runs[0], runs[-1]
    ia = first_run[2]  # last point of the run that starts at the origin
    ib = last_run[1]  # first point of the run that ends at the insertion
    segs = segments_from_labels(points, body, runs)
    # direction of pull at the effective attachments: along the path tangent leaving the body
    pull = vertex_pull_directions(points)
    if len(points) > 1:
        nxt = points[min(ia + 1, len(points) - 1)] - points[ia]
        prv = points[max(ib - 1, 0)] - points[ib]
    else:
        nxt = prv = np.zeros(3)
    dir_a = _unit(nxt)
    dir_b = _unit(prv)
    if per_vertex_loads:
        on = body != FREE
        load_body = body[on]
        load_point = points[on]
        load_dir = pull[on]
    else:
        lb, lp, ld = [], [], []
        for s in segs:
            e = _unit(s.point_b_G - s.point_a_G)
            lb += [s.body_a, s.body_b]
            lp += [s.point_a_G, s.point_b_G]
            ld += [e, -e]
        load_body = np.asarray(lb, np.int64)
        load_point = np.asarray(lp, float).reshape(-1, 3)
        load_dir = np.asarray(ld, float).reshape(-1, 3)
    return WrapPath(
        points_G=points,
        body=body,
        length=length,
        method=method,
        attach_a_G=points[ia].copy(),
        attach_b_G=points[ib].copy(),
        dir_a_G=dir_a,
        dir_b_G=dir_b,
        segments=segs,
        load_body=load_body,
        load_point_G=load_point,
        load_dir_G=load_dir,
        **extra,
    )


def straight_path(points: np.ndarray, body_a: int, body_b: int, method: str, **extra) -> WrapPath:
    """The :class:`WrapPath` :func:`make_path` makes of ``points`` (p, 3), a straight polyline from
    body_a's attachment to body_b's with every interior vertex FREE (per-vertex loads: only the two
    ends are on a body), built directly: a free path is what the taut solver's shortcut returns for
    most tissues at most evaluations, and the general assembly costs ~0.2 ms. Same values to rounding
    (the length is the chord's, not the sum of its pieces)."""
    points = np.asarray(points, float)
    a, b = points[0], points[-1]
    body = np.full(len(points), FREE, np.int64)
    body[0], body[-1] = body_a, body_b
    if body_a == body_b:  # both ends on one body: make_path's single run (no segment)
        return make_path(points, body, method, per_vertex_loads=True, **extra)
    chord = b - a
    length = float(np.sqrt(chord @ chord))
    u = chord / length if length > 0.0 else np.zeros(3)
    return WrapPath(
        points_G=points,
        body=body,
        length=length,
        method=method,
        attach_a_G=a.copy(),
        attach_b_G=b.copy(),
        dir_a_G=u,
        dir_b_G=-u,
        segments=[PathSegment(int(body_a), int(body_b), a.copy(), b.copy())],
        load_body=np.array([body_a, body_b], np.int64),
        load_point_G=np.stack([a, b]),
        load_dir_G=np.stack([u, -u]),
        **extra,
    )
