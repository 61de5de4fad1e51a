"""Trajectories: mobilizer manifolds (screw, ellipsoid), knee custom vs constraints, reversal."""

import numpy as np

from jointmodeller.core.multibody.examples import (
    knee_custom,
    knee_functions,
    knee_planar_coupled,
    knee_planar_state,
    random_chain,
)
from jointmodeller.core.multibody.integrate import simulate
from jointmodeller.core.multibody.spatial import transform
from jointmodeller.core.multibody.system import BodySpec, MobilizerSpec, MultibodySystem


def _relative_pose(system, q, body):
    """R_FM, p_FM of a body's mobilizer recomputed from the global body poses."""
    kin = system.kinematics(q)
    tr = system.tree
    par = tr.parent[body]
    R_GP = kin.R_GB[par] if par >= 0 else np.eye(3)
    p_GP = kin.p_GB[par] if par >= 0 else np.zeros(3)
    R_GF = R_GP @ tr.R_PF[body]
    p_GF = p_GP + R_GP @ tr.p_PF[body]
    R_GM = kin.R_GB[body] @ tr.R_BM[body]
    p_GM = kin.p_GB[body] + kin.R_GB[body] @ tr.p_BM[body]
    return R_GF.T @ R_GM, R_GF.T @ (p_GM - p_GF)


def test_screw_and_ellipsoid_bodies_stay_on_their_manifolds_for_10_s():
    pitch, radii = 0.05, np.array([0.2, 0.3, 0.4])
    system = random_chain(3, seed=4, types=("pin", "screw", "ellipsoid"),
                          params={"pitch": pitch, "radii": tuple(radii)})
    st = system.default_state()
    st.q = np.array([0.3, 0.5, 0.2, -0.3, 0.4])
    st.u = np.array([1.0, -2.0, 0.5, 1.0, -0.7])
    times = np.linspace(0, 10, 201)
    traj = simulate(system, st, 10.0, accuracy=1e-6, out_times=times, compiled=True)
    worst_screw = worst_ell = 0.0
    for q in traj.q:
        R, p = _relative_pose(system, q, 1)
        angle = np.arctan2(R[1, 0], R[0, 0])
        turns = np.round((q[1] - angle) / (2 * np.pi))
        worst_screw = max(worst_screw, abs(p[2] - pitch * (angle + 2 * np.pi * turns)), abs(p[0]), abs(p[1]))
        R, p = _relative_pose(system, q, 2)
        worst_ell = max(worst_ell, abs(np.sum((p / radii) ** 2) - 1.0), np.max(np.abs(p / radii - R[:, 2])))
    assert np.ptp(traj.q[:, 1]) > 0.5  # it really moved
    assert worst_screw < 1e-12
    assert worst_ell < 1e-12


def _global_error_bound(traj, accuracy):
    """What the error control guarantees for a trajectory, summed over its accepted steps.

    A step is accepted when RMS_i(e_i / (α·max(1, |y_i|))) ≤ 1 (integrate.py), so each component's
    local error is at most √n·α·max(1, |y|) (n = state size, |y| ≤ the largest |q|, |u| of the run).
    Over N accepted steps the local errors add up to N·√n·α·max(1, |y|). The one-second swing is
    less than one period of this pendulum (≈ 1.2 s), so errors are not amplified beyond O(1) on the
    way (measured: 2–3·N·α against the bound's ≈ 20·N·α). N is the run's own step count, so a
    machine that takes a few more or fewer steps gets its own bound.
    """
    n = traj.q.shape[1] + traj.u.shape[1]
    scale = max(1.0, float(np.max(np.abs(traj.q))), float(np.max(np.abs(traj.u))))
    return traj.n_steps * np.sqrt(n) * accuracy * scale


def test_knee_custom_mobilizer_equals_planar_with_couplers():
    """Same trajectory within what the integrator's error control guarantees; the coupled model
    stays on its constraint manifold to the projection's stopping tolerance."""
    custom, planar = knee_custom(), knee_planar_coupled()
    times = np.linspace(0, 1, 21)
    sc = custom.default_state()
    sc.q[:] = -np.pi / 2
    ref = simulate(custom, sc, 1.0, accuracy=1e-12, out_times=times, compiled=True)
    e_ref = _global_error_bound(ref, 1e-12)
    fx, fy = knee_functions()
    m = 2  # constraint rows: the two couplers x = fx(angle), y = fy(angle)
    for acc in (1e-6, 1e-8):
        tc = simulate(custom, sc, 1.0, accuracy=acc, out_times=times)
        tp = simulate(planar, knee_planar_state(planar, -np.pi / 2), 1.0, accuracy=acc, out_times=times)
        # the compiled coupler path (numba multipliers + projection) gives the same run
        tk = simulate(planar, knee_planar_state(planar, -np.pi / 2), 1.0, accuracy=acc, out_times=times,
                      compiled=True)
        e_c = _global_error_bound(tc, acc)
        assert np.max(np.abs(tc.q[:, 0] - ref.q[:, 0])) < e_c + e_ref
        for tr in (tp, tk):
            e = _global_error_bound(tr, acc)
            assert np.max(np.abs(tr.q[:, 0] - ref.q[:, 0])) < e + e_ref
            assert np.max(np.abs(tr.q[:, 0] - tc.q[:, 0])) < e + e_c
            # manifold (tibia translation vs its spline of the knee angle): after every accepted step
            # the projection iterates until RMS over the m rows of c ≤ acc (constraints.project_positions,
            # coupled.project_coupled), so each sample's RMS ≤ acc and any single row ≤ √m·acc.
            # 1e-14: a few ulps of the O(1) coordinates, as the splines are re-evaluated here.
            c = np.c_[tr.q[:, 1] - fx(tr.q[:, 0]), tr.q[:, 2] - fy(tr.q[:, 0])]
            assert np.max(np.sqrt(np.mean(c**2, axis=1))) <= acc + 1e-14
            assert tr.max_constraint_error <= np.sqrt(m) * acc + 1e-14
    assert np.ptp(ref.q[:, 0]) > 2.0  # the tibia swung through


