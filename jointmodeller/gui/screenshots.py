"""Pictures of the main window with the demo for the documentation:
``python -m jointmodeller.gui.screenshots docs/screenshots [--dynamics SECONDS]``.

Writes main_window.png (demo, Attachments panel, oblique view) and viewport_medial.png; with
``--dynamics`` it first runs the demo's dynamics study for that simulated time and shows the last
sample with tissues coloured by tension and the force plots (main_window_run.png).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


def _settle(app, seconds: float = 0.3) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.01)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--dynamics", type=float, default=0.0, help="simulated seconds of a run to show")
    args = ap.parse_args(argv)
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from jointmodeller.gui.main_window import MainWindow

    tmp = tempfile.mkdtemp(prefix="jm-shots-")
    os.environ.setdefault("JOINTMODELLER_RECOVERY_DIR", os.path.join(tmp, "recovery"))
    app = QApplication.instance() or QApplication(sys.argv[:1])
    w = MainWindow(settings=QSettings(os.path.join(tmp, "s.ini"), QSettings.IniFormat), confirm=False)
    w.open_demo()
    w.resize(1500, 900)
    w.show()
    _settle(app, 1.0)
    args.folder.mkdir(parents=True, exist_ok=True)
    w.tabs.setCurrentWidget(w.panels["attachments"])
    w.viewport.camera_preset("oblique")
    _settle(app)
    w.grab_window(args.folder / "main_window.png")
    w.viewport.camera_preset("medial")
    w.viewport.screenshot(str(args.folder / "viewport_medial.png"))
    if args.dynamics > 0:
        done = []
        w.runFinished.connect(done.append)
        w.process_runner.failed.connect(done.append)
        w.runner.failed.connect(done.append)
        w.run_panel.study.setCurrentText("dynamics")
        w.run_panel.t_end.setValue(args.dynamics)
        w.start_study("dynamics")
        while not done:
            app.processEvents()
            time.sleep(0.02)
        w.bottom_tabs.setCurrentWidget(w.plots)
        w.viewport.scene.select(None, None)
        w.viewport.camera_preset("oblique")
        _settle(app, 0.5)
        w.grab_window(args.folder / "main_window_run.png")
    w.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
