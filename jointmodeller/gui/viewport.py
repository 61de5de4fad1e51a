"""The 3D viewport: a pyvistaqt interactor showing the project's scene, with picking for selection,
interactive ligament placement (two clicks on two bones) and dragging an end along its bone."""

from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget
from pyvistaqt import QtInteractor
from vtkmodules.vtkInteractionStyle import vtkInteractorStyleTrackballCamera, vtkInteractorStyleUser
from vtkmodules.vtkRenderingCore import vtkCellPicker

from jointmodeller.app.picking import (
    drag_end, make_attachment, nearest_mass, project_poses, snap_to_mass, to_global,
)
from jointmodeller.model.specs import Project
from jointmodeller.render.scene import JointScene, SceneFrame

LIVE_FPS = 30.0
"""Upper bound of redraws per second during a live run (frames in between are dropped)."""
MAX_DRAW_DUTY = 0.5
"""At most this share of the GUI thread's time goes to live redraws (slow software OpenGL draws less
often instead of starving the event loop)."""


class Viewport(QWidget):
    """pyvistaqt view of the scene; emits what the user picks.

    Modes: "select" (click a bone to select its mass row), "place" (click a bone, then another: an
    attachment is proposed), "drag" (press near an end of the selected attachment and drag it along
    its bone).
    """

    massPicked = Signal(str)
    attachmentPlaced = Signal(object)
    attachmentMoved = Signal(int, object)
    message = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        # one sample per pixel: 8× MSAA (pyvista's default) costs ~5× per frame on software GL
        self.plotter = QtInteractor(self, auto_update=False, multi_samples=1)
        self.plotter.disable_anti_aliasing()
        self.scene = JointScene(self.plotter)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.plotter.interactor)
        self.mode = "select"
        self.project: Project | None = None
        self.selected_attachment: int | None = None
        self._first_pick = None
        self._drag: tuple[int, str] | None = None
        self._drag_preview = None
        self._picker = vtkCellPicker()
        self._picker.SetTolerance(0.0005)
        self._pending: SceneFrame | None = None
        self.frames_drawn = 0
        self.draw_seconds = 0.0
        self._draw_ema = 0.0
        self._next_draw = 0.0
        self._timer = QTimer(self)
        self._timer.setInterval(int(1000 / LIVE_FPS / 2))
        self._timer.timeout.connect(self._draw_pending)
        self._timer.start()
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
        self.plotter.render()

    def show_frame(self, frame: SceneFrame, now: bool = False) -> None:
        """Queue a frame; the live timer draws the latest one at most LIVE_FPS times a second."""
        if now:
            self._pending = None
            self.scene.set_frame(frame)
            self.frames_drawn += 1
        else:
            self._pending = frame

    def _draw_pending(self) -> None:
        if self._pending is None:
            return
        now = time.perf_counter()
        if now < self._next_draw:
            return
        frame, self._pending = self._pending, None
        self.scene.set_frame(frame)
        took = time.perf_counter() - now
        self.frames_drawn += 1
        self.draw_seconds += took
        self._draw_ema = took if self.frames_drawn == 1 else 0.8 * self._draw_ema + 0.2 * took
        self._next_draw = now + max(1.0 / LIVE_FPS, self._draw_ema / MAX_DRAW_DUTY) - 0.004

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
        iren = self.plotter.iren.interactor
        iren.SetInteractorStyle(vtkInteractorStyleTrackballCamera() if mode == "select" else vtkInteractorStyleUser())
        self.message.emit({"select": "", "place": "Click the origin on one bone, then the insertion on another.",
                           "drag": "Drag an end of the selected tissue along its bone."}[mode])

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
        if hit is None or self.project is None:
            return
        name, point_G = hit
        if self.mode == "select":
            self.massPicked.emit(name)
        elif self.mode == "place":
            self.place_pick(name, point_G)

    def place_pick(self, mass: str, point_G) -> None:
        """One placement pick: the first is remembered, the second makes the attachment."""
        poses = self.current_poses()
        sp = snap_to_mass(self.project, mass, point_G, poses)
        if self._first_pick is None:
            self._first_pick = sp
            self.message.emit(f"Origin on {mass}; now click the insertion on another bone.")
            return
        if sp.mass == self._first_pick.mass:
            self.message.emit("The insertion must be on a different bone.")
            return
        att = make_attachment(self.project, self._first_pick, sp, poses=poses)
        self._first_pick = None
        self.attachmentPlaced.emit(att)

    def _event_pos(self) -> tuple[int, int]:
        return self.plotter.iren.interactor.GetEventPosition()

    def _on_press(self, _obj, _ev) -> None:
        x, y = self._event_pos()
        self._press_pos = (x, y)
        if self.mode == "drag":
            self.start_drag(x, y)

    def _on_move(self, _obj, _ev) -> None:
        if self.mode == "drag" and self._drag is not None:
            self.drag_to(*self._event_pos())

    def _on_release(self, _obj, _ev) -> None:
        x, y = self._event_pos()
        if self.mode == "drag":
            self.end_drag()
        elif self._press_pos is not None and abs(x - self._press_pos[0]) + abs(y - self._press_pos[1]) < 4:
            self.click(x, y)
        self._press_pos = None

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
