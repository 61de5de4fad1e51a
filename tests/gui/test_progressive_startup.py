"""Progressive start-up (issue 18). The main window is shown with its panels and the project before its
3D view exists (a placeholder stands in the view's place); the view is made right after and shows what
was asked of it meanwhile, and joins the shown window as a native child without turning the window into
an OpenGL-composited surface; every drawn live frame is a distinct state. Behaviour only: no timing
asserts."""

from __future__ import annotations

import dataclasses
import os
import textwrap

import numpy as np
import pytest

from tests.gui.fresh_process import demo_window_code, fresh_env, run_json
from tests.gui.live_study import turning_batch

pytestmark = pytest.mark.gui


def _unshown_window(tmp_path, project, monkeypatch):
    from PySide6.QtCore import QSettings

    from jointmodeller.app.document import Document
    from jointmodeller.gui.main_window import MainWindow

    monkeypatch.setenv("JOINTMODELLER_RECOVERY_DIR", str(tmp_path / "recovery"))
    return MainWindow(Document(project, None, recovery_dir=tmp_path / "recovery"),
                      settings=QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat), confirm=False)


def test_the_window_is_usable_before_its_view_exists_and_the_view_shows_what_was_asked(
        qtbot, tmp_path, monkeypatch, small_project):
    from vtkmodules.vtkInteractionStyle import vtkInteractorStyleUser

    w = _unshown_window(tmp_path, small_project, monkeypatch)
    qtbot.addWidget(w)
    vp = w.viewport
    assert not vp.has_view
    assert vp.maker.placeholder is not None and "3D view" in vp.maker.placeholder.text()
    # the tables work, and what the view is asked meanwhile is kept for it
    panel = w.panels["masses"]
    w.tabs.setCurrentWidget(panel)
    panel.view.selectRow(1)  # as a click on the row
    w.act_axes.setChecked(False)
    w.viewport.camera_preset("lateral")
    w.act_place.trigger()
    assert vp.picking.mode == "place"
    m0 = small_project.masses[1]
    w.doc.set_row("masses", 1, dataclasses.replace(m0, colour="#123456"), "Recolour")
    assert w.doc.project.masses[1].colour == "#123456"
    assert not vp.has_view
    with qtbot.waitSignal(vp.viewReady, timeout=120000):
        w.resize(1000, 700)
        w.show()
    assert vp.has_view and vp.maker.placeholder is None
    scene = vp.scene
    assert set(scene.mass_actors) == {m.name for m in small_project.masses}
    assert scene.project is w.doc.project  # the edit made before the view existed is drawn
    assert scene.selected == ("masses", 1)
    assert not scene.show_axes and not any(a.GetVisibility() for a in scene.axes_actors.values())
    assert isinstance(vp.plotter.iren.interactor.GetInteractorStyle(), vtkInteractorStyleUser)  # placing
    direction = np.asarray(scene.plotter.camera.position) - np.asarray(scene.plotter.camera.focal_point)
    assert direction / np.linalg.norm(direction) == pytest.approx([1.0, 0.0, 0.0], abs=1e-6)  # lateral


def test_the_view_made_after_the_window_is_shown_leaves_the_window_raster_composed(
        qtbot, tmp_path, monkeypatch, small_project):
    """The 3D view (an OpenGL widget) joins the shown main window as a native child: the main window keeps
    the raster surface it was shown with, as when the view is made before the first show. Had the view
    joined as a plain child, Qt would have recreated the main window as an OpenGL-composited surface and
    every repaint of a label during a live run would compose the whole window with OpenGL (the slower
    live view of 42ee2b7, docs/benchmarks.md)."""
    from PySide6.QtGui import QSurface

    w = _unshown_window(tmp_path, small_project, monkeypatch)
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.viewport.viewReady, timeout=120000):
        w.resize(1000, 700)
        w.show()
    plotter = w.viewport.plotter
    with qtbot.waitSignal(plotter.frameSwapped, timeout=30000):
        plotter.update()
    w.run_panel.status.setText("a label repainted")  # as live runs do
    qtbot.wait(50)
    assert plotter.interactor.windowHandle() is not None  # its own native window
    assert w.windowHandle().surfaceType() == QSurface.SurfaceType.RasterSurface


def test_a_use_of_the_view_before_it_is_made_makes_it(qtbot, tmp_path, monkeypatch, small_project):
    """Screenshots, picking positions and the scene itself wait for the view instead of failing."""
    w = _unshown_window(tmp_path, small_project, monkeypatch)
    qtbot.addWidget(w)
    assert not w.viewport.has_view
    x, y = w.viewport.world_to_display(small_project.masses[0].position_G)
    assert np.isfinite([x, y]).all() and w.viewport.has_view
    assert set(w.viewport.scene.mass_actors) == {m.name for m in small_project.masses}


@pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="needs a display (pytest-xvfb starts one)")
def test_the_window_is_painted_before_pyvista_is_imported_then_the_view_renders(tmp_path):
    """In a fresh process, as the bench's start-up (gui.startup_s, gui.startup_view_s): when the main
    window with the cached demo has been painted, neither pyvista nor VTK's rendering is imported;
    then the view is made and renders the demo."""
    code = demo_window_code(tmp_path) + textwrap.dedent("""
        seen = {}
        def painted():
            seen["painted"] = sorted(m for m in ("pyvista", "pyvistaqt", "vtkmodules.vtkRenderingCore")
                                     if m in sys.modules)
            seen["view when painted"] = w.viewport.has_view
            seen["tables"] = w.panels["masses"].model.rowCount()
        def ready():
            seen["view"] = w.viewport.has_view
            seen["bones"] = sorted(w.viewport.scene.mass_actors)
            QTimer.singleShot(0, app.quit)
        w.viewport.windowPainted.connect(painted)
        w.viewport.viewReady.connect(ready)
        w.show()
        QTimer.singleShot(120000, app.quit)
        app.exec()
        w.close()
        print(json.dumps(seen))
    """)
    seen = run_json(code, fresh_env(tmp_path))
    assert seen["painted"] == [] and seen["view when painted"] is False
    assert seen["tables"] >= 2
    assert seen["view"] is True and len(seen["bones"]) >= 2


def test_the_background_imports_import_no_qt_module():
    """What the GUI imports off its thread (the view's modules, the warm-up of Start's modules) touches
    no Qt binding: qtpy's star imports make PySide6 create every class of a module at once, and that
    creation racing the GUI thread creating classes by name crashed the process (a segmentation fault
    in 19 of 20 runs of a reproduction, docs/benchmarks.md). The Qt side is refused off the GUI thread."""
    code = """
        import json, sys, threading
        import jointmodeller.gui
        from PySide6.QtWidgets import QApplication
        app = QApplication([])
        from jointmodeller.gui import interactor
        from jointmodeller.gui.main_window import warm_up_imports
        before = set(sys.modules)
        errors = []
        def qt_side():
            try:
                interactor.import_qt_view_modules()
            except RuntimeError as exc:
                errors.append(str(exc))
        t = threading.Thread(target=interactor.import_view_modules)
        t.start(); t.join()
        warm_up_imports().join()
        t = threading.Thread(target=qt_side)
        t.start(); t.join()
        new = sorted(set(sys.modules) - before)
        qt = [m for m in new if m.split(".")[0] in ("PySide6", "shiboken6", "qtpy", "pyvistaqt")]
        interactor.qt_interactor_class()
        print(json.dumps({"qt": qt, "pyvista": "pyvista.plotting" in new, "errors": errors,
                          "studies": "jointmodeller.app.studies" in new,
                          "pyvistaqt": "pyvistaqt" in sys.modules}))
    """
    seen = run_json(code, dict(os.environ, QT_QPA_PLATFORM="offscreen"))
    assert seen["pyvista"] and seen["studies"] and seen["qt"] == []
    assert len(seen["errors"]) == 1 and "GUI thread" in seen["errors"][0]
    assert seen["pyvistaqt"]


def test_live_states_are_drawn_as_distinct_timer_paced_frames_once_the_view_is_made(qtbot, window, demo_project):
    """One batch (one integrator step's dense output) is drawn as several frames by the viewport's
    timer, each a distinct state, in a view made after the window was shown."""
    w = window(demo_project)
    qtbot.waitUntil(lambda: w.viewport.has_view, timeout=120000)
    vp = w.viewport
    w.study_control.live_project = demo_project
    f0 = vp.frames_drawn
    k = 40
    w.study_control.live_sample(turning_batch(demo_project, k))
    assert vp.frames_drawn == f0  # queued for the timer, not drawn in the caller's turn
    qtbot.waitUntil(lambda: len(vp.playback) == 0 and vp._awaiting is None, timeout=30000)
    times = [t for t, _ in vp.shown_live]
    assert len(times) == vp.frames_drawn - f0 >= 2  # more than one frame from one batch: paced by the timer
    assert len(set(times)) == len(times) and times == sorted(times)  # each a distinct state, in order
    assert vp.playback.taken + vp.playback.dropped == k
