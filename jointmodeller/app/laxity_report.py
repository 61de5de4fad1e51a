"""What a laxity run reports: the measure's unit, the JCS statement, the knee's drawer summary
beside Markolf 1978, the run record of a sweep, the comparison with measured points, and the
report folder (CSV, plots, summary.json, report.html)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from jointmodeller.app.run_poses import body_frames
from jointmodeller.core.studies.calibration import CalibrationResult, fit_metrics
from jointmodeller.core.studies.jcs import COORDINATE_NAMES
from jointmodeller.core.studies.laxity import (
    LaxityResult,
    parse_measure,
)
from jointmodeller.io.measured_csv import read_measured_csv
from jointmodeller.model.results import BodyPoses, RunRecord
from jointmodeller.model.specs import Experiment, MeasuredPoint, Project

MARKOLF_1978_ANTERIOR_MM = 5.5
"""Anterior tibial translation of intact knees under a 100 N drawer at 20° flexion, in vivo
(Markolf, Graff-Radford & Amstutz 1978; docs/references.md): what a knee's report compares with."""


def load_unit(experiment: Experiment) -> str:
    return "N·m" if experiment.load_kind == "internal_external" else "N"


def is_knee(experiment: Experiment, flexion_coordinate: str = "") -> bool:
    """A tibia moving on a femur (the experiment's bodies or the held coordinate name say so)."""
    names = f"{experiment.fixed_body} {experiment.moving_body} {flexion_coordinate}".lower()
    return "tib" in names or "knee" in names


def jcs_statement(experiment: Experiment, flexion_coordinate: str | None) -> str:
    """The joint coordinate system of a sweep in words (Grood & Suntay), its e2's anatomical sense."""
    source = (f"the joint coordinate {flexion_coordinate} (positive in flexion)" if flexion_coordinate
              else "the experiment's axes")
    return (f"Grood & Suntay: e1 the flexion axis of {experiment.fixed_body} from {source}, e3 the long axis of "
            f"{experiment.moving_body} (proximal), e2 = e3 × e1, the way flexion moves the distal end of "
            f"{experiment.moving_body}" + (" (posterior at the knee: a negative anterior_posterior load is an "
                                           "anterior drawer)" if is_knee(experiment, flexion_coordinate or "")
                                          else ""))


def drawer_summary(result: LaxityResult, experiment: Experiment, flexion_coordinate: str = "") -> dict:
    """For an anterior–posterior sweep: the translations at the largest loads each way, the tissues
    that carry the largest share of the anterior load and, for a knee, the ACL bundles' tension and
    the comparison with Markolf 1978 (anterior translation at 100 N)."""
    if experiment.load_kind != "anterior_posterior" or result.loads.size == 0:
        return {}
    knee = is_knee(experiment, flexion_coordinate)
    out: dict = {}
    loads, mm = result.loads, result.coords[:, 4] * 1000.0
    names = list(result.tissue_names)
    T = result.tissue_tension_N
    i0 = int(np.argmin(np.abs(loads)))
    i_pos, i_neg = int(np.argmax(loads)), int(np.argmin(loads))
    sides = [("posterior" if knee else "along_e2", i_pos)] if loads[i_pos] > 0 else []
    sides += [("anterior" if knee else "against_e2", i_neg)] if loads[i_neg] < 0 else []
    for label, i in sides:
        key = f"{label}_mm_at_{abs(loads[i]):g}N"
        out[key] = float(abs(mm[i] - mm[i0]))
        if T.size:
            gain = T[i] - T[i0]
            top = [k for k in np.argsort(-gain)[:5] if gain[k] > 1e-6]
            out[f"tissues_loaded_{label}_N"] = {names[k]: float(T[i, k]) for k in top}
        if knee and label == "anterior":
            acl = [k for k, n in enumerate(names) if "acl" in n.lower()]
            if acl and T.size:
                out["acl_tension_at_anterior_max_N"] = {names[k]: float(T[i, k]) for k in acl}
                out["acl_total_at_anterior_max_N"] = float(T[i, acl].sum())
            if abs(loads[i]) == 100.0:
                out["markolf_1978"] = {"anterior_mm_in_vivo_20deg": MARKOLF_1978_ANTERIOR_MM,
                                       "model_anterior_mm": out[key],
                                       "model_minus_in_vivo_mm": out[key] - MARKOLF_1978_ANTERIOR_MM,
                                       "model_flexion_deg": float(experiment.flexion_deg)}
    return out


