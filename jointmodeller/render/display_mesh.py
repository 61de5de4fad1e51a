"""The decimated meshes the scene draws for bones (pyvista, no Qt): :func:`display_mesh` turns a
MeshData into a PolyData of at most DISPLAY_MAX_FACES triangles, cached in memory and on disk."""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pyvista as pv

DISPLAY_MAX_FACES = 10000
"""Bones are drawn with at most this many triangles (quadric decimation, cached per mesh): a frame of
the demo costs ~40 ms instead of ~140 ms on software OpenGL. Picking still snaps to the full mesh."""
DISPLAY_CACHE_VERSION = 1
"""Of the decimated meshes kept on disk (:func:`display_mesh`'s ``cache_dir``); part of their key."""

_DISPLAY_CACHE: dict[tuple[int, int], tuple[object, pv.PolyData]] = {}


def display_mesh(mesh, cache_dir: str | os.PathLike | None = None,
                 max_faces: int = DISPLAY_MAX_FACES) -> pv.PolyData:
    """The PolyData drawn for a MeshData (in L): decimated to ``max_faces`` (default DISPLAY_MAX_FACES),
    cached in memory and, with ``cache_dir``, on disk: the decimation of a 60k-face bone takes
    ~0.15–0.3 s, reading it back ~10 ms (the GUI passes its per-user cache folder, so a project opens
    that much faster the second time). Fewer faces than DISPLAY_MAX_FACES (the live view's level of
    detail, :mod:`jointmodeller.render.live_detail`) are decimated from the display mesh, ~50 ms. The
    file is named by a hash of the mesh's vertices and faces, ``max_faces`` and VTK's version, holds
    the same points and triangles the decimation gave, and is rebuilt when it cannot be read or does
    not carry its key."""
    max_faces = int(max_faces)
    hit = _DISPLAY_CACHE.get((id(mesh), max_faces))
    if hit is not None and hit[0] is mesh:
        return hit[1]
    poly = None
    path = None
    if mesh.n_faces > max_faces and cache_dir is not None:
        key = display_cache_key(mesh, max_faces)
        path = Path(cache_dir) / f"display-{key}.vtp"
        poly = _read_display(path, key)
    if poly is None:
        if max_faces < DISPLAY_MAX_FACES and mesh.n_faces > max_faces:
            poly = display_mesh(mesh, cache_dir)  # the display mesh is the cheaper source
        else:
            faces = np.hstack([np.full((mesh.n_faces, 1), 3), mesh.faces]).ravel()
            poly = pv.PolyData(np.array(mesh.vertices_L), faces)
        if poly.n_cells > max_faces:
            poly = poly.decimate(1.0 - max_faces / poly.n_cells)
            if path is not None:
                _write_display(poly, path, key)
    if len(_DISPLAY_CACHE) > 64:
        _DISPLAY_CACHE.clear()
    _DISPLAY_CACHE[(id(mesh), max_faces)] = (mesh, poly)
    return poly


def display_cache_key(mesh, max_faces: int = DISPLAY_MAX_FACES) -> str:
    """Hex SHA-256 naming the decimated display mesh of a MeshData (at most ``max_faces`` triangles)."""
    h = hashlib.sha256(b"jointmodeller-display-mesh")
    h.update(np.array([DISPLAY_CACHE_VERSION, int(max_faces)], np.int64).tobytes())
    h.update(repr(tuple(pv.vtk_version_info)).encode())
    for a in (np.ascontiguousarray(mesh.vertices_L, np.float64), np.ascontiguousarray(mesh.faces, np.int64)):
        h.update(f"{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


_KEY_FIELD = "jointmodeller_display_key"


def _read_display(path: Path, key: str) -> pv.PolyData | None:
    """The cached decimated mesh at ``path`` when it is there, whole and carries ``key``; else None."""
    if not path.is_file():
        return None
    try:
        with pv.vtk_verbosity("off"), warnings.catch_warnings(), pv.VtkErrorCatcher(raise_errors=True):
            warnings.simplefilter("ignore")  # a damaged file is not news: it is rebuilt
            poly = pv.read(path)
        ok = (isinstance(poly, pv.PolyData) and poly.n_cells > 0 and poly.is_all_triangles
              and _KEY_FIELD in poly.field_data and str(poly.field_data[_KEY_FIELD][0]) == key)
    except Exception:  # a damaged or foreign file: decimate again and rewrite it
        return None
    if not ok:
        return None
    poly.field_data.remove(_KEY_FIELD)
    return poly


def _write_display(poly: pv.PolyData, path: Path, key: str) -> None:
    """Keep the decimated mesh at ``path`` (a temporary file renamed into place; best effort)."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".display-", suffix=".vtp", dir=path.parent)
        os.close(fd)
        stored = poly.copy(deep=False)
        stored.field_data[_KEY_FIELD] = np.array([key])
        stored.save(tmp, binary=True)
        os.replace(tmp, path)
        tmp = None
    except Exception:  # an unwritable cache only costs the next start-up the decimation
        pass
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


__all__ = ["DISPLAY_CACHE_VERSION", "DISPLAY_MAX_FACES", "display_cache_key", "display_mesh"]
