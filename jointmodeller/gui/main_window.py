"""The main window: the input panels (project, the MJM sections, contacts, mobilizers, joint
coordinates and experiments) in a dock beside the live 3D viewport, the run panel and plots in
another. ``launch`` is what the CLI calls.

The window composes helpers, one per job: :class:`~jointmodeller.gui.project_files.ProjectFiles`
(``files``: new, open, save, recent files, autosave, recovery),
:class:`~jointmodeller.gui.study_control.StudyController` (``study_control``: start, pause, stop,
progress, live view, stored runs and replay), :class:`~jointmodeller.gui.scene_edits.SceneEdits`
(``edits``: selection between view and tables, bones, tissues and loads placed in the view, mesh
import), :class:`~jointmodeller.gui.exports.Exports` (``exports``), the menus and toolbar of
:mod:`jointmodeller.gui.actions` (``tools``: the picking modes) and
:class:`~jointmodeller.gui.help.HelpTexts` (``help``). The window itself shows the document: title,
scene rebuilds, undo stack, docks, start-up warm-up and closing."""

from __future__ import annotations

import gc
import importlib
import os
import sys
import threading

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow, QMessageBox, QTabWidget, QWidget

from jointmodeller.app.columns import MOBILIZER_COLUMNS
from jointmodeller.app.commands import Command
from jointmodeller.app.document import DocEvent, Document
from jointmodeller.app.registry import study_names
from jointmodeller.gui.actions import build_actions
from jointmodeller.gui.coordinates import CoordinatesPanel
from jointmodeller.gui.exports import Exports
from jointmodeller.gui.help import HelpTexts
from jointmodeller.gui.plots import PlotPanel
from jointmodeller.gui.project_files import ProjectFiles, demo_cache_dir, recovery_dir
from jointmodeller.gui.run_panel import RunPanel
from jointmodeller.gui.runner import ProcessStudyRunner, StudyRunner
from jointmodeller.gui.scene_edits import SceneEdits
from jointmodeller.gui.study_control import StudyController
from jointmodeller.gui.tables import ProjectForm, SectionPanel
from jointmodeller.gui.viewport import Viewport
from jointmodeller.model.specs import Project
from jointmodeller.render.scene_frame import SceneFrame

ORG, APP = "JointModeller", "JointModeller"
AUTOSAVE_MS = 60_000
RUN_DOCK_HEIGHT = 290
"""Default height of the Run and plots dock [px]: two plot panels readable beside the run controls."""
TABLE_SECTIONS = (("springs", "Springs"), ("masses", "Masses"), ("attachments", "Attachments"),
                  ("forces", "Forces"), ("contacts", "Contacts"), ("mobilizers", "Mobilizers"),
                  ("experiments", "Experiments"))
"""Panels: the MJM sections, then the feature lists (mobilizers are the joints of the mass rows)."""

WARM_UP_MODULES = ("jointmodeller.app.studies", "jointmodeller.app.mobilized", "multiprocessing.queues",
                   "multiprocessing.synchronize", "multiprocessing.connection", "multiprocessing.popen_spawn_posix",
                   "matplotlib.figure", "matplotlib.backends.backend_agg")
"""Imported in a background thread once the window is up (:func:`warm_up_imports`): what pressing
Start imports in the GUI process (the studies and the tree, with the multibody core, numba and scipy:
~1 s; the study process's queue and events; the plots' matplotlib), which would otherwise stall the
event loop then (PySide6 reads the source of every module imported after it, so each import costs
more in a GUI process). The first window never waits for them; one that cannot be imported here
(``popen_spawn_posix`` on Windows) fails where it is used, if it is."""
WARM_UP_DELAY_MS = 1500
"""After the first show of the main window, when the warm-up imports begin."""
SPARE_STUDY_AFTER_SHOW_MS = 4000
"""launch() starts the spare study process (ProcessStudyRunner.prepare) this long after the first show:
after the window's warm-up imports, so that the two do not share the CPUs with the start-up."""


class QtCommand(QUndoCommand):
    """A document command on Qt's undo stack."""

    def __init__(self, doc: Document, cmd: Command):
        super().__init__(cmd.text or "Edit")
        self.doc = doc
        self.cmd = cmd

    def redo(self) -> None:
        self.cmd.redo(self.doc)

    def undo(self) -> None:
        self.cmd.undo(self.doc)