def result_to_run(result: LaxityResult, experiment: Experiment, status: str = "completed", message: str = "",
                  extra_parameters: dict | None = None, project: Project | None = None) -> RunRecord:
    """A RunRecord (study "laxity") holding the curves, tissue forces and the summary numbers, and
    the moving body's pose at every load step (its BodyPoses; the body frame from ``project``, as
    app.build makes it; without a project the run has no poses)."""
    stiff = result.stiffness() if result.loads.size >= 2 and np.ptp(result.measure) > 0 else {}
    summary = {"laxity": result.laxity, "unit": result.unit, "measure": result.measure_name,
               "stiffness": stiff, "stiffness_unit": f"{load_unit(experiment)}/{result.unit}",
               "flexion_deg_held": float(experiment.flexion_deg),
               "flexion_deg_unloaded": float(np.degrees(result.reference_coords[0])),
               "seconds": result.seconds, "steps_solved": int(result.loads.size),
               "max_residual_N": float(result.residual_N.max()) if result.residual_N.size else 0.0}
    if experiment.load_kind == "varus_valgus" and stiff:
        summary["moment_stiffness_Nm_per_" + result.unit] = stiff["secant"] * experiment.lever_m
    summary = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in summary.items()}
    summary["stiffness"] = {k: (v if math.isfinite(v) else None) for k, v in stiff.items()}
    flexion_coordinate = (extra_parameters or {}).get("flexion_coordinate") or ""
    summary["jcs"] = jcs_statement(experiment, flexion_coordinate or None)
    summary.update(drawer_summary(result, experiment, flexion_coordinate))
    params = {"experiment": experiment.name, "fixed_body": experiment.fixed_body, "moving_body": experiment.moving_body,
              "load_kind": experiment.load_kind, "max_load": experiment.max_load, "lever_m": experiment.lever_m,
              "steps": experiment.steps, "unload": experiment.unload, "flexion_deg": experiment.flexion_deg,
              "measure": experiment.measure, "sides": experiment.sides, **(extra_parameters or {})}
    return RunRecord(
        study="laxity", parameters=params, status=status, message=message,
        series={"load": result.loads, "measure": result.measure, "jcs": result.coords,
                "tissue_tension_N": result.tissue_tension_N, "extra_force_N": result.extra_force_N,
                "iterations": result.iterations.astype(np.int64), "evaluations": result.evaluations.astype(np.int64),
                "residual_N": result.residual_N},
        labels={"jcs": list(COORDINATE_NAMES), "tissue_tension_N": list(result.tissue_names)},
        summary=summary, poses=None if project is None else moving_poses(project, experiment.moving_body, result),
    )


def moving_poses(project: Project, body: str, result: LaxityResult) -> BodyPoses:
    """The pose of the swept ``body`` at each load step (p_G (k, 1, 3), unit q_GB (k, 1, 4))."""
    R_BL, com_L = body_frames(project)
    i = [m.name for m in project.masses].index(body)
    p = np.asarray(result.pose_p_G, float).reshape(-1, 1, 3)
    q = np.asarray(result.pose_q_GB, float).reshape(-1, 1, 4)
    return BodyPoses((body,), p, q / np.linalg.norm(q, axis=-1, keepdims=True), R_BL[i:i + 1], com_L[i:i + 1])


