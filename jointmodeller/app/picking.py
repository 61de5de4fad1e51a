"""Interactive placement without Qt: snap a picked point to a mass's surface, express it in the
mass's local frame L from the current pose, and make an attachment whose unloaded length is the
path length at that pose.

Pose convention (as ``app.masses``): a point x_L of a mass is at x_G = position_G + R_GL (x_L − com_L),
R_GL from the mass's Euler angles. A pose may be overridden per mass (a replayed run frame) by
``poses``: name -> (R_GL (3, 3), t_G (3,)) with x_G = R_GL x_L + t_G.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from jointmodeller.core.spatial_math import euler_to_matrix
from jointmodeller.model.mesh import MeshData
from jointmodeller.model.specs import GROUND, Attachment, Force, Mass, Project, vec3

Pose = tuple[np.ndarray, np.ndarray]
"""(R_GL (3, 3), t_G (3,)): x_G = R_GL x_L + t_G."""

_TRIMESH_CACHE: dict[int, tuple] = {}


def mass_pose(mass: Mass) -> Pose:
    """The initial pose of a mass's local frame in G, from its Euler angles and COM position."""
    R_GL = euler_to_matrix(np.radians(np.asarray(mass.euler_deg, float)), mass.euler_sequence)
    t_G = np.asarray(mass.position_G, float) - R_GL @ np.asarray(mass.com_L, float)
    return R_GL, t_G


def project_poses(project: Project, poses: dict[str, Pose] | None = None) -> dict[str, Pose]:
    """Pose of every mass (and ground = identity): overrides first, else the initial pose."""
    out = {GROUND: (np.eye(3), np.zeros(3))}
    for m in project.masses:
        out[m.name] = poses[m.name] if poses and m.name in poses else mass_pose(m)
    return out


def to_global(pose: Pose, x_L: ArrayLike) -> np.ndarray:
    """Points (..., 3) in L to G."""
    R, t = pose
    return np.asarray(x_L, float) @ R.T + t


def to_local(pose: Pose, x_G: ArrayLike) -> np.ndarray:
    """Points (..., 3) in G to L."""
    R, t = pose
    return (np.asarray(x_G, float) - t) @ R


def as_trimesh(mesh: MeshData):
    """A cached trimesh of a MeshData (its proximity index is built once per mesh)."""
    import trimesh

    hit = _TRIMESH_CACHE.get(id(mesh))
    if hit is not None and hit[0] is mesh:
        return hit[1]
    tm = trimesh.Trimesh(mesh.vertices_L, mesh.faces, process=False)
    if len(_TRIMESH_CACHE) > 32:
        _TRIMESH_CACHE.clear()
    _TRIMESH_CACHE[id(mesh)] = (mesh, tm)
    return tm


