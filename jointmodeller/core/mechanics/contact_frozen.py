"""A contact pair with its contact set frozen: the same force law on a fixed list of (bed vertex,
face of the other surface) pairs, for Newton's method in statics (seed 004 §3.4, "regenerate the
contact points each step").

:class:`~jointmodeller.core.mechanics.contact.ContactPair` regenerates its contact set at every
evaluation (nearest-vertex search, facing filter, search cut-offs), which makes its force only
piecewise continuous in the pose at the scale of Newton's finite differences and line searches.
Here every frozen bed vertex keeps the face it was found against; the closest point on the faces
around it (the proximity kernel itself), the interpolated smooth normal, the depth and
the MJM stiffness n_eff follow the pose continuously. When the regenerated set at a pose equals the
frozen one, both elements give the same forces (to rounding), so a residual solved with the frozen
element is the true residual. Statics only: at rest Hunt–Crossley and friction add nothing and are
left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jointmodeller.core.data import work_of
from jointmodeller.core.geometry.collision import relative_pose_B
from jointmodeller.core.geometry.triangles import closest_point_on_triangles
from jointmodeller.core.mechanics.contact import CANDIDATE_SLACK_FRACTION
from jointmodeller.core.mechanics.forces import BodyKinematics, apply_point_forces


def closest_on_faces(q: np.ndarray, verts: np.ndarray, faces: np.ndarray, face: np.ndarray) -> np.ndarray:
    """Barycentric coordinates (m, 3) of the closest points of q (m, 3) on the triangles ``face`` (m,)
    of the mesh (verts, faces)."""
    tri = verts[faces[face]]
    return closest_point_on_triangles(q, tri[:, 0], tri[:, 1], tri[:, 2])[1]


@dataclass
class FrozenBed:
    """One bed direction of a frozen pair: bed_body's vertices ``vertex`` (m,) against ``face`` (m,)
    of the other body's surface; scale: 0.5 when both beds carry springs."""

    bed_body: int
    other: int
    vertex: np.ndarray
    face: np.ndarray
    scale: float


