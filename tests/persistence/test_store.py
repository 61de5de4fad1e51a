"""The project file: lossless save/load, one-transaction saves that survive SIGKILL, migrations,
and refusal of foreign, newer and damaged files without changing them."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import create_engine

from jointmodeller.model import ProjectFileError, RunRecord, ValidationError
from jointmodeller.persistence import ProjectStore, is_project_file, load_project, save_project
from jointmodeller.persistence.schema import create_schema, head_revision, known_revisions, read_revision
from tests.model.factories import small_project
from tests.model.run_factories import turning_poses

REPO = Path(__file__).resolve().parents[2]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fields_equal(a, b, where="project"):
    """Compare dataclasses field by field so a failure names the field."""
    if isinstance(a, np.ndarray):
        assert np.array_equal(a, b) and a.dtype == b.dtype, where
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            _fields_equal(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, tuple) and a and dataclasses.is_dataclass(a[0]):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _fields_equal(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def test_saved_and_loaded_project_is_equal_field_by_field(tmp_path):
    path = tmp_path / "p.jmdb"
    written = save_project(path, small_project())
    loaded = load_project(path)
    _fields_equal(written, loaded)
    assert loaded.masses[0].mesh == written.masses[0].mesh
    assert np.array_equal(loaded.masses[0].mesh.vertices_L, written.masses[0].mesh.vertices_L)
    assert is_project_file(path)


def test_identical_meshes_are_stored_once(tmp_path):
    path = tmp_path / "p.jmdb"
    save_project(path, small_project())
    with sqlite3.connect(path) as conn:
        assert conn.execute("select count(*) from meshes").fetchone()[0] == 2  # bone sphere + cartilage


def test_invalid_project_is_never_written(tmp_path):
    path = tmp_path / "p.jmdb"
    save_project(path, small_project())
    before = _digest(path)
    bad = small_project()
    bad = dataclasses.replace(bad, masses=(dataclasses.replace(bad.masses[0], mass_kg=-1.0),) + bad.masses[1:])
    with pytest.raises(ValidationError, match="Masses › humerus › mass_kg"):
        save_project(path, bad)
    assert _digest(path) == before


def test_project_with_problems_is_saved_as_a_draft_and_read_back_as_it_was(tmp_path):
    """Issue 18 item 3: work in progress is stored (duplicate names, a dangling spring reference and
    a negative mass have no place in the input tables), refused by a validating load with every
    problem named, given back unchanged for editing, and replaced by plain rows once valid."""
    path = tmp_path / "p.jmdb"
    good = save_project(path, small_project())
    with ProjectStore(path) as store:
        store.save_run(RunRecord("dynamics", {"t_end": 1.0}, series={"time": np.linspace(0, 1, 3)}))
    m = good.masses
    bad = dataclasses.replace(
        good, springs=good.springs[1:],  # "MCL anterior" now refers to no spring type
        masses=(dataclasses.replace(m[0], mass_kg=-1.0), dataclasses.replace(m[1], name="humerus"), m[2]))
    written = save_project(path, bad, allow_problems=True)
    with pytest.raises(ValidationError, match="Masses › humerus › mass_kg") as info:
        load_project(path)
    assert "MCL" in str(info.value)  # every problem named, not only the first
    back = load_project(path, validate=False)
    _fields_equal(written, back)
    assert np.array_equal(back.masses[0].mesh.vertices_L, bad.masses[0].mesh.vertices_L)
    assert back.masses[0].cartilage == bad.masses[0].cartilage
    with ProjectStore(path) as store:
        assert store.has_draft() and len(store.list_runs()) == 1  # runs kept
    with pytest.raises(ValidationError):
        save_project(path, bad)  # without allow_problems nothing changes: still refused
    again = save_project(path, good)
    with ProjectStore(path) as store:
        assert not store.has_draft()
    _fields_equal(again, load_project(path))
    with sqlite3.connect(path) as conn:
        assert conn.execute("select count(*) from meshes").fetchone()[0] == 2


def test_valid_project_saved_with_allow_problems_is_plain_rows(tmp_path):
    path = tmp_path / "p.jmdb"
    save_project(path, small_project(), allow_problems=True)
    with ProjectStore(path) as store:
        assert not store.has_draft()
    assert load_project(path).masses[0].name == "humerus"


def test_runs_are_stored_with_their_series(tmp_path):
    path = tmp_path / "p.jmdb"
    save_project(path, small_project(with_mesh=False))
    t = np.linspace(0, 1, 5)
    run = RunRecord("dynamics", {"t_end": 1.0}, series={"time": t,
                                                      "body_v_G": np.random.default_rng(0).random((5, 2, 3)),
                                                      "flags": np.array([True, False, True, True, False])},
                    labels={"body_v_G": ["humerus", "ulna"]}, summary={"residual_N": 1e-9},
                    poses=turning_poses(t), units={"flags": "1"})
    with ProjectStore(path) as store:
        run_id = store.save_run(run)
        assert [r.id for r in store.list_runs()] == [run_id]
        assert store.load_run(run_id) == run
        # saving inputs again keeps results
        store.save_project(store.load_project())
        assert store.load_run(run_id) == run


@pytest.mark.parametrize("content, message", [
    (b"", "no such project file"),
    (b"hello, I am a text file\n" * 10, "not an SQLite database"),
])
def test_not_a_project_is_refused(tmp_path, content, message):
    path = tmp_path / "x.jmdb"
    path.write_bytes(content)
    with pytest.raises(ProjectFileError, match=message):
        load_project(path)
    assert path.read_bytes() == content


def test_foreign_sqlite_file_is_refused_unchanged(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("create table t (x)")
    before = _digest(path)
    with pytest.raises(ProjectFileError, match="not a JointModeller project"):
        load_project(path)
    assert _digest(path) == before


def test_newer_schema_is_refused_unchanged(tmp_path):
    path = tmp_path / "p.jmdb"
    save_project(path, small_project(with_mesh=False))
    with sqlite3.connect(path) as conn:
        conn.execute("update alembic_version set version_num='9999_future'")
    before = _digest(path)
    with pytest.raises(ProjectFileError, match="newer JointModeller"):
        load_project(path)
    assert _digest(path) == before


def test_truncated_file_is_refused_unchanged(tmp_path):
    path = tmp_path / "p.jmdb"
    save_project(path, small_project())
    data = path.read_bytes()
    cut = tmp_path / "cut.jmdb"
    cut.write_bytes(data[: len(data) // 3])
    with pytest.raises((ProjectFileError, ValidationError)):
        load_project(cut)
    assert cut.read_bytes() == data[: len(data) // 3]


def test_older_file_is_migrated_on_open(tmp_path):
    assert len(known_revisions()) >= 2
    path = tmp_path / "old.jmdb"
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        create_schema(conn, revision=known_revisions()[0])
    engine.dispose()
    # an old file written by the first schema, inputs only
    with sqlite3.connect(path) as conn:
        conn.execute("insert into project_info values (1,'Old','','','mm','deg','[0.0, 0.0, -9.81]','',"
                     "'2020-01-01T00:00:00+00:00','2020-01-01T00:00:00+00:00')")
    assert read_revision(path) == known_revisions()[0]
    with ProjectStore(path) as store:
        assert store.load_project().info.title == "Old"
        assert store.list_runs() == []
    assert read_revision(path) == head_revision()


KILLER = textwrap.dedent("""
    import sys, dataclasses
    sys.path.insert(0, {repo!r})
    from tests.model.factories import small_project
    from jointmodeller.persistence import ProjectStore
    project = small_project()
    with ProjectStore({path!r}) as store:
        print("ready", flush=True)
        i = 0
        while True:   # save bigger and bigger versions until killed
            i += 1
            info = dataclasses.replace(project.info, title=f"version {{i}}")
            store.save_project(dataclasses.replace(project, info=info))
""")


@pytest.mark.slow
def test_save_killed_midway_leaves_a_readable_previous_version(tmp_path):
    path = tmp_path / "p.jmdb"
    save_project(path, small_project())
    for delay in (0.3, 0.55, 0.8):
        proc = subprocess.Popen([sys.executable, "-c", KILLER.format(repo=str(REPO), path=str(path))],
                                stdout=subprocess.PIPE, cwd=REPO)
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        project = load_project(path)   # readable, complete, valid
        assert project.info.title.startswith(("version", "Test joint"))
        assert len(project.masses) == 3 and project.masses[0].mesh is not None
