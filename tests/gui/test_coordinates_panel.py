"""The Coordinates panel driven through its real widgets: a value typed in degrees or millimetres
sets the joint's default_q and moves the bone (in the project and in the 3D view), a Locked check box
and Lock all / Free all are single undo steps that redo, bad text is refused with a message and
changes nothing, projects without joints show the empty-state hint, and the panel follows the
project when it is opened, imported into or undone. One screenshot on a project with joints."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit, QStyle, QStyleOptionViewItem

from jointmodeller.app.columns import CellError
from jointmodeller.app.document import Document
from jointmodeller.gui.coordinates import EMPTY_HINT, LOCKED, VALUE
from jointmodeller.model.errors import ValidationError
from jointmodeller.model.specs import Frame, JointSpec, Mass, Project, ProjectInfo
from tests.model.factories import box_mesh

pytestmark = pytest.mark.gui

INERTIA = ((3e-4, 0, 0), (0, 3e-4, 0), (0, 0, 1e-4))


@pytest.fixture
def jointed_project() -> Project:
    """Two 40×40×100 mm boxes: the upper one on a cylinder joint (flex: a rotation about z, shift: a
    translation along it) 5.5 cm above the fixed lower one."""
    lower = Mass(name="lower", mesh=box_mesh((0.04, 0.04, 0.1), "lower.stl"), mass_kg=0.3, fixed=True,
                 properties_from_mesh=False, inertia_L=INERTIA)
    joint = JointSpec(type="cylinder", parent="lower", frame_parent=Frame(origin_L=(0.0, 0.0, 0.055)),
                      frame_child=Frame(origin_L=(0.0, 0.0, -0.055)), coordinates=("flex", "shift"),
                      default_q=(0.0, 0.0))
    upper = Mass(name="upper", mesh=box_mesh((0.04, 0.04, 0.1), "upper.stl"), mass_kg=0.3,
                 properties_from_mesh=False, position_G=(0.0, 0.0, 0.11), inertia_L=INERTIA, joint=joint,
                 colour="#c8b89a")
    return Project(info=ProjectInfo(title="Cylinder joint"), masses=(lower, upper))


def show_panel(w):
    w.tabs.setCurrentWidget(w.coordinates_panel)
    return w.coordinates_panel


def type_value(qtbot, panel, name: str, text: str) -> None:
    """Edit a coordinate's value as a user does: open the editor, type, press Enter."""
    idx = panel.model.index(panel.row_of(name), VALUE)
    panel.view.setCurrentIndex(idx)
    panel.view.edit(idx)
    vp = panel.view.viewport()
    editors = [e for e in vp.findChildren(QLineEdit) if e.isVisible()]
    assert len(editors) == 1
    editors[0].selectAll()
    qtbot.keyClicks(editors[0], text)
    qtbot.keyClick(editors[0], Qt.Key_Return)
    qtbot.waitUntil(lambda: not any(e.isVisible() for e in vp.findChildren(QLineEdit)), timeout=3000)


def click_lock(qtbot, panel, name: str) -> None:
    """Click the Locked check box of a coordinate (on its indicator, as a user does)."""
    idx = panel.model.index(panel.row_of(name), LOCKED)
    view = panel.view
    opt = QStyleOptionViewItem()
    view.initViewItemOption(opt)
    opt.rect = view.visualRect(idx)
    view.itemDelegateForIndex(idx).initStyleOption(opt, idx)
    box = view.style().subElementRect(QStyle.SE_ItemViewItemCheckIndicator, opt, view)
    assert box.isValid() and opt.rect.contains(box.center())
    qtbot.mouseClick(view.viewport(), Qt.LeftButton, pos=box.center())


def upper_matrix(w) -> np.ndarray:
    """The 3D view's transform of the upper box, once the scene has caught up with the project."""
    w._rebuild_scene()
    return np.array(w.viewport.scene.mass_actors["upper"].user_matrix)


