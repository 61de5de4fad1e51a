"""Typed run results (issue 20): a project file saved by the previous run schema (0004, six pose
encodings per run) opens, migrates to BodyPoses with the same poses, and the new schema round-trips
and refuses damaged pose data naming the run and the field."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from jointmodeller.app.run_poses import euler_deg, mesh_frames, rotations_GB
from jointmodeller.model.errors import ProjectFileError
from jointmodeller.model.results import BodyPoses, RunDataError, RunRecord
from jointmodeller.persistence import ProjectStore, load_project, save_project
from jointmodeller.persistence.schema import head_revision, read_revision
from tests.model.factories import two_box_project
from tests.model.run_factories import turning_poses

OLD_FILE = Path(__file__).parent / "data" / "two_boxes_runs_0004.jmdb"
OLD_POSES = ("body_p_G", "body_q_GB", "body_R_GB", "mesh_R_GL", "mesh_origin_G", "body_euler_deg")


def _old_series(path: Path) -> dict[tuple[int, str], np.ndarray]:
    """Every run series of a file as stored, read with sqlite3 alone (no JointModeller code)."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("select run_id, name, dtype, shape, data from run_series").fetchall()
    finally:
        conn.close()
    assert {dtype for _, _, dtype, _, _ in rows} == {"float64"}
    return {(run_id, name): np.frombuffer(data, "<f8").reshape(json.loads(shape))
            for run_id, name, _, shape, data in rows}


@pytest.fixture
def old_file(tmp_path) -> Path:
    path = tmp_path / "old.jmdb"
    shutil.copyfile(OLD_FILE, path)
    return path


def test_a_file_saved_by_the_previous_run_schema_opens_with_the_same_poses(old_file):
    assert read_revision(old_file) == "0004_moving_points"
    old = _old_series(old_file)
    assert {name for _, name in old} >= set(OLD_POSES)
    with ProjectStore(old_file) as store:
        project = store.load_project()
        runs = store.list_runs()
        loaded = [store.load_run(r.id) for r in runs]
    assert read_revision(old_file) == head_revision()
    assert project == load_project(old_file) and [m.name for m in project.masses] == ["lower", "upper"]
    assert [r.study for r in loaded] == ["dynamics", "equilibrium"]
    for run in loaded:
        poses = run.poses
        assert isinstance(poses, BodyPoses) and poses.bodies == ("lower", "upper")
        assert not set(run.series) & set(OLD_POSES) and not set(run.labels) & set(OLD_POSES)
        assert np.array_equal(poses.p_G, old[run.id, "body_p_G"])  # positions exact
        assert np.abs(rotations_GB(poses) - old[run.id, "body_R_GB"]).max() <= 1e-12
        R_GL, origin_G = mesh_frames(poses)  # the meshes are drawn where the old run drew them
        assert np.abs(R_GL - old[run.id, "mesh_R_GL"]).max() <= 1e-12
        assert np.abs(origin_G - old[run.id, "mesh_origin_G"]).max() <= 1e-12
        sequences = [m.euler_sequence for m in project.masses]
        assert np.abs(euler_deg(poses, sequences) - old[run.id, "body_euler_deg"]).max() <= 1e-9
        for name in ("time", "tissue_force_N", "body_v_G", "kinetic_energy_J"):  # derived series unchanged
            assert np.array_equal(run.series[name], old[run.id, name])
        assert run.unit("tissue_force_N") == "N" and run.unit("time") == "s" and run.unit("body_w_G") == "rad/s"
    assert loaded[0].series["time"].shape == (5,) and "q" in loaded[1].series
    assert loaded[1].labels["q"] == [f"q{i}" for i in range(7)]


def test_the_migrated_file_saves_and_reads_on(old_file):
    with ProjectStore(old_file) as store:
        before = store.load_run(1)
        store.save_project(store.load_project())  # an edit of the inputs keeps the runs
        again = store.load_run(1)
        new_id = store.save_run(RunRecord("dynamics", series={"time": before.series["time"]}, poses=before.poses))
        assert store.load_run(new_id).poses == before.poses
    assert again == before


