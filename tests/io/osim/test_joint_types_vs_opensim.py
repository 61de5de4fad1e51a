"""Every built-in joint type, with offset frames and non-zero coordinates, lands where OpenSim puts it:
the importer's default poses and the mobilizer backend's kinematics against OpenSim's body poses."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from jointmodeller.core.studies.muscle_paths import build_multibody
from jointmodeller.io.osim import load_osim

# joint class, constructor extras, default coordinate values
JOINTS = [
    ("PinJoint", (), [0.7]),
    ("SliderJoint", (), [0.05]),
    ("UniversalJoint", (), [0.3, -0.5]),
    ("BallJoint", (), [0.3, -0.4, 0.6]),
    ("GimbalJoint", (), [-0.2, 0.5, 0.9]),
    ("EllipsoidJoint", ((0.05, 0.03, 0.04),), [0.4, -0.3, 0.2]),
    ("FreeJoint", (), [0.1, 0.2, -0.3, 0.02, -0.01, 0.03]),
    ("PlanarJoint", (), [0.5, 0.03, -0.02]),
]


def build(path):
    osim = pytest.importorskip("opensim")
    model = osim.Model()
    model.setName("joints")
    parent = model.getGround()
    for k, (cls, extra, q) in enumerate(JOINTS):
        body = osim.Body(f"b{k}", 1.0 + k, osim.Vec3(0.01 * k, -0.1, 0.02), osim.Inertia(0.01, 0.02, 0.015))
        model.addBody(body)
        args = [f"j{k}", parent, osim.Vec3(0.01, -0.2, 0.03 * k), osim.Vec3(0.1 * k, -0.2, 0.3),
                body, osim.Vec3(0.0, 0.05, -0.01), osim.Vec3(-0.2, 0.1 * k, 0.05)]
        if extra:
            args.append(osim.Vec3(*extra[0]))
        joint = getattr(osim, cls)(*args)
        model.addJoint(joint)
        for i, v in enumerate(q):
            joint.upd_coordinates(i).set_default_value(v)
        parent = body
    model.finalizeConnections()
    model.printToXML(str(path))
    state = model.initSystem()
    model.realizePosition(state)
    poses = {}
    for k in range(len(JOINTS)):
        X = model.getBodySet().get(f"b{k}").getTransformInGround(state)
        R = np.array([[X.R().get(i, j) for j in range(3)] for i in range(3)])
        p = np.array([X.p().get(i) for i in range(3)])
        poses[f"b{k}"] = (R, p)
    return poses


def test_joint_types_match_opensim_poses(tmp_path):
    path = tmp_path / "joints.osim"
    poses = build(path)
    project, report = load_osim(path, load_meshes=False)
    types = [project.mass(f"b{k}").joint.type for k in range(len(JOINTS))]
    assert types == ["pin", "slider", "universal", "ball", "ball", "ellipsoid", "free", "planar"]
    model = build_multibody(project)
    kin = model.system.kinematics(model.q0)
    for k, (cls, _, _) in enumerate(JOINTS):
        m = project.mass(f"b{k}")
        R_ref, p_ref = poses[m.name]
        # importer's initial pose (COM position, L orientation)
        R = Rotation.from_euler(m.euler_sequence, m.euler_deg, degrees=True).as_matrix()
        assert R == pytest.approx(R_ref, abs=1e-9), cls
        assert np.asarray(m.position_G) == pytest.approx(p_ref + R_ref @ np.asarray(m.com_L), abs=1e-9), cls
        # mobilizer backend
        b = model.body[m.name]
        assert kin.R_GB[b] == pytest.approx(R_ref, abs=1e-9), cls
        assert kin.p_GB[b] == pytest.approx(p_ref, abs=1e-9), cls
