"""Issue 18, items 1–4, driven through the real main window: every path that replaces the project asks
to save unsaved work; File › New gives an empty project; an open (segmented) real mesh imports with
the mass properties of a real body, stated in the dialog; saving always works (problems are stored
and stay marked) while only studies are refused."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

import jointmodeller.gui.project_files as project_files
from jointmodeller.app.columns import COLUMNS, new_project
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
    monkeypatch.setattr(project_files, "demo_project", lambda: Project(info=ProjectInfo(title="Demo")))
    w = window(small_project)
    w.files.add_recent(str(other.resolve()))
    _dirty(w)
    w.confirm = True
    answers = Answers(QMessageBox.Cancel, QMessageBox.Discard)
    monkeypatch.setattr(project_files.QMessageBox, "question", answers)

    def act():
        if replace == "new":
            w.act_new.trigger()
        elif replace == "demo":
            w.act_demo.trigger()
        else:
            w.files.recent_menu.actions()[0].trigger()

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
    i = w.edits.import_mesh(f, units="m")
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
    i = w.edits.import_mesh(f, units="m")
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


# ------------------------------------------------------------------------------------------------
# Build list: Ctrl+Y, Help menu and tooltips, Esc and a marker while picking, a stopped run keeps
# what was streamed, plot and run export
# ------------------------------------------------------------------------------------------------
def test_ctrl_y_redoes(qtbot, window, small_project):
    from PySide6.QtGui import QKeySequence

    w = window(small_project)
    assert QKeySequence("Ctrl+Y") in w.act_redo.shortcuts()
    assert QKeySequence(QKeySequence.Redo) in w.act_redo.shortcuts()  # Ctrl+Shift+Z stays
    w.doc.set_cell("forces", 0, "magnitude_N", "12")
    w.act_undo.trigger()
    assert w.doc.project.forces[0].magnitude_N == 5.0
    w.activateWindow()
    qtbot.waitUntil(lambda: w.isActiveWindow(), timeout=3000)
    qtbot.keyClick(w, Qt.Key_Y, Qt.ControlModifier)
    assert w.doc.project.forces[0].magnitude_N == 12.0


def test_help_menu_shortcuts_and_a_tooltip_on_every_action(qtbot, window, small_project):
    w = window(small_project)
    menus = {m.text().replace("&", ""): m.menu() for m in w.menuBar().actions() if m.menu()}
    assert "Help" in menus
    w.act_help.trigger()
    assert w.help.dialog.isVisible() and "Import bone mesh" in w.help.dialog.findChildren(
        __import__("PySide6.QtWidgets", fromlist=["QTextBrowser"]).QTextBrowser)[0].toPlainText()
    w.act_shortcuts.trigger()
    keys = dict(w.help.shortcut_rows())
    assert "Ctrl+Y" in keys["Redo"] and keys["New"] == "Ctrl+N" and keys["Cancel picking"] == "Esc"
    missing = [a.text() for m in menus.values() for a in m.actions()
               if not a.isSeparator() and a.menu() is None and not a.statusTip()]
    assert missing == []
    tb = [a for a in w.findChildren(__import__("PySide6.QtWidgets", fromlist=["QToolBar"]).QToolBar)[0].actions()
          if not a.isSeparator()]
    assert all(a.toolTip() and a.toolTip() != a.text().replace("&", "") for a in tb)


def test_escape_cancels_picking_and_the_first_pick_is_marked(qtbot, window, small_project):
    from tests.gui.test_main_window import visible_pick

    w = window(small_project)
    w.viewport.camera_preset("anterior")
    rng = np.random.default_rng(5)
    assert not w.act_cancel_pick.isEnabled()  # Esc belongs to the table editors while not picking
    w.act_place.trigger()
    assert w.act_cancel_pick.isEnabled()
    xa, ya = visible_pick(w, "lower", rng)
    w.viewport.picking.click(xa, ya)
    marker = w.viewport.scene.marker_actor
    assert marker is not None and marker.GetVisibility()
    first = np.asarray(w.viewport.picking._first_pick.point_G)
    assert np.linalg.norm(np.asarray(marker.GetCenter()) - first) < 1e-9
    w.activateWindow()
    qtbot.waitUntil(lambda: w.isActiveWindow(), timeout=3000)
    qtbot.keyClick(w, Qt.Key_Escape)
    assert w.viewport.scene.marker_actor is None and w.viewport.picking._first_pick is None
    assert not w.act_place.isChecked() and w.viewport.picking.mode == "select"
    assert "cancelled" in w.statusBar().currentMessage()
    n = len(w.doc.project.attachments)
    w.act_place.trigger()  # a fresh placement needs two new picks
    w.viewport.picking.click(*visible_pick(w, "upper", rng))
    assert len(w.doc.project.attachments) == n
    w.viewport.picking.click(*visible_pick(w, "lower", rng))
    assert len(w.doc.project.attachments) == n + 1 and w.viewport.scene.marker_actor is None


def test_a_stopped_dynamics_run_keeps_every_streamed_state(small_project):
    """The user stops a run within its first report interval: the stored run holds every state the
    live view showed (before: the initial state and the last one only)."""
    import threading

    from jointmodeller.app.live import live_dynamics, split_batch

    cancel = threading.Event()
    shown: list[float] = []

    def progress(fraction, batch=None):
        if batch is not None:
            shown.extend(s["time"] for s in split_batch(batch))
            if len(shown) >= 40:
                cancel.set()

    project = small_project
    run = live_dynamics(project, t_end=5.0, report_dt=5.0, progress=progress, cancel=cancel,
                        rate_hz=20_000.0)  # many streamed states per step, one report interval
    assert run.status == "stopped" and len(shown) >= 40
    t = run.series["time"]
    assert set(shown) <= set(t.tolist())  # everything shown is stored
    assert np.all(np.diff(t) > 0) and t[0] == 0.0
    for key, a in run.series.items():
        assert a.shape[0] == len(t), key
    assert run.summary["streamed_states_kept"] >= 40 - 2 and "streamed states kept" in run.message


def _synthetic_run():
    from jointmodeller.model.results import RunRecord
    from tests.model.run_factories import turning_poses

    t = np.linspace(0.0, 1.0, 11)
    return RunRecord("dynamics", {"t_end": 1.0}, series={
        "time": t, "tissue_force_N": np.stack([10 * t, 20 * t], axis=1),
        "tissue_length_m": np.stack([0.03 + 0 * t, 0.04 + 0.001 * t], axis=1)},
        labels={"tissue_force_N": ["MCL", "LCL"], "tissue_length_m": ["MCL", "LCL"]},
        poses=turning_poses(t, ("lower", "upper")))


def test_plot_and_run_export_from_the_gui(qtbot, window, small_project, tmp_path):
    import csv

    w = window(small_project)
    assert w.exports.plot_dialog(str(tmp_path / "none.png")) is None  # no run shown: says so
    assert "No run" in w.statusBar().currentMessage()
    run = _synthetic_run()
    w.study_control.show_run(run)
    png = w.exports.plot_dialog(str(tmp_path / "plot.png"))
    svg = w.exports.plot_dialog(str(tmp_path / "plot.svg"))
    data = w.exports.plot_dialog(str(tmp_path / "plot.csv"))
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in open(svg, encoding="utf-8").read(2000)
    rows = list(csv.reader(open(data, encoding="utf-8")))
    assert rows[0] == ["time [s]", "tissue force [N] MCL", "tissue force [N] LCL", "tissue length [mm] MCL",
                       "tissue length [mm] LCL"]
    assert len(rows) == 12 and float(rows[-1][2]) == 20.0 and float(rows[-1][4]) == pytest.approx(41.0)
    out = w.exports.run_dialog(str(tmp_path / "run.csv"))
    rows = list(csv.reader(open(out, encoding="utf-8")))
    assert rows[0][0] == "time" and "p_G[upper].z" in rows[0] and "q_GB[upper].w" in rows[0]
    assert "tissue_force_N[LCL]" in rows[0]
    back = np.array(rows[1:], float)
    assert back.shape == (11, 1 + 2 * (3 + 4) + 2 + 2)
    assert np.array_equal(back[:, rows[0].index("q_GB[upper].y")], run.poses.q_GB[:, 1, 2])
    assert np.array_equal(back[:, 0], run.series["time"])  # exact round trip
    assert np.array_equal(back[:, rows[0].index("tissue_force_N[LCL]")], run.series["tissue_force_N"][:, 1])


def test_experiment_axes_are_table_columns(small_project):
    """A laxity experiment on a bone without a joint needs the fixed bone's flexion and long axes:
    they are cells of the Experiments table (empty removes one), each edit one undo step."""
    from jointmodeller.app.columns import CellError
    from jointmodeller.app.document import Document

    doc = Document(small_project)
    doc.add_row("experiments")
    doc.set_cell("experiments", 0, "axes:long_axis_fixed", "0, 0, 1")
    doc.set_cell("experiments", 0, "axes:flexion_axis_fixed", "1 0 0")
    doc.set_cell("experiments", 0, "axes:origin_fixed", "0, 0, 55")  # millimetres shown, metres stored
    e = doc.project.experiments[0]
    assert e.axes == (("flexion_axis_fixed", (1.0, 0.0, 0.0)), ("long_axis_fixed", (0.0, 0.0, 1.0)),
                      ("origin_fixed", (0.0, 0.0, 0.055)))
    with pytest.raises(CellError, match="three numbers"):
        doc.set_cell("experiments", 0, "axes:long_axis_fixed", "1, 2")
    doc.set_cell("experiments", 0, "axes:origin_fixed", "")
    assert dict(doc.project.experiments[0].axes).get("origin_fixed") is None
    doc.undo()
    assert dict(doc.project.experiments[0].axes)["origin_fixed"] == (0.0, 0.0, 0.055)
    assert doc.problems() == []


def test_plots_read_well_equilibrium_bars_laxity_units_and_a_chooser(qtbot, tmp_path):
    """Issue 18 item 6: an equilibrium is one bar per tissue, not a one-point time series; the laxity
    axes name their quantity and unit and the tissue tensions follow the load; one panel can be shown
    at the full height (and exported alone)."""
    import csv

    from jointmodeller.gui.plots import PlotPanel
    from jointmodeller.model.results import RunRecord

    panel = PlotPanel()
    qtbot.addWidget(panel)
    panel.show_run(RunRecord("equilibrium", series={"time": np.zeros(1), "tissue_force_N": np.array([[3.0, 7.0]]),
                                                    "tissue_length_m": np.array([[0.03, 0.04]])},
                             labels={"tissue_force_N": ["MCL", "LCL"], "tissue_length_m": ["MCL", "LCL"]}))
    ax = panel.figure.axes[0]
    assert [p.get_width() for p in ax.patches] == [3.0, 7.0] and not ax.lines
    assert [t.get_text() for t in ax.get_yticklabels()] == ["MCL", "LCL"]

    load = np.linspace(-10, 10, 5)
    laxity = RunRecord("laxity", parameters={"load_kind": "varus_valgus", "measure": "varus_valgus_deg"},
                       series={"load": load, "measure": load / 5, "tissue_tension_N": np.stack([load.clip(0),
                                                                                                (-load).clip(0)], 1)},
                       labels={"tissue_tension_N": ["MCL", "LCL"]}, summary={"stiffness_unit": "N/deg"})
    panel.show_run(laxity)
    assert panel.plotted == ["laxity", "tissue_tension_N"]
    curve, tension = panel.figure.axes
    assert curve.get_xlabel() == "applied varus–valgus load [N]" and curve.get_ylabel() == "varus valgus [°]"
    assert tension.get_ylabel() == "tissue tension [N]" and len(tension.lines) == 2
    assert panel._choice_row.isVisibleTo(panel)
    panel.choice.setCurrentText("tissue tension [N]")
    assert panel.plotted == ["tissue_tension_N"] and len(panel.figure.axes) == 1
    out = panel.export(str(tmp_path / "tension.csv"))
    assert next(csv.reader(open(out, encoding="utf-8"))) == ["load", "tissue tension [N] MCL", "tissue tension [N] LCL"]
    panel.show_run(RunRecord("laxity", series={"load": load, "measure": load}))  # no tension: back to all
    assert panel.choice.currentText() == "All" and panel.plotted == ["laxity"]


def test_measure_a_distance_and_read_a_tissue_length_and_strain(qtbot, window, small_project):
    """Issue 18 item 10, part: Tools › Measure distance (two picks, drawn, in mm) and a tissue's
    length, unloaded length and strain in the status bar when its row is selected."""
    from tests.gui.test_main_window import visible_pick

    w = window(small_project)
    w.viewport.camera_preset("anterior")
    rng = np.random.default_rng(9)
    w.act_measure.trigger()
    assert w.viewport.picking.mode == "measure" and w.act_cancel_pick.isEnabled()
    w.viewport.picking.click(*visible_pick(w, "lower", rng))
    a = np.asarray(w.viewport.picking._first_pick.point_G)
    with qtbot.waitSignal(w.viewport.picking.measured) as got:
        w.viewport.picking.click(*visible_pick(w, "upper", rng))
    d, mass_a, mass_b = got.args
    assert (mass_a, mass_b) == ("lower", "upper") and w.viewport.scene.segment_actor is not None
    assert 0.0 < d < 0.3 and f"{d * 1000:.2f} mm" in w.statusBar().currentMessage()
    assert np.linalg.norm(np.asarray(w.viewport.scene.segment_actor.GetCenter()) - a) < 0.3
    w.act_place.trigger()  # another tool: measuring ends, its drawing goes
    assert not w.act_measure.isChecked() and w.viewport.picking.mode == "place"
    assert w.viewport.scene.segment_actor is None
    w.tools.cancel()
    assert w.viewport.picking.mode == "select" and not w.act_cancel_pick.isEnabled()

    w.panels["attachments"].select_row(0)
    w.edits.select("attachments", 0)
    msg = w.statusBar().currentMessage()
    assert msg.startswith("MCL (lower → upper): length ") and "strain" not in msg  # unloaded length not set
    w.doc.set_cell("attachments", 0, "initial_length_m", "40")
    w.edits.select("attachments", 0)
    from jointmodeller.app.picking import path_length

    length = path_length(w.doc.project, w.doc.project.attachments[0])
    assert f"strain {100 * (length / 0.04 - 1):+.2f} %" in w.statusBar().currentMessage()


def test_a_tissue_placed_in_a_project_without_spring_types_gets_one(qtbot, window, small_project):
    """Issue 18 item 9, part: the placed tissue used to get spring '' (a problem at once)."""
    import dataclasses

    from jointmodeller.app.picking import make_attachment, snap_to_mass

    p = dataclasses.replace(small_project, springs=(), attachments=())
    w = window(p)
    a = snap_to_mass(p, "lower", (0.02, 0.0, 0.0))
    b = snap_to_mass(p, "upper", (0.02, 0.0, 0.11))
    att = make_attachment(p, a, b)
    assert att.spring == ""
    w.viewport.picking.attachmentPlaced.emit(att)
    q = w.doc.project
    assert [s.name for s in q.springs] == ["ligament"] and q.attachments[0].spring == "ligament"
    assert w.doc.problems() == []
    w.act_undo.trigger()  # one step takes both back
    assert w.doc.project.springs == () and w.doc.project.attachments == ()


def test_every_table_header_has_a_tooltip_with_meaning_and_unit(qtbot, window, small_project):
    """Issue 18 item 5, part: headers are cut ("Mass B", "µ static"): each says what it is on hover."""
    w = window(small_project)
    for key, panel in w.panels.items():
        m = panel.model
        for c in range(m.columnCount()):
            label = m.headerData(c, Qt.Horizontal, Qt.DisplayRole)
            tip = m.headerData(c, Qt.Horizontal, Qt.ToolTipRole)
            assert tip and tip != label, (key, label)
    m = w.panels["contacts"].model
    tips = {m.headerData(c, Qt.Horizontal): m.headerData(c, Qt.Horizontal, Qt.ToolTipRole)
            for c in range(m.columnCount())}
    assert "friction" in tips["µ static"] and "[mm]" in tips["Cartilage [mm]"]


def test_run_panel_shows_the_running_study_and_a_paused_state(qtbot, window, small_project):
    """Issue 18 item 7, part: the run box named an older run while a study ran, the time label kept the
    last run's time, and Pause never showed a paused state."""
    import time as _time

    from jointmodeller.model.results import RunRecord

    w = window(small_project)
    rp = w.run_panel
    rp.time_label.setText("t = 0.5 s")  # what the last run left

    def fn(progress, cancel):
        k = 0
        while not cancel.is_set():
            progress(min(k / 1000.0, 0.99))
            k += 1
            _time.sleep(0.005)
        return RunRecord("dynamics", status="stopped", message="stopped by the user",
                         series={"time": np.zeros(1)})

    assert w.start_study("dynamics", fn=fn)
    assert rp.runs.currentText() == "▶ dynamics (running…)" and rp.time_label.text() == "t = –"
    rp.pause.click()
    assert rp.pause.isChecked() and rp.pause.text() == "Resume"
    assert rp.status.text().startswith("Paused") and "paused" in rp.progress.format()
    qtbot.waitUntil(lambda: w.runner.paused, timeout=2000)
    rp.pause.click()
    assert rp.pause.text() == "Pause" and not rp.status.text().startswith("Paused")
    with qtbot.waitSignal(w.runFinished, timeout=20_000):
        rp.stop.click()
    qtbot.waitUntil(lambda: not w.study_running, timeout=5000)
    assert "running" not in rp.runs.currentText() and "dynamics (stopped)" in rp.runs.currentText()
    assert rp.pause.text() == "Pause" and rp.progress.format() == "%p%"


