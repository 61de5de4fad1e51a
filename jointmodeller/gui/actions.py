"""The main window's menus, toolbar and actions (each with its tooltip and status tip), and the Tools
menu's picking modes over the 3D view (:class:`ToolModes`). The actions call the window's helpers
(``files``, ``exports``, ``help``, ``tools``); they hold no state of their own."""

from __future__ import annotations

from functools import partial

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow

from jointmodeller.render.scene_frame import CAMERA_PRESETS


def set_tip(action: QAction, tip: str) -> None:
    """Tooltip and status tip of an action; the tooltip names its first shortcut."""
    if not tip:
        return
    keys = action.shortcut().toString(QKeySequence.NativeText)
    action.setToolTip(f"{tip} ({keys})" if keys else tip)
    action.setStatusTip(tip)


def make_action(parent, text: str, slot, shortcut=None, checkable: bool = False, tip: str = "") -> QAction:
    """An action with its tooltip (the status bar shows it too; the shortcut is added to it)."""
    a = QAction(text, parent)
    if shortcut is not None:
        a.setShortcut(QKeySequence(shortcut))
    a.setCheckable(checkable)
    (a.toggled if checkable else a.triggered).connect(slot)
    set_tip(a, tip)
    return a


PICK_TOOLS = (
    ("place", "act_place", "&Place ligament (two clicks)", "Ctrl+L",
     "Click the origin on one bone, then the insertion on another: a tissue row is added (Esc cancels)"),
    ("drag", "act_drag", "&Move tissue end", "Ctrl+M",
     "Drag an end of the selected tissue along its bone (Esc cancels)"),
    ("force", "act_place_force", "Place &load (one click)", "Ctrl+F",
     "Click a bone where a point load acts: a Forces row is added (10 N along −z; edit direction and "
     "magnitude in the table)"),
    ("measure", "act_measure", "Measure &distance", "Ctrl+D",
     "Click two points on the bones: their distance in mm (Esc cancels)"),
    ("angle", "act_angle", "Measure &angle", "Ctrl+Shift+D",
     "Click three points on the bones: the angle at the second in degrees (Esc cancels)"),
    ("move_bone", "act_move_bone", "Move &bone (drag)", "Ctrl+B",
     "Press on a bone and drag it in the view plane: its initial position changes when you release (one "
     "undo step; Esc cancels)"),
)
"""The Tools menu's picking modes: (viewport mode, window attribute, text, shortcut, tip)."""

TOOLS_MENU_ORDER = ("place", "drag", "force", "move_bone", "measure", "angle")


class ToolModes:
    """The Tools menu's checkable picking modes: one on at a time (the viewport in that mode), the
    others off; Esc (``cancel_action``) is enabled only while one is on, so elsewhere it stays the
    table editors'."""

    def __init__(self, window: QMainWindow):
        self.window = window
        self.actions: dict[str, QAction] = {}
        for mode, attribute, text, keys, tip in PICK_TOOLS:
            a = make_action(window, text, partial(self.toggle, mode), keys, checkable=True, tip=tip)
            self.actions[mode] = a
            setattr(window, attribute, a)
        self.cancel_action = make_action(window, "&Cancel picking", lambda: self.cancel(), "Esc",
                                         tip="Stop placing or moving a tissue or measuring; a first pick is forgotten")
        self.cancel_action.setEnabled(False)

    def toggle(self, mode: str, on: bool) -> None:
        """Turn one picking mode on (the others off) or off (back to selecting)."""
        picking = self.window.viewport.picking
        if on:
            for m, a in self.actions.items():
                if m != mode and a.isChecked():
                    a.blockSignals(True)
                    a.setChecked(False)
                    a.blockSignals(False)
            picking.set_mode(mode)
        elif picking.mode == mode:
            picking.set_mode("select")
        self.cancel_action.setEnabled(any(a.isChecked() for a in self.actions.values()))

    def cancel(self) -> None:
        """Esc: leave ligament placement or tissue dragging, forgetting a first pick."""
        self.window.viewport.picking.cancel_pick()
        for a in self.actions.values():
            if a.isChecked():
                a.setChecked(False)
        self.window.statusBar().showMessage("Picking cancelled.", 4000)


