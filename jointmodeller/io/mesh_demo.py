"""Procedural demo elbow: a distal-humerus-like and a proximal-ulna-like bone with cartilage layers.

Each bone is the zero level set of a smooth implicit function (smooth unions of capsules, spheres and
a spool of revolution), contoured on a regular grid by VTK's flying edges, so every surface is closed
and watertight by construction. Deterministic: same parameters, same vertices.

Frame G (= the L frame of both meshes; right elbow, at 30° flexion): origin at the centre of the
trochlear groove, x lateral, y anterior, z proximal (along the humeral shaft). The flexion axis is the
x axis (through the trochlea and capitulum centres); flexion is a positive rotation about +x (the
forearm swings anteriorly). The ulna is modelled in extension (E: its shaft along −z) and rotated by
the flexion angle about x. Lengths in metres.

The ulna's trochlear notch is the trochlea's spool grown radially by ``bone_gap_m`` (two cartilage
layers plus a small clearance), cut to an arc of about 185° about the flexion axis, so the notch really
wraps the trochlea (a concave saddle whose central ridge sits in the trochlear groove).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np

from jointmodeller.core.spatial_math import axis_angle_matrix
from jointmodeller.io.atomic_files import write_bytes_atomically

FLEXION_DEG = 30.0
TROCHLEA_HALF_WIDTH = 0.0105  # x extent of the trochlea: [-hw, hw]
TROCHLEA_GROOVE_R = 0.0095  # radius at the groove (x = 0)
TROCHLEA_RIM_RISE = (0.0045, 0.0035)  # radius gained at the medial / lateral rim
CAPITULUM_CENTRE = np.array([0.0225, 0.0, 0.0])
CAPITULUM_R = 0.0100
CARTILAGE_T = 0.0015  # each cartilage layer [m] (elbow cartilage is about 1–2 mm thick)
CLEARANCE = 0.0001  # gap between the two cartilage surfaces at rest [m]
BONE_GAP = 2 * CARTILAGE_T + CLEARANCE
NOTCH_ARC_E_DEG = (-70.0, 115.0)  # notch arc in extension, angle from distal (−z) towards posterior (−y)
NOTCH_HALF_WIDTH = 0.0095

RESOLUTIONS = {
    # name: (grid spacing default, grid spacing high-res) [m]
    "humerus": (0.00096, 0.00053),
    "ulna": (0.00081, 0.00066),
    "humerus_cartilage": (0.00042, 0.00032),
    "ulna_cartilage": (0.00039, 0.00032),
}
BOUNDS = {
    "humerus": ((-0.032, 0.046), (-0.017, 0.016), (-0.016, 0.122)),
    "ulna": None,  # computed from the rotated extension-frame box
    "humerus_cartilage": ((-0.0125, 0.0125), (-0.018, 0.018), (-0.018, 0.018)),
    "ulna_cartilage": ((-0.0125, 0.0125), (-0.021, 0.021), (-0.021, 0.021)),
}


# ------------------------------------------------------------------------------------------------
# implicit-function toolkit (negative inside), vectorised over points P (N, 3)
# ------------------------------------------------------------------------------------------------
def smin(a: np.ndarray, b: np.ndarray, k: float) -> np.ndarray:
    """Polynomial smooth minimum (smooth union) with blend radius k."""
    h = np.clip(0.5 + 0.5 * (b - a) / k, 0.0, 1.0)
    return b * (1 - h) + a * h - k * h * (1 - h)


def smax(a: np.ndarray, b: np.ndarray, k: float) -> np.ndarray:
    """Smooth maximum (smooth intersection / subtraction)."""
    return -smin(-a, -b, k)


def sphere(P: np.ndarray, c, r: float) -> np.ndarray:
    return np.linalg.norm(P - np.asarray(c), axis=1) - r


def capsule(P: np.ndarray, a, b, ra: float, rb: float | None = None) -> np.ndarray:
    """Capsule (or tapered capsule, radius ra at a to rb at b) around segment a–b."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    ab = b - a
    t = np.clip((P - a) @ ab / (ab @ ab), 0.0, 1.0)
    r = ra if rb is None else ra + (rb - ra) * t
    return np.linalg.norm(P - (a + t[:, None] * ab), axis=1) - r


def ellipsoid(P: np.ndarray, c, radii) -> np.ndarray:
    """Approximate signed distance to an axis-aligned ellipsoid (first-order correct near it)."""
    q = (P - np.asarray(c)) / np.asarray(radii)
    k0 = np.linalg.norm(q, axis=1)
    k1 = np.linalg.norm(q / np.asarray(radii), axis=1)
    return k0 * (k0 - 1.0) / np.maximum(k1, 1e-12)


