"""The Help menu's texts: the workflow in a few steps with links to the documentation, the keyboard
shortcuts of the main window's menus, and About; each in a non-modal text window, one at a time."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QMainWindow


def docs_folder() -> Path | None:
    """The repository's docs/ folder beside the package (a source checkout), or None (a wheel)."""
    d = Path(__file__).resolve().parents[2] / "docs"
    return d if (d / "architecture.md").is_file() else None


def help_html() -> str:
    """The Help window's text: the workflow in a few steps and links to the documentation."""
    docs = docs_folder()
    if docs is not None:
        links = "".join(f"<li><a href='{f.as_uri()}'>{f.stem.replace('_', ' ')}</a></li>"
                        for f in sorted(docs.glob("*.md")))
        readme = docs.parent / "README.md"
        if readme.is_file():
            links = f"<li><a href='{readme.as_uri()}'>README</a></li>" + links
        docs_text = f"<h4>Documentation</h4><ul>{links}</ul>"
    else:
        docs_text = ("<h4>Documentation</h4><p>The README and docs/ of the JointModeller source distribution; "
                     "<code>jointmodeller --help</code> lists the command-line tools.</p>")
    return (
        "<h3>Building a joint model</h3><ol>"
        "<li><b>File › New</b> (Ctrl+N) starts an empty project; <b>File › Import bone mesh…</b> (Ctrl+I) adds "
        "each bone. Open surfaces from segmentation are accepted: the dialog says how their mass properties "
        "were found.</li>"
        "<li><b>Tools › Place ligament</b> (Ctrl+L): click the origin on one bone, then the insertion on "
        "another (the bone under the mouse is highlighted, a marker shows the first pick). Esc cancels. Edit "
        "stiffness and rest length in the Springs and Attachments tables; selecting a tissue shows its length "
        "and strain. <b>Tools › Place load</b> (Ctrl+F) puts a point load where you click; <b>Measure "
        "distance</b> (Ctrl+D) and <b>Measure angle</b> (Ctrl+Shift+D) measure between picked points; "
        "<b>Move bone</b> (Ctrl+B) drags a bone to a new initial position.</li>"
        "<li>Add loads (Forces), contact pairs, joints (Mobilizers) and laxity experiments in their tables. "
        "Cells with a problem are marked red; their tooltip says what is wrong.</li>"
        "<li><b>Save</b> (Ctrl+S) always works; problems are stored and stay marked.</li>"
        "<li>Choose a study in the Run tab and press <b>Start</b>: equilibrium, dynamics or laxity. The runs "
        "are stored with the project; the slider replays a run; File › Export plot / Export run as CSV save "
        "the results.</li></ol>"
        "<p>Undo: Ctrl+Z, redo: Ctrl+Y or Ctrl+Shift+Z. Help › Keyboard shortcuts lists the rest. The tables "
        "and the run panel are docks: drag their edges or title bars; View › Reset panel layout puts them "
        "back.</p>"
        + docs_text)


class HelpTexts:
    """The help, shortcuts and about windows of one main window (one shown at a time; ``dialog``)."""

    def __init__(self, window: QMainWindow):
        self.window = window
        self.dialog = None
        """The text window shown last (None before the first)."""

    def show_text(self, title: str, html: str) -> None:
        """A non-modal text window (one at a time)."""
        from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout

        if self.dialog is not None:
            self.dialog.close()
        dlg = QDialog(self.window)
        dlg.setWindowTitle(title)
        view = QTextBrowser(dlg)
        view.setOpenExternalLinks(True)
        view.setHtml(html)
        buttons = QDialogButtonBox(QDialogButtonBox.Close, dlg)
        buttons.rejected.connect(dlg.close)
        lay = QVBoxLayout(dlg)
        lay.addWidget(view)
        lay.addWidget(buttons)
        dlg.resize(620, 520)
        dlg.show()
        self.dialog = dlg

    def shortcut_rows(self) -> list[tuple[str, str]]:
        """(action, keys) of every action with a shortcut, menu order."""
        rows, seen = [], set()
        for a in [a for m in self.window.menuBar().actions() if m.menu() for a in m.menu().actions()]:
            keys = [k.toString(QKeySequence.NativeText) for k in a.shortcuts()]
            if keys and id(a) not in seen:
                seen.add(id(a))
                rows.append((a.text().replace("&", ""), ", ".join(keys)))
        rows += [("Turn the view", "drag with the left mouse button"), ("Zoom", "mouse wheel"),
                 ("Pan", "drag with the middle mouse button or Shift + left")]
        return rows

    def show_shortcuts(self) -> None:
        rows = "".join(f"<tr><td>{a}</td><td><b>{k}</b></td></tr>" for a, k in self.shortcut_rows())
        self.show_text("Keyboard shortcuts", f"<table cellpadding='4'>{rows}</table>")

    def show_help(self) -> None:
        self.show_text("JointModeller help", help_html())

    def show_about(self) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("jointmodeller")
        except PackageNotFoundError:
            v = "(development tree)"
        self.show_text("About JointModeller", f"<h3>JointModeller {v}</h3><p>Rigid-body joint models from bone "
                                              "meshes: tissues, contact, equilibrium, dynamics and laxity "
                                              "studies.</p>")

    def close(self) -> None:
        """Close the text window shown (a help text does not outlive its main window)."""
        if self.dialog is not None:
            self.dialog.close()


__all__ = ["HelpTexts", "docs_folder", "help_html"]
