"""arm26 (OpenSim's two-joint arm) imports, and its muscle paths match OpenSim's own numbers."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from jointmodeller.app.osim_import import import_osim, import_osim_command, wrap_ranges
from jointmodeller.core.studies.muscle_paths import build_multibody, muscle_paths
from jointmodeller.io.osim import frame_matrix

DATA = Path(__file__).parent / "data"
ANGLES_DEG = np.arange(0, 131, 5)
MUSCLES = ["TRIlong", "TRIlat", "TRImed", "BIClong", "BICshort", "BRA"]
LENGTH_TOL = 0.5e-3
MOMENT_ARM_TOL = 1.0e-3


@pytest.fixture(scope="module")
def sweep(arm26):
    project, report = arm26
    return muscle_paths(project, "r_elbow_flex", np.radians(ANGLES_DEG), wrap_ranges=wrap_ranges(report))


def reference_csv() -> dict[str, np.ndarray]:
    """muscle -> (27, 3) rows of (angle_deg, length_m, moment_arm_m) recorded from OpenSim."""
    rows: dict[str, list] = {}
    with (DATA / "arm26_reference.csv").open() as fh:
        for row in csv.DictReader(line for line in fh if not line.startswith("#")):
            rows.setdefault(row["muscle"], []).append(
                (float(row["elbow_flex_deg"]), float(row["length_m"]), float(row["moment_arm_m"])))
    return {k: np.array(v) for k, v in rows.items()}


def test_bodies_joints_and_coordinates(arm26):
    project, report = arm26
    names = [m.name for m in project.masses]
    assert names == ["base", "r_humerus", "r_ulna_radius_hand"]
    hum = project.mass("r_humerus")
    assert hum.mass_kg == pytest.approx(1.864572)
    assert hum.com_L == pytest.approx((0.0, -0.180496, 0.0))
    assert np.diag(hum.inertia_L) == pytest.approx([0.01481, 0.004551, 0.013193])
    elbow = project.mass("r_ulna_radius_hand").joint
    assert elbow.type == "pin" and elbow.parent == "r_humerus" and elbow.coordinates == ("r_elbow_flex",)
    R_PF, p_PF = frame_matrix(elbow.frame_parent)
    axis = np.array([0.04940001, 0.03660001, 0.99810825])
    assert R_PF[:, 2] == pytest.approx(axis / np.linalg.norm(axis), abs=1e-9)  # pin turns about F's z
    assert p_PF == pytest.approx([0.0061, -0.2904, -0.0123])
    assert project.mass("base").joint.type == "weld"
    assert project.info.gravity_G == pytest.approx((0.0, -9.8066, 0.0))
    coords = {c.name: c for c in report.coordinates}
    assert coords["r_elbow_flex"].range_max == pytest.approx(2.26892803)


def test_six_muscles_with_points_and_wrap_cylinders(arm26):
    project, report = arm26
    atts = {a.name: a for a in project.attachments}
    assert sorted(atts) == sorted(MUSCLES)
    assert len(atts["BIClong"].via_points) == 7 and atts["BIClong"].body_a == "base"
    assert atts["BRA"].point_b_L == pytest.approx((-0.0032, -0.0239, 0.0009))
    assert atts["TRIlong"].wrap_objects == ("TRI", "TRIlonghh", "TRIlongglen")
    wraps = {w.name: w for w in project.wrap_objects}
    assert wraps["TRI"].kind == "cylinder" and wraps["TRI"].dimensions_m == pytest.approx((0.016, 0.05))
    assert wraps["TRIlongglen"].quadrant == "+x" and wraps["TRIlongglen"].body == "base"
    assert wraps["BIClonghh"].kind == "ellipsoid"
    assert {s.name for s in project.springs} == set(MUSCLES)
    assert report.path_wraps["BIClong"][0].start == 2 and report.path_wraps["BIClong"][0].end == 3
    # markers are reported, not silently dropped
    assert {(i.component, i.type) for i in report.not_imported} >= {("r_acromion", "Marker")}


def test_meshes_are_placed_on_their_bodies(arm26_path):
    project, report = import_osim(arm26_path)
    ulna = project.mass("r_ulna_radius_hand").mesh
    hum = project.mass("r_humerus").mesh
    assert ulna is not None and hum is not None and "arm_r_ulna.vtp" in ulna.source
    assert report.counts["meshes"] == 36
    # the elbow centre (in the humerus frame) lies at the distal humerus, close to the surface
    elbow_L = np.array([0.0061, -0.2904, -0.0123])
    assert np.min(np.linalg.norm(hum.vertices_L - elbow_L, axis=1)) < 0.02
    assert hum.vertices_L[:, 1].min() == pytest.approx(-0.30, abs=0.02)  # humerus ~30 cm long
    # ulna frame origin = elbow centre: the ulna surface starts there
    assert np.min(np.linalg.norm(ulna.vertices_L, axis=1)) < 0.02
    # in G at the default pose the hand hangs below the elbow
    kin_model = build_multibody(project)
    kin = kin_model.system.kinematics(kin_model.q0)
    b = kin_model.body["r_ulna_radius_hand"]
    verts_G = ulna.vertices_L @ kin.R_GB[b].T + kin.p_GB[b]
    assert verts_G[:, 1].min() < kin.p_GB[b][1] - 0.2


def test_initial_poses_agree_with_mobilizer_kinematics(arm26):
    """position_G/euler_deg written by the importer (its own numpy joint poses) equal the mobilizer
    backend's kinematics of the imported JointSpecs at the default coordinates."""
    project, _ = arm26
    model = build_multibody(project)
    kin = model.system.kinematics(model.q0)
    for m in project.masses:
        b = model.body[m.name]
        R = Rotation.from_euler(m.euler_sequence, m.euler_deg, degrees=True).as_matrix()
        assert kin.R_GB[b] == pytest.approx(R, abs=1e-12)
        assert kin.p_GB[b] + kin.R_GB[b] @ np.asarray(m.com_L) == pytest.approx(m.position_G, abs=1e-12)


