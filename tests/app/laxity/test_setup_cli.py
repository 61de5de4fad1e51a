"""Issue 15 item 8: set-up from the CLI (experiment and contact add / list / remove) and concise
output by default (laxity, import-osim), --verbose for the tables."""

from __future__ import annotations

import json

import pytest

from jointmodeller.cli import main
from jointmodeller.persistence.store import ProjectStore, load_project, save_project


@pytest.fixture
def db(tmp_path, project):
    path = tmp_path / "joint.jmdb"
    save_project(path, project.with_rows("experiments", ()))
    return str(path)


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


def test_experiment_add_list_remove(db, capsys):
    assert main(["experiment", "add", db, "drawer", "--fixed", "upper", "--moving", "lower",
                 "--load-kind", "anterior_posterior", "--max-load", "20", "--steps", "3", "--sides", "negative",
                 "--flexion-deg", "0", "--load-point-mm", "0,0,-100", "--preload-force-n", "0,0,-10",
                 "--tone", "strut=5", "--axis", "flexion_axis_fixed=1,0,0", "--axis", "long_axis_fixed=0 0 1",
                 "--axis", "origin_fixed=0,0,-150"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("added experiment drawer: lower on upper, anterior_posterior −20 N in 3 steps")
    e = load_project(db).experiments[0]
    assert e.lever_m == 0.0 and e.measure == "anterior_posterior_mm" and e.sides == "negative"
    assert e.load_point_L == pytest.approx((0.0, 0.0, -0.1)) and e.preload_force_N == (0.0, 0.0, -10.0)
    assert e.tissue_tone == (("strut", 5.0),)
    assert dict(e.axes)["origin_fixed"] == pytest.approx((0.0, 0.0, -0.15))  # mm in, m stored
    assert dict(e.axes)["long_axis_fixed"] == (0.0, 0.0, 1.0)  # directions as typed
    # the same name again is refused unless --replace
    assert main(["experiment", "add", db, "drawer", "--fixed", "upper", "--moving", "lower"]) == 2
    assert "exists; give --replace" in one_line_error(capsys)
    assert main(["experiment", "add", db, "vv", "--fixed", "upper", "--moving", "lower", "--steps", "3"]) == 0
    out = capsys.readouterr().out
    assert "lever 300 mm" in out  # varus-valgus: the lever is the moment's
    assert "note: 'lower' has no joint; set --axis flexion_axis_fixed=x,y,z and --axis long_axis_fixed=x,y,z" in out
    assert main(["experiment", "list", db]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[0].startswith("drawer:") and lines[-1].startswith("2 experiments")
    assert main(["experiment", "list", db, "--verbose"]) == 0
    assert "  tissue_tone " in capsys.readouterr().out
    assert main(["experiment", "remove", db, "vv"]) == 0
    assert [x.name for x in load_project(db).experiments] == ["drawer"]
    assert main(["experiment", "remove", db, "vv"]) == 2
    assert "no experiment named 'vv'; the project has: 'drawer'" in one_line_error(capsys)


@pytest.mark.parametrize("argv, message", [
    (["--fixed", "upper", "--moving", "nobody"], "moving_body"),
    (["--fixed", "upper", "--moving", "lower", "--tone", "nope=3"], "no attachment named 'nope'"),
    (["--fixed", "upper", "--moving", "lower", "--lever-mm", "0"], "lever_m: must be positive"),
    (["--fixed", "upper", "--moving", "lower", "--load-point-mm", "1,2"], "expected three numbers"),
    (["--fixed", "upper", "--moving", "lower", "--axis", "knee=1,0,0"], "--axis knee: unknown"),
    (["--fixed", "upper", "--moving", "lower", "--tone", "strut"], "expected NAME=VALUE"),
])
def test_experiment_add_refuses_bad_rows_in_one_line(db, capsys, argv, message):
    assert main(["experiment", "add", db, "x", *argv]) == 2
    assert message in one_line_error(capsys)
    assert load_project(db).experiments == ()


def test_contact_add_list_remove(db, capsys):
    assert main(["contact", "add", db, "tf", "upper", "lower", "--thickness-mm", "6", "--youngs-mpa", "5"]) == 0
    assert capsys.readouterr().out.strip() == ("added contact tf: upper – lower, elastic_foundation, cartilage 6 mm, "
                                               "E 5 MPa, ν 0.45")
    c = load_project(db).contacts[0]
    assert c.cartilage_thickness_m == pytest.approx(6e-3) and c.youngs_modulus_Pa == pytest.approx(5e6)
    assert main(["contact", "add", db, "tf", "upper", "lower", "--method", "mjm_springs", "--replace"]) == 0
    assert load_project(db).contacts[0].method == "mjm_springs"
    capsys.readouterr()
    assert main(["contact", "list", db]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 contact (--verbose for every field)"
    assert main(["contact", "add", db, "bad", "upper", "ghost"]) == 2
    assert "ghost" in one_line_error(capsys)
    assert main(["contact", "remove", db, "tf"]) == 0
    assert load_project(db).contacts == ()


@pytest.mark.slow
def test_laxity_prints_a_few_lines_and_keeps_the_summary_in_the_report(tmp_path, project, capsys):
    path = tmp_path / "joint.jmdb"
    save_project(path, project)
    assert main(["laxity", str(path), "--out", str(tmp_path / "out")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert 3 <= len(lines) <= 6, lines
    assert lines[0].startswith("run #1: vv completed, 9 steps")
    assert lines[1].startswith("flexion held at 0°")
    assert lines[2].startswith("laxity ") and "deg (varus_valgus_deg)" in lines[2]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["flexion_deg_held"] == 0.0 and "attachments" in summary["parameters"]
    assert main(["laxity", str(path), "--out", str(tmp_path / "out2"), "--verbose"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "completed"  # the whole summary
    with ProjectStore(path) as store:
        assert [r.status for r in store.list_runs()] == ["completed", "completed"]


def test_run_laxity_takes_the_contact_geometry_and_equilibrium_refuses_it(tmp_path, project, capsys):
    """`run --study laxity --contact-geometry field` (issue 17) runs the sweep and stores its geometry;
    equilibrium refuses the option in one line and stores nothing."""
    path = tmp_path / "joint.jmdb"
    save_project(path, project)
    assert main(["run", str(path), "--study", "laxity", "--contact-geometry", "field"]) == 0
    with ProjectStore(path) as store:
        (run,) = [store.load_run(r.id) for r in store.list_runs()]
    assert run.study == "laxity" and run.parameters["contact_geometry"] == "field"
    capsys.readouterr()
    assert main(["run", str(path), "--study", "equilibrium", "--contact-geometry", "field"]) == 2
    assert "equilibrium freezes contact sets" in one_line_error(capsys)
    with ProjectStore(path) as store:
        assert len(store.list_runs()) == 1


@pytest.fixture
def arm26_path(shared_models):
    path = shared_models / "arm26" / "arm26.osim"
    if not path.is_file():
        pytest.skip("arm26.osim is absent")
    return path


@pytest.mark.slow
def test_import_osim_prints_one_paragraph_and_writes_the_report_beside(tmp_path, arm26_path, capsys):
    db = tmp_path / "arm.jmdb"
    assert main(["import-osim", str(arm26_path), str(db)]) == 0
    out = capsys.readouterr().out.strip()
    assert "\n" not in out and out.startswith(f"Imported 'arm26' into {db}:")
    assert out.endswith(f"The full report is in {db}.import.txt.")
    report = (tmp_path / "arm.jmdb.import.txt").read_text()
    assert report.startswith("Imported from OpenSim model") and len(report) > len(out)
    db2 = tmp_path / "arm2.jmdb"
    assert main(["import-osim", str(arm26_path), str(db2), "--verbose"]) == 0
    assert capsys.readouterr().out.startswith("Imported from OpenSim model")


def test_new_experiment_fields_round_trip_and_older_rows_take_their_defaults(project, tmp_path):
    """Preload, tone, load point, sides and flexion sign are stored in the project file (experiments are
    validated JSON rows: no schema change), and a row written before they existed opens with defaults."""
    from dataclasses import replace

    from jointmodeller.model.codec import project_from_json, project_to_data
    from jointmodeller.model.specs import Experiment

    e = replace(project.experiments[0], sides="positive", flexion_sign=-1, load_point_L=(0.0, 0.0, -0.1),
                preload_force_N=(0.0, 0.0, 30.0), preload_moment_Nm=(0.5, 0.0, 0.0), tissue_tone=(("strut", 12.5),))
    path = tmp_path / "p.jmdb"
    save_project(path, project.with_rows("experiments", (e,)))
    assert load_project(path).experiments[0] == e
    data = project_to_data(project)
    for key in ("sides", "flexion_sign", "load_point_L", "preload_force_N", "preload_moment_Nm", "tissue_tone"):
        del data["project"]["experiments"][0][key]
    old = project_from_json(json.dumps(data))
    defaults = Experiment("x", "a", "b")
    got = old.experiments[0]
    assert (got.sides, got.flexion_sign, got.load_point_L, got.preload_force_N, got.tissue_tone) == (
        defaults.sides, defaults.flexion_sign, None, (0.0, 0.0, 0.0), ())


def test_new_experiment_fields_are_table_columns(project):
    """The GUI's Experiments table (app.document) edits the load point in mm, the sides, the flexion
    sign and the preloads; each edit is validated with the project."""
    from jointmodeller.app.document import Document

    doc = Document(project)
    doc.set_cell("experiments", 0, "load_point_L", "0, -100, 0")
    doc.set_cell("experiments", 0, "sides", "negative")
    doc.set_cell("experiments", 0, "preload_force_N", "0 0 20")
    doc.set_cell("experiments", 0, "flexion_sign", "-1")
    e = doc.project.experiments[0]
    assert (e.load_point_L, e.sides, e.preload_force_N, e.flexion_sign) == ((0.0, -0.1, 0.0), "negative",
                                                                            (0.0, 0.0, 20.0), -1)
    assert doc.problems() == []
    doc.set_cell("experiments", 0, "flexion_sign", "2")
    assert [p.field for p in doc.problems()] == ["flexion_sign"]


def test_laxity_wall_time_limit_from_the_cli(tmp_path, project, capsys):
    """`laxity --max-wall-s` and `run --study laxity --max-wall-s`: a sweep that runs out of time is stored
    as stopped (with whatever steps it solved) and reported; a limit that is no positive number is one line."""
    path = tmp_path / "joint.jmdb"
    save_project(path, project)
    assert main(["laxity", str(path), "--out", str(tmp_path / "o"), "--max-wall-s", "0"]) == 2
    assert "--max-wall-s 0: must be a positive number of seconds" in one_line_error(capsys)
    assert main(["laxity", str(path), "--out", str(tmp_path / "o"), "--max-wall-s", "1e-9"]) == 0
    assert "stopped at the wall-time limit of 1e-09 s" in capsys.readouterr().out.splitlines()[0]
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["status"] == "stopped"
    assert main(["run", str(path), "--study", "laxity", "--max-wall-s", "1e-9"]) == 1
    with ProjectStore(path) as store:
        assert [r.status for r in store.list_runs()] == ["stopped", "stopped"]
