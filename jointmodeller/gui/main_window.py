"""The main window: the five input panels (plus contacts, mobilizers, joint coordinates and
experiments) beside the live 3D viewport, the study runner with a time slider, and plots.
``launch`` is what the CLI calls."""

from __future__ import annotations

import gc
import importlib
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSettings, QStandardPaths, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence, QUndoCommand, QUndoStack
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDockWidget,
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSlider,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from jointmodeller.app.columns import MOBILIZER_COLUMNS, new_project
from jointmodeller.app.commands import Command
from jointmodeller.app.document import DocEvent, Document
from jointmodeller.app.live import split_batch, study_function
from jointmodeller.app.registry import study_names
from jointmodeller.gui.coordinates import CoordinatesPanel
from jointmodeller.gui.mesh_import import MeshImportDialog
from jointmodeller.gui.plots import PlotPanel
from jointmodeller.gui.runner import ProcessStudyRunner, StudyRunner
from jointmodeller.gui.tables import ProjectForm, SectionPanel
from jointmodeller.gui.viewport import Viewport
from jointmodeller.model.errors import JointModellerError
from jointmodeller.model.results import RunRecord
from jointmodeller.model.specs import Attachment, Project
from jointmodeller.render.frames import RunFrames, frame_from_sample, frames_from_run
from jointmodeller.render.scene import CAMERA_PRESETS, SceneFrame

ORG, APP = "JointModeller", "JointModeller"
AUTOSAVE_MS = 60_000
TIME_LABEL_INTERVAL_S = 0.25
"""The live time caption is rewritten at most this often."""
PROGRESS_BAR_INTERVAL_S = 0.25
"""The progress bar moves at most this often."""
MAX_RECENT = 8
RUN_DOCK_HEIGHT = 290
"""Default height of the Run and plots dock [px]: two plot panels readable beside the run controls."""
PROJECT_FILTER = "JointModeller projects (*.jmdb);;All files (*)"
TABLE_SECTIONS = (("springs", "Springs"), ("masses", "Masses"), ("attachments", "Attachments"),
                  ("forces", "Forces"), ("contacts", "Contacts"), ("mobilizers", "Mobilizers"),
                  ("experiments", "Experiments"))
"""Panels: the MJM sections, then the feature lists (mobilizers are the joints of the mass rows)."""

WARM_UP_MODULES = ("jointmodeller.app.studies",)
"""Imported in a background thread once the window is up (:func:`warm_up_imports`): what pressing
Start imports in the GUI process (the studies, with the multibody core, numba and scipy: ~1 s),
which would otherwise stall the event loop then. The first window never waits for them."""
WARM_UP_DELAY_MS = 1500
"""After the first show of the main window, when the warm-up imports begin."""


def _set_tip(action: QAction, tip: str) -> None:
    """Tooltip and status tip of an action; the tooltip names its first shortcut."""
    if not tip:
        return
    keys = action.shortcut().toString(QKeySequence.NativeText)
    action.setToolTip(f"{tip} ({keys})" if keys else tip)
    action.setStatusTip(tip)


def _duration(seconds: float) -> str:
    """12 s, 3 min 05 s, 1 h 02 min."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def docs_folder() -> Path | None:
    """The repository's docs/ folder beside the package (a source checkout), or None (a wheel)."""
    d = Path(__file__).resolve().parents[2] / "docs"
    return d if (d / "architecture.md").is_file() else None


def help_html() -> str:
    """The Help window's text: the workflow in a few steps and links to the documentation."""
    docs = docs_folder()
    if docs is not None:
        links = "".join(f"<li><a href='{f.as_uri()}'>{f.stem.replace('_', ' ')}</a></li>"
                        for f in sorted(docs.glob("*.md")))
        readme = docs.parent / "README.md"
        if readme.is_file():
            links = f"<li><a href='{readme.as_uri()}'>README</a></li>" + links
        docs_text = f"<h4>Documentation</h4><ul>{links}</ul>"
    else:
        docs_text = ("<h4>Documentation</h4><p>The README and docs/ of the JointModeller source distribution; "
                     "<code>jointmodeller --help</code> lists the command-line tools.</p>")
    return (
        "<h3>Building a joint model</h3><ol>"
        "<li><b>File › New</b> (Ctrl+N) starts an empty project; <b>File › Import bone mesh…</b> (Ctrl+I) adds "
        "each bone. Open surfaces from segmentation are accepted: the dialog says how their mass properties "
        "were found.</li>"
        "<li><b>Tools › Place ligament</b> (Ctrl+L): click the origin on one bone, then the insertion on "
        "another (the bone under the mouse is highlighted, a marker shows the first pick). Esc cancels. Edit "
        "stiffness and rest length in the Springs and Attachments tables; selecting a tissue shows its length "
        "and strain. <b>Tools › Place load</b> (Ctrl+F) puts a point load where you click; <b>Measure "
        "distance</b> (Ctrl+D) and <b>Measure angle</b> (Ctrl+Shift+D) measure between picked points; "
        "<b>Move bone</b> (Ctrl+B) drags a bone to a new initial position.</li>"
        "<li>Add loads (Forces), contact pairs, joints (Mobilizers) and laxity experiments in their tables. "
        "Cells with a problem are marked red; their tooltip says what is wrong.</li>"
        "<li><b>Save</b> (Ctrl+S) always works; problems are stored and stay marked.</li>"
        "<li>Choose a study in the Run tab and press <b>Start</b>: equilibrium, dynamics or laxity. The runs "
        "are stored with the project; the slider replays a run; File › Export plot / Export run as CSV save "
        "the results.</li></ol>"
        "<p>Undo: Ctrl+Z, redo: Ctrl+Y or Ctrl+Shift+Z. Help › Keyboard shortcuts lists the rest. The tables "
        "and the run panel are docks: drag their edges or title bars; View › Reset panel layout puts them "
        "back.</p>"
        + docs_text)


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


def recovery_dir() -> Path:
    """Per-user folder for autosaves (JOINTMODELLER_RECOVERY_DIR overrides it, e.g. in tests)."""
    env = os.environ.get("JOINTMODELLER_RECOVERY_DIR")
    if env:
        return Path(env)
    base = QStandardPaths.writableLocation(QStandardPaths.AppDataLocation) or str(Path.home() / ".jointmodeller")
    return Path(base) / "recovery"


def freeze_heap() -> None:
    """Collect once, then move every object alive now out of the cyclic collector's reach
    (gc.freeze): the heap of a loaded project (meshes, VTK wrappers) would otherwise make each full
    collection a 50–130 ms pause of the event loop during live runs.

    The first call of a process (the main window being made: the heap is the imported modules and
    the widgets) collects the young generations only: a full collection of that heap finds next to
    nothing (~20 objects) and costs ~0.12 s of the start-up. Later calls collect everything (a
    replaced project's leftovers)."""
    if gc.get_freeze_count():
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