class FrozenContactPair:
    """ForceElement: the force law of ``pair`` (a ContactPair) on a fixed contact set ``beds``.

    patch (default): each vertex's closest point is searched over the faces around the corners of
    its frozen face (the proximity kernel with those corners as nearest vertices, facing filter
    included), so a vertex may slide about one face width before the set must be regenerated;
    otherwise on the frozen face alone (Ericson's clamp).

    As :class:`ContactPair` does, evaluations near a reference pose skip the vertices that were
    farther above the surface than any vertex has moved since (depth along the normal is
    1-Lipschitz away from an open sheet's rim): Newton's finite differences and trial steps test
    the few hundred vertices near contact, not the whole anticipating band; the forces are the
    same as testing all of them."""

    def __init__(self, pair, beds: list[FrozenBed], patch: bool = True) -> None:
        self.pair = pair
        self.patch = bool(patch)
        self.a, self.b = pair.a, pair.b
        self.beds = beds

    @property
    def n_pairs(self) -> int:
        return int(sum(len(bd.vertex) for bd in self.beds))

    def key(self) -> frozenset:
        """The contact set as a hashable value (compare regenerated sets)."""
        return frozenset((bd.bed_body, int(v), int(f)) for bd in self.beds for v, f in zip(bd.vertex, bd.face))

    def _surfaces(self, bd: FrozenBed):
        p = self.pair
        return (p.surface_a, p.surface_b) if bd.bed_body == p.a else (p.surface_b, p.surface_a)

    def closest(self, kin: BodyKinematics, bd: FrozenBed) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(P_o, s_o, n_o) (m, 3) each, in the other body's frame: the bed vertices, their closest
        points on the other surface (searched as the class says) and the smooth unit normal there
        (zero where no facing face was found)."""
        p = self.pair
        bed, surf = self._surfaces(bd)
        R_ob, p_ob = relative_pose_B(kin.p_G, kin.R_GB, bd.bed_body, bd.other)
        P_o = bed.vertices_B[bd.vertex] @ R_ob.T + p_ob
        prox = surf.proximity
        m = len(bd.vertex)
        if self.patch:  # the faces around the frozen face's corners, as the proximity kernel does
            references: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = work_of(self, dict)
            key = (bd.bed_body, bd.other)
            ref = references.get(key)
            sel = None
            if ref is not None:
                moved = bed.max_displacement(R_ob, p_ob, ref[0], ref[1])
                if moved <= CANDIDATE_SLACK_FRACTION * p.penetration_limit:
                    sel = np.flatnonzero(ref[2] > -moved * (1.0 + 1e-9) - 1e-12)
            rows = np.arange(m) if sel is None else sel
            facing = bed.surface.normals_B[bd.vertex[rows]] @ R_ob.T
            s_k, n_k, d2, f, *_ = prox.search_near(P_o[rows], prox.faces[bd.face[rows]],
                                                   facing if surf.needs_facing else None, p.facing_cos)
            found = f >= 0
            s_o, n_o = P_o.copy(), np.zeros((m, 3))  # untested and not found: no spring
            s_o[rows[found]] = s_k[found]
            n_o[rows[found]] = n_k[found]
            if sel is None:  # a new reference: every vertex's depth along the normal (+ beneath)
                depth0 = np.full(m, np.inf)  # not found, or on an open sheet's rim: tested every time
                ok = found & ~surf.rim_face[np.maximum(f, 0)]
                depth0[ok] = ((s_k - P_o)[ok] * n_k[ok]).sum(axis=1)
                references[key] = (R_ob.copy(), p_ob.copy(), depth0)
        else:
            bary = closest_on_faces(P_o, prox.vertices, prox.faces, bd.face)
            fv = prox.faces[bd.face]
            s_o = np.einsum("mk,mki->mi", bary, prox.vertices[fv])
            n_o = np.einsum("mk,mki->mi", bary, prox.vertex_normals[fv])
            n_o /= np.linalg.norm(n_o, axis=1, keepdims=True)
        return P_o, s_o, n_o

    def springs(self, kin: BodyKinematics, bd: FrozenBed):
        """(points_G (m, 3), forces on the bed body (m, 3), depth (m,), active (m,) bool)."""
        p = self.pair
        bed, _ = self._surfaces(bd)
        P_o, s_o, n_o = self.closest(kin, bd)
        off_o = s_o - P_o
        dist = np.linalg.norm(off_o, axis=1)
        active = ((off_o * n_o).sum(axis=1) > 0.0) & (dist <= p.search_distance)
        R_Go = kin.R_GB[bd.other]
        offset_G = off_o @ R_Go.T
        n_G = n_o @ R_Go.T
        mid_G = kin.p_G[bd.other] + (0.5 * (s_o + P_o)) @ R_Go.T
        bed_area = bed.area[bd.vertex]
        if p.method == "foundation":  # along the smooth normal, as ContactPair
            depth = np.where(active, np.maximum((offset_G * n_G).sum(axis=1), 0.0), 0.0)
            k = bd.scale * p.modulus_per_area * bed_area
            force = np.where(active[:, None], (k * depth)[:, None] * n_G, 0.0)
        else:
            depth = np.where(active, np.maximum((offset_G * n_G).sum(axis=1), 0.0), 0.0)
            ramp = 0.05 * p.penetration_limit
            n_eff = max(float(np.minimum(depth / ramp, 1.0).sum()), 1.0)
            k = bd.scale * p.mjm_total_stiffness / n_eff
            lat = offset_G - (offset_G * n_G).sum(axis=1)[:, None] * n_G
            force = k * (depth[:, None] * n_G + p.lateral_ratio * lat)
            force[~active] = 0.0
        return mid_G, force, depth, active

    def accumulate(self, t: float, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray) -> None:
        """Add the frozen contact forces on a and b and their moments about each centre of mass."""
        for bd in self.beds:
            if len(bd.vertex) == 0:
                continue
            pts, f, _, active = self.springs(kin, bd)
            pts, f = pts[active], f[active]
            m = len(f)
            if m == 0:
                continue
            body = np.concatenate([np.full(m, bd.bed_body), np.full(m, bd.other)])
            apply_point_forces(kin, body, np.concatenate([pts, pts]), np.concatenate([f, -f]), force_G, torque_G)

    def max_depth(self, kin: BodyKinematics) -> float:
        out = 0.0
        for bd in self.beds:
            if len(bd.vertex):
                out = max(out, float(self.springs(kin, bd)[2].max()))
        return out
