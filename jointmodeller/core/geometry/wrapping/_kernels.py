"""Compiled closest-point kernel (numba) with the vectorised numpy version as the fallback.

The tests run both and compare them; ``USE_NUMBA`` switches the kernel off globally.
"""

from __future__ import annotations

import numpy as np

try:  # pragma: no cover - exercised when numba is installed (it is a core dependency)
    import numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    numba = None
    HAVE_NUMBA = False

USE_NUMBA = HAVE_NUMBA


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


if HAVE_NUMBA:

    @numba.njit(cache=True, fastmath=False)
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


def closest_candidates(P, cand, faces, V, closest_fn):
    """Closest point over candidate faces: q (m, 3), barycentrics (m, 3), face (m,), squared distance (m,)."""
    if USE_NUMBA and HAVE_NUMBA:
        return _closest_candidates_nb(
            np.ascontiguousarray(P, dtype=np.float64), np.ascontiguousarray(cand), faces, V
        )
    return _closest_candidates_py(P, cand, faces, V, closest_fn)
