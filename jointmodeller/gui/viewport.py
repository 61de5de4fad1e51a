"""The 3D viewport: a pyvistaqt interactor showing the project's scene, live states of a running
study drawn at a steady pace, stored frames, camera presets and screenshots. What the mouse does in it,
by mode (selecting, placing tissues and loads, measuring, dragging), is its ``picking``
(:class:`jointmodeller.gui.pick_tools.PickTools`).

Progressive start-up (issue 18): the viewport is made without its 3D view, showing a light placeholder
("Preparing the 3D view…"). Once the window has been painted, pyvista and VTK's rendering (no Qt) are
imported in a background thread (:class:`jointmodeller.gui.interactor.ViewImport`) while the window is
usable, and then pyvistaqt's Qt side is imported, the interactor made on the GUI thread and the project
drawn into it
(:meth:`Viewport.ensure_view`; ``viewReady`` says so). What is asked of the view meanwhile is kept and
applied then: the project and frame to show, a camera preset, the body axes, the selection, the
picking mode, live states. Anything that needs the view itself (``plotter``, ``scene``, picking a
display position, screenshots) makes it at once, waiting for the imports."""

from __future__ import annotations

import collections
import time
from typing import Callable

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from jointmodeller.gui.interactor import close_interactor, no_vsync_wait, qt_interactor_class, view_surface_format
from jointmodeller.gui.pick_tools import PickTools
from jointmodeller.gui.playback import Playback
from jointmodeller.gui.view_maker import ViewMaker
from jointmodeller.model.specs import Project
from jointmodeller.render.scene_frame import SceneFrame

LIVE_FPS = 60.0
"""Upper bound of redraws per second during a live run (states in between are dropped)."""
MAX_DRAW_DUTY = 1.0
"""At most this share of the wall time goes to live frames (asking for one until the window shows it).
1: the next frame is asked for as soon as the last is shown (at most LIVE_FPS a second). A frame is
drawn in the widget's paint, an event like any other, so input and timers are served between frames
either way; 0.9 (a pause of a ninth of a frame) cost the demo's live view ~2 of its 26–28 frames a
second on a quiet 2-core machine without lowering the longest stall (issue 18, docs/benchmarks.md)."""
PAINT_TIMEOUT_S = 0.5
"""A live frame the window has not shown after this long (e.g. hidden) no longer holds the next."""
LIVE_PLAY_HZ = 90.0
"""Streamed states are played at most this fast (the study streams 90 a second; the viewport shows
what it can of them, at most LIVE_FPS, skipping the rest)."""
TWIN_GAP_MS = 15
"""Pause between making two coarse twins when a study starts (the event loop is served between)."""
LIVE_MAX_LAG_S = 5.0
"""Streamed states wait at most this long (an integrator step of the demo can take seconds)."""


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


