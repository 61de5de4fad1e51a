"""The viewport's pyvistaqt interactor and what making it costs at start-up: pyvistaqt (with pyvista's
plotting and VTK's OpenGL rendering) is imported with the first view, not with the GUI's modules,
and matplotlib.pyplot, which pyvista imports without using, is put off until something uses it
(:func:`defer_module`); windows swap without waiting for a vertical blank (:func:`no_vsync_wait`).
Importing :mod:`jointmodeller.gui` also makes PySide6's check of each imported module and VTK's
search for its compiled modules cheap (:func:`fast_pyside_feature_check`, :func:`fast_vtk_module_lookup`)
and puts off pooch, which pyvista imports for downloads only."""

from __future__ import annotations

import gc
import importlib
import importlib.util
import sys
import threading
import types


def no_vsync_wait() -> None:
    """Make the windows created from now on swap without waiting for a vertical blank (the default
    format, which pyvistaqt sets when its widget is made, before the main window exists): live
    frames are paced by the viewport's timer, and a paint that waits for vsync blocks the event loop
    (on software GL/Xvfb ~35 ms a frame instead of ~22 ms)."""
    from PySide6.QtGui import QSurfaceFormat

    fmt = QSurfaceFormat.defaultFormat()
    if fmt.swapInterval() != 0:
        fmt.setSwapInterval(0)
        QSurfaceFormat.setDefaultFormat(fmt)


def view_surface_format() -> None:
    """Install, before the main window is created, the OpenGL surface format pyvistaqt's widget will
    install when the 3D view is made (pyvistaqt.rwi._default_format, VTK's QVTKRenderWindowAdapter
    default: desktop OpenGL 3.2 core, double-buffered, 8-bit channels and depth, no multisampling),
    swapping without waiting for a vertical blank. pyvistaqt needs its format to be the default before
    the top-level window exists (else the view can composite black on Wayland); with the view made
    after the window is shown (progressive start-up), the window would otherwise get Qt's default
    format, whose vsync-waiting swap made each live frame ~10 ms slower on software GL/Xvfb."""
    from PySide6.QtGui import QSurfaceFormat

    fmt = QSurfaceFormat()
    fmt.setRenderableType(QSurfaceFormat.RenderableType.OpenGL)
    fmt.setProfile(QSurfaceFormat.OpenGLContextProfile.CoreProfile)
    fmt.setVersion(3, 2)
    fmt.setSwapBehavior(QSurfaceFormat.SwapBehavior.DoubleBuffer)
    fmt.setRedBufferSize(8)
    fmt.setGreenBufferSize(8)
    fmt.setBlueBufferSize(8)
    fmt.setDepthBufferSize(8)
    fmt.setAlphaBufferSize(8)
    fmt.setStencilBufferSize(0)
    fmt.setSamples(0)
    fmt.setSwapInterval(0)
    QSurfaceFormat.setDefaultFormat(fmt)


def fast_pyside_feature_check() -> None:
    """PySide6 asks of every module imported after it whether its source mentions "PySide6" (for its
    ``__feature__`` switches, PYSIDE-2029), through ``inspect.getsource``: linecache and tokenizing,
    ~0.45 ms a module, ~0.25 s for the ~570 modules imported to show the main window. The same
    question is answered here by reading the module's ``.py`` file as bytes; a module without one
    (built in, extension, bytecode only, unreadable) goes to PySide6's own check. Left alone when
    PySide6 has no such check (another version)."""
    import PySide6.QtCore  # noqa: F401  (installs the check)

    feature = sys.modules.get("shibokensupport.feature")
    original = getattr(feature, "_mod_uses_pyside", None)
    if original is None or getattr(original, "jm_fast", False):
        return

    def mod_uses_pyside(module) -> bool:
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not path.endswith(".py"):
            return original(module)
        try:
            with open(path, "rb") as fh:
                return b"PySide6" in fh.read()
        except OSError:
            return original(module)

    mod_uses_pyside.jm_fast = True  # type: ignore[attr-defined]
    mod_uses_pyside.jm_original = original  # type: ignore[attr-defined]
    feature._mod_uses_pyside = mod_uses_pyside


