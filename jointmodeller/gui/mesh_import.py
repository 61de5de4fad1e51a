"""Mesh import dialog: choose a file and its units, preview the surface and its computed mass
properties, and get a mass row to add."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
)

from jointmodeller.app.columns import unique_name
from jointmodeller.app.masses import DEFAULT_BONE_DENSITY_KG_M3, import_mass, likely_units
from jointmodeller.io.meshes import read_mesh
from jointmodeller.model.errors import MeshError
from jointmodeller.model.specs import Mass

MESH_FILTER = "Surface meshes (*.stl *.obj *.ply *.vtp *.vtk *.wrl *.off);;All files (*)"


class MeshImportDialog(QDialog):
    """File, units, name, density and fixed flag, with a preview; ``mass()`` is the row to add."""

    def __init__(self, taken_names: list[str] | tuple[str, ...] = (), parent=None, preview_3d: bool = True):
        super().__init__(parent)
        self.setWindowTitle("Import bone mesh")
        self.taken = list(taken_names)
        self.mesh = None
        self._mass: Mass | None = None
        self.imported = None
        """app.masses.ImportedMass of the current file and settings (how the properties were found)."""
        self.units_note = ""
        self.path_edit = QLineEdit(self)
        browse = QPushButton("Browse…", self)
        browse.clicked.connect(self.browse)
        row = QHBoxLayout()
        row.addWidget(self.path_edit, 1)
        row.addWidget(browse)
        self.units = QComboBox(self)
        self.units.addItems(["mm", "m"])
        self.name_edit = QLineEdit(self)
        self.density = QDoubleSpinBox(self)
        self.density.setRange(1.0, 30000.0)
        self.density.setDecimals(0)
        self.density.setValue(DEFAULT_BONE_DENSITY_KG_M3)
        self.density.setSuffix(" kg/m³")
        self.fixed = QCheckBox("fixed (does not move)", self)
        self.info = QLabel("Choose a mesh file.", self)
        self.info.setWordWrap(True)
        form = QFormLayout()
        form.addRow("File", row)
        form.addRow("Units of the file", self.units)
        form.addRow("Mass name", self.name_edit)
        form.addRow("Density", self.density)
        form.addRow("", self.fixed)
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel, self)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        # what was read and how its mass properties were found, above the preview: the notes on an
        # open mesh run to several lines and must not be squeezed by the 3D view
        lay.addWidget(self.info)
        self.preview = None
        if preview_3d:
            from pyvistaqt import QtInteractor

            self.preview = QtInteractor(self, auto_update=False)
            self.preview.setMinimumSize(320, 220)
            lay.addWidget(self.preview.interactor, 1)
        lay.addWidget(self.buttons)
        self.resize(640, 720 if preview_3d else 360)
        self.path_edit.editingFinished.connect(self.load)
        self.units.currentTextChanged.connect(lambda _: self.load())
        self.density.valueChanged.connect(lambda _: self._update_mass())
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(False)

    def browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import bone mesh", "", MESH_FILTER)
        if path:
            self.set_file(path)

    def set_file(self, path: str, units: str | None = None) -> None:
        """Read ``path`` in ``units`` ("mm" or "m"); None: millimetres unless the mesh is then too
        small to be a bone, when the file is taken to be in metres (and the dialog says so)."""
        self.units_note = ""
        if units is not None:
            self.units.setCurrentText(units)
        else:
            self.units.blockSignals(True)
            self.units.setCurrentText("mm")
            self.units.blockSignals(False)
        self.path_edit.setText(str(path))
        self.load()
        if units is None and self.mesh is not None and likely_units(self.mesh) == "m":
            self.units_note = "Units set to m: in millimetres the mesh would be under 2 mm across."
            self.units.setCurrentText("m")  # reloads

    def load(self) -> None:
        """Read the file in the chosen units and refresh the preview."""
        path = self.path_edit.text().strip()
        self.mesh = None
        self._mass = None
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(False)
        if not path:
            return
        try:
            self.mesh = read_mesh(path, self.units.currentText())
        except (MeshError, OSError, ValueError) as exc:
            self.info.setText(f"Cannot import: {exc}")
            return
        if not self.name_edit.text().strip():
            self.name_edit.setText(unique_name(self.taken, Path(path).stem))
        self._update_mass()
        if self.preview is not None:
            import pyvista as pv

            faces = np.hstack([np.full((self.mesh.n_faces, 1), 3), self.mesh.faces]).ravel()
            self.preview.clear()
            self.preview.add_mesh(pv.PolyData(np.array(self.mesh.vertices_L), faces), color="#e8dcc4",
                                  smooth_shading=True, render=False)
            self.preview.reset_camera()
            self.preview.render()

    def _update_mass(self) -> None:
        if self.mesh is None:
            return
        try:
            self.imported = import_mass(self.name_edit.text().strip() or "bone", self.mesh,
                                        density_kg_m3=self.density.value(), fixed=self.fixed.isChecked())
        except (MeshError, ValueError) as exc:
            self.info.setText(f"Cannot compute mass properties: {exc}")
            self._mass = None
            self.imported = None
            return
        self._mass = self.imported.mass
        m, v = self._mass, self.mesh.vertices_L
        size = np.ptp(v, axis=0) * 1000
        moments = np.linalg.eigvalsh(np.asarray(m.inertia_L))
        notes = "\n".join(n for n in (self.units_note, *self.mesh.warnings, *self.imported.warnings) if n)
        self.info.setText(
            f"{self.mesh.n_vertices} vertices, {self.mesh.n_faces} faces; size {size[0]:.1f} × {size[1]:.1f} × "
            f"{size[2]:.1f} mm\nmass {m.mass_kg * 1000:.4g} g, centre of mass "
            f"({', '.join(f'{x * 1000:.1f}' for x in m.com_L)}) mm; principal moments "
            f"{', '.join(f'{x:.3g}' for x in moments)} kg·m²\n"
            f"Mass properties from the {self.imported.method_text}" + (f"\n{notes}" if notes else ""))
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(True)

    def mass(self) -> Mass | None:
        """The mass row for the chosen file and settings (None until a file is read)."""
        if self.mesh is None:
            return None
        self._update_mass()
        return self._mass

    def done(self, r: int) -> None:
        if self.preview is not None:
            from jointmodeller.gui.interactor import close_interactor

            close_interactor(self.preview)
        super().done(r)


__all__ = ["MeshImportDialog"]
