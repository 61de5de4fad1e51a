"""The 3D viewport: a pyvistaqt interactor showing the project's scene, with picking for selection,
interactive ligament placement (two clicks on two bones) and dragging an end along its bone."""

from __future__ import annotations

import collections
import gc
import importlib
import importlib.util
import sys
import threading
import time
import types
from typing import Callable

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget
from vtkmodules.vtkInteractionStyle import vtkInteractorStyleTrackballCamera, vtkInteractorStyleUser
from vtkmodules.vtkRenderingCore import vtkCellPicker

from jointmodeller.app.picking import (
    drag_end,
    make_attachment,
    make_force,
    nearest_mass,
    project_poses,
    snap_to_mass,
    to_global,
)
from jointmodeller.gui.playback import Playback
from jointmodeller.model.specs import Project
from jointmodeller.render.scene import JointScene, SceneFrame

LIVE_FPS = 60.0
"""Upper bound of redraws per second during a live run (states in between are dropped)."""
MAX_DRAW_DUTY = 0.9
"""At most this share of the wall time goes to live frames (asking for one until the window shows it):
slow software OpenGL draws less often instead of starving the event loop."""
PAINT_TIMEOUT_S = 0.5
"""A live frame the window has not shown after this long (e.g. hidden) no longer holds the next."""
LIVE_PLAY_HZ = 90.0
"""Streamed states are played at most this fast (the study streams 90 a second; the viewport shows
what it can of them, at most LIVE_FPS, skipping the rest)."""
LIVE_MAX_LAG_S = 5.0
"""Streamed states wait at most this long (an integrator step of the demo can take seconds)."""


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


def closed_outward(poly) -> bool:
    """True for a closed triangle mesh wound consistently outwards (every directed edge once, its
    reverse once, positive volume): from outside its back faces are hidden, so culling them (about
    40 % of a software-GL frame of the demo) changes no pixel."""
    try:
        faces = np.asarray(poly.GetPolys().GetConnectivityArray(), dtype=np.int64)
        offsets = np.asarray(poly.GetPolys().GetOffsetsArray(), dtype=np.int64)
        if len(offsets) < 5 or np.any(np.diff(offsets) != 3) or poly.GetNumberOfCells() != len(offsets) - 1:
            return False
        tri = faces.reshape(-1, 3)
        pts = np.asarray(poly.GetPoints().GetData(), float)
    except (AttributeError, TypeError, ValueError):
        return False
    edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
    n = int(tri.max()) + 1
    key = edges[:, 0] * n + edges[:, 1]
    rev = edges[:, 1] * n + edges[:, 0]
    if len(np.unique(key)) != len(key) or not np.array_equal(np.sort(key), np.sort(rev)):
        return False
    v0, v1, v2 = pts[tri[:, 0]], pts[tri[:, 1]], pts[tri[:, 2]]
    return float(np.einsum("ij,ij->i", v0, np.cross(v1, v2)).sum()) > 0.0


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


