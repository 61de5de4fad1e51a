"""Narrow-band signed distance fields of triangle meshes in their own (body) frame (issue 17, items 1–2).

A :class:`SignedDistanceField` samples the signed distance to a mesh on a regular lattice of nodes
``origin + h·(i, j, k)`` and interpolates it trilinearly. Only the lattice near the surface is stored:
the lattice is cut into blocks of ``BLOCK³`` nodes and a block is kept when one of its nodes lies within
the band width ``w = band_cells·h`` of the surface; every other block is a constant ``±w`` (one int8 of
sign information in a small block table). Values are clamped to ``[−w, w]``.

Sign convention: positive outside (on the side the face normals point to), negative inside; the
gradient points outwards.

How the sign is found (``build``):

- Nodes within ``w`` of the surface: the exact closest point (every triangle scatters to the nodes in
  its bounding box grown by ``w``, Ericson's Voronoi regions) and the side of the *angle-weighted
  pseudo-normal* of the closest feature (face, edge or vertex; Bærentzen & Aanæs 2005): sign of
  ``(p − closest)·N``. For a closed, consistently oriented (manifold) mesh this is exactly inside /
  outside. For an OPEN surface (a cartilage sheet, a display mesh with holes) it is, by definition
  here, the side of the face normals: points in front of the sheet are positive, behind it negative.
  Beyond the rim of a sheet the closest feature is a boundary edge, whose pseudo-normal is its one
  face's normal, so the sign flips across the plane of the rim faces (the field jumps there from
  +d to −d; the exact closest-point depth of the contact code flips at the same place).
- Nodes farther than ``w`` (clamped to ±w): their sign spreads from the band by a flood fill along
  lattice edges. A lattice edge (length h < w) from a node farther than ``w`` cannot cross the
  surface, so for a closed mesh the fill is exact. Blocks left out take the sign of the neighbouring
  block's node next to them (the same argument), again by a flood fill over the block table. For an
  open surface the far sign is whatever the nearest band node's side is: it has no meaning far from
  the sheet and does not matter for contact or wrapping, which live in the band.

Accuracy (used by the tests): the signed distance ``d`` is 1-Lipschitz (for an open sheet: away from
the rim's sign flip), and a trilinear value is a convex combination of the 8 corner values with
weights ``w_c``, so ``|I(p) − d(p)| ≤ Σ w_c |d(c) − d(p)| ≤ Σ w_c |c − p| ≤ sqrt(Σ w_c |c − p|²)
= h·sqrt(Σ_axes t(1−t)) ≤ h·√3/2`` (Jensen; ``t`` the fractional position in the cell per axis).
That holds where the 8 corners are unclamped: ``|d(p)| ≤ w − h√3`` (corners lie within h√3 of p),
:attr:`SignedDistanceField.accurate_band`. Near smooth parts of a fine mesh the error is far smaller
(second order, ~ (3/8)·h²/radius of curvature, plus ~h·(angle between neighbouring faces)/4).
Values are stored as float32: a relative rounding of 2⁻²⁴ of ``w`` at most, far below the above.

The gradient is the exact derivative of the trilinear interpolant in the cell (consistent with the
value to first order; continuous value, gradient discontinuous across cell faces). It is zero where
the value is clamped and outside the lattice box (queries outside the box are clamped onto it).

Compiled kernels (``core._jit``): the build's triangle scatter and flood fills, and the query; the
query also has a vectorised numpy form (``use_numba=False``, and the reference in tests).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

from jointmodeller.core._jit import kernel as _compiled_kernel
from jointmodeller.core._jit import numba_enabled
from jointmodeller.core.geometry.mesh_checks import edge_keys, is_closed

#: nodes per block edge (blocks of BLOCK³ nodes are kept or left out together); a power of two
BLOCK = 8
_SHIFT = 3
_MASK = BLOCK - 1
#: default band half-width, in cells: values are exact (to interpolation) for |d| ≤ (band − √3)·h
DEFAULT_BAND_CELLS = 4
#: default lattice spacing as a fraction of the mesh's mean edge length ...
DEFAULT_SPACING_FRACTION = 0.5
#: ... but never coarser than this [m]
MAX_DEFAULT_SPACING = 1.0e-3
#: version of the data layout below (part of the disk cache key); 2: the nodes' closest faces
FORMAT_VERSION = 2
#: block table codes for blocks left out (all of their nodes are farther than the band)
FAR_OUTSIDE = -1
FAR_INSIDE = -2

_ARRAY_NAMES = ("origin", "spacing", "band", "node_dims", "block_index", "values", "closed")
#: stored only by a field built with its nodes' closest faces (``keep_faces``)
_FACE_ARRAY_NAMES = ("node_faces", "mesh_face_count")


def _kernel(fn, use_numba: bool | None):
    return _compiled_kernel(fn, use_numba, fastmath=False, error_model="numpy")


# ---------------------------------------------------------------- mesh preparation (numpy) ----------

def _face_normals(v: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit face normals (m, 3) (zero for zero-area faces) and (m,) bool: face has an area."""
    tri = v[f]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    length = np.linalg.norm(n, axis=1)
    ok = length > 0.0
    return np.divide(n, length[:, None], out=np.zeros_like(n), where=ok[:, None]), ok