def fast_vtk_module_lookup() -> None:
    """VTK's import hook (``vtkmodules.find_lib_path``) finds each compiled module's file by globbing
    the vtkmodules folder (~540 files) and resolving every match, twice (``.pyd``, then ``.so``):
    ~4 ms a module, ~0.1–0.2 s for the ~40 VTK modules the first window imports. The folder is
    listed once here and searched in the same order with the same rules; a module not found that way
    goes to VTK's own lookup. Left alone when vtkmodules has no such function (another version)."""
    import os
    from pathlib import Path

    import vtkmodules

    original = getattr(vtkmodules, "find_lib_path", None)
    extensions = getattr(vtkmodules, "LIB_EXTS", None)
    if original is None or extensions is None or getattr(original, "jm_fast", False):
        return
    listings: dict[str, list[str]] = {}

    def find_lib_path(paths, vtk_module_name):
        n = len(vtk_module_name)
        for ext in extensions:
            for base_path in paths:
                names = listings.get(base_path)
                if names is None:
                    try:
                        names = listings[base_path] = os.listdir(base_path)  # the order glob walks
                    except OSError:
                        names = listings[base_path] = []
                for name in names:  # the glob f"{vtk_module_name}[.-]*"
                    if name.startswith(vtk_module_name) and name[n:n + 1] in (".", "-"):
                        resolved_file = Path(base_path, name).resolve()
                        if resolved_file.is_file() and ext in resolved_file.suffixes:
                            return str(resolved_file)
        return original(paths, vtk_module_name)

    find_lib_path.jm_fast = True  # type: ignore[attr-defined]
    find_lib_path.jm_original = original  # type: ignore[attr-defined]
    vtkmodules.find_lib_path = find_lib_path


def qt_interactor_class():
    """pyvistaqt's QtInteractor, imported with the first view rather than with this module: it brings
    pyvista.plotting and VTK's OpenGL rendering, ~0.6–1 s (:func:`import_view_modules`, done in a
    background thread at start-up), and qtpy's and pyvistaqt's Qt classes (:func:`import_qt_view_modules`,
    always on the GUI thread)."""
    if "pyvistaqt" not in sys.modules:
        import_view_modules()
        import_qt_view_modules()
        import pyvistaqt  # noqa: F401
    from pyvistaqt import QtInteractor

    _no_vsync_in_pyvistaqt_format()
    return QtInteractor


def close_interactor(plotter) -> None:
    """Close a pyvistaqt QtInteractor and drop its wrappers of Qt's GL context and surface.

    pyvistaqt keeps ``QOpenGLContext.surface()``, the QOpenGLWidget's own QOffscreenSurface, whose
    wrapper shiboken is not told about when Qt deletes it with the widget; after ``close()`` nothing
    drops it, so once the window is deleted the wrapper outlives its object and shiboken hands it out
    for whatever is made next at that address (a table's header came back as a QOffscreenSurface, and
    a GUI test crashed in the event loop: reproduced with a parent deleted after ``close()``). Dropped
    here while both still live, the wrappers leave shiboken's map before their objects go. Uses
    pyvistaqt's own last step of a context teardown (``_forget_context``) where it has one."""
    try:
        plotter.close()
    except Exception:  # pragma: no cover - VTK teardown differences between versions
        pass
    forget = getattr(plotter, "_forget_context", None)
    if callable(forget):
        forget()


def _no_vsync_in_pyvistaqt_format() -> None:
    """pyvistaqt's widget installs its surface format as the default when it is made
    (``pyvistaqt.rwi._default_format``) and its own native window takes that format: with the view
    made after the main window is shown, that window would be created swapping with vsync (~20–30 ms
    more per live frame on software GL/Xvfb than the window made at the first show, after
    :func:`no_vsync_wait`). The same format with a swap interval of 0 is installed instead; left alone
    when pyvistaqt has no such function (another version)."""
    rwi = sys.modules.get("pyvistaqt.rwi")
    original = getattr(rwi, "_default_format", None)
    if rwi is None or original is None or getattr(original, "jm_no_vsync", False):
        return

    def default_format():
        fmt = original()
        fmt.setSwapInterval(0)
        return fmt

    default_format.jm_no_vsync = True  # type: ignore[attr-defined]
    setattr(rwi, "_default_format", default_format)  # noqa: B010 (a module attribute mypy does not know)


VIEW_MODULES = ("pyvista", "pyvista.plotting", "vtkmodules.vtkRenderingOpenGL2", "vtkmodules.vtkRenderingUI",
                "vtkmodules.vtkRenderingCore", "vtkmodules.vtkInteractionStyle", "jointmodeller.render.scene")
"""What the 3D view needs that touches no Qt: pyvista's plotting, VTK's OpenGL rendering, interaction
and picking, the scene. Safe to import in a background thread while the GUI thread runs."""

