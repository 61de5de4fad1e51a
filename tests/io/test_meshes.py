"""Mesh import: every format, units and hints, cleaning, the real meshes, and broken files."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
import trimesh

from jointmodeller.core.geometry.mass_properties import mesh_mass_properties
from jointmodeller.io.meshes import SUPPORTED_SUFFIXES, read_mesh, write_mesh
from jointmodeller.model.errors import MeshError
from jointmodeller.model.mesh import MeshData


@pytest.fixture(scope="module")
def sphere_mm() -> MeshData:
    """A closed 30 mm sphere, coordinates in millimetres (as a segmentation export would be)."""
    s = trimesh.creation.icosphere(3, radius=15.0)
    return MeshData(vertices_L=s.vertices, faces=s.faces, source="sphere")


@pytest.mark.parametrize("suffix", [".stl", ".obj", ".ply", ".off", ".vtp", ".vtk", ".wrl"])
def test_round_trip_every_format(tmp_path, sphere_mm, suffix):
    path = write_mesh(sphere_mm, tmp_path / f"sphere{suffix}", units="m")  # numbers written as given
    mesh = read_mesh(path, units="mm")
    assert mesh.n_vertices == sphere_mm.n_vertices and mesh.n_faces == sphere_mm.n_faces
    assert mesh.source == f"sphere{suffix}"
    assert mesh.warnings == ()
    # same surface: same set of vertices, scaled to metres; same enclosed volume
    assert np.allclose(np.sort(mesh.vertices_L, axis=0), np.sort(sphere_mm.vertices_L, axis=0) * 1e-3, atol=1e-9)
    vol = mesh_mass_properties(mesh, 1000.0).volume_m3
    ref = mesh_mass_properties(MeshData(sphere_mm.vertices_L * 1e-3, sphere_mm.faces), 1000.0).volume_m3
    assert vol == pytest.approx(ref, rel=1e-6)


def test_units_and_size_hints(tmp_path, sphere_mm):
    path = write_mesh(sphere_mm, tmp_path / "s.ply", units="m")  # 30 units across
    as_mm = read_mesh(path, units="mm")
    assert np.ptp(as_mm.vertices_L[:, 0]) == pytest.approx(0.030, rel=1e-3)
    as_m = read_mesh(path, units="m")  # 30 m: far too big for a bone
    assert any("large for a bone" in w and "mm" in w for w in as_m.warnings)
    tiny = MeshData(sphere_mm.vertices_L * 1e-5, sphere_mm.faces)  # 0.3 mm across when read in mm
    p2 = write_mesh(tiny, tmp_path / "tiny.stl")
    assert any("small for a bone" in w for w in read_mesh(p2, units="mm").warnings)
    with pytest.raises(MeshError, match="units"):
        read_mesh(path, units="inch")  # type: ignore[arg-type]


def test_binary_stl_vertices_are_merged_and_closed(tmp_path, sphere_mm):
    path = tmp_path / "s.stl"
    trimesh.Trimesh(sphere_mm.vertices_L, sphere_mm.faces).export(path)  # one vertex per corner
    mesh = read_mesh(path, units="mm", name="my bone")
    assert mesh.n_vertices == sphere_mm.n_vertices
    assert mesh.source == "my bone" and mesh.warnings == ()


def test_open_mesh_is_accepted_with_a_warning(tmp_path, sphere_mm):
    keep = sphere_mm.vertices_L[sphere_mm.faces].mean(axis=1)[:, 2] < 10.0
    path = write_mesh(MeshData(sphere_mm.vertices_L, sphere_mm.faces[keep]), tmp_path / "open.obj")
    mesh = read_mesh(path, units="mm")
    assert any("open surface" in w for w in mesh.warnings)


def test_duplicate_and_sliver_faces_are_removed_keeping_the_surface_closed(tmp_path):
    box = trimesh.creation.box((10.0, 10.0, 10.0))
    v = np.vstack([box.vertices, box.vertices[:1] + 1e-12])  # a near-duplicate of vertex 0
    f0 = box.faces[0]
    f = np.vstack([box.faces, box.faces[:1], [[f0[0], f0[1], len(box.vertices)]]])
    path = write_mesh(MeshData(v, f), tmp_path / "dirty.ply")
    mesh = read_mesh(path, units="mm")
    assert mesh.n_faces == 12 and mesh.n_vertices == 8
    assert not any("open" in w for w in mesh.warnings)


def test_vrml_transforms_and_polygons(tmp_path):
    text = """#VRML V2.0 utf8
    # a unit square as one quad, moved and scaled by a Transform; then a DEF/USE reuse
    Transform { translation 10 0 0 scale 2 2 2 children [
      Shape { appearance Appearance { material Material { diffuseColor 1 0 0 } }
              geometry DEF SQ IndexedFaceSet { coord Coordinate { point [ 0 0 0, 1 0 0, 1 1 0, 0 1 0 ] }
                                               coordIndex [ 0, 1, 2, 3, -1 ] } } ] }
    Transform { rotation 0 0 1 1.5707963267948966 children Shape { geometry USE SQ } }
    """
    path = tmp_path / "scene.wrl"
    path.write_text(text)
    mesh = read_mesh(path, units="mm")
    v = mesh.vertices_L * 1e3
    assert mesh.n_faces == 4
    assert np.allclose(v[:, 0].max(), 12.0) and np.allclose(v[:, 0].min(), -1.0)  # scaled+moved, rotated


@pytest.mark.parametrize(
    "name, content, match",
    [
        ("empty.stl", b"", "is empty"),
        ("garbage.stl", b"hello, this is not a mesh\nat all\n", "no triangles"),
        ("garbage.obj", b"hello, this is not a mesh\n", "no triangles"),
        ("garbage.ply", b"hello, this is not a mesh\n", "cannot be read"),
        ("garbage.off", b"OFF\nx y z\n", "cannot be read|no triangles"),
        ("garbage.vtp", b"<VTKFile>nonsense", "cannot be read|no points"),
        ("garbage.wrl", b"#VRML V2.0 utf8\nShape { geometry IndexedFaceSet { coordIndex [ 0 1 2 -1 ] ",
         "cannot be read"),
        ("nohead.wrl", b"Shape {}", "cannot be read"),
        ("nan.obj", b"v 0 0 0\nv 1 0 nan\nv 0 1 0\nf 1 2 3\n", "NaN"),
        ("degenerate.obj", b"v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n", "degenerate"),
        ("badindex.wrl", b"#VRML V2.0 utf8\nShape { geometry IndexedFaceSet { "
                         b"coord Coordinate { point [0 0 0, 1 0 0, 0 1 0] }"
                         b" coordIndex [ 0 1 7 -1 ] } }", "does not exist"),
        ("mesh.xyz", b"1 2 3\n", "unsupported format"),
    ],
)
def test_broken_files_raise_mesh_error_naming_the_file(tmp_path, name, content, match):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(MeshError, match=match) as err:
        read_mesh(path)
    assert name in str(err.value)


def test_truncated_binary_stl(tmp_path, sphere_mm):
    path = tmp_path / "t.stl"
    trimesh.Trimesh(sphere_mm.vertices_L, sphere_mm.faces).export(path)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(MeshError, match="truncated binary STL") as err:
        read_mesh(path)
    assert "t.stl" in str(err.value)
    assert struct.unpack("<I", raw[80:84])[0] == sphere_mm.n_faces


def test_write_errors_are_mesh_errors(tmp_path, sphere_mm):
    with pytest.raises(MeshError, match="cannot be written"):
        write_mesh(sphere_mm, tmp_path / "no" / "such" / "dir" / "s.stl")
    with pytest.raises(MeshError, match="cannot write format"):
        write_mesh(sphere_mm, tmp_path / "s.xyz")


def test_missing_file(tmp_path):
    with pytest.raises(MeshError, match="does not exist"):
        read_mesh(tmp_path / "nope.stl")


def test_every_shared_mesh_imports(shared_meshes: Path):
    files = sorted(p for p in shared_meshes.iterdir() if p.suffix.lower() in SUPPORTED_SUFFIXES)
    assert files
    for path in files:
        mesh = read_mesh(path, units="m")
        closed = not any("open surface" in w or "non-manifold" in w for w in mesh.warnings)
        props = mesh_mass_properties(mesh, 1900.0)
        assert props.volume_m3 > 0 and np.isfinite(props.inertia_L).all()
        assert (props.method == "closed") == closed, path.name
        if not closed:
            assert props.warnings, path.name  # the fallback is named
        # bones are metres-sized here: no unit hint
        assert not any("for a bone" in w for w in mesh.warnings), path.name


def test_shared_open_meshes_are_flagged(shared_meshes: Path):
    mesh = read_mesh(shared_meshes / "arm_r_humerus.vtp", units="m")
    assert any("open surface" in w for w in mesh.warnings)
    closed = read_mesh(shared_meshes / "femur_r.vtp", units="m")
    assert closed.warnings == ()