def import_measured(project: Project, experiment_name: str | None, csv_path) -> Project:
    """A copy of ``project`` whose experiment holds the measured points read from ``csv_path``
    (values converted to the experiment measure's unit). Errors name file, line and column."""
    from jointmodeller.app.laxity import find_experiment  # laxity imports this module

    experiment = find_experiment(project, experiment_name)
    _, _, unit = parse_measure(experiment.measure)
    points = read_measured_csv(csv_path, value_unit=unit)
    new = replace(experiment, measured=points)
    return project.with_rows("experiments", tuple(new if e is experiment else e for e in project.experiments))


def simulated_at(loads_sim: np.ndarray, values_sim: np.ndarray, loads: np.ndarray) -> np.ndarray:
    """Simulated values at measured loads: linear interpolation along the loading curve (one value
    per load; measured loads outside the simulated range are an error)."""
    lo = np.asarray(loads_sim, float)
    va = np.asarray(values_sim, float)
    order = np.argsort(lo, kind="stable")
    lo, va = lo[order], va[order]
    keep = np.concatenate([[True], np.diff(lo) > 0])
    lo, va = lo[keep], va[keep]
    loads = np.asarray(loads, float)
    span = max(abs(lo[0]), abs(lo[-1]), 1e-12)
    if loads.size and (loads.min() < lo[0] - 1e-9 * span or loads.max() > lo[-1] + 1e-9 * span):
        raise ValueError(f"measured loads {loads.min():g}..{loads.max():g} exceed the simulated range "
                         f"{lo[0]:g}..{lo[-1]:g}: raise the experiment's max_load")
    return np.interp(loads, lo, va)


def compare_with_measured(run: RunRecord, measured: tuple[MeasuredPoint, ...]) -> dict:
    """RMSE and maximum error of the run's curve against measured points (all repeats), and per repeat.
    Measured points outside the swept loads are left out of the comparison; ``note`` says how many."""
    ml = np.array([p.load for p in measured])
    mv = np.array([p.value for p in measured])
    mr = np.array([p.repeat for p in measured])
    swept = np.asarray(run.series["load"], float)
    note = ""
    if swept.size:
        span = max(abs(swept.min()), abs(swept.max()), 1e-12)
        inside = (ml >= swept.min() - 1e-9 * span) & (ml <= swept.max() + 1e-9 * span)
        if not inside.all():
            note = (f"{int((~inside).sum())} of {ml.size} measured points lie outside the swept loads "
                    f"{swept.min():g}..{swept.max():g} and were left out of the comparison")
            ml, mv, mr = ml[inside], mv[inside], mr[inside]
    if not ml.size or not swept.size:
        return {"note": note or "no measured point to compare", "points_compared": 0}
    sim = simulated_at(run.series["load"], run.series["measure"], ml)
    out = fit_metrics(sim, mv)
    out["points_compared"] = int(ml.size)
    if note:
        out["note"] = note
    out["per_repeat"] = {str(int(r)): fit_metrics(sim[mr == r], mv[mr == r]) for r in np.unique(mr)}
    out["measured_laxity"] = float(np.ptp(mv))
    return out


def experiment_dict(experiment: Experiment) -> dict:
    return {"name": experiment.name, "fixed_body": experiment.fixed_body, "moving_body": experiment.moving_body,
            "load_kind": experiment.load_kind, "max_load": experiment.max_load, "lever_m": experiment.lever_m,
            "steps": experiment.steps, "unload": experiment.unload, "flexion_deg": experiment.flexion_deg,
            "measure": experiment.measure, "measured_points": len(experiment.measured), "sides": experiment.sides,
            "flexion_sign": experiment.flexion_sign,
            "load_point_L": None if experiment.load_point_L is None else list(experiment.load_point_L),
            "preload_force_N": list(experiment.preload_force_N),
            "preload_moment_Nm": list(experiment.preload_moment_Nm),
            "tissue_tone_N": dict(experiment.tissue_tone)}


