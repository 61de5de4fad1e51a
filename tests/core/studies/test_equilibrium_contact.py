"""Static equilibrium with cartilage contact: a ball on the free bone pulled into a socket on the
fixed bone by pre-strained ligaments (synthetic, independent of the demo geometry), and the frozen
contact set that Newton works on."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from jointmodeller.core.mechanics.contact import ContactPair
from jointmodeller.core.mechanics.examples import two_bone_ligaments
from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.mechanics.system import MechanicalSystem
from jointmodeller.core.studies.equilibrium import solve_equilibrium

R_BALL, R_SOCKET = 0.010, 0.0105
C_G = np.array([0.0, 0.0, -0.011])  # ball and socket centres at the start pose


def _socket_mesh(subdiv: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Upper hemisphere of radius R_SOCKET about the origin, faces turned inwards (concave side out)."""
    s = trimesh.creation.icosphere(subdiv, R_SOCKET)
    keep = s.vertices[s.faces].mean(axis=1)[:, 2] > -0.2 * R_SOCKET
    m = trimesh.Trimesh(s.vertices, s.faces[keep][:, ::-1], process=True)
    m.remove_unreferenced_vertices()
    return np.asarray(m.vertices), np.asarray(m.faces, np.int64)


def ball_in_socket(method: str = "mjm", load=(2.0, -1.5, 1.0)):
    """two_bone_ligaments with a ball (10 mm) on the free bone under a socket (10.5 mm) on the fixed
    one; the ligaments pull the ball 0.5 mm up into contact. Returns system, start state, pair."""
    base, state = two_bone_ligaments(prestrain=0.04, load_N=load, gravity=(0.0, 0.0, -9.81))
    p_G = base.positions(state)[0]
    ball = trimesh.creation.icosphere(4, R_BALL)
    sv, sf = _socket_mesh()
    pair = ContactPair(1, 0, ball.vertices + (C_G - p_G[1]), ball.faces, sv + (C_G - p_G[0]), sf,
                       thickness=0.002, method=method, design_load=150.0)
    system = MechanicalSystem(base.bodies, base.tissues, base.loads, base.gravity_G, [pair],
                              length_scale=base.length_scale)
    y = state.y.copy()
    y[3:6] += [0.0003, -0.0002, -0.0002]  # start off-centre, still clear of the socket
    return system, system.state_at(0.0, y), pair


def _independent_residual(system, state):
    kin = system.kinematics(state.y)
    kin = BodyKinematics(kin.p_G, kin.R_GB, np.zeros_like(kin.v_G), np.zeros_like(kin.w_G))
    F = np.zeros((system.n_bodies, 3))
    T = np.zeros((system.n_bodies, 3))
    for el in system.force_elements():
        el.accumulate(0.0, kin, F, T)
    free = system.bodies.free
    return float(np.abs(F[free]).max()), float(np.abs(T[free]).max())


@pytest.mark.parametrize("method", ["mjm", "foundation"])
def test_frozen_contact_set_gives_the_same_forces_as_the_regenerated_one(method):
    """At the pose it was frozen at and at nearby poses with the same set, the frozen pair is the pair."""
    system, state, pair = ball_in_socket(method)
    rng = np.random.default_rng(3)
    y = state.y.copy()
    y[5] += 0.0011  # ball pressed 0.3–0.6 mm into the socket
    for _ in range(5):
        kin = system.kinematics(y)
        fz = pair.frozen(kin)
        assert fz.n_pairs > 10
        for dq in [np.zeros(6), 1e-7 * rng.normal(size=6)]:
            yy = y.copy()
            yy[3:6] += dq[:3]
            k2 = system.kinematics(yy)
            if pair.frozen(k2).key() != fz.key():
                continue
            F1, T1 = np.zeros((2, 3)), np.zeros((2, 3))
            F2, T2 = np.zeros((2, 3)), np.zeros((2, 3))
            pair.accumulate(0.0, k2, F1, T1)
            fz.accumulate(0.0, k2, F2, T2)
            assert np.allclose(F1, F2, rtol=1e-12, atol=1e-9) and np.allclose(T1, T2, rtol=1e-12, atol=1e-11)
        y[3:6] += 1e-4 * rng.normal(size=3)


