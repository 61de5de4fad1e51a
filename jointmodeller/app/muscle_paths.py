"""Use case: muscle path lengths and moment arms over a coordinate range — run, CSV, plot.

``muscle_paths_run`` wraps the core study in a RunRecord (stored beside the inputs like any run);
``write_muscle_paths_csv`` and ``plot_muscle_paths`` export it; ``muscle_paths_command`` does all
three for a project file (CLI/GUI entry).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Sequence

import numpy as np

from jointmodeller.core.studies.muscle_paths import build_multibody, muscle_paths
from jointmodeller.model.results import RunRecord
from jointmodeller.model.specs import Project

STUDY = "muscle_paths"


def _rotational(model) -> dict[str, bool]:
    """Whether each coordinate of a built model turns its body (``MultibodySystem.rotational_u``)."""
    rot = model.system.rotational_u
    return {name: bool(rot[k]) for name, k in model.uindex.items()}


def list_coordinates(project: Project) -> list[tuple[str, str]]:
    """(coordinate name, unit "deg" or "m") of every mobilizer coordinate, in mass order (for the
    study's coordinate chooser)."""
    rotational = _rotational(build_multibody(project))
    out = []
    for m in project.masses:
        if m.joint is not None and m.joint.type != "free":
            out += [(c, "deg" if rotational.get(c, True) else "m") for c in m.joint.coordinates]
    return out


MAX_SAMPLES = 100_000
"""Most coordinate values one muscle-paths command sweeps (a typo'd step must not run for days)."""
PATH_MODES = ("opensim", "exact")
"""How paths over several wrap objects are computed: "opensim" (the default) as OpenSim 4 does —
each wrap point's first position at a pose is kept through its wrap iteration, so its numbers are
reproduced —, "exact": every pass uses the current wrap points (the consistent shortest path).
Single-wrap paths are the same either way."""


def muscle_paths_run(project: Project, coordinate: str, start: float = 0.0, stop: float = 130.0,
                     step: float = 5.0, attachments: Sequence[str] | None = None,
                     wrap_ranges: dict[str, Sequence[tuple[int, int]]] | None = None,
                     fixed: dict[str, float] | None = None, opensim_compatible: bool | None = None,
                     path_mode: str | None = None) -> RunRecord:
    """Sweep ``coordinate`` from start to stop (inclusive) in ``step`` — degrees for a rotation,
    metres for a translation — and return a RunRecord with series coordinate (n,), length_m,
    moment_arm_m, moment_arm_excursion_m, wrapped (n, m), labelled by attachment name.
    fixed: other coordinates' values (same units) instead of their defaults. path_mode: one of
    PATH_MODES, "opensim" by default (``opensim_compatible=False`` is the older way to say "exact").
    wrap_ranges: overrides of the attachments' own wrap point ranges (the project keeps them)."""
    if path_mode is None:
        path_mode = "exact" if opensim_compatible is False else "opensim"
    if path_mode not in PATH_MODES:
        raise ValueError(f"path mode must be one of {', '.join(PATH_MODES)}, got {path_mode!r}")
    opensim_compatible = path_mode == "opensim"
    model, problem = None, ""
    try:
        model = build_multibody(project)
    except (KeyError, ValueError) as exc:
        problem = str(exc).strip("'\"")
    kinds = {} if model is None else _rotational(model)
    rotational = kinds.get(coordinate, True)
    unit = "deg" if rotational else "m"
    params = {"coordinate": coordinate, "start": start, "stop": stop, "step": step, "unit": unit,
              "attachments": list(attachments) if attachments is not None else None,
              "fixed": dict(fixed or {}), "opensim_compatible": bool(opensim_compatible), "path_mode": path_mode}
    q_fixed = {name: (np.radians(v) if kinds.get(name, True) else v) for name, v in (fixed or {}).items()}
    if problem:
        return RunRecord(STUDY, params, "failed", problem)
    if step <= 0 or stop < start:
        return RunRecord(STUDY, params, "failed", "the range needs step > 0 and stop ≥ start")
    values = np.arange(start, stop + 0.5 * step, step)
    try:
        res = muscle_paths(project, coordinate, np.radians(values) if rotational else values,
                           attachments, wrap_ranges, q_fixed, model=model,
                           opensim_stale_wrap_points=opensim_compatible)
    except (KeyError, ValueError) as exc:
        return RunRecord(STUDY, params, "failed", str(exc).strip("'\""))
    names = list(res.names)
    summary = {
        name: {"length_min_m": float(res.length[:, j].min()), "length_max_m": float(res.length[:, j].max()),
               "moment_arm_peak_m": float(res.moment_arm[np.argmax(np.abs(res.moment_arm[:, j])), j]),
               "max_gf_minus_excursion_m": float(np.abs(res.moment_arm[:, j] - res.moment_arm_excursion[:, j]).max())}
        for j, name in enumerate(names)
    }
    series = {
        f"{coordinate}_{unit}": values,
        "length_m": res.length,
        "moment_arm_m": res.moment_arm,
        "moment_arm_excursion_m": res.moment_arm_excursion,
        "wrapped": res.wrapped.astype(float),
    }
    labels = {k: names for k in ("length_m", "moment_arm_m", "moment_arm_excursion_m", "wrapped")}
    return RunRecord(STUDY, params, "completed", "", series, labels, summary)


def _coordinate_series(run: RunRecord) -> tuple[str, np.ndarray]:
    key = next(k for k in run.series if k not in ("length_m", "moment_arm_m", "moment_arm_excursion_m", "wrapped"))
    return key, np.asarray(run.series[key])


def write_muscle_paths_csv(run: RunRecord, path: str | Path) -> Path:
    """Long-format CSV: one row per (coordinate value, attachment) with length and moment arms in mm."""
    path = Path(path)
    key, x = _coordinate_series(run)
    names = run.labels["length_m"]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow([key, "attachment", "length_mm", "moment_arm_mm", "moment_arm_excursion_mm", "wrapped"])
        for i, xv in enumerate(x):
            for j, name in enumerate(names):
                w.writerow([f"{xv:g}", name, f"{run.series['length_m'][i, j] * 1e3:.6f}",
                            f"{run.series['moment_arm_m'][i, j] * 1e3:.6f}",
                            f"{run.series['moment_arm_excursion_m'][i, j] * 1e3:.6f}",
                            int(run.series["wrapped"][i, j])])
    return path


def plot_muscle_paths(run: RunRecord, path: str | Path, reference: dict[str, np.ndarray] | None = None) -> Path:
    """PNG with path length (top) and moment arm (bottom) of every attachment against the coordinate.

    reference: optional name -> (n, 3) rows (x, length_m, moment_arm_m) drawn as markers (e.g. OpenSim)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    path = Path(path)
    key, x = _coordinate_series(run)
    names = run.labels["length_m"]
    fig = Figure(figsize=(7.5, 7.0), dpi=110)
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    for j, name in enumerate(names):
        line, = ax1.plot(x, run.series["length_m"][:, j] * 1e3, label=name)
        ax2.plot(x, run.series["moment_arm_m"][:, j] * 1e3, color=line.get_color())
        if reference and name in reference:
            r = reference[name]
            ax1.plot(r[:, 0], r[:, 1] * 1e3, "o", ms=3, mfc="none", color=line.get_color())
            ax2.plot(r[:, 0], r[:, 2] * 1e3, "o", ms=3, mfc="none", color=line.get_color())
    ax1.set_ylabel("path length [mm]")
    ax2.set_ylabel("moment arm [mm]")
    ax2.set_xlabel(key.replace("_", " "))
    ax2.axhline(0.0, color="0.6", lw=0.8)
    ax1.legend(fontsize=8, ncol=3)
    title = f"Muscle paths over {run.parameters.get('coordinate', key)}"
    if reference:
        title += " (markers: reference)"
    ax1.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    return path


FIRST_USE_NOTICE = ("compiling the path kernels on their first use in this environment (a minute or so; "
                    "kept in the disk cache for every later run)")


def muscle_paths_command(project_path: str | Path, coordinate: str, out_dir: str | Path,
                         start: float = 0.0, stop: float = 130.0, step: float = 5.0,
                         store_run: bool = True, path_mode: str = "opensim", notice=None) -> RunRecord:
    """Run the study on a project file, store the run in it, write CSV and PNG into ``out_dir``.
    path_mode: "opensim" (default) or "exact" (see PATH_MODES). Bad input — ``out_dir`` an existing
    file, a coordinate the project does not have, an unknown path mode — is a JointModellerError
    before anything is computed or stored. notice(text): told FIRST_USE_NOTICE before the run when
    the compiled kernels are not in the disk cache yet."""
    from jointmodeller.model.errors import JointModellerError
    from jointmodeller.persistence.store import ProjectStore

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise JointModellerError(f"{out}: exists and is not a folder (--out names the folder for the CSV and plot)")
    if path_mode not in PATH_MODES:
        raise JointModellerError(f"path mode must be one of {', '.join(PATH_MODES)}, got {path_mode!r}")
    if not (np.isfinite([start, stop, step]).all() and step > 0 and stop >= start):
        raise JointModellerError(f"the range needs finite numbers, step > 0 and stop ≥ start (got start {start:g}, "
                                 f"stop {stop:g}, step {step:g})")
    if (stop - start) / step > MAX_SAMPLES:
        raise JointModellerError(f"{(stop - start) / step + 1:.0f} samples is more than {MAX_SAMPLES}; "
                                 "take a larger step")
    with ProjectStore(project_path) as store:
        project = store.load_project()
        names = [c for m in project.masses if m.joint is not None for c in m.joint.coordinates]
        if coordinate not in names:
            shown = ", ".join(names[:15]) + (", …" if len(names) > 15 else "")
            known = f" (the joints' coordinates: {shown})" if names else " (the project has no joints)"
            raise JointModellerError(f"{project_path}: no coordinate named {coordinate!r}{known}")
        if notice is not None:
            from jointmodeller.core.studies.path_kernel import kernels_on_disk

            if not kernels_on_disk():
                notice(FIRST_USE_NOTICE)
        run = muscle_paths_run(project, coordinate, start, stop, step, path_mode=path_mode)
        if store_run:
            run.id = store.save_run(run)
    if run.status == "completed":
        out.mkdir(parents=True, exist_ok=True)
        write_muscle_paths_csv(run, out / f"muscle_paths_{coordinate}.csv")
        plot_muscle_paths(run, out / f"muscle_paths_{coordinate}.png")
    return run
