"""Linear small-motion model (seed 004 §3.1): tangent vs finite differences, modes, laxity."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.mechanics.examples import no_loads, random_tissue_system, two_bone_ligaments
from jointmodeller.core.mechanics.linearization import finite_difference_stiffness
from jointmodeller.core.mechanics.system import Bodies, MechanicalSystem
from jointmodeller.core.mechanics.tissues import AXIAL, make_tissue_set
from jointmodeller.core.spatial_math import euler_to_quat, matrix_to_quat, quat_to_matrix
from jointmodeller.core.studies.equilibrium import solve_equilibrium
from jointmodeller.core.studies.linear_model import (
    assemble_linear_model,
    joint_compliance,
    load_at_point,
    natural_modes,
    predicted_laxity,
)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tissue_tangent_stiffness_matches_finite_differences(seed):
    system, state = random_tissue_system(seed=seed)
    y = state.y
    y[14:] = 0.0  # at rest
    kin = system.kinematics(y)
    el = system.tissue_forces
    K = el.tangent_stiffness(0.0, kin)
    K_fd = finite_difference_stiffness([el], 0.0, kin, 0.1)
    assert np.abs(K).max() > 1e3  # not trivially zero
    assert np.max(np.abs(K - K_fd)) < 1e-7 * np.abs(K).max()
    C = el.tangent_damping(0.0, kin)
    C_fd = finite_difference_stiffness([el], 0.0, kin, 0.1, velocity=True)
    assert np.max(np.abs(C - C_fd)) < 1e-6 * np.abs(C).max()


def test_point_load_tangent_matches_finite_differences():
    system, state = two_bone_ligaments(load_N=(3.0, -4.0, 5.0))
    kin = system.kinematics(state.y)
    K = system.loads.tangent_stiffness(0.0, kin)
    K_fd = finite_difference_stiffness([system.loads], 0.0, kin, 0.05)
    assert np.abs(K).max() > 0.5
    assert np.max(np.abs(K - K_fd)) < 1e-7


def _axial(body_a, body_b, r_a, r_b, k, rest):
    m = len(body_a)
    return make_tissue_set(body_a, body_b, r_a, r_b, [[kk] for kk in k], np.zeros(m), tension_only=[False] * m,
                           rest_length=rest, model=[AXIAL] * m)


def test_two_body_chain_eigenfrequencies_match_hand_derivation():
    # ground -k1- m1 -k2- m2 along x, springs at the centres of mass, unstressed
    m1, m2, k1, k2 = 0.7, 0.3, 900.0, 400.0
    bodies = Bodies.make([1.0, m1, m2], [[1, 1, 1], [1e-3, 2e-3, 3e-3], [2e-3, 1e-3, 1e-3]], fixed=[True, False, False])
    tissues = _axial([0, 1], [1, 2], np.zeros((2, 3)), np.zeros((2, 3)), [k1, k2], [0.1, 0.1])
    system = MechanicalSystem(bodies, tissues, no_loads())
    state = system.make_state([[0, 0, 0], [0.1, 0, 0], [0.2, 0, 0]], np.tile([1.0, 0, 0, 0], (3, 1)))
    modes = natural_modes(assemble_linear_model(system, state))
    a = (k1 + k2) / m1 + k2 / m2
    disc = np.sqrt(a * a - 4 * k1 * k2 / (m1 * m2))
    exact = np.sqrt([(a - disc) / 2, (a + disc) / 2]) / (2 * np.pi)
    nonzero = modes.frequency_hz[modes.frequency_hz > 1e-6]
    assert nonzero == pytest.approx(exact, rel=1e-10)
    # the modes are pure x motion of the two masses
    for j in np.flatnonzero(modes.frequency_hz > 1e-6):
        shape = modes.shapes[:, j].reshape(3, 6)
        assert np.abs(shape[:, 1:]).max() < 1e-10 * np.abs(shape[:, 0]).max()


def test_rotational_mode_of_a_turned_body_matches_hand_derivation():
    # body held by two x-springs at ±r along G y: rotation about G z has stiffness 2 k r²
    m, k, r = 0.5, 300.0, 0.04
    inertia = np.array([2e-3, 3e-3, 5e-3])
    R_GB = quat_to_matrix(euler_to_quat(np.radians([[30.0, -40.0, 70.0]]), "ZXY"))[0]
    q = matrix_to_quat(R_GB)
    p = np.array([0.0, 0.0, 0.0])
    anchors = np.array([[-0.1, r, 0.0], [-0.1, -r, 0.0]])
    ends_G = np.array([[0.0, r, 0.0], [0.0, -r, 0.0]])
    ends_B = (ends_G - p) @ R_GB  # R_GB^T (P - p)
    bodies = Bodies.make([1.0, 1.0, m], [[1, 1, 1], [1, 1, 1], inertia], fixed=[True, True, False])
    tissues = _axial([0, 1], [2, 2], np.zeros((2, 3)), ends_B, [k, k], [0.1, 0.1])
    system = MechanicalSystem(bodies, tissues, no_loads())
    state = system.make_state([anchors[0], anchors[1], p], np.vstack([[1, 0, 0, 0], [1, 0, 0, 0], q]))
    model = assemble_linear_model(system, state)
    modes = natural_modes(model)
    I_G = R_GB @ np.diag(inertia) @ R_GB.T
    # DOFs with stiffness: x (2k) and rotation about z (2 k r²), coupled only through I_G
    Kr = np.array([[2 * k, 0.0], [0.0, 2 * k * r * r]])
    Mr = np.array([[m, 0.0], [0.0, I_G[2, 2]]])
    # rotations about x, y are free; condense them out of the inertia: the z mode sees
    # the effective inertia 1 / (I_G^-1)_zz
    Mr[1, 1] = 1.0 / np.linalg.inv(I_G)[2, 2]
    exact = np.sort(np.sqrt(np.diag(Kr) / np.diag(Mr))) / (2 * np.pi)
    nonzero = modes.frequency_hz[modes.frequency_hz > 1e-6]
    assert nonzero == pytest.approx(exact, rel=1e-10)


def test_linear_laxity_matches_nonlinear_equilibrium_for_small_loads():
    load = np.array([0.002, -0.0015, 0.001])  # N, at a point 0.2 m down the free bone
    base_system, base_state = two_bone_ligaments(prestrain=0.0)  # hangs in its ligaments under gravity
    base = solve_equilibrium(base_system, base_state)
    assert base.converged
    loaded_system, _ = two_bone_ligaments(prestrain=0.0, load_N=load)
    loaded = solve_equilibrium(loaded_system, loaded_system.state_at(0.0, base.state.y))
    assert loaded.converged
    p0, q0 = base_system.positions(base.state)
    p1, q1 = loaded_system.positions(loaded.state)
    R0, R1 = quat_to_matrix(q0[1]), quat_to_matrix(q1[1])
    from scipy.spatial.transform import Rotation

    dtheta = Rotation.from_matrix(R1 @ R0.T).as_rotvec()
    nonlinear = np.concatenate([p1[1] - p0[1], dtheta])
    model = assemble_linear_model(base_system, base.state)
    kin = base_system.kinematics(base.state.y)
    point = kin.points_G(np.array([1]), np.array([[0.0, 0.0, -0.2]]))[0]
    wrench = load_at_point(load, np.zeros(3), point, kin.p_G[1])
    linear = predicted_laxity(model, 1, wrench)
    assert np.abs(nonlinear).max() > 1e-6  # it moved measurably
    assert np.linalg.norm(linear[:3] - nonlinear[:3]) < 0.01 * np.linalg.norm(nonlinear[:3])
    assert np.linalg.norm(linear[3:] - nonlinear[3:]) < 0.01 * np.linalg.norm(nonlinear[3:])
    stiffness, compliance = joint_compliance(model, 1, reference=0)
    assert np.allclose(stiffness @ compliance, np.eye(6), atol=1e-8)
    assert np.allclose(compliance, compliance.T, rtol=1e-6, atol=1e-9 * np.abs(compliance).max())  # at equilibrium