def test_the_new_schema_round_trips(tmp_path):
    path = tmp_path / "p.jmdb"
    save_project(path, two_box_project())
    t = np.linspace(0.0, 0.2, 7)
    run = RunRecord("dynamics", {"t_end": 0.2}, series={"time": t, "tissue_force_N": np.outer(t, [3.0]),
                                                       "tissue_strain": np.full((7, 1), np.nan)},
                    labels={"tissue_force_N": ["MCL"]}, summary={"steps": 7},
                    poses=turning_poses(t, ("lower", "upper")), units={"tissue_force_N": "N"})
    with ProjectStore(path) as store:
        run_id = store.save_run(run)
        back = store.load_run(run_id)
        listed = store.list_runs()
    assert back == run and back.poses == run.poses and back.units["tissue_strain"] == "1"
    assert np.isnan(back.series["tissue_strain"]).all()  # undefined strain stays NaN
    assert listed[0].poses is None and listed[0].series == {}  # the listing is cheap


def _store_one(folder: Path) -> tuple[Path, int]:
    path = folder / "p.jmdb"
    save_project(path, two_box_project())
    t = np.linspace(0.0, 0.1, 3)
    with ProjectStore(path) as store:
        run_id = store.save_run(RunRecord("dynamics", series={"time": t}, poses=turning_poses(t, ("lower", "upper"))))
    return path, run_id


def _sql(path: Path, statement: str, *args) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute(statement, args)
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("field, damage, words", [
    ("q_GB", np.full((3, 2, 4), 2.0), "not of unit length"),
    ("q_GB", np.zeros((3, 2, 3)), "shape (3, 2, 3), expected (3, 2, 4)"),
    ("p_G", np.full((3, 2, 3), np.nan), "not finite"),
    ("p_G", np.zeros((3, 3, 3)), "shape (3, 3, 3), expected (k, 2, 3)"),
    ("R_BL", np.ones((2, 3, 3)), "not a rotation"),
    ("com_L", np.full((2, 3), np.inf), "not finite"),
])
def test_a_damaged_pose_field_names_the_run_and_the_field(tmp_path, field, damage, words):
    path, run_id = _store_one(tmp_path)
    a = np.ascontiguousarray(damage, "<f8")
    _sql(path, "update run_series set shape = ?, data = ? where run_id = ? and name = ?",
         json.dumps(list(a.shape)), a.tobytes(), run_id, "pose:" + field)
    with ProjectStore(path) as store, pytest.raises(ProjectFileError) as err:
        store.load_run(run_id)
    text = str(err.value)
    assert f"run {run_id} › {field}" in text and words in text, text
    with ProjectStore(path) as store:  # the project and the run list still open
        assert store.load_project().masses[1].name == "upper" and len(store.list_runs()) == 1


def test_other_damage_to_a_run_names_it(tmp_path):
    path, run_id = _store_one(tmp_path)
    _sql(path, "update run_series set data = ? where name = 'pose:q_GB'", b"\x00" * 5)
    with ProjectStore(path) as store, pytest.raises(ProjectFileError, match=rf"run {run_id} › pose:q_GB: stored array"):
        store.load_run(run_id)
    (tmp_path / "b").mkdir()
    path, run_id = _store_one(tmp_path / "b")
    _sql(path, "delete from run_series where name = 'pose:R_BL'")
    with ProjectStore(path) as store, pytest.raises(ProjectFileError, match=rf"run {run_id} › R_BL: is missing"):
        store.load_run(run_id)
    _sql(path, "update runs set bodies = '[\"lower\"]'")
    with ProjectStore(path) as store, pytest.raises(ProjectFileError, match=rf"run {run_id} › "):
        store.load_run(run_id)
    _sql(path, "update runs set bodies = 7")
    with ProjectStore(path) as store, pytest.raises(ProjectFileError, match=rf"run {run_id} › bodies"):
        store.load_run(run_id)
    _sql(path, "update runs set bodies = '[]'")
    _sql(path, "update run_series set name = X'ff00' where name = 'time'")
    with ProjectStore(path) as store, pytest.raises(ProjectFileError, match=rf"run {run_id}: a series name is damaged"):
        store.load_run(run_id)


