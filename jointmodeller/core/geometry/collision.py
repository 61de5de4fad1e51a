"""MJM's predictive "time to collision" search between two bones (seed 004 §3.4, §4.2, §5).

Given a moving body A and a target body B (both rigid, each mesh kept in its own body frame), and
the motion of A relative to B (a twist V + ω × p), find the first pair of vertices that would meet:

- only A's vertices whose normals face the motion (n_i·e_i > 0) and B's vertices facing back
  (n_j·(−e_i) > 0) are considered;
- a pair is on a collision path when the fly-past distance |l_ij × e_i| < tol, with
  tol = ρ·sqrt(area / number of points) of the target surface (ρ defaults to 5, eq. 56);
- the smallest l_ij·e_i (eq. 57) gives the colliding pair and its distance; distance / approach
  speed gives the time to collision (with rotation the points move at different speeds, so the
  pair with the earliest time l_ij·e_i / |V + ω × p_i| is taken; for a translation that is the
  smallest distance, exactly as in the paper);
- with rotation each point has its own direction e_i = unit(V + ω × p_i) (eq. 58); when the
  predicted rotation |ω|·T exceeds 10°, A is moved by half of the predicted motion and the search
  runs again (§4.2).

All searching happens in B's body frame: A's vertices are mapped there by the relative pose (the
query points move, the meshes and their grids never do). ``method="grid"`` uses the uniform grid
and compiled kernel of :mod:`collision_grid`; ``method="exhaustive"`` the O(n·m) reference of
:mod:`collision_exhaustive`. Both return the same pair and the same distance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from jointmodeller.core.geometry.collision_exhaustive import search_exhaustive
from jointmodeller.core.geometry.collision_grid import PointGrid, moving_candidates, search_grid
from jointmodeller.core.spatial_math import skew
from jointmodeller.core.tolerances import tol

#: default ρ of eq. (56)
DEFAULT_RHO = 5.0
#: the largest rotation for which a point's motion is taken as straight (§4.2)
MAX_LINEAR_ROTATION = math.radians(10.0)
#: grid cell size as a multiple of the point spacing sqrt(area / n)
GRID_CELL_SPACINGS = 5.0


def vertex_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Area-weighted unit vertex normals (n, 3) of a triangle mesh (zero for unused vertices)."""
    tri = vertices[faces]
    fn = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])  # length = 2 x area
    vn = np.zeros_like(vertices)
    for k in range(3):
        np.add.at(vn, faces[:, k], fn)
    norm = np.linalg.norm(vn, axis=1)
    return np.divide(vn, norm[:, None], out=np.zeros_like(vn), where=norm[:, None] > 0)


@dataclass(frozen=True, eq=False)
class CollisionSurface:
    """A body's collision mesh in its body frame B, with the spatial grid built once.

    vertices_B (n, 3) [m], faces (m, 3), normals_B (n, 3) unit, area [m²], grid: the vertices
    binned for the predictive search (used when this surface is the target).
    """

    vertices_B: np.ndarray
    faces: np.ndarray
    normals_B: np.ndarray
    area: float
    grid: PointGrid = field(repr=False)

    @classmethod
    def from_mesh(cls, vertices_B: np.ndarray, faces: np.ndarray, cell: float | None = None) -> "CollisionSurface":
        """Build from a mesh in body frame B: (n, 3) vertices [m], (m, 3) faces; ``cell`` grid size [m]."""
        v = np.ascontiguousarray(vertices_B, dtype=np.float64)
        f = np.ascontiguousarray(faces, dtype=np.int64)
        tri = v[f]
        area = float(0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1).sum())
        normals = vertex_normals(v, f)
        spacing = math.sqrt(area / len(v))
        grid = PointGrid.build(v, normals, cell if cell is not None else GRID_CELL_SPACINGS * spacing)
        return cls(vertices_B=v, faces=f, normals_B=normals, area=area, grid=grid)

    @property
    def n_points(self) -> int:
        return int(self.vertices_B.shape[0])

    @property
    def spacing(self) -> float:
        """Mean point spacing sqrt(area / number of points) [m]."""
        return math.sqrt(self.area / self.n_points)

    def tolerance(self, rho: float = DEFAULT_RHO) -> float:
        """Fly-past tolerance of eq. (56): ρ·sqrt(area / number of points) [m]."""
        return float(rho) * self.spacing


