"""Closest points on triangles, vectorised over many (point, triangle) pairs.

The one numpy implementation of Ericson's Voronoi-region test (Real-Time Collision Detection
§5.1.5) shared by the wrapping obstacles and the frozen contact sets; the compiled loops in
``collision_proximity`` and ``wrapping._kernels`` follow the same regions.
"""

from __future__ import annotations

import numpy as np


def closest_point_on_triangles(
    p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Closest points (m, 3) on triangles (a, b, c) (m, 3 each) to points p (m, 3), and barycentrics (m, 3).

    Vectorised version of Ericson, Real-Time Collision Detection §5.1.5 (Voronoi regions).
    """
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = np.einsum("ij,ij->i", ab, ap)
    d2 = np.einsum("ij,ij->i", ac, ap)
    bp = p - b
    d3 = np.einsum("ij,ij->i", ab, bp)
    d4 = np.einsum("ij,ij->i", ac, bp)
    cp = p - c
    d5 = np.einsum("ij,ij->i", ab, cp)
    d6 = np.einsum("ij,ij->i", ac, cp)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    m = p.shape[0]
    bary = np.empty((m, 3))
    # interior (default)
    denom = va + vb + vc
    denom = np.where(np.abs(denom) > 0.0, denom, 1.0)
    v = vb / denom
    w = vc / denom
    bary[:, 0] = 1.0 - v - w
    bary[:, 1] = v
    bary[:, 2] = w
    done = np.zeros(m, bool)

    def _set(mask: np.ndarray, b0, b1, b2) -> None:
        sel = mask & ~done
        if sel.any():
            bary[sel, 0] = np.broadcast_to(b0, m)[sel]
            bary[sel, 1] = np.broadcast_to(b1, m)[sel]
            bary[sel, 2] = np.broadcast_to(b2, m)[sel]
            done[sel] = True

    with np.errstate(divide="ignore", invalid="ignore"):
        _set((d1 <= 0) & (d2 <= 0), 1.0, 0.0, 0.0)  # vertex a
        _set((d3 >= 0) & (d4 <= d3), 0.0, 1.0, 0.0)  # vertex b
        _set((d6 >= 0) & (d5 <= d6), 0.0, 0.0, 1.0)  # vertex c
        t_ab = np.clip(d1 / (d1 - d3), 0.0, 1.0)
        _set((vc <= 0) & (d1 >= 0) & (d3 <= 0), 1.0 - t_ab, t_ab, 0.0)  # edge ab
        t_ac = np.clip(d2 / (d2 - d6), 0.0, 1.0)
        _set((vb <= 0) & (d2 >= 0) & (d6 <= 0), 1.0 - t_ac, 0.0, t_ac)  # edge ac
        t_bc = np.clip((d4 - d3) / ((d4 - d3) + (d5 - d6)), 0.0, 1.0)
        _set((va <= 0) & ((d4 - d3) >= 0) & ((d5 - d6) >= 0), 0.0, 1.0 - t_bc, t_bc)  # edge bc
    q = bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:3] * c
    return q, bary
