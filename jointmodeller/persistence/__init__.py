"""The project file (SQLite through SQLAlchemy, versioned by Alembic). Only this package knows SQL."""

from jointmodeller.persistence.store import ProjectStore, is_project_file, load_project, save_project

__all__ = ["ProjectStore", "is_project_file", "load_project", "save_project"]
