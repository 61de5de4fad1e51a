"""Fixtures for the GUI tests: main windows over a project, the demo project, and cleanup so no Qt
window or VTK plotter outlives its test (after pyvistaqt's tests/conftest.py). The small two-box
project (``small_project``) is in tests/conftest.py, shared with the render and picking tests."""

from __future__ import annotations

import gc

import pytest

from jointmodeller.model.specs import Project


def leaked_windows() -> list:
    """The top-level Qt windows still shown: once a test's own widgets are closed (qtbot's, the
    ``window`` fixture's), none may be left. Only QWidgets are asked: shiboken can hand back a widget
    deleted a moment ago under the type of what now lives at its address (a QOffscreenSurface was
    seen on CI, from a GL surface wrapper pyvistaqt kept after close: gui.interactor.close_interactor now
    drops it), which has no isVisible."""
    from PySide6.QtWidgets import QApplication, QWidget

    if QApplication.instance() is None:
        return []
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, QWidget) and w.isVisible()]


@pytest.fixture(autouse=True)
def _no_leaked_windows(request):
    """A test that leaves a window shown fails, naming it (pyvistaqt's check_gc is the model); the
    window is closed first, so the next test starts clean. pyvista plotters are closed too."""
    yield
    if "qtbot" not in request.fixturenames and "qapp" not in request.fixturenames:
        return
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        return
    leaked = leaked_windows()
    names = [f"{type(w).__name__} {w.windowTitle()!r}" for w in leaked]
    for w in leaked:
        w.close()
    app.processEvents()
    try:
        import pyvista

        pyvista.close_all()
    except Exception:  # pragma: no cover - cleanup must not hide a test's own failure
        pass
    gc.collect()
    if leaked:
        pytest.fail(f"the test left {len(leaked)} window(s) open: {', '.join(names)} (close them, or give "
                    "them to qtbot.addWidget)", pytrace=False)


@pytest.fixture(scope="session")
def demo_project() -> Project:
    """The built-in demo elbow (built once per session; skipped while the demo code is absent)."""
    demo = pytest.importorskip("jointmodeller.app.demo", reason="the demo is not in the tree yet")
    return demo.build_demo_project()


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    """A factory of shown main windows over a project, with settings and recovery under tmp_path."""
    from PySide6.QtCore import QSettings

    from jointmodeller.app.document import Document
    from jointmodeller.gui.main_window import MainWindow

    monkeypatch.setenv("JOINTMODELLER_RECOVERY_DIR", str(tmp_path / "recovery"))
    made = []

    def make(project: Project, path=None):
        settings = QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)
        w = MainWindow(Document(project, path, recovery_dir=tmp_path / "recovery"), settings=settings,
                       confirm=False)
        qtbot.addWidget(w)
        w.resize(1200, 800)
        w.show()
        qtbot.waitExposed(w)
        made.append(w)
        return w

    yield make
    for w in made:
        for runner in (w.runner, w.process_runner):
            if runner.running:
                runner.stop()
                runner.wait(20000)
        w.close()