@pytest.mark.parametrize("method", ["mjm", "foundation"])
def test_a_set_frozen_with_its_band_gives_the_true_forces_where_it_was_frozen(method):
    """The tree statics starts each set's Newton from the true forces at the pose the set was frozen
    at (``forces_at_start``): there the frozen set with its band of vertices about to touch is the
    pair, to rounding (the band's vertices lie above the surface and carry no force)."""
    from jointmodeller.core.studies.equilibrium import contact_band

    system, state, pair = ball_in_socket(method)
    band, _ = contact_band([pair])
    rng = np.random.default_rng(5)
    y = state.y.copy()
    y[5] += 0.0011
    for _ in range(4):
        kin = system.kinematics(y)
        fz = pair.frozen(kin, band)
        assert fz.n_pairs > pair.frozen(kin).n_pairs > 10  # the band adds vertices
        F1, T1 = np.zeros((2, 3)), np.zeros((2, 3))
        F2, T2 = np.zeros((2, 3)), np.zeros((2, 3))
        pair.accumulate(0.0, kin, F1, T1)
        fz.accumulate(0.0, kin, F2, T2)
        assert np.allclose(F1, F2, rtol=1e-12, atol=1e-9) and np.allclose(T1, T2, rtol=1e-12, atol=1e-11)
        y[3:6] += 1e-4 * rng.normal(size=3)


@pytest.mark.parametrize("method", ["mjm", "foundation"])
def test_ball_settles_in_socket_to_tight_residual(method):
    system, state, pair = ball_in_socket(method)
    assert pair.evaluate(0.0, system.kinematics(state.y)).n_points == 0  # starts clear of the socket
    result = solve_equilibrium(system, state, force_tol=1e-8, moment_tol=1e-9, max_wall_s=60)
    assert result.converged, result.message
    f, m = _independent_residual(system, result.state)
    assert f <= 1e-8 and m <= 1e-9
    res = pair.evaluate(0.0, system.kinematics(result.state.y))
    assert res.n_points > 0
    # the ligaments' pull is carried by the socket: contact force ≈ ligament force + loads + weight
    tissues = system.tissue_loads(result.state)
    assert (tissues.tension > 0).sum() >= 2
    assert np.linalg.norm(res.total_force_G) > 30.0
    if method == "mjm":  # design load 150 N near the ligaments' pull: penetration near its limit
        assert res.max_penetration <= 2.0 * pair.penetration_limit


def test_facing_cos_keeps_only_faces_within_the_cone_brute_force():
    """closest(facing_cos=c) = the nearest point over the faces whose unit normal · facing < −c,
    by brute force over every face (points near a sphere, facings tilted at random)."""
    from jointmodeller.core.geometry.collision_proximity import SurfaceProximity
    from jointmodeller.core.mechanics.contact_frozen import closest_on_faces

    s = trimesh.creation.icosphere(3, 0.01)
    v, f = np.asarray(s.vertices), np.asarray(s.faces, np.int64)
    prox = SurfaceProximity.build(v, f)
    rng = np.random.default_rng(5)
    d = rng.normal(size=(200, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    q = d * rng.uniform(0.0095, 0.0102, (200, 1))
    facing = -d + 0.8 * rng.normal(size=(200, 3))
    facing /= np.linalg.norm(facing, axis=1, keepdims=True)
    fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    fn /= np.linalg.norm(fn, axis=1, keepdims=True)
    cp = prox.closest(q, 0.002, facing=facing, facing_cos=0.5)
    assert len(cp.index) > 50
    for i, j in enumerate(cp.index):
        ok = np.flatnonzero(fn @ facing[j] < -0.5)
        bary = closest_on_faces(np.repeat(q[j][None], len(ok), 0), v, f, ok)
        pts = np.einsum("mk,mki->mi", bary, v[f[ok]])
        best = np.linalg.norm(pts - q[j], axis=1).min()
        assert abs(cp.depth[i]) == pytest.approx(best, abs=1e-12)
