"""The input widgets on a plain Document, no main window (napari's test_qt_dims.py style): each widget
is built on ``Document(project)`` alone and driven as a user drives it (an editor typed into, a drop-down
chosen, a button clicked, Enter pressed). An accepted edit changes the project as one step of the
document's own undo history and undo restores it; text that cannot be a value is refused with a message
and changes nothing; an edit made on the document directly (a script, another panel, undo) shows in the
widget. The main window's composition of these widgets is tested in test_main_window.py and
test_daily_use.py."""

from __future__ import annotations

import math

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLineEdit

from jointmodeller.app.columns import MOBILIZER_COLUMNS
from jointmodeller.app.document import Document
from jointmodeller.gui.coordinates import EMPTY_HINT, LOCKED, VALUE, CoordinatesPanel
from jointmodeller.gui.tables import PROBLEM_BG, ProjectForm, SectionPanel
from jointmodeller.model.specs import Frame, JointSpec, Mass, Project, ProjectInfo
from tests.model.factories import box_mesh, two_box_project

pytestmark = pytest.mark.gui

INERTIA = ((3e-4, 0, 0), (0, 3e-4, 0), (0, 0, 1e-4))


@pytest.fixture
def doc() -> Document:
    """The two-box project (springs: ligament; masses: lower, upper; attachments: MCL; forces: push)."""
    return Document(two_box_project())


@pytest.fixture
def jointed_doc() -> Document:
    """Two boxes, the upper one on a cylinder joint (flex: a rotation, shift: a translation) to the lower."""
    lower = Mass(name="lower", mesh=box_mesh((0.04, 0.04, 0.1), "lower.stl"), mass_kg=0.3, fixed=True,
                 properties_from_mesh=False, inertia_L=INERTIA)
    joint = JointSpec(type="cylinder", parent="lower", frame_parent=Frame(origin_L=(0.0, 0.0, 0.055)),
                      frame_child=Frame(origin_L=(0.0, 0.0, -0.055)), coordinates=("flex", "shift"),
                      default_q=(0.0, 0.0))
    upper = Mass(name="upper", mesh=box_mesh((0.04, 0.04, 0.1), "upper.stl"), mass_kg=0.3,
                 properties_from_mesh=False, position_G=(0.0, 0.0, 0.11), inertia_L=INERTIA, joint=joint)
    return Document(Project(info=ProjectInfo(title="Cylinder joint"), masses=(lower, upper)))


def shown(qtbot, widget):
    """The widget given to qtbot (closed after the test) and shown, as a tab the user opened."""
    qtbot.addWidget(widget)
    widget.resize(900, 400)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def column_of(panel, key: str) -> int:
    return [c.key for c in panel.model.columns].index(key)


def cell(panel, row: int, key: str) -> str:
    return panel.model.index(row, column_of(panel, key)).data()


def editors(panel) -> list:
    """The cell editors open in the panel's table."""
    vp = panel.view.viewport()
    return [e for kind in (QLineEdit, QComboBox) for e in vp.findChildren(kind) if e.isVisible()]


def open_editor(panel, row: int, col: int):
    """Open the cell's editor as a double click does; returns the one editor shown."""
    idx = panel.model.index(row, col)
    panel.view.setCurrentIndex(idx)
    panel.view.edit(idx)
    shown_editors = editors(panel)
    assert len(shown_editors) == 1
    return shown_editors[0]


def press(qtbot, panel, editor, key) -> None:
    """Press Enter (commit) or Escape (cancel) in an open editor; the delegate commits and closes it in a
    later turn of the event loop (a queued call), so wait for that."""
    qtbot.keyClick(editor, key)
    qtbot.waitUntil(lambda: not editors(panel), timeout=3000)


def type_into(qtbot, panel, row: int, key: str, text: str) -> None:
    """Type into a table cell as a user does: open its editor, replace the text, press Enter."""
    editor = open_editor(panel, row, column_of(panel, key))
    assert isinstance(editor, QLineEdit)
    editor.selectAll()
    qtbot.keyClicks(editor, text)
    press(qtbot, panel, editor, Qt.Key_Return)


