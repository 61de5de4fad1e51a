"""Command line: `jointmodeller [PROJECT]` opens the GUI; subcommands run everything headless.

Every command reports bad input as one readable message (what and where) and exits 2; nothing
already saved is changed by a failing command.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

from jointmodeller import __version__
from jointmodeller.model.errors import JointModellerError

COMMANDS = ("demo", "info", "import-mesh", "export", "import", "run", "runs", "export-run", "laxity",
            "import-osim", "muscle-paths", "coordinates", "cartilage", "project", "experiment", "contact", "bench",
            "gui")


# ----------------------------------------------------------------------------------------------
# Progress on a terminal
# ----------------------------------------------------------------------------------------------
class ProgressBar:
    """A one-line text progress bar on stderr: call with a fraction in [0, 1] (and a message). Shows
    the elapsed time, an estimate of the time left, and with ``span`` (the simulated seconds at
    fraction 1, for dynamics) the simulated time per wall second."""

    def __init__(self, label: str, stream=None, width: int = 30, span: float | None = None):
        self.label, self.stream, self.width, self.span = label, stream or sys.stderr, width, span
        self.t0 = time.perf_counter()
        self.last = -1.0

    def timing(self, fraction: float) -> str:
        """'12.3 s, ~45 s left, 2.1e-03 sim s/s' for the fraction done now."""
        elapsed = time.perf_counter() - self.t0
        text = f"{elapsed:.1f} s"
        if 0.0 < fraction < 1.0 and elapsed > 0.5:
            text += f", ~{elapsed * (1.0 - fraction) / fraction:.0f} s left"
        if self.span and elapsed > 0:
            text += f", {fraction * self.span / elapsed:.2g} sim s/s"
        return text

    def __call__(self, fraction: float, message: object = "") -> None:
        """Show ``fraction`` done; a text ``message`` beside it (a live sample, for viewers, is ignored)."""
        message = message if isinstance(message, str) else ""
        fraction = min(max(float(fraction), 0.0), 1.0)
        interactive = getattr(self.stream, "isatty", lambda: False)()
        if fraction < 1.0 and fraction - self.last < (0.01 if interactive else 0.1) - 1e-9:
            return
        self.last = fraction
        if not interactive:  # a log file: one line per 10 %
            self.stream.write(f"{self.label}: {fraction * 100:5.1f}% after {self.timing(fraction)} {message[:40]}\n")
            self.stream.flush()
            return
        filled = int(round(fraction * self.width))
        bar = "#" * filled + "-" * (self.width - filled)
        end = "\n" if fraction >= 1.0 else ""
        self.stream.write(f"\r{self.label} [{bar}] {fraction * 100:5.1f}% {self.timing(fraction):34s} "
                          f"{message[:40]:40s}{end}")
        self.stream.flush()


# ----------------------------------------------------------------------------------------------
# Commands
# ----------------------------------------------------------------------------------------------
def cmd_demo(args: argparse.Namespace) -> int:
    from jointmodeller.persistence import save_project

    path = Path(args.path)
    if args.knee and args.high_res:
        raise JointModellerError("--high-res is for the demo elbow; the knee demo has one resolution")
    if path.exists() and not args.force:
        raise JointModellerError(f"{path} exists; give --force to replace it")
    if args.knee:
        from jointmodeller.app.knee_demo import build_knee_demo_project

        project, what = build_knee_demo_project(), "knee (lenhart2015, anterior drawer at 25° flexion)"
    else:
        from jointmodeller.app.demo import build_demo_project

        project, what = build_demo_project(high_res=args.high_res), "elbow"
    if path.exists():
        path.unlink()
    save_project(path, project)
    print(f"wrote the demo {what} project to {path}")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from jointmodeller.app.describe import describe_project
    from jointmodeller.persistence import ProjectStore

    with ProjectStore(args.project) as store:
        project = store.load_project()
        runs = store.list_runs()
    print(describe_project(project, runs))
    return 0


def cmd_import_mesh(args: argparse.Namespace) -> int:
    from jointmodeller.app.masses import add_mass, mass_from_mesh
    from jointmodeller.io.meshes import read_mesh
    from jointmodeller.persistence import ProjectStore

    mesh = read_mesh(args.mesh, units=args.units)
    for warning in mesh.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    name = args.name or Path(args.mesh).stem
    mass = mass_from_mesh(name, mesh, density_kg_m3=args.density, fixed=args.fixed)
    with ProjectStore(args.project) as store:
        store.save_project(add_mass(store.load_project(), mass))
    print(f"added mass {name!r}: {mass.mass_kg * 1000:.1f} g, {mesh.n_vertices} vertices")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from jointmodeller.model.codec import project_to_json
    from jointmodeller.persistence import load_project

    text = project_to_json(load_project(args.project))
    _write_atomically(Path(args.json), text)
    print(f"exported {args.project} to {args.json}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from jointmodeller.model.codec import project_from_json
    from jointmodeller.model.specs import now_iso
    from jointmodeller.persistence import ProjectStore, save_project

    target = Path(args.project)
    runs = []
    if target.exists() and (target.is_dir() or target.stat().st_size > 0):
        if target.is_dir():
            raise JointModellerError(f"{target}: is a folder, not a project file")
        with ProjectStore(target) as store:  # also refuses a file that is not a project
            runs = store.list_runs()
        if not args.force:
            what = (f"; its {len(runs)} stored run(s) would be kept and marked as belonging to the earlier model "
                    "(add --delete-runs to delete them)") if runs else ""
            raise JointModellerError(f"{target} exists; give --force to replace its inputs{what}")
    elif args.delete_runs:
        raise JointModellerError("--delete-runs applies only with --force to an existing project")
    try:
        text = Path(args.file).read_bytes()
    except OSError as exc:
        raise JointModellerError(f"{args.file}: cannot be read ({exc.strerror or exc})") from None
    project = project_from_json(text)
    policy = "delete" if args.delete_runs else "mark"
    # lossless: the file's own times are kept
    save_project(target, project, touch=False, runs=policy,
                 note=f"inputs replaced on {now_iso()} by import of {args.file}")
    print(f"imported {args.file} into {target}")
    if runs:
        print(f"{len(runs)} stored run(s) of the earlier model "
              + ("deleted" if args.delete_runs else "kept, marked '[earlier model]'"))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from jointmodeller.app.export import write_run_csv
    from jointmodeller.app.registry import study
    from jointmodeller.persistence import ProjectStore

    chosen = study(args.study)
    options = {"dynamics": dict(t_end=args.t_end, report_dt=args.report_dt, digits=args.digits, method=args.method,
                                contact_geometry=args.contact_geometry),
               "laxity": dict(experiment=args.experiment, contact_geometry=args.contact_geometry),
               "muscle_paths": dict(coordinate=args.coordinate)}.get(args.study, {})
    options.update(_run_limits(args))
    with ProjectStore(args.project) as store:
        project = store.load_project()
        if chosen.needs_experiment and not project.experiments:
            raise JointModellerError(f"{args.project}: the {chosen.title.lower()} study needs an experiment row")
        bar = ProgressBar(args.study, span=args.t_end if args.study == "dynamics" else None)
        run = chosen.run(project, progress=bar, **options)
        run_id = store.save_run(run)
    _print_run(run, run_id)
    if args.csv:
        write_run_csv(run, args.csv)
        print(f"series written to {args.csv}")
    return 0 if run.status == "completed" else 1


def _run_limits(args: argparse.Namespace) -> dict:
    """The wall-time, step and tolerance limits of ``run`` as options of the chosen study (dynamics:
    time and steps, with app.studies' defaults; equilibrium and laxity: the wall time and residual
    tolerance when given)."""
    from jointmodeller.app.studies import DEFAULT_DYNAMICS_MAX_STEPS, DEFAULT_DYNAMICS_WALL_S

    if args.max_wall_s is not None and not (math.isfinite(args.max_wall_s) and args.max_wall_s > 0):
        raise JointModellerError(f"--max-wall-s {args.max_wall_s:g}: must be a positive number of seconds")
    if args.max_steps is not None and args.max_steps < 1:
        raise JointModellerError(f"--max-steps {args.max_steps}: must be at least 1")
    limits = {}
    if args.tol_n is not None:
        if args.study not in ("equilibrium", "laxity"):
            raise JointModellerError("--tol-n: only the equilibrium and laxity studies have a residual tolerance")
        if not (math.isfinite(args.tol_n) and args.tol_n > 0):
            raise JointModellerError(f"--tol-n {args.tol_n:g}: must be a positive number of newtons")
        limits["force_tol" if args.study == "equilibrium" else "tol_N"] = args.tol_n
    if args.contact_geometry == "field" and args.study not in ("dynamics", "laxity"):
        raise JointModellerError("--contact-geometry: only dynamics and laxity run on distance fields (equilibrium "
                                 "freezes contact sets on the exact meshes)")
    if args.study == "dynamics":
        return {"max_wall_s": DEFAULT_DYNAMICS_WALL_S if args.max_wall_s is None else args.max_wall_s,
                "max_steps": DEFAULT_DYNAMICS_MAX_STEPS if args.max_steps is None else args.max_steps}
    if args.study in ("equilibrium", "laxity") and args.max_wall_s is not None:
        limits["max_wall_s"] = args.max_wall_s
    return limits


def _names(values: Sequence[str] | None) -> list[str]:
    """Coordinate names from repeatable, comma-separated options."""
    return [n.strip() for v in values or () for n in v.split(",") if n.strip()]


def cmd_coordinates(args: argparse.Namespace) -> int:
    from jointmodeller.app.coordinates import coordinate_table, set_coordinates
    from jointmodeller.persistence import ProjectStore

    with ProjectStore(args.project) as store:
        project = store.load_project()
        rows = {r.name: r for r in coordinate_table(project)}
        values = {}
        for item in args.set or ():
            name, sep, text = item.partition("=")
            name = name.strip()
            try:
                value = float(text)
            except ValueError:
                raise JointModellerError(f"--set {item!r}: expected NAME=VALUE with a number (degrees or mm)") from None
            if not sep or name not in rows:
                raise JointModellerError(f"--set {item!r}: no coordinate named {name!r}")
            values[name] = math.radians(value) if rows[name].rotational else value / 1000.0
        changed = bool(args.lock_all or args.free_all or args.lock or args.free or values)
        if changed:
            project = set_coordinates(project, lock=_names(args.lock), free=_names(args.free), lock_all=args.lock_all,
                                      free_all=args.free_all, values=values)
            store.save_project(project)
        table = coordinate_table(project)
    for r in table:
        value, unit = r.display
        print(f"{r.name:24s} {r.mass:20s} {value:12.4f} {unit:3s} {'locked' if r.locked else 'free'}")
    n_locked = sum(r.locked for r in table)
    print(f"{len(table)} coordinates, {n_locked} locked, {len(table) - n_locked} free"
          + (f"; saved to {args.project}" if changed else ""))
    return 0


def cmd_project(args: argparse.Namespace) -> int:
    """`project PROJECT [--title T] [--gravity X,Y,Z]`: show the project's settings, change them."""
    from dataclasses import replace as _replace

    from jointmodeller.app.setup_rows import parse_vector
    from jointmodeller.persistence import ProjectStore

    with ProjectStore(args.project) as store:
        project = store.load_project()
        info = project.info
        if args.gravity is not None:
            info = _replace(info, gravity_G=parse_vector(args.gravity, "--gravity"))
        if args.title is not None:
            if not args.title.strip():
                raise JointModellerError("--title: must not be empty")
            info = _replace(info, title=args.title.strip())
        changed = info != project.info
        if changed:
            project = _replace(project, info=info)
            store.save_project(project)
    g = project.info.gravity_G
    print(f"title:   {project.info.title}")
    print(f"gravity: ({g[0]:g}, {g[1]:g}, {g[2]:g}) m/s²" + (f"; saved to {args.project}" if changed else ""))
    return 0


