"""Elastic-foundation contact vs closed forms, Hunt–Crossley restitution, MJM springs, conservation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from jointmodeller.core.data import using
from jointmodeller.core.mechanics.contact import ContactPair, vertex_areas
from jointmodeller.core.mechanics.contact_laws import (
    StribeckFriction,
    combined_plane_strain_modulus,
    foundation_modulus,
    hunt_crossley,
)
from tests.core.mechanics.contact.helpers import kinematics, needs_numba, plane_mesh, random_rotation

E, NU, H = 10e6, 0.45, 0.002
R1, R2 = 0.02, 0.03


@pytest.fixture(scope="module")
def sphere():
    return trimesh.creation.icosphere(5, R1)


@pytest.fixture(scope="module")
def sphere_on_plane(sphere):
    pv, pf = plane_mesh(0.03, 151)  # 0.2 mm spacing
    return ContactPair(0, 1, sphere.vertices, sphere.faces, pv, pf, H, E, NU)


def test_foundation_modulus_is_the_confined_layer_stiffness():
    # ν = 0: a free layer, K = E / h
    assert foundation_modulus(1e6, 0.0, 0.01) == pytest.approx(1e8)
    K = foundation_modulus(E, NU, H)
    assert K == pytest.approx((1 - NU) * E / ((1 + NU) * (1 - 2 * NU) * H))
    with pytest.raises(ValueError):
        foundation_modulus(E, 0.5, H)
    assert combined_plane_strain_modulus(2.0, 0.0, 2.0, 0.0) == pytest.approx(1.0)


def test_vertex_areas_sum_to_the_mesh_area(sphere):
    assert vertex_areas(sphere.vertices, sphere.faces).sum() == pytest.approx(sphere.area, rel=1e-12)


@pytest.mark.parametrize("delta", [0.0005, 0.001])
def test_sphere_bed_on_plane_matches_pi_K_R_delta_squared(sphere_on_plane, delta):
    """Springs on the sphere, depth to the plane: F = π K R δ² exactly (Archimedes' hat box)."""
    pair = sphere_on_plane
    res = pair.evaluate(0.0, kinematics([[0, 0, R1 - delta], [0, 0, 0]]))
    exact = math.pi * pair.modulus_per_area * R1 * delta**2
    assert res.total_force_G[2] == pytest.approx(exact, rel=0.02)
    assert abs(res.total_force_G[0]) + abs(res.total_force_G[1]) < 1e-6 * exact
    assert res.max_penetration == pytest.approx(delta, rel=1e-3)
    # the centre of pressure lies under the centre of the sphere
    assert np.allclose(res.centre_of_pressure_G[:2], 0, atol=1e-5)
    assert res.centre_of_pressure_G[2] == pytest.approx(-delta / 2, abs=delta / 2)


def test_plane_bed_under_rigid_sphere_matches_closed_form(sphere):
    """Springs on the plane, depth to the sphere (radial): F = π K (R − δ) δ²."""
    pv, pf = plane_mesh(0.02, 101)
    pair = ContactPair(0, 1, sphere.vertices, sphere.faces, pv, pf, H, E, NU, bed="b")
    delta = 0.001
    res = pair.evaluate(0.0, kinematics([[0, 0, R1 - delta], [0, 0, 0]]))
    exact = math.pi * pair.modulus_per_area * (R1 - delta) * delta**2
    assert res.total_force_G[2] == pytest.approx(exact, rel=0.02)


def sphere_on_sphere_force(K: float, delta: float) -> float:
    """Closed-form foundation force of a bed on sphere 1 (radius R1) pressed by δ into a rigid sphere 2.

    Depth x = R2 − |p − c2| over sphere 1's surface, force along the radial line of sphere 2; with
    s = |p − c2| and D = R1 + R2 − δ the integral is polynomial:
    F = π K R1 / D² [ (D² − R1² + R2²) δ²/2 − 2 R2 δ³/3 + δ⁴/4 ]  (→ π K R1R2/(R1+R2) δ² for small δ).
    """
    D = R1 + R2 - delta
    return math.pi * K * R1 / D**2 * ((D**2 - R1**2 + R2**2) * delta**2 / 2 - 2 * R2 * delta**3 / 3 + delta**4 / 4)


def test_sphere_on_sphere_matches_closed_form(sphere):
    big = trimesh.creation.icosphere(6, R2)
    pair = ContactPair(0, 1, sphere.vertices, sphere.faces, big.vertices, big.faces, H, E, NU)
    for delta in (0.0005, 0.001):
        res = pair.evaluate(0.0, kinematics([[0, 0, R1 + R2 - delta], [0, 0, 0]]))
        exact = sphere_on_sphere_force(pair.modulus_per_area, delta)
        assert res.total_force_G[2] == pytest.approx(exact, rel=0.02)
        # and the closed form itself tends to the paraboloid result for small δ
        small = sphere_on_sphere_force(pair.modulus_per_area, 1e-7)
        assert small == pytest.approx(math.pi * pair.modulus_per_area * R1 * R2 / (R1 + R2) * 1e-14, rel=1e-4)


def test_contact_forces_conserve_momentum_and_angular_momentum(sphere):
    """Equal and opposite forces on a common point: net force and net moment about G vanish."""
    big = trimesh.creation.icosphere(5, R2)
    rng = np.random.default_rng(4)
    for method in ("foundation", "mjm"):
        pair = ContactPair(0, 1, sphere.vertices, sphere.faces, big.vertices, big.faces, H, E, NU,
                           method=method, bed="both", dissipation=0.5,
                           friction=StribeckFriction(0.3, 0.2, 0.01, 1e-3))
        R = np.stack([random_rotation(rng, 3), random_rotation(rng, 3)])
        p = np.array([[0.001, 0.002, R1 + R2 - 0.0008], [0.0, 0.0, 0.0]])
        kin = kinematics(p, R, rng.normal(0, 0.01, (2, 3)), rng.normal(0, 0.1, (2, 3)))
        F, T = np.zeros((2, 3)), np.zeros((2, 3))
        pair.accumulate(0.0, kin, F, T)
        assert pair.last_result.n_points > 20
        assert np.allclose(F.sum(axis=0), 0, atol=1e-9 * np.abs(F).max())
        moment_G = T.sum(axis=0) + np.cross(kin.p_G, F).sum(axis=0)
        assert np.allclose(moment_G, 0, atol=1e-9 * np.abs(F).max())


@needs_numba
def test_hunt_crossley_drop_restitution_is_one_minus_c_v():
    """A sphere dropped on the plane rebounds with e = 1 − c v₀ (Hunt & Crossley, seed 003 eq. 24).

    The loss ∮ 1.5 c f_e ẋ dx = 2 c v₀ E₀ holds to first order for any elastic law f_e(x), so
    1 − e = c v₀ (1 + O(c v₀)); with c v₀ = 0.01 the second-order term is 1%.
    """
    ball = trimesh.creation.icosphere(4, R1)
    pv, pf = plane_mesh(0.03, 61)
    base = ContactPair(0, 1, ball.vertices, ball.faces, pv, pf, H, E, NU)
    mass, v0 = 0.1, 0.1
    for c in (0.0, 0.1):
        pair = ContactPair(0, 1, None, None, None, None, H, E, NU, dissipation=c,
                           surfaces=(base.surface_a, base.surface_b))
        z0 = R1 + 1e-6

        def rhs(t, y, pair=pair):
            kin = kinematics([[0, 0, y[0]], [0, 0, 0]], v_G=[[0, 0, y[1]], [0, 0, 0]])
            F, T = np.zeros((2, 3)), np.zeros((2, 3))
            pair.accumulate(t, kin, F, T)
            return [y[1], F[0, 2] / mass]

        def leaves(t, y, z0=z0):
            return y[0] - z0
        leaves.terminal, leaves.direction = True, 1
        sol = solve_ivp(rhs, (0, 0.05), [z0, -v0], events=leaves, rtol=1e-9, atol=1e-12, first_step=1e-6)
        assert sol.status == 1
        e = sol.y_events[0][0][1] / v0
        if c == 0:
            assert e == pytest.approx(1.0, abs=1e-6)  # elastic: no loss
        else:
            assert 1 - e == pytest.approx(c * v0, rel=0.02)


def test_hunt_crossley_and_stribeck_laws():
    f = hunt_crossley(np.array([10.0, 10.0, 10.0]), np.array([0.0, 1.0, -10.0]), c=0.2)
    assert f.tolist() == pytest.approx([10.0, 13.0, 0.0])  # never pulls
    mu = StribeckFriction(static=0.5, dynamic=0.3, viscous=0.1, transition_speed=0.01)
    v = np.array([0.0, 0.005, 0.01, 0.02, 0.03, 1.0])
    m = mu.coefficient(v)
    assert m[0] == 0 and m[2] == pytest.approx(0.5 + 0.001)
    assert m[4] == pytest.approx(0.3 + 0.003) and m[5] == pytest.approx(0.3 + 0.1)
    assert m[2] > m[3] > m[4]  # the Stribeck drop from static to dynamic
    slip = np.array([[1.0, 0, 0], [0, -2.0, 0]])
    ff = mu.force(slip, np.array([10.0, 10.0]))
    assert np.allclose(np.cross(ff, slip), 0) and np.all((ff * slip).sum(axis=1) < 0)


@needs_numba
def test_mjm_springs_keep_mean_penetration_at_the_design_fraction(sphere):
    """Under the design load the MJM springs settle at max_penetration_fraction × thickness."""
    pv, pf = plane_mesh(0.03, 151)
    pair = ContactPair(0, 1, sphere.vertices, sphere.faces, pv, pf, H, E, NU, method="mjm", design_load=200.0)

    def force(delta):
        return pair.evaluate(0.0, kinematics([[0, 0, R1 - delta], [0, 0, 0]])).total_force_G[2]

    # the force is continuous and increasing in the indentation
    ds = np.linspace(1e-5, 0.002, 40)
    fs = np.array([force(d) for d in ds])
    assert np.all(np.diff(fs) > 0)
    delta = brentq(lambda d: force(d) - 200.0, 1e-6, 0.01, xtol=1e-12)
    res = pair.evaluate(0.0, kinematics([[0, 0, R1 - delta], [0, 0, 0]]))
    mean = res.depth[res.depth > 0.05 * pair.penetration_limit].mean()
    assert mean == pytest.approx(pair.penetration_limit, rel=0.05)
    # the springs act along the plane normal; lateral stiffness is 0.001 of normal
    assert np.allclose(res.normals_G, [0, 0, 1], atol=1e-9)
    assert pair.lateral_ratio == 1e-3


def test_mjm_lateral_stiffness_is_a_thousandth_of_normal(sphere):
    """Across a sharp crease the closest-point offset has a lateral part: it is resisted at 0.001 k."""
    pv, pf = plane_mesh(0.03, 31)
    pv = pv.copy()
    pv[:, 2] = 0.3 * np.abs(pv[:, 0])  # a V-shaped trough (crease along y)
    pair = ContactPair(0, 1, sphere.vertices, sphere.faces, pv, pf, H, E, NU, method="mjm", design_load=100.0)
    res = pair.evaluate(0.0, kinematics([[0.0, 0.0, R1 + 0.0005], [0, 0, 0]]))
    sp = pair._all_springs(kinematics([[0.0, 0.0, R1 + 0.0005], [0, 0, 0]]))[0]
    lat = sp.offset_G - (sp.offset_G * sp.normal_G).sum(axis=1)[:, None] * sp.normal_G
    expected = (sp.stiffness * sp.depth)[:, None] * sp.normal_G + 1e-3 * sp.stiffness[:, None] * lat
    assert res.n_points > 0
    assert np.allclose(res.force_G, expected, rtol=1e-12, atol=1e-12)


@needs_numba
def test_tangent_stiffness_matches_finite_differences(sphere_on_plane, sphere):
    """Analytic (material) stiffness = finite differences where it is exact: a sphere bed on a flat
    plane, translations of the sphere, forces on both bodies; on curved surfaces the numeric option
    carries the geometric terms (checked symmetric in the translational block and against a
    hand-made difference)."""
    pair = sphere_on_plane
    p0 = np.array([[0.0005, -0.0003, R1 - 0.0008], [0.0, 0.0, 0.0]])
    kin0 = kinematics(p0)
    K = pair.stiffness_matrix(kin0, anticipate=False)
    N = pair.stiffness_matrix(kin0, numeric=True, step=2e-6)
    assert np.allclose(K, K.T, atol=1e-9 * np.abs(K).max())
    assert np.all(np.linalg.eigvalsh(K) > -1e-6 * np.abs(K).max())
    rows = [0, 1, 2, 6, 7, 8]
    for col in (0, 1, 2):
        assert np.allclose(N[rows, col], K[rows, col], rtol=0.03, atol=0.03 * np.abs(K[:, 2]).max())
    # normal stiffness = dF/dδ = 2 π K R δ for the sphere on a plane
    assert K[2, 2] == pytest.approx(2 * math.pi * pair.modulus_per_area * R1 * 0.0008, rel=0.03)
    # curved pair: numeric stiffness reproduces a direct difference of the element
    big = trimesh.creation.icosphere(5, R2)
    curved = ContactPair(0, 1, sphere.vertices, sphere.faces, big.vertices, big.faces, H, E, NU)
    q0 = np.array([[0.0005, -0.0003, R1 + R2 - 0.0008], [0.0, 0.0, 0.0]])
    Nc = curved.stiffness_matrix(kinematics(q0), numeric=True, step=2e-6)
    h = 2e-6

    def fz(dx):
        F, T = np.zeros((2, 3)), np.zeros((2, 3))
        curved.accumulate(0.0, kinematics(q0 + np.array([[dx, 0, 0], [0, 0, 0]])), F, T)
        return F[0]

    assert np.allclose(Nc[:3, 0], -(fz(h) - fz(-h)) / (2 * h))
    block = Nc[:3, :3]
    assert np.allclose(block, block.T, rtol=0.05, atol=0.05 * np.abs(block).max())


def test_anticipating_stiffness_sees_contact_just_before_it_happens(sphere_on_plane):
    """A gap smaller than the penetration limit: no force yet, but the Jacobian already holds the
    normal stiffness the cartilage will have, and it equals the touching stiffness at zero gap."""
    pair = sphere_on_plane
    gap = 0.3 * pair.penetration_limit
    kin = kinematics([[0, 0, R1 + gap], [0, 0, 0]])
    assert pair.evaluate(0.0, kin).n_points == 0
    assert np.all(pair.stiffness_matrix(kin, anticipate=False) == 0)
    K = pair.stiffness_matrix(kin)
    assert K[2, 2] > 0 and np.allclose(K, K.T)
    touching = pair.stiffness_matrix(kinematics([[0, 0, R1 - 1e-9], [0, 0, 0]]), anticipate=True)
    assert touching[2, 2] > K[2, 2]  # more of the sphere is inside the band when touching


@needs_numba
def test_reused_candidates_give_the_same_contact_as_a_fresh_search(sphere):
    """Successive evaluations reuse the prefiltered bed vertices, the reference pose and the
    nearest-vertex lists while the motion stays within the slack; along a wandering path on closed
    surfaces (facing search) the result equals a fresh search bit for bit."""
    big = trimesh.creation.icosphere(5, R2)
    warm = ContactPair(0, 1, sphere.vertices, sphere.faces, big.vertices, big.faces, H, E, NU)
    cold = ContactPair(0, 1, None, None, None, None, H, E, NU, surfaces=(warm.surface_a, warm.surface_b))
    rng = np.random.default_rng(8)
    p = np.array([[0.0, 0.0, R1 + R2 - 0.0005], [0.0, 0.0, 0.0]])
    R = np.tile(np.eye(3), (2, 1, 1))
    reused = 0
    for _ in range(30):
        p[0] += rng.normal(0, 4e-5, 3)
        R[0] = random_rotation(rng, 2e-3) @ R[0]
        before = dict(warm._work.candidates)
        a = warm.evaluate(0.0, kinematics(p, R))
        reused += all(before.get(k) is v for k, v in warm._work.candidates.items()) and bool(before)
        with using():  # a first evaluation every time: tree queries, no reference or lists
            b = cold.evaluate(0.0, kinematics(p, R))
        assert np.array_equal(a.bed_vertex, b.bed_vertex) and np.array_equal(a.force_G, b.force_G)
        assert a.n_points > 0
    assert reused > 5  # the cache was really used
    assert any(ref[4] is not None for ref in warm._work.references.values())  # and the nearest-vertex lists


def test_pose_at_contact_brings_the_sphere_onto_the_plane(sphere_on_plane):
    """MJM's approach step: after moving by the predicted time the lowest vertex touches the plane."""
    from jointmodeller.core.geometry.collision import RelativeMotion

    pair = sphere_on_plane
    kin = kinematics([[0.001, -0.002, R1 + 0.004], [0, 0, 0]])
    p_G, R_GB, pred = pair.pose_at_contact(kin, RelativeMotion(np.array([0, 0, -2.0]), np.zeros(3)))
    assert pred.found and pred.time == pytest.approx(pred.distance / 2.0)
    lowest = (pair.surface_a.vertices_B @ R_GB.T + p_G)[:, 2].min()
    assert lowest == pytest.approx(0.0, abs=1e-12)
    assert pair.evaluate(0.0, kinematics([p_G + [0, 0, 1e-9], [0, 0, 0]])).n_points == 0
    assert pair.evaluate(0.0, kinematics([p_G - [0, 0, 1e-6], [0, 0, 0]])).n_points > 0
    assert pair.pose_at_contact(kin, RelativeMotion(np.array([0, 0, 2.0]), np.zeros(3))) is None
