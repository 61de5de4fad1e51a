"""MovingPathPoints as functions of the coordinates (issue 16 item 1): imported as functions, kept
in the project, moved at every pose by every study's path geometry, with their own motion's share
in the generalized-force moment arm. With the optional `opensim` peer, lengths and moment arms
through the CLI match OpenSim 4.6."""

from __future__ import annotations

import csv
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.studies.muscle_paths import (
    AnalyticPathProvider,
    build_multibody,
    calc_path,
    mjm_path_specs,
    moving_point_forces,
    muscle_paths,
    path_spec,
)
from jointmodeller.io.osim import load_osim
from jointmodeller.model.codec import project_from_json, project_to_json
from jointmodeller.model.specs import GROUND, FunctionSpec
from jointmodeller.model.validation import project_problems
from jointmodeller.persistence.store import load_project, save_project

EXTENSORS = ["rect_fem_r", "vas_med_r", "vas_int_r", "vas_lat_r"]
KNEE_DEG = np.arange(-120.0, 1.0, 20.0)


def _path(shared_models, name):
    path = shared_models / "opensim-models" / f"{name}.osim"
    if not path.is_file():
        pytest.skip(f"{path.name} is absent")
    return path


@pytest.fixture(scope="module")
def gait2392(shared_models):
    path = _path(shared_models, "gait2392_thelen2003muscle")
    project, report = load_osim(path, load_meshes=False)
    return path, project, report


def test_imported_as_functions(gait2392):
    _, project, report = gait2392
    moving = {a.name: a for a in project.attachments if a.moving_a or a.moving_b}
    assert sorted(moving) == sorted(EXTENSORS + [n.replace("_r", "_l") for n in EXTENSORS])
    fns = moving["rect_fem_r"].moving_b
    assert len(fns) == 3 and all(f.coordinates == ("knee_angle_r",) for f in fns if f.kind != "constant")
    assert report.counts["moving path points"] == 8
    assert not [i for i in report.approximated if i.type == "MovingPathPoint"]


def test_points_move_and_share_in_the_moment_arm(gait2392):
    """Frozen at the default pose, knee-extensor lengths are off by tens of mm in deep flexion; the
    generalized-force moment arm with the points' own motion equals −dL/dθ (central difference,
    h = 1e-4 rad: error h²/6·|L'''| ≲ 1e-9 m, plus the resampled spline's slope error, ~2e-5 m)."""
    _, project, _ = gait2392
    mb = build_multibody(project)
    res = muscle_paths(project, "knee_angle_r", np.radians(KNEE_DEG), EXTENSORS)
    assert np.abs(res.moment_arm - res.moment_arm_excursion).max() < 5e-5
    frozen = replace(project, attachments=tuple(replace(a, moving_a=(), moving_b=()) for a in project.attachments))
    res_frozen = muscle_paths(frozen, "knee_angle_r", np.radians(KNEE_DEG), EXTENSORS)
    assert np.abs(res.length - res_frozen.length).max() > 0.02  # the issue saw up to 44 mm
    # the points' own share is a real part of the moment arm
    att = next(a for a in project.attachments if a.name == "rect_fem_r")
    spec = path_spec(mb, att, project.wrap_objects)
    q = mb.q0.copy()
    q[mb.qindex["knee_angle_r"]] = np.radians(-90.0)
    st = calc_path(mb, spec, q)
    share = moving_point_forces(spec, st, mb.system.kinematics(q), q, mb.system.nu)[mb.uindex["knee_angle_r"]]
    assert abs(share) > 1e-3


