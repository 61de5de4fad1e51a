"""The 3D scene of a project (pyvista, no Qt): bones, body axes, tissues coloured by tension, load
arrows and contact patches coloured by pressure.

Meshes are uploaded once per :meth:`JointScene.build` (another project); an edit of the shown project
goes through :meth:`JointScene.update`, which touches only the actors of the rows the edit changed
(:mod:`jointmodeller.render.scene_diff`); a pose update (:meth:`JointScene.set_frame`) only sets actor
transforms and moves the few tissue path points, so live runs redraw cheaply.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyvista as pv

from jointmodeller.app.picking import Pose, project_poses, to_global
from jointmodeller.model.specs import Project
from jointmodeller.render.display_mesh import (  # noqa: F401  (also served here: render.scene.display_mesh)
    _DISPLAY_CACHE,
    DISPLAY_MAX_FACES,
    display_mesh,
)
from jointmodeller.render.live_detail import LiveDetail
from jointmodeller.render.scene_diff import update_scene
from jointmodeller.render.scene_frame import CAMERA_PRESETS, SceneFrame  # noqa: F401  (served here too)
from jointmodeller.render.scene_rows import (  # noqa: F401  (also served here, as before the split)
    ARROW_COLOUR,
    AXIS_COLOURS,
    CARTILAGE_COLOUR,
    Arrow,
    SceneChanges,
    TissueArrays,
    add_arrow_actor,
    add_axes_actor,
    add_cartilage_actor,
    add_mass_actor,
    arrow_of,
    body_axes_L,
    hex_rgb,
    tissue_arrays,
)

BACKGROUND = "#1e2430"
SELECTED = "#3fa9f5"
HOVER = "#f2d06b"
"""A bone under the mouse while a picking tool is on (a click would land on it)."""
TENSION_HOT = np.array([0.85, 0.10, 0.10])
MARKER_COLOUR = "#ff3b30"
"""The marker on a picked point."""
MEASURE_COLOUR = "#ffd60a"
"""A measured distance."""
TISSUE_WIDTH = 8.0
HEADLIGHT_INTENSITY = 1.0
"""The scene is lit by one headlight (a light at the camera, pointing where it looks) of this intensity
instead of pyvista's light kit of five: software OpenGL shades every fragment once per light, and one
light draws a frame of the demo about a fifth cheaper there (docs/benchmarks.md, issue 18)."""


def use_headlight(plotter: pv.Plotter) -> None:
    """Light the plotter's scene with one headlight (:data:`HEADLIGHT_INTENSITY`) and nothing else."""
    plotter.remove_all_lights()
    plotter.add_light(pv.Light(light_type="headlight", intensity=HEADLIGHT_INTENSITY))


def pose_matrix(pose: Pose) -> np.ndarray:
    """(4, 4) homogeneous transform of a pose (R_GL, t_G)."""
    R, t = pose
    M = np.eye(4)
    M[:3, :3] = R
    M[:3, 3] = t
    return M


def tension_colours(base_rgb: np.ndarray, force_N: np.ndarray | None, scale_N: float) -> np.ndarray:
    """Per-tissue colours (m, 3): the spring's colour at zero force, blending to red at ``scale_N``.

    base_rgb (m, 3); force_N (m,) or None (no run yet: the spring colours)."""
    if force_N is None:
        return base_rgb
    f = np.clip(np.nan_to_num(np.asarray(force_N, float)) / max(scale_N, 1e-12), 0.0, 1.0)[:, None]
    return (1.0 - f) * base_rgb + f * TENSION_HOT


