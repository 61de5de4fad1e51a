"""Volume, mass, centre of mass and inertia of a bone from its triangle surface.

Closed surfaces: the divergence theorem turns the volume integrals of 1, x and x xᵀ into sums over
signed tetrahedra (origin, a, b, c), one per face (exact for the polyhedron):

    V_f = a·(b×c)/6,   ∫x dV = Σ V_f (a+b+c)/4,   ∫x xᵀ dV = Σ V_f/20 (a aᵀ + b bᵀ + c cᵀ + s sᵀ), s = a+b+c

Open or non-manifold surfaces (segmentation output) get a documented fallback, named in ``method``
and explained in ``warnings``:

1. ``closed``        — the surface is closed; faces wound inward are detected (negative volume) and
                       the integrals are negated; inconsistent winding is repaired first (trimesh).
2. ``capped_holes``  — the boundary forms simple loops: each hole is closed by a fan of triangles to
                       the loop's centroid, then the closed-surface integrals apply. Good for bones
                       cut at the shaft or with small segmentation holes.
3. ``convex_hull``   — anything else (non-manifold edges, tangled boundaries, open sheets whose capped
                       volume is negligible), and any capped (or self-intersecting closed) surface whose
                       integrals are not those of a real body — a cap that crosses the surface counts
                       part of the solid negatively, and the principal moments can then break the
                       triangle inequality (the Lenhart 2015 tibia subchondral bone does): the convex
                       hull's properties, always those of a real solid. It over-estimates the volume
                       of concave shapes; the warning says so.

Frames: L is the mesh's own frame; B the principal frame at the centre of mass (the body frame the
app builds: ``core.spatial_math.principal_axes``). R_LB takes B components to L (columns are the
principal axes, right-handed), principal moments ascending.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jointmodeller.core.geometry.mesh_checks import boundary_loops, surface_report
from jointmodeller.core.spatial_math import principal_axes
from jointmodeller.model.errors import MeshError
from jointmodeller.model.mesh import MeshData
from jointmodeller.model.validation import inertia_problems

NO_VOLUME = ("the surface encloses no volume (a flat or degenerate sheet): enter the mass, centre of mass and "
             "inertia instead of computing them from the mesh")
SHEET_VOLUME_FRACTION = 1e-3
"""A capped open surface enclosing less than this fraction of its convex hull is treated as a sheet."""


@dataclass(frozen=True, eq=False)
class MassProperties:
    """Rigid-body properties of a uniform solid bounded by a mesh (all SI, frame L unless named).

    com_L: (3,) [m]; inertia_L: (3, 3) about the COM in L axes [kg m²];
    principal_moments: (3,) ascending [kg m²]; R_LB: (3, 3) principal axes as columns.
    """

    volume_m3: float
    mass_kg: float
    com_L: np.ndarray
    inertia_L: np.ndarray
    principal_moments: np.ndarray
    R_LB: np.ndarray
    method: str
    warnings: tuple[str, ...] = field(default=())


def _volume_integrals(v: np.ndarray, f: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Signed ∫1, ∫x, ∫x xᵀ over the solid bounded by faces f of vertices v (relative to v's origin)."""
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    vol = np.einsum("ij,ij->i", a, np.cross(b, c)) / 6.0  # (m,)
    s = a + b + c
    first = (vol[:, None] * s).sum(axis=0) / 4.0
    second = (
        np.einsum("i,ij,ik->jk", vol, a, a)
        + np.einsum("i,ij,ik->jk", vol, b, b)
        + np.einsum("i,ij,ik->jk", vol, c, c)
        + np.einsum("i,ij,ik->jk", vol, s, s)
    ) / 20.0
    return float(vol.sum()), first, second


