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
    takes (keyword names of ``run``), and whether it needs an experiment row."""

    name: str
    title: str
    summary: str
    options: tuple[str, ...]
    needs_experiment: bool = False

    def run(self, project: Project, *, progress: Progress | None = None, cancel=None, **options) -> RunRecord:
        unknown = set(options) - set(self.options)
        if unknown:
            raise TypeError(f"study {self.name!r} takes no option {sorted(unknown)[0]!r}; it takes "
                            + ", ".join(self.options))
        return _RUNNERS[self.name](project, progress=progress, cancel=cancel, **options)


def _equilibrium(project, *, progress, cancel, **options) -> RunRecord:
    from jointmodeller.app.studies import run_equilibrium

    return run_equilibrium(project, progress=progress, cancel=cancel, **options)


def _dynamics(project, *, progress, cancel, **options) -> RunRecord:
    from jointmodeller.app.studies import run_dynamics

    return run_dynamics(project, progress=progress, cancel=cancel, **options)


def _laxity(project, *, progress, cancel, experiment: str | None = None) -> RunRecord:
    from jointmodeller.app.laxity import run_laxity

    def step(done, total, load=None, value=None):
        if progress is not None:
            progress(done / max(total, 1))

    stop = None if cancel is None else (cancel.is_set if hasattr(cancel, "is_set") else cancel)
    return run_laxity(project, experiment, progress=step, cancel=stop)


_RUNNERS = {"equilibrium": _equilibrium, "dynamics": _dynamics, "laxity": _laxity}

STUDIES: dict[str, Study] = {
    "equilibrium": Study("equilibrium", "Equilibrium",
                         "static pose under the loads (at the end of their profiles), with the linear model's "
                         "natural frequencies", ("contact", "wrapping", "t", "force_tol", "moment_tol",
                                                 "max_iterations", "max_wall_s")),
    "dynamics": Study("dynamics", "Dynamics", "motion from the initial pose, at rest, under the loads",
                      ("t_end", "report_dt", "digits", "method", "contact", "wrapping", "max_wall_s", "on_step")),
    "laxity": Study("laxity", "Laxity", "quasi-static load sweep of an experiment, against its measured data",
                    ("experiment",), needs_experiment=True),
}


def study(name: str) -> Study:
    """The study called ``name``; KeyError naming the choices."""
    try:
        return STUDIES[name]
    except KeyError:
        raise KeyError(f"no study named {name!r}; one of {', '.join(STUDIES)}") from None


def study_names(project: Project | None = None) -> list[str]:
    """Names of the studies (those that can run on ``project`` when given: laxity needs an experiment)."""
    return [n for n, s in STUDIES.items() if project is None or not s.needs_experiment or project.experiments]
