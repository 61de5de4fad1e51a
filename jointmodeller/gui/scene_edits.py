"""What the 3D view and the tables do to each other in the main window: a row selected in a table is
highlighted in the view and a bone clicked in the view selects its row; bones imported from meshes,
tissues and loads placed with clicks, tissue ends and bones dragged in the view become document
edits (one undo step each) with their rows selected."""

from __future__ import annotations

import os
from dataclasses import replace

from PySide6.QtWidgets import QMainWindow

from jointmodeller.model.specs import Attachment


def _mesh_import_dialog(*args, **kw):
    """The mesh import dialog, imported with its first use (mesh readers, mass properties: not needed
    to show the main window, issue 18)."""
    from jointmodeller.gui.mesh_import import MeshImportDialog

    return MeshImportDialog(*args, **kw)


class SceneEdits:
    """The link between one main window's viewport and its table panels (``doc``, ``viewport``,
    ``tabs``, ``panels``); connects the viewport's picking signals and the panels' row selection."""

    def __init__(self, window: QMainWindow):
        self.window = window
        self._suppress_sync = False
        vp = window.viewport.picking
        vp.massPicked.connect(self.viewport_picked)
        vp.attachmentPlaced.connect(self.attachment_placed)
        vp.forcePlaced.connect(self.force_placed)
        vp.boneMoved.connect(self.bone_moved)
        vp.attachmentMoved.connect(lambda i, att: window.doc.set_row("attachments", i, att, "Move tissue end"))
        vp.message.connect(lambda m: window.statusBar().showMessage(m))
        for panel in window.panels.values():
            panel.rowSelected.connect(self.table_selected)

    def _status(self, text: str, ms: int = 8000) -> None:
        self.window.statusBar().showMessage(text, ms)

    def _show_row(self, section: str, i: int) -> None:
        """Bring the section's table to the front with row ``i`` selected."""
        self.window.tabs.setCurrentWidget(self.window.panels[section])
        self.window.panels[section].select_row(i)

    # ------------------------------------------------------------------ selection sync
    def table_selected(self, section: str, row: int) -> None:
        if self._suppress_sync:
            return
        self.select(section, row)

    def select(self, section: str, row: int) -> None:
        """Show a table row's selection in the view (bones and tissues); a tissue's length and strain
        go to the status bar."""
        w = self.window
        if section in ("masses", "attachments"):
            w.viewport.select(section, row)
        else:
            w.viewport.select(None, None)
        w.viewport.picking.selected_attachment = row if section == "attachments" else None
        if section == "attachments" and 0 <= row < len(w.doc.project.attachments):
            from jointmodeller.app.picking import tissue_readout

            w.statusBar().showMessage(tissue_readout(w.doc.project, row, w.viewport.current_poses()))

    def viewport_picked(self, mass: str) -> None:
        try:
            i = self.window.doc.project.mass_index(mass)
        except KeyError:
            return
        self._suppress_sync = True
        try:
            self._show_row("masses", i)
        finally:
            self._suppress_sync = False
        self.select("masses", i)

    # ------------------------------------------------------------------ edits made in the view
    def bone_moved(self, mass: str, delta_G) -> None:
        """A bone dragged in the view: its initial position moves by delta_G (one undo step)."""
        doc = self.window.doc
        try:
            i = doc.project.mass_index(mass)
        except KeyError:
            return
        m = doc.project.masses[i]
        moved = replace(m, position_G=tuple(float(p + d) for p, d in zip(m.position_G, delta_G)))
        doc.set_row("masses", i, moved, f"Move {mass}")
        d = ", ".join(f"{x * 1000:.1f}" for x in delta_G)
        self._status(f"Moved {mass} by ({d}) mm; Undo takes it back.")

    def force_placed(self, force) -> None:
        i = self.window.doc.add_row("forces", force)
        self._show_row("forces", i)
        p = ", ".join(f"{x * 1000:.1f}" for x in force.point_L)
        self._status(f"Added {force.name} on {force.body} at ({p}) mm: {force.magnitude_N:g} N along "
                     "−z (editable in the Forces table).")

    def attachment_placed(self, att: Attachment) -> None:
        doc = self.window.doc
        i = doc.add_attachment(att)
        att = doc.project.attachments[i]
        self._show_row("attachments", i)
        self.select("attachments", i)
        self._status(f"Added {att.name}: {att.body_a} → {att.body_b}, unloaded length "
                     f"{att.initial_length_m * 1000:.1f} mm (editable in the table).")

    # ------------------------------------------------------------------ mesh import
    def import_mesh_dialog(self) -> None:
        dlg = _mesh_import_dialog([m.name for m in self.window.doc.project.masses], self.window)
        if dlg.exec() and dlg.mass() is not None:
            self.add_mass(dlg.mass())

    def import_mesh(self, path: str | os.PathLike, units: str = "mm", name: str | None = None,
                    density_kg_m3: float | None = None, fixed: bool = False) -> int:
        """Import a mesh file as a new mass row with computed properties; returns the row index."""
        dlg = _mesh_import_dialog([m.name for m in self.window.doc.project.masses], self.window, preview_3d=False)
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
        i = self.window.doc.add_row("masses", mass)
        self._show_row("masses", i)
        self.window.viewport.select("masses", i, render=False)
        return i


__all__ = ["SceneEdits"]
