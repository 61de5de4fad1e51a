"""Bone surfaces as wrapping obstacles: a mesh fixed in a body frame plus spatial structures built once.

Bodies move rigidly, so queries transform the (few) path points into the body frame B instead of
transforming the (many) mesh vertices into G. Closest points come from a cKDTree over the vertices
and an exact point–triangle distance over the faces around the k nearest vertices.
"""

from __future__ import annotations

import numpy as np
import trimesh
from scipy.spatial import cKDTree

from jointmodeller.core.geometry.mesh_checks import edge_keys
from jointmodeller.core.geometry.sdf import SignedDistanceField
from jointmodeller.core.geometry.triangles import closest_point_on_triangles
from jointmodeller.core.geometry.wrapping import _kernels
from jointmodeller.core.tolerances import tol

#: faces kept per vertex in the padded vertex→face table (higher valences are reached via neighbours)
MAX_VALENCE = 24


GEOMETRY_CACHE_SIZE = 8
"""Surfaces whose derived structures (normals, rim, k-d tree, vertex→face table) are kept per process:
a project rebuilt for every study (the GUI's equilibrium, dynamics, sweeps) makes the same bone
surfaces again, and trimesh's checks and the tree cost ~0.1 s a bone."""

_geometry_cache: dict[bytes, tuple] = {}


def _surface_geometry(vertices_B: np.ndarray, faces: np.ndarray) -> tuple:
    """The structures MeshObstacle builds from a surface, shared between obstacles with the
    same vertices and faces (keyed by their bytes' digest; at most GEOMETRY_CACHE_SIZE kept)."""
    import hashlib

    v = np.ascontiguousarray(vertices_B, dtype=float)
    f = np.ascontiguousarray(faces, dtype=np.int64)
    h = hashlib.blake2b(digest_size=20)
    for a in (v, f):
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    key = h.digest()
    hit = _geometry_cache.get(key)
    if hit is not None:
        return hit
    mesh = trimesh.Trimesh(v, f, process=False)
    if mesh.is_watertight and mesh.is_winding_consistent and mesh.volume < 0.0:
        mesh.invert()  # a closed surface wound inside out: make its normals point out of the bone
    vertices = np.ascontiguousarray(mesh.vertices, dtype=float)
    tri = np.ascontiguousarray(mesh.faces, dtype=np.int64)
    # vertices on the rim of an open surface (edges used by one face only)
    e_sorted = np.sort(mesh.edges, axis=1)
    _, first, counts = np.unique(edge_keys(e_sorted), return_index=True, return_counts=True)
    boundary = np.zeros(len(mesh.vertices), dtype=np.bool_)
    boundary[e_sorted[first[counts == 1]].reshape(-1)] = True
    # shared by every obstacle of this surface: nothing writes into them (the compiled kernels take
    # them as they are, so they are not marked read-only, which would compile another specialization)
    out = (vertices, tri, np.ascontiguousarray(mesh.face_normals), np.ascontiguousarray(mesh.vertex_normals),
           np.ascontiguousarray(mesh.edges_unique, dtype=np.int64), bool(mesh.is_watertight), boundary,
           float(np.linalg.norm(np.ptp(vertices, axis=0))), cKDTree(vertices), vertices.min(axis=0),
           vertices.max(axis=0), MeshObstacle._vertex_face_table(tri, len(vertices)), mesh)
    if len(_geometry_cache) >= GEOMETRY_CACHE_SIZE:
        _geometry_cache.pop(next(iter(_geometry_cache)))
    _geometry_cache[key] = out
    return out


