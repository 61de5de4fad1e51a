"""Qt model/view binding of a document section: an editable table model with inline validation,
a delegate with drop-down lists for choices and references, and the panel around the table."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QItemSelectionModel, QModelIndex, QSignalBlocker, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QStyledItemDelegate,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from jointmodeller.app.columns import COLUMNS, INFO, SECTION_LABELS, CellError, column_tip
from jointmodeller.app.document import DocEvent, Document

PROBLEM_BG = QColor("#ffd0d0")
PROBLEM_FG = QColor("#8a0000")
READONLY_FG = QColor("#777777")
ERROR_STYLE = "color: #b00000; font-weight: bold;"


class TableView(QTableView):
    """A QTableView whose horizontal header and selection model are made here, so that Python holds
    their wrappers. Asked for them instead (``horizontalHeader()``, ``selectionModel()``), shiboken
    looks the C++ object's address up in its wrapper map, and a stale wrapper of another type left at
    that address is handed back ("'QOffscreenSurface' object has no attribute 'setSectionResizeMode'"
    building a panel, once in the GUI tests; the stale wrapper's source is closed off by
    ``gui.interactor.close_interactor``, this guards the panels against any other). The header is set
    up as QTableView's own (clickable, highlighting the current sections)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.header_view = QHeaderView(Qt.Horizontal, self)
        self.header_view.setSectionsClickable(True)
        self.header_view.setHighlightSections(True)
        self.setHorizontalHeader(self.header_view)
        self.selection: QItemSelectionModel | None = None
        """The selection model of the current model (made by :meth:`setModel`)."""

    def setModel(self, model) -> None:  # noqa: N802 - Qt's name
        super().setModel(model)
        self.selection = QItemSelectionModel(model, self)
        self.setSelectionModel(self.selection)


