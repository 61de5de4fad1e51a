"""Bone surface import and export: STL, OBJ, PLY, OFF (trimesh); VTP, VTK (pyvista/VTK); VRML (.wrl).

``read_mesh`` returns a cleaned MeshData in metres: duplicate vertices merged, degenerate and duplicate
faces dropped, unreferenced vertices removed. Open or non-manifold surfaces are accepted with a
warning (segmentation output usually is); a size that looks wrong for a bone gets a unit hint.
Anything unusable (missing, empty, NaN, all-degenerate, unreadable) raises MeshError naming the file
and what is wrong; nothing else is raised.
"""

from __future__ import annotations

import contextlib
import io as _stdio
import re
import struct
import sys
import warnings
from pathlib import Path
from typing import Literal

import numpy as np

from jointmodeller.core.geometry.mesh_checks import degenerate_faces, surface_report
from jointmodeller.io.mesh_vrml import VrmlError, read_vrml, write_vrml
from jointmodeller.io.vtk_headers import check_vtk_sizes
from jointmodeller.model.errors import MeshError
from jointmodeller.model.mesh import MeshData

Units = Literal["mm", "m"]
UNIT_SCALE: dict[str, float] = {"mm": 1.0e-3, "m": 1.0}
TRIMESH_SUFFIXES = (".stl", ".obj", ".ply", ".off")
VTK_SUFFIXES = (".vtp", ".vtk")
VRML_SUFFIXES = (".wrl", ".vrml", ".wrz")
SUPPORTED_SUFFIXES = TRIMESH_SUFFIXES + VTK_SUFFIXES + VRML_SUFFIXES

BONE_SIZE_RANGE_M = (3.0e-3, 1.0)
"""Plausible bounding-box diagonal of a bone or cartilage surface [m] (a hint outside it, no error)."""
MERGE_DIGITS = 9
"""Vertices equal after rounding to 1e-9 of the mesh size are merged."""


def _fail(path: Path, what: str) -> MeshError:
    return MeshError(f"mesh file {str(path)!r}: {what}")


def _check_binary_stl(path: Path, raw: bytes) -> None:
    """Raise for a binary STL whose triangle count disagrees with its length (a truncated file)."""
    if len(raw) < 84 or raw[:5].lower() == b"solid" and b"facet" in raw[:2048]:
        return
    (n,) = struct.unpack("<I", raw[80:84])
    expected = 84 + 50 * n
    if len(raw) < expected:
        raise _fail(path, f"truncated binary STL: header announces {n} triangles "
                          f"({expected} bytes) but the file has {len(raw)} bytes")


_ENDSOLID_RE = re.compile(rb"endsolid[^\n]*", re.I)
_VERTEX_LINE_RE = re.compile(rb"^[ \t]*vertex[ \t]", re.I | re.M)
_BINARY_BYTES_RE = re.compile(rb"[\x00-\x08\x0e-\x1f\x7f]")


def _is_binary_stl(raw: bytes) -> bool:
    """trimesh's test: a binary STL's triangle count (bytes 80-84) matches its length exactly."""
    return len(raw) >= 84 and 84 + 50 * struct.unpack("<I", raw[80:84])[0] == len(raw)


def _check_ascii_stl(path: Path, raw: bytes) -> int | None:
    """For an STL that will be read as text: refuse binary bytes in it and anything after its last
    'endsolid' line (trimesh reads only solid…endsolid blocks, so both would be dropped silently).
    Returns how many 'vertex' lines it has, or None for a binary STL."""
    if _is_binary_stl(raw) or raw[:5].lower() != b"solid":
        return None
    ends = list(_ENDSOLID_RE.finditer(raw))
    if not ends:
        raise _fail(path, "ASCII STL without an 'endsolid' line: the file is truncated")
    body, tail = raw[:ends[-1].end()], raw[ends[-1].end():]
    if tail.strip():
        raise _fail(path, f"ASCII STL with {len(tail.strip())} bytes after its last 'endsolid' line "
                          "(binary data appended, or a damaged file); they would be dropped")
    bad = _BINARY_BYTES_RE.search(body)
    if bad:
        line = body.count(b"\n", 0, bad.start()) + 1
        raise _fail(path, f"ASCII STL with binary data on line {line}: the file is damaged")
    return len(_VERTEX_LINE_RE.findall(body))


