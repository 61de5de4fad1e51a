"""Mesh files named by an .osim are read only from inside the model's folder and the search paths
given (issue 19 item 3): a name with `..` leaving them, an absolute path outside them, or a symlink
pointing out of them is refused, not read, and named in the import report."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jointmodeller.io.osim import load_osim, locate_mesh_file

TETRA = """solid t
facet normal 0 0 -1
 outer loop
  vertex 0 0 0
  vertex 0 0.01 0
  vertex 0.01 0 0
 endloop
endfacet
facet normal 0 -1 0
 outer loop
  vertex 0 0 0
  vertex 0.01 0 0
  vertex 0 0 0.01
 endloop
endfacet
facet normal -1 0 0
 outer loop
  vertex 0 0 0
  vertex 0 0 0.01
  vertex 0 0.01 0
 endloop
endfacet
facet normal 1 1 1
 outer loop
  vertex 0.01 0 0
  vertex 0 0.01 0
  vertex 0 0 0.01
 endloop
endfacet
endsolid t
"""

MODEL = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000">
 <Model name="refs">
  <BodySet><objects>
{bodies}
  </objects></BodySet>
 </Model>
</OpenSimDocument>
"""
BODY = """   <Body name="{name}"><mass>1</mass><mass_center>0 0 0</mass_center><inertia>0.1 0.1 0.1 0 0 0</inertia>
    <attached_geometry><Mesh name="g"><mesh_file>{mesh}</mesh_file></Mesh></attached_geometry></Body>"""


@pytest.fixture
def layout(tmp_path):
    """model/ (the model, Geometry/inside.stl, a symlink out, a symlink in), search/ (a search path),
    outside/secret.stl (must never be read)."""
    model_dir, search, outside = tmp_path / "model", tmp_path / "search", tmp_path / "outside"
    for d in (model_dir / "Geometry", search, outside):
        d.mkdir(parents=True)
    (model_dir / "Geometry" / "inside.stl").write_text(TETRA)
    (search / "on_search_path.stl").write_text(TETRA)
    (outside / "secret.stl").write_text(TETRA)
    try:
        os.symlink(outside / "secret.stl", model_dir / "Geometry" / "link_out.stl")
        os.symlink(model_dir / "Geometry" / "inside.stl", model_dir / "link_in.stl")
    except OSError:
        pytest.skip("symlinks are not available here")
    return model_dir, search, outside


def _import(model_dir: Path, search: Path | None, meshes: dict[str, str]):
    bodies = "\n".join(BODY.format(name=n, mesh=m) for n, m in meshes.items())
    path = model_dir / "refs.osim"
    path.write_text(MODEL.format(bodies=bodies))
    return load_osim(path, [search] if search else [])


def test_references_inside_are_read(layout):
    model_dir, search, _ = layout
    project, report = _import(model_dir, search, {
        "a": "inside.stl", "b": "Geometry/inside.stl", "c": "on_search_path.stl", "d": "link_in.stl",
        "e": "../model/Geometry/inside.stl", "f": str(search / "on_search_path.stl")})
    assert all(project.mass(n).mesh is not None for n in "abcdef"), report.to_text()
    assert not report.not_imported


def test_references_leaving_the_folders_are_refused(layout):
    model_dir, search, outside = layout
    secret = outside / "secret.stl"
    project, report = _import(model_dir, search, {
        "dotdot": "../outside/secret.stl", "deep": "../../" + secret.relative_to(secret.parents[2]).as_posix(),
        "absolute": str(secret), "symlink": "link_out.stl"})
    why = {i.component.split("/")[0]: i.why for i in report.not_imported}
    for name in ("dotdot", "deep", "absolute", "symlink"):
        assert project.mass(name).mesh is None, name
        assert "refused" in why[name] and "outside the model's folder" in why[name], why
        assert str(secret.resolve()) in why[name]
    assert "refused" in report.to_text()


def test_search_path_must_be_given(layout):
    """A file on a search path is found only when that path is given."""
    model_dir, search, _ = layout
    project, report = _import(model_dir, None, {"c": "on_search_path.stl"})
    assert project.mass("c").mesh is None
    assert "not found" in report.not_imported[0].why
    found, refused = locate_mesh_file("on_search_path.stl", model_dir, [search])
    assert found is not None and not refused
