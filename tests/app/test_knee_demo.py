"""The built-in knee demo (`jointmodeller demo --knee`, issue 15 item 9): built from the package's own
data without ../shared, the bodies, ligaments, contact pair and drawer experiment of docs/knee.md,
a round trip through the project file, an unloaded equilibrium; the committed meshes stay close to
the lenhart2015 originals and the committed data is what scripts/make_knee_demo.py makes of the .osim
(both checked only where ../shared is present)."""

from __future__ import annotations

import importlib.util
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from jointmodeller.app import knee_demo
from jointmodeller.cli import main
from jointmodeller.io.meshes import read_mesh
from jointmodeller.model.codec import project_to_data
from jointmodeller.persistence import load_project
from tests.conftest import REPO, SHARED

ACL = tuple(f"ACL{b}{i}" for b in ("am", "pl") for i in range(1, 7))


@pytest.fixture(scope="module")
def opened_while_building():
    """(project, paths opened while it was built): an audit hook records every file opened."""
    opened: list[str] = []
    active = [True]

    def hook(event, args):
        if active[0] and event == "open" and args and isinstance(args[0], (str, bytes, Path)):
            opened.append(str(args[0] if not isinstance(args[0], bytes) else args[0].decode(errors="replace")))

    sys.addaudithook(hook)  # audit hooks cannot be removed: this one goes quiet after the build
    try:
        project = knee_demo.build_knee_demo_project()
    finally:
        active[0] = False
    return project, opened


@pytest.fixture(scope="module")
def project(opened_while_building):
    return opened_while_building[0]


def test_the_demo_reads_only_the_package_data_never_shared(opened_while_building):
    _, opened = opened_while_building
    shared = str(SHARED.resolve())
    assert not [p for p in opened if str(Path(p).resolve()).startswith(shared)]
    data = [p for p in opened if Path(p).resolve().parent == knee_demo.DATA_DIR]
    assert {Path(p).name for p in data} == {knee_demo.PROJECT_FILE, *knee_demo.MESH_FILES.values()}
    assert knee_demo.DATA_DIR.parent.parent == Path(knee_demo.__file__).resolve().parents[1]  # in the package


def test_licence_and_credit_sit_beside_the_data():
    names = {p.name for p in knee_demo.DATA_DIR.iterdir()}
    assert {"LICENSE-lenhart2015.txt", "CREDITS.md"} <= names
    assert "Apache License" in (knee_demo.DATA_DIR / "LICENSE-lenhart2015.txt").read_text(encoding="utf-8")
    assert sum((knee_demo.DATA_DIR / n).stat().st_size for n in names) < 400_000  # "a few hundred KB"


def test_bodies_joint_and_coordinates(project):
    assert [m.name for m in project.masses] == list(knee_demo.KNEE_BODIES)
    femur, tibia, shank = project.masses
    assert femur.fixed and femur.joint is None and femur.mesh is not None
    assert tibia.joint.type == "custom" and tibia.joint.parent == "femur_distal_r"
    assert shank.joint.type == "weld" and shank.joint.parent == "tibia_proximal_r" and shank.mesh is None
    coords = dict(zip(tibia.joint.coordinates, zip(tibia.joint.locked, tibia.joint.default_q)))
    assert coords["knee_flex_r"] == (True, pytest.approx(math.radians(25.0), abs=1e-15))
    assert all(not coords[n][0] for n in knee_demo.KNEE_FREE)
    assert project.info.gravity_G == pytest.approx((0.0, -9.80665, 0.0))


def test_ligaments_are_the_55_blankevoort_bundles_across_the_knee(project):
    assert len(project.attachments) == 55 and len(project.springs) == 55
    assert all({a.body_a, a.body_b} == {"femur_distal_r", "tibia_proximal_r"} for a in project.attachments)
    assert all(s.law == "blankevoort" and s.tension_only and s.kx[0] > 0 for s in project.springs)
    names = {a.name for a in project.attachments}
    assert set(ACL) <= names and {"PCLal1", "LCL1", "MCLs1", "MCLd1", "pCAP1"} <= names
    assert not names & {"PT1", "mPFL1", "lPFL1", "ITB1"}  # no patella, no pelvis
    assert {w.name for w in project.wrap_objects} == {"Med_Lig_r", "Med_LigP_r", "Capsule_r"}
    wrapped = {w for a in project.attachments for w in a.wrap_objects}
    assert wrapped == {w.name for w in project.wrap_objects}


def test_contact_pair_and_grown_femoral_cartilage(project):
    (pair,) = project.contacts
    assert (pair.name, pair.body_a, pair.body_b, pair.method) == (
        "tf_contact", "tibia_proximal_r", "femur_distal_r", "elastic_foundation")
    assert pair.cartilage_thickness_m == pytest.approx(0.006) and pair.youngs_modulus_Pa == pytest.approx(10e6)
    femur, tibia = project.mass("femur_distal_r"), project.mass("tibia_proximal_r")
    assert femur.cartilage.source.startswith("grown 3 mm on femur_distal_r facing tibia_proximal_r")
    assert "tibia-cartilage" in tibia.cartilage.source and "tibia-subchondral" in tibia.mesh.source


