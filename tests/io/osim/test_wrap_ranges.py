"""Wrap point ranges (OpenSim's PathWrap <range>) live in the project with the attachment (issue 16
item 7): validated, stored (schema 0003_wrap_ranges, JSON), honoured by every study and by the
`muscle-paths` command; and that command computes paths as OpenSim does by default, with the exact
path a documented option (item 2)."""

from __future__ import annotations

import csv
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from jointmodeller.app.muscle_paths import muscle_paths_run
from jointmodeller.app.osim_import import import_osim, wrap_ranges
from jointmodeller.core.studies.muscle_paths import build_multibody, calc_path, mjm_path_specs, path_spec
from jointmodeller.model.codec import project_from_json, project_to_json
from jointmodeller.model.validation import project_problems
from jointmodeller.persistence.schema import head_revision, read_revision
from jointmodeller.persistence.store import load_project, save_project

PSOAS = ("psoas_r", "psoas_l")
KNEE = (0.0, 60.0, 120.0)


@pytest.fixture(scope="module")
def rajagopal(shared_models):
    path = shared_models / "opensim-models" / "Rajagopal2016.osim"
    if not path.is_file():
        pytest.skip("Rajagopal2016.osim is absent")
    project, report = import_osim(path)
    return path, project, report


def test_import_keeps_ranges_in_the_project(rajagopal):
    _, project, report = rajagopal
    psoas = next(a for a in project.attachments if a.name == "psoas_r")
    assert psoas.wrap_objects == ("PS_at_brim_r",)
    assert psoas.wrap_ranges == ((2, 3),)
    # the report still lists them; every imported range equals the report's
    for name, ranges in wrap_ranges(report).items():
        att = next(a for a in project.attachments if a.name == name)
        if any(s > 0 or e > 0 for s, e in ranges):
            assert att.wrap_ranges == tuple(tuple(r) for r in ranges)
    assert "project has no field" not in report.to_text()


def test_ranges_are_validated(rajagopal):
    _, project, _ = rajagopal
    i, att = next((i, a) for i, a in enumerate(project.attachments) if a.name == "psoas_r")
    n = len(att.via_points) + 2

    def problems(ranges):
        atts = list(project.attachments)
        atts[i] = replace(att, wrap_ranges=ranges)
        return [p for p in project_problems(replace(project, attachments=tuple(atts))) if p.row == "psoas_r"]

    assert problems(((2, 3),)) == [] and problems(((-1, -1),)) == [] and problems(((1, n),)) == []
    assert "one (start, end) per wrap object" in problems(((2, 3), (1, 2)))[0].message
    assert f"in [1, {n}]" in problems(((0, 3),))[0].message
    assert f"in [1, {n}]" in problems(((2, n + 1),))[0].message
    assert "start must not exceed end" in problems(((3, 2),))[0].message
    assert problems(((2.5, 3),))[0].field == "wrap_ranges[0]"


def test_ranges_survive_file_and_json(rajagopal, tmp_path):
    _, project, _ = rajagopal
    path = tmp_path / "raj.jmdb"
    save_project(path, project)
    assert load_project(path).attachments == project.attachments
    assert project_from_json(project_to_json(project)).attachments == project.attachments


def test_older_file_gets_whole_path_ranges(rajagopal, tmp_path):
    """A file of schema 0002 (no wrap_ranges column) is migrated on open; its rows read as "whole path"."""
    _, project, _ = rajagopal
    path = tmp_path / "old.jmdb"
    save_project(path, project)
    with sqlite3.connect(path) as conn:
        if sqlite3.sqlite_version_info < (3, 35):
            pytest.skip("this SQLite cannot drop a column to forge an older file")
        for column in ("wrap_ranges", "moving_a", "moving_b"):  # the columns of 0003 and later
            conn.execute(f"alter table attachments drop column {column}")
        conn.execute("alter table runs drop column bodies")  # and those of 0005 (typed run results)
        conn.execute("alter table run_series drop column unit")
        conn.execute("update alembic_version set version_num='0002_results'")
    assert read_revision(path) == "0002_results"
    loaded = load_project(path)
    assert read_revision(path) == head_revision()
    assert all(a.wrap_ranges == () for a in loaded.attachments)


