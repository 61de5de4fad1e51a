"""Use case: grow a cartilage layer on a bone where its scan has none (issue 15 item 4).

``grow_cartilage(project, bone, facing, thickness_m)`` poses the project at its current coordinates
(joints at their default values, free masses at their initial poses), picks the bone's faces that
face the ``facing`` masses (their cartilage and bone surfaces) within ``max_distance_m``, grows a
closed layer of ``thickness_m`` on them (``core.geometry.cartilage``) and stores it as the mass's
``cartilage`` in its L frame: contact pairs on the mass then use its articular sheet, the viewport
draws it as any cartilage, and the project file keeps it. CLI: ``jointmodeller cartilage``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from jointmodeller.core.geometry.cartilage import DEFAULT_MAX_ANGLE_DEG, make_cartilage
from jointmodeller.model.errors import JointModellerError
from jointmodeller.model.mesh import MeshData
from jointmodeller.model.specs import Project

__all__ = ["grow_cartilage", "CartilageResult", "DEFAULT_MAX_DISTANCE_M", "DEFAULT_MAX_ANGLE_DEG"]

DEFAULT_MAX_DISTANCE_M = 0.025
"""How far in front of a bone face the other bone may lie for the face to count as articular: a
knee's opposing bone surfaces are 2-8 mm apart over the condyles; 25 mm takes in their rims, so the
settled joint's contact stays off the layer's edge (with 15 mm the lenhart2015 knee's tibial
contact reached the rim of the femoral layer and its equilibrium took 10x longer: docs/cartilage.md)."""


@dataclass(frozen=True)
class CartilageResult:
    """What was grown: on ``bone``, facing ``facing``, ``thickness_m``; the patch's bone faces, the
    layer's faces, articular area [m²], volume [m³]; whether it replaced a cartilage layer."""

    bone: str
    facing: tuple[str, ...]
    thickness_m: float
    patch_faces: int
    n_faces: int
    articular_area_m2: float
    volume_m3: float
    replaced: bool

    def summary(self) -> str:
        return (f"cartilage on {self.bone} facing {', '.join(self.facing)}: {self.thickness_m * 1e3:g} mm over "
                f"{self.articular_area_m2 * 1e4:.1f} cm² ({self.patch_faces} bone faces; closed layer of "
                f"{self.n_faces} faces, {self.volume_m3 * 1e6:.2f} cm³)"
                + ("; replaced the previous layer" if self.replaced else ""))


def _poses(project: Project) -> dict:
    from jointmodeller.app.picking import mass_pose

    if any(m.joint is not None for m in project.masses):
        from jointmodeller.app.coordinates import with_poses_from_coordinates

        project = with_poses_from_coordinates(project)
    return {m.name: mass_pose(m) for m in project.masses}


def grow_cartilage(project: Project, bone: str, facing: Sequence[str], thickness_m: float, *,
                   max_distance_m: float = DEFAULT_MAX_DISTANCE_M, max_angle_deg: float = DEFAULT_MAX_ANGLE_DEG,
                   replace_existing: bool = False) -> tuple[Project, CartilageResult]:
    """The project with a grown cartilage layer on ``bone`` (see the module docstring).

    JointModellerError (one line) for an unknown mass, a mass without a mesh, a thickness or distance
    out of range, an existing layer without ``replace_existing``, or an empty facing region."""
    facing = tuple(dict.fromkeys(f for f in facing if f))
    names = {m.name for m in project.masses}
    for name in (bone, *facing):
        if name not in names:
            raise JointModellerError(f"no mass named {name!r}")
    if not facing:
        raise JointModellerError("name the mass (or masses) the cartilage faces")
    if bone in facing:
        raise JointModellerError(f"{bone!r} cannot face itself")
    if not (np.isfinite(thickness_m) and 1e-4 <= thickness_m <= 0.02):
        raise JointModellerError(f"cartilage thickness {thickness_m * 1e3:g} mm: must lie in [0.1, 20] mm")
    if not (np.isfinite(max_distance_m) and 0 < max_distance_m <= 0.2):
        raise JointModellerError(f"facing distance {max_distance_m * 1e3:g} mm: must lie in (0, 200] mm")
    if not 0 < max_angle_deg <= 90:
        raise JointModellerError(f"facing angle {max_angle_deg:g}°: must lie in (0, 90]°")
    mass = project.mass(bone)
    if mass.mesh is None:
        raise JointModellerError(f"{bone!r} has no bone mesh to grow cartilage on")
    if mass.cartilage is not None and not replace_existing:
        raise JointModellerError(f"{bone!r} already has a cartilage layer ({mass.cartilage.source or 'unnamed'}); "
                                 "replace it explicitly (--replace)")
    poses = _poses(project)
    R_b, t_b = poses[bone]
    verts, faces, off = [], [], 0
    for name in facing:
        other = project.mass(name)
        R_o, t_o = poses[name]
        for md in (other.cartilage, other.mesh):
            if md is None:
                continue
            v_G = np.asarray(md.vertices_L) @ R_o.T + t_o
            verts.append((v_G - t_b) @ R_b)  # into the bone's L
            faces.append(np.asarray(md.faces) + off)
            off += md.n_vertices
    if not verts:
        raise JointModellerError(f"{', '.join(facing)} has no mesh to face")
    try:
        layer, rep = make_cartilage(mass.mesh.vertices_L, mass.mesh.faces, np.concatenate(verts),
                                    np.concatenate(faces), thickness_m, max_distance_m, max_angle_deg)
    except ValueError as exc:
        raise JointModellerError(f"cartilage on {bone!r}: {exc} (within {max_distance_m * 1e3:g} mm and "
                                 f"{max_angle_deg:g}° at the current pose)") from None
    source = f"grown {thickness_m * 1e3:g} mm on {bone} facing {'+'.join(facing)}"
    cart = MeshData(layer.vertices, layer.faces, source=source)
    tri = layer.vertices[layer.faces[layer.articular]]
    area = float(0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1).sum())
    masses = tuple(replace(m, cartilage=cart) if m.name == bone else m for m in project.masses)
    result = CartilageResult(bone, facing, float(thickness_m), int(len(layer.patch_faces)), int(len(layer.faces)),
                             area, rep.volume_m3, mass.cartilage is not None)
    return replace(project, masses=masses), result