QT_VIEW_MODULES = ("qtpy.QtCore", "qtpy.QtGui", "qtpy.QtWidgets", "PySide6.QtOpenGL", "qtpy.QtOpenGLWidgets")
"""The Qt modules pyvistaqt imports (through qtpy). qtpy's ``from PySide6.QtX import *`` makes PySide6
create every class of the module and its enums at once (~0.2–0.3 s), which PySide6 otherwise does
lazily on first use. Done in a background thread while the GUI thread creates classes by name, that
crashes the process (shiboken's lazy type creation is not re-entrant, and Python switches threads
midway, in its enum module): a segmentation fault in 19 of 20 runs of a reproduction, and in 1 of 100
start-ups of the app that imported these in the background (docs/benchmarks.md, issue 18). Imported
on the GUI thread."""


def import_view_modules() -> None:
    """Import what making the 3D view needs without Qt (:data:`VIEW_MODULES`): ~1–1.5 s, run in a
    background thread while the main window is already shown (:class:`ViewImport`); Python's import
    locks make a use meanwhile wait for a module instead of importing it twice. pyvista's colours and
    charts import matplotlib.pyplot at module level without using it until a colour cycler or chart is
    asked for; the app draws its plots with matplotlib's Figure and Agg canvas, never pyplot, so pyplot
    (~0.15 s: figures, axes, projections) is put off (:func:`defer_module`) until something uses it.
    The cyclic garbage collector is paused meanwhile: its passes over the heap growing with hundreds
    of new modules find nothing to free (the main window freezes the heap once a project is shown)."""
    if all(name in sys.modules for name in VIEW_MODULES):
        return
    paused = gc.isenabled()
    gc.disable()
    try:
        defer_module("matplotlib.pyplot")
        for name in VIEW_MODULES:
            importlib.import_module(name)
    finally:
        if paused:
            gc.enable()


def import_qt_view_modules() -> None:
    """Import the Qt modules pyvistaqt uses (:data:`QT_VIEW_MODULES`); on the GUI thread only."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("the Qt modules of the 3D view are imported on the GUI thread")
    for name in QT_VIEW_MODULES:
        importlib.import_module(name)


class ViewImport:
    """:func:`import_view_modules` in a background thread: ``start()`` once, ``done()`` polled by the GUI
    thread, ``error`` what it raised (the GUI thread then imports them itself and meets the error
    where it can say it)."""

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> None:
        if self.thread is not None:
            return

        def run() -> None:
            try:
                import_view_modules()
            except BaseException as exc:  # noqa: BLE001 - met again where the view is made
                self.error = exc

        self.thread = threading.Thread(target=run, name="jointmodeller-view-import", daemon=True)
        self.thread.start()

    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def done(self) -> bool:
        return self.thread is not None and not self.thread.is_alive()


class _DeferredModule(types.ModuleType):
    """Stands in sys.modules for a module not yet run; the first attribute read or written runs the
    real module (in its place in sys.modules and on its package) and forwards to it from then on."""

    def __getattr__(self, name: str):
        return getattr(self._jm_load(), name)

    def __setattr__(self, name: str, value) -> None:
        if name.startswith("_jm_") or name in ("__spec__", "__file__", "__loader__", "__package__", "__path__"):
            super().__setattr__(name, value)
        else:
            setattr(self._jm_load(), name, value)

    def __dir__(self) -> list[str]:
        return dir(self._jm_load())


def defer_module(name: str) -> None:
    """Put a stand-in for the module ``name`` in sys.modules (unless it is imported already), so that
    ``import name`` costs nothing until an attribute of it is used; then the real module is imported.
    For modules imported by libraries at module level but used only in some of their functions."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)  # imports its package
    if spec is None:
        return
    stand_in = _DeferredModule(name, f"{name}, imported when first used")
    lock = threading.RLock()

    def load():
        with lock:
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]
                try:
                    importlib.import_module(name)
                except BaseException:
                    sys.modules.setdefault(name, stand_in)
                    raise
            real = sys.modules[name]
        return real

    stand_in._jm_load = load
    stand_in.__spec__ = spec
    stand_in.__file__ = spec.origin
    stand_in.__loader__ = spec.loader
    stand_in.__package__ = name.rpartition(".")[0]
    sys.modules[name] = stand_in
    parent, _, child = name.rpartition(".")
    if parent and not hasattr(sys.modules[parent], child):
        setattr(sys.modules[parent], child, stand_in)  # as an import would (replaced by the real one)


__all__ = ["QT_VIEW_MODULES", "VIEW_MODULES", "ViewImport", "close_interactor", "defer_module",
           "fast_pyside_feature_check", "fast_vtk_module_lookup", "import_qt_view_modules", "import_view_modules",
           "no_vsync_wait", "qt_interactor_class", "view_surface_format"]
