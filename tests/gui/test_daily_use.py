"""Issue 18, items 1–4, driven through the real main window: every path that replaces the project asks
to save unsaved work; File › New gives an empty project; an open (segmented) real mesh imports with
the mass properties of a real body, stated in the dialog; saving always works (problems are stored
and stay marked) while only studies are refused."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

import jointmodeller.gui.main_window as main_window
from jointmodeller.app.document import COLUMNS, new_project
from jointmodeller.gui.tables import PROBLEM_BG
from jointmodeller.model.errors import ValidationError
from jointmodeller.model.specs import Project, ProjectInfo
from jointmodeller.persistence import load_project

pytestmark = pytest.mark.gui

TIBIA = "lenhart2015-R-tibia-subchondral-bone.stl"


class Answers:
    """Stands in for QMessageBox.question: records each question and gives the next answer."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.asked: list[str] = []

    def __call__(self, parent, title, text, *args, **kwargs):
        self.asked.append(title)
        return self.answers.pop(0)


def _dirty(w) -> None:
    w.doc.set_cell("forces", 0, "magnitude_N", "12")
    assert w.doc.dirty and w.isWindowModified()


@pytest.mark.parametrize("replace", ["new", "demo", "recent"])
def test_every_path_that_replaces_the_project_asks_to_save(qtbot, window, small_project, tmp_path,
                                                           monkeypatch, replace):
    other = tmp_path / "other.jmdb"
    from jointmodeller.app.document import Document

    Document(Project(info=ProjectInfo(title="Other"))).save(other)
    monkeypatch.setattr(main_window, "demo_project", lambda: Project(info=ProjectInfo(title="Demo")))
    w = window(small_project)
    w._add_recent(str(other.resolve()))
    _dirty(w)
    w.confirm = True
    answers = Answers(QMessageBox.Cancel, QMessageBox.Discard)
    monkeypatch.setattr(main_window.QMessageBox, "question", answers)

    def act():
        if replace == "new":
            w.act_new.trigger()
        elif replace == "demo":
            w.act_demo.trigger()
        else:
            w.recent_menu.actions()[0].trigger()

    act()  # cancelled: nothing replaced
    assert answers.asked == ["Unsaved changes"]
    assert w.doc.project.forces[0].magnitude_N == 12.0 and w.doc.dirty
    act()  # discarded: replaced
    assert answers.asked == ["Unsaved changes"] * 2
    assert w.doc.project.info.title == {"new": "Untitled joint", "demo": "Demo", "recent": "Other"}[replace]
    assert not w.doc.dirty
    w.confirm = False


def test_file_new_gives_an_empty_project_to_import_bones_into(qtbot, window, small_project, shared_meshes):
    w = window(small_project)
    w.act_new.trigger()
    p = w.doc.project
    assert p.masses == () and p.attachments == () and p.forces == ()
    assert p.info.gravity_G == (0.0, 0.0, -9.81)
    assert [s.name for s in p.springs] == ["ligament"]  # a placed tissue refers to it at once
    assert w.doc.problems() == [] and not w.isWindowModified() and w.doc.path is None
    assert w.undo_stack.count() == 0
    f = shared_meshes / "lenhart2015-R-patella-bone.stl"
    if not f.exists():
        pytest.skip("patella mesh absent")
    i = w.import_mesh(f, units="m")
    assert w.doc.project.masses[i].mesh is not None and w.doc.problems() == []
    assert w.isWindowModified()


def _triangle_ok(inertia) -> bool:
    m = np.sort(np.linalg.eigvalsh(np.asarray(inertia)))
    return bool(m[0] > 0 and m[0] + m[1] >= m[2] * (1 - 1e-12))


def test_open_segmented_mesh_imports_with_valid_mass_properties(qtbot, window, shared_meshes, tmp_path):
    from jointmodeller.gui.mesh_import import MeshImportDialog

    f = shared_meshes / TIBIA
    if not f.exists():
        pytest.skip("tibia subchondral mesh absent")
    dlg = MeshImportDialog([], preview_3d=False)
    qtbot.addWidget(dlg)
    dlg.set_file(str(f))  # units left to the dialog: in mm this sheet would be 0.07 mm long
    assert dlg.units.currentText() == "m" and "Units set to m" in dlg.info.text()
    mass = dlg.mass()
    assert mass is not None and _triangle_ok(mass.inertia_L)
    assert dlg.imported.method == "convex_hull"
    assert "convex hull" in dlg.info.text() and "triangle inequality" in dlg.info.text()  # stated
    assert 0.005 < mass.mass_kg < 0.1  # a hull of 43 × 13 × 68 mm at bone density
    dlg.reject()

    w = window(new_project())
    i = w.import_mesh(f, units="m")
    m = w.doc.project.masses[i]
    assert _triangle_ok(m.inertia_L) and w.doc.problems() == []
    path = tmp_path / "tibia.jmdb"
    assert w.save_as(str(path)) and not w.isWindowModified()
    back = load_project(path)  # validated: a clean project, not a draft
    assert back.masses[0].inertia_L == m.inertia_L
    w.run_panel.t_end.setValue(0.01)
    with qtbot.waitSignal(w.runFinished, timeout=120_000) as blocker:
        assert w.start_study("dynamics")
    run = blocker.args[0]
    assert run.status == "completed", run.message


def test_saving_always_works_problems_are_stored_and_only_studies_refused(qtbot, window, small_project,
                                                                        tmp_path):
    path = tmp_path / "wip.jmdb"
    w = window(small_project)
    assert w.save_as(str(path))
    w.doc.set_cell("masses", 1, "mass_kg", "-1")  # breaks a rule: marked
    w.doc.remove_row("springs", 0)  # the ligament now refers to no spring type (no foreign key to store)
    problems = [str(p) for p in w.doc.problems()]
    assert len(problems) >= 2
    assert w.save()  # stored anyway
    assert "problem" in w.statusBar().currentMessage() and not w.isWindowModified()
    with pytest.raises(ValidationError, match="mass_kg"):
        load_project(path)  # what a study or the CLI reads: says what is wrong
    assert load_project(path, validate=False).masses[1].mass_kg == -1.0

    assert w.open_project(str(path))  # reopened: the problems are there and marked
    assert w.doc.project.masses[1].mass_kg == -1.0 and w.doc.project.springs == ()
    assert [str(p) for p in w.doc.problems()] == problems
    panel = w.panels["masses"]
    idx = panel.model.index(1, [c.key for c in COLUMNS["masses"]].index("mass_kg"))
    assert idx.data(Qt.BackgroundRole).color() == PROBLEM_BG
    assert not w.start_study("equilibrium")  # only studies are refused, and Start says why
    assert "Fix the marked problems first" in w.run_panel.status.text()
    assert "mass_kg" in w.run_panel.status.text()

    w.doc.set_cell("masses", 1, "mass_kg", "0.3")
    w.doc.add_row("springs", small_project.springs[0])
    assert w.doc.problems() == [] and w.save()
    assert load_project(path) == w.doc.project  # valid again: stored as plain rows
