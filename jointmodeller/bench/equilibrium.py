"""Benchmark group "equilibrium": the demo elbow's static equilibrium as the app runs it.

- demo_s: ``app.studies.run_equilibrium`` on the demo elbow (cartilage contact, wrapped ligaments):
  the multibody tree, contact sets frozen and regenerated in tree coordinates; beside the free-body
  solver (``core.studies.equilibrium.solve_equilibrium``, the tests' oracle) on the same project,
  which the app ran before. Both from the unloaded initial pose, compiled kernels warm (one untimed
  run each first), best of two. The note gives both residuals and the pose difference.
"""

from __future__ import annotations

import time

import numpy as np

from jointmodeller.bench.harness import Figure


def _best(fn, repeat: int = 2):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run() -> list[Figure]:
    from jointmodeller.app.build import build_mechanical_system
    from jointmodeller.app.demo import build_demo_project
    from jointmodeller.app.studies import run_equilibrium
    from jointmodeller.core.studies.equilibrium import solve_equilibrium

    project = build_demo_project()

    def tree():
        return run_equilibrium(project)

    free_system: list = []

    def free_body():
        built = build_mechanical_system(project)
        free_system[:] = [built.system]
        return solve_equilibrium(built.system, built.state)

    tree()
    free_body()
    t_tree, run = _best(tree)
    t_free, res = _best(free_body)
    p_tree = run.poses.p_G[-1]
    p_free, _ = free_system[0].positions(res.state)
    dp = float(np.abs(p_tree - p_free).max())
    note = (f"tree {run.status}, residual {run.summary.get('residual_force_N', float('nan')):.2g} N, "
            f"{run.summary.get('iterations')} iterations; free body converged={res.converged}, residual "
            f"{res.residual_force_N:.2g} N, {res.iterations} iterations; poses differ by {dp:.1e} m")
    return [Figure("demo_s", t_tree, "s", t_free, "free-body Newton (core.studies.equilibrium)", note=note)]
