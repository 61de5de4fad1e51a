"""Unknown components go to the import report; malformed and truncated files give clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.app.osim_import import import_osim
from jointmodeller.io.osim import OsimError, load_osim

SYNTHETIC = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="synthetic_knee">
    <gravity>0 0 -9.81</gravity>
    <BodySet name="bodyset">
      <objects>
        <Body name="femur">
          <mass>5</mass>
          <mass_center>0 0 -0.2</mass_center>
          <inertia>0.1 0.1 0.02 0 0 0</inertia>
          <attached_geometry>
            <Mesh name="femur_geom"><socket_frame>..</socket_frame><mesh_file>missing_femur.stl</mesh_file></Mesh>
            <Brick name="box"><half_lengths>0.1 0.1 0.1</half_lengths></Brick>
          </attached_geometry>
          <WrapObjectSet name="wrapobjectset">
            <objects>
              <WrapSphere name="condyle">
                <xyz_body_rotation>0 0 0</xyz_body_rotation>
                <translation>0 0 -0.4</translation>
                <quadrant>-x</quadrant>
                <radius>0.03</radius>
              </WrapSphere>
              <WrapDoubleCylinderObst name="double"/>
            </objects>
          </WrapObjectSet>
        </Body>
        <Body name="tibia">
          <mass>3</mass>
          <mass_center>0 0 -0.2</mass_center>
          <inertia>0.05 0.05 0.01 0 0 0</inertia>
        </Body>
        <Body name="patella">
          <mass>0.1</mass>
          <mass_center>0 0 0</mass_center>
          <inertia>1e-5 1e-5 1e-5 0 0 0</inertia>
        </Body>
        <Body name="foot">
          <mass>1</mass>
          <mass_center>0 0 0</mass_center>
          <inertia>0.001 0.001 0.001 0 0 0</inertia>
        </Body>
      </objects>
    </BodySet>
    <JointSet name="jointset">
      <objects>
        <BallJoint name="hip">
          <socket_parent_frame>ground_offset</socket_parent_frame>
          <socket_child_frame>femur_offset</socket_child_frame>
          <coordinates>
            <Coordinate name="hip_x"><default_value>0.1</default_value><range>-1 1</range><locked>true</locked>
              </Coordinate>
            <Coordinate name="hip_y"><default_value>0</default_value></Coordinate>
            <Coordinate name="hip_z"><default_value>0</default_value></Coordinate>
          </coordinates>
          <frames>
            <PhysicalOffsetFrame name="ground_offset">
              <socket_parent>/ground</socket_parent>
              <translation>0 0 1</translation>
              <orientation>0 0 0</orientation>
            </PhysicalOffsetFrame>
            <PhysicalOffsetFrame name="femur_offset">
              <socket_parent>/bodyset/femur</socket_parent>
              <translation>0 0 0</translation>
              <orientation>0 0 0</orientation>
            </PhysicalOffsetFrame>
          </frames>
        </BallJoint>
        <CustomJoint name="knee">
          <socket_parent_frame>femur_offset</socket_parent_frame>
          <socket_child_frame>/bodyset/tibia</socket_child_frame>
          <coordinates>
            <Coordinate name="knee_angle"><default_value>0.3</default_value><range>0 2</range></Coordinate>
          </coordinates>
          <frames>
            <PhysicalOffsetFrame name="femur_offset">
              <socket_parent>/bodyset/femur</socket_parent>
              <translation>0 0 -0.4</translation>
              <orientation>0 0 0</orientation>
            </PhysicalOffsetFrame>
          </frames>
          <SpatialTransform>
            <TransformAxis name="rotation1">
              <coordinates>knee_angle</coordinates>
              <axis>0 1 0</axis>
              <LinearFunction name="function"><coefficients>-1 0</coefficients></LinearFunction>
            </TransformAxis>
            <TransformAxis name="rotation2">
              <coordinates>knee_angle</coordinates>
              <axis>1 0 0</axis>
              <NaturalCubicSpline name="function"><x>0 1 2</x><y>0 0.05 0.08</y></NaturalCubicSpline>
            </TransformAxis>
            <TransformAxis name="rotation3">
              <coordinates></coordinates>
              <axis>0 0 1</axis>
              <Constant name="function"><value>0</value></Constant>
            </TransformAxis>
            <TransformAxis name="translation1">
              <coordinates>knee_angle</coordinates>
              <axis>1 0 0</axis>
              <MultiplierFunction name="function">
                <function><SimmSpline><x>0 0.5 1 1.5 2</x><y>0 0.002 0.003 0.0035 0.0036</y></SimmSpline></function>
                <scale>2</scale>
              </MultiplierFunction>
            </TransformAxis>
            <TransformAxis name="translation2">
              <coordinates>knee_angle</coordinates>
              <axis>0 1 0</axis>
              <PolynomialFunction name="function"><coefficients>0.001 0 0.002</coefficients></PolynomialFunction>
            </TransformAxis>
            <TransformAxis name="translation3">
              <coordinates>knee_angle</coordinates>
              <axis>0 0 1</axis>
              <PiecewiseLinearFunction name="function"><x>0 2</x><y>0 0.01</y></PiecewiseLinearFunction>
            </TransformAxis>
          </SpatialTransform>
        </CustomJoint>
        <PinJoint name="patellofemoral">
          <socket_parent_frame>/bodyset/femur</socket_parent_frame>
          <socket_child_frame>/bodyset/patella</socket_child_frame>
          <coordinates><Coordinate name="pf_angle"><default_value>0</default_value></Coordinate></coordinates>
        </PinJoint>
        <ScapulothoracicJoint name="odd_joint">
          <socket_parent_frame>/bodyset/tibia</socket_parent_frame>
          <socket_child_frame>/bodyset/foot</socket_child_frame>
        </ScapulothoracicJoint>
      </objects>
    </JointSet>
    <ConstraintSet name="constraintset">
      <objects>
        <CoordinateCouplerConstraint name="pf_coupler">
          <independent_coordinate_names>knee_angle</independent_coordinate_names>
          <dependent_coordinate_name>pf_angle</dependent_coordinate_name>
          <coupled_coordinates_function><LinearFunction><coefficients>0.5 0</coefficients></LinearFunction>
            </coupled_coordinates_function>
        </CoordinateCouplerConstraint>
        <WeldConstraint name="weld_it"/>
      </objects>
    </ConstraintSet>
    <ForceSet name="forceset">
      <objects>
        <Blankevoort1991Ligament name="MCL">
          <GeometryPath name="path">
            <PathPointSet><objects>
              <PathPoint name="MCL-P1"><socket_parent_frame>/bodyset/femur</socket_parent_frame>
                <location>0.03 0 -0.38</location></PathPoint>
              <ConditionalPathPoint name="MCL-P2"><socket_parent_frame>/bodyset/tibia</socket_parent_frame>
                <location>0.035 0 -0.02</location><socket_coordinate>/jointset/knee/knee_angle</socket_coordinate>
                <range>0 1</range></ConditionalPathPoint>
              <PathPoint name="MCL-P3"><socket_parent_frame>/bodyset/tibia</socket_parent_frame>
                <location>0.03 0 -0.08</location></PathPoint>
            </objects></PathPointSet>
            <PathWrapSet><objects>
              <PathWrap name="w1"><wrap_object>condyle</wrap_object><method>midpoint</method><range>-1 -1</range>
                </PathWrap>
              <PathWrap name="w2"><wrap_object>nowhere</wrap_object></PathWrap>
            </objects></PathWrapSet>
          </GeometryPath>
          <linear_stiffness>2000</linear_stiffness>
          <slack_length>0.1</slack_length>
          <transition_strain>0.05</transition_strain>
          <damping_coefficient>0.003</damping_coefficient>
        </Blankevoort1991Ligament>
        <PathActuator name="actuator">
          <GeometryPath name="path">
            <PathPointSet><objects>
              <PathPoint name="a1"><socket_parent_frame>/jointset/knee/femur_offset</socket_parent_frame>
                <location>0 0.02 0.3</location></PathPoint>
              <PathPoint name="a2"><socket_parent_frame>/bodyset/tibia</socket_parent_frame>
                <location>0 0.02 -0.1</location></PathPoint>
            </objects></PathPointSet>
          </GeometryPath>
        </PathActuator>
        <CoordinateLimitForce name="knee_limit"/>
        <FutureMuscle name="one_point">
          <GeometryPath name="path">
            <PathPointSet><objects>
              <PathPoint name="only"><socket_parent_frame>/bodyset/femur</socket_parent_frame><location>0 0 0</location>
                </PathPoint>
            </objects></PathPointSet>
          </GeometryPath>
        </FutureMuscle>
      </objects>
    </ForceSet>
    <MarkerSet name="markerset"><objects><Marker name="knee_marker"/></objects></MarkerSet>
  </Model>
</OpenSimDocument>
"""


