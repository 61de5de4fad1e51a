"""Shared force elements on mobilized bodies (BodyKinematics adapter) and moment arms."""

import numpy as np
import pytest

from jointmodeller.core.mechanics.forces import BodyKinematics, apply_point_forces
from jointmodeller.core.multibody.examples import knee_custom, knee_planar_coupled, knee_planar_state, random_chain
from jointmodeller.core.multibody.moment_arms import (
    PointPath,
    coupling_matrix,
    moment_arm,
    moment_arm_excursion,
)
from jointmodeller.core.multibody.system import MultibodySystem


class _SpringToGround:
    """A linear spring from a ground point to a point on each body, with a damper (ForceElement)."""

    def __init__(self, n, k=50.0, c=2.0):
        rng = np.random.default_rng(0)
        self.anchor_G = rng.normal(size=(n, 3)) * 0.3
        self.r_B = rng.normal(size=(n, 3)) * 0.1
        self.k, self.c = k, c

    def accumulate(self, t, kin: BodyKinematics, force_G, torque_G):
        body = np.arange(kin.n_bodies)
        x = kin.points_G(body, self.r_B)
        v = kin.point_velocities_G(body, self.r_B)
        f = self.k * (self.anchor_G - x) - self.c * v
        apply_point_forces(kin, body, x, f, force_G, torque_G)


def test_body_kinematics_adapter_is_consistent():
    base = random_chain(3, seed=2, types=("pin", "ball_quaternion", "custom"))
    for b in base.bodies:  # force elements see each body on its principal axes
        _, vec = np.linalg.eigh(b.inertia_B)
        b.R_BK = vec * np.sign(np.linalg.det(vec))
    system = MultibodySystem(base.bodies)
    st = system.default_state()
    st.q = system.normalize(st.q + 0.3)
    st.u[:] = np.linspace(-1, 1, system.nu)
    bk = system.body_kinematics(system.kinematics(st.q, st.u))
    h = 1e-6
    p1 = system.body_kinematics(system.kinematics(system.normalize(st.q + h * system.qdot(st.q, st.u)))).p_G
    p0 = system.body_kinematics(system.kinematics(system.normalize(st.q - h * system.qdot(st.q, st.u)))).p_G
    np.testing.assert_allclose(bk.v_G, (p1 - p0) / (2 * h), atol=1e-7)
    for i, b in enumerate(system.bodies):  # the adapter's R_GB = principal axes: inertia diagonal
        I_G = system.kinematics(st.q).R_GB[i] @ b.inertia_B @ system.kinematics(st.q).R_GB[i].T
        I_P = bk.R_GB[i].T @ I_G @ bk.R_GB[i]
        assert np.allclose(I_P, np.diag(np.diag(I_P)), atol=1e-12)


def test_force_element_acts_through_the_jacobian_transpose():
    base = random_chain(3, seed=2, types=("pin", "ball_quaternion", "custom"))
    spring = _SpringToGround(3)
    system = MultibodySystem(base.bodies, forces=[spring])
    st = system.default_state()
    st.q = system.normalize(st.q + 0.3)
    st.u[:] = np.linspace(-1, 1, system.nu)
    udot = system.forward_dynamics(st)
    # independent: generalized force from point Jacobians, then M⁻¹
    kin = system.kinematics(st.q, st.u)
    bk = system.body_kinematics(kin)
    x = bk.points_G(np.arange(3), spring.r_B)
    f_pts = spring.k * (spring.anchor_G - x) - spring.c * bk.point_velocities_G(np.arange(3), spring.r_B)
    Jw, Jv = system.jacobians(kin)
    gen = sum((Jv[i] + np.cross(Jw[i].T, x[i] - kin.p_GB[i]).T).T @ f_pts[i] for i in range(3))
    M = system.mass_matrix(st.q)
    bias = base.inverse_dynamics(st, np.zeros(system.nu))
    np.testing.assert_allclose(udot, np.linalg.solve(M, gen - bias), atol=1e-10)


