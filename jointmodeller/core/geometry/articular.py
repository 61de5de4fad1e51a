"""The articular side of a cartilage layer: the faces of a (usually closed) cartilage mesh that face
away from their own bone.

Cartilage meshes from segmentation are closed thin shells: an articular surface, a bone-side
surface and narrow side walls. Only the articular surface may touch the other joint surface. With
the whole shell in a contact pair, a vertex pushed half-way into the other layer finds its nearest
face across the shell's medial axis (the bone side or a side wall), so its depth and force jump for
tiny pose changes, and bone-side vertices pop into the contact set once the other shell comes
within the search distance. Keeping the faces whose normal agrees with the bone's outward normal
beneath them leaves one smooth sheet per layer, the surface the contact springs act on.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from jointmodeller.core.geometry.collision_proximity import SurfaceProximity

#: a face is articular when its unit normal · the bone's outward normal beneath it is at least this
#: (0.5: within 60°; the side walls of a layer stand at about 90°, its bone side at 180°)
ARTICULAR_COS = 0.5


def face_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(m, 3) unit normals of the faces (right-hand rule; zero for degenerate faces)."""
    tri = vertices[faces]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    length = np.linalg.norm(n, axis=1, keepdims=True)
    return np.divide(n, length, out=np.zeros_like(n), where=length > 0)


def articular_face_mask(cartilage_vertices: np.ndarray, cartilage_faces: np.ndarray,
                        bone_vertices: np.ndarray, bone_faces: np.ndarray,
                        min_cos: float = ARTICULAR_COS) -> np.ndarray:
    """(m,) True for the cartilage faces on the articular side: face normal · outward bone normal at
    the bone point nearest the face centroid ≥ min_cos. Both meshes in the same frame, outward wound."""
    centroids = cartilage_vertices[cartilage_faces].mean(axis=1)
    bone = SurfaceProximity.build(np.asarray(bone_vertices, float), np.asarray(bone_faces, np.int64))
    reach = float(np.ptp(np.vstack([bone_vertices, cartilage_vertices]), axis=0).max()) * 2.0
    cp = bone.closest(centroids, reach)
    bone_normal = np.zeros_like(centroids)
    bone_normal[cp.index] = cp.normal
    return (face_normals(cartilage_vertices, cartilage_faces) * bone_normal).sum(axis=1) >= min_cos


def submesh(vertices: np.ndarray, faces: np.ndarray, face_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The faces selected by face_mask with only the vertices they use, renumbered (order kept)."""
    kept = faces[np.asarray(face_mask, bool)]
    used = np.unique(kept)
    renumber = np.full(len(vertices), -1, np.int64)
    renumber[used] = np.arange(len(used))
    return vertices[used], renumber[kept]


def articular_surface(cartilage_vertices: np.ndarray, cartilage_faces: np.ndarray,
                      bone_vertices: np.ndarray | None, bone_faces: np.ndarray | None,
                      min_cos: float = ARTICULAR_COS,
                      face_mask: Callable[..., np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The articular sheet (vertices, faces) of a cartilage layer on its bone; the mesh unchanged when
    there is no bone mesh or the selection would leave nothing (an already open articular surface
    keeps almost all its faces). face_mask: what computes the mask, with
    :func:`articular_face_mask`'s arguments (default: that function; the app passes its disk cache)."""
    if bone_vertices is None or bone_faces is None or len(bone_faces) == 0:
        return cartilage_vertices, cartilage_faces
    mask = (face_mask or articular_face_mask)(cartilage_vertices, cartilage_faces, bone_vertices, bone_faces,
                                              min_cos)
    if not mask.any():
        return cartilage_vertices, cartilage_faces
    return submesh(cartilage_vertices, cartilage_faces, mask)