def cmd_cartilage(args: argparse.Namespace) -> int:
    from jointmodeller.app.cartilage import grow_cartilage
    from jointmodeller.persistence import ProjectStore

    for flag, value in (("--thickness-mm", args.thickness_mm), ("--max-distance-mm", args.max_distance_mm),
                        ("--max-angle-deg", args.max_angle_deg)):
        if not math.isfinite(value):
            raise JointModellerError(f"{flag} {value}: must be a finite number")
    with ProjectStore(args.project) as store:
        project, result = grow_cartilage(store.load_project(), args.bone, _names(args.facing),
                                         args.thickness_mm / 1000.0, max_distance_m=args.max_distance_mm / 1000.0,
                                         max_angle_deg=args.max_angle_deg, replace_existing=args.replace)
        store.save_project(project)
    print(result.summary() + f"; saved to {args.project}")
    return 0


def _print_run(run, run_id: int) -> None:
    print(f"run #{run_id}: {run.study} {run.status}{' — ' + run.message if run.message else ''}")
    for key, value in run.summary.items():
        print(f"  {key}: {value}")


def cmd_runs(args: argparse.Namespace) -> int:
    from jointmodeller.persistence import ProjectStore

    with ProjectStore(args.project) as store:
        for run in store.list_runs():
            print(f"#{run.id} {run.study:12s} {run.status:10s} {run.created} {run.message}")
    return 0