def _initial_poses(project: Project) -> tuple:
    """The masses' initial poses as the 3D view draws them (names, COM positions, orientations)."""
    return tuple((m.name, m.position_G, m.euler_deg, m.euler_sequence, m.com_L) for m in project.masses)


def freeze_heap(young_only: bool = False) -> None:
    """Collect once, then move every object alive now out of the cyclic collector's reach
    (gc.freeze): the heap of a loaded project (meshes, VTK wrappers) would otherwise make each full
    collection a 50–130 ms pause of the event loop during live runs.

    Only the young generations are collected first on the first call of a process (the main window
    being made: the heap is the imported modules and the widgets; a full collection finds next to
    nothing, ~20 objects, and costs ~0.12 s of the start-up) and with ``young_only``: the 3D view
    made after the heap was frozen (progressive start-up), whose pyvista, VTK modules and scene
    wrappers, hundreds of thousands of objects, would else make each full collection of a live run
    a ~100 ms pause (the live view showing fewer frames). Other calls collect everything (a replaced
    project's leftovers)."""
    if gc.get_freeze_count() and not young_only:
        gc.collect()
    else:
        gc.collect(1)
    gc.freeze()


def warm_up_imports(modules: tuple[str, ...] = WARM_UP_MODULES) -> threading.Thread | None:
    """Import ``modules`` in a background thread (None when all are imported already). Python's
    import lock makes a use meanwhile wait for the module instead of importing it twice; an import
    that fails here is left to fail, with its message, where the module is used."""
    missing = [m for m in modules if m not in sys.modules]
    if not missing:
        return None

    def run() -> None:
        for name in missing:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - reported where the module is used
                pass

    thread = threading.Thread(target=run, name="jointmodeller-warm-up")
    thread.start()
    return thread