class MeshObstacle:
    """A triangle surface fixed in body ``body``'s frame B, ready for closest-point and edge queries.

    vertices_B (n, 3) [m], faces (f, 3) int. Normals point out of the bone; an open surface's
    "outside" is the side its face normals point to, and a point whose closest feature is on its
    rim counts as outside (a string may pass round the edge of a sheet). Structures are built
    once and reused.
    """

    def __init__(self, vertices_B: np.ndarray, faces: np.ndarray, body: int, name: str = "",
                 sdf: SignedDistanceField | None = None) -> None:
        geometry = _surface_geometry(np.asarray(vertices_B, float), np.asarray(faces, np.int64))
        self.body = int(body)
        self.name = name
        (self.vertices_B, self.faces, self.face_normals_B, self.vertex_normals_B, self.edges, self.is_closed,
         self.boundary_vertex, self.size, self.tree, self.box_lo, self.box_hi, self.vertex_faces, self._mesh) = geometry
        #: points farther than this outside the bounding box skip the exact query (they are free)
        self.far_margin = 0.05 * self.size
        #: the surface's signed distance field in B (optional): a cheap bound that lets
        #: closest_over_obstacles skip exact queries of points clearly away from this obstacle
        self.sdf: SignedDistanceField | None = None
        if sdf is not None:
            self.use_field(sdf)

    def use_field(self, sdf: SignedDistanceField) -> None:
        """Take ``sdf`` (the field of this obstacle's own vertices_B and faces, which may have been
        turned outside out above) as the bound for closest_over_obstacles; ignored for an open surface,
        whose field changes sign past its rim."""
        self.sdf = sdf if sdf.closed and self.is_closed else None

    @staticmethod
    def _vertex_face_table(faces: np.ndarray, n_vertices: int) -> np.ndarray:
        """Padded (n, k) table of faces around each vertex; padding repeats the first face."""
        vf = np.repeat(np.arange(len(faces)), 3)
        vv = faces.reshape(-1)
        order = np.argsort(vv, kind="stable")
        vv, vf = vv[order], vf[order]
        counts = np.bincount(vv, minlength=n_vertices)
        k = int(min(max(counts.max(initial=1), 1), MAX_VALENCE))
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(len(vv)) - start[vv]
        table = np.full((n_vertices, k), -1, dtype=np.int64)
        keep = slot < k
        table[vv[keep], slot[keep]] = vf[keep]
        first = np.where(table[:, 0] >= 0, table[:, 0], 0)
        table = np.where(table >= 0, table, first[:, None])
        return table

    @property
    def trimesh(self) -> trimesh.Trimesh:
        """The mesh in B (for ray casts and inside tests in checks)."""
        return self._mesh

    def closest(self, points_B: np.ndarray, k: int = 4, shape: bool = False):
        """Closest surface points to points_B (m, 3).

        Returns closest_B (m, 3), outward unit normal_B (m, 3) at the closest point (vertex normals
        interpolated, so the surface looks smooth), signed distance (m,) (negative inside), the
        face index (m,) and, with ``shape``, the shape operator dn/dx (m, 3, 3) of the interpolated
        normal field (tangential part; its eigenvalues are the principal curvatures, > 0 convex).
        Exact when the closest face touches one of the k nearest vertices. Points more than
        ``far_margin`` outside the bounding box get their box distance (a lower bound) instead.
        """
        p = np.asarray(points_B, float).reshape(-1, 3)
        m = p.shape[0]
        # far outside the bounding box nothing can touch: report the box distance (a lower bound
        # of the true distance) and skip the k-d tree, whose searches are slow far from a surface
        gap = np.maximum(np.maximum(self.box_lo - p, p - self.box_hi), 0.0)
        box_d = np.sqrt(np.einsum("ij,ij->i", gap, gap))
        far = box_d > self.far_margin
        if far.any():
            near = ~far
            q = p.copy()
            n = np.zeros((m, 3))
            n[:, 0] = 1.0
            sd = box_d.copy()
            face = np.zeros(m, np.int64)
            S = np.zeros((m, 3, 3))
            if near.any():
                res = self.closest(p[near], k=k, shape=True)
                q[near], n[near], sd[near], face[near], S[near] = res
            return (q, n, sd, face, S) if shape else (q, n, sd, face)
        k = min(k, len(self.vertices_B))
        _, vidx = self.tree.query(p, k=k)
        vidx = np.asarray(vidx).reshape(m, k)
        cand = self.vertex_faces[vidx].reshape(m, -1)
        if _kernels.USE_NUMBA:
            q, n, sd, face, S = _kernels.closest_full(
                p, cand, self.faces, self.vertices_B, self.vertex_normals_B, self.face_normals_B,
                self.boundary_vertex,
            )
            return (q, n, sd, face, S) if shape else (q, n, sd, face)
        q, bary, face, d2 = _kernels.closest_candidates(p, cand, self.faces, self.vertices_B,
                                                        closest_point_on_triangles)
        tri = self.faces[face]
        n = np.einsum("mi,mij->mj", bary, self.vertex_normals_B[tri])
        n_len = np.linalg.norm(n, axis=1)
        bad = n_len < tol.zero
        if bad.any():
            n[bad] = self.face_normals_B[face[bad]]
            n_len[bad] = 1.0
        n /= n_len[:, None]
        diff = p - q
        dist = np.sqrt(d2)
        # sign: which side of the surface the point is on; the face normal decides in the face
        # interior, the interpolated normal on edges and vertices (a pseudo-normal substitute)
        s_face = np.einsum("ij,ij->i", diff, self.face_normals_B[face])
        s_smooth = np.einsum("ij,ij->i", diff, n)
        interior = np.all(bary > tol.barycentric, axis=1)
        side = np.where(interior, s_face, s_smooth)
        # closest on the rim of an open surface: the string passes round it, never inside
        rim = np.all((bary <= tol.barycentric) | self.boundary_vertex[tri], axis=1) & ~interior
        side = np.where(rim, 1.0, side)
        sd = np.where(side < 0.0, -dist, dist)
        if not shape:
            return q, n, sd, face
        return q, n, sd, face, self._shape_operator(tri, face, n, n_len)

    def _shape_operator(self, tri: np.ndarray, face: np.ndarray, n: np.ndarray, n_len: np.ndarray) -> np.ndarray:
        """dn/dx (m, 3, 3) of the barycentric interpolation of vertex normals over faces tri (m, 3)."""
        V = self.vertices_B
        P = V[tri]  # (m, 3 corners, 3)
        nf = self.face_normals_B[face]
        area2 = np.linalg.norm(np.cross(P[:, 1] - P[:, 0], P[:, 2] - P[:, 0]), axis=1)
        area2 = np.where(area2 > 0.0, area2, 1.0)
        # gradient of barycentric k: nf x (edge opposite k) / (2A), edges taken counter-clockwise
        grads = np.stack(
            [np.cross(nf, P[:, 2] - P[:, 1]), np.cross(nf, P[:, 0] - P[:, 2]), np.cross(nf, P[:, 1] - P[:, 0])],
            axis=1,
        ) / area2[:, None, None]
        N = self.vertex_normals_B[tri]  # (m, 3 corners, 3)
        J = np.einsum("mki,mkj->mij", N, grads) / n_len[:, None, None]
        proj = np.eye(3)[None] - n[:, :, None] * n[:, None, :]
        S = proj @ J @ proj
        return 0.5 * (S + np.transpose(S, (0, 2, 1)))


