"""What each row of a project draws in the scene (pyvista, no Qt), in a form that can be compared
between two versions of the project: a mass's bone, cartilage and body axes, a load's arrow and the
tissues' lines. :class:`jointmodeller.render.scene.JointScene` builds its actors from these, and
:mod:`jointmodeller.render.scene_diff` compares them to update only what an edit changed."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyvista as pv

from jointmodeller.model.specs import GROUND, Force, Mass, Project
from jointmodeller.render.display_mesh import display_mesh

AXIS_COLOURS = ("#e03030", "#30c030", "#3060f0")
ARROW_COLOUR = "#40d0d0"
CARTILAGE_COLOUR = "#7fc8e0"
"""A mass's cartilage layer (imported or grown), drawn over its bone and posed with it."""
TISSUE_DEFAULT_COLOUR = "#d4a017"
"""A tissue whose spring type is missing."""


def hex_rgb(colour: str) -> np.ndarray:
    """'#rrggbb' -> (3,) floats in [0, 1]."""
    c = colour.lstrip("#")
    return np.array([int(c[i:i + 2], 16) / 255.0 for i in (0, 2, 4)])


def body_axes_L(inertia_L) -> np.ndarray:
    """The body frame B's axes (principal axes of inertia, as app.build makes them) as rows (3, 3)
    in L, i.e. R_BL; L's own axes when the inertia is not usable."""
    try:
        from jointmodeller.core.spatial_math import principal_axes

        _, R_BL = principal_axes(inertia_L)
        return np.asarray(R_BL, float) if np.isfinite(R_BL).all() else np.eye(3)
    except (ImportError, ValueError, np.linalg.LinAlgError):
        return np.eye(3)


def axes_poly(origin: np.ndarray, size: float, axes_L: np.ndarray | None = None) -> pv.PolyData:
    """Three lines from ``origin`` along the rows of ``axes_L`` (3, 3) (default: L's own axes)."""
    a = np.eye(3) if axes_L is None else np.asarray(axes_L, float)
    pts = np.vstack([origin, origin + size * a[0], origin + size * a[1], origin + size * a[2]])
    lines = np.array([2, 0, 1, 2, 0, 2, 2, 0, 3])
    poly = pv.PolyData(pts, lines=lines)
    poly.cell_data["rgb"] = np.array([hex_rgb(c) for c in AXIS_COLOURS])
    return poly


def axes_poly_of(m: Mass) -> pv.PolyData:
    """A mass's body axes (in L): at its centre of mass, along its principal axes, a quarter of its
    mesh's largest extent long."""
    size = float(np.ptp(m.mesh.vertices_L, axis=0).max()) * 0.25
    return axes_poly(np.asarray(m.com_L, float), size, body_axes_L(m.inertia_L))


def axes_changed(old: Mass, new: Mass) -> bool:
    """Whether the body axes of ``new`` are drawn otherwise than those of ``old``."""
    return old.mesh is not new.mesh or tuple(old.com_L) != tuple(new.com_L) or old.inertia_L != new.inertia_L


def add_mass_actor(plotter: pv.Plotter, m: Mass, cache_dir=None):
    return plotter.add_mesh(display_mesh(m.mesh, cache_dir), color=m.colour, smooth_shading=True, specular=0.2,
                            name=f"mass:{m.name}", pickable=True, render=False)


def add_cartilage_actor(plotter: pv.Plotter, m: Mass, cache_dir=None):
    return plotter.add_mesh(display_mesh(m.cartilage, cache_dir), color=CARTILAGE_COLOUR, smooth_shading=True,
                            specular=0.3, name=f"cartilage:{m.name}", pickable=False, render=False)


def add_axes_actor(plotter: pv.Plotter, m: Mass, visible: bool):
    actor = plotter.add_mesh(axes_poly_of(m), scalars="rgb", rgb=True, line_width=3, name=f"axes:{m.name}",
                             pickable=False, render=False)
    actor.SetVisibility(visible)
    return actor


