"""OpenSim 3 layout (joints inside their child bodies, <body> path points, VisibleObject geometry)
imports like OpenSim 4 reads it: body poses and a wrapped muscle's length against OpenSim."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.app.osim_import import wrap_ranges
from jointmodeller.core.studies.muscle_paths import build_multibody, muscle_paths
from jointmodeller.io.osim import load_osim

LEGACY = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="30000">
  <Model name="legacy_arm">
    <gravity>0 -9.80665 0</gravity>
    <BodySet>
      <objects>
        <Body name="ground">
          <mass>0</mass><mass_center>0 0 0</mass_center>
          <inertia_xx>0</inertia_xx><inertia_yy>0</inertia_yy><inertia_zz>0</inertia_zz>
          <inertia_xy>0</inertia_xy><inertia_xz>0</inertia_xz><inertia_yz>0</inertia_yz>
          <Joint/>
        </Body>
        <Body name="upper">
          <mass>2</mass><mass_center>0 -0.15 0</mass_center>
          <inertia_xx>0.02</inertia_xx><inertia_yy>0.004</inertia_yy><inertia_zz>0.02</inertia_zz>
          <inertia_xy>0</inertia_xy><inertia_xz>0</inertia_xz><inertia_yz>0</inertia_yz>
          <Joint>
            <CustomJoint name="shoulder">
              <parent_body>ground</parent_body>
              <location_in_parent>0 1.2 0.1</location_in_parent>
              <orientation_in_parent>0 0.2 0</orientation_in_parent>
              <location>0 0 0</location>
              <orientation>0 0 0</orientation>
              <CoordinateSet>
                <objects>
                  <Coordinate name="shoulder_elev">
                    <motion_type>rotational</motion_type>
                    <default_value>0.4</default_value>
                    <range>-1 2</range>
                  </Coordinate>
                </objects>
              </CoordinateSet>
              <SpatialTransform>
                <TransformAxis name="rotation1"><function><LinearFunction><coefficients>1 0</coefficients>
                  </LinearFunction></function><coordinates>shoulder_elev</coordinates><axis>0 0 1</axis></TransformAxis>
                <TransformAxis name="rotation2"><function><Constant><value>0</value></Constant></function>
                  <coordinates></coordinates><axis>1 0 0</axis></TransformAxis>
                <TransformAxis name="rotation3"><function><Constant><value>0</value></Constant></function>
                  <coordinates></coordinates><axis>0 1 0</axis></TransformAxis>
                <TransformAxis name="translation1"><function><Constant><value>0</value></Constant></function>
                  <coordinates></coordinates><axis>1 0 0</axis></TransformAxis>
                <TransformAxis name="translation2"><function><Constant><value>0</value></Constant></function>
                  <coordinates></coordinates><axis>0 1 0</axis></TransformAxis>
                <TransformAxis name="translation3"><function><Constant><value>0</value></Constant></function>
                  <coordinates></coordinates><axis>0 0 1</axis></TransformAxis>
              </SpatialTransform>
            </CustomJoint>
          </Joint>
          <VisibleObject>
            <GeometrySet><objects><DisplayGeometry><geometry_file>upper_missing.vtp</geometry_file></DisplayGeometry>
              </objects></GeometrySet>
          </VisibleObject>
          <WrapObjectSet>
            <objects>
              <WrapCylinder name="elbow_cyl">
                <xyz_body_rotation>0 0 0</xyz_body_rotation>
                <translation>0 -0.3 0</translation>
                <active>true</active>
                <quadrant>-x</quadrant>
                <radius>0.018</radius>
                <length>0.06</length>
              </WrapCylinder>
            </objects>
          </WrapObjectSet>
        </Body>
        <Body name="lower">
          <mass>1.5</mass><mass_center>0 -0.12 0</mass_center>
          <inertia_xx>0.01</inertia_xx><inertia_yy>0.002</inertia_yy><inertia_zz>0.01</inertia_zz>
          <inertia_xy>0</inertia_xy><inertia_xz>0</inertia_xz><inertia_yz>0</inertia_yz>
          <Joint>
            <PinJoint name="elbow">
              <parent_body>upper</parent_body>
              <location_in_parent>0.005 -0.3 0.002</location_in_parent>
              <orientation_in_parent>0.05 0 0</orientation_in_parent>
              <location>0 0 0</location>
              <orientation>0.05 0 0</orientation>
              <CoordinateSet>
                <objects>
                  <Coordinate name="elbow_flex">
                    <motion_type>rotational</motion_type>
                    <default_value>0.5</default_value>
                    <range>0 2.5</range>
                  </Coordinate>
                </objects>
              </CoordinateSet>
            </PinJoint>
          </Joint>
        </Body>
      </objects>
    </BodySet>
    <ForceSet>
      <objects>
        <Thelen2003Muscle name="extensor">
          <GeometryPath>
            <PathPointSet>
              <objects>
                <PathPoint name="e1"><location>-0.02 -0.1 0.003</location><body>upper</body></PathPoint>
                <ConditionalPathPoint name="e2"><location>-0.025 -0.2 0.002</location><body>upper</body>
                  <coordinate>elbow_flex</coordinate><range>0 1.0</range></ConditionalPathPoint>
                <PathPoint name="e3"><location>-0.02 0.03 0.001</location><body>lower</body></PathPoint>
              </objects>
            </PathPointSet>
            <PathWrapSet>
              <objects>
                <PathWrap><wrap_object>elbow_cyl</wrap_object><method>hybrid</method><range>-1 -1</range></PathWrap>
              </objects>
            </PathWrapSet>
          </GeometryPath>
          <max_isometric_force>600</max_isometric_force>
          <optimal_fiber_length>0.1</optimal_fiber_length>
          <tendon_slack_length>0.15</tendon_slack_length>
          <pennation_angle_at_optimal>0</pennation_angle_at_optimal>
        </Thelen2003Muscle>
      </objects>
    </ForceSet>
  </Model>
</OpenSimDocument>
"""

