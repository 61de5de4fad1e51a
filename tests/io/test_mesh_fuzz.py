"""Property test: whatever bytes a mesh file holds, read_mesh returns a valid MeshData or raises
MeshError naming the file, never anything else (project files and meshes are untrusted input)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jointmodeller.core.geometry.mass_properties import mesh_mass_properties
from jointmodeller.io.meshes import SUPPORTED_SUFFIXES, read_mesh
from jointmodeller.model.errors import MeshError

HEADS = {
    ".stl": [b"solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\n", b"\x00" * 80 + b"\x02\x00\x00\x00"],
    ".obj": [b"v 0 0 0\nv 1 0 0\nv 0 1 0\n", b"f 1 2 3\n"],
    ".ply": [b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
             b"element face 1\nproperty list uchar int vertex_indices\nend_header\n", b"ply\n"],
    ".off": [b"OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n", b"OFF\n"],
    ".vtp": [b'<?xml version="1.0"?><VTKFile type="PolyData" version="0.1">', b"<VTKFile>"],
    ".vtk": [b"# vtk DataFile Version 3.0\nx\nASCII\nDATASET POLYDATA\nPOINTS 3 float\n", b"# vtk"],
    ".wrl": [b"#VRML V2.0 utf8\nShape { geometry IndexedFaceSet { coord Coordinate { point [ ", b"#VRML V1.0 ascii\n"],
}
TOKENS = [b"0", b"1", b"-1", b"nan", b"inf", b"1e308", b" ", b"\n", b"[", b"]", b"{", b"}", b",", b"3",
          b"coordIndex", b"point", b"f", b"v", b"DEF", b"USE", b"endloop", b"facet", b"\x00", b"\xff"]


@pytest.mark.slow  # 150 reads, the legacy .vtk ones in a child process each
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    suffix=st.sampled_from(sorted(HEADS)),
    head=st.integers(0, 1),
    body=st.one_of(st.binary(max_size=200), st.lists(st.sampled_from(TOKENS), max_size=60).map(b" ".join)),
    units=st.sampled_from(["mm", "m"]),
)
def test_read_mesh_never_raises_anything_but_mesh_error(suffix, head, body, units):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"fuzz{suffix}"
        path.write_bytes(HEADS[suffix][head] + body)
        try:
            mesh = read_mesh(path, units=units)
        except MeshError as err:
            assert "fuzz" in str(err)
            return
        assert np.isfinite(mesh.vertices_L).all() and mesh.n_faces >= 1


def test_every_supported_suffix_is_fuzzed():
    assert {s for s in SUPPORTED_SUFFIXES if s not in (".vrml", ".wrz")} == set(HEADS)


def test_vrml1_separator_with_coordinate3(tmp_path):
    path = tmp_path / "v1.wrl"
    path.write_text("#VRML V1.0 ascii\nSeparator { Coordinate3 { point [ 0 0 0, 1 0 0, 0 1 0, 0 0 1 ] }\n"
                    "  IndexedFaceSet { coordIndex [ 0, 2, 1, -1, 0, 1, 3, -1, 0, 3, 2, -1, 1, 2, 3, -1 ] } }\n")
    mesh = read_mesh(path, units="m")
    assert mesh.n_faces == 4 and mesh.n_vertices == 4
    assert mesh.warnings == ("the mesh is 1.73 m across, large for a bone: was the file in mm rather than m?",)
    props = mesh_mass_properties(mesh, 1.0)
    assert props.method == "closed" and props.volume_m3 == pytest.approx(1.0 / 6.0, rel=1e-12)
    assert not any("inward" in w for w in props.warnings)
