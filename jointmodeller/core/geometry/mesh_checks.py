"""Topology checks of a triangle surface: open edges, non-manifold edges, winding, boundary loops.

Pure numpy, vectorised over edges. Used by mesh import (to warn) and by mass properties (to decide
whether the divergence theorem applies and, if not, how to close the surface).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SurfaceReport:
    """What the topology of a triangle surface is like.

    n_boundary_edges: edges used by one face (holes); n_nonmanifold_edges: edges used by > 2 faces;
    n_inconsistent_edges: interior edges whose two faces run it in the same direction (flipped
    winding); closed: every edge used by exactly two consistently wound faces.
    """

    n_vertices: int
    n_faces: int
    n_boundary_edges: int
    n_nonmanifold_edges: int
    n_inconsistent_edges: int

    @property
    def closed(self) -> bool:
        return self.n_boundary_edges == 0 and self.n_nonmanifold_edges == 0

    @property
    def consistently_wound(self) -> bool:
        return self.n_inconsistent_edges == 0

    def describe(self) -> list[str]:
        """Human-readable findings (empty when the surface is closed and consistently wound)."""
        out = []
        if self.n_boundary_edges:
            out.append(f"open surface: {self.n_boundary_edges} boundary edges (holes)")
        if self.n_nonmanifold_edges:
            out.append(f"non-manifold: {self.n_nonmanifold_edges} edges shared by more than two faces")
        if self.n_inconsistent_edges:
            out.append(f"inconsistent winding: {self.n_inconsistent_edges} edges with flipped neighbours")
        return out


def directed_edges(faces: np.ndarray) -> np.ndarray:
    """Directed edges (a->b) of every face, (3m, 2), in face order: (f0: 01, 12, 20), (f1: ...)."""
    f = np.asarray(faces, dtype=np.int64)
    return np.stack([f, np.roll(f, -1, axis=1)], axis=2).reshape(-1, 2)


def edge_keys(edges: np.ndarray) -> np.ndarray:
    """One int64 per (a, b) vertex pair (k, 2) so that 1-D np.unique can group edges quickly."""
    e = np.asarray(edges, dtype=np.int64)
    n = int(e.max()) + 1 if len(e) else 1
    return e[:, 0] * n + e[:, 1]


def edge_use_counts(faces: np.ndarray) -> np.ndarray:
    """(3, m): how many faces share each face's edges (0–1, 1–2, 2–0)."""
    f = np.asarray(faces, np.int64)
    edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    _, inverse, counts = np.unique(edge_keys(edges), return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)].reshape(3, len(f))


def is_closed(faces: np.ndarray) -> bool:
    """True when every edge of the triangle mesh is shared by exactly two faces (no boundary)."""
    if len(faces) == 0:
        return False
    return bool(np.all(edge_use_counts(faces) == 2))


def boundary_faces(faces: np.ndarray) -> np.ndarray:
    """(m,) bool: faces with an edge no other face shares (the rim of an open sheet)."""
    if len(faces) == 0:
        return np.zeros(0, dtype=bool)
    return (edge_use_counts(faces) == 1).any(axis=0)


def surface_report(faces: np.ndarray, n_vertices: int | None = None) -> SurfaceReport:
    """Count boundary, non-manifold and inconsistently wound edges of faces (m, 3)."""
    f = np.asarray(faces, dtype=np.int64)
    d = directed_edges(f)
    und = np.sort(d, axis=1)
    _, counts = np.unique(edge_keys(und), return_counts=True)
    n_boundary = int((counts == 1).sum())
    n_nonmanifold = int((counts > 2).sum())
    # a consistent manifold edge appears once as (a,b) and once as (b,a): count directed duplicates
    _, dcounts = np.unique(edge_keys(d), return_counts=True)
    n_inconsistent = int((dcounts > 1).sum())
    nv = int(f.max()) + 1 if n_vertices is None and len(f) else int(n_vertices or 0)
    return SurfaceReport(nv, len(f), n_boundary, n_nonmanifold, n_inconsistent)


def boundary_loops(faces: np.ndarray) -> list[np.ndarray] | None:
    """Ordered vertex loops along the holes of a surface, each running the way its faces run.

    Returns None when the boundary is not a set of simple loops (a vertex with more than one
    outgoing boundary edge, or an edge that cannot be chained), i.e. when capping would be ambiguous.
    """
    d = directed_edges(faces)
    und = np.sort(d, axis=1)
    _, inverse, counts = np.unique(edge_keys(und), return_inverse=True, return_counts=True)
    boundary = d[counts[inverse.reshape(-1)] == 1]
    if len(boundary) == 0:
        return []
    starts = boundary[:, 0]
    if len(np.unique(starts)) != len(starts):
        return None
    nxt = dict(zip(starts.tolist(), boundary[:, 1].tolist()))
    loops: list[np.ndarray] = []
    seen: set[int] = set()
    for s in starts.tolist():
        if s in seen:
            continue
        loop = [s]
        seen.add(s)
        v = nxt.get(s)
        while v != s:
            if v is None or v in seen:
                return None
            loop.append(v)
            seen.add(v)
            v = nxt.get(v)
        loops.append(np.asarray(loop, dtype=np.int64))
    return loops


def degenerate_faces(vertices: np.ndarray, faces: np.ndarray, rel_area: float = 1e-12) -> np.ndarray:
    """Mask (m,) of faces with a repeated vertex index or an area below rel_area × (mesh size)²."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    repeated = (f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 2] == f[:, 0])
    if len(v) == 0:
        return repeated
    scale = float(np.ptp(v, axis=0).max()) if len(v) > 1 else 0.0
    tri = v[f]
    area2 = np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    return repeated | (area2 <= 2.0 * rel_area * scale * scale)
