"""The project snapshot (io.project_snapshot): the demo's cache, read without SQLAlchemy. It gives back
the project the project file gives back, and a damaged or foreign file is a JointModellerError (the
demo cache then rebuilds), never another exception."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from dataclasses import replace

import numpy as np
import pytest

from jointmodeller.io.project_snapshot import load_snapshot, save_snapshot
from jointmodeller.model.errors import JointModellerError
from jointmodeller.model.mesh import MeshData
from jointmodeller.model.specs import Mass, Project, ProjectInfo


def _project() -> Project:
    v = np.array([[0, 0, 0], [0.01, 0, 0], [0, 0.01, 0], [0, 0, 0.01]], float)
    f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    mesh = MeshData(v, f, source="tetra.stl", warnings=("closed by hand",))
    bone = Mass(name="bone", mesh=mesh, cartilage=MeshData(v * 0.5, f), mass_kg=0.2, properties_from_mesh=False,
                fixed=True)
    return Project(info=ProjectInfo(title="Snapshot", notes="ü, tabs\tand lines\n"),
                   masses=(bone, Mass(name="bare", mass_kg=0.1, properties_from_mesh=False)))


def test_a_snapshot_gives_back_the_project(tmp_path):
    project = _project()
    path = save_snapshot(tmp_path / "p.npz", project)
    back = load_snapshot(path)
    assert back == project
    assert back.masses[0].mesh.source == "tetra.stl" and back.masses[0].mesh.warnings == ("closed by hand",)
    assert back.masses[1].mesh is None and back.masses[1].cartilage is None
    assert [p.name for p in tmp_path.iterdir()] == ["p.npz"]  # no temporary file left


def test_the_demo_snapshot_equals_the_demo_through_the_project_file(tmp_path):
    from jointmodeller.app.demo import build_demo_project
    from jointmodeller.persistence import load_project, save_project

    demo = build_demo_project()
    save_project(tmp_path / "demo.jmdb", demo, touch=False)
    assert load_snapshot(save_snapshot(tmp_path / "demo.npz", demo)) == load_project(tmp_path / "demo.jmdb") == demo


def _rewrite(path, **changes):
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays.update(changes)
    for k, v in changes.items():
        if v is None:
            del arrays[k]
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


@pytest.mark.parametrize("damage", [
    "truncated", "garbage", "empty", "foreign format", "newer version", "bad json", "not a snapshot's json",
    "face out of range", "vertices as text", "missing mesh", "unknown field", "object array"])
def test_a_damaged_snapshot_is_a_jointmodeller_error(tmp_path, damage):
    path = save_snapshot(tmp_path / "p.npz", _project())
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x00garbage" * 100)
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "foreign format":
        _rewrite(path, format=np.array("something-else"))
    elif damage == "newer version":
        _rewrite(path, version=np.array(2, np.int64))
    elif damage == "bad json":
        _rewrite(path, project=np.array('{"project": [1, 2'))
    elif damage == "not a snapshot's json":
        _rewrite(path, project=np.array('{"format": "jointmodeller-project"}'))
    elif damage == "face out of range":
        _rewrite(path, m0_mesh_faces=np.array([[0, 1, 99]], "<i8"))
    elif damage == "vertices as text":
        _rewrite(path, m0_mesh_vertices_L=np.array([["a", "b", "c"]] * 4))
    elif damage == "missing mesh":
        _rewrite(path, m0_cartilage_faces=None)
    elif damage == "unknown field":
        with np.load(path, allow_pickle=False) as npz:
            text = str(npz["project"])
        _rewrite(path, project=np.array(text.replace('"mass_kg"', '"mass_kilos"', 1)))
    elif damage == "object array":
        with zipfile.ZipFile(path, "a") as z:  # a pickled array: refused, never unpickled
            import io
            buf = io.BytesIO()
            np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
            z.writestr("extra.npy", buf.getvalue())
    with pytest.raises(JointModellerError):
        load_snapshot(path)


def test_a_damaged_demo_cache_is_removed_and_rebuilt(tmp_path, monkeypatch):
    from jointmodeller.app import demo, demo_cache

    built = []
    monkeypatch.setattr(demo, "build_demo_project", lambda: built.append(1) or _project())
    cache = demo_cache.demo_cache_file(tmp_path)
    cache.write_bytes(b"not a snapshot")
    assert demo_cache.cached_demo_project(tmp_path) == _project() and built == [1]
    assert load_snapshot(cache) == _project()  # rewritten
    assert demo_cache.cached_demo_project(tmp_path) == _project() and built == [1]  # read back, not built


def test_reading_the_demo_cache_imports_no_sqlalchemy_and_no_demo_builders(tmp_path):
    project = _project()
    from jointmodeller.app.demo_cache import demo_cache_file

    save_snapshot(demo_cache_file(tmp_path), replace(project, info=replace(project.info, title="cached")))
    code = f"""
import json, sys
from jointmodeller.app.demo_cache import cached_demo_project
p = cached_demo_project({str(tmp_path)!r})
print(json.dumps([p.info.title] + [m for m in ("sqlalchemy", "alembic", "jointmodeller.persistence",
      "jointmodeller.app.demo", "jointmodeller.io.meshes", "jointmodeller.core.geometry.mass_properties")
      if m in sys.modules]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == '["cached"]'