class SectionTableModel(QAbstractTableModel):
    """Rows of one section of the document as a table; edits go through the document as commands."""

    message = Signal(str)
    """A message for the user: why the last edit was refused."""

    def __init__(self, doc: Document, section: str, parent=None, columns=None):
        super().__init__(parent)
        self.doc = doc
        self.section = section
        self.columns = COLUMNS[section] if columns is None else tuple(columns)
        self.last_error = ""
        self._cells: dict | None = None
        self._unsubscribe = doc.subscribe(self._on_event)

    def set_document(self, doc: Document) -> None:
        self.beginResetModel()
        self._unsubscribe()
        self.doc = doc
        self._cells = None
        self._unsubscribe = doc.subscribe(self._on_event)
        self.endResetModel()

    def _problems(self) -> dict:
        if self._cells is None:
            self._cells = self.doc.cell_problems()
        return self._cells

    def _on_event(self, ev: DocEvent) -> None:
        if ev.kind in ("dirty", "path", "runs"):
            return
        self._cells = None
        if ev.kind == "rows" and ev.section == self.section:
            self.dataChanged.emit(self.index(ev.index, 0), self.index(ev.index, len(self.columns) - 1))
        if ev.kind in ("inserted", "removed", "project") and (ev.section in (None, self.section)):
            self.beginResetModel()
            self.endResetModel()
        elif self.rowCount() > 0:  # problems elsewhere may mark or clear cells here
            self.dataChanged.emit(self.index(0, 0), self.index(self.rowCount() - 1, len(self.columns) - 1),
                                  [Qt.BackgroundRole, Qt.ToolTipRole, Qt.ForegroundRole])

    # ------------------------------------------------------------------ Qt model API
    def rowCount(self, parent=None) -> int:
        return 0 if parent is not None and parent.isValid() else len(self.doc.rows(self.section))

    def columnCount(self, parent=None) -> int:
        return 0 if parent is not None and parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation, role=Qt.DisplayRole):
        if role == Qt.ToolTipRole and orientation == Qt.Horizontal:
            return column_tip(self.columns[section])  # meaning and unit
        if role != Qt.DisplayRole:
            return None
        if orientation == Qt.Horizontal:
            return self.columns[section].label
        return str(section + 1)

    def flags(self, index: QModelIndex):
        f = Qt.ItemIsEnabled | Qt.ItemIsSelectable
        if self.columns[index.column()].editable:
            f |= Qt.ItemIsEditable
        return f

    def cell_messages(self, row: int, col: int) -> list[str]:
        return self._problems().get((self.section, row, self.columns[col].key), [])

    def data(self, index: QModelIndex, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        col = self.columns[index.column()]
        rows = self.doc.rows(self.section)
        if index.row() >= len(rows):
            return None
        if role in (Qt.DisplayRole, Qt.EditRole):
            return col.format(rows[index.row()])
        if role == Qt.BackgroundRole:
            return QBrush(PROBLEM_BG) if self.cell_messages(index.row(), index.column()) else None
        if role == Qt.ForegroundRole:
            if self.cell_messages(index.row(), index.column()):
                return QBrush(PROBLEM_FG)
            return None if col.editable else QBrush(READONLY_FG)
        if role == Qt.ToolTipRole:
            msgs = self.cell_messages(index.row(), index.column())
            return "\n".join(msgs) if msgs else (col.tip or None)
        return None

    def setData(self, index: QModelIndex, value, role=Qt.EditRole) -> bool:
        if role != Qt.EditRole or not index.isValid():
            return False
        col = self.columns[index.column()]
        if not col.editable:  # as flags() says: a read-only column takes no edit, from a view or from code
            return False
        try:
            self.doc.set_cell(self.section, index.row(), col.key, str(value))
        except CellError as exc:
            self.last_error = f"{SECTION_LABELS[self.section]} › row {index.row() + 1} › {col.label}: {exc}"
            self.message.emit(self.last_error)
            return False
        self.last_error = ""
        msgs = self.doc.cell_problems().get((self.section, index.row(), col.key), [])
        self.message.emit(f"{SECTION_LABELS[self.section]} › row {index.row() + 1} › {col.label}: "
                          + "; ".join(msgs) if msgs else "")
        return True


class ChoiceDelegate(QStyledItemDelegate):
    """Drop-down lists for choice, reference and yes/no columns; plain text editors otherwise."""

    def __init__(self, model: SectionTableModel, parent=None):
        super().__init__(parent)
        self.model = model

    def _items(self, index: QModelIndex) -> tuple[str, ...] | None:
        col = self.model.columns[index.column()]
        if col.kind == "bool":
            return ("yes", "no")
        choice_kinds = ("choice", "mass", "mass_or_ground", "spring")
        return col.allowed(self.model.doc.project) if col.kind in choice_kinds else None

    def createEditor(self, parent, option, index):
        items = self._items(index)
        if items is None:
            return super().createEditor(parent, option, index)
        box = QComboBox(parent)
        box.addItems(list(items))
        return box

    def setEditorData(self, editor, index):
        if isinstance(editor, QComboBox):
            editor.setCurrentText(str(index.data(Qt.EditRole)))
        else:
            super().setEditorData(editor, index)

    def setModelData(self, editor, model, index):
        if isinstance(editor, QComboBox):
            model.setData(index, editor.currentText(), Qt.EditRole)
        else:
            super().setModelData(editor, model, index)


class SectionPanel(QWidget):
    """One input section: the table, add/delete buttons and the message line."""

    rowSelected = Signal(str, int)

    def __init__(self, doc: Document, section: str, parent=None, columns=None, rows_fixed: bool = False):
        super().__init__(parent)
        self.section = section
        self.model = SectionTableModel(doc, section, self, columns)
        self.view = TableView(self)
        self.view.setModel(self.model)
        self.view.setItemDelegate(ChoiceDelegate(self.model, self.view))
        self.view.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SingleSelection)
        self.view.setEditTriggers(QAbstractItemView.DoubleClicked | QAbstractItemView.EditKeyPressed
                                  | QAbstractItemView.AnyKeyPressed)
        self.view.header_view.setSectionResizeMode(QHeaderView.Interactive)
        self.view.header_view.setStretchLastSection(True)
        self.message = QLabel("", self)
        self.message.setWordWrap(True)
        self.message.setStyleSheet(ERROR_STYLE)
        self.add_button = QPushButton("Add", self)
        self.delete_button = QPushButton("Delete", self)
        self.add_button.clicked.connect(self.add_row)
        self.delete_button.clicked.connect(self.delete_row)
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.delete_button)
        buttons.addStretch(1)
        self.add_button.setVisible(not rows_fixed)
        self.delete_button.setVisible(not rows_fixed)
        lay = QVBoxLayout(self)
        lay.addWidget(self.view, 1)
        lay.addWidget(self.message)
        lay.addLayout(buttons)
        self.model.message.connect(self.show_message)
        self.view.selection.currentRowChanged.connect(self._row_changed)
        self._fit_pending = False
        """The columns are fitted to the contents when this panel is next shown."""
        self.model.modelReset.connect(self._reconnect)
        self.model.dataChanged.connect(lambda *_: self._refresh_row_message())

    @property
    def doc(self) -> Document:
        return self.model.doc

    def _reconnect(self) -> None:
        if self.isVisible():
            self.fit_columns()
        else:  # a tab not shown: fitted when it is (start-up and edits fit the visible tables only)
            self._fit_pending = True
        self._refresh_row_message()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._fit_pending:
            self._fit_pending = False
            self.fit_columns()

    def fit_columns(self, max_width: int = 180) -> None:
        """Columns as wide as their contents, up to ``max_width`` pixels."""
        self.view.resizeColumnsToContents()
        for c in range(self.model.columnCount()):
            if self.view.columnWidth(c) > max_width:
                self.view.setColumnWidth(c, max_width)

    def show_message(self, text: str) -> None:
        self.message.setText(text)

    def _row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.rowSelected.emit(self.section, current.row())
        self._refresh_row_message()

    def _refresh_row_message(self) -> None:
        if self.model.last_error:
            return
        row = self.view.currentIndex().row()
        msgs = []
        for (s, r, _key), m in self.model._problems().items():
            if s == self.section and r == row:
                msgs += m
        self.message.setText("\n".join(msgs))

    def select_row(self, row: int) -> None:
        """Select a row without re-announcing it (selection sync from the viewport)."""
        with QSignalBlocker(self.view.selection):
            self.view.selectRow(row)
            self.view.setCurrentIndex(self.model.index(row, 0))
        self._refresh_row_message()

    def add_row(self) -> int:
        i = self.doc.add_row(self.section)
        self.select_row(i)
        return i

    def delete_row(self) -> None:
        row = self.view.currentIndex().row()
        if 0 <= row < self.model.rowCount():
            self.doc.remove_row(self.section, row)

    def set_document(self, doc: Document) -> None:
        self.model.set_document(doc)
        self.message.clear()