def test_value_edit_sets_default_q_moves_the_bone_and_undoes(qtbot, window, jointed_project):
    w = window(jointed_project)
    panel = show_panel(w)
    assert [panel.model.index(r, 0).data() for r in range(panel.model.rowCount())] == ["flex", "shift"]
    assert [panel.model.index(r, 3).data() for r in range(2)] == ["°", "mm"]
    assert "°" in panel.model.headerData(VALUE, Qt.Horizontal) and "mm" in panel.model.headerData(VALUE, Qt.Horizontal)
    before = upper_matrix(w)

    type_value(qtbot, panel, "flex", "25")
    upper = w.doc.project.masses[1]
    assert upper.joint.default_q[0] == pytest.approx(math.radians(25.0))
    assert upper.euler_deg[2] == pytest.approx(25.0)  # the initial pose follows the joint
    assert panel.model.index(panel.row_of("flex"), VALUE).data() == "25"
    assert w.isWindowModified() and w.undo_stack.index() == 1
    assert "flex" in w.undo_stack.undoText()
    after = upper_matrix(w)
    c, s = math.cos(math.radians(25.0)), math.sin(math.radians(25.0))
    assert after[:3, :3] == pytest.approx(np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]), abs=1e-9)
    assert not np.allclose(after, before)

    type_value(qtbot, panel, "shift", "12.5")  # millimetres
    upper = w.doc.project.masses[1]
    assert upper.joint.default_q == pytest.approx((math.radians(25.0), 0.0125))
    assert upper.position_G[2] == pytest.approx(0.1225)
    assert w.undo_stack.index() == 2

    w.act_undo.trigger()
    assert w.doc.project.masses[1].joint.default_q == pytest.approx((math.radians(25.0), 0.0))
    assert panel.model.index(panel.row_of("shift"), VALUE).data() == "0"
    w.act_undo.trigger()
    assert w.doc.project.masses == jointed_project.masses
    assert not w.isWindowModified()
    assert upper_matrix(w) == pytest.approx(before)
    assert panel.model.index(panel.row_of("flex"), VALUE).data() == "0"
    w.act_redo.trigger()
    assert w.doc.project.masses[1].joint.default_q[0] == pytest.approx(math.radians(25.0))
    assert panel.model.index(panel.row_of("flex"), VALUE).data() == "25"
    assert upper_matrix(w) == pytest.approx(after)

    type_value(qtbot, panel, "flex", "25")  # the value it has: no new undo step
    assert w.undo_stack.index() == 1


def test_lock_check_box_is_one_undo_step_with_redo(qtbot, window, jointed_project):
    w = window(jointed_project)
    panel = show_panel(w)
    locked = lambda: [r.locked for r in panel.model.rows]  # noqa: E731
    click_lock(qtbot, panel, "flex")
    assert w.doc.project.masses[1].joint.locked == (True, False)
    assert locked() == [True, False]
    assert panel.model.index(0, LOCKED).data(Qt.CheckStateRole) == Qt.Checked
    assert w.undo_stack.index() == 1 and w.undo_stack.undoText() == "Lock flex"
    assert w.isWindowModified()
    assert w.doc.project.masses[1].position_G == jointed_project.masses[1].position_G  # a lock moves nothing
    w.act_undo.trigger()
    assert locked() == [False, False] and not w.isWindowModified()
    w.act_redo.trigger()
    assert locked() == [True, False]
    click_lock(qtbot, panel, "flex")  # and free again
    assert locked() == [False, False] and w.undo_stack.undoText() == "Free flex"


