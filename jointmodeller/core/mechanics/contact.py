"""Cartilage contact between two bones: a force element per contact pair (seed 004 §3.4, seed 003 §5).

Each evaluation regenerates the contact set: the spring-bed vertices of one body (in its body
frame) are mapped into the other body's frame and every vertex beneath the other surface becomes a
contact point, with its closest point, smooth surface normal and penetration depth
(:mod:`jointmodeller.core.geometry.collision_proximity`). Two force laws, chosen per pair:

- ``"foundation"`` (elastic foundation, seed 003 §5.2): a bed of springs on the cartilage mesh,
  stiffness k_i = K·A_i with K = (1−ν)E / ((1+ν)(1−2ν)h) and A_i the vertex's share of the mesh
  area; force k_i x_i along the smooth surface normal at the vertex's closest point, x_i the depth
  along that normal (so the force vanishes continuously where a vertex leaves contact), Hunt–Crossley
  dissipation f_e (1 + 1.5 c ẋ) and optional Stribeck friction.
- ``"mjm"`` (MJM cartilage springs, seed 004 §3.4): springs at the contact points, stiffness
  normal to the surface with lateral stiffness ``lateral_ratio`` (0.001) of it; the spring
  stiffness is recomputed every evaluation from the number of contact points, k_i = K_tot / n,
  with K_tot = design_load / (max_penetration_fraction · h), so that the mean penetration under the
  design load is max_penetration_fraction of the cartilage thickness. n counts each point with a
  weight rising smoothly from 0 (just touching) to 1, so the force stays continuous in the pose.

Both apply equal and opposite forces at the midpoint between the vertex and its closest point, so
the pair conserves momentum and angular momentum. The per-evaluation :class:`ContactResult`
(points, pressures, total force, centre of pressure) feeds the viewport's pressure map and plots.

The per-point work is compiled: the "field" geometry's search (core.geometry.field_faces) and both
geometries' springs and the force law (core.mechanics.contact_field_kernels); ``accumulate`` without friction
scatters the forces straight into the sums (no ContactResult: :attr:`ContactPair.last_result` makes
it from the latest kinematics when asked).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from jointmodeller.core.data import work_of
from jointmodeller.core.geometry.collision import (
    DEFAULT_RHO,
    CollisionPrediction,
    CollisionSurface,
    RelativeMotion,
    predict_collision,
    relative_motion_B,
    relative_pose_B,
)
from jointmodeller.core.geometry.collision_proximity import CERTIFIED_FACES, SurfaceProximity
from jointmodeller.core.geometry.field_faces import HeldFaces, check_field_faces, search_field_faces
from jointmodeller.core.geometry.mesh_checks import boundary_faces, is_closed
from jointmodeller.core.geometry.sdf import SignedDistanceField, default_spacing
from jointmodeller.core.mechanics.contact_field_kernels import (
    accumulate_spring_forces,
    bed_points,
    exact_springs,
    kinematics_arrays,
    record_certificates,
    searched_springs,
    spring_forces,
)
from jointmodeller.core.mechanics.contact_laws import StribeckFriction, foundation_modulus
from jointmodeller.core.mechanics.forces import BodyKinematics, apply_point_forces

METHODS = ("foundation", "mjm")
#: how depths and normals are found: "exact" closest points on the mesh (SurfaceProximity), or
#: "field": the faces named by the other surface's signed distance field's nodes round each bed vertex
#: (the face field, core.geometry.field_faces), measured on as the exact search measures
GEOMETRIES = ("exact", "field")
#: field geometry: candidates are renewed once some bed vertex moved by this fraction of the
#: penetration limit (a renewal is one field lookup per bed vertex, so it can be small; the
#: candidates are the vertices within twice it of the surface, a congruent joint's thin gap)
FIELD_SLACK_FRACTION = 0.05
#: field geometry: a renewal of the candidates looks up only the bed vertices within 2·(1 + this)
#: slacks of the surface where the bodies last moved by more than this many slacks (ContactPair._field_candidates)
FIELD_NEAR_FACTOR = 8.0
#: candidate bed vertices are reused until some vertex moved by this fraction of the penetration limit
CANDIDATE_SLACK_FRACTION = 0.25
#: the exact geometry reuses certified closest faces (ClosestCertificates); tests switch it off to
#: compare with every face searched afresh
CERTIFIED_CLOSEST = True
#: a certificate's bounds are shortened by this much [m] against rounding (distances of bodies some
#: decimetres across round at ~1e-17 m)
CERTIFICATE_SLACK_M = 1e-12
#: certificates kept per bed vertex (ClosestCertificates): Radau's three stages, visited in turn
CERTIFICATE_SLOTS = 3
BEDS = ("a", "b", "both")
#: a face of the other surface counts for a bed vertex only when its normal · the vertex normal is
#: below −FACING_COS (see SurfaceProximity.closest)
FACING_COS = 0.0


def contact_field_spacing(vertices_B: np.ndarray, faces: np.ndarray) -> float:
    """Lattice spacing h [m] of a contact surface's field: core.geometry.sdf's default (half the mean
    edge, at most 1 mm)."""
    return default_spacing(np.asarray(vertices_B, float), np.asarray(faces, np.int64))


#: a contact field measures depths down to this many penetration limits (deeper, the depth saturates
#: at the band: a run that deep has failed anyway, and a band as deep as the whole layer costs a
#: build (cubic in the band) of tens of seconds)
FIELD_DEPTH_LIMITS = 2.0


def contact_field_band_cells(spacing: float, depth: float) -> float:
    """Band half-width of a contact field, in cells: ``depth`` [m] (the deepest penetration measured,
    :meth:`ContactPair.field_depth`) inside the band's accurate part (|d| ≤ w − h√3,
    sdf.accurate_band), so depths are interpolated, not clamped, down to it."""
    return float(max(4.0, np.ceil(depth / spacing + np.sqrt(3.0)) + 1.0))


def contact_field(vertices_B: np.ndarray, faces: np.ndarray, depth: float) -> SignedDistanceField:
    """The signed distance field of a contact surface for the "field" geometry, accurate down to
    ``depth`` [m] (no disk cache: the app layer reads the same field from io.sdf_cache with
    these parameters)."""
    h = contact_field_spacing(vertices_B, faces)
    return SignedDistanceField.build(vertices_B, faces, spacing=h, band_cells=contact_field_band_cells(h, depth),
                                     keep_faces=True)


def _snapshot(kin: BodyKinematics) -> BodyKinematics:
    """A copy of ``kin``'s arrays (the caller may reuse its arrays after the evaluation)."""
    return BodyKinematics(kin.p_G.copy(), kin.R_GB.copy(), kin.v_G.copy(), kin.w_G.copy(),
                          None if kin.q is None else kin.q.copy())