def pseudo_normals(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Angle-weighted pseudo-normals (Bærentzen & Aanæs 2005) of a triangle mesh.

    Returns face unit normals (m, 3), edge pseudo-normals (e, 3) (the sum of the unit normals of the
    faces on the edge: one face for a rim edge of an open sheet), face_edges (m, 3) (edge ids of the
    sides 0–1, 1–2, 2–0) and vertex pseudo-normals (n, 3) (unit normals weighted by the face angle at
    the vertex). Only their directions matter (the sign test); they are not normalised.
    """
    v = np.asarray(vertices, np.float64)
    f = np.asarray(faces, np.int64)
    fn, _ = _face_normals(v, f)
    sides = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    _, inverse = np.unique(edge_keys(np.sort(sides, axis=1)), return_inverse=True)
    inverse = inverse.reshape(-1)
    face_edges = inverse.reshape(3, len(f)).T.copy()
    edge_n = np.zeros((int(inverse.max()) + 1 if len(inverse) else 0, 3))
    for k in range(3):
        np.add.at(edge_n, face_edges[:, k], fn)
    vert_n = np.zeros_like(v)
    tri = v[f]
    for k in range(3):
        a = tri[:, (k + 1) % 3] - tri[:, k]
        b = tri[:, (k + 2) % 3] - tri[:, k]
        la = np.linalg.norm(a, axis=1)
        lb = np.linalg.norm(b, axis=1)
        ok = (la > 0) & (lb > 0)
        cos = np.divide((a * b).sum(axis=1), la * lb, out=np.ones(len(f)), where=ok)
        angle = np.arccos(np.clip(cos, -1.0, 1.0))
        np.add.at(vert_n, f[:, k], fn * angle[:, None])
    return fn, edge_n, face_edges, vert_n


def mean_edge_length(vertices: np.ndarray, faces: np.ndarray) -> float:
    tri = np.asarray(vertices, np.float64)[np.asarray(faces, np.int64)]
    return float(np.linalg.norm(tri - np.roll(tri, 1, axis=1), axis=2).mean())


def default_spacing(vertices: np.ndarray, faces: np.ndarray) -> float:
    """``DEFAULT_SPACING_FRACTION`` of the mean edge length, at most ``MAX_DEFAULT_SPACING`` [m]."""
    return min(DEFAULT_SPACING_FRACTION * mean_edge_length(vertices, faces), MAX_DEFAULT_SPACING)


def lattice(vertices: np.ndarray, spacing: float, band: float) -> tuple[np.ndarray, np.ndarray]:
    """Origin (3,) and node counts (3,) of the lattice: the vertices' bounding box grown by the band
    and one cell, centred on the box centre (so a mirror or a quarter turn of the mesh about its box
    centre maps nodes onto nodes, and a translation of the mesh translates the lattice with it)."""
    lo = vertices.min(axis=0)
    hi = vertices.max(axis=0)
    n = np.ceil((hi - lo + 2.0 * (band + spacing)) / spacing).astype(np.int64) + 1
    origin = 0.5 * (lo + hi) - 0.5 * (n - 1) * spacing
    return origin, n


# ---------------------------------------------------------------- build kernels ----------------------

def _mark_kernel(v, f, ok, origin, inv_h, w, nmax, mark):  # pragma: no cover - numba
    """mark[bi, bj, bk] = 1 for every block that meets a face's bounding box grown by w."""
    for t in range(f.shape[0]):
        if not ok[t]:
            continue
        lo = np.empty(3, np.int64)
        hi = np.empty(3, np.int64)
        for ax in range(3):
            x0 = v[f[t, 0], ax]
            x1 = v[f[t, 1], ax]
            x2 = v[f[t, 2], ax]
            a = int(math.floor((min(x0, x1, x2) - w - origin[ax]) * inv_h))
            b = int(math.ceil((max(x0, x1, x2) + w - origin[ax]) * inv_h))
            lo[ax] = max(a, 0)
            hi[ax] = min(b, nmax[ax])
        if lo[0] > hi[0] or lo[1] > hi[1] or lo[2] > hi[2]:
            continue
        for bi in range(lo[0] >> 3, (hi[0] >> 3) + 1):
            for bj in range(lo[1] >> 3, (hi[1] >> 3) + 1):
                for bk in range(lo[2] >> 3, (hi[2] >> 3) + 1):
                    mark[bi, bj, bk] = 1


def _scatter_kernel(v, f, ok, fn, edge_n, face_edges, vert_n, origin, h, w, nmax, table, d2, sgn,
                    nearest):  # pragma: no cover
    """For every face, every node in its bounding box grown by w whose distance to the face plane is at
    most w: the squared distance to the face (Ericson, Real-Time Collision Detection §5.1.5) and, when
    smaller than the best so far, the side of the closest feature's pseudo-normal and the face itself
    (``nearest``: the node's closest face, the first of equals in face order)."""
    inv_h = 1.0 / h
    for t in range(f.shape[0]):
        if not ok[t]:
            continue
        ia = f[t, 0]
        ib = f[t, 1]
        ic = f[t, 2]
        ax = v[ia, 0]
        ay = v[ia, 1]
        az = v[ia, 2]
        abx = v[ib, 0] - ax
        aby = v[ib, 1] - ay
        abz = v[ib, 2] - az
        acx = v[ic, 0] - ax
        acy = v[ic, 1] - ay
        acz = v[ic, 2] - az
        nx = fn[t, 0]
        ny = fn[t, 1]
        nz = fn[t, 2]
        i0 = max(int(math.floor((min(ax, v[ib, 0], v[ic, 0]) - w - origin[0]) * inv_h)), 0)
        i1 = min(int(math.ceil((max(ax, v[ib, 0], v[ic, 0]) + w - origin[0]) * inv_h)), nmax[0])
        j0 = max(int(math.floor((min(ay, v[ib, 1], v[ic, 1]) - w - origin[1]) * inv_h)), 0)
        j1 = min(int(math.ceil((max(ay, v[ib, 1], v[ic, 1]) + w - origin[1]) * inv_h)), nmax[1])
        k0 = max(int(math.floor((min(az, v[ib, 2], v[ic, 2]) - w - origin[2]) * inv_h)), 0)
        k1 = min(int(math.ceil((max(az, v[ib, 2], v[ic, 2]) + w - origin[2]) * inv_h)), nmax[2])
        for i in range(i0, i1 + 1):
            px = origin[0] + i * h
            for j in range(j0, j1 + 1):
                py = origin[1] + j * h
                for k in range(k0, k1 + 1):
                    pz = origin[2] + k * h
                    apx = px - ax
                    apy = py - ay
                    apz = pz - az
                    plane = apx * nx + apy * ny + apz * nz
                    if plane > w or plane < -w:
                        continue  # farther than w from the plane, so from the face
                    d1 = abx * apx + aby * apy + abz * apz
                    d2_ = acx * apx + acy * apy + acz * apz
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
                    vb = d5 * d2_ - d1 * d6
                    vc = d1 * d4 - d3 * d2_
                    # feature: 0 face, 1 edge (index e), 2 vertex (index e)
                    if d1 <= 0.0 and d2_ <= 0.0:
                        s = 0.0
                        r = 0.0
                        kind = 2
                        e = ia
                    elif d3 >= 0.0 and d4 <= d3:
                        s = 1.0
                        r = 0.0
                        kind = 2
                        e = ib
                    elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0 and d1 - d3 > 0.0:
                        s = d1 / (d1 - d3)
                        r = 0.0
                        kind = 1
                        e = face_edges[t, 0]
                    elif d6 >= 0.0 and d5 <= d6:
                        s = 0.0
                        r = 1.0
                        kind = 2
                        e = ic
                    elif vb <= 0.0 and d2_ >= 0.0 and d6 <= 0.0 and d2_ - d6 > 0.0:
                        s = 0.0
                        r = d2_ / (d2_ - d6)
                        kind = 1
                        e = face_edges[t, 2]
                    elif va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0 and (d4 - d3) + (d5 - d6) > 0.0:
                        r = (d4 - d3) / ((d4 - d3) + (d5 - d6))
                        s = 1.0 - r
                        kind = 1
                        e = face_edges[t, 1]
                    else:
                        den = va + vb + vc
                        if not den > 0.0:
                            continue
                        s = vb / den
                        r = vc / den
                        kind = 0
                        e = t
                    qx = apx - abx * s - acx * r  # p − closest point
                    qy = apy - aby * s - acy * r
                    qz = apz - abz * s - acz * r
                    dd = qx * qx + qy * qy + qz * qz
                    b = table[i >> 3, j >> 3, k >> 3]
                    li = i & 7
                    lj = j & 7
                    lk = k & 7
                    if dd < d2[b, li, lj, lk]:
                        d2[b, li, lj, lk] = dd
                        nearest[b, li, lj, lk] = t
                        if kind == 0:
                            side = plane
                        elif kind == 1:
                            side = qx * edge_n[e, 0] + qy * edge_n[e, 1] + qz * edge_n[e, 2]
                        else:
                            side = qx * vert_n[e, 0] + qy * vert_n[e, 1] + qz * vert_n[e, 2]
                        sgn[b, li, lj, lk] = -1 if side < 0.0 else 1


def _fill_kernel(table, coords, known, sgn):  # pragma: no cover - numba
    """Flood fill of the sign from the band nodes (``known``) to the other nodes of the kept blocks,
    along lattice edges."""
    nb = coords.shape[0]
    b3 = 512
    total = nb * b3
    nbx = table.shape[0]
    nby = table.shape[1]
    nbz = table.shape[2]
    flat_known = known.reshape(total)
    flat = sgn.reshape(total)
    queue = np.empty(total, np.int64)
    tail = 0
    for idx in range(total):
        if flat_known[idx]:
            queue[tail] = idx
            tail += 1
        else:
            flat[idx] = 0
    head = 0
    while head < tail:
        idx = queue[head]
        head += 1
        b = idx >> 9
        rem = idx & 511
        gi = coords[b, 0] * 8 + (rem >> 6)
        gj = coords[b, 1] * 8 + ((rem >> 3) & 7)
        gk = coords[b, 2] * 8 + (rem & 7)
        s = flat[idx]
        for dirn in range(6):
            ni = gi
            nj = gj
            nk = gk
            if dirn == 0:
                ni -= 1
            elif dirn == 1:
                ni += 1
            elif dirn == 2:
                nj -= 1
            elif dirn == 3:
                nj += 1
            elif dirn == 4:
                nk -= 1
            else:
                nk += 1
            if ni < 0 or nj < 0 or nk < 0 or ni >= nbx * 8 or nj >= nby * 8 or nk >= nbz * 8:
                continue
            nbk = table[ni >> 3, nj >> 3, nk >> 3]
            if nbk < 0:
                continue
            nidx = nbk * b3 + ((ni & 7) << 6) + ((nj & 7) << 3) + (nk & 7)
            if flat[nidx] == 0:
                flat[nidx] = s
                queue[tail] = nidx
                tail += 1


def _block_fill_kernel(table, values):  # pragma: no cover - numba
    """Sign of the blocks left out: from the node of a neighbouring kept block next to them, then from
    block to block (breadth first). Writes FAR_OUTSIDE / FAR_INSIDE into the table."""
    nbx = table.shape[0]
    nby = table.shape[1]
    nbz = table.shape[2]
    total = nbx * nby * nbz
    state = np.zeros(total, np.int8)  # 0 unknown, +1 / −1 sign of a left-out block, 2 kept
    queue = np.empty(total, np.int64)
    tail = 0
    for bi in range(nbx):
        for bj in range(nby):
            for bk in range(nbz):
                if table[bi, bj, bk] >= 0:
                    flat = (bi * nby + bj) * nbz + bk
                    state[flat] = 2
                    queue[tail] = flat
                    tail += 1
    head = 0
    c = 4
    while head < tail:
        flat = queue[head]
        head += 1
        bi = flat // (nby * nbz)
        bj = (flat // nbz) % nby
        bk = flat % nbz
        st = state[flat]
        for dirn in range(6):
            ni = bi
            nj = bj
            nk = bk
            # the node of this block next to the neighbour (local indices)
            li = c
            lj = c
            lk = c
            if dirn == 0:
                ni -= 1
                li = 0
            elif dirn == 1:
                ni += 1
                li = 7
            elif dirn == 2:
                nj -= 1
                lj = 0
            elif dirn == 3:
                nj += 1
                lj = 7
            elif dirn == 4:
                nk -= 1
                lk = 0
            else:
                nk += 1
                lk = 7
            if ni < 0 or nj < 0 or nk < 0 or ni >= nbx or nj >= nby or nk >= nbz:
                continue
            nflat = (ni * nby + nj) * nbz + nk
            if state[nflat] != 0:
                continue
            if st == 2:
                s = 1 if values[table[bi, bj, bk], li, lj, lk] >= 0.0 else -1
            else:
                s = st
            state[nflat] = s
            table[ni, nj, nk] = -1 if s > 0 else -2
            queue[tail] = nflat
            tail += 1
    for bi in range(nbx):  # unreachable (no kept block at all): outside
        for bj in range(nby):
            for bk in range(nbz):
                flat = (bi * nby + bj) * nbz + bk
                if state[flat] == 0:
                    table[bi, bj, bk] = -1


# ---------------------------------------------------------------- query kernel -----------------------

def _sample_kernel(p, origin, inv_h, nmax, table, values, far, want_gradient, out_v, out_g):  # pragma: no cover
    """Trilinear value (and its exact gradient in the cell) at points p (k, 3) in the mesh's frame."""
    c = np.empty(8)
    for r in range(p.shape[0]):
        ok = True
        for ax in range(3):
            if not np.isfinite(p[r, ax]):
                ok = False
        if not ok:
            out_v[r] = np.nan
            if want_gradient:
                for ax in range(3):
                    out_g[r, ax] = np.nan
            continue
        tx = (p[r, 0] - origin[0]) * inv_h
        ty = (p[r, 1] - origin[1]) * inv_h
        tz = (p[r, 2] - origin[2]) * inv_h
        gx_on = 1.0
        gy_on = 1.0
        gz_on = 1.0
        if tx < 0.0:
            tx = 0.0
            gx_on = 0.0
        elif tx > nmax[0]:
            tx = float(nmax[0])
            gx_on = 0.0
        if ty < 0.0:
            ty = 0.0
            gy_on = 0.0
        elif ty > nmax[1]:
            ty = float(nmax[1])
            gy_on = 0.0
        if tz < 0.0:
            tz = 0.0
            gz_on = 0.0
        elif tz > nmax[2]:
            tz = float(nmax[2])
            gz_on = 0.0
        i0 = int(tx)
        j0 = int(ty)
        k0 = int(tz)
        if i0 >= nmax[0]:
            i0 = nmax[0] - 1
        if j0 >= nmax[1]:
            j0 = nmax[1] - 1
        if k0 >= nmax[2]:
            k0 = nmax[2] - 1
        fx = tx - i0
        fy = ty - j0
        fz = tz - k0
        for corner in range(8):
            i = i0 + (corner & 1)
            j = j0 + ((corner >> 1) & 1)
            k = k0 + (corner >> 2)
            b = table[i >> 3, j >> 3, k >> 3]
            if b >= 0:
                c[corner] = values[b, i & 7, j & 7, k & 7]
            elif b == -2:
                c[corner] = -far
            else:
                c[corner] = far
        # corners: bit 0 = x, bit 1 = y, bit 2 = z
        c00 = c[0] + fx * (c[1] - c[0])
        c10 = c[2] + fx * (c[3] - c[2])
        c01 = c[4] + fx * (c[5] - c[4])
        c11 = c[6] + fx * (c[7] - c[6])
        c0 = c00 + fy * (c10 - c00)
        c1 = c01 + fy * (c11 - c01)
        out_v[r] = c0 + fz * (c1 - c0)
        if want_gradient:
            ex = 1.0 - fx
            ey = 1.0 - fy
            ez = 1.0 - fz
            gx = (ey * ez * (c[1] - c[0]) + fy * ez * (c[3] - c[2]) + ey * fz * (c[5] - c[4])
                  + fy * fz * (c[7] - c[6]))
            gy = (ex * ez * (c[2] - c[0]) + fx * ez * (c[3] - c[1]) + ex * fz * (c[6] - c[4])
                  + fx * fz * (c[7] - c[5]))
            out_g[r, 0] = gx * inv_h * gx_on
            out_g[r, 1] = gy * inv_h * gy_on
            out_g[r, 2] = (c1 - c0) * inv_h * gz_on


# ---------------------------------------------------------------- the field --------------------------

@dataclass(frozen=True, eq=False)
class SignedDistanceField:
    """A narrow-band signed distance grid of one mesh in the mesh's own frame (see the module doc).

    origin (3,): position of node (0, 0, 0) [m]; spacing h [m]; band w [m] (values clamped to ±w);
    node_dims (3,): nodes per axis (queries are clamped onto that box); block_index (bx, by, bz) int32:
    the kept block's row in ``values``, or FAR_OUTSIDE / FAR_INSIDE; values (kept, 8, 8, 8) float32;
    closed: the mesh had no boundary edges (inside / outside is then exact); node_faces (kept, 8, 8, 8)
    int32 or None: the closest face of each node within the band (−1: none; kept by ``build(...,
    keep_faces=True)``, for the contact's face field), mesh_face_count: the faces the mesh had.
    """

    origin: np.ndarray
    spacing: float
    band: float
    node_dims: np.ndarray
    block_index: np.ndarray = field(repr=False)
    values: np.ndarray = field(repr=False)
    closed: bool = True
    node_faces: np.ndarray | None = field(default=None, repr=False)
    mesh_face_count: int = 0

    # ---- construction ----
    @classmethod
    def build(cls, vertices: np.ndarray, faces: np.ndarray, spacing: float | None = None,
              band_cells: float = DEFAULT_BAND_CELLS, use_numba: bool | None = None,
              keep_faces: bool = False) -> "SignedDistanceField":
        """The field of the mesh (vertices (n, 3) [m], faces (m, 3)); ``spacing`` h [m] (default
        :func:`default_spacing`), band half-width ``band_cells``·h (at least 2 cells). ``keep_faces``:
        also keep each band node's closest face (:attr:`node_faces`; one int32 a node more)."""
        v = np.ascontiguousarray(vertices, dtype=np.float64)
        f = np.ascontiguousarray(faces, dtype=np.int64)
        if v.ndim != 2 or v.shape[1] != 3 or f.ndim != 2 or f.shape[1] != 3 or len(f) == 0:
            raise ValueError("a signed distance field needs vertices (n, 3) and at least one face (m, 3)")
        if not np.all(np.isfinite(v)):
            raise ValueError("mesh vertices must be finite")
        if f.min() < 0 or f.max() >= len(v):
            raise ValueError("face indices out of range")
        h = float(default_spacing(v, f) if spacing is None else spacing)
        if not (math.isfinite(h) and h > 0.0):
            raise ValueError(f"grid spacing must be positive, got {spacing!r}")
        if not band_cells >= 2.0:
            raise ValueError("the band must be at least 2 cells wide (the sign fill needs w > h)")
        w = float(band_cells) * h
        origin, dims = lattice(v, h, w)
        nmax = dims - 1
        nblocks = (nmax >> _SHIFT) + 1
        fn, edge_n, face_edges, vert_n = pseudo_normals(v, f)
        ok = np.linalg.norm(fn, axis=1) > 0.0
        if not ok.any():
            raise ValueError("every face of the mesh has zero area")

        mark = np.zeros(tuple(nblocks), np.int8)
        _kernel(_mark_kernel, use_numba)(v, f, ok, origin, 1.0 / h, w, nmax, mark)
        table = np.full(tuple(nblocks), -1, np.int32)
        touched = np.flatnonzero(mark.reshape(-1))
        table.reshape(-1)[touched] = np.arange(len(touched), dtype=np.int32)
        d2 = np.full((len(touched), BLOCK, BLOCK, BLOCK), np.inf)
        sgn = np.zeros((len(touched), BLOCK, BLOCK, BLOCK), np.int8)
        nearest = np.full((len(touched), BLOCK, BLOCK, BLOCK), -1, np.int32)
        _kernel(_scatter_kernel, use_numba)(v, f, ok, fn, edge_n, face_edges, vert_n, origin, h, w, nmax,
                                            table, d2, sgn, nearest)

        # keep the blocks holding a node of the band (every other node of theirs gets its sign by the fill)
        known = d2 <= w * w
        keep = known.reshape(len(touched), -1).any(axis=1)
        table = np.full(tuple(nblocks), -1, np.int32)
        kept = touched[keep]
        table.reshape(-1)[kept] = np.arange(len(kept), dtype=np.int32)
        d2, sgn, known = d2[keep], sgn[keep], np.ascontiguousarray(known[keep])
        node_faces = np.ascontiguousarray(np.where(known, nearest[keep], -1).astype(np.int32)) if keep_faces else None
        coords = np.column_stack(np.unravel_index(kept, tuple(nblocks))).astype(np.int64)
        _kernel(_fill_kernel, use_numba)(table, coords, known, sgn)
        sgn[sgn == 0] = 1  # none left for a mesh with a band; kept for safety
        values = (sgn * np.where(known, np.sqrt(np.minimum(d2, w * w)), w)).astype(np.float32)
        _kernel(_block_fill_kernel, use_numba)(table, values)

        closed = is_closed(f[ok])
        return cls(origin, h, w, dims, table, values, closed, node_faces, len(f) if keep_faces else 0)

    # ---- queries ----
    def value(self, points: np.ndarray, use_numba: bool | None = None) -> np.ndarray:
        """Signed distance (k,) [m] at points (k, 3) in the mesh's frame (clamped to ±band)."""
        return self._sample(points, False, use_numba)[0]

    def value_and_gradient(self, points: np.ndarray, use_numba: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Signed distance (k,) and its gradient (k, 3) (the trilinear cell's exact derivative; about
        unit length in the band, zero where clamped) at points (k, 3) in the mesh's frame."""
        return self._sample(points, True, use_numba)

    def _sample(self, points, want_gradient: bool, use_numba: bool | None):
        p = np.ascontiguousarray(np.asarray(points, dtype=np.float64).reshape(-1, 3))
        out_v = np.empty(len(p))
        out_g = np.empty((len(p), 3)) if want_gradient else np.empty((0, 3))
        if numba_enabled(use_numba):
            if len(p):
                _kernel(_sample_kernel, True)(p, self.origin, 1.0 / self.spacing, self.node_dims - 1,
                                              self.block_index, self.values, self.band, want_gradient, out_v, out_g)
        else:
            out_v, g = self._sample_numpy(p, want_gradient)
            if want_gradient:
                out_g = g
        return out_v, (out_g if want_gradient else None)

    def _sample_numpy(self, p: np.ndarray, want_gradient: bool):
        """The same trilinear interpolation, vectorised in numpy (the reference for the kernel)."""
        inv_h = 1.0 / self.spacing
        nmax = self.node_dims - 1
        t = (p - self.origin) * inv_h
        finite = np.all(np.isfinite(t), axis=1)
        t = np.where(finite[:, None], t, 0.0)
        inside = (t >= 0.0) & (t <= nmax)
        t = np.clip(t, 0.0, nmax.astype(np.float64))
        i0 = np.minimum(t.astype(np.int64), nmax - 1)
        frac = t - i0
        c = np.empty((len(p), 8))
        for corner in range(8):
            idx = i0 + np.array([corner & 1, (corner >> 1) & 1, corner >> 2])
            b = self.block_index[idx[:, 0] >> _SHIFT, idx[:, 1] >> _SHIFT, idx[:, 2] >> _SHIFT]
            kept = b >= 0
            val = np.where(b == FAR_INSIDE, -self.band, self.band)
            val[kept] = self.values[b[kept], idx[kept, 0] & _MASK, idx[kept, 1] & _MASK, idx[kept, 2] & _MASK]
            c[:, corner] = val
        fx, fy, fz = frac[:, 0], frac[:, 1], frac[:, 2]
        c00 = c[:, 0] + fx * (c[:, 1] - c[:, 0])
        c10 = c[:, 2] + fx * (c[:, 3] - c[:, 2])
        c01 = c[:, 4] + fx * (c[:, 5] - c[:, 4])
        c11 = c[:, 6] + fx * (c[:, 7] - c[:, 6])
        c0 = c00 + fy * (c10 - c00)
        c1 = c01 + fy * (c11 - c01)
        val = np.where(finite, c0 + fz * (c1 - c0), np.nan)
        if not want_gradient:
            return val, None
        ex, ey, ez = 1.0 - fx, 1.0 - fy, 1.0 - fz
        gx = ey * ez * (c[:, 1] - c[:, 0]) + fy * ez * (c[:, 3] - c[:, 2]) + ey * fz * (c[:, 5] - c[:, 4]) \
            + fy * fz * (c[:, 7] - c[:, 6])
        gy = ex * ez * (c[:, 2] - c[:, 0]) + fx * ez * (c[:, 3] - c[:, 1]) + ex * fz * (c[:, 6] - c[:, 4]) \
            + fx * fz * (c[:, 7] - c[:, 5])
        g = np.column_stack([gx, gy, c1 - c0]) * inv_h * inside
        g[~finite] = np.nan
        return val, g

    def project(self, points: np.ndarray, iterations: int = 8, tolerance: float | None = None,
                use_numba: bool | None = None) -> "Projection":
        """Points (k, 3) moved onto the field's zero level set by Newton steps x ← x − d(x)·∇d/|∇d|²
        (the field side of wrapping: projecting path points onto an obstacle, and its normal there).

        ``tolerance`` on |d| [m] (default 1e-4·h). Points where the field is clamped (farther than the
        band) or the gradient vanishes are left where they are and not marked converged."""
        x = np.array(np.asarray(points, dtype=np.float64).reshape(-1, 3))
        tol = 1e-4 * self.spacing if tolerance is None else float(tolerance)
        d0, g = self.value_and_gradient(x, use_numba)
        d, active = d0.copy(), np.ones(len(x), bool)
        for _ in range(iterations):
            gg = (g * g).sum(axis=1)
            step = active & (np.abs(d) > tol) & (gg > 1e-12) & (np.abs(d) < self.band)
            if not step.any():
                break
            x[step] -= (d[step] / gg[step])[:, None] * g[step]
            d_new, g_new = self.value_and_gradient(x[step], use_numba)
            d[step], g[step] = d_new, g_new
        gn = np.linalg.norm(g, axis=1)
        normal = np.divide(g, gn[:, None], out=np.zeros_like(g), where=gn[:, None] > 0)
        return Projection(x, normal, d0, np.abs(d) <= tol)

    # ---- bookkeeping ----
    @property
    def accurate_band(self) -> float:
        """|d| [m] up to which every corner of a point's cell is unclamped (band − √3·h): there the
        value is within :attr:`error_bound` of the exact signed distance."""
        return self.band - math.sqrt(3.0) * self.spacing

    @property
    def error_bound(self) -> float:
        """h·√3/2: bound on |value − signed distance| within :attr:`accurate_band` (module doc)."""
        return 0.5 * math.sqrt(3.0) * self.spacing

    @property
    def nbytes(self) -> int:
        """Memory held by the field's arrays [bytes]."""
        faces = 0 if self.node_faces is None else self.node_faces.nbytes
        return int(self.values.nbytes + self.block_index.nbytes + faces)

    @property
    def dense_nbytes(self) -> int:
        """What a dense float32 grid over the same lattice box would hold [bytes] (for comparison)."""
        return int(np.prod(self.node_dims.astype(np.float64)) * 4)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain numpy arrays (no objects) for storage; :meth:`from_arrays` reads them back."""
        out = {
            "origin": np.asarray(self.origin, np.float64),
            "spacing": np.array(self.spacing, np.float64),
            "band": np.array(self.band, np.float64),
            "node_dims": np.asarray(self.node_dims, np.int64),
            "block_index": self.block_index,
            "values": self.values,
            "closed": np.array(self.closed, np.bool_),
        }
        if self.node_faces is not None:
            out["node_faces"] = self.node_faces
            out["mesh_face_count"] = np.array(self.mesh_face_count, np.int64)
        return out

    def digest(self) -> str:
        """SHA-256 of the arrays' dtypes, shapes and bytes (an integrity check for stored copies)."""
        h = hashlib.sha256()
        for name, a in self.to_arrays().items():
            a = np.ascontiguousarray(a)
            h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
            h.update(a.tobytes())
        return h.hexdigest()

    @classmethod
    def from_arrays(cls, arrays) -> "SignedDistanceField":
        """A field from :meth:`to_arrays`' arrays, every one checked (dtype, shape, ranges): the
        kernels index without bounds checks, so nothing read from a file is trusted. ValueError
        when anything is off."""
        missing = [n for n in _ARRAY_NAMES if n not in arrays]
        if missing:
            raise ValueError(f"signed distance field arrays lack {missing}")
        origin = np.asarray(arrays["origin"])
        spacing = np.asarray(arrays["spacing"])
        band = np.asarray(arrays["band"])
        dims = np.asarray(arrays["node_dims"])
        table = np.asarray(arrays["block_index"])
        values = np.asarray(arrays["values"])
        closed = np.asarray(arrays["closed"])
        if origin.dtype != np.float64 or origin.shape != (3,) or not np.all(np.isfinite(origin)):
            raise ValueError("bad origin")
        if spacing.dtype != np.float64 or spacing.shape != () or not (np.isfinite(spacing) and spacing > 0):
            raise ValueError("bad spacing")
        if band.dtype != np.float64 or band.shape != () or not (np.isfinite(band) and band >= 2 * spacing):
            raise ValueError("bad band")
        if dims.dtype != np.int64 or dims.shape != (3,) or np.any(dims < 2):
            raise ValueError("bad node dims")
        nblocks = tuple(int(x) for x in ((dims - 1) >> _SHIFT) + 1)
        if table.dtype != np.int32 or table.shape != nblocks:
            raise ValueError("bad block table")
        if values.dtype != np.float32 or values.ndim != 4 or values.shape[1:] != (BLOCK, BLOCK, BLOCK):
            raise ValueError("bad values")
        if table.size and (table.min() < FAR_INSIDE or table.max() >= len(values)):
            raise ValueError("block table points outside the values")
        if len(values) and np.count_nonzero(table >= 0) != len(values):
            raise ValueError("block table and values disagree")
        if not np.all(np.isfinite(values)) or (len(values) and np.abs(values).max() > float(band) * (1 + 1e-6)):
            raise ValueError("values outside the band")
        if closed.dtype != np.bool_ or closed.shape != ():
            raise ValueError("bad closed flag")
        node_faces, face_count = None, 0
        if any(n in arrays for n in _FACE_ARRAY_NAMES):
            if not all(n in arrays for n in _FACE_ARRAY_NAMES):
                raise ValueError(f"signed distance field arrays need all of {_FACE_ARRAY_NAMES} or none")
            node_faces = np.asarray(arrays["node_faces"])
            count = np.asarray(arrays["mesh_face_count"])
            if count.dtype != np.int64 or count.shape != () or not count > 0:
                raise ValueError("bad mesh face count")
            face_count = int(count)
            if node_faces.dtype != np.int32 or node_faces.shape != values.shape:
                raise ValueError("bad node faces")
            if node_faces.size and (node_faces.min() < -1 or node_faces.max() >= face_count):
                raise ValueError("node faces outside the mesh's faces")
            node_faces = np.ascontiguousarray(node_faces)
        return cls(origin.copy(), float(spacing), float(band), dims.copy(), np.ascontiguousarray(table),
                   np.ascontiguousarray(values), bool(closed), node_faces, face_count)


@dataclass(frozen=True)
class Projection:
    """Result of :meth:`SignedDistanceField.project`: points (k, 3) on the zero level set, unit normals
    (k, 3) there (outward; zero where undefined), the signed distance (k,) of the original points and
    (k,) bool: the Newton iteration met the tolerance."""

    points: np.ndarray
    normal: np.ndarray
    distance: np.ndarray
    converged: np.ndarray
