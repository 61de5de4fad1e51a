"""A cartilage layer grown on a bone's articular region (issue 15 item 4), as a closed triangle mesh.

When segmentation gives a bone without its cartilage, contact on the bare bone leaves a gap of the
missing layer's thickness. ``facing_region`` picks the bone faces that face the other bone at the
current pose (the other surface lies within ``max_distance`` in front of the face, within
``max_angle_deg`` of its outward normal; pinholes closed, specks dropped); ``grow_layer`` turns that
patch into a solid layer:

- the bone-side surface is the patch itself, wound inwards (the layer sits on the bone, as a
  segmented cartilage does);
- the articular surface is the patch offset along the bone's area-weighted vertex normals, the
  offset of each vertex corrected until its distance from the bone surface is the thickness (in a
  concave region an offset along the normal comes closer to the neighbouring bone than its length);
- side walls join the two along the patch's boundary loops.

The result is closed and consistently wound with outward normals (``layer_report`` checks it with
trimesh), so mass properties, the viewport and ``core.geometry.articular`` (which keeps the faces
that face away from the bone as the contact sheet) treat it like an imported cartilage mesh.
Everything is vectorised numpy/scipy; all meshes in one frame, metres.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from jointmodeller.core.geometry.articular import face_normals, submesh
from jointmodeller.core.geometry.collision import vertex_normals
from jointmodeller.core.geometry.collision_proximity import SurfaceProximity
from jointmodeller.core.geometry.mesh_checks import directed_edges, edge_keys

__all__ = ["facing_region", "grow_layer", "make_cartilage", "layer_report", "LayerReport", "CartilageLayer"]

#: a face belongs to the articular region when the other surface's closest point lies within this
#: angle of its outward normal (75°: the layer reaches round the condyles far enough that the other
#: bed's contact points stay off its rim; at 60° the lenhart2015 knee at 25° flexion found ~500 N of
#: its tibiofemoral contact on the rim of the femoral patch, and its equilibrium took 10x longer)
DEFAULT_MAX_ANGLE_DEG = 75.0
#: connected pieces of the region smaller than this fraction of its area are dropped (specks)
MIN_PIECE_FRACTION = 0.02
#: offset-correction passes (each moves every articular vertex to the thickness measured from the
#: bone surface; two or three settle it to well under a micrometre on bone meshes)
CORRECTION_PASSES = 4
#: an articular vertex is never offset by more than this multiple of the thickness along its normal
MAX_OFFSET_FACTOR = 2.0


def _face_graph(faces: np.ndarray, mask: np.ndarray | None = None):
    """Sparse (m, m) adjacency of faces sharing an edge (restricted to ``mask`` when given)."""
    m = len(faces)
    keys = edge_keys(np.sort(directed_edges(faces), axis=1))  # undirected
    owner = np.repeat(np.arange(m), 3)  # directed_edges lists each face's three edges in turn
    if mask is not None:
        sel = np.repeat(mask, 3)
        keys, owner = keys[sel], owner[sel]
    order = np.argsort(keys, kind="stable")
    k, o = keys[order], owner[order]
    same = np.flatnonzero(k[1:] == k[:-1])
    a, b = o[same], o[same + 1]
    return coo_matrix((np.ones(2 * len(a)), (np.r_[a, b], np.r_[b, a])), shape=(m, m)).tocsr()


def _grow(mask: np.ndarray, graph) -> np.ndarray:
    return mask | (graph @ mask.astype(np.float64) > 0)


def facing_region(bone_vertices: np.ndarray, bone_faces: np.ndarray, other_vertices: np.ndarray,
                  other_faces: np.ndarray, max_distance: float,
                  max_angle_deg: float = DEFAULT_MAX_ANGLE_DEG,
                  min_piece_fraction: float = MIN_PIECE_FRACTION) -> np.ndarray:
    """(m,) bool: the bone faces facing the other surface (both in one frame, outward wound).

    A face is chosen when the other surface's closest point to its centroid lies within
    ``max_distance`` and within ``max_angle_deg`` of the face's outward normal. The selection is then
    closed (grown by one ring of faces and shrunk back: pinholes and one-face notches filled) and
    pieces smaller than ``min_piece_fraction`` of its area dropped.
    """
    v = np.asarray(bone_vertices, np.float64)
    f = np.asarray(bone_faces, np.int64)
    if not max_distance > 0:
        raise ValueError("the facing distance must be positive")
    centroids = v[f].mean(axis=1)
    normals = face_normals(v, f)
    other = SurfaceProximity.build(np.asarray(other_vertices, np.float64), np.asarray(other_faces, np.int64))
    cp = other.closest(centroids, max_distance)
    mask = np.zeros(len(f), bool)
    if len(cp.index):
        d = cp.closest - centroids[cp.index]
        dist = np.linalg.norm(d, axis=1)
        cosang = np.einsum("ij,ij->i", d, normals[cp.index]) / np.maximum(dist, 1e-300)
        ok = (dist <= max_distance) & (cosang >= np.cos(np.radians(max_angle_deg)))
        mask[cp.index[ok]] = True
    if not mask.any():
        return mask
    graph = _face_graph(f)
    closed = _grow(mask, graph)
    closed = ~_grow(~closed, graph)  # erosion = complement of the grown complement
    mask = closed | mask
    return _drop_specks(v, f, mask, min_piece_fraction)


def _drop_specks(v: np.ndarray, f: np.ndarray, mask: np.ndarray, fraction: float) -> np.ndarray:
    idx = np.flatnonzero(mask)
    if not len(idx):
        return mask
    sub = _face_graph(f[idx])
    n, label = connected_components(sub, directed=False)
    tri = v[f[idx]]
    area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    piece = np.bincount(label, weights=area, minlength=n)
    keep = piece >= fraction * piece.sum()
    out = np.zeros_like(mask)
    out[idx[keep[label]]] = True
    return out


def _manifold_patch(faces: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The mask without faces on bone edges used by more than two faces, or wound against their
    neighbour (a patch must be a consistently wound manifold sheet to be offset into a solid)."""
    sel = np.flatnonzero(mask)
    e = directed_edges(faces[sel])
    keys = edge_keys(np.sort(e, axis=1))
    _, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
    # the same directed edge twice means two faces wound the same way across it
    dkeys = e[:, 0].astype(np.int64) * (int(faces.max()) + 1) + e[:, 1]
    _, dinv, dcounts = np.unique(dkeys, return_inverse=True, return_counts=True)
    bad_edge = (counts[inv] > 2) | (dcounts[dinv] > 1)
    bad_face = bad_edge.reshape(-1, 3).any(axis=1)
    out = mask.copy()
    out[sel[bad_face]] = False
    return out


