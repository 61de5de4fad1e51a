"""The viewport's pyvistaqt interactor and what making it costs at start-up: pyvistaqt (with pyvista's
plotting and VTK's OpenGL rendering) is imported with the first view, not with the GUI's modules,
and matplotlib.pyplot, which pyvista imports without using, is put off until something uses it
(:func:`defer_module`); windows swap without waiting for a vertical blank (:func:`no_vsync_wait`)."""

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


def qt_interactor_class():
    """pyvistaqt's QtInteractor, imported with the first view rather than with this module: it brings
    pyvista.plotting and VTK's OpenGL rendering, ~0.6–1 s. pyvista's colours and charts import
    matplotlib.pyplot at module level without using it until a colour cycler or chart is asked for;
    the app draws its plots with matplotlib's Figure and Agg canvas, never pyplot, so pyplot (~0.15 s:
    figures, axes, projections) is put off (:func:`defer_module`) until something uses it. The cyclic
    garbage collector is paused meanwhile: its passes over the heap growing with hundreds of new
    modules find nothing to free (the main window freezes the heap once a project is shown)."""
    if "pyvistaqt" not in sys.modules:
        paused = gc.isenabled()
        gc.disable()
        try:
            defer_module("matplotlib.pyplot")
            import pyvistaqt  # noqa: F401
        finally:
            if paused:
                gc.enable()
    from pyvistaqt import QtInteractor

    return QtInteractor


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


__all__ = ["defer_module", "no_vsync_wait", "qt_interactor_class"]
