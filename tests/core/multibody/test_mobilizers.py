"""Hinge matrices H and Ḣu of every mobilizer type, forward and reversed, against finite
differences of the position transform X_FM(q) along q̇ = N(q)u."""

import numpy as np
import pytest

from jointmodeller.core.multibody import mobilizers as mob
from jointmodeller.core.multibody.functions import FunctionTable, Linear, Polynomial, Spline

TYPES = ["pin", "slider", "screw", "universal", "cylinder", "planar", "ball", "ball_quaternion",
         "ellipsoid", "free", "custom"]


def _setup(name, rng):
    jt = mob.TYPE_CODES[name]
    prm = np.zeros(mob.N_PRM)
    fidx = -np.ones(6, np.int64)
    table = FunctionTable()
    if jt == mob.CUSTOM:
        nq = nu = 2
        prm[:9] = np.eye(3)[[2, 0, 1]].ravel()
        prm[9:] = np.eye(3).ravel()
        fns = [Linear([1.0, 0.3]), Polynomial([0.1, 0.2, -0.4, 0.3], arg=1),
               Spline([-2, -1, 0, 0.5, 2], [0.0, 0.2, -0.1, 0.3, 0.1], arg=0),
               Spline([-2, -1, 0, 1, 2], [0.01, 0.02, -0.01, 0.03, 0.0], arg=1),
               Polynomial([0.0, 0.05, 0.01], arg=0), None]
        for k, f in enumerate(fns):
            fidx[k] = table.add(f)
    else:
        nq, nu = mob.SIZES[jt]
        prm[0] = 0.07
        if jt == mob.ELLIPSOID:
            prm[:3] = [0.2, 0.3, 0.45]
    q = rng.normal(size=nq) * 0.6
    if jt in (mob.BALL_QUAT, mob.FREE):
        q[:4] /= np.linalg.norm(q[:4])
    u = rng.normal(size=nu)
    return jt, prm, fidx, table.arrays(), q, u, nu


def _kin(jt, rev, prm, fidx, tab, q, u, nu):
    R, p, H, hdu = np.zeros((3, 3)), np.zeros(3), np.zeros((6, 6)), np.zeros(6)
    mob.joint_kinematics(jt, rev, prm, fidx, *tab, q, u, nu, R, p, H, hdu)
    return R, p, H[:, :nu].copy(), hdu


@pytest.mark.parametrize("rev", [0, 1])
@pytest.mark.parametrize("name", TYPES)
def test_hinge_matrices_match_finite_differences(name, rev):
    rng = np.random.default_rng(abs(hash(name)) % 1000)
    jt, prm, fidx, tab, q, u, nu = _setup(name, rng)
    qd = np.zeros_like(q)
    mob.joint_qdot(jt, q, u, qd)
    h = 1e-6
    Rp, pp, Hp, _ = _kin(jt, rev, prm, fidx, tab, q + h * qd, u, nu)
    Rm, pm, Hm, _ = _kin(jt, rev, prm, fidx, tab, q - h * qd, u, nu)
    R, p, H, hdu = _kin(jt, rev, prm, fidx, tab, q, u, nu)
    W = (Rp - Rm) / (2 * h) @ R.T
    w_fd = np.array([W[2, 1], W[0, 2], W[1, 0]])
    V = H @ u
    np.testing.assert_allclose(V[:3], w_fd, atol=1e-8)
    np.testing.assert_allclose(V[3:], (pp - pm) / (2 * h), atol=1e-8)
    np.testing.assert_allclose(hdu, (Hp @ u - Hm @ u) / (2 * h), atol=1e-6)
    assert np.allclose(R @ R.T, np.eye(3), atol=1e-12)


@pytest.mark.parametrize("name", TYPES)
def test_reversed_transform_is_inverse_of_forward(name):
    rng = np.random.default_rng(7)
    jt, prm, fidx, tab, q, u, nu = _setup(name, rng)
    R, p, _, _ = _kin(jt, 0, prm, fidx, tab, q, u, nu)
    Rr, pr, _, _ = _kin(jt, 1, prm, fidx, tab, q, u, nu)
    np.testing.assert_allclose(Rr, R.T, atol=1e-14)
    np.testing.assert_allclose(pr, -R.T @ p, atol=1e-14)