def demo_cache_dir() -> Path:
    """The per-user cache folder (JOINTMODELLER_CACHE overrides it, e.g. in tests)."""
    return Path(os.environ.get("JOINTMODELLER_CACHE") or QStandardPaths.writableLocation(
        QStandardPaths.CacheLocation) or str(Path.home() / ".cache" / "jointmodeller"))


def demo_project() -> Project:
    """The demo project, from the per-user cache when it is there (app.demo.cached_demo_project)."""
    from jointmodeller.app.demo import cached_demo_project

    return cached_demo_project(demo_cache_dir())


DYNAMICS_METHODS = (
    ("Auto", "auto"), ("DOPRI5 (explicit, projects onto constraints)", "DOPRI5"), ("DOP853 (explicit)", "DOP853"),
    ("BDF (implicit)", "BDF"), ("Radau (implicit)", "Radau"), ("RK45 (explicit)", "RK45"),
    ("LSODA (switching)", "LSODA"),
)
"""Integrator choices of the run panel: (label, app.studies method name)."""


RESIDUAL_TOLERANCES = (("default", None), ("1e-2 N", 1e-2), ("1e-3 N", 1e-3), ("1e-4 N", 1e-4), ("1e-6 N", 1e-6),
                       ("1e-8 N", 1e-8))
"""Residual tolerance choices of the run panel: (label, force [N] or None for the study's default)."""


