"""The 3D scene of a project (pyvista, no Qt): bones, body axes, tissues coloured by tension, load
arrows and contact patches coloured by pressure.

Meshes are uploaded once per :meth:`JointScene.build`; a pose update (:meth:`JointScene.set_frame`)
only sets actor transforms and moves the few tissue path points, so live runs redraw cheaply.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyvista as pv

from jointmodeller.app.picking import Pose, project_poses, to_global
from jointmodeller.model.specs import GROUND, Project

BACKGROUND = "#1e2430"
SELECTED = "#3fa9f5"
HOVER = "#f2d06b"
"""A bone under the mouse while a picking tool is on (a click would land on it)."""
TENSION_HOT = np.array([0.85, 0.10, 0.10])
AXIS_COLOURS = ("#e03030", "#30c030", "#3060f0")
ARROW_COLOUR = "#40d0d0"
MARKER_COLOUR = "#ff3b30"
"""The marker on a picked point."""
MEASURE_COLOUR = "#ffd60a"
"""A measured distance."""
CARTILAGE_COLOUR = "#7fc8e0"
"""A mass's cartilage layer (imported or grown), drawn over its bone and posed with it."""
TISSUE_WIDTH = 8.0
DISPLAY_MAX_FACES = 10000
"""Bones are drawn with at most this many triangles (quadric decimation, cached per mesh): a frame of
the demo costs ~40 ms instead of ~140 ms on software OpenGL. Picking still snaps to the full mesh."""
DISPLAY_CACHE_VERSION = 1
"""Of the decimated meshes kept on disk (:func:`display_mesh`'s ``cache_dir``); part of their key."""

_DISPLAY_CACHE: dict[int, tuple[object, pv.PolyData]] = {}


def display_mesh(mesh, cache_dir: str | os.PathLike | None = None) -> pv.PolyData:
    """The PolyData drawn for a MeshData (in L): decimated to DISPLAY_MAX_FACES, cached in memory and,
    with ``cache_dir``, on disk: the decimation of a 60k-face bone takes ~0.15–0.3 s, reading it back
    ~10 ms (the GUI passes its per-user cache folder, so a project opens that much faster the second
    time). The file is named by a hash of the mesh's vertices and faces, DISPLAY_MAX_FACES and VTK's
    version, holds the same points and triangles the decimation gave, and is rebuilt when it cannot be
    read or does not carry its key."""
    hit = _DISPLAY_CACHE.get(id(mesh))
    if hit is not None and hit[0] is mesh:
        return hit[1]
    poly = None
    path = None
    if mesh.n_faces > DISPLAY_MAX_FACES and cache_dir is not None:
        key = display_cache_key(mesh)
        path = Path(cache_dir) / f"display-{key}.vtp"
        poly = _read_display(path, key)
    if poly is None:
        faces = np.hstack([np.full((mesh.n_faces, 1), 3), mesh.faces]).ravel()
        poly = pv.PolyData(np.array(mesh.vertices_L), faces)
        if mesh.n_faces > DISPLAY_MAX_FACES:
            poly = poly.decimate(1.0 - DISPLAY_MAX_FACES / mesh.n_faces)
            if path is not None:
                _write_display(poly, path, key)
    if len(_DISPLAY_CACHE) > 32:
        _DISPLAY_CACHE.clear()
    _DISPLAY_CACHE[id(mesh)] = (mesh, poly)
    return poly


