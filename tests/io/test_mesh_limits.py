"""Crafted mesh files that once hung, exhausted memory or crashed the process (issue 19, item 2):
each is now refused with one MeshError naming the file and what is wrong, before memory is spent."""

from __future__ import annotations

import contextlib
import gzip
import signal
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from jointmodeller.app.masses import mass_from_mesh
from jointmodeller.io import mesh_vrml
from jointmodeller.io.meshes import read_mesh
from jointmodeller.model.errors import MeshError
from jointmodeller.model.mesh import MeshData

REPO = Path(__file__).resolve().parents[2]
TRIANGLE_VRML = ("Shape { geometry IndexedFaceSet { coord Coordinate { point [0 0 0, 1 0 0, 0 1 0] } "
                 "coordIndex [0 1 2 -1] } }")
TETRA_VRML = ("#VRML V2.0 utf8\nShape { geometry IndexedFaceSet {\n"
              " coord Coordinate { point [0 0 0, 10 0 0, 0 10 0, 0 0 10] }\n"
              " coordIndex [0 2 1 -1 0 1 3 -1 0 3 2 -1 1 2 3 -1] } }\n")


@contextlib.contextmanager
def _within(seconds: float):
    """Fail (instead of hanging the suite) when the body runs longer than ``seconds``: without the
    limits these files never finish. Not a timing assert: the bound is 100× what they take."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def stop(*_):
        raise TimeoutError(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _read_in_child(path: Path) -> subprocess.CompletedProcess:
    """read_mesh in a fresh interpreter: a crash there (the bug) fails the test, not the test run."""
    code = textwrap.dedent("""
        import sys
        from jointmodeller.io.meshes import read_mesh
        from jointmodeller.model.errors import MeshError
        try:
            read_mesh(sys.argv[1], units="m")
        except MeshError as exc:
            print("MeshError:", exc)
        else:
            print("read")
    """)
    return subprocess.run([sys.executable, "-c", code, str(path)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)


# ---------------------------------------------------------------------------------------------- VRML
def test_vrml_def_use_bomb_of_1kb_is_refused_at_once(tmp_path):
    """Ten USEs of the level below over nine levels: 10⁹ shapes from about 1 KB."""
    lines = ["#VRML V2.0 utf8", "DEF L0 " + TRIANGLE_VRML]
    lines += [f"DEF L{k} Group {{ children [ " + " ".join([f"USE L{k - 1}"] * 10) + " ] }" for k in range(1, 10)]
    path = tmp_path / "bomb.wrl"
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size < 1100
    with _within(30.0), pytest.raises(MeshError) as err:
        read_mesh(path)
    message = str(err.value)
    assert "bomb.wrl" in message and "DEF/USE" in message and "face sets" in message
    assert len(message.splitlines()) == 1


def test_vrml_use_chain_deeper_than_the_limit_is_refused(tmp_path):
    lines = ["#VRML V2.0 utf8", "DEF L0 " + TRIANGLE_VRML]
    lines += [f"DEF L{k} Group {{ children [ USE L{k - 1} ] }}" for k in range(1, mesh_vrml.MAX_DEPTH + 20)]
    path = tmp_path / "chain.wrl"
    path.write_text("\n".join(lines))
    with pytest.raises(MeshError, match="nests nodes more than"):
        read_mesh(path)


def test_vrml_nested_5000_deep_is_refused_without_recursion_error(tmp_path):
    path = tmp_path / "deep.wrl"
    path.write_text("#VRML V2.0 utf8\n" + "Group { children [\n" * 5000 + "] }\n" * 5000)
    with pytest.raises(MeshError, match=r"deep.wrl.*line 102: nodes are nested more than 100 deep"):
        read_mesh(path)


@pytest.mark.parametrize("bad", ["0.5", "1e300", "2.0", "one"])
def test_vrml_index_that_is_not_a_whole_number_is_refused_with_its_line(tmp_path, bad):
    path = tmp_path / "index.wrl"
    path.write_text("#VRML V2.0 utf8\nShape { geometry IndexedFaceSet {\n"
                    " coord Coordinate { point [0 0 0, 1 0 0, 0 1 0] }\n"
                    f" coordIndex [0 1\n {bad} -1] }} }}\n")
    with pytest.raises(MeshError, match=rf"line 5: field coordIndex holds '{bad}', which is not a whole number index"):
        read_mesh(path)


def test_vrml_huge_whole_index_is_refused(tmp_path):
    path = tmp_path / "big.wrl"
    path.write_text(TETRA_VRML.replace("1 2 3 -1]", "1 2 " + "9" * 400 + " -1]"))
    with pytest.raises(MeshError, match="not a whole number index"):
        read_mesh(path)


def test_wrz_is_read_and_a_truncated_one_is_one_message(tmp_path):
    good = tmp_path / "tet.wrz"
    good.write_bytes(gzip.compress(TETRA_VRML.encode()))
    assert read_mesh(good).n_faces == 4
    cut = tmp_path / "cut.wrz"
    cut.write_bytes(gzip.compress(TETRA_VRML.encode())[:-12])
    with pytest.raises(MeshError, match=r"cut.wrz.*gzipped file is truncated"):
        read_mesh(cut)
    junk = tmp_path / "junk.wrz"
    junk.write_bytes(b"\x1f\x8b" + b"\x00garbage" * 10)
    with pytest.raises(MeshError, match=r"junk.wrz.*gzipped file is damaged"):
        read_mesh(junk)


def test_wrz_unpacking_past_the_cap_stops_there(tmp_path, monkeypatch):
    """A small .wrz that unpacks to far more than the cap: unpacked as a stream and stopped past the
    cap (here 1 MB, so the test is small; the real cap is the .osim reader's 200 MB)."""
    monkeypatch.setattr(mesh_vrml, "MAX_TEXT_BYTES", 1 << 20)
    path = tmp_path / "bomb.wrz"
    path.write_bytes(gzip.compress(TETRA_VRML.encode() + b" " * (64 << 20), compresslevel=9))
    assert path.stat().st_size < 200_000
    calls = []
    real = mesh_vrml.zlib.decompressobj

    def counting(*args):
        d = real(*args)

        class Spy:
            def __getattr__(self, name):
                return getattr(d, name)

            def decompress(self, data, max_length=0):
                out = d.decompress(data, max_length)
                calls.append(len(out))
                return out

        return Spy()

    monkeypatch.setattr(mesh_vrml.zlib, "decompressobj", counting)
    with pytest.raises(MeshError, match=r"bomb.wrz.*unpacks to more than 1 MB"):
        read_mesh(path)
    assert sum(calls) <= (1 << 20) + 1  # never more than the cap was unpacked


# ---------------------------------------------------------------------------------------------- VTK
def test_vtp_header_claiming_4e9_points_is_refused_before_vtk_allocates(tmp_path):
    path = tmp_path / "big.vtp"
    path.write_text(
        '<?xml version="1.0"?>\n<VTKFile type="PolyData" version="0.1" byte_order="LittleEndian">\n<PolyData>\n'
        '<Piece NumberOfPoints="4000000000" NumberOfVerts="0" NumberOfLines="0" NumberOfStrips="0" '
        'NumberOfPolys="1">\n'
        '<Points><DataArray type="Float32" NumberOfComponents="3" format="ascii">0 0 0 1 0 0 0 1 0</DataArray>'
        '</Points>\n'
        '<Polys><DataArray type="Int32" Name="connectivity" format="ascii">0 1 2</DataArray>'
        '<DataArray type="Int32" Name="offsets" format="ascii">3</DataArray></Polys>\n'
        '</Piece>\n</PolyData>\n</VTKFile>\n')
    done = _read_in_child(path)
    assert done.returncode == 0, f"the reader crashed ({done.returncode}): {done.stderr[-300:]}"
    assert "MeshError:" in done.stdout and "4,000,000,000 points" in done.stdout and "big.vtp" in done.stdout


def _sphere_vtp(path: Path, **writer) -> bytes:
    import pyvista as pv
    from vtkmodules.vtkIOXML import vtkXMLPolyDataWriter

    w = vtkXMLPolyDataWriter()
    w.SetFileName(str(path))
    w.SetInputData(pv.Sphere(radius=10.0, theta_resolution=8, phi_resolution=8))
    w.SetDataModeToBinary()
    w.SetCompressorTypeToZLib()
    w.Write()
    return path.read_bytes()


@pytest.mark.parametrize("header, match", [
    ((0x7FFFFFFF, 32768, 600, 236), "compressed blocks"),
    ((1, 0xFFFFFFF0, 0xFFFFFFF0, 236), "bytes in a compressed array"),
    ((1, 32768, 600, 0xFFFFFFF0), "packed bytes in one block"),
    ((1, 0, 0, 236), "blocks of 0 bytes"),
])
def test_vtp_compressed_block_header_beyond_the_file_is_refused(tmp_path, header, match):
    """The block header of a compressed array: VTK allocates (or divides by) what it says."""
    import base64

    path = tmp_path / "sphere.vtp"
    raw = _sphere_vtp(path)
    assert read_mesh(path, units="mm").n_faces == 96
    first = raw.index(b'format="binary"')
    start = raw.index(b">", first) + 1
    start += len(raw[start:]) - len(raw[start:].lstrip())
    old = base64.b64decode(raw[start:start + 24])
    assert struct.unpack("<4I", old)[0] == 1  # one block: the writer's header as expected
    path.write_bytes(raw[:start] + base64.b64encode(struct.pack("<4I", *header)) + raw[start + 24:])
    done = _read_in_child(path)
    assert done.returncode == 0, f"the reader crashed ({done.returncode}): {done.stderr[-300:]}"
    assert "MeshError:" in done.stdout and match in done.stdout


def test_legacy_vtk_header_beyond_the_file_is_refused(tmp_path):
    path = tmp_path / "big.vtk"
    path.write_text("# vtk DataFile Version 3.0\nx\nASCII\nDATASET POLYDATA\nPOINTS 4000000000 float\n"
                    "0 0 0 1 0 0 0 1 0\nPOLYGONS 1 4\n3 0 1 2\n")
    with pytest.raises(MeshError, match="4,000,000,000 points"):
        read_mesh(path)
    path.write_text("# vtk DataFile Version 3.0\nx\nASCII\nDATASET POLYDATA\nPOINTS 3 float\n0 0 0 1 0 0 0 1 0\n"
                    "POLYGONS 1 4\n3 0 1 2\nPOINT_DATA 3\nFIELD f 1\narr 1000 4000000000 float\n1 2 3\n")
    with pytest.raises(MeshError, match="field array 'arr'"):
        read_mesh(path)


def test_legacy_binary_vtk_with_a_damaged_cell_size_is_a_message_not_a_crash(tmp_path):
    """VTK's legacy reader writes past its buffers on a cell size of 2²⁰ (SIGSEGV in the reader
    itself): read_mesh runs it in a child process and reports the crash as a MeshError."""
    import pyvista as pv
    from vtkmodules.vtkIOLegacy import vtkPolyDataWriter

    pts = np.array([[0, 0, 0], [10, 0, 0], [0, 10, 0], [0, 0, 10]], float)
    tet = pv.PolyData(pts, np.array([[3, 0, 2, 1], [3, 0, 1, 3], [3, 0, 3, 2], [3, 1, 2, 3]]).ravel())
    path = tmp_path / "tet.vtk"
    w = vtkPolyDataWriter()
    w.SetFileName(str(path))
    w.SetInputData(tet)
    w.SetFileVersion(42)
    w.SetFileTypeToBinary()
    w.Write()
    assert read_mesh(path, units="mm").n_faces == 4
    raw = bytearray(path.read_bytes())
    at = raw.index(b"\n", raw.index(b"POLYGONS")) + 1
    raw[at:at + 4] = struct.pack(">i", 1 << 20)
    path.write_bytes(bytes(raw))
    done = _read_in_child(path)
    assert done.returncode == 0, f"the reader crashed ({done.returncode}): {done.stderr[-300:]}"
    assert "MeshError:" in done.stdout and "tet.vtk" in done.stdout


# ---------------------------------------------------------------------------------------------- STL
ASCII_TRIANGLES = ("solid t\n" + "".join(
    f"facet normal 0 0 1\nouter loop\nvertex 0 0 {z}\nvertex 10 0 {z}\nvertex 0 10 {z}\nendloop\nendfacet\n"
    for z in (0, 1)) + "endsolid t\n").encode()


def test_ascii_stl_with_binary_data_after_it_is_refused_not_truncated(tmp_path):
    path = tmp_path / "tail.stl"
    path.write_bytes(ASCII_TRIANGLES + b"\x00\x01\x02binary\xff" * 10)
    with pytest.raises(MeshError, match=r"tail.stl.*bytes after its last 'endsolid' line"):
        read_mesh(path)


def test_ascii_stl_cut_short_or_with_binary_inside_is_refused(tmp_path):
    cut = tmp_path / "cut.stl"
    cut.write_bytes(ASCII_TRIANGLES[:ASCII_TRIANGLES.index(b"facet normal", 20)] + b"\x00\x80\x81" * 40)
    with pytest.raises(MeshError, match=r"cut.stl.*without an 'endsolid' line"):
        read_mesh(cut)
    inside = tmp_path / "inside.stl"
    inside.write_bytes(ASCII_TRIANGLES.replace(b"vertex 10 0 1", b"vertex 10 \x00\x01 1"))
    with pytest.raises(MeshError, match=r"inside.stl.*binary data on line 12"):
        read_mesh(inside)


def test_good_ascii_stl_still_reads(tmp_path):
    path = tmp_path / "two.stl"
    path.write_bytes(ASCII_TRIANGLES)
    assert read_mesh(path).n_faces == 2


# ---------------------------------------------------------------------------------------------- mass
def test_one_open_triangle_gives_a_message_not_a_qhull_traceback(tmp_path):
    path = tmp_path / "tri.stl"
    path.write_bytes(ASCII_TRIANGLES.replace(ASCII_TRIANGLES[ASCII_TRIANGLES.index(b"facet", 20):
                                                             ASCII_TRIANGLES.index(b"endsolid")], b""))
    mesh = read_mesh(path)
    assert mesh.n_faces == 1
    with pytest.raises(MeshError, match="encloses no volume"):
        mass_from_mesh("tri", mesh)
    flat = MeshData(np.array([[0, 0, 0], [0.01, 0, 0], [0, 0.01, 0], [0.01, 0.01, 0]]),
                    np.array([[0, 1, 2], [1, 3, 2]]))
    with pytest.raises(MeshError, match="encloses no volume"):
        mass_from_mesh("flat", flat)
