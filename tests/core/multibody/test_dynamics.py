"""Recursive dynamics against the explicit mass matrix, energy conservation and Pinocchio."""

import numpy as np
import pytest

from jointmodeller.core.multibody.examples import random_chain
from jointmodeller.core.multibody.integrate import simulate

MIXED = ("pin", "ball_quaternion", "custom", "ellipsoid", "screw", "universal", "free", "ball",
         "cylinder", "weld", "planar", "slider")


def _random_state(system, seed):
    rng = np.random.default_rng(seed)
    st = system.default_state()
    st.q = system.normalize(st.q + 0.4 * rng.normal(size=system.nq))
    st.u = rng.normal(size=system.nu)
    return st


def _custom_params():
    return {"pitch": 0.05, "radii": (0.2, 0.3, 0.4), "coordinates": 1}


@pytest.mark.parametrize("n, types", [(1, ("pin",)), (2, ("pin",)), (10, ("pin",)), (12, MIXED)])
def test_aba_equals_mass_matrix_solve(n, types):
    system = random_chain(n, seed=n, types=types, params=_custom_params())
    st = _random_state(system, n)
    tau = np.random.default_rng(1).normal(size=system.nu)
    udot = system.forward_dynamics(st, tau)
    M = system.mass_matrix(st.q)
    bias = system.inverse_dynamics(st, np.zeros(system.nu))  # C(q, u) + gravity terms
    np.testing.assert_allclose(M, M.T, atol=1e-14)
    assert np.all(np.linalg.eigvalsh(M) > 0)
    np.testing.assert_allclose(udot, np.linalg.solve(M, tau - bias), atol=1e-10, rtol=0)
    # inverse dynamics reproduces tau
    np.testing.assert_allclose(system.inverse_dynamics(st, udot), tau, atol=1e-10)


def test_reversed_mobilizers_in_a_chain_keep_aba_and_mass_matrix_consistent():
    system = random_chain(6, seed=5, types=MIXED[:6], params=_custom_params())
    for b in system.bodies[::2]:
        b.mobilizer.reversed = True
    from jointmodeller.core.multibody.system import MultibodySystem

    system = MultibodySystem(system.bodies)
    st = _random_state(system, 3)
    udot = system.forward_dynamics(st)
    M = system.mass_matrix(st.q)
    bias = system.inverse_dynamics(st, np.zeros(system.nu))
    np.testing.assert_allclose(udot, np.linalg.solve(M, -bias), atol=1e-10)


@pytest.mark.parametrize("n", [1, 2, 10])
def test_energy_is_conserved(n):
    """Pendulum, double pendulum, 10-body chain: total energy drift at accuracy 1e-10."""
    system = random_chain(n, seed=10 + n)
    st = _random_state(system, n)
    e0 = system.kinetic_energy(st) + system.potential_energy(st)
    traj = simulate(system, st, 2.0, 1e-10, np.linspace(0, 2, 21), compiled=True)
    energies = []
    for q, u in zip(traj.q, traj.u):
        s = st.copy()
        s.q, s.u = q, u
        energies.append(system.kinetic_energy(s) + system.potential_energy(s))
    scale = max(abs(e0), system.kinetic_energy(st), 1.0)
    assert np.max(np.abs(np.array(energies) - e0)) / scale < 1e-7
    # the plain (Python-driven) integrator follows the same trajectory
    if n <= 2:
        tr2 = simulate(system, st, 2.0, accuracy=1e-10, out_times=np.linspace(0, 2, 21))
        np.testing.assert_allclose(tr2.q, traj.q, atol=1e-7)


def test_energy_conserved_with_quaternion_and_custom_mobilizers():
    system = random_chain(5, seed=21, types=("ball_quaternion", "custom", "ellipsoid", "free", "screw"),
                          params=_custom_params())
    st = _random_state(system, 2)
    st.u *= 0.5
    e0 = system.kinetic_energy(st) + system.potential_energy(st)
    traj = simulate(system, st, 1.0, 1e-10, [1.0], compiled=True)
    s = st.copy()
    s.q, s.u = traj.q[-1], traj.u[-1]
    e1 = system.kinetic_energy(s) + system.potential_energy(s)
    assert abs(e1 - e0) / max(abs(e0), 1.0) < 1e-7