def test_lengths_and_moment_arms_match_recorded_opensim_values(sweep):
    ref = reference_csv()
    for j, name in enumerate(sweep.names):
        r = ref[name]
        assert r[:, 0] == pytest.approx(ANGLES_DEG)
        dl = np.abs(sweep.length[:, j] - r[:, 1]).max()
        dr = np.abs(sweep.moment_arm[:, j] - r[:, 2]).max()
        assert dl < LENGTH_TOL, f"{name}: length off by {dl * 1e3:.3f} mm"
        assert dr < MOMENT_ARM_TOL, f"{name}: moment arm off by {dr * 1e3:.3f} mm"


def test_generalized_force_moment_arm_agrees_with_excursion(sweep):
    """Two independent definitions: unit tension through point Jacobians vs −dL/dθ."""
    assert np.abs(sweep.moment_arm - sweep.moment_arm_excursion).max() < 0.5e-3
    # wrapping is exercised: the triceps wrap the TRI cylinder in flexion, BIClong its ellipsoid
    j = sweep.names.index("TRIlat")
    assert sweep.wrapped[-1, j] and not sweep.wrapped[0, j]
    assert sweep.wrapped[:, sweep.names.index("BIClong")].all()


def test_lengths_and_moment_arms_match_opensim_live(arm26_path, sweep):
    pytest.importorskip("opensim")
    from tests.io.osim.make_reference import opensim_arm26_values

    rows = opensim_arm26_values(arm26_path, ANGLES_DEG)
    for deg, name, length, ma in rows:
        i = int(np.flatnonzero(ANGLES_DEG == deg)[0])
        j = sweep.names.index(name)
        assert abs(sweep.length[i, j] - length) < LENGTH_TOL
        assert abs(sweep.moment_arm[i, j] - ma) < MOMENT_ARM_TOL


def test_import_command_writes_project_and_report(arm26_path, tmp_path):
    from jointmodeller.persistence.store import load_project

    out = tmp_path / "arm26.jmdb"
    report = import_osim_command(arm26_path, out, ())
    assert out.is_file() and (tmp_path / "arm26.jmdb.import.txt").is_file()
    back = load_project(out)
    assert [m.name for m in back.masses] == ["base", "r_humerus", "r_ulna_radius_hand"]
    assert back.mass("r_ulna_radius_hand").joint.type == "pin"
    assert len(back.attachments) == 6 and len(back.wrap_objects) == 4
    assert "Marker" in report.to_text()


def test_shoulder_sweep_multi_wrap_matches_opensim_in_compatibility_mode(arm26, arm26_path):
    """TRIlong wraps three objects when the shoulder is raised. OpenSim 4 caches each wrap point's
    position in ground the first time it is asked for at a pose, so its later wrap passes measure
    from stale wrap points; ``opensim_stale_wrap_points=True`` reproduces that."""
    osim = pytest.importorskip("opensim")
    project, report = arm26
    angles = np.radians(np.arange(-60, 181, 20))
    res = muscle_paths(project, "r_shoulder_elev", angles, wrap_ranges=wrap_ranges(report),
                       q_fixed={"r_elbow_flex": np.radians(90)}, opensim_stale_wrap_points=True)
    model = osim.Model(str(arm26_path))
    state = model.initSystem()
    shoulder = model.getCoordinateSet().get("r_shoulder_elev")
    model.getCoordinateSet().get("r_elbow_flex").setValue(state, float(np.radians(90)))
    for i, q in enumerate(angles):
        shoulder.setValue(state, float(q))
        model.realizePosition(state)
        for j, name in enumerate(res.names):
            path = model.getMuscles().get(name).getGeometryPath()
            assert abs(res.length[i, j] - path.getLength(state)) < 0.1e-3, (name, np.degrees(q))
            assert abs(res.moment_arm[i, j] - path.computeMomentArm(state, shoulder)) < 0.1e-3, (name, np.degrees(q))
    assert res.wrapped[:, res.names.index("TRIlong")].any()