def _cap_holes(v: np.ndarray, f: np.ndarray, loops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Close each boundary loop with a fan to its centroid, wound against the loop (so it matches)."""
    new_v = [v]
    new_f = [f]
    n = len(v)
    for k, loop in enumerate(loops):
        centre = v[loop].mean(axis=0)
        new_v.append(centre[None, :])
        a = loop
        b = np.roll(loop, -1)
        # boundary edge a->b runs with its face; the cap runs it b->a
        new_f.append(np.stack([b, a, np.full_like(a, n + k)], axis=1))
    return np.vstack(new_v), np.vstack(new_f)


def _convex_hull(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices and outward-wound faces of the convex hull of points v (n, 3)."""
    import trimesh
    from scipy.spatial import QhullError

    try:
        hull = trimesh.convex.convex_hull(v)
    except (QhullError, ValueError):  # fewer than 4 points, or all in one plane: no hull volume
        raise MeshError(NO_VOLUME) from None
    return np.asarray(hull.vertices, dtype=np.float64), np.asarray(hull.faces, dtype=np.int64)


def _fix_winding(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Faces re-wound consistently across shared edges (trimesh's graph traversal)."""
    import trimesh

    m = trimesh.Trimesh(v, f, process=False)
    trimesh.repair.fix_winding(m)
    return np.asarray(m.faces, dtype=np.int64)


def mass_properties(vertices: np.ndarray, faces: np.ndarray, density: float) -> MassProperties:
    """Mass properties of the uniform solid of density [kg/m³] bounded by a surface in L.

    vertices: (n, 3) [m]; faces: (m, 3) int. Open surfaces use the fallback in the module docstring.
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    if not np.isfinite(density) or density <= 0:
        raise ValueError(f"density must be positive and finite, got {density}")
    if v.ndim != 2 or v.shape[1] != 3 or f.ndim != 2 or f.shape[1] != 3 or len(f) == 0:
        raise ValueError("vertices must be (n, 3) and faces (m>0, 3)")
    origin = v.mean(axis=0)
    v0 = v - origin  # integrate about a nearby point: less cancellation
    warnings: list[str] = []
    report = surface_report(f, len(v))
    method = "closed"
    if report.closed:
        if not report.consistently_wound:
            f = _fix_winding(v0, f)
            warnings.append("inconsistent face winding was repaired before integrating")
        work_v, work_f = v0, f
    else:
        method = "convex_hull"
        loops = boundary_loops(f) if report.n_nonmanifold_edges == 0 else None
        n_holes = len(loops) if loops else 0
        if loops:
            cv, cf = _cap_holes(v0, f, loops)
            capped = surface_report(cf, len(cv))
            if capped.closed:
                if not capped.consistently_wound:
                    cf = _fix_winding(cv, cf)
                hv, hf = _convex_hull(v0)
                vol_capped = abs(_volume_integrals(cv, cf)[0])
                vol_hull = abs(_volume_integrals(hv, hf)[0])
                if vol_capped > SHEET_VOLUME_FRACTION * vol_hull:
                    method = "capped_holes"
                    work_v, work_f = cv, cf
                    warnings.append(
                        f"open surface: {n_holes} hole(s) closed by fans to their centroids "
                        "before integrating (mass properties of the capped solid)")
        if method == "convex_hull":
            work_v, work_f = _convex_hull(v0)
            warnings.append(
                "surface is open or non-manifold and could not be capped: mass properties of its "
                "convex hull (over-estimates volume and mass of concave bones)")
    vol, first, second = _volume_integrals(work_v, work_f)
    if vol < 0:
        vol, first, second = -vol, -first, -second
        if method == "closed":
            warnings.append("faces were wound inward; treated as outward")
    if not np.isfinite(vol) or vol <= 1e-9 * float(np.ptp(v0, axis=0).max()) ** 3:
        raise MeshError(NO_VOLUME)
    inertia, com0 = _inertia(vol, first, second, density)
    if method != "convex_hull" and inertia_problems(inertia):
        # not the integrals of a real body (caps crossing the surface, a self-intersecting shell):
        # the convex hull always is one
        if method == "capped_holes":
            warnings = [w for w in warnings if not w.startswith("open surface:")]
            what = f"open surface: capping its {n_holes} hole(s) by fans"
        else:
            what = "the closed surface (it intersects itself)"
        warnings.append(
            f"{what} gives an inertia no real body has (principal moments break the triangle "
            "inequality): mass properties of the convex hull instead (over-estimates volume and mass of "
            "concave bones)")
        method = "convex_hull"
        vol, first, second = _volume_integrals(*_convex_hull(v0))
        vol, first, second = abs(vol), np.sign(vol) * first, np.sign(vol) * second
        inertia, com0 = _inertia(vol, first, second, density)
    moments, R_BL = principal_axes(inertia)
    return MassProperties(
        volume_m3=vol,
        mass_kg=density * vol,
        com_L=com0 + origin,
        inertia_L=inertia,
        principal_moments=moments,
        R_LB=R_BL.T,
        method=method,
        warnings=tuple(warnings),
    )


def _inertia(vol: float, first: np.ndarray, second: np.ndarray, density: float) -> tuple[np.ndarray, np.ndarray]:
    """Inertia about the centre of mass (symmetrised) and the centre of mass, from the integrals."""
    com0 = first / vol
    second_com = second - vol * np.outer(com0, com0)
    inertia = density * (np.trace(second_com) * np.eye(3) - second_com)
    return 0.5 * (inertia + inertia.T), com0


def mesh_mass_properties(mesh: MeshData, density: float) -> MassProperties:
    """mass_properties of a project mesh (its vertices are in L, metres)."""
    return mass_properties(mesh.vertices_L, mesh.faces, density)


def validate_inertia(inertia: np.ndarray) -> list[str]:
    """Problems with a user-entered inertia tensor (3, 3): symmetry, positive definiteness, triangle
    inequality of the principal moments. Empty when it is physically possible."""
    return inertia_problems(np.asarray(inertia, dtype=np.float64))
