"""Baseline: the shortest path along mesh edges (Dijkstra), which a true geodesic must beat.

A path restricted to edges zig-zags across the triangles, so it is typically 4–8 % long on a
regular mesh however fine the mesh is; the taut path is not limited that way.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle


def edge_path(obstacle: MeshObstacle, a_B: np.ndarray, b_B: np.ndarray) -> tuple[float, np.ndarray]:
    """Length [m] and vertex polyline (p, 3) in B of the edge path between the vertices nearest a_B, b_B.

    The straight pieces from a_B and b_B to those vertices are included in the length.
    """
    V = obstacle.vertices_B
    e = obstacle.edges
    w = np.linalg.norm(V[e[:, 0]] - V[e[:, 1]], axis=1)
    n = len(V)
    graph = coo_matrix((np.concatenate([w, w]), (np.concatenate([e[:, 0], e[:, 1]]),
                        np.concatenate([e[:, 1], e[:, 0]]))), shape=(n, n)).tocsr()
    _, ia = obstacle.tree.query(a_B)
    _, ib = obstacle.tree.query(b_B)
    dist, pred = dijkstra(graph, directed=False, indices=int(ia), return_predecessors=True)
    chain = [int(ib)]
    while chain[-1] != ia and pred[chain[-1]] >= 0:
        chain.append(int(pred[chain[-1]]))
    pts = np.vstack([a_B, V[chain[::-1]], b_B])
    return float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum()), pts