def test_every_study_moves_the_points(gait2392):
    """The path provider of the equilibrium/dynamics/laxity studies evaluates the moving points at
    the system's coordinates: its lengths equal the muscle-path study's."""
    _, project, _ = gait2392
    mb = build_multibody(project)
    q = mb.q0.copy()
    q[mb.qindex["knee_angle_r"]] = np.radians(-75.0)
    kin = mb.system.kinematics(q)
    n = len(kin.p_GB)
    index = {name: (i if i >= 0 else n) for name, i in mb.body.items()}
    index[GROUND] = n
    R_BL = np.tile(np.eye(3), (n + 1, 1, 1))
    com_L = np.vstack([np.asarray(mb.system.com_B, float), np.zeros(3)])
    p = np.vstack([kin.p_GB + np.einsum("nij,nj->ni", kin.R_GB, com_L[:n]), np.zeros(3)])
    R = np.concatenate([kin.R_GB, np.eye(3)[None]])
    bk = BodyKinematics(p, R, np.zeros((n + 1, 3)), np.zeros((n + 1, 3)), q)
    names = [a.name for a in project.attachments]
    specs = mjm_path_specs(project, names, index, R_BL, com_L, coordinate_index=mb.qindex)
    rows = np.array([names.index(x) for x in EXTENSORS])
    geo = AnalyticPathProvider(specs).wrapped_paths(0.0, bk, rows).geometry
    for j, name in enumerate(EXTENSORS):
        att = project.attachments[names.index(name)]
        assert specs[names.index(name)].moving
        assert geo.length[j] == pytest.approx(calc_path(mb, path_spec(mb, att, project.wrap_objects), q, kin).length,
                                              abs=1e-12)
    with pytest.raises(ValueError, match="moves with the joint coordinates"):  # free bodies: no coordinates
        att = project.attachments[names.index("rect_fem_r")]
        plain = replace(att, via_points=tuple(replace(v, coordinate="") for v in att.via_points))
        mjm_path_specs(replace(project, attachments=(plain,)), ["rect_fem_r"], index, R_BL, com_L)


def test_validated_and_stored(gait2392, tmp_path):
    _, project, _ = gait2392
    i = next(k for k, a in enumerate(project.attachments) if a.name == "rect_fem_r")
    att = project.attachments[i]

    def problems(**kw):
        atts = list(project.attachments)
        atts[i] = replace(att, **kw)
        return [p for p in project_problems(replace(project, attachments=tuple(atts))) if p.row == "rect_fem_r"]

    assert problems() == []
    assert "three functions" in problems(moving_b=att.moving_b[:2])[0].message
    bad = (replace(att.moving_b[0], coordinates=("no_such_q",)),) + att.moving_b[1:]
    assert "no joint has a coordinate named 'no_such_q'" in problems(moving_b=bad)[0].message
    via = replace(att.via_points[0], moving=(FunctionSpec("linear", (0.01, 0.0), (), ("knee_angle_r",)),
                                             FunctionSpec("constant", (0.0,)), FunctionSpec("constant", (0.0,))))
    assert problems(via_points=(via,) + att.via_points[1:]) == []
    path = tmp_path / "g.jmdb"
    save_project(path, project)
    assert load_project(path).attachments == project.attachments
    assert project_from_json(project_to_json(project)).attachments == project.attachments


