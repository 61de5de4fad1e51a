"""What the mouse does in the 3D view, by mode: "select" (click a bone to select its mass row),
"place" (click a bone, then another: an attachment is proposed), "drag" (press near an end of the
selected attachment and drag it along its bone), "force" (click where a point load acts), "measure"
(two clicks: a distance), "angle" (three clicks: the angle at the second) and "move_bone" (drag a
bone in the view plane). Picks snap to the bone surfaces (:mod:`jointmodeller.app.picking`); what
they make is sent as signals for the main window to turn into document edits."""

from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QObject, Signal

from jointmodeller.app.picking import (
    drag_end,
    make_attachment,
    make_force,
    nearest_mass,
    project_poses,
    snap_to_mass,
    to_global,
)
from jointmodeller.model.specs import Project


class PickTools(QObject):
    """The picking modes of one viewport (its ``picking``): the mouse observers on its interactor,
    the mode, the picks made so far and what they make."""

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

    HOVER_INTERVAL_S = 0.05
    """The bone under the mouse is looked up at most this often while a picking tool is on."""
    PICK_MODES = ("place", "measure", "force", "angle")

    def __init__(self, viewport):
        super().__init__(viewport)
        self.viewport = viewport
        self.mode = "select"
        self.selected_attachment: int | None = None
        self._first_pick = None
        self._angle_picks: list = []
        self._moving: tuple | None = None  # (mass, grabbed point in G, display depth, displacement in G)
        self._hover_at = 0.0
        self._drag: tuple[int, str] | None = None
        self._drag_preview = None
        self._press_pos = None
        self._obs: list = []

    @property
    def scene(self):
        """The viewport's scene (made with its 3D view)."""
        return self.viewport.scene

    @property
    def plotter(self):
        """The viewport's pyvistaqt interactor (made with its 3D view)."""
        return self.viewport.plotter

    def attach(self) -> None:
        """The viewport's 3D view exists: observe its mouse, and give it the mode chosen meanwhile
        (a tool can be chosen while the view is being prepared; it applies once it is there)."""
        iren = self.plotter.iren.interactor
        self._obs = [iren.AddObserver("LeftButtonPressEvent", self._on_press, 1.0),
                     iren.AddObserver("MouseMoveEvent", self._on_move, 1.0),
                     iren.AddObserver("LeftButtonReleaseEvent", self._on_release, 1.0)]
        if self.mode != "select":
            self._set_style()

    def _set_style(self) -> None:
        from vtkmodules.vtkInteractionStyle import vtkInteractorStyleTrackballCamera, vtkInteractorStyleUser

        iren = self.plotter.iren.interactor
        iren.SetInteractorStyle(vtkInteractorStyleTrackballCamera() if self.mode == "select"
                                else vtkInteractorStyleUser())

    @property
    def project(self) -> Project | None:
        """The project the viewport shows."""
        return self.viewport.project

    def set_mode(self, mode: str) -> None:
        """"select", "place" or "drag"; placement and dragging stop the camera from turning."""
        self.mode = mode
        self._first_pick = None
        self._angle_picks = []
        self._moving = None
        self._drag = self._drag_preview = None
        if self.viewport.has_view:  # else the view takes the mode when it is made (:meth:`attach`)
            self.scene.set_hover(None, render=False)
            self.scene.show_marker(None, render=False)
            self.scene.show_segment(None, None)
            self._set_style()
        self.message.emit({"select": "", "place": "Click the origin on one bone, then the insertion on another "
                                                  "(Esc cancels).",
                           "drag": "Drag an end of the selected tissue along its bone (Esc cancels).",
                           "measure": "Click two points on the bones to measure their distance (Esc cancels).",
                           "force": "Click the point of a bone where the load acts (Esc cancels).",
                           "angle": "Click three points: the angle is at the second (Esc cancels).",
                           "move_bone": "Press on a bone and drag it in the view plane (Esc cancels)."}[mode])

    def click(self, x: float, y: float) -> None:
        """What a left click at a display position does in the current mode."""
        hit = self.viewport.pick_display(x, y)
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
            sp = snap_to_mass(self.project, name, point_G, self.viewport.current_poses())
            self.forcePlaced.emit(make_force(self.project, sp))

    def measure_pick(self, mass: str, point_G) -> float | None:
        """One measuring pick (snapped to the surface): the first is marked, the second gives the
        distance (drawn, and sent as ``measured``); the next pick starts a new measurement."""
        sp = snap_to_mass(self.project, mass, point_G, self.viewport.current_poses())
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
        poses = self.viewport.current_poses()
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
        sp = snap_to_mass(self.project, mass, point_G, self.viewport.current_poses())
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
        if self.viewport.has_view:
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
        hit = self.viewport.pick_display(x, y) if self.project is not None else None
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
    def start_move(self, x: float, y: float) -> bool:
        """Grab the bone under the mouse (mode "move_bone"): it then follows the mouse in the view
        plane through the grabbed point; False when there is no bone there or a joint places it."""
        hit = self.viewport.pick_display(x, y) if self.project is not None else None
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
        delta = self.viewport.display_to_world(x, y, depth) - start
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
        hit = self.viewport.pick_display(x, y)
        if hit is None:
            return False
        i = self.selected_attachment
        att = self.project.attachments[i]
        poses = self.viewport.current_poses()
        ps = project_poses(self.project, poses)
        ends = {e: to_global(ps[getattr(att, f"body_{e}")], getattr(att, f"point_{e}_L")) for e in ("a", "b")}
        end = min(ends, key=lambda e: np.linalg.norm(ends[e] - hit[1]))
        self._drag = (i, end)
        self._drag_preview = att
        return True

    def drag_to(self, x: float, y: float) -> None:
        if self._drag is None:
            return
        hit = self.viewport.pick_display(x, y)
        i, end = self._drag
        att = self.project.attachments[i]
        if hit is None or hit[0] != getattr(att, f"body_{end}"):
            return
        self._drag_preview = drag_end(self.project, att, end, hit[1], self.viewport.current_poses())

    def end_drag(self) -> None:
        if self._drag is None:
            return
        i, _ = self._drag
        moved, self._drag, self._drag_preview = self._drag_preview, None, None
        if moved is not None and moved != self.project.attachments[i]:
            self.attachmentMoved.emit(i, moved)

    def nearest_pick(self, point_G):
        """Snap a global point to the nearest bone (keyboard/scripted placement)."""
        return nearest_mass(self.project, point_G, self.viewport.current_poses()) if self.project else None


__all__ = ["PickTools"]