def closest_on_surface(mesh: MeshData, points_L: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Closest surface points (m, 3) in L to points (m, 3) in L, their distances (m,) and faces (m,)."""
    import trimesh.proximity

    pts = np.atleast_2d(np.asarray(points_L, float))
    closest, dist, face = trimesh.proximity.closest_point(as_trimesh(mesh), pts)
    return np.asarray(closest), np.asarray(dist), np.asarray(face)


@dataclass(frozen=True)
class SurfacePoint:
    """A point snapped onto a mass's surface: its mass, local and global coordinates, and how far
    the picked point was from the surface [m]."""

    mass: str
    point_L: tuple[float, float, float]
    point_G: tuple[float, float, float]
    snap_distance_m: float


def snap_to_mass(project: Project, mass_name: str, point_G, poses: dict[str, Pose] | None = None) -> SurfacePoint:
    """Snap a picked global point onto the named mass's surface (ground: the point itself)."""
    pose = project_poses(project, poses)[mass_name]
    x_L = to_local(pose, np.asarray(point_G, float))
    if mass_name == GROUND:
        return SurfacePoint(GROUND, vec3(x_L), vec3(point_G), 0.0)
    mass = project.mass(mass_name)
    if mass.mesh is None:
        return SurfacePoint(mass_name, vec3(x_L), vec3(point_G), 0.0)
    c, d, _ = closest_on_surface(mass.mesh, x_L[None])
    on_L = c[0]
    return SurfacePoint(mass_name, vec3(on_L), vec3(to_global(pose, on_L)), float(d[0]))


def nearest_mass(project: Project, point_G, poses: dict[str, Pose] | None = None) -> SurfacePoint | None:
    """The mass whose surface is nearest the global point, snapped (None when no mass has a mesh)."""
    best: SurfacePoint | None = None
    for m in project.masses:
        if m.mesh is None:
            continue
        sp = snap_to_mass(project, m.name, point_G, poses)
        if best is None or sp.snap_distance_m < best.snap_distance_m:
            best = sp
    return best


def path_length(project: Project, att: Attachment, poses: dict[str, Pose] | None = None) -> float:
    """Length [m] of the tissue's straight path through its via points at the given pose."""
    ps = project_poses(project, poses)
    pts = [to_global(ps[att.body_a], att.point_a_L)]
    pts += [to_global(ps[v.body], v.point_L) for v in att.via_points if v.body in ps]
    pts.append(to_global(ps[att.body_b], att.point_b_L))
    return float(np.sum(np.linalg.norm(np.diff(np.asarray(pts), axis=0), axis=1)))


def tissue_readout(project: Project, index: int, poses: dict[str, Pose] | None = None) -> str:
    """One line on tissue row ``index`` at the given pose: its path length, unloaded length and
    strain (length / unloaded − 1), in mm and %."""
    att = project.attachments[index]
    try:
        length = path_length(project, att, poses)
    except (KeyError, ValueError):
        return f"{att.name}: its ends refer to a mass that is not there"
    text = f"{att.name} ({att.body_a} → {att.body_b}): length {length * 1000:.2f} mm"
    rest = att.initial_length_m
    if rest is not None and rest > 0:
        text += f", unloaded {rest * 1000:.2f} mm, strain {100.0 * (length / rest - 1.0):+.2f} %"
    else:
        text += " (unloaded length measured when a study is built)"
    return text


def make_force(project: Project, at: SurfacePoint, *, name: str | None = None,
               direction_G=(0.0, 0.0, -1.0), magnitude_N: float = 10.0) -> Force:
    """A point load on the picked surface point of its mass (direction in G, default −z, 10 N);
    direction and magnitude stay editable in the Forces table."""
    if at.mass == GROUND:
        raise ValueError("a load acts on a mass, not on the ground")
    names = {f.name for f in project.forces}
    if name is None:
        k = len(project.forces) + 1
        while f"load {k}" in names:
            k += 1
        name = f"load {k}"
    return Force(name=name, body=at.mass, point_L=at.point_L, direction_G=vec3(direction_G),
                 magnitude_N=float(magnitude_N))


def make_attachment(project: Project, a: SurfacePoint, b: SurfacePoint, *, name: str | None = None,
                    spring: str | None = None, poses: dict[str, Pose] | None = None) -> Attachment:
    """An attachment between two snapped points, its unloaded length the path length at this pose."""
    if a.mass == b.mass:
        raise ValueError("pick the second point on a different mass")
    names = {x.name for x in project.attachments}
    if name is None:
        k = len(project.attachments) + 1
        while f"tissue {k}" in names:
            k += 1
        name = f"tissue {k}"
    if spring is None:
        spring = project.springs[0].name if project.springs else ""
    att = Attachment(name=name, spring=spring, body_a=a.mass, body_b=b.mass, point_a_L=a.point_L,
                     point_b_L=b.point_L)
    return replace(att, initial_length_m=path_length(project, att, poses))


def drag_end(project: Project, att: Attachment, end: str, point_G, poses: dict[str, Pose] | None = None,
             *, keep_length: bool = False) -> Attachment:
    """The attachment with end ``"a"`` or ``"b"`` moved to the surface point nearest ``point_G``
    (on the same mass); the unloaded length follows the new pose unless ``keep_length``."""
    if end not in ("a", "b"):
        raise ValueError(f"end must be 'a' or 'b', got {end!r}")
    body = att.body_a if end == "a" else att.body_b
    sp = snap_to_mass(project, body, point_G, poses)
    moved = replace(att, point_a_L=sp.point_L) if end == "a" else replace(att, point_b_L=sp.point_L)
    if keep_length:
        return moved
    return replace(moved, initial_length_m=path_length(project, moved, poses))


__all__ = [
    "Pose", "SurfacePoint", "as_trimesh", "closest_on_surface", "drag_end", "make_attachment", "make_force",
    "mass_pose",
    "nearest_mass", "path_length", "project_poses", "snap_to_mass", "tissue_readout", "to_global", "to_local",
]
