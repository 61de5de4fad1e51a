"""The free shortcut's test that a straight line still clears the bones, with a bone's distance field
as a bound (TautPathSolver._still_free): the field may only spare exact queries, never change the
answer, so it must decide exactly as the exact per-point test sd ≥ 0 over all obstacles does."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_straight_path_is_make_path_of_the_straight_line():
    from jointmodeller.core.geometry.wrapping.path import FREE, make_path, straight_path

    rng = np.random.default_rng(3)
    for body_a, body_b in ((0, 1), (2, 0), (1, 1)):
        a, b = rng.normal(0, 0.05, 3), rng.normal(0, 0.05, 3)
        x = a + np.linspace(0.0, 1.0, 25)[:, None] * (b - a)
        labels = np.full(len(x), FREE, np.int64)
        labels[0], labels[-1] = body_a, body_b
        ref = make_path(x, labels, "taut", per_vertex_loads=True)
        got = straight_path(x, body_a, body_b, "taut")
        assert np.array_equal(got.body, ref.body) and np.array_equal(got.points_G, x)
        assert got.length == pytest.approx(ref.length, rel=1e-13)
        for name in ("attach_a_G", "attach_b_G", "dir_a_G", "dir_b_G", "load_point_G", "load_dir_G"):
            np.testing.assert_allclose(getattr(got, name), getattr(ref, name), rtol=0, atol=1e-13, err_msg=name)
        assert np.array_equal(got.load_body, ref.load_body)
        assert [(s.body_a, s.body_b) for s in got.segments] == [(s.body_a, s.body_b) for s in ref.segments]
        for s, r in zip(got.segments, ref.segments):
            np.testing.assert_allclose(s.point_a_G, r.point_a_G, atol=1e-15)
            np.testing.assert_allclose(s.point_b_G, r.point_b_G, atol=1e-15)


def test_last_exact_queries_clear_vertices_until_they_have_moved_that_far():
    """Along a line leaving a bone's surface (an attachment's first vertices lie within the field's
    error bound, so the field cannot clear them), moved in small steps towards and then into the bone:
    every decision equals the exact per-point test, and most steps query nothing exactly."""
    mesh = grid_cylinder(0.01, 0.1, 96, 40)
    ob = MeshObstacle(mesh.vertices, mesh.faces, 1)
    ob.sdf = SignedDistanceField.build(ob.vertices_B, ob.faces)
    exact_ob = MeshObstacle(mesh.vertices, mesh.faces, 1)
    solver = TautPathSolver([ob], TautOptions(free_shortcut=True))
    pose = Pose(np.zeros((2, 3)), np.stack([np.eye(3), np.eye(3)]))
    queried = []
    closest = ob.closest

    def counting(points_B, *args, **kwargs):
        queried.append(len(points_B))
        return closest(points_B, *args, **kwargs)

    ob.closest = counting
    a = np.array([0.0101, 0.0, 0.0])  # 0.1 mm off the surface, beside an attachment
    answers = []
    with using():
        for k in range(120):
            phi = np.radians(60.0 + 0.5 * k)  # from leaving the surface to cutting through the bone
            b = a + 0.04 * np.array([np.cos(phi), np.sin(phi), 0.3])
            x = a + np.linspace(0.0, 1.0, 41)[:, None] * (b - a)
            sd = closest_over_obstacles([exact_ob], pose, x[1:-1])[2]
            path = solver._still_free(x, pose, 0, 1)
            assert (path is not None) == bool(np.all(sd >= 0.0)), k
            answers.append(path is not None)
    assert any(answers) and not all(answers)  # it turned into the bone: both answers were given
    assert len(queried) < 0.5 * len(answers), "most steps were cleared by the last exact queries"


def test_a_free_lines_clearance_certifies_lines_whose_ends_moved_less_and_decides_as_the_exact_test():
    """After a line was found free, lines with its ends moved (one beside an attachment on the bone,
    the other swung about) are cleared without any query while the certificate holds (each vertex's
    move, bounded by the ends', below its clearance); every decision equals the exact per-point test,
    both answers and both routes occur."""
    from jointmodeller.core.geometry.wrapping import taut_path

    mesh = grid_cylinder(0.01, 0.1, 96, 40)
    ob = MeshObstacle(mesh.vertices, mesh.faces, 1)
    exact_ob = MeshObstacle(mesh.vertices, mesh.faces, 1)
    solver = TautPathSolver([ob], TautOptions(free_shortcut=True))
    pose = Pose(np.zeros((2, 3)), np.stack([np.eye(3), np.eye(3)]))
    rng = np.random.default_rng(5)
    certified = {True: 0, False: 0}
    answers = {True: 0, False: 0}
    clear = taut_path.TautPathSolver._line_still_clear

    def counting(self, ends_G, pose_):
        held = clear(self, ends_G, pose_)
        certified[held] += 1
        return held

    taut_path.TautPathSolver._line_still_clear = counting
    try:
        for _ in range(60):
            a = np.array([0.01005, 0.0, 0.0])  # 0.05 mm off the surface, beside an attachment
            phi = np.radians(rng.uniform(89.0, 91.0))  # nearly along the surface: a swing cuts into it
            b = a + 0.04 * np.array([np.cos(phi), np.sin(phi), 0.3])
            with using():
                line = a + np.linspace(0.0, 1.0, 41)[:, None] * (b - a)
                assert solver._still_free(line, pose, 0, 1) is not None  # the base line is free
                for swing in (2e-4, 5e-4, 6e-3, 6e-3):  # small swings stay certified, large ones cut in
                    a1 = a + rng.normal(0.0, 2e-5, 3)
                    b1 = b + rng.normal(0.0, swing, 3)
                    x = a1 + np.linspace(0.0, 1.0, 41)[:, None] * (b1 - a1)
                    sd = closest_over_obstacles([exact_ob], pose, x[1:-1])[2]
                    path = solver._still_free(x, pose, 0, 1)
                    assert (path is not None) == bool(np.all(sd >= 0.0))
                    answers[path is not None] += 1
                    if path is not None:
                        assert np.array_equal(path.points_G, x)
    finally:
        taut_path.TautPathSolver._line_still_clear = clear
    assert answers[True] > 20 and answers[False] > 20
    assert certified[True] > 20 and certified[False] > 20