def _read_trimesh(path: Path) -> tuple[np.ndarray, np.ndarray]:
    import trimesh

    raw = path.read_bytes()
    ascii_vertices = None
    if path.suffix.lower() == ".stl":
        _check_binary_stl(path, raw)
        ascii_vertices = _check_ascii_stl(path, raw)
    try:
        with contextlib.redirect_stderr(_stdio.StringIO()):
            loaded = trimesh.load(path, force="mesh", process=False)
    except Exception as exc:  # trimesh raises many kinds for garbage input
        raise _fail(path, f"cannot be read as {path.suffix.upper()[1:]} ({type(exc).__name__}: {exc})") from exc
    if not isinstance(loaded, trimesh.Trimesh):
        raise _fail(path, "holds no triangle surface")
    if ascii_vertices is not None and ascii_vertices != 3 * len(loaded.faces):
        raise _fail(path, f"ASCII STL with {ascii_vertices} 'vertex' lines of which only {3 * len(loaded.faces)} "
                          "could be read as triangle corners: the file is damaged")
    return np.asarray(loaded.vertices, dtype=np.float64), np.asarray(loaded.faces, dtype=np.int64)


def _read_vtk(path: Path) -> tuple[np.ndarray, np.ndarray]:
    import pyvista as pv

    impossible = check_vtk_sizes(path.read_bytes())  # before VTK allocates what the header claims
    if impossible:
        raise _fail(path, impossible)

    from vtkmodules.vtkCommonCore import vtkLogger, vtkObject

    shown = vtkObject.GetGlobalWarningDisplay()
    cutoff = vtkLogger.GetCurrentVerbosityCutoff()
    vtkObject.GlobalWarningDisplayOff()  # garbage input: report it once, as a MeshError
    vtkLogger.SetStderrVerbosity(vtkLogger.VERBOSITY_OFF)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            data = pv.read(path)
    except Exception as exc:
        raise _fail(path, f"cannot be read as {path.suffix.upper()[1:]} ({type(exc).__name__}: {exc})") from exc
    finally:
        vtkObject.SetGlobalWarningDisplay(shown)
        vtkLogger.SetStderrVerbosity(vtkLogger.ConvertToVerbosity(cutoff))
    errors = [str(w.message).strip() for w in caught if "error" in str(w.message).lower()]
    if errors and (data is None or data.n_points == 0):
        raise _fail(path, f"cannot be read as {path.suffix.upper()[1:]} ({errors[0].splitlines()[0]})")
    if isinstance(data, pv.MultiBlock):
        blocks = [b for b in data if b is not None]
        if any(not isinstance(b, pv.DataSet) for b in blocks):
            raise _fail(path, "holds nested groups of datasets; export one surface")
        try:
            data = pv.MultiBlock([_checked_copy(b) for b in blocks if b.n_points]).combine() if blocks else None
        except ValueError as exc:
            raise _fail(path, str(exc)) from None
    if data is None or data.n_points == 0:
        raise _fail(path, "holds no points")
    # VTK's filters trust the cells they are given: an out-of-range point id in a damaged file makes
    # them read outside the points and crash the process. Filter a copy holding only checked cells.
    try:
        data = _checked_copy(data)
    except ValueError as exc:
        raise _fail(path, str(exc)) from None
    surf = data.extract_surface() if not isinstance(data, pv.PolyData) else data
    if surf.n_cells == 0 or surf.faces.size == 0:
        raise _fail(path, "holds no surface polygons")
    tri = surf.triangulate()
    faces = np.asarray(tri.faces, dtype=np.int64).reshape(-1, 4)
    faces = faces[faces[:, 0] == 3, 1:]
    return np.asarray(tri.points, dtype=np.float64), faces


