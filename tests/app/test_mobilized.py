"""The mobilizer backend on a project: the same physics as the MJM backend where both apply, joints
that hold their manifold, constraint rows that hold, and tissue forces acting through mobilizers."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.app.run_poses import mesh_frames, rotations_GB
from jointmodeller.app.studies import run_dynamics
from jointmodeller.app.tree_studies import run_dynamics_mobilized
from jointmodeller.model import (
    Attachment,
    ConstraintSpec,
    Force,
    Frame,
    JointSpec,
    Mass,
    Project,
    ProjectInfo,
    SpringType,
)

INERTIA = ((2e-4, 1e-5, 0.0), (1e-5, 3e-4, 2e-5), (0.0, 2e-5, 4e-4))


def two_bone_project(joint: JointSpec | None = None, constraints=()) -> Project:
    """A fixed bone and a moving bone tied by three ligaments, pushed by a sideways load."""
    return Project(
        info=ProjectInfo(title="two bones", gravity_G=(0.0, 0.0, -9.81)),
        springs=(SpringType("lig", kx=(4.0e3, 0.0, 2.0e6), cx=0.5, tension_only=True),),
        masses=(Mass("upper", mass_kg=0.5, properties_from_mesh=False, fixed=True, position_G=(0.0, 0.0, 0.05)),
                Mass("lower", mass_kg=0.3, com_L=(0.001, -0.002, 0.003), inertia_L=INERTIA,
                     properties_from_mesh=False, position_G=(0.001, -0.002, 0.003),
                     euler_deg=(5.0, -3.0, 10.0), joint=joint)),
        attachments=tuple(Attachment(f"L{i}", "lig", "upper", "lower", (0.02 * np.cos(a), 0.02 * np.sin(a), 0.0),
                                     (0.02 * np.cos(a), 0.02 * np.sin(a), 0.0), initial_length_m=0.049)
                          for i, a in enumerate((0.3, 2.4, 4.4))),
        forces=(Force("push", "lower", (0.0, 0.0, -0.05), (1.0, 0.3, 0.0), 2.0),),
        constraints=tuple(constraints),
    )


@pytest.mark.slow
def test_free_body_moves_the_same_on_both_backends():
    project = two_bone_project()
    mjm = run_dynamics(project, t_end=0.3, report_dt=0.01, digits=9)
    mob = run_dynamics_mobilized(project, t_end=0.3, report_dt=0.01, digits=9)
    assert mjm.status == mob.status == "completed"
    np.testing.assert_allclose(mob.series["time"], mjm.series["time"], atol=1e-12)
    moved = np.abs(mjm.poses.p_G[-1, 1] - mjm.poses.p_G[0, 1]).max()
    assert moved > 1e-3  # the body really moves
    np.testing.assert_allclose(mob.poses.p_G, mjm.poses.p_G, atol=1e-6 * max(1.0, moved / 1e-3))
    np.testing.assert_allclose(rotations_GB(mob.poses), rotations_GB(mjm.poses), atol=1e-5)
    np.testing.assert_allclose(mob.series["tissue_force_N"], mjm.series["tissue_force_N"], rtol=1e-4, atol=1e-4)


def test_pin_joint_keeps_its_axis_and_tissues_act_through_it():
    pin = JointSpec(type="pin", parent="upper", frame_parent=Frame((0.0, 0.0, -0.05)),
                    frame_child=Frame((0.0, 0.0, 0.0)), coordinates=("flex",), default_q=(0.0,))
    project = two_bone_project(pin)
    twist = Force("twist", "lower", (0.02, 0.0, 0.0), (0.0, 1.0, 0.0), 1.0)  # a moment about the pin
    project = project.with_rows("forces", project.forces + (twist,))
    run = run_dynamics_mobilized(project, t_end=0.3, report_dt=0.01, digits=9)
    assert run.status == "completed"
    q = run.series["q"][:, 0]
    assert np.ptp(q) > 1e-3  # the load and ligaments turn the pin
    # the child frame origin sits on the pin axis (z through the parent frame origin): its x, y, z
    # position in G is fixed because pin axis = z and the origin is on the axis
    origin = mesh_frames(run.poses)[1][:, 1]
    np.testing.assert_allclose(origin, np.broadcast_to(origin[0], origin.shape), atol=1e-9)
    # orientation changes only about z
    R = mesh_frames(run.poses)[0][:, 1]
    np.testing.assert_allclose(R[:, 2, 2], 1.0, atol=1e-9)


@pytest.mark.slow
def test_ball_constraint_row_holds_a_point():
    ball = ConstraintSpec("hold", "ball", bodies=("ground", "lower"), points_L=((0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    project = two_bone_project(constraints=(ball,))
    run = run_dynamics_mobilized(project, t_end=0.2, report_dt=0.01, digits=8)
    assert run.status == "completed"
    R = mesh_frames(run.poses)[0][:, 1]
    origin = mesh_frames(run.poses)[1][:, 1]
    held = origin  # the point (0,0,0) of lower's L
    np.testing.assert_allclose(held, np.broadcast_to([0.0, 0.0, 0.0], held.shape), atol=1e-6)
    assert np.abs(R[-1] - R[0]).max() > 1e-4  # still free to turn about the point
    assert run.summary["max_constraint_error"] < 1e-6


def test_unknown_function_kind_in_a_constraint_is_reported():
    from jointmodeller.model import FunctionSpec, ValidationError
    bad = ConstraintSpec("c", "prescribed_motion", coordinates=("nope",), function=FunctionSpec("linear", (1.0, 0.0)))
    with pytest.raises(ValidationError, match="Constraints › c"):
        run_dynamics_mobilized(two_bone_project(constraints=(bad,)), t_end=0.01)


def test_a_failed_equilibrium_names_the_unbalanced_body_and_direction():
    """The message of an equilibrium that fails names the body whose coordinate is out of balance,
    the amount and the direction in ground: the slider's axis as its turned joint frames place it."""
    from jointmodeller.app.mobilized import build_mobilized, initial_state
    from jointmodeller.app.tree_statics import equilibrium_solver, unbalanced_description

    slide = JointSpec(type="slider", parent="upper", frame_parent=Frame((0.0, 0.0, -0.05), (0.0, 0.0, 90.0)),
                      frame_child=Frame((0.0, 0.0, 0.0), (0.0, 0.0, 90.0)), coordinates=("drawer",),
                      default_q=(0.0,))
    project = two_bone_project(slide)
    mp = build_mobilized(project)
    state = initial_state(mp)
    k = mp.model.uindex["drawer"]
    Jw, Jv = mp.model.system.jacobians(mp.model.system.kinematics(state.q))
    axis = Jv[mp.model.body["lower"], :, k] / np.linalg.norm(Jv[mp.model.body["lower"], :, k])
    r = np.zeros(mp.model.system.nu)
    r[k] = -3.95
    text = unbalanced_description(mp, state.q, r)
    assert text.startswith("lower: 3.95 N along") and "(coordinate drawer)" in text
    shown = np.array([float(x) for x in text.split("(")[1].split(")")[0].split(",")])
    np.testing.assert_allclose(shown, -axis, atol=0.006)  # the force pushes against +u: along −axis
    # an equilibrium cut short reports it in its message
    res = equilibrium_solver(mp, max_iterations=1, settle=False)(state, 1e-12, 1e-12)
    assert not res.converged and "most unbalanced: lower:" in res.message and "(coordinate drawer)" in res.message


