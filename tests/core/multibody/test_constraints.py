"""Constraint rows against finite differences, multipliers, projection and assembly."""

import numpy as np
import pytest

from jointmodeller.core.multibody import constraints as C  # noqa: N812
from jointmodeller.core.multibody.examples import random_chain
from jointmodeller.core.multibody.functions import Polynomial, Spline
from jointmodeller.core.multibody.integrate import simulate
from jointmodeller.core.multibody.system import MultibodySystem
from jointmodeller.core.state import State


def _system(constraints, seed=3):
    base = random_chain(4, seed=seed, types=("pin", "ball_quaternion", "universal", "pin"))
    return MultibodySystem(base.bodies, constraints=constraints)


def _state(system, seed=0):
    rng = np.random.default_rng(seed)
    st = system.default_state()
    st.q = system.normalize(st.q + 0.5 * rng.normal(size=system.nq))
    st.u = rng.normal(size=system.nu)
    st.t = 0.3
    return st


ALL = [
    lambda: C.PointOnPlane(1, [0.2, 1.0, 0.1], [0.1, 0.0, 0.2], 3, [0.05, 0.1, -0.1]),
    lambda: C.PointOnPlane(-1, [0.0, 1.0, 0.0], [0.0, -0.5, 0.0], 2, [0.05, 0.1, -0.1]),
    lambda: C.PointOnLine(0, [1.0, 0.2, 0.0], [0.0, 0.1, 0.0], 3, [0.1, 0.0, 0.05]),
    lambda: C.Ball(0, [0.1, 0.2, 0.0], 3, [0.0, -0.1, 0.1]),
    lambda: C.Rod(-1, [0.3, 0.0, 0.1], 2, [0.0, 0.1, 0.1], 0.5),
    lambda: C.ConstantAngle(1, [1.0, 0.0, 0.0], 3, [0.0, 1.0, 0.0]),
    lambda: C.Weld(1, np.eye(4), 3, np.eye(4)),
    lambda: C.CoordinateCoupler(0, [5, 7], Spline([-2, 0, 1, 3], [0.1, 0.3, -0.2, 0.4], arg=1)),
    lambda: C.PrescribedMotion(7, Polynomial([0.1, 0.5, -0.3, 0.2])),
]


@pytest.mark.parametrize("make", ALL)
def test_rows_match_finite_differences(make):
    con = make()
    system = _system([con])
    st = _state(system)
    c, G, k, ct = C.constraint_rows(system, st)
    assert G.shape == (c.size, system.nu)
    h = 1e-6
    qd = system.qdot(st.q, st.u)

    def at(dt):
        s = State(st.t + dt, system.normalize(st.q + dt * qd), st.u)
        return C.constraint_rows(system, s)

    cp, Gp, _, ctp = at(h)
    cm, Gm, _, ctm = at(-h)
    np.testing.assert_allclose(G @ st.u + ct, (cp - cm) / (2 * h), atol=1e-7)
    # c̈ at u̇ = 0:  k = d/dt (G u + c_t)
    np.testing.assert_allclose(k, ((Gp @ st.u + ctp) - (Gm @ st.u + ctm)) / (2 * h), atol=2e-6)


def test_multipliers_enforce_accelerations_and_redundancy_is_least_squares():
    ball = C.Ball(0, [0.1, 0.2, 0.0], 3, [0.0, -0.1, 0.1])
    system = _system([ball])
    st = C.assemble(system, _state(system))
    udot, lam = system.forward_dynamics(st, return_multipliers=True)
    c, G, k, _ = C.constraint_rows(system, st)
    np.testing.assert_allclose(G @ udot + k, 0, atol=1e-9)
    # same physics as the KKT system with the explicit mass matrix
    M = system.mass_matrix(st.q)
    f = -system.inverse_dynamics(st, np.zeros(system.nu))
    m = G.shape[0]
    K = np.block([[M, G.T], [G, np.zeros((m, m))]])
    sol = np.linalg.solve(K, np.concatenate([f, -k]))
    np.testing.assert_allclose(udot, sol[: system.nu], atol=1e-9)
    np.testing.assert_allclose(lam, sol[system.nu :], atol=1e-8)
    # a duplicated constraint: same accelerations, load shared equally (least-squares λ)
    dup = _system([ball, C.Ball(0, [0.1, 0.2, 0.0], 3, [0.0, -0.1, 0.1])])
    udot2, lam2 = dup.forward_dynamics(st, return_multipliers=True)
    np.testing.assert_allclose(udot2, udot, atol=1e-9)
    np.testing.assert_allclose(lam2[:3], lam2[3:], atol=1e-8)
    np.testing.assert_allclose(lam2[:3] + lam2[3:], lam, atol=1e-8)


