"""Compiled closest-point kernel (numba) with the vectorised numpy version as the fallback.

The tests run both and compare them; ``USE_NUMBA`` (default: the ``core._jit`` switch) chooses.
"""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import NUMBA_ENABLED, njit
from jointmodeller.core.tolerances import tol

#: run the compiled kernels (the switch of ``core._jit``; tests set it False to run the numpy path)
USE_NUMBA = NUMBA_ENABLED
_ZERO = tol.zero  # module-level copies: numba reads globals as compile-time constants
_BARY = tol.barycentric


def _closest_candidates_py(P, cand, faces, V, closest_fn):
    """Numpy path: closest point of each P[i] (m, 3) over faces cand[i] (m, c)."""
    m, nc = cand.shape
    tri = faces[cand.reshape(-1)]
    PP = np.repeat(P, nc, axis=0)
    q, bary = closest_fn(PP, V[tri[:, 0]], V[tri[:, 1]], V[tri[:, 2]])
    d2 = np.einsum("ij,ij->i", PP - q, PP - q).reshape(m, nc)
    best = np.argmin(d2, axis=1)
    rows = np.arange(m) * nc + best
    return q[rows], bary[rows], cand[np.arange(m), best], d2[np.arange(m), best]


@njit(fastmath=False)
def _closest_candidates_nb(P, cand, faces, V):  # pragma: no cover - compiled
    m, nc = cand.shape
    out_q = np.empty((m, 3))
    out_b = np.empty((m, 3))
    out_f = np.empty(m, np.int64)
    out_d = np.empty(m)
    for i in range(m):
        px, py, pz = P[i, 0], P[i, 1], P[i, 2]
        best = 1e300
        for j in range(nc):
            f = cand[i, j]
            ia, ib, ic = faces[f, 0], faces[f, 1], faces[f, 2]
            ax, ay, az = V[ia, 0], V[ia, 1], V[ia, 2]
            abx, aby, abz = V[ib, 0] - ax, V[ib, 1] - ay, V[ib, 2] - az
            acx, acy, acz = V[ic, 0] - ax, V[ic, 1] - ay, V[ic, 2] - az
            apx, apy, apz = px - ax, py - ay, pz - az
            d1 = abx * apx + aby * apy + abz * apz
            d2 = acx * apx + acy * apy + acz * apz
            bpx, bpy, bpz = apx - abx, apy - aby, apz - abz
            d3 = abx * bpx + aby * bpy + abz * bpz
            d4 = acx * bpx + acy * bpy + acz * bpz
            cpx, cpy, cpz = apx - acx, apy - acy, apz - acz
            d5 = abx * cpx + aby * cpy + abz * cpz
            d6 = acx * cpx + acy * cpy + acz * cpz
            vc = d1 * d4 - d3 * d2
            vb = d5 * d2 - d1 * d6
            va = d3 * d6 - d5 * d4
            if d1 <= 0.0 and d2 <= 0.0:
                u, v, w = 1.0, 0.0, 0.0
            elif d3 >= 0.0 and d4 <= d3:
                u, v, w = 0.0, 1.0, 0.0
            elif d6 >= 0.0 and d5 <= d6:
                u, v, w = 0.0, 0.0, 1.0
            elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
                t = d1 / (d1 - d3)
                u, v, w = 1.0 - t, t, 0.0
            elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
                t = d2 / (d2 - d6)
                u, v, w = 1.0 - t, 0.0, t
            elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
                t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
                u, v, w = 0.0, 1.0 - t, t
            else:
                den = va + vb + vc
                if den == 0.0:
                    den = 1.0
                v = vb / den
                w = vc / den
                u = 1.0 - v - w
            qx = ax + v * abx + w * acx
            qy = ay + v * aby + w * acy
            qz = az + v * abz + w * acz
            dd = (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2
            if dd < best:
                best = dd
                out_q[i, 0], out_q[i, 1], out_q[i, 2] = qx, qy, qz
                out_b[i, 0], out_b[i, 1], out_b[i, 2] = u, v, w
                out_f[i] = f
        out_d[i] = best
    return out_q, out_b, out_f, out_d


@njit
def _closest_full_nb(P, cand, faces, V, VN, FN, boundary, want_shape=True):  # pragma: no cover - compiled
    """closest point, smooth normal, signed distance, face and shape operator per point (zero
    without ``want_shape``)."""
    q, bary, face, d2 = _closest_candidates_nb(P, cand, faces, V)
    m = P.shape[0]
    n_out = np.empty((m, 3))
    sd = np.empty(m)
    S = np.zeros((m, 3, 3))
    for i in range(m):
        f = face[i]
        i0, i1, i2 = faces[f, 0], faces[f, 1], faces[f, 2]
        b0, b1, b2 = bary[i, 0], bary[i, 1], bary[i, 2]
        n = np.empty(3)
        for c in range(3):
            n[c] = b0 * VN[i0, c] + b1 * VN[i1, c] + b2 * VN[i2, c]
        nl = np.sqrt(n[0] ** 2 + n[1] ** 2 + n[2] ** 2)
        if nl < _ZERO:
            for c in range(3):
                n[c] = FN[f, c]
            nl = 1.0
        for c in range(3):
            n[c] /= nl
            n_out[i, c] = n[c]
        dx = P[i, 0] - q[i, 0]
        dy = P[i, 1] - q[i, 1]
        dz = P[i, 2] - q[i, 2]
        if b0 > _BARY and b1 > _BARY and b2 > _BARY:
            side = dx * FN[f, 0] + dy * FN[f, 1] + dz * FN[f, 2]
        else:
            side = dx * n[0] + dy * n[1] + dz * n[2]
        dist = np.sqrt(d2[i])
        # closest on the rim of an open surface: the string passes round it, never inside
        rim = (b0 <= _BARY or boundary[i0]) and (b1 <= _BARY or boundary[i1]) and (b2 <= _BARY or boundary[i2])
        if rim and not (b0 > _BARY and b1 > _BARY and b2 > _BARY):
            side = 1.0
        sd[i] = -dist if side < 0.0 else dist
        if not want_shape:
            continue
        # shape operator of the interpolated normal field: P J P, J = Σ_k N_k ⊗ ∇b_k / |n|
        nf = FN[f]
        e0 = V[i2] - V[i1]
        e1 = V[i0] - V[i2]
        e2 = V[i1] - V[i0]
        ax = np.cross(V[i1] - V[i0], V[i2] - V[i0])
        a2 = np.sqrt(ax[0] ** 2 + ax[1] ** 2 + ax[2] ** 2)
        if a2 <= 0.0:
            a2 = 1.0
        g0 = np.cross(nf, e0) / a2
        g1 = np.cross(nf, e1) / a2
        g2 = np.cross(nf, e2) / a2
        J = np.empty((3, 3))
        for r in range(3):
            for c in range(3):
                J[r, c] = (VN[i0, r] * g0[c] + VN[i1, r] * g1[c] + VN[i2, r] * g2[c]) / nl
        Pm = np.eye(3)
        for r in range(3):
            for c in range(3):
                Pm[r, c] -= n[r] * n[c]
        M = Pm @ J @ Pm
        for r in range(3):
            for c in range(3):
                S[i, r, c] = 0.5 * (M[r, c] + M[c, r])
    return q, n_out, sd, face, S


@njit
def _exact_rows_nb(xb, lower, use_lower, exact_below, where, use_where, lo, hi, far_margin,
                   sd):  # pragma: no cover - compiled
    """Which points of xb (m, 3) need the exact query (their indices), with the distances of the
    others written into sd (m,): the field's lower bound where it rules the point out (above
    exact_below and not in where), else the bounding box's distance where that exceeds far_margin.
    Returns the indices, their points (contiguous) and each point's kind (0 exact, 1 far, 2 bound)."""
    m = xb.shape[0]
    rows = np.empty(m, np.int64)
    kind = np.empty(m, np.int8)
    n = 0
    for i in range(m):
        if use_lower and not lower[i] <= exact_below and not (use_where and where[i]):
            sd[i] = lower[i]
            kind[i] = 2
            continue
        g0 = max(max(lo[0] - xb[i, 0], xb[i, 0] - hi[0]), 0.0)
        g1 = max(max(lo[1] - xb[i, 1], xb[i, 1] - hi[1]), 0.0)
        g2 = max(max(lo[2] - xb[i, 2], xb[i, 2] - hi[2]), 0.0)
        box_d = np.sqrt((g0 * g0 + g2 * g2) + g1 * g1)  # numpy's einsum order over three terms
        if box_d > far_margin:
            sd[i] = box_d
            kind[i] = 1
            continue
        kind[i] = 0
        rows[n] = i
        n += 1
    P = np.empty((n, 3))
    for r in range(n):
        for c in range(3):
            P[r, c] = xb[rows[r], c]
    return rows[:n], P, kind


@njit
def _merge_obstacle_nb(xb, kind, sd, rows, P, vidx, vertex_faces, faces, V, VN, FN, boundary, facets, want_shape,
                       j, best_sd, which, c_B):  # pragma: no cover - compiled
    """One obstacle's closest points merged into the running nearest (best_sd, which, c_B updated in
    place): the exact query at rows (points P, nearest vertices vidx), placeholders elsewhere (the
    point itself, +x, zero curvature; with facets the face normal, face 0 for far points). Returns
    the rows where this obstacle is nearer than any before and their closest points, normals and
    shape operators in its body frame (for the caller's frame change)."""
    m = xb.shape[0]
    nr = rows.shape[0]
    kk = vidx.shape[1] if nr > 0 else 1
    K = vertex_faces.shape[1]
    cand = np.empty((nr, kk * K), np.int64)
    for r in range(nr):
        for a in range(kk):
            for b in range(K):
                cand[r, a * K + b] = vertex_faces[vidx[r, a], b]
    q, n, sdx, face, S = _closest_full_nb(P, cand, faces, V, VN, FN, boundary, want_shape and not facets)
    slot = np.full(m, -1, np.int64)
    for r in range(nr):
        slot[rows[r]] = r
        sd[rows[r]] = sdx[r]
    out_i = np.empty(m, np.int64)
    out_q = np.empty((m, 3))
    out_n = np.empty((m, 3))
    out_S = np.zeros((m, 3, 3))
    cnt = 0
    for i in range(m):
        if not sd[i] < best_sd[i]:
            continue
        best_sd[i] = sd[i]
        which[i] = j
        r = slot[i]
        if r >= 0:
            for c in range(3):
                out_q[cnt, c] = q[r, c]
                out_n[cnt, c] = FN[face[r], c] if facets else n[r, c]
            if want_shape and not facets:
                for a in range(3):
                    for b in range(3):
                        out_S[cnt, a, b] = S[r, a, b]
        else:
            for c in range(3):
                out_q[cnt, c] = xb[i, c]
                out_n[cnt, c] = 0.0
            out_n[cnt, 0] = 1.0
            if facets and kind[i] == 1:
                for c in range(3):
                    out_n[cnt, c] = FN[0, c]
        for c in range(3):
            c_B[i, c] = out_q[cnt, c]
        out_i[cnt] = i
        cnt += 1
    return out_i[:cnt], out_q[:cnt], out_n[:cnt], out_S[:cnt]


def exact_rows(xb, lower, exact_below, where, lo, hi, far_margin, sd):
    """See _exact_rows_nb (compiled; numba only)."""
    use_lower = lower is not None
    use_where = where is not None
    return _exact_rows_nb(xb, lower if use_lower else _EMPTY_F, use_lower, float(exact_below) if use_lower else 0.0,
                          where if use_where else _EMPTY_B, use_where, lo, hi, float(far_margin), sd)


_EMPTY_F = np.zeros(0)
_EMPTY_B = np.zeros(0, np.bool_)


def merge_obstacle(xb, kind, sd, rows, P, vidx, ob, facets, want_shape, j, best_sd, which, c_B):
    """See _merge_obstacle_nb (compiled; numba only)."""
    return _merge_obstacle_nb(xb, kind, sd, rows, P, vidx, ob.vertex_faces, ob.faces, ob.vertices_B,
                              ob.vertex_normals_B, ob.face_normals_B, ob.boundary_vertex, facets, want_shape, j,
                              best_sd, which, c_B)


def closest_full(P, cand, faces, V, VN, FN, boundary):
    """Compiled closest point with normal, signed distance, face and shape operator (numba only)."""
    return _closest_full_nb(np.ascontiguousarray(P, dtype=np.float64), np.ascontiguousarray(cand), faces, V, VN, FN,
                            boundary)


def closest_candidates(P, cand, faces, V, closest_fn):
    """Closest point over candidate faces: q (m, 3), barycentrics (m, 3), face (m,), squared distance (m,)."""
    if USE_NUMBA:
        return _closest_candidates_nb(
            np.ascontiguousarray(P, dtype=np.float64), np.ascontiguousarray(cand), faces, V
        )
    return _closest_candidates_py(P, cand, faces, V, closest_fn)


def tangent_rows(n: np.ndarray) -> np.ndarray:
    """Rotation rows (m, 3, 3): two unit tangents and the unit normal n (m, 3) last."""
    a = np.zeros_like(n)
    idx = np.argmin(np.abs(n), axis=1)
    a[np.arange(len(n)), idx] = 1.0
    t1 = np.cross(n, a)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    t2 = np.cross(n, t1)
    return np.stack([t1, t2, n], axis=1)


def _assemble_kkt_py(x, active, normal, lam, shape, w, use_curv):
    """Banded KKT matrix (11, 3(N-1)) and right-hand side (3(N-1),); see solve_energy_kkt."""
    N1 = x.shape[0] - 2
    wl, wr = w[:-1], w[1:]
    R = np.tile(np.eye(3), (N1, 1, 1))
    if active.any():
        R[active] = tangent_rows(normal[active])
    D = (wl + wr)[:, None, None] * R
    Lo = -wl[:, None, None] * R
    Up = -wr[:, None, None] * R
    D[active, 2, :] = normal[active]
    Lo[active, 2, :] = 0.0
    Up[active, 2, :] = 0.0
    rhs = np.zeros((N1, 3))
    if use_curv and active.any():
        Ra = R[active]
        lS = np.maximum(lam[active], 0.0)[:, None, None] * shape[active]
        # keep the tangent blocks positive definite: cap the curvature term at half the diagonal
        big = np.sqrt((lS * lS).sum(axis=(1, 2)))
        half = 0.5 * (wl + wr)[active]
        lS *= np.minimum(1.0, half / np.maximum(big, 1e-300))[:, None, None]
        curv = Ra[:, :2, :] @ lS
        D[active, :2, :] -= curv
        rhs[active, :2] -= np.einsum("aij,aj->ai", curv, x[1:-1][active])
    rhs[0] -= Lo[0] @ x[0]
    rhs[-1] -= Up[-1] @ x[-1]
    rhs[active, 2] = np.einsum("ij,ij->i", normal[active], x[1:-1][active])
    n = 3 * N1
    ab = np.zeros((11, n))
    blk = np.arange(N1)
    r = (3 * blk[:, None, None] + np.arange(3)[None, :, None]).repeat(3, axis=2)
    c = np.broadcast_to(3 * blk[:, None, None] + np.arange(3)[None, None, :], r.shape)
    ab[5 + r - c, c] = D
    ab[5 + r[1:] - (c[1:] - 3), c[1:] - 3] = Lo[1:]
    ab[5 + r[:-1] - (c[:-1] + 3), c[:-1] + 3] = Up[:-1]
    return ab, rhs.reshape(-1)


@njit
def _assemble_kkt_nb(x, active, normal, lam, shape, w, use_curv):  # pragma: no cover - compiled
    N1 = x.shape[0] - 2
    n = 3 * N1
    ab = np.zeros((11, n))
    rhs = np.zeros(n)
    R = np.empty((3, 3))
    for i in range(N1):
        wl = w[i]
        wr = w[i + 1]
        if active[i]:
            nn = normal[i]
            k = 0
            if abs(nn[1]) < abs(nn[k]):
                k = 1
            if abs(nn[2]) < abs(nn[k]):
                k = 2
            a = np.zeros(3)
            a[k] = 1.0
            t1 = np.cross(nn, a)
            t1 /= np.sqrt(t1[0] ** 2 + t1[1] ** 2 + t1[2] ** 2)
            t2 = np.cross(nn, t1)
            for c in range(3):
                R[0, c] = t1[c]
                R[1, c] = t2[c]
                R[2, c] = nn[c]
        else:
            for r in range(3):
                for c in range(3):
                    R[r, c] = 1.0 if r == c else 0.0
        D = (wl + wr) * R
        Lo = -wl * R
        Up = -wr * R
        b = np.zeros(3)
        if active[i]:
            for c in range(3):
                D[2, c] = normal[i, c]
                Lo[2, c] = 0.0
                Up[2, c] = 0.0
            b[2] = normal[i, 0] * x[i + 1, 0] + normal[i, 1] * x[i + 1, 1] + normal[i, 2] * x[i + 1, 2]
            if use_curv:
                l = max(lam[i], 0.0)
                lS = l * shape[i]
                big = np.sqrt((lS * lS).sum())
                half = 0.5 * (wl + wr)
                if big > half:
                    lS *= half / big
                curv = np.zeros((2, 3))
                for r in range(2):
                    for c in range(3):
                        curv[r, c] = R[r, 0] * lS[0, c] + R[r, 1] * lS[1, c] + R[r, 2] * lS[2, c]
                for r in range(2):
                    for c in range(3):
                        D[r, c] -= curv[r, c]
                    b[r] -= curv[r, 0] * x[i + 1, 0] + curv[r, 1] * x[i + 1, 1] + curv[r, 2] * x[i + 1, 2]
        if i == 0:
            for r in range(3):
                b[r] -= Lo[r, 0] * x[0, 0] + Lo[r, 1] * x[0, 1] + Lo[r, 2] * x[0, 2]
        if i == N1 - 1:
            for r in range(3):
                b[r] -= Up[r, 0] * x[N1 + 1, 0] + Up[r, 1] * x[N1 + 1, 1] + Up[r, 2] * x[N1 + 1, 2]
        for r in range(3):
            row = 3 * i + r
            rhs[row] = b[r]
            for c in range(3):
                col = 3 * i + c
                ab[5 + row - col, col] = D[r, c]
                if i > 0:
                    col = 3 * (i - 1) + c
                    ab[5 + row - col, col] = Lo[r, c]
                if i < N1 - 1:
                    col = 3 * (i + 1) + c
                    ab[5 + row - col, col] = Up[r, c]
    return ab, rhs


def assemble_kkt(x, active, normal, lam, shape, w, use_curv):
    """Banded KKT system of one taut-path iteration (compiled when numba is available)."""
    if USE_NUMBA:
        return _assemble_kkt_nb(x, active, normal, lam, shape, w, use_curv)
    return _assemble_kkt_py(x, active, normal, lam, shape, w, use_curv)
