"""Closest points and signed penetration of query points against a surface (built once per mesh).

Used by the contact force laws: each spring-bed vertex of one body is mapped into the other body's
frame, and its closest point on that surface, the smooth surface normal there (vertex normals
interpolated with the closest point's barycentric coordinates, so it varies continuously as the
closest point slides across edges) and the signed depth are found.

Speed comes from three filters, all built once: the point grid's cell distance bounds drop query
points far from the surface; a cKDTree gives the K nearest vertices of the rest; only the faces
around those vertices are tested, in a compiled loop (plain Python with JOINTMODELLER_NUMBA=0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy.spatial import cKDTree

from jointmodeller.core._jit import njit
from jointmodeller.core.geometry.collision_grid import PointGrid, _kernel

#: nearest vertices whose incident faces are searched for the closest point
NEAREST_VERTICES = 6
#: the same when only faces turned towards the query point count (more, as some are skipped)
FACING_NEAREST_VERTICES = 16
#: the nearest faces a search reports for a set certificate (a vertex's fan has about six)
CERTIFIED_FACES = 6
#: a point's certificates tried, nearest first (each costs a face test or more)
NEAREST_SLOTS_TRIED = 3


def _vertex_faces(faces: np.ndarray, n_vertices: int) -> np.ndarray:
    """(n, max valence) faces around each vertex, padded with -1."""
    flat_v = faces.reshape(-1)
    flat_f = np.repeat(np.arange(len(faces)), 3)
    order = np.argsort(flat_v, kind="stable")
    flat_v, flat_f = flat_v[order], flat_f[order]
    counts = np.bincount(flat_v, minlength=n_vertices)
    start = np.zeros(n_vertices + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    out = np.full((n_vertices, max(int(counts.max()), 1)), -1, dtype=np.int64)
    col = np.arange(len(flat_v)) - start[flat_v]
    out[flat_v, col] = flat_f
    return out


def _lists_kernel(q, lists, outside, verts, k, bound, out_near, out_ok, out_spare):  # pragma: no cover
    """For each point q[r]: the k nearest of the candidate vertices lists[r, :] (index len(verts) =
    none) within ``bound``, ascending (ties keep list order, as a stable sort), into out_near[r, :k]
    (len(verts) where fewer); out_ok[r]: outside[r] exceeds the k-th distance (or ``bound``);
    out_spare[r]: how much nearer than every other vertex the k-th is, a lower bound (the next
    distance in the list, ``outside[r]`` or ``bound``, whichever is least, less the k-th; 0 where
    fewer than k lie within the bound): the k nearest stay the same set while the point moves less
    than half of it."""
    n = verts.shape[0]
    K = lists.shape[1]
    d = np.empty(K)
    for r in range(q.shape[0]):
        for j in range(K):
            v = lists[r, j]
            if v < n:
                dx = verts[v, 0] - q[r, 0]
                dy = verts[v, 1] - q[r, 1]
                dz = verts[v, 2] - q[r, 2]
                d[j] = np.sqrt(dx * dx + dy * dy + dz * dz)
            else:
                d[j] = np.inf
        last = bound
        for i in range(k):  # selection: the i-th smallest not taken yet (first index on ties)
            best = -1
            for j in range(K):
                if d[j] != -1.0 and (best < 0 or d[j] < d[best]):
                    best = j
            if best >= 0 and d[best] < bound:
                out_near[r, i] = lists[r, best]
                if i == k - 1:
                    last = d[best]
                d[best] = -1.0
            else:
                out_near[r, i] = n
        out_ok[r] = outside[r] > last
        nxt = min(outside[r], bound)
        for j in range(K):
            if d[j] != -1.0 and d[j] < nxt:
                nxt = d[j]
        out_spare[r] = nxt - last if out_near[r, k - 1] < n and nxt > last else 0.0


@njit(inline="always")
def _triangle_barycentric(p0, p1, p2, ax, ay, az, abx, aby, abz, acx, acy, acz):  # pragma: no cover
    """(ok, u, v, w): barycentric coordinates of the point of triangle (a, a + ab, a + ac) closest to
    p (Ericson, Real-Time Collision Detection §5.1.5); ok False for a degenerate triangle. The one
    implementation: the closest-point kernels below call it, so a face gives the same bits in each."""
    apx = p0 - ax
    apy = p1 - ay
    apz = p2 - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    bpx = apx - abx
    bpy = apy - aby
    bpz = apz - abz
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    cpx = apx - acx
    cpy = apy - acy
    cpz = apz - acz
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    if d1 <= 0.0 and d2 <= 0.0:
        u, v, w = 1.0, 0.0, 0.0
    elif d3 >= 0.0 and d4 <= d3:
        u, v, w = 0.0, 1.0, 0.0
    elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0 and d1 - d3 > 0.0:
        v = d1 / (d1 - d3)
        u, w = 1.0 - v, 0.0
    elif d6 >= 0.0 and d5 <= d6:
        u, v, w = 0.0, 0.0, 1.0
    elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0 and d2 - d6 > 0.0:
        w = d2 / (d2 - d6)
        u, v = 1.0 - w, 0.0
    elif va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0 and (d4 - d3) + (d5 - d6) > 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        u, v = 0.0, 1.0 - w
    else:
        den = va + vb + vc
        if not den > 0.0:
            return False, 0.0, 0.0, 0.0
        v = vb / den
        w = vc / den
        u = 1.0 - v - w
    return True, u, v, w


@njit(inline="always")
def _write_closest(r, bf, bu, bv, bw, verts, faces, vnormals, out_s, out_n):  # pragma: no cover
    """Row r of the closest-point outputs from face bf and barycentric (bu, bv, bw): the point and
    the interpolated unit vertex normal (zero where the normals cancel)."""
    ia = faces[bf, 0]
    ib = faces[bf, 1]
    ic = faces[bf, 2]
    for k in range(3):
        out_s[r, k] = bu * verts[ia, k] + bv * verts[ib, k] + bw * verts[ic, k]
    n0 = bu * vnormals[ia, 0] + bv * vnormals[ib, 0] + bw * vnormals[ic, 0]
    n1 = bu * vnormals[ia, 1] + bv * vnormals[ib, 1] + bw * vnormals[ic, 1]
    n2 = bu * vnormals[ia, 2] + bv * vnormals[ib, 2] + bw * vnormals[ic, 2]
    nn = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    if nn > 0.0:
        out_n[r, 0] = n0 / nn
        out_n[r, 1] = n1 / nn
        out_n[r, 2] = n2 / nn
    else:
        out_n[r, 0] = 0.0
        out_n[r, 1] = 0.0
        out_n[r, 2] = 0.0


@njit(inline="always")
def _face_corners(f, verts, faces):  # pragma: no cover
    """(ax, ay, az, abx, aby, abz, acx, acy, acz): face f's first corner a and its edges ab, ac."""
    ia = faces[f, 0]
    ib = faces[f, 1]
    ic = faces[f, 2]
    ax = verts[ia, 0]
    ay = verts[ia, 1]
    az = verts[ia, 2]
    return (ax, ay, az, verts[ib, 0] - ax, verts[ib, 1] - ay, verts[ib, 2] - az,
            verts[ic, 0] - ax, verts[ic, 1] - ay, verts[ic, 2] - az)


