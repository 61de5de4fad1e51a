"""The lenhart2015 knee settles on cartilage (issue 15 items 3 and 4, end to end from the CLI): its
tibial cartilage imported from the model, its missing femoral cartilage grown on the bone, the
tibiofemoral coordinates free at 25° flexion. Without contact the tibia rides ~13 mm into the femur
(its ligaments pull it there); on cartilage it stays out of the femur and the equilibrium is exact."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from jointmodeller.app.cartilage import _poses
from jointmodeller.app.coordinates import set_coordinates
from jointmodeller.cli import main
from jointmodeller.core.geometry.collision_proximity import SurfaceProximity
from jointmodeller.persistence import ProjectStore
from jointmodeller.persistence.store import save_project
from tests.io.osim.conftest import import_knee_at_25_degrees

KNEE_FREE = ("knee_add_r", "knee_rot_r", "knee_tx_r", "knee_ty_r", "knee_tz_r")


def _settle(db: str) -> tuple:
    assert main(["run", db, "--study", "equilibrium", "--max-wall-s", "1800"]) == 0
    with ProjectStore(db) as store:
        project = store.load_project()
        run = store.load_run(store.list_runs()[-1].id)
    labels = run.labels["q"]
    q = {n: float(run.series["q"][-1][labels.index(n)]) for n in labels}
    return project, run, q


def _tibia_depth_in_femur_bone(project, q) -> float:
    """Deepest point of the tibial cartilage below the femur's bone surface at the solved pose [m]."""
    posed = set_coordinates(project, values={k: v for k, v in q.items() if k.startswith("knee_")})
    poses = _poses(posed)
    fem, tib = posed.mass("femur_distal_r"), posed.mass("tibia_proximal_r")
    (R_f, t_f), (R_t, t_t) = poses["femur_distal_r"], poses["tibia_proximal_r"]
    pts = ((tib.cartilage.vertices_L @ R_t.T + t_t) - t_f) @ R_f
    cp = SurfaceProximity.build(fem.mesh.vertices_L, fem.mesh.faces).closest(pts, 0.03)
    return float(cp.depth.max()) if len(cp.depth) else -np.inf


@pytest.mark.slow
def test_knee_settles_on_imported_tibial_and_grown_femoral_cartilage(shared_models, shared_meshes, tmp_path):
    db = str(tmp_path / "knee.jmdb")
    import_knee_at_25_degrees(shared_models, shared_meshes, db, ",".join(KNEE_FREE))
    bare = str(tmp_path / "no_contact.jmdb")
    with ProjectStore(db) as store:
        project = store.load_project()
    save_project(bare, replace(project, contacts=()))
    assert main(["cartilage", db, "--bone", "femur_distal_r", "--facing", "tibia_proximal_r",
                 "--thickness-mm", "3"]) == 0

    project, run, q = _settle(db)
    assert run.status == "completed", run.message
    assert q["knee_flex_r"] == pytest.approx(np.radians(25.0), abs=1e-12)
    # the study's own tolerances, on the true (regenerated) contact set
    assert run.summary["residual_force_N"] <= 1e-6 and run.summary["residual_moment_Nm"] <= 1e-6
    _, _, q0 = _settle(bare)
    # without contact the tibia rides into the femur (its cartilage over a centimetre inside the
    # bone); on cartilage it stays out, within the layer it compresses (3 mm thick)
    assert _tibia_depth_in_femur_bone(project, q0) > 0.01
    assert _tibia_depth_in_femur_bone(project, q) < 0.003
    assert q0["knee_ty_r"] - q["knee_ty_r"] > 0.01
