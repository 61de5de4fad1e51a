"""Schema versions of project files, through the Alembic migrations in ./migrations (package data,
so they travel with an installed wheel, not only with a source checkout).

Checks are made on a read-only connection first, so a foreign, newer or damaged file is reported
and left exactly as it was.
"""

from __future__ import annotations

import sqlite3
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection

from jointmodeller.model.errors import ProjectFileError
from jointmodeller.persistence.tables import APPLICATION_ID

# Found through the package (importlib.resources), wherever it is installed. Alembic reads the scripts
# from a real folder, so the package must be installed as files (a wheel, editable or not), not zipped.
MIGRATIONS_DIR = Path(str(files("jointmodeller.persistence").joinpath("migrations")))


@lru_cache(maxsize=1)
def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    return cfg


@lru_cache(maxsize=1)
def known_revisions() -> tuple[str, ...]:
    """Revisions this program knows, oldest first; the last is the head."""
    script = ScriptDirectory.from_config(alembic_config())
    return tuple(reversed([rev.revision for rev in script.walk_revisions()]))


def head_revision() -> str:
    return known_revisions()[-1]


def create_schema(conn: Connection, revision: str | None = None) -> None:
    """Create a new project schema at ``revision`` (head by default) on an open connection."""
    conn.exec_driver_sql(f"PRAGMA application_id={APPLICATION_ID}")
    cfg = alembic_config()
    cfg.attributes["connection"] = conn
    try:
        command.upgrade(cfg, revision or "head")
    finally:
        cfg.attributes.pop("connection", None)


def read_revision(path: Path) -> str:
    """The schema revision of a project file, checked read-only; ProjectFileError if not ours."""
    try:
        with open(path, "rb") as fh:
            header = fh.read(100)
    except OSError as exc:
        raise ProjectFileError(f"{path}: cannot be read ({exc.strerror})") from None
    if header[:16] != b"SQLite format 3\x00":
        raise ProjectFileError(f"{path}: is not a JointModeller project (not an SQLite database)")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            if app_id != APPLICATION_ID:
                raise ProjectFileError(f"{path}: is an SQLite database but not a JointModeller project")
            conn.execute("PRAGMA quick_check").fetchone()
            rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise ProjectFileError(f"{path}: the project file is damaged or truncated ({exc})") from None
    if len(rows) != 1:
        raise ProjectFileError(f"{path}: has no schema version; it is damaged")
    return rows[0][0]


def check_and_migrate(path: Path) -> str:
    """Refuse foreign/newer/damaged files; migrate older ones to the head in one transaction."""
    revision = read_revision(path)
    known = known_revisions()
    if revision not in known:
        raise ProjectFileError(
            f"{path}: was written by a newer JointModeller (schema {revision!r}); this version reads up to "
            f"{known[-1]!r}. Nothing was changed.")
    if revision != known[-1]:
        engine = create_engine(f"sqlite:///{path}")
        try:
            with engine.begin() as conn:
                conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
                cfg = alembic_config()
                cfg.attributes["connection"] = conn
                try:
                    command.upgrade(cfg, "head")
                finally:
                    cfg.attributes.pop("connection", None)
        finally:
            engine.dispose()
    return known[-1]