def test_progress_says_elapsed_time_left_and_simulated_rate(qtbot, window, small_project):
    """Issue 18 item 7, part: dynamics showed 0 % for 35 s with no rate or estimate."""
    import time as _time

    from jointmodeller.gui.study_control import duration_text
    from jointmodeller.model.results import RunRecord

    assert (duration_text(12.4), duration_text(185), duration_text(3720)) == ("12 s", "3 min 05 s", "1 h 02 min")
    w = window(small_project)
    rp = w.run_panel
    rp.t_end.setValue(2.0)

    def fn(progress, cancel):
        progress(0.0)
        _time.sleep(1.2)  # nothing reported yet: the elapsed time still moves
        progress(0.25)
        while not cancel.is_set():
            _time.sleep(0.01)
        return RunRecord("dynamics", status="stopped", series={"time": np.zeros(1)})

    assert w.start_study("dynamics", fn=fn)
    qtbot.waitUntil(lambda: "elapsed" in rp.progress.format(), timeout=5000)
    qtbot.waitUntil(lambda: "left" in rp.progress.format(), timeout=10_000)
    text = rp.progress.format()
    assert text.startswith("%p% · ") and "simulated s per s" in text, text
    rate = float(text.split(" · ")[-1].split()[0])
    assert 0.0 < rate <= 0.5 / 1.2 + 1e-3  # 0.25 × 2 s simulated in at least 1.2 s of wall time
    with qtbot.waitSignal(w.runFinished, timeout=20_000):
        rp.stop.click()
    qtbot.waitUntil(lambda: rp.progress.format() == "%p%", timeout=5000)


