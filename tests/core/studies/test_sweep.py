"""Quasi-static laxity sweep on the synthetic two-condyle joint (no meshes needed)."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.studies.laxity import (
    LaxityProtocol,
    SweepCancelled,
    curve_stiffness,
    linear_sweep,
    linear_sweep_assembled,
    load_sequence,
    parse_measure,
    run_sweep,
)
from jointmodeller.core.studies.laxity_examples import synthetic_protocol, two_condyle_joint


def test_load_sequence_two_sided_with_unloading():
    np.testing.assert_allclose(load_sequence(10, 3), [0, 5, 10, -5, -10])
    np.testing.assert_allclose(load_sequence(10, 3, unload=True), [0, 5, 10, 5, 0, -5, -10, -5, 0])


def test_parse_measure():
    assert parse_measure("varus_valgus_deg")[0] == 1
    assert parse_measure("anterior_posterior_mm")[1:] == (1000.0, "mm")
    with pytest.raises(ValueError, match="unit"):
        parse_measure("flexion_mm")
    with pytest.raises(ValueError, match="unknown measure"):
        parse_measure("wobble_deg")


def test_each_step_is_an_equilibrium_with_flexion_held():
    """Independent check: at every solved pose the net force on the moving bone vanishes and the net
    moment is a pure couple about the held flexion axis e1 (the rig's reaction)."""
    system, p0, q0, frames = two_condyle_joint()
    protocol = synthetic_protocol(frames, steps=4)
    res = run_sweep(system, protocol, p0, q0, tol_N=1e-9)
    from jointmodeller.core.mechanics.forces import BodyKinematics
    from jointmodeller.core.spatial_math import quat_to_matrix
    from jointmodeller.core.studies.laxity import ExperimentLoad, load_directions
    for i, load in enumerate(res.loads):
        p = p0.copy()
        R = quat_to_matrix(q0)
        p[1], R[1] = res.pose_p_G[i], quat_to_matrix(res.pose_q_GB[i][None])[0]
        kin = BodyKinematics(p, R, np.zeros_like(p), np.zeros_like(p))
        f, m = system.generalized_forces(0.0, kin)
        # the load, rebuilt from the unloaded pose (step 0)
        p_ref, R_ref = p.copy(), R.copy()
        p_ref[1], R_ref[1] = res.pose_p_G[0], quat_to_matrix(res.pose_q_GB[0][None])[0]
        fd, td, r_B = load_directions(protocol, p_ref, R_ref)
        ExperimentLoad(1, r_B, fd, td, float(load)).accumulate(0.0, kin, f, m)
        e1 = R[0] @ frames.R_B1A[:, 0]
        assert np.linalg.norm(f[1]) < 1e-6 * max(1.0, abs(load))
        m_perp = m[1] - (m[1] @ e1) * e1
        assert np.linalg.norm(m_perp) < 1e-7 * max(1.0, abs(load))


def test_varus_and_valgus_curves_are_mirrored():
    system, p0, q0, frames = two_condyle_joint()
    res = run_sweep(system, synthetic_protocol(frames, steps=6), p0, q0, tol_N=1e-9)
    pos = res.loads > 0
    neg = res.loads < 0
    np.testing.assert_allclose(res.loads[pos], -res.loads[neg])
    assert np.abs(res.measure).max() > 1.0  # it does move
    np.testing.assert_allclose(res.measure[pos], -res.measure[neg], rtol=1e-6, atol=1e-9)
    # translation along the flexion axis mirrors, along the long axis it is even
    np.testing.assert_allclose(res.coords[pos, 3], -res.coords[neg, 3], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(res.coords[pos, 5], res.coords[neg, 5], rtol=1e-6, atol=1e-12)
    # lateral and medial ligaments swap roles
    np.testing.assert_allclose(res.tissue_tension_N[pos][:, [0, 1]], res.tissue_tension_N[neg][:, [2, 3]], rtol=1e-6)


def test_an_asymmetric_model_is_not_mirrored():
    """The symmetry test can fail: widen the lateral side and the two curves differ."""
    system, p0, q0, frames = two_condyle_joint(asymmetry=0.3)
    res = run_sweep(system, synthetic_protocol(frames, steps=3), p0, q0)
    assert abs(res.measure[2] + res.measure[4]) > 0.05


def test_linear_model_agrees_with_nonlinear_sweep_at_small_loads():
    system, p0, q0, frames = two_condyle_joint()
    protocol = synthetic_protocol(frames, max_load=2.0, steps=3)
    res = run_sweep(system, protocol, p0, q0, tol_N=1e-11)
    lin = linear_sweep(system, protocol, p0, q0)
    moving = res.loads != 0
    np.testing.assert_allclose(np.degrees(lin[moving, 1]), res.measure[moving], rtol=0.02)
    # ... and not at large loads (the ligaments and contact stiffen): the comparison can fail
    big = synthetic_protocol(frames, max_load=100.0, steps=2)
    res_big = run_sweep(system, big, p0, q0)
    lin_big = linear_sweep(system, big, p0, q0)
    assert abs(np.degrees(lin_big[1, 1]) / res_big.measure[1] - 1.0) > 0.03


def test_assembled_linear_model_gives_the_same_small_load_curve():
    """The 6n×6n stiffness of core.studies.linear_model, projected on the held-flexion coordinates,
    predicts the nonlinear sweep at small loads within 2 % (and matches the finite-difference K)."""
    pytest.importorskip("jointmodeller.core.studies.linear_model")
    system, p0, q0, frames = two_condyle_joint()
    protocol = synthetic_protocol(frames, max_load=2.0, steps=3)
    res = run_sweep(system, protocol, p0, q0, tol_N=1e-11)
    moving = res.loads != 0
    lin_k = linear_sweep_assembled(system, protocol, p0, q0)
    np.testing.assert_allclose(np.degrees(lin_k[moving, 1]), res.measure[moving], rtol=0.02)
    np.testing.assert_allclose(lin_k, linear_sweep(system, protocol, p0, q0), rtol=1e-3, atol=1e-9)


@pytest.mark.slow
def test_warm_start_gives_the_same_curve_with_fewer_evaluations():
    system, p0, q0, frames = two_condyle_joint()
    protocol = synthetic_protocol(frames, steps=6, unload=True)
    warm = run_sweep(system, protocol, p0, q0, tol_N=1e-9)
    cold = run_sweep(system, protocol, p0, q0, tol_N=1e-9, warm_start=False)
    np.testing.assert_allclose(warm.measure, cold.measure, atol=1e-6)
    assert warm.evaluations.sum() < cold.evaluations.sum()
    # no friction, no damping: unloading retraces loading
    up = warm.measure[:6]
    down = warm.measure[5:11][::-1]
    np.testing.assert_allclose(up, down, atol=1e-6)


def test_secant_step_extrapolates_only_along_the_last_two_solved_loads():
    """secant_step: from the solved load nearest the target, along the secant from the solved load just
    behind it, never further than that secant; nothing behind (the first step, or back towards an
    earlier load): no extrapolation."""
    from jointmodeller.core.studies.laxity import secant_step

    loads = [0.0, 10.0, 20.0]
    assert secant_step(loads, 20.0, 30.0) == (1, 1.0)
    assert secant_step(loads, 20.0, 25.0) == (1, 0.5)
    assert secant_step(loads, 20.0, 45.0) is None  # longer than the secant
    assert secant_step([0.0, 10.0], 10.0, 5.0) is None  # back between solved loads: nothing behind
    assert secant_step(loads, 10.0, 5.0) == (2, 0.5)  # coming down from 20
    assert secant_step([0.0], 0.0, 10.0) is None  # the first step
    assert secant_step(loads, 0.0, -10.0) == (1, 1.0)  # the other side starts along the first side's secant
    assert secant_step([0.0, 10.0, 10.0], 10.0, 20.0) == (0, 1.0)  # a load solved twice is not behind itself


def test_each_load_starts_from_the_secant_of_the_last_two_equilibria(monkeypatch):
    """A free-body sweep starts each load's Newton solve from the last equilibrium carried on along the
    secant of the last two: the same curve (to the solver's tolerance) in fewer force evaluations than
    starting from the nearest equilibrium itself (secant_step switched off)."""
    from jointmodeller.core.studies import laxity

    system, p0, q0, frames = two_condyle_joint()
    protocol = synthetic_protocol(frames, steps=6, unload=True)
    with_secant = run_sweep(system, protocol, p0, q0, tol_N=1e-9)
    monkeypatch.setattr(laxity, "secant_step", lambda *args: None)
    from_nearest = run_sweep(system, protocol, p0, q0, tol_N=1e-9)
    np.testing.assert_allclose(with_secant.measure, from_nearest.measure, atol=1e-6)
    assert with_secant.evaluations.sum() < from_nearest.evaluations.sum()


def test_laxity_and_stiffness_from_curve():
    loads = np.array([0.0, 50.0, 100.0, -50.0, -100.0])
    values = loads / 20.0  # 20 N per degree
    st = curve_stiffness(loads, values)
    assert st["secant"] == pytest.approx(20.0)
    assert st["tangent_at_zero"] == pytest.approx(20.0)


def test_progress_and_cancel():
    system, p0, q0, frames = two_condyle_joint()
    protocol = synthetic_protocol(frames, steps=4)
    seen = []
    res = run_sweep(system, protocol, p0, q0, progress=lambda i, n, lo, v: seen.append((i, n, lo, v)))
    assert [s[0] for s in seen] == list(range(1, len(protocol.loads) + 1))
    assert seen[-1][3] == pytest.approx(res.measure[-1])
    calls = []

    def cancel():
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(SweepCancelled) as info:
        run_sweep(system, protocol, p0, q0, cancel=cancel)
    assert info.value.partial.loads.size == 3


def test_protocol_rejects_unknown_load_kind():
    _, _, _, frames = two_condyle_joint()
    with pytest.raises(ValueError, match="load kind"):
        LaxityProtocol(0, 1, frames, load_kind="twist")


@pytest.mark.parametrize("kind,measure,index", [("anterior_posterior", "anterior_posterior_mm", 4),
                                                 ("internal_external", "internal_external_deg", 2)])
def test_other_load_kinds_move_their_own_coordinate(kind, measure, index):
    system, p0, q0, frames = two_condyle_joint()
    protocol = synthetic_protocol(frames, max_load=20.0 if kind == "anterior_posterior" else 1.0, steps=3,
                                  load_kind=kind, measure=measure)
    res = run_sweep(system, protocol, p0, q0)
    assert res.laxity > 0
    main = np.abs(res.coords[-1, index])
    assert main > 0


def test_other_free_bodies_settle_too():
    """A third bone hung from the moving one by three springs: at every step its net force and
    moment vanish too, and adding it changes the curve (its weight loads the joint)."""
    from dataclasses import replace as dc_replace

    from jointmodeller.core.mechanics.system import Bodies
    from jointmodeller.core.mechanics.tissues import make_tissue_set

    system, p0, q0, frames = two_condyle_joint()
    ts = system.tissues
    bodies = Bodies.make([2.0, 0.6, 0.3], [[1e-2, 1e-2, 2e-3], [4e-3, 4.2e-3, 3e-4], [1e-4, 1e-4, 1e-4]],
                         fixed=[True, False, False], names=["upper", "lower", "third"])
    p3 = np.array([0.03, 0.0, -0.15])
    ends_lower = np.array([[0.03, 0.01, -0.12], [0.03, -0.01, -0.12], [0.05, 0.0, -0.13]]) - p0[1]
    ends_third = np.array([[0.03, 0.012, -0.14], [0.03, -0.012, -0.14], [0.045, 0.0, -0.15]]) - p3
    rest = np.linalg.norm((ends_lower + p0[1]) - (ends_third + p3), axis=1)
    k = np.zeros((3, 3, ts.coeffs.shape[2]))
    k[:, 0, 0] = 5e3
    extra = make_tissue_set([1] * 3, [2] * 3, ends_lower, ends_third, k, tension_only=[False] * 3,
                            rest_length=rest, names=["h1", "h2", "h3"])
    merged = make_tissue_set(np.r_[ts.body_a, extra.body_a], np.r_[ts.body_b, extra.body_b],
                             np.r_[ts.r_a_B, extra.r_a_B], np.r_[ts.r_b_B, extra.r_b_B],
                             np.concatenate([ts.coeffs, extra.coeffs]),
                             tension_only=np.r_[ts.tension_only, extra.tension_only],
                             rest_length=np.r_[ts.rest_length, extra.rest_length], names=ts.names + extra.names)
    sys3 = dc_replace(system, bodies=bodies, tissues=merged, gravity_G=np.array([0.0, 0.0, -9.81]))
    p = np.vstack([p0, p3])
    q = np.vstack([q0, [1.0, 0, 0, 0]])
    protocol = synthetic_protocol(frames, steps=3)
    res = run_sweep(sys3, protocol, p, q, tol_N=1e-9)
    base = run_sweep(system, protocol, p0, q0, tol_N=1e-9)
    assert np.abs(res.measure - base.measure).max() > 1e-3
    # re-solve the last step's pose for the third body: run again and inspect the solver's kinematics
    from jointmodeller.core.studies.laxity import QuasiStaticSolver, load_directions
    solver = QuasiStaticSolver(sys3, protocol, p, q, tol_N=1e-9)
    x0, _, _, _ = solver.solve(solver.x_initial())
    pr, Rr = solver.poses(x0)
    solver.load.force_dir_G, solver.load.torque_dir_G, solver.load.r_B = load_directions(protocol, pr, Rr)
    solver.load.magnitude = 100.0
    x, _, _, _ = solver.solve(x0)
    kin = solver.kinematics(x)
    f, m = sys3.generalized_forces(0.0, kin)
    solver.load.accumulate(0.0, kin, f, m)
    assert np.linalg.norm(f[2]) < 1e-8 and np.linalg.norm(m[2]) < 1e-9
    assert np.linalg.norm(kin.p_G[2] - p3) > 1e-4  # it did move
    np.testing.assert_allclose(solver.coords(x)[1] - solver.coords(x0)[1], np.radians(res.measure[2]), atol=1e-9)
