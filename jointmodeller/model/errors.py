"""Errors the user sees: each names where the problem is (section, row, field) and what is wrong."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input, located by section (panel), row name/index and field."""

    section: str
    row: str | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.section
        if self.row is not None:
            where += f" › {self.row}"
        if self.field is not None:
            where += f" › {self.field}"
        return f"{where}: {self.message}"


class JointModellerError(Exception):
    """Base of every error this program raises on purpose."""


class ValidationError(JointModellerError, ValueError):
    """Input that breaks a rule; carries every problem found, each with its location."""

    def __init__(self, problems: list[Problem] | Problem):
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class MeshError(JointModellerError, ValueError):
    """A mesh file that cannot be used (empty, NaN, degenerate, unreadable); names the file."""


class ProjectFileError(JointModellerError):
    """A project file that cannot be opened (truncated, foreign, newer schema); names the file."""


class SimulationError(JointModellerError, RuntimeError):
    """A run that cannot go on (diverged, NaN); the results computed so far are kept."""
