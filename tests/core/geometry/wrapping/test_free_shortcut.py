"""The taut solver's free shortcut: a warm-started string that was free and whose straight line still
clears the bones is returned as that line at once. It must be the path the iterations give (to
rounding), and it must step aside as soon as the line meets a bone."""

from __future__ import annotations

import numpy as np

from jointmodeller.core.data import using
from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose
from jointmodeller.core.geometry.wrapping.shapes import grid_cylinder
from jointmodeller.core.geometry.wrapping.taut_path import TautOptions, TautPathSolver


def _cylinder_poses(offsets_m):
    """A 20 mm cylinder (body 1, axis z) moved sideways by each offset [m] along x."""
    return [Pose(np.array([[0.0, 0.0, 0.0], [dx, 0.0, 0.0]]), np.stack([np.eye(3), np.eye(3)])) for dx in offsets_m]


def test_free_shortcut_gives_the_iterated_path_and_steps_aside_when_the_line_meets_the_bone():
    mesh = grid_cylinder(0.01, 0.1, 96, 40)
    ob = MeshObstacle(mesh.vertices, mesh.faces, 1)
    a, b = np.array([0.015, -0.05, 0.0]), np.array([0.015, 0.05, 0.01])  # a string along y beside it
    # the cylinder drifts towards the string: free for the first poses, then the line cuts into it;
    # no pose grazes it (at 5 mm the line would touch the surface exactly, where whether the string
    # rests on it or passes is rounding's choice, and numba's and numpy's roundings differ)
    poses = _cylinder_poses(np.linspace(0.0, 0.009, 10) + 2.5e-4)
    runs = []
    for shortcut in (True, False):
        solver = TautPathSolver([ob], TautOptions(free_shortcut=shortcut))
        with using():
            runs.append([solver.solve(a, b, 0, 0, pose) for pose in poses])
    scale = float(np.linalg.norm(b - a))
    contacts = [w.info["n_contacts"] for w in runs[1]]
    assert contacts[0] == 0 and contacts[-1] > 0  # free at first, wrapped at the end
    for fast, slow in zip(*runs):
        # the same path: to rounding of one banded solve while free, identical once it wraps
        assert np.allclose(fast.points_G, slow.points_G, rtol=0, atol=1e-12 * scale)
        assert abs(fast.length - slow.length) <= 1e-12 * scale
        assert np.allclose(fast.load_dir_G, slow.load_dir_G, rtol=0, atol=1e-9)
        assert fast.info["n_contacts"] == slow.info["n_contacts"]