def box(P: np.ndarray, c, half, round_r: float = 0.0) -> np.ndarray:
    q = np.abs(P - np.asarray(c)) - (np.asarray(half) - round_r)
    return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0) - round_r


def trochlea_radius(x: np.ndarray) -> np.ndarray:
    """Radius (about the flexion axis) of the trochlear spool at x: an hourglass, deeper medially."""
    xc = np.clip(x, -TROCHLEA_HALF_WIDTH, TROCHLEA_HALF_WIDTH)
    rise = np.where(xc < 0, TROCHLEA_RIM_RISE[0], TROCHLEA_RIM_RISE[1])
    return TROCHLEA_GROOVE_R + rise * (xc / TROCHLEA_HALF_WIDTH) ** 2


R_GE = axis_angle_matrix(np.array([1.0, 0.0, 0.0]), np.radians(FLEXION_DEG))
"""Rotation taking ulna extension-frame components to G (flexion about +x)."""


def notch_angle_deg(P: np.ndarray) -> np.ndarray:
    """Angle about the flexion axis from distal (−z) towards posterior (−y), degrees in (−180, 180]."""
    return np.degrees(np.arctan2(-P[:, 1], -P[:, 2]))


# ------------------------------------------------------------------------------------------------
# the bones
# ------------------------------------------------------------------------------------------------
def humerus_sdf(P: np.ndarray) -> np.ndarray:
    """Distal humerus in G: trochlear spool + capitulum + epicondyles + columns + shaft."""
    x = P[:, 0]
    rho = np.hypot(P[:, 1], P[:, 2])
    spool = smax(rho - trochlea_radius(x), np.abs(x) - TROCHLEA_HALF_WIDTH, 0.0015)
    f = smin(spool, sphere(P, CAPITULUM_CENTRE, CAPITULUM_R), 0.002)
    f = smin(f, sphere(P, (-0.0200, -0.0020, 0.0040), 0.0075), 0.003)  # medial epicondyle
    f = smin(f, sphere(P, (0.0375, -0.0030, 0.0070), 0.0055), 0.003)  # lateral epicondyle
    f = smin(f, capsule(P, (-0.0180, -0.0040, 0.0060), (-0.0060, -0.0020, 0.0450), 0.0065), 0.004)
    f = smin(f, capsule(P, (0.0340, -0.0040, 0.0100), (0.0080, -0.0020, 0.0450), 0.0060), 0.004)
    f = smin(f, box(P, (0.0030, -0.0010, 0.0280), (0.0120, 0.0022, 0.0180), 0.0015), 0.003)  # fossa web
    f = smin(f, capsule(P, (0.0010, -0.0020, 0.0420), (0.0000, 0.0000, 0.1100), 0.0095, 0.0085), 0.006)
    return f


def notch_inner_radius(x: np.ndarray) -> np.ndarray:
    """Radius of the ulna's notch surface: the trochlea grown by two cartilage layers and a gap."""
    return trochlea_radius(x) + BONE_GAP


def ulna_sdf_E(Q: np.ndarray) -> np.ndarray:
    """Proximal ulna in its extension frame E: a C-shaped notch clamp + olecranon + coronoid +
    metaphysis + shaft, with the trochlear cavity removed."""
    x = Q[:, 0]
    rho = np.hypot(Q[:, 1], Q[:, 2])
    alpha = notch_angle_deg(Q)
    a0, a1 = NOTCH_ARC_E_DEG
    arc = np.maximum(np.radians(a0) - np.radians(alpha), np.radians(alpha) - np.radians(a1)) * 0.018
    clamp = smax(rho - 0.0235, np.abs(x) - NOTCH_HALF_WIDTH, 0.002)
    clamp = smax(clamp, arc, 0.002)
    f = smin(clamp, ellipsoid(Q, (0.0, -0.0215, 0.0030), (0.0090, 0.0075, 0.0085)), 0.003)  # olecranon
    f = smin(f, ellipsoid(Q, (0.0010, -0.0050, -0.0210), (0.0110, 0.0110, 0.0130)), 0.004)  # metaphysis
    f = smin(f, sphere(Q, (-0.0110, 0.0060, -0.0190), 0.0042), 0.003)  # sublime tubercle (medial)
    f = smin(f, sphere(Q, (0.0100, -0.0040, -0.0300), 0.0040), 0.004)  # supinator crest (lateral)
    f = smin(f, capsule(Q, (0.0010, -0.0055, -0.0250), (0.0025, -0.0035, -0.1150), 0.0078, 0.0058), 0.006)
    cavity = notch_inner_radius(x) - rho  # > 0 inside the space the trochlea (and cartilage) needs
    return smax(f, cavity, 0.0008)