class Pose:
    """Rigid placement of body frames: p_G (n, 3) origins and R_GB (n, 3, 3) rotations."""

    def __init__(self, p_G: np.ndarray, R_GB: np.ndarray) -> None:
        self.p_G = np.asarray(p_G, float).reshape(-1, 3)
        self.R_GB = np.asarray(R_GB, float).reshape(-1, 3, 3)

    @classmethod
    def identity(cls, n: int) -> "Pose":
        return cls(np.zeros((n, 3)), np.tile(np.eye(3), (n, 1, 1)))

    @classmethod
    def from_kinematics(cls, kin) -> "Pose":
        return cls(kin.p_G, kin.R_GB)

    def to_body(self, body: int, x_G: np.ndarray) -> np.ndarray:
        """Points x_G (m, 3) in body frame B of ``body``."""
        return (x_G - self.p_G[body]) @ self.R_GB[body]

    def to_global(self, body: int, x_B: np.ndarray) -> np.ndarray:
        """Points x_B (m, 3) of ``body`` in G."""
        return x_B @ self.R_GB[body].T + self.p_G[body]

    def dir_to_global(self, body: int, d_B: np.ndarray) -> np.ndarray:
        return d_B @ self.R_GB[body].T


def closest_over_obstacles(
    obstacles: list[MeshObstacle], pose: Pose, x_G: np.ndarray, k: int = 4, facets: bool = False,
    exact_below: float | None = None, exact_where: np.ndarray | None = None, shape: bool = True,
):
    """The nearest-by-signed-distance obstacle surface for each point x_G (m, 3).

    Returns closest_G (m, 3), normal_G (m, 3), signed distance (m,), obstacle index (m,),
    closest point in that obstacle's body frame (m, 3) and shape operator in G (m, 3, 3).
    facets: report the flat faces' normals (and zero curvature) instead of the smooth normal field.

    exact_below [m]: with obstacles that carry a distance field (``MeshObstacle.sdf``), a point whose
    field bound shows it farther than exact_below from an obstacle skips that obstacle's exact query
    and gets the bound (value − error_bound, at most its true signed distance) as its distance there
    (its point, normal and curvature are placeholders); points in ``exact_where`` (m,) bool are always
    exact. Every point within exact_below of an obstacle, and every point in exact_where, gets the
    same exact results as without the field (per-point queries), so tests such as ``sd < t`` with
    t ≤ exact_below decide alike.

    shape: False leaves the shape operators zero (callers that use no curvature save their frame
    change). With the compiled kernels each obstacle costs one frame change, its field's lookup, one
    k-d tree query and two kernel calls (:func:`_kernels.exact_rows`, :func:`_kernels.merge_obstacle`:
    the same per-point arithmetic as :meth:`MeshObstacle.closest`, which the numpy path uses).
    """
    if _kernels.USE_NUMBA and FUSED:
        return _closest_fused(obstacles, pose, x_G, k, facets, exact_below, exact_where, shape)
    m = x_G.shape[0]
    best_sd = np.full(m, np.inf)
    c_G = np.zeros((m, 3))
    n_G = np.zeros((m, 3))
    c_B = np.zeros((m, 3))
    S_G = np.zeros((m, 3, 3))
    which = np.full(m, -1, dtype=np.int64)
    for j, ob in enumerate(obstacles):  # loop over bodies, vectorised over points
        xb = pose.to_body(ob.body, x_G)
        if exact_below is not None and ob.sdf is not None:
            q, n, sd, face, S = _closest_bounded(ob, xb, k, exact_below, exact_where)
        else:
            q, n, sd, face, S = ob.closest(xb, k=k, shape=True)
        if facets:  # the polyhedron itself: flat faces, no curvature inside them
            exact = face >= 0
            n = np.where(exact[:, None], ob.face_normals_B[np.maximum(face, 0)], n)
            S = np.zeros_like(S)
        better = sd < best_sd
        if better.any():
            R = pose.R_GB[ob.body]
            best_sd[better] = sd[better]
            which[better] = j
            c_B[better] = q[better]
            c_G[better] = pose.to_global(ob.body, q[better])
            n_G[better] = pose.dir_to_global(ob.body, n[better])
            if shape:
                S_G[better] = R @ S[better] @ R.T
    return c_G, n_G, best_sd, which, c_B, S_G