@pytest.fixture()
def synthetic(tmp_path):
    path = tmp_path / "synthetic.osim"
    path.write_text(SYNTHETIC)
    return path


def test_unknown_components_are_reported_not_fatal(synthetic):
    project, report = import_osim(synthetic)  # validates the project too
    listed = {(i.component, i.type) for i in report.not_imported}
    for item in [("odd_joint", "ScapulothoracicJoint"), ("knee_limit", "CoordinateLimitForce"),
                 ("weld_it", "WeldConstraint"), ("femur/double", "WrapDoubleCylinderObst"),
                 ("femur/box", "Brick"), ("femur/femur_geom", "Mesh"), ("knee_marker", "Marker"),
                 ("MCL/w2", "PathWrap"), ("one_point", "FutureMuscle")]:
        assert item in listed, item
    why = {i.component: i.why for i in report.not_imported}
    assert "missing_femur.stl" in why["femur/femur_geom"]
    assert "fewer than two points" in why["one_point"]
    approx = {(i.component, i.type) for i in report.approximated}
    assert ("hip_x", "Coordinate") not in approx  # a locked coordinate is imported as locked
    assert project.mass("femur").joint.locked == (True, False, False)
    assert ("foot", "Body") in approx  # its joint was not imported: free body
    assert ("actuator", "PathActuator") in approx
    assert "Not imported" in project.info.notes


