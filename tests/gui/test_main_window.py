"""The real main window driven by pytest-qt: cell edits with undo, inline validation (problems are
marked and saved as work in progress), mesh import, ligament placement by two picks in the viewport,
selection sync, dirty marker, save / open / recent files and recovery."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLineEdit

from jointmodeller.app.columns import COLUMNS
from jointmodeller.app.document import Document
from jointmodeller.app.picking import closest_on_surface, mass_pose, to_global
from jointmodeller.gui.tables import PROBLEM_BG
from jointmodeller.persistence import load_project

pytestmark = pytest.mark.gui


def col_index(section: str, key: str) -> int:
    return [c.key for c in COLUMNS[section]].index(key)


def type_into_cell(qtbot, panel, row: int, key: str, text: str) -> None:
    """Edit a cell the way a user does: open the editor, type, press Enter."""
    panel.window().tabs.setCurrentWidget(panel)
    idx = panel.model.index(row, [c.key for c in panel.model.columns].index(key))
    panel.view.setCurrentIndex(idx)
    panel.view.edit(idx)
    vp = panel.view.viewport()
    editors = [e for cls in (QLineEdit, QComboBox) for e in vp.findChildren(cls) if e.isVisible()]
    assert len(editors) == 1
    editor = editors[0]
    if isinstance(editor, QComboBox):
        editor.setCurrentText(text)
        qtbot.keyClick(editor, Qt.Key_Return)
    else:
        assert isinstance(editor, QLineEdit)
        editor.selectAll()
        qtbot.keyClicks(editor, text)
        qtbot.keyClick(editor, Qt.Key_Return)
    qtbot.waitUntil(lambda: not any(e.isVisible() for cls in (QLineEdit, QComboBox) for e in vp.findChildren(cls)),
                    timeout=3000)  # the commit is queued


def test_edit_cell_then_undo_and_redo(qtbot, window, small_project):
    w = window(small_project)
    panel = w.panels["masses"]
    w.tabs.setCurrentWidget(panel)
    assert not w.isWindowModified()
    type_into_cell(qtbot, panel, 1, "mass_kg", "0.45")
    assert w.doc.project.masses[1].mass_kg == pytest.approx(0.45)
    assert panel.model.index(1, col_index("masses", "mass_kg")).data() == "0.45"
    assert w.isWindowModified() and "[*]" in w.windowTitle()
    w.act_undo.trigger()
    assert w.doc.project.masses[1].mass_kg == pytest.approx(0.3)
    assert panel.model.index(1, col_index("masses", "mass_kg")).data() == "0.3"
    assert not w.isWindowModified()
    w.act_redo.trigger()
    assert w.doc.project.masses[1].mass_kg == pytest.approx(0.45)
    type_into_cell(qtbot, w.panels["attachments"], 0, "body_b", "lower")  # drop-down editor
    assert w.doc.project.attachments[0].body_b == "lower"
    w.undo_stack.undo()
    assert w.doc.project.attachments[0].body_b == "upper"


def test_invalid_values_are_marked_and_saved_as_work_in_progress(qtbot, window, small_project, tmp_path):
    path = tmp_path / "boxes.jmdb"
    Document(small_project).save(path)
    before = path.read_bytes()
    w = window(load_project(path), path)
    panel = w.panels["masses"]
    type_into_cell(qtbot, panel, 1, "mass_kg", "heavy")  # not a number: refused, message shown
    assert "not a number" in panel.message.text()
    assert w.doc.project.masses[1].mass_kg == 0.3 and not w.isWindowModified()
    type_into_cell(qtbot, panel, 1, "mass_kg", "-1")  # a number that breaks a rule: marked
    idx = panel.model.index(1, col_index("masses", "mass_kg"))
    assert idx.data(Qt.BackgroundRole).color() == PROBLEM_BG
    assert "positive" in idx.data(Qt.ToolTipRole) and "positive" in panel.message.text()
    assert w.save()  # saving always works (issue 18): the problem is stored and stays marked
    assert "1 problem" in w.statusBar().currentMessage()
    assert path.read_bytes() != before and load_project(path, validate=False).masses[1].mass_kg == -1.0
    w.act_undo.trigger()
    assert idx.data(Qt.BackgroundRole) is None


def test_save_as_recent_files_and_reopen(qtbot, window, small_project, tmp_path):
    w = window(small_project)
    w.project_form.edits["title"].setText("Renamed")
    w.project_form.edits["title"].editingFinished.emit()
    assert w.doc.project.info.title == "Renamed" and w.isWindowModified()
    target = tmp_path / "saved.jmdb"
    assert w.save_as(str(target))
    assert not w.isWindowModified() and w.windowTitle().startswith("saved.jmdb")
    assert w.files.recent_files()[0] == str(target.resolve())
    assert w.open_project(str(target)) and w.doc.project.info.title == "Renamed"


def test_autosave_then_recovery_after_a_crash(qtbot, window, small_project, tmp_path):
    w = window(small_project)
    type_into_cell(qtbot, w.panels["forces"], 0, "magnitude_N", "12")
    assert w.files.autosave() is not None
    w2 = window(Project_empty())
    assert w2.files.offer_recovery(ask=False)
    assert w2.doc.project.forces[0].magnitude_N == 12.0 and w2.isWindowModified()


def Project_empty():
    from jointmodeller.model.specs import Project

    return Project()


def test_import_mesh_creates_a_mass_with_computed_properties(qtbot, window, small_project, shared_meshes):
    f = shared_meshes / "lenhart2015-R-patella-bone.stl"
    if not f.exists():
        pytest.skip("patella mesh absent")
    w = window(small_project)
    i = w.edits.import_mesh(f, units="m")  # these files are in metres (CREDITS.md)
    m = w.doc.project.masses[i]
    assert m.mesh is not None and m.name.startswith("lenhart2015-R-patella-bone")
    assert 0.005 < m.mass_kg < 0.1  # a patella: tens of grams at bone density
    centroid = m.mesh.vertices_L.mean(axis=0)
    assert np.linalg.norm(np.asarray(m.com_L) - centroid) < 0.02
    assert w.panels["masses"].view.currentIndex().row() == i
    assert "masses" == w.tabs.currentWidget().section
    w.act_undo.trigger()
    assert len(w.doc.project.masses) == 2


def test_import_dialog_preview_and_units(qtbot, shared_meshes):
    from jointmodeller.gui.mesh_import import MeshImportDialog

    f = shared_meshes / "lenhart2015-R-patella-bone.stl"
    if not f.exists():
        pytest.skip("patella mesh absent")
    dlg = MeshImportDialog(["bone"], preview_3d=True)
    qtbot.addWidget(dlg)
    dlg.set_file(str(f), "mm")
    in_mm = dlg.mass()
    dlg.set_file(str(f), "m")
    in_m = dlg.mass()
    assert in_m.mass_kg == pytest.approx(in_mm.mass_kg * 1e9, rel=1e-6)  # volume scales by 1000³
    assert "vertices" in dlg.info.text()
    dlg.reject()


def visible_pick(w, mass: str, rng) -> tuple[float, float]:
    """Display coordinates where a pick lands on ``mass`` (its own vertices, tried in turn)."""
    m = w.doc.project.mass(mass)
    pose = mass_pose(m)
    verts = to_global(pose, m.mesh.vertices_L)
    for k in rng.permutation(len(verts))[:400]:
        x, y = w.viewport.world_to_display(verts[k])
        hit = w.viewport.pick_display(x, y)
        if hit is not None and hit[0] == mass:
            return x, y
    pytest.fail(f"no visible point of {mass}")


def test_place_ligament_with_two_picks_on_the_demo_bones(qtbot, window, demo_project):
    w = window(demo_project)
    w.viewport.camera_preset("anterior")
    n = len(w.doc.project.attachments)
    w.act_place.trigger()
    assert w.viewport.picking.mode == "place"
    rng = np.random.default_rng(3)
    xa, ya = visible_pick(w, "humerus", rng)
    xb, yb = visible_pick(w, "ulna", rng)
    w.viewport.picking.click(xa, ya)
    assert len(w.doc.project.attachments) == n
    w.viewport.picking.click(xb, yb)
    atts = w.doc.project.attachments
    assert len(atts) == n + 1
    att = atts[-1]
    assert (att.body_a, att.body_b) == ("humerus", "ulna")
    for body, pt in ((att.body_a, att.point_a_L), (att.body_b, att.point_b_L)):
        _, d, _ = closest_on_surface(w.doc.project.mass(body).mesh, np.asarray(pt)[None])
        assert d[0] < 1e-6
    ga = to_global(mass_pose(w.doc.project.mass("humerus")), att.point_a_L)
    gb = to_global(mass_pose(w.doc.project.mass("ulna")), att.point_b_L)
    assert att.initial_length_m == pytest.approx(np.linalg.norm(gb - ga))
    panel = w.panels["attachments"]
    assert w.tabs.currentWidget() is panel and panel.view.currentIndex().row() == n
    assert w.viewport.scene.selected == ("attachments", n)
    # the unloaded length stays editable
    type_into_cell(qtbot, panel, n, "initial_length_m", "42")
    assert w.doc.project.attachments[n].initial_length_m == pytest.approx(0.042)
    # drag the insertion along the ulna: it stays on the ulna's surface
    w.act_drag.trigger()
    assert w.viewport.picking.start_drag(xb, yb)
    x2, y2 = visible_pick(w, "ulna", np.random.default_rng(11))
    w.viewport.picking.drag_to(x2, y2)
    w.viewport.picking.end_drag()
    moved = w.doc.project.attachments[n]
    assert moved.point_b_L != att.point_b_L and moved.point_a_L == att.point_a_L
    _, d, _ = closest_on_surface(w.doc.project.mass("ulna").mesh, np.asarray(moved.point_b_L)[None])
    assert d[0] < 1e-6


def test_selection_follows_between_viewport_and_tables(qtbot, window, small_project):
    w = window(small_project)
    rng = np.random.default_rng(0)
    x, y = visible_pick(w, "upper", rng)
    w.viewport.picking.click(x, y)  # select mode: picks the mass row
    assert w.tabs.currentWidget() is w.panels["masses"]
    assert w.panels["masses"].view.currentIndex().row() == 1
    assert w.viewport.scene.selected == ("masses", 1)
    w.tabs.setCurrentWidget(w.panels["attachments"])
    w.panels["attachments"].view.selectRow(0)
    assert w.viewport.scene.selected == ("attachments", 0)


def test_mobilizers_panel_edits_the_joint_of_a_mass(qtbot, window, small_project):
    w = window(small_project)
    panel = w.panels["mobilizers"]
    assert panel.model.rowCount() == 2 and not panel.add_button.isVisible()
    type_into_cell(qtbot, panel, 1, "joint.type", "ball")
    type_into_cell(qtbot, panel, 1, "joint.parent", "lower")
    assert w.doc.project.masses[1].joint.type == "ball" and w.doc.project.masses[1].joint.parent == "lower"
    w.act_undo.trigger()
    w.act_undo.trigger()
    assert w.doc.project.masses[1].joint is None