VTK_CELL_SIZES = {1: (1, 1), 2: (1, None), 3: (2, 2), 4: (2, None), 5: (3, 3), 6: (3, None), 7: (3, None),
                  8: (4, 4), 9: (4, 4), 10: (4, 4), 11: (8, 8), 12: (8, 8), 13: (6, 6), 14: (5, 5)}
"""Linear VTK cell types an unstructured grid may hold: type -> (fewest, most) points (None: any)."""


def _cell_arrays(cells, n_points: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and connectivity of a vtkCellArray, checked: offsets start at 0, never decrease, end
    at the connectivity's length, and every point id is in [0, n_points)."""
    from vtkmodules.util.numpy_support import vtk_to_numpy

    offsets = np.array(vtk_to_numpy(cells.GetOffsetsArray()), dtype=np.int64)
    conn = np.array(vtk_to_numpy(cells.GetConnectivityArray()), dtype=np.int64)
    if len(offsets) == 0:
        return np.zeros(1, np.int64), conn[:0]
    if offsets[0] != 0 or offsets[-1] != len(conn) or (np.diff(offsets) < 0).any():
        raise ValueError(f"its {what} are damaged (cell offsets out of order)")
    if len(conn) and (conn.min() < 0 or conn.max() >= n_points):
        bad = int(conn[(conn < 0) | (conn >= n_points)][0])
        raise ValueError(f"one of its {what} refers to point {bad}, which does not exist ({n_points} points)")
    return offsets, conn


def _vtk_cells(offsets: np.ndarray, conn: np.ndarray):
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonDataModel import vtkCellArray

    cells = vtkCellArray()
    cells.SetData(numpy_to_vtk(offsets, deep=True), numpy_to_vtk(conn, deep=True))
    return cells


def _checked_copy(data):
    """A copy of a VTK dataset with only its points and its checked cells (no data arrays): polygons
    and strips of a PolyData; linear cells of an UnstructuredGrid. Grids without explicit cells
    (image, structured, rectilinear) are returned as they are. ValueError says what is damaged."""
    import pyvista as pv

    points = np.array(data.points, dtype=np.float64)
    n = len(points)
    if isinstance(data, pv.PolyData):
        out = pv.PolyData(points)
        for name, get, put in (("polygons", data.GetPolys, out.SetPolys), ("strips", data.GetStrips, out.SetStrips)):
            offsets, conn = _cell_arrays(get(), n, name)
            put(_vtk_cells(offsets, conn))
        return out
    if isinstance(data, pv.UnstructuredGrid):
        offsets, conn = _cell_arrays(data.GetCells(), n, "cells")
        types = np.asarray(data.celltypes, dtype=np.int64)
        sizes = np.diff(offsets)
        if len(types) != len(sizes):
            raise ValueError("its cell types do not match its cells")
        for t in np.unique(types).tolist():
            if t not in VTK_CELL_SIZES:
                raise ValueError(f"it holds VTK cells of type {t}; only linear cells are read")
            lo, hi = VTK_CELL_SIZES[t]
            k = sizes[types == t]
            if k.min() < lo or (hi is not None and k.max() > hi):
                raise ValueError(f"a cell of VTK type {t} has {int(k.min() if k.min() < lo else k.max())} points")
        return pv.UnstructuredGrid({}, points) if len(types) == 0 else pv.UnstructuredGrid(
            np.insert(conn, offsets[:-1], sizes), types.astype(np.uint8), points)
    return data


LEGACY_VTK_TIMEOUT_S = 300.0
"""Wall-time limit of the process that reads a legacy .vtk file."""


def _read_legacy_vtk_isolated(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Read a legacy .vtk file in a child process. VTK's legacy reader trusts the cell sizes inside
    the data (a flipped byte in a binary file makes it write past its buffers and the process dies
    with SIGSEGV, which Python cannot catch); in a child, such a crash is a MeshError, not the end of
    the app and its unsaved work."""
    import os
    import subprocess
    import tempfile

    import jointmodeller

    package_root = str(Path(jointmodeller.__file__).resolve().parents[1])  # this very package, in the child
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory(prefix="jointmodeller-vtk-") as tmp:
        out = Path(tmp) / "mesh.npz"
        cmd = [sys.executable, "-c", "import sys; from jointmodeller.io.meshes import _legacy_vtk_child; "
               "sys.exit(_legacy_vtk_child(sys.argv[1], sys.argv[2]))", str(path), str(out)]
        try:
            done = subprocess.run(cmd, capture_output=True, timeout=LEGACY_VTK_TIMEOUT_S, stdin=subprocess.DEVNULL,
                                  env=env)
        except subprocess.TimeoutExpired:
            raise _fail(path, f"VTK did not finish reading it within {LEGACY_VTK_TIMEOUT_S:.0f} s") from None
        except OSError as exc:
            raise _fail(path, f"cannot start the VTK reader ({exc.strerror or exc})") from None
        if done.returncode == 3:  # a MeshError in the child: its message
            raise MeshError(done.stdout.decode("utf-8", "replace").strip())
        if done.returncode < 0 or done.returncode > 128:  # killed by a signal (SIGSEGV, SIGABRT, ...)
            sig = -done.returncode if done.returncode < 0 else done.returncode - 128
            raise _fail(path, f"VTK's reader crashed on it (signal {sig}): the file is damaged")
        if done.returncode != 0 or not out.is_file():
            last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
            raise _fail(path, f"the process reading it with VTK failed ({last[:200]})")
        with np.load(out, allow_pickle=False) as data:
            return np.asarray(data["vertices"], dtype=np.float64), np.asarray(data["faces"], dtype=np.int64)


def _legacy_vtk_child(path: str, out: str) -> int:
    """Child side of _read_legacy_vtk_isolated: 0 and the arrays in ``out``, or 3 and the message."""
    try:
        v, f = _read_vtk(Path(path))
    except MeshError as exc:
        sys.stdout.write(str(exc))
        return 3
    np.savez(out, vertices=v, faces=f)
    return 0


def _read_raw(path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    suffix = path.suffix.lower()
    if suffix in TRIMESH_SUFFIXES:
        return (*_read_trimesh(path), [])
    if suffix == ".vtk":
        impossible = check_vtk_sizes(path.read_bytes())  # no child for a file refused at once
        if impossible:
            raise _fail(path, impossible)
        return (*_read_legacy_vtk_isolated(path), [])
    if suffix in VTK_SUFFIXES:
        return (*_read_vtk(path), [])
    try:
        return read_vrml(path)
    except (VrmlError, UnicodeError, ValueError, IndexError) as exc:
        raise _fail(path, f"cannot be read as VRML ({exc})") from exc


def _collapse_degenerate(v: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, int]:
    """Merge the two ends of the shortest edge of every zero-area face (needles and caps from
    marching cubes or CAD export), so removing the face keeps a closed surface closed."""
    bad = degenerate_faces(v, f) & ~((f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 2] == f[:, 0]))
    if not bad.any():
        return f, 0
    tri = v[f[bad]]
    lengths = np.stack([np.linalg.norm(tri[:, (k + 1) % 3] - tri[:, k], axis=1) for k in range(3)], axis=1)
    k = np.argmin(lengths, axis=1)
    fb = f[bad]
    a, b = fb[np.arange(len(fb)), k], fb[np.arange(len(fb)), (k + 1) % 3]
    parent = np.arange(len(v))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in zip(a.tolist(), b.tolist()):
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    roots = np.array([find(i) for i in range(len(v))]) if len(fb) else parent
    return roots[f], int(bad.sum())


def _drop_duplicate_faces(f: np.ndarray) -> tuple[np.ndarray, int]:
    """Drop repeated faces; a pair of faces on the same three vertices wound oppositely (a flattened
    pillow left by collapsing) is dropped entirely."""
    if len(f) == 0:
        return f, 0
    key = np.sort(f, axis=1)
    n = int(f.max()) + 1
    if n < 2_000_000:  # one int64 per face (no overflow below 2M vertices): fast 1-D unique
        _, inverse, counts = np.unique((key[:, 0] * n + key[:, 1]) * n + key[:, 2], return_inverse=True,
                                       return_counts=True)
    else:
        _, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    dup = counts[inverse] > 1
    if not dup.any():
        return f, 0
    # orientation sign of each face relative to its sorted key: even or odd permutation
    rot = np.argmin(f, axis=1)
    g = np.stack([f[np.arange(len(f)), (rot + k) % 3] for k in range(3)], axis=1)
    sign = np.where(g[:, 1] < g[:, 2], 1, -1)
    keep = np.ones(len(f), dtype=bool)
    for group in np.unique(inverse[dup]).tolist():
        idx = np.flatnonzero(inverse == group)
        if len(idx) == 2 and sign[idx[0]] != sign[idx[1]]:
            keep[idx] = False
        else:
            keep[idx[1:]] = False
    return f[keep], int((~keep).sum())


def clean_surface(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Merge duplicate vertices, collapse zero-area faces, drop duplicate faces and unused vertices.

    vertices (n, 3), faces (m, 3) -> cleaned (n', 3), (m', 3) and notes on what was changed.
    """
    notes: list[str] = []
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    scale = float(np.ptp(v, axis=0).max()) if len(v) else 0.0
    q = np.ascontiguousarray(np.round(v / (scale if scale > 0 else 1.0), MERGE_DIGITS) + 0.0)  # no -0.0
    rows = q.view(np.dtype((np.void, q.dtype.itemsize * 3))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    n_merged = len(v) - len(first)
    v, f = v[first], inverse[f]
    if n_merged and n_merged * 2 < len(vertices):  # STL stores each triangle's corners: no news
        notes.append(f"merged {n_merged} duplicate vertices")
    f, n_collapsed = _collapse_degenerate(v, f)
    repeated = (f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 2] == f[:, 0])
    if repeated.any() or n_collapsed:
        notes.append(f"removed {int(repeated.sum())} degenerate faces (zero area or repeated vertex)")
        f = f[~repeated]
    f, n_dup = _drop_duplicate_faces(f)
    if n_dup:
        notes.append(f"dropped {n_dup} duplicate faces")
    used = np.unique(f)
    if len(used) < len(v):
        remap = np.full(len(v), -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        v, f = v[used], remap[f]
    return v, f, notes


def size_hint(vertices_m: np.ndarray, units: str) -> str | None:
    """A hint when the bounding box of vertices (n, 3) [m] is implausible for a bone, else None."""
    diag = float(np.linalg.norm(np.ptp(vertices_m, axis=0)))
    lo, hi = BONE_SIZE_RANGE_M
    if diag < lo:
        other = "m" if units == "mm" else "a larger unit"
        return (f"the mesh is only {diag * 1e3:.3g} mm across, small for a bone: "
                f"was the file in {other} rather than {units}?")
    if diag > hi:
        other = "mm" if units == "m" else "a smaller unit"
        return (f"the mesh is {diag:.3g} m across, large for a bone: "
                f"was the file in {other} rather than {units}?")
    return None


def read_mesh(path: str | Path, units: Units = "mm", name: str | None = None) -> MeshData:
    """Read a surface mesh file into a cleaned MeshData in metres.

    units: the length unit of the file's coordinates ("mm" or "m"). name: the MeshData's source label
    (default: the file name). Findings (open, non-manifold, repairs, unit hint) go to ``warnings``.
    """
    path = Path(path)
    if units not in UNIT_SCALE:
        raise MeshError(f"mesh file {str(path)!r}: units must be 'mm' or 'm', got {units!r}")
    if path.suffix.lower() not in SUPPORTED_SUFFIXES:
        raise _fail(path, f"unsupported format {path.suffix!r} (supported: {', '.join(SUPPORTED_SUFFIXES)})")
    if not path.is_file():
        raise _fail(path, "does not exist or is not a file")
    try:
        if path.stat().st_size == 0:
            raise _fail(path, "is empty")
        vertices, faces, notes_read = _read_raw(path)
    except OSError as exc:
        raise _fail(path, f"cannot be read ({exc.strerror or exc})") from exc
    vertices, faces = np.asarray(vertices), np.asarray(faces)
    if vertices.ndim != 2 or vertices.shape[1] != 3 or faces.ndim != 2 or faces.shape[1] != 3:
        # a damaged OBJ line ("v 1 2") makes trimesh guess another column count
        raise _fail(path, f"vertices or faces are not rows of three numbers (vertices {vertices.shape}, "
                          f"faces {faces.shape})")
    if len(vertices) == 0 or len(faces) == 0:
        raise _fail(path, "holds no triangles")
    if not np.isfinite(vertices).all():
        raise _fail(path, "vertices contain NaN or infinite coordinates")
    if faces.min() < 0 or faces.max() >= len(vertices):
        raise _fail(path, "a face refers to a vertex that does not exist")
    n_faces_in = len(faces)
    vertices, faces, notes = clean_surface(vertices * UNIT_SCALE[units], faces)
    if len(faces) == 0:
        raise _fail(path, f"all {n_faces_in} faces are degenerate (zero area)")
    found = list(notes_read) + notes
    report = surface_report(faces, len(vertices))
    findings = report.describe()
    if findings:
        found.append("; ".join(findings) + " — accepted; mass properties use the documented fallback"
                     if not report.closed else "; ".join(findings))
    hint = size_hint(vertices, units)
    if hint:
        found.append(hint)
    return MeshData(vertices_L=vertices, faces=faces, source=name or path.name, warnings=tuple(found))


def write_mesh(mesh: MeshData, path: str | Path, units: Units = "m") -> Path:
    """Write a MeshData to a file chosen by suffix (formats as read_mesh), coordinates in ``units``."""
    path = Path(path)
    suffix = path.suffix.lower()
    if units not in UNIT_SCALE:
        raise MeshError(f"mesh file {str(path)!r}: units must be 'mm' or 'm', got {units!r}")
    v = np.asarray(mesh.vertices_L) / UNIT_SCALE[units]
    f = np.asarray(mesh.faces)
    try:
        _write(path, suffix, v, f, mesh.source)
    except OSError as exc:
        raise MeshError(f"mesh file {str(path)!r}: cannot be written ({exc.strerror or exc})") from exc
    return path


def _write(path: Path, suffix: str, v: np.ndarray, f: np.ndarray, source: str) -> None:
    if suffix in TRIMESH_SUFFIXES:
        import trimesh

        trimesh.Trimesh(v, f, process=False).export(path)
    elif suffix in VTK_SUFFIXES:
        import pyvista as pv

        cells = np.hstack([np.full((len(f), 1), 3, dtype=np.int64), f]).ravel()
        pv.PolyData(v, cells).save(path, binary=True)
    elif suffix in (".wrl", ".vrml"):
        write_vrml(path, v, f, name=source or path.stem)
    else:
        raise _fail(path, f"cannot write format {path.suffix!r} (supported: .stl, .obj, .ply, .off, .vtp, "
                          ".vtk, .wrl, .vrml)")
