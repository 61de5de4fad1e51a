"""Use case: import an OpenSim model (.osim) as a project (CLI `import-osim`, GUI File → Import).

``import_osim`` reads and validates; ``import_osim_command`` also writes the project file and the
import report beside it (``<project>.import.txt``) and returns the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from jointmodeller.io.osim import OsimError, load_osim
from jointmodeller.io.osim_report import ImportReport
from jointmodeller.model.errors import ValidationError
from jointmodeller.model.specs import Project
from jointmodeller.model.validation import validate_project

__all__ = ["import_osim", "import_osim_command", "import_summary", "OsimError", "ImportReport", "wrap_ranges"]


def import_osim(model_path: str | Path, search_paths: Sequence[str | Path] = ()) -> tuple[Project, ImportReport]:
    """Read ``model_path`` into a validated Project plus the ImportReport.

    search_paths: extra folders holding mesh files (besides the model's folder and its Geometry/).
    Raises OsimError (file and line named) for a file that is not a readable OpenSim model, and
    (file and field named) for a readable one whose values no project may hold, such as a gravity of
    9081 m/s² (what the importer cannot leave out and report, as it does bad springs or wrap objects).
    """
    project, report = load_osim(model_path, search_paths)
    try:
        validate_project(project)
    except ValidationError as exc:
        raise OsimError(f"{model_path}: the model's values are outside what a project may hold: "
                        f"{_one_line(exc.problems)}") from None
    return project, report


def import_osim_command(model_path: str | Path, project_path: str | Path,
                        search_paths: Sequence[str | Path] = ()) -> ImportReport:
    """Import ``model_path`` and write it to the project file ``project_path`` (replacing its
    inputs if it exists); the report's text goes to ``<project_path>.import.txt``."""
    from jointmodeller.persistence.store import save_project

    project, report = import_osim(model_path, search_paths)
    save_project(project_path, project)
    Path(str(project_path) + ".import.txt").write_text(report.to_text() + "\n", encoding="utf-8")
    return report


def import_summary(report: ImportReport, project_path: str | Path) -> str:
    """One paragraph for the terminal: what was imported, how much was approximated or left out
    (by OpenSim type), and where the full report is."""
    from collections import Counter

    what = ", ".join(f"{v} {k}" for k, v in report.counts.items()) or "nothing"
    text = f"Imported {report.model_name or Path(report.model_path).stem!r} into {project_path}: {what}."

    def by_type(items) -> str:
        counts = Counter(i.type for i in items)
        top = ", ".join(f"{n} {t}" for t, n in counts.most_common(4))
        return top + (", …" if len(counts) > 4 else "")

    if report.approximated:
        text += f" {len(report.approximated)} component(s) imported approximately ({by_type(report.approximated)})."
    if report.not_imported:
        text += f" {len(report.not_imported)} not imported ({by_type(report.not_imported)})."
    return text + f" The full report is in {project_path}.import.txt."


def wrap_ranges(report: ImportReport) -> dict[str, list[tuple[int, int]]]:
    """Attachment name -> each wrap object's 1-based point range, for the muscle-path study."""
    return {name: [(w.start, w.end) for w in wraps] for name, wraps in report.path_wraps.items()}


def _one_line(problems: Sequence[object], shown: int = 3) -> str:
    """The first few problems joined on one line (an import error is one line, like every other
    OsimError), with how many more there are."""
    text = "; ".join(str(p) for p in problems[:shown])
    more = len(problems) - shown
    return text + (f"; and {more} more" if more > 0 else "")