def test_tables_and_run_panel_are_docks_that_take_the_width_they_are_given(qtbot, window, small_project,
                                                                          tmp_path):
    """Issue 18 item 5, part: the tables were ~317 px wide and could not be widened; now they sit in a
    dock widget that can take more than half the window, be floated or hidden, and the arrangement is
    remembered between sessions."""
    from PySide6.QtCore import QSettings

    from jointmodeller.app.document import Document
    from jointmodeller.gui.main_window import MainWindow

    w = window(small_project)
    w.resize(1400, 860)
    QApplication.processEvents()
    assert w.centralWidget() is w.viewport
    assert w.model_dock.widget() is w.tabs and w.run_dock.widget() is w.bottom_tabs
    assert w.tabs.width() >= 500  # the default: the tables get ~40 % of the window
    w.resizeDocks([w.model_dock], [800], Qt.Horizontal)
    QApplication.processEvents()
    assert w.tabs.width() >= 700  # more than half of 1400 px when the user wants it
    view = {a.text(): a for a in w.menuBar().actions()[2].menu().actions()}
    view["Model"].trigger()
    assert not w.model_dock.isVisible()
    w.reset_layout()
    assert w.model_dock.isVisible() and not w.model_dock.isFloating()
    w.resizeDocks([w.model_dock], [780], Qt.Horizontal)
    QApplication.processEvents()
    width = w.tabs.width()
    w.close()
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)
    w2 = MainWindow(Document(small_project), settings=settings, confirm=False)
    qtbot.addWidget(w2)
    w2.resize(1400, 860)
    w2.show()
    qtbot.waitExposed(w2)
    assert abs(w2.tabs.width() - width) <= 40  # the arrangement came back
    w2.close()