def test_assembly_and_projection_reach_the_manifold():
    system = _system([C.Ball(0, [0.1, 0.2, 0.0], 3, [0.0, -0.1, 0.1]),
                      C.CoordinateCoupler(7, [0], Polynomial([0.0, 0.5]))])
    st = _state(system, 5)
    assert np.max(np.abs(C.position_error(system, st))) > 1e-2
    st2 = C.assemble(system, st, tol=1e-13)
    c, G, k, ct = C.constraint_rows(system, st2)
    assert np.max(np.abs(c)) < 1e-12
    np.testing.assert_allclose(G @ st2.u + ct, 0, atol=1e-12)


def test_closed_loop_run_stays_on_manifold_and_conserves_energy():
    system = _system([C.Ball(0, [0.1, 0.2, 0.0], 3, [0.0, -0.1, 0.1])])
    st = C.assemble(system, _state(system, 2))
    st.u *= 0.3
    C.project_velocities(system, st)
    e0 = system.kinetic_energy(st) + system.potential_energy(st)
    tr = simulate(system, st, 0.5, accuracy=1e-8)
    s = st.copy()
    s.q, s.u = tr.q[-1], tr.u[-1]
    assert tr.max_constraint_error <= 1e-8
    assert abs(system.kinetic_energy(s) + system.potential_energy(s) - e0) < 1e-5 * max(1, abs(e0))


def test_compiled_coupler_path_equals_python_path():
    from jointmodeller.core.multibody.examples import knee_planar_coupled

    system = knee_planar_coupled()
    assert system._couplers is not None
    st = system.default_state()
    st.q = np.array([-0.8, 0.01, -0.38])  # off the manifold on purpose: same formula either way
    st.u = np.array([1.5, -0.2, 0.3])
    compiled = system.forward_dynamics(st)
    python, lam = system.forward_dynamics(st, return_multipliers=True)
    np.testing.assert_allclose(compiled, python, atol=1e-12)


def test_prescribed_motion_is_followed_during_a_run():
    """A double pendulum whose first joint follows s(t) = 0.3 + 0.5 t − 0.4 t²: q0(t) = s(t) to the
    constraint tolerance, and the free joint still moves under gravity."""
    base = random_chain(2, seed=7)
    s = Polynomial([0.3, 0.5, -0.4])
    system = MultibodySystem(base.bodies, constraints=[C.PrescribedMotion(0, s)])
    st = system.default_state()
    st.u[1] = 0.2
    times = np.linspace(0, 1, 11)
    tr = simulate(system, C.assemble(system, st), 1.0, accuracy=1e-8, out_times=times)
    np.testing.assert_allclose(tr.q[:, 0], s(times), atol=1e-8)
    np.testing.assert_allclose(tr.u[:, 0], s.calc(times, 1), atol=1e-7)
    assert np.ptp(tr.q[:, 1]) > 1e-2


@pytest.mark.parametrize("method", ["Radau", "BDF", "DOP853"])
def test_a_method_that_cannot_project_is_refused_with_a_message_naming_the_method(method):
    """A constrained system (here a closed loop) with an integrator that cannot project onto its
    constraints: a ValidationError (what the CLI and the GUI show as a message, not a traceback)
    naming the method and the one that can, before any step."""
    from jointmodeller.model.errors import ValidationError

    system = _system([C.Ball(0, [0.1, 0.2, 0.0], 3, [0.0, -0.1, 0.1])])
    st = C.assemble(system, _state(system, 2))
    with pytest.raises(ValidationError, match=f"integrator {method} cannot keep.*DOPRI5"):
        simulate(system, st, st.t + 0.1, accuracy=1e-6, method=method)
