"""Tissue wrapping over bone meshes (seed 004 §3.3): the MJM heuristic and the true taut path.

- :func:`mjm_path` — MJM's sector / convex-hull / centroid-path heuristic, faithfully.
- :class:`TautPathSolver` — the shortest path of a frictionless string over the bones, warm-started.
- :class:`WrapPath` — what both return: polyline, length, effective attachments, loads per unit tension.
"""

from jointmodeller.core.geometry.wrapping.edge_path import edge_path
from jointmodeller.core.geometry.wrapping.mjm_path import mjm_path
from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose, closest_over_obstacles
from jointmodeller.core.geometry.wrapping.path import FREE, PathSegment, WrapPath
from jointmodeller.core.geometry.wrapping.taut_path import TautOptions, TautPathSolver

__all__ = [
    "FREE",
    "edge_path",
    "mjm_path",
    "MeshObstacle",
    "PathSegment",
    "Pose",
    "TautOptions",
    "TautPathSolver",
    "WrapPath",
    "closest_over_obstacles",
]