def test_the_run_panel_leaves_the_tables_their_width_at_1200_px(qtbot, window, small_project):
    """Issue 18 item 5, part: the run panel's widest row sets the run dock's minimum width, and so how far the
    tables' dock is squeezed. With the contact choice on the dynamics options row the panel needed 898 px, and
    a 1200 px window gave the tables 296 px (the 3D view the rest); on the limits row it needs ~674 px."""
    w = window(small_project)  # shown at 1200x800
    QApplication.processEvents()
    assert w.run_panel.contact_geometry.isVisibleTo(w.run_panel)
    assert w.run_dock.minimumSizeHint().width() <= 700
    assert w.tabs.width() >= 450


def test_place_a_load_with_one_click(qtbot, window, small_project):
    """Issue 18 item 9, part: a force's point could only be typed."""
    from jointmodeller.app.picking import closest_on_surface
    from tests.gui.test_main_window import visible_pick

    w = window(small_project)
    w.viewport.camera_preset("anterior")
    n = len(w.doc.project.forces)
    w.act_place_force.trigger()
    assert w.viewport.picking.mode == "force" and w.act_cancel_pick.isEnabled()
    w.viewport.picking.click(*visible_pick(w, "upper", np.random.default_rng(4)))
    f = w.doc.project.forces[-1]
    assert len(w.doc.project.forces) == n + 1 and f.body == "upper" and f.name == "load 2"
    _, d, _ = closest_on_surface(w.doc.project.mass("upper").mesh, np.asarray(f.point_L)[None])
    assert d[0] < 1e-9 and w.doc.problems() == []
    assert w.tabs.currentWidget() is w.panels["forces"] and "Added load 2 on upper" in w.statusBar().currentMessage()
    w.act_undo.trigger()
    assert len(w.doc.project.forces) == n


