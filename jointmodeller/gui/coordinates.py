"""The Coordinates panel: every joint coordinate of the project with its mass, its value (degrees for a
rotation, millimetres for a translation) and a Locked check box; Lock all / Free all. Each edit is one
undoable document command (``doc.coordinates.change``), which also moves the bones."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QBrush
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from jointmodeller.app.columns import CellError
from jointmodeller.app.document import DocEvent, Document
from jointmodeller.gui.tables import ERROR_STYLE, READONLY_FG, TableView
from jointmodeller.model.errors import JointModellerError

PANEL = "Coordinates"
EMPTY_HINT = ("No joint coordinates: masses without a joint are free 6-DOF bodies. Give a mass a joint "
              "(a mobilizer to its parent) in the Mobilizers panel to see its coordinates here.")
NAME, MASS, VALUE, UNIT, LOCKED = range(5)
HEADERS = ("Coordinate", "Mass", "Value [° or mm]", "Unit", "Locked")
HEADER_TIPS = (
    "The coordinate's name (from its joint, e.g. an OpenSim coordinate)",
    "The mass whose joint (mobilizer to its parent) owns the coordinate",
    "Initial value: degrees for a rotation, millimetres for a translation (see Unit). A locked "
    "coordinate is held at this value in every study. Type a number and press Enter.",
    "° for a rotational coordinate, mm for a translational one",
    "Checked: held at its value in every study (equilibrium, laxity, dynamics). Unchecked: free.",
)
SECTIONS = (None, "masses", "constraints")
"""Events of these sections may change the coordinates (joints live in the mass rows)."""


def _checked(value) -> bool:
    """A check-state value from Qt (an enum or its int) as a bool."""
    return getattr(value, "value", value) == Qt.CheckState.Checked.value


class CoordinateTableModel(QAbstractTableModel):
    """The project's joint coordinates as a table; edits go through the document as commands."""

    message = Signal(str)
    """A message for the user: why the last edit was refused (empty: it was applied)."""
    edited = Signal()
    """An edit of this panel changed the project."""

    def __init__(self, doc: Document, parent=None):
        super().__init__(parent)
        self.doc = doc
        self.last_error = ""
        self.problem = ""
        """Why the coordinates cannot be listed (the joints do not assemble), else empty."""
        self._rows: list | None = None
        self.live = False
        """Listing the coordinates builds the joint tree: done only while the panel is shown."""
        self._unsubscribe = doc.subscribe(self._on_event)

    def set_document(self, doc: Document) -> None:
        self.beginResetModel()
        self._unsubscribe()
        self.doc = doc
        self._rows = None
        self.last_error = ""
        self._unsubscribe = doc.subscribe(self._on_event)
        self.endResetModel()

    def set_live(self, live: bool) -> None:
        """Follow the project (shown) or only note that it changed (hidden)."""
        self.live = live
        if live and self._rows is None:
            self.beginResetModel()
            self._rows, self.problem = self._table()
            self.endResetModel()

    @property
    def rows(self) -> list:
        """The coordinates of the current project (none while hidden and not yet listed)."""
        if self._rows is None:
            if not self.live:
                return []
            self._rows, self.problem = self._table()
        return self._rows

    def _table(self) -> tuple[list, str]:
        try:
            return self.doc.coordinates.table(), ""
        except (JointModellerError, ValueError, LookupError) as exc:  # a joint being edited
            return [], f"The coordinates cannot be listed until the joints are fixed (Mobilizers panel): {exc}"

    def _on_event(self, ev: DocEvent) -> None:
        if ev.kind in ("dirty", "path", "runs") or ev.section not in SECTIONS:
            return
        if not self.live:  # listed again when shown
            self.beginResetModel()
            self._rows = None
            self.endResetModel()
            return
        rows, problem = self._table()
        if self._rows is not None and [r.name for r in rows] == [r.name for r in self._rows] and rows:
            self._rows, self.problem = rows, problem  # same coordinates, new values or locks
            self.dataChanged.emit(self.index(0, 0), self.index(len(rows) - 1, len(HEADERS) - 1))
            return
        self.beginResetModel()
        self._rows, self.problem = rows, problem
        self.endResetModel()

    # ------------------------------------------------------------------ Qt model API
    def rowCount(self, parent=None) -> int:
        return 0 if parent is not None and parent.isValid() else len(self.rows)

    def columnCount(self, parent=None) -> int:
        return 0 if parent is not None and parent.isValid() else len(HEADERS)

    def headerData(self, section: int, orientation, role=Qt.DisplayRole):
        if orientation != Qt.Horizontal:
            return str(section + 1) if role == Qt.DisplayRole else None
        if role == Qt.DisplayRole:
            return HEADERS[section]
        if role == Qt.ToolTipRole:
            return HEADER_TIPS[section]
        return None

    def flags(self, index: QModelIndex):
        f = Qt.ItemIsEnabled | Qt.ItemIsSelectable
        if index.column() == VALUE:
            f |= Qt.ItemIsEditable
        elif index.column() == LOCKED:
            f |= Qt.ItemIsUserCheckable
        return f

    def data(self, index: QModelIndex, role=Qt.DisplayRole):
        if not index.isValid() or index.row() >= len(self.rows):
            return None
        row = self.rows[index.row()]
        c = index.column()
        if role in (Qt.DisplayRole, Qt.EditRole):
            if c == NAME:
                return row.name
            if c == MASS:
                return row.mass
            if c == VALUE:
                return f"{row.display[0]:.6g}"
            if c == UNIT:
                return "°" if row.rotational else "mm"
            return None
        if role == Qt.CheckStateRole and c == LOCKED:
            return Qt.Checked if row.locked else Qt.Unchecked
        if role == Qt.TextAlignmentRole and c == VALUE:
            return int(Qt.AlignRight | Qt.AlignVCenter)
        if role == Qt.ForegroundRole and c in (NAME, MASS, UNIT):
            return QBrush(READONLY_FG)
        if role == Qt.ToolTipRole:
            kind = "rotation" if row.rotational else "translation"
            state = "locked at this value" if row.locked else "free"
            return f"{row.name}: a {kind} of {row.mass}'s joint, {state}"
        return None

    def setData(self, index: QModelIndex, value, role=Qt.EditRole) -> bool:
        if not index.isValid() or index.row() >= len(self.rows):
            return False
        row = self.rows[index.row()]
        if index.column() == VALUE and role == Qt.EditRole:
            return self._apply(row.name, "Value",
                               lambda: self.doc.coordinates.set_text(row.name, "" if value is None else str(value)))
        if index.column() == LOCKED and role == Qt.CheckStateRole:
            lock = _checked(value)
            what = "Lock" if lock else "Free"
            return self._apply(row.name, "Locked", lambda: self.doc.coordinates.change(
                lock=[row.name] if lock else (), free=() if lock else [row.name], text=f"{what} {row.name}"))
        return False

    def _apply(self, where: str, label: str, edit) -> bool:
        """Run one edit; a refused one leaves the project as it was and says why."""
        try:
            changed = edit()
        except (CellError, JointModellerError, ValueError) as exc:
            self.last_error = f"{PANEL} › {where} › {label}: {exc}"
            self.message.emit(self.last_error)
            return False
        self.last_error = ""
        self.message.emit("")
        if changed:
            self.edited.emit()
        return True

    def set_all(self, lock: bool) -> bool:
        """Lock (or free) every coordinate as one undoable step."""
        text = "Lock all coordinates" if lock else "Free all coordinates"
        return self._apply("all", "Locked", lambda: self.doc.coordinates.change(
            lock_all=lock, free_all=not lock, text=text))