def test_lock_all_and_free_all(qtbot, window, jointed_project):
    w = window(jointed_project)
    panel = show_panel(w)
    assert panel.lock_all.isEnabled() and not panel.free_all.isEnabled()
    qtbot.mouseClick(panel.lock_all, Qt.LeftButton)
    assert w.doc.project.masses[1].joint.locked == (True, True)
    assert w.undo_stack.index() == 1 and w.undo_stack.undoText() == "Lock all coordinates"
    assert not panel.lock_all.isEnabled() and panel.free_all.isEnabled()
    assert all(panel.model.index(r, LOCKED).data(Qt.CheckStateRole) == Qt.Checked for r in range(2))
    qtbot.mouseClick(panel.free_all, Qt.LeftButton)
    assert w.doc.project.masses[1].joint.locked == (False, False)
    assert w.undo_stack.index() == 2
    w.act_undo.trigger()
    assert w.doc.project.masses[1].joint.locked == (True, True)
    w.act_undo.trigger()
    assert w.doc.project == jointed_project


@pytest.mark.parametrize("text, message", [("abc", "not a number"), ("nan", "not a finite number"),
                                           ("inf", "not a finite number")])
def test_bad_input_is_refused_with_a_message(qtbot, window, jointed_project, text, message):
    w = window(jointed_project)
    panel = show_panel(w)
    type_value(qtbot, panel, "flex", text)
    assert message in panel.message.text() and "Coordinates › flex › Value" in panel.message.text()
    assert message in w.statusBar().currentMessage()
    assert w.doc.project is jointed_project or w.doc.project == jointed_project
    assert w.undo_stack.index() == 0 and not w.isWindowModified()
    assert panel.model.index(panel.row_of("flex"), VALUE).data() == "0"
    type_value(qtbot, panel, "flex", "10")  # a good value clears the message
    assert panel.message.text() == ""


def test_document_refuses_unknown_names_and_non_finite_values(jointed_project):
    doc = Document(jointed_project)
    with pytest.raises(CellError, match="no joint coordinate"):
        doc.coordinates.set_text("knee_flex_r", "10")
    with pytest.raises(ValidationError):
        doc.coordinates.change(values={"flex": float("nan")})
    with pytest.raises(ValidationError, match="no coordinate named"):
        doc.coordinates.change(lock=["nope"])
    assert doc.project is jointed_project and not doc.dirty
    assert doc.coordinates.set_text("shift", "-4") and doc.project.masses[1].joint.default_q[1] == pytest.approx(-0.004)
    doc.undo()
    assert doc.project == jointed_project


def test_empty_state_hint_and_refresh_on_open_import_and_undo(qtbot, window, small_project, jointed_project,
                                                              tmp_path):
    w = window(small_project)  # no joints
    panel = show_panel(w)
    assert panel.model.rowCount() == 0
    assert panel.hint.isVisible() and panel.hint.text() == EMPTY_HINT
    assert "masses without a joint are free 6-DOF bodies" in panel.hint.text()
    assert not panel.view.isVisible() and not panel.lock_all.isEnabled() and not panel.free_all.isEnabled()

    # a mass with a joint comes in (as File › Import bone mesh adds one): its coordinate is listed
    hinge = Mass(name="hinged", mesh=box_mesh((0.02, 0.02, 0.05), "hinged.stl"), mass_kg=0.1,
                 properties_from_mesh=False, inertia_L=INERTIA, position_G=(0.0, 0.0, -0.1),
                 joint=JointSpec(type="pin", parent="lower", frame_parent=Frame(origin_L=(0.0, 0.0, -0.1)),
                                 coordinates=("hinge_angle",), default_q=(0.0,)))
    w.edits.add_mass(hinge)
    show_panel(w)
    assert [r.name for r in panel.model.rows] == ["hinge_angle"]
    assert panel.view.isVisible() and not panel.hint.isVisible()
    w.act_undo.trigger()  # undo the import: back to the hint
    assert panel.model.rowCount() == 0 and panel.hint.isVisible()

    path = tmp_path / "jointed.jmdb"
    Document(jointed_project).save(path)
    assert w.open_project(path)
    show_panel(w)
    assert [r.name for r in panel.model.rows] == ["flex", "shift"]
    assert panel.view.isVisible() and not panel.hint.isVisible()
    type_value(qtbot, panel, "flex", "15")  # the panel edits the newly opened document
    assert w.doc.project.masses[1].joint.default_q[0] == pytest.approx(math.radians(15.0))


