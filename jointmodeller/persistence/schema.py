"""Schema versions of project files, through the Alembic migrations in ./migrations (package data,
so they travel with an installed wheel, not only with a source checkout).

Checks are made on a read-only connection first, so a foreign, newer or damaged file is reported
and left exactly as it was.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

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
        conn.text_factory = bytes  # a damaged file's text is not always UTF-8
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            if app_id != APPLICATION_ID:
                raise ProjectFileError(f"{path}: is an SQLite database but not a JointModeller project")
            check = [row[0] for row in conn.execute("PRAGMA quick_check(5)").fetchall()]
            if check != [b"ok"]:
                found = "; ".join(" ".join(_text(x).split()) for x in check)
                raise ProjectFileError(f"{path}: the project file is damaged (SQLite's integrity check: {found[:300]})")
            rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
        finally:
            conn.close()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        # SQLite's message can quote damaged bytes: Python then fails to decode the message itself
        raise database_error(path, exc, writing=False, damaged="damaged or truncated") from None
    if len(rows) != 1 or not isinstance(rows[0][0], bytes):
        raise ProjectFileError(f"{path}: has no schema version; it is damaged")
    return _text(rows[0][0])


def _is_writable(path: Path) -> bool:
    return os.access(path, os.W_OK)


def database_error(path: Path, exc: BaseException, *, writing: bool, damaged: str = "damaged") -> ProjectFileError:
    """The honest message for an SQLite error on the project file ``path``: a read-only file or folder,
    a missing folder, a full disk and an I/O error are said as such; anything else is damage."""
    path = Path(path)
    reason = getattr(exc, "orig", None) or exc
    text = _text(reason)
    low = text.lower()
    folder = path.parent if str(path.parent) else Path(".")
    if isinstance(reason, OSError) and reason.errno == errno.ENOSPC or "disk is full" in low:
        return ProjectFileError(f"{path}: cannot be written: the disk is full (no space left where the project "
                                "is). Nothing was changed; free some space and try again.")
    if "readonly" in low or "read-only" in low or isinstance(reason, PermissionError):
        if writing and path.exists() and not _is_writable(path):
            why = "the project file is read-only"
        elif not _is_writable(folder):
            why = (f"its folder {str(folder)!r} is read-only (SQLite keeps a -wal and a -shm file beside the project,"
                   " even to read it)")
        elif path.exists() and not _is_writable(path):
            why = "the project file is read-only"
        else:
            why = f"it is read-only ({text})"
        return ProjectFileError(f"{path}: cannot be {'written' if writing else 'opened'}: {why}. Nothing was changed;"
                                " copy it to a folder you can write to.")
    if "unable to open database file" in low:
        if not folder.is_dir():
            return ProjectFileError(f"{path}: the folder {str(folder)!r} does not exist")
        if not _is_writable(folder):
            return ProjectFileError(f"{path}: cannot be opened: its folder {str(folder)!r} is read-only (SQLite "
                                    "keeps a -wal and a -shm file beside the project)")
        return ProjectFileError(f"{path}: cannot be opened ({text})")
    if "disk i/o error" in low:
        return ProjectFileError(f"{path}: an input/output error occurred ({text}); the disk or the network "
                                "folder may have failed. Nothing was changed.")
    return ProjectFileError(f"{path}: the project file is {damaged} ({text})")


def _text(value: object) -> str:
    """Readable text of bytes from a possibly damaged file (bad bytes shown as \\x..), or of an error."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="backslashreplace")
    if isinstance(value, UnicodeDecodeError):
        return f"text that is not UTF-8: {value.object[:80]!r}"
    return str(value)


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
            with engine.begin() as conn:  # one transaction: a failed migration changes nothing
                conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
                cfg = alembic_config()
                cfg.attributes["connection"] = conn
                try:
                    command.upgrade(cfg, "head")
                finally:
                    cfg.attributes.pop("connection", None)
        except (SQLAlchemyError, CommandError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "orig", None) or exc
            raise ProjectFileError(
                f"{path}: cannot be migrated from schema {revision!r} to {known[-1]!r} "
                f"({_text(reason).splitlines()[0]}); "
                "its schema version does not match its tables, so the file is damaged. Nothing was changed.") from None
        finally:
            engine.dispose()
    return known[-1]
