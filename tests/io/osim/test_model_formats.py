"""Every model of ../shared/models imports, old formats included (issue 16 items 3, 4, 8): the
4.0-beta connector format (Version 30501), the 2.x format (Version 20303), `Unassigned` length units
and mesh files, and a bare '&' that OpenSim's parser accepts — the XXE / billion-laughs refusal kept.
With the optional `opensim` peer, body poses and straight paths of the old formats match OpenSim 4.6."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from jointmodeller.core.studies.muscle_paths import build_multibody, calc_path, path_spec
from jointmodeller.io.osim import OsimError, load_osim
from jointmodeller.io.osim_xml import read_osim_xml

OPENSIM_MODELS = ("DynamicJumperModel", "Rajagopal2016", "double_pendulum_v30501", "gait10dof18musc",
                  "gait2354_simbody_v20303", "gait2392_thelen2003muscle", "leg6dof9musc", "wrist")


def _models(shared_models: Path) -> list[Path]:
    found = sorted((shared_models / "opensim-models").glob("*.osim"))
    found += sorted(p for sub in ("arm26", "lenhart2015") for p in (shared_models / sub).glob("*.osim"))
    return found


@pytest.mark.slow
def test_every_shared_model_imports(shared_models):
    """Acceptance of issue 16: every .osim in ../shared/models imports; each body that has a joint in
    the file gets one, and the import report lists nothing as an unreadable joint."""
    paths = _models(shared_models)
    if not paths:
        pytest.skip("no .osim files in ../shared/models")
    names = {p.stem for p in paths}
    assert set(OPENSIM_MODELS) <= names or not (shared_models / "opensim-models").is_dir() or \
        pytest.skip(f"opensim-models incomplete: {sorted(set(OPENSIM_MODELS) - names)}")
    for path in paths:
        project, report = load_osim(path, load_meshes=False)
        free = [m.name for m in project.masses if m.joint is None and not m.fixed]
        assert not free, f"{path.name}: bodies without a joint {free}"
        bad_joints = [i for i in report.not_imported if i.type.endswith("Joint")]
        assert not bad_joints, f"{path.name}: {bad_joints}"
        assert not [i for i in report.not_imported if "Unassigned" in i.why], path.name


def _model(shared_models: Path, name: str) -> Path:
    path = shared_models / "opensim-models" / f"{name}.osim"
    if not path.is_file():
        pytest.skip(f"{path.name} is absent")
    return path


def test_v30501_connector_joints(shared_models):
    """4.0-beta: a model-level JointSet whose joints name their bodies in <connectors> and place their
    frames with location/orientation_in_parent/_in_child: both pins are imported, not two free rods."""
    project, report = load_osim(_model(shared_models, "double_pendulum_v30501"), load_meshes=False)
    rod1, rod2 = project.mass("rod1"), project.mass("rod2")
    assert rod1.joint.type == "pin" and rod1.joint.parent == "ground"
    assert rod2.joint.type == "pin" and rod2.joint.parent == "rod1"
    assert rod1.joint.coordinates == ("q1",) and rod2.joint.coordinates == ("q2",)
    assert rod1.joint.frame_child.origin_L == pytest.approx((0.0, 0.5, 0.0))
    assert report.counts["joints"] == 2
    # rod1 turned by q1 = -45° about z, hanging from the origin by its point (0, 0.5, 0)
    mb = build_multibody(project)
    kin = mb.system.kinematics(mb.q0)
    q1 = -0.78539816
    R = np.array([[math.cos(q1), -math.sin(q1), 0], [math.sin(q1), math.cos(q1), 0], [0, 0, 1]])
    i = mb.body["rod1"]
    assert np.allclose(kin.R_GB[i], R, atol=1e-9)
    assert np.allclose(kin.p_GB[i] + kin.R_GB[i] @ [0, 0.5, 0], 0.0, atol=1e-12)


def test_v20303_format(shared_models):
    """2.x (Version 20303): joints inside the bodies, <body>/<coordinate> path points, MovingPathPoints
    with <x_coordinate>: all 12 joints, all 54 muscles."""
    project, report = load_osim(_model(shared_models, "gait2354_simbody_v20303"), load_meshes=False)
    assert report.counts["joints"] == 12 and report.counts["muscles"] == 54
    assert project.mass("tibia_r").joint.parent == "femur_r"
    cond = [v for a in project.attachments for v in a.via_points if v.coordinate]
    assert cond and all(v.coordinate in {c for m in project.masses if m.joint for c in m.joint.coordinates}
                        for v in cond)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


MINIMAL = """<?xml version="1.0" encoding="UTF-8"?>
{doctype}<OpenSimDocument Version="40000">
 <Model name="m">
  <credits>{credits}</credits>
  <length_units>{units}</length_units>
  <BodySet><objects>
   <Body name="b"><mass>1</mass><mass_center>0 0 0</mass_center><inertia>0.1 0.1 0.1 0 0 0</inertia>
    <attached_geometry><Mesh name="g"><mesh_file>{mesh}</mesh_file></Mesh></attached_geometry>
   </Body>
  </objects></BodySet>
  <JointSet><objects>
   <PinJoint name="j"><socket_parent_frame>/ground</socket_parent_frame>
     <socket_child_frame>/bodyset/b</socket_child_frame>
    <coordinates><Coordinate name="q"><default_value>0.1</default_value></Coordinate></coordinates>
   </PinJoint>
  </objects></JointSet>
 </Model>