def _screenshot_project(shared: Path) -> Project | None:
    """arm26 with its meshes when ../shared holds it, else the two-box cylinder joint."""
    model = shared / "models" / "arm26" / "arm26.osim"
    if model.is_file():
        from jointmodeller.app.osim_import import import_osim

        return import_osim(model, [shared / "meshes"])[0]
    return None


def test_screenshot_of_the_panel(qtbot, window, jointed_project, artifacts_dir):
    """docs/screenshots/coordinates_panel.png is this picture (written there when
    JOINTMODELLER_DOC_SHOTS names the folder; always to test-artifacts/)."""
    from tests.conftest import SHARED

    project = _screenshot_project(SHARED) or jointed_project
    w = window(project)
    w.resize(1400, 860)
    panel = show_panel(w)
    names = [r.name for r in panel.model.rows]
    assert names
    if "r_elbow_flex" in names:
        type_value(qtbot, panel, "r_elbow_flex", "60")
        click_lock(qtbot, panel, "r_shoulder_elev")
    else:
        type_value(qtbot, panel, "flex", "30")
        click_lock(qtbot, panel, "shift")
    w._rebuild_scene()
    if "r_elbow_flex" in names:  # OpenSim's frame (y up): look at the arm from its right side
        w.viewport.plotter.view_vector((0.0, 0.0, 1.0), viewup=(0.0, 1.0, 0.0))
        w.viewport.plotter.reset_camera()
    else:
        w.viewport.camera_preset("oblique")
    qtbot.wait(300)
    header = panel.view.horizontalHeader()
    for c in range(panel.model.columnCount()):  # every header fits its column
        text = panel.model.headerData(c, Qt.Horizontal)
        assert header.sectionSize(c) >= header.fontMetrics().horizontalAdvance(text)
    targets = [artifacts_dir / "coordinates_panel.png"]
    if os.environ.get("JOINTMODELLER_DOC_SHOTS"):
        targets.append(Path(os.environ["JOINTMODELLER_DOC_SHOTS"]) / "coordinates_panel.png")
    for t in targets:
        assert w.grab_window(t)
        assert t.stat().st_size > 10_000


def test_a_broken_joint_is_named_instead_of_the_rows(qtbot, window, jointed_project):
    w = window(jointed_project)
    panel = show_panel(w)
    w.doc.set_cell("masses", 1, "joint.default_q", "1, 2, 3")  # as typed in the Mobilizers panel
    assert panel.model.rowCount() == 0 and panel.hint.isVisible()
    assert "cannot be listed" in panel.hint.text() and "one value per coordinate" in panel.hint.text()
    assert not panel.lock_all.isEnabled()
    w.act_undo.trigger()
    assert [r.name for r in panel.model.rows] == ["flex", "shift"] and not panel.hint.isVisible()


def test_an_edit_shows_the_new_pose_while_a_run_sample_is_shown(qtbot, window, jointed_project):
    from jointmodeller.render.scene import SceneFrame

    w = window(jointed_project)
    panel = show_panel(w)
    w.viewport.show_frame(SceneFrame(poses={"upper": (np.eye(3), np.array([0.0, 0.3, 0.0]))}), now=True)
    assert np.array(w.viewport.scene.mass_actors["upper"].user_matrix)[1, 3] == pytest.approx(0.3)
    type_value(qtbot, panel, "shift", "20")
    M = upper_matrix(w)
    assert M[:3, 3] == pytest.approx((0.0, 0.0, 0.13))  # the box centre: 110 mm + the 20 mm shift
    assert not w.viewport.scene.frame.poses