# ------------------------------------------------------------------ SectionPanel
def test_typing_into_a_cell_is_one_undo_step_and_undo_restores_it(qtbot, doc):
    before = doc.project
    panel = shown(qtbot, SectionPanel(doc, "springs"))
    type_into(qtbot, panel, 0, "kx", "30000, 0, 3e7")

    assert doc.project.springs[0].kx == (30000.0, 0.0, 3e7)
    assert doc.project.springs[1:] == before.springs[1:] and doc.project.masses == before.masses
    assert len(doc.history.done) == 1 and doc.dirty
    assert cell(panel, 0, "kx") == "30000, 0, 3e+07"
    assert panel.message.text() == ""

    with qtbot.waitSignal(panel.model.dataChanged, timeout=1000):  # the table is told of the undo
        assert doc.undo()
    assert doc.project == before and not doc.dirty
    assert cell(panel, 0, "kx") == "20000"


def test_text_that_is_no_value_is_refused_with_a_message_and_changes_nothing(qtbot, doc):
    before = doc.project
    panel = shown(qtbot, SectionPanel(doc, "masses"))
    type_into(qtbot, panel, 1, "mass_kg", "heavy")

    assert doc.project is before and doc.history.done == []
    assert panel.message.text().startswith("Masses › row 2 › Mass [kg]: ")
    assert cell(panel, 1, "mass_kg") == "0.3"
    # setData with the edit role (what the delegate calls) answers False for a position with two numbers
    assert not panel.model.setData(panel.model.index(0, column_of(panel, "position_G")), "1, 2", Qt.EditRole)
    assert doc.project is before and "Position [mm]" in panel.message.text()


def test_a_value_that_breaks_a_rule_is_applied_and_its_cell_marked_until_undone(qtbot, doc):
    panel = shown(qtbot, SectionPanel(doc, "masses"))
    col = column_of(panel, "mass_kg")
    assert panel.model.setData(panel.model.index(1, col), "-1", Qt.EditRole)

    assert doc.project.masses[1].mass_kg == -1.0 and len(doc.history.done) == 1
    idx = panel.model.index(1, col)
    assert idx.data(Qt.BackgroundRole).color() == PROBLEM_BG and "mass_kg" in idx.data(Qt.ToolTipRole)
    assert "Masses › row 2 › Mass [kg]" in panel.message.text()
    assert panel.model.index(0, col).data(Qt.BackgroundRole) is None  # the valid row is not marked

    doc.undo()
    assert panel.model.index(1, col).data(Qt.BackgroundRole) is None and cell(panel, 1, "mass_kg") == "0.3"


def test_drop_down_lists_the_choices_and_the_project_references(qtbot, doc):
    doc.add_row("springs")  # a second tissue type, made on the document: the list of references grows
    doc.history.done.clear()
    springs = [s.name for s in doc.project.springs]
    assert len(springs) == 2
    panel = shown(qtbot, SectionPanel(doc, "attachments"))

    box = open_editor(panel, 0, column_of(panel, "spring"))
    assert isinstance(box, QComboBox)
    assert [box.itemText(i) for i in range(box.count())] == springs and box.currentText() == "ligament"
    box.setCurrentText(springs[1])
    press(qtbot, panel, box, Qt.Key_Return)
    assert doc.project.attachments[0].spring == springs[1] and len(doc.history.done) == 1

    box = open_editor(panel, 0, column_of(panel, "wraps"))  # yes/no
    assert [box.itemText(i) for i in range(box.count())] == ["yes", "no"]
    press(qtbot, panel, box, Qt.Key_Escape)  # cancelled: nothing changes
    assert len(doc.history.done) == 1


def test_add_and_delete_buttons_are_undoable_row_edits(qtbot, doc):
    panel = shown(qtbot, SectionPanel(doc, "forces"))
    assert panel.model.rowCount() == 1

    qtbot.mouseClick(panel.add_button, Qt.LeftButton)
    assert len(doc.project.forces) == 2 and panel.model.rowCount() == 2
    assert panel.view.currentIndex().row() == 1  # the new row is selected
    assert len(doc.history.done) == 1

    panel.view.setCurrentIndex(panel.model.index(0, 0))
    qtbot.mouseClick(panel.delete_button, Qt.LeftButton)
    assert [f.name for f in doc.project.forces] != ["push"] and len(doc.project.forces) == 1
    assert panel.model.rowCount() == 1 and len(doc.history.done) == 2

    doc.undo()
    doc.undo()
    assert [f.name for f in doc.project.forces] == ["push"] and panel.model.rowCount() == 1


