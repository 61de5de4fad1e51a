"""Uniform point grid and the compiled "first point hit within tol of a ray" kernel.

The predictive collision search (seed 004 §3.4) asks, over rays p_i + t e_i of the moving body
(speeds s_i) and points x_j of the target body, for the earliest time d / s_i, d = (x_j - p_i)·e_i,
with |(x_j - p_i) × e_i| < tol, d >= d_min and n_j·e_i < 0 (for a translation all speeds are equal
and this is the smallest distance). The target's points are binned once per mesh into a uniform grid (in
the target's own body frame, so the grid never moves); a query walks each ray in chunks of one cell
length, visiting only the cells of the chunk's box inflated by tol, and stops at the best distance
found so far. Passes over all rays widen the window geometrically (iterative deepening), so the work
grows with the answer's distance, not with the product of the vertex counts.

The pair test uses exactly the arithmetic of the exhaustive search in ``collision_exhaustive`` so
both return the same pair and distance bit for bit (ties: smaller moving index, then smaller target
index). The kernel is plain Python that numba compiles; with ``JOINTMODELLER_NUMBA=0`` it runs as
Python (slow, but the tests run it on small meshes to check the compiled and plain paths agree).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from jointmodeller.core._jit import kernel as compiled_kernel

#: cells a grid may hold before its cell size is enlarged
MAX_GRID_CELLS = 2_000_000
#: rays walked first, over their full length, to get an upper bound on the distance
SUBSAMPLE_RAYS = 512
#: relative slack added to every box so rounding can never drop a pair
BOX_SLACK = 1e-9


@dataclass(frozen=True)
class PointGrid:
    """Points binned into a uniform grid of cubic cells (built once per mesh).

    points (m, 3) and normals (m, 3) sorted by cell; index (m,) the original vertex number of each;
    cell_start (n_cells + 1,) the slice of each cell (cells numbered x-fastest); origin (3,),
    cell [m] and dims (3,) describe the grid; lower_bound (n_cells,) [m] a distance below which no
    grid point lies from anywhere in that cell (from chessboard and Euclidean distance transforms of
    the occupied cells), used to skip rays and ray chunks far from the surface; sphere (n_cells, 4)
    a ball (centre, radius) holding each occupied cell's points, used to skip cells a ray's tube
    misses.
    """

    points: np.ndarray
    normals: np.ndarray
    index: np.ndarray
    cell_start: np.ndarray
    origin: np.ndarray
    cell: float
    dims: np.ndarray
    lower_bound: np.ndarray
    sphere: np.ndarray

    @property
    def n_cells(self) -> int:
        return int(self.cell_start.shape[0] - 1)

    @classmethod
    def build(cls, points: np.ndarray, normals: np.ndarray, cell: float) -> "PointGrid":
        """Bin points (m, 3) with their unit normals (m, 3) into cubes of side ``cell`` [m]."""
        points = np.ascontiguousarray(points, dtype=np.float64)
        normals = np.ascontiguousarray(normals, dtype=np.float64)
        lo = points.min(axis=0)
        extent = points.max(axis=0) - lo
        cell = float(cell)
        if not cell > 0:
            raise ValueError("grid cell size must be positive")
        while np.prod(np.floor(extent / cell) + 1) > MAX_GRID_CELLS:
            cell *= 1.5
        ijk = np.floor((points - lo) / cell).astype(np.int64)
        dims = ijk.max(axis=0) + 1
        key = ijk[:, 0] + dims[0] * (ijk[:, 1] + dims[1] * ijk[:, 2])
        order = np.argsort(key, kind="stable")
        n_cells = int(np.prod(dims))
        counts = np.bincount(key, minlength=n_cells)
        cell_start = np.zeros(n_cells + 1, dtype=np.int64)
        np.cumsum(counts, out=cell_start[1:])
        sp = points[order]
        ck = key[order]
        occ_cells = np.flatnonzero(counts)
        sphere = np.zeros((n_cells, 4))
        lo_c = np.minimum.reduceat(sp, cell_start[occ_cells], axis=0)
        hi_c = np.maximum.reduceat(sp, cell_start[occ_cells], axis=0)
        centre = 0.5 * (lo_c + hi_c)
        sphere[occ_cells, :3] = centre
        dist = np.linalg.norm(sp - sphere[ck, :3], axis=1)
        sphere[occ_cells, 3] = np.maximum.reduceat(dist, cell_start[occ_cells]) * (1 + 1e-9) + 1e-15
        occupied = (counts > 0).reshape(dims[::-1])  # (z, y, x) so x runs fastest when flattened
        cheb = ndimage.distance_transform_cdt(~occupied, metric="chessboard").astype(np.float64)
        eucl = ndimage.distance_transform_edt(~occupied)
        # a point in a cell k cells (chessboard) away from an occupied one is >= (k - 1) cells from
        # every grid point; centre distance minus both half-diagonals bounds it too
        lower = np.maximum(np.maximum(cheb - 1.0, eucl - math.sqrt(3.0)), 0.0) * cell * (1 - 1e-9)
        return cls(
            points=np.ascontiguousarray(points[order]),
            normals=np.ascontiguousarray(normals[order]),
            index=order.astype(np.int64),
            cell_start=cell_start,
            origin=lo.astype(np.float64),
            cell=cell,
            dims=dims.astype(np.int64),
            lower_bound=np.ascontiguousarray(lower.reshape(-1)),
            sphere=sphere,
        )


def _candidates_kernel(v, n, number, R, p, V, w, out_p, out_e, out_i, out_s):  # pragma: no cover - numba
    """Moving vertices v (n, 3) with normals n, numbered ``number`` (n,), mapped by x -> R x + p.

    Keeps those facing their motion V + w × x; writes points, unit directions, vertex numbers and
    speeds of the kept ones into the out arrays (first k rows) and returns k. Used by both search
    methods so their inputs are bit-identical.
    """
    k = 0
    for r in range(v.shape[0]):
        a0 = v[r, 0]
        a1 = v[r, 1]
        a2 = v[r, 2]
        x0 = R[0, 0] * a0 + R[0, 1] * a1 + R[0, 2] * a2 + p[0]
        x1 = R[1, 0] * a0 + R[1, 1] * a1 + R[1, 2] * a2 + p[1]
        x2 = R[2, 0] * a0 + R[2, 1] * a1 + R[2, 2] * a2 + p[2]
        u0 = V[0] + (w[1] * x2 - w[2] * x1)
        u1 = V[1] + (w[2] * x0 - w[0] * x2)
        u2 = V[2] + (w[0] * x1 - w[1] * x0)
        sp = math.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
        if not sp > 0.0:
            continue
        e0 = u0 / sp
        e1 = u1 / sp
        e2 = u2 / sp
        b0 = n[r, 0]
        b1 = n[r, 1]
        b2 = n[r, 2]
        m0 = R[0, 0] * b0 + R[0, 1] * b1 + R[0, 2] * b2
        m1 = R[1, 0] * b0 + R[1, 1] * b1 + R[1, 2] * b2
        m2 = R[2, 0] * b0 + R[2, 1] * b1 + R[2, 2] * b2
        if not m0 * e0 + m1 * e1 + m2 * e2 > 0.0:
            continue
        out_p[k, 0] = x0
        out_p[k, 1] = x1
        out_p[k, 2] = x2
        out_e[k, 0] = e0
        out_e[k, 1] = e1
        out_e[k, 2] = e2
        out_i[k] = number[r]
        out_s[k] = sp
        k += 1
    return k


def _ray_kernel(pa, ea, sa, ia, gp, gn, gi, cell_start, lower, sphere, origin, cell, dims,
                tol, d_min, w0, w1, best):  # pragma: no cover - compiled by numba (also run plain)
    """Walk every ray over times [w0, w1]; update best = [time, i, j] in place.

    pa (n, 3) ray origins, ea (n, 3) unit directions, sa (n,) speeds, ia (n,) vertex numbers; gp,
    gn, gi the grid's sorted points, normals and vertex numbers; lower (n_cells,) and sphere
    (n_cells, 4) the grid's distance bounds and cell balls. A pair counts when n_j·e < 0,
    |l × e|² < tol², d = l·e >= d_min, and (d / speed, i, j) is lexicographically below best.
    Ray r is walked over distances [max(w0 s_r, d_min), min(w1, best) s_r].
    """
    tol2 = tol * tol
    pad = tol + BOX_SLACK * (tol + cell) + 1e-12
    nx = dims[0]
    ny = dims[1]
    nz = dims[2]
    hi0 = origin[0] + nx * cell
    hi1 = origin[1] + ny * cell
    hi2 = origin[2] + nz * cell
    for r in range(pa.shape[0]):
        p0 = pa[r, 0]
        p1 = pa[r, 1]
        p2 = pa[r, 2]
        e0 = ea[r, 0]
        e1 = ea[r, 1]
        e2 = ea[r, 2]
        iref = ia[r]
        s_r = sa[r]
        t_lo = max(w0 * s_r, d_min)
        t_hi = min(w1, best[0]) * s_r * (1 + BOX_SLACK)
        if t_hi < t_lo:
            continue
        # skip the ray when its origin is farther from every grid point than any pair could be
        reach = math.sqrt(max(abs(t_lo), abs(t_hi)) ** 2 + tol2) * (1 + BOX_SLACK) + 1e-12
        g0 = (p0 - origin[0]) / cell
        g1 = (p1 - origin[1]) / cell
        g2 = (p2 - origin[2]) / cell
        if 0.0 <= g0 < nx and 0.0 <= g1 < ny and 0.0 <= g2 < nz:
            lb = lower[int(g0) + nx * (int(g1) + ny * int(g2))]
        else:
            o0 = max(origin[0] - p0, 0.0, p0 - hi0)
            o1 = max(origin[1] - p1, 0.0, p1 - hi1)
            o2 = max(origin[2] - p2, 0.0, p2 - hi2)
            lb = math.sqrt(o0 * o0 + o1 * o1 + o2 * o2) * (1 - BOX_SLACK)
        if lb > reach:
            continue
        # clip to the slab interval of the grid box inflated by pad
        ok = True
        for ax in range(3):
            if ax == 0:
                pc = p0
                ec = e0
                lo = origin[0] - pad
                hi = hi0 + pad
            elif ax == 1:
                pc = p1
                ec = e1
                lo = origin[1] - pad
                hi = hi1 + pad
            else:
                pc = p2
                ec = e2
                lo = origin[2] - pad
                hi = hi2 + pad
            if abs(ec) < 1e-300:
                if pc < lo or pc > hi:
                    ok = False
            else:
                ta = (lo - pc) / ec
                tb = (hi - pc) / ec
                if ta > tb:
                    ta, tb = tb, ta
                ta -= BOX_SLACK * (abs(ta) + cell)
                tb += BOX_SLACK * (abs(tb) + cell)
                if ta > t_lo:
                    t_lo = ta
                if tb < t_hi:
                    t_hi = tb
        if not ok:
            continue
        ta = t_lo
        while ta <= t_hi:
            if ta > best[0] * s_r * (1 + BOX_SLACK):
                break
            tb = min(ta + cell, t_hi)
            # skip the chunk when its middle is farther than half its length + tol from every point
            tm = 0.5 * (ta + tb)
            g0 = (p0 + tm * e0 - origin[0]) / cell
            g1 = (p1 + tm * e1 - origin[1]) / cell
            g2 = (p2 + tm * e2 - origin[2]) / cell
            if 0.0 <= g0 < nx and 0.0 <= g1 < ny and 0.0 <= g2 < nz:
                if lower[int(g0) + nx * (int(g1) + ny * int(g2))] > (0.5 * (tb - ta) + pad) * (1 + BOX_SLACK):
                    if tb >= t_hi:
                        break
                    ta = tb
                    continue
            # box of the segment [ta, tb] inflated by pad
            xa = p0 + ta * e0
            xb = p0 + tb * e0
            ya = p1 + ta * e1
            yb = p1 + tb * e1
            za = p2 + ta * e2
            zb = p2 + tb * e2
            cx0 = int(math.floor((min(xa, xb) - pad - origin[0]) / cell))
            cx1 = int(math.floor((max(xa, xb) + pad - origin[0]) / cell))
            cy0 = int(math.floor((min(ya, yb) - pad - origin[1]) / cell))
            cy1 = int(math.floor((max(ya, yb) + pad - origin[1]) / cell))
            cz0 = int(math.floor((min(za, zb) - pad - origin[2]) / cell))
            cz1 = int(math.floor((max(za, zb) + pad - origin[2]) / cell))
            cx0 = max(cx0, 0)
            cy0 = max(cy0, 0)
            cz0 = max(cz0, 0)
            cx1 = min(cx1, nx - 1)
            cy1 = min(cy1, ny - 1)
            cz1 = min(cz1, nz - 1)
            for cz in range(cz0, cz1 + 1):
                for cy in range(cy0, cy1 + 1):
                    base = nx * (cy + ny * cz)
                    for cx in range(cx0, cx1 + 1):
                        c = base + cx
                        k0 = cell_start[c]
                        k1 = cell_start[c + 1]
                        if k0 == k1:
                            continue
                        # the cell's ball must reach into the tube: d range and fly-past distance
                        s0 = sphere[c, 0] - p0
                        s1 = sphere[c, 1] - p1
                        s2 = sphere[c, 2] - p2
                        rad = sphere[c, 3] * (1 + BOX_SLACK) + 1e-15
                        sd = s0 * e0 + s1 * e1 + s2 * e2
                        if sd - rad > best[0] * s_r * (1 + BOX_SLACK) or sd + rad < d_min:
                            continue
                        q0 = s1 * e2 - s2 * e1
                        q1 = s2 * e0 - s0 * e2
                        q2 = s0 * e1 - s1 * e0
                        lat = math.sqrt(q0 * q0 + q1 * q1 + q2 * q2)
                        if lat - rad > tol * (1 + BOX_SLACK):
                            continue
                        for k in range(k0, k1):
                            nde = gn[k, 0] * e0 + gn[k, 1] * e1 + gn[k, 2] * e2
                            if not nde < 0.0:
                                continue
                            l0 = gp[k, 0] - p0
                            l1 = gp[k, 1] - p1
                            l2 = gp[k, 2] - p2
                            d = l0 * e0 + l1 * e1 + l2 * e2
                            if d < d_min:
                                continue
                            tt = d / s_r
                            if tt > best[0]:
                                continue
                            q0 = l1 * e2 - l2 * e1
                            q1 = l2 * e0 - l0 * e2
                            q2 = l0 * e1 - l1 * e0
                            h2 = q0 * q0 + q1 * q1 + q2 * q2
                            if not h2 < tol2:
                                continue
                            jref = gi[k]
                            if tt < best[0] or (tt == best[0] and (iref < best[1]
                                                                   or (iref == best[1] and jref < best[2]))):
                                best[0] = tt
                                best[1] = iref
                                best[2] = jref
            if tb >= t_hi:
                break
            ta = tb


def _kernel(fn, use_numba: bool | None):
    """``fn`` compiled with numba (cached on disk) unless disabled (``core._jit``), else the plain function."""
    return compiled_kernel(fn, use_numba, fastmath=False, error_model="numpy")


def ray_kernel(use_numba: bool | None = None):
    """The ray-walking kernel (compiled unless disabled)."""
    return _kernel(_ray_kernel, use_numba)


def moving_candidates(
    vertices: np.ndarray, normals: np.ndarray, R: np.ndarray, p: np.ndarray, V: np.ndarray,
    w: np.ndarray, number: np.ndarray | None = None, use_numba: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Moving vertices (n, 3) and normals mapped by x -> R x + p, kept when n·e > 0, e = unit(V + w × x).

    ``number`` (n,) the vertex numbers to report (default 0..n-1); pass a grid's sorted points and
    its ``index`` so the rays come out in a spatially coherent, cache-friendly order. Returns
    (points (k, 3), unit directions (k, 3), vertex numbers (k,), speeds (k,)).
    """
    v = np.ascontiguousarray(vertices, dtype=np.float64)
    n = np.ascontiguousarray(normals, dtype=np.float64)
    m = v.shape[0]
    out_p = np.empty((m, 3))
    out_e = np.empty((m, 3))
    out_i = np.empty(m, dtype=np.int64)
    out_s = np.empty(m)
    number = np.arange(m, dtype=np.int64) if number is None else np.ascontiguousarray(number, dtype=np.int64)
    k = _kernel(_candidates_kernel, use_numba)(
        v, n, number, np.ascontiguousarray(R, dtype=np.float64), np.ascontiguousarray(p, dtype=np.float64),
        np.ascontiguousarray(V, dtype=np.float64), np.ascontiguousarray(w, dtype=np.float64),
        out_p, out_e, out_i, out_s)
    return out_p[:k], out_e[:k], out_i[:k], out_s[:k]