ANGLES = np.linspace(0.0, 2.4, 13)


def test_opensim3_layout_imports_like_opensim_reads_it(tmp_path):
    path = tmp_path / "legacy.osim"
    path.write_text(LEGACY)
    project, report = load_osim(path)
    assert [m.name for m in project.masses] == ["upper", "lower"]  # the 3.x "ground" body is ground
    assert project.mass("lower").joint.type == "pin" and project.mass("upper").joint.type == "pin"
    assert project.mass("upper").inertia_L[1][1] == pytest.approx(0.004)
    (att,) = project.attachments
    assert att.via_points[0].coordinate == "elbow_flex"
    assert ("upper/upper_missing.vtp", "Mesh") in {(i.component, i.type) for i in report.not_imported}

    osim = pytest.importorskip("opensim")
    model = osim.Model(str(path))
    state = model.initSystem()
    elbow = model.getCoordinateSet().get("elbow_flex")
    gp = model.getMuscles().get("extensor").getGeometryPath()
    mb = build_multibody(project)
    res = muscle_paths(project, "elbow_flex", ANGLES, wrap_ranges=wrap_ranges(report), model=mb)
    for i, q in enumerate(ANGLES):
        elbow.setValue(state, float(q))
        model.realizePosition(state)
        assert res.length[i, 0] == pytest.approx(gp.getLength(state), abs=1e-7)
        assert res.moment_arm[i, 0] == pytest.approx(gp.computeMomentArm(state, elbow), abs=1e-6)
        qv = mb.q0.copy()
        qv[mb.qindex["elbow_flex"]] = q
        kin = mb.system.kinematics(qv)
        X = model.getBodySet().get("lower").getTransformInGround(state)
        assert kin.p_GB[mb.body["lower"]] == pytest.approx([X.p().get(k) for k in range(3)], abs=1e-12)
    assert res.wrapped[:, 0].any() and not res.wrapped[:, 0].all()
