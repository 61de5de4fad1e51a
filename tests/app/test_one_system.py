"""Projects with joints, constraint rows, locked coordinates and routed tissues run their studies on
the multibody tree (project -> System), checked against hand-written potentials and geometry."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from jointmodeller.app.build import build_mechanical_system
from jointmodeller.app.coordinates import coordinate_table, set_coordinates
from jointmodeller.app.run_poses import rotations_GB
from jointmodeller.app.studies import run_dynamics, run_equilibrium
from jointmodeller.model import (
    Attachment,
    ConstraintSpec,
    Frame,
    FunctionSpec,
    JointSpec,
    Mass,
    Project,
    ProjectInfo,
    SpringType,
    ValidationError,
    ViaPoint,
)

G = 9.81
K = 2000.0  # N/m, linear ligaments
REST = 0.04  # m
INERTIA = ((2e-4, 0.0, 0.0), (0.0, 3e-4, 0.0), (0.0, 0.0, 4e-4))
GROUND_PTS = ((-0.03, 0.05, 0.0), (0.03, 0.05, 0.0))
BODY_PTS = ((-0.02, 0.0, 0.0), (0.02, 0.0, 0.0))
MASS_KG = 0.3
COM_L = (0.004, -0.003, 0.0)


def planar_project(locked=(), constraints=(), default_q=(0.1, 0.0, 0.0)) -> Project:
    """A bone on a planar joint to ground (rotation rz about z, translations tx, ty in the x–y plane)
    hung from two linear ligaments, gravity along −y."""
    joint = JointSpec(type="planar", parent="ground", coordinates=("rz", "tx", "ty"), default_q=default_q,
                      locked=tuple(locked))
    return Project(
        info=ProjectInfo(title="planar", gravity_G=(0.0, -G, 0.0)),
        springs=(SpringType("lig", kx=(K,), tension_only=True),),
        masses=(Mass("bone", mass_kg=MASS_KG, com_L=COM_L, inertia_L=INERTIA, properties_from_mesh=False,
                     joint=joint),),
        attachments=tuple(Attachment(f"L{i}", "lig", "ground", "bone", a, b, initial_length_m=REST)
                          for i, (a, b) in enumerate(zip(GROUND_PTS, BODY_PTS))),
        constraints=tuple(constraints),
    )


def potential(rz: float, tx: float, ty: float) -> float:
    """Gravity plus ligament energy of :func:`planar_project` at (rz, tx, ty), written by hand."""
    c, s = np.cos(rz), np.sin(rz)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    p = np.array([tx, ty, 0.0])
    com = p + R @ np.array(COM_L)
    V = MASS_KG * G * com[1]
    for a, b in zip(GROUND_PTS, BODY_PTS):
        x = np.linalg.norm(p + R @ np.array(b) - np.array(a)) - REST
        V += 0.5 * K * max(x, 0.0) ** 2
    return V


def dV(f, x: float, h: float = 1e-6) -> float:
    """Central difference (error ~h²·V''' ≈ 1e-12 here, far below the checks)."""
    return (f(x + h) - f(x - h)) / (2 * h)


def test_pin_pendulum_on_a_ligament_matches_the_hand_solved_angle():
    """A pin joint about z with its centre of mass 0.1 m out, held up by one ligament from ground:
    the equilibrium angle is the root of the moment balance, solved here independently."""
    r, k, rest = 0.1, 100.0, 0.05
    A = np.array([0.1, 0.1, 0.0])
    project = Project(
        info=ProjectInfo(gravity_G=(0.0, -G, 0.0)),
        springs=(SpringType("lig", kx=(k,)),),
        masses=(Mass("arm", mass_kg=1.0, com_L=(r, 0.0, 0.0), inertia_L=INERTIA, properties_from_mesh=False,
                     joint=JointSpec(type="pin", parent="ground", coordinates=("theta",), default_q=(0.0,))),),
        attachments=(Attachment("lig", "lig", "ground", "arm", tuple(A), (r, 0.0, 0.0), initial_length_m=rest),),
    )

    def moment(theta: float) -> float:
        B = np.array([r * np.cos(theta), r * np.sin(theta), 0.0])
        d = A - B
        T = k * max(np.linalg.norm(d) - rest, 0.0)
        F = T * d / np.linalg.norm(d)
        return float(B[0] * (F[1] - G) - B[1] * F[0])  # gravity and ligament about the pin (z)

    theta = brentq(moment, -1.0, 1.5)
    run = run_equilibrium(project)
    assert run.status == "completed", run.message
    # residual ≤ 1e-9 N·m over a stiffness of order k·r² = 1 N·m/rad: the angle to ~1e-9 rad
    assert run.series["q"][0, 0] == pytest.approx(theta, abs=1e-7)


def test_coupler_and_prescribed_rows_hold_in_equilibrium_and_dynamics():
    """ty follows tx through a coupler row and rz is prescribed as a function of time: equilibrium is
    where the potential is stationary along the coupled motion; dynamics keeps both rows."""
    slope, offset = 0.5, 0.002
    rows = (ConstraintSpec("couple", "coordinate_coupler", coordinates=("ty", "tx"),
                           function=FunctionSpec("linear", (slope, offset))),
            ConstraintSpec("turn", "prescribed_motion", coordinates=("rz",),
                           function=FunctionSpec("linear", (0.2, 0.1))))
    project = planar_project(constraints=rows)
    eq = run_equilibrium(project)
    assert eq.status == "completed", eq.message
    rz, tx, ty = eq.series["q"][0]
    assert rz == pytest.approx(0.1, abs=1e-12)  # the prescribed value at t = 0
    assert ty == pytest.approx(slope * tx + offset, abs=1e-10)
    along = dV(lambda x: potential(0.1, x, slope * x + offset), tx)
    assert abs(along) < 1e-6  # N: stationary along the only free motion
    assert abs(dV(lambda x: potential(0.1, x, ty), tx)) > 1e-3  # but not in tx alone: the coupler acts

    dyn = run_dynamics(project, t_end=0.2, report_dt=0.01, digits=8)
    assert dyn.status == "completed", dyn.message
    q, t = dyn.series["q"], dyn.series["time"]
    assert np.ptp(q[:, 1]) > 1e-4  # it moves
    np.testing.assert_allclose(q[:, 2], slope * q[:, 1] + offset, atol=1e-7)
    np.testing.assert_allclose(q[:, 0], 0.2 * t + 0.1, atol=1e-7)


def test_locked_coordinate_is_held_and_the_others_balance():
    project = planar_project(locked=(True, False, False), default_q=(0.3, 0.0, 0.0))
    eq = run_equilibrium(project)
    assert eq.status == "completed", eq.message
    rz, tx, ty = eq.series["q"][0]
    assert rz == 0.3
    assert abs(dV(lambda x: potential(rz, x, ty), tx)) < 1e-6
    assert abs(dV(lambda y: potential(rz, tx, y), ty)) < 1e-6
    assert abs(dV(lambda a: potential(a, tx, ty), rz)) > 1e-4  # rz would turn if it were free
    dyn = run_dynamics(project, t_end=0.1, report_dt=0.01, digits=8)
    assert dyn.status == "completed", dyn.message
    np.testing.assert_allclose(dyn.series["q"][:, 0], 0.3, atol=1e-8)
    assert np.ptp(dyn.series["q"][:, 2]) > 1e-5


def test_a_body_nothing_holds_fails_at_once_naming_it():
    slider = JointSpec(type="slider", parent="ground", frame_parent=Frame(euler_deg=(0.0, 0.0, 90.0)),
                       coordinates=("drop",), default_q=(0.0,))
    project = Project(info=ProjectInfo(gravity_G=(0.0, -G, 0.0)),
                      masses=(Mass("loose", mass_kg=1.0, inertia_L=INERTIA, properties_from_mesh=False, joint=slider),))
    run = run_equilibrium(project)
    assert run.status == "failed"
    assert "'loose' can translate freely (drop)" in run.message
    assert run.summary["iterations"] == 0
    held = set_coordinates(project, lock=("drop",))
    assert run_equilibrium(held).status == "completed"


def test_coordinates_are_listed_locked_and_set_with_the_bodies_moved():
    project = planar_project()
    rows = coordinate_table(project)
    assert [(r.name, r.rotational, r.locked) for r in rows] == [("rz", True, False), ("tx", False, False),
                                                               ("ty", False, False)]
    moved = set_coordinates(project, lock_all=True, free=("ty",), values={"tx": 0.01, "rz": 0.0})
    j = moved.mass("bone").joint
    assert j.locked == (True, True, False)
    assert j.default_q == (0.0, 0.01, 0.0)
    assert moved.mass("bone").position_G == pytest.approx((0.01 + COM_L[0], COM_L[1], 0.0), abs=1e-15)
    with pytest.raises(ValidationError, match="no coordinate named 'nope'"):
        set_coordinates(project, lock=("nope",))


def test_via_points_route_the_tissue_in_the_free_body_builder():
    """Free bodies (no joints): a via point on the fixed bone bends the ligament in every study."""
    via = (0.0, 0.08, 0.0)
    project = Project(
        springs=(SpringType("lig", kx=(K,)),),
        masses=(Mass("top", fixed=True, properties_from_mesh=False),
                Mass("bone", mass_kg=MASS_KG, inertia_L=INERTIA, properties_from_mesh=False,
                     position_G=(0.0, 0.0, 0.0))),
        attachments=(Attachment("L", "lig", "top", "bone", (0.05, 0.05, 0.0), (0.0, 0.0, 0.0),
                                initial_length_m=0.05, via_points=(ViaPoint("top", via),)),),
    )
    built = build_mechanical_system(project)
    loads = built.system.tissue_forces.evaluate(0.0, built.system.kinematics(built.state.y))
    expected = np.linalg.norm(np.subtract((0.05, 0.05, 0.0), via)) + np.linalg.norm(via)
    assert loads.length[0] == pytest.approx(expected, abs=1e-14)
    bad = project.with_rows("attachments", (Attachment("L", "lig", "top", "bone", (0.05, 0.05, 0.0), (0.0, 0.0, 0.0),
                                                       wraps=True, via_points=(ViaPoint("top", via),)),))
    with pytest.raises(ValidationError, match="cannot also wrap over the bone meshes"):
        build_mechanical_system(bad)


def test_conditional_via_point_follows_its_coordinate():
    """A via point active only while rz ≤ 0.2: the tissue bends through it at rz = 0.1 and runs
    straight at rz = 0.3 (the equilibrium and dynamics series report the same lengths)."""
    via = ViaPoint("ground", (0.0, 0.2, 0.0), "rz", -1.0, 0.2)
    project = planar_project(locked=(True, True, True))
    atts = list(project.attachments)
    atts[0] = Attachment("L0", "lig", "ground", "bone", GROUND_PTS[0], BODY_PTS[0], initial_length_m=REST,
                         via_points=(via,))
    for rz, bent in ((0.1, True), (0.3, False)):
        p = set_coordinates(project.with_rows("attachments", tuple(atts)), values={"rz": rz})
        run = run_equilibrium(p)
        c, s = np.cos(rz), np.sin(rz)
        b = np.array([c * BODY_PTS[0][0], s * BODY_PTS[0][0], 0.0])
        a, v = np.array(GROUND_PTS[0]), np.array(via.point_L)
        expected = np.linalg.norm(v - a) + np.linalg.norm(b - v) if bent else np.linalg.norm(b - a)
        assert run.series["tissue_length_m"][0, 0] == pytest.approx(expected, abs=1e-12)


def test_tree_dynamics_streams_its_states_to_the_live_hook():
    project = planar_project(locked=(True, False, False))
    seen = []

    def on_step(built):
        def hook(t, y, interpolate):
            mid = interpolate(np.array([t]))[0]
            seen.append((t, y.copy(), mid, built.system.split(y)[0].copy()))
        return hook

    run = run_dynamics(project, t_end=0.05, report_dt=0.01, digits=8, on_step=on_step)
    assert run.status == "completed"
    times = np.array([s[0] for s in seen])
    assert np.all(np.diff(times) > 0) and len(times) == run.summary["steps"]  # every accepted step, once
    for _, y, at_end, _ in seen:
        # the step's dense output ends on the step's solution, which projection onto the locked
        # coordinate moves by at most the accuracy (1e-8)
        np.testing.assert_allclose(at_end, y, atol=1e-7)
    k = run.poses.index("bone")
    reported = [int(np.argmin(np.abs(times - t))) for t in run.series["time"][1:]]  # steps end on report times
    np.testing.assert_allclose(times[reported], run.series["time"][1:], atol=1e-12)
    np.testing.assert_allclose(np.array([seen[i][3][k] for i in reported]), run.poses.p_G[1:, k], atol=1e-14)


def test_tree_linear_model_gives_the_pendulum_frequency():
    """A pin pendulum (no tissues): ω² = m g r / (I_pin) about the hanging pose, with the parallel-axis
    inertia I_pin = I_zz + m r²."""
    from jointmodeller.app.mobilized import build_mobilized, initial_state
    from jointmodeller.core.studies.tree_equilibrium import tree_linear_model

    r, m = 0.2, 1.5
    project = Project(info=ProjectInfo(gravity_G=(0.0, -G, 0.0)),
                      masses=(Mass("bob", mass_kg=m, com_L=(r, 0.0, 0.0), inertia_L=INERTIA, properties_from_mesh=False,
                                   joint=JointSpec(type="pin", parent="ground", coordinates=("theta",),
                                                   default_q=(-np.pi / 2,))),))
    eq = run_equilibrium(project)
    assert eq.status == "completed" and eq.series["q"][0, 0] == pytest.approx(-np.pi / 2, abs=1e-9)
    expected = np.sqrt(m * G * r / (INERTIA[2][2] + m * r * r)) / (2 * np.pi)
    # central differences with a 1e-6 step: relative error ~1e-12 in K
    assert eq.summary["natural_frequencies_hz"] == pytest.approx([expected], rel=1e-7)
    mp = build_mobilized(project)
    lin = tree_linear_model(mp.model.system, initial_state(mp), length_scale=0.1)
    assert lin.compliance()[0, 0] == pytest.approx(1.0 / (m * G * r), rel=1e-7)


@pytest.mark.slow
def test_demo_equilibrium_on_the_tree_is_the_free_body_solvers():
    """The demo elbow (cartilage contact, wrapped ligaments) runs its equilibrium on the tree (the
    ulna on a free mobilizer; contact sets frozen and regenerated in tree coordinates) — also with
    the ulna on an explicit ``free`` joint row — and lands on the pose the free-body solver
    (core.studies.equilibrium, kept as this oracle) finds. Residuals are ≤ 1e-8 N (tree) and 1e-10 N
    (free body); the softest mode (≈8 Hz on a ~1 kg forearm: k ≳ 2e3 N/m, 30 N·m/rad) turns them into
    pose differences below 1e-11 m and 1e-10 rad — 1e-9 leaves room for the contact set being
    regenerated in a different order without admitting a second equilibrium (the demo's are mm apart)."""
    import dataclasses

    from jointmodeller.app.demo import build_demo_project
    from jointmodeller.core.studies.equilibrium import solve_equilibrium
    from jointmodeller.core.studies.linear_model import assemble_linear_model, natural_modes

    project = build_demo_project()
    moving = next(m for m in project.masses if not m.fixed)
    on_joint = dataclasses.replace(project, masses=tuple(
        dataclasses.replace(m, joint=JointSpec(type="free", parent="ground")) if m is moving else m
        for m in project.masses))
    built = build_mechanical_system(project)
    oracle = solve_equilibrium(built.system, built.state)
    assert oracle.converged, oracle.message
    kin = built.system.kinematics(oracle.state.y)
    for variant in (project, on_joint):
        tree = run_equilibrium(variant)
        assert tree.status == "completed", tree.message
        assert "frozen contact sets" in tree.summary["method"]
        np.testing.assert_allclose(tree.poses.p_G[-1], kin.p_G, rtol=0, atol=1e-9)
        np.testing.assert_allclose(rotations_GB(tree.poses)[-1], kin.R_GB, rtol=0, atol=1e-9)
    # the linear models (tree: central differences in joint coordinates; free body: tissues analytic,
    # contact on its frozen set) agree on the softest mode, which symmetrising K barely touches
    modes = natural_modes(assemble_linear_model(built.system, oracle.state))
    assert tree.summary["natural_frequencies_hz"][0] == pytest.approx(modes.frequency_hz[0], rel=0.02)


@pytest.mark.parametrize("method", ["auto", "DOPRI5"])
def test_an_all_free_project_moves_alike_on_the_free_body_path_and_on_explicit_free_joints(method):
    """A bone hung from two ligaments, released off its equilibrium: as a free mass (the MJM free-body
    path) and as a mass on an explicit ``free`` joint row (the tree, quaternion coordinates) it
    follows the same trajectory. Both integrators control the local error to α = 1e-12 (relative,
    with the same absolute floor); over ~50 steps of a smooth motion of ~5 cm amplitude the global
    errors stay below N·α·max|y| ≈ 50·1e-12·0.1 m = 5e-12 m (and 5e-11 in the unit-sized rotation
    entries) each, so 1e-10 bounds their difference with room for error growth along the swing. The
    free-body path runs DOP853 ("auto") or the tree's own DOPRI5 with projection: one simulate."""
    import dataclasses

    free = dataclasses.replace(planar_project(), masses=(Mass(
        "bone", mass_kg=MASS_KG, com_L=COM_L, inertia_L=INERTIA, properties_from_mesh=False,
        position_G=(0.01, -0.01, 0.005), euler_deg=(5.0, -3.0, 10.0)),))
    on_joint = dataclasses.replace(free, masses=(dataclasses.replace(
        free.masses[0], joint=JointSpec(type="free", parent="ground")),))
    a = run_dynamics(free, t_end=0.05, report_dt=0.01, digits=12, method=method)
    b = run_dynamics(on_joint, t_end=0.05, report_dt=0.01, digits=12)
    assert a.parameters["method"] == ("DOP853" if method == "auto" else "DOPRI5")
    assert a.status == b.status == "completed", (a.message, b.message)
    assert b.parameters.get("system") == "tree"
    moved = np.abs(a.poses.p_G[-1] - a.poses.p_G[0]).max()
    assert moved > 1e-3  # the bone really swings
    np.testing.assert_allclose(b.poses.p_G, a.poses.p_G, rtol=0, atol=1e-10)
    np.testing.assert_allclose(rotations_GB(b.poses), rotations_GB(a.poses), rtol=0, atol=1e-10)


def test_muscle_paths_runs_from_the_registry_with_lengths_and_moment_arms_by_hand():
    """The registry's muscle-paths study on the planar bone: each ligament's length at rz equals the
    hand-written distance, and its moment arm −dL/drz the central difference of that distance
    (h = 1e-6 rad: error ~h²·L''' ≈ 1e-14 m, far below the 1e-9 check)."""
    from jointmodeller.app.registry import study, study_names

    project = planar_project(default_q=(0.0, 0.0, 0.0))
    assert "muscle_paths" in study_names(project)
    assert "muscle_paths" not in study_names(Project(info=ProjectInfo(title="empty")))
    run = study("muscle_paths").run(project, start=-30.0, stop=30.0, step=10.0)
    assert run.status == "completed", run.message
    rz = np.radians(run.series["rz_deg"])

    def length(angle: float, j: int) -> float:
        c, s = np.cos(angle), np.sin(angle)
        R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        return float(np.linalg.norm(R @ np.array(BODY_PTS[j]) - np.array(GROUND_PTS[j])))

    for j in range(2):
        hand = [length(a, j) for a in rz]
        arm = [-dV(lambda x, j=j: length(x, j), a) for a in rz]
        np.testing.assert_allclose(run.series["length_m"][:, j], hand, rtol=0, atol=1e-12)
        np.testing.assert_allclose(run.series["moment_arm_m"][:, j], arm, rtol=0, atol=1e-9)


@pytest.mark.slow
def test_a_bone_released_far_from_hanging_settles_by_damped_dynamics_then_newton():
    """A bone 20 cm below a fixed one on a single stiff ligament, released turned and off to the side
    (the ligament pulls with ~2e4 N): Newton alone fails that far from equilibrium; the study settles
    it by kinetic damping and finishes with Newton. At equilibrium the ligament carries the weight
    (tension m·g) and the centre of mass hangs straight below the ligament's fixed end — the pendulum's
    lateral stiffness m·g/ℓ ≈ 25 N/m turns the 1e-8 N tolerance into < 1e-9 m, checked to 1e-7 m."""
    mass = 0.5
    inertia = ((2e-3, 0.0, 0.0), (0.0, 3e-3, 0.0), (0.0, 0.0, 4e-3))
    project = Project(
        info=ProjectInfo(title="released", gravity_G=(0.0, 0.0, -G)),
        springs=(SpringType("ligament", kx=(1e5,), tension_only=True),),
        masses=(Mass("a", fixed=True, properties_from_mesh=False, mass_kg=1.0, inertia_L=inertia),
                Mass("b", mass_kg=mass, inertia_L=inertia, properties_from_mesh=False,
                     position_G=(0.03, 0.01, -0.2), euler_deg=(10.0, 20.0, 5.0))),
        attachments=(Attachment("L", "ligament", "a", "b", (0.0, 0.0, -0.05), (0.01, 0.0, 0.1),
                                initial_length_m=0.04),))
    run = run_equilibrium(project)
    assert run.status == "completed", run.message
    assert "damped dynamics" in run.message
    com = run.poses.p_G[-1][1]
    np.testing.assert_allclose(com[:2], [0.0, 0.0], atol=1e-7)
    assert com[2] < -0.05
    assert run.series["tissue_force_N"][-1][0] == pytest.approx(mass * G, rel=1e-6)
