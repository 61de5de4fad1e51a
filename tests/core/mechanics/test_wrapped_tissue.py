"""The wrapped-tissue force element: virtual work, straight-line limit, length rate, provider."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from scipy.spatial.transform import Rotation

from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose
from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.mechanics.tissues import (
    axial_tension,
    make_tissue_set,
    polynomial_energy,
    straight_tissue_geometry,
)
from jointmodeller.core.mechanics.wrapped_tissue import (
    TissuePath,
    WrappedTissue,
    WrappingPathProvider,
    path_length_rate,
)

COEFFS = np.array([2000.0, 5e4])  # N/m, N/m²
R_BALL = 0.02


@pytest.fixture(scope="module")
def ball():
    m = trimesh.creation.icosphere(subdivisions=5, radius=R_BALL)
    return MeshObstacle(m.vertices, m.faces, body=1)


def kinematics(p, R, v=None, w=None) -> BodyKinematics:
    n = len(p)
    return BodyKinematics(np.asarray(p, float), np.asarray(R, float),
                          np.zeros((n, 3)) if v is None else np.asarray(v, float),
                          np.zeros((n, 3)) if w is None else np.asarray(w, float))


def three_bodies():
    """Ground-ish body 0, a ball (body 1) in the middle, body 2 beyond; the tissue runs 0 -> 2."""
    p = np.array([[-0.06, -0.01, 0.0], [0.0, 0.0, 0.0], [0.07, -0.012, 0.005]])
    R = np.stack([Rotation.from_rotvec(v).as_matrix() for v in ([0.1, 0, 0.2], [0.3, -0.2, 0.1], [0, 0.4, 0])])
    return p, R


def tissue(ball, method="taut"):
    path = TissuePath(0, np.array([0.01, 0.0, 0.0]), 2, np.array([-0.01, 0.0, 0.002]), [ball], method=method)
    return WrappedTissue(path, rest_length=0.10, coeffs=COEFFS, tension_only=True)


def length_round_ball(a, b, c, r) -> tuple[float, float]:
    """Shortest length from a to b outside a ball (centre c, radius r) that the line a-b crosses:
    tangent, great-circle arc, tangent (all in the plane of a, b, c). Returns (length, arc angle)."""
    da, db = np.linalg.norm(a - c), np.linalg.norm(b - c)
    theta = np.arccos(np.clip((a - c) @ (b - c) / (da * db), -1.0, 1.0))
    arc = theta - np.arccos(r / da) - np.arccos(r / db)
    return float(np.sqrt(da**2 - r**2) + np.sqrt(db**2 - r**2) + r * arc), float(arc)


def assert_wraps_the_ball(el: WrappedTissue, ball: MeshObstacle, p, R) -> None:
    """The taut path round the faceted ball is as long as the analytic shortest path, within bounds
    that come from the geometry and the solver, not from the CPU's rounding.

    The icosphere lies between its inscribed ball (r_in, the nearest face plane) and the ball of its
    vertices (R_BALL). Upper bound: a polyline with its vertices on the true sphere along the analytic
    path is outside the facets and no longer than that path, so the optimum is ≤ L(R_BALL); the solver
    stops within 16·N²·tol²·|b - a| of the optimum's length (stationary length; see
    test_real_meshes.test_knee_path_over_the_condyles). Lower bound: the vertices are outside the
    inscribed ball and a span of length ≤ h cuts at most h²/(8 r_in) into it, so the polyline stays
    outside the ball of radius r_in - h²/(8 r_in): length ≥ L(r_in - h²/(8 r_in)).
    """
    path = el.last_path
    a, b = el.path.ends_G(Pose(p, R))
    c = p[ball.body]  # the icosphere is centred on its body's origin
    assert np.linalg.norm(np.cross(c - a, b - a)) / np.linalg.norm(b - a) < R_BALL  # the line crosses it
    tri = ball.vertices_B[ball.faces]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    r_in = float(np.min(np.abs(np.einsum("ij,ij->i", n / np.linalg.norm(n, axis=1, keepdims=True), tri[:, 0]))))
    h = float(np.max(np.linalg.norm(np.diff(path.points_G, axis=0), axis=1)))
    opt = el.path.solver.options
    upper, arc = length_round_ball(a, b, c, R_BALL)
    upper += 16 * opt.n_segments**2 * opt.tol**2 * float(np.linalg.norm(b - a))
    lower, _ = length_round_ball(a, b, c, r_in - h**2 / (8 * r_in))
    assert lower <= path.length <= upper
    assert arc > np.radians(10)  # a real wrap (19° here), not a graze
    assert (path.body == 1).any()


def energy(el: WrappedTissue, p, R) -> float:
    path = el.path(Pose(p, R))
    return float(polynomial_energy(np.array([path.length - el.rest_length]), COEFFS[None])[0])


def test_forces_are_minus_the_energy_gradient(ball):
    """Virtual work: translating/rotating any body changes the stored energy by -F·dx, -M·dθ."""
    el = tissue(ball)
    p, R = three_bodies()
    kin = kinematics(p, R)
    force = np.zeros((3, 3))
    torque = np.zeros((3, 3))
    el.accumulate(0.0, kin, force, torque)
    assert el.last_tension > 0 and el.last_path.length > 0.10
    assert_wraps_the_ball(el, ball, p, R)
    h = 1e-5
    # tolerance: the polyline over a faceted ball is optimal to ~1e-4 of the tension's effect
    for j in range(3):
        for k in range(3):
            e = np.eye(3)[k]
            dp = np.zeros_like(p)
            dp[j] = h * e
            gF = (energy(el, p + dp, R) - energy(el, p - dp, R)) / (2 * h)
            assert force[j, k] == pytest.approx(-gF, rel=3e-3, abs=3e-3 * np.abs(force).max())
            Rp, Rm = R.copy(), R.copy()
            Q = Rotation.from_rotvec(h * e).as_matrix()
            Rp[j] = Q @ R[j]
            Rm[j] = Q.T @ R[j]
            gM = (energy(el, p, Rp) - energy(el, p, Rm)) / (2 * h)
            assert torque[j, k] == pytest.approx(-gM, rel=3e-3, abs=3e-3 * np.abs(torque).max())
    # action and reaction: the tissue exerts no net force on the system
    assert np.allclose(force.sum(0), 0, atol=1e-6 * np.abs(force).max())


def test_unobstructed_tissue_equals_a_straight_tissue(ball):
    el = tissue(ball)
    p, R = three_bodies()
    p[1] = [0.0, 0.2, 0.0]  # move the ball out of the way
    v = np.array([[0.1, 0, 0], [0, 0, 0], [-0.2, 0.05, 0.0]])
    w = np.array([[0, 0, 1.0], [0, 0, 0], [0.5, 0, 0]])
    kin = kinematics(p, R, v, w)
    force = np.zeros((3, 3))
    torque = np.zeros((3, 3))
    WrappedTissue(el.path, 0.10, COEFFS, damping=30.0, tension_only=True).accumulate(0.0, kin, force, torque)
    geo = straight_tissue_geometry(kin, np.array([0]), el.path.r_a_B[None], np.array([2]), el.path.r_b_B[None])
    T = axial_tension(geo.length - 0.10, geo.length_rate, COEFFS[None], np.array([30.0]), np.array([True]))[0]
    f_ref = np.zeros((3, 3))
    t_ref = np.zeros((3, 3))
    for body, pt, d in ((0, geo.point_a_G[0], geo.dir_a_G[0]), (2, geo.point_b_G[0], geo.dir_b_G[0])):
        f_ref[body] += T * d
        t_ref[body] += np.cross(pt - p[body], T * d)
    assert np.allclose(force, f_ref, rtol=1e-9, atol=1e-12) and np.allclose(torque, t_ref, rtol=1e-9, atol=1e-12)


def test_length_rate_matches_finite_difference_of_length(ball):
    el = tissue(ball)
    p, R = three_bodies()
    v = np.array([[0.1, 0.02, 0], [0.0, -0.05, 0.01], [-0.2, 0.05, 0.0]])
    w = np.array([[0, 0, 1.0], [0.3, 0.2, -0.4], [0.5, 0, 0]])
    path = el.path(Pose(p, R))
    rate = path_length_rate(path, kinematics(p, R, v, w))
    dt = 1e-6

    def moved(t):
        Rt = np.stack([Rotation.from_rotvec(w[j] * t).as_matrix() @ R[j] for j in range(3)])
        return Pose(p + v * t, Rt)

    fd = (el.path(moved(dt)).length - el.path(moved(-dt)).length) / (2 * dt)
    assert rate == pytest.approx(fd, rel=1e-3)


def test_path_provider_reproduces_the_force_element(ball):
    p, R = three_bodies()
    kin = kinematics(p, R)
    el = tissue(ball)
    f1 = np.zeros((3, 3))
    t1 = np.zeros((3, 3))
    el.accumulate(0.0, kin, f1, t1)
    ts = make_tissue_set([0], [2], el.path.r_a_B[None], el.path.r_b_B[None], COEFFS[None],
                         tension_only=[True], rest_length=[0.10], wrapped=[True])
    prov = WrappingPathProvider(ts, [ball])
    wp = prov.wrapped_paths(0.0, kin, np.array([0]))
    g = wp.geometry
    assert g.length[0] == pytest.approx(el.last_path.length, rel=1e-9)
    T = el.last_tension
    f2 = np.zeros((3, 3))
    t2 = np.zeros((3, 3))
    pts = [(0, g.point_a_G[0], g.dir_a_G[0]), (2, g.point_b_G[0], g.dir_b_G[0])]
    pts += list(zip(wp.extra_body, wp.extra_point_G, wp.extra_dir_G))
    for body, pt, d in pts:
        f2[body] += T * d
        t2[body] += np.cross(pt - p[body], T * d)
    assert np.allclose(f1, f2, atol=1e-9) and np.allclose(t1, t2, atol=1e-12)
    # the provider passes the ball's share on: a string turned by φ pushes it with 2·T·sin(φ/2),
    # 0.33·T for this 19° wrap (assert_wraps_the_ball); a path that missed the ball would give 0
    assert (wp.extra_body == 1).any()
    assert np.linalg.norm(f2[1]) > 0.1 * T


def test_mjm_method_is_selectable_and_balanced(ball):
    el = tissue(ball, method="mjm-covariance")
    p, R = three_bodies()
    force = np.zeros((3, 3))
    torque = np.zeros((3, 3))
    el.accumulate(0.0, kinematics(p, R), force, torque)
    assert el.last_path.method == "mjm-covariance" and el.last_tension > 0
    assert [(s.body_a, s.body_b) for s in el.last_path.segments] == [(0, 1), (1, 2)]
    assert np.allclose(force.sum(0), 0, atol=1e-9)
    with pytest.raises(ValueError):
        TissuePath(0, np.zeros(3), 1, np.zeros(3), [ball], method="nonsense")


def test_certified_free_lines_skip_the_solve_and_give_the_solved_geometry(ball):
    """A tissue swung from clear of the ball onto it and back, in steps that shrink at the turns: the
    provider's free-line lane (paths its solver's certificate vouches for are filled from the ends, not
    solved) gives, at every step, the geometry and the path a provider that solves every time gives, to
    rounding; it skips most solves of the free stretches and none of the wrapped ones."""
    from jointmodeller.core.data import using
    from jointmodeller.core.geometry.wrapping.taut_path import TautOptions, TautPathSolver

    ts = make_tissue_set([0], [2], np.array([[0.01, 0.0, 0.0]]), np.array([[-0.01, 0.0, 0.002]]), COEFFS[None],
                         tension_only=[True], rest_length=[0.10], wrapped=[True])
    lane = WrappingPathProvider(ts, [ball], options=TautOptions(free_shortcut=True))
    solving = WrappingPathProvider(ts, [ball], options=TautOptions(free_shortcut=True))
    solving._certified_lines = lambda *args: {}  # the reference: every path solved
    solves = []
    solve = TautPathSolver.solve

    def counting(self, *args, **kwargs):
        if self is lane.paths[0].solver:
            solves.append(1)
        return solve(self, *args, **kwargs)

    p0, R = three_bodies()
    rng = np.random.default_rng(11)
    v, w = rng.normal(0.0, 0.05, (3, 3)), rng.normal(0.0, 0.5, (3, 3))
    wrapped_steps = free_steps = free_solves = 0
    TautPathSolver.solve = counting
    try:
        with using():
            for s in 0.5 - 0.5 * np.cos(np.linspace(0.0, 2 * np.pi, 241)):  # there and back, slow at the turns
                p = p0 + np.array([[0.0, -0.03, 0.0], [0.0, 0.0, 0.0], [0.0, -0.03 + 0.05 * s, 0.0]])
                kin = kinematics(p, R, v, w)
                before = len(solves)
                got = lane.wrapped_paths(0.0, kin, np.array([0]))
                ref = solving.wrapped_paths(0.0, kin, np.array([0]))
                g, r = got.geometry, ref.geometry
                assert g.length[0] == pytest.approx(r.length[0], rel=1e-12)
                assert g.length_rate[0] == pytest.approx(r.length_rate[0], rel=1e-9, abs=1e-15)
                for name in ("point_a_G", "point_b_G", "dir_a_G", "dir_b_G"):
                    np.testing.assert_allclose(getattr(g, name), getattr(r, name), rtol=0, atol=1e-12, err_msg=name)
                assert np.array_equal(got.extra_body, ref.extra_body)
                np.testing.assert_allclose(got.extra_point_G, ref.extra_point_G, rtol=0, atol=1e-12)
                path, ref_path = lane.last[0], solving.last[0]
                np.testing.assert_allclose(path.points_G, ref_path.points_G, rtol=0, atol=1e-12)
                assert np.array_equal(path.body, ref_path.body)
                assert path.length == pytest.approx(ref_path.length, rel=1e-12)
                if (ref_path.body == 1).any():
                    wrapped_steps += 1
                    assert len(solves) == before + 1  # a wrapped path is always solved
                else:
                    free_steps += 1
                    free_solves += len(solves) - before
    finally:
        TautPathSolver.solve = solve
    assert wrapped_steps > 20 and free_steps > 20  # both kinds of path were met
    assert free_solves < 0.5 * free_steps  # the lane took most free steps


def test_tissue_forces_take_certified_free_lines_as_straight_tissues(ball):
    """The compiled tissue forces treat a wrapped tissue whose free-line certificate holds as a straight
    one (``WrappingPathProvider.free_lines``; no path asked of the provider): swung on and off the ball,
    every step's forces and moments equal, to rounding, those of the same tissue whose paths are all
    solved, the provider still knows the path it holds (``last``), and the free steps take the lane."""
    from jointmodeller.core.data import using
    from jointmodeller.core.geometry.wrapping.taut_path import TautOptions
    from jointmodeller.core.mechanics.tissue_force import TissueForces

    ts = make_tissue_set([0], [2], np.array([[0.01, 0.0, 0.0]]), np.array([[-0.01, 0.0, 0.002]]), COEFFS[None],
                         damping=np.array([3.0]), tension_only=[True], rest_length=[0.08], wrapped=[True])
    lane = WrappingPathProvider(ts, [ball], options=TautOptions(free_shortcut=True))
    solving = WrappingPathProvider(ts, [ball], options=TautOptions(free_shortcut=True))
    solving._certified_lines = lambda *args: {}  # the reference: every path solved
    fast, reference = TissueForces(ts, lane), TissueForces(ts, solving)
    asked = []
    wrapped_paths = lane.wrapped_paths
    lane.wrapped_paths = lambda t, kin, index: asked.append(1) or wrapped_paths(t, kin, index)
    p0, R = three_bodies()
    rng = np.random.default_rng(11)
    v, w = rng.normal(0.0, 0.05, (3, 3)), rng.normal(0.0, 0.5, (3, 3))
    lane_steps = 0
    with using():
        for s in 0.5 - 0.5 * np.cos(np.linspace(0.0, 2 * np.pi, 241)):
            p = p0 + np.array([[0.0, -0.03, 0.0], [0.0, 0.0, 0.0], [0.0, -0.03 + 0.05 * s, 0.0]])
            kin = kinematics(p, R, v, w)
            before = len(asked)
            out = []
            for element in (fast, reference):
                F, T = np.zeros((3, 3)), np.zeros((3, 3))
                element.accumulate(0.0, kin, F, T)
                out.append((F, T))
            (F1, T1), (F2, T2) = out
            scale = max(np.abs(F2).max(), 1e-9)
            np.testing.assert_allclose(F1, F2, rtol=0, atol=1e-12 * scale)
            np.testing.assert_allclose(T1, T2, rtol=0, atol=1e-12 * scale * 0.1)
            np.testing.assert_allclose(lane.last[0].points_G, solving.last[0].points_G, rtol=0, atol=1e-12)
            lane_steps += int(len(asked) == before)
    assert lane_steps > 20  # the free stretches went through the kernel
    assert len(asked) > 20  # the wrapped ones through the provider
