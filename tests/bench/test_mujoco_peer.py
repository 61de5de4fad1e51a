"""The demo elbow translated into MuJoCo (bench.mujoco_peer, issue 17 item 6): the same bodies, the same
ligaments and the same law, checked against our own model. No timings."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytestmark = pytest.mark.peers
mujoco = pytest.importorskip("mujoco")

from jointmodeller.app.build import build_mechanical_system  # noqa: E402
from jointmodeller.app.demo import build_demo_project  # noqa: E402
from jointmodeller.bench.mujoco_peer import (  # noqa: E402
    HELD_TRANSLATION_M,
    Driver,
    build_mujoco_demo,
    joint_coordinates,
    measure_value,
)
from jointmodeller.core.mechanics.forces import BodyKinematics  # noqa: E402
from jointmodeller.core.mechanics.tissue_force import TissueForces  # noqa: E402
from jointmodeller.core.spatial_math import (  # noqa: E402
    euler_to_matrix,
    matrix_to_quat,
    quat_to_matrix,
    rotvec_to_matrix,
)


@pytest.fixture(scope="module")
def demo():
    return build_demo_project()


@pytest.fixture(scope="module")
def peer(demo):
    """The translation without contact (no SDF octrees to build: quick)."""
    return build_mujoco_demo(demo, contact=False)


def test_ulna_has_the_projects_mass_inertia_and_place(demo, peer):
    model, info = peer
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    ulna = next(m for m in demo.masses if m.name == "ulna")
    b = info.body_id[info.body_names.index("ulna")]
    assert model.body_mass[b] == pytest.approx(ulna.mass_kg, rel=1e-15)
    assert model.body_dofnum[b] == 6 and model.body_dofnum[info.body_id[info.body_names.index("humerus")]] == 0
    # the inertia tensor about the centre of mass, in G, as the project gives it in L
    R_GL = euler_to_matrix(np.radians(np.asarray(ulna.euler_deg, float))[None], ulna.euler_sequence)[0]
    inertia_G = R_GL @ np.asarray(ulna.inertia_L, float) @ R_GL.T
    R_GI = data.ximat[b].reshape(3, 3)
    mj_inertia_G = R_GI @ np.diag(model.body_inertia[b]) @ R_GI.T
    np.testing.assert_allclose(mj_inertia_G, inertia_G, rtol=0, atol=1e-12 * np.abs(inertia_G).max())
    np.testing.assert_allclose(data.xipos[b], ulna.position_G, rtol=0, atol=1e-15)  # the centre of mass in G
    np.testing.assert_allclose(model.opt.gravity, demo.info.gravity_G, rtol=0, atol=0)
    assert model.opt.timestep == 5e-4


def test_same_tendons_rest_lengths_and_laws(demo, peer):
    model, info = peer
    assert model.ntendon == len(demo.attachments) == 6
    springs = {s.name: s for s in demo.springs}
    for k, a in enumerate(demo.attachments):
        assert mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_TENDON, k) == f"t{k}" and info.tendon_names[k] == a.name
        s = springs[a.spring]
        # dead band from 0 to the rest length: no force while slack (tension-only)
        assert model.tendon_lengthspring[k, 0] == 0.0
        assert model.tendon_lengthspring[k, 1] == pytest.approx(a.initial_length_m, rel=1e-15)
        assert model.tendon_stiffness[k] == s.kx[0] and not model.tendon_stiffnesspoly[k].any()
        assert info.damping[k] == s.cx


def _our_forces(demo, p_G, R_GB, v_G, w_G):
    built = build_mechanical_system(demo, contact=False, wrapping=False)
    kin = BodyKinematics(p_G, R_GB, v_G, w_G)
    forces = TissueForces(built.system.tissues, None, False)
    F, T = np.zeros_like(p_G), np.zeros_like(p_G)
    forces.accumulate(0.0, kin, F, T)
    return F, T, forces.evaluate(0.0, kin), built


@pytest.mark.parametrize("shift_G, valgus_deg, taut", [
    ((0.0005, 0.0, -0.0015), 3.0, 6),  # pulled out distally and opened medially: every bundle stretched
    ((0.0, 0.0, 0.0008), 2.0, 1),  # pushed in: one bundle taut, five slack (the dead band, no damping)
])
def test_tendon_forces_equal_our_tissue_law_at_a_stretched_moving_pose(demo, peer, shift_G, valgus_deg, taut):
    """Spring and dashpot forces on the ulna at a displaced pose with a velocity: MuJoCo's generalized
    passive force against our tissue forces on the same straight paths. Both laws are the same
    polynomial (degree 1 here) and the same taut-only dashpot, so they agree to rounding; a wrong site,
    frame, rest length, dead band or a dashpot left on a slack tendon would show at full size."""
    model, info = peer
    built = build_mechanical_system(demo, contact=False, wrapping=False)
    p0, q0 = built.system.positions(built.state)
    R0 = quat_to_matrix(q0)
    dR = rotvec_to_matrix(np.radians(valgus_deg) * np.array([0.0, -1.0, 0.0]))  # valgus: about -y
    p, R = p0.copy(), R0.copy()
    p[1] = dR @ p0[1] + np.asarray(shift_G)
    R[1] = dR @ R0[1]
    v, w = np.zeros((2, 3)), np.zeros((2, 3))
    v[1], w[1] = (0.0, 0.0, -0.01), (0.0, -0.05, 0.0)  # moving distally and further into valgus
    F, T, ev, _ = _our_forces(demo, p, R, v, w)
    assert np.count_nonzero(ev.tension > 0) == taut

    data = mujoco.MjData(model)
    data.qpos[:3], data.qpos[3:7] = p[1], matrix_to_quat(R[1])
    data.qvel[:3], data.qvel[3:] = v[1], R[1].T @ w[1]  # a free joint's angular velocity is in the body frame
    mujoco.mj_forward(model, data)
    Driver(model, info).apply(data)  # the dashpots of the slack tendons off
    mujoco.mj_forward(model, data)
    np.testing.assert_allclose(data.ten_length - info.rest_length, ev.length - built.system.tissues.rest_length,
                               rtol=0, atol=1e-15)
    q = data.qfrc_spring + data.qfrc_damper
    scale = np.abs(ev.tension).max()
    np.testing.assert_allclose(q[:3], F[1], rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(R[1] @ q[3:], T[1], rtol=0, atol=1e-9 * scale * 0.1)  # arms < 0.1 m


def test_refuses_a_law_a_tendon_cannot_carry(demo):
    springs = (dataclasses.replace(demo.springs[0], law="blankevoort"),) + demo.springs[1:]
    with pytest.raises(ValueError, match="Blankevoort"):
        build_mujoco_demo(dataclasses.replace(demo, springs=springs), contact=False)


@pytest.mark.slow
def test_sdf_cartilage_where_ours_is_and_the_joint_holds_the_load(demo):
    """The cartilage layers are SDF geoms (a signed-distance octree of the real concave surface, not a
    convex hull) placed where the project puts them, and under the first 0.25 s of the ramped valgus
    load (half of it) the joint stays seated and opens into valgus (the sign of the load)."""
    model, info = build_mujoco_demo(demo)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    assert model.npair == 1
    for g in range(model.ngeom):
        assert model.geom_type[g] == mujoco.mjtGeom.mjGEOM_SDF
        mesh = model.geom_dataid[g]
        assert model.mesh_octnum[mesh] > 0
        first, count = model.mesh_vertadr[mesh], model.mesh_vertnum[mesh]
        v_G = data.geom_xpos[g] + model.mesh_vert[first:first + count] @ data.geom_xmat[g].reshape(3, 3).T
        body = info.body_names.index(demo.contacts[0].body_a if g == 0 else demo.contacts[0].body_b)
        ours = demo.masses[body].cartilage.vertices_L  # L = G at the demo's pose
        assert count == len(ours)
        np.testing.assert_allclose(v_G, ours, rtol=0, atol=1e-6)  # MuJoCo keeps mesh vertices in float32

    driver = Driver(model, info)
    worst = 0.0
    while data.time < 0.25:
        driver.apply(data)
        mujoco.mj_step(model, data)
        worst = max(worst, float(np.linalg.norm(joint_coordinates(data, info)[3:])))
    assert np.all(np.isfinite(data.qpos))
    assert data.ncon > 0 and worst < HELD_TRANSLATION_M
    assert info.measure == "varus_valgus_deg"
    assert -10.0 < measure_value(data, info) < 0.0  # valgus (negative in the demo's JCS), not ridden out