# ---------------------------------------------------------------------- load arrows
@dataclass
class Arrow:
    """A load's arrow: on ``body`` at ``point_L`` (its user matrix places it), shaped by ``shape``
    (unit direction in G and the magnitude's sign), drawn by ``actor``."""

    body: str
    point_L: np.ndarray
    shape: tuple[float, float, float, float]
    actor: object = None


def arrow_of(f: Force, drawn_bodies) -> Arrow | None:
    """The arrow a load row draws, or None (its body has no bone drawn, or it has no direction)."""
    if f.body not in drawn_bodies or not np.any(f.direction_G):
        return None
    d = np.asarray(f.direction_G, float) / np.linalg.norm(f.direction_G)
    return Arrow(f.body, np.asarray(f.point_L, float), (*map(float, d), float(np.sign(f.magnitude_N or 1.0))))


def arrow_poly(shape: tuple[float, float, float, float]) -> pv.PolyData:
    """A 30 mm arrow ending at the origin along the direction (pointing away when the sign is negative)."""
    length = 0.03 * shape[3]
    d = np.asarray(shape[:3], float)
    return pv.Arrow(start=-d * length, direction=d * length, scale=abs(length), tip_length=0.3, tip_radius=0.08,
                    shaft_radius=0.03)


def add_arrow_actor(plotter: pv.Plotter, name: str, arrow: Arrow) -> Arrow:
    arrow.actor = plotter.add_mesh(arrow_poly(arrow.shape), color=ARROW_COLOUR, name=f"force:{name}", pickable=False,
                                   render=False)
    return arrow


# ---------------------------------------------------------------------- tissues
@dataclass
class TissueArrays:
    """Every tissue of a project as one set of polylines: per point its body's name and its position
    in that body's L, the point count of each tissue (one line cell each) and its colour (m, 3)."""

    body_names: list[str]
    point_bodies: list[str] = field(default_factory=list)
    points_L: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    counts: list[int] = field(default_factory=list)
    rgb: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))

    @property
    def key(self) -> tuple:
        """Equal for two projects whose tissues are drawn alike."""
        return (tuple(self.point_bodies), self.points_L.tobytes(), tuple(self.counts), self.rgb.tobytes())

    def lines(self) -> np.ndarray:
        """VTK's line connectivity: per tissue its point count, then its point indices."""
        out, start = [], 0
        for c in self.counts:
            out.append(np.r_[c, np.arange(start, start + c)])
            start += c
        return np.concatenate(out).astype(int) if out else np.zeros(0, int)


def tissue_arrays(project: Project) -> TissueArrays:
    names = [GROUND] + [m.name for m in project.masses]
    known = set(names)
    bodies, pts, counts, rgb = [], [], [], []
    springs: dict = {}
    for s in project.springs:
        springs.setdefault(s.name, s)  # the first of a name, as Project.spring
    for att in project.attachments:
        chain = [(att.body_a, att.point_a_L)] + [(v.body, v.point_L) for v in att.via_points] + [
            (att.body_b, att.point_b_L)]
        chain = [(b, x) for b, x in chain if b in known]
        for b, x in chain:
            bodies.append(b)
            pts.append(x)
        counts.append(len(chain))
        try:
            rgb.append(hex_rgb(springs[att.spring].colour))
        except (KeyError, ValueError, IndexError):
            rgb.append(hex_rgb(TISSUE_DEFAULT_COLOUR))
    return TissueArrays(names, bodies, np.asarray(pts, float).reshape(-1, 3), counts,
                        np.asarray(rgb, float).reshape(-1, 3))


@dataclass
class SceneChanges:
    """What an update did to the scene's actors: ``added`` and ``removed`` actors, ``updated`` ones
    (the same object with a new mapper input or colour), ``new_meshes`` the bone and cartilage actors
    among the added and updated whose mesh is new (the viewport looks at their back faces again); ``rebuilt``
    when everything was built anew."""

    added: list = field(default_factory=list)
    removed: list = field(default_factory=list)
    updated: list = field(default_factory=list)
    new_meshes: list = field(default_factory=list)
    rebuilt: bool = False


__all__ = ["Arrow", "SceneChanges", "TissueArrays", "arrow_of", "arrow_poly", "axes_poly", "axes_poly_of",
           "hex_rgb", "tissue_arrays"]
