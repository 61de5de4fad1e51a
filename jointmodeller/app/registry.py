"""The studies a user can run, in one registry that the CLI, the GUI run panel and the headless demo
read: each is a function of the project (the project's rows decide whether it runs on free bodies or
on the multibody tree) returning a RunRecord.

``progress`` is ``progress(fraction)`` for every study; laxity's richer per-step report is adapted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from jointmodeller.model.results import RunRecord
from jointmodeller.model.specs import Project

Progress = Callable[[float], None]


@dataclass(frozen=True)
class Study:
    """A runnable study: its key, what people call it, one line on what it does, the options it
    takes (keyword names of ``run``), and whether it needs an experiment row or joint coordinates."""

    name: str
    title: str
    summary: str
    options: tuple[str, ...]
    needs_experiment: bool = False
    needs_coordinates: bool = False

    def run(self, project: Project, *, progress: Progress | None = None, cancel=None, **options) -> RunRecord:
        unknown = set(options) - set(self.options)
        if unknown:
            raise TypeError(f"study {self.name!r} takes no option {sorted(unknown)[0]!r}; it takes "
                            + ", ".join(self.options))
        from jointmodeller.core.data import using

        with using():  # one run, its own evaluation data (core.data): nothing carried over from another run
            return _RUNNERS[self.name](project, progress=progress, cancel=cancel, **options)


def _equilibrium(project, *, progress, cancel, **options) -> RunRecord:
    from jointmodeller.app.studies import run_equilibrium

    return run_equilibrium(project, progress=progress, cancel=cancel, **options)


def _dynamics(project, *, progress, cancel, **options) -> RunRecord:
    from jointmodeller.app.studies import run_dynamics

    return run_dynamics(project, progress=progress, cancel=cancel, **options)


def _laxity(project, *, progress, cancel, experiment: str | None = None, max_wall_s: float | None = None,
            tol_N: float | None = None, live: bool = False, contact_geometry: str = "auto") -> RunRecord:
    """The experiment's sweep; live: also report each solved pose as a sample (progress(f, sample)),
    so a viewer can follow the sweep (each costs one force evaluation); contact_geometry: as
    app.laxity.run_laxity."""
    from jointmodeller.app.laxity import run_laxity
    from jointmodeller.app.studies import PoseProgress

    report = None if progress is None else PoseProgress(progress)

    def step(done, total, load=None, value=None):
        if report is not None:
            report(done / max(total, 1))

    stop = None if cancel is None else (cancel.is_set if hasattr(cancel, "is_set") else cancel)
    return run_laxity(project, experiment, progress=step, cancel=stop, max_wall_s=max_wall_s, tol_N=tol_N,
                      on_pose=report.pose if live and report is not None else None, contact_geometry=contact_geometry)


def _muscle_paths(project, *, progress, cancel, coordinate: str | None = None, start: float | None = None,
                  stop: float | None = None, step: float | None = None) -> RunRecord:
    """Tissue lengths and moment arms (generalized-force method) over a sweep of one coordinate;
    default: the first rotational coordinate, 0–130° in 5° steps (a translation: ±10 mm in 1 mm)."""
    from jointmodeller.app.muscle_paths import list_coordinates, muscle_paths_run

    coords = list_coordinates(project)
    if coordinate is None:
        coordinate = next((c for c, unit in coords if unit == "deg"), coords[0][0] if coords else "")
    unit = dict(coords).get(coordinate, "deg")
    lo, hi, dx = (0.0, 130.0, 5.0) if unit == "deg" else (-0.01, 0.01, 0.001)
    run = muscle_paths_run(project, coordinate, lo if start is None else start, hi if stop is None else stop,
                           dx if step is None else step)
    if progress is not None:
        progress(1.0)
    return run


_RUNNERS: dict[str, Callable[..., RunRecord]] = {"equilibrium": _equilibrium, "dynamics": _dynamics,
                                                 "laxity": _laxity, "muscle_paths": _muscle_paths}

STUDIES: dict[str, Study] = {
    "equilibrium": Study("equilibrium", "Equilibrium",
                         "static pose under the loads (at the end of their profiles), with the linear model's "
                         "natural frequencies", ("contact", "wrapping", "t", "force_tol", "moment_tol",
                                                 "max_iterations", "max_wall_s", "live")),
    "dynamics": Study("dynamics", "Dynamics", "motion from the initial pose, at rest, under the loads",
                      ("t_end", "report_dt", "digits", "method", "contact", "wrapping", "max_wall_s", "max_steps",
                       "on_step", "contact_geometry")),
    "laxity": Study("laxity", "Laxity", "quasi-static load sweep of an experiment, against its measured data",
                    ("experiment", "max_wall_s", "tol_N", "live", "contact_geometry"), needs_experiment=True),
    "muscle_paths": Study("muscle_paths", "Muscle paths",
                          "tissue lengths and moment arms over a sweep of one joint coordinate",
                          ("coordinate", "start", "stop", "step"), needs_coordinates=True),
}


def study(name: str) -> Study:
    """The study called ``name``; KeyError naming the choices."""
    try:
        return STUDIES[name]
    except KeyError:
        raise KeyError(f"no study named {name!r}; one of {', '.join(STUDIES)}") from None


def study_names(project: Project | None = None) -> list[str]:
    """Names of the studies (those that can run on ``project`` when given: laxity needs an experiment,
    muscle paths a joint coordinate and a tissue)."""
    def runs_on(s: Study) -> bool:
        if project is None:
            return True
        if s.needs_experiment and not project.experiments:
            return False
        if s.needs_coordinates and not (project.attachments and any(
                m.joint is not None and m.joint.type != "free" and m.joint.coordinates for m in project.masses)):
            return False
        return True

    return [n for n, s in STUDIES.items() if runs_on(s)]
