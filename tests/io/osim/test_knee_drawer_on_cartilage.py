"""The lenhart2015 anterior drawer from the CLI only (issue 15): the knee at 25° flexion on imported
tibial and patellar cartilage and a grown femoral layer, the patellofemoral joint free under 100 N of
quadriceps tone, the drawer force 10 cm distal in the tibia frame, −100…+100 N in 21 loads. Every
step converges; the anterior drawer (the negative load: e2 points posteriorly at the knee) is taken
up by the ACL, the curve is monotone, and the report compares the anterior translation with
Markolf 1978."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.cli import main
from jointmodeller.persistence import ProjectStore
from tests.io.osim.conftest import import_knee_at_25_degrees

FREE = ("knee_add_r,knee_rot_r,knee_tx_r,knee_ty_r,knee_tz_r,"
        "pf_flex_r,pf_rot_r,pf_tilt_r,pf_tx_r,pf_ty_r,pf_tz_r")
TONE = [a for m in ("vasmed_r", "vaslat_r", "vasint_r", "recfem_r") for a in ("--tone", f"{m}=25")]


@pytest.mark.slow
def test_drawer_on_cartilage_with_the_patella_free_converges_at_every_step(shared_models, shared_meshes, tmp_path):
    db = str(tmp_path / "knee.jmdb")
    import_knee_at_25_degrees(shared_models, shared_meshes, db, FREE)
    assert main(["cartilage", db, "--bone", "femur_distal_r", "--facing", "tibia_proximal_r,patella_r",
                 "--thickness-mm", "3"]) == 0
    assert main(["experiment", "add", db, "drawer", "--fixed", "femur_distal_r", "--moving", "tibia_proximal_r",
                 "--load-kind", "anterior_posterior", "--max-load", "100", "--steps", "11", "--flexion-deg", "25",
                 "--load-point-mm", "0,-100,0", *TONE]) == 0
    assert main(["run", db, "--study", "laxity", "--max-wall-s", "3600"]) == 0
    with ProjectStore(db) as store:
        run = store.load_run(store.list_runs()[-1].id)
    assert run.status == "completed", run.message
    loads, mm = run.series["load"], run.series["measure"]
    assert loads.size == 21 and run.summary["steps_solved"] == 21
    assert run.series["residual_N"].max() <= 1e-2  # the sweep's contact tolerance, on the true contact
    order = np.argsort(loads)
    assert np.all(np.diff(mm[order]) > 0)  # more load, more translation, both ways
    s = run.summary
    assert s["flexion_deg_held"] == 25.0 and abs(s["flexion_deg_unloaded"] - 25.0) < 1e-6
    assert "knee_flex_r" in s["jcs"]
    # the ACL takes up the anterior drawer: slack or nearly so unloaded, most of the load at 100 N
    names = run.labels["tissue_tension_N"]
    acl = [k for k, n in enumerate(names) if "ACL" in n]
    i0, ia = int(np.argmin(np.abs(loads))), int(np.argmin(loads))
    T = run.series["tissue_tension_N"]
    assert T[ia, acl].sum() - T[i0, acl].sum() > 50.0
    assert 0.5 < s["anterior_mm_at_100N"] < 15.0  # millimetres, as knees are (Markolf: 5.5 in vivo)
    assert s["markolf_1978"]["model_anterior_mm"] == s["anterior_mm_at_100N"]