def cmd_export_run(args: argparse.Namespace) -> int:
    from jointmodeller.app.export import write_run_csv
    from jointmodeller.persistence import ProjectStore

    with ProjectStore(args.project) as store:
        try:
            run = store.load_run(args.run_id)
        except KeyError as exc:
            raise JointModellerError(str(exc.args[0])) from None
    write_run_csv(run, args.csv)
    print(f"run #{args.run_id} written to {args.csv}")
    return 0


def cmd_laxity(args: argparse.Namespace) -> int:
    from jointmodeller.app.laxity_command import laxity_command

    bars: dict[str, ProgressBar] = {}

    def progress(stage: str, done: int, total: int) -> None:
        bar = bars.setdefault(stage, ProgressBar(stage))
        bar(done / total if total else 1.0, f"{done}/{total}")

    if args.workers is not None and not 1 <= args.workers <= 64:
        raise JointModellerError(f"--workers {args.workers}: give 1 to 64 local processes")
    if args.workers is not None and args.workers > 1 and args.scheduler is not None:
        raise JointModellerError("--workers and --scheduler: give one (local processes or a Dask scheduler)")
    try:
        summary = laxity_command(args.project, experiment=args.experiment, data=args.data,
                                 calibrate=args.calibrate, out_dir=args.out, scheduler=args.scheduler,
                                 progress=progress, max_wall_s=_positive_seconds(args.max_wall_s),
                                 workers=args.workers or 1, calibration_progress=CalibrationLine())
    except (KeyError, RuntimeError) as exc:
        raise JointModellerError(str(exc.args[0] if exc.args else exc)) from None
    if args.verbose:
        print(json.dumps(summary, indent=2, sort_keys=True, default=str))
    else:
        print(_laxity_lines(summary, args.out))
    return 0