# patellar-tendon-like path: thigh origin, a femur-fixed via point, tibial tuberosity
PATH = PointPath(np.array([-1, -1, 0]), np.array([[0.03, -0.2, 0.0], [0.06, -0.38, 0.0], [0.04, -0.06, 0.0]]))


@pytest.mark.parametrize("angle", [-1.8, -1.0, -0.3, 0.1])
def test_moment_arm_force_method_equals_excursion_on_custom_knee(angle):
    system = knee_custom()
    st = system.default_state()
    st.q[:] = angle
    r_force = moment_arm(system, st, 0, PATH)
    r_exc = moment_arm_excursion(system, st, 0, PATH)
    assert abs(r_force) > 1e-3
    assert abs(r_force - r_exc) <= 0.005 * abs(r_exc)
    assert abs(r_force - r_exc) < 1e-8
    # the coupled joint matters: a pin at the same place gives a different moment arm
    pin = knee_planar_coupled()
    sp = knee_planar_state(pin, angle)
    C = coupling_matrix(pin, sp, 0)
    assert np.all(np.abs(C[1:]) > 0) or angle == 0.1
    r_planar = moment_arm(pin, sp, 0, PATH)
    assert abs(r_planar - r_force) < 1e-9  # couplers give the same joint kinematics
    assert abs(moment_arm_excursion(pin, sp, 0, PATH) - r_exc) < 1e-7


def test_moment_arm_without_coupling_differs():
    """Uncoupled planar knee (translations held): the moment arm differs from the coupled one."""
    from jointmodeller.core.multibody.system import MultibodySystem

    coupled = knee_planar_coupled()
    free = MultibodySystem(coupled.bodies)
    st = knee_planar_state(coupled, -1.0)
    r_c = moment_arm(coupled, st, 0, PATH)
    r_f = moment_arm(free, st, 0, PATH)
    assert abs(r_f - moment_arm_excursion(free, st, 0, PATH)) < 1e-8
    assert abs(r_c - r_f) > 1e-4


def test_run_with_force_element_dissipates_spring_plus_gravity_energy():
    """A damped spring (ForceElement) on mobilized bodies: total energy including the spring's
    potential never increases, and falls when the damper works."""
    from jointmodeller.core.multibody.integrate import simulate

    base = random_chain(3, seed=2, types=("pin", "ball_quaternion", "custom"))
    spring = _SpringToGround(3, k=30.0, c=0.5)
    system = MultibodySystem(base.bodies, forces=[spring])
    st = system.default_state()
    st.u[:] = 0.5

    def energy(s):
        bk = system.body_kinematics(system.kinematics(s.q, s.u))
        x = bk.points_G(np.arange(3), spring.r_B)
        return (system.kinetic_energy(s) + system.potential_energy(s)
                + 0.5 * spring.k * np.sum((spring.anchor_G - x) ** 2))

    traj = simulate(system, st, 0.5, accuracy=1e-8, out_times=np.linspace(0, 0.5, 11))
    e = []
    for q, u in zip(traj.q, traj.u):
        s = st.copy()
        s.q, s.u = q, u
        e.append(energy(s))
    assert np.all(np.diff(e) < 1e-9)
    assert e[-1] < e[0] - 1e-3
    with pytest.raises(ValueError):
        simulate(system, st, 0.1, out_times=[0.1], compiled=True)


def test_adapter_defaults_to_the_body_frame_at_the_com():
    system = random_chain(2, seed=1)
    st = system.default_state()
    st.q[:] = [0.4, -0.3]
    kin = system.kinematics(st.q, st.u)
    bk = system.body_kinematics(kin)
    np.testing.assert_allclose(bk.R_GB, kin.R_GB, atol=1e-15)
    np.testing.assert_allclose(bk.p_G, kin.p_GB + np.einsum("nij,nj->ni", kin.R_GB, system.com_B), atol=1e-15)