def test_the_bone_under_the_mouse_is_highlighted_while_picking(qtbot, window, small_project):
    """Issue 18 item 9, part: hover highlight as in OpenSim Creator's landmark placement."""
    from jointmodeller.render.scene import HOVER, hex_rgb
    from tests.gui.test_main_window import visible_pick

    w = window(small_project)
    w.viewport.camera_preset("anterior")
    x, y = visible_pick(w, "upper", np.random.default_rng(2))
    w.act_place.trigger()
    assert w.viewport.picking.hover_at(x, y) == "upper" and w.viewport.scene.hovered == "upper"
    colour = np.asarray(w.viewport.scene.mass_actors["upper"].prop.color.float_rgb)
    assert np.allclose(colour, hex_rgb(HOVER), atol=1e-6)
    assert w.viewport.picking.hover_at(1, 1) is None  # the background corner
    assert w.viewport.scene.hovered is None
    w.viewport.picking.hover_at(x, y)
    w.tools.cancel()  # leaving the tool clears it
    assert w.viewport.scene.hovered is None
    assert not np.allclose(np.asarray(w.viewport.scene.mass_actors["upper"].prop.color.float_rgb), hex_rgb(HOVER))


def test_measured_points_are_drawn_over_the_laxity_curve(qtbot, window, small_project):
    """Issue 18 item 6, part: measured points over the laxity curve (from the run's experiment)."""
    import dataclasses

    from jointmodeller.model.results import RunRecord
    from jointmodeller.model.specs import Experiment, MeasuredPoint

    exp = Experiment("vv", fixed_body="lower", moving_body="upper",
                     measured=(MeasuredPoint(-5.0, -1.1), MeasuredPoint(5.0, 0.9)))
    w = window(dataclasses.replace(small_project, experiments=(exp,)))
    load = np.linspace(-10, 10, 5)
    run = RunRecord("laxity", parameters={"experiment": "vv", "measure": "varus_valgus_deg",
                                          "load_kind": "varus_valgus"},
                    series={"load": load, "measure": load / 5}, summary={"stiffness_unit": "N/deg"})
    w.study_control.show_run(run)
    qtbot.waitUntil(lambda: w.plots.figure is not None, timeout=10_000)
    ax = w.plots.figure.axes[0]
    labels = [ln.get_label() for ln in ax.lines]
    assert labels == ["model", "measured"]
    assert list(ax.lines[1].get_xdata()) == [-5.0, 5.0] and list(ax.lines[1].get_ydata()) == [-1.1, 0.9]
    assert "measured_load" not in run.series  # the stored run is not changed