def test_reversed_ellipsoid_gives_the_same_motion():
    """Forward: ground -free- A -ellipsoid- B. Reversed: ground -free- B -reversed ellipsoid- A
    with the same q, u meaning (B relative to A). Both bodies move identically."""
    rng = np.random.default_rng(11)
    X_F = transform(np.eye(3), [0.05, 0.1, -0.02])
    X_M = transform(np.linalg.qr(rng.normal(size=(3, 3)))[0] * [1, 1, 1], [0.0, -0.1, 0.03])
    if np.linalg.det(X_M[:3, :3]) < 0:
        X_M[:3, 0] *= -1
    A = dict(mass=2.0, com_B=np.array([0.01, 0.02, 0.0]), inertia_B=np.diag([0.02, 0.03, 0.025]))
    B = dict(mass=1.0, com_B=np.array([0.0, -0.05, 0.01]), inertia_B=np.diag([0.01, 0.008, 0.012]))
    ell = {"radii": (0.1, 0.15, 0.2)}
    fwd = MultibodySystem([
        BodySpec("A", mobilizer=MobilizerSpec("free", -1), **A),
        BodySpec("B", mobilizer=MobilizerSpec("ellipsoid", 0, X_F, X_M, ell), **B),
    ])
    rev = MultibodySystem([
        BodySpec("B", mobilizer=MobilizerSpec("free", -1), **B),
        BodySpec("A", mobilizer=MobilizerSpec("ellipsoid", 0, X_M, X_F, ell, reversed=True), **A),
    ])
    sf = fwd.default_state()
    sf.q[4:7] = [0.1, 0.2, 0.3]
    sf.u[:6] = [0.3, -0.2, 0.5, 0.1, 0.0, -0.2]
    sf.q[7:] = [0.3, -0.2, 0.4]
    sf.u[6:] = [1.0, -0.5, 0.8]
    kin = fwd.kinematics(sf.q, sf.u)
    sr = rev.default_state()
    rev.set_free_pose(sr, 0, kin.R_GB[1], kin.p_GB[1])
    rev.set_free_velocity(sr, 0, kin.w_G[1], kin.vo_G[1])
    sr.q[7:], sr.u[6:] = sf.q[7:], sf.u[6:]
    kr = rev.kinematics(sr.q, sr.u)
    np.testing.assert_allclose(kr.p_GB[[1, 0]], kin.p_GB, atol=1e-14)
    np.testing.assert_allclose(kr.vo_G[[1, 0]], kin.vo_G, atol=1e-14)
    times = np.linspace(0, 1, 11)
    tf = simulate(fwd, sf, 1.0, accuracy=1e-11, out_times=times, compiled=True)
    tr = simulate(rev, sr, 1.0, accuracy=1e-11, out_times=times, compiled=True)
    np.testing.assert_allclose(tr.q[:, 7:], tf.q[:, 7:], atol=1e-8)
    np.testing.assert_allclose(tr.u[:, 6:], tf.u[:, 6:], atol=1e-7)
    for qf, qr in zip(tf.q, tr.q):
        np.testing.assert_allclose(rev.kinematics(qr).p_GB[[1, 0]], fwd.kinematics(qf).p_GB, atol=1e-8)
    assert np.ptp(tf.q[:, 7]) > 0.1


class _SpringToOrigin:
    """A linear spring [N/m] pulling each body's centre of mass to the origin (a ForceElement)."""

    def __init__(self, stiffness: float) -> None:
        self.stiffness = stiffness

    def accumulate(self, t, kin, force_G, torque_G) -> None:
        force_G -= self.stiffness * kin.p_G


def _sprung_slider(length_scale: float) -> tuple[MultibodySystem, float]:
    """A 1 kg body on a slider along x, sprung to the origin at 1 Hz; returns (system, ω)."""
    omega = 2.0 * np.pi
    body = BodySpec("bead", 1.0, np.zeros(3), np.eye(3) * 1e-4, MobilizerSpec("slider"))
    return MultibodySystem([body], gravity_G=(0.0, 0.0, 0.0), forces=[_SpringToOrigin(omega**2)],
                           length_scale=length_scale), omega


def test_translations_of_a_small_model_are_held_to_the_accuracy_times_its_length():
    """A 1 cm model's 5 mm oscillation at accuracy α stays within a few α·L of cos ωt over two
    periods (DOPRI5's global error is a small multiple of its local tolerance): translational
    coordinates are weighed by the model's length, not by a floor of 1 m, which let this one
    drift ~100× further."""
    length, amplitude = 0.01, 0.005
    for accuracy in (1e-3, 1e-4, 1e-5):
        errors = {}
        for scale in (length, 1.0):
            system, omega = _sprung_slider(scale)
            state = system.default_state()
            state.q[0] = amplitude
            times = np.linspace(0.0, 2.0, 9)  # samples far apart: the error control sets the steps
            traj = simulate(system, state, 2.0, accuracy, times)
            errors[scale] = np.abs(traj.q[:, 0] - amplitude * np.cos(omega * times)).max()
        assert errors[length] <= 3.0 * accuracy * length, (accuracy, errors)
        assert errors[1.0] > 3.0 * accuracy * length, (accuracy, errors)  # the 1 m floor would not hold it
