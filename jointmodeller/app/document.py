"""The open project as a Qt-free document: path, dirty flag, change events, undoable row edits (one
step each, :mod:`jointmodeller.app.commands`) and per-cell validation messages (cells parsed by
:mod:`jointmodeller.app.columns`). A document owns one helper per further job: its joint-coordinate
edits (``doc.coordinates``, :mod:`jointmodeller.app.coordinate_edits`), its stored runs (``doc.runs``,
:mod:`jointmodeller.app.run_store`) and its autosave for crash recovery (``doc.recovery``,
:mod:`jointmodeller.app.recovery`).

The GUI binds its views to a :class:`Document` through plain callbacks and wraps each Command in a
QUndoStack entry; tests and scripts use the document's own UndoHistory.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from jointmodeller.app.columns import (
    COLUMNS,
    EXTRA_COLUMNS,
    INFO,
    LABEL_TO_SECTION,
    SECTION_LABELS,
    CellError,
    column,
    default_row,
    section_rows,
    unique_name,
    with_section_rows,
)
from jointmodeller.app.commands import (
    Command,
    InsertRow,
    RemoveRow,
    ReplaceProject,
    SetRow,
    UndoHistory,
)
from jointmodeller.app.coordinate_edits import CoordinateEdits
from jointmodeller.app.recovery import Recovery
from jointmodeller.app.run_store import StoredRuns
from jointmodeller.model.errors import Problem
from jointmodeller.model.specs import (
    Attachment,
    Project,
    SpringType,
)
from jointmodeller.model.validation import project_problems


# ------------------------------------------------------------------------------------------------
# Events
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DocEvent:
    """What changed: kind is "rows" (section, index: one row changed), "inserted"/"removed" (a row),
    "project" (everything), "dirty", "path", "runs"."""

    kind: str
    section: str | None = None
    index: int | None = None


Listener = Callable[[DocEvent], None]


class Document:
    """The open project with its file path, dirty flag, listeners, undo sink, stored runs (``runs``) and
    autosave (``recovery``)."""

    def __init__(self, project: Project | None = None, path: str | os.PathLike | None = None,
                 *, recovery_dir: str | os.PathLike | None = None, saved: bool = True):
        self.project = project if project is not None else Project()
        self.path = Path(path) if path is not None else None
        self._saved: Project | None = self.project if saved else None
        self._was_dirty = not saved
        self._listeners: list[Listener] = []
        self.history = UndoHistory()
        self._sink: Callable[[Command], None] | None = None
        self.recovery_dir = Path(recovery_dir) if recovery_dir is not None else None
        self.runs = StoredRuns(self, changed=lambda: self._emit(DocEvent("runs")))
        self._problems: list[Problem] | None = None
        self.recovery = Recovery(self)
        self.coordinates = CoordinateEdits(self)

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: str | os.PathLike, **kw) -> "Document":
        """Open a project file (checked, migrated, decoded strictly). A project saved with problems
        (work in progress) opens as it was, its problems marked like any edit's."""
        from jointmodeller.persistence import load_project  # SQLAlchemy and Alembic: with the first file

        return cls(load_project(path, validate=False), path, **kw)

    # ------------------------------------------------------------------ events
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` on every change; returns a function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _emit(self, event: DocEvent) -> None:
        for listener in list(self._listeners):
            listener(event)

    # ------------------------------------------------------------------ state
    @property
    def dirty(self) -> bool:
        """True when the project differs from what was last saved or opened."""
        if self._saved is None:
            return True
        return not (self.project is self._saved or self.project == self._saved)

    @property
    def display_name(self) -> str:
        return self.path.name if self.path is not None else (self.project.info.title or "Untitled")

    def _changed(self, event: DocEvent) -> None:
        self._problems = None
        self._emit(event)
        d = self.dirty
        if d != self._was_dirty:
            self._was_dirty = d
            self._emit(DocEvent("dirty"))

    def _set_project(self, project: Project) -> None:
        self.project = project
        self._changed(DocEvent("project"))

    def _set_rows(self, section: str, rows: tuple, kind: str = "project", index: int | None = None) -> None:
        self.project = with_section_rows(self.project, section, rows)
        self._changed(DocEvent(kind, section, index))

    def _replace_row(self, section: str, index: int, row: Any) -> None:
        rows = list(section_rows(self.project, section))
        rows[index] = row
        self._set_rows(section, tuple(rows), "rows", index)

    # ------------------------------------------------------------------ commands
    def set_undo_sink(self, sink: Callable[[Command], None] | None) -> None:
        """Route pushed commands to ``sink`` (the GUI's QUndoStack; it must call ``cmd.redo``)."""
        self._sink = sink

    def push(self, cmd: Command) -> None:
        """Apply a command and make it undoable."""
        if self._sink is not None:
            self._sink(cmd)
        else:
            self.history.push(cmd, self)

    def undo(self) -> bool:
        return self.history.undo(self)

    def redo(self) -> bool:
        return self.history.redo(self)

    def rows(self, section: str) -> tuple:
        return section_rows(self.project, section)

    def set_cell(self, section: str, index: int, key: str, text: str) -> bool:
        """Parse ``text`` for one cell and push the edit. CellError (nothing changed) when the text
        cannot be a value; returns False when the value is unchanged. A value that parses but breaks a
        project rule is applied and reported by :meth:`cell_problems` (and blocks studies, not saving)."""
        col = column(section, key)
        if not col.editable:
            raise CellError(f"{col.label} cannot be edited here")
        value = col.parse(text, self.project)
        old = self.rows(section)[index]
        if col.get(old) == value:
            return False
        self.set_row(section, index, col.set(old, value), f"Edit {SECTION_LABELS[section]} › {col.label}")
        return True

    def set_row(self, section: str, index: int, row: Any, text: str = "Edit row") -> None:
        self.push(SetRow(section, index, self.rows(section)[index], row, text))

    def add_row(self, section: str, row: Any = None, index: int | None = None) -> int:
        """Insert ``row`` (default: a sensible new row) and return its index."""
        if row is None:
            row = default_row(self.project, section)
        n = len(self.rows(section))
        index = n if index is None else index
        self.push(InsertRow(section, index, row, f"Add {SECTION_LABELS[section]} row"))
        return index

    def add_attachment(self, att: Attachment) -> int:
        """Add a placed tissue and return its row. When it names no spring type of the project
        (a project without any), a default "ligament" type is added with it, in the same undo step,
        so the new row is valid at once."""
        names = [sp.name for sp in self.project.springs]
        if att.spring in names:
            return self.add_row("attachments", att)
        spring = SpringType(name=unique_name(names, "ligament"))
        att = replace(att, spring=spring.name)
        new = replace(self.project, springs=self.project.springs + (spring,),
                      attachments=self.project.attachments + (att,))
        self.replace_project(new, f"Add {att.name} (and spring type {spring.name})")
        return len(new.attachments) - 1

    def remove_row(self, section: str, index: int) -> None:
        self.push(RemoveRow(section, index, self.rows(section)[index], f"Delete {SECTION_LABELS[section]} row"))

    def replace_project(self, project: Project, text: str = "Change project") -> None:
        self.push(ReplaceProject(self.project, project, text))

    # ------------------------------------------------------------------ validation
    def problems(self) -> list[Problem]:
        """Every problem in the current project (cached until the next change)."""
        if self._problems is None:
            self._problems = project_problems(self.project)
        return self._problems

    def cell_problems(self) -> dict[tuple[str, int, str], list[str]]:
        """Messages per cell: (section, row index, column key) -> messages. A problem whose field has
        no column is shown on the row's first column; unknown rows are skipped."""
        out: dict[tuple[str, int, str], list[str]] = {}
        for p in self.problems():
            loc = self.locate(p)
            if loc is not None:
                out.setdefault(loc, []).append(p.message if p.field is None else f"{p.field}: {p.message}")
        return out

    def locate(self, problem: Problem) -> tuple[str, int, str] | None:
        """The (section, row index, column key) a problem points at, or None."""
        section = LABEL_TO_SECTION.get(problem.section)
        if section is None or section not in COLUMNS:
            return None
        rows = self.rows(section)
        if section == INFO:
            index = 0
        else:
            m = re.fullmatch(r"row (\d+)", problem.row or "")
            named = [i for i, r in enumerate(rows) if getattr(r, "name", None) == problem.row]
            if named:
                index = named[-1] if problem.field == "name" and len(named) > 1 else named[0]
            elif m and int(m.group(1)) - 1 < len(rows):
                index = int(m.group(1)) - 1
            else:
                return None
        keys = [c.key for c in COLUMNS[section] + EXTRA_COLUMNS.get(section, ())]
        f = problem.field or ""
        if f in keys:
            key = f
        else:
            prefix = next((k for k in keys if f.startswith(k + ".") or f.startswith(k + "[")), None)
            top = re.split(r"[.\[]", f)[0]
            key = prefix or (top if top in keys else keys[0])
        return section, index, key

    # ------------------------------------------------------------------ files
    def save(self, path: str | os.PathLike | None = None) -> Path:
        """Write the project (to ``path`` for save-as). Saving always works: a project that still
        breaks rules is stored as work in progress with its problems (persistence's draft), reopens
        with them marked, and only studies refuse it until they are fixed (:meth:`problems`)."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("the project has no file yet; give a path (save as)")
        from jointmodeller.persistence import save_project  # SQLAlchemy and Alembic: with the first file

        written = save_project(target, self.project, allow_problems=True)
        self.runs.save_to(target)
        old_path = self.path
        self.recovery.discard()
        self.recovery.override = None
        self.path = target
        self.project = written
        self._saved = written
        self._problems = None
        self._emit(DocEvent("project"))
        if old_path != target:
            self._emit(DocEvent("path"))
        self._was_dirty = False
        self._emit(DocEvent("dirty"))
        return target


__all__ = ["DocEvent", "Document"]
