"""Coordinates as the user sees them: every joint coordinate of a project, free or locked, with its
value, and the one way to change them (CLI and GUI alike).

Values are SI inside (rad for a rotational coordinate, m for a translational one); the table says
which each is. Changing a value moves the bodies: the masses' initial poses (``position_G``,
``euler_deg``) are rewritten from the tree's kinematics, so every view of the project agrees.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Mapping

import numpy as np

from jointmodeller.core.spatial_math import matrix_to_euler
from jointmodeller.core.studies.muscle_paths import build_multibody
from jointmodeller.model.errors import Problem, ValidationError
from jointmodeller.model.specs import GROUND, Project, vec3


@dataclass(frozen=True)
class CoordinateRow:
    """One joint coordinate: its name, the mass whose joint owns it, its value [rad or m], whether
    it is locked, and whether it is rotational (shown in degrees) or translational (millimetres)."""

    name: str
    mass: str
    value: float
    locked: bool
    rotational: bool

    @property
    def display(self) -> tuple[float, str]:
        """Value in the units shown to people: (degrees, "deg") or (millimetres, "mm")."""
        return (float(np.degrees(self.value)), "deg") if self.rotational else (self.value * 1000.0, "mm")


def _multibody(project: Project):
    try:
        return build_multibody(project)
    except ValueError as exc:
        raise ValidationError(Problem("Masses", None, "joint", str(exc))) from None


def coordinate_table(project: Project) -> list[CoordinateRow]:
    """Every named joint coordinate of the project, in mass-row order."""
    model = _multibody(project)
    rot_u = model.system.rotational_u
    rows = []
    for m in project.masses:
        j = m.joint
        if j is None:
            continue
        locked = j.locked or (False,) * len(j.coordinates)
        for name, lock in zip(j.coordinates, locked):
            if name not in model.qindex:
                continue
            k = model.qindex[name]
            rot = bool(rot_u[model.uindex[name]]) if name in model.uindex else True
            rows.append(CoordinateRow(name, m.name, float(model.q0[k]), bool(lock), rot))
    return rows


def set_coordinates(
    project: Project,
    *,
    lock: Iterable[str] = (),
    free: Iterable[str] = (),
    lock_all: bool = False,
    free_all: bool = False,
    values: Mapping[str, float] | None = None,
) -> Project:
    """A copy of ``project`` with coordinates locked or freed and values set [rad or m].

    Applied in order: lock_all / free_all, then ``lock``, then ``free``, then ``values``. Unknown
    names raise ValidationError listing them; nothing is changed then.
    """
    lock, free, values = set(lock), set(free), dict(values or {})
    known = {name for m in project.masses if m.joint for name in m.joint.coordinates}
    problems = [Problem("Masses", None, "joint.coordinates", f"no coordinate named {n!r}")
                for n in sorted((lock | free | set(values)) - known)]
    for name, v in values.items():
        if not np.isfinite(v):
            problems.append(Problem("Masses", None, "joint.default_q", f"{name}: the value must be finite, got {v!r}"))
    if problems:
        raise ValidationError(problems)
    masses = []
    for m in project.masses:
        j = m.joint
        if j is None:
            masses.append(m)
            continue
        n = len(j.coordinates)
        locked = list(j.locked or (False,) * n)
        q = list(j.default_q or (0.0,) * n)
        for k, name in enumerate(j.coordinates):
            if lock_all:
                locked[k] = True
            if free_all:
                locked[k] = False
            if name in lock:
                locked[k] = True
            if name in free:
                locked[k] = False
            if name in values:
                q[k] = float(values[name])
        masses.append(replace(m, joint=replace(j, locked=tuple(locked), default_q=tuple(q))))
    out = replace(project, masses=tuple(masses))
    return with_poses_from_coordinates(out) if values else out


def with_poses_from_coordinates(project: Project) -> Project:
    """A copy whose masses' initial poses (centre of mass in G, orientation of L) are those the joints
    give at their default coordinates (dependent coordinates follow their couplers)."""
    model = _multibody(project)
    kin = model.system.kinematics(model.q0)
    masses = []
    for m in project.masses:
        i = model.body.get(m.name)
        if i is None or i == model.body.get(GROUND) or m.joint is None:
            masses.append(m)
            continue
        R_GL = kin.R_GB[i]  # the tree's body frame is the mass's L frame
        com_G = kin.p_GB[i] + R_GL @ np.asarray(m.com_L, float)
        euler = np.degrees(matrix_to_euler(R_GL[None], m.euler_sequence)[0])
        masses.append(replace(m, position_G=vec3(com_G), euler_deg=vec3(euler)))
    return replace(project, masses=tuple(masses))