def test_the_anterior_drawer_experiment(project):
    (e,) = project.experiments
    assert (e.fixed_body, e.moving_body, e.load_kind, e.measure) == (
        "femur_distal_r", "tibia_proximal_r", "anterior_posterior", "anterior_posterior_mm")
    assert (e.max_load, e.steps, e.sides, e.flexion_deg, e.lever_m) == (100.0, 11, "both", 25.0, 0.0)
    assert e.load_point_L == pytest.approx((0.0, -0.1, 0.0))  # 10 cm distal in the tibia's frame, as JAM


def test_cli_writes_it_and_the_file_round_trips(project, tmp_path):
    path = tmp_path / "knee.jmdb"
    assert main(["demo", "--knee", str(path)]) == 0
    back = load_project(path)
    a, b = project_to_data(project), project_to_data(back)
    for d in (a, b):
        d["project"]["info"].pop("modified")
        d["project"]["info"].pop("created")
    assert a == b
    assert main(["demo", "--knee", str(path)]) == 2  # exists, no --force
    assert main(["demo", "--knee", "--high-res", str(tmp_path / "x.jmdb")]) == 2
    assert main(["info", str(path)]) == 0


def test_ligament_only_equilibrium_converges():
    from jointmodeller.app.studies import run_equilibrium

    run = run_equilibrium(knee_demo.build_knee_demo_project(contact=False))
    assert run.status == "completed", run.message
    assert run.summary["residual_force_N"] <= 1e-6


@pytest.mark.slow
def test_unloaded_equilibrium_on_cartilage_converges(project):
    from jointmodeller.app.studies import run_equilibrium

    run = run_equilibrium(project)
    assert run.status == "completed", run.message
    # the study's own tolerances, on the true (regenerated) contact set
    assert run.summary["residual_force_N"] <= 1e-6 and run.summary["residual_moment_Nm"] <= 1e-6


@pytest.fixture(scope="module")
def drawer(project):
    from jointmodeller.app.laxity import run_laxity

    return run_laxity(project)


@pytest.mark.slow
def test_the_anterior_drawer_sweep_completes(drawer):
    """The whole 21-step drawer on cartilage (the quasi-static solver of issue 15 item 5)."""
    run = drawer
    assert run.status == "completed", run.message
    loads, ap = np.asarray(run.series["load"]), np.asarray(run.series["measure"])
    assert loads.size == 21 and run.summary["flexion_deg_unloaded"] == pytest.approx(25.0, abs=1e-6)
    # e2 points posteriorly at the knee: the anterior drawer (−100 N) reads negative; a few mm each way
    # (Markolf 1978: 5.5 mm anterior at 20° in vivo), monotonic in the load
    order = np.argsort(loads)
    assert np.all(np.diff(ap[order]) > 0)
    assert -10.0 < ap[np.argmin(loads)] < -2.0 and 2.0 < ap[np.argmax(loads)] < 10.0
    acl = [run.labels["tissue_tension_N"].index(n) for n in ACL]
    assert run.series["tissue_tension_N"][np.argmin(loads), acl].sum() > 20.0  # the ACL resists the drawer


@pytest.mark.slow
def test_the_viewport_renders_the_drawer(project, drawer, artifacts_dir):
    """docs/knee.md's picture (tests/app/render_knee.py), into test-artifacts/: not a blank frame."""
    pytest.importorskip("pyvista")
    import matplotlib.image as mpimg

    from tests.app.render_knee import render_knee

    out = render_knee(project, drawer, artifacts_dir / "knee_demo.png", size=(400, 400))
    img = mpimg.imread(str(out))
    assert img.shape[:2] == (400, 400)
    background = img[0, -1, :3]
    assert (np.abs(img[..., :3] - background).sum(axis=2) > 0.3).mean() > 0.1  # bones and ligaments drawn


# ---------------------------------------------------------------- against ../shared, where present
def _make_script():
    spec = importlib.util.spec_from_file_location("make_knee_demo", REPO / "scripts" / "make_knee_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("key, bound_m", [
    # the articular surfaces within 0.1 mm (the decimation's error; contact works on them); the tibia's
    # bone file also holds the fibula, a display mesh decimated further (0.5 mm)
    ("femur_distal_r", 1e-4), ("tibia_proximal_r_cartilage", 1e-4), ("tibia_proximal_r", 5e-4)])
def test_committed_meshes_are_close_to_the_originals(shared_meshes, key, bound_m):
    script = _make_script()
    originals = knee_demo.MESH_ORIGINALS[key]
    original = script.merged([read_mesh(shared_meshes / n, units="m") for n in originals], "original")
    committed = read_mesh(knee_demo.DATA_DIR / knee_demo.MESH_FILES[key], units="m")
    assert committed.n_faces < original.n_faces / 2
    assert knee_demo.hausdorff_m(original, committed, samples=50_000) < bound_m


@pytest.mark.slow
def test_committed_project_is_what_the_script_makes_of_the_osim(shared_models, shared_meshes):
    osim = shared_models / "lenhart2015" / "lenhart2015.osim"
    if not osim.is_file():
        pytest.skip("lenhart2015.osim is absent")
    made = _make_script().knee_project(osim, shared_meshes)
    committed = knee_demo.knee_base_project()
    committed = replace(committed, masses=tuple(replace(m, mesh=None, cartilage=None) for m in committed.masses))
    a, b = project_to_data(made)["project"], project_to_data(committed)["project"]
    for d in (a, b):
        d.pop("info")
    assert a == b, "the committed knee data is stale: run scripts/make_knee_demo.py"
