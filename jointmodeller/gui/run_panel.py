"""The run panel: study choice, start / pause / stop, progress, the studies' options and limits, the
stored runs and the replay slider. Its owner (:class:`jointmodeller.gui.study_control.StudyController`)
connects the buttons; the panel itself only says what is chosen."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

DYNAMICS_METHODS = (
    ("Auto", "auto"), ("DOPRI5 (explicit, projects onto constraints)", "DOPRI5"), ("DOP853 (explicit)", "DOP853"),
    ("BDF (implicit)", "BDF"), ("Radau (implicit)", "Radau"), ("RK45 (explicit)", "RK45"),
    ("LSODA (switching)", "LSODA"),
)
"""Integrator choices of the run panel: (label, app.studies method name)."""


CONTACT_GEOMETRIES = (("Auto", "auto"), ("Distance fields", "field"), ("Exact meshes", "exact"))
"""Contact geometry choices of the run panel (dynamics and laxity): (label, app.studies geometry name)."""


INTERACTIVE_DIGITS = 4
"""The run panel's dynamics accuracy, α = 10^-4 (a relative error of ~0.01 %, seed 003 §3.3, where
real-time simulation asks 1-10 %): a study started from the window is watched live. On the demo
elbow it tracks the 6-digit trajectory (the CLI's default) to ~1 µm over its first 0.1 s at 3.4x the
speed (17.5 s against 5.2 s of wall time, docs/benchmarks.md); more digits are one spin box away."""


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
        self.method.setToolTip("Integrator of the dynamics study. Auto: when the project has contact pairs, "
                               "whose stiff cartilage springs bound an explicit method's step, Radau (implicit, "
                               "L-stable) up to 4 digits and BDF (implicit) beyond; DOP853 (explicit, 8th order) "
                               "otherwise.")
        self.digits = QSpinBox(self)
        self.digits.setRange(3, 12)
        self.digits.setValue(INTERACTIVE_DIGITS)
        self.digits.setPrefix("1e-")
        self.digits.setToolTip("Accuracy of the dynamics study: relative tolerance 10^-digits (1e-4: about "
                               "0.01 % relative error; more digits cost more steps)")
        self.contact_geometry = QComboBox(self)  # dynamics and laxity: how contact points are found
        self.contact_geometry.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        for label, geometry in CONTACT_GEOMETRIES:
            self.contact_geometry.addItem(label, geometry)
        self.contact_geometry.setToolTip(
            "How the dynamics and laxity studies find cartilage contact. Distance fields: each vertex's "
            "closest faces come from the other surface's signed distance field (built once per mesh and "
            "cached) and its depth is measured on them as on the exact meshes: the demo's dynamics ~3x and "
            "its laxity sweep ~3x faster, its trajectory within the integrator's tolerance of the exact "
            "meshes' (docs/sdf.md). Exact meshes: the closest point among the faces round each vertex's "
            "nearest surface vertices, the reference. Auto (default): distance fields for dynamics and for "
            "the laxity sweep of free bones, the exact meshes otherwise (the laxity sweep of a project with "
            "joints runs on the exact meshes only).")
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
        # every study's limits and the contact geometry (dynamics and laxity), on a row of their own: on the
        # dynamics row the contact choice made the panel's minimum 898 px instead of 674 px, which at
        # 1200x800 left the tables' dock 296 px instead of 520 px (and drew a third more 3D-view pixels)
        limits = QHBoxLayout()
        for w in (QLabel("Time limit"), self.max_wall, QLabel("Tolerance"), self.tolerance, QLabel("Contact"),
                  self.contact_geometry):
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
        """End time, integrator and accuracy belong to the dynamics study only, the contact geometry to
        dynamics and laxity, the residual tolerance to the static ones; every study but muscle paths
        takes a time limit."""
        for w in (self.t_end, self.method, self.digits):
            w.setEnabled(study == "dynamics")
        self.contact_geometry.setEnabled(study in ("dynamics", "laxity"))
        self.max_wall.setEnabled(study in ("dynamics", "equilibrium", "laxity"))
        self.tolerance.setEnabled(study in ("equilibrium", "laxity"))

    def dynamics_options(self) -> dict:
        """The studies' options as chosen: t_end [s], method ("auto" or a name), digits (dynamics);
        contact_geometry (dynamics and laxity); max_wall_s unless left at "default"; the residual
        tolerance unless "default", as equilibrium's force_tol and laxity's tol_N (each study takes the
        options it knows)."""
        options = {"t_end": float(self.t_end.value()), "method": str(self.method.currentData()),
                   "digits": float(self.digits.value()), "contact_geometry": str(self.contact_geometry.currentData())}
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


__all__ = ["CONTACT_GEOMETRIES", "DYNAMICS_METHODS", "RESIDUAL_TOLERANCES", "RunPanel"]