def test_screw_and_ellipsoid_positions_follow_their_definitions():
    rng = np.random.default_rng(3)
    jt, prm, fidx, tab, q, u, nu = _setup("screw", rng)
    R, p, _, _ = _kin(jt, 0, prm, fidx, tab, q, u, nu)
    assert np.isclose(p[2], 0.07 * q[0]) and np.isclose(np.arctan2(R[1, 0], R[0, 0]), q[0])
    jt, prm, fidx, tab, q, u, nu = _setup("ellipsoid", rng)
    R, p, _, _ = _kin(jt, 0, prm, fidx, tab, q, u, nu)
    a = np.array([0.2, 0.3, 0.45])
    assert np.isclose(np.sum((p / a) ** 2), 1.0)
    np.testing.assert_allclose(p / a, R[:, 2], atol=1e-15)  # body z stays along the normal param


def test_ball_euler_N_inverts_the_angular_velocity_map():
    """q̇ = N(q) w for the x-y-z body-fixed sequence (seed 000 eq. 10)."""
    q = np.array([0.3, -0.4, 1.1])
    w = np.array([0.2, -1.0, 0.5])
    qd = np.zeros(3)
    mob.joint_qdot(mob.BALL, q, w, qd)
    t1, t2, t3 = q
    N = np.array([[np.cos(t3) / np.cos(t2), -np.sin(t3) / np.cos(t2), 0],
                  [np.sin(t3), np.cos(t3), 0],
                  [-np.sin(t2) * np.cos(t3) / np.cos(t2), np.sin(t2) * np.sin(t3) / np.cos(t2), 1]])
    # seed 000 eq. (10) is written for w in body (M) components
    R, _, _, _ = _kin(mob.BALL, 0, np.zeros(mob.N_PRM), -np.ones(6, np.int64),
                      FunctionTable().arrays(), q, w, 3)
    np.testing.assert_allclose(qd, N @ (R.T @ w), atol=1e-12)


def test_coordinates_are_rotational_where_they_turn_a_body_at_any_pose():
    """rotational_coordinates (by mobilizer kind and, for a custom mobilizer, by which functions
    read a coordinate) agrees with the kinematics: a speed is rotational exactly when it turns some
    body, checked on the Jacobians at random poses."""
    from jointmodeller.core.multibody.functions import Constant
    from jointmodeller.core.multibody.system import BodySpec, MobilizerSpec, MultibodySystem, rotational_coordinates

    custom = MobilizerSpec("custom", parent=0, params={"coordinates": 3}, functions={
        "theta1": Polynomial([0.0, 1.0], arg=0), "theta2": Constant(0.1),
        "p1": Linear([0.02, 1.0, 0.0]), "p2": Spline([0.0, 1.0, 2.0], [0.0, 0.3, 0.1], arg=1)})
    kinds = ["free", "slider", "planar", "cylinder", "pin", "ball_quaternion", "screw"]
    bodies = [BodySpec(f"b{i}", 1.0, np.zeros(3), np.eye(3), MobilizerSpec(kind, parent=i - 1,
                                                                             params={"pitch": 0.01}))
              for i, kind in enumerate(kinds)]
    bodies.append(BodySpec("c", 1.0, np.zeros(3), np.eye(3), custom))
    custom.parent = len(kinds) - 1
    system = MultibodySystem(bodies, length_scale=0.2)
    rot_q, rot_u = rotational_coordinates(bodies)
    assert rot_q.shape == (system.nq,) and rot_u.shape == (system.nu,)
    # coordinate 2 of the custom mobilizer is read by no function: counted rotational (scale 1)
    assert list(rot_u[-3:]) == [True, False, True]
    rng = np.random.default_rng(3)
    for _ in range(3):
        state = system.default_state()
        state.q = system.normalize(state.q + rng.normal(0.0, 0.3, system.nq))
        Jw, _ = system.jacobians(system.kinematics(state.q))
        turns = np.abs(Jw).max(axis=(0, 1)) > 1e-12
        assert np.array_equal(turns[:-1], rot_u[:-1]) and not turns[-2]
    scales = system.error_scales()
    assert np.array_equal(scales[:system.nq] == 1.0, rot_q) and np.all(scales[:system.nq][~rot_q] == 0.2)
    assert np.array_equal(scales[system.nq:] == 1.0, rot_u) and np.all(scales[system.nq:][~rot_u] == 0.2)