def test_measure_an_angle_with_three_picks(qtbot, window, small_project):
    """Issue 18 item 10, part: the angle between picked points (at the second)."""
    from tests.gui.test_main_window import visible_pick

    w = window(small_project)
    w.viewport.camera_preset("anterior")
    rng = np.random.default_rng(12)
    w.act_angle.trigger()
    assert w.viewport.picking.mode == "angle" and w.act_cancel_pick.isEnabled()
    for mass in ("upper", "lower"):
        w.viewport.picking.click(*visible_pick(w, mass, rng))
    with qtbot.waitSignal(w.viewport.picking.angleMeasured) as got:
        w.viewport.picking.click(*visible_pick(w, "upper", rng))
    a, b, c = (np.asarray(p.point_G) for p in w.viewport.picking._angle_picks)
    u, v = a - b, c - b
    expected = np.degrees(np.arccos(np.dot(u, v) / np.linalg.norm(u) / np.linalg.norm(v)))
    assert got.args[0] == pytest.approx(expected, abs=1e-6)
    assert f"Angle {expected:.2f}°" in w.statusBar().currentMessage()
    w.viewport.picking.click(*visible_pick(w, "lower", rng))  # a fourth pick starts again
    assert len(w.viewport.picking._angle_picks) == 1
    w.tools.cancel()
    assert w.viewport.picking._angle_picks == [] and w.viewport.scene.segment_actor is None


