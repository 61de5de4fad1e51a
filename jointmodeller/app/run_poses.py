"""What is derived from a run's poses (model.results.BodyPoses), in one place: rotation matrices,
where each mesh is drawn, Euler angles for display; and the poses of sampled free-body states.

A run stores one pose encoding (p_G and q_GB per body and sample, with each body's frame B in its
mesh frame L); nothing here is stored.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from jointmodeller.core.spatial_math import matrix_to_euler, matrix_to_quat, principal_axes, quat_to_matrix
from jointmodeller.model.results import BodyPoses
from jointmodeller.model.specs import Project


def rotations_GB(poses: BodyPoses) -> np.ndarray:
    """R_GB (k, n, 3, 3) of every body and sample."""
    return quat_to_matrix(poses.q_GB)


def mesh_frames(poses: BodyPoses) -> tuple[np.ndarray, np.ndarray]:
    """Where to draw each mesh: R_GL (k, n, 3, 3) and origin_G (k, n, 3), vertex_G = origin_G + R_GL v_L
    (R_GL = R_GB R_BL, origin_G = p_G - R_GL com_L)."""
    R_GL = rotations_GB(poses) @ poses.R_BL[None]
    return R_GL, poses.p_G - np.einsum("knij,nj->kni", R_GL, poses.com_L)


def euler_deg(poses: BodyPoses, sequences: Sequence[str]) -> np.ndarray:
    """Orientation of each mesh frame L in G (k, n, 3) [deg] in each body's Euler sequence (the
    mass's ``euler_sequence``, as its row shows it)."""
    R_GL, _ = mesh_frames(poses)
    return np.stack([np.degrees(matrix_to_euler(R_GL[:, i], sequences[i])) for i in range(len(poses.bodies))],
                    axis=1).reshape(poses.n_samples, len(poses.bodies), 3)


def poses_of_states(system: Any, names: Sequence[str], ys: np.ndarray) -> BodyPoses:
    """The poses of free-body states ys (k, 13n) of ``system`` (core.mechanics.MechanicalSystem),
    quaternions normalised; ``names`` are its bodies'."""
    p, q, _, _ = system.split(np.asarray(ys, float))
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return BodyPoses(tuple(names), p, q, system.bodies.R_BL, system.bodies.com_L)


def body_frames(project: Project) -> tuple[np.ndarray, np.ndarray]:
    """R_BL (n, 3, 3) and com_L (n, 3) of the project's masses: the body frames app.build makes
    (centre of mass, principal axes of inertia_L by core.spatial_math.principal_axes)."""
    R_BL = np.array([principal_axes(np.asarray(m.inertia_L, float))[1] for m in project.masses]).reshape(-1, 3, 3)
    com_L = np.array([m.com_L for m in project.masses], float).reshape(-1, 3)
    return R_BL, com_L


def poses_from_mesh_frames(project: Project, R_GL: np.ndarray, origin_G: np.ndarray) -> BodyPoses:
    """The poses of the project's masses drawn at mesh frames R_GL (k, n, 3, 3), origin_G (k, n, 3)
    (the inverse of :func:`mesh_frames`, with the body frames of :func:`body_frames`)."""
    R_BL, com_L = body_frames(project)
    R_GL = np.asarray(R_GL, float)
    p_G = np.asarray(origin_G, float) + np.einsum("knij,nj->kni", R_GL, com_L)
    q_GB = matrix_to_quat(R_GL @ np.swapaxes(R_BL, -1, -2)[None])
    return BodyPoses(tuple(m.name for m in project.masses), p_G, q_GB, R_BL, com_L)


__all__ = ["body_frames", "euler_deg", "mesh_frames", "poses_from_mesh_frames", "poses_of_states", "rotations_GB"]
