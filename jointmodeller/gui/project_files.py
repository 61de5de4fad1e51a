"""The main window's project files: new, open (a file, a recent one, the demos), save and save as,
autosave and crash recovery. Every path that replaces the project asks to save unsaved work first
(:meth:`ProjectFiles.maybe_save`). Where the per-user folders are is decided Qt-free in
:mod:`jointmodeller.app.recovery` and :mod:`jointmodeller.app.demo`; Qt only says where the platform
keeps application data and caches."""

from __future__ import annotations

import os
import time
from pathlib import Path

from PySide6.QtCore import QStandardPaths
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMessageBox

from jointmodeller.app import recovery
from jointmodeller.app.columns import new_project
from jointmodeller.app.document import Document
from jointmodeller.model.errors import JointModellerError
from jointmodeller.model.specs import Project

MAX_RECENT = 8
PROJECT_FILTER = "JointModeller projects (*.jmdb);;All files (*)"


def recovery_dir() -> Path:
    """Per-user folder for autosaves (JOINTMODELLER_RECOVERY_DIR overrides it, e.g. in tests)."""
    return recovery.recovery_dir(QStandardPaths.writableLocation(QStandardPaths.AppDataLocation))


def demo_cache_dir() -> Path:
    """The per-user cache folder (JOINTMODELLER_CACHE overrides it, e.g. in tests)."""
    from jointmodeller.app.demo_cache import demo_cache_dir as cache_dir

    return cache_dir(QStandardPaths.writableLocation(QStandardPaths.CacheLocation))


def demo_project() -> Project:
    """The demo project, from the per-user cache when it is there (app.demo_cache.cached_demo_project)."""
    from jointmodeller.app.demo_cache import demo_project as cached_demo

    return cached_demo(QStandardPaths.writableLocation(QStandardPaths.CacheLocation))


class ProjectFiles:
    """New, open, save, recent files, autosave and recovery of one main window (its ``doc``,
    ``settings``, ``undo_stack`` and status bar; ``set_document`` shows a replaced project)."""

    def __init__(self, window: QMainWindow):
        self.window = window
        self.recent_menu = None
        """File › Open recent (set by gui.actions.build_actions)."""

    def _status(self, text: str, ms: int) -> None:
        self.window.statusBar().showMessage(text, ms)

    def open_project(self, path: str | os.PathLike) -> bool:
        try:
            doc = Document.open(path, recovery_dir=recovery_dir())
        except (JointModellerError, OSError, ValueError) as exc:
            self.window.show_error("Cannot open the project", str(exc))
            return False
        self.window.set_document(doc)
        self.add_recent(str(Path(path).resolve()))
        return True

    def new_project(self) -> bool:
        """Replace the project by an empty one (asks to save unsaved work first); False when the user
        cancels."""
        if not self.maybe_save():
            return False
        self.window.set_document(Document(new_project(), None, recovery_dir=recovery_dir()))
        self._status("New empty project: add bones with File › Import bone mesh…", 10000)
        return True

    def open_demo(self, knee: bool = False) -> bool:
        """Show the demo (the elbow; ``knee``: the knee demo) as a new, unsaved project (Save As keeps
        a copy); asks to save unsaved work first, like every path that replaces the project. False when
        the user cancels."""
        if not self.maybe_save():
            return False
        try:
            if knee:
                from jointmodeller.app.knee_demo import build_knee_demo_project

                project = build_knee_demo_project()
            else:
                project = demo_project()
        except ImportError as exc:
            self.window.show_error("The demo is not available", str(exc))
            return False
        self.window.set_document(Document(project, None, recovery_dir=recovery_dir()))
        return True

    def open_dialog(self) -> None:
        if not self.maybe_save():
            return
        path, _ = QFileDialog.getOpenFileName(self.window, "Open project", "", PROJECT_FILTER)
        if path:
            self.open_project(path)

    def save(self) -> bool:
        if self.window.doc.path is None:
            return self.save_as()
        return self.save_to(None)

    def save_as(self, path: str | None = None) -> bool:
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self.window, "Save project as", "", PROJECT_FILTER)
            if not path:
                return False
            if not path.endswith(".jmdb"):
                path += ".jmdb"
        return self.save_to(path)

    def save_to(self, path: str | None) -> bool:
        """Save (always possible: problems are stored with the project and stay marked)."""
        doc = self.window.doc
        try:
            target = doc.save(path)
        except (JointModellerError, OSError) as exc:
            self.window.show_error("Not saved", str(exc))
            return False
        self.window.undo_stack.setClean()
        self.add_recent(str(target.resolve()))
        n = len(doc.problems())
        if n:
            self._status(f"Saved {target} with {n} problem{'s' if n != 1 else ''} (marked in the tables); studies "
                         "run once they are fixed.", 10000)
        else:
            self._status(f"Saved {target}", 5000)
        self.window.update_title()
        return True

    def autosave(self) -> Path | None:
        try:
            return self.window.doc.recovery.autosave()
        except (OSError, ValueError) as exc:  # a full disk must not take the session down
            self._status(f"Autosave failed: {exc}", 8000)
            return None

    def offer_recovery(self, ask: bool = True) -> bool:
        """Reopen the newest recovery file left by a crashed session (asks first when ``ask``)."""
        found = recovery.find_recoveries(recovery_dir())
        if not found or not self.maybe_save():
            return False
        rec = found[0]
        if ask:
            name = rec.original_path or rec.title or "an unsaved project"
            answer = QMessageBox.question(self.window, "Recover unsaved work?",
                                          f"JointModeller did not close cleanly. Recover the unsaved changes "
                                          f"to {name} from {time.ctime(rec.saved_at)}?")
            if answer != QMessageBox.Yes:
                rec.file.unlink(missing_ok=True)
                return False
        try:
            doc = recovery.recover(rec.file)
        except (JointModellerError, OSError, ValueError) as exc:
            self.window.show_error("Cannot recover", str(exc))
            return False
        self.window.set_document(doc)
        self._status("Recovered unsaved changes; save them to keep them.", 10000)
        return True

    def add_recent(self, path: str) -> None:
        recent = [p for p in self.recent_files() if p != path]
        self.window.settings.setValue("recent_files", [path] + recent[: MAX_RECENT - 1])
        self.refresh_recent()

    def recent_files(self) -> list[str]:
        value = self.window.settings.value("recent_files", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def refresh_recent(self) -> None:
        if self.recent_menu is None:
            return
        self.recent_menu.clear()
        for p in self.recent_files():
            self.recent_menu.addAction(p, lambda p=p: self.maybe_save() and self.open_project(p))
        self.recent_menu.setEnabled(bool(self.recent_files()))

    def maybe_save(self) -> bool:
        """True when the project may be replaced: it is saved, the user saved or discarded it, or the
        window does not ask (``confirm`` off); False when the user cancels."""
        if not self.window.doc.dirty or not self.window.confirm:
            return True
        answer = QMessageBox.question(self.window, "Unsaved changes", "Save the changes first?",
                                      QMessageBox.Save | QMessageBox.Discard | QMessageBox.Cancel)
        if answer == QMessageBox.Save:
            return self.save()
        return answer == QMessageBox.Discard


__all__ = ["MAX_RECENT", "PROJECT_FILTER", "ProjectFiles", "demo_cache_dir", "demo_project", "recovery_dir"]