class CalibrationLine:
    """The calibration's progress on stderr: iterations, cost and RMSE, simulations, time (a line per
    iteration in a log file, one line rewritten on a terminal)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr

    def __call__(self, state) -> None:
        interactive = getattr(self.stream, "isatty", lambda: False)()
        text = f"calibrate: {state.line()}"
        self.stream.write(f"\r{text:100s}" if interactive else text + "\n")
        self.stream.flush()


def _positive_seconds(value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise JointModellerError(f"--max-wall-s {value:g}: must be a positive number of seconds")
    return value


def _laxity_lines(summary: dict, out) -> str:
    """A few lines of a laxity report: run, held flexion, laxity and stiffness, fit, where the rest is."""
    exp = summary.get("experiment", {})
    lines = [f"run #{summary.get('run_id')}: {exp.get('name')} {summary.get('status')}, "
             f"{summary.get('steps_solved')} steps in {summary.get('seconds') or 0.0:.1f} s"
             + (f" — {summary['message']}" if summary.get("message") else "")]
    held = f"flexion held at {summary.get('flexion_deg_held', exp.get('flexion_deg')):g}°"
    if summary.get("flexion_coordinate"):
        held += f" ({summary['flexion_coordinate']} = {summary.get('flexion_coordinate_deg') or 0.0:g}°)"
    if summary.get("flexion_deg_unloaded") is not None:
        held += f", JCS flexion of the unloaded pose {summary['flexion_deg_unloaded']:.2f}°"
    lines.append(held)
    stiff = (summary.get("stiffness") or {}).get("secant")
    lines.append(f"laxity {summary.get('laxity') or float('nan'):.4g} {summary.get('unit')} ({summary.get('measure')})"
                 + (f", secant stiffness {stiff:.4g} {summary.get('stiffness_unit')}" if stiff else ""))
    fit = summary.get("fit")
    if fit and "rmse" in fit:
        lines.append(f"against {fit.get('points_compared', '')} measured points: RMSE {fit['rmse']:.4g} "
                     f"{summary.get('unit')}")
    cal = summary.get("calibration")
    if cal:
        unit = summary.get("unit") or ""
        lines.append(f"calibration {cal.get('status')} after {cal.get('iterations')} iterations, "
                     f"{cal.get('evaluations')} sweeps, {cal.get('seconds') or 0.0:.1f} s ({cal.get('executor')}): "
                     f"RMSE {cal.get('rmse_initial') or float('nan'):.4g} -> "
                     f"{cal.get('rmse') or float('nan'):.4g} {unit}"
                     + (f" ({str(cal.get('message', '')).split(';')[0]})"
                        if cal.get("status") not in ("converged", "at_bounds") else ""))
        for name, par in (cal.get("parameters") or {}).items():
            if "fixed" in par:
                lines.append(f"  {name}: fixed at {par['fitted']:.4g}, {par['fixed']}")
                continue
            std = f" ± {par['std']:.2g}" if par.get("std") is not None else ""
            group = f" (grouped with {', '.join(par['grouped_with'])})" if par.get("grouped_with") else ""
            lines.append(f"  {name}: {par['start']:.4g} -> {par['fitted']:.4g}{std}{group}")
    if summary.get("calibrated_project"):
        lines.append(f"calibrated project: {summary['calibrated_project']}")
    lines.append(f"report (summary.json, curves, plots, tissue forces) in {out}; --verbose prints the summary")
    return "\n".join(lines)


def cmd_import_osim(args: argparse.Namespace) -> int:
    from jointmodeller.app.osim_import import import_osim_command, import_summary

    report = import_osim_command(args.model, args.project, search_paths=tuple(args.geometry_path or ()))
    if args.verbose:
        print(report.to_text())
        print()
    print(import_summary(report, args.project))
    return 0


def _setup_command(args: argparse.Namespace, kind: str) -> int:
    """`experiment|contact add|list|remove PROJECT ...`: rows validated with the project, one line
    each (``--verbose``: every field)."""
    from jointmodeller.app import setup_rows as su
    from jointmodeller.persistence import ProjectStore

    with ProjectStore(args.project) as store:
        project = store.load_project()
        if args.action == "add":
            if kind == "experiment":
                row = su.experiment_from_options(
                    args.name, args.fixed, args.moving, load_kind=args.load_kind, max_load=args.max_load,
                    lever_mm=args.lever_mm, steps=args.steps, sides=args.sides, unload=args.unload,
                    flexion_deg=args.flexion_deg, flexion_coordinate=args.flexion_coordinate or "",
                    flexion_sign=args.flexion_sign, measure=args.measure, load_point_mm=args.load_point_mm,
                    preload_force_n=args.preload_force_n, preload_moment_nm=args.preload_moment_nm,
                    tone=args.tone or (), axes=args.axis or ())
            else:
                row = su.contact_from_options(args.name, args.body_a, args.body_b, method=args.method,
                                              thickness_mm=args.thickness_mm, youngs_mpa=args.youngs_mpa,
                                              poisson=args.poisson, design_load_n=args.design_load_n)
            project = su.add_row(project, kind, row, replace_existing=args.replace)
            store.save_project(project)
            print(f"{'replaced' if args.replace else 'added'} {kind} "
                  + (su.experiment_line(row) if kind == "experiment" else su.contact_line(row)))
            hint = su.with_default_axes_hint(project, row) if kind == "experiment" else ""
            if hint:
                print(hint)
            return 0
        if args.action == "remove":
            project = su.remove_row(project, kind, args.name)
            store.save_project(project)
            print(f"removed {kind} {args.name!r}")
            return 0
    rows = project.experiments if kind == "experiment" else project.contacts
    for row in rows:
        print(su.experiment_line(row) if kind == "experiment" else su.contact_line(row))
        if args.verbose:
            print("\n".join(su.row_table(row)))
    plural = "s" if len(rows) != 1 else ""
    print(f"{len(rows)} {kind}{plural}" + (" (--verbose for every field)" if rows and not args.verbose else ""))
    return 0


def cmd_experiment(args: argparse.Namespace) -> int:
    return _setup_command(args, "experiment")


def cmd_contact(args: argparse.Namespace) -> int:
    return _setup_command(args, "contact")


def cmd_muscle_paths(args: argparse.Namespace) -> int:
    from jointmodeller.app.muscle_paths import muscle_paths_command

    run = muscle_paths_command(args.project, args.coordinate, args.out, start=args.start, stop=args.stop,
                               step=args.step, path_mode=args.path_mode,
                               notice=lambda text: print(text, file=sys.stderr, flush=True))
    _print_run(run, run.id)
    if run.status != "completed":
        return 1
    print(f"CSV and plot written to {args.out}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from jointmodeller.bench.harness import format_table, run_groups, to_json

    def log(msg: str) -> None:
        print(msg, file=sys.stderr)

    result = run_groups(args.only, log=log)
    print(to_json(result) if args.json else format_table(result))
    return 1 if result["errors"] else 0


def has_display() -> bool:
    """Whether a GUI can be shown here (an X/Wayland display, or an explicit Qt platform)."""
    if sys.platform in ("win32", "darwin"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM"))


def cmd_gui(args: argparse.Namespace) -> int:
    project = getattr(args, "project", None)
    if project is not None and not Path(project).exists():
        raise JointModellerError(f"{project}: no such project file")
    if not has_display():
        print("No display is available (DISPLAY is not set), so the window cannot open.\n"
              "Running the demo's studies headless instead; start `jointmodeller` on a desktop "
              "(or under xvfb-run) for the GUI.\n", file=sys.stderr)
        return run_headless(project)
    from jointmodeller.gui.main_window import launch

    return launch(project)


HEADLESS_WALL_S = 120.0
"""Wall-time limit of each study in a headless run; a study stopped by it keeps its samples."""
HEADLESS_DYNAMICS_WALL_S = 60.0
"""The demo's dynamics on stiff cartilage advances ~0.4 ms of simulated time per wall second (README,
current limits): the headless demo simulates its first HEADLESS_DYNAMICS_T_END seconds (~15 s on a
quiet 2-core machine) and gives up, as a failed run with its samples, past this many seconds."""
HEADLESS_DYNAMICS_T_END = 0.005


def run_headless(project_path: str | None) -> int:
    """Run the studies of a project (the demo when None) and print their results."""
    import tempfile

    from jointmodeller.app.demo import build_demo_project
    from jointmodeller.app.describe import describe_project
    from jointmodeller.app.registry import study, study_names
    from jointmodeller.persistence import ProjectStore, save_project

    if project_path is None:
        project_path = str(Path(tempfile.mkdtemp(prefix="jointmodeller-")) / "demo_elbow.jmdb")
        save_project(project_path, build_demo_project())
        print(f"demo project written to {project_path}")
    with ProjectStore(project_path) as store:
        project = store.load_project()
        print(describe_project(project))
        print()
        options = {"equilibrium": dict(max_wall_s=HEADLESS_WALL_S),
                   "dynamics": dict(t_end=HEADLESS_DYNAMICS_T_END, report_dt=HEADLESS_DYNAMICS_T_END / 20, digits=4,
                                    max_wall_s=HEADLESS_DYNAMICS_WALL_S)}
        for name in study_names(project):
            run = study(name).run(project, progress=ProgressBar(name), **options.get(name, {}))
            _print_run(run, store.save_run(run))
    print(f"\nresults stored in {project_path}")
    return 0


def _write_atomically(path: Path, text: str) -> None:
    """Write beside the target and move into place; on failure (a read-only or missing folder, a full
    disk) nothing is left behind and the error is one message."""
    from jointmodeller.io.atomic_files import write_bytes_atomically

    try:
        write_bytes_atomically(path, text.encode("utf-8"))
    except OSError as exc:
        raise JointModellerError(f"{path}: cannot be written ({_os_reason(exc, path)})") from None


def _os_reason(exc: OSError, path: Path | None = None) -> str:
    """Plain words for an operating-system error."""
    import errno

    if exc.errno == errno.ENOSPC:
        return "the disk is full"
    if exc.errno == errno.ENOENT and path is not None and not path.parent.exists():
        return f"the folder {str(path.parent)!r} does not exist"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied: the file or its folder is read-only"
    return exc.strerror or str(exc)


# ----------------------------------------------------------------------------------------------
# Parser
# ----------------------------------------------------------------------------------------------
STUDY_CHOICES = ("equilibrium", "dynamics", "laxity", "muscle_paths")
"""The registry's studies (app.registry.STUDIES), named here so `--help` needs no numerical imports."""
STUDY_HELP = {"equilibrium": "static pose and natural frequencies", "dynamics": "motion under the loads",
              "laxity": "an experiment's load sweep (see also the laxity command)",
              "muscle_paths": "lengths and moment arms over a coordinate sweep (see also the muscle-paths command)"}


