"""Refine a triangle mesh to about a wanted number of vertices (for tests and benchmarks).

Whole-mesh midpoint subdivisions (x4 faces each) while they stay below the target, then one
subdivision of just enough of the largest faces to reach it. Subdividing only some faces leaves
T-junctions, harmless for point-based collision and for vertex-based springs.
"""

from __future__ import annotations

import numpy as np
import trimesh


def refine_mesh(vertices: np.ndarray, faces: np.ndarray, n_vertices: int) -> tuple[np.ndarray, np.ndarray]:
    """Subdivide (n, 3) vertices / (m, 3) faces until there are about ``n_vertices`` vertices."""
    v = np.asarray(vertices, float)
    f = np.asarray(faces, np.int64)
    while True:
        # a full subdivision adds about one vertex per edge, i.e. ~1.5 per face
        gain = 1.5 * len(f)
        if len(v) + gain > n_vertices:
            break
        v, f = trimesh.remesh.subdivide(v, f)
    missing = n_vertices - len(v)
    if missing > 0:
        tri = v[f]
        area = np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
        k = min(len(f), int(missing / 1.5 * 0.9))  # shared edges add fewer than 1.5 per face
        for _ in range(4):
            pick = np.argsort(-area, kind="stable")[:k]
            v2, f2 = trimesh.remesh.subdivide(v, f, face_index=pick)
            if len(v2) >= n_vertices or k == len(f):
                break
            k = min(len(f), int(k * (n_vertices - len(v)) / max(len(v2) - len(v), 1)))
        v, f = v2, f2
    return v, f
