"""File › Export of the main window: a screenshot of the 3D view, the shown run's plots (PNG, SVG or
their data as CSV) and every series of the shown run as a CSV table."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMainWindow

NO_RUN_SHOWN = "No run is shown: run a study or choose a stored run first."


class Exports:
    """The export dialogs of one main window (its ``viewport``, ``plots`` and the run its study
    controller shows); each takes a path instead of asking for one when given it (tests, scripts)."""

    def __init__(self, window: QMainWindow):
        self.window = window

    def screenshot_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export screenshot", "view.png", "PNG images (*.png)")
        if path:
            self.window.viewport.screenshot(path)

    def plot_dialog(self, path: str | None = None) -> str | None:
        """Save the shown run's plots as PNG, SVG or CSV (by the suffix; asks for the file when
        ``path`` is None). Returns the path written, or None."""
        w = self.window
        if w.plots.run is None:
            w.statusBar().showMessage(NO_RUN_SHOWN, 8000)
            return None
        if path is None:
            path, chosen = QFileDialog.getSaveFileName(
                w, "Export plot", f"{w.plots.run.study}-plot.png",
                "PNG image (*.png);;SVG drawing (*.svg);;CSV data (*.csv)")
            if not path:
                return None
            if not Path(path).suffix:
                path += "." + chosen.split("*.")[-1].rstrip(")")
        try:
            written = w.plots.export(path)
        except (OSError, ValueError) as exc:
            w.show_error("Plot not exported", str(exc))
            return None
        w.statusBar().showMessage(f"Exported the plot to {written}", 6000)
        return written

    def run_dialog(self, path: str | None = None) -> str | None:
        """Save every series of the shown run as a CSV table (asks for the file when ``path`` is
        None). Returns the path written, or None."""
        from jointmodeller.app.export import write_run_csv

        w = self.window
        run = w.study_control.shown_run
        if run is None:
            w.statusBar().showMessage(NO_RUN_SHOWN, 8000)
            return None
        if path is None:
            path, _ = QFileDialog.getSaveFileName(w, "Export run as CSV", f"{run.study}-run.csv",
                                                  "CSV tables (*.csv)")
            if not path:
                return None
            if not path.lower().endswith(".csv"):
                path += ".csv"
        try:
            written = write_run_csv(run, path)
        except OSError as exc:
            w.show_error("Run not exported", str(exc))
            return None
        w.statusBar().showMessage(f"Exported run {run.study} to {written}", 6000)
        return str(written)


__all__ = ["Exports"]
