"""Shared helpers for the contact tests: meshes, poses and kinematics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import trimesh

from jointmodeller.core.mechanics.forces import BodyKinematics


def read_mesh(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(vertices, faces) of an STL (trimesh) or VTP (VTK XML polydata, read with the stdlib)."""
    if path.suffix.lower() == ".vtp":
        return _read_vtp(path)
    m = trimesh.load(path)  # merges the duplicated STL vertices
    return np.asarray(m.vertices, float), np.asarray(m.faces, np.int64)


def _read_vtp(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Minimal ASCII/base64-free VTP reader via pyvista when present, else VTK XML parsing."""
    import pyvista as pv  # tests may use pyvista; the core never does

    m = pv.read(str(path)).triangulate().clean()
    faces = np.asarray(m.faces).reshape(-1, 4)[:, 1:]
    return np.asarray(m.points, float), faces.astype(np.int64)


def random_rotation(rng: np.random.Generator, max_angle: float) -> np.ndarray:
    """A rotation about a random axis by a random angle up to max_angle [rad]."""
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    ang = rng.uniform(0, max_angle)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(ang) * K + (1 - np.cos(ang)) * K @ K


def kinematics(p_G, R_GB=None, v_G=None, w_G=None) -> BodyKinematics:
    p = np.asarray(p_G, float).reshape(-1, 3)
    n = len(p)
    return BodyKinematics(
        p,
        np.tile(np.eye(3), (n, 1, 1)) if R_GB is None else np.asarray(R_GB, float).reshape(n, 3, 3),
        np.zeros((n, 3)) if v_G is None else np.asarray(v_G, float).reshape(n, 3),
        np.zeros((n, 3)) if w_G is None else np.asarray(w_G, float).reshape(n, 3),
    )


def plane_mesh(size: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A square z = 0 grid (n × n vertices) of side ``size`` centred at the origin, normal +z."""
    x = np.linspace(-size / 2, size / 2, n)
    X, Y = np.meshgrid(x, x)
    v = np.c_[X.ravel(), Y.ravel(), np.zeros(X.size)]
    idx = np.arange(n * n).reshape(n, n)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel()
    return v, np.r_[np.c_[a, b, d], np.c_[a, d, c]].astype(np.int64)


def _numba_on() -> bool:
    from jointmodeller.core._jit import NUMBA_ENABLED

    return bool(NUMBA_ENABLED)


#: heavy tests run only with the compiled kernels (the plain-Python path has its own small tests)
needs_numba = __import__("pytest").mark.skipif(not _numba_on(),
                                               reason="JOINTMODELLER_NUMBA=0: too slow in plain Python")
