"""A project as one ``.npz`` file for caches (the built demo: :func:`jointmodeller.app.demo_cache.cached_demo_project`):
its rows as the strict codec's plain data (JSON text), its meshes as arrays. Reading it needs neither
SQLAlchemy nor Alembic, which the project file (:mod:`jointmodeller.persistence`) needs, so the GUI
shows the demo before it imports them (issue 18: ~0.8–1.3 s of every start). Not a file users keep or
exchange: that is the project file.

- Written by ``numpy.savez`` (plain arrays, no objects) to a temporary name in the same folder and
  renamed into place: a reader never sees half a file.
- Arrays: ``format`` and ``version``; ``project``, the JSON text of the project with its meshes taken
  out (``model.codec.row_to_data``, as the project file's draft row) and, per mass, the meshes'
  ``source`` and ``warnings``; ``m<i>_mesh_vertices_L``, ``m<i>_mesh_faces``, ``m<i>_cartilage_...``
  for mass ``i``'s meshes.
- Read with ``allow_pickle=False``, decoded strictly (``model.codec.row_from_data``, ``MeshData``'s
  checks, ``model.validation.validate_project``): anything wrong (truncated, corrupt, foreign,
  tampered) is a :class:`~jointmodeller.model.errors.ProjectFileError` or a ValidationError naming the
  file, never another exception. A cache that fails is rebuilt by its owner.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from jointmodeller.io.atomic_files import save_npz_atomically
from jointmodeller.model.codec import parse_json, row_from_data, row_to_data
from jointmodeller.model.errors import JointModellerError, ProjectFileError
from jointmodeller.model.mesh import MeshData
from jointmodeller.model.specs import Project
from jointmodeller.model.validation import validate_project

FORMAT_NAME = "jointmodeller-project-snapshot"
FORMAT_VERSION = 1
SNAPSHOT_SUFFIX = ".npz"
MESH_KINDS = ("mesh", "cartilage")
"""The meshes of a mass, as Mass names them."""


def _mesh_meta(mesh: MeshData | None) -> dict | None:
    return None if mesh is None else {"source": mesh.source, "warnings": list(mesh.warnings)}


def save_snapshot(path: str | os.PathLike, project: Project) -> Path:
    """Write ``project`` to ``path`` atomically (temporary file in the same folder, then rename);
    the folder must exist. The project is written as given (no timestamps are touched)."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {}
    meshes = []
    for i, m in enumerate(project.masses):
        meshes.append([_mesh_meta(getattr(m, kind)) for kind in MESH_KINDS])
        for kind in MESH_KINDS:
            mesh = getattr(m, kind)
            if mesh is not None:
                arrays[f"m{i}_{kind}_vertices_L"] = np.ascontiguousarray(mesh.vertices_L, dtype="<f8")
                arrays[f"m{i}_{kind}_faces"] = np.ascontiguousarray(mesh.faces, dtype="<i8")
    bare = replace(project, masses=tuple(replace(m, mesh=None, cartilage=None) for m in project.masses))
    text = json.dumps({"project": row_to_data(bare), "meshes": meshes}, sort_keys=True, allow_nan=False)
    arrays["format"] = np.array(FORMAT_NAME)
    arrays["version"] = np.array(FORMAT_VERSION, np.int64)
    arrays["project"] = np.array(text)
    return save_npz_atomically(path, arrays)


def load_snapshot(path: str | os.PathLike) -> Project:
    """The validated project stored at ``path``. ProjectFileError (or the codec's ValidationError)
    naming the file for anything wrong with it; OSError when it cannot be read at all."""
    path = Path(path)

    def damaged(why: str) -> ProjectFileError:
        return ProjectFileError(f"{path}: the project snapshot is damaged ({why})")

    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except OSError:
        raise
    except Exception as exc:  # zipfile, zlib, struct, numpy header errors...: all mean "corrupt"
        raise damaged(f"{type(exc).__name__}: {exc}") from None

    def scalar(name: str, kind: str):
        a = arrays.get(name)
        if a is None or a.shape != () or a.dtype.kind != kind:
            raise damaged(f"bad or missing {name!r}")
        return a.item()

    if scalar("format", "U") != FORMAT_NAME:
        raise ProjectFileError(f"{path}: not a JointModeller project snapshot")
    if scalar("version", "i") != FORMAT_VERSION:
        raise ProjectFileError(f"{path}: a project snapshot of another version")
    data = parse_json(scalar("project", "U"), f"{path}")
    if not isinstance(data, dict) or set(data) != {"project", "meshes"} or not isinstance(data["meshes"], list):
        raise damaged("its project text is not a snapshot's")
    bare = row_from_data(Project, data["project"], "snapshot", 0)
    if len(data["meshes"]) != len(bare.masses):
        raise damaged("its mesh list does not match its masses")
    masses = []
    for i, (m, metas) in enumerate(zip(bare.masses, data["meshes"])):
        if not isinstance(metas, list) or len(metas) != len(MESH_KINDS):
            raise damaged(f"mass {m.name!r}: bad mesh entry")
        meshes = {}
        for kind, meta in zip(MESH_KINDS, metas):
            meshes[kind] = None if meta is None else _mesh(arrays, f"m{i}_{kind}", meta, damaged)
        masses.append(replace(m, **meshes))
    return validate_project(replace(bare, masses=tuple(masses)))


def _mesh(arrays: dict[str, np.ndarray], key: str, meta, damaged) -> MeshData:
    v = arrays.get(f"{key}_vertices_L")
    f = arrays.get(f"{key}_faces")
    if v is None or f is None or v.dtype != np.dtype("<f8") or f.dtype != np.dtype("<i8"):
        raise damaged(f"{key}: missing or mistyped mesh arrays")
    if (not isinstance(meta, dict) or set(meta) != {"source", "warnings"} or not isinstance(meta["source"], str)
            or not isinstance(meta["warnings"], list) or not all(isinstance(w, str) for w in meta["warnings"])):
        raise damaged(f"{key}: bad mesh source or warnings")
    try:
        return MeshData(v, f, source=meta["source"], warnings=tuple(meta["warnings"]))
    except JointModellerError as exc:
        raise damaged(f"{key}: {exc}") from None


__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "SNAPSHOT_SUFFIX", "load_snapshot", "save_snapshot"]
