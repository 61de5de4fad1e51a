"""Disk cache of signed distance fields (:mod:`jointmodeller.core.geometry.sdf`), so that a project's
fields are built once per mesh and read back when the project opens again.

- Key: SHA-256 of a format tag, the field's ``FORMAT_VERSION``, the grid parameters (resolved spacing,
  band in cells, block size, whether the nodes' closest faces are kept) and the mesh's content
  (vertices as float64 and faces as int64: dtype, shape and bytes). Another mesh, another resolution
  or another data layout is another file.
- Folder: ``$JOINTMODELLER_CACHE/sdf`` when that variable is set (as for the demo's cache), else
  ``$XDG_CACHE_HOME/jointmodeller/sdf``, else ``~/.cache/jointmodeller/sdf``.
- Files: ``<key>.npz`` written by ``numpy.savez`` (plain arrays, no objects) to a temporary name and
  renamed into place (readers never see half a file). Read with ``allow_pickle=False``; the stored key,
  format version and a SHA-256 digest of the arrays must match, and every array is checked by
  ``SignedDistanceField.from_arrays`` (dtypes, shapes, index ranges: the kernels index without bounds
  checks). Anything wrong — truncated, corrupt, foreign, tampered — and the field is rebuilt and the
  file rewritten; it is never trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jointmodeller.core.geometry.sdf import (
    BLOCK,
    DEFAULT_BAND_CELLS,
    FORMAT_VERSION,
    SignedDistanceField,
    default_spacing,
)
from jointmodeller.io.atomic_files import save_npz_atomically
from jointmodeller.io.user_cache import cache_root, content_key

SUBFOLDER = "sdf"
_TAG = b"jointmodeller-sdf-cache"
#: version of the file layout around the field's arrays (key, format, digest)
CACHE_VERSION = 1


def cache_dir() -> Path:
    """The folder of cached fields (not created here)."""
    return cache_root() / SUBFOLDER


def resolved_spacing(vertices: np.ndarray, faces: np.ndarray, spacing: float | None) -> float:
    return float(default_spacing(vertices, faces) if spacing is None else spacing)


def cache_key(vertices: np.ndarray, faces: np.ndarray, spacing: float | None = None,
              band_cells: float = DEFAULT_BAND_CELLS, keep_faces: bool = False) -> str:
    """Hex SHA-256 naming the field of this mesh at these grid parameters."""
    v = np.ascontiguousarray(vertices, dtype=np.float64)
    f = np.ascontiguousarray(faces, dtype=np.int64)
    header = (_TAG + np.array([CACHE_VERSION, FORMAT_VERSION, BLOCK, int(keep_faces)], np.int64).tobytes()
              + np.array([resolved_spacing(v, f, spacing), float(band_cells)], np.float64).tobytes())
    return content_key(header, (v, f))


def cache_path(key: str, folder: str | Path | None = None) -> Path:
    return Path(cache_dir() if folder is None else folder) / f"{key}.npz"


def save_field(sdf: SignedDistanceField, path: str | Path, key: str) -> Path:
    """Write the field atomically (temporary file in the same folder, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = sdf.to_arrays()
    arrays["cache_key"] = np.array(key)
    arrays["cache_version"] = np.array(CACHE_VERSION, np.int64)
    arrays["format_version"] = np.array(FORMAT_VERSION, np.int64)
    arrays["digest"] = np.array(sdf.digest())
    return save_npz_atomically(path, arrays)


def load_field(path: str | Path, key: str) -> SignedDistanceField:
    """The field stored at ``path`` under ``key``. ValueError (or OSError) when the file is missing,
    unreadable, for another key or version, or fails any check."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except OSError:
        raise
    except Exception as exc:  # zipfile, zlib, struct, numpy header errors...: all mean "corrupt"
        raise ValueError(f"unreadable cache file {path}: {type(exc).__name__}: {exc}") from exc
    def scalar(name, dtype_kind):
        a = arrays.get(name)
        if a is None or a.shape != () or a.dtype.kind != dtype_kind:
            raise ValueError(f"cache file {path}: bad {name}")
        return a.item()

    if scalar("cache_version", "i") != CACHE_VERSION or scalar("format_version", "i") != FORMAT_VERSION:
        raise ValueError(f"cache file {path}: other version")
    if scalar("cache_key", "U") != key:
        raise ValueError(f"cache file {path}: other key")
    sdf = SignedDistanceField.from_arrays(arrays)
    if sdf.digest() != scalar("digest", "U"):
        raise ValueError(f"cache file {path}: digest mismatch")
    return sdf


@dataclass(frozen=True)
class CacheResult:
    """What :func:`cached_field` did: ``hit`` read from disk; otherwise built (and ``stored`` unless
    the folder could not be written), ``reason`` why the file was not used."""

    field: SignedDistanceField
    path: Path
    hit: bool
    stored: bool
    reason: str = ""


def cached_field(vertices: np.ndarray, faces: np.ndarray, spacing: float | None = None,
                 band_cells: float = DEFAULT_BAND_CELLS, folder: str | Path | None = None,
                 use_numba: bool | None = None, keep_faces: bool = False) -> CacheResult:
    """The mesh's field from the disk cache, or built (and cached) when absent or not trustworthy;
    ``keep_faces``: with its nodes' closest faces (``SignedDistanceField.build``)."""
    v = np.ascontiguousarray(vertices, dtype=np.float64)
    f = np.ascontiguousarray(faces, dtype=np.int64)
    h = resolved_spacing(v, f, spacing)
    key = cache_key(v, f, h, band_cells, keep_faces)
    path = cache_path(key, folder)
    reason = "absent"
    if path.is_file():
        try:
            sdf = load_field(path, key)
            if keep_faces and (sdf.node_faces is None or sdf.mesh_face_count != len(f)):
                raise ValueError(f"cache file {path}: no node faces for this mesh")
            return CacheResult(sdf, path, True, False)
        except (ValueError, OSError) as exc:
            reason = f"rebuilt: {exc}"
    sdf = SignedDistanceField.build(v, f, spacing=h, band_cells=band_cells, use_numba=use_numba,
                                    keep_faces=keep_faces)
    try:
        save_field(sdf, path, key)
        stored = True
    except OSError as exc:  # a read-only or full cache folder costs speed, never the result
        stored, reason = False, f"{reason}; not stored: {exc}"
    return CacheResult(sdf, path, False, stored, reason)