</OpenSimDocument>
"""


def _minimal(tmp_path, credits="me", units="meters", mesh="Unassigned", doctype="", name="m.osim") -> Path:
    return _write(tmp_path, name, MINIMAL.format(credits=credits, units=units, mesh=mesh, doctype=doctype))


def test_unassigned_units_and_mesh(tmp_path):
    project, report = load_osim(_minimal(tmp_path, units="Unassigned", mesh="Unassigned"))
    assert project.mass("b").joint.type == "pin"
    assert project.mass("b").mesh is None
    assert not [i for i in report.not_imported if "Unassigned" in i.why]
    with pytest.raises(OsimError, match="length units 'millimeters'"):
        load_osim(_minimal(tmp_path, units="millimeters"))


def test_bare_ampersand_is_read_as_opensim_reads_it(tmp_path):
    """OpenSim's parser keeps an '&' that starts no reference; so does the importer (reported)."""
    path = _minimal(tmp_path, credits="Smith & Jones, AT&T; &amp; kept; &#65;")
    project, report = load_osim(path)
    assert project.info.description == "Smith & Jones, AT&T; & kept; A"
    assert any("bare '&'" in i.why and "line 4" in i.why for i in report.approximated)


def test_lenient_reading_keeps_entity_attacks_out(tmp_path):
    """A bare '&' beside a DTD does not open a way around the refusal of DTDs and entities."""
    laughs = ('<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>\n')
    with pytest.raises(OsimError, match="DTD and entity declarations"):
        load_osim(_minimal(tmp_path, credits="a & b &lol2;", doctype=laughs))
    xxe = '<!DOCTYPE m [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
    with pytest.raises(OsimError, match="DTD and entity declarations"):
        load_osim(_minimal(tmp_path, credits="&xxe; & more", doctype=xxe, name="x.osim"))
    # without a DTD an undefined entity stays literal text: nothing is looked up or expanded
    project, _ = load_osim(_minimal(tmp_path, credits="&xxe; & more", name="y.osim"))
    assert project.info.description == "&xxe; & more"
    # other malformed XML is still refused with its line
    path = _write(tmp_path, "bad.osim", MINIMAL.format(credits="a & b < c", units="meters", mesh="x", doctype=""))
    with pytest.raises(OsimError, match=r"line 4.*malformed XML"):
        load_osim(path)


# ---- with the optional OpenSim peer ------------------------------------------------------------
def _opensim_poses(osim, path: Path, q: dict[str, float]):
    model = osim.Model(str(path))
    state = model.initSystem()
    cs = model.getCoordinateSet()
    for name, v in q.items():
        cs.get(name).setValue(state, v, False)
    model.realizePosition(state)
    out = {}
    for k in range(model.getBodySet().getSize()):
        b = model.getBodySet().get(k)
        X = b.getTransformInGround(state)
        out[b.getName()] = (np.array([[X.R().get(i, j) for j in range(3)] for i in range(3)]),
                            np.array([X.p().get(i) for i in range(3)]))
    lengths = {}
    for k in range(model.getMuscles().getSize()):
        m = model.getMuscles().get(k)
        lengths[m.getName()] = m.getGeometryPath().getLength(state)
    return out, lengths


@pytest.mark.parametrize("name", ["double_pendulum_v30501", "gait2354_simbody_v20303"])
def test_old_formats_match_opensim(shared_models, name):
    """Body poses at random coordinates, and the lengths of paths without moving points, equal
    OpenSim 4.6's reading of the same file (its upgrade of the old format)."""
    osim = pytest.importorskip("opensim")
    path = _model(shared_models, name)
    project, _ = load_osim(path, load_meshes=False)
    mb = build_multibody(project)
    rng = np.random.default_rng(3)
    q = mb.q0.copy()
    qnames = {v: k for k, v in mb.qindex.items()}
    values = {}
    for i in range(len(q)):
        if "pelvis_t" in qnames[i]:
            continue
        q[i] += rng.uniform(-0.4, 0.4)
        values[qnames[i]] = float(q[i])
    poses, lengths = _opensim_poses(osim, path, values)
    kin = mb.system.kinematics(q)
    for body, (R, p) in poses.items():
        i = mb.body[body]
        # the projects's joints are OpenSim's; SimmSpline knee translations are resampled (2.2e-6 m)
        assert np.allclose(kin.R_GB[i], R, atol=1e-7), body
        assert np.allclose(kin.p_GB[i], p, atol=5e-6), body
    doc = read_osim_xml(path)
    with_moving = {el.get("name") for el in doc.root.iter() if any(c.tag == "GeometryPath" for c in el)
                   and any(p.tag == "MovingPathPoint" for p in el.iter())}
    for att in project.attachments:
        if att.name in with_moving:
            continue
        st = calc_path(mb, path_spec(mb, att, project.wrap_objects), q, kin)
        assert st.length == pytest.approx(lengths[att.name], abs=1e-5), att.name
