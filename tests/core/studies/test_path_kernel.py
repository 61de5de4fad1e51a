"""The compiled path kernel (core.studies.path_kernel) on analytic cases: a path wrapped round a
cylinder or a sphere centred on a pin's axis is a pulley — its moment arm is the radius exactly and
its length the tangent lengths plus the arc — and paths solved together equal paths solved alone.
Against OpenSim the kernel is tested through the study (test_wrap_vs_opensim, test_paths_vs_opensim)."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.studies import path_kernel as pk
from jointmodeller.core.studies.muscle_paths import PathSpec, PathWrap, calc_path

R = 0.02
A_G = np.array([-0.1, 0.012, 0.0])  # origin on ground
B_B = np.array([0.09, 0.008, 0.0])  # insertion on the arm (body 0), which turns about z through 0


def _path(kind: str | None, quadrant: str = "all") -> PathSpec:
    wraps = ()
    if kind is not None:
        dims = (R, 0.2) if kind == "cylinder" else (R,)
        wraps = (PathWrap(kind, -1, np.eye(3), np.zeros(3), kind, dims, quadrant),)
    return PathSpec(kind or "straight", np.array([-1, 0]), np.array([A_G, B_B]), np.array([-1, -1]),
                    np.zeros((2, 2)), wraps)


def _pose(theta: float):
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]]), np.zeros((1, 3))


def _pulley_length(theta: float) -> float:
    """Tangent lengths plus the arc between the tangent points, over the top of the circle (the
    straight segment passes just above the centre, 0 < y < R, so the short way round is y > 0): from
    the origin A (at polar angle φ_A, distance d_A) the tangent point is at φ_A − arccos(R/d_A), from
    the insertion B at φ_B + arccos(R/d_B)."""
    Rg, _ = _pose(theta)
    b = Rg[0] @ B_B
    (dA, phiA), (dB, phiB) = ((np.hypot(p[0], p[1]), np.arctan2(p[1], p[0])) for p in (A_G, b))
    arc = (phiA - np.arccos(R / dA)) - (phiB + np.arccos(R / dB))
    return np.sqrt(dA * dA - R * R) + np.sqrt(dB * dB - R * R) + R * arc


@pytest.mark.parametrize("kind", ["cylinder", "sphere"])
def test_a_pulley_on_the_axis_has_the_radius_as_moment_arm(kind):
    """Planar (z = 0 for every point): the cylinder's first tangent estimate is already exact, the
    sphere's great circle is the circle of the plane — lengths to roundoff, moment arm −dL/dθ = R."""
    spec = _path(kind)
    packed = pk.pack_paths([spec])
    for theta in np.radians([-8.0, -5.0, 0.0, 5.0, 10.0]):  # the segment crosses the circle above its centre
        R_GB, p_GB = _pose(theta)
        solved = pk.solve_paths(packed, R_GB, p_GB, np.zeros(1))
        assert (solved.wrap[:solved.n[0]] >= 0).any()
        assert solved.length[0] == pytest.approx(_pulley_length(theta), abs=1e-12)
        Fb, Mb, tau = pk.unit_tension_forces(packed, solved, R_GB, p_GB, np.zeros(1), 1)
        # generalized force of the pin (axis z through the arm's origin at 0): the moment about z.
        # Over the top, turning the arm by +θ (counter-clockwise) shortens the path by R·θ:
        # r = −dL/dθ = R, and so is the slope of the closed form (central difference, h = 1e-6:
        # error ~h²·|L'''| ~ 1e-14 m)
        assert Mb[0, 0, 2] == pytest.approx(R, abs=1e-12)
        h = 1e-6
        assert -(_pulley_length(theta + h) - _pulley_length(theta - h)) / (2 * h) == pytest.approx(R, abs=1e-8)
        assert not tau.any()  # no moving points


def test_paths_solved_together_equal_paths_solved_alone():
    specs = [_path("cylinder", "-y"), _path(None), _path("sphere"), _path("cylinder")]
    packed = pk.pack_paths(specs)
    for theta in np.radians([-30.0, 0.0, 40.0]):
        R_GB, p_GB = _pose(theta)
        together = pk.solve_paths(packed, R_GB, p_GB, np.zeros(1), stale=True)
        kin = type("Kin", (), {"R_GB": R_GB, "p_GB": p_GB})()
        for j, spec in enumerate(specs):
            alone = calc_path(None, spec, np.zeros(1), kin, True)
            o, n = together.off[j], together.n[j]
            assert together.length[j] == alone.length
            assert np.array_equal(together.x_G[o:o + n], alone.x_G)
            assert [p.wrap for p in alone.points] == list(together.wrap[o:o + n])
    assert pk.pack_paths([]).n_paths == 0
    empty = pk.solve_paths(pk.pack_paths([]), R_GB, p_GB, np.zeros(1))
    assert empty.length.shape == (0,)