def build_actions(w: QMainWindow) -> ToolModes:
    """Menus and toolbar of the main window ``w``. Sets its ``act_*`` actions (the picking modes'
    through :class:`ToolModes`, which it returns) and the files helper's recent-files menu."""
    mb = w.menuBar()
    f = mb.addMenu("&File")
    w.act_new = make_action(w, "&New", lambda: w.files.new_project(), QKeySequence.New,
                            tip="Start an empty project (gravity, one ligament type, no bones)")
    w.act_demo = make_action(w, "New from &demo", lambda: w.files.open_demo(),
                             tip="Open the built-in elbow demo as a new, unsaved project")
    w.act_demo_knee = make_action(w, "New from &knee demo", lambda: w.files.open_demo(knee=True),
                                  tip="Open the built-in knee demo (lenhart2015 tibiofemoral knee, anterior "
                                      "drawer at 25° flexion) as a new, unsaved project")
    w.act_open = make_action(w, "&Open…", lambda: w.files.open_dialog(), QKeySequence.Open,
                             tip="Open a JointModeller project file (.jmdb)")
    w.act_save = make_action(w, "&Save", lambda: w.files.save(), QKeySequence.Save,
                             tip="Save the project; problems are kept and marked, studies need them fixed")
    w.act_save_as = make_action(w, "Save &as…", lambda: w.files.save_as(), QKeySequence.SaveAs,
                                tip="Save the project, with its stored runs, under a new name")
    w.act_import = make_action(w, "&Import bone mesh…", lambda: w.edits.import_mesh_dialog(), "Ctrl+I",
                               tip="Add a bone from a surface mesh (STL, OBJ, PLY, VTP, VTK, VRML, OFF) with "
                                   "its mass properties computed")
    w.act_shot = make_action(w, "Export &screenshot…", lambda: w.exports.screenshot_dialog(),
                             tip="Save the 3D view as a PNG image")
    w.act_export_plot = make_action(w, "Export &plot…", lambda: w.exports.plot_dialog(),
                                    tip="Save the plots of the shown run as PNG or SVG, or their data as CSV")
    w.act_export_run = make_action(w, "Export run as &CSV…", lambda: w.exports.run_dialog(),
                                   tip="Save every series of the shown run as a CSV table (one row per sample)")
    for a in (w.act_new, w.act_demo, w.act_demo_knee, w.act_open):
        f.addAction(a)
    w.files.recent_menu = f.addMenu("Open &recent")
    for a in (w.act_save, w.act_save_as, w.act_import):
        f.addAction(a)
    f.addSeparator()
    for a in (w.act_shot, w.act_export_plot, w.act_export_run):
        f.addAction(a)
    f.addSeparator()
    f.addAction(make_action(w, "&Quit", w.close, QKeySequence.Quit, tip="Close JointModeller (asks to save)"))
    e = mb.addMenu("&Edit")
    w.act_undo = w.undo_stack.createUndoAction(w, "&Undo")
    w.act_undo.setShortcut(QKeySequence.Undo)
    set_tip(w.act_undo, "Take back the last edit")
    w.act_redo = w.undo_stack.createRedoAction(w, "&Redo")
    redo_keys = list(QKeySequence.keyBindings(QKeySequence.Redo))
    if QKeySequence("Ctrl+Y") not in redo_keys:
        redo_keys.insert(0, QKeySequence("Ctrl+Y"))  # Ctrl+Y as on Windows, beside Ctrl+Shift+Z
    w.act_redo.setShortcuts(redo_keys)
    set_tip(w.act_redo, "Do again the edit just taken back")
    e.addAction(w.act_undo)
    e.addAction(w.act_redo)
    v = mb.addMenu("&View")
    for name in CAMERA_PRESETS:
        v.addAction(make_action(w, name.capitalize(), lambda _=False, n=name: w.viewport.camera_preset(n),
                                tip=f"Look at the model from the {name} side"))
    v.addSeparator()
    w.act_axes = make_action(w, "Body axes", w.viewport.set_axes_visible, checkable=True,
                             tip="Show each bone's principal axes at its centre of mass (x red, y green, z blue)")
    w.act_axes.setChecked(True)
    v.addAction(w.act_axes)
    v.addSeparator()
    for dock, tip in ((w.model_dock, "Show or hide the tables (drag the title bar to move or float them)"),
                      (w.run_dock, "Show or hide the run panel and the plots")):
        a = dock.toggleViewAction()
        set_tip(a, tip)
        v.addAction(a)
    w.act_reset_layout = make_action(w, "Reset panel layout", lambda: w.reset_layout(),
                                     tip="Put the tables left and the run panel below the 3D view again")
    v.addAction(w.act_reset_layout)
    t = mb.addMenu("&Tools")
    tools = ToolModes(w)
    w.act_cancel_pick = tools.cancel_action
    for mode in TOOLS_MENU_ORDER:
        t.addAction(tools.actions[mode])
    t.addAction(w.act_cancel_pick)
    w.addAction(w.act_cancel_pick)
    h = mb.addMenu("&Help")
    w.act_help = make_action(w, "JointModeller &help", lambda: w.help.show_help(), QKeySequence.HelpContents,
                             tip="How to build a joint model, run studies and where the documentation is")
    w.act_shortcuts = make_action(w, "&Keyboard shortcuts", lambda: w.help.show_shortcuts(), "Ctrl+/",
                                  tip="Every keyboard shortcut of the main window")
    w.act_about = make_action(w, "&About JointModeller", lambda: w.help.show_about(), tip="Version and licence")
    for a in (w.act_help, w.act_shortcuts, w.act_about):
        h.addAction(a)
    tb = w.addToolBar("Main")
    tb.setObjectName("main_toolbar")
    for a in (w.act_open, w.act_save, w.act_undo, w.act_redo, w.act_import, w.act_place, w.act_drag):
        tb.addAction(a)
    tb.addSeparator()
    for name in CAMERA_PRESETS:
        tb.addAction(make_action(w, name[:3].capitalize(), lambda _=False, n=name: w.viewport.camera_preset(n),
                                 tip=f"Look at the model from the {name} side"))
    tb.addAction(w.act_shot)
    w.files.refresh_recent()
    return tools


__all__ = ["PICK_TOOLS", "ToolModes", "build_actions", "make_action", "set_tip"]
