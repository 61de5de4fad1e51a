"""Placement geometry against exact answers: the closest point of a box is the clamp of the point
into the box (in the box's own frame), whatever the box's pose."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.app.picking import (
    drag_end,
    make_attachment,
    mass_pose,
    nearest_mass,
    path_length,
    snap_to_mass,
    to_global,
    to_local,
)

HALF = np.array([0.02, 0.02, 0.05])


def test_pose_round_trip_and_com_position(small_project):
    upper = small_project.mass("upper")
    pose = mass_pose(upper)
    assert to_global(pose, upper.com_L) == pytest.approx(upper.position_G)
    x = np.random.default_rng(0).normal(size=(5, 3))
    assert to_local(pose, to_global(pose, x)) == pytest.approx(x)
    assert np.linalg.det(pose[0]) == pytest.approx(1.0)


def test_snap_is_the_clamp_into_the_rotated_box(small_project):
    rng = np.random.default_rng(1)
    pose = mass_pose(small_project.mass("upper"))
    for _ in range(20):
        x_L = rng.uniform(-0.08, 0.08, 3)
        if np.all(np.abs(x_L) < HALF):
            continue
        sp = snap_to_mass(small_project, "upper", to_global(pose, x_L))
        assert sp.point_L == pytest.approx(np.clip(x_L, -HALF, HALF), abs=1e-12)
        assert sp.snap_distance_m == pytest.approx(np.linalg.norm(x_L - np.clip(x_L, -HALF, HALF)), abs=1e-12)


def test_picked_attachment_ends_lie_on_surfaces_and_length_matches_pose(small_project):
    p = small_project
    a = nearest_mass(p, (0.03, 0.001, 0.045))
    b = nearest_mass(p, (0.03, 0.002, 0.07))
    assert (a.mass, b.mass) == ("lower", "upper")
    att = make_attachment(p, a, b)
    for pt in (att.point_a_L, att.point_b_L):
        d = np.abs(np.abs(np.asarray(pt)) - HALF).min()  # on some face of the box
        assert d < 1e-9 and np.all(np.abs(pt) <= HALF + 1e-12)
    ga = to_global(mass_pose(p.mass("lower")), att.point_a_L)
    gb = to_global(mass_pose(p.mass("upper")), att.point_b_L)
    assert att.initial_length_m == pytest.approx(np.linalg.norm(gb - ga), rel=1e-12)
    assert att.name not in {x.name for x in p.attachments}


def test_drag_end_stays_on_its_mass_and_updates_length(small_project):
    p = small_project
    att = p.attachments[0]
    moved = drag_end(p, att, "b", (0.0, 0.0, 0.5))  # far above: snaps to the top face of "upper"
    assert moved.point_b_L == pytest.approx((0.0, 0.0, 0.05), abs=1e-12)
    assert moved.point_a_L == att.point_a_L
    assert moved.initial_length_m == pytest.approx(path_length(p, moved))
    with pytest.raises(ValueError):
        drag_end(p, att, "c", (0, 0, 0))
