"""Specs -> MJM system (frames, rest lengths, loads), the study use cases, and the demo elbow."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.app.build import build_mechanical_system
from jointmodeller.app.run_poses import euler_deg, mesh_frames
from jointmodeller.app.studies import run_dynamics, run_equilibrium
from jointmodeller.core.mechanics.tissues import blankevoort_force
from jointmodeller.core.spatial_math import euler_to_matrix, principal_axes
from jointmodeller.model.errors import ValidationError
from jointmodeller.model.specs import (
    Attachment,
    Force,
    LoadProfile,
    Mass,
    Project,
    ProjectInfo,
    SpringType,
)

INERTIA_L = ((4e-3, 2e-4, -1e-4), (2e-4, 3.5e-3, 3e-4), (-1e-4, 3e-4, 5e-4))


def synthetic_project(load_N: float = 1.5, bushing: bool = True) -> Project:
    """A fixed 'humerus' and a free, turned 'ulna' whose mesh frame L is not its principal frame."""
    ang = np.linspace(0, 2 * np.pi, 5, endpoint=False)
    up = [(0.012 * np.cos(a), 0.012 * np.sin(a), -0.13) for a in ang]  # on the humerus, in its L
    ulna_euler = (10.0, -20.0, 35.0)
    R_GL = euler_to_matrix(np.radians([ulna_euler]), "ZXY")[0]
    com_L = np.array([0.001, -0.002, 0.05])
    position_G = np.array([0.0, 0.0, -0.1])
    # insertions: points 16 mm below the humerus points, expressed in the ulna's L
    ins_G = [np.array([0.015 * np.cos(a + 0.3), 0.015 * np.sin(a + 0.3), 0.15 - 0.13 - 0.032]) for a in ang]
    ins_L = [tuple(R_GL.T @ (p - position_G) + com_L) for p in ins_G]
    springs = [SpringType("ligament", kx=(2.0e4, 0.0, 3.0e7), cx=5.0, tension_only=True)]
    atts = [Attachment(f"lig {i}", "ligament", "humerus", "ulna", up[i], ins_L[i], initial_length_m=0.0195)
            for i in range(5)]
    if bushing:
        springs.append(SpringType("capsule", kx=(800.0,), ky=(600.0,), kz=(900.0,), cx=1.0, cy=1.0, cz=1.0,
                                  model="bushing", tension_only=False))
        atts.append(Attachment("capsule", "capsule", "humerus", "ulna", (0.0, 0.0, -0.15),
                               tuple(R_GL.T @ (np.array([0.0, 0.0, -0.002]) - position_G) + com_L)))
    masses = (
        Mass("humerus", mass_kg=2.0, com_L=(0.0, 0.0, 0.0), position_G=(0.0, 0.0, 0.15), fixed=True),
        Mass("ulna", mass_kg=0.6, com_L=tuple(com_L), inertia_L=INERTIA_L, position_G=tuple(position_G),
             euler_deg=ulna_euler, euler_sequence="ZXY"),
    )
    forces = (Force("hand", "ulna", tuple(com_L + R_GL.T @ np.array([0.0, 0.0, -0.1])), (1.0, 0.5, 0.0), load_N,
                    LoadProfile("ramp", ramp_time_s=0.2)),)
    return Project(info=ProjectInfo(gravity_G=(0.0, 0.0, -9.81)), springs=tuple(springs), masses=masses,
                   attachments=tuple(atts), forces=forces)


def test_build_places_points_and_frames_as_the_specs_say():
    project = synthetic_project()
    system, state = build_mechanical_system(project)
    kin = system.kinematics(state.y)
    ulna = project.masses[1]
    R_GL = euler_to_matrix(np.radians([ulna.euler_deg]), ulna.euler_sequence)[0]
    # an attachment point on the ulna lands where L -> G says, independently of B
    a = project.attachments[0]
    expected = R_GL @ (np.asarray(a.point_b_L) - np.asarray(ulna.com_L)) + np.asarray(ulna.position_G)
    got = kin.points_G(np.array([1]), system.tissues.r_b_B[:1])[0]
    assert np.allclose(got, expected, atol=1e-14)
    # B is on principal axes: the body-frame inertia is diagonal and equals R_BL I_L R_BLᵀ
    w, R_BL = principal_axes(INERTIA_L)
    assert np.allclose(R_BL @ np.asarray(INERTIA_L) @ R_BL.T, np.diag(w), atol=1e-15)
    assert np.allclose(system.bodies.inertia_B[1], w)
    assert np.isclose(np.linalg.det(system.bodies.R_BL[1]), 1.0)
    # the bushing starts undeflected (rest vector = initial relative position) and loads ramp
    loads = system.tissue_loads(state)
    assert np.allclose(loads.deflection_S[5], 0.0, atol=1e-15)
    assert np.allclose(system.loads.forces_at(0.1), 0.5 * system.loads.forces_at(0.2))
    assert np.allclose(np.linalg.norm(system.loads.forces_at(1.0)), 1.5)


def test_open_rest_length_is_the_initial_length():
    project = synthetic_project()
    from dataclasses import replace

    atts = tuple(replace(a, initial_length_m=None) for a in project.attachments)
    system, state = build_mechanical_system(replace(project, attachments=atts))
    loads = system.tissue_loads(state)
    assert np.allclose(loads.elongation[:5], 0.0, atol=1e-15)
    assert np.allclose(loads.tension, 0.0, atol=1e-12)


def test_bad_references_are_reported_with_their_rows():
    project = synthetic_project()
    from dataclasses import replace

    bad = replace(project.attachments[0], spring="nope", body_b="radius")
    with pytest.raises(ValidationError) as err:
        build_mechanical_system(replace(project, attachments=(bad, *project.attachments[1:])))
    text = str(err.value)
    assert "lig 0" in text and "nope" in text


def test_run_equilibrium_record_meets_the_residual_targets():
    run = run_equilibrium(synthetic_project())
    assert run.status == "completed", run.message
    assert run.summary["residual_force_N"] <= 1e-8 and run.summary["residual_moment_Nm"] <= 1e-9
    assert run.poses.p_G.shape == (1, 2, 3)
    assert run.series["tissue_force_N"].shape == (1, 6)
    assert run.labels["tissue_force_N"][0] == "lig 0" and run.poses.bodies == ("humerus", "ulna")
    assert run.summary["stable"]
    # mesh pose series reproduce the body pose: COM = origin + R_GL com_L
    com_L = np.array(synthetic_project().masses[1].com_L)
    com = mesh_frames(run.poses)[1][0, 1] + mesh_frames(run.poses)[0][0, 1] @ com_L
    assert np.allclose(com, run.poses.p_G[0, 1], atol=1e-15)
    strain = run.series["tissue_strain"][0, :5]
    assert np.allclose(strain, run.series["tissue_length_m"][0, :5] / 0.0195 - 1.0)


def test_run_dynamics_record_and_progress():
    seen = []
    run = run_dynamics(synthetic_project(), t_end=0.05, report_dt=0.005, digits=6, progress=seen.append)
    assert run.status == "completed", run.message
    assert np.allclose(run.series["time"], np.arange(11) * 0.005)
    assert run.poses.q_GB.shape == (11, 2, 4)
    assert euler_deg(run.poses, ["xyz", "ZXY"])[0, 1] == pytest.approx([10.0, -20.0, 35.0], abs=1e-9)
    assert seen and seen[-1] == pytest.approx(1.0)
    assert np.all(run.poses.p_G[:, 0] == run.poses.p_G[0, 0])  # the fixed bone stays


def test_blankevoort_law_and_its_use_in_the_tissue_element():
    # OpenSim's Blankevoort1991Ligament: toe k ε²/(2 ε_t) up to ε_t, then k (ε − ε_t/2)
    k, L0, el = 5000.0, 0.02, 0.06
    x = L0 * np.array([-0.01, 0.03, 0.12, 0.2])
    f = blankevoort_force(x, np.full(4, L0), np.full(4, k), np.full(4, el))
    assert np.allclose(f, [0.0, k * 0.03**2 / (2 * el), k * (0.12 - el / 2), k * (0.2 - el / 2)])
    # continuity of value and slope (k) at ε_t
    h = 1e-7
    e = el + np.array([-h, 0.0, h])
    v = blankevoort_force(e * L0, np.full(3, L0), np.full(3, k), np.full(3, el))
    assert abs(v[1] - k * el / 2) < 1e-9 and abs((v[2] - v[0]) / (2 * h) - k) < 1e-3 * k
    project = synthetic_project(bushing=False)
    from dataclasses import replace

    springs = (replace(project.springs[0], law="blankevoort", kx=(k,), transition_strain=el),)
    system, state = build_mechanical_system(replace(project, springs=springs))
    loads = system.tissue_loads(state)
    expect = blankevoort_force(loads.elongation, system.tissues.rest_length, np.full(5, k), np.full(5, el))
    assert np.allclose(loads.tension, expect) and np.any(expect > 0)


def _demo_project():
    demo = pytest.importorskip("jointmodeller.app.demo")
    return demo.build_demo_project()


def test_demo_elbow_equilibrium_residual_straight_tissues_no_contact():
    project = _demo_project()
    run = run_equilibrium(project, contact=False, wrapping=False)
    assert run.status == "completed", run.message
    assert run.summary["residual_force_N"] <= 1e-8
    assert run.summary["residual_moment_Nm"] <= 1e-9
    assert np.any(run.series["tissue_force_N"][0] > 10.0)  # the 100 N valgus load is carried


def test_run_dynamics_time_limit_keeps_samples():
    run = run_dynamics(synthetic_project(), t_end=50.0, report_dt=0.001, digits=8, max_wall_s=0.5)
    assert run.status == "failed" and "wall-time limit" in run.message  # a limit is not the user's stop
    assert 1 < len(run.series["time"]) < 50001
    assert run.poses.p_G.shape[0] == len(run.series["time"])


def test_auto_integrator_for_contact_is_l_stable_at_loose_tolerances_and_bdf_at_tight_ones():
    """With contact, "auto" takes the L-stable method up to L_STABLE_MAX_DIGITS (where BDF's steps grow
    into its unstable sliver: test_the_stiff_contact_integrator_lets_a_lightly_damped_stiff_mode_die_out)
    and BDF beyond; without contact DOP853; a named method as named; a short run records the choice."""
    from dataclasses import replace

    from jointmodeller.app.demo import build_demo_project
    from jointmodeller.app.studies import L_STABLE_MAX_DIGITS, choose_method
    from jointmodeller.core.multibody.integrate import STIFF_CONTACT_METHOD

    demo = build_demo_project()
    assert demo.contacts
    assert choose_method(demo, "auto", L_STABLE_MAX_DIGITS) == STIFF_CONTACT_METHOD
    assert choose_method(demo, "auto", L_STABLE_MAX_DIGITS + 1) == "BDF"
    assert choose_method(replace(demo, contacts=()), "auto", 4) == "DOP853"
    assert choose_method(demo, "LSODA", 4) == "LSODA"
    run = run_dynamics(demo, t_end=0.002, report_dt=0.001, digits=4)
    assert run.status == "completed" and run.parameters["method"] == STIFF_CONTACT_METHOD