@njit(inline="always")
def _faces_away(abx, aby, abz, acx, acy, acz, facing, r, facing_cos):  # pragma: no cover
    """Whether the face with edges ab, ac does not count for a point whose own surface normal is facing[r]
    (the facing rule of the closest-point searches: it counts while its normal · facing[r] <
    −facing_cos·|normal|)."""
    fx = aby * acz - abz * acy
    fy = abz * acx - abx * acz
    fz = abx * acy - aby * acx
    dot = fx * facing[r, 0] + fy * facing[r, 1] + fz * facing[r, 2]
    return dot >= -facing_cos * math.sqrt(fx * fx + fy * fy + fz * fz)


@njit(inline="always")
def _triangle_distance2(p0, p1, p2, ax, ay, az, abx, aby, abz, acx, acy, acz):  # pragma: no cover
    """(ok, u, v, w, squared distance) of the point p to triangle (a, a + ab, a + ac) (see
    :func:`_triangle_barycentric`)."""
    ok, u, v, w = _triangle_barycentric(p0, p1, p2, ax, ay, az, abx, aby, abz, acx, acy, acz)
    sx = ax + abx * v + acx * w
    sy = ay + aby * v + acy * w
    sz = az + abz * v + acz * w
    return ok, u, v, w, (p0 - sx) ** 2 + (p1 - sy) ** 2 + (p2 - sz) ** 2