def test_every_study_uses_the_attachment_ranges(rajagopal):
    """The muscle-path study and the MJM/tree path provider read the ranges from the attachment: no
    side channel needed. Without them the psoas wraps over the pelvic brim from its first point and
    comes out ~157 mm longer (what `muscle-paths` printed before)."""
    _, project, report = rajagopal
    mb = build_multibody(project)
    kin = mb.system.kinematics(mb.q0)
    for name in PSOAS:
        att = next(a for a in project.attachments if a.name == name)
        with_report = calc_path(mb, path_spec(mb, att, project.wrap_objects, wrap_ranges(report)[name]), mb.q0, kin)
        own = calc_path(mb, path_spec(mb, att, project.wrap_objects), mb.q0, kin)
        whole = calc_path(mb, path_spec(mb, replace(att, wrap_ranges=()), project.wrap_objects), mb.q0, kin)
        assert own.length == with_report.length
        assert whole.length - own.length > 0.1
    names = [a.name for a in project.attachments]
    index = {n: i for i, n in enumerate(mb.body)}
    specs = mjm_path_specs(project, names, {**index, "ground": len(index)}, np.tile(np.eye(3), (len(index) + 1, 1, 1)),
                           np.zeros((len(index) + 1, 3)), coordinate_index=mb.qindex)
    for name in PSOAS:
        spec = specs[names.index(name)]
        assert [(w.start, w.end) for w in spec.wraps] == [(2, 3)]


def _csv_lengths(path: Path, names) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {n: [] for n in names}
    with path.open() as fh:
        for row in csv.DictReader(fh):
            if row["attachment"] in out:
                out[row["attachment"]].append(float(row["length_mm"]) * 1e-3)
    return out


def _cli(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "jointmodeller", *args], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.slow
def test_psoas_through_the_cli(rajagopal, tmp_path):
    """import-osim, then muscle-paths over the knee: psoas lengths equal the import-time path (and
    OpenSim 4.6's, with the peer) instead of being 156.65 mm longer."""
    model, project, report = rajagopal
    jm = tmp_path / "raj.jmdb"
    _cli("import-osim", str(model), str(jm))
    _cli("muscle-paths", str(jm), "knee_angle_r", "--start", "0", "--stop", "120", "--step", "60",
         "--out", str(tmp_path / "out"))
    got = _csv_lengths(tmp_path / "out" / "muscle_paths_knee_angle_r.csv", PSOAS)
    mb = build_multibody(project)
    for name in PSOAS:
        att = next(a for a in project.attachments if a.name == name)
        spec = path_spec(mb, att, project.wrap_objects, wrap_ranges(report)[name])
        for k, deg in enumerate(KNEE):
            q = mb.q0.copy()
            q[mb.qindex["knee_angle_r"]] = np.radians(deg)
            q = mb.apply_couplers(q)
            # CSV holds mm with 6 decimals: 1e-9 m
            assert got[name][k] == pytest.approx(calc_path(mb, spec, q).length, abs=2e-9)
    try:
        import opensim as osim
    except ImportError:
        return
    m = osim.Model(str(model))
    s = m.initSystem()
    for k, deg in enumerate(KNEE):
        m.getCoordinateSet().get("knee_angle_r").setValue(s, np.radians(deg))
        m.realizePosition(s)
        for name in PSOAS:
            assert got[name][k] == pytest.approx(m.getMuscles().get(name).getGeometryPath().getLength(s), abs=1e-5)