def _pinocchio_model(system):
    pin = pytest.importorskip("pinocchio")
    tr = system.tree
    model = pin.Model()
    model.gravity.linear = np.array(tr.gravity)
    ids = []
    for i, b in enumerate(system.bodies):
        par = int(tr.parent[i])
        X_PF = pin.SE3(tr.R_PF[i], tr.p_PF[i])
        if par >= 0:  # placement relative to the parent's joint (M) frame
            X_PF = pin.SE3(tr.R_BM[par], tr.p_BM[par]).inverse() * X_PF
        jid = model.addJoint(ids[par] if par >= 0 else 0, pin.JointModelRZ(), X_PF, b.name)
        ids.append(jid)
        R_MB = tr.R_BM[i].T
        com_M = R_MB @ (np.asarray(b.com_B) - tr.p_BM[i])
        I_M = R_MB @ np.asarray(b.inertia_B) @ R_MB.T
        model.appendBodyToJoint(jid, pin.Inertia(b.mass, com_M, I_M), pin.SE3.Identity())
    return pin, model


def test_same_accelerations_as_pinocchio():
    system = random_chain(10, seed=42)
    pin, model = _pinocchio_model(system)
    data = model.createData()
    st = _random_state(system, 4)
    tau = np.random.default_rng(2).normal(size=system.nu)
    ref = pin.aba(model, data, st.q, st.u, tau)
    np.testing.assert_allclose(system.forward_dynamics(st, tau), ref, atol=1e-9, rtol=0)
    np.testing.assert_allclose(system.mass_matrix(st.q), pin.crba(model, data, st.q), atol=1e-9)


def test_reaction_force_satisfies_newton_for_a_single_body():
    """Mobilizer reaction + gravity = m · a_COM (a pendulum released from rest and moving)."""
    system = random_chain(1, seed=3, types=("universal",))
    st = _random_state(system, 8)
    udot = system.forward_dynamics(st)
    moment_M, force_G = system.reaction_forces(st, udot)
    kin = system.kinematics(st.q, st.u)
    alpha, ao = system.body_accelerations(kin, udot)
    arm = kin.R_GB[0] @ system.com_B[0]
    a_com = ao[0] + np.cross(alpha[0], arm) + np.cross(kin.w_G[0], np.cross(kin.w_G[0], arm))
    m = system.mass[0]
    np.testing.assert_allclose(force_G[0] + m * system.tree.gravity, m * a_com, atol=1e-10)
    # the reaction does no work along the mobilities: it is orthogonal to H in the power sense
    Jw, Jv = system.jacobians(kin)
    pM = kin.p_GB[0] + kin.R_GB[0] @ system.tree.p_BM[0]
    J_M = Jv[0] + np.cross(Jw[0].T, pM - kin.p_GB[0]).T
    np.testing.assert_allclose(moment_M[0] @ Jw[0] + force_G[0] @ J_M, 0, atol=1e-10)


def test_bad_specs_are_rejected_with_the_body_named():
    from jointmodeller.core.multibody.system import BodySpec, MobilizerSpec, MultibodySystem

    good = dict(mass=1.0, com_B=np.zeros(3), inertia_B=np.eye(3) * 0.1)
    with pytest.raises(ValueError, match="thigh"):
        MultibodySystem([BodySpec("thigh", mobilizer=MobilizerSpec("hinge"), **good)])
    with pytest.raises(ValueError, match="shank"):
        MultibodySystem([BodySpec("shank", mobilizer=MobilizerSpec("pin", parent=0), **good)])
    with pytest.raises(ValueError, match="foot"):
        MultibodySystem([BodySpec("foot", 1.0, np.zeros(3), -np.eye(3), MobilizerSpec("pin"))])