def test_synthetic_joints_functions_constraints_and_ligament(synthetic):
    project, report = load_osim(synthetic, load_meshes=False)
    hip = project.mass("femur").joint
    assert hip.type == "ball" and hip.default_q == (0.1, 0.0, 0.0)
    knee = project.mass("tibia").joint
    assert knee.type == "custom" and knee.parent == "femur"
    kinds = [f.kind for f in knee.functions]
    assert kinds == ["linear", "spline", "constant", "spline", "polynomial", "piecewise_linear"]
    assert knee.functions[0].values == (-1.0, 0.0)
    assert knee.functions[4].values == pytest.approx((0.002, 0.0, 0.001))  # ascending powers
    # MultiplierFunction: the SimmSpline's values doubled
    x = np.asarray(knee.functions[3].x)
    assert np.interp(1.0, x, knee.functions[3].values) == pytest.approx(0.006, abs=1e-9)
    params = dict(knee.parameters)
    assert (params["rotation1_y"], params["translation3_z"]) == (1.0, 1.0)
    assert project.mass("patella").joint.type == "pin"
    assert project.mass("foot").joint is None
    (coupler,) = project.constraints
    assert coupler.kind == "coordinate_coupler" and coupler.coordinates == ("pf_angle", "knee_angle")
    assert coupler.function.values == (0.5, 0.0)
    mcl = next(a for a in project.attachments if a.name == "MCL")
    (via,) = mcl.via_points
    assert via.coordinate == "knee_angle" and (via.range_min, via.range_max) == (0.0, 1.0)
    assert mcl.wrap_objects == ("condyle",)
    spring = project.spring("MCL")
    assert spring.law == "blankevoort" and spring.kx == (2000.0,) and spring.slack_length_m == 0.1
    assert spring.cx == pytest.approx(0.003 / 0.1)  # OpenSim: F_damping = c · strain rate
    assert project.info.gravity_G == (0.0, 0.0, -9.81)
    act = next(a for a in project.attachments if a.name == "actuator")  # a point on a joint's frame
    assert act.body_a == "femur" and act.point_a_L == pytest.approx((0.0, 0.02, -0.1))
    # knee's default pose: femur frame at (0,0,1) turned by the hip's 0.1 rad about x; knee 0.4 below
    femur = project.mass("femur")
    assert femur.position_G == pytest.approx((0.0, 0.2 * np.sin(0.1), 1.0 - 0.2 * np.cos(0.1)))