def test_move_a_bone_by_dragging_it(qtbot, window, small_project):
    """Issue 18 item 9, part: a bone could only be moved by typing; dragged, it follows the mouse at
    the grabbed point's depth and lands where released, in one undo step."""
    from tests.gui.test_main_window import visible_pick

    w = window(small_project)
    w.viewport.camera_preset("anterior")
    before = w.doc.project.mass("upper").position_G
    x, y = visible_pick(w, "upper", np.random.default_rng(6))
    w.act_move_bone.trigger()
    assert w.viewport.picking.mode == "move_bone" and w.act_cancel_pick.isEnabled()
    assert w.viewport.picking.start_move(x, y)
    start = w.viewport.picking._moving[1]
    delta = w.viewport.picking.move_to(x + 40, y - 10)
    assert w.viewport.world_to_display(start + delta) == pytest.approx((x + 40, y - 10), abs=0.5)
    assert w.doc.project.mass("upper").position_G == before  # moved on release only
    w.viewport.picking.end_move()
    after = np.asarray(w.doc.project.mass("upper").position_G)
    assert after == pytest.approx(np.asarray(before) + delta, abs=1e-12)
    assert "Moved upper" in w.statusBar().currentMessage()
    w.act_undo.trigger()
    assert w.doc.project.mass("upper").position_G == before
    assert not w.viewport.picking.start_move(1, 1)  # the background: nothing grabbed