@dataclass(frozen=True)
class CartilageLayer:
    """A grown layer: vertices (n, 3) and faces (m, 3) of the closed solid, ``patch_faces`` the bone
    faces it covers, ``articular`` (m,) bool the faces of its articular (offset) surface, ``offset``
    (k,) each articular vertex's offset along its normal [m]."""

    vertices: np.ndarray
    faces: np.ndarray
    patch_faces: np.ndarray
    articular: np.ndarray
    offset: np.ndarray


def grow_layer(bone_vertices: np.ndarray, bone_faces: np.ndarray, patch_mask: np.ndarray,
               thickness: float, passes: int = CORRECTION_PASSES) -> CartilageLayer:
    """A closed layer of ``thickness`` [m] on the bone faces selected by ``patch_mask``.

    Raises ValueError when the patch is empty or the thickness is not positive."""
    if not thickness > 0:
        raise ValueError("the cartilage thickness must be positive")
    v = np.asarray(bone_vertices, np.float64)
    f = np.asarray(bone_faces, np.int64)
    mask = _manifold_patch(f, np.asarray(patch_mask, bool))
    if not mask.any():
        raise ValueError("the articular region is empty: no bone face faces the other bone")
    pv, pf = submesh(v, f, mask)
    normals = vertex_normals(v, f)
    used = np.unique(f[mask])  # submesh keeps this order
    pn = normals[used]
    bone = SurfaceProximity.build(v, f)
    offset = np.full(len(pv), float(thickness))
    for _ in range(passes):
        top = pv + offset[:, None] * pn
        cp = bone.closest(top, 2.0 * MAX_OFFSET_FACTOR * thickness)
        dist = np.full(len(pv), np.nan)
        dist[cp.index] = np.abs(cp.depth)
        ok = np.isfinite(dist) & (dist > 0)
        scale = np.ones(len(pv))
        scale[ok] = thickness / dist[ok]
        offset = np.clip(offset * scale, thickness, MAX_OFFSET_FACTOR * thickness)
    top = pv + offset[:, None] * pn
    n = len(pv)
    # boundary edges of the patch, in the direction the patch's faces run them
    e = directed_edges(pf)
    keys = edge_keys(np.sort(e, axis=1))
    _, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
    rim = e[counts[inv] == 1]
    a, b = rim[:, 0], rim[:, 1]
    walls = np.concatenate([np.column_stack([b + n, a + n, a]), np.column_stack([b + n, a, b])])
    faces = np.concatenate([pf[:, ::-1], pf + n, walls])
    articular = np.zeros(len(faces), bool)
    articular[len(pf):2 * len(pf)] = True
    return CartilageLayer(np.concatenate([pv, top]), faces, np.flatnonzero(mask), articular, offset)


@dataclass(frozen=True)
class LayerReport:
    """trimesh's view of a layer: watertight, consistently wound, outward (positive volume)."""

    watertight: bool
    winding_consistent: bool
    volume_m3: float
    area_m2: float
    n_faces: int

    @property
    def ok(self) -> bool:
        return self.watertight and self.winding_consistent and self.volume_m3 > 0


def layer_report(vertices: np.ndarray, faces: np.ndarray) -> LayerReport:
    import trimesh

    tm = trimesh.Trimesh(np.asarray(vertices), np.asarray(faces), process=False, validate=False)
    return LayerReport(bool(tm.is_watertight), bool(tm.is_winding_consistent), float(tm.volume),
                       float(tm.area), len(faces))


def make_cartilage(bone_vertices: np.ndarray, bone_faces: np.ndarray, other_vertices: np.ndarray,
                   other_faces: np.ndarray, thickness: float, max_distance: float,
                   max_angle_deg: float = DEFAULT_MAX_ANGLE_DEG) -> tuple[CartilageLayer, LayerReport]:
    """The layer of ``thickness`` on the bone region facing the other surface (``facing_region``),
    checked closed and outward; ValueError when it is not."""
    mask = facing_region(bone_vertices, bone_faces, other_vertices, other_faces, max_distance, max_angle_deg)
    layer = grow_layer(bone_vertices, bone_faces, mask, thickness)
    rep = layer_report(layer.vertices, layer.faces)
    if not rep.ok:
        raise ValueError(f"the grown layer is not a closed outward solid (watertight {rep.watertight}, "
                         f"consistent winding {rep.winding_consistent}, volume {rep.volume_m3:.3g} m³)")
    return layer, rep