def _closest_kernel(q, near, vf, verts, faces, spheres, vnormals, facing, use_facing, facing_cos, out_s, out_n,
                    out_d2, out_f, out_gap, out_fk, out_gapk, out_dk):  # pragma: no cover
    """For each query point q[r] test the faces around its nearest vertices near[r, :].

    With use_facing, only faces whose normal opposes facing[r] count (the surface seen from a
    point whose own surface normal is facing[r]: the articular side of a thin cartilage shell,
    never the bone side behind it).

    Writes the closest point out_s (m, 3), the interpolated unit normal out_n (m, 3), the squared
    distance out_d2 (m,) and the face out_f (m,). Closest point on a triangle after Ericson,
    Real-Time Collision Detection §5.1.5, with barycentric coordinates. A face whose bounding sphere
    (spheres: centroid, radius) lies clearly farther than the best so far is skipped unevaluated: it
    cannot win (the margin is far above rounding), so the result is the same as testing it.

    out_gap (m,): how much farther than the closest face every other face tested is, a lower bound
    (a skipped face counts by its sphere: centre distance less radius); 0 with use_facing (a face's
    facing flips with the point's own normal) or a degenerate face among them. While the point
    moves less than half of it (and its nearest vertices stay the same), the same face is closest.
    out_fk (m, K): the K nearest faces tested, nearest first (−1: fewer), out_dk (m, K) their distances
    (inf: none), and out_gapk (m,) the same lower bound for every face but those (0: fewer than two):
    while the point moves less than half of it, one of them is closest — a point beneath a face near
    its edge or corner, whose gap is tiny (the faces round them are nearly as near), keeps the set.

    A face met again round a later nearest vertex (a corner of it came earlier in near[r, :]) is
    not looked at twice (about half the faces tested were repeats): the closest face and its bits
    are the same, and the gap can only grow (still a lower bound: the repeat's exact distance, not
    its sphere, counts).
    """
    nv = verts.shape[0]
    K = out_fk.shape[1]
    kd = np.empty(K)  # the K least squared distances of the faces tested, ascending, and their faces
    kf = np.empty(K, dtype=np.int64)
    for r in range(q.shape[0]):
        for j in range(K):
            kd[j] = np.inf
            kf[j] = -1
        beyond = np.inf  # least squared distance of a tested face not among the K
        p0 = q[r, 0]
        p1 = q[r, 1]
        p2 = q[r, 2]
        best = np.inf
        sb = np.inf
        bf = -1
        bu = 0.0
        bv = 0.0
        bw = 0.0
        other = np.inf  # least sphere bound of a skipped face
        for a in range(near.shape[1]):
            vi = near[r, a]
            if vi < 0 or vi >= nv:
                continue
            for b in range(vf.shape[1]):
                f = vf[vi, b]
                if f < 0:
                    break
                seen = False  # round an earlier nearest vertex: tested or skipped then
                for a2 in range(a):
                    v2 = near[r, a2]
                    if v2 == faces[f, 0] or v2 == faces[f, 1] or v2 == faces[f, 2]:
                        seen = True
                        break
                if seen:
                    continue
                ex = p0 - spheres[f, 0]
                ey = p1 - spheres[f, 1]
                ez = p2 - spheres[f, 2]
                reach = sb + spheres[f, 3]
                e2 = ex * ex + ey * ey + ez * ez
                if e2 > reach * reach * (1.0 + 1e-9) + 1e-30:
                    if f != bf:
                        lb = math.sqrt(e2) - spheres[f, 3]
                        if lb < other:
                            other = lb
                    continue
                ax, ay, az, abx, aby, abz, acx, acy, acz = _face_corners(f, verts, faces)
                if use_facing and _faces_away(abx, aby, abz, acx, acy, acz, facing, r, facing_cos):
                    continue
                ok, u, v, w, dd = _triangle_distance2(p0, p1, p2, ax, ay, az, abx, aby, abz, acx, acy, acz)
                if not ok:
                    other = -np.inf  # a degenerate face: nothing certified
                    continue
                if dd < kd[K - 1]:  # among the K nearest: insert (after equals, in the order met)
                    if kf[K - 1] >= 0 and kd[K - 1] < beyond:
                        beyond = kd[K - 1]
                    j = K - 1
                    while j > 0 and kd[j - 1] > dd:
                        kd[j] = kd[j - 1]
                        kf[j] = kf[j - 1]
                        j -= 1
                    kd[j] = dd
                    kf[j] = f
                elif dd < beyond:
                    beyond = dd
                if dd < best:
                    best = dd
                    sb = math.sqrt(dd)
                    bf = f
                    bu = u
                    bv = v
                    bw = w
        out_d2[r] = best
        out_f[r] = bf
        out_gap[r] = 0.0
        out_gapk[r] = 0.0
        for j in range(K):
            out_fk[r, j] = kf[j] if not use_facing else -1
            out_dk[r, j] = math.sqrt(kd[j]) if kf[j] >= 0 and not use_facing else np.inf
        if bf < 0:
            continue
        if not use_facing:
            second = kd[1] if K > 1 else beyond  # the least of the faces tested but the closest
            out_gap[r] = max(min(other, math.sqrt(second)) - sb, 0.0)
            if K > 1 and kf[1] >= 0:
                out_gapk[r] = max(min(other, math.sqrt(beyond)) - sb, 0.0)
        _write_closest(r, bf, bu, bv, bw, verts, faces, vnormals, out_s, out_n)


