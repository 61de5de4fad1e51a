"""Imported OpenSim models run their studies on their own joints, welds, ligaments with wrap objects
and gravity: the lenhart2015 knee settles from the CLI, and every tissue's length in a study equals
its length in the muscle-paths geometry at the same pose."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.app.coordinates import set_coordinates
from jointmodeller.app.studies import run_dynamics, run_equilibrium
from jointmodeller.cli import main
from jointmodeller.core.studies.muscle_paths import build_multibody, calc_path, path_spec
from jointmodeller.persistence import ProjectStore

KNEE_FREE = ("knee_add_r", "knee_rot_r", "knee_tx_r", "knee_ty_r", "knee_tz_r")


def assert_lengths_match_muscle_paths(project, run, rows=None):
    """Tissue lengths of a run's samples equal calc_path at the run's coordinates; returns how many
    (sample, tissue) paths touched a wrap object."""
    model = build_multibody(project)
    atts = {a.name: a for a in project.attachments}
    names = run.labels["tissue_length_m"]
    wrapped = 0
    for k in range(len(run.series["time"])) if rows is None else rows:
        q = run.series["q"][k]
        for j, name in enumerate(names):
            st = calc_path(model, path_spec(model, atts[name], project.wrap_objects), q)
            wrapped += any(p.wrap >= 0 for p in st.points)
            # the same geometry code on poses that went through the body-frame change L -> B and back
            assert run.series["tissue_length_m"][k, j] == pytest.approx(st.length, abs=1e-12), name
    return wrapped


@pytest.fixture(scope="module")
def knee_runs(shared_models, shared_meshes, tmp_path_factory):
    """The intact and the ACL-deficient knee imported, locked but for the five tibiofemoral
    coordinates at 25° flexion from the CLI, and settled: {file: (project, run)}."""
    out = {}
    for name in ("lenhart2015.osim", "lenhart2015_acld.osim"):
        path = shared_models / "lenhart2015" / name
        if not path.is_file():
            pytest.skip(f"{name} is absent")
        db = str(tmp_path_factory.mktemp("knee") / "knee.jmdb")
        assert main(["import-osim", str(path), db, "--geometry-path", str(shared_meshes)]) == 0
        # as shipped nothing is locked and the pelvis is free: no static equilibrium, said at once
        assert main(["run", db, "--study", "equilibrium"]) == 1
        with ProjectStore(db) as store:
            failed = store.load_run(store.list_runs()[-1].id)
        assert failed.status == "failed" and "'pelvis' can translate freely" in failed.message
        assert main(["coordinates", db, "--lock-all", "--free", ",".join(KNEE_FREE), "--set", "knee_flex_r=25"]) == 0
        # ligaments only (the imported cartilage contact, on the bare femur whose cartilage file is
        # missing or on a grown femoral layer: test_knee_contact_equilibrium.py)
        for pair in ("tf_contact", "pf_contact"):
            assert main(["contact", "remove", db, pair]) == 0
        assert main(["run", db, "--study", "equilibrium"]) == 0
        with ProjectStore(db) as store:
            out[name] = (store.load_project(), store.load_run(store.list_runs()[-1].id))
    return out


@pytest.mark.slow
def test_imported_knee_settles_at_25_degrees_with_its_wrapped_ligaments(knee_runs):
    for name, (project, run) in knee_runs.items():
        assert run.status == "completed", f"{name}: {run.message}"
        labels = run.labels["q"]
        q = run.series["q"][0]
        assert q[labels.index("knee_flex_r")] == pytest.approx(np.radians(25.0), abs=1e-12)
        assert run.summary["residual_force_N"] <= 1e-8 and run.summary["residual_moment_Nm"] <= 1e-9
        free = [labels.index(n) for n in KNEE_FREE]
        assert np.abs(q[free]).max() > 1e-4  # the tibia really moved to its equilibrium
        assert assert_lengths_match_muscle_paths(project, run) > 0  # and some ligaments wrap there
    tx = {name: r.series["q"][0, r.labels["q"].index("knee_tx_r")] for name, (_, r) in knee_runs.items()}
    # without its ACL the tibia sits further anterior (+x) under the same ligament preloads
    assert tx["lenhart2015_acld.osim"] > tx["lenhart2015.osim"] + 1e-3


def test_arm26_tissue_lengths_in_equilibrium_and_dynamics_equal_muscle_paths(arm26):
    project, _ = arm26
    project = set_coordinates(project, values={"r_elbow_flex": np.radians(60.0)})
    eq = run_equilibrium(set_coordinates(project, lock_all=True))
    assert eq.status == "completed", eq.message
    assert assert_lengths_match_muscle_paths(project, eq) > 0
    dyn = run_dynamics(project, t_end=0.05, report_dt=0.01, digits=6)
    assert dyn.status == "completed", dyn.message
    assert np.ptp(dyn.series["q"][:, 1]) > 1e-4  # the forearm falls under gravity
    assert assert_lengths_match_muscle_paths(project, dyn) > 0


@pytest.mark.slow
def test_anterior_drawer_on_the_imported_knee_holds_its_flexion_coordinate(knee_runs):
    """0 → −100 N along e2 on the tibia at 25° flexion (an anterior drawer: e2 points posteriorly at the
    knee, docs/laxity.md), the tibiofemoral joint's knee_flex_r held at +25° (it grows in flexion): the
    ACL-deficient knee translates further anteriorly than the intact one (JCS from the joint: no
    hand-set axes; the unloaded pose reads the held 25°). Ligaments only: the imported cartilage
    contact on the bare femur is the solver's part of issue 15 (item 5)."""
    from jointmodeller.app.laxity import run_laxity
    from jointmodeller.model import Experiment

    drawer = {}
    for name, (project, _) in knee_runs.items():
        tibia = project.mass("tibia_proximal_r")
        exp = Experiment("drawer", tibia.joint.parent, "tibia_proximal_r", load_kind="anterior_posterior",
                         max_load=100.0, steps=2, sides="negative", lever_m=0.0, flexion_deg=25.0,
                         measure="anterior_posterior_mm")
        run = run_laxity(project.with_rows("experiments", (exp,)).with_rows("contacts", ()))
        assert run.status == "completed", f"{name}: {run.message}"
        assert run.parameters["flexion_coordinate"] == "knee_flex_r"
        assert run.summary["flexion_deg_unloaded"] == pytest.approx(25.0, abs=1e-6)
        loads = run.series["load"]
        drawer[name] = -float(run.series["measure"][loads == -100.0][0])
        p = run.poses.p_G[:, 0]  # the moving body's centre of mass
        assert p[-1, 0] - p[0, 0] > 0  # OpenSim's +x is anterior: the tibia moved forwards
        assert drawer[name] > 0.5  # mm: an anterior force moves the tibia anteriorly
    assert drawer["lenhart2015_acld.osim"] > 2.0 * drawer["lenhart2015.osim"]