def test_the_table_follows_edits_made_on_the_document(qtbot, doc):
    """The model reads the document on every call, so what is checked is that the view is told: a
    changed row repaints (dataChanged), added and removed rows reach the view's row header."""
    panel = shown(qtbot, SectionPanel(doc, "attachments"))
    rows_shown = panel.view.verticalHeader().count
    with qtbot.waitSignal(panel.model.dataChanged, timeout=1000):
        doc.set_cell("attachments", 0, "name", "ACL")
    assert cell(panel, 0, "name") == "ACL"
    with qtbot.waitSignal(panel.model.dataChanged, timeout=1000):
        doc.set_cell("attachments", 0, "point_a_L", "10, 5, 40")  # millimetres shown, metres stored
    assert cell(panel, 0, "point_a_L") == "10, 5, 40"
    doc.add_row("attachments")
    assert rows_shown() == 2
    doc.replace_project(Project())  # another project: the table is emptied
    assert rows_shown() == 0
    doc.undo()
    assert rows_shown() == 2 and cell(panel, 0, "name") == "ACL"


def test_mobilizers_panel_gives_a_mass_a_joint_over_its_own_columns(qtbot, doc):
    panel = shown(qtbot, SectionPanel(doc, "masses", columns=MOBILIZER_COLUMNS, rows_fixed=True))
    assert not panel.add_button.isVisibleTo(panel) and not panel.delete_button.isVisibleTo(panel)
    name = panel.model.index(1, column_of(panel, "name"))  # the mass, shown read-only here
    assert not panel.model.flags(name) & Qt.ItemIsEditable
    panel.view.setCurrentIndex(name)
    panel.view.edit(name)
    assert not editors(panel)
    before = doc.project
    assert not panel.model.setData(name, "renamed", Qt.EditRole)  # nor from code
    assert doc.project is before and not doc.history.done

    box = open_editor(panel, 1, column_of(panel, "joint.type"))
    box.setCurrentText("pin")
    press(qtbot, panel, box, Qt.Key_Return)
    assert doc.project.masses[1].joint.type == "pin" and len(doc.history.done) == 1
    type_into(qtbot, panel, 1, "joint.default_q", "0.25")
    assert doc.project.masses[1].joint.default_q == (0.25,) and len(doc.history.done) == 2
    doc.undo()
    doc.undo()
    assert doc.project.masses[1].joint is None and cell(panel, 1, "joint.type") == "none"


# ------------------------------------------------------------------ ProjectForm
def test_project_form_commits_on_enter_refuses_bad_text_and_follows_the_document(qtbot, doc):
    form = shown(qtbot, ProjectForm(doc))
    title = form.edits["title"]
    assert title.text() == "Two boxes" and form.edits["created"].isReadOnly()

    title.setFocus()
    title.selectAll()
    qtbot.keyClicks(title, "Elbow, left")
    qtbot.keyClick(title, Qt.Key_Return)
    assert doc.project.info.title == "Elbow, left" and len(doc.history.done) == 1

    gravity = form.edits["gravity_G"]
    before = doc.project
    gravity.setFocus()
    gravity.selectAll()
    qtbot.keyClicks(gravity, "0, -9.81")
    qtbot.keyClick(gravity, Qt.Key_Return)
    assert doc.project is before and len(doc.history.done) == 1
    assert form.message.text().startswith("Project › gravity_G: ")
    assert PROBLEM_BG.name() in gravity.styleSheet()

    title.setFocus()  # the gravity field no longer has the focus: the document's value is shown again
    doc.undo()
    assert doc.project.info.title == "Two boxes"
    doc.set_cell("info", 0, "gravity_G", "0, -9.81, 0")
    assert gravity.text() == "0, -9.81, 0" and form.message.text() == ""


