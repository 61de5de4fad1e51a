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
    Attachment, Experiment, Frame, FunctionSpec, JointSpec, Mass, Project, ProjectInfo, SpringType,
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
    exp = Experiment("lax", "femur", "tibia", load_kind=load_kind, max_load=MAX_LOAD[load_kind], steps=4, flexion_deg=0.0, measure={"anterior_posterior": "anterior_posterior_mm",
                                                                  "varus_valgus": "varus_valgus_deg",
                                                                  "internal_external": "internal_external_deg"}[load_kind],
                     lever_m=0.05, axes=axes)
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
