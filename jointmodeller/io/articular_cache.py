"""Disk cache of cartilage layers' articular sheets (:func:`jointmodeller.core.geometry.articular.articular_face_mask`),
so that building a project's contact pairs does not search the whole bone for every cartilage face at
every study start (~0.25 s a layer on the demo).

Key: SHA-256 of a format tag, CACHE_VERSION, the threshold ``min_cos`` and the content of both meshes
(cartilage and bone, in the frame they are given in: dtype, shape and bytes). Files: ``<key>.npz`` under
``articular/`` of the per-user cache folder (:func:`jointmodeller.io.user_cache.cache_root`), written
atomically, read with ``allow_pickle=False``; a file for another key, of the wrong shape or dtype, or
unreadable is ignored and rewritten: the mask is recomputed, never trusted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jointmodeller.core.geometry.articular import ARTICULAR_COS, articular_face_mask
from jointmodeller.io.atomic_files import save_npz_atomically
from jointmodeller.io.user_cache import cache_root, content_key

SUBFOLDER = "articular"
_TAG = b"jointmodeller-articular-mask"
CACHE_VERSION = 1


def cache_key(cartilage_vertices: np.ndarray, cartilage_faces: np.ndarray, bone_vertices: np.ndarray,
              bone_faces: np.ndarray, min_cos: float) -> str:
    """Hex SHA-256 naming the mask of this cartilage on this bone at this threshold."""
    header = _TAG + np.array([CACHE_VERSION], np.int64).tobytes() + np.array([min_cos], np.float64).tobytes()
    return content_key(header, (np.asarray(cartilage_vertices, np.float64), np.asarray(cartilage_faces, np.int64),
                                np.asarray(bone_vertices, np.float64), np.asarray(bone_faces, np.int64)))


def _load(path: Path, key: str, n_faces: int) -> np.ndarray | None:
    """The stored mask, or None when the file is absent or not this key's (n_faces,) bool mask."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            stored_key, mask = npz["cache_key"], npz["mask"]
    except Exception:  # absent, truncated, corrupt, foreign: all mean "compute it again"
        return None
    if stored_key.shape != () or stored_key.dtype.kind != "U" or stored_key.item() != key:
        return None
    if mask.dtype != np.bool_ or mask.shape != (n_faces,):
        return None
    return mask


def cached_articular_face_mask(cartilage_vertices: np.ndarray, cartilage_faces: np.ndarray,
                               bone_vertices: np.ndarray, bone_faces: np.ndarray,
                               min_cos: float = ARTICULAR_COS, folder: str | Path | None = None) -> np.ndarray:
    """:func:`articular_face_mask` of these meshes, from the disk cache when it holds it (else
    computed and stored; a cache folder that cannot be written costs speed, never the result)."""
    key = cache_key(cartilage_vertices, cartilage_faces, bone_vertices, bone_faces, min_cos)
    path = Path(cache_root() / SUBFOLDER if folder is None else folder) / f"{key}.npz"
    mask = _load(path, key, len(cartilage_faces))
    if mask is not None:
        return mask
    mask = articular_face_mask(cartilage_vertices, cartilage_faces, bone_vertices, bone_faces, min_cos)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        save_npz_atomically(path, {"cache_key": np.array(key), "mask": np.asarray(mask, np.bool_)})
    except OSError:
        pass
    return mask