def tissue_parameters(project: Project) -> dict:
    """Spring type and attachment parameters for the summary (what the curves were computed with)."""
    return {"springs": {s.name: {"kx": list(s.kx), "tension_only": s.tension_only, "slack_length_m": s.slack_length_m}
                        for s in project.springs},
            "attachments": {a.name: {"spring": a.spring, "initial_length_m": a.initial_length_m}
                            for a in project.attachments}}


def write_report(out_dir, project: Project, experiment: Experiment, run: RunRecord, *,
                 calibration: CalibrationResult | None = None, calibrated_run: RunRecord | None = None,
                 study: RunRecord | None = None, extra: dict | None = None) -> dict:
    """Write summary.json, curve CSVs, PNG plots and report.html into ``out_dir``; returns the summary."""
    from jointmodeller.io import report

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lunit = load_unit(experiment)
    files = []
    cols = {"load": run.series["load"], f"{experiment.measure}": run.series["measure"]}
    for j, name in enumerate(COORDINATE_NAMES):
        cols[f"{name}_{'deg' if j < 3 else 'mm'}"] = run.series["jcs"][:, j] * (np.degrees(1) if j < 3 else 1000.0)
    for j, name in enumerate(run.labels.get("tissue_tension_N", [])):
        cols[f"tension_N:{name}"] = run.series["tissue_tension_N"][:, j]
    cols["extra_force_N"] = run.series["extra_force_N"]
    files.append(report.write_curve_csv(out / "curve.csv", cols))
    measured = None
    if experiment.measured:
        measured = (np.array([p.load for p in experiment.measured]), np.array([p.value for p in experiment.measured]),
                    np.array([p.repeat for p in experiment.measured]))
        files.append(report.write_curve_csv(out / "measured.csv", {"load": measured[0], "value": measured[1],
                                                                   "repeat": measured[2]}))
    extra_curves = {}
    if calibrated_run is not None:
        extra_curves["calibrated model"] = (calibrated_run.series["load"], calibrated_run.series["measure"])
        calibrated_curve = {"load": calibrated_run.series["load"], experiment.measure: calibrated_run.series["measure"]}
        files.append(report.write_curve_csv(out / "curve_calibrated.csv", calibrated_curve))
    images = [report.plot_curve(out / "curve.png", run.series["load"], run.series["measure"],
                                xlabel=f"load [{lunit}]", ylabel=f"{experiment.measure.replace('_', ' ')}",
                                title=f"{experiment.name}", measured=measured, extra_curves=extra_curves)]
    if run.series["tissue_tension_N"].size:
        images.append(report.plot_tissue_forces(out / "tissue_forces.png", run.series["load"],
                                                run.series["tissue_tension_N"], run.labels.get("tissue_tension_N", []),
                                                xlabel=f"load [{lunit}]", title="tissue forces"))
    files += images
    summary = {"title": f"{project.info.title}: {experiment.name}", "project": project.info.title,
               "experiment": experiment_dict(experiment), **run.summary, "status": run.status,
               **({"message": run.message} if run.message else {}),
               **{k: run.parameters[k] for k in ("system", "flexion_coordinate", "flexion_coordinate_deg")
                  if k in run.parameters},
               "parameters": tissue_parameters(project)}
    if calibration is not None:
        summary["calibration"] = calibration.as_dict()
        if calibrated_run is not None:
            summary["calibrated"] = {k: calibrated_run.summary.get(k) for k in ("laxity", "stiffness", "fit")}
    if study is not None:
        files.append(report.write_curve_csv(out / "study.csv", {
            **{k: study.series["parameters"][:, j] for j, k in enumerate(study.labels["parameters"])},
            "laxity": study.series["laxity"]}))
        summary["study"] = {**study.summary, **study.parameters}
    summary.update(extra or {})
    summary["files"] = sorted({Path(f).name for f in files} | {"summary.json", "report.html"})
    report.write_summary_json(out / "summary.json", summary)
    report.write_html_summary(out / "report.html", summary, images)
    return summary