def test_a_live_equilibrium_reports_its_intermediate_poses():
    """The GUI's equilibrium (option live) reports poses the viewport draws, the last one the
    equilibrium the run stores."""
    from jointmodeller.app.live import study_function
    from jointmodeller.render.frames import frame_from_sample, frames_from_run

    pin = JointSpec(type="pin", parent="upper", frame_parent=Frame((0.0, 0.0, -0.05)),
                    frame_child=Frame((0.0, 0.0, 0.0)), coordinates=("flex",), default_q=(0.3,))
    project = two_bone_project(pin)
    samples = []
    run = study_function("equilibrium", project)(lambda f, *s: samples.append(s[0]) if s else None, None)
    assert run.status == "completed" and samples
    last = frame_from_sample(project, samples[-1]).poses["lower"]
    stored = frames_from_run(project, run).frame(0).poses["lower"]
    np.testing.assert_allclose(last[0], stored[0], atol=1e-12)
    np.testing.assert_allclose(last[1], stored[1], atol=1e-12)


def test_a_failed_contact_equilibrium_is_retried_by_continuation_in_contact_stiffness(monkeypatch):
    """When the contact equilibrium fails at the material's stiffness, it is solved again at
    ×0.1, ×0.3 and ×1 of it, each from the last one's pose; the built contact pairs are never changed."""
    import jointmodeller.app.mobilized as mob
    import jointmodeller.app.tree_statics as statics
    from jointmodeller.app.demo import build_demo_project
    from jointmodeller.core.state import State
    from jointmodeller.core.studies.tree_equilibrium import TreeEquilibriumResult

    mp = mob.build_mobilized(build_demo_project())
    pairs = [e for e in mp.bridge.elements if hasattr(e, "stiffness_scale")]
    assert pairs
    calls = []

    def fake(mp_, state, **kw):
        scale = kw["contact_scale"]
        assert all(p.stiffness_scale == 1.0 for p in pairs)  # the scale is a parameter, not a mutation
        calls.append((scale, np.array(state.q)))
        ok = len(calls) > 1  # the first, at full stiffness, fails
        q = np.array(state.q) + 0.001 * len(calls)
        return TreeEquilibriumResult(State(state.t, q, np.zeros_like(state.u)), 0.0 if ok else 1.0, 0.0, ok,
                                     1, 1, "equilibrium found" if ok else "no equilibrium within tolerance", [],
                                     np.zeros(len(state.u)))

    monkeypatch.setattr(statics, "contact_equilibrium", fake)
    state = mob.initial_state(mp)
    res = statics.equilibrium_solver(mp)(state, 1e-8, 1e-9)
    assert [c[0] for c in calls] == [1.0, *statics.CONTACT_CONTINUATION]
    np.testing.assert_allclose(calls[2][1], calls[1][1] + 0.002)  # each scale starts where the last ended
    np.testing.assert_allclose(calls[3][1], calls[2][1] + 0.003)
    assert res.converged and "continuation in contact stiffness" in res.message
    assert all(p.stiffness_scale == 1.0 for p in pairs)


def test_contact_stiffness_scale_scales_both_laws():
    import trimesh

    from jointmodeller.core.mechanics.contact import ContactPair
    from tests.core.mechanics.contact.helpers import kinematics, plane_mesh

    sphere = trimesh.creation.icosphere(3, 0.02)
    pv, pf = plane_mesh(0.06, 61)
    for method in ("foundation", "mjm"):
        pair = ContactPair(0, 1, sphere.vertices, sphere.faces, pv, pf, 0.002, method=method)
        kin = kinematics([[0.0, 0.0, 0.0195], [0.0, 0.0, 0.0]])
        full = pair.evaluate(0.0, kin).total_force_G
        soft = pair.scaled(0.3)
        np.testing.assert_allclose(soft.evaluate(0.0, kin).total_force_G, 0.3 * full, rtol=1e-12)
        np.testing.assert_allclose(pair.evaluate(0.0, kin).total_force_G, full, rtol=1e-12)  # the original holds
