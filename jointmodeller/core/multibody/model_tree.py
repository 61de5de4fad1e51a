"""The mobilizer tree of a project's masses: the one translation of model specs (``Mass``,
``JointSpec``, ``Frame``) into ``BodySpec``/``MobilizerSpec``.

The System builders use it, and so does the OpenSim importer, which places the bodies at the
default coordinates with the System's own kinematics. A mass's body frame B is its L frame; a mass
without a joint rides a ``free`` mobilizer from ground at its initial pose (``weld`` when fixed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from jointmodeller.core.multibody.functions import from_spec
from jointmodeller.core.multibody.system import CUSTOM_KEYS, BodySpec, MobilizerSpec, MultibodySystem
from jointmodeller.core.spatial_math import euler_to_matrix, euler_to_quat, matrix_to_quat
from jointmodeller.model.specs import GROUND, Frame, JointSpec, Mass

FRAME_EULER = "XYZ"
"""Euler sequence of joint and wrap-object frames (OpenSim's body-fixed X-Y-Z, scipy intrinsic)."""


def frame_pose(frame: Frame) -> tuple[np.ndarray, np.ndarray]:
    """(R (3, 3), p (3,)) of a Frame on a body: rotation from its Euler angles (FRAME_EULER), origin."""
    return euler_to_matrix(np.radians(frame.euler_deg), FRAME_EULER), np.asarray(frame.origin_L, float)


def frame_transform(frame: Frame) -> np.ndarray:
    """4x4 homogeneous transform of a Frame on a body."""
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = frame_pose(frame)
    return T


@dataclass
class MassTree:
    """The tree of a project's masses with its name lookups.

    body: mass name -> body index (ground -1); qindex / uindex: coordinate name -> index into q / u;
    q0: the joints' default coordinates (a free joint's three Euler angles as a quaternion),
    constraints not applied.
    """

    system: MultibodySystem
    body: dict[str, int]
    qindex: dict[str, int]
    uindex: dict[str, int]
    q0: np.ndarray


def initial_pose_GL(m: Mass) -> np.ndarray:
    """4x4 pose of a mass's L frame in G at its initial position (of its centre of mass) and angles."""
    T = np.eye(4)
    T[:3, :3] = euler_to_matrix(np.radians(m.euler_deg), m.euler_sequence)
    T[:3, 3] = np.asarray(m.position_G) - T[:3, :3] @ np.asarray(m.com_L)
    return T


def _mobilizer(m: Mass, parent: int, parent_GL: np.ndarray | None = None
               ) -> tuple[MobilizerSpec, list[float], list[str], list[str]]:
    """MobilizerSpec of a mass, its default q and the names of its q and u entries ('' = unnamed).
    parent_GL: the parent mass's initial pose (identity for ground): a ``free`` joint row without
    default coordinates starts where the mass's own initial pose puts it."""
    j: JointSpec | None = m.joint
    if j is None:
        T = initial_pose_GL(m)
        q0 = [] if m.fixed else [1.0, 0, 0, 0, 0, 0, 0]
        return MobilizerSpec("weld" if m.fixed else "free", -1, T, np.eye(4)), q0, [""] * len(q0), \
            [""] * (0 if m.fixed else 6)
    params = dict(j.parameters)
    kind = j.type
    q0 = list(j.default_q) if j.default_q else [0.0] * len(j.coordinates)
    names = list(j.coordinates)
    un = list(names)
    mp: dict = {}
    fns: dict = {}
    if kind == "custom":
        mp["coordinates"] = len(j.coordinates)
        mp["rotation_axes"] = np.array([[params.get(f"rotation{i}_{c}", float(i - 1 == k))
                                         for k, c in enumerate("xyz")] for i in (1, 2, 3)])
        mp["translation_axes"] = np.array([[params.get(f"translation{i}_{c}", float(i - 1 == k))
                                            for k, c in enumerate("xyz")] for i in (1, 2, 3)])
        for key, fn in zip(CUSTOM_KEYS, j.functions):
            fns[key] = from_spec(fn, j.coordinates)
    elif kind == "ellipsoid":
        mp["radii"] = (params.get("a", 1.0), params.get("b", 1.0), params.get("c", 1.0))
    elif kind == "screw":
        mp["pitch"] = params.get("pitch", 0.0)
    elif kind == "free" and len(q0) == 6:
        q0 = [*euler_to_quat(np.asarray(q0[:3], float), FRAME_EULER), *q0[3:6]]
        names, un = [""] * 7, [""] * 6
    elif kind == "free" and not q0:  # X_FM = X_PF⁻¹ · X_GP⁻¹ · X_GL · X_LM
        X = (np.linalg.inv(frame_transform(j.frame_parent)) @ np.linalg.inv(
            np.eye(4) if parent_GL is None else parent_GL) @ initial_pose_GL(m) @ frame_transform(j.frame_child))
        q0 = [*matrix_to_quat(X[:3, :3]), *X[:3, 3]]
        names, un = [""] * 7, [""] * 6
    mob = MobilizerSpec(kind, parent, frame_transform(j.frame_parent), frame_transform(j.frame_child), mp, fns,
                        bool(j.reversed))
    return mob, q0, names, un


def mass_tree(masses: Sequence[Mass], gravity_G=(0.0, -9.81, 0.0)) -> MassTree:
    """The MultibodySystem of ``masses`` (parents placed before children; B = L frames)."""
    order: list = []
    placed = {GROUND}
    rest = list(masses)
    while rest:
        before = len(rest)
        for m in list(rest):
            par = m.joint.parent if m.joint else GROUND
            if par in placed:
                order.append(m)
                placed.add(m.name)
                rest.remove(m)
        if len(rest) == before:
            raise ValueError(f"mobilizer parents of {[m.name for m in rest]} do not reach ground")
    index = {m.name: i for i, m in enumerate(order)}
    index[GROUND] = -1
    by_name = {m.name: m for m in order}
    bodies, q0_parts, qnames, unames = [], [], [], []
    for m in order:
        par = m.joint.parent if m.joint else GROUND
        mob, q0, names, un = _mobilizer(m, index[par], None if par == GROUND else initial_pose_GL(by_name[par]))
        bodies.append(BodySpec(m.name, float(m.mass_kg), np.asarray(m.com_L, float), np.asarray(m.inertia_L, float),
                               mob))
        q0_parts += q0
        qnames += names
        unames += un
    system = MultibodySystem(bodies, gravity_G=gravity_G)
    qindex = {n: k for k, n in enumerate(qnames) if n}
    uindex = {n: k for k, n in enumerate(unames) if n}
    return MassTree(system, index, qindex, uindex, np.asarray(q0_parts, float))
