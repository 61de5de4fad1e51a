"""What the GUI imports before its first window (issue 18: start-up ≤ 2 s warm). Behavioural checks
in fresh processes (which modules are in sys.modules), no timings: plots, studies, scipy's Rotation,
numba kernels and pyplot are imported where first used, not to show the main window; so are the
project file's SQLAlchemy and Alembic (the demo is cached as a project snapshot), the demo's builders,
the mesh import dialog and pyvista's pooch."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from tests.gui.fresh_process import demo_window_code, fresh_env, run_json

pytestmark = pytest.mark.gui  # starts the GUI in fresh processes

HEAVY = ("matplotlib", "scipy", "numba", "pyvistaqt", "pyvista.plotting", "trimesh", "sqlalchemy", "alembic",
         "jointmodeller.persistence", "jointmodeller.app.demo", "jointmodeller.io.meshes",
         "jointmodeller.core.geometry.mass_properties", "jointmodeller.gui.mesh_import")
"""Not imported by ``import jointmodeller.gui.main_window`` (matplotlib.pyplot and scipy.spatial with them)."""
NOT_TO_SHOW = ("sqlalchemy", "alembic", "jointmodeller.persistence", "jointmodeller.app.demo",
               "jointmodeller.io.meshes", "jointmodeller.core.geometry.mass_properties",
               "jointmodeller.gui.mesh_import")
"""Not imported to show the cached demo either: the project file's SQLAlchemy and Alembic (until a file
is opened or saved), the demo's builders (until the cache misses), the mesh import dialog."""


def _run(code: str, env: dict | None = None):
    return run_json(code, env)


def test_importing_the_main_window_imports_no_heavy_module():
    names = HEAVY + ("matplotlib.pyplot", "scipy.spatial", "pooch")
    loaded = _run(f"""
        import json, sys
        import jointmodeller.gui.main_window
        print(json.dumps({{m: type(sys.modules[m]).__name__ for m in {names!r} if m in sys.modules}}))
    """)
    assert loaded == {"pooch": "_DeferredModule"}  # pyvista's module-level import, used for downloads only


@pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="needs a display (pytest-xvfb starts one)")
def test_the_main_window_shows_the_cached_demo_without_pyplot_scipy_or_numba(tmp_path):
    """The bench's warm start-up (gui.startup_s): the demo from its cache, the window shown and drawn.
    pyplot stays a stand-in (pyvista imports it, nothing here uses it), and it becomes the real module
    when something does. What pressing Start needs (the studies, numba) is imported in the background
    once the window is up, so Start does not stall the event loop with it (gui.max_stall_ms)."""
    env = fresh_env(tmp_path)
    code = demo_window_code(tmp_path) + textwrap.dedent(f"""
        w.show()
        app.processEvents()
        w.viewport.plotter.render()
        seen = {{m: type(sys.modules[m]).__name__ for m in ("matplotlib.pyplot", "matplotlib.figure", "scipy.spatial",
                                                           "numba", "trimesh", "pooch") + {NOT_TO_SHOW!r}
                 if m in sys.modules}}
        import time
        from PySide6.QtCore import QEventLoop, QTimer
        t0 = time.perf_counter()
        while not w.warm_up_finished() and time.perf_counter() - t0 < 120:  # begun after the first show
            loop = QEventLoop()
            QTimer.singleShot(50, loop.quit)
            loop.exec()
        seen["after warm-up"] = [m for m in ("jointmodeller.app.studies", "numba") if m in sys.modules]
        import matplotlib.pyplot as plt
        fig = plt.figure()
        seen["after use"] = type(sys.modules["matplotlib.pyplot"]).__name__
        seen["same figure function"] = sys.modules["matplotlib.pyplot"].figure is plt.figure
        w.close()
        print(json.dumps(seen))
    """)
    _run(code, env)  # builds the demo and the decimated meshes into the cache
    seen = _run(code, env)
    assert seen == {"matplotlib.pyplot": "_DeferredModule", "pooch": "_DeferredModule", "after use": "module",
                    "same figure function": True, "after warm-up": ["jointmodeller.app.studies", "numba"]}
    assert list((tmp_path / "cache" / "display").glob("display-*.vtp")), "decimated bones not kept"


def test_the_demo_cache_is_a_snapshot_read_without_the_project_file(tmp_path):
    """The GUI's demo comes from a project snapshot (io.project_snapshot), not a project file: reading it
    back imports neither SQLAlchemy nor Alembic nor the demo's builders."""
    from jointmodeller.app.demo_cache import demo_cache_file

    assert demo_cache_file(tmp_path).suffix == ".npz"
    env = dict(os.environ, JOINTMODELLER_CACHE=str(tmp_path / "cache"))
    code = f"""
        import json, sys
        from jointmodeller.app.demo_cache import demo_project
        demo_project()
        print(json.dumps([m for m in {NOT_TO_SHOW!r} if m in sys.modules]))
    """
    _run(code, env)  # builds the demo into the cache (and imports the builders for it)
    assert _run(code, env) == []


