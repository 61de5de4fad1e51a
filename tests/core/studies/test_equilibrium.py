"""Static equilibrium: residual tolerances, analytic sag, fallback, any ForceElement."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.mechanics.examples import free_body, mass_on_spring, two_bone_ligaments
from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.mechanics.system import MechanicalSystem
from jointmodeller.core.state import State
from jointmodeller.core.studies.equilibrium import solve_equilibrium


def _independent_residual(system: MechanicalSystem, state: State) -> tuple[float, float]:
    """Largest net force and moment component on the free bodies, summed element by element."""
    kin = system.kinematics(state.y)
    kin = BodyKinematics(kin.p_G, kin.R_GB, np.zeros_like(kin.v_G), np.zeros_like(kin.w_G))
    F = np.zeros((system.n_bodies, 3))
    T = np.zeros((system.n_bodies, 3))
    for el in system.force_elements():
        el.accumulate(state.t, kin, F, T)
    free = system.bodies.free
    return float(np.abs(F[free]).max()), float(np.abs(T[free]).max())


def test_hanging_mass_sags_by_mg_over_k():
    system, state = mass_on_spring(mass=1.5, coeffs=(600.0,), rest_length=0.1, x0=0.0)
    system = MechanicalSystem(system.bodies, system.tissues, system.loads, gravity_G=[9.81, 0, 0], length_scale=0.1)
    result = solve_equilibrium(system, system.state_at(0.0, state.y))
    assert result.converged
    p, _ = system.positions(result.state)
    assert p[1, 0] - 0.1 == pytest.approx(1.5 * 9.81 / 600.0, rel=1e-12)


@pytest.mark.parametrize("use_numba", [True, False])
def test_two_bone_ligament_model_equilibrium_residual(use_numba):
    system, state = two_bone_ligaments(prestrain=0.01, load_N=(2.0, -1.5, 1.0), use_numba=use_numba)
    result = solve_equilibrium(system, state)
    assert result.converged, result.message
    f, m = _independent_residual(system, result.state)
    assert f <= 1e-8 and m <= 1e-9
    assert result.residual_force_N == pytest.approx(f, abs=1e-12)
    loads = system.tissue_loads(result.state)
    assert (loads.tension > 0).sum() >= 1  # ligaments carry the load (this lax model may hang on one)
    assert np.all(loads.tension >= 0)
    # the pose moved from the start, so this was not a trivial solve
    assert np.abs(system.positions(result.state)[0] - system.positions(state)[0]).max() > 1e-5


class _GroundSpring:
    """A ForceElement without an analytic tangent: a linear spring pulling body 1's COM to a point."""

    def __init__(self, k: float, anchor_G):
        self.k, self.anchor_G = k, np.asarray(anchor_G, float)

    def accumulate(self, t, kin, force_G, torque_G):
        force_G[1] += -self.k * (kin.p_G[1] - self.anchor_G)


def test_equilibrium_accepts_elements_without_a_tangent():
    base, state = two_bone_ligaments(prestrain=0.01, load_N=(1.0, 0.0, 0.0))
    system = MechanicalSystem(base.bodies, base.tissues, base.loads, base.gravity_G,
                              [_GroundSpring(500.0, [0.01, 0.0, -0.1])], length_scale=base.length_scale)
    result = solve_equilibrium(system, state)
    assert result.converged, result.message
    f, m = _independent_residual(system, result.state)
    assert f <= 1e-8 and m <= 1e-9


def test_far_start_uses_damped_dynamics_fallback_or_converges():
    system, state = two_bone_ligaments(prestrain=0.01)
    y = state.y
    y[3:6] += [0.004, -0.003, 0.006]  # 8 mm off, ligaments partly slack
    y[10:14] = [np.cos(0.2), np.sin(0.2), 0.0, 0.0]  # and turned 23°
    result = solve_equilibrium(system, system.state_at(0.0, y))
    assert result.converged, result.message
    f, m = _independent_residual(system, result.state)
    assert f <= 1e-8 and m <= 1e-9


def test_unconstrained_body_reports_failure():
    base, state = free_body(w_B=(0.0, 0.0, 0.0))
    # nothing holds the body up against gravity: no equilibrium exists
    system = MechanicalSystem(base.bodies, base.tissues, base.loads, gravity_G=[0, 0, -9.81], length_scale=0.1)
    result = solve_equilibrium(system, system.state_at(0.0, state.y), max_iterations=10, settle_time=0.05)
    assert not result.converged
    assert "no equilibrium" in result.message
    assert result.residual_force_N == pytest.approx(1.5 * 9.81, rel=1e-9)


def test_time_limit_returns_best_pose_with_message():
    system, state = two_bone_ligaments(prestrain=0.01)
    y = state.y
    y[3:6] += [0.004, -0.003, 0.006]
    result = solve_equilibrium(system, system.state_at(0.0, y), max_wall_s=0.0)
    assert not result.converged
    assert "time limit" in result.message
    assert np.isfinite(result.residual_force_N)
