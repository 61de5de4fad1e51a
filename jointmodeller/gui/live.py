"""Study adapters for the runner: every study as ``fn(progress, cancel) -> RunRecord`` where
``progress(fraction, sample=None)``; dynamics also sends live samples of the poses and tissue forces.

The live dynamics run is app.studies' dynamics study with one addition: the system is watched, so the
state the integrator last evaluated can be shown while the run goes on (at most LIVE_SAMPLE_HZ times
a second; the stored run is the same as ``run_dynamics`` stores).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import numpy as np

from jointmodeller.core.mechanics.rotations import quat_to_matrix
from jointmodeller.model.results import RunRecord
from jointmodeller.model.specs import Project

LIVE_SAMPLE_HZ = 40.0


CONTACT_SAMPLE_HZ = 2.0
"""Contact patches are evaluated for display at most this often (each costs a contact evaluation)."""


def live_sample(system, names: list[str], t: float, y: np.ndarray, tissue_names: list[str] | None = None,
                contacts: list | None = None) -> dict:
    """Poses of every mesh (mesh_R_GL (n, 3, 3), mesh_origin_G (n, 3)), tissue forces (m,) and paths
    (wrapped ones as last solved by the path provider: no extra solve), and contact points with
    pressures when ``contacts`` are given."""
    n = system.n_bodies
    p = y[: 3 * n].reshape(n, 3)
    q = y[3 * n: 7 * n].reshape(n, 4)
    R_GL = quat_to_matrix(q) @ system.bodies.R_BL
    origin = p - np.einsum("nij,nj->ni", R_GL, system.bodies.com_L)
    sample = {"time": float(t), "mesh_R_GL": R_GL, "mesh_origin_G": origin, "labels": {"mesh_R_GL": names}}
    try:
        kin = system.kinematics(y)
        loads = system.tissue_forces.evaluate(float(t), kin)
        sample["tissue_force_N"] = np.asarray(loads.tension, float)
        ts = system.tissues
        pa = kin.points_G(ts.body_a, ts.r_a_B)
        pb = kin.points_G(ts.body_b, ts.r_b_B)
        paths = [np.vstack([pa[i], pb[i]]) for i in range(ts.count)]
        last = getattr(getattr(system, "path_provider", None), "last", {}) or {}
        for i, wp in last.items():
            if 0 <= int(i) < len(paths) and getattr(wp, "points_G", None) is not None and len(wp.points_G) >= 2:
                paths[int(i)] = np.asarray(wp.points_G, float)
        sample["tissue_paths_G"] = paths
        if tissue_names is not None:
            sample["labels"]["tissue_force_N"] = list(tissue_names)
        if contacts:
            res = [c.evaluate(float(t), kin) for c in contacts if hasattr(c, "evaluate")]
            if res:
                sample["contact_points_G"] = np.concatenate([r.points_G for r in res]).reshape(-1, 3)
                sample["contact_pressure_Pa"] = np.concatenate([r.pressure for r in res]).reshape(-1)
    except Exception:  # a display extra: never let it stop the run
        pass
    return sample


def live_dynamics(project: Project, *, t_end: float, report_dt: float, progress: Callable, cancel,
                  digits: float = 6.0, method: str = "DOP853", contact: bool = True,
                  wrapping: bool = True) -> RunRecord:
    """app.studies.run_dynamics with live samples of the state being integrated, at most
    LIVE_SAMPLE_HZ a second (contact patches at most CONTACT_SAMPLE_HZ)."""
    from jointmodeller.app.studies import run_dynamics

    fraction_done = [0.0]

    def watch(built):
        names, tissue_names = list(built.body_names), list(built.tissue_names)
        last = [0.0, 0.0]

        def evaluated(t: float, y: np.ndarray) -> None:
            now = time.perf_counter()
            if now - last[0] >= 1.0 / LIVE_SAMPLE_HZ:
                last[0] = now
                with_contact = built.contacts and now - last[1] >= 1.0 / CONTACT_SAMPLE_HZ
                if with_contact:
                    last[1] = now
                progress(fraction_done[0], live_sample(built.system, names, t, y, tissue_names,
                                                       built.contacts if with_contact else None))
        return evaluated

    def report(fraction: float) -> None:
        fraction_done[0] = fraction
        progress(fraction)

    run = run_dynamics(project, t_end=t_end, report_dt=report_dt, digits=digits, method=method, progress=report,
                       cancel=cancel, contact=contact, wrapping=wrapping, watch=watch)
    simulated = float(run.summary.get("simulated_s") or 0.0)
    progress(1.0 if run.status == "completed" else simulated / max(t_end, 1e-12))
    return run


def study_function(study: str, project: Project, **options) -> Callable:
    """``fn(progress, cancel)`` running ``study`` ("equilibrium", "dynamics", "laxity") on ``project``."""
    if study == "dynamics":
        t_end = float(options.get("t_end", 1.0))
        report_dt = float(options.get("report_dt", min(t_end / 200.0, 0.01)))
        extra = {k: options[k] for k in ("digits", "method", "contact", "wrapping") if k in options}
        return lambda progress, cancel: live_dynamics(project, t_end=t_end, report_dt=report_dt,
                                                      progress=progress, cancel=cancel, **extra)
    if study == "equilibrium":
        from jointmodeller.app.studies import run_equilibrium

        return lambda progress, cancel: run_equilibrium(project, progress=progress, cancel=cancel)
    if study == "laxity":
        from jointmodeller.app.laxity import run_laxity

        def fn(progress, cancel: threading.Event):
            def step(done, total, load=None, value=None):
                progress(done / max(total, 1))

            return run_laxity(project, options.get("experiment"), progress=step, cancel=cancel.is_set)

        return fn
    raise KeyError(f"no study named {study!r}")


__all__ = ["LIVE_SAMPLE_HZ", "live_dynamics", "live_sample", "study_function"]


PROGRESS_INTERVAL_S = 1.0 / 20.0


def run_in_child(study: str, project: Project, options: dict, queue, cancel, resume) -> None:
    """Entry point of a study process: runs ``study`` and sends ("progress", f), ("sample", dict),
    then ("done", RunRecord) or ("failed", message) through ``queue``; waits while ``resume`` is clear
    and stops when ``cancel`` is set. No Qt here: the GUI process polls the queue."""
    import traceback

    last = [-1.0, 0.0]

    def progress(fraction: float, sample=None) -> None:
        resume.wait()
        now = time.perf_counter()
        f = float(fraction)
        if (f > last[0] and now - last[1] >= PROGRESS_INTERVAL_S) or f >= 1.0:
            last[0], last[1] = f, now
            queue.put(("progress", f))
        if sample is not None:
            queue.put(("sample", sample))

    try:
        run = study_function(study, project, **options)(progress, cancel)
    except Exception as exc:  # reported to the GUI, which stays up
        queue.put(("failed", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"))
        return
    queue.put(("done", run))
