"""Benchmark group "collision": MJM predictive search and contact evaluation on 50k + 20k vertices.

Meshes: the Lenhart 2015 knee (femur and tibia subchondral bone, ../shared/meshes) refined to about
50,000 and 20,000 vertices; without them, two refined icospheres of the same sizes stand in (noted).

- ms_70k: one predictive query (femur moving towards the tibia, structures built), beside the
  exhaustive O(n·m) search on the same meshes and pose in the same run (seed 004 §4.2 reports
  45 s vs 21 min); both must find the same pair.
- build_ms_70k: building the collision structures (normals, grid, distance bounds) of both meshes,
  beside building scipy cKDTrees of the same vertices.
- contact_eval_ms_70k: one elastic-foundation ContactPair evaluation with the bones in contact,
  beside trimesh.proximity.closest_point on just the vertices found in contact (a lower bound of
  what trimesh would need: it has no cheap filter for the others).
- contact_field_ms_70k: the same pair and pose on the "field" geometry (signed distance field of the
  tibia, issue 17), beside the exact geometry's evaluation, both with the candidates of a nearby pose
  reused; the note gives the force difference and the field's build time.
- contact_field_ms_demo_steps: the demo elbow's cartilage pair along 40 poses of a sliding, pressing
  motion in 2 µm steps (what an integrator's evaluations look like), field against exact geometry.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from jointmodeller.bench.harness import Figure, time_call

N_MOVING, N_TARGET = 50_000, 20_000


def _shared_meshes() -> Path | None:
    here = Path(__file__).resolve().parents[2]
    path = Path(os.environ.get("JOINTMODELLER_SHARED", here.parent / "shared")) / "meshes"
    return path if (path / "lenhart2015-R-femur-subchondral-bone.stl").is_file() else None


def load_meshes():
    """((femur v, f), (tibia v, f), source note) refined to about 50k and 20k vertices."""
    import trimesh

    from jointmodeller.core.geometry.collision_refine import refine_mesh

    folder = _shared_meshes()
    if folder is not None:
        fem = trimesh.load(folder / "lenhart2015-R-femur-subchondral-bone.stl")
        tib = trimesh.load(folder / "lenhart2015-R-tibia-subchondral-bone.stl")
        note = "Lenhart 2015 knee subchondral bone, refined"
    else:  # pragma: no cover - only without the licensed meshes
        fem = trimesh.creation.icosphere(3, 0.03)
        tib = trimesh.creation.icosphere(3, 0.02)
        tib.apply_translation([0, -0.055, 0])
        note = "stand-in icospheres (shared meshes absent)"
    fv, ff = refine_mesh(fem.vertices, fem.faces, N_MOVING)
    tv, tf = refine_mesh(tib.vertices, tib.faces, N_TARGET)
    return (fv, ff), (tv, tf), note


def run() -> list[Figure]:
    import trimesh
    from scipy.spatial import cKDTree

    from jointmodeller.core.data import using
    from jointmodeller.core.geometry.collision import CollisionSurface, RelativeMotion, predict_collision
    from jointmodeller.core.mechanics.contact import ContactPair
    from jointmodeller.core.mechanics.forces import BodyKinematics

    (fv, ff), (tv, tf), note = load_meshes()
    sizes = f"{len(fv)} + {len(tv)} vertices; {note}"

    build = time_call(lambda: (CollisionSurface.from_mesh(fv, ff), CollisionSurface.from_mesh(tv, tf)), repeat=3)
    kd = time_call(lambda: (cKDTree(fv), cKDTree(tv)), repeat=3)
    femur, tibia = CollisionSurface.from_mesh(fv, ff), CollisionSurface.from_mesh(tv, tf)

    # the femur above the tibia, moving down onto it (straight, as in the paper's timed examples)
    towards = tv.mean(axis=0) - fv.mean(axis=0)
    towards /= np.linalg.norm(towards)
    rng = np.random.default_rng(0)
    poses = [(np.eye(3), rng.normal(0, 0.002, 3) - 0.003 * towards,
              RelativeMotion(towards + rng.normal(0, 0.2, 3), np.zeros(3))) for _ in range(5)]
    predict_collision(femur, tibia, *poses[0])  # compile the kernels
    times = [time_call(lambda p=p: predict_collision(femur, tibia, *p), repeat=5) for p in poses]
    fast = predict_collision(femur, tibia, *poses[0])
    t_fast = times[0]
    t0 = time.perf_counter()
    slow = predict_collision(femur, tibia, *poses[0], method="exhaustive")
    t_slow = time.perf_counter() - t0
    agree = ("same pair and distance" if (fast.i, fast.j, fast.distance) == (slow.i, slow.j, slow.distance)
             else "DISAGREE")

    # contact: the femur pressed onto the tibia by its predicted distance plus 0.5 mm
    pair = ContactPair(0, 1, fv, ff, tv, tf, thickness=0.003, youngs_modulus=10e6, poisson=0.45)
    shift = fast.distance + 0.0015  # the point-cloud prediction runs ahead of the surfaces by ~1 mm here
    kin = BodyKinematics(np.array([shift * fast.direction_B + poses[0][1], [0, 0, 0]]), np.tile(np.eye(3), (2, 1, 1)),
                         np.zeros((2, 3)), np.zeros((2, 3)))
    res = pair.evaluate(0.0, kin)
    def cold():
        with using():  # fresh evaluation data: no candidate reuse, every bed vertex filtered again
            return pair.evaluate(0.0, kin)

    t_eval = time_call(cold, repeat=5)
    t_warm = time_call(lambda: pair.evaluate(0.0, kin), repeat=5)
    near = pair.surface_b.proximity.near_mask(fv + kin.p_G[0], pair.search_distance)
    tib_mesh = trimesh.Trimesh(tv, tf, process=False)
    q = (fv + kin.p_G[0])[res.bed_vertex]  # only the vertices found in contact: a lower bound of its work
    t_tm = time_call(lambda: trimesh.proximity.closest_point(tib_mesh, q), repeat=1)

    field_figures = _field_figures(pair, kin, res)
    return [
        *field_figures,
        Figure("ms_70k", t_fast * 1e3, "ms", t_slow * 1e3, "exhaustive search, same meshes and pose", True,
               f"{sizes}; {agree}; grid over 5 poses: median {np.median(times) * 1e3:.2f} ms, "
               f"max {max(times) * 1e3:.2f} ms"),
        Figure("build_ms_70k", build * 1e3, "ms", kd * 1e3, "scipy cKDTree of both vertex sets", True, sizes),
        Figure("contact_eval_ms_70k", t_eval * 1e3, "ms", t_tm * 1e3,
               "trimesh.proximity.closest_point on just the contact vertices", True,
               f"{sizes}; {res.n_points} contact points, {near.sum()} near vertices, "
               f"max penetration {res.max_penetration * 1e3:.2f} mm; {t_warm * 1e3:.1f} ms when the "
               "candidates of a nearby pose are reused (Newton iterations, integrator steps)"),
    ]


def _field_figures(pair, kin, res) -> list[Figure]:
    """The "field" contact geometry against the exact one: the 70k pair, and the demo's cartilage
    along a motion in small steps."""
    from jointmodeller.core.data import using
    from jointmodeller.core.mechanics.forces import BodyKinematics

    t0 = time.perf_counter()
    field = pair.with_geometry("field")
    build_s = time.perf_counter() - t0
    with using():
        r_f = field.evaluate(0.0, kin)
        t_field = time_call(lambda: field.evaluate(0.0, kin), repeat=5)
    with using():
        pair.evaluate(0.0, kin)
        t_exact = time_call(lambda: pair.evaluate(0.0, kin), repeat=5)
    diff = np.linalg.norm(r_f.total_force_G - res.total_force_G) / np.linalg.norm(res.total_force_G)
    out = [Figure("contact_field_ms_70k", t_field * 1e3, "ms", t_exact * 1e3,
                  "exact geometry, same pair and pose, candidates reused", True,
                  f"{r_f.n_points} against {res.n_points} contact points; total force within {diff:.2%}; "
                  f"field of the tibia built in {build_s:.1f} s (cached on disk by the app)")]
    try:
        from jointmodeller.app.build import build_mechanical_system
        from jointmodeller.app.demo import build_demo_project
    except ImportError:  # pragma: no cover - the demo ships with the package
        return out
    built = build_mechanical_system(build_demo_project(), wrapping=False)
    exact_demo = built.system.extra_elements[0]
    t0 = time.perf_counter()
    field_demo = exact_demo.with_geometry("field")
    build_demo_s = time.perf_counter() - t0
    kin0 = built.system.kinematics(built.state.y)
    rng = np.random.default_rng(3)
    path = np.array([0.0, 0.0, 2.5e-4]) + np.cumsum(rng.normal(0.0, 2e-6, (40, 3)), axis=0)
    kins = [BodyKinematics(kin0.p_G + np.array([[0.0], [1.0]]) * d, kin0.R_GB, kin0.v_G, kin0.w_G) for d in path]

    def along(p) -> list:
        with using():
            return [p.evaluate(0.0, k) for k in kins]

    along(field_demo)  # compile
    t_f = time_call(lambda: along(field_demo), repeat=3) / len(kins)
    t_e = time_call(lambda: along(exact_demo), repeat=3) / len(kins)
    res_f, res_e = along(field_demo), along(exact_demo)
    worst = max(np.linalg.norm(a.total_force_G - b.total_force_G) / np.linalg.norm(b.total_force_G)
                for a, b in zip(res_f, res_e))
    out.append(Figure("contact_field_ms_demo_steps", t_f * 1e3, "ms", t_e * 1e3,
                      "exact geometry along the same poses", True,
                      f"demo cartilage pair, {res_e[0].n_points} contact points; total force within "
                      f"{worst:.2%} at every pose; field built in {build_demo_s:.1f} s"))
    return out
