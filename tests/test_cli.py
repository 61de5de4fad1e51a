"""The command line end to end, on real project files."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from jointmodeller.cli import main
from jointmodeller.persistence import load_project, save_project
from tests.model.factories import small_project

REPO = Path(__file__).resolve().parents[1]


def test_export_import_export_gives_identical_json(tmp_path):
    src = tmp_path / "a.jmdb"
    save_project(src, small_project())
    assert main(["export", str(src), "--json", str(tmp_path / "a.json")]) == 0
    assert main(["import", str(tmp_path / "a.json"), str(tmp_path / "b.jmdb")]) == 0
    assert main(["export", str(tmp_path / "b.jmdb"), "--json", str(tmp_path / "b.json")]) == 0
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
    assert json.loads((tmp_path / "a.json").read_text())["format"] == "jointmodeller-project"


def test_bad_input_is_one_message_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "jointmodeller-project", "version": 1, '
                   '"project": {"masses": [{"name": "a", "mass_kg": -1, '
                   '"inertia_L": [[1e-3, 0, 0], [0, 1e-3, 0], [0, 0, 1e-3]]}]}}')
    assert main(["import", str(bad), str(tmp_path / "x.jmdb")]) == 2
    err = capsys.readouterr().err
    assert "Masses › a › mass_kg: must be positive" in err and "Traceback" not in err
    assert not (tmp_path / "x.jmdb").exists()
    assert main(["info", str(tmp_path / "missing.jmdb")]) == 2
    assert "no such project file" in capsys.readouterr().err


def test_import_mesh_adds_a_mass_with_properties(tmp_path, shared_meshes):
    path = tmp_path / "p.jmdb"
    save_project(path, small_project(with_mesh=False))
    assert main(["import-mesh", str(path), str(shared_meshes / "lenhart2015-R-patella-bone.stl"),
                 "--units", "m", "--name", "patella"]) == 0
    patella = load_project(path).mass("patella")
    assert patella.mesh is not None and patella.mesh.n_vertices > 100
    assert 0.005 < patella.mass_kg < 0.2  # a patella weighs tens of grams


@pytest.mark.slow
def test_demo_then_info_prints_the_five_sections(tmp_path):
    pytest.importorskip("jointmodeller.app.demo")
    path = tmp_path / "demo.jmdb"
    out = subprocess.run([sys.executable, "-m", "jointmodeller", "demo", str(path)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    info = subprocess.run([sys.executable, "-m", "jointmodeller", "info", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert info.returncode == 0, info.stderr
    for section in ("== Project ==", "== Springs", "== Masses", "== Attachments", "== Forces"):
        assert section in info.stdout
    project = load_project(path)
    assert len(project.attachments) >= 4 and any(f.magnitude_N == 100.0 for f in project.forces)


@pytest.mark.slow
def test_run_dynamics_with_a_chosen_integrator_is_stored_with_it(tmp_path, capsys):
    from jointmodeller.persistence import ProjectStore

    path = tmp_path / "p.jmdb"
    full = small_project()
    free_bodies = replace(full, masses=full.masses[:2], constraints=(), attachments=(
        replace(full.attachments[0], wraps=False, via_points=()), full.attachments[1]))
    save_project(path, free_bodies)  # free bodies: every integrator is available
    assert main(["run", str(path), "--study", "dynamics", "--t-end", "0.05", "--report-dt", "0.01",
                 "--digits", "4", "--method", "BDF"]) == 0
    with ProjectStore(path) as store:
        run = store.load_run(store.list_runs()[-1].id)
    assert run.study == "dynamics" and run.parameters["method"] == "BDF"
    assert run.status == "completed", run.message
    with pytest.raises(SystemExit):
        main(["run", str(path), "--study", "dynamics", "--method", "Euler"])
    # a project with constraints takes DOPRI5, which projects onto them: another one is refused, nothing stored
    joints = tmp_path / "joints.jmdb"
    with_joints = replace(full, attachments=(replace(full.attachments[0], wraps=False), full.attachments[1]))
    assert with_joints.constraints
    save_project(joints, with_joints)
    assert main(["run", str(joints), "--study", "dynamics", "--method", "BDF"]) == 2
    assert "integrator BDF cannot keep the project's constraints" in capsys.readouterr().err
    with ProjectStore(joints) as store:
        assert not store.list_runs()
    # without constraints the tree takes any method of the one simulate
    save_project(joints, replace(with_joints, constraints=()))
    assert main(["run", str(joints), "--study", "dynamics", "--t-end", "0.05", "--report-dt", "0.01",
                 "--digits", "4", "--method", "BDF"]) == 0
    with ProjectStore(joints) as store:
        run = store.load_run(store.list_runs()[-1].id)
    assert run.status == "completed" and run.parameters["method"] == "BDF" and run.parameters["system"] == "tree"


def test_import_keeps_the_modification_time_it_was_given(tmp_path):
    """Export → import → export is lossless even when the clock ticks in between (it once failed
    when a second boundary fell between the two saves)."""
    src = tmp_path / "a.jmdb"
    save_project(src, small_project())
    assert main(["export", str(src), "--json", str(tmp_path / "a.json")]) == 0
    data = json.loads((tmp_path / "a.json").read_text())
    data["project"]["info"]["modified"] = "2001-02-03T04:05:06+00:00"
    (tmp_path / "old.json").write_text(json.dumps(data))
    assert main(["import", str(tmp_path / "old.json"), str(tmp_path / "b.jmdb")]) == 0
    assert main(["export", str(tmp_path / "b.jmdb"), "--json", str(tmp_path / "b.json")]) == 0
    assert json.loads((tmp_path / "b.json").read_text())["project"]["info"]["modified"] == "2001-02-03T04:05:06+00:00"


def test_cli_study_choices_are_the_registry():
    from jointmodeller.app.registry import STUDIES
    from jointmodeller.cli import STUDY_CHOICES, STUDY_HELP

    assert tuple(STUDIES) == STUDY_CHOICES == tuple(STUDY_HELP)


def test_progress_bar_shows_elapsed_time_left_and_simulated_rate():
    """The text bar's timing: elapsed, the time left by linear extrapolation, and for dynamics the
    simulated seconds per wall second (fraction × span / elapsed)."""
    import io

    from jointmodeller.cli import ProgressBar

    out = io.StringIO()
    bar = ProgressBar("dynamics", stream=out, span=2.0)
    bar.t0 -= 10.0  # ten seconds ago
    bar(0.25)
    line = out.getvalue()
    assert "25.0%" in line and "10.0 s" in line and "~30 s left" in line and "0.05 sim s/s" in line
    bar(1.0)
    assert "left" not in out.getvalue().splitlines()[-1]


def test_project_command_shows_and_sets_gravity_and_title(tmp_path, capsys):
    path = tmp_path / "p.jmdb"
    save_project(path, small_project())
    assert main(["project", str(path), "--gravity", "0,0,0", "--title", "gravity off"]) == 0
    assert "gravity: (0, 0, 0) m/s²; saved" in capsys.readouterr().out
    project = load_project(path)
    assert project.info.gravity_G == (0.0, 0.0, 0.0) and project.info.title == "gravity off"
    assert main(["project", str(path), "--gravity", "0,nan,0"]) == 2  # one message, nothing saved
    assert "--gravity '0,nan,0'" in capsys.readouterr().err
    assert load_project(path).info.gravity_G == (0.0, 0.0, 0.0)


@pytest.mark.slow
def test_run_dynamics_on_distance_fields_is_stored_with_its_geometry(tmp_path, capsys):
    """`run --contact-geometry` (issue 17): the demo's first millisecond on distance fields (the default
    for dynamics) is stored with its geometry and follows the exact-geometry run. From rest, a contact
    force differing by δF moves the forearm by δF/m·t²/2: the face field's forces are the exact meshes'
    to ~1e-4 (docs/sdf.md), far below a micrometre at 1 ms; the bound allows 10 µm. Statics refuse the
    field in one line, storing nothing."""
    from jointmodeller.persistence import ProjectStore

    path = tmp_path / "demo.jmdb"
    assert main(["demo", str(path)]) == 0
    common = ["run", str(path), "--study", "dynamics", "--t-end", "0.001", "--report-dt", "0.0005", "--digits", "4"]
    assert main([*common, "--contact-geometry", "exact"]) == 0
    assert main(common) == 0
    with ProjectStore(path) as store:
        exact, field = (store.load_run(r.id) for r in store.list_runs()[-2:])
    assert exact.parameters["contact_geometry"] == "exact" and field.parameters["contact_geometry"] == "field"
    assert field.parameters["contact_geometry_requested"] == "auto"  # the default: dynamics on the fields
    assert exact.status == field.status == "completed", (exact.message, field.message)
    assert field.poses is not None and exact.poses is not None
    assert np.abs(field.poses.p_G[-1] - exact.poses.p_G[-1]).max() <= 1e-5
    capsys.readouterr()
    assert main(["run", str(path), "--study", "equilibrium", "--contact-geometry", "field"]) == 2
    assert "only dynamics" in capsys.readouterr().err
    with ProjectStore(path) as store:
        assert len(store.list_runs()) == 2