def ulna_sdf(P: np.ndarray) -> np.ndarray:
    """Proximal ulna in G (at FLEXION_DEG)."""
    return ulna_sdf_E(P @ R_GE)  # row vectors: Q = R_GEᵀ p


def humerus_cartilage_sdf(P: np.ndarray) -> np.ndarray:
    """Trochlear cartilage: a layer over the spool, embedded 0.5 mm into the bone, on the articular arc."""
    x = P[:, 0]
    rho = np.hypot(P[:, 1], P[:, 2])
    r0 = trochlea_radius(x)
    layer = np.abs(rho - (r0 + 0.5 * (CARTILAGE_T - 0.0005))) - 0.5 * (CARTILAGE_T + 0.0005)
    alpha = notch_angle_deg(P)
    arc = (np.maximum(np.radians(-125.0 - alpha), np.radians(alpha - 110.0))) * 0.012
    f = smax(layer, np.abs(x) - (TROCHLEA_HALF_WIDTH - 0.0008), 0.0004)
    return smax(f, arc, 0.0004)


def ulna_cartilage_sdf(P: np.ndarray) -> np.ndarray:
    """Cartilage lining the trochlear notch (inner surface 1.5 mm off the bone, 0.5 mm embedded)."""
    Q = P @ R_GE
    x = Q[:, 0]
    rho = np.hypot(Q[:, 1], Q[:, 2])
    r_bone = notch_inner_radius(x)
    layer = np.abs(rho - (r_bone - 0.5 * (CARTILAGE_T - 0.0005))) - 0.5 * (CARTILAGE_T + 0.0005)
    alpha = notch_angle_deg(Q)
    a0, a1 = NOTCH_ARC_E_DEG
    arc = np.maximum(np.radians(a0 + 6.0 - alpha), np.radians(alpha - (a1 - 6.0))) * 0.015
    f = smax(layer, np.abs(x) - (NOTCH_HALF_WIDTH - 0.0008), 0.0004)
    return smax(f, arc, 0.0004)


SDFS = {
    "humerus": humerus_sdf,
    "ulna": ulna_sdf,
    "humerus_cartilage": humerus_cartilage_sdf,
    "ulna_cartilage": ulna_cartilage_sdf,
}


def _ulna_bounds() -> tuple[tuple[float, float], ...]:
    lo_E, hi_E = np.array([-0.022, -0.034, -0.125]), np.array([0.022, 0.024, 0.018])
    corners = np.array([[a, b, c] for a in (lo_E[0], hi_E[0]) for b in (lo_E[1], hi_E[1])
                        for c in (lo_E[2], hi_E[2])]) @ R_GE.T
    return tuple((float(lo), float(hi)) for lo, hi in zip(corners.min(axis=0), corners.max(axis=0)))


# ------------------------------------------------------------------------------------------------
# contouring
# ------------------------------------------------------------------------------------------------
def contour(sdf, bounds, spacing: float, chunk: int = 400_000) -> tuple[np.ndarray, np.ndarray]:
    """Closed triangle surface (vertices (n, 3), faces (m, 3), outward wound) of {sdf < 0} in bounds."""
    import pyvista as pv

    lo = np.array([b[0] for b in bounds])
    hi = np.array([b[1] for b in bounds])
    dims = np.ceil((hi - lo) / spacing).astype(int) + 1
    grid = pv.ImageData(dimensions=tuple(int(d) for d in dims), spacing=(spacing,) * 3, origin=tuple(lo))
    pts = np.asarray(grid.points)
    values = np.empty(len(pts))
    for s in range(0, len(pts), chunk):
        values[s:s + chunk] = sdf(pts[s:s + chunk])
    # the box faces must be outside the solid, or the surface would be open
    vol = values.reshape(dims[::-1])
    border = np.concatenate([vol[0].ravel(), vol[-1].ravel(), vol[:, 0].ravel(), vol[:, -1].ravel(),
                             vol[:, :, 0].ravel(), vol[:, :, -1].ravel()])
    if (border <= 0).any():
        raise RuntimeError("the solid touches its grid bounds; enlarge BOUNDS")
    grid["f"] = values
    surf = grid.contour([0.0], scalars="f", method="flying_edges", compute_normals=False,
                        compute_scalars=False).triangulate().clean()
    v = np.asarray(surf.points, dtype=np.float64)
    f = np.asarray(surf.faces, dtype=np.int64).reshape(-1, 4)[:, 1:]
    from jointmodeller.io.meshes import clean_surface

    v, f, _ = clean_surface(v, f)  # collapse the zero-area slivers marching cubes leaves
    # orient outward: the divergence-theorem volume must be positive
    vol6 = np.einsum("ij,ij->i", v[f[:, 0]], np.cross(v[f[:, 1]], v[f[:, 2]])).sum()
    if vol6 < 0:
        f = f[:, ::-1]
    return v, np.ascontiguousarray(f)