class CoordinatesPanel(QWidget):
    """The Coordinates tab: the table, Lock all / Free all, the empty-state hint and the message line."""

    def __init__(self, doc: Document, parent=None):
        super().__init__(parent)
        self.model = CoordinateTableModel(doc, self)
        self.view = TableView(self)
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SingleSelection)
        self.view.setEditTriggers(QAbstractItemView.DoubleClicked | QAbstractItemView.EditKeyPressed
                                  | QAbstractItemView.AnyKeyPressed)
        self.view.setAlternatingRowColors(True)
        header = self.view.header_view
        header.setSectionResizeMode(QHeaderView.Interactive)
        header.setStretchLastSection(False)
        self.hint = QLabel(EMPTY_HINT, self)
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet("color: #555555; padding: 12px;")
        self.hint.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.message = QLabel("", self)
        self.message.setWordWrap(True)
        self.message.setStyleSheet(ERROR_STYLE)
        self.lock_all = QPushButton("Lock all", self)
        self.lock_all.setToolTip("Hold every coordinate at its value (one undo step)")
        self.free_all = QPushButton("Free all", self)
        self.free_all.setToolTip("Free every coordinate (one undo step)")
        self.lock_all.clicked.connect(lambda: self.model.set_all(True))
        self.free_all.clicked.connect(lambda: self.model.set_all(False))
        buttons = QHBoxLayout()
        buttons.addWidget(self.lock_all)
        buttons.addWidget(self.free_all)
        buttons.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addWidget(self.hint)
        lay.addWidget(self.view, 1)
        lay.addWidget(self.message)
        lay.addLayout(buttons)
        self.model.message.connect(self.message.setText)
        self.model.modelReset.connect(self.refresh)
        self.model.dataChanged.connect(lambda *_: self.refresh(fit=False))
        self.refresh()

    @property
    def doc(self) -> Document:
        return self.model.doc

    def set_document(self, doc: Document) -> None:
        self.model.set_document(doc)
        self.message.clear()

    def showEvent(self, event) -> None:
        self.model.set_live(True)
        super().showEvent(event)

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        if not self.isVisible():
            self.model.set_live(False)

    def refresh(self, fit: bool = True) -> None:
        """Hint or table, buttons and column widths for the rows now listed."""
        rows = self.model.rows
        empty = not rows
        self.hint.setText(self.model.problem or EMPTY_HINT)
        self.hint.setStyleSheet(ERROR_STYLE + " padding: 12px;" if self.model.problem
                                else "color: #555555; padding: 12px;")
        self.hint.setVisible(empty)
        self.view.setVisible(not empty)
        self.lock_all.setEnabled(not empty and not all(r.locked for r in rows))
        self.free_all.setEnabled(not empty and any(r.locked for r in rows))
        if not self.model.last_error:
            self.message.clear()
        if fit:
            self.fit_columns()

    def fit_columns(self, max_width: int = 220) -> None:
        """Columns as wide as their contents and headers, up to ``max_width`` pixels."""
        self.view.resizeColumnsToContents()
        for c in range(self.model.columnCount()):
            self.view.setColumnWidth(c, min(self.view.columnWidth(c) + 12, max_width))

    def row_of(self, name: str) -> int:
        """The table row of a coordinate (ValueError when absent)."""
        return [r.name for r in self.model.rows].index(name)


__all__ = ["EMPTY_HINT", "CoordinateTableModel", "CoordinatesPanel"]
