"""Closest points on a mesh found through its signed distance field's node faces (issue 17: the face field).

A field built with ``keep_faces`` (:class:`~jointmodeller.core.geometry.sdf.SignedDistanceField`) knows
each band node's closest face. A query point's closest face is almost always among those of its cell's
eight nodes (the closest face changes only where the point crosses a Voronoi boundary of the surface, and
the nodes are at most h√3 away); where it is not, the point's closest point on the best of them lies on
that face's boundary and the closer face is across it. So the search tests the (two to six distinct) faces
of the cell's nodes and then, while the closest point on the best lies on an edge or a corner of it, the
faces round that edge's or corner's vertices (at most ``DESCENT_ROUNDS`` times), and writes the closest
point, the smooth normal there and the squared distance exactly as :meth:`SurfaceProximity.search_near`
writes them (the same Ericson triangle test, the same normal interpolation): what follows
(``SurfaceProximity.found``, the contact's springs) is the exact geometry's code.

Measured on the demo elbow (docs/sdf.md): at a pose in sliding contact, 3,826 of 3,827 candidate bed
vertices get the face of a search that also tests every face round each best face's three corners (the
other is 14 nm off), and the dynamics over 0.3 s follows the exact geometry's within its integrator's
tolerance; about 0.2 µs a point, no tree query.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import numpy as np

from jointmodeller.core._jit import kernel as _compiled_kernel
from jointmodeller.core._jit import njit, numba_enabled, prange, thread_count
from jointmodeller.core.geometry.collision_proximity import (
    SurfaceProximity,
    _face_corners,
    _faces_away,
    _triangle_distance2,
    _write_closest,
)
from jointmodeller.core.geometry.sdf import SignedDistanceField

#: how often the search moves on to the faces round the closest feature (edge or corner) of a new best face
DESCENT_ROUNDS = 3
#: the cell's node faces a search remembers as tested (each tested once)
_TESTED = 8
#: a held face's reach is shortened by this much [m] against rounding (distances of ~0.1 m round at ~1e-17 m)
HOLD_SLACK_M = 1e-12
#: faces held per bed vertex (HeldFaces): Radau's three stages, visited in turn
HELD_SLOTS = 3


@njit(inline="always")
def _tested_before(tested, nt, f):  # pragma: no cover - numba
    """Whether face f is among tested[:nt]."""
    for a in range(nt):
        if tested[a] == f:
            return True
    return False


@njit(error_model="numpy")
def _field_faces_rows(lo, hi, q, rows, origin, inv_h, nmax, table, node_faces, verts, faces, vf, spheres, vnormals,
                      facing, use_facing, facing_cos, rounds, hold, held_cell, held_point, held_face, held_reach,
                      held_cursor, slack, out_s, out_n, out_d2, out_f):  # pragma: no cover
    """For each point q[r], r in [lo, hi) (the mesh's frame): the nearest of its cell's node faces and of
    the faces round the closest feature's vertices while that is an edge or a corner (see the module doc); out_s, out_n,
    out_d2, out_f as ``_closest_kernel`` writes them (f = −1, d2 = inf where no face: the point is beyond
    the band or off the lattice). ``use_facing``: only faces whose normal · facing[r] < −facing_cos·|normal|
    count, as there.

    ``hold``: point q[r] is bed vertex rows[r]; held_* (n, slots) keep, per vertex, the cell, the place, the
    face and the reach (the distance of the nearest other node face of the cell) of its latest searches
    that ended on a node face with the closest point inside it, written in turn at held_cursor (n,); the
    nearest slot in the vertex's cell is tried. While the vertex is in that cell, moved by m
    since, every other node face is at least reach − m away (distance is 1-Lipschitz); so where the
    held face is nearer than that (less ``slack``) it is still the strict nearest of the cell's node
    faces, and with the closest point still inside it the search would stop there: the face alone
    gives the same bits (one triangle test instead of several)."""
    nv = verts.shape[0]
    tested = np.empty(_TESTED, dtype=np.int64)
    for r in range(lo, hi):
        out_d2[r] = np.inf
        out_f[r] = -1
        for k in range(3):
            out_s[r, k] = 0.0
            out_n[r, k] = 0.0
        p0 = q[r, 0]
        p1 = q[r, 1]
        p2 = q[r, 2]
        v_bed = rows[r] if hold else 0
        if not (np.isfinite(p0) and np.isfinite(p1) and np.isfinite(p2)):
            continue
        tx = min(max((p0 - origin[0]) * inv_h, 0.0), float(nmax[0]))
        ty = min(max((p1 - origin[1]) * inv_h, 0.0), float(nmax[1]))
        tz = min(max((p2 - origin[2]) * inv_h, 0.0), float(nmax[2]))
        i0 = min(int(tx), nmax[0] - 1)
        j0 = min(int(ty), nmax[1] - 1)
        k0 = min(int(tz), nmax[2] - 1)
        cell = i0 + (nmax[0] + 1) * (j0 + (nmax[1] + 1) * k0)
        if hold:  # the nearest slot of this cell
            moved = np.inf
            slot = -1
            for c in range(held_face.shape[1]):
                if held_face[v_bed, c] >= 0 and held_cell[v_bed, c] == cell:
                    ex = p0 - held_point[v_bed, c, 0]
                    ey = p1 - held_point[v_bed, c, 1]
                    ez = p2 - held_point[v_bed, c, 2]
                    m2 = ex * ex + ey * ey + ez * ez
                    if m2 < moved:
                        moved = m2
                        slot = c
            if slot >= 0:
                moved = math.sqrt(moved)
                room = held_reach[v_bed, slot] - slack
                if moved < room:
                    f = held_face[v_bed, slot]
                    ax, ay, az, abx, aby, abz, acx, acy, acz = _face_corners(f, verts, faces)
                    ok, u, v, w, dd = _triangle_distance2(p0, p1, p2, ax, ay, az, abx, aby, abz, acx, acy, acz)
                    if ok and u > 0.0 and v > 0.0 and w > 0.0 and math.sqrt(dd) + moved < room:
                        out_d2[r] = dd
                        out_f[r] = f
                        _write_closest(r, f, u, v, w, verts, faces, vnormals, out_s, out_n)
                        continue
        nt = 0
        best = np.inf
        second = np.inf  # least squared distance of the other node faces tested
        certain = True  # every node face tested and none degenerate (else no hold)
        sb = np.inf
        bf = -1
        bu = 0.0
        bv = 0.0
        bw = 0.0
        for corner in range(8):
            i = i0 + (corner & 1)
            j = j0 + ((corner >> 1) & 1)
            k = k0 + (corner >> 2)
            b = table[i >> 3, j >> 3, k >> 3]
            if b < 0:
                continue
            f = node_faces[b, i & 7, j & 7, k & 7]
            if f < 0 or _tested_before(tested, nt, f):
                continue
            tested[nt] = f
            nt += 1
            ax, ay, az, abx, aby, abz, acx, acy, acz = _face_corners(f, verts, faces)
            if use_facing and _faces_away(abx, aby, abz, acx, acy, acz, facing, r, facing_cos):
                continue
            ok, u, v, w, dd = _triangle_distance2(p0, p1, p2, ax, ay, az, abx, aby, abz, acx, acy, acz)
            if not ok:
                certain = False
                continue
            if dd < best:
                second = best
                best = dd
                sb = math.sqrt(dd)
                bf = f
                bu = u
                bv = v
                bw = w
            elif dd < second:
                second = dd
        if hold and bf >= 0 and certain and bu > 0.0 and bv > 0.0 and bw > 0.0:
            c = held_cursor[v_bed]
            held_cell[v_bed, c] = cell
            held_point[v_bed, c, 0] = p0
            held_point[v_bed, c, 1] = p1
            held_point[v_bed, c, 2] = p2
            held_face[v_bed, c] = bf
            held_reach[v_bed, c] = math.sqrt(second)
            held_cursor[v_bed] = (c + 1) % held_face.shape[1]
        centre = -1
        for _ in range(rounds):
            if bf < 0 or bf == centre:
                break
            centre = bf
            if bu > 0.0 and bv > 0.0 and bw > 0.0:
                break  # inside the face: the cell's faces decide
            for c in range(3):
                vi = faces[centre, c]
                if vi < 0 or vi >= nv:
                    continue
                if (c == 0 and bu == 0.0) or (c == 1 and bv == 0.0) or (c == 2 and bw == 0.0):
                    continue  # not a corner of the closest feature
                for a in range(vf.shape[1]):
                    f = vf[vi, a]
                    if f < 0:
                        break
                    ex = p0 - spheres[f, 0]
                    ey = p1 - spheres[f, 1]
                    ez = p2 - spheres[f, 2]
                    reach = sb + spheres[f, 3]
                    if ex * ex + ey * ey + ez * ez > reach * reach * (1.0 + 1e-9) + 1e-30:
                        continue  # clearly farther than the best: cannot win
                    if f == centre:
                        continue
                    seen = False  # round an earlier corner of the centre face: tested then
                    for c2 in range(c):
                        v2 = faces[centre, c2]
                        if v2 == faces[f, 0] or v2 == faces[f, 1] or v2 == faces[f, 2]:
                            seen = True
                    if seen:
                        continue
                    ax, ay, az, abx, aby, abz, acx, acy, acz = _face_corners(f, verts, faces)
                    if use_facing and _faces_away(abx, aby, abz, acx, acy, acz, facing, r, facing_cos):
                        continue
                    ok, u, v, w, dd = _triangle_distance2(p0, p1, p2, ax, ay, az, abx, aby, abz, acx, acy, acz)
                    if ok and dd < best:
                        best = dd
                        sb = math.sqrt(dd)
                        bf = f
                        bu = u
                        bv = v
                        bw = w
        if bf < 0:
            continue
        out_d2[r] = best
        out_f[r] = bf
        _write_closest(r, bf, bu, bv, bw, verts, faces, vnormals, out_s, out_n)


def _field_faces_kernel(chunks, q, rows, origin, inv_h, nmax, table, node_faces, verts, faces, vf, spheres,
                        vnormals, facing, use_facing, facing_cos, rounds, hold, held_cell, held_point, held_face,
                        held_reach, held_cursor, slack, out_s, out_n, out_d2, out_f):  # pragma: no cover
    """:func:`_field_faces_rows` over all rows in ``chunks`` contiguous parts, one a thread when compiled
    with ``parallel`` (each row writes only its own outputs and its own bed vertex's held slots: the
    rows' bed vertices are distinct)."""
    m = q.shape[0]
    for c in prange(chunks):
        _field_faces_rows(c * m // chunks, (c + 1) * m // chunks, q, rows, origin, inv_h, nmax, table, node_faces,
                          verts, faces, vf, spheres, vnormals, facing, use_facing, facing_cos, rounds, hold,
                          held_cell, held_point, held_face, held_reach, held_cursor, slack, out_s, out_n, out_d2,
                          out_f)


@dataclass(frozen=True, eq=False)
class HeldFaces:
    """Per bed vertex and slot (n, slots): the cell (packed lattice index), place (n, slots, 3), face (−1:
    none) and reach [m] of its latest face-field searches that later ones may reuse, and the slot each
    vertex writes next (n,) (see :func:`_field_faces_kernel`). Slots: an implicit Runge–Kutta step
    evaluates its stages in turn, each near where the same stage was last time."""

    cell: np.ndarray
    point: np.ndarray
    face: np.ndarray
    reach: np.ndarray
    cursor: np.ndarray

    @classmethod
    def empty(cls, n: int, slots: int = HELD_SLOTS) -> "HeldFaces":
        return cls(np.zeros((n, slots), np.int64), np.zeros((n, slots, 3)), np.full((n, slots), -1, np.int64),
                   np.zeros((n, slots)), np.zeros(n, np.int64))


#: rows below which a search runs on one thread (a parallel launch costs some microseconds)
PARALLEL_MIN_ROWS = 256
#: every this many searches the way not chosen (threads or one thread) is timed again
PROBE_EVERY = 50
_parallel_lock = threading.Lock()


class ThreadChoice:
    """Whether searches run on numba's threads or on the calling one, by what each measured lately
    (seconds a row, an exponential average; the other way retried every PROBE_EVERY searches). On an
    idle machine the threads halve a search; when the cores are busy (a GUI rendering, other
    processes) OpenMP's waiting threads can make a parallel search several times slower than one
    thread, and this notices it. The answers are the same bits either way. Each way's first search is
    not counted (it may compile the kernel)."""

    def __init__(self) -> None:
        self.per_row: dict[bool, float | None] = {True: None, False: None}
        self.seen = {True: 0, False: 0}
        self.calls = 0

    def parallel(self) -> bool:
        self.calls += 1
        for way in (True, False):
            if self.per_row[way] is None:
                return way
        best = bool(self.per_row[True] <= self.per_row[False])  # type: ignore[operator]
        return (not best) if self.calls % PROBE_EVERY == 0 else best

    def record(self, parallel: bool, seconds: float, rows: int) -> None:
        self.seen[parallel] += 1
        if self.seen[parallel] == 1:
            return
        per_row = seconds / max(rows, 1)
        old = self.per_row[parallel]
        self.per_row[parallel] = per_row if old is None else 0.7 * old + 0.3 * per_row


THREADS = ThreadChoice()


def _run_kernel(use_numba: bool | None, m: int, *args) -> None:
    """:func:`_field_faces_kernel` on numba's threads (``parallel``) or on this one, as
    :data:`THREADS` finds faster; on this one also when numba is off, the rows are few, one thread is
    all there is, or another thread is in a parallel search now (numba's fallback threading layer,
    workqueue, must not be entered by two threads at once)."""
    if not numba_enabled(use_numba):
        _field_faces_kernel(1, *args)
        return
    threads = thread_count()
    if threads < 2 or m < PARALLEL_MIN_ROWS:
        _field_faces_rows(0, m, *args)
        return
    parallel = THREADS.parallel() and _parallel_lock.acquire(blocking=False)
    start = time.perf_counter()
    try:
        if parallel:
            _compiled_kernel(_field_faces_kernel, None, parallel=True, error_model="numpy")(threads, *args)
        else:
            _field_faces_rows(0, m, *args)
    finally:
        if parallel:
            _parallel_lock.release()
    THREADS.record(parallel, time.perf_counter() - start, m)


def check_field_faces(sdf: SignedDistanceField, prox: SurfaceProximity) -> None:
    """ValueError unless ``sdf`` holds node faces of the mesh ``prox`` searches (the kernel indexes the
    mesh's faces by them without bounds checks)."""
    if sdf.node_faces is None:
        raise ValueError("this signed distance field was built without its nodes' closest faces "
                         "(SignedDistanceField.build(..., keep_faces=True))")
    if sdf.mesh_face_count != len(prox.faces):
        raise ValueError(f"the field's node faces are of a mesh with {sdf.mesh_face_count} faces, "
                         f"not of this surface's {len(prox.faces)}")


def search_field_faces(sdf: SignedDistanceField, prox: SurfaceProximity, q: np.ndarray,
                       facing: np.ndarray | None = None, facing_cos: float = 0.0, rows: np.ndarray | None = None,
                       held: HeldFaces | None = None, use_numba: bool | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(s (m, 3), n (m, 3), d2 (m,), f (m,)) of points q (m, 3) in the mesh's frame: the closest point on
    the faces the field's nodes round each point name (and the faces round its closest edge or corner),
    the smooth unit normal there, the squared distance and the face (−1, inf where none), as
    :meth:`SurfaceProximity.search_near` gives them; ``facing`` (m, 3) and ``facing_cos`` as there.
    ``sdf`` is the field of ``prox``'s mesh built with ``keep_faces`` (:func:`check_field_faces`).
    ``held`` (with ``rows`` (m,), the bed vertex of each point, strictly increasing; not with ``facing``):
    faces from the vertices' earlier searches, reused where they provably give the same answer, and
    updated (the rows' own slots only: threads never share one)."""
    check_field_faces(sdf, prox)
    q = np.ascontiguousarray(np.asarray(q, dtype=np.float64).reshape(-1, 3))
    m = len(q)
    s = np.empty((m, 3))  # the kernel writes every row
    n = np.empty((m, 3))
    d2 = np.empty(m)
    f = np.empty(m, dtype=np.int64)
    slots = _NO_HELD if held is None or facing is not None else held
    hold = slots is not _NO_HELD
    if hold:
        rows = np.ascontiguousarray(rows, dtype=np.int64) if rows is not None else None
        if rows is None or rows.shape != (m,):
            raise ValueError("held faces need the bed vertex (rows) of every point")
        if m and (rows[0] < 0 or rows[-1] >= len(slots.face) or np.any(rows[1:] <= rows[:-1])):
            raise ValueError("held faces need distinct bed vertices (rows) in increasing order, "
                             "within the held ones")
    else:
        rows = _NO_ROWS
    if m:
        fac = _NO_FACING if facing is None else np.ascontiguousarray(facing, dtype=np.float64)
        _run_kernel(use_numba, m, q, rows, sdf.origin, 1.0 / sdf.spacing, sdf.node_dims - 1, sdf.block_index,
                    sdf.node_faces, prox.vertices, prox.faces, prox.vertex_faces, prox.face_spheres,
                    prox.vertex_normals, fac, facing is not None, float(facing_cos), DESCENT_ROUNDS, hold,
                    slots.cell, slots.point, slots.face, slots.reach, slots.cursor, HOLD_SLACK_M, s, n, d2, f)
    return s, n, d2, f


#: what a search without held faces or facing passes for them (never read)
_NO_HELD = HeldFaces.empty(0)
_NO_ROWS = np.zeros(1, np.int64)
_NO_FACING = np.zeros((1, 3))
