"""Wrapping benchmarks: time per path over 50k + 20k vertex bones, accuracy on the cylinder helix.

Figures (issue 4):
- ms_per_path_70k: taut path warm-started from the previous step while one bone moves, as in a
  simulation; baseline the MJM heuristic on the same path and poses.
- ms_per_path_70k_cold: the same path with no warm start (spatial structures built once);
  baseline the MJM heuristic.
- ms_per_path_70k_field: ms_per_path_70k with each bone's signed distance field bounding the exact
  queries (issue 17 item 2); baseline ms_per_path_70k from the same run; the note says whether the
  40 paths came out the same.
- cylinder_error_pct_max: largest |length error| of the taut path against the analytic helix for
  endpoints on opposite faces, h/r in {0.5, 1, 2, 4}; baseline the MJM heuristic's error.
- mjm_cylinder_error_pct_max: the MJM heuristic's largest error; baseline a Dijkstra edge path's.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.spatial.transform import Rotation

from jointmodeller.bench.harness import Figure
from jointmodeller.core.geometry.wrapping.edge_path import edge_path
from jointmodeller.core.geometry.wrapping.mjm_path import mjm_path
from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose
from jointmodeller.core.geometry.wrapping.shapes import grid_cylinder
from jointmodeller.core.geometry.wrapping.taut_path import TautPathSolver

H_OVER_R = (0.5, 1.0, 2.0, 4.0)
MJM_METHOD = "covariance"


def _two_bones() -> tuple[list[MeshObstacle], np.ndarray, np.ndarray]:
    """A 50,946-vertex shaft (body 1, along z) and a 19,842-vertex bone across it (body 2)."""
    m1 = grid_cylinder(0.02, 0.2, 256, 160)
    m2 = grid_cylinder(0.015, 0.1, 160, 100)
    obstacles = [MeshObstacle(m1.vertices, m1.faces, 1), MeshObstacle(m2.vertices, m2.faces, 2)]
    a = np.array([0.0025, 0.05, -0.0035])  # origin on body 0 (ground), in front of the shaft
    b = np.array([-0.001, -0.061, 0.045])  # insertion just behind the second bone: wraps both
    return obstacles, a, b


def _pose(k: int) -> Pose:
    """Step k of a slow motion of body 2 (0.2° and 0.1° per step about two axes)."""
    R2 = (Rotation.from_rotvec([0.003 * k, 0.002 * k, 0.0]).as_matrix()
          @ Rotation.from_euler("y", 90, degrees=True).as_matrix())
    return Pose(np.array([[0, 0, 0], [0, 0, 0], [0, -0.04, 0.045]], float), np.stack([np.eye(3), np.eye(3), R2]))


def _timings(fields: bool = False) -> tuple[float, float, float, float, str, list]:
    """Warm and cold solve times over the two bones (with ``fields``: each bone's signed distance field
    bounding the exact queries), the MJM heuristic's, a note, and the warm paths' lengths."""
    obstacles, a, b = _two_bones()
    if fields:
        from jointmodeller.core.geometry.sdf import SignedDistanceField

        for ob in obstacles:
            ob.use_field(SignedDistanceField.build(ob.vertices_B, ob.faces))
    solver = TautPathSolver(obstacles)
    solver.solve(a, b, 0, 0, _pose(0), warm=False)  # compile kernels, first contacts
    warm, warm_cpu, mjm_t, its, lengths = [], [], [], [], []
    for k in range(1, 41):
        pose = _pose(k)
        t0, c0 = time.perf_counter(), time.process_time()
        p = solver.solve(a, b, 0, 0, pose)
        warm.append(time.perf_counter() - t0)
        lengths.append(p.length)
        warm_cpu.append(time.process_time() - c0)
        its.append(p.iterations)
        if k % 4 == 0:
            t0 = time.perf_counter()
            mjm_path(a, b, 0, 0, obstacles, pose, method=MJM_METHOD)
            mjm_t.append(time.perf_counter() - t0)
    cold, cold_cpu = [], []
    for k in range(0, 40, 8):
        solver.reset()
        t0, c0 = time.perf_counter(), time.process_time()
        p = solver.solve(a, b, 0, 0, _pose(k), warm=False)
        cold.append(time.perf_counter() - t0)
        cold_cpu.append(time.process_time() - c0)
    contacts = np.bincount(p.body[1:-1] + 1, minlength=4)[2:]
    note = (f"median of 40 warm steps ({np.mean(its):.1f} iterations), min of 5 cold solves; "
            f"contacts on the two bones {contacts.tolist()}; MJM {MJM_METHOD} median; process CPU "
            f"time warm {1e3 * np.median(warm_cpu):.2f} ms, cold {1e3 * np.min(cold_cpu):.2f} ms "
            f"(wall time suffers on a shared machine)")
    return (1e3 * float(np.median(warm)), 1e3 * float(np.min(cold)), 1e3 * float(np.median(mjm_t)),
            1e3 * float(np.min(mjm_t)), note, lengths)


def cylinder_errors() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Relative length errors [%] (taut, MJM, edge path) against the helix, one per h/r."""
    r = 0.02
    mesh = grid_cylinder(r, 0.2, 256, 160)
    ob = MeshObstacle(mesh.vertices, mesh.faces, 0)
    pose = Pose.identity(1)
    taut, mjm, edge = [], [], []
    for hr in H_OVER_R:
        h = hr * r
        a, b = np.array([r, 0.0, -h / 2]), np.array([-r, 0.0, h / 2])
        exact = float(np.hypot(np.pi * r, h))
        taut.append(TautPathSolver([ob]).solve(a, b, 0, 0, pose, warm=False).length / exact - 1)
        mjm.append(mjm_path(a, b, 0, 0, [ob], pose, method=MJM_METHOD).length / exact - 1)
        edge.append(edge_path(ob, a, b)[0] / exact - 1)
    return 100 * np.array(taut), 100 * np.array(mjm), 100 * np.array(edge)


def run() -> list[Figure]:
    warm_ms, cold_ms, mjm_ms, _, note, lengths = _timings()
    field_ms, field_cold_ms, _, _, field_note, field_lengths = _timings(fields=True)
    same = "the same 40 path lengths" if field_lengths == lengths else "DIFFERENT path lengths"
    taut, mjm, edge = cylinder_errors()
    per = lambda e: ", ".join(f"h/r={hr:g}: {x:+.3f}%" for hr, x in zip(H_OVER_R, e))  # noqa: E731
    return [
        Figure("ms_per_path_70k", warm_ms, "ms", mjm_ms, f"MJM heuristic ({MJM_METHOD})", True, note),
        Figure("ms_per_path_70k_cold", cold_ms, "ms", mjm_ms, f"MJM heuristic ({MJM_METHOD})", True, note),
        Figure("ms_per_path_70k_field", field_ms, "ms", warm_ms, "ms_per_path_70k (no fields), same run", True,
               f"the bones' distance fields bound the exact queries (issue 17 item 2): {same}; cold "
               f"{field_cold_ms:.2f} ms against {cold_ms:.2f} ms; {field_note}"),
        Figure("cylinder_error_pct_max", float(np.abs(taut).max()), "%", float(np.abs(mjm).max()),
               f"MJM heuristic ({MJM_METHOD})", True, f"taut {per(taut)}"),
        Figure("mjm_cylinder_error_pct_max", float(np.abs(mjm).max()), "%", float(np.abs(edge).max()),
               "Dijkstra edge path", True, f"MJM {per(mjm)}; edge path {per(edge)}"),
    ]