def mesh_bounds(name: str) -> tuple[tuple[float, float], ...]:
    return _ulna_bounds() if name == "ulna" else BOUNDS[name]


def make_mesh(name: str, high_res: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (n, 3) [m, G] and faces (m, 3) of one demo mesh (see SDFS for the names)."""
    spacing = RESOLUTIONS[name][1 if high_res else 0]
    return contour(SDFS[name], mesh_bounds(name), spacing)


def geometry_tag() -> str:
    """Short hash of this module's source: cached meshes made by another version are not reused."""
    import hashlib

    return hashlib.sha1(Path(__file__).read_bytes()).hexdigest()[:10]


def mesh_file_name(name: str, high_res: bool = False, tag: str = "") -> str:
    """File name of one demo mesh; ``tag`` (e.g. geometry_tag()) marks cached copies."""
    return f"demo_elbow_{name}{'_highres' if high_res else ''}{'_' + tag if tag else ''}.ply"


def write_demo_meshes(out_dir: str | Path, high_res: bool = False,
                      names: tuple[str, ...] = tuple(SDFS), tag: str = "") -> dict[str, Path]:
    """Generate the demo meshes as binary PLY files in out_dir; returns name -> path."""
    import trimesh

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in names:
        v, f = make_mesh(name, high_res)
        path = out / mesh_file_name(name, high_res, tag)
        # atomic: concurrent builders never see half a file
        ply = cast(bytes, trimesh.Trimesh(v, f, process=False).export(file_type="ply", encoding="binary"))
        write_bytes_atomically(path, ply)
        paths[name] = path
    return paths


@dataclass(frozen=True)
class Landmark:
    """A named anatomical point near a bone surface, in G at the demo pose (projected at build)."""

    bone: str
    point_G: tuple[float, float, float]


def _E(p) -> tuple[float, float, float]:
    q = R_GE @ np.asarray(p, float)
    return (float(q[0]), float(q[1]), float(q[2]))


LANDMARKS: dict[str, Landmark] = {
    # humerus (G = its frame)
    "medial_epicondyle_anteroinferior": Landmark("humerus", (-0.0230, 0.0030, -0.0005)),
    "medial_epicondyle_posteroinferior": Landmark("humerus", (-0.0235, -0.0055, -0.0005)),
    "lateral_epicondyle_centre": Landmark("humerus", (0.0410, -0.0015, 0.0020)),
    "lateral_epicondyle_posterior": Landmark("humerus", (0.0400, -0.0065, 0.0020)),
    "anterior_humerus_above_coronoid_fossa": Landmark("humerus", (-0.0040, 0.0045, 0.0300)),
    "posterior_humerus_above_olecranon_fossa": Landmark("humerus", (0.0030, -0.0060, 0.0320)),
    # ulna (given in the extension frame E, rotated into G)
    "sublime_tubercle": Landmark("ulna", _E((-0.0155, 0.0060, -0.0210))),  # AMCL 20.8 mm (Ikezu 2020: ~22)
    "medial_olecranon": Landmark("ulna", _E((-0.0110, -0.0200, -0.0010))),
    "lateral_coronoid_radial_notch": Landmark("ulna", _E((0.0120, -0.0020, -0.0280))),
    "supinator_crest": Landmark("ulna", _E((0.0145, -0.0060, -0.0280))),
    "coronoid_tip": Landmark("ulna", _E((0.0000, 0.0215, -0.0060))),
    "olecranon_tip": Landmark("ulna", _E((0.0000, -0.0230, 0.0110))),
}
"""Ligament and capsule attachment regions (targets; the demo snaps them onto the meshes)."""

LOAD_POINT_E = np.array([0.0010, -0.0030, -0.3000])
"""Varus/valgus load point on the ulna, 30 cm distal to the flexion axis along the shaft (E frame)."""