class ProjectForm(QWidget):
    """The Project section (title block and global settings) as a form."""

    def __init__(self, doc: Document, parent=None):
        super().__init__(parent)
        self.doc = doc
        self.edits: dict[str, QLineEdit] = {}
        form = QFormLayout()
        for col in COLUMNS[INFO]:
            e = QLineEdit(self)
            e.setReadOnly(not col.editable)
            e.editingFinished.connect(lambda key=col.key: self._commit(key))
            self.edits[col.key] = e
            form.addRow(col.label, e)
        self.message = QLabel("", self)
        self.message.setWordWrap(True)
        self.message.setStyleSheet(ERROR_STYLE)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.message)
        lay.addStretch(1)
        self._unsubscribe = doc.subscribe(lambda ev: self.refresh() if ev.kind not in ("dirty", "runs") else None)
        self.refresh()

    def set_document(self, doc: Document) -> None:
        self._unsubscribe()
        self.doc = doc
        self._unsubscribe = doc.subscribe(lambda ev: self.refresh() if ev.kind not in ("dirty", "runs") else None)
        self.refresh()

    def _commit(self, key: str) -> None:
        e = self.edits[key]
        try:
            self.doc.set_cell(INFO, 0, key, e.text())
        except CellError as exc:
            self.message.setText(f"Project › {key}: {exc}")
            e.setStyleSheet(f"background: {PROBLEM_BG.name()};")
            return
        self.refresh()

    def refresh(self) -> None:
        cells = self.doc.cell_problems()
        info = self.doc.project.info
        msgs = []
        for col in COLUMNS[INFO]:
            e = self.edits[col.key]
            text = col.format(info)
            if e.text() != text and not e.hasFocus():
                with QSignalBlocker(e):
                    e.setText(text)
            m = cells.get((INFO, 0, col.key), [])
            e.setStyleSheet(f"background: {PROBLEM_BG.name()};" if m else "")
            e.setToolTip("\n".join(m))
            msgs += [f"{col.label}: {x}" for x in m]
        self.message.setText("\n".join(msgs))


__all__ = ["ChoiceDelegate", "ProjectForm", "SectionPanel", "SectionTableModel"]