#: closest_over_obstacles takes the compiled per-obstacle kernels when numba runs (tests turn it off
#: to compare them with the per-obstacle numpy glue around MeshObstacle.closest)
FUSED = True


def _closest_fused(obstacles: list[MeshObstacle], pose: Pose, x_G: np.ndarray, k: int, facets: bool,
                   exact_below: float | None, exact_where: np.ndarray | None, shape: bool):
    """closest_over_obstacles with the compiled kernels: the same results, bit for bit."""
    m = x_G.shape[0]
    best_sd = np.full(m, np.inf)
    c_G = np.zeros((m, 3))
    n_G = np.zeros((m, 3))
    c_B = np.zeros((m, 3))
    S_G = np.zeros((m, 3, 3))
    which = np.full(m, -1, dtype=np.int64)
    where = None if exact_where is None else np.ascontiguousarray(exact_where, dtype=np.bool_)
    for j, ob in enumerate(obstacles):
        xb = np.ascontiguousarray(pose.to_body(ob.body, x_G))
        lower = None
        if exact_below is not None and ob.sdf is not None:
            lower = ob.sdf.value(xb) - ob.sdf.error_bound
        sd = np.empty(m)
        rows, P, kind = _kernels.exact_rows(xb, lower, exact_below, where, ob.box_lo, ob.box_hi, ob.far_margin, sd)
        kq = min(k, len(ob.vertices_B))
        if len(rows):
            vidx = np.asarray(ob.tree.query(P, k=kq)[1]).reshape(len(rows), kq)
        else:
            vidx = np.zeros((0, kq), np.int64)
        bi, q, n, S = _kernels.merge_obstacle(xb, kind, sd, rows, P, vidx, ob, facets, shape, j, best_sd, which, c_B)
        if len(bi):
            c_G[bi] = pose.to_global(ob.body, q)
            n_G[bi] = pose.dir_to_global(ob.body, n)
            if shape and not facets:
                R = pose.R_GB[ob.body]
                S_G[bi] = R @ S @ R.T
    return c_G, n_G, best_sd, which, c_B, S_G


def _closest_bounded(ob: MeshObstacle, xb: np.ndarray, k: int, exact_below: float,
                     exact_where: np.ndarray | None):
    """``ob.closest(xb, shape=True)`` where the obstacle's field cannot rule a point out (bound ≤
    exact_below) or exact_where says so; elsewhere the field's lower bound as the distance, the point
    itself as its closest point, a placeholder normal (+x), zero curvature and face −1 (callers use
    points, normals and curvature only where the distance says contact)."""
    assert ob.sdf is not None
    lower = ob.sdf.value(xb) - ob.sdf.error_bound
    need = lower <= exact_below
    if exact_where is not None:
        need |= np.asarray(exact_where, bool)
    if need.all():
        return ob.closest(xb, k=k, shape=True)
    m = len(xb)
    q = np.array(xb, dtype=float)
    n = np.zeros((m, 3))
    n[:, 0] = 1.0
    sd = lower
    face = np.full(m, -1, np.int64)
    S = np.zeros((m, 3, 3))
    idx = np.flatnonzero(need)
    if len(idx):
        q[idx], n[idx], sd[idx], face[idx], S[idx] = ob.closest(xb[idx], k=k, shape=True)
    return q, n, sd, face, S
