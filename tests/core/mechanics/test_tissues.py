"""Tissue laws and the tissue force element: sign rule, slack, wrapped-path plumbing, invariants."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.mechanics.examples import random_tissue_system
from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.mechanics.tissue_force import TissueForces, evaluate_tissues
from jointmodeller.core.mechanics.tissues import (
    BUSHING,
    TissueGeometry,
    WrappedPath,
    make_tissue_set,
    polynomial_energy,
    polynomial_force,
    polynomial_stiffness,
    straight_tissue_geometry,
)
from jointmodeller.core.spatial_math import (
    euler_to_matrix,
    euler_to_quat,
    matrix_to_euler,
    quat_rate_body,
    quat_to_euler,
    quat_to_matrix,
    rotvec_to_quat,
)


def test_polynomial_sign_rule_is_odd_and_derivatives_agree():
    k = np.array([[100.0, 2e4, 3e6]])
    x = np.array([0.004])
    f = polynomial_force(x, k)[0]
    assert f == pytest.approx(100 * 0.004 + 2e4 * 0.004**2 + 3e6 * 0.004**3)
    assert polynomial_force(-x, k)[0] == pytest.approx(-f)  # even power resists symmetrically
    h = 1e-7
    fd = (polynomial_force(x + h, k) - polynomial_force(x - h, k)) / (2 * h)
    assert polynomial_stiffness(x, k)[0] == pytest.approx(fd[0], rel=1e-7)
    de = (polynomial_energy(x + h, k) - polynomial_energy(x - h, k)) / (2 * h)
    assert de[0] == pytest.approx(f, rel=1e-7)


def _two_points(p_b, v_b):
    R = np.tile(np.eye(3), (2, 1, 1))
    return BodyKinematics(np.array([[0.0, 0, 0], p_b]), R, np.array([[0.0, 0, 0], v_b]), np.zeros((2, 3)))


@pytest.mark.parametrize("use_numba", [True, False])
def test_tension_only_ligament_slack_carries_nothing_and_never_pushes(use_numba):
    ts = make_tissue_set([0], [1], np.zeros((1, 3)), np.zeros((1, 3)), [[1e4]], [50.0], tension_only=[True],
                         rest_length=[0.1])
    el = TissueForces(ts, use_numba=use_numba)
    cases = [
        ((0.09, 0, 0), (-1.0, 0, 0), 0.0),  # slack and shortening
        ((0.09, 0, 0), (5.0, 0, 0), 0.0),  # slack, lengthening fast: still slack
        ((0.101, 0, 0), (-1.0, 0, 0), 0.0),  # taut but shortening so fast the dashpot would push
        ((0.101, 0, 0), (0.0, 0, 0), 10.0),  # taut at rest: k x
    ]
    for p_b, v_b, tension in cases:
        F = np.zeros((2, 3))
        T = np.zeros((2, 3))
        el.accumulate(0.0, _two_points(np.array(p_b), np.array(v_b)), F, T)
        assert F[1, 0] == pytest.approx(-tension, abs=1e-12)
        assert F[0, 0] == pytest.approx(tension, abs=1e-12)


def test_internal_forces_conserve_momentum_and_angular_momentum():
    system, state = random_tissue_system(seed=3)
    kin = system.kinematics(state.y)
    loads = evaluate_tissues(0.0, kin, system.tissues)
    assert np.abs(loads.force_G.sum(axis=0)).max() < 1e-9 * np.abs(loads.force_G).max()
    moment = np.cross(loads.point_G, loads.force_G).sum(axis=0)
    assert np.abs(moment).max() < 1e-9 * np.abs(loads.force_G).max()


def test_bushing_force_follows_the_spring_frame_of_body_a():
    # body A turned 90° about z: S's x axis points along G y; B displaced along G y -> S-x deflection
    R_AS = np.eye(3)
    ts = make_tissue_set([0], [1], np.zeros((1, 3)), np.zeros((1, 3)), np.array([[[100.0], [200.0], [300.0]]]),
                         np.zeros((1, 3)), model=[BUSHING], R_AS=R_AS[None], rest_S=np.zeros((1, 3)))
    Rz = euler_to_matrix(np.radians([[0, 0, 90.0]]), "xyz")[0]
    kin = BodyKinematics(np.zeros((2, 3)), np.stack([Rz, np.eye(3)]), np.zeros((2, 3)), np.zeros((2, 3)))
    kin.p_G[1] = [0.0, 0.01, 0.0]
    loads = evaluate_tissues(0.0, kin, ts)
    assert np.allclose(loads.deflection_S[0], [0.01, 0.0, 0.0], atol=1e-15)
    assert np.allclose(loads.force_S[0], [1.0, 0.0, 0.0])
    assert np.allclose(loads.force_G[1], [0.0, -1.0, 0.0], atol=1e-14)  # pulls B back


class _StraightProvider:
    """A path provider that returns the straight line: wrapped tissues must then match straight ones."""

    def __init__(self, ts):
        self.ts = ts
        self.calls = 0

    def wrapped_paths(self, t, kin, index):
        self.calls += 1
        g = straight_tissue_geometry(kin, self.ts.body_a[index], self.ts.r_a_B[index], self.ts.body_b[index],
                                     self.ts.r_b_B[index])
        return WrappedPath(np.asarray(index), TissueGeometry(g.length, g.length_rate, g.point_a_G, g.point_b_G,
                                                             g.dir_a_G, g.dir_b_G))


@pytest.mark.parametrize("use_numba", [True, False])
def test_wrapped_tissues_use_the_path_provider(use_numba):
    system, state = random_tissue_system(seed=4)
    ts = system.tissues
    kin = system.kinematics(state.y)
    F0, T0 = np.zeros((2, 3)), np.zeros((2, 3))
    TissueForces(ts, use_numba=False).accumulate(0.0, kin, F0, T0)
    from dataclasses import replace

    wrapped = replace(ts, wrapped=(ts.model == 0) & (np.arange(ts.count) % 2 == 0))
    provider = _StraightProvider(wrapped)
    el = TissueForces(wrapped, provider, use_numba=use_numba)
    F1, T1 = np.zeros((2, 3)), np.zeros((2, 3))
    el.accumulate(0.0, kin, F1, T1)
    assert provider.calls == 1
    assert np.allclose(F1, F0, rtol=1e-12, atol=1e-9) and np.allclose(T1, T0, rtol=1e-12, atol=1e-9)
    # and their stiffness (numerical for the wrapped rows) matches the analytic straight one
    kin0 = BodyKinematics(kin.p_G, kin.R_GB, np.zeros((2, 3)), np.zeros((2, 3)))
    K0 = TissueForces(ts, use_numba=False).tangent_stiffness(0.0, kin0)
    K1 = el.tangent_stiffness(0.0, kin0)
    assert np.max(np.abs(K1 - K0)) < 1e-6 * np.abs(K0).max()


@pytest.mark.parametrize("sequence", ["ZYX", "xyz", "ZXZ", "yxy"])
def test_euler_round_trip_including_gimbal_lock(sequence):
    rng = np.random.default_rng(0)
    angles = rng.uniform(-1.2, 1.2, size=(20, 3))
    second = 0.0 if sequence[0].lower() == sequence[2].lower() else np.pi / 2  # the singular middle angle
    angles[:5, 1] = second
    R = euler_to_matrix(angles, sequence)
    back = euler_to_matrix(matrix_to_euler(R, sequence), sequence)
    assert np.allclose(back, R, atol=1e-12)
    q = euler_to_quat(angles, sequence)
    assert np.allclose(quat_to_matrix(q), R, atol=1e-12)
    assert np.allclose(euler_to_matrix(quat_to_euler(q, sequence), sequence), R, atol=1e-12)


def test_quaternion_rate_matches_rotation_by_body_angular_velocity():
    q = euler_to_quat(np.array([[0.3, -0.7, 1.1]]), "ZYX")[0]
    w_B = np.array([0.4, -1.3, 2.0])
    h = 1e-6
    # R(t+h) = R(t) exp(h [w_B×]) for a body-frame angular velocity
    q_next = quat_to_matrix(q) @ quat_to_matrix(rotvec_to_quat(h * w_B))
    q_prev = quat_to_matrix(q) @ quat_to_matrix(rotvec_to_quat(-h * w_B))
    dR = (q_next - q_prev) / (2 * h)
    qd = quat_rate_body(q, w_B)
    eps = 1e-7
    dR_q = (quat_to_matrix(q + eps * qd) - quat_to_matrix(q - eps * qd)) / (2 * eps)
    assert np.allclose(dR_q, dR, atol=1e-7)