@njit(inline="always")
def _keeps_nearest(p0, p1, p2, near_v, v, c, verts, moved, bound):  # pragma: no cover
    """Whether the point (p0, p1, p2), moved by ``moved`` since slot c of vertex v was certified, still has
    near_v[v, c, :] as its nearest surface vertices: the farthest of them nearer than bound − moved."""
    room = bound - moved
    if not room > 0.0:
        return False
    room2 = room * room
    for j in range(near_v.shape[2]):
        w = near_v[v, c, j]
        if w < 0 or w >= verts.shape[0]:
            return False
        ex = verts[w, 0] - p0
        ey = verts[w, 1] - p1
        ez = verts[w, 2] - p2
        if not ex * ex + ey * ey + ez * ez < room2:
            return False
    return True


def _held_kernel(P, rows, point_o, face, reach, face_k, face_k_d, reach_k, near_v, next_v, near_margin, verts, faces,
                 vnormals, out_held, out_s, out_n, out_d2, out_f):  # pragma: no cover
    """For each row r, point p = P[rows[r]] of bed vertex v, and its certificate slot c nearest p (the
    others when it fails, nearest first, up to NEAREST_SLOTS_TRIED), with m = |p − point_o[v, c]| (how
    far the point moved since the search that made it):

    - the search would take the same nearest vertices: each of near_v[v, c, :] is nearer than
      next_v[v, c] − m (every other vertex was at least next_v away there; distance is 1-Lipschitz),
      which needs no distance when m < near_margin[v, c] (half the room the k-th nearest had);
    - and face[v, c] is nearer than reach[v, c] − m (every other face searched was at least reach away
      there): held, with its closest point, interpolated unit normal and squared distance (the same
      arithmetic, so the same bits, as :func:`_closest_kernel`);
    - or else the nearest of face_k[v, c, :] (−1: fewer; face_k[v, c, 0] is face[v, c]) is nearer than
      reach_k[v, c] − m (every face searched but those was at least reach_k away): held with that one
      (not on a tie, which the search would break by its order, nor with a degenerate face). A face
      of the set that was farther (face_k_d[v, c, j], its distance there, less a rounding slack) than
      the nearest so far by more than m cannot be the nearest now: it is not measured.

    Bounds that are not finite (−inf, NaN) never hold. A vertex's slots lie side by side in memory."""
    slots = point_o.shape[1]
    moved_c = np.empty(slots)
    for r in range(rows.shape[0]):
        v = rows[r]
        out_held[r] = False
        p0 = P[v, 0]
        p1 = P[v, 1]
        p2 = P[v, 2]
        for c in range(slots):
            dx = p0 - point_o[v, c, 0]
            dy = p1 - point_o[v, c, 1]
            dz = p2 - point_o[v, c, 2]
            moved_c[c] = dx * dx + dy * dy + dz * dz if face[v, c] >= 0 else np.inf  # squared
        for _ in range(min(slots, NEAREST_SLOTS_TRIED)):
            c = 0
            for c2 in range(1, slots):  # the nearest slot not tried yet
                if moved_c[c2] < moved_c[c]:
                    c = c2
            if moved_c[c] == np.inf:
                break  # every slot tried
            moved = math.sqrt(moved_c[c])
            moved_c[c] = np.inf
            if not (moved < next_v[v, c] and (moved < reach[v, c] or moved < reach_k[v, c])):
                continue  # cannot hold however near the faces and vertices lie now
            keeps = 1 if moved < near_margin[v, c] else 0  # 1: keeps its nearest vertices; 0: not known; -1: not
            f = face[v, c]
            ax, ay, az, abx, aby, abz, acx, acy, acz = _face_corners(f, verts, faces)
            ok, bu, bv, bw, best = _triangle_distance2(p0, p1, p2, ax, ay, az, abx, aby, abz, acx, acy, acz)
            if not ok:
                continue
            nearest = math.sqrt(best)
            if nearest + moved < reach[v, c]:
                if keeps == 0:
                    keeps = 1 if _keeps_nearest(p0, p1, p2, near_v, v, c, verts, moved, next_v[v, c]) else -1
                if keeps > 0:
                    out_held[r] = True
                    out_d2[r] = best
                    out_f[r] = f
                    _write_closest(r, f, bu, bv, bw, verts, faces, vnormals, out_s, out_n)
                    break
                continue
            if not moved < reach_k[v, c]:
                continue
            if keeps == 0:
                keeps = 1 if _keeps_nearest(p0, p1, p2, near_v, v, c, verts, moved, next_v[v, c]) else -1
            if keeps < 0:
                continue
            bf = f
            clear = True  # no degenerate face, no tie for the least
            for j in range(1, face_k.shape[2]):
                g = face_k[v, c, j]
                if g < 0:
                    break
                if face_k_d[v, c, j] - moved > nearest:
                    continue
                ax, ay, az, abx, aby, abz, acx, acy, acz = _face_corners(g, verts, faces)
                ok, u, vv, w3, dd = _triangle_distance2(p0, p1, p2, ax, ay, az, abx, aby, abz, acx, acy, acz)
                if not ok:
                    clear = False
                    break
                if dd < best:
                    best = dd
                    nearest = math.sqrt(dd)
                    bf = g
                    bu = u
                    bv = vv
                    bw = w3
                    clear = True
                elif dd == best:
                    clear = False
            if not clear or not nearest + moved < reach_k[v, c]:
                continue
            out_held[r] = True
            out_d2[r] = best
            out_f[r] = bf
            _write_closest(r, bf, bu, bv, bw, verts, faces, vnormals, out_s, out_n)
            break