class Viewport(QWidget):
    """pyvistaqt view of the scene: the project's bones and tissues, a stored run's frames and the
    live states of a running study; ``picking`` says what the mouse does in it. The view itself is
    made after the window is shown (``maker``, :class:`ViewMaker`) or when first needed (:meth:`ensure_view`)."""

    liveFrameShown = Signal(float)
    """A streamed live state was drawn (its simulated time)."""
    windowPainted = Signal()
    """The placeholder was painted (the main window is on screen, with the panels around it)."""
    viewReady = Signal()
    """The 3D view was made and its first frame of the project rendered."""

    def __init__(self, parent=None):
        super().__init__(parent)
        if not self.window().isVisible():  # the view's GL format, before its window is created
            view_surface_format()
        self._plotter = None
        self._scene = None
        self._picker = None
        self.display_cache = None
        """Folder where decimated bone meshes are kept between sessions (given to the scene when made)."""
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self.maker = ViewMaker(self)
        """The placeholder and the background import of the view's modules (``maker.preparing()``: that
        import runs now)."""
        self._making = False
        self._closed = False
        self._live_run = False
        """A study runs (from :meth:`prepare_live_detail` to :meth:`end_live`): live states are drawn
        with the coarse twins of the bones and cartilage (``scene.live_detail``)."""
        self._making_twins = False
        self._live_states = False
        """Live states of the running study have come: its twins are drawn (where made)."""
        self.project: Project | None = None
        self._wanted: dict = {}
        """What was asked of the view before it existed: frame, camera, axes, selection."""
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
        self.incremental = True
        """An edit of the shown project updates only the actors it touched; False: every change
        rebuilds the whole scene (the ``gui.edit_redraw_ms`` benchmark's baseline)."""
        self.picking = PickTools(self)
        """Selecting, placing, measuring and dragging with the mouse (the mode and the picks so far)."""

    # ------------------------------------------------------------------ the 3D view, made after the window
    @property
    def has_view(self) -> bool:
        """Whether the 3D view (pyvistaqt interactor and scene) exists yet."""
        return self._plotter is not None

    @property
    def plotter(self):
        """The pyvistaqt interactor (made now, waiting for its imports, if it does not exist yet)."""
        self.ensure_view()
        return self._plotter

    @property
    def scene(self):
        """The :class:`~jointmodeller.render.scene.JointScene` (made with the view, as ``plotter``)."""
        self.ensure_view()
        return self._scene

    def ensure_view(self) -> None:
        """Make the 3D view now if it does not exist (importing what it needs on this thread, or
        waiting for the background import), show the project asked for meanwhile and render it."""
        if self._plotter is not None or self._making:
            return
        self._making = True
        try:
            self._make_view()
        finally:
            self._making = False
        self.maker.stop()
        self.viewReady.emit()

    def _make_view(self) -> None:
        from vtkmodules.vtkRenderingCore import vtkCellPicker

        from jointmodeller.render.scene import JointScene

        QtInteractor = qt_interactor_class()
        # one sample per pixel: 8× MSAA (pyvista's default) costs ~5× per frame on software GL. Made
        # without a parent and given its own native window before it joins the (shown) main window:
        # an OpenGL widget that joins a shown window as a plain child turns the whole window into an
        # OpenGL-composited surface (Qt recreates it), and every live frame then recomposes all of it
        # (~20-25 ms more per frame on software GL/Xvfb: the slower live view of 42ee2b7). A native
        # child composes only itself and the main window keeps its raster surface, as when the view is
        # made before the window is first shown.
        plotter = QtInteractor(None, auto_update=False, multi_samples=1)
        no_vsync_wait()
        plotter.setAttribute(Qt.WidgetAttribute.WA_NativeWindow)
        plotter.disable_anti_aliasing()
        scene = JointScene(plotter)
        scene.display_cache = self.display_cache
        self._picker = vtkCellPicker()
        self._picker.SetTolerance(0.0005)
        self._plotter, self._scene = plotter, scene
        self.maker.remove_placeholder(self._layout)
        self._layout.addWidget(plotter.interactor)
        if self.isVisible():  # shown and sized now (a layout would show it at the next event-loop turn)
            plotter.interactor.show()
            self._layout.activate()
        plotter.frameSwapped.connect(self._frame_shown)
        self.picking.attach()
        wanted, self._wanted = self._wanted, {}
        if "axes" in wanted:
            scene.show_axes = wanted["axes"]
        if self.project is not None:
            project, self.project = self.project, None
            self.show_project(project, wanted.get("frame"), reset_camera=True)
            if "select" in wanted:
                section, index = wanted["select"]
                scene.select(section, index, render=False)
            if "camera" in wanted:
                scene.camera_preset(wanted["camera"], render=False)
            if "select" in wanted or "camera" in wanted:
                plotter.render()
        else:
            plotter.render()
        if self._pending is not None or len(self.playback):
            self._schedule(0.0)
        if self._live_run:  # a study started before the view was made
            self.prepare_live_detail()
            self._draw_twins()

    def set_axes_visible(self, visible: bool) -> None:
        """Show or hide the bones' principal axes (kept until the view exists)."""
        if self._plotter is None:
            self._wanted["axes"] = bool(visible)
        else:
            self._scene.set_axes_visible(visible)

    def select(self, section: str | None, index: int | None, render: bool = True) -> None:
        """Highlight a mass or an attachment (None clears; kept until the view exists)."""
        if self._plotter is None:
            self._wanted["select"] = (section, index)
        else:
            self._scene.select(section, index, render=render)

    # ------------------------------------------------------------------ content
    def show_project(self, project: Project, frame: SceneFrame | None = None, reset_camera: bool = False) -> None:
        """Show a project: another one (none shown before, ``reset_camera``, or ``incremental`` off)
        is built anew, meshes uploaded once here; an edit of the one shown updates only the actors of
        the rows it changed (:meth:`JointScene.update`). Before the view exists, the project (and
        frame) are kept and drawn when it is made."""
        if self._plotter is None:
            self.project = project
            if frame is not None:
                self._wanted["frame"] = frame
            return
        from jointmodeller.render.scene_diff import actor_input

        first = self.project is None
        self.project = project
        if first or reset_camera or not self.incremental or self._scene.project is None:
            self._scene.build(project, frame or self._scene.frame, reset_camera=reset_camera or first)
            new_meshes = list(self._scene.mass_actors.values()) + list(self._scene.cartilage_actors.values())
        else:
            new_meshes = self._scene.update(project, frame).new_meshes
        for actor in new_meshes:  # back faces of a closed bone or cartilage layer are never seen
            actor.prop.backface_culling = closed_outward(actor_input(actor))
        self._plotter.render()

    def show_frame(self, frame: SceneFrame, now: bool = False) -> None:
        """Draw a frame now, or queue it (the live timer draws the latest one, at most LIVE_FPS a
        second); either way the live queue is emptied (this frame replaces what it held)."""
        self.playback.clear()
        if self._plotter is None:  # drawn when the view is made
            self._pending = None
            self._awaiting = None
            self._wanted["frame"] = frame
            return
        if now:
            self._pending = None
            self._awaiting = None
            self.scene.set_frame(frame, render=False)
            self.plotter.update()  # drawn in the widget's next paint (one render)
            self.frames_drawn += 1
        else:
            self._pending = frame
            self._schedule(0.0)

    def prepare_live_detail(self) -> None:
        """A study is starting: make the coarse twins of the bones and cartilage for its live states
        (:mod:`jointmodeller.render.live_detail`, their meshes made with the scene), one every
        TWIN_GAP_MS; its first states come later."""
        self._live_run = True
        if not self._making_twins:
            self._making_twins = True
            QTimer.singleShot(0, self, self._make_twin)

    def _make_twin(self) -> None:
        if self._closed or self._scene is None:  # the plotter is gone, or not made yet: no twins (this run)
            self._making_twins = False
            return
        more = self._scene.project is not None and self._scene.live_detail.make_next()
        if more and self._live_run:
            QTimer.singleShot(TWIN_GAP_MS, self, self._make_twin)
        else:
            self._making_twins = False

    def end_live(self) -> None:
        """The study ended: the full bones and cartilage again (drawn at once)."""
        self._live_run = self._live_states = False
        if self._closed or self._scene is None:
            return
        if self._scene.live_detail.set_live(False):
            self._plotter.update()

    def _draw_twins(self) -> None:
        """Draw the bones and cartilage by their twins from now on (a run's live states have come)."""
        if self._live_states and self._scene is not None and not self._scene.live_detail.live:
            self._scene.live_detail.set_live(True)

    def queue_live(self, states: list, to_frame: Callable[[object], SceneFrame | None]) -> None:
        """Queue streamed live states (oldest first); the live timer draws them at a steady rate,
        each at most once, converting the drawn one with ``to_frame`` (nothing else is converted).
        During a run (:meth:`prepare_live_detail`) they are drawn with the coarse twins."""
        if self._live_run:
            self._live_states = True
            self._draw_twins()
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
        if self._plotter is None:  # the view is being made: it schedules this when it is there
            return
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
        if self._plotter is None:
            frame = self._wanted.get("frame")
            return frame.poses if frame is not None else {}
        return self._scene.frame.poses

    def camera_preset(self, name: str) -> None:
        """Look from an anatomical direction (kept until the view exists)."""
        if self._plotter is None:
            self._wanted["camera"] = name
        else:
            self._scene.camera_preset(name)

    def screenshot(self, path: str) -> np.ndarray:
        self.plotter.render()
        return self.plotter.screenshot(path, return_img=True)

    # ------------------------------------------------------------------ display and world coordinates
    def world_to_display(self, point_G) -> tuple[float, float]:
        """Display (pixel) coordinates of a global point (for tests and overlays)."""
        ren = self.plotter.renderer
        ren.SetWorldPoint(*map(float, point_G), 1.0)
        ren.WorldToDisplay()
        x, y, _ = ren.GetDisplayPoint()
        return x, y

    def pick_display(self, x: float, y: float) -> tuple[str, np.ndarray] | None:
        """The bone under a display position and the picked point on it in G, or None."""
        renderer = self.plotter.renderer  # makes the view (and the picker) if need be
        if self._picker.Pick(x, y, 0.0, renderer) == 0:
            return None
        actor = self._picker.GetActor()
        name = self.scene.mass_of_actor(actor)
        if name is None:
            return None
        return name, np.array(self._picker.GetPickPosition())

    def display_to_world(self, x: float, y: float, depth: float) -> np.ndarray:
        """The world point under a display position at a display depth (0 near .. 1 far)."""
        ren = self.plotter.renderer
        ren.SetDisplayPoint(float(x), float(y), float(depth))
        ren.DisplayToWorld()
        w = np.array(ren.GetWorldPoint(), float)
        return w[:3] / w[3] if w[3] not in (0.0, 1.0) else w[:3]

    def close(self) -> bool:
        self._closed = True
        self._live_run = False
        self._timer.stop()
        self.maker.stop()
        if self._plotter is not None:  # a view never made is not made to be closed
            close_interactor(self._plotter)
        return super().close()


__all__ = ["LIVE_FPS", "Viewport"]