def _error(path) -> str:
    with pytest.raises(OsimError) as info:
        load_osim(path, load_meshes=False)
    msg = str(info.value)
    assert str(path) in msg
    return msg


def test_truncated_file_names_file_line_and_truncation(tmp_path):
    path = tmp_path / "cut.osim"
    path.write_text(SYNTHETIC[: int(len(SYNTHETIC) * 0.6)])
    msg = _error(path)
    last_line = SYNTHETIC[: int(len(SYNTHETIC) * 0.6)].count("\n") + 1
    assert f"line {last_line}" in msg and "truncated" in msg


def test_malformed_xml_names_the_line(tmp_path):
    bad = SYNTHETIC.replace("</Body>", "</Bodyy>", 1)
    path = tmp_path / "bad.osim"
    path.write_text(bad)
    line = bad[: bad.index("</Bodyy>")].count("\n") + 1
    msg = _error(path)
    assert f"line {line}" in msg and "malformed XML" in msg


def test_bad_number_names_the_line(tmp_path):
    bad = SYNTHETIC.replace("<mass>3</mass>", "<mass>three</mass>")
    path = tmp_path / "nan.osim"
    path.write_text(bad)
    line = bad[: bad.index("<mass>three")].count("\n") + 1
    assert f"line {line}" in _error(path)


@pytest.mark.parametrize("text, expect", [
    ("", "empty"),
    ("<?xml version='1.0'?><Project/>", "not an OpenSim model"),
    ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><OpenSimDocument/>', "DTD"),
    ("<OpenSimDocument Version='40000'></OpenSimDocument>", "no <Model>"),
    ("<OpenSimDocument Version='40000'><Model name='m'><length_units>millimeters</length_units>"
     "<BodySet/></Model></OpenSimDocument>", "length units"),
    ("\x00\x01binary", "malformed XML"),
    ('<?xml version="1.0" encoding="TF-8"?><OpenSimDocument/>', "cannot decode"),
])
def test_other_bad_files(tmp_path, text, expect):
    path = tmp_path / "x.osim"
    path.write_text(text)
    assert expect in _error(path)


def test_missing_file(tmp_path):
    assert "cannot read" in _error(tmp_path / "nope.osim")


MESHY = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="meshy">
    <Ground name="ground">
      <attached_geometry>
        <Mesh name="floor"><socket_frame>..</socket_frame><scale_factors>2 2 2</scale_factors>
          <mesh_file>box.stl</mesh_file></Mesh>
      </attached_geometry>
    </Ground>
    <BodySet name="bodyset">
      <objects>
        <Body name="block">
          <mass>1</mass><mass_center>0 0 0</mass_center><inertia>0.01 0.01 0.01 0 0 0</inertia>
          <components>
            <PhysicalOffsetFrame name="geom_frame">
              <socket_parent>..</socket_parent>
              <translation>0.1 0 0</translation>
              <orientation>0 0 1.5707963267948966</orientation>
              <attached_geometry>
                <Mesh name="shell"><socket_frame>..</socket_frame><mesh_file>elsewhere.stl</mesh_file></Mesh>
              </attached_geometry>
            </PhysicalOffsetFrame>
          </components>
        </Body>
      </objects>
    </BodySet>
    <JointSet name="jointset">
      <objects>
        <SliderJoint name="slide">
          <socket_parent_frame>/ground</socket_parent_frame>
          <socket_child_frame>/bodyset/block</socket_child_frame>
          <coordinates><Coordinate name="x"><default_value>0.2</default_value></Coordinate></coordinates>
        </SliderJoint>
      </objects>
    </JointSet>
  </Model>