@dataclass(frozen=True)
class RelativeMotion:
    """Motion of body A relative to body B as a twist in B components.

    A point of A at r_B moves (as seen from B) with velocity V_B + omega_B × r_B.
    V_B (3,) [m/s] (the velocity of A's point at B's origin), omega_B (3,) [rad/s].
    """

    V_B: np.ndarray
    omega_B: np.ndarray

    def velocities(self, r_B: np.ndarray) -> np.ndarray:
        """Velocities (n, 3) of A's points r_B (n, 3) relative to B."""
        return np.asarray(self.V_B, float) + np.cross(np.asarray(self.omega_B, float), r_B)

    def flow(self, tau: float) -> tuple[np.ndarray, np.ndarray]:
        """(R, t): where the constant twist carries A's points after time tau: r -> R r + t."""
        w = np.asarray(self.omega_B, float) * tau
        v = np.asarray(self.V_B, float) * tau
        th = float(np.linalg.norm(w))
        W = skew(w)
        if th < tol.small_angle:
            a, b, c = 1.0 - th * th / 6, 0.5 - th * th / 24, 1.0 / 6 - th * th / 120
        else:
            a, b, c = math.sin(th) / th, (1 - math.cos(th)) / th**2, (th - math.sin(th)) / th**3
        W2 = W @ W
        R = np.eye(3) + a * W + b * W2
        J = np.eye(3) + b * W + c * W2
        return R, J @ v


def relative_motion_B(p_G: np.ndarray, R_GB: np.ndarray, v_G: np.ndarray, w_G: np.ndarray,
                      a: int, b: int) -> RelativeMotion:
    """Twist of body a relative to body b, in b's body frame, from the bodies' kinematics.

    p_G, v_G, w_G (n, 3), R_GB (n, 3, 3) as in ``BodyKinematics``.
    """
    R_bG = R_GB[b].T
    V = R_bG @ (v_G[a] - v_G[b] + np.cross(w_G[a], p_G[b] - p_G[a]))
    return RelativeMotion(V_B=V, omega_B=R_bG @ (w_G[a] - w_G[b]))


def motion_from_loads(
    force_G: np.ndarray, torque_G: np.ndarray, mass: np.ndarray, inertia_G: np.ndarray,
    p_G: np.ndarray, R_GB: np.ndarray, a: int, b: int,
) -> RelativeMotion:
    """Direction of motion from the net tissue loads (seed 004 §3.4): bodies at rest start moving with
    their accelerations, so the relative acceleration twist stands in for the velocity twist.

    force_G, torque_G (n, 3) net loads about each centre of mass; mass (n,) [kg] (inf for a fixed
    body); inertia_G (n, 3, 3) [kg m²] in G (ignored for fixed bodies).
    """
    acc = np.zeros_like(force_G, dtype=float)
    alpha = np.zeros_like(force_G, dtype=float)
    for k in (a, b):
        if np.isfinite(mass[k]):
            acc[k] = force_G[k] / mass[k]
            alpha[k] = np.linalg.solve(inertia_G[k], torque_G[k])
    return relative_motion_B(p_G, R_GB, acc, alpha, a, b)


@dataclass(frozen=True)
class CollisionPrediction:
    """Result of the predictive search.

    found: whether any pair lies on a collision path; i, j: vertex numbers on the moving and target
    meshes; distance [m]: l_ij·e_i at the last search; time [s]: total time to collision (the
    halved steps plus distance / approach speed); halvings: how often the motion was halved;
    R_BA, p_BA: the moving body's pose in the target frame at the last search (x_B = R_BA x_A + p_BA);
    point_i_B, point_j_B (3,): the pair in the target frame at the last search; direction_B (3,):
    e_i; rotation [rad]: |ω|·(distance / speed) of the last search.
    """

    found: bool
    i: int = -1
    j: int = -1
    distance: float = math.inf
    time: float = math.inf
    halvings: int = 0
    R_BA: np.ndarray | None = None
    p_BA: np.ndarray | None = None
    point_i_B: np.ndarray | None = None
    point_j_B: np.ndarray | None = None
    direction_B: np.ndarray | None = None
    rotation: float = 0.0


