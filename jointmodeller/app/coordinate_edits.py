"""The open document's joint coordinates as undoable edits (Qt-free): list them, lock, free or set
them in one undo step each, or set one from the text typed in the Coordinates panel. A
:class:`~jointmodeller.app.document.Document` owns one as ``doc.coordinates``; the arithmetic (the
tree, the masses' poses following the values) is :mod:`jointmodeller.app.coordinates`, imported on
first use because it builds the multibody tree."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from jointmodeller.app.columns import MM, SECTION_LABELS, CellError, format_number, parse_number
from jointmodeller.app.commands import SetSection
from jointmodeller.model.errors import ValidationError

if TYPE_CHECKING:
    from jointmodeller.app.coordinates import CoordinateRow
    from jointmodeller.app.document import Document


class CoordinateEdits:
    """Joint-coordinate edits of one document, pushed as its commands (so its events and undo)."""

    def __init__(self, doc: Document):
        self._doc = doc

    def table(self) -> list[CoordinateRow]:
        """Every joint coordinate of the project (``app.coordinates.CoordinateRow``, mass-row order);
        empty when no mass has a joint. ValidationError when a joint breaks a rule (the problems of the
        Mobilizers panel) or the joints cannot be assembled into a tree."""
        doc = self._doc
        if not any(m.joint is not None and m.joint.coordinates for m in doc.project.masses):
            return []
        joint_problems = [p for p in doc.problems()
                          if p.section == SECTION_LABELS["masses"] and (p.field or "").startswith("joint")]
        if joint_problems:
            raise ValidationError(joint_problems)
        from jointmodeller.app.coordinates import coordinate_table  # builds the tree: loaded on first use

        return coordinate_table(doc.project)

    def change(self, *, lock=(), free=(), lock_all: bool = False, free_all: bool = False,
               values: dict[str, float] | None = None, text: str = "Edit coordinates") -> bool:
        """Lock, free or set joint coordinates (values in SI: rad or m) as one undoable step; the
        masses' initial poses follow the values. False when nothing changes; ValidationError (nothing
        changed) for an unknown name or a value that is not finite."""
        from jointmodeller.app.coordinates import set_coordinates

        doc = self._doc
        new = set_coordinates(doc.project, lock=lock, free=free, lock_all=lock_all, free_all=free_all,
                              values=values)
        if new.masses == doc.project.masses:
            return False
        doc.push(SetSection("masses", doc.project.masses, new.masses, text))
        return True

    def set_text(self, name: str, text: str) -> bool:
        """Set one coordinate from display text: degrees for a rotation, millimetres for a translation.
        CellError (nothing changed) when the text is not a finite number or no coordinate has that
        name; False when the value is unchanged."""
        rows = {r.name: r for r in self.table()}
        if name not in rows:
            raise CellError(f"no joint coordinate named {name!r}")
        row = rows[name]
        shown = parse_number("" if text is None else str(text))
        value = math.radians(shown) if row.rotational else shown / MM
        if format_number(row.display[0]) == format_number(shown):  # the same number as shown: nothing to do
            return False
        unit = "°" if row.rotational else " mm"
        return self.change(values={name: value}, text=f"Set {name} = {format_number(shown)}{unit}")


__all__ = ["CoordinateEdits"]