def test_path_mode_default_is_opensim(shared_models):
    """muscle_paths_run defaults to OpenSim's mode; "exact" is the documented alternative. arm26
    TRIlong (three wrap objects), shoulder raised 100°, elbow 90°: OpenSim's path is longer than the
    exact one (docs/opensim_import.md gives the numbers)."""
    path = shared_models / "arm26" / "arm26.osim"
    if not path.is_file():
        pytest.skip("arm26.osim is absent")
    project, _ = import_osim(path)
    kw = dict(attachments=["TRIlong"], fixed={"r_elbow_flex": 90.0})
    default = muscle_paths_run(project, "r_shoulder_elev", 100, 100, 1, **kw)
    opensim = muscle_paths_run(project, "r_shoulder_elev", 100, 100, 1, path_mode="opensim", **kw)
    exact = muscle_paths_run(project, "r_shoulder_elev", 100, 100, 1, path_mode="exact", **kw)
    legacy = muscle_paths_run(project, "r_shoulder_elev", 100, 100, 1, opensim_compatible=False, **kw)
    assert default.parameters["path_mode"] == "opensim" and exact.parameters["path_mode"] == "exact"
    assert np.array_equal(default.series["length_m"], opensim.series["length_m"])
    assert np.array_equal(exact.series["length_m"], legacy.series["length_m"])
    assert float(default.series["length_m"][0, 0] - exact.series["length_m"][0, 0]) > 1e-3
    with pytest.raises(ValueError, match="path mode must be one of"):
        muscle_paths_run(project, "r_shoulder_elev", 0, 10, 5, path_mode="fast")


@pytest.mark.slow
def test_path_mode_cli_option(shared_models, tmp_path):
    path = shared_models / "arm26" / "arm26.osim"
    if not path.is_file():
        pytest.skip("arm26.osim is absent")
    jm = tmp_path / "arm.jmdb"
    _cli("import-osim", str(path), str(jm))
    out = {}
    for mode in ("opensim", "exact"):
        _cli("muscle-paths", str(jm), "r_shoulder_elev", "--start", "100", "--stop", "100", "--step", "1",
             "--path-mode", mode, "--out", str(tmp_path / mode))
        out[mode] = _csv_lengths(tmp_path / mode / "muscle_paths_r_shoulder_elev.csv", ["TRIlong", "BIClong"])
    assert out["opensim"]["BIClong"] == out["exact"]["BIClong"]
    assert out["opensim"]["TRIlong"] != out["exact"]["TRIlong"]
    proc = subprocess.run([sys.executable, "-m", "jointmodeller", "muscle-paths", str(jm), "r_shoulder_elev",
                           "--path-mode", "fast", "--out", str(tmp_path / "x")], capture_output=True, text=True)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    help_text = subprocess.run([sys.executable, "-m", "jointmodeller", "muscle-paths", "-h"], capture_output=True,
                               text=True).stdout
    assert "--path-mode" in help_text and "exact" in help_text


@pytest.mark.slow
def test_muscle_paths_bad_input_is_one_line(shared_models, tmp_path):
    """Bad arguments to `muscle-paths`: one line on stderr, exit 2, no run stored, nothing written."""
    from jointmodeller.persistence import ProjectStore

    path = shared_models / "arm26" / "arm26.osim"
    if not path.is_file():
        pytest.skip("arm26.osim is absent")
    jm = tmp_path / "arm.jmdb"
    _cli("import-osim", str(path), str(jm))
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [(["nope", "--out", str(tmp_path / "o")], "no coordinate named 'nope'"),
             (["r_elbow_flex", "--out", str(afile)], "is not a folder"),
             (["r_elbow_flex", "--start", "10", "--stop", "0", "--out", str(tmp_path / "o")], "step > 0 and stop"),
             (["r_elbow_flex", "--step", "0", "--out", str(tmp_path / "o")], "step > 0 and stop"),
             (["r_elbow_flex", "--start", "0", "--stop", "1e9", "--step", "1e-3", "--out", str(tmp_path / "o")],
              "more than")]
    for args, words in cases:
        proc = subprocess.run([sys.executable, "-m", "jointmodeller", "muscle-paths", str(jm), *args],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and words in proc.stderr, proc.stderr
    with ProjectStore(jm) as store:
        assert store.list_runs() == []
    assert not (tmp_path / "o").exists() and afile.read_text() == "x"
