"""A path crossing a coupled coordinate (CoordinateCouplerConstraint): length and moment arm about
the independent coordinate against OpenSim, which solves the coupling itself."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.studies.muscle_paths import muscle_paths
from jointmodeller.io.osim import load_osim

ANGLES = np.linspace(-0.6, 1.2, 10)
SLOPE, OFFSET = 0.5, 0.1


def build(path):
    osim = pytest.importorskip("opensim")
    model = osim.Model()
    model.setName("coupled")
    a = osim.Body("a", 1.0, osim.Vec3(0, -0.1, 0), osim.Inertia(0.01, 0.002, 0.01))
    b = osim.Body("b", 0.5, osim.Vec3(0, -0.08, 0), osim.Inertia(0.005, 0.001, 0.005))
    model.addBody(a)
    model.addBody(b)
    j1 = osim.PinJoint("j1", model.getGround(), osim.Vec3(0, 1, 0), osim.Vec3(0, 0, 0.2), a,
                       osim.Vec3(0), osim.Vec3(0))
    j2 = osim.PinJoint("j2", a, osim.Vec3(0.01, -0.25, 0), osim.Vec3(0.1, 0, 0), b,
                       osim.Vec3(0), osim.Vec3(0))
    model.addJoint(j1)
    model.addJoint(j2)
    coupler = osim.CoordinateCouplerConstraint()
    coupler.setName("couple")
    indep = osim.ArrayStr()
    indep.append("j1_coord_0")
    coupler.setIndependentCoordinateNames(indep)
    coupler.setDependentCoordinateName("j2_coord_0")
    coupler.setFunction(osim.LinearFunction(SLOPE, OFFSET))
    model.addConstraint(coupler)
    spring = osim.PathSpring("band", 0.3, 10.0, 0.0)
    gp = spring.updGeometryPath()
    gp.appendNewPathPoint("p0", model.getGround(), osim.Vec3(0.05, 1.05, 0.0))
    gp.appendNewPathPoint("p1", a, osim.Vec3(0.03, -0.12, 0.01))
    gp.appendNewPathPoint("p2", b, osim.Vec3(0.025, -0.1, -0.005))
    model.addForce(spring)
    model.finalizeConnections()
    model.printToXML(str(path))
    state = model.initSystem()
    q1 = model.getCoordinateSet().get("j1_coord_0")
    path_ = osim.PathSpring.safeDownCast(model.getForceSet().get("band")).getGeometryPath()
    out = []
    for q in ANGLES:
        q1.setValue(state, float(q), True)
        model.realizePosition(state)
        out.append((path_.getLength(state), path_.computeMomentArm(state, q1)))
    return np.array(out)


def test_coupled_coordinate_moment_arm_matches_opensim(tmp_path):
    path = tmp_path / "coupled.osim"
    ref = build(path)
    project, report = load_osim(path, load_meshes=False)
    (c,) = project.constraints
    assert c.coordinates == ("j2_coord_0", "j1_coord_0") and c.function.values == (SLOPE, OFFSET)
    res = muscle_paths(project, "j1_coord_0", ANGLES)
    assert res.length[:, 0] == pytest.approx(ref[:, 0], abs=1e-9)
    assert res.moment_arm[:, 0] == pytest.approx(ref[:, 1], abs=1e-6)
    assert res.moment_arm_excursion[:, 0] == pytest.approx(ref[:, 1], abs=1e-6)
    # without the coupler's share the moment arm would be clearly different
    uncoupled = muscle_paths(project.with_rows("constraints", ()), "j1_coord_0", ANGLES)
    assert np.abs(uncoupled.moment_arm[:, 0] - ref[:, 1]).max() > 1e-3