def candidate_rays(
    moving: CollisionSurface, R_BA: np.ndarray, p_BA: np.ndarray, motion: RelativeMotion,
    use_numba: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The moving body's vertices that face their own motion, in the target frame.

    Returns (points (k, 3), unit directions (k, 3), vertex numbers (k,), speeds (k,)), in the
    spatial order of the moving surface's own grid.
    """
    g = moving.grid
    return moving_candidates(g.points, g.normals, R_BA, p_BA, motion.V_B, motion.omega_B, g.index, use_numba)


def search_pair(
    moving: CollisionSurface, target: CollisionSurface, R_BA: np.ndarray, p_BA: np.ndarray,
    motion: RelativeMotion, tol: float, d_min: float = 0.0, method: str = "grid",
    use_numba: bool | None = None,
) -> tuple[float, int, int, np.ndarray, np.ndarray, float]:
    """One straight-line search at one pose: (d, i, j, point_i_B, e_i, speed_i); d = inf if none."""
    pa, ea, ia, speed = candidate_rays(moving, R_BA, p_BA, motion, use_numba)
    if method == "grid":
        g = moving.grid  # its box holds every vertex: a ball around it, carried into the target frame
        half = 0.5 * g.dims * g.cell
        ball = (R_BA @ (g.origin + half) + p_BA, float(np.linalg.norm(half)))
        _, i, j = search_grid(pa, ea, speed, ia, target.grid, tol, d_min, use_numba=use_numba, origin_ball=ball)
    elif method == "exhaustive":
        _, i, j = search_exhaustive(pa, ea, speed, ia, target.vertices_B, target.normals_B,
                                    np.arange(target.n_points), tol, d_min)
    else:
        raise ValueError(f"unknown collision search method {method!r}; use 'grid' or 'exhaustive'")
    if i < 0:
        return math.inf, -1, -1, np.full(3, np.nan), np.full(3, np.nan), np.nan
    r = int(np.flatnonzero(ia == i)[0])
    l0, l1, l2 = (float(target.vertices_B[j, k] - pa[r, k]) for k in range(3))
    d = l0 * float(ea[r, 0]) + l1 * float(ea[r, 1]) + l2 * float(ea[r, 2])
    return d, i, j, pa[r], ea[r], float(speed[r])


def predict_collision(
    moving: CollisionSurface,
    target: CollisionSurface,
    R_BA: np.ndarray,
    p_BA: np.ndarray,
    motion: RelativeMotion,
    rho: float = DEFAULT_RHO,
    method: str = "grid",
    d_min: float = 0.0,
    max_rotation: float = MAX_LINEAR_ROTATION,
    max_halvings: int = 40,
    tol: float | None = None,
    use_numba: bool | None = None,
) -> CollisionPrediction:
    """Time to collision of ``moving`` (pose R_BA, p_BA in the target's body frame) under ``motion``.

    tol defaults to the target's ρ·sqrt(area / n). Only pairs with l·e >= d_min count (0: ahead of
    the moving point). When |ω|·T > max_rotation the moving body is advanced by the rigid motion
    over T/2 and the search repeats (at most max_halvings times).
    """
    tol = target.tolerance(rho) if tol is None else float(tol)
    R = np.asarray(R_BA, float)
    p = np.asarray(p_BA, float)
    w_norm = float(np.linalg.norm(motion.omega_B))
    elapsed = 0.0
    for halvings in range(max_halvings + 1):
        d, i, j, pi, ei, speed = search_pair(moving, target, R, p, motion, tol, d_min, method, use_numba)
        if i < 0:
            return CollisionPrediction(found=False, halvings=halvings, R_BA=R, p_BA=p)
        T = d / speed
        rot = w_norm * T
        if rot <= max_rotation or halvings == max_halvings:
            return CollisionPrediction(
                found=True, i=i, j=j, distance=d, time=elapsed + T, halvings=halvings, R_BA=R, p_BA=p,
                point_i_B=pi, point_j_B=target.vertices_B[j].copy(), direction_B=ei, rotation=rot,
            )
        Rf, tf = motion.flow(0.5 * T)
        R, p = Rf @ R, Rf @ p + tf
        elapsed += 0.5 * T
    raise AssertionError("unreachable")  # pragma: no cover


def relative_pose_B(p_G: np.ndarray, R_GB: np.ndarray, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """Pose of body a in body b's frame: x_b = R_ba x_a + p_ba."""
    R_bG = R_GB[b].T
    return R_bG @ R_GB[a], R_bG @ (p_G[a] - p_G[b])
