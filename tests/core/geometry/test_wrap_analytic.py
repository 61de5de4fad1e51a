"""Analytic wrapping (OpenSim rules) against closed-form geodesics on cylinders and spheres."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.geometry import wrap_analytic as wa

R = 0.02


def planar_wrap_length(p1, p2, radius, side: int) -> float:
    """Shortest length from p1 to p2 (2-D, z ignored) round a circle, forced round the half-plane
    sign(y) = side: tangent lengths plus the arc between the tangent points on that side."""
    total, tang = 0.0, []
    for p in (p1, p2):
        d = np.hypot(p[0], p[1])
        total += np.sqrt(d * d - radius * radius)
        phi = np.arctan2(p[1], p[0])
        a = np.arccos(radius / d)
        tang.append((phi - a, phi + a))
    best = np.inf
    for t1 in tang[0]:
        for t2 in tang[1]:
            for arc in ((t2 - t1) % (2 * np.pi), (t1 - t2) % (2 * np.pi)):
                mid = t1 + arc / 2 if (t2 - t1) % (2 * np.pi) == arc else t2 + arc / 2
                if np.sign(np.sin(mid)) == side:
                    # the tangent lines must leave the points towards the arc: check tangency sense
                    best = min(best, total + radius * arc)
    return best


def test_cylinder_planar_wrap_is_exact():
    p1, p2 = np.array([-0.1, -0.01, 0.0]), np.array([0.08, -0.012, 0.0])
    exact = planar_wrap_length(p1, p2, R, side=-1)
    for single in (True, False):
        res = wa.wrap_cylinder(p1, p2, R, 0.1, "all", single=single)
        assert res.status == wa.MANDATORY
        seg = np.linalg.norm(res.r1 - p1) + res.length + np.linalg.norm(p2 - res.r2)
        assert seg == pytest.approx(exact, abs=1e-12)
        assert np.hypot(*res.r1[:2]) == pytest.approx(R) and res.r1[1] < 0


def test_cylinder_helical_wrap_matches_developed_geodesic():
    """Unrolled, the geodesic (tangent lines + helix) is one straight line: sqrt(L_planar² + Δz²)."""
    p1, p2 = np.array([-0.1, -0.01, -0.03]), np.array([0.08, -0.012, 0.04])
    exact = np.hypot(planar_wrap_length(p1, p2, R, side=-1), p2[2] - p1[2])
    refined = wa.wrap_cylinder(p1, p2, R, 0.2, "all", single=False)
    seg = np.linalg.norm(refined.r1 - p1) + refined.length + np.linalg.norm(p2 - refined.r2)
    assert seg == pytest.approx(exact, abs=2e-6)  # tangency refined to 0.1°
    first = wa.wrap_cylinder(p1, p2, R, 0.2, "all", single=True)
    seg1 = np.linalg.norm(first.r1 - p1) + first.length + np.linalg.norm(p2 - first.r2)
    assert exact - 1e-12 <= seg1 < exact + 1e-3  # a valid path over the cylinder: never shorter


def test_cylinder_no_wrap_inside_and_beyond_ends():
    assert wa.wrap_cylinder([-0.1, -0.03, 0], [0.1, -0.03, 0], R, 0.1).status == wa.NO_WRAP
    assert wa.wrap_cylinder([0.0, 0.01, 0], [0.1, -0.03, 0], R, 0.1).status == wa.INSIDE
    assert wa.wrap_cylinder([-0.1, -0.01, 0.3], [0.1, -0.01, 0.3], R, 0.1).status == wa.NO_WRAP


def test_cylinder_quadrant_forces_the_far_side():
    p1, p2 = np.array([-0.1, -0.01, 0.0]), np.array([0.08, -0.012, 0.0])
    res = wa.wrap_cylinder(p1, p2, R, 0.1, "+y", single=True)
    assert res.wraps and res.r1[1] > 0 and res.r2[1] > 0
    seg = np.linalg.norm(res.r1 - p1) + res.length + np.linalg.norm(p2 - res.r2)
    assert seg == pytest.approx(planar_wrap_length(p1, p2, R, side=+1), abs=1e-9)
    # a segment that misses the cylinder on the inactive side still wraps round the active side
    miss = wa.wrap_cylinder([-0.1, -0.03, 0.0], [0.08, -0.03, 0.0], R, 0.1, "+y")
    assert miss.status == wa.WRAPPED and miss.r1[1] > 0


@pytest.mark.parametrize("seed", range(5))
def test_sphere_and_round_ellipsoid_give_the_great_circle_wrap(seed):
    rng = np.random.default_rng(seed)
    while True:
        p1 = rng.normal(size=3)
        p1 *= rng.uniform(0.04, 0.1) / np.linalg.norm(p1)
        p2 = -p1 * rng.uniform(0.5, 1.5) + rng.normal(scale=0.01, size=3)
        d = p2 - p1
        t = np.clip(-(p1 @ d) / (d @ d), 0, 1)
        if np.linalg.norm(p1 + t * d) < 0.8 * R and np.linalg.norm(p2) > 1.5 * R:
            break
    d1, d2 = np.linalg.norm(p1), np.linalg.norm(p2)
    angle = np.arccos(p1 @ p2 / (d1 * d2)) - np.arccos(R / d1) - np.arccos(R / d2)
    exact = np.sqrt(d1 ** 2 - R ** 2) + np.sqrt(d2 ** 2 - R ** 2) + R * angle
    sph = wa.wrap_sphere(p1, p2, R)
    assert np.linalg.norm(sph.r1 - p1) + sph.length + np.linalg.norm(p2 - sph.r2) == pytest.approx(exact, abs=1e-12)
    ell = wa.wrap_ellipsoid(p1, p2, (R, R, R))
    assert ell.status == wa.MANDATORY
    total = np.linalg.norm(ell.r1 - p1) + ell.length + np.linalg.norm(p2 - ell.r2)
    assert total == pytest.approx(exact, abs=2e-6)  # polyline of 1 mm chords on the arc
    assert np.linalg.norm(ell.points, axis=1) == pytest.approx(R, abs=1e-12)


def test_ellipsoid_tangent_points_are_tangent():
    p1, p2 = np.array([-0.06, 0.004, 0.01]), np.array([0.05, -0.003, -0.012])
    radii = np.array([0.03, 0.015, 0.02])
    res = wa.wrap_ellipsoid(p1, p2, radii)
    assert res.status == wa.MANDATORY
    for r, p in ((res.r1, p1), (res.r2, p2)):
        assert np.sum((r / radii) ** 2) == pytest.approx(1.0, abs=1e-12)
        normal = r / radii ** 2
        assert normal @ (p - r) == pytest.approx(0.0, abs=1e-12)  # the line p–r touches the surface
    # the surface path lies on the ellipsoid and in one plane with p1 and p2
    assert np.sum((res.points / radii) ** 2, axis=1) == pytest.approx(1.0, abs=1e-9)
    n = np.cross(p2 - p1, res.points[len(res.points) // 2] - p1)
    assert (res.points - p1) @ n == pytest.approx(0.0, abs=1e-12)


def test_quadrant_parsing():
    assert wa.parse_quadrant("all") == (0, 0)
    assert wa.parse_quadrant("-y") == (1, -1)
    assert wa.parse_quadrant("z") == (2, 1)
    with pytest.raises(ValueError):
        wa.parse_quadrant("w")
