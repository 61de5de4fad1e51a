"""The laxity sweep on a joint (multibody tree, flexion held by the joint's own coordinate) against
the free-body sweep (flexion held in the JCS) on the same bones and ligaments: a six-coordinate
custom joint whose rotation sequence is Grood & Suntay's (flexion about the fixed bone's axis, then
the floating axis, then the moving long axis) allows exactly the poses the free-body sweep allows,
so both engines must find the same equilibria."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from jointmodeller.app.laxity import flexion_coordinate, run_laxity
from jointmodeller.model import (
    Attachment,
    Experiment,
    Frame,
    FunctionSpec,
    JointSpec,
    Mass,
    Project,
    ProjectInfo,
    SpringType,
)

CENTRE = (0.0, 0.0, 0.0)
INERTIA = ((2e-4, 0.0, 0.0), (0.0, 3e-4, 0.0), (0.0, 0.0, 4e-4))
NAMES = ("flex", "add", "rot", "tx", "ty", "tz")
MAX_LOAD = {"anterior_posterior": 20.0, "varus_valgus": 5.0, "internal_external": 0.05}  # N, N, N·m


def knee_like(joint: JointSpec | None, load_kind: str) -> Project:
    """A fixed 'femur' above a 'tibia' (long axes along y): four crossing and two collateral
    ligaments with a preload (six, so every motion but flexion is held by a ligament)."""
    ends = [((0.015, 0.02, 0.01), (-0.012, -0.02, 0.008)), ((-0.015, 0.02, 0.01), (0.012, -0.02, 0.008)),
            ((0.014, 0.02, -0.012), (0.01, -0.022, -0.01)), ((-0.014, 0.02, -0.012), (-0.01, -0.022, -0.01)),
            ((0.025, 0.015, 0.004), (0.022, -0.025, -0.006)), ((-0.025, 0.015, -0.004), (-0.022, -0.025, 0.006))]
    atts = tuple(Attachment(f"lig{i}", "lig", "femur", "tibia", a, b,
                            initial_length_m=0.97 * float(np.linalg.norm(np.subtract(a, b))))
                 for i, (a, b) in enumerate(ends))
    axes = (("origin_fixed", CENTRE), ("flexion_axis_fixed", (0.0, 0.0, 1.0)), ("long_axis_fixed", (0.0, 1.0, 0.0)),
            ("origin_moving", CENTRE), ("long_axis_moving", (0.0, 1.0, 0.0)))
    measure = {"anterior_posterior": "anterior_posterior_mm", "varus_valgus": "varus_valgus_deg",
               "internal_external": "internal_external_deg"}[load_kind]
    exp = Experiment("lax", "femur", "tibia", load_kind=load_kind, max_load=MAX_LOAD[load_kind], steps=4,
                     flexion_deg=0.0, measure=measure, lever_m=0.05, axes=axes)
    return Project(
        info=ProjectInfo(gravity_G=(0.0, -9.81, 0.0)),
        springs=(SpringType("lig", kx=(3.0e4,), tension_only=False),),
        masses=(Mass("femur", fixed=True, properties_from_mesh=False, mass_kg=1.0, com_L=(0.0, 0.1, 0.0),
                     position_G=(0.0, 0.1, 0.0)),
                Mass("tibia", mass_kg=0.4, com_L=(0.0, -0.08, 0.0), inertia_L=INERTIA, properties_from_mesh=False,
                     position_G=(0.0, -0.08, 0.0), joint=joint)),
        attachments=atts, experiments=(exp,),
    )


def gs_custom_joint() -> JointSpec:
    """Six coordinates: rotations about z (flexion), then x, then y; translations along x, y, z."""
    axes = {"rotation1": (0, 0, 1), "rotation2": (1, 0, 0), "rotation3": (0, 1, 0)}
    params = tuple((f"{r}_{c}", float(v)) for r, a in axes.items() for c, v in zip("xyz", a))
    fns = tuple(FunctionSpec("linear", (1.0, 0.0), coordinates=(n,)) for n in NAMES)
    return JointSpec(type="custom", parent="femur", frame_parent=Frame(CENTRE), frame_child=Frame(CENTRE),
                     coordinates=NAMES, default_q=(0.0,) * 6, parameters=params, functions=fns)


@pytest.mark.parametrize("load_kind", ["anterior_posterior", "varus_valgus", "internal_external"])
def test_tree_sweep_matches_the_free_body_sweep(load_kind):
    free = run_laxity(knee_like(None, load_kind))
    tree_project = knee_like(gs_custom_joint(), load_kind)
    assert flexion_coordinate(tree_project, tree_project.experiments[0]) == "flex"
    tree = run_laxity(tree_project)
    assert free.status == tree.status == "completed", (free.message, tree.message)
    assert tree.parameters["flexion_coordinate"] == "flex"
    assert np.ptp(free.series["measure"]) > 0.05  # the load really moves the joint
    # both solve to 1e-6 N (residual / length scale) against ligament stiffness of ~1e4 N/m and
    # more: poses agree to ~1e-9 m; 1e-6 (mm or deg) leaves room for the two solvers' paths
    np.testing.assert_allclose(tree.series["measure"], free.series["measure"], atol=1e-6)
    jcs_scale = np.array([1.0, 1.0, 1.0, 1e3, 1e3, 1e3])  # rad and mm
    np.testing.assert_allclose(tree.series["jcs"] * jcs_scale, free.series["jcs"] * jcs_scale, atol=1e-6)
    np.testing.assert_allclose(tree.series["tissue_tension_N"], free.series["tissue_tension_N"], atol=1e-5)


def test_the_held_coordinate_is_set_to_the_experiment_flexion():
    project = knee_like(gs_custom_joint(), "anterior_posterior")
    exp = replace(project.experiments[0], flexion_deg=20.0)
    run = run_laxity(project.with_rows("experiments", (exp,)))
    assert run.status == "completed", run.message
    # JCS flexion of the loaded poses relative to the unloaded one: held (the joint's first rotation)
    np.testing.assert_allclose(run.series["jcs"][:, 0], 0.0, atol=1e-12)
    assert run.summary["flexion_deg_unloaded"] == pytest.approx(20.0, abs=1e-9)
    bad = replace(exp, flexion_coordinate="tx")
    failed = run_laxity(project.with_rows("experiments", (replace(bad, flexion_coordinate="nope"),)))
    assert failed.status == "failed" and "is not a coordinate" in failed.message
    failed = run_laxity(project.with_rows("experiments", (bad,)))
    assert failed.status == "failed" and "does not turn the moving body" in failed.message


MIRROR = np.diag([1.0, 1.0, -1.0])  # the sagittal plane z = 0: a right knee's left twin


def mirrored(project: Project) -> Project:
    """The mirror image of a knee_like project in z = 0: every point mirrored, the custom joint's
    rotation axes mirrored as axial vectors (−M·a) and its translation axes as vectors (M·a)."""
    def m(v):
        return tuple(float(x) for x in MIRROR @ np.asarray(v, float))

    def joint(j: JointSpec) -> JointSpec:
        params = dict(j.parameters)
        for r, default in (("rotation1", (0, 0, 1)), ("rotation2", (1, 0, 0)), ("rotation3", (0, 1, 0))):
            a = np.array([params.get(f"{r}_{c}", d) for c, d in zip("xyz", default)], float)
            params.update({f"{r}_{c}": float(v) for c, v in zip("xyz", -MIRROR @ a)})
        for t, default in (("translation1", (1, 0, 0)), ("translation2", (0, 1, 0)), ("translation3", (0, 0, 1))):
            a = np.array([params.get(f"{t}_{c}", d) for c, d in zip("xyz", default)], float)
            params.update({f"{t}_{c}": float(v) for c, v in zip("xyz", MIRROR @ a)})
        return replace(j, parameters=tuple(params.items()))

    masses = tuple(replace(x, com_L=m(x.com_L), position_G=m(x.position_G),
                           joint=None if x.joint is None else joint(x.joint)) for x in project.masses)
    atts = tuple(replace(a, point_a_L=m(a.point_a_L), point_b_L=m(a.point_b_L)) for a in project.attachments)
    return replace(project, masses=masses, attachments=atts)


@pytest.mark.parametrize("load_kind", ["anterior_posterior", "varus_valgus", "internal_external"])
def test_a_mirrored_knee_gives_mirrored_answers(load_kind):
    """JCS from the joint (no axes given) on a knee and on its mirror image: flexion, anterior–posterior
    and distraction are equal; varus–valgus, internal–external and medial–lateral change sign, and a
    force along e1 or a torque about e3 (axial vectors under the mirror) is the mirror of the opposite
    load on the other side (app.laxity_frames docstring)."""
    right = knee_like(gs_custom_joint(), load_kind)
    right = right.with_rows("experiments", (replace(right.experiments[0], axes=(), flexion_deg=15.0),))
    left = mirrored(right)
    runs = [run_laxity(p) for p in (right, left)]
    for run in runs:
        assert run.status == "completed", run.message
        assert run.summary["flexion_deg_unloaded"] == pytest.approx(15.0, abs=1e-9)
    (r, l) = runs
    loads = r.series["load"]
    np.testing.assert_array_equal(loads, l.series["load"])
    if load_kind == "anterior_posterior":  # a force along e2 (in the mirror plane) mirrors itself
        other = np.arange(loads.size)
    else:  # the same load on the left is the mirror of the opposite load on the right
        other = np.array([int(np.flatnonzero(loads == -x)[0]) for x in loads])
    sign = np.array([1.0, -1.0, -1.0, -1.0, 1.0, 1.0])  # flexion, vv, ie, ml, ap, distraction
    assert np.ptp(r.series["measure"]) > 0.02  # the load moves the joint (mm or deg), far beyond 1e-6
    jcs_scale = np.array([1.0, 1.0, 1.0, 1e3, 1e3, 1e3])  # rad and mm
    # both solve to 1e-6 N against stiffnesses ≥ 1e4 N/m (as above): 1e-6 rad or mm leaves room
    np.testing.assert_allclose(l.series["jcs"] * jcs_scale, (r.series["jcs"][other] * sign) * jcs_scale, atol=1e-6)
    np.testing.assert_allclose(l.series["tissue_tension_N"], r.series["tissue_tension_N"][other], atol=1e-5)


def test_flexion_sign_poses_a_coordinate_that_shrinks_in_flexion():
    """A joint whose flexion coordinate turns about −z (like gait2392's knee_angle_r) with
    flexion_sign −1 is posed at coordinate −20° and gives the same sweep as the +z joint at +20°."""
    base = knee_like(gs_custom_joint(), "anterior_posterior")
    exp = replace(base.experiments[0], axes=(), flexion_deg=20.0)
    plus = base.with_rows("experiments", (exp,))
    j = base.mass("tibia").joint
    flipped = replace(j, parameters=tuple((k, -v if k.startswith("rotation1") else v) for k, v in j.parameters))
    minus = replace(plus, masses=tuple(replace(m, joint=flipped) if m.name == "tibia" else m for m in plus.masses))
    minus = minus.with_rows("experiments", (replace(exp, flexion_sign=-1),))
    a, b = run_laxity(plus), run_laxity(minus)
    assert a.status == b.status == "completed", (a.message, b.message)
    assert a.parameters["flexion_coordinate_deg"] == pytest.approx(20.0)
    assert b.parameters["flexion_coordinate_deg"] == pytest.approx(-20.0)
    assert a.summary["flexion_deg_unloaded"] == pytest.approx(20.0, abs=1e-9)
    assert b.summary["flexion_deg_unloaded"] == pytest.approx(20.0, abs=1e-9)
    np.testing.assert_allclose(b.series["jcs"], a.series["jcs"], atol=1e-9)


def test_preload_tone_load_point_and_one_sided_sweep_agree_on_both_engines():
    """A compressive preload, a moment preload, 15 N of tone on one ligament, the drawer force 10 cm
    distal on the tibia (lever_m 0) and a one-sided sweep: the free-body and the tree sweep find the same
    equilibria, and the preload and tone really move the unloaded pose."""
    base = knee_like(None, "anterior_posterior")
    exp = replace(base.experiments[0], lever_m=0.0, sides="negative", load_point_L=(0.0, -0.1, 0.0),
                  preload_force_N=(0.0, 0.0, 20.0), preload_moment_Nm=(0.0, 0.05, 0.0),
                  tissue_tone=(("lig4", 15.0),))
    free_p = base.with_rows("experiments", (exp,))
    tree_p = replace(free_p, masses=tuple(replace(m, joint=gs_custom_joint()) if m.name == "tibia" else m
                                          for m in free_p.masses))
    free, tree = run_laxity(free_p), run_laxity(tree_p)
    assert free.status == tree.status == "completed", (free.message, tree.message)
    np.testing.assert_allclose(free.series["load"], [0.0, -20 / 3, -40 / 3, -20.0], atol=1e-12)
    np.testing.assert_allclose(tree.series["measure"], free.series["measure"], atol=1e-6)
    np.testing.assert_allclose(tree.series["tissue_tension_N"], free.series["tissue_tension_N"], atol=1e-5)
    plain = run_laxity(base)
    # the unloaded ligament tensions carry the preload: far beyond the solver's 1e-6 N
    assert np.abs(free.series["tissue_tension_N"][0] - plain.series["tissue_tension_N"][0]).max() > 1.0
    # and the load point 10 cm distal turns the tibia under the drawer force (a moment that the default
    # point, the joint centre, does not apply; flexion is held, so only its small share about e2, e3 shows)
    at_origin = run_laxity(base.with_rows("experiments", (replace(exp, load_point_L=None),)))
    assert np.abs(free.series["jcs"][-1, 1:3] - at_origin.series["jcs"][-1, 1:3]).max() > 1e-4


def test_a_stopped_tree_sweep_names_the_held_coordinate():
    """A tree sweep stopped at once (or failed) still says which coordinate it held, at which value."""
    project = knee_like(gs_custom_joint(), "anterior_posterior")
    project = project.with_rows("experiments", (replace(project.experiments[0], flexion_deg=10.0),))
    run = run_laxity(project, cancel=lambda: True)
    assert run.status == "stopped"
    assert run.parameters["system"] == "tree" and run.parameters["flexion_coordinate"] == "flex"
    assert run.parameters["flexion_coordinate_deg"] == 10.0


def test_each_load_starts_from_the_secant_of_the_last_two_solved_poses():
    """secant_start carries the nearest solved pose on along the secant to the next load (exact on a
    linear path), never further than the secant itself, and leaves the first step alone."""
    from jointmodeller.app.mobilized import build_mobilized, initial_state
    from jointmodeller.core.state import State
    from jointmodeller.core.studies.laxity import secant_start

    mp = build_mobilized(knee_like(gs_custom_joint(), "anterior_posterior"))
    tree = mp.model.system
    s0 = initial_state(mp)
    dq = np.zeros_like(s0.q)
    dq[mp.model.qindex["tx"]], dq[mp.model.qindex["add"]] = 1e-3, 0.01
    s1 = State(s0.t, s0.q + dq, np.zeros_like(s0.u))
    solved = [(0.0, s0), (10.0, s1)]
    np.testing.assert_allclose(secant_start(tree, solved, 10.0, s1, 20.0).q, s0.q + 2 * dq, atol=1e-15)
    np.testing.assert_allclose(secant_start(tree, solved, 10.0, s1, 15.0).q, s0.q + 1.5 * dq, atol=1e-15)
    assert secant_start(tree, solved, 10.0, s1, 35.0) is s1  # longer than the secant: no extrapolation
    assert secant_start(tree, solved, 10.0, s1, 5.0) is s1  # between solved loads: nothing behind
    assert secant_start(tree, solved[:1], 0.0, s0, 10.0) is s0  # the first step


def test_the_residual_tolerance_is_the_callers(tmp_path, capsys):
    """run --tol-n reaches every step's equilibrium: a loose tolerance is met with fewer iterations
    (never more), and each step's residual stays within the tolerance asked for."""
    from jointmodeller.cli import main
    from jointmodeller.persistence import load_project, save_project

    path = tmp_path / "k.jmdb"
    save_project(path, knee_like(gs_custom_joint(), "anterior_posterior"))
    assert main(["run", str(path), "--study", "laxity", "--tol-n", "1e-3"]) == 0
    assert main(["run", str(path), "--study", "laxity"]) == 0
    from jointmodeller.persistence import ProjectStore

    with ProjectStore(path) as store:
        loose, tight = (store.load_run(r.id) for r in store.list_runs())
    assert loose.series["residual_N"].max() <= 1e-3 and tight.series["residual_N"].max() <= 1e-6
    assert loose.series["iterations"].sum() <= tight.series["iterations"].sum()
    np.testing.assert_allclose(loose.series["measure"], tight.series["measure"], atol=0.05)  # mm
    assert main(["run", str(path), "--study", "laxity", "--tol-n", "-1"]) == 2
    assert main(["run", str(path), "--study", "dynamics", "--tol-n", "1"]) == 2
    assert "--tol-n" in capsys.readouterr().err
    assert len(load_project(path).experiments) == 1
    assert main(["run", str(path), "--study", "equilibrium", "--tol-n", "1e-4"]) == 0  # equilibrium too
    with ProjectStore(path) as store:
        eq = store.load_run(store.list_runs()[-1].id)
    assert eq.status == "completed" and eq.summary["residual_force_N"] <= 1e-4


def test_a_live_sweep_reports_each_solved_pose_for_the_viewport():
    """The GUI's laxity study (registry option live) reports every solved pose as a sample the
    viewport draws: the unloaded pose first, then one per load, the last one the run's final pose."""
    from jointmodeller.app.live import study_function
    from jointmodeller.render.frames import frame_from_sample

    project = knee_like(gs_custom_joint(), "anterior_posterior")
    samples = []
    run = study_function("laxity", project)(lambda f, *s: samples.append(s[0]) if s else None, None)
    assert run.status == "completed"
    assert len(samples) == run.series["load"].size + 1
    frame = frame_from_sample(project, samples[-1])
    assert frame is not None and "tibia" in frame.poses
    R, t = frame.poses["tibia"]
    # the sample's tibia is where the run's last step put its centre of mass
    com_G = t + R @ np.asarray(project.mass("tibia").com_L)
    np.testing.assert_allclose(com_G, run.poses.p_G[-1, run.poses.index("tibia")], atol=1e-12)
    first = frame_from_sample(project, samples[0]).poses["tibia"]
    assert np.linalg.norm(first[1] - t) > 1e-4  # the sweep moved the bone between the two