def _cli(*args):
    proc = subprocess.run([sys.executable, "-m", "jointmodeller", *args], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gait2392_thelen2003muscle", "leg6dof9musc"])
def test_knee_extensors_through_the_cli(shared_models, tmp_path, model):
    """import-osim, then muscle-paths over the knee: the CSV equals the study, and with the peer it
    matches OpenSim 4.6 (issue 16's bounds: 0.01 mm length, 0.05 mm moment arm for paths without
    wrap objects)."""
    path = _path(shared_models, model)
    project, _ = load_osim(path, load_meshes=False)
    names = [a.name for a in project.attachments if (a.moving_a or a.moving_b) and a.name.endswith("_r")]
    jm = tmp_path / "m.jmdb"
    _cli("import-osim", str(path), str(jm))
    _cli("muscle-paths", str(jm), "knee_angle_r", "--start", "-120", "--stop", "0", "--step", "20",
         "--out", str(tmp_path / "out"))
    got: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    with (tmp_path / "out" / "muscle_paths_knee_angle_r.csv").open() as fh:
        for row in csv.DictReader(fh):
            if row["attachment"] in got:
                got[row["attachment"]].append((float(row["length_mm"]) * 1e-3, float(row["moment_arm_mm"]) * 1e-3))
    res = muscle_paths(project, "knee_angle_r", np.radians(KNEE_DEG), names)
    for j, name in enumerate(res.names):
        g = np.array(got[name])
        assert np.allclose(g[:, 0], res.length[:, j], atol=2e-9)
        assert np.allclose(g[:, 1], res.moment_arm[:, j], atol=2e-9)
    osim = pytest.importorskip("opensim")
    m = osim.Model(str(path))
    s = m.initSystem()
    c = m.getCoordinateSet().get("knee_angle_r")
    for i, deg in enumerate(KNEE_DEG):
        c.setValue(s, np.radians(deg))
        m.realizePosition(s)
        for name in names:
            gp = m.getMuscles().get(name).getGeometryPath()
            assert got[name][i][0] == pytest.approx(gp.getLength(s), abs=1e-5), (name, deg)
            assert got[name][i][1] == pytest.approx(gp.computeMomentArm(s, c), abs=5e-5), (name, deg)


def test_provider_gives_the_points_own_motion_its_force(gait2392):
    """In the tree studies the moving points' own motion acts through a force pair on the knee's
    bodies: the pushes' power is −(length rate), and the length rate is dL/dt along a motion that
    bends the knee — so the tension's generalized force about the knee is the moment arm."""
    from jointmodeller.core.studies.muscle_paths import moving_point_link
    from tests.io.osim.test_mjm_path_provider import free_body_view

    _, project, _ = gait2392
    mb = build_multibody(project)
    q = mb.q0.copy()
    q[mb.qindex["knee_angle_r"]] = np.radians(-70.0)
    u = np.zeros(mb.system.nu)
    u[mb.uindex["knee_angle_r"]] = 1.1
    u[mb.uindex["hip_flexion_r"]] = -0.3
    names = [a.name for a in project.attachments]
    rows = np.array([names.index(x) for x in EXTENSORS])

    def view(qq):
        bk, index, R_BL, com_L = free_body_view(mb, qq, u)
        return BodyKinematics(bk.p_G, bk.R_GB, bk.v_G, bk.w_G, qq), index, R_BL, com_L

    bk, index, R_BL, com_L = view(q)
    specs = mjm_path_specs(project, names, index, R_BL, com_L, coordinate_index=mb.qindex)
    provider = AnalyticPathProvider({r: specs[r] for r in rows}, moving_point_link(project, mb, index))
    out = provider.wrapped_paths(0.0, bk, rows)
    geo = out.geometry
    body_a = np.array([index[project.attachments[r].body_a] for r in rows])
    body_b = np.array([index[project.attachments[r].body_b] for r in rows])

    def vel(bodies, x):
        return bk.v_G[bodies] + np.cross(bk.w_G[bodies], x - bk.p_G[bodies])

    power = np.einsum("mi,mi->m", geo.dir_a_G, vel(body_a, geo.point_a_G))
    power += np.einsum("mi,mi->m", geo.dir_b_G, vel(body_b, geo.point_b_G))
    np.add.at(power, out.extra_tissue, np.einsum("mi,mi->m", out.extra_dir_G, vel(out.extra_body, out.extra_point_G)))
    assert power == pytest.approx(-geo.length_rate, abs=1e-9)
    h = 1e-6  # central difference: error h²·|L'''| ≪ 1e-8 m/s; the joint velocities' own step 1e-6 likewise
    lp = provider.wrapped_paths(0.0, view(q + h * u)[0], rows).geometry.length
    lm = provider.wrapped_paths(0.0, view(q - h * u)[0], rows).geometry.length
    assert geo.length_rate == pytest.approx((lp - lm) / (2 * h), abs=1e-7)
    # without the link the rate misses the points' own motion (what the pair adds)
    plain = AnalyticPathProvider({r: specs[r] for r in rows}).wrapped_paths(0.0, bk, rows).geometry
    assert np.abs(plain.length_rate - geo.length_rate).max() > 1e-3