# ------------------------------------------------------------------ CoordinatesPanel
def test_coordinates_panel_value_typed_in_degrees_is_one_undo_step(qtbot, jointed_doc):
    doc = jointed_doc
    panel = shown(qtbot, CoordinatesPanel(doc))
    assert [panel.model.index(r, 0).data() for r in range(panel.model.rowCount())] == ["flex", "shift"]

    idx = panel.model.index(panel.row_of("flex"), VALUE)
    panel.view.setCurrentIndex(idx)
    panel.view.edit(idx)
    [editor] = editors(panel)
    editor.selectAll()
    qtbot.keyClicks(editor, "25")
    press(qtbot, panel, editor, Qt.Key_Return)
    assert doc.project.masses[1].joint.default_q[0] == pytest.approx(math.radians(25.0))
    assert len(doc.history.done) == 1 and idx.data() == "25"

    before = doc.project
    assert not panel.model.setData(panel.model.index(panel.row_of("shift"), VALUE), "far", Qt.EditRole)
    assert doc.project is before and len(doc.history.done) == 1
    assert panel.message.text().startswith("Coordinates › shift › Value: ")

    doc.undo()
    assert doc.project.masses[1].joint.default_q == (0.0, 0.0) and idx.data() == "0"


def test_coordinates_panel_lock_all_and_following_the_document(qtbot, jointed_doc):
    doc = jointed_doc
    panel = shown(qtbot, CoordinatesPanel(doc))
    assert panel.lock_all.isEnabled() and not panel.free_all.isEnabled()

    qtbot.mouseClick(panel.lock_all, Qt.LeftButton)
    assert doc.project.masses[1].joint.locked == (True, True) and len(doc.history.done) == 1
    assert all(panel.model.index(r, LOCKED).data(Qt.CheckStateRole) == Qt.Checked for r in range(2))
    assert not panel.lock_all.isEnabled() and panel.free_all.isEnabled()
    doc.undo()
    assert panel.model.index(0, LOCKED).data(Qt.CheckStateRole) == Qt.Unchecked and panel.lock_all.isEnabled()

    doc.coordinates.set_text("shift", "12.5")  # millimetres, made on the document
    assert panel.model.index(panel.row_of("shift"), VALUE).data() == "12.5"
    doc.replace_project(two_box_project())  # no joints: the hint instead of the table
    assert panel.model.rowCount() == 0 and panel.hint.isVisibleTo(panel) and panel.hint.text() == EMPTY_HINT
    assert not panel.view.isVisibleTo(panel) and not panel.lock_all.isEnabled()
    doc.undo()
    assert panel.model.rowCount() == 2 and panel.view.isVisibleTo(panel) and not panel.hint.isVisibleTo(panel)


def test_panels_hold_their_tables_parts_instead_of_asking_shiboken_for_them(qtbot, doc, jointed_doc, monkeypatch):
    """The tables' header and selection model are the Python objects the panels made: a panel never
    asks its view for them, where shiboken can hand back a stale wrapper of another type found at the
    C++ address (seen once: a QOffscreenSurface in place of the header). Asking raises here, so a panel
    that asks fails to build or to select."""
    from PySide6.QtWidgets import QTableView

    def stale(self):
        raise AttributeError("'QOffscreenSurface' object has no attribute 'setSectionResizeMode'")

    monkeypatch.setattr(QTableView, "horizontalHeader", stale)
    monkeypatch.setattr(QTableView, "selectionModel", stale)
    panel = shown(qtbot, SectionPanel(doc, "masses"))
    rows = []
    panel.rowSelected.connect(lambda section, row: rows.append((section, row)))
    panel.view.setCurrentIndex(panel.model.index(1, 0))  # the user moves to a row: announced
    assert rows == [("masses", 1)]
    panel.select_row(0)  # selection synced from the viewport: not announced again
    assert rows == [("masses", 1)] and panel.view.currentIndex().row() == 0
    assert panel.view.header_view.sectionsClickable() and panel.view.header_view.highlightSections()
    coordinates = shown(qtbot, CoordinatesPanel(jointed_doc))
    assert coordinates.model.rowCount() == 2
