"""Undoable edits of a :class:`~jointmodeller.app.document.Document`: :class:`Command` and its kinds
(a row set, inserted or removed, a section or the whole project replaced) and the document's own
:class:`UndoHistory` for tests and scripts (the GUI wraps each Command in a QUndoStack entry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jointmodeller.app.columns import section_rows
from jointmodeller.model.specs import (
    Project,
)

if TYPE_CHECKING:
    from jointmodeller.app.document import Document



class Command:
    """An undoable change: ``redo(doc)`` applies it, ``undo(doc)`` takes it back. ``text`` names it
    for the Edit menu."""

    text: str = ""

    def redo(self, doc: "Document") -> None:
        raise NotImplementedError

    def undo(self, doc: "Document") -> None:
        raise NotImplementedError


@dataclass
class SetRow(Command):
    """Replace row ``index`` of ``section`` (a cell edit, a placement, a drag)."""

    section: str
    index: int
    old: Any
    new: Any
    text: str = "Edit row"

    def redo(self, doc: "Document") -> None:
        doc._replace_row(self.section, self.index, self.new)

    def undo(self, doc: "Document") -> None:
        doc._replace_row(self.section, self.index, self.old)


@dataclass
class InsertRow(Command):
    section: str
    index: int
    row: Any
    text: str = "Add row"

    def redo(self, doc: "Document") -> None:
        rows = list(section_rows(doc.project, self.section))
        rows.insert(self.index, self.row)
        doc._set_rows(self.section, tuple(rows), "inserted", self.index)

    def undo(self, doc: "Document") -> None:
        rows = list(section_rows(doc.project, self.section))
        del rows[self.index]
        doc._set_rows(self.section, tuple(rows), "removed", self.index)


@dataclass
class RemoveRow(Command):
    section: str
    index: int
    row: Any
    text: str = "Delete row"

    def redo(self, doc: "Document") -> None:
        InsertRow(self.section, self.index, self.row).undo(doc)

    def undo(self, doc: "Document") -> None:
        InsertRow(self.section, self.index, self.row).redo(doc)


@dataclass
class SetSection(Command):
    """Replace every row of one section at once (a change that touches several rows, e.g. setting or
    locking joint coordinates, which rewrites the joints and the initial poses of the masses)."""

    section: str
    old: tuple
    new: tuple
    text: str = "Edit rows"

    def redo(self, doc: "Document") -> None:
        doc._set_rows(self.section, self.new)

    def undo(self, doc: "Document") -> None:
        doc._set_rows(self.section, self.old)


@dataclass
class ReplaceProject(Command):
    """Swap the whole project (a use case that touches several sections at once)."""

    old: Project
    new: Project
    text: str = "Change project"

    def redo(self, doc: "Document") -> None:
        doc._set_project(self.new)

    def undo(self, doc: "Document") -> None:
        doc._set_project(self.old)


class UndoHistory:
    """A plain undo/redo stack for use without Qt (the GUI uses QUndoStack instead)."""

    def __init__(self) -> None:
        self.done: list[Command] = []
        self.undone: list[Command] = []

    def push(self, cmd: Command, doc: "Document") -> None:
        cmd.redo(doc)
        self.done.append(cmd)
        self.undone.clear()

    def undo(self, doc: "Document") -> bool:
        if not self.done:
            return False
        cmd = self.done.pop()
        cmd.undo(doc)
        self.undone.append(cmd)
        return True

    def redo(self, doc: "Document") -> bool:
        if not self.undone:
            return False
        cmd = self.undone.pop()
        cmd.redo(doc)
        self.done.append(cmd)
        return True