class RunPanel(QWidget):
    """Study choice, start / pause / stop, progress, stored runs and the replay slider."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.study = QComboBox(self)
        self.study.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.study.setMinimumContentsLength(len("equilibrium") + 1)
        self.t_end = QDoubleSpinBox(self)
        self.t_end.setRange(0.001, 1e4)
        self.t_end.setDecimals(3)
        self.t_end.setValue(1.0)
        self.t_end.setSuffix(" s")
        self.method = QComboBox(self)
        self.method.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        for label, method in DYNAMICS_METHODS:
            self.method.addItem(label, method)
        self.method.setToolTip("Integrator of the dynamics study. Auto: BDF (implicit) when the project has "
                               "contact pairs, whose stiff cartilage springs bound an explicit method's step; "
                               "DOP853 (explicit, 8th order) otherwise.")
        self.digits = QSpinBox(self)
        self.digits.setRange(3, 12)
        self.digits.setValue(6)
        self.digits.setPrefix("1e-")
        self.digits.setToolTip("Accuracy of the dynamics study: relative tolerance 10^-digits")
        self.max_wall = QDoubleSpinBox(self)  # 0 shows "default": the study's own limit
        self.max_wall.setRange(0.0, 1e6)
        self.max_wall.setDecimals(0)
        self.max_wall.setSuffix(" s")
        self.max_wall.setSpecialValueText("default")
        self.max_wall.setToolTip("Time limit of the study's computing time (pauses not counted): a run that "
                                 "reaches it ends as failed and keeps what it computed (a laxity sweep: as stopped, "
                                 "with its solved steps). Default: 3600 s for dynamics (also at most 1,000,000 "
                                 "integrator steps), 300 s for equilibrium, none for laxity.")
        self.tolerance = QComboBox(self)  # equilibrium and laxity: the residual each equilibrium must meet
        self.tolerance.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        for label, value in RESIDUAL_TOLERANCES:
            self.tolerance.addItem(label, value)
        self.tolerance.setToolTip("Residual tolerance of each equilibrium (equilibrium and laxity studies): the "
                                  "largest unbalanced force in N; moments are held to it times the model's size. "
                                  "Default: 1e-8 N for equilibrium; for laxity 1e-6 N on smooth models and "
                                  "1e-2 N with contact or wrapping, whose surfaces are resolved no finer.")
        self.start = QPushButton("Start", self)
        self.pause = QPushButton("Pause", self)
        self.pause.setCheckable(True)
        self.stop = QPushButton("Stop", self)
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 1000)
        self.progress.setFormat("%p%")
        self.runs = QComboBox(self)
        self.slider = QSlider(Qt.Horizontal, self)
        self.slider.setEnabled(False)
        self.time_label = QLabel("t = –", self)
        self.time_label.setFixedWidth(self.time_label.fontMetrics().horizontalAdvance("load = -00000.0 N·m") + 8)
        self.status = QLabel("", self)
        self.status.setWordWrap(True)
        # the study and its buttons, then the dynamics options on a row of their own: the bar stays
        # narrow enough that the input tables get the width the splitter gives them
        top = QHBoxLayout()
        for w in (QLabel("Study"), self.study, self.start, self.pause, self.stop):
            top.addWidget(w)
        top.addWidget(self.progress, 1)
        options = QHBoxLayout()  # the dynamics study's options
        for w in (QLabel("End time"), self.t_end, QLabel("Integrator"), self.method, QLabel("Accuracy"), self.digits):
            options.addWidget(w)
        options.addStretch(1)
        limits = QHBoxLayout()  # every study's limits, on a row of their own: the panel stays narrow
        for w in (QLabel("Time limit"), self.max_wall, QLabel("Tolerance"), self.tolerance):
            limits.addWidget(w)
        limits.addStretch(1)
        self.study.currentTextChanged.connect(self._study_changed)
        bottom = QHBoxLayout()
        bottom.addWidget(QLabel("Run"))
        bottom.addWidget(self.runs, 1)
        bottom.addWidget(self.slider, 3)
        bottom.addWidget(self.time_label)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addLayout(options)
        lay.addLayout(limits)
        lay.addLayout(bottom)
        lay.addWidget(self.status)
        self.set_running(False)

    def _study_changed(self, study: str) -> None:
        """End time, integrator and accuracy belong to the dynamics study only, the residual tolerance
        to the static ones; every study but muscle paths takes a time limit."""
        for w in (self.t_end, self.method, self.digits):
            w.setEnabled(study == "dynamics")
        self.max_wall.setEnabled(study in ("dynamics", "equilibrium", "laxity"))
        self.tolerance.setEnabled(study in ("equilibrium", "laxity"))

    def dynamics_options(self) -> dict:
        """The studies' options as chosen: t_end [s], method ("auto" or a name), digits (dynamics);
        max_wall_s unless left at "default"; the residual tolerance unless "default", as equilibrium's
        force_tol and laxity's tol_N (each study takes the options it knows)."""
        options = {"t_end": float(self.t_end.value()), "method": str(self.method.currentData()),
                   "digits": float(self.digits.value())}
        if self.max_wall.value() > 0:
            options["max_wall_s"] = float(self.max_wall.value())
        tol = self.tolerance.currentData()
        if tol is not None:
            options["force_tol"] = options["tol_N"] = float(tol)
        return options

    def set_running(self, running: bool) -> None:
        self.start.setEnabled(not running and self.study.count() > 0)
        self.pause.setEnabled(running)
        self.stop.setEnabled(running)
        if not running:
            self.pause.setChecked(False)
            self.pause.setText("Pause")
            self.progress.setFormat("%p%")


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
        self._active = self.runner
        self.studies = study_names()  # app.registry: the studies the CLI and the headless demo run too
        self.frames: RunFrames | None = None
        self.shown_run: RunRecord | None = None
        self._suppress_sync = False
        self._unsubscribe = lambda: None
        self._rebuild_pending = False
        self._warm_up_started = False
        self._warm_up_fired = False
        self.warm_up_thread: threading.Thread | None = None
        """Imports what pressing Start needs, begun WARM_UP_DELAY_MS after the window is first shown."""

        # widgets
        self.viewport = Viewport(self)
        self.viewport.scene.display_cache = demo_cache_dir() / "display"  # decimated bones kept between sessions
        self.project_form = ProjectForm(self.doc, self)
        self.panels: dict[str, SectionPanel] = {}
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.project_form, "Project")
        for key, label in TABLE_SECTIONS:
            if key == "mobilizers":
                panel = SectionPanel(self.doc, "masses", self, columns=MOBILIZER_COLUMNS, rows_fixed=True)
            else:
                panel = SectionPanel(self.doc, key, self)
            panel.rowSelected.connect(self._table_selected)
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
        # the 3D view in the middle; the tables and the run/plots panel in dock widgets the user
        # resizes (the tables can take half the screen or more), moves, floats or hides (View menu);
        # the arrangement is remembered (settings "window_state")
        self.setCentralWidget(self.viewport)
        self.setCorner(Qt.BottomLeftCorner, Qt.LeftDockWidgetArea)
        self.setDockNestingEnabled(True)
        self.model_dock = self._dock("Model", "model_dock", self.tabs, Qt.LeftDockWidgetArea)
        self.run_dock = self._dock("Run and plots", "run_dock", bottom, Qt.BottomDockWidgetArea)
        self.resize(1400, 860)
        self.resizeDocks([self.model_dock], [560], Qt.Horizontal)
        self.resizeDocks([self.run_dock], [RUN_DOCK_HEIGHT], Qt.Vertical)
        self._make_actions()
        state = self.settings.value("window_state")
        if state is not None:
            try:
                self.restoreState(state)
            except (TypeError, ValueError):  # a damaged setting: the default layout
                pass

        # signals
        self.viewport.massPicked.connect(self._viewport_picked)
        self.viewport.attachmentPlaced.connect(self._attachment_placed)
        self.viewport.forcePlaced.connect(self._force_placed)
        self.viewport.boneMoved.connect(self._bone_moved)
        self.viewport.attachmentMoved.connect(
            lambda i, att: self.doc.set_row("attachments", i, att, "Move tissue end"))
        self.viewport.message.connect(lambda m: self.statusBar().showMessage(m))
        self._time_label_at = 0.0
        self._progress_at = 0.0
        self.viewport.liveFrameShown.connect(self._live_frame_shown)
        for runner in (self.runner, self.process_runner):
            runner.progressed.connect(self._progress)
            runner.sample.connect(self._live_sample)
            runner.finished.connect(self._run_finished)
            runner.failed.connect(self._run_failed)
            runner.runningChanged.connect(self.run_panel.set_running)
        rp = self.run_panel
        rp.start.clicked.connect(lambda: self.start_study())
        rp.pause.toggled.connect(self._pause_toggled)
        rp.stop.clicked.connect(lambda: self._active.stop())
        rp.runs.currentIndexChanged.connect(self._run_chosen)
        rp.slider.valueChanged.connect(self.show_sample)
        for name in self.studies:
            rp.study.addItem(name)
        if not self.studies:
            rp.status.setText("No study code is installed yet.")
        rp.set_running(False)
        self._autosave = QTimer(self)
        self._autosave.setInterval(autosave_ms)
        self._autosave.timeout.connect(self.autosave)
        self._autosave.start()
        self._run_clock: dict | None = None
        self._clock_timer = QTimer(self)
        self._clock_timer.setInterval(1000)
        self._clock_timer.timeout.connect(self._show_clock)
        for runner in (self.runner, self.process_runner):
            runner.runningChanged.connect(lambda on: None if on else self._clock_timer.stop())
        self._rebuild_timer = QTimer(self)
        self._rebuild_timer.setSingleShot(True)
        self._rebuild_timer.setInterval(0)
        self._rebuild_timer.timeout.connect(self._rebuild_scene)
        self.set_document(self.doc)

    def _dock(self, title: str, name: str, widget: QWidget, area) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetMovable | QDockWidget.DockWidgetFloatable
                         | QDockWidget.DockWidgetClosable)
        self.addDockWidget(area, dock)
        return dock

    # ------------------------------------------------------------------ actions and menus
    def _act(self, text: str, slot, shortcut=None, checkable: bool = False, tip: str = "") -> QAction:
        """An action with its tooltip (the status bar shows it too; the shortcut is added to it)."""
        a = QAction(text, self)
        if shortcut is not None:
            a.setShortcut(QKeySequence(shortcut))
        a.setCheckable(checkable)
        (a.toggled if checkable else a.triggered).connect(slot)
        _set_tip(a, tip)
        return a

    def _make_actions(self) -> None:
        mb = self.menuBar()
        f = mb.addMenu("&File")
        self.act_new = self._act("&New", lambda: self.new_project(), QKeySequence.New,
                                 tip="Start an empty project (gravity, one ligament type, no bones)")
        self.act_demo = self._act("New from &demo", lambda: self.open_demo(),
                                  tip="Open the built-in elbow demo as a new, unsaved project")
        self.act_demo_knee = self._act("New from &knee demo", lambda: self.open_demo(knee=True),
                                       tip="Open the built-in knee demo (lenhart2015 tibiofemoral knee, anterior "
                                           "drawer at 25° flexion) as a new, unsaved project")
        self.act_open = self._act("&Open…", lambda: self.open_dialog(), QKeySequence.Open,
                                  tip="Open a JointModeller project file (.jmdb)")
        self.act_save = self._act("&Save", lambda: self.save(), QKeySequence.Save,
                                  tip="Save the project; problems are kept and marked, studies need them fixed")
        self.act_save_as = self._act("Save &as…", lambda: self.save_as(), QKeySequence.SaveAs,
                                     tip="Save the project, with its stored runs, under a new name")
        self.act_import = self._act("&Import bone mesh…", lambda: self.import_mesh_dialog(), "Ctrl+I",
                                    tip="Add a bone from a surface mesh (STL, OBJ, PLY, VTP, VTK, VRML, OFF) with "
                                        "its mass properties computed")
        self.act_shot = self._act("Export &screenshot…", lambda: self.screenshot_dialog(),
                                  tip="Save the 3D view as a PNG image")
        self.act_export_plot = self._act("Export &plot…", lambda: self.export_plot_dialog(),
                                         tip="Save the plots of the shown run as PNG or SVG, or their data as CSV")
        self.act_export_run = self._act("Export run as &CSV…", lambda: self.export_run_dialog(),
                                        tip="Save every series of the shown run as a CSV table (one row per sample)")
        self.recent_menu = None
        for a in (self.act_new, self.act_demo, self.act_demo_knee, self.act_open):
            f.addAction(a)
        self.recent_menu = f.addMenu("Open &recent")
        for a in (self.act_save, self.act_save_as, self.act_import):
            f.addAction(a)
        f.addSeparator()
        for a in (self.act_shot, self.act_export_plot, self.act_export_run):
            f.addAction(a)
        f.addSeparator()
        f.addAction(self._act("&Quit", self.close, QKeySequence.Quit, tip="Close JointModeller (asks to save)"))
        e = mb.addMenu("&Edit")
        self.act_undo = self.undo_stack.createUndoAction(self, "&Undo")
        self.act_undo.setShortcut(QKeySequence.Undo)
        _set_tip(self.act_undo, "Take back the last edit")
        self.act_redo = self.undo_stack.createRedoAction(self, "&Redo")
        redo_keys = list(QKeySequence.keyBindings(QKeySequence.Redo))
        if QKeySequence("Ctrl+Y") not in redo_keys:
            redo_keys.insert(0, QKeySequence("Ctrl+Y"))  # Ctrl+Y as on Windows, beside Ctrl+Shift+Z
        self.act_redo.setShortcuts(redo_keys)
        _set_tip(self.act_redo, "Do again the edit just taken back")
        e.addAction(self.act_undo)
        e.addAction(self.act_redo)
        v = mb.addMenu("&View")
        for name in CAMERA_PRESETS:
            v.addAction(self._act(name.capitalize(), lambda _=False, n=name: self.viewport.camera_preset(n),
                                  tip=f"Look at the model from the {name} side"))
        v.addSeparator()
        self.act_axes = self._act("Body axes", self.viewport.scene.set_axes_visible, checkable=True,
                                  tip="Show each bone's principal axes at its centre of mass (x red, y green, z blue)")
        self.act_axes.setChecked(True)
        v.addAction(self.act_axes)
        v.addSeparator()
        for dock, tip in ((self.model_dock, "Show or hide the tables (drag the title bar to move or float them)"),
                          (self.run_dock, "Show or hide the run panel and the plots")):
            a = dock.toggleViewAction()
            _set_tip(a, tip)
            v.addAction(a)
        self.act_reset_layout = self._act("Reset panel layout", lambda: self.reset_layout(),
                                          tip="Put the tables left and the run panel below the 3D view again")
        v.addAction(self.act_reset_layout)
        t = mb.addMenu("&Tools")
        self.act_place = self._act("&Place ligament (two clicks)", self._toggle_place, "Ctrl+L", checkable=True,
                                   tip="Click the origin on one bone, then the insertion on another: a tissue "
                                       "row is added (Esc cancels)")
        self.act_drag = self._act("&Move tissue end", self._toggle_drag, "Ctrl+M", checkable=True,
                                  tip="Drag an end of the selected tissue along its bone (Esc cancels)")
        self.act_place_force = self._act("Place &load (one click)", self._toggle_force, "Ctrl+F", checkable=True,
                                         tip="Click a bone where a point load acts: a Forces row is added "
                                             "(10 N along −z; edit direction and magnitude in the table)")
        self.act_measure = self._act("Measure &distance", self._toggle_measure, "Ctrl+D", checkable=True,
                                     tip="Click two points on the bones: their distance in mm (Esc cancels)")
        self.act_angle = self._act("Measure &angle", self._toggle_angle, "Ctrl+Shift+D", checkable=True,
                                   tip="Click three points on the bones: the angle at the second in degrees "
                                       "(Esc cancels)")
        self.act_move_bone = self._act("Move &bone (drag)", self._toggle_move_bone, "Ctrl+B", checkable=True,
                                       tip="Press on a bone and drag it in the view plane: its initial position "
                                           "changes when you release (one undo step; Esc cancels)")
        self.act_cancel_pick = self._act("&Cancel picking", lambda: self.cancel_picking(), "Esc",
                                         tip="Stop placing or moving a tissue or measuring; a first pick is forgotten")
        self.act_cancel_pick.setEnabled(False)  # only while picking: Esc stays the table editors' elsewhere
        for a in (self.act_place, self.act_drag, self.act_place_force, self.act_move_bone, self.act_measure,
                  self.act_angle, self.act_cancel_pick):
            t.addAction(a)
        self.addAction(self.act_cancel_pick)
        h = mb.addMenu("&Help")
        self.act_help = self._act("JointModeller &help", lambda: self.show_help(), QKeySequence.HelpContents,
                                  tip="How to build a joint model, run studies and where the documentation is")
        self.act_shortcuts = self._act("&Keyboard shortcuts", lambda: self.show_shortcuts(), "Ctrl+/",
                                       tip="Every keyboard shortcut of the main window")
        self.act_about = self._act("&About JointModeller", lambda: self.show_about(), tip="Version and licence")
        for a in (self.act_help, self.act_shortcuts, self.act_about):
            h.addAction(a)
        self.help_dialog = None
        tb = self.addToolBar("Main")
        tb.setObjectName("main_toolbar")
        for a in (self.act_open, self.act_save, self.act_undo, self.act_redo, self.act_import, self.act_place,
                  self.act_drag):
            tb.addAction(a)
        tb.addSeparator()
        for name in CAMERA_PRESETS:
            tb.addAction(self._act(name[:3].capitalize(), lambda _=False, n=name: self.viewport.camera_preset(n),
                                   tip=f"Look at the model from the {name} side"))
        tb.addAction(self.act_shot)
        self._refresh_recent()

    def reset_layout(self) -> None:
        """The default arrangement of the docks (tables left, run and plots below the 3D view)."""
        for dock, area in ((self.model_dock, Qt.LeftDockWidgetArea), (self.run_dock, Qt.BottomDockWidgetArea)):
            dock.setFloating(False)
            self.addDockWidget(area, dock)
            dock.show()
        self.resizeDocks([self.model_dock], [max(560, self.width() * 2 // 5)], Qt.Horizontal)
        self.resizeDocks([self.run_dock], [RUN_DOCK_HEIGHT], Qt.Vertical)

    def cancel_picking(self) -> None:
        """Esc: leave ligament placement or tissue dragging, forgetting a first pick."""
        self.viewport.cancel_pick()
        for a in (self.act_place, self.act_drag, self.act_place_force, self.act_measure, self.act_angle,
                  self.act_move_bone):
            if a.isChecked():
                a.setChecked(False)
        self.statusBar().showMessage("Picking cancelled.", 4000)

    # ------------------------------------------------------------------ help
    def _show_text(self, title: str, html: str) -> None:
        """A non-modal text window (one at a time)."""
        from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser

        if self.help_dialog is not None:
            self.help_dialog.close()
        dlg = QDialog(self)
        dlg.setWindowTitle(title)
        view = QTextBrowser(dlg)
        view.setOpenExternalLinks(True)
        view.setHtml(html)
        buttons = QDialogButtonBox(QDialogButtonBox.Close, dlg)
        buttons.rejected.connect(dlg.close)
        lay = QVBoxLayout(dlg)
        lay.addWidget(view)
        lay.addWidget(buttons)
        dlg.resize(620, 520)
        dlg.show()
        self.help_dialog = dlg

    def shortcut_rows(self) -> list[tuple[str, str]]:
        """(action, keys) of every action with a shortcut, menu order."""
        rows, seen = [], set()
        for a in [a for m in self.menuBar().actions() if m.menu() for a in m.menu().actions()]:
            keys = [k.toString(QKeySequence.NativeText) for k in a.shortcuts()]
            if keys and id(a) not in seen:
                seen.add(id(a))
                rows.append((a.text().replace("&", ""), ", ".join(keys)))
        rows += [("Turn the view", "drag with the left mouse button"), ("Zoom", "mouse wheel"),
                 ("Pan", "drag with the middle mouse button or Shift + left")]
        return rows

    def show_shortcuts(self) -> None:
        rows = "".join(f"<tr><td>{a}</td><td><b>{k}</b></td></tr>" for a, k in self.shortcut_rows())
        self._show_text("Keyboard shortcuts", f"<table cellpadding='4'>{rows}</table>")

    def show_help(self) -> None:
        self._show_text("JointModeller help", help_html())

    def show_about(self) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("jointmodeller")
        except PackageNotFoundError:
            v = "(development tree)"
        self._show_text("About JointModeller", f"<h3>JointModeller {v}</h3><p>Rigid-body joint models from bone "
                                               "meshes: tissues, contact, equilibrium, dynamics and laxity "
                                               "studies.</p>")

    def _toggle_pick_mode(self, mode: str, on: bool) -> None:
        """Turn one picking mode on (the others off) or off (back to selecting)."""
        modes = {"place": self.act_place, "drag": self.act_drag, "measure": self.act_measure,
                 "force": self.act_place_force, "angle": self.act_angle, "move_bone": self.act_move_bone}
        if on:
            for m, a in modes.items():
                if m != mode and a.isChecked():
                    a.blockSignals(True)
                    a.setChecked(False)
                    a.blockSignals(False)
            self.viewport.set_mode(mode)
        elif self.viewport.mode == mode:
            self.viewport.set_mode("select")
        self.act_cancel_pick.setEnabled(any(a.isChecked() for a in modes.values()))

    def _toggle_place(self, on: bool) -> None:
        self._toggle_pick_mode("place", on)

    def _toggle_drag(self, on: bool) -> None:
        self._toggle_pick_mode("drag", on)

    def _toggle_measure(self, on: bool) -> None:
        self._toggle_pick_mode("measure", on)

    def _toggle_move_bone(self, on: bool) -> None:
        self._toggle_pick_mode("move_bone", on)

    def _bone_moved(self, mass: str, delta_G) -> None:
        """A bone dragged in the view: its initial position moves by delta_G (one undo step)."""
        from dataclasses import replace as _replace

        try:
            i = self.doc.project.mass_index(mass)
        except KeyError:
            return
        m = self.doc.project.masses[i]
        moved = _replace(m, position_G=tuple(float(p + d) for p, d in zip(m.position_G, delta_G)))
        self.doc.set_row("masses", i, moved, f"Move {mass}")
        d = ", ".join(f"{x * 1000:.1f}" for x in delta_G)
        self.statusBar().showMessage(f"Moved {mass} by ({d}) mm; Undo takes it back.", 8000)

    def _toggle_angle(self, on: bool) -> None:
        self._toggle_pick_mode("angle", on)

    def _toggle_force(self, on: bool) -> None:
        self._toggle_pick_mode("force", on)

    def _force_placed(self, force) -> None:
        i = self.doc.add_row("forces", force)
        self.tabs.setCurrentWidget(self.panels["forces"])
        self.panels["forces"].select_row(i)
        p = ", ".join(f"{x * 1000:.1f}" for x in force.point_L)
        self.statusBar().showMessage(f"Added {force.name} on {force.body} at ({p}) mm: {force.magnitude_N:g} N along "
                                     "−z (editable in the Forces table).", 8000)

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
        self.frames = None
        self.shown_run = None
        self.plots.show_run(None)
        self.viewport.project = None
        self.viewport.show_project(doc.project, reset_camera=True)
        self._refresh_runs()
        self._update_title()
        freeze_heap()

    def _doc_event(self, ev: DocEvent) -> None:
        if ev.kind in ("dirty", "path"):
            self._update_title()
            return
        if ev.kind == "runs":
            self._refresh_runs(select_last=True)
            return
        if not self._rebuild_pending:
            self._rebuild_pending = True
            self._rebuild_timer.start()

    def _rebuild_scene(self) -> None:
        """Redraw the scene for a changed project (coalesced: once per event-loop turn)."""
        self._rebuild_pending = False
        frame = None
        shown = self.viewport.scene.project
        if (shown is not None and self.viewport.scene.frame.poses
                and _initial_poses(shown) != _initial_poses(self.doc.project)):
            frame = SceneFrame()  # a run's pose was shown: show the bones where the edit put them
        self.viewport.show_project(self.doc.project, frame)
        sel = self.viewport.scene.selected
        if sel is not None:
            self.viewport.scene.select(*sel)

    def _update_title(self) -> None:
        self.setWindowTitle(f"{self.doc.display_name}[*] — JointModeller")
        self.setWindowModified(self.doc.dirty)

    def open_project(self, path: str | os.PathLike) -> bool:
        try:
            doc = Document.open(path, recovery_dir=recovery_dir())
        except (JointModellerError, OSError, ValueError) as exc:
            self._error("Cannot open the project", str(exc))
            return False
        self.set_document(doc)
        self._add_recent(str(Path(path).resolve()))
        return True

    def new_project(self) -> bool:
        """Replace the project by an empty one (asks to save unsaved work first); False when the user
        cancels."""
        if not self._maybe_save():
            return False
        self.set_document(Document(new_project(), None, recovery_dir=recovery_dir()))
        self.statusBar().showMessage("New empty project: add bones with File › Import bone mesh…", 10000)
        return True

    def open_demo(self, knee: bool = False) -> bool:
        """Show the demo (the elbow; ``knee``: the knee demo) as a new, unsaved project (Save As keeps
        a copy); asks to save unsaved work first, like every path that replaces the project. False when
        the user cancels."""
        if not self._maybe_save():
            return False
        try:
            if knee:
                from jointmodeller.app.knee_demo import build_knee_demo_project

                project = build_knee_demo_project()
            else:
                project = demo_project()
        except ImportError as exc:
            self._error("The demo is not available", str(exc))
            return False
        self.set_document(Document(project, None, recovery_dir=recovery_dir()))
        return True

    def open_dialog(self) -> None:
        if not self._maybe_save():
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open project", "", PROJECT_FILTER)
        if path:
            self.open_project(path)

    def save(self) -> bool:
        if self.doc.path is None:
            return self.save_as()
        return self._save_to(None)

    def save_as(self, path: str | None = None) -> bool:
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, "Save project as", "", PROJECT_FILTER)
            if not path:
                return False
            if not path.endswith(".jmdb"):
                path += ".jmdb"
        return self._save_to(path)

    def _save_to(self, path: str | None) -> bool:
        """Save (always possible: problems are stored with the project and stay marked)."""
        try:
            target = self.doc.save(path)
        except (JointModellerError, OSError) as exc:
            self._error("Not saved", str(exc))
            return False
        self.undo_stack.setClean()
        self._add_recent(str(target.resolve()))
        n = len(self.doc.problems())
        if n:
            self.statusBar().showMessage(
                f"Saved {target} with {n} problem{'s' if n != 1 else ''} (marked in the tables); studies "
                "run once they are fixed.", 10000)
        else:
            self.statusBar().showMessage(f"Saved {target}", 5000)
        self._update_title()
        return True

    def autosave(self) -> Path | None:
        try:
            return self.doc.autosave()
        except (OSError, ValueError) as exc:  # a full disk must not take the session down
            self.statusBar().showMessage(f"Autosave failed: {exc}", 8000)
            return None

    def offer_recovery(self, ask: bool = True) -> bool:
        """Reopen the newest recovery file left by a crashed session (asks first when ``ask``)."""
        found = Document.find_recoveries(recovery_dir())
        if not found or not self._maybe_save():
            return False
        rec = found[0]
        if ask:
            name = rec.original_path or rec.title or "an unsaved project"
            answer = QMessageBox.question(self, "Recover unsaved work?",
                                          f"JointModeller did not close cleanly. Recover the unsaved changes "
                                          f"to {name} from {time.ctime(rec.saved_at)}?")
            if answer != QMessageBox.Yes:
                rec.file.unlink(missing_ok=True)
                return False
        try:
            doc = Document.recover(rec.file)
        except (JointModellerError, OSError, ValueError) as exc:
            self._error("Cannot recover", str(exc))
            return False
        self.set_document(doc)
        self.statusBar().showMessage("Recovered unsaved changes; save them to keep them.", 10000)
        return True

    def _add_recent(self, path: str) -> None:
        recent = [p for p in self.recent_files() if p != path]
        self.settings.setValue("recent_files", [path] + recent[: MAX_RECENT - 1])
        self._refresh_recent()

    def recent_files(self) -> list[str]:
        value = self.settings.value("recent_files", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def _refresh_recent(self) -> None:
        if self.recent_menu is None:
            return
        self.recent_menu.clear()
        for p in self.recent_files():
            self.recent_menu.addAction(p, lambda p=p: self._maybe_save() and self.open_project(p))
        self.recent_menu.setEnabled(bool(self.recent_files()))

    def _maybe_save(self) -> bool:
        if not self.doc.dirty or not self.confirm:
            return True
        answer = QMessageBox.question(self, "Unsaved changes", "Save the changes first?",
                                      QMessageBox.Save | QMessageBox.Discard | QMessageBox.Cancel)
        if answer == QMessageBox.Save:
            return self.save()
        return answer == QMessageBox.Discard

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._warm_up_started:
            self._warm_up_started = True
            QTimer.singleShot(WARM_UP_DELAY_MS, self, self._warm_up)  # cancelled if the window is deleted first

    def _warm_up(self) -> None:
        self.warm_up_thread = warm_up_imports()
        self._warm_up_fired = True

    def warm_up_finished(self) -> bool:
        """Whether the warm-up imports (begun WARM_UP_DELAY_MS after the first show) are done."""
        return self._warm_up_fired and (self.warm_up_thread is None or not self.warm_up_thread.is_alive())

    def closeEvent(self, event) -> None:
        if not self._maybe_save():
            event.ignore()
            return
        for runner in (self.runner, self.process_runner):
            if runner.running:
                runner.stop()
                runner.wait(10000)
        self._autosave.stop()
        self.settings.setValue("window_state", self.saveState())
        if self.confirm or not self.doc.dirty:
            self.doc.discard_recovery()
        self._unsubscribe()
        self._unsubscribe = lambda: None
        self.doc.set_undo_sink(None)
        if self.help_dialog is not None:  # a help, shortcuts or about text does not outlive its window
            self.help_dialog.close()
        self.viewport.close()
        event.accept()

    def _error(self, title: str, text: str) -> None:
        self.statusBar().showMessage(f"{title}: {text.splitlines()[0] if text else ''}", 10000)
        if self.confirm:
            QMessageBox.warning(self, title, text)

    # ------------------------------------------------------------------ mesh import and placement
    def import_mesh_dialog(self) -> None:
        dlg = MeshImportDialog([m.name for m in self.doc.project.masses], self)
        if dlg.exec() and dlg.mass() is not None:
            self.add_mass(dlg.mass())

    def import_mesh(self, path: str | os.PathLike, units: str = "mm", name: str | None = None,
                    density_kg_m3: float | None = None, fixed: bool = False) -> int:
        """Import a mesh file as a new mass row with computed properties; returns the row index."""
        dlg = MeshImportDialog([m.name for m in self.doc.project.masses], self, preview_3d=False)
        try:
            if name:
                dlg.name_edit.setText(name)
            if density_kg_m3:
                dlg.density.setValue(density_kg_m3)
            dlg.fixed.setChecked(fixed)
            dlg.set_file(str(path), units)
            mass = dlg.mass()
            if mass is None:
                raise ValueError(dlg.info.text())
        finally:
            dlg.deleteLater()
        return self.add_mass(mass)

    def add_mass(self, mass) -> int:
        i = self.doc.add_row("masses", mass)
        self.tabs.setCurrentWidget(self.panels["masses"])
        self.panels["masses"].select_row(i)
        self.viewport.scene.select("masses", i, render=False)
        return i

    def _attachment_placed(self, att: Attachment) -> None:
        i = self.doc.add_attachment(att)
        att = self.doc.project.attachments[i]
        self.tabs.setCurrentWidget(self.panels["attachments"])
        self.panels["attachments"].select_row(i)
        self._select("attachments", i)
        self.statusBar().showMessage(
            f"Added {att.name}: {att.body_a} → {att.body_b}, unloaded length "
            f"{att.initial_length_m * 1000:.1f} mm (editable in the table).", 8000)

    # ------------------------------------------------------------------ selection sync
    def _table_selected(self, section: str, row: int) -> None:
        if self._suppress_sync:
            return
        self._select(section, row)

    def _select(self, section: str, row: int) -> None:
        if section in ("masses", "attachments"):
            self.viewport.scene.select(section, row)
        else:
            self.viewport.scene.select(None, None)
        self.viewport.selected_attachment = row if section == "attachments" else None
        if section == "attachments" and 0 <= row < len(self.doc.project.attachments):
            from jointmodeller.app.picking import tissue_readout

            self.statusBar().showMessage(tissue_readout(self.doc.project, row, self.viewport.current_poses()))

    def _viewport_picked(self, mass: str) -> None:
        try:
            i = self.doc.project.mass_index(mass)
        except KeyError:
            return
        self._suppress_sync = True
        try:
            self.tabs.setCurrentWidget(self.panels["masses"])
            self.panels["masses"].select_row(i)
        finally:
            self._suppress_sync = False
        self._select("masses", i)

    # ------------------------------------------------------------------ studies
    def study_function(self, study: str, t_end: float | None = None):
        """``fn(progress, cancel) -> RunRecord`` running ``study`` on a snapshot of the project."""
        options = self.run_panel.dynamics_options()
        if t_end is not None:
            options["t_end"] = float(t_end)
        return study_function(study, self.doc.project, **options)

    @property
    def study_running(self) -> bool:
        return self.runner.running or self.process_runner.running

    def start_study(self, study: str | None = None, fn=None) -> bool:
        """Start a study off the GUI thread: the chosen app study in its own process (or thread), or
        ``fn(progress, cancel)`` in a worker thread."""
        if self.study_running:
            return False
        if fn is None:
            study = study or self.run_panel.study.currentText()
            if study not in self.studies:
                self.run_panel.status.setText(f"The {study or 'chosen'} study is not available.")
                return False
            problems = self.doc.problems()
            if problems:
                self.run_panel.status.setText(f"Fix the marked problems first ({len(problems)}): {problems[0]}")
                return False
            if not self.study_in_process:
                fn = self.study_function(study)
        self.run_panel.progress.setValue(0)
        self.run_panel.status.setText(self._running_text(study))
        self._running_status = self.run_panel.status.text()
        self._run_clock = {"started": time.perf_counter(), "paused_s": 0.0, "paused_at": None, "fraction": 0.0,
                           "t_end": self.run_panel.dynamics_options()["t_end"] if study == "dynamics" else None}
        self._clock_timer.start()
        self.run_panel.time_label.setText("t = –")  # not the last run's time
        self._show_running_in_run_box(study or "study")
        self.plots.preload()  # the run's plots are drawn when it ends
        self._live_project = self.doc.project
        if fn is None:
            self._active = self.process_runner
            self.process_runner.start(study, self.doc.project, self.run_panel.dynamics_options())
        else:
            self._active = self.runner
            self.runner.start(fn)
        return True

    RUNNING_ITEM = "▶ {study} (running…)"

    def _show_running_in_run_box(self, study: str) -> None:
        """The run box names the study that runs (not the last stored run) until it ends."""
        box = self.run_panel.runs
        box.blockSignals(True)
        box.addItem(self.RUNNING_ITEM.format(study=study), None)
        box.setCurrentIndex(box.count() - 1)
        box.blockSignals(False)

    def _pause_toggled(self, on: bool) -> None:
        """Pause or resume the running study; the panel shows the paused state."""
        rp = self.run_panel
        clock = getattr(self, "_run_clock", None)
        now = time.perf_counter()
        if clock is not None and on and clock["paused_at"] is None:
            clock["paused_at"] = now
        elif clock is not None and not on and clock["paused_at"] is not None:
            clock["paused_s"] += now - clock["paused_at"]
            clock["paused_at"] = None
        if on:
            self._active.pause()
            rp.pause.setText("Resume")
            rp.progress.setFormat("%p% — paused")
            rp.status.setText("Paused: Resume continues the study, Stop ends it keeping what was computed.")
        else:
            self._active.resume()
            rp.pause.setText("Pause")
            rp.progress.setFormat("%p%")
            if rp.status.text().startswith("Paused"):
                rp.status.setText(getattr(self, "_running_status", ""))

    def _running_text(self, study: str | None) -> str:
        """What the status line says while ``study`` runs (dynamics: the integrator and accuracy used)."""
        if study != "dynamics":
            return f"Running {study or 'study'}…"
        from jointmodeller.app.studies import choose_method

        opts = self.run_panel.dynamics_options()
        method = choose_method(self.doc.project, opts["method"])
        how = "chosen automatically: " if opts["method"] == "auto" else ""
        return f"Running dynamics to {opts['t_end']:g} s ({how}{method}, accuracy 1e-{int(opts['digits'])})…"

    def _progress(self, fraction: float) -> None:
        """Move the progress bar, at most PROGRESS_BAR_INTERVAL_S apart (each repaint of a widget
        beside the 3D view costs a recomposition of the window) and always to the end."""
        now = time.perf_counter()
        f = min(max(fraction, 0.0), 1.0)
        if f < 1.0 and now - self._progress_at < PROGRESS_BAR_INTERVAL_S:
            return
        self._progress_at = now
        self.run_panel.progress.setValue(int(round(1000 * f)))
        if getattr(self, "_run_clock", None) is not None:
            self._run_clock["fraction"] = f
            self._show_clock()

    def _show_clock(self) -> None:
        """The progress bar's text while a study runs: done, elapsed (pauses not counted), an
        estimate of the time left from the rate so far, and for dynamics the simulated seconds per
        wall second. Refreshed by each progress report and once a second."""
        clock = getattr(self, "_run_clock", None)
        rp = self.run_panel
        if clock is None or not self.study_running or rp.pause.isChecked():
            return
        now = time.perf_counter()
        elapsed = max(now - clock["started"] - clock["paused_s"], 1e-9)
        f = clock["fraction"]
        parts = ["%p%", f"{_duration(elapsed)} elapsed"]
        if 0.005 <= f < 1.0:
            parts.append(f"~{_duration(elapsed * (1.0 - f) / f)} left")
        if clock["t_end"] and f > 0.0:
            parts.append(f"{f * clock['t_end'] / elapsed:.3g} simulated s per s")
        rp.progress.setFormat(" · ".join(parts))

    def _live_sample(self, sample) -> None:
        """Queue a live sample or a batch of streamed states: the viewport plays them at a steady rate
        and converts only the states it draws."""
        project = self._live_project
        self.viewport.queue_live(split_batch(sample), lambda s: frame_from_sample(project, s))

    def _live_frame_shown(self, t: float) -> None:
        now = time.perf_counter()
        if now - self._time_label_at >= TIME_LABEL_INTERVAL_S and np.isfinite(t):
            self._time_label_at = now
            self.run_panel.time_label.setText(f"t = {t:.4g} s")

    def _run_finished(self, run) -> None:
        self.runFinished.emit(run)
        if not isinstance(run, RunRecord):
            self.run_panel.status.setText("The study returned no run record.")
            self._refresh_runs()  # the "running" entry goes
            return
        if run.status == "completed":
            self.run_panel.progress.setValue(1000)
        self.doc.add_run(run)
        self.run_panel.status.setText(f"{run.study}: {run.status}. {run.message}".strip())

    def _run_failed(self, message: str) -> None:
        self.run_panel.status.setText(f"The study failed: {message.splitlines()[0]}")
        self._refresh_runs()  # the "running" entry goes

    def _refresh_runs(self, select_last: bool = False) -> None:
        box = self.run_panel.runs
        box.blockSignals(True)
        box.clear()
        for r in self.doc.list_runs():
            box.addItem(f"#{r.id} {r.study} ({r.status}) {r.created}", r.id)
        box.blockSignals(False)
        if select_last and box.count():
            box.setCurrentIndex(box.count() - 1)
            self._run_chosen(box.count() - 1)

    def _run_chosen(self, index: int) -> None:
        rid = self.run_panel.runs.itemData(index)
        if rid is None:
            return
        self.show_run(self.doc.load_run(rid))

    def show_run(self, run: RunRecord) -> None:
        """Replay a stored run: plots and the time slider over its samples."""
        self.shown_run = run
        self.viewport.scene.clear_contacts()
        self.plots.show_run(self._with_measured(run), defer=True)
        self.frames = frames_from_run(self.doc.project, run)
        s = self.run_panel.slider
        s.blockSignals(True)
        if self.frames is not None and len(self.frames) > 0:
            forces = self.frames.tissue_force_N
            if forces is not None and np.isfinite(forces).any():
                self.viewport.scene.force_scale_N = max(float(np.nanmax(forces)), 1.0)
            s.setRange(0, len(self.frames) - 1)
            s.setEnabled(True)
            s.setValue(len(self.frames) - 1)
            s.blockSignals(False)
            self.show_sample(len(self.frames) - 1)
        else:
            s.setEnabled(False)
            s.blockSignals(False)

    def _with_measured(self, run: RunRecord) -> RunRecord:
        """A laxity run with its experiment's measured points as series (measured_load,
        measured_value, in the units of the run's measure) so the plot draws them over the curve."""
        if run.study != "laxity" or "measured_load" in run.series:
            return run
        name = run.parameters.get("experiment")
        exp = next((e for e in self.doc.project.experiments if e.name == name), None)
        if exp is None or not exp.measured:
            return run
        import dataclasses

        series = dict(run.series, measured_load=np.array([p.load for p in exp.measured], float),
                      measured_value=np.array([p.value for p in exp.measured], float))
        return dataclasses.replace(run, series=series)

    def show_sample(self, i: int) -> None:
        if self.frames is None:
            return
        frame = self.frames.frame(i)
        self.viewport.show_frame(frame, now=True)
        self.plots.set_time(frame.time or 0.0)
        self.run_panel.time_label.setText(self.frames.label(i))

    # ------------------------------------------------------------------ export
    def export_plot_dialog(self, path: str | None = None) -> str | None:
        """Save the shown run's plots as PNG, SVG or CSV (by the suffix; asks for the file when
        ``path`` is None). Returns the path written, or None."""
        if self.plots.run is None:
            self.statusBar().showMessage("No run is shown: run a study or choose a stored run first.", 8000)
            return None
        if path is None:
            path, chosen = QFileDialog.getSaveFileName(
                self, "Export plot", f"{self.plots.run.study}-plot.png",
                "PNG image (*.png);;SVG drawing (*.svg);;CSV data (*.csv)")
            if not path:
                return None
            if not Path(path).suffix:
                path += "." + chosen.split("*.")[-1].rstrip(")")
        try:
            written = self.plots.export(path)
        except (OSError, ValueError) as exc:
            self._error("Plot not exported", str(exc))
            return None
        self.statusBar().showMessage(f"Exported the plot to {written}", 6000)
        return written

    def export_run_dialog(self, path: str | None = None) -> str | None:
        """Save every series of the shown run as a CSV table (asks for the file when ``path`` is
        None). Returns the path written, or None."""
        from jointmodeller.app.export import write_run_csv

        run = self.shown_run
        if run is None:
            self.statusBar().showMessage("No run is shown: run a study or choose a stored run first.", 8000)
            return None
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, "Export run as CSV", f"{run.study}-run.csv",
                                                  "CSV tables (*.csv)")
            if not path:
                return None
            if not path.lower().endswith(".csv"):
                path += ".csv"
        try:
            written = write_run_csv(run, path)
        except OSError as exc:
            self._error("Run not exported", str(exc))
            return None
        self.statusBar().showMessage(f"Exported run {run.study} to {written}", 6000)
        return str(written)

    # ------------------------------------------------------------------ screenshots
    def screenshot_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export screenshot", "view.png", "PNG images (*.png)")
        if path:
            self.viewport.screenshot(path)

    def grab_window(self, path: str | os.PathLike) -> bool:
        """Save a picture of the whole main window (panels and the 3D view)."""
        self.viewport.plotter.render()
        QApplication.processEvents()
        return self.grab().save(str(path))


def launch(project_path: str | None = None, argv: list[str] | None = None) -> int:
    """Open the main window with a project (or the demo when None) and run the event loop."""
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv[:1])
    app.setOrganizationName(ORG)
    app.setApplicationName(APP)
    win = MainWindow()
    if project_path is not None:
        if not win.open_project(project_path):
            return 1
    elif not win.offer_recovery(ask=True):
        win.open_demo()
    win.show()
    return int(app.exec())


__all__ = ["MainWindow", "QtCommand", "RunPanel", "launch", "recovery_dir"]
