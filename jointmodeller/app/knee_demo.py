"""The built-in knee demo: OpenSim JAM's lenhart2015 tibiofemoral knee at 25° flexion with an anterior
drawer experiment (`jointmodeller demo --knee`; docs/knee.md).

Its data ship with the package (``jointmodeller/assets/lenhart2015/``, Apache-2.0, credit and licence
beside them), generated once from ../shared by scripts/make_knee_demo.py: the imported model reduced
to the distal femur (fixed), the proximal tibia on the 6-DOF ``knee_r`` joint and the shank, with the
55 Blankevoort ligament bundles, their wrap objects and the imported tibiofemoral contact pair, as a
project JSON without meshes; and the decimated bone and tibial cartilage surfaces. The demo never reads
../shared. The rest is the CLI recipe of docs/knee.md done by the same use cases: the coordinates
(``app.coordinates``: all locked but the five the drawer moves, 25° flexion), the femoral cartilage the
scan lacks grown on the bone (``app.cartilage``) and the experiment (``app.setup_rows``).

The patella is left out (docs/knee.md): locked at its default pose its tendon pulls the tibia with
4.4 kN, and freeing it needs quadriceps tone along muscle paths from bodies the demo does not carry.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from jointmodeller.app.cartilage import grow_cartilage
from jointmodeller.app.coordinates import set_coordinates
from jointmodeller.app.setup_rows import add_row, experiment_from_options
from jointmodeller.io.meshes import read_mesh
from jointmodeller.model.codec import project_from_json
from jointmodeller.model.mesh import MeshData
from jointmodeller.model.specs import Project
from jointmodeller.model.validation import validate_project

__all__ = ["build_knee_demo_project", "DATA_DIR", "KNEE_BODIES", "KNEE_FREE", "FLEXION_DEG", "hausdorff_m"]

DATA_DIR = Path(__file__).resolve().parents[1] / "assets" / "lenhart2015"
"""The knee demo's package data (pyproject.toml package-data: the wheel carries it)."""

PROJECT_FILE = "knee.json"
MESH_FILES = {
    "femur_distal_r": "femur_distal_r.ply",
    "tibia_proximal_r": "tibia_proximal_r.ply",
    "tibia_proximal_r_cartilage": "tibia_proximal_r_cartilage.ply",
}

MESH_ORIGINALS = {
    "femur_distal_r": ("lenhart2015-R-femur-subchondral-bone.stl",),
    "tibia_proximal_r": ("lenhart2015-R-tibia-subchondral-bone.stl", "lenhart2015-R-fibula-bone.stl"),
    "tibia_proximal_r_cartilage": ("lenhart2015-R-tibia-cartilage.stl",),
}
"""Each committed mesh's originals (../shared/meshes; merged in this order where there are two)."""

KNEE_BODIES = ("femur_distal_r", "tibia_proximal_r", "tibia_r")
"""The masses kept from lenhart2015: distal femur (fixed), proximal tibia (on knee_r), shank (welded)."""

FEMUR, TIBIA = "femur_distal_r", "tibia_proximal_r"
KNEE_FREE = ("knee_add_r", "knee_rot_r", "knee_tx_r", "knee_ty_r", "knee_tz_r")
"""Free in the demo; knee_flex_r is held at FLEXION_DEG."""

FLEXION_DEG = 25.0
FEMORAL_CARTILAGE_M = 0.003
"""Thickness of the femoral layer grown on the bone (the model's femoral cartilage mesh is missing;
docs/cartilage.md); the imported pair's lumped thickness (6 mm) is the model's own."""

DRAWER: dict[str, Any] = dict(name="anterior drawer at 25° flexion", load_kind="anterior_posterior",
                              max_load=100.0, steps=11, flexion_deg=FLEXION_DEG, load_point_mm="0,-100,0")
"""−100 … +100 N in 21 loads (11 per side), applied 10 cm distal in the tibia's frame as JAM does."""


def _mesh(key: str) -> MeshData:
    return read_mesh(DATA_DIR / MESH_FILES[key], units="m", name="+".join(MESH_ORIGINALS[key]) + " (decimated)")


def knee_base_project() -> Project:
    """The committed knee: masses with their meshes, ligaments, wrap objects and the contact pair, at
    the model's default pose, no experiment (what scripts/make_knee_demo.py wrote, meshes attached)."""
    project = project_from_json((DATA_DIR / PROJECT_FILE).read_text(encoding="utf-8"))
    meshes = {FEMUR: (_mesh(FEMUR), None), TIBIA: (_mesh(TIBIA), _mesh("tibia_proximal_r_cartilage"))}
    masses = tuple(replace(m, mesh=meshes[m.name][0], cartilage=meshes[m.name][1]) if m.name in meshes else m
                   for m in project.masses)
    return replace(project, masses=masses)


def build_knee_demo_project(contact: bool = True) -> Project:
    """The demo knee: femur fixed, tibia free in ab/adduction, rotation and translation at 25° flexion,
    55 ligament bundles, tibiofemoral cartilage contact (imported tibial layer, a 3 mm femoral layer
    grown on the bone) and the anterior drawer experiment.

    contact=False: without the contact pair (ligaments only; the tibia then rides into the femur, but
    the equilibrium is fast: for quick tests)."""
    project = knee_base_project()
    project = set_coordinates(project, lock_all=True, free=KNEE_FREE,
                              values={"knee_flex_r": math.radians(FLEXION_DEG)})
    if contact:
        project, _ = grow_cartilage(project, FEMUR, [TIBIA], FEMORAL_CARTILAGE_M)
    else:
        project = replace(project, contacts=())
    project = add_row(project, "experiment", experiment_from_options(fixed=FEMUR, moving=TIBIA, **DRAWER))
    validate_project(project)
    return project


def hausdorff_m(a: MeshData, b: MeshData, samples: int = 100_000, seed: int = 1) -> float:
    """Symmetric Hausdorff distance [m] between two surfaces: the largest distance from points on
    either (its vertices and ``samples`` area-uniform random points) to the other surface, exact
    closest points by VTK's cell locator."""
    import pyvista as pv

    def as_pv(m: MeshData):
        return pv.PolyData(np.asarray(m.vertices_L, float),
                           np.hstack([np.full((m.n_faces, 1), 3), np.asarray(m.faces)]).ravel())

    def points_on(m: MeshData, rng) -> np.ndarray:
        tri = np.asarray(m.vertices_L, float)[np.asarray(m.faces)]
        area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
        k = rng.choice(len(tri), size=samples, p=area / area.sum())
        u, v = rng.random((2, samples))
        flip = u + v > 1
        u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
        p = tri[k, 0] + u[:, None] * (tri[k, 1] - tri[k, 0]) + v[:, None] * (tri[k, 2] - tri[k, 0])
        return np.vstack([p, m.vertices_L])

    rng = np.random.default_rng(seed)
    worst = 0.0
    for x, y in ((a, b), (b, a)):
        pts = points_on(x, rng)
        _, cp = as_pv(y).find_closest_cell(pts, return_closest_point=True)
        worst = max(worst, float(np.linalg.norm(cp - pts, axis=1).max()))
    return worst
