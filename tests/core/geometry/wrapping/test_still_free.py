"""The free shortcut's test that a straight line still clears the bones, with a bone's distance field
as a bound (TautPathSolver._still_free): the field may only spare exact queries, never change the
answer, so it must decide exactly as the exact per-point test sd ≥ 0 over all obstacles does."""

from __future__ import annotations

import numpy as np

from jointmodeller.core.data import using
from jointmodeller.core.geometry.sdf import SignedDistanceField
from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose, closest_over_obstacles
from jointmodeller.core.geometry.wrapping.shapes import grid_cylinder
from jointmodeller.core.geometry.wrapping.taut_path import TautOptions, TautPathSolver


def test_field_bounded_check_decides_as_the_exact_test_on_lines_grazing_a_bone():
    mesh = grid_cylinder(0.01, 0.1, 96, 40)
    exact_ob = MeshObstacle(mesh.vertices, mesh.faces, 1)
    field_ob = MeshObstacle(mesh.vertices, mesh.faces, 1)
    field_ob.sdf = SignedDistanceField.build(field_ob.vertices_B, field_ob.faces)
    solver = TautPathSolver([field_ob], TautOptions(free_shortcut=True))
    pose = Pose(np.zeros((2, 3)), np.stack([np.eye(3), np.eye(3)]))
    rng = np.random.default_rng(7)
    n_free = n_blocked = 0
    for _ in range(200):
        # lines along y at a distance from the axis within ±1 mm of the radius: some graze it, some cut it
        r = 0.01 + rng.uniform(-1e-3, 1e-3)
        phi = rng.uniform(0, 2 * np.pi)
        c = r * np.array([np.cos(phi), np.sin(phi), 0.0])
        d = np.array([-np.sin(phi), np.cos(phi), rng.uniform(-0.2, 0.2)])
        a, b = c - 0.04 * d, c + 0.04 * d + np.array([0.0, 0.0, rng.uniform(-1e-3, 1e-3)])
        x = a + np.linspace(0.0, 1.0, 41)[:, None] * (b - a)
        sd = closest_over_obstacles([exact_ob], pose, x[1:-1])[2]
        with using():
            path = solver._still_free(x, pose, 0, 0)
        assert (path is not None) == bool(np.all(sd >= 0.0))
        if path is not None:
            n_free += 1
            assert np.array_equal(path.points_G, x)
        else:
            n_blocked += 1
    assert n_free > 20 and n_blocked > 20  # both answers were exercised
