"""The ``jointmodeller laxity`` command's use case: replay an experiment from a project file,
optionally against measured data and with calibration, and write its report folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import numpy as np

from jointmodeller.app.calibration import calibrate_experiment, calibration_groups
from jointmodeller.app.laxity import build_joint, experiment_loads, find_experiment, run_laxity
from jointmodeller.app.laxity_report import import_measured, load_unit, tissue_parameters, write_report
from jointmodeller.app.parameter_study import one_at_a_time_cases, parameter_study
from jointmodeller.core.studies.calibration import CalibrationProgress
from jointmodeller.model.errors import JointModellerError
from jointmodeller.model.specs import Experiment


def _check_output_folder(out_dir) -> Path:
    """The report folder, checked before any sweep (nothing is made here): one clear error when it is a
    file, or when it or the folder it would be made in cannot be written."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise JointModellerError(f"--out {out}: exists and is not a folder; give a folder for the report")
    base = out
    while not base.exists():  # the nearest existing folder, where the new ones would be made
        if base.parent == base:
            break
        base = base.parent
    if not base.is_dir():
        raise JointModellerError(f"--out {out}: {base} is not a folder, so the report folder cannot be made there")
    if not os.access(base, os.W_OK):
        raise JointModellerError(f"--out {out}: {base} is read-only")
    return out


def _check_measured_in_sweep(experiment: Experiment, source=None) -> None:
    """Measured loads must lie within the experiment's sweep (its curve is interpolated at them)."""
    if not experiment.measured:
        return
    loads = np.array([p.load for p in experiment.measured], float)
    sweep = experiment_loads(experiment)
    lo, hi = float(sweep.min()), float(sweep.max())
    span = max(abs(lo), abs(hi), 1e-12)
    if loads.min() < lo - 1e-9 * span or loads.max() > hi + 1e-9 * span:
        where = f" in {source}" if source is not None else ""
        raise JointModellerError(
            f"experiment {experiment.name!r}: measured loads{where} reach {loads.min():g}..{loads.max():g} "
            f"{load_unit(experiment)}, beyond the sweep {lo:g}..{hi:g} {load_unit(experiment)}; raise the "
            f"experiment's max_load (now {experiment.max_load:g}) or leave those rows out")


def laxity_command(project_path, experiment: str | None = None, data=None, calibrate: bool = False,
                   out_dir="laxity-report", scheduler: str | None = None,
                   progress: Callable[[str, int, int], None] | None = None, *, per: str = "spring",
                   fit_slack: bool = False, groups: list[str] | None = None,
                   study_cases: list[dict] | None = None, max_wall_s: float | None = None, workers: int = 1,
                   calibration_progress: Callable[[CalibrationProgress], None] | None = None,
                   max_iterations: int | None = None) -> dict:
    """``jointmodeller laxity PROJECT [--experiment NAME] [--data FILE] [--calibrate] [--scheduler ADDR]
    [--workers N] [--max-wall-s S] --out DIR``: replay, compare, calibrate, study and report; returns
    the summary (summary.json).

    The run is stored in the project file; a calibrated project goes to ``<out>/<stem>-calibrated.jmdb``
    (the original is kept). With ``calibrate`` the fit's finite-difference columns run on ``scheduler``
    (Dask: an address, "local[:N]") or on ``workers`` local processes. Without ``calibrate``, a
    ``scheduler`` (or ``study_cases``) runs a one-at-a-time stiffness study through the executor (Dask
    at that address; local processes when only cases are given). progress(stage, done, total) with
    stage "sweep", "calibrate" (done = iterations, total = the most allowed), "study";
    calibration_progress(CalibrationProgress) instead for the calibration's iterations and cost.
    max_wall_s: the sweep stops after this many seconds and keeps (stores and reports) the steps solved
    by then; the calibration, given as long, ends with the best scales so far (status "budget").
    """
    from jointmodeller.persistence.store import ProjectStore, load_project, save_project

    project_path = Path(project_path)
    out_dir = _check_output_folder(out_dir)  # before the sweep: a bad --out must not lose its results
    project = load_project(project_path)
    exp = find_experiment(project, experiment)
    if data is not None:
        project = import_measured(project, exp.name, data)
        exp = find_experiment(project, exp.name)
    _check_measured_in_sweep(exp, data)
    out_dir.mkdir(parents=True, exist_ok=True)  # every input checked: now the folder may be made
    joint = build_joint(project)
    total = len(experiment_loads(exp))
    run = run_laxity(project, exp.name, None if progress is None else (lambda i, n, lo, v: progress("sweep", i, n)),
                     joint=joint, max_wall_s=max_wall_s)
    with ProjectStore(project_path) as store:  # a failed sweep too: its solved steps are kept
        run_id = store.save_run(run)
    if run.status == "failed":
        solved = int(run.series["load"].size) if "load" in run.series else 0
        if solved:
            write_report(out_dir, project, exp, run, extra={"run_id": run_id, "steps": total})
        kept = (f"its {solved} solved step(s) are stored as run #{run_id} and reported in {out_dir}" if solved
                else f"stored as failed run #{run_id}")
        raise RuntimeError(f"laxity sweep failed: {run.message}; {kept}")
    fit = cal_run = None
    extra: dict = {}
    if calibrate:
        from jointmodeller.app.calibration import DEFAULT_MAX_ITERATIONS

        most = DEFAULT_MAX_ITERATIONS if max_iterations is None else max_iterations
        report_fit = calibration_progress
        if report_fit is None and progress is not None:
            def report_fit(state: CalibrationProgress) -> None:
                progress("calibrate", state.iteration, most)
        fitted, fit = calibrate_experiment(project, exp.name, per=per, groups=groups, fit_slack=fit_slack, joint=joint,
                                           progress=report_fit, scheduler=scheduler, workers=workers,
                                           max_wall_s=max_wall_s, max_iterations=most)
        out_project = Path(out_dir) / f"{project_path.stem}-calibrated{project_path.suffix or '.jmdb'}"
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        if out_project.exists():
            out_project.unlink()
        save_project(out_project, fitted)
        cal_run = run_laxity(fitted, exp.name, max_wall_s=max_wall_s)
        cal_run.parameters["calibrated_from"] = str(project_path)
        with ProjectStore(out_project) as store:
            store.save_run(cal_run)
        extra["calibrated_project"] = str(out_project)
        extra["parameters_fitted"] = tissue_parameters(fitted)
    study = None
    if (scheduler is not None and not calibrate) or study_cases is not None:
        cases = study_cases or one_at_a_time_cases(calibration_groups(project, joint))
        study = parameter_study(project, exp.name, cases, scheduler=scheduler,
                                progress=None if progress is None else (lambda i, n: progress("study", i, n)))
        with ProjectStore(project_path) as store:
            store.save_run(study)
    extra["run_id"] = run_id
    extra["steps"] = total
    return write_report(out_dir, project, exp, run, calibration=fit, calibrated_run=cal_run, study=study, extra=extra)