def vertex_areas(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(n,) each vertex's share of the mesh area: a third of the area of every face around it [m²]."""
    tri = vertices[faces]
    area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    out = np.zeros(len(vertices))
    for k in range(3):
        np.add.at(out, faces[:, k], area / 3.0)
    return out


@dataclass(frozen=True, eq=False)
class ContactSurface:
    """One body's contact mesh in its body frame B with everything built once.

    surface: the collision surface (vertices_B (n, 3), normals, predictive-search grid);
    proximity: closest-point structures; area (n,) vertex areas [m²].
    """

    surface: CollisionSurface
    proximity: SurfaceProximity = field(repr=False)
    area: np.ndarray = field(repr=False)
    closed: bool = True
    sdf: SignedDistanceField | None = field(default=None, repr=False)
    """The surface's signed distance field in B, for the "field" geometry (None: not built)."""

    @classmethod
    def from_mesh(cls, vertices_B: np.ndarray, faces: np.ndarray) -> "ContactSurface":
        surface = CollisionSurface.from_mesh(vertices_B, faces)
        prox = SurfaceProximity.build(surface.vertices_B, surface.faces, grid=surface.grid,
                                      vertex_normals=surface.normals_B)
        return cls(surface, prox, vertex_areas(surface.vertices_B, surface.faces), is_closed(surface.faces))

    def with_sdf(self, sdf: SignedDistanceField) -> "ContactSurface":
        """This surface with its signed distance field (built by :func:`contact_field` or read from
        the disk cache, io.sdf_cache, with the same spacing and band, and its nodes' closest faces:
        ValueError without them)."""
        check_field_faces(sdf, self.proximity)
        return replace(self, sdf=sdf)

    @cached_property
    def rim_face(self) -> np.ndarray:
        """(m,) bool: faces on the surface's boundary. A point whose closest point lies on the rim of
        an open sheet can change the sign of its depth without coming closer (it passes round the
        edge), so the reference-pose skip never skips such points."""
        return boundary_faces(self.surface.faces)

    @cached_property
    def centre_B(self) -> np.ndarray:
        """Centre of the vertices' bounding box in B (3,)."""
        v = self.vertices_B
        return 0.5 * (v.min(axis=0) + v.max(axis=0))

    @cached_property
    def radius_B(self) -> float:
        """Largest distance of a vertex from ``centre_B`` [m]."""
        return float(np.sqrt(((self.vertices_B - self.centre_B) ** 2).sum(axis=1).max()))

    def max_displacement(self, R1: np.ndarray, p1: np.ndarray, R0: np.ndarray, p0: np.ndarray) -> float:
        """Upper bound on how far any vertex moves between the poses x -> R0 x + p0 and R1 x + p1 [m]:
        the centre's displacement plus the rotation change times the radius about it. (About the body
        origin instead, the bound would grow with how far the origins lie from the joint: with a
        forearm whose origin is its centre of mass 18 cm out, rotations about the elbow counted
        about five times over, renewing the caches below far too often.)"""
        dR = R1 - R0
        return float(np.linalg.norm(dR) * self.radius_B + np.linalg.norm(dR @ self.centre_B + (p1 - p0)))

    @property
    def needs_facing(self) -> bool:
        """Closed (thin-shell) surfaces are searched for faces turned towards the query point only; an
        open articular sheet has no far side to mistake, so any nearest face counts (a cheaper search)."""
        return self.closed

    @property
    def vertices_B(self) -> np.ndarray:
        return self.surface.vertices_B


@dataclass(frozen=True)
class ContactResult:
    """One contact pair at one evaluation.

    a, b: body indices; bed_body (m,), bed_vertex (m,): which body's bed vertex made each contact
    point; points_G (m, 3) contact points; normals_G (m, 3) unit contact directions (the way the
    force pushes body a); depth (m,) penetration [m]; pressure (m,) normal force / vertex area [Pa];
    force_G (m, 3) forces on body a (body b gets the opposite); total_force_G (3,) on a;
    centre_of_pressure_G (3,) normal-force weighted mean of the points (nan when no contact);
    penetration_limit [m]: max_penetration_fraction × thickness.
    """

    a: int
    b: int
    bed_body: np.ndarray
    bed_vertex: np.ndarray
    points_G: np.ndarray
    normals_G: np.ndarray
    depth: np.ndarray
    pressure: np.ndarray
    force_G: np.ndarray
    total_force_G: np.ndarray
    centre_of_pressure_G: np.ndarray
    penetration_limit: float

    @property
    def n_points(self) -> int:
        return int(self.depth.shape[0])

    @property
    def max_penetration(self) -> float:
        return float(self.depth.max()) if self.n_points else 0.0

    @property
    def normal_force(self) -> float:
        """Sum of the normal-force magnitudes [N]."""
        return float((self.force_G * self.normals_G).sum()) if self.n_points else 0.0


@dataclass
class _Springs:
    """Active springs of one bed direction, in G (internal)."""

    bed_body: int
    bed_vertex: np.ndarray
    point_G: np.ndarray
    normal_G: np.ndarray  # unit, pushes the bed body out of the other
    depth: np.ndarray
    stiffness: np.ndarray  # (m,) normal stiffness [N/m]
    lateral: float  # lateral stiffness ratio (0 for the foundation: its force is along normal_G)
    offset_G: np.ndarray  # closest point − bed vertex (m, 3)
    area: np.ndarray
    face: np.ndarray  # (m,) face of the other surface holding each closest point


@dataclass
class ClosestCertificates:
    """Bed vertices whose closest face on the other surface is certified near where it was searched
    (exact geometry, no facing filter). A search at point_o[v, c] (the other body's frame) leaves
    bounds there (``core.geometry.collision_proximity.certificate_bounds``, each less
    CERTIFICATE_SLACK_M): every surface vertex but its nearest near_v[v, c, :] lay at least next_v away,
    every face searched but face[v, c] at least reach away, and every one but face_k[v, c, :] (its
    nearest few) at least reach_k away. Distance to each vertex and face being 1-Lipschitz, a vertex
    moved by m since keeps the search's answer while its nearest vertices stay nearer than
    next_v − m and face[v, c] (or the nearest of face_k) nearer than reach − m (reach_k − m), measured
    where it is now (``SurfaceProximity.closest_certified``): the same bits as a full search. A vertex
    beneath a face near its edge or corner has a tiny single-face reach, as the faces round it are
    nearly as near, but a large one past its few nearest.

    A certificate is a fact of the geometry, true wherever it was made, so each vertex keeps its
    last CERTIFICATE_SLOTS (slot c, written in turn, ``cursor``): an implicit Runge–Kutta method
    evaluates its stages at several times of a step in turn, and one certificate per vertex would be
    overwritten at each before the next iteration came back to it."""

    point_o: np.ndarray  # (n, slots, 3): a vertex's slots side by side in memory
    face: np.ndarray  # (n, slots); −1: none
    reach: np.ndarray  # (n, slots) [m]; −inf: none
    face_k: np.ndarray  # (n, slots, CERTIFIED_FACES)
    face_k_d: np.ndarray  # (n, slots, CERTIFIED_FACES) [m]: their distances there, less the slack
    reach_k: np.ndarray  # (n, slots) [m]; −inf: none
    near_v: np.ndarray  # (n, slots, k): the search's nearest surface vertices
    next_v: np.ndarray  # (n, slots) [m]; −inf: none
    near_margin: np.ndarray  # (n, slots) [m]: the move that keeps near_v for certain (half the spare); −inf: none
    cursor: np.ndarray  # (n,) the slot each vertex writes next

    @classmethod
    def empty(cls, n: int, k: int, slots: int = CERTIFICATE_SLOTS) -> "ClosestCertificates":
        """No certificates for n bed vertices, each search taking k nearest surface vertices."""
        def none() -> np.ndarray:
            return np.full((n, slots), -np.inf)

        return cls(point_o=np.zeros((n, slots, 3)), face=np.full((n, slots), -1, np.int64), reach=none(),
                   face_k=np.full((n, slots, CERTIFIED_FACES), -1, np.int64),
                   face_k_d=np.full((n, slots, CERTIFIED_FACES), np.inf), reach_k=none(),
                   near_v=np.full((n, slots, k), -1, np.int64), next_v=none(), near_margin=none(),
                   cursor=np.zeros(n, np.int64))

    def record(self, P_o: np.ndarray, searched: np.ndarray, found: tuple, near: np.ndarray, spare: np.ndarray,
               verts: np.ndarray, distance: float) -> None:
        """Certificates from a full search of the bed vertices ``searched`` (k,) at P_o: ``found`` the
        search's (s, n, d2, face, gap, face_k, gap_k, dk) per row (``SurfaceProximity.search_near``), near
        the surface vertices ``verts`` it searched round, spare (k,) their spares; a vertex whose face
        lies within ``distance`` gets its certificates in its next slot (its older slots stay: still
        true where they were made), the others none."""
        record_certificates(P_o, searched, found, near, spare, verts, distance, CERTIFICATE_SLACK_M, self.point_o,
                            self.face, self.reach, self.face_k, self.face_k_d, self.reach_k, self.near_v, self.next_v,
                            self.near_margin, self.cursor)

    def held(self, prox, P_o: np.ndarray, rows: np.ndarray):
        """``prox.closest_certified`` of the bed vertices ``rows`` at P_o against these certificates."""
        return prox.closest_certified(P_o, rows, self.point_o, self.face, self.reach, self.face_k, self.face_k_d,
                                      self.reach_k, self.near_v, self.next_v, self.near_margin)


@dataclass
class ContactWork:
    """What a ContactPair's evaluations reuse (per core.data.SystemData): candidate bed vertices per
    (bed, other) body pair with the pose they were taken at, reference poses with their depths and
    nearest-vertex lists, the latest springs with their pose, and the latest result."""

    candidates: dict = field(default_factory=dict)
    references: dict = field(default_factory=dict)
    certificates: dict = field(default_factory=dict)  # (bed, other) -> ClosestCertificates
    held_faces: dict = field(default_factory=dict)  # (bed, other) -> field_faces.HeldFaces
    springs: tuple | None = None  # (band, p_G, R_GB of a and b, springs there): the latest evaluation
    last_result: ContactResult | None = None
    last_kinematics: tuple | None = None  # (t, kinematics) of the latest accumulate that made no result


class ContactPair:
    """Cartilage contact between bodies a and b (implements ``ForceElement``).

    vertices_a_B (n, 3), faces_a (p, 3): body a's contact mesh in a's body frame [m]; likewise b.
    thickness [m] cartilage (layer) thickness h; youngs_modulus [Pa], poisson: the layer's E and ν;
    method "foundation" or "mjm"; rho: ρ of the predictive search; lateral_ratio: MJM lateral /
    normal stiffness; max_penetration_fraction: MJM design penetration / h; design_load [N]: the
    load at which MJM springs reach that penetration; dissipation: Hunt–Crossley c [s/m];
    friction: optional Stribeck law; bed: whose vertices carry the springs ("a", "b" or "both",
    the latter at half stiffness each); search_distance [m]: deepest penetration looked for
    (default the thickness); geometry: "exact" (closest points on the mesh, the reference) or
    "field" (one lookup per bed vertex in the other surface's signed distance field, depths measured
    down to :attr:`field_depth`; for dynamics: statics' frozen contact sets need "exact").
    """

    def __init__(
        self,
        a: int,
        b: int,
        vertices_a_B: np.ndarray,
        faces_a: np.ndarray,
        vertices_b_B: np.ndarray,
        faces_b: np.ndarray,
        thickness: float,
        youngs_modulus: float = 10e6,
        poisson: float = 0.45,
        method: str = "foundation",
        rho: float = DEFAULT_RHO,
        lateral_ratio: float = 1e-3,
        max_penetration_fraction: float = 0.2,
        design_load: float = 1000.0,
        dissipation: float = 0.0,
        friction: StribeckFriction | None = None,
        bed: str = "a",
        search_distance: float | None = None,
        surfaces: tuple[ContactSurface, ContactSurface] | None = None,
        geometry: str = "exact",
    ) -> None:
        if geometry not in GEOMETRIES:
            raise ValueError(f"contact geometry must be one of {GEOMETRIES}, got {geometry!r}")
        if method not in METHODS:
            raise ValueError(f"contact method must be one of {METHODS}, got {method!r}")
        if bed not in BEDS:
            raise ValueError(f"contact bed must be one of {BEDS}, got {bed!r}")
        if a == b:
            raise ValueError("a contact pair needs two different bodies")
        if not 0 < max_penetration_fraction <= 1:
            raise ValueError("max_penetration_fraction must lie in (0, 1]")
        if not lateral_ratio >= 0 or not design_load > 0 or not dissipation >= 0 or not rho > 0:
            raise ValueError("lateral_ratio, dissipation must be >= 0; design_load, rho > 0")
        self.a, self.b = int(a), int(b)
        self.thickness = float(thickness)
        self.youngs_modulus = float(youngs_modulus)
        self.poisson = float(poisson)
        self._modulus_per_area = foundation_modulus(youngs_modulus, poisson, thickness)
        self.stiffness_scale = 1.0
        """Multiplies both laws' stiffness (1: the material's); set on a copy (:meth:`scaled`), never
        on a built system's pair."""
        self.method = method
        self.rho = float(rho)
        self.lateral_ratio = float(lateral_ratio)
        self.max_penetration_fraction = float(max_penetration_fraction)
        self.design_load = float(design_load)
        self.dissipation = float(dissipation)
        self.friction = friction
        self.bed = bed
        self.search_distance = float(thickness if search_distance is None else search_distance)
        if surfaces is None:
            surfaces = (ContactSurface.from_mesh(vertices_a_B, faces_a),
                        ContactSurface.from_mesh(vertices_b_B, faces_b))
        self.surface_a, self.surface_b = surfaces
        self.facing_cos = FACING_COS
        self.geometry = geometry
        if geometry == "field":
            self._ensure_fields()

    def _ensure_fields(self) -> None:
        """Build the field of each surface the other's bed vertices are looked up in, where missing."""
        if self.bed in ("b", "both") and self.surface_a.sdf is None:
            self.surface_a = self.surface_a.with_sdf(
                contact_field(self.surface_a.vertices_B, self.surface_a.surface.faces, self.field_depth))
        if self.bed in ("a", "both") and self.surface_b.sdf is None:
            self.surface_b = self.surface_b.with_sdf(
                contact_field(self.surface_b.vertices_B, self.surface_b.surface.faces, self.field_depth))

    @property
    def field_depth(self) -> float:
        """Deepest penetration the "field" geometry measures [m]: FIELD_DEPTH_LIMITS penetration
        limits, at most the search distance."""
        return min(self.search_distance, FIELD_DEPTH_LIMITS * self.penetration_limit)

    def with_geometry(self, geometry: str, sdf_a: SignedDistanceField | None = None,
                      sdf_b: SignedDistanceField | None = None) -> "ContactPair":
        """This pair finding its contact points by ``geometry`` ("exact" or "field"): a copy sharing
        the surfaces' structures, with the given fields (else built where the geometry needs them)
        and caches of its own."""
        if geometry not in GEOMETRIES:
            raise ValueError(f"contact geometry must be one of {GEOMETRIES}, got {geometry!r}")
        out = copy.copy(self)
        out.geometry = geometry
        if sdf_a is not None:
            out.surface_a = out.surface_a.with_sdf(sdf_a)
        if sdf_b is not None:
            out.surface_b = out.surface_b.with_sdf(sdf_b)
        if geometry == "field":
            out._ensure_fields()
        return out

    def scaled(self, stiffness_scale: float) -> "ContactPair":
        """This pair with both laws' stiffness times ``stiffness_scale``: a copy sharing the surfaces,
        with caches of its own (a quasi-static solver's continuation in contact stiffness solves
        softer contact first; the built system is not changed)."""
        out = copy.copy(self)  # another element: its reuse data apart (core.data)
        out.stiffness_scale = self.stiffness_scale * float(stiffness_scale)
        return out

    @property
    def _work(self) -> "ContactWork":
        """What evaluations reuse, in the active core.data.SystemData."""
        return work_of(self, ContactWork)

    @property
    def last_result(self) -> ContactResult | None:
        """The latest evaluation's result (for reports and drawing); made now from the kinematics of
        the latest :meth:`accumulate` when that one only added up the forces."""
        work = self._work
        if work.last_result is None and work.last_kinematics is not None:
            t, kin = work.last_kinematics
            work.last_result = self.evaluate(t, kin)
            work.last_kinematics = None
        return work.last_result

    # ------------------------------------------------------------------ geometry
    @property
    def penetration_limit(self) -> float:
        return self.max_penetration_fraction * self.thickness

    @property
    def modulus_per_area(self) -> float:
        """K = (1−ν)E / ((1+ν)(1−2ν)h) [N/m³] of the elastic foundation (times stiffness_scale)."""
        return self._modulus_per_area * self.stiffness_scale

    @property
    def mjm_total_stiffness(self) -> float:
        """K_tot = design_load / (max_penetration_fraction · h) [N/m] of the MJM springs (times
        stiffness_scale)."""
        return self.design_load / self.penetration_limit * self.stiffness_scale

    def _springs(self, kin: BodyKinematics, bed_body: int, other: int, bed: ContactSurface,
                 surf: ContactSurface, scale: float, band: float = 0.0) -> _Springs:
        """Springs of ``bed``'s vertices beneath ``surf`` (both in their body frames).

        band > 0 [m]: also the vertices up to that far above the surface (depth 0, stiffness as if
        touching) — only for the anticipating tangent stiffness.
        """
        if self.geometry == "field":
            return self._springs_field(kin, bed_body, other, bed, surf, scale, band)
        R_ob, p_ob = relative_pose_B(kin.p_G, kin.R_GB, bed_body, other)
        # the bed vertices in the other body's frame: only the candidates' rows are read (and written)
        P_o = np.empty_like(bed.vertices_B)
        facing = bed.surface.normals_B @ R_ob.T if surf.needs_facing else None
        cand = self._candidates(bed_body, other, bed, surf, R_ob, p_ob, P_o)
        bed_points(bed.vertices_B, cand, R_ob, p_ob, P_o)
        cp = self._closest_near_reference(bed_body, other, bed, surf, R_ob, p_ob, P_o, cand, facing, band)
        # depth along the smooth normal (as Smith2018 measures it, along the surface normal): the
        # force k·depth·n falls to zero where a vertex leaves contact, also across an edge where
        # its closest point turns away from the normal (k·distance along the offset would jump)
        idx, mid_G, smooth_n_G, offset_G, depth, face = exact_springs(
            P_o, cp.index, cp.closest, cp.normal, cp.depth, cp.face, band if band > 0 else 0.0,
            kin.R_GB[other], kin.p_G[other])
        return self._law(bed_body, idx, mid_G, smooth_n_G, depth, offset_G, bed.area[idx], face, scale, band)

    def _law(self, bed_body: int, idx: np.ndarray, mid_G: np.ndarray, normal_G: np.ndarray, depth: np.ndarray,
             offset_G: np.ndarray, area: np.ndarray, face: np.ndarray, scale: float, band: float) -> _Springs:
        """The springs' stiffness by the pair's law, for contact points found by either geometry."""
        if self.method == "foundation":
            stiffness = scale * self.modulus_per_area * area
            lateral = 0.0
        else:
            ramp = 0.05 * self.penetration_limit
            if band > 0:  # anticipating: every vertex in the band counts as touching
                n_eff = max(float(len(idx)), 1.0)
            else:
                n_eff = max(float(np.minimum(depth / ramp, 1.0).sum()), 1.0)
            stiffness = np.full(len(idx), scale * self.mjm_total_stiffness / n_eff)
            lateral = self.lateral_ratio
        return _Springs(bed_body, idx, mid_G, normal_G, depth, stiffness, lateral, offset_G, area, face)

    def _springs_field(self, kin: BodyKinematics, bed_body: int, other: int, bed: ContactSurface,
                       surf: ContactSurface, scale: float, band: float = 0.0) -> _Springs:
        """:meth:`_springs` by the "field" geometry (the face field): the other surface's field picks
        each candidate bed vertex's faces (its cell's nodes' closest faces, and the faces round the
        best one's closest edge or corner, core.geometry.field_faces) and the closest point, smooth
        normal and depth are measured on them as the exact geometry measures them, through the same
        code from there on. No tree query, no certificates; the springs equal the exact search's but
        where the two searches' face sets differ (a few in a thousand; docs/sdf.md)."""
        assert surf.sdf is not None  # built in __init__ for the field geometry
        R_ob, p_ob = relative_pose_B(kin.p_G, kin.R_GB, bed_body, other)
        cand = self._field_candidates(bed_body, other, bed, surf, R_ob, p_ob, band)
        q_o = np.empty((len(cand), 3))  # the candidates in the other body's frame, row by row
        bed_points(bed.vertices_B, cand, R_ob, p_ob, q_o, compact=True)
        facing = bed.surface.normals_B[cand] @ R_ob.T if surf.needs_facing else None
        held = self._work.held_faces.get((bed_body, other))
        if held is None:
            held = self._work.held_faces[(bed_body, other)] = HeldFaces.empty(len(bed.vertices_B))
        s_o, n_o, d2, face = search_field_faces(surf.sdf, surf.proximity, q_o, facing, self.facing_cos,
                                                cand, held)
        row, mid_G, smooth_n_G, offset_G, depth, face = searched_springs(
            q_o, (s_o, n_o, d2, face), self.search_distance, band if band > 0 else 0.0, kin.R_GB[other],
            kin.p_G[other])
        idx = cand[row]
        return self._law(bed_body, idx, mid_G, smooth_n_G, depth, offset_G, bed.area[idx], face, scale, band)

    def _field_candidates(self, bed_body: int, other: int, bed: ContactSurface, surf: ContactSurface,
                          R_ob: np.ndarray, p_ob: np.ndarray, band: float) -> np.ndarray:
        """Bed vertices within 2·slack (+ band) above the other surface's field, reused while no bed
        vertex moved by more than the slack: the trilinear field's gradient is at most √3 long (each
        partial derivative ≤ 1 between 1-Lipschitz nodes), so a vertex left out cannot have reached
        the surface (value < band) since. A renewal looks up only the vertices of a wider set, within
        2·(slack + wide) of the surface where the bodies last moved by more than ``wide`` (FIELD_NEAR_FACTOR
        slacks): a vertex outside it is still more than 2·slack + (2 − √3)·wide above, so the candidates
        are those of a lookup of every bed vertex."""
        key = ("field", bed_body, other, band)
        slack = FIELD_SLACK_FRACTION * self.penetration_limit
        work = self._work
        cached = work.candidates.get(key)
        if cached is not None:
            R0, p0, cand = cached
            if bed.max_displacement(R_ob, p_ob, R0, p0) <= slack:
                return cand
        assert surf.sdf is not None
        wide = FIELD_NEAR_FACTOR * slack
        near_key = ("field near", bed_body, other, band)
        near = work.candidates.get(near_key)
        if near is not None and bed.max_displacement(R_ob, p_ob, near[0], near[1]) <= wide:
            rows = near[2]
            value = surf.sdf.value(bed.vertices_B[rows] @ R_ob.T + p_ob)
        else:
            value = surf.sdf.value(bed.vertices_B @ R_ob.T + p_ob)
            rows = np.flatnonzero(value < 2.0 * (slack + wide) + band)
            work.candidates[near_key] = (R_ob.copy(), p_ob.copy(), rows)
            value = value[rows]
        cand = rows[value < 2.0 * slack + band]
        work.candidates[key] = (R_ob.copy(), p_ob.copy(), cand)
        return cand

    def _candidates(self, bed_body: int, other: int, bed: ContactSurface, surf: ContactSurface,
                    R_ob: np.ndarray, p_ob: np.ndarray, P_o: np.ndarray) -> np.ndarray:
        """Bed vertices worth testing, reused while no bed vertex has moved (relative to the other
        body) by more than the slack they were computed with — successive evaluations of Newton
        iterations and integrator steps skip the prefilter; the results are unchanged. P_o (n, 3):
        where the bed vertices go in the other body's frame, all of its rows written when the
        prefilter runs."""
        key = (bed_body, other)
        slack = CANDIDATE_SLACK_FRACTION * self.penetration_limit
        work = self._work
        cached = work.candidates.get(key)
        if cached is not None:
            R0, p0, cand = cached
            moved = bed.max_displacement(R_ob, p_ob, R0, p0)
            if moved <= slack:
                return cand
        bed_points(bed.vertices_B, np.arange(len(P_o)), R_ob, p_ob, P_o)
        cand = surf.proximity.candidates(P_o, self.search_distance, beneath_only=True, slack=slack)
        work.candidates[key] = (R_ob.copy(), p_ob.copy(), cand)
        return cand

    def _closest_near_reference(self, bed_body: int, other: int, bed: ContactSurface, surf: ContactSurface,
                                R_ob: np.ndarray, p_ob: np.ndarray, P_o: np.ndarray, cand: np.ndarray,
                                facing: np.ndarray | None, band: float):
        """Closest points of the candidate bed vertices, reusing a reference pose twice: (1) vertices
        that were farther above the surface than they have moved since (plus ``band``) are skipped —
        they cannot have reached it (distance is 1-Lipschitz; the bound on every vertex's move sorts
        most, each outside vertex's own move the rest); (2) from the second
        evaluation near a reference on, each tested vertex's nearest surface vertices come from its
        2k nearest (taken once, at that evaluation's pose) wherever that is certain
        (``SurfaceProximity.nearest_from_lists``), instead of a tree query. The contact set and
        forces are the same as with every candidate tested afresh. The reference (all candidates
        tested) is renewed when the candidates change or the bodies moved more than the candidates'
        slack; a renewal within a sequence takes the lists at once. Newton iterations, finite
        differences and integrator steps move micrometres and test ~a third of the vertices."""
        key = (bed_body, other)
        slack = CANDIDATE_SLACK_FRACTION * self.penetration_limit
        references = self._work.references
        ref = references.get(key)
        if ref is not None and ref[2] is cand:
            R0, p0, _, depth0, lists = ref
            moved = bed.max_displacement(R_ob, p_ob, R0, p0)
            if moved <= slack:
                sel = np.flatnonzero(depth0 > -(moved + band) * (1.0 + 1e-9) - 1e-12)
                outside = np.flatnonzero(depth0[sel] <= -band)  # judged by their own move too
                if len(outside):
                    rows = cand[sel[outside]]
                    step = P_o[rows] - (bed.vertices_B[rows] @ R0.T + p0)
                    own = np.sqrt(np.einsum("ij,ij->i", step, step))
                    reached = depth0[sel[outside]] > -(own + band) * (1.0 + 1e-9) - 1e-12
                    if not reached.all():
                        keep = np.ones(len(sel), dtype=bool)
                        keep[outside[~reached]] = False
                        sel = sel[keep]
                return self._closest_from_lists(key, bed, surf, R_ob, p_ob, P_o, cand, sel, facing, lists)
        depth0 = np.full(len(cand), np.inf)  # not found (beyond the search distance): always tested again
        references[key] = (R_ob.copy(), p_ob.copy(), cand, depth0, None)
        if ref is None:  # a first evaluation: maybe a single one, so no lists yet
            cp = surf.proximity.closest(P_o, self.search_distance, beneath_only=True, facing=facing,
                                        candidates=cand, facing_cos=self.facing_cos)
        else:  # renewed in a sequence of evaluations: the lists now, for the ones to come
            cp = self._closest_from_lists(key, bed, surf, R_ob, p_ob, P_o, cand, np.arange(len(cand)), facing, None)
        # the depth's sign is continuous (1-Lipschitz) except round the rim of an open sheet: test those again
        depth0[np.searchsorted(cand, cp.index)] = np.where(surf.rim_face[cp.face], np.inf, cp.depth)
        return cp

    def _closest_from_lists(self, key, bed: ContactSurface, surf: ContactSurface, R_ob: np.ndarray,
                            p_ob: np.ndarray, P_o: np.ndarray, cand: np.ndarray, sel: np.ndarray,
                            facing: np.ndarray | None, lists: tuple | None):
        """``closest`` of the bed vertices cand[sel] with their k nearest surface vertices taken from
        the candidates' 2k-nearest lists (made now when absent or when the bodies moved past their
        slack since) where certain — each vertex's unlisted surface vertices are as much nearer as
        the vertex itself moved since — and from the tree for the rest."""
        prox = surf.proximity
        k = prox.nearest_count(facing is not None)
        bound = prox.search_bound(self.search_distance)
        slack = CANDIDATE_SLACK_FRACTION * self.penetration_limit
        moved = np.inf if lists is None else bed.max_displacement(R_ob, p_ob, lists[0], lists[1])
        if lists is None or moved > slack:
            near_all, outside_all = prox.nearest_lists(P_o[cand], 2 * k, bound + slack)
            lists = (R_ob.copy(), p_ob.copy(), near_all, outside_all)
            references = self._work.references
            references[key] = references[key][:4] + (lists,)
        certs = None
        if CERTIFIED_CLOSEST and facing is None:
            certs = self._work.certificates.get(key)
            if certs is None:
                certs = self._work.certificates[key] = ClosestCertificates.empty(len(P_o), k)
        rows = cand[sel]
        if certs is not None:  # points a certificate still answers: its face (or face set) alone
            held, s_o, n_o, d2, f = certs.held(prox, P_o, rows)
            search = np.flatnonzero(~held)
        else:
            search = np.arange(len(rows))
        sel = sel[search]
        idx = rows[search]
        q = P_o[idx]
        step = q - (bed.vertices_B[idx] @ lists[0].T + lists[1])  # each vertex's own move since the lists
        moved_v = np.sqrt(np.einsum("ij,ij->i", step, step))
        near, ok, spare = prox.nearest_from_lists(q, lists[2][sel], lists[3][sel] - moved_v, k, bound)
        if not ok.all():
            redo = np.flatnonzero(~ok)
            near[redo], _ = prox.nearest_lists(q[redo], k, bound)
            spare[redo] = 0.0  # a tree query's k nearest come without the next one's distance
        found = prox.search_near(q, near, None if facing is None else facing[idx], self.facing_cos)
        s_k, n_k, d2_k, f_k, gap_k, *_ = found
        if certs is None:
            return prox.found(P_o, idx, s_k, n_k, d2_k, f_k, gap_k, self.search_distance)
        certs.record(P_o, idx, found, near, spare, prox.vertices, self.search_distance)
        s_o[search], n_o[search], d2[search], f[search] = s_k, n_k, d2_k, f_k
        gap = np.zeros(len(rows))
        gap[search] = gap_k
        return prox.found(P_o, rows, s_o, n_o, d2, f, gap, self.search_distance)

    def _all_springs(self, kin: BodyKinematics, band: float = 0.0) -> list[_Springs]:
        """The springs of each bed direction at this pose; at exactly the pose (and band) of the
        previous call the same springs (they depend on the pose alone: an integrator's Jacobian
        column that changes only a speed does not search the surfaces again)."""
        work = self._work
        bodies = [self.a, self.b]
        p_G, R_GB = kin.p_G[bodies], kin.R_GB[bodies]
        if work.springs is not None:
            band0, p0, R0, springs = work.springs
            if band0 == band and np.array_equal(p0, p_G) and np.array_equal(R0, R_GB):
                return springs
        out = self._springs_at(kin, band)
        work.springs = (band, p_G, R_GB, out)
        return out

    def _springs_at(self, kin: BodyKinematics, band: float) -> list[_Springs]:
        out = []
        scale = 0.5 if self.bed == "both" else 1.0
        if self.bed in ("a", "both"):
            out.append(self._springs(kin, self.a, self.b, self.surface_a, self.surface_b, scale, band))
        if self.bed in ("b", "both"):
            out.append(self._springs(kin, self.b, self.a, self.surface_b, self.surface_a, scale, band))
        return out

    # ------------------------------------------------------------------ forces
    def _forces_on_bed(self, kin: BodyKinematics, sp: _Springs,
                       arrays: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(forces (m, 3) on the bed body, normal-force magnitudes (m,)): contact_field_kernels'
        spring_forces, plus friction (numpy) when the pair has it. ``arrays``: the kinematics'
        (kinematics_arrays), when the caller has them."""
        other = self.b if sp.bed_body == self.a else self.a
        needs_rate = self.dissipation > 0 or self.friction is not None
        force, f_n, v_rel = spring_forces(kinematics_arrays(kin) if arrays is None else arrays, sp.bed_body, other,
                                          sp.point_G, sp.normal_G, sp.depth, sp.stiffness, sp.offset_G,
                                          sp.lateral, self.dissipation, needs_rate)
        if self.friction is not None and len(sp.depth):
            n = sp.normal_G
            slip = v_rel - (v_rel * n).sum(axis=1)[:, None] * n
            force = force + self.friction.force(slip, f_n)
        return force, f_n

    def evaluate(self, t: float, kin: BodyKinematics) -> ContactResult:
        """Contact points, pressures and forces at this pose and velocity (pure: no side effects)."""
        parts = []
        arrays = kinematics_arrays(kin)
        for sp in self._all_springs(kin):
            f_bed, f_n = self._forces_on_bed(kin, sp, arrays)
            sign = 1.0 if sp.bed_body == self.a else -1.0
            parts.append((sp, sign * f_bed, sign * sp.normal_G, f_n))
        if parts:
            bed_body = np.concatenate([np.full(len(sp.depth), sp.bed_body) for sp, *_ in parts])
            bed_vertex = np.concatenate([sp.bed_vertex for sp, *_ in parts])
            points = np.concatenate([sp.point_G for sp, *_ in parts])
            normals = np.concatenate([nrm for _, _, nrm, _ in parts])
            depth = np.concatenate([sp.depth for sp, *_ in parts])
            forces = np.concatenate([f for _, f, _, _ in parts])
            f_n = np.concatenate([fn for *_, fn in parts])
            area = np.concatenate([sp.area for sp, *_ in parts])
        else:  # pragma: no cover - bed is always one of BEDS
            bed_body = bed_vertex = np.zeros(0, np.int64)
            points = normals = forces = np.zeros((0, 3))
            depth = f_n = area = np.zeros(0)
        scale = 0.5 if self.bed == "both" else 1.0
        pressure = np.divide(f_n, scale * area, out=np.zeros_like(f_n), where=area > 0)
        total = forces.sum(axis=0)
        w = f_n.sum()
        cop = (f_n[:, None] * points).sum(axis=0) / w if w > 0 else np.full(3, np.nan)
        return ContactResult(
            a=self.a, b=self.b, bed_body=bed_body.astype(np.int64), bed_vertex=bed_vertex.astype(np.int64),
            points_G=points, normals_G=normals, depth=depth, pressure=pressure, force_G=forces,
            total_force_G=total, centre_of_pressure_G=cop, penetration_limit=self.penetration_limit,
        )

    def accumulate(self, t: float, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray) -> None:
        """Add the contact forces on a and b and their moments about each centre of mass. Without
        friction the springs' forces go straight into the sums (contact_field_kernels: no
        ContactResult; :attr:`last_result` makes it when asked); with friction through
        :meth:`evaluate`."""
        if self.friction is None and force_G.dtype == np.float64 and torque_G.dtype == np.float64:
            self._accumulate_springs(kin, force_G, torque_G)
            self._work.last_result = None
            self._work.last_kinematics = (t, _snapshot(kin))
            return
        res = self.evaluate(t, kin)
        self._work.last_result = res
        self._work.last_kinematics = None
        m = res.n_points
        if m == 0:
            return
        body = np.concatenate([np.full(m, self.a), np.full(m, self.b)])
        pts = np.concatenate([res.points_G, res.points_G])
        f = np.concatenate([res.force_G, -res.force_G])
        apply_point_forces(kin, body, pts, f, force_G, torque_G)

    def _accumulate_springs(self, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray) -> None:
        """accumulate without friction: each bed direction's springs' forces (the same as
        :meth:`evaluate`'s) scattered onto a (+) and b (−) by one compiled loop."""
        arrays = kinematics_arrays(kin)
        needs_rate = self.dissipation > 0
        for sp in self._all_springs(kin):
            if not len(sp.depth):
                continue
            other = self.b if sp.bed_body == self.a else self.a
            sign = 1.0 if sp.bed_body == self.a else -1.0
            accumulate_spring_forces(arrays, self.a, self.b, sign, sp.bed_body, other, sp.point_G, sp.normal_G,
                                     sp.depth, sp.stiffness, sp.offset_G, sp.lateral, self.dissipation, needs_rate,
                                     force_G, torque_G)

    # ------------------------------------------------------------------ Newton help
    def stiffness_matrix(self, kin: BodyKinematics, numeric: bool = False, step: float = 1e-6,
                         anticipate: bool = True) -> np.ndarray:
        """Tangent stiffness K (12, 12): the generalised forces [F_a, τ_a, F_b, τ_b] change by −K δq.

        δq = [δx_a, δθ_a, δx_b, δθ_b]: small translations of each centre of mass and small rotations,
        all in G. Analytic (default): the material part Σ k_i J_iᵀ S_i J_i with J_i the relative
        displacement of contact point i and S_i = n nᵀ (+ lateral ratio × (I − n nᵀ) for MJM
        springs), contact set and directions frozen — symmetric positive semi-definite, cheap, exact
        for a flat surface translated. ``numeric=True``: central differences of the full element
        (24 evaluations, contact set regenerated, geometric terms of curved surfaces included;
        ``step`` [m, rad]). Dissipation and friction are left out (zero at rest).
        ``anticipate`` (analytic only): vertices up to the penetration limit above the other
        surface count as touching, so a Newton step from a pose just short of contact already
        sees the cartilage it is about to load instead of plunging through it; the residual stays
        exact, only the Jacobian anticipates.
        """
        if numeric:
            return self._numeric_stiffness(kin, step)
        K = np.zeros((12, 12))
        for sp in self._all_springs(kin, band=self.penetration_limit if anticipate else 0.0):
            m = len(sp.depth)
            if m == 0:
                continue
            n = sp.normal_G
            S = n[:, :, None] * n[:, None, :]
            if sp.lateral > 0:
                S = S + sp.lateral * (np.eye(3)[None] - S)
            S = sp.stiffness[:, None, None] * S
            J = np.zeros((m, 3, 12))
            for body, col, sgn in ((self.a, 0, 1.0), (self.b, 6, -1.0)):
                r = sp.point_G - kin.p_G[body]
                J[:, :, col:col + 3] = sgn * np.eye(3)[None]
                rx = np.zeros((m, 3, 3))
                rx[:, 0, 1], rx[:, 0, 2] = -r[:, 2], r[:, 1]
                rx[:, 1, 0], rx[:, 1, 2] = r[:, 2], -r[:, 0]
                rx[:, 2, 0], rx[:, 2, 1] = -r[:, 1], r[:, 0]
                J[:, :, col + 3:col + 6] = -sgn * rx  # δθ × r = −[r]× δθ
            K += np.einsum("mia,mij,mjb->ab", J, S, J)
        return K

    def _numeric_stiffness(self, kin: BodyKinematics, step: float) -> np.ndarray:
        from jointmodeller.core.geometry.collision import RelativeMotion as _Twist

        def wrench(dq: np.ndarray) -> np.ndarray:
            p = kin.p_G.copy()
            R = kin.R_GB.copy()
            for body, col in ((self.a, 0), (self.b, 6)):
                p[body] = p[body] + dq[col:col + 3]
                Rot, _ = _Twist(np.zeros(3), dq[col + 3:col + 6]).flow(1.0)
                R[body] = Rot @ R[body]
            k = BodyKinematics(p, R, np.zeros_like(kin.v_G), np.zeros_like(kin.w_G))
            F = np.zeros_like(kin.p_G)
            T = np.zeros_like(kin.p_G)
            self.accumulate(0.0, k, F, T)
            return np.concatenate([F[self.a], T[self.a], F[self.b], T[self.b]])

        K = np.zeros((12, 12))
        saved = self._work.last_result, self._work.last_kinematics
        for col in range(12):
            dq = np.zeros(12)
            dq[col] = step
            K[:, col] = -(wrench(dq) - wrench(-dq)) / (2 * step)
        self._work.last_result, self._work.last_kinematics = saved
        return K

    def frozen(self, kin: BodyKinematics, band: float = 0.0):
        """This pair's contact set at ``kin`` frozen (a :class:`FrozenContactPair`): every bed vertex
        beneath the other surface, and with band > 0 [m] also those up to band above it, each with
        the face its closest point lies on. Same forces as :meth:`accumulate` while the set holds."""
        from jointmodeller.core.mechanics.contact_frozen import FrozenBed, FrozenContactPair

        if self.geometry != "exact":
            raise ValueError("a frozen contact set keeps the faces of the exact geometry: build the pair with "
                             "geometry='exact' for statics")
        scale = 0.5 if self.bed == "both" else 1.0
        beds = []
        for sp in self._all_springs(kin, band=band):
            other = self.b if sp.bed_body == self.a else self.a
            beds.append(FrozenBed(sp.bed_body, other, sp.bed_vertex.copy(), sp.face.copy(), scale))
        return FrozenContactPair(self, beds)

    # ------------------------------------------------------------------ prediction
    def predict(self, kin: BodyKinematics, motion: RelativeMotion | None = None, method: str = "grid",
                **kw) -> CollisionPrediction:
        """MJM time to collision of a moving towards b (motion default: their relative velocity)."""
        if motion is None:
            motion = relative_motion_B(kin.p_G, kin.R_GB, kin.v_G, kin.w_G, self.a, self.b)
        R_ba, p_ba = relative_pose_B(kin.p_G, kin.R_GB, self.a, self.b)
        return predict_collision(self.surface_a.surface, self.surface_b.surface, R_ba, p_ba, motion,
                                 rho=self.rho, method=method, **kw)

    def pose_at_contact(self, kin: BodyKinematics, motion: RelativeMotion | None = None,
                        **kw) -> tuple[np.ndarray, np.ndarray, CollisionPrediction] | None:
        """MJM's first equilibrium step (seed 004 §3.4): bring body a to the predicted collision.

        Returns (p_G, R_GB) of body a after moving with ``motion`` (default: the relative velocity;
        use ``motion_from_loads`` for the net tissue loads) for the predicted time to collision,
        with body b where it is, and the prediction; None when no collision lies ahead.
        """
        if motion is None:
            motion = relative_motion_B(kin.p_G, kin.R_GB, kin.v_G, kin.w_G, self.a, self.b)
        pred = self.predict(kin, motion, **kw)
        if not pred.found:
            return None
        assert pred.point_i_B is not None and pred.R_BA is not None and pred.p_BA is not None  # found: all set
        speed = float(np.linalg.norm(motion.velocities(pred.point_i_B[None])[0]))
        R_f, t_f = motion.flow(pred.distance / speed)
        R_ba = R_f @ pred.R_BA
        p_ba = R_f @ pred.p_BA + t_f
        R_Gb, p_Gb = kin.R_GB[self.b], kin.p_G[self.b]
        return p_Gb + R_Gb @ p_ba, R_Gb @ R_ba, pred