</OpenSimDocument>
"""


def test_meshes_on_ground_offset_frames_and_search_paths(tmp_path):
    import trimesh

    from jointmodeller.persistence.store import load_project, save_project

    (tmp_path / "Geometry").mkdir()
    box = trimesh.creation.box(extents=(0.02, 0.04, 0.06))
    box.export(tmp_path / "Geometry" / "box.stl")
    other = tmp_path / "more_meshes"
    other.mkdir()
    box.export(other / "elsewhere.stl")
    model = tmp_path / "meshy.osim"
    model.write_text(MESHY)
    project, report = import_osim(model, [other])
    ground = project.mass("ground_geometry")
    assert ground.fixed and ground.joint is None
    assert np.ptp(ground.mesh.vertices_L, axis=0) == pytest.approx([0.04, 0.08, 0.12])  # scaled by 2
    block = project.mass("block").mesh  # on an offset frame: turned 90° about z, moved 0.1 along x
    assert np.ptp(block.vertices_L, axis=0) == pytest.approx([0.04, 0.02, 0.06])
    assert block.vertices_L.mean(axis=0) == pytest.approx([0.1, 0.0, 0.0], abs=1e-12)
    assert project.mass("block").position_G == pytest.approx((0.2, 0.0, 0.0))
    # and the whole project survives the project file
    path = tmp_path / "meshy.jmdb"
    save_project(path, project)
    back = load_project(path)
    assert back.mass("block").mesh == block and back.mass("block").joint == project.mass("block").joint


def test_synthetic_project_round_trips_through_the_project_file(synthetic, tmp_path):
    from jointmodeller.persistence.store import load_project, save_project

    project, _ = import_osim(synthetic)
    path = tmp_path / "synthetic.jmdb"
    save_project(path, project)
    back = load_project(path)
    assert back.mass("tibia").joint == project.mass("tibia").joint
    assert back.constraints == project.constraints
    assert back.attachments == project.attachments and back.wrap_objects == project.wrap_objects
    assert back.springs == project.springs


@pytest.mark.parametrize("old, new, component", [
    ("<radius>0.03</radius>", "<radius>-0.03</radius>", "condyle"),
    ("<slack_length>0.1</slack_length>", "<slack_length>-0.1</slack_length>", "MCL"),
    ("<linear_stiffness>2000</linear_stiffness>", "<linear_stiffness>0</linear_stiffness>", "MCL"),
    ("<transition_strain>0.05</transition_strain>", "<transition_strain>1.5</transition_strain>", "MCL"),
])
def test_values_the_project_rejects_leave_the_component_out(tmp_path, old, new, component):
    path = tmp_path / "odd.osim"
    path.write_text(SYNTHETIC.replace(old, new))
    project, report = import_osim(path)  # still a valid project
    assert any(i.component == component and "invalid after import" in i.why for i in report.not_imported)
    assert component not in {a.name for a in project.attachments} | {w.name for w in project.wrap_objects}


def test_a_model_value_no_project_may_hold_is_an_import_error_naming_file_and_field(tmp_path):
    """Found by the fuzz suite (test_mangled_characters turned "-9.81" into "-9081"): a gravity the
    importer cannot leave out escaped as a bare ValidationError without the file's name."""
    path = tmp_path / "heavy.osim"
    path.write_text(SYNTHETIC.replace("<gravity>0 0 -9.81</gravity>", "<gravity>0 0 -9081</gravity>"))
    with pytest.raises(OsimError) as info:
        import_osim(path)
    message = str(info.value)
    assert str(path) in message and "gravity_G" in message and "9081" in message
    assert len(message.splitlines()) == 1, "an import error is one line, like every other OsimError"


def test_a_pose_that_cannot_be_computed_is_one_line_naming_the_body(synthetic, monkeypatch):
    """Found by the fuzz suite (osim_numbers_043/044 under load): a body whose default pose came out
    non-finite reached scipy's SVD and ended in a LinAlgError traceback. Any such pose is now an
    OsimError naming the body (here the kinematics is made to overflow)."""
    from jointmodeller.core.multibody.system import MultibodySystem

    real = MultibodySystem.kinematics

    def overflowing(self, q, *args, **kwargs):
        kin = real(self, q, *args, **kwargs)
        kin.R_GB[0, 0, 0] = np.nan
        return kin

    monkeypatch.setattr(MultibodySystem, "kinematics", overflowing)
    with pytest.raises(OsimError, match=r"body '\w+' has no valid pose at the default coordinates"):
        load_osim(synthetic)
