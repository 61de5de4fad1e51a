"""Python run in a fresh process by the GUI's start-up tests (what a first import or a first paint
costs can only be seen in a process that has imported nothing yet)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path


def fresh_env(tmp_path: Path, **extra: str) -> dict:
    """The environment of a fresh process with its own disk cache and crash-recovery folder."""
    return dict(os.environ, JOINTMODELLER_CACHE=str(tmp_path / "cache"),
                JOINTMODELLER_RECOVERY_DIR=str(tmp_path / "recovery"), **extra)


def demo_window_code(tmp_path: Path) -> str:
    """Source that makes the QApplication ``app`` and the main window ``w`` (settings in tmp_path) with the
    cached demo opened, not yet shown; ``json`` and ``sys`` imported. A test appends what it does next."""
    return textwrap.dedent(f"""\
        import json, sys
        from PySide6.QtCore import QSettings, QTimer
        from PySide6.QtWidgets import QApplication
        app = QApplication([])
        from jointmodeller.gui.main_window import MainWindow
        w = MainWindow(settings=QSettings({str(tmp_path / "s.ini")!r}, QSettings.IniFormat), confirm=False)
        w.open_demo()
        """)


def run_json(code: str, env: dict | None = None, timeout: float = 300) -> object:
    """Run ``code`` (dedented) in a fresh Python and return the JSON it printed last; a failing
    process fails the test with the end of its stderr."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=timeout, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])
