"""Moment arm of a mesh-wrapped tissue about a fixed axis (seed 002), by tendon excursion and by the
force method: the wrapping tests' check of a wrap path's load points and directions (the two agree
only if they are right). The studies' moment arms are core.multibody.moment_arms (the
generalized-force method on the tree).

The joint of interest is a rotation of one body about an axis (point a, unit direction k) with the
other bodies held. Definition (seed 002 eq. 1): r = τ/s, the effective torque per unit tension —
the force method maps a unit tension to body forces and takes their moment about the axis (the
generalised force of that rotation). With workless constraints (frictionless wrapping) it equals
the excursion -dl/dθ (eq. 3), computed here by central differences of the path length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from jointmodeller.core.geometry.wrapping.obstacles import Pose
from jointmodeller.core.geometry.wrapping.path import WrapPath
from jointmodeller.core.spatial_math import axis_angle_matrix

PathFunction = Callable[[Pose], WrapPath]  #: the path of one tissue at a given pose


@dataclass(frozen=True)
class MomentArm:
    """Both estimates [m] and the path length at the pose [m]; ``agreement`` = |difference| / |force|."""

    excursion: float
    force: float
    length: float

    @property
    def agreement(self) -> float:
        return abs(self.excursion - self.force) / max(abs(self.force), 1e-300)


def rotate_body(pose: Pose, body: int, axis_point_G: np.ndarray, axis_dir_G: np.ndarray, theta: float) -> Pose:
    """A new pose with ``body`` turned by theta [rad] about the axis through axis_point_G along axis_dir_G."""
    k = np.asarray(axis_dir_G, float)
    k = k / np.linalg.norm(k)
    Q = axis_angle_matrix(k, theta)
    p = pose.p_G.copy()
    R = pose.R_GB.copy()
    a = np.asarray(axis_point_G, float)
    p[body] = a + Q @ (p[body] - a)
    R[body] = Q @ R[body]
    return Pose(p, R)


def moment_arm_force(path: WrapPath, body: int, axis_point_G: np.ndarray, axis_dir_G: np.ndarray) -> float:
    """Effective torque per unit tension on ``body`` about the axis: k · Σ (p_i - a) × f_i."""
    k = np.asarray(axis_dir_G, float)
    k = k / np.linalg.norm(k)
    on = path.load_body == body
    if not on.any():
        return 0.0
    arm = path.load_point_G[on] - np.asarray(axis_point_G, float)
    return float(np.cross(arm, path.load_dir_G[on]).sum(axis=0) @ k)


def moment_arm_excursion(
    path_fn: PathFunction,
    pose: Pose,
    body: int,
    axis_point_G: np.ndarray,
    axis_dir_G: np.ndarray,
    delta: float = 1e-3,
) -> float:
    """-dl/dθ by central differences (θ ± delta [rad]) of the path length as ``body`` turns."""
    lp = path_fn(rotate_body(pose, body, axis_point_G, axis_dir_G, +delta)).length
    lm = path_fn(rotate_body(pose, body, axis_point_G, axis_dir_G, -delta)).length
    return -(lp - lm) / (2.0 * delta)


def moment_arm(
    path_fn: PathFunction,
    pose: Pose,
    body: int,
    axis_point_G: np.ndarray,
    axis_dir_G: np.ndarray,
    delta: float = 1e-3,
) -> MomentArm:
    """Both moment arms of the tissue about the axis at this pose (the path is recomputed at ±delta)."""
    path = path_fn(pose)
    force = moment_arm_force(path, body, axis_point_G, axis_dir_G)
    exc = moment_arm_excursion(path_fn, pose, body, axis_point_G, axis_dir_G, delta)
    path_fn(pose)  # leave a warm-started solver at the pose it was asked about
    return MomentArm(excursion=exc, force=force, length=path.length)
