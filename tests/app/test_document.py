"""The Qt-free document: cell edits parse and undo, rule problems land on their cells and block
saving, the dirty flag follows undo, autosave and recovery round-trip."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.app.columns import CellError, column
from jointmodeller.app.document import Document
from jointmodeller.app.recovery import find_recoveries, recover
from jointmodeller.model.errors import ValidationError
from jointmodeller.model.results import RunRecord
from jointmodeller.persistence import load_project
from tests.model.factories import two_box_project


@pytest.fixture
def small_project():
    """The two-box project of the GUI tests."""
    return two_box_project()

def test_cell_edit_parses_display_units_and_undoes(small_project):
    doc = Document(small_project)
    events = []
    doc.subscribe(events.append)
    assert doc.set_cell("attachments", 0, "point_a_L", "10, 5, 40")
    assert doc.project.attachments[0].point_a_L == pytest.approx((0.01, 0.005, 0.04))
    assert doc.dirty and any(e.kind == "dirty" for e in events)
    assert column("attachments", "point_a_L").format(doc.project.attachments[0]) == "10, 5, 40"
    doc.undo()
    assert doc.project.attachments[0].point_a_L == small_project.attachments[0].point_a_L
    assert not doc.dirty
    doc.redo()
    assert doc.project.attachments[0].point_a_L == pytest.approx((0.01, 0.005, 0.04))


def test_unparseable_text_changes_nothing(small_project):
    doc = Document(small_project)
    with pytest.raises(CellError, match="not a number"):
        doc.set_cell("masses", 1, "mass_kg", "heavy")
    with pytest.raises(CellError, match="three numbers"):
        doc.set_cell("masses", 1, "position_G", "1, 2")
    with pytest.raises(CellError, match="not one of"):
        doc.set_cell("attachments", 0, "body_b", "femur")
    assert doc.project is small_project and not doc.dirty


def test_rule_problem_marks_the_cell_and_is_saved_as_work_in_progress(small_project, tmp_path):
    path = tmp_path / "p.jmdb"
    doc = Document(small_project)
    doc.save(path)
    doc.set_cell("masses", 1, "mass_kg", "-2")
    cells = doc.cell_problems()
    assert ("masses", 1, "mass_kg") in cells and "positive" in cells[("masses", 1, "mass_kg")][0]
    doc.save()  # saving always works; studies and the CLI still refuse the file, saying why
    assert not doc.dirty
    with pytest.raises(ValidationError, match="mass_kg"):
        load_project(path)
    again = Document.open(path)
    assert again.project.masses[1].mass_kg == -2.0 and ("masses", 1, "mass_kg") in again.cell_problems()
    doc.undo()
    assert doc.cell_problems() == {}
    doc.save()
    assert load_project(path).masses[1].mass_kg == 0.3


def test_nested_and_row_level_problems_are_located(small_project):
    doc = Document(small_project)
    doc.set_cell("forces", 0, "profile.ramp_time_s", "-1")
    doc.set_cell("masses", 1, "name", "lower")  # duplicate name: the second row is marked
    cells = doc.cell_problems()
    assert ("forces", 0, "profile.ramp_time_s") in cells
    assert ("masses", 1, "name") in cells


def test_add_remove_rows_undo(small_project):
    doc = Document(small_project)
    i = doc.add_row("attachments")
    assert len(doc.project.attachments) == 2 and doc.project.attachments[i].body_a == "lower"
    doc.remove_row("attachments", 0)
    assert [a.name for a in doc.project.attachments] == ["tissue"]
    doc.undo()
    doc.undo()
    assert doc.project.attachments == small_project.attachments


def test_autosave_and_recovery(small_project, tmp_path):
    path = tmp_path / "p.jmdb"
    rec = tmp_path / "recovery"
    doc = Document(small_project, recovery_dir=rec)
    doc.save(path)
    assert doc.recovery.autosave() is None  # clean: nothing to recover
    doc.set_cell("info", 0, "title", "Crashed knee")
    doc.set_cell("masses", 1, "mass_kg", "0")  # even a rule-breaking edit is recovered
    f = doc.recovery.autosave()
    assert f is not None and f.exists()
    found = find_recoveries(rec)
    assert [r.file for r in found] == [f] and found[0].original_path == path
    back = recover(f)
    assert back.dirty and back.path == path
    assert back.project.info.title == "Crashed knee" and back.project.masses[1].mass_kg == 0.0
    assert np.array_equal(back.project.masses[0].mesh.vertices_L, small_project.masses[0].mesh.vertices_L)
    back.set_cell("masses", 1, "mass_kg", "0.4")
    back.save()
    assert not f.exists() and load_project(path).info.title == "Crashed knee"


def test_runs_kept_in_memory_until_first_save(small_project, tmp_path):
    doc = Document(small_project)
    run = RunRecord(study="dynamics", series={"time": np.linspace(0, 1, 5)})
    rid = doc.runs.add_run(run)
    assert [r.study for r in doc.runs.list_runs()] == ["dynamics"]
    assert np.array_equal(doc.runs.load_run(rid).series["time"], run.series["time"])
    doc.save(tmp_path / "p.jmdb")
    runs = doc.runs.list_runs()
    assert len(runs) == 1 and runs[0].id > 0
    assert np.array_equal(doc.runs.load_run(runs[0].id).series["time"], run.series["time"])


def test_mobilizer_columns_create_edit_and_remove_the_joint(small_project):
    doc = Document(small_project)
    assert column("masses", "joint.type").format(doc.project.masses[1]) == "none"
    assert column("masses", "joint.parent").format(doc.project.masses[1]) == ""
    doc.set_cell("masses", 1, "joint.type", "pin")
    j = doc.project.masses[1].joint
    assert j is not None and j.type == "pin" and j.parent == "ground"
    doc.set_cell("masses", 1, "joint.coordinates", "flexion")
    doc.set_cell("masses", 1, "joint.default_q", "0.25")
    doc.set_cell("masses", 1, "joint.frame_child.origin_L", "0, 0, -50")
    j = doc.project.masses[1].joint
    assert j.coordinates == ("flexion",) and j.default_q == (0.25,)
    assert j.frame_child.origin_L == pytest.approx((0.0, 0.0, -0.05))
    doc.set_cell("masses", 1, "joint.parent", "upper")  # its own parent: marked on that cell
    assert ("masses", 1, "joint.parent") in doc.cell_problems()
    doc.set_cell("masses", 1, "joint.type", "none")
    assert doc.project.masses[1].joint is None
    for _ in range(6):
        doc.undo()
    assert doc.project == small_project