class Viewport(QWidget):
    """pyvistaqt view of the scene; emits what the user picks.

    Modes: "select" (click a bone to select its mass row), "place" (click a bone, then another: an
    attachment is proposed), "drag" (press near an end of the selected attachment and drag it along
    its bone).
    """

    massPicked = Signal(str)
    forcePlaced = Signal(object)
    """A point load was placed with a click (mode "force"): the Force row to add."""
    boneMoved = Signal(str, object)
    """A bone was dragged (mode "move_bone"): its name and displacement in G (dx, dy, dz) [m]."""
    angleMeasured = Signal(float)
    """An angle was measured from three picks [°]."""
    measured = Signal(float, str, str)
    """A distance was measured: metres, and the masses of its first and second point."""
    attachmentPlaced = Signal(object)
    attachmentMoved = Signal(int, object)
    message = Signal(str)
    liveFrameShown = Signal(float)
    """A streamed live state was drawn (its simulated time)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        QtInteractor = qt_interactor_class()
        # one sample per pixel: 8× MSAA (pyvista's default) costs ~5× per frame on software GL
        self.plotter = QtInteractor(self, auto_update=False, multi_samples=1)
        no_vsync_wait()
        # its own native window: a frame then recomposes only the 3D view, not the whole main window
        # (on software GL the compose of a 1200×800 window costs more than drawing the demo)
        self.plotter.setAttribute(Qt.WA_NativeWindow)
        self.plotter.disable_anti_aliasing()
        self.scene = JointScene(self.plotter)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.plotter.interactor)
        self.mode = "select"
        self.project: Project | None = None
        self.selected_attachment: int | None = None
        self._first_pick = None
        self._angle_picks: list = []
        self._moving: tuple | None = None  # (mass, grabbed point in G, display depth, displacement in G)
        self._hover_at = 0.0
        self._drag: tuple[int, str] | None = None
        self._drag_preview = None
        self._picker = vtkCellPicker()
        self._picker.SetTolerance(0.0005)
        self._pending: SceneFrame | None = None
        self.playback = Playback(rate_hz=LIVE_PLAY_HZ, max_lag_s=LIVE_MAX_LAG_S)
        """Streamed live states waiting to be drawn (each at most once)."""
        self._to_frame: Callable[[object], SceneFrame | None] = lambda s: s
        self.frames_drawn = 0
        self.draw_seconds = 0.0
        self.shown_live: collections.deque = collections.deque(maxlen=100_000)
        """(time, step) of every live state drawn (step: the integrator step it belongs to, or -1)."""
        self._draw_ema = 0.0
        self._next_draw = 0.0
        self._awaiting: tuple | None = None  # (asked at, frame, state) until the window shows it
        self._timer = QTimer(self)  # single shot, set for when the next live frame may be drawn
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._draw_pending)
        self.plotter.frameSwapped.connect(self._frame_shown)
        iren = self.plotter.iren.interactor
        self._obs = [iren.AddObserver("LeftButtonPressEvent", self._on_press, 1.0),
                     iren.AddObserver("MouseMoveEvent", self._on_move, 1.0),
                     iren.AddObserver("LeftButtonReleaseEvent", self._on_release, 1.0)]
        self._press_pos = None

    # ------------------------------------------------------------------ content
    def show_project(self, project: Project, frame: SceneFrame | None = None, reset_camera: bool = False) -> None:
        """Rebuild the scene for a changed project (meshes uploaded once here)."""
        first = self.project is None
        self.project = project
        self.scene.build(project, frame or self.scene.frame, reset_camera=reset_camera or first)
        for actor in self.scene.mass_actors.values():  # back faces of a closed bone are never seen
            actor.prop.backface_culling = closed_outward(actor.mapper.GetInput())
        self.plotter.render()

    def show_frame(self, frame: SceneFrame, now: bool = False) -> None:
        """Draw a frame now, or queue it (the live timer draws the latest one, at most LIVE_FPS a
        second); either way the live queue is emptied (this frame replaces what it held)."""
        self.playback.clear()
        if now:
            self._pending = None
            self._awaiting = None
            self.scene.set_frame(frame, render=False)
            self.plotter.update()  # drawn in the widget's next paint (one render)
            self.frames_drawn += 1
        else:
            self._pending = frame
            self._schedule(0.0)

    def queue_live(self, states: list, to_frame: Callable[[object], SceneFrame | None]) -> None:
        """Queue streamed live states (oldest first); the live timer draws them at a steady rate,
        each at most once, converting the drawn one with ``to_frame`` (nothing else is converted)."""
        self._to_frame = to_frame
        self.playback.push(states)
        if self._awaiting is None and not self._timer.isActive():
            self._schedule(max(self._next_draw, self.playback.next_due()) - time.perf_counter())

    def _schedule(self, delay_s: float) -> None:
        """Run the live timer once after ``delay_s`` (at most a second: it looks again then)."""
        delay_s = min(delay_s, 1.0) if np.isfinite(delay_s) else (0.0 if self._pending is not None else 1.0)
        self._timer.start(max(0, int(np.ceil(1000.0 * delay_s))))

    def _draw_pending(self) -> None:
        """Live timer: hand the newest due state to the widget (one VTK render, in its paint); the
        frame counts when the window has shown it (:meth:`_frame_shown`)."""
        now = time.perf_counter()
        if self._awaiting is not None:
            if now - self._awaiting[0] < PAINT_TIMEOUT_S:
                self._schedule(PAINT_TIMEOUT_S - (now - self._awaiting[0]))
                return
            self._awaiting = None  # no paint came (hidden window): draw on
        if self._pending is None and not len(self.playback):
            return
        if now < self._next_draw:
            self._schedule(self._next_draw - now)
            return
        if self._pending is not None:
            frame, self._pending, state = self._pending, None, None
        else:
            state = self.playback.take(now)
            if state is None:
                self._schedule(self.playback.next_due() - now)
                return
            frame = self._to_frame(state)
            if frame is None:
                self._schedule(0.0)
                return
        self.scene.set_frame(frame, render=False)
        self._awaiting = (now, frame, state)
        self.plotter.update()  # paintGL renders once and blits (plotter.render() would render twice)
        self._schedule(PAINT_TIMEOUT_S)

    def _frame_shown(self) -> None:
        """The window composed a frame: count the live frame it showed, pace the next one."""
        if self._awaiting is None:
            return
        started, frame, state = self._awaiting
        self._awaiting = None
        now = time.perf_counter()
        took = now - started
        self.frames_drawn += 1
        self.draw_seconds += took
        if state is not None:
            self.shown_live.append((frame.time, int(state.get("step", -1)) if isinstance(state, dict) else -1))
            self.liveFrameShown.emit(float(frame.time) if frame.time is not None else float("nan"))
        self._draw_ema = took if self.frames_drawn == 1 else 0.8 * self._draw_ema + 0.2 * took
        rest = max(1.0 / LIVE_FPS - took, self._draw_ema * (1.0 / MAX_DRAW_DUTY - 1.0))
        self._next_draw = now + rest - 0.001
        if self._pending is not None or len(self.playback):
            self._schedule(max(self._next_draw, self.playback.next_due()) - now)
        else:
            self._timer.stop()

    def current_poses(self) -> dict:
        return self.scene.frame.poses

    def camera_preset(self, name: str) -> None:
        self.scene.camera_preset(name)

    def screenshot(self, path: str) -> np.ndarray:
        self.plotter.render()
        return self.plotter.screenshot(path, return_img=True)

    # ------------------------------------------------------------------ picking
    def set_mode(self, mode: str) -> None:
        """"select", "place" or "drag"; placement and dragging stop the camera from turning."""
        self.mode = mode
        self._first_pick = None
        self._angle_picks = []
        self._moving = None
        self._drag = self._drag_preview = None
        self.scene.set_hover(None, render=False)
        self.scene.show_marker(None, render=False)
        self.scene.show_segment(None, None)
        iren = self.plotter.iren.interactor
        iren.SetInteractorStyle(vtkInteractorStyleTrackballCamera() if mode == "select" else vtkInteractorStyleUser())
        self.message.emit({"select": "", "place": "Click the origin on one bone, then the insertion on another "
                                                  "(Esc cancels).",
                           "drag": "Drag an end of the selected tissue along its bone (Esc cancels).",
                           "measure": "Click two points on the bones to measure their distance (Esc cancels).",
                           "force": "Click the point of a bone where the load acts (Esc cancels).",
                           "angle": "Click three points: the angle is at the second (Esc cancels).",
                           "move_bone": "Press on a bone and drag it in the view plane (Esc cancels)."}[mode])

    def world_to_display(self, point_G) -> tuple[float, float]:
        """Display (pixel) coordinates of a global point (for tests and overlays)."""
        ren = self.plotter.renderer
        ren.SetWorldPoint(*map(float, point_G), 1.0)
        ren.WorldToDisplay()
        x, y, _ = ren.GetDisplayPoint()
        return x, y

    def pick_display(self, x: float, y: float) -> tuple[str, np.ndarray] | None:
        """The bone under a display position and the picked point on it in G, or None."""
        if self._picker.Pick(x, y, 0.0, self.plotter.renderer) == 0:
            return None
        actor = self._picker.GetActor()
        name = self.scene.mass_of_actor(actor)
        if name is None:
            return None
        return name, np.array(self._picker.GetPickPosition())

    def click(self, x: float, y: float) -> None:
        """What a left click at a display position does in the current mode."""
        hit = self.pick_display(x, y)
        if self.project is None:
            return
        if hit is None:
            if self.mode in ("place", "measure", "force", "angle"):
                self.message.emit("No bone there: click on a bone's surface (Esc cancels).")
            return
        name, point_G = hit
        if self.mode == "select":
            self.massPicked.emit(name)
        elif self.mode == "place":
            self.place_pick(name, point_G)
        elif self.mode == "measure":
            self.measure_pick(name, point_G)
        elif self.mode == "angle":
            self.angle_pick(name, point_G)
        elif self.mode == "force":
            sp = snap_to_mass(self.project, name, point_G, self.current_poses())
            self.forcePlaced.emit(make_force(self.project, sp))

    def measure_pick(self, mass: str, point_G) -> float | None:
        """One measuring pick (snapped to the surface): the first is marked, the second gives the
        distance (drawn, and sent as ``measured``); the next pick starts a new measurement."""
        sp = snap_to_mass(self.project, mass, point_G, self.current_poses())
        if self._first_pick is None:
            self._first_pick = sp
            self.scene.show_segment(None, None, render=False)
            self.scene.show_marker(sp.point_G)
            self.message.emit(f"From {mass}; now click the second point (Esc cancels).")
            return None
        a, self._first_pick = self._first_pick, None
        d = float(np.linalg.norm(np.asarray(sp.point_G) - np.asarray(a.point_G)))
        self.scene.show_marker(None, render=False)
        self.scene.show_segment(a.point_G, sp.point_G)
        self.message.emit(f"Distance {d * 1000:.2f} mm ({a.mass} → {mass}); click again to measure another.")
        self.measured.emit(d, a.mass, mass)
        return d

    def place_pick(self, mass: str, point_G) -> None:
        """One placement pick: the first is remembered, the second makes the attachment."""
        poses = self.current_poses()
        sp = snap_to_mass(self.project, mass, point_G, poses)
        if self._first_pick is None:
            self._first_pick = sp
            self.scene.show_marker(sp.point_G)
            self.message.emit(f"Origin on {mass}; now click the insertion on another bone (Esc cancels).")
            return
        if sp.mass == self._first_pick.mass:
            self.message.emit("The insertion must be on a different bone.")
            return
        att = make_attachment(self.project, self._first_pick, sp, poses=poses)
        self._first_pick = None
        self.scene.show_marker(None)
        self.attachmentPlaced.emit(att)

    def angle_pick(self, mass: str, point_G) -> float | None:
        """One pick of an angle measurement: after three, the angle at the second point [°] is drawn,
        said and sent as ``angleMeasured``; the next pick starts a new one."""
        sp = snap_to_mass(self.project, mass, point_G, self.current_poses())
        earlier = self._angle_picks if len(self._angle_picks) < 3 else []  # after an angle: a new one
        picks = self._angle_picks = earlier + [sp]
        pts = [np.asarray(p.point_G, float) for p in picks]
        self.scene.show_marker(None, render=False)
        self.scene.show_path(pts)
        if len(picks) < 3:
            self.message.emit(f"Point {len(picks)} on {mass}; click point {len(picks) + 1} (the angle is at the "
                              "second; Esc cancels).")
            return None
        u, v = pts[0] - pts[1], pts[2] - pts[1]
        nu, nv = np.linalg.norm(u), np.linalg.norm(v)
        if nu == 0 or nv == 0:
            self.message.emit("Two of the points coincide: no angle.")
            return None
        angle = float(np.degrees(np.arctan2(np.linalg.norm(np.cross(u, v)), float(np.dot(u, v)))))
        self.message.emit(f"Angle {angle:.2f}° at {picks[1].mass} ({picks[0].mass} – {picks[1].mass} – "
                          f"{picks[2].mass}); click again to measure another.")
        self.angleMeasured.emit(angle)
        return angle

    def cancel_pick(self) -> bool:
        """Forget a first placement pick or an unfinished drag (Esc); True when there was one."""
        had = (self._first_pick is not None or self._drag is not None or bool(self._angle_picks)
               or self._moving is not None)
        self._first_pick = None
        self._angle_picks = []
        self._moving = None
        self._drag = self._drag_preview = None
        self.scene.show_marker(None, render=False)
        self.scene.show_segment(None, None)
        return had

    def _event_pos(self) -> tuple[int, int]:
        return self.plotter.iren.interactor.GetEventPosition()

    def _on_press(self, _obj, _ev) -> None:
        x, y = self._event_pos()
        self._press_pos = (x, y)
        if self.mode == "drag":
            self.start_drag(x, y)
        elif self.mode == "move_bone":
            self.start_move(x, y)

    HOVER_INTERVAL_S = 0.05
    """The bone under the mouse is looked up at most this often while a picking tool is on."""
    PICK_MODES = ("place", "measure", "force", "angle")

    def _on_move(self, _obj, _ev) -> None:
        if self.mode == "drag" and self._drag is not None:
            self.drag_to(*self._event_pos())
        elif self.mode == "move_bone" and self._moving is not None:
            self.move_to(*self._event_pos())
        elif self.mode in self.PICK_MODES + ("move_bone",):
            now = time.perf_counter()
            if now - self._hover_at >= self.HOVER_INTERVAL_S:
                self._hover_at = now
                self.hover_at(*self._event_pos())

    def hover_at(self, x: float, y: float) -> str | None:
        """Highlight the bone a click at this display position would land on; returns its name."""
        hit = self.pick_display(x, y) if self.project is not None else None
        name = hit[0] if hit is not None else None
        self.scene.set_hover(name)
        return name

    def _on_release(self, _obj, _ev) -> None:
        x, y = self._event_pos()
        if self.mode == "drag":
            self.end_drag()
        elif self.mode == "move_bone":
            self.end_move()
        elif self._press_pos is not None and abs(x - self._press_pos[0]) + abs(y - self._press_pos[1]) < 4:
            self.click(x, y)
        self._press_pos = None

    # ------------------------------------------------------------------ moving a bone
    def display_to_world(self, x: float, y: float, depth: float) -> np.ndarray:
        """The world point under a display position at a display depth (0 near .. 1 far)."""
        ren = self.plotter.renderer
        ren.SetDisplayPoint(float(x), float(y), float(depth))
        ren.DisplayToWorld()
        w = np.array(ren.GetWorldPoint(), float)
        return w[:3] / w[3] if w[3] not in (0.0, 1.0) else w[:3]

    def start_move(self, x: float, y: float) -> bool:
        """Grab the bone under the mouse (mode "move_bone"): it then follows the mouse in the view
        plane through the grabbed point; False when there is no bone there or a joint places it."""
        hit = self.pick_display(x, y) if self.project is not None else None
        if hit is None:
            self.message.emit("No bone there: press on a bone and drag it (Esc cancels).")
            return False
        mass, point_G = hit
        if self.project.mass(mass).joint is not None:
            self.message.emit(f"{mass} is placed by its joint: set its coordinates in the Coordinates tab.")
            return False
        ren = self.plotter.renderer
        ren.SetWorldPoint(*map(float, point_G), 1.0)
        ren.WorldToDisplay()
        depth = ren.GetDisplayPoint()[2]
        self._moving = (mass, np.asarray(point_G, float), depth, np.zeros(3))
        self.scene.show_marker(point_G)
        return True

    def move_to(self, x: float, y: float) -> np.ndarray | None:
        """Drag the grabbed bone to a display position: its displacement in G (drawn as a segment
        from the grabbed point; the bone moves when the mouse is released)."""
        if self._moving is None:
            return None
        mass, start, depth, _ = self._moving
        delta = self.display_to_world(x, y, depth) - start
        self._moving = (mass, start, depth, delta)
        self.scene.show_marker(None, render=False)
        self.scene.show_segment(start, start + delta)
        self.message.emit(f"Move {mass} by {np.linalg.norm(delta) * 1000:.1f} mm (release to place; Esc cancels).")
        return delta

    def end_move(self) -> None:
        """Release: the grabbed bone is moved by the dragged displacement (``boneMoved``)."""
        if self._moving is None:
            return
        mass, _, _, delta = self._moving
        self._moving = None
        self.scene.show_marker(None, render=False)
        self.scene.show_segment(None, None)
        if np.linalg.norm(delta) > 0:
            self.boneMoved.emit(mass, tuple(float(d) for d in delta))

    def start_drag(self, x: float, y: float) -> bool:
        """Grab the end of the selected attachment nearest the clicked point."""
        if self.project is None or self.selected_attachment is None:
            return False
        hit = self.pick_display(x, y)
        if hit is None:
            return False
        i = self.selected_attachment
        att = self.project.attachments[i]
        poses = self.current_poses()
        ps = project_poses(self.project, poses)
        ends = {e: to_global(ps[getattr(att, f"body_{e}")], getattr(att, f"point_{e}_L")) for e in ("a", "b")}
        end = min(ends, key=lambda e: np.linalg.norm(ends[e] - hit[1]))
        self._drag = (i, end)
        self._drag_preview = att
        return True

    def drag_to(self, x: float, y: float) -> None:
        if self._drag is None:
            return
        hit = self.pick_display(x, y)
        i, end = self._drag
        att = self.project.attachments[i]
        if hit is None or hit[0] != getattr(att, f"body_{end}"):
            return
        self._drag_preview = drag_end(self.project, att, end, hit[1], self.current_poses())

    def end_drag(self) -> None:
        if self._drag is None:
            return
        i, _ = self._drag
        moved, self._drag, self._drag_preview = self._drag_preview, None, None
        if moved is not None and moved != self.project.attachments[i]:
            self.attachmentMoved.emit(i, moved)

    def nearest_pick(self, point_G):
        """Snap a global point to the nearest bone (keyboard/scripted placement)."""
        return nearest_mass(self.project, point_G, self.current_poses()) if self.project else None

    def close(self) -> bool:
        self._timer.stop()
        try:
            self.plotter.close()
        except Exception:  # pragma: no cover - VTK teardown differences between versions
            pass
        return super().close()


__all__ = ["LIVE_FPS", "Viewport"]
