"""Scattering point forces into body sums and the velocities of body-fixed points
(core.mechanics.forces), compiled or not, against their definitions: F_b = Σ f_i, τ_b = Σ (x_i − p_b) × f_i
over the points on body b, and v = v_b + ω_b × R_b r."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from jointmodeller.core.mechanics.forces import BodyKinematics, apply_point_forces


@pytest.fixture
def case():
    rng = np.random.default_rng(3)
    n, m = 4, 500
    kin = BodyKinematics(rng.normal(size=(n, 3)), Rotation.random(n, random_state=4).as_matrix(),
                         rng.normal(size=(n, 3)), rng.normal(size=(n, 3)))
    return kin, rng.integers(0, n, m), rng.normal(size=(m, 3)), rng.normal(size=(m, 3))


def test_point_forces_sum_per_body_with_their_moments(case):
    kin, body, points, forces = case
    F, T = np.ones((4, 3)), np.ones((4, 3))  # added to, not overwritten
    apply_point_forces(kin, body, points, forces, F, T)
    for b in range(4):
        on = body == b
        np.testing.assert_allclose(F[b], 1.0 + forces[on].sum(axis=0), rtol=0, atol=1e-12)
        np.testing.assert_allclose(T[b], 1.0 + np.cross(points[on] - kin.p_G[b], forces[on]).sum(axis=0),
                                   rtol=0, atol=1e-12)


def test_a_couple_moves_nothing_and_turns_the_same_about_any_centre(case):
    kin, _, _, _ = case
    x = np.array([[0.3, 0.1, -0.2], [0.5, -0.4, 0.1]])
    f = np.array([[1.0, 2.0, -0.5], [-1.0, -2.0, 0.5]])
    F, T = np.zeros((4, 3)), np.zeros((4, 3))
    apply_point_forces(kin, np.array([2, 2]), x, f, F, T)
    assert np.all(F == 0.0)
    np.testing.assert_allclose(T[2], np.cross(x[0] - x[1], f[0]), rtol=0, atol=1e-14)


def test_point_velocities_are_the_rigid_body_field(case):
    kin, body, r_B, _ = case
    v = kin.point_velocities_G(body, r_B)
    arm = np.einsum("mij,mj->mi", kin.R_GB[body], r_B)
    np.testing.assert_allclose(v, kin.v_G[body] + np.cross(kin.w_G[body], arm), rtol=0, atol=1e-14)


def test_complex_arguments_take_the_numpy_path(case):
    kin, body, r_B, _ = case  # complex-step differentiation must not lose its imaginary part
    step = 1e-20j * np.ones_like(r_B)
    v = kin.point_velocities_G(body, r_B + step)
    assert np.iscomplexobj(v) and np.abs(v.imag).max() > 0.0
