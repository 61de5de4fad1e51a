"""Making a viewport's 3D view after the main window is shown (issue 18, progressive start-up): a light
placeholder ("Preparing the 3D view…") stands in the view's place; its first paint (the window is on
screen) starts importing pyvista and VTK's rendering (no Qt) in a background thread
(:class:`jointmodeller.gui.interactor.ViewImport`), and when that is done the viewport makes the view on
the GUI thread (:meth:`jointmodeller.gui.viewport.Viewport.ensure_view`)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QLabel, QLayout, QWidget

from jointmodeller.gui.interactor import ViewImport

PLACEHOLDER_TEXT = "Preparing the 3D view…"
PLACEHOLDER_STYLE = "QLabel { background: #1e2430; color: #9aa4b5; font-size: 15px; }"
"""The placeholder's look: the scene's background colour (render.scene.BACKGROUND), muted text."""
VIEW_POLL_MS = 20
"""How often the GUI thread looks whether the background import of the view's modules is done."""


class ViewMaker(QObject):
    """The placeholder of one viewport (added to its layout by the viewport) and the background import
    that precedes its view; ``viewport`` has ``windowPainted`` (emitted here), ``ensure_view()`` and
    ``_layout``."""

    def __init__(self, viewport: Any):
        super().__init__(viewport)
        self.viewport = viewport
        self.placeholder: QWidget | None = _Placeholder(self, viewport)
        viewport._layout.addWidget(self.placeholder)
        self._import = ViewImport()
        self._poll = QTimer(self)
        self._poll.setInterval(VIEW_POLL_MS)
        self._poll.timeout.connect(self._poll_import)
        self._stopped = False

    def start(self) -> None:
        """Import the view's modules in the background; the view is made when they are in."""
        if self._stopped:
            return
        self._import.start()
        if not self._poll.isActive():
            self._poll.start()

    def preparing(self) -> bool:
        return self._import.running()

    def stop(self) -> None:
        """The view was made (or the viewport closed): no more polling."""
        self._stopped = True
        self._poll.stop()

    def _poll_import(self) -> None:
        if self._import.running():
            return
        self._poll.stop()
        if not self._stopped:
            self.viewport.ensure_view()

    def placeholder_painted(self) -> None:
        """The placeholder was painted: the window is on screen. Say so and start on the view once
        this paint has been shown (the next turn of the event loop)."""
        QTimer.singleShot(0, self, self._window_painted)

    def _window_painted(self) -> None:
        self.viewport.windowPainted.emit()
        self.start()  # nothing once the view exists or the viewport closed (stop)

    def remove_placeholder(self, layout: QLayout) -> None:
        if self.placeholder is not None:
            layout.removeWidget(self.placeholder)
            self.placeholder.hide()
            self.placeholder.deleteLater()
            self.placeholder = None


class _Placeholder(QLabel):
    """What the viewport shows until its 3D view exists; its first paint starts making the view."""

    def __init__(self, maker: ViewMaker, parent: QWidget):
        super().__init__(PLACEHOLDER_TEXT, parent)
        self._maker = maker
        self._painted = False
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setStyleSheet(PLACEHOLDER_STYLE)
        self.setMinimumSize(200, 150)

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        if not self._painted:
            self._painted = True
            self._maker.placeholder_painted()


__all__ = ["PLACEHOLDER_TEXT", "ViewMaker"]
