"""Runs for tests: poses of a few bodies turning and moving (no study run)."""

from __future__ import annotations

import numpy as np

from jointmodeller.model.results import BodyPoses


def turning_poses(times, bodies=("humerus", "ulna"), seed: int = 0) -> BodyPoses:
    """Poses of ``bodies`` at ``times``: random positions, each body turning about its own random axis
    by 0.5 rad per second of ``times``, B tilted in L by a random rotation and centre of mass."""
    rng = np.random.default_rng(seed)
    t = np.asarray(times, float).reshape(-1)
    n = len(bodies)
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    half = 0.25 * t[:, None, None]
    q = np.concatenate([np.broadcast_to(np.cos(half), (t.size, n, 1)), np.sin(half) * axis[None]], axis=-1)
    tilt = rng.normal(size=(n, 3, 3))
    R_BL = np.array([np.linalg.qr(a)[0] for a in tilt])
    R_BL *= np.sign(np.linalg.det(R_BL))[:, None, None]
    return BodyPoses(tuple(bodies), rng.random((t.size, n, 3)), q, R_BL, 0.01 * rng.random((n, 3)))
