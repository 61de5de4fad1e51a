"""Reproduce the start-up crash of issue 18 (docs/benchmarks.md, 2026-11-28): a background thread imports
qtpy's Qt modules (whose star imports make PySide6 create every class at once) while the main thread
creates PySide6 classes lazily by name. ``python scripts/qt_import_race.py thread`` crashed in 19 of 20
runs with PySide6 6.12 (exit code -11); ``... serial`` does the same work on one thread and does not.
Run with QT_QPA_PLATFORM=offscreen on a machine without a display. Exits 0 and prints "ok" if it lived."""

import importlib
import sys
import threading

from PySide6.QtWidgets import QApplication

QT_MODULES = ("qtpy.QtCore", "qtpy.QtGui", "qtpy.QtWidgets", "PySide6.QtOpenGL", "qtpy.QtOpenGLWidgets")


def main(mode: str) -> None:
    app = QApplication([])  # noqa: F841 (kept alive)
    import PySide6.QtCore as C
    import PySide6.QtGui as G
    import PySide6.QtWidgets as W

    names = [(m, n) for m in (C, G, W) for n in dir(m) if n.startswith("Q")]  # dir() creates no class

    def background() -> None:
        for name in QT_MODULES:
            importlib.import_module(name)

    if mode == "thread":
        t = threading.Thread(target=background)
        t.start()
        for m, n in names:
            getattr(m, n)
        t.join()
    else:
        background()
        for m, n in names:
            getattr(m, n)
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "thread")
