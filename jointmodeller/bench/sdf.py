"""Benchmark group "sdf": narrow-band signed distance fields (core.geometry.sdf, issue 17 item 1).

Meshes: the real right humerus (arm_r_humerus.vtp) and tibial cartilage sheet
(lenhart2015-R-tibia-cartilage.stl) from ../shared/meshes when present, else procedural stand-ins (the
demo's ulna and its cartilage); and always the demo elbow's humerus (19k vertices, procedural, in the
repository), each at the default spacing (half the mean edge length, at most 1 mm) and band (4 cells).

Per mesh:
- query_ms_10k_<mesh>: value and gradient at 10,000 points within the field's accurate band
  (compiled kernel), beside the repo's exact contact query (SurfaceProximity.closest: k-d tree and
  closest point on the faces around the nearest vertices, structures built) on the same points.
- build_s_<mesh>: building the field (compiled, no cache), beside building the exact query's
  structures (SurfaceProximity.build) of the same mesh.
- cached_open_ms_<mesh>: the field read from the disk cache (io.sdf_cache, a temporary folder),
  beside building it.
- memory_mb_<mesh>: the field's arrays, beside a dense float32 grid over the same lattice box.
- max_error_um_<mesh>: largest | |field| − exact distance | at the 10,000 points (points whose exact
  closest face is on the rim of an open sheet left out), beside the proven bound h·√3/2; the note
  gives how often the field's sign (pseudo-normals) agrees with the exact query's (the interpolated
  vertex normal at the closest point) where |d| > 2h.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

import numpy as np

from jointmodeller.bench.harness import Figure, time_call

N_POINTS = 10_000


def _shared() -> Path | None:
    here = Path(__file__).resolve().parents[2]
    path = Path(os.environ.get("JOINTMODELLER_SHARED", here.parent / "shared")) / "meshes"
    return path if path.is_dir() else None


def _meshes() -> list[tuple[str, np.ndarray, np.ndarray, str]]:
    """(name, vertices, faces, source note) of the benchmarked meshes."""
    from jointmodeller.app.demo import load_demo_meshes
    from jointmodeller.io.meshes import read_mesh

    demo = load_demo_meshes()
    out = []
    folder = _shared()
    real = {"humerus": "arm_r_humerus.vtp", "tibia_cartilage": "lenhart2015-R-tibia-cartilage.stl"}
    stand_in = {"humerus": "ulna", "tibia_cartilage": "ulna_cartilage"}
    for name, file in real.items():
        if folder is not None and (folder / file).is_file():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # open surfaces are reported, as expected
                m = read_mesh(folder / file, units="m")
            out.append((name, m.vertices_L, m.faces, file))
        else:  # pragma: no cover - only without the licensed meshes
            m = demo[stand_in[name]]
            out.append((name, m.vertices_L, m.faces,
                        f"stand-in: procedural demo {stand_in[name]} (shared meshes absent)"))
    m = demo["humerus"]
    out.append(("demo_humerus", m.vertices_L, m.faces, "procedural demo elbow humerus"))
    return [(n, np.ascontiguousarray(v, np.float64), np.ascontiguousarray(f, np.int64), note) for n, v, f, note in out]


def _points(v: np.ndarray, f: np.ndarray, reach: float, rng: np.random.Generator) -> np.ndarray:
    """N_POINTS points within about ``reach`` of the surface (area-weighted, along the face normals)."""
    fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    area = np.linalg.norm(fn, axis=1)
    face = rng.choice(len(f), N_POINTS, p=area / area.sum())
    r = rng.random((N_POINTS, 2))
    flip = r.sum(axis=1) > 1
    r[flip] = 1 - r[flip]
    s = v[f[face, 0]] + r[:, :1] * (v[f[face, 1]] - v[f[face, 0]]) + r[:, 1:] * (v[f[face, 2]] - v[f[face, 0]])
    return s + fn[face] / area[face, None] * rng.uniform(-reach, reach, (N_POINTS, 1))


def _mesh_figures(name: str, v: np.ndarray, f: np.ndarray, note: str, cache: Path) -> list[Figure]:
    from jointmodeller.core.geometry.collision_proximity import SurfaceProximity
    from jointmodeller.core.geometry.sdf import SignedDistanceField
    from jointmodeller.core.mechanics.contact import boundary_faces
    from jointmodeller.io.sdf_cache import cached_field

    t_build = time_call(lambda: SignedDistanceField.build(v, f), repeat=3)
    sdf = SignedDistanceField.build(v, f)
    t_prox_build = time_call(lambda: SurfaceProximity.build(v, f), repeat=3)
    prox = SurfaceProximity.build(v, f)
    first = cached_field(v, f, folder=cache)
    t_open = time_call(lambda: cached_field(v, f, folder=cache), repeat=5)
    hit = cached_field(v, f, folder=cache).hit

    p = _points(v, f, 0.95 * sdf.accurate_band, np.random.default_rng(0))
    sdf.value_and_gradient(p[:10])  # compile / load the kernel
    prox.closest(p[:10], sdf.band)
    t_query = time_call(lambda: sdf.value_and_gradient(p), repeat=7)
    t_value = time_call(lambda: sdf.value(p), repeat=7)
    t_numpy = time_call(lambda: sdf.value_and_gradient(p, use_numba=False), repeat=3)
    t_exact = time_call(lambda: prox.closest(p, sdf.band), repeat=3)

    cp = prox.closest(p, sdf.band)
    rim = boundary_faces(f)
    keep = (~rim[cp.face]) & (np.abs(cp.depth) <= sdf.accurate_band)
    val = sdf.value(p[cp.index[keep]])
    depth = cp.depth[keep]  # > 0 beneath, sign from the interpolated vertex normal
    err = np.abs(np.abs(val) - np.abs(depth))
    clear = np.abs(depth) > 2 * sdf.spacing
    agree = float(np.mean(np.sign(val[clear]) == -np.sign(depth[clear]))) if clear.any() else float("nan")

    h_mm = sdf.spacing * 1e3
    desc = (f"{note}: {len(v)} vertices, {len(f)} faces, h = {h_mm:.3f} mm, band {sdf.band * 1e3:.2f} mm, "
            f"{len(sdf.values)} blocks of 8³")
    return [
        Figure(f"query_ms_10k_{name}", t_query * 1e3, "ms", t_exact * 1e3,
               "SurfaceProximity.closest (exact contact query) on the same points", True,
               f"{desc}; value only {t_value * 1e3:.2f} ms; numpy path {t_numpy * 1e3:.1f} ms; "
               f"{len(cp.index)} of {N_POINTS} points within the band found by the exact query"),
        Figure(f"build_s_{name}", t_build, "s", t_prox_build, "SurfaceProximity.build (exact query structures)",
               True, desc),
        Figure(f"cached_open_ms_{name}", t_open * 1e3, "ms", t_build * 1e3, "building the field (no cache)", True,
               f"{desc}; .npz of {first.path.stat().st_size / 1e6:.2f} MB, read back with checks and digest; "
               f"cache hit: {hit}"),
        Figure(f"memory_mb_{name}", sdf.nbytes / 1e6, "MB", sdf.dense_nbytes / 1e6,
               "dense float32 grid over the same lattice box", True, desc),
        Figure(f"max_error_um_{name}", float(err.max()) * 1e6 if len(err) else float("nan"), "um",
               sdf.error_bound * 1e6, "bound h·√3/2", True,
               f"{desc}; | |field| − exact distance | at {len(err)} points within the accurate band off the "
               f"rim: median {np.median(err) * 1e6:.2f} um, 99th percentile {np.percentile(err, 99) * 1e6:.2f} um; "
               f"sign agrees with the exact query's (interpolated vertex normal) at {100 * agree:.2f}% of the "
               f"{int(clear.sum())} points farther than 2h"),
    ]


def run() -> list[Figure]:
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="jm-sdf-bench-") as tmp:
        for name, v, f, note in _meshes():
            figures += _mesh_figures(name, v, f, note, Path(tmp))
    return figures