def test_an_old_pose_the_migration_could_not_convert_is_named(tmp_path):
    path = tmp_path / "old.jmdb"
    shutil.copyfile(OLD_FILE, path)
    q = np.ascontiguousarray(np.full((5, 2, 4), np.nan), "<f8")  # run 1's old quaternions damaged before opening
    _sql(path, "update run_series set data = ? where run_id = 1 and name = 'body_q_GB'", q.tobytes())
    with ProjectStore(path) as store:
        assert store.load_run(2).poses is not None  # the other run migrated
        with pytest.raises(ProjectFileError, match="run 1 › body_p_G: a pose series of an older schema"):
            store.load_run(1)


def test_a_new_run_cannot_carry_an_old_pose_encoding(tmp_path):
    path, _ = _store_one(tmp_path)
    run = RunRecord("dynamics", series={"time": np.zeros(2), "mesh_R_GL": np.zeros((2, 1, 3, 3))})
    with ProjectStore(path) as store, pytest.raises(RunDataError, match="mesh_R_GL: is a pose encoding"):
        store.save_run(run)
    with pytest.raises(RunDataError, match="bodies: a body is named twice"):
        BodyPoses(("a", "a"), np.zeros((1, 2, 3)), np.tile([1.0, 0, 0, 0], (1, 2, 1)), np.tile(np.eye(3), (2, 1, 1)),
                  np.zeros((2, 3)))


def _add_old_laxity_run(path: Path, moving: str, p: np.ndarray, q: np.ndarray) -> None:
    """A laxity run as schema 0004 stored it (app.laxity_report before issue 20's typed runs)."""
    conn = sqlite3.connect(path)
    try:
        cur = conn.execute("insert into runs (study, parameters, status, message, created, labels, summary) values "
                           "('laxity', ?, 'completed', '', '2026-01-01T00:00:00+00:00', ?, '{}')",
                           (json.dumps({"moving_body": moving, "load_kind": "varus_valgus"}),
                            json.dumps({"moving_p_G": ["x", "y", "z"], "moving_q_GB": ["w", "x", "y", "z"]})))
        for name, a in (("load", np.array([0.0, 50.0])), ("moving_p_G", p), ("moving_q_GB", q)):
            a = np.ascontiguousarray(a, "<f8")
            conn.execute("insert into run_series (run_id, name, dtype, shape, data) values (?, ?, 'float64', ?, ?)",
                         (cur.lastrowid, name, json.dumps(list(a.shape)), a.tobytes()))
        conn.commit()
    finally:
        conn.close()


def test_an_old_laxity_run_becomes_the_moving_bodys_poses(old_file):
    from jointmodeller.app.run_poses import body_frames
    from jointmodeller.core.spatial_math import principal_axes

    p = np.array([[0.0, 0.0, 0.11], [0.001, 0.0, 0.11]])
    q = np.array([[1.0, 0.0, 0.0, 0.0], [np.cos(0.05), 0.0, 0.0, np.sin(0.05)]])
    _add_old_laxity_run(old_file, "upper", p, q)
    _add_old_laxity_run(old_file, "a bone deleted since", p, q)
    with ProjectStore(old_file) as store:
        project = store.load_project()
        laxity, orphan = (store.load_run(r.id) for r in store.list_runs()[2:])
    assert laxity.poses.bodies == ("upper",) and np.array_equal(laxity.poses.p_G[:, 0], p)
    assert np.array_equal(laxity.poses.q_GB[:, 0], q) and "moving_p_G" not in laxity.series
    R_BL, com_L = body_frames(project)  # B as app.build makes it from the mass row
    assert np.abs(laxity.poses.R_BL[0] - principal_axes(project.mass("upper").inertia_L)[1]).max() == 0.0
    assert np.array_equal(laxity.poses.R_BL[0], R_BL[1]) and np.array_equal(laxity.poses.com_L[0], com_L[1])
    assert orphan.poses is None and np.array_equal(orphan.series["moving_p_G"], p)  # kept, not replayed