def _add_setup_parsers(sub) -> None:
    """`experiment` and `contact`, each with add / list / remove."""
    s = sub.add_parser("experiment", help="add, list or remove laxity experiments",
                       description="Laxity experiments of a project. Lengths in mm, angles in degrees, loads in N "
                                   "(N·m for internal_external and moment preloads).")
    acts = s.add_subparsers(dest="action", metavar="ACTION", required=True)
    a = acts.add_parser("add", help="add an experiment (--replace: replace one of the same name)")
    a.add_argument("project")
    a.add_argument("name")
    a.add_argument("--fixed", required=True, help="the fixed body (mass name)")
    a.add_argument("--moving", required=True, help="the moving body (mass name)")
    a.add_argument("--load-kind", default="varus_valgus",
                   choices=("varus_valgus", "anterior_posterior", "internal_external", "compression"))
    a.add_argument("--max-load", type=float, default=100.0, help="N, or N·m for internal_external (default 100)")
    a.add_argument("--lever-mm", type=float, help="varus_valgus only: the force's distance down the moving long "
                                                  "axis (default 300 mm; the other kinds need none)")
    a.add_argument("--load-point-mm", metavar="X,Y,Z", help="where the force acts, in the moving body's mesh frame "
                                                            "(e.g. 10 cm distal on the tibia)")
    a.add_argument("--steps", type=int, default=21, help="load steps from 0 to max on each side (default 21)")
    a.add_argument("--sides", choices=("both", "positive", "negative"), default="both",
                   help="two-sided sweep (default) or one side only")
    a.add_argument("--unload", action="store_true", help="sweep back to 0 after each side")
    a.add_argument("--flexion-deg", type=float, default=30.0, help="held flexion, positive in flexion (default 30)")
    a.add_argument("--flexion-coordinate", help="on a joint: the coordinate to hold (default: named like 'flex')")
    a.add_argument("--flexion-sign", type=int, choices=(1, -1), default=1,
                   help="-1 when that coordinate shrinks in flexion (gait2392's knee_angle_r)")
    a.add_argument("--measure", help="JCS quantity, e.g. anterior_posterior_mm (default: the load kind's own)")
    a.add_argument("--preload-force-n", metavar="E1,E2,E3", help="constant force on the moving body along the JCS axes")
    a.add_argument("--preload-moment-nm", metavar="E1,E2,E3", help="constant moment about the JCS axes")
    a.add_argument("--tone", action="append", metavar="TISSUE=N",
                   help="constant tension along a tissue's path (muscle tone; repeatable)")
    a.add_argument("--axis", action="append", metavar="KEY=X,Y,Z",
                   help="JCS landmark in a bone's mesh frame (repeatable): flexion_axis_fixed, long_axis_fixed, "
                        "long_axis_moving (directions), origin_fixed, origin_moving (mm); a moving body without a "
                        "joint needs flexion_axis_fixed and long_axis_fixed")
    a.add_argument("--replace", action="store_true", help="replace an experiment of the same name")
    a.set_defaults(func=cmd_experiment)
    for action, text in (("list", "list the experiments"), ("remove", "remove an experiment")):
        a = acts.add_parser(action, help=text)
        a.add_argument("project")
        if action == "remove":
            a.add_argument("name")
        else:
            a.add_argument("--verbose", action="store_true", help="every field of each experiment")
        a.set_defaults(func=cmd_experiment)

    s = sub.add_parser("contact", help="add, list or remove contact pairs")
    acts = s.add_subparsers(dest="action", metavar="ACTION", required=True)
    a = acts.add_parser("add", help="add a contact pair (--replace: replace one of the same name)")
    a.add_argument("project")
    a.add_argument("name")
    a.add_argument("body_a", help="first body (its cartilage, else its bone surface)")
    a.add_argument("body_b", help="second body")
    a.add_argument("--method", choices=("elastic_foundation", "mjm_springs"), default="elastic_foundation")
    a.add_argument("--thickness-mm", type=float, default=2.0, help="both cartilage layers together (default 2)")
    a.add_argument("--youngs-mpa", type=float, default=10.0, help="cartilage E in MPa (default 10)")
    a.add_argument("--poisson", type=float, default=0.45, help="cartilage ν (default 0.45)")
    a.add_argument("--design-load-n", type=float, default=1000.0,
                   help="mjm_springs: load of the design penetration (default 1000 N)")
    a.add_argument("--replace", action="store_true", help="replace a pair of the same name")
    a.set_defaults(func=cmd_contact)
    for action, text in (("list", "list the contact pairs"), ("remove", "remove a contact pair")):
        a = acts.add_parser(action, help=text)
        a.add_argument("project")
        if action == "remove":
            a.add_argument("name")
        else:
            a.add_argument("--verbose", action="store_true", help="every field of each pair")
        a.set_defaults(func=cmd_contact)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="jointmodeller",
        description="JointModeller: bone meshes, ligaments, contact and laxity. "
                    "`jointmodeller` alone opens the GUI on the demo; `jointmodeller PROJECT.jmdb` opens a project.")
    p.add_argument("--version", action="version", version=f"jointmodeller {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("gui", help="open the GUI (on the demo, or on PROJECT)")
    s.add_argument("project", nargs="?")
    s.set_defaults(func=cmd_gui)

    s = sub.add_parser("demo", help="write a built-in demo project (the elbow; --knee: the knee)")
    s.add_argument("path", help="project file to write (.jmdb)")
    s.add_argument("--knee", action="store_true",
                   help="the lenhart2015 tibiofemoral knee with its ligaments, cartilage contact and an anterior "
                        "drawer experiment at 25° flexion (docs/knee.md) instead of the elbow")
    s.add_argument("--high-res", action="store_true", help="high-resolution bone meshes (for benchmarks)")
    s.add_argument("--force", action="store_true", help="replace an existing file")
    s.set_defaults(func=cmd_demo)

    s = sub.add_parser("info", help="print the five sections of a project and its stored runs")
    s.add_argument("project")
    s.set_defaults(func=cmd_info)

    s = sub.add_parser("import-mesh", help="add a bone mesh as a new mass (properties from the mesh)")
    s.add_argument("project")
    s.add_argument("mesh", help="STL, OBJ, PLY, OFF, VTP/VTK or VRML (.wrl) file")
    s.add_argument("--name", help="mass name (default: the file name)")
    s.add_argument("--units", choices=("mm", "m"), default="mm", help="units of the mesh file (default mm)")
    s.add_argument("--density", type=float, default=1900.0, help="kg/m³ (default 1900)")
    s.add_argument("--fixed", action="store_true", help="the mass is fixed in space")
    s.set_defaults(func=cmd_import_mesh)

    s = sub.add_parser("export", help="export a project as versioned JSON")
    s.add_argument("project")
    s.add_argument("--json", required=True, metavar="FILE")
    s.set_defaults(func=cmd_export)

    s = sub.add_parser("import", help="import a JSON project into a project file",
                       description="Import a JSON project (from `export`) into PROJECT. An existing PROJECT "
                                   "needs --force: its inputs are replaced, and its stored runs are kept but "
                                   "marked as belonging to the earlier model ('[earlier model]' in `runs`, "
                                   "parameter earlier_model), unless --delete-runs deletes them.")
    s.add_argument("file")
    s.add_argument("project")
    s.add_argument("--force", action="store_true", help="replace the inputs of an existing project")
    s.add_argument("--delete-runs", action="store_true",
                   help="with --force: delete the existing project's stored runs (default: keep them, marked as "
                        "belonging to the earlier model)")
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("run", help="run a study and store its results in the project")
    s.add_argument("project")
    s.add_argument("--study", required=True, choices=STUDY_CHOICES,
                   help="; ".join(f"{k}: {v}" for k, v in STUDY_HELP.items()))
    s.add_argument("--experiment", help="laxity: experiment name (default: the first)")
    s.add_argument("--coordinate", help="muscle_paths: the coordinate swept (default: the first rotational one)")
    s.add_argument("--t-end", type=float, default=1.0, help="dynamics: simulated seconds (default 1)")
    s.add_argument("--report-dt", type=float, default=0.01, help="dynamics: report interval in s")
    s.add_argument("--digits", type=int, default=6, help="accuracy α = 10^-digits (default 6)")
    s.add_argument("--method", choices=("auto", "DOPRI5", "DOP853", "RK45", "RK23", "Radau", "BDF", "LSODA"),
                   default="auto",
                   help="dynamics: integrator; auto (default) takes DOPRI5 with coordinate projection on a "
                        "project with joints, constraints or coordinate rows, else, when the project has contact "
                        "pairs (stiff cartilage springs; an explicit method is several times slower on the demo), "
                        "Radau (implicit, L-stable) up to 4 digits and BDF beyond, and DOP853 otherwise. A "
                        "project with constraints takes DOPRI5 only")
    s.add_argument("--max-wall-s", type=float, metavar="SECONDS",
                   help="limit on the run's computing time: dynamics (default 3600) and equilibrium (default "
                        "300); a run that reaches it is stored as failed with what it computed. Laxity: no limit "
                        "unless given; a sweep that reaches it is stored as stopped with its solved steps")
    s.add_argument("--max-steps", type=int, metavar="N",
                   help="dynamics: limit on integrator steps (default 1000000); a run that reaches it is stored "
                        "as failed with what it computed")
    s.add_argument("--tol-n", type=float, metavar="N",
                   help="equilibrium and laxity: residual tolerance of each equilibrium, force [N] (moments: this "
                        "times the model's length scale); defaults: equilibrium 1e-8 N, laxity 1e-6 N on smooth "
                        "models and 1e-2 N with contact or wrapping")
    s.add_argument("--contact-geometry", choices=("auto", "exact", "field"), default="auto",
                   help="dynamics and laxity: how contact points are found: field, each vertex's closest faces "
                        "from signed distance fields (built once per mesh and cached) and its depth measured on "
                        "them (the demo's dynamics ~3x and the high-resolution demo's laxity sweep ~3x faster, "
                        "the trajectory within the integrator's tolerance of the exact one: docs/sdf.md), or "
                        "exact, closest points searched round each vertex's nearest mesh vertices (the "
                        "reference). auto (default): field for dynamics and for the laxity of free bones, exact "
                        "otherwise (the laxity of a project with joints runs on the exact meshes only)")
    s.add_argument("--csv", metavar="FILE", help="also write the run's series as CSV")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("runs", help="list the stored runs of a project")
    s.add_argument("project")
    s.set_defaults(func=cmd_runs)

    s = sub.add_parser("export-run", help="write a stored run's series as CSV")
    s.add_argument("project")
    s.add_argument("run_id", type=int)
    s.add_argument("--csv", required=True, metavar="FILE")
    s.set_defaults(func=cmd_export_run)

    s = sub.add_parser("laxity", help="run a laxity experiment (and calibrate to measured data)")
    s.add_argument("project")
    s.add_argument("--experiment", help="experiment name (default: the first)")
    s.add_argument("--data", help="measured CSV (load, value[, repeat])")
    s.add_argument("--calibrate", action="store_true", help="fit tissue stiffness scales to the data (parameters the "
                   "data cannot determine are named, and fixed or grouped)")
    s.add_argument("--scheduler", help="Dask scheduler (tcp://host:port, or 'local' / 'local:N' for a local cluster "
                   "of N workers, default 2): runs the calibration's sensitivity sweeps; without --calibrate a "
                   "one-at-a-time stiffness study")
    s.add_argument("--workers", type=int, metavar="N", help="with --calibrate: run the sensitivity sweeps on N local "
                   "processes (default 1: in this process)")
    s.add_argument("--out", required=True, help="output folder (summary.json, CSV, plots, report)")
    s.add_argument("--verbose", action="store_true", help="print the whole summary (JSON, tissue parameters)")
    s.add_argument("--max-wall-s", type=float, metavar="S",
                   help="stop the sweep after S seconds; the steps solved by then are stored and reported; with "
                        "--calibrate the calibration also ends after S seconds, with the best scales so far")
    s.set_defaults(func=cmd_laxity)

    s = sub.add_parser("import-osim", help="import an OpenSim .osim model into a project file")
    s.add_argument("model")
    s.add_argument("project")
    s.add_argument("--geometry-path", action="append", help="folder to search for mesh files (repeatable)")
    s.add_argument("--verbose", action="store_true", help="print the whole import report (always written to "
                                                          "PROJECT.import.txt)")
    s.set_defaults(func=cmd_import_osim)

    _add_setup_parsers(sub)

    s = sub.add_parser("muscle-paths", help="path length and moment arm of every tissue over a coordinate range")
    s.add_argument("project")
    s.add_argument("coordinate", help="coordinate name, e.g. r_elbow_flex")
    s.add_argument("--start", type=float, default=0.0, help="degrees (default 0)")
    s.add_argument("--stop", type=float, default=130.0, help="degrees (default 130)")
    s.add_argument("--step", type=float, default=5.0, help="degrees (default 5)")
    s.add_argument("--out", required=True, help="output folder (CSV and PNG)")
    s.add_argument("--path-mode", choices=("opensim", "exact"), default="opensim",
                   help="paths over several wrap objects: 'opensim' (default) reproduces OpenSim 4, which keeps "
                        "each wrap point's first position through its wrap iteration; 'exact' recomputes them "
                        "every pass (the consistent shortest path; differs by up to a few mm)")
    s.set_defaults(func=cmd_muscle_paths)

    s = sub.add_parser("coordinates", help="list the joint coordinates; lock, free or set them")
    s.add_argument("project")
    s.add_argument("--lock-all", action="store_true", help="lock every coordinate (then --free some)")
    s.add_argument("--free-all", action="store_true", help="free every coordinate (then --lock some)")
    s.add_argument("--lock", action="append", metavar="NAMES", help="lock these (comma-separated, repeatable)")
    s.add_argument("--free", action="append", metavar="NAMES", help="free these (comma-separated, repeatable)")
    s.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="set a coordinate's value: degrees when rotational, millimetres when translational")
    s.set_defaults(func=cmd_coordinates)

    s = sub.add_parser("project", help="show the project's title and gravity; change them")
    s.add_argument("project")
    s.add_argument("--title", help="the project's title")
    s.add_argument("--gravity", metavar="X,Y,Z", help="gravity in ground [m/s²] (0,0,0: none)")
    s.set_defaults(func=cmd_project)

    s = sub.add_parser("cartilage", help="grow a cartilage layer on a bone where it faces another (no scan of it)")
    s.add_argument("project")
    s.add_argument("--bone", required=True, help="the mass that gets the layer")
    s.add_argument("--facing", required=True, action="append", metavar="NAMES",
                   help="the mass(es) its articular region faces at the current pose (comma-separated, repeatable)")
    s.add_argument("--thickness-mm", type=float, required=True, help="layer thickness in mm")
    s.add_argument("--max-distance-mm", type=float, default=25.0,
                   help="a bone face is articular when the other surface lies within this distance in front of it "
                        "(default 25)")
    s.add_argument("--max-angle-deg", type=float, default=75.0,
                   help="... and within this angle of its outward normal (default 75)")
    s.add_argument("--replace", action="store_true", help="replace the mass's existing cartilage layer")
    s.set_defaults(func=cmd_cartilage)

    s = sub.add_parser("bench", help="run the benchmarks (each figure beside a same-run baseline)")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument("--only", action="append", metavar="GROUP", help="run only this group (repeatable)")
    s.set_defaults(func=cmd_bench)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and not argv[0].startswith("-")):
        argv = ["gui"] + argv
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except JointModellerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file or folder the command was given: missing, read-only, disk full
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{_os_reason(exc, Path(exc.filename) if exc.filename else None)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted; nothing already saved was changed", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