@njit(inline="always")
def certificate_bounds_row(p0, p1, p2, near, r, verts, d2, gap, gap_k, spare, slack):  # pragma: no cover - numba
    """(reach, reach_k, next, near_margin) of a search's row r, the point (p0, p1, p2) with near[r, :] its nearest
    vertices and d2, gap, gap_k, spare its results (:func:`certificate_bounds`), compiled for loops."""
    d = math.sqrt(d2)
    reach = d + gap - slack if gap > 0.0 else -np.inf
    reach_k = d + gap_k - slack if gap_k > 0.0 else -np.inf
    farthest = 0.0
    for j in range(near.shape[1]):
        w = near[r, j]
        if w < 0 or w >= verts.shape[0]:
            return reach, reach_k, -np.inf, -np.inf
        ex = verts[w, 0] - p0
        ey = verts[w, 1] - p1
        ez = verts[w, 2] - p2
        dv = math.sqrt(ex * ex + ey * ey + ez * ez)
        if dv > farthest:
            farthest = dv
    if not spare > 0.0:
        return reach, reach_k, -np.inf, -np.inf
    return reach, reach_k, farthest + spare - slack, 0.5 * spare - slack


def certificate_bounds(q: np.ndarray, near: np.ndarray, verts: np.ndarray, d2: np.ndarray, gap: np.ndarray,
                       gap_k: np.ndarray, spare: np.ndarray,
                       slack: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The bounds a search's rows certify (:meth:`SurfaceProximity.closest_certified`), each less
    ``slack`` [m] against rounding, −inf where there is none: reach (m,), the distance within which
    no face searched but the closest lay (closest distance + ``gap``); reach_k, the same for every face
    but the nearest few (+ ``gap_k``); next, within which no vertex but the k nearest ``near`` (m, k)
    lay (the k-th's distance + ``spare``, from :meth:`SurfaceProximity.nearest_from_lists`); near_margin,
    how far the point may move with those k nearest for certain, half the spare (no distance to
    measure then). q (m, 3) the searched points, d2, gap, gap_k as :meth:`SurfaceProximity.search_near`
    gives them."""
    d = np.sqrt(d2)
    with np.errstate(invalid="ignore"):
        reach = np.where(gap > 0.0, d + gap - slack, -np.inf)
        reach_k = np.where(gap_k > 0.0, d + gap_k - slack, -np.inf)
        complete = np.all((near >= 0) & (near < len(verts)), axis=1)
        ends = verts[np.where(complete[:, None], near, 0)]
        farthest = np.sqrt(((ends - q[:, None, :]) ** 2).sum(axis=2)).max(axis=1) if near.shape[1] else np.zeros(len(q))
        certain = complete & (spare > 0.0)
        nxt = np.where(certain, farthest + spare - slack, -np.inf)
        near_margin = np.where(certain, 0.5 * spare - slack, -np.inf)
    return reach, reach_k, nxt, near_margin


@dataclass(frozen=True)
class ClosestPoints:
    """Closest points of the query points that lie within the search distance.

    index (k,): which query points; closest (k, 3) the closest surface points; normal (k, 3) the
    smooth outward unit normal there; depth (k,) signed penetration [m], positive when the query
    point is beneath the surface ((closest − point)·normal > 0), |depth| = distance; face (k,).
    """

    index: np.ndarray
    closest: np.ndarray
    normal: np.ndarray
    depth: np.ndarray
    face: np.ndarray
    gap: np.ndarray | None = None
    """(k,) how much farther than its closest face every other face searched is (a lower bound; 0
    where not known): see :meth:`SurfaceProximity.closest`."""


@dataclass(frozen=True, eq=False)
class SurfaceProximity:
    """Closest-point queries against one mesh in its own frame (structures built once).

    vertices (n, 3), faces (m, 3), vertex_normals (n, 3) unit, max_edge [m], grid (for distance
    bounds), tree (cKDTree of the vertices), vertex_faces (n, valence) padded with -1.
    """

    vertices: np.ndarray
    faces: np.ndarray
    vertex_normals: np.ndarray
    max_edge: float
    grid: PointGrid = field(repr=False)
    tree: cKDTree = field(repr=False)
    vertex_faces: np.ndarray = field(repr=False)

    @cached_property
    def face_spheres(self) -> np.ndarray:
        """(m, 4): each face's centroid and the radius about it that holds its corners (the kernel's
        cheap rejection test)."""
        tri = self.vertices[self.faces]
        centre = tri.mean(axis=1)
        radius = np.sqrt(((tri - centre[:, None, :]) ** 2).sum(axis=2)).max(axis=1)
        return np.ascontiguousarray(np.column_stack([centre, radius]))

    def search_bound(self, distance: float) -> float:
        """How far from a point its nearest vertices are looked for when the surface within
        ``distance`` matters: the closest point lies within one longest edge of a vertex."""
        return distance + self.max_edge

    @classmethod
    def build(cls, vertices: np.ndarray, faces: np.ndarray, grid: PointGrid | None = None,
              vertex_normals: np.ndarray | None = None) -> "SurfaceProximity":
        """Structures for (n, 3) vertices and (m, 3) faces; reuse a collision grid when given."""
        from jointmodeller.core.geometry.collision import CollisionSurface
        from jointmodeller.core.geometry.collision import vertex_normals as _vn

        v = np.ascontiguousarray(vertices, dtype=np.float64)
        f = np.ascontiguousarray(faces, dtype=np.int64)
        vn = _vn(v, f) if vertex_normals is None else np.ascontiguousarray(vertex_normals, dtype=np.float64)
        if grid is None:
            grid = CollisionSurface.from_mesh(v, f).grid
        tri = v[f]
        edges = np.linalg.norm(tri - np.roll(tri, 1, axis=1), axis=2)
        return cls(v, f, vn, float(edges.max()), grid, cKDTree(v), _vertex_faces(f, len(v)))

    def near_mask(self, points: np.ndarray, distance: float) -> np.ndarray:
        """(k,) bool: points (k, 3) that may lie within ``distance`` of the surface (never misses one)."""
        g = self.grid
        rel = (points - g.origin) / g.cell
        inside = np.all((rel >= 0) & (rel < g.dims), axis=1)
        ijk = np.where(inside[:, None], rel, 0).astype(np.int64)
        lb = g.lower_bound[ijk[:, 0] + g.dims[0] * (ijk[:, 1] + g.dims[1] * ijk[:, 2])]
        hi = g.origin + g.dims * g.cell
        out = np.maximum(np.maximum(g.origin - points, points - hi), 0.0)
        lb = np.where(inside, lb, np.sqrt((out * out).sum(axis=1)))
        # the closest surface point is within max_edge of a vertex
        return lb <= distance + self.max_edge

    def candidates(self, points: np.ndarray, distance: float, beneath_only: bool = False,
                   slack: float = 0.0) -> np.ndarray:
        """Indices of the points (k, 3) that may lie within ``distance`` of the surface (and, with
        ``beneath_only``, not clearly above it), still so after any of them moves by up to ``slack``."""
        idx = np.flatnonzero(self.near_mask(points, distance + slack))
        if len(idx) and beneath_only:
            d1, v1 = self.tree.query(points[idx], k=1, distance_upper_bound=distance + self.max_edge + slack)
            ok = v1 < len(self.vertices)
            idx, v1 = idx[ok], v1[ok]
            above = ((points[idx] - self.vertices[v1]) * self.vertex_normals[v1]).sum(axis=1)
            idx = idx[above < self.max_edge + 2.0 * slack]
        return idx

    def nearest_count(self, facing: bool) -> int:
        """How many nearest vertices :meth:`closest` searches around (more with a facing filter)."""
        return min(NEAREST_VERTICES if not facing else FACING_NEAREST_VERTICES, len(self.vertices))

    def nearest_lists(self, q: np.ndarray, k: int, bound: float) -> tuple[np.ndarray, np.ndarray]:
        """The k nearest vertices of each point of q (m, 3) within ``bound`` (index len(vertices) where
        fewer) and (m,) the distance beyond which no other vertex lies: the k-th's, or ``bound``."""
        if len(q) == 0:
            return np.zeros((0, k), dtype=np.int64), np.zeros(0)
        d, near = self.tree.query(np.ascontiguousarray(q), k=k, distance_upper_bound=bound)
        d = np.asarray(d, float).reshape(len(q), -1)
        near = np.asarray(near, dtype=np.int64).reshape(len(q), -1)
        return near, np.where(np.isfinite(d[:, -1]), d[:, -1], bound)

    def nearest_from_lists(self, q: np.ndarray, lists: np.ndarray, outside: np.ndarray, k: int,
                           bound: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The k nearest vertices within ``bound`` of points q (m, 3) taken from candidate lists (m, K)
        (index len(vertices) = none), as the KD-tree query of :meth:`closest` gives them, and (m,) bool:
        where that is certain — every vertex not in a row's list is at least ``outside`` (m,) away, so
        it cannot be among the k nearest when the row's k-th distance (or ``bound``) is less. Near a
        reference pose this replaces the tree query by K distances per point. Third, (m,) the spare:
        the k nearest stay the same while a point moves less than half of it (:func:`_lists_kernel`)."""
        m = len(q)
        near = np.empty((m, k), dtype=np.int64)
        ok = np.empty(m, dtype=np.bool_)
        spare = np.zeros(m)
        if m:
            _kernel(_lists_kernel, None)(np.ascontiguousarray(q, dtype=np.float64), np.ascontiguousarray(lists),
                                        np.ascontiguousarray(outside, dtype=np.float64), self.vertices, int(k),
                                        float(bound), near, ok, spare)
        return near, ok, spare

    def closest(self, points: np.ndarray, distance: float, use_numba: bool | None = None,
                beneath_only: bool = False, facing: np.ndarray | None = None,
                candidates: np.ndarray | None = None, facing_cos: float = 0.0,
                near: np.ndarray | None = None) -> ClosestPoints:
        """Closest points for the query points (k, 3) within ``distance`` [m] of the surface.

        ``beneath_only``: skip points clearly outside first — those more than one longest edge
        above the tangent plane of their nearest vertex — as contact only needs points beneath.
        ``facing`` (k, 3): the query points' own surface normals; only faces turned towards them
        count (thin shells: a point pushed past the middle of a cartilage layer still measures
        its depth from the articular side), searched among more nearest vertices.
        ``facing_cos``: with ``facing``, a face counts only when its unit normal · facing < −facing_cos
        (0: any face turned away; 0.5: within 60° of opposing, which drops the side walls of a thin
        closed cartilage shell whose nearest surface would jump across its medial axis).
        ``candidates``: indices from :meth:`candidates` (possibly computed at a nearby pose with
        enough slack) to test instead of filtering all points again; per-point results are the same.
        ``near`` (len(candidates), k): the candidates' nearest vertices as the tree query would give
        them (:meth:`nearest_lists` / :meth:`nearest_from_lists`), to skip that query.

        The result's ``gap``: how much farther than the closest face every other face searched is
        (a lower bound, 0 with ``facing``). A point that moves less than half of it, while its
        nearest vertices stay the same, keeps that face (distance is 1-Lipschitz):
        :meth:`closest_certified` then gives the same result from that face alone.
        """
        points = np.asarray(points, dtype=np.float64)
        bound = self.search_bound(distance)
        if candidates is None:
            idx = self.candidates(points, distance, beneath_only)
        else:
            idx = np.asarray(candidates, dtype=np.int64)
        if len(idx):
            q = np.ascontiguousarray(points[idx])
            if near is None:
                near, _ = self.nearest_lists(q, self.nearest_count(facing is not None), bound)
        else:
            q = np.zeros((0, 3))
        fac = None if facing is None else np.asarray(facing, float)[idx]
        s, n, d2, f, gap, *_ = self.search_near(q, near, fac, facing_cos, use_numba)
        return _within(points, idx, s, n, d2, f, gap, distance)

    def search_near(self, q: np.ndarray, near: np.ndarray | None, facing: np.ndarray | None = None,
                    facing_cos: float = 0.0, use_numba: bool | None = None):
        """The closest-point search of :meth:`closest` for points q (m, 3) round their nearest vertices
        near (m, k) (index len(vertices): none), before the distance filter: (s (m, 3), n (m, 3),
        d2 (m,), f (m,), gap (m,), fk (m, CERTIFIED_FACES), gapk (m,), dk (m, CERTIFIED_FACES)), f = −1
        where no face was found; fk, gapk and dk the nearest faces, their set's gap and their distances
        (:func:`_closest_kernel`). ``facing`` (m, 3) as in :meth:`closest`, per row."""
        m = len(q)
        s = np.zeros((m, 3))
        n = np.zeros((m, 3))
        d2 = np.full(m, np.inf)
        f = np.full(m, -1, dtype=np.int64)
        gap = np.zeros(m)
        fk = np.full((m, CERTIFIED_FACES), -1, dtype=np.int64)
        gapk = np.zeros(m)
        dk = np.full((m, CERTIFIED_FACES), np.inf)
        if m:
            assert near is not None
            fac = np.zeros((m, 3)) if facing is None else np.ascontiguousarray(facing, dtype=np.float64)
            _kernel(_closest_kernel, use_numba)(np.ascontiguousarray(q, dtype=np.float64),
                                                np.ascontiguousarray(np.asarray(near, dtype=np.int64).reshape(m, -1)),
                                                self.vertex_faces, self.vertices, self.faces, self.face_spheres,
                                                self.vertex_normals, fac, facing is not None, facing_cos, s, n, d2,
                                                f, gap, fk, gapk, dk)
        return s, n, d2, f, gap, fk, gapk, dk

    def closest_certified(self, points: np.ndarray, rows: np.ndarray, point_o: np.ndarray, face: np.ndarray,
                          reach: np.ndarray, face_k: np.ndarray, face_k_d: np.ndarray, reach_k: np.ndarray,
                          near_v: np.ndarray, next_v: np.ndarray, near_margin: np.ndarray):
        """Which of the points ``rows`` (k,) a certificate from an earlier search still answers, and for
        those the closest point on the certified face, the same bits as the search: (held (k,) bool,
        s (k, 3), n (k, 3), d2 (k,), f (k,)), the rows not held left as :meth:`search_near` leaves a
        point without a face, for the caller to fill.

        A certificate (per point of ``points``, made where the search found the point at point_o[v]:
        :func:`certificate_bounds`) holds while the point, moved by m since, keeps its nearest vertices
        near_v[v, :] — the farthest of them nearer than next_v[v] − m (certain without measuring while
        m < near_margin[v]) — and face[v] is nearer than reach[v] − m, or the nearest of face_k[v, :]
        (their distances there, face_k_d[v, :], less a rounding slack) nearer than reach_k[v] − m: every
        other face the search looks at lies farther (distances are 1-Lipschitz). Each certificate array
        may carry a second axis of slots (several certificates per point, from searches at different
        places; the nearest that holds is used: :func:`_held_kernel`)."""
        if np.ndim(reach) == 1:  # one slot
            point_o, face, reach, face_k, face_k_d, reach_k, near_v, next_v, near_margin = (
                np.asarray(x)[:, None] for x in (point_o, face, reach, face_k, face_k_d, reach_k, near_v, next_v,
                                                 near_margin))
        k = len(rows)
        held = np.zeros(k, dtype=np.bool_)
        s = np.zeros((k, 3))
        n = np.zeros((k, 3))
        d2 = np.full(k, np.inf)
        f = np.full(k, -1, dtype=np.int64)
        if k:
            _kernel(_held_kernel, None)(np.ascontiguousarray(points, dtype=np.float64),
                                        np.ascontiguousarray(rows, dtype=np.int64), point_o, face, reach, face_k,
                                        face_k_d, reach_k, near_v, next_v, near_margin, self.vertices, self.faces,
                                        self.vertex_normals, held, s, n, d2, f)
        return held, s, n, d2, f

    @staticmethod
    def found(points: np.ndarray, idx: np.ndarray, s: np.ndarray, n: np.ndarray, d2: np.ndarray, f: np.ndarray,
              gap: np.ndarray, distance: float) -> ClosestPoints:
        """The ClosestPoints of the points idx (k,) from search results (s, n, d2, f, gap per row, as
        :meth:`search_near` and :meth:`closest_certified` give them): those with a face within
        ``distance``, depth signed by the side of the smooth normal."""
        return _within(points, idx, s, n, d2, f, gap, distance)


def _within_kernel(points, idx, s, n, d2, f, gap, distance, out_idx, out_s, out_n, out_depth, out_f,
                   out_gap):  # pragma: no cover
    """The rows of :func:`_within` packed into the out arrays (first k rows); returns k."""
    k = 0
    for r in range(idx.shape[0]):
        dist = math.sqrt(d2[r])
        if not (f[r] >= 0 and dist <= distance):
            continue
        v = idx[r]
        side = ((s[r, 0] - points[v, 0]) * n[r, 0] + (s[r, 1] - points[v, 1]) * n[r, 1]) \
            + (s[r, 2] - points[v, 2]) * n[r, 2]
        out_idx[k] = v
        for c in range(3):
            out_s[k, c] = s[r, c]
            out_n[k, c] = n[r, c]
        out_depth[k] = dist if side > 0.0 else -dist
        out_f[k] = f[r]
        out_gap[k] = gap[r]
        k += 1
    return k


def _within(points: np.ndarray, idx: np.ndarray, s: np.ndarray, n: np.ndarray, d2: np.ndarray, f: np.ndarray,
            gap: np.ndarray, distance: float) -> ClosestPoints:
    """The ClosestPoints of the points idx found (a face) within ``distance``, depth signed by the
    side of the smooth normal (one compiled pass)."""
    m = len(idx)
    out = (np.empty(m, np.int64), np.empty((m, 3)), np.empty((m, 3)), np.empty(m), np.empty(m, np.int64), np.empty(m))
    k = _kernel(_within_kernel, None)(np.ascontiguousarray(points, dtype=np.float64),
                                      np.ascontiguousarray(idx, dtype=np.int64), np.ascontiguousarray(s),
                                      np.ascontiguousarray(n), np.ascontiguousarray(d2), np.ascontiguousarray(f),
                                      np.ascontiguousarray(gap), float(distance), *out)
    index, closest, normal, depth, face, gap_k = (a[:k] for a in out)
    return ClosestPoints(index=index, closest=closest, normal=normal, depth=depth, face=face, gap=gap_k)