def search_grid(
    pa: np.ndarray,
    ea: np.ndarray,
    sa: np.ndarray,
    ia: np.ndarray,
    grid: PointGrid,
    tol: float,
    d_min: float = 0.0,
    use_numba: bool | None = None,
    origin_ball: tuple[np.ndarray, float] | None = None,
) -> tuple[float, int, int]:
    """Earliest (time, i, j) over rays (pa, ea, speeds sa) numbered ia against the grid's points.

    origin_ball: (centre (3,), radius) of a ball holding every ray origin, in the grid's frame (e.g.
    the moving surface's grid box carried along); it bounds how far a ray may travel at no cost per
    ray. Default: measured from pa.

    pa, ea (n, 3) in the grid's frame, ea unit, sa (n,) > 0; time = l·e / speed. Returns
    (inf, -1, -1) when no pair qualifies. A strided subset of about SUBSAMPLE_RAYS rays is walked
    first over its whole length; the best pair it finds bounds the answer, and one pass over all
    rays, each walked only up to that bound, finishes. Without a bound, iterative deepening: passes
    over all rays with time windows that double until a pair is found inside the window.
    """
    kernel = ray_kernel(use_numba)
    best = np.array([np.inf, np.iinfo(np.int64).max, np.iinfo(np.int64).max], dtype=np.float64)
    n = pa.shape[0]
    if n == 0 or grid.points.shape[0] == 0:
        return np.inf, -1, -1
    pa = np.ascontiguousarray(pa, dtype=np.float64)
    ea = np.ascontiguousarray(ea, dtype=np.float64)
    sa = np.ascontiguousarray(sa, dtype=np.float64)
    ia = np.ascontiguousarray(ia, dtype=np.int64)
    # the farthest any ray can travel and still be within tol of a grid point, as a time
    hi = grid.origin + grid.dims * grid.cell
    centre = 0.5 * (grid.origin + hi)
    if origin_ball is None:
        far = float(np.sqrt(((pa - centre) ** 2).sum(axis=1)).max())
    else:
        far = float(np.linalg.norm(np.asarray(origin_ball[0], float) - centre)) + float(origin_ball[1])
    reach = far + 0.5 * float(np.linalg.norm(hi - grid.origin)) + 2 * tol
    reach_time = reach / float(sa.min())
    args = (grid.points, grid.normals, grid.index, grid.cell_start, grid.lower_bound, grid.sphere, grid.origin,
            grid.cell, grid.dims, float(tol), float(d_min))
    # a sparse subset of rays walked all the way gives an upper bound (an actual pair) cheaply ...
    stride = max(1, n // SUBSAMPLE_RAYS)
    if stride > 1:
        kernel(pa[::stride], ea[::stride], sa[::stride], ia[::stride], *args, -np.inf, reach_time, best)
    if np.isfinite(best[0]):
        # ... so one pass over all rays, each walked only up to that bound, finishes the search
        kernel(pa, ea, sa, ia, *args, -np.inf, float(best[0]), best)
    else:
        # no bound: widen the window geometrically (iterative deepening)
        w0 = -np.inf
        step = grid.cell / float(sa.max())
        w1 = max(float(d_min), 0.0) / float(sa.max()) + step
        while True:
            kernel(pa, ea, sa, ia, *args, w0, w1, best)
            if best[0] <= w1 or w1 >= reach_time:
                break
            w0 = w1
            step *= 2.0
            w1 = w0 + step
    if not np.isfinite(best[0]):
        return np.inf, -1, -1
    return float(best[0]), int(best[1]), int(best[2])