class JointScene:
    """The actors of one project in one pyvista plotter (a Plotter or a pyvistaqt QtInteractor)."""

    def __init__(self, plotter: pv.Plotter):
        self.plotter = plotter
        self.project: Project | None = None
        self.mass_actors: dict[str, object] = {}
        self.cartilage_actors: dict[str, object] = {}
        self.axes_actors: dict[str, object] = {}
        self.arrow_actors: dict[str, Arrow] = {}
        """Load name -> its arrow (body, point, shape and actor)."""
        self.tissue_actor = None
        self.tissue_poly: pv.PolyData | None = None
        self.contact_actor = None
        self.contact_poly: pv.PolyData | None = None
        self.selected: tuple[str, int] | None = None
        self.legend_actor = None
        """The tension colour legend (a text in the lower left corner), or None before the first run."""
        self._legend_key: tuple | None = None
        self.hovered: str | None = None
        """The mass under the mouse while picking (drawn in HOVER), or None."""
        self.marker_actor = None
        """A sphere on a picked point (the first pick of a ligament placement), or None."""
        self.segment_actor = None
        """A measured distance: a line between two picked points with a sphere at each, or None."""
        self.force_scale_N = 50.0
        self.show_axes = True
        self.display_cache: Path | None = None
        """Folder where decimated bone meshes are kept between sessions (:func:`display_mesh`), or None."""
        self._tissue_rgb = np.zeros((0, 3))
        self._tissue_force: np.ndarray | None = None
        self._frame = SceneFrame()
        self._point_body: np.ndarray = np.zeros(0, int)
        self._point_L = np.zeros((0, 3))
        self._body_names: list[str] = []
        self._tissue_key: tuple | None = None
        self.live_detail = LiveDetail(self)
        """Coarse twins of the bones and cartilage, drawn instead of them while a live run plays."""
        plotter.set_background(BACKGROUND)
        use_headlight(plotter)

    # ------------------------------------------------------------------ build (meshes uploaded here)
    def build(self, project: Project, frame: SceneFrame | None = None, reset_camera: bool = False) -> None:
        """Rebuild every actor from the project (meshes are uploaded to VTK once per build): for
        another project. An edit of the shown one goes through :meth:`update`."""
        p = self.plotter
        self.live_detail.clear()
        for actor in list(self.mass_actors.values()) + list(self.cartilage_actors.values()) + list(
                self.axes_actors.values()) + [a.actor for a in self.arrow_actors.values()] + [
                self.tissue_actor, self.contact_actor]:
            if actor is not None:
                p.remove_actor(actor, render=False)
        self.mass_actors.clear()
        self.cartilage_actors.clear()
        self.axes_actors.clear()
        self.arrow_actors = {}
        self.tissue_actor = self.contact_actor = None
        self.tissue_poly = self.contact_poly = None
        self._tissue_key = None
        self.project = project
        for m in project.masses:
            if m.cartilage is not None:
                self.cartilage_actors[m.name] = add_cartilage_actor(p, m, self.display_cache)
            if m.mesh is not None:
                self.mass_actors[m.name] = add_mass_actor(p, m, self.display_cache)
                self.axes_actors[m.name] = add_axes_actor(p, m, self.show_axes)
        self._set_tissues(tissue_arrays(project))
        self._update_legend()
        for f in project.forces:
            arrow = arrow_of(f, self.mass_actors)
            if arrow is not None:
                self.arrow_actors[f.name] = add_arrow_actor(p, f.name, arrow)
        if project.contacts and project.masses:
            self._show_contact_placeholder(project)
        self.set_frame(frame or SceneFrame(), render=False)
        if reset_camera:
            self.camera_preset("oblique", render=False)
        self._restyle_selection()
        self.live_detail.prefetch()  # the live view's coarse meshes, made with the display meshes

    def update(self, project: Project, frame: SceneFrame | None = None) -> SceneChanges:
        """Show an edited version of the shown project: rows are matched to what is drawn (by name,
        a renamed row by its place) and only the actors of rows whose drawn properties changed are
        added, removed or updated in place (mapper input, colour); every other actor stays the same
        object. Poses (user matrices) and tissue points follow ``frame`` (default: the frame shown)."""
        if self.project is None:
            self.build(project, frame)
            return SceneChanges(rebuilt=True)
        changes = update_scene(self, project)
        self.live_detail.set_live(self.live_detail.live)  # an edited bone is drawn in full until its twin is made
        self.live_detail.prefetch()
        self.set_frame(frame or self._frame, render=False)
        self._restyle_selection()
        return changes

    def _show_contact_placeholder(self, project: Project) -> None:
        """Compile the contact actor's shaders at the first render (one point hidden inside a bone),
        not at the first contact of a live run."""
        self._ensure_contact_actor()
        self.contact_poly.points = np.asarray([project.masses[0].position_G], float)
        self.contact_actor.SetVisibility(True)

    def _set_tissues(self, arrays: TissueArrays) -> bool:
        """Draw the tissues as ``arrays`` says: the one tissue actor's lines updated in place (added
        with the first tissue, removed with the last); False when they are drawn so already."""
        self._body_names = arrays.body_names
        index = {n: i for i, n in enumerate(arrays.body_names)}
        self._point_body = np.asarray([index[b] for b in arrays.point_bodies], int)
        if arrays.key == self._tissue_key and (self.tissue_poly is not None) == bool(arrays.counts):
            return False
        self._tissue_key = arrays.key
        self._point_L = arrays.points_L
        self._tissue_rgb = arrays.rgb
        self._tissue_force = None
        if not arrays.counts:
            if self.tissue_actor is not None:
                self.plotter.remove_actor(self.tissue_actor, render=False)
            self.tissue_actor = self.tissue_poly = None
            return True
        if self.tissue_poly is None:
            poly = pv.PolyData(self._point_L.copy(), lines=arrays.lines())
            poly.cell_data["rgb"] = self._tissue_rgb.copy()
            self.tissue_poly = poly
            self.tissue_actor = self.plotter.add_mesh(poly, scalars="rgb", rgb=True, line_width=TISSUE_WIDTH,
                                                      render_lines_as_tubes=True, name="tissues", pickable=False,
                                                      render=False)
            return True
        poly = self.tissue_poly
        poly.points = self._point_L.copy()
        poly.lines = arrays.lines()
        poly.cell_data["rgb"] = self._tissue_rgb.copy()
        return True

    # ------------------------------------------------------------------ per-frame updates (cheap)
    def set_frame(self, frame: SceneFrame, render: bool = True) -> None:
        """Show one moment: actor transforms, tissue points and colours; no mesh is rebuilt."""
        if self.project is None:
            return
        self._frame = frame
        poses = project_poses(self.project, frame.poses)
        for name, actor in self.mass_actors.items():
            M = pose_matrix(poses[name])
            actor.user_matrix = M
            self.axes_actors[name].user_matrix = M
        for name, actor in self.cartilage_actors.items():
            actor.user_matrix = pose_matrix(poses[name])
        self.live_detail.place()
        for arrow in self.arrow_actors.values():
            M = np.eye(4)
            M[:3, 3] = to_global(poses[arrow.body], arrow.point_L)
            arrow.actor.user_matrix = M
        self._update_tissues(poses, frame)
        self._update_contacts(frame)
        if render:
            self.plotter.render()

    def _update_tissues(self, poses: dict[str, Pose], frame: SceneFrame) -> None:
        if self.tissue_poly is None:
            return
        if frame.tissue_paths_G is not None and len(frame.tissue_paths_G) == len(self._tissue_rgb):
            pts = np.vstack(frame.tissue_paths_G)
            counts = [len(x) for x in frame.tissue_paths_G]
            offs = np.concatenate([[0], np.cumsum(counts)[:-1]])
            lines = np.concatenate([np.r_[c, np.arange(o, o + c)] for c, o in zip(counts, offs)])
            if pts.shape[0] != self.tissue_poly.n_points:
                self.tissue_poly.points = pts
                self.tissue_poly.lines = lines
            else:
                self.tissue_poly.points = pts
        else:
            R = np.stack([poses[n][0] for n in self._body_names])
            t = np.stack([poses[n][1] for n in self._body_names])
            pts = np.einsum("pij,pj->pi", R[self._point_body], self._point_L) + t[self._point_body]
            self.tissue_poly.points = pts
        force = frame.tissue_force_N
        if force is not None and len(force) != len(self._tissue_rgb):
            force = None
        self._tissue_force = force
        self._recolour_tissues()

    def _recolour_tissues(self) -> None:
        if self.tissue_poly is None:
            return
        rgb = tension_colours(self._tissue_rgb, self._tissue_force, self.force_scale_N).copy()
        if self.selected and self.selected[0] == "attachments" and self.selected[1] < len(rgb):
            rgb[self.selected[1]] = hex_rgb(SELECTED)
        self.tissue_poly.cell_data["rgb"] = rgb
        self._update_legend()

    def legend_text(self) -> str | None:
        """What the colour legend says while tissues are coloured by tension (None: no legend)."""
        if self._tissue_force is None or self.tissue_poly is None:
            return None
        return f"tissue tension: spring colour at 0 N, red at {self.force_scale_N:.4g} N or more"

    def _update_legend(self) -> None:
        """A one-line legend of the tension colours in a corner of the view; rewritten only when its
        scale changes (not each frame), hidden when no forces are shown."""
        text = self.legend_text()
        key = (text is not None, round(float(self.force_scale_N), 6))
        if key == self._legend_key:
            return
        self._legend_key = key
        if self.legend_actor is None and text is None:
            return
        if self.legend_actor is None:
            self.legend_actor = self.plotter.add_text(text, position="lower_left", font_size=9, color="white",
                                                      name="tension_legend", render=False)  # a CornerAnnotation
        else:
            self.legend_actor.SetText(0, text or "")
        self.legend_actor.SetVisibility(text is not None)

    def _ensure_contact_actor(self) -> None:
        """One persistent point actor for contact patches: updated in place (a new actor per frame
        would recompile shaders and cost hundreds of milliseconds on software OpenGL)."""
        if self.contact_actor is not None:
            return
        self.contact_poly = pv.PolyData(np.zeros((1, 3)))
        self.contact_poly.point_data["pressure [MPa]"] = np.zeros(1)
        self.contact_actor = self.plotter.add_mesh(self.contact_poly, scalars="pressure [MPa]", cmap="inferno",
                                                   clim=(0.0, 5.0), point_size=6, name="contact", pickable=False,
                                                   show_scalar_bar=False, render=False)
        self.contact_actor.SetVisibility(False)

    def clear_contacts(self) -> None:
        if self.contact_actor is not None:
            self.contact_actor.SetVisibility(False)

    def _update_contacts(self, frame: SceneFrame) -> None:
        """Contact points coloured by pressure; a frame without contact data keeps the last patch
        (contact is sampled less often than poses), an empty one clears it."""
        pts = frame.contact_points_G
        if pts is None:
            return
        if len(pts) == 0:
            self.clear_contacts()
            return
        self._ensure_contact_actor()
        pressure = frame.contact_pressure_Pa if frame.contact_pressure_Pa is not None else np.zeros(len(pts))
        cloud = pv.PolyData(np.asarray(pts, float))
        cloud.point_data["pressure [MPa]"] = np.asarray(pressure, float) * 1e-6
        self.contact_poly.copy_from(cloud)
        self.contact_poly.set_active_scalars("pressure [MPa]")
        self.contact_actor.mapper.scalar_range = (0.0, max(5.0, float(np.max(pressure)) * 1e-6))
        self.contact_actor.SetVisibility(True)

    # ------------------------------------------------------------------ selection, picking, camera
    def select(self, section: str | None, index: int | None, render: bool = True) -> None:
        """Highlight a mass or an attachment (None clears)."""
        self.selected = None if section is None or index is None else (section, index)
        self._restyle_selection()
        if render:
            self.plotter.render()

    def _restyle_selection(self) -> None:
        if self.project is None:
            return
        sel_mass = None
        if self.selected and self.selected[0] == "masses" and self.selected[1] < len(self.project.masses):
            sel_mass = self.project.masses[self.selected[1]].name
        for m in self.project.masses:
            actor = self.mass_actors.get(m.name)
            if actor is not None:
                actor.prop.color = (SELECTED if m.name == sel_mass else HOVER if m.name == self.hovered
                                    else m.colour)
        self._recolour_tissues()

    def set_hover(self, mass: str | None, render: bool = True) -> bool:
        """Highlight the bone under the mouse (None: none); True when that changed."""
        if mass == self.hovered:
            return False
        self.hovered = mass
        self._restyle_selection()
        if render:
            self.plotter.render()
        return True

    def show_marker(self, point_G, render: bool = True) -> None:
        """Mark a picked point with a small sphere (radius 1.5 % of the model's size, at least
        1 mm); None removes the marker."""
        if self.marker_actor is not None:
            self.plotter.remove_actor(self.marker_actor, render=False)
            self.marker_actor = None
        if point_G is not None:
            sphere = pv.Sphere(radius=self._marker_radius(), center=tuple(map(float, point_G)))
            self.marker_actor = self.plotter.add_mesh(sphere, color=MARKER_COLOUR, name="pick_marker",
                                                      pickable=False, render=False)
        if render:
            self.plotter.render()

    def _marker_radius(self) -> float:
        b = np.asarray(self.bounds(), float)
        return max(0.015 * float(np.max(b[1::2] - b[0::2])), 1e-3)

    def show_segment(self, a_G, b_G, render: bool = True) -> None:
        """Draw a measured distance from a_G to b_G (None removes it)."""
        self.show_path(None if a_G is None or b_G is None else [a_G, b_G], render=render)

    def show_path(self, points_G, render: bool = True) -> None:
        """Draw a measurement: picked points joined in order (a distance, an angle's two legs); None
        removes it."""
        if self.segment_actor is not None:
            self.plotter.remove_actor(self.segment_actor, render=False)
            self.segment_actor = None
        if points_G is not None and len(points_G) > 0:
            r = self._marker_radius()
            pts = [np.asarray(p, float) for p in points_G]
            shape = pv.PolyData()
            for a, b in zip(pts[:-1], pts[1:]):
                if np.linalg.norm(b - a) > 0:
                    shape = shape.merge(pv.Line(a, b).tube(radius=0.25 * r))
            for p in pts:
                shape = shape.merge(pv.Sphere(radius=0.7 * r, center=p))
            self.segment_actor = self.plotter.add_mesh(shape, color=MEASURE_COLOUR, name="measure_segment",
                                                       pickable=False, render=False)
        if render:
            self.plotter.render()

    def mass_of_actor(self, actor: object) -> str | None:
        for name, a in self.mass_actors.items():
            if a is actor:
                return name
        return self.live_detail.mass_of_actor(actor)

    def set_axes_visible(self, visible: bool) -> None:
        self.show_axes = visible
        for a in self.axes_actors.values():
            a.SetVisibility(visible)
        self.plotter.render()

    def camera_preset(self, name: str, render: bool = True) -> None:
        """Look at the model from an anatomical direction (see :data:`CAMERA_PRESETS`)."""
        direction, up = CAMERA_PRESETS[name]
        bounds = self.bounds()
        centre = np.array([(bounds[0] + bounds[1]) / 2, (bounds[2] + bounds[3]) / 2, (bounds[4] + bounds[5]) / 2])
        size = max(bounds[1] - bounds[0], bounds[3] - bounds[2], bounds[5] - bounds[4], 1e-3)
        cam = self.plotter.camera
        cam.focal_point = tuple(centre)
        cam.position = tuple(centre + np.asarray(direction) * size * 2.5)
        cam.up = up
        self.plotter.renderer.ResetCamera(bounds)
        if render:
            self.plotter.render()

    def bounds(self) -> tuple[float, ...]:
        """World bounds of the bones at the current pose (xmin, xmax, ymin, ymax, zmin, zmax)."""
        bs = [a.GetBounds() for a in self.mass_actors.values()]
        if not bs:
            return (-0.05, 0.05, -0.05, 0.05, -0.05, 0.05)
        b = np.array(bs)
        return (b[:, 0].min(), b[:, 1].max(), b[:, 2].min(), b[:, 3].max(), b[:, 4].min(), b[:, 5].max())

    @property
    def frame(self) -> SceneFrame:
        return self._frame


__all__ = ["BACKGROUND", "CAMERA_PRESETS", "HEADLIGHT_INTENSITY", "JointScene", "SceneFrame", "hex_rgb",
           "pose_matrix", "tension_colours", "use_headlight"]