class MainWindow(QMainWindow):
    """JointModeller's main window over one :class:`Document`."""

    runFinished = Signal(object)
    """A study ended with this RunRecord (before it is stored and shown)."""

    def __init__(self, doc: Document | None = None, *, settings: QSettings | None = None,
                 confirm: bool = True, autosave_ms: int = AUTOSAVE_MS):
        super().__init__()
        self.confirm = confirm
        self.settings = settings or QSettings(ORG, APP)
        self.doc = doc or Document(recovery_dir=recovery_dir())
        if self.doc.recovery_dir is None:
            self.doc.recovery_dir = recovery_dir()
        self.undo_stack = QUndoStack(self)
        self.runner = StudyRunner(self)
        self.process_runner = ProcessStudyRunner(self)
        self.study_in_process = True
        """Run the app's studies in a separate process (else in a thread of this one)."""
        self.studies = study_names()  # app.registry: the studies the CLI and the headless demo run too
        self._unsubscribe = lambda: None
        self._rebuild_pending = False
        self._warm_up_started = False
        self._warm_up_fired = False
        self.warm_up_thread: threading.Thread | None = None
        """Imports what pressing Start needs, begun WARM_UP_DELAY_MS after the window is first shown."""

        self._make_widgets()
        self.files = ProjectFiles(self)
        self.help = HelpTexts(self)
        self.exports = Exports(self)
        self.tools = build_actions(self)
        state = self.settings.value("window_state")
        if state is not None:
            try:
                self.restoreState(state)
            except (TypeError, ValueError):  # a damaged setting: the default layout
                pass
        self.edits = SceneEdits(self)
        self.study_control = StudyController(self)
        self._autosave = QTimer(self)
        self._autosave.setInterval(autosave_ms)
        self._autosave.timeout.connect(self.files.autosave)
        self._autosave.start()
        self._rebuild_timer = QTimer(self)
        self._rebuild_timer.setSingleShot(True)
        self._rebuild_timer.setInterval(0)
        self._rebuild_timer.timeout.connect(self._rebuild_scene)
        self.viewport.viewReady.connect(lambda: freeze_heap(young_only=True))
        self.set_document(self.doc)

    def _make_widgets(self) -> None:
        """The 3D view in the middle; the tables and the run/plots panel in dock widgets the user
        resizes (the tables can take half the screen or more), moves, floats or hides (View menu);
        the arrangement is remembered (settings "window_state")."""
        self.viewport = Viewport(self)
        self.viewport.display_cache = demo_cache_dir() / "display"  # decimated bones kept between sessions
        self.project_form = ProjectForm(self.doc, self)
        self.panels: dict[str, SectionPanel] = {}
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.project_form, "Project")
        for key, label in TABLE_SECTIONS:
            if key == "mobilizers":
                panel = SectionPanel(self.doc, "masses", self, columns=MOBILIZER_COLUMNS, rows_fixed=True)
            else:
                panel = SectionPanel(self.doc, key, self)
            panel.model.message.connect(lambda m: self.statusBar().showMessage(m, 8000) if m else None)
            self.panels[key] = panel
            self.tabs.addTab(panel, label)
            if key == "mobilizers":  # the joints' coordinates beside the joints
                self.coordinates_panel = CoordinatesPanel(self.doc, self)
                self.coordinates_panel.model.message.connect(
                    lambda m: self.statusBar().showMessage(m, 8000) if m else None)
                self.tabs.addTab(self.coordinates_panel, "Coordinates")
        self.run_panel = RunPanel(self)
        self.plots = PlotPanel(self)
        bottom = QTabWidget(self)
        bottom.addTab(self.run_panel, "Run")
        bottom.addTab(self.plots, "Plots")
        self.bottom_tabs = bottom
        self.setCentralWidget(self.viewport)
        self.setCorner(Qt.BottomLeftCorner, Qt.LeftDockWidgetArea)
        self.setDockNestingEnabled(True)
        self.model_dock = self._dock("Model", "model_dock", self.tabs, Qt.LeftDockWidgetArea)
        self.run_dock = self._dock("Run and plots", "run_dock", bottom, Qt.BottomDockWidgetArea)
        self.resize(1400, 860)
        self.resizeDocks([self.model_dock], [560], Qt.Horizontal)
        self.resizeDocks([self.run_dock], [RUN_DOCK_HEIGHT], Qt.Vertical)

    def _dock(self, title: str, name: str, widget: QWidget, area) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetMovable | QDockWidget.DockWidgetFloatable
                         | QDockWidget.DockWidgetClosable)
        self.addDockWidget(area, dock)
        return dock

    def reset_layout(self) -> None:
        """The default arrangement of the docks (tables left, run and plots below the 3D view)."""
        for dock, area in ((self.model_dock, Qt.LeftDockWidgetArea), (self.run_dock, Qt.BottomDockWidgetArea)):
            dock.setFloating(False)
            self.addDockWidget(area, dock)
            dock.show()
        self.resizeDocks([self.model_dock], [max(560, self.width() * 2 // 5)], Qt.Horizontal)
        self.resizeDocks([self.run_dock], [RUN_DOCK_HEIGHT], Qt.Vertical)

    # ------------------------------------------------------------------ document
    def set_document(self, doc: Document) -> None:
        """Show another document (after open, demo or recovery)."""
        self._unsubscribe()
        self.doc = doc
        if doc.recovery_dir is None:
            doc.recovery_dir = recovery_dir()
        self.undo_stack.clear()
        doc.set_undo_sink(lambda cmd: self.undo_stack.push(QtCommand(doc, cmd)))
        self._unsubscribe = doc.subscribe(self._doc_event)
        self.project_form.set_document(doc)
        for p in self.panels.values():
            p.set_document(doc)
        self.coordinates_panel.set_document(doc)
        self.study_control.clear_run()
        self.viewport.project = None
        self.viewport.show_project(doc.project, reset_camera=True)
        self.study_control.refresh_runs()
        self.update_title()
        freeze_heap()

    def _doc_event(self, ev: DocEvent) -> None:
        if ev.kind in ("dirty", "path"):
            self.update_title()
            return
        if ev.kind == "runs":
            self.study_control.refresh_runs(select_last=True)
            return
        if not self._rebuild_pending:
            self._rebuild_pending = True
            self._rebuild_timer.start()

    def _rebuild_scene(self) -> None:
        """Redraw the scene for a changed project (coalesced: once per event-loop turn)."""
        self._rebuild_pending = False
        if not self.viewport.has_view:  # drawn when the view is made
            self.viewport.show_project(self.doc.project)
            return
        frame = None
        shown = self.viewport.scene.project
        if (shown is not None and self.viewport.scene.frame.poses
                and _initial_poses(shown) != _initial_poses(self.doc.project)):
            frame = SceneFrame()  # a run's pose was shown: show the bones where the edit put them
        self.viewport.show_project(self.doc.project, frame)
        sel = self.viewport.scene.selected
        if sel is not None:
            self.viewport.scene.select(*sel)

    def update_title(self) -> None:
        self.setWindowTitle(f"{self.doc.display_name}[*] — JointModeller")
        self.setWindowModified(self.doc.dirty)

    def show_error(self, title: str, text: str) -> None:
        """Say what went wrong in the status bar, and in a message box unless ``confirm`` is off."""
        self.statusBar().showMessage(f"{title}: {text.splitlines()[0] if text else ''}", 10000)
        if self.confirm:
            QMessageBox.warning(self, title, text)

    # ------------------------------------------------------------------ what scripts and tests call
    def open_project(self, path: str | os.PathLike) -> bool:
        return self.files.open_project(path)

    def open_demo(self, knee: bool = False) -> bool:
        return self.files.open_demo(knee)

    def save(self) -> bool:
        return self.files.save()

    def save_as(self, path: str | None = None) -> bool:
        return self.files.save_as(path)

    def start_study(self, study: str | None = None, fn=None) -> bool:
        """Start a study off the GUI thread (:meth:`StudyController.start`)."""
        return self.study_control.start(study, fn)

    @property
    def study_running(self) -> bool:
        return self.study_control.running

    @property
    def _active(self):
        """The runner of the latest start (gui.probes stops it)."""
        return self.study_control.active

    def grab_window(self, path: str | os.PathLike) -> bool:
        """Save a picture of the whole main window (panels and the 3D view)."""
        self.viewport.plotter.render()
        QApplication.processEvents()
        return self.grab().save(str(path))

    # ------------------------------------------------------------------ showing and closing
    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._warm_up_started:
            self._warm_up_started = True
            QTimer.singleShot(WARM_UP_DELAY_MS, self, self._warm_up)  # cancelled if the window is deleted first

    def _warm_up(self) -> None:
        if self.viewport.maker.preparing():  # one background import at a time (they share modules)
            QTimer.singleShot(WARM_UP_DELAY_MS // 5, self, self._warm_up)
            return
        self.warm_up_thread = warm_up_imports()
        self._warm_up_fired = True

    def warm_up_finished(self) -> bool:
        """Whether the warm-up imports (begun WARM_UP_DELAY_MS after the first show) are done."""
        return self._warm_up_fired and (self.warm_up_thread is None or not self.warm_up_thread.is_alive())

    def closeEvent(self, event) -> None:
        if not self.files.maybe_save():
            event.ignore()
            return
        self.study_control.stop_all()
        self.process_runner.retire_spare()
        self._autosave.stop()
        self.settings.setValue("window_state", self.saveState())
        if self.confirm or not self.doc.dirty:
            self.doc.recovery.discard()
        self._unsubscribe()
        self._unsubscribe = lambda: None
        self.doc.set_undo_sink(None)
        self.help.close()  # a help, shortcuts or about text does not outlive its window
        self.viewport.close()
        event.accept()


def launch(project_path: str | None = None, argv: list[str] | None = None) -> int:
    """Open the main window with a project (or the demo when None) and run the event loop."""
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv[:1])
    app.setOrganizationName(ORG)
    app.setApplicationName(APP)
    win = MainWindow()
    if project_path is not None:
        if not win.open_project(project_path):
            return 1
    elif not win.files.offer_recovery(ask=True):
        win.open_demo()
    win.show()
    # a study process kept waiting for Start, begun once the window's own start-up work is done
    QTimer.singleShot(SPARE_STUDY_AFTER_SHOW_MS, win, win.process_runner.prepare)
    return int(app.exec())


__all__ = ["MainWindow", "QtCommand", "launch"]