def display_cache_key(mesh) -> str:
    """Hex SHA-256 naming the decimated display mesh of a MeshData."""
    h = hashlib.sha256(b"jointmodeller-display-mesh")
    h.update(np.array([DISPLAY_CACHE_VERSION, DISPLAY_MAX_FACES], np.int64).tobytes())
    h.update(repr(tuple(pv.vtk_version_info)).encode())
    for a in (np.ascontiguousarray(mesh.vertices_L, np.float64), np.ascontiguousarray(mesh.faces, np.int64)):
        h.update(f"{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


_KEY_FIELD = "jointmodeller_display_key"


def _read_display(path: Path, key: str) -> pv.PolyData | None:
    """The cached decimated mesh at ``path`` when it is there, whole and carries ``key``; else None."""
    if not path.is_file():
        return None
    try:
        with pv.vtk_verbosity("off"), warnings.catch_warnings(), pv.VtkErrorCatcher(raise_errors=True):
            warnings.simplefilter("ignore")  # a damaged file is not news: it is rebuilt
            poly = pv.read(path)
        ok = (isinstance(poly, pv.PolyData) and poly.n_cells > 0 and poly.is_all_triangles
              and _KEY_FIELD in poly.field_data and str(poly.field_data[_KEY_FIELD][0]) == key)
    except Exception:  # a damaged or foreign file: decimate again and rewrite it
        return None
    if not ok:
        return None
    poly.field_data.remove(_KEY_FIELD)
    return poly


def _write_display(poly: pv.PolyData, path: Path, key: str) -> None:
    """Keep the decimated mesh at ``path`` (a temporary file renamed into place; best effort)."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".display-", suffix=".vtp", dir=path.parent)
        os.close(fd)
        stored = poly.copy(deep=False)
        stored.field_data[_KEY_FIELD] = np.array([key])
        stored.save(tmp, binary=True)
        os.replace(tmp, path)
        tmp = None
    except Exception:  # an unwritable cache only costs the next start-up the decimation
        pass
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)

CAMERA_PRESETS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "anterior": ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0)),
    "posterior": ((0.0, -1.0, 0.0), (0.0, 0.0, 1.0)),
    "lateral": ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    "medial": ((-1.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    "superior": ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0)),
    "oblique": ((-0.7, 0.6, 0.35), (0.0, 0.0, 1.0)),  # anteromedial
}
"""Preset -> (direction from the focal point to the camera in G, view-up in G). Convention of the
global frame: x lateral, y anterior, z superior (a right limb in anatomical position)."""


def hex_rgb(colour: str) -> np.ndarray:
    """'#rrggbb' -> (3,) floats in [0, 1]."""
    c = colour.lstrip("#")
    return np.array([int(c[i:i + 2], 16) / 255.0 for i in (0, 2, 4)])


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


def body_axes_L(inertia_L) -> np.ndarray:
    """The body frame B's axes (principal axes of inertia, as app.build makes them) as rows (3, 3)
    in L, i.e. R_BL; L's own axes when the inertia is not usable."""
    try:
        from jointmodeller.core.spatial_math import principal_axes

        _, R_BL = principal_axes(inertia_L)
        return np.asarray(R_BL, float) if np.isfinite(R_BL).all() else np.eye(3)
    except (ImportError, ValueError, np.linalg.LinAlgError):
        return np.eye(3)


@dataclass
class SceneFrame:
    """One moment to show: poses per mass name, tissue forces (m,) [N] in attachment order, optional
    wrapped paths (one (k_i, 3) array per tissue, in G), contact points (c, 3) in G with pressures (c,)
    (None: keep the patch shown; empty: no contact)."""

    poses: dict[str, Pose] = field(default_factory=dict)
    tissue_force_N: np.ndarray | None = None
    tissue_paths_G: list[np.ndarray] | None = None
    contact_points_G: np.ndarray | None = None
    contact_pressure_Pa: np.ndarray | None = None
    time: float | None = None


class JointScene:
    """The actors of one project in one pyvista plotter (a Plotter or a pyvistaqt QtInteractor)."""

    def __init__(self, plotter: pv.Plotter):
        self.plotter = plotter
        self.project: Project | None = None
        self.mass_actors: dict[str, object] = {}
        self.cartilage_actors: dict[str, object] = {}
        self.axes_actors: dict[str, object] = {}
        self.arrow_actors: list[tuple[str, object, np.ndarray]] = []
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
        plotter.set_background(BACKGROUND)

    # ------------------------------------------------------------------ build (meshes uploaded here)
    def build(self, project: Project, frame: SceneFrame | None = None, reset_camera: bool = False) -> None:
        """Rebuild every actor from the project (meshes are uploaded to VTK once per build)."""
        p = self.plotter
        for actor in list(self.mass_actors.values()) + list(self.cartilage_actors.values()) + list(
                self.axes_actors.values()) + [
                a for _, a, _ in self.arrow_actors] + [self.tissue_actor, self.contact_actor]:
            if actor is not None:
                p.remove_actor(actor, render=False)
        self.mass_actors.clear()
        self.cartilage_actors.clear()
        self.axes_actors.clear()
        self.arrow_actors = []
        self.tissue_actor = self.contact_actor = None
        self.contact_poly = None
        self.project = project
        for m in project.masses:
            if m.cartilage is not None:
                self.cartilage_actors[m.name] = p.add_mesh(
                    display_mesh(m.cartilage, self.display_cache), color=CARTILAGE_COLOUR, smooth_shading=True,
                    specular=0.3, name=f"cartilage:{m.name}", pickable=False, render=False)
            if m.mesh is None:
                continue
            actor = p.add_mesh(display_mesh(m.mesh, self.display_cache), color=m.colour, smooth_shading=True,
                               specular=0.2, name=f"mass:{m.name}", pickable=True, render=False)
            self.mass_actors[m.name] = actor
            size = float(np.ptp(m.mesh.vertices_L, axis=0).max()) * 0.25
            axes = self._axes_poly(np.asarray(m.com_L, float), size, body_axes_L(m.inertia_L))
            self.axes_actors[m.name] = p.add_mesh(axes, scalars="rgb", rgb=True, line_width=3,
                                                  name=f"axes:{m.name}", pickable=False, render=False)
            self.axes_actors[m.name].SetVisibility(self.show_axes)
        self._build_tissues(project)
        self._update_legend()
        self._build_arrows(project)
        if project.contacts and project.masses:
            # compile the contact actor's shaders at the first render (one point hidden inside a
            # bone), not at the first contact of a live run
            self._ensure_contact_actor()
            self.contact_poly.points = np.asarray([project.masses[0].position_G], float)
            self.contact_actor.SetVisibility(True)
        self.set_frame(frame or SceneFrame(), render=False)
        if reset_camera:
            self.camera_preset("oblique", render=False)
        self._restyle_selection()

    @staticmethod
    def _axes_poly(origin: np.ndarray, size: float, axes_L: np.ndarray | None = None) -> pv.PolyData:
        """Three lines from ``origin`` along the rows of ``axes_L`` (3, 3) (default: L's own axes)."""
        a = np.eye(3) if axes_L is None else np.asarray(axes_L, float)
        pts = np.vstack([origin, origin + size * a[0], origin + size * a[1], origin + size * a[2]])
        lines = np.array([2, 0, 1, 2, 0, 2, 2, 0, 3])
        poly = pv.PolyData(pts, lines=lines)
        poly.cell_data["rgb"] = np.array([hex_rgb(c) for c in AXIS_COLOURS])
        return poly

    def _build_tissues(self, project: Project) -> None:
        names = [GROUND] + [m.name for m in project.masses]
        self._body_names = names
        index = {n: i for i, n in enumerate(names)}
        body, pts, lines, rgb = [], [], [], []
        for att in project.attachments:
            chain = [(att.body_a, att.point_a_L)] + [(v.body, v.point_L) for v in att.via_points] + [
                (att.body_b, att.point_b_L)]
            chain = [(b, x) for b, x in chain if b in index]
            start = len(pts)
            for b, x in chain:
                body.append(index[b])
                pts.append(x)
            lines.append([len(chain)] + list(range(start, start + len(chain))))
            try:
                rgb.append(hex_rgb(project.spring(att.spring).colour))
            except (KeyError, ValueError, IndexError):
                rgb.append(hex_rgb("#d4a017"))
        self._point_body = np.asarray(body, int)
        self._point_L = np.asarray(pts, float).reshape(-1, 3)
        self._tissue_rgb = np.asarray(rgb, float).reshape(-1, 3)
        self._tissue_force = None
        if not lines:
            self.tissue_poly = None
            return
        poly = pv.PolyData(self._point_L.copy(), lines=np.concatenate([np.asarray(x) for x in lines]))
        poly.cell_data["rgb"] = self._tissue_rgb.copy()
        self.tissue_poly = poly
        self.tissue_actor = self.plotter.add_mesh(poly, scalars="rgb", rgb=True, line_width=TISSUE_WIDTH,
                                                  render_lines_as_tubes=True, name="tissues", pickable=False,
                                                  render=False)

    def _build_arrows(self, project: Project) -> None:
        for f in project.forces:
            if f.body not in self.mass_actors or not np.any(f.direction_G):
                continue
            length = 0.03 * np.sign(f.magnitude_N or 1.0)
            d = np.asarray(f.direction_G, float) / np.linalg.norm(f.direction_G)
            arrow = pv.Arrow(start=-d * length, direction=d * length, scale=abs(length), tip_length=0.3,
                             tip_radius=0.08, shaft_radius=0.03)
            actor = self.plotter.add_mesh(arrow, color=ARROW_COLOUR, name=f"force:{f.name}", pickable=False,
                                          render=False)
            self.arrow_actors.append((f.body, actor, np.asarray(f.point_L, float)))

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
        for body, actor, point_L in self.arrow_actors:
            M = np.eye(4)
            M[:3, 3] = to_global(poses[body], point_L)
            actor.user_matrix = M
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
                                                      name="tension_legend")  # a CornerAnnotation
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
        return None

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


__all__ = ["BACKGROUND", "CAMERA_PRESETS", "JointScene", "SceneFrame", "hex_rgb", "pose_matrix",
           "tension_colours"]