def test_pyside_asks_whether_a_module_uses_it_by_reading_its_file():
    """PySide6 checks every imported module's source for "PySide6" (its __feature__ switches): after
    ``import jointmodeller.gui`` it reads the file's bytes instead of going through inspect.getsource,
    with the same answer for every module of a started GUI."""
    differ = _run("""
        import json, sys
        import jointmodeller.gui.main_window
        from jointmodeller.gui.interactor import fast_pyside_feature_check
        feature = sys.modules["shibokensupport.feature"]
        fast = feature._mod_uses_pyside
        assert getattr(fast, "jm_fast", False), "not installed"
        fast_pyside_feature_check()  # a second call changes nothing
        assert feature._mod_uses_pyside is fast
        mods = [m for m in list(sys.modules.values()) if m is not None]
        uses = [fast(sys.modules[m]) for m in ("jointmodeller.gui.main_window", "json")]
        print(json.dumps([m.__name__ for m in mods if fast(m) != fast.jm_original(m)] + [len(mods), uses]))
    """)
    assert differ[:-2] == [] and differ[-2] > 300 and differ[-1] == [True, False]


def test_vtk_finds_its_compiled_modules_from_one_listing_of_its_folder():
    """VTK's import hook globs its folder for each compiled module; after ``import jointmodeller.gui`` it
    searches one listing of the folder instead, finding the same file for every module there (and
    nothing for a name that is not there)."""
    differ = _run("""
        import json, os
        import vtkmodules
        import jointmodeller.gui  # noqa: F401
        from jointmodeller.gui.interactor import fast_vtk_module_lookup
        fast = vtkmodules.find_lib_path
        assert getattr(fast, "jm_fast", False), "not installed"
        fast_vtk_module_lookup()
        assert vtkmodules.find_lib_path is fast
        paths = list(vtkmodules.__path__)
        names = sorted({f.split(".")[0] for p in paths for f in os.listdir(p) if f.startswith("vtk")})
        names += ["vtkIOXML", "vtkNoSuchModule", "vtk"]
        found = [fast(paths, n) for n in names]
        print(json.dumps([n for n, f in zip(names, found) if f != fast.jm_original(paths, n)]
                         + [sum(f is not None for f in found), fast(paths, "vtkNoSuchModule")]))
    """)
    assert differ[:-2] == [] and differ[-2] > 50 and differ[-1] is None


def test_a_deferred_module_runs_on_first_use_once(tmp_path, monkeypatch):
    from jointmodeller.gui.interactor import defer_module

    pkg = tmp_path / "jm_defer_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "slow.py").write_text("import builtins\nbuiltins.jm_defer_runs = getattr(builtins, 'jm_defer_runs', 0) + 1\n"
                                 "VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("jm_defer_pkg", "jm_defer_pkg.slow"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import builtins

    monkeypatch.setattr(builtins, "jm_defer_runs", 0, raising=False)
    defer_module("jm_defer_pkg.slow")
    import jm_defer_pkg.slow as slow  # a library's module-level import: nothing runs yet

    assert builtins.jm_defer_runs == 0
    assert slow.VALUE == 42 and builtins.jm_defer_runs == 1
    import jm_defer_pkg

    real = sys.modules["jm_defer_pkg.slow"]
    assert type(real).__name__ == "module" and jm_defer_pkg.slow is real and real.VALUE == 42
    slow.VALUE = 7  # writes reach the real module too
    assert real.VALUE == 7 and builtins.jm_defer_runs == 1
    defer_module("jm_defer_pkg.slow")  # imported already: left alone
    assert sys.modules["jm_defer_pkg.slow"] is real


def test_the_gui_bench_draws_on_a_display_or_xvfb_never_offscreen(monkeypatch):
    """gui.viewport_fps_live was 0 under QT_QPA_PLATFORM=offscreen (no window is exposed there): the
    measuring processes drop that platform and run on the display or under xvfb-run, and without
    either the group says it needs a display."""
    from jointmodeller.bench import gui as bench_gui

    env = bench_gui._child_env({"QT_QPA_PLATFORM": "offscreen", "PATH": "/bin"})
    assert "QT_QPA_PLATFORM" not in env and env["PATH"] == "/bin"
    assert bench_gui._child_env({"QT_QPA_PLATFORM": "xcb"})["QT_QPA_PLATFORM"] == "xcb"
    if sys.platform in ("win32", "darwin"):
        return
    monkeypatch.setenv("DISPLAY", ":99")
    assert bench_gui._wrap(["python"]) == ["python"]
    monkeypatch.delenv("DISPLAY")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(bench_gui.shutil, "which", lambda name: "/usr/bin/xvfb-run" if name == "xvfb-run" else None)
    assert bench_gui._wrap(["python"])[:2] == ["/usr/bin/xvfb-run", "-a"]
    monkeypatch.setattr(bench_gui.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="needs a display"):
        bench_gui._wrap(["python"])
