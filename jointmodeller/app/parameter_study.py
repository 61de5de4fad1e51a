"""Laxity parameter studies: the same experiment over many tissue scalings (one-at-a-time cases),
run on app.executors (in process, local processes or Dask), and their summary run."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from jointmodeller.app.calibration import scaled_tissue_system
from jointmodeller.app.executors import run_cases
from jointmodeller.app.laxity import build_joint, find_experiment, sweep_project
from jointmodeller.model.results import RunRecord
from jointmodeller.model.specs import Project


def laxity_case(case: dict) -> dict:
    """One parameter-study case (module-level, picklable): {"project": Project, "experiment": name,
    "stiffness": {group: scale}, "slack": {group: scale}} -> laxity and the curve."""
    project: Project = case["project"]
    experiment = find_experiment(project, case.get("experiment"))
    joint = build_joint(project)
    stiff = case.get("stiffness", {}) or {}
    slack = case.get("slack", {}) or {}
    groups = sorted(set(stiff) | set(slack))
    if groups:
        joint = replace(joint, system=scaled_tissue_system(
            joint, groups, np.array([stiff.get(g, 1.0) for g in groups]),
            np.array([slack.get(g, 1.0) for g in groups]) if slack else None))
    res = sweep_project(project, experiment, joint=joint)
    return {"stiffness": dict(stiff), "slack": dict(slack), "laxity": res.laxity,
            "loads": res.loads.tolist(), "values": res.measure.tolist()}


def one_at_a_time_cases(groups: list[str], scales=(0.5, 0.75, 1.0, 1.5, 2.0)) -> list[dict]:
    """Stiffness of each group alone at each scale (the others at 1)."""
    return [{"stiffness": {g: float(s)}} for g in groups for s in scales]


def parameter_study(project: Project, experiment_name: str | None, cases: list[dict], *, scheduler: Any = None,
                    max_workers: int | None = None, progress: Callable[[int, int], None] | None = None,
                    case_fn: Callable[[dict], dict] = laxity_case) -> RunRecord:
    """Run independent laxity cases through an executor (local processes, or Dask when ``scheduler``
    is an address or Client) and collect them into one RunRecord (study "laxity_study")."""
    t0 = time.perf_counter()
    full = [{"project": project, "experiment": experiment_name, **c} for c in cases]
    results = run_cases(case_fn, full, scheduler=scheduler, max_workers=max_workers, progress=progress)
    return study_run(results, executor="dask" if scheduler is not None else "processes",
                     seconds=time.perf_counter() - t0)


def study_run(results: list[dict], executor: str, seconds: float = 0.0) -> RunRecord:
    """Stack case results (dicts with stiffness/slack/laxity/loads/values) into a RunRecord."""
    keys = sorted({f"stiffness:{g}" for r in results for g in r.get("stiffness", {})}
                  | {f"slack:{g}" for r in results for g in r.get("slack", {})})
    P = np.array([[r.get(k.split(":", 1)[0], {}).get(k.split(":", 1)[1], 1.0) for k in keys] for r in results],
                 float).reshape(len(results), len(keys))
    lax = np.array([r["laxity"] for r in results], float)
    width = max((len(r["values"]) for r in results), default=0)
    curves = np.full((len(results), width), np.nan)
    loads = np.full((len(results), width), np.nan)
    for i, r in enumerate(results):
        curves[i, : len(r["values"])] = r["values"]
        loads[i, : len(r["loads"])] = r["loads"]
    return RunRecord(study="laxity_study", parameters={"executor": executor, "cases": len(results)},
                     series={"parameters": P, "laxity": lax, "loads": loads, "values": curves},
                     labels={"parameters": keys},
                     summary={"laxity_min": float(np.nanmin(lax)) if lax.size else None,
                              "laxity_max": float(np.nanmax(lax)) if lax.size else None, "seconds": seconds})
